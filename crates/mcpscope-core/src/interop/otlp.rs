//! A capture as OpenTelemetry traces in OTLP/JSON, with the MCP semantic
//! conventions (open-telemetry/semantic-conventions-genai, as of May 2026).
//!
//! Each session is a trace (or joins the trace a request's `_meta.traceparent`
//! names): one session span, and under it one span per request, of kind
//! CLIENT from whichever side sent it (the conventions' client span; a
//! server that asks the client is the initiator there). Notifications are
//! span events: progress on its request's span, the rest on the session's.
//! A tool that failed (`isError`) and a JSON-RPC error both set the span's
//! status to ERROR with an `error.type`; a request never answered too
//! (`no_response`). Task polls link to the span that created the task, and
//! a multi round-trip retry to the round before it. IDs are derived from
//! the capture, so exporting it twice gives the same trace.
//!
//! OTLP/JSON rules kept here: ids in hex, enums as integers, 64-bit integers
//! as decimal strings, lowerCamelCase keys. No I/O.

use crate::record::capture::Header;
use crate::transport::event::{Event, HttpInfo};
use crate::wire::classify::Kind;
use crate::wire::frame::Frame;
use crate::wire::message::RequestId;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

const KIND_INTERNAL: u8 = 1;
const KIND_CLIENT: u8 = 3;
const STATUS_ERROR: u8 = 2;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn digest(parts: &[&[u8]]) -> Vec<u8> {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    for p in parts {
        ctx.update(p);
        ctx.update(&[0]);
    }
    ctx.finish().as_ref().to_vec()
}

fn attr(key: &str, value: impl Into<String>) -> Value {
    json!({"key": key, "value": {"stringValue": value.into()}})
}

fn int_attr(key: &str, value: i64) -> Value {
    json!({"key": key, "value": {"intValue": value.to_string()}})
}

/// `00-<32 hex>-<16 hex>-<2 hex>` with neither id all zeros: (trace id, parent span id).
pub fn parse_traceparent(tp: &str) -> Option<(String, String)> {
    let parts: Vec<&str> = tp.trim().split('-').collect();
    let [version, trace, parent, flags] = parts[..] else {
        return None;
    };
    let is_hex =
        |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase());
    let nonzero = |s: &str| s.bytes().any(|b| b != b'0');
    (is_hex(version, 2)
        && version != "ff"
        && is_hex(trace, 32)
        && nonzero(trace)
        && is_hex(parent, 16)
        && nonzero(parent)
        && is_hex(flags, 2))
    .then(|| (trace.to_owned(), parent.to_owned()))
}

struct Span {
    trace_id: String,
    span_id: String,
    parent: Option<String>,
    name: String,
    start: Duration,
    end: Option<Duration>,
    attributes: Vec<Value>,
    events: Vec<Value>,
    links: Vec<Value>,
    error: Option<(String, String)>,
}

/// Builds the traces as events arrive ([`OtlpWriter::push`]); the spans
/// that ended are taken as they end ([`OtlpWriter::take_ended`]) and then
/// forgotten, so a long session or a large capture holds only its open
/// spans; [`OtlpWriter::finish`] gives the rest.
pub struct OtlpWriter {
    header: Header,
    tool_version: String,
    session: usize,
    session_trace: String,
    session_span: String,
    session_events: Vec<Value>,
    session_spans: Vec<Span>,
    /// Request spans not taken yet, by number (the order they began).
    spans: BTreeMap<usize, Span>,
    next_span: usize,
    /// Spans that ended and were not taken yet.
    ended: Vec<usize>,
    pending: HashMap<RequestId, usize>,
    progress: HashMap<String, usize>,
    /// Task id → the span that created it (trace id, span id).
    tasks: HashMap<String, (String, String)>,
    /// (method, target) → the span of the last round that asked for input.
    rounds: HashMap<(String, String), (String, String)>,
    protocol_version: Option<String>,
    session_id: Option<String>,
    last_at: Duration,
}

fn token_key(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(format!("s:{s}")),
        Value::Number(n) => Some(format!("n:{n}")),
        _ => None,
    }
}

