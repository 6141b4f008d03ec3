//! Breakpoints on the stdio proxy: held frames forwarded, edited, dropped
//! and answered from `mcpscope intercept`, and their timeout.

use super::*;

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
            let mut c = crate::support::mcpscope_command();
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
        let mut c = crate::support::mcpscope_command();
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
