//! egui_kittest drives the real app: launch real servers, wait for the
//! handshake, select frames, import a config file, open a capture.

use crate::support::*;
use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::NodeT as _;
use egui_kittest::kittest::Queryable as _;
use mcpscope_app::{McpscopeApp, StartupArgs};
use std::time::{Duration, Instant};

fn harness(args: StartupArgs) -> Harness<'static, McpscopeApp> {
    Harness::builder()
        .with_size([1440.0, 900.0])
        .build_eframe(move |cc| McpscopeApp::new(cc, args))
}

/// For servers whose own text (instructions, tool descriptions) uses
/// characters the test fonts lack; the app's own glyphs are checked by the
/// other tests.
fn harness_any_glyphs(args: StartupArgs) -> Harness<'static, McpscopeApp> {
    Harness::builder()
        .with_size([1440.0, 900.0])
        .allow_missing_glyphs()
        .build_eframe(move |cc| McpscopeApp::new(cc, args))
}

/// Types a server's command and arguments into the launcher form.
fn type_command(h: &mut Harness<'static, McpscopeApp>, spec: &mcpscope_core::transport::process::ServerSpec) {
    h.step();
    for (field, text) in [("Command", spec.program.clone()), ("Arguments", spec.args.join(" "))] {
        h.get_by_role_and_label(Role::TextInput, field).focus();
        h.step();
        h.get_by_role_and_label(Role::TextInput, field).type_text(&text);
        h.step();
    }
}

fn shows(h: &Harness<'static, McpscopeApp>, text: &str) -> bool {
    h.query_all_by_label_contains(text).next().is_some()
}

fn handshake_done(app: &McpscopeApp) -> bool {
    app.session
        .inspection
        .as_ref()
        .is_some_and(|i| i.model.handshake.judged().is_some() && i.model.handshake.initialized_row.is_some())
}

fn has_row(app: &McpscopeApp, pred: impl Fn(&str) -> bool) -> bool {
    app.session.inspection.as_ref().is_some_and(|i| {
        i.model
            .store
            .iter()
            .any(|r| pred(&mcpscope_app::panels::timeline::row_label(&i.model.store, &r)))
    })
}

#[test]
fn launch_server_everything_from_the_form_and_inspect_initialize() {
    let spec = everything();
    let mut h = harness_any_glyphs(StartupArgs::default());
    type_command(&mut h, &spec);
    h.get_by_label("▶ Launch").click();
    step_until(&mut h, "handshake and tools/list", |app| {
        handshake_done(app) && has_row(app, |l| l.starts_with("result #2 (tools/list)"))
    });
    // The handshake strip judges the answer.
    assert!(shows(&h, "offered 2025-11-25, server accepted it"));
    h.get_by_label_contains("result #1 (initialize)").click();
    h.step();
    h.step();
    let app = h.state();
    let selected = app.session.timeline.selected.expect("a selected row");
    let model = &app.session.inspection.as_ref().unwrap().model;
    assert_eq!(model.handshake.response_row, Some(selected));
    // The detail shows the tree of the initialize result.
    assert!(
        shows(&h, r#"name: "mcp-servers/everything""#),
        "serverInfo shown in the tree"
    );
    assert!(shows(&h, "Go to request"));
    // Keyboard: down moves to the next frame.
    h.key_press(egui::Key::ArrowDown);
    h.step();
    h.step();
    assert_eq!(h.state().session.timeline.selected, Some(selected + 1));
    h.state_mut().session.inspection = None;
}

#[test]
fn faulty_server_stdout_line_is_loud_and_explained() {
    let mut h = harness(launching(&faulty("stdout-log")));
    step_until(&mut h, "the stray line", |app| {
        has_row(app, |l| l.contains("NOT JSON: Server started on stdio"))
    });
    step_until(&mut h, "the handshake", handshake_done);
    h.get_by_label_contains("NOT JSON: Server started on stdio").click();
    h.step();
    h.step();
    assert!(shows(&h, "‼ not-json"));
    assert!(shows(&h, "logs belong on stderr"));
    h.state_mut().session.inspection = None;
}

#[test]
fn import_a_config_file_and_launch_from_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("claude_desktop_config.json");
    let faulty = faulty_path();
    std::fs::write(
        &path,
        serde_json::json!({"mcpServers": {
            "faulty-normal": {"command": "python3", "args": [faulty, "--mode", "normal"], "env": {"API_KEY": "secret"}},
            "remote": {"url": "https://example.invalid/mcp"}
        }})
        .to_string(),
    )
    .unwrap();
    let mut h = harness(StartupArgs::default());
    h.state_mut().import_config(&path);
    step_until(&mut h, "the config read", |app| !app.importing());
    h.get_by_label("faulty-normal").click();
    h.step();
    assert_eq!(h.state().launcher.form.command, "python3");
    assert_eq!(h.state().launcher.form.env[0].key, "API_KEY");
    h.get_by_label("▶ Launch").click();
    step_until(&mut h, "the handshake", handshake_done);
    h.state_mut().session.inspection = None;

    // A broken file gets a message that names the problem.
    let bad = dir.path().join("broken.json");
    std::fs::write(&bad, "{\"mcpServers\": {\"x\": {\"command\": \"a\"\n").unwrap();
    h.state_mut().import_config(&bad);
    step_until(&mut h, "the config read", |app| !app.importing());
    let (_, msg) = h.state().message.clone().unwrap();
    assert!(msg.contains("not valid JSON at line 2"), "{msg}");
}

#[test]
fn open_a_capture_offline() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("c.jsonl");
    let out = std::process::Command::new(bin())
        .args(["call", "--method", "tools/list", "--capture"])
        .arg(&cap)
        .args(["--", "python3", &faulty_path(), "--mode", "tool-error"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let mut h = harness(StartupArgs {
        open: Some(cap),
        ..StartupArgs::default()
    });
    // The capture is read on a worker; the rows arrive over a few frames.
    step_until(&mut h, "the capture loaded", |app| {
        app.session.inspection.as_ref().is_some_and(|i| !i.loading())
    });
    let app = h.state();
    let model = &app.session.inspection.as_ref().unwrap().model;
    assert!(!model.is_live());
    assert!(model.handshake.judged().is_some());
    // #14: a row clicked while the composer is shown brings its frame forward.
    h.state_mut().right_tab = mcpscope_app::RightTab::Compose;
    h.step();
    h.get_by_label_contains("result #2 (tools/list)").click();
    h.step();
    h.step();
    assert_eq!(h.state().right_tab, mcpscope_app::RightTab::Frame);
    assert!(shows(&h, "\"echo\""), "tools/list result in the tree");
    assert!(shows(&h, "offline capture"));
}

/// #14: File, Open capture… works where no desktop portal runs (as here):
/// mcpscope's own picker lists the folder and takes a typed path.
#[test]
fn open_capture_through_the_in_app_file_picker() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("picked.jsonl");
    std::fs::copy(repo().join("tests/captures/not-json.jsonl"), &cap).unwrap();
    let mut h = harness(StartupArgs::default());
    h.step();
    h.get_by_label("File").click();
    h.step();
    h.step();
    h.get_by_label("Open capture…").click();
    h.step();
    h.step();
    assert!(h.state().picker.is_some(), "the picker opened");
    // A window is laid out on its first frame and shown on the next.
    h.step();
    h.step();
    h.get_by_role_and_label(Role::TextInput, "file").focus();
    h.step();
    h.get_by_role_and_label(Role::TextInput, "file")
        .type_text(&cap.display().to_string());
    h.step();
    h.get_by_label("Open").click();
    step_until(&mut h, "the capture", |app| {
        app.session
            .inspection
            .as_ref()
            .is_some_and(|i| !i.model.is_live() && !i.model.store.is_empty())
    });
    assert!(h.state().picker.is_none(), "the picker closed");
}

/// #33: File → Open takes another tool's capture too (here the MCP
/// Inspector's export): imported into a private capture, then shown.
#[test]
fn opening_an_inspector_export_imports_it() {
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("inspector-protocol-weather.json");
    std::fs::write(
        &export,
        serde_json::json!([
            {"id": "a", "timestamp": "2026-08-20T10:00:00.000Z", "direction": "request", "origin": "client",
             "message": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
             "response": {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}, "duration": 25}
        ])
        .to_string(),
    )
    .unwrap();
    let mut h = harness(StartupArgs {
        open: Some(export.clone()),
        ..StartupArgs::default()
    });
    step_until(&mut h, "the import", |app| {
        app.session
            .inspection
            .as_ref()
            .is_some_and(|i| !i.loading() && i.model.store.len() >= 2)
    });
    let i = h.state().session.inspection.as_ref().unwrap();
    let kept = i.capture_path.clone().unwrap();
    assert_ne!(kept, export, "the import is a capture of its own");
    assert!(mcpscope_core::record::capture::load(&kept).is_ok());
    assert!(
        i.load_warnings.iter().any(|w| w.contains("MCP Inspector export")),
        "{:?}",
        i.load_warnings
    );
}

