//! A blocking client on top of a [`Session`], for the CLI, the doctor and tests.
//!
//! It waits for one response at a time while still seeing every other event
//! (passed to an observer, e.g. `--trace`) and answers the server's own
//! requests so that a server waiting on them does not stall the session.

use crate::protocol::era::{self, Envelope, Era, EraChoice, EraDecision, ProbeVerdict};
use crate::protocol::handshake::{self, Handshake, HandshakeOptions};
use crate::protocol::mrtr::{self, Conversations, InputPolicy, InputRequired};
use crate::protocol::tasks::{self, Flavor, Status, Task};
use crate::transport::event::Event;
use crate::transport::process::{ExitInfo, ServerSpec, SpawnError};
use crate::transport::session::{Session, SessionOptions};
use crate::transport::target::Target;
use crate::wire::classify::Kind;
use crate::wire::frame::{Direction, Frame};
use crate::wire::message::{ErrorObject, RequestId, error_code};
use crossbeam_channel::RecvTimeoutError;
use serde_json::{Value, json};
use std::fmt;
use std::time::{Duration, Instant};

/// Why a request got no response.
#[derive(Clone, Debug, PartialEq)]
pub enum ClientError {
    SpawnFailed(SpawnError),
    TimedOut {
        method: String,
        after: Duration,
    },
    ServerExited {
        method: String,
        status: ExitInfo,
    },
    Closed {
        method: String,
    },
    WriteFailed {
        method: String,
        error: String,
    },
    /// The HTTP exchange carrying the request failed (connection refused, an
    /// error status, a body that is not the response, an expired session).
    Http {
        method: String,
        error: String,
        /// Set when the answer asks for authorization (401, or 403 insufficient_scope).
        challenge: Option<Box<crate::transport::auth::HttpChallenge>>,
    },
    /// The server asked for authorization and it could not be obtained.
    Authorization {
        method: String,
        error: crate::protocol::auth::AuthError,
    },
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::SpawnFailed(e) => write!(f, "could not start the server: {e}"),
            ClientError::TimedOut { method, after } => {
                write!(f, "{method} got no response within {} ms", after.as_millis())
            }
            ClientError::ServerExited { method, status } => {
                write!(f, "the server {status} before answering {method}")
            }
            ClientError::Closed { method } => write!(f, "the session ended before {method} was answered"),
            ClientError::WriteFailed { method, error } => write!(f, "could not send {method}: {error}"),
            ClientError::Http { method, error, .. } => write!(f, "{method} failed over HTTP: {error}"),
            ClientError::Authorization { method, error } => write!(f, "{method}: authorization failed: {error}"),
        }
    }
}

impl std::error::Error for ClientError {}

/// A response: its frame and what it says.
#[derive(Clone, Debug)]
pub struct Response {
    pub frame: Frame,
    pub outcome: Result<Value, ErrorObject>,
}

impl Response {
    pub fn latency(&self) -> Duration {
        self.frame.link.as_ref().map_or(Duration::ZERO, |l| l.latency)
    }

    pub fn is_tool_error(&self) -> bool {
        self.frame.class.tool_error
    }
}

pub type Observer = Box<dyn FnMut(&Event) + Send>;

pub struct Client {
    session: Session,
    /// Over HTTP there is no process to wait for.
    remote: bool,
    observer: Observer,
    /// How the server's requests (legacy) and input requests (modern) are answered.
    policy: InputPolicy,
    /// Set once the session speaks the modern era: every request carries it.
    envelope: Option<Envelope>,
    era: Option<EraDecision>,
    conversations: Conversations,
    pid: Option<u32>,
    spawn_error: Option<SpawnError>,
    exited: Option<ExitInfo>,
    closed: bool,
    /// Answers OAuth challenges (HTTP targets only; see `transport::auth`).
    authorizer: Option<crate::transport::auth::Authorizer>,
}

impl Client {
    pub fn start(spec: ServerSpec, options: SessionOptions, observer: Observer) -> Client {
        Self::connect(Target::Stdio(spec), options, observer)
    }

