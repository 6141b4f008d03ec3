//! Intercept and fault injection on the stdio proxy, with real clients (the
//! TypeScript and Python SDK clients, the Inspector's CLI) in front of
//! server-everything: what each client saw, and what the capture recorded.

use crate::support::*;
use mcpscope_core::record::capture;
use mcpscope_core::transport::event::{Event, Touch, TouchKind};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn everything_entry() -> String {
    need(repo().join("tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
        .display()
        .to_string()
}

/// A private home for one test: sessions, control sockets.
struct Home(tempfile::TempDir);

impl Home {
    fn new() -> Self {
        Home(tempfile::tempdir().unwrap())
    }

    fn apply(&self, c: &mut Command) {
        c.env("HOME", self.0.path())
            .env("XDG_STATE_HOME", self.0.path().join(".local/state"));
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }

    fn sockets(&self) -> PathBuf {
        self.0.path().join(".local/state/mcpscope/intercept")
    }
}

#[derive(Clone, Copy, Debug)]
enum Client {
    Ts,
    Py,
}

impl Client {
    fn command(self, timeout_ms: u64) -> Vec<String> {
        match self {
            Client::Ts => vec![
                "node".into(),
                repo().join("tests/clients/ts_fault_client.mjs").display().to_string(),
                timeout_ms.to_string(),
            ],
            Client::Py => vec![
                need(repo().join("tests/peers/.venv/bin/python")).display().to_string(),
                repo().join("tests/clients/py_fault_client.py").display().to_string(),
                timeout_ms.to_string(),
            ],
        }
    }
}

/// The client run against `mcpscope proxy PROXY_ARGS -- server-everything`:
/// what it printed, and the capture's events.
fn run_through(home: &Home, client: Client, proxy_args: &[&str], timeout_ms: u64) -> (Value, Vec<Event>) {
    static RUN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = RUN.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let capture = home.path(&format!("{client:?}-{n}.jsonl"));
    let mut cmd_line = client.command(timeout_ms);
    cmd_line.push(bin().display().to_string());
    cmd_line.extend(["proxy".into(), "--capture".into(), capture.display().to_string()]);
    cmd_line.extend(proxy_args.iter().map(|s| s.to_string()));
    cmd_line.extend(["--".into(), "node".into(), everything_entry(), "stdio".into()]);
    let mut cmd = Command::new(&cmd_line[0]);
    cmd.args(&cmd_line[1..]);
    home.apply(&mut cmd);
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().rev().find(|l| l.starts_with('{')).unwrap_or_else(|| {
        panic!(
            "{client:?} printed nothing: {stdout} {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let seen: Value = serde_json::from_str(line).unwrap();
    // The proxy may still be writing its last records when the client ends.
    let deadline = Instant::now() + T;
    let events = loop {
        let loaded = capture::load(&capture).unwrap();
        if loaded.events.iter().any(|e| matches!(e, Event::Closed { .. })) || Instant::now() > deadline {
            break loaded.events;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (seen, events)
}

fn touches(events: &[Event]) -> Vec<&Touch> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Touch(t) => Some(&**t),
            _ => None,
        })
        .collect()
}

fn kinds(events: &[Event]) -> Vec<TouchKind> {
    touches(events).iter().map(|t| t.kind).collect()
}

fn error_code(step: &Value) -> Option<i64> {
    step["error"]["code"].as_i64()
}

/// Every fault action that makes sense over stdio, through both SDK clients.
#[test]
fn each_fault_action_as_the_sdk_clients_see_it() {
    let home = Home::new();
    for client in [Client::Ts, Client::Py] {
        let what = |rule: &str| format!("{client:?} with {rule}");
        // error: the call is answered by the proxy; the server never sees it.
        let rule = r#"method == "tools/call" => error -32042 "injected by the test""#;
        let (seen, events) = run_through(&home, client, &["--fault", rule], 3000);
        assert_eq!(error_code(&seen["call"]), Some(-32042), "{}: {seen}", what(rule));
        assert!(
            seen["call"]["error"]["message"]
                .as_str()
                .unwrap()
                .contains("injected by the test")
        );
        let t = touches(&events);
        assert_eq!(t.len(), 1, "{t:?}");
        assert_eq!(t[0].kind, TouchKind::Answered);
        assert_eq!(t[0].rule.as_deref(), Some(rule));
        assert!(String::from_utf8_lossy(t[0].sent.as_ref().unwrap()).contains("-32042"));

        // drop: the client's own timeout ends the call.
        let rule = r#"method == "tools/call" => drop"#;
        let (seen, events) = run_through(&home, client, &["--fault", rule], 1000);
        assert!(seen["call"]["error"].is_object(), "{}: {seen}", what(rule));
        assert!(seen["call"]["ms"].as_u64().unwrap() >= 900, "{seen}");
        assert_eq!(kinds(&events), [TouchKind::Dropped]);
        assert!(seen["list"]["ok"].is_array(), "other requests unaffected: {seen}");

        // delay: the list arrives, late.
        let rule = r#"method == "tools/list" => delay 700ms"#;
        let (seen, events) = run_through(&home, client, &["--fault", rule], 5000);
        assert!(seen["list"]["ok"].as_array().is_some_and(|t| !t.is_empty()), "{seen}");
        assert!(seen["list"]["ms"].as_u64().unwrap() >= 690, "{}: {seen}", what(rule));
        assert_eq!(kinds(&events), [TouchKind::Fault, TouchKind::Forwarded]);

        // replace: the client believes the server has no tools.
        let rule = r#"request.method == "tools/list" => replace {"jsonrpc":"2.0","result":{"tools":[]}}"#;
        let (seen, events) = run_through(&home, client, &["--fault", rule], 3000);
        assert_eq!(seen["list"]["ok"], serde_json::json!([]), "{}: {seen}", what(rule));
        let lists = match client {
            Client::Ts => 1,
            // The Python SDK lists the tools again before calling one it has
            // not seen listed (to validate its output): replaced again.
            Client::Py => 2,
        };
        assert_eq!(kinds(&events), vec![TouchKind::Edited; lists]);

        // corrupt: a line that is not JSON in place of the call's answer.
        let rule = r#"request.method == "tools/call" => corrupt not-json"#;
        let (seen, events) = run_through(&home, client, &["--fault", rule], 1000);
        assert!(seen["call"]["error"].is_object(), "{}: {seen}", what(rule));
        assert_eq!(kinds(&events), [TouchKind::Edited], "{:#?}", touches(&events));
        if let Client::Ts = client {
            assert!(
                seen["transport_errors"].to_string().contains("not valid JSON"),
                "the SDK reports the line: {seen}"
            );
        }

        // duplicate: the answer twice; the call still succeeds.
        let rule = r#"request.method == "tools/call" => duplicate"#;
        let (seen, events) = run_through(&home, client, &["--fault", rule], 3000);
        assert!(seen["call"]["ok"].is_object(), "{}: {seen}", what(rule));
        assert_eq!(kinds(&events), [TouchKind::Fault]);

        // kill-server and disconnect: the connection closes under the call.
        for rule in [
            r#"method == "tools/call" => kill-server"#,
            r#"method == "tools/call" => disconnect"#,
        ] {
            let (seen, events) = run_through(&home, client, &["--fault", rule], 5000);
            let message = seen["call"]["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_lowercase();
            assert!(
                message.contains("closed") || seen["closed_with"].is_string(),
                "{}: {seen}",
                what(rule)
            );
            assert!(seen["call"]["ms"].as_u64().unwrap_or(0) < 4000, "not a timeout: {seen}");
            assert_eq!(kinds(&events), [TouchKind::Fault]);
            if rule.contains("kill-server") {
                assert!(
                    events
                        .iter()
                        .any(|e| matches!(e, Event::Note { text, .. } if text.contains("killed the server"))),
                    "the kill is noted"
                );
                assert!(
                    events
                        .iter()
                        .any(|e| matches!(e, Event::Exited { status, .. } if status.signal == Some(9)))
                );
            }
        }

        // stall: held for ever; the client gives up. (`first 1`: the Python
        // SDK lists again before its call, and that one goes through.)
        let rule = r#"method == "tools/list" => stall first 1"#;
        let (seen, events) = run_through(&home, client, &["--fault", rule], 800);
        assert!(seen["list"]["error"].is_object(), "{}: {seen}", what(rule));
        assert_eq!(
            kinds(&events),
            [TouchKind::Fault, TouchKind::Dropped],
            "stalled, then never sent"
        );

        // reorder: initialized goes after the next frame the client sends (tools/list).
        let rule = r#"method == "notifications/initialized" => reorder"#;
        let (seen, events) = run_through(&home, client, &["--fault", rule], 5000);
        assert!(seen["list"]["ok"].is_array(), "{}: {seen}", what(rule));
        let t = touches(&events);
        assert_eq!(
            t.iter().map(|t| t.kind).collect::<Vec<_>>(),
            [TouchKind::Fault, TouchKind::Forwarded]
        );
        assert!(t[1].text.starts_with("sent after #"), "{}", t[1].text);
    }
}

/// The issue's case: `notifications/initialized` never reaches the server
/// and `tools/list` comes a second late. Recorded as they really behave.
#[test]
fn a_dropped_initialized_and_a_delayed_tools_list() {
    let home = Home::new();
    for client in [Client::Ts, Client::Py] {
        let args = [
            "--fault",
            r#"method == "notifications/initialized" => drop"#,
            "--fault",
            r#"method == "tools/list" => delay 1s"#,
        ];
        let (seen, events) = run_through(&home, client, &args, 5000);
        // The client cannot know its notification was lost: its handshake completed.
        assert!(seen["connect"]["ok"].is_string(), "{client:?}: {seen}");
        // server-everything answers without having been told the client is ready…
        let tools = seen["list"]["ok"]
            .as_array()
            .unwrap_or_else(|| panic!("{client:?}: {seen}"));
        assert!(tools.iter().any(|t| t == "echo"), "{seen}");
        // …but the tools it registers only once the client is initialized are missing.
        assert!(
            !tools.iter().any(|t| t == "simulate-research-query"),
            "{client:?}: without initialized the server did not add its task tool: {seen}"
        );
        assert!(seen["list"]["ms"].as_u64().unwrap() >= 990, "{seen}");
        assert!(seen["call"]["ok"].is_object(), "the echo call still works: {seen}");
        let t = touches(&events);
        assert_eq!(
            t.iter().map(|t| t.kind).collect::<Vec<_>>(),
            [TouchKind::Dropped, TouchKind::Fault, TouchKind::Forwarded],
            "{t:?}"
        );
        // The capture still holds the notification as the client sent it.
        let dropped_seq = t[0].of_seq.unwrap();
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::Frame(f) if f.seq == dropped_seq
            && f.class.method.as_deref() == Some("notifications/initialized")))
        );
    }
    // Without the drop, the same client sees the task tool: the difference is the fault's.
    let (seen, _) = run_through(
        &home,
        Client::Ts,
        &["--fault", r#"method == "tools/list" => delay 1ms"#],
        5000,
    );
    assert!(
        seen["list"]["ok"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "simulate-research-query"),
        "{seen}"
    );
}

/// The Inspector's CLI (one `tools/call` per run) through the stdio proxy
/// with a fault rule: what it printed, whether it failed, what the capture
/// recorded.
fn inspector_through(home: &Home, rule: &str) -> (bool, String, Vec<TouchKind>) {
    static RUN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = RUN.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let inspector =
        need(repo().join("tests/peers/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"));
    let capture = home.path(&format!("inspector-{n}.jsonl"));
    let config = home.path(&format!("mcp-{n}.json"));
    let args = serde_json::json!([
        "proxy",
        "--capture",
        capture,
        "--fault",
        rule,
        "--",
        "node",
        everything_entry(),
        "stdio"
    ]);
    std::fs::write(
        &config,
        serde_json::json!({"mcpServers": {"everything": {"command": bin(), "args": args}}}).to_string(),
    )
    .unwrap();
    let mut cmd = Command::new("node");
    cmd.arg(&inspector).args(["--cli", "--config"]).arg(&config).args([
        "--server",
        "everything",
        "--method",
        "tools/call",
        "--tool-name",
        "echo",
        "--tool-arg",
        "message=hi",
    ]);
    home.apply(&mut cmd);
    let out = cmd.output().unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let deadline = Instant::now() + T;
    while !capture::load(&capture)
        .unwrap()
        .events
        .iter()
        .any(|e| matches!(e, Event::Closed { .. }))
    {
        assert!(Instant::now() < deadline, "the proxy did not finish its capture: {all}");
        std::thread::sleep(Duration::from_millis(50));
    }
    (
        out.status.success(),
        all,
        kinds(&capture::load(&capture).unwrap().events),
    )
}

/// The Inspector's CLI through the stdio proxy, one run per fault action
/// that ends within its own wait (it has no request timeout to shorten:
/// drop, stall and a corrupted answer would wait it out).
#[test]
fn the_inspector_cli_through_fault_rules() {
    let home = Home::new();
    // error: the message on stderr, without the numeric code (`"code":"error"`).
    let (ok, all, k) = inspector_through(&home, r#"method == "tools/call" => error -32099 "chaos""#);
    assert!(!ok && all.contains("\"message\":\"chaos\""), "{all}");
    assert_eq!(k, [TouchKind::Answered]);
    let (ok, all, k) = inspector_through(&home, r#"method == "tools/call" => delay 300ms"#);
    assert!(ok && all.contains("Echo: hi"), "{all}");
    assert_eq!(k, [TouchKind::Fault, TouchKind::Forwarded]);
    let (ok, all, k) = inspector_through(&home, r#"request.method == "tools/call" => duplicate"#);
    assert!(ok && all.contains("Echo: hi"), "a second answer is ignored: {all}");
    assert_eq!(k, [TouchKind::Fault]);
    let (ok, all, k) = inspector_through(
        &home,
        r#"request.method == "tools/call" => replace {"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"replaced"}]}}"#,
    );
    assert!(ok && all.contains("replaced") && !all.contains("Echo: hi"), "{all}");
    assert_eq!(k, [TouchKind::Edited]);
    for rule in [
        r#"method == "tools/call" => disconnect"#,
        r#"method == "tools/call" => kill-server"#,
    ] {
        let (ok, all, k) = inspector_through(&home, rule);
        assert!(!ok, "{rule}: {all}");
        assert_eq!(k, [TouchKind::Fault], "{rule}");
    }
}

/// A hand-driven client: the test writes the client's lines and reads what
/// comes back through `mcpscope proxy` in front of a Python SDK server.
struct Proxied {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: crossbeam_channel::Receiver<String>,
    socket: PathBuf,
    capture: PathBuf,
}

impl Proxied {
    fn start(home: &Home, extra: &[&str]) -> Proxied {
        let capture = home.path("held.jsonl");
        let mut child = {
            let mut c = Command::new(bin());
            c.args(["proxy", "--capture"]).arg(&capture).args(extra).arg("--");
            let server = py_server();
            c.arg(&server.program).args(&server.args);
            home.apply(&mut c);
            c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
            c.spawn().unwrap()
        };
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = crossbeam_channel::unbounded();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        while !line.contains("control socket") {
            line.clear();
            assert!(
                err.read_line(&mut line).unwrap() > 0,
                "the proxy ended before its socket was open"
            );
        }
        std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
        let socket = std::fs::read_dir(home.sockets())
            .unwrap()
            .flatten()
            .next()
            .unwrap()
            .path();
        let mut p = Proxied {
            stdin: child.stdin.take(),
            child,
            lines: rx,
            socket,
            capture,
        };
        p.send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"hand","version":"1"}}}"#);
        assert!(p.next().contains("\"serverInfo\""));
        p.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        p
    }

    fn send(&mut self, line: &str) {
        let s = self.stdin.as_mut().unwrap();
        s.write_all(line.as_bytes()).unwrap();
        s.write_all(b"\n").unwrap();
        s.flush().unwrap();
    }

    fn next(&self) -> String {
        self.lines.recv_timeout(T).expect("a line from the proxy")
    }

    fn nothing_within(&self, d: Duration) -> bool {
        self.lines.recv_timeout(d).is_err()
    }

    /// `mcpscope intercept ARGS` against this proxy: (exit code, stdout).
    fn intercept(&self, home: &Home, args: &[&str]) -> (i32, String, String) {
        let mut c = Command::new(bin());
        c.arg("intercept").arg("--socket").arg(&self.socket).args(args);
        home.apply(&mut c);
        let out = c.output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Ends the client and waits for the capture to be complete.
    fn finish(mut self) -> Vec<Event> {
        drop(self.stdin.take());
        let deadline = Instant::now() + T;
        while self.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "the proxy did not end");
            std::thread::sleep(Duration::from_millis(20));
        }
        capture::load(&self.capture).unwrap().events
    }
}

fn call(id: u64, text: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"message":"{text}"}}}}}}"#
    )
}

