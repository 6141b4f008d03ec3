//! The rows of a session that pass a filter (text, method, kinds hidden),
//! kept up to date incrementally as rows arrive. A changed filter is applied
//! a time budget at a time so that a UI frame never waits for a whole
//! session; the previous rows stay listed until the new ones are complete.

use crate::record::row_kind::RowKind;
use crate::record::store::{FrameStore, RowRef};
use std::collections::HashSet;

/// Which rows to show.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Filter {
    /// Case-insensitive text anywhere in the raw line.
    pub text: String,
    /// Case-insensitive part of the method (of the request, for responses).
    pub method: String,
    /// Kinds to hide.
    pub hidden: HashSet<RowKind>,
}

impl Filter {
    pub fn is_empty(&self) -> bool {
        self.text.is_empty() && self.method.is_empty() && self.hidden.is_empty()
    }

    pub fn matches(&self, store: &FrameStore, row: &RowRef<'_>) -> bool {
        Compiled::new(self).matches(store, row)
    }
}

/// Filter text, found in a line ignoring ASCII case. A needle without ASCII
/// letters is searched as it is (memmem, SIMD). One with letters is found
/// from its rarest byte (by a rough rank of bytes in JSON-RPC lines: a digit
/// or `_` before a lowercase letter, a letter before `"`), scanned for in
/// both cases with memchr and checked around each hit; scanning for the
/// first byte instead stopped at every `n` of every line.
#[derive(Clone, Debug)]
struct Needle {
    search: Search,
}

#[derive(Clone, Debug)]
enum Search {
    Empty,
    Exact(Box<memchr::memmem::Finder<'static>>),
    AnyCase {
        lower: Vec<u8>,
        /// Where the rarest byte sits in `lower`.
        at: usize,
    },
}

/// How common a byte is in JSON-RPC lines (higher: more common), roughly.
fn commonness(b: u8) -> u8 {
    match b {
        b'"' | b':' | b',' => 250,
        b'e' | b't' | b'a' | b'o' | b'i' | b'n' | b's' | b'r' => 200,
        b'{' | b'}' | b'l' | b'c' | b'd' | b'm' | b'u' | b'h' | b'p' => 180,
        b' ' | b'/' | b'.' => 150,
        b'a'..=b'z' => 120,
        b'0'..=b'9' => 100,
        _ => 50,
    }
}

impl Needle {
    fn new(text: &str) -> Self {
        let search = if text.is_empty() {
            Search::Empty
        } else if !text.bytes().any(|b| b.is_ascii_alphabetic()) {
            Search::Exact(Box::new(memchr::memmem::Finder::new(text.as_bytes()).into_owned()))
        } else {
            let lower = text.to_lowercase().into_bytes();
            let at = (0..lower.len()).min_by_key(|&i| commonness(lower[i])).unwrap_or(0);
            Search::AnyCase { lower, at }
        };
        Self { search }
    }

    fn found_in(&self, hay: &[u8]) -> bool {
        let (n, at) = match &self.search {
            Search::Empty => return true,
            Search::Exact(f) => return f.find(hay).is_some(),
            Search::AnyCase { lower, at } => (&lower[..], *at),
        };
        if n.len() > hay.len() {
            return false;
        }
        let rare = n[at];
        // Candidates for the rare byte where the whole needle still fits.
        let window = &hay[at..=hay.len() - n.len() + at];
        let mut from = 0;
        while let Some(p) = memchr::memchr2(rare, rare.to_ascii_uppercase(), &window[from..]) {
            let start = from + p;
            if hay[start..start + n.len()]
                .iter()
                .zip(n)
                .all(|(a, b)| a.to_ascii_lowercase() == *b)
            {
                return true;
            }
            from = start + 1;
        }
        false
    }
}

/// A filter ready to test rows with.
#[derive(Clone, Debug)]
struct Compiled {
    hidden: HashSet<RowKind>,
    method: Option<Needle>,
    text: Option<Needle>,
}

impl Compiled {
    fn new(f: &Filter) -> Self {
        Self {
            hidden: f.hidden.clone(),
            method: (!f.method.is_empty()).then(|| Needle::new(&f.method)),
            text: (!f.text.is_empty()).then(|| Needle::new(&f.text)),
        }
    }

