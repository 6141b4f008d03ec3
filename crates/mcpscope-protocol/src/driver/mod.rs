//! The protocol driver: one state machine per session that knows what MCP
//! asks of a client, and does no I/O.
//!
//! Owners (the CLI's blocking `mcpscope_core::client::Client` and the app's
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
mod inbound;
mod requests;
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

    /// The answer as the owner is told it (parsed once, by
    /// [`response_outcome`]: a message can be large).
    fn answered(outcome: Result<Value, ErrorObject>) -> Outcome {
        match outcome {
            Ok(v) => Outcome::Result(v),
            Err(e) => Outcome::Error(e),
        }
    }
}

/// The result or error a response frame carries (a malformed error object is
/// kept as what it says, with the code it gives or -32603).
pub fn response_outcome(f: &Frame) -> Result<Value, ErrorObject> {
    if f.class.kind != Kind::Error {
        return Ok(f.result());
    }
    let v = f.json().unwrap_or(Value::Null);
    Err(v.get("error").and_then(ErrorObject::from_json).unwrap_or_else(|| {
        ErrorObject::new(
            error_code::INTERNAL_ERROR,
            format!(
                "malformed error object: {}",
                crate::text::shorten(&v.get("error").cloned().unwrap_or(Value::Null).to_string(), 120)
            ),
        )
    }))
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
    /// The owner reads the answer from its frame: a result is not parsed
    /// for it, and its outcome is `Null` (an error is still read, and a
    /// modern session's result still is, for the input rounds it may ask).
    pub frame_only: bool,
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
    /// See [`RequestOptions::frame_only`].
    frame_only: bool,
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

    fn send_pending(&mut self, id: RequestId, mut p: Pending) {
        let params = if p.enveloped {
            Some(self.envelope.wrap(p.params.clone()))
        } else if self.era.state == EraState::Legacy {
            // Sent once only: a legacy session has no -32022 retry (nothing
            // is enveloped) and no input rounds (modern only), so the params
            // go with the message rather than a copy of them.
            p.params.take()
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
