//! A capture as HAR 1.2, for browser devtools and HTTP debuggers.
//!
//! One entry per exchange: a request and its answer (matched by id), a
//! client's notification or answer, a message the server sent on its own.
//! Over HTTP an entry carries the real exchange's URL, headers (masked as in
//! the capture) and status; over stdio it is synthesised the way other MCP
//! tools do (`mcp://<server>/<method>[/<name>]`, `JSON-RPC/2.0`, status 200
//! for a result, 500 for an error, 0 when nothing answered). Every JSON-RPC
//! message an entry covers, progress notifications included, is in its
//! `_mcpMessages`; an answer that came as an event stream keeps its events as
//! the response text. No I/O: events in, JSON out.

use crate::record::capture::Header;
use crate::transport::event::{Event, HttpInfo};
use crate::wire::classify::Kind;
use crate::wire::frame::{Direction, Frame};
use crate::wire::message::RequestId;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::time::Duration;

/// Headers whose values are never written, whatever the capture holds.
const SECRET_HEADERS: &[&str] = &["authorization", "cookie", "set-cookie", "proxy-authorization"];

struct Entry {
    at: Duration,
    /// The request's (or lone message's) frame.
    first: Frame,
    /// Messages in the order they went, with their direction.
    messages: Vec<(Duration, Direction, Vec<u8>)>,
    answer: Option<Frame>,
    http: Option<HttpInfo>,
    /// The client's request was never answered: the session ended first.
    open: bool,
}

/// Builds the HAR as events arrive ([`HarWriter::push`]), then [`HarWriter::finish`].
pub struct HarWriter {
    header: Header,
    tool_version: String,
    entries: Vec<Entry>,
    /// Requests waiting for their answer: request id → entry index.
    pending: HashMap<RequestId, usize>,
    /// Progress tokens of waiting requests → entry index.
    progress: HashMap<String, usize>,
    /// The server's requests waiting for the client's answer: id → entry index.
    asked: HashMap<RequestId, usize>,
    /// Outgoing messages that are not requests, waiting for the POST that carried them.
    unposted: Vec<usize>,
    sessions: usize,
}

fn token_key(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(format!("s:{s}")),
        Value::Number(n) => Some(format!("n:{n}")),
        _ => None,
    }
}

fn masked(headers: &[(String, String)]) -> Vec<Value> {
    headers
        .iter()
        .map(|(k, v)| {
            let value = if SECRET_HEADERS.iter().any(|s| k.eq_ignore_ascii_case(s)) {
                crate::text::mask_value(v)
            } else {
                v.clone()
            };
            json!({"name": k, "value": value})
        })
        .collect()
}

fn header_of<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

fn text_of(raw: &[u8]) -> String {
    String::from_utf8_lossy(raw).into_owned()
}

impl HarWriter {
    pub fn new(header: Header, tool_version: &str) -> Self {
        Self {
            header,
            tool_version: tool_version.to_owned(),
            entries: Vec::new(),
            pending: HashMap::new(),
            progress: HashMap::new(),
            asked: HashMap::new(),
            unposted: Vec::new(),
            sessions: 1,
        }
    }

    fn http_transport(&self) -> bool {
        matches!(self.header.transport.as_str(), "http" | "sse")
    }

    /// The server as a stdio entry's URL names it: the program's file name.
    fn label(&self) -> String {
        let program = if self.header.program.is_empty() {
            self.header.command_line.split_whitespace().next().unwrap_or("server")
        } else {
            &self.header.program
        };
        let name = program.rsplit('/').next().unwrap_or(program);
        let clean: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        if clean.is_empty() { "server".into() } else { clean }
    }

    fn add(&mut self, f: &Frame) -> usize {
        self.entries.push(Entry {
            at: f.at,
            first: f.clone(),
            messages: vec![(f.at, f.direction, f.raw.clone())],
            answer: None,
            http: None,
            open: false,
        });
        self.entries.len() - 1
    }

    pub fn push(&mut self, ev: &Event) {
        match ev {
            Event::Frame(f) => self.frame(f),
            Event::Http(info) => self.http(info),
            _ => {}
        }
    }

    /// Another session of an appended capture begins: ids start again.
    pub fn new_session(&mut self) {
        self.sessions += 1;
        // Requests the last session left unanswered stay so; ids are reused from here.
        self.pending.clear();
        self.progress.clear();
        self.asked.clear();
        self.unposted.clear();
    }

