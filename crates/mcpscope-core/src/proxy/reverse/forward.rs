//! Forwarding one request upstream through ureq, on a blocking thread, and
//! the answer back to the client's connection task over a channel: its head,
//! then the body as it comes (an SSE stream one event at a time).

use super::gated::Verdict;
use super::rewrite::{is_json_rpc, is_secret_header, masked_url, rewrite_endpoint, rewrite_resource};
use super::sse_relay::{SseRelay, Step};
use super::{Ctx, HOP_BY_HOP, lock};
use crate::listen::request::{MAX_REQUEST_BODY, Request};
use crate::listen::response::{CHUNK_END, LAST_CHUNK, chunk, chunk_size_line, plain_answer};
use crate::proxy::gate::wire_bytes;
use crate::transport::event::HttpInfo;
use crate::transport::target::mask_value;
use crate::wire::frame::Direction;
use crate::wire::frame::Frame;
use crate::wire::framing::LineEnding;
use crate::wire::sse::SseParser;
use serde_json::Value;
use std::io::{self, Read, Write};
use std::time::Instant;
use tokio::sync::mpsc;

/// The bytes for the client, handed to its connection task. A send fails once
/// that task has stopped reading them (the client went away).
pub(super) struct Sink(pub(super) mpsc::Sender<Vec<u8>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.send(buf.to_vec())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Sink {
    fn send(&mut self, bytes: Vec<u8>) -> io::Result<()> {
        self.0
            .blocking_send(bytes)
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the client connection closed"))
    }
}

fn header_str(resp: &ureq::http::Response<ureq::Body>, name: &str) -> Option<String> {
    resp.headers()
        .get(name)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

/// Forwards one request and writes the answer. Returns whether the client
/// connection can carry another request.
pub(super) fn forward(ctx: &Ctx, req: &Request, out: &mut Sink) -> io::Result<bool> {
    forward_with(ctx, req, out, true)
}

/// A message the user injected toward the server: POSTed on the client's
/// session (the headers of its last JSON-RPC POST), not judged again; the
/// answer is recorded and goes nowhere else.
pub(super) fn inject_upstream(ctx: &Ctx, body: Vec<u8>) {
    let last = ctx.last_client.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let Some(last) = last else {
        lock(&ctx.shared).note(
            "not sent to the server: no request of the client's seen yet to take the session's headers from".into(),
        );
        return;
    };
    let req = Request {
        body: strip_line_end(body),
        ..last
    };
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(64);
    let drain = std::thread::spawn(move || while rx.blocking_recv().is_some() {});
    let mut sink = Sink(tx);
    if let Err(e) = forward_with(ctx, &req, &mut sink, false) {
        lock(&ctx.shared).note(format!("the injected message's exchange failed: {e}"));
    }
    drop(sink);
    let _ = drain.join();
}

fn forward_with(ctx: &Ctx, req: &Request, out: &mut Sink, judge: bool) -> io::Result<bool> {
    let started = Instant::now();
    let url = format!("{}{}", ctx.upstream_origin, req.target);
    let parsed = url::Url::parse(&url).ok();
    let shown_url = parsed.as_ref().map_or_else(|| url.clone(), masked_url);
    let sent: Vec<(String, String)> = req
        .headers
        .iter()
        .filter(|(k, _)| !k.eq_ignore_ascii_case("host"))
        .map(|(k, v)| {
            let v = if is_secret_header(k) { mask_value(v) } else { v.clone() };
            (k.clone(), v)
        })
        .collect();
    let json_rpc_out = !req.body.is_empty() && is_json_rpc(&req.body);
    // An injected message is on the record as the proxy's touch, not as a
    // frame of the client's.
    let out_frame = (json_rpc_out && judge)
        .then(|| lock(&ctx.shared).frame(Direction::Out, req.body.clone(), LineEnding::Lf, started));
    if judge && json_rpc_out && req.method == "POST" {
        // What an injected message is sent with.
        *ctx.last_client.lock().unwrap_or_else(|p| p.into_inner()) = Some(req.clone());
    }
    let request_id = json_rpc_out
        .then(|| serde_json::from_slice::<Value>(&req.body).ok())
        .flatten()
        .and_then(|v| v.get("id").and_then(crate::wire::message::RequestId::from_json));
    let base = HttpInfo {
        method: req.method.clone(),
        url: shown_url,
        sent,
        request_id,
        ..HttpInfo::default()
    };

    // The gate's verdict on the client's message: on, changed, answered here, or not at all.
    let mut slow = None;
    let mut duplicate = None;
    let edited;
    let req = match (&ctx.gate, &out_frame) {
        (Some(gate), Some(frame)) if judge => match gate.judge(&ctx.shared, frame) {
            Verdict::Send { mut bodies, slow: s } => {
                slow = s;
                let first = bodies.remove(0);
                duplicate = bodies.pop().map(|b| body_of(b, frame, req));
                let body = body_of(first, frame, req);
                if body == req.body {
                    req
                } else {
                    edited = Request { body, ..req.clone() };
                    &edited
                }
            }
            Verdict::Answer(bytes) => {
                let body = strip_line_end(bytes);
                let mut answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                    body.len()
                )
                .into_bytes();
                answer.extend_from_slice(&body);
                out.send(answer)?;
                lock(&ctx.shared).http(
                    HttpInfo {
                        status: Some(200),
                        text: "answered by the proxy; the upstream never saw it".into(),
                        ..base
                    },
                    Instant::now(),
                );
                lock(&ctx.shared).flush();
                return Ok(true);
            }
            Verdict::Status { code, retry_after } => {
                let (mut head, body) = fault_status(code, retry_after);
                head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
                let mut answer = head.into_bytes();
                answer.extend_from_slice(&body);
                out.send(answer)?;
                lock(&ctx.shared).http(
                    HttpInfo {
                        status: Some(code),
                        text: "answered by the proxy's fault rule; the upstream never saw it".into(),
                        ..base
                    },
                    Instant::now(),
                );
                lock(&ctx.shared).flush();
                return Ok(true);
            }
            Verdict::Drop => {
                // As if the upstream accepted it and never answered.
                out.send(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n".to_vec())?;
                lock(&ctx.shared).http(
                    HttpInfo {
                        status: Some(202),
                        text: "dropped by the proxy: accepted, never sent upstream".into(),
                        ..base
                    },
                    Instant::now(),
                );
                lock(&ctx.shared).flush();
                return Ok(true);
            }
            Verdict::Disconnect => {
                let mut shared = lock(&ctx.shared);
                shared.note(format!(
                    "closed the client's connection instead of forwarding {} {}",
                    req.method, req.target
                ));
                shared.flush();
                return Ok(false);
            }
        },
        _ => req,
    };
    let result = send_upstream(ctx, req, &url);
    let resp = match result {
        Ok(r) => r,
        Err(e) => {
            let why = format!("the upstream could not be reached: {e}");
            lock(&ctx.shared).http(
                HttpInfo {
                    error: Some(why.clone()),
                    ..base
                },
                Instant::now(),
            );
            out.send(plain_answer(502, &format!("mcpscope proxy: {why}")))?;
            return Ok(false);
        }
    };
    let status = resp.status().as_u16();
    let content_type = header_str(&resp, "content-type")
        .unwrap_or_default()
        .to_ascii_lowercase();
    let sse = content_type.starts_with("text/event-stream");
    let received = crate::transport::http::joined_headers(&resp, crate::transport::http::RELEVANT);
    let length: Option<u64> = header_str(&resp, "content-length").and_then(|l| l.trim().parse().ok());
    let no_body = req.method == "HEAD" || status == 204 || status == 304 || (100..200).contains(&status);
    let prm = req.target.starts_with("/.well-known/oauth-protected-resource") && status == 200;

    // Status line and headers, with the upstream's origin turned into ours where a client would follow it.
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\n",
        ureq::http::StatusCode::from_u16(status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("")
    );
    for (k, v) in resp.headers() {
        let name = k.as_str();
        if HOP_BY_HOP.contains(&name) || name == "content-length" {
            continue;
        }
        let mut value = String::from_utf8_lossy(v.as_bytes()).into_owned();
        if name == "location" || name == "www-authenticate" || name == "content-location" {
            value = value.replace(&ctx.upstream_origin, &ctx.local_origin());
        }
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    let mut body = resp.into_body().into_reader();
    let chunked;
    if no_body {
        chunked = false;
        if let Some(l) = length.filter(|_| req.method == "HEAD") {
            head.push_str(&format!("content-length: {l}\r\n"));
        }
    } else if prm {
        // Small JSON: read it whole so `resource` can name the proxy.
        let mut bytes = Vec::new();
        body.by_ref().take(1024 * 1024).read_to_end(&mut bytes)?;
        let bytes = rewrite_resource(&bytes, &ctx.upstream_origin, &ctx.local_origin());
        head.push_str(&format!("content-length: {}\r\n\r\n", bytes.len()));
        let mut all = head.into_bytes();
        all.extend_from_slice(&bytes);
        out.send(all)?;
        lock(&ctx.shared).http(
            HttpInfo {
                status: Some(status),
                received,
                text: format!(
                    "protected-resource metadata ({} bytes), resource pointed at the proxy",
                    bytes.len()
                ),
                ..base
            },
            Instant::now(),
        );
        return Ok(true);
    } else if let (Some(gate), false) = (&ctx.gate, sse) {
        return gated_whole(
            ctx,
            gate,
            req,
            head,
            body,
            out,
            base,
            status,
            received,
            slow,
            &content_type,
        );
    } else if let (Some(l), false) = (length, sse) {
        chunked = false;
        head.push_str(&format!("content-length: {l}\r\n"));
    } else {
        chunked = true;
        head.push_str("transfer-encoding: chunked\r\n");
    }
    head.push_str("\r\n");
    out.send(head.into_bytes())?;
    let what = if sse {
        "SSE stream".to_owned()
    } else if content_type.is_empty() {
        "response".to_owned()
    } else {
        content_type.split(';').next().unwrap_or_default().to_owned()
    };
    lock(&ctx.shared).http(
        HttpInfo {
            status: Some(status),
            received,
            text: if sse {
                "the answer comes as an SSE stream".into()
            } else {
                String::new()
            },
            ..base.clone()
        },
        Instant::now(),
    );
    if no_body {
        return Ok(true);
    }
    let mut sink = ClientBody {
        out,
        chunked,
        rate: slow,
    };
    // A client's standing stream (GET): what the user injects toward the
    // client is written into it.
    let stream = match (&ctx.gate, sse && req.method == "GET" && chunked) {
        (Some(gate), true) => Some((gate.clone(), gate.open_client_stream(sink.out.0.clone()))),
        _ => None,
    };
    let outcome = if sse {
        let relayed = relay_sse(ctx, req, &mut body, &mut sink);
        if let Some((gate, id)) = &stream {
            gate.close_client_stream(*id);
        }
        relayed
    } else {
        relay_whole(ctx, &mut body, &mut sink, &what)
    };
    match outcome {
        Ok(()) => {
            sink.finish()?;
            if let Some(body) = duplicate {
                send_duplicate(ctx, req, &url, body);
            }
            Ok(true)
        }
        Err(RelayError::Client(e)) => {
            lock(&ctx.shared).note(format!(
                "the client closed the connection during the {what} of {} {}: {e}",
                req.method, req.target
            ));
            Ok(false)
        }
        Err(RelayError::Upstream(e)) => {
            lock(&ctx.shared).note(format!(
                "the upstream's {what} for {} {} broke off: {e}",
                req.method, req.target
            ));
            // The client must see the cut: end the connection without a last chunk.
            Ok(false)
        }
    }
}

/// An `http-status` rule's answer: its head without the length (the
/// headers so far) and its body.
fn fault_status(code: u16, retry_after: Option<u32>) -> (String, Vec<u8>) {
    let mut head = format!(
        "HTTP/1.1 {code} {}\r\ncontent-type: text/plain; charset=utf-8\r\n",
        ureq::http::StatusCode::from_u16(code)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("")
    );
    if let Some(s) = retry_after {
        head.push_str(&format!("retry-after: {s}\r\n"));
    }
    let body = format!("mcpscope proxy: HTTP {code} from a fault rule\n").into_bytes();
    (head, body)
}

/// The body to send for what the gate gave back: the original bytes when it
/// left the message as it came (byte for byte), else the new bytes without
/// the line ending the gate adds.
fn body_of(bytes: Vec<u8>, frame: &Frame, req: &Request) -> Vec<u8> {
    if bytes == wire_bytes(frame) {
        req.body.clone()
    } else {
        strip_line_end(bytes)
    }
}

fn strip_line_end(mut bytes: Vec<u8>) -> Vec<u8> {
    if bytes.ends_with(b"\n") {
        bytes.pop();
        if bytes.ends_with(b"\r") {
            bytes.pop();
        }
    }
    bytes
}

fn send_upstream(ctx: &Ctx, req: &Request, url: &str) -> Result<ureq::http::Response<ureq::Body>, ureq::Error> {
    let mut builder = ureq::http::Request::builder().method(req.method.as_str()).uri(url);
    for (k, v) in &req.headers {
        let lk = k.to_ascii_lowercase();
        if HOP_BY_HOP.contains(&lk.as_str())
            || matches!(
                lk.as_str(),
                "host" | "content-length" | "accept-encoding" | "expect" | "origin"
            )
        {
            continue;
        }
        builder = builder.header(k.as_str(), v.as_str());
    }
    let bodyless = req.body.is_empty() && matches!(req.method.as_str(), "GET" | "HEAD" | "DELETE" | "OPTIONS");
    if bodyless {
        let r = builder.body(()).map_err(|e| ureq::Error::BadUri(e.to_string()))?;
        ctx.agent.run(r)
    } else {
        let r = builder
            .body(req.body.clone())
            .map_err(|e| ureq::Error::BadUri(e.to_string()))?;
        ctx.agent.run(r)
    }
}

/// Replaces the upstream origin at the start of a JSON document's `resource`.
enum RelayError {
    Client(io::Error),
    Upstream(io::Error),
}

/// Larger chunks are not copied to put their size line and CRLF around
/// them: those go to the client's connection on their own.
const FRAMED_BY_COPY: usize = 64 * 1024;

/// The response body towards the client: chunked or as is, at a fault
/// rule's `slow` rate if one applies.
struct ClientBody<'a> {
    out: &'a mut Sink,
    chunked: bool,
    /// Bytes a second.
    rate: Option<u64>,
}

impl ClientBody<'_> {
    fn send(&mut self, bytes: Vec<u8>) -> io::Result<()> {
        match self.rate {
            // Ten pieces a second, each a tenth of the rate.
            Some(rate) => {
                let piece = (rate / 10).max(1) as usize;
                for part in bytes.chunks(piece) {
                    self.send_now(part.to_vec())?;
                    std::thread::sleep(std::time::Duration::from_secs_f64(part.len() as f64 / rate as f64));
                }
                Ok(())
            }
            None => self.send_now(bytes),
        }
    }

    fn send_now(&mut self, bytes: Vec<u8>) -> io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        if !self.chunked {
            return self.out.send(bytes);
        }
        if bytes.len() > FRAMED_BY_COPY {
            // A whole event of many megabytes goes as it is: a framed copy
            // would hold it twice.
            self.out.send(chunk_size_line(bytes.len()))?;
            self.out.send(bytes)?;
            return self.out.send(CHUNK_END.to_vec());
        }
        self.out.send(chunk(&bytes))
    }

    fn finish(&mut self) -> io::Result<()> {
        if self.chunked {
            self.out.send(LAST_CHUNK.to_vec())?;
        }
        Ok(())
    }
}

