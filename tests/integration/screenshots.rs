//! Regenerates screenshots/*.png from the real app, rendered on the CPU by
//! wgpu (lavapipe or llvmpipe). Run by `scripts/screenshots`; ignored in the
//! normal test run because it needs a Vulkan or GL driver.

use crate::support::*;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable as _;
use mcpscope_app::saved_server::SavedServer;
use mcpscope_app::{McpscopeApp, StartupArgs};
use std::time::Duration;

fn harness(args: StartupArgs) -> Harness<'static, McpscopeApp> {
    Harness::builder()
        .with_size([1440.0, 900.0])
        .allow_missing_glyphs()
        .wgpu()
        .build_eframe(move |cc| McpscopeApp::new(cc, args))
}

fn save(h: &mut Harness<'static, McpscopeApp>, name: &str) {
    let image = h
        .render()
        .expect("rendering the app (is mesa-vulkan-drivers installed?)");
    let path = repo().join("screenshots").join(format!("{name}.png"));
    image.save(&path).unwrap();
    eprintln!("wrote {}", path.display());
}

fn rows_with(app: &McpscopeApp, text: &str) -> Option<usize> {
    let model = &app.session().inspection.as_ref()?.model;
    model
        .store
        .iter()
        .find(|r| mcpscope_app::panels::timeline::row_label(&model.store, r).contains(text))
        .map(|r| r.index())
}