#[test]
fn held_frames_are_forwarded_edited_dropped_and_answered_from_the_cli() {
    let home = Home::new();
    let mut p = Proxied::start(
        &home,
        &["--break", r#"c2s: method == "tools/call""#, "--break-timeout", "none"],
    );
    // Held: nothing comes back, while a request the breakpoint does not match flows.
    p.send(&call(1, "first"));
    p.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    assert!(p.next().contains("\"id\":2"), "tools/list is not held up");
    let (code, listed, _) = p.intercept(&home, &["list"]);
    assert_eq!(code, 0);
    assert!(
        listed.contains("held frames: 1") && listed.contains("#1 c2s"),
        "{listed}"
    );
    // Forward as is.
    assert_eq!(p.intercept(&home, &["forward", "1"]).0, 0);
    assert!(p.next().contains("first"));
    // Forward edited.
    p.send(&call(3, "original"));
    let edited = call(3, "edited by hand");
    let (code, _, err) = p.intercept(&home, &["forward", "2", "--edited", &edited]);
    assert_eq!(code, 0, "{err}");
    assert!(p.next().contains("edited by hand"));
    // Answer instead: the server never sees it.
    p.send(&call(4, "never"));
    let (code, _, err) = p.intercept(
        &home,
        &[
            "answer",
            "3",
            "--json",
            r#"{"content":[{"type":"text","text":"answered by the test"}]}"#,
        ],
    );
    assert_eq!(code, 0, "{err}");
    let answer: Value = serde_json::from_str(&p.next()).unwrap();
    assert_eq!(answer["id"], 4);
    assert_eq!(answer["result"]["content"][0]["text"], "answered by the test");
    // Drop: no answer ever.
    p.send(&call(5, "dropped"));
    assert_eq!(p.intercept(&home, &["drop", "4"]).0, 0);
    assert!(p.nothing_within(Duration::from_millis(500)));
    // A wrong id is refused with the reason.
    let (code, _, err) = p.intercept(&home, &["forward", "99"]);
    assert_eq!(code, 1);
    assert!(err.contains("no held frame #99"), "{err}");
    // Inject both ways: a ping to the server (its answer reaches the client),
    // and a raw malformed line to the client.
    assert_eq!(
        p.intercept(
            &home,
            &[
                "inject",
                "--to-server",
                r#"{"jsonrpc":"2.0","id":"injected","method":"ping"}"#
            ]
        )
        .0,
        0
    );
    assert!(p.next().contains("\"injected\""));
    assert_eq!(p.intercept(&home, &["inject", "--to-client", "{not json"]).0, 0);
    assert_eq!(p.next(), "{not json");

    let events = p.finish();
    assert_eq!(
        kinds(&events),
        [
            TouchKind::Held,
            TouchKind::Forwarded,
            TouchKind::Held,
            TouchKind::Edited,
            TouchKind::Held,
            TouchKind::Answered,
            TouchKind::Held,
            TouchKind::Dropped,
            TouchKind::Injected,
            TouchKind::Injected,
        ]
    );
    let edited_touch = touches(&events)[3];
    assert_eq!(
        String::from_utf8_lossy(edited_touch.sent.as_ref().unwrap()),
        format!("{edited}\n")
    );
    // The original is in the capture as the client sent it.
    let seq = edited_touch.of_seq.unwrap();
    assert!(
        events.iter().any(
            |e| matches!(e, Event::Frame(f) if f.seq == seq && String::from_utf8_lossy(&f.raw).contains("original"))
        )
    );
}

#[test]
fn a_forgotten_breakpoint_lets_the_frame_go_after_its_timeout() {
    let home = Home::new();
    let mut p = Proxied::start(
        &home,
        &["--break", r#"method == "tools/call""#, "--break-timeout", "600ms"],
    );
    let t0 = Instant::now();
    p.send(&call(1, "late"));
    assert!(p.next().contains("late"));
    assert!(t0.elapsed() >= Duration::from_millis(550), "{:?}", t0.elapsed());
    let events = p.finish();
    let t = touches(&events);
    assert_eq!(
        t.iter().map(|t| t.kind).collect::<Vec<_>>(),
        [TouchKind::Held, TouchKind::Forwarded]
    );
    assert!(t[1].text.contains("on its own"), "{}", t[1].text);
}

#[test]
fn hold_everything_then_forward_all_and_rules_set_live() {
    let home = Home::new();
    let mut p = Proxied::start(&home, &["--intercept"]);
    assert_eq!(p.intercept(&home, &["hold-everything", "on"]).0, 0);
    p.send(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    p.send(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#);
    assert!(p.nothing_within(Duration::from_millis(300)));
    let (_, listed, _) = p.intercept(&home, &["list"]);
    assert!(listed.contains("held frames: 2"), "{listed}");
    assert_eq!(p.intercept(&home, &["hold-everything", "off"]).0, 0);
    assert_eq!(p.intercept(&home, &["forward-all"]).0, 0);
    let mut got = [p.next(), p.next()];
    got.sort();
    assert!(got[0].contains("\"id\":1") && got[1].contains("\"id\":2"), "{got:?}");
    // A fault rule set while the proxy runs acts on the next frame.
    let (code, said, err) = p.intercept(&home, &["fault", r#"method == "ping" => error -1 "live rule""#]);
    assert_eq!(code, 0, "{err}");
    assert!(said.contains("fault rule 1 set"), "{said}");
    p.send(r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#);
    assert!(p.next().contains("live rule"));
    let (code, _, err) = p.intercept(&home, &["fault", "true => http-status 503"]);
    assert_eq!(code, 1);
    assert!(err.contains("only the HTTP proxy"), "{err}");
    let (_, listed, _) = p.intercept(&home, &["list"]);
    assert!(
        listed.contains("fault 1: method == \"ping\" => error -1 \"live rule\" (matched 1, applied 1)"),
        "{listed}"
    );
    p.finish();
}

/// A client that writes its requests and closes its stdin at once: with a
/// gate, every line still reaches the server before its stdin is closed.
#[test]
fn lines_sent_just_before_the_client_closes_still_reach_the_server() {
    let home = Home::new();
    let mut c = Command::new(bin());
    // `cat` answers every line it got before its stdin closed (an SDK
    // server may drop what is in flight at EOF: that would be its doing).
    c.args(["proxy", "--fault", r#"method == "never" => drop"#, "--", "cat"]);
    home.apply(&mut c);
    c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
    let mut child = c.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut all = String::from(
        "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"pipe\",\"version\":\"1\"}}}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n",
    );
    for id in 1..=50 {
        all.push_str(&format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n"));
    }
    stdin.write_all(all.as_bytes()).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), all, "every line, in order");
}

#[test]
fn a_bad_rule_is_a_usage_error_before_the_server_starts() {
    let home = Home::new();
    for (args, says) in [
        (vec!["--fault", "method == => drop"], "--fault"),
        (vec!["--fault", "true => explode"], "unknown action"),
        (vec!["--break", "methd == \"x\""], "--break"),
        (vec!["--break", "true", "--break-timeout", "soon"], "not a duration"),
    ] {
        let mut c = Command::new(bin());
        c.arg("proxy").args(&args).args(["--", "false"]);
        home.apply(&mut c);
        let out = c.output().unwrap();
        assert_eq!(out.status.code(), Some(64), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let rules = home.path("rules.toml");
    std::fs::write(&rules, "[[fault]]\nrule = 'true => nope'\n").unwrap();
    let mut c = Command::new(bin());
    c.arg("proxy").arg("--faults").arg(&rules).args(["--", "false"]);
    home.apply(&mut c);
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("fault 1"));
}

#[test]
fn the_seed_repeats_a_probabilistic_run() {
    let home = Home::new();
    let rules = home.path("rules.json");
    std::fs::write(&rules, r#"{"faults": ["method == \"ping\" => drop p=0.5"]}"#).unwrap();
    let run = |seed: &str| -> Vec<u64> {
        let mut c = Command::new(bin());
        c.args(["proxy", "--seed", seed, "--faults"]).arg(&rules).arg("--");
        let s = py_server();
        c.arg(&s.program).args(&s.args);
        home.apply(&mut c);
        c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
        let mut child = c.spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"s","version":"1"}}}}}}"#).unwrap();
        writeln!(stdin, r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#).unwrap();
        for id in 1..=20 {
            writeln!(stdin, r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#).unwrap();
        }
        // The last ping is not a ping: its answer says every earlier one was handled.
        writeln!(stdin, r#"{{"jsonrpc":"2.0","id":99,"method":"tools/list"}}"#).unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut answered = Vec::new();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let v: Value = serde_json::from_str(&line).unwrap();
            match v["id"].as_u64() {
                Some(99) => break,
                Some(id) if id > 0 => answered.push(id),
                _ => {}
            }
        }
        drop(stdin);
        let _ = child.wait();
        answered
    };
    let a = run("7");
    assert_eq!(run("7"), a, "the same seed drops the same pings");
    assert!(!a.is_empty() && a.len() < 20, "about half dropped: {a:?}");
    assert_ne!(run("8"), a, "another seed, other dice");
}

/// The proxy's held-out check of byte-exactness, with breakpoints and rules
/// defined that match nothing: the server gets exactly what the client wrote,
/// and the client exactly what the server wrote.
#[test]
fn rules_that_match_nothing_leave_every_byte_as_it_was() {
    let home = Home::new();
    let tee = |log: &Path| -> Vec<String> {
        vec![
            "python3".into(),
            repo().join("tests/servers/tee_stdio.py").display().to_string(),
            log.display().to_string(),
            "--".into(),
            "node".into(),
            everything_entry(),
            "stdio".into(),
        ]
    };
    let client = |server: Vec<String>| -> Vec<u8> {
        let mut c = Command::new("node");
        c.arg(repo().join("tests/clients/ts_client.mjs"))
            .arg("stdio")
            .args(&server);
        home.apply(&mut c);
        let out = c.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    };
    let direct_log = home.path("direct");
    let direct_out = client(tee(&direct_log));
    let proxied_log = home.path("proxied");
    let mut server: Vec<String> = vec![bin().display().to_string(), "proxy".into()];
    for i in 0..10 {
        server.push("--break".into());
        server.push(format!(r#"method == "never/{i}" or params.name == "nothing-{i}""#));
    }
    server.extend([
        "--fault".into(),
        r#"method == "never/fault" => drop"#.into(),
        "--".into(),
    ]);
    server.extend(tee(&proxied_log));
    let proxied_out = client(server);
    assert_eq!(
        String::from_utf8_lossy(&proxied_out),
        String::from_utf8_lossy(&direct_out)
    );
    let read = |dir: &Path, f: &str| std::fs::read(dir.join(f)).unwrap();
    assert_eq!(
        read(&proxied_log, "in"),
        read(&direct_log, "in"),
        "bytes the server received"
    );
    let strip = |b: Vec<u8>| -> Vec<String> {
        String::from_utf8_lossy(&b)
            .lines()
            .filter(|l| !l.contains("\"method\":\"notifications/"))
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(
        strip(read(&proxied_log, "out")),
        strip(read(&direct_log, "out")),
        "bytes the server sent"
    );
}

/// The app attached to a proxy's held-frame queue: a proxied session
/// (`--session` with a breakpoint) opened from the Live sessions panel.
mod in_the_app {
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
            let mut c = Command::new(bin());
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
        app.session
            .inspection
            .as_ref()
            .and_then(|i| i.intercept.as_ref())
            .map_or(0, |l| l.board.held.len())
    }

    /// Exactly one frame is held, and it holds `text`.
    fn holding(app: &McpscopeApp, text: &str) -> bool {
        app.session
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
            app.session
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
        h.state_mut().session.intercept.edit_text = edited.clone();
        h.step();
        h.get_by_label("Forward edited").click();
        h.step();
        let answer = s.next();
        assert!(answer.contains("edited in the app"), "{answer}");
        step_until(&mut h, "the queue empty again", |app| held(app) == 0);

        // Malformed JSON is refused in JSON mode, and sent as typed in raw mode.
        s.say(&call(2, "two"));
        step_until(&mut h, "the second call held", |app| holding(app, "two"));
        h.state_mut().session.intercept.edit_text = "{not json".into();
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
        h.state_mut().session.intercept.new_break = r#"method == "ping""#.into();
        h.state_mut().session.intercept.new_break_timeout = "700ms".into();
        h.step();
        h.get_by_label("Add breakpoint").click();
        step_until(&mut h, "the new breakpoint listed", |app| {
            app.session
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
        h.state_mut().session.intercept.inject_text =
            r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#.into();
        h.step();
        h.get_by_label("to client").click();
        h.step();
        assert!(s.next().contains("list_changed"));

        // The composer's raw mode injects too, toward the server: its answer reaches the client.
        {
            let c = &mut h.state_mut().session.composer;
            c.mode = mcpscope_app::composer::Mode::Raw;
            c.raw.kind = mcpscope_app::composer::RawKind::Request;
            c.raw.method = "ping".into();
            c.raw.id = "\"from-the-composer\"".into();
        }
        h.state_mut().right_tab = mcpscope_app::RightTab::Compose;
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
                        .session
                        .inspection
                        .as_ref()
                        .and_then(|i| i.intercept.as_ref())
                        .is_some_and(|l| l.board.version > 0)
            },
        );
        h.state_mut().bottom_tab = mcpscope_app::BottomTab::Intercept;
        h.step();
        h.state_mut().session.intercept.new_break = r#"method == "tools/call""#.into();
        h.step();
        h.get_by_label("Add breakpoint").click();
        step_until(&mut h, "the breakpoint set", |app| {
            app.session
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
            let c = &mut h.state_mut().session.composer;
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
            app.session.inspection.as_ref().and_then(|i| {
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
            app.session
                .inspection
                .as_ref()
                .and_then(|i| i.intercept.as_ref())
                .is_some_and(|l| {
                    l.board.version > 0 && l.board.breakpoints.iter().any(|b| b.text.contains("tools/call"))
                })
        });
        assert_ne!(session_target(h), before, "a new proxy");
        assert!(
            h.state().launcher.recent.iter().all(|r| r.intercept_breaks.is_empty()),
            "Recent keeps the server, not its breakpoints"
        );
    }

    fn session_target(h: &Harness<'static, McpscopeApp>) -> String {
        h.state()
            .session
            .inspection
            .as_ref()
            .unwrap()
            .target
            .as_ref()
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
        h.state_mut().session.inspection = None;
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
        h.state_mut().session.inspection = None;
    }
}

/// `mcpscope proxy --listen --upstream` with fault rules, in front of
/// server-everything's Streamable HTTP (its answers come as SSE).
mod over_http {
    use super::*;
    use crate::http::HttpServer;

    struct Proxy {
        child: std::process::Child,
        url: String,
    }

    impl Proxy {
        fn start(home: &Home, upstream: &str, capture: &Path, rules: &[&str]) -> Proxy {
            let mut c = Command::new(bin());
            c.args(["proxy", "--listen", "127.0.0.1:0", "--upstream", upstream, "--capture"])
                .arg(capture);
            for r in rules {
                c.args(["--fault", r]);
            }
            home.apply(&mut c);
            let mut child = c
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let mut err = BufReader::new(child.stderr.take().unwrap());
            let addr = listening_addr(&mut err);
            std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
            Proxy {
                child,
                url: format!("http://{addr}/mcp"),
            }
        }
    }

    impl Drop for Proxy {
        fn drop(&mut self) {
            // As a person stops it (Ctrl-C): it records how it ended.
            // SAFETY: kill(2) on our own child's pid.
            unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
            let deadline = Instant::now() + T;
            while self.child.try_wait().unwrap().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    fn run(home: &Home, server: &HttpServer, client: Client, rule: &str, timeout_ms: u64) -> (Value, Vec<Event>) {
        static RUN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = RUN.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let capture = home.path(&format!("http-{n}.jsonl"));
        let proxy = Proxy::start(home, &server.url("/mcp"), &capture, &[rule]);
        let mut cmd_line = client.command(timeout_ms);
        cmd_line.push(proxy.url.clone());
        let out = Command::new(&cmd_line[0]).args(&cmd_line[1..]).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = stdout
            .lines()
            .rev()
            .find(|l| l.starts_with('{'))
            .unwrap_or_else(|| panic!("{client:?} printed nothing: {}", String::from_utf8_lossy(&out.stderr)));
        let seen: Value = serde_json::from_str(line).unwrap();
        drop(proxy);
        (seen, capture::load(&capture).unwrap().events)
    }

    #[test]
    fn each_http_fault_as_the_sdk_clients_see_it() {
        let home = Home::new();
        let server = HttpServer::start("streamableHttp");
        for client in [Client::Ts, Client::Py] {
            let what = |rule: &str| format!("{client:?} over HTTP with {rule}");

            let rule = r#"method == "tools/call" => error -32042 "via http""#;
            let (seen, events) = run(&home, &server, client, rule, 3000);
            assert_eq!(error_code(&seen["call"]), Some(-32042), "{}: {seen}", what(rule));
            assert_eq!(kinds(&events), [TouchKind::Answered]);
            assert!(
                events
                    .iter()
                    .any(|e| matches!(e, Event::Http(h) if h.text.contains("answered by the proxy")))
            );

            let rule = r#"method == "tools/call" => http-status 503 7"#;
            let (seen, events) = run(&home, &server, client, rule, 3000);
            assert!(seen["call"]["error"].is_object(), "{}: {seen}", what(rule));
            assert!(seen["call"]["ms"].as_u64().unwrap() < 1000, "at once: {seen}");
            assert_eq!(kinds(&events), [TouchKind::Fault]);
            assert!(
                events
                    .iter()
                    .any(|e| matches!(e, Event::Http(h) if h.status == Some(503)))
            );

            let rule = r#"request.method == "tools/list" => replace {"jsonrpc":"2.0","result":{"tools":[]}}"#;
            let (seen, events) = run(&home, &server, client, rule, 3000);
            assert_eq!(seen["list"]["ok"], serde_json::json!([]), "{}: {seen}", what(rule));
            // (The Python SDK lists again before calling a tool it did not see.)
            let lists = if let Client::Py = client { 2 } else { 1 };
            assert_eq!(kinds(&events), vec![TouchKind::Edited; lists], "an SSE event changed");

            let rule = r#"method == "tools/list" => delay 700ms"#;
            let (seen, events) = run(&home, &server, client, rule, 5000);
            assert!(seen["list"]["ms"].as_u64().unwrap() >= 690, "{}: {seen}", what(rule));
            assert_eq!(kinds(&events), [TouchKind::Fault, TouchKind::Forwarded]);

            // A dropped request is accepted (202) and never answered.
            let rule = r#"method == "tools/call" => drop"#;
            let (seen, events) = run(&home, &server, client, rule, 1000);
            assert!(seen["call"]["error"].is_object(), "{}: {seen}", what(rule));
            assert_eq!(kinds(&events), [TouchKind::Dropped]);
            assert!(
                events
                    .iter()
                    .any(|e| matches!(e, Event::Http(h) if h.status == Some(202)))
            );

            let rule = r#"request.method == "tools/call" => corrupt not-json"#;
            let (seen, _) = run(&home, &server, client, rule, 1000);
            assert!(seen["call"]["error"].is_object(), "{}: {seen}", what(rule));

            let rule = r#"method == "tools/call" => disconnect"#;
            let (seen, events) = run(&home, &server, client, rule, 3000);
            assert!(
                seen["call"]["error"].is_object() || seen["closed_with"].is_string(),
                "{}: {seen}",
                what(rule)
            );
            assert_eq!(kinds(&events), [TouchKind::Fault]);

            // slow: the list's answer at 2 kB/s takes longer than the client waits.
            let rule = r#"request.method == "tools/list" => slow 2000B/s first 1"#;
            let (seen, events) = run(&home, &server, client, rule, 1000);
            assert!(seen["list"]["error"].is_object(), "{}: {seen}", what(rule));
            assert_eq!(kinds(&events), [TouchKind::Fault]);

            // duplicate: the call goes upstream twice; the client gets one answer.
            let rule = r#"method == "tools/call" => duplicate"#;
            let (seen, events) = run(&home, &server, client, rule, 3000);
            assert!(seen["call"]["ok"].is_object(), "{}: {seen}", what(rule));
            assert_eq!(kinds(&events), [TouchKind::Fault]);
            assert!(
                events
                    .iter()
                    .any(|e| matches!(e, Event::Note { text, .. } if text.contains("a second time (duplicate)"))),
                "the second send is noted"
            );

            // stall: the list's POST is held for ever; the client gives up.
            let rule = r#"method == "tools/list" => stall first 1"#;
            let (seen, _) = run(&home, &server, client, rule, 800);
            assert!(seen["list"]["error"].is_object(), "{}: {seen}", what(rule));

            // reorder: each SDK waits for its initialized POST's answer before
            // its next POST, so nothing comes to swap with: it goes on after
            // the 2 s wait. The TypeScript SDK waits inside connect, the
            // Python SDK before its next request (tools/list).
            let rule = r#"method == "notifications/initialized" => reorder"#;
            let (seen, events) = run(&home, &server, client, rule, 5000);
            assert!(seen["connect"]["ok"].is_string(), "{}: {seen}", what(rule));
            let waited = match client {
                Client::Ts => &seen["connect"],
                Client::Py => &seen["list"],
            };
            assert!(waited["ms"].as_u64().unwrap() >= 1900, "{}: {seen}", what(rule));
            let t = touches(&events);
            assert_eq!(
                t.iter().map(|t| t.kind).collect::<Vec<_>>(),
                [TouchKind::Fault, TouchKind::Forwarded]
            );
            assert!(t[1].text.contains("no other frame"), "{}", t[1].text);
        }
    }

    /// The Inspector's CLI over the reverse proxy: an injected error and an HTTP status.
    #[test]
    fn the_inspector_cli_over_http() {
        let home = Home::new();
        let server = HttpServer::start("streamableHttp");
        let inspector = need(
            repo().join("tests/peers/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"),
        );
        for (rule, says) in [
            (
                r#"method == "tools/call" => error -32099 "chaos over http""#,
                "chaos over http",
            ),
            (r#"method == "tools/call" => http-status 503 7"#, "503"),
        ] {
            let capture = home.path(&format!("inspector-{}.jsonl", says.len()));
            let proxy = Proxy::start(&home, &server.url("/mcp"), &capture, &[rule]);
            let mut c = Command::new("node");
            c.arg(&inspector)
                .args(["--cli", &proxy.url, "--transport", "http", "--method", "tools/call"])
                .args(["--tool-name", "echo", "--tool-arg", "message=hi"]);
            home.apply(&mut c);
            let out = c.output().unwrap();
            let all = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(!out.status.success(), "{rule}: {all}");
            assert!(all.contains(says), "{rule}: {all}");
            drop(proxy);
            let k = kinds(&capture::load(&capture).unwrap().events);
            assert_eq!(k.len(), 1, "{rule}: {k:?}");
        }
    }

    /// Rules defined that match nothing: every exchange as without them.
    #[test]
    fn rules_that_match_nothing_change_nothing_over_http() {
        let home = Home::new();
        let server = HttpServer::start("streamableHttp");
        let plain = {
            let mut c = Command::new("node");
            c.arg(repo().join("tests/clients/ts_client.mjs"))
                .args(["http", &server.url("/mcp")]);
            c.output().unwrap().stdout
        };
        let capture = home.path("nothing.jsonl");
        let rules: Vec<String> = (0..10).map(|i| format!(r#"method == "never/{i}" => drop"#)).collect();
        let rules: Vec<&str> = rules.iter().map(String::as_str).collect();
        let proxy = Proxy::start(&home, &server.url("/mcp"), &capture, &rules);
        let mut c = Command::new("node");
        c.arg(repo().join("tests/clients/ts_client.mjs"))
            .args(["http", &proxy.url]);
        let through = c.output().unwrap();
        assert!(through.status.success(), "{}", String::from_utf8_lossy(&through.stderr));
        assert_eq!(
            String::from_utf8_lossy(&through.stdout),
            String::from_utf8_lossy(&plain)
        );
        drop(proxy);
        assert!(kinds(&capture::load(&capture).unwrap().events).is_empty());
    }
}

/// `mcpscope proxy --listen` in front of `server` with `args` (breakpoints),
/// and the TypeScript fault client started against it: the proxy, its
/// control socket, the client.
fn break_over_http(
    home: &Home,
    server: &crate::http::HttpServer,
    args: &[&str],
) -> (std::process::Child, PathBuf, std::process::Child) {
    let mut c = Command::new(bin());
    c.args(["proxy", "--listen", "127.0.0.1:0", "--upstream", &server.url("/mcp")])
        .args(args);
    home.apply(&mut c);
    let mut proxy = c
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(proxy.stderr.take().unwrap());
    let addr = listening_addr(&mut err);
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    let socket = std::fs::read_dir(home.sockets())
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let mut cmd_line = Client::Ts.command(10_000);
    cmd_line.push(format!("http://{addr}/mcp"));
    let client = Command::new(&cmd_line[0])
        .args(&cmd_line[1..])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    (proxy, socket, client)
}

/// `mcpscope intercept --socket SOCKET ARGS`.
fn intercept_at(home: &Home, socket: &Path, args: &[&str]) -> std::process::Output {
    let mut c = Command::new(bin());
    c.arg("intercept").arg("--socket").arg(socket).args(args);
    home.apply(&mut c);
    c.output().unwrap()
}

/// A breakpoint on the server's side over HTTP: the answer to tools/list
/// (an SSE event on its POST's stream) is held, that stream alone waits,
/// and it goes on when forwarded.
#[test]
fn a_held_sse_event_holds_its_stream_only() {
    use crate::http::HttpServer;
    let home = Home::new();
    let server = HttpServer::start("streamableHttp");
    let (mut proxy, socket, client) = break_over_http(
        &home,
        &server,
        &[
            "--break",
            r#"s2c: request.method == "tools/list""#,
            "--break-timeout",
            "none",
        ],
    );
    let intercept = |args: &[&str]| intercept_at(&home, &socket, args);
    let deadline = Instant::now() + T;
    loop {
        let listed = String::from_utf8_lossy(&intercept(&["list"]).stdout).into_owned();
        if listed.contains("held frames: 1") {
            assert!(listed.contains("#1 s2c"), "{listed}");
            break;
        }
        assert!(Instant::now() < deadline, "the answer was never held: {listed}");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(intercept(&["forward", "1"]).status.success());
    let out = client.wait_with_output().unwrap();
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(seen["list"]["ok"].as_array().is_some_and(|t| !t.is_empty()), "{seen}");
    assert!(seen["list"]["ms"].as_u64().unwrap() >= 50, "it waited: {seen}");
    assert!(seen["call"]["ok"].is_object(), "{seen}");
    let _ = proxy.kill();
    let _ = proxy.wait();
}

/// A breakpoint on the HTTP proxy: the held POST keeps its connection open
/// while other exchanges go on, and is answered from `mcpscope intercept`.
#[test]
fn a_held_post_waits_for_the_user_over_http() {
    use crate::http::HttpServer;
    let home = Home::new();
    let server = HttpServer::start("streamableHttp");
    let capture = home.path("held-post.jsonl");
    let (mut proxy, socket, client) = break_over_http(
        &home,
        &server,
        &[
            "--capture",
            &capture.display().to_string(),
            "--break",
            r#"method == "tools/call""#,
            "--break-timeout",
            "none",
        ],
    );
    let intercept = |args: &[&str]| intercept_at(&home, &socket, args);
    let deadline = Instant::now() + T;
    loop {
        let out = intercept(&["list"]);
        if String::from_utf8_lossy(&out.stdout).contains("held frames: 1") {
            break;
        }
        assert!(Instant::now() < deadline, "the call was never held");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Inject the answer into the client's own stream (its GET), then drop
    // the held request: the client takes the injected answer.
    let board: Value = serde_json::from_slice(&intercept(&["--json", "list"]).stdout).unwrap();
    let held: Value = serde_json::from_str(board["board"]["held"][0]["bytes"].as_str().unwrap()).unwrap();
    let answer = serde_json::json!({
        "jsonrpc": "2.0",
        "id": held["id"],
        "result": {"content": [{"type": "text", "text": "injected into the client's stream"}]}
    });
    let out = intercept(&["inject", "--to-client", &answer.to_string()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = client.wait_with_output().unwrap();
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(seen["list"]["ok"].is_array(), "tools/list was not held up: {seen}");
    assert_eq!(
        seen["call"]["ok"]["content"][0]["text"], "injected into the client's stream",
        "{seen}"
    );
    assert!(intercept(&["drop", "1"]).status.success());
    // Toward the server, on the client's session: the answer is recorded.
    let out = intercept(&[
        "inject",
        "--to-server",
        r#"{"jsonrpc":"2.0","id":"injected-1","method":"tools/list"}"#,
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let deadline = Instant::now() + T;
    loop {
        let events = capture::load(&capture).unwrap().events;
        let answered = events.iter().any(|e| {
            matches!(e, Event::Frame(f) if f.direction == mcpscope_core::wire::frame::Direction::In
                && String::from_utf8_lossy(&f.raw).contains("\"injected-1\"")
                && String::from_utf8_lossy(&f.raw).contains("\"tools\""))
        });
        if answered {
            assert!(kinds(&events).contains(&TouchKind::Injected));
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no answer to the injected request: {:#?}",
            events.iter().rev().take(8).map(|e| e.summary()).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = proxy.kill();
    let _ = proxy.wait();
}
