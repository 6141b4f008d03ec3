use super::*;

fn session(lines: &[(Direction, &str)]) -> Vec<Event> {
    crate::timeline::replay::Replay::of(lines).into_events()
}

/// Each client picks its own progress token, as it picks its ids: a
/// call that differs only there is the same call; other `_meta` is not.
#[test]
fn a_progress_token_is_not_a_difference() {
    let run = |token: u32, extra: &str| {
        session(&[
            (
                Direction::Out,
                &format!(
                    r#"{{"jsonrpc":"2.0","id":{token},"method":"tools/call","params":{{"name":"echo","_meta":{{"progressToken":{token}{extra}}}}}}}"#
                ),
            ),
            (
                Direction::In,
                &format!(r#"{{"jsonrpc":"2.0","id":{token},"result":{{"content":[]}}}}"#),
            ),
        ])
    };
    let same = compare(&run(1, ""), &run(7, ""));
    assert_eq!(same.differing(), 0, "{:?}", same.entries);
    let other = compare(&run(1, ""), &run(7, r#","trace":"x""#));
    assert_eq!(other.differing(), 1);
}

/// Model turns compare turn for turn: what the model answered, not how
/// long it took or what it cost.
#[test]
fn model_turns_compare_by_what_the_model_answered() {
    use crate::model::provider::Api;
    use crate::model::record::ModelExchange;
    use std::time::Duration;
    let turn = |text: &str, ms: u64| {
        vec![Event::Model(Box::new(ModelExchange {
            at: Duration::ZERO,
            provider: "openai".into(),
            model: "m".into(),
            api: Api::OpenAiChat,
            url: String::new(),
            request: serde_json::json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
            status: Some(200),
            events: vec![
                (
                    Duration::from_millis(ms),
                    None,
                    format!(r#"{{"choices":[{{"index":0,"delta":{{"content":"{text}"}},"finish_reason":"stop"}}]}}"#),
                ),
                (Duration::from_millis(ms), None, "[DONE]".into()),
            ],
            first_token: Some(Duration::from_millis(ms)),
            total: Duration::from_millis(ms),
            error: None,
        }))]
    };
    let same = compare(&turn("Hello", 5), &turn("Hello", 900));
    assert_eq!(same.differing(), 0, "timing is not a difference: {:?}", same.entries);
    let other = diff(&turn("Hello", 5), &turn("Bye", 5));
    assert!(
        matches!(&other[0].verdict, Verdict::Differs(d) if d.iter().any(|l| l.contains("result.text"))),
        "{other:?}"
    );
    assert_eq!(other[0].key, "model #1");
}

/// A View's requests to its host are exchanges too: the same View
/// compared in two captures differs where the host answered otherwise.
#[test]
fn a_views_requests_compare_with_the_hosts_answers() {
    use crate::transport::event::{AppMessage, AppToward};
    let view = |answer: &str| -> Vec<Event> {
        [
            (
                AppToward::Host,
                r#"{"jsonrpc":"2.0","id":1,"method":"ui/initialize","params":{}}"#,
            ),
            (
                AppToward::View,
                r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2026-01-26"}}"#,
            ),
            (
                AppToward::Host,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"increment"}}"#,
            ),
            (AppToward::View, answer),
        ]
        .into_iter()
        .map(|(t, m)| Event::App(Box::new(AppMessage::new("counter", t, m))))
        .collect()
    };
    let four = view(r#"{"jsonrpc":"2.0","id":2,"result":{"value":4}}"#);
    let refused = view(r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"model-only"}}"#);
    let d = diff(&four, &four);
    assert_eq!(d.len(), 2);
    assert!(d.iter().all(|e| matches!(e.verdict, Verdict::Same)), "{d:?}");
    let d = diff(&four, &refused);
    let call = d
        .iter()
        .find(|e| e.key == "app counter tools/call increment #1")
        .unwrap();
    assert!(matches!(call.verdict, Verdict::Differs(_)), "{d:?}");
}

/// A session through an intercepting proxy compares as the client saw
/// it: the proxy's own answer, the changed response, or none at all.
#[test]
fn a_proxys_touches_make_the_exchange_what_the_client_saw() {
    use crate::transport::event::{Touch, TouchKind};
    let plain = session(&[
        (Direction::Out, r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
        (Direction::In, r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#),
    ]);
    let touched = |kind: TouchKind, d: Direction, of_seq: u64, sent: Option<&str>| {
        let mut events = session(&[
            (Direction::Out, r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
            (Direction::In, r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#),
        ]);
        let mut t = Touch::new(kind, d, Some(of_seq), "test");
        if let Some(s) = sent {
            t = t.with_sent(format!("{s}\n").into_bytes());
        }
        if kind == TouchKind::Answered {
            // The request never reached the server: no response frame.
            events.truncate(1);
        }
        events.push(Event::Touch(Box::new(t)));
        events
    };
    let error = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"proxy"}}"#;
    for events in [
        touched(TouchKind::Answered, Direction::Out, 0, Some(error)),
        touched(TouchKind::Edited, Direction::In, 1, Some(error)),
    ] {
        let d = diff(&plain, &events);
        assert!(matches!(&d[0].verdict, Verdict::Differs(_)), "{d:?}");
    }
    let d = diff(&plain, &touched(TouchKind::Dropped, Direction::In, 1, None));
    assert!(
        !matches!(&d[0].verdict, Verdict::Same),
        "a dropped answer is none: {d:?}"
    );
    let d = diff(
        &plain,
        &touched(
            TouchKind::Edited,
            Direction::In,
            1,
            Some(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#),
        ),
    );
    assert_eq!(d[0].verdict, Verdict::Same, "changed into the same thing");
}

#[test]
fn ignores_ids_key_order_and_list_order() {
    let a = session(&[
        (Direction::Out, r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
        (
            Direction::In,
            r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"add","inputSchema":{"type":"object"}},{"name":"echo"}]}}"#,
        ),
    ]);
    let b = session(&[
        (Direction::Out, r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#),
        (
            Direction::In,
            r#"{"result":{"tools":[{"name":"echo"},{"inputSchema":{"type":"object"},"name":"add"}]},"jsonrpc":"2.0","id":7}"#,
        ),
    ]);
    assert_eq!(
        diff(&a, &b),
        [DiffEntry {
            key: "tools/list #1".into(),
            verdict: Verdict::Same
        }]
    );
}

/// A malformed error object is shown as it was sent, never given a code
/// nobody sent (there is no JSON-RPC code for "malformed").
#[test]
fn a_malformed_error_object_is_compared_as_sent() {
    let a = session(&[
        (Direction::Out, r#"{"jsonrpc":"2.0","id":1,"method":"nope"}"#),
        (Direction::In, r#"{"jsonrpc":"2.0","id":1,"error":"it broke"}"#),
    ]);
    let b = session(&[
        (Direction::Out, r#"{"jsonrpc":"2.0","id":1,"method":"nope"}"#),
        (
            Direction::In,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}"#,
        ),
    ]);
    let d = diff(&a, &b);
    let Verdict::Differs(lines) = &d[0].verdict else {
        panic!("{d:?}")
    };
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("a malformed error object \"it broke\""), "{lines:?}");
    assert!(lines[0].contains("-32601"), "{lines:?}");
    assert!(!lines[0].contains(" 0:") && !lines[0].contains("code 0"), "{lines:?}");
    assert_eq!(diff(&a, &a)[0].verdict, Verdict::Same);
}

#[test]
fn names_fields_values_and_error_behaviour() {
    let a = session(&[
        (
            Direction::Out,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":{"p":"x"}}}"#,
        ),
        (
            Direction::In,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"no"}],"isError":true}}"#,
        ),
        (Direction::Out, r#"{"jsonrpc":"2.0","id":2,"method":"nope"}"#),
        (
            Direction::In,
            r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"Method not found"}}"#,
        ),
        (Direction::Out, r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#),
        (Direction::In, r#"{"jsonrpc":"2.0","id":3,"result":{}}"#),
    ]);
    let b = session(&[
        (
            Direction::Out,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":{"p":"x"}}}"#,
        ),
        (
            Direction::In,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"boom"}}"#,
        ),
        (Direction::Out, r#"{"jsonrpc":"2.0","id":2,"method":"nope"}"#),
        (
            Direction::In,
            r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"Method not found","data":"nope"}}"#,
        ),
        (Direction::Out, r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#),
    ]);
    let d = diff(&a, &b);
    assert_eq!(d.len(), 4);
    match &d[0].verdict {
        Verdict::Differs(lines) => assert!(lines[0].contains("different error behaviour"), "{lines:?}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        d[1].verdict,
        Verdict::Same,
        "same code and message; data is not compared"
    );
    assert_eq!(d[2].verdict, Verdict::OnlyInA);
    assert_eq!(d[3].key, "tools/list #1");
    assert_eq!(d[3].verdict, Verdict::OnlyInB);
}

