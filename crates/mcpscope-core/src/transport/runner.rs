//! The one session runner, shared by every transport.
//!
//! A session thread runs [`run`]: it owns the [`Recorder`] (so numbering,
//! timing, correlation and the capture are the same for every transport),
//! takes the owner's [`Command`]s, times requests out, and hands frames to a
//! [`Link`]. A link is what differs between transports: the stdio link writes
//! lines to a child's stdin; the HTTP link POSTs bodies. Both report back
//! through one bounded channel of [`Input`]s, so a server that floods is
//! slowed down (its pipe or socket stops being read) instead of filling memory.

use crate::protocol::methods;
use crate::transport::budget::{ByteBudget, OwnerQueue};
use crate::transport::event::{Event, HttpInfo};
use crate::transport::event_log::FAILED;
use crate::transport::lifecycle;
use crate::transport::recorder::Recorder;
use crate::transport::session::{Command, SessionOptions, Waker};
use crate::transport::target::Target;
use crate::wire::classify::Kind;
use crate::wire::frame::{Direction, Frame};
use crate::wire::framing::RawLine;
use crate::wire::message::{Message, RequestId};
use crossbeam_channel::{Receiver, Sender, select};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What a link's threads tell the runner.
pub(crate) enum Input<M> {
    /// A message (a line on stdio, a body or an SSE event over HTTP) from the server.
    Received { line: RawLine, at: Instant },
    /// A line the server wrote to stderr.
    Stderr { line: RawLine, at: Instant },
    /// Something only this transport knows about.
    Link(M),
}

/// A message on its way to the server, already recorded as a frame.
#[derive(Default)]
pub(crate) struct Outgoing {
    /// The bytes as the owner gave them (no terminator).
    pub body: Vec<u8>,
    /// Set for a request: the id a response will carry.
    pub request_id: Option<RequestId>,
    pub method: Option<String>,
    /// Whether it is a response (to a server request): those may overtake
    /// requests held back by a full link, so a server waiting on one cannot
    /// deadlock the session.
    pub is_response: bool,
    /// Headers the owner added for this message (`Mcp-Param-*`; HTTP only).
    pub headers: Vec<(String, String)>,
    /// How long a request may wait for its answer (`None`: for ever, or not a request).
    pub timeout: Option<Duration>,
}

/// Where a runner's facts go: the recorder (and through it the capture) and
/// the owner's event channel.
pub(crate) struct Sink {
    pub recorder: Recorder,
    events: Sender<Event>,
    waker: Option<Waker>,
    /// What the link's readers may hold before the runner takes it.
    input_budget: Arc<ByteBudget>,
    /// What the owner has not taken yet, and how much of it may wait.
    owner_queue: OwnerQueue,
    owner_limit: usize,
}

impl Sink {
    pub fn new(recorder: Recorder, events: Sender<Event>, waker: Option<Waker>, queued_bytes: usize) -> Self {
        Self {
            recorder,
            events,
            waker,
            input_budget: Arc::new(ByteBudget::new(queued_bytes)),
            owner_queue: OwnerQueue::default(),
            owner_limit: queued_bytes,
        }
    }

    /// The budget a link's reader threads take from before they hand bytes
    /// to the runner (which gives them back once it has passed them on).
    pub fn input_budget(&self) -> Arc<ByteBudget> {
        self.input_budget.clone()
    }

    fn send(&mut self, ev: Event) {
        let n = match &ev {
            Event::Frame(f) => f.raw.len(),
            Event::Stderr(s) => s.raw.len(),
            _ => 0,
        };
        if n > 0 {
            let events = &self.events;
            self.owner_queue
                .wait_for_room(n, self.owner_limit, || events.len(), lifecycle::stopping);
        }
        if self.events.send(ev).is_ok() {
            self.owner_queue.sent(n);
        }
    }

    /// Records an event in the capture and hands it to the owner, followed by
    /// the note a failed capture write produced.
    pub fn emit(&mut self, ev: Event) {
        let note = self.recorder.capture(&ev);
        self.send(ev);
        if let Some(n) = note {
            self.send(n);
        }
    }

