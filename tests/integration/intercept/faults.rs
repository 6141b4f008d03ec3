//! Fault rules on the stdio proxy as real clients see them (the SDK
//! clients, the Inspector's CLI), and rules that are refused or match nothing.

use super::*;

fn everything_entry() -> String {
    need(repo().join("tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
        .display()
        .to_string()
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

/// A client that writes its requests and closes its stdin at once: with a
/// gate, every line still reaches the server before its stdin is closed.
#[test]
fn lines_sent_just_before_the_client_closes_still_reach_the_server() {
    let home = Home::new();
    let mut c = crate::support::mcpscope_command();
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
        let mut c = crate::support::mcpscope_command();
        c.arg("proxy").args(&args).args(["--", "false"]);
        home.apply(&mut c);
        let out = c.output().unwrap();
        assert_eq!(out.status.code(), Some(64), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let rules = home.path("rules.toml");
    std::fs::write(&rules, "[[fault]]\nrule = 'true => nope'\n").unwrap();
    let mut c = crate::support::mcpscope_command();
    c.arg("proxy").arg("--faults").arg(&rules).args(["--", "false"]);
    home.apply(&mut c);
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("fault 1"));
}

/// A rules file that does not parse is refused before the server starts,
/// with the line and column of the mistake and that line shown.
#[test]
fn a_rules_file_that_does_not_parse_names_the_line_and_column() {
    let home = Home::new();
    for (name, text, says, line) in [
        (
            "rules.toml",
            "seed = 1\nfaults = ['true => drop' 'x']\n",
            "not TOML at line 2, column 26: ",
            "faults = ['true => drop' 'x']",
        ),
        (
            "rules.json",
            "{\"faults\": [\n  \"true => drop\"\n  \"x\"]}",
            "not JSON at line 3, column 3: ",
            "  \"x\"]}",
        ),
    ] {
        let rules = home.path(name);
        std::fs::write(&rules, text).unwrap();
        let mut c = crate::support::mcpscope_command();
        c.arg("proxy").arg("--faults").arg(&rules).args(["--", "false"]);
        home.apply(&mut c);
        let out = c.output().unwrap();
        assert_eq!(out.status.code(), Some(64), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("{}: {says}", rules.display())), "{name}: {err}");
        assert!(err.lines().any(|l| l == line), "{name}: the line is shown: {err}");
    }
}

#[test]
fn the_seed_repeats_a_probabilistic_run() {
    let home = Home::new();
    let rules = home.path("rules.json");
    std::fs::write(&rules, r#"{"faults": ["method == \"ping\" => drop p=0.5"]}"#).unwrap();
    let run = |seed: &str| -> Vec<u64> {
        let mut c = crate::support::mcpscope_command();
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
