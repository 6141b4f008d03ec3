//! One model turn over HTTP: the request posted, the streamed answer read
//! event by event into [`Assembler`], each event kept with its time for the
//! record; and the provider's model list.
//!
//! The key travels only in the headers the provider's API names; the
//! request kept for the record is the body, which never holds it.

use crate::model::provider::ModelSpec;
use crate::model::stream::{Assembler, Delta, Turn};
use crate::wire::sse::{SseEvent, SseParser};
use serde_json::Value;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The most of one event's data held (a longer one is cut, and said so).
const EVENT_LIMIT: usize = 8 << 20;
/// The most of an error body read.
const ERROR_BODY_LIMIT: u64 = 64 * 1024;
/// The longest a 429's `retry-after` is waited out, and how many times.
const MAX_RATE_WAIT: Duration = Duration::from_secs(20);
const MAX_RATE_RETRIES: usize = 2;

/// How long a 429 asks to wait: `retry-after-ms` (OpenAI's), else
/// `retry-after` in seconds; `None` when neither says (an HTTP date is
/// not waited for).
fn retry_after(ms: &str, secs: &str) -> Option<Duration> {
    if let Ok(ms) = ms.trim().parse::<f64>()
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64((ms / 1e3).min(1e9)));
    }
    let s = secs.trim().parse::<f64>().ok().filter(|s| s.is_finite() && *s >= 0.0)?;
    Some(Duration::from_secs_f64(s.min(1e9)))
}

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("cannot reach {url}: {why}")]
    Unreachable { url: String, why: String },
    #[error("the provider answered HTTP {status}: {message}")]
    Status { status: u16, message: String },
    #[error("the provider's answer is not an event stream (Content-Type {0:?})")]
    NotAStream(String),
    #[error("reading the answer failed: {0}")]
    Read(String),
    #[error("stopped")]
    Stopped,
}

/// How long the turn took.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Timing {
    pub first_token: Option<Duration>,
    pub total: Duration,
}

/// A turn as it went: what was sent, what came back (each event with its
/// time from the request), and what it assembles to.
#[derive(Clone, Debug)]
pub struct Exchange {
    pub url: String,
    pub request: Value,
    /// The waits a 429 asked for before this answer came.
    pub waited: Vec<Duration>,
    pub status: u16,
    pub events: Vec<(Duration, SseEvent)>,
    pub turn: Turn,
    pub timing: Timing,
}

fn agent(timeout: Duration) -> ureq::Agent {
    crate::transport::auth::http::agent(Duration::from_secs(10), timeout)
}

/// The message of a provider's error body (both APIs put it at
/// `error.message`), else the body's start.
fn error_message(body: &[u8]) -> String {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| {
            let e = &v["error"];
            match (e["type"].as_str(), e["message"].as_str()) {
                (Some(t), Some(m)) => Some(format!("{m} ({t})")),
                (None, Some(m)) => Some(m.to_owned()),
                _ => None,
            }
        })
        .unwrap_or_else(|| crate::text::shorten_bytes(body, 300))
}

