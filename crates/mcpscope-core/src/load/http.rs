//! The Streamable HTTP load engine: every session is one keep-alive
//! connection driven by a task on a single-threaded tokio runtime (the
//! generator uses at most one core, as its figures claim). Requests are
//! written whole; answers are read with `httparse` (the head) and the
//! listeners' chunked decoder, and their JSON-RPC message found in a JSON
//! body or an event stream (`wire::sse`). A legacy
//! session shakes hands first (`initialize`, its `Mcp-Session-Id`,
//! `notifications/initialized`); a 2026-07-28 one sends the envelope and
//! the standard headers with every request instead.

use crate::listen::chunked::{ChunkError, Piece, next_piece};
use crate::load::plan::{RequestSpec, Timetable};
use crate::load::stats::{Outcome, Stats};
use crate::protocol::era::Envelope;
use serde_json::{Value, json};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// The biggest answer read (a bigger one is a transport failure, said).
const MAX_BODY: usize = 16 << 20;

/// Which handshake the sessions make.
#[derive(Clone, Debug)]
pub enum SessionKind {
    /// `initialize` with this version, then `notifications/initialized`.
    Legacy { protocol_version: String },
    /// No handshake: the envelope on every request (2026-07-28).
    Modern { envelope: Envelope },
}

/// A run over plain http: the plan, and what the engine needs of its target.
#[derive(Clone)]
pub struct HttpPlan {
    pub load: crate::load::LoadPlan,
    /// The MCP endpoint (http://; https goes through the session engine).
    pub url: String,
    /// Sent with every request (a bearer token from a sign-in made once).
    pub headers: Vec<(String, String)>,
    pub kind: SessionKind,
}

/// What happens to sampled sessions (both engines).
#[derive(Clone, Debug, Default)]
pub struct Sampling {
    pub capture_dir: Option<std::path::PathBuf>,
    pub sample_every: usize,
    pub otlp_endpoint: Option<String>,
}

impl Sampling {
    pub fn sampled(&self, index: usize) -> bool {
        self.sample_every > 0 && index.is_multiple_of(self.sample_every)
    }
}

/// A session's record: its capture (kept if sampled or failed) and its
/// traces (sampled sessions only).
struct SessionRecord {
    recorder: crate::transport::recorder::Recorder,
    path: Option<std::path::PathBuf>,
    keep: bool,
    _traces: Option<crate::interop::otlp_live::LiveExport>,
}

impl SessionRecord {
    fn open(run: &Run, index: usize) -> Option<SessionRecord> {
        let sampled = run.plan.load.sampling.sampled(index);
        let target = crate::transport::target::Target::Http(crate::transport::target::HttpTarget::streamable(
            run.plan.url.clone(),
        ));
        let header = crate::record::capture::Header::for_target(&target, "load");
        let traces = match (&run.plan.load.sampling.otlp_endpoint, sampled) {
            (Some(e), true) => crate::interop::otlp_live::LiveExport::start(
                e,
                header.clone(),
                env!("CARGO_PKG_VERSION"),
                crate::interop::otlp_live::interval_from_env(),
                std::sync::Arc::clone(&run.otlp_report),
            )
            .ok(),
            _ => None,
        };
        let path = run
            .plan
            .load
            .sampling
            .capture_dir
            .as_ref()
            .map(|d| d.join(format!("session-{:04}.jsonl", index + 1)));
        if path.is_none() && traces.is_none() {
            return None;
        }
        let mut recorder =
            crate::transport::recorder::Recorder::new(crate::wire::classify::Limits::default(), run.start.into_std())
                .with_tap(traces.as_ref().map(crate::interop::otlp_live::LiveExport::tap));
        if let Some(p) = &path
            && let Ok(w) = crate::record::capture::Writer::open(p, &header)
        {
            recorder = recorder.with_capture(Box::new(w));
        }
        Some(SessionRecord {
            recorder,
            path,
            keep: sampled,
            _traces: traces,
        })
    }

