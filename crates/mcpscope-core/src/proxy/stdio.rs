//! A transparent stdio pass-through that records both directions.
//!
//! A real client (a desktop assistant) starts mcpscope instead of the server.
//! Bytes are forwarded unchanged, chunk by chunk, as soon as they are read; a
//! copy of each chunk is framed and recorded on another thread, so recording
//! can never delay or alter the conversation.

use crate::platform::process::Stop;
use crate::proxy::gate::{Gate, GateAction, Waker};
use crate::record::capture;
use crate::sessions::index::{ClientInfo, EndCause, LiveSession, NewSession};
use crate::transport::event::Event;
use crate::transport::lifecycle;
use crate::transport::process::{self, ExitInfo, ServerSpec, ServerTree, SpawnError, Watchdog};
use crate::transport::recorder::Recorder;
use crate::transport::shutdown::{Shutdown, Step};
use crate::wire::classify::Limits;
use crate::wire::frame::Direction;
use crate::wire::framing::LineSplitter;
use crossbeam_channel::{Receiver, Sender, bounded, select};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct ProxyOptions {
    pub capture: Option<PathBuf>,
    /// Record into the per-user session directory instead: a capture and an
    /// index record the app lists and follows live. Takes precedence over `capture`.
    pub session: Option<LiveRecord>,
    pub limits: Limits,
    pub stdin_close_grace: Duration,
    pub term_grace: Duration,
    /// Sees every event recorded (OpenTelemetry sent live).
    pub tap: Option<crate::transport::recorder::EventTap>,
    /// The gate's control socket, noted in the live session's record so
    /// the app can attach to the held-frame queue.
    pub control_socket: Option<PathBuf>,
}

