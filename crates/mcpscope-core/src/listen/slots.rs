//! The open connections of a listener, and which of them are waiting for
//! a request: a newcomer to a full house takes the place of the one that
//! has waited longest, never of one in an exchange or not yet read.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::Notify;

/// The open connections, and which of them are waiting for a request.
pub(crate) struct Slots {
    max: usize,
    inner: Mutex<SlotsInner>,
}

#[derive(Default)]
struct SlotsInner {
    next_id: u64,
    open: HashMap<u64, Entry>,
}

struct Entry {
    /// Since when it has waited for (the rest of) a request; `None` while an exchange runs.
    waiting_since: Option<std::time::Instant>,
    /// Told when the connection is closed to make room.
    evict: Arc<Notify>,
}

impl Slots {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            max,
            inner: Mutex::new(SlotsInner::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, SlotsInner> {
        // The map stays consistent whatever panicked while holding it.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn open(&self) -> usize {
        self.lock().open.len()
    }

    /// A slot for a new connection, making room if need be; `None` when
    /// every open connection is in the middle of an exchange or not yet
    /// looked at by its task.
    pub(crate) fn take(this: &Arc<Self>) -> Option<Slot> {
        let mut inner = this.lock();
        if inner.open.len() >= this.max {
            let (_, oldest) = inner
                .open
                .iter()
                .filter_map(|(id, e)| e.waiting_since.map(|t| (t, *id)))
                .min()?;
            if let Some(e) = inner.open.remove(&oldest) {
                e.evict.notify_one();
            }
        }
        let id = inner.next_id;
        inner.next_id += 1;
        let evict = Arc::new(Notify::new());
        // Not waiting until its task says so: a connection just accepted may
        // hold a whole request its task has not read yet, and closing it to
        // make room would leave that request unanswered.
        inner.open.insert(
            id,
            Entry {
                waiting_since: None,
                evict: evict.clone(),
            },
        );
        Some(Slot {
            slots: this.clone(),
            id,
            evict,
        })
    }
}

/// A connection's place among the open ones, given back when dropped,
/// however its task ends (a panic included).
pub(crate) struct Slot {
    slots: Arc<Slots>,
    id: u64,
    pub(crate) evict: Arc<Notify>,
}

impl Slot {
    pub(crate) fn waiting(&self) {
        if let Some(e) = self.slots.lock().open.get_mut(&self.id) {
            e.waiting_since = Some(std::time::Instant::now());
        }
    }

    /// Marks the connection busy with an exchange; false if it was closed to make room.
    pub(crate) fn busy(&self) -> bool {
        match self.slots.lock().open.get_mut(&self.id) {
            Some(e) => {
                e.waiting_since = None;
                true
            }
            None => false,
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.lock().open.remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_house_makes_room_by_closing_the_longest_waiting_connection() {
        let slots = Arc::new(Slots::new(2));
        let a = Slots::take(&slots).unwrap();
        let b = Slots::take(&slots).unwrap();
        a.waiting();
        assert!(b.busy());
        // `a` waited longest and is not in an exchange: it goes.
        let c = Slots::take(&slots).unwrap();
        assert_eq!(slots.open(), 2);
        assert!(!a.busy(), "closed to make room");
        assert!(c.busy());
        // Everyone busy: no room.
        assert!(Slots::take(&slots).is_none());
        drop(a);
        assert_eq!(slots.open(), 2, "an evicted slot was already given back");
        drop(b);
        assert_eq!(slots.open(), 1);
        drop(c);
        assert_eq!(slots.open(), 0);
    }

    /// #47 item 8: a burst of clients each sending a whole request at once.
    /// A connection just accepted is not closed to make room before its task
    /// has read what it sent: the newcomer is turned away (503) instead.
    #[test]
    fn a_connection_not_yet_read_is_not_closed_to_make_room() {
        let slots = Arc::new(Slots::new(2));
        let a = Slots::take(&slots).unwrap();
        let b = Slots::take(&slots).unwrap();
        assert!(Slots::take(&slots).is_none(), "neither has been read yet");
        assert!(a.busy() && b.busy(), "neither was closed");
        b.waiting();
        let c = Slots::take(&slots).unwrap();
        assert!(!b.busy(), "waiting, so it made room");
        assert!(a.busy() && c.busy());
    }
}
