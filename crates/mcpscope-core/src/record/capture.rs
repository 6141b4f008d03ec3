//! The JSONL capture file: every event, appended as it happens.
//!
//! One JSON object per line. The first line is a header; every other line is a
//! record with `t_us` (microseconds since the session started) and `dir`
//! (`out`, `in`, `stderr` or `meta`). Frames and stderr lines keep their exact
//! bytes: `raw` as a string when the line is UTF-8, `raw_b64` otherwise, plus
//! `eol` (`lf`, `crlf` or `eof`). Classification fields (`kind`, `id`,
//! `method`, `anomalies`, `latency_us`) are written for readers such as `jq`;
//! loading recomputes them from the raw bytes so old captures gain new checks.

use crate::record::recorder::Recorder;
use crate::transport::event::{Event, HttpInfo};
use crate::transport::process::{ExitInfo, ServerSpec, SpawnError};
use crate::wire::classify::Limits;
use crate::wire::correlation::TimedOut;
use crate::wire::frame::{Direction, Frame};
use crate::wire::framing::{LineEnding, RawLine};
use crate::wire::message::RequestId;
use anyhow::{Context, Result};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Value, json};
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub const FORMAT: &str = "mcpscope-capture";
pub const VERSION: u64 = 1;

/// What the first line of a capture says about the session.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Header {
    pub started_unix_ms: u64,
    pub command_line: String,
    pub program: String,
    pub args: Vec<String>,
    pub cwd: Option<String>,
    /// Names only: values often hold API keys.
    pub env_keys: Vec<String>,
    /// `session` (mcpscope drove the server) or `proxy` (a real client did).
    pub mode: String,
    /// `stdio` (also when empty, as in older captures), `http` or `sse`.
    pub transport: String,
    /// The server's URL, for the HTTP transports.
    pub url: Option<String>,
    /// Names of the extra HTTP headers sent: values often hold tokens.
    pub header_keys: Vec<String>,
}

impl Header {
    pub fn for_spec(spec: &ServerSpec, mode: &str) -> Self {
        Self {
            started_unix_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            command_line: spec.display(),
            program: spec.program.clone(),
            args: spec.args.clone(),
            cwd: spec.cwd.as_ref().map(|p| p.display().to_string()),
            env_keys: spec.env.iter().map(|(k, _)| k.clone()).collect(),
            mode: mode.to_owned(),
            transport: "stdio".into(),
            ..Self::default()
        }
    }

    /// The header for a session over any transport.
    pub fn for_target(target: &crate::transport::target::Target, mode: &str) -> Self {
        match target {
            crate::transport::target::Target::Stdio(spec) => Self::for_spec(spec, mode),
            crate::transport::target::Target::Http(h) => Self {
                started_unix_ms: SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as u64),
                command_line: h.display(),
                mode: mode.to_owned(),
                transport: h.kind.as_str().into(),
                url: Some(h.url.clone()),
                header_keys: h.headers.iter().map(|(k, _)| k.clone()).collect(),
                ..Self::default()
            },
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "format": FORMAT,
            "version": VERSION,
            "mcpscope": env!("CARGO_PKG_VERSION"),
            "mode": self.mode,
            "started_unix_ms": self.started_unix_ms,
            "command_line": self.command_line,
            "program": self.program,
            "args": self.args,
            "cwd": self.cwd,
            "env_keys": self.env_keys,
            "transport": if self.transport.is_empty() { "stdio" } else { &self.transport },
            "url": self.url,
            "header_keys": self.header_keys,
        })
    }

    fn from_json(v: &Value) -> Option<Self> {
        if v.get("format")?.as_str()? != FORMAT {
            return None;
        }
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        Some(Self {
            started_unix_ms: v.get("started_unix_ms").and_then(Value::as_u64).unwrap_or(0),
            command_line: s("command_line").unwrap_or_default(),
            program: s("program").unwrap_or_default(),
            args: v
                .get("args")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect())
                .unwrap_or_default(),
            cwd: s("cwd"),
            env_keys: v
                .get("env_keys")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect())
                .unwrap_or_default(),
            mode: s("mode").unwrap_or_default(),
            transport: s("transport").unwrap_or_else(|| "stdio".into()),
            url: s("url"),
            header_keys: v
                .get("header_keys")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect())
                .unwrap_or_default(),
        })
    }
}

