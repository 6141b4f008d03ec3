//! Forms from JSON Schema (`mcpscope_core::schema::form`): the corpus in tests/schemas, and
//! the live tools/list of three real servers whose calls must be accepted.

use crate::support::*;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable as _;
use mcpscope_app::panels::form_view::form_ui;
use mcpscope_core::protocol::handshake::HandshakeOptions;
use mcpscope_core::schema::form::{Field, FieldError, FieldKind, Form, validator_for};
use mcpscope_core::transport::process::ServerSpec;
use serde_json::{Value, json};
use std::path::PathBuf;

/// Corpus schemas the `jsonschema` crate cannot compile (the form still works).
const UNCOMPILABLE: &[&str] = &["unresolvable-ref"];

fn corpus_dir() -> PathBuf {
    repo().join("tests/schemas")
}

/// Every schema of the corpus: (label, schema). A `real-*.json` file is a saved
/// tools/list result and gives one schema per tool.
fn corpus() -> Vec<(String, Value)> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    let mut out = Vec::new();
    for p in paths {
        let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        match doc.get("tools").and_then(Value::as_array) {
            Some(tools) => {
                for t in tools {
                    out.push((
                        format!("{stem}/{}", t["name"].as_str().unwrap()),
                        t["inputSchema"].clone(),
                    ));
                }
            }
            None => out.push((stem, doc)),
        }
    }
    out
}

/// Builds a form, fills it with a sample and checks it is valid both by the form's own
/// validation and by a fresh `jsonschema` validator. Returns the arguments.
fn sample_arguments(label: &str, schema: &Value) -> Value {
    let mut form = Form::from_schema(schema);
    form.fill_sample();
    let value = form.value();
    let errors = form.validate();
    assert!(errors.is_empty(), "{label}: {value}\n{errors:#?}");
    assert!(value.is_object(), "{label}: arguments must be an object: {value}");
    match validator_for(schema) {
        Ok(v) => {
            let problems: Vec<String> = v.iter_errors(&value).map(|e| e.to_string()).collect();
            assert!(problems.is_empty(), "{label}: {value}\n{problems:#?}");
        }
        Err(e) => {
            assert!(
                UNCOMPILABLE.iter().any(|u| label.starts_with(u)),
                "{label}: the schema does not compile: {e}"
            );
            assert!(form.schema_problem().is_some(), "{label}: the problem is reported");
        }
    }
    value
}

#[test]
fn corpus_is_large_enough() {
    let files = std::fs::read_dir(corpus_dir()).unwrap().count();
    assert!(files >= 18, "{files} files");
    for server in ["everything", "py_server", "node_zod_server"] {
        assert!(corpus_dir().join(format!("real-{server}.json")).exists(), "{server}");
    }
}

#[test]
fn corpus_samples_validate_and_round_trip() {
    for (label, schema) in corpus() {
        let value = sample_arguments(&label, &schema);
        // JSON -> form -> JSON gives the same arguments, in a fresh form too.
        let mut fresh = Form::from_schema(&schema);
        fresh.set_value(&value);
        assert_eq!(fresh.value(), value, "{label}: round trip");
        assert!(fresh.validate().is_empty(), "{label}: {:?}", fresh.validate());
        // Values the form cannot hold are kept as they are (that field becomes JSON).
        let mut odd = value.clone();
        odd.as_object_mut()
            .unwrap()
            .insert("zz_unknown".into(), json!({"kept": [1, "two", null]}));
        fresh.set_value(&odd);
        assert_eq!(fresh.value(), odd, "{label}: unknown keys kept");
    }
}

#[test]
fn corpus_unset_optionals_are_left_out() {
    for (label, schema) in corpus() {
        let form = Form::from_schema(&schema);
        let value = form.value();
        let Some(obj) = value.as_object() else { continue };
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for k in obj.keys() {
            assert!(required.contains(&k.as_str()), "{label}: optional {k} is in {value}");
        }
    }
}

