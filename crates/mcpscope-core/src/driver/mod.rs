//! The protocol driver: one state machine per session that knows what MCP
//! asks of a client, and does no I/O.
//!
//! Owners (the CLI's blocking [`crate::client::Client`] and the app's
//! inspection) feed it what happened ([`Input`]: a frame arrived, a request
//! timed out, the server went away, time passed) and what the user wants
//! (call a tool, answer an elicitation, run a task, listen), then perform the
//! [`Action`]s it queues: frames to send (ids allocated and enveloped for the
//! era), cancellations, notes for the timeline, questions for the user, and
//! completions of the requests they asked for.
//!
//! Every protocol rule a client follows lives here, once: the era probe
//! (`server/discover`) and its fallback to `initialize`, the -32022 retry
//! (once per request), the handshake and `notifications/initialized`, multi
//! round-trip `input_required` chains (bounded), task polling, answers to the
//! server's requests, and `list_changed` re-fetches (one per burst). The
//! model is the sans-I/O style of quinn-proto or h11: tests script inputs and
//! assert on actions, with no process and no sleep.

mod chains;
mod rounds;
mod startup;
mod tasks;
#[cfg(test)]
mod tests;
pub mod view;

use crate::protocol::era::{self, Discovery, EraChoice, EraDecision, EraFailure, ProbeVerdict};
use crate::protocol::era::{Envelope, Era};
use crate::protocol::handshake::{self, Handshake, HandshakeOptions};
use crate::protocol::http_headers::{self, InvalidAnnotation, ParamHeader};
use crate::protocol::methods;
use crate::protocol::mrtr::{self, InputPolicy, InputRequired};
use crate::protocol::subscriptions::{self, Filter};
use crate::protocol::tasks::{Flavor, Task};
use crate::wire::classify::Kind;
use crate::wire::frame::{Direction, Frame};
use crate::wire::framing::LineEnding;
use crate::wire::long_line::LongLine;
use crate::wire::message::{ErrorObject, Message, RequestId, error_code};
pub use chains::Chain;
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::time::Duration;
pub use tasks::TaskRun;

/// How many times one request (or the `server/discover` probe) is sent again
/// after a -32022: once, with the best version both sides speak, even when
/// it is the version just refused (the refusal may be transient).
pub const MAX_VERSION_RETRIES: u32 = 1;

/// How long a `list_changed` burst is let settle before the list is fetched again.
pub const LIST_CHANGED_SETTLE: Duration = Duration::from_millis(100);

/// How long pending requests wait, after the server's process exited, for a
/// response still in the pipe before they are failed.
pub const EXIT_GRACE: Duration = Duration::from_millis(300);

/// What the owner wants the driver to be.
#[derive(Clone, Debug)]
pub struct DriverConfig {
    pub era: EraChoice,
    /// The version as the user gave it: offered in `initialize`, or sent in
    /// `_meta`; any string, to see how a server refuses it.
    pub handshake: HandshakeOptions,
    /// How roots, elicitation and sampling are answered when nobody is asked.
    pub policy: InputPolicy,
    /// Elicitation and sampling go to the user as [`Question`]s (the app)
    /// instead of being answered by the policy (the CLI).
    pub ask_user: bool,
    /// Fetch the tool, prompt and resource lists the server advertises once
    /// the session is ready, and fetch a list again when the server says it
    /// changed (once per burst).
    pub fetch_lists: bool,
    /// Answer the server's `ping` requests.
    pub answer_ping: bool,
    /// Timeout of requests that do not name their own.
    pub request_timeout: Option<Duration>,
    /// How long `server/discover` is waited for when the era is `auto` (a
    /// legacy server may ignore it).
    pub probe_timeout: Option<Duration>,
}

impl Default for DriverConfig {
    fn default() -> Self {
        Self {
            era: EraChoice::Legacy,
            handshake: HandshakeOptions::default(),
            policy: InputPolicy::default(),
            ask_user: false,
            fetch_lists: false,
            answer_ping: true,
            request_timeout: Some(Duration::from_secs(30)),
            probe_timeout: Some(Duration::from_secs(10)),
        }
    }
}

/// What happened, as the driver needs to know it.
#[derive(Clone, Copy, Debug)]
pub enum Input<'a> {
    /// A frame crossed the wire (the driver reads the ones that came in).
    Frame(&'a Frame),
    /// One of the requests got no response within its timeout.
    TimedOut(&'a RequestId),
    /// A request never reached the server (stdin closed, HTTP exchange failed).
    NotDelivered {
        id: &'a RequestId,
        why: &'a str,
        cause: Undelivered,
    },
    /// The server's process exited: responses still in the pipe get
    /// [`EXIT_GRACE`] to arrive.
    Exited(&'a str),
    /// The session is over (closed, could not start, connection lost for good).
    Gone(&'a str),
    /// Time since the session started, for timers (task polling, exit grace).
    Tick(Duration),
}

/// Why a request the owner asked for got no JSON-RPC answer. These are local
/// facts, never dressed up as JSON-RPC errors.
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    TimedOut {
        after: Option<Duration>,
    },
    /// The owner cancelled it (`notifications/cancelled` was sent).
    Cancelled,
    /// The server exited or the session ended before it answered.
    ServerGone(String),
    /// It never reached the server (a write or an HTTP exchange failed).
    NotDelivered {
        why: String,
        cause: Undelivered,
    },
    /// The driver stopped following it (a chain that never ends, an input
    /// request nobody can answer, a task without a result).
    Stopped(String),
    /// The server answered with a line longer than the in-memory cap: it
    /// was recorded in pieces, but cannot be read as the answer.
    TooLong {
        bytes: u64,
        cap: usize,
    },
}

/// What kept a request from reaching the server: callers tell the user
/// different things for each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Undelivered {
    /// Writing the line to the server's stdin failed.
    Write,
    /// The HTTP exchange carrying it failed.
    Http,
    /// The server asked for authorization and it could not be obtained
    /// (`why` says why).
    Authorization,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::TimedOut { after: Some(d) } => write!(f, "got no response within {} ms", d.as_millis()),
            Failure::TimedOut { after: None } => write!(f, "got no response"),
            Failure::Cancelled => write!(f, "was cancelled"),
            Failure::ServerGone(why) => write!(f, "got no answer: {why}"),
            Failure::NotDelivered {
                why,
                cause: Undelivered::Authorization,
            } => write!(f, "could not be sent: authorization failed: {why}"),
            Failure::NotDelivered { why, .. } => write!(f, "could not be sent: {why}"),
            Failure::Stopped(why) => write!(f, "stopped: {why}"),
            Failure::TooLong { bytes, cap } => write!(
                f,
                "was answered with a line of {} ({bytes} bytes), over the in-memory cap of {}, so it was \
                 recorded in pieces and not read",
                crate::text::human_bytes(*bytes),
                crate::text::human_bytes(*cap as u64)
            ),
        }
    }
}

