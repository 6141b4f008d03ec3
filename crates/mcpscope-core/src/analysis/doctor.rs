//! The troubleshooting checklist, run against a real server.
//!
//! Each step becomes a [`Check`] with a verdict and sentences a newcomer
//! understands: did it start, did stdout carry anything but JSON-RPC, did
//! `initialize` answer, which version, what does the server offer, does it
//! enforce the handshake, what does the protocol lint find, what did it say
//! on stderr.

use crate::client::EraFailure;
use crate::client::{Client, ClientError};
use crate::protocol::era::{Era, EraChoice, EraDecision};
use crate::protocol::handshake::{Handshake, HandshakeOptions, VersionVerdict};
use crate::protocol::methods;
use crate::timeline::model::Severity;
use crate::transport::event::{Event, HttpInfo};
use crate::transport::process::ServerSpec;
use crate::transport::session::SessionOptions;
use crate::transport::target::Target;
use crate::wire::classify::{Kind, Limits};
use crate::wire::frame::Direction;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Pass,
    Info,
    Warn,
    Fail,
}

impl Status {
    pub fn mark(self) -> &'static str {
        match self {
            Status::Pass => "ok  ",
            Status::Info => "info",
            Status::Warn => "warn",
            Status::Fail => "FAIL",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Check {
    pub status: Status,
    pub title: String,
    pub details: Vec<String>,
}

impl Check {
    fn new(status: Status, title: impl Into<String>) -> Self {
        Self {
            status,
            title: title.into(),
            details: Vec::new(),
        }
    }

    fn detail(mut self, d: impl Into<String>) -> Self {
        self.details.push(d.into());
        self
    }
}

#[derive(Clone, Debug, Default)]
pub struct Report {
    pub checks: Vec<Check>,
    /// Everything that happened in the main session, for further analysis.
    pub events: Vec<Event>,
}

impl Report {
    pub fn healthy(&self) -> bool {
        !self.checks.is_empty() && self.checks.iter().all(|c| c.status != Status::Fail)
    }

    pub fn check(&self, title_prefix: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.title.starts_with(title_prefix))
    }
}

#[derive(Clone, Debug)]
pub struct DoctorOptions {
    pub timeout: Duration,
    pub protocol_version: String,
    /// Which era to speak; auto (the default) probes with `server/discover`
    /// and falls back to `initialize`, and the report says which it found and why.
    pub era: EraChoice,
    /// Start the server a second time to see whether it answers before `initialize`.
    pub probe_enforcement: bool,
    pub stderr_tail: usize,
    /// Answers the server's OAuth challenges (HTTP); taken by the first session.
    pub authorizer: Option<SharedAuthorizer>,
    /// Framing limits (`--max-line`).
    pub limits: Limits,
}

/// An authorizer the doctor can take out of its (shared, cloneable) options.
pub type SharedAuthorizer = Arc<Mutex<Option<crate::transport::auth::Authorizer>>>;

impl Default for DoctorOptions {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(10),
            protocol_version: crate::protocol::handshake::DEFAULT_VERSION.to_owned(),
            era: EraChoice::Auto,
            probe_enforcement: true,
            stderr_tail: 10,
            authorizer: None,
            limits: Limits::default(),
        }
    }
}

fn collecting_client(target: &Target, timeout: Duration, limits: Limits) -> (Client, Arc<Mutex<Vec<Event>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    let options = SessionOptions {
        request_timeout: Some(timeout),
        limits,
        stdin_close_grace: Duration::from_millis(500),
        term_grace: Duration::from_secs(1),
        ..SessionOptions::new(crate::record::capture::open_log)
    };
    let client = Client::connect(
        target.clone(),
        options,
        Box::new(move |ev: Event| sink.lock().expect("event sink").push(ev)),
    );
    (client, events)
}

fn spawn_hint(message: &str, program: &str) -> Option<String> {
    if message.contains("not found in PATH") {
        Some(format!(
            "Install it, or give its full path. Apps started from a desktop often have a shorter PATH \
             than your terminal: run `which {program}` in a terminal to find the full path."
        ))
    } else if message.contains("ermission denied") || message.contains("not executable") {
        Some("The file is not executable: `chmod +x` it, or run it through its interpreter (node, python3…).".into())
    } else {
        None
    }
}

