//! What a session reports: frames, stderr lines and lifecycle facts.

use crate::protocol::auth::Step;
use crate::protocol::auth::jwt::DecodedJwt;
use crate::transport::process::{ExitInfo, SpawnError};
use crate::wire::correlation::TimedOut;
use crate::wire::frame::{Direction, Frame};
use crate::wire::framing::LineEnding;
use crate::wire::message::RequestId;
use std::path::PathBuf;
use std::time::Duration;

/// One line the server wrote to stderr.
#[derive(Clone, Debug, PartialEq)]
pub struct StderrLine {
    pub seq: u64,
    pub at: Duration,
    pub raw: Vec<u8>,
    pub ending: LineEnding,
}

impl StderrLine {
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.raw)
    }
}

/// What happened at the HTTP level: one exchange (`POST`, `GET`, `DELETE`)
/// or a fact about an SSE stream (`SSE`: ended, reconnecting, endpoint).
///
/// Header values given by the user (e.g. `Authorization`) are masked before
/// they get here, so timelines, captures and logs never hold secrets.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct HttpInfo {
    pub at: Duration,
    /// `POST`, `GET`, `DELETE`, or `SSE` for a fact about a stream.
    pub method: String,
    pub url: String,
    /// The response status; `None` when no response came (connection refused…).
    pub status: Option<u16>,
    /// Request headers sent (masked where they are the user's).
    pub sent: Vec<(String, String)>,
    /// Response headers that matter (content type, session id, protocol version…).
    pub received: Vec<(String, String)>,
    /// The JSON-RPC request this exchange carried, if it carried one.
    pub request_id: Option<RequestId>,
    /// What this means, for a person.
    pub text: String,
    /// Set when the exchange failed; a request it carried will get no response.
    pub error: Option<String>,
}

impl HttpInfo {
    /// A response header by name (case-insensitive).
    pub fn received_header(&self, name: &str) -> Option<&str> {
        header_value(&self.received, name)
    }

    /// A request header by name (case-insensitive).
    pub fn sent_header(&self, name: &str) -> Option<&str> {
        header_value(&self.sent, name)
    }

    pub fn summary(&self) -> String {
        let mut s = format!("HTTP {} {}", self.method, self.url);
        match self.status {
            Some(code) => s.push_str(&format!(" → {code}")),
            None if self.method != "SSE" => s.push_str(" → no response"),
            None => {}
        }
        if let Some(ct) = self.received_header("content-type") {
            s.push_str(&format!(" ({ct})"));
        }
        if !self.text.is_empty() {
            s.push_str(": ");
            s.push_str(&self.text);
        }
        if let Some(e) = &self.error {
            s.push_str(" — ");
            s.push_str(e);
        }
        s
    }
}

fn header_value<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// What an intercepting proxy did. The frames a peer wrote are recorded as
/// they arrived (ordinary frame records); a touch says what became of one
/// of them, or what the proxy sent that no peer wrote, with the bytes it
/// sent, so a capture holds both sides of every change.
#[derive(Clone, Debug, PartialEq)]
pub struct Touch {
    pub at: Duration,
    pub kind: TouchKind,
    /// Which way the frame was going (`Out`: toward the server). For an
    /// answer sent instead, the way the request was going.
    pub direction: Direction,
    /// The recorded frame this is about (none for an injected frame).
    pub of_seq: Option<u64>,
    /// The breakpoint or fault rule that caused it, as written.
    pub rule: Option<String>,
    /// What was sent instead of the frame, or besides it, exactly as sent
    /// (line ending included).
    pub sent: Option<Vec<u8>>,
    /// What happened, for a person.
    pub text: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TouchKind {
    /// Stopped at a breakpoint, waiting for the user.
    Held,
    /// Sent on unchanged after being held or delayed.
    Forwarded,
    /// Sent on changed (by the user or a `replace`/`corrupt` rule).
    Edited,
    /// Never sent on.
    Dropped,
    /// Sent by the user, no peer wrote it.
    Injected,
    /// A request answered by the proxy; the other side never saw it.
    Answered,
    /// A fault rule acted on the frame (delay, duplicate, reorder, stall,
    /// disconnect, kill-server, an HTTP status…); what it did is in `text`.
    Fault,
}

impl TouchKind {
    pub const ALL: [TouchKind; 7] = [
        TouchKind::Held,
        TouchKind::Forwarded,
        TouchKind::Edited,
        TouchKind::Dropped,
        TouchKind::Injected,
        TouchKind::Answered,
        TouchKind::Fault,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TouchKind::Held => "held",
            TouchKind::Forwarded => "forwarded",
            TouchKind::Edited => "edited",
            TouchKind::Dropped => "dropped",
            TouchKind::Injected => "injected",
            TouchKind::Answered => "answered",
            TouchKind::Fault => "fault",
        }
    }

