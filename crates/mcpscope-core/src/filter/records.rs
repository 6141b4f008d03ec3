//! Running a filter over a capture file, for `mcpscope filter`, `lint
//! --filter` and `diff --filter`.
//!
//! A filter that reads only the record itself streams: a line without the
//! text every match must contain is not parsed at all, the rest are read
//! and tested one by one. A filter that needs more (the other side of an
//! exchange, `latency` of a request, lint findings, the era, conversations)
//! loads each session into the app's row store, lints it where asked, and
//! tests its rows with the app's own [`RowSubject`]: the same answers as
//! the timeline.

use super::Filter;
use super::compile::Rel;
use super::eval::Subject;
use super::rows::{RowSubject, SessionFacts};
use crate::analysis::lint::{LintOptions, Linter};
use crate::record::capture::{Header, LineRead, NotACapture, RecordReader};
use crate::timeline::store::FrameStore;
use crate::transport::event::Event;
use crate::wire::classify::Kind;
use crate::wire::frame::Direction;
use crate::wire::message::RequestId;
use std::collections::HashMap;
use std::io::Read;
use std::ops::ControlFlow;
use std::path::Path;
use std::time::Duration;

/// One matching record.
#[derive(Clone, Debug)]
pub struct Matched<'a> {
    /// The session's number in the file (1 for the first).
    pub session: usize,
    /// The session's header line, as in the file.
    pub header_line: &'a [u8],
    /// The record's line, as in the file (without its newline); for the
    /// note that starts a later session, its header line.
    pub line: &'a [u8],
    pub info: RecordInfo,
}

/// What a match is, for a table or JSON.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordInfo {
    pub seq: Option<u64>,
    pub time: Duration,
    pub dir: &'static str,
    pub kind: &'static str,
    pub id: Option<RequestId>,
    pub method: Option<String>,
    /// For a response, its request's method and sequence number.
    pub request_method: Option<String>,
    pub request_seq: Option<u64>,
    pub latency: Option<Duration>,
    /// The message (or record) as JSON text, where it is JSON.
    pub message: Option<String>,
    /// The line as text, for stderr and notes.
    pub text: String,
}

impl RecordInfo {
    fn of<S: Subject>(s: &S) -> Self {
        RecordInfo {
            seq: s.seq(),
            time: s.time(),
            dir: s.dir(),
            kind: s.kind(),
            id: s.id(),
            method: s.method().map(str::to_owned),
            request_method: s.related(Rel::Request).and_then(|r| r.method().map(str::to_owned)),
            request_seq: s.related(Rel::Request).and_then(|r| r.seq()),
            latency: s.latency(),
            message: s
                .message()
                .filter(|m| serde_json::from_str::<&serde_json::value::RawValue>(m).is_ok())
                .map(str::to_owned),
            text: String::from_utf8_lossy(s.raw()).into_owned(),
        }
    }
}

/// What a run read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    pub records: u64,
    pub matched: u64,
    pub sessions: usize,
    /// Lines that could not be read ("line 7: not JSON …").
    pub warnings: Vec<String>,
}

#[derive(Debug)]
pub enum RunError {
    /// The file cannot be opened as a capture (missing, a FIFO, a device…).
    Open(String),
    Io(std::io::Error),
    NotACapture(NotACapture),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Open(e) => write!(f, "cannot open the capture: {e}"),
            RunError::Io(e) => write!(f, "{e}"),
            RunError::NotACapture(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for RunError {}

impl From<std::io::Error> for RunError {
    fn from(e: std::io::Error) -> Self {
        RunError::Io(e)
    }
}

impl From<NotACapture> for RunError {
    fn from(e: NotACapture) -> Self {
        RunError::NotACapture(e)
    }
}

/// Longest line read; a longer one is skipped with a warning, as the loader does.
pub(crate) const MAX_LINE: usize = 8 * crate::wire::classify::DEFAULT_MAX_HELD_LINE_BYTES + 64 * 1024;

/// Lines of a file, each with where it starts, kept in one buffer.
pub(crate) struct Lines<R> {
    reader: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    offset: u64,
    eof: bool,
}

pub(crate) enum Line<'a> {
    Fits(&'a [u8], u64),
    TooLong,
}

impl<R: Read> Lines<R> {
    pub(crate) fn new(reader: R) -> Self {
        Lines {
            reader,
            buf: vec![0; 1 << 20],
            start: 0,
            end: 0,
            offset: 0,
            eof: false,
        }
    }

    pub(crate) fn next(&mut self) -> std::io::Result<Option<Line<'_>>> {
        let mut skipping = false;
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.start..self.end]) {
                let (s, e) = (self.start, self.start + i);
                self.start = e + 1;
                let at = self.offset;
                self.offset += (e + 1 - s) as u64;
                if skipping {
                    return Ok(Some(Line::TooLong));
                }
                return Ok(Some(Line::Fits(&self.buf[s..e], at)));
            }
            if self.eof {
                if self.start == self.end {
                    return Ok(if skipping { Some(Line::TooLong) } else { None });
                }
                let (s, e) = (self.start, self.end);
                self.start = e;
                let at = self.offset;
                self.offset += (e - s) as u64;
                return Ok(Some(if skipping {
                    Line::TooLong
                } else {
                    Line::Fits(&self.buf[s..e], at)
                }));
            }
            // Make room: keep the partial line, grow up to the limit, else skip it.
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if self.end == self.buf.len() {
                if self.buf.len() >= MAX_LINE {
                    self.offset += self.end as u64;
                    self.end = 0;
                    skipping = true;
                } else {
                    self.buf.resize((self.buf.len() * 2).min(MAX_LINE), 0);
                }
            }
            let n = loop {
                match self.reader.read(&mut self.buf[self.end..]) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                }
            };
            if n == 0 {
                self.eof = true;
            }
            self.end += n;
        }
    }
}