/// Runs the checklist against a server started over stdio.
pub fn diagnose(spec: &ServerSpec, options: &DoctorOptions) -> Report {
    diagnose_target(&Target::Stdio(spec.clone()), options)
}

/// Runs the checklist against a server over any transport.
pub fn diagnose_target(target: &Target, options: &DoctorOptions) -> Report {
    let mut report = Report::default();
    let (mut client, events) = collecting_client(target, options.timeout, options.limits);
    // The token lands in the target's slot, which later sessions of the
    // same target (the enforcement probe) share.
    if let Some(a) = options
        .authorizer
        .as_ref()
        .and_then(|shared| shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take())
    {
        client = client.with_authorizer(a);
    }
    let mut checks = Vec::new();
    let http = match target {
        Target::Http(h) => Some(h),
        Target::Stdio(_) => None,
    };

    // 1. Start (stdio) or where the server is (HTTP: reached with the first request).
    if let Some(h) = http {
        checks.push(
            Check::new(Status::Info, format!("Server URL: {} ({})", h.url, h.kind.label())).detail(
                if h.headers.is_empty() {
                    "no extra headers".to_owned()
                } else {
                    let shown: Vec<String> = h.masked_headers().iter().map(|(k, v)| format!("{k}: {v}")).collect();
                    format!("extra headers: {}", shown.join(", "))
                },
            ),
        );
    } else {
        match client.wait_spawned(Duration::from_secs(10)) {
            Ok(pid) => {
                let program = events
                    .lock()
                    .expect("events")
                    .iter()
                    .find_map(|e| match e {
                        Event::Spawned { program, .. } => Some(program.display().to_string()),
                        _ => None,
                    })
                    .unwrap_or_default();
                checks.push(Check::new(
                    Status::Pass,
                    format!("Process started: {program} (pid {pid})"),
                ));
            }
            Err(ClientError::SpawnFailed(e)) => {
                let mut c = Check::new(Status::Fail, "Process did not start").detail(e.to_string());
                if let Some(h) = spawn_hint(&e.message, &e.program) {
                    c = c.detail(h);
                }
                checks.push(c);
                client.close();
                report.checks = checks;
                report.events = events.lock().expect("events").clone();
                return report;
            }
            Err(e) => {
                checks.push(Check::new(Status::Fail, "Process did not start").detail(e.to_string()));
                client.close();
                report.checks = checks;
                return report;
            }
        }
    }

    // 2. initialize.
    let hs_options = HandshakeOptions {
        protocol_version: options.protocol_version.clone(),
        ..HandshakeOptions::default()
    };
    let established = client.establish(options.era, &hs_options, options.timeout);
    if let Some(a) = client.authorizer() {
        checks.push(match &established {
            Err(ClientError::Authorization { error, .. }) => {
                Check::new(Status::Fail, "Authorization (OAuth) failed").detail(error.to_string())
            }
            _ if a.memory().token.is_some() => Check::new(Status::Pass, format!("Authorization: {}", a.summary())),
            _ => Check::new(Status::Info, "Authorization: the server did not ask for any"),
        });
    }
    let server_caps = establish_checks(&established, &mut checks);

    // 3. tools/list, following pagination.
    let era = match &established {
        Ok(Ok(d)) => Some(d.era),
        _ => None,
    };
    if era.is_some() {
        let advertised = server_caps.as_ref().is_some_and(|c| c.get("tools").is_some());
        checks.push(list_tools(&mut client, options.timeout, advertised));
    }

    // Let late stderr and stdout lines arrive, then stop the server.
    client.pump_for(Duration::from_millis(200));
    let exit_during_checks = client.exit_status();
    client.close();
    let evs = events.lock().expect("events").clone();

    // 4. stdout (or HTTP body) hygiene, and for HTTP what the transport showed.
    checks.insert(1, stdout_check(&evs, http.is_some()));
    if http.is_some() {
        checks.push(http_check(&evs));
    }
    if let Some(status) = exit_during_checks {
        checks.push(Check::new(
            Status::Fail,
            format!("The server {status} during the checks"),
        ));
    }

    // 5. Handshake enforcement, in a fresh process.
    let answered = matches!(&established, Ok(Ok(_)) | Ok(Err(EraFailure::Handshake(_))));
    if options.probe_enforcement && answered {
        let t = options.timeout.min(Duration::from_secs(5));
        checks.push(match era {
            Some(Era::Modern) => probe_envelope(target, t),
            _ => probe_enforcement(target, t),
        });
    }

    // 6. The protocol lint over everything the main session saw.
    checks.push(lint_check(&evs));

    // 7. stderr tail (a server reached over HTTP has none we can see).
    if http.is_none() {
        checks.push(stderr_check(&evs, options.stderr_tail));
    }

    report.checks = checks;
    report.events = evs;
    report
}

