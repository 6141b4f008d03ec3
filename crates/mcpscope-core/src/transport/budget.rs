//! Byte budgets for the queues between a server and the owner.
//!
//! The queues count messages, which bounds memory only while messages are
//! small. A server that writes an endless line is read in pieces of the
//! in-memory cap (64 MiB): a thousand of those waiting in a queue is 64 GB.
//! The readers therefore also wait for bytes to be handed on before they
//! read more, so a flood waits in the server's pipe or socket (the server
//! blocks on its writes), whatever the size of its messages.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// Bytes that link threads have read and the runner has not yet taken.
#[derive(Debug)]
pub(crate) struct ByteBudget {
    limit: usize,
    state: Mutex<BudgetState>,
    freed: Condvar,
}

#[derive(Debug, Default)]
struct BudgetState {
    held: usize,
    /// The runner is gone: nobody will release, so nobody may wait.
    closed: bool,
    /// Readers waiting for room: a release wakes them only if there are any
    /// (a wake-up is a system call, made for every message received).
    waiting: usize,
}

impl ByteBudget {
    pub fn new(limit: usize) -> Self {
        Self {
            limit: limit.max(1),
            state: Mutex::new(BudgetState::default()),
            freed: Condvar::new(),
        }
    }

    fn state(&self) -> MutexGuard<'_, BudgetState> {
        // A reader that panicked while holding the lock leaves plain numbers behind.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits until `n` more bytes fit. One message larger than the whole
    /// budget passes once nothing else is held, so no size can deadlock.
    pub fn acquire(&self, n: usize) {
        let mut st = self.state();
        while !st.closed && st.held > 0 && st.held.saturating_add(n) > self.limit {
            st.waiting += 1;
            st = self.freed.wait(st).unwrap_or_else(|p| p.into_inner());
            st.waiting -= 1;
        }
        st.held = st.held.saturating_add(n);
    }

    pub fn release(&self, n: usize) {
        let mut st = self.state();
        st.held = st.held.saturating_sub(n);
        let waiting = st.waiting > 0;
        drop(st);
        if waiting {
            self.freed.notify_all();
        }
    }

    /// Lets every waiting (and future) reader through: the runner has ended.
    pub fn close(&self) {
        self.state().closed = true;
        self.freed.notify_all();
    }

    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    pub(crate) fn held(&self) -> usize {
        self.state().held
    }
}

/// Bytes of frames sent to the owner that the owner has not received yet.
///
/// Only the sending side is touched: what the owner has taken is what was
/// sent minus what the channel still holds, so the owner's code (the UI, the
/// CLI's client) stays a plain channel receiver.
#[derive(Debug, Default)]
pub(crate) struct OwnerQueue {
    sent: u64,
    /// (sequence number of a send, bytes it carried), oldest first.
    heavy: VecDeque<(u64, usize)>,
    bytes: usize,
}

/// How often a runner that waits for its owner looks again.
const OWNER_POLL: Duration = Duration::from_millis(2);

impl OwnerQueue {
    fn forget_taken(&mut self, queued: usize) {
        let taken = self.sent.saturating_sub(queued as u64);
        while let Some(&(seq, n)) = self.heavy.front() {
            if seq >= taken {
                break;
            }
            self.heavy.pop_front();
            self.bytes -= n;
        }
    }

    /// Waits until `n` more bytes fit beside what the owner has not taken
    /// (`queued()` is the channel's length; `gone()` says the owner left).
    pub fn wait_for_room(&mut self, n: usize, limit: usize, queued: impl Fn() -> usize, gone: impl Fn() -> bool) {
        loop {
            self.forget_taken(queued());
            if self.bytes == 0 || self.bytes.saturating_add(n) <= limit || gone() {
                return;
            }
            std::thread::sleep(OWNER_POLL);
        }
    }

    /// Counts one send of `n` bytes (0 for events that carry no payload).
    pub fn sent(&mut self, n: usize) {
        if n > 0 {
            self.heavy.push_back((self.sent, n));
            self.bytes += n;
        }
        self.sent += 1;
    }

    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn a_reader_waits_until_the_runner_releases() {
        let b = Arc::new(ByteBudget::new(100));
        b.acquire(80);
        let done = Arc::new(AtomicBool::new(false));
        let (b2, d2) = (b.clone(), done.clone());
        let t = std::thread::spawn(move || {
            b2.acquire(30);
            d2.store(true, Ordering::SeqCst);
        });
        std::thread::sleep(Duration::from_millis(50));
        assert!(!done.load(Ordering::SeqCst), "80 + 30 is over 100: it waits");
        b.release(80);
        t.join().unwrap();
        assert_eq!(b.held(), 30);
    }

    #[test]
    fn one_message_over_the_whole_budget_passes_when_nothing_is_held() {
        let b = ByteBudget::new(10);
        b.acquire(1000);
        assert_eq!(b.held(), 1000);
        b.release(1000);
        assert_eq!(b.held(), 0);
    }

    #[test]
    fn closing_lets_waiting_readers_through() {
        let b = Arc::new(ByteBudget::new(10));
        b.acquire(10);
        let b2 = b.clone();
        let t = std::thread::spawn(move || b2.acquire(10));
        std::thread::sleep(Duration::from_millis(20));
        b.close();
        t.join().unwrap();
    }

    #[test]
    fn the_owner_queue_forgets_what_the_owner_took() {
        let mut q = OwnerQueue::default();
        q.sent(0);
        q.sent(40);
        q.sent(0);
        q.sent(50);
        assert_eq!(q.bytes(), 90);
        // The owner took the first two sends: two are still in the channel.
        q.wait_for_room(10, 1000, || 2, || false);
        assert_eq!(q.bytes(), 50);
        // It took everything: room for anything.
        q.wait_for_room(10_000, 100, || 0, || false);
        assert_eq!(q.bytes(), 0);
    }

    #[test]
    fn a_full_owner_queue_waits_until_the_owner_takes() {
        let mut q = OwnerQueue::default();
        q.sent(80);
        let queued = std::sync::atomic::AtomicUsize::new(1);
        let polls = std::sync::atomic::AtomicUsize::new(0);
        q.wait_for_room(
            30,
            100,
            || {
                // The owner takes the message on the third look.
                if polls.fetch_add(1, Ordering::SeqCst) == 2 {
                    queued.store(0, Ordering::SeqCst);
                }
                queued.load(Ordering::SeqCst)
            },
            || false,
        );
        assert!(polls.load(Ordering::SeqCst) >= 3);
        assert_eq!(q.bytes(), 0);
    }
}