    pub fn parse(s: &str) -> Option<TouchKind> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

impl Touch {
    pub fn new(kind: TouchKind, direction: Direction, of_seq: Option<u64>, text: impl Into<String>) -> Self {
        Touch {
            at: Duration::ZERO,
            kind,
            direction,
            of_seq,
            rule: None,
            sent: None,
            text: text.into(),
        }
    }

    pub fn with_rule(mut self, rule: Option<&str>) -> Self {
        self.rule = rule.map(str::to_owned);
        self
    }

    pub fn with_sent(mut self, sent: Vec<u8>) -> Self {
        self.sent = Some(sent);
        self
    }

    /// Where the sent bytes go: toward the server (`Out`) or the client.
    pub fn sent_toward(&self) -> Direction {
        match self.kind {
            TouchKind::Answered => self.direction.opposite(),
            _ => self.direction,
        }
    }

    /// A short line for the timeline: what happened, and what was sent.
    pub fn label(&self) -> String {
        let mut s = format!("proxy {}", self.kind.as_str());
        if !self.text.is_empty() {
            s.push_str(": ");
            s.push_str(&self.text);
        }
        if let Some(sent) = &self.sent {
            s.push_str(" sent ");
            s.push_str(&crate::text::shorten_bytes(
                sent.strip_suffix(b"\n").unwrap_or(sent),
                80,
            ));
        }
        s
    }

    /// One line for a person.
    pub fn summary(&self) -> String {
        let mut s = format!("proxy {}", self.kind.as_str());
        if let Some(seq) = self.of_seq {
            s.push_str(&format!(" #{seq}"));
        }
        s.push_str(&format!(
            " ({})",
            if self.direction == Direction::Out { "c2s" } else { "s2c" }
        ));
        if !self.text.is_empty() {
            s.push_str(": ");
            s.push_str(&self.text);
        }
        if let Some(rule) = &self.rule {
            s.push_str(&format!(" [{rule}]"));
        }
        s
    }
}

/// One message between an MCP App's View (the `ui://` page in its sandbox)
/// and mcpscope as its host, drawn on the View's own lifeline ("App NAME"),
/// exactly as it crossed the bridge. A note the host made about it (a
/// refusal, a legacy name, a message before `initialized`) rides along.
#[derive(Clone, Debug, PartialEq)]
pub struct AppMessage {
    pub at: Duration,
    /// The View's name on the timeline (its tool's name).
    pub app: String,
    /// Which way it went.
    pub toward: AppToward,
    /// The message as it crossed the bridge (JSON text, or what the page
    /// sent when it was not JSON).
    pub bytes: Vec<u8>,
    /// What the host made of it, when it is worth saying.
    pub note: Option<String>,
    /// Its `method`, when it has one (read once, from `bytes`).
    pub method: Option<String>,
}

/// The way an [`AppMessage`] went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AppToward {
    /// From the View to the host.
    Host,
    /// From the host to the View.
    View,
    /// Between the host page and the sandbox proxy (`ui/notifications/sandbox-*`),
    /// which the View never sees.
    Sandbox,
    /// Sandbox proxy to host (`sandbox-proxy-ready`).
    FromSandbox,
}

impl AppToward {
    pub fn as_str(self) -> &'static str {
        match self {
            AppToward::Host => "host",
            AppToward::View => "view",
            AppToward::Sandbox => "sandbox",
            AppToward::FromSandbox => "from-sandbox",
        }
    }

    pub fn parse(s: &str) -> Option<AppToward> {
        [
            AppToward::Host,
            AppToward::View,
            AppToward::Sandbox,
            AppToward::FromSandbox,
        ]
        .into_iter()
        .find(|t| t.as_str() == s)
    }

    /// Sent by the View (or its sandbox) rather than by the host.
    pub fn from_view_side(self) -> bool {
        matches!(self, AppToward::Host | AppToward::FromSandbox)
    }
}

impl AppMessage {
    pub fn new(app: impl Into<String>, toward: AppToward, bytes: impl Into<Vec<u8>>) -> Self {
        let bytes = bytes.into();
        AppMessage {
            at: Duration::ZERO,
            app: app.into(),
            toward,
            method: method_of(&bytes),
            bytes,
            note: None,
        }
    }

