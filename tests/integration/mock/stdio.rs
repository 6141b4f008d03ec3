//! The mock over stdio: recorded results for SDK clients and `mcpscope call`,
//! progress, matching, appended captures, `--check`, bad input, closed pipes
//! and server-initiated requests.

use super::*;

/// The mock fed these lines (then stdin closed): (stdout lines as JSON, stderr, status).
fn mock_io(args: &[&str], lines: &[&str]) -> (Vec<Value>, String, Option<i32>) {
    let mut child = crate::support::mcpscope_command()
        .arg("mock")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for l in lines {
        writeln!(stdin, "{l}").unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stdout = text(&out.stdout);
    assert!(stdout.is_empty() || stdout.ends_with('\n'));
    let values = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not one JSON per line: {l}: {e}")))
        .collect();
    (values, text(&out.stderr), out.status.code())
}

#[test]
fn python_and_typescript_sdk_clients_get_the_recorded_session_from_the_mock() {
    let dir = tempfile::tempdir().unwrap();
    let cap = py_echo_capture(dir.path());
    let before = std::fs::read(&cap).unwrap();
    let live = py_server();
    let live: Vec<String> = std::iter::once(live.program.clone()).chain(live.args.clone()).collect();
    let mocked = vec![bin().display().to_string(), "mock".into(), cap.display().to_string()];
    for (program, script) in [
        (python(), "tests/clients/py_client.py"),
        ("node".to_string(), "tests/clients/ts_client.mjs"),
    ] {
        let real = run_client(&program, &client_args(script, &live));
        let served = run_client(&program, &client_args(script, &mocked));
        assert_eq!(served, real, "{script}");
        assert_eq!(served["echo"]["content"][0]["text"], HELLO);
    }
    assert_eq!(std::fs::read(&cap).unwrap(), before, "the capture is never modified");
}

#[test]
fn mcpscope_call_against_the_mock_gets_the_recorded_result_in_both_eras() {
    let dir = tempfile::tempdir().unwrap();
    let legacy = dir.path().join("legacy.jsonl");
    let args = ["--tool-name", "add", "--tool-arg", "a=2", "--tool-arg", "b=3"];
    let recorded = record(&legacy, &args, &py_server());
    assert_eq!(call_the_mock(&legacy, &args), recorded);

    let modern = dir.path().join("modern.jsonl");
    let args = [
        "--era",
        "modern",
        "--tool-name",
        "add",
        "--tool-arg",
        "a=2",
        "--tool-arg",
        "b=3",
    ];
    let recorded = record(&modern, &args, &py_modern_server());
    assert!(recorded.contains('5'), "{recorded}");
    assert_eq!(call_the_mock(&modern, &args), recorded);
    let check = mcpscope(&["mock", "--check", modern.to_str().unwrap()]);
    let report = text(&check.stdout);
    assert_eq!(check.status.code(), Some(0), "{report}");
    assert!(
        report.contains("modern era") && report.contains("server/discover"),
        "{report}"
    );
}

#[test]
fn progress_is_replayed_before_the_answer_with_the_live_token_and_recorded_timing() {
    let dir = tempfile::tempdir().unwrap();
    let cap = everything_progress_capture(dir.path());
    let cap_s = cap.to_str().unwrap();
    // server-everything announces `tools/list_changed` on its own, recorded
    // or not depending on timing: the replay is judged without it.
    let volunteered = |out: Vec<Value>| -> Vec<Value> {
        out.into_iter()
            .filter(|m| m["method"] != "notifications/tools/list_changed")
            .collect()
    };
    let (out, err, code) = mock_io(&[cap_s], &[INIT, LONG_CALL]);
    let out = volunteered(out);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.len(), 5, "{out:?}");
    assert_eq!(out[0]["id"], "i");
    for p in &out[1..4] {
        assert_eq!(p["method"], "notifications/progress");
        assert_eq!(p["params"]["progressToken"], "live");
    }
    assert_eq!(out[4]["id"], 42);
    assert!(
        out[4]["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("completed")
    );

    // Recorded timing: the server took about a second over its three steps.
    let started = Instant::now();
    let (out, err, _) = mock_io(&["--timing", "recorded", cap_s], &[INIT, LONG_CALL]);
    let recorded = started.elapsed();
    assert_eq!(volunteered(out).len(), 5, "{err}");
    assert!(recorded >= Duration::from_millis(900), "{recorded:?}");
    let started = Instant::now();
    mock_io(&["--timing", "recorded", "--speed", "4", cap_s], &[INIT, LONG_CALL]);
    let faster = started.elapsed();
    assert!(faster < recorded, "{faster:?} vs {recorded:?}");
    eprintln!("recorded timing: {recorded:?}; at --speed 4: {faster:?}");
}

#[test]
fn unmatched_and_repeated_requests() {
    let dir = tempfile::tempdir().unwrap();
    let cap = py_echo_capture(dir.path());
    let cap_s = cap.to_str().unwrap();
    let echo = |id: u32, msg: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"message":"{msg}"}}}}}}"#
        )
    };
    let (a, b, c) = (echo(1, HELLO), echo(2, HELLO), echo(3, "bye"));
    let lines = [
        INIT,
        a.as_str(),
        b.as_str(),
        c.as_str(),
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/lst"}"#,
    ];
    let (out, err, code) = mock_io(&[cap_s], &lines);
    assert_eq!(code, Some(0));
    assert_eq!(out[1]["result"], out[2]["result"], "the last answer again");
    assert_eq!(out[3]["id"], 3);
    let msg = out[3]["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("bye") && msg.contains(HELLO),
        "names what was asked and the nearest: {msg}"
    );
    let msg = out[4]["error"]["message"].as_str().unwrap();
    assert_eq!(out[4]["error"]["code"], -32601);
    assert!(msg.contains("tools/lst") && msg.contains("tools/list"), "{msg}");
    assert_eq!(
        err.lines().filter(|l| l.contains("no recorded answer")).count(),
        2,
        "{err}"
    );

    let (out, _, _) = mock_io(&["--exhausted", "error", cap_s], &lines[..3]);
    assert!(out[1]["result"].is_object());
    assert!(
        out[2]["error"]["message"].as_str().unwrap().contains("exhausted"),
        "{:?}",
        out[2]
    );

    let (out, _, _) = mock_io(&["--only", "tools/list", cap_s], &lines[..2]);
    assert!(out[0]["result"].is_object(), "the handshake is always served");
    assert!(out[1]["error"].is_object(), "{:?}", out[1]);
    let (out, _, _) = mock_io(&["--only", r#"method == "tools/call""#, cap_s], &lines[..2]);
    assert!(out[1]["result"].is_object(), "{:?}", out[1]);
    // A time range of the capture: the session lasted well under 1000 s.
    let (out, _, _) = mock_io(&["--only", "time >= 0s and time < 1000s", cap_s], &lines[..2]);
    assert!(out[1]["result"].is_object(), "{:?}", out[1]);
    let (out, _, _) = mock_io(&["--only", "time >= 1000s", cap_s], &lines[..2]);
    assert!(out[0]["result"].is_object(), "the handshake is always served");
    assert!(out[1]["error"].is_object(), "{:?}", out[1]);

    let (out, _, _) = mock_io(&["--match", "sequence", cap_s], &[INIT, a.as_str()]);
    assert!(out[1]["error"].is_object(), "tools/list comes second in the recording");
}

#[test]
fn sessions_of_an_appended_capture() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("two.jsonl");
    record(
        &cap,
        &["--tool-name", "echo", "--tool-arg", "message=first"],
        &py_server(),
    );
    record(
        &cap,
        &["--tool-name", "echo", "--tool-arg", "message=second"],
        &py_server(),
    );
    let cap_s = cap.to_str().unwrap();
    let ask = |m: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"message":"{m}"}}}}}}"#
        )
    };
    let (out, _, _) = mock_io(&[cap_s], &[&ask("second")]);
    assert!(out[0]["result"].is_object(), "the last session by default");
    let (out, _, _) = mock_io(&["--session", "1", cap_s], &[&ask("first")]);
    assert!(out[0]["result"].is_object());
    let (_, err, code) = mock_io(&["--session", "3", cap_s], &[]);
    assert_eq!(code, Some(64), "{err}");
}

