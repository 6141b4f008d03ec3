//! Real frames from the Node and Python SDK servers (tests/vectors, taken from
//! the project's walkthrough) replayed through the engine.

use crate::support::repo;
use mcpscope_core::protocol::handshake::{Handshake, VersionVerdict};
use mcpscope_core::timeline::replay::Replay;
use mcpscope_core::wire::classify::Kind;
use mcpscope_core::wire::frame::{Direction, Frame};
use std::time::Duration;

fn replay(file: &str) -> Vec<Frame> {
    let text = std::fs::read_to_string(repo().join("tests/vectors").join(file)).unwrap();
    let mut r = Replay::new().with_step(Duration::from_millis(10));
    for line in text.lines() {
        match line.strip_prefix("→ ") {
            Some(json) => r.out(json),
            None => r.inn(line.strip_prefix("← ").unwrap()),
        };
    }
    r.frames()
}

fn check(frames: &[Frame]) {
    let kinds: Vec<Kind> = frames.iter().map(|f| f.kind()).collect();
    use Kind::*;
    assert_eq!(
        kinds,
        [
            Request,
            Result,
            Notification,
            Request,
            Result,
            Request,
            Result,
            Request,
            Result,
            Request,
            Error,
            Request,
            Result
        ]
    );
    for f in frames {
        assert!(f.anomalies().is_empty(), "{} {:?}", f.text(), f.anomalies());
        if f.direction == Direction::In {
            let link = f.link.as_ref().expect("every response is correlated");
            assert_eq!(link.latency, Duration::from_millis(10));
        }
    }
    // The handshake is judged from the real answer.
    let hs = Handshake::judge("2025-11-25", &frames[1].json().unwrap()["result"], Duration::ZERO);
    assert_eq!(hs.verdict, VersionVerdict::Accepted);
    assert_eq!(hs.server_name(), "notes 0.1.0");
    assert!(hs.instructions.unwrap().contains("search_notes"));
    // read_note outside the notes folder is a tool failure, not a protocol error.
    assert!(frames[8].class.tool_error);
    assert_eq!(frames[8].link.as_ref().unwrap().method, "tools/call");
    assert!(!frames[6].class.tool_error);
    assert_eq!(frames[10].class.error_code, Some(-32601));
    assert_eq!(frames[12].link.as_ref().unwrap().method, "ping");
}

#[test]
fn node_sdk_frames() {
    check(&replay("walkthrough_node_sdk.txt"));
}

#[test]
fn python_sdk_frames() {
    check(&replay("walkthrough_python_sdk.txt"));
}
