//! mcp-recorder cassettes.

use super::stream::{EachElement, settle};
use super::{At, Format, ImportError, Imported, MAX_UNIX_MS, Messages, Session, header};
use crate::wire::frame::Direction;
use crate::wire::scalars_are;
use serde::de::{Deserializer as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::io::BufRead;

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
pub(super) fn read(text: impl BufRead) -> Result<Imported, ImportError> {
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
        scalars_are!(false);
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
            models: Vec::new(),
        }],
        notes,
    })
}