#[test]
fn check_says_what_can_be_served_and_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let cap = everything_progress_capture(dir.path());
    let out = mcpscope(&["mock", "--check", cap.to_str().unwrap()]);
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert!(report.contains("can be served: 3 exchange(s)"), "{report}");
    assert!(
        report.contains("notifications/progress") && report.contains("legacy era"),
        "{report}"
    );

    // Only a request that was never answered, and a line that is not JSON.
    let header = std::fs::read_to_string(&cap)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_owned();
    let lonely = dir.path().join("lonely.jsonl");
    std::fs::write(
        &lonely,
        format!(
            "{header}\n{}\n{}\n",
            r#"{"t_us":1,"seq":0,"dir":"out","raw":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}","eol":"lf"}"#,
            r#"{"t_us":2,"seq":1,"dir":"in","raw":"starting up...","eol":"lf"}"#
        ),
    )
    .unwrap();
    let out = mcpscope(&["mock", "--check", lonely.to_str().unwrap()]);
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(
        report.contains("never answered") && report.contains("not JSON"),
        "{report}"
    );
    let (_, err, code) = mock_io(&[lonely.to_str().unwrap()], &[]);
    assert_eq!(code, Some(4), "nothing to serve: {err}");
    assert!(err.contains("nothing can be served"), "{err}");
}

