//! Process-wide stop: when mcpscope itself is asked to end (SIGINT, SIGTERM,
//! SIGHUP), every live session and proxy runs its normal shutdown sequence
//! (close stdin, SIGTERM, SIGKILL to the server's process group) and records
//! why in its capture, instead of the process vanishing and leaving servers
//! and their children behind.
//!
//! The binary installs the signal handlers; this module is what they call,
//! and what sessions listen to. No signal handling happens here.

use crossbeam_channel::{Receiver, Sender, bounded};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

struct State {
    /// Dropped (closing the channel) when a stop is requested: every receiver wakes.
    sender: Mutex<Option<Sender<()>>>,
    receiver: Receiver<()>,
    reason: Mutex<Option<String>>,
    live: AtomicUsize,
    idle_lock: Mutex<()>,
    idle: Condvar,
}

fn state() -> &'static State {
    static STATE: OnceLock<State> = OnceLock::new();
    STATE.get_or_init(|| {
        let (tx, rx) = bounded(1);
        State {
            sender: Mutex::new(Some(tx)),
            receiver: rx,
            reason: Mutex::new(None),
            live: AtomicUsize::new(0),
            idle_lock: Mutex::new(()),
            idle: Condvar::new(),
        }
    })
}

/// Asks every live session to shut down, and new ones not to start.
/// `reason` is recorded in each capture (e.g. "mcpscope received SIGTERM").
/// Later calls keep the first reason.
pub fn request_stop(reason: impl Into<String>) {
    let s = state();
    {
        let mut r = s.reason.lock().unwrap_or_else(|e| e.into_inner());
        if r.is_none() {
            *r = Some(reason.into());
        }
    }
    s.sender.lock().unwrap_or_else(|e| e.into_inner()).take();
}

/// Whether a stop was requested.
pub fn stopping() -> bool {
    state().sender.lock().unwrap_or_else(|e| e.into_inner()).is_none()
}

pub fn stop_reason() -> Option<String> {
    state().reason.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// A channel that becomes ready (disconnected) once a stop is requested;
/// for `select!` in a session's loop.
pub fn stop_signal() -> Receiver<()> {
    state().receiver.clone()
}

/// Held by every running session and proxy; dropping it marks it finished.
pub struct LiveGuard(());

impl LiveGuard {
    pub fn new() -> Self {
        state().live.fetch_add(1, Ordering::SeqCst);
        LiveGuard(())
    }
}

impl Default for LiveGuard {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        let s = state();
        if s.live.fetch_sub(1, Ordering::SeqCst) == 1 {
            let _g = s.idle_lock.lock().unwrap_or_else(|e| e.into_inner());
            s.idle.notify_all();
        }
    }
}

/// How many sessions and proxies are running.
pub fn live() -> usize {
    state().live.load(Ordering::SeqCst)
}

/// Waits until no session or proxy is running, at most `timeout`.
/// True when none is.
pub fn wait_idle(timeout: Duration) -> bool {
    let s = state();
    let deadline = Instant::now() + timeout;
    let mut g = s.idle_lock.lock().unwrap_or_else(|e| e.into_inner());
    while s.live.load(Ordering::SeqCst) > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        g = s
            .idle
            .wait_timeout(g, left.min(Duration::from_millis(100)))
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
    true
}