impl Default for ProxyOptions {
    fn default() -> Self {
        Self {
            capture: None,
            session: None,
            limits: Limits::default(),
            stdin_close_grace: Duration::from_secs(2),
            term_grace: Duration::from_secs(2),
            tap: None,
            control_socket: None,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Stream {
    ClientToServer,
    ServerToClient,
    ServerStderr,
}

enum Msg {
    Chunk(Stream, Vec<u8>, Instant),
    Eof(Stream),
    /// Forwarding failed: the receiving side (the client, or the server's
    /// stdin) stopped reading. What arrives is still recorded.
    Undeliverable(Stream, String),
    Exited(ExitInfo, Instant),
}

/// Where and under which name a proxied session is recorded.
#[derive(Clone, Debug)]
pub struct LiveRecord {
    /// The sessions directory (normally [`crate::record::state_dir::sessions_dir`]).
    pub dir: PathBuf,
    /// The server's name, as the client's config calls it.
    pub name: String,
}

/// How the proxy ended.
#[derive(Debug)]
pub struct ProxyOutcome {
    pub status: Option<ExitInfo>,
    /// Problems worth telling the user (capture failures, shutdown steps).
    pub notes: Vec<String>,
}

/// The server's stdin, shared so the proxy can close it when it must stop
/// while the client's pump still holds it.
type SharedStdin = Arc<Mutex<Option<std::process::ChildStdin>>>;

enum Sink<W> {
    Writer(W),
    Stdin(SharedStdin),
}

impl<W: Write> Sink<W> {
    fn forward(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Sink::Writer(w) => w.write_all(bytes).and_then(|_| w.flush()),
            Sink::Stdin(shared) => match shared.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
                Some(w) => w.write_all(bytes).and_then(|_| w.flush()),
                None => Err(std::io::Error::new(
                    std::io::ErrorKind::BrokenPipe,
                    "the server's stdin was closed",
                )),
            },
        }
    }

    fn close(self) {
        if let Sink::Stdin(shared) = self {
            // Closes the server's stdin: it sees EOF.
            shared.lock().unwrap_or_else(|e| e.into_inner()).take();
        }
    }
}

fn pump<W: Write>(mut from: impl Read, mut to: Option<Sink<W>>, stream: Stream, tx: Sender<Msg>) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                // Recorded before it is forwarded: otherwise the server's answer
                // could be recorded before the request that caused it.
                let _ = tx.send(Msg::Chunk(stream, buf[..n].to_vec(), Instant::now()));
                if let Some(w) = to.as_mut()
                    && let Err(e) = w.forward(&buf[..n])
                {
                    // The receiving side is gone; keep recording what arrives.
                    let _ = tx.send(Msg::Undeliverable(stream, e.to_string()));
                    if let Some(w) = to.take() {
                        w.close();
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    if let Some(w) = to.take() {
        w.close(); // closes the child's stdin when this pump forwards the client's input
    }
    let _ = tx.send(Msg::Eof(stream));
}

/// Runs the server between `client_in`/`client_out`, passing its stderr to
/// `client_err`, until either side closes.
pub fn run(
    spec: &ServerSpec,
    options: &ProxyOptions,
    client_in: impl Read + Send + 'static,
    client_out: impl Write + Send + 'static,
    client_err: impl Write + Send + 'static,
) -> Result<ProxyOutcome, SpawnError> {
    run_gated(spec, options, None, client_in, client_out, client_err)
}

/// [`run`] with a gate between the two sides: each whole line is recorded
/// as it arrived, then sent (or not, or changed) as the gate says. Without
/// one, chunks are forwarded as they are read.
pub fn run_gated(
    spec: &ServerSpec,
    options: &ProxyOptions,
    gate: Option<Box<dyn Gate>>,
    client_in: impl Read + Send + 'static,
    client_out: impl Write + Send + 'static,
    client_err: impl Write + Send + 'static,
) -> Result<ProxyOutcome, SpawnError> {
    let _live = lifecycle::LiveGuard::new();
    let start = Instant::now();
    let mut notes = Vec::new();
    let mut recorder = Recorder::new(options.limits, start).with_tap(options.tap.clone());
    let mut live = None;
    if let Some(session) = &options.session {
        // A session that cannot be recorded is still proxied: the client must not notice.
        match LiveSession::start(&session.dir, NewSession::stdio(&session.name, spec)) {
            Ok((mut l, file)) => {
                match capture::Writer::with_file(file, l.capture_path(), &capture::Header::for_spec(spec, "proxy")) {
                    Ok(w) => recorder = recorder.with_capture(Box::new(w)),
                    Err(e) => notes.push(format!("{ec}", ec = crate::text::ErrorChain(&e))),
                }
                if let Some(socket) = &options.control_socket
                    && let Err(e) = l.set_control_socket(socket)
                {
                    notes.push(format!("cannot update the session record: {e}"));
                }
                live = Some(l);
            }
            Err(e) => notes.push(format!("cannot record the session in {}: {e}", session.dir.display())),
        }
    } else if let Some(path) = &options.capture {
        match capture::Writer::open(path, &capture::Header::for_spec(spec, "proxy")) {
            Ok(w) => recorder = recorder.with_capture(Box::new(w)),
            Err(e) => notes.push(format!("{}{ec}", capture::FAILED, ec = crate::text::ErrorChain(&e))),
        }
    }
    let spawned = match process::spawn(spec) {
        Ok(s) => s,
        Err(error) => {
            let at = recorder.now();
            recorder.capture(&Event::SpawnFailed {
                at,
                error: error.clone(),
            });
            recorder.flush();
            if let Some(l) = live.as_mut() {
                let _ = l.finish(
                    EndCause::SpawnFailed,
                    format!("could not start the server: {error}"),
                    None,
                );
            }
            return Err(error);
        }
    };
    let mut child = spawned.child;
    let pgid = child.id();
    if let Some(l) = live.as_mut()
        && let Err(e) = l.set_server_pid(pgid)
    {
        notes.push(format!("cannot update the session record: {e}"));
    }
    let at = recorder.now();
    recorder.capture(&Event::Spawned {
        at,
        pid: pgid,
        program: spawned.program,
        command_line: spec.display(),
    });
    let tree = spawned.tree.clone();
    let watchdog = Watchdog::start(&tree, options.term_grace);

    // Small: a flood waits in the pipes (and slows the server), not in memory.
    let (tx, rx) = bounded::<Msg>(256);
    let stdin: SharedStdin = Arc::new(Mutex::new(child.stdin.take()));
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let named = |name: &str, f: Box<dyn FnOnce() + Send>| {
        std::thread::Builder::new()
            .name(name.into())
            .spawn(f)
            .expect("spawning a proxy thread");
    };
    let server_stdin = stdin.clone();
    let gated = match gate {
        None => {
            let t = tx.clone();
            named(
                "proxy-client-in",
                Box::new(move || {
                    pump::<std::io::Sink>(client_in, Some(Sink::Stdin(server_stdin)), Stream::ClientToServer, t)
                }),
            );
            let t = tx.clone();
            named(
                "proxy-server-out",
                Box::new(move || pump(stdout, Some(Sink::Writer(client_out)), Stream::ServerToClient, t)),
            );
            None
        }
        Some(mut gate) => {
            // The lines are sent by the recording thread, through an outlet
            // per side so a peer that stops reading holds up only its own side.
            let t = tx.clone();
            named(
                "proxy-client-in",
                Box::new(move || pump::<std::io::Sink>(client_in, None, Stream::ClientToServer, t)),
            );
            let t = tx.clone();
            named(
                "proxy-server-out",
                Box::new(move || pump::<std::io::Sink>(stdout, None, Stream::ServerToClient, t)),
            );
            let to_server = Outlet::start(
                Sink::<std::io::Sink>::Stdin(server_stdin),
                Stream::ClientToServer,
                tx.clone(),
            );
            let to_client = Outlet::start(Sink::Writer(client_out), Stream::ServerToClient, tx.clone());
            let (wake_tx, wake_rx) = bounded(1);
            gate.set_waker(Waker::new(wake_tx));
            Some(Gated {
                gate,
                to_server,
                to_client,
                wakes: wake_rx,
                actions: Vec::new(),
            })
        }
    };
    let t = tx.clone();
    named(
        "proxy-server-err",
        Box::new(move || pump(stderr, Some(Sink::Writer(client_err)), Stream::ServerStderr, t)),
    );
    named(
        "proxy-wait",
        Box::new(move || {
            let status = child.wait().map(ExitInfo::from).unwrap_or(ExitInfo {
                code: None,
                signal: None,
            });
            let _ = tx.send(Msg::Exited(status, Instant::now()));
        }),
    );

    let limit = options.limits.max_held_line_bytes;
    let mut rec = Recording {
        recorder,
        splitters: [
            LineSplitter::with_limit(limit),
            LineSplitter::with_limit(limit),
            LineSplitter::with_limit(limit),
        ],
        notes,
        stdin,
        live,
        end: None,
        gated,
        kill_server: false,
        disconnected: false,
    };
    if let Err(e) = &watchdog {
        rec.note(format!(
            "could not start the watchdog that ends the server's process group if mcpscope is killed: {e}"
        ));
    }
    let status = rec.drive(&rx, &tree, options);
    match watchdog {
        Ok(w) if tree.alive() => w.release(),
        Ok(w) => w.stand_down(),
        Err(_) => {}
    }
    rec.recorder.flush();
    if let Some(failed) = rec.recorder.capture_failed() {
        rec.notes.push(failed.to_owned());
    }
    rec.finish_session(status);
    Ok(ProxyOutcome {
        status,
        notes: rec.notes,
    })
}

struct Recording {
    recorder: Recorder,
    splitters: [LineSplitter; 3],
    notes: Vec<String>,
    stdin: SharedStdin,
    live: Option<LiveSession>,
    /// What ended the session first.
    end: Option<(EndCause, String)>,
    gated: Option<Gated>,
    /// The gate asked for the server to be killed.
    kill_server: bool,
    /// The gate disconnected both sides: shut the server down.
    disconnected: bool,
}

/// The gate and the two outlets it sends through.
struct Gated {
    gate: Box<dyn Gate>,
    to_server: Outlet,
    to_client: Outlet,
    wakes: Receiver<()>,
    /// Reused between calls.
    actions: Vec<GateAction>,
}

/// One side's writer on a thread of its own: lines queue here while the
/// peer is slow to read. Dropping the sender closes the side once the
/// queue is written.
struct Outlet {
    tx: Option<Sender<Vec<u8>>>,
}

impl Outlet {
    fn start<W: Write + Send + 'static>(mut sink: Sink<W>, stream: Stream, events: Sender<Msg>) -> Outlet {
        let (tx, rx) = bounded::<Vec<u8>>(1024);
        let name = match stream {
            Stream::ClientToServer => "proxy-to-server",
            _ => "proxy-to-client",
        };
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let mut failed = false;
                for bytes in rx {
                    if failed {
                        continue;
                    }
                    if let Err(e) = sink.forward(&bytes) {
                        failed = true;
                        let _ = events.send(Msg::Undeliverable(stream, e.to_string()));
                    }
                }
                sink.close();
            })
            .expect("spawning a proxy thread");
        Outlet { tx: Some(tx) }
    }

    fn send(&self, bytes: Vec<u8>) -> bool {
        self.tx.as_ref().is_some_and(|tx| tx.send(bytes).is_ok())
    }

    fn close(&mut self) {
        self.tx = None;
    }
}

