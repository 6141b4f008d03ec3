//! mcpscope's captures in other tools' formats (HAR for browser devtools
//! and HTTP debuggers, OTLP/JSON traces for tracing backends), and other
//! tools' captures read into mcpscope's.

pub mod har;
pub mod import;
pub mod otlp;
pub mod otlp_http;
pub mod otlp_live;
pub mod otlp_proto;

use crate::record::capture::{CaptureError, EventReader, Header, Item, READ_BUFFER};
use serde_json::Value;
use std::io::Write;
use std::path::Path;

/// Why an export stopped.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Capture(#[from] CaptureError),
    #[error("cannot write the export")]
    Write(#[source] std::io::Error),
    #[error(transparent)]
    Send(#[from] otlp_http::SendError),
}

/// Reads a capture record by record (every session of an appended capture,
/// in order): `begin` gets its header, `step` each event (`None`: another
/// session begins), `warn` each line that could not be read. Nothing of the
/// capture is held here; what `step` keeps is its own.
fn each_event<S>(
    path: &Path,
    begin: impl FnOnce(Header) -> S,
    mut step: impl FnMut(&mut S, Option<&crate::transport::event::Event>) -> Result<(), ExportError>,
    warn: &mut dyn FnMut(String),
) -> Result<S, ExportError> {
    let file = crate::record::private_files::open_regular(path).map_err(CaptureError::open(path))?;
    let mut reader =
        EventReader::new(std::io::BufReader::with_capacity(READ_BUFFER, file)).map_err(CaptureError::read(path))?;
    let mut state = begin(reader.header().clone());
    while let Some(item) = reader.next_item().map_err(CaptureError::read(path))? {
        match item {
            Item::Event(e) => step(&mut state, Some(&e))?,
            Item::Warning(w) => warn(w),
            Item::Boundary(..) => step(&mut state, None)?,
        }
    }
    Ok(state)
}

/// Writes pretty JSON with every line after the first indented by
/// `indent` (a value nested that deep in a document written piece by piece;
/// pretty JSON has no newline inside a string, so each one starts a line).
struct Indented<'a> {
    out: &'a mut dyn Write,
    indent: &'static [u8],
}

impl Write for Indented<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut rest = buf;
        while let Some(i) = memchr::memchr(b'\n', rest) {
            self.out.write_all(&rest[..=i])?;
            self.out.write_all(self.indent)?;
            rest = &rest[i + 1..];
        }
        self.out.write_all(rest)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

fn write_pretty(out: &mut dyn Write, v: &Value, indent: &'static [u8]) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut Indented { out, indent }, v).map_err(std::io::Error::from)
}

/// A JSON array written one element at a time, pretty as `to_writer_pretty`
/// writes it, its elements at `indent`.
struct ArrayOut {
    indent: &'static [u8],
    count: usize,
}

impl ArrayOut {
    fn item(&mut self, out: &mut dyn Write, v: &Value) -> std::io::Result<()> {
        out.write_all(if self.count == 0 { b"\n" } else { b",\n" })?;
        out.write_all(self.indent)?;
        write_pretty(out, v, self.indent)?;
        self.count += 1;
        Ok(())
    }

    /// Ends the array; `outer` is the indent of the line that opened it.
    fn end(&self, out: &mut dyn Write, outer: &[u8]) -> std::io::Result<()> {
        if self.count > 0 {
            out.write_all(b"\n")?;
            out.write_all(outer)?;
        }
        out.write_all(b"]")
    }
}

/// A format written while the capture is read: one JSON array of items
/// inside a document, each item written as soon as the format has it.
trait Streamed {
    /// The indent of the array's items, and of the line that opens it.
    const ITEM_INDENT: &'static [u8];
    const ARRAY_INDENT: &'static [u8];
    /// An event of the capture, or `None` where a new session begins.
    fn event(&mut self, ev: Option<&crate::transport::event::Event>);
    /// Hands the items complete so far to `each`, one at a time (HAR renders
    /// each entry as it is taken: a window's worth at once would be many
    /// times its messages).
    fn ready(&mut self, each: &mut dyn FnMut(&Value) -> std::io::Result<()>) -> std::io::Result<()>;
    /// At the end of the capture: every item left, the same way.
    fn rest(&mut self, each: &mut dyn FnMut(&Value) -> std::io::Result<()>) -> std::io::Result<()>;
    /// The document up to its array's `[`.
    fn head(&self, out: &mut dyn Write) -> std::io::Result<()>;
    /// The document after its array's `]`.
    fn tail(&self, out: &mut dyn Write) -> std::io::Result<()>;
}

