//! The rows of a session that pass a filter, kept up to date incrementally
//! as rows arrive. A changed filter is applied a time budget at a time so
//! that a UI frame never waits for a whole session; the previous rows stay
//! listed until the new ones are complete.

use super::Filter;
use super::ast::{CmpOp, Expr, Literal, Operand};
use super::rows::{RowSubject, SessionFacts};
use crate::timeline::row_kind::RowKind;
use crate::timeline::store::FrameStore;
use std::collections::HashSet;

/// The timeline's quick controls (text, method, kinds hidden): each writes
/// part of a filter expression, so the user sees the language they stand for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Shorthand {
    /// Case-insensitive text anywhere in the raw line.
    pub text: String,
    /// Case-insensitive part of the method (of the request, for responses).
    pub method: String,
    /// Kinds to hide.
    pub hidden: HashSet<RowKind>,
}

/// The filter's names for a timeline kind (a session row is a note or an HTTP exchange).
pub fn kind_names(k: RowKind) -> &'static [&'static str] {
    match k {
        RowKind::Request => &["request"],
        RowKind::Notification => &["notification"],
        RowKind::Result => &["result"],
        RowKind::RpcError => &["error"],
        RowKind::ToolError => &["iserror"],
        RowKind::ServerRequest => &["server_request"],
        RowKind::NotJson => &["not_json"],
        RowKind::Stderr => &["stderr"],
        RowKind::Meta => &["note", "http"],
        RowKind::Auth => &["auth"],
        RowKind::Touch => &["touch"],
        RowKind::App => &["app"],
        RowKind::Model => &["model"],
    }
}

impl Shorthand {
    pub fn is_empty(&self) -> bool {
        self.text.is_empty() && self.method.is_empty() && self.hidden.is_empty()
    }

    /// The expression these controls stand for (empty when they are).
    pub fn expression(&self) -> String {
        let lower = |s: &str| super::ast::quote(&s.to_lowercase());
        let mut parts = Vec::new();
        if !self.text.is_empty() {
            parts.push(format!("lower(raw) contains {}", lower(&self.text)));
        }
        if !self.method.is_empty() {
            let m = lower(&self.method);
            parts.push(format!(
                "(lower(method) contains {m} or lower(request.method) contains {m})"
            ));
        }
        if !self.hidden.is_empty() {
            let mut names: Vec<&str> = self.hidden.iter().flat_map(|k| kind_names(*k)).copied().collect();
            names.sort();
            let set: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
            parts.push(format!("not kind in {{{}}}", set.join(", ")));
        }
        parts.join(" and ")
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
    filter: Option<Filter>,
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
    filter: Option<Filter>,
    visible: Vec<u32>,
    scanned: usize,
    rescan: Option<Rescan>,
}

/// Whether every row passing `new` also passes `old` (so only the rows
/// `old` listed need testing): `new` is `old and …`, or the same text
/// search grown longer (typing), part by part.
pub fn narrows(new: &Expr, old: &Expr) -> bool {
    if new == old {
        return true;
    }
    match (new, old) {
        (Expr::And(a, b), Expr::And(c, d)) if narrows(a, c) && narrows(b, d) => true,
        (Expr::And(a, b), _) => narrows(a, old) || narrows(b, old),
        (Expr::Or(a, b), Expr::Or(c, d)) if narrows(a, c) && narrows(b, d) => true,
        (_, Expr::Or(a, b)) => narrows(new, a) || narrows(new, b),
        (
            Expr::Compare {
                left,
                op: CmpOp::Contains,
                right: Operand::Literal(Literal::Str(n), _),
            },
            Expr::Compare {
                left: l2,
                op: CmpOp::Contains,
                right: Operand::Literal(Literal::Str(o), _),
            },
        ) => left == l2 && n.contains(o.as_str()),
        // A field that contains some text is a field that exists: typing
        // `params.x contains "9"` after the bare path `params.x` tests only
        // the rows the path listed (a whole rescan at a million rows took
        // several frames for the last key).
        (
            Expr::Compare {
                left,
                op: CmpOp::Contains,
                right: Operand::Literal(Literal::Str(_), _),
            },
            Expr::Test(field),
        ) => matches!(left, Operand::Field(_)) && left == field,
        _ => false,
    }
}

impl RowIndex {
    /// Shows the rows `filter` passes (every row for `None`).
    pub fn set_filter(&mut self, filter: Option<Filter>) {
        let target = self.rescan.as_ref().map_or(&self.filter, |r| &r.filter);
        let text = |f: &Option<Filter>| f.as_ref().map(Filter::canonical);
        if text(&filter) == text(target) {
            return;
        }
        let Some(new) = filter else {
            // Every row: nothing to test.
            self.rescan = None;
            self.filter = None;
            self.visible = (0..self.scanned as u32).collect();
            return;
        };
        // The rows on screen passed the filter shown: a filter that narrows it
        // only needs to test them (and the rows added since).
        let candidates = match &self.filter {
            Some(old) if narrows(new.expr(), old.expr()) => Some(self.visible.clone()),
            _ => None,
        };
        self.rescan = Some(Rescan {
            filter: Some(new),
            candidates,
            next: 0,
            tail_from: self.scanned,
            found: Vec::new(),
        });
    }

