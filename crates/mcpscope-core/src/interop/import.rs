//! Other tools' captures read into mcpscope's: mcpsnoop's JSONL sessions,
//! mcp-recorder cassettes, the official Inspector's JSON export, and HAR
//! (mcpscope's own, devtools', mitmproxy's). What each keeps becomes
//! frames, stderr lines and a header; what it lacks is said. No I/O here:
//! text in (read as it comes, one entry at a time: a file's parsed JSON
//! would take many times its size), an [`Imported`] out
//! ([`crate::interop::import_file`] writes it).

use crate::record::capture::Header;
use crate::wire::frame::Direction;
use serde::de::{DeserializeSeed, Deserializer as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::io::BufRead;

/// A capture format mcpscope can read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Mcpsnoop,
    McpRecorder,
    Inspector,
    Har,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Mcpsnoop => "mcpsnoop session (JSONL)",
            Format::McpRecorder => "mcp-recorder cassette",
            Format::Inspector => "MCP Inspector export",
            Format::Har => "HAR",
        }
    }
}

/// Why a file cannot be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error(
        "not a format mcpscope imports (an mcpsnoop session, an mcp-recorder cassette, an MCP Inspector export or a HAR)"
    )]
    Unknown,
    #[error("it looks like {} but is not JSON: {error}", .format.name())]
    NotJson { format: Format, error: serde_json::Error },
    #[error("{} {why}", .format.name())]
    Malformed { format: Format, why: String },
    /// A number that places a message in time cannot be a time: not a
    /// number, negative, or so large the message would land past the year
    /// 9999 (or wrap around to before its request).
    #[error(
        "{} entry {entry} ({field}): {value} is out of range: a time must be a finite number of milliseconds, \
         0 or more, that keeps the message before the year 10000; nothing was imported",
        .format.name()
    )]
    OutOfRange {
        format: Format,
        /// The entry's index in the file (0-based, as `field` says).
        entry: usize,
        /// Where the number is, e.g. `log.entries[3].timings.wait`.
        field: String,
        /// The number (or whatever stood there) as the file has it.
        value: String,
    },
    #[error("cannot read it")]
    Read(#[source] std::io::Error),
}

/// One thing that went over the wire (or to stderr), at a moment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Message<'a> {
    /// Milliseconds since the Unix epoch.
    pub unix_ms: u64,
    pub direction: Direction,
    pub bytes: &'a [u8],
    /// A line the server wrote to stderr.
    pub stderr: bool,
}

/// Where one message lies in [`Messages::bytes`].
#[derive(Clone, Copy, Debug)]
struct Slot {
    unix_ms: u64,
    start: u64,
    len: u32,
    direction: Direction,
    stderr: bool,
}

/// A session's messages, their bytes one after another in a single buffer:
/// a million small messages cost their bytes and 24 bytes each, not an
/// allocation each.
#[derive(Debug, Default)]
pub struct Messages {
    bytes: Vec<u8>,
    slots: Vec<Slot>,
}

impl Messages {
    fn push_with(
        &mut self,
        unix_ms: u64,
        direction: Direction,
        stderr: bool,
        write: impl FnOnce(&mut Vec<u8>),
    ) -> Result<(), ImportError> {
        let start = self.bytes.len();
        write(&mut self.bytes);
        let len = u32::try_from(self.bytes.len() - start).map_err(|_| {
            ImportError::Read(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "a message of 4 GiB or more",
            ))
        })?;
        self.slots.push(Slot {
            unix_ms,
            start: start as u64,
            len,
            direction,
            stderr,
        });
        Ok(())
    }

    fn push(&mut self, unix_ms: u64, direction: Direction, bytes: &[u8], stderr: bool) -> Result<(), ImportError> {
        self.push_with(unix_ms, direction, stderr, |b| b.extend_from_slice(bytes))
    }

    /// A JSON value as its compact text (a string as its content).
    fn push_json(&mut self, unix_ms: u64, direction: Direction, v: &Value) -> Result<(), ImportError> {
        match v {
            Value::String(s) => self.push(unix_ms, direction, s.as_bytes(), false),
            other => self.push_with(unix_ms, direction, false, |b| {
                // Writing a Value into a Vec cannot fail.
                let _ = serde_json::to_writer(b, other);
            }),
        }
    }

    /// In time order; messages of the same millisecond keep the file's order.
    fn sort_by_time(&mut self) {
        self.slots.sort_by_key(|s| s.unix_ms);
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    pub fn first_ms(&self) -> Option<u64> {
        self.slots.first().map(|s| s.unix_ms)
    }

    pub fn last_ms(&self) -> Option<u64> {
        self.slots.last().map(|s| s.unix_ms)
    }

    pub fn iter(&self) -> impl Iterator<Item = Message<'_>> {
        self.slots.iter().map(|s| Message {
            unix_ms: s.unix_ms,
            direction: s.direction,
            bytes: &self.bytes[s.start as usize..s.start as usize + s.len as usize],
            stderr: s.stderr,
        })
    }
}

