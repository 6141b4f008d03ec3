//! An HTTP reverse proxy between a real client and a remote MCP server
//! (Streamable HTTP, and the older HTTP+SSE transport), recording both
//! directions the way the HTTP transport records its own sessions.
//!
//! The client is pointed at `http://127.0.0.1:PORT/<the server's path>`;
//! every request is forwarded to the same path on the upstream's origin, so
//! the MCP endpoint, OAuth metadata under `/.well-known/`, and an HTTP+SSE
//! server's message endpoint all pass through. Request and response headers
//! pass through (`Authorization`, `Mcp-Session-Id`, `MCP-Protocol-Version`,
//! `Last-Event-ID`, …) except the hop-by-hop ones, `Host` (the upstream's) and
//! `Accept-Encoding` (so bodies can be recorded). Redirects are not followed:
//! they go back to the client, with `Location` on the upstream's origin
//! turned into the proxy's, as are `resource_metadata` in `WWW-Authenticate`
//! and `resource` in protected-resource metadata, so a client that checks the
//! resource against the URL it uses still accepts it. SSE streams go to the
//! client event by event as each one ends.
//!
//! It binds to loopback only and refuses (403) a request whose `Host` or
//! `Origin` is not local, so a web page cannot reach it through DNS rebinding;
//! a request with two `Host` or two `Origin` headers, or a malformed body, is
//! refused (400) before anything goes upstream.
//!
//! What is recorded: each exchange as an [`Event::Http`] with masked
//! credentials; JSON-RPC bodies and SSE events as frames (client to server
//! `Out`, server to client `In`). Other bodies (OAuth tokens, HTML pages) are
//! summarised by type and size, never written down.

use crate::record::capture;
use crate::record::recorder::Recorder;
use crate::record::session_index::{ClientInfo, EndCause, LiveSession, NewSession};
use crate::transport::event::{Event, HttpInfo};
use crate::transport::proxy::SessionOptions;
use crate::transport::target::mask_value;
use crate::wire::classify::Limits;
use crate::wire::frame::Direction;
use crate::wire::framing::{LineEnding, RawLine};
use crate::wire::sse::SseReader;
use anyhow::{Context, Result, bail};
use serde_json::Value;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Requests larger than this are refused (413): MCP messages are far smaller.
const MAX_REQUEST_BODY: usize = 64 * 1024 * 1024;
const MAX_HEAD: usize = 64 * 1024;
/// How long a kept-alive client connection may sit idle between requests.
const IDLE: Duration = Duration::from_secs(300);

/// Headers that belong to one connection, not to the message (RFC 9110 §7.6.1).
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

#[derive(Clone, Debug)]
pub struct ReverseProxyOptions {
    pub listen: SocketAddr,
    /// The remote server's MCP endpoint.
    pub upstream: url::Url,
    pub capture: Option<PathBuf>,
    pub session: Option<SessionOptions>,
    /// Client connections served at once; more get 503.
    pub max_connections: usize,
    pub connect_timeout: Duration,
    pub limits: Limits,
}

impl ReverseProxyOptions {
    /// Checks `listen` (a loopback address, port 0 for any free one) and
    /// `upstream` (an http or https URL).
    pub fn new(listen: &str, upstream: &str) -> Result<Self, String> {
        let shown = crate::transport::target::mask_url(upstream);
        let upstream_url = url::Url::parse(upstream).map_err(|e| format!("--upstream {shown:?}: {e}"))?;
        if !matches!(upstream_url.scheme(), "http" | "https") || upstream_url.host().is_none() {
            return Err(format!("--upstream must be an http:// or https:// URL, got {shown:?}"));
        }
        Ok(Self {
            listen: loopback_addr(listen)?,
            upstream: upstream_url,
            capture: None,
            session: None,
            max_connections: 64,
            connect_timeout: Duration::from_secs(10),
            limits: Limits::default(),
        })
    }
}

/// Resolves `listen` and insists that it is a loopback address: the proxy
/// forwards the client's credentials, so nothing else may reach it.
fn loopback_addr(listen: &str) -> Result<SocketAddr, String> {
    let addrs: Vec<SocketAddr> = listen
        .to_socket_addrs()
        .map_err(|e| format!("--listen {listen:?}: {e} (expected e.g. 127.0.0.1:8931)"))?
        .collect();
    match addrs.iter().find(|a| a.ip().is_loopback()) {
        Some(a) if addrs.iter().all(|a| a.ip().is_loopback()) => Ok(*a),
        _ => Err(format!(
            "--listen {listen:?} is not a loopback address; the proxy only listens on 127.0.0.1, [::1] or localhost"
        )),
    }
}