impl Streamed for har::HarWriter {
    const ITEM_INDENT: &'static [u8] = b"      ";
    const ARRAY_INDENT: &'static [u8] = b"    ";
    fn event(&mut self, ev: Option<&crate::transport::event::Event>) {
        match ev {
            Some(e) => self.push(e),
            None => self.new_session(),
        }
    }
    fn ready(&mut self, each: &mut dyn FnMut(&Value) -> std::io::Result<()>) -> std::io::Result<()> {
        har::HarWriter::ready(self).try_for_each(|v| each(&v))
    }
    fn rest(&mut self, each: &mut dyn FnMut(&Value) -> std::io::Result<()>) -> std::io::Result<()> {
        self.finish();
        har::HarWriter::ready(self).try_for_each(|v| each(&v))
    }
    fn head(&self, out: &mut dyn Write) -> std::io::Result<()> {
        out.write_all(b"{\n  \"log\": {\n    \"version\": \"1.2\",\n    \"creator\": ")?;
        write_pretty(out, &self.creator(), b"    ")?;
        out.write_all(b",\n    \"entries\": [")
    }
    fn tail(&self, out: &mut dyn Write) -> std::io::Result<()> {
        // The comment says how many were left unanswered: known at the end only.
        out.write_all(b",\n    \"comment\": ")?;
        serde_json::to_writer(&mut *out, &self.comment())?;
        out.write_all(b"\n  }\n}\n")
    }
}

impl Streamed for otlp::OtlpWriter {
    const ITEM_INDENT: &'static [u8] = b"            ";
    const ARRAY_INDENT: &'static [u8] = b"          ";
    fn event(&mut self, ev: Option<&crate::transport::event::Event>) {
        match ev {
            Some(e) => self.push(e),
            None => self.new_session(),
        }
    }
    fn ready(&mut self, each: &mut dyn FnMut(&Value) -> std::io::Result<()>) -> std::io::Result<()> {
        self.take_ended_spans().iter().try_for_each(each)
    }
    fn rest(&mut self, each: &mut dyn FnMut(&Value) -> std::io::Result<()>) -> std::io::Result<()> {
        self.finish_spans().iter().try_for_each(each)
    }
    fn head(&self, out: &mut dyn Write) -> std::io::Result<()> {
        out.write_all(b"{\n  \"resourceSpans\": [\n    {\n      \"resource\": ")?;
        write_pretty(out, &self.resource(), b"      ")?;
        out.write_all(b",\n      \"scopeSpans\": [\n        {\n          \"scope\": ")?;
        write_pretty(out, &self.scope(), b"          ")?;
        out.write_all(b",\n          \"spans\": [")
    }
    fn tail(&self, out: &mut dyn Write) -> std::io::Result<()> {
        out.write_all(b"\n        }\n      ]\n    }\n  ]\n}\n")
    }
}

/// Writes a capture in a [`Streamed`] format to `out` while reading it, so
/// memory holds what is still open, not the capture (the head once the
/// capture is open and read: a capture refused writes nothing). Returns how
/// many items were written.
fn write_streamed<S: Streamed>(
    path: &Path,
    make: impl FnOnce(Header) -> S,
    out: &mut dyn Write,
    warn: &mut dyn FnMut(String),
) -> Result<usize, ExportError> {
    let io = ExportError::Write;
    let mut items = ArrayOut {
        indent: S::ITEM_INDENT,
        count: 0,
    };
    let mut begun = false;
    let mut writer = each_event(
        path,
        make,
        |w, ev| {
            w.event(ev);
            if !begun {
                w.head(out).map_err(io)?;
                begun = true;
            }
            w.ready(&mut |v| items.item(out, v)).map_err(io)
        },
        warn,
    )?;
    let mut rest = || -> std::io::Result<()> {
        if !begun {
            writer.head(out)?;
        }
        writer.rest(&mut |v| items.item(out, v))?;
        items.end(out, S::ARRAY_INDENT)?;
        writer.tail(out)?;
        out.flush()
    };
    rest().map_err(io)?;
    Ok(items.count)
}

