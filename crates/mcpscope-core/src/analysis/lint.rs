//! Protocol lint: rules run over a whole session, live or loaded from a capture.
//!
//! Classification and correlation judge one line at a time; some mistakes only
//! show across lines: a message broken over several lines, a request nobody
//! answered, a method the other side never advertised, a tool result that does
//! not match the schema the same server published. Each finding names a stable
//! rule id, the frames it is about and a sentence a newcomer understands.

use crate::protocol::handshake::{self, Handshake, VersionVerdict};
use crate::protocol::methods;
pub use crate::record::model::Severity;
use crate::transport::event::Event;
use crate::wire::classify::{Anomalies, Kind};
use crate::wire::frame::{Direction, Frame};
use crate::wire::message::RequestId;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::time::Duration;

/// A lint rule: its stable id and what it checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    pub id: &'static str,
    pub summary: &'static str,
}

macro_rules! rules {
    ($($name:ident = $id:literal, $summary:literal;)*) => {
        /// Rule ids, as constants so a typo is a compile error.
        pub mod rule {
            $( pub const $name: &str = $id; )*
        }

        /// Every rule, in the order findings are reported for the same frame.
        pub const RULES: &[Rule] = &[ $( Rule { id: $id, summary: $summary }, )* ];
    };
}

rules! {
    SPAWN_FAILED = "spawn-failed", "The server process could not be started.";
    NOT_JSON = "not-json", "A line on stdout (or stdin) that is not JSON, usually a log line.";
    BLANK_LINE = "blank-line", "An empty line where a JSON-RPC message belongs.";
    NOT_JSONRPC = "not-jsonrpc", "Valid JSON that is not a JSON-RPC message.";
    INVALID_UTF8 = "invalid-utf8", "A line that is not valid UTF-8.";
    SPLIT_MESSAGE = "split-message", "One JSON message broken over several lines by raw newlines.";
    BATCH_NOT_ALLOWED = "batch-not-allowed", "A JSON-RPC batch where the negotiated version forbids it.";
    CRLF = "crlf", "A line ending in CRLF instead of LF.";
    BOM = "bom", "A line starting with a UTF-8 byte-order mark.";
    PARTIAL_AT_EOF = "partial-at-eof", "The stream ended in the middle of a line.";
    MISSING_JSONRPC = "missing-jsonrpc", "A message without \"jsonrpc\": \"2.0\".";
    WRONG_JSONRPC = "wrong-jsonrpc", "A message whose jsonrpc member is not \"2.0\".";
    RESULT_AND_ERROR = "result-and-error", "A response carrying both result and error.";
    NEITHER_RESULT_NOR_ERROR = "neither-result-nor-error", "A response-like message with an id but no result or error.";
    RESPONSE_WITHOUT_ID = "response-without-id", "A result response that does not echo the request id.";
    NOTIFICATION_WITH_ID = "notification-with-id", "A notification carrying an id.";
    NULL_ID = "null-id", "An id that is null.";
    INVALID_ID = "invalid-id", "An id that is neither a string nor an integer.";
    PARAMS_NOT_OBJECT = "params-not-object", "params present but not an object.";
    RESULT_NOT_OBJECT = "result-not-object", "result is not an object.";
    MALFORMED_ERROR = "malformed-error", "An error object without an integer code and a string message.";
    IS_ERROR_NOT_BOOL = "is-error-not-bool", "A tool result whose isError is not a boolean.";
    DUPLICATE_REQUEST_ID = "duplicate-request-id", "A request id its sender already used in this session.";
    UNKNOWN_RESPONSE_ID = "unknown-response-id", "A response to an id nobody sent.";
    DUPLICATE_RESPONSE = "duplicate-response", "A second response to the same request.";
    UNANSWERED_REQUEST = "unanswered-request", "A request that never got a response.";
    REQUEST_BEFORE_INITIALIZE = "request-before-initialize", "Client requests other than ping before initialize was answered.";
    INITIALIZED_NOT_SENT = "initialized-not-sent", "The client never sent notifications/initialized.";
    INITIALIZED_BEFORE_RESPONSE = "initialized-before-response", "notifications/initialized sent before the initialize response.";
    SERVER_REQUEST_BEFORE_INITIALIZED = "server-request-before-initialized", "Server requests other than ping before notifications/initialized.";
    UNSUPPORTED_VERSION = "unsupported-version", "The server answered initialize with a protocol version outside the supported set.";
    INITIALIZE_RESULT_INCOMPLETE = "initialize-result-incomplete", "The initialize result lacks protocolVersion, capabilities or serverInfo.";
    CONTINUED_AFTER_UNSUPPORTED_VERSION = "continued-after-unsupported-version", "The client kept sending requests after an unsupported version answer.";
    CAPABILITY_NOT_ADVERTISED = "capability-not-advertised", "A method used that the other side did not advertise.";
    LIST_CHANGED_NOT_ADVERTISED = "list-changed-not-advertised", "A list_changed notification without listChanged: true in the capability.";
    TOOL_NAME_FORMAT = "tool-name-format", "A tool name outside 1-128 characters of A-Z a-z 0-9 _ - .";
    INPUT_SCHEMA_NOT_OBJECT = "input-schema-not-object", "A tool inputSchema that is not an object schema with type \"object\".";
    INVALID_INPUT_SCHEMA = "invalid-input-schema", "A tool inputSchema that is not valid JSON Schema.";
    INVALID_OUTPUT_SCHEMA = "invalid-output-schema", "A tool outputSchema that is not valid JSON Schema.";
    UNSUPPORTED_SCHEMA_DIALECT = "unsupported-schema-dialect", "A tool schema whose $schema names a dialect mcpscope cannot check.";
    STRUCTURED_CONTENT_MISMATCH = "structured-content-mismatch", "structuredContent that does not match the tool's outputSchema.";
    STRUCTURED_CONTENT_MISSING = "structured-content-missing", "A tool with an outputSchema returned no structuredContent.";
    TOOL_ERROR_FOR_PROTOCOL_ERROR = "tool-error-for-protocol-error", "Heuristic: isError used for what is a protocol error (unknown tool).";
    PROTOCOL_ERROR_FOR_TOOL_FAILURE = "protocol-error-for-tool-failure", "Heuristic: a JSON-RPC error for what looks like a tool execution failure.";
    STDERR_ERROR = "stderr-error", "stderr lines that look like an error or a traceback.";
    SLOW_RESPONSE = "slow-response", "A response slower than the threshold.";
    EXITED_DURING_REQUEST = "exited-during-request", "The server exited while a client request was waiting for its answer.";
    INITIALIZE_TO_MODERN_SERVER = "initialize-to-modern-server", "initialize sent to a server that speaks only the modern (2026-07-28) era.";
    MODERN_META_MISSING = "modern-meta-missing", "A modern-era request without protocolVersion or clientCapabilities in params._meta.";
    RESULT_TYPE_MISSING = "result-type-missing", "A modern-era result without resultType, or with one nobody defined.";
    CACHE_FIELDS_MISSING = "cache-fields-missing", "A modern-era list, read or discover result without ttlMs and cacheScope.";
    INPUT_REQUIRED_NOT_ALLOWED = "input-required-not-allowed", "input_required answered by a method other than tools/call, resources/read and prompts/get.";
    RETRY_REUSED_ID = "retry-reused-id", "A multi round-trip retry that reuses the JSON-RPC id of the request it retries.";
    REQUEST_STATE_NOT_ECHOED = "request-state-not-echoed", "A multi round-trip retry whose requestState is not exactly the one the server gave.";
    SERVER_REQUEST_IN_MODERN_ERA = "server-request-in-modern-era", "A request sent by a server of the modern era, which asks through input_required results instead.";
    LEGACY_METHOD_IN_MODERN_ERA = "legacy-method-in-modern-era", "A method removed in 2026-07-28 (ping, logging/setLevel, resources/subscribe …) used with a modern server.";
    UNAUTHORIZED_WITHOUT_CHALLENGE = "401-without-www-authenticate", "An HTTP 401 without a WWW-Authenticate header: the client cannot tell how to authorize.";
    OAUTH_RESOURCE_MISMATCH = "oauth-resource-mismatch", "Protected resource metadata whose resource is not the server it was fetched for.";
    OAUTH_ISSUER_MISMATCH = "oauth-issuer-mismatch", "Authorization server metadata whose issuer is not the authorization server it was looked up for.";
    OAUTH_PKCE_S256_MISSING = "oauth-pkce-s256-missing", "Authorization server metadata that does not advertise PKCE with S256.";
    OAUTH_TOKEN_REQUEST_WITHOUT_RESOURCE = "oauth-token-request-without-resource", "A token request without the resource parameter (RFC 8707): the token is not bound to the server.";
    OAUTH_SCOPE_NOT_ADVERTISED = "oauth-scope-not-advertised", "Scopes requested that neither the server's challenge nor any metadata advertised.";
}

/// One problem found in a session.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    /// A stable kebab-case id from [`RULES`].
    pub rule: &'static str,
    pub severity: Severity,
    /// The sequence numbers of the frames (or stderr lines) it is about.
    pub seqs: Vec<u64>,
    pub message: String,
}

impl Finding {
    fn new(rule: &'static str, severity: Severity, seqs: Vec<u64>, message: impl Into<String>) -> Self {
        Self {
            rule,
            severity,
            seqs,
            message: message.into(),
        }
    }

    pub fn to_json(&self) -> Value {
        json!({
            "rule": self.rule,
            "severity": self.severity.as_str(),
            "seqs": self.seqs,
            "message": self.message,
        })
    }

    /// `error  [rule-id] seq 3,4: message`
    pub fn line(&self) -> String {
        let seqs = if self.seqs.is_empty() {
            String::new()
        } else {
            let list: Vec<String> = self.seqs.iter().map(u64::to_string).collect();
            format!(" seq {}", list.join(","))
        };
        format!("{:<6} [{}]{seqs}: {}", self.severity.as_str(), self.rule, self.message)
    }
}

#[derive(Clone, Debug)]
pub struct LintOptions {
    /// Responses slower than this are reported.
    pub slow_response: Duration,
}

impl Default for LintOptions {
    fn default() -> Self {
        Self {
            slow_response: Duration::from_secs(5),
        }
    }
}

/// Whether any finding is an error.
pub fn has_errors(findings: &[Finding]) -> bool {
    findings.iter().any(|f| f.severity == Severity::Error)
}

/// Runs every rule over a session, in event order. Findings come sorted by
/// the first frame they are about.
pub fn lint(events: &[Event], options: &LintOptions) -> Vec<Finding> {
    let frames: Vec<&Frame> = events
        .iter()
        .filter_map(|e| match e {
            Event::Frame(f) => Some(f),
            _ => None,
        })
        .collect();
    let hs = HandshakeFacts::gather(&frames);
    let mut out = Vec::new();

    for e in events {
        if let Event::SpawnFailed { error, .. } = e {
            out.push(Finding::new(
                rule::SPAWN_FAILED,
                Severity::Error,
                vec![],
                format!("The server could not be started: {error}."),
            ));
        }
    }
    let split = split_messages(&frames, &mut out);
    for f in &frames {
        frame_rules(f, &hs, &split, &mut out);
    }
    correlation_rules(&frames, &hs, &mut out);
    pending_rules(events, &mut out);
    lifecycle_rules(&frames, &hs, &mut out);
    era_rules(&frames, &hs, &mut out);
    mrtr_rules(&frames, &mut out);
    capability_rules(&frames, &hs, &mut out);
    tool_rules(&frames, &mut out);
    stderr_rules(events, &mut out);
    slow_rules(&frames, options, &mut out);
    auth_rules(events, &frames, &mut out);

    let order = |r: &str| RULES.iter().position(|x| x.id == r).unwrap_or(usize::MAX);
    out.sort_by_key(|f| (f.seqs.first().copied().unwrap_or(u64::MAX), order(f.rule)));
    out
}

// ---------------------------------------------------------------------------
// Helpers for messages.

fn sender(d: Direction) -> &'static str {
    match d {
        Direction::Out => "The client",
        Direction::In => "The server",
    }
}

fn stream(d: Direction) -> &'static str {
    match d {
        Direction::Out => "the server's stdin",
        Direction::In => "stdout",
    }
}

fn quote(text: &str) -> String {
    format!("{:?}", crate::text::shorten(text, 160))
}

fn request_label(f: &Frame) -> String {
    let method = f.class.method.as_deref().unwrap_or("?");
    match &f.class.id {
        Some(id) => format!("{method} #{id}"),
        None => method.to_owned(),
    }
}