    pub fn note(&mut self, text: impl Into<String>) {
        let at = self.recorder.now();
        self.emit(Event::Note { at, text: text.into() });
    }

    /// An HTTP fact seen at `at` (by a worker thread).
    pub fn http(&mut self, mut info: HttpInfo, at: Instant) {
        info.at = self.recorder.since_start(at);
        self.emit(Event::Http(info));
    }

    /// An exchange failed: the request it carried (if any) will get no
    /// response, so it stops waiting for one.
    pub fn fail(&mut self, info: HttpInfo, at: Instant) {
        if let Some(id) = &info.request_id {
            self.recorder.abandon(id);
        }
        self.http(info, at);
    }

    /// Hands buffered capture records to the OS and wakes the owner.
    pub fn flush_and_wake(&mut self) {
        if let Some(n) = self.recorder.flush() {
            self.send(n);
        }
        if let Some(w) = &self.waker {
            w();
        }
    }
}

/// What differs between transports. The runner calls these from the session
/// thread only; a link's own threads report through [`Input`]s.
pub(crate) trait Link {
    type Msg: Send + 'static;

    /// How bytes the owner sends become lines on the wire: over stdio a raw
    /// line with embedded newlines is several lines; over HTTP a body is one
    /// message whatever it holds.
    fn split(&self, body: &[u8]) -> Vec<RawLine>;

    /// Transmits a message that was just recorded (or records why it cannot).
    fn send(&mut self, sink: &mut Sink, out: Outgoing);

    /// A received frame, after it was recorded and before it goes to the owner.
    fn observed(&mut self, _frame: &Frame) {}

    fn on_msg(&mut self, sink: &mut Sink, msg: Self::Msg);

    /// Starts the transport's shutdown sequence (idempotent).
    fn begin_shutdown(&mut self, sink: &mut Sink);

    /// Advances timers (shutdown steps, ordering gates).
    fn on_tick(&mut self, sink: &mut Sink);

    fn next_wakeup(&self) -> Option<Instant>;

    /// Whether the session is still open for new messages (a timed-out request
    /// is then cancelled with `notifications/cancelled`).
    fn open(&self) -> bool;

    /// Whether everything is over: the runner then emits `Closed`.
    fn finished(&self) -> bool;

    /// Last words before `Closed` (interrupt what still blocks on a socket…).
    fn finish(&mut self, _sink: &mut Sink) {}
}

/// What the owner tells the runner outside the command channel, because
/// that channel may be full: the UI never blocks on a send, so refused
/// commands are counted (and reported), and a shutdown is never lost.
#[derive(Default)]
pub(crate) struct OwnerFlags {
    refused: AtomicU64,
    shutdown: AtomicBool,
}

impl OwnerFlags {
    pub fn refuse(&self) {
        self.refused.fetch_add(1, Ordering::Relaxed);
    }

    pub fn request_shutdown(&self) {
        self.shutdown.store(true, Ordering::SeqCst);
    }

    fn take_refused(&self) -> u64 {
        self.refused.swap(0, Ordering::Relaxed)
    }

    #[cfg(test)]
    pub(crate) fn state(&self) -> (u64, bool) {
        (
            self.refused.load(Ordering::Relaxed),
            self.shutdown.load(Ordering::SeqCst),
        )
    }
}

/// A session's runner and the channels it reads: run on a session thread of
/// its own ([`SessionRunner::run`]), or by its owner's thread, one pass per
/// [`Pump::pump`] (the blocking CLI client, so that a request answered at
/// once costs no hand-off between threads).
pub(crate) struct SessionRunner<L: Link> {
    runner: Runner<L>,
    commands: Receiver<Command>,
    inputs: Receiver<Input<L::Msg>>,
    ended: bool,
}

/// A session run on its owner's thread (see [`SessionRunner`]).
pub(crate) trait Pump: Send {
    /// One pass, waiting for something to do at most until `until`; false
    /// once the session is over (`Closed` was emitted).
    fn pump(&mut self, until: Instant) -> bool;
}