/// What the proxy does about a pipe event: what ended the session (the
/// first one said is kept), a note for the timeline, whether to begin
/// shutting the server down.
#[derive(Debug, Default, PartialEq)]
struct Reaction {
    ends: Option<(EndCause, &'static str)>,
    note: Option<String>,
    shut: bool,
}

/// A pipe reached its end (`client_closed`: the client's stdin already had).
fn pipe_closed(stream: Stream, client_closed: bool) -> Reaction {
    match stream {
        Stream::ClientToServer if !client_closed => Reaction {
            ends: Some((EndCause::ClientClosed, "the client closed its stdin")),
            note: Some("the client closed its stdin; closed the server's stdin".into()),
            shut: true,
        },
        Stream::ServerToClient => Reaction {
            ends: Some((EndCause::ServerExited, "the server closed its stdout")),
            ..Reaction::default()
        },
        _ => Reaction::default(),
    }
}

/// A pipe could not be written: only the client not reading the server's
/// output ends the session (as if it had closed); the others are noted.
fn undeliverable(stream: Stream, error: &str) -> Reaction {
    match stream {
        Stream::ServerToClient => Reaction {
            ends: Some((EndCause::ClientStoppedReading, "the client stopped reading")),
            note: Some(format!(
                "the client stopped reading its stdin ({error}): the server's output from here on is \
                 recorded but not delivered; closed the server's stdin"
            )),
            shut: true,
        },
        Stream::ClientToServer => Reaction {
            note: Some(format!(
                "the server stopped reading its stdin ({error}): the client's messages from here on are \
                 recorded but not delivered"
            )),
            ..Reaction::default()
        },
        Stream::ServerStderr => Reaction {
            note: Some(format!(
                "the client's stderr cannot be written ({error}): the server's stderr is still recorded"
            )),
            ..Reaction::default()
        },
    }
}

/// How the session record says the session ended: what ended it first
/// (or "the proxy ended") and the server's exit status.
fn end_of_session(end: Option<(EndCause, String)>, status: Option<ExitInfo>) -> (EndCause, String) {
    let (cause, mut text) = end.unwrap_or((EndCause::Other, "the proxy ended".to_owned()));
    match status {
        Some(s) if text == "the server exited" => text = format!("the server {s}"),
        Some(s) => text.push_str(&format!("; the server {s}")),
        None => {}
    }
    (cause, text)
}

impl Recording {
    /// Remembers the first thing that ended the session.
    fn ended(&mut self, cause: EndCause, text: &str) {
        self.end.get_or_insert_with(|| (cause, text.to_owned()));
    }