    /// A client for a server over any transport (stdio, Streamable HTTP, HTTP+SSE).
    pub fn connect(target: impl Into<Target>, options: SessionOptions, observer: Observer) -> Client {
        let target = target.into();
        let remote = matches!(target, Target::Http(_));
        Client {
            session: Session::connect(target, options),
            remote,
            observer,
            policy: InputPolicy::default(),
            envelope: None,
            era: None,
            conversations: Conversations::default(),
            pid: None,
            spawn_error: None,
            exited: None,
            closed: false,
            authorizer: None,
        }
    }

    /// Authorize with this authorizer whenever the server asks (its slot
    /// must be the target's `bearer`).
    pub fn with_authorizer(mut self, authorizer: crate::transport::auth::Authorizer) -> Self {
        self.authorizer = Some(authorizer);
        self
    }

    pub fn authorizer(&self) -> Option<&crate::transport::auth::Authorizer> {
        self.authorizer.as_ref()
    }

    /// Answer `roots/list` with these roots (URIs like `file:///home/me/project`).
    pub fn with_roots(mut self, roots: Vec<Value>) -> Self {
        self.policy.roots = Some(roots);
        self
    }

    /// Answer roots, elicitation and sampling (server requests in the legacy
    /// era, input requests in the modern one) as this policy says.
    pub fn with_policy(mut self, policy: InputPolicy) -> Self {
        self.policy = policy;
        self
    }

    pub fn policy(&self) -> &InputPolicy {
        &self.policy
    }

    /// The era the session settled on ([`Client::establish`]), if it did.
    pub fn era(&self) -> Option<&EraDecision> {
        self.era.as_ref()
    }

    /// The modern envelope every request carries, once the era is modern.
    pub fn envelope(&self) -> Option<&Envelope> {
        self.envelope.as_ref()
    }

    /// Speak the modern era from now on: every request carries this envelope.
    pub fn set_envelope(&mut self, envelope: Option<Envelope>) {
        self.envelope = envelope;
    }