/// One session read from the file.
#[derive(Debug, Default)]
pub struct Session {
    pub header: Header,
    pub messages: Messages,
}

/// What a file held.
#[derive(Debug)]
pub struct Imported {
    pub format: Format,
    pub sessions: Vec<Session>,
    /// What the format does not keep, or what of this file was left out.
    pub notes: Vec<String>,
}

/// The last moment an import places a message at: 9999-12-31T23:59:59.999Z,
/// the last an RFC 3339 time can say. Bounding every imported time by it
/// keeps all of a capture's arithmetic (microseconds since the start) in range.
pub const MAX_UNIX_MS: u64 = 253_402_300_799_999;

/// Where an imported number sits, for the error that names it.
struct At<'a> {
    format: Format,
    entry: usize,
    field: &'a dyn Fn() -> String,
}

impl At<'_> {
    fn out_of_range(&self, v: &Value) -> ImportError {
        let mut value = v.to_string();
        if value.len() > 60 {
            value = crate::text::shorten(&value, 60);
        }
        ImportError::OutOfRange {
            format: self.format,
            entry: self.entry,
            field: (self.field)(),
            value,
        }
    }

    /// `from` moved by the milliseconds `v` says (absent or null: not
    /// moved). Every time an import computes from a number in the file goes
    /// through here: NaN, a string, a negative or huge number, or a sum past
    /// [`MAX_UNIX_MS`] is an error naming the entry and field, never a
    /// wrapped or saturated time that puts an answer before its request.
    fn later(&self, from: u64, v: Option<&Value>) -> Result<u64, ImportError> {
        let ms = match v {
            None | Some(Value::Null) => return Ok(from),
            Some(Value::Number(n)) => n.as_f64().filter(|f| f.is_finite() && *f >= 0.0),
            Some(_) => None,
        };
        ms.filter(|f| *f <= MAX_UNIX_MS as f64)
            // In range, so the cast neither saturates nor wraps (fractions of a millisecond are dropped).
            .and_then(|f| from.checked_add(f as u64))
            .filter(|t| *t <= MAX_UNIX_MS)
            .ok_or_else(|| self.out_of_range(v.unwrap_or(&Value::Null)))
    }
}

/// The format of a file, from its text: its head first, and for an object
/// whose telling member comes late, its top-level members (read without
/// keeping their values).
pub fn detect(text: &str) -> Option<Format> {
    detect_head(text).or_else(|| format_of_members(text.trim_start_matches('\u{feff}').as_bytes()))
}

/// The format as the first part of a file tells it; `None` when it does not.
pub fn detect_head(text: &str) -> Option<Format> {
    let t = text.trim_start_matches('\u{feff}').trim_start();
    if t.starts_with('[') {
        // The Inspector writes a pretty array of entries with a `direction`.
        return Some(Format::Inspector);
    }
    if !t.starts_with('{') {
        return None;
    }
    let first_line = t.lines().next().unwrap_or_default();
    if let Ok(v) = serde_json::from_str::<Value>(first_line)
        && v.get("direction").is_some()
        && (v.get("session_id").is_some() || v.get("seq").is_some())
    {
        return Some(Format::Mcpsnoop);
    }
    let head: String = t.chars().take(4096).collect();
    if head.contains("\"log\"") && (head.contains("\"entries\"") || head.contains("\"creator\"")) {
        return Some(Format::Har);
    }
    if head.contains("\"interactions\"") || head.contains("\"recorded_at\"") {
        return Some(Format::McpRecorder);
    }
    None
}

