//! The session's lifecycle as the wire shows it: what was offered and
//! answered in the handshake, what was sent too early, what never came.
//!
//! One set of facts, gathered frame by frame (incrementally: a new frame
//! updates them, nothing re-reads the session), and one set of verdicts drawn
//! from them. The handshake strip above the timeline, the protocol lint and
//! the doctor all read these, so two views never judge the same session
//! differently.

use crate::protocol::era::{self, Discovery, Era};
use crate::protocol::handshake::{self, Handshake, VersionVerdict};
use crate::protocol::methods;
use crate::wire::classify::Kind;
use crate::wire::frame::{Direction, Frame};
use crate::wire::message::ErrorObject;
use serde_json::{Value, json};
use std::time::Duration;

/// How bad a verdict is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    Ok,
    Info,
    Warning,
    Error,
}

/// What a verdict is about (the lint rule that reports it, where there is one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Topic {
    /// The version negotiation went well (or as well as it could).
    Negotiated,
    NoInitializeYet,
    InitializeUnanswered,
    InitializeRefused,
    UnsupportedVersion,
    ResultIncomplete,
    InitializedNotSent,
    InitializedBeforeResponse,
    RequestBeforeInitialize,
    ServerRequestBeforeInitialized,
    /// Lines on the server's stdout that are not JSON-RPC, during the handshake.
    StrayOutputDuringHandshake,
}

/// One judgement: its topic, how bad, the frames (by seq) it is about, and
/// one short sentence.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub topic: Topic,
    pub level: Level,
    pub seqs: Vec<u64>,
    pub text: String,
}

/// Everything the lifecycle rules judge, kept current frame by frame.
#[derive(Clone, Debug, Default)]
pub struct LifecycleFacts {
    /// The first `initialize` request.
    pub init_req: Option<u64>,
    pub offered: Option<String>,
    /// The client's capabilities from the initialize params (`{}` when absent).
    pub client_caps: Option<Value>,
    /// The response to `initialize`.
    pub init_resp: Option<u64>,
    pub judged: Option<Handshake>,
    /// The server refused `initialize`: its error, as a person reads it.
    pub refused: Option<String>,
    /// The versions the refusal names as supported (`data.supported`).
    pub refused_supported: Vec<String>,
    pub initialized: Option<u64>,
    /// Client requests other than ping, initialize and server/discover sent
    /// before initialize was answered.
    pub early_requests: Vec<u64>,
    /// Server requests other than ping sent before `notifications/initialized`.
    pub early_server_requests: Vec<u64>,
    /// Client requests sent after the initialize response (evidence that the
    /// client went on, with or without `notifications/initialized`).
    pub requests_after_response: Vec<u64>,
    /// Lines on stdout that are not JSON-RPC while the handshake was under way.
    pub stray_during_handshake: Vec<u64>,
    /// `initialize` sent again before any answer (the first one's HTTP
    /// exchange asked for authorization): whichever is answered is the one.
    pub init_resent: Vec<u64>,
    /// The first `server/discover` result: its seq and what it says.
    pub discovery: Option<(u64, Discovery)>,
    /// A client request carried a modern protocol version in `_meta`.
    pub modern_request: bool,
    /// The first `initialize` timed out: how long it waited.
    pub init_timed_out: Option<std::time::Duration>,
    /// An authorization the handshake needed failed: why.
    pub auth_failed: Option<String>,
}