/// What the proxy has to say when it stops.
#[derive(Debug, Default)]
pub struct ReverseOutcome {
    pub notes: Vec<String>,
}

/// Recording shared by the connection threads.
struct Shared {
    recorder: Recorder,
    live: Option<LiveSession>,
    /// Told once on stderr, when recording fails.
    capture_failure_told: bool,
}

impl Shared {
    fn record(&mut self, ev: Event) {
        if let Some(Event::Note { text, .. }) = self.recorder.capture(&ev)
            && !self.capture_failure_told
        {
            self.capture_failure_told = true;
            eprintln!("mcpscope proxy: {text}; forwarding goes on");
        }
    }

    fn flush(&mut self) {
        if let Some(Event::Note { text, .. }) = self.recorder.flush()
            && !self.capture_failure_told
        {
            self.capture_failure_told = true;
            eprintln!("mcpscope proxy: {text}; forwarding goes on");
        }
    }

    fn frame(&mut self, direction: Direction, bytes: Vec<u8>, ending: LineEnding, at: Instant) {
        let at = self.recorder.since_start(at);
        let frame = self.recorder.frame_at(direction, RawLine { bytes, ending }, at, None);
        if direction == Direction::Out
            && frame.class.method.as_deref() == Some("initialize")
            && let Some(live) = self.live.as_mut()
            && live.record().client.is_none()
            && let Some(info) = frame.json().and_then(|v| v.pointer("/params/clientInfo").cloned())
            && let Some(name) = info.get("name").and_then(Value::as_str)
        {
            let client = ClientInfo {
                name: name.to_owned(),
                version: info.get("version").and_then(Value::as_str).map(str::to_owned),
            };
            if let Err(e) = live.set_client(client) {
                eprintln!("mcpscope proxy: cannot update the session record: {e}");
            }
        }
        self.record(Event::Frame(frame));
    }

    fn http(&mut self, mut info: HttpInfo, at: Instant) {
        info.at = self.recorder.since_start(at);
        self.record(Event::Http(info));
    }

    fn note(&mut self, text: String) {
        let at = self.recorder.now();
        self.record(Event::Note { at, text });
    }
}

pub struct ReverseProxy {
    listener: TcpListener,
    local: SocketAddr,
    options: ReverseProxyOptions,
    shared: Arc<Mutex<Shared>>,
    agent: ureq::Agent,
    stop: Arc<AtomicBool>,
    notes: Vec<String>,
}

/// Stops a running [`ReverseProxy`] from another thread.
#[derive(Clone)]
pub struct Stopper {
    stop: Arc<AtomicBool>,
    local: SocketAddr,
}

impl Stopper {
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop.
        let _ = TcpStream::connect_timeout(&self.local, Duration::from_secs(1));
    }
}