    fn matches(&self, store: &FrameStore, row: &RowRef<'_>) -> bool {
        if !self.hidden.is_empty() && self.hidden.contains(&RowKind::of(row)) {
            return false;
        }
        if let Some(needle) = &self.method {
            let m = row
                .method()
                .or_else(|| row.link().and_then(|(req, _)| store.get(req)).and_then(|r| r.method()));
            if !m.is_some_and(|m| needle.found_in(m.as_bytes())) {
                return false;
            }
        }
        self.text.as_ref().is_none_or(|n| n.found_in(row.raw()))
    }
}

/// How long one frame may spend filtering before it draws: a 60 Hz frame is
/// 16.7 ms and drawing a million-row timeline takes under 0.5 ms (`ui_frame`
/// bench), so 10 ms still never delays a frame, and a full pass over a
/// million rows (~30 ms) is on screen within a few frames (`filter` bench).
pub const FILTER_BUDGET: std::time::Duration = std::time::Duration::from_millis(10);

/// A new filter being applied a frame's budget at a time, while the rows of
/// the previous one stay on screen.
struct Rescan {
    filter: Filter,
    compiled: Compiled,
    /// Rows to test: every row, or (a filter that narrows the previous one)
    /// only the rows that passed the previous one, then the rows added since.
    candidates: Option<Vec<u32>>,
    next: usize,
    /// Rows from here on are tested whatever the candidates.
    tail_from: usize,
    found: Vec<u32>,
}

/// The rows that pass the filter, kept up to date incrementally. A changed
/// filter is applied in slices of at most [`FILTER_BUDGET`] per frame; the
/// previous rows stay listed until the new ones are complete.
#[derive(Default)]
pub struct RowIndex {
    filter: Filter,
    compiled: Option<Compiled>,
    visible: Vec<u32>,
    scanned: usize,
    rescan: Option<Rescan>,
}

/// Whether every row passing `new` also passes `old`.
fn narrows(new: &Filter, old: &Filter) -> bool {
    new.text.to_lowercase().contains(&old.text.to_lowercase())
        && new.method.to_lowercase().contains(&old.method.to_lowercase())
        && new.hidden.is_superset(&old.hidden)
}

impl RowIndex {
    pub fn set_filter(&mut self, filter: Filter) {
        let target = self.rescan.as_ref().map_or(&self.filter, |r| &r.filter);
        if filter == *target {
            return;
        }
        if filter.is_empty() {
            // Every row: nothing to test.
            self.rescan = None;
            self.filter = filter;
            self.compiled = None;
            self.visible = (0..self.scanned as u32).collect();
            return;
        }
        // The rows on screen passed the filter shown: a filter that narrows it
        // only needs to test them (and the rows added since).
        let candidates = narrows(&filter, &self.filter).then(|| self.visible.clone());
        self.rescan = Some(Rescan {
            compiled: Compiled::new(&filter),
            filter,
            candidates,
            next: 0,
            tail_from: self.scanned,
            found: Vec::new(),
        });
    }

    pub fn filter(&self) -> &Filter {
        &self.filter
    }

    /// While a changed filter is being applied: how far it got (0 to 1).
    pub fn progress(&self) -> Option<f32> {
        let r = self.rescan.as_ref()?;
        let total = r.candidates.as_ref().map_or(r.tail_from, Vec::len).max(1);
        Some((r.next as f32 / total as f32).min(1.0))
    }