impl<L: Link> SessionRunner<L> {
    pub fn new(
        link: L,
        sink: Sink,
        options: SessionOptions,
        commands: Receiver<Command>,
        inputs: Receiver<Input<L::Msg>>,
        owner: Arc<OwnerFlags>,
    ) -> Self {
        Self {
            runner: Runner::new(link, sink, options, owner),
            commands,
            inputs,
            ended: false,
        }
    }

    /// Runs it here until the link is finished, then emits `Closed` (on a
    /// session thread of its own).
    pub fn run(mut self) {
        self.runner.run(&self.commands, &self.inputs);
    }
}

impl<L: Link + Send> Pump for SessionRunner<L>
where
    L::Msg: Send,
{
    fn pump(&mut self, until: Instant) -> bool {
        if self.ended {
            return false;
        }
        self.runner.on_owner_thread = true;
        if !self.runner.step(&self.commands, &self.inputs, Some(until)) {
            self.runner.end();
            self.ended = true;
        }
        !self.ended
    }
}

struct Runner<L: Link> {
    link: L,
    sink: Sink,
    options: SessionOptions,
    owner: Arc<OwnerFlags>,
    commands_open: bool,
    stop: Receiver<()>,
    stop_seen: bool,
    /// Driven by [`Pump::pump`] rather than a thread of its own.
    on_owner_thread: bool,
    /// Passes in a row that took an input before the owner's commands.
    inputs_first: u8,
}

impl<L: Link> Runner<L> {
    fn new(link: L, sink: Sink, options: SessionOptions, owner: Arc<OwnerFlags>) -> Self {
        Runner {
            link,
            sink,
            options,
            owner,
            commands_open: true,
            stop: lifecycle::stop_signal(),
            stop_seen: false,
            on_owner_thread: false,
            inputs_first: 0,
        }
    }

    fn run(&mut self, commands: &Receiver<Command>, inputs: &Receiver<Input<L::Msg>>) {
        while self.step(commands, inputs, None) {}
        self.end();
    }

    /// One pass: waits for an input, a command, a stop or a timer (and at
    /// most until `until`), acts on it, then advances the timers. False once
    /// the link is finished.
    fn step(&mut self, commands: &Receiver<Command>, inputs: &Receiver<Input<L::Msg>>, until: Option<Instant>) -> bool {
        let wake = [self.next_wakeup(), until].into_iter().flatten().min();
        let wait = wake.map_or(Duration::from_secs(3600), |t| {
            t.saturating_duration_since(Instant::now())
        });
        let never = crossbeam_channel::never();
        let never_stop = crossbeam_channel::never();
        let cmd_rx = if self.commands_open { commands } else { &never };
        let stop = self.stop.clone();
        let stop_rx = if self.stop_seen { &never_stop } else { &stop };
        // On the owner's thread, the last few things the link handed over go
        // before the owner's next command: the end of a POST made inline
        // (its `WorkerDone`) frees the way for the next one to be made
        // inline too. A longer backlog (a server streaming) takes its turn
        // with the commands, as on a session thread.
        // Never more than a few passes in a row, so a stream that keeps a
        // short backlog cannot hold back the owner's commands or a stop.
        let backlog = inputs.len();
        if self.on_owner_thread
            && self.inputs_first < 8
            && (1..=8).contains(&backlog)
            && let Ok(msg) = inputs.try_recv()
        {
            self.inputs_first += 1;
            self.on_input(msg);
        } else {
            self.inputs_first = 0;
            self.select_one(inputs, cmd_rx, stop_rx, wait);
        }
        self.after_pass(commands, inputs)
    }