    fn frame(&mut self, f: &Frame) {
        let json = || f.json();
        match (f.direction, f.class.kind) {
            (Direction::Out, Kind::Request) => {
                let i = self.add(f);
                if let Some(id) = &f.class.id {
                    self.pending.insert(id.clone(), i);
                    self.entries[i].open = true;
                }
                if let Some(t) = json().and_then(|v| v.pointer("/params/_meta/progressToken").and_then(token_key)) {
                    self.progress.insert(t, i);
                }
            }
            (Direction::In, Kind::Result | Kind::Error) => {
                let waiting = f.class.id.as_ref().and_then(|id| self.pending.remove(id));
                match waiting {
                    Some(i) => {
                        let e = &mut self.entries[i];
                        e.messages.push((f.at, f.direction, f.raw.clone()));
                        e.answer = Some(f.clone());
                        e.open = false;
                        self.progress.retain(|_, v| *v != i);
                    }
                    None => {
                        self.add(f);
                    }
                }
            }
            (Direction::In, Kind::Notification) => {
                let token = json().and_then(|v| v.pointer("/params/progressToken").and_then(token_key));
                match token.and_then(|t| self.progress.get(&t).copied()) {
                    Some(i) => self.entries[i].messages.push((f.at, f.direction, f.raw.clone())),
                    None => {
                        self.add(f);
                    }
                }
            }
            (Direction::In, Kind::Request) => {
                let i = self.add(f);
                if let Some(id) = &f.class.id {
                    self.asked.insert(id.clone(), i);
                }
            }
            (Direction::Out, Kind::Result | Kind::Error)
                if f.class.id.as_ref().is_some_and(|id| self.asked.contains_key(id)) =>
            {
                let i = f
                    .class
                    .id
                    .as_ref()
                    .and_then(|id| self.asked.remove(id))
                    .unwrap_or_default();
                let e = &mut self.entries[i];
                e.messages.push((f.at, f.direction, f.raw.clone()));
                e.answer = Some(f.clone());
                if self.http_transport() {
                    self.unposted.push(i);
                }
            }
            (Direction::Out, _) => {
                let i = self.add(f);
                if self.http_transport() {
                    self.unposted.push(i);
                }
            }
            (Direction::In, _) => {
                self.add(f);
            }
        }
    }

    fn http(&mut self, info: &HttpInfo) {
        if info.method != "POST" {
            return;
        }
        let target = match &info.request_id {
            Some(id) => self
                .entries
                .iter()
                .rposition(|e| e.first.direction == Direction::Out && e.first.class.id.as_ref() == Some(id)),
            None if !self.unposted.is_empty() => Some(self.unposted.remove(0)),
            None => None,
        };
        if let Some(i) = target {
            let e = &mut self.entries[i];
            // The first answer to a POST is the exchange; a retry's is kept if the first failed.
            if e.http.as_ref().is_none_or(|h| h.status.is_none()) {
                e.http = Some(info.clone());
            }
        }
    }

    /// The HAR document.
    pub fn finish(self) -> Value {
        let http = self.http_transport();
        let label = self.label();
        let entries: Vec<Value> = self.entries.iter().map(|e| self.entry(e, http, &label)).collect();
        let unanswered = self.entries.iter().filter(|e| e.open).count();
        let mut comment = format!(
            "An mcpscope capture ({} transport{}): {}",
            if http { self.header.transport.as_str() } else { "stdio" },
            if self.sessions > 1 {
                format!(", {} sessions", self.sessions)
            } else {
                String::new()
            },
            if http {
                "one entry per JSON-RPC exchange with its HTTP request and response; secrets masked as in the capture"
            } else {
                "no HTTP layer, so each JSON-RPC exchange is an entry of its own (JSON-RPC/2.0, mcp:// URLs); \
                 stderr is not in a HAR"
            }
        );
        if unanswered > 0 {
            comment.push_str(&format!("; {unanswered} request(s) never answered (status 0)"));
        }
        json!({"log": {
            "version": "1.2",
            "creator": {"name": "mcpscope", "version": self.tool_version},
            "comment": comment,
            "entries": entries,
        }})
    }

    fn started(&self, at: Duration) -> String {
        crate::text::iso8601_utc_ms(self.header.started_unix_ms + at.as_millis() as u64)
    }

