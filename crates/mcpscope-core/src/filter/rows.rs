//! Filters on the rows of a [`FrameStore`]: what the row already holds
//! (kind, method, id, link, latency) is read from it; paths parse the
//! row's bytes only when the filter asks for one.

use super::compile::Rel;
use super::eval::Subject;
use crate::timeline::row_kind::RowKind;
use crate::timeline::store::{FrameStore, Lane, RowRef};
use crate::wire::message::RequestId;
use std::collections::HashMap;
use std::time::Duration;

/// Lint findings by row, for `finding.*` fields.
pub trait RowFindings {
    /// Calls `f(rule, severity)` for each finding on `row` until it returns true.
    fn any_on_row(&self, row: usize, f: &mut dyn FnMut(&str, &str) -> bool) -> bool;
}

impl RowFindings for HashMap<usize, Vec<(&'static str, &'static str)>> {
    fn any_on_row(&self, row: usize, f: &mut dyn FnMut(&str, &str) -> bool) -> bool {
        self.get(&row).is_some_and(|v| v.iter().any(|(r, s)| f(r, s)))
    }
}

/// What a session knows beyond its rows.
#[derive(Clone, Copy, Default)]
pub struct SessionFacts<'a> {
    pub session: Option<&'a str>,
    pub transport: Option<&'a str>,
    pub era: Option<&'a str>,
    pub findings: Option<&'a dyn RowFindings>,
    /// Row → multi round-trip conversation number.
    pub conversations: Option<&'a HashMap<usize, usize>>,
}

/// One row of a store, as a filter sees it.
#[derive(Clone, Copy)]
pub struct RowSubject<'a> {
    pub row: RowRef<'a>,
    pub store: &'a FrameStore,
    pub facts: &'a SessionFacts<'a>,
}

impl<'a> RowSubject<'a> {
    pub fn new(store: &'a FrameStore, index: usize, facts: &'a SessionFacts<'a>) -> Option<Self> {
        Some(Self {
            row: store.get(index)?,
            store,
            facts,
        })
    }

    fn is_frame(&self) -> bool {
        matches!(self.row.lane(), Lane::Out | Lane::In)
    }
}

/// The filter's name for a row's kind.
pub fn kind_name(row: &RowRef<'_>) -> &'static str {
    match RowKind::of(row) {
        RowKind::Request => "request",
        RowKind::Notification => "notification",
        RowKind::Result => "result",
        RowKind::RpcError => "error",
        RowKind::ToolError => "iserror",
        RowKind::ServerRequest => "server_request",
        RowKind::NotJson => "not_json",
        RowKind::Stderr => "stderr",
        RowKind::Auth => "auth",
        RowKind::Touch => "touch",
        RowKind::App => "app",
        RowKind::Model => "model",
        RowKind::Meta if row.http_record().is_some() => "http",
        RowKind::Meta => "note",
    }
}

impl<'a> Subject for RowSubject<'a> {
    fn dir(&self) -> &'static str {
        match self.row.lane() {
            Lane::Out => "c2s",
            Lane::In => "s2c",
            Lane::Stderr => "stderr",
            Lane::Auth => "auth",
            Lane::Touch => "proxy",
            Lane::App => "app",
            Lane::Model => "model",
            Lane::Meta if self.row.http_record().is_some() => "http",
            Lane::Meta => "note",
        }
    }

    fn kind(&self) -> &'static str {
        kind_name(&self.row)
    }

    fn seq(&self) -> Option<u64> {
        self.row.seq()
    }

    fn time(&self) -> Duration {
        self.row.at()
    }

    fn raw(&self) -> &[u8] {
        // An HTTP exchange's row shows a summary; its record is what it was.
        self.row.http_record().map_or(self.row.raw(), str::as_bytes)
    }

    fn session(&self) -> Option<&str> {
        self.facts.session
    }

    fn transport(&self) -> Option<&str> {
        self.facts.transport
    }

    fn era(&self) -> Option<&str> {
        self.facts.era
    }

    fn id(&self) -> Option<RequestId> {
        self.is_frame().then(|| self.row.id()).flatten()
    }

    fn method(&self) -> Option<&str> {
        match self.row.lane() {
            // An App row's method is its message's (or "result" / "error").
            Lane::App => self.row.method(),
            _ => self.is_frame().then(|| self.row.method()).flatten(),
        }
    }

    fn error_code(&self) -> Option<i64> {
        // The store keeps a missing code as 0: that one is read from the message.
        self.is_frame()
            .then(|| self.row.error_code())
            .flatten()
            .filter(|&c| c != 0)
    }

    fn message(&self) -> Option<&str> {
        match self.row.lane() {
            Lane::Out | Lane::In | Lane::Auth | Lane::Touch | Lane::App | Lane::Model => {
                std::str::from_utf8(self.row.raw()).ok()
            }
            Lane::Meta => self.row.http_record(),
            Lane::Stderr => None,
        }
    }

    fn latency(&self) -> Option<Duration> {
        if let Some((_, latency)) = self.row.link() {
            return Some(latency);
        }
        let answer = self.store.get(self.row.answer()?)?;
        answer.link().map(|(_, l)| l)
    }

    fn pending(&self) -> bool {
        self.is_frame() && self.row.kind() == crate::wire::classify::Kind::Request && self.row.answer().is_none()
    }

    fn related(&self, rel: Rel) -> Option<Self> {
        let index = match rel {
            Rel::Request => self.row.link()?.0,
            Rel::Response => self.row.answer()?,
        };
        RowSubject::new(self.store, index, self.facts)
    }

    fn any_finding(&self, f: &mut dyn FnMut(&str, &str) -> bool) -> bool {
        self.facts.findings.is_some_and(|x| x.any_on_row(self.row.index(), f))
    }

    fn conversation(&self) -> Option<u64> {
        self.facts
            .conversations
            .and_then(|c| c.get(&self.row.index()))
            .map(|&n| n as u64)
    }
}

