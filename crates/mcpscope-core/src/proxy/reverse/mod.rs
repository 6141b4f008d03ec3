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
//! client event by event as each one ends; an event longer than the
//! in-memory cap passes on in pieces as it comes (`sse_relay`).
//!
//! It binds to loopback only and refuses (403) a request whose `Host` or
//! `Origin` is not local, so a web page cannot reach it through DNS rebinding;
//! a request with two `Host` or two `Origin` headers, or a malformed body, is
//! refused (400) before anything goes upstream.
//!
//! The listener (`listener`) is one tokio task per client connection on a
//! current-thread runtime; the request head, chunk-size lines and trailers
//! are parsed by `httparse` (the pieces shared with the mock's HTTP endpoint
//! are in [`crate::listen`]). Each request is forwarded (`forward`) on a
//! blocking thread through ureq, and the answer comes back to the task over a
//! channel. Slow or idle clients are closed by timeouts, and when every slot
//! is taken the one that has waited longest for a request is closed to make
//! room, so clients that send their requests are served.
//!
//! What is recorded: each exchange as an [`Event::Http`] with masked
//! credentials; JSON-RPC bodies and SSE events as frames (client to server
//! `Out`, server to client `In`). Other bodies (OAuth tokens, HTML pages) are
//! summarised by type and size, never written down.

mod forward;
mod gated;
mod listener;
mod rewrite;
mod sse_relay;

pub(crate) use rewrite::is_secret_header;

use crate::listen::ListenError;
use crate::listen::slots::Slots;
use crate::proxy::stdio::LiveRecord;
use crate::record::capture;
use crate::sessions::index::{ClientInfo, EndCause, LiveSession, NewSession};
use crate::transport::event::{Event, HttpInfo};
use crate::transport::recorder::Recorder;
use crate::wire::classify::Limits;
use crate::wire::frame::{Direction, Frame};
use crate::wire::framing::{LineEnding, RawLine};
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
    pub session: Option<LiveRecord>,
    /// Client connections open at once. When all are taken, the one that has
    /// waited longest for (the rest of) a request is closed to make room; a
    /// new client gets 503 only when every connection is busy with an exchange.
    pub max_connections: usize,
    /// From a request's first byte to the end of its headers, and the longest
    /// wait for more of a request body; a fresh connection must start its
    /// first request within it too. Past it the client gets 408.
    pub header_timeout: Duration,
    /// How long a kept-alive connection may wait for its next request.
    pub idle_timeout: Duration,
    pub connect_timeout: Duration,
    pub limits: Limits,
    /// Sees every event recorded (OpenTelemetry sent live).
    pub tap: Option<crate::transport::recorder::EventTap>,
    /// The gate's control socket, noted in the live session's record.
    pub control_socket: Option<PathBuf>,
}

impl ReverseProxyOptions {
    /// Checks `listen` (a loopback address, port 0 for any free one) and
    /// `upstream` (an http or https URL).
    pub fn new(listen: &str, upstream: &str) -> Result<Self, OptionsError> {
        let shown = crate::transport::target::mask_url(upstream);
        let upstream_url = url::Url::parse(upstream).map_err(|source| OptionsError::BadUpstream {
            shown: shown.clone(),
            source,
        })?;
        if !matches!(upstream_url.scheme(), "http" | "https") || upstream_url.host().is_none() {
            return Err(OptionsError::NotHttp(shown));
        }
        Ok(Self {
            // The proxy forwards the client's credentials: nothing else may reach it.
            listen: crate::listen::listen_addr(listen, false, "the proxy", None)?,
            upstream: upstream_url,
            capture: None,
            session: None,
            max_connections: 64,
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(10),
            limits: Limits::default(),
            tap: None,
            control_socket: None,
        })
    }
}