fn human_duration(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// Up to five labels, then a count, so a flood stays one readable sentence.
fn list_labels(labels: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut s = labels.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
    if labels.len() > SHOWN {
        s.push_str(&format!(" and {} more", labels.len() - SHOWN));
    }
    s
}

fn is_request(f: &Frame, d: Direction) -> bool {
    f.direction == d && f.kind() == Kind::Request
}

// ---------------------------------------------------------------------------
// The handshake, as far as the session shows it.

#[derive(Default)]
struct HandshakeFacts {
    init_req: Option<u64>,
    offered: Option<String>,
    /// The client's capabilities from the initialize params (`{}` when absent).
    client_caps: Option<Value>,
    init_resp: Option<u64>,
    /// `initialize` sent again before any answer (the first one's HTTP
    /// exchange asked for authorization): whichever is answered counts.
    init_resent: Vec<u64>,
    judged: Option<Handshake>,
    initialized: Option<u64>,
    /// The client speaks the stateless 2026-07-28 revision, which has no handshake.
    modern: bool,
    /// The first `server/discover` result: its seq and what it says.
    discovery: Option<(u64, crate::protocol::era::Discovery)>,
    /// Why the server is known to speak only the modern era (its own words), if it is.
    modern_only: Option<String>,
}

impl HandshakeFacts {
    fn gather(frames: &[&Frame]) -> Self {
        let mut h = HandshakeFacts::default();
        for f in frames {
            let method = f.class.method.as_deref();
            match (f.direction, f.kind()) {
                (Direction::Out, Kind::Request)
                    if method == Some(methods::INITIALIZE) && h.init_req.is_some() && h.init_resp.is_none() =>
                {
                    h.init_resent.push(f.seq);
                }
                (Direction::Out, Kind::Request) if method == Some(methods::INITIALIZE) && h.init_req.is_none() => {
                    h.init_req = Some(f.seq);
                    let params = f.json().and_then(|v| v.get("params").cloned()).unwrap_or(Value::Null);
                    h.offered = params.get("protocolVersion").and_then(Value::as_str).map(str::to_owned);
                    h.client_caps = Some(params.get("capabilities").cloned().unwrap_or_else(|| json!({})));
                }
                (Direction::Out, Kind::Notification)
                    if method == Some(methods::INITIALIZED) && h.initialized.is_none() =>
                {
                    h.initialized = Some(f.seq);
                }
                (Direction::In, Kind::Result | Kind::Error)
                    if h.init_resp.is_none()
                        && h.init_req.is_some()
                        && f.link.as_ref().is_some_and(|l| {
                            Some(l.request_seq) == h.init_req || h.init_resent.contains(&l.request_seq)
                        }) =>
                {
                    if let Some(l) = &f.link {
                        h.init_req = Some(l.request_seq);
                    }
                    h.init_resp = Some(f.seq);
                    if f.kind() == Kind::Result {
                        let result = f.json().and_then(|v| v.get("result").cloned()).unwrap_or(Value::Null);
                        let latency = f.link.as_ref().map_or(Duration::ZERO, |l| l.latency);
                        h.judged = Some(Handshake::judge(
                            h.offered.as_deref().unwrap_or_default(),
                            &result,
                            latency,
                        ));
                    }
                }
                _ => {}
            }
        }
        for f in frames {
            if f.direction == Direction::In
                && f.kind() == Kind::Result
                && f.link.as_ref().is_some_and(|l| l.method == methods::SERVER_DISCOVER)
                && h.discovery.is_none()
                && let Some(d) = f
                    .json()
                    .and_then(|v| v.get("result").and_then(crate::protocol::era::Discovery::from_result))
            {
                h.discovery = Some((f.seq, d));
            }
        }
        let all_modern = |v: &[String]| {
            !v.is_empty()
                && v.iter()
                    .all(|x| crate::protocol::era::Era::of_version(x) == Some(crate::protocol::era::Era::Modern))
        };
        if let Some((_, d)) = &h.discovery
            && all_modern(&d.supported_versions)
        {
            h.modern_only = Some(format!(
                "its server/discover lists only {}",
                d.supported_versions.join(", ")
            ));
        }
        if h.modern_only.is_none()
            && let Some(resp) = h.init_resp
            && let Some(f) = frames.iter().find(|f| f.seq == resp && f.kind() == Kind::Error)
            && let Some(e) = f
                .json()
                .and_then(|v| v.get("error").and_then(crate::wire::message::ErrorObject::from_json))
        {
            let supported = handshake::supported_from_error(&e);
            if all_modern(&supported) {
                h.modern_only = Some(format!(
                    "it refused initialize naming only {} as supported",
                    supported.join(", ")
                ));
            }
        }
        if h.negotiated().is_none() {
            // Only worth parsing params when there is no handshake to go by.
            h.modern = h.discovery.is_some()
                || frames.iter().any(|f| {
                    is_request(f, Direction::Out)
                        && f.class.method.as_deref() != Some(methods::INITIALIZE)
                        && f.json().is_some_and(|v| {
                            v.get("params")
                                .and_then(crate::protocol::era::request_version)
                                .is_some_and(|ver| {
                                    crate::protocol::era::Era::of_version(ver)
                                        == Some(crate::protocol::era::Era::Modern)
                                })
                        })
                });
        }
        h
    }

    /// The version both sides settled on, when they did.
    fn negotiated(&self) -> Option<&str> {
        self.judged.as_ref()?.version()
    }

    /// The server's capabilities: from the initialize result, or (modern era)
    /// from `server/discover`.
    fn server_caps(&self) -> Option<&Value> {
        self.judged
            .as_ref()
            .and_then(|h| h.capabilities.as_ref())
            .or_else(|| self.discovery.as_ref().and_then(|(_, d)| d.capabilities.as_ref()))
            .filter(|c| c.is_object())
    }
}

// ---------------------------------------------------------------------------
// Framing: several lines that are one message.

/// Frames that are pieces of a message broken by raw newlines, reported as
/// such (and not again as lines that are not JSON).
fn split_messages(frames: &[&Frame], out: &mut Vec<Finding>) -> HashSet<u64> {
    // Bounds keep a flood of log lines from turning quadratic.
    const MAX_PIECES: usize = 256;
    const MAX_BYTES: usize = 8 * 1024 * 1024;
    let mut consumed = HashSet::new();
    for dir in [Direction::Out, Direction::In] {
        let lines: Vec<&Frame> = frames.iter().copied().filter(|f| f.direction == dir).collect();
        let mut i = 0;
        while i < lines.len() {
            let first = lines[i];
            let starts_like_json = first.kind() == Kind::NotJson
                && first
                    .text()
                    .trim_start_matches([' ', '\t', '\u{feff}'])
                    .starts_with(['{', '['])
                && !first.anomalies().contains(Anomalies::BLANK_LINE);
            if !starts_like_json {
                i += 1;
                continue;
            }
            let mut with_newlines = first.text().into_owned();
            let mut joined = with_newlines.clone();
            let mut found = None;
            for (j, piece) in lines.iter().enumerate().skip(i + 1) {
                if piece.kind() != Kind::NotJson || j - i >= MAX_PIECES || joined.len() > MAX_BYTES {
                    break;
                }
                let text = piece.text();
                with_newlines.push('\n');
                with_newlines.push_str(&text);
                joined.push_str(&text);
                // A message can only be complete where a piece closes a bracket.
                if !text.trim_end().ends_with(['}', ']']) {
                    continue;
                }
                if serde_json::from_str::<Value>(&with_newlines).is_ok()
                    || serde_json::from_str::<Value>(&joined).is_ok()
                {
                    found = Some(j);
                    break;
                }
            }
            match found {
                Some(j) => {
                    let seqs: Vec<u64> = lines[i..=j].iter().map(|f| f.seq).collect();
                    consumed.extend(seqs.iter().copied());
                    out.push(Finding::new(
                        rule::SPLIT_MESSAGE,
                        Severity::Error,
                        seqs,
                        format!(
                            "{} wrote one JSON message over {} lines on {}, starting with {}. Over stdio every \
                             message must be on a single line: newlines inside strings must be escaped as \\n \
                             and the JSON must not be pretty-printed.",
                            sender(dir),
                            j - i + 1,
                            stream(dir),
                            quote(&first.text()),
                        ),
                    ));
                    i = j + 1;
                }
                None => i += 1,
            }
        }
    }
    consumed
}

// ---------------------------------------------------------------------------
// Rules about one frame.

fn frame_rules(f: &Frame, hs: &HandshakeFacts, split: &HashSet<u64>, out: &mut Vec<Finding>) {
    let a = f.anomalies();
    let seq = vec![f.seq];
    let who = sender(f.direction);
    let text = f.text();
    let mut push = |rule: &'static str, severity: Severity, message: String| {
        out.push(Finding::new(rule, severity, seq.clone(), message));
    };

    if a.contains(Anomalies::INVALID_UTF8) {
        push(
            rule::INVALID_UTF8,
            Severity::Error,
            format!(
                "{who} wrote a line on {} that is not valid UTF-8 ({}); the stdio transport carries UTF-8 only.",
                stream(f.direction),
                quote(&text)
            ),
        );
    }
    if a.contains(Anomalies::BOM) {
        push(
            rule::BOM,
            Severity::Warning,
            format!(
                "{who} started a line with a UTF-8 byte-order mark; many JSON parsers reject it. Write plain \
                 UTF-8 without a BOM."
            ),
        );
    }
    if a.contains(Anomalies::CRLF) {
        push(
            rule::CRLF,
            Severity::Warning,
            format!(
                "{who} ended a line with CRLF (\\r\\n); the stdio transport delimits messages with LF (\\n) alone. \
                 Most clients cope, some do not."
            ),
        );
    }
    let in_split = split.contains(&f.seq);
    if a.contains(Anomalies::PARTIAL_AT_EOF) && !in_split {
        if serde_json::from_str::<Value>(&text).is_ok() {
            push(
                rule::PARTIAL_AT_EOF,
                Severity::Warning,
                format!(
                    "{who}'s last message on {} has no terminating newline; a client waiting for the newline \
                     never sees it.",
                    stream(f.direction)
                ),
            );
        } else {
            push(
                rule::PARTIAL_AT_EOF,
                Severity::Error,
                format!(
                    "The stream ended in the middle of a line: {} was cut off while writing {} (the process \
                     died or closed {} mid-message).",
                    who.to_lowercase(),
                    quote(&text),
                    stream(f.direction)
                ),
            );
        }
    }

    match f.kind() {
        Kind::NotJson if a.contains(Anomalies::BLANK_LINE) => push(
            rule::BLANK_LINE,
            Severity::Warning,
            format!(
                "{who} wrote an empty line on {}; every line must be one JSON-RPC message.",
                stream(f.direction)
            ),
        ),
        Kind::NotJson if !in_split && !a.contains(Anomalies::PARTIAL_AT_EOF) => {
            let advice = match f.direction {
                Direction::In => {
                    "Over stdio, stdout carries only JSON-RPC messages; logs belong on stderr (console.error in \
                     Node, print(..., file=sys.stderr) or logging in Python)."
                }
                Direction::Out => "The server's stdin carries only JSON-RPC messages.",
            };
            push(
                rule::NOT_JSON,
                Severity::Error,
                format!(
                    "{who} wrote a line on {} that is not JSON: {}. {advice}",
                    stream(f.direction),
                    quote(&text)
                ),
            );
        }
        Kind::NotJson => {}
        Kind::NotJsonRpc => {
            let v = f.json();
            let obj = v.as_ref().and_then(Value::as_object);
            let neither = obj.is_some_and(|o| {
                o.contains_key("id")
                    && !o.contains_key("method")
                    && !o.contains_key("result")
                    && !o.contains_key("error")
            });
            if neither {
                push(
                    rule::NEITHER_RESULT_NOR_ERROR,
                    Severity::Error,
                    format!(
                        "{who} sent {} with an id but neither result nor error: a response must carry exactly one \
                         of them.",
                        quote(&text)
                    ),
                );
            } else {
                push(
                    rule::NOT_JSONRPC,
                    Severity::Error,
                    format!(
                        "{who} wrote JSON on {} that is not a JSON-RPC message (no method, result or error): {}. \
                         Only JSON-RPC messages may appear there.",
                        stream(f.direction),
                        quote(&text)
                    ),
                );
            }
        }
        Kind::Batch => {
            let negotiated = hs.negotiated();
            let has_initialize = text.contains("\"initialize\"")
                && f.json().and_then(|v| v.as_array().cloned()).is_some_and(|items| {
                    items
                        .iter()
                        .any(|m| m.get("method").and_then(Value::as_str) == Some(methods::INITIALIZE))
                });
            let why = if has_initialize {
                Some("initialize must never be part of a batch".to_owned())
            } else if negotiated == Some("2025-03-26") {
                None
            } else {
                Some(match negotiated {
                    Some(v) => {
                        format!("batches exist only in protocol version 2025-03-26 and this session negotiated {v}")
                    }
                    None => "batches exist only in protocol version 2025-03-26 and this session negotiated none".into(),
                })
            };
            if let Some(why) = why {
                let mut msg = format!("{who} sent a JSON-RPC batch (a JSON array): {why}. Send one message per line.");
                if a.contains(Anomalies::NOT_JSON_RPC) {
                    msg.push_str(" Some of its items are not JSON-RPC messages either.");
                }
                push(rule::BATCH_NOT_ALLOWED, Severity::Error, msg);
            }
        }
        Kind::Request | Kind::Notification | Kind::Result | Kind::Error => {
            message_rules(f, &mut push);
        }
    }
}

