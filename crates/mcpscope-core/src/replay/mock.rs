//! The mock server as a state machine: lines in from the client, lines out
//! and log lines, and the time it next needs to be woken. No I/O: the caller
//! owns the pipes and the clock (a `Duration` since it started).

use crate::protocol::era::META_SUBSCRIPTION_ID as SUBSCRIPTION_ID;
use crate::replay::index::{Answer, Exchange, Index, ServerFrame, member_span, with_id};
use crate::replay::matcher::{Exhausted, Matcher, Miss, Nearest, Pick, Rule, canonical, normalise};
use crate::wire::message::RequestId;
use crate::wire::raw_member::{path_span, replaced};
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

/// Error codes of the mock's own errors (JSON-RPC's and the server range).
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const NO_MATCH: i64 = -32602;
pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
/// `--exhausted error`, a request whose answer was never recorded whole.
pub const NOT_SERVED: i64 = -32001;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Timing {
    /// Everything as soon as it can go.
    #[default]
    Fast,
    /// The recorded gaps between frames, divided by `speed`.
    Recorded,
}

#[derive(Clone, Debug)]
pub struct MockOptions {
    pub rule: Rule,
    pub exhausted: Exhausted,
    pub timing: Timing,
    pub speed: f64,
    /// How long a server → client request waits for the client's answer
    /// before the rest of the exchange goes on without it.
    pub reply_timeout: Duration,
    /// Requests without a recorded answer go to a real server instead of
    /// getting an error (record on miss).
    pub fallback: bool,
}

impl Default for MockOptions {
    fn default() -> Self {
        Self {
            rule: Rule::MethodParams,
            exhausted: Exhausted::Repeat,
            timing: Timing::Fast,
            speed: 1.0,
            reply_timeout: Duration::from_secs(10),
            fallback: false,
        }
    }
}

/// What the mock wants done.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    /// One protocol line for the client, without its newline.
    Line(Vec<u8>),
    /// One line for the person running the mock (stderr).
    Log(String),
    /// The oldest request not answered yet gets no answer: the recording has
    /// none. Over stdio nothing is sent (the client waits, as it did); over
    /// HTTP a POST must end somehow, so it gets an error.
    Unanswered,
    /// The oldest request not answered yet was answered as an SSE stream in
    /// the recording (Streamable HTTP); over HTTP it is answered that way
    /// again. Comes before that request's lines.
    Stream,
    /// No recorded answer, and a fallback server is set (`--fallback`): the
    /// owner sends this request there and gives the client its answer under
    /// `id` (the client's own id, as raw JSON).
    Forward {
        method: String,
        params: Option<Value>,
        id: Vec<u8>,
    },
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub served: usize,
    pub unmatched: usize,
    /// Sent to the fallback server.
    pub forwarded: usize,
    pub notifications: usize,
}

enum Step {
    Send {
        line: Vec<u8>,
        delay: Duration,
    },
    Ask {
        frame: ServerFrame,
        delay: Duration,
    },
    Await {
        id: RequestId,
        timeout: Duration,
    },
    /// An [`Output`] other than a line, given in order with the lines.
    Mark(Output),
}

struct Pending {
    method: String,
    recorded: Option<Value>,
}

pub struct Mock {
    /// Shared: the HTTP mock serves each session from its own `Mock`, and the
    /// raw lines of a large capture are not copied for each.
    index: Arc<Index>,
    matcher: Matcher,
    options: MockOptions,
    script: VecDeque<Step>,
    /// When the step at the head of the script became the head.
    head_since: Option<Duration>,
    out: VecDeque<Output>,
    awaiting: HashMap<RequestId, Pending>,
    next_server_id: i64,
    prelude_sent: bool,
    /// The client closed its side: nothing more comes in, so nothing is waited for.
    closed: bool,
    /// Open `subscriptions/listen` streams (2026-07-28): the recorded listen
    /// id (canonical JSON) → the live one (raw), to tag what goes on them.
    subscriptions: HashMap<String, Vec<u8>>,
    /// A listen's recorded graceful close (its only answer), by live id
    /// (canonical JSON): sent when the client cancels it.
    closes: HashMap<String, Vec<u8>>,
    pub stats: Stats,
}

impl Mock {
    pub fn new(index: Index, options: MockOptions) -> Self {
        Self::shared(Arc::new(index), options)
    }

