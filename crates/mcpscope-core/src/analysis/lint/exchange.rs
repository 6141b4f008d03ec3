//! Requests and their responses: ids used twice, answers nobody asked for,
//! requests left waiting, a server that exits under one, slow answers.

use super::facts::Facts;
use super::{Finding, LintOptions, Severity, human_duration, list_labels, rule, sender};
use crate::protocol::methods;
use crate::transport::event::{Event, TouchKind};
use crate::wire::classify::{Anomalies, Kind};
use crate::wire::frame::{Direction, Frame};
use crate::wire::message::RequestId;
use foldhash::{HashMap, HashSet};
use std::collections::BTreeMap;
use std::time::Duration;

/// The note the session and the proxy record when shutdown begins
/// (transport/session.rs, transport/proxy.rs); an exit after it was asked for.
const SHUTDOWN_NOTE: &str = "closed the server's stdin";

/// A request still waiting for its response.
struct Pending {
    direction: Direction,
    id: RequestId,
    /// Its method; the label `method #id` is spelled out only for a finding.
    method: Option<String>,
    at: Duration,
    is_discover: bool,
    timed_out: bool,
    cancelled: bool,
    reported: bool,
    /// The progress token the request asked for, as JSON text.
    progress_token: Option<String>,
    /// The server reported progress on it.
    progressed: bool,
    /// An intercepting proxy dropped it, answered it itself, or ended the
    /// session instead of sending it: no answer from the other side is
    /// expected, and the proxy's own finding says why.
    intercepted: bool,
    /// For a client request: time the client spent answering the server's
    /// own requests (elicitation, sampling, roots) while this one waited.
    client_time: Duration,
}

impl Pending {
    /// As [`super::request_label`] spells a request.
    fn label(&self) -> String {
        format!("{} #{}", self.method.as_deref().unwrap_or("?"), self.id)
    }
}

/// A request id used again, reported unless the session turns out to be of
/// the modern era and the id's earlier request was already answered.
struct Reuse {
    finding: Finding,
    allowed_if_modern: bool,
}

#[derive(Default)]
pub(super) struct Exchanges {
    /// First use of each id per sender.
    first_use: HashMap<(Direction, RequestId), u64>,
    /// Requests answered so far, per sender and id: in 2026-07-28 an id only
    /// must not match one still waiting for its response. Kept only while the
    /// session may be of that era.
    answered: HashSet<(Direction, RequestId)>,
    /// First response per request seq. Ordered: requests are mostly answered
    /// in the order they were sent, so inserts land where the last one did
    /// (a hash map of every request ever answered misses the cache on each).
    first_response: BTreeMap<u64, u64>,
    reuses: Vec<Reuse>,
    pending: BTreeMap<u64, Pending>,
    /// Progress token (JSON text) -> the waiting request that asked for it.
    progress_tokens: HashMap<String, u64>,
    shutting_down: bool,
    last_at: Duration,
}

#[derive(serde::Deserialize)]
struct WithToken {
    params: Option<TokenParams>,
}

#[derive(serde::Deserialize)]
struct TokenParams {
    #[serde(rename = "_meta")]
    meta: Option<TokenMeta>,
    #[serde(rename = "progressToken")]
    token: Option<serde_json::Value>,
}

#[derive(serde::Deserialize)]
struct TokenMeta {
    #[serde(rename = "progressToken")]
    token: Option<serde_json::Value>,
}

/// `params._meta.progressToken` of a request, `params.progressToken` of a
/// progress notification; read only when the line mentions one.
fn progress_token(f: &Frame, in_meta: bool) -> Option<String> {
    // Built once: `memmem::find` builds a searcher per call.
    static KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"progressToken"));
    KEY.find(&f.raw)?;
    let v: WithToken = serde_json::from_slice(&f.raw).ok()?;
    let p = v.params?;
    let token = if in_meta { p.meta?.token } else { p.token };
    token.filter(|t| !t.is_null()).map(|t| t.to_string())
}

impl Exchanges {
    pub fn seen_at(&mut self, at: Duration) {
        self.last_at = self.last_at.max(at);
    }

