//! The launcher: servers started from the form, a config file or the
//! command line, remote servers, and Restart with the launcher's edits.

use super::*;

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
    let selected = app.session().timeline.selected.expect("a selected row");
    let model = &app.session().inspection.as_ref().unwrap().model;
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
    assert_eq!(h.state().session().timeline.selected, Some(selected + 1));
    h.state_mut().session_mut().inspection = None;
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
    h.state_mut().session_mut().inspection = None;
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
    h.state_mut().session_mut().inspection = None;

    // A broken file gets a message that names the problem.
    let bad = dir.path().join("broken.json");
    std::fs::write(&bad, "{\"mcpServers\": {\"x\": {\"command\": \"a\"\n").unwrap();
    h.state_mut().import_config(&bad);
    step_until(&mut h, "the config read", |app| !app.importing());
    let (_, msg) = h.state().message.clone().unwrap();
    assert!(msg.contains("not valid JSON at line 2"), "{msg}");
}

/// A client's config where its system keeps it is one click away: the
/// launcher offers a button for each one found.
#[test]
fn a_clients_config_found_here_is_imported_with_one_click() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("claude_desktop_config.json");
    std::fs::write(
        &path,
        serde_json::json!({"mcpServers": {"found-here": {"command": "python3", "args": [faulty_path()]}}}).to_string(),
    )
    .unwrap();
    let mut h = harness(StartupArgs::default());
    h.state_mut().launcher.client_configs = Some(vec![(
        mcpscope_core::platform::dirs::Client::ClaudeDesktop,
        path.clone(),
    )]);
    h.step();
    h.get_by_label("Claude Desktop").click();
    h.step();
    step_until(&mut h, "the config read", |app| !app.importing());
    assert_eq!(
        h.state().launcher.imported.as_ref().map(|(p, _, _)| p.clone()),
        Some(path)
    );
    assert!(shows(&h, "found-here"));
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
    h.state_mut().session_mut().inspection = None;

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
    assert!(h.state().session().ping.is_some(), "the ping was sent");
    step_until(&mut h, "the ping answer", |app| {
        let (Some(id), Some(i)) = (&app.session().ping, &app.session().inspection) else {
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
        let c = &mut h.state_mut().session_mut().composer;
        c.tool.args_text = r#"{"duration": 8, "steps": 8}"#.into();
        c.tool.args_text_changed();
    }
    h.step();
    h.get_by_label("Send tools/call").click_accesskit();
    step_until(&mut h, "progress for our token", |app| {
        let Some(p) = &app.session().composer.result.pending else {
            return false;
        };
        let model = &app.session().inspection.as_ref().unwrap().model;
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
    h.state_mut().session_mut().composer.log_level = "debug".into();
    h.get_by_label("Send logging/setLevel").click_accesskit();
    step_until(&mut h, "setLevel answered", |app| answer_text(app).is_some());
    h.get_by_label("Tool").click();
    h.step();
    choose_tool(&mut h, "toggle-simulated-logging", "Toggle Simulated Logging");
    h.get_by_label("Send tools/call").click_accesskit();
    step_until(&mut h, "a log message", |app| {
        app.session()
            .inspection
            .as_ref()
            .is_some_and(|i| !i.model.log_rows.is_empty())
    });
    h.get_by_label_contains("Log (").click();
    h.step();
    h.step();
    assert_eq!(
        h.state().session().log.lines().len(),
        h.state().session().inspection.as_ref().unwrap().model.log_rows.len()
    );
    assert!(shows(&h, "everything-server"), "the logger name is shown");

    // Statistics: response times per method.
    h.get_by_label("Statistics").click();
    h.state_mut().session_mut().stats.tab = mcpscope_app::panels::stats_view::StatsTab::ResponseTimes;
    step_until(&mut h, "the ping's response time", |app| {
        app.session()
            .stats
            .report
            .as_ref()
            .is_some_and(|r| r.srt.iter().any(|s| s.method == "ping" && s.answered == 1))
    });
    assert!(shows(&h, "tools/call"));
    h.state_mut().session_mut().inspection = None;
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
    let env = match app.session().inspection.as_ref().and_then(|i| i.target()) {
        Some(mcpscope_core::transport::target::Target::Stdio(spec)) => spec.env.clone(),
        other => panic!("{other:?}"),
    };
    assert!(
        env.iter().any(|(k, v)| k == "MCPSCOPE_RESTART_EDIT" && v == "1"),
        "{env:?}"
    );
    assert_eq!(
        app.session().composer.tool.name.as_deref(),
        Some("echo"),
        "the tool chosen stays"
    );
    assert_eq!(app.session().composer.mode, mcpscope_app::composer::Mode::Tool);
    assert!(
        shows(&h, "restarted with the launcher's edits"),
        "the status bar says so"
    );
    h.state_mut().session_mut().inspection = None;
}