    /// Request id -> first request of its multi round-trip chain.
    pub fn conversations(&self) -> &Conversations {
        &self.conversations
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    pub fn exit_status(&self) -> Option<ExitInfo> {
        self.exited
    }

    /// Waits until the server can be spoken to: started (stdio) or at once
    /// (HTTP, where a server that cannot be reached fails the first request).
    pub fn wait_started(&mut self, timeout: Duration) -> Result<(), ClientError> {
        if self.remote {
            return Ok(());
        }
        self.wait_spawned(timeout).map(|_| ())
    }

    /// Whether the server is reached over HTTP.
    pub fn is_remote(&self) -> bool {
        self.remote
    }

    /// Waits until the server has started (or failed to).
    pub fn wait_spawned(&mut self, timeout: Duration) -> Result<u32, ClientError> {
        let deadline = Instant::now() + timeout;
        while self.pid.is_none() && self.spawn_error.is_none() && !self.closed {
            if !self.pump_until(deadline) {
                break;
            }
        }
        match (&self.pid, &self.spawn_error) {
            (Some(pid), _) => Ok(*pid),
            (None, Some(e)) => Err(ClientError::SpawnFailed(e.clone())),
            _ => Err(ClientError::Closed { method: "start".into() }),
        }
    }

    /// Receives one event (or none before `deadline`); false once nothing more will come.
    fn pump_until(&mut self, deadline: Instant) -> bool {
        let wait = deadline.saturating_duration_since(Instant::now());
        match self.session.events().recv_timeout(wait) {
            Ok(ev) => {
                self.handle(&ev);
                (self.observer)(&ev);
                true
            }
            Err(RecvTimeoutError::Timeout) => false,
            Err(RecvTimeoutError::Disconnected) => {
                self.closed = true;
                false
            }
        }
    }

    /// Processes events for `d` (e.g. to collect trailing stderr).
    pub fn pump_for(&mut self, d: Duration) {
        let deadline = Instant::now() + d;
        while Instant::now() < deadline && !self.closed {
            self.pump_until(deadline);
        }
    }

    fn handle(&mut self, ev: &Event) {
        match ev {
            Event::Spawned { pid, .. } => self.pid = Some(*pid),
            Event::SpawnFailed { error, .. } => self.spawn_error = Some(error.clone()),
            Event::Exited { status, .. } => self.exited = Some(*status),
            Event::Closed { .. } => self.closed = true,
            Event::Frame(f) if f.direction == Direction::In && f.class.kind == Kind::Request => {
                self.answer_server_request(f);
            }
            _ => {}
        }
    }

    fn answer_server_request(&mut self, f: &Frame) {
        let (Some(id), Some(method)) = (f.class.id.clone(), f.class.method.as_deref()) else {
            return;
        };
        let params = f.json().and_then(|v| v.get("params").cloned()).unwrap_or(Value::Null);
        let declared = match method {
            "roots/list" => self.policy.roots.is_some(),
            "elicitation/create" => self.policy.elicit.is_some(),
            "sampling/createMessage" => self.policy.sample_reply.is_some(),
            _ => false,
        };
        let outcome = match method {
            "ping" => Ok(json!({})),
            m if declared => self
                .policy
                .answer(m, &params)
                .map_err(|why| ErrorObject::new(error_code::INTERNAL_ERROR, why)),
            "roots/list" => Err(ErrorObject::new(
                error_code::METHOD_NOT_FOUND,
                "mcpscope does not expose roots in this session (pass --root to answer roots/list)",
            )),
            "sampling/createMessage" => Err(ErrorObject::new(
                error_code::METHOD_NOT_FOUND,
                "mcpscope did not declare the sampling capability and cannot run a model",
            )),
            "elicitation/create" => Err(ErrorObject::new(
                error_code::METHOD_NOT_FOUND,
                "mcpscope did not declare the elicitation capability and cannot ask a person here",
            )),
            other => Err(ErrorObject::new(
                error_code::METHOD_NOT_FOUND,
                format!("Method not found: {other}"),
            )),
        };
        self.session.respond(id, outcome);
    }

    /// Sends a request and waits for its response. Once the session is
    /// modern the params carry the envelope, and a -32022 is answered by
    /// retrying (with a new id) with a version both sides speak.
    pub fn request(&mut self, method: &str, params: Option<Value>, timeout: Duration) -> Result<Response, ClientError> {
        let Some(env) = self.envelope.clone() else {
            return self.request_as_is(method, params, timeout);
        };
        let resp = self.request_as_is(method, Some(env.wrap(params.clone())), timeout)?;
        if let Err(e) = &resp.outcome
            && e.code == error_code::UNSUPPORTED_PROTOCOL_VERSION
        {
            let supported = era::supported_versions(e);
            if let Some(v) = era::pick_versions(&era::MODERN_VERSIONS, &supported)
                .into_iter()
                .find(|v| *v != env.protocol_version)
            {
                self.session
                    .note(era::retry_note(method, &env.protocol_version, &supported, &v));
                let env = Envelope {
                    protocol_version: v,
                    ..env
                };
                let retry = self.request_as_is(method, Some(env.wrap(params)), timeout);
                self.envelope = Some(env);
                return retry;
            }
        }
        Ok(resp)
    }

    /// Sends a request exactly as given (no envelope) and waits for its response.
    pub fn request_as_is(
        &mut self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
    ) -> Result<Response, ClientError> {
        // OAuth hook (transport::auth): a challenge is answered by the
        // authorizer, then the same request is sent again (with a new id).
        let mut attempt = 0;
        loop {
            if let Some(a) = self.authorizer.as_mut() {
                crate::transport::auth::before_request(a, &self.session);
            }
            let id = self.session.request_with(None, method, params.clone(), Some(timeout));
            match self.wait_response(method, &id, timeout) {
                Err(ClientError::Http {
                    challenge: Some(challenge),
                    ..
                }) if self.authorizer.is_some() => {
                    attempt += 1;
                    let a = self.authorizer.as_mut().expect("checked");
                    crate::transport::auth::answer_challenge(a, &self.session, &challenge, attempt).map_err(
                        |error| ClientError::Authorization {
                            method: method.into(),
                            error,
                        },
                    )?;
                }
                other => return other,
            }
        }
    }

    /// Sends a notification (no response is expected).
    pub fn notify(&mut self, method: &str, params: Option<Value>) {
        self.session.notify(method, params);
    }

    fn wait_response(&mut self, method: &str, id: &RequestId, timeout: Duration) -> Result<Response, ClientError> {
        // The session times the request out itself; this is only a backstop.
        let backstop = Instant::now() + timeout + Duration::from_secs(2);
        let mut exit_grace: Option<Instant> = None;
        // A challenge whose body was a JSON-RPC error (some servers send one with their 401).
        let mut challenged: Option<crate::transport::auth::HttpChallenge> = None;
        loop {
            let deadline = exit_grace.map_or(backstop, |g| g.min(backstop));
            let ev = match self
                .session
                .events()
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(ev) => ev,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(match self.exited {
                        Some(status) if exit_grace.is_some() => ClientError::ServerExited {
                            method: method.into(),
                            status,
                        },
                        _ => ClientError::TimedOut {
                            method: method.into(),
                            after: timeout,
                        },
                    });
                }
                Err(RecvTimeoutError::Disconnected) => {
                    self.closed = true;
                    return Err(ClientError::Closed { method: method.into() });
                }
            };
            self.handle(&ev);
            (self.observer)(&ev);
            match &ev {
                Event::Frame(f)
                    if f.direction == Direction::In
                        && f.class.kind.is_response()
                        && f.class.id.as_ref() == Some(id) =>
                {
                    let outcome = response_outcome(f);
                    if let (Some(challenge), Err(e)) = (challenged.take(), &outcome) {
                        return Err(ClientError::Http {
                            method: method.into(),
                            error: format!("the server answered HTTP {} with {e}", challenge.status),
                            challenge: Some(Box::new(challenge)),
                        });
                    }
                    return Ok(Response {
                        frame: f.clone(),
                        outcome,
                    });
                }
                Event::TimedOut { timed_out, .. } if &timed_out.id == id => {
                    return Err(ClientError::TimedOut {
                        method: method.into(),
                        after: timeout,
                    });
                }
                Event::WriteFailed { error, line, .. } if line_has_id(line, id) => {
                    return Err(ClientError::WriteFailed {
                        method: method.into(),
                        error: error.clone(),
                    });
                }
                Event::SpawnFailed { error, .. } => return Err(ClientError::SpawnFailed(error.clone())),
                Event::Http(h) if h.request_id.as_ref() == Some(id) && h.error.is_some() => {
                    return Err(ClientError::Http {
                        method: method.into(),
                        error: h.error.clone().unwrap_or_default(),
                        challenge: crate::transport::auth::HttpChallenge::from_http(method, h).map(Box::new),
                    });
                }
                Event::Http(h) if h.request_id.as_ref() == Some(id) && self.authorizer.is_some() => {
                    challenged = crate::transport::auth::HttpChallenge::from_http(method, h);
                }
                // A response may still be in the stdout pipe when the exit is
                // noticed: give the reader a moment before giving up.
                Event::Exited { .. } => exit_grace = Some(Instant::now() + Duration::from_millis(300)),
                Event::Closed { .. } => return Err(ClientError::Closed { method: method.into() }),
                _ => {}
            }
        }
    }

    /// `initialize` then, when the answer is usable, `notifications/initialized`.
    /// The inner error is the server's JSON-RPC refusal of `initialize`.
    pub fn initialize(
        &mut self,
        options: &HandshakeOptions,
        timeout: Duration,
    ) -> Result<Result<Handshake, ErrorObject>, ClientError> {
        let resp = self.request("initialize", Some(options.params()), timeout)?;
        let latency = resp.latency();
        match resp.outcome {
            Ok(result) => {
                let hs = Handshake::judge(&options.protocol_version, &result, latency);
                if hs.usable() {
                    self.notify("notifications/initialized", None);
                }
                Ok(Ok(hs))
            }
            Err(e) => Ok(Err(e)),
        }
    }

    /// Shuts the server down and passes the remaining events to the observer.
    pub fn close(mut self) -> Option<ExitInfo> {
        let rest = self.session.close();
        for ev in &rest {
            self.handle(ev);
            (self.observer)(ev);
        }
        self.exited
    }
}

