//! Reading a capture back: whole ([`load`]), record by record
//! ([`EventReader`]), or one line at a time as it grows ([`RecordReader`],
//! which the others go through). Every frame is re-classified and
//! re-correlated as it is read.

use crate::record::capture::format::{FORMAT, Header, record_to_event};
use crate::record::capture_error::{CaptureError, ReadError};
use crate::transport::event::Event;
use crate::transport::recorder::Recorder;
use crate::wire::classify::Limits;
use crate::wire::frame::Direction;
use crate::wire::framing::{LineEnding, RawLine};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::Value;
use std::io::{self, BufRead, BufReader};
use std::path::Path;
use std::time::Duration;

/// Longest record the loader reads into memory. The writer never produces a
/// longer one for lines within [`Limits::max_held_line_bytes`] (JSON string
/// escaping can make a record up to six times its line); anything longer is
/// skipped with a warning instead of exhausting memory.
const MAX_RECORD_BYTES: usize = 8 * crate::wire::classify::DEFAULT_MAX_HELD_LINE_BYTES + 64 * 1024;

/// A capture read back from disk.
#[derive(Debug, Default)]
pub struct Loaded {
    /// The first session's header.
    pub header: Header,
    /// Every session's events, one after the other. Each session after the
    /// first begins with a note naming it; times go on from the session before.
    pub events: Vec<Event>,
    /// The sessions in the file, in order (one for most captures).
    pub sessions: Vec<SessionSpan>,
    /// Lines that could not be read, with their line numbers. A capture cut
    /// short by a crash usually has one here: its last, partial line.
    pub warnings: Vec<String>,
}

/// One session of a capture: its header and where its events are.
#[derive(Clone, Debug, Default)]
pub struct SessionSpan {
    pub header: Header,
    pub events: std::ops::Range<usize>,
}

impl Loaded {
    /// The events of session `i` (0-based).
    pub fn session_events(&self, i: usize) -> &[Event] {
        self.sessions.get(i).map_or(&[], |s| &self.events[s.events.clone()])
    }
}

/// Reads a capture, re-classifying and re-correlating every frame. Only a
/// regular file is read: a FIFO or a device is refused at once.
pub fn load(path: &Path) -> Result<Loaded, CaptureError> {
    let file = crate::record::private_files::open_regular(path).map_err(CaptureError::open(path))?;
    load_from(BufReader::with_capacity(READ_BUFFER, file)).map_err(CaptureError::read(path))
}

pub fn load_from(reader: impl BufRead) -> Result<Loaded, ReadError> {
    load_with_limit(reader, MAX_RECORD_BYTES)
}

pub(super) fn load_with_limit(reader: impl BufRead, max_record: usize) -> Result<Loaded, ReadError> {
    let mut events = EventReader::with_limit(reader, max_record)?;
    let mut loaded = Loaded {
        header: events.header().clone(),
        sessions: vec![SessionSpan {
            header: events.header().clone(),
            events: 0..0,
        }],
        ..Loaded::default()
    };
    while let Some(item) = events.next_item()? {
        match item {
            Item::Event(ev) => loaded.events.push(ev),
            Item::Warning(w) => loaded.warnings.push(w),
            Item::Boundary(h, note) => {
                let end = loaded.events.len();
                if let Some(prev) = loaded.sessions.last_mut() {
                    prev.events.end = end;
                }
                loaded.events.push(note);
                loaded.sessions.push(SessionSpan {
                    header: *h,
                    events: end..end,
                });
            }
        }
    }
    let end = loaded.events.len();
    if let Some(last) = loaded.sessions.last_mut() {
        last.events.end = end;
    }
    Ok(loaded)
}

/// The line of each record among `seqs` (frames and stderr lines, by the
/// sequence numbers a reading of the file gives them), for reports that
/// point into the capture.
pub fn lines_of(
    path: &Path,
    seqs: &std::collections::HashSet<u64>,
) -> Result<std::collections::HashMap<u64, usize>, CaptureError> {
    let mut found = std::collections::HashMap::new();
    if seqs.is_empty() {
        return Ok(found);
    }
    let file = crate::record::private_files::open_regular(path).map_err(CaptureError::open(path))?;
    let mut reader = EventReader::new(BufReader::with_capacity(READ_BUFFER, file)).map_err(CaptureError::read(path))?;
    while let Some(item) = reader.next_item().map_err(CaptureError::read(path))? {
        let seq = match &item {
            Item::Event(Event::Frame(f)) => f.seq,
            Item::Event(Event::Stderr(s)) => s.seq,
            _ => continue,
        };
        if seqs.contains(&seq) {
            found.insert(seq, reader.line());
            if found.len() == seqs.len() {
                break;
            }
        }
    }
    Ok(found)
}

