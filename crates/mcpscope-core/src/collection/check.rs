//! A step's checks over its exchange: each assertion (a display filter)
//! run on the answer as on a timeline row, with what the fields it reads
//! held when it failed; the result against the tool's `outputSchema`.

use super::file::Assertion;
use crate::filter::Subject;
use crate::filter::ast::{Segment, is_identifier, quote};
use crate::filter::compile::{Access, Rel};
use crate::protocol::tool_result::{self, CallOutcome, StructuredCheck};
use crate::wire::classify::Kind;
use crate::wire::frame::{Direction, Frame};
use crate::wire::message::RequestId;
use serde_json::Value as Json;
use std::time::Duration;

/// A step's exchange: what was sent and, for a request, its answer.
#[derive(Clone, Copy)]
pub struct Exchange<'a> {
    pub request: &'a Frame,
    pub response: Option<&'a Frame>,
}

/// One side of an exchange as a filter sees it: fields are read from the
/// answer (from the request for a notification), `request.…` from the
/// request.
struct Side<'a> {
    frame: &'a Frame,
    other: Option<&'a Frame>,
}

impl<'a> Subject for Side<'a> {
    fn dir(&self) -> &'static str {
        match self.frame.direction {
            Direction::Out => "c2s",
            Direction::In => "s2c",
        }
    }

    fn kind(&self) -> &'static str {
        match self.frame.class.kind {
            Kind::Request if self.frame.direction == Direction::In => "server_request",
            Kind::Request => "request",
            Kind::Notification => "notification",
            Kind::Result if self.frame.class.tool_error => "iserror",
            Kind::Result => "result",
            Kind::Error => "error",
            Kind::Batch | Kind::NotJsonRpc | Kind::NotJson => "not_json",
        }
    }

    fn seq(&self) -> Option<u64> {
        Some(self.frame.seq)
    }

    fn time(&self) -> Duration {
        self.frame.at
    }

    fn raw(&self) -> &[u8] {
        &self.frame.raw
    }

    fn session(&self) -> Option<&str> {
        None
    }

    fn transport(&self) -> Option<&str> {
        None
    }

    fn era(&self) -> Option<&str> {
        None
    }

    fn id(&self) -> Option<RequestId> {
        self.frame.class.id.clone()
    }

    fn method(&self) -> Option<&str> {
        // An answer's method is its request's: `method == "tools/call"` holds on it.
        self.frame
            .class
            .method
            .as_deref()
            .or_else(|| self.frame.link.as_ref().map(|l| l.method.as_str()))
    }

    fn error_code(&self) -> Option<i64> {
        (self.frame.class.kind == Kind::Error)
            .then_some(self.frame.class.error_code)
            .flatten()
    }

    fn message(&self) -> Option<&str> {
        std::str::from_utf8(&self.frame.raw).ok()
    }

    fn latency(&self) -> Option<Duration> {
        self.frame
            .link
            .as_ref()
            .or_else(|| self.other.and_then(|o| o.link.as_ref()))
            .map(|l| l.latency)
    }

    fn pending(&self) -> bool {
        self.frame.class.kind == Kind::Request && self.other.is_none()
    }

    fn related(&self, rel: Rel) -> Option<Self> {
        let is_answer = matches!(self.frame.class.kind, Kind::Result | Kind::Error);
        match rel {
            Rel::Request if is_answer => self.other.map(|o| Side {
                frame: o,
                other: Some(self.frame),
            }),
            Rel::Response if !is_answer => self.other.map(|o| Side {
                frame: o,
                other: Some(self.frame),
            }),
            _ => None,
        }
    }

    fn any_finding(&self, _: &mut dyn FnMut(&str, &str) -> bool) -> bool {
        false
    }

    fn conversation(&self) -> Option<u64> {
        None
    }
}

