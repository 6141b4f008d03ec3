//! The stdio link: a child process spoken to over its stdin and stdout,
//! one JSON-RPC message per line, with its stderr recorded beside.
//!
//! Shutdown follows the stdio transport: close stdin, wait, SIGTERM, wait,
//! SIGKILL, each to the server's whole process group (npx and uv start
//! grandchildren). The session ends when the group is gone, not when its
//! leader is: whoever waits for mcpscope finds nothing of the server left.
//! A watchdog process outside the group ends the group if mcpscope itself
//! dies without running this sequence (SIGKILL).

use crate::platform::process::Stop;
use crate::transport::event::Event;
use crate::transport::lifecycle;
use crate::transport::process::{self, ExitInfo, ServerSpec, ServerTree, Watchdog};
use crate::transport::runner::{self, Input, Link, Outgoing, OwnerFlags, Sink};
use crate::transport::session::{Command, SessionOptions};
use crate::transport::shutdown::{Shutdown, Step};
use crate::transport::target::Target;
use crate::wire::framing::{LineSplitter, RawLine, read_lines};
use crossbeam_channel::{Receiver, Sender, TrySendError, bounded};
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Lines that may wait for a server that is slow to read its stdin.
const STDIN_QUEUE: usize = 1024;
/// Lines read from the server that may wait for the session thread. Small:
/// a flood waits in the pipe (the server blocks on its writes), not in memory.
const INPUT_QUEUE: usize = 1024;
/// How often to look whether what the server left behind is gone (no event
/// says so: those processes are not our children).
const GROUP_POLL: Duration = Duration::from_millis(50);

pub(crate) enum StdioMsg {
    StdoutClosed(Option<String>),
    StderrClosed,
    WriteFailed { line: Vec<u8>, error: String, at: Instant },
    Exited(ExitInfo, Instant),
}

struct StdioLink {
    stdin: Option<Sender<Vec<u8>>>,
    /// The server's group and its daemons.
    tree: ServerTree,
    watchdog: Option<Watchdog>,
    term_grace: Duration,
    exited: bool,
    stdout_open: bool,
    stderr_open: bool,
    shutdown: Shutdown,
    /// Set once the leader has exited during shutdown, to bound how long we
    /// wait for pipes held open by processes that left the group.
    pipes_deadline: Option<Instant>,
    /// Keeps the runner's input channel open once the I/O threads are over:
    /// a closed channel is always ready, and the runner would spin on it
    /// while it waits for the group instead of sleeping until the next poll.
    _inputs: Sender<Input<StdioMsg>>,
}