fn line_has_id(line: &[u8], id: &RequestId) -> bool {
    serde_json::from_slice::<Value>(line)
        .ok()
        .and_then(|v| v.get("id").and_then(RequestId::from_json))
        .as_ref()
        == Some(id)
}

/// The result or error a response frame carries.
pub fn response_outcome(f: &Frame) -> Result<Value, ErrorObject> {
    let v = f.json().unwrap_or(Value::Null);
    if f.class.kind == Kind::Error {
        Err(v
            .get("error")
            .and_then(ErrorObject::from_json)
            .unwrap_or_else(|| ErrorObject::new(0, "malformed error object")))
    } else {
        Ok(v.get("result").cloned().unwrap_or(Value::Null))
    }
}

/// Why no era could be settled on.
#[derive(Clone, Debug)]
pub enum EraFailure {
    /// `initialize` was refused with a JSON-RPC error (a modern-only server
    /// names its versions in `data.supported`).
    InitializeRefused(ErrorObject),
    /// `initialize` answered with a version mcpscope cannot use.
    Handshake(Box<Handshake>),
    /// The modern era was asked for and the server does not speak it, or
    /// refused `server/discover`; the string says why.
    NotModern(String),
}

impl fmt::Display for EraFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EraFailure::InitializeRefused(e) => {
                write!(f, "initialize was refused: {e}")?;
                let supported = handshake::supported_from_error(e);
                if !supported.is_empty() {
                    write!(f, "; the server supports: {}", supported.join(", "))?;
                    if supported.iter().any(|v| Era::of_version(v) == Some(Era::Modern)) {
                        write!(f, " (a modern server: try --era modern or --era auto)")?;
                    }
                }
                Ok(())
            }
            EraFailure::Handshake(h) => write!(f, "handshake failed: {}", h.verdict_text()),
            EraFailure::NotModern(why) => write!(f, "the server does not speak the modern era: {why}"),
        }
    }
}