#[test]
#[ignore = "writes screenshots/; run scripts/screenshots"]
fn regenerate_screenshots() {
    std::fs::create_dir_all(repo().join("screenshots")).unwrap();

    // 1. The launcher, with recent servers and an imported config.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("claude_desktop_config.json");
    std::fs::write(
        &config,
        serde_json::json!({"mcpServers": {
            "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"]},
            "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"], "env": {"API_KEY": "sk-123"}},
            "remote-search": {"type": "http", "url": "https://mcp.example.com/mcp"}
        }})
        .to_string(),
    )
    .unwrap();
    let mut h = harness(StartupArgs::default());
    h.state_mut().import_config(&config);
    step_until(&mut h, "the config read", |app| !app.importing());
    h.state_mut().launcher.recent = vec![
        SavedServer {
            name: "notes".into(),
            program: "uv".into(),
            args: vec!["run".into(), "notes-server".into()],
            ..SavedServer::default()
        },
        SavedServer {
            name: "everything".into(),
            program: "node".into(),
            args: vec!["dist/index.js".into(), "stdio".into()],
            ..SavedServer::default()
        },
    ];
    let everything_saved = h.state().launcher.imported.as_ref().unwrap().1[1]
        .saved
        .clone()
        .unwrap();
    h.state_mut().launcher.form = mcpscope_app::panels::launcher::LaunchForm::from_saved(&everything_saved);
    h.step();
    h.step();
    save(&mut h, "launcher");

    // 2. A handshake timeline against the reference server, initialize result selected.
    let spec = everything();
    let mut launch = vec![spec.program.clone()];
    launch.extend(spec.args.clone());
    let mut h = harness(StartupArgs {
        launch,
        ..StartupArgs::default()
    });
    step_until(&mut h, "tools/list", |app| {
        rows_with(app, "result #2 (tools/list)").is_some()
    });
    std::thread::sleep(Duration::from_millis(500));
    for _ in 0..10 {
        h.step();
    }
    let init = rows_with(h.state(), "result #1 (initialize)").unwrap();
    h.state_mut().session_mut().timeline.select(init);
    {
        let view = h.state_mut().session_mut();
        let model = &view.inspection.as_ref().unwrap().model;
        view.detail.show_row(model, Some(init));
    }
    for _ in 0..4 {
        h.step();
    }
    save(&mut h, "handshake-timeline");

    // 3. A frame's JSON tree: the tools/list result, expanded.
    let list = rows_with(h.state(), "result #2 (tools/list)").unwrap();
    h.state_mut().session_mut().timeline.select(list);
    {
        let view = h.state_mut().session_mut();
        let model = &view.inspection.as_ref().unwrap().model;
        view.detail.show_row(model, Some(list));
        view.detail.tree.expand_all();
    }
    for _ in 0..4 {
        h.step();
    }
    save(&mut h, "json-tree");
    h.state_mut().session_mut().inspection = None;

    // 4. A faulty server's log line on stdout.
    let faulty = faulty("stdout-log");
    let mut launch = vec![faulty.program.clone()];
    launch.extend(faulty.args.clone());
    let mut h = harness(StartupArgs {
        launch,
        ..StartupArgs::default()
    });
    step_until(&mut h, "tools/list", |app| {
        rows_with(app, "result #2 (tools/list)").is_some()
    });
    let bad = rows_with(h.state(), "NOT JSON").unwrap();
    h.state_mut().session_mut().timeline.select(bad);
    {
        let view = h.state_mut().session_mut();
        let model = &view.inspection.as_ref().unwrap().model;
        view.detail.show_row(model, Some(bad));
    }
    for _ in 0..4 {
        h.step();
    }
    assert!(h.query_all_by_label_contains("not-json").next().is_some());
    save(&mut h, "faulty-stdout-line");
    h.state_mut().session_mut().inspection = None;

    // 5. The Expert panel on the same faulty session: the finding selected, its frame marked.
    let mut h = harness(StartupArgs {
        launch: {
            let f = crate::support::faulty("stdout-log");
            let mut l = vec![f.program.clone()];
            l.extend(f.args.clone());
            l
        },
        ..StartupArgs::default()
    });
    step_until(&mut h, "lint findings", |app| {
        app.session()
            .expert
            .findings
            .iter()
            .any(|f| f.finding.rule == mcpscope_core::analysis::lint::rule::NOT_JSON)
    });
    h.state_mut().bottom_tab = mcpscope_app::BottomTab::Expert;
    let pos = h
        .state()
        .session()
        .expert
        .findings
        .iter()
        .position(|f| f.finding.rule == mcpscope_core::analysis::lint::rule::NOT_JSON)
        .unwrap();
    if let Some(mcpscope_app::panels::expert::ExpertAction::SelectRows(rows)) =
        h.state_mut().session_mut().expert.select(pos)
    {
        let view = h.state_mut().session_mut();
        view.timeline.select(rows[0]);
        view.timeline.highlighted = rows.clone();
        let model = &view.inspection.as_ref().unwrap().model;
        view.detail.show_row(model, Some(rows[0]));
    }
    for _ in 0..6 {
        h.step();
    }
    save(&mut h, "expert-panel");
    h.state_mut().session_mut().inspection = None;

    // 6. The composer: a zod schema with nested objects, enums and unions as a form, and its answer.
    let zod = node_zod_server();
    let mut launch = vec![zod.program.clone()];
    launch.extend(zod.args.clone());
    let mut h = harness(StartupArgs {
        launch,
        ..StartupArgs::default()
    });
    step_until(&mut h, "the tools", |app| {
        app.session().composer.lists.tools.iter().any(|t| t.name == "schedule")
    });
    h.state_mut().session_mut().right_tab = mcpscope_app::RightTab::Compose;
    h.state_mut().session_mut().composer.choose_tool("schedule");
    if let Some(form) = &mut h.state_mut().session_mut().composer.tool.form {
        form.fill_sample();
    }
    h.state_mut().session_mut().composer.tool.form_changed();
    for _ in 0..4 {
        h.step();
    }
    save(&mut h, "composer-form");
    h.state_mut().session_mut().inspection = None;

    // 7. The side-by-side diff of the same call against the Node and Python SDK servers.
    let dir = tempfile::tempdir().unwrap();
    let capture = |name: &str, spec: mcpscope_core::transport::process::ServerSpec| {
        let cap = dir.path().join(format!("{name}.jsonl"));
        let out = crate::support::mcpscope_command()
            .args([
                "call",
                "--tool-name",
                "add",
                "--tool-arg",
                "a=2",
                "--tool-arg",
                "b=3",
                "--capture",
            ])
            .arg(&cap)
            .arg("--")
            .arg(&spec.program)
            .args(&spec.args)
            .output()
            .unwrap();
        assert!(out.status.code().is_some());
        cap
    };
    let a = capture("node", node_zod_server());
    let b = capture("python", py_server());
    let mut h = harness(StartupArgs {
        diff: Some((a, b)),
        ..StartupArgs::default()
    });
    step_until(&mut h, "the comparison", |app| {
        app.diff.result.is_some() || app.diff.error.is_some()
    });
    save(&mut h, "session-diff");
}

