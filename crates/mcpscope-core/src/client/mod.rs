//! A blocking client for the CLI, the doctor and tests: a [`Session`] (the
//! transport) driven by the protocol [`Driver`] in a loop.
//!
//! Every protocol decision (era, handshake, retries, input chains, tasks,
//! answers to the server's requests) is the driver's; this file only moves
//! events into it, performs its actions on the session, and blocks until
//! what the caller waits for has happened. Every event is also passed to an
//! observer (e.g. `--trace`).

use crate::driver::{self, Action, Completion, Driver, DriverConfig, Failure, Input, Outcome, RequestOptions};
use crate::protocol::era::{EraChoice, EraDecision};
use crate::protocol::handshake::{Handshake, HandshakeOptions};
use crate::protocol::mrtr::{Conversations, InputPolicy, InputRequired};
use crate::protocol::subscriptions::Filter;
use crate::protocol::tasks::{Flavor, Task};
use crate::transport::event::Event;
use crate::transport::process::{ExitInfo, ServerSpec, SpawnError};
use crate::transport::session::{Session, SessionOptions};
use crate::transport::target::Target;
use crate::wire::frame::Frame;
use crate::wire::message::{ErrorObject, RequestId};
use crossbeam_channel::RecvTimeoutError;
use serde_json::Value;
use std::collections::HashMap;
use std::time::{Duration, Instant};

pub use crate::driver::response_outcome;
use crate::pilot::{Performed, Pilot};
use crate::protocol::auth::AuthError;
use crate::transport::auth::Authorizer;
use crate::transport::auth::gate::Held;
use std::sync::{Arc, Mutex};

pub use crate::protocol::era::EraFailure;
pub use error::ClientError;
use error::{SessionFate, client_error};

mod error;

/// How many pages [`Client::list_all`] follows.
pub const MAX_LIST_PAGES: usize = 100;

/// A list read page by page: the items so far, and what to ask for next.
#[derive(Default)]
struct ListPages {
    items: Vec<Value>,
    pages: usize,
}

impl ListPages {
    /// Keeps a page's `key` items; the params of the next page's request,
    /// or `None` when the list is complete (no `nextCursor`) or
    /// [`MAX_LIST_PAGES`] were read.
    fn take(&mut self, result: &Value, key: &str) -> Option<Value> {
        self.pages += 1;
        if let Some(page) = result.get(key).and_then(Value::as_array) {
            self.items.extend(page.iter().cloned());
        }
        let cursor = result.get("nextCursor").and_then(Value::as_str)?;
        (self.pages < MAX_LIST_PAGES).then(|| serde_json::json!({ "cursor": cursor }))
    }
}

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
    /// The tool's result or error (from `tasks/result`, or inlined by
    /// `tasks/get`), or why there is none.
    pub outcome: Outcome,
    /// Set when the task was cancelled (after `give_up`).
    pub cancelled: bool,
}

/// Sees every event after the client has: handed over, so that one who
/// keeps them (a test run keeps a whole session's) copies nothing.
pub type Observer = Box<dyn FnMut(Event) + Send>;

pub struct Client {
    session: Session,
    pilot: Pilot,
    /// The driver's clock: time since the session was started.
    started_at: Instant,
    /// Over HTTP there is no process to wait for.
    remote: bool,
    observer: Observer,
    policy: InputPolicy,
    era: Option<EraDecision>,
    settled: Option<Result<EraDecision, EraFailure>>,
    /// Completions not collected yet, with the frame that ended them.
    done: HashMap<RequestId, (Completion, Option<Frame>)>,
    statuses: Vec<(RequestId, Task)>,
    listening: HashMap<RequestId, Value>,
    pid: Option<u32>,
    spawn_error: Option<SpawnError>,
    exited: Option<ExitInfo>,
    closed: bool,
    /// Why the last authorization failed (the request then fails with it).
    auth_error: Option<AuthError>,
}

impl Client {
    pub fn start(spec: ServerSpec, options: SessionOptions, observer: Observer) -> Client {
        Self::connect(Target::Stdio(spec), options, observer)
    }

