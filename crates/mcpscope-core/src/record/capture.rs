//! The JSONL capture file: every event, appended as it happens.
//!
//! One JSON object per line. The first line is a header; every other line is a
//! record with `t_us` (microseconds since the session started) and `dir`
//! (`out`, `in`, `stderr` or `meta`). Frames and stderr lines keep their exact
//! bytes: `raw` as a string when the line is UTF-8, `raw_b64` otherwise, plus
//! `eol` (`lf`, `crlf` or `eof`). Classification fields (`kind`, `id`,
//! `method`, `anomalies`, `latency_us`) are written for readers such as `jq`;
//! loading recomputes them from the raw bytes so old captures gain new checks.
//!
//! A capture file is appended to, never truncated: every session starts with
//! its own header line, which is the boundary between sessions. Loading
//! keeps the sessions apart ([`Loaded::sessions`]): times go on from one to
//! the next, and ids are matched within a session only.

use crate::protocol::auth::Step;
use crate::protocol::auth::jwt::DecodedJwt;
pub use crate::record::capture_error::{BadRecord, CaptureError, ReadError};
use crate::transport::event::{AppMessage, AppToward, AuthExchange, Event, HttpInfo, Touch, TouchKind};
use crate::transport::process::{ExitInfo, ServerSpec, SpawnError};
use crate::transport::recorder::Recorder;
use crate::wire::classify::Limits;
use crate::wire::correlation::TimedOut;
use crate::wire::frame::{Direction, Frame};
use crate::wire::framing::{LineEnding, RawLine};
use crate::wire::message::RequestId;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Value, json};
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub const FORMAT: &str = "mcpscope-capture";
pub const VERSION: u64 = 1;

/// Every note about a capture that could not be written starts with this, so
/// whoever runs a session (the CLI) can tell the user and fail.
pub use crate::transport::event_log::FAILED;

/// Longest record the loader reads into memory. The writer never produces a
/// longer one for lines within [`Limits::max_held_line_bytes`] (JSON string
/// escaping can make a record up to six times its line); anything longer is
/// skipped with a warning instead of exhausting memory.
const MAX_RECORD_BYTES: usize = 8 * crate::wire::classify::DEFAULT_MAX_HELD_LINE_BYTES + 64 * 1024;

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
                url: Some(crate::transport::target::mask_url(&h.url)),
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

/// Opens `path` for appending by the one rule for output files
/// ([`crate::record::output_file`]): created `0600` when missing, an
/// existing file keeping its mode and contents, a device written into,
/// another user's planted link and a FIFO refused without blocking.
fn open_append(path: &Path) -> io::Result<File> {
    crate::record::output_file::open_append(path).map_err(crate::record::output_file::OutputFileError::into_io)
}

/// Checks that a capture can be opened for appending at `path` (creating it
/// `0600` if needed), so a command can refuse to start instead of running a
/// session nobody can look at later.
pub fn check_writable(path: &Path) -> Result<(), CaptureError> {
    open_append(path).map(drop).map_err(CaptureError::write(path))
}

impl crate::transport::event_log::EventLog for Writer {
    fn write(&mut self, event: &Event) -> io::Result<()> {
        Writer::write(self, event)
    }

    fn flush(&mut self) -> io::Result<()> {
        Writer::flush(self)
    }

    fn path(&self) -> &Path {
        Writer::path(self)
    }
}

/// The session's default way to open its capture (see `SessionOptions::open_log`).
pub fn open_log(
    path: &Path,
    target: &crate::transport::target::Target,
) -> Result<Box<dyn crate::transport::event_log::EventLog>, crate::transport::event_log::OpenLogError> {
    Ok(Box::new(Writer::open(path, &Header::for_target(target, "session"))?))
}

impl Default for crate::transport::session::SessionOptions {
    fn default() -> Self {
        Self {
            limits: crate::wire::classify::Limits::default(),
            request_timeout: Some(std::time::Duration::from_secs(30)),
            cancel_on_timeout: true,
            capture: None,
            stdin_close_grace: std::time::Duration::from_secs(2),
            term_grace: std::time::Duration::from_secs(2),
            event_capacity: 64 * 1024,
            waker: None,
            open_log,
            tap: None,
        }
    }
}

impl Writer {
    /// Opens a capture for appending and writes this session's header (the
    /// boundary from any session already in the file).
    pub fn open(path: &Path, header: &Header) -> Result<Self, CaptureError> {
        let file = open_append(path).map_err(|source| CaptureError::Create {
            path: path.to_owned(),
            source,
        })?;
        Self::with_file(file, path, header)
    }