/// What a multi round-trip request came to.
#[derive(Clone, Debug)]
pub struct InputOutcome {
    /// The last response (complete, an error, or the input_required that could not be answered).
    pub response: Response,
    /// Every `input_required` answer on the way, with the id of the request it answered.
    pub rounds: Vec<(RequestId, InputRequired)>,
    /// Why the chain stopped before a final answer (an input request mcpscope cannot answer).
    pub stopped: Option<String>,
}

/// What running a tool as a task came to.
#[derive(Clone, Debug)]
pub struct TaskRun {
    /// `None` when the server answered the call directly (no task was created).
    pub flavor: Option<Flavor>,
    /// Every distinct status seen, in order.
    pub transitions: Vec<Task>,
    /// The tool's result or error (from `tasks/result`, or inlined by `tasks/get`).
    pub outcome: Result<Value, ErrorObject>,
    /// Set when polling gave up and the task was cancelled.
    pub cancelled: bool,
}

impl Client {
    /// Settles on an era as `choice` says and gets the session ready:
    /// * legacy: `initialize` (+ `notifications/initialized`), as [`Client::initialize`];
    /// * modern: `server/discover` with the envelope; a -32022 is answered by
    ///   retrying with a version both speak (noted on the timeline); from then
    ///   on every request carries the envelope;
    /// * auto: `server/discover` first; anything but a modern answer (an
    ///   error such as -32601, a timeout) falls back to `initialize`.
    ///
    /// The decision, and why, is returned, kept ([`Client::era`]) and noted
    /// on the timeline. `hs.protocol_version` is used in the era it belongs
    /// to (an unknown string is offered to both, to test refusals).
    pub fn establish(
        &mut self,
        choice: EraChoice,
        hs: &HandshakeOptions,
        timeout: Duration,
    ) -> Result<Result<EraDecision, EraFailure>, ClientError> {
        let asked = Era::of_version(&hs.protocol_version);
        let mut notes = Vec::new();
        if choice != EraChoice::Legacy {
            let mut env = Envelope::from_handshake(hs);
            if asked == Some(Era::Legacy) {
                env.protocol_version = era::DEFAULT_MODERN_VERSION.to_owned();
            }
            // A legacy server may ignore the probe: do not wait long for it.
            let probe_timeout = match choice {
                EraChoice::Auto => timeout.min(Duration::from_secs(5)),
                _ => timeout,
            };
            let mut attempts = 0;
            let verdict = loop {
                attempts += 1;
                let (outcome, why) =
                    match self.request_as_is("server/discover", Some(env.discover_params()), probe_timeout) {
                        Ok(resp) => (Some(resp.outcome), String::new()),
                        // A server that asks for authorization says nothing about its era.
                        Err(e @ ClientError::Http { challenge: Some(_), .. }) => return Err(e),
                        Err(e @ (ClientError::TimedOut { .. } | ClientError::Http { .. })) => (None, e.to_string()),
                        Err(e) => return Err(e),
                    };
                let verdict = ProbeVerdict::judge(&env.protocol_version, outcome.as_ref(), &why);
                match &verdict {
                    ProbeVerdict::UnsupportedVersion {
                        requested,
                        supported,
                        retry_with: Some(v),
                    } if attempts < 3 => {
                        let note = era::retry_note("server/discover", requested, supported, v);
                        self.session.note(note.clone());
                        notes.push(note);
                        env.protocol_version = v.clone();
                    }
                    _ => break verdict,
                }
            };
            let legacy_reason = match verdict {
                ProbeVerdict::Modern(d) => {
                    let decision = EraDecision {
                        choice,
                        era: Era::Modern,
                        version: env.protocol_version.clone(),
                        reason: format!(
                            "server/discover answered (supportedVersions: {}): modern server",
                            d.supported_versions.join(", ")
                        ),
                        notes,
                        discovery: Some(d),
                        handshake: None,
                    };
                    self.envelope = Some(env);
                    self.session.note(format!("era: {}", decision.summary()));
                    self.era = Some(decision.clone());
                    return Ok(Ok(decision));
                }
                ProbeVerdict::UnsupportedVersion {
                    requested, supported, ..
                } => {
                    let legacy_ok = supported.iter().any(|v| handshake::is_supported(v));
                    let why = format!(
                        "-32022 to server/discover with {requested}; the server supports {}",
                        supported.join(", ")
                    );
                    if choice == EraChoice::Modern || !legacy_ok {
                        return Ok(Err(EraFailure::NotModern(format!(
                            "{why}, and no modern version mcpscope speaks ({})",
                            era::MODERN_VERSIONS.join(", ")
                        ))));
                    }
                    format!("{why}: only legacy versions in common")
                }
                ProbeVerdict::ModernError(e) => {
                    return Ok(Err(EraFailure::NotModern(format!(
                        "server/discover was refused with {e} (a modern error: the server is modern but refused the probe)"
                    ))));
                }
                ProbeVerdict::Legacy(why) => {
                    if choice == EraChoice::Modern {
                        return Ok(Err(EraFailure::NotModern(why)));
                    }
                    why
                }
            };
            let note = format!("era: auto: {legacy_reason}; falling back to initialize");
            self.session.note(note.clone());
            notes.push(note);
            let mut hs = hs.clone();
            if asked == Some(Era::Modern) {
                hs.protocol_version = handshake::DEFAULT_VERSION.to_owned();
            }
            return self.establish_legacy(choice, &hs, timeout, legacy_reason, notes);
        }
        self.establish_legacy(choice, hs, timeout, "--era legacy: initialize handshake".into(), notes)
    }