/// Appends events to a capture file.
pub struct Writer {
    out: BufWriter<File>,
    path: PathBuf,
}

impl Writer {
    pub fn create(path: &Path, header: &Header) -> Result<Self> {
        let file = File::create(path).with_context(|| format!("cannot create capture file {}", path.display()))?;
        Self::with_file(file, path, header)
    }

    /// Starts a capture in a file the caller opened (e.g. a private one in the
    /// state directory); `path` names it in messages.
    pub fn with_file(file: File, path: &Path, header: &Header) -> Result<Self> {
        let mut w = Self {
            out: BufWriter::with_capacity(256 * 1024, file),
            path: path.to_owned(),
        };
        serde_json::to_writer(&mut w.out, &header.to_json())?;
        w.out.write_all(b"\n")?;
        w.out.flush()?;
        Ok(w)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Hands buffered records to the OS. The session calls this whenever it
    /// has no further event waiting, so a crash loses at most one burst.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    pub fn write(&mut self, event: &Event) -> io::Result<()> {
        let w = &mut self.out;
        match event {
            Event::Frame(f) => write_frame(w, f)?,
            Event::Stderr(s) => {
                write_prefix(w, s.at, Some(s.seq), "stderr")?;
                write_raw(w, &s.raw, s.ending)?;
                w.write_all(b"}\n")?;
            }
            other => {
                let mut v = meta_json(other);
                let o = v.as_object_mut().expect("meta records are objects");
                let mut rec = serde_json::Map::new();
                rec.insert("t_us".into(), (other.at().as_micros() as u64).into());
                rec.insert("dir".into(), "meta".into());
                rec.append(o);
                serde_json::to_writer(&mut *w, &rec)?;
                w.write_all(b"\n")?;
            }
        }
        Ok(())
    }
}

fn write_prefix(w: &mut impl Write, at: Duration, seq: Option<u64>, dir: &str) -> io::Result<()> {
    write!(w, "{{\"t_us\":{}", at.as_micros() as u64)?;
    if let Some(seq) = seq {
        write!(w, ",\"seq\":{seq}")?;
    }
    write!(w, ",\"dir\":\"{dir}\"")
}

fn write_raw(w: &mut impl Write, raw: &[u8], ending: LineEnding) -> io::Result<()> {
    match std::str::from_utf8(raw) {
        Ok(s) => {
            w.write_all(b",\"raw\":")?;
            serde_json::to_writer(&mut *w, s)?;
        }
        Err(_) => write!(w, ",\"raw_b64\":\"{}\"", B64.encode(raw))?,
    }
    write!(w, ",\"eol\":\"{}\"", ending.as_str())
}

fn write_frame(w: &mut impl Write, f: &Frame) -> io::Result<()> {
    write_prefix(w, f.at, Some(f.seq), f.direction.as_str())?;
    write!(w, ",\"kind\":\"{}\"", f.class.kind.as_str())?;
    if let Some(id) = &f.class.id {
        w.write_all(b",\"id\":")?;
        serde_json::to_writer(&mut *w, &id.to_json())?;
    }
    if let Some(m) = &f.class.method {
        w.write_all(b",\"method\":")?;
        serde_json::to_writer(&mut *w, m)?;
    }
    if f.class.tool_error {
        w.write_all(b",\"tool_error\":true")?;
    }
    if let Some(link) = &f.link {
        write!(
            w,
            ",\"request_seq\":{},\"latency_us\":{}",
            link.request_seq,
            link.latency.as_micros() as u64
        )?;
    }
    if !f.class.anomalies.is_empty() {
        w.write_all(b",\"anomalies\":[")?;
        for (i, code) in f.class.anomalies.codes().enumerate() {
            if i > 0 {
                w.write_all(b",")?;
            }
            write!(w, "\"{code}\"")?;
        }
        w.write_all(b"]")?;
    }
    write_raw(w, &f.raw, f.ending)?;
    w.write_all(b"}\n")
}

