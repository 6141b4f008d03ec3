//! The app attached to a proxy's held-frame queue: a proxied session
//! (`--session` with a breakpoint) opened from the Live sessions panel.

use super::*;
use crate::live_app::open_listed;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable as _;
use mcpscope_app::McpscopeApp;

struct Session {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: crossbeam_channel::Receiver<String>,
    sessions: PathBuf,
    _home: Home,
}

impl Session {
    fn start(extra: &[&str]) -> Session {
        let home = Home::new();
        let mut c = crate::support::mcpscope_command();
        c.args(["proxy", "--session", "held"]).args(extra).arg("--");
        let server = py_server();
        c.arg(&server.program).args(&server.args);
        home.apply(&mut c);
        c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
        let mut child = c.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = crossbeam_channel::unbounded();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut s = Session {
            stdin: child.stdin.take(),
            child,
            lines: rx,
            sessions: home.0.path().join(".local/state/mcpscope/sessions"),
            _home: home,
        };
        s.say(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"kittest","version":"1"}}}"#);
        assert!(s.next().contains("serverInfo"));
        s.say(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        s
    }

    fn say(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn next(&self) -> String {
        self.lines.recv_timeout(T).expect("an answer through the proxy")
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.stdin = None;
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn held(app: &McpscopeApp) -> usize {
    app.session()
        .inspection
        .as_ref()
        .and_then(|i| i.intercept.as_ref())
        .map_or(0, |l| l.board.held.len())
}

/// Exactly one frame is held, and it holds `text`.
fn holding(app: &McpscopeApp, text: &str) -> bool {
    app.session()
        .inspection
        .as_ref()
        .and_then(|i| i.intercept.as_ref())
        .is_some_and(|l| l.board.held.len() == 1 && String::from_utf8_lossy(&l.board.held[0].bytes).contains(text))
}

use crate::support::timeline_has as has_row;

#[test]
fn hold_edit_forward_drop_answer_and_the_timeout_from_the_queue() {
    let mut s = Session::start(&["--break", r#"method == "tools/call""#, "--break-timeout", "none"]);
    let mut h = Harness::builder()
        .with_size([1440.0, 900.0])
        .build_eframe(|cc| McpscopeApp::new(cc, mcpscope_app::StartupArgs::default()));
    open_listed(&mut h, &s.sessions.clone(), "held");
    step_until(&mut h, "the link to the proxy", |app| {
        app.session()
            .inspection
            .as_ref()
            .and_then(|i| i.intercept.as_ref())
            .is_some_and(|l| l.board.version > 0)
    });

    // Hold: the call stops at the proxy and shows in the queue.
    s.say(&call(1, "one"));
    step_until(&mut h, "one held frame", |app| holding(app, "one"));
    h.get_by_label_contains("Intercept (1 held)").click();
    h.step();
    h.step();
    assert!(
        h.query_all_by_label_contains("#1 to server tools/call")
            .next()
            .is_some()
    );
    assert!(
        h.query_all_by_label_contains("held by method == \"tools/call\"")
            .next()
            .is_some()
    );

    // Edit as JSON, then Forward edited: the server gets the new text.
    let edited = call(1, "edited in the app");
    h.state_mut().session_mut().intercept.edit_text = edited.clone();
    h.step();
    h.get_by_label("Forward edited").click();
    h.step();
    let answer = s.next();
    assert!(answer.contains("edited in the app"), "{answer}");
    step_until(&mut h, "the queue empty again", |app| held(app) == 0);

    // Malformed JSON is refused in JSON mode, and sent as typed in raw mode.
    s.say(&call(2, "two"));
    step_until(&mut h, "the second call held", |app| holding(app, "two"));
    h.state_mut().session_mut().intercept.edit_text = "{not json".into();
    h.step();
    h.step();
    assert!(h.query_all_by_label_contains("not JSON").next().is_some());
    // Forward as it came.
    h.get_by_label("Forward").click();
    h.step();
    assert!(s.next().contains("two"));
    step_until(&mut h, "the queue empty", |app| held(app) == 0);

    // Answer instead: the client gets the app's answer, the server never the call.
    s.say(&call(3, "three"));
    step_until(&mut h, "the third call held", |app| holding(app, "three"));
    h.get_by_label("Answer instead").click();
    h.step();
    let answer: Value = serde_json::from_str(&s.next()).unwrap();
    assert_eq!(answer["id"], 3);
    assert_eq!(answer["result"]["content"][0]["text"], "answered by mcpscope");

    // Drop: no answer at all, and a cross on the timeline.
    s.say(&call(4, "four"));
    step_until(&mut h, "the fourth call held", |app| holding(app, "four"));
    h.get_by_label("Drop").click();
    h.step();
    assert!(s.lines.recv_timeout(Duration::from_millis(400)).is_err(), "dropped");
    step_until(&mut h, "the drop on the timeline", |app| {
        has_row(app, "proxy dropped: dropped by the user")
    });
    assert!(has_row(h.state(), "proxy edited: edited by the user"));
    assert!(has_row(h.state(), "proxy answered: answered by the user"));

    // A breakpoint added in the app with a timeout lets its frame go on its own.
    h.state_mut().session_mut().intercept.new_break = r#"method == "ping""#.into();
    h.state_mut().session_mut().intercept.new_break_timeout = "700ms".into();
    h.step();
    h.get_by_label("Add breakpoint").click();
    step_until(&mut h, "the new breakpoint listed", |app| {
        app.session()
            .inspection
            .as_ref()
            .and_then(|i| i.intercept.as_ref())
            .is_some_and(|l| l.board.breakpoints.len() == 2)
    });
    let t0 = Instant::now();
    s.say(r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#);
    step_until(&mut h, "the ping held", |app| holding(app, "ping"));
    assert!(s.next().contains("\"id\":5"));
    assert!(t0.elapsed() >= Duration::from_millis(650), "{:?}", t0.elapsed());
    step_until(&mut h, "the timeout on the timeline", |app| {
        has_row(app, "forwarded on its own")
    });

    // Inject toward the client from the app.
    h.state_mut().session_mut().intercept.inject_text =
        r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#.into();
    h.step();
    h.get_by_label("to client").click();
    h.step();
    assert!(s.next().contains("list_changed"));

    // The composer's raw mode injects too, toward the server: its answer reaches the client.
    {
        let c = &mut h.state_mut().session_mut().composer;
        c.mode = mcpscope_app::composer::Mode::Raw;
        c.raw.kind = mcpscope_app::composer::RawKind::Request;
        c.raw.method = "ping".into();
        c.raw.id = "\"from-the-composer\"".into();
    }
    h.state_mut().session_mut().right_tab = mcpscope_app::RightTab::Compose;
    h.step();
    h.step();
    h.get_by_label("Inject to server").click();
    h.step();
    assert!(s.next().contains("from-the-composer"));
    step_until(&mut h, "the injected ping on the timeline", |app| {
        has_row(app, "proxy injected")
    });
}

/// Launches what the launcher's form holds (`fill` sets it) with
/// Intercept on, waits for the handshake and the control socket, sets a
/// breakpoint on tools/call from the Intercept tab, sends a call from
/// the composer, and answers it instead: the app gets the answer.
fn hold_and_answer_an_own_call(
    fill: impl FnOnce(&mut mcpscope_app::panels::launcher::LaunchForm),
) -> Harness<'static, McpscopeApp> {
    let mut h = Harness::builder()
        .with_size([1440.0, 900.0])
        .build_eframe(|cc| McpscopeApp::new(cc, mcpscope_app::StartupArgs::default()));
    h.state_mut().mcpscope_binary = Some(bin().display().to_string());
    fill(&mut h.state_mut().launcher.form);
    h.state_mut().launcher.form.intercept = true;
    h.step();
    h.get_by_label("▶ Launch").click();
    step_until(
        &mut h,
        "the handshake through the proxy and its control socket",
        |app| {
            has_row(app, "result #1 (initialize)")
                && app
                    .session()
                    .inspection
                    .as_ref()
                    .and_then(|i| i.intercept.as_ref())
                    .is_some_and(|l| l.board.version > 0)
        },
    );
    h.state_mut().bottom_tab = mcpscope_app::BottomTab::Intercept;
    h.step();
    h.state_mut().session_mut().intercept.new_break = r#"method == "tools/call""#.into();
    h.step();
    h.get_by_label("Add breakpoint").click();
    step_until(&mut h, "the breakpoint set", |app| {
        app.session()
            .inspection
            .as_ref()
            .and_then(|i| i.intercept.as_ref())
            .is_some_and(|l| l.board.breakpoints.len() == 1)
    });
    h.get_by_label("Compose").click();
    h.step();
    h.get_by_label("Raw").click();
    h.step();
    {
        let c = &mut h.state_mut().session_mut().composer;
        c.raw.method = "tools/call".into();
        c.raw.params = r#"{"name": "echo", "arguments": {"message": "held in my own session"}}"#.into();
    }
    h.step();
    h.get_by_label("Send").click();
    step_until(&mut h, "the app's own call held", |app| {
        holding(app, "held in my own session")
    });
    h.get_by_label("Answer instead").click();
    let answered = |app: &McpscopeApp| {
        app.session().inspection.as_ref().and_then(|i| {
            i.model
                .store
                .iter()
                .find(|r| mcpscope_app::panels::timeline::row_label(&i.model.store, r).contains("(tools/call)"))
                .map(|r| String::from_utf8_lossy(r.raw()).into_owned())
        })
    };
    step_until(&mut h, "the proxy's answer in the app", |app| answered(app).is_some());
    let answer = answered(h.state()).unwrap();
    assert!(answer.contains("answered by mcpscope"), "{answer}");
    h
}

/// #48: the breakpoint set in the Intercept tab comes back when the
/// session starts again: in the tab's memory (Relaunch after a restart
/// of the app) and through Restart, on a new proxy.
fn restarts_with_its_breakpoint(h: &mut Harness<'static, McpscopeApp>) {
    let memory = h.state().tab_memories();
    let server = memory[h.state().active_tab.min(memory.len() - 1)]
        .server
        .clone()
        .expect("a running server to relaunch");
    assert!(
        server.intercept_breaks.iter().any(|b| b.contains("tools/call")),
        "{:?}",
        server.intercept_breaks
    );
    let before = session_target(h);
    h.get_by_label("⟳ Restart").click();
    step_until(h, "the new proxy with the breakpoint", |app| {
        app.session()
            .inspection
            .as_ref()
            .and_then(|i| i.intercept.as_ref())
            .is_some_and(|l| l.board.version > 0 && l.board.breakpoints.iter().any(|b| b.text.contains("tools/call")))
    });
    assert_ne!(session_target(h), before, "a new proxy");
    assert!(
        h.state().launcher.recent.iter().all(|r| r.intercept_breaks.is_empty()),
        "Recent keeps the server, not its breakpoints"
    );
}

fn session_target(h: &Harness<'static, McpscopeApp>) -> String {
    h.state()
        .session()
        .inspection
        .as_ref()
        .unwrap()
        .target()
        .unwrap()
        .display()
}

/// A stdio server launched from the app with Intercept on runs behind
/// `mcpscope proxy`; the proxy's own record opens from the tab.
#[test]
fn an_own_session_launched_with_intercept_holds_the_apps_requests() {
    let server = py_server();
    let mut h = hold_and_answer_an_own_call(|form| {
        form.command = server.program.clone();
        form.args = server.args.join(" ");
    });
    let command_line = session_target(&h);
    assert!(
        command_line.contains("proxy --intercept --control-name app-"),
        "{command_line}"
    );
    // The proxy's own record, opened from the Intercept tab, holds what it did.
    h.state_mut().bottom_tab = mcpscope_app::BottomTab::Intercept;
    h.step();
    h.get_by_label("Open the proxy's record").click();
    step_until(&mut h, "the proxy's record open, with its touches", |app| {
        has_row(app, "proxy held") && has_row(app, "proxy answered: answered by the user")
    });
    h.state_mut().activate_tab(0);
    h.run_steps(2);
    restarts_with_its_breakpoint(&mut h);
    h.state_mut().session_mut().inspection = None;
}

/// The same for an HTTP server: the app runs the intercepting reverse
/// proxy itself and the session goes through it.
#[test]
fn an_own_http_session_launched_with_intercept_holds_the_apps_requests() {
    let server = crate::http::HttpServer::start("streamableHttp");
    let mut h = hold_and_answer_an_own_call(|form| {
        form.transport = "http".into();
        form.url = server.url("/mcp");
    });
    let url = session_target(&h);
    assert!(
        !url.contains(&server.url("")),
        "the session goes through the proxy: {url}"
    );
    restarts_with_its_breakpoint(&mut h);
    h.state_mut().session_mut().inspection = None;
}