    /// Notes the client's name (from its `initialize`, or a 2026 request's
    /// `_meta`) in the session record.
    fn note_client(&mut self, frame: &crate::wire::frame::Frame) {
        let Some(live) = self.live.as_mut() else { return };
        if live.record().client.is_some() {
            return;
        }
        let Some(client) = ClientInfo::from_client_frame(frame) else {
            return;
        };
        if let Err(e) = live.set_client(client) {
            self.notes.push(format!("cannot update the session record: {e}"));
        }
    }

    /// Marks the session record ended, saying how.
    fn finish_session(&mut self, status: Option<ExitInfo>) {
        let Some(live) = self.live.as_mut() else { return };
        let (cause, text) = end_of_session(self.end.clone(), status);
        if let Err(e) = live.finish(cause, text, status) {
            self.notes.push(format!("cannot update the session record: {e}"));
        }
    }

    fn on_chunk(&mut self, stream: Stream, bytes: &[u8], at: Instant) {
        let at = self.recorder.since_start(at);
        let mut lines = Vec::new();
        self.splitters[stream as usize].push(bytes, |l| lines.push(l));
        for line in lines {
            self.record_line(stream, line, at);
        }
    }

    fn on_eof(&mut self, stream: Stream) {
        if let Some(line) = self.splitters[stream as usize].finish() {
            let at = self.recorder.now();
            self.record_line(stream, line, at);
        }
    }