    fn establish_legacy(
        &mut self,
        choice: EraChoice,
        hs: &HandshakeOptions,
        timeout: Duration,
        reason: String,
        notes: Vec<String>,
    ) -> Result<Result<EraDecision, EraFailure>, ClientError> {
        match self.initialize(hs, timeout)? {
            Err(e) => Ok(Err(EraFailure::InitializeRefused(e))),
            Ok(h) if !h.usable() => Ok(Err(EraFailure::Handshake(Box::new(h)))),
            Ok(h) => {
                let decision = EraDecision {
                    choice,
                    era: Era::Legacy,
                    version: h.version().unwrap_or_default().to_owned(),
                    reason,
                    notes,
                    discovery: None,
                    handshake: Some(h),
                };
                self.envelope = None;
                self.era = Some(decision.clone());
                Ok(Ok(decision))
            }
        }
    }

    /// Sends a request and follows its multi round-trip chain: every
    /// `input_required` answer is answered by the [`InputPolicy`] and the
    /// request sent again with `inputResponses`, the echoed `requestState`
    /// and a new id (linked in [`Client::conversations`]).
    pub fn request_with_input(
        &mut self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
    ) -> Result<InputOutcome, ClientError> {
        let original = params.clone().unwrap_or_else(|| json!({}));
        let mut resp = self.request(method, params, timeout)?;
        let mut rounds = Vec::new();
        while let Ok(result) = &resp.outcome {
            let Some(ir) = InputRequired::from_result(result) else {
                break;
            };
            let prev = resp.frame.class.id.clone();
            let answers = self.policy.answer_all(&ir);
            if let Some(id) = &prev {
                rounds.push((id.clone(), ir.clone()));
            }
            let answers = match answers {
                Ok(a) => a,
                Err(why) => {
                    return Ok(InputOutcome {
                        response: resp,
                        rounds,
                        stopped: Some(why),
                    });
                }
            };
            if rounds.len() >= mrtr::MAX_ROUNDS {
                return Ok(InputOutcome {
                    response: resp,
                    rounds,
                    stopped: Some(format!("gave up after {} input_required rounds", mrtr::MAX_ROUNDS)),
                });
            }
            let retry = mrtr::retry_params(&original, &answers, ir.request_state.as_deref());
            resp = self.request(method, Some(retry), timeout)?;
            if let (Some(prev), Some(new)) = (prev, resp.frame.class.id.clone()) {
                self.conversations.link(new, &prev);
            }
        }
        Ok(InputOutcome {
            response: resp,
            rounds,
            stopped: None,
        })
    }

