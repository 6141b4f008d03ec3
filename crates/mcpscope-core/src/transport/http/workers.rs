//! The threads POSTs run on, kept for the next POST when theirs is done:
//! a session that sends one request after another (a test file, a chat)
//! would otherwise start a thread per request, which costs more than the
//! request itself against a fast local server. A worker idle for
//! [`IDLE`] ends; all end once the session's link is dropped.

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, unbounded};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a worker waits for another POST before it ends.
pub const IDLE: Duration = Duration::from_secs(10);

type Work = Box<dyn FnOnce() + Send>;

pub struct Workers {
    name: &'static str,
    tx: Sender<Work>,
    rx: Receiver<Work>,
    /// Workers waiting for work. One taken here has a job coming in `tx`.
    idle: Arc<Mutex<usize>>,
}

impl Workers {
    pub fn new(name: &'static str) -> Workers {
        let (tx, rx) = unbounded();
        Workers {
            name,
            tx,
            rx,
            idle: Arc::default(),
        }
    }

    /// Runs `work` on an idle worker, or on a new one.
    pub fn run(&self, work: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
        {
            let mut idle = self.idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if *idle > 0 {
                *idle -= 1;
                drop(idle);
                // A worker is counted idle only while it waits on `rx`, which
                // this holds too: the send cannot fail.
                let _ = self.tx.send(Box::new(work));
                return Ok(());
            }
        }
        let (rx, idle) = (self.rx.clone(), Arc::clone(&self.idle));
        std::thread::Builder::new()
            .name(self.name.into())
            .spawn(move || worker(Box::new(work), rx, idle))
            .map(|_| ())
    }
}

fn worker(first: Work, rx: Receiver<Work>, idle: Arc<Mutex<usize>>) {
    let count = |d: isize| {
        let mut n = idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *n = n.saturating_add_signed(d);
    };
    first();
    count(1);
    loop {
        match rx.recv_timeout(IDLE) {
            Ok(work) => {
                work();
                count(1);
            }
            Err(RecvTimeoutError::Timeout) => {
                let mut n = idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                // None idle: one was taken for a job on its way; stay for it.
                if *n > 0 {
                    *n -= 1;
                    return;
                }
            }
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn one_after_another_runs_on_one_thread_and_at_once_on_several() {
        let w = Workers::new("test-worker");
        let names = Arc::new(Mutex::new(Vec::new()));
        for _ in 0..20 {
            let (done_tx, done_rx) = crossbeam_channel::bounded(1);
            let names = Arc::clone(&names);
            w.run(move || {
                names.lock().unwrap().push(std::thread::current().id());
                done_tx.send(()).unwrap();
            })
            .unwrap();
            done_rx.recv().unwrap();
            // The worker counts itself idle just after the job: wait for it.
            while *w.idle.lock().unwrap() == 0 {
                std::thread::yield_now();
            }
        }
        let names = names.lock().unwrap();
        assert!(
            names.iter().all(|n| *n == names[0]),
            "one thread for jobs one after another"
        );
        // Jobs at once, each waiting for the others: each on its own thread.
        let barrier = Arc::new(std::sync::Barrier::new(4));
        let ran = Arc::new(AtomicUsize::new(0));
        let (done_tx, done_rx) = crossbeam_channel::unbounded();
        for _ in 0..4 {
            let (barrier, ran, done_tx) = (Arc::clone(&barrier), Arc::clone(&ran), done_tx.clone());
            w.run(move || {
                barrier.wait();
                ran.fetch_add(1, Ordering::SeqCst);
                done_tx.send(()).unwrap();
            })
            .unwrap();
        }
        for _ in 0..4 {
            done_rx
                .recv_timeout(Duration::from_secs(5))
                .expect("no job waits for a busy worker");
        }
        assert_eq!(ran.load(Ordering::SeqCst), 4);
    }
}