    /// A mock of an index other mocks serve too (one per HTTP session).
    pub fn shared(index: Arc<Index>, options: MockOptions) -> Self {
        let matcher = Matcher::new(&index.exchanges, options.rule, options.exhausted);
        Mock {
            index,
            matcher,
            options,
            script: VecDeque::new(),
            head_since: None,
            out: VecDeque::new(),
            awaiting: HashMap::new(),
            next_server_id: 1,
            prelude_sent: false,
            closed: false,
            subscriptions: HashMap::new(),
            closes: HashMap::new(),
            stats: Stats::default(),
        }
    }

    pub fn index(&self) -> &Index {
        &self.index
    }

    /// One line from the client (without its terminator).
    pub fn on_line(&mut self, line: &[u8], now: Duration) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        match serde_json::from_slice::<Value>(line) {
            Ok(Value::Array(items)) => {
                // Batches were dropped from MCP; each element is answered on its own.
                for item in items {
                    let raw = serde_json::to_vec(&item).unwrap_or_default();
                    self.message(&raw, &item);
                }
            }
            Ok(v) => self.message(line, &v),
            Err(e) => {
                self.log(format!("the client sent a line that is not JSON ({e})"));
                self.send_now(error_line(b"null", PARSE_ERROR, &format!("Parse error: {e}"), None));
            }
        }
        self.on_time(now);
    }

    /// Lets timed steps happen; call at [`Mock::deadline`].
    pub fn on_time(&mut self, now: Duration) {
        loop {
            let since = *self.head_since.get_or_insert(now);
            let Some(step) = self.script.front_mut() else {
                self.head_since = None;
                return;
            };
            match step {
                Step::Send { line, delay } => {
                    if now < since + *delay {
                        return;
                    }
                    let line = std::mem::take(line);
                    self.out.push_back(Output::Line(line));
                }
                Step::Ask { frame, delay } => {
                    if now < since + *delay {
                        return;
                    }
                    let frame = frame.clone();
                    let id = RequestId::Number(self.next_server_id);
                    self.next_server_id += 1;
                    let fresh = id.to_json().to_string();
                    let line = with_id(&frame.raw, fresh.as_bytes()).unwrap_or_else(|| frame.raw.clone());
                    self.out.push_back(Output::Line(line));
                    let recorded = frame.request.and_then(|r| r.reply);
                    self.awaiting.insert(
                        id.clone(),
                        Pending {
                            method: frame.method.clone(),
                            recorded,
                        },
                    );
                    // The server waited for this answer before going on.
                    self.script[0] = Step::Await {
                        id,
                        timeout: self.options.reply_timeout,
                    };
                    self.head_since = Some(now);
                    continue;
                }
                Step::Mark(o) => {
                    let o = std::mem::replace(o, Output::Unanswered);
                    self.out.push_back(o);
                }
                Step::Await { id, timeout } => {
                    if self.awaiting.contains_key(id) && !self.closed {
                        if now < since + *timeout {
                            return;
                        }
                        let (id, ms) = (id.clone(), timeout.as_millis());
                        let method = self.awaiting.remove(&id).map(|p| p.method).unwrap_or_default();
                        self.log(format!(
                            "the client did not answer {method} (id {id}) within {ms} ms: going on without it"
                        ));
                    }
                }
            }
            self.script.pop_front();
            self.head_since = Some(now);
        }
    }

    /// The client closed its side. What is scheduled still goes out (a
    /// client that wrote its requests and closed gets every answer); answers
    /// the mock was waiting for are no longer waited for.
    pub fn on_close(&mut self, now: Duration) {
        self.closed = true;
        self.on_time(now);
    }

    /// When [`Mock::on_time`] should next be called, if anything waits.
    pub fn deadline(&self) -> Option<Duration> {
        let since = self.head_since?;
        match self.script.front()? {
            Step::Send { delay, .. } | Step::Ask { delay, .. } => Some(since + *delay),
            Step::Mark(_) => Some(since),
            Step::Await { timeout, .. } => Some(since + *timeout),
        }
    }

    /// The next thing to do, in order.
    pub fn next_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    fn log(&mut self, text: String) {
        self.out.push_back(Output::Log(text));
    }

    fn send_now(&mut self, line: Vec<u8>) {
        self.script.push_back(Step::Send {
            line,
            delay: Duration::ZERO,
        });
    }

    fn message(&mut self, raw: &[u8], v: &Value) {
        let method = v.get("method").and_then(Value::as_str);
        let id = v.get("id").filter(|i| !i.is_null());
        match (method, id) {
            (Some(m), Some(_)) => {
                let id_raw = member_span(raw, "id")
                    .map(|s| raw[s].to_vec())
                    .unwrap_or_else(|| id.map(Value::to_string).unwrap_or_default().into_bytes());
                self.request(m, v.get("params"), &id_raw);
            }
            (Some("notifications/cancelled"), None) => {
                self.stats.notifications += 1;
                self.cancelled(v);
            }
            // Recorded answers never depend on the client's other notifications.
            (Some(_), None) => self.stats.notifications += 1,
            (None, Some(id)) if v.get("result").is_some() || v.get("error").is_some() => self.client_answer(id, v),
            _ => {
                self.log("the client sent JSON that is not a JSON-RPC message".into());
                let id_raw = id.map_or_else(|| b"null".to_vec(), |i| i.to_string().into_bytes());
                self.send_now(error_line(&id_raw, INVALID_REQUEST, "Invalid Request", None));
            }
        }
    }

    /// A cancelled listen is closed gracefully, as recorded (over stdio the
    /// client cancels with a notification; over HTTP it drops the stream).
    fn cancelled(&mut self, v: &Value) {
        let Some(request) = v.pointer("/params/requestId") else {
            return;
        };
        let live = request.to_string();
        self.subscriptions.retain(|_, l| canonical_id(l) != live);
        if let Some(close) = self.closes.remove(&live) {
            let line = with_subscription_id(&close, live.as_bytes()).unwrap_or(close);
            let line = with_id(&line, live.as_bytes()).unwrap_or(line);
            self.send_now(line);
        }
    }

    /// The client of a listen (its raw id) left without cancelling it (over
    /// HTTP, dropping the stream is the cancel): nothing more is tagged for it.
    pub fn on_gone(&mut self, id: &[u8]) {
        let live = canonical_id(id);
        self.subscriptions.retain(|_, l| canonical_id(l) != live);
        self.closes.remove(&live);
    }

    fn client_answer(&mut self, id: &Value, v: &Value) {
        let Some(pending) = RequestId::from_json(id).and_then(|id| self.awaiting.remove(&id)) else {
            self.log(format!("the client answered id {id}, which the mock did not ask"));
            return;
        };
        let Some(recorded) = pending.recorded else {
            return;
        };
        let part = |x: &Value| {
            let body = x.get("result").or_else(|| x.get("error")).cloned();
            canonical(&normalise(body.as_ref()))
        };
        if part(&recorded) != part(v) {
            self.log(format!(
                "the client answered {} differently from the recording: got {}, recorded {}",
                pending.method,
                crate::text::shorten(&part(v), 200),
                crate::text::shorten(&part(&recorded), 200)
            ));
        }
    }

    fn request(&mut self, method: &str, params: Option<&Value>, id: &[u8]) {
        match self.matcher.pick(&self.index.exchanges, method, params) {
            Pick::Serve { exchange, lenient } => {
                if lenient {
                    self.log(format!(
                        "{method}: the params differ from the recording's; served the recorded answer"
                    ));
                }
                self.serve(exchange, id, params);
            }
            Pick::Exhausted { exchange, served } => {
                self.stats.unmatched += 1;
                let ex = &self.index.exchanges[exchange];
                let text = format!(
                    "{method} {}: its {served} recorded answer(s) were all served (--exhausted error)",
                    show(params)
                );
                let data = json!({"asked": {"method": method, "params": params}, "recorded_seq": ex.seq});
                self.log(text.clone());
                self.send_now(error_line(id, NOT_SERVED, &text, Some(data)));
            }
            Pick::Miss(_) if method == "ping" => {
                // A liveness check needs no recording: every server must answer it.
                self.stats.served += 1;
                self.send_now(result_line(id, "{}"));
            }
            Pick::Miss(_) if method == "logging/setLevel" && self.index.advertises("logging") => {
                // Housekeeping a client sends on its own (the Inspector does,
                // at once) to a server that offers logging: its answer is
                // always empty. The recorded log messages are sent as recorded.
                self.stats.served += 1;
                self.log(format!(
                    "logging/setLevel {}: not recorded; answered {{}} (the server advertised logging)",
                    show(params)
                ));
                self.send_now(result_line(id, "{}"));
            }
            Pick::Miss(miss) => self.unmatched(method, params, id, &miss),
        }
    }

    fn unmatched(&mut self, method: &str, params: Option<&Value>, id: &[u8], miss: &Miss) {
        if self.options.fallback {
            self.stats.forwarded += 1;
            self.script.push_back(Step::Mark(Output::Forward {
                method: method.to_owned(),
                params: params.cloned(),
                id: id.to_vec(),
            }));
            return;
        }
        self.stats.unmatched += 1;
        let nearest = match &miss.nearest {
            Some(Nearest::Exchange(i)) => {
                let e = &self.index.exchanges[*i];
                format!("{} {} (seq {})", e.method, show(e.params().as_ref()), e.seq)
            }
            Some(Nearest::Method(m)) => format!("a {m} request"),
            None => {
                let mut methods: Vec<&str> = self.index.exchanges.iter().map(|e| e.method.as_str()).collect();
                methods.sort_unstable();
                methods.dedup();
                format!("none like it (recorded: {})", methods.join(", "))
            }
        };
        let mut text = format!("no recorded answer for {method} {}", show(params));
        if let Some(note) = &miss.note {
            text.push_str(&format!(" ({note})"));
        }
        text.push_str(&format!("; nearest recorded: {nearest}"));
        let code = if miss.method_known { NO_MATCH } else { METHOD_NOT_FOUND };
        let data = json!({"asked": {"method": method, "params": params}, "nearest": nearest});
        let message = format!("mcpscope mock: {text}");
        self.log(text);
        self.send_now(error_line(id, code, &message, Some(data)));
    }

    fn serve(&mut self, i: usize, id: &[u8], live_params: Option<&Value>) {
        let speed = if self.options.speed > 0.0 {
            self.options.speed
        } else {
            1.0
        };
        let recorded = self.options.timing == Timing::Recorded;
        let gap = |from: Duration, to: Duration| {
            if recorded {
                crate::duration::at_speed(to.saturating_sub(from), speed)
            } else {
                Duration::ZERO
            }
        };
        let params = self.index.exchanges[i].params();
        let Exchange {
            at,
            method,
            answer,
            during,
            after,
            seq,
            sse,
            ..
        } = self.index.exchanges[i].clone();
        if sse {
            self.script.push_back(Step::Mark(Output::Stream));
        }
        let token = |p: Option<&Value>| {
            p.and_then(|p| p.get("_meta"))
                .and_then(|m| m.get("progressToken"))
                .cloned()
        };
        let (recorded_token, live_token) = (token(params.as_ref()), token(live_params));
        let listen = method == "subscriptions/listen";
        if listen {
            // What the server tags with the recorded listen's id goes on this live one.
            let recorded_id = member_span(&self.index.exchanges[i].request, "id")
                .and_then(|s| serde_json::from_slice::<Value>(&self.index.exchanges[i].request[s]).ok());
            if let Some(r) = recorded_id {
                self.subscriptions.insert(r.to_string(), id.to_vec());
            }
        }
        let mut last = at;
        for mut f in during {
            // Progress is about the live request: it carries the live token, and
            // a client that asked for none gets none.
            if f.method == "notifications/progress"
                && let Some(rt) = &recorded_token
                && progress_token_of(&f.raw).as_ref() == Some(rt)
            {
                match &live_token {
                    Some(lt) => match with_progress_token(&f.raw, lt.to_string().as_bytes()) {
                        Some(raw) => f.raw = raw,
                        None => continue,
                    },
                    None => continue,
                }
            }
            let delay = gap(last, f.at);
            last = f.at;
            self.push_server_frame(f, delay);
        }
        match answer {
            // A listen stays open until the client ends it; its recorded
            // answer is the graceful close, sent then (a close that was the
            // session ending, an error, is not replayed).
            Answer::Recorded { raw, .. } if listen => {
                self.stats.served += 1;
                if member_span(&raw, "result").is_some() {
                    self.closes.insert(canonical_id(id), raw);
                }
            }
            Answer::Never if listen => self.stats.served += 1,
            Answer::Recorded { at, raw } => {
                self.stats.served += 1;
                let delay = gap(last, at);
                last = at;
                let line = with_id(&raw, id).unwrap_or(raw);
                self.script.push_back(Step::Send { line, delay });
            }
            Answer::Never => {
                self.stats.unmatched += 1;
                self.log(format!(
                    "{method}: the recorded request (seq {seq}) was never answered, so neither is this one"
                ));
                self.script.push_back(Step::Mark(Output::Unanswered));
            }
            Answer::Cut { bytes, pieces } => {
                self.stats.unmatched += 1;
                let text = format!(
                    "{method}: the recorded answer (to seq {seq}) was {bytes} bytes, recorded in {pieces} pieces over the line cap: not served"
                );
                self.log(text.clone());
                self.send_now(error_line(id, NOT_SERVED, &text, None));
            }
        }
        for f in after {
            let delay = gap(last, f.at);
            last = f.at;
            self.push_server_frame(f, delay);
        }
        if !self.prelude_sent {
            self.prelude_sent = true;
            for f in self.index.prelude.clone() {
                self.push_server_frame(f, Duration::ZERO);
            }
        }
    }

    fn push_server_frame(&mut self, mut frame: ServerFrame, delay: Duration) {
        if let Some(recorded) = subscription_id_of(&frame.raw) {
            // Notifications of a subscription go on the live listen that
            // stands for it; without one the client never asked for them.
            match self.subscriptions.get(&recorded.to_string()) {
                Some(live) => {
                    if let Some(raw) = with_subscription_id(&frame.raw, live) {
                        frame.raw = raw;
                    }
                }
                None => {
                    self.log(format!(
                        "{}: not sent, it belongs to a subscription (listen {recorded}) the client has not opened",
                        frame.method
                    ));
                    return;
                }
            }
        }
        if frame.request.is_some() {
            self.script.push_back(Step::Ask { frame, delay });
        } else {
            self.script.push_back(Step::Send { line: frame.raw, delay });
        }
    }
}

