//! The lines the gate writes itself: the answer to a held request, an
//! error in a response's place, a `replace` rule's message.

use super::commands::Refusal;
use crate::wire::frame::Frame;
use serde_json::Value;

/// What to send back instead of a held request.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// A result (`{"content": …}`), a whole response, or `{"error": …}`:
    /// completed with the request's id and `jsonrpc`.
    Json(Value),
    /// Sent as typed (a line ending added if it has none).
    Raw(Vec<u8>),
}

/// The line that answers `request` (its raw JSON) with `answer`: a bare
/// result is wrapped, `{"error": …}` or `{"result": …}` gets the request's
/// id and `jsonrpc`; raw bytes go as typed.
pub fn answer_line(request: &[u8], answer: &Answer) -> Result<Vec<u8>, Refusal> {
    let id = serde_json::from_slice::<Value>(request)
        .ok()
        .and_then(|v| v.get("id").cloned())
        .ok_or(Refusal::NoIdToAnswer)?;
    Ok(answer_with_id(id, answer))
}

/// For a response: the same id, with `answer` in its place.
pub(super) fn answer_line_for_id(response: &[u8], answer: &Answer) -> Vec<u8> {
    let id = serde_json::from_slice::<Value>(response)
        .ok()
        .and_then(|v| v.get("id").cloned())
        .unwrap_or(Value::Null);
    answer_with_id(id, answer)
}

fn answer_with_id(id: Value, answer: &Answer) -> Vec<u8> {
    match answer {
        Answer::Raw(bytes) => with_ending(bytes.clone()),
        Answer::Json(v) => {
            let body = match v {
                Value::Object(o) if o.contains_key("result") || o.contains_key("error") => {
                    let mut o = o.clone();
                    o.entry("jsonrpc").or_insert("2.0".into());
                    o.entry("id").or_insert(id);
                    Value::Object(o)
                }
                other => serde_json::json!({"jsonrpc": "2.0", "id": id, "result": other}),
            };
            let mut line = serde_json::to_vec(&body).expect("JSON");
            line.push(b'\n');
            line
        }
    }
}

/// A `replace` rule's message for `frame`: an object without an id takes
/// the frame's, so one rule can stand in for many responses.
pub(super) fn replacement(value: &Value, frame: &Frame) -> Vec<u8> {
    let mut v = value.clone();
    if let Value::Object(o) = &mut v
        && !o.contains_key("id")
        && let Some(id) = serde_json::from_slice::<Value>(&frame.raw)
            .ok()
            .and_then(|f| f.get("id").cloned())
    {
        o.insert("id".into(), id);
    }
    let mut line = serde_json::to_vec(&v).expect("JSON");
    line.extend_from_slice(frame.ending.bytes());
    if !line.ends_with(b"\n") {
        line.push(b'\n');
    }
    line
}

pub(super) fn with_ending(mut bytes: Vec<u8>) -> Vec<u8> {
    if !bytes.ends_with(b"\n") {
        bytes.push(b'\n');
    }
    bytes
}

pub(super) fn trim_ending(bytes: &[u8]) -> &[u8] {
    let b = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    b.strip_suffix(b"\r").unwrap_or(b)
}

#[cfg(test)]
mod tests {
    use super::super::Op;
    use super::super::test_support::{CALL, frame, gate, sends, touches};
    use super::*;
    use crate::proxy::gate::Gate;
    use crate::transport::event::TouchKind;
    use crate::wire::frame::Direction;
    use std::time::Instant;

    #[test]
    fn answer_instead_goes_back_to_the_sender_with_the_requests_id() {
        let (mut g, h) = gate(&[], &[(r#"method == "tools/call""#, None)]);
        let now = Instant::now();
        let mut out = Vec::new();
        g.arrived(&frame(0, Direction::Out, CALL), now, &mut out);
        out.clear();
        h.send(Op::Answer(
            1,
            Answer::Json(serde_json::json!({"content": [{"type": "text", "text": "mine"}]})),
        ));
        g.tick(now, &mut out);
        let s = sends(&out);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].0, Direction::In, "to the client");
        let v: Value = serde_json::from_str(&s[0].1).unwrap();
        assert_eq!(v["id"], 7);
        assert_eq!(v["result"]["content"][0]["text"], "mine");
        assert_eq!(touches(&out), [TouchKind::Answered]);
    }

    #[test]
    fn a_line_without_an_id_has_no_answer() {
        let e = answer_line(br#"{"jsonrpc":"2.0","method":"x"}"#, &Answer::Json(Value::Null)).unwrap_err();
        assert_eq!(e, Refusal::NoIdToAnswer);
        assert_eq!(e.to_string(), "the held frame has no id to answer");
        let line = answer_line(
            br#"{"jsonrpc":"2.0","id":"a","method":"x"}"#,
            &Answer::Raw(b"raw".to_vec()),
        )
        .unwrap();
        assert_eq!(line, b"raw\n");
    }
}