    pub fn with_note(mut self, note: Option<String>) -> Self {
        self.note = note;
        self
    }

    /// The message parsed, when it is JSON.
    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.bytes).ok()
    }

    /// One line for a person.
    pub fn summary(&self) -> String {
        let arrow = if self.toward.from_view_side() { "->" } else { "<-" };
        let what = match self.json() {
            Some(v) => {
                let id = v.get("id").map(|i| format!(" #{i}")).unwrap_or_default();
                match v.get("method").and_then(serde_json::Value::as_str) {
                    Some(m) => format!("{m}{id}"),
                    None if v.get("error").is_some() => format!("error{id}"),
                    None => format!("result{id}"),
                }
            }
            None => format!("not JSON: {}", crate::text::shorten_bytes(&self.bytes, 60)),
        };
        let mut s = format!("app {} {arrow} host: {what}", self.app);
        if let Some(n) = &self.note {
            s.push_str(" (");
            s.push_str(n);
            s.push(')');
        }
        s
    }
}

/// The `method` of a JSON-RPC message's bytes.
pub fn method_of(bytes: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Head {
        method: Option<String>,
    }
    serde_json::from_slice::<Head>(bytes).ok().and_then(|h| h.method)
}

/// One step of an authorization (OAuth), drawn on its own lifeline: an
/// HTTP exchange with the authorization server (or the identity
/// provider, or the MCP server's metadata), the redirect back, or a fact
/// about the flow (the challenge that started it, the retry, a failure).
///
/// Everything here is safe to record: tokens, codes, secrets, verifiers
/// and assertions are masked (`****`) in the URL, the headers and the
/// bodies; JWTs among them are kept decoded (header and claims, the
/// signature not verified) so a person still sees what they say.
#[derive(Clone, Debug, PartialEq)]
pub struct AuthExchange {
    pub at: Duration,
    pub step: Step,
    /// `GET` or `POST`; empty for a step that is no HTTP exchange of mcpscope's
    /// (the challenge, a redirect read without being followed, the retry).
    pub method: String,
    /// Secret query parameters masked.
    pub url: String,
    pub status: Option<u16>,
    /// Request headers, masked.
    pub sent: Vec<(String, String)>,
    /// The request body as JSON (a form becomes an object), masked.
    pub request_body: Option<serde_json::Value>,
    /// Response headers that matter, masked.
    pub received: Vec<(String, String)>,
    /// The response body as JSON, masked; a body that is not JSON is kept as a string.
    pub response_body: Option<serde_json::Value>,
    /// JWTs among the request and response, decoded for display.
    pub jwts: Vec<DecodedJwt>,
    /// How long the exchange took.
    pub elapsed: Duration,
    /// What the step is for.
    pub text: String,
    /// What mcpscope concluded from the answer ("issuer matches", "resource … names this server").
    pub notes: Vec<String>,
    /// Set when the step failed; on a `failed` step, the reason the authorization gave up.
    pub error: Option<String>,
}

impl AuthExchange {
    pub fn new(step: Step, text: impl Into<String>) -> Self {
        Self {
            at: Duration::ZERO,
            step,
            method: String::new(),
            url: String::new(),
            status: None,
            sent: Vec::new(),
            request_body: None,
            received: Vec::new(),
            response_body: None,
            jwts: Vec::new(),
            elapsed: Duration::ZERO,
            text: text.into(),
            notes: Vec::new(),
            error: None,
        }
    }

    /// A response header by name (case-insensitive).
    pub fn received_header(&self, name: &str) -> Option<&str> {
        header_value(&self.received, name)
    }

    /// A short line for the timeline: the step, the path asked for and
    /// the answer (the detail view has the rest).
    pub fn label(&self) -> String {
        let mut s = self.step.label().to_owned();
        if !self.method.is_empty() {
            let after_scheme = self.url.split_once("://").map_or(self.url.as_str(), |(_, r)| r);
            let path = after_scheme.find('/').map_or("/", |i| &after_scheme[i..]);
            let path = path.split(['?', '#']).next().unwrap_or(path);
            s.push_str(&format!(" {} {}", self.method, crate::text::shorten(path, 60)));
        }
        if let Some(code) = self.status {
            s.push_str(&format!(" → {code}"));
        }
        if let Some(e) = &self.error {
            s.push_str(&format!(" ✖ {}", crate::text::shorten(e, 100)));
        } else if self.method.is_empty() && !self.text.is_empty() {
            s.push_str(&format!(": {}", crate::text::shorten(&self.text, 100)));
        }
        s
    }