/// A whole JSON object's format from the names of its members (their
/// values are skipped, not kept); `None` for anything else.
pub fn format_of_members(reader: impl std::io::Read) -> Option<Format> {
    struct Keys;
    impl<'de> Visitor<'de> for Keys {
        type Value = (bool, bool);
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(bool, bool), A::Error> {
            let (mut log, mut interactions) = (false, false);
            while let Some(key) = map.next_key::<String>()? {
                log |= key == "log";
                interactions |= key == "interactions";
                map.next_value::<IgnoredAny>()?;
            }
            Ok((log, interactions))
        }
    }
    let mut de = serde_json::Deserializer::from_reader(reader);
    let (log, interactions) = de.deserialize_map(Keys).ok()?;
    de.end().ok()?;
    if log {
        Some(Format::Har)
    } else if interactions {
        Some(Format::McpRecorder)
    } else {
        None
    }
}

/// Reads `text` as `format`, one entry at a time. A leading byte order mark
/// is the caller's to skip.
pub fn parse(format: Format, text: impl BufRead) -> Result<Imported, ImportError> {
    match format {
        Format::Mcpsnoop => mcpsnoop(text),
        Format::McpRecorder => recorder(text),
        Format::Inspector => inspector(text),
        Format::Har => har(text),
    }
}

/// What reading JSON came to: the error a visitor kept when it stopped
/// (`stopped`), else serde's.
fn settle<T>(
    format: Format,
    read: Result<T, serde_json::Error>,
    stopped: Option<ImportError>,
) -> Result<T, ImportError> {
    match (read, stopped) {
        (_, Some(e)) => Err(e),
        (Ok(v), None) => Ok(v),
        (Err(e), None) if e.is_io() => Err(ImportError::Read(e.into())),
        (Err(e), None) => Err(ImportError::NotJson { format, error: e }),
    }
}

/// A visitor's answer to a value of a type it does not read: the value is
/// skipped and `$none` returned (so the caller can say what was missing).
macro_rules! skip_other_types {
    ($none:expr) => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok($none)
        }
    };
}

/// The elements of a JSON array, each handed to `each` as it is read (with
/// its index); `false` when the value is not an array (read and skipped).
struct EachElement<'s, F> {
    each: F,
    stopped: &'s mut Option<ImportError>,
}

/// What a visitor returns to stop serde after `each` failed (the kept error is said).
fn stop<E: serde::de::Error>(stopped: &mut Option<ImportError>, e: ImportError) -> E {
    *stopped = Some(e);
    E::custom("stopped")
}

impl<'de, F: FnMut(usize, Value) -> Result<(), ImportError>> Visitor<'de> for EachElement<'_, F> {
    type Value = bool;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array")
    }
    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<bool, A::Error> {
        let mut i = 0;
        while let Some(v) = seq.next_element::<Value>()? {
            if let Err(e) = (self.each)(i, v) {
                return Err(stop(self.stopped, e));
            }
            i += 1;
        }
        Ok(true)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(false)
    }
    skip_other_types!(false);
}

impl<'de, F: FnMut(usize, Value) -> Result<(), ImportError>> DeserializeSeed<'de> for EachElement<'_, F> {
    type Value = bool;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

fn header(command_line: &str, transport: &str, url: Option<&str>, started: u64) -> Header {
    Header {
        started_unix_ms: started,
        command_line: command_line.to_owned(),
        mode: "import".into(),
        transport: transport.to_owned(),
        url: url.map(str::to_owned),
        ..Header::default()
    }
}