impl ReverseProxy {
    /// Binds the listening socket and opens the recording.
    pub fn bind(options: ReverseProxyOptions) -> Result<Self> {
        let listener =
            TcpListener::bind(options.listen).with_context(|| format!("cannot listen on {}", options.listen))?;
        let local = listener.local_addr()?;
        let mut notes = Vec::new();
        let mut recorder = Recorder::new(options.limits, Instant::now());
        // Recorded (capture header, session index) and said with userinfo and
        // secret-looking query values masked, as `call` records its URL.
        let shown_upstream = crate::transport::target::mask_url(options.upstream.as_str());
        let header = capture::Header {
            started_unix_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            command_line: format!("mcpscope proxy --listen {local} --upstream {shown_upstream}"),
            mode: "proxy".into(),
            transport: "http".into(),
            url: Some(shown_upstream.clone()),
            ..capture::Header::default()
        };
        let mut live = None;
        if let Some(session) = &options.session {
            let new = NewSession::http(&session.name, &local.to_string(), &shown_upstream);
            match LiveSession::start(&session.dir, new) {
                Ok((l, file)) => {
                    match capture::Writer::with_file(file, l.capture_path(), &header) {
                        Ok(w) => recorder = recorder.with_capture(w),
                        Err(e) => notes.push(format!("{e:#}")),
                    }
                    live = Some(l);
                }
                Err(e) => notes.push(format!("cannot record the session in {}: {e}", session.dir.display())),
            }
        } else if let Some(path) = &options.capture {
            match capture::Writer::open(path, &header) {
                Ok(w) => recorder = recorder.with_capture(w),
                Err(e) => notes.push(format!("{e:#}")),
            }
        }
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_connect(Some(options.connect_timeout))
            // Only the client's own headers go upstream.
            .user_agent("")
            .accept("")
            .accept_encoding("")
            .build()
            .into();
        Ok(Self {
            listener,
            local,
            options,
            shared: Arc::new(Mutex::new(Shared {
                recorder,
                live,
                capture_failure_told: false,
            })),
            agent,
            stop: Arc::new(AtomicBool::new(false)),
            notes,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Problems met while binding (a session that cannot be recorded…), to tell at once.
    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    /// The URL a client should use for the upstream's MCP endpoint.
    pub fn client_url(&self) -> String {
        local_url(self.local, &self.options.upstream)
    }

    pub fn stopper(&self) -> Stopper {
        Stopper {
            stop: self.stop.clone(),
            local: self.local,
        }
    }

    /// Serves until [`Stopper::stop`]; `why` says what stopped it, for the record.
    pub fn serve(mut self, why: impl FnOnce() -> String) -> ReverseOutcome {
        let ctx = Arc::new(Ctx {
            agent: self.agent.clone(),
            upstream_origin: origin(&self.options.upstream),
            local: self.local,
            shared: self.shared.clone(),
            active: AtomicUsize::new(0),
            max: self.options.max_connections.max(1),
        });
        for conn in self.listener.incoming() {
            if self.stop.load(Ordering::SeqCst) {
                break;
            }
            let Ok(stream) = conn else { continue };
            let Some(slot) = Slot::take(&ctx) else {
                let mut s = stream;
                let _ = respond_plain(&mut s, 503, "mcpscope proxy: too many connections at once");
                continue;
            };
            // The slot goes back when the thread ends, however it ends (a
            // panic included), or at once if the thread cannot be started.
            let _ = std::thread::Builder::new()
                .name("mcpscope-rproxy-conn".into())
                .spawn(move || serve_connection(&slot.0, stream));
        }
        let text = why();
        let mut shared = lock(&self.shared);
        shared.note(format!("the proxy stopped: {text}"));
        shared.flush();
        if let Some(failed) = shared.recorder.capture_failed() {
            self.notes.push(failed.to_owned());
        }
        if let Some(live) = shared.live.as_mut()
            && let Err(e) = live.finish(EndCause::ProxyStopped, format!("the proxy stopped: {text}"), None)
        {
            self.notes.push(format!("cannot update the session record: {e}"));
        }
        ReverseOutcome { notes: self.notes }
    }

    /// Serves until mcpscope is asked to stop (the binary turns SIGINT,
    /// SIGTERM and SIGHUP into [`crate::transport::lifecycle::request_stop`]),
    /// then records how it ended.
    pub fn run_until_stopped(self) -> ReverseOutcome {
        let _live = crate::transport::lifecycle::LiveGuard::new();
        let stop = crate::transport::lifecycle::stop_signal();
        let stopper = self.stopper();
        let _ = std::thread::Builder::new()
            .name("mcpscope-rproxy-stop".into())
            .spawn(move || {
                // Ready (disconnected) once mcpscope is asked to stop.
                let _ = stop.recv();
                stopper.stop();
            });
        self.serve(|| crate::transport::lifecycle::stop_reason().unwrap_or_else(|| "stopped".into()))
    }
}

struct Ctx {
    agent: ureq::Agent,
    /// `https://host[:port]`, no trailing slash.
    upstream_origin: String,
    local: SocketAddr,
    shared: Arc<Mutex<Shared>>,
    active: AtomicUsize,
    max: usize,
}

impl Ctx {
    fn local_origin(&self) -> String {
        format!("http://{}", self.local)
    }
}

/// One of the `max` connection slots, given back when dropped: a connection
/// thread that panics must not keep its slot, or enough hostile requests
/// would leave every later client with a 503.
struct Slot(Arc<Ctx>);

impl Slot {
    fn take(ctx: &Arc<Ctx>) -> Option<Slot> {
        ctx.active
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < ctx.max).then_some(n + 1))
            .ok()
            .map(|_| Slot(ctx.clone()))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::SeqCst);
    }
}