    /// One line for a person.
    pub fn summary(&self) -> String {
        let mut s = format!("OAuth {}:", self.step.label());
        if !self.method.is_empty() {
            s.push_str(&format!(" {} {}", self.method, self.url));
        } else if !self.url.is_empty() {
            s.push_str(&format!(" {}", self.url));
        }
        if let Some(code) = self.status {
            s.push_str(&format!(" → {code}"));
        } else if !self.method.is_empty() && self.error.is_some() {
            s.push_str(" → no response");
        }
        if !self.text.is_empty() {
            s.push_str(&format!(" ({})", self.text));
        }
        if !self.notes.is_empty() {
            s.push_str(": ");
            s.push_str(&self.notes.join("; "));
        }
        if let Some(e) = &self.error {
            s.push_str(" — ");
            s.push_str(e);
        }
        s
    }
}

/// Everything a session tells its owner, in the order it happened.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    Spawned {
        at: Duration,
        pid: u32,
        program: PathBuf,
        command_line: String,
    },
    SpawnFailed {
        at: Duration,
        error: SpawnError,
    },
    /// A line sent to the server (Out) or received from it (In).
    Frame(Frame),
    Stderr(StderrLine),
    /// A request got no response within its timeout.
    TimedOut {
        at: Duration,
        timed_out: TimedOut,
    },
    /// The client cancelled one of its requests (`notifications/cancelled` was sent).
    Cancelled {
        at: Duration,
        id: RequestId,
    },
    /// Writing to the server's stdin failed; the line did not reach it.
    WriteFailed {
        at: Duration,
        error: String,
        line: Vec<u8>,
    },
    /// An HTTP exchange or a fact about an HTTP stream (HTTP transports only):
    /// status code and the headers that matter, on the same timeline as frames.
    Http(HttpInfo),
    /// A step of an authorization, reported by the authorizer through the
    /// session so that it is recorded in order with the frames.
    Auth(Box<AuthExchange>),
    /// What a proxy did to a frame on its way (held, edited, dropped, a
    /// fault applied) or sent of its own (injected, answered instead).
    Touch(Box<Touch>),
    /// A message between an MCP App's View and mcpscope as its host.
    App(Box<AppMessage>),
    /// A model turn (a model in the loop): the request to the provider and
    /// its streamed answer, timed.
    Model(Box<crate::model::record::ModelExchange>),
    /// Something the session did or noticed that is not a frame, e.g. a
    /// shutdown step ("sent SIGTERM to process group 123") or a capture
    /// write failure.
    Note {
        at: Duration,
        text: String,
    },
    Exited {
        at: Duration,
        status: ExitInfo,
    },
    /// The session is over: no more events follow.
    Closed {
        at: Duration,
    },
}

impl Event {
    pub fn at(&self) -> Duration {
        match self {
            Event::Frame(f) => f.at,
            Event::Stderr(s) => s.at,
            Event::Http(h) => h.at,
            Event::Auth(a) => a.at,
            Event::Touch(t) => t.at,
            Event::App(a) => a.at,
            Event::Model(m) => m.at,
            Event::Spawned { at, .. }
            | Event::SpawnFailed { at, .. }
            | Event::TimedOut { at, .. }
            | Event::Cancelled { at, .. }
            | Event::WriteFailed { at, .. }
            | Event::Note { at, .. }
            | Event::Exited { at, .. }
            | Event::Closed { at } => *at,
        }
    }

    /// One line for a person, for events that are not lines on the wire.
    pub fn summary(&self) -> String {
        match self {
            Event::Frame(f) => f.label(),
            Event::Stderr(s) => s.text().into_owned(),
            Event::Spawned { pid, program, .. } => format!("started {} (pid {pid})", program.display()),
            Event::SpawnFailed { error, .. } => format!("could not start: {error}"),
            Event::TimedOut { timed_out, .. } => format!(
                "{} #{} timed out after {} ms",
                timed_out.method,
                timed_out.id,
                timed_out.waited.as_millis()
            ),
            Event::Cancelled { id, .. } => format!("cancelled request #{id}"),
            Event::WriteFailed { error, .. } => format!("write to stdin failed: {error}"),
            Event::Note { text, .. } => text.clone(),
            Event::Http(h) => h.summary(),
            Event::Auth(a) => a.summary(),
            Event::Touch(t) => t.summary(),
            Event::App(a) => a.summary(),
            Event::Model(m) => m.summary(),
            Event::Exited { status, .. } => format!("server {status}"),
            Event::Closed { .. } => "session closed".into(),
        }
    }
}
