use super::har::sse_data;
use super::*;

#[test]
fn formats_are_recognised_from_their_content() {
    assert_eq!(
        detect(r#"{"session_id":"s","seq":1,"ts":"2026-08-20T10:00:00Z","direction":"c2s","raw":{}}"#),
        Some(Format::Mcpsnoop)
    );
    assert_eq!(
        detect("[\n  {\"id\": \"1\", \"direction\": \"request\"}\n]"),
        Some(Format::Inspector)
    );
    assert_eq!(
        detect(r#"{"log": {"version": "1.2", "creator": {}, "entries": []}}"#),
        Some(Format::Har)
    );
    assert_eq!(
        detect(r#"{"version": "1.0", "metadata": {}, "interactions": []}"#),
        Some(Format::McpRecorder)
    );
    // A HAR whose `log` comes after a large first member.
    let late = format!(r#"{{"pad": "{}", "log": {{"entries": []}}}}"#, "x".repeat(5000));
    assert_eq!(detect(&late), Some(Format::Har));
    assert_eq!(detect("\u{feff}{\"interactions\": []}"), Some(Format::McpRecorder));
    assert_eq!(detect("hello"), None);
    assert_eq!(
        detect(r#"{"format":"mcpscope-capture"}"#),
        None,
        "mcpscope's own is opened, not imported"
    );
}

#[test]
fn an_event_stream_gives_each_events_data() {
    assert_eq!(
        sse_data("event: message\ndata: {\"a\":1}\n\n: comment\ndata: line1\ndata: line2\n\n"),
        ["{\"a\":1}", "line1\nline2"]
    );
}

#[test]
fn imported_times_are_checked_and_never_wrap() {
    let at = At {
        format: Format::Inspector,
        entry: 4,
        field: &|| "[4].duration".to_owned(),
    };
    let t0 = 1_787_000_000_000;
    assert_eq!(at.later(t0, None).unwrap(), t0);
    assert_eq!(at.later(t0, Some(&Value::Null)).unwrap(), t0);
    assert_eq!(at.later(t0, Some(&serde_json::json!(12.9))).unwrap(), t0 + 12);
    assert_eq!(at.later(t0, Some(&serde_json::json!(-0.0))).unwrap(), t0);
    for bad in [
        serde_json::json!(1e308),
        serde_json::json!(-1),
        serde_json::json!(u64::MAX),
        serde_json::json!("NaN"),
        serde_json::json!("5"),
        serde_json::json!(MAX_UNIX_MS - t0 + 1),
    ] {
        let e = at.later(t0, Some(&bad)).unwrap_err();
        assert!(
            matches!(&e, ImportError::OutOfRange { entry: 4, field, .. } if field == "[4].duration"),
            "{bad}: {e}"
        );
    }
    assert_eq!(
        at.later(t0, Some(&serde_json::json!(MAX_UNIX_MS - t0))).unwrap(),
        MAX_UNIX_MS
    );
}

#[test]
fn a_cassette_whose_latencies_add_up_past_the_year_9999_is_refused() {
    let cassette = format!(
        r#"{{"version": "1.0", "metadata": {{"recorded_at": "2026-01-01T00:00:00Z"}}, "interactions": [
                {{"type": "jsonrpc_request", "request": {{"jsonrpc": "2.0", "id": 1, "method": "ping"}}, "response": {{"jsonrpc": "2.0", "id": 1, "result": {{}}}}, "latency_ms": {half}}},
                {{"type": "jsonrpc_request", "request": {{"jsonrpc": "2.0", "id": 2, "method": "ping"}}, "response": {{"jsonrpc": "2.0", "id": 2, "result": {{}}}}, "latency_ms": {half}}}]}}"#,
        half = MAX_UNIX_MS / 2 + 1
    );
    let e = parse(Format::McpRecorder, cassette.as_bytes()).unwrap_err();
    assert!(matches!(e, ImportError::OutOfRange { entry: 1, .. }), "{e}");
    // A latency in fractions of a millisecond counts (it was read as 0 before).
    let ok = r#"{"version": "1.0", "interactions": [
            {"request": {"jsonrpc": "2.0", "id": 1, "method": "ping"}, "response": {"jsonrpc": "2.0", "id": 1, "result": {}}, "latency_ms": 7.5}]}"#;
    let i = parse(Format::McpRecorder, ok.as_bytes()).unwrap();
    let times: Vec<u64> = i.sessions[0].messages.iter().map(|m| m.unix_ms).collect();
    assert_eq!(times, [0, 7]);
}

#[test]
fn entries_are_read_one_at_a_time_and_kept_compact() {
    let text = r#"[
            {"timestamp": "2026-08-20T10:00:00.005Z", "direction": "request", "message": {"jsonrpc": "2.0", "id": 2, "method": "ping"},
             "response": {"jsonrpc": "2.0", "id": 2, "result": {}}, "duration": 1},
            {"timestamp": "2026-08-20T10:00:00.000Z", "direction": "request", "message": {"jsonrpc": "2.0", "id": 1, "method": "ping"},
             "response": {"jsonrpc": "2.0", "id": 1, "result": {}}, "duration": 10},
            {"no": "timestamp"}
        ]"#;
    let i = parse(Format::Inspector, text.as_bytes()).unwrap();
    let got: Vec<(u64, String)> = i.sessions[0]
        .messages
        .iter()
        .map(|m| (m.unix_ms % 1000, String::from_utf8_lossy(m.bytes).into_owned()))
        .collect();
    assert_eq!(
        got,
        [
            (0, r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.to_owned()),
            (5, r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#.to_owned()),
            (6, r#"{"jsonrpc":"2.0","id":2,"result":{}}"#.to_owned()),
            (10, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_owned()),
        ]
    );
    assert_eq!(i.sessions[0].header.started_unix_ms % 1000, 0);
    assert!(i.notes.iter().any(|n| n.contains("1 entr(ies)")), "{:?}", i.notes);
    let e = parse(Format::Inspector, &b"{\"not\": \"an array\"}"[..]).unwrap_err();
    assert!(e.to_string().contains("not an array"), "{e}");
    let e = parse(
        Format::Har,
        &br#"{"log": {"entries": [{"startedDateTime": "2026-08-20T10:00:00Z"}, tru"#[..],
    )
    .unwrap_err();
    assert!(matches!(e, ImportError::NotJson { .. }), "{e}");
}

#[test]
fn a_cassette_of_another_major_version_is_refused() {
    let e = parse(
        Format::McpRecorder,
        r#"{"version": "2.0", "interactions": []}"#.as_bytes(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("only 1.x"), "{e}");
}
