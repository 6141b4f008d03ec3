//! Captures written live load back into the same model.

use crate::support::*;
use mcpscope_core::protocol::handshake::HandshakeOptions;
use mcpscope_core::record::capture;
use mcpscope_core::transport::event::Event;
use mcpscope_core::transport::session::SessionOptions;
use serde_json::json;

#[test]
fn live_capture_loads_back_identically() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    let options = SessionOptions {
        capture: Some(path.clone()),
        ..quick()
    };
    let (mut c, sink) = client_with(faulty("stdout-log"), options);
    c.wait_spawned(T).unwrap();
    c.initialize(&HandshakeOptions::default(), T).unwrap().unwrap();
    c.request(
        "tools/call",
        Some(json!({"name":"echo","arguments":{"message":"héllo\nworld"}})),
        T,
    )
    .unwrap();
    c.request("nope", None, T).unwrap();
    c.close();
    let live = snapshot(&sink);
    let loaded = capture::load(&path).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(loaded.header.mode, "session");
    assert!(loaded.header.command_line.contains("faulty_server.py"));
    // Times are stored in microseconds: compare everything else exactly.
    let strip = |evs: &[Event]| -> Vec<String> {
        evs.iter()
            .map(|e| match e {
                Event::Frame(f) => format!(
                    "F {} {:?} {:?} {:?} {:?} {:?}",
                    f.seq,
                    f.direction,
                    f.raw,
                    f.ending,
                    f.class,
                    f.link.as_ref().map(|l| (l.request_seq, &l.method))
                ),
                Event::Stderr(s) => format!("S {} {:?}", s.seq, s.raw),
                Event::Spawned { pid, .. } => format!("spawned {pid}"),
                Event::Exited { status, .. } => format!("exited {status}"),
                Event::Note { text, .. } => format!("note {text}"),
                Event::Closed { .. } => "closed".into(),
                other => format!("{other:?}"),
            })
            .collect()
    };
    assert_eq!(strip(&loaded.events), strip(&live));
    assert!(live.len() > 8);
}

#[test]
fn capture_of_a_failed_spawn_is_still_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fail.jsonl");
    let options = SessionOptions {
        capture: Some(path.clone()),
        ..quick()
    };
    let (mut c, _) = client_with(
        mcpscope_core::transport::process::ServerSpec::new("no-such-server-xyz", Vec::<String>::new()),
        options,
    );
    assert!(c.wait_spawned(T).is_err());
    c.close();
    let loaded = capture::load(&path).unwrap();
    assert!(matches!(loaded.events[0], Event::SpawnFailed { .. }));
}