fn lock(shared: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    // A panicking connection thread must not stop the others from recording.
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

fn origin(u: &url::Url) -> String {
    u.origin().ascii_serialization()
}

fn local_url(local: SocketAddr, upstream: &url::Url) -> String {
    let mut s = format!("http://{local}{}", upstream.path());
    if let Some(q) = upstream.query() {
        s.push('?');
        s.push_str(q);
    }
    s
}

/// One request as the client sent it.
struct Request {
    method: String,
    target: String,
    /// HTTP/1.0 (no keep-alive unless asked)?
    http10: bool,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn keep_alive(&self) -> bool {
        let conn = self.header("connection").map(str::to_ascii_lowercase);
        match conn.as_deref() {
            Some(c) if c.split(',').any(|t| t.trim() == "close") => false,
            Some(c) if c.split(',').any(|t| t.trim() == "keep-alive") => true,
            _ => !self.http10,
        }
    }
}

enum ReadOutcome {
    Request(Request),
    /// The connection closed (or idled out) between requests.
    Closed,
    /// The request was malformed; answer with this status and reason, then close.
    Bad(u16, String),
}

fn serve_connection(ctx: &Ctx, stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let Ok(write_half) = stream.try_clone() else { return };
    let mut out = write_half;
    let mut reader = BufReader::new(stream);
    loop {
        let _ = reader.get_ref().set_read_timeout(Some(IDLE));
        let req = match read_request(&mut reader, &mut out) {
            ReadOutcome::Request(r) => r,
            ReadOutcome::Closed => return,
            ReadOutcome::Bad(status, why) => {
                let _ = respond_plain(&mut out, status, &why);
                return;
            }
        };
        if let Err(why) = check_local(&req) {
            lock(&ctx.shared).note(format!("refused {} {}: {why}", req.method, req.target));
            let _ = respond_plain(&mut out, 403, &format!("mcpscope proxy: {why}"));
            return;
        }
        let keep = req.keep_alive();
        match forward(ctx, &req, &mut out) {
            Ok(true) if keep => continue,
            _ => {
                let _ = out.shutdown(Shutdown::Both);
                return;
            }
        }
    }
}

fn read_request(reader: &mut BufReader<TcpStream>, out: &mut TcpStream) -> ReadOutcome {
    let mut head = Vec::new();
    // Request line and headers, up to the blank line.
    loop {
        let mut line = Vec::new();
        match reader.by_ref().take((MAX_HEAD + 1) as u64).read_until(b'\n', &mut line) {
            Ok(0) => {
                return if head.is_empty() {
                    ReadOutcome::Closed
                } else {
                    ReadOutcome::Bad(400, "the request ended inside its headers".into())
                };
            }
            Ok(_) => {}
            Err(_) if head.is_empty() => return ReadOutcome::Closed,
            Err(e) => return ReadOutcome::Bad(400, format!("reading the request failed: {e}")),
        }
        if head.is_empty() && (line == b"\r\n" || line == b"\n") {
            continue; // stray blank lines between requests are allowed
        }
        let blank = line == b"\r\n" || line == b"\n";
        head.extend_from_slice(&line);
        if head.len() > MAX_HEAD {
            return ReadOutcome::Bad(431, "request headers too large".into());
        }
        if blank {
            break;
        }
    }
    let text = match std::str::from_utf8(&head) {
        Ok(t) => t,
        Err(_) => return ReadOutcome::Bad(400, "request headers are not UTF-8".into()),
    };
    let mut lines = text.split('\n').map(|l| l.trim_end_matches('\r'));
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return ReadOutcome::Bad(400, format!("not an HTTP request line: {request_line:?}"));
    };
    if !version.starts_with("HTTP/1.") || method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return ReadOutcome::Bad(400, format!("not an HTTP/1.x request line: {request_line:?}"));
    }
    if !target.starts_with('/') {
        return ReadOutcome::Bad(
            400,
            format!("the proxy serves origin-form targets only, got {target:?}"),
        );
    }
    let mut headers = Vec::new();
    for l in lines.filter(|l| !l.is_empty()) {
        let Some((k, v)) = l.split_once(':') else {
            return ReadOutcome::Bad(400, format!("malformed header line {l:?}"));
        };
        if k.is_empty() || k.bytes().any(|b| b.is_ascii_whitespace()) {
            return ReadOutcome::Bad(400, format!("malformed header name {k:?}"));
        }
        headers.push((k.to_owned(), v.trim().to_owned()));
    }
    // RFC 9112 §3.2: more than one Host is a 400. Two Origins are as
    // ambiguous (which one would the local check have looked at?).
    for name in ["Host", "Origin"] {
        let n = headers.iter().filter(|(k, _)| k.eq_ignore_ascii_case(name)).count();
        if n > 1 {
            return ReadOutcome::Bad(
                400,
                format!("the request has {n} {name} headers; at most one is allowed"),
            );
        }
    }
    let mut req = Request {
        method: method.to_owned(),
        target: target.to_owned(),
        http10: version == "HTTP/1.0",
        headers,
        body: Vec::new(),
    };
    if req
        .header("expect")
        .is_some_and(|e| e.eq_ignore_ascii_case("100-continue"))
    {
        let _ = out.write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
    }
    let chunked = req
        .header("transfer-encoding")
        .is_some_and(|t| t.to_ascii_lowercase().contains("chunked"));
    if chunked {
        match read_chunked(reader) {
            Ok(b) => req.body = b,
            Err(e) => return ReadOutcome::Bad(400, format!("bad chunked request body: {e}")),
        }
    } else if let Some(len) = req.header("content-length") {
        let Ok(len) = len.parse::<usize>() else {
            return ReadOutcome::Bad(400, format!("bad Content-Length {len:?}"));
        };
        if len > MAX_REQUEST_BODY {
            return ReadOutcome::Bad(413, format!("request body of {len} bytes is too large"));
        }
        let mut body = vec![0; len];
        if let Err(e) = reader.read_exact(&mut body) {
            return ReadOutcome::Bad(400, format!("the request body ended early: {e}"));
        }
        req.body = body;
    }
    ReadOutcome::Request(req)
}