#[test]
fn corpus_errors_point_at_fields() {
    // A required string emptied and an integer given 1.5 are reported at their fields.
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(corpus_dir().join("zod-draft07-order.json")).unwrap()).unwrap();
    let mut form = Form::from_schema(&schema);
    form.fill_sample();
    let mut v = form.value();
    v["items"][1]["quantity"] = json!(1.5);
    v["customer"]["address"]["zip"] = json!("12");
    v["customer"]["extra"] = json!(true);
    form.set_value(&v);
    let errors = form.validate();
    let pointers: Vec<&str> = errors.iter().map(|e| e.pointer.as_str()).collect();
    assert!(pointers.contains(&"/items/1/quantity"), "{errors:#?}");
    assert!(pointers.contains(&"/customer/address/zip"), "{errors:#?}");
    assert!(pointers.contains(&"/customer/extra"), "{errors:#?}");
    for p in pointers {
        assert!(form.field_at(p).is_some(), "{p} names a field");
    }
}

struct UiState {
    form: Form,
    errors: Vec<FieldError>,
}

fn set_everything(f: &mut Field, depth: usize) {
    if depth > 6 {
        return;
    }
    f.set_enabled(true);
    match &mut f.kind {
        FieldKind::Object { fields, .. } => fields.iter_mut().for_each(|c| set_everything(c, depth + 1)),
        FieldKind::Array { items, .. } => items.iter_mut().for_each(|c| set_everything(c, depth + 1)),
        FieldKind::Choice { current, .. } => set_everything(current, depth + 1),
        _ => {}
    }
}

/// Every field of every corpus schema renders (the harness panics on an input without
/// an accessible name or a glyph the font lacks), unset, filled, and with all optionals set.
#[test]
fn corpus_forms_render() {
    let mut all = corpus();
    // Roots that are not object schemas become one JSON editor.
    all.push(("string root".into(), json!({"type": "string"})));
    all.push(("false root".into(), json!(false)));
    for (label, schema) in all {
        let form = Form::from_schema(&schema);
        let errors = form.validate();
        let mut h = Harness::builder().with_size([900.0, 1600.0]).build_ui_state(
            |ui, s: &mut UiState| {
                egui::ScrollArea::vertical().show(ui, |ui| {
                    if form_ui(ui, &mut s.form, &s.errors) {
                        s.errors = s.form.validate();
                    }
                });
            },
            UiState { form, errors },
        );
        h.run();
        h.state_mut().form.fill_sample();
        h.run();
        set_everything(h.state_mut().form.root_mut(), 0);
        let errors = h.state().form.validate();
        h.state_mut().errors = errors;
        h.run();
        let _ = label;
    }
}

#[test]
fn form_view_edits_reach_the_arguments() {
    use egui::accesskit::Role;
    let schema = json!({"type":"object","properties":{
        "name":{"type":"string"},"n":{"type":"integer"},
        "tags":{"type":"array","items":{"type":"string"}},
        "color":{"enum":["red","green"]},
        "env":{"type":"object","additionalProperties":{"type":"string"}}
    },"required":["name","n","tags"]});
    let form = Form::from_schema(&schema);
    let errors = form.validate();
    let mut h = Harness::builder().with_size([900.0, 900.0]).build_ui_state(
        |ui, s: &mut UiState| {
            if form_ui(ui, &mut s.form, &s.errors) {
                s.errors = s.form.validate();
            }
        },
        UiState { form, errors },
    );
    h.run();
    h.get_by_role_and_label(Role::TextInput, "name").focus();
    h.run();
    h.get_by_role_and_label(Role::TextInput, "name").type_text("Ada");
    h.run();
    h.get_by_role_and_label(Role::TextInput, "n").focus();
    h.run();
    h.get_by_role_and_label(Role::TextInput, "n").type_text("1.5");
    h.run();
    assert_eq!(h.state().form.value()["name"], "Ada");
    assert!(
        h.state()
            .errors
            .iter()
            .any(|e| e.pointer == "/n" && e.message.contains("integer"))
    );
    assert!(h.query_by_label_contains("has a fractional part").is_some());
    h.get_by_label("+ add tags").click();
    h.run();
    h.get_by_label("+ add tags").click();
    h.run();
    h.get_by_role_and_label(Role::TextInput, "tags[1]").focus();
    h.run();
    h.get_by_role_and_label(Role::TextInput, "tags[1]").type_text("b");
    h.run();
    h.get_by_label("move tags[1] up").click();
    h.run();
    assert_eq!(h.state().form.value()["tags"], json!(["b", ""]));
    h.get_by_label("remove tags[1]").click();
    h.run();
    assert_eq!(h.state().form.value()["tags"], json!(["b"]));
    assert!(h.state().form.value().get("env").is_none());
    h.get_by_label("set env").click();
    h.run();
    h.get_by_label("+ add env entry").click();
    h.run();
    assert_eq!(h.state().form.value()["env"], json!({"key1": ""}));
    h.get_by_label("key 0 of env").focus();
    h.run();
    h.get_by_label("key 0 of env").type_text("X");
    h.run();
    assert_eq!(h.state().form.value()["env"], json!({"key1X": ""}));
    h.get_by_label("set color").click();
    h.run();
    assert!(h.query_by_label_contains("choose one of the values").is_some());
}

