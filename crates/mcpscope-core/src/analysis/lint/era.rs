//! The modern era (2026-07-28): what it requires and what it removed; and
//! multi round-trip requests, a new id for every retry and the state echoed.

use super::facts::Facts;
use super::request::RequestParams;
use super::{Finding, Severity, request_label, rule};
use crate::protocol::era::{self, CACHEABLE_METHODS, LEGACY_ONLY_METHODS};
use crate::protocol::methods;
use crate::wire::classify::Kind;
use crate::wire::frame::{Direction, Frame};
use crate::wire::message::RequestId;
use memchr::memmem::Finder;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::LazyLock;

/// Before anything says the session is modern, at most this many candidate
/// findings are kept for the case it turns out to be: a legacy session with
/// no handshake must not grow a finding per frame it will never report.
const UNHINTED_CAP: usize = 10_000;

/// Findings that hold only if the session is of the modern era, gathered
/// while it may be (no version negotiated yet).
#[derive(Default)]
pub(super) struct Era {
    server_requests: Vec<u64>,
    /// Their methods, without repeats in a row.
    server_request_methods: Vec<String>,
    legacy: Vec<(String, Vec<u64>)>,
    candidates: Vec<Finding>,
    /// Items gathered before any hint of the modern era.
    unhinted: usize,
    /// A version was negotiated: the session is not modern, nothing more to gather.
    settled_legacy: bool,
}

impl Era {
    pub fn frame(&mut self, f: &Frame, facts: &Facts) {
        if self.settled_legacy {
            return;
        }
        if !facts.may_be_modern() {
            *self = Era {
                settled_legacy: true,
                ..Era::default()
            };
            return;
        }
        if !facts.modern_hint() {
            if self.unhinted >= UNHINTED_CAP {
                return;
            }
            self.unhinted += 1;
        }
        if f.direction == Direction::In && f.kind() == Kind::Request {
            self.server_requests.push(f.seq);
            if let Some(m) = f.class.method.as_deref()
                && self.server_request_methods.last().map(String::as_str) != Some(m)
            {
                self.server_request_methods.push(m.to_owned());
            }
        }
        let Some(m) = f.class.method.as_deref() else {
            if f.direction == Direction::In && f.kind() == Kind::Result {
                result_rules(f, &mut self.candidates);
            }
            return;
        };
        if f.direction != Direction::Out || !matches!(f.kind(), Kind::Request | Kind::Notification) {
            return;
        }
        if m == methods::INITIALIZE {
            return;
        }
        if LEGACY_ONLY_METHODS.contains(&m) {
            match self.legacy.iter_mut().find(|(x, _)| x == m) {
                Some(e) => e.1.push(f.seq),
                None => self.legacy.push((m.to_owned(), vec![f.seq])),
            }
            return;
        }
        if f.kind() == Kind::Request {
            let params = f.json().and_then(|v| v.get("params").cloned());
            let missing = era::missing_envelope(params.as_ref());
            if !missing.is_empty() {
                self.candidates.push(Finding::new(
                    rule::MODERN_META_MISSING,
                    Severity::Error,
                    vec![f.seq],
                    format!(
                        "The client sent {} without {} in params._meta. In 2026-07-28 every request carries the \
                         protocol version and the client's capabilities; a server answers -32602 without them.",
                        request_label(f),
                        missing.join(" and ")
                    ),
                ));
            }
        }
    }

    pub fn provisional(&self, facts: &Facts, out: &mut Vec<Finding>) {
        if let (Some(why), Some(init)) = (facts.modern_only(), facts.init_req) {
            out.push(Finding::new(
                rule::INITIALIZE_TO_MODERN_SERVER,
                Severity::Error,
                vec![init],
                format!(
                    "The client sent initialize to a server that speaks only the modern era: {why}. 2026-07-28 has no \
                     handshake; probe with server/discover and send protocolVersion and clientCapabilities in every \
                     request's _meta instead."
                ),
            ));
        }
        if !facts.modern() {
            return;
        }
        if !self.server_requests.is_empty() {
            out.push(Finding::new(
                rule::SERVER_REQUEST_IN_MODERN_ERA,
                Severity::Error,
                self.server_requests.clone(),
                format!(
                    "The server sent {} request(s) ({}) in a 2026-07-28 session. Modern servers never \
                     send the client requests: they answer a tools/call, resources/read or prompts/get with \
                     resultType \"input_required\" and inputRequests, and the client retries with inputResponses.",
                    self.server_requests.len(),
                    self.server_request_methods.join(", ")
                ),
            ));
        }
        out.extend(self.candidates.iter().cloned());
        for (m, seqs) in &self.legacy {
            let times = if seqs.len() == 1 {
                String::new()
            } else {
                format!(" ({} times)", seqs.len())
            };
            out.push(Finding::new(
                rule::LEGACY_METHOD_IN_MODERN_ERA,
                Severity::Warning,
                seqs.clone(),
                format!(
                    "The client used {m}{times} with a server of the modern era; 2026-07-28 removed it (ping, \
                     logging/setLevel, resources/subscribe and resources/unsubscribe, roots and elicitation \
                     notifications, tasks/list and tasks/result are gone), so expect -32601."
                ),
            ));
        }
    }
}

