//! The HTTP link behind a [`crate::transport::session::Session`]: Streamable
//! HTTP (2025-03-26 … 2025-11-25) and the older HTTP+SSE transport (2024-11-05).
//!
//! The session thread never blocks on the network. Every POST runs on a worker
//! thread (at most [`MAX_POSTS`] at once, plus a few for responses to the
//! server's own requests), which reads the answer incrementally (one JSON
//! body, or an SSE stream that may carry notifications and server requests
//! before the response) and hands each JSON-RPC message back as a received
//! line. So HTTP sessions produce the same [`Event::Frame`]s as stdio
//! sessions, and the timeline, the lint and the capture work unchanged; what
//! only HTTP has (status codes, content types, session ids, redirects,
//! reconnects) arrives as [`Event::Http`] on the same timeline.
//!
//! Workers report through a bounded channel: a server that streams faster
//! than the session records stops being read (TCP pushes back on it) instead
//! of filling memory.
//!
//! Messages are POSTed in the order they were sent: the next POST waits until
//! the previous one got its response headers, or [`ORDER_WAIT`] at most, so a
//! slow JSON answer cannot hold back a cancellation.
//!
//! Credentials go only where the user pointed: a redirect to another origin
//! is never followed, and an HTTP+SSE `endpoint` on another origin is refused
//! (as the official TypeScript SDK does). URLs are shown and recorded with
//! their userinfo and secret-looking query values masked.