    fn record_line(&mut self, stream: Stream, line: crate::wire::framing::RawLine, at: Duration) {
        let ev = match stream {
            Stream::ClientToServer => {
                let frame = self.recorder.frame_at(Direction::Out, line, at, None);
                self.note_client(&frame);
                Event::Frame(frame)
            }
            Stream::ServerToClient => Event::Frame(self.recorder.frame_at(Direction::In, line, at, None)),
            Stream::ServerStderr => Event::Stderr(self.recorder.stderr_at(line, at)),
        };
        self.recorder.capture(&ev);
        if let (Event::Frame(frame), Some(g)) = (&ev, self.gated.as_mut()) {
            g.gate.arrived(frame, Instant::now(), &mut g.actions);
            self.act();
        }
    }

    /// Lets the gate act on time passing and on the user's commands.
    fn tick_gate(&mut self) {
        if let Some(g) = self.gated.as_mut() {
            g.gate.tick(Instant::now(), &mut g.actions);
            self.act();
        }
    }

    /// Does what the gate asked.
    fn act(&mut self) {
        let Some(g) = self.gated.as_mut() else { return };
        let actions = std::mem::take(&mut g.actions);
        for action in &actions {
            self.perform_gate(action);
        }
        if let Some(g) = self.gated.as_mut() {
            g.actions = actions;
            g.actions.clear();
        }
    }

    fn perform_gate(&mut self, action: &GateAction) {
        match action {
            GateAction::Send { toward, bytes, .. } => {
                let Some(g) = self.gated.as_mut() else { return };
                let outlet = match toward {
                    Direction::Out => &g.to_server,
                    Direction::In => &g.to_client,
                };
                if !outlet.send(bytes.clone()) {
                    let side = if *toward == Direction::Out { "server" } else { "client" };
                    self.note(format!(
                        "not sent to the {side}: its side is closed ({} bytes)",
                        bytes.len()
                    ));
                }
            }
            GateAction::Record(touch) => {
                let mut touch = touch.clone();
                touch.at = self.recorder.now();
                self.recorder.capture(&Event::Touch(Box::new(touch)));
            }
            GateAction::Disconnect { .. } => {
                if let Some(g) = self.gated.as_mut() {
                    g.to_server.close();
                    g.to_client.close();
                }
                self.note("disconnected: closed the server's stdin and the client's stdout".into());
                // The session is over: the server is shut down as if the
                // client had closed, and the proxy ends.
                self.disconnected = true;
            }
            GateAction::KillServer => self.kill_server = true,
            // Never asked of a stdio gate (its rules refuse them).
            GateAction::HttpStatus { .. } | GateAction::Slow { .. } => {}
        }
    }

    fn note(&mut self, text: String) {
        let at = self.recorder.now();
        self.recorder.capture(&Event::Note { at, text });
    }

