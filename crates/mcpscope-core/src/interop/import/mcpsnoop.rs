//! mcpsnoop's JSONL sessions.

use super::{Format, ImportError, Imported, Messages, Session, header};
use crate::wire::frame::Direction;
use serde_json::Value;
use std::io::BufRead;

/// mcpsnoop: one envelope per line; a new `session_id` starts a session.
pub(super) fn read(mut text: impl BufRead) -> Result<Imported, ImportError> {
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
                    models: Vec::new(),
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