    /// Runs `tools/call` as a task in the form of the session's era and
    /// polls it until it ends (or `give_up` passes: then it is cancelled),
    /// telling `on_status` about every change; then fetches the result.
    pub fn run_task(
        &mut self,
        params: Value,
        timeout: Duration,
        give_up: Duration,
        on_status: &mut dyn FnMut(&Task),
    ) -> Result<TaskRun, ClientError> {
        let era = self.era.as_ref().map_or(Era::Legacy, |d| d.era);
        let flavor = Flavor::for_era(era);
        let resp = self.request("tools/call", Some(tasks::call_params(params, flavor, None)), timeout)?;
        let result = match resp.outcome {
            Err(e) => {
                return Ok(TaskRun {
                    flavor: None,
                    transitions: Vec::new(),
                    outcome: Err(e),
                    cancelled: false,
                });
            }
            Ok(r) => r,
        };
        let Some((flavor, mut task)) = tasks::Task::created(&result) else {
            return Ok(TaskRun {
                flavor: None,
                transitions: Vec::new(),
                outcome: Ok(result),
                cancelled: false,
            });
        };
        let deadline = Instant::now() + give_up;
        let mut transitions = vec![task.clone()];
        on_status(&task);
        let mut cancelled = false;
        while !task.status.is_terminal() {
            if Instant::now() >= deadline {
                let r = self.request("tasks/cancel", Some(tasks::task_params(&task.task_id)), timeout)?;
                cancelled = true;
                if let Ok(v) = &r.outcome
                    && let Some(t) = Task::from_value(v)
                {
                    task = t;
                } else {
                    break;
                }
                if task.status != transitions.last().map_or(Status::Working, |t| t.status.clone()) {
                    on_status(&task);
                    transitions.push(task.clone());
                }
                break;
            }
            // Experimental tasks that wait for input deliver the server's
            // requests through tasks/result: go there at once.
            if flavor == Flavor::Experimental && task.status == tasks::Status::InputRequired {
                break;
            }
            let wait = task
                .poll_interval
                .unwrap_or(Duration::from_millis(500))
                .clamp(Duration::from_millis(50), Duration::from_secs(5));
            self.pump_for(wait);
            let r = self.request("tasks/get", Some(tasks::task_params(&task.task_id)), timeout)?;
            let v = match r.outcome {
                Ok(v) => v,
                Err(e) => {
                    return Ok(TaskRun {
                        flavor: Some(flavor),
                        transitions,
                        outcome: Err(e),
                        cancelled,
                    });
                }
            };
            let Some(t) = Task::from_value(&v) else { break };
            let changed = transitions
                .last()
                .is_none_or(|p| p.status != t.status || p.status_message != t.status_message);
            task = t;
            if changed {
                on_status(&task);
                transitions.push(task.clone());
            }
            if flavor == Flavor::Extension
                && task.status == tasks::Status::InputRequired
                && let Some(reqs) = &task.input_requests
            {
                let ir = InputRequired::from_result(&json!({"resultType": "input_required", "inputRequests": reqs}))
                    .expect("built as input_required");
                match self.policy.answer_all(&ir) {
                    Ok(answers) => {
                        self.request(
                            "tasks/update",
                            Some(json!({"taskId": task.task_id, "inputResponses": answers})),
                            timeout,
                        )?;
                    }
                    Err(why) => {
                        return Ok(TaskRun {
                            flavor: Some(flavor),
                            transitions,
                            outcome: Err(ErrorObject::new(0, why)),
                            cancelled,
                        });
                    }
                }
            }
        }
        let outcome = match flavor {
            Flavor::Experimental if !cancelled => {
                self.request("tasks/result", Some(tasks::task_params(&task.task_id)), give_up)?
                    .outcome
            }
            _ => match (&task.result, &task.error) {
                (Some(r), _) => Ok(r.clone()),
                (None, Some(e)) => Err(ErrorObject::from_json(e)
                    .unwrap_or_else(|| ErrorObject::new(0, crate::text::shorten(&e.to_string(), 200)))),
                (None, None) => Err(ErrorObject::new(
                    0,
                    format!("the task ended {} without a result", task.status_line()),
                )),
            },
        };
        Ok(TaskRun {
            flavor: Some(flavor),
            transitions,
            outcome,
            cancelled,
        })
    }
}

