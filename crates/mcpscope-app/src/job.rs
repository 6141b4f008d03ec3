//! Background work for panels: spawn a named job, poll its result once a
//! frame (egui's `poll_promise` idiom), never block the UI thread. A job
//! that cannot start, or whose thread dies before answering, ends with a
//! [`JobFailed`] that says so, so no panel waits forever.

use crossbeam_channel::{Receiver, SendTimeoutError, Sender, TryRecvError, bounded};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Wakes the UI (egui's `request_repaint`, wrapped).
pub type Wake = Arc<dyn Fn() + Send + Sync>;

/// Why a job gave no result.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct JobFailed(pub String);

/// A result that comes later.
pub struct Job<T> {
    name: &'static str,
    rx: Receiver<T>,
    /// Set when it could not start: handed out by the first poll.
    failed: Option<JobFailed>,
}

impl<T: Send + 'static> Job<T> {
    /// Runs `work` on a thread named `mcpscope-NAME`; `wake` is called when
    /// its result is ready.
    pub fn spawn(name: &'static str, wake: Option<Wake>, work: impl FnOnce() -> T + Send + 'static) -> Job<T> {
        let (tx, rx) = bounded(1);
        let spawned = std::thread::Builder::new()
            .name(format!("mcpscope-{name}"))
            .spawn(move || {
                // Wakes the UI however the work ends, a panic included: its
                // poll then says the worker stopped.
                struct WakeOnDrop(Option<Wake>);
                impl Drop for WakeOnDrop {
                    fn drop(&mut self) {
                        if let Some(w) = &self.0 {
                            w();
                        }
                    }
                }
                let _wake = WakeOnDrop(wake);
                let _ = tx.send(work());
            });
        Job {
            name,
            rx,
            failed: spawned
                .err()
                .map(|e| JobFailed(format!("cannot start the {name} worker: {e}"))),
        }
    }

    /// The result, once, when it is ready; `None` while it runs.
    pub fn poll(&mut self) -> Option<Result<T, JobFailed>> {
        if let Some(f) = self.failed.take() {
            return Some(Err(f));
        }
        match self.rx.try_recv() {
            Ok(v) => Some(Ok(v)),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => Some(Err(JobFailed(format!(
                "the {} worker stopped without an answer",
                self.name
            )))),
        }
    }
}

/// A job held by a panel: `Some` while it runs.
pub trait PollSlot<T> {
    /// The result of the job in the slot, once (the slot is emptied then).
    fn take_ready(&mut self) -> Option<Result<T, JobFailed>>;
}

impl<T: Send + 'static> PollSlot<T> for Option<Job<T>> {
    fn take_ready(&mut self) -> Option<Result<T, JobFailed>> {
        let out = self.as_mut()?.poll()?;
        *self = None;
        Some(out)
    }
}

/// A job whose work can fail: its outcome once, a worker that died being
/// one more way to fail (so a panel has one error to show, with its causes).
pub trait PollOutcome<U> {
    fn take_outcome(&mut self) -> Option<anyhow::Result<U>>;
}

impl<U: Send + 'static> PollOutcome<U> for Option<Job<anyhow::Result<U>>> {
    fn take_outcome(&mut self) -> Option<anyhow::Result<U>> {
        Some(self.take_ready()?.unwrap_or_else(|dead| Err(dead.into())))
    }
}

/// A worker that streams what it finds to the UI (a capture being read, a
/// directory listed every second, a session followed), where a [`Job`]
/// hands over one result: a named thread, a bounded channel (the worker
/// waits while the UI has not drained), a wake per item, and a stop flag
/// set and joined when the feed is dropped, so closing a panel never leaves
/// its worker running.
pub struct Feed<T> {
    rx: Receiver<T>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Set when it could not start.
    failed: Option<JobFailed>,
    /// Whether dropping the feed waits for its worker to end.
    join_on_drop: bool,
}

