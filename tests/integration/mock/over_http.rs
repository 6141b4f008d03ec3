//! The mock over Streamable HTTP (`mcpscope mock CAPTURE --listen
//! 127.0.0.1:0`): results, progress on the stream, sessions, local rules,
//! refused addresses and server-initiated requests.

use super::*;

/// The JSON messages of an SSE body, one per `data:` line.
fn sse_messages(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| serde_json::from_str(d.trim()).unwrap())
        .collect()
}

#[test]
fn http_mock_gives_mcpscope_call_the_recorded_result_in_both_eras() {
    let dir = tempfile::tempdir().unwrap();
    let legacy = dir.path().join("legacy.jsonl");
    let args = ["--tool-name", "add", "--tool-arg", "a=2", "--tool-arg", "b=3"];
    let recorded = record(&legacy, &args, &py_server());
    let mock = HttpMock::start(&[legacy.to_str().unwrap()]);
    assert!(mock.url.ends_with("/mcp"), "{}", mock.url);
    assert_eq!(call_over_http(&mock.url, &args), recorded);
    // A second client gets a session of its own, from the recording's start.
    assert_eq!(call_over_http(&mock.url, &args), recorded);

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
    let mock = HttpMock::start(&[modern.to_str().unwrap()]);
    assert_eq!(call_over_http(&mock.url, &args), recorded, "{}", mock.stderr());
}

#[test]
fn python_and_typescript_sdk_clients_complete_a_session_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let cap = py_echo_capture(dir.path());
    let before = std::fs::read(&cap).unwrap();
    let live = py_server();
    let live: Vec<String> = std::iter::once(live.program.clone()).chain(live.args.clone()).collect();
    let mock = HttpMock::start(&[cap.to_str().unwrap()]);
    for (program, script) in [
        (python(), "tests/clients/py_client.py"),
        ("node".to_string(), "tests/clients/ts_client.mjs"),
    ] {
        let real = run_client(&program, &client_args(script, &live));
        let path = repo().join(script).display().to_string();
        let served = run_client(&program, &[path, "http".into(), mock.url.clone()]);
        assert_eq!(served, real, "{script}: {}", mock.stderr());
        assert_eq!(served["echo"]["content"][0]["text"], HELLO);
    }
    let err = mock.stderr();
    assert!(!err.contains("no recorded answer"), "{err}");
    assert!(!err.contains("refused"), "{err}");
    assert_eq!(std::fs::read(&cap).unwrap(), before, "the capture is never modified");
}

#[test]
fn http_mock_streams_progress_and_keeps_the_session_and_local_rules() {
    let dir = tempfile::tempdir().unwrap();
    let cap = everything_progress_capture(dir.path());
    let mock = HttpMock::start(&[cap.to_str().unwrap()]);
    let a = mock.addr.as_str();

    // initialize: JSON, with a session id.
    let (status, head, body) = http(a, "POST", &[], INIT);
    assert_eq!(status, 200, "{head}{body}");
    assert!(
        header(&head, "content-type").unwrap().starts_with("application/json"),
        "{head}"
    );
    let sid = header(&head, "mcp-session-id").expect("a session id").to_owned();
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["id"], "i");
    let with_sid = [("Mcp-Session-Id", sid.as_str())];
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert_eq!(http(a, "POST", &with_sid, initialized).0, 202);

    // Progress before the answer: an SSE stream, one event per message.
    let (status, head, body) = http(a, "POST", &with_sid, LONG_CALL);
    assert_eq!(status, 200, "{head}{body}");
    assert!(
        header(&head, "content-type").unwrap().starts_with("text/event-stream"),
        "{head}"
    );
    let events = sse_messages(&body);
    assert_eq!(events.len(), 4, "{body}");
    for p in &events[..3] {
        assert_eq!(p["method"], "notifications/progress");
        assert_eq!(p["params"]["progressToken"], "live");
    }
    assert_eq!(events[3]["id"], 42);
    assert!(
        events[3]["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("completed")
    );

    // Session rules: none is 400, an unknown one 404, DELETE ends it.
    let list = r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#;
    let (status, _, body) = http(a, "POST", &[], list);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("Mcp-Session-Id"), "{body}");
    assert_eq!(http(a, "POST", &[("Mcp-Session-Id", "nope")], list).0, 404);
    assert_eq!(http(a, "GET", &[], "").0, 405, "no stream without a session");
    assert_eq!(http(a, "DELETE", &with_sid, "").0, 200);
    assert_eq!(http(a, "POST", &with_sid, list).0, 404, "the session ended");

    // DNS rebinding: a non-local Host or Origin is 403; two Hosts are 400.
    let (status, _, body) = http(a, "POST", &[("Host", "evil.example")], INIT);
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("not local"), "{body}");
    assert_eq!(http(a, "POST", &[("Origin", "https://evil.example")], INIT).0, 403);
    let two_hosts = [("Host", "127.0.0.1"), ("Host", "localhost")];
    assert_eq!(http(a, "POST", &two_hosts, INIT).0, 400);
    assert_eq!(http(a, "POST", &[], "not json").0, 400);
    // The mock's stderr is read by a thread of this test: the note may
    // arrive a moment after the answer did.
    let note = "refused POST /mcp: Host \"evil.example\"";
    crate::hostile::wait_until(Duration::from_secs(10), note, || mock.stderr().contains(note));
}