pub(crate) fn run(
    spec: ServerSpec,
    options: SessionOptions,
    commands: Receiver<Command>,
    events: Sender<Event>,
    owner: Arc<OwnerFlags>,
) {
    let mut sink = runner::open_sink(&options, &Target::Stdio(spec.clone()), events);
    if lifecycle::stopping() {
        sink.note("not started: mcpscope is stopping");
        let at = sink.recorder.now();
        sink.emit(Event::Closed { at });
        sink.flush_and_wake();
        return;
    }
    let spawned = match process::spawn(&spec) {
        Ok(s) => s,
        Err(error) => {
            let at = sink.recorder.now();
            sink.emit(Event::SpawnFailed { at, error });
            let at = sink.recorder.now();
            sink.emit(Event::Closed { at });
            sink.flush_and_wake();
            return;
        }
    };
    let mut child = spawned.child;
    let tree = spawned.tree;
    let pid = child.id();
    let at = sink.recorder.now();
    sink.emit(Event::Spawned {
        at,
        pid,
        program: spawned.program,
        command_line: spec.display(),
    });
    let watchdog = match Watchdog::start(&tree, options.term_grace) {
        Ok(w) => Some(w),
        Err(e) => {
            sink.note(format!(
                "could not start the watchdog that ends the server's process group if mcpscope is killed: {e}"
            ));
            None
        }
    };

    let (tx, inputs) = bounded::<Input<StdioMsg>>(INPUT_QUEUE);
    let (stdin_tx, stdin_rx) = bounded::<Vec<u8>>(STDIN_QUEUE);
    let max_line = options.limits.max_held_line_bytes;

    let mut stdin = child.stdin.take().expect("stdin is piped");
    let t = tx.clone();
    let writer = move || {
        for line in stdin_rx {
            if let Err(e) = stdin.write_all(&line).and_then(|_| stdin.flush()) {
                let _ = t.send(Input::Link(StdioMsg::WriteFailed {
                    line,
                    error: e.to_string(),
                    at: Instant::now(),
                }));
                // Keep draining so the session can report every lost line.
            }
        }
        // Dropping stdin here closes the pipe: the server sees EOF.
    };

    let stdout = child.stdout.take().expect("stdout is piped");
    let t = tx.clone();
    let budget = sink.input_budget();
    let out_reader = move || {
        let result = read_lines(stdout, max_line, |line| {
            budget.acquire(line.bytes.len());
            let _ = t.send(Input::Received {
                line,
                at: Instant::now(),
            });
        });
        let _ = t.send(Input::Link(StdioMsg::StdoutClosed(result.err().map(|e| e.to_string()))));
    };

    let stderr = child.stderr.take().expect("stderr is piped");
    let t = tx.clone();
    let budget = sink.input_budget();
    let err_reader = move || {
        let _ = read_lines(stderr, max_line, |line| {
            budget.acquire(line.bytes.len());
            let _ = t.send(Input::Stderr {
                line,
                at: Instant::now(),
            });
        });
        let _ = t.send(Input::Link(StdioMsg::StderrClosed));
    };

    let t = tx.clone();
    let waiter = move || {
        let status = child.wait().map(ExitInfo::from).unwrap_or(ExitInfo {
            code: None,
            signal: None,
        });
        let _ = t.send(Input::Link(StdioMsg::Exited(status, Instant::now())));
    };

    type Job = Box<dyn FnOnce() + Send>;
    let threads: [(&str, Job); 4] = [
        ("mcpscope-stdin", Box::new(writer)),
        ("mcpscope-stdout", Box::new(out_reader)),
        ("mcpscope-stderr", Box::new(err_reader)),
        ("mcpscope-wait", Box::new(waiter)),
    ];
    for (name, f) in threads {
        if let Err(e) = runner::spawn_named(name, f) {
            // Without its I/O threads the session cannot run (the system is
            // out of threads or memory): end the server now and say why,
            // rather than leave the owner waiting on a session that panicked.
            tree.stop(Stop::ForGood);
            sink.note(format!(
                "mcpscope could not start the session's {name} thread ({e}): the server was stopped"
            ));
            let at = sink.recorder.now();
            sink.emit(Event::Closed { at });
            sink.flush_and_wake();
            return;
        }
    }

    let link = StdioLink {
        stdin: Some(stdin_tx),
        tree,
        watchdog,
        term_grace: options.term_grace,
        exited: false,
        stdout_open: true,
        stderr_open: true,
        shutdown: Shutdown::new(options.stdin_close_grace, options.term_grace),
        pipes_deadline: None,
        _inputs: tx,
    };
    runner::SessionRunner::new(link, sink, options, commands, inputs, owner).run();
}

impl StdioLink {
    /// Carries out a step of the shutdown sequence.
    fn perform(&mut self, sink: &mut Sink, step: Step, why: &str) {
        match step {
            Step::CloseStdin => {
                // Dropping the sender lets the writer flush what is queued, then close stdin.
                self.stdin = None;
                sink.note("closed the server's stdin");
            }
            Step::Stop(how) => {
                if self.tree.stop(how) {
                    sink.note(format!(
                        "{why}: sent {} to process group {} (and what it started outside it)",
                        how.name(),
                        self.tree.pgid
                    ));
                }
            }
            Step::GiveUp => {
                // Everything that could be done is done; stop waiting for
                // pipes and for the group.
                self.pipes_deadline.get_or_insert(Instant::now());
                if !self.exited {
                    sink.note("the server did not die after SIGKILL; giving up waiting");
                    self.exited = true;
                }
            }
        }
    }

    fn after_leader_exit_in_shutdown(&mut self, sink: &mut Sink) {
        // The leader is gone; whatever it started may not be.
        let alive = self.tree.alive();
        if let Some(step) = self.shutdown.leader_exited(Instant::now(), alive) {
            self.perform(sink, step, "the server exited but left processes behind");
        }
        self.pipes_deadline = Some(Instant::now() + self.term_grace + Duration::from_secs(1));
    }
}

/// What decides that a stdio session is over.
struct Ending<'a> {
    leader_exited: bool,
    pipes_open: bool,
    /// The shutdown sequence is between its steps (stdin closed, SIGTERM sent).
    shutting_down: bool,
    pipes_deadline_passed: bool,
    /// SIGKILL was sent and had its time.
    gave_up: bool,
    group_running: &'a dyn Fn() -> bool,
}