    /// Starts a capture in a file the caller opened (e.g. a private one in the
    /// state directory); `path` names it in messages.
    pub fn with_file(file: File, path: &Path, header: &Header) -> Result<Self, CaptureError> {
        let mut w = Self {
            out: BufWriter::with_capacity(256 * 1024, file),
            path: path.to_owned(),
        };
        serde_json::to_writer(&mut w.out, &header.to_json())
            .map_err(io::Error::from)
            .and_then(|_| w.out.write_all(b"\n"))
            .and_then(|_| w.out.flush())
            .map_err(CaptureError::write(path))?;
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

/// A session event's capture record (without `t_us` and `dir`).
pub fn meta_json(e: &Event) -> Value {
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
        Event::Auth(a) => auth_json(a),
        Event::Touch(t) => {
            let mut v = json!({
                "event": "touch",
                "kind": t.kind.as_str(),
                "toward": t.direction.as_str(),
                "of_seq": t.of_seq,
                "rule": t.rule,
                "text": t.text,
            });
            if let Some(sent) = &t.sent {
                let o = v.as_object_mut().expect("an object");
                match std::str::from_utf8(sent) {
                    Ok(s) => o.insert("sent".into(), s.into()),
                    Err(_) => o.insert("sent_b64".into(), B64.encode(sent).into()),
                };
            }
            v
        }
        Event::App(a) => {
            let mut v = json!({
                "event": "app",
                "app": a.app,
                "toward": a.toward.as_str(),
                "note": a.note,
            });
            let o = v.as_object_mut().expect("an object");
            match std::str::from_utf8(&a.bytes) {
                Ok(s) => o.insert("message".into(), s.into()),
                Err(_) => o.insert("message_b64".into(), B64.encode(&a.bytes).into()),
            };
            v
        }
        Event::Exited { status, .. } => json!({"event": "exited", "code": status.code, "signal": status.signal}),
        Event::Closed { .. } => json!({"event": "closed"}),
        Event::Frame(_) | Event::Stderr(_) => unreachable!("written by their own writers"),
    }
}

pub fn app_from_json(v: &Value, at: Duration) -> Result<AppMessage, BadRecord> {
    let s = |k: &str| v.get(k).and_then(Value::as_str);
    let toward = s("toward")
        .and_then(AppToward::parse)
        .ok_or("app record without toward (host, view, sandbox or from-sandbox)")?;
    let bytes = if let Some(text) = s("message") {
        text.as_bytes().to_vec()
    } else if let Some(b) = s("message_b64") {
        B64.decode(b).map_err(|e| format!("bad message_b64: {e}"))?
    } else {
        return Err("app record without message".into());
    };
    let mut a = AppMessage::new(s("app").ok_or("app record without app")?, toward, bytes);
    a.at = at;
    a.note = s("note").map(str::to_owned);
    Ok(a)
}

pub fn touch_from_json(v: &Value, at: Duration) -> Result<Touch, BadRecord> {
    let s = |k: &str| v.get(k).and_then(Value::as_str);
    let kind = s("kind")
        .and_then(TouchKind::parse)
        .ok_or("touch without a known kind")?;
    let direction = match s("toward") {
        Some("out") => Direction::Out,
        Some("in") => Direction::In,
        _ => return Err("touch without toward (out or in)".into()),
    };
    let sent = if let Some(text) = s("sent") {
        Some(text.as_bytes().to_vec())
    } else if let Some(b) = s("sent_b64") {
        Some(B64.decode(b).map_err(|e| format!("bad sent_b64: {e}"))?)
    } else {
        None
    };
    Ok(Touch {
        at,
        kind,
        direction,
        of_seq: v.get("of_seq").and_then(Value::as_u64),
        rule: s("rule").map(str::to_owned),
        sent,
        text: s("text").unwrap_or_default().to_owned(),
    })
}

/// A step of an authorization as its capture record (`"event": "auth"`).
/// Everything in it is already masked ([`AuthExchange`]).
pub fn auth_json(a: &AuthExchange) -> Value {
    let pairs = |hs: &[(String, String)]| -> Vec<Value> { hs.iter().map(|(k, v)| json!([k, v])).collect() };
    json!({
        "event": "auth",
        "step": a.step.as_str(),
        "method": a.method,
        "url": a.url,
        "status": a.status,
        "sent": pairs(&a.sent),
        "request_body": a.request_body,
        "received": pairs(&a.received),
        "response_body": a.response_body,
        "jwts": a.jwts.iter().map(DecodedJwt::to_json).collect::<Vec<_>>(),
        "elapsed_us": a.elapsed.as_micros() as u64,
        "text": a.text,
        "notes": a.notes,
        "error": a.error,
    })
}

/// Reads back what [`auth_json`] wrote (the time comes from elsewhere).
pub fn auth_from_json(v: &Value, at: Duration) -> Result<AuthExchange, BadRecord> {
    let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
    let step = v
        .get("step")
        .and_then(Value::as_str)
        .and_then(Step::parse)
        .ok_or("auth record without a known step")?;
    let opt = |k: &str| v.get(k).filter(|x| !x.is_null()).cloned();
    Ok(AuthExchange {
        at,
        step,
        method: s("method"),
        url: s("url"),
        status: v.get("status").and_then(Value::as_u64).map(|c| c as u16),
        sent: header_pairs(v, "sent"),
        request_body: opt("request_body"),
        received: header_pairs(v, "received"),
        response_body: opt("response_body"),
        jwts: v
            .get("jwts")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(DecodedJwt::from_json).collect())
            .unwrap_or_default(),
        elapsed: Duration::from_micros(v.get("elapsed_us").and_then(Value::as_u64).unwrap_or(0)),
        text: s("text"),
        notes: v
            .get("notes")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect())
            .unwrap_or_default(),
        error: v.get("error").and_then(Value::as_str).map(str::to_owned),
    })
}

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