/// #33: File, Export as HAR… writes the open capture as HAR 1.2 through the
/// in-app picker, on a worker, and says where.
#[test]
fn export_as_har_from_the_file_menu() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("open.jsonl");
    std::fs::copy(repo().join("tests/captures/unanswered-request.jsonl"), &cap).unwrap();
    let mut h = harness(StartupArgs {
        open: Some(cap.clone()),
        ..StartupArgs::default()
    });
    step_until(&mut h, "the capture", |app| {
        app.session
            .inspection
            .as_ref()
            .is_some_and(|i| !i.model.store.is_empty() && !i.loading())
    });
    h.get_by_label("File").click();
    h.step();
    h.step();
    h.get_by_label("Export as HAR…").click();
    h.step();
    h.step();
    assert!(h.state().picker.is_some(), "the picker opened");
    h.step();
    h.step();
    let to = dir.path().join("exported.har");
    h.get_by_role_and_label(Role::TextInput, "file name").focus();
    h.step();
    // The field holds the default name: replace it with a whole path.
    h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
    h.step();
    h.get_by_role_and_label(Role::TextInput, "file name")
        .type_text(&to.display().to_string());
    h.step();
    // Enter in the name takes it, as the picker's Save button does (the
    // filter bar has a Save of its own).
    h.key_press(egui::Key::Enter);
    step_until(&mut h, "the export", |app| {
        app.message
            .as_ref()
            .is_some_and(|(_, m)| m.contains("HAR entries written"))
    });
    let har: serde_json::Value = serde_json::from_slice(&std::fs::read(&to).unwrap()).unwrap();
    assert_eq!(har["log"]["version"], "1.2");
    assert!(
        har["log"]["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["response"]["status"] == 0)
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&to).unwrap().permissions().mode() & 0o777, 0o600);
}

#[test]
fn config_and_server_arguments_launch_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".mcp.json");
    std::fs::write(
        &path,
        serde_json::json!({"mcpServers": {"crlf": {"command": "python3", "args": [faulty_path(), "--mode", "crlf"]}}})
            .to_string(),
    )
    .unwrap();
    let mut h = harness(StartupArgs {
        config: Some(path.clone()),
        server: Some("crlf".into()),
        ..StartupArgs::default()
    });
    step_until(&mut h, "the handshake", handshake_done);
    assert!(shows(&h, "offered 2025-11-25, server accepted it"));
    h.state_mut().session.inspection = None;

    let mut h = harness(StartupArgs {
        config: Some(path),
        server: Some("missing".into()),
        ..StartupArgs::default()
    });
    // The config is read on a worker.
    step_until(&mut h, "the config read", |app| !app.importing());
    h.step();
    assert!(shows(&h, "no server named \"missing\""));
}

#[test]
fn multi_megabyte_payload_opens_without_blocking_the_ui() {
    let mut h = harness(launching(&faulty("big-line")));
    step_until(&mut h, "the handshake", handshake_done);
    h.state_mut()
        .session
        .inspection
        .as_mut()
        .unwrap()
        .send(mcpscope_app::inspection::Outgoing::Request {
            method: "tools/call".into(),
            params: Some(serde_json::json!({"name":"echo","arguments":{"message":"x"}})),
            id: None,
        });
    step_until(&mut h, "the 5 MB result", |app| {
        has_row(app, |l| l.starts_with("result #3"))
    });
    let row = {
        let app = h.state();
        let model = &app.session.inspection.as_ref().unwrap().model;
        model.store.iter().find(|r| r.raw().len() > 5_000_000).unwrap().index()
    };
    let started = Instant::now();
    h.get_by_label_contains("result #3").click();
    h.step();
    // The click returns at once: the parse runs on a worker while frames keep coming.
    assert!(started.elapsed() < Duration::from_secs(2));
    step_until(&mut h, "the parsed tree", |app| {
        app.session.detail.row() == Some(row) && !app.session.detail.busy()
    });
    assert!(shows(&h, "(5000000 chars)"), "the long string is shown shortened");
    assert!(
        shows(&h, "‼ oversize"),
        "over the 4 MB default limit, kept whole and flagged"
    );
    h.state_mut().session.inspection = None;
}

#[test]
fn expert_panel_lists_live_findings_and_selects_their_frames() {
    let mut h = harness(launching(&faulty("stdout-log")));
    step_until(&mut h, "the handshake", handshake_done);
    step_until(&mut h, "a not-json finding from the live capture", |app| {
        app.session
            .expert
            .findings
            .iter()
            .any(|f| f.finding.rule == mcpscope_core::analysis::lint::rule::NOT_JSON)
    });
    h.get_by_label_contains("Expert (").click();
    h.step();
    h.step();
    let rows = h
        .state()
        .session
        .expert
        .findings
        .iter()
        .find(|f| f.finding.rule == mcpscope_core::analysis::lint::rule::NOT_JSON)
        .unwrap()
        .rows
        .clone();
    h.get_by_label_contains("[not-json]").click();
    h.step();
    h.step();
    let app = h.state();
    assert_eq!(
        app.session.timeline.selected,
        Some(rows[0]),
        "the finding's frame is selected"
    );
    assert_eq!(app.session.timeline.highlighted, rows);
    let model = &app.session.inspection.as_ref().unwrap().model;
    let label = mcpscope_app::panels::timeline::row_label(&model.store, &model.store.get(rows[0]).unwrap());
    assert!(label.starts_with("NOT JSON: Server started"), "{label}");
    // The row is marked on the timeline and the detail shows it.
    assert!(shows(&h, &format!("row {}: NOT JSON", rows[0])));
    assert!(h.query_all_by_label_contains("[lint ").next().is_some());
    assert!(shows(&h, "logs belong on stderr"));
    h.state_mut().session.inspection = None;
}

#[test]
fn side_by_side_diff_of_two_captures() {
    let dir = tempfile::tempdir().unwrap();
    let capture = |mode: &str| {
        let cap = dir.path().join(format!("{mode}.jsonl"));
        let out = std::process::Command::new(bin())
            .args(["call", "--tool-name", "echo", "--tool-arg", "message=hi", "--capture"])
            .arg(&cap)
            .args(["--", "python3", &faulty_path(), "--mode", mode])
            .output()
            .unwrap();
        assert!(out.status.code().is_some(), "{out:?}");
        cap
    };
    let (a, b) = (capture("normal"), capture("tool-error"));
    let mut h = harness(StartupArgs {
        diff: Some((a.clone(), b)),
        ..StartupArgs::default()
    });
    step_until(&mut h, "the comparison", |app| {
        app.diff.result.is_some() || app.diff.error.is_some()
    });
    assert!(h.state().diff.error.is_none(), "{:?}", h.state().diff.error);
    assert!(shows(&h, "differ (ids, progress tokens, key order and timing ignored)"));
    // The first differing exchange is selected and shown side by side.
    h.get_by_label_contains("tools/call echo #1 (differs)").click();
    h.step();
    h.step();
    assert!(shows(&h, "tool failure: A isError=false, B isError=true"));
    assert!(shows(&h, "tool failure (isError: true)"), "B's side says what it is");
    assert!(shows(&h, &a.display().to_string()));
    // Only differences hides the same ones.
    let same = h.state().diff.result.as_ref().unwrap().comparison.entries.len()
        - h.state().diff.result.as_ref().unwrap().comparison.differing();
    assert!(same > 0, "initialize and tools/list should compare the same");
    h.get_by_label("Only differences").click();
    h.step();
    h.step();
    assert!(h.query_all_by_label_contains("(same)").next().is_none());
}

fn launch_everything() -> Harness<'static, McpscopeApp> {
    let mut h = harness_any_glyphs(launching(&everything()));
    step_until(&mut h, "the handshake", handshake_done);
    h
}

fn wait_for_tool(h: &mut Harness<'static, McpscopeApp>, name: &str) {
    step_until(h, &format!("tool {name} in the composer"), |app| {
        app.session.composer.lists.tools.iter().any(|t| t.name == name)
    });
}

/// The text of the composer's current answer, once it arrived.
fn answer_text(app: &McpscopeApp) -> Option<String> {
    let p = app.session.composer.result.pending.as_ref()?;
    let model = &app.session.inspection.as_ref()?.model;
    let row = model.response_to(&p.id)?;
    Some(model.store.get(row)?.text().into_owned())
}

fn choose_tool(h: &mut Harness<'static, McpscopeApp>, name: &str, title: &str) {
    h.get_by_label("Compose").click();
    h.step();
    h.get_by_role_and_label(Role::ComboBox, "tool").click();
    h.step();
    h.step();
    // The list may be longer than the popup: accesskit clicks reach rows scrolled out of view.
    let label = if title.is_empty() {
        name.to_owned()
    } else {
        format!("{name} ({title})")
    };
    h.get_by_label(&label).click_accesskit();
    h.step();
    h.step();
    assert_eq!(h.state().session.composer.tool.name.as_deref(), Some(name));
}