    /// Records until one side closes (or mcpscope is told to stop); then ends
    /// the server (close stdin, SIGTERM, SIGKILL to its group) and returns its status.
    fn drive(&mut self, rx: &Receiver<Msg>, tree: &ServerTree, options: &ProxyOptions) -> Option<ExitInfo> {
        let pgid = tree.pgid;
        let mut exited: Option<ExitInfo> = None;
        let mut client_closed = false;
        let mut server_out_closed = false;
        let mut server_err_closed = false;
        let mut shutdown = Shutdown::new(options.stdin_close_grace, options.term_grace);
        // After the server exits: how long its pipes may still drain.
        let mut drain_until: Option<Instant> = None;
        let stop = lifecycle::stop_signal();
        let mut stopping = false;
        let never = crossbeam_channel::never();
        let wakes = self
            .gated
            .as_ref()
            .map_or_else(crossbeam_channel::never, |g| g.wakes.clone());
        loop {
            let gate_wake = self.gated.as_ref().and_then(|g| g.gate.next_wake());
            let deadline = [shutdown.next_wakeup(), drain_until, gate_wake]
                .into_iter()
                .flatten()
                .min();
            let wait = deadline.map_or(Duration::from_secs(3600), |d| {
                d.saturating_duration_since(Instant::now())
            });
            let stop_rx = if stopping { &never } else { &stop };
            enum Woke {
                Msg(Option<Msg>),
                Stop,
                Deadline,
                Gate,
            }
            let woke = select! {
                recv(rx) -> m => Woke::Msg(m.ok()),
                recv(stop_rx) -> _ => Woke::Stop,
                recv(wakes) -> _ => Woke::Gate,
                default(wait) => Woke::Deadline,
            };
            if matches!(woke, Woke::Gate | Woke::Deadline) {
                self.tick_gate();
                if std::mem::take(&mut self.kill_server) {
                    self.kill(tree);
                }
                if std::mem::take(&mut self.disconnected) {
                    self.ended(EndCause::Other, "a fault rule disconnected both sides");
                    self.shut(&mut shutdown, tree);
                }
                // What the user's command did is on disk at once: the app
                // follows the capture.
                if rx.is_empty() {
                    self.recorder.flush();
                }
            }
            let msg = match woke {
                Woke::Msg(m) => m,
                Woke::Stop => {
                    stopping = true;
                    let why = lifecycle::stop_reason().unwrap_or_else(|| "mcpscope is stopping".into());
                    self.ended(EndCause::ProxyStopped, &why);
                    self.note(format!("{why}: closed the server's stdin"));
                    self.shut(&mut shutdown, tree);
                    continue;
                }
                Woke::Gate => continue,
                Woke::Deadline => {
                    let now = Instant::now();
                    if exited.is_some() && drain_until.is_none_or(|d| now >= d) {
                        break;
                    }
                    match shutdown.tick(now, exited.is_some(), tree.alive()) {
                        Some(Step::GiveUp) => break,
                        Some(step) => self.perform(step, tree),
                        None => {}
                    }
                    continue;
                }
            };
            let Some(msg) = msg else { break };
            match msg {
                Msg::Chunk(stream, bytes, at) => self.on_chunk(stream, &bytes, at),
                Msg::Eof(stream) => {
                    self.on_eof(stream);
                    let r = pipe_closed(stream, client_closed);
                    match stream {
                        Stream::ClientToServer => client_closed = true,
                        Stream::ServerToClient => server_out_closed = true,
                        Stream::ServerStderr => server_err_closed = true,
                    }
                    self.react(r, &mut shutdown, tree);
                }
                Msg::Undeliverable(stream, error) => self.react(undeliverable(stream, &error), &mut shutdown, tree),
                Msg::Exited(status, at) => {
                    exited = Some(status);
                    self.ended(EndCause::ServerExited, "the server exited");
                    let at = self.recorder.since_start(at);
                    self.recorder.capture(&Event::Exited { at, status });
                    // Let the pipes drain what the server wrote before exiting.
                    drain_until = Some(Instant::now() + Duration::from_millis(500));
                    if let Some(step) = shutdown.leader_exited(Instant::now(), tree.alive()) {
                        self.perform(step, tree);
                    }
                }
            }
            if std::mem::take(&mut self.kill_server) {
                self.kill(tree);
            }
            if std::mem::take(&mut self.disconnected) {
                self.ended(EndCause::Other, "a fault rule disconnected both sides");
                self.shut(&mut shutdown, tree);
            }
            if server_out_closed && server_err_closed && exited.is_some() {
                break;
            }
            if rx.is_empty() {
                self.recorder.flush();
            }
        }
        if let Some(g) = self.gated.as_mut() {
            g.gate.closing(Instant::now(), &mut g.actions);
            self.act();
        }
        // Whatever the server started must not outlive the proxy.
        if tree.alive() && tree.stop(Stop::ForGood) {
            self.note(format!(
                "sent SIGKILL to what was left of process group {pgid} (and what it started outside it)"
            ));
        }
        tree.reap_adopted();
        let at = self.recorder.now();
        self.recorder.capture(&Event::Closed { at });
        exited
    }