    fn line(&mut self, direction: crate::wire::frame::Direction, bytes: &[u8]) {
        let raw = crate::wire::framing::RawLine {
            bytes: bytes.to_vec(),
            ending: crate::wire::framing::LineEnding::Lf,
        };
        let at = self.recorder.now();
        let frame = self.recorder.frame_at(direction, raw, at, None);
        self.recorder.capture(&crate::transport::event::Event::Frame(frame));
    }

    fn end(mut self, run: &Run) {
        let _ = self.recorder.flush();
        match self.path.take() {
            Some(p) if self.keep => run.kept.borrow_mut().push(p),
            Some(p) => {
                let _ = std::fs::remove_file(p);
            }
            None => {}
        }
    }
}

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
pub enum HttpLoadError {
    #[error("{0} is not an http:// URL with a host (https goes through the session engine)")]
    NotPlainHttp(String),
    #[error("cannot start the generator's runtime")]
    Runtime(#[source] std::io::Error),
}

/// Shared by the tasks of one run (one thread: no locks).
struct Run {
    plan: HttpPlan,
    start: Instant,
    end: Option<Instant>,
    stats: RefCell<Stats>,
    issued: Cell<u64>,
    next_id: Cell<u64>,
    timetable: Option<Timetable>,
    stop: Arc<AtomicBool>,
    host_header: String,
    path: String,
    addr: String,
    kept: RefCell<Vec<std::path::PathBuf>>,
    /// Sessions that could not start (connect, or shake hands), and why.
    failed: RefCell<Vec<String>>,
    otlp_report: crate::interop::otlp_live::Report,
    /// A session ended: the watcher looks at once, not at its next tick.
    ended: tokio::sync::Notify,
}

impl Run {
    fn over(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || self.end.is_some_and(|e| Instant::now() >= e)
    }

    /// The next send: when it was due, or None when the run is over.
    async fn next_slot(&self) -> Option<Instant> {
        if self.over() {
            return None;
        }
        let k = self.issued.get();
        if self.plan.load.requests.is_some_and(|max| k >= max) {
            return None;
        }
        self.issued.set(k + 1);
        let Some(t) = &self.timetable else {
            return Some(Instant::now());
        };
        let due = self.start + t.due(k);
        if self.end.is_some_and(|e| due >= e) {
            return None;
        }
        let now = Instant::now();
        if due > now {
            tokio::time::sleep_until(due).await;
            // Woken late with the connection free: the generator's own lag.
            self.stats.borrow_mut().record_lateness(Instant::now() - due);
        }
        Some(due)
    }
}

/// Runs the plan on this thread; `progress` is called about once a second
/// with the figures so far and the time since the start.
/// What a run measured, and the captures it kept.
pub struct HttpRun {
    pub stats: Stats,
    pub elapsed: Duration,
    pub captures: Vec<std::path::PathBuf>,
    /// Sessions that could not start, and why (as the session engine's).
    pub failed_sessions: Vec<String>,
}

pub fn run(
    plan: HttpPlan,
    stop: Arc<AtomicBool>,
    otlp_report: crate::interop::otlp_live::Report,
    mut progress: impl FnMut(&Stats, Duration),
) -> Result<HttpRun, HttpLoadError> {
    let url = url::Url::parse(&plan.url).map_err(|_| HttpLoadError::NotPlainHttp(plan.url.clone()))?;
    let host = url.host_str().filter(|_| url.scheme() == "http");
    let Some(host) = host else {
        return Err(HttpLoadError::NotPlainHttp(url.to_string()));
    };
    let port = url.port_or_known_default().unwrap_or(80);
    let host_header = match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_owned(),
    };
    let addr = format!("{}:{port}", host.trim_start_matches('[').trim_end_matches(']'));
    let path = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_owned(),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(HttpLoadError::Runtime)?;
    let local = tokio::task::LocalSet::new();
    let outcome = local.block_on(&rt, async move {
        let start = Instant::now();
        let run_for = plan
            .load
            .duration
            .or_else(|| plan.load.ramp.map(|r| r.over))
            .map(|d| d + plan.load.warmup);
        let run = Rc::new(Run {
            timetable: plan.load.rate.map(Timetable::new),
            stats: RefCell::new(Stats::new(plan.load.warmup)),
            end: run_for.map(|d| start + d),
            plan,
            start,
            issued: Cell::new(0),
            next_id: Cell::new(1),
            stop,
            host_header,
            path,
            addr,
            kept: RefCell::new(Vec::new()),
            failed: RefCell::new(Vec::new()),
            otlp_report,
            ended: tokio::sync::Notify::new(),
        });
        let steps: Vec<(Duration, usize)> = match run.plan.load.ramp {
            Some(r) => r.steps(),
            None => vec![(Duration::ZERO, run.plan.load.sessions.max(1))],
        };
        run.stats.borrow_mut().set_levels(steps.clone());
        let mut tasks = Vec::new();
        let mut running = 0;
        let mut next_tick = start + Duration::from_secs(1);
        let mut steps = steps.into_iter().peekable();
        loop {
            while let Some((at, level)) = steps.peek().copied() {
                if Instant::now() < start + at {
                    break;
                }
                steps.next();
                while running < level {
                    tasks.push(tokio::task::spawn_local(session(Rc::clone(&run), running)));
                    running += 1;
                }
            }
            let all_done = tasks.iter().all(|t: &tokio::task::JoinHandle<()>| t.is_finished());
            if all_done && steps.peek().is_none() {
                break;
            }
            if Instant::now() >= next_tick {
                progress(&run.stats.borrow(), start.elapsed());
                next_tick += Duration::from_secs(1);
            }
            // The sessions run meanwhile; this task only watches the clock,
            // and the end of the last session: waiting out a tick after it
            // counted up to 20 ms into the run's time (and its rate).
            let _ = tokio::time::timeout(Duration::from_millis(20), run.ended.notified()).await;
        }
        for t in tasks {
            let _ = t.await;
        }
        let elapsed = start.elapsed();
        let run = Rc::try_unwrap(run).unwrap_or_else(|_| unreachable!("every task has ended"));
        HttpRun {
            stats: run.stats.into_inner(),
            elapsed,
            captures: run.kept.into_inner(),
            failed_sessions: run.failed.into_inner(),
        }
    });
    Ok(outcome)
}