#[test]
fn comparison_keeps_both_sides_for_a_side_by_side_view() {
    let a = session(&[
        (Direction::Out, r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
        (Direction::In, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
        (Direction::Out, r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#),
    ]);
    let b = session(&[
        (Direction::Out, r#"{"jsonrpc":"2.0","id":5,"method":"resources/list"}"#),
        (Direction::Out, r#"{"jsonrpc":"2.0","id":6,"method":"ping"}"#),
        (Direction::In, r#"{"jsonrpc":"2.0","id":6,"result":{"extra":1}}"#),
    ]);
    let c = compare(&a, &b);
    assert_eq!(c.a.len(), 2);
    assert_eq!(c.b.len(), 2);
    let sides: Vec<_> = c.entries.iter().map(|e| (e.key.as_str(), e.a, e.b)).collect();
    assert_eq!(
        sides,
        [
            ("ping #1", Some(0), Some(1)),
            ("tools/list #1", Some(1), None),
            ("resources/list #1", None, Some(0))
        ]
    );
    assert_eq!(c.differing(), 3);
    assert_eq!(c.a[1].outcome, Outcome::NoResponse);
    assert_eq!(c.b[1].outcome, Outcome::Result(serde_json::json!({"extra": 1})));
}

#[test]
fn value_paths() {
    let mut out = Vec::new();
    compare_values(
        "result",
        Some(&serde_json::json!({"a": 1, "b": [1, 2], "c": "x"})),
        Some(&serde_json::json!({"a": 2, "b": [1], "d": true})),
        &mut out,
    );
    assert_eq!(
        out,
        [
            "result.a: A 1 vs B 2",
            "result.b: A has 2 item(s), B has 1",
            "result.c: only in A (\"x\")",
            "result.d: only in B (true)"
        ]
    );
}