    /// Waits for one input, command, stop or the time to pass, and acts on it.
    fn select_one(
        &mut self,
        inputs: &Receiver<Input<L::Msg>>,
        cmd_rx: &Receiver<Command>,
        stop_rx: &Receiver<()>,
        wait: Duration,
    ) {
        select! {
            recv(inputs) -> msg => {
                if let Ok(msg) = msg {
                    self.on_input(msg);
                }
            }
            recv(cmd_rx) -> cmd => match cmd {
                Ok(cmd) => self.on_command(cmd),
                Err(_) => {
                    // The owner is gone without saying goodbye: shut down.
                    self.commands_open = false;
                    self.link.begin_shutdown(&mut self.sink);
                }
            },
            recv(stop_rx) -> _ => {
                // mcpscope itself is asked to stop (a signal): end the
                // server as a normal shutdown would, and say why.
                self.stop_seen = true;
                let why = lifecycle::stop_reason().unwrap_or_else(|| "mcpscope is stopping".into());
                self.sink.note(format!("{why}: shutting the server down"));
                self.link.begin_shutdown(&mut self.sink);
            }
            default(wait) => {}
        }
    }

    /// What every pass ends with: the owner's flags, the timers, a flush
    /// when nothing waits. False once the link is finished.
    fn after_pass(&mut self, commands: &Receiver<Command>, inputs: &Receiver<Input<L::Msg>>) -> bool {
        if self.owner.shutdown.swap(false, Ordering::SeqCst) {
            self.link.begin_shutdown(&mut self.sink);
        }
        let refused = self.owner.take_refused();
        if refused > 0 {
            self.sink.note(format!(
                "{refused} command(s) from the owner were not accepted: the session was not keeping up \
                 (they were not sent)"
            ));
        }
        self.on_tick();
        if inputs.is_empty() && (!self.commands_open || commands.is_empty()) {
            self.sink.flush_and_wake();
        }
        !self.link.finished()
    }

    /// After the last pass: the link's last words, then `Closed`.
    fn end(&mut self) {
        self.link.finish(&mut self.sink);
        // Readers still waiting for room must not wait for a runner that is gone.
        self.sink.input_budget.close();
        let at = self.sink.recorder.now();
        self.sink.emit(Event::Closed { at });
        self.sink.flush_and_wake();
    }

    fn next_wakeup(&self) -> Option<Instant> {
        let start = self.sink.recorder.start();
        let deadline = self.sink.recorder.next_deadline().map(|d| start + d);
        [deadline, self.link.next_wakeup()].into_iter().flatten().min()
    }

    fn on_input(&mut self, input: Input<L::Msg>) {
        match input {
            Input::Received { line, at } => {
                let held = line.bytes.len();
                let at = self.sink.recorder.since_start(at);
                let frame = self.sink.recorder.frame_at(Direction::In, line, at, None);
                self.link.observed(&frame);
                // Pings and other server requests are answered by the owner's
                // protocol driver.
                self.sink.emit(Event::Frame(frame));
                self.sink.input_budget.release(held);
            }
            Input::Stderr { line, at } => {
                let held = line.bytes.len();
                let at = self.sink.recorder.since_start(at);
                let s = self.sink.recorder.stderr_at(line, at);
                self.sink.emit(Event::Stderr(s));
                self.sink.input_budget.release(held);
            }
            Input::Link(m) => self.link.on_msg(&mut self.sink, m),
        }
    }

    fn on_command(&mut self, cmd: Command) {
        match cmd {
            Command::Send { line, timeout, headers } => self.send(line, timeout, headers),
            Command::Cancel { id, reason } => {
                self.sink.recorder.cancel(&id);
                let mut params = json!({ "requestId": id.to_json() });
                if let Some(r) = reason {
                    params["reason"] = Value::from(r);
                }
                let at = self.sink.recorder.now();
                self.sink.emit(Event::Cancelled { at, id });
                let line = Message::notification(methods::CANCELLED, Some(params)).to_line();
                self.send(line, None, Vec::new());
            }
            Command::Shutdown => self.link.begin_shutdown(&mut self.sink),
            Command::Note { text } => self.sink.note(text),
            Command::Auth(mut exchange) => {
                exchange.at = self.sink.recorder.now();
                self.sink.emit(Event::Auth(exchange));
            }
            Command::App(mut message) => {
                message.at = self.sink.recorder.now();
                self.sink.emit(Event::App(message));
            }
            // Recorded once the answer is whole: its time is when its request went.
            Command::Model(mut exchange) => {
                exchange.at = self.sink.recorder.now().saturating_sub(exchange.total);
                self.sink.emit(Event::Model(exchange));
            }
        }
    }