#[test]
fn compose_a_tool_call_from_its_schema_and_see_the_result() {
    let mut h = launch_everything();
    wait_for_tool(&mut h, "echo");
    wait_for_tool(&mut h, "get-resource-links");
    choose_tool(&mut h, "echo", "Echo Tool");
    // A field's description is text to read, at the body size (it once rendered at ~7 px).
    let description = h.get_by_label("Message to echo").rect();
    let field = h.get_by_role_and_label(Role::TextInput, "message").rect();
    assert!(
        description.height() >= 0.6 * field.height() && description.height() >= 12.0,
        "description {description:?} beside field {field:?}"
    );
    // A default's mark goes on its field's row before the editor, which
    // takes the rest of the row (after it, the mark wrapped onto a line of its own).
    choose_tool(&mut h, "get-resource-links", "Get Resource Links Tool");
    let mark = h.get_by_label("(default)").rect();
    let editor = h.get_by_role_and_label(Role::TextInput, "count").rect();
    assert!(
        mark.center().y > editor.top() && mark.center().y < editor.bottom() && mark.right() <= editor.left(),
        "(default) {mark:?} before the editor {editor:?} on its row"
    );
    choose_tool(&mut h, "echo", "Echo Tool");
    h.get_by_role_and_label(Role::TextInput, "message").focus();
    h.step();
    h.get_by_role_and_label(Role::TextInput, "message")
        .type_text("hello from kittest");
    h.step();
    h.step();
    assert!(
        h.state().session.composer.tool.errors.is_empty(),
        "{:?}",
        h.state().session.composer.tool.errors
    );
    assert!(
        h.state().session.composer.tool.args_text.contains("hello from kittest"),
        "JSON view follows the form"
    );
    h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::Enter);
    step_until(&mut h, "the echo result", |app| answer_text(app).is_some());
    let text = answer_text(h.state()).unwrap();
    assert!(text.contains("Echo: hello from kittest"), "{text}");
    assert!(shows(&h, "✔ Tool result"));
    assert!(shows(&h, "Echo: hello from kittest"));
    // The same call is on the timeline, and in the history to send again.
    assert!(has_row(h.state(), |l| l.contains("(tools/call)")));
    assert_eq!(h.state().session.composer.history.len(), 1);
    h.get_by_label_contains("History (1)").click();
    h.step();
    h.get_by_label("Re-send").click();
    h.step();
    step_until(&mut h, "the second echo", |app| {
        app.session.composer.history.len() == 2
            && answer_text(app).is_some_and(|t| t.contains("Echo: hello from kittest"))
    });
    h.state_mut().session.inspection = None;
}

#[test]
fn tool_failure_and_protocol_error_look_different() {
    let mut h = launch_everything();
    wait_for_tool(&mut h, "echo");
    h.get_by_label("Compose").click();
    h.step();
    h.get_by_label("Raw").click();
    h.step();
    // A call to a tool that does not exist.
    let c = &mut h.state_mut().session.composer;
    c.raw.method = "tools/call".into();
    c.raw.params = r#"{"name": "no-such-tool", "arguments": {}}"#.into();
    h.step();
    h.get_by_label("Send").click();
    step_until(&mut h, "the answer to the unknown tool", |app| {
        answer_text(app).is_some()
    });
    let text = answer_text(h.state()).unwrap();
    if text.contains("\"error\"") {
        assert!(shows(&h, "✖ Protocol error"), "{text}");
    } else {
        assert!(shows(&h, "⚠ Tool failure (isError: true)"), "{text}");
    }
    // A method the server does not have is a protocol error, never a tool failure.
    h.state_mut().session.composer.raw.method = "no/such/method".into();
    h.state_mut().session.composer.raw.params.clear();
    h.step();
    h.get_by_label("Send").click();
    step_until(&mut h, "the -32601", |app| {
        answer_text(app).is_some_and(|t| t.contains("-32601"))
    });
    h.step();
    assert!(shows(&h, "✖ Protocol error -32601 (Method not found)"));
    // A raw line goes out exactly as typed, even when it is not JSON.
    h.get_by_label("raw line").click();
    h.step();
    h.state_mut().session.composer.raw.line = "{this is not json".into();
    h.step();
    h.get_by_label("Send").click();
    step_until(&mut h, "the malformed line on the timeline", |app| {
        has_row(app, |l| l.contains("NOT JSON: {this is not json"))
    });
    h.state_mut().session.inspection = None;
}

#[test]
fn elicitation_and_sampling_are_answered_by_the_user() {
    let mut h = launch_everything();
    // Registered only because the app declares elicitation and sampling.
    wait_for_tool(&mut h, "trigger-elicitation-request");
    wait_for_tool(&mut h, "trigger-sampling-request");
    choose_tool(
        &mut h,
        "trigger-elicitation-request",
        "Trigger Elicitation Request Tool",
    );
    h.get_by_label("Send tools/call").click_accesskit();
    step_until(&mut h, "the elicitation request", |app| {
        app.session
            .inspection
            .as_ref()
            .is_some_and(|i| !i.questions().is_empty())
    });
    assert!(shows(&h, "The server asks: elicitation/create"));
    h.get_by_role_and_label(Role::TextInput, "name").focus();
    h.step();
    h.get_by_role_and_label(Role::TextInput, "name")
        .type_text("Ada Lovelace");
    h.step();
    h.step();
    h.get_by_label("Accept").click_accesskit();
    step_until(&mut h, "the tool result after accepting", |app| {
        answer_text(app).is_some_and(|t| t.contains("Name: Ada Lovelace"))
    });
    let text = answer_text(h.state()).unwrap();
    // Defaults from the requested schema were sent along (SEP-1034).
    assert!(text.contains("pet-1") || text.contains("Pet Type"), "{text}");

    choose_tool(&mut h, "trigger-sampling-request", "Trigger Sampling Request Tool");
    h.get_by_role_and_label(Role::MultilineTextInput, "prompt").focus();
    h.step();
    h.get_by_role_and_label(Role::MultilineTextInput, "prompt")
        .type_text("what is six times seven");
    h.step();
    h.get_by_label("Send tools/call").click_accesskit();
    step_until(&mut h, "the sampling request", |app| {
        app.session
            .inspection
            .as_ref()
            .is_some_and(|i| !i.questions().is_empty())
    });
    assert!(shows(&h, "what is six times seven"));
    h.get_by_role_and_label(Role::MultilineTextInput, "reply").focus();
    h.step();
    h.get_by_role_and_label(Role::MultilineTextInput, "reply")
        .type_text("forty-two");
    h.step();
    h.get_by_label("Send reply").click_accesskit();
    step_until(&mut h, "the sampling result", |app| {
        answer_text(app).is_some_and(|t| t.contains("forty-two"))
    });
    h.state_mut().session.inspection = None;
}

#[test]
fn remote_server_from_the_launcher_with_progress_cancel_ping_log_and_latency() {
    let server = crate::http::HttpServer::start("streamableHttp");
    let mut h = harness_any_glyphs(StartupArgs::default());
    h.step();
    h.get_by_role_and_label(Role::ComboBox, "Transport").click();
    h.run_steps(3);
    h.get_by_label("Streamable HTTP").click();
    h.step();
    h.get_by_role_and_label(Role::TextInput, "URL").focus();
    h.step();
    h.get_by_role_and_label(Role::TextInput, "URL")
        .type_text(&server.url("/mcp"));
    h.step();
    h.get_by_label("▶ Launch").click();
    step_until(&mut h, "the handshake over HTTP", handshake_done);
    wait_for_tool(&mut h, "trigger-long-running-operation");

    // Ping shows its round trip.
    h.get_by_label("Ping").click();
    h.step();
    assert!(h.state().session.ping.is_some(), "the ping was sent");
    step_until(&mut h, "the ping answer", |app| {
        let (Some(id), Some(i)) = (&app.session.ping, &app.session.inspection) else {
            return false;
        };
        i.model.response_to(id).is_some()
    });
    h.step();
    assert!(shows(&h, " ms") && h.query_all_by_label_contains("ping ").next().is_some());

    // A long operation with a progress token: the bar moves, Cancel stops it.
    choose_tool(
        &mut h,
        "trigger-long-running-operation",
        "Trigger Long Running Operation Tool",
    );
    {
        let c = &mut h.state_mut().session.composer;
        c.tool.args_text = r#"{"duration": 8, "steps": 8}"#.into();
        c.tool.args_text_changed();
    }
    h.step();
    h.get_by_label("Send tools/call").click_accesskit();
    step_until(&mut h, "progress for our token", |app| {
        let Some(p) = &app.session.composer.result.pending else {
            return false;
        };
        let model = &app.session.inspection.as_ref().unwrap().model;
        p.progress_token.as_ref().and_then(|t| model.progress_for(t)).is_some()
    });
    assert!(h.query_all_by_label_contains("progress 1 / 8").next().is_some() || shows(&h, "progress "));
    h.get_by_label("Cancel").click_accesskit();
    step_until(&mut h, "notifications/cancelled on the timeline", |app| {
        has_row(app, |l| l.starts_with("notifications/cancelled"))
    });
    assert!(shows(&h, "cancelled: notifications/cancelled sent"));

    // Logging: setLevel from the composer, messages in the Log tab.
    h.get_by_label("Logging").click();
    h.step();
    h.state_mut().session.composer.log_level = "debug".into();
    h.get_by_label("Send logging/setLevel").click_accesskit();
    step_until(&mut h, "setLevel answered", |app| answer_text(app).is_some());
    h.get_by_label("Tool").click();
    h.step();
    choose_tool(&mut h, "toggle-simulated-logging", "Toggle Simulated Logging");
    h.get_by_label("Send tools/call").click_accesskit();
    step_until(&mut h, "a log message", |app| {
        app.session
            .inspection
            .as_ref()
            .is_some_and(|i| !i.model.log_rows.is_empty())
    });
    h.get_by_label_contains("Log (").click();
    h.step();
    h.step();
    assert_eq!(
        h.state().session.log.lines().len(),
        h.state().session.inspection.as_ref().unwrap().model.log_rows.len()
    );
    assert!(shows(&h, "everything-server"), "the logger name is shown");

    // Latency: per-method summary and chart.
    h.get_by_label("Latency").click();
    h.step();
    h.step();
    assert!(shows(&h, "tools/call"));
    assert!(h.query_by_label("latency chart").is_some());
    assert!(
        h.state()
            .session
            .stats
            .summary
            .iter()
            .any(|s| s.method == "ping" && s.count == 1)
    );
    h.state_mut().session.inspection = None;
}