/// What the handshake (or discovery) showed, as checks; the server's
/// capabilities when it answered. No I/O: the outcome is the client's.
fn establish_checks(
    established: &Result<Result<EraDecision, EraFailure>, ClientError>,
    checks: &mut Vec<Check>,
) -> Option<Value> {
    let mut server_caps: Option<Value> = None;
    match &established {
        Ok(Ok(d)) => {
            checks.push(era_check(d));
            match (&d.handshake, &d.discovery) {
                (Some(h), _) => server_caps = handshake_checks(h, checks),
                (None, Some(disc)) => {
                    let mut c = Check::new(
                        if disc.missing_fields.is_empty() {
                            Status::Pass
                        } else {
                            Status::Fail
                        },
                        format!("Protocol version: {} (sent in every request's _meta)", d.version),
                    )
                    .detail(format!(
                        "server/discover lists supportedVersions: {}",
                        disc.supported_versions.join(", ")
                    ));
                    if !disc.missing_fields.is_empty() {
                        c = c.detail(format!(
                            "the server/discover result lacks required field(s): {}",
                            disc.missing_fields.join(", ")
                        ));
                    }
                    checks.push(c);
                    let mut info = Check::new(Status::Info, format!("Server: {}", disc.server_name()));
                    if let Some(caps) = &disc.capabilities {
                        info = info.detail(format!("capabilities: {}", compact(caps)));
                    }
                    match &disc.instructions {
                        Some(i) => info = info.detail(format!("instructions: {}", crate::text::shorten(i, 300))),
                        None => info = info.detail("instructions: (none)"),
                    }
                    checks.push(info);
                    server_caps = disc.capabilities.clone();
                }
                (None, None) => {}
            }
        }
        Ok(Err(EraFailure::Handshake(h))) => {
            handshake_checks(h, checks);
        }
        Ok(Err(EraFailure::NotModern(why))) => {
            checks.push(
                Check::new(Status::Fail, "The server does not speak the modern era (2026-07-28)")
                    .detail(why.clone())
                    .detail("Try --era legacy (initialize handshake) or --era auto."),
            );
        }
        Ok(Err(EraFailure::InitializeRefused(e))) => {
            let mut c = Check::new(Status::Fail, "initialize was refused").detail(e.to_string());
            let supported = crate::protocol::handshake::supported_from_error(e);
            if !supported.is_empty() {
                c = c.detail(format!("the server supports: {}", supported.join(", ")));
                if supported.iter().any(|v| Era::of_version(v) == Some(Era::Modern)) {
                    c = c.detail("It names a modern version: try --era modern or --era auto.");
                }
            }
            checks.push(c);
        }
        // The client turns a handshake without an answer into its error.
        Ok(Err(e @ EraFailure::NoAnswer { .. })) => {
            checks.push(Check::new(Status::Fail, "initialize got no answer").detail(e.to_string()));
        }
        Err(ClientError::Http { error, .. }) => {
            let mut c = Check::new(Status::Fail, "initialize failed over HTTP").detail(error.clone());
            if error.contains("connection refused") {
                c = c.detail("Start the server first, and check the host and port of the URL.");
            }
            checks.push(c);
        }
        Err(e) => {
            let mut c = Check::new(Status::Fail, "initialize got no answer").detail(e.to_string());
            if matches!(e, ClientError::TimedOut { .. }) {
                c = c.detail(
                    "A server that does not answer initialize may be waiting for something else (an \
                     API key, a network resource), may have crashed silently, or may be reading a \
                     different transport (HTTP instead of stdio).",
                );
            }
            checks.push(c);
        }
    }
    server_caps
}

