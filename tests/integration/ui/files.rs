//! The File menu and captures: opening captures and exports, the in-app
//! picker, HAR export, large payloads, diffs, mock and verify.

use super::*;

#[test]
fn open_a_capture_offline() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("c.jsonl");
    let out = crate::support::mcpscope_command()
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
        app.session().inspection.as_ref().is_some_and(|i| !i.loading())
    });
    let app = h.state();
    let model = &app.session().inspection.as_ref().unwrap().model;
    assert!(!model.is_live());
    assert!(model.handshake.judged().is_some());
    // #14: a row clicked while the composer is shown brings its frame forward.
    h.state_mut().session_mut().right_tab = mcpscope_app::RightTab::Compose;
    h.step();
    h.get_by_label_contains("result #2 (tools/list)").click();
    h.step();
    h.step();
    assert_eq!(h.state().session().right_tab, mcpscope_app::RightTab::Frame);
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
    choose_in_picker(&mut h, &cap, "Open");
    step_until(&mut h, "the capture", |app| {
        app.session()
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
        app.session()
            .inspection
            .as_ref()
            .is_some_and(|i| !i.loading() && i.model.store.len() >= 2)
    });
    let i = h.state().session().inspection.as_ref().unwrap();
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
#[cfg(unix)]
fn export_as_har_from_the_file_menu() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("open.jsonl");
    std::fs::copy(repo().join("tests/captures/unanswered-request.jsonl"), &cap).unwrap();
    let mut h = harness(StartupArgs {
        open: Some(cap.clone()),
        ..StartupArgs::default()
    });
    step_until(&mut h, "the capture", |app| {
        app.session()
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
fn multi_megabyte_payload_opens_without_blocking_the_ui() {
    let mut h = harness(launching(&faulty("big-line")));
    step_until(&mut h, "the handshake", handshake_done);
    h.state_mut()
        .session_mut()
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
        let model = &app.session().inspection.as_ref().unwrap().model;
        model.store.iter().find(|r| r.raw().len() > 5_000_000).unwrap().index()
    };
    let started = Instant::now();
    h.get_by_label_contains("result #3").click();
    h.step();
    // The click returns at once: the parse runs on a worker while frames keep coming.
    assert!(started.elapsed() < Duration::from_secs(2));
    step_until(&mut h, "the parsed tree", |app| {
        app.session().detail.row() == Some(row) && !app.session().detail.busy()
    });
    assert!(shows(&h, "(5000000 chars)"), "the long string is shown shortened");
    assert!(
        shows(&h, "‼ oversize"),
        "over the 4 MB default limit, kept whole and flagged"
    );
    h.state_mut().session_mut().inspection = None;
}

#[test]
fn side_by_side_diff_of_two_captures() {
    let dir = tempfile::tempdir().unwrap();
    let capture = |mode: &str| {
        let cap = dir.path().join(format!("{mode}.jsonl"));
        let out = crate::support::mcpscope_command()
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

/// File → Mock this capture: the open capture is served by `mcpscope mock`
/// in a new tab, and the app gets the recorded answers from it.
#[test]
fn file_mock_this_capture_serves_it_in_a_new_tab() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("recorded.jsonl");
    let spec = faulty("normal");
    let out = crate::support::mcpscope_command()
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
        app.session()
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
    h.state_mut().session_mut().inspection = None;
}

/// File → Verify against server…: the open capture's requests go to a
/// server from the launcher; what changed is listed, breaking first, and the
/// two sessions open side by side.
#[test]
fn file_verify_against_server_lists_the_changes_and_opens_the_diff() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("baseline.jsonl");
    let spec = py_server();
    let out = crate::support::mcpscope_command()
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
    let drifted = mcpscope_app::saved_server::SavedServer {
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
    h.state_mut().session_mut().inspection = None;
}