fn load_with_limit(reader: impl BufRead, max_record: usize) -> Result<Loaded, ReadError> {
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

fn record_to_event(v: &Value, rec: &mut Recorder, offset: Duration) -> Result<Option<Event>, BadRecord> {
    let at = offset
        + Duration::from_micros(
            v.get("t_us")
                .and_then(Value::as_u64)
                .ok_or("record without a numeric t_us")?,
        );
    let dir = v.get("dir").and_then(Value::as_str).ok_or("record without dir")?;
    let raw_line = || -> Result<RawLine, BadRecord> {
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
                    let pairs = |k: &str| header_pairs(v, k);
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
                "auth" => Event::Auth(Box::new(auth_from_json(v, at)?)),
                "app" => Event::App(Box::new(app_from_json(v, at)?)),
                "touch" => {
                    let mut t = touch_from_json(v, at)?;
                    t.of_seq = t.of_seq.map(|s| rec.renumbered(s));
                    Event::Touch(Box::new(t))
                }
                "exited" => Event::Exited {
                    at,
                    status: ExitInfo {
                        code: v.get("code").and_then(Value::as_i64).map(|c| c as i32),
                        signal: v.get("signal").and_then(Value::as_i64).map(|c| c as i32),
                    },
                },
                "closed" => Event::Closed { at },
                other => return Err(format!("unknown meta event {other:?}").into()),
            }
        }
        other => return Err(format!("unknown dir {other:?}").into()),
    };
    Ok(Some(ev))
}