/// How much of a capture file is read at once.
pub const READ_BUFFER: usize = 256 * 1024;

/// What one line of a capture held.
#[derive(Debug)]
pub enum LineRead {
    /// The file's first line.
    Header(Header),
    /// Another session appended to the same file: its header and the note
    /// that marks where it begins (ids start again there, times go on).
    Boundary(Header, Event),
    Event(Event),
    /// A line that could not be read, with its line number: reported, skipped.
    Warning(String),
    Blank,
}

/// The first line is not a capture header: the file is something else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotACapture(pub String);

impl std::fmt::Display for NotACapture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not an mcpscope capture: {}", self.0)
    }
}

impl std::error::Error for NotACapture {}

/// The fields of a frame or stderr record, borrowed where the JSON has no
/// escapes. Anything else (meta records, odd types) takes the `Value` path.
#[derive(serde::Deserialize)]
struct LineRecord<'a> {
    t_us: u64,
    #[serde(borrow)]
    dir: std::borrow::Cow<'a, str>,
    #[serde(default)]
    raw: Option<String>,
    #[serde(default, borrow)]
    raw_b64: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    eol: Option<std::borrow::Cow<'a, str>>,
}

/// Reads a capture one line at a time, re-classifying and re-correlating each
/// frame: loading a whole file, streaming one ([`EventReader`]) and following
/// a growing one all go through it.
pub struct RecordReader {
    recorder: Recorder,
    header: Option<Header>,
    lineno: usize,
    sessions: usize,
    /// Where the current session's times start on the file's clock.
    offset: Duration,
    last_at: Duration,
}

impl Default for RecordReader {
    fn default() -> Self {
        Self::new()
    }
}

impl RecordReader {
    pub fn new() -> Self {
        Self {
            recorder: Recorder::replay(Limits::default()),
            header: None,
            lineno: 0,
            sessions: 0,
            offset: Duration::ZERO,
            last_at: Duration::ZERO,
        }
    }

    /// The first session's header, once read.
    pub fn header(&self) -> Option<&Header> {
        self.header.as_ref()
    }

    /// Lines read so far (blank ones included), i.e. the number of the last one.
    pub fn lines_read(&self) -> usize {
        self.lineno
    }

    /// Accounts for a line longer than the reader keeps in memory: skipped
    /// with a warning, or refused when it is where the header should be.
    pub fn skip_oversize(&mut self, max: usize) -> Result<LineRead, NotACapture> {
        self.lineno += 1;
        if self.header.is_none() {
            return Err(NotACapture(format!("line {} is longer than {max} bytes", self.lineno)));
        }
        Ok(LineRead::Warning(format!(
            "line {}: longer than {max} bytes, skipped",
            self.lineno
        )))
    }