    /// Records what the owner sends as outgoing frames, then hands it to the link.
    fn send(&mut self, body: Vec<u8>, timeout: Option<Duration>, headers: Vec<(String, String)>) {
        let at = self.sink.recorder.now();
        let timeout = timeout.or(self.options.request_timeout);
        let mut request_id = None;
        let mut method = None;
        let mut is_response = false;
        for line in self.link.split(&body) {
            let f = self.sink.recorder.frame_at(Direction::Out, line, at, timeout);
            if method.is_none() {
                method = f.class.method.clone();
                match f.class.kind {
                    Kind::Request => request_id = f.class.id.clone(),
                    Kind::Result | Kind::Error => is_response = true,
                    _ => {}
                }
            }
            self.sink.emit(Event::Frame(f));
        }
        let timeout = request_id.as_ref().and(timeout);
        self.link.send(
            &mut self.sink,
            Outgoing {
                body,
                request_id,
                method,
                is_response,
                headers,
                timeout,
            },
        );
    }

    fn on_tick(&mut self) {
        // The link's timers first: what it sends now may block this thread
        // (a POST made inline) past a request's deadline, which is then
        // said here, before the link's report of the POST is taken.
        self.link.on_tick(&mut self.sink);
        let now = self.sink.recorder.now();
        for t in self.sink.recorder.expire(now) {
            let id = t.id.clone();
            self.sink.emit(Event::TimedOut { at: now, timed_out: t });
            if self.options.cancel_on_timeout && self.link.open() {
                let params = json!({"requestId": id.to_json(), "reason": "timed out"});
                let line = Message::notification(methods::CANCELLED, Some(params)).to_line();
                self.send(line, None, Vec::new());
            }
        }
    }
}

/// The sink of a new session: a recorder starting now, appending to the
/// capture the options name (a capture that cannot be opened is said at once,
/// as a note starting with [`FAILED`]).
pub(crate) fn open_sink(options: &SessionOptions, target: &Target, events: Sender<Event>) -> Sink {
    let mut recorder = Recorder::new(options.limits, Instant::now()).with_tap(options.tap.clone());
    let mut failed = None;
    if let Some(path) = &options.capture {
        match (options.open_log)(path, target) {
            Ok(w) => recorder = recorder.with_capture(w),
            Err(e) => failed = Some(format!("{FAILED}{}", crate::text::ErrorChain(&*e))),
        }
    }
    let mut sink = Sink::new(recorder, events, options.waker.clone(), options.queued_bytes());
    if let Some(text) = failed {
        sink.note(text);
    }
    sink
}

/// Starts a named thread for a link (readers, writers, HTTP workers).
pub(crate) fn spawn_named(name: &str, f: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    std::thread::Builder::new().name(name.into()).spawn(f).map(|_| ())
}

#[cfg(test)]
mod tests {
    //! The runner's decisions, with a link that only remembers what it was
    //! asked (no process, no socket).
    use super::*;
    use crate::wire::framing::{LineEnding, LineSplitter};
    use crossbeam_channel::unbounded;

    #[derive(Default)]
    struct FakeLink {
        sent: Vec<Outgoing>,
        observed: Vec<Frame>,
        shutdowns: usize,
        open: bool,
    }

    impl Link for FakeLink {
        type Msg = ();
        fn split(&self, body: &[u8]) -> Vec<RawLine> {
            LineSplitter::lines_of(body)
        }
        fn send(&mut self, _sink: &mut Sink, out: Outgoing) {
            self.sent.push(out);
        }
        fn observed(&mut self, frame: &Frame) {
            self.observed.push(frame.clone());
        }
        fn on_msg(&mut self, _sink: &mut Sink, _msg: ()) {}
        fn begin_shutdown(&mut self, _sink: &mut Sink) {
            self.shutdowns += 1;
            self.open = false;
        }
        fn on_tick(&mut self, _sink: &mut Sink) {}
        fn next_wakeup(&self) -> Option<Instant> {
            None
        }
        fn open(&self) -> bool {
            self.open
        }
        fn finished(&self) -> bool {
            !self.open
        }
    }