impl<'a> Exchange<'a> {
    fn subject(&self) -> Side<'a> {
        match self.response {
            Some(r) => Side {
                frame: r,
                other: Some(self.request),
            },
            None => Side {
                frame: self.request,
                other: None,
            },
        }
    }

    /// Whether the assertion holds; when it does not, what each field it
    /// reads held (`result.isError = true`, `latency = 812 ms`).
    pub fn check(&self, assertion: &Assertion) -> Result<(), Vec<String>> {
        let side = self.subject();
        if assertion.filter.matches_checked(&side) {
            return Ok(());
        }
        Err(assertion
            .filter
            .fields()
            .iter()
            .filter_map(|a| self.saw(&side, a))
            .collect())
    }

    fn saw(&self, side: &Side<'_>, access: &Access) -> Option<String> {
        Some(match access {
            Access::Path(segments) => {
                let doc = side.frame.json()?;
                let held = walk(&doc, segments);
                format!("{} = {}", path_text(segments), shown(held.as_ref()))
            }
            Access::Latency => format!(
                "latency = {}",
                side.latency()
                    .map_or("none".into(), |d| format!("{:.1} ms", d.as_secs_f64() * 1e3))
            ),
            Access::Kind => format!("kind = {:?}", side.kind()),
            Access::Method => format!("method = {:?}", side.method().unwrap_or("")),
            Access::ErrorCode => format!(
                "error.code = {}",
                side.error_code()
                    .map_or("none (not an error)".into(), |c| c.to_string())
            ),
            Access::Len => format!("len = {}", side.frame.raw.len()),
            Access::Raw => format!("raw = {}", crate::text::shorten(&side.frame.text(), 200)),
            Access::Related(Rel::Request, inner) => {
                let req = side.related(Rel::Request)?;
                let said = self.saw(&req, inner)?;
                format!("request.{said}")
            }
            _ => return None,
        })
    }

    /// The answer against the tool's output schema: `None` when it holds.
    pub fn output_schema_problem(&self, output_schema: Option<&Json>) -> Option<String> {
        let Some(response) = self.response.and_then(Frame::json) else {
            return Some("no answer to check against the output schema".into());
        };
        let Some(schema) = output_schema else {
            return Some("the tool declares no outputSchema in tools/list".into());
        };
        let result = match tool_result::interpret(&response, Some(schema)) {
            CallOutcome::ToolSuccess(r) => r,
            CallOutcome::ToolFailure(_) => return Some("the tool failed (isError): no output to check".into()),
            CallOutcome::ProtocolError { code, message, .. } => {
                return Some(format!("a JSON-RPC error came back: {code} {message}"));
            }
            CallOutcome::Malformed(why) => return Some(format!("the answer is malformed: {why}")),
        };
        match result.structured_check {
            StructuredCheck::Valid => None,
            StructuredCheck::NoSchema => Some("the tool declares no outputSchema".into()),
            StructuredCheck::MissingStructured => {
                Some("an outputSchema is declared but the result has no structuredContent".into())
            }
            StructuredCheck::Invalid(errors) => Some(format!("structuredContent: {}", errors.join("; "))),
            StructuredCheck::SchemaUnusable(why) => Some(format!("the outputSchema cannot be used: {why}")),
        }
    }
}

/// The value at a filter path (`[*]`: every element, as an array).
fn walk(v: &Json, segments: &[Segment]) -> Option<Json> {
    let Some((first, rest)) = segments.split_first() else {
        return Some(v.clone());
    };
    match first {
        Segment::Key(k) => walk(v.get(k)?, rest),
        Segment::Index(i) => {
            let a = v.as_array()?;
            let at = if *i < 0 {
                a.len().checked_sub(i.unsigned_abs() as usize)?
            } else {
                *i as usize
            };
            walk(a.get(at)?, rest)
        }
        Segment::Each => Some(Json::Array(
            v.as_array()?.iter().filter_map(|x| walk(x, rest)).collect(),
        )),
    }
}