    fn entry(&self, e: &Entry, http: bool, label: &str) -> Value {
        let method = e.first.class.method.clone().or_else(|| {
            e.answer
                .as_ref()
                .and_then(|a| a.link.as_ref().map(|l| l.method.clone()))
        });
        let name = e
            .first
            .json()
            .and_then(|v| v.pointer("/params/name").and_then(Value::as_str).map(str::to_owned));
        let wait_ms = e
            .answer
            .as_ref()
            .and_then(|a| a.link.as_ref().map(|l| l.latency))
            .unwrap_or_default()
            .as_secs_f64()
            * 1000.0;
        let request_text = text_of(&e.first.raw);
        let answer_text = e.answer.as_ref().map(|a| text_of(&a.raw));
        let messages: Vec<Value> = e
            .messages
            .iter()
            .map(|(at, dir, raw)| {
                json!({
                    "time": self.started(*at),
                    "dir": if *dir == Direction::Out { "send" } else { "receive" },
                    "data": text_of(raw),
                })
            })
            .collect();
        let sse = e
            .http
            .as_ref()
            .and_then(|h| header_of(&h.received, "content-type"))
            .is_some_and(|ct| ct.to_ascii_lowercase().starts_with("text/event-stream"));
        if e.first.direction == Direction::In {
            return self.server_entry(e, http, label, method.as_deref(), &messages);
        }
        let (req_method, url, version, req_headers) = match (&e.http, http) {
            (Some(h), _) => ("POST".to_owned(), h.url.clone(), "HTTP/1.1", masked(&h.sent)),
            (None, true) => (
                "POST".to_owned(),
                self.header.url.clone().unwrap_or_default(),
                "HTTP/1.1",
                Vec::new(),
            ),
            (None, false) => {
                let mut u = format!("mcp://{label}/{}", method.as_deref().unwrap_or("message"));
                if let Some(n) = &name {
                    u.push('/');
                    u.push_str(&url::form_urlencoded::byte_serialize(n.as_bytes()).collect::<String>());
                }
                ("POST".to_owned(), u, "JSON-RPC/2.0", Vec::new())
            }
        };
        let (status, status_text) = match (&e.http, &e.answer) {
            (Some(h), _) => (h.status.unwrap_or(0), h.error.clone().unwrap_or_default()),
            (None, Some(a)) if a.class.kind == Kind::Error => (500, "JSON-RPC error".to_owned()),
            (None, Some(_)) => (200, "OK".to_owned()),
            (None, None) if e.first.class.kind == Kind::Request => (0, "no answer".to_owned()),
            (None, None) => (202, "Accepted".to_owned()),
        };
        let content_text = if sse {
            e.messages
                .iter()
                .filter(|(_, d, _)| *d == Direction::In)
                .map(|(_, _, raw)| format!("event: message\ndata: {}\n\n", text_of(raw)))
                .collect::<String>()
        } else {
            answer_text.clone().unwrap_or_default()
        };
        let mime = if sse {
            "text/event-stream".to_owned()
        } else {
            e.http
                .as_ref()
                .and_then(|h| header_of(&h.received, "content-type").map(str::to_owned))
                .unwrap_or_else(|| "application/json".into())
        };
        let resp_headers = e.http.as_ref().map(|h| masked(&h.received)).unwrap_or_default();
        let mut mcp = Map::new();
        if let Some(m) = &method {
            mcp.insert("method".into(), json!(m));
        }
        if let Some(id) = e
            .first
            .class
            .id
            .as_ref()
            .or(e.answer.as_ref().and_then(|a| a.class.id.as_ref()))
        {
            mcp.insert("id".into(), id.to_json());
        }
        if let Some(h) = &e.http {
            if let Some(s) = header_of(&h.sent, "mcp-session-id").or(header_of(&h.received, "mcp-session-id")) {
                mcp.insert("sessionId".into(), json!(s));
            }
            if let Some(v) = header_of(&h.sent, "mcp-protocol-version") {
                mcp.insert("protocolVersion".into(), json!(v));
            }
        }
        mcp.insert(
            "direction".into(),
            json!(if e.first.direction == Direction::Out {
                "client"
            } else {
                "server"
            }),
        );
        let mut entry = json!({
            "startedDateTime": self.started(e.at),
            "time": wait_ms,
            "request": {
                "method": req_method,
                "url": url,
                "httpVersion": version,
                "cookies": [],
                "headers": req_headers,
                "queryString": [],
                "postData": {"mimeType": "application/json", "text": request_text},
                "headersSize": -1,
                "bodySize": e.first.raw.len(),
            },
            "response": {
                "status": status,
                "statusText": status_text,
                "httpVersion": version,
                "cookies": [],
                "headers": resp_headers,
                "content": {"size": content_text.len(), "mimeType": mime, "text": content_text},
                "redirectURL": "",
                "headersSize": -1,
                "bodySize": if answer_text.is_some() || sse { content_text.len() as i64 } else { -1 },
            },
            "cache": {},
            "timings": {"send": 0, "wait": wait_ms, "receive": 0},
            "_mcp": mcp,
            "_mcpMessages": messages,
        });
        if let Some(err) = e.http.as_ref().and_then(|h| h.error.as_ref()) {
            entry["response"]["_error"] = json!(err);
        }
        entry
    }