#[test]
fn images_render_and_prompt_arguments_get_completions() {
    let mut h = launch_everything();
    wait_for_tool(&mut h, "get-tiny-image");
    choose_tool(&mut h, "get-tiny-image", "Get Tiny Image Tool");
    h.get_by_label("Send tools/call").click_accesskit();
    step_until(&mut h, "the image result", |app| answer_text(app).is_some());
    h.step();
    h.step();
    assert!(shows(&h, "image (image/png)"), "the block is named by type");
    assert!(shows(&h, " px, "), "the PNG was decoded into a texture");

    // Prompts: the server offers completions; typing asks for suggestions.
    h.get_by_label("Prompt").click();
    h.step();
    h.get_by_label("Fetch prompts/list").click_accesskit();
    step_until(&mut h, "the prompts", |app| {
        app.session
            .composer
            .lists
            .prompts
            .iter()
            .any(|p| p.name == "completable-prompt")
    });
    h.get_by_role_and_label(Role::ComboBox, "prompt").click();
    h.step();
    h.step();
    h.get_by_label("completable-prompt").click_accesskit();
    h.step();
    h.get_by_role_and_label(Role::TextInput, "department *").focus();
    h.step();
    h.get_by_role_and_label(Role::TextInput, "department *")
        .type_text("Eng");
    h.step();
    step_until(&mut h, "a suggestion", |app| {
        app.session.inspection.as_ref().is_some_and(|i| {
            i.model
                .store
                .iter()
                .any(|r| r.lane() == mcpscope_core::timeline::store::Lane::In && r.text().contains("\"Engineering\""))
        })
    });
    h.step();
    h.step();
    h.get_by_label("Engineering").click_accesskit();
    h.step();
    assert_eq!(
        h.state()
            .session
            .composer
            .prompt
            .args
            .get("department")
            .map(String::as_str),
        Some("Engineering")
    );
    // The suggestions row is gone on the next frame: query the button after it.
    h.step();
    // The second argument's suggestions depend on the first (sent as context)
    // and are shown; with both fields filled nothing asks again and again.
    h.get_by_role_and_label(Role::TextInput, "name *").focus();
    h.step();
    h.get_by_role_and_label(Role::TextInput, "name *").type_text("A");
    let completions = |app: &McpscopeApp| {
        app.session.inspection.as_ref().map_or(0, |i| {
            i.model
                .store
                .iter()
                .filter(|r| {
                    r.lane() == mcpscope_core::timeline::store::Lane::Out && r.method() == Some("completion/complete")
                })
                .count()
        })
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while h.query_by_label("Alice").is_none() {
        assert!(Instant::now() < deadline, "no suggestion for name");
        h.step();
        std::thread::sleep(Duration::from_millis(20));
    }
    let asked = completions(h.state());
    assert_eq!(asked, 2, "one request per settled text of each field");
    // Give a storm time to show: three round trips to the server.
    for _ in 0..3 {
        let ping =
            h.state_mut()
                .session
                .inspection
                .as_mut()
                .unwrap()
                .send(mcpscope_app::inspection::Outgoing::Request {
                    method: "ping".into(),
                    params: None,
                    id: None,
                });
        step_until(&mut h, "the ping's answer", |app| {
            let i = app.session.inspection.as_ref().unwrap();
            ping.as_ref().is_some_and(|id| i.model.response_to(id).is_some())
        });
    }
    assert_eq!(completions(h.state()), asked, "no requests while nothing changed");
    h.get_by_label("Alice").click_accesskit();
    h.step();
    h.step();
    h.get_by_label("Send prompts/get").click_accesskit();
    step_until(&mut h, "the prompt", |app| {
        answer_text(app).is_some_and(|t| t.contains("Engineering") && t.contains("Alice"))
    });
    h.state_mut().session.inspection = None;
}

/// #14: adding an environment variable keeps the section open.
#[test]
fn add_variable_keeps_the_environment_section_open() {
    let mut h = harness(StartupArgs::default());
    h.step();
    h.get_by_label("Environment (0)").click();
    h.step();
    h.step();
    h.get_by_label("Add variable").click();
    h.step();
    h.step();
    assert!(shows(&h, "Environment (1)"));
    assert!(
        h.query_by_label("Add variable").is_some(),
        "the section stays open with its new row"
    );
    h.get_by_label("Add variable").click();
    h.step();
    h.step();
    assert!(h.query_by_label("Add variable").is_some());
    assert_eq!(h.state().launcher.form.env.len(), 2);
}

/// #14: the notifications the server sent are listed, not only counted.
#[test]
fn notifications_are_listed_in_their_own_tab() {
    let mut h = launch_everything();
    step_until(&mut h, "a notification", |app| {
        app.session
            .inspection
            .as_ref()
            .is_some_and(|i| !i.model.notification_rows.is_empty())
    });
    h.get_by_label_contains("Notifications (").click();
    h.step();
    h.step();
    let n = h
        .state()
        .session
        .inspection
        .as_ref()
        .unwrap()
        .model
        .notification_rows
        .len();
    assert!(shows(&h, &format!("{n} of {n} notifications")));
    assert!(h.query_all_by_label_contains("notifications/").count() >= 1);
    h.state_mut().session.inspection = None;
}

/// #14: the tool picker can be searched.
#[test]
fn the_tool_picker_is_searchable() {
    let mut h = launch_everything();
    wait_for_tool(&mut h, "get-tiny-image");
    h.get_by_label("Compose").click();
    h.step();
    h.get_by_role_and_label(Role::ComboBox, "tool").click();
    h.step();
    h.step();
    let total = h.state().session.composer.lists.tools.len();
    assert!(shows(&h, &format!("{total} of {total} tools")));
    h.get_by_role_and_label(Role::TextInput, "search tools")
        .type_text("TINY image");
    h.step();
    h.step();
    assert!(
        shows(&h, &format!("1 of {total} tools")),
        "only the matching tool is listed"
    );
    h.get_by_label("get-tiny-image (Get Tiny Image Tool)").click_accesskit();
    h.step();
    h.step();
    assert_eq!(h.state().session.composer.tool.name.as_deref(), Some("get-tiny-image"));
    h.state_mut().session.inspection = None;
}

/// #14: a request pending when the server dies ends at once, saying so.
#[test]
fn a_request_pending_when_the_server_dies_ends_as_server_exited() {
    let mut h = harness(launching(&faulty("crash-on-call")));
    wait_for_tool(&mut h, "echo");
    choose_tool(&mut h, "echo", "");
    h.get_by_label("Send tools/call").click_accesskit();
    step_until(&mut h, "the end of the call", |app| {
        let (Some(p), Some(i)) = (&app.session.composer.result.pending, &app.session.inspection) else {
            return false;
        };
        i.failure(&p.id).is_some()
    });
    assert!(
        shows(&h, "the server exited with code 7 before answering"),
        "the reason is shown"
    );
    assert!(
        !shows(&h, "waiting for the answer"),
        "no spinner for a request that cannot be answered"
    );
    h.state_mut().session.inspection = None;
}

#[test]
fn modern_server_multi_round_trip_answered_in_the_ui_and_grouped_on_the_timeline() {
    let spec = py_modern_server();
    let mut h = harness_any_glyphs(StartupArgs::default());
    type_command(&mut h, &spec);
    h.get_by_label("auto").click();
    h.step();
    h.get_by_label("▶ Launch").click();
    step_until(&mut h, "the modern era", |app| {
        app.session.inspection.as_ref().is_some_and(|i| {
            i.era().state == mcpscope_core::driver::EraState::Modern && !app.session.composer.lists.tools.is_empty()
        })
    });
    assert!(
        shows(&h, "server/discover answered"),
        "the era and why, above the timeline"
    );
    choose_tool(&mut h, "setup_project", "");
    h.get_by_role_and_label(Role::TextInput, "name").focus();
    h.step();
    h.get_by_role_and_label(Role::TextInput, "name").type_text("demo");
    h.step();
    h.get_by_label("Send tools/call").click_accesskit();
    // Round 1 (roots) is answered by the app; round 2 asks the user.
    step_until(&mut h, "the confirmation to answer", |app| {
        app.session.inspection.as_ref().is_some_and(|i| {
            i.questions()
                .iter()
                .any(|q| matches!(q.origin, mcpscope_core::driver::QuestionOrigin::Input { .. }))
        })
    });
    assert!(shows(&h, "The server asks: elicitation/create"));
    h.get_by_role_and_label(Role::CheckBox, "confirm").click_accesskit();
    h.step();
    h.step();
    h.get_by_label("Accept").click_accesskit();
    step_until(&mut h, "the conversation's final answer", |app| {
        let (Some(p), Some(i)) = (&app.session.composer.result.pending, &app.session.inspection) else {
            return false;
        };
        let head = i.current_id(&p.id);
        head != p.id
            && i.model
                .response_to(&head)
                .and_then(|r| i.model.store.get(r))
                .is_some_and(|r| r.text().contains("action=accept"))
    });
    h.step();
    h.step();
    assert!(shows(&h, "conversation 1:"), "the answer area says the chain moved on");
    assert!(h.query_all_by_label_contains("[conversation 1]").count() >= 4);
    h.state_mut().session.inspection = None;
}

/// Launches a stdio server from the form in the given era (strict glyph checks).
fn launch_in_era(spec: &mcpscope_core::transport::process::ServerSpec, era: &str) -> Harness<'static, McpscopeApp> {
    let mut h = harness(StartupArgs::default());
    type_command(&mut h, spec);
    h.get_by_label(era).click();
    h.step();
    h.get_by_label("▶ Launch").click();
    step_until(&mut h, "the modern era and tools", |app| {
        app.session.inspection.as_ref().is_some_and(|i| {
            i.era().state == mcpscope_core::driver::EraState::Modern && !app.session.composer.lists.tools.is_empty()
        })
    });
    h
}