/// mcpsnoop: one envelope per line; a new `session_id` starts a session.
fn mcpsnoop(mut text: impl BufRead) -> Result<Imported, ImportError> {
    let mut sessions: Vec<(String, Session)> = Vec::new();
    let mut skipped = 0;
    let mut line = Vec::new();
    let mut n = 0;
    loop {
        line.clear();
        if text.read_until(b'\n', &mut line).map_err(ImportError::Read)? == 0 {
            break;
        }
        n += 1;
        if line.trim_ascii().is_empty() {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<Value>(&line) else {
            skipped += 1;
            continue;
        };
        let id = v
            .get("session_id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if sessions.last().is_none_or(|(s, _)| *s != id) {
            let label = v.get("server_label").and_then(Value::as_str).unwrap_or("server");
            let transport = v.get("transport").and_then(Value::as_str).unwrap_or("stdio");
            sessions.push((
                id.clone(),
                Session {
                    header: header(label, if transport == "http" { "http" } else { "stdio" }, None, 0),
                    messages: Messages::default(),
                },
            ));
        }
        let Some(unix_ms) = v
            .get("ts")
            .and_then(Value::as_str)
            .and_then(crate::text::parse_rfc3339_ms)
        else {
            return Err(ImportError::Malformed {
                format: Format::Mcpsnoop,
                why: format!("line {n}: no RFC 3339 `ts`"),
            });
        };
        let session = &mut sessions.last_mut().expect("pushed above").1;
        if session.header.started_unix_ms == 0 {
            session.header.started_unix_ms = unix_ms;
        }
        let payload = v.get("raw").or_else(|| v.get("text"));
        let m = &mut session.messages;
        match (v.get("direction").and_then(Value::as_str), payload) {
            (Some("c2s"), Some(b)) => m.push_json(unix_ms, Direction::Out, b)?,
            (Some("s2c"), Some(b)) => m.push_json(unix_ms, Direction::In, b)?,
            (Some("stderr"), Some(b)) => match b {
                Value::String(s) => m.push(unix_ms, Direction::In, s.as_bytes(), true)?,
                other => m.push(unix_ms, Direction::In, other.to_string().as_bytes(), true)?,
            },
            (Some("meta"), _) => {
                if let Some(cmd) = v.pointer("/raw/command").and_then(Value::as_array) {
                    let words: Vec<&str> = cmd.iter().filter_map(Value::as_str).collect();
                    session.header.command_line = words.join(" ");
                    session.header.program = words.first().map(|s| (*s).to_owned()).unwrap_or_default();
                }
                if let Some(cwd) = v.pointer("/raw/cwd").and_then(Value::as_str) {
                    session.header.cwd = Some(cwd.to_owned());
                }
            }
            _ => skipped += 1,
        }
    }
    let mut notes = vec!["mcpsnoop keeps each message as JSON it re-encoded, not the bytes the peer wrote".to_owned()];
    if skipped > 0 {
        notes.push(format!("{skipped} line(s) that were not envelopes were left out"));
    }
    Ok(Imported {
        format: Format::Mcpsnoop,
        sessions: sessions.into_iter().map(|(_, s)| s).collect(),
        notes,
    })
}

/// An mcp-recorder cassette as it is read.
struct Cassette {
    version: Option<Value>,
    metadata: Value,
    /// Messages at their time after the first request (the cassette's
    /// `recorded_at` may come after its interactions).
    messages: Messages,
    /// Milliseconds after the first request, and the interaction that last added to them.
    t: u64,
    last_timed: usize,
    lifecycle: usize,
    sse: usize,
}

impl Cassette {
    fn interaction(&mut self, n: usize, i: Value) -> Result<(), ImportError> {
        if i.get("type").and_then(Value::as_str) == Some("lifecycle") {
            self.lifecycle += 1;
            return Ok(());
        }
        let Some(req) = i.get("request").filter(|r| !r.is_null()) else {
            return Ok(());
        };
        self.messages.push_json(self.t, Direction::Out, req)?;
        let at = At {
            format: Format::McpRecorder,
            entry: n,
            field: &|| format!("interactions[{n}].latency_ms"),
        };
        let t = at.later(self.t, i.get("latency_ms"))?;
        if t != self.t {
            (self.t, self.last_timed) = (t, n);
        }
        if let Some(resp) = i.get("response").filter(|r| !r.is_null()) {
            self.sse += usize::from(i.get("response_is_sse").and_then(Value::as_bool) == Some(true));
            self.messages.push_json(self.t, Direction::In, resp)?;
        }
        Ok(())
    }
}

/// mcp-recorder: request/response pairs with latencies, no timestamps.
fn recorder(text: impl BufRead) -> Result<Imported, ImportError> {
    struct Top<'s> {
        cassette: &'s mut Cassette,
        stopped: &'s mut Option<ImportError>,
    }
    impl<'de> Visitor<'de> for Top<'_> {
        /// Whether it had an interactions array.
        type Value = bool;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a cassette object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
            let mut found = false;
            while let Some(key) = map.next_key::<String>()? {
                match key.as_str() {
                    "version" => self.cassette.version = Some(map.next_value()?),
                    "metadata" => self.cassette.metadata = map.next_value()?,
                    "interactions" => {
                        let c = &mut *self.cassette;
                        found |= map.next_value_seed(EachElement {
                            each: |n, i| c.interaction(n, i),
                            stopped: &mut *self.stopped,
                        })?;
                    }
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok(found)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(false)
        }
        skip_other_types!(false);
    }
    let format = Format::McpRecorder;
    let malformed = |why: &str| ImportError::Malformed {
        format,
        why: why.to_owned(),
    };
    let mut c = Cassette {
        version: None,
        metadata: Value::Null,
        messages: Messages::default(),
        t: 0,
        last_timed: 0,
        lifecycle: 0,
        sse: 0,
    };
    let mut stopped = None;
    let read = {
        let mut de = serde_json::Deserializer::from_reader(text);
        de.deserialize_any(Top {
            cassette: &mut c,
            stopped: &mut stopped,
        })
        .and_then(|found| de.end().map(|()| found))
    };
    let found = settle(format, read, stopped)?;
    let version = c.version.as_ref().and_then(Value::as_str).unwrap_or("1.0");
    if !version.starts_with("1.") && version != "1" {
        return Err(malformed(&format!("version {version:?}: only 1.x cassettes are known")));
    }
    if !found {
        return Err(malformed("has no interactions array"));
    }
    let meta = &c.metadata;
    let start = meta
        .get("recorded_at")
        .and_then(Value::as_str)
        .and_then(crate::text::parse_rfc3339_ms)
        .unwrap_or(0);
    // Both are at most MAX_UNIX_MS, so the sum cannot overflow.
    if start + c.t > MAX_UNIX_MS {
        let n = c.last_timed;
        return Err(ImportError::OutOfRange {
            format,
            entry: n,
            field: format!("metadata.recorded_at + interactions[..={n}].latency_ms"),
            value: format!("{} ms after {}", c.t, crate::text::iso8601_utc_ms(start)),
        });
    }
    c.messages.slots.iter_mut().for_each(|s| s.unix_ms += start);
    let server = meta.get("server_url").and_then(Value::as_str).unwrap_or_default();
    let (transport, url, command) = match server.strip_prefix("stdio://") {
        Some(cmd) => ("stdio", None, cmd.to_owned()),
        None if server.starts_with("http") => ("http", Some(server), server.to_owned()),
        None => ("stdio", None, server.to_owned()),
    };
    let mut notes = vec![
        "an mcp-recorder cassette keeps no time of day per message: times are rebuilt from each answer's latency"
            .to_owned(),
        "no stderr, and no message the server sent outside an answer".to_owned(),
    ];
    if c.lifecycle > 0 {
        notes.push(format!(
            "{} HTTP lifecycle interaction(s) (GET, DELETE) carry no message: left out",
            c.lifecycle
        ));
    }
    if c.sse > 0 {
        notes.push(format!(
            "{} answer(s) came as an event stream; the cassette keeps only the final message",
            c.sse
        ));
    }
    Ok(Imported {
        format,
        sessions: vec![Session {
            header: header(&command, transport, url, start),
            messages: c.messages,
        }],
        notes,
    })
}