    /// A message the server sent on its own (a notification, or a request
    /// with the client's answer): what was received is the response; over
    /// HTTP it came on an event stream, so the entry is the stream's GET.
    fn server_entry(&self, e: &Entry, http: bool, label: &str, method: Option<&str>, messages: &[Value]) -> Value {
        let received = text_of(&e.first.raw);
        let (url, version, mime, content) = if http {
            (
                self.header.url.clone().unwrap_or_default(),
                "HTTP/1.1",
                "text/event-stream",
                format!("event: message\ndata: {received}\n\n"),
            )
        } else {
            (
                format!("mcp://{label}/{}", method.unwrap_or("message")),
                "JSON-RPC/2.0",
                "application/json",
                received,
            )
        };
        let answer = e.answer.as_ref().map(|a| text_of(&a.raw));
        let mut request = json!({
            "method": "GET",
            "url": url,
            "httpVersion": version,
            "cookies": [],
            "headers": [],
            "queryString": [],
            "headersSize": -1,
            "bodySize": 0,
        });
        // The client's answer to a server request went back as a message of its own.
        if let Some(a) = &answer {
            request["method"] = json!("POST");
            request["postData"] = json!({"mimeType": "application/json", "text": a});
            request["bodySize"] = json!(a.len());
        }
        let mut mcp = Map::new();
        if let Some(m) = method {
            mcp.insert("method".into(), json!(m));
        }
        if let Some(id) = &e.first.class.id {
            mcp.insert("id".into(), id.to_json());
        }
        mcp.insert("direction".into(), json!("server"));
        json!({
            "startedDateTime": self.started(e.at),
            "time": 0,
            "request": request,
            "response": {
                "status": 200,
                "statusText": "sent by the server",
                "httpVersion": version,
                "cookies": [],
                "headers": [],
                "content": {"size": content.len(), "mimeType": mime, "text": content},
                "redirectURL": "",
                "headersSize": -1,
                "bodySize": content.len(),
            },
            "cache": {},
            "timings": {"send": 0, "wait": 0, "receive": 0},
            "_mcp": mcp,
            "_mcpMessages": messages,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::recorder::Recorder;
    use crate::wire::framing::{LineEnding, RawLine};

    fn frames(lines: &[(Direction, &str)]) -> Vec<Event> {
        let mut r = Recorder::new(crate::wire::classify::Limits::default(), std::time::Instant::now());
        lines
            .iter()
            .enumerate()
            .map(|(i, (d, l))| {
                let raw = RawLine {
                    bytes: l.as_bytes().to_vec(),
                    ending: LineEnding::Lf,
                };
                Event::Frame(r.frame_at(*d, raw, Duration::from_millis(i as u64 * 10), None))
            })
            .collect()
    }

    fn har(events: &[Event]) -> Value {
        let header = Header {
            started_unix_ms: 1_764_700_000_000,
            program: "/usr/bin/weather-server".into(),
            ..Header::default()
        };
        let mut w = HarWriter::new(header, "test");
        events.iter().for_each(|e| w.push(e));
        w.finish()
    }

    #[test]
    fn progress_joins_its_request_and_a_server_request_its_answer() {
        use Direction::{In, Out};
        let v = har(&frames(&[
            (
                Out,
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get weather","_meta":{"progressToken":"p1"}}}"#,
            ),
            (
                In,
                r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p1","progress":1}}"#,
            ),
            (In, r#"{"jsonrpc":"2.0","id":"s1","method":"roots/list"}"#),
            (Out, r#"{"jsonrpc":"2.0","id":"s1","result":{"roots":[]}}"#),
            (
                In,
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}"#,
            ),
            (Out, r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#),
        ]));
        let entries = v["log"]["entries"].as_array().unwrap();
        assert_eq!(entries.len(), 3, "{v}");
        let call = &entries[0];
        assert_eq!(call["request"]["url"], "mcp://weather-server/tools/call/get+weather");
        assert_eq!(call["response"]["status"], 500, "a JSON-RPC error");
        assert_eq!(
            call["_mcpMessages"].as_array().unwrap().len(),
            3,
            "request, progress, answer"
        );
        assert_eq!(call["time"], 40.0);
        assert_eq!(call["startedDateTime"], "2025-12-02T18:26:40.000Z");
        let asked = &entries[1];
        assert_eq!(asked["_mcp"]["direction"], "server");
        assert_eq!(
            asked["request"]["postData"]["text"],
            r#"{"jsonrpc":"2.0","id":"s1","result":{"roots":[]}}"#
        );
        assert!(
            asked["response"]["content"]["text"]
                .as_str()
                .unwrap()
                .contains("roots/list")
        );
        assert_eq!(entries[2]["response"]["status"], 0, "never answered");
        assert!(
            v["log"]["comment"]
                .as_str()
                .unwrap()
                .contains("1 request(s) never answered")
        );
    }
}