/// Writes a capture as HAR 1.2 to `out` while reading it: each entry as
/// soon as it is complete, so memory holds the open exchanges, not the
/// capture. Returns how many entries were written.
pub fn write_har(
    path: &Path,
    tool_version: &str,
    out: &mut dyn Write,
    warn: &mut dyn FnMut(String),
) -> Result<usize, ExportError> {
    write_streamed(path, |h| har::HarWriter::new(h, tool_version), out, warn)
}

/// Writes a capture as an OTLP/JSON `ExportTraceServiceRequest` to `out`
/// while reading it: each span once it ended, the session spans and what
/// never ended at the end. Returns how many spans were written.
pub fn write_otlp(
    path: &Path,
    tool_version: &str,
    out: &mut dyn Write,
    warn: &mut dyn FnMut(String),
) -> Result<usize, ExportError> {
    write_streamed(path, |h| otlp::OtlpWriter::new(h, tool_version), out, warn)
}

/// Spans sent to a collector per request by [`send_otlp`].
const SEND_BATCH: usize = 512;

/// Sends a capture's traces to an OpenTelemetry collector while reading it,
/// in requests of up to [`SEND_BATCH`] ended spans and one last request
/// with the rest; stops at the first that does not arrive. Returns what the
/// collector said of each request.
pub fn send_otlp(
    path: &Path,
    tool_version: &str,
    endpoint: &str,
    warn: &mut dyn FnMut(String),
) -> Result<Vec<otlp_http::Sent>, ExportError> {
    otlp_http::traces_url(endpoint)?;
    let mut sent = Vec::new();
    let mut batch = Vec::new();
    let mut writer = each_event(
        path,
        |h| otlp::OtlpWriter::new(h, tool_version),
        |w, ev| {
            match ev {
                Some(e) => w.push(e),
                None => w.new_session(),
            }
            batch.extend(w.take_ended_spans());
            if batch.len() >= SEND_BATCH {
                sent.push(otlp_http::send(
                    endpoint,
                    &w.export_request(std::mem::take(&mut batch)),
                )?);
            }
            Ok(())
        },
        warn,
    )?;
    batch.extend(writer.finish_spans());
    sent.push(otlp_http::send(endpoint, &writer.export_request(batch))?);
    Ok(sent)
}

/// Why a file could not be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportFileError {
    #[error("cannot read {}", .path.display())]
    Read {
        path: std::path::PathBuf,
        #[source]
        source: crate::record::private_files::PrivateFileError,
    },
    #[error("cannot read {}: it is not UTF-8 text", .0.display())]
    NotText(std::path::PathBuf),
    #[error("{} is larger than {} MiB: not imported (an import holds the messages to put them in time order)", .0.display(), MAX_IMPORT >> 20)]
    TooLarge(std::path::PathBuf),
    // The source (what is wrong in it) follows when the chain is said.
    #[error("{}", .path.display())]
    Format {
        path: std::path::PathBuf,
        source: import::ImportError,
    },
    #[error("{} already exists: give another --output (an import never appends to a capture)", .0.display())]
    Exists(std::path::PathBuf),
    #[error(transparent)]
    Write(#[from] CaptureError),
}

/// What an import wrote.
#[derive(Debug)]
pub struct ImportReport {
    pub format: import::Format,
    pub sessions: usize,
    pub messages: usize,
    pub notes: Vec<String>,
}

/// The largest file imported: its messages are held (compactly, about the
/// file's size or less) to be put in time order before the capture is written.
const MAX_IMPORT: u64 = 256 << 20;

/// A file's bytes as UTF-8 text, checked as they are read (a byte order
/// mark at the start is skipped): the first sequence that is not UTF-8
/// ends the reading with an error, and [`Utf8Text::not_utf8`] says so.
struct Utf8Text<R> {
    inner: R,
    buf: Box<[u8]>,
    /// `buf[start..valid]` is checked text not yet read; `buf[valid..end]`
    /// the start of a character the next read completes.
    start: usize,
    valid: usize,
    end: usize,
    began: bool,
    not_utf8: bool,
}