    /// Accounts for a line the caller chose not to read (a filter's text
    /// pre-check ruled it out): its frame or stderr record still takes a
    /// sequence number and moves the clock, so what is read later is
    /// numbered and timed as in a full read. A session header is read whole.
    pub fn skip_line(&mut self, line: &[u8]) -> Result<LineRead, NotACapture> {
        if self.header.is_none() || memchr::memmem::find(line, FORMAT.as_bytes()).is_some() {
            return self.read_line(line);
        }
        self.lineno += 1;
        #[derive(serde::Deserialize)]
        struct Envelope<'a> {
            #[serde(default)]
            t_us: Option<u64>,
            #[serde(borrow)]
            dir: std::borrow::Cow<'a, str>,
        }
        if let Ok(e) = serde_json::from_slice::<Envelope>(line) {
            if matches!(&*e.dir, "in" | "out" | "stderr") {
                self.recorder.skip_seq();
            }
            if let Some(t) = e.t_us {
                self.last_at = self.last_at.max(self.offset + Duration::from_micros(t));
            }
        }
        Ok(LineRead::Blank)
    }

    /// Reads one complete line, without its `\n`.
    pub fn read_line(&mut self, line: &[u8]) -> Result<LineRead, NotACapture> {
        self.lineno += 1;
        let lineno = self.lineno;
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(LineRead::Blank);
        }
        if self.header.is_some()
            && let Some(ev) = self.fast_record(line)
        {
            return Ok(LineRead::Event(ev));
        }
        let parsed: Result<Value, _> = serde_json::from_slice(line);
        let Some(first) = &self.header else {
            // The first line must be a header: anything else is not a capture.
            let v = match parsed {
                Ok(v) => v,
                Err(e) if std::str::from_utf8(line).is_err() => {
                    return Err(NotACapture(format!("line {lineno} is binary data, not JSON ({e})")));
                }
                Err(e) => return Err(NotACapture(format!("line {lineno} is not JSON ({e})"))),
            };
            let header = Header::from_json(&v).ok_or_else(|| {
                NotACapture(format!(
                    "line {lineno} is not a capture header (expected {{\"format\":\"{FORMAT}\",…}})"
                ))
            })?;
            self.header = Some(header.clone());
            self.sessions = 1;
            return Ok(LineRead::Header(header));
        };
        let v = match parsed {
            Ok(v) => v,
            Err(e) => return Ok(LineRead::Warning(format!("line {lineno}: not JSON ({e})"))),
        };
        if let Some(h) = Header::from_json(&v) {
            // A session boundary: ids start again, times go on.
            self.sessions += 1;
            let wall = Duration::from_millis(h.started_unix_ms.saturating_sub(first.started_unix_ms));
            self.offset = wall.max(self.last_at);
            self.recorder = Recorder::replay_after(Limits::default(), self.recorder.next_seq());
            let note = Event::Note {
                at: self.offset,
                text: format!(
                    "session {} of this capture ({}{}): {}",
                    self.sessions,
                    h.mode,
                    if h.transport.is_empty() || h.transport == "stdio" {
                        String::new()
                    } else {
                        format!(", {}", h.transport)
                    },
                    h.command_line
                ),
            };
            return Ok(LineRead::Boundary(h, note));
        }
        Ok(match record_to_event(&v, &mut self.recorder, self.offset) {
            Ok(Some(ev)) => {
                self.last_at = self.last_at.max(ev.at());
                LineRead::Event(ev)
            }
            Ok(None) => LineRead::Blank,
            Err(e) => LineRead::Warning(format!("line {lineno}: {e}")),
        })
    }

    /// A frame or stderr record read without building a `Value` (most of a
    /// capture); `None` sends the line down the general path.
    fn fast_record(&mut self, line: &[u8]) -> Option<Event> {
        let rec: LineRecord = serde_json::from_slice(line).ok()?;
        let direction = match &*rec.dir {
            "out" => Some(Direction::Out),
            "in" => Some(Direction::In),
            "stderr" => None,
            _ => return None,
        };
        let bytes = match (rec.raw, rec.raw_b64) {
            (Some(s), _) => s.into_bytes(),
            (None, Some(b)) => B64.decode(&*b).ok()?,
            (None, None) => return None,
        };
        let ending = rec.eol.as_deref().and_then(LineEnding::parse).unwrap_or(LineEnding::Lf);
        let line = RawLine { bytes, ending };
        let at = self.offset + Duration::from_micros(rec.t_us);
        self.last_at = self.last_at.max(at);
        Some(match direction {
            Some(d) => Event::Frame(self.recorder.frame_at(d, line, at, None)),
            None => Event::Stderr(self.recorder.stderr_at(line, at)),
        })
    }
}

/// What a capture yields, one record at a time.
#[derive(Debug)]
pub enum Item {
    Event(Event),
    /// A line that could not be read, with its line number.
    Warning(String),
    /// Another session appended to the same file begins: its header and the
    /// note that marks it (ids start again there, times go on).
    Boundary(Box<Header>, Event),
}

/// Reads a capture file record by record through a [`RecordReader`]: a
/// million-record capture is linted, diffed or opened without holding its
/// events. [`load`] collects them.
pub struct EventReader<R> {
    reader: R,
    header: Header,
    records: RecordReader,
    /// Longest record kept in memory (see [`MAX_RECORD_BYTES`]).
    max_record: usize,
    line: Vec<u8>,
    /// A last line still being written (see [`EventReader::following`]), and
    /// whether it still fits.
    partial: Vec<u8>,
    partial_fits: Option<bool>,
    following: bool,
    /// Bytes consumed so far, for progress.
    offset: u64,
}