/// The Inspector: entries with the response nested in its request.
fn inspector(text: impl BufRead) -> Result<Imported, ImportError> {
    let format = Format::Inspector;
    let mut messages = Messages::default();
    let mut skipped = 0;
    let entry = |i: usize, e: Value| -> Result<(), ImportError> {
        let (Some(ts), Some(message)) = (
            e.get("timestamp")
                .and_then(Value::as_str)
                .and_then(crate::text::parse_rfc3339_ms),
            e.get("message").filter(|m| m.is_object()),
        ) else {
            skipped += 1;
            return Ok(());
        };
        let from_server = e.get("origin").and_then(Value::as_str) == Some("server")
            || (e.get("origin").is_none() && e.get("direction").and_then(Value::as_str) == Some("response"));
        let (sent, answered) = if from_server {
            (Direction::In, Direction::Out)
        } else {
            (Direction::Out, Direction::In)
        };
        messages.push_json(ts, sent, message)?;
        if let Some(resp) = e.get("response").filter(|r| r.is_object()) {
            let at = At {
                format,
                entry: i,
                field: &|| format!("[{i}].duration"),
            };
            messages.push_json(at.later(ts, e.get("duration"))?, answered, resp)?;
        }
        Ok(())
    };
    let mut stopped = None;
    let read = {
        let mut de = serde_json::Deserializer::from_reader(text);
        de.deserialize_any(EachElement {
            each: entry,
            stopped: &mut stopped,
        })
        .and_then(|array| de.end().map(|()| array))
    };
    if !settle(format, read, stopped)? {
        return Err(ImportError::Malformed {
            format,
            why: "is not an array of entries".into(),
        });
    }
    messages.sort_by_time();
    let start = messages.first_ms().unwrap_or(0);
    let mut notes = vec![
        "the Inspector's export keeps messages as JSON, without the bytes, the server's stderr or the HTTP layer"
            .to_owned(),
    ];
    if skipped > 0 {
        notes.push(format!(
            "{skipped} entr(ies) without a timestamp or a message were left out"
        ));
    }
    Ok(Imported {
        format,
        sessions: vec![Session {
            header: header("MCP Inspector export", "", None, start),
            messages,
        }],
        notes,
    })
}

