//! The HTTP transports behind a [`crate::transport::session::Session`]: Streamable HTTP
//! (2025-03-26 … 2025-11-25) and the older HTTP+SSE transport (2024-11-05).
//!
//! The session thread never blocks on the network. Every POST runs on its own
//! worker thread, which reads the answer incrementally (one JSON body, or an
//! SSE stream that may carry notifications and server requests before the
//! response) and hands each JSON-RPC message back as an incoming line. So
//! HTTP sessions produce the same [`Event::Frame`]s as stdio sessions, and the
//! timeline, the lint and the capture work unchanged; what only HTTP has
//! (status codes, content types, session ids, reconnects) arrives as
//! [`Event::Http`] on the same timeline.
//!
//! Messages are POSTed in the order they were sent: the next POST waits until
//! the previous one got its response headers, or [`ORDER_WAIT`] at most, so a
//! slow JSON answer cannot hold back a cancellation.

use crate::protocol::methods;
use crate::record::capture;
use crate::record::recorder::Recorder;
use crate::transport::event::{Event, HttpInfo};
use crate::transport::session::{Command, SessionOptions};
use crate::transport::target::{HttpKind, HttpTarget, Target, mask_value};
use crate::wire::classify::Kind;
use crate::wire::frame::Direction;
use crate::wire::framing::{LineEnding, RawLine};
use crate::wire::message::{Message, RequestId};
use crate::wire::sse::{SseEvent, SseReader};
use crossbeam_channel::{Receiver, Sender, select, unbounded};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::io::{BufReader, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long a POST may hold back the next one while waiting for its response headers.
pub const ORDER_WAIT: Duration = Duration::from_millis(150);

/// Bodies longer than this are cut (and the cut is noted); SSE streams are not limited.
const MAX_BODY: u64 = 256 * 1024 * 1024;

const ACCEPT_POST: &str = "application/json, text/event-stream";

/// Response headers worth showing.
const RELEVANT: &[&str] = &[
    "content-type",
    "mcp-session-id",
    "mcp-protocol-version",
    "content-length",
    "location",
    "www-authenticate",
    "retry-after",
    "allow",
];

/// What the worker threads tell the session thread.
/// The gate id of the GET stream's first answer (POST workers count up from 0).
const GET_WORKER: u64 = u64::MAX;
/// How long `notifications/initialized` waits for the GET stream to open.
const GET_WAIT: Duration = Duration::from_secs(2);

enum Internal {
    /// An HTTP fact for the timeline. `worker` is set for a POST's response
    /// headers (which open the ordering gate).
    Http {
        info: HttpInfo,
        at: Instant,
        worker: Option<u64>,
        /// `Mcp-Session-Id` of a response to `initialize`.
        new_session: Option<Option<String>>,
    },
    /// One JSON-RPC message (or whatever bytes came where one was expected).
    Message {
        bytes: Vec<u8>,
        ending: LineEnding,
        at: Instant,
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
    /// HTTP+SSE: the stream is gone (or never opened); nothing more will come.
    LegacyDown {
        reason: String,
    },
    DeleteDone,
}

/// A message waiting to be POSTed.
struct Outgoing {
    body: Vec<u8>,
    request_id: Option<RequestId>,
    method: Option<String>,
    /// Headers the owner added for this message (`Mcp-Param-*`).
    headers: Vec<(String, String)>,
}

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
    tx: Sender<Internal>,
    closing: Arc<AtomicBool>,
    target: Arc<HttpTarget>,
}

pub(crate) fn run(target: HttpTarget, options: SessionOptions, commands: Receiver<Command>, events: Sender<Event>) {
    let start = Instant::now();
    let mut recorder = Recorder::new(options.limits, start);
    let mut early = Vec::new();
    if let Some(path) = &options.capture {
        match capture::Writer::create(
            path,
            &capture::Header::for_target(&Target::Http(target.clone()), "session"),
        ) {
            Ok(w) => recorder = recorder.with_capture(w),
            Err(e) => early.push(format!("{e:#}")),
        }
    }
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(target.connect_timeout))
        .user_agent(concat!("mcpscope/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let (tx, rx) = unbounded::<Internal>();
    let ctx = Ctx {
        agent,
        tx,
        closing: Arc::new(AtomicBool::new(false)),
        target: Arc::new(target.clone()),
    };
    let post_url = match target.kind {
        HttpKind::StreamableHttp => Some(target.url.clone()),
        HttpKind::Sse => None,
    };
    let mut runner = Runner {
        options,
        recorder,
        events,
        ctx,
        session_id: None,
        protocol_version: None,
        post_url,
        legacy_down: None,
        queue: VecDeque::new(),
        gate: None,
        next_worker: 0,
        in_flight: 0,
        get_after: None,
        get_started: false,
        phase: Phase::Running,
    };
    for text in early {
        runner.note(text);
    }
    let what = match target.kind {
        HttpKind::StreamableHttp => format!("connecting to {} over Streamable HTTP", target.url),
        HttpKind::Sse => format!("connecting to {} over HTTP+SSE (2024-11-05)", target.url),
    };
    runner.note(what);
    if target.kind == HttpKind::Sse {
        let ctx = runner.ctx.clone();
        spawn_named("mcpscope-sse-stream", move || legacy_stream(ctx));
    }
    runner.run(commands, rx);
}

fn spawn_named(name: &str, f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .expect("spawning an HTTP worker thread");
}

struct Runner {
    options: SessionOptions,
    recorder: Recorder,
    events: Sender<Event>,
    ctx: Ctx,
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
    /// Open the GET stream once this worker (the `initialized` POST) answers.
    get_after: Option<u64>,
    get_started: bool,
    phase: Phase,
}

impl Runner {
    fn emit(&mut self, ev: Event) {
        crate::transport::session::deliver(&mut self.recorder, &self.events, ev);
    }

    fn note(&mut self, text: String) {
        let at = self.recorder.now();
        self.emit(Event::Note { at, text });
    }

    fn wake(&mut self) {
        crate::transport::session::flush_and_wake(&mut self.recorder, &self.events, self.options.waker.as_ref());
    }

    fn run(&mut self, commands: Receiver<Command>, internal: Receiver<Internal>) {
        let mut commands_open = true;
        while self.phase != Phase::Done {
            let wait = self.next_wakeup().map(|t| t.saturating_duration_since(Instant::now()));
            let never = crossbeam_channel::never();
            let cmd_rx = if commands_open { &commands } else { &never };
            select! {
                recv(internal) -> msg => {
                    if let Ok(msg) = msg {
                        self.on_internal(msg);
                    }
                }
                recv(cmd_rx) -> cmd => match cmd {
                    Ok(cmd) => self.on_command(cmd),
                    Err(_) => {
                        commands_open = false;
                        self.begin_shutdown();
                    }
                },
                default(wait.unwrap_or(Duration::from_secs(3600))) => {}
            }
            self.on_tick();
            if internal.is_empty() && (!commands_open || commands.is_empty()) {
                self.wake();
            }
        }
        // Interrupt every read still blocked on a socket (the GET stream,
        // slow responses): no thread outlives the session for long.
        self.ctx.closing.store(true, Ordering::SeqCst);
        self.ctx.agent.clone().shutdown();
        let at = self.recorder.now();
        self.emit(Event::Closed { at });
        self.wake();
    }

    fn next_wakeup(&self) -> Option<Instant> {
        let start = self.recorder.start();
        let deadline = self.recorder.next_deadline().map(|d| start + d);
        let gate = self.gate.map(|(_, t)| t);
        let phase = match self.phase {
            Phase::Draining { deadline } | Phase::Deleting { deadline } => Some(deadline),
            Phase::Running | Phase::Done => None,
        };
        [deadline, gate, phase].into_iter().flatten().min()
    }

    fn on_command(&mut self, cmd: Command) {
        match cmd {
            Command::Send { line, timeout, headers } => self.send(line, timeout, headers),
            Command::Cancel { id, reason } => {
                self.recorder.cancel(&id);
                let mut params = json!({ "requestId": id.to_json() });
                if let Some(r) = reason {
                    params["reason"] = Value::from(r);
                }
                let at = self.recorder.now();
                self.emit(Event::Cancelled { at, id });
                let line = Message::notification(methods::CANCELLED, Some(params)).to_line();
                self.send(line, None, Vec::new());
            }
            Command::Shutdown => self.begin_shutdown(),
            Command::Note { text } => self.note(text),
        }
    }

    /// Records the message as one outgoing frame (an HTTP body is one
    /// message, newlines and all) and queues its POST.
    fn send(&mut self, body: Vec<u8>, timeout: Option<Duration>, headers: Vec<(String, String)>) {
        let at = self.recorder.now();
        let timeout = timeout.or(self.options.request_timeout);
        let line = RawLine {
            bytes: body.clone(),
            ending: LineEnding::Lf,
        };
        let frame = self.recorder.frame_at(Direction::Out, line, at, timeout);
        let (request_id, method) = match frame.class.kind {
            Kind::Request => (frame.class.id.clone(), frame.class.method.clone()),
            _ => (None, frame.class.method.clone()),
        };
        self.emit(Event::Frame(frame));
        if matches!(self.phase, Phase::Deleting { .. } | Phase::Done) {
            let info = HttpInfo {
                method: "POST".into(),
                url: self.post_url.clone().unwrap_or_else(|| self.ctx.target.url.clone()),
                request_id,
                error: Some("the session is closing: the message was not sent".into()),
                ..HttpInfo::default()
            };
            self.fail(info, Instant::now());
            return;
        }
        self.queue.push_back(Outgoing {
            body,
            request_id,
            method,
            headers,
        });
        self.dispatch();
    }

    /// POSTs queued messages, in order, as far as the ordering gate allows.
    fn dispatch(&mut self) {
        if let Some((_, until)) = self.gate
            && Instant::now() < until
            && self.phase == Phase::Running
        {
            return;
        }
        self.gate = None;
        if let Some(reason) = self.legacy_down.clone() {
            while let Some(out) = self.queue.pop_front() {
                let info = HttpInfo {
                    method: "POST".into(),
                    url: self.ctx.target.url.clone(),
                    request_id: out.request_id,
                    error: Some(reason.clone()),
                    ..HttpInfo::default()
                };
                self.fail(info, Instant::now());
            }
            return;
        }
        let Some(url) = self.post_url.clone() else {
            return; // HTTP+SSE: waiting for the endpoint event.
        };
        while let Some(out) = self.queue.pop_front() {
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
                self.queue.push_front(out);
                self.start_get_stream();
                self.gate = Some((GET_WORKER, Instant::now() + GET_WAIT));
                return;
            }
            let worker = self.next_worker;
            self.next_worker += 1;
            self.in_flight += 1;
            let is_initialize = out.method.as_deref() == Some(methods::INITIALIZE);
            if out.method.as_deref() == Some(methods::INITIALIZED)
                && self.ctx.target.kind == HttpKind::StreamableHttp
                && self.ctx.target.open_get_stream
                && !self.get_started
            {
                self.get_after = Some(worker);
            }
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
            let ctx = self.ctx.clone();
            spawn_named("mcpscope-post", move || post(ctx, job));
            if self.phase == Phase::Running {
                self.gate = Some((worker, Instant::now() + ORDER_WAIT));
                return;
            }
        }
    }

    fn fail(&mut self, mut info: HttpInfo, at: Instant) {
        info.at = self.recorder.since_start(at);
        if let Some(id) = &info.request_id {
            self.recorder.abandon(id);
        }
        self.emit(Event::Http(info));
    }

    fn on_internal(&mut self, msg: Internal) {
        match msg {
            Internal::Http {
                mut info,
                at,
                worker,
                new_session,
            } => {
                if let Some(sid) = new_session {
                    if let Some(s) = &sid {
                        info.text = format!("session {s} started; {}", info.text)
                            .trim_end_matches("; ")
                            .into();
                    }
                    self.session_id = sid;
                    self.protocol_version = None;
                }
                info.at = self.recorder.since_start(at);
                self.emit(Event::Http(info));
                if let Some(w) = worker {
                    self.opened(w);
                }
            }
            Internal::Message { bytes, ending, at } => {
                let at = self.recorder.since_start(at);
                let frame = self
                    .recorder
                    .frame_at(Direction::In, RawLine { bytes, ending }, at, None);
                let answered_initialize = matches!(frame.class.kind, Kind::Result)
                    && frame.link.as_ref().is_some_and(|l| l.method == methods::INITIALIZE);
                if answered_initialize
                    && let Some(v) = frame.json()
                    && let Some(pv) = v.pointer("/result/protocolVersion").and_then(Value::as_str)
                {
                    self.protocol_version = Some(pv.to_owned());
                }
                // Pings are answered by the owner's protocol driver, like
                // every other server request.
                self.emit(Event::Frame(frame));
            }
            Internal::Failed {
                mut info,
                at,
                expired_session,
            } => {
                if expired_session {
                    self.session_id = None;
                    self.protocol_version = None;
                }
                // A JSON-RPC error in the body may already have answered it.
                let still_waiting = info
                    .request_id
                    .as_ref()
                    .is_some_and(|id| self.recorder.correlator().is_pending(Direction::Out, id));
                if !still_waiting && info.request_id.is_some() {
                    info.request_id = None;
                }
                self.fail(info, at);
            }
            Internal::WorkerDone { worker } => {
                self.in_flight = self.in_flight.saturating_sub(1);
                self.opened(worker);
            }
            Internal::Endpoint { url } => {
                self.post_url = Some(url);
                self.dispatch();
            }
            Internal::LegacyDown { reason } => {
                self.legacy_down = Some(reason);
                self.dispatch();
            }
            Internal::DeleteDone => {
                if matches!(self.phase, Phase::Deleting { .. }) {
                    self.phase = Phase::Done;
                }
            }
        }
    }

    /// A POST got its answer (or gave up): the next one may go, and the GET
    /// stream may open once `initialized` is through.
    fn opened(&mut self, worker: u64) {
        if self.gate.is_some_and(|(w, _)| w == worker) {
            self.gate = None;
            self.dispatch();
        }
        if self.get_after == Some(worker) && !self.get_started && self.phase == Phase::Running {
            self.get_after = None;
            self.start_get_stream();
        }
    }

    fn start_get_stream(&mut self) {
        self.get_started = true;
        let ctx = self.ctx.clone();
        let session_id = self.session_id.clone();
        let protocol_version = self.protocol_version.clone();
        spawn_named("mcpscope-get-stream", move || {
            get_stream(ctx, session_id, protocol_version)
        });
    }

    fn on_tick(&mut self) {
        let now = self.recorder.now();
        for t in self.recorder.expire(now) {
            let id = t.id.clone();
            self.emit(Event::TimedOut { at: now, timed_out: t });
            if self.options.cancel_on_timeout && self.phase == Phase::Running {
                let params = json!({"requestId": id.to_json(), "reason": "timed out"});
                let line = Message::notification(methods::CANCELLED, Some(params)).to_line();
                self.send(line, None, Vec::new());
            }
        }
        if self.gate.is_some_and(|(_, t)| Instant::now() >= t) {
            self.gate = None;
            self.dispatch();
        }
        let instant_now = Instant::now();
        match self.phase {
            Phase::Draining { deadline } if self.in_flight == 0 || instant_now >= deadline => {
                if self.in_flight > 0 {
                    self.note(format!("closing with {} HTTP exchange(s) still open", self.in_flight));
                }
                self.start_delete();
            }
            Phase::Deleting { deadline } if instant_now >= deadline => {
                self.note("DELETE got no answer in time; closing anyway".into());
                self.phase = Phase::Done;
            }
            _ => {}
        }
    }

    fn begin_shutdown(&mut self) {
        if self.phase != Phase::Running {
            return;
        }
        self.phase = Phase::Draining {
            deadline: Instant::now() + self.options.stdin_close_grace,
        };
        self.ctx.closing.store(true, Ordering::SeqCst);
        self.dispatch();
    }

    fn start_delete(&mut self) {
        match (&self.session_id, self.ctx.target.kind) {
            (Some(sid), HttpKind::StreamableHttp) => {
                let ctx = self.ctx.clone();
                let sid = sid.clone();
                let pv = self.protocol_version.clone();
                self.phase = Phase::Deleting {
                    deadline: Instant::now() + self.options.stdin_close_grace.max(Duration::from_millis(500)),
                };
                spawn_named("mcpscope-delete", move || delete(ctx, sid, pv));
            }
            _ => self.phase = Phase::Done,
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

/// The headers of a request: real values for the wire, masked ones for the record.
struct Headers {
    wire: Vec<(String, String)>,
    shown: Vec<(String, String)>,
}

impl Headers {
    fn new(target: &HttpTarget) -> Self {
        let mut h = Headers {
            wire: Vec::new(),
            shown: Vec::new(),
        };
        for (k, v) in &target.headers {
            h.wire.push((k.clone(), v.clone()));
            h.shown.push((k.clone(), mask_value(v)));
        }
        h
    }

    fn add(&mut self, k: &str, v: &str) {
        self.wire.push((k.into(), v.into()));
        self.shown.push((k.into(), v.into()));
    }

    fn session(&mut self, session_id: &Option<String>, protocol_version: &Option<String>) {
        if let Some(s) = session_id {
            self.add("Mcp-Session-Id", s);
        }
        if let Some(v) = protocol_version {
            self.add("MCP-Protocol-Version", v);
        }
    }
}

fn relevant_headers(resp: &ureq::http::Response<ureq::Body>) -> Vec<(String, String)> {
    RELEVANT
        .iter()
        .filter_map(|name| {
            let v = resp.headers().get(*name)?;
            Some(((*name).to_owned(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
        })
        .collect()
}

fn content_type(resp: &ureq::http::Response<ureq::Body>) -> String {
    resp.headers()
        .get("content-type")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).to_ascii_lowercase())
        .unwrap_or_default()
}

fn is_sse(ct: &str) -> bool {
    ct.starts_with("text/event-stream")
}

fn is_json(ct: &str) -> bool {
    let base = ct.split(';').next().unwrap_or("").trim();
    base == "application/json" || base.ends_with("+json")
}

fn status_text(status: u16) -> String {
    let reason = ureq::http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    format!("{status} {reason}").trim_end().to_owned()
}

/// A transport failure in words a person can act on.
fn describe_error(e: &ureq::Error, url: &str) -> String {
    let host = url
        .split("://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or(url);
    match e {
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
            format!("connection refused: nothing is listening at {host} (is the server running, on this port?)")
        }
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionReset => {
            format!("the connection to {host} was reset by the server")
        }
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            format!("{host} closed the connection without an HTTP response")
        }
        ureq::Error::Timeout(t) => format!("timed out talking to {host} ({t:?})"),
        ureq::Error::HostNotFound => format!("host not found: {host}"),
        ureq::Error::BadUri(u) => format!("not a usable URL: {u}"),
        ureq::Error::Protocol(p) => format!("{host} did not answer with valid HTTP: {p}"),
        other => format!("HTTP request to {host} failed: {other}"),
    }
}

/// Whether a JSON body (or SSE data) is the response to `id`.
fn answers(bytes: &[u8], id: &RequestId) -> bool {
    let Ok(v) = serde_json::from_slice::<Value>(bytes) else {
        return false;
    };
    let one = |m: &Value| {
        m.get("id").and_then(RequestId::from_json).as_ref() == Some(id)
            && (m.get("result").is_some() || m.get("error").is_some())
    };
    match &v {
        Value::Array(items) => items.iter().any(one),
        m => one(m),
    }
}

fn send(ctx: &Ctx, msg: Internal) {
    let _ = ctx.tx.send(msg);
}

fn post(ctx: Ctx, job: PostJob) {
    let PostJob {
        worker,
        url,
        session_id,
        protocol_version,
        out,
        is_initialize,
    } = job;
    let mut headers = Headers::new(&ctx.target);
    headers.add("Content-Type", "application/json");
    headers.add("Accept", ACCEPT_POST);
    let modern = crate::protocol::http_headers::standard(&out.body);
    // In the modern era the version header must equal the request's `_meta`.
    let protocol_version = match modern.iter().find(|(k, _)| k == "MCP-Protocol-Version") {
        Some((_, v)) => Some(v.clone()),
        None => protocol_version,
    };
    headers.session(&session_id, &protocol_version);
    for (k, v) in modern.iter().filter(|(k, _)| k != "MCP-Protocol-Version") {
        headers.add(k, v);
    }
    for (k, v) in &out.headers {
        headers.add(k, v);
    }
    let mut req = ctx.agent.post(&url);
    for (k, v) in &headers.wire {
        req = req.header(k.as_str(), v.as_str());
    }
    let base = HttpInfo {
        method: "POST".into(),
        url: url.clone(),
        sent: headers.shown.clone(),
        request_id: out.request_id.clone(),
        ..HttpInfo::default()
    };
    let result = req.send(&out.body[..]);
    let resp = match result {
        Ok(r) => r,
        Err(e) => {
            let error = describe_error(&e, &url);
            send(
                &ctx,
                Internal::Failed {
                    info: HttpInfo {
                        error: Some(error),
                        ..base
                    },
                    at: Instant::now(),
                    expired_session: false,
                },
            );
            send(&ctx, Internal::WorkerDone { worker });
            return;
        }
    };
    let status = resp.status().as_u16();
    let ct = content_type(&resp);
    let received = relevant_headers(&resp);
    let session_header = resp
        .headers()
        .get("mcp-session-id")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let what = out.method.as_deref().unwrap_or("message");
    let sse = (200..300).contains(&status) && is_sse(&ct);
    let failed = |error: String, expired: bool| Internal::Failed {
        info: HttpInfo {
            status: Some(status),
            received: received.clone(),
            error: Some(error),
            ..base.clone()
        },
        at: Instant::now(),
        expired_session: expired,
    };
    let body = resp.into_body();
    if sse {
        send(
            &ctx,
            Internal::Http {
                info: HttpInfo {
                    status: Some(status),
                    received: received.clone(),
                    text: format!("{what}: the answer comes as an SSE stream"),
                    ..base.clone()
                },
                at: Instant::now(),
                worker: Some(worker),
                new_session: is_initialize.then_some(session_header),
            },
        );
        let mut reader = SseReader::new(BufReader::new(body.into_reader()));
        let outcome = read_sse(&ctx, &mut reader, out.request_id.as_ref());
        let answered = outcome.answered;
        if let (Some(id), false) = (&out.request_id, answered) {
            if !ctx.closing.load(Ordering::SeqCst) {
                resume(&ctx, &url, id, outcome, &session_id, &protocol_version, base.clone());
            }
        } else if let Some(e) = outcome.error
            && !ctx.closing.load(Ordering::SeqCst)
        {
            sse_note(&ctx, &url, format!("the stream answering {what} broke"), Some(e));
        }
        send(&ctx, Internal::WorkerDone { worker });
        return;
    }

    // A whole body: JSON, an error page, or anything else. Every byte is kept.
    let mut bytes = Vec::new();
    let read = body.into_reader().take(MAX_BODY).read_to_end(&mut bytes);
    let at = Instant::now();
    let accepted = status == 202 || status == 204;
    let mut text = match status {
        202 | 204 => format!("{what} accepted"),
        200..=299 => String::new(),
        _ => status_text(status),
    };
    if accepted && !bytes.is_empty() {
        // A 202 body is not a message (Python's HTTP+SSE server says "Accepted").
        text.push_str(&format!(
            " (body: {})",
            crate::text::shorten(&String::from_utf8_lossy(&bytes), 200)
        ));
    }
    send(
        &ctx,
        Internal::Http {
            info: HttpInfo {
                status: Some(status),
                received: received.clone(),
                text,
                ..base.clone()
            },
            at,
            worker: Some(worker),
            new_session: (is_initialize && (200..300).contains(&status)).then_some(session_header),
        },
    );
    if !bytes.is_empty() && !accepted {
        send(
            &ctx,
            Internal::Message {
                bytes: bytes.clone(),
                ending: LineEnding::Lf,
                at,
            },
        );
    }
    if let Err(e) = read {
        send(&ctx, failed(format!("reading the response body failed: {e}"), false));
    } else if accepted {
        if let Some(id) = &out.request_id
            && ctx.target.kind == HttpKind::StreamableHttp
        {
            send(
                &ctx,
                failed(
                    format!("the server accepted request #{id} with {status} but sent no response to it"),
                    false,
                ),
            );
        }
    } else if status == 404 && session_id.is_some() {
        let sid = session_id.as_deref().unwrap_or_default();
        send(
            &ctx,
            failed(
                format!("the server forgot session {sid} (HTTP 404): start a new session"),
                true,
            ),
        );
    } else if !(200..300).contains(&status) {
        let mut e = format!("the server answered HTTP {}", status_text(status));
        if ct.contains("html") {
            e.push_str(" with an HTML page");
        }
        if status == 401 || status == 403 {
            e.push_str(" (check the Authorization or other --header values)");
        }
        if status == 405 || status == 404 {
            e.push_str(&format!(
                " (is {url} the MCP endpoint? for an HTTP+SSE server use --transport sse)"
            ));
        }
        send(&ctx, failed(e, false));
    } else if out.request_id.is_some() && !is_json(&ct) {
        let shown = if ct.is_empty() { "none".to_owned() } else { ct.clone() };
        send(
            &ctx,
            failed(
                format!("the response has Content-Type {shown}, not application/json or text/event-stream"),
                false,
            ),
        );
    } else if let Some(id) = &out.request_id
        && !answers(&bytes, id)
    {
        let e = if bytes.is_empty() {
            "the response body is empty".to_owned()
        } else if serde_json::from_slice::<Value>(&bytes).is_err() {
            "the response body is not valid JSON".to_owned()
        } else {
            format!("the response body is not the response to request #{id}")
        };
        send(&ctx, failed(e, false));
    }
    send(&ctx, Internal::WorkerDone { worker });
}

#[derive(Default)]
struct SseOutcome {
    answered: bool,
    last_id: Option<String>,
    retry: Option<u64>,
    events: usize,
    error: Option<String>,
}

/// Reads an SSE stream to its end, passing each message on.
fn read_sse<R: std::io::BufRead>(ctx: &Ctx, reader: &mut SseReader<R>, waiting_for: Option<&RequestId>) -> SseOutcome {
    let mut o = SseOutcome::default();
    loop {
        match reader.next_event() {
            Ok(Some(ev)) => {
                o.events += 1;
                note_ids(&mut o, &ev);
                // Any event with data is kept: a server may name its events otherwise.
                if ev.has_data() {
                    if waiting_for.is_some_and(|id| answers(&ev.data, id)) {
                        o.answered = true;
                    }
                    deliver(ctx, ev);
                }
            }
            Ok(None) => return o,
            Err(e) => {
                if !ctx.closing.load(Ordering::SeqCst) {
                    o.error = Some(e.to_string());
                }
                return o;
            }
        }
    }
}

fn note_ids(o: &mut SseOutcome, ev: &SseEvent) {
    if let Some(id) = &ev.id {
        o.last_id = Some(id.clone());
    }
    if ev.retry.is_some() {
        o.retry = ev.retry;
    }
}

fn deliver(ctx: &Ctx, ev: SseEvent) {
    let ending = if ev.truncated { LineEnding::Eof } else { LineEnding::Lf };
    send(
        ctx,
        Internal::Message {
            bytes: ev.data,
            ending,
            at: Instant::now(),
        },
    );
}

fn sse_note(ctx: &Ctx, url: &str, text: String, error: Option<String>) {
    send(
        ctx,
        Internal::Http {
            info: HttpInfo {
                method: "SSE".into(),
                url: url.to_owned(),
                text,
                error,
                ..HttpInfo::default()
            },
            at: Instant::now(),
            worker: None,
            new_session: None,
        },
    );
}

fn retry_wait(ctx: &Ctx, retry: Option<u64>) -> Duration {
    retry.map_or(ctx.target.default_retry, Duration::from_millis)
}

/// Sleeps unless the session closes meanwhile; false when it did.
fn pause(ctx: &Ctx, d: Duration) -> bool {
    let until = Instant::now() + d;
    while Instant::now() < until {
        if ctx.closing.load(Ordering::SeqCst) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20).min(until.saturating_duration_since(Instant::now())));
    }
    !ctx.closing.load(Ordering::SeqCst)
}

/// The response stream ended before the response: resume it with a GET and
/// `Last-Event-ID` where the server gave event ids, else report it.
fn resume(
    ctx: &Ctx,
    url: &str,
    id: &RequestId,
    mut outcome: SseOutcome,
    session_id: &Option<String>,
    protocol_version: &Option<String>,
    base: HttpInfo,
) {
    let mut attempts = 0;
    loop {
        let Some(last) = outcome.last_id.clone() else {
            let mut e = format!(
                "the SSE stream ended after {} event(s) without the response to #{id}",
                outcome.events
            );
            if let Some(err) = &outcome.error {
                e.push_str(&format!(" ({err})"));
            }
            e.push_str(", and gave no event id to resume from");
            send(
                ctx,
                Internal::Failed {
                    info: HttpInfo { error: Some(e), ..base },
                    at: Instant::now(),
                    expired_session: false,
                },
            );
            return;
        };
        if attempts >= ctx.target.max_reconnects {
            send(
                ctx,
                Internal::Failed {
                    info: HttpInfo {
                        error: Some(format!(
                            "gave up resuming the stream for #{id} after {attempts} reconnect(s)"
                        )),
                        ..base
                    },
                    at: Instant::now(),
                    expired_session: false,
                },
            );
            return;
        }
        attempts += 1;
        let wait = retry_wait(ctx, outcome.retry);
        sse_note(
            ctx,
            url,
            format!(
                "the stream for #{id} ended before its response; reconnecting in {} ms with Last-Event-ID: {last}",
                wait.as_millis()
            ),
            None,
        );
        if !pause(ctx, wait) {
            return;
        }
        let mut headers = Headers::new(&ctx.target);
        headers.add("Accept", "text/event-stream");
        headers.session(session_id, protocol_version);
        headers.add("Last-Event-ID", &last);
        let mut req = ctx.agent.get(url);
        for (k, v) in &headers.wire {
            req = req.header(k.as_str(), v.as_str());
        }
        let info = HttpInfo {
            method: "GET".into(),
            url: url.to_owned(),
            sent: headers.shown.clone(),
            request_id: Some(id.clone()),
            ..HttpInfo::default()
        };
        match req.call() {
            Err(e) => {
                sse_note(ctx, url, "resuming failed".into(), Some(describe_error(&e, url)));
                outcome.error = Some(describe_error(&e, url));
            }
            Ok(resp) => {
                let status = resp.status().as_u16();
                let ct = content_type(&resp);
                send(
                    ctx,
                    Internal::Http {
                        info: HttpInfo {
                            status: Some(status),
                            received: relevant_headers(&resp),
                            text: format!("resuming the stream for #{id}"),
                            ..info.clone()
                        },
                        at: Instant::now(),
                        worker: None,
                        new_session: None,
                    },
                );
                if status != 200 || !is_sse(&ct) {
                    send(
                        ctx,
                        Internal::Failed {
                            info: HttpInfo {
                                status: Some(status),
                                error: Some(format!(
                                    "the server did not resume the stream (HTTP {}): #{id} gets no response",
                                    status_text(status)
                                )),
                                ..info
                            },
                            at: Instant::now(),
                            expired_session: status == 404,
                        },
                    );
                    return;
                }
                let mut reader = SseReader::new(BufReader::new(resp.into_body().into_reader()));
                let next = read_sse(ctx, &mut reader, Some(id));
                if next.answered {
                    return;
                }
                outcome = SseOutcome {
                    last_id: next.last_id.or(outcome.last_id),
                    retry: next.retry.or(outcome.retry),
                    events: outcome.events + next.events,
                    error: next.error,
                    answered: false,
                };
            }
        }
        if ctx.closing.load(Ordering::SeqCst) {
            return;
        }
    }
}

/// Streamable HTTP: the standalone GET stream for server-initiated messages,
/// reopened (with `Last-Event-ID` where the server gave ids) when it breaks.
fn get_stream(ctx: Ctx, session_id: Option<String>, protocol_version: Option<String>) {
    let url = ctx.target.url.clone();
    let mut last_id: Option<String> = None;
    let mut retry: Option<u64> = None;
    let mut failures = 0u32;
    loop {
        if ctx.closing.load(Ordering::SeqCst) {
            return;
        }
        let mut headers = Headers::new(&ctx.target);
        headers.add("Accept", "text/event-stream");
        headers.session(&session_id, &protocol_version);
        if let Some(l) = &last_id {
            headers.add("Last-Event-ID", l);
        }
        let mut req = ctx.agent.get(&url);
        for (k, v) in &headers.wire {
            req = req.header(k.as_str(), v.as_str());
        }
        let info = HttpInfo {
            method: "GET".into(),
            url: url.clone(),
            sent: headers.shown.clone(),
            ..HttpInfo::default()
        };
        // The first answer (open, refused or failed) releases the POST of
        // `notifications/initialized`, which waits for the stream to exist.
        let first = last_id.is_none() && failures == 0;
        let http = |info: HttpInfo| Internal::Http {
            info,
            at: Instant::now(),
            worker: first.then_some(GET_WORKER),
            new_session: None,
        };
        let outcome = match req.call() {
            Err(e) => {
                if ctx.closing.load(Ordering::SeqCst) {
                    return;
                }
                send(
                    &ctx,
                    http(HttpInfo {
                        text: "the GET stream could not be opened".into(),
                        error: Some(describe_error(&e, &url)),
                        ..info
                    }),
                );
                None
            }
            Ok(resp) => {
                let status = resp.status().as_u16();
                let ct = content_type(&resp);
                let received = relevant_headers(&resp);
                if status == 405 {
                    send(
                        &ctx,
                        http(HttpInfo {
                            status: Some(status),
                            received,
                            text: "the server offers no GET stream (405): it sends messages only on POST responses"
                                .into(),
                            ..info
                        }),
                    );
                    return;
                }
                if status != 200 || !is_sse(&ct) {
                    let mut bytes = Vec::new();
                    let _ = resp.into_body().into_reader().take(64 * 1024).read_to_end(&mut bytes);
                    send(
                        &ctx,
                        http(HttpInfo {
                            status: Some(status),
                            received,
                            text: format!(
                                "the GET stream was refused: {}",
                                crate::text::shorten(&String::from_utf8_lossy(&bytes), 300)
                            ),
                            ..info
                        }),
                    );
                    return;
                }
                let text = match &last_id {
                    Some(l) => format!("GET stream reopened after event {l}"),
                    None => "GET stream open for server-initiated messages".into(),
                };
                send(
                    &ctx,
                    http(HttpInfo {
                        status: Some(status),
                        received,
                        text,
                        ..info
                    }),
                );
                let mut reader = SseReader::new(BufReader::new(resp.into_body().into_reader()));
                Some(read_sse(&ctx, &mut reader, None))
            }
        };
        if ctx.closing.load(Ordering::SeqCst) {
            return;
        }
        match outcome {
            Some(o) => {
                if o.events > 0 {
                    failures = 0;
                }
                failures += 1;
                last_id = o.last_id.or(last_id);
                retry = o.retry.or(retry);
            }
            None => failures += 1,
        }
        if failures > ctx.target.max_reconnects {
            sse_note(
                &ctx,
                &url,
                format!("gave up on the GET stream after {} attempt(s)", failures),
                None,
            );
            return;
        }
        let wait = retry_wait(&ctx, retry);
        let with = last_id
            .as_ref()
            .map(|l| format!(" with Last-Event-ID: {l}"))
            .unwrap_or_default();
        sse_note(
            &ctx,
            &url,
            format!("the GET stream ended; reconnecting in {} ms{with}", wait.as_millis()),
            None,
        );
        if !pause(&ctx, wait) {
            return;
        }
    }
}

/// HTTP+SSE (2024-11-05): GET the SSE URL, learn the POST endpoint from the
/// `endpoint` event, then pass every `message` event on.
fn legacy_stream(ctx: Ctx) {
    let url = ctx.target.url.clone();
    let mut headers = Headers::new(&ctx.target);
    headers.add("Accept", "text/event-stream");
    let mut req = ctx.agent.get(&url);
    for (k, v) in &headers.wire {
        req = req.header(k.as_str(), v.as_str());
    }
    let info = HttpInfo {
        method: "GET".into(),
        url: url.clone(),
        sent: headers.shown.clone(),
        ..HttpInfo::default()
    };
    let down = |reason: String| Internal::LegacyDown { reason };
    let resp = match req.call() {
        Ok(r) => r,
        Err(e) => {
            let error = describe_error(&e, &url);
            send(
                &ctx,
                Internal::Http {
                    info: HttpInfo {
                        text: "the SSE stream could not be opened".into(),
                        error: Some(error.clone()),
                        ..info
                    },
                    at: Instant::now(),
                    worker: None,
                    new_session: None,
                },
            );
            send(&ctx, down(error));
            return;
        }
    };
    let status = resp.status().as_u16();
    let ct = content_type(&resp);
    let received = relevant_headers(&resp);
    if status != 200 || !is_sse(&ct) {
        let mut bytes = Vec::new();
        let _ = resp.into_body().into_reader().take(MAX_BODY).read_to_end(&mut bytes);
        let mut error = format!("the SSE URL answered HTTP {}", status_text(status));
        if status == 200 {
            error = format!("the SSE URL answered with Content-Type {ct}, not text/event-stream");
        }
        if status == 405 || status == 404 || (status == 200 && !is_sse(&ct)) {
            error.push_str(" (for a Streamable HTTP server use --transport http)");
        }
        send(
            &ctx,
            Internal::Http {
                info: HttpInfo {
                    status: Some(status),
                    received,
                    error: Some(error.clone()),
                    ..info
                },
                at: Instant::now(),
                worker: None,
                new_session: None,
            },
        );
        if !bytes.is_empty() {
            send(
                &ctx,
                Internal::Message {
                    bytes,
                    ending: LineEnding::Lf,
                    at: Instant::now(),
                },
            );
        }
        send(&ctx, down(error));
        return;
    }
    send(
        &ctx,
        Internal::Http {
            info: HttpInfo {
                status: Some(status),
                received,
                text: "SSE stream open; waiting for the endpoint event".into(),
                ..info
            },
            at: Instant::now(),
            worker: None,
            new_session: None,
        },
    );
    let mut reader = SseReader::new(BufReader::new(resp.into_body().into_reader()));
    let mut have_endpoint = false;
    let mut events = 0usize;
    let error = loop {
        match reader.next_event() {
            Ok(Some(ev)) => {
                events += 1;
                if ev.kind() == "endpoint" {
                    let target = String::from_utf8_lossy(&ev.data).trim().to_owned();
                    match url::Url::parse(&url).and_then(|b| b.join(&target)) {
                        Ok(full) => {
                            have_endpoint = true;
                            sse_note(&ctx, &url, format!("endpoint: messages go to {full}"), None);
                            send(&ctx, Internal::Endpoint { url: full.to_string() });
                        }
                        Err(e) => {
                            sse_note(
                                &ctx,
                                &url,
                                format!("endpoint event {target:?}"),
                                Some(format!("not a usable URL: {e}")),
                            );
                        }
                    }
                } else if ev.has_data() {
                    deliver(&ctx, ev);
                }
            }
            Ok(None) => break None,
            Err(e) => break Some(e.to_string()),
        }
    };
    if ctx.closing.load(Ordering::SeqCst) {
        return;
    }
    let reason = if have_endpoint {
        format!("the SSE stream closed after {events} event(s): the server can no longer answer")
    } else {
        format!("the SSE stream closed after {events} event(s) without an endpoint event")
    };
    sse_note(&ctx, &url, reason.clone(), error);
    send(&ctx, down(reason));
}

/// Ends the session on the server (Streamable HTTP).
fn delete(ctx: Ctx, session_id: String, protocol_version: Option<String>) {
    let url = ctx.target.url.clone();
    let mut headers = Headers::new(&ctx.target);
    headers.session(&Some(session_id.clone()), &protocol_version);
    let mut req = ctx.agent.delete(&url);
    for (k, v) in &headers.wire {
        req = req.header(k.as_str(), v.as_str());
    }
    let info = HttpInfo {
        method: "DELETE".into(),
        url: url.clone(),
        sent: headers.shown.clone(),
        ..HttpInfo::default()
    };
    let info = match req.call() {
        Ok(resp) => {
            let status = resp.status().as_u16();
            let text = match status {
                200..=299 => format!("session {session_id} ended"),
                405 => "the server does not let clients end sessions (405)".into(),
                404 => format!("the server had already forgotten session {session_id} (404)"),
                _ => format!("ending session {session_id}: {}", status_text(status)),
            };
            HttpInfo {
                status: Some(status),
                received: relevant_headers(&resp),
                text,
                ..info
            }
        }
        Err(e) => HttpInfo {
            text: format!("ending session {session_id}"),
            error: Some(describe_error(&e, &url)),
            ..info
        },
    };
    send(
        &ctx,
        Internal::Http {
            info,
            at: Instant::now(),
            worker: None,
            new_session: None,
        },
    );
    send(&ctx, Internal::DeleteDone);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_matches_the_response_only() {
        let id = RequestId::Number(3);
        assert!(answers(br#"{"jsonrpc":"2.0","id":3,"result":{}}"#, &id));
        assert!(answers(
            br#"{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"x"}}"#,
            &id
        ));
        assert!(!answers(br#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#, &id));
        assert!(!answers(br#"{"jsonrpc":"2.0","id":"3","result":{}}"#, &id));
        assert!(!answers(b"<html>", &id));
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
}