/// The longest chunk-size line (size, extensions, CRLF) and trailer line read.
const MAX_CHUNK_LINE: usize = 4096;

fn bad_chunk(why: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why)
}

/// One line of a chunked body, at most [`MAX_CHUNK_LINE`] bytes.
fn read_chunk_line(reader: &mut impl BufRead, what: &str) -> io::Result<Vec<u8>> {
    let mut line = Vec::new();
    reader
        .by_ref()
        .take(MAX_CHUNK_LINE as u64 + 1)
        .read_until(b'\n', &mut line)?;
    if line.len() > MAX_CHUNK_LINE {
        return Err(bad_chunk(format!("{what} longer than {MAX_CHUNK_LINE} bytes")));
    }
    if !line.ends_with(b"\n") {
        return Err(bad_chunk(format!("the body ended inside {what}")));
    }
    Ok(line)
}

/// Decodes a chunked request body, refusing a chunk size that is not hex,
/// overflows, or takes the body past [`MAX_REQUEST_BODY`].
fn read_chunked(reader: &mut impl BufRead) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let size_line = read_chunk_line(reader, "a chunk size line")?;
        let size_line = String::from_utf8_lossy(&size_line);
        let size_hex = size_line.trim().split(';').next().unwrap_or_default().trim();
        if size_hex.is_empty() || !size_hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad_chunk(format!("chunk size {size_hex:?} is not a hex number")));
        }
        let too_large = || {
            bad_chunk(format!(
                "chunk size {size_hex:?} takes the body past the {MAX_REQUEST_BODY} byte limit"
            ))
        };
        // Leading zeros aside, more than 16 hex digits cannot fit in 64 bits.
        let size = u64::from_str_radix(size_hex, 16)
            .ok()
            .and_then(|s| usize::try_from(s).ok())
            .ok_or_else(too_large)?;
        let end = body.len().checked_add(size).ok_or_else(too_large)?;
        if end > MAX_REQUEST_BODY {
            return Err(too_large());
        }
        if size == 0 {
            // Trailers, up to the blank line.
            let mut trailers = 0usize;
            loop {
                let l = read_chunk_line(reader, "the trailers")?;
                if l == b"\r\n" || l == b"\n" {
                    return Ok(body);
                }
                trailers += l.len();
                if trailers > MAX_HEAD {
                    return Err(bad_chunk("trailers too large".into()));
                }
            }
        }
        let start = body.len();
        body.resize(end, 0);
        reader.read_exact(&mut body[start..])?;
        let crlf = read_chunk_line(reader, "the end of a chunk")?;
        if crlf != b"\r\n" && crlf != b"\n" {
            return Err(bad_chunk(format!("chunk data longer than its size {size_hex:?}")));
        }
    }
}