impl LifecycleFacts {
    /// The facts of these frames, in order.
    pub fn gather<'a>(frames: impl IntoIterator<Item = &'a Frame>) -> Self {
        let mut facts = LifecycleFacts::default();
        for f in frames {
            facts.observe(f);
        }
        facts
    }

    /// A request timed out (the session's own clock said so).
    pub fn timed_out(&mut self, request_seq: u64, waited: std::time::Duration) {
        if self.init_req == Some(request_seq) && self.init_resp.is_none() {
            self.init_timed_out = Some(waited);
        }
    }

    /// An authorization failed before the handshake was answered.
    pub fn authorization_failed(&mut self, why: &str) {
        if self.init_resp.is_none() && self.auth_failed.is_none() {
            self.auth_failed = Some(why.to_owned());
        }
    }

    /// Takes one more frame into account.
    pub fn observe(&mut self, f: &Frame) {
        let method = f.class.method.as_deref();
        match (f.direction, f.kind()) {
            (Direction::Out, Kind::Request) => {
                if method == Some(methods::INITIALIZE) && self.init_req.is_some() && self.init_resp.is_none() {
                    self.init_resent.push(f.seq);
                    return;
                }
                if method == Some(methods::INITIALIZE) && self.init_req.is_none() {
                    self.init_req = Some(f.seq);
                    let params = f.json().and_then(|v| v.get("params").cloned()).unwrap_or(Value::Null);
                    self.offered = params.get("protocolVersion").and_then(Value::as_str).map(str::to_owned);
                    self.client_caps = Some(params.get("capabilities").cloned().unwrap_or_else(|| json!({})));
                    return;
                }
                let exempt = matches!(
                    method,
                    Some(methods::PING | methods::INITIALIZE | methods::SERVER_DISCOVER)
                );
                if self.init_resp.is_some() {
                    self.requests_after_response.push(f.seq);
                } else if !exempt {
                    self.early_requests.push(f.seq);
                }
                // Only worth parsing params while there is no handshake to go by.
                if !self.modern_request
                    && self.negotiated().is_none()
                    && method != Some(methods::INITIALIZE)
                    && f.json().is_some_and(|v| {
                        v.get("params")
                            .and_then(era::request_version)
                            .is_some_and(|ver| Era::of_version(ver) == Some(Era::Modern))
                    })
                {
                    self.modern_request = true;
                }
            }
            (Direction::Out, Kind::Notification)
                if method == Some(methods::INITIALIZED) && self.initialized.is_none() =>
            {
                self.initialized = Some(f.seq);
            }
            (Direction::In, Kind::Result | Kind::Error)
                if self.init_resp.is_none()
                    && self.init_req.is_some()
                    && f.link.as_ref().is_some_and(|l| {
                        Some(l.request_seq) == self.init_req || self.init_resent.contains(&l.request_seq)
                    }) =>
            {
                if let Some(l) = &f.link {
                    self.init_req = Some(l.request_seq);
                }
                self.init_resp = Some(f.seq);
                let v = f.json().unwrap_or(Value::Null);
                if f.kind() == Kind::Result {
                    let latency = f.link.as_ref().map_or(Duration::ZERO, |l| l.latency);
                    self.judged = Some(Handshake::judge(
                        self.offered.as_deref().unwrap_or_default(),
                        v.get("result").unwrap_or(&Value::Null),
                        latency,
                    ));
                } else {
                    let error = ErrorObject::from_json(&v["error"]);
                    self.refused_supported = error.as_ref().map(handshake::supported_from_error).unwrap_or_default();
                    self.refused = Some(error.map_or_else(
                        || {
                            format!(
                                "a malformed error object: {}",
                                crate::text::shorten(&v["error"].to_string(), 120)
                            )
                        },
                        |e| e.to_string(),
                    ));
                }
            }
            (Direction::In, Kind::Result)
                if self.discovery.is_none()
                    && f.link.as_ref().is_some_and(|l| l.method == methods::SERVER_DISCOVER) =>
            {
                if let Some(d) = f.json().and_then(|v| v.get("result").and_then(Discovery::from_result)) {
                    self.discovery = Some((f.seq, d));
                }
            }
            (Direction::In, Kind::Request) if method != Some(methods::PING) && self.initialized.is_none() => {
                self.early_server_requests.push(f.seq);
            }
            (Direction::In, Kind::NotJsonRpc | Kind::NotJson)
                if self.init_req.is_some() && self.init_resp.is_none() =>
            {
                self.stray_during_handshake.push(f.seq);
            }
            _ => {}
        }
    }

    /// The version both sides settled on, when they did.
    pub fn negotiated(&self) -> Option<&str> {
        self.judged.as_ref()?.version()
    }

    /// Whether the session speaks the stateless 2026-07-28 revision (no handshake).
    pub fn modern(&self) -> bool {
        self.negotiated().is_none() && (self.discovery.is_some() || self.modern_request)
    }

    /// The server's capabilities: from the initialize result, or (modern era)
    /// from `server/discover`.
    pub fn server_caps(&self) -> Option<&Value> {
        self.judged
            .as_ref()
            .and_then(|h| h.capabilities.as_ref())
            .or_else(|| self.discovery.as_ref().and_then(|(_, d)| d.capabilities.as_ref()))
            .filter(|c| c.is_object())
    }

    /// Why the server is known to speak only the modern era (its own words), if it is.
    pub fn modern_only(&self) -> Option<String> {
        let all_modern = |v: &[String]| !v.is_empty() && v.iter().all(|x| Era::of_version(x) == Some(Era::Modern));
        if let Some((_, d)) = &self.discovery
            && all_modern(&d.supported_versions)
        {
            return Some(format!(
                "its server/discover lists only {}",
                d.supported_versions.join(", ")
            ));
        }
        let supported = &self.refused_supported;
        all_modern(supported).then(|| {
            format!(
                "it refused initialize naming only {} as supported",
                supported.join(", ")
            )
        })
    }

    /// The judgements, most severe first. `ended`: the session is over, so
    /// what has not happened will not (a live session is given the benefit
    /// of the doubt: an answer or a notification may still come).
    pub fn verdicts(&self, ended: bool) -> Vec<Verdict> {
        let mut out = Vec::new();
        let mut push = |topic, level, seqs: Vec<u64>, text: String| {
            out.push(Verdict {
                topic,
                level,
                seqs,
                text,
            })
        };
        if self.modern() {
            return out;
        }
        match (self.init_req, &self.judged, &self.refused) {
            (None, _, _) => {
                if self.early_requests.is_empty() {
                    push(
                        Topic::NoInitializeYet,
                        Level::Info,
                        vec![],
                        "no initialize sent yet".into(),
                    );
                }
            }
            // What stopped the handshake is said as soon as it is known.
            (Some(req), None, None) if self.auth_failed.is_some() => push(
                Topic::InitializeUnanswered,
                Level::Error,
                vec![req],
                format!(
                    "initialize not answered: authorization failed: {}",
                    self.auth_failed.as_deref().unwrap_or_default()
                ),
            ),
            (Some(req), None, None) if self.init_timed_out.is_some() => push(
                Topic::InitializeUnanswered,
                Level::Error,
                vec![req],
                format!(
                    "initialize timed out after {} ms: the server did not answer",
                    self.init_timed_out.unwrap_or_default().as_millis()
                ),
            ),
            (Some(req), None, None) => push(
                Topic::InitializeUnanswered,
                if ended { Level::Error } else { Level::Info },
                vec![req],
                if ended {
                    "initialize got no response".into()
                } else {
                    "waiting for the initialize response".into()
                },
            ),
            (Some(req), _, Some(err)) => push(
                Topic::InitializeRefused,
                Level::Error,
                vec![req, self.init_resp.unwrap_or(req)],
                format!("initialize refused: {err}"),
            ),
            (Some(req), Some(h), None) => {
                let resp = self.init_resp.unwrap_or(req);
                let (topic, level) = match h.verdict {
                    VersionVerdict::Accepted => (Topic::Negotiated, Level::Ok),
                    VersionVerdict::CounterOffer => (Topic::Negotiated, Level::Warning),
                    VersionVerdict::Unsupported => (Topic::UnsupportedVersion, Level::Error),
                    VersionVerdict::Missing => (Topic::ResultIncomplete, Level::Error),
                };
                push(topic, level, vec![req, resp], h.verdict_text());
                let missing: Vec<&str> = h
                    .missing_fields
                    .iter()
                    .copied()
                    .filter(|m| !(h.verdict == VersionVerdict::Missing && *m == "protocolVersion"))
                    .collect();
                if !missing.is_empty() {
                    push(
                        Topic::ResultIncomplete,
                        Level::Error,
                        vec![resp],
                        format!("initialize result lacks {}", missing.join(", ")),
                    );
                }
                // Missing only once the session is over, or once the client
                // went on with other requests without it.
                if self.initialized.is_none() && h.usable() && (ended || !self.requests_after_response.is_empty()) {
                    push(
                        Topic::InitializedNotSent,
                        Level::Error,
                        vec![resp],
                        "notifications/initialized not sent".into(),
                    );
                }
            }
        }
        if let (Some(init), Some(resp)) = (self.initialized, self.init_resp)
            && init < resp
        {
            push(
                Topic::InitializedBeforeResponse,
                Level::Warning,
                vec![init],
                "notifications/initialized sent before the initialize response".into(),
            );
        }
        if self.initialized.is_some() && self.init_resp.is_none() && self.init_req.is_some() {
            push(
                Topic::InitializedBeforeResponse,
                Level::Warning,
                vec![self.initialized.unwrap_or_default()],
                "notifications/initialized sent before the initialize response".into(),
            );
        }
        if !self.early_requests.is_empty() {
            let n = self.early_requests.len();
            push(
                Topic::RequestBeforeInitialize,
                Level::Warning,
                self.early_requests.clone(),
                if self.init_req.is_none() {
                    format!("{n} request(s) sent without initialize (the handshake is required up to 2025-11-25)")
                } else {
                    format!("{n} request(s) sent before the initialize response")
                },
            );
        }
        if !self.early_server_requests.is_empty() {
            push(
                Topic::ServerRequestBeforeInitialized,
                Level::Warning,
                self.early_server_requests.clone(),
                format!(
                    "the server sent {} request(s) before notifications/initialized",
                    self.early_server_requests.len()
                ),
            );
        }
        if !self.stray_during_handshake.is_empty() {
            push(
                Topic::StrayOutputDuringHandshake,
                Level::Warning,
                self.stray_during_handshake.clone(),
                format!(
                    "{} line(s) on stdout during the handshake are not JSON-RPC (logs belong on stderr)",
                    self.stray_during_handshake.len()
                ),
            );
        }
        out.sort_by_key(|v| std::cmp::Reverse(v.level));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Lines;

    const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    const ANSWER: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#;
    const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

    fn facts(r: &Lines) -> LifecycleFacts {
        LifecycleFacts::gather(&r.frames())
    }

    fn topics(v: &[Verdict]) -> Vec<Topic> {
        v.iter().map(|v| v.topic).collect()
    }

    /// #25 item 2: what stopped the handshake is said at once, not
    /// "waiting for the initialize response" until the session ends.
    #[test]
    fn a_timed_out_or_unauthorized_initialize_is_said_while_the_session_lives() {
        let mut r = Lines::new();
        r.out(INIT);
        let mut f = facts(&r);
        assert_eq!(f.verdicts(false)[0].text, "waiting for the initialize response");
        let req = f.init_req.unwrap();
        f.timed_out(req + 7, std::time::Duration::from_secs(1));
        assert_eq!(
            f.verdicts(false)[0].level,
            Level::Info,
            "another request's timeout is not initialize's"
        );
        f.timed_out(req, std::time::Duration::from_millis(30_000));
        let v = f.verdicts(false);
        assert_eq!(
            (v[0].level, v[0].text.as_str()),
            (
                Level::Error,
                "initialize timed out after 30000 ms: the server did not answer"
            )
        );
        let mut f = facts(&r);
        f.authorization_failed("the redirect's state did not match: refused");
        let v = f.verdicts(false);
        assert_eq!(v[0].level, Level::Error);
        assert_eq!(
            v[0].text,
            "initialize not answered: authorization failed: the redirect's state did not match: refused"
        );
    }

    #[test]
    fn a_clean_handshake_is_one_ok_verdict() {
        let mut r = Lines::new();
        r.out(INIT).inn(ANSWER).out(INITIALIZED);
        let v = facts(&r).verdicts(true);
        assert_eq!(topics(&v), [Topic::Negotiated]);
        assert_eq!(v[0].level, Level::Ok);
    }

    #[test]
    fn initialized_is_missing_only_once_the_client_went_on_or_the_session_ended() {
        let mut r = Lines::new();
        r.out(INIT).inn(ANSWER);
        // Between the response and notifications/initialized: nothing is wrong yet.
        assert_eq!(topics(&facts(&r).verdicts(false)), [Topic::Negotiated]);
        assert!(topics(&facts(&r).verdicts(true)).contains(&Topic::InitializedNotSent));
        r.out(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
        assert!(topics(&facts(&r).verdicts(false)).contains(&Topic::InitializedNotSent));
    }

    #[test]
    fn a_stray_stdout_line_during_the_handshake_is_a_warning() {
        let mut r = Lines::new();
        r.out(INIT)
            .inn("Server listening on stdio")
            .inn(ANSWER)
            .out(INITIALIZED);
        let v = facts(&r).verdicts(false);
        assert_eq!(v[0].topic, Topic::StrayOutputDuringHandshake);
        assert_eq!(v[0].level, Level::Warning);
        assert_eq!(v[0].seqs, [1]);
    }

    #[test]
    fn early_requests_exempt_ping_and_the_probe() {
        let mut r = Lines::new();
        r.out(r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}"#)
            .out(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#)
            .out(r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#)
            .inn(r#"{"jsonrpc":"2.0","id":4,"method":"roots/list"}"#);
        let f = facts(&r);
        assert_eq!(f.early_requests, [2]);
        assert_eq!(f.early_server_requests, [3]);
        let v = f.verdicts(false);
        assert!(v.iter().any(|v| v.text.contains("without initialize")));
    }

    #[test]
    fn an_unanswered_initialize_is_an_error_only_when_the_session_ended() {
        let mut r = Lines::new();
        r.out(INIT);
        assert_eq!(facts(&r).verdicts(false)[0].level, Level::Info);
        assert_eq!(facts(&r).verdicts(true)[0].level, Level::Error);
    }

    #[test]
    fn a_modern_session_has_no_handshake_to_judge() {
        let mut r = Lines::new();
        r.out(r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#)
            .inn(r#"{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28"],"capabilities":{}}}"#);
        let f = facts(&r);
        assert!(f.modern());
        assert!(f.verdicts(true).is_empty());
        assert!(f.modern_only().unwrap().contains("2026-07-28"));
    }

    #[test]
    fn an_initialize_sent_again_before_any_answer_is_the_handshake() {
        let mut r = Lines::new();
        r.out(INIT);
        r.out(r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#);
        r.inn(r#"{"jsonrpc":"2.0","id":2,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#);
        r.out(INITIALIZED);
        let facts = facts(&r);
        assert!(facts.judged.is_some());
        assert_eq!((facts.init_req, facts.init_resent.as_slice()), (Some(1), &[1][..]));
        assert!(facts.early_requests.is_empty());
    }
}
