//! The params of a request the client sent, read once for every concern that
//! needs them: a `tools/call` was parsed twice (its tool's name for the tool
//! rules, name, uri and request state for the round trips), a tenth of
//! linting a large capture.

use crate::wire::classify::{Anomalies, Kind};
use crate::wire::frame::{Direction, Frame};
use serde_json::Value;

#[derive(serde::Deserialize)]
struct Request {
    #[serde(default)]
    params: Option<Params>,
}

/// What the concerns read from a request's params (`None` when absent or
/// `null`). A member of another type than the one a rule reads is kept as
/// is: each rule decides what it makes of it.
#[derive(serde::Deserialize)]
pub(super) struct Params {
    #[serde(default)]
    pub name: Option<Value>,
    #[serde(default)]
    pub uri: Option<Value>,
    #[serde(default, rename = "requestState")]
    pub request_state: Option<Value>,
    #[serde(default, rename = "inputResponses", deserialize_with = "present")]
    pub input_responses: bool,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    <serde::de::IgnoredAny as serde::Deserialize>::deserialize(d).map(|_| true)
}

/// A client request's params, parsed once.
// On the stack for one frame and never stored: boxing the params would cost
// an allocation per request for nothing.
#[allow(clippy::large_enum_variant)]
pub(super) enum RequestParams {
    /// Not a client request, or one whose params no rule reads.
    NotRead,
    Read(Option<Params>),
    /// The line did not parse into [`Params`] (params not an object, a member
    /// given twice): each rule falls back to its own reading.
    Unreadable,
}

impl RequestParams {
    /// Reads the params of a client request whose method `wants` says some
    /// rule reads them.
    pub fn of(f: &Frame, wants: impl Fn(&str) -> bool) -> Self {
        if f.direction != Direction::Out || f.kind() != Kind::Request {
            return Self::NotRead;
        }
        if !f.class.method.as_deref().is_some_and(wants) {
            return Self::NotRead;
        }
        // An array would be read member by member into the fields in order
        // (serde's derive accepts a struct as a sequence): `["echo"]` would
        // call a tool named echo. params-not-object reports it; no rule
        // finds a member in it.
        if f.anomalies().contains(Anomalies::PARAMS_NOT_OBJECT) {
            return Self::Read(None);
        }
        match serde_json::from_slice::<Request>(&f.raw) {
            Ok(r) => Self::Read(r.params),
            Err(_) => Self::Unreadable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::replay::Replay;

    fn params(line: &str) -> RequestParams {
        let mut r = Replay::new();
        let f = r.frame(Direction::Out, line.as_bytes());
        RequestParams::of(&f, |_| true)
    }

    #[test]
    fn reads_the_members_rules_ask_for() {
        let p = params(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":[1,{"b":2}]},"requestState":"s1","inputResponses":{}}}"#,
        );
        let RequestParams::Read(Some(p)) = p else {
            panic!("not read")
        };
        assert_eq!(p.name, Some(Value::from("echo")));
        assert_eq!(p.uri, None);
        assert_eq!(p.request_state, Some(Value::from("s1")));
        assert!(p.input_responses);
    }

    #[test]
    fn escaped_strings_and_huge_ids() {
        let p = params(
            r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"tools\/call","params":{"name":"e\"c\u0068o\\"}}"#,
        );
        // An id beyond i64 is an invalid id, but the line is still a request.
        let RequestParams::Read(Some(p)) = p else {
            panic!("not read")
        };
        assert_eq!(p.name, Some(Value::from("e\"cho\\")));
    }

    #[test]
    fn absent_null_and_odd_params() {
        assert!(matches!(
            params(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#),
            RequestParams::Read(None)
        ));
        assert!(matches!(
            params(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}"#),
            RequestParams::Read(None)
        ));
        let RequestParams::Read(Some(p)) = params(r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"name":5}}"#)
        else {
            panic!("not read")
        };
        assert_eq!(p.name, Some(Value::from(5)));
        // Not an object: nothing in it is a member, not even positionally.
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["echo","file:///a"]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":"text"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":7}"#,
        ] {
            assert!(matches!(params(line), RequestParams::Read(None)), "{line}");
        }
        // A member twice: each rule reads the line its own way.
        let line = r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"uri":"a","uri":"b"}}"#;
        assert!(matches!(params(line), RequestParams::Unreadable), "{line}");
    }

    #[test]
    fn only_client_requests_a_rule_reads() {
        let mut r = Replay::new();
        let f = r.frame(
            Direction::Out,
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}"#,
        );
        assert!(matches!(
            RequestParams::of(&f, |m| m == "tools/call"),
            RequestParams::NotRead
        ));
        let f = r.frame(
            Direction::In,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#,
        );
        assert!(matches!(RequestParams::of(&f, |_| true), RequestParams::NotRead));
        let f = r.frame(Direction::Out, b"{not json");
        assert!(matches!(RequestParams::of(&f, |_| true), RequestParams::NotRead));
    }
}