/// One session: connect (again after a failure), shake hands, send until the run is over.
async fn session(run: Rc<Run>, index: usize) {
    let mut record = SessionRecord::open(&run, index);
    session_requests(&run, index, &mut record).await;
    if let Some(r) = record {
        r.end(&run);
    }
    run.ended.notify_one();
}

async fn session_requests(run: &Rc<Run>, index: usize, record: &mut Option<SessionRecord>) {
    let mut workload = run.plan.load.workload.picker();
    let mut started = false;
    'connect: while !run.over() {
        let mut conn = match Conn::open(run, record).await {
            Ok(c) => c,
            // As over stdio: a session that never started is not a request
            // failed, and a run none of whose sessions started says so (exit 3).
            Err(why) if !started => {
                if let Some(r) = record {
                    r.keep = true;
                }
                run.failed.borrow_mut().push(format!("session {}: {why}", index + 1));
                return;
            }
            Err(why) => {
                // A refused connection fails the request that would have used it.
                let Some(due) = run.next_slot().await else { return };
                let key = run.plan.load.workload.next(&mut workload).key();
                if let Some(r) = record {
                    r.keep = true;
                }
                record_outcome(run, &key, due, Outcome::Transport(why));
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue 'connect;
            }
        };
        started = true;
        while let Some(due) = run.next_slot().await {
            let spec = run.plan.load.workload.next(&mut workload);
            let key = spec.key();
            let sent_at = Instant::now();
            let outcome = match tokio::time::timeout(run.plan.load.timeout, conn.request(run, spec, record)).await {
                Ok(Ok(o)) => o,
                Ok(Err(why)) => Outcome::Transport(why),
                Err(_) => Outcome::Timeout,
            };
            let broken = matches!(outcome, Outcome::Transport(_) | Outcome::Timeout);
            // A closed loop measures from the send, an open loop from the due time.
            let from = if run.timetable.is_some() { due } else { sent_at };
            if outcome != Outcome::Ok
                && let Some(r) = record
            {
                r.keep = true;
            }
            record_outcome(run, &key, from, outcome);
            if broken {
                continue 'connect;
            }
        }
        return;
    }
}

