//! Multi round-trip requests (2026-07-28, SEP-2322).
//!
//! A modern server never sends the client a request. When a `tools/call`,
//! `resources/read` or `prompts/get` needs something from the client (an
//! elicitation, a sampling, the roots), it answers with
//! `resultType: "input_required"`, a map of `inputRequests` and an opaque
//! `requestState`. The client answers every input request and sends the
//! original request again, with `inputResponses` under the same keys, the
//! `requestState` echoed exactly, and a new JSON-RPC id. The whole chain is
//! one conversation: [`Chain`]s group it, from frames alone.

use crate::protocol::methods;
use crate::wire::classify::Kind;
use crate::wire::frame::{Direction, Frame};
use crate::wire::message::RequestId;
use serde_json::{Map, Value, json};
use std::collections::HashMap;

/// The only methods that may answer `input_required`.
pub const INPUT_REQUIRED_METHODS: [&str; 3] = [methods::TOOLS_CALL, methods::RESOURCES_READ, methods::PROMPTS_GET];

/// How many rounds a client goes before giving up on a chain.
pub const MAX_ROUNDS: usize = 16;

pub fn may_require_input(method: &str) -> bool {
    INPUT_REQUIRED_METHODS.contains(&method)
}

/// One thing the server asks for (not a JSON-RPC message: `{method, params}`).
#[derive(Clone, Debug, PartialEq)]
pub struct InputRequest {
    /// The server's key, under which the answer goes in `inputResponses`.
    pub key: String,
    /// `elicitation/create`, `sampling/createMessage` or `roots/list`.
    pub method: String,
    pub params: Value,
}

impl InputRequest {
    /// One line for a person: "elicitation/create: Please confirm".
    pub fn summary(&self) -> String {
        let what = self
            .params
            .get("message")
            .and_then(Value::as_str)
            .map(|m| format!(": {}", crate::text::shorten(m, 120)))
            .unwrap_or_default();
        format!("{} [{}]{what}", self.method, self.key)
    }
}

/// An `input_required` result.
#[derive(Clone, Debug, PartialEq)]
pub struct InputRequired {
    /// In the server's key order.
    pub requests: Vec<InputRequest>,
    /// Opaque; echoed exactly in the retry, and omitted when absent.
    pub request_state: Option<String>,
}

impl InputRequired {
    /// Reads a result; `None` unless its `resultType` is `input_required`.
    pub fn from_result(result: &Value) -> Option<InputRequired> {
        if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
            return None;
        }
        let requests = result
            .get("inputRequests")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| InputRequest {
                        key: k.clone(),
                        method: v.get("method").and_then(Value::as_str).unwrap_or("?").to_owned(),
                        params: v.get("params").cloned().unwrap_or_else(|| json!({})),
                    })
                    .collect()
            })
            .unwrap_or_default();
        Some(InputRequired {
            requests,
            request_state: result.get("requestState").and_then(Value::as_str).map(str::to_owned),
        })
    }
}

/// The params of the retry: the original params (without a previous round's
/// answers), `inputResponses`, and the `requestState` when the server gave one.
/// `_meta` is kept as it was (the caller re-wraps the envelope if needed).
pub fn retry_params(original: &Value, responses: &Map<String, Value>, state: Option<&str>) -> Value {
    let mut p = match original {
        Value::Object(o) => o.clone(),
        _ => Map::new(),
    };
    p.remove("inputResponses");
    p.remove("requestState");
    p.insert("inputResponses".into(), Value::Object(responses.clone()));
    if let Some(s) = state {
        p.insert("requestState".into(), Value::String(s.to_owned()));
    }
    Value::Object(p)
}

/// What to answer an elicitation with, when nobody is there to ask.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum ElicitAnswer {
    #[default]
    Decline,
    Cancel,
    /// Accept with this content (an object).
    Accept(Value),
    /// Accept with the requested schema's defaults (SEP-1034), with this
    /// content (an object, possibly empty) over them.
    AcceptDefaults(Value),
}