impl<R: std::io::Read> Utf8Text<R> {
    fn new(inner: R) -> Self {
        Self {
            inner,
            buf: vec![0; 256 * 1024].into_boxed_slice(),
            start: 0,
            valid: 0,
            end: 0,
            began: false,
            not_utf8: false,
        }
    }

    fn bad(&mut self) -> std::io::Error {
        self.not_utf8 = true;
        std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text")
    }
}

impl<R: std::io::Read> std::io::BufRead for Utf8Text<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.start < self.valid {
            return Ok(&self.buf[self.start..self.valid]);
        }
        self.buf.copy_within(self.valid..self.end, 0);
        (self.start, self.valid, self.end) = (0, 0, self.end - self.valid);
        loop {
            let n = match self.inner.read(&mut self.buf[self.end..]) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if n == 0 {
                if self.end > self.valid {
                    // The file ends inside a character.
                    return Err(self.bad());
                }
                return Ok(&[]);
            }
            self.end += n;
            if !self.began {
                if self.end < 3 && self.buf[..self.end] == b"\xEF\xBB\xBF"[..self.end] {
                    continue;
                }
                self.began = true;
                if self.buf[..self.end].starts_with(b"\xEF\xBB\xBF") {
                    self.start = 3;
                }
            }
            match std::str::from_utf8(&self.buf[self.start..self.end]) {
                Ok(_) => self.valid = self.end,
                Err(e) if e.valid_up_to() == 0 && e.error_len().is_some() => return Err(self.bad()),
                Err(e) => self.valid = self.start + e.valid_up_to(),
            }
            if self.valid > self.start {
                return Ok(&self.buf[self.start..self.valid]);
            }
            // Only the first bytes of a character so far.
            if self.end == self.buf.len() {
                return Err(self.bad());
            }
        }
    }

    fn consume(&mut self, n: usize) {
        self.start = (self.start + n).min(self.valid);
    }
}

impl<R: std::io::Read> std::io::Read for Utf8Text<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        use std::io::BufRead as _;
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