    fn runner(request_timeout: Option<Duration>) -> (Runner<FakeLink>, Receiver<Event>) {
        let (tx, rx) = unbounded();
        let recorder = Recorder::new(crate::wire::classify::Limits::default(), Instant::now());
        let runner = Runner::new(
            FakeLink {
                open: true,
                ..FakeLink::default()
            },
            Sink::new(recorder, tx, None, 1 << 20),
            SessionOptions {
                request_timeout,
                ..SessionOptions::new(crate::record::capture::open_log)
            },
            Arc::new(OwnerFlags::default()),
        );
        (runner, rx)
    }

    fn send(r: &mut Runner<FakeLink>, line: &str, timeout: Option<Duration>) {
        r.on_command(Command::Send {
            line: line.as_bytes().to_vec(),
            timeout,
            headers: vec![("Mcp-Param-X".into(), "1".into())],
        });
    }

    fn events(rx: &Receiver<Event>) -> Vec<Event> {
        rx.try_iter().collect()
    }

    #[test]
    fn what_the_owner_sends_is_recorded_first_then_handed_to_the_link_as_it_is() {
        let (mut r, rx) = runner(None);
        send(&mut r, r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#, None);
        send(&mut r, r#"{"jsonrpc":"2.0","id":"s1","result":{}}"#, None);
        send(&mut r, "not json\nsecond line", None);
        let frames: Vec<Frame> = events(&rx)
            .into_iter()
            .filter_map(|e| match e {
                Event::Frame(f) => Some(f),
                _ => None,
            })
            .collect();
        // Two lines on the wire for the raw body, each its own frame.
        assert_eq!(frames.len(), 4);
        assert!(frames.iter().all(|f| f.direction == Direction::Out));
        let [request, response, raw] = &r.link.sent[..] else {
            panic!("three sends")
        };
        assert_eq!(request.request_id, Some(RequestId::Number(7)));
        assert_eq!(request.method.as_deref(), Some("tools/list"));
        assert!(!request.is_response);
        assert_eq!(request.headers, [("Mcp-Param-X".to_owned(), "1".to_owned())]);
        assert!(response.is_response && response.request_id.is_none());
        assert_eq!(raw.body, b"not json\nsecond line", "the bytes as given");
        assert_eq!(raw.request_id, None);
    }

    #[test]
    fn a_request_that_times_out_is_said_and_cancelled_only_while_the_link_is_open() {
        let (mut r, rx) = runner(Some(Duration::from_millis(1)));
        send(&mut r, r#"{"jsonrpc":"2.0","id":1,"method":"slow"}"#, None);
        std::thread::sleep(Duration::from_millis(5));
        r.on_tick();
        let evs = events(&rx);
        assert!(
            evs.iter()
                .any(|e| matches!(e, Event::TimedOut { timed_out, .. } if timed_out.id == RequestId::Number(1)))
        );
        let cancel = r.link.sent.last().unwrap();
        let text = String::from_utf8_lossy(&cancel.body);
        assert!(
            text.contains("notifications/cancelled") && text.contains("timed out"),
            "{text}"
        );
        // Once the link is closing, a timeout is said but nothing more is sent.
        r.link.open = false;
        send(
            &mut r,
            r#"{"jsonrpc":"2.0","id":2,"method":"slow"}"#,
            Some(Duration::from_millis(1)),
        );
        let sent = r.link.sent.len();
        std::thread::sleep(Duration::from_millis(5));
        r.on_tick();
        assert_eq!(r.link.sent.len(), sent, "no cancel to a closing server");
        assert!(events(&rx).iter().any(|e| matches!(e, Event::TimedOut { .. })));
    }

    #[test]
    fn a_cancel_is_recorded_and_sent_with_its_reason() {
        let (mut r, rx) = runner(None);
        send(&mut r, r#"{"jsonrpc":"2.0","id":3,"method":"tools/call"}"#, None);
        r.on_command(Command::Cancel {
            id: RequestId::Number(3),
            reason: Some("user".into()),
        });
        assert!(
            events(&rx)
                .iter()
                .any(|e| matches!(e, Event::Cancelled { id, .. } if *id == RequestId::Number(3)))
        );
        let text = String::from_utf8_lossy(&r.link.sent.last().unwrap().body).into_owned();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["method"], "notifications/cancelled");
        assert_eq!(v["params"], json!({"requestId": 3, "reason": "user"}));
    }

    #[test]
    fn a_received_line_is_framed_observed_and_its_bytes_given_back_to_the_readers() {
        let (mut r, rx) = runner(None);
        let budget = r.sink.input_budget();
        let line = RawLine {
            bytes: br#"{"jsonrpc":"2.0","method":"notifications/message"}"#.to_vec(),
            ending: LineEnding::Lf,
        };
        let held = line.bytes.len();
        budget.acquire(held);
        r.on_input(Input::Received {
            line,
            at: Instant::now(),
        });
        assert_eq!(r.link.observed.len(), 1);
        assert!(matches!(&events(&rx)[..], [Event::Frame(f)] if f.direction == Direction::In));
        assert_eq!(budget.held(), 0, "released once taken");
    }

    #[test]
    fn a_pumped_runner_acts_on_the_owners_thread_and_ends_when_the_owner_goes() {
        let (r, rx) = runner(None);
        let (commands_tx, commands) = crossbeam_channel::bounded::<Command>(4);
        let (_inputs_tx, inputs) = crossbeam_channel::bounded::<Input<()>>(4);
        let mut pumped = SessionRunner {
            runner: r,
            commands,
            inputs,
            ended: false,
        };
        // Nothing to do: a pass waits no longer than it is told.
        assert!(pumped.pump(Instant::now() + Duration::from_millis(5)));
        commands_tx
            .send(Command::Send {
                line: br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.to_vec(),
                timeout: Some(Duration::from_secs(9)),
                headers: Vec::new(),
            })
            .unwrap();
        assert!(pumped.pump(Instant::now() + Duration::from_secs(5)));
        let sent = &pumped.runner.link.sent;
        assert_eq!(sent.len(), 1, "sent within the pass that took the command");
        assert_eq!(
            sent[0].timeout,
            Some(Duration::from_secs(9)),
            "a request carries its timeout"
        );
        assert!(matches!(&events(&rx)[..], [Event::Frame(_)]));
        // The owner gone: the link shuts down, and the pass that finishes it says Closed.
        drop(commands_tx);
        let mut passes = 0;
        while pumped.pump(Instant::now() + Duration::from_secs(5)) {
            passes += 1;
            assert!(passes < 10, "ends");
        }
        assert_eq!(pumped.runner.link.shutdowns, 1);
        assert!(matches!(events(&rx).last(), Some(Event::Closed { .. })));
        assert!(!pumped.pump(Instant::now()), "over stays over");
    }

    #[test]
    fn the_owners_shutdown_and_refused_commands_are_noticed_on_the_next_pass() {
        let (mut r, rx) = runner(None);
        let (commands_tx, commands) = crossbeam_channel::bounded::<Command>(1);
        let (_inputs_tx, inputs) = crossbeam_channel::bounded::<Input<()>>(1);
        r.owner.refuse();
        r.owner.refuse();
        r.owner.request_shutdown();
        // Whatever wakes the runner next (here a note) ends the pass in which
        // the flags are read; the fake link is finished once shut down.
        commands_tx.send(Command::Note { text: "wake".into() }).unwrap();
        r.run(&commands, &inputs);
        assert_eq!(r.link.shutdowns, 1);
        let evs = events(&rx);
        assert!(
            evs.iter()
                .any(|e| matches!(e, Event::Note { text, .. } if text.starts_with("2 command(s)"))),
            "the refused commands are said"
        );
        assert!(matches!(evs.last(), Some(Event::Closed { .. })), "Closed comes last");
    }
}
