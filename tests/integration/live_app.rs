//! The app watching real clients (#13): a session `mcpscope proxy --session`
//! records while a client drives it grows in the app as it happens, and
//! several sessions (launched, proxied, opened) are open at once as tabs.

use crate::support::*;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable as _;
use mcpscope_app::{McpscopeApp, StartupArgs};
use mcpscope_core::sessions::index::{SessionState, list_sessions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::time::{Duration, Instant};

/// A session `mcpscope proxy --session` records under a private state home,
/// with the test as its client.
pub struct Proxied {
    child: Child,
    stdin: Option<ChildStdin>,
    pub sessions: PathBuf,
    _home: tempfile::TempDir,
}

impl Proxied {
    /// The faulty server in normal mode.
    pub fn start(name: &str) -> Proxied {
        Self::start_in(tempfile::tempdir().unwrap(), name, &faulty("normal"))
    }

    /// `server` through the proxy, recorded under `home`.
    pub fn start_in(
        home: tempfile::TempDir,
        name: &str,
        server: &mcpscope_core::transport::process::ServerSpec,
    ) -> Proxied {
        let xdg = home.path().join(".local/state");
        let mut child = crate::support::mcpscope_command()
            .env("XDG_STATE_HOME", &xdg)
            .env("HOME", home.path())
            .args(["proxy", "--session", name, "--", &server.program])
            .args(&server.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        Proxied {
            child,
            stdin,
            sessions: xdg.join("mcpscope/sessions"),
            _home: home,
        }
    }

    /// What the client says, one JSON-RPC message per line.
    pub fn say(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("the client is still talking");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The client quits: the proxy shuts the server down and ends the session.
    pub fn hang_up(&mut self) {
        self.stdin = None;
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "the proxy did not end");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn wait_listed(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !list_sessions(&self.sessions)
            .map(|l| l.sessions.iter().any(|s| s.state == SessionState::Running))
            .unwrap_or(false)
        {
            assert!(Instant::now() < deadline, "the session was not listed");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Proxied {
    fn drop(&mut self) {
        self.stdin = None;
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn harness() -> Harness<'static, McpscopeApp> {
    Harness::builder()
        .with_size([1440.0, 900.0])
        .build_eframe(|cc| McpscopeApp::new(cc, StartupArgs::default()))
}

fn rows(app: &McpscopeApp) -> Vec<String> {
    app.session().inspection.as_ref().map_or_else(Vec::new, |i| {
        i.model
            .store
            .iter()
            .map(|r| mcpscope_app::panels::timeline::row_label(&i.model.store, &r))
            .collect()
    })
}

fn has_row(app: &McpscopeApp, start: &str) -> bool {
    rows(app).iter().any(|l| l.starts_with(start))
}

fn shows(h: &Harness<'static, McpscopeApp>, text: &str) -> bool {
    h.query_all_by_label_contains(text).next().is_some()
}

/// Opens the session listed in the Live sessions panel of `dir`.
pub fn open_listed(h: &mut Harness<'static, McpscopeApp>, dir: &Path, name: &str) {
    h.state_mut().live.watch(vec![dir.to_owned()]);
    step_until(h, "the session in the list", |app| {
        app.live.sessions.iter().any(|s| s.record.name == name)
    });
    h.get_by_label("Open live").click();
    step_until(h, "a tab following the session", |app| {
        app.session()
            .inspection
            .as_ref()
            .is_some_and(|i| i.followed().is_some())
    });
}

#[test]
fn a_proxied_session_grows_in_the_app_while_its_client_talks() {
    let mut proxied = Proxied::start("watched");
    proxied.wait_listed();
    let mut h = harness();
    open_listed(&mut h, &proxied.sessions.clone(), "watched");
    assert!(shows(&h, "Live sessions (1 running)"));
    assert!(shows(&h, "watched (following)"), "the tab says it follows the session");
    assert!(shows(&h, "Stop"), "a running session can be stopped");

    // The client's handshake appears while the session runs.
    proxied.say(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"kittest-client","version":"7.1"}}}"#,
    );
    proxied.say(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    step_until(&mut h, "the handshake", |app| has_row(app, "result #1 (initialize)"));
    step_until(&mut h, "the client's name in the list", |app| {
        app.live
            .sessions
            .iter()
            .any(|s| s.record.client.as_ref().is_some_and(|c| c.name == "kittest-client"))
    });
    assert!(shows(&h, "client: kittest-client 7.1"));
    let after_handshake = rows(h.state()).len();
    assert!(h.state().session().inspection.as_ref().unwrap().is_following());

    // More traffic: the same tab grows (nothing re-read, nothing lost).
    proxied.say(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    proxied.say(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"seen live"}}}"#);
    proxied.say("this line is not JSON");
    step_until(&mut h, "tools/list and tools/call answered", |app| {
        has_row(app, "result #2 (tools/list)") && has_row(app, "result #3 (tools/call)")
    });
    let labels = rows(h.state());
    assert!(labels.len() > after_handshake + 4, "{labels:#?}");
    let initialize_rows = labels
        .iter()
        .filter(|l| l.starts_with("result #1 (initialize)"))
        .count();
    assert_eq!(
        initialize_rows, 1,
        "the capture was not read again from the start: {labels:#?}"
    );

    // The JSON tree shows the answer the client got.
    h.get_by_label_contains("result #3 (tools/call)").click();
    h.step();
    h.step();
    assert!(shows(&h, "seen live"), "the tools/call result in the tree");

    // Latency per method, and the Expert findings of the new rows.
    let latency = h.state().session().inspection.as_ref().unwrap().model.latency_summary();
    assert!(latency.iter().any(|l| l.method == "tools/call"), "{latency:?}");
    h.get_by_label("Statistics").click();
    h.state_mut().session_mut().stats.tab = mcpscope_app::panels::stats_view::StatsTab::ResponseTimes;
    step_until(&mut h, "tools/call's response time", |app| {
        app.session()
            .stats
            .report
            .as_ref()
            .is_some_and(|r| r.srt.iter().any(|s| s.method == "tools/call" && s.answered > 0))
    });
    assert!(shows(&h, "tools/call"));
    step_until(&mut h, "an Expert finding about the line that is not JSON", |app| {
        app.session()
            .expert
            .findings
            .iter()
            .any(|f| f.finding.rule == "not-json")
    });

    // The client quits: the session ends and stays open as an offline capture.
    proxied.hang_up();
    step_until(&mut h, "the end of the session", |app| {
        app.session()
            .inspection
            .as_ref()
            .is_some_and(|i| !i.is_following() && i.model.closed)
    });
    step_until(&mut h, "the list to say it ended", |app| {
        app.live.sessions.iter().all(|s| !s.state.is_running())
    });
    assert!(shows(&h, "offline capture"));
    assert!(shows(&h, "Remove"), "an ended session can be removed");
    assert!(!shows(&h, "watched (following)"));
    let followed = rows(h.state());
    let loaded = mcpscope_core::record::capture::load(
        &h.state()
            .session()
            .inspection
            .as_ref()
            .unwrap()
            .capture_path
            .clone()
            .unwrap(),
    )
    .unwrap();
    let model = mcpscope_core::timeline::model::SessionModel::from_capture(PathBuf::from("x"), &loaded);
    assert_eq!(
        followed.len(),
        model.store.len(),
        "followed rows == the whole capture loaded at once"
    );
}

#[test]
fn three_sessions_open_as_tabs_and_two_compared() {
    // A capture on disk.
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("opened.jsonl");
    let out = crate::support::mcpscope_command()
        .args(["call", "--method", "tools/list", "--capture"])
        .arg(&cap)
        .args(["--", "python3", &faulty_path(), "--mode", "tool-error"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");

    // 1: a server launched from the app.
    let mut h = Harness::builder()
        .with_size([1440.0, 900.0])
        .build_eframe(|cc| McpscopeApp::new(cc, launching(&faulty("normal"))));
    step_until(&mut h, "the launched server's handshake", |app| {
        has_row(app, "result #1 (initialize)")
    });
    assert_eq!(h.state().tabs.len(), 1);

    // 2: a proxied session, followed live.
    let mut proxied = Proxied::start("proxied-one");
    proxied.wait_listed();
    proxied.say(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#);
    open_listed(&mut h, &proxied.sessions.clone(), "proxied-one");
    step_until(&mut h, "the proxied tools/list", |app| {
        has_row(app, "result #7 (tools/list)")
    });
    assert_eq!(h.state().tabs.len(), 2, "the launched session kept its tab");

    // 3: a capture opened from disk.
    h.state_mut().open_capture(cap.clone());
    step_until(&mut h, "the opened capture", |app| {
        app.tabs.len() == 3 && has_row(app, "result #2 (tools/list)")
    });
    assert_eq!(h.state().active_tab, 2);
    for label in ["(running)", "proxied-one (following)", "opened.jsonl"] {
        assert!(shows(&h, label), "a tab labelled {label}");
    }

    // Each tab keeps its own session and selection.
    h.get_by_label_contains("result #2 (tools/list)").click();
    h.step();
    let selected_in_capture = h.state().session().timeline.selected;
    assert!(selected_in_capture.is_some());
    h.get_by_label("proxied-one (following)").click();
    h.step();
    h.step();
    assert_eq!(h.state().active_tab, 1);
    assert!(has_row(h.state(), "result #7 (tools/list)"));
    assert!(!has_row(h.state(), "result #2 (tools/list)"));
    // The proxied session goes on growing on its tab, and the launched one
    // keeps running in the background.
    proxied.say(r#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#);
    step_until(&mut h, "the proxied ping", |app| {
        has_row(app, "error #8") || has_row(app, "result #8")
    });
    h.get_by_label_contains("(running)").click();
    h.step();
    h.step();
    assert_eq!(h.state().active_tab, 0);
    assert!(h.state().session().inspection.as_ref().unwrap().model.running());
    h.get_by_label("opened.jsonl").click();
    h.step();
    h.step();
    assert_eq!(
        h.state().session().timeline.selected,
        selected_in_capture,
        "its selection was kept"
    );

    // Compare the opened capture with the launched session, side by side.
    h.get_by_label("Compare with…").click();
    h.step();
    h.step();
    h.get_by_label("with python3 (running)").click();
    step_until(&mut h, "the comparison", |app| {
        app.diff.result.is_some() || app.diff.error.is_some()
    });
    let diff = &h.state().diff;
    assert!(diff.error.is_none(), "{:?}", diff.error);
    assert_eq!(diff.a.as_deref(), Some(cap.as_path()));
    assert_ne!(diff.b.as_deref(), Some(cap.as_path()));

    // Closing a tab ends its session; the others stay.
    h.state_mut().close_tab(0);
    h.step();
    assert_eq!(h.state().tabs.len(), 2);
    assert!(shows(&h, "proxied-one (following)"));

    // Stop from the app ends the proxied session; its tab stays, offline.
    h.state_mut().diff.open = false;
    h.step();
    h.get_by_label("proxied-one (following)").click();
    h.step();
    h.step();
    assert!(h.state().session().inspection.as_ref().unwrap().is_following());
    h.get_by_label("Stop").click();
    step_until(&mut h, "the stopped session", |app| {
        app.live.sessions.iter().all(|s| !s.state.is_running())
            && app.session().inspection.as_ref().is_some_and(|i| !i.is_following())
    });
    assert!(shows(&h, "offline capture"));
    assert!(h.state().tabs.len() == 2 && shows(&h, "proxied-one"));
}

/// Presses Unwrap in the open "Watch in your client" window and waits for
/// an outcome other than `before`.
fn unwrap_in_the_window(
    h: &mut Harness<'static, McpscopeApp>,
    before: &mcpscope_app::panels::watch_client::Outcome,
) -> mcpscope_app::panels::watch_client::Outcome {
    h.get_by_label("Unwrap them").click();
    step_until(h, "the unwrap", |app| {
        app.watch_client
            .as_ref()
            .and_then(|w| w.outcome.as_ref())
            .is_some_and(|o| o != before)
    });
    h.state().watch_client.as_ref().unwrap().outcome.clone().unwrap()
}

/// The app with `config` imported and the "Watch in your client" window open.
fn watch_dialog_for(config: &Path) -> Harness<'static, McpscopeApp> {
    let mut h = harness();
    h.state_mut().import_config(config);
    step_until(&mut h, "the config read", |app| !app.importing());
    h.get_by_label("Watch in your client…").click();
    // A new window is laid out once before it shows.
    for _ in 0..4 {
        h.step();
    }
    h
}

#[test]
fn watch_in_your_client_wraps_the_imported_config_after_asking() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("claude_desktop_config.json");
    let original = serde_json::to_string_pretty(&serde_json::json!({"mcpServers": {
        "faulty": {"command": "python3", "args": [faulty_path(), "--mode", "normal"]},
        "other": {"command": "python3", "args": ["other.py"]}
    }}))
    .unwrap();
    std::fs::write(&config, &original).unwrap();
    let mut h = watch_dialog_for(&config);
    // It asks first, and says where the backup goes.
    let backup = format!("{}.mcpscope-backup", config.display());
    // The app is the mcpscope binary; this test is not: name the real one.
    h.state_mut()
        .watch_client
        .as_mut()
        .expect("the confirmation is open")
        .mcpscope = Some(bin().display().to_string());
    assert!(shows(&h, &backup), "the backup path is shown");
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        original,
        "nothing written yet"
    );
    h.get_by_role_and_label(egui::accesskit::Role::CheckBox, "other")
        .click();
    h.step();
    h.get_by_label("Wrap the chosen servers").click();
    step_until(&mut h, "the wrap", |app| {
        app.watch_client.as_ref().is_some_and(|w| w.outcome.is_some())
    });
    let outcome = h.state().watch_client.as_ref().unwrap().outcome.clone().unwrap();
    assert!(outcome.ok, "{:?}", outcome.lines);
    let wrapped = std::fs::read_to_string(&config).unwrap();
    let json: serde_json::Value = serde_json::from_str(&wrapped).unwrap();
    let faulty = &json["mcpServers"]["faulty"];
    assert_eq!(faulty["args"][0], "proxy");
    assert_eq!(faulty["args"][2], "faulty");
    assert_eq!(
        faulty["command"],
        bin().display().to_string(),
        "mcpscope by its absolute path"
    );
    assert_eq!(
        json["mcpServers"]["other"]["args"],
        serde_json::json!(["other.py"]),
        "unchosen: untouched"
    );
    assert_eq!(std::fs::read_to_string(&backup).unwrap(), original);
    assert!(shows(&h, "faulty: wrapped"));
    // Unwrap puts the file back exactly.
    let undone = unwrap_in_the_window(&mut h, &outcome);
    assert!(undone.lines.iter().any(|l| l == "faulty: restored"), "{undone:?}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), original);
    h.get_by_label("Close").click();
    h.step();
    assert!(h.state().watch_client.is_none());
}

/// #33: a remote entry wrapped from the app gets its reverse proxy from the
/// app itself: the client's new URL answers at once (a real call through it
/// reaches server-everything), and unwrapping restores the URL and stops it.
#[test]
fn watch_in_your_client_runs_the_reverse_proxy_of_a_remote_entry() {
    let server = crate::http::HttpServer::start("streamableHttp");
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join(".mcp.json");
    let original = serde_json::to_string_pretty(&serde_json::json!({"mcpServers": {
        "remote-everything": {"type": "http", "url": server.url("/mcp")}
    }}))
    .unwrap();
    std::fs::write(&config, &original).unwrap();
    let mut h = watch_dialog_for(&config);
    h.state_mut().watch_client.as_mut().unwrap().mcpscope = Some(bin().display().to_string());
    // Its sessions go to a directory of the test's, not the user's.
    let sessions = dir.path().join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    h.state_mut().remote_proxies.sessions_dir = Some(sessions.clone());
    h.get_by_label("Wrap the chosen servers").click();
    step_until(&mut h, "the wrap", |app| {
        app.watch_client.as_ref().is_some_and(|w| w.outcome.is_some())
    });
    let outcome = h.state().watch_client.as_ref().unwrap().outcome.clone().unwrap();
    assert!(outcome.ok, "{:?}", outcome.lines);
    assert!(
        outcome
            .lines
            .iter()
            .any(|l| l.contains("reverse proxy on http://127.0.0.1:")),
        "{:?}",
        outcome.lines
    );
    let wrapped: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    let local = wrapped["mcpServers"]["remote-everything"]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(local.starts_with("http://127.0.0.1:"), "{local}");
    assert_eq!(h.state().remote_proxies.listening().len(), 1);
    // What the client will do: call the server at its new URL.
    let call = |url: &str| {
        crate::support::mcpscope_command()
            .args([
                "call",
                "--server-url",
                url,
                "--tool-name",
                "echo",
                "--tool-arg",
                "message=via the app",
            ])
            .args(["--timeout-ms", "10000"])
            .output()
            .unwrap()
    };
    let out = call(&local);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("via the app"));
    // Recorded under the entry's name, where Live sessions lists it.
    let recorded: Vec<String> = std::fs::read_dir(&sessions)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        recorded
            .iter()
            .any(|n| n.contains("remote-everything") && n.ends_with(".jsonl")),
        "{recorded:?}"
    );

    let undone = unwrap_in_the_window(&mut h, &outcome);
    assert!(
        undone.lines.iter().any(|l| l.contains("reverse proxy stopped")),
        "{:?}",
        undone.lines
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), original);
    assert!(h.state().remote_proxies.listening().is_empty());
    assert!(!call(&local).status.success(), "nothing listens there any more");
}