    pub fn frame(&mut self, f: &Frame, facts: &Facts, options: &LintOptions, out: &mut Vec<Finding>) {
        let a = f.anomalies();
        let who = sender(f.direction);
        match f.kind() {
            Kind::Request => {
                let Some(id) = f.class.id.clone() else { return };
                let earlier = *self.first_use.entry((f.direction, id.clone())).or_insert(f.seq);
                let allowed_if_modern = facts.may_be_modern() && self.answered.remove(&(f.direction, id.clone()));
                if a.contains(Anomalies::DUPLICATE_REQUEST_ID) {
                    let finding = Finding::new(
                        rule::DUPLICATE_REQUEST_ID,
                        Severity::Error,
                        vec![earlier, f.seq],
                        format!(
                            "{who} reused the request id {id} for {} (first used at seq {earlier}); ids must be \
                             unique for each sender within a session, or responses cannot be told apart.",
                            f.class.method.as_deref().unwrap_or("?")
                        ),
                    );
                    if facts.may_be_modern() {
                        self.reuses.push(Reuse {
                            finding,
                            allowed_if_modern,
                        });
                    } else {
                        out.push(finding);
                    }
                }
                let progress_token = progress_token(f, true);
                if let Some(t) = &progress_token {
                    self.progress_tokens.insert(t.clone(), f.seq);
                }
                self.pending.insert(
                    f.seq,
                    Pending {
                        direction: f.direction,
                        id,
                        method: f.class.method.clone(),
                        at: f.at,
                        is_discover: f.class.method.as_deref() == Some(methods::SERVER_DISCOVER),
                        timed_out: false,
                        cancelled: false,
                        reported: false,
                        progress_token,
                        progressed: false,
                        intercepted: false,
                        client_time: Duration::ZERO,
                    },
                );
            }
            Kind::Result | Kind::Error => {
                if let Some(i) = &f.class.id
                    && facts.may_be_modern()
                {
                    self.answered.insert((f.direction.opposite(), i.clone()));
                }
                // Spelled out only for a finding: most responses have none.
                let id = || f.class.id.as_ref().map_or_else(|| "?".to_owned(), ToString::to_string);
                if a.contains(Anomalies::UNKNOWN_RESPONSE_ID) {
                    let id = id();
                    out.push(Finding::new(
                        rule::UNKNOWN_RESPONSE_ID,
                        Severity::Error,
                        vec![f.seq],
                        format!(
                            "{who} sent a response for id {id}, but the other side never sent a request with that id."
                        ),
                    ));
                }
                let Some(link) = &f.link else { return };
                let first = *self.first_response.entry(link.request_seq).or_insert(f.seq);
                if a.contains(Anomalies::DUPLICATE_RESPONSE) {
                    let id = id();
                    out.push(Finding::new(
                        rule::DUPLICATE_RESPONSE,
                        Severity::Error,
                        vec![link.request_seq, first, f.seq],
                        format!(
                            "{who} answered {} #{id} a second time (first answer at seq {first}); each request \
                             gets exactly one response.",
                            link.method
                        ),
                    ));
                }
                let answered = self.pending.remove(&link.request_seq);
                if let Some(p) = &answered
                    && let Some(t) = &p.progress_token
                {
                    self.progress_tokens.remove(t);
                }
                match f.direction {
                    Direction::In => self.slow(f, answered.as_ref(), options, out),
                    Direction::Out => {
                        // The client answered one of the server's requests: the time
                        // it took is not the server's for the requests waiting meanwhile.
                        if let Some(p) = &answered {
                            for w in self.pending.values_mut().filter(|w| w.direction == Direction::Out) {
                                let from = p.at.max(w.at);
                                w.client_time += f.at.saturating_sub(from);
                            }
                        }
                    }
                }
            }
            Kind::Notification => match f.class.method.as_deref() {
                Some(methods::CANCELLED) => {
                    let id = f
                        .json()
                        .and_then(|v| v.pointer("/params/requestId").and_then(RequestId::from_json));
                    if let Some(id) = id {
                        self.cancel(f.direction, &id);
                    }
                }
                Some(methods::PROGRESS) if f.direction == Direction::In => {
                    if let Some(t) = progress_token(f, false)
                        && let Some(seq) = self.progress_tokens.get(&t)
                        && let Some(p) = self.pending.get_mut(seq)
                    {
                        p.progressed = true;
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }

    fn cancel(&mut self, dir: Direction, id: &RequestId) {
        if let Some(p) = self
            .pending
            .values_mut()
            .rev()
            .find(|p| p.direction == dir && &p.id == id)
        {
            p.cancelled = true;
        }
    }

    /// Only the server's answers: the client's may wait on a person
    /// (sampling, elicitation), which is no fault of the protocol. Time the
    /// client itself spent answering the server meanwhile is not counted, and
    /// a server that reported progress all along did what the rule asks.
    fn slow(&self, f: &Frame, request: Option<&Pending>, options: &LintOptions, out: &mut Vec<Finding>) {
        let Some(link) = &f.link else { return };
        let client_time = request.map_or(Duration::ZERO, |p| p.client_time.min(link.latency));
        let server_time = link.latency - client_time;
        if server_time <= options.slow_response || request.is_some_and(|p| p.progressed) {
            return;
        }
        let id = f.class.id.as_ref().map_or_else(|| "?".to_owned(), ToString::to_string);
        let client = if client_time.is_zero() {
            String::new()
        } else {
            format!(
                "; another {} went to the client answering the server's own requests and is not counted",
                human_duration(client_time)
            )
        };
        out.push(Finding::new(
            rule::SLOW_RESPONSE,
            Severity::Warning,
            vec![link.request_seq, f.seq],
            format!(
                "The server took {} to answer {} #{id} (the threshold is {}{client}). Clients often time out long \
                 requests; report progress with notifications/progress if the work is really that slow.",
                human_duration(server_time),
                link.method,
                human_duration(options.slow_response),
            ),
        ));
    }

    pub fn event(&mut self, e: &Event, out: &mut Vec<Finding>) {
        match e {
            Event::TimedOut { timed_out, .. } => {
                if let Some(p) = self.pending.get_mut(&timed_out.request_seq) {
                    p.timed_out = true;
                }
            }
            Event::Cancelled { id, .. } => self.cancel(Direction::Out, id),
            // The server answered at the HTTP level (a 401, an error page):
            // the request was refused, not left waiting.
            Event::Http(h) if h.error.is_some() && h.status.is_some() => {
                if let Some(id) = &h.request_id {
                    self.pending
                        .retain(|_, p| !(p.direction == Direction::Out && &p.id == id));
                }
            }
            Event::Note { text, .. } if text.contains(SHUTDOWN_NOTE) => self.shutting_down = true,
            Event::Touch(t) => {
                let ends_session = t.kind == TouchKind::Fault && t.rule.as_deref().is_some_and(ends_the_session);
                if ends_session {
                    // The proxy ended it on purpose: not a crash.
                    self.shutting_down = true;
                }
                if (matches!(t.kind, TouchKind::Dropped | TouchKind::Answered) || ends_session)
                    && let Some(p) = t.of_seq.and_then(|seq| self.pending.get_mut(&seq))
                {
                    p.intercepted = true;
                }
            }
            Event::Exited { at, status } if !self.shutting_down => {
                let (mut seqs, mut labels, mut first_at) = (Vec::new(), Vec::new(), None);
                for (&seq, p) in self
                    .pending
                    .iter_mut()
                    .filter(|(_, p)| p.direction == Direction::Out && !p.timed_out && !p.cancelled && !p.intercepted)
                {
                    seqs.push(seq);
                    labels.push(p.label());
                    first_at.get_or_insert(p.at);
                    p.reported = true;
                }
                let Some(first_at) = first_at else { return };
                let waited = at.saturating_sub(first_at);
                out.push(Finding::new(
                    rule::EXITED_DURING_REQUEST,
                    Severity::Error,
                    seqs,
                    format!(
                        "The server {status} while {} {} waiting for a response ({} after it was sent), without \
                         being asked to stop: it crashed or quit in the middle of a request. Its stderr usually \
                         says why.",
                        list_labels(&labels),
                        if labels.len() == 1 { "was" } else { "were" },
                        human_duration(waited),
                    ),
                ));
            }
            _ => {}
        }
    }

    /// Ids reused (judged by the era as known so far) and, once the session
    /// is over, requests that never got an answer. While it goes on, a
    /// request in flight is not missing.
    pub fn provisional(&self, facts: &Facts, session_over: bool, out: &mut Vec<Finding>) {
        let modern = facts.modern();
        out.extend(
            self.reuses
                .iter()
                .filter(|r| !(modern && r.allowed_if_modern))
                .map(|r| r.finding.clone()),
        );
        for (&seq, p) in &self.pending {
            // A live session's request may still be answered, unless it timed out.
            if !session_over && !p.timed_out {
                continue;
            }
            if p.reported || p.intercepted || (p.cancelled && !p.timed_out) {
                continue;
            }
            if facts.initialize_sent && p.is_discover {
                // The era probe: no answer is how a legacy server may say it is one.
                continue;
            }
            let waited = human_duration(self.last_at.saturating_sub(p.at));
            let msg = match p.direction {
                Direction::Out if !session_over => format!(
                    "{} got no response from the server: it timed out after {waited}.",
                    p.label()
                ),
                Direction::Out => format!(
                    "{} got no response from the server: waited {waited} until the end of the session{}.",
                    p.label(),
                    if p.timed_out { " (it timed out)" } else { "" },
                ),
                Direction::In => format!(
                    "The server's request {} got no response from the client: waited {waited} until the end of the \
                     session.",
                    p.label()
                ),
            };
            out.push(Finding::new(
                rule::UNANSWERED_REQUEST,
                Severity::Warning,
                vec![seq],
                msg,
            ));
        }
    }
}

/// A fault rule whose action ends the session (`kill-server`, `disconnect`).
fn ends_the_session(rule: &str) -> bool {
    rule.rsplit_once("=>")
        .map(|(_, action)| action.split_whitespace().next())
        .is_some_and(|a| matches!(a, Some("kill-server" | "disconnect")))
}