/// How a request ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Result(Value),
    Error(ErrorObject),
    Failed(Failure),
}

impl Outcome {
    /// The JSON-RPC answer, if there was one.
    pub fn answer(&self) -> Option<Result<&Value, &ErrorObject>> {
        match self {
            Outcome::Result(v) => Some(Ok(v)),
            Outcome::Error(e) => Some(Err(e)),
            Outcome::Failed(_) => None,
        }
    }

    fn of_frame(f: &Frame) -> Outcome {
        match response_outcome(f) {
            Ok(v) => Outcome::Result(v),
            Err(e) => Outcome::Error(e),
        }
    }
}

/// The result or error a response frame carries (a malformed error object is
/// kept as what it says, with the code it gives or -32603).
pub fn response_outcome(f: &Frame) -> Result<Value, ErrorObject> {
    let v = f.json().unwrap_or(Value::Null);
    if f.class.kind == Kind::Error {
        Err(v.get("error").and_then(ErrorObject::from_json).unwrap_or_else(|| {
            ErrorObject::new(
                error_code::INTERNAL_ERROR,
                format!(
                    "malformed error object: {}",
                    crate::text::shorten(&v.get("error").cloned().unwrap_or(Value::Null).to_string(), 120)
                ),
            )
        }))
    } else {
        Ok(v.get("result").cloned().unwrap_or(Value::Null))
    }
}

/// A request the owner asked for came to an end.
#[derive(Clone, Debug, PartialEq)]
pub struct Completion {
    /// The id the owner knows the request by (its first send).
    pub id: RequestId,
    /// The id of the last send (after -32022 retries and input rounds).
    pub last: RequestId,
    pub method: String,
    pub outcome: Outcome,
    /// Every `input_required` answer on the way, with the id it answered.
    pub rounds: Vec<(RequestId, InputRequired)>,
    /// Set when the driver stopped following the chain before a final answer
    /// (the outcome is then the last `input_required` result).
    pub stopped: Option<String>,
    /// Set for a tool run as a task.
    pub task: Option<TaskRun>,
}

/// Something for the owner to do or know, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Send this message; requests carry their timeout. Over HTTP the message
    /// also carries these headers (the `Mcp-Param-*` mirrors of a tool's
    /// annotated arguments); other transports ignore them.
    Send {
        message: Message,
        timeout: Option<Duration>,
        headers: Vec<(String, String)>,
    },
    /// Send these bytes as they are (the user's raw line).
    SendRaw { line: Vec<u8>, timeout: Option<Duration> },
    /// Cancel a request (`notifications/cancelled`).
    Cancel { id: RequestId, reason: String },
    /// A note for the timeline and the capture.
    Note(String),
    /// A request of ours was sent again under a new id (a -32022 retry or the
    /// next round of an input chain).
    Resent {
        old: RequestId,
        new: RequestId,
        root: RequestId,
        /// The conversation number of an input chain (from 1).
        conversation: Option<usize>,
    },
    /// A question for the user is waiting ([`Driver::questions`]).
    Asked(QuestionId),
    /// The era is settled (or could not be).
    Settled(Result<EraDecision, EraFailure>),
    /// A task changed status.
    TaskStatus { id: RequestId, task: Task },
    /// A listen stream was acknowledged: its id and the filter the server honours.
    Listening { id: RequestId, honoured: Value },
    /// A request the owner asked for ended.
    Done(Completion),
}

/// Where the era stands.
#[derive(Clone, Debug, PartialEq)]
pub enum EraState {
    /// Nothing sent yet (or the owner skips the handshake).
    Unsettled,
    /// `server/discover` sent with this id, carrying this version.
    Probing {
        id: RequestId,
        offered: String,
    },
    /// `initialize` sent with this id.
    Initializing {
        id: RequestId,
    },
    Legacy,
    Modern,
}

/// The era the user chose, where it stands, and why.
#[derive(Clone, Debug)]
pub struct EraStatus {
    pub choice: EraChoice,
    pub state: EraState,
    /// One sentence: why this era ("-32601 to server/discover: legacy server").
    pub reason: String,
    /// What happened on the way (a -32022 retry, a fallback).
    pub notes: Vec<String>,
    pub discovery: Option<Discovery>,
    pub handshake: Option<Handshake>,
    /// Set when no era could be settled on; the session still speaks the
    /// chosen era (modern when chosen, else legacy) so the user can go on.
    pub failure: Option<EraFailure>,
    /// Why the handshake (or the probe) got no answer at all, when it did not.
    pub cause: Option<Failure>,
}

impl EraStatus {
    pub fn era(&self) -> Option<Era> {
        match self.state {
            EraState::Legacy => Some(Era::Legacy),
            EraState::Modern => Some(Era::Modern),
            _ => None,
        }
    }