/// Reads another tool's capture at `from` (its format detected) and writes it
/// as a new mcpscope capture at `to` (created 0600; an existing file is
/// refused): every session, in order, each message a frame (or a stderr
/// line) at its time. The file is read as it comes, one entry at a time, and
/// nothing is written unless all of it was read.
pub fn import_file(from: &Path, to: &Path) -> Result<ImportReport, ImportFileError> {
    use std::io::{Read as _, Seek as _};
    let unreadable = |source| ImportFileError::Read {
        path: from.to_owned(),
        source,
    };
    let read_failed = |e| unreadable(crate::record::private_files::PrivateFileError::Open(e));
    let mut file = crate::record::private_files::open_regular(from).map_err(unreadable)?;
    if file.metadata().map_err(read_failed)?.len() > MAX_IMPORT {
        return Err(ImportFileError::TooLarge(from.to_owned()));
    }
    let mut head = Vec::new();
    (&mut file)
        .take(64 * 1024)
        .read_to_end(&mut head)
        .map_err(read_failed)?;
    // The head may end inside a character; what came before it decides.
    let head_text = match std::str::from_utf8(&head) {
        Ok(t) => t,
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default(),
        Err(_) => return Err(ImportFileError::NotText(from.to_owned())),
    };
    let format_error = |source| ImportFileError::Format {
        path: from.to_owned(),
        source,
    };
    let rewind = |file: &mut std::fs::File| file.rewind().map_err(read_failed);
    let detected = match import::detect_head(head_text) {
        Some(f) => Some(f),
        None if head_text.trim_start_matches('\u{feff}').trim_start().starts_with('{') => {
            rewind(&mut file)?;
            let mut text = Utf8Text::new(&mut file);
            let f = import::format_of_members(&mut text);
            if text.not_utf8 {
                return Err(ImportFileError::NotText(from.to_owned()));
            }
            f
        }
        None => None,
    };
    let format = detected.ok_or_else(|| format_error(import::ImportError::Unknown))?;
    rewind(&mut file)?;
    let mut text = Utf8Text::new(&mut file);
    let imported = match import::parse(format, &mut text) {
        Ok(i) => i,
        Err(_) if text.not_utf8 => return Err(ImportFileError::NotText(from.to_owned())),
        Err(import::ImportError::Read(e)) => return Err(read_failed(e)),
        Err(e) => return Err(format_error(e)),
    };
    if std::fs::symlink_metadata(to).is_ok() {
        return Err(ImportFileError::Exists(to.to_owned()));
    }
    let mut messages = 0;
    for session in &imported.sessions {
        let mut header = session.header.clone();
        if header.command_line.is_empty() {
            header.command_line = format!("imported from {}", imported.format.name());
        }
        let mut writer = crate::record::capture::Writer::open(to, &header)?;
        let mut recorder = crate::transport::recorder::Recorder::new(
            crate::wire::classify::Limits::default(),
            std::time::Instant::now(),
        );
        let write_failed = |source| CaptureError::Create {
            path: to.to_owned(),
            source,
        };
        // Every time is at most import::MAX_UNIX_MS, so none overflows as microseconds.
        let since_start =
            |unix_ms: u64| std::time::Duration::from_millis(unix_ms.saturating_sub(header.started_unix_ms));
        // Model turns go in among the messages, by when they began.
        let mut models = session.models.iter().peekable();
        let model_event = |(unix_ms, turn): &(u64, crate::model::record::ModelExchange)| {
            let mut turn = turn.clone();
            turn.at = since_start(*unix_ms);
            crate::transport::event::Event::Model(Box::new(turn))
        };
        for m in session.messages.iter() {
            while let Some(turn) = models.next_if(|(at, _)| *at <= m.unix_ms) {
                writer.write(&model_event(turn)).map_err(write_failed)?;
            }
            let at = since_start(m.unix_ms);
            let line = crate::wire::framing::RawLine {
                bytes: m.bytes.to_vec(),
                ending: crate::wire::framing::LineEnding::Lf,
            };
            let event = if m.stderr {
                crate::transport::event::Event::Stderr(recorder.stderr_at(line, at))
            } else {
                crate::transport::event::Event::Frame(recorder.frame_at(m.direction, line, at, None))
            };
            writer.write(&event).map_err(write_failed)?;
            messages += 1;
        }
        for turn in models {
            writer.write(&model_event(turn)).map_err(write_failed)?;
        }
        let last_model = session.models.iter().map(|(at, _)| *at).max();
        let end = session
            .messages
            .last_ms()
            .max(last_model)
            .map_or(std::time::Duration::ZERO, since_start);
        for note in &imported.notes {
            writer
                .write(&crate::transport::event::Event::Note {
                    at: end,
                    text: format!("imported from {}: {note}", imported.format.name()),
                })
                .map_err(write_failed)?;
        }
        writer.flush().map_err(write_failed)?;
    }
    Ok(ImportReport {
        format: imported.format,
        sessions: imported.sessions.len(),
        messages,
        notes: imported.notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead as _, Read as _};

    /// A reader that hands out one byte at a time: every character split across reads.
    struct Trickle<'a>(&'a [u8]);

    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.len().min(out.len()).min(1);
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn through(bytes: &[u8]) -> (Result<String, std::io::Error>, bool) {
        let mut t = Utf8Text::new(Trickle(bytes));
        let mut s = String::new();
        let r = t.read_to_string(&mut s).map(|_| s);
        (r, t.not_utf8)
    }

    #[test]
    fn text_is_checked_as_it_is_read_and_a_byte_order_mark_skipped() {
        let (r, bad) = through("\u{feff}[\"é€😀\"]".as_bytes());
        assert_eq!(r.unwrap(), "[\"é€😀\"]");
        assert!(!bad);
        let (r, _) = through(b"\xEF\xBB");
        assert!(r.is_err(), "a file cut inside its byte order mark");
        for bad in [&b"[\"\xff\"]"[..], b"ok \xe2\x82", b"\xc3("] {
            let (r, not_utf8) = through(bad);
            assert!(r.is_err() && not_utf8, "{bad:?}");
        }
        let mut t = Utf8Text::new(&b""[..]);
        assert!(t.fill_buf().unwrap().is_empty());
    }
}