    /// Tests every row again (what the filter reads changed: lint findings,
    /// conversations), keeping the rows on screen until it is done.
    pub fn refresh(&mut self) {
        if self.rescan.is_some() || self.filter.is_none() {
            if let Some(r) = &mut self.rescan {
                r.candidates = None;
                r.next = 0;
                r.tail_from = self.scanned;
                r.found.clear();
            }
            return;
        }
        self.rescan = Some(Rescan {
            filter: self.filter.clone(),
            candidates: None,
            next: 0,
            tail_from: self.scanned,
            found: Vec::new(),
        });
    }

    /// The filter shown (or being applied).
    pub fn filter(&self) -> Option<&Filter> {
        self.rescan.as_ref().map_or(self.filter.as_ref(), |r| r.filter.as_ref())
    }

    /// While a changed filter is being applied: how far it got (0 to 1).
    pub fn progress(&self) -> Option<f32> {
        let r = self.rescan.as_ref()?;
        let total = r.candidates.as_ref().map_or(r.tail_from, Vec::len).max(1);
        Some((r.next as f32 / total as f32).min(1.0))
    }

    /// Examines rows added since the last call, and goes on applying a
    /// changed filter; at most [`FILTER_BUDGET`] of work.
    pub fn sync(&mut self, store: &FrameStore, facts: &SessionFacts<'_>) {
        self.sync_within(store, facts, FILTER_BUDGET);
    }