    pub fn settled(&self) -> bool {
        matches!(self.state, EraState::Legacy | EraState::Modern)
    }

    /// The server's capabilities, from `initialize` or `server/discover`.
    pub fn server_capabilities(&self) -> Option<&Value> {
        match (&self.discovery, &self.handshake) {
            (Some(d), _) => d.capabilities.as_ref(),
            (None, Some(h)) => h.capabilities.as_ref(),
            _ => None,
        }
    }
}

/// The handle of a question for the user.
pub type QuestionId = u64;

/// Where a question came from, and so where its answer goes.
#[derive(Clone, Debug, PartialEq)]
pub enum QuestionOrigin {
    /// A server request (legacy era): the answer is its response.
    ServerRequest(RequestId),
    /// One input of an `input_required` round: the chain's root and the key.
    Input { root: RequestId, key: String },
    /// One input of a task waiting for input (tasks extension).
    TaskInput { root: RequestId, key: String },
}

/// An elicitation or sampling request waiting for the user.
#[derive(Clone, Debug, PartialEq)]
pub struct Question {
    pub id: QuestionId,
    pub method: String,
    pub params: Value,
    pub origin: QuestionOrigin,
    /// The frame that asked (its seq), to show where it came from.
    pub asked_by_seq: Option<u64>,
}

/// How one request of the owner is sent.
#[derive(Clone, Debug, Default)]
pub struct RequestOptions {
    /// Use this id instead of the next free one.
    pub id: Option<RequestId>,
    /// `None`: the driver's default timeout; `Some(None)`: wait forever.
    pub timeout: Option<Option<Duration>>,
    /// Send the params exactly as given, without the modern envelope.
    pub as_is: bool,
}

impl RequestOptions {
    /// The driver's defaults with this timeout.
    pub fn timeout(timeout: Duration) -> Self {
        Self {
            timeout: Some(Some(timeout)),
            ..Self::default()
        }
    }
}

/// Why the driver sent a request, which says what its answer means.
#[derive(Clone, Debug, PartialEq)]
enum Purpose {
    /// The owner asked; ends in [`Action::Done`].
    Owner,
    Probe,
    Initialize,
    /// A list fetched by the driver itself (`fetch_lists`).
    List(&'static str),
    /// A request of a task run (the poll, the result, the cancel, an update).
    Task(tasks::Step),
    /// A `subscriptions/listen` stream.
    Listen,
}

#[derive(Clone, Debug)]
struct Pending {
    purpose: Purpose,
    /// The first id of this request's chain of sends.
    root: RequestId,
    method: String,
    /// The params as the owner gave them (before the envelope), to send again.
    params: Option<Value>,
    timeout: Option<Duration>,
    enveloped: bool,
    version_retries: u32,
}

/// The owner's view of one request still in flight.
#[derive(Clone, Debug)]
struct OwnerRequest {
    method: String,
    current: RequestId,
    rounds: Vec<(RequestId, InputRequired)>,
    /// The last `input_required` result, the outcome of a chain that stops.
    last_input_result: Option<Value>,
}

pub struct Driver {
    config: DriverConfig,
    era: EraStatus,
    envelope: Envelope,
    /// The version `initialize` offers when the session is (or falls back to) legacy.
    legacy_version: String,
    next_id: i64,
    now: Duration,
    pending: HashMap<RequestId, Pending>,
    /// Requests of the owner not yet done, by root id.
    owner: HashMap<RequestId, OwnerRequest>,
    chains: chains::Chains,
    tasks: Vec<TaskRun>,
    questions: Vec<Question>,
    next_question: QuestionId,
    /// Lists fetched so far: a list_changed re-fetches only these.
    lists_fetched: Vec<&'static str>,
    /// Which lists have a re-fetch in flight (a burst causes one).
    refetching: HashMap<&'static str, RequestId>,
    /// Lists that changed while a fetch of them was in flight.
    stale_lists: std::collections::HashSet<&'static str>,
    /// Re-fetches waiting for their burst of notifications to settle.
    refetch_due: HashMap<&'static str, Duration>,
    /// Listen streams: id -> acknowledged.
    listens: HashMap<RequestId, bool>,
    conversations: mrtr::Conversations,
    /// -32022 answers to the probe so far.
    probe_retries: u32,
    /// Each listed tool's `x-mcp-header` annotations, or why they are invalid.
    tool_headers: HashMap<String, Result<Vec<ParamHeader>, InvalidAnnotation>>,
    tools_listed: bool,
    /// The probe was sent again after a refused fallback `initialize`.
    reprobed: bool,
    /// When the process exited: pending requests fail after the grace.
    exited: Option<(Duration, String)>,
    gone: Option<String>,
    /// A line over the in-memory cap arriving in pieces: (its scan, the cap).
    long_line: Option<(LongLine, usize)>,
    actions: VecDeque<Action>,
}

impl Driver {
    pub fn new(config: DriverConfig) -> Driver {
        let mut d = Driver {
            era: EraStatus {
                choice: config.era,
                state: EraState::Unsettled,
                reason: String::new(),
                notes: Vec::new(),
                discovery: None,
                handshake: None,
                failure: None,
                cause: None,
            },
            envelope: Envelope::default(),
            legacy_version: handshake::DEFAULT_VERSION.to_owned(),
            config,
            next_id: 1,
            now: Duration::ZERO,
            pending: HashMap::new(),
            owner: HashMap::new(),
            chains: chains::Chains::default(),
            tasks: Vec::new(),
            questions: Vec::new(),
            next_question: 1,
            lists_fetched: Vec::new(),
            refetching: HashMap::new(),
            stale_lists: Default::default(),
            refetch_due: HashMap::new(),
            listens: HashMap::new(),
            conversations: mrtr::Conversations::default(),
            probe_retries: 0,
            tool_headers: HashMap::new(),
            tools_listed: false,
            reprobed: false,
            exited: None,
            gone: None,
            long_line: None,
            actions: VecDeque::new(),
        };
        d.configure_versions();
        d
    }