/// The `data:` of each event of an event stream, joined as SSE joins them.
fn sse_data(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut data: Vec<&str> = Vec::new();
    for line in text.lines().chain(std::iter::once("")) {
        if line.is_empty() {
            if !data.is_empty() {
                out.push(data.join("\n"));
                data.clear();
            }
        } else if let Some(d) = line.strip_prefix("data:") {
            data.push(d.strip_prefix(' ').unwrap_or(d));
        }
    }
    out
}

/// A HAR as it is read.
#[derive(Default)]
struct HarLog {
    ours: bool,
    /// Whether `log.entries` was an array.
    entries: bool,
    messages: Messages,
    skipped: usize,
    url: Option<String>,
}

fn is_jsonrpc(s: &str) -> bool {
    serde_json::from_str::<Value>(s).is_ok_and(|v| {
        let one = |m: &Value| m.get("jsonrpc").is_some();
        one(&v) || v.as_array().is_some_and(|a| a.iter().any(one))
    })
}

impl HarLog {
    fn entry(&mut self, i: usize, e: Value) -> Result<(), ImportError> {
        let Some(started) = e
            .get("startedDateTime")
            .and_then(Value::as_str)
            .and_then(crate::text::parse_rfc3339_ms)
        else {
            self.skipped += 1;
            return Ok(());
        };
        if let Some(list) = e.get("_mcpMessages").and_then(Value::as_array) {
            for m in list {
                let unix_ms = m
                    .get("time")
                    .and_then(Value::as_str)
                    .and_then(crate::text::parse_rfc3339_ms)
                    .unwrap_or(started);
                let direction = if m.get("dir").and_then(Value::as_str) == Some("send") {
                    Direction::Out
                } else {
                    Direction::In
                };
                if let Some(d) = m.get("data").and_then(Value::as_str) {
                    self.messages.push(unix_ms, direction, d.as_bytes(), false)?;
                }
            }
            return Ok(());
        }
        let request = e
            .pointer("/request/postData/text")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let answer = e
            .pointer("/response/content/text")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let stream = e
            .pointer("/response/content/mimeType")
            .and_then(Value::as_str)
            .is_some_and(|m| m.to_ascii_lowercase().starts_with("text/event-stream"));
        let answers: Vec<String> = if stream {
            sse_data(answer).into_iter().filter(|d| is_jsonrpc(d)).collect()
        } else if is_jsonrpc(answer) {
            vec![answer.to_owned()]
        } else {
            Vec::new()
        };
        let request_is_jsonrpc = is_jsonrpc(request);
        if !request_is_jsonrpc && answers.is_empty() {
            self.skipped += 1;
            return Ok(());
        }
        if self.url.is_none() {
            self.url = e.pointer("/request/url").and_then(Value::as_str).map(str::to_owned);
        }
        if request_is_jsonrpc {
            self.messages.push(started, Direction::Out, request.as_bytes(), false)?;
        }
        if !answers.is_empty() {
            // -1 is HAR's "does not apply".
            let wait = e.pointer("/timings/wait").filter(|w| w.as_f64() != Some(-1.0));
            let at = At {
                format: Format::Har,
                entry: i,
                field: &|| format!("log.entries[{i}].timings.wait"),
            };
            let answered = at.later(started, wait)?;
            for a in answers {
                self.messages.push(answered, Direction::In, a.as_bytes(), false)?;
            }
        }
        Ok(())
    }
}

