//! Real servers written by others: the reference Node server, and servers on
//! the official Python and TypeScript SDKs.

use crate::support::*;
use mcpscope_core::protocol::handshake::{HandshakeOptions, VersionVerdict};
use mcpscope_core::transport::event::Event;
use mcpscope_core::wire::classify::Kind;
use mcpscope_core::wire::frame::Direction;
use serde_json::{Value, json};
use std::time::Duration;

fn tool_names(result: &Value) -> Vec<String> {
    result["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn server_everything_handshake_tools_and_roots() {
    let (c, sink) = client(everything());
    let mut c = c.with_roots(vec![json!({"uri": "file:///tmp", "name": "tmp"})]);
    let pid = c.wait_spawned(T).unwrap();
    let hs = c
        .initialize(
            &HandshakeOptions {
                capabilities: json!({"roots": {"listChanged": true}}),
                ..HandshakeOptions::default()
            },
            T,
        )
        .unwrap()
        .unwrap();
    assert_eq!(hs.verdict, VersionVerdict::Accepted);
    assert!(hs.server_name().contains("everything"), "{}", hs.server_name());
    assert!(hs.capabilities.as_ref().unwrap().get("tools").is_some());
    let tools = c.request("tools/list", None, T).unwrap().outcome.unwrap();
    let names = tool_names(&tools);
    assert!(names.iter().any(|n| n == "echo"), "{names:?}");
    let r = c
        .request(
            "tools/call",
            Some(json!({"name":"echo","arguments":{"message":"hi from mcpscope"}})),
            T,
        )
        .unwrap();
    assert!(!r.is_tool_error());
    assert!(
        r.outcome.unwrap()["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("hi from mcpscope")
    );
    // A protocol error is an error response, not a tool failure.
    let r = c.request("no/such/method", None, T).unwrap();
    assert_eq!(r.frame.kind(), Kind::Error);
    assert_eq!(r.outcome.unwrap_err().code, -32601);
    c.pump_for(Duration::from_millis(500));
    c.close();
    assert!(wait_group_gone(pid, Duration::from_secs(3)));
    let evs = snapshot(&sink);
    // The server asks for roots once they are declared, and we answer.
    let roots_req = received(&evs)
        .into_iter()
        .find(|f| f.class.kind == Kind::Request && f.class.method.as_deref() == Some("roots/list"));
    if let Some(req) = roots_req {
        let answer = sent(&evs)
            .into_iter()
            .find(|f| f.class.id == req.class.id && f.class.kind == Kind::Result);
        assert!(answer.is_some(), "roots/list answered");
    }
    // Everything it wrote on stdout was clean JSON-RPC.
    for f in received(&evs) {
        assert!(f.anomalies().is_empty(), "{} {:?}", f.text(), f.anomalies());
    }
    assert!(evs.iter().any(|e| matches!(e, Event::Closed { .. })));
}

#[test]
fn python_sdk_server() {
    let (mut c, sink) = client(py_server());
    c.wait_spawned(T).unwrap();
    let hs = c.initialize(&HandshakeOptions::default(), T).unwrap().unwrap();
    assert!(hs.usable(), "{}", hs.verdict_text());
    let tools = c.request("tools/list", None, T).unwrap().outcome.unwrap();
    let names = tool_names(&tools);
    assert!(names.iter().any(|n| n == "add"), "{names:?}");
    let r = c
        .request("tools/call", Some(json!({"name":"add","arguments":{"a":2,"b":40}})), T)
        .unwrap();
    assert!(!r.is_tool_error());
    assert!(r.outcome.unwrap().to_string().contains("42"));
    c.close();
    for f in received(&snapshot(&sink)) {
        assert!(f.anomalies().is_empty(), "{} {:?}", f.text(), f.anomalies());
        assert_eq!(f.direction, Direction::In);
    }
}

#[test]
fn node_sdk_zod_server() {
    let (mut c, _sink) = client(node_zod_server());
    c.wait_spawned(T).unwrap();
    let hs = c.initialize(&HandshakeOptions::default(), T).unwrap().unwrap();
    assert!(hs.usable(), "{}", hs.verdict_text());
    let tools = c.request("tools/list", None, T).unwrap().outcome.unwrap();
    assert!(tool_names(&tools).iter().any(|n| n == "add"));
    c.close();
}