impl<R: BufRead> EventReader<R> {
    /// Reads up to the header line; fails when the file is empty or not a capture.
    pub fn new(reader: R) -> Result<Self, ReadError> {
        Self::with_limit(reader, MAX_RECORD_BYTES)
    }

    fn with_limit(reader: R, max_record: usize) -> Result<Self, ReadError> {
        let mut r = Self {
            reader,
            header: Header::default(),
            records: RecordReader::new(),
            max_record,
            line: Vec::with_capacity(4096),
            partial: Vec::new(),
            partial_fits: None,
            following: false,
            offset: 0,
        };
        loop {
            let Some(fits) = r.read_line()? else {
                return Err(ReadError::Empty);
            };
            let read = if fits {
                r.records.read_line(&r.line)?
            } else {
                r.records.skip_oversize(max_record)?
            };
            if let LineRead::Header(h) = read {
                r.header = h;
                return Ok(r);
            }
        }
    }

    /// The first session's header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Bytes of the file read so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The line the last item came from (1-based).
    pub fn line(&self) -> usize {
        self.records.lines_read()
    }

    /// For a capture still being written: a last line without its newline is
    /// left for a later call (after the writer finished it) instead of read
    /// as a line cut short. Turn it off once the writer is done.
    pub fn following(&mut self, on: bool) {
        self.following = on;
    }

    /// Reads the next line (without its `\n`) into `self.line`: `None` at the
    /// end, `Some(false)` for a line longer than the limit (skipped, not kept).
    fn read_line(&mut self) -> io::Result<Option<bool>> {
        self.line.clear();
        let (mut fits, mut any) = (true, false);
        if let Some(f) = self.partial_fits.take() {
            std::mem::swap(&mut self.line, &mut self.partial);
            (fits, any) = (f, true);
        }
        loop {
            let available = match self.reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                if !any {
                    return Ok(None);
                }
                if self.following {
                    std::mem::swap(&mut self.line, &mut self.partial);
                    self.partial_fits = Some(fits);
                    return Ok(None);
                }
                return Ok(Some(fits));
            }
            any = true;
            let (part, done) = match newline_at(available) {
                Some(i) => (&available[..i], Some(i + 1)),
                None => (available, None),
            };
            if fits && self.line.len() + part.len() <= self.max_record {
                self.line.extend_from_slice(part);
            } else {
                fits = false;
                self.line.clear();
            }
            let used = done.unwrap_or(available.len());
            self.reader.consume(used);
            self.offset += used as u64;
            if done.is_some() {
                return Ok(Some(fits));
            }
        }
    }

    /// A whole line already in the read buffer, read where it lies instead
    /// of copied out first (most lines of a large capture); `None` when the
    /// buffer holds no complete line that fits, for [`Self::read_line`].
    fn read_buffered(&mut self) -> Result<Option<LineRead>, ReadError> {
        if self.partial_fits.is_some() {
            return Ok(None);
        }
        let available = loop {
            match self.reader.fill_buf() {
                Ok(b) => break b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            }
        };
        let Some(end) = newline_at(available).filter(|&i| i <= self.max_record) else {
            return Ok(None);
        };
        let read = self.records.read_line(&available[..end])?;
        self.reader.consume(end + 1);
        self.offset += end as u64 + 1;
        Ok(Some(read))
    }

    /// The next event, warning or session boundary; `None` at the end of the file.
    pub fn next_item(&mut self) -> Result<Option<Item>, ReadError> {
        loop {
            let read = match self.read_buffered()? {
                Some(read) => read,
                None => {
                    let Some(fits) = self.read_line()? else {
                        return Ok(None);
                    };
                    if fits {
                        self.records.read_line(&self.line)?
                    } else {
                        self.records.skip_oversize(self.max_record)?
                    }
                }
            };
            match read {
                LineRead::Event(ev) => return Ok(Some(Item::Event(ev))),
                LineRead::Warning(w) => return Ok(Some(Item::Warning(w))),
                LineRead::Boundary(h, note) => return Ok(Some(Item::Boundary(Box::new(h), note))),
                LineRead::Header(_) | LineRead::Blank => {}
            }
        }
    }
}

fn newline_at(bytes: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', bytes)
}