/// A `duplicate` rule: the message goes upstream a second time once the
/// first exchange is over; the second answer is noted, not relayed.
fn send_duplicate(ctx: &Ctx, req: &Request, url: &str, body: Vec<u8>) {
    let again = Request { body, ..req.clone() };
    let note = match send_upstream(ctx, &again, url) {
        Ok(resp) => {
            let status = resp.status().as_u16();
            let _ = std::io::copy(&mut resp.into_body().into_reader(), &mut std::io::sink());
            format!(
                "sent {} {} upstream a second time (duplicate): HTTP {status}, its answer not relayed",
                req.method, req.target
            )
        }
        Err(e) => format!(
            "sent {} {} upstream a second time (duplicate): {e}",
            req.method, req.target
        ),
    };
    lock(&ctx.shared).note(note);
}

/// A JSON answer with a gate: read whole, recorded, judged, then sent as
/// the gate says (the head is written only then, with the right length).
#[allow(clippy::too_many_arguments)]
fn gated_whole(
    ctx: &Ctx,
    gate: &super::gated::HttpGate,
    req: &Request,
    mut head: String,
    mut body: impl Read,
    out: &mut Sink,
    base: HttpInfo,
    status: u16,
    received: Vec<(String, String)>,
    slow: Option<u64>,
    content_type: &str,
) -> io::Result<bool> {
    let mut all = Vec::new();
    if let Err(e) = body.by_ref().take(MAX_REQUEST_BODY as u64 + 1).read_to_end(&mut all) {
        lock(&ctx.shared).note(format!(
            "the upstream's answer for {} {} broke off: {e}",
            req.method, req.target
        ));
        return Ok(false);
    }
    let too_big = all.len() > MAX_REQUEST_BODY;
    let judged = (!too_big && !all.is_empty() && is_json_rpc(&all)).then(|| {
        let frame = lock(&ctx.shared).frame(Direction::In, all.clone(), LineEnding::Lf, Instant::now());
        let verdict = gate.judge(&ctx.shared, &frame);
        (frame, verdict)
    });
    let mut rate = slow;
    let mut text = String::new();
    let mut status_sent = status;
    let bytes = match judged {
        None => all,
        Some((frame, Verdict::Send { mut bodies, slow })) => {
            rate = slow.or(rate);
            let first = bodies.remove(0);
            if first == wire_bytes(&frame) {
                all
            } else {
                text = "the answer changed by the proxy".into();
                strip_line_end(first)
            }
        }
        Some((_, Verdict::Status { code, retry_after })) => {
            let (h, body) = fault_status(code, retry_after);
            head = h;
            status_sent = code;
            text = format!("the upstream's answer replaced by HTTP {code} (fault rule)");
            body
        }
        Some((_, Verdict::Disconnect)) => {
            lock(&ctx.shared).note(format!(
                "closed the client's connection instead of answering {} {}",
                req.method, req.target
            ));
            return Ok(false);
        }
        Some((_, Verdict::Drop | Verdict::Answer(_))) => {
            // Never answered: the client waits as for a lost message, until
            // it gives up and closes (or the proxy stops).
            lock(&ctx.shared).note(format!(
                "the answer to {} {} was dropped: the client gets none",
                req.method, req.target
            ));
            while !out.0.is_closed() && !gate.stopped() {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            return Ok(false);
        }
    };
    head.push_str(&format!("content-length: {}\r\n\r\n", bytes.len()));
    out.send(head.into_bytes())?;
    lock(&ctx.shared).http(
        HttpInfo {
            status: Some(status_sent),
            received,
            text,
            ..base
        },
        Instant::now(),
    );
    let mut sink = ClientBody {
        out,
        chunked: false,
        rate,
    };
    if sink.send(bytes).is_err() {
        lock(&ctx.shared).note(format!(
            "the client closed the connection during the {content_type} answer of {} {}",
            req.method, req.target
        ));
        return Ok(false);
    }
    Ok(true)
}

fn relay_whole(ctx: &Ctx, body: &mut impl Read, sink: &mut ClientBody, what: &str) -> Result<(), RelayError> {
    let mut all = Vec::new();
    let mut buf = vec![0; 64 * 1024];
    let mut kept = true;
    loop {
        let n = match body.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(RelayError::Upstream(e)),
        };
        sink.send(buf[..n].to_vec()).map_err(RelayError::Client)?;
        if kept && all.len() + n <= MAX_REQUEST_BODY {
            all.extend_from_slice(&buf[..n]);
        } else {
            kept = false;
        }
    }
    let mut shared = lock(&ctx.shared);
    if kept && !all.is_empty() && is_json_rpc(&all) {
        shared.frame(Direction::In, all, LineEnding::Lf, Instant::now());
    } else if !all.is_empty() || !kept {
        shared.note(format!(
            "a {what} body of {} bytes passed through (not JSON-RPC, so not recorded)",
            all.len()
        ));
    }
    shared.flush();
    Ok(())
}