impl OtlpWriter {
    pub fn new(header: Header, tool_version: &str) -> Self {
        let mut w = Self {
            header,
            tool_version: tool_version.to_owned(),
            session: 0,
            session_trace: String::new(),
            session_span: String::new(),
            session_events: Vec::new(),
            session_spans: Vec::new(),
            spans: BTreeMap::new(),
            next_span: 0,
            ended: Vec::new(),
            pending: HashMap::new(),
            progress: HashMap::new(),
            tasks: HashMap::new(),
            rounds: HashMap::new(),
            protocol_version: None,
            session_id: None,
            last_at: Duration::ZERO,
        };
        w.begin_session();
        w
    }

    fn begin_session(&mut self) {
        self.session += 1;
        let seed = digest(&[
            self.header.started_unix_ms.to_string().as_bytes(),
            self.header.command_line.as_bytes(),
            self.session.to_string().as_bytes(),
        ]);
        self.session_trace = hex(&seed[..16]);
        self.session_span = hex(&seed[16..24]);
        self.session_events.clear();
        self.pending.clear();
        self.progress.clear();
        self.tasks.clear();
        self.rounds.clear();
    }

    /// Another session of an appended capture begins.
    pub fn new_session(&mut self) {
        self.close_session();
        self.begin_session();
    }

    fn close_session(&mut self) {
        let mut attributes = vec![attr("network.transport", self.network_transport())];
        if let Some(v) = &self.protocol_version {
            attributes.push(attr("mcp.protocol.version", v));
        }
        self.session_spans.push(Span {
            trace_id: self.session_trace.clone(),
            span_id: self.session_span.clone(),
            parent: None,
            name: "mcp session".into(),
            start: Duration::ZERO,
            end: Some(self.last_at),
            attributes,
            events: std::mem::take(&mut self.session_events),
            links: Vec::new(),
            error: None,
        });
    }

    fn http(&self) -> bool {
        matches!(self.header.transport.as_str(), "http" | "sse")
    }

