//! The official MCP Inspector's JSON export.

use super::stream::{EachElement, settle};
use super::{At, Format, ImportError, Imported, Messages, Session, header};
use crate::wire::frame::Direction;
use serde::de::Deserializer as _;
use serde_json::Value;
use std::io::BufRead;

/// The Inspector: entries with the response nested in its request.
pub(super) fn read(text: impl BufRead) -> Result<Imported, ImportError> {
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
            models: Vec::new(),
        }],
        notes,
    })
}