/// `[[name, value], …]` under `key`, as the http and auth records write headers.
fn header_pairs(v: &Value, key: &str) -> Vec<(String, String)> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|p| Some((p.get(0)?.as_str()?.to_owned(), p.get(1)?.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
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
        let mut w = Writer::open(&path, &Header::for_spec(&spec, "session")).unwrap();
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
    fn auth_exchanges_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.jsonl");
        let mut w = Writer::open(&path, &Header::default()).unwrap();
        let jwt = crate::protocol::auth::jwt::DecodedJwt {
            field: "access_token".into(),
            header: json!({"alg": "RS256"}),
            claims: json!({"sub": "u", "exp": 5}),
            signature_len: 256,
            notes: vec!["signature not verified".into()],
        };
        let events = vec![
            Event::Auth(Box::new(AuthExchange {
                at: Duration::from_millis(3),
                method: "POST".into(),
                url: "http://as/token".into(),
                status: Some(200),
                sent: vec![("Authorization".into(), "Basic ****".into())],
                request_body: Some(json!({"grant_type": "authorization_code", "code": "****"})),
                received: vec![("content-type".into(), "application/json".into())],
                response_body: Some(json!({"access_token": "****", "token_type": "Bearer"})),
                jwts: vec![jwt],
                elapsed: Duration::from_micros(1500),
                notes: vec!["Bearer token issued".into()],
                ..AuthExchange::new(Step::Token, "exchange the code for a token")
            })),
            Event::Auth(Box::new(AuthExchange {
                at: Duration::from_millis(4),
                error: Some("the token request was refused (HTTP 400): invalid_grant".into()),
                ..AuthExchange::new(Step::Failed, "")
            })),
        ];
        for e in &events {
            w.write(e).unwrap();
        }
        w.flush().unwrap();
        let loaded = load(&path).unwrap();
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        assert_eq!(loaded.events, events);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains("\"event\":\"auth\"") && text.contains("\"step\":\"token\""),
            "{text}"
        );
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
        assert!(
            e.to_string().contains("not an mcpscope capture") && e.to_string().contains("not a capture header"),
            "{e}"
        );
        let e = load_from(&b""[..]).unwrap_err();
        assert!(e.to_string().contains("empty"), "{e}");
        // Random bytes are not "empty": they are not a capture.
        let noise: Vec<u8> = (0u32..100_000)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let e = load_from(&noise[..]).unwrap_err().to_string();
        assert!(e.contains("not an mcpscope capture") && e.contains("binary"), "{e}");
        let e = load_from(&b"hello world\n"[..]).unwrap_err().to_string();
        assert!(e.contains("line 1 is not JSON"), "{e}");
    }

    fn frame(rec: &mut Recorder, d: Direction, text: &str, ms: u64) -> Event {
        let line = RawLine {
            bytes: text.as_bytes().to_vec(),
            ending: LineEnding::Lf,
        };
        Event::Frame(rec.frame_at(d, line, Duration::from_millis(ms), None))
    }

    #[test]
    fn a_second_session_is_appended_after_a_boundary_and_loaded_apart() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        for (n, server) in ["first", "second"].iter().enumerate() {
            let mut header = Header::for_spec(&ServerSpec::new(*server, Vec::<String>::new()), "proxy");
            header.started_unix_ms = 1_000_000 + n as u64 * 5;
            let mut rec = Recorder::new(Limits::default(), Instant::now());
            let mut w = Writer::open(&path, &header).unwrap();
            w.write(&frame(
                &mut rec,
                Direction::Out,
                r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
                1,
            ))
            .unwrap();
            w.write(&frame(
                &mut rec,
                Direction::In,
                r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
                30,
            ))
            .unwrap();
            w.flush().unwrap();
        }
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let loaded = load(&path).unwrap();
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        assert_eq!(loaded.sessions.len(), 2);
        assert_eq!(loaded.sessions[0].header.command_line, "first");
        assert_eq!(loaded.sessions[1].header.command_line, "second");
        assert_eq!(loaded.session_events(0).len(), 2);
        let second = loaded.session_events(1);
        assert_eq!(second.len(), 3);
        let Event::Note { text, .. } = &second[0] else {
            panic!("{second:?}")
        };
        assert!(text.contains("session 2") && text.contains("second"), "{text}");
        // Ids are matched within each session: the reused id 1 is no anomaly.
        for ev in &loaded.events {
            if let Event::Frame(f) = ev {
                assert!(f.anomalies().is_empty(), "{f:?}");
            }
        }
        let Event::Frame(answer) = &second[2] else { panic!() };
        assert_eq!(answer.link.as_ref().unwrap().latency, Duration::from_millis(29));
        // Times go on from one session to the next.
        let times: Vec<Duration> = loaded.events.iter().map(Event::at).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    }

    #[test]
    fn an_overlong_record_is_skipped_without_holding_it() {
        let long = format!(r#"{{"t_us":1,"dir":"in","raw":"{}","eol":"lf"}}"#, "x".repeat(500));
        let text = format!(
            "{}\n{long}\n{}\n",
            json!({"format": FORMAT, "version": 1}),
            r#"{"t_us":2,"seq":1,"dir":"in","raw":"{}","eol":"lf"}"#
        );
        let loaded = load_with_limit(text.as_bytes(), 200).unwrap();
        assert_eq!(loaded.events.len(), 1);
        assert!(
            loaded.warnings[0].contains("line 2: longer than 200 bytes"),
            "{:?}",
            loaded.warnings
        );
    }

    #[test]
    fn a_capture_that_cannot_be_written_says_so() {
        let e = crate::text::error_chain(&check_writable(Path::new("/nonexistent/x.jsonl")).unwrap_err());
        assert!(e.contains("/nonexistent/x.jsonl"), "{e}");
        let e = crate::text::error_chain(&Writer::open(Path::new("/dev/full"), &Header::default()).err().unwrap());
        assert!(e.contains("No space left"), "{e}");
    }

    #[test]
    fn a_follower_waits_for_a_line_being_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.jsonl");
        let header = json!({"format": FORMAT, "version": 1}).to_string();
        let first = r#"{"t_us":5,"seq":0,"dir":"in","raw":"{}","eol":"lf"}"#;
        let second =
            r#"{"t_us":9,"seq":1,"dir":"out","raw":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}","eol":"lf"}"#;
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
