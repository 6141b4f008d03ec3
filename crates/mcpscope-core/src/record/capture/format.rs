//! The capture format: the header line and the event <-> JSON codec (what
//! each record holds, both ways). The writer and the readers use it; so do
//! the timeline (meta records shown as JSON) and the exports.

use crate::protocol::auth::Step;
use crate::protocol::auth::jwt::DecodedJwt;
use crate::record::capture_error::BadRecord;
use crate::transport::event::{AppMessage, AppToward, AuthExchange, Event, HttpInfo, Touch, TouchKind};
use crate::transport::process::{ExitInfo, ServerSpec, SpawnError};
use crate::transport::recorder::Recorder;
use crate::wire::correlation::TimedOut;
use crate::wire::frame::{Direction, Frame};
use crate::wire::framing::{LineEnding, RawLine};
use crate::wire::message::RequestId;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Value, json};
use std::io::{self, Write};
use std::path::PathBuf;
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
                url: Some(crate::transport::target::mask_url(&h.url)),
                header_keys: h.headers.iter().map(|(k, _)| k.clone()).collect(),
                ..Self::default()
            },
        }
    }

    pub(super) fn to_json(&self) -> Value {
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

    pub(super) fn from_json(v: &Value) -> Option<Self> {
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

pub(super) fn write_prefix(w: &mut impl Write, at: Duration, seq: Option<u64>, dir: &str) -> io::Result<()> {
    write!(w, "{{\"t_us\":{}", at.as_micros() as u64)?;
    if let Some(seq) = seq {
        write!(w, ",\"seq\":{seq}")?;
    }
    write!(w, ",\"dir\":\"{dir}\"")
}

pub(super) fn write_raw(w: &mut impl Write, raw: &[u8], ending: LineEnding) -> io::Result<()> {
    match std::str::from_utf8(raw) {
        Ok(s) => {
            w.write_all(b",\"raw\":")?;
            serde_json::to_writer(&mut *w, s)?;
        }
        Err(_) => write!(w, ",\"raw_b64\":\"{}\"", B64.encode(raw))?,
    }
    write!(w, ",\"eol\":\"{}\"", ending.as_str())
}

pub(super) fn write_frame(w: &mut impl Write, f: &Frame) -> io::Result<()> {
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
        Event::Model(m) => m.to_json(),
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

/// A record read the general way (through a `Value`): a frame, a stderr
/// line or a session event; `None` for a record that holds no event.
pub(super) fn record_to_event(v: &Value, rec: &mut Recorder, offset: Duration) -> Result<Option<Event>, BadRecord> {
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
                "model" => Event::Model(Box::new(crate::model::record::ModelExchange::from_json(v, at)?)),
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
