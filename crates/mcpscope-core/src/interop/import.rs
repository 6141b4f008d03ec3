//! Other tools' captures read into mcpscope's: mcpsnoop's JSONL sessions,
//! mcp-recorder cassettes, the official Inspector's JSON export, and HAR
//! (mcpscope's own, devtools', mitmproxy's). What each keeps becomes
//! frames, stderr lines and a header; what it lacks is said. No I/O here:
//! text in, an [`Imported`] out ([`crate::interop::import_file`] writes it).

use crate::record::capture::Header;
use crate::wire::frame::Direction;
use serde_json::Value;

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
}

/// One thing that went over the wire (or to stderr), at a moment.
#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    /// Milliseconds since the Unix epoch.
    pub unix_ms: u64,
    pub direction: Direction,
    pub bytes: Vec<u8>,
    /// A line the server wrote to stderr.
    pub stderr: bool,
}

/// One session read from the file.
#[derive(Debug, Default)]
pub struct Session {
    pub header: Header,
    pub messages: Vec<Message>,
}

/// What a file held.
#[derive(Debug)]
pub struct Imported {
    pub format: Format,
    pub sessions: Vec<Session>,
    /// What the format does not keep, or what of this file was left out.
    pub notes: Vec<String>,
}

/// The format of a file, from its text.
pub fn detect(text: &str) -> Option<Format> {
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
    // A whole-file JSON object whose keys come later than the head.
    let v: Value = serde_json::from_str(t).ok()?;
    if v.get("log").is_some() {
        Some(Format::Har)
    } else if v.get("interactions").is_some() {
        Some(Format::McpRecorder)
    } else {
        None
    }
}

/// Reads `text` as `format`.
pub fn parse(format: Format, text: &str) -> Result<Imported, ImportError> {
    let text = text.trim_start_matches('\u{feff}');
    match format {
        Format::Mcpsnoop => mcpsnoop(text),
        Format::McpRecorder => {
            recorder(serde_json::from_str(text).map_err(|e| ImportError::NotJson { format, error: e })?)
        }
        Format::Inspector => {
            inspector(serde_json::from_str(text).map_err(|e| ImportError::NotJson { format, error: e })?)
        }
        Format::Har => har(serde_json::from_str(text).map_err(|e| ImportError::NotJson { format, error: e })?),
    }
}