/// Whether a host name (without port) names this machine.
fn is_local_host(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host.to_ascii_lowercase().ends_with(".localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// `host[:port]` or `[v6][:port]` without the port.
fn strip_port(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match authority.rsplit_once(':') {
        Some((h, p)) if p.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => authority,
    }
}

/// DNS-rebinding protection: a page on an attacker's name that resolves to
/// 127.0.0.1 sends its own name as `Host`, and its origin as `Origin`.
fn check_local(req: &Request) -> Result<(), String> {
    match req.header("host") {
        None => return Err("the request has no Host header".into()),
        Some(h) if !is_local_host(strip_port(h)) => {
            return Err(format!(
                "Host {h:?} is not local; the proxy only answers requests addressed to localhost or a loopback address"
            ));
        }
        _ => {}
    }
    if let Some(o) = req.header("origin") {
        let local = url::Url::parse(o)
            .ok()
            .and_then(|u| u.host_str().map(is_local_host))
            .unwrap_or(false);
        if !local {
            return Err(format!(
                "Origin {o:?} is not local; the proxy refuses requests from web pages elsewhere"
            ));
        }
    }
    Ok(())
}

fn is_secret_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    matches!(
        n.as_str(),
        "authorization" | "proxy-authorization" | "cookie" | "set-cookie"
    ) || ["token", "secret", "api-key", "apikey", "password", "auth", "credential"]
        .iter()
        .any(|s| n.contains(s))
}

/// A URL for the record, with userinfo and the values of secret-looking
/// query parameters masked.
fn masked_url(u: &url::Url) -> String {
    if u.query().is_none() {
        return crate::transport::target::mask_url(u.as_str());
    }
    let mut shown = u.clone();
    let pairs: Vec<(String, String)> = u
        .query_pairs()
        .map(|(k, v)| {
            let lk = k.to_ascii_lowercase();
            let secret = ["token", "key", "secret", "password", "code", "sig", "auth"]
                .iter()
                .any(|s| lk.contains(s));
            (k.into_owned(), if secret { "****".into() } else { v.into_owned() })
        })
        .collect();
    shown.query_pairs_mut().clear().extend_pairs(pairs);
    crate::transport::target::mask_url(shown.as_str())
}

/// Whether a body is JSON-RPC (one message or a batch): only those are recorded as frames.
fn is_json_rpc(body: &[u8]) -> bool {
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return false;
    };
    let one = |m: &Value| m.get("jsonrpc").is_some();
    match &v {
        Value::Array(items) => !items.is_empty() && items.iter().all(one),
        m => one(m),
    }
}

fn header_str(resp: &ureq::http::Response<ureq::Body>, name: &str) -> Option<String> {
    resp.headers()
        .get(name)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

/// Forwards one request and writes the answer. Returns whether the client
/// connection can carry another request.
fn forward(ctx: &Ctx, req: &Request, out: &mut TcpStream) -> io::Result<bool> {
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
    {
        let mut shared = lock(&ctx.shared);
        if json_rpc_out {
            shared.frame(Direction::Out, req.body.clone(), LineEnding::Lf, started);
        }
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
            respond_plain(out, 502, &format!("mcpscope proxy: {why}"))?;
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
        out.write_all(head.as_bytes())?;
        out.write_all(&bytes)?;
        out.flush()?;
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
    } else if let (Some(l), false) = (length, sse) {
        chunked = false;
        head.push_str(&format!("content-length: {l}\r\n"));
    } else {
        chunked = true;
        head.push_str("transfer-encoding: chunked\r\n");
    }
    head.push_str("\r\n");
    out.write_all(head.as_bytes())?;
    out.flush()?;
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
    let mut sink = ClientBody { out, chunked };
    let outcome = if sse {
        relay_sse(ctx, &mut body, &mut sink)
    } else {
        relay_whole(ctx, &mut body, &mut sink, &what)
    };
    match outcome {
        Ok(()) => {
            sink.finish()?;
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
fn rewrite_resource(bytes: &[u8], upstream_origin: &str, local_origin: &str) -> Vec<u8> {
    let Ok(mut v) = serde_json::from_slice::<Value>(bytes) else {
        return bytes.to_vec();
    };
    let Some(resource) = v.get("resource").and_then(Value::as_str) else {
        return bytes.to_vec();
    };
    let Some(rest) = resource.strip_prefix(upstream_origin) else {
        return bytes.to_vec();
    };
    v["resource"] = Value::String(format!("{local_origin}{rest}"));
    serde_json::to_vec(&v).unwrap_or_else(|_| bytes.to_vec())
}

enum RelayError {
    Client(io::Error),
    Upstream(io::Error),
}

/// The response body towards the client: chunked or as is.
struct ClientBody<'a> {
    out: &'a mut TcpStream,
    chunked: bool,
}

impl ClientBody<'_> {
    fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        if self.chunked {
            write!(self.out, "{:x}\r\n", bytes.len())?;
            self.out.write_all(bytes)?;
            self.out.write_all(b"\r\n")?;
        } else {
            self.out.write_all(bytes)?;
        }
        self.out.flush()
    }

    fn finish(&mut self) -> io::Result<()> {
        if self.chunked {
            self.out.write_all(b"0\r\n\r\n")?;
        }
        self.out.flush()
    }
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
        sink.send(&buf[..n]).map_err(RelayError::Client)?;
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

/// Forwards an SSE stream one event at a time, recording each event's data.
fn relay_sse(ctx: &Ctx, body: &mut impl Read, sink: &mut ClientBody) -> Result<(), RelayError> {
    let mut pending: Vec<u8> = Vec::new();
    let mut buf = vec![0; 64 * 1024];
    loop {
        let n = match body.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                // Keep what came of a cut event.
                if !pending.is_empty() {
                    let _ = sink.send(&pending);
                    record_event(ctx, &pending, true);
                }
                return Err(RelayError::Upstream(e));
            }
        };
        pending.extend_from_slice(&buf[..n]);
        while let Some(end) = event_end(&pending) {
            let event: Vec<u8> = pending.drain(..end).collect();
            let event = rewrite_endpoint(ctx, event);
            sink.send(&event).map_err(RelayError::Client)?;
            record_event(ctx, &event, false);
        }
    }
    if !pending.is_empty() {
        sink.send(&pending).map_err(RelayError::Client)?;
        record_event(ctx, &pending, true);
    }
    Ok(())
}

