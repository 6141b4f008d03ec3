//! Other tools' captures read into mcpscope's: mcpsnoop's JSONL sessions,
//! mcp-recorder cassettes, the official Inspector's JSON export, and HAR
//! (mcpscope's own, devtools', mitmproxy's). What each keeps becomes
//! frames, stderr lines and a header; what it lacks is said. No I/O here:
//! text in (read as it comes, one entry at a time: a file's parsed JSON
//! would take many times its size), an [`Imported`] out
//! ([`crate::interop::import_file`] writes it).

use crate::record::capture::Header;
use crate::wire::frame::Direction;
use serde::de::{Deserializer as _, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;
use std::io::BufRead;

mod har;
mod inspector;
mod mcpsnoop;
mod recorder;
mod stream;

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
    /// Model turns (a HAR mcpscope exported keeps them as the HTTP
    /// exchanges they were), each with when it began.
    pub models: Vec<(u64, crate::model::record::ModelExchange)>,
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
        Format::Mcpsnoop => mcpsnoop::read(text),
        Format::McpRecorder => recorder::read(text),
        Format::Inspector => inspector::read(text),
        Format::Har => har::read(text),
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

#[cfg(test)]
mod tests;
