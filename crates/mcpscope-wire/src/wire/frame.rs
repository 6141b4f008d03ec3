//! A frame: one line that crossed the wire, with what we know about it.

use crate::wire::classify::{Anomalies, Classification, Kind, Limits, classify};
use crate::wire::framing::{LineEnding, RawLine};
use std::time::Duration;

/// Which way a line travelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Client to server (the server's stdin).
    Out,
    /// Server to client (the server's stdout).
    In,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Out => "out",
            Direction::In => "in",
        }
    }

    pub fn arrow(self) -> &'static str {
        match self {
            Direction::Out => "→",
            Direction::In => "←",
        }
    }

    pub fn opposite(self) -> Direction {
        match self {
            Direction::Out => Direction::In,
            Direction::In => Direction::Out,
        }
    }
}

/// Ties a response to the request it answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    /// Sequence number of the request frame.
    pub request_seq: u64,
    /// The request's method.
    pub method: String,
    /// Time from the request to this response.
    pub latency: Duration,
}

/// One line on the wire.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    /// Position in the session, counting frames in both directions.
    pub seq: u64,
    /// Monotonic time since the session started.
    pub at: Duration,
    pub direction: Direction,
    /// The exact bytes of the line, without its terminator.
    pub raw: Vec<u8>,
    pub ending: LineEnding,
    pub class: Classification,
    /// For a response: the request it answers.
    pub link: Option<Link>,
}

impl Frame {
    pub fn from_line(seq: u64, at: Duration, direction: Direction, line: RawLine, limits: &Limits) -> Frame {
        let class = classify(&line.bytes, line.ending, limits);
        Frame {
            seq,
            at,
            direction,
            raw: line.bytes,
            ending: line.ending,
            class,
            link: None,
        }
    }

    pub fn kind(&self) -> Kind {
        self.class.kind
    }

    pub fn anomalies(&self) -> Anomalies {
        self.class.anomalies
    }

    /// The raw line as text (lossy for invalid UTF-8), for display.
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.raw)
    }

    /// Parses the line as JSON, when it is JSON.
    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.raw)
            .ok()
            .or_else(|| serde_json::from_str(&self.text()).ok())
    }

    /// The message's `result` member (`Null` when it has none, or is not a
    /// JSON object): read without building the rest of the message, whose
    /// envelope is most of a small answer's objects and strings.
    pub fn result(&self) -> serde_json::Value {
        #[derive(serde::Deserialize)]
        struct Answer {
            #[serde(default)]
            result: serde_json::Value,
        }
        // (serde would read an array into the struct too: only an object is tried.)
        let object = self.raw.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
        if object && let Ok(a) = serde_json::from_slice::<Answer>(&self.raw) {
            return a.result;
        }
        // Not UTF-8, a member twice (the last one counts), not an object: as `json` reads it.
        self.json()
            .and_then(|mut v| v.get_mut("result").map(serde_json::Value::take))
            .unwrap_or(serde_json::Value::Null)
    }

    /// A short label: the method, or `result #id` / `error #id`.
    pub fn label(&self) -> String {
        let c = &self.class;
        let id = c.id.as_ref().map(|i| format!(" #{i}")).unwrap_or_default();
        match c.kind {
            Kind::Request => format!("{}{id}", c.method.as_deref().unwrap_or("?")),
            Kind::Notification => c.method.clone().unwrap_or_else(|| "?".into()),
            Kind::Result if c.tool_error => format!("result{id} isError"),
            Kind::Result => format!("result{id}"),
            Kind::Error => match c.error_code {
                Some(code) => format!("error{id} {code}"),
                None => format!("error{id}"),
            },
            Kind::Batch => "batch".into(),
            Kind::NotJsonRpc => "not JSON-RPC".into(),
            Kind::NotJson => "not JSON".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(bytes: &[u8]) -> Frame {
        let line = RawLine {
            bytes: bytes.to_vec(),
            ending: LineEnding::Lf,
        };
        Frame::from_line(1, Duration::ZERO, Direction::In, line, &Limits::default())
    }

    #[test]
    fn a_result_read_alone_is_the_result_the_whole_message_holds() {
        let lines: &[&[u8]] = &[
            br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}],"isError":false}}"#,
            br#"  {"result":[1,2,{"a":null}],"id":"x","jsonrpc":"2.0"}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":null}"#,
            br#"{"jsonrpc":"2.0","id":1}"#,
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":1,"result":{"last":true}}"#,
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"text\":\"caf\xe9\"}}",
            br#"[{"jsonrpc":"2.0","id":1,"result":5}]"#,
            br#"[5]"#,
            br#""result""#,
            br#"{"result": 7"#,
            b"",
        ];
        for line in lines {
            let f = frame(line);
            let whole = f
                .json()
                .and_then(|mut v| v.get_mut("result").map(serde_json::Value::take))
                .unwrap_or(serde_json::Value::Null);
            assert_eq!(f.result(), whole, "{}", String::from_utf8_lossy(line));
        }
        assert_eq!(frame(lines[5]).result(), serde_json::json!({"last": true}));
        assert_eq!(frame(lines[6]).result(), serde_json::json!({"text": "caf\u{fffd}"}));
    }
}