/// The `default` of every top-level property of an elicitation's
/// `requestedSchema`, as content.
pub fn schema_defaults(requested_schema: Option<&Value>) -> Map<String, Value> {
    requested_schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .filter_map(|(k, p)| Some((k.clone(), p.get("default")?.clone())))
                .collect()
        })
        .unwrap_or_default()
}

/// How a non-interactive client answers input requests (and, in the legacy
/// era, the server's own requests for the same things).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct InputPolicy {
    /// Answer `roots/list` with these roots; refuse when `None`.
    pub roots: Option<Vec<Value>>,
    /// Declare the elicitation capability and answer with this.
    pub elicit: Option<ElicitAnswer>,
    /// Declare sampling and answer every sampling request with this text.
    pub sample_reply: Option<String>,
}

/// The accepted content: the requested schema's `default`s (SEP-1034),
/// overridden by what the user gave.
fn with_schema_defaults(content: &Value, params: &Value) -> Value {
    let Value::Object(given) = content else {
        return content.clone();
    };
    let mut merged = schema_defaults(params.get("requestedSchema"));
    merged.extend(given.iter().map(|(k, v)| (k.clone(), v.clone())));
    Value::Object(merged)
}

impl InputPolicy {
    /// The client capabilities this policy can honour.
    pub fn capabilities(&self) -> Value {
        let mut caps = json!({});
        if self.roots.is_some() {
            caps["roots"] = json!({"listChanged": false});
        }
        if self.elicit.is_some() {
            caps["elicitation"] = json!({"form": {}});
        }
        if self.sample_reply.is_some() {
            caps["sampling"] = json!({});
        }
        caps
    }

    /// The answer to one request (`roots/list`, `elicitation/create`,
    /// `sampling/createMessage`), or why there is none.
    pub fn answer(&self, method: &str, params: &Value) -> Result<Value, Unanswerable> {
        match method {
            methods::ROOTS_LIST => match &self.roots {
                Some(roots) => Ok(json!({ "roots": roots })),
                None => Err(Unanswerable::Roots),
            },
            methods::ELICITATION_CREATE => match &self.elicit {
                Some(ElicitAnswer::Decline) => Ok(json!({"action": "decline"})),
                Some(ElicitAnswer::Cancel) => Ok(json!({"action": "cancel"})),
                // Both fill in the requested schema's defaults under what was given (SEP-1034).
                Some(ElicitAnswer::Accept(content) | ElicitAnswer::AcceptDefaults(content)) => {
                    Ok(json!({"action": "accept", "content": with_schema_defaults(content, params)}))
                }
                None => Err(Unanswerable::Elicitation),
            },
            methods::SAMPLING_CREATE_MESSAGE => match &self.sample_reply {
                Some(text) => Ok(json!({
                    "role": "assistant",
                    "content": {"type": "text", "text": text},
                    "model": "mcpscope",
                    "stopReason": "endTurn",
                })),
                None => Err(Unanswerable::Sampling(crate::text::shorten(&params.to_string(), 80))),
            },
            other => Err(Unanswerable::Method(other.to_owned())),
        }
    }

    /// Answers every input request of a round, or says which one cannot be.
    pub fn answer_all(&self, ir: &InputRequired) -> Result<Map<String, Value>, Unanswerable> {
        let mut out = Map::new();
        for r in &ir.requests {
            out.insert(r.key.clone(), self.answer(&r.method, &r.params)?);
        }
        Ok(out)
    }
}

/// A request of the server's that the client's policy has no answer for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unanswerable {
    #[error("the server asked for roots, which mcpscope did not declare (pass --root)")]
    Roots,
    #[error(
        "the server asked for an elicitation, which mcpscope did not declare (pass --elicit-decline, \
         --elicit-accept JSON or --elicit-accept-defaults)"
    )]
    Elicitation,
    /// The request's params, shortened.
    #[error("the server asked for sampling ({0}), which mcpscope did not declare (pass --sample-reply TEXT)")]
    Sampling(String),
    #[error("the server asked for {0}, which mcpscope cannot answer")]
    Method(String),
}

