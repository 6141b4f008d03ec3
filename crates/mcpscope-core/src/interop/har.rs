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
use std::collections::{BTreeMap, HashMap, VecDeque};
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

/// Entries kept back, oldest first, so that entries come out in the order
/// they began although a later one may be complete first: past this many
/// (or [`IN_ORDER_BYTES`] of their messages), the oldest is written when
/// complete, or set aside until it is (a request never answered holds back
/// nothing but itself).
const IN_ORDER_WINDOW: usize = 4096;
const IN_ORDER_BYTES: usize = 8 << 20;

/// Builds the HAR as events arrive ([`HarWriter::push`]): each entry is
/// handed out ([`HarWriter::ready`]) once it is complete (answered, and over
/// HTTP its exchange seen), so a capture of any length is written with only
/// its open exchanges in memory. [`HarWriter::finish`] hands out the rest.
pub struct HarWriter {
    header: Header,
    tool_version: String,
    http_transport: bool,
    label: String,
    /// Entries not handed out yet, in the order they began: `queue[k]` is
    /// entry number `queue_start + k`.
    queue: VecDeque<Entry>,
    queue_start: u64,
    /// Older entries still open, moved out of the window (see [`IN_ORDER_WINDOW`]).
    parked: BTreeMap<u64, Entry>,
    /// The bytes of the messages of the entries in `queue`.
    queued_bytes: usize,
    /// Entries complete, rendered one by one by [`HarWriter::ready`].
    ready: VecDeque<Ready>,
    /// Requests waiting for their answer: request id → entry number.
    pending: HashMap<RequestId, u64>,
    /// Progress tokens of waiting requests → entry number.
    progress: HashMap<String, u64>,
    /// The server's requests waiting for the client's answer: id → entry number.
    asked: HashMap<RequestId, u64>,
    /// Outgoing messages that are not requests, waiting for the POST that carried them.
    unposted: VecDeque<u64>,
    /// The latest entry begun by the client's message with this id (an HTTP exchange names it).
    by_id: HashMap<RequestId, u64>,
    sessions: usize,
    written: usize,
    unanswered: usize,
}