impl Client {
    /// Opens a `subscriptions/listen` stream (modern era) and waits for its
    /// acknowledgement: returns the listen request's id (= the subscription
    /// id every notification on the stream carries) and the filter the server
    /// honours. The request stays open (no timeout); notifications arrive as
    /// events, [`crate::protocol::subscriptions::subscriptions`] groups them, and
    /// [`Client::stop_listening`] ends the stream.
    pub fn listen(
        &mut self,
        filter: &crate::protocol::subscriptions::Filter,
        timeout: Duration,
    ) -> Result<Result<(RequestId, Value), ErrorObject>, ClientError> {
        let params = filter.listen_params();
        let params = match &self.envelope {
            Some(env) => env.wrap(Some(params)),
            None => params,
        };
        let method = crate::protocol::subscriptions::LISTEN;
        let id = self.session.request_with(None, method, Some(params), None);
        let deadline = Instant::now() + timeout;
        loop {
            let wait = deadline.saturating_duration_since(Instant::now());
            let ev = match self.session.events().recv_timeout(wait) {
                Ok(ev) => ev,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(ClientError::TimedOut {
                        method: method.into(),
                        after: timeout,
                    });
                }
                Err(RecvTimeoutError::Disconnected) => {
                    self.closed = true;
                    return Err(ClientError::Closed { method: method.into() });
                }
            };
            self.handle(&ev);
            (self.observer)(&ev);
            let Event::Frame(f) = &ev else {
                if let Event::Closed { .. } = ev {
                    return Err(ClientError::Closed { method: method.into() });
                }
                continue;
            };
            if f.direction != Direction::In {
                continue;
            }
            if f.class.kind.is_response() && f.class.id.as_ref() == Some(&id) {
                return match response_outcome(f) {
                    Err(e) => Ok(Err(e)),
                    Ok(v) => Ok(Err(ErrorObject::new(
                        0,
                        format!(
                            "the stream closed at once: {}",
                            crate::text::shorten(&v.to_string(), 200)
                        ),
                    ))),
                };
            }
            if f.class.method.as_deref() == Some(crate::protocol::subscriptions::ACKNOWLEDGED)
                && let Some(v) = f.json()
                && crate::protocol::subscriptions::subscription_id(&v).as_ref() == Some(&id)
            {
                let honoured = v.pointer("/params/notifications").cloned().unwrap_or(Value::Null);
                return Ok(Ok((id, honoured)));
            }
        }
    }

    /// Ends a listen stream (`notifications/cancelled` for its request).
    pub fn stop_listening(&mut self, id: RequestId) {
        self.session.cancel(id, Some("mcpscope stopped listening".into()));
    }
}