/// Request id -> the id of the first request of its chain, kept by a client
/// that retries, so a UI can group the chain as one conversation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Conversations {
    root_of: HashMap<RequestId, RequestId>,
}

impl Conversations {
    /// Records that `retry` continues the chain `previous` belongs to.
    pub fn link(&mut self, retry: RequestId, previous: &RequestId) {
        let root = self.root(previous);
        self.root_of.insert(retry, root);
    }

    /// The first request of the chain `id` belongs to (itself when alone).
    pub fn root(&self, id: &RequestId) -> RequestId {
        self.root_of.get(id).cloned().unwrap_or_else(|| id.clone())
    }

    /// The ids of a chain, root first, in the order they were linked.
    pub fn members(&self, root: &RequestId) -> Vec<RequestId> {
        let mut v: Vec<RequestId> = self
            .root_of
            .iter()
            .filter(|(_, r)| *r == root)
            .map(|(id, _)| id.clone())
            .collect();
        v.sort();
        v.insert(0, root.clone());
        v
    }
}

/// One round of a chain, as seen on the wire.
#[derive(Clone, Debug, PartialEq)]
pub struct Round {
    pub request_seq: u64,
    pub id: Option<RequestId>,
    /// The `requestState` the request carried.
    pub sent_state: Option<String>,
    /// Whether the request carried `inputResponses`.
    pub has_responses: bool,
    pub response_seq: Option<u64>,
    /// `resultType` of the answer (`error` for an error response).
    pub outcome: Option<String>,
    /// The `requestState` the answer gave for the next round.
    pub given_state: Option<String>,
}

/// A request and its retries: one conversation.
#[derive(Clone, Debug, PartialEq)]
pub struct Chain {
    pub method: String,
    /// The tool or prompt name, or the resource URI.
    pub target: Option<String>,
    pub rounds: Vec<Round>,
}

impl Chain {
    pub fn root_seq(&self) -> u64 {
        self.rounds[0].request_seq
    }

    /// Whether the last round was answered with something else than input_required.
    pub fn finished(&self) -> bool {
        self.rounds
            .last()
            .and_then(|r| r.outcome.as_deref())
            .is_some_and(|o| o != "input_required")
    }

    /// The seqs of every request and response of the chain.
    pub fn seqs(&self) -> Vec<u64> {
        self.rounds
            .iter()
            .flat_map(|r| std::iter::once(r.request_seq).chain(r.response_seq))
            .collect()
    }
}