fn result_rules(f: &Frame, out: &mut Vec<Finding>) {
    let Some(link) = &f.link else { return };
    if LEGACY_ONLY_METHODS.contains(&link.method.as_str()) {
        return;
    }
    let Some(result) = f.json().and_then(|v| v.get("result").cloned()) else {
        return;
    };
    let label = format!(
        "{} #{}",
        link.method,
        f.class.id.as_ref().map_or("?".into(), ToString::to_string)
    );
    match result.get("resultType") {
        None => out.push(Finding::new(
            rule::RESULT_TYPE_MISSING,
            Severity::Error,
            vec![f.seq],
            format!(
                "The server answered {label} without resultType. In 2026-07-28 every result says what it is \
                 (\"complete\", \"input_required\", …); clients treat a missing one as complete only to cope \
                 with older servers."
            ),
        )),
        Some(Value::String(t)) if matches!(t.as_str(), "complete" | "input_required" | "task") => {}
        Some(other) => out.push(Finding::new(
            rule::RESULT_TYPE_MISSING,
            Severity::Error,
            vec![f.seq],
            format!(
                "The server answered {label} with resultType {other}, which neither the protocol nor a known \
                 extension defines; a client must treat the result as invalid."
            ),
        )),
    }
    let rt = era::result_type(&result);
    if rt == "input_required" && !crate::protocol::mrtr::may_require_input(&link.method) {
        out.push(Finding::new(
            rule::INPUT_REQUIRED_NOT_ALLOWED,
            Severity::Error,
            vec![link.request_seq, f.seq],
            format!(
                "The server answered {label} with input_required; only tools/call, resources/read and \
                 prompts/get may ask for input (multi round-trip requests)."
            ),
        ));
    }
    if rt == "complete" && CACHEABLE_METHODS.contains(&link.method.as_str()) {
        let missing: Vec<&str> = ["ttlMs", "cacheScope"]
            .into_iter()
            .filter(|k| result.get(*k).is_none())
            .collect();
        if !missing.is_empty() {
            out.push(Finding::new(
                rule::CACHE_FIELDS_MISSING,
                Severity::Error,
                vec![f.seq],
                format!(
                    "The server answered {label} without {}. In 2026-07-28 list, read and discover results say \
                     how long they may be cached (ttlMs, 0 for not at all) and by whom (cacheScope: public or \
                     private).",
                    missing.join(" and ")
                ),
            ));
        }
    }
}

// ---------------------------------------------------------------------------
// Multi round-trip chains.

/// One round of a chain, as far as the next round's check needs it.
struct Round {
    request_seq: u64,
    id: Option<RequestId>,
    sent_state: Option<String>,
    response_seq: Option<u64>,
    /// `resultType` of the answer (`error` for an error response).
    outcome: Option<String>,
    given_state: Option<String>,
}

/// A chain that may still go on: its last round is waiting for its answer or
/// was answered `input_required`. Finished chains are forgotten.
struct Chain {
    method: String,
    target: Option<String>,
    last: Round,
}

#[derive(Default)]
pub(super) struct RoundTrips {
    /// By chain number, in order of their first request.
    open: BTreeMap<u64, Chain>,
    next_chain: u64,
    /// Request seq of a round waiting for its answer -> its chain.
    waiting: HashMap<u64, u64>,
}

#[derive(serde::Deserialize)]
struct RoundResult {
    #[serde(default)]
    result: Option<RoundOutcome>,
}

#[derive(serde::Deserialize)]
struct RoundOutcome {
    #[serde(default, rename = "resultType")]
    result_type: Option<Value>,
    #[serde(default, rename = "requestState")]
    request_state: Option<Value>,
}

/// Searchers built once: `memmem::find` builds one per call, a tenth of
/// the search itself on a line of a few hundred bytes.
static RESULT_TYPE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"resultType"));
static UNICODE_ESCAPE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\\u"));

/// Whether a JSON text may hold a member named `key` (plain ASCII): it is
/// written there, or something is spelled with a `\u` escape, the only way to
/// write its letters otherwise.
fn may_hold_key(text: &[u8], key: &Finder) -> bool {
    key.find(text).is_some() || UNICODE_ESCAPE.find(text).is_some()
}

fn as_string(v: Option<Value>) -> Option<String> {
    match v {
        Some(Value::String(s)) => Some(s),
        _ => None,
    }
}