/// Which era the session speaks, and why.
fn era_check(d: &EraDecision) -> Check {
    let mut c = Check::new(
        Status::Info,
        format!("Era: {} {} (--era {})", d.era, d.version, d.choice),
    )
    .detail(d.reason.clone())
    .detail(d.era.label());
    for n in d.notes.iter().filter(|n| !n.starts_with("era:")) {
        c = c.detail(n.clone());
    }
    c
}

/// The checks about an `initialize` answer; returns the server's capabilities.
fn handshake_checks(h: &Handshake, checks: &mut Vec<Check>) -> Option<Value> {
    checks.push(Check::new(
        Status::Pass,
        format!("initialize answered in {} ms", h.latency.as_millis()),
    ));
    let status = match h.verdict {
        VersionVerdict::Accepted | VersionVerdict::CounterOffer => Status::Pass,
        _ => Status::Fail,
    };
    let mut c = Check::new(
        status,
        format!(
            "Protocol version: {}",
            h.answered.clone().unwrap_or_else(|| "(none)".into())
        ),
    )
    .detail(h.verdict_text());
    if !h.missing_fields.is_empty() {
        c = c.detail(format!(
            "the initialize result lacks required field(s): {}",
            h.missing_fields.join(", ")
        ));
        c.status = Status::Fail;
    }
    checks.push(c);
    let mut info = Check::new(Status::Info, format!("Server: {}", h.server_name()));
    if let Some(caps) = &h.capabilities {
        info = info.detail(format!("capabilities: {}", compact(caps)));
    }
    match &h.instructions {
        Some(i) => info = info.detail(format!("instructions: {}", crate::text::shorten(i, 300))),
        None => info = info.detail("instructions: (none)"),
    }
    checks.push(info);
    if h.usable() { h.capabilities.clone() } else { None }
}

/// Modern era: does the server refuse a request without the `_meta` envelope?
fn probe_envelope(target: &Target, timeout: Duration) -> Check {
    let (mut client, _events) = collecting_client(target, timeout, Limits::default());
    if client.wait_started(Duration::from_secs(10)).is_err() {
        client.close();
        return Check::new(
            Status::Info,
            "Envelope enforcement: could not start a second process to check",
        );
    }
    let result = client.request_as_is(methods::TOOLS_LIST, None, timeout);
    client.close();
    match result {
        Ok(resp) => match resp.outcome {
            Ok(_) => Check::new(
                Status::Warn,
                "Envelope not enforced: the server answered tools/list without _meta",
            )
            .detail(
                "In 2026-07-28 a request without io.modelcontextprotocol/protocolVersion and clientCapabilities \
                 must be refused with -32602.",
            ),
            Err(e) => Check::new(
                if e.code == crate::wire::message::error_code::INVALID_PARAMS {
                    Status::Pass
                } else {
                    Status::Warn
                },
                "Envelope enforced: tools/list without _meta was refused",
            )
            .detail(e.to_string()),
        },
        Err(e) => Check::new(
            Status::Info,
            "Envelope enforcement: no answer to tools/list without _meta",
        )
        .detail(e.to_string()),
    }
}

fn compact(v: &Value) -> String {
    crate::text::shorten(&v.to_string(), 400)
}

fn list_tools(client: &mut Client, timeout: Duration, advertised: bool) -> Check {
    let tools = match client.list_all(methods::TOOLS_LIST, "tools", timeout) {
        Ok(Ok(tools)) => tools,
        Ok(Err(e)) => {
            let status = if advertised { Status::Fail } else { Status::Info };
            return Check::new(status, "tools/list returned an error")
                .detail(e.to_string())
                .detail(if advertised {
                    "The server advertises the tools capability, so tools/list should work."
                } else {
                    "The server does not advertise the tools capability."
                });
        }
        Err(e @ ClientError::Unreadable { .. }) => {
            return Check::new(Status::Fail, "tools/list answered with a result mcpscope cannot read")
                .detail(e.to_string());
        }
        Err(e) => return Check::new(Status::Fail, "tools/list got no answer").detail(e.to_string()),
    };
    let names: Vec<String> = tools
        .iter()
        .map(|t| t.get("name").and_then(Value::as_str).unwrap_or("(no name)").to_owned())
        .collect();
    let status = if advertised || !names.is_empty() {
        Status::Pass
    } else {
        Status::Info
    };
    let mut c = Check::new(status, format!("tools/list: {} tool(s)", names.len()));
    if !names.is_empty() {
        c = c.detail(names.join(", "));
    }
    if !advertised && !names.is_empty() {
        c = c.detail("The server lists tools without advertising the tools capability.");
        c.status = Status::Warn;
    }
    c
}

