//! The engine against servers that misbehave on purpose.

use crate::support::*;
use mcpscope_core::client::ClientError;
use mcpscope_core::protocol::handshake::{HandshakeOptions, VersionVerdict};
use mcpscope_core::transport::event::Event;
use mcpscope_core::transport::process::ServerSpec;
use mcpscope_core::transport::session::{Session, SessionOptions};
use mcpscope_core::wire::classify::{Anomalies, Kind, Limits};
use mcpscope_core::wire::frame::Direction;
use mcpscope_core::wire::message::RequestId;
use serde_json::json;
use std::time::{Duration, Instant};

fn init(c: &mut mcpscope_core::client::Client) -> mcpscope_core::protocol::handshake::Handshake {
    c.wait_spawned(T).unwrap();
    c.initialize(&HandshakeOptions::default(), T).unwrap().unwrap()
}

#[test]
fn log_line_on_stdout_is_kept_flagged_and_harmless() {
    let (mut c, sink) = client(faulty("stdout-log"));
    let hs = init(&mut c);
    assert_eq!(hs.verdict, VersionVerdict::Accepted);
    let tools = c.request("tools/list", None, T).unwrap();
    assert!(tools.outcome.is_ok());
    c.close();
    let evs = snapshot(&sink);
    let first_in = received(&evs)[0];
    assert_eq!(first_in.raw, b"Server started on stdio");
    assert_eq!(first_in.kind(), Kind::NotJson);
    assert!(first_in.anomalies().contains(Anomalies::NOT_JSON));
}

#[test]
fn invalid_utf8_and_non_jsonrpc_lines() {
    for (mode, check) in [
        ("invalid-utf8", Anomalies::INVALID_UTF8),
        ("not-jsonrpc", Anomalies::NOT_JSON_RPC),
    ] {
        let (mut c, sink) = client(faulty(mode));
        init(&mut c);
        c.request("tools/list", None, T).unwrap();
        c.close();
        let evs = snapshot(&sink);
        let flagged: Vec<_> = received(&evs)
            .into_iter()
            .filter(|f| f.anomalies().contains(check))
            .collect();
        assert!(
            !flagged.is_empty(),
            "{mode}: {:#?}",
            evs.iter().map(describe).collect::<Vec<_>>()
        );
        if mode == "invalid-utf8" {
            assert!(
                flagged[0].raw.windows(2).any(|w| w == b"\xff\xfe"),
                "bytes kept as sent"
            );
        }
    }
}

#[test]
fn malformed_jsonrpc_is_classified() {
    let (mut c, sink) = client(faulty("bad-jsonrpc"));
    init(&mut c);
    let _ = c.request("tools/list", None, T);
    c.pump_for(Duration::from_millis(300));
    c.close();
    let evs = snapshot(&sink);
    let all = received(&evs).iter().fold(Anomalies::empty(), |a, f| a | f.anomalies());
    for flag in [
        Anomalies::MISSING_JSONRPC,
        Anomalies::WRONG_JSONRPC,
        Anomalies::RESULT_AND_ERROR,
        Anomalies::NOTIFICATION_WITH_ID,
        Anomalies::BATCH,
    ] {
        assert!(all.contains(flag), "missing {flag:?} in {all:?}");
    }
}

#[test]
fn crlf_endings_are_flagged_but_understood() {
    let (mut c, sink) = client(faulty("crlf"));
    let hs = init(&mut c);
    assert_eq!(hs.verdict, VersionVerdict::Accepted);
    c.close();
    let evs = snapshot(&sink);
    let r = received(&evs)[0];
    assert_eq!(r.kind(), Kind::Result);
    assert!(r.anomalies().contains(Anomalies::CRLF));
    assert!(!r.raw.ends_with(b"\r"));
}

