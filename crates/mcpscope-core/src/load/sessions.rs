//! The session load engine, for stdio servers (and https, which the HTTP
//! engine does not speak): every session is a [`Client`] (its own server
//! process over stdio) on a thread of its own, shaking hands in the chosen
//! era as `mcpscope call` does and sending one request at a time; the open
//! loop's timetable is shared. The run's clock (the timetable, the
//! duration, every latency) starts once every session is up: starting
//! servers is not the server's latency (a fixed-rate run counted seconds of
//! start-up in its p99). The servers' CPU and memory are sampled from
//! /proc every second.

use crate::client::{Client, ClientError};
use crate::load::LoadPlan;
use crate::load::plan::Timetable;
use crate::load::stats::{Outcome, ServerUsage, Stats};
use crate::platform::process::{Usage, usage};
use crate::protocol::handshake::HandshakeOptions;
use crate::transport::session::SessionOptions;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// What a run produced besides the figures.
pub struct SessionRun {
    pub stats: Stats,
    pub elapsed: Duration,
    pub servers: Vec<ServerUsage>,
    /// Captures kept (sampled sessions and failed ones).
    pub captures: Vec<PathBuf>,
    /// Sessions that could not start or shake hands, and why.
    pub failed_sessions: Vec<String>,
    /// How long the sessions took to be up before the clock started.
    pub ready_after: Duration,
}

struct Shared {
    stats: Mutex<Stats>,
    issued: AtomicU64,
    /// When the last session was up (or could not start): the run's clock.
    clock: OnceLock<Instant>,
    /// Sessions still starting.
    starting: Mutex<usize>,
    started: Condvar,
    /// The run's length from its clock, warm-up included.
    length: Option<Duration>,
    stop: Arc<AtomicBool>,
    pids: Mutex<Vec<u32>>,
    /// When the last session made its last call: the run's end (closing a
    /// session, a server's exit included, is not the load's time).
    calls_ended: Mutex<Option<Instant>>,
}

impl Shared {
    /// The run's clock; only read once [`Shared::ready`] returned.
    fn start(&self) -> Instant {
        *self.clock.get_or_init(Instant::now)
    }

    fn end(&self) -> Option<Instant> {
        self.length.map(|d| self.start() + d)
    }

    fn over(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || self.end().is_some_and(|e| Instant::now() >= e)
    }

    /// A session made its last call (or could make none).
    fn calls_ended(&self) {
        let now = Instant::now();
        let mut ended = self.calls_ended.lock().unwrap_or_else(PoisonError::into_inner);
        *ended = Some(ended.map_or(now, |e| e.max(now)));
    }