/// The listen a server message belongs to: `_meta`'s subscription id, in
/// `params` (notifications) or `result` (a listen's close).
fn subscription_id_of(raw: &[u8]) -> Option<Value> {
    serde_json::from_slice(&raw[subscription_span(raw)?]).ok()
}

/// Where a server message's subscription id lies (a notification's
/// `params._meta`, a listen's close in `result._meta`).
pub(crate) fn subscription_span(raw: &[u8]) -> Option<std::ops::Range<usize>> {
    path_span(raw, &["params", "_meta", SUBSCRIPTION_ID])
        .or_else(|| path_span(raw, &["result", "_meta", SUBSCRIPTION_ID]))
}

/// The message with its subscription id replaced, every other byte kept.
fn with_subscription_id(raw: &[u8], id: &[u8]) -> Option<Vec<u8>> {
    Some(replaced(raw, subscription_span(raw)?, id))
}

/// An id's raw JSON as a key: `"a"` and ` "a" ` are the same.
fn canonical_id(raw: &[u8]) -> String {
    serde_json::from_slice::<Value>(raw).map_or_else(|_| String::from_utf8_lossy(raw).into_owned(), |v| v.to_string())
}

fn progress_token_of(raw: &[u8]) -> Option<Value> {
    serde_json::from_slice::<Value>(raw)
        .ok()?
        .get("params")?
        .get("progressToken")
        .cloned()
}