#[test]
fn http_mock_refuses_a_port_in_use_and_a_non_loopback_address() {
    let dir = tempfile::tempdir().unwrap();
    let cap = py_echo_capture(dir.path());
    let cap_s = cap.to_str().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = mcpscope(&["mock", cap_s, "--listen", &addr]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(64), "{err}");
    assert!(err.contains(&addr) && err.contains("already in use"), "{err}");
    assert_eq!(err.lines().count(), 1, "one clear line: {err}");

    let out = mcpscope(&["mock", cap_s, "--listen", "0.0.0.0:0"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(64), "{err}");
    assert!(
        err.contains("not a loopback address") && err.contains("--listen-any"),
        "{err}"
    );
}

#[test]
fn http_mock_replays_server_requests_on_the_stream_and_answers_as_recorded() {
    let dir = tempfile::tempdir().unwrap();
    // Sampling during the call, roots/list after it: mcpscope's client
    // answers both over HTTP as it did over stdio.
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
    let mock = HttpMock::start(&[cap.to_str().unwrap()]);
    assert_eq!(call_over_http(&mock.url, &args), recorded);
    let err = mock.stderr();
    assert!(!err.contains("did not answer") && !err.contains("differently"), "{err}");
    drop(mock);

    // A capture recorded over Streamable HTTP (through a first mock) keeps
    // which answers came as SSE: served again, such an answer is a stream
    // even when there is no progress to send before it.
    let progress = everything_progress_capture(dir.path());
    let first = HttpMock::start(&[progress.to_str().unwrap()]);
    let over_http = dir.path().join("over-http.jsonl");
    let params = r#"{"name":"trigger-long-running-operation","arguments":{"duration":1,"steps":3},"_meta":{"progressToken":"p"}}"#;
    let cap_s = over_http.to_str().unwrap();
    call_over_http(
        &first.url,
        &["--method", "tools/call", "--params", params, "--capture", cap_s],
    );
    drop(first);
    let second = HttpMock::start(&[cap_s]);
    let a = second.addr.as_str();
    let (_, head, _) = http(a, "POST", &[], INIT);
    let sid = header(&head, "mcp-session-id").unwrap().to_owned();
    let no_token = r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"trigger-long-running-operation","arguments":{"duration":1,"steps":3}}}"#;
    let (status, head, body) = http(a, "POST", &[("Mcp-Session-Id", &sid)], no_token);
    assert_eq!(status, 200, "{body}");
    assert!(
        header(&head, "content-type").unwrap().starts_with("text/event-stream"),
        "{head}"
    );
    let events = sse_messages(&body);
    assert_eq!(events.len(), 1, "no progress without a token, the answer alone: {body}");
    assert_eq!(events[0]["id"], 9);
}
