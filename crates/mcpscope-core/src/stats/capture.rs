//! Statistics of a capture file, in one streaming pass.
//!
//! A display filter that reads only the record itself is tested on each
//! record as it is read. One that needs more (the other side of an
//! exchange, lint findings, the era) is first run the way `filter` runs it,
//! and what it kept is remembered by session and sequence number: the
//! second pass then counts those. Either way the counts are `filter`'s.

use super::{Collector, Report, SessionInfo, StatsOptions, Verdict};
use crate::filter::Filter;
use crate::filter::records::{self, EventSubject, Line, Lines, MAX_LINE, Reading, RunError, Summary};
use crate::record::capture::{CaptureError, EventReader, Item as ReadItem, LineRead, READ_BUFFER, RecordReader};
use crate::transport::event::Event;
use std::collections::HashSet;
use std::io::BufReader;
use std::ops::ControlFlow;
use std::path::Path;

/// One filter, ready to test records.
enum Test<'f> {
    /// Tested on each record as it is read.
    Streaming(&'f Filter),
    /// What it keeps, found by a first pass: (session, seq).
    Kept(HashSet<(usize, u64)>),
}

impl<'f> Test<'f> {
    fn prepare(path: &Path, filter: &'f Filter) -> Result<Self, RunError> {
        if !needs_whole_sessions(filter) {
            return Ok(Test::Streaming(filter));
        }
        let mut kept = HashSet::new();
        records::run_reading(path, filter, Reading::Whole, &mut |m| {
            if let Some(seq) = m.info.seq {
                kept.insert((m.session, seq));
            }
            ControlFlow::Continue(())
        })?;
        Ok(Test::Kept(kept))
    }

    fn keeps(&self, session: usize, subject: &EventSubject<'_>, event: &Event) -> bool {
        match self {
            Test::Streaming(f) => f.matches_checked(subject),
            Test::Kept(set) => seq_of(event).is_some_and(|s| set.contains(&(session, s))),
        }
    }
}

fn seq_of(event: &Event) -> Option<u64> {
    match event {
        Event::Frame(f) => Some(f.seq),
        Event::Stderr(s) => Some(s.seq),
        _ => None,
    }
}

/// What the reading thread hands the counting thread.
enum Item {
    Begin(SessionInfo),
    /// A record, with its line when it is not a frame or a stderr line
    /// (filters read authorization and HTTP records from their line).
    Record(Event, Option<Box<[u8]>>),
}

/// Records per hand-over (as `lint_capture` measured: 32-64 fastest).
const BATCH: usize = 64;

/// Every table of the capture at `path`, counting what `filter` keeps;
/// `series` are the I/O graph's filters, parsed from `options.series`.
///
/// Reading (unescaping, classifying, correlating: most of the work) and
/// counting run on two threads, handing records over in small batches
/// that go back to the reader to be reused and freed there.
pub fn run(
    path: &Path,
    options: &StatsOptions,
    filter: Option<&Filter>,
    series: &[Filter],
) -> Result<(Report, Summary), RunError> {
    let file = crate::record::private_files::open_regular(path)
        .map_err(|e| RunError::Open(format!("{}", crate::text::ErrorChain(&e))))?;
    let filter_test = filter.map(|f| Test::prepare(path, f)).transpose()?;
    let series_tests = series
        .iter()
        .map(|f| Test::prepare(path, f))
        .collect::<Result<Vec<_>, _>>()?;
    // The tokenizers load while the file is read: the counting thread has room to spare.
    let tokenizers = options
        .context
        .then(|| {
            std::thread::Builder::new()
                .name("mcpscope-tokenizers".into())
                .spawn(crate::analysis::context_cost::Tokenizers::load)
                .ok()
        })
        .flatten();
    let (full_tx, full_rx) = crossbeam_channel::bounded::<Vec<Item>>(4);
    let (empty_tx, empty_rx) = crossbeam_channel::bounded::<Vec<Item>>(8);
    let mut summary = Summary::default();
    std::thread::scope(|scope| {
        let counting = scope.spawn(move || {
            let mut collector = Collector::new(options.clone(), filter.is_some());
            let (mut name, mut transport, mut session, mut matched) = (String::from("1"), String::from("stdio"), 0, 0);
            for batch in full_rx {
                for item in &batch {
                    let (event, line) = match item {
                        Item::Begin(info) => {
                            session += 1;
                            name.clone_from(&info.name);
                            transport.clone_from(&info.transport);
                            collector.begin_session(info.clone());
                            continue;
                        }
                        Item::Record(event, line) => (event, line),
                    };
                    let subject = EventSubject::new(event, line.as_deref().unwrap_or_default(), &name, &transport);
                    let kept = filter_test.as_ref().is_none_or(|t| t.keeps(session, &subject, event));
                    let mut bits = u8::from(series_tests.is_empty());
                    for (i, t) in series_tests.iter().enumerate() {
                        if t.keeps(session, &subject, event) {
                            bits |= 1 << i;
                        }
                    }
                    matched += kept as u64;
                    collector.push(event, Verdict { kept, series: bits });
                }
                // Back to the reader, its records freed there; gone if it stopped.
                let _ = empty_tx.send(batch);
            }
            collector.end_session();
            if let Some(t) = tokenizers.and_then(|h| h.join().ok()) {
                collector.give_tokenizers(t);
            }
            (collector.report(), matched)
        });
        let read = read_records(file, &mut summary, &full_tx, &empty_rx);
        drop(full_tx);
        let counted = counting.join();
        drop(empty_rx);
        read?;
        let (report, matched) =
            counted.map_err(|_| RunError::Io(std::io::Error::other("the statistics thread stopped unexpectedly")))?;
        summary.matched = matched;
        Ok((report, summary))
    })
}