fn meta_json(e: &Event) -> Value {
    match e {
        Event::Spawned {
            pid,
            program,
            command_line,
            ..
        } => json!({"event": "spawned", "pid": pid, "program": program, "command_line": command_line}),
        Event::SpawnFailed { error, .. } => json!({
            "event": "spawn_failed",
            "program": error.program,
            "resolved": error.resolved,
            "message": error.message,
        }),
        Event::TimedOut { timed_out, .. } => json!({
            "event": "timed_out",
            "id": timed_out.id.to_json(),
            "request_seq": timed_out.request_seq,
            "method": timed_out.method,
            "waited_us": timed_out.waited.as_micros() as u64,
        }),
        Event::Cancelled { id, .. } => json!({"event": "cancelled", "id": id.to_json()}),
        Event::WriteFailed { error, line, .. } => json!({
            "event": "write_failed",
            "error": error,
            "line": String::from_utf8_lossy(line),
        }),
        Event::Note { text, .. } => json!({"event": "note", "text": text}),
        Event::Http(h) => {
            let pairs = |hs: &[(String, String)]| -> Vec<Value> { hs.iter().map(|(k, v)| json!([k, v])).collect() };
            json!({
                "event": "http",
                "method": h.method,
                "url": h.url,
                "status": h.status,
                "sent": pairs(&h.sent),
                "received": pairs(&h.received),
                "request_id": h.request_id.as_ref().map(RequestId::to_json),
                "text": h.text,
                "error": h.error,
            })
        }
        Event::Exited { status, .. } => json!({"event": "exited", "code": status.code, "signal": status.signal}),
        Event::Closed { .. } => json!({"event": "closed"}),
        Event::Frame(_) | Event::Stderr(_) => unreachable!("written by their own writers"),
    }
}

/// A capture read back from disk.
#[derive(Debug, Default)]
pub struct Loaded {
    pub header: Header,
    pub events: Vec<Event>,
    /// Lines that could not be read, with their line numbers. A capture cut
    /// short by a crash usually has one here: its last, partial line.
    pub warnings: Vec<String>,
}

/// Reads a capture, re-classifying and re-correlating every frame.
pub fn load(path: &Path) -> Result<Loaded> {
    let file = File::open(path).with_context(|| format!("cannot open capture {}", path.display()))?;
    load_from(BufReader::with_capacity(READ_BUFFER, file))
        .with_context(|| format!("cannot read capture {}", path.display()))
}

pub fn load_from(reader: impl BufRead) -> Result<Loaded> {
    let mut events = EventReader::new(reader)?;
    let mut loaded = Loaded::default();
    while let Some(item) = events.next_item()? {
        match item {
            Item::Event(ev) => loaded.events.push(ev),
            Item::Warning(w) => loaded.warnings.push(w),
        }
    }
    loaded.header = events.header;
    Ok(loaded)
}

/// How much of a capture file is read at once.
pub const READ_BUFFER: usize = 256 * 1024;

/// What one line of a capture held.
#[derive(Debug)]
pub enum LineRead {
    Header(Header),
    Event(Event),
    /// A line that could not be read, with its line number: reported, skipped.
    Warning(String),
    Blank,
}

/// The first line is not a capture header: the file is something else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotACapture;