fn message_rules(f: &Frame, push: &mut impl FnMut(&'static str, Severity, String)) {
    let a = f.anomalies();
    let who = sender(f.direction);
    let text = f.text();
    if a.contains(Anomalies::MISSING_JSONRPC) {
        push(
            rule::MISSING_JSONRPC,
            Severity::Error,
            format!(
                "{who} sent a message without \"jsonrpc\": \"2.0\": {}. Every JSON-RPC message must carry it.",
                quote(&text)
            ),
        );
    }
    if a.contains(Anomalies::WRONG_JSONRPC) {
        let value = f
            .json()
            .and_then(|v| v.get("jsonrpc").map(Value::to_string))
            .unwrap_or_else(|| "?".into());
        push(
            rule::WRONG_JSONRPC,
            Severity::Error,
            format!("{who} sent \"jsonrpc\": {value}; it must be exactly the string \"2.0\"."),
        );
    }
    if a.contains(Anomalies::RESULT_AND_ERROR) {
        push(
            rule::RESULT_AND_ERROR,
            Severity::Error,
            format!(
                "{who} sent a response with both result and error: {}. A response carries exactly one of them.",
                quote(&text)
            ),
        );
    }
    if a.contains(Anomalies::NULL_ID) {
        let (severity, msg) = match f.kind() {
            Kind::Error => (
                Severity::Warning,
                format!(
                    "{who} sent an error response with \"id\": null. JSON-RPC allows that only when the request id \
                     could not be read; otherwise the error must echo the id."
                ),
            ),
            Kind::Result => (
                Severity::Error,
                format!("{who} sent a result with \"id\": null; a result must echo the id of its request."),
            ),
            _ if f
                .class
                .method
                .as_deref()
                .is_some_and(|m| m.starts_with("notifications/")) =>
            {
                (
                    Severity::Error,
                    format!(
                        "{who} sent the notification {} with \"id\": null; notifications carry no id at all.",
                        request_label(f)
                    ),
                )
            }
            _ => (
                Severity::Error,
                format!(
                    "{who} sent {} with \"id\": null. MCP request ids must be a string or an integer; with a null \
                     id the request cannot be answered.",
                    request_label(f)
                ),
            ),
        };
        push(rule::NULL_ID, severity, msg);
    } else if a.contains(Anomalies::NOTIFICATION_WITH_ID) {
        push(
            rule::NOTIFICATION_WITH_ID,
            Severity::Error,
            format!(
                "{who} sent the notification {} with an id. Notifications carry no id and get no response; a \
                 receiver may treat it as a request to an unknown method.",
                f.class.method.as_deref().unwrap_or("?")
            ),
        );
    }
    if a.contains(Anomalies::INVALID_ID) {
        let value = f
            .json()
            .and_then(|v| v.get("id").map(Value::to_string))
            .unwrap_or_else(|| "?".into());
        push(
            rule::INVALID_ID,
            Severity::Error,
            format!(
                "{who} used the id {value}; MCP ids must be a string or an integer (no fractions, objects or arrays)."
            ),
        );
    }
    if a.contains(Anomalies::NOT_JSON_RPC) {
        if f.kind() == Kind::Result && f.class.id.is_none() && !a.contains(Anomalies::NULL_ID) {
            push(
                rule::RESPONSE_WITHOUT_ID,
                Severity::Error,
                format!(
                    "{who} sent a result without an id: {}. A result must echo the id of the request it answers, \
                     or it cannot be matched.",
                    quote(&text)
                ),
            );
        } else if matches!(f.kind(), Kind::Request | Kind::Notification) && f.class.method.is_none() {
            push(
                rule::NOT_JSONRPC,
                Severity::Error,
                format!("{who} sent a message whose method is not a string: {}.", quote(&text)),
            );
        }
    }
    if a.contains(Anomalies::PARAMS_NOT_OBJECT) {
        push(
            rule::PARAMS_NOT_OBJECT,
            Severity::Error,
            format!(
                "{who} sent {} with params that are not an object; MCP params are always a JSON object (by name, \
                 never positional).",
                request_label(f)
            ),
        );
    }
    if a.contains(Anomalies::RESULT_NOT_OBJECT) {
        push(
            rule::RESULT_NOT_OBJECT,
            Severity::Error,
            format!(
                "{who} sent a result that is not an object: {}. MCP results are always JSON objects (an empty one \
                 is {{}}).",
                quote(&text)
            ),
        );
    }
    if a.contains(Anomalies::MALFORMED_ERROR) {
        push(
            rule::MALFORMED_ERROR,
            Severity::Error,
            format!(
                "{who} sent an error whose error object lacks an integer code or a string message: {}.",
                quote(&text)
            ),
        );
    }
    if a.contains(Anomalies::IS_ERROR_NOT_BOOL) {
        push(
            rule::IS_ERROR_NOT_BOOL,
            Severity::Error,
            format!(
                "{who} sent a tool result whose isError is not true or false: {}.",
                quote(&text)
            ),
        );
    }
}

// ---------------------------------------------------------------------------
// Requests and responses.

fn correlation_rules(frames: &[&Frame], hs: &HandshakeFacts, out: &mut Vec<Finding>) {
    // First use of each id per sender, and first response per request.
    let mut first_use: HashMap<(Direction, RequestId), u64> = HashMap::new();
    // Requests answered so far, per sender and id: in 2026-07-28 an id only
    // must not match one still waiting for its response.
    let mut answered: HashSet<(Direction, RequestId)> = HashSet::new();
    let mut first_response: HashMap<u64, u64> = HashMap::new();
    for f in frames {
        let a = f.anomalies();
        let who = sender(f.direction);
        match f.kind() {
            Kind::Request => {
                let Some(id) = f.class.id.clone() else { continue };
                let earlier = *first_use.entry((f.direction, id.clone())).or_insert(f.seq);
                let reuse_allowed = hs.modern && answered.remove(&(f.direction, id.clone()));
                if a.contains(Anomalies::DUPLICATE_REQUEST_ID) && !reuse_allowed {
                    out.push(Finding::new(
                        rule::DUPLICATE_REQUEST_ID,
                        Severity::Error,
                        vec![earlier, f.seq],
                        format!(
                            "{who} reused the request id {id} for {} (first used at seq {earlier}); ids must be \
                             unique for each sender within a session, or responses cannot be told apart.",
                            f.class.method.as_deref().unwrap_or("?")
                        ),
                    ));
                }
            }
            Kind::Result | Kind::Error => {
                if let Some(i) = &f.class.id {
                    answered.insert((f.direction.opposite(), i.clone()));
                }
                let id = f.class.id.as_ref().map_or_else(|| "?".to_owned(), ToString::to_string);
                if a.contains(Anomalies::UNKNOWN_RESPONSE_ID) {
                    out.push(Finding::new(
                        rule::UNKNOWN_RESPONSE_ID,
                        Severity::Error,
                        vec![f.seq],
                        format!(
                            "{who} sent a response for id {id}, but the other side never sent a request with that id."
                        ),
                    ));
                }
                if let Some(link) = &f.link {
                    let first = *first_response.entry(link.request_seq).or_insert(f.seq);
                    if a.contains(Anomalies::DUPLICATE_RESPONSE) {
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
                }
            }
            _ => {}
        }
    }
}

/// The note the session and the proxy record when shutdown begins
/// (src/session.rs, src/proxy.rs); an exit after it was asked for.
const SHUTDOWN_NOTE: &str = "closed the server's stdin";

struct Pending<'a> {
    frame: &'a Frame,
    timed_out: bool,
    cancelled: bool,
    reported: bool,
}

/// Requests never answered, and a server that exits under a pending request.
fn pending_rules(events: &[Event], out: &mut Vec<Finding>) {
    let mut pending: Vec<Pending> = Vec::new();
    let mut shutting_down = false;
    let mut last_at = Duration::ZERO;
    let cancel = |pending: &mut Vec<Pending>, dir: Direction, id: &RequestId| {
        if let Some(p) = pending
            .iter_mut()
            .rev()
            .find(|p| p.frame.direction == dir && p.frame.class.id.as_ref() == Some(id))
        {
            p.cancelled = true;
        }
    };
    for e in events {
        last_at = last_at.max(e.at());
        match e {
            Event::Frame(f) => match f.kind() {
                Kind::Request if f.class.id.is_some() => pending.push(Pending {
                    frame: f,
                    timed_out: false,
                    cancelled: false,
                    reported: false,
                }),
                Kind::Result | Kind::Error => {
                    if let Some(link) = &f.link {
                        pending.retain(|p| p.frame.seq != link.request_seq);
                    }
                }
                Kind::Notification if f.class.method.as_deref() == Some(methods::CANCELLED) => {
                    let id = f
                        .json()
                        .and_then(|v| v.pointer("/params/requestId").and_then(RequestId::from_json));
                    if let Some(id) = id {
                        cancel(&mut pending, f.direction, &id);
                    }
                }
                _ => {}
            },
            Event::TimedOut { timed_out, .. } => {
                if let Some(p) = pending.iter_mut().find(|p| p.frame.seq == timed_out.request_seq) {
                    p.timed_out = true;
                }
            }
            Event::Cancelled { id, .. } => cancel(&mut pending, Direction::Out, id),
            // The server answered at the HTTP level (a 401, an error page):
            // the request was refused, not left waiting.
            Event::Http(h) if h.error.is_some() && h.status.is_some() => {
                if let Some(id) = &h.request_id {
                    pending.retain(|p| !(p.frame.direction == Direction::Out && p.frame.class.id.as_ref() == Some(id)));
                }
            }
            Event::Note { text, .. } if text.contains(SHUTDOWN_NOTE) => shutting_down = true,
            Event::Exited { at, status } if !shutting_down => {
                let waiting: Vec<&mut Pending> = pending
                    .iter_mut()
                    .filter(|p| p.frame.direction == Direction::Out && !p.timed_out && !p.cancelled)
                    .collect();
                if waiting.is_empty() {
                    continue;
                }
                let labels: Vec<String> = waiting.iter().map(|p| request_label(p.frame)).collect();
                let seqs: Vec<u64> = waiting.iter().map(|p| p.frame.seq).collect();
                let waited = at.saturating_sub(waiting[0].frame.at);
                for p in waiting {
                    p.reported = true;
                }
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
    let fell_back = events.iter().any(|e| {
        matches!(e, Event::Frame(f) if f.direction == Direction::Out && f.class.method.as_deref() == Some(methods::INITIALIZE))
    });
    for p in pending {
        if p.reported || (p.cancelled && !p.timed_out) {
            continue;
        }
        if fell_back && p.frame.class.method.as_deref() == Some(methods::SERVER_DISCOVER) {
            // The era probe: no answer is how a legacy server may say it is one.
            continue;
        }
        let f = p.frame;
        let waited = human_duration(last_at.saturating_sub(f.at));
        let msg = match f.direction {
            Direction::Out => format!(
                "{} got no response from the server: waited {waited} until the end of the session{}.",
                request_label(f),
                if p.timed_out { " (it timed out)" } else { "" },
            ),
            Direction::In => format!(
                "The server's request {} got no response from the client: waited {waited} until the end of the \
                 session.",
                request_label(f)
            ),
        };
        out.push(Finding::new(
            rule::UNANSWERED_REQUEST,
            Severity::Warning,
            vec![f.seq],
            msg,
        ));
    }
}

fn slow_rules(frames: &[&Frame], options: &LintOptions, out: &mut Vec<Finding>) {
    for f in frames {
        // Only the server's answers: the client's may wait on a person
        // (sampling, elicitation), which is no fault of the protocol.
        if f.direction != Direction::In || !f.kind().is_response() {
            continue;
        }
        let Some(link) = &f.link else { continue };
        if link.latency > options.slow_response {
            let id = f.class.id.as_ref().map_or_else(|| "?".to_owned(), ToString::to_string);
            out.push(Finding::new(
                rule::SLOW_RESPONSE,
                Severity::Warning,
                vec![link.request_seq, f.seq],
                format!(
                    "The server took {} to answer {} #{id} (the threshold is {}). Clients often time out long \
                     requests; report progress with notifications/progress if the work is really that slow.",
                    human_duration(link.latency),
                    link.method,
                    human_duration(options.slow_response),
                ),
            ));
        }
    }
}

// ---------------------------------------------------------------------------
// Lifecycle (the legacy era, up to 2025-11-25, which starts with initialize).

fn lifecycle_rules(frames: &[&Frame], hs: &HandshakeFacts, out: &mut Vec<Finding>) {
    if hs.modern {
        return;
    }
    let init_resp = hs.init_resp.unwrap_or(u64::MAX);

    let early: Vec<&Frame> = frames
        .iter()
        .copied()
        .filter(|f| {
            is_request(f, Direction::Out)
                && f.seq < init_resp
                && !matches!(
                    f.class.method.as_deref(),
                    Some(methods::PING | methods::INITIALIZE | methods::SERVER_DISCOVER)
                )
        })
        .collect();
    if !early.is_empty() {
        let labels: Vec<String> = early.iter().map(|f| request_label(f)).collect();
        let msg = if hs.init_req.is_none() {
            format!(
                "The client sent {} without initialize. Up to protocol version 2025-11-25 a session starts with \
                 initialize; servers may refuse anything else until then.",
                list_labels(&labels)
            )
        } else {
            format!(
                "The client sent {} before initialize was answered. Until the initialize response arrives the \
                 client should send nothing but ping.",
                list_labels(&labels)
            )
        };
        out.push(Finding::new(
            rule::REQUEST_BEFORE_INITIALIZE,
            Severity::Warning,
            early.iter().map(|f| f.seq).collect(),
            msg,
        ));
    }

    let Some(init_req) = hs.init_req else { return };

    if let Some(judged) = &hs.judged {
        let resp = hs.init_resp.expect("judged from a response");
        match judged.verdict {
            VersionVerdict::Unsupported => {
                let answered = judged.answered.as_deref().unwrap_or_default();
                let msg = if answered == judged.offered {
                    format!(
                        "The server accepted protocol version {answered:?}, which is not an MCP revision mcpscope \
                         knows ({}); a conforming server answers an unknown offer with a version it supports.",
                        handshake::SUPPORTED_VERSIONS.join(", ")
                    )
                } else {
                    format!(
                        "The client offered {} and the server answered {answered:?}, which is not a supported \
                         version ({}). The client should disconnect.",
                        judged.offered,
                        handshake::SUPPORTED_VERSIONS.join(", ")
                    )
                };
                out.push(Finding::new(
                    rule::UNSUPPORTED_VERSION,
                    Severity::Error,
                    vec![init_req, resp],
                    msg,
                ));
                let later: Vec<&Frame> = frames
                    .iter()
                    .copied()
                    .filter(|f| is_request(f, Direction::Out) && f.seq > resp)
                    .collect();
                if !later.is_empty() {
                    let labels: Vec<String> = later.iter().map(|f| request_label(f)).collect();
                    out.push(Finding::new(
                        rule::CONTINUED_AFTER_UNSUPPORTED_VERSION,
                        Severity::Warning,
                        later.iter().map(|f| f.seq).collect(),
                        format!(
                            "The client went on with {} after the server answered the unsupported version \
                             {answered:?}; it should have disconnected.",
                            list_labels(&labels)
                        ),
                    ));
                }
            }
            VersionVerdict::Missing => out.push(Finding::new(
                rule::INITIALIZE_RESULT_INCOMPLETE,
                Severity::Error,
                vec![resp],
                "The initialize result has no string protocolVersion, so no version was negotiated.".to_owned(),
            )),
            VersionVerdict::Accepted | VersionVerdict::CounterOffer => {}
        }
        let missing: Vec<&str> = judged
            .missing_fields
            .iter()
            .copied()
            .filter(|m| !(judged.verdict == VersionVerdict::Missing && *m == "protocolVersion"))
            .collect();
        if !missing.is_empty() {
            out.push(Finding::new(
                rule::INITIALIZE_RESULT_INCOMPLETE,
                Severity::Error,
                vec![resp],
                format!(
                    "The initialize result lacks {}, which every initialize result must carry.",
                    missing.join(", ")
                ),
            ));
        }
        if judged.usable() && hs.initialized.is_none() {
            out.push(Finding::new(
                rule::INITIALIZED_NOT_SENT,
                Severity::Error,
                vec![resp],
                "The client never sent notifications/initialized after the initialize response. It must, and \
                 some servers refuse every request until it arrives."
                    .to_owned(),
            ));
        }
    }
    if let Some(initialized) = hs.initialized
        && initialized < init_resp
    {
        out.push(Finding::new(
            rule::INITIALIZED_BEFORE_RESPONSE,
            Severity::Warning,
            vec![initialized],
            "The client sent notifications/initialized before the initialize response arrived; it belongs after \
             the response, once the version is settled."
                .to_owned(),
        ));
    }
    let initialized = hs.initialized.unwrap_or(u64::MAX);
    let early_server: Vec<&Frame> = frames
        .iter()
        .copied()
        .filter(|f| {
            is_request(f, Direction::In) && f.seq < initialized && f.class.method.as_deref() != Some(methods::PING)
        })
        .collect();
    if !early_server.is_empty() {
        let labels: Vec<String> = early_server.iter().map(|f| request_label(f)).collect();
        out.push(Finding::new(
            rule::SERVER_REQUEST_BEFORE_INITIALIZED,
            Severity::Warning,
            early_server.iter().map(|f| f.seq).collect(),
            format!(
                "The server sent {} before the client's notifications/initialized; until then a server should \
                 send only ping requests (and log notifications).",
                list_labels(&labels)
            ),
        ));
    }
}

// ---------------------------------------------------------------------------
// The modern era (2026-07-28): what it requires and what it removed.

fn era_rules(frames: &[&Frame], hs: &HandshakeFacts, out: &mut Vec<Finding>) {
    use crate::protocol::era::{self, CACHEABLE_METHODS, LEGACY_ONLY_METHODS};
    if let (Some(why), Some(init)) = (&hs.modern_only, hs.init_req) {
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
    if !hs.modern {
        return;
    }
    let server_requests: Vec<&Frame> = frames
        .iter()
        .copied()
        .filter(|f| f.direction == Direction::In && f.kind() == Kind::Request)
        .collect();
    if !server_requests.is_empty() {
        let mut methods: Vec<&str> = server_requests
            .iter()
            .filter_map(|f| f.class.method.as_deref())
            .collect();
        methods.dedup();
        out.push(Finding::new(
            rule::SERVER_REQUEST_IN_MODERN_ERA,
            Severity::Error,
            server_requests.iter().map(|f| f.seq).collect(),
            format!(
                "The server sent {} request(s) ({}) in a 2026-07-28 session. Modern servers never \
                 send the client requests: they answer a tools/call, resources/read or prompts/get with \
                 resultType \"input_required\" and inputRequests, and the client retries with inputResponses.",
                server_requests.len(),
                methods.join(", ")
            ),
        ));
    }
    let mut legacy: Vec<(String, Vec<u64>)> = Vec::new();
    for f in frames {
        let Some(m) = f.class.method.as_deref() else {
            if f.direction == Direction::In && f.kind() == Kind::Result {
                result_rules(f, out);
            }
            continue;
        };
        if f.direction != Direction::Out || !matches!(f.kind(), Kind::Request | Kind::Notification) {
            continue;
        }
        if m == methods::INITIALIZE {
            continue;
        }
        if LEGACY_ONLY_METHODS.contains(&m) {
            match legacy.iter_mut().find(|(x, _)| x == m) {
                Some(e) => e.1.push(f.seq),
                None => legacy.push((m.to_owned(), vec![f.seq])),
            }
            continue;
        }
        if f.kind() == Kind::Request {
            let params = f.json().and_then(|v| v.get("params").cloned());
            let missing = era::missing_envelope(params.as_ref());
            if !missing.is_empty() {
                out.push(Finding::new(
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
    for (m, seqs) in legacy {
        let times = if seqs.len() == 1 {
            String::new()
        } else {
            format!(" ({} times)", seqs.len())
        };
        out.push(Finding::new(
            rule::LEGACY_METHOD_IN_MODERN_ERA,
            Severity::Warning,
            seqs,
            format!(
                "The client used {m}{times} with a server of the modern era; 2026-07-28 removed it (ping, \
                 logging/setLevel, resources/subscribe and resources/unsubscribe, roots and elicitation \
                 notifications, tasks/list and tasks/result are gone), so expect -32601."
            ),
        ));
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
}

/// Multi round-trip chains: a new id for every retry, the state echoed exactly.
fn mrtr_rules(frames: &[&Frame], out: &mut Vec<Finding>) {
    for chain in crate::protocol::mrtr::chains(frames) {
        for pair in chain.rounds.windows(2) {
            let (prev, next) = (&pair[0], &pair[1]);
            if prev.outcome.as_deref() != Some("input_required") {
                continue;
            }
            if next.id.is_some() && next.id == prev.id {
                out.push(Finding::new(
                    rule::RETRY_REUSED_ID,
                    Severity::Error,
                    vec![prev.request_seq, next.request_seq],
                    format!(
                        "The client retried {} #{} with inputResponses under the same JSON-RPC id; every retry of a \
                         multi round-trip request must use a new id.",
                        chain.method,
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
                        "The client retried {} {what}. The requestState is opaque: it must be echoed exactly, and \
                         left out when none was given.",
                        chain.method
                    ),
                ));
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Capabilities.

/// The server capability (a path into its capabilities) a client request needs.
fn server_capability_for(method: &str, negotiated: Option<&str>) -> Option<&'static [&'static str]> {
    Some(match method {
        methods::RESOURCES_SUBSCRIBE => &["resources", "subscribe"],
        methods::LOGGING_SET_LEVEL => &["logging"],
        // The capability flag arrived with 2025-03-26; older servers answered without one.
        methods::COMPLETION_COMPLETE if negotiated != Some("2024-11-05") => &["completions"],
        m if m.starts_with("tools/") => &["tools"],
        m if m.starts_with("resources/") => &["resources"],
        m if m.starts_with("prompts/") => &["prompts"],
        _ => return None,
    })
}

/// The client capability a server request needs.
fn client_capability_for(method: &str) -> Option<&'static [&'static str]> {
    Some(match method {
        methods::ROOTS_LIST => &["roots"],
        methods::SAMPLING_CREATE_MESSAGE => &["sampling"],
        methods::ELICITATION_CREATE => &["elicitation"],
        _ => return None,
    })
}

fn advertised(caps: &Value, path: &[&str]) -> bool {
    let mut v = caps;
    for (i, key) in path.iter().enumerate() {
        match v.get(key) {
            Some(next) if !next.is_null() => v = next,
            _ => return false,
        }
        // A nested flag such as resources.subscribe must be true, not merely present.
        if i > 0 && i == path.len() - 1 {
            return v == &Value::Bool(true);
        }
    }
    true
}

fn capability_rules(frames: &[&Frame], hs: &HandshakeFacts, out: &mut Vec<Finding>) {
    let server_caps = hs.server_caps();
    let client_caps = hs.client_caps.as_ref().filter(|c| c.is_object());
    let negotiated = hs.negotiated();
    // One finding per method, listing every frame that used it.
    let mut missing: Vec<(Direction, String, String, Vec<u64>)> = Vec::new();
    let mut list_changed: Vec<(Direction, String, String, Vec<u64>)> = Vec::new();
    let note = |list: &mut Vec<(Direction, String, String, Vec<u64>)>, f: &Frame, m: &str, cap: String| match list
        .iter_mut()
        .find(|(d, method, _, _)| *d == f.direction && method == m)
    {
        Some(entry) => entry.3.push(f.seq),
        None => list.push((f.direction, m.to_owned(), cap, vec![f.seq])),
    };
    for f in frames {
        let Some(m) = f.class.method.as_deref() else { continue };
        match (f.direction, f.kind()) {
            (Direction::Out, Kind::Request) => {
                if let (Some(caps), Some(path)) = (server_caps, server_capability_for(m, negotiated))
                    && !advertised(caps, path)
                {
                    note(&mut missing, f, m, path.join("."));
                }
            }
            (Direction::In, Kind::Request) => {
                if let (Some(caps), Some(path)) = (client_caps, client_capability_for(m))
                    && !advertised(caps, path)
                {
                    note(&mut missing, f, m, path.join("."));
                }
            }
            (Direction::In, Kind::Notification) => {
                let cap = match m {
                    methods::TOOLS_LIST_CHANGED => "tools",
                    methods::PROMPTS_LIST_CHANGED => "prompts",
                    methods::RESOURCES_LIST_CHANGED => "resources",
                    _ => continue,
                };
                if let Some(caps) = server_caps
                    && !advertised(caps, &[cap, "listChanged"])
                {
                    note(&mut list_changed, f, m, format!("{cap}.listChanged"));
                }
            }
            (Direction::Out, Kind::Notification) if m == methods::ROOTS_LIST_CHANGED => {
                if let Some(caps) = client_caps
                    && !advertised(caps, &["roots", "listChanged"])
                {
                    note(&mut list_changed, f, m, "roots.listChanged".into());
                }
            }
            _ => {}
        }
    }
    for (dir, method, cap, seqs) in missing {
        let times = if seqs.len() == 1 {
            String::new()
        } else {
            format!(" ({} times)", seqs.len())
        };
        let (severity, msg) = match dir {
            Direction::Out => (
                Severity::Warning,
                format!(
                    "The client called {method}{times}, but the server did not advertise the `{cap}` capability in \
                     its initialize result; a server without it may answer -32601 Method not found, and a client \
                     should only use what was negotiated."
                ),
            ),
            Direction::In => (
                Severity::Error,
                format!(
                    "The server sent {method}{times}, but the client did not declare the `{cap}` capability in \
                     initialize; a server must only use capabilities the client declared."
                ),
            ),
        };
        out.push(Finding::new(rule::CAPABILITY_NOT_ADVERTISED, severity, seqs, msg));
    }
    for (dir, method, cap, seqs) in list_changed {
        let side = match dir {
            Direction::In => "server",
            Direction::Out => "client",
        };
        out.push(Finding::new(
            rule::LIST_CHANGED_NOT_ADVERTISED,
            Severity::Warning,
            seqs,
            format!(
                "The {side} sent {method} without `{cap}: true` in its capabilities; the other side has no reason \
                 to expect it and may ignore it."
            ),
        ));
    }
}

// ---------------------------------------------------------------------------
// Tools.

/// The JSON Schema dialect a schema declares (2020-12 when it declares none).
fn dialect(schema: &Value) -> Result<jsonschema::Draft, String> {
    use jsonschema::Draft;
    let Some(uri) = schema.get("$schema").and_then(Value::as_str) else {
        // A non-string `$schema` is left to the meta-schema to reject.
        return Ok(Draft::Draft202012);
    };
    let key = uri
        .trim()
        .trim_end_matches('#')
        .trim_start_matches("https://")
        .trim_start_matches("http://");
    Ok(match key {
        "json-schema.org/draft/2020-12/schema" => Draft::Draft202012,
        "json-schema.org/draft/2019-09/schema" => Draft::Draft201909,
        "json-schema.org/draft-07/schema" => Draft::Draft7,
        "json-schema.org/draft-06/schema" => Draft::Draft6,
        "json-schema.org/draft-04/schema" => Draft::Draft4,
        _ => return Err(uri.to_owned()),
    })
}

fn draft_name(d: jsonschema::Draft) -> &'static str {
    use jsonschema::Draft;
    match d {
        Draft::Draft4 => "draft-04",
        Draft::Draft6 => "draft-06",
        Draft::Draft7 => "draft-07",
        Draft::Draft201909 => "2019-09",
        _ => "2020-12",
    }
}

/// A sentence naming up to three places where `instance` breaks a schema.
fn describe_errors<'a>(errors: impl Iterator<Item = jsonschema::ValidationError<'a>>) -> Option<String> {
    let errors: Vec<String> = errors
        .take(4)
        .map(|e| {
            let at = e.instance_path().to_string();
            let at = if at.is_empty() { "/".to_owned() } else { at };
            format!("at {at}: {}", crate::text::shorten(&e.to_string(), 200))
        })
        .collect();
    if errors.is_empty() {
        return None;
    }
    let mut s = errors.iter().take(3).cloned().collect::<Vec<_>>().join("; ");
    if errors.len() > 3 {
        s.push_str("; …");
    }
    Some(s)
}

enum SchemaCheck {
    Valid(Box<jsonschema::Validator>),
    /// Broken (reported) or in a dialect we cannot check: nothing to validate against.
    Unusable,
}

/// Checks a tool schema against its meta-schema and compiles it.
fn check_schema(
    schema: &Value,
    what: &str,
    invalid_rule: &'static str,
    seq: u64,
    out: &mut Vec<Finding>,
) -> SchemaCheck {
    let draft = match dialect(schema) {
        Ok(d) => d,
        Err(uri) => {
            out.push(Finding::new(
                rule::UNSUPPORTED_SCHEMA_DIALECT,
                Severity::Warning,
                vec![seq],
                format!(
                    "The {what} declares \"$schema\": {uri:?}, a dialect mcpscope cannot check (it knows 2020-12, \
                     2019-09, draft-07, draft-06 and draft-04); clients that cannot either must reject the tool."
                ),
            ));
            return SchemaCheck::Unusable;
        }
    };
    use jsonschema::Draft;
    let meta = match draft {
        Draft::Draft4 => jsonschema::draft4::meta::validator(),
        Draft::Draft6 => jsonschema::draft6::meta::validator(),
        Draft::Draft7 => jsonschema::draft7::meta::validator(),
        Draft::Draft201909 => jsonschema::draft201909::meta::validator(),
        _ => jsonschema::draft202012::meta::validator(),
    };
    if let Some(errors) = describe_errors(meta.iter_errors(schema)) {
        out.push(Finding::new(
            invalid_rule,
            Severity::Error,
            vec![seq],
            format!("The {what} is not valid JSON Schema ({}): {errors}.", draft_name(draft)),
        ));
        return SchemaCheck::Unusable;
    }
    // Compiling also resolves `$ref`s; with no retriever configured a remote
    // one fails here instead of being fetched.
    match jsonschema::options().with_draft(draft).build(schema) {
        Ok(v) => SchemaCheck::Valid(Box::new(v)),
        Err(e) => {
            out.push(Finding::new(
                invalid_rule,
                Severity::Error,
                vec![seq],
                format!(
                    "The {what} cannot be used as JSON Schema ({}): {}.",
                    draft_name(draft),
                    crate::text::shorten(&e.to_string(), 300)
                ),
            ));
            SchemaCheck::Unusable
        }
    }
}

fn valid_tool_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

struct ToolInfo {
    /// None when the tool declares no outputSchema, or one we could not use.
    output: Option<Box<jsonschema::Validator>>,
    has_output_schema: bool,
}

fn tool_rules(frames: &[&Frame], out: &mut Vec<Finding>) {
    let by_seq: HashMap<u64, &Frame> = frames
        .iter()
        .filter(|f| is_request(f, Direction::Out))
        .map(|f| (f.seq, *f))
        .collect();
    let mut tools: HashMap<String, ToolInfo> = HashMap::new();
    for f in frames {
        if f.direction != Direction::In {
            continue;
        }
        let Some(link) = &f.link else { continue };
        match (f.kind(), link.method.as_str()) {
            (Kind::Result, methods::TOOLS_LIST) => {
                let Some(v) = f.json() else { continue };
                let Some(list) = v.pointer("/result/tools").and_then(Value::as_array) else {
                    continue;
                };
                for (i, tool) in list.iter().enumerate() {
                    if let Some((name, info)) = check_tool(tool, i, f.seq, out) {
                        tools.insert(name, info);
                    }
                }
            }
            (Kind::Result, methods::TOOLS_CALL) => {
                let name = tool_called(&by_seq, link.request_seq);
                let Some(v) = f.json() else { continue };
                check_tool_result(f, link.request_seq, name.as_deref(), &v["result"], &tools, out);
            }
            (Kind::Error, methods::TOOLS_CALL) => {
                let name = tool_called(&by_seq, link.request_seq);
                let listed = name.as_deref().is_some_and(|n| tools.contains_key(n));
                if listed && let Some(v) = f.json() {
                    check_tool_call_error(f, link.request_seq, name.as_deref().unwrap_or_default(), &v, out);
                }
            }
            _ => {}
        }
    }
}

fn tool_called(requests: &HashMap<u64, &Frame>, seq: u64) -> Option<String> {
    let v = requests.get(&seq)?.json()?;
    v.pointer("/params/name").and_then(Value::as_str).map(str::to_owned)
}

fn check_tool(tool: &Value, index: usize, seq: u64, out: &mut Vec<Finding>) -> Option<(String, ToolInfo)> {
    let name = tool.get("name").and_then(Value::as_str);
    let label = match name {
        Some(n) => format!("tool {n:?}"),
        None => format!("tool #{index} in tools/list"),
    };
    match name {
        None => out.push(Finding::new(
            rule::TOOL_NAME_FORMAT,
            Severity::Error,
            vec![seq],
            format!("The {label} has no string name; every tool needs one to be called."),
        )),
        Some(n) if !valid_tool_name(n) => out.push(Finding::new(
            rule::TOOL_NAME_FORMAT,
            Severity::Warning,
            vec![seq],
            format!(
                "The tool name {n:?} does not follow the 2025-11-25 guidance: 1 to 128 characters of A-Z, a-z, \
                 0-9, underscore, hyphen and dot. Clients and models may mangle or reject it."
            ),
        )),
        Some(_) => {}
    }

    match tool.get("inputSchema") {
        Some(schema @ Value::Object(o)) => {
            if o.get("type").and_then(Value::as_str) != Some("object") {
                let ty = o
                    .get("type")
                    .map_or_else(|| "no type".to_owned(), |t| format!("type {t}"));
                out.push(Finding::new(
                    rule::INPUT_SCHEMA_NOT_OBJECT,
                    Severity::Error,
                    vec![seq],
                    format!(
                        "The {label} has an inputSchema with {ty}; it must be an object schema with \
                         \"type\": \"object\" (arguments are always a JSON object)."
                    ),
                ));
            }
            check_schema(
                schema,
                &format!("inputSchema of the {label}"),
                rule::INVALID_INPUT_SCHEMA,
                seq,
                out,
            );
        }
        other => {
            let what = match other {
                None => "no inputSchema".to_owned(),
                Some(v) => format!(
                    "an inputSchema that is not an object ({})",
                    crate::text::shorten(&v.to_string(), 60)
                ),
            };
            out.push(Finding::new(
                rule::INPUT_SCHEMA_NOT_OBJECT,
                Severity::Error,
                vec![seq],
                format!(
                    "The {label} has {what}; every tool needs an object schema, {{\"type\": \"object\"}} at least."
                ),
            ));
        }
    }

    let mut info = ToolInfo {
        output: None,
        has_output_schema: false,
    };
    match tool.get("outputSchema") {
        None | Some(Value::Null) => {}
        Some(schema @ Value::Object(_)) => {
            info.has_output_schema = true;
            if let SchemaCheck::Valid(v) = check_schema(
                schema,
                &format!("outputSchema of the {label}"),
                rule::INVALID_OUTPUT_SCHEMA,
                seq,
                out,
            ) {
                info.output = Some(v);
            }
        }
        Some(other) => {
            info.has_output_schema = true;
            out.push(Finding::new(
                rule::INVALID_OUTPUT_SCHEMA,
                Severity::Error,
                vec![seq],
                format!(
                    "The {label} has an outputSchema that is not a schema object: {}.",
                    crate::text::shorten(&other.to_string(), 80)
                ),
            ));
        }
    }
    name.map(|n| (n.to_owned(), info))
}

/// Text of a tool result's text blocks, for the heuristics.
fn result_text(result: &Value) -> String {
    result
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

fn check_tool_result(
    f: &Frame,
    request_seq: u64,
    name: Option<&str>,
    result: &Value,
    tools: &HashMap<String, ToolInfo>,
    out: &mut Vec<Finding>,
) {
    let seqs = vec![request_seq, f.seq];
    let tool = name.map_or_else(|| "the tool".to_owned(), |n| format!("the tool {n:?}"));
    if f.class.tool_error {
        let text = result_text(result);
        let lower = text.to_lowercase();
        let protocolish = ["unknown tool", "method not found", "not found: tool", "tool not found"]
            .iter()
            .any(|p| lower.contains(p));
        if protocolish {
            out.push(Finding::new(
                rule::TOOL_ERROR_FOR_PROTOCOL_ERROR,
                Severity::Warning,
                seqs,
                format!(
                    "Heuristic: the server answered a call to {tool} with an isError result saying {}. An unknown \
                     tool is a protocol error (a JSON-RPC error, -32602), not a tool execution failure; isError is \
                     for a tool that ran and failed.",
                    quote(&text)
                ),
            ));
        }
        return;
    }
    // Task handles and input requests are not the tool's output.
    if result.get("task").is_some()
        || result
            .get("resultType")
            .and_then(Value::as_str)
            .is_some_and(|t| t != "complete")
    {
        return;
    }
    let Some(info) = name.and_then(|n| tools.get(n)) else {
        return;
    };
    if !info.has_output_schema {
        return;
    }
    match result.get("structuredContent") {
        None => out.push(Finding::new(
            rule::STRUCTURED_CONTENT_MISSING,
            Severity::Error,
            seqs,
            format!(
                "The server declared an outputSchema for {tool} but its successful result has no \
                 structuredContent; a tool with an outputSchema must return structured results that conform to it."
            ),
        )),
        Some(sc) => {
            if let Some(validator) = &info.output
                && let Some(errors) = describe_errors(validator.iter_errors(sc))
            {
                out.push(Finding::new(
                    rule::STRUCTURED_CONTENT_MISMATCH,
                    Severity::Error,
                    seqs,
                    format!("The structuredContent returned by {tool} does not match its outputSchema: {errors}."),
                ));
            }
        }
    }
}

fn check_tool_call_error(f: &Frame, request_seq: u64, name: &str, v: &Value, out: &mut Vec<Finding>) {
    let Some(code) = f.class.error_code else { return };
    if code != crate::wire::message::error_code::INTERNAL_ERROR && code != -32000 {
        return;
    }
    let message = v.pointer("/error/message").and_then(Value::as_str).unwrap_or_default();
    let lower = message.to_lowercase();
    // Anything that sounds like the protocol or the transport is left alone.
    let protocolish = [
        "unknown tool",
        "not found",
        "invalid param",
        "invalid request",
        "method",
        "parse error",
        "timed out",
        "timeout",
        "connection closed",
        "cancel",
    ]
    .iter()
    .any(|p| lower.contains(p));
    if protocolish || message.is_empty() {
        return;
    }
    out.push(Finding::new(
        rule::PROTOCOL_ERROR_FOR_TOOL_FAILURE,
        Severity::Info,
        vec![request_seq, f.seq],
        format!(
            "Heuristic: the listed tool {name:?} failed with a JSON-RPC error ({code}: {}). When a tool runs and \
             fails, the spec wants a result with isError: true so the model can see the error and correct \
             itself; JSON-RPC errors are for protocol problems.",
            quote(message)
        ),
    ));
}

// ---------------------------------------------------------------------------
// stderr.

const STDERR_PATTERNS: [&str; 5] = [
    "Traceback (most recent call last)",
    "Error:",
    "panicked at",
    "UnhandledPromiseRejection",
    "FATAL",
];

/// One finding per run of consecutive stderr lines, so a traceback is one
/// finding and not one per frame of the stack.
fn stderr_rules(events: &[Event], out: &mut Vec<Finding>) {
    let mut block: Vec<(u64, String)> = Vec::new();
    let flush = |block: &mut Vec<(u64, String)>, out: &mut Vec<Finding>| {
        if block.is_empty() {
            return;
        }
        let seqs: Vec<u64> = block.iter().map(|(s, _)| *s).collect();
        let first = &block[0].1;
        let last = &block[block.len() - 1].1;
        let quoted = if block.len() == 1 {
            quote(first)
        } else {
            format!("{} … {}", quote(first), quote(last))
        };
        out.push(Finding::new(
            rule::STDERR_ERROR,
            Severity::Warning,
            seqs,
            format!(
                "The server wrote what looks like an error on stderr: {quoted}. stderr is for logs of any kind, \
                 so this is a hint that something failed inside the server, not a protocol fault."
            ),
        ));
        block.clear();
    };
    for e in events {
        match e {
            Event::Stderr(s) => {
                let text = s.text();
                if STDERR_PATTERNS.iter().any(|p| text.contains(p)) {
                    block.push((s.seq, text.trim_end().to_owned()));
                }
            }
            _ => flush(&mut block, out),
        }
    }
    flush(&mut block, out);
}

// ---------------------------------------------------------------------------
// Authorization (OAuth): what goes wrong in real deployments, judged from
// the recorded exchanges (HTTP answers and the authorizer's steps).

/// The issuer a metadata URL was built for (RFC 8414 §3.1 / OpenID
/// Connect path insertion or appending); `None` for another URL.
fn issuer_of_metadata_url(url: &str) -> Option<String> {
    let origin = crate::protocol::auth::discovery::origin(url)?;
    let path = url.strip_prefix(&origin)?.split(['?', '#']).next().unwrap_or_default();
    for wk in [
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
    ] {
        if let Some(rest) = path.strip_prefix(wk) {
            return Some(format!("{origin}{rest}"));
        }
    }
    path.strip_suffix("/.well-known/openid-configuration")
        .map(|p| format!("{origin}{p}"))
}

fn json_strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

fn auth_rules(events: &[Event], frames: &[&Frame], out: &mut Vec<Finding>) {
    use crate::protocol::auth::Step;
    use crate::protocol::auth::challenge::BearerChallenge;
    let request_seq = |id: &RequestId| {
        frames
            .iter()
            .find(|f| f.direction == Direction::Out && f.kind() == Kind::Request && f.class.id.as_ref() == Some(id))
            .map(|f| f.seq)
    };
    // The MCP server's URL: where its requests went, or what a challenge names.
    let server_url = events.iter().find_map(|e| match e {
        Event::Http(h) if h.method == "POST" => Some(h.url.clone()),
        Event::Auth(a) if a.step == Step::Challenge => Some(a.url.clone()),
        _ => None,
    });
    let mut advertised: Vec<String> = Vec::new();
    let mut prm_servers: Vec<String> = Vec::new();
    let mut prm_found = false;
    for e in events {
        match e {
            Event::Http(h) if h.status == Some(401) => {
                match h.received_header("www-authenticate") {
                    None => out.push(Finding::new(
                        rule::UNAUTHORIZED_WITHOUT_CHALLENGE,
                        Severity::Error,
                        h.request_id.as_ref().and_then(request_seq).into_iter().collect(),
                        format!(
                            "{} {} was answered 401 Unauthorized without a WWW-Authenticate header. HTTP requires one with every 401, and MCP clients read it to find the protected resource metadata and the scopes to ask for; without it they can only guess at well-known URLs.",
                            h.method, h.url
                        ),
                    )),
                    Some(w) => {
                        if let Some(s) = BearerChallenge::from_header(w).and_then(|b| b.scope) {
                            advertised.extend(s);
                        }
                    }
                }
            }
            Event::Http(h) if h.status == Some(403) => {
                if let Some(s) = h
                    .received_header("www-authenticate")
                    .and_then(BearerChallenge::from_header)
                    .and_then(|b| b.scope)
                {
                    advertised.extend(s);
                }
            }
            Event::Auth(a) => {
                let body = a.response_body.as_ref().filter(|b| b.is_object());
                let ok = a.status.is_some_and(|s| (200..300).contains(&s));
                match a.step {
                    Step::Challenge => {
                        if let Some(s) = a
                            .received_header("www-authenticate")
                            .and_then(BearerChallenge::from_header)
                            .and_then(|b| b.scope)
                        {
                            advertised.extend(s);
                        }
                    }
                    Step::ResourceMetadata if ok => {
                        let Some(body) = body else { continue };
                        let Some(resource) = body.get("resource").and_then(Value::as_str) else {
                            continue;
                        };
                        prm_found = true;
                        advertised.extend(json_strings(body.get("scopes_supported")));
                        prm_servers = json_strings(body.get("authorization_servers"));
                        if let Some(server) = &server_url
                            && crate::protocol::auth::discovery::check_resource(resource, server).is_err()
                        {
                            out.push(Finding::new(
                                rule::OAUTH_RESOURCE_MISMATCH,
                                Severity::Error,
                                vec![],
                                format!(
                                    "The protected resource metadata at {} says it is for {resource}, but it was fetched for {server}. A client must not authorize on its word: a token for {resource} is not for this server (and the metadata may be an attacker's). The resource must be this server's URL or a prefix of it.",
                                    a.url
                                ),
                            ));
                        }
                    }
                    Step::ServerMetadata if ok => {
                        let Some(body) = body else { continue };
                        advertised.extend(json_strings(body.get("scopes_supported")));
                        let found = body.get("issuer").and_then(Value::as_str);
                        let looked_up = issuer_of_metadata_url(&a.url);
                        let matches = |i: &str| {
                            prm_servers.iter().any(|p| p == i)
                                || looked_up.as_deref().is_some_and(|l| {
                                    l == i || l.trim_end_matches('/') == i.trim_end_matches('/')
                                })
                        };
                        let expected = prm_servers
                            .first()
                            .cloned()
                            .or(looked_up.clone())
                            .unwrap_or_else(|| a.url.clone());
                        if found.is_none_or(|f| !matches(f)) {
                            out.push(Finding::new(
                                rule::OAUTH_ISSUER_MISMATCH,
                                if prm_found { Severity::Error } else { Severity::Warning },
                                vec![],
                                format!(
                                    "The authorization server metadata at {} has issuer {}, but it was looked up for {expected}. RFC 8414 §3.3 forbids using such metadata (it may be an impersonation); clients that check refuse to authorize.{}",
                                    a.url,
                                    found.map_or_else(|| "(none)".to_owned(), |f| format!("{f:?}")),
                                    if prm_found {
                                        ""
                                    } else {
                                        " (Found through the 2025-03-26 fallback, which predates the check: a warning, not an error.)"
                                    }
                                ),
                            ));
                        }
                        let methods = body.get("code_challenge_methods_supported");
                        let grants = json_strings(body.get("grant_types_supported"));
                        let code_flow = grants.is_empty() || grants.iter().any(|g| g == "authorization_code");
                        if code_flow && !json_strings(methods).iter().any(|m| m == "S256") {
                            out.push(Finding::new(
                                rule::OAUTH_PKCE_S256_MISSING,
                                Severity::Error,
                                vec![],
                                format!(
                                    "The authorization server metadata at {} {}. MCP clients must refuse an authorization server that does not advertise PKCE with S256 (2025-11-25, \"Authorization Code Protection\").",
                                    a.url,
                                    match methods {
                                        None => "has no code_challenge_methods_supported".to_owned(),
                                        Some(m) => format!("lists code_challenge_methods_supported {m} without S256"),
                                    }
                                ),
                            ));
                        }
                    }
                    Step::Authorize if a.method == "GET" => {
                        let scope = url::Url::parse(&a.url)
                            .ok()
                            .and_then(|u| u.query_pairs().find(|(k, _)| k == "scope").map(|(_, v)| v.into_owned()));
                        if let Some(scope) = scope {
                            unadvertised_scopes(&scope, &advertised, &a.url, out);
                        }
                    }
                    Step::Token if a.method == "POST" => {
                        let Some(req) = a.request_body.as_ref().filter(|b| b.is_object()) else {
                            continue;
                        };
                        let grant = req.get("grant_type").and_then(Value::as_str).unwrap_or_default();
                        if ["authorization_code", "refresh_token", "client_credentials"].contains(&grant)
                            && req.get("resource").is_none()
                        {
                            out.push(Finding::new(
                                rule::OAUTH_TOKEN_REQUEST_WITHOUT_RESOURCE,
                                Severity::Warning,
                                vec![],
                                format!(
                                    "The {grant} token request to {} has no resource parameter. MCP clients must send it (RFC 8707) so the token is issued for this server alone; without it an authorization server may issue a token any server accepts, and this one may accept tokens meant for others.",
                                    a.url
                                ),
                            ));
                        }
                        if grant == "client_credentials"
                            && let Some(scope) = req.get("scope").and_then(Value::as_str)
                        {
                            unadvertised_scopes(scope, &advertised, &a.url, out);
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
}

fn unadvertised_scopes(scope: &str, advertised: &[String], url: &str, out: &mut Vec<Finding>) {
    let requested: Vec<String> = scope.split(' ').filter(|s| !s.is_empty()).map(str::to_owned).collect();
    let missing = crate::protocol::auth::scopes::never_advertised(&requested, &[advertised]);
    if missing.is_empty() {
        return;
    }
    out.push(Finding::new(
        rule::OAUTH_SCOPE_NOT_ADVERTISED,
        Severity::Warning,
        vec![],
        format!(
            "The request to {} asks for {} — never named by the server's challenge, its protected resource metadata or the authorization server's scopes_supported. Authorization servers refuse (invalid_scope) or silently drop unknown scopes; ask for what the server advertises.",
            url.split('?').next().unwrap_or(url),
            missing.join(", ")
        ),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::recorder::Recorder;
    use crate::transport::process::ExitInfo;
    use crate::wire::classify::Limits;
    use crate::wire::correlation::TimedOut;
    use crate::wire::framing::{LineEnding, RawLine};

    /// Builds a session the way the session thread and capture loading do.
    struct S {
        rec: Recorder,
        events: Vec<Event>,
        ms: u64,
    }

    impl S {
        fn new() -> Self {
            Self {
                rec: Recorder::replay(Limits::default()),
                events: Vec::new(),
                ms: 0,
            }
        }

        fn at(&mut self, ms: u64) -> &mut Self {
            self.ms = ms;
            self
        }

        fn line(&mut self, d: Direction, bytes: &[u8], ending: LineEnding) -> &mut Self {
            let f = self.rec.frame_at(
                d,
                RawLine {
                    bytes: bytes.to_vec(),
                    ending,
                },
                Duration::from_millis(self.ms),
                None,
            );
            self.events.push(Event::Frame(f));
            self.ms += 1;
            self
        }

        fn out(&mut self, s: &str) -> &mut Self {
            self.line(Direction::Out, s.as_bytes(), LineEnding::Lf)
        }

        fn inn(&mut self, s: &str) -> &mut Self {
            self.line(Direction::In, s.as_bytes(), LineEnding::Lf)
        }

        fn stderr(&mut self, s: &str) -> &mut Self {
            let l = self.rec.stderr_at(
                RawLine {
                    bytes: s.as_bytes().to_vec(),
                    ending: LineEnding::Lf,
                },
                Duration::from_millis(self.ms),
            );
            self.events.push(Event::Stderr(l));
            self
        }

        fn event(&mut self, e: Event) -> &mut Self {
            self.events.push(e);
            self
        }

        /// initialize offered 2025-11-25 with these client capabilities,
        /// answered with these server capabilities, then initialized.
        fn handshake(&mut self, client_caps: &str, server_caps: &str) -> &mut Self {
            self.out(&format!(
                r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{client_caps},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
            ))
            .inn(&format!(
                r#"{{"jsonrpc":"2.0","id":0,"result":{{"protocolVersion":"2025-11-25","capabilities":{server_caps},"serverInfo":{{"name":"s","version":"1"}}}}}}"#
            ))
            .out(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        }

        fn lint(&self) -> Vec<Finding> {
            lint(&self.events, &LintOptions::default())
        }

        fn rules(&self) -> Vec<&'static str> {
            self.lint().iter().map(|f| f.rule).collect()
        }

        fn find(&self, rule: &str) -> Finding {
            let all = self.lint();
            all.iter()
                .find(|f| f.rule == rule)
                .cloned()
                .unwrap_or_else(|| panic!("no {rule} finding in {all:#?}"))
        }
    }

    fn clean() -> S {
        let mut s = S::new();
        s.handshake(r#"{"roots":{"listChanged":true}}"#, r#"{"tools":{"listChanged":true}}"#);
        s
    }

    const TOOLS_LIST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;

    #[test]
    fn metadata_urls_name_their_issuer() {
        assert_eq!(
            issuer_of_metadata_url("http://a:1/.well-known/oauth-authorization-server/tenant1").as_deref(),
            Some("http://a:1/tenant1")
        );
        assert_eq!(
            issuer_of_metadata_url("http://a:1/.well-known/openid-configuration").as_deref(),
            Some("http://a:1")
        );
        assert_eq!(
            issuer_of_metadata_url("http://a:1/tenant1/.well-known/openid-configuration").as_deref(),
            Some("http://a:1/tenant1")
        );
        assert_eq!(issuer_of_metadata_url("http://a:1/metadata.json"), None);
    }

    #[test]
    fn clean_session_has_no_findings() {
        let mut s = clean();
        s.out(TOOLS_LIST)
            .inn(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object","properties":{"message":{"type":"string"}}},"outputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"echo":{"type":"string"}},"required":["echo"]}}]}}"#)
            .out(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}"#)
            .inn(r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hi"}],"structuredContent":{"echo":"hi"}}}"#)
            .inn(r#"{"jsonrpc":"2.0","id":"s1","method":"roots/list"}"#)
            .out(r#"{"jsonrpc":"2.0","id":"s1","result":{"roots":[]}}"#)
            .inn(r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#)
            .stderr("Server running on stdio")
            .event(Event::Note {
                at: Duration::from_millis(50),
                text: "closed the server's stdin".into(),
            })
            .event(Event::Exited {
                at: Duration::from_millis(60),
                status: ExitInfo {
                    code: Some(0),
                    signal: None,
                },
            });
        assert_eq!(s.lint(), vec![]);
    }

    #[test]
    fn every_rule_id_is_unique_and_kebab_case() {
        let mut seen = HashSet::new();
        for r in RULES {
            assert!(seen.insert(r.id), "duplicate {}", r.id);
            assert!(
                r.id.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
                "{}",
                r.id
            );
            assert!(!r.summary.is_empty());
        }
    }

    #[test]
    fn finding_line_and_json() {
        let f = Finding::new(rule::NOT_JSON, Severity::Error, vec![3, 4], "boom");
        assert_eq!(f.line(), "error  [not-json] seq 3,4: boom");
        let w = Finding::new(rule::CRLF, Severity::Warning, vec![], "x");
        assert_eq!(w.line(), "warning [crlf]: x");
        assert_eq!(
            f.to_json(),
            json!({"rule":"not-json","severity":"error","seqs":[3,4],"message":"boom"})
        );
        assert!(has_errors(&[w.clone(), f]));
        assert!(!has_errors(&[w]));
    }

    #[test]
    fn spawn_failed() {
        let mut s = S::new();
        s.event(Event::SpawnFailed {
            at: Duration::ZERO,
            error: crate::transport::process::SpawnError {
                program: "nope".into(),
                resolved: None,
                message: "not found in PATH".into(),
            },
        });
        let f = s.find(rule::SPAWN_FAILED);
        assert!(f.message.contains("not found in PATH"), "{}", f.message);
    }

    #[test]
    fn log_line_on_stdout_is_quoted_and_points_to_stderr() {
        let mut s = clean();
        s.inn("Server started on stdio");
        let f = s.find(rule::NOT_JSON);
        assert_eq!(f.severity, Severity::Error);
        assert_eq!(f.seqs, [3]);
        assert!(f.message.contains("\"Server started on stdio\""), "{}", f.message);
        assert!(f.message.contains("stderr"), "{}", f.message);
    }

    #[test]
    fn blank_line_and_not_jsonrpc() {
        let mut s = clean();
        s.inn("").inn(r#"{"hello":"world"}"#);
        let rules = s.rules();
        assert!(rules.contains(&rule::BLANK_LINE), "{rules:?}");
        assert!(rules.contains(&rule::NOT_JSONRPC), "{rules:?}");
        assert!(!rules.contains(&rule::NOT_JSON), "{rules:?}");
        // The object has no jsonrpc member, but that is not the point here.
        assert!(!rules.contains(&rule::MISSING_JSONRPC), "{rules:?}");
    }

    #[test]
    fn invalid_utf8() {
        let mut s = clean();
        s.line(
            Direction::In,
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"\xff\"}}",
            LineEnding::Lf,
        );
        assert_eq!(s.find(rule::INVALID_UTF8).severity, Severity::Error);
    }

    #[test]
    fn raw_newline_splitting_a_message() {
        let mut s = clean();
        // A newline inside a string: the pieces join without it.
        s.inn(r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"line one"#)
            .inn(r#"line two"}}"#);
        // Pretty-printed: the pieces join with it.
        s.inn("{")
            .inn(r#"  "jsonrpc": "2.0","#)
            .inn(r#"  "method": "notifications/message""#)
            .inn("}");
        let all = s.lint();
        let splits: Vec<_> = all.iter().filter(|f| f.rule == rule::SPLIT_MESSAGE).collect();
        assert_eq!(splits.len(), 2, "{all:#?}");
        assert_eq!(splits[0].seqs, [3, 4]);
        assert_eq!(splits[1].seqs, [5, 6, 7, 8]);
        assert!(!all.iter().any(|f| f.rule == rule::NOT_JSON), "{all:#?}");
    }

    #[test]
    fn a_log_line_starting_with_a_brace_is_not_a_split_message() {
        let mut s = clean();
        s.inn("{not json").inn("[INFO] ready");
        let rules = s.rules();
        assert_eq!(rules, [rule::NOT_JSON, rule::NOT_JSON]);
    }

    #[test]
    fn batch_is_allowed_only_in_2025_03_26() {
        let batch = r#"[{"jsonrpc":"2.0","id":5,"method":"ping"},{"jsonrpc":"2.0","id":6,"method":"ping"}]"#;
        let mut s = clean();
        s.out(batch);
        assert!(s.find(rule::BATCH_NOT_ALLOWED).message.contains("2025-11-25"));

        let mut old = S::new();
        old.out(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#)
            .inn(r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-03-26","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#)
            .out(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .out(batch);
        assert!(!old.rules().contains(&rule::BATCH_NOT_ALLOWED), "{:?}", old.rules());
        old.out(r#"[{"jsonrpc":"2.0","id":9,"method":"initialize","params":{}}]"#);
        assert!(old.find(rule::BATCH_NOT_ALLOWED).message.contains("initialize"));
    }

    #[test]
    fn crlf_bom_and_partial_line() {
        let mut s = clean();
        s.line(
            Direction::In,
            br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":1}}"#,
            LineEnding::CrLf,
        )
        .line(
            Direction::In,
            b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":2}}",
            LineEnding::Lf,
        )
        .line(Direction::In, br#"{"jsonrpc":"2.0","id":1,"res"#, LineEnding::Eof);
        assert_eq!(s.find(rule::CRLF).severity, Severity::Warning);
        assert_eq!(s.find(rule::BOM).severity, Severity::Warning);
        let p = s.find(rule::PARTIAL_AT_EOF);
        assert_eq!(p.severity, Severity::Error);
        assert!(!s.rules().contains(&rule::NOT_JSON));

        // A complete message that only lacks its newline is a lesser problem.
        let mut s = clean();
        s.line(
            Direction::In,
            br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":1}}"#,
            LineEnding::Eof,
        );
        assert_eq!(s.find(rule::PARTIAL_AT_EOF).severity, Severity::Warning);
    }

    #[test]
    fn jsonrpc_member_missing_or_wrong() {
        let mut s = clean();
        s.inn(r#"{"method":"notifications/message","params":{"level":"info","data":1}}"#)
            .inn(r#"{"jsonrpc":"1.0","method":"notifications/message","params":{"level":"info","data":1}}"#);
        assert_eq!(s.find(rule::MISSING_JSONRPC).seqs, [3]);
        let w = s.find(rule::WRONG_JSONRPC);
        assert_eq!(w.seqs, [4]);
        assert!(w.message.contains("\"1.0\""), "{}", w.message);
    }

    #[test]
    fn result_and_error_both_or_neither() {
        let mut s = clean();
        s.out(TOOLS_LIST)
            .inn(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]},"error":{"code":-1,"message":"x"}}"#)
            .out(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#)
            .inn(r#"{"jsonrpc":"2.0","id":2}"#);
        assert_eq!(s.find(rule::RESULT_AND_ERROR).seqs, [4]);
        assert_eq!(s.find(rule::NEITHER_RESULT_NOR_ERROR).seqs, [6]);
    }

    #[test]
    fn response_without_id() {
        let mut s = clean();
        s.inn(r#"{"jsonrpc":"2.0","result":{}}"#);
        assert_eq!(s.find(rule::RESPONSE_WITHOUT_ID).severity, Severity::Error);
    }

    #[test]
    fn notification_with_id_and_null_ids() {
        let mut s = clean();
        s.inn(r#"{"jsonrpc":"2.0","id":7,"method":"notifications/message","params":{"level":"info","data":1}}"#)
            .out(r#"{"jsonrpc":"2.0","id":null,"method":"tools/list"}"#)
            .inn(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#);
        assert_eq!(s.find(rule::NOTIFICATION_WITH_ID).seqs, [3]);
        let nulls: Vec<_> = s.lint().into_iter().filter(|f| f.rule == rule::NULL_ID).collect();
        assert_eq!(nulls.len(), 2, "{nulls:#?}");
        assert_eq!((nulls[0].seqs[0], nulls[0].severity), (4, Severity::Error));
        // JSON-RPC allows a null id on an error when the request id was unreadable.
        assert_eq!((nulls[1].seqs[0], nulls[1].severity), (5, Severity::Warning));
        // The null-id request is not also reported as a notification with an id.
        assert_eq!(
            s.lint().iter().filter(|f| f.rule == rule::NOTIFICATION_WITH_ID).count(),
            1
        );
    }

    #[test]
    fn invalid_id_params_result_error_shapes() {
        let mut s = clean();
        s.out(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#)
            .out(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":[1]}"#)
            .inn(r#"{"jsonrpc":"2.0","id":2,"result":5}"#)
            .out(r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#)
            .inn(r#"{"jsonrpc":"2.0","id":3,"error":{"message":"no code"}}"#)
            .out(r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x"}}"#)
            .inn(r#"{"jsonrpc":"2.0","id":4,"result":{"content":[],"isError":"yes"}}"#);
        assert_eq!(s.find(rule::INVALID_ID).seqs, [3]);
        assert_eq!(s.find(rule::PARAMS_NOT_OBJECT).seqs, [4]);
        assert_eq!(s.find(rule::RESULT_NOT_OBJECT).seqs, [5]);
        assert_eq!(s.find(rule::MALFORMED_ERROR).seqs, [7]);
        assert_eq!(s.find(rule::IS_ERROR_NOT_BOOL).seqs, [9]);
    }

    #[test]
    fn duplicate_ids_unknown_and_duplicate_responses() {
        let mut s = clean();
        s.out(TOOLS_LIST)
            .inn(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#)
            .inn(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#)
            .out(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
            .inn(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#)
            .inn(r#"{"jsonrpc":"2.0","id":99,"result":{}}"#);
        assert_eq!(s.find(rule::DUPLICATE_RESPONSE).seqs, [3, 4, 5]);
        assert_eq!(s.find(rule::DUPLICATE_REQUEST_ID).seqs, [3, 6]);
        assert_eq!(s.find(rule::UNKNOWN_RESPONSE_ID).seqs, [8]);
    }

    #[test]
    fn unanswered_request_with_time_waited_to_the_last_event() {
        let mut s = clean();
        s.at(100).out(TOOLS_LIST).at(2600).stderr("still thinking");
        let f = s.find(rule::UNANSWERED_REQUEST);
        assert_eq!(f.seqs, [3]);
        assert!(f.message.contains("tools/list #1"), "{}", f.message);
        assert!(f.message.contains("2.5 s"), "{}", f.message);
    }

    #[test]
    fn cancelled_requests_are_not_unanswered_but_timed_out_ones_are() {
        let mut s = clean();
        s.out(TOOLS_LIST)
            .event(Event::Cancelled {
                at: Duration::from_millis(5),
                id: RequestId::Number(1),
            })
            .out(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow"}}"#)
            .out(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}"#);
        assert!(!s.rules().contains(&rule::UNANSWERED_REQUEST), "{:?}", s.rules());

        let mut s = clean();
        s.out(TOOLS_LIST).event(Event::TimedOut {
            at: Duration::from_secs(10),
            timed_out: TimedOut {
                id: RequestId::Number(1),
                request_seq: 3,
                method: "tools/list".into(),
                waited: Duration::from_secs(10),
            },
        });
        s.event(Event::Cancelled {
            at: Duration::from_secs(10),
            id: RequestId::Number(1),
        });
        let f = s.find(rule::UNANSWERED_REQUEST);
        assert!(f.message.contains("timed out"), "{}", f.message);
    }

    #[test]
    fn unanswered_server_request() {
        let mut s = S::new();
        s.handshake(r#"{"roots":{}}"#, "{}");
        s.inn(r#"{"jsonrpc":"2.0","id":"r1","method":"roots/list"}"#);
        let f = s.find(rule::UNANSWERED_REQUEST);
        assert!(f.message.contains("from the client"), "{}", f.message);
    }

    #[test]
    fn requests_before_initialize() {
        let mut s = S::new();
        s.out(r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#)
            .out(TOOLS_LIST)
            .inn(r#"{"jsonrpc":"2.0","id":5,"result":{}}"#)
            .inn(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#);
        let f = s.find(rule::REQUEST_BEFORE_INITIALIZE);
        assert_eq!(f.seqs, [1], "ping is allowed");
        assert!(f.message.contains("without initialize"), "{}", f.message);

        let mut s = S::new();
        s.out(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#)
            .out(TOOLS_LIST);
        assert!(
            s.find(rule::REQUEST_BEFORE_INITIALIZE)
                .message
                .contains("before initialize was answered")
        );
    }

    #[test]
    fn modern_sessions_have_no_handshake_to_check() {
        let mut s = S::new();
        s.out(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#)
            .inn(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[],"resultType":"complete","ttlMs":0,"cacheScope":"private"}}"#);
        assert_eq!(s.lint(), vec![]);
    }

    #[test]
    fn modern_results_carry_result_type_and_cache_fields() {
        let mut s = S::new();
        s.out(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#)
            .inn(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[],"resultType":"complete"}}"#)
            .out(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#)
            .inn(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[],"resultType":"weird","ttlMs":0,"cacheScope":"public"}}"#);
        assert_eq!(s.find(rule::CACHE_FIELDS_MISSING).seqs, [1]);
        assert_eq!(s.find(rule::RESULT_TYPE_MISSING).seqs, [3]);
        // An id reused after its request was answered is fine in 2026-07-28.
        assert!(!s.rules().contains(&rule::DUPLICATE_REQUEST_ID));
    }

    #[test]
    fn initialized_missing_or_early() {
        let mut s = S::new();
        s.out(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#)
            .inn(r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#);
        assert_eq!(s.find(rule::INITIALIZED_NOT_SENT).seqs, [1]);

        let mut s = S::new();
        s.out(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#)
            .out(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .inn(r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#);
        assert_eq!(s.find(rule::INITIALIZED_BEFORE_RESPONSE).seqs, [1]);
        assert!(!s.rules().contains(&rule::INITIALIZED_NOT_SENT));
    }

    /// After a 401, mcpscope authorizes and sends initialize again under a
    /// new id: the answered one is the handshake, and nothing was early.
    #[test]
    fn an_initialize_sent_again_after_authorizing_is_the_handshake() {
        let mut s = S::new();
        s.out(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#)
            .out(r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#)
            .inn(r#"{"jsonrpc":"2.0","id":2,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}"#)
            .out(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .out(TOOLS_LIST.replace("\"id\":1", "\"id\":3").as_str())
            .inn(r#"{"jsonrpc":"2.0","id":3,"result":{"tools":[]}}"#);
        // (The first initialize's HTTP refusal is not in this frames-only
        // session, so it counts as unanswered here; a capture has it.)
        let rules = s.rules();
        for r in [
            rule::INITIALIZED_BEFORE_RESPONSE,
            rule::REQUEST_BEFORE_INITIALIZE,
            rule::INITIALIZED_NOT_SENT,
        ] {
            assert!(!rules.contains(&r), "{rules:?}");
        }
    }

    #[test]
    fn server_requests_before_initialized() {
        let mut s = S::new();
        s.out(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"t","version":"1"}}}"#)
            .inn(r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#)
            .inn(r#"{"jsonrpc":"2.0","id":"s","method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}"#)
            .inn(r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#)
            .out(r#"{"jsonrpc":"2.0","id":"p","result":{}}"#)
            .out(r#"{"jsonrpc":"2.0","id":"s","error":{"code":-32603,"message":"no"}}"#)
            .out(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert_eq!(s.find(rule::SERVER_REQUEST_BEFORE_INITIALIZED).seqs, [2]);
    }

    #[test]
    fn unsupported_version_and_continuing_anyway() {
        let mut s = S::new();
        s.out(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#)
            .inn(r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"1999-01-01","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#)
            .out(TOOLS_LIST)
            .inn(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#);
        let f = s.find(rule::UNSUPPORTED_VERSION);
        assert_eq!(f.seqs, [0, 1]);
        assert!(f.message.contains("1999-01-01"), "{}", f.message);
        assert_eq!(s.find(rule::CONTINUED_AFTER_UNSUPPORTED_VERSION).seqs, [2]);
        assert!(
            !s.rules().contains(&rule::INITIALIZED_NOT_SENT),
            "not owed for an unusable answer"
        );

        // A supported counter-offer is fine.
        let mut s = S::new();
        s.out(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2099-01-01","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#)
            .inn(r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2024-11-05","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#)
            .out(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert_eq!(s.lint(), vec![]);
    }

    #[test]
    fn incomplete_initialize_result() {
        let mut s = S::new();
        s.out(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}"#)
            .inn(r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25"}}"#)
            .out(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        let f = s.find(rule::INITIALIZE_RESULT_INCOMPLETE);
        assert!(f.message.contains("capabilities, serverInfo"), "{}", f.message);
    }

    #[test]
    fn capability_not_advertised_in_both_directions() {
        let mut s = S::new();
        s.handshake("{}", r#"{"resources":{}}"#);
        s.out(TOOLS_LIST)
            .inn(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}"#)
            .out(r#"{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"x:/a"}}"#)
            .inn(r#"{"jsonrpc":"2.0","id":2,"result":{}}"#)
            .out(r#"{"jsonrpc":"2.0","id":3,"method":"resources/list"}"#)
            .inn(r#"{"jsonrpc":"2.0","id":3,"result":{"resources":[]}}"#)
            .inn(r#"{"jsonrpc":"2.0","id":"x","method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}"#)
            .out(r#"{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"no"}}"#);
        let caps: Vec<_> = s
            .lint()
            .into_iter()
            .filter(|f| f.rule == rule::CAPABILITY_NOT_ADVERTISED)
            .collect();
        assert_eq!(caps.len(), 3, "{caps:#?}");
        assert!(caps[0].message.contains("`tools`"), "{}", caps[0].message);
        assert!(caps[1].message.contains("`resources.subscribe`"), "{}", caps[1].message);
        assert_eq!(caps[2].severity, Severity::Error);
        assert!(caps[2].message.contains("`sampling`"), "{}", caps[2].message);
    }

    #[test]
    fn list_changed_without_the_flag() {
        let mut s = S::new();
        s.handshake(r#"{"roots":{}}"#, r#"{"tools":{},"prompts":{"listChanged":true}}"#);
        s.inn(r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#)
            .inn(r#"{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}"#)
            .out(r#"{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}"#);
        let found: Vec<_> = s
            .lint()
            .into_iter()
            .filter(|f| f.rule == rule::LIST_CHANGED_NOT_ADVERTISED)
            .collect();
        assert_eq!(found.len(), 2, "{found:#?}");
        assert_eq!(found[0].seqs, [3]);
        assert_eq!(found[1].seqs, [5]);
    }

    fn tools(list: &str) -> S {
        let mut s = clean();
        s.out(TOOLS_LIST)
            .inn(&format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":{list}}}}}"#));
        s
    }

    #[test]
    fn tool_names() {
        let s = tools(
            r#"[{"name":"get weather!","inputSchema":{"type":"object"}},{"inputSchema":{"type":"object"}},{"name":"ok.name-1_x","inputSchema":{"type":"object"}}]"#,
        );
        let found: Vec<_> = s
            .lint()
            .into_iter()
            .filter(|f| f.rule == rule::TOOL_NAME_FORMAT)
            .collect();
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(found.iter().any(|f| f.message.contains("\"get weather!\"")));
        assert!(found.iter().any(|f| f.severity == Severity::Error));
        assert!(valid_tool_name(&"a".repeat(128)));
        assert!(!valid_tool_name(&"a".repeat(129)));
        assert!(!valid_tool_name(""));
    }

    #[test]
    fn input_schema_shape() {
        let s = tools(
            r#"[{"name":"a"},{"name":"b","inputSchema":{"type":"string"}},{"name":"c","inputSchema":"x"},{"name":"d","inputSchema":{"type":"object"}}]"#,
        );
        let found: Vec<_> = s
            .lint()
            .into_iter()
            .filter(|f| f.rule == rule::INPUT_SCHEMA_NOT_OBJECT)
            .collect();
        assert_eq!(found.len(), 3, "{found:#?}");
    }

    #[test]
    fn invalid_schemas_and_dialects() {
        let s = tools(
            r#"[{"name":"a","inputSchema":{"type":"object","properties":{"x":{"type":"strnig"}}}},
                {"name":"b","inputSchema":{"type":"object"},"outputSchema":{"type":"object","required":"x"}},
                {"name":"c","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","items":[{"type":"string"}]}},
                {"name":"d","inputSchema":{"$schema":"https://example.com/my-dialect","type":"object"}}]"#,
        );
        let input = s.find(rule::INVALID_INPUT_SCHEMA);
        assert!(input.message.contains("\"a\""), "{}", input.message);
        assert!(input.message.contains("/properties/x/type"), "{}", input.message);
        let output = s.find(rule::INVALID_OUTPUT_SCHEMA);
        assert!(output.message.contains("\"b\""), "{}", output.message);
        // Tuple `items` is valid draft-07 (and not 2020-12): the declared dialect is used.
        assert_eq!(
            s.lint().iter().filter(|f| f.rule == rule::INVALID_INPUT_SCHEMA).count(),
            1,
            "{:#?}",
            s.lint()
        );
        assert!(s.find(rule::UNSUPPORTED_SCHEMA_DIALECT).message.contains("my-dialect"));
    }

    #[test]
    fn remote_refs_are_not_fetched() {
        let s = tools(
            r#"[{"name":"a","inputSchema":{"type":"object","properties":{"x":{"$ref":"https://example.invalid/s.json"}}}}]"#,
        );
        let f = s.find(rule::INVALID_INPUT_SCHEMA);
        assert!(f.message.contains("cannot be used"), "{}", f.message);
    }

    const WEATHER: &str = r#"[{"name":"weather","inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"temperature":{"type":"number"}},"required":["temperature"]}}]"#;

    fn call(s: &mut S, id: u64, result: &str) {
        s.out(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"weather","arguments":{{}}}}}}"#
        ))
        .inn(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#));
    }

    #[test]
    fn structured_content_against_output_schema() {
        let mut s = tools(WEATHER);
        call(&mut s, 2, r#"{"content":[],"structuredContent":{"temperature":"hot"}}"#);
        call(&mut s, 3, r#"{"content":[{"type":"text","text":"22"}]}"#);
        call(&mut s, 4, r#"{"content":[],"structuredContent":{"temperature":22}}"#);
        call(
            &mut s,
            5,
            r#"{"content":[{"type":"text","text":"boom"}],"isError":true}"#,
        );
        let m = s.find(rule::STRUCTURED_CONTENT_MISMATCH);
        assert_eq!(m.seqs, [5, 6]);
        assert!(m.message.contains("/temperature"), "{}", m.message);
        assert_eq!(s.find(rule::STRUCTURED_CONTENT_MISSING).seqs, [7, 8]);
        let rules = s.rules();
        assert_eq!(
            rules.iter().filter(|r| r.starts_with("structured-content")).count(),
            2,
            "{rules:?}"
        );
    }

    #[test]
    fn is_error_for_an_unknown_tool_is_a_heuristic_warning() {
        let mut s = tools(WEATHER);
        call(
            &mut s,
            2,
            r#"{"content":[{"type":"text","text":"Unknown tool: wether"}],"isError":true}"#,
        );
        let f = s.find(rule::TOOL_ERROR_FOR_PROTOCOL_ERROR);
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.message.starts_with("Heuristic"), "{}", f.message);
    }

    #[test]
    fn internal_error_for_a_listed_tool_is_a_heuristic_info() {
        let mut s = tools(WEATHER);
        s.out(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"weather","arguments":{}}}"#)
            .inn(r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"weather API returned 503"}}"#)
            .out(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"weather","arguments":{}}}"#)
            .inn(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"Tool weather not found"}}"#)
            .out(r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"other","arguments":{}}}"#)
            .inn(r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32603,"message":"disk full"}}"#);
        let found: Vec<_> = s
            .lint()
            .into_iter()
            .filter(|f| f.rule == rule::PROTOCOL_ERROR_FOR_TOOL_FAILURE)
            .collect();
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(found[0].severity, Severity::Info);
        assert_eq!(found[0].seqs, [5, 6]);
        assert!(!has_errors(&found));
    }

    #[test]
    fn stderr_tracebacks_are_one_finding_per_block() {
        let mut s = clean();
        s.stderr("Traceback (most recent call last):")
            .stderr("  File \"server.py\", line 3, in <module>")
            .stderr("ValueError: boom")
            .inn(r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":1}}"#)
            .stderr("thread 'main' panicked at src/main.rs:2:5")
            .stderr("INFO all good");
        let found: Vec<_> = s.lint().into_iter().filter(|f| f.rule == rule::STDERR_ERROR).collect();
        assert_eq!(found.len(), 2, "{found:#?}");
        assert_eq!(found[0].seqs, [3, 5]);
        assert!(found[0].message.contains("ValueError: boom"), "{}", found[0].message);
        assert_eq!(found[1].seqs, [7]);
    }

    #[test]
    fn slow_responses_over_the_threshold() {
        let mut s = clean();
        s.at(1000)
            .out(TOOLS_LIST)
            .at(7500)
            .inn(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#);
        let f = s.find(rule::SLOW_RESPONSE);
        assert_eq!(f.seqs, [3, 4]);
        assert!(f.message.contains("6.5 s"), "{}", f.message);
        let quick = lint(
            &s.events,
            &LintOptions {
                slow_response: Duration::from_secs(10),
            },
        );
        assert!(!quick.iter().any(|f| f.rule == rule::SLOW_RESPONSE));
    }

    #[test]
    fn exit_during_a_pending_request() {
        let mut s = clean();
        s.out(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"crash"}}"#)
            .event(Event::Exited {
                at: Duration::from_millis(20),
                status: ExitInfo {
                    code: Some(1),
                    signal: None,
                },
            });
        let f = s.find(rule::EXITED_DURING_REQUEST);
        assert_eq!(f.seqs, [3]);
        assert!(f.message.contains("exited with code 1"), "{}", f.message);
        assert!(!s.rules().contains(&rule::UNANSWERED_REQUEST), "reported once");

        // An exit after we asked it to stop is not the server's fault.
        let mut s = clean();
        s.out(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}"#)
            .event(Event::Note {
                at: Duration::from_millis(20),
                text: "closed the server's stdin".into(),
            })
            .event(Event::Exited {
                at: Duration::from_millis(30),
                status: ExitInfo {
                    code: Some(0),
                    signal: None,
                },
            });
        assert!(!s.rules().contains(&rule::EXITED_DURING_REQUEST));
        assert!(s.rules().contains(&rule::UNANSWERED_REQUEST));
    }

    #[test]
    fn findings_are_sorted_by_frame() {
        let mut s = clean();
        s.inn("log one").stderr("Error: x").inn("log two");
        let seqs: Vec<u64> = s.lint().iter().map(|f| f.seqs[0]).collect();
        assert_eq!(seqs, [3, 4, 5]);
    }
}