/// The session is over once the server exited, its pipes are done (closed
/// with no shutdown step pending, or past their deadline: pipes held by a
/// process that escaped the group must not keep the session open), and its
/// group is gone too: mcpscope must not exit while what the server left
/// behind still runs, unless SIGKILL has had its time (the watchdog then
/// ends the rest).
fn session_over(e: &Ending) -> bool {
    let pipes_done = (!e.pipes_open && !e.shutting_down) || e.pipes_deadline_passed;
    e.leader_exited && pipes_done && (e.gave_up || !(e.group_running)())
}

impl Link for StdioLink {
    type Msg = StdioMsg;

    fn split(&self, body: &[u8]) -> Vec<RawLine> {
        LineSplitter::lines_of(body)
    }

    fn send(&mut self, sink: &mut Sink, out: Outgoing) {
        let mut line = out.body;
        line.push(b'\n');
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
            line.pop();
            let at = sink.recorder.now();
            sink.emit(Event::WriteFailed {
                at,
                error: error.to_owned(),
                line,
            });
        }
    }

    fn on_msg(&mut self, sink: &mut Sink, msg: StdioMsg) {
        match msg {
            StdioMsg::StdoutClosed(err) => {
                self.stdout_open = false;
                if let Some(e) = err {
                    sink.note(format!("reading stdout failed: {e}"));
                }
            }
            StdioMsg::StderrClosed => self.stderr_open = false,
            StdioMsg::WriteFailed { line, error, at } => {
                let at = sink.recorder.since_start(at);
                sink.emit(Event::WriteFailed { at, error, line });
            }
            StdioMsg::Exited(status, at) => {
                self.exited = true;
                let at = sink.recorder.since_start(at);
                sink.emit(Event::Exited { at, status });
                if !self.shutdown.running() {
                    self.after_leader_exit_in_shutdown(sink);
                }
            }
        }
    }

    fn begin_shutdown(&mut self, sink: &mut Sink) {
        let Some(step) = self.shutdown.begin(Instant::now()) else {
            return;
        };
        self.perform(sink, step, "shutting down");
        if self.exited {
            self.after_leader_exit_in_shutdown(sink);
        }
    }

    fn on_tick(&mut self, sink: &mut Sink) {
        let now = Instant::now();
        // Only a timer that is due looks at the process table.
        if self.shutdown.next_wakeup().is_none_or(|d| now < d) {
            return;
        }
        let alive = self.tree.alive();
        if let Some(step) = self.shutdown.tick(now, self.exited, alive) {
            let why = match step {
                Step::Stop(Stop::Gently) => "did not exit after stdin was closed",
                _ => "still running after SIGTERM",
            };
            self.perform(sink, step, why);
        }
    }

    fn next_wakeup(&self) -> Option<Instant> {
        // The leader is gone but not its group: look again soon, so that the
        // session ends as soon as the group does (SIGTERM, then SIGKILL
        // after the grace, come from the shutdown's deadlines).
        let poll = (self.exited && !self.shutdown.running() && !self.shutdown.gave_up() && self.tree.alive())
            .then(|| Instant::now() + GROUP_POLL);
        [self.shutdown.next_wakeup(), self.pipes_deadline, poll]
            .into_iter()
            .flatten()
            .min()
    }

    fn open(&self) -> bool {
        self.shutdown.running()
    }

    fn finished(&self) -> bool {
        session_over(&Ending {
            leader_exited: self.exited,
            pipes_open: self.stdout_open || self.stderr_open,
            shutting_down: self.shutdown.running(),
            pipes_deadline_passed: self.pipes_deadline.is_some_and(|d| Instant::now() >= d),
            gave_up: self.shutdown.gave_up(),
            // Asked last: it looks at the process table.
            group_running: &|| self.tree.running(),
        })
    }

    fn finish(&mut self, sink: &mut Sink) {
        self.tree.reap_adopted();
        if let Some(w) = self.watchdog.take() {
            if self.tree.running() {
                // Leave it to the watchdog, which the group cannot outlive.
                sink.note(format!(
                    "processes of group {} are still alive; the watchdog ends them",
                    self.tree.pgid
                ));
                w.release();
            } else {
                w.stand_down();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Ending, session_over};
    #[cfg(unix)]
    use crate::transport::{
        event::Event,
        process::{self, ServerSpec},
        session::{Session, SessionOptions},
    };
    #[cfg(unix)]
    use std::time::{Duration, Instant};

    /// CPU time (user + system, in clock ticks) of this process's session
    /// threads, by thread id.
    #[cfg(unix)]
    fn session_threads() -> Vec<(String, u64)> {
        let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
            return Vec::new();
        };
        dir.flatten()
            .filter_map(|t| {
                let stat = std::fs::read_to_string(t.path().join("stat")).ok()?;
                let (head, rest) = stat.rsplit_once(')')?;
                head.ends_with("(mcpscope-sessio").then_some(())?;
                let f: Vec<&str> = rest.split_whitespace().collect();
                let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
                Some((t.file_name().to_string_lossy().into_owned(), ticks))
            })
            .collect()
    }

    /// Reads events until `found` takes one (within 10 s).
    #[cfg(unix)]
    fn wait_for<T>(session: &Session, what: &str, mut found: impl FnMut(&Event) -> Option<T>) -> T {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match session.events().recv_timeout(left) {
                Ok(ev) => {
                    if let Some(t) = found(&ev) {
                        return t;
                    }
                }
                Err(e) => panic!("waiting for {what}: {e}"),
            }
        }
    }

    /// The session thread sleeps while it waits: for the owner after the
    /// server exited by itself, and for what the server left behind to die
    /// (all the session's I/O threads are over then).
    #[test]
    fn a_stdio_session_is_over_when_the_server_its_pipes_and_its_group_are() {
        let alive = || true;
        let gone = || false;
        let base = Ending {
            leader_exited: true,
            pipes_open: false,
            shutting_down: false,
            pipes_deadline_passed: false,
            gave_up: false,
            group_running: &gone,
        };
        assert!(session_over(&base));
        assert!(
            !session_over(&Ending {
                leader_exited: false,
                ..base
            }),
            "the server still runs"
        );
        assert!(
            !session_over(&Ending {
                pipes_open: true,
                ..base
            }),
            "output still coming"
        );
        assert!(
            !session_over(&Ending {
                shutting_down: true,
                ..base
            }),
            "a shutdown step is pending"
        );
        // A pipe held open by an escaped process stops counting at its deadline.
        assert!(session_over(&Ending {
            pipes_open: true,
            pipes_deadline_passed: true,
            ..base
        }));
        // What the server left behind keeps the session open until SIGKILL had its time.
        assert!(!session_over(&Ending {
            group_running: &alive,
            ..base
        }));
        assert!(session_over(&Ending {
            group_running: &alive,
            gave_up: true,
            ..base
        }));
    }

    #[test]
    #[cfg(unix)] // reads threads' CPU from /proc
    fn the_session_thread_sleeps_while_it_waits() {
        let before: Vec<String> = session_threads().into_iter().map(|(t, _)| t).collect();
        // The leader exits at once; a grandchild that ignores SIGTERM and
        // holds none of the pipes stays.
        let script = "trap '' TERM; sleep 30 </dev/null >/dev/null 2>&1 & exit 0";
        let options = SessionOptions {
            stdin_close_grace: Duration::from_millis(200),
            term_grace: Duration::from_millis(1200),
            ..SessionOptions::new(crate::record::capture::open_log)
        };
        let mut session = Session::start(ServerSpec::new("sh", ["-c", script]), options);
        let pgid = wait_for(&session, "the server to start", |e| match e {
            Event::Spawned { pid, .. } => Some(*pid),
            _ => None,
        });
        wait_for(&session, "the server to exit", |e| {
            matches!(e, Event::Exited { .. }).then_some(())
        });
        let ours = || {
            session_threads()
                .into_iter()
                .filter(|(t, _)| !before.contains(t))
                .collect::<Vec<_>>()
        };
        // CPU used since `start` by the session threads there are now.
        let used_since = |start: &[(String, u64)]| {
            ours()
                .iter()
                .map(|(t, now)| now - start.iter().find(|(s, _)| s == t).map_or(0, |(_, c)| *c).min(*now))
                .sum::<u64>()
        };
        // SAFETY: sysconf only reads a system value.
        let ticks_per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;

        // Waiting for the owner, the server gone.
        std::thread::sleep(Duration::from_millis(100));
        let start = ours();
        std::thread::sleep(Duration::from_millis(800));
        let used = used_since(&start);
        assert!(
            used * 10 < ticks_per_second * 2,
            "{used} ticks of CPU in 0.8 s with nothing to do"
        );

        // Waiting for the grandchild, which only SIGKILL ends (measured
        // before the thread is over).
        session.shutdown();
        let began = Instant::now();
        let start = ours();
        std::thread::sleep(Duration::from_millis(800));
        let used = used_since(&start);
        assert!(
            used * 10 < ticks_per_second * 2,
            "{used} ticks of CPU in 0.8 s of waiting for the group"
        );
        wait_for(&session, "the session to end", |e| {
            matches!(e, Event::Closed { .. }).then_some(())
        });
        let took = began.elapsed();
        assert!(!process::group_running(pgid), "the session ended before its group");
        assert!(took >= Duration::from_millis(1000), "it waited for the grace: {took:?}");
        session.close();
    }
}