use crate::protocol::auth::dpop;
use crate::protocol::methods;
use crate::transport::budget::ByteBudget;
use crate::transport::event::{Event, HttpInfo};
use crate::transport::runner::{self, Input, Link, Outgoing, OwnerFlags, Sink};
use crate::transport::session::{Command, SessionOptions};
use crate::transport::target::{HttpKind, HttpTarget, Target, mask_url, mask_value};
use crate::wire::classify::Kind;
use crate::wire::frame::Frame;
use crate::wire::framing::{LineEnding, RawLine};
use crate::wire::message::RequestId;
use crate::wire::sse::{SseEvent, SseReader};
use crossbeam_channel::{Receiver, Sender, bounded};
use serde_json::Value;
use std::collections::VecDeque;
use std::io::{BufReader, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod coalescing;
mod exchange;
mod plain;
mod post;
mod reply_shape;
mod streams;
mod workers;
pub(crate) use exchange::joined_headers;
use exchange::*;
use post::*;
use streams::*;

/// How long a POST may hold back the next one while waiting for its response headers.
pub const ORDER_WAIT: Duration = Duration::from_millis(150);

/// At most this many POSTs are in flight (each holds a thread and a socket);
/// more wait in the queue.
pub const MAX_POSTS: usize = 16;
/// Extra POSTs allowed for responses to the server's requests, so a server
/// that holds [`MAX_POSTS`] requests open until it gets an answer cannot
/// deadlock the session.
const RESPONSE_POSTS: usize = 4;
/// Messages that may wait for a POST slot; beyond this a message fails at once.
const MAX_QUEUED: usize = 1024;
/// What workers may have handed over and the session thread not yet
/// recorded: beyond this they stop reading their sockets.
const INPUT_QUEUE: usize = 256;
/// Redirects followed for one request at most.
const MAX_REDIRECTS: usize = 5;

const ACCEPT_POST: &str = "application/json, text/event-stream";

/// Response headers worth showing (the reverse proxy records the same).
pub(crate) const RELEVANT: &[&str] = &[
    "content-type",
    "mcp-session-id",
    "mcp-protocol-version",
    "content-length",
    "location",
    "www-authenticate",
    "retry-after",
    "allow",
    "dpop-nonce",
];

/// The gate id of the GET stream's first answer (POST workers count up from 0).
const GET_WORKER: u64 = u64::MAX;
/// How long `notifications/initialized` waits for the GET stream to open.
const GET_WAIT: Duration = Duration::from_secs(2);
/// An inline POST gives up this long after its request timed out, so the
/// runner has said the timeout (and sent the cancellation) by then.
const INLINE_MARGIN: Duration = Duration::from_millis(100);
/// How often the watcher of inline POSTs looks at them.
const INLINE_WATCH: Duration = Duration::from_millis(100);

/// Cleared when the thread holding it ends.
struct LiveFlag(Arc<AtomicBool>);

impl Drop for LiveFlag {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

/// What the worker threads tell the session thread (besides received messages).
pub(crate) enum HttpMsg {
    /// An HTTP fact for the timeline. `worker` is set for a POST's response
    /// headers (which open the ordering gate).
    Http {
        info: HttpInfo,
        at: Instant,
        worker: Option<u64>,
        /// `Mcp-Session-Id` of a response to `initialize`.
        new_session: Option<Option<String>>,
        /// The answer is one body of this length, said in advance and small
        /// enough to read at once (what lets the next POST be made inline).
        whole: Option<u64>,
    },
    /// An exchange failed: the request it carried gets no response.
    Failed {
        info: HttpInfo,
        at: Instant,
        expired_session: bool,
    },
    WorkerDone {
        worker: u64,
    },
    /// HTTP+SSE: the URL to POST to, from the `endpoint` event.
    Endpoint {
        url: String,
    },
    /// HTTP+SSE: no message can be delivered any more (the stream is gone,
    /// never opened, or named an endpoint that was refused).
    LegacyDown {
        reason: String,
    },
    DeleteDone,
}

type Tx = Sender<Input<HttpMsg>>;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    Running,
    /// Sending what is queued and waiting for the POSTs in flight.
    Draining {
        deadline: Instant,
    },
    /// DELETE sent; waiting for its answer.
    Deleting {
        deadline: Instant,
    },
    Done,
}

/// What every worker needs: the HTTP agent, the channel home, the stop flag.
#[derive(Clone)]
struct Ctx {
    agent: ureq::Agent,
    tx: Tx,
    closing: Arc<AtomicBool>,
    target: Arc<HttpTarget>,
    /// The most one message (a body, an SSE event) may hold in memory.
    max_held: usize,
    /// Bytes read and not yet taken by the runner (see `transport::budget`).
    budget: Arc<ByteBudget>,
    /// Set for a POST made on the session's own thread: how long each of
    /// its phases may take (its request's timeout), since nothing else would end it.
    timeout: Option<Duration>,
    /// The agent such POSTs go through (see [`watch_inline`]) when
    /// `plain` does not make them.
    inline_agent: Option<ureq::Agent>,
    /// The lean client such POSTs go through first.
    plain: Option<plain::PlainClient>,
}

pub(crate) fn run(
    target: HttpTarget,
    options: SessionOptions,
    commands: Receiver<Command>,
    events: Sender<Event>,
    owner: Arc<OwnerFlags>,
) {
    if let Some(session) = start(target, options, commands, events, owner) {
        session.run();
    }
}

/// A session run by its owner's thread ([`runner::Pump`]): the blocking
/// client's, with POSTs made inline when nothing else is going on.
pub(crate) fn pumped(
    target: HttpTarget,
    options: SessionOptions,
    commands: Receiver<Command>,
    events: Sender<Event>,
    owner: Arc<OwnerFlags>,
) -> Option<Box<dyn runner::Pump>> {
    let session = start(target, options, commands, events, owner)?;
    Some(Box::new(session))
}

/// An agent as the session uses it: redirects and statuses left to us, and
/// a request's head and body sent in one write.
fn session_agent(connect_timeout: Duration) -> ureq::Agent {
    use ureq::unversioned::transport::{Connector, DefaultConnector};
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        // Redirects are handled (and recorded) here, never followed blindly.
        .max_redirects(0)
        .timeout_connect(Some(connect_timeout))
        .user_agent(concat!("mcpscope/", env!("CARGO_PKG_VERSION")))
        .build();
    let connector = DefaultConnector::new().chain(coalescing::CoalescingConnector);
    ureq::Agent::with_parts(
        config,
        connector,
        ureq::unversioned::resolver::DefaultResolver::default(),
    )
}

/// The link, ready to run; `None` when mcpscope is stopping (said, and `Closed`).
fn start(
    target: HttpTarget,
    options: SessionOptions,
    commands: Receiver<Command>,
    events: Sender<Event>,
    owner: Arc<OwnerFlags>,
) -> Option<runner::SessionRunner<HttpLink>> {
    let mut sink = runner::open_sink(&options, &Target::Http(target.clone()), events);
    let new_agent = || session_agent(target.connect_timeout);
    let agent = new_agent();
    let inline = options.owner_thread && target.kind == HttpKind::StreamableHttp;
    // ureq reads a proxy from the environment: then every request is its.
    let plain = (inline && agent.config().proxy().is_none()).then(plain::PlainClient::default);
    let (tx, inputs) = bounded::<Input<HttpMsg>>(INPUT_QUEUE);
    let ctx = Ctx {
        agent,
        tx,
        closing: Arc::new(AtomicBool::new(false)),
        target: Arc::new(target.clone()),
        max_held: options.limits.max_held_line_bytes,
        budget: sink.input_budget(),
        timeout: None,
        // Its own, so that ending a POST made inline (a stop, its deadline)
        // leaves the session's agent for the rest (the DELETE).
        inline_agent: inline.then(new_agent),
        plain,
    };
    let post_url = match target.kind {
        HttpKind::StreamableHttp => Some(target.url.clone()),
        HttpKind::Sse => None,
    };
    let what = match target.kind {
        HttpKind::StreamableHttp => format!("connecting to {} over Streamable HTTP", mask_url(&target.url)),
        HttpKind::Sse => format!("connecting to {} over HTTP+SSE (2024-11-05)", mask_url(&target.url)),
    };
    sink.note(what);
    if crate::transport::lifecycle::stopping() {
        sink.note("not connecting: mcpscope is stopping");
        let at = sink.recorder.now();
        sink.emit(Event::Closed { at });
        sink.flush_and_wake();
        return None;
    }
    let inline_until = Arc::new(Mutex::new(None));
    let inline_broken = Arc::new(AtomicBool::new(false));
    let inline_watch = match &ctx.inline_agent {
        Some(agent) => watch_inline(agent, ctx.plain.clone(), inline_until.clone(), inline_broken.clone()),
        None => None,
    };
    let mut link = HttpLink {
        ctx,
        drain_grace: options.stdin_close_grace,
        session_id: None,
        protocol_version: None,
        post_url,
        legacy_down: None,
        queue: VecDeque::new(),
        gate: None,
        next_worker: 0,
        in_flight: 0,
        capped_noted: false,
        get_after: None,
        get_started: false,
        phase: Phase::Running,
        posts: workers::Workers::new("mcpscope-post"),
        inline_until,
        inline_broken,
        answers_whole: false,
        over_inline: Vec::new(),
        whole_in_flight: Vec::new(),
        get_live: Arc::new(AtomicBool::new(false)),
        inline_watch,
    };
    if target.kind == HttpKind::Sse {
        let ctx = link.ctx.clone();
        if let Err(e) = runner::spawn_named("mcpscope-sse-stream", move || legacy_stream(ctx)) {
            link.legacy_down = Some(format!("could not start the SSE reader thread: {e}"));
        }
    }
    Some(runner::SessionRunner::new(link, sink, options, commands, inputs, owner))
}

/// A POST made on the session's own thread cannot see a stop (a signal)
/// while it waits, and ureq's per-phase timeouts can add up past its
/// request's deadline: this thread looks every [`INLINE_WATCH`] and ends
/// such a POST (closing the inline agent's connections) when either comes.
/// The inline agent is then spent (`broken`): later POSTs go to workers. It
/// ends when the link is dropped (its sender with it). `None` when the
/// thread could not start (then nothing is POSTed inline).
fn watch_inline(
    agent: &ureq::Agent,
    plain: Option<plain::PlainClient>,
    until: Arc<Mutex<Option<Instant>>>,
    broken: Arc<AtomicBool>,
) -> Option<Sender<()>> {
    let (alive, gone) = bounded::<()>(0);
    let agent = agent.clone();
    runner::spawn_named("mcpscope-inline-watch", move || {
        while let Err(crossbeam_channel::RecvTimeoutError::Timeout) = gone.recv_timeout(INLINE_WATCH) {
            let busy_until = *until.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let Some(deadline) = busy_until else { continue };
            if crate::transport::lifecycle::stopping() || Instant::now() >= deadline {
                broken.store(true, Ordering::SeqCst);
                agent.shutdown();
                if let Some(plain) = &plain {
                    plain.shutdown();
                }
                return;
            }
        }
    })
    .ok()
    .map(|()| alive)
}

struct HttpLink {
    ctx: Ctx,
    drain_grace: Duration,
    session_id: Option<String>,
    protocol_version: Option<String>,
    /// Where messages are POSTed: the URL (Streamable HTTP) or the endpoint
    /// the SSE stream named (HTTP+SSE; `None` until it did).
    post_url: Option<String>,
    /// HTTP+SSE: why no message can be delivered any more.
    legacy_down: Option<String>,
    queue: VecDeque<Outgoing>,
    /// The POST the next one waits for, and until when.
    gate: Option<(u64, Instant)>,
    next_worker: u64,
    in_flight: usize,
    /// Whether the timeline already says that POSTs are being held back.
    capped_noted: bool,
    /// Open the GET stream once this worker (the `initialized` POST) answers.
    get_after: Option<u64>,
    get_started: bool,
    phase: Phase,
    /// The threads POSTs run on.
    posts: workers::Workers,
    /// While one is: when it must be over (see [`watch_inline`]).
    inline_until: Arc<Mutex<Option<Instant>>>,
    /// Set once the watcher ended one: no more are made.
    inline_broken: Arc<AtomicBool>,
    /// Whether the last POST was answered with one body of a length said in
    /// advance: only then is the next one made inline (an SSE answer read on
    /// a worker would be cut by the inline POST's timeouts).
    answers_whole: bool,
    /// POSTs made inline that were over when they returned, their
    /// `WorkerDone` not taken yet (it frees no slot).
    over_inline: Vec<u64>,
    /// POSTs in flight whose answer is one body of a said length (worker,
    /// length): what is left of them is bytes, never a question from the
    /// server, so a POST may be made inline beside them.
    whole_in_flight: Vec<(u64, u64)>,
    /// Whether the GET stream's thread is running: while it is, the server
    /// may ask something there that its answer to a POST waits for, so no
    /// POST is made inline.
    get_live: Arc<AtomicBool>,
    /// Set when a POST may be made on the session's thread (see [`pumped`]):
    /// the thread of [`watch_inline`], which ends when this is dropped.
    inline_watch: Option<Sender<()>>,
}

impl HttpLink {
    fn post_info(&self, request_id: Option<RequestId>, error: String) -> HttpInfo {
        HttpInfo {
            method: "POST".into(),
            url: mask_url(self.post_url.as_deref().unwrap_or(&self.ctx.target.url)),
            request_id,
            error: Some(error),
            ..HttpInfo::default()
        }
    }

    /// Which queued message may be POSTed now, if any: the oldest while
    /// there is room; only a response once [`MAX_POSTS`] are in flight.
    fn next_sendable(&self) -> Option<usize> {
        if self.queue.is_empty() {
            None
        } else if self.in_flight < MAX_POSTS {
            Some(0)
        } else if self.in_flight < MAX_POSTS + RESPONSE_POSTS {
            self.queue.iter().position(|o| o.is_response)
        } else {
            None
        }
    }

    /// POSTs queued messages, in order, as far as the ordering gate and the
    /// limit on POSTs in flight allow.
    fn dispatch(&mut self, sink: &mut Sink) {
        if let Some((_, until)) = self.gate
            && Instant::now() < until
            && self.phase == Phase::Running
        {
            return;
        }
        self.gate = None;
        if let Some(reason) = self.legacy_down.clone() {
            while let Some(out) = self.queue.pop_front() {
                let info = self.post_info(out.request_id, reason.clone());
                sink.fail(info, Instant::now());
            }
            return;
        }
        let Some(url) = self.post_url.clone() else {
            return; // HTTP+SSE: waiting for the endpoint event.
        };
        loop {
            let Some(idx) = self.next_sendable() else {
                if !self.queue.is_empty() && !self.capped_noted {
                    self.capped_noted = true;
                    sink.note(format!(
                        "{} POSTs are in flight: {} message(s) wait until one is answered",
                        self.in_flight,
                        self.queue.len()
                    ));
                }
                return;
            };
            let Some(out) = self.queue.remove(idx) else { return };
            if out.method.as_deref() == Some(methods::INITIALIZED)
                && self.ctx.target.kind == HttpKind::StreamableHttp
                && self.ctx.target.open_get_stream
                && !self.get_started
                && self.session_id.is_some()
                && self.phase == Phase::Running
            {
                // Open the GET stream first: servers often announce things
                // (tools/list_changed, log messages) the moment they see
                // `initialized`, and with no stream open those are lost.
                self.queue.insert(idx, out);
                self.start_get_stream(sink);
                self.gate = Some((GET_WORKER, Instant::now() + GET_WAIT));
                return;
            }
            let worker = self.next_worker;
            self.next_worker += 1;
            let is_initialize = out.method.as_deref() == Some(methods::INITIALIZE);
            let get_after = out.method.as_deref() == Some(methods::INITIALIZED)
                && self.ctx.target.kind == HttpKind::StreamableHttp
                && self.ctx.target.open_get_stream
                && !self.get_started;
            let request_id = out.request_id.clone();
            let job = PostJob {
                worker,
                url: url.clone(),
                // A new session starts without the old session's headers.
                session_id: if is_initialize { None } else { self.session_id.clone() },
                protocol_version: if is_initialize {
                    None
                } else {
                    self.protocol_version.clone()
                },
                out,
                is_initialize,
            };
            let mut ctx = self.ctx.clone();
            let mut over = false;
            let started = if self.inline_now(&job.out) {
                ctx.timeout = job.out.timeout.map(|t| t + INLINE_MARGIN);
                over = post_inline(ctx, job, &self.posts);
                self.set_inline_until(None);
                Ok(())
            } else {
                self.posts.run(move || post(ctx, job))
            };
            if let Err(e) = started {
                let info = self.post_info(request_id, format!("could not start a POST worker thread: {e}"));
                sink.fail(info, Instant::now());
                continue;
            }
            // A POST that is over holds no slot, though its last message
            // (`WorkerDone`) is still on its way here: the next request may
            // go inline too, whichever the runner takes first.
            if over {
                self.over_inline.push(worker);
            } else {
                self.in_flight += 1;
            }
            self.capped_noted = false;
            if get_after {
                self.get_after = Some(worker);
            }
            if self.phase == Phase::Running {
                self.gate = Some((worker, Instant::now() + ORDER_WAIT));
                return;
            }
        }
    }

    /// Whether what a POST made inline hands over (a few messages, a body
    /// of at most `max_held`) fits beside what waits to be taken and what
    /// the POSTs still in flight will hand over: this thread is the one that
    /// takes it all, so it must never wait for room.
    fn room_for_one_answer(&self) -> bool {
        // Its own: the exchange's (Http, Received, Failed, WorkerDone) and a
        // note per redirect followed; each in flight: what is left of its.
        let messages = self.ctx.tx.len() + 4 + MAX_REDIRECTS + 1 + 4 * self.in_flight;
        let coming: u64 = self.whole_in_flight.iter().map(|(_, n)| n).sum();
        let bytes = (self.ctx.budget.held() as u64)
            .saturating_add(coming)
            .saturating_add(self.ctx.max_held as u64);
        messages <= INPUT_QUEUE && bytes <= self.ctx.budget.limit() as u64
    }

    /// Whether this POST may be made on this thread: a request with a
    /// timeout (which bounds the wait; the owner waits for its answer
    /// anyway), the last answer a whole body, nothing in flight but whole
    /// bodies, no GET stream open (the server has no other way to ask
    /// something of the session meanwhile), and room for its answer among
    /// what waits to be taken. Marks the thread busy when it may.
    fn inline_now(&self, out: &Outgoing) -> bool {
        let Some(timeout) = out.timeout else { return false };
        if !(self.inline_watch.is_some()
            && out.request_id.is_some()
            && self.answers_whole
            && self.in_flight == self.whole_in_flight.len()
            && self.phase == Phase::Running
            && !self.inline_broken.load(Ordering::SeqCst)
            && !self.get_live.load(Ordering::SeqCst)
            && self.room_for_one_answer())
        {
            return false;
        }
        // Busy first, then the stop looked at: a stop either finds it busy
        // (and the watcher ends it) or is seen here.
        self.set_inline_until(Some(Instant::now() + timeout + INLINE_MARGIN + INLINE_WATCH));
        if crate::transport::lifecycle::stopping() {
            self.set_inline_until(None);
            return false;
        }
        true
    }

    /// Marks a POST made inline under way until then (`None`: none is).
    fn set_inline_until(&self, deadline: Option<Instant>) {
        *self
            .inline_until
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = deadline;
    }

    /// A POST got its answer (or gave up): the next one may go, and the GET
    /// stream may open once `initialized` is through.
    fn opened(&mut self, sink: &mut Sink, worker: u64) {
        if self.gate.is_some_and(|(w, _)| w == worker) {
            self.gate = None;
            self.dispatch(sink);
        }
        if self.get_after == Some(worker) && !self.get_started && self.phase == Phase::Running {
            self.get_after = None;
            self.start_get_stream(sink);
        }
    }

    fn start_get_stream(&mut self, sink: &mut Sink) {
        self.get_started = true;
        let ctx = self.ctx.clone();
        let session_id = self.session_id.clone();
        let protocol_version = self.protocol_version.clone();
        self.get_live.store(true, Ordering::SeqCst);
        let live = LiveFlag(self.get_live.clone());
        if let Err(e) = runner::spawn_named("mcpscope-get-stream", move || {
            let _live = live;
            get_stream(ctx, session_id, protocol_version)
        }) {
            sink.note(format!("could not start the GET stream thread: {e}"));
            if self.gate.is_some_and(|(w, _)| w == GET_WORKER) {
                self.gate = None;
            }
        }
    }

    fn start_delete(&mut self, sink: &mut Sink) {
        match (&self.session_id, self.ctx.target.kind) {
            (Some(sid), HttpKind::StreamableHttp) => {
                let ctx = self.ctx.clone();
                let sid = sid.clone();
                let pv = self.protocol_version.clone();
                self.phase = Phase::Deleting {
                    deadline: Instant::now() + self.drain_grace.max(Duration::from_millis(500)),
                };
                if let Err(e) = runner::spawn_named("mcpscope-delete", move || delete(ctx, sid, pv)) {
                    sink.note(format!("could not start the DELETE thread: {e}"));
                    self.phase = Phase::Done;
                }
            }
            _ => self.phase = Phase::Done,
        }
    }
}

impl Link for HttpLink {
    type Msg = HttpMsg;

    /// An HTTP body is one message, newlines and all.
    fn split(&self, body: &[u8]) -> Vec<RawLine> {
        vec![RawLine {
            bytes: body.to_vec(),
            ending: LineEnding::Lf,
        }]
    }

    fn send(&mut self, sink: &mut Sink, out: Outgoing) {
        if matches!(self.phase, Phase::Deleting { .. } | Phase::Done) {
            let info = self.post_info(
                out.request_id,
                "the session is closing: the message was not sent".into(),
            );
            sink.fail(info, Instant::now());
            return;
        }
        if self.queue.len() >= MAX_QUEUED {
            let info = self.post_info(
                out.request_id,
                format!("not sent: {MAX_QUEUED} messages already wait for the server to answer earlier POSTs"),
            );
            sink.fail(info, Instant::now());
            return;
        }
        self.queue.push_back(out);
        self.dispatch(sink);
    }

    fn observed(&mut self, frame: &Frame) {
        let answered_initialize = matches!(frame.class.kind, Kind::Result)
            && frame.link.as_ref().is_some_and(|l| l.method == methods::INITIALIZE);
        if answered_initialize
            && let Some(v) = frame.json()
            && let Some(pv) = v.pointer("/result/protocolVersion").and_then(Value::as_str)
        {
            self.protocol_version = Some(pv.to_owned());
        }
    }

    fn on_msg(&mut self, sink: &mut Sink, msg: HttpMsg) {
        match msg {
            HttpMsg::Http {
                mut info,
                at,
                worker,
                new_session,
                whole,
            } => {
                if let Some(w) = worker.filter(|w| *w != GET_WORKER) {
                    // A request's answer says how the server answers (a
                    // notification's 202 does not).
                    if info.request_id.is_some() {
                        self.answers_whole = whole.is_some();
                    }
                    if let Some(n) = whole
                        && !self.over_inline.contains(&w)
                    {
                        self.whole_in_flight.push((w, n));
                    }
                }
                if let Some(sid) = new_session {
                    if let Some(s) = &sid {
                        info.text = format!("session {s} started; {}", info.text)
                            .trim_end_matches("; ")
                            .into();
                    }
                    self.session_id = sid;
                    self.protocol_version = None;
                }
                sink.http(info, at);
                if let Some(w) = worker {
                    self.opened(sink, w);
                }
            }
            HttpMsg::Failed {
                mut info,
                at,
                expired_session,
            } => {
                if expired_session {
                    self.session_id = None;
                    self.protocol_version = None;
                }
                // A JSON-RPC error in the body may already have answered it.
                let still_waiting = info.request_id.as_ref().is_some_and(|id| {
                    sink.recorder
                        .correlator()
                        .is_pending(crate::wire::frame::Direction::Out, id)
                });
                if !still_waiting && info.request_id.is_some() {
                    info.request_id = None;
                }
                sink.fail(info, at);
            }
            HttpMsg::WorkerDone { worker } => {
                self.whole_in_flight.retain(|(w, _)| *w != worker);
                if let Some(i) = self.over_inline.iter().position(|w| *w == worker) {
                    self.over_inline.swap_remove(i);
                } else {
                    self.in_flight = self.in_flight.saturating_sub(1);
                }
                self.opened(sink, worker);
                if !self.queue.is_empty() {
                    self.dispatch(sink);
                }
            }
            HttpMsg::Endpoint { url } => {
                self.post_url = Some(url);
                self.dispatch(sink);
            }
            HttpMsg::LegacyDown { reason } => {
                // The first reason is the one that matters (e.g. a refused endpoint).
                self.legacy_down.get_or_insert(reason);
                self.dispatch(sink);
            }
            HttpMsg::DeleteDone => {
                if matches!(self.phase, Phase::Deleting { .. }) {
                    self.phase = Phase::Done;
                }
            }
        }
    }

    fn begin_shutdown(&mut self, sink: &mut Sink) {
        if self.phase != Phase::Running {
            return;
        }
        self.phase = Phase::Draining {
            deadline: Instant::now() + self.drain_grace,
        };
        self.ctx.closing.store(true, Ordering::SeqCst);
        self.dispatch(sink);
    }

    fn on_tick(&mut self, sink: &mut Sink) {
        if self.gate.is_some_and(|(_, t)| Instant::now() >= t) {
            self.gate = None;
            self.dispatch(sink);
        }
        // (A running session has no deadline of its own: no clock to read.)
        if matches!(self.phase, Phase::Running | Phase::Done) {
            return;
        }
        let now = Instant::now();
        match self.phase {
            Phase::Draining { deadline } if (self.in_flight == 0 && self.queue.is_empty()) || now >= deadline => {
                if self.in_flight > 0 {
                    sink.note(format!("closing with {} HTTP exchange(s) still open", self.in_flight));
                }
                for out in std::mem::take(&mut self.queue) {
                    let info = self.post_info(out.request_id, "the session closed before this message was sent".into());
                    sink.fail(info, now);
                }
                self.start_delete(sink);
            }
            Phase::Deleting { deadline } if now >= deadline => {
                sink.note("DELETE got no answer in time; closing anyway");
                self.phase = Phase::Done;
            }
            _ => {}
        }
    }

    fn next_wakeup(&self) -> Option<Instant> {
        let gate = self.gate.map(|(_, t)| t);
        let phase = match self.phase {
            Phase::Draining { deadline } | Phase::Deleting { deadline } => Some(deadline),
            Phase::Running | Phase::Done => None,
        };
        [gate, phase].into_iter().flatten().min()
    }

    fn open(&self) -> bool {
        self.phase == Phase::Running
    }

    fn finished(&self) -> bool {
        self.phase == Phase::Done
    }

    fn finish(&mut self, _sink: &mut Sink) {
        // Interrupt every read still blocked on a socket (the GET stream,
        // slow responses): no thread outlives the session for long.
        self.ctx.closing.store(true, Ordering::SeqCst);
        self.ctx.agent.clone().shutdown();
        // An answer a POST made inline handed to a worker reads through one of these.
        if let Some(agent) = &self.ctx.inline_agent {
            agent.clone().shutdown();
        }
        if let Some(plain) = &self.ctx.plain {
            plain.shutdown();
        }
    }
}

struct PostJob {
    worker: u64,
    url: String,
    session_id: Option<String>,
    protocol_version: Option<String>,
    out: Outgoing,
    is_initialize: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dpop_bound_token_goes_with_a_proof_of_each_request() {
        let target = HttpTarget::streamable("http://127.0.0.1:9/mcp");
        let key = std::sync::Arc::new(dpop::DpopKey::generate().unwrap());
        target.bearer.set_bound(Some("tok".into()), Some(key));
        target.bearer.set_nonce("rs-nonce".into());
        let h = Headers::new(&target, "POST", "http://127.0.0.1:9/mcp?x=1");
        let wire: std::collections::HashMap<_, _> = h.wire.iter().cloned().collect();
        assert_eq!(wire["Authorization"], "DPoP tok");
        let proof = crate::protocol::auth::jwt::decode("dpop", &wire["DPoP"], 0).unwrap();
        assert_eq!(proof.claims["htm"], "POST");
        assert_eq!(proof.claims["htu"], "http://127.0.0.1:9/mcp");
        assert_eq!(proof.claims["ath"], dpop::token_hash("tok"));
        assert_eq!(proof.claims["nonce"], "rs-nonce");
        let again = Headers::new(&target, "POST", "http://127.0.0.1:9/mcp");
        let again: std::collections::HashMap<_, _> = again.wire.iter().cloned().collect();
        assert_ne!(wire["DPoP"], again["DPoP"], "a fresh proof per request");
        // Nothing secret in what is recorded.
        let shown = h.shown();
        assert!(
            shown.iter().all(|(_, v)| !v.contains("tok") || v == "DPoP ****"),
            "{shown:?}"
        );
        assert!(shown.iter().any(|(k, v)| k == "DPoP" && v == "****"));
        assert_eq!(h.into_info("POST", "http://127.0.0.1:9/mcp").sent, shown);
        // A Bearer token has no proof.
        target.bearer.set(Some("tok".into()));
        let plain = Headers::new(&target, "GET", "http://127.0.0.1:9/mcp");
        assert!(
            plain
                .wire
                .iter()
                .any(|(k, v)| k == "Authorization" && v == "Bearer tok")
        );
        assert!(!plain.wire.iter().any(|(k, _)| k == "DPoP"));
    }

    #[test]
    fn answers_matches_the_response_only() {
        let id = RequestId::Number(3);
        assert_eq!(answers(br#"{"jsonrpc":"2.0","id":3,"result":{}}"#, &id), Answer::Direct);
        assert_eq!(
            answers(br#"{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"x"}}"#, &id),
            Answer::Direct
        );
        assert_eq!(answers(br#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#, &id), Answer::No);
        assert_eq!(answers(br#"{"jsonrpc":"2.0","id":"3","result":{}}"#, &id), Answer::No);
        assert_eq!(answers(b"<html>", &id), Answer::No);
        assert_eq!(
            answers(br#"[{"jsonrpc":"2.0","id":3,"result":{}}]"#, &id),
            Answer::InBatch
        );
        assert_eq!(answers(br#"[{"jsonrpc":"2.0","id":4,"result":{}}]"#, &id), Answer::No);
        // A null result is a result; a repeated member counts as its last.
        assert_eq!(
            answers(br#"{"jsonrpc":"2.0","id":3,"result":null}"#, &id),
            Answer::Direct
        );
        assert_eq!(
            answers(br#"{"jsonrpc":"2.0","id":4,"id":3,"result":{}}"#, &id),
            Answer::Direct
        );
        assert_eq!(
            answers(br#"{"jsonrpc":"2.0","id":3,"id":4,"result":{}}"#, &id),
            Answer::No
        );
        assert_eq!(answers(br#"{"jsonrpc":"2.0","id":null,"error":{}}"#, &id), Answer::No);
        // Not JSON (a lone surrogate, a number out of range) answers nothing,
        // wherever in the message it is.
        assert_eq!(
            answers(br#"{"jsonrpc":"2.0","id":3,"result":{"t":"\ud800"}}"#, &id),
            Answer::No
        );
        assert_eq!(
            answers(br#"{"jsonrpc":"2.0","id":3,"result":{"n":1e400}}"#, &id),
            Answer::No
        );
    }

    #[test]
    fn wanted_headers_come_in_the_wanted_order_each_once_repeats_joined() {
        let resp = ureq::http::Response::builder()
            .header("WWW-Authenticate", "Bearer realm=\"a\"")
            .header("X-Other", "no")
            .header("Content-Type", "application/json")
            .header("www-authenticate", "DPoP algs=\"ES256\"")
            .header("mcp-session-id", "s\u{e9}".as_bytes())
            .body(ureq::Body::builder().data(Vec::new()))
            .unwrap();
        assert_eq!(
            joined_headers(&resp, RELEVANT),
            [
                ("content-type".to_owned(), "application/json".to_owned()),
                ("mcp-session-id".to_owned(), "s\u{e9}".to_owned()),
                (
                    "www-authenticate".to_owned(),
                    "Bearer realm=\"a\", DPoP algs=\"ES256\"".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn content_types() {
        assert!(is_json("application/json; charset=utf-8"));
        assert!(is_json("application/vnd.api+json"));
        assert!(!is_json("text/html"));
        assert!(is_sse("text/event-stream; charset=utf-8"));
        assert_eq!(status_text(404), "404 Not Found");
        assert_eq!(status_text(599), "599");
    }

    #[test]
    fn origins_compare_scheme_host_and_port() {
        let u = |s: &str| url::Url::parse(s).unwrap();
        assert!(same_origin(
            &u("http://127.0.0.1:80/sse"),
            &u("http://127.0.0.1/messages?x=1")
        ));
        assert!(!same_origin(
            &u("http://127.0.0.1:8000/sse"),
            &u("http://127.0.0.2:8000/steal")
        ));
        assert!(!same_origin(
            &u("http://127.0.0.1:8000/sse"),
            &u("http://127.0.0.1:8001/sse")
        ));
        assert!(!same_origin(&u("https://h/sse"), &u("http://h/sse")));
        assert_eq!(host_of("http://alice:pw@example.com:8080/mcp"), "example.com:8080");
    }
}