/// Why the proxy's options cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum OptionsError {
    #[error("--upstream {shown:?}")]
    BadUpstream {
        shown: String,
        #[source]
        source: url::ParseError,
    },
    #[error("--upstream must be an http:// or https:// URL, got {0:?}")]
    NotHttp(String),
    #[error(transparent)]
    Listen(#[from] ListenError),
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
    fn record(&mut self, ev: &Event) {
        if let Some(Event::Note { text, .. }) = self.recorder.capture(ev)
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

    /// Records a message; returns the frame as recorded (for the gate).
    fn frame(&mut self, direction: Direction, bytes: Vec<u8>, ending: LineEnding, at: Instant) -> Frame {
        let at = self.recorder.since_start(at);
        let frame = self.recorder.frame_at(direction, RawLine { bytes, ending }, at, None);
        if direction == Direction::Out
            && let Some(live) = self.live.as_mut()
            && live.record().client.is_none()
            && let Some(client) = ClientInfo::from_client_frame(&frame)
            && let Err(e) = live.set_client(client)
        {
            eprintln!("mcpscope proxy: cannot update the session record: {e}");
        }
        // Recorded without a copy: an SSE event may be as large as the in-memory cap.
        let ev = Event::Frame(frame);
        self.record(&ev);
        match ev {
            Event::Frame(frame) => frame,
            _ => unreachable!("built as a frame just above"),
        }
    }

    fn http(&mut self, mut info: HttpInfo, at: Instant) {
        info.at = self.recorder.since_start(at);
        self.record(&Event::Http(info));
    }

    fn note(&mut self, text: String) {
        let at = self.recorder.now();
        self.record(&Event::Note { at, text });
    }
}

pub struct ReverseProxy {
    listener: TcpListener,
    local: SocketAddr,
    options: ReverseProxyOptions,
    shared: Arc<Mutex<Shared>>,
    agent: ureq::Agent,
    stop: Arc<AtomicBool>,
    slots: Arc<Slots>,
    notes: Vec<String>,
    gate: Option<Box<dyn crate::proxy::gate::Gate>>,
}

/// How many client connections a [`ReverseProxy`] holds open, read from any thread.
#[derive(Clone)]
pub struct Connections(Arc<Slots>);

impl Connections {
    pub fn open(&self) -> usize {
        self.0.open()
    }
}

pub use crate::listen::Stopper;

impl ReverseProxy {
    /// Binds the listening socket and opens the recording.
    pub fn bind(options: ReverseProxyOptions) -> Result<Self, ListenError> {
        let (listener, local) = crate::listen::bind(options.listen)?;
        let mut notes = Vec::new();
        let mut recorder = Recorder::new(options.limits, Instant::now()).with_tap(options.tap.clone());
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
                Ok((mut l, file)) => {
                    match capture::Writer::with_file(file, l.capture_path(), &header) {
                        Ok(w) => recorder = recorder.with_capture(Box::new(w)),
                        Err(e) => notes.push(format!("{ec}", ec = crate::text::ErrorChain(&e))),
                    }
                    if let Some(socket) = &options.control_socket
                        && let Err(e) = l.set_control_socket(socket)
                    {
                        notes.push(format!("cannot update the session record: {e}"));
                    }
                    live = Some(l);
                }
                Err(e) => notes.push(format!("cannot record the session in {}: {e}", session.dir.display())),
            }
        } else if let Some(path) = &options.capture {
            match capture::Writer::open(path, &header) {
                Ok(w) => recorder = recorder.with_capture(Box::new(w)),
                Err(e) => notes.push(format!("{ec}", ec = crate::text::ErrorChain(&e))),
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
        let slots = Arc::new(Slots::new(options.max_connections.max(1)));
        Ok(Self {
            listener,
            local,
            options,
            shared: Arc::new(Mutex::new(Shared {
                recorder,
                live,
                capture_failure_told: false,
            })),
            slots,
            agent,
            stop: Arc::new(AtomicBool::new(false)),
            notes,
            gate: None,
        })
    }

    /// Puts a gate (breakpoints, fault rules) between the client and the
    /// upstream: each message is judged before it goes on.
    pub fn with_gate(mut self, gate: Box<dyn crate::proxy::gate::Gate>) -> Self {
        self.gate = Some(gate);
        self
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Problems met while binding (a session that cannot be recorded…), to tell at once.
    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    pub fn stopper(&self) -> Stopper {
        Stopper::new(self.stop.clone(), self.local)
    }

    /// The connections it holds open (what a test of slot accounting reads).
    pub fn connections(&self) -> Connections {
        Connections(self.slots.clone())
    }

    /// Serves until [`Stopper::stop`]; `why` says what stopped it, for the record.
    pub fn serve(mut self, why: impl FnOnce() -> String) -> ReverseOutcome {
        let gate = self
            .gate
            .take()
            .map(|g| gated::HttpGate::start(g, self.shared.clone(), self.stop.clone()));
        let ctx = Arc::new(Ctx {
            last_client: Mutex::new(None),
            gate,
            agent: self.agent.clone(),
            upstream_origin: origin(&self.options.upstream),
            local: self.local,
            shared: self.shared.clone(),
            header_timeout: self.options.header_timeout,
            idle_timeout: self.options.idle_timeout,
            max_held: self.options.limits.max_held_line_bytes,
        });
        if let Some(gate) = &ctx.gate {
            gated::HttpGate::start_injector(gate, ctx.clone());
        }
        if let Err(e) = listener::run(self.listener, ctx, self.slots.clone(), self.stop.clone()) {
            self.notes.push(format!("the proxy's listener failed: {e}"));
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
    gate: Option<Arc<gated::HttpGate>>,
    /// The client's last JSON-RPC POST: its session headers carry an
    /// injected message.
    last_client: Mutex<Option<crate::listen::request::Request>>,
    agent: ureq::Agent,
    /// `https://host[:port]`, no trailing slash.
    upstream_origin: String,
    local: SocketAddr,
    shared: Arc<Mutex<Shared>>,
    header_timeout: Duration,
    idle_timeout: Duration,
    /// The most of one SSE event held in memory ([`Limits::max_held_line_bytes`]).
    max_held: usize,
}

impl Ctx {
    fn local_origin(&self) -> String {
        format!("http://{}", self.local)
    }
}

fn lock(shared: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    // A panicking connection thread must not stop the others from recording.
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

fn origin(u: &url::Url) -> String {
    u.origin().ascii_serialization()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_must_be_http() {
        assert!(ReverseProxyOptions::new("127.0.0.1:0", "ftp://x/mcp").is_err());
        assert!(ReverseProxyOptions::new("127.0.0.1:0", "not a url").is_err());
        let o = ReverseProxyOptions::new("127.0.0.1:0", "https://api.example.com/v1/mcp?x=1").unwrap();
        assert_eq!(origin(&o.upstream), "https://api.example.com");
    }
}