    /// A client for a server over any transport (stdio, Streamable HTTP, HTTP+SSE).
    pub fn connect(target: impl Into<Target>, options: SessionOptions, observer: Observer) -> Client {
        let target = target.into();
        let remote = matches!(target, Target::Http(_));
        let config = DriverConfig {
            request_timeout: options.request_timeout,
            ..DriverConfig::default()
        };
        let started_at = Instant::now();
        Client {
            session: Session::connect(target, options),
            pilot: Pilot::new(Driver::new(config), started_at),
            started_at,
            remote,
            observer,
            policy: InputPolicy::default(),
            era: None,
            settled: None,
            done: HashMap::new(),
            statuses: Vec::new(),
            listening: HashMap::new(),
            pid: None,
            spawn_error: None,
            exited: None,
            closed: false,
            auth_error: None,
        }
    }

    /// Authorize with this authorizer whenever the server asks (its slot
    /// must be the target's `bearer`): a request refused with a challenge
    /// is held back from the driver, authorized, and sent again.
    pub fn with_authorizer(mut self, authorizer: Authorizer) -> Self {
        self.pilot.set_authorizer(Arc::new(Mutex::new(authorizer)));
        self
    }

    /// The authorizer back (its tokens with it), for the next session to the same server.
    pub fn take_authorizer(&mut self) -> Option<Authorizer> {
        let a = self.pilot.take_authorizer()?;
        Arc::try_unwrap(a)
            .ok()
            .map(|m| m.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// The authorizer, if signing in is on (locked: nothing else holds it on the command line).
    pub fn authorizer(&self) -> Option<std::sync::MutexGuard<'_, Authorizer>> {
        self.pilot
            .authorizer()
            .map(|a| a.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// Answer `roots/list` with these roots (URIs like `file:///home/me/project`).
    pub fn with_roots(mut self, roots: Vec<Value>) -> Self {
        self.policy.roots = Some(roots);
        self.apply_policy();
        self
    }

    /// Answer roots, elicitation and sampling (server requests in the legacy
    /// era, input requests in the modern one) as this policy says.
    pub fn with_policy(mut self, policy: InputPolicy) -> Self {
        self.policy = policy;
        self.apply_policy();
        self
    }

    fn apply_policy(&mut self) {
        let config = DriverConfig {
            policy: self.policy.clone(),
            ..self.pilot.driver.config().clone()
        };
        self.pilot.driver.reconfigure(config);
    }

    pub fn policy(&self) -> &InputPolicy {
        &self.policy
    }

    /// The era the session settled on ([`Client::establish`]), if it did.
    pub fn era(&self) -> Option<&EraDecision> {
        self.era.as_ref()
    }

    /// Request id -> first request of its chain of sends.
    pub fn conversations(&self) -> &Conversations {
        self.pilot.driver.conversations()
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    pub fn driver(&self) -> &Driver {
        &self.pilot.driver
    }

    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    pub fn exit_status(&self) -> Option<ExitInfo> {
        self.exited
    }

    /// Whether the server is reached over HTTP.
    pub fn is_remote(&self) -> bool {
        self.remote
    }

    /// Waits until the server can be spoken to: started (stdio) or at once
    /// (HTTP, where a server that cannot be reached fails the first request).
    pub fn wait_started(&mut self, timeout: Duration) -> Result<(), ClientError> {
        if self.remote {
            return Ok(());
        }
        self.wait_spawned(timeout).map(|_| ())
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

    /// Processes events for `d` (e.g. to collect trailing stderr).
    pub fn pump_for(&mut self, d: Duration) {
        let deadline = Instant::now() + d;
        while Instant::now() < deadline && !self.closed {
            self.pump_until(deadline);
        }
    }

    /// Handles one event (or a timer) before `deadline`; false once
    /// nothing more will come or the deadline passed.
    fn pump_until(&mut self, deadline: Instant) -> bool {
        let wakeup = self.pilot.driver.next_wakeup().map(|at| self.started_at + at);
        let until = wakeup.map_or(deadline, |w| w.min(deadline));
        match self.session.recv_event_until(until) {
            Ok(ev) => {
                self.handle(&ev);
                (self.observer)(ev);
                true
            }
            Err(RecvTimeoutError::Timeout) => {
                if wakeup.is_some_and(|w| w <= Instant::now()) {
                    self.pilot.driver.handle(Input::Tick(self.started_at.elapsed()));
                    self.perform(None);
                    return true;
                }
                false
            }
            Err(RecvTimeoutError::Disconnected) => {
                if !self.closed {
                    self.closed = true;
                    self.pilot.driver.handle(Input::Gone("the session ended"));
                    self.perform(None);
                }
                false
            }
        }
    }

    /// Tells the driver what happened and does what it says.
    fn handle(&mut self, ev: &Event) {
        match ev {
            Event::Spawned { pid, .. } => self.pid = Some(*pid),
            Event::SpawnFailed { error, .. } => self.spawn_error = Some(error.clone()),
            Event::Exited { status, .. } => self.exited = Some(*status),
            Event::Closed { .. } => self.closed = true,
            _ => {}
        }
        if let Some(held) = self.pilot.feed(ev) {
            // The driver never hears of the refusal: it waits on.
            self.authorize(held);
            return;
        }
        let frame = match ev {
            Event::Frame(f) => Some(f),
            _ => None,
        };
        self.perform(frame);
    }

    /// Answers a challenge held back from the driver (blocking: the
    /// browser, or the authorization server's redirects), then sends the
    /// request again under a new id, or fails it with the reason.
    fn authorize(&mut self, held: Held) {
        self.auth_error = self.pilot.sign_in_here(&self.session, &held).err();
        self.perform(None);
    }

    /// Performs the driver's actions; `frame` is the one just fed (it ends
    /// whatever completes now).
    fn perform(&mut self, frame: Option<&Frame>) {
        let mut done = |p: Performed| match p {
            // Nobody to ask on the command line: the policy answers.
            Performed::Sent(_) | Performed::Other(Action::Resent { .. } | Action::Asked(_)) => {}
            Performed::Other(Action::Settled(s)) => {
                if let Ok(d) = &s {
                    self.era = Some(d.clone());
                }
                self.settled = Some(s);
            }
            Performed::Other(Action::TaskStatus { id, task }) => self.statuses.push((id, task)),
            Performed::Other(Action::Listening { id, honoured }) => {
                self.listening.insert(id, honoured);
            }
            Performed::Other(Action::Done(c)) => {
                self.done.insert(c.id.clone(), (c, frame.cloned()));
            }
            // Performed by the pilot.
            Performed::Other(
                Action::Send { .. } | Action::SendRaw { .. } | Action::Cancel { .. } | Action::Note(_),
            ) => {}
        };
        self.pilot.perform(&self.session, &mut done);
    }

    /// Blocks until the request `id` ends (or a backstop passes: the session
    /// times requests out itself).
    fn wait_done(&mut self, id: &RequestId, backstop: Option<Duration>) -> (Completion, Option<Frame>) {
        let deadline = backstop.map(|b| Instant::now() + b + Duration::from_secs(2));
        loop {
            if let Some(d) = self.done.remove(id) {
                return d;
            }
            let until = deadline.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
            if !self.pump_until(until) && (self.closed || deadline.is_some_and(|d| Instant::now() >= d)) {
                if let Some(d) = self.done.remove(id) {
                    return d;
                }
                // Nothing more will come: end it the way the driver would.
                let why = if self.closed {
                    "the session ended".to_owned()
                } else {
                    "no answer before the backstop".to_owned()
                };
                self.pilot.driver.cancel(id, &why);
                self.perform(None);
                let (mut c, frame) = self.done.remove(id).unwrap_or_else(|| {
                    let c = Completion {
                        id: id.clone(),
                        last: id.clone(),
                        method: String::new(),
                        outcome: Outcome::Failed(Failure::Cancelled),
                        rounds: Vec::new(),
                        stopped: None,
                        task: None,
                    };
                    (c, None)
                });
                c.outcome = Outcome::Failed(if self.closed {
                    Failure::ServerGone(why)
                } else {
                    Failure::TimedOut { after: backstop }
                });
                return (c, frame);
            }
        }
    }

    /// The error a request that got no answer turns into.
    fn failure_error(&self, method: &str, failure: &Failure, timeout: Option<Duration>) -> ClientError {
        client_error(
            method,
            failure,
            timeout,
            &SessionFate {
                spawn_error: self.spawn_error.as_ref(),
                exited: self.exited,
                auth_error: self.auth_error.as_ref(),
            },
        )
    }

    fn run(&mut self, method: &str, params: Option<Value>, opts: RequestOptions) -> (Completion, Option<Frame>) {
        let timeout = opts.timeout.flatten();
        let id = self.pilot.driver.request_with(method, params, opts);
        self.perform(None);
        self.wait_done(&id, timeout)
    }

    fn response(
        &self,
        method: &str,
        timeout: Duration,
        (c, frame): (Completion, Option<Frame>),
    ) -> Result<Response, ClientError> {
        let outcome = match c.outcome {
            Outcome::Result(v) => Ok(v),
            Outcome::Error(e) => Err(e),
            Outcome::Failed(f) => return Err(self.failure_error(method, &f, Some(timeout))),
        };
        let frame = frame.expect("an answer arrives in a frame");
        Ok(Response { frame, outcome })
    }

    /// Sends a request and waits for its response. Once the session is
    /// modern the params carry the envelope, a -32022 is answered by one
    /// retry with a version both sides speak, and `input_required` rounds
    /// are answered by the policy.
    pub fn request(&mut self, method: &str, params: Option<Value>, timeout: Duration) -> Result<Response, ClientError> {
        self.request_with(method, params, timeout, RequestOptions::default())
    }

    /// [`Client::request`] with the driver's options for it (`timeout` over
    /// theirs).
    pub fn request_with(
        &mut self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
        opts: RequestOptions,
    ) -> Result<Response, ClientError> {
        let opts = RequestOptions {
            timeout: Some(Some(timeout)),
            ..opts
        };
        let c = self.run(method, params, opts);
        self.response(method, timeout, c)
    }

    /// Sends a request without waiting for it (several may be in flight);
    /// [`Client::wait_any`] collects the answers. Its id.
    pub fn send(&mut self, method: &str, params: Option<Value>, timeout: Duration) -> RequestId {
        let id = self
            .pilot
            .driver
            .request_with(method, params, RequestOptions::timeout(timeout));
        self.perform(None);
        id
    }

    /// Waits for the first of `pending` (id, method) to be answered, failed
    /// or timed out (each request's own timeout, as [`Client::send`] set);
    /// `None` only when `pending` is empty.
    pub fn wait_any(
        &mut self,
        pending: &[(RequestId, String)],
        timeout: Duration,
    ) -> Option<(RequestId, Result<Response, ClientError>)> {
        if pending.is_empty() {
            return None;
        }
        let backstop = Instant::now() + timeout + Duration::from_secs(2);
        loop {
            for (id, method) in pending {
                if let Some(done) = self.done.remove(id) {
                    return Some((id.clone(), self.response(method, timeout, done)));
                }
            }
            if !self.pump_until(backstop) && (self.closed || Instant::now() >= backstop) {
                // Nothing more will come for the first one: end it as a
                // lone request would (the others wait their turn).
                let (id, method) = &pending[0];
                let done = self.wait_done(id, Some(timeout));
                return Some((id.clone(), self.response(method, timeout, done)));
            }
        }
    }

    /// The first of `pending` (id, method) that is over (answered, failed
    /// or timed out), waiting at most `wait` for events; `None` when none
    /// is over yet. For callers that wait on other things as well.
    pub fn poll_any(
        &mut self,
        pending: &[(RequestId, String)],
        wait: Duration,
    ) -> Option<(RequestId, Result<Response, ClientError>)> {
        let deadline = Instant::now() + wait;
        loop {
            for (id, method) in pending {
                if let Some(done) = self.done.remove(id) {
                    let timeout = self.session.default_timeout().unwrap_or(wait);
                    return Some((id.clone(), self.response(method, timeout, done)));
                }
            }
            if !self.pump_until(deadline) {
                return None;
            }
        }
    }

    /// Whether the session is over (the server went away).
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Every item of a paginated list (`tools/list`, `skills/list`, …): the
    /// `key` array of each page, following `nextCursor` for at most
    /// [`MAX_LIST_PAGES`] pages (a server that hands out cursors forever
    /// cannot hold the client). The JSON-RPC error of the first page that
    /// failed, if one did.
    pub fn list_all(
        &mut self,
        method: &str,
        key: &str,
        timeout: Duration,
    ) -> Result<Result<Vec<Value>, ErrorObject>, ClientError> {
        let mut pages = ListPages::default();
        let mut params = None;
        loop {
            let response = self.request(method, params.take(), timeout)?;
            let result = match response.outcome {
                Ok(result) => result,
                Err(e) => return Ok(Err(e)),
            };
            // A page is an object; anything else may be one serde_json could
            // not read, which must not pass for a page without items.
            if !result.is_object()
                && let Err(e) = serde_json::from_slice::<Value>(&response.frame.raw)
                && response.frame.json().is_none()
            {
                return Err(ClientError::Unreadable {
                    method: method.to_owned(),
                    why: crate::wire::raw_member::why_unreadable(&e),
                    bytes: response.frame.raw.len(),
                });
            }
            match pages.take(&result, key) {
                Some(next) => params = Some(next),
                None => return Ok(Ok(pages.items)),
            }
        }
    }

    /// Sends a request exactly as given (no envelope) and waits for its response.
    pub fn request_as_is(
        &mut self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
    ) -> Result<Response, ClientError> {
        let opts = RequestOptions {
            as_is: true,
            ..RequestOptions::default()
        };
        self.request_with(method, params, timeout, opts)
    }

    /// Sends a request and follows its multi round-trip chain (every
    /// `input_required` answer is answered by the [`InputPolicy`] and the
    /// request sent again), reporting the rounds it took.
    pub fn request_with_input(
        &mut self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
    ) -> Result<InputOutcome, ClientError> {
        let (c, frame) = self.run(method, params, RequestOptions::timeout(timeout));
        let rounds = c.rounds.clone();
        let stopped = c.stopped.clone();
        let response = self.response(method, timeout, (c, frame))?;
        Ok(InputOutcome {
            response,
            rounds,
            stopped,
        })
    }

    /// Sends a notification (no response is expected).
    pub fn notify(&mut self, method: &str, params: Option<Value>) {
        self.pilot.driver.notify(method, params);
        self.perform(None);
    }

    /// Settles on an era as `choice` says and gets the session ready:
    /// * legacy: `initialize` (+ `notifications/initialized`);
    /// * modern: `server/discover` with the envelope (a -32022 is answered
    ///   by one retry); from then on every request carries the envelope;
    /// * auto: `server/discover` first (waiting at most 10 s); anything but a
    ///   modern answer falls back to `initialize`.
    ///
    /// The decision, and why, is returned, kept ([`Client::era`]) and noted
    /// on the timeline. The outer error is a request that got no answer.
    pub fn establish(
        &mut self,
        choice: EraChoice,
        hs: &HandshakeOptions,
        timeout: Duration,
    ) -> Result<Result<EraDecision, EraFailure>, ClientError> {
        let config = DriverConfig {
            era: choice,
            handshake: hs.clone(),
            policy: self.policy.clone(),
            request_timeout: Some(timeout),
            ..self.pilot.driver.config().clone()
        };
        self.pilot.driver.reconfigure(config);
        self.settled = None;
        self.pilot.driver.start();
        self.perform(None);
        let backstop = Instant::now() + timeout * 3 + Duration::from_secs(2);
        while self.settled.is_none() {
            if !self.pump_until(backstop) && (self.closed || Instant::now() >= backstop) {
                break;
            }
        }
        match self.settled.take() {
            Some(Ok(d)) => Ok(Ok(d)),
            Some(Err(EraFailure::NoAnswer { method, .. })) => {
                let cause = self
                    .pilot
                    .driver
                    .era()
                    .cause
                    .clone()
                    .unwrap_or(Failure::ServerGone(String::new()));
                Err(self.failure_error(&method, &cause, Some(timeout)))
            }
            Some(Err(e)) => Ok(Err(e)),
            None => Err(ClientError::TimedOut {
                method: "the handshake".into(),
                after: timeout,
            }),
        }
    }

    /// `initialize` then, when the answer is usable, `notifications/initialized`.
    /// The inner error is the server's JSON-RPC refusal of `initialize`; an
    /// answer with a version mcpscope cannot use is returned as it is.
    pub fn initialize(
        &mut self,
        options: &HandshakeOptions,
        timeout: Duration,
    ) -> Result<Result<Handshake, ErrorObject>, ClientError> {
        match self.establish(EraChoice::Legacy, options, timeout)? {
            Ok(d) => Ok(Ok(d.handshake.expect("a legacy decision has a handshake"))),
            Err(EraFailure::Handshake(h)) => Ok(Ok(*h)),
            Err(EraFailure::InitializeRefused(e)) => Ok(Err(e)),
            Err(other) => unreachable!("initialize cannot fail as {other}"),
        }
    }

    /// Runs `tools/call` as a task in the form of the session's era and
    /// follows it until it ends (or `give_up` passes: then it is cancelled),
    /// telling `on_status` about every change.
    pub fn run_task(
        &mut self,
        params: Value,
        timeout: Duration,
        give_up: Duration,
        on_status: &mut dyn FnMut(&Task),
    ) -> Result<TaskRun, ClientError> {
        let id = self.pilot.driver.run_task(params, Some(give_up));
        self.perform(None);
        let (c, _) = loop {
            for (_, t) in self.statuses.drain(..) {
                on_status(&t);
            }
            if let Some(d) = self.done.remove(&id) {
                break d;
            }
            let deadline = Instant::now() + give_up + timeout + Duration::from_secs(2);
            if !self.pump_until(deadline) && self.closed {
                break self.wait_done(&id, Some(timeout));
            }
        };
        for (_, t) in self.statuses.drain(..) {
            on_status(&t);
        }
        let run = c.task.clone().unwrap_or_else(|| driver::TaskRun::unstarted(id.clone()));
        if let Outcome::Failed(f @ (Failure::TimedOut { .. } | Failure::NotDelivered { .. } | Failure::ServerGone(_))) =
            &c.outcome
        {
            return Err(self.failure_error(&c.method, f, Some(timeout)));
        }
        Ok(TaskRun {
            flavor: run.flavor,
            transitions: run.transitions,
            outcome: c.outcome,
            cancelled: run.cancelled,
        })
    }

    /// Opens a `subscriptions/listen` stream (modern era) and waits for its
    /// acknowledgement: returns the listen request's id (= the subscription
    /// id every notification on the stream carries) and the filter the server
    /// honours, or why the server refused. The stream stays open (no
    /// timeout); [`Client::stop_listening`] ends it.
    pub fn listen(
        &mut self,
        filter: &Filter,
        timeout: Duration,
    ) -> Result<Result<(RequestId, Value), String>, ClientError> {
        let method = crate::protocol::subscriptions::LISTEN;
        let id = self.pilot.driver.listen(filter);
        self.perform(None);
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(honoured) = self.listening.remove(&id) {
                return Ok(Ok((id, honoured)));
            }
            if let Some((c, _)) = self.done.remove(&id) {
                return match c.outcome {
                    Outcome::Error(e) => Ok(Err(e.to_string())),
                    Outcome::Failed(Failure::Stopped(why)) => Ok(Err(why)),
                    Outcome::Failed(f) => Err(self.failure_error(method, &f, Some(timeout))),
                    Outcome::Result(v) => Ok(Err(crate::text::shorten(&v.to_string(), 200))),
                };
            }
            if !self.pump_until(deadline) && (self.closed || Instant::now() >= deadline) {
                if self.closed {
                    return Err(ClientError::Closed { method: method.into() });
                }
                return Err(ClientError::TimedOut {
                    method: method.into(),
                    after: timeout,
                });
            }
        }
    }

    /// Ends a listen stream (`notifications/cancelled` for its request).
    pub fn stop_listening(&mut self, id: RequestId) {
        self.pilot.driver.cancel(&id, "mcpscope stopped listening");
        self.perform(None);
        self.done.remove(&id);
    }

    /// Shuts the server down and passes the remaining events to the observer.
    pub fn close(mut self) -> Option<ExitInfo> {
        let mut exited = self.exited;
        let observer = &mut self.observer;
        self.session.close_with(|ev| {
            if let Event::Exited { status, .. } = &ev {
                exited = Some(*status);
            }
            observer(ev);
        });
        exited
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_list_is_read_page_by_page_and_no_further_than_the_page_limit() {
        let mut pages = ListPages::default();
        let next = pages.take(&json!({"tools": [{"name": "a"}], "nextCursor": "c2"}), "tools");
        assert_eq!(next, Some(json!({"cursor": "c2"})));
        // A page without the key adds nothing; one without a cursor ends the list.
        assert_eq!(
            pages.take(&json!({"nextCursor": "c3"}), "tools"),
            Some(json!({"cursor": "c3"}))
        );
        assert_eq!(pages.take(&json!({"tools": [{"name": "b"}]}), "tools"), None);
        assert_eq!(pages.items, [json!({"name": "a"}), json!({"name": "b"})]);
        // A server that hands out cursors forever is read MAX_LIST_PAGES times.
        let mut endless = ListPages::default();
        let mut requests = 1;
        while endless
            .take(&json!({"tools": [1], "nextCursor": "again"}), "tools")
            .is_some()
        {
            requests += 1;
        }
        assert_eq!(requests, MAX_LIST_PAGES);
        assert_eq!(endless.items.len(), MAX_LIST_PAGES);
    }
}