    /// [`RowIndex::sync`] with a budget (`Duration::MAX`: until done).
    pub fn sync_within(&mut self, store: &FrameStore, facts: &SessionFacts<'_>, budget: std::time::Duration) {
        let deadline = std::time::Instant::now().checked_add(budget);
        let over = || deadline.is_some_and(|d| std::time::Instant::now() >= d);
        let test = |f: &Filter, row: usize| RowSubject::new(store, row, facts).is_some_and(|s| f.matches(&s));
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
                if r.filter.as_ref().is_none_or(|f| test(f, row)) {
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
            self.visible = r.found;
            self.scanned = store.len();
            return;
        }
        let Some(f) = &self.filter else {
            self.visible.extend(self.scanned as u32..store.len() as u32);
            self.scanned = store.len();
            return;
        };
        let answers_matter = f.needs().response;
        for i in self.scanned..store.len() {
            if test(f, i) {
                self.visible.push(i as u32);
            }
            // A request tested before its answer came may read differently now
            // (`pending`, `latency`, `response.…`).
            if answers_matter
                && let Some((req, _)) = store.get(i).and_then(|r| r.link())
                && req < self.scanned
            {
                let now = test(f, req);
                match (self.visible.binary_search(&(req as u32)), now) {
                    (Err(at), true) => self.visible.insert(at, req as u32),
                    (Ok(at), false) => {
                        self.visible.remove(at);
                    }
                    _ => {}
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
            self.filter = None;
            self.set_filter(r.filter);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::model::SessionModel;
    use crate::timeline::replay::Replay;
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

    fn set(idx: &mut RowIndex, s: &Shorthand) {
        let e = s.expression();
        idx.set_filter((!e.is_empty()).then(|| Filter::parse(&e).unwrap_or_else(|err| panic!("{}", err.render(&e)))));
    }

    const NO_FACTS: SessionFacts<'static> = SessionFacts {
        session: None,
        transport: None,
        era: None,
        findings: None,
        conversations: None,
    };

    #[test]
    fn shorthands_write_expressions_that_filter_by_text_method_and_kind() {
        let m = sample();
        let mut idx = RowIndex::default();
        idx.sync(&m.store, &NO_FACTS);
        assert_eq!(idx.len(), 5);
        let text = Shorthand {
            text: "HELLO".into(),
            ..Shorthand::default()
        };
        assert_eq!(text.expression(), "lower(raw) contains \"hello\"");
        set(&mut idx, &text);
        idx.sync(&m.store, &NO_FACTS);
        assert_eq!(idx.row_at(0), Some(1));
        assert_eq!(idx.len(), 1);
        set(
            &mut idx,
            &Shorthand {
                method: "tools/".into(),
                ..Shorthand::default()
            },
        );
        idx.sync(&m.store, &NO_FACTS);
        assert_eq!(
            (0..idx.len()).map(|p| idx.row_at(p).unwrap()).collect::<Vec<_>>(),
            [0, 2],
            "responses match by their request's method"
        );
        let mut hidden = HashSet::new();
        hidden.insert(RowKind::NotJson);
        hidden.insert(RowKind::Notification);
        let kinds = Shorthand {
            hidden,
            ..Shorthand::default()
        };
        assert_eq!(kinds.expression(), "not kind in {\"not_json\", \"notification\"}");
        set(&mut idx, &kinds);
        idx.sync(&m.store, &NO_FACTS);
        assert_eq!(idx.len(), 3);
    }

    /// Issue #14: a changed filter never blocks a frame. It is applied a slice
    /// at a time while the previous rows stay listed; a filter that narrows
    /// the previous one tests only the rows that passed it, and rows that
    /// arrive meanwhile are not missed.
    #[test]
    fn a_changed_filter_is_applied_in_slices_keeping_the_last_result() {
        let mut r = Replay::new().without_events();
        let mut m = SessionModel::new(crate::timeline::model::Source::Live {
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
        idx.sync(&m.store, &NO_FACTS);
        assert_eq!(idx.len(), 20_000);
        let typed = |t: &str| Shorthand {
            text: t.into(),
            ..Shorthand::default()
        };
        set(&mut idx, &typed("beta"));
        idx.sync_within(&m.store, &NO_FACTS, std::time::Duration::ZERO);
        assert!(
            idx.progress().is_some_and(|p| p < 1.0),
            "one slice, not the whole store"
        );
        assert_eq!(idx.len(), 20_000, "the last result stays until the new one is complete");
        // Rows that arrive while the filter is applied are tested too.
        add(&mut m, 20_001);
        let mut slices = 1;
        while idx.progress().is_some() {
            idx.sync_within(&m.store, &NO_FACTS, std::time::Duration::ZERO);
            slices += 1;
        }
        assert!(slices > 5, "{slices}");
        assert_eq!(idx.len(), 10_001);
        assert_eq!(idx.row_at(10_000), Some(20_000));
        // Narrowing: only the 10,001 rows listed are tested, so fewer slices.
        set(&mut idx, &typed("beta 1"));
        let mut slices = 0;
        while {
            idx.sync_within(&m.store, &NO_FACTS, std::time::Duration::ZERO);
            slices += 1;
            idx.progress().is_some()
        } {}
        assert!(slices <= 10_001 / 1024 + 1, "{slices}");
        let expected = (0..=20_001)
            .filter(|i| i % 2 == 1 && format!("{i}").starts_with('1'))
            .count();
        assert_eq!(idx.len(), expected);
        // `… and more` narrows too.
        let and = Filter::parse("lower(raw) contains \"beta 1\" and raw contains \"19\"").unwrap();
        idx.set_filter(Some(and));
        let mut slices = 0;
        while {
            idx.sync_within(&m.store, &NO_FACTS, std::time::Duration::ZERO);
            slices += 1;
            idx.progress().is_some()
        } {}
        assert!(slices <= expected / 1024 + 1, "{slices}");
        // Clearing the filter lists every row at once.
        idx.set_filter(None);
        assert_eq!(idx.len(), 20_001);
    }

    #[test]
    fn a_request_is_tested_again_when_its_answer_arrives() {
        let mut r = Replay::new().without_events();
        let mut m = SessionModel::new(crate::timeline::model::Source::Live {
            command_line: "t".into(),
        });
        let mut idx = RowIndex::default();
        idx.set_filter(Some(Filter::parse("pending").unwrap()));
        let f = r.frame(Direction::Out, br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
        m.apply(&crate::transport::event::Event::Frame(f));
        idx.sync(&m.store, &NO_FACTS);
        assert_eq!(idx.len(), 1, "pending");
        let f = r.frame(Direction::In, br#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        m.apply(&crate::transport::event::Event::Frame(f));
        idx.sync(&m.store, &NO_FACTS);
        assert_eq!(idx.len(), 0, "answered: no longer pending");
        idx.set_filter(Some(Filter::parse("response.kind == \"result\"").unwrap()));
        idx.sync(&m.store, &NO_FACTS);
        assert_eq!(idx.row_at(0), Some(0));
    }

    #[test]
    fn narrowing_is_judged_on_the_tree() {
        let p = |s: &str| super::super::parser::parse(s).unwrap();
        assert!(narrows(&p("a and b"), &p("a")));
        assert!(narrows(&p("raw contains \"abc\""), &p("raw contains \"ab\"")));
        assert!(!narrows(&p("raw contains \"ab\""), &p("raw contains \"abc\"")));
        assert!(narrows(&p("a"), &p("a or b")));
        assert!(!narrows(&p("a or b"), &p("a")));
        assert!(!narrows(&p("not a"), &p("a")));
        assert!(narrows(
            &p("method == \"x\" and params.m contains \"9\""),
            &p("method == \"x\" and params.m")
        ));
        assert!(!narrows(&p("params.m == \"9\""), &p("params.m")), "only contains");
        assert!(!narrows(&p("params.n contains \"9\""), &p("params.m")));
    }

    /// The rows a bare path listed are all a `contains` on it can match:
    /// narrowing from one to the other lists what a full rescan lists.
    #[test]
    fn contains_after_a_bare_path_lists_what_a_rescan_does() {
        let mut r = crate::timeline::replay::Replay::new();
        for i in 0..40 {
            r.out(&format!(
                r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"m":"n{i}"{}}}}}"#,
                if i % 3 == 0 { r#","other":"9""# } else { "" }
            ));
        }
        r.out(r#"{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"other":"9"}}"#);
        let m = r.model();
        let full = |text: &str| {
            let mut idx = RowIndex::default();
            idx.set_filter(Some(Filter::parse(text).unwrap()));
            idx.sync_within(&m.store, &NO_FACTS, std::time::Duration::MAX);
            (0..idx.len()).filter_map(|p| idx.row_at(p)).collect::<Vec<_>>()
        };
        let mut idx = RowIndex::default();
        idx.set_filter(Some(Filter::parse("params.m").unwrap()));
        idx.sync_within(&m.store, &NO_FACTS, std::time::Duration::MAX);
        idx.set_filter(Some(Filter::parse("params.m contains \"9\"").unwrap()));
        idx.sync_within(&m.store, &NO_FACTS, std::time::Duration::MAX);
        let narrowed: Vec<_> = (0..idx.len()).filter_map(|p| idx.row_at(p)).collect();
        assert_eq!(narrowed, full("params.m contains \"9\""));
        assert_eq!(narrowed.len(), 4, "n9, n19, n29, n39");
    }
}