/// Where the first complete event (ending with a blank line) ends in `bytes`.
fn event_end(bytes: &[u8]) -> Option<usize> {
    let mut line_start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let end = match bytes[i] {
            b'\n' => i + 1,
            // A CR is a line end on its own unless an LF follows; at the buffer's
            // end we cannot know yet, so wait for more.
            b'\r' if i + 1 == bytes.len() => return None,
            b'\r' if bytes[i + 1] == b'\n' => i + 2,
            b'\r' => i + 1,
            _ => {
                i += 1;
                continue;
            }
        };
        if i == line_start {
            return Some(end);
        }
        line_start = end;
        i = end;
    }
    None
}

/// HTTP+SSE: an `endpoint` event naming the upstream's origin is pointed at the proxy.
fn rewrite_endpoint(ctx: &Ctx, event: Vec<u8>) -> Vec<u8> {
    let text = match std::str::from_utf8(&event) {
        Ok(t) if t.contains("event: endpoint") || t.contains("event:endpoint") => t,
        _ => return event,
    };
    text.replace(&ctx.upstream_origin, &ctx.local_origin()).into_bytes()
}

fn record_event(ctx: &Ctx, raw: &[u8], truncated: bool) {
    let mut reader = SseReader::new(raw);
    let mut shared = lock(&ctx.shared);
    while let Ok(Some(ev)) = reader.next_event() {
        if !ev.has_data() {
            continue;
        }
        if ev.kind() == "endpoint" {
            shared.note(format!("SSE endpoint: {}", String::from_utf8_lossy(&ev.data)));
            continue;
        }
        let ending = if truncated || ev.truncated {
            LineEnding::Eof
        } else {
            LineEnding::Lf
        };
        shared.frame(Direction::In, ev.data, ending, Instant::now());
    }
    shared.flush();
}