/// Posts `body` (from [`crate::model::request::body`]) and reads the streamed
/// answer; `on_delta` sees each change as it comes. Setting `stop` ends the
/// read at the next piece of the answer ([`ProviderError::Stopped`]). A
/// stream that ends without saying so gives a turn that is not
/// [`Turn::complete`]: the caller says it was cut.
pub fn stream_turn(
    spec: &ModelSpec,
    key: Option<&str>,
    body: &Value,
    timeout: Duration,
    stop: &AtomicBool,
    on_delta: &mut dyn FnMut(&Delta),
) -> Result<Exchange, ProviderError> {
    let url = spec.completion_url();
    let mut waited = Vec::new();
    let (status, content_type, mut reader, started) = loop {
        let started = Instant::now();
        let mut req = agent(timeout)
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream");
        for (name, value) in spec.auth_headers(key) {
            req = req.header(name, value.as_str());
        }
        let resp = req
            .send(body.to_string().as_bytes())
            .map_err(|e| ProviderError::Unreachable {
                url: url.clone(),
                why: crate::transport::auth::http::describe(&e),
            })?;
        let status = resp.status().as_u16();
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned()
        };
        let content_type = header("content-type");
        let wait = retry_after(&header("retry-after-ms"), &header("retry-after"));
        let mut reader = resp.into_body().into_reader();
        if status == 429 {
            let mut text = Vec::new();
            let _ = (&mut reader).take(ERROR_BODY_LIMIT).read_to_end(&mut text);
            let message = error_message(&text);
            match wait {
                Some(w) if w <= MAX_RATE_WAIT && waited.len() < MAX_RATE_RETRIES => {
                    // Honoured, in short steps so a Stop is not kept waiting.
                    let until = Instant::now() + w;
                    while Instant::now() < until {
                        if stop.load(Ordering::SeqCst) {
                            return Err(ProviderError::Stopped);
                        }
                        std::thread::sleep(Duration::from_millis(50).min(until - Instant::now()));
                    }
                    waited.push(w);
                    continue;
                }
                Some(w) if w > MAX_RATE_WAIT => {
                    return Err(ProviderError::Status {
                        status,
                        message: format!(
                            "{message} (rate limited: the provider asks to wait {} s, longer than mcpscope waits, {} s)",
                            w.as_secs(),
                            MAX_RATE_WAIT.as_secs()
                        ),
                    });
                }
                _ => {
                    let after = match waited.len() {
                        0 => "no retry-after to wait for".to_owned(),
                        n => format!("still, after waiting {n} time(s) as it asked"),
                    };
                    return Err(ProviderError::Status {
                        status,
                        message: format!("{message} (rate limited: {after})"),
                    });
                }
            }
        }
        break (status, content_type, reader, started);
    };
    if status != 200 {
        let mut text = Vec::new();
        let _ = (&mut reader).take(ERROR_BODY_LIMIT).read_to_end(&mut text);
        return Err(ProviderError::Status {
            status,
            message: error_message(&text),
        });
    }
    if !content_type.to_ascii_lowercase().starts_with("text/event-stream") {
        return Err(ProviderError::NotAStream(content_type));
    }
    let mut assembler = Assembler::new(spec.api);
    let mut parser = SseParser::with_limit(EVENT_LIMIT);
    let mut events = Vec::new();
    let mut first_token = None;
    let mut buf = vec![0u8; 16 * 1024];
    let mut take = |ev: SseEvent, assembler: &mut Assembler, events: &mut Vec<(Duration, SseEvent)>| {
        let at = started.elapsed();
        for d in assembler.event(&ev) {
            if first_token.is_none() && matches!(d, Delta::Text(_) | Delta::ToolCallStarted { .. }) {
                first_token = Some(at);
            }
            on_delta(&d);
        }
        events.push((at, ev));
    };
    loop {
        if stop.load(Ordering::SeqCst) {
            return Err(ProviderError::Stopped);
        }
        let n = match reader.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ProviderError::Read(e.to_string())),
        };
        if n == 0 {
            parser.finish(&mut |ev| take(ev, &mut assembler, &mut events));
            break;
        }
        parser.feed(&buf[..n], &mut |ev| take(ev, &mut assembler, &mut events));
        if assembler.is_complete() {
            break;
        }
    }
    Ok(Exchange {
        url,
        request: body.clone(),
        waited,
        status,
        events,
        turn: assembler.finish(),
        timing: Timing {
            first_token,
            total: started.elapsed(),
        },
    })
}

/// The models the provider lists (its `models` endpoint).
pub fn list_models(spec: &ModelSpec, key: Option<&str>, timeout: Duration) -> Result<Vec<String>, ProviderError> {
    let url = spec.models_url();
    let mut req = agent(timeout).get(&url);
    for (name, value) in spec.auth_headers(key) {
        req = req.header(name, value.as_str());
    }
    let resp = req.call().map_err(|e| ProviderError::Unreachable {
        url: url.clone(),
        why: crate::transport::auth::http::describe(&e),
    })?;
    let status = resp.status().as_u16();
    let mut body = Vec::new();
    resp.into_body()
        .into_reader()
        .take(8 << 20)
        .read_to_end(&mut body)
        .map_err(|e| ProviderError::Read(e.to_string()))?;
    if status != 200 {
        return Err(ProviderError::Status {
            status,
            message: error_message(&body),
        });
    }
    let v: Value = serde_json::from_slice(&body).map_err(|e| ProviderError::Read(format!("not JSON: {e}")))?;
    Ok(v["data"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["id"].as_str().map(str::to_owned))
        .collect())
}

/// A turn as the capture keeps it ([`ModelExchange`]): the exchange, or
/// the request and why it failed. `took`: how long the attempt lasted.
pub fn record(
    spec: &ModelSpec,
    request: &Value,
    result: &Result<Exchange, ProviderError>,
    took: Duration,
) -> crate::model::record::ModelExchange {
    let base = crate::model::record::ModelExchange {
        at: Duration::ZERO,
        provider: spec.provider.clone(),
        model: spec.model.clone(),
        api: spec.api,
        url: spec.completion_url(),
        request: request.clone(),
        status: None,
        events: Vec::new(),
        first_token: None,
        total: took,
        error: None,
    };
    match result {
        Ok(x) => crate::model::record::ModelExchange {
            status: Some(x.status),
            events: x
                .events
                .iter()
                .map(|(at, ev)| (*at, ev.event.clone(), String::from_utf8_lossy(&ev.data).into_owned()))
                .collect(),
            first_token: x.timing.first_token,
            total: x.timing.total,
            ..base
        },
        Err(e) => crate::model::record::ModelExchange {
            status: match e {
                ProviderError::Status { status, .. } => Some(*status),
                _ => None,
            },
            error: Some(e.to_string()),
            ..base
        },
    }
}

#[cfg(test)]
mod tests {
    use super::retry_after;
    use std::time::Duration;

    #[test]
    fn a_rate_limits_wait_is_read_from_either_header() {
        assert_eq!(retry_after("1500", "9"), Some(Duration::from_millis(1500)));
        assert_eq!(retry_after("", "2"), Some(Duration::from_secs(2)));
        assert_eq!(retry_after("", "Wed, 21 Oct 2026 07:28:00 GMT"), None);
        assert_eq!(retry_after("-1", ""), None);
        assert_eq!(retry_after("", "NaN"), None, "not a finite number");
    }
}