/// Forwards an SSE stream event by event, recording each event's data; an
/// event longer than the in-memory cap passes in pieces (see [`SseRelay`]).
fn relay_sse(ctx: &Ctx, req: &Request, body: &mut impl Read, sink: &mut ClientBody) -> Result<(), RelayError> {
    let mut relay = SseRelay::new(ctx.max_held);
    let mut buf = vec![0; 64 * 1024];
    let local_origin = ctx.local_origin();
    let mut step = |s: Step| relay_step(ctx, req, &local_origin, s, sink);
    loop {
        let n = match body.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                // Keep what came of a cut event.
                let _ = relay.finish(&mut step);
                return Err(RelayError::Upstream(e));
            }
        };
        relay.feed(&buf[..n], &mut step)?;
    }
    relay.finish(&mut step)
}

/// Does what the relay says with the next part of the stream.
fn relay_step(
    ctx: &Ctx,
    req: &Request,
    local_origin: &str,
    step: Step,
    sink: &mut ClientBody,
) -> Result<(), RelayError> {
    match step {
        Step::Event { bytes, ended: true } => {
            let event = rewrite_endpoint(bytes, &ctx.upstream_origin, local_origin);
            let frames = record_event(ctx, &event, false);
            match &ctx.gate {
                Some(gate) => {
                    if let Some(event) = gated_event(ctx, gate, event, &frames, sink)? {
                        sink.send(event).map_err(RelayError::Client)
                    } else {
                        Ok(())
                    }
                }
                None => {
                    // Let go of the recorded copy before the event waits in the queue.
                    drop(frames);
                    sink.send(event).map_err(RelayError::Client)
                }
            }
        }
        Step::Event { bytes, ended: false } => {
            record_event(ctx, &bytes, true);
            sink.send(bytes).map_err(RelayError::Client)
        }
        Step::Overlong(bytes) => {
            let judged = if ctx.gate.is_some() {
                "; no breakpoint or fault rule saw it"
            } else {
                ""
            };
            lock(&ctx.shared).note(format!(
                "an SSE event of the upstream's answer to {} {} is longer than the in-memory cap ({}): passed on \
                 as it came and recorded in pieces, not read as a message{judged}",
                req.method,
                req.target,
                crate::text::human_bytes(ctx.max_held as u64)
            ));
            sink.send(bytes).map_err(RelayError::Client)
        }
        Step::Pass(bytes) => sink.send(bytes).map_err(RelayError::Client),
        Step::Data(ev) => {
            let mut shared = lock(&ctx.shared);
            let ending = ev.ending();
            shared.frame(Direction::In, ev.data, ending, Instant::now());
            shared.flush();
            Ok(())
        }
    }
}

