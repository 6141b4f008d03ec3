//! A live session with one server, owned by a background thread: a child
//! process over stdio (this file) or a URL over HTTP ([`crate::transport::http`]).
//!
//! The owner (the desktop UI or the CLI) talks to the session only through two
//! channels: [`Command`]s in, [`Event`]s out. Separate threads write the
//! server's stdin and read its stdout and stderr, so a server that stops
//! reading, floods, or hangs cannot freeze the session thread or its owner.

use crate::protocol::methods;
use crate::record::capture;
use crate::record::recorder::Recorder;
use crate::transport::event::Event;
use crate::transport::process::{self, ExitInfo, ServerSpec};
use crate::transport::target::Target;
use crate::wire::classify::Limits;
use crate::wire::frame::Direction;
use crate::wire::framing::{LineSplitter, RawLine, read_lines};
use crate::wire::message::{ErrorObject, Message, RequestId};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TrySendError, bounded, select};
use serde_json::{Value, json};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Wakes the owner when events are waiting (the UI's `request_repaint`).
pub type Waker = Arc<dyn Fn() + Send + Sync>;

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
}

impl Default for SessionOptions {
    fn default() -> Self {
        Self {
            limits: Limits::default(),
            request_timeout: Some(Duration::from_secs(30)),
            cancel_on_timeout: true,
            capture: None,
            stdin_close_grace: Duration::from_secs(2),
            term_grace: Duration::from_secs(2),
            event_capacity: 64 * 1024,
            waker: None,
        }
    }
}

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
    Cancel { id: RequestId, reason: Option<String> },
    /// Close stdin, wait, SIGTERM, SIGKILL, as the stdio transport prescribes.
    Shutdown,
    /// Put a note on the timeline (and in the capture), in order with the
    /// frames: e.g. why a request is retried with another protocol version.
    Note { text: String },
}

