//! HAR: mcpscope's own (read back exactly), and devtools' or mitmproxy's
//! (their JSON-RPC request bodies and answers).

use super::stream::{EachElement, settle};
use super::{At, Format, ImportError, Imported, Messages, Session, header};
use crate::wire::frame::Direction;
use crate::wire::scalars_are;
use serde::de::{DeserializeSeed, Deserializer as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::io::BufRead;

/// The `data:` of each event of an event stream, joined as SSE joins them.
pub(super) fn sse_data(text: &str) -> Vec<String> {
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
    models: Vec<(u64, crate::model::record::ModelExchange)>,
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
        if let Some(turn) = model_turn(&e) {
            self.models.push((started, turn));
            return Ok(());
        }
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

/// A model turn as a HAR entry holds it: mcpscope's own (`_model`), or
/// any POST to an OpenAI-compatible `/chat/completions` or Anthropic's
/// `/v1/messages` answered by an event stream. HAR keeps no time per
/// event: the first is placed at the wait (the first token), the rest at
/// the end.
fn model_turn(e: &Value) -> Option<crate::model::record::ModelExchange> {
    use crate::model::provider::Api;
    let url = e.pointer("/request/url").and_then(Value::as_str)?;
    let path = url.split(['?', '#']).next().unwrap_or(url);
    let api = if path.ends_with("/v1/messages") {
        Api::AnthropicMessages
    } else if path.ends_with("/chat/completions") {
        Api::OpenAiChat
    } else {
        return None;
    };
    let request: Value = serde_json::from_str(e.pointer("/request/postData/text").and_then(Value::as_str)?).ok()?;
    let model = request.get("model").and_then(Value::as_str)?.to_owned();
    request.get("messages")?;
    let ours = e.get("_model");
    let provider = ours
        .and_then(|m| m.get("provider"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| match api {
            Api::AnthropicMessages => "anthropic".into(),
            Api::OpenAiChat => "openai".into(),
        });
    let ms = |p: &str| {
        e.pointer(p)
            .and_then(Value::as_f64)
            .filter(|f| f.is_finite() && *f >= 0.0)
            .map(|f| std::time::Duration::from_secs_f64(f / 1e3))
    };
    let total = ms("/time").unwrap_or_default();
    let first_token = ms("/timings/wait");
    let status = e
        .pointer("/response/status")
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok())
        .filter(|s| *s != 0);
    let mut events = Vec::new();
    let mut parser = crate::wire::sse::SseParser::with_limit(8 << 20);
    let text = e
        .pointer("/response/content/text")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut take = |ev: crate::wire::sse::SseEvent| {
        if ev.has_data() {
            events.push((ev.event.clone(), String::from_utf8_lossy(&ev.data).into_owned()));
        }
    };
    parser.feed(text.as_bytes(), &mut take);
    parser.finish(&mut take);
    let last = events.len().saturating_sub(1);
    let events = events
        .into_iter()
        .enumerate()
        .map(|(i, (name, data))| {
            let at = if i == 0 && i != last {
                first_token.unwrap_or(total)
            } else {
                total
            };
            (at, name, data)
        })
        .collect();
    let error = e
        .pointer("/response/statusText")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty() && status != Some(200))
        .map(str::to_owned);
    Some(crate::model::record::ModelExchange {
        at: std::time::Duration::ZERO,
        provider,
        model,
        api,
        url: url.to_owned(),
        request,
        status,
        events,
        first_token,
        total,
        error,
    })
}

/// HAR: what mcpscope exported is read back exactly (`_mcpMessages`);
/// another tool's entries give their JSON-RPC request bodies and answers.
pub(super) fn read(text: impl BufRead) -> Result<Imported, ImportError> {
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
        scalars_are!(());
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
    let mut models = std::mem::take(&mut h.models);
    models.sort_by_key(|(at, _)| *at);
    let first_model = models.iter().map(|(at, _)| *at).min();
    let start = match (messages.first_ms(), first_model) {
        (Some(a), Some(b)) => a.min(b),
        (a, b) => a.or(b).unwrap_or(0),
    };
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
            models,
        }],
        notes,
    })
}