#[test]
fn a_tool_runs_as_a_task_and_a_listen_stream_is_shown_in_the_composer() {
    let tasks = mcpscope_core::transport::process::ServerSpec::new(
        "python3",
        [repo()
            .join("tests/servers/modern_tasks_server.py")
            .display()
            .to_string()],
    );
    let mut h = launch_in_era(&tasks, "modern");
    choose_tool(&mut h, "slow_sum", "");
    h.get_by_label_contains("run as a task").click_accesskit();
    h.step();
    {
        let c = &mut h.state_mut().session.composer;
        c.tool.args_text = r#"{"a": 40, "b": 2}"#.into();
        c.tool.args_text_changed();
    }
    h.step();
    h.get_by_label("Send tools/call").click_accesskit();
    step_until(&mut h, "the task's result", |app| {
        let (Some(p), Some(i)) = (&app.session.composer.result.pending, &app.session.inspection) else {
            return false;
        };
        i.task(&p.id).is_some_and(|t| t.task.is_some()) && !i.is_pending(&p.id)
    });
    h.step();
    h.step();
    assert!(shows(&h, "Task task-1"), "the task and its flavour are named");
    assert!(shows(&h, "working: step 1 of 3 ▶"), "status transitions are listed");
    assert!(shows(&h, "✔ Tool result"));
    assert!(
        shows(&h, "sum is 42"),
        "the inline result is shown as the tool's answer"
    );
    h.state_mut().session.inspection = None;

    let mut h = launch_in_era(&py_modern_server(), "auto");
    h.get_by_label("Compose").click();
    h.step();
    h.get_by_label("Listen").click();
    h.step();
    h.get_by_label("Send subscriptions/listen").click_accesskit();
    step_until(&mut h, "the acknowledgement", |app| {
        app.session
            .composer
            .listen
            .subscriptions
            .iter()
            .any(|s| s.acknowledged.is_some())
    });
    h.step();
    assert!(h.query_all_by_label_contains("✔ acknowledged").next().is_some());
    assert!(shows(&h, "notification(s) on this stream"));
    h.state_mut().session.inspection = None;
}

fn skills_server(extra: &[&str]) -> mcpscope_core::transport::process::ServerSpec {
    let mut args = vec![repo().join("tests/servers/skills_server.py").display().to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    mcpscope_core::transport::process::ServerSpec::new("python3", args)
}

/// The `resources/read` requests the app sent, by URI.
fn skill_reads(app: &McpscopeApp) -> Vec<String> {
    app.session.inspection.as_ref().map_or_else(Vec::new, |i| {
        i.model
            .store
            .iter()
            .filter(|r| r.lane() == mcpscope_core::timeline::store::Lane::Out && r.method() == Some("resources/read"))
            .filter_map(|r| serde_json::from_slice::<serde_json::Value>(r.raw()).ok())
            .filter_map(|v| v.pointer("/params/uri")?.as_str().map(str::to_owned))
            .collect()
    })
}

fn open_skill(h: &mut Harness<'static, McpscopeApp>, name: &str) {
    step_until(h, "the handshake", handshake_done);
    h.get_by_label("Compose").click();
    h.step();
    h.get_by_label("Skills").click();
    h.step();
    // Entering the mode lists the skills (listing reads no file).
    step_until(h, "skills/list", |app| app.session.composer.lists.skills.len() == 2);
    h.step();
    h.get_by_label_contains(&format!("{name}  ")).click();
    h.step();
    h.step();
}

/// Clicks the one Read button that is enabled (SKILL.md's, before it verified).
fn read_the_enabled_file(h: &mut Harness<'static, McpscopeApp>) {
    h.query_all_by_label("Read")
        .find(|r| !r.accesskit_node().is_disabled())
        .expect("an enabled Read button")
        .click();
}

fn file_state(app: &McpscopeApp, path: &str) -> Option<mcpscope_core::protocol::skills::FileState> {
    app.session.composer.skills.load.as_ref()?.state(path).cloned()
}

#[test]
fn skills_mode_shows_the_frontmatter_and_files_and_reads_only_what_is_asked() {
    use mcpscope_core::protocol::skills::FileState;
    let mut h = harness(launching(&skills_server(&[])));
    open_skill(&mut h, "pdf-processing");
    assert!(shows(&h, "Frontmatter as listed (not yet checked against SKILL.md)"));
    assert!(shows(&h, "Extract, fill, and assemble PDF documents"));
    // The files as a tree: folders and files, nothing read yet.
    for label in ["SKILL.md", "references/", "FORMS.md", "scripts/", "fill.py"] {
        assert!(shows(&h, label), "{label} in the tree");
    }
    assert!(skill_reads(h.state()).is_empty(), "no file is prefetched");
    // Only SKILL.md can be read first.
    let reads: Vec<_> = h.query_all_by_label("Read").collect();
    assert_eq!(reads.len(), 3);
    assert_eq!(
        reads.iter().filter(|r| !r.accesskit_node().is_disabled()).count(),
        1,
        "only SKILL.md's Read is enabled before it verified"
    );
    read_the_enabled_file(&mut h);
    step_until(&mut h, "SKILL.md verified", |app| {
        matches!(file_state(app, "SKILL.md"), Some(FileState::Verified(_)))
    });
    h.step();
    h.step();
    assert!(shows(&h, "Frontmatter ✔ SKILL.md matches the listing"));
    assert!(
        shows(&h, "Read references/FORMS.md before filling a form"),
        "SKILL.md's text shown"
    );
    assert_eq!(skill_reads(h.state()), ["skill://pdf-processing/SKILL.md"]);
    // Now the other files can be read, one at a time, on demand.
    let reads: Vec<_> = h.query_all_by_label("Read").collect();
    assert_eq!(reads.len(), 2);
    assert!(reads.iter().all(|r| !r.accesskit_node().is_disabled()));
    reads[0].click();
    step_until(&mut h, "FORMS.md verified", |app| {
        matches!(file_state(app, "references/FORMS.md"), Some(FileState::Verified(_)))
    });
    h.step();
    h.step();
    assert!(shows(&h, "Field names are case-sensitive."));
    assert_eq!(
        skill_reads(h.state()),
        [
            "skill://pdf-processing/SKILL.md",
            "skill://pdf-processing/references/FORMS.md"
        ],
        "scripts/fill.py was not asked for and not read"
    );
    h.state_mut().session.inspection = None;
}

#[test]
fn skills_mode_shows_a_failed_check_as_an_error_and_reads_nothing_more() {
    use mcpscope_core::protocol::skills::FileState;
    let mut h = harness(launching(&skills_server(&[
        "--tamper",
        "pdf-processing/references/FORMS.md",
    ])));
    open_skill(&mut h, "pdf-processing");
    read_the_enabled_file(&mut h);
    step_until(&mut h, "SKILL.md verified", |app| {
        matches!(file_state(app, "SKILL.md"), Some(FileState::Verified(_)))
    });
    h.step();
    h.query_all_by_label("Read").next().unwrap().click();
    step_until(&mut h, "FORMS.md rejected", |app| {
        matches!(file_state(app, "references/FORMS.md"), Some(FileState::Rejected(_)))
    });
    h.step();
    h.step();
    assert!(shows(&h, "✖ verification failed, not using this skill"));
    assert!(shows(&h, "the skill entry announces sha256:"), "the digests are named");
    // Nothing more of the skill can be read.
    assert!(
        h.query_all_by_label("Read").all(|r| r.accesskit_node().is_disabled()),
        "scripts/fill.py's Read is disabled after a failed check"
    );
    assert_eq!(skill_reads(h.state()).len(), 2);

    // Another skill of the same server is a fresh start; a frontmatter that
    // differs from the listing fails SKILL.md itself.
    let mut h = harness(launching(&skills_server(&["--drop-frontmatter"])));
    open_skill(&mut h, "pdf-processing");
    read_the_enabled_file(&mut h);
    step_until(&mut h, "SKILL.md rejected", |app| {
        matches!(file_state(app, "SKILL.md"), Some(FileState::Rejected(_)))
    });
    h.step();
    h.step();
    assert!(shows(&h, "license is missing from the file"));
    assert!(shows(&h, "Frontmatter as listed (not yet checked against SKILL.md)"));
    h.state_mut().session.inspection = None;
}

#[test]
fn the_json_tree_starts_at_the_top_of_each_frame_selected() {
    let mut h = launch_everything();
    step_until(&mut h, "tools/list", |app| {
        has_row(app, |l| l.starts_with("result #2 (tools/list)"))
    });
    // A second frame as long as the first: the same list again.
    let id = h
        .state_mut()
        .session
        .inspection
        .as_mut()
        .unwrap()
        .send(mcpscope_app::inspection::Outgoing::Request {
            method: "tools/list".into(),
            params: None,
            id: Some(mcpscope_core::wire::message::RequestId::Number(900)),
        })
        .unwrap();
    step_until(&mut h, "the second tools/list", |app| {
        app.session
            .inspection
            .as_ref()
            .unwrap()
            .model
            .response_to(&id)
            .is_some()
    });
    h.state_mut().right_tab = mcpscope_app::RightTab::Frame;
    h.get_by_label_contains("result #2 (tools/list)").click();
    for _ in 0..3 {
        h.step();
    }
    // The top of the tree sits just under the detail's toolbar.
    let toolbar = h.get_by_label("Expand all").rect();
    let top_of_tree = |h: &Harness<'static, McpscopeApp>| {
        h.query_all_by_label_contains("result: {")
            .map(|n| n.rect())
            .min_by(|a, b| a.top().total_cmp(&b.top()))
            .expect("the tree's result node")
    };
    let first = top_of_tree(&h);
    assert!(
        first.top() > toolbar.bottom() && first.top() < toolbar.bottom() + 120.0,
        "{first:?} under {toolbar:?}"
    );
    // Scroll the long tree down with the mouse wheel.
    h.get_by_label_contains("result: {").hover();
    h.step();
    for _ in 0..5 {
        h.event(egui::Event::MouseWheel {
            unit: egui::MouseWheelUnit::Point,
            delta: egui::vec2(0.0, -200.0),
            phase: egui::TouchPhase::Move,
            source: egui::MouseWheelSource::Unknown,
            modifiers: egui::Modifiers::NONE,
        });
        h.step();
    }
    for _ in 0..10 {
        h.step();
        std::thread::sleep(Duration::from_millis(20));
    }
    let scrolled = top_of_tree(&h);
    assert!(scrolled.top() < toolbar.top() - 500.0, "scrolled away: {scrolled:?}");
    // The next frame starts at its top, not at the offset the last one had.
    h.get_by_label_contains("result #900 (tools/list)").click();
    for _ in 0..3 {
        h.step();
    }
    let next = top_of_tree(&h);
    assert!(
        (next.top() - first.top()).abs() < 1.0,
        "the next frame's tree starts at the top: {next:?}, expected {first:?}"
    );
    h.state_mut().session.inspection = None;
}