/// The owner's handle on a session. Dropping it shuts the server down and
/// waits until no process of its group is left.
pub struct Session {
    commands: Sender<Command>,
    events: Receiver<Event>,
    next_id: AtomicI64,
    default_timeout: Option<Duration>,
    thread: Option<JoinHandle<()>>,
}

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
        let (cmd_tx, cmd_rx) = bounded(1024);
        let (ev_tx, ev_rx) = bounded(options.event_capacity.max(16));
        let default_timeout = options.request_timeout;
        let thread = std::thread::Builder::new()
            .name("mcpscope-session".into())
            .spawn(move || match target {
                Target::Stdio(spec) => run(spec, options, cmd_rx, ev_tx),
                Target::Http(http) => crate::transport::http::run(http, options, cmd_rx, ev_tx),
            })
            .expect("spawning the session thread");
        Session {
            commands: cmd_tx,
            events: ev_rx,
            next_id: AtomicI64::new(1),
            default_timeout,
            thread: Some(thread),
        }
    }

    pub fn events(&self) -> &Receiver<Event> {
        &self.events
    }

    /// The timeout requests get unless told otherwise.
    pub fn default_timeout(&self) -> Option<Duration> {
        self.default_timeout
    }

    /// A fresh request id (integers counting up from 1).
    pub fn next_id(&self) -> RequestId {
        RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    fn command(&self, c: Command) {
        // The session thread only goes away after Closed; a send after that
        // has nobody to act on it, which is what the caller wants anyway.
        let _ = self.commands.send(c);
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

    /// Starts shutting down; events keep arriving until [`Event::Closed`].
    pub fn shutdown(&self) {
        self.command(Command::Shutdown);
    }

    /// Shuts down and waits for the session to end, returning the events that
    /// had not been read yet.
    pub fn close(&mut self) -> Vec<Event> {
        let mut rest = Vec::new();
        if let Some(thread) = self.thread.take() {
            self.shutdown();
            // Keep draining so a full event channel cannot block the thread.
            loop {
                match self.events.recv_timeout(Duration::from_millis(50)) {
                    Ok(ev) => rest.push(ev),
                    Err(RecvTimeoutError::Disconnected) => break,
                    Err(RecvTimeoutError::Timeout) if thread.is_finished() => {
                        rest.extend(self.events.try_iter());
                        break;
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                }
            }
            let _ = thread.join();
        }
        rest
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.close();
    }
}

enum Internal {
    Stdout(RawLine, Instant),
    StdoutClosed(Option<String>),
    Stderr(RawLine, Instant),
    StderrClosed,
    WriteFailed { line: Vec<u8>, error: String, at: Instant },
    Exited(ExitInfo, Instant),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    Running,
    /// stdin closed; waiting for the server to exit by itself.
    ClosedStdin {
        deadline: Instant,
    },
    /// SIGTERM sent to the group.
    Terminated {
        deadline: Instant,
    },
    /// SIGKILL sent; waiting for the pipes to close.
    Killed {
        deadline: Instant,
    },
}

struct Runner {
    options: SessionOptions,
    recorder: Recorder,
    events: Sender<Event>,
    stdin: Option<Sender<Vec<u8>>>,
    pgid: u32,
    exited: bool,
    stdout_open: bool,
    stderr_open: bool,
    phase: Phase,
    /// Set once the leader has exited during shutdown, to bound how long we
    /// wait for pipes held open by processes that left the group.
    pipes_deadline: Option<Instant>,
}

fn run(spec: ServerSpec, options: SessionOptions, commands: Receiver<Command>, events: Sender<Event>) {
    let start = Instant::now();
    let mut recorder = Recorder::new(options.limits, start);
    let mut early_notes = Vec::new();
    if let Some(path) = &options.capture {
        match capture::Writer::create(path, &capture::Header::for_spec(&spec, "session")) {
            Ok(w) => recorder = recorder.with_capture(w),
            Err(e) => early_notes.push(format!("{e:#}")),
        }
    }
    let emit_now = |recorder: &mut Recorder, ev: Event| deliver(recorder, &events, ev);
    for text in early_notes {
        let at = recorder.now();
        emit_now(&mut recorder, Event::Note { at, text });
    }

    let spawned = match process::spawn(&spec) {
        Ok(s) => s,
        Err(error) => {
            let at = recorder.now();
            emit_now(&mut recorder, Event::SpawnFailed { at, error });
            let at = recorder.now();
            emit_now(&mut recorder, Event::Closed { at });
            recorder.flush();
            if let Some(w) = &options.waker {
                w();
            }
            return;
        }
    };
    let mut child = spawned.child;
    let pid = child.id();
    let at = recorder.now();
    emit_now(
        &mut recorder,
        Event::Spawned {
            at,
            pid,
            program: spawned.program,
            command_line: spec.display(),
        },
    );

    let (int_tx, int_rx) = bounded::<Internal>(8 * 1024);
    let (stdin_tx, stdin_rx) = bounded::<Vec<u8>>(1024);

    let mut stdin = child.stdin.take().expect("stdin is piped");
    let tx = int_tx.clone();
    spawn_named("mcpscope-stdin", move || {
        for line in stdin_rx {
            if let Err(e) = stdin.write_all(&line).and_then(|_| stdin.flush()) {
                let _ = tx.send(Internal::WriteFailed {
                    line,
                    error: e.to_string(),
                    at: Instant::now(),
                });
                // Keep draining so the session can report every lost line.
            }
        }
        // Dropping stdin here closes the pipe: the server sees EOF.
    });

    let stdout = child.stdout.take().expect("stdout is piped");
    let tx = int_tx.clone();
    spawn_named("mcpscope-stdout", move || {
        let result = read_lines(stdout, |line| {
            let _ = tx.send(Internal::Stdout(line, Instant::now()));
        });
        let _ = tx.send(Internal::StdoutClosed(result.err().map(|e| e.to_string())));
    });

    let stderr = child.stderr.take().expect("stderr is piped");
    let tx = int_tx.clone();
    spawn_named("mcpscope-stderr", move || {
        let _ = read_lines(stderr, |line| {
            let _ = tx.send(Internal::Stderr(line, Instant::now()));
        });
        let _ = tx.send(Internal::StderrClosed);
    });

    let tx = int_tx;
    spawn_named("mcpscope-wait", move || {
        let status = match child.wait() {
            Ok(s) => ExitInfo::from(s),
            Err(_) => ExitInfo {
                code: None,
                signal: None,
            },
        };
        let _ = tx.send(Internal::Exited(status, Instant::now()));
    });

    let mut runner = Runner {
        options,
        recorder,
        events,
        stdin: Some(stdin_tx),
        pgid: pid,
        exited: false,
        stdout_open: true,
        stderr_open: true,
        phase: Phase::Running,
        pipes_deadline: None,
    };
    runner.run(commands, int_rx);
}

fn spawn_named(name: &str, f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .expect("spawning a session I/O thread");
}

/// Records an event in the capture and hands it to the owner, followed by
/// the note a failed capture write produced (both runners do this).
pub(crate) fn deliver(recorder: &mut Recorder, events: &Sender<Event>, ev: Event) {
    let note = recorder.capture(&ev);
    let _ = events.send(ev);
    if let Some(n) = note {
        let _ = events.send(n);
    }
}

/// Hands buffered capture records to the OS and wakes the owner.
pub(crate) fn flush_and_wake(recorder: &mut Recorder, events: &Sender<Event>, waker: Option<&Waker>) {
    if let Some(n) = recorder.flush() {
        let _ = events.send(n);
    }
    if let Some(w) = waker {
        w();
    }
}

impl Runner {
    fn emit(&mut self, ev: Event) {
        deliver(&mut self.recorder, &self.events, ev);
    }

    fn note(&mut self, text: String) {
        let at = self.recorder.now();
        self.emit(Event::Note { at, text });
    }

    fn wake(&mut self) {
        flush_and_wake(&mut self.recorder, &self.events, self.options.waker.as_ref());
    }

    fn run(&mut self, commands: Receiver<Command>, internal: Receiver<Internal>) {
        let mut commands_open = true;
        loop {
            let wait = self.next_wakeup().map(|t| t.saturating_duration_since(Instant::now()));
            let never = crossbeam_channel::never();
            let cmd_rx = if commands_open { &commands } else { &never };
            let timeout = wait.unwrap_or(Duration::from_secs(3600));
            select! {
                recv(internal) -> msg => {
                    if let Ok(msg) = msg {
                        self.on_internal(msg);
                    }
                }
                recv(cmd_rx) -> cmd => match cmd {
                    Ok(cmd) => self.on_command(cmd),
                    Err(_) => {
                        // The owner is gone without saying goodbye: shut down.
                        commands_open = false;
                        self.begin_shutdown();
                    }
                },
                default(timeout) => {}
            }
            self.on_tick();
            if internal.is_empty() && (!commands_open || commands.is_empty()) {
                self.wake();
            }
            if self.finished() {
                break;
            }
        }
        let at = self.recorder.now();
        self.emit(Event::Closed { at });
        self.wake();
    }

    fn finished(&self) -> bool {
        if self.exited && !self.stdout_open && !self.stderr_open && self.phase != Phase::Running {
            return true;
        }
        // Pipes held by a process that escaped the group must not keep us here.
        self.exited && self.pipes_deadline.is_some_and(|d| Instant::now() >= d)
    }

    fn next_wakeup(&self) -> Option<Instant> {
        let start = self.recorder.start();
        let deadline = self.recorder.next_deadline().map(|d| start + d);
        let phase = match self.phase {
            Phase::Running => None,
            Phase::ClosedStdin { deadline } | Phase::Terminated { deadline } | Phase::Killed { deadline } => {
                Some(deadline)
            }
        };
        [deadline, phase, self.pipes_deadline].into_iter().flatten().min()
    }

    fn on_internal(&mut self, msg: Internal) {
        match msg {
            Internal::Stdout(line, at) => {
                let at = self.recorder.since_start(at);
                let frame = self.recorder.frame_at(Direction::In, line, at, None);
                // Pings are answered by the owner's protocol driver, like
                // every other server request.
                self.emit(Event::Frame(frame));
            }
            Internal::Stderr(line, at) => {
                let at = self.recorder.since_start(at);
                let s = self.recorder.stderr_at(line, at);
                self.emit(Event::Stderr(s));
            }
            Internal::StdoutClosed(err) => {
                self.stdout_open = false;
                if let Some(e) = err {
                    self.note(format!("reading stdout failed: {e}"));
                }
            }
            Internal::StderrClosed => self.stderr_open = false,
            Internal::WriteFailed { line, error, at } => {
                let at = self.recorder.since_start(at);
                self.emit(Event::WriteFailed { at, error, line });
            }
            Internal::Exited(status, at) => {
                self.exited = true;
                let at = self.recorder.since_start(at);
                self.emit(Event::Exited { at, status });
                if self.phase != Phase::Running {
                    self.after_leader_exit_in_shutdown();
                }
            }
        }
    }

    fn on_command(&mut self, cmd: Command) {
        match cmd {
            Command::Send { line, timeout, .. } => self.send_line(line, timeout),
            Command::Cancel { id, reason } => {
                self.recorder.cancel(&id);
                let mut params = json!({ "requestId": id.to_json() });
                if let Some(r) = reason {
                    params["reason"] = Value::from(r);
                }
                let at = self.recorder.now();
                self.emit(Event::Cancelled { at, id });
                let line = Message::notification(methods::CANCELLED, Some(params)).to_line();
                self.send_line(line, None);
            }
            Command::Shutdown => self.begin_shutdown(),
            Command::Note { text } => self.note(text),
        }
    }

    /// Records the line as one or more outgoing frames (a raw line with
    /// embedded newlines is several lines to the server) and queues it.
    fn send_line(&mut self, mut line: Vec<u8>, timeout: Option<Duration>) {
        line.push(b'\n');
        let at = self.recorder.now();
        let mut frames = Vec::new();
        let mut splitter = LineSplitter::new();
        splitter.push(&line, |l| frames.push(l));
        let timeout = timeout.or(self.options.request_timeout);
        for l in frames {
            let f = self.recorder.frame_at(Direction::Out, l, at, timeout);
            self.emit(Event::Frame(f));
        }
        let failed = match &self.stdin {
            None => Some(("stdin is already closed (the session is shutting down)", line)),
            Some(tx) => match tx.try_send(line) {
                Ok(()) => None,
                Err(TrySendError::Full(l)) => {
                    Some(("the server is not reading its stdin (1024 lines already queued)", l))
                }
                Err(TrySendError::Disconnected(l)) => Some(("the stdin writer has stopped", l)),
            },
        };
        if let Some((error, mut line)) = failed {
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            let at = self.recorder.now();
            self.emit(Event::WriteFailed {
                at,
                error: error.to_owned(),
                line,
            });
        }
    }

    fn on_tick(&mut self) {
        let now = self.recorder.now();
        for t in self.recorder.expire(now) {
            let id = t.id.clone();
            self.emit(Event::TimedOut { at: now, timed_out: t });
            if self.options.cancel_on_timeout && self.phase == Phase::Running {
                let params = json!({"requestId": id.to_json(), "reason": "timed out"});
                let line = Message::notification(methods::CANCELLED, Some(params)).to_line();
                self.send_line(line, None);
            }
        }
        let instant_now = Instant::now();
        match self.phase {
            Phase::ClosedStdin { deadline } if instant_now >= deadline && !self.exited => {
                self.signal(libc::SIGTERM, "did not exit after stdin was closed");
                self.phase = Phase::Terminated {
                    deadline: instant_now + self.options.term_grace,
                };
            }
            Phase::Terminated { deadline } if instant_now >= deadline && process::group_alive(self.pgid) => {
                self.signal(libc::SIGKILL, "still running after SIGTERM");
                self.phase = Phase::Killed {
                    deadline: instant_now + Duration::from_secs(1),
                };
            }
            Phase::Killed { deadline } if instant_now >= deadline => {
                // Everything that could be done is done; stop waiting for pipes.
                self.pipes_deadline.get_or_insert(instant_now);
                if !self.exited {
                    self.note("the server did not die after SIGKILL; giving up waiting".into());
                    self.exited = true;
                }
            }
            _ => {}
        }
    }

    fn signal(&mut self, sig: i32, why: &str) {
        if process::signal_group(self.pgid, sig) {
            self.note(format!(
                "{why}: sent {} to process group {}",
                process::signal_name(sig),
                self.pgid
            ));
        }
    }

    fn begin_shutdown(&mut self) {
        if self.phase != Phase::Running {
            return;
        }
        // Dropping the sender lets the writer flush what is queued, then close stdin.
        self.stdin = None;
        self.note("closed the server's stdin".into());
        self.phase = Phase::ClosedStdin {
            deadline: Instant::now() + self.options.stdin_close_grace,
        };
        if self.exited {
            self.after_leader_exit_in_shutdown();
        }
    }

    fn after_leader_exit_in_shutdown(&mut self) {
        // The leader is gone; whatever it started may not be.
        if process::group_alive(self.pgid) {
            self.signal(libc::SIGTERM, "the server exited but left processes behind");
            self.phase = Phase::Terminated {
                deadline: Instant::now() + self.options.term_grace,
            };
        }
        self.pipes_deadline = Some(Instant::now() + self.options.term_grace + Duration::from_secs(1));
    }
}