/// The worker's end of a [`Feed`].
pub struct Feeder<T> {
    tx: Sender<T>,
    stop: Arc<AtomicBool>,
    wake: Option<Wake>,
}

impl<T: Send + 'static> Feeder<T> {
    /// Hands `item` to the UI and wakes it, waiting while the channel is
    /// full; false once the feed was dropped (the worker should end).
    pub fn send(&self, mut item: T) -> bool {
        loop {
            if self.stopped() {
                return false;
            }
            match self.tx.send_timeout(item, std::time::Duration::from_millis(100)) {
                Ok(()) => {
                    if let Some(w) = &self.wake {
                        w();
                    }
                    return true;
                }
                Err(SendTimeoutError::Timeout(back)) => item = back,
                Err(SendTimeoutError::Disconnected(_)) => return false,
            }
        }
    }

    /// Whether the feed was dropped.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Sleeps up to `d`, in short steps so a dropped feed is noticed at once.
    pub fn pause(&self, d: std::time::Duration) {
        let until = std::time::Instant::now() + d;
        while !self.stopped() {
            let left = until.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return;
            }
            std::thread::sleep(left.min(std::time::Duration::from_millis(50)));
        }
    }
}

impl<T: Send + 'static> Feed<T> {
    /// Runs `work` on a thread named `mcpscope-NAME` with a channel of `capacity` items.
    pub fn spawn(
        name: &'static str,
        capacity: usize,
        wake: Option<Wake>,
        work: impl FnOnce(Feeder<T>) + Send + 'static,
    ) -> Feed<T> {
        let (tx, rx) = bounded(capacity.max(1));
        let stop = Arc::new(AtomicBool::new(false));
        let feeder = Feeder {
            tx,
            stop: Arc::clone(&stop),
            wake,
        };
        let spawned = std::thread::Builder::new()
            .name(format!("mcpscope-{name}"))
            .spawn(move || work(feeder));
        let (thread, failed) = match spawned {
            Ok(t) => (Some(t), None),
            Err(e) => (None, Some(JobFailed(format!("cannot start the {name} worker: {e}")))),
        };
        Feed {
            rx,
            stop,
            thread,
            failed,
            join_on_drop: true,
        }
    }

    /// A feed whose drop only tells its worker to stop, for a worker that
    /// may be in the middle of a slow read when the UI lets go of it (a
    /// capture being loaded when its tab closes): the UI thread never waits.
    pub fn spawn_detached(
        name: &'static str,
        capacity: usize,
        wake: Option<Wake>,
        work: impl FnOnce(Feeder<T>) + Send + 'static,
    ) -> Feed<T> {
        let mut feed = Feed::spawn(name, capacity, wake, work);
        feed.join_on_drop = false;
        feed
    }

    /// The next item, if one is waiting.
    pub fn try_recv(&self) -> Option<T> {
        self.rx.try_recv().ok()
    }

    /// The channel, for a caller that drains in its own way.
    pub fn receiver(&self) -> &Receiver<T> {
        &self.rx
    }

    /// Why the worker never started, if it did not.
    pub fn failed(&self) -> Option<&JobFailed> {
        self.failed.as_ref()
    }
}

impl<T> Drop for Feed<T> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take()
            && self.join_on_drop
        {
            let _ = t.join();
        }
    }
}