fn record_outcome(run: &Run, key: &str, from: Instant, outcome: Outcome) {
    let now = Instant::now();
    run.stats
        .borrow_mut()
        .record(now - run.start, key, now.saturating_duration_since(from), &outcome);
}

struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    session_id: Option<String>,
    protocol_version: Option<String>,
}

struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Conn {
    async fn open(run: &Run, record: &mut Option<SessionRecord>) -> Result<Conn, String> {
        let stream = tokio::time::timeout(run.plan.load.timeout, TcpStream::connect(&run.addr))
            .await
            .map_err(|_| format!("connecting to {} timed out", run.addr))?
            .map_err(|e| format!("cannot connect to {}: {e}", run.addr))?;
        let _ = stream.set_nodelay(true);
        let mut conn = Conn {
            stream,
            buf: Vec::with_capacity(16 * 1024),
            session_id: None,
            protocol_version: None,
        };
        if let SessionKind::Legacy { protocol_version } = &run.plan.kind {
            let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": protocol_version,
                "capabilities": {},
                "clientInfo": {"name": "mcpscope-load", "version": env!("CARGO_PKG_VERSION")},
            }});
            let a = conn.exchange(run, &init, &[], record).await?;
            if !(200..300).contains(&a.status) {
                return Err(format!("initialize answered HTTP {}", a.status));
            }
            conn.session_id = header(&a.headers, "mcp-session-id");
            let msg = match answer_to(&a, &json!(0)) {
                Found::Answer(m) => m,
                Found::Mismatched(other) => {
                    return Err(format!(
                        "initialize (id 0) was answered with id {other}: a mismatched id"
                    ));
                }
                Found::Nothing => return Err("initialize got no JSON-RPC answer".into()),
            };
            if let Some(e) = msg.get("error") {
                return Err(format!("initialize failed: {e}"));
            }
            conn.protocol_version = msg
                .pointer("/result/protocolVersion")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            let a = conn.exchange(run, &note, &[], record).await?;
            if !(200..300).contains(&a.status) {
                return Err(format!("notifications/initialized answered HTTP {}", a.status));
            }
        }
        Ok(conn)
    }

    async fn request(
        &mut self,
        run: &Run,
        spec: &RequestSpec,
        record: &mut Option<SessionRecord>,
    ) -> Result<Outcome, String> {
        let id = run.next_id.get();
        run.next_id.set(id + 1);
        let (params, extra) = match &run.plan.kind {
            SessionKind::Modern { envelope } => {
                let params = envelope.wrap(spec.params.clone());
                (Some(params), true)
            }
            SessionKind::Legacy { .. } => (spec.params.clone(), false),
        };
        let mut msg = json!({"jsonrpc": "2.0", "id": id, "method": spec.method});
        if let Some(p) = params {
            msg["params"] = p;
        }
        let standard = if extra {
            crate::protocol::http_headers::standard(msg.to_string().as_bytes())
        } else {
            Vec::new()
        };
        let a = self.exchange(run, &msg, &standard, record).await?;
        if !(200..300).contains(&a.status) {
            return Ok(Outcome::HttpStatus(a.status));
        }
        let answer = match answer_to(&a, &json!(id)) {
            Found::Answer(m) => m,
            Found::Mismatched(other) => {
                return Ok(Outcome::MismatchedId(format!(
                    "request id {id} was answered with id {other}"
                )));
            }
            Found::Nothing => return Err(format!("HTTP {} with no JSON-RPC answer to id {id}", a.status)),
        };
        Ok(if let Some(code) = answer.pointer("/error/code") {
            Outcome::RpcError(code.as_i64().unwrap_or(0))
        } else if answer.pointer("/result/isError").and_then(Value::as_bool) == Some(true) {
            Outcome::ToolError
        } else {
            Outcome::Ok
        })
    }

    async fn exchange(
        &mut self,
        run: &Run,
        msg: &Value,
        extra: &[(String, String)],
        record: &mut Option<SessionRecord>,
    ) -> Result<Answer, String> {
        let body = msg.to_string();
        if let Some(r) = record {
            r.line(crate::wire::frame::Direction::Out, body.as_bytes());
        }
        let mut head = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            run.path,
            run.host_header,
            body.len()
        );
        if let Some(sid) = &self.session_id {
            head.push_str(&format!("Mcp-Session-Id: {sid}\r\n"));
        }
        if let Some(v) = &self.protocol_version {
            head.push_str(&format!("MCP-Protocol-Version: {v}\r\n"));
        }
        for (k, v) in run.plan.headers.iter().chain(extra) {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        let mut out = head.into_bytes();
        out.extend_from_slice(body.as_bytes());
        self.stream.write_all(&out).await.map_err(|e| format!("write: {e}"))?;
        let answer = self.read_answer().await?;
        if let Some(r) = record {
            for m in messages_of(&answer) {
                r.line(crate::wire::frame::Direction::In, &m);
            }
        }
        Ok(answer)
    }

    /// Reads one response; what follows it stays in the buffer.
    async fn read_answer(&mut self) -> Result<Answer, String> {
        let (status, headers, head_len) = loop {
            let mut slots = [httparse::EMPTY_HEADER; 64];
            let mut resp = httparse::Response::new(&mut slots);
            match resp.parse(&self.buf) {
                Ok(httparse::Status::Complete(n)) => {
                    let headers = resp
                        .headers
                        .iter()
                        .map(|h| {
                            (
                                h.name.to_ascii_lowercase(),
                                String::from_utf8_lossy(h.value).into_owned(),
                            )
                        })
                        .collect::<Vec<_>>();
                    break (resp.code.unwrap_or(0), headers, n);
                }
                Ok(httparse::Status::Partial) => self.fill().await?,
                Err(e) => return Err(format!("not an HTTP response: {e}")),
            }
        };
        self.buf.drain(..head_len);
        let chunked = header(&headers, "transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
        let length = header(&headers, "content-length").and_then(|v| v.trim().parse::<usize>().ok());
        let body = if chunked {
            self.read_chunked().await?
        } else if let Some(n) = length {
            if n > MAX_BODY {
                return Err(format!("an answer of {n} bytes (more than {MAX_BODY})"));
            }
            while self.buf.len() < n {
                self.fill().await?;
            }
            self.buf.drain(..n).collect()
        } else if status == 202 || status == 204 || status == 304 {
            Vec::new()
        } else {
            // Until the server closes.
            loop {
                match self.fill().await {
                    Ok(()) if self.buf.len() <= MAX_BODY => {}
                    Ok(()) => return Err("an answer too big".into()),
                    Err(_) => break,
                }
            }
            std::mem::take(&mut self.buf)
        };
        Ok(Answer { status, headers, body })
    }

    /// A chunked answer, decoded as the listeners decode request bodies.
    async fn read_chunked(&mut self) -> Result<Vec<u8>, String> {
        let mut body = Vec::new();
        let mut pos = 0;
        loop {
            match next_piece(&self.buf, pos, MAX_BODY - body.len()) {
                Ok(Piece::NeedMore(_)) => self.fill().await?,
                Ok(Piece::Chunk { data, next }) => {
                    body.extend_from_slice(&self.buf[data]);
                    pos = next;
                }
                Ok(Piece::End { next }) => {
                    self.buf.drain(..next);
                    return Ok(body);
                }
                Err(ChunkError::TooLarge { .. }) => return Err("an answer too big".into()),
                Err(ChunkError::Malformed(_, why)) => return Err(format!("a bad chunked answer: {why}")),
            }
        }
    }

    async fn fill(&mut self) -> Result<(), String> {
        let mut chunk = [0u8; 16 * 1024];
        let n = self.stream.read(&mut chunk).await.map_err(|e| format!("read: {e}"))?;
        if n == 0 {
            return Err("the server closed the connection".into());
        }
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(())
    }
}