impl RoundTrips {
    /// `params`: the request's, read once for every concern
    /// ([`RequestParams::of`] with [`crate::protocol::mrtr::may_require_input`]).
    pub fn frame(&mut self, f: &Frame, params: &RequestParams, out: &mut Vec<Finding>) {
        match (f.direction, f.kind()) {
            (Direction::Out, Kind::Request) => {
                let Some(method) = f
                    .class
                    .method
                    .as_deref()
                    .filter(|m| crate::protocol::mrtr::may_require_input(m))
                else {
                    return;
                };
                let (target, sent_state, has_responses) = match params {
                    RequestParams::Read(Some(p)) => {
                        let target = match &p.name {
                            Some(n) => as_string(Some(n.clone())),
                            None => as_string(p.uri.clone()),
                        };
                        (target, as_string(p.request_state.clone()), p.input_responses)
                    }
                    _ => (None, None, false),
                };
                let round = Round {
                    request_seq: f.seq,
                    id: f.class.id.clone(),
                    sent_state,
                    response_seq: None,
                    outcome: None,
                    given_state: None,
                };
                let continues = if has_responses || round.sent_state.is_some() {
                    self.open
                        .iter()
                        .rev()
                        .find(|(_, c)| {
                            c.method == method
                                && c.target == target
                                && c.last.outcome.as_deref() == Some("input_required")
                        })
                        .map(|(n, _)| *n)
                } else {
                    None
                };
                let no = match continues {
                    Some(no) => {
                        let chain = self.open.get_mut(&no).expect("found above");
                        check_retry(&chain.method, &chain.last, &round, out);
                        chain.last = round;
                        no
                    }
                    None => {
                        let no = self.next_chain;
                        self.next_chain += 1;
                        self.open.insert(
                            no,
                            Chain {
                                method: method.to_owned(),
                                target,
                                last: round,
                            },
                        );
                        no
                    }
                };
                self.waiting.insert(f.seq, no);
            }
            (Direction::In, Kind::Result | Kind::Error) => {
                let Some(link) = &f.link else { return };
                let Some(no) = self.waiting.remove(&link.request_seq) else {
                    return;
                };
                let Some(chain) = self.open.get_mut(&no) else { return };
                let round = &mut chain.last;
                if round.request_seq != link.request_seq || round.response_seq.is_some() {
                    return;
                }
                round.response_seq = Some(f.seq);
                if f.kind() == Kind::Error {
                    round.outcome = Some("error".into());
                } else {
                    // A result that cannot name a resultType is complete and
                    // ends the chain: most are, and are not parsed again.
                    let outcome = if may_hold_key(&f.raw, &RESULT_TYPE) {
                        serde_json::from_slice::<RoundResult>(&f.raw)
                            .ok()
                            .and_then(|r| r.result)
                    } else {
                        None
                    };
                    let (rt, given) = match outcome {
                        Some(o) => (
                            as_string(o.result_type).unwrap_or_else(|| "complete".into()),
                            as_string(o.request_state),
                        ),
                        None => ("complete".into(), None),
                    };
                    round.outcome = Some(rt);
                    round.given_state = given;
                }
                if round.outcome.as_deref() != Some("input_required") {
                    self.open.remove(&no);
                }
            }
            _ => {}
        }
    }
}

fn check_retry(method: &str, prev: &Round, next: &Round, out: &mut Vec<Finding>) {
    if next.id.is_some() && next.id == prev.id {
        out.push(Finding::new(
            rule::RETRY_REUSED_ID,
            Severity::Error,
            vec![prev.request_seq, next.request_seq],
            format!(
                "The client retried {} #{} with inputResponses under the same JSON-RPC id; every retry of a \
                 multi round-trip request must use a new id.",
                method,
                next.id.as_ref().map_or("?".into(), ToString::to_string)
            ),
        ));
    }
    if next.sent_state != prev.given_state {
        let what = match (&prev.given_state, &next.sent_state) {
            (Some(_), None) => "without the requestState the server gave".to_owned(),
            (None, Some(_)) => "with a requestState although the server gave none".to_owned(),
            _ => "with a requestState that differs from the one the server gave".to_owned(),
        };
        let seqs = [Some(prev.request_seq), prev.response_seq, Some(next.request_seq)]
            .into_iter()
            .flatten()
            .collect();
        out.push(Finding::new(
            rule::REQUEST_STATE_NOT_ECHOED,
            Severity::Error,
            seqs,
            format!(
                "The client retried {method} {what}. The requestState is opaque: it must be echoed exactly, and \
                 left out when none was given."
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::{RESULT_TYPE, may_hold_key};

    #[test]
    fn a_key_is_found_however_it_is_spelled() {
        let key = &*RESULT_TYPE;
        assert!(may_hold_key(br#"{"result":{"resultType":"complete"}}"#, key));
        assert!(may_hold_key(br#"{"result":{"result\u0054ype":"input_required"}}"#, key));
        assert!(may_hold_key(br#"{"result":{"\u0072esultType":"x"}}"#, key));
        // Other escapes cannot spell a letter.
        assert!(!may_hold_key(br#"{"result":{"content":[{"text":"a\"b\nc"}]}}"#, key));
        assert!(!may_hold_key(br#"{"result":{"isError":false}}"#, key));
        // Checked against the parse it stands in for.
        for line in [
            r#"{"result":{"result\u0054ype":"input_required"}}"#,
            r#"{"result":{"content":[],"note":"\"resultType\""}}"#,
            r#"{"result":{"content":[]}}"#,
        ] {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            if v.pointer("/result/resultType").is_some() {
                assert!(may_hold_key(line.as_bytes(), key), "{line}");
            }
        }
    }
}