/// The notification with `params.progressToken` replaced, every other byte kept.
fn with_progress_token(raw: &[u8], token: &[u8]) -> Option<Vec<u8>> {
    Some(replaced(raw, path_span(raw, &["params", "progressToken"])?, token))
}

fn show(params: Option<&Value>) -> String {
    let p = normalise(params);
    crate::text::shorten(&canonical(&p), 200)
}

fn result_line(id: &[u8], result: &str) -> Vec<u8> {
    let mut line = br#"{"jsonrpc":"2.0","id":"#.to_vec();
    line.extend_from_slice(id);
    line.extend_from_slice(br#","result":"#);
    line.extend_from_slice(result.as_bytes());
    line.push(b'}');
    line
}

fn error_line(id: &[u8], code: i64, message: &str, data: Option<Value>) -> Vec<u8> {
    let mut error = json!({"code": code, "message": message});
    if let Some(d) = data {
        error["data"] = d;
    }
    let mut line = br#"{"jsonrpc":"2.0","id":"#.to_vec();
    line.extend_from_slice(id);
    line.extend_from_slice(br#","error":"#);
    line.extend_from_slice(error.to_string().as_bytes());
    line.push(b'}');
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::replay::Replay;
    use crate::wire::frame::Direction::{self, In, Out};

    const SESSION: &[(Direction, &str)] = &[
        (
            Out,
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"a"}}}"#,
        ),
        (In, r#"{"jsonrpc":"2.0","id":1,"result":{"serverInfo":{"name":"s"}}}"#),
        (Out, r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
        (
            Out,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":7}}}"#,
        ),
        (
            In,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1}}"#,
        ),
        (In, r#"{"jsonrpc":"2.0","id":0,"method":"roots/list"}"#),
        (Out, r#"{"jsonrpc":"2.0","id":0,"result":{"roots":[]}}"#),
        (In, r#"{"jsonrpc":"2.0","id":2,"result":{"z":1,"a":"done"}}"#),
        (In, r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#),
    ];

    fn mock(options: MockOptions) -> Mock {
        let mut r = Replay::new().with_step(Duration::from_millis(10));
        for (d, l) in SESSION {
            r.line(*d, l.as_bytes());
        }
        Mock::new(Index::build(r.events()), options)
    }

    fn drain(m: &mut Mock) -> (Vec<String>, Vec<String>) {
        let (mut lines, mut logs) = (vec![], vec![]);
        while let Some(o) = m.next_output() {
            match o {
                Output::Line(l) => lines.push(String::from_utf8(l).unwrap()),
                Output::Log(l) => logs.push(l),
                Output::Forward { method, id, .. } => {
                    lines.push(format!("forward {method} {}", String::from_utf8_lossy(&id)))
                }
                Output::Unanswered | Output::Stream => {}
            }
        }
        (lines, logs)
    }

    #[test]
    fn with_a_fallback_a_miss_is_forwarded_in_order_not_refused() {
        let mut m = mock(MockOptions {
            fallback: true,
            ..MockOptions::default()
        });
        m.on_line(br#"{"jsonrpc":"2.0","id":"x","method":"tools/never"}"#, Duration::ZERO);
        let (lines, _) = drain(&mut m);
        assert_eq!(lines, [r#"forward tools/never "x""#]);
        assert_eq!((m.stats.forwarded, m.stats.unmatched), (1, 0));
    }

    #[test]
    fn answers_carry_the_live_id_and_server_traffic_is_replayed_in_place() {
        let mut m = mock(MockOptions::default());
        let t = Duration::ZERO;
        m.on_line(
            br#"{"jsonrpc":"2.0","id":"x","method":"initialize","params":{"clientInfo":{"name":"b"}}}"#,
            t,
        );
        let (lines, logs) = drain(&mut m);
        assert_eq!(
            lines,
            [r#"{"jsonrpc":"2.0","id":"x","result":{"serverInfo":{"name":"s"}}}"#]
        );
        assert_eq!(logs.len(), 1, "lenient handshake is said once: {logs:?}");
        m.on_line(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, t);
        m.on_line(
            br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"_meta":{"progressToken":"p"},"name":"slow"}}"#,
            t,
        );
        let (lines, _) = drain(&mut m);
        assert_eq!(lines.len(), 2, "progress, then the server's request: {lines:?}");
        assert_eq!(
            lines[0],
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}"#,
            "the live request's progress token"
        );
        assert_eq!(lines[1], r#"{"jsonrpc":"2.0","id":1,"method":"roots/list"}"#);
        assert!(m.deadline().is_some(), "waits for the client's answer");
        m.on_line(
            br#"{"jsonrpc":"2.0","id":1,"result":{"roots":[{"uri":"file:///x"}]}}"#,
            t,
        );
        let (lines, logs) = drain(&mut m);
        assert_eq!(
            lines,
            [
                r#"{"jsonrpc":"2.0","id":5,"result":{"z":1,"a":"done"}}"#,
                r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#
            ]
        );
        assert_eq!(logs.len(), 1, "a different answer to roots/list is reported: {logs:?}");
        assert!(logs[0].contains("roots/list"));
        assert_eq!(m.stats.served, 2);
        assert_eq!(m.stats.notifications, 1);
    }

    #[test]
    fn an_unanswered_server_request_times_out_and_the_exchange_goes_on() {
        let mut m = mock(MockOptions::default());
        m.on_line(
            br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow"}}"#,
            Duration::ZERO,
        );
        let (lines, _) = drain(&mut m);
        assert_eq!(lines.len(), 1, "no progress without a progress token: {lines:?}");
        let d = m.deadline().unwrap();
        assert_eq!(d, Duration::from_secs(10));
        m.on_time(d);
        let (lines, logs) = drain(&mut m);
        assert_eq!(lines.len(), 2);
        assert!(logs[0].contains("did not answer roots/list"));
        assert_eq!(m.deadline(), None);
    }

    #[test]
    fn a_closed_client_stops_the_waiting_but_not_the_sending() {
        let mut m = mock(MockOptions::default());
        m.on_line(
            br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow"}}"#,
            Duration::ZERO,
        );
        assert_eq!(drain(&mut m).0.len(), 1);
        m.on_close(Duration::ZERO);
        let (lines, logs) = drain(&mut m);
        assert_eq!(lines.len(), 2, "the answer and list_changed: {lines:?}");
        assert!(logs.is_empty());
        assert_eq!(m.deadline(), None);
    }

    #[test]
    fn unmatched_requests_get_an_error_naming_the_nearest() {
        let mut m = mock(MockOptions::default());
        m.on_line(
            br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"fast"}}"#,
            Duration::ZERO,
        );
        let (lines, logs) = drain(&mut m);
        let v: Value = serde_json::from_str(&lines[0]).unwrap();
        assert_eq!(v["id"], 9);
        assert_eq!(v["error"]["code"], NO_MATCH);
        let msg = v["error"]["message"].as_str().unwrap();
        assert!(
            msg.contains(r#"tools/call {"name":"fast"}"#) && msg.contains(r#"{"name":"slow"}"#),
            "{msg}"
        );
        assert_eq!(logs.len(), 1);
        m.on_line(br#"{"jsonrpc":"2.0","id":10,"method":"tools/lis"}"#, Duration::ZERO);
        let (lines, _) = drain(&mut m);
        assert!(
            lines[0].contains("-32601") && lines[0].contains("tools/call"),
            "{}",
            lines[0]
        );
        m.on_line(b"garbage", Duration::ZERO);
        let (lines, _) = drain(&mut m);
        assert!(lines[0].contains("-32700") && lines[0].contains(r#""id":null"#));
        m.on_line(br#"{"jsonrpc":"2.0","id":11,"method":"ping"}"#, Duration::ZERO);
        assert_eq!(drain(&mut m).0, [r#"{"jsonrpc":"2.0","id":11,"result":{}}"#]);
    }

    #[test]
    fn logging_set_level_is_answered_only_for_a_server_that_advertised_logging() {
        let set_level = br#"{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"debug"}}"#;
        let mut m = mock(MockOptions::default());
        m.on_line(set_level, Duration::ZERO);
        assert!(
            drain(&mut m).0[0].contains("-32601"),
            "the recorded server offered no logging"
        );

        let mut r = Replay::new();
        r.line(Out, SESSION[0].1.as_bytes());
        r.line(
            In,
            br#"{"jsonrpc":"2.0","id":1,"result":{"capabilities":{"logging":{}},"serverInfo":{"name":"s"}}}"#,
        );
        let mut m = Mock::new(Index::build(r.events()), MockOptions::default());
        m.on_line(set_level, Duration::ZERO);
        let (lines, logs) = drain(&mut m);
        assert_eq!(lines, [r#"{"jsonrpc":"2.0","id":3,"result":{}}"#]);
        assert!(logs[0].contains("not recorded"), "{logs:?}");
    }

    /// 2026-07-28: a listen stays open; what the server tagged with the
    /// recorded listen's id carries the live one; the recorded graceful close
    /// comes when the client cancels.
    #[test]
    fn a_listen_stays_open_takes_its_tagged_notifications_and_closes_on_cancel() {
        let meta = |id: &str| format!(r#""_meta":{{"io.modelcontextprotocol/subscriptionId":"{id}"}}"#);
        let lines = [
            (Out, r#"{"jsonrpc":"2.0","id":"L1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}"#.to_owned()),
            (In, format!(r#"{{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{{{}}}}}"#, meta("L1"))),
            (Out, r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"touch"}}"#.to_owned()),
            (In, format!(r#"{{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{{{}}}}}"#, meta("L1"))),
            (In, r#"{"jsonrpc":"2.0","id":2,"result":{"content":[]}}"#.to_owned()),
            (In, format!(r#"{{"jsonrpc":"2.0","id":"L1","result":{{{}}}}}"#, meta("L1"))),
        ];
        let mut r = Replay::new();
        for (d, l) in &lines {
            r.line(*d, l.as_bytes());
        }
        let index = Index::build(r.events());

        // A client that calls without listening gets no tagged notification.
        let mut m = Mock::new(index.clone(), MockOptions::default());
        m.on_line(lines[2].1.as_bytes(), Duration::ZERO);
        let (sent, logs) = drain(&mut m);
        assert_eq!(sent, [r#"{"jsonrpc":"2.0","id":2,"result":{"content":[]}}"#]);
        assert!(logs[0].contains("has not opened"), "{logs:?}");

        let mut m = Mock::new(index, MockOptions::default());
        m.on_line(
            br#"{"jsonrpc":"2.0","id":"L9","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}"#,
            Duration::ZERO,
        );
        let (sent, _) = drain(&mut m);
        assert_eq!(
            sent,
            [format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{{{}}}}}"#,
                meta("L9")
            )],
            "the ack, and no answer: the listen stays open"
        );
        m.on_line(lines[2].1.as_bytes(), Duration::ZERO);
        let (sent, _) = drain(&mut m);
        assert_eq!(
            sent,
            [
                format!(
                    r#"{{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{{{}}}}}"#,
                    meta("L9")
                ),
                r#"{"jsonrpc":"2.0","id":2,"result":{"content":[]}}"#.to_owned(),
            ]
        );
        m.on_line(
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"L9"}}"#,
            Duration::ZERO,
        );
        let (sent, _) = drain(&mut m);
        assert_eq!(
            sent,
            [format!(r#"{{"jsonrpc":"2.0","id":"L9","result":{{{}}}}}"#, meta("L9"))]
        );
    }

    #[test]
    fn recorded_timing_waits_the_recorded_gaps_scaled_by_speed() {
        let mut m = mock(MockOptions {
            timing: Timing::Recorded,
            speed: 2.0,
            ..MockOptions::default()
        });
        let t0 = Duration::from_secs(1);
        m.on_line(
            br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"a"}}}"#,
            t0,
        );
        assert!(drain(&mut m).0.is_empty());
        // Recorded 10 ms apart, served at speed 2: 5 ms.
        assert_eq!(m.deadline(), Some(t0 + Duration::from_millis(5)));
        m.on_time(t0 + Duration::from_millis(5));
        assert_eq!(drain(&mut m).0.len(), 1);
    }

    #[test]
    fn exhausted_error_and_repeats() {
        let mut m = mock(MockOptions {
            exhausted: Exhausted::Error,
            ..MockOptions::default()
        });
        let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"a"}}}"#;
        m.on_line(init, Duration::ZERO);
        m.on_line(init, Duration::ZERO);
        let (lines, _) = drain(&mut m);
        assert!(lines[0].contains("result"));
        assert!(lines[1].contains(&NOT_SERVED.to_string()), "{}", lines[1]);
    }

    #[test]
    fn an_unanswered_or_streamed_recording_is_marked_in_order_with_the_lines() {
        let r = Replay::of(&[
            (Out, r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
            (In, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
            (Out, r#"{"jsonrpc":"2.0","id":2,"method":"tools/call"}"#),
        ]);
        let mut index = Index::build(r.events());
        index.exchanges[0].sse = true;
        let mut m = Mock::new(index, MockOptions::default());
        m.on_line(br#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#, Duration::ZERO);
        m.on_line(br#"{"jsonrpc":"2.0","id":8,"method":"tools/call"}"#, Duration::ZERO);
        let mut seen = vec![];
        while let Some(o) = m.next_output() {
            seen.push(match o {
                Output::Line(_) => "line",
                Output::Log(_) => "log",
                Output::Unanswered => "unanswered",
                Output::Stream => "stream",
                Output::Forward { .. } => "forward",
            });
        }
        assert_eq!(seen, ["stream", "line", "log", "unanswered"]);
    }
}
