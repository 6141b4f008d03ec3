use super::*;
use crate::transport::recorder::Recorder;
use crate::wire::classify::Limits;
use crate::wire::framing::RawLine;

fn line(s: &[u8]) -> RawLine {
    RawLine {
        bytes: s.to_vec(),
        ending: LineEnding::Lf,
    }
}

#[test]
fn rows_round_trip_and_links_resolve() {
    let mut rec = Recorder::replay(Limits::default());
    let mut store = FrameStore::new();
    let a = rec.frame_at(
        Direction::Out,
        line(br#"{"jsonrpc":"2.0","id":"abc","method":"tools/call"}"#),
        Duration::from_millis(1),
        None,
    );
    let s = rec.stderr_at(line(b"log \xff"), Duration::from_millis(2));
    let b = rec.frame_at(
        Direction::In,
        line(br#"{"jsonrpc":"2.0","id":"abc","result":{"isError":true}}"#),
        Duration::from_millis(5),
        None,
    );
    store.push_frame(&a);
    store.push_stderr(&s);
    store.push_frame(&b);
    assert_eq!(store.len(), 3);
    let r0 = store.get(0).unwrap();
    assert_eq!(r0.method(), Some("tools/call"));
    assert_eq!(r0.id(), Some(RequestId::String("abc".into())));
    assert_eq!(store.get(1).unwrap().raw(), b"log \xff");
    assert_eq!(store.get(1).unwrap().lane(), Lane::Stderr);
    let r2 = store.get(2).unwrap();
    assert!(r2.tool_error());
    assert_eq!(r2.link(), Some((0, Duration::from_millis(4))));
    assert_eq!(store.responses_to(0).collect::<Vec<_>>(), [2]);
    let back = r2.to_frame().unwrap();
    assert_eq!(back.raw, b.raw);
    assert_eq!(back.class, b.class);
    assert_eq!(back.link.unwrap().method, "tools/call");
}

#[test]
fn large_payloads_and_many_small_lines_share_chunks_correctly() {
    let mut rec = Recorder::replay(Limits::default());
    let mut store = FrameStore::new();
    let big = vec![b'x'; CHUNK_BYTES];
    let mut expected = Vec::new();
    for i in 0..2000u32 {
        let raw = if i % 500 == 7 {
            big.clone()
        } else {
            format!("line {i}").into_bytes()
        };
        let f = rec.frame_at(Direction::In, line(&raw), Duration::ZERO, None);
        store.push_frame(&f);
        expected.push(raw);
    }
    for (i, raw) in expected.iter().enumerate() {
        assert_eq!(store.get(i).unwrap().raw(), &raw[..], "row {i}");
    }
    // Small lines did not each get a chunk of their own.
    assert!(store.chunks.len() <= 8, "{}", store.chunks.len());
}

#[test]
fn rows_are_found_by_seq_across_meta_rows_and_gaps() {
    let mut rec = Recorder::replay(Limits::default());
    let mut store = FrameStore::new();
    let mut seqs = Vec::new();
    for i in 0..6 {
        if i == 2 {
            store.push_meta(Duration::ZERO, "sent SIGTERM");
        }
        if i == 4 {
            // A seq the store never sees (e.g. an event that is not a row).
            rec.stderr_at(line(b"skipped"), Duration::ZERO);
        }
        let f = rec.frame_at(Direction::In, line(b"{}"), Duration::ZERO, None);
        seqs.push(f.seq);
        store.push_frame(&f);
    }
    store.push_meta(Duration::ZERO, "exited");
    let rows: Vec<_> = seqs.iter().map(|&s| store.row_of_seq(s)).collect();
    assert_eq!(rows, [Some(0), Some(1), Some(3), Some(4), Some(5), Some(6)]);
    assert_eq!(store.row_of_seq(seqs[3] + 1), None, "the skipped seq has no row");
    assert_eq!(store.row_of_seq(seqs[5] + 1), None, "past the end");
    assert_eq!(store.row_of_seq(u64::MAX), None);
    for (&seq, row) in seqs.iter().zip(rows) {
        assert_eq!(store.get(row.unwrap()).unwrap().seq(), Some(seq));
    }
    assert_eq!(store.get(2).unwrap().seq(), None, "a meta row has no seq");
    assert!(std::mem::size_of::<Row>() <= 64, "{}", std::mem::size_of::<Row>());
}

#[test]
fn a_request_knows_its_first_answer_and_http_rows_keep_their_record() {
    let mut rec = Recorder::replay(Limits::default());
    let mut store = FrameStore::new();
    for (d, raw) in [
        (Direction::Out, &br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#[..]),
        (Direction::In, br#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
        (Direction::In, br#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
        (Direction::Out, br#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#),
    ] {
        store.push_frame(&rec.frame_at(d, line(raw), Duration::ZERO, None));
    }
    assert_eq!(store.get(0).unwrap().answer(), Some(1));
    assert_eq!(store.get(3).unwrap().answer(), None);
    let http = crate::transport::event::HttpInfo {
        at: Duration::ZERO,
        method: "POST".into(),
        url: "http://127.0.0.1:1/mcp".into(),
        status: Some(202),
        sent: vec![("accept".into(), "application/json".into())],
        received: vec![("mcp-session-id".into(), "abc".into())],
        request_id: None,
        text: String::new(),
        error: None,
    };
    store.push_event(&Event::Http(http));
    let row = store.get(4).unwrap();
    assert!(row.text().starts_with("HTTP POST"), "{}", row.text());
    let v: serde_json::Value = serde_json::from_str(row.http_record().unwrap()).unwrap();
    assert_eq!(v["status"], 202);
    assert_eq!(v["received"][0][1], "abc");
    assert_eq!(store.get(0).unwrap().http_record(), None);
}

#[test]
fn a_proxys_touches_are_rows_and_the_frames_learn_their_fate() {
    let mut rec = Recorder::replay(Limits::default());
    let mut store = FrameStore::new();
    let req = rec.frame_at(
        Direction::Out,
        line(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
        Duration::ZERO,
        None,
    );
    store.push_event(&Event::Frame(req.clone()));
    assert_eq!(store.get(0).unwrap().fate(), None);
    let held = Touch::new(TouchKind::Held, Direction::Out, Some(req.seq), "held as #1");
    store.push_event(&Event::Touch(Box::new(held)));
    assert_eq!(store.get(0).unwrap().fate(), Some(TouchKind::Held));
    let answer = Touch::new(
        TouchKind::Answered,
        Direction::Out,
        Some(req.seq),
        "answered by the user",
    )
    .with_sent(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_vec());
    store.push_event(&Event::Touch(Box::new(answer.clone())));
    let row = store.get(2).unwrap();
    assert_eq!(row.lane(), Lane::Touch);
    assert_eq!(row.seq(), None, "a touch is no frame of a peer's");
    let info = row.touch().unwrap();
    assert_eq!(info.kind, TouchKind::Answered);
    assert_eq!(info.of_row, Some(0));
    assert_eq!(
        info.sent_toward,
        Some(Direction::In),
        "the answer goes back to the client"
    );
    assert!(row.method().unwrap().contains("answered by the user"));
    assert_eq!(row.to_touch().unwrap().sent, answer.sent, "read back whole");
    assert_eq!(
        store.get(0).unwrap().fate(),
        Some(TouchKind::Answered),
        "the latest touch"
    );
    assert_eq!(store.row_of_seq(req.seq), Some(0));
}

#[test]
fn authorization_steps_are_rows_of_their_own() {
    let mut store = FrameStore::new();
    let ok = AuthExchange {
        at: Duration::from_millis(5),
        method: "GET".into(),
        url: "http://as.example/.well-known/oauth-authorization-server?x=1".into(),
        status: Some(200),
        response_body: Some(serde_json::json!({"issuer": "http://as.example"})),
        ..AuthExchange::new(Step::ServerMetadata, "authorization server metadata")
    };
    let failed = AuthExchange {
        error: Some("no S256".into()),
        ..AuthExchange::new(Step::Failed, "")
    };
    assert!(store.push_event(&Event::Auth(Box::new(ok.clone()))));
    assert!(store.push_event(&Event::Auth(Box::new(failed))));
    let r = store.get(0).unwrap();
    assert_eq!(r.lane(), Lane::Auth);
    assert_eq!(
        r.method(),
        Some("server metadata GET /.well-known/oauth-authorization-server → 200")
    );
    assert_eq!(
        (r.auth_status(), r.auth_failed(), r.tool_error()),
        (Some(200), false, false)
    );
    assert_eq!(r.to_auth(), Some(ok));
    assert_eq!(r.to_frame(), None);
    let f = store.get(1).unwrap();
    assert_eq!((f.auth_status(), f.auth_failed()), (None, true));
    assert_eq!(
        (r.auth_step(), f.auth_step()),
        (Some(Step::ServerMetadata), Some(Step::Failed))
    );
    assert_eq!(f.method(), Some("failed ✖ no S256"));
    assert_eq!(store.row_of_seq(u64::MAX), None);
    assert!(store.has_auth() && !FrameStore::new().has_auth());
}

/// A model turn is a row of its own, and the `tools/call`s it asked for
/// (by the names they were offered under) know it caused them; a call
/// nobody asked for, or one past the turn's, does not.
#[test]
fn a_model_turn_is_a_row_and_knows_the_calls_it_caused() {
    use crate::model::provider::Api;
    use crate::model::record::ModelExchange;
    let turn = ModelExchange {
        at: Duration::from_millis(1),
        provider: "openai".into(),
        model: "gpt-x".into(),
        api: Api::OpenAiChat,
        url: "http://127.0.0.1/v1/chat/completions".into(),
        request: serde_json::json!({"model": "gpt-x"}),
        status: Some(200),
        events: vec![
            (
                Duration::from_millis(10),
                None,
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"math_add","arguments":"{}"}}]}}]}"#.into(),
            ),
            (
                Duration::from_millis(11),
                None,
                r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":12,"completion_tokens":3}}"#.into(),
            ),
            (Duration::from_millis(12), None, "[DONE]".into()),
        ],
        first_token: Some(Duration::from_millis(10)),
        total: Duration::from_millis(12),
        error: None,
    };
    let mut rec = Recorder::replay(Limits::default());
    let mut store = FrameStore::new();
    store.push_event(&Event::Model(Box::new(turn)));
    let call = |id: u32, name: &str| {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{{}}}}}}"#)
    };
    for (id, name) in [(1, "echo"), (2, "math.add"), (3, "math.add")] {
        let f = rec.frame_at(
            Direction::Out,
            line(call(id, name).as_bytes()),
            Duration::from_millis(20),
            None,
        );
        store.push_frame(&f);
    }
    let answer = rec.frame_at(
        Direction::In,
        line(br#"{"jsonrpc":"2.0","id":2,"result":{"content":[]}}"#),
        Duration::from_millis(30),
        None,
    );
    store.push_frame(&answer);
    assert!(store.has_model());
    let m = store.get(0).unwrap();
    assert_eq!(m.lane(), Lane::Model);
    assert_eq!(m.method(), Some("openai:gpt-x"));
    let shown = m.model().unwrap();
    assert_eq!(shown.tool_calls, ["math_add"]);
    assert_eq!((shown.input_tokens, shown.output_tokens), (Some(12), Some(3)));
    assert_eq!(shown.failed, None);
    assert_eq!(m.model_caused(), [2]);
    let caused: Vec<_> = (1..=4).map(|r| store.get(r).unwrap().caused_by_model()).collect();
    assert_eq!(
        caused,
        [None, Some(0), None, Some(0)],
        "echo was not asked for; the second add is one too many"
    );
    assert_eq!(
        crate::timeline::row_kind::RowKind::of(&m),
        crate::timeline::row_kind::RowKind::Model
    );
}