/// Runs `work` on a thread of its own and forgets it (dropping a session,
/// which shuts its server down and may wait, off the UI thread).
pub fn detach(name: &'static str, work: impl FnOnce() + Send + 'static) {
    let _ = std::thread::Builder::new().name(format!("mcpscope-{name}")).spawn(work);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn wait<T: Send + 'static>(slot: &mut Option<Job<T>>) -> Result<T, JobFailed> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(r) = slot.take_ready() {
                return r;
            }
            assert!(Instant::now() < deadline, "the job never ended");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_job_hands_its_result_over_once_and_wakes_the_ui() {
        let woken = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let w = Arc::clone(&woken);
        let wake: Wake = Arc::new(move || w.store(true, std::sync::atomic::Ordering::SeqCst));
        let mut slot = Some(Job::spawn("test", Some(wake), || 6 * 7));
        assert_eq!(wait(&mut slot), Ok(42));
        assert!(slot.is_none(), "emptied once taken");
        assert!(slot.take_ready().is_none());
        assert!(woken.load(std::sync::atomic::Ordering::SeqCst));
    }

    #[test]
    fn a_failed_job_keeps_its_causes() {
        use anyhow::Context as _;
        let mut slot = Some(Job::spawn("read", None, || {
            std::fs::read("/nonexistent/mcpscope").context("cannot read /nonexistent/mcpscope")
        }));
        let deadline = Instant::now() + Duration::from_secs(10);
        let e = loop {
            if let Some(r) = slot.take_outcome() {
                break r.unwrap_err();
            }
            assert!(Instant::now() < deadline, "the job never ended");
            std::thread::sleep(Duration::from_millis(5));
        };
        assert_eq!(e.chain().count(), 2, "{e:#}");
        let mut dead: Option<Job<anyhow::Result<()>>> = Some(Job::spawn("doomed", None, || panic!("boom")));
        let e = loop {
            if let Some(r) = dead.take_outcome() {
                break r.unwrap_err();
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        assert!(e.to_string().contains("doomed worker stopped"), "{e}");
    }

    #[test]
    fn a_feed_streams_waits_for_the_ui_and_stops_its_worker_when_dropped() {
        let woken = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let w = Arc::clone(&woken);
        let wake: Wake = Arc::new(move || {
            w.fetch_add(1, Ordering::SeqCst);
        });
        let ended = Arc::new(AtomicBool::new(false));
        let e = Arc::clone(&ended);
        let feed = Feed::spawn("count", 2, Some(wake), move |f: Feeder<u32>| {
            let mut n = 0;
            while f.send(n) {
                n += 1;
            }
            e.store(true, Ordering::SeqCst);
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut got = Vec::new();
        while got.len() < 5 {
            assert!(Instant::now() < deadline, "the feed never delivered");
            match feed.try_recv() {
                Some(v) => got.push(v),
                None => std::thread::sleep(Duration::from_millis(2)),
            }
        }
        assert_eq!(got, [0, 1, 2, 3, 4], "in order, nothing lost");
        // Not drained: the worker waits on the full channel (2 + the one it holds).
        std::thread::sleep(Duration::from_millis(50));
        assert!(woken.load(Ordering::SeqCst) <= 8, "it ran ahead of the UI");
        assert!(!ended.load(Ordering::SeqCst));
        drop(feed);
        assert!(
            ended.load(Ordering::SeqCst),
            "dropping the feed stopped and joined its worker"
        );
    }

    #[test]
    fn a_detached_feed_does_not_wait_for_its_worker_but_stops_it() {
        let (release_tx, release_rx) = bounded::<()>(1);
        let (ended_tx, ended_rx) = bounded::<bool>(1);
        let feed = Feed::spawn_detached("slow", 1, None, move |f: Feeder<u8>| {
            // A slow read in progress when the feed is dropped.
            let _ = release_rx.recv();
            let _ = ended_tx.send(f.send(1));
        });
        let t = Instant::now();
        drop(feed);
        assert!(t.elapsed() < Duration::from_secs(1), "the drop waited for the worker");
        release_tx.send(()).unwrap();
        let sent = ended_rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(!sent, "the worker is told to stop at its next send");
    }

    #[test]
    fn a_job_whose_thread_dies_says_so() {
        let mut slot: Option<Job<u8>> = Some(Job::spawn("doomed", None, || panic!("the work failed")));
        let e = wait(&mut slot).unwrap_err();
        assert!(e.0.contains("doomed worker stopped"), "{e}");
    }
}