/// Every label on screen, for checks on what the whole window says.
fn all_labels(h: &Harness<'static, McpscopeApp>) -> Vec<String> {
    h.query_all_by_label_contains("")
        .filter_map(|n| n.accesskit_node().label())
        .collect()
}

#[test]
fn the_window_says_what_it_means_during_and_after_a_handshake() {
    // A normal handshake: the strip never claims, even for one frame, that
    // notifications/initialized was not sent.
    let mut h = harness(launching(&faulty("normal")));
    h.state_mut().launcher.recent = vec![mcpscope_app::panels::launcher::SavedServer {
        name: "long".into(),
        program: "python3".into(),
        args: vec!["/a/very/long/path/to/a/server/that/does/not/fit/on/one/line/server.py".into(); 3],
        ..Default::default()
    }];
    let deadline = Instant::now() + Duration::from_secs(30);
    while !h
        .state()
        .session
        .inspection
        .as_ref()
        .is_some_and(|i| i.model.latest_results.contains_key("tools/list"))
    {
        assert!(Instant::now() < deadline, "no handshake and tools/list");
        h.step();
        assert!(
            !shows(&h, "notifications/initialized not sent"),
            "the strip judged the handshake before it was over"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    h.step();
    h.step();
    // An empty capability object is the capability, with no empty brackets.
    assert!(shows(&h, "capabilities: tools"));
    assert!(!shows(&h, "tools ()"));
    // Labels shortened to fit say nothing about byte counts (Recent list, Latency).
    h.state_mut().bottom_tab = mcpscope_app::BottomTab::Latency;
    h.step();
    h.step();
    let labels = all_labels(&h);
    assert!(
        labels.iter().any(|l| l.contains("long — python3")),
        "the recent entry is listed"
    );
    assert!(
        labels.iter().all(|l| !l.contains("bytes in all")),
        "{:?}",
        labels.iter().filter(|l| l.contains("bytes in all")).collect::<Vec<_>>()
    );
    h.state_mut().session.inspection = None;

    // A stray stdout line during initialize: the strip is not green, it says so.
    let mut h = harness(launching(&faulty("stdout-log")));
    step_until(&mut h, "the handshake", handshake_done);
    h.step();
    h.step();
    assert!(shows(&h, "on stdout during the handshake are not JSON-RPC"));
    h.state_mut().session.inspection = None;
}

/// #25 item 13: the answer area belongs to what sent it: another tool, or
/// another mode, does not show the last tool's answer.
#[test]
fn the_answer_area_follows_the_tool_and_the_mode() {
    let mut h = launch_everything();
    wait_for_tool(&mut h, "echo");
    wait_for_tool(&mut h, "get-resource-links");
    choose_tool(&mut h, "echo", "Echo Tool");
    h.get_by_role_and_label(Role::TextInput, "message").focus();
    h.step();
    h.get_by_role_and_label(Role::TextInput, "message")
        .type_text("stale or not");
    h.step();
    h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::Enter);
    step_until(&mut h, "the echo result", |app| answer_text(app).is_some());
    assert!(shows(&h, "Echo: stale or not"));
    choose_tool(&mut h, "get-resource-links", "Get Resource Links Tool");
    assert!(
        !shows(&h, "Echo: stale or not"),
        "another tool's form shows no stale answer"
    );
    assert!(shows(&h, "The answer to what you send shows here."));
    choose_tool(&mut h, "echo", "Echo Tool");
    assert!(
        shows(&h, "Echo: stale or not"),
        "back on the tool, its answer is there again"
    );
    h.get_by_label("Prompt").click();
    h.step();
    h.step();
    assert!(!shows(&h, "Echo: stale or not"), "nor in another mode");
    h.state_mut().session.inspection = None;
}

/// #25 item 6: Launch is not greyed while a session runs: it opens a new
/// tab, says so, and the session on screen keeps running.
#[test]
fn launch_while_a_session_runs_takes_a_new_tab() {
    let mut h = harness(launching(&faulty("normal")));
    step_until(&mut h, "the handshake", handshake_done);
    assert!(
        shows(&h, "Launch opens a new tab"),
        "the launcher says what Launch will do"
    );
    h.get_by_label("▶ Launch").click();
    step_until(&mut h, "a second tab's handshake", |app| {
        app.tabs.len() == 2 && handshake_done(app)
    });
    assert_eq!(h.state().active_tab, 1);
    assert!(
        h.state().tabs[0]
            .view
            .inspection
            .as_ref()
            .is_some_and(|i| i.model.running()),
        "the first session still runs"
    );
    h.state_mut().session.inspection = None;
    h.state_mut().tabs[0].view.inspection = None;
}

/// #25 item 8: an HTTP exchange's row shows its record as a tree (method,
/// URL, status, the headers sent and received), with a way to the request
/// it carried; it was one summary line.
#[test]
fn an_http_exchange_shows_its_headers_as_a_tree() {
    let mut h = harness(StartupArgs {
        open: Some(repo().join("tests/captures/401-without-www-authenticate.jsonl")),
        ..StartupArgs::default()
    });
    step_until(&mut h, "the capture loaded", |app| {
        app.session
            .inspection
            .as_ref()
            .is_some_and(|i| i.model.store.len() >= 2)
    });
    h.get_by_label_contains("HTTP POST").click();
    h.step();
    h.step();
    assert!(shows(&h, "status: 401"), "the status is a node of the tree");
    assert!(
        shows(&h, "\"application/json, text/event-stream\""),
        "a header sent is shown"
    );
    h.get_by_label_contains("Go to the request it carried").click();
    h.step();
    h.step();
    assert_eq!(h.state().session.timeline.selected, Some(0));
}

/// #25 item 12: closing a tab whose server runs asks first; "Keep it open"
/// keeps it running, "Stop the server and close" stops it.
#[test]
fn closing_a_running_tab_asks_first() {
    let mut h = harness(launching(&faulty("normal")));
    step_until(&mut h, "the handshake", handshake_done);
    h.get_by_label("x").click();
    h.step();
    h.step();
    h.step();
    assert!(
        shows(&h, "Close a running session?"),
        "asked before stopping the server"
    );
    assert!(h.state().session.inspection.as_ref().is_some_and(|i| i.model.running()));
    h.get_by_label("Keep it open").click();
    h.step();
    h.step();
    assert!(!shows(&h, "Close a running session?"));
    assert!(
        h.state().session.inspection.as_ref().is_some_and(|i| i.model.running()),
        "kept"
    );
    h.get_by_label("x").click();
    h.step();
    h.step();
    h.get_by_label("Stop the server and close").click();
    h.step();
    assert!(
        h.state().session.inspection.is_none(),
        "the session is gone with its tab"
    );
}

/// #25 item 4: many tabs keep the tab strip one row high, and "Compare
/// with…" keeps its width.
#[test]
fn many_tabs_keep_the_strip_one_row_high() {
    let mut h = harness(StartupArgs::default());
    h.run_steps(2);
    let strip_before = h.get_by_label("+").rect();
    for i in 0..12 {
        h.get_by_label("+").click();
        h.step();
        h.step();
        let last = h.state().tabs.len() - 1;
        h.state_mut().tabs[last].title = format!("session {i} with long title");
        // The labels are fitted to the strip over a frame or two: let the "+" settle.
        h.run_steps(4);
    }
    assert_eq!(h.state().tabs.len(), 13);
    h.run_steps(3);
    let plus = h.get_by_label("+").rect();
    assert!(
        (plus.top() - strip_before.top()).abs() < 1.0,
        "the strip stayed one row: {strip_before:?} → {plus:?}"
    );
    let compare = h.get_by_label("Compare with…").rect();
    assert!(compare.width() > 60.0 && compare.height() < 40.0, "{compare:?}");
    // Every tab's label is shortened to fit: all of them are in the strip's view.
    let tabs: Vec<egui::Rect> = h
        .query_all_by(|n| n.label().is_some_and(|l| l.starts_with("sess")))
        .map(|n| n.rect())
        .filter(|r| r.top() < plus.bottom())
        .collect();
    assert_eq!(tabs.len(), 12, "{tabs:?}");
    for t in tabs {
        assert!(t.left() >= 0.0 && t.right() <= compare.left(), "{t:?} hidden");
    }
}

/// #25 item 9: the bottom tabs stay where they are whichever tab is shown
/// (the panel's height is the user's, not its content's).
#[test]
fn the_bottom_tabs_stay_put() {
    let mut h = harness_any_glyphs(launching(&everything()));
    step_until(&mut h, "the handshake", handshake_done);
    h.run_steps(5);
    let mut tops = Vec::new();
    for tab in ["Latency", "Notifications (", "Log (", "Expert", "stderr (", "Latency"] {
        h.get_by_label_contains(tab).click();
        h.run_steps(3);
        tops.push((tab, h.get_by_label("Latency").rect().top()));
    }
    let first = tops[0].1;
    assert!(tops.iter().all(|(_, t)| (t - first).abs() < 1.0), "{tops:?}");
    h.state_mut().session.inspection = None;
}

/// #25 item 7: Restart starts what the launcher shows (its edits included,
/// and says so) and keeps the composer's tool and mode.
#[test]
fn restart_uses_the_launchers_edits_and_keeps_the_composer() {
    let mut h = launch_everything();
    wait_for_tool(&mut h, "echo");
    choose_tool(&mut h, "echo", "Echo Tool");
    h.state_mut()
        .launcher
        .form
        .env
        .push(mcpscope_app::panels::launcher::EnvRow {
            key: "MCPSCOPE_RESTART_EDIT".into(),
            value: "1".into(),
            ..Default::default()
        });
    h.step();
    h.get_by_label("⟳ Restart").click();
    h.step();
    step_until(&mut h, "the new handshake", handshake_done);
    wait_for_tool(&mut h, "echo");
    let app = h.state();
    let env = match app.session.inspection.as_ref().and_then(|i| i.target.as_ref()) {
        Some(mcpscope_core::transport::target::Target::Stdio(spec)) => spec.env.clone(),
        other => panic!("{other:?}"),
    };
    assert!(
        env.iter().any(|(k, v)| k == "MCPSCOPE_RESTART_EDIT" && v == "1"),
        "{env:?}"
    );
    assert_eq!(
        app.session.composer.tool.name.as_deref(),
        Some("echo"),
        "the tool chosen stays"
    );
    assert_eq!(app.session.composer.mode, mcpscope_app::composer::Mode::Tool);
    assert!(
        shows(&h, "restarted with the launcher's edits"),
        "the status bar says so"
    );
    h.state_mut().session.inspection = None;
}

/// #25 item 10: "System dialog…" with no desktop portal to answer brings
/// the in-app picker back instead of closing it.
#[test]
fn the_in_app_picker_comes_back_when_no_system_dialog_answers() {
    let mut h = harness(StartupArgs::default());
    h.step();
    h.get_by_label("File").click();
    h.step();
    h.step();
    h.get_by_label("Open capture…").click();
    for _ in 0..4 {
        h.step();
    }
    assert!(h.state().picker.is_some(), "the picker opened");
    h.get_by_label("System dialog…").click();
    h.step();
    // No portal runs here (no session bus): the dialog answers nothing.
    step_until(&mut h, "the system dialog's answer", |app| {
        app.message
            .as_ref()
            .is_some_and(|(_, m)| m.contains("back to mcpscope's own picker"))
    });
    assert!(h.state().picker.is_some(), "back in the in-app picker");
}

/// #25 item 2: while initialize waits, the strip says for how long.
#[test]
fn a_waiting_initialize_shows_how_long_it_has_waited() {
    let mut h = harness(launching(&faulty("no-read")));
    step_until(&mut h, "initialize sent", |app| {
        app.session
            .inspection
            .as_ref()
            .is_some_and(|i| i.model.handshake.initialize_row.is_some())
    });
    std::thread::sleep(Duration::from_millis(1200));
    h.run_steps(2);
    assert!(shows(&h, "waiting for the initialize response"));
    let waited = h
        .state()
        .session
        .inspection
        .as_ref()
        .unwrap()
        .initialize_waited()
        .unwrap();
    assert!(waited >= Duration::from_secs(1), "{waited:?}");
    assert!(
        shows(&h, &format!("{:.0}.", waited.as_secs_f64().floor())),
        "the wait is on screen"
    );
    h.state_mut().session.inspection = None;
}

/// #25 item 5: at 1024x700 the side panels give way and the timeline keeps
/// room for both lifelines and the stderr lane.
#[test]
fn the_layout_is_usable_at_1024_by_700() {
    // Opened at the default size, then made smaller, as a user resizes it.
    let mut h = harness(launching(&faulty("normal")));
    step_until(&mut h, "the handshake", handshake_done);
    h.set_size(egui::Vec2::new(1024.0, 700.0));
    h.run_steps(4);
    let row = h.get_by_label_contains("row 0:").rect();
    assert!(row.width() >= 420.0, "the timeline is {row:?} wide");
    assert!(row.right() <= 1024.0, "{row:?}");
    // The Frame tab (right panel) and the launcher (left) are still there.
    assert!(h.get_by_label("Frame").rect().right() <= 1024.0);
    assert!(h.get_by_label("▶ Launch").rect().left() >= 0.0);
    h.state_mut().session.inspection = None;
}

/// #25 item 15: a focused text field asks for no frames while nothing
/// changes (a blinking cursor repainted twice a second: ~20% of a core
/// with software rendering).
#[test]
fn an_idle_window_with_a_focused_field_asks_for_no_frames() {
    let mut h = harness(StartupArgs::default());
    h.run_steps(2);
    assert!(!h.ctx.global_style().visuals.text_cursor.blink, "no blinking cursor");
    // The live sessions' first listing (a worker reading the state directory,
    // slow on a loaded machine) asks for a frame when it lands: not idleness.
    step_until(&mut h, "the first listing of live sessions", |app| app.live.listed);
    h.get_by_role_and_label(Role::TextInput, "Command").focus();
    h.run_steps(3);
    h.step();
    assert!(!h.ctx.has_requested_repaint(), "an idle frame asks for another");
}

/// A request frame sent again from its detail (Replay), and loaded into the
/// raw composer to edit first (Edit & replay), envelope left out.
#[test]
fn a_request_frame_is_replayed_and_loaded_into_the_raw_composer() {
    let mut h = harness(launching(&faulty("normal")));
    step_until(&mut h, "tools/list answered", |app| {
        handshake_done(app) && has_row(app, |l| l.starts_with("result #2 (tools/list)"))
    });
    let count = |app: &McpscopeApp| {
        app.session.inspection.as_ref().map_or(0, |i| {
            i.model
                .store
                .iter()
                .filter(|r| mcpscope_app::panels::timeline::row_label(&i.model.store, r).starts_with("tools/list #"))
                .count()
        })
    };
    assert_eq!(count(h.state()), 1);
    h.get_by_label_contains("tools/list #2").click();
    h.step();
    h.step();
    // With Follow tail off the new row lands out of sight: it is selected,
    // and the status line says where it went.
    h.state_mut().session.timeline.follow_tail = false;
    h.get_by_label("Replay").click();
    step_until(&mut h, "the replayed tools/list answered", |app| {
        count(app) == 2 && has_row(app, |l| l.starts_with("result #3 (tools/list)"))
    });
    let replayed = {
        let app = h.state();
        let i = app.session.inspection.as_ref().unwrap();
        i.model
            .store
            .iter()
            .find(|r| mcpscope_app::panels::timeline::row_label(&i.model.store, r).starts_with("tools/list #3"))
            .map(|r| r.index())
            .unwrap()
    };
    assert_eq!(
        h.state().session.timeline.selected,
        Some(replayed),
        "the replayed request is selected"
    );
    assert!(
        h.state()
            .message
            .as_ref()
            .is_some_and(|(_, m)| m.contains(&format!("replayed as row {replayed}"))),
        "{:?}",
        h.state().message
    );
    // Edit & replay: the raw composer holds the request, ready to change.
    // (The timeline's row is the first of the labels naming it; the detail's header is another.)
    h.query_all_by_label_contains("tools/list #2").next().unwrap().click();
    h.step();
    h.step();
    h.get_by_label("Edit & replay").click();
    h.step();
    h.step();
    let app = h.state();
    assert_eq!(app.session.composer.mode, mcpscope_app::composer::Mode::Raw);
    assert_eq!(app.session.composer.raw.method, "tools/list");
    assert!(
        !app.session.composer.raw.params.contains("_meta"),
        "{}",
        app.session.composer.raw.params
    );
    assert!(shows(&h, "tools/list"));
    // Once the server has ended there is nothing to replay to: the button says so.
    h.state_mut().session.inspection.as_mut().unwrap().stop();
    step_until(&mut h, "the server ended", |app| {
        app.session.inspection.as_ref().is_some_and(|i| !i.model.running())
    });
    h.state_mut().right_tab = mcpscope_app::RightTab::Frame;
    h.query_all_by_label_contains("tools/list #2").next().unwrap().click();
    h.run_steps(3);
    assert!(
        h.get_by_label("Replay").accesskit_node().is_disabled(),
        "Replay is off for a session whose server has ended"
    );
    h.state_mut().session.inspection = None;
}

/// File → Mock this capture: the open capture is served by `mcpscope mock`
/// in a new tab, and the app gets the recorded answers from it.
#[test]
fn file_mock_this_capture_serves_it_in_a_new_tab() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("recorded.jsonl");
    let spec = faulty("normal");
    let out = std::process::Command::new(bin())
        .args([
            "call",
            "--method",
            "tools/list",
            "--capture",
            cap.to_str().unwrap(),
            "--",
        ])
        .arg(&spec.program)
        .args(&spec.args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut h = harness(StartupArgs {
        open: Some(cap.clone()),
        ..StartupArgs::default()
    });
    h.state_mut().mcpscope_binary = Some(bin().display().to_string());
    step_until(&mut h, "the capture opened", |app| {
        has_row(app, |l| l.starts_with("result #2 (tools/list)"))
    });
    h.get_by_label("File").click();
    h.step();
    h.step();
    h.get_by_label("Mock this capture").click();
    step_until(&mut h, "the mock's tools/list answered", |app| {
        app.session
            .inspection
            .as_ref()
            .is_some_and(|i| i.model.command_line().contains(" mock "))
            && handshake_done(app)
            && has_row(app, |l| l.starts_with("result #") && l.contains("(tools/list)"))
    });
    assert!(
        shows(&h, "mock of recorded.jsonl"),
        "the new tab is named after the capture"
    );
    h.state_mut().session.inspection = None;
}

/// File → Verify against server…: the open capture's requests go to a
/// server from the launcher; what changed is listed, breaking first, and the
/// two sessions open side by side.
#[test]
fn file_verify_against_server_lists_the_changes_and_opens_the_diff() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("baseline.jsonl");
    let spec = py_server();
    let out = std::process::Command::new(bin())
        .args(["call", "--tool-name", "add", "--tool-arg", "a=2", "--tool-arg", "b=3"])
        .args(["--capture", cap.to_str().unwrap(), "--"])
        .arg(&spec.program)
        .args(&spec.args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut h = harness(StartupArgs {
        open: Some(cap.clone()),
        ..StartupArgs::default()
    });
    step_until(&mut h, "the capture opened", |app| {
        has_row(app, |l| l.starts_with("result #") && l.contains("(tools/call)"))
    });
    let drifted = mcpscope_app::panels::launcher::SavedServer {
        name: "drifted".into(),
        program: spec.program.clone(),
        args: spec.args.clone(),
        env: vec![("MCPSCOPE_TEST_DRIFT".into(), "1".into())],
        protocol_version: "2025-11-25".into(),
        ..Default::default()
    };
    h.state_mut().launcher.recent = vec![drifted];
    h.get_by_label("File").click();
    h.step();
    h.step();
    h.get_by_label("Verify against server…").click();
    h.step();
    h.step();
    h.get_by_label("Verify").click();
    step_until(&mut h, "the verification", |app| {
        app.verify.result.is_some() || app.verify.error.is_some()
    });
    let v = h
        .state()
        .verify
        .result
        .clone()
        .unwrap_or_else(|| panic!("{:?}", h.state().verify.error));
    assert!(v.changes[0].0, "breaking first: {:?}", v.changes);
    assert!(
        v.changes
            .iter()
            .any(|(b, s, w)| *b && s == "tool fail" && w == "removed"),
        "{:?}",
        v.changes
    );
    let add = v
        .replayed
        .iter()
        .find(|(k, _)| k.starts_with("tools/call add"))
        .unwrap();
    assert!(
        add.1.iter().any(|d| d.contains("the recording 5 vs the server 6")),
        "{:?}",
        add.1
    );
    step_until(&mut h, "the side-by-side diff", |app| app.diff.result.is_some());
    assert_eq!(h.state().diff.b.as_deref(), Some(v.live.as_path()));
    assert!(shows(&h, "breaking   tool fail: removed"));
    h.state_mut().session.inspection = None;
}

/// #33: an environment value marked "keep" in the launcher is kept in the
/// store (the keyring, here a private file standing in for it), never in
/// the app's saved state, and is back in the recent entry after a restart.
#[test]
fn a_value_marked_to_keep_comes_back_after_a_restart() {
    use mcpscope_app::panels::launcher::EnvRow;
    use mcpscope_app::tokens::AppTokens;
    use mcpscope_core::config::token_store::TokenStore;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens.json");
    let mut h = harness(StartupArgs::default());
    h.state_mut().tokens = AppTokens::kept_in(TokenStore::open(&file).unwrap());
    h.state_mut().launcher.form.name = "keeper".into();
    // A server that answers: a launch goes into Recent once it has.
    h.state_mut().launcher.form.command = "python3".into();
    h.state_mut().launcher.form.args = format!("{} --mode normal", faulty_path());
    h.state_mut().launcher.form.env.push(EnvRow {
        key: "API_KEY".into(),
        value: "sk-live-kept".into(),
        ..EnvRow::default()
    });
    h.step();
    h.get_by_label("Environment (1)").click();
    h.step();
    h.step();
    h.get_by_label("keep").click();
    h.step();
    assert!(h.state().launcher.form.env[0].kept);
    h.get_by_label("▶ Launch").click();
    h.step();
    let deadline = Instant::now() + Duration::from_secs(10);
    while TokenStore::open(&file).unwrap().secret("launcher/keeper/env/API_KEY") != Some("sk-live-kept") {
        assert!(Instant::now() < deadline, "the value never reached the store");
        std::thread::sleep(Duration::from_millis(20));
    }
    step_until(&mut h, "the server answered and is in Recent", |app| {
        app.launcher.recent.iter().any(|r| r.name == "keeper")
    });
    let saved = h.state().saved_state();
    assert!(!serde_json::to_string(&saved).unwrap().contains("sk-live-kept"));
    drop(h);

    // The restart: the saved state and a store opened afresh.
    let mut h = harness(StartupArgs::default());
    h.state_mut().launcher.recent = saved;
    h.state_mut().tokens = AppTokens::kept_in(TokenStore::open(&file).unwrap());
    h.step();
    h.step();
    assert_eq!(h.state().launcher.recent[0].env[0].1, "sk-live-kept");
    h.get_by_label_contains("keeper — ").click();
    h.step();
    let form = &h.state().launcher.form;
    assert_eq!(form.env[0].value, "sk-live-kept");
    assert!(form.env[0].kept);
}

/// #33: tabs come back after a restart: the open capture with its filter
/// and selected row, the running server's tab with its recording and a
/// "Relaunch" offer (never started on its own), the same tab on screen;
/// Relaunch starts it.
#[test]
fn tabs_come_back_after_a_restart() {
    use mcpscope_app::restore::TabMemory;
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("c.jsonl");
    let out = std::process::Command::new(bin())
        .args(["call", "--method", "tools/list", "--capture"])
        .arg(&cap)
        .args(["--", "python3", &faulty_path(), "--mode", "tool-error"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let mut h = launch_everything();
    h.state_mut().open_capture(cap.clone());
    step_until(&mut h, "the capture loaded in a second tab", |app| {
        app.tabs.len() == 2 && app.session.inspection.as_ref().is_some_and(|i| !i.loading())
    });
    h.get_by_label_contains("result #2 (tools/list)").click();
    h.step();
    h.state_mut()
        .session
        .timeline
        .filter
        .set_text("method == \"tools/list\"");
    h.step();
    h.step();
    let selected_seq = {
        let app = h.state();
        let i = app.session.inspection.as_ref().unwrap();
        i.model.store.get(app.session.timeline.selected.unwrap()).unwrap().seq()
    };
    assert!(selected_seq.is_some());
    let saved = h.state().tab_memories();
    // As the app's state file keeps it.
    let saved: Vec<TabMemory> = serde_json::from_str(&serde_json::to_string(&saved).unwrap()).unwrap();
    assert_eq!(saved.len(), 2, "{saved:?}");
    assert!(saved[0].server.is_some() && saved[0].capture.is_some() && !saved[0].active);
    assert!(saved[1].server.is_none() && saved[1].capture.as_ref() == Some(&cap) && saved[1].active);
    drop(h);

    let mut h = harness_any_glyphs(StartupArgs::default());
    h.state_mut().restore_tabs(saved);
    step_until(&mut h, "the tabs back", |app| {
        !app.restoring_tabs() && app.session.inspection.as_ref().is_some_and(|i| !i.loading())
    });
    let app = h.state();
    assert_eq!(app.tabs.len(), 2);
    assert_eq!(app.active_tab, 1, "the capture's tab is on screen again");
    assert_eq!(app.session.timeline.filter.text, "method == \"tools/list\"");
    let i = app.session.inspection.as_ref().unwrap();
    let row = app.session.timeline.selected.expect("the selection is back");
    assert_eq!(i.model.store.get(row).unwrap().seq(), selected_seq);
    assert!(!i.model.running(), "nothing was started");
    assert!(!shows(&h, "when mcpscope closed"), "the capture's tab ran no server");

    // The server's tab: its recording, and the offer.
    h.state_mut().activate_tab(0);
    h.step();
    h.step();
    assert_eq!(h.state().active_tab, 0);
    assert!(!h.state().session.inspection.as_ref().unwrap().model.running());
    assert!(shows(&h, "when mcpscope closed"));
    h.get_by_label("Relaunch").click();
    h.step();
    step_until(&mut h, "the relaunched handshake", handshake_done);
    assert!(h.state().session.inspection.as_ref().unwrap().model.running());
    assert!(!shows(&h, "when mcpscope closed"), "the offer is gone once taken");
}