#[test]
fn bad_captures_are_refused_with_status_4_and_never_modified() {
    let dir = tempfile::tempdir().unwrap();
    let good = py_echo_capture(dir.path());
    let whole = std::fs::read_to_string(&good).unwrap();
    let header = whole.lines().next().unwrap();
    let cases = [
        ("empty.jsonl", String::new()),
        ("header-only.jsonl", format!("{header}\n")),
        ("foreign.jsonl", "{\"type\":\"log\",\"msg\":\"hello\"}\n".to_owned()),
        ("truncated.jsonl", header[..header.len() / 2].to_owned()),
        ("binary.jsonl", "\u{0}\u{1}garbage".to_owned()),
    ];
    for (name, content) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, &content).unwrap();
        for check in [false, true] {
            let mut args = vec![];
            if check {
                args.push("--check");
            }
            args.push(path.to_str().unwrap());
            let (out, err, code) = mock_io(&args, &[INIT]);
            assert_eq!(code, Some(4), "{name}: {err}");
            assert!(out.is_empty(), "{name}");
            assert_eq!(err.lines().count(), 1, "one clear line: {err}");
            assert!(err.contains(name), "{err}");
        }
        assert_eq!(std::fs::read_to_string(&path).unwrap(), content, "{name} unchanged");
    }
    let (_, err, code) = mock_io(&[dir.path().join("missing.jsonl").to_str().unwrap()], &[]);
    assert_eq!(code, Some(4), "{err}");

    // A capture cut short mid-line (a crash) serves what is whole, with a warning.
    let cut = dir.path().join("cut.jsonl");
    std::fs::write(&cut, &whole[..whole.len() - 20]).unwrap();
    let (out, err, code) = mock_io(&[cut.to_str().unwrap()], &[INIT]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("skipped"), "{err}");
    assert!(out[0]["result"].is_object());
}

#[test]
fn closed_stdin_or_stdout_ends_the_mock_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let cap = py_echo_capture(dir.path());
    let (out, err, code) = mock_io(&[cap.to_str().unwrap()], &[]);
    assert_eq!((out.len(), code), (0, Some(0)), "{err}");

    let mut child = crate::support::mcpscope_command()
        .args(["mock", cap.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().unwrap();
    // The first answer finds stdout closed; the mock stops without reading more.
    let _ = writeln!(stdin, "{INIT}");
    let _ = writeln!(stdin, "{INIT}");
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "the mock did not stop");
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(stdin);
    assert_eq!(status.code(), Some(0));
}

#[test]
fn server_requests_are_replayed_with_fresh_ids_and_the_client_answers_compared() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("sampling.jsonl");
    let args = [
        "--sample-reply",
        "the model says hi",
        "--root",
        "file:///tmp",
        "--tool-name",
        "trigger-sampling-request",
        "--tool-args",
        r#"{"prompt":"say hi","maxTokens":20}"#,
    ];
    let recorded = record(&cap, &args, &everything());
    assert!(recorded.contains("the model says hi"), "{recorded}");
    // mcpscope's own client answers the replayed sampling request as it did when recording.
    assert_eq!(call_the_mock(&cap, &args), recorded);

    let call = r#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"trigger-sampling-request","arguments":{"prompt":"say hi","maxTokens":20}}}"#;
    let other = r#"{"jsonrpc":"2.0","id":1,"result":{"model":"other","role":"assistant","content":{"type":"text","text":"no"}}}"#;
    let (out, err, code) = mock_io(&[cap.to_str().unwrap()], &[INIT, call, other]);
    assert_eq!(code, Some(0), "{err}");
    // (server-everything may send notifications/tools/list_changed after
    // initialize, depending on timing while it was recorded: not what this
    // test is about.)
    let methods: Vec<String> = out
        .iter()
        .filter(|v| v.get("id").is_some())
        .map(|v| v["method"].as_str().map_or(format!("answer {}", v["id"]), String::from))
        .collect();
    assert_eq!(
        methods,
        [r#"answer "i""#, "sampling/createMessage", "answer 42", "roots/list"],
        "{out:?}"
    );
    let id_of = |m: &str| out.iter().find(|v| v["method"] == m).map(|v| v["id"].clone());
    assert_eq!(
        id_of("sampling/createMessage"),
        Some(1.into()),
        "fresh ids for the server's requests"
    );
    assert_eq!(id_of("roots/list"), Some(2.into()));
    assert!(
        err.lines()
            .any(|l| l.contains("answered sampling/createMessage differently")),
        "{err}"
    );
}