/// An SSE event with a gate: each message in it judged; the event as the
/// client gets it (None: dropped), or the connection closed.
fn gated_event(
    ctx: &Ctx,
    gate: &super::gated::HttpGate,
    event: Vec<u8>,
    frames: &[Frame],
    sink: &mut ClientBody,
) -> Result<Option<Vec<u8>>, RelayError> {
    let mut rebuilt = Vec::new();
    let mut changed = false;
    for frame in frames {
        match gate.judge(&ctx.shared, frame) {
            Verdict::Send { bodies, slow } => {
                if slow.is_some() {
                    sink.rate = slow;
                }
                for b in bodies {
                    if b != wire_bytes(frame) {
                        changed = true;
                    }
                    rebuilt.push(strip_line_end(b));
                }
                if rebuilt.len() > 1 {
                    changed = true;
                }
            }
            Verdict::Drop | Verdict::Answer(_) => changed = true,
            Verdict::Status { code, .. } => {
                // The stream's head is long gone: only the event can go.
                lock(&ctx.shared).note(format!(
                    "http-status {code} on an SSE event: the stream's status was already sent; the event is dropped"
                ));
                changed = true;
            }
            Verdict::Disconnect => {
                return Err(RelayError::Client(io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    "disconnected by a fault rule",
                )));
            }
        }
    }
    if !changed {
        return Ok(Some(event));
    }
    if rebuilt.is_empty() {
        return Ok(None);
    }
    // Each message its own event, as `data:` lines (an id or event name of
    // the original event is not kept for a message the proxy changed).
    let mut out = Vec::new();
    for body in rebuilt {
        for line in body.split(|b| *b == b'\n') {
            out.extend_from_slice(b"data: ");
            out.extend_from_slice(line);
            out.push(b'\n');
        }
        out.push(b'\n');
    }
    Ok(Some(out))
}

/// Records the messages of an SSE event held whole; returns their frames.
fn record_event(ctx: &Ctx, raw: &[u8], truncated: bool) -> Vec<Frame> {
    let mut events = Vec::new();
    let mut parser = SseParser::default();
    parser.feed(raw, &mut |ev| events.push(ev));
    parser.finish(&mut |ev| events.push(ev));
    let mut frames = Vec::new();
    let mut shared = lock(&ctx.shared);
    for ev in events {
        if !ev.has_data() {
            continue;
        }
        if ev.kind() == "endpoint" {
            shared.note(format!("SSE endpoint: {}", String::from_utf8_lossy(&ev.data)));
            continue;
        }
        let ending = if truncated { LineEnding::Eof } else { ev.ending() };
        frames.push(shared.frame(Direction::In, ev.data, ending, Instant::now()));
    }
    shared.flush();
    frames
}