    fn react(&mut self, r: Reaction, shutdown: &mut Shutdown, tree: &ServerTree) {
        if let Some((cause, text)) = r.ends {
            self.ended(cause, text);
        }
        if let Some(n) = r.note {
            self.note(n);
        }
        if r.shut {
            self.shut(shutdown, tree);
        }
    }

    /// Starts the shutdown sequence (once).
    fn shut(&mut self, shutdown: &mut Shutdown, tree: &ServerTree) {
        if let Some(step) = shutdown.begin(Instant::now()) {
            self.perform(step, tree);
        }
    }

    fn perform(&mut self, step: Step, tree: &ServerTree) {
        match step {
            Step::CloseStdin => self.close_stdin(),
            Step::Stop(how) => {
                if tree.stop(how) {
                    self.note(format!(
                        "sent {} to process group {} (and what it started outside it)",
                        how.name(),
                        tree.pgid
                    ));
                }
            }
            // The caller stops waiting.
            Step::GiveUp => {}
        }
    }

    /// A fault rule's `kill-server`: SIGKILL to the whole group, at once.
    fn kill(&mut self, tree: &ServerTree) {
        if tree.stop(Stop::ForGood) {
            self.note(format!(
                "killed the server: sent SIGKILL to process group {} (and what it started outside it)",
                tree.pgid
            ));
        }
    }

    fn close_stdin(&mut self) {
        match self.gated.as_mut() {
            // The writer closes the server's stdin once it has written what
            // is queued: lines the client sent just before closing still
            // reach the server.
            Some(g) => g.to_server.close(),
            None => {
                self.stdin.lock().unwrap_or_else(|e| e.into_inner()).take();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_closing_or_not_reading_ends_the_session_and_shuts_the_server() {
        let closed = pipe_closed(Stream::ClientToServer, false);
        assert_eq!(
            closed.ends,
            Some((EndCause::ClientClosed, "the client closed its stdin"))
        );
        assert!(closed.shut);
        assert_eq!(
            pipe_closed(Stream::ClientToServer, true),
            Reaction::default(),
            "said once"
        );
        let gone = undeliverable(Stream::ServerToClient, "Broken pipe");
        assert_eq!(gone.ends.map(|e| e.0), Some(EndCause::ClientStoppedReading));
        assert!(gone.shut && gone.note.unwrap().contains("(Broken pipe)"));
    }

    #[test]
    fn the_servers_side_closing_is_recorded_without_shutting_anything() {
        let out = pipe_closed(Stream::ServerToClient, false);
        assert_eq!(out.ends.map(|e| e.0), Some(EndCause::ServerExited));
        assert!(!out.shut && out.note.is_none());
        assert_eq!(pipe_closed(Stream::ServerStderr, false), Reaction::default());
        for stream in [Stream::ClientToServer, Stream::ServerStderr] {
            let r = undeliverable(stream, "EPIPE");
            assert!(r.ends.is_none() && !r.shut && r.note.is_some_and(|n| n.contains("EPIPE")));
        }
    }

    #[test]
    fn the_record_says_what_ended_the_session_with_the_servers_status() {
        let status = ExitInfo {
            code: Some(2),
            signal: None,
        };
        let (cause, text) = end_of_session(Some((EndCause::ServerExited, "the server exited".into())), Some(status));
        assert_eq!(cause, EndCause::ServerExited);
        assert_eq!(text, format!("the server {status}"));
        let (cause, text) = end_of_session(
            Some((EndCause::ClientClosed, "the client closed its stdin".into())),
            Some(status),
        );
        assert_eq!(cause, EndCause::ClientClosed);
        assert_eq!(text, format!("the client closed its stdin; the server {status}"));
        assert_eq!(end_of_session(None, None), (EndCause::Other, "the proxy ended".into()));
    }
}