    /// Works out the versions each era uses from the one the user gave: a
    /// legacy version is no envelope version, a modern one is no `initialize`
    /// version, and an unknown string is offered to both (to see refusals).
    fn configure_versions(&mut self) {
        let asked = self.config.handshake.protocol_version.clone();
        let asked_era = Era::of_version(&asked);
        self.envelope = Envelope::from_handshake(&self.config.handshake);
        if asked_era == Some(Era::Legacy) {
            self.envelope.protocol_version = era::DEFAULT_MODERN_VERSION.to_owned();
        }
        self.legacy_version = if asked_era == Some(Era::Modern) {
            handshake::DEFAULT_VERSION.to_owned()
        } else {
            asked
        };
    }

    pub fn config(&self) -> &DriverConfig {
        &self.config
    }

    /// Replaces the configuration before [`Driver::start`] (the blocking
    /// client learns the era and handshake options only then).
    pub fn reconfigure(&mut self, config: DriverConfig) {
        self.era.choice = config.era;
        self.config = config;
        self.configure_versions();
    }

    /// Begins the session as the chosen era says: `initialize` (legacy) or
    /// the `server/discover` probe (modern, auto).
    pub fn start(&mut self) {
        match self.config.era {
            EraChoice::Legacy => {
                self.era.reason = "legacy chosen: initialize handshake".into();
                self.send_initialize();
            }
            EraChoice::Modern | EraChoice::Auto => {
                self.era.reason = "probing with server/discover".into();
                self.send_probe();
            }
        }
    }

    // ----------------------------------------------------------- state ---

    pub fn era(&self) -> &EraStatus {
        &self.era
    }

    /// The era decision, once settled without failure.
    pub fn decision(&self) -> Option<EraDecision> {
        let era = self.era.era()?;
        if self.era.failure.is_some() {
            return None;
        }
        Some(EraDecision {
            choice: self.era.choice,
            era,
            version: match era {
                Era::Modern => self.envelope.protocol_version.clone(),
                Era::Legacy => self
                    .era
                    .handshake
                    .as_ref()
                    .and_then(|h| h.version())
                    .unwrap_or_default()
                    .to_owned(),
            },
            reason: self.era.reason.clone(),
            notes: self.era.notes.clone(),
            discovery: self.era.discovery.clone(),
            handshake: self.era.handshake.clone(),
        })
    }

    /// The envelope modern requests carry.
    pub fn envelope(&self) -> &Envelope {
        &self.envelope
    }

    /// The protocol version modern requests carry in `_meta` (changed, e.g.,
    /// to see how a server answers a version it does not speak).
    pub fn set_modern_version(&mut self, version: &str) {
        self.envelope.protocol_version = version.to_owned();
    }

    /// Questions waiting for the user, oldest first.
    pub fn questions(&self) -> &[Question] {
        &self.questions
    }

    /// Input chains (multi round-trip conversations), in the order they began.
    pub fn chains(&self) -> &[Chain] {
        self.chains.all()
    }

    /// Request id -> first request of its chain of sends.
    pub fn conversations(&self) -> &mrtr::Conversations {
        &self.conversations
    }

    /// Tasks run so far.
    pub fn tasks(&self) -> &[TaskRun] {
        &self.tasks
    }

    /// The task run started by the request `root`.
    pub fn task(&self, root: &RequestId) -> Option<&TaskRun> {
        self.tasks.iter().find(|t| &t.root == root)
    }

    /// The id a request of the owner is currently waiting on (after retries).
    pub fn current_id(&self, root: &RequestId) -> Option<&RequestId> {
        self.owner.get(root).map(|o| &o.current)
    }

    /// Whether a request of the owner is still in flight.
    pub fn is_pending(&self, root: &RequestId) -> bool {
        self.owner.contains_key(root)
    }

    /// The roots answered to `roots/list`.
    pub fn roots(&self) -> &[Value] {
        self.config.policy.roots.as_deref().unwrap_or(&[])
    }

    /// The tasks flavour the server offers for `tools/call` in this era, if any.
    pub fn task_flavor(&self) -> Option<Flavor> {
        let flavor = Flavor::for_era(self.era.era()?);
        let caps = self.era.server_capabilities()?;
        crate::protocol::tasks::server_offers(caps, flavor).then_some(flavor)
    }

    /// When [`Input::Tick`] should next be fed.
    pub fn next_wakeup(&self) -> Option<Duration> {
        // Once the grace has ended the session, it is no timer any more.
        let grace = self
            .exited
            .as_ref()
            .filter(|_| self.gone.is_none())
            .map(|(at, _)| *at + EXIT_GRACE);
        let polls = self.tasks.iter().filter_map(|t| t.next_poll_at());
        let refetches = self.refetch_due.values().copied();
        grace.into_iter().chain(polls).chain(refetches).min()
    }

    /// The next thing to do, oldest first.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    // --------------------------------------------------- owner requests ---

    /// Sends a request for the owner: enveloped in the modern era, retried
    /// after a -32022, followed through `input_required` rounds. Ends in
    /// [`Action::Done`] under the returned id.
    pub fn request(&mut self, method: &str, params: Option<Value>) -> RequestId {
        self.request_with(method, params, RequestOptions::default())
    }

    pub fn request_with(&mut self, method: &str, params: Option<Value>, opts: RequestOptions) -> RequestId {
        let id = opts.id.unwrap_or_else(|| self.alloc_id());
        let timeout = opts.timeout.unwrap_or(self.config.request_timeout);
        self.owner.insert(
            id.clone(),
            OwnerRequest {
                method: method.to_owned(),
                current: id.clone(),
                rounds: Vec::new(),
                last_input_result: None,
            },
        );
        if let Some(why) = self.gone.clone() {
            self.send_untracked(&id, method, params, timeout, !opts.as_is);
            self.finish(&id, &id, Outcome::Failed(Failure::ServerGone(why)), None);
            return id;
        }
        let pending = Pending {
            purpose: Purpose::Owner,
            root: id.clone(),
            method: method.to_owned(),
            params,
            timeout,
            enveloped: !opts.as_is && self.era.state == EraState::Modern,
            version_retries: 0,
        };
        self.send_pending(id.clone(), pending);
        id
    }