fn read_records(
    file: std::fs::File,
    summary: &mut Summary,
    full: &crossbeam_channel::Sender<Vec<Item>>,
    empty: &crossbeam_channel::Receiver<Vec<Item>>,
) -> Result<(), RunError> {
    let mut lines = Lines::new(file);
    let mut reader = RecordReader::new();
    let mut batch = Vec::with_capacity(BATCH);
    while let Some(line) = lines.next()? {
        let Line::Fits(line, _) = line else {
            if let LineRead::Warning(w) = reader.skip_oversize(MAX_LINE)? {
                summary.warnings.push(w);
            }
            continue;
        };
        let event = match reader.read_line(line)? {
            LineRead::Header(h) => {
                summary.sessions += 1;
                batch.push(Item::Begin(SessionInfo::of_header(summary.sessions.to_string(), &h)));
                continue;
            }
            // A later session: its note is a record of the new session, as in `filter`.
            LineRead::Boundary(h, note) => {
                summary.sessions += 1;
                batch.push(Item::Begin(SessionInfo::of_header(summary.sessions.to_string(), &h)));
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
        let own_line = (!matches!(event, Event::Frame(_) | Event::Stderr(_))).then(|| line.into());
        batch.push(Item::Record(event, own_line));
        if batch.len() >= BATCH {
            let next = match empty.try_recv() {
                Ok(mut used) => {
                    used.clear();
                    used
                }
                Err(_) => Vec::with_capacity(BATCH),
            };
            if full.send(std::mem::replace(&mut batch, next)).is_err() {
                return Ok(()); // the counting thread is gone: reported by the caller
            }
        }
    }
    if !batch.is_empty() {
        let _ = full.send(batch);
    }
    Ok(())
}

/// A growing capture's statistics, read a step at a time (the app's
/// Statistics panel on a live session or a capture being loaded): each step
/// reads only the records written since the last one.
///
/// The display filter and the series are tested on each record as it is
/// read, so they must be ones that read only the record itself
/// ([`needs_whole_sessions`] says which are not: those go through [`run`]).
pub struct Following {
    reader: Option<EventReader<BufReader<std::fs::File>>>,
    collector: Collector,
    filter: Option<Filter>,
    series: Vec<Filter>,
    name: String,
    transport: String,
    records: u64,
}

/// Whether a filter needs more than the record it tests (the other side of
/// an exchange, lint findings, the era, conversations).
pub fn needs_whole_sessions(filter: &Filter) -> bool {
    let n = filter.needs();
    n.findings || n.response || n.request || n.conversation || n.era
}

impl Following {
    /// `name` is the first session's (later ones are numbered from 2).
    pub fn new(options: StatsOptions, filter: Option<Filter>, series: Vec<Filter>, name: String) -> Self {
        Following {
            reader: None,
            collector: Collector::new(options, filter.is_some()),
            filter,
            series,
            name,
            transport: "stdio".into(),
            records: 0,
        }
    }

    /// Records read so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Reads what the capture gained; `session_over` once nothing more will
    /// be written (a half-written last line is then read as it is).
    pub fn read_new(&mut self, path: &Path, session_over: bool) -> Result<(), CaptureError> {
        if self.reader.is_none() {
            // Only a regular file: a FIFO in a capture's place must not block.
            let file = crate::record::private_files::open_regular(path).map_err(CaptureError::open(path))?;
            let r = EventReader::new(BufReader::with_capacity(READ_BUFFER, file)).map_err(CaptureError::read(path))?;
            let info = SessionInfo::of_header(self.name.clone(), r.header());
            self.transport = info.transport.clone();
            self.collector.begin_session(info);
            self.reader = Some(r);
        }
        let r = self.reader.as_mut().expect("opened above");
        r.following(!session_over);
        let mut sessions = 1;
        loop {
            let event = match r.next_item().map_err(CaptureError::read(path))? {
                Some(ReadItem::Event(e)) => e,
                Some(ReadItem::Warning(_)) => continue,
                Some(ReadItem::Boundary(h, note)) => {
                    sessions += 1;
                    let info = SessionInfo::of_header(sessions.to_string(), &h);
                    self.transport = info.transport.clone();
                    self.collector.begin_session(info);
                    note
                }
                None => break,
            };
            self.records += 1;
            let subject = EventSubject::new(&event, &[], &self.name, &self.transport);
            let verdict = verdict(self.filter.as_ref(), &self.series, &subject);
            self.collector.push(&event, verdict);
        }
        if session_over {
            self.collector.end_session();
        }
        Ok(())
    }

    /// Events that are not in a capture (a session recorded nowhere): the
    /// app hands over its rows as events.
    pub fn push_events(&mut self, events: &[Event], session_over: bool) {
        for event in events {
            self.records += 1;
            let line: &[u8] = match event {
                Event::Frame(f) => &f.raw,
                _ => &[],
            };
            let subject = EventSubject::new(event, line, &self.name, &self.transport);
            let verdict = verdict(self.filter.as_ref(), &self.series, &subject);
            self.collector.push(event, verdict);
        }
        if session_over {
            self.collector.end_session();
        }
    }

    pub fn report(&mut self) -> Report {
        self.collector.report()
    }
}

fn verdict(filter: Option<&Filter>, series: &[Filter], subject: &EventSubject<'_>) -> Verdict {
    let mut bits = u8::from(series.is_empty());
    for (i, f) in series.iter().enumerate() {
        if f.matches_checked(subject) {
            bits |= 1 << i;
        }
    }
    Verdict {
        kept: filter.is_none_or(|f| f.matches_checked(subject)),
        series: bits,
    }
}