    /// Examines rows added since the last call, and goes on applying a
    /// changed filter; at most [`FILTER_BUDGET`] of work.
    pub fn sync(&mut self, store: &FrameStore) {
        self.sync_within(store, FILTER_BUDGET);
    }

    /// [`RowIndex::sync`] with a budget (`Duration::MAX`: until done).
    pub fn sync_within(&mut self, store: &FrameStore, budget: std::time::Duration) {
        let deadline = std::time::Instant::now().checked_add(budget);
        let over = || deadline.is_some_and(|d| std::time::Instant::now() >= d);
        if store.len() < self.scanned {
            // A new session replaced the store.
            self.visible.clear();
            self.scanned = 0;
            if let Some(r) = &mut self.rescan {
                r.candidates = None;
                r.next = 0;
                r.tail_from = 0;
                r.found.clear();
            }
        }
        if let Some(r) = &mut self.rescan {
            let mut tested = 0usize;
            loop {
                // The candidates first, then every row added since the rescan began.
                let row = match &r.candidates {
                    Some(c) if r.next < c.len() => c[r.next] as usize,
                    Some(c) => r.tail_from + (r.next - c.len()),
                    None => r.next,
                };
                if row >= store.len() {
                    break;
                }
                let rr = store.get(row).expect("in range");
                if r.compiled.matches(store, &rr) {
                    r.found.push(row as u32);
                }
                r.next += 1;
                tested += 1;
                if tested.is_multiple_of(1024) && over() {
                    return;
                }
            }
            let r = self.rescan.take().expect("checked above");
            self.filter = r.filter;
            self.compiled = Some(r.compiled);
            self.visible = r.found;
            self.scanned = store.len();
            return;
        }
        match &self.compiled {
            None => self.visible.extend(self.scanned as u32..store.len() as u32),
            Some(c) => {
                for i in self.scanned..store.len() {
                    let row = store.get(i).expect("in range");
                    if c.matches(store, &row) {
                        self.visible.push(i as u32);
                    }
                }
            }
        }
        self.scanned = store.len();
    }

    pub fn len(&self) -> usize {
        self.visible.len()
    }

    pub fn is_empty(&self) -> bool {
        self.visible.is_empty()
    }

    pub fn row_at(&self, position: usize) -> Option<usize> {
        self.visible.get(position).map(|&r| r as usize)
    }

    /// Position of a row in the filtered list (or of the nearest row before it).
    pub fn position_of(&self, row: usize) -> Option<usize> {
        match self.visible.binary_search(&(row as u32)) {
            Ok(p) => Some(p),
            Err(0) => None,
            Err(p) => Some(p - 1),
        }
    }

