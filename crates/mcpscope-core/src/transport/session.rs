//! A live session with one server, owned by a background thread: a child
//! process over stdio ([`crate::transport::stdio`]) or a URL over HTTP
//! ([`crate::transport::http`]), both driven by the one runner in
//! [`crate::transport::runner`].
//!
//! The owner (the desktop UI or the CLI) talks to the session only through two
//! channels: [`Command`]s in, [`Event`]s out. Sending a command never blocks:
//! a UI thread cannot be frozen by a session that is not keeping up (a
//! command that finds the channel full is counted, and the session says so on
//! the timeline). Separate threads write the server's stdin and read its
//! stdout and stderr, so a server that stops reading, floods, or hangs cannot
//! freeze the session thread or its owner.

use crate::transport::event::Event;
use crate::transport::event_log::OpenLog;
use crate::transport::lifecycle;
use crate::transport::process::ServerSpec;
use crate::transport::runner::{OwnerFlags, Pump};
use crate::transport::target::{HttpKind, Target};
use crate::wire::classify::Limits;
use crate::wire::message::{ErrorObject, Message, RequestId};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TrySendError, bounded};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Wakes the owner when events are waiting (the UI's `request_repaint`).
pub type Waker = Arc<dyn Fn() + Send + Sync>;

/// How a session is run. There is no `Default`: a default would have to
/// name the capture format's opener, which lives a floor above (`record`),
/// so the caller passes one to [`SessionOptions::new`]. (An `impl Default`
/// in `record` would hide that upward use in a trait impl.)
///
/// ```compile_fail,E0599
/// let _ = mcpscope_core::transport::session::SessionOptions::default();
/// ```
#[derive(Clone)]
pub struct SessionOptions {
    pub limits: Limits,
    /// Default per-request timeout; `None` waits forever.
    pub request_timeout: Option<Duration>,
    /// Send `notifications/cancelled` for a request that timed out, as the spec suggests.
    pub cancel_on_timeout: bool,
    /// Where to append the JSONL capture.
    pub capture: Option<PathBuf>,
    /// How long to wait for the server to exit after its stdin is closed
    /// (over HTTP: for the exchanges in flight, then for the DELETE).
    pub stdin_close_grace: Duration,
    /// How long to wait after SIGTERM before SIGKILL.
    pub term_grace: Duration,
    /// Bound of the event channel: a consumer that falls this far behind slows
    /// the session down instead of letting memory grow without limit.
    pub event_capacity: usize,
    pub waker: Option<Waker>,
    /// How `capture` is opened: given by whoever builds the options
    /// (`record::capture::open_log` writes the capture format), since this
    /// layer sits below the one that knows the format.
    pub open_log: OpenLog,
    /// Sees every event recorded (OpenTelemetry sent live).
    pub tap: Option<crate::transport::recorder::EventTap>,
    /// Run a Streamable HTTP session on the owner's thread, advanced by
    /// [`Session::recv_event`], and POST on it while nothing else is in
    /// flight and no GET stream is open: for an owner that waits on each
    /// answer (the blocking client), to which a fast server answers sooner
    /// than threads hand a message on. Other transports ignore it.
    pub owner_thread: bool,
}

impl SessionOptions {
    /// The usual options (30 s request timeout, cancel on timeout, 2 s
    /// graces, no capture), opening a capture, when one is named, with `open_log`.
    pub fn new(open_log: OpenLog) -> Self {
        Self {
            limits: Limits::default(),
            request_timeout: Some(Duration::from_secs(30)),
            cancel_on_timeout: true,
            capture: None,
            stdin_close_grace: Duration::from_secs(2),
            term_grace: Duration::from_secs(2),
            event_capacity: 64 * 1024,
            waker: None,
            open_log,
            tap: None,
            owner_thread: false,
        }
    }

    /// How many bytes of received messages may wait between the server and
    /// the owner, on each leg: room for two messages of the largest size
    /// held in memory, so the line cap bounds memory whatever the number
    /// of messages queued.
    pub fn queued_bytes(&self) -> usize {
        self.limits.max_held_line_bytes.saturating_mul(2).max(MIN_QUEUED_BYTES)
    }
}

/// See [`SessionOptions::queued_bytes`]: small caps still queue this much,
/// so ordinary traffic never waits on the budget.
const MIN_QUEUED_BYTES: usize = 16 * 1024 * 1024;

/// What the owner asks of the session.
#[derive(Debug)]
pub enum Command {
    /// Send bytes as they are, followed by a newline. May hold anything,
    /// including malformed JSON or embedded newlines, on purpose.
    Send {
        line: Vec<u8>,
        timeout: Option<Duration>,
        /// Extra HTTP headers for this message (ignored over stdio).
        headers: Vec<(String, String)>,
    },
    /// Cancel an outgoing request with `notifications/cancelled`.
    Cancel {
        id: RequestId,
        reason: Option<String>,
    },
    /// Close stdin, wait, SIGTERM, SIGKILL, as the stdio transport prescribes.
    Shutdown,
    /// Put a note on the timeline (and in the capture), in order with the
    /// frames: e.g. why a request is retried with another protocol version.
    Note {
        text: String,
    },
    /// Record a step of an authorization (its time is set on arrival).
    Auth(Box<crate::transport::event::AuthExchange>),
    App(Box<crate::transport::event::AppMessage>),
    Model(Box<crate::model::record::ModelExchange>),
}

/// The owner's handle on a session. Dropping it shuts the server down and
/// waits until no process of its group is left.
pub struct Session {
    /// `None` once closing: dropping the sender tells the runner to shut down
    /// even when the channel is full.
    commands: Option<Sender<Command>>,
    events: Receiver<Event>,
    next_id: AtomicI64,
    default_timeout: Option<Duration>,
    owner: Arc<OwnerFlags>,
    thread: Option<JoinHandle<()>>,
    /// Set when the session runs on the owner's thread ([`SessionOptions::owner_thread`]).
    pump: Option<Mutex<Box<dyn Pump>>>,
    /// Held while a session run on the owner's thread is live.
    live: Option<lifecycle::LiveGuard>,
}

/// How many commands may wait for the session thread.
const COMMAND_CAPACITY: usize = 1024;

impl Session {
    /// Starts the server on a background thread. Never fails: a spawn failure
    /// arrives as [`Event::SpawnFailed`] followed by [`Event::Closed`].
    pub fn start(spec: ServerSpec, options: SessionOptions) -> Session {
        Self::connect(Target::Stdio(spec), options)
    }

    /// Starts a session with a server over any transport: a child process
    /// (stdio) or a URL (Streamable HTTP, HTTP+SSE). Never fails: a server
    /// that cannot be reached shows as events (`SpawnFailed`, or an
    /// [`Event::Http`] with an error for each message that could not be sent).
    pub fn connect(target: impl Into<Target>, options: SessionOptions) -> Session {
        let target = target.into();
        let (cmd_tx, cmd_rx) = bounded(COMMAND_CAPACITY);
        let default_timeout = options.request_timeout;
        let owner = Arc::new(OwnerFlags::default());
        let flags = owner.clone();
        let live = lifecycle::LiveGuard::new();
        if options.owner_thread
            && let Target::Http(http) = &target
            && http.kind == HttpKind::StreamableHttp
        {
            // The owner takes every event before it runs the next pass, and a
            // pass makes a few: a bound could only stop the one thread that
            // would empty it (the bytes waiting are still bounded, in `Sink`).
            let (ev_tx, ev_rx) = crossbeam_channel::unbounded();
            let pump = crate::transport::http::pumped(http.clone(), options, cmd_rx, ev_tx, flags);
            return Session {
                commands: Some(cmd_tx),
                events: ev_rx,
                next_id: AtomicI64::new(1),
                default_timeout,
                owner,
                thread: None,
                pump: pump.map(Mutex::new),
                live: Some(live),
            };
        }
        let (ev_tx, ev_rx) = bounded(options.event_capacity.max(16));
        // Kept to say why, should the thread not start (the system is out of
        // threads or memory): the session then ends at once, as events.
        let fallback = ev_tx.clone();
        let spawned = std::thread::Builder::new()
            .name("mcpscope-session".into())
            .spawn(move || {
                let _live = live;
                match target {
                    Target::Stdio(spec) => crate::transport::stdio::run(spec, options, cmd_rx, ev_tx, flags),
                    Target::Http(http) => crate::transport::http::run(http, options, cmd_rx, ev_tx, flags),
                }
            });
        let thread = match spawned {
            Ok(t) => Some(t),
            Err(e) => {
                let at = Duration::ZERO;
                let text = format!("mcpscope could not start the session's thread: {e}");
                let _ = fallback.try_send(Event::Note { at, text });
                let _ = fallback.try_send(Event::Closed { at });
                None
            }
        };
        drop(fallback);
        Session {
            commands: Some(cmd_tx),
            events: ev_rx,
            next_id: AtomicI64::new(1),
            default_timeout,
            owner,
            thread,
            pump: None,
            live: None,
        }
    }

    pub fn events(&self) -> &Receiver<Event> {
        &self.events
    }

    /// The next event, waiting at most `wait`. A session run on the owner's
    /// thread is advanced here (and only here: such an owner reads its
    /// events with this, not [`Session::events`]).
    pub fn recv_event(&self, wait: Duration) -> Result<Event, RecvTimeoutError> {
        self.recv_event_until(Instant::now() + wait)
    }

    /// [`Session::recv_event`] until `deadline` (an event already waiting
    /// is taken without reading the clock).
    pub fn recv_event_until(&self, deadline: Instant) -> Result<Event, RecvTimeoutError> {
        let Some(pump) = &self.pump else {
            return self.events.recv_deadline(deadline);
        };
        loop {
            if let Ok(ev) = self.events.try_recv() {
                return Ok(ev);
            }
            let running = pump.lock().unwrap_or_else(PoisonError::into_inner).pump(deadline);
            if let Ok(ev) = self.events.try_recv() {
                return Ok(ev);
            }
            if !running {
                return Err(RecvTimeoutError::Disconnected);
            }
            if Instant::now() >= deadline {
                return Err(RecvTimeoutError::Timeout);
            }
        }
    }

    /// The timeout requests get unless told otherwise.
    pub fn default_timeout(&self) -> Option<Duration> {
        self.default_timeout
    }

    /// A fresh request id (integers counting up from 1).
    pub fn next_id(&self) -> RequestId {
        RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Hands a command to the session thread without ever blocking. A
    /// command that finds the channel full is not sent; the session notes how
    /// many were refused on its timeline. Returns whether it was accepted.
    fn command(&self, c: Command) -> bool {
        let Some(tx) = &self.commands else { return false };
        match tx.try_send(c) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => {
                self.owner.refuse();
                false
            }
            // The session thread only goes away after Closed; a send after
            // that has nobody to act on it, which is what the caller wants anyway.
            Err(TrySendError::Disconnected(_)) => false,
        }
    }

    /// Sends a request with a fresh id and the default timeout.
    pub fn request(&self, method: &str, params: Option<Value>) -> RequestId {
        self.request_with(None, method, params, self.default_timeout)
    }

    /// Sends a request with a chosen id (or a fresh one) and timeout.
    pub fn request_with(
        &self,
        id: Option<RequestId>,
        method: &str,
        params: Option<Value>,
        timeout: Option<Duration>,
    ) -> RequestId {
        let id = id.unwrap_or_else(|| self.next_id());
        let line = Message::request(id.clone(), method, params).to_line();
        self.command(Command::Send {
            line,
            timeout,
            headers: Vec::new(),
        });
        id
    }

    pub fn notify(&self, method: &str, params: Option<Value>) {
        let line = Message::notification(method, params).to_line();
        self.command(Command::Send {
            line,
            timeout: None,
            headers: Vec::new(),
        });
    }

    /// Answers a server-to-client request.
    pub fn respond(&self, id: RequestId, outcome: Result<Value, ErrorObject>) {
        let msg = match outcome {
            Ok(result) => Message::Result { id, result },
            Err(error) => Message::Error { id: Some(id), error },
        };
        self.command(Command::Send {
            line: msg.to_line(),
            timeout: None,
            headers: Vec::new(),
        });
    }

    /// Sends a message the caller built (its id, if any, chosen by the caller:
    /// the protocol driver allocates ids), with extra HTTP headers for it.
    pub fn send(&self, message: &Message, timeout: Option<Duration>, headers: Vec<(String, String)>) {
        self.command(Command::Send {
            line: message.to_line(),
            timeout,
            headers,
        });
    }

    /// Sends a line exactly as given (a newline is appended).
    pub fn send_raw(&self, line: impl Into<Vec<u8>>) {
        self.command(Command::Send {
            line: line.into(),
            timeout: self.default_timeout,
            headers: Vec::new(),
        });
    }

    pub fn cancel(&self, id: RequestId, reason: Option<String>) {
        self.command(Command::Cancel { id, reason });
    }

    /// Puts a note on the timeline, after everything sent so far.
    pub fn note(&self, text: impl Into<String>) {
        self.command(Command::Note { text: text.into() });
    }

    /// Puts a step of an authorization on the timeline (and in the
    /// capture), after everything sent so far.
    pub fn record_auth(&self, exchange: crate::transport::event::AuthExchange) {
        self.command(Command::Auth(Box::new(exchange)));
    }

    /// Puts a message between an MCP App's View and its host on the
    /// timeline (and in the capture), after everything sent so far.
    pub fn record_app(&self, message: crate::transport::event::AppMessage) {
        self.command(Command::App(Box::new(message)));
    }

    /// Puts a model turn (a model in the loop) on the timeline and in the
    /// capture, once its answer is whole; its time is set to when its
    /// request went (now, less the turn's `total`).
    pub fn record_model(&self, exchange: crate::model::record::ModelExchange) {
        self.command(Command::Model(Box::new(exchange)));
    }

    /// Starts shutting down; events keep arriving until [`Event::Closed`].
    pub fn shutdown(&self) {
        // A flag, not only a command: it must not be lost to a full channel.
        self.owner.request_shutdown();
        self.command(Command::Shutdown);
    }

    /// Shuts down and waits for the session to end, returning the events that
    /// had not been read yet.
    pub fn close(&mut self) -> Vec<Event> {
        let mut rest = Vec::new();
        self.close_with(|ev| rest.push(ev));
        rest
    }

    /// Shuts the session down like [`Session::close`], handing each
    /// remaining event to `on_event` as it comes instead of keeping them: a
    /// server that floods until it is killed cannot fill memory meanwhile.
    pub fn close_with(&mut self, mut on_event: impl FnMut(Event)) {
        if let Some(pump) = self.pump.take() {
            // As below: no sender left is a shutdown the runner cannot miss.
            self.commands = None;
            let mut pump = pump.into_inner().unwrap_or_else(PoisonError::into_inner);
            loop {
                self.events.try_iter().for_each(&mut on_event);
                if !pump.pump(Instant::now() + Duration::from_millis(50)) {
                    break;
                }
            }
            self.events.try_iter().for_each(&mut on_event);
            self.live = None;
        }
        if let Some(thread) = self.thread.take() {
            // Dropping the sender is a shutdown the runner cannot miss, even
            // with a full command channel (it acts on what was queued first).
            self.commands = None;
            // Keep draining so a full event channel cannot block the thread.
            loop {
                match self.events.recv_timeout(Duration::from_millis(50)) {
                    Ok(ev) => on_event(ev),
                    Err(RecvTimeoutError::Disconnected) => break,
                    Err(RecvTimeoutError::Timeout) if thread.is_finished() => {
                        self.events.try_iter().for_each(&mut on_event);
                        break;
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                }
            }
            let _ = thread.join();
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.close_with(drop);
    }
}

#[cfg(test)]
mod tests {
    //! The owner's handle without a session thread: what it hands over, and
    //! what it does when the thread is not keeping up.
    use super::*;
    use serde_json::json;

    fn session(capacity: usize, timeout: Option<Duration>) -> (Session, Receiver<Command>) {
        let (cmd_tx, cmd_rx) = bounded(capacity);
        let (_ev_tx, ev_rx) = bounded(1);
        let s = Session {
            commands: Some(cmd_tx),
            events: ev_rx,
            next_id: AtomicI64::new(1),
            default_timeout: timeout,
            owner: Arc::new(OwnerFlags::default()),
            thread: None,
            pump: None,
            live: None,
        };
        (s, cmd_rx)
    }

    fn sent(rx: &Receiver<Command>) -> (Value, Option<Duration>) {
        match rx.try_recv() {
            Ok(Command::Send { line, timeout, .. }) => (serde_json::from_slice(&line).unwrap(), timeout),
            _ => panic!("a Send was expected"),
        }
    }

    #[test]
    fn requests_get_fresh_ids_and_the_default_timeout_answers_carry_theirs() {
        let (s, rx) = session(8, Some(Duration::from_secs(5)));
        assert_eq!(s.request("tools/list", None), RequestId::Number(1));
        assert_eq!(s.request("ping", None), RequestId::Number(2));
        let (first, timeout) = sent(&rx);
        assert_eq!(first, json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
        assert_eq!(timeout, Some(Duration::from_secs(5)));
        sent(&rx);
        // A chosen id and no timeout, as the driver asks.
        let id = s.request_with(Some(RequestId::String("a".into())), "x", Some(json!({})), None);
        assert_eq!(id, RequestId::String("a".into()));
        assert_eq!(sent(&rx).1, None);
        s.respond(RequestId::Number(9), Ok(json!({})));
        assert_eq!(sent(&rx), (json!({"jsonrpc": "2.0", "id": 9, "result": {}}), None));
        s.respond(RequestId::Number(10), Err(ErrorObject::new(-32601, "no")));
        let (error, _) = sent(&rx);
        assert_eq!(error["error"]["code"], -32601);
        assert_eq!(error["id"], 10);
    }

    #[test]
    fn a_full_command_channel_refuses_without_blocking_but_never_loses_a_shutdown() {
        let (s, rx) = session(1, None);
        s.note("fills the channel");
        s.notify("notifications/x", None);
        s.cancel(RequestId::Number(1), None);
        assert_eq!(
            s.owner.state(),
            (2, false),
            "two refused, counted for the runner to say"
        );
        s.shutdown();
        assert_eq!(
            s.owner.state(),
            (3, true),
            "the shutdown command was refused too, its flag was not"
        );
        assert!(matches!(rx.try_recv(), Ok(Command::Note { .. })));
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn a_closed_session_takes_commands_quietly() {
        let (mut s, rx) = session(4, None);
        drop(rx);
        s.request("ping", None);
        assert_eq!(s.owner.state(), (0, false), "nobody to act on it: not a refusal");
        s.close();
        s.note("after close");
    }
}