/// How thoroughly to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reading {
    /// Lines without the text every match needs are not parsed (fastest;
    /// a response whose request was skipped then names no request).
    SkipWhatCannotMatch,
    /// Every line is read, so each match knows its request.
    Whole,
}

/// Runs `filter` over the capture at `path`, calling `on_match` with each
/// matching record in file order (stop early with `Break`).
pub fn run(
    path: &Path,
    filter: &Filter,
    on_match: &mut dyn FnMut(&Matched<'_>) -> ControlFlow<()>,
) -> Result<Summary, RunError> {
    run_reading(path, filter, Reading::SkipWhatCannotMatch, on_match)
}

pub fn run_reading(
    path: &Path,
    filter: &Filter,
    reading: Reading,
    on_match: &mut dyn FnMut(&Matched<'_>) -> ControlFlow<()>,
) -> Result<Summary, RunError> {
    let file = crate::record::private_files::open_regular(path)
        .map_err(|e| RunError::Open(format!("{ec}", ec = crate::text::ErrorChain(&e))))?;
    let n = filter.needs();
    if n.findings || n.response || n.request || n.conversation || n.era {
        loaded(file, filter, on_match)
    } else {
        streaming(file, filter, reading, on_match)
    }
}

/// One record of a capture read on its own (or a frame as a proxy sees it).
pub struct EventSubject<'a> {
    event: &'a Event,
    line: &'a [u8],
    session: &'a str,
    transport: &'a str,
}

impl<'a> EventSubject<'a> {
    /// `line` is the record's capture line (read for authorization and HTTP
    /// records; a frame is read from its own bytes).
    pub fn new(event: &'a Event, line: &'a [u8], session: &'a str, transport: &'a str) -> Self {
        EventSubject {
            event,
            line,
            session,
            transport,
        }
    }
}

impl Subject for EventSubject<'_> {
    fn dir(&self) -> &'static str {
        match self.event {
            Event::Frame(f) if f.direction == Direction::Out => "c2s",
            Event::Frame(_) => "s2c",
            Event::Stderr(_) => "stderr",
            Event::Auth(_) => "auth",
            Event::Http(_) => "http",
            Event::Touch(_) => "proxy",
            Event::App(_) => "app",
            Event::Model(_) => "model",
            _ => "note",
        }
    }

    fn kind(&self) -> &'static str {
        match self.event {
            Event::Frame(f) => match f.class.kind {
                Kind::Request if f.direction == Direction::In => "server_request",
                Kind::Request => "request",
                Kind::Notification => "notification",
                Kind::Result if f.class.tool_error => "iserror",
                Kind::Result => "result",
                Kind::Error => "error",
                Kind::Batch | Kind::NotJsonRpc | Kind::NotJson => "not_json",
            },
            Event::Stderr(_) => "stderr",
            Event::Auth(_) => "auth",
            Event::Http(_) => "http",
            Event::Touch(_) => "touch",
            Event::App(_) => "app",
            Event::Model(_) => "model",
            _ => "note",
        }
    }

    fn seq(&self) -> Option<u64> {
        match self.event {
            Event::Frame(f) => Some(f.seq),
            Event::Stderr(s) => Some(s.seq),
            _ => None,
        }
    }

    fn time(&self) -> Duration {
        self.event.at()
    }

    fn raw(&self) -> &[u8] {
        match self.event {
            Event::Frame(f) => &f.raw,
            Event::Stderr(s) => &s.raw,
            _ => self.line,
        }
    }

    fn session(&self) -> Option<&str> {
        Some(self.session)
    }

    fn transport(&self) -> Option<&str> {
        Some(self.transport)
    }

    fn era(&self) -> Option<&str> {
        None
    }

    fn id(&self) -> Option<RequestId> {
        match self.event {
            Event::Frame(f) => f.class.id.clone(),
            _ => None,
        }
    }

    fn method(&self) -> Option<&str> {
        match self.event {
            Event::Frame(f) => f.class.method.as_deref(),
            Event::App(a) => a.method.as_deref(),
            _ => None,
        }
    }

    fn error_code(&self) -> Option<i64> {
        match self.event {
            Event::Frame(f) if f.class.kind == Kind::Error => f.class.error_code.filter(|&c| c != 0),
            _ => None,
        }
    }

    fn message(&self) -> Option<&str> {
        match self.event {
            Event::Frame(f) => std::str::from_utf8(&f.raw).ok(),
            Event::Auth(_) | Event::Http(_) | Event::Touch(_) | Event::Model(_) => std::str::from_utf8(self.line).ok(),
            // The View's message itself, as on the timeline.
            Event::App(a) => std::str::from_utf8(&a.bytes).ok(),
            _ => None,
        }
    }

    fn latency(&self) -> Option<Duration> {
        match self.event {
            Event::Frame(f) => f.link.as_ref().map(|l| l.latency),
            _ => None,
        }
    }

    fn pending(&self) -> bool {
        false
    }

    fn related(&self, _: Rel) -> Option<Self> {
        None
    }

    fn any_finding(&self, _: &mut dyn FnMut(&str, &str) -> bool) -> bool {
        false
    }

    fn conversation(&self) -> Option<u64> {
        None
    }
}