#[test]
fn partial_last_line_and_exit() {
    let (mut c, sink) = client(faulty("partial-eof"));
    init(&mut c);
    let err = c.request("tools/list", None, T).unwrap_err();
    assert!(matches!(err, ClientError::ServerExited { .. }), "{err}");
    c.close();
    let evs = snapshot(&sink);
    let partial = received(&evs)
        .into_iter()
        .find(|f| f.anomalies().contains(Anomalies::PARTIAL_AT_EOF))
        .expect("partial line kept");
    assert_eq!(partial.raw, br#"{"jsonrpc":"2.0","id":2,"res"#);
}

#[test]
fn oversize_line_is_kept_whole() {
    let options = SessionOptions {
        limits: Limits {
            max_line_bytes: 1024 * 1024,
            ..Limits::default()
        },
        ..quick()
    };
    let (mut c, _sink) = client_with(faulty("big-line"), options);
    init(&mut c);
    let r = c
        .request(
            "tools/call",
            Some(json!({"name":"echo","arguments":{"message":"x"}})),
            T,
        )
        .unwrap();
    assert!(r.frame.raw.len() > 5_000_000);
    assert!(r.frame.anomalies().contains(Anomalies::OVERSIZE));
    let text = r.outcome.unwrap()["content"][0]["text"].as_str().unwrap().len();
    assert_eq!(text, 5_000_000);
    c.close();
}

#[test]
fn crash_reports_exit_code_and_traceback() {
    let (mut c, sink) = client(faulty("crash"));
    init(&mut c);
    let err = c.request("tools/list", None, T).unwrap_err();
    match err {
        ClientError::ServerExited { status, .. } => assert_eq!(status.code, Some(3)),
        other => panic!("{other}"),
    }
    c.close();
    assert!(stderr_text(&snapshot(&sink)).contains("Traceback"));
}

#[test]
#[cfg(unix)]
fn hang_times_out_cancels_and_escalates_to_sigkill() {
    let (mut c, sink) = client(faulty("hang"));
    let pid = c.wait_spawned(T).unwrap();
    c.initialize(&HandshakeOptions::default(), T).unwrap().unwrap();
    let started = Instant::now();
    let err = c.request("tools/list", None, Duration::from_millis(300)).unwrap_err();
    assert!(matches!(err, ClientError::TimedOut { .. }), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
    let status = c.close().expect("exit status");
    assert_eq!(status.signal, Some(libc::SIGKILL), "SIGTERM is ignored by this server");
    assert!(wait_group_gone(pid, Duration::from_secs(2)));
    let evs = snapshot(&sink);
    assert!(
        evs.iter()
            .any(|e| matches!(e, Event::TimedOut { timed_out, .. } if timed_out.method == "tools/list"))
    );
    let cancel = sent(&evs)
        .into_iter()
        .find(|f| f.class.method.as_deref() == Some("notifications/cancelled"))
        .expect("a cancellation after the timeout");
    assert!(cancel.text().contains(r#""requestId":2"#), "{}", cancel.text());
    let notes: Vec<_> = evs
        .iter()
        .filter_map(|e| match e {
            Event::Note { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert!(notes.iter().any(|n| n.contains("SIGTERM")), "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("SIGKILL")), "{notes:?}");
}

#[test]
fn server_that_never_reads_stdin_cannot_freeze_the_session() {
    let session = Session::start(faulty("no-read"), quick());
    let first = collect_until(&session, T, |e| matches!(e, Event::Spawned { .. }));
    let pid = pid_of(&first);
    let big = format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/x","params":{{"pad":"{}"}}}}"#,
        "y".repeat(64 * 1024)
    );
    let started = Instant::now();
    for _ in 0..1200 {
        session.send_raw(big.clone());
    }
    let evs = collect_until(&session, T, |e| matches!(e, Event::WriteFailed { .. }));
    assert!(started.elapsed() < Duration::from_secs(10), "sending never blocks");
    match evs.last() {
        Some(Event::WriteFailed { error, .. }) => assert!(error.contains("not reading its stdin"), "{error}"),
        other => panic!("{other:?}"),
    }
    let mut session = session;
    let rest = session.close();
    assert!(rest.iter().any(|e| matches!(e, Event::Closed { .. })));
    assert!(wait_group_gone(pid, Duration::from_secs(2)));
}

#[test]
fn out_of_order_responses_interleaved_requests_unknown_and_duplicate_ids() {
    let session = Session::start(faulty("out-of-order"), quick());
    let init_id = session.request("initialize", Some(HandshakeOptions::default().params()));
    collect_until(
        &session,
        T,
        |e| matches!(e, Event::Frame(f) if f.class.id.as_ref() == Some(&init_id) && f.direction == Direction::In),
    );
    session.notify("notifications/initialized", None);
    let a = session.request(
        "tools/call",
        Some(json!({"name":"echo","arguments":{"message":"first"}})),
    );
    let b = session.request(
        "tools/call",
        Some(json!({"name":"echo","arguments":{"message":"second"}})),
    );
    let mut answered = 0;
    let evs = collect_until(&session, T, |e| {
        if let Event::Frame(f) = e
            && f.direction == Direction::In
            && f.class.kind == Kind::Result
            && f.link.is_some()
            && !f.anomalies().contains(Anomalies::DUPLICATE_RESPONSE)
        {
            answered += 1;
        }
        answered >= 2
    });
    let more = collect_until(
        &session,
        Duration::from_secs(3),
        |e| matches!(e, Event::Frame(f) if f.anomalies().contains(Anomalies::DUPLICATE_RESPONSE)),
    );
    let all: Vec<Event> = evs.into_iter().chain(more).collect();
    let results: Vec<_> = received(&all)
        .into_iter()
        .filter(|f| f.class.kind == Kind::Result && f.link.is_some() && f.class.id != Some(init_id.clone()))
        .collect();
    // Each response is tied to the request with its id, whatever the order.
    for r in &results {
        let req = sent(&all)
            .into_iter()
            .find(|s| s.seq == r.link.as_ref().unwrap().request_seq)
            .unwrap();
        assert_eq!(req.class.id, r.class.id);
        assert_eq!(r.link.as_ref().unwrap().method, "tools/call");
    }
    let order: Vec<_> = results
        .iter()
        .filter(|r| !r.anomalies().contains(Anomalies::DUPLICATE_RESPONSE))
        .map(|r| r.class.id.clone().unwrap())
        .collect();
    assert_eq!(order, vec![b.clone(), a.clone()], "answered in reverse order");
    let flags = received(&all)
        .iter()
        .fold(Anomalies::empty(), |acc, f| acc | f.anomalies());
    assert!(flags.contains(Anomalies::UNKNOWN_RESPONSE_ID), "{flags:?}");
    assert!(flags.contains(Anomalies::DUPLICATE_RESPONSE), "{flags:?}");
    // Interleaved traffic before the responses.
    let first_result_seq = results.iter().map(|r| r.seq).min().unwrap();
    let before: Vec<_> = received(&all)
        .into_iter()
        .filter(|f| f.seq < first_result_seq)
        .collect();
    assert!(
        before
            .iter()
            .any(|f| f.class.method.as_deref() == Some("notifications/message"))
    );
    assert!(
        before
            .iter()
            .any(|f| f.class.kind == Kind::Request && f.class.method.as_deref() == Some("roots/list"))
    );
}

#[test]
fn version_counter_offer_and_unsupported_answer() {
    let (mut c, _) = client(faulty("counter-offer"));
    c.wait_spawned(T).unwrap();
    let hs = c.initialize(&HandshakeOptions::default(), T).unwrap().unwrap();
    assert_eq!(hs.verdict, VersionVerdict::CounterOffer);
    assert_eq!(hs.version(), Some("2024-11-05"));
    c.close();

    let (mut c, _) = client(faulty("bogus-version"));
    c.wait_spawned(T).unwrap();
    let hs = c.initialize(&HandshakeOptions::default(), T).unwrap().unwrap();
    assert_eq!(hs.verdict, VersionVerdict::Unsupported);
    c.close();

    // An unknown version offered on purpose is echoed by this server.
    let (mut c, _) = client(faulty("normal"));
    c.wait_spawned(T).unwrap();
    let offer = HandshakeOptions {
        protocol_version: "2099-01-01".into(),
        ..HandshakeOptions::default()
    };
    let hs = c.initialize(&offer, T).unwrap().unwrap();
    assert_eq!(hs.answered.as_deref(), Some("2099-01-01"));
    assert_eq!(hs.verdict, VersionVerdict::Unsupported);
    c.close();
}

#[test]
fn handshake_enforcement_and_error_kinds() {
    let (mut c, _) = client(faulty("enforce"));
    c.wait_spawned(T).unwrap();
    let early = c.request("tools/list", None, T).unwrap();
    let e = early.outcome.unwrap_err();
    assert_eq!(e.code, -32600);
    c.close();

    let (mut c, _) = client(faulty("tool-error"));
    init(&mut c);
    let r = c
        .request(
            "tools/call",
            Some(json!({"name":"echo","arguments":{"message":"x"}})),
            T,
        )
        .unwrap();
    assert!(r.is_tool_error());
    assert_eq!(
        r.frame.kind(),
        Kind::Result,
        "a tool failure is a result, not a protocol error"
    );
    let r = c.request("nope", None, T).unwrap();
    assert_eq!(r.frame.kind(), Kind::Error);
    assert_eq!(r.outcome.unwrap_err().code, -32601);
    c.close();
}

#[test]
fn server_ping_is_answered() {
    let (mut c, sink) = client(faulty("ping"));
    init(&mut c);
    c.pump_for(Duration::from_millis(500));
    c.close();
    let evs = snapshot(&sink);
    let ping = received(&evs)
        .into_iter()
        .find(|f| f.class.method.as_deref() == Some("ping"))
        .expect("server pinged");
    let answer = sent(&evs)
        .into_iter()
        .find(|f| f.class.kind == Kind::Result && f.class.id == ping.class.id)
        .expect("ping answered");
    assert_eq!(answer.link.as_ref().unwrap().request_seq, ping.seq);
}

#[test]
fn grandchildren_are_terminated_with_the_group() {
    let (mut c, _) = client(faulty("grandchild"));
    let pid = init_pid(&mut c);
    c.close();
    assert!(
        wait_group_gone(pid, Duration::from_secs(3)),
        "no process of the group may survive"
    );
}

fn init_pid(c: &mut mcpscope_core::client::Client) -> u32 {
    let pid = c.wait_spawned(T).unwrap();
    c.initialize(&HandshakeOptions::default(), T).unwrap().unwrap();
    pid
}

#[test]
fn dropping_a_session_abruptly_leaves_no_process() {
    let session = Session::start(faulty("hang"), quick());
    let evs = collect_until(&session, T, |e| matches!(e, Event::Spawned { .. }));
    let pid = pid_of(&evs);
    drop(session);
    assert!(!group_alive(pid), "drop waits until the group is gone");
}

#[test]
fn spawn_failure_names_the_program() {
    let spec = ServerSpec::new("definitely-not-a-command-xyz", ["a"]);
    let session = Session::start(spec, quick());
    let evs = collect_until(&session, T, |e| matches!(e, Event::Closed { .. }));
    let err = evs
        .iter()
        .find_map(|e| match e {
            Event::SpawnFailed { error, .. } => Some(error.to_string()),
            _ => None,
        })
        .unwrap();
    assert!(
        err.starts_with("definitely-not-a-command-xyz: not found in PATH"),
        "{err}"
    );
}

#[test]
fn raw_lines_are_sent_as_is() {
    let session = Session::start(faulty("normal"), quick());
    session.send_raw(r#"{"jsonrpc":"2.0","id":"x","method":"ping"}"#.to_owned() + "\n" + "this is not json");
    let evs = collect_until(
        &session,
        T,
        |e| matches!(e, Event::Frame(f) if f.direction == Direction::In && f.class.error_code == Some(-32700)),
    );
    let out = sent(&evs);
    assert_eq!(out.len(), 2, "an embedded newline makes two lines on the wire");
    assert_eq!(out[0].class.kind, Kind::Request);
    assert_eq!(out[1].class.kind, Kind::NotJson);
    assert!(
        received(&evs)
            .iter()
            .any(|f| f.class.id == Some(RequestId::String("x".into())))
    );
}

#[test]
fn env_and_working_directory_reach_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let script = r#"printf '{"jsonrpc":"2.0","method":"notifications/message","params":{"v":"%s","cwd":"%s"}}\n' "$MCPSCOPE_TEST_VAR" "$(pwd)""#;
    let spec = ServerSpec {
        env: vec![("MCPSCOPE_TEST_VAR".into(), "hello there".into())],
        cwd: Some(dir.path().to_owned()),
        ..ServerSpec::new("sh", ["-c", script])
    };
    let session = Session::start(spec, quick());
    let evs = collect_until(&session, T, |e| matches!(e, Event::Frame(_)));
    let v = received(&evs)[0].json().unwrap();
    assert_eq!(v["params"]["v"], "hello there");
    assert_eq!(
        std::fs::canonicalize(v["params"]["cwd"].as_str().unwrap()).unwrap(),
        std::fs::canonicalize(dir.path()).unwrap()
    );
}

#[test]
fn cancel_sends_notification_and_flags_late_response() {
    let session = Session::start(faulty("out-of-order"), quick());
    let id = session.request(
        "tools/call",
        Some(json!({"name":"echo","arguments":{"message":"slow"}})),
    );
    session.cancel(id.clone(), Some("user pressed cancel".into()));
    let evs = collect_until(
        &session,
        T,
        |e| matches!(e, Event::Frame(f) if f.direction == Direction::In && f.class.kind == Kind::Result && f.class.id.as_ref() == Some(&id)),
    );
    assert!(
        evs.iter()
            .any(|e| matches!(e, Event::Cancelled { id: c, .. } if *c == id))
    );
    let note = sent(&evs)
        .into_iter()
        .find(|f| f.class.method.as_deref() == Some("notifications/cancelled"))
        .unwrap();
    let v = note.json().unwrap();
    assert_eq!(v["params"]["requestId"], id.to_json());
    assert_eq!(v["params"]["reason"], "user pressed cancel");
    let late = received(&evs).into_iter().last().unwrap();
    assert!(late.anomalies().contains(Anomalies::AFTER_CANCEL));
}

#[test]
fn stderr_flood_is_kept_line_by_line() {
    let (mut c, sink) = client(faulty("stderr-flood"));
    init(&mut c);
    c.pump_for(Duration::from_millis(200));
    c.close();
    let n = snapshot(&sink).iter().filter(|e| matches!(e, Event::Stderr(_))).count();
    assert!(n >= 10_000, "{n}");
}