fn target_of(params: &Value) -> Option<String> {
    params
        .get("name")
        .or_else(|| params.get("uri"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// Finds the multi round-trip chains in a session: a request answered with
/// `input_required` and the retries that follow it (same method and target,
/// carrying `inputResponses` or `requestState`). Only chains with at least
/// one `input_required` answer are returned, in order of their first request.
pub fn chains(frames: &[&Frame]) -> Vec<Chain> {
    let mut all: Vec<Chain> = Vec::new();
    // request seq -> (chain index, round index)
    let mut at: HashMap<u64, (usize, usize)> = HashMap::new();
    for f in frames {
        match (f.direction, f.kind()) {
            (Direction::Out, Kind::Request) => {
                let Some(method) = f.class.method.as_deref().filter(|m| may_require_input(m)) else {
                    continue;
                };
                let params = f.json().and_then(|v| v.get("params").cloned()).unwrap_or(Value::Null);
                let target = target_of(&params);
                let sent_state = params.get("requestState").and_then(Value::as_str).map(str::to_owned);
                let has_responses = params.get("inputResponses").is_some();
                let round = Round {
                    request_seq: f.seq,
                    id: f.class.id.clone(),
                    sent_state: sent_state.clone(),
                    has_responses,
                    response_seq: None,
                    outcome: None,
                    given_state: None,
                };
                let continues = (has_responses || sent_state.is_some())
                    .then(|| {
                        all.iter().rposition(|c| {
                            c.method == method
                                && c.target == target
                                && c.rounds.last().and_then(|r| r.outcome.as_deref()) == Some("input_required")
                        })
                    })
                    .flatten();
                match continues {
                    Some(i) => {
                        all[i].rounds.push(round);
                        at.insert(f.seq, (i, all[i].rounds.len() - 1));
                    }
                    None => {
                        all.push(Chain {
                            method: method.to_owned(),
                            target,
                            rounds: vec![round],
                        });
                        at.insert(f.seq, (all.len() - 1, 0));
                    }
                }
            }
            (Direction::In, Kind::Result | Kind::Error) => {
                let Some(link) = &f.link else { continue };
                let Some(&(c, r)) = at.get(&link.request_seq) else {
                    continue;
                };
                let round = &mut all[c].rounds[r];
                if round.response_seq.is_some() {
                    continue;
                }
                round.response_seq = Some(f.seq);
                if f.kind() == Kind::Error {
                    round.outcome = Some("error".into());
                } else {
                    let result = f.json().and_then(|v| v.get("result").cloned()).unwrap_or(Value::Null);
                    round.outcome = Some(crate::protocol::era::result_type(&result).to_owned());
                    round.given_state = result.get("requestState").and_then(Value::as_str).map(str::to_owned);
                }
            }
            _ => {}
        }
    }
    all.retain(|c| c.rounds.iter().any(|r| r.outcome.as_deref() == Some("input_required")));
    all
}

/// For each request seq in a chain, the seq of the chain's first request:
/// what a timeline groups by.
pub fn conversation_of(chains: &[Chain]) -> HashMap<u64, u64> {
    let mut m = HashMap::new();
    for c in chains {
        for s in c.seqs() {
            m.insert(s, c.root_seq());
        }
    }
    m
}

#[cfg(test)]
pub(crate) mod tests {
    #[test]
    fn accepting_with_defaults_merges_the_given_content() {
        let policy = InputPolicy {
            elicit: Some(ElicitAnswer::AcceptDefaults(json!({"age": 31}))),
            ..InputPolicy::default()
        };
        let params = json!({"message": "m", "requestedSchema": {"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
            "verified": {"type": "boolean", "default": true},
            "note": {"type": "string"}
        }}});
        assert_eq!(
            policy.answer("elicitation/create", &params).unwrap(),
            json!({"action": "accept", "content": {"name": "John Doe", "age": 31, "score": 95.5, "status": "active", "verified": true}})
        );
        assert!(schema_defaults(None).is_empty());
    }

    use super::*;

    pub(crate) fn frames_of(lines: &[(Direction, &str)]) -> Vec<Frame> {
        crate::testing::Lines::of(lines).frames()
    }

    #[test]
    fn reads_input_required_and_builds_the_retry() {
        let r = json!({"resultType":"input_required","requestState":"s1","inputRequests":{
            "confirm":{"method":"elicitation/create","params":{"message":"Sure?","requestedSchema":{"type":"object"}}},
            "roots":{"method":"roots/list","params":{}}}});
        let ir = InputRequired::from_result(&r).unwrap();
        assert_eq!(ir.requests.len(), 2);
        assert_eq!(ir.request_state.as_deref(), Some("s1"));
        assert!(ir.requests.iter().any(|q| q.summary().contains("Sure?")));
        assert!(InputRequired::from_result(&json!({"content":[]})).is_none());

        let policy = InputPolicy {
            roots: Some(vec![json!({"uri":"file:///tmp"})]),
            elicit: Some(ElicitAnswer::Accept(json!({"ok": true}))),
            sample_reply: None,
        };
        let answers = policy.answer_all(&ir).unwrap();
        assert_eq!(answers["confirm"], json!({"action":"accept","content":{"ok":true}}));
        assert_eq!(answers["roots"]["roots"][0]["uri"], "file:///tmp");
        let original = json!({"name":"t","arguments":{"a":1},"inputResponses":{"old":{}},"requestState":"old"});
        let p = retry_params(&original, &answers, ir.request_state.as_deref());
        assert_eq!(p["name"], "t");
        assert_eq!(p["requestState"], "s1");
        assert!(p["inputResponses"].get("old").is_none());
        // No state given: none sent.
        let p = retry_params(&original, &answers, None);
        assert!(p.get("requestState").is_none());

        // An accepted elicitation carries the schema's defaults (SEP-1034) under what was given.
        let asked = json!({"requestedSchema":{"type":"object","properties":{
            "name":{"type":"string","default":"John"},"age":{"type":"integer","default":30},"x":{"type":"string"}}}});
        assert_eq!(
            policy.answer("elicitation/create", &asked).unwrap(),
            json!({"action":"accept","content":{"name":"John","age":30,"ok":true}})
        );

        let none = InputPolicy::default();
        assert_eq!(none.answer("roots/list", &json!({})), Err(Unanswerable::Roots));
        assert!(
            none.answer("roots/list", &json!({}))
                .unwrap_err()
                .to_string()
                .contains("--root")
        );
        assert!(
            none.answer("sampling/createMessage", &json!({}))
                .unwrap_err()
                .to_string()
                .contains("--sample-reply")
        );
        assert_eq!(none.capabilities(), json!({}));
        assert_eq!(
            policy.capabilities(),
            json!({"roots":{"listChanged":false},"elicitation":{"form":{}}})
        );
    }

    #[test]
    fn conversations_map_ids_to_their_root() {
        let mut c = Conversations::default();
        c.link(RequestId::Number(5), &RequestId::Number(3));
        c.link(RequestId::Number(7), &RequestId::Number(5));
        assert_eq!(c.root(&RequestId::Number(7)), RequestId::Number(3));
        assert_eq!(c.root(&RequestId::Number(9)), RequestId::Number(9));
        assert_eq!(
            c.members(&RequestId::Number(3)),
            [RequestId::Number(3), RequestId::Number(5), RequestId::Number(7)]
        );
    }

    #[test]
    fn chains_from_frames() {
        use Direction::{In, Out};
        let fs = frames_of(&[
            (
                Out,
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}"#,
            ),
            (
                Out,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"other"}}"#,
            ),
            (
                In,
                r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","requestState":"A","inputRequests":{}}}"#,
            ),
            (
                In,
                r#"{"jsonrpc":"2.0","id":2,"result":{"resultType":"complete","content":[]}}"#,
            ),
            (
                Out,
                r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t","inputResponses":{},"requestState":"A"}}"#,
            ),
            (
                In,
                r#"{"jsonrpc":"2.0","id":3,"result":{"resultType":"input_required","requestState":"B"}}"#,
            ),
            (
                Out,
                r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"t","inputResponses":{},"requestState":"B"}}"#,
            ),
            (
                In,
                r#"{"jsonrpc":"2.0","id":4,"result":{"resultType":"complete","content":[]}}"#,
            ),
        ]);
        let refs: Vec<&Frame> = fs.iter().collect();
        let cs = chains(&refs);
        assert_eq!(cs.len(), 1, "{cs:#?}");
        let c = &cs[0];
        assert_eq!(c.target.as_deref(), Some("t"));
        assert_eq!(c.rounds.len(), 3);
        assert!(c.finished());
        assert_eq!(c.rounds[1].sent_state.as_deref(), Some("A"));
        assert_eq!(c.rounds[1].given_state.as_deref(), Some("B"));
        let conv = conversation_of(&cs);
        assert_eq!(conv[&6], 0);
        assert_eq!(conv[&7], 0);
        assert!(!conv.contains_key(&1));
    }
}