fn respond_plain(out: &mut TcpStream, status: u16, text: &str) -> io::Result<()> {
    let reason = ureq::http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    let body = format!("{text}\n");
    write!(
        out,
        "HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )?;
    out.flush()
}

/// Checks that an upstream URL is usable before binding (for `wrap` and the CLI).
pub fn validate_upstream(upstream: &str) -> Result<url::Url> {
    let u = url::Url::parse(upstream).with_context(|| format!("{upstream:?} is not a URL"))?;
    if !matches!(u.scheme(), "http" | "https") {
        bail!("{upstream:?} is not an http:// or https:// URL");
    }
    Ok(u)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_must_be_loopback() {
        assert!(loopback_addr("127.0.0.1:0").is_ok());
        assert!(loopback_addr("[::1]:0").is_ok());
        assert!(loopback_addr("localhost:0").is_ok());
        let e = loopback_addr("0.0.0.0:8080").unwrap_err();
        assert!(e.contains("not a loopback address"), "{e}");
        assert!(loopback_addr("127.0.0.1").is_err(), "a port is needed");
    }

    #[test]
    fn upstream_must_be_http() {
        assert!(ReverseProxyOptions::new("127.0.0.1:0", "ftp://x/mcp").is_err());
        assert!(ReverseProxyOptions::new("127.0.0.1:0", "not a url").is_err());
        let o = ReverseProxyOptions::new("127.0.0.1:0", "https://api.example.com/v1/mcp?x=1").unwrap();
        assert_eq!(origin(&o.upstream), "https://api.example.com");
        assert_eq!(
            local_url("127.0.0.1:9000".parse().unwrap(), &o.upstream),
            "http://127.0.0.1:9000/v1/mcp?x=1"
        );
    }

    fn req(headers: &[(&str, &str)]) -> Request {
        Request {
            method: "POST".into(),
            target: "/mcp".into(),
            http10: false,
            headers: headers.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect(),
            body: vec![],
        }
    }

    #[test]
    fn dns_rebinding_is_refused_by_host_and_origin() {
        assert!(check_local(&req(&[("Host", "127.0.0.1:8931")])).is_ok());
        assert!(check_local(&req(&[("Host", "localhost:8931"), ("Origin", "http://localhost:3000")])).is_ok());
        assert!(check_local(&req(&[("host", "[::1]:8931")])).is_ok());
        let e = check_local(&req(&[("Host", "evil.example:8931")])).unwrap_err();
        assert!(e.contains("not local"), "{e}");
        let e = check_local(&req(&[("Host", "127.0.0.1:8931"), ("Origin", "https://evil.example")])).unwrap_err();
        assert!(e.contains("Origin"), "{e}");
        assert!(check_local(&req(&[("Host", "127.0.0.1"), ("Origin", "null")])).is_err());
        assert!(check_local(&req(&[])).is_err(), "no Host at all");
        // A name that merely starts like a local one is not local.
        assert!(check_local(&req(&[("Host", "127.0.0.1.evil.example")])).is_err());
        assert!(check_local(&req(&[("Host", "localhost.evil.example")])).is_err());
    }

    #[test]
    fn secrets_are_masked_in_headers_and_query() {
        assert!(is_secret_header("Authorization"));
        assert!(is_secret_header("X-Api-Key"));
        assert!(is_secret_header("cookie"));
        assert!(!is_secret_header("Mcp-Session-Id"));
        assert!(!is_secret_header("Last-Event-ID"));
        let u = url::Url::parse("https://h/mcp?api_key=abc&mode=x").unwrap();
        assert_eq!(masked_url(&u), "https://h/mcp?api_key=****&mode=x");
    }

    #[test]
    fn sse_events_end_at_a_blank_line_in_any_line_ending() {
        assert_eq!(event_end(b"data: a\n\nrest"), Some(9));
        assert_eq!(event_end(b"data: a\r\n\r\n"), Some(11));
        assert_eq!(event_end(b"data: a\r\rx"), Some(9));
        assert_eq!(event_end(b"data: a\n"), None);
        // A CR at the end might be the first half of CRLF.
        assert_eq!(event_end(b"data: a\r\n\r"), None);
        assert_eq!(event_end(b": keep-alive\n\n"), Some(14));
    }

    #[test]
    fn json_rpc_bodies_are_told_from_others() {
        assert!(is_json_rpc(br#"{"jsonrpc":"2.0","id":1,"method":"x"}"#));
        assert!(is_json_rpc(br#"[{"jsonrpc":"2.0","method":"x"}]"#));
        assert!(!is_json_rpc(br#"{"access_token":"secret","token_type":"Bearer"}"#));
        assert!(!is_json_rpc(b"<html>"));
        assert!(!is_json_rpc(b"[]"));
    }

    #[test]
    fn protected_resource_metadata_names_the_proxy() {
        let body =
            br#"{"resource":"https://api.example.com/mcp","authorization_servers":["https://auth.example.com"]}"#;
        let out = rewrite_resource(body, "https://api.example.com", "http://127.0.0.1:9");
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["resource"], "http://127.0.0.1:9/mcp");
        assert_eq!(v["authorization_servers"][0], "https://auth.example.com");
        // Another origin's resource is left alone.
        let other = br#"{"resource":"https://elsewhere/mcp"}"#;
        assert_eq!(
            rewrite_resource(other, "https://api.example.com", "http://127.0.0.1:9"),
            other.to_vec()
        );
    }

    #[test]
    fn chunked_request_bodies_are_decoded() {
        let mut r = &b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-T: 1\r\n\r\n"[..];
        assert_eq!(read_chunked(&mut r).unwrap(), b"hello world");
        let mut bad = &b"zz\r\n"[..];
        assert!(read_chunked(&mut bad).is_err());
    }

    #[test]
    fn hostile_chunk_sizes_are_errors_not_panics() {
        for body in [
            &b"1\r\nA\r\nffffffffffffffff\r\n"[..],
            b"ffffffffffffffff\r\n",
            b"10000000000000000\r\n",
            b"1\r\nA\r\n4000000\r\n",
            b"+5\r\nhello\r\n0\r\n\r\n",
            b"\r\n",
            b"5\r\nhello world\r\n0\r\n\r\n",
            b"5\r\nhel",
        ] {
            let mut r = body;
            assert!(read_chunked(&mut r).is_err(), "{:?}", String::from_utf8_lossy(body));
        }
        let mut long = vec![b'0'; MAX_CHUNK_LINE + 10];
        long.extend_from_slice(b"\r\n");
        assert!(read_chunked(&mut &long[..]).is_err());
        let e = read_chunked(&mut &b"1\r\nA\r\nffffffffffffffff\r\n"[..]).unwrap_err();
        assert!(e.to_string().contains("limit"), "{e}");
    }
}