/// The app following a proxied session of the reference server while its
/// client (here the test) talks, next to a session a TypeScript SDK client ran.
#[test]
#[ignore = "writes screenshots/; run scripts/screenshots"]
fn live_session_screenshot() {
    use crate::live_app::{Proxied, open_listed};
    let home = tempfile::tempdir().unwrap();
    let xdg = home.path().join(".local/state");
    // An ended session: the TypeScript SDK client through the proxy.
    let ts = std::process::Command::new("node")
        .arg(repo().join("tests/clients/ts_client.mjs"))
        .arg("stdio")
        .arg(bin())
        .args(["proxy", "--session", "ts-sdk-run", "--"])
        .arg(&everything().program)
        .args(&everything().args)
        .env("XDG_STATE_HOME", &xdg)
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert!(ts.status.success(), "{ts:?}");
    // A running one, driven by the test.
    let mut proxied = Proxied::start_in(home, "everything", &everything());
    proxied.wait_listed();
    let mut h = harness(StartupArgs::default());
    open_listed(&mut h, &proxied.sessions.clone(), "everything");
    proxied.say(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"example-client","version":"1.0"}}}"#,
    );
    step_until(&mut h, "the initialize result", |app| {
        rows_with(app, "result #1 (initialize)").is_some()
    });
    proxied.say(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    proxied.say(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    step_until(&mut h, "the tools", |app| {
        rows_with(app, "result #2 (tools/list)").is_some()
    });
    proxied.say(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello from the client"}}}"#);
    proxied.say(r#"{"jsonrpc":"2.0","id":4,"method":"prompts/list"}"#);
    step_until(&mut h, "the client's calls", |app| {
        rows_with(app, "result #3 (tools/call)").is_some() && rows_with(app, "#4 (prompts/list)").is_some()
    });
    step_until(&mut h, "both sessions listed", |app| {
        app.live.sessions.len() == 2 && app.live.sessions.iter().all(|s| s.record.client.is_some())
    });
    let call = rows_with(h.state(), "result #3 (tools/call)").unwrap();
    h.state_mut().session_mut().timeline.select(call);
    {
        let view = h.state_mut().session_mut();
        let model = &view.inspection.as_ref().unwrap().model;
        view.detail.show_row(model, Some(call));
        view.detail.tree.expand_all();
    }
    for _ in 0..6 {
        h.step();
    }
    save(&mut h, "live-session");
    proxied.hang_up();
}

#[test]
#[ignore = "writes screenshots/; run scripts/screenshots"]
fn skills_mode_screenshot() {
    use mcpscope_core::protocol::skills::FileState;
    let server = repo().join("tests/servers/skills_server.py").display().to_string();
    let mut h = harness(StartupArgs {
        launch: vec!["python3".into(), server],
        ..StartupArgs::default()
    });
    step_until(&mut h, "the handshake", |app| {
        app.session()
            .inspection
            .as_ref()
            .is_some_and(|i| i.model.handshake.initialized_row.is_some())
    });
    h.state_mut().session_mut().right_tab = mcpscope_app::RightTab::Compose;
    h.state_mut().session_mut().composer.mode = mcpscope_app::composer::Mode::Skills;
    step_until(&mut h, "skills/list", |app| {
        app.session().composer.lists.skills.len() == 2
    });
    h.step();
    h.get_by_label_contains("pdf-processing  ").click();
    h.step();
    let state = |app: &McpscopeApp, path: &str| {
        app.session()
            .composer
            .skills
            .load
            .as_ref()
            .and_then(|l| l.state(path).cloned())
    };
    for path in ["SKILL.md", "references/FORMS.md"] {
        h.step();
        h.query_all_by_label("Read").next().unwrap().click();
        step_until(&mut h, path, |app| {
            matches!(state(app, path), Some(FileState::Verified(_)))
        });
    }
    // Show SKILL.md's text.
    h.get_by_label("SKILL.md").click();
    for _ in 0..4 {
        h.step();
    }
    std::thread::sleep(Duration::from_millis(100));
    h.step();
    save(&mut h, "skills-mode");
    h.state_mut().session_mut().inspection = None;
}

#[test]
#[ignore = "writes screenshots/; run scripts/screenshots"]
fn display_filter_screenshot() {
    // Three sessions of server-everything in one capture: a listing, a tool call, a refused prompt.
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("everything.jsonl");
    let spec = everything();
    for args in [
        vec!["call", "--method", "tools/list"],
        vec!["call", "--tool-name", "echo", "--tool-arg", "message=hello filter"],
        vec![
            "call",
            "--method",
            "prompts/get",
            "--params",
            r#"{"name":"no-such-prompt"}"#,
        ],
    ] {
        let mut call: Vec<&str> = args;
        call.extend(["--capture", cap.to_str().unwrap(), "--", &spec.program]);
        call.extend(spec.args.iter().map(String::as_str));
        crate::support::mcpscope_command().args(&call).output().unwrap();
    }
    let mut h = harness(StartupArgs {
        open: Some(cap),
        ..StartupArgs::default()
    });
    step_until(&mut h, "the capture loaded", |app| {
        app.session()
            .inspection
            .as_ref()
            .is_some_and(|i| i.model.store.len() > 20)
    });
    h.state_mut()
        .session_mut()
        .timeline
        .filter
        .set_text(r#"method == "tools/call" or request.method in {"tools/call", "prompts/get"} or kind == "error""#);
    step_until(&mut h, "the filter applied", |app| {
        app.session().timeline.index.progress().is_none() && app.session().timeline.index.len() < 10
    });
    if let Some(row) = rows_with(h.state(), "tools/call #") {
        h.state_mut().session_mut().timeline.select(row);
        let view = h.state_mut().session_mut();
        let model = &view.inspection.as_ref().unwrap().model;
        view.detail.show_row(model, Some(row));
    }
    for _ in 0..4 {
        h.step();
    }
    save(&mut h, "display-filter");
}