/// Tools of server-everything not called (their forms are still built, filled and
/// validated), and why. The last five are listed only when the client declares
/// sampling/elicitation/roots, which this test does not.
const EVERYTHING_SKIPPED: &[(&str, &str)] = &[
    (
        "trigger-long-running-operation",
        "runs for `duration` seconds (10 by default) sending progress",
    ),
    (
        "simulate-research-query",
        "a task that may stop for input (input_required) and takes seconds",
    ),
    (
        "gzip-file-as-resource",
        "its default `data` is a URL fetched from the internet",
    ),
    (
        "trigger-sampling-request",
        "asks the client for sampling (listed only when declared)",
    ),
    (
        "trigger-elicitation-request",
        "asks the client for elicitation (listed only when declared)",
    ),
    ("trigger-sampling-request-async", "asks the client for sampling"),
    ("trigger-elicitation-request-async", "asks the client for elicitation"),
    (
        "trigger-url-elicitation",
        "asks the client for URL elicitation (listed only when declared)",
    ),
    (
        "get-roots-list",
        "asks the client for roots (listed only with a roots capability)",
    ),
];

/// Builds a form for every tool of a live server, fills it, and calls the tool with the
/// produced arguments: the server must not answer -32602 (invalid params). Returns the
/// names of the tools that answered with a tool error (`isError: true`).
fn call_every_tool(spec: ServerSpec, saved: &str, skipped: &[(&str, &str)]) -> Vec<String> {
    let (mut c, _sink) = client(spec);
    c.wait_spawned(T).unwrap();
    let hs = c.initialize(&HandshakeOptions::default(), T).unwrap().unwrap();
    assert!(hs.usable(), "{}", hs.verdict_text());
    let tools = c.request("tools/list", None, T).unwrap().outcome.unwrap();
    let tools = tools["tools"].as_array().unwrap().clone();
    assert!(!tools.is_empty());
    // The corpus copy must match what the server says (re-capture it when it changes).
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(corpus_dir().join(saved)).unwrap()).unwrap();
    let mut tool_errors = Vec::new();
    let mut called = 0;
    for tool in &tools {
        let name = tool["name"].as_str().unwrap();
        let schema = &tool["inputSchema"];
        let saved_schema = saved["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| &t["inputSchema"]);
        assert_eq!(saved_schema, Some(schema), "{name}: tests/schemas/{saved} is stale");
        let arguments = sample_arguments(name, schema);
        if skipped.iter().any(|(s, _)| *s == name) {
            continue;
        }
        let r = c
            .request("tools/call", Some(json!({"name": name, "arguments": arguments})), T)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        if let Err(e) = &r.outcome {
            assert_ne!(e.code, -32602, "{name}({arguments}) rejected: {}", e.message);
        }
        if r.is_tool_error() {
            tool_errors.push(name.to_owned());
        }
        called += 1;
    }
    c.close();
    assert!(called > 0);
    tool_errors
}

#[test]
fn server_everything_accepts_every_generated_form() {
    let errors = call_every_tool(everything(), "real-everything.json", EVERYTHING_SKIPPED);
    assert!(errors.is_empty(), "tool errors: {errors:?}");
}

#[test]
fn python_sdk_server_accepts_every_generated_form() {
    // `fail` always fails (isError: true); the others must succeed.
    let errors = call_every_tool(py_server(), "real-py_server.json", &[]);
    assert_eq!(errors, vec!["fail".to_owned()]);
}

#[test]
fn node_zod_server_accepts_every_generated_form() {
    let errors = call_every_tool(node_zod_server(), "real-node_zod_server.json", &[]);
    assert_eq!(errors, vec!["fail".to_owned()]);
}