    pub fn reset(&mut self) {
        self.visible.clear();
        self.scanned = 0;
        if let Some(r) = self.rescan.take() {
            // Start the pending filter from scratch on the next sync.
            self.filter = Filter::default();
            self.compiled = None;
            self.set_filter(r.filter);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::model::SessionModel;
    use crate::record::replay::Replay;
    use crate::wire::frame::Direction;

    fn sample() -> SessionModel {
        Replay::of(&[
            (Direction::Out, r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
            (
                Direction::In,
                r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"Hello"}}"#,
            ),
            (Direction::In, r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#),
            (Direction::In, "Server started on stdio"),
            (Direction::Out, r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#),
        ])
        .model()
    }

    #[test]
    fn filters_by_text_method_and_kind_incrementally() {
        let m = sample();
        let mut idx = RowIndex::default();
        idx.sync(&m.store);
        assert_eq!(idx.len(), 5);
        idx.set_filter(Filter {
            text: "HELLO".into(),
            ..Filter::default()
        });
        idx.sync(&m.store);
        assert_eq!(idx.row_at(0), Some(1));
        assert_eq!(idx.len(), 1);
        idx.set_filter(Filter {
            method: "tools/".into(),
            ..Filter::default()
        });
        idx.sync(&m.store);
        assert_eq!(
            (0..idx.len()).map(|p| idx.row_at(p).unwrap()).collect::<Vec<_>>(),
            [0, 2],
            "responses match by their request's method"
        );
        let mut hidden = HashSet::new();
        hidden.insert(RowKind::NotJson);
        hidden.insert(RowKind::Notification);
        idx.set_filter(Filter {
            hidden,
            ..Filter::default()
        });
        idx.sync(&m.store);
        assert_eq!(idx.len(), 3);
    }

    /// Issue #14: a changed filter never blocks a frame. It is applied a slice
    /// at a time while the previous rows stay listed; a filter that narrows
    /// the previous one tests only the rows that passed it, and rows that
    /// arrive meanwhile are not missed.
    #[test]
    fn a_changed_filter_is_applied_in_slices_keeping_the_last_result() {
        let mut r = Replay::new().without_events();
        let mut m = SessionModel::new(crate::record::model::Source::Live {
            command_line: "t".into(),
        });
        let mut add = |m: &mut SessionModel, i: usize| {
            let word = if i.is_multiple_of(2) { "alpha" } else { "Beta" };
            let line =
                format!(r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"data":"{word} {i}"}}}}"#);
            let f = r.frame(Direction::In, line.as_bytes());
            m.apply(&crate::transport::event::Event::Frame(f));
        };
        for i in 0..20_000 {
            add(&mut m, i);
        }
        let mut idx = RowIndex::default();
        idx.sync(&m.store);
        assert_eq!(idx.len(), 20_000);
        idx.set_filter(Filter {
            text: "beta".into(),
            ..Filter::default()
        });
        idx.sync_within(&m.store, std::time::Duration::ZERO);
        assert!(
            idx.progress().is_some_and(|p| p < 1.0),
            "one slice, not the whole store"
        );
        assert_eq!(idx.len(), 20_000, "the last result stays until the new one is complete");
        // Rows that arrive while the filter is applied are tested too.
        add(&mut m, 20_001);
        let mut slices = 1;
        while idx.progress().is_some() {
            idx.sync_within(&m.store, std::time::Duration::ZERO);
            slices += 1;
        }
        assert!(slices > 5, "{slices}");
        assert_eq!(idx.len(), 10_001);
        assert_eq!(idx.row_at(10_000), Some(20_000));
        // Narrowing: only the 10,001 rows listed are tested, so fewer slices.
        idx.set_filter(Filter {
            text: "beta 1".into(),
            ..Filter::default()
        });
        let mut slices = 0;
        while {
            idx.sync_within(&m.store, std::time::Duration::ZERO);
            slices += 1;
            idx.progress().is_some()
        } {}
        assert!(slices <= 10_001 / 1024 + 1, "{slices}");
        let expected = (0..=20_001)
            .filter(|i| i % 2 == 1 && format!("{i}").starts_with('1'))
            .count();
        assert_eq!(idx.len(), expected);
        // Clearing the filter lists every row at once.
        idx.set_filter(Filter::default());
        assert_eq!(idx.len(), 20_001);
    }

    #[test]
    fn text_is_found_ignoring_ascii_case() {
        for (hay, needle, found) in [
            ("Hello World", "hello", true),
            ("Hello World", "O W", true),
            ("Hello World", "world!", false),
            ("abc", "", true),
            ("ab", "abc", false),
            ("xxAbC", "abc", true),
            ("ÉCOLE école", "école", true),
            // The rare byte is found mid-needle and the needle checked around it.
            ("hello NUMBER 42 from", "number 42", true),
            ("number 4 and 2", "number 42", false),
            ("42 number", "number 42", false),
            ("Tools/Call", "tools/call", true),
            ("x_y", "X_Y", true),
            ("4242", "42", true),
            ("no digits", "4", false),
        ] {
            assert_eq!(
                Needle::new(needle).found_in(hay.as_bytes()),
                found,
                "{hay:?} {needle:?}"
            );
        }
    }
}