    /// Sends a notification (enveloped in the modern era).
    pub fn notify(&mut self, method: &str, params: Option<Value>) {
        let params = self.wrap(params);
        self.push_send(Message::notification(method, params), None);
    }

    /// Sends a line exactly as the user typed it. A request in it (an object
    /// with a method and an id) is followed like any other of the owner's.
    pub fn send_raw(&mut self, line: Vec<u8>) -> Option<RequestId> {
        let parsed = serde_json::from_slice::<Value>(&line).ok();
        let id = parsed.as_ref().and_then(|v| v.get("id")).and_then(RequestId::from_json);
        let method = parsed
            .as_ref()
            .and_then(|v| v.get("method"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let timeout = self.config.request_timeout;
        if let (Some(id), Some(method)) = (&id, method) {
            self.owner.insert(
                id.clone(),
                OwnerRequest {
                    method: method.clone(),
                    current: id.clone(),
                    rounds: Vec::new(),
                    last_input_result: None,
                },
            );
            // Never re-sent or enveloped: it is the user's line, kept as typed.
            self.pending.insert(
                id.clone(),
                Pending {
                    purpose: Purpose::Owner,
                    root: id.clone(),
                    method,
                    params: None,
                    timeout,
                    enveloped: false,
                    version_retries: MAX_VERSION_RETRIES,
                },
            );
        }
        self.actions.push_back(Action::SendRaw { line, timeout });
        id
    }

    /// Asks the server to cancel a request of the owner (by the id it was
    /// given, or the id of its current send); it ends as cancelled.
    pub fn cancel(&mut self, id: &RequestId, reason: &str) {
        let root = self.conversations.root(id);
        let current = self.owner.get(&root).map_or_else(|| id.clone(), |o| o.current.clone());
        self.pending.remove(&current);
        self.actions.push_back(Action::Cancel {
            id: current.clone(),
            reason: reason.to_owned(),
        });
        if self.owner.contains_key(&root) {
            self.finish(&root, &current, Outcome::Failed(Failure::Cancelled), None);
        }
        self.listens.remove(id);
        self.withdraw_questions(|o| matches!(o, QuestionOrigin::Input { root: r, .. } if *r == root));
    }

    /// The user answered a question.
    pub fn answer(&mut self, question: QuestionId, outcome: Result<Value, ErrorObject>) {
        let Some(pos) = self.questions.iter().position(|q| q.id == question) else {
            return;
        };
        let q = self.questions.remove(pos);
        match q.origin {
            QuestionOrigin::ServerRequest(id) => self.respond(id, outcome),
            QuestionOrigin::Input { root, key } => {
                // An input response is the result the legacy request would have had.
                let value = outcome.unwrap_or_else(|e| json!({ "error": e.to_json() }));
                if let Some(ready) = self.chains.record(&root, key, value) {
                    self.send_next_round(&root, ready);
                }
            }
            QuestionOrigin::TaskInput { root, key } => {
                let value = outcome.unwrap_or_else(|e| json!({ "error": e.to_json() }));
                self.task_input_answered(&root, key, value);
            }
        }
    }

    /// Changes the roots answered to `roots/list`; a legacy session is told
    /// with `notifications/roots/list_changed` (2026-07-28 removed it: roots
    /// are asked for per request).
    pub fn set_roots(&mut self, roots: Vec<Value>) {
        self.config.policy.roots = Some(roots);
        if self.era.state == EraState::Legacy && self.gone.is_none() {
            self.push_send(Message::notification(methods::ROOTS_LIST_CHANGED, None), None);
        }
    }

    /// Opens a `subscriptions/listen` stream (no timeout): [`Action::Listening`]
    /// when acknowledged; [`Driver::cancel`] ends it.
    pub fn listen(&mut self, filter: &Filter) -> RequestId {
        let id = self.alloc_id();
        self.listens.insert(id.clone(), false);
        self.owner.insert(
            id.clone(),
            OwnerRequest {
                method: subscriptions::LISTEN.to_owned(),
                current: id.clone(),
                rounds: Vec::new(),
                last_input_result: None,
            },
        );
        let pending = Pending {
            purpose: Purpose::Listen,
            root: id.clone(),
            method: subscriptions::LISTEN.to_owned(),
            params: Some(filter.listen_params()),
            timeout: None,
            enveloped: self.era.state == EraState::Modern,
            version_retries: MAX_VERSION_RETRIES,
        };
        self.send_pending(id.clone(), pending);
        id
    }

    // ----------------------------------------------------------- inputs ---

    pub fn handle(&mut self, input: Input<'_>) {
        match input {
            Input::Frame(f) => {
                self.now = self.now.max(f.at);
                if f.direction == Direction::In && !self.long_line_piece(f) {
                    self.on_frame(f);
                }
            }
            Input::TimedOut(id) => {
                if let Some(p) = self.pending.remove(id) {
                    let after = p.timeout;
                    self.no_answer(id, p, Failure::TimedOut { after });
                }
            }
            Input::NotDelivered { id, why, cause } => {
                if let Some(p) = self.pending.remove(id) {
                    self.no_answer(
                        id,
                        p,
                        Failure::NotDelivered {
                            why: why.to_owned(),
                            cause,
                        },
                    );
                }
            }
            Input::Exited(why) => {
                if self.exited.is_none() {
                    self.exited = Some((self.now, why.to_owned()));
                }
            }
            Input::Gone(why) => self.gone(why),
            Input::Tick(now) => {
                self.now = self.now.max(now);
                if let Some((at, why)) = self.exited.clone()
                    && self.now >= at + EXIT_GRACE
                {
                    self.gone(&why);
                }
                self.poll_tasks();
                self.refetch_due_lists();
            }
        }
    }

    fn refetch_due_lists(&mut self) {
        if self.gone.is_some() {
            self.refetch_due.clear();
            return;
        }
        let mut due: Vec<&'static str> = self
            .refetch_due
            .iter()
            .filter(|(_, at)| self.now >= **at)
            .map(|(l, _)| *l)
            .collect();
        due.sort_unstable();
        for list in due {
            self.refetch_due.remove(list);
            self.refetch(list);
        }
    }

    fn gone(&mut self, why: &str) {
        if self.gone.is_some() {
            return;
        }
        self.gone = Some(why.to_owned());
        let mut pending: Vec<(RequestId, Pending)> = self.pending.drain().collect();
        pending.sort_by(|a, b| a.0.cmp(&b.0));
        for (id, p) in pending {
            self.no_answer(&id, p, Failure::ServerGone(why.to_owned()));
        }
        // Whatever was still waiting on the user can no longer be answered.
        self.questions.clear();
        let roots: Vec<RequestId> = self.owner.keys().cloned().collect();
        for root in roots {
            let current = self.owner[&root].current.clone();
            self.finish(
                &root,
                &current,
                Outcome::Failed(Failure::ServerGone(why.to_owned())),
                None,
            );
        }
        for t in &mut self.tasks {
            t.next_poll = None;
        }
    }

    /// A request of ours will get no answer.
    fn no_answer(&mut self, id: &RequestId, p: Pending, failure: Failure) {
        match p.purpose {
            Purpose::Probe => {
                let offered = self.envelope.protocol_version.clone();
                let why = match &failure {
                    Failure::TimedOut { .. } => "timed out".to_owned(),
                    other => other.to_string(),
                };
                if matches!(failure, Failure::ServerGone(_)) {
                    self.era.cause = Some(failure.clone());
                    self.settle_failed(EraFailure::NoAnswer {
                        method: methods::SERVER_DISCOVER.into(),
                        why: failure.to_string(),
                    });
                } else {
                    self.settle_probe(ProbeVerdict::judge(&offered, None, &why));
                }
            }
            Purpose::Initialize => {
                self.era.cause = Some(failure.clone());
                self.settle_failed(EraFailure::NoAnswer {
                    method: methods::INITIALIZE.into(),
                    why: failure.to_string(),
                })
            }
            Purpose::List(list) => self.list_answered(list),
            Purpose::Owner | Purpose::Listen => {
                self.listens.remove(id);
                self.finish(&p.root, id, Outcome::Failed(failure), None)
            }
            Purpose::Task(step) => self.task_failed(&p.root, step, failure),
        }
    }

    /// Follows a line over the in-memory cap through its pieces (the first
    /// ones end in `Cut`, the last does not); at its end, a request it
    /// answers fails as [`Failure::TooLong`] instead of waiting on.
    fn long_line_piece(&mut self, f: &Frame) -> bool {
        if f.ending == LineEnding::Cut {
            let (scan, _) = self.long_line.get_or_insert_with(|| (LongLine::default(), f.raw.len()));
            scan.push(&f.raw);
            return true;
        }
        let Some((mut scan, cap)) = self.long_line.take() else {
            return false;
        };
        scan.push(&f.raw);
        let summary = scan.finish();
        if summary.is_response
            && let Some(id) = &summary.id
            && let Some(p) = self.pending.remove(id)
        {
            let failure = Failure::TooLong {
                bytes: summary.bytes,
                cap,
            };
            self.no_answer(id, p, failure);
        }
        true
    }

    fn on_frame(&mut self, f: &Frame) {
        if f.class.kind == Kind::Result && f.link.as_ref().is_some_and(|l| l.method == methods::TOOLS_LIST) {
            self.tools_answered(f);
        }
        match f.class.kind {
            Kind::Result | Kind::Error => {
                if let Some(id) = &f.class.id
                    && let Some(p) = self.pending.remove(id)
                {
                    self.on_response(id, p, f);
                }
            }
            Kind::Request => self.on_server_request(f),
            Kind::Notification => self.on_notification(f),
            _ => {}
        }
    }

    fn on_response(&mut self, id: &RequestId, p: Pending, f: &Frame) {
        let outcome = response_outcome(f);
        // -32022 to a request that carried the envelope: once more, with the
        // best version both sides speak.
        if p.enveloped
            && let Err(e) = &outcome
            && e.code == error_code::UNSUPPORTED_PROTOCOL_VERSION
            && p.purpose != Purpose::Probe
        {
            if let Some(p) = self.retry_version(id, p, e) {
                self.deliver(id, p, f, outcome);
            }
            return;
        }
        self.deliver(id, p, f, outcome);
    }

    /// Sends `p` again under a new id with the best mutual version; gives the
    /// request back when it cannot (no version in common, or retried already).
    fn retry_version(&mut self, id: &RequestId, mut p: Pending, e: &ErrorObject) -> Option<Pending> {
        let supported = era::supported_versions(e);
        let requested = self.envelope.protocol_version.clone();
        let best = era::best_modern_version(&supported);
        match best {
            Some(v) if p.version_retries < MAX_VERSION_RETRIES => {
                self.note(era::retry_note(&p.method, &requested, &supported, &v));
                self.envelope.protocol_version = v;
                p.version_retries += 1;
                let new = self.alloc_id();
                self.resent(id, &new, &p.root, None);
                self.send_pending(new, p);
                None
            }
            _ => {
                self.note(era::unsupported_note(
                    &p.method,
                    &requested,
                    &supported,
                    p.version_retries,
                ));
                Some(p)
            }
        }
    }

    /// A response that ends (or continues) what its request was for.
    fn deliver(&mut self, id: &RequestId, p: Pending, f: &Frame, outcome: Result<Value, ErrorObject>) {
        match p.purpose {
            Purpose::Probe => {
                let offered = match &self.era.state {
                    EraState::Probing { offered, .. } => offered.clone(),
                    _ => self.envelope.protocol_version.clone(),
                };
                self.settle_probe(ProbeVerdict::judge(&offered, Some(&outcome), ""));
            }
            Purpose::Initialize => self.on_initialize(f, outcome),
            Purpose::List(list) => self.list_answered(list),
            Purpose::Listen => {
                self.listens.remove(id);
                let outcome = match outcome {
                    Ok(v) => Outcome::Failed(Failure::Stopped(format!(
                        "the stream closed at once: {}",
                        crate::text::shorten(&v.to_string(), 200)
                    ))),
                    Err(e) => Outcome::Error(e),
                };
                self.finish(&p.root, id, outcome, None);
            }
            Purpose::Owner => {
                if let Ok(result) = &outcome
                    && mrtr::may_require_input(&p.method)
                    && self.era.state == EraState::Modern
                    && let Some(ir) = InputRequired::from_result(result)
                {
                    if let Some(o) = self.owner.get_mut(&p.root) {
                        o.last_input_result = Some(result.clone());
                    }
                    self.input_required(id, p, ir);
                    return;
                }
                self.finish(&p.root, id, Outcome::of_frame(f), None);
            }
            Purpose::Task(step) => self.task_answer(id, &p.root, step, f, outcome),
        }
    }

    fn on_server_request(&mut self, f: &Frame) {
        let (Some(id), Some(method)) = (f.class.id.clone(), f.class.method.as_deref()) else {
            return;
        };
        if self.gone.is_some() {
            return;
        }
        let params = f.json().and_then(|v| v.get("params").cloned()).unwrap_or(Value::Null);
        match method {
            methods::PING => {
                if self.config.answer_ping {
                    self.respond(id, Ok(json!({})));
                }
            }
            methods::ROOTS_LIST => {
                let outcome = self.config.policy.answer(method, &params).map_err(|_| {
                    ErrorObject::new(
                        error_code::METHOD_NOT_FOUND,
                        "mcpscope does not expose roots in this session (pass --root to answer roots/list)",
                    )
                });
                self.respond(id, outcome);
            }
            methods::ELICITATION_CREATE | methods::SAMPLING_CREATE_MESSAGE if self.config.ask_user => {
                self.ask(method, params, QuestionOrigin::ServerRequest(id), Some(f.seq));
            }
            methods::ELICITATION_CREATE | methods::SAMPLING_CREATE_MESSAGE => {
                let declared = match method {
                    methods::ELICITATION_CREATE => self.config.policy.elicit.is_some(),
                    _ => self.config.policy.sample_reply.is_some(),
                };
                let outcome = if declared {
                    self.config
                        .policy
                        .answer(method, &params)
                        .map_err(|why| ErrorObject::new(error_code::INTERNAL_ERROR, why.to_string()))
                } else if method == methods::ELICITATION_CREATE {
                    Err(ErrorObject::new(
                        error_code::METHOD_NOT_FOUND,
                        "mcpscope did not declare the elicitation capability and cannot ask a person here",
                    ))
                } else {
                    Err(ErrorObject::new(
                        error_code::METHOD_NOT_FOUND,
                        "mcpscope did not declare the sampling capability and cannot run a model",
                    ))
                };
                self.respond(id, outcome);
            }
            other => self.respond(
                id,
                Err(ErrorObject::new(
                    error_code::METHOD_NOT_FOUND,
                    format!("Method not found: mcpscope does not answer {other}"),
                )),
            ),
        }
    }

    fn on_notification(&mut self, f: &Frame) {
        let Some(method) = f.class.method.as_deref() else {
            return;
        };
        match method {
            subscriptions::ACKNOWLEDGED => {
                if let Some(v) = f.json()
                    && let Some(id) = subscriptions::subscription_id(&v)
                    && let Some(acked) = self.listens.get_mut(&id)
                    && !*acked
                {
                    *acked = true;
                    let honoured = v.pointer("/params/notifications").cloned().unwrap_or(Value::Null);
                    self.actions.push_back(Action::Listening { id, honoured });
                }
            }
            methods::CANCELLED => {
                // The server gave up on a request it asked us: stop asking the user.
                if let Some(id) = f
                    .json()
                    .and_then(|v| v.pointer("/params/requestId").and_then(RequestId::from_json))
                {
                    self.withdraw_questions(|o| matches!(o, QuestionOrigin::ServerRequest(r) if *r == id));
                }
            }
            _ => {
                if let Some(list) = methods::list_of_change(method)
                    && self.config.fetch_lists
                    && self.era.settled()
                    && self.lists_fetched.contains(&list)
                {
                    if self.refetching.contains_key(list) {
                        // The answer in flight may predate the change: one
                        // more fetch once it is in, however long the burst.
                        self.stale_lists.insert(list);
                    } else {
                        // Servers announce changes in bursts: wait for the
                        // burst to settle, then fetch once.
                        let due = self.now + LIST_CHANGED_SETTLE;
                        self.refetch_due.entry(list).or_insert(due);
                    }
                }
            }
        }
    }

    // ------------------------------------------------------------ helpers ---

    fn alloc_id(&mut self) -> RequestId {
        let id = RequestId::Number(self.next_id);
        self.next_id += 1;
        id
    }

    /// The `Mcp-Param-*` headers of a `tools/call` (from the annotations of
    /// the tool as last listed).
    fn param_headers(&self, params: &Value) -> Vec<(String, String)> {
        let name = params.get("name").and_then(Value::as_str).unwrap_or_default();
        match self.tool_headers.get(name) {
            Some(Ok(annotations)) => {
                http_headers::headers(annotations, params.get("arguments").unwrap_or(&Value::Null))
            }
            _ => Vec::new(),
        }
    }

    /// Why a listed tool must not be called (its `x-mcp-header` annotations
    /// break the rules), if they do.
    pub fn tool_problem(&self, name: &str) -> Option<&InvalidAnnotation> {
        self.tool_headers.get(name).and_then(|r| r.as_ref().err())
    }

    /// Whether `tools/list` was answered in this session (so annotations are known).
    pub fn tools_listed(&self) -> bool {
        self.tools_listed
    }

    /// Reads a `tools/list` answer: each tool's header annotations.
    fn tools_answered(&mut self, f: &Frame) {
        let Some(tools) = f
            .json()
            .and_then(|v| v.pointer("/result/tools").and_then(Value::as_array).cloned())
        else {
            return;
        };
        self.tools_listed = true;
        for t in tools {
            if let Some(name) = t.get("name").and_then(Value::as_str) {
                let schema = t.get("inputSchema").unwrap_or(&Value::Null);
                self.tool_headers
                    .insert(name.to_owned(), http_headers::annotations(schema));
            }
        }
    }

    /// The owner sends the request `id` again under a new id: its HTTP
    /// exchange asked for authorization, which the owner obtained, so it
    /// never reached the MCP layer (see `transport::auth::gate`). The
    /// driver waits for the answer under the new id; everything else about
    /// the request (its purpose, chain, timeout) stays. `None` when `id` is
    /// not waiting.
    pub fn reissue(&mut self, id: &RequestId) -> Option<RequestId> {
        let p = self.pending.remove(id)?;
        let new = self.alloc_id();
        match &mut self.era.state {
            EraState::Probing { id: probe, .. } if probe == id => *probe = new.clone(),
            EraState::Initializing { id: init } if init == id => *init = new.clone(),
            _ => {}
        }
        if let Some(o) = self.owner.get_mut(&p.root) {
            o.current = new.clone();
        }
        if let Some(l) = self.listens.remove(id) {
            self.listens.insert(new.clone(), l);
        }
        self.resent(id, &new, &p.root.clone(), None);
        self.pending.insert(new.clone(), p);
        Some(new)
    }

    /// Makes sure the driver's next id is above `id` (the user chose one).
    pub fn reserve_id(&mut self, id: &RequestId) {
        if let RequestId::Number(n) = id
            && *n >= self.next_id
        {
            self.next_id = n + 1;
        }
    }

    fn wrap(&self, params: Option<Value>) -> Option<Value> {
        match self.era.state {
            EraState::Modern => Some(self.envelope.wrap(params)),
            _ => params,
        }
    }

    fn push_send(&mut self, message: Message, timeout: Option<Duration>) {
        self.actions.push_back(Action::Send {
            message,
            timeout,
            headers: Vec::new(),
        });
    }

    fn send_pending(&mut self, id: RequestId, p: Pending) {
        let params = if p.enveloped {
            Some(self.envelope.wrap(p.params.clone()))
        } else {
            p.params.clone()
        };
        let headers = match (&params, p.method.as_str()) {
            (Some(params), methods::TOOLS_CALL) if p.enveloped => self.param_headers(params),
            _ => Vec::new(),
        };
        let message = Message::request(id.clone(), &p.method, params);
        let timeout = p.timeout;
        if let Some(o) = self.owner.get_mut(&p.root) {
            o.current = id.clone();
        }
        self.pending.insert(id, p);
        self.actions.push_back(Action::Send {
            message,
            timeout,
            headers,
        });
    }

    /// Sends a request nobody waits for (the session is gone: it is still
    /// shown as sent, and fails at once).
    fn send_untracked(
        &mut self,
        id: &RequestId,
        method: &str,
        params: Option<Value>,
        timeout: Option<Duration>,
        envelope: bool,
    ) {
        let params = if envelope { self.wrap(params) } else { params };
        self.push_send(Message::request(id.clone(), method, params), timeout);
    }

    fn respond(&mut self, id: RequestId, outcome: Result<Value, ErrorObject>) {
        let message = match outcome {
            Ok(result) => Message::Result { id, result },
            Err(error) => Message::Error { id: Some(id), error },
        };
        self.push_send(message, None);
    }

    fn note(&mut self, text: String) {
        self.actions.push_back(Action::Note(text));
    }

    fn resent(&mut self, old: &RequestId, new: &RequestId, root: &RequestId, conversation: Option<usize>) {
        self.conversations.link(new.clone(), old);
        self.actions.push_back(Action::Resent {
            old: old.clone(),
            new: new.clone(),
            root: root.clone(),
            conversation,
        });
    }

    fn ask(&mut self, method: &str, params: Value, origin: QuestionOrigin, seq: Option<u64>) {
        let id = self.next_question;
        self.next_question += 1;
        self.questions.push(Question {
            id,
            method: method.to_owned(),
            params,
            origin,
            asked_by_seq: seq,
        });
        self.actions.push_back(Action::Asked(id));
    }

    fn withdraw_questions(&mut self, which: impl Fn(&QuestionOrigin) -> bool) {
        self.questions.retain(|q| !which(&q.origin));
    }

    fn finish(&mut self, root: &RequestId, last: &RequestId, outcome: Outcome, stopped: Option<String>) {
        let Some(o) = self.owner.remove(root) else { return };
        let task = self.tasks.iter().find(|t| &t.root == root).cloned();
        // A stopped chain leaves requests of it in flight: forget them.
        self.pending
            .retain(|_, p| &p.root != root || p.purpose != Purpose::Owner);
        self.actions.push_back(Action::Done(Completion {
            id: root.clone(),
            last: last.clone(),
            method: o.method,
            outcome,
            rounds: o.rounds,
            stopped,
            task,
        }));
    }
}