    fn network_transport(&self) -> &'static str {
        if self.http() { "tcp" } else { "pipe" }
    }

    fn nanos(&self, at: Duration) -> String {
        (u128::from(self.header.started_unix_ms) * 1_000_000 + at.as_nanos()).to_string()
    }

    pub fn push(&mut self, ev: &Event) {
        match ev {
            Event::Frame(f) => {
                self.last_at = self.last_at.max(f.at);
                self.frame(f);
            }
            Event::Http(h) => self.note_http(h),
            Event::Model(m) => {
                self.last_at = self.last_at.max(m.at + m.total);
                self.model_turn(m);
            }
            _ => {}
        }
    }

    /// A model turn as the GenAI semantic conventions' chat span (a client
    /// span under the session, from its request to the end of its answer).
    fn model_turn(&mut self, m: &crate::model::record::ModelExchange) {
        let turn = m.turn();
        let mut attributes = vec![
            attr("gen_ai.operation.name", "chat"),
            attr("gen_ai.provider.name", m.provider.clone()),
            attr("gen_ai.request.model", m.model.clone()),
        ];
        if let Some(t) = turn.usage.input_tokens {
            attributes.push(int_attr("gen_ai.usage.input_tokens", t as i64));
        }
        if let Some(t) = turn.usage.output_tokens {
            attributes.push(int_attr("gen_ai.usage.output_tokens", t as i64));
        }
        if let Some(r) = &turn.stop_reason {
            attributes.push(json!({"key": "gen_ai.response.finish_reasons", "value": {"arrayValue": {"values": [{"stringValue": r}]}}}));
        }
        if let Some(u) = url::Url::parse(&m.url)
            .ok()
            .as_ref()
            .and_then(|u| u.host_str().map(str::to_owned))
        {
            attributes.push(attr("server.address", u));
        }
        attributes.push(int_attr("mcpscope.model.tool_calls", turn.tool_calls.len() as i64));
        let error = m
            .error
            .clone()
            .or(turn.error.clone())
            .map(|e| ("provider_error".to_owned(), e));
        if error.is_some() {
            attributes.push(attr("error.type", "provider_error"));
        }
        let span_id = hex(&digest(&[
            self.session_trace.as_bytes(),
            b"model",
            m.at.as_micros().to_string().as_bytes(),
            self.session.to_string().as_bytes(),
        ])[..8]);
        let i = self.next_span;
        self.next_span += 1;
        self.spans.insert(
            i,
            Span {
                trace_id: self.session_trace.clone(),
                span_id,
                parent: Some(self.session_span.clone()),
                name: format!("chat {}", m.model),
                start: m.at,
                end: Some(m.at + m.total),
                attributes,
                events: Vec::new(),
                links: Vec::new(),
                error,
            },
        );
        self.ended.push(i);
    }

    fn note_http(&mut self, h: &HttpInfo) {
        let modern = self.protocol_version.as_deref().is_some_and(|v| v >= "2026-07-28");
        if !modern
            && let Some(id) = h
                .received
                .iter()
                .chain(&h.sent)
                .find(|(k, _)| k.eq_ignore_ascii_case("mcp-session-id"))
                .map(|(_, v)| v.clone())
        {
            self.session_id = Some(id);
        }
    }

    fn event(&self, f: &Frame, method: &str) -> Value {
        json!({
            "timeUnixNano": self.nanos(f.at),
            "name": method,
            "attributes": [attr("mcp.method.name", method)],
        })
    }

    fn frame(&mut self, f: &Frame) {
        let v = f.json();
        match f.class.kind {
            Kind::Request => self.request(f, v.as_ref()),
            Kind::Result | Kind::Error => {
                let Some(i) = f.class.id.as_ref().and_then(|id| self.pending.remove(id)) else {
                    return;
                };
                self.progress.retain(|_, s| *s != i);
                self.answered(i, f, v.as_ref());
            }
            Kind::Notification => {
                let method = f.class.method.clone().unwrap_or_default();
                let token = v
                    .as_ref()
                    .and_then(|v| v.pointer("/params/progressToken").and_then(token_key));
                let ev = self.event(f, &method);
                match token
                    .and_then(|t| self.progress.get(&t).copied())
                    .and_then(|i| self.spans.get_mut(&i))
                {
                    Some(s) => s.events.push(ev),
                    None => self.session_events.push(ev),
                }
            }
            _ => {}
        }
    }

    fn request(&mut self, f: &Frame, v: Option<&Value>) {
        let method = f.class.method.clone().unwrap_or_default();
        let params = v.and_then(|v| v.get("params"));
        let name = params
            .and_then(|p| p.get("name"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let mut attributes = vec![
            attr("mcp.method.name", &method),
            attr("network.transport", self.network_transport()),
        ];
        if let Some(id) = &f.class.id {
            let id = match id {
                RequestId::Number(n) => n.to_string(),
                RequestId::String(s) => s.clone(),
            };
            attributes.push(attr("jsonrpc.request.id", id));
        }
        match method.as_str() {
            "tools/call" => {
                if let Some(n) = &name {
                    attributes.push(attr("gen_ai.tool.name", n));
                }
                attributes.push(attr("gen_ai.operation.name", "execute_tool"));
            }
            "prompts/get" => {
                if let Some(n) = &name {
                    attributes.push(attr("gen_ai.prompt.name", n));
                }
            }
            _ => {}
        }
        if let Some(uri) = params.and_then(|p| p.get("uri")).and_then(Value::as_str) {
            attributes.push(attr("mcp.resource.uri", uri));
        }
        let version = params
            .and_then(|p| p.pointer("/_meta/io.modelcontextprotocol~1protocolVersion"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| self.protocol_version.clone());
        if let Some(pv) = &version {
            attributes.push(attr("mcp.protocol.version", pv));
        }
        if let Some(s) = &self.session_id
            && version.as_deref().is_none_or(|v| v < "2026-07-28")
        {
            attributes.push(attr("mcp.session.id", s));
        }
        if self.http() {
            attributes.push(attr("network.protocol.name", "http"));
            if let Some(u) = self.header.url.as_deref().and_then(|u| url::Url::parse(u).ok()) {
                if let Some(h) = u.host_str() {
                    attributes.push(attr("server.address", h));
                }
                if let Some(p) = u.port_or_known_default() {
                    attributes.push(int_attr("server.port", i64::from(p)));
                }
            }
        }
        let (trace_id, parent) = match params
            .and_then(|p| p.pointer("/_meta/traceparent"))
            .and_then(Value::as_str)
            .and_then(parse_traceparent)
        {
            Some((t, p)) => (t, p),
            None => (self.session_trace.clone(), self.session_span.clone()),
        };
        let span_id = hex(&digest(&[
            trace_id.as_bytes(),
            f.seq.to_string().as_bytes(),
            self.session.to_string().as_bytes(),
        ])[..8]);
        let mut links = Vec::new();
        let target = name.clone().unwrap_or_default();
        if let Some(task) = params.and_then(|p| p.get("taskId")).and_then(Value::as_str)
            && let Some((trace, span)) = self.tasks.get(task)
        {
            links.push(json!({"traceId": trace, "spanId": span, "attributes": [attr("mcp.link", "task")]}));
        }
        if params.and_then(|p| p.get("requestState")).is_some()
            && let Some((trace, span)) = self.rounds.remove(&(method.clone(), target.clone()))
        {
            links.push(json!({"traceId": trace, "spanId": span, "attributes": [attr("mcp.link", "previous_round")]}));
        }
        let span_name = match &name {
            Some(n) if matches!(method.as_str(), "tools/call" | "prompts/get") => format!("{method} {n}"),
            _ => method.clone(),
        };
        let i = self.next_span;
        self.next_span += 1;
        self.spans.insert(
            i,
            Span {
                trace_id,
                span_id,
                parent: Some(parent),
                name: span_name,
                start: f.at,
                end: None,
                attributes,
                events: vec![self.event(f, "request")],
                links,
                error: None,
            },
        );
        if let Some(id) = &f.class.id {
            self.pending.insert(id.clone(), i);
        }
        if let Some(t) = params
            .and_then(|p| p.pointer("/_meta/progressToken"))
            .and_then(token_key)
        {
            self.progress.insert(t, i);
        }
    }

    fn answered(&mut self, i: usize, f: &Frame, v: Option<&Value>) {
        let Some(s) = self.spans.get(&i) else { return };
        let ids = (s.trace_id.clone(), s.span_id.clone());
        let result = v.and_then(|v| v.get("result"));
        if method_of(s) == "initialize"
            && let Some(pv) = result.and_then(|r| r.get("protocolVersion")).and_then(Value::as_str)
        {
            self.protocol_version = Some(pv.to_owned());
        }
        if let Some(task) = result
            .and_then(|r| r.pointer("/task/taskId").or_else(|| r.get("taskId")))
            .and_then(Value::as_str)
        {
            self.tasks.insert(task.to_owned(), ids.clone());
        }
        if result.and_then(|r| r.get("resultType")).and_then(Value::as_str) == Some("input_required") {
            let s = &self.spans[&i];
            let name = s
                .attributes
                .iter()
                .find(|a| {
                    a["key"] == "gen_ai.tool.name" || a["key"] == "gen_ai.prompt.name" || a["key"] == "mcp.resource.uri"
                })
                .and_then(|a| a["value"]["stringValue"].as_str())
                .unwrap_or_default()
                .to_owned();
            self.rounds.insert((method_of(s).to_owned(), name), ids);
        }
        let response = json!({"timeUnixNano": self.nanos(f.at), "name": "response", "attributes": []});
        self.ended.push(i);
        let Some(s) = self.spans.get_mut(&i) else { return };
        s.end = Some(f.at);
        s.events.push(response);
        if f.class.kind == Kind::Error {
            let code = f
                .class
                .error_code
                .map(|c| c.to_string())
                .unwrap_or_else(|| "_OTHER".into());
            let message = v
                .and_then(|v| v.pointer("/error/message"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            s.attributes.push(attr("rpc.response.status_code", &code));
            s.attributes.push(attr("error.type", &code));
            s.error = Some((code, message));
        } else if f.class.tool_error {
            let message = result
                .and_then(|r| r.pointer("/content/0/text"))
                .and_then(Value::as_str)
                .map(|t| crate::text::shorten(t, 200))
                .unwrap_or_else(|| "the tool reported an error (isError)".into());
            s.attributes.push(attr("error.type", "tool_error"));
            s.error = Some(("tool_error".into(), message));
        }
    }

    /// The ExportTraceServiceRequest, as OTLP/JSON: every span not taken
    /// yet (all of them when none was) and the session spans.
    pub fn finish(mut self) -> Value {
        let spans = self.finish_spans();
        self.export_request(spans)
    }

    /// The session is over: the session spans and every request span not
    /// taken yet (a request never answered ends with the capture, as an error).
    pub fn finish_spans(&mut self) -> Vec<Value> {
        self.close_session();
        let unanswered: Vec<usize> = self.pending.values().copied().collect();
        for i in unanswered {
            if let Some(s) = self.spans.get_mut(&i) {
                s.attributes.push(attr("error.type", "no_response"));
                s.error = Some((
                    "no_response".into(),
                    "the request got no response before the capture ended".into(),
                ));
            }
        }
        self.pending.clear();
        self.ended.clear();
        let last = self.last_at;
        let session_spans = std::mem::take(&mut self.session_spans);
        let spans = std::mem::take(&mut self.spans);
        session_spans
            .iter()
            .chain(spans.values())
            .map(|s| self.span_json(s, last))
            .collect()
    }

    /// The request spans that ended (were answered) since the last call, as
    /// an ExportTraceServiceRequest to send while the session goes on; `None`
    /// when none did. [`OtlpWriter::finish`] gives the rest and the session spans.
    pub fn take_ended(&mut self) -> Option<Value> {
        let spans = self.take_ended_spans();
        (!spans.is_empty()).then(|| self.export_request(spans))
    }

    /// The request spans that ended since the last call, in the order they
    /// began; they are forgotten here (a link to one keeps only its ids).
    pub fn take_ended_spans(&mut self) -> Vec<Value> {
        let last = self.last_at;
        let mut ended = std::mem::take(&mut self.ended);
        ended.sort_unstable();
        let spans: Vec<Span> = ended.into_iter().filter_map(|i| self.spans.remove(&i)).collect();
        spans.iter().map(|s| self.span_json(s, last)).collect()
    }

    fn span_json(&self, s: &Span, last: Duration) -> Value {
        let mut v = json!({
            "traceId": s.trace_id,
            "spanId": s.span_id,
            "name": s.name,
            "kind": if s.parent.is_some() { KIND_CLIENT } else { KIND_INTERNAL },
            "startTimeUnixNano": self.nanos(s.start),
            "endTimeUnixNano": self.nanos(s.end.unwrap_or(last).max(s.start)),
            "attributes": s.attributes,
            "events": s.events,
            "status": {},
        });
        if let Some(p) = &s.parent {
            v["parentSpanId"] = json!(p);
        }
        if !s.links.is_empty() {
            v["links"] = json!(s.links);
        }
        if let Some((_, message)) = &s.error {
            v["status"] = json!({"code": STATUS_ERROR, "message": message});
        }
        v
    }

    /// The request's `resource`: who sent the spans, about which server.
    pub fn resource(&self) -> Value {
        let service = if self.header.program.is_empty() {
            self.header.url.clone().unwrap_or_else(|| "mcp-server".into())
        } else {
            self.header
                .program
                .rsplit('/')
                .next()
                .unwrap_or(&self.header.program)
                .to_owned()
        };
        json!({"attributes": [
            attr("service.name", "mcpscope"),
            attr("mcp.server.command", &self.header.command_line),
            attr("mcp.server.name", service),
        ]})
    }

    /// The request's instrumentation `scope`.
    pub fn scope(&self) -> Value {
        json!({"name": "mcpscope", "version": self.tool_version})
    }

    /// An ExportTraceServiceRequest of `spans`.
    pub fn export_request(&self, spans: Vec<Value>) -> Value {
        json!({"resourceSpans": [{
            "resource": self.resource(),
            "scopeSpans": [{
                "scope": self.scope(),
                "spans": spans,
            }],
        }]})
    }
}

fn method_of(s: &Span) -> &str {
    s.attributes
        .iter()
        .find(|a| a["key"] == "mcp.method.name")
        .and_then(|a| a["value"]["stringValue"].as_str())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::recorder::Recorder;
    use crate::wire::frame::Direction::{self, In, Out};
    use crate::wire::framing::{LineEnding, RawLine};

    fn spans_of(request: &Value) -> Vec<Value> {
        request["resourceSpans"][0]["scopeSpans"][0]["spans"]
            .as_array()
            .unwrap()
            .clone()
    }

    /// Feeds `lines` (10 ms apart) to a writer, calling `after` after each
    /// one; the spans `finish` gives.
    fn feed(lines: &[(Direction, &str)], mut after: impl FnMut(&mut OtlpWriter)) -> Vec<Value> {
        let mut r = Recorder::new(crate::wire::classify::Limits::default(), std::time::Instant::now());
        let header = Header {
            started_unix_ms: 1_764_700_000_000,
            command_line: "weather".into(),
            ..Header::default()
        };
        let mut w = OtlpWriter::new(header, "test");
        for (i, (d, l)) in lines.iter().enumerate() {
            let raw = RawLine {
                bytes: l.as_bytes().to_vec(),
                ending: LineEnding::Lf,
            };
            w.push(&Event::Frame(r.frame_at(
                *d,
                raw,
                Duration::from_millis(i as u64 * 10),
                None,
            )));
            after(&mut w);
        }
        spans_of(&w.finish())
    }

    /// The spans as sent live: a batch after each line, then the rest at the end.
    fn export_live(lines: &[(Direction, &str)]) -> (Vec<Vec<Value>>, Vec<Value>) {
        let mut batches = Vec::new();
        let rest = feed(lines, |w| {
            if let Some(batch) = w.take_ended() {
                batches.push(spans_of(&batch));
            }
        });
        (batches, rest)
    }

    #[test]
    fn spans_sent_live_are_each_sent_once_when_they_end() {
        let lines = [
            (
                Out,
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}"#,
            ),
            (
                Out,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"b"}}"#,
            ),
            (In, r#"{"jsonrpc":"2.0","id":2,"result":{"content":[]}}"#),
            (In, r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#),
            (Out, r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#),
        ];
        let (batches, rest) = export_live(&lines);
        let names =
            |spans: &[Value]| -> Vec<String> { spans.iter().map(|s| s["name"].as_str().unwrap().to_owned()).collect() };
        // Each request span goes out in the batch after its answer, once.
        assert_eq!(batches.len(), 2);
        assert_eq!(names(&batches[0]), ["tools/call b"]);
        assert_eq!(names(&batches[1]), ["tools/call a"]);
        // The end: the session span and the unanswered ping, nothing again.
        assert_eq!(names(&rest), ["mcp session", "ping"]);
        assert_eq!(attr_of(&rest[1], "error.type"), Some("no_response"));
        // Together they are what one export at the end holds.
        let mut live: Vec<String> = batches.iter().flat_map(|b| names(b)).chain(names(&rest)).collect();
        let mut whole = names(&export(&lines));
        live.sort();
        whole.sort();
        assert_eq!(live, whole);
        // And a live span is the same span (same ids, parent, times).
        let whole = export(&lines);
        let b = whole.iter().find(|s| s["name"] == "tools/call b").unwrap();
        assert_eq!(b["spanId"], batches[0][0]["spanId"]);
        assert_eq!(b["parentSpanId"], batches[0][0]["parentSpanId"]);
    }

    fn export(lines: &[(Direction, &str)]) -> Vec<Value> {
        feed(lines, |_| {})
    }

    fn attr_of<'a>(s: &'a Value, key: &str) -> Option<&'a str> {
        s["attributes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["key"] == key)
            .and_then(|a| a["value"]["stringValue"].as_str())
    }

    #[test]
    fn a_traceparent_in_meta_is_honoured_and_a_bad_one_ignored() {
        assert_eq!(
            parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
            Some(("4bf92f3577b34da6a3ce929d0e0e4736".into(), "00f067aa0ba902b7".into()))
        );
        for bad in [
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "garbage",
        ] {
            assert_eq!(parse_traceparent(bad), None, "{bad}");
        }
        let spans = export(&[
            (
                Out,
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}}"#,
            ),
            (In, r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#),
            (
                Out,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"b"}}"#,
            ),
            (In, r#"{"jsonrpc":"2.0","id":2,"result":{"content":[]}}"#),
        ]);
        let session = &spans[0];
        assert_eq!(spans[1]["traceId"], "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(spans[1]["parentSpanId"], "00f067aa0ba902b7");
        assert_eq!(
            spans[2]["traceId"], session["traceId"],
            "no traceparent: the session's trace"
        );
        assert_eq!(spans[2]["parentSpanId"], session["spanId"]);
        assert_ne!(spans[1]["spanId"], spans[2]["spanId"]);
    }

    #[test]
    fn notifications_are_events_and_failures_set_the_status() {
        let spans = export(&[
            (
                Out,
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":7}}}"#,
            ),
            (
                In,
                r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1}}"#,
            ),
            (
                In,
                r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}"#,
            ),
            (
                In,
                r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"it broke"}],"isError":true}}"#,
            ),
            (
                Out,
                r#"{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"p"}}"#,
            ),
            (
                In,
                r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"no such prompt"}}"#,
            ),
            (
                Out,
                r#"{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"file:///x"}}"#,
            ),
        ]);
        let (session, tool, prompt, read) = (&spans[0], &spans[1], &spans[2], &spans[3]);
        let names = |s: &Value| -> Vec<String> {
            s["events"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["name"].as_str().unwrap().to_owned())
                .collect()
        };
        assert_eq!(names(tool), ["request", "notifications/progress", "response"]);
        assert_eq!(names(session), ["notifications/message"]);
        assert_eq!(tool["name"], "tools/call slow");
        assert_eq!(tool["status"], json!({"code": 2, "message": "it broke"}));
        assert_eq!(attr_of(tool, "error.type"), Some("tool_error"));
        assert_eq!(prompt["name"], "prompts/get p");
        assert_eq!(attr_of(prompt, "gen_ai.prompt.name"), Some("p"));
        assert_eq!(attr_of(prompt, "rpc.response.status_code"), Some("-32602"));
        assert_eq!(prompt["status"]["message"], "no such prompt");
        assert_eq!(attr_of(read, "mcp.resource.uri"), Some("file:///x"));
        assert_eq!(attr_of(read, "error.type"), Some("no_response"));
        assert_eq!(attr_of(read, "network.transport"), Some("pipe"));
        assert!(
            session["status"].as_object().unwrap().is_empty(),
            "unset: no code written"
        );
    }

    #[test]
    fn task_polls_and_retried_rounds_link_to_where_they_began() {
        let spans = export(&[
            (
                Out,
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"long","task":{}}}"#,
            ),
            (
                In,
                r#"{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"t-9","status":"working"}}}"#,
            ),
            (
                Out,
                r#"{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"t-9"}}"#,
            ),
            (
                In,
                r#"{"jsonrpc":"2.0","id":2,"result":{"taskId":"t-9","status":"completed"}}"#,
            ),
            (
                Out,
                r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ask"}}"#,
            ),
            (
                In,
                r#"{"jsonrpc":"2.0","id":3,"result":{"resultType":"input_required","inputRequests":{}}}"#,
            ),
            (
                Out,
                r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ask","requestState":"s"}}"#,
            ),
            (In, r#"{"jsonrpc":"2.0","id":4,"result":{"content":[]}}"#),
        ]);
        let (created, poll, first, retry) = (&spans[1], &spans[2], &spans[3], &spans[4]);
        assert_eq!(poll["links"][0]["spanId"], created["spanId"]);
        assert_eq!(poll["links"][0]["attributes"][0]["value"]["stringValue"], "task");
        assert_eq!(retry["links"][0]["spanId"], first["spanId"]);
        assert!(first.get("links").is_none());
    }
}