fn streaming(
    file: std::fs::File,
    filter: &Filter,
    reading: Reading,
    on_match: &mut dyn FnMut(&Matched<'_>) -> ControlFlow<()>,
) -> Result<Summary, RunError> {
    let mut lines = Lines::new(file);
    let mut reader = RecordReader::new();
    let mut summary = Summary::default();
    let mut header_line: Vec<u8> = Vec::new();
    let mut transport = String::from("stdio");
    let mut session_name = String::from("1");
    while let Some(line) = lines.next()? {
        let Line::Fits(line, _) = line else {
            let w = reader.skip_oversize(MAX_LINE)?;
            if let LineRead::Warning(w) = w {
                summary.warnings.push(w);
            }
            continue;
        };
        let read = if summary.sessions == 0 || reading == Reading::Whole || filter.may_match_line(line) {
            reader.read_line(line)?
        } else {
            let read = reader.skip_line(line)?;
            if matches!(read, LineRead::Blank) && !line.iter().all(u8::is_ascii_whitespace) {
                summary.records += 1;
            }
            read
        };
        let event = match read {
            LineRead::Header(h) => {
                summary.sessions += 1;
                header_line = line.to_vec();
                transport = transport_of(&h);
                session_name = summary.sessions.to_string();
                continue;
            }
            // A later session: its note is a record of the new session, as in the timeline.
            LineRead::Boundary(h, note) => {
                summary.sessions += 1;
                header_line = line.to_vec();
                transport = transport_of(&h);
                session_name = summary.sessions.to_string();
                note
            }
            LineRead::Event(ev) => ev,
            LineRead::Warning(w) => {
                summary.warnings.push(w);
                continue;
            }
            LineRead::Blank => continue,
        };
        summary.records += 1;
        let s = EventSubject {
            event: &event,
            line,
            session: &session_name,
            transport: &transport,
        };
        if filter.matches_checked(&s) {
            summary.matched += 1;
            let mut info = RecordInfo::of(&s);
            if let Event::Frame(f) = &event {
                // Read alone, a response still knows its request from the correlation.
                info.request_seq = f.link.as_ref().map(|l| l.request_seq);
                info.request_method = f.link.as_ref().map(|l| l.method.clone());
            }
            let m = Matched {
                session: summary.sessions,
                header_line: &header_line,
                line,
                info,
            };
            if on_match(&m).is_break() {
                break;
            }
        }
    }
    Ok(summary)
}

fn transport_of(h: &Header) -> String {
    if h.transport.is_empty() {
        "stdio".into()
    } else {
        h.transport.clone()
    }
}

/// One session held whole while it is read.
struct Session {
    number: usize,
    header_line: Vec<u8>,
    transport: String,
    store: FrameStore,
    /// Where each row's line is in the file.
    lines: Vec<(u64, u32)>,
    linter: Option<Linter>,
}

fn loaded(
    mut file: std::fs::File,
    filter: &Filter,
    on_match: &mut dyn FnMut(&Matched<'_>) -> ControlFlow<()>,
) -> Result<Summary, RunError> {
    let mut again = file.try_clone()?;
    let mut lines = Lines::new(&mut file);
    let mut reader = RecordReader::new();
    let mut summary = Summary::default();
    let mut current: Option<Session> = None;
    let mut stop = false;
    let new_session = |number: usize, line: &[u8], h: &Header| Session {
        number,
        header_line: line.to_vec(),
        transport: transport_of(h),
        store: FrameStore::new(),
        lines: Vec::new(),
        linter: filter.needs().findings.then(|| Linter::new(LintOptions::default())),
    };
    while let Some(line) = lines.next()? {
        let (line, at) = match line {
            Line::Fits(l, at) => (l, at),
            Line::TooLong => {
                if let LineRead::Warning(w) = reader.skip_oversize(MAX_LINE)? {
                    summary.warnings.push(w);
                }
                continue;
            }
        };
        let event = match reader.read_line(line)? {
            LineRead::Header(h) => {
                summary.sessions += 1;
                current = Some(new_session(summary.sessions, line, &h));
                continue;
            }
            LineRead::Boundary(h, note) => {
                if let Some(s) = current.take()
                    && finish(s, &mut again, filter, &mut summary, on_match)?.is_break()
                {
                    stop = true;
                    break;
                }
                summary.sessions += 1;
                current = Some(new_session(summary.sessions, line, &h));
                note
            }
            LineRead::Event(ev) => ev,
            LineRead::Warning(w) => {
                summary.warnings.push(w);
                continue;
            }
            LineRead::Blank => continue,
        };
        let Some(s) = current.as_mut() else { continue };
        if let Some(l) = s.linter.as_mut()
            && !matches!(event, Event::Note { .. } if s.store.is_empty())
        {
            l.push(&event);
        }
        if s.store.push_event(&event) {
            s.lines.push((at, line.len() as u32));
            summary.records += 1;
        }
    }
    if !stop && let Some(s) = current.take() {
        let _ = finish(s, &mut again, filter, &mut summary, on_match)?;
    }
    Ok(summary)
}

/// Tests every row of a finished session, in order.
fn finish(
    s: Session,
    file: &mut std::fs::File,
    filter: &Filter,
    summary: &mut Summary,
    on_match: &mut dyn FnMut(&Matched<'_>) -> ControlFlow<()>,
) -> Result<ControlFlow<()>, RunError> {
    let mut by_row: HashMap<usize, Vec<(&'static str, &'static str)>> = HashMap::new();
    if let Some(l) = s.linter {
        for f in l.finish() {
            for seq in &f.seqs {
                if let Some(row) = s.store.row_of_seq(*seq) {
                    by_row.entry(row).or_default().push((f.rule, f.severity.as_str()));
                }
            }
        }
    }
    let name = s.number.to_string();
    let era = super::rows::infer_era(&s.store);
    let conversations = filter
        .needs()
        .conversation
        .then(|| super::rows::infer_conversations(&s.store));
    let facts = SessionFacts {
        session: Some(&name),
        transport: Some(&s.transport),
        era,
        findings: Some(&by_row),
        conversations: conversations.as_ref(),
    };
    let mut line = Vec::new();
    for index in 0..s.store.len() {
        let Some(subject) = RowSubject::new(&s.store, index, &facts) else {
            continue;
        };
        if !filter.matches(&subject) {
            continue;
        }
        summary.matched += 1;
        let (at, len) = s.lines[index];
        line.resize(len as usize, 0);
        // Positioned reads: the reading side shares this file's offset.
        crate::platform::fs::read_exact_at(file, &mut line, at)?;
        let m = Matched {
            session: s.number,
            header_line: &s.header_line,
            line: &line,
            info: RecordInfo::of(&subject),
        };
        if on_match(&m).is_break() {
            return Ok(ControlFlow::Break(()));
        }
    }
    Ok(ControlFlow::Continue(()))
}

/// The sequence numbers of what matches (what lint findings name), for
/// `lint --filter` and `diff --filter`.
#[derive(Clone, Debug, Default)]
pub struct MatchingSeqs {
    /// Frames and stderr lines that match.
    pub records: std::collections::HashSet<u64>,
    /// Requests that match, or whose response does: the exchanges that match.
    pub exchanges: std::collections::HashSet<u64>,
}

pub fn matching_seqs(path: &Path, filter: &Filter) -> Result<MatchingSeqs, RunError> {
    let mut out = MatchingSeqs::default();
    run_reading(path, filter, Reading::Whole, &mut |m| {
        if let Some(s) = m.info.seq {
            out.records.insert(s);
            if m.info.kind == "request" {
                out.exchanges.insert(s);
            }
        }
        if let Some(r) = m.info.request_seq {
            out.exchanges.insert(r);
        }
        ControlFlow::Continue(())
    })?;
    Ok(out)
}
