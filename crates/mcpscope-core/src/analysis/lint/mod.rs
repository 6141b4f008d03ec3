//! Protocol lint: rules over a whole session, live or loaded from a capture,
//! run as a stream.
//!
//! Classification and correlation judge one line at a time; some mistakes only
//! show across lines: a message broken over several lines, a request nobody
//! answered, a method the other side never advertised, a tool result that does
//! not match the schema the same server published. Each finding names a stable
//! rule id, the frames it is about and a sentence a newcomer understands.
//!
//! [`Linter`] reads events one at a time and keeps only what later lines can
//! still need (open requests, the handshake, the tools a server listed), so a
//! million-frame capture is linted in one pass without holding it, and a live
//! session is linted as rows arrive. Rules are grouped by concern, one module
//! each; a concern sees every event in [`Linter::push`] and says what depends
//! on the rest of the session in [`Linter::provisional`]. A new concern is a
//! struct with those two steps, called from both.

mod apps;
mod auth;
mod capability;
mod context;
pub(crate) use context::{NamingParams, has_cursor, result_of};
mod era;
mod exchange;
mod facts;
mod framing;
mod lifecycle;
pub mod report;
mod request;
mod stderr;
mod tools;

#[cfg(test)]
mod tests;

use crate::record::capture::CaptureError;
pub use crate::timeline::model::Severity;
use crate::transport::event::Event;
use crate::wire::classify::Kind;
use crate::wire::frame::{Direction, Frame};
use serde_json::{Value, json};
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
    TOOL_DESCRIPTION_MISSING = "tool-description-missing", "A tool with no description: a model has only its name to choose it by.";
    TOOL_DESCRIPTION_LONG = "tool-description-long", "A tool description longer than its budget (characters): every request to a model carries it.";
    PROVIDER_TOOL_NAME = "provider-tool-name", "A tool name model providers refuse (OpenAI and Anthropic take 1-64 of A-Z a-z 0-9 _ -): a client must rename it.";
    PROVIDER_TOOL_NAME_CLASH = "provider-tool-name-clash", "Tool names that become one under the providers' rules (files.read and files_read): a client can offer only one of them as is.";
    PROVIDER_SCHEMA = "provider-schema", "A tool inputSchema a model provider refuses (anyOf, oneOf or allOf at its top: Anthropic rejects them; OpenAI wants a plain object schema).";
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
    CONTEXT_BUDGET = "context-budget", "A listed tool, prompt or resource template, or a whole listing, that takes more of a model's context than its budget (o200k tokens).";
    PROXY_CHANGED = "proxy-changed", "A frame an intercepting proxy dropped, changed, answered itself or kept back, or a frame it injected: what the other side saw is not what was sent.";
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
    INVALID_HEADER_ANNOTATION = "invalid-x-mcp-header", "A tool whose x-mcp-header annotations break a rule (empty, not a header name, on a non-primitive parameter, not unique): 2026-07-28 clients will not call it.";
    UNAUTHORIZED_WITHOUT_CHALLENGE = "401-without-www-authenticate", "An HTTP 401 without a WWW-Authenticate header: the client cannot tell how to authorize.";
    OAUTH_RESOURCE_MISMATCH = "oauth-resource-mismatch", "Protected resource metadata whose resource is not the server it was fetched for.";
    OAUTH_ISSUER_MISMATCH = "oauth-issuer-mismatch", "Authorization server metadata whose issuer is not the authorization server it was looked up for.";
    OAUTH_PKCE_S256_MISSING = "oauth-pkce-s256-missing", "Authorization server metadata that does not advertise PKCE with S256.";
    OAUTH_TOKEN_REQUEST_WITHOUT_RESOURCE = "oauth-token-request-without-resource", "A token request without the resource parameter (RFC 8707): the token is not bound to the server.";
    AUTHORIZATION_FAILED = "authorization-failed", "An authorization the server asked for failed (refused, timed out, or a redirect that did not check out): the session went no further.";
    OAUTH_SCOPE_NOT_ADVERTISED = "oauth-scope-not-advertised", "Scopes requested that neither the server's challenge nor any metadata advertised.";
    APP_RESOURCE_URI = "app-resource-uri", "APP-001/007: a tool's _meta.ui that does not name its View by a ui:// resourceUri.";
    APP_FLAT_RESOURCE_KEY = "app-flat-resource-key", "APP-006: a tool that names its View only by the deprecated flat _meta[\"ui/resourceUri\"].";
    APP_VISIBILITY = "app-visibility", "APP-011: a tool's _meta.ui.visibility with values other than \"model\" and \"app\".";
    APP_RESOURCE_INVALID = "app-resource-invalid", "APP-002/003/004: a ui:// resource with the wrong mime type, not exactly one text or blob, or not an HTML5 document.";
    APP_CSP_ORIGIN = "app-csp-origin", "APP-009: CSP domains a host must drop (not an origin, or with spaces, quotes or semicolons).";
    APP_UNDECLARED_DOMAIN = "app-undeclared-domain", "A View that loads from an external origin its _meta.ui.csp does not declare.";
    APP_CSP_APPLIED = "app-csp-applied", "The Content-Security-Policy a View actually ran under (from the host's record).";
    APP_NO_INITIALIZE = "app-no-initialize", "APP-100: a View that was loaded but never sent ui/initialize.";
    APP_INITIALIZED_NOT_SENT = "app-initialized-not-sent", "APP-102: a View that never sent ui/notifications/initialized.";
    APP_UNKNOWN_METHOD = "app-unknown-method", "APP-103: a View message that is not JSON-RPC 2.0 or has no View-to-host method's name.";
    APP_LEGACY_NAME = "app-legacy-name", "A View that used a name from a draft of the extension (ui/log, ui/size-change …).";
    APP_DISPLAY_MODE_UNDECLARED = "app-display-mode-undeclared", "APP-106: a display mode asked for outside the modes the View declared and the host offers.";
    APP_MODEL_ONLY_TOOL_CALL = "app-model-only-tool-call", "A View calling a tool whose visibility lacks \"app\" (hosts must refuse it).";
    APP_HOST_EARLY_MESSAGE = "app-host-early-message", "A host that sent a View something before its ui/notifications/initialized.";
    APP_TEARDOWN_UNANSWERED = "app-teardown-unanswered", "A View that never answered ui/resource-teardown.";
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
    pub(super) fn new(rule: &'static str, severity: Severity, seqs: Vec<u64>, message: impl Into<String>) -> Self {
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

/// What `tool-description-long` allows unless told otherwise: 1,024
/// characters (OpenAI's limit on a function's description in its
/// Assistants API, and about 250 tokens).
pub const DESCRIPTION_BUDGET: usize = 1024;

#[derive(Clone, Debug)]
pub struct LintOptions {
    /// Responses slower than this are reported.
    pub slow_response: Duration,
    /// What one definition, and one whole listing, may cost a model's context.
    pub context_budget: crate::analysis::context_cost::Budget,
    /// The longest tool description (characters) before `tool-description-long`; 0: no limit.
    pub description_budget: usize,
}

impl Default for LintOptions {
    fn default() -> Self {
        Self {
            slow_response: Duration::from_secs(5),
            context_budget: crate::analysis::context_cost::Budget::DEFAULT,
            description_budget: DESCRIPTION_BUDGET,
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
    let mut linter = Linter::new(options.clone());
    for e in events {
        linter.push(e);
    }
    linter.finish()
}

/// Orders findings as reports list them: by the first frame they are about,
/// then by rule, then in the order they were found.
pub fn sort(findings: &mut [Finding]) {
    findings.sort_by_key(|f| (f.seqs.first().copied().unwrap_or(u64::MAX), rule_order(f.rule)));
}

fn rule_order(id: &str) -> usize {
    RULES.iter().position(|x| x.id == id).unwrap_or(usize::MAX)
}

/// The streaming lint engine: events in, findings out.
pub struct Linter {
    options: LintOptions,
    facts: facts::Facts,
    framing: framing::Framing,
    exchange: exchange::Exchanges,
    lifecycle: lifecycle::Lifecycle,
    era: era::Era,
    mrtr: era::RoundTrips,
    capability: capability::Capabilities,
    tools: tools::Tools,
    stderr: stderr::Stderr,
    auth: auth::Auth,
    apps: apps::Apps,
    context: context::ContextBudget,
    /// Findings no later event can change, not yet taken.
    settled: Vec<Finding>,
    lines: u64,
}

impl Linter {
    pub fn new(options: LintOptions) -> Self {
        Self {
            options,
            facts: facts::Facts::default(),
            framing: framing::Framing::default(),
            exchange: exchange::Exchanges::default(),
            lifecycle: lifecycle::Lifecycle::default(),
            era: era::Era::default(),
            mrtr: era::RoundTrips::default(),
            capability: capability::Capabilities::default(),
            tools: tools::Tools::default(),
            stderr: stderr::Stderr::default(),
            auth: auth::Auth::default(),
            apps: apps::Apps::default(),
            context: context::ContextBudget::default(),
            settled: Vec::new(),
            lines: 0,
        }
    }

    /// Frames and stderr lines read so far.
    pub fn lines_seen(&self) -> u64 {
        self.lines
    }

    pub fn push(&mut self, ev: &Event) {
        self.exchange.seen_at(ev.at());
        let out = &mut self.settled;
        match ev {
            Event::Stderr(s) => {
                self.lines += 1;
                self.stderr.line(s);
                return;
            }
            Event::Frame(f) => {
                self.lines += 1;
                self.facts.observe(f);
                self.auth.frame(f);
                let facts = &self.facts;
                self.framing.frame(f, out);
                self.exchange.frame(f, facts, &self.options, out);
                self.lifecycle.frame(f, facts);
                self.era.frame(f, facts);
                // Read once for the round trips and the tool rules (every
                // tools/call is both).
                let params = request::RequestParams::of(f, crate::protocol::mrtr::may_require_input);
                self.mrtr.frame(f, &params, out);
                self.capability.frame(f, facts);
                self.tools.frame(f, &params, self.options.description_budget, out);
                self.apps.frame(f, out);
                self.context.frame(f, self.options.context_budget, out);
            }
            Event::SpawnFailed { error, .. } => out.push(Finding::new(
                rule::SPAWN_FAILED,
                Severity::Error,
                vec![],
                format!("The server could not be started: {error}."),
            )),
            other => {
                if let Event::Touch(t) = other
                    && let Some(f) = proxy_finding(t)
                {
                    out.push(f);
                }
                if let Event::App(a) = other {
                    self.apps.app(a, out);
                }
                self.auth.event(other, out);
                self.exchange.event(other, out);
            }
        }
        self.stderr.flush(&mut self.settled);
    }

    /// Takes the findings that no later event can change, in the order they
    /// were found (not sorted).
    pub fn take_settled(&mut self) -> Vec<Finding> {
        std::mem::take(&mut self.settled)
    }

    /// Findings that still depend on what comes next: requests still waiting
    /// (reported only once `session_over`: in flight is not missing), the
    /// handshake and the era as far as they are known, messages whose last
    /// line may still come. Computed afresh on each call.
    pub fn provisional(&self, session_over: bool) -> Vec<Finding> {
        let mut out = Vec::new();
        let facts = &self.facts;
        self.framing.provisional(facts, &mut out);
        self.exchange.provisional(facts, session_over, &mut out);
        self.lifecycle.provisional(facts, &mut out);
        self.era.provisional(facts, &mut out);
        self.capability.provisional(facts, &mut out);
        self.stderr.provisional(&mut out);
        self.apps.provisional(&mut out);
        out
    }

    /// Another session of the same capture begins (ids and the handshake
    /// start again): the one before is over, and its findings (sorted) join
    /// the settled ones.
    pub fn next_session(&mut self) {
        let lines = self.lines;
        let fresh = Linter::new(self.options.clone());
        let done = std::mem::replace(self, fresh);
        self.settled = done.finish();
        self.lines = lines;
    }

    /// Every finding of a session that is over, sorted.
    pub fn finish(mut self) -> Vec<Finding> {
        let mut all = self.take_settled();
        all.extend(self.provisional(true));
        sort(&mut all);
        all
    }
}

// ---------------------------------------------------------------------------
// Helpers for messages.

pub(super) fn sender(d: Direction) -> &'static str {
    match d {
        Direction::Out => "The client",
        Direction::In => "The server",
    }
}

pub(super) fn stream(d: Direction) -> &'static str {
    match d {
        Direction::Out => "the server's stdin",
        Direction::In => "stdout",
    }
}

pub(super) fn quote(text: &str) -> String {
    format!("{:?}", crate::text::shorten(text, 160))
}

pub(super) fn request_label(f: &Frame) -> String {
    let method = f.class.method.as_deref().unwrap_or("?");
    match &f.class.id {
        Some(id) => format!("{method} #{id}"),
        None => method.to_owned(),
    }
}

pub(super) fn human_duration(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// Up to five labels, then a count, so a flood stays one readable sentence.
pub(super) fn list_labels(labels: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut s = labels.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
    if labels.len() > SHOWN {
        s.push_str(&format!(" and {} more", labels.len() - SHOWN));
    }
    s
}

pub(super) fn is_request(f: &Frame, d: Direction) -> bool {
    f.direction == d && f.kind() == Kind::Request
}

/// A capture linted in one pass.
pub struct LintedCapture {
    pub findings: Vec<Finding>,
    /// Lines that could not be read (see [`crate::record::capture::Loaded::warnings`]).
    pub warnings: Vec<String>,
    /// Events read (a note marks each session after the first).
    pub events: usize,
    /// Sessions in the file (each linted on its own).
    pub sessions: usize,
}

/// Lints a capture file record by record, holding only what the rules still
/// need (see [`Linter`]), never the whole session.
///
/// Reading (unescaping and classifying each record, about 60 % of the work)
/// and the rules run on two threads, handing events over in small batches.
/// A batch goes back to the reading thread once linted, so its events are
/// freed by the thread that allocated them and its buffer is reused.
pub fn lint_capture(path: &std::path::Path, options: &LintOptions) -> Result<LintedCapture, CaptureError> {
    use crate::record::capture::{EventReader, Item, READ_BUFFER};
    /// Events per hand-over. Measured on a 1M-record capture: 2,048 made
    /// the pipeline slower than one thread (a batch's events no longer fit
    /// the allocator's per-thread caches or the CPU's), 32-64 the fastest.
    const BATCH: usize = 64;
    let file = crate::record::private_files::open_regular(path).map_err(CaptureError::open(path))?;
    let mut reader =
        EventReader::new(std::io::BufReader::with_capacity(READ_BUFFER, file)).map_err(CaptureError::read(path))?;
    let (full_tx, full_rx) = crossbeam_channel::bounded::<Vec<Item>>(4);
    let (empty_tx, empty_rx) = crossbeam_channel::bounded::<Vec<Item>>(8);
    std::thread::scope(|scope| {
        let rules = scope.spawn(move || {
            let mut linter = Linter::new(options.clone());
            let (mut findings, mut warnings, mut events, mut sessions) = (Vec::new(), Vec::new(), 0, 1);
            for mut batch in full_rx {
                for item in batch.iter_mut() {
                    match item {
                        Item::Event(e) => {
                            events += 1;
                            linter.push(e);
                        }
                        Item::Warning(w) => warnings.push(std::mem::take(w)),
                        Item::Boundary(_, _note) => {
                            // Ids and the handshake start again: the session before is over.
                            events += 1;
                            sessions += 1;
                            findings.extend(std::mem::replace(&mut linter, Linter::new(options.clone())).finish());
                        }
                    }
                }
                // Back to the reader to be freed there; gone if it has stopped.
                let _ = empty_tx.send(batch);
            }
            findings.extend(linter.finish());
            LintedCapture {
                findings,
                warnings,
                events,
                sessions,
            }
        });
        let read = (|| -> Result<(), CaptureError> {
            let mut batch = Vec::with_capacity(BATCH);
            while let Some(item) = reader.next_item().map_err(CaptureError::read(path))? {
                batch.push(item);
                if batch.len() == BATCH {
                    let next = match empty_rx.try_recv() {
                        Ok(mut used) => {
                            used.clear();
                            used
                        }
                        Err(_) => Vec::with_capacity(BATCH),
                    };
                    if full_tx.send(std::mem::replace(&mut batch, next)).is_err() {
                        break; // the rules' thread is gone: its panic is reported below
                    }
                }
            }
            if !batch.is_empty() {
                let _ = full_tx.send(batch);
            }
            Ok(())
        })();
        drop(full_tx);
        // Batches still coming back are freed here, as they were allocated here.
        let linted = rules.join();
        drop(empty_rx);
        read?;
        linted.map_err(|_| CaptureError::Stopped {
            path: path.to_owned(),
            what: "the lint rules",
        })
    })
}

/// What an intercepting proxy did, as a finding on the frame it did it to
/// (a hold is not one: what follows it is).
fn proxy_finding(t: &crate::transport::event::Touch) -> Option<Finding> {
    use crate::transport::event::TouchKind;
    if matches!(t.kind, TouchKind::Held | TouchKind::Forwarded) {
        return None;
    }
    let rule = t
        .rule
        .as_deref()
        .map(|r| format!(" (by {r})"))
        .unwrap_or_else(|| " (by the user)".to_owned());
    let sent = t
        .sent
        .as_deref()
        .map(|b| {
            format!(
                " It sent: {}",
                crate::text::shorten_bytes(b.strip_suffix(b"\n").unwrap_or(b), 200)
            )
        })
        .unwrap_or_default();
    let side = |d: crate::wire::frame::Direction| {
        if d == crate::wire::frame::Direction::Out {
            "server"
        } else {
            "client"
        }
    };
    let what = match t.kind {
        TouchKind::Dropped => format!("The proxy dropped this frame: the {} never got it", side(t.direction)),
        TouchKind::Edited => format!(
            "The proxy changed this frame: the {} got other bytes",
            side(t.direction)
        ),
        TouchKind::Answered => format!(
            "The proxy answered this request itself: the {} never saw it",
            side(t.direction)
        ),
        TouchKind::Injected => format!("The proxy sent the {} a frame no peer wrote", side(t.direction)),
        _ => format!("The proxy applied a fault: {}", t.text),
    };
    Some(Finding::new(
        rule::PROXY_CHANGED,
        Severity::Info,
        t.of_seq.into_iter().collect(),
        format!("{what}{rule}.{sent}"),
    ))
}

/// Every finding for every capture in tests/captures, compared with the
/// findings recorded in tests/captures/findings.golden (written by the
/// whole-session engine this streaming one replaced): the same findings, in
/// the same order, word for word. `MCPSCOPE_BLESS=1` rewrites the file.
#[cfg(test)]
mod golden {
    use std::fmt::Write as _;
    use std::path::PathBuf;

    fn captures() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/captures")
    }

    pub(super) fn render() -> String {
        let mut out = String::new();
        for path in capture_paths() {
            let loaded = crate::record::capture::load(&path).unwrap();
            writeln!(out, "## {}", path.file_name().unwrap().to_string_lossy()).unwrap();
            for f in super::lint(&loaded.events, &super::LintOptions::default()) {
                writeln!(out, "{}", f.line()).unwrap();
            }
        }
        out
    }

    fn capture_paths() -> Vec<PathBuf> {
        let mut names: Vec<PathBuf> = std::fs::read_dir(captures())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .collect();
        names.sort();
        names
    }

    /// The two-thread file linter finds what the in-memory one does, file by
    /// file, and in one file holding every capture as a session of its own
    /// (sessions end inside batches, findings stay in order).
    #[test]
    fn linting_a_file_finds_what_linting_its_events_does() {
        let options = super::LintOptions::default();
        let (mut joined, mut rules, mut events, mut sessions) = (Vec::new(), Vec::new(), 0, 0);
        for path in capture_paths() {
            let loaded = crate::record::capture::load(&path).unwrap();
            let from_file = super::lint_capture(&path, &options).unwrap();
            let lines = |f: &[super::Finding]| f.iter().map(super::Finding::line).collect::<Vec<_>>();
            assert_eq!(
                lines(&from_file.findings),
                lines(&super::lint(&loaded.events, &options)),
                "{}",
                path.display()
            );
            assert_eq!(from_file.events, loaded.events.len(), "{}", path.display());
            joined.extend(std::fs::read(&path).unwrap());
            if joined.last() != Some(&b'\n') {
                joined.push(b'\n');
            }
            rules.extend(from_file.findings.iter().map(|f| f.rule));
            events += from_file.events;
            sessions += from_file.sessions;
        }
        let dir = tempfile::tempdir().unwrap();
        let all = dir.path().join("all.jsonl");
        std::fs::write(&all, joined).unwrap();
        let linted = super::lint_capture(&all, &options).unwrap();
        assert!(
            linted.events > 3 * 64,
            "more events than a few batches: {}",
            linted.events
        );
        assert_eq!(linted.sessions, sessions);
        // One more event per later session: the note that marks it.
        assert_eq!(linted.events, events + sessions - 1);
        assert_eq!(linted.findings.iter().map(|f| f.rule).collect::<Vec<_>>(), rules);
    }

    #[test]
    fn captures_give_the_recorded_findings() {
        let path = captures().join("findings.golden");
        let now = render();
        if std::env::var_os("MCPSCOPE_BLESS").is_some() {
            std::fs::write(&path, &now).unwrap();
            return;
        }
        let recorded = std::fs::read_to_string(&path).unwrap();
        if now != recorded {
            let first = now.lines().zip(recorded.lines()).position(|(a, b)| a != b).unwrap_or(0);
            panic!(
                "findings differ from {} at line {}:\nnow:      {:?}\nrecorded: {:?}",
                path.display(),
                first + 1,
                now.lines().nth(first),
                recorded.lines().nth(first)
            );
        }
    }
}
