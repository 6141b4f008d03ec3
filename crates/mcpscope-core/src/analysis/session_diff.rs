//! Compares the same session against two servers, method by method.
//!
//! Exchanges are aligned by method (and tool, prompt or resource name) and
//! by occurrence, never by id; values compare without regard to key order;
//! timing is ignored. Lists of named things (tools, prompts, resources) are
//! matched by name, since SDKs list them in different orders.

use crate::protocol::methods;
use crate::transport::event::Event;
use crate::wire::classify::Kind;
use crate::wire::frame::{Direction, Frame};
use crate::wire::message::ErrorObject;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// One request and what came back.
#[derive(Clone, Debug)]
pub struct Exchange {
    /// e.g. `tools/call echo #1`
    pub key: String,
    pub method: String,
    pub params: Option<Value>,
    pub outcome: Outcome,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Result(Value),
    Error(ErrorObject),
    NoResponse,
}

/// How one aligned exchange compares.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    Same,
    OnlyInA,
    OnlyInB,
    /// Each line names a path and how the two sides differ.
    Differs(Vec<String>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct DiffEntry {
    pub key: String,
    pub verdict: Verdict,
}

/// Requests the client sent and their responses, in order.
pub fn exchanges(events: &[Event]) -> Vec<Exchange> {
    let frames: Vec<&Frame> = events
        .iter()
        .filter_map(|e| match e {
            Event::Frame(f) => Some(f),
            _ => None,
        })
        .collect();
    let mut by_request: HashMap<u64, &Frame> = HashMap::new();
    for f in &frames {
        if f.direction == Direction::In
            && f.kind().is_response()
            && let Some(link) = &f.link
        {
            by_request.entry(link.request_seq).or_insert(f);
        }
    }
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for f in frames {
        if f.direction != Direction::Out || f.kind() != Kind::Request {
            continue;
        }
        let method = f.class.method.clone().unwrap_or_default();
        let v = f.json().unwrap_or(Value::Null);
        let params = v.get("params").cloned();
        let subject = params.as_ref().and_then(|p| {
            ["name", "uri"]
                .iter()
                .find_map(|k| p.get(*k).and_then(Value::as_str).map(str::to_owned))
        });
        let base = match subject {
            Some(s) => format!("{method} {s}"),
            None => method.clone(),
        };
        let n = seen.entry(base.clone()).or_default();
        *n += 1;
        let outcome = match by_request.get(&f.seq) {
            None => Outcome::NoResponse,
            Some(r) => {
                let rv = r.json().unwrap_or(Value::Null);
                if r.kind() == Kind::Error {
                    Outcome::Error(
                        ErrorObject::from_json(&rv["error"]).unwrap_or_else(|| ErrorObject::new(0, "malformed error")),
                    )
                } else {
                    Outcome::Result(rv.get("result").cloned().unwrap_or(Value::Null))
                }
            }
        };
        out.push(Exchange {
            key: format!("{base} #{n}"),
            method,
            params,
            outcome,
        });
    }
    out
}

/// One aligned pair of exchanges and how they compare.
#[derive(Clone, Debug, PartialEq)]
pub struct Aligned {
    pub key: String,
    pub verdict: Verdict,
    /// Positions in [`Comparison::a`] and [`Comparison::b`].
    pub a: Option<usize>,
    pub b: Option<usize>,
}

/// Both sessions' exchanges and their alignment, for a side-by-side view.
#[derive(Clone, Debug, Default)]
pub struct Comparison {
    pub a: Vec<Exchange>,
    pub b: Vec<Exchange>,
    pub entries: Vec<Aligned>,
}

impl Comparison {
    pub fn differing(&self) -> usize {
        self.entries.iter().filter(|e| e.verdict != Verdict::Same).count()
    }
}

/// Compares two sessions, keeping the exchanges.
pub fn compare(a: &[Event], b: &[Event]) -> Comparison {
    let ea = exchanges(a);
    let eb = exchanges(b);
    let mut b_by_key: BTreeMap<&str, usize> = eb.iter().enumerate().map(|(i, e)| (e.key.as_str(), i)).collect();
    let mut entries = Vec::new();
    for (ia, x) in ea.iter().enumerate() {
        match b_by_key.remove(x.key.as_str()) {
            None => entries.push(Aligned {
                key: x.key.clone(),
                verdict: Verdict::OnlyInA,
                a: Some(ia),
                b: None,
            }),
            Some(ib) => {
                let y = &eb[ib];
                let mut lines = Vec::new();
                if x.method != methods::INITIALIZE {
                    // initialize params differ only by clientInfo when the same client ran.
                    compare_values("params", x.params.as_ref(), y.params.as_ref(), &mut lines);
                }
                compare_outcomes(&x.outcome, &y.outcome, &mut lines);
                entries.push(Aligned {
                    key: x.key.clone(),
                    verdict: if lines.is_empty() {
                        Verdict::Same
                    } else {
                        Verdict::Differs(lines)
                    },
                    a: Some(ia),
                    b: Some(ib),
                });
            }
        }
    }
    for (ib, y) in eb.iter().enumerate() {
        if b_by_key.contains_key(y.key.as_str()) {
            entries.push(Aligned {
                key: y.key.clone(),
                verdict: Verdict::OnlyInB,
                a: None,
                b: Some(ib),
            });
        }
    }
    Comparison { a: ea, b: eb, entries }
}

/// Compares two sessions.
pub fn diff(a: &[Event], b: &[Event]) -> Vec<DiffEntry> {
    compare(a, b)
        .entries
        .into_iter()
        .map(|e| DiffEntry {
            key: e.key,
            verdict: e.verdict,
        })
        .collect()
}

fn compare_outcomes(a: &Outcome, b: &Outcome, out: &mut Vec<String>) {
    match (a, b) {
        (Outcome::Result(x), Outcome::Result(y)) => {
            let ex = x.get("isError").and_then(Value::as_bool).unwrap_or(false);
            let ey = y.get("isError").and_then(Value::as_bool).unwrap_or(false);
            if ex != ey {
                out.push(format!("tool failure: A isError={ex}, B isError={ey}"));
            }
            compare_values("result", Some(x), Some(y), out);
        }
        (Outcome::Error(x), Outcome::Error(y)) => {
            if x.code != y.code {
                out.push(format!("error code: A {} vs B {}", x, y));
            } else if x.message != y.message {
                out.push(format!("error message: A {:?} vs B {:?}", x.message, y.message));
            }
        }
        (Outcome::Result(_), Outcome::Error(e)) => out.push(format!(
            "different error behaviour: A answered with a result, B with JSON-RPC error {e}"
        )),
        (Outcome::Error(e), Outcome::Result(_)) => out.push(format!(
            "different error behaviour: A answered with JSON-RPC error {e}, B with a result"
        )),
        (Outcome::NoResponse, Outcome::NoResponse) => {}
        (Outcome::NoResponse, _) => out.push("A never answered, B did".into()),
        (_, Outcome::NoResponse) => out.push("B never answered, A did".into()),
    }
}

fn preview(v: &Value) -> String {
    crate::text::shorten(&v.to_string(), 80)
}

/// Field-by-field differences under `path`.
pub fn compare_values(path: &str, a: Option<&Value>, b: Option<&Value>, out: &mut Vec<String>) {
    match (a, b) {
        (None, None) => {}
        (Some(x), None) => out.push(format!("{path}: only in A ({})", preview(x))),
        (None, Some(y)) => out.push(format!("{path}: only in B ({})", preview(y))),
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            for (k, vx) in x {
                compare_values(&format!("{path}.{k}"), Some(vx), y.get(k), out);
            }
            for (k, vy) in y {
                if !x.contains_key(k) {
                    compare_values(&format!("{path}.{k}"), None, Some(vy), out);
                }
            }
        }
        (Some(Value::Array(x)), Some(Value::Array(y))) => match (names(x), names(y)) {
            (Some(nx), Some(ny)) => {
                for (name, vx) in &nx {
                    compare_values(&format!("{path}[{name}]"), Some(vx), ny.get(name).copied(), out);
                }
                for (name, vy) in &ny {
                    if !nx.contains_key(name) {
                        compare_values(&format!("{path}[{name}]"), None, Some(vy), out);
                    }
                }
            }
            _ => {
                if x.len() != y.len() {
                    out.push(format!("{path}: A has {} item(s), B has {}", x.len(), y.len()));
                }
                for (i, (vx, vy)) in x.iter().zip(y).enumerate() {
                    compare_values(&format!("{path}[{i}]"), Some(vx), Some(vy), out);
                }
            }
        },
        (Some(x), Some(y)) => {
            if x != y {
                out.push(format!("{path}: A {} vs B {}", preview(x), preview(y)));
            }
        }
    }
}

/// Items of a list keyed by their `name` (tools, prompts) or `uri` (resources).
fn names(items: &[Value]) -> Option<BTreeMap<String, &Value>> {
    if items.is_empty() {
        return None;
    }
    let mut map = BTreeMap::new();
    for item in items {
        let key = ["name", "uri"]
            .iter()
            .find_map(|k| item.get(*k).and_then(Value::as_str))?;
        if map.insert(key.to_owned(), item).is_some() {
            return None;
        }
    }
    Some(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(lines: &[(Direction, &str)]) -> Vec<Event> {
        crate::record::replay::Replay::of(lines).into_events()
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
}