/// What the HTTP exchanges showed: session, protocol version header, GET
/// stream, DELETE, and any failed exchange.
fn http_check(events: &[Event]) -> Check {
    let http: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::Http(h) => Some(h),
            _ => None,
        })
        .collect();
    // A 401/403 that mcpscope answered by authorizing is how OAuth starts, not a failure.
    let authorized = events.iter().any(|e| matches!(e, Event::Auth(_)));
    let challenge = |h: &&&HttpInfo| authorized && matches!(h.status, Some(401 | 403));
    let challenges = http.iter().filter(|h| h.error.is_some() && challenge(h)).count();
    let failures: Vec<_> = http.iter().filter(|h| h.error.is_some() && !challenge(h)).collect();
    let mut c = Check::new(
        if failures.is_empty() {
            Status::Pass
        } else {
            Status::Warn
        },
        format!(
            "HTTP: {} exchange(s), {} failed",
            http.iter().filter(|h| h.method != "SSE").count(),
            failures.len()
        ),
    );
    if challenges > 0 {
        c = c.detail(format!(
            "{challenges} authorization challenge(s) answered by authorizing (OAuth)"
        ));
    }
    let session = http.iter().find_map(|h| h.received_header("mcp-session-id"));
    c = c.detail(match session {
        Some(s) => format!("session id: {s}"),
        None => "no Mcp-Session-Id: the server keeps no session".into(),
    });
    if let Some(v) = http.iter().find_map(|h| h.sent_header("MCP-Protocol-Version")) {
        c = c.detail(format!("sent MCP-Protocol-Version: {v} after the handshake"));
    }
    for h in http
        .iter()
        .filter(|h| h.method == "GET" || h.method == "DELETE" || h.text.starts_with("endpoint"))
    {
        c = c.detail(h.summary());
    }
    for f in failures.iter().take(5) {
        c = c.detail(f.summary());
    }
    c
}

fn stdout_check(events: &[Event], over_http: bool) -> Check {
    let (channel, unit) = if over_http {
        ("HTTP responses", "message(s)")
    } else {
        ("stdout", "line(s)")
    };
    let received: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::Frame(f) if f.direction == Direction::In => Some(f),
            _ => None,
        })
        .collect();
    let bad: Vec<_> = received
        .iter()
        .filter(|f| matches!(f.kind(), Kind::NotJson | Kind::NotJsonRpc) || !f.anomalies().is_empty())
        .collect();
    if bad.is_empty() {
        return Check::new(
            Status::Pass,
            format!("{channel} carried only JSON-RPC ({} {unit})", received.len()),
        );
    }
    let fatal = bad
        .iter()
        .any(|f| matches!(f.kind(), Kind::NotJson | Kind::NotJsonRpc | Kind::Batch));
    let mut c = Check::new(
        if fatal { Status::Fail } else { Status::Warn },
        format!("{channel} carried {} problem {unit}", bad.len()),
    );
    for f in bad.iter().take(5) {
        let codes: Vec<_> = f.anomalies().codes().collect();
        c = c.detail(format!(
            "line {:?} [{}]",
            crate::text::shorten(&f.text(), 200),
            codes.join(", ")
        ));
    }
    if !over_http && bad.iter().any(|f| f.kind() == Kind::NotJson) {
        c = c.detail(
            "Over stdio, stdout is reserved for JSON-RPC messages; a client fails or disconnects on \
             anything else. Send logs to stderr (console.error in Node, print(..., file=sys.stderr) \
             or logging in Python).",
        );
    }
    c
}