/// The era a session spoke, from its rows (the rule is [`EraGuess`]'s).
pub fn infer_era(store: &FrameStore) -> Option<&'static str> {
    let mut guess = EraGuess::default();
    for row in store.iter() {
        if row.lane() != Lane::Out || row.kind() != crate::wire::classify::Kind::Request {
            continue;
        }
        guess.request(row.raw());
        let answered = row
            .answer()
            .and_then(|a| store.get(a))
            .is_some_and(|a| a.kind() == crate::wire::classify::Kind::Result);
        if answered && let Some(m) = row.method() {
            guess.answered(m);
        }
    }
    guess.era()
}

/// The era a session speaks, told as its client requests go and come back:
/// an `initialize` answered with a result is the legacy era, whatever else
/// was tried; a `server/discover` answered with one, or requests carrying
/// the modern `_meta` envelope, the 2026-07-28 era.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EraGuess {
    legacy: bool,
    modern: bool,
}

impl EraGuess {
    /// A client request was sent.
    pub fn request(&mut self, raw: &[u8]) {
        if !self.modern {
            self.modern = memchr::memmem::find(raw, b"io.modelcontextprotocol/protocolVersion").is_some();
        }
    }

    /// A client request of `method` was answered with a result.
    pub fn answered(&mut self, method: &str) {
        match method {
            "initialize" => self.legacy = true,
            "server/discover" => self.modern = true,
            _ => {}
        }
    }

    pub fn era(&self) -> Option<&'static str> {
        if self.legacy {
            Some("legacy")
        } else if self.modern {
            Some("modern")
        } else {
            None
        }
    }
}

/// Multi round-trip conversations (2026-07-28) found in a session's rows,
/// for sessions no driver followed (captures, proxied sessions): a request
/// answered `input_required` starts one; a request echoing that answer's
/// `requestState` (and its answer) belongs to it. Row → number, from 1.
pub fn infer_conversations(store: &FrameStore) -> HashMap<usize, usize> {
    use super::json;
    let mut rows = HashMap::new();
    let mut by_state: HashMap<String, usize> = HashMap::new();
    let mut next = 1;
    let text = |raw: &[u8]| std::str::from_utf8(raw).ok().map(str::to_owned);
    for row in store.iter() {
        if row.lane() != Lane::Out || row.kind() != crate::wire::classify::Kind::Request {
            continue;
        }
        let raw = row.raw();
        let mut conversation = None;
        if memchr::memmem::find(raw, b"requestState").is_some()
            && let Some(doc) = text(raw)
            && let Some(state) = json::member(&doc, "params")
                .and_then(|p| json::member(p, "requestState"))
                .and_then(|v| serde_json::from_str::<String>(v).ok())
        {
            conversation = by_state.get(&state).copied();
        }
        let Some(answer) = row.answer().and_then(|a| store.get(a)) else {
            if let Some(n) = conversation {
                rows.insert(row.index(), n);
            }
            continue;
        };
        let araw = answer.raw();
        let asks = memchr::memmem::find(araw, b"input_required").is_some();
        if conversation.is_none() && !asks {
            continue;
        }
        let n = conversation.unwrap_or_else(|| {
            next += 1;
            next - 1
        });
        rows.insert(row.index(), n);
        rows.insert(answer.index(), n);
        if asks
            && let Some(doc) = text(araw)
            && let Some(state) = json::member(&doc, "result")
                .and_then(|r| json::member(r, "requestState"))
                .and_then(|v| serde_json::from_str::<String>(v).ok())
        {
            by_state.insert(state, n);
        }
    }
    rows
}