/// A path as the filter language writes it.
pub fn path_text(segments: &[Segment]) -> String {
    let mut out = String::new();
    for s in segments {
        match s {
            Segment::Key(k) if is_identifier(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Segment::Key(k) => out.push_str(&format!("[{}]", quote(k))),
            Segment::Index(i) => out.push_str(&format!("[{i}]")),
            Segment::Each => out.push_str("[*]"),
        }
    }
    out
}

fn shown(v: Option<&Json>) -> String {
    match v {
        None => "(absent)".into(),
        Some(Json::Array(a)) if a.len() > 3 => format!(
            "[{} items] {}",
            a.len(),
            crate::text::shorten(&Json::Array(a.clone()).to_string(), 160)
        ),
        Some(v) => crate::text::shorten(&v.to_string(), 200),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::Filter;
    use crate::wire::classify::Limits;
    use crate::wire::frame::Link;
    use crate::wire::framing::{LineEnding, RawLine};

    fn frame(seq: u64, dir: Direction, json: &str) -> Frame {
        let line = RawLine {
            bytes: json.as_bytes().to_vec(),
            ending: LineEnding::Lf,
        };
        Frame::from_line(seq, Duration::ZERO, dir, line, &Limits::default())
    }

    fn assertion(text: &str) -> Assertion {
        Assertion {
            text: text.into(),
            at: Default::default(),
            filter: std::sync::Arc::new(Filter::parse(text).unwrap()),
        }
    }

    #[test]
    fn assertions_hold_or_say_what_they_saw() {
        let req = frame(
            1,
            Direction::Out,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}"#,
        );
        let mut res = frame(
            2,
            Direction::In,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Echo: hi"}],"isError":false}}"#,
        );
        res.link = Some(Link {
            request_seq: 1,
            method: "tools/call".into(),
            latency: Duration::from_millis(12),
        });
        let x = Exchange {
            request: &req,
            response: Some(&res),
        };
        for ok in [
            "result.isError == false",
            r#"result.content[0].text contains "hi""#,
            "latency < 500ms",
            "count(result.content) >= 1",
            r#"method == "tools/call""#,
            r#"request.params.arguments.message == "hi""#,
            "kind == \"result\"",
        ] {
            assert_eq!(x.check(&assertion(ok)), Ok(()), "{ok}");
        }
        let saw = x
            .check(&assertion(r#"result.content[0].text contains "Paris""#))
            .unwrap_err();
        assert_eq!(saw, vec![r#"result.content[0].text = "Echo: hi""#]);
        let saw = x.check(&assertion("latency < 5ms")).unwrap_err();
        assert_eq!(saw, vec!["latency = 12.0 ms"]);
        let saw = x.check(&assertion("error.code == -32602")).unwrap_err();
        assert_eq!(saw, vec!["error.code = none (not an error)"]);
        let saw = x
            .check(&assertion(r#"request.params.arguments.message == "yo""#))
            .unwrap_err();
        assert_eq!(saw, vec![r#"request.params.arguments.message = "hi""#]);
        let saw = x.check(&assertion("result.structuredContent.id == 3")).unwrap_err();
        assert_eq!(saw, vec!["result.structuredContent.id = (absent)"]);
    }

    #[test]
    fn the_output_schema_is_checked() {
        let req = frame(1, Direction::Out, r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#);
        let good = frame(
            2,
            Direction::In,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"n":1}}}"#,
        );
        let bad = frame(
            2,
            Direction::In,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"n":"one"}}}"#,
        );
        let schema = serde_json::json!({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]});
        let ok = Exchange {
            request: &req,
            response: Some(&good),
        };
        assert_eq!(ok.output_schema_problem(Some(&schema)), None);
        let wrong = Exchange {
            request: &req,
            response: Some(&bad),
        };
        let said = wrong.output_schema_problem(Some(&schema)).unwrap();
        assert!(said.contains("/n"), "{said}");
        assert!(ok.output_schema_problem(None).unwrap().contains("no outputSchema"));
    }
}
