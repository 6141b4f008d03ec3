//! Forms from JSON Schema (`mcpscope_core::schema`): the corpus in tests/schemas, the live
//! tools/list of four real servers whose calls must be accepted (one of them refuses any
//! argument its schema or its pydantic model does not take), and the composer switching a
//! `oneOf` variant and sending it.

use crate::support::*;
use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable as _;
use mcpscope_app::McpscopeApp;
use mcpscope_app::panels::form_view::form_ui;
use mcpscope_core::protocol::handshake::HandshakeOptions;
use mcpscope_core::schema::form::{Field, FieldError, FieldKind, Form, child_pointer, validator_for};
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

/// The Python SDK server that answers -32602 to any argument its inputSchema (JSON Schema)
/// or its pydantic model refuses (tests/servers/py_strict_server.py).
fn py_strict_server() -> ServerSpec {
    let python = repo().join("tests/peers/.venv/bin/python");
    assert!(python.exists(), "run scripts/setup-test-peers first");
    ServerSpec::new(
        python.display().to_string(),
        [repo().join("tests/servers/py_strict_server.py").display().to_string()],
    )
}

/// The choosers of a form as filled (pointer, number of variants), outer ones first.
fn choosers(f: &Field, pointer: &str, out: &mut Vec<(String, usize)>) {
    if !f.set || (f.nullable && f.is_null) || f.is_pending() {
        return;
    }
    match &f.kind {
        FieldKind::Choice { variants, current, .. } => {
            out.push((pointer.to_owned(), variants.len()));
            choosers(current, pointer, out);
        }
        FieldKind::Object { fields, extra, .. } => {
            for c in fields {
                choosers(c, &child_pointer(pointer, &c.name), out);
            }
            for e in extra {
                choosers(&e.field, &child_pointer(pointer, &e.key), out);
            }
        }
        FieldKind::Map { entries, .. } => {
            for e in entries {
                choosers(&e.field, &child_pointer(pointer, &e.key), out);
            }
        }
        FieldKind::Array { items, .. } => {
            for (i, it) in items.iter().enumerate() {
                choosers(it, &format!("{pointer}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// The form filled with an example, then every variant of every chooser chosen in turn
/// and filled again: (what was chosen, the arguments).
fn every_variant(schema: &Value) -> Vec<(String, Value)> {
    let mut form = Form::from_schema(schema);
    form.fill_sample();
    let mut found = Vec::new();
    choosers(form.root(), "", &mut found);
    let mut out = Vec::new();
    for (pointer, count) in found {
        for i in 0..count {
            let mut f = form.clone();
            let chooser = f.field_at_mut(&pointer).unwrap();
            chooser.choose(i);
            let FieldKind::Choice { labels, .. } = &chooser.kind else {
                unreachable!()
            };
            let what = format!("{pointer} = {}", labels[i]);
            f.fill_sample();
            let errors = f.validate();
            assert!(errors.is_empty(), "{what}: {}\n{errors:#?}", f.value());
            out.push((what, f.value()));
        }
    }
    out
}

#[test]
fn corpus_is_large_enough() {
    let files = std::fs::read_dir(corpus_dir()).unwrap().count();
    assert!(files >= 18, "{files} files");
    for server in ["everything", "py_server", "node_zod_server", "py_strict_server"] {
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

/// Every variant of every chooser in the corpus, once chosen, fills with a valid example
/// (issue #17: 9 of 10 variants of a discriminated union failed once chosen).
#[test]
fn corpus_every_variant_fills_valid() {
    let mut tried = 0;
    for (label, schema) in corpus() {
        let validator = validator_for(&schema).ok();
        for (what, value) in every_variant(&schema) {
            if let Some(v) = &validator {
                let problems: Vec<String> = v.iter_errors(&value).map(|e| e.to_string()).collect();
                assert!(problems.is_empty(), "{label}: {what}: {value}\n{problems:#?}");
            }
            tried += 1;
        }
    }
    assert!(tried > 50, "{tried} variants tried");
}

const PAGE: &str = "59833787-2cf9-4fdf-8782-e53db20768a5";
const DATABASE: &str = "668d797c-76fa-4934-9b05-ad288df2d136";

/// The issue's shapes, as saved in the corpus, give what it asks for.
#[test]
fn corpus_issue_17_shapes() {
    let load = |name: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(corpus_dir().join(name)).unwrap()).unwrap()
    };
    let labels = |f: &Form, p: &str| match &f.field_at(p).unwrap().kind {
        FieldKind::Choice { labels, .. } => labels.clone(),
        k => panic!("{p}: {k:?}"),
    };
    // 1. The optional const tag is sent for every one of the ten operations.
    let ops = load("discriminator-optional-const.json");
    let values = every_variant(&ops);
    let tags: Vec<&str> = values
        .iter()
        .filter(|(what, _)| what.starts_with("/operations/0 ="))
        .map(|(_, v)| v["operations"][0]["operation"].as_str().unwrap())
        .collect();
    assert_eq!(tags.len(), 10, "{values:?}");
    let mut f = Form::from_schema(&ops);
    f.fill_sample();
    assert_eq!(f.value()["pet"]["petType"], "cat");
    assert_eq!(labels(&f, "/operations/0")[..3], ["GetItem", "PutItem", "DeleteItem"]);
    assert_eq!(labels(&f, "/pet"), ["cat", "dog"]);
    // 2. Switching keeps only what the new variant declares; two at once is reported.
    let notion = load("oneof-open-variants.json");
    let mut f = Form::from_schema(&notion);
    f.fill_sample();
    assert!(f.value()["parent"].get("page_id").is_some());
    f.field_at_mut("/parent").unwrap().choose(1);
    f.fill_sample();
    assert_eq!(f.value()["parent"].as_object().unwrap().len(), 1, "{}", f.value());
    f.set_value(&json!({"parent": {"page_id": PAGE, "database_id": DATABASE}}));
    let errors = f.validate();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].pointer, "/parent");
    assert!(
        errors[0].message.contains("\"with page_id\", \"with database_id\""),
        "{errors:?}"
    );
    // 3. Variants told apart.
    let f = Form::from_schema(&load("indistinct-variants.json"));
    assert_eq!(labels(&f, "/filter"), ["object", "with operator"]);
    assert_eq!(labels(&f, "/since"), ["string", "string (date-time)"]);
    assert_eq!(labels(&f, "/who"), ["ByName", "ById"]);
    assert_eq!(labels(&f, "/tag"), ["Tag", "array"]);
    assert_eq!(labels(&f, "/ids"), ["array of string", "array of integer"]);
    // 4. Booleans, not their names.
    let v = sample_arguments("type-array-boolean-string", &load("type-array-boolean-string.json"));
    assert_eq!(v["nextThoughtNeeded"], false);
    assert_eq!(v["isRevision"], false);
    assert_eq!(v["recursive"], false);
    assert_eq!(v["thoughtNumber"], 1);
    // 5. Examples, JSON text, ordered pairs.
    let v = sample_arguments("example-strings", &load("example-strings.json"));
    assert_eq!(v["query"], "{}");
    assert_eq!(v["payload"], "{}");
    assert_eq!(v["zip"], "10001");
    assert_eq!(v["country"], "US", "the example its schema accepts");
    assert_eq!(v["limit"], 20);
    assert!(v["start"].as_str() < v["end"].as_str(), "{v}");
    assert!(v["from"].as_str() < v["to"].as_str(), "{v}");
    assert!(v["startTime"].as_str() < v["endTime"].as_str(), "{v}");
    assert!(v["minPrice"].as_f64() < v["maxPrice"].as_f64(), "{v}");
    for slot in v["slots"].as_array().unwrap() {
        assert!(slot["start_date"].as_str() < slot["end_date"].as_str(), "{slot}");
    }
}

/// A oneOf value matching two variants is drawn next to the chooser, above the variant's
/// fields.
#[test]
fn form_view_reports_an_ambiguous_one_of_at_the_chooser() {
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(corpus_dir().join("oneof-open-variants.json")).unwrap()).unwrap();
    let mut form = Form::from_schema(&schema);
    form.set_value(&json!({"parent": {"page_id": PAGE, "database_id": DATABASE}}));
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
    let message = h.get_by_label_contains("where oneOf allows exactly one");
    let chooser = h.get_by_role_and_label(Role::ComboBox, "parent");
    let page_id = h.get_by_role_and_label(Role::TextInput, "page_id");
    assert!(chooser.rect().top() < message.rect().top());
    assert!(
        message.rect().top() < page_id.rect().top(),
        "the message comes before the fields"
    );
    // Switching to the variant the value was meant for clears it.
    chooser.click();
    h.run();
    h.get_by_label("with database_id").click();
    h.run();
    assert_eq!(h.state().form.value(), json!({"parent": {"database_id": DATABASE}}));
    assert!(h.state().errors.is_empty(), "{:?}", h.state().errors);
    assert!(h.query_by_label_contains("where oneOf allows exactly one").is_none());
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
    // An optional list or object that is in can be taken out again.
    h.get_by_label("unset env").click();
    h.run();
    assert!(h.state().form.value().get("env").is_none());
    // An enum is put in by picking its value: one control, no "set" box.
    assert!(h.query_by_label("set color").is_none());
    assert!(h.state().form.value().get("color").is_none());
}

/// #48: the first tool call is one control a field. An optional text, number
/// or boolean has no "include" box of its own (typing or ticking puts it in,
/// ✖ takes it out); null and the JSON editor are behind the field's "…";
/// the "+ key" of a schema that allows undeclared arguments is behind "More
/// arguments". Every power is still there.
#[test]
fn an_optional_field_is_one_control_and_the_rest_is_behind_a_disclosure() {
    use egui::accesskit::Role;
    let schema = json!({"type":"object","properties":{
        "query":{"type":"string"},
        "limit":{"type":"integer"},
        "exact":{"type":"boolean"},
        "cursor":{"type":["string","null"]}
    }});
    let form = Form::from_schema(&schema);
    let errors = form.validate();
    let mut h = Harness::builder().with_size([900.0, 600.0]).build_ui_state(
        |ui, s: &mut UiState| {
            if form_ui(ui, &mut s.form, &s.errors) {
                s.errors = s.form.validate();
            }
        },
        UiState { form, errors },
    );
    h.run();
    for name in ["query", "limit", "exact", "cursor"] {
        assert!(
            h.query_by_label(&format!("set {name}")).is_none(),
            "no include box for {name}"
        );
    }
    assert_eq!(
        h.query_all_by_role(Role::CheckBox).count(),
        1,
        "one checkbox: the boolean's own value"
    );
    assert!(h.query_by_label("null cursor").is_none(), "null waits behind ⋯");
    assert!(
        h.query_by_label("add key to arguments").is_none(),
        "+ key waits behind More arguments"
    );
    assert_eq!(h.state().form.value(), json!({}));

    h.get_by_role_and_label(Role::TextInput, "query").focus();
    h.run();
    h.get_by_role_and_label(Role::TextInput, "query").type_text("weather");
    h.run();
    h.get_by_role_and_label(Role::CheckBox, "exact").click();
    h.run();
    assert_eq!(h.state().form.value(), json!({"query": "weather", "exact": true}));
    h.get_by_label("unset exact").click();
    h.run();
    assert_eq!(h.state().form.value(), json!({"query": "weather"}));

    // The powers, one disclosure away.
    h.get_by_label("More arguments").click();
    h.run();
    h.get_by_label("add key to arguments").click();
    h.run();
    assert_eq!(
        h.state().form.value().as_object().map(|o| o.len()),
        Some(2),
        "an undeclared argument beside query: {}",
        h.state().form.value()
    );
    let more = h.query_all_by_label("…").count();
    assert!(more >= 1, "each field with more to offer has its ⋯");
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

#[test]
fn strict_python_server_accepts_every_generated_form() {
    let errors = call_every_tool(py_strict_server(), "real-py_strict_server.json", &[]);
    assert!(errors.is_empty(), "tool errors: {errors:?}");
}

/// Every variant of every chooser of the strict server's tools, chosen and filled, is
/// accepted: no -32602 from its inputSchema, its pydantic model or the tool's own checks.
#[test]
fn strict_python_server_accepts_every_variant() {
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(corpus_dir().join("real-py_strict_server.json")).unwrap())
            .unwrap();
    let (mut c, _sink) = client(py_strict_server());
    c.wait_spawned(T).unwrap();
    let hs = c.initialize(&HandshakeOptions::default(), T).unwrap().unwrap();
    assert!(hs.usable(), "{}", hs.verdict_text());
    // The one variant a person may choose but the server refuses, as it should.
    const REFUSED: &[(&str, &str)] = &[("think", "/next_thought_needed = string")];
    let mut calls = 0;
    let mut refused = Vec::new();
    for tool in saved["tools"].as_array().unwrap() {
        let name = tool["name"].as_str().unwrap();
        for (what, arguments) in every_variant(&tool["inputSchema"]) {
            let r = c
                .request("tools/call", Some(json!({"name": name, "arguments": arguments})), T)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            match &r.outcome {
                Ok(result) => assert!(!r.is_tool_error(), "{name} {what}: {arguments} -> {result}"),
                Err(e) if REFUSED.contains(&(name, what.as_str())) => {
                    assert_eq!(e.code, -32602, "{name} {what}: {}", e.message);
                    refused.push((name, what.clone()));
                }
                Err(e) => panic!("{name} {what}: {arguments} refused: {} {:?}", e.message, e.data),
            }
            calls += 1;
        }
    }
    assert_eq!(refused.len(), REFUSED.len(), "{refused:?}");
    c.close();
    // batch_write: 4 operations; create_page: 3 parents.
    assert!(calls >= 7, "{calls} calls");
}

fn app_harness(spec: &ServerSpec) -> Harness<'static, McpscopeApp> {
    let args = launching(spec);
    Harness::builder()
        .with_size([1440.0, 900.0])
        .build_eframe(move |cc| McpscopeApp::new(cc, args))
}

/// The text of the composer's current answer, once it arrived.
fn answer_text(app: &McpscopeApp) -> Option<String> {
    let p = app.session().composer.result.pending.as_ref()?;
    let model = &app.session().inspection.as_ref()?.model;
    let row = model.response_to(&p.id)?;
    Some(model.store.get(row)?.text().into_owned())
}

fn composer_arguments(app: &McpscopeApp) -> Value {
    app.session().composer.tool.form.as_ref().expect("a tool form").value()
}

/// Opens a combo box (by its accessible label) and picks an entry.
fn pick(h: &mut Harness<'static, McpscopeApp>, combo: &str, entry: &str) {
    h.get_by_role_and_label(Role::ComboBox, combo).click();
    h.step();
    h.step();
    // The list may be longer than the popup: accesskit clicks reach rows scrolled out of
    // view, but leave the popup open (a pointer click would close it).
    h.get_by_label(entry).click_accesskit();
    h.step();
    if egui::Popup::is_any_open(&h.ctx) {
        h.key_press(egui::Key::Escape);
    }
    h.step();
    h.step();
    assert!(!egui::Popup::is_any_open(&h.ctx), "the {combo} popup closed");
}

fn send_and_wait(h: &mut Harness<'static, McpscopeApp>, what: &str) -> String {
    let before = h.state().session().composer.history.len();
    h.get_by_label("Send tools/call").click_accesskit();
    step_until(h, what, |app| {
        app.session().composer.history.len() > before && answer_text(app).is_some()
    });
    answer_text(h.state()).unwrap()
}

/// Issue #17: in the composer, a person picks a `oneOf` variant, changes their mind,
/// fills the example and sends it to a server whose validator is strict (pydantic
/// discriminated union, JSON Schema oneOf): no -32602.
#[test]
fn composer_switches_one_of_variants_and_a_strict_server_accepts_them() {
    let mut h = app_harness(&py_strict_server());
    step_until(&mut h, "the strict server's tools", |app| {
        app.session()
            .composer
            .lists
            .tools
            .iter()
            .any(|t| t.name == "batch_write")
    });
    h.get_by_label("Compose").click();
    h.step();

    // Notion's parent: a page first, then the database instead.
    pick(&mut h, "tool", "create_page");
    assert_eq!(h.state().session().composer.tool.name.as_deref(), Some("create_page"));
    h.get_by_role_and_label(Role::TextInput, "page_id").focus();
    h.step();
    h.get_by_role_and_label(Role::TextInput, "page_id").type_text("3f2a");
    h.step();
    assert_eq!(composer_arguments(h.state())["parent"], json!({"page_id": "3f2a"}));
    pick(&mut h, "parent", "with database_id");
    assert_eq!(composer_arguments(h.state())["parent"], json!({"database_id": ""}));
    h.get_by_label("Fill example").click();
    h.step();
    h.step();
    let args = composer_arguments(h.state());
    assert_eq!(args["parent"].as_object().unwrap().len(), 1, "{args}");
    assert!(
        h.state().session().composer.tool.errors.is_empty(),
        "{:?}",
        h.state().session().composer.tool.errors
    );
    let answer = send_and_wait(&mut h, "the create_page answer");
    assert!(!answer.contains("\"error\""), "{answer}");
    assert!(answer.contains("under the database"), "{answer}");

    // A discriminated union whose tag is optional: add an operation, make it a PutItem.
    pick(&mut h, "tool", "batch_write");
    h.get_by_label("+ add operations").click();
    h.step();
    h.step();
    pick(&mut h, "operations[0]", "PutItem");
    h.get_by_label("Fill example").click();
    h.step();
    h.step();
    let args = composer_arguments(h.state());
    assert_eq!(args["operations"][0]["operation"], "PutItem", "{args}");
    assert!(
        h.state().session().composer.tool.errors.is_empty(),
        "{:?}",
        h.state().session().composer.tool.errors
    );
    let answer = send_and_wait(&mut h, "the batch_write answer");
    assert!(!answer.contains("\"error\""), "{answer}");
    assert!(answer.contains("PutItem(key1)"), "{answer}");
    h.state_mut().session_mut().inspection = None;
}