/// HAR: what mcpscope exported is read back exactly (`_mcpMessages`);
/// another tool's entries give their JSON-RPC request bodies and answers.
fn har(text: impl BufRead) -> Result<Imported, ImportError> {
    /// The top-level object, or `log` within it (`log: true`).
    struct Object<'s> {
        log: bool,
        har: &'s mut HarLog,
        stopped: &'s mut Option<ImportError>,
    }
    impl<'de> Visitor<'de> for Object<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<String>()? {
                match (self.log, key.as_str()) {
                    (false, "log") => map.next_value_seed(Object {
                        log: true,
                        har: &mut *self.har,
                        stopped: &mut *self.stopped,
                    })?,
                    (true, "creator") => {
                        let creator: Value = map.next_value()?;
                        self.har.ours = creator.get("name").and_then(Value::as_str) == Some("mcpscope");
                    }
                    (true, "entries") => {
                        let h = &mut *self.har;
                        let array = map.next_value_seed(EachElement {
                            each: |i, e| h.entry(i, e),
                            stopped: &mut *self.stopped,
                        })?;
                        h.entries |= array;
                    }
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok(())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(())
        }
        skip_other_types!(());
    }
    impl<'de> DeserializeSeed<'de> for Object<'_> {
        type Value = ();
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_any(self)
        }
    }
    let format = Format::Har;
    let mut h = HarLog::default();
    let mut stopped = None;
    let read = {
        let mut de = serde_json::Deserializer::from_reader(text);
        de.deserialize_any(Object {
            log: false,
            har: &mut h,
            stopped: &mut stopped,
        })
        .and_then(|()| de.end())
    };
    settle(format, read, stopped)?;
    if !h.entries {
        return Err(ImportError::Malformed {
            format,
            why: "has no log.entries".into(),
        });
    }
    let mut messages = h.messages;
    messages.sort_by_time();
    let start = messages.first_ms().unwrap_or(0);
    let url = h.url;
    let transport = match url.as_deref() {
        Some(u) if u.starts_with("http") => "http",
        _ => "stdio",
    };
    let mut notes = Vec::new();
    if !h.ours {
        notes.push(
            "HAR from another tool: no stderr, times to the millisecond at best, and messages the server sent \
             on a GET stream only if the HAR kept that stream's body"
                .to_owned(),
        );
    }
    if h.skipped > 0 {
        notes.push(format!(
            "{} entr(ies) carrying no JSON-RPC message were left out",
            h.skipped
        ));
    }
    Ok(Imported {
        format,
        sessions: vec![Session {
            header: header(
                url.as_deref().unwrap_or("HAR import"),
                transport,
                url.as_deref().filter(|_| transport == "http"),
                start,
            ),
            messages,
        }],
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_recognised_from_their_content() {
        assert_eq!(
            detect(r#"{"session_id":"s","seq":1,"ts":"2026-08-20T10:00:00Z","direction":"c2s","raw":{}}"#),
            Some(Format::Mcpsnoop)
        );
        assert_eq!(
            detect("[\n  {\"id\": \"1\", \"direction\": \"request\"}\n]"),
            Some(Format::Inspector)
        );
        assert_eq!(
            detect(r#"{"log": {"version": "1.2", "creator": {}, "entries": []}}"#),
            Some(Format::Har)
        );
        assert_eq!(
            detect(r#"{"version": "1.0", "metadata": {}, "interactions": []}"#),
            Some(Format::McpRecorder)
        );
        // A HAR whose `log` comes after a large first member.
        let late = format!(r#"{{"pad": "{}", "log": {{"entries": []}}}}"#, "x".repeat(5000));
        assert_eq!(detect(&late), Some(Format::Har));
        assert_eq!(detect("\u{feff}{\"interactions\": []}"), Some(Format::McpRecorder));
        assert_eq!(detect("hello"), None);
        assert_eq!(
            detect(r#"{"format":"mcpscope-capture"}"#),
            None,
            "mcpscope's own is opened, not imported"
        );
    }

    #[test]
    fn an_event_stream_gives_each_events_data() {
        assert_eq!(
            sse_data("event: message\ndata: {\"a\":1}\n\n: comment\ndata: line1\ndata: line2\n\n"),
            ["{\"a\":1}", "line1\nline2"]
        );
    }

    #[test]
    fn imported_times_are_checked_and_never_wrap() {
        let at = At {
            format: Format::Inspector,
            entry: 4,
            field: &|| "[4].duration".to_owned(),
        };
        let t0 = 1_787_000_000_000;
        assert_eq!(at.later(t0, None).unwrap(), t0);
        assert_eq!(at.later(t0, Some(&Value::Null)).unwrap(), t0);
        assert_eq!(at.later(t0, Some(&serde_json::json!(12.9))).unwrap(), t0 + 12);
        assert_eq!(at.later(t0, Some(&serde_json::json!(-0.0))).unwrap(), t0);
        for bad in [
            serde_json::json!(1e308),
            serde_json::json!(-1),
            serde_json::json!(u64::MAX),
            serde_json::json!("NaN"),
            serde_json::json!("5"),
            serde_json::json!(MAX_UNIX_MS - t0 + 1),
        ] {
            let e = at.later(t0, Some(&bad)).unwrap_err();
            assert!(
                matches!(&e, ImportError::OutOfRange { entry: 4, field, .. } if field == "[4].duration"),
                "{bad}: {e}"
            );
        }
        assert_eq!(
            at.later(t0, Some(&serde_json::json!(MAX_UNIX_MS - t0))).unwrap(),
            MAX_UNIX_MS
        );
    }

    #[test]
    fn a_cassette_whose_latencies_add_up_past_the_year_9999_is_refused() {
        let cassette = format!(
            r#"{{"version": "1.0", "metadata": {{"recorded_at": "2026-01-01T00:00:00Z"}}, "interactions": [
                {{"type": "jsonrpc_request", "request": {{"jsonrpc": "2.0", "id": 1, "method": "ping"}}, "response": {{"jsonrpc": "2.0", "id": 1, "result": {{}}}}, "latency_ms": {half}}},
                {{"type": "jsonrpc_request", "request": {{"jsonrpc": "2.0", "id": 2, "method": "ping"}}, "response": {{"jsonrpc": "2.0", "id": 2, "result": {{}}}}, "latency_ms": {half}}}]}}"#,
            half = MAX_UNIX_MS / 2 + 1
        );
        let e = parse(Format::McpRecorder, cassette.as_bytes()).unwrap_err();
        assert!(matches!(e, ImportError::OutOfRange { entry: 1, .. }), "{e}");
        // A latency in fractions of a millisecond counts (it was read as 0 before).
        let ok = r#"{"version": "1.0", "interactions": [
            {"request": {"jsonrpc": "2.0", "id": 1, "method": "ping"}, "response": {"jsonrpc": "2.0", "id": 1, "result": {}}, "latency_ms": 7.5}]}"#;
        let i = parse(Format::McpRecorder, ok.as_bytes()).unwrap();
        let times: Vec<u64> = i.sessions[0].messages.iter().map(|m| m.unix_ms).collect();
        assert_eq!(times, [0, 7]);
    }

    #[test]
    fn entries_are_read_one_at_a_time_and_kept_compact() {
        let text = r#"[
            {"timestamp": "2026-08-20T10:00:00.005Z", "direction": "request", "message": {"jsonrpc": "2.0", "id": 2, "method": "ping"},
             "response": {"jsonrpc": "2.0", "id": 2, "result": {}}, "duration": 1},
            {"timestamp": "2026-08-20T10:00:00.000Z", "direction": "request", "message": {"jsonrpc": "2.0", "id": 1, "method": "ping"},
             "response": {"jsonrpc": "2.0", "id": 1, "result": {}}, "duration": 10},
            {"no": "timestamp"}
        ]"#;
        let i = parse(Format::Inspector, text.as_bytes()).unwrap();
        let got: Vec<(u64, String)> = i.sessions[0]
            .messages
            .iter()
            .map(|m| (m.unix_ms % 1000, String::from_utf8_lossy(m.bytes).into_owned()))
            .collect();
        assert_eq!(
            got,
            [
                (0, r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.to_owned()),
                (5, r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#.to_owned()),
                (6, r#"{"jsonrpc":"2.0","id":2,"result":{}}"#.to_owned()),
                (10, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_owned()),
            ]
        );
        assert_eq!(i.sessions[0].header.started_unix_ms % 1000, 0);
        assert!(i.notes.iter().any(|n| n.contains("1 entr(ies)")), "{:?}", i.notes);
        let e = parse(Format::Inspector, &b"{\"not\": \"an array\"}"[..]).unwrap_err();
        assert!(e.to_string().contains("not an array"), "{e}");
        let e = parse(
            Format::Har,
            &br#"{"log": {"entries": [{"startedDateTime": "2026-08-20T10:00:00Z"}, tru"#[..],
        )
        .unwrap_err();
        assert!(matches!(e, ImportError::NotJson { .. }), "{e}");
    }

    #[test]
    fn a_cassette_of_another_major_version_is_refused() {
        let e = parse(
            Format::McpRecorder,
            r#"{"version": "2.0", "interactions": []}"#.as_bytes(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("only 1.x"), "{e}");
    }
}