fn bytes_of(v: &Value) -> Vec<u8> {
    match v {
        Value::String(s) => s.clone().into_bytes(),
        other => other.to_string().into_bytes(),
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
fn mcpsnoop(text: &str) -> Result<Imported, ImportError> {
    let mut sessions: Vec<(String, Session)> = Vec::new();
    let mut skipped = 0;
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(line) else {
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
                    messages: Vec::new(),
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
                why: format!("line {}: no RFC 3339 `ts`", n + 1),
            });
        };
        let session = &mut sessions.last_mut().expect("pushed above").1;
        if session.header.started_unix_ms == 0 {
            session.header.started_unix_ms = unix_ms;
        }
        let message = |direction, bytes, stderr| Message {
            unix_ms,
            direction,
            bytes,
            stderr,
        };
        let payload = v.get("raw").map(bytes_of).or_else(|| v.get("text").map(bytes_of));
        match (v.get("direction").and_then(Value::as_str), payload) {
            (Some("c2s"), Some(b)) => session.messages.push(message(Direction::Out, b, false)),
            (Some("s2c"), Some(b)) => session.messages.push(message(Direction::In, b, false)),
            (Some("stderr"), Some(b)) => session.messages.push(message(Direction::In, b, true)),
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

/// mcp-recorder: request/response pairs with latencies, no timestamps.
fn recorder(v: Value) -> Result<Imported, ImportError> {
    let malformed = |why: &str| ImportError::Malformed {
        format: Format::McpRecorder,
        why: why.to_owned(),
    };
    let version = v.get("version").and_then(Value::as_str).unwrap_or("1.0");
    if !version.starts_with("1.") && version != "1" {
        return Err(malformed(&format!("version {version:?}: only 1.x cassettes are known")));
    }
    let meta = v.get("metadata").cloned().unwrap_or(Value::Null);
    let interactions = v
        .get("interactions")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed("has no interactions array"))?;
    let start = meta
        .get("recorded_at")
        .and_then(Value::as_str)
        .and_then(crate::text::parse_rfc3339_ms)
        .unwrap_or(0);
    let server = meta.get("server_url").and_then(Value::as_str).unwrap_or_default();
    let (transport, url, command) = match server.strip_prefix("stdio://") {
        Some(cmd) => ("stdio", None, cmd.to_owned()),
        None if server.starts_with("http") => ("http", Some(server), server.to_owned()),
        None => ("stdio", None, server.to_owned()),
    };
    let mut session = Session {
        header: header(&command, transport, url, start),
        messages: Vec::new(),
    };
    let (mut t, mut lifecycle, mut sse) = (start, 0, 0);
    for i in interactions {
        match i.get("type").and_then(Value::as_str) {
            Some("lifecycle") => lifecycle += 1,
            _ => {
                let Some(req) = i.get("request").filter(|r| !r.is_null()) else {
                    continue;
                };
                session.messages.push(Message {
                    unix_ms: t,
                    direction: Direction::Out,
                    bytes: req.to_string().into_bytes(),
                    stderr: false,
                });
                let latency = i.get("latency_ms").and_then(Value::as_u64).unwrap_or(0);
                t += latency;
                if let Some(resp) = i.get("response").filter(|r| !r.is_null()) {
                    sse += usize::from(i.get("response_is_sse").and_then(Value::as_bool) == Some(true));
                    session.messages.push(Message {
                        unix_ms: t,
                        direction: Direction::In,
                        bytes: resp.to_string().into_bytes(),
                        stderr: false,
                    });
                }
            }
        }
    }
    let mut notes = vec![
        "an mcp-recorder cassette keeps no time of day per message: times are rebuilt from each answer's latency"
            .to_owned(),
        "no stderr, and no message the server sent outside an answer".to_owned(),
    ];
    if lifecycle > 0 {
        notes.push(format!(
            "{lifecycle} HTTP lifecycle interaction(s) (GET, DELETE) carry no message: left out"
        ));
    }
    if sse > 0 {
        notes.push(format!(
            "{sse} answer(s) came as an event stream; the cassette keeps only the final message"
        ));
    }
    Ok(Imported {
        format: Format::McpRecorder,
        sessions: vec![session],
        notes,
    })
}

/// The Inspector: entries with the response nested in its request.
fn inspector(v: Value) -> Result<Imported, ImportError> {
    let entries = v.as_array().ok_or_else(|| ImportError::Malformed {
        format: Format::Inspector,
        why: "is not an array of entries".into(),
    })?;
    let mut messages = Vec::new();
    let mut skipped = 0;
    for e in entries {
        let (Some(ts), Some(message)) = (
            e.get("timestamp")
                .and_then(Value::as_str)
                .and_then(crate::text::parse_rfc3339_ms),
            e.get("message").filter(|m| m.is_object()),
        ) else {
            skipped += 1;
            continue;
        };
        let from_server = e.get("origin").and_then(Value::as_str) == Some("server")
            || (e.get("origin").is_none() && e.get("direction").and_then(Value::as_str) == Some("response"));
        let (sent, answered) = if from_server {
            (Direction::In, Direction::Out)
        } else {
            (Direction::Out, Direction::In)
        };
        messages.push(Message {
            unix_ms: ts,
            direction: sent,
            bytes: message.to_string().into_bytes(),
            stderr: false,
        });
        if let Some(resp) = e.get("response").filter(|r| r.is_object()) {
            let after = e.get("duration").and_then(Value::as_f64).unwrap_or(0.0).max(0.0) as u64;
            messages.push(Message {
                unix_ms: ts + after,
                direction: answered,
                bytes: resp.to_string().into_bytes(),
                stderr: false,
            });
        }
    }
    messages.sort_by_key(|m| m.unix_ms);
    let start = messages.first().map_or(0, |m| m.unix_ms);
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
        format: Format::Inspector,
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

/// HAR: what mcpscope exported is read back exactly (`_mcpMessages`);
/// another tool's entries give their JSON-RPC request bodies and answers.
fn har(v: Value) -> Result<Imported, ImportError> {
    let entries = v
        .pointer("/log/entries")
        .and_then(Value::as_array)
        .ok_or_else(|| ImportError::Malformed {
            format: Format::Har,
            why: "has no log.entries".into(),
        })?;
    let ours = v.pointer("/log/creator/name").and_then(Value::as_str) == Some("mcpscope");
    let mut messages = Vec::new();
    let (mut skipped, mut url) = (0, None::<String>);
    let is_jsonrpc = |s: &str| {
        serde_json::from_str::<Value>(s).is_ok_and(|v| {
            let one = |m: &Value| m.get("jsonrpc").is_some();
            one(&v) || v.as_array().is_some_and(|a| a.iter().any(one))
        })
    };
    for e in entries {
        let Some(started) = e
            .get("startedDateTime")
            .and_then(Value::as_str)
            .and_then(crate::text::parse_rfc3339_ms)
        else {
            skipped += 1;
            continue;
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
                    messages.push(Message {
                        unix_ms,
                        direction,
                        bytes: d.as_bytes().to_vec(),
                        stderr: false,
                    });
                }
            }
            continue;
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
        if !is_jsonrpc(request) && answers.is_empty() {
            skipped += 1;
            continue;
        }
        if url.is_none() {
            url = e.pointer("/request/url").and_then(Value::as_str).map(str::to_owned);
        }
        if is_jsonrpc(request) {
            messages.push(Message {
                unix_ms: started,
                direction: Direction::Out,
                bytes: request.as_bytes().to_vec(),
                stderr: false,
            });
        }
        let wait = e
            .pointer("/timings/wait")
            .and_then(Value::as_f64)
            .unwrap_or(0.0)
            .max(0.0) as u64;
        for a in answers {
            messages.push(Message {
                unix_ms: started + wait,
                direction: Direction::In,
                bytes: a.into_bytes(),
                stderr: false,
            });
        }
    }
    messages.sort_by_key(|m| m.unix_ms);
    let start = messages.first().map_or(0, |m| m.unix_ms);
    let transport = match url.as_deref() {
        Some(u) if u.starts_with("http") => "http",
        _ => "stdio",
    };
    let mut notes = Vec::new();
    if !ours {
        notes.push(
            "HAR from another tool: no stderr, times to the millisecond at best, and messages the server sent \
             on a GET stream only if the HAR kept that stream's body"
                .to_owned(),
        );
    }
    if skipped > 0 {
        notes.push(format!(
            "{skipped} entr(ies) carrying no JSON-RPC message were left out"
        ));
    }
    Ok(Imported {
        format: Format::Har,
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
    fn a_cassette_of_another_major_version_is_refused() {
        let e = parse(Format::McpRecorder, r#"{"version": "2.0", "interactions": []}"#).unwrap_err();
        assert!(e.to_string().contains("only 1.x"), "{e}");
    }
}