fn header(headers: &[(String, String)], name: &str) -> Option<String> {
    headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
}

/// Every message of an answer, as its bytes (a JSON body, or each event's data).
fn messages_of(a: &Answer) -> Vec<Vec<u8>> {
    let sse = header(&a.headers, "content-type").is_some_and(|t| t.starts_with("text/event-stream"));
    if !sse {
        return if a.body.is_empty() {
            Vec::new()
        } else {
            vec![a.body.clone()]
        };
    }
    let mut out = Vec::new();
    let mut reader = crate::wire::sse::SseReader::new(std::io::Cursor::new(&a.body));
    while let Ok(Some(ev)) = reader.next_event() {
        if ev.has_data() {
            out.push(ev.data);
        }
    }
    out
}

/// What an HTTP answer held for the request with one id.
#[derive(Debug, PartialEq)]
enum Found {
    /// Its JSON-RPC answer.
    Answer(Value),
    /// Answers, but none to this request: the id of the first (null if it had none).
    Mismatched(Value),
    /// No JSON-RPC answer at all.
    Nothing,
}

/// The JSON-RPC answer to `id` in a JSON body or an event stream. An answer
/// to another id is not this request's, whatever it says (a success among
/// them); an error with a null id is the server saying it could not read
/// the request's id, and stands for it.
fn answer_to(a: &Answer, id: &Value) -> Found {
    let sse = header(&a.headers, "content-type").is_some_and(|t| t.starts_with("text/event-stream"));
    let messages: Vec<Value> = if sse {
        let mut out = Vec::new();
        let mut reader = crate::wire::sse::SseReader::new(std::io::Cursor::new(&a.body));
        while let Ok(Some(ev)) = reader.next_event() {
            if let Ok(m) = serde_json::from_slice::<Value>(&ev.data) {
                out.push(m);
            }
        }
        out
    } else {
        match serde_json::from_slice::<Value>(&a.body) {
            Ok(Value::Array(items)) => items,
            Ok(m) => vec![m],
            Err(_) => Vec::new(),
        }
    };
    let mut other = None;
    for m in messages {
        if m.get("result").is_none() && m.get("error").is_none() {
            // A request or notification of the server's, not an answer.
            continue;
        }
        let its = m.get("id").cloned().unwrap_or(Value::Null);
        if its == *id || (its.is_null() && m.get("error").is_some()) {
            return Found::Answer(m);
        }
        other.get_or_insert(its);
    }
    other.map_or(Found::Nothing, Found::Mismatched)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json_answer(body: &str) -> Answer {
        Answer {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.as_bytes().to_vec(),
        }
    }

    fn sse_answer(body: &str) -> Answer {
        Answer {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: body.as_bytes().to_vec(),
        }
    }

    /// #47 item 6: an answer to another id is not this request's answer.
    #[test]
    fn only_the_answer_to_its_own_id_answers_a_request() {
        let id = json!(5);
        let ok = json!({"jsonrpc": "2.0", "id": 5, "result": {}});
        assert_eq!(answer_to(&json_answer(&ok.to_string()), &id), Found::Answer(ok));
        assert_eq!(
            answer_to(&json_answer(r#"{"jsonrpc":"2.0","id":6,"result":{}}"#), &id),
            Found::Mismatched(json!(6))
        );
        assert_eq!(
            answer_to(&json_answer(r#"{"jsonrpc":"2.0","id":"5","result":{}}"#), &id),
            Found::Mismatched(json!("5")),
            "a string is another id than a number"
        );
        assert_eq!(
            answer_to(&json_answer(r#"{"jsonrpc":"2.0","result":{}}"#), &id),
            Found::Mismatched(Value::Null)
        );
        assert_eq!(
            answer_to(&json_answer(r#"[{"jsonrpc":"2.0","id":4,"result":{}}]"#), &id),
            Found::Mismatched(json!(4))
        );
        // The server could not read the request's id: its error stands for it.
        let parse = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "x"}});
        assert_eq!(answer_to(&json_answer(&parse.to_string()), &id), Found::Answer(parse));
        assert_eq!(answer_to(&json_answer("{}"), &id), Found::Nothing);
        assert_eq!(answer_to(&json_answer("not json"), &id), Found::Nothing);
        let stream = "data: {\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}\n\n\
                      data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n";
        assert_eq!(answer_to(&sse_answer(stream), &id), Found::Mismatched(json!(7)));
        let stream = format!(
            "{stream}data: {ok_text}\n\n",
            ok_text = json!({"jsonrpc": "2.0", "id": 5, "result": {}})
        );
        assert!(matches!(answer_to(&sse_answer(&stream), &id), Found::Answer(_)));
    }
}