    fn stats(&self) -> std::sync::MutexGuard<'_, Stats> {
        self.stats.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A session is up, or could not start: waits for the others (`wait`),
    /// and the last starts the clock. A stop starts it at once.
    fn ready(&self, wait: bool) {
        let mut left = self.starting.lock().unwrap_or_else(PoisonError::into_inner);
        *left = left.saturating_sub(1);
        if *left == 0 {
            let _ = self.clock.set(Instant::now());
            self.started.notify_all();
            return;
        }
        while wait && self.clock.get().is_none() {
            if self.stop.load(Ordering::Relaxed) {
                let _ = self.clock.set(Instant::now());
                self.started.notify_all();
                return;
            }
            left = self
                .started
                .wait_timeout(left, Duration::from_millis(100))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

pub fn run(
    plan: LoadPlan,
    otlp_report: crate::interop::otlp_live::Report,
    stop: Arc<AtomicBool>,
    mut progress: impl FnMut(&Stats, Duration),
) -> SessionRun {
    let began = Instant::now();
    let sessions = plan.sessions.max(1);
    let shared = Arc::new(Shared {
        stats: Mutex::new(Stats::new(plan.warmup)),
        issued: AtomicU64::new(0),
        clock: OnceLock::new(),
        starting: Mutex::new(sessions),
        started: Condvar::new(),
        length: plan.duration.map(|d| d + plan.warmup),
        stop,
        pids: Mutex::new(Vec::new()),
        calls_ended: Mutex::new(None),
    });
    shared.stats().set_concurrency(plan.sessions);
    let timetable = plan.rate.map(Timetable::new);
    let mut threads = Vec::new();
    // Each session's thread holds a sender (nothing is ever sent): the
    // channel closes as the last one ends, a panic too, and the watcher
    // returns then rather than at its next wake-up.
    let (alive, all_ended) = crossbeam_channel::bounded::<()>(0);
    for index in 0..sessions {
        let mine = Arc::clone(&shared);
        let plan = plan.clone();
        let report = Arc::clone(&otlp_report);
        let alive = alive.clone();
        let t = std::thread::Builder::new()
            .name(format!("mcpscope-load-{index}"))
            .spawn(move || {
                let _alive = alive;
                one_session(&plan, &report, &mine, timetable, index)
            });
        match t {
            Ok(t) => threads.push(t),
            Err(e) => {
                shared.stats().record(
                    Duration::ZERO,
                    "the session",
                    Duration::ZERO,
                    &Outcome::Transport(format!("cannot start a thread: {e}")),
                );
                shared.ready(false);
            }
        }
    }
    let mut servers: Vec<ServerUsage> = Vec::new();
    let mut last_cpu: std::collections::HashMap<u32, Duration> = Default::default();
    let mut next_tick: Option<Instant> = None;
    drop(alive);
    while !all_ended_within(&all_ended, Duration::from_millis(20)) {
        let Some(&start) = shared.clock.get() else {
            continue;
        };
        let tick = *next_tick.get_or_insert(start + Duration::from_secs(1));
        let now = Instant::now();
        if now >= tick {
            let second = (now - start).as_secs();
            let pids = shared.pids.lock().unwrap_or_else(PoisonError::into_inner).clone();
            for pid in pids {
                if let Some(Usage {
                    cpu: used,
                    resident_kib: rss_kib,
                }) = usage(pid)
                {
                    let prev = last_cpu.insert(pid, used);
                    // Percent of one core over the second since the last sample.
                    let cpu = prev.map_or(0.0, |p| used.saturating_sub(p).as_secs_f64() * 100.0);
                    let entry = match servers.iter_mut().position(|s| s.pid == pid) {
                        Some(i) => &mut servers[i],
                        None => {
                            servers.push(ServerUsage {
                                pid,
                                samples: Vec::new(),
                            });
                            servers.last_mut().expect("pushed")
                        }
                    };
                    entry.samples.push((second, cpu, rss_kib));
                }
            }
            progress(&shared.stats(), now - start);
            next_tick = Some(tick + Duration::from_secs(1));
        }
    }
    let mut captures = Vec::new();
    let mut failed_sessions = Vec::new();
    for t in threads {
        match t.join() {
            Ok(r) => {
                captures.extend(r.kept);
                failed_sessions.extend(r.failed);
            }
            Err(_) => failed_sessions.push("a session's thread panicked".into()),
        }
    }
    let start = shared.start();
    let ended = *shared.calls_ended.lock().unwrap_or_else(PoisonError::into_inner);
    let elapsed = ended.map_or_else(|| start.elapsed(), |e| e.saturating_duration_since(start));
    let stats = std::mem::replace(&mut *shared.stats(), Stats::new(Duration::ZERO));
    SessionRun {
        stats,
        elapsed,
        servers,
        captures,
        failed_sessions,
        ready_after: start.saturating_duration_since(began),
    }
}

/// Whether every session's thread ended (waiting `wait` at most).
fn all_ended_within(all_ended: &crossbeam_channel::Receiver<()>, wait: Duration) -> bool {
    all_ended.recv_timeout(wait) == Err(crossbeam_channel::RecvTimeoutError::Disconnected)
}

struct SessionEnd {
    kept: Option<PathBuf>,
    failed: Option<String>,
}

fn one_session(
    plan: &LoadPlan,
    otlp_report: &crate::interop::otlp_live::Report,
    shared: &Shared,
    timetable: Option<Timetable>,
    index: usize,
) -> SessionEnd {
    let capture = plan
        .sampling
        .capture_dir
        .as_ref()
        .map(|d| d.join(format!("session-{:04}.jsonl", index + 1)));
    let sampled = plan.sampling.sampled(index);
    let traces = match (&plan.sampling.otlp_endpoint, sampled) {
        (Some(e), true) => crate::interop::otlp_live::LiveExport::start(
            e,
            crate::record::capture::Header::for_target(&plan.target, "load"),
            env!("CARGO_PKG_VERSION"),
            crate::interop::otlp_live::interval_from_env(),
            Arc::clone(otlp_report),
        )
        .ok(),
        _ => None,
    };
    let options = SessionOptions {
        request_timeout: Some(plan.timeout),
        capture: capture.clone(),
        tap: traces.as_ref().map(crate::interop::otlp_live::LiveExport::tap),
        ..SessionOptions::new(crate::record::capture::open_log)
    };
    let mut client = Client::connect(plan.target.clone(), options, Box::new(|_| {}));
    if let Some(pid) = client.pid() {
        shared.pids.lock().unwrap_or_else(PoisonError::into_inner).push(pid);
    }
    let mut failed_any = false;
    let handshake = HandshakeOptions {
        protocol_version: plan.protocol_version.clone(),
        ..HandshakeOptions::default()
    };
    let failed = match client.establish(plan.era, &handshake, plan.timeout) {
        Ok(Ok(_)) => None,
        Ok(Err(e)) => Some(format!("session {}: the handshake failed: {e}", index + 1)),
        Err(e) => Some(format!("session {}: {e}", index + 1)),
    };
    // Up (or not): the run starts when every session is.
    shared.ready(failed.is_none());
    if failed.is_none() {
        if let Some(pid) = client.pid() {
            let mut pids = shared.pids.lock().unwrap_or_else(PoisonError::into_inner);
            if !pids.contains(&pid) {
                pids.push(pid);
            }
        }
        let mut picker = plan.workload.picker();
        let one_at_a_time = timetable.is_some() || plan.in_flight <= 1;
        if !one_at_a_time {
            failed_any |= pipelined(plan, shared, &mut client, &mut picker);
        }
        while one_at_a_time && !shared.over() {
            let k = shared.issued.fetch_add(1, Ordering::Relaxed);
            if plan.requests.is_some_and(|max| k >= max) {
                break;
            }
            let due = match &timetable {
                Some(t) => {
                    let due = shared.start() + t.due(k);
                    if shared.end().is_some_and(|e| due >= e) {
                        break;
                    }
                    let now = Instant::now();
                    if due > now {
                        std::thread::sleep(due - now);
                        shared.stats().record_lateness(Instant::now() - due);
                    }
                    due
                }
                None => Instant::now(),
            };
            let spec = plan.workload.next(&mut picker);
            let sent = Instant::now();
            let outcome = outcome_of(client.request(&spec.method, spec.params.clone(), plan.timeout));
            failed_any |= outcome != Outcome::Ok;
            let gone = outcome == Outcome::ServerExited;
            let now = Instant::now();
            let from = if timetable.is_some() { due } else { sent };
            shared
                .stats()
                .record(now - shared.start(), &spec.key(), now - from, &outcome);
            if gone {
                break;
            }
        }
    }
    shared.calls_ended();
    client.close();
    // The session is over: what is left of its traces goes now.
    drop(traces);
    let keep = sampled || failed_any || failed.is_some();
    let kept = match capture {
        Some(c) if keep => Some(c),
        Some(c) => {
            let _ = std::fs::remove_file(&c);
            None
        }
        None => None,
    };
    SessionEnd { kept, failed }
}

fn outcome_of(result: Result<crate::client::Response, ClientError>) -> Outcome {
    match result {
        Ok(r) => match &r.outcome {
            Err(e) => Outcome::RpcError(e.code),
            Ok(_) if r.is_tool_error() => Outcome::ToolError,
            Ok(_) => Outcome::Ok,
        },
        Err(ClientError::TimedOut { .. }) => Outcome::Timeout,
        Err(ClientError::ServerExited { .. } | ClientError::SpawnFailed(_)) => Outcome::ServerExited,
        Err(e) => Outcome::Transport(e.to_string()),
    }
}

/// A closed loop with `plan.in_flight` requests in flight on one session
/// (told apart by id, as JSON-RPC allows); whether any failed.
fn pipelined(plan: &LoadPlan, shared: &Shared, client: &mut Client, picker: &mut crate::load::plan::Picker) -> bool {
    struct InFlight {
        id: crate::wire::message::RequestId,
        method: String,
        key: String,
        sent: Instant,
    }
    let mut pending: Vec<InFlight> = Vec::new();
    let mut failed_any = false;
    let mut gone = false;
    let mut exhausted = false;
    loop {
        while !gone && !exhausted && pending.len() < plan.in_flight && !shared.over() {
            let k = shared.issued.fetch_add(1, Ordering::Relaxed);
            if plan.requests.is_some_and(|max| k >= max) {
                exhausted = true;
                break;
            }
            let spec = plan.workload.next(picker);
            let id = client.send(&spec.method, spec.params.clone(), plan.timeout);
            pending.push(InFlight {
                id,
                method: spec.method.clone(),
                key: spec.key(),
                sent: Instant::now(),
            });
        }
        let ids: Vec<_> = pending.iter().map(|p| (p.id.clone(), p.method.clone())).collect();
        let Some((id, result)) = client.wait_any(&ids, plan.timeout) else {
            return failed_any;
        };
        let Some(i) = pending.iter().position(|p| p.id == id) else {
            continue;
        };
        let done = pending.remove(i);
        let outcome = outcome_of(result);
        failed_any |= outcome != Outcome::Ok;
        gone |= outcome == Outcome::ServerExited;
        let now = Instant::now();
        shared
            .stats()
            .record(now - shared.start(), &done.key, now - done.sent, &outcome);
    }
}