impl std::fmt::Display for NotACapture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line 1 is not an mcpscope capture header (expected {{\"format\":\"{FORMAT}\",…}})"
        )
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
        }
    }

    pub fn header(&self) -> Option<&Header> {
        self.header.as_ref()
    }

    /// Lines read so far (blank ones included), i.e. the number of the last one.
    pub fn lines_read(&self) -> usize {
        self.lineno
    }

    /// Reads one complete line, without its `\n`.
    pub fn read_line(&mut self, line: &[u8]) -> std::result::Result<LineRead, NotACapture> {
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
        let v: Value = match serde_json::from_slice(line) {
            Ok(v) => v,
            Err(e) => return Ok(LineRead::Warning(format!("line {lineno}: not JSON ({e})"))),
        };
        if self.header.is_none() {
            let header = Header::from_json(&v).ok_or(NotACapture)?;
            self.header = Some(header.clone());
            return Ok(LineRead::Header(header));
        }
        Ok(match record_to_event(&v, &mut self.recorder) {
            Ok(Some(ev)) => LineRead::Event(ev),
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
        let at = Duration::from_micros(rec.t_us);
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
}

/// Reads a capture file record by record through a [`RecordReader`]: a
/// million-record capture is linted, diffed or opened without holding its
/// events. [`load`] collects them.
pub struct EventReader<R> {
    reader: R,
    header: Header,
    records: RecordReader,
    line: Vec<u8>,
    /// A last line still being written (see [`EventReader::following`]).
    partial: Vec<u8>,
    following: bool,
    /// Bytes consumed so far, for progress.
    offset: u64,
}

impl<R: BufRead> EventReader<R> {
    /// Reads up to the header line; fails when the file is empty or not a capture.
    pub fn new(reader: R) -> Result<Self> {
        let mut r = Self {
            reader,
            header: Header::default(),
            records: RecordReader::new(),
            line: Vec::with_capacity(4096),
            partial: Vec::new(),
            following: false,
            offset: 0,
        };
        loop {
            if !r.read_line()? {
                anyhow::bail!("the file is empty");
            }
            if let LineRead::Header(h) = r.records.read_line(&r.line)? {
                r.header = h;
                return Ok(r);
            }
        }
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Bytes of the file read so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// For a capture still being written: a last line without its newline is
    /// left for a later call (after the writer finished it) instead of read
    /// as a line cut short. Turn it off once the writer is done.
    pub fn following(&mut self, on: bool) {
        self.following = on;
    }

    fn read_line(&mut self) -> io::Result<bool> {
        self.line.clear();
        std::mem::swap(&mut self.line, &mut self.partial);
        self.reader.read_until(b'\n', &mut self.line)?;
        if self.line.is_empty() {
            return Ok(false);
        }
        if self.following && self.line.last() != Some(&b'\n') {
            std::mem::swap(&mut self.line, &mut self.partial);
            return Ok(false);
        }
        self.offset += self.line.len() as u64;
        if self.line.last() == Some(&b'\n') {
            self.line.pop();
        }
        Ok(true)
    }

    /// The next event or warning; `None` at the end of the file.
    pub fn next_item(&mut self) -> Result<Option<Item>> {
        loop {
            if !self.read_line()? {
                return Ok(None);
            }
            match self.records.read_line(&self.line)? {
                LineRead::Event(ev) => return Ok(Some(Item::Event(ev))),
                LineRead::Warning(w) => return Ok(Some(Item::Warning(w))),
                LineRead::Header(_) | LineRead::Blank => {}
            }
        }
    }
}

fn record_to_event(v: &Value, rec: &mut Recorder) -> std::result::Result<Option<Event>, String> {
    let at = Duration::from_micros(
        v.get("t_us")
            .and_then(Value::as_u64)
            .ok_or("record without a numeric t_us")?,
    );
    let dir = v.get("dir").and_then(Value::as_str).ok_or("record without dir")?;
    let raw_line = || -> std::result::Result<RawLine, String> {
        let bytes = if let Some(s) = v.get("raw").and_then(Value::as_str) {
            s.as_bytes().to_vec()
        } else if let Some(b) = v.get("raw_b64").and_then(Value::as_str) {
            B64.decode(b).map_err(|e| format!("bad raw_b64: {e}"))?
        } else {
            return Err("record without raw or raw_b64".into());
        };
        let ending = v
            .get("eol")
            .and_then(Value::as_str)
            .and_then(LineEnding::parse)
            .unwrap_or(LineEnding::Lf);
        Ok(RawLine { bytes, ending })
    };
    let ev = match dir {
        "out" | "in" => {
            let direction = if dir == "out" { Direction::Out } else { Direction::In };
            Event::Frame(rec.frame_at(direction, raw_line()?, at, None))
        }
        "stderr" => Event::Stderr(rec.stderr_at(raw_line()?, at)),
        "meta" => {
            let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
            let id = || v.get("id").and_then(RequestId::from_json);
            match v.get("event").and_then(Value::as_str).unwrap_or_default() {
                "spawned" => Event::Spawned {
                    at,
                    pid: v.get("pid").and_then(Value::as_u64).unwrap_or(0) as u32,
                    program: PathBuf::from(s("program")),
                    command_line: s("command_line"),
                },
                "spawn_failed" => Event::SpawnFailed {
                    at,
                    error: SpawnError {
                        program: s("program"),
                        resolved: v.get("resolved").and_then(Value::as_str).map(PathBuf::from),
                        message: s("message"),
                    },
                },
                "timed_out" => {
                    let id = id().ok_or("timed_out without id")?;
                    rec.replay_timeout(&id);
                    Event::TimedOut {
                        at,
                        timed_out: TimedOut {
                            id,
                            request_seq: v.get("request_seq").and_then(Value::as_u64).unwrap_or(0),
                            method: s("method"),
                            waited: Duration::from_micros(v.get("waited_us").and_then(Value::as_u64).unwrap_or(0)),
                        },
                    }
                }
                "cancelled" => {
                    let id = id().ok_or("cancelled without id")?;
                    rec.cancel(&id);
                    Event::Cancelled { at, id }
                }
                "write_failed" => Event::WriteFailed {
                    at,
                    error: s("error"),
                    line: s("line").into_bytes(),
                },
                "note" => Event::Note { at, text: s("text") },
                "http" => {
                    let pairs = |k: &str| -> Vec<(String, String)> {
                        v.get(k)
                            .and_then(Value::as_array)
                            .map(|a| {
                                a.iter()
                                    .filter_map(|p| {
                                        Some((p.get(0)?.as_str()?.to_owned(), p.get(1)?.as_str()?.to_owned()))
                                    })
                                    .collect()
                            })
                            .unwrap_or_default()
                    };
                    Event::Http(HttpInfo {
                        at,
                        method: s("method"),
                        url: s("url"),
                        status: v.get("status").and_then(Value::as_u64).map(|c| c as u16),
                        sent: pairs("sent"),
                        received: pairs("received"),
                        request_id: v.get("request_id").and_then(RequestId::from_json),
                        text: s("text"),
                        error: v.get("error").and_then(Value::as_str).map(str::to_owned),
                    })
                }
                "exited" => Event::Exited {
                    at,
                    status: ExitInfo {
                        code: v.get("code").and_then(Value::as_i64).map(|c| c as i32),
                        signal: v.get("signal").and_then(Value::as_i64).map(|c| c as i32),
                    },
                },
                "closed" => Event::Closed { at },
                other => return Err(format!("unknown meta event {other:?}")),
            }
        }
        other => return Err(format!("unknown dir {other:?}")),
    };
    Ok(Some(ev))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::classify::{Anomalies, Kind};
    use std::time::Instant;

    #[test]
    fn round_trip_keeps_bytes_and_recomputes_links() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        let spec = ServerSpec::new("server", ["--flag"]);
        let mut rec = Recorder::new(Limits::default(), Instant::now());
        let mut w = Writer::create(&path, &Header::for_spec(&spec, "session")).unwrap();
        let lines: Vec<(Direction, RawLine)> = vec![
            (
                Direction::Out,
                RawLine {
                    bytes: br#"{"jsonrpc":"2.0","id":1,"method":"initialize"}"#.to_vec(),
                    ending: LineEnding::Lf,
                },
            ),
            (
                Direction::In,
                RawLine {
                    bytes: b"Server started \xff".to_vec(),
                    ending: LineEnding::Lf,
                },
            ),
            (
                Direction::In,
                RawLine {
                    bytes: br#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_vec(),
                    ending: LineEnding::CrLf,
                },
            ),
            (
                Direction::In,
                RawLine {
                    bytes: br#"{"jsonrpc":"2.0","id":"#.to_vec(),
                    ending: LineEnding::Eof,
                },
            ),
        ];
        let mut written = Vec::new();
        for (i, (d, l)) in lines.into_iter().enumerate() {
            let f = rec.frame_at(d, l, Duration::from_millis(i as u64 * 10), None);
            let ev = Event::Frame(f);
            w.write(&ev).unwrap();
            written.push(ev);
        }
        let st = rec.stderr_at(
            RawLine {
                bytes: b"log: \"quoted\"".to_vec(),
                ending: LineEnding::Lf,
            },
            Duration::from_millis(45),
        );
        w.write(&Event::Stderr(st)).unwrap();
        w.write(&Event::Exited {
            at: Duration::from_millis(50),
            status: ExitInfo {
                code: None,
                signal: Some(15),
            },
        })
        .unwrap();
        w.flush().unwrap();

        let loaded = load(&path).unwrap();
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        assert_eq!(loaded.header.command_line, "server --flag");
        assert_eq!(loaded.events.len(), 6);
        for (a, b) in written.iter().zip(&loaded.events) {
            assert_eq!(a, b);
        }
        let Event::Frame(resp) = &loaded.events[2] else {
            panic!()
        };
        assert_eq!(resp.link.as_ref().unwrap().latency, Duration::from_millis(20));
        assert!(resp.anomalies().contains(Anomalies::CRLF));
        let Event::Frame(log) = &loaded.events[1] else { panic!() };
        assert_eq!(log.raw, b"Server started \xff");
        assert_eq!(log.kind(), Kind::NotJson);
        let Event::Stderr(s) = &loaded.events[4] else { panic!() };
        assert_eq!(s.raw, b"log: \"quoted\"");
        assert!(matches!(
            loaded.events[5],
            Event::Exited {
                status: ExitInfo { signal: Some(15), .. },
                ..
            }
        ));
    }

    #[test]
    fn truncated_last_line_is_a_warning_not_a_failure() {
        let text = format!(
            "{}\n{}\n{}",
            json!({"format": FORMAT, "version": 1}),
            r#"{"t_us":5,"seq":0,"dir":"in","raw":"{}","eol":"lf"}"#,
            r#"{"t_us":9,"seq":1,"dir":"in","ra"#
        );
        let loaded = load_from(text.as_bytes()).unwrap();
        assert_eq!(loaded.events.len(), 1);
        assert_eq!(loaded.warnings.len(), 1);
        assert!(loaded.warnings[0].starts_with("line 3:"), "{:?}", loaded.warnings);
    }

    #[test]
    fn not_a_capture_is_a_clear_error() {
        let e = load_from(&b"{\"hello\":1}\n"[..]).unwrap_err();
        assert!(e.to_string().contains("not an mcpscope capture header"), "{e}");
        let e = load_from(&b""[..]).unwrap_err();
        assert!(e.to_string().contains("empty"), "{e}");
    }

    #[test]
    fn a_follower_waits_for_a_line_being_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.jsonl");
        let header = json!({"format": FORMAT, "version": 1}).to_string();
        let first = r#"{"t_us":5,"seq":0,"dir":"in","raw":"{}","eol":"lf"}"#;
        let second = r#"{"t_us":9,"seq":1,"dir":"out","raw":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}","eol":"lf"}"#;
        let (head, tail) = second.split_at(20);
        std::fs::write(&path, format!("{header}\n{first}\n{head}")).unwrap();
        let mut r = EventReader::new(BufReader::new(File::open(&path).unwrap())).unwrap();
        r.following(true);
        assert!(matches!(r.next_item().unwrap(), Some(Item::Event(Event::Frame(_)))));
        assert!(r.next_item().unwrap().is_none(), "half a line is not read yet");
        let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(format!("{tail}\n").as_bytes()).unwrap();
        let Some(Item::Event(Event::Frame(ping))) = r.next_item().unwrap() else {
            panic!("the finished line is read")
        };
        assert_eq!(ping.class.method.as_deref(), Some("ping"));
        assert_eq!(r.offset(), std::fs::metadata(&path).unwrap().len());
        // Not following: a line cut short is read (and reported) for what it is.
        f.write_all(b"{\"t_us\":12,\"se").unwrap();
        assert!(r.next_item().unwrap().is_none());
        r.following(false);
        assert!(matches!(r.next_item().unwrap(), Some(Item::Warning(w)) if w.starts_with("line 4:")));
    }

    #[test]
    fn records_with_odd_fields_take_the_general_path() {
        let text = format!(
            "{}\n{}\n{}\n{}\n",
            json!({"format": FORMAT, "version": 1}),
            r#"{"t_us":"5","dir":"in","raw":"{}"}"#,
            r#"{"t_us":6,"seq":0,"dir":"in","raw_b64":"e30=","eol":"crlf"}"#,
            r#"{"t_us":7,"dir":"sideways","raw":"{}"}"#,
        );
        let loaded = load_from(text.as_bytes()).unwrap();
        assert_eq!(loaded.warnings.len(), 2, "{:?}", loaded.warnings);
        assert!(loaded.warnings[0].contains("numeric t_us"), "{:?}", loaded.warnings);
        assert!(loaded.warnings[1].contains("unknown dir"), "{:?}", loaded.warnings);
        let Event::Frame(f) = &loaded.events[0] else { panic!() };
        assert_eq!((f.raw.as_slice(), f.ending), (&b"{}"[..], LineEnding::CrLf));
    }
}