/// The server as a stdio entry's URL names it: the program's file name.
fn label_of(header: &Header) -> String {
    let program = if header.program.is_empty() {
        header.command_line.split_whitespace().next().unwrap_or("server")
    } else {
        &header.program
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

/// What is ready to be rendered: an exchange the writer put together, or
/// a model turn, whole as recorded.
enum Ready {
    Exchange(Box<Entry>),
    Model(Box<crate::model::record::ModelExchange>),
}

impl HarWriter {
    pub fn new(header: Header, tool_version: &str) -> Self {
        let http_transport = matches!(header.transport.as_str(), "http" | "sse");
        let label = label_of(&header);
        Self {
            header,
            tool_version: tool_version.to_owned(),
            http_transport,
            label,
            queue: VecDeque::new(),
            queue_start: 0,
            parked: BTreeMap::new(),
            queued_bytes: 0,
            ready: VecDeque::new(),
            pending: HashMap::new(),
            progress: HashMap::new(),
            asked: HashMap::new(),
            unposted: VecDeque::new(),
            by_id: HashMap::new(),
            sessions: 1,
            written: 0,
            unanswered: 0,
        }
    }

    fn add(&mut self, f: &Frame) -> u64 {
        let n = self.queue_start + self.queue.len() as u64;
        self.queued_bytes += f.raw.len();
        self.queue.push_back(Entry {
            at: f.at,
            first: f.clone(),
            messages: vec![(f.at, f.direction, f.raw.clone())],
            answer: None,
            http: None,
            open: false,
        });
        if f.direction == Direction::Out
            && let Some(id) = &f.class.id
        {
            self.by_id.insert(id.clone(), n);
        }
        n
    }

    /// Entry `n`, while it is not handed out.
    fn entry_mut(&mut self, n: u64) -> Option<&mut Entry> {
        match n.checked_sub(self.queue_start) {
            Some(k) => self.queue.get_mut(usize::try_from(k).ok()?),
            None => self.parked.get_mut(&n),
        }
    }

    /// Whether nothing more can join the entry: a request answered (and
    /// over HTTP its exchange seen), anything else once it is there.
    fn complete(&self, e: &Entry) -> bool {
        let exchanged = !self.http_transport || e.http.as_ref().is_some_and(|h| h.status.is_some());
        match (e.first.direction, e.first.class.kind) {
            (Direction::Out, Kind::Request) => !e.open && exchanged,
            (Direction::In, Kind::Request) => e.answer.is_some() || e.first.class.id.is_none(),
            (Direction::Out, _) => exchanged,
            (Direction::In, _) => true,
        }
    }

    /// Entry `n` got `f` as one of its messages (and as its answer).
    fn join(&mut self, n: u64, f: &Frame, answer: bool) -> bool {
        let Some(e) = self.entry_mut(n) else {
            return false;
        };
        e.messages.push((f.at, f.direction, f.raw.clone()));
        if answer {
            e.answer = Some(f.clone());
        }
        if n >= self.queue_start {
            self.queued_bytes += f.raw.len();
        }
        true
    }

    /// The bytes of an entry's messages, as `queued_bytes` counts them.
    fn bytes(e: &Entry) -> usize {
        e.messages.iter().map(|(_, _, raw)| raw.len()).sum()
    }

    /// Entry `n` is complete: [`HarWriter::ready`] renders it.
    fn emit(&mut self, n: u64, e: Entry) {
        if e.first.direction == Direction::Out
            && let Some(id) = &e.first.class.id
            && self.by_id.get(id) == Some(&n)
        {
            self.by_id.remove(id);
        }
        self.unanswered += usize::from(e.open);
        self.written += 1;
        self.ready.push_back(Ready::Exchange(Box::new(e)));
    }

    /// Entry `n` changed: one set aside that is now complete goes out.
    fn changed(&mut self, n: u64) {
        if n < self.queue_start
            && self.parked.get(&n).is_some_and(|e| self.complete(e))
            && let Some(e) = self.parked.remove(&n)
        {
            self.emit(n, e);
        }
    }

    /// Hands out the complete entries at the front of the window, and moves
    /// the window on past [`IN_ORDER_WINDOW`].
    fn advance(&mut self) {
        while let Some(front) = self.queue.front() {
            let complete = self.complete(front);
            if !complete && self.queue.len() <= IN_ORDER_WINDOW && self.queued_bytes <= IN_ORDER_BYTES {
                break;
            }
            let Some(e) = self.queue.pop_front() else { break };
            self.queued_bytes -= Self::bytes(&e);
            let n = self.queue_start;
            self.queue_start += 1;
            if complete {
                self.emit(n, e);
            } else {
                self.parked.insert(n, e);
            }
        }
    }

    /// Every entry not handed out yet, in the order they began.
    fn flush(&mut self) {
        for (n, e) in std::mem::take(&mut self.parked) {
            self.emit(n, e);
        }
        self.queued_bytes = 0;
        while let Some(e) = self.queue.pop_front() {
            let n = self.queue_start;
            self.queue_start += 1;
            self.emit(n, e);
        }
    }

    pub fn push(&mut self, ev: &Event) {
        match ev {
            Event::Frame(f) => self.frame(f),
            Event::Http(info) => self.http(info),
            // A model turn is whole when recorded: it is ready at once.
            Event::Model(m) => {
                self.written += 1;
                self.ready.push_back(Ready::Model(m.clone()));
                return;
            }
            _ => return,
        }
        self.advance();
    }

    /// A model turn as the HTTP exchange it was: the request body, the
    /// answer's events as the event stream they came in (the key was only
    /// in headers, which are not recorded).
    fn model_entry(&self, m: &crate::model::record::ModelExchange) -> Value {
        let request = m.request.to_string();
        let stream: String = m
            .events
            .iter()
            .map(|(_, name, data)| match name {
                Some(n) => format!("event: {n}\ndata: {data}\n\n"),
                None => format!("data: {data}\n\n"),
            })
            .collect();
        let total_ms = m.total.as_secs_f64() * 1000.0;
        let wait_ms = m.first_token.map_or(total_ms, |d| d.as_secs_f64() * 1000.0);
        let turn = m.turn();
        json!({
            "startedDateTime": self.started(m.at),
            "time": total_ms,
            "request": {
                "method": "POST",
                "url": m.url,
                "httpVersion": "HTTP/1.1",
                "headers": [{"name": "content-type", "value": "application/json"}],
                "queryString": [],
                "cookies": [],
                "headersSize": -1,
                "bodySize": request.len(),
                "postData": {"mimeType": "application/json", "text": request},
            },
            "response": {
                "status": m.status.unwrap_or(0),
                "statusText": m.error.clone().unwrap_or_default(),
                "httpVersion": "HTTP/1.1",
                "headers": [{"name": "content-type", "value": "text/event-stream"}],
                "cookies": [],
                "content": {"size": stream.len(), "mimeType": "text/event-stream", "text": stream},
                "redirectURL": "",
                "headersSize": -1,
                "bodySize": stream.len(),
            },
            "cache": {},
            "timings": {"send": 0, "wait": wait_ms, "receive": (total_ms - wait_ms).max(0.0)},
            "_model": {
                "provider": m.provider,
                "model": m.model,
                "toolCalls": turn.tool_calls.len(),
                "usage": turn.usage,
                "stopReason": turn.stop_reason,
            },
        })
    }

    /// The entries complete since the last call, in the order they began
    /// (but for one set aside past [`IN_ORDER_WINDOW`]), each rendered as it
    /// is taken (a window's worth at once would be many times its messages).
    pub fn ready(&mut self) -> impl Iterator<Item = Value> + '_ {
        std::iter::from_fn(move || {
            Some(match self.ready.pop_front()? {
                Ready::Exchange(e) => self.entry(&e),
                Ready::Model(m) => self.model_entry(&m),
            })
        })
    }

    /// Another session of an appended capture begins: ids start again.
    pub fn new_session(&mut self) {
        self.sessions += 1;
        // Requests the last session left unanswered stay so; ids are reused from here.
        self.flush();
        self.pending.clear();
        self.progress.clear();
        self.asked.clear();
        self.unposted.clear();
        self.by_id.clear();
    }

    fn frame(&mut self, f: &Frame) {
        let json = || f.json();
        match (f.direction, f.class.kind) {
            (Direction::Out, Kind::Request) => {
                let n = self.add(f);
                if let Some(id) = &f.class.id {
                    self.pending.insert(id.clone(), n);
                    if let Some(e) = self.entry_mut(n) {
                        e.open = true;
                    }
                }
                if let Some(t) = json().and_then(|v| v.pointer("/params/_meta/progressToken").and_then(token_key)) {
                    self.progress.insert(t, n);
                }
            }
            (Direction::In, Kind::Result | Kind::Error) => {
                let waiting = f.class.id.as_ref().and_then(|id| self.pending.remove(id));
                match waiting {
                    Some(n) => {
                        self.join(n, f, true);
                        if let Some(e) = self.entry_mut(n) {
                            e.open = false;
                        }
                        self.progress.retain(|_, v| *v != n);
                        self.changed(n);
                    }
                    None => {
                        self.add(f);
                    }
                }
            }
            (Direction::In, Kind::Notification) => {
                let token = json().and_then(|v| v.pointer("/params/progressToken").and_then(token_key));
                let joined = token
                    .and_then(|t| self.progress.get(&t).copied())
                    .is_some_and(|n| self.join(n, f, false));
                if !joined {
                    self.add(f);
                }
            }
            (Direction::In, Kind::Request) => {
                let n = self.add(f);
                if let Some(id) = &f.class.id {
                    self.asked.insert(id.clone(), n);
                }
            }
            (Direction::Out, Kind::Result | Kind::Error)
                if f.class.id.as_ref().is_some_and(|id| self.asked.contains_key(id)) =>
            {
                let n = f
                    .class
                    .id
                    .as_ref()
                    .and_then(|id| self.asked.remove(id))
                    .unwrap_or_default();
                self.join(n, f, true);
                if self.http_transport {
                    self.unposted.push_back(n);
                }
                self.changed(n);
            }
            (Direction::Out, _) => {
                let n = self.add(f);
                if self.http_transport {
                    self.unposted.push_back(n);
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
            Some(id) => self.by_id.get(id).copied(),
            None => self.unposted.pop_front(),
        };
        if let Some(n) = target {
            if let Some(e) = self.entry_mut(n)
                // The first answer to a POST is the exchange; a retry's is kept if the first failed.
                && e.http.as_ref().is_none_or(|h| h.status.is_none())
            {
                e.http = Some(info.clone());
            }
            self.changed(n);
        }
    }

    /// The capture is over: every entry not handed out yet is ready.
    pub fn finish(&mut self) {
        self.flush();
    }

    /// How many entries were handed out.
    pub fn written(&self) -> usize {
        self.written
    }

    /// The log's comment: what the capture was, and (after
    /// [`HarWriter::finish`]) how many requests went unanswered.
    pub fn comment(&self) -> String {
        let http = self.http_transport;
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
        if self.unanswered > 0 {
            comment.push_str(&format!("; {} request(s) never answered (status 0)", self.unanswered));
        }
        comment
    }

    /// `log.creator`.
    pub fn creator(&self) -> Value {
        json!({"name": "mcpscope", "version": self.tool_version})
    }

    /// The whole HAR document of what was pushed, for a capture small enough
    /// to hold (a large one is written entry by entry: `interop::write_har`).
    pub fn document(mut self) -> Value {
        self.finish();
        let entries: Vec<Value> = self.ready().collect();
        json!({"log": {
            "version": "1.2",
            "creator": self.creator(),
            "comment": self.comment(),
            "entries": entries,
        }})
    }

    fn started(&self, at: Duration) -> String {
        // A capture's header and times are its writer's word: a huge one must not wrap.
        let ms = u64::try_from(at.as_millis()).unwrap_or(u64::MAX);
        crate::text::iso8601_utc_ms(self.header.started_unix_ms.saturating_add(ms))
    }

    fn entry(&self, e: &Entry) -> Value {
        let (http, label) = (self.http_transport, self.label.as_str());
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
        w.document()
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

    #[test]
    fn entries_go_out_as_they_complete_in_the_order_they_began() {
        use Direction::{In, Out};
        let header = Header {
            started_unix_ms: 1_764_700_000_000,
            ..Header::default()
        };
        let mut w = HarWriter::new(header, "test");
        let events = frames(&[
            (
                Out,
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}"#,
            ),
            (Out, r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#),
            (In, r#"{"jsonrpc":"2.0","id":2,"result":{}}"#),
        ]);
        events.iter().for_each(|e| w.push(e));
        assert_eq!(w.ready().count(), 0, "the ping waits for the call that began before it");
        w.push(
            &frames(&[
                (
                    Out,
                    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}"#,
                ),
                (In, r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#),
            ])[1],
        );
        let urls: Vec<Value> = w.ready().map(|e| e["request"]["url"].clone()).collect();
        assert_eq!(urls, ["mcp://server/tools/call/slow", "mcp://server/ping"]);
    }

    #[test]
    fn a_request_never_answered_holds_back_only_itself() {
        use Direction::{In, Out};
        let mut w = HarWriter::new(Header::default(), "test");
        let mut r = Recorder::new(crate::wire::classify::Limits::default(), std::time::Instant::now());
        let mut push = |w: &mut HarWriter, d, line: String| {
            let raw = RawLine {
                bytes: line.into_bytes(),
                ending: LineEnding::Lf,
            };
            w.push(&Event::Frame(r.frame_at(d, raw, Duration::ZERO, None)));
        };
        push(
            &mut w,
            Out,
            r#"{"jsonrpc":"2.0","id":"never","method":"tools/list"}"#.into(),
        );
        let mut out = 0;
        let pairs = IN_ORDER_WINDOW * 2;
        for i in 0..pairs {
            push(&mut w, Out, format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"ping"}}"#));
            push(&mut w, In, format!(r#"{{"jsonrpc":"2.0","id":{i},"result":{{}}}}"#));
            out += w.ready().count();
            assert!(w.queue.len() <= IN_ORDER_WINDOW + 1 && w.parked.len() <= 1);
        }
        assert_eq!(out, pairs, "every answered exchange went out while reading");
        w.finish();
        let rest: Vec<Value> = w.ready().collect();
        assert_eq!(rest.len(), 1);
        assert_eq!(rest[0]["response"]["status"], 0, "the one never answered, at the end");
        assert!(w.comment().contains("1 request(s) never answered"));
    }
}