fn lint_check(events: &[Event]) -> Check {
    // Info findings are heuristics; the checklist stays about real problems.
    let findings: Vec<_> = crate::analysis::lint::lint(events, &crate::analysis::lint::LintOptions::default())
        .into_iter()
        .filter(|f| f.severity >= Severity::Warning)
        .collect();
    let errors = findings.iter().filter(|f| f.severity == Severity::Error).count();
    let warnings = findings.len() - errors;
    let (status, title) = match (errors, warnings) {
        (0, 0) => (Status::Pass, "Protocol lint: no problems found".to_owned()),
        (0, w) => (Status::Warn, format!("Protocol lint: {w} warning(s)")),
        (e, w) => (Status::Fail, format!("Protocol lint: {e} error(s), {w} warning(s)")),
    };
    let mut c = Check::new(status, title);
    for f in &findings {
        c = c.detail(f.line());
    }
    c
}

fn stderr_check(events: &[Event], tail: usize) -> Check {
    let lines: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::Stderr(s) => Some(s.text().into_owned()),
            _ => None,
        })
        .collect();
    let mut c = Check::new(Status::Info, format!("stderr: {} line(s)", lines.len()));
    if lines.len() > tail {
        c = c.detail(format!("… last {tail}:"));
    }
    for l in lines.iter().skip(lines.len().saturating_sub(tail)) {
        c = c.detail(format!("| {}", crate::text::shorten(l, 300)));
    }
    c
}

fn probe_enforcement(target: &Target, timeout: Duration) -> Check {
    let (mut client, _events) = collecting_client(target, timeout, Limits::default());
    if client.wait_started(Duration::from_secs(10)).is_err() {
        client.close();
        return Check::new(
            Status::Info,
            "Handshake enforcement: could not start a second process to check",
        );
    }
    let result = client.request(methods::TOOLS_LIST, None, timeout);
    client.close();
    match result {
        Ok(resp) => match resp.outcome {
            Ok(_) => Check::new(
                Status::Info,
                "Handshake not enforced: the server answered tools/list before initialize",
            ),
            Err(e) => Check::new(
                Status::Info,
                "Handshake enforced: tools/list before initialize was refused",
            )
            .detail(e.to_string()),
        },
        Err(ClientError::Http { error, .. }) => Check::new(
            Status::Info,
            "Handshake enforced: tools/list before initialize was refused over HTTP",
        )
        .detail(error),
        Err(e) => Check::new(
            Status::Info,
            "Handshake enforcement: no answer to tools/list before initialize",
        )
        .detail(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::message::ErrorObject;

    fn checks_of(established: Result<Result<EraDecision, EraFailure>, ClientError>) -> (Vec<Check>, Option<Value>) {
        let mut checks = Vec::new();
        let caps = establish_checks(&established, &mut checks);
        (checks, caps)
    }

    #[test]
    fn a_refused_initialize_names_the_versions_the_server_supports() {
        let refused = ErrorObject {
            code: -32602,
            message: "Unsupported protocol version".into(),
            data: Some(serde_json::json!({"supported": ["2026-07-28"], "requested": "2025-11-25"})),
        };
        let (checks, caps) = checks_of(Ok(Err(EraFailure::InitializeRefused(refused))));
        assert_eq!(caps, None);
        assert_eq!(
            (checks[0].status, checks[0].title.as_str()),
            (Status::Fail, "initialize was refused")
        );
        let details = checks[0].details.join("\n");
        assert!(
            details.contains("2026-07-28") && details.contains("--era modern"),
            "{details}"
        );
    }

    #[test]
    fn transport_failures_say_what_to_try() {
        let (checks, _) = checks_of(Err(ClientError::Http {
            method: "initialize".into(),
            error: "connection refused".into(),
        }));
        assert!(
            checks[0].details.iter().any(|d| d.contains("Start the server first")),
            "{:?}",
            checks[0]
        );
        let (checks, _) = checks_of(Err(ClientError::TimedOut {
            method: "initialize".into(),
            after: Duration::from_secs(5),
        }));
        assert_eq!(checks[0].title, "initialize got no answer");
        assert!(
            checks[0].details.iter().any(|d| d.contains("API key")),
            "{:?}",
            checks[0]
        );
        let (checks, _) = checks_of(Ok(Err(EraFailure::NotModern("-32601 to server/discover".into()))));
        assert!(
            checks[0].details.iter().any(|d| d.contains("--era legacy")),
            "{:?}",
            checks[0]
        );
    }
}
