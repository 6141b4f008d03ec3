//! The mock over Streamable HTTP: `mcpscope mock CAPTURE --listen ADDR`.
//!
//! One endpoint (the capture's URL path, else `/mcp`):
//! - `POST` a request: the mock's answer, as `application/json`, or as a
//!   `text/event-stream` (one event per message: the server traffic recorded
//!   during the exchange, then the answer) when the recorded answer came as
//!   a stream or when there is server traffic to send before the answer;
//! - `POST` a notification or an answer to a replayed server request: 202;
//! - `GET` with a session: an SSE stream of the server traffic that belongs
//!   to no request (`list_changed` after a call, say);
//! - `DELETE` with a session: ends it.
//!
//! Sessions: `initialize` starts one, with its own [`Mock`] (so every client
//! sees the recording from its start) and a fresh `Mcp-Session-Id`, which
//! later requests must carry (none: 400; an unknown one: 404). Requests of
//! the stateless 2026-07-28 era (`server/discover`, `_meta` on every
//! request), or any request when the capture is of that era, are served
//! without a session by one shared mock.
//!
//! Each session's mock runs in a task of its own that owns it, fed over a
//! channel; what it says goes to the oldest request still waiting for its
//! answer (the mock answers in order), else to the GET stream. The listener
//! is the reverse proxy's ([`crate::listen`]): loopback only
//! unless asked, `Host` and `Origin` checked against DNS rebinding.

use crate::listen::ListenError;
use crate::listen::accept::accept_loop;
use crate::listen::conn::{Conn, Either, first_of};
use crate::listen::gate::Gate;
use crate::listen::request::{Request, next_request};
use crate::listen::response::answer;
use crate::listen::slots::{Slot, Slots};
use crate::protocol::subscriptions::LISTEN;
use crate::replay::auth::{AuthAnswer, AuthRequest, AuthServer, Random};
use crate::replay::index::{Index, member_span};
use crate::replay::mock::{INVALID_REQUEST, Mock, MockOptions, NOT_SERVED, Output, PARSE_ERROR, Stats};
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::time::{Instant, timeout, timeout_at};

/// Where the mock's log lines go (stderr, in the CLI).
pub type Log = Arc<dyn Fn(&str) + Send + Sync>;

/// Record on miss (`--fallback`): given a request the recording has no
/// answer for (method, params, the client's raw id), the real server's
/// answer as a line under that id. Called on a blocking thread: it may take
/// as long as the real server does.
pub type Fallback = Arc<dyn Fn(&str, Option<Value>, &[u8]) -> Vec<u8> + Send + Sync>;

/// A client that does not take any of an answer for this long is gone.
const WRITE_TIMEOUT: Duration = Duration::from_secs(60);
/// Server traffic kept for a GET stream that is not open yet; past it the
/// oldest goes (a client that never opens one must not grow the mock).
const MAX_HELD: usize = 1024;
/// JSON-RPC codes of the HTTP layer's own refusals (those of the TypeScript SDK's server).
const BAD_REQUEST: i64 = -32000;
const SESSION_NOT_FOUND: i64 = -32001;
/// `"subscriptions/listen"` as it stands in a request's bytes.
const LISTEN_METHOD: &[u8] = b"\"subscriptions/listen\"";

#[derive(Clone, Debug)]
pub struct HttpOptions {
    pub listen: SocketAddr,
    /// The user asked to be reachable from other machines (`--listen-any`):
    /// any `Host` is answered; a non-local `Origin` is still refused.
    pub any_host: bool,
    /// The MCP endpoint's path.
    pub path: String,
    pub max_connections: usize,
    /// From a request's first byte to the end of its headers, and the longest
    /// pause in a body; a new connection must start its request within it.
    pub header_timeout: Duration,
    /// How long a kept-alive connection may wait for its next request.
    pub idle_timeout: Duration,
    /// `--auth`: the endpoint wants a token, and the mock is its own
    /// authorization server ([`crate::replay::auth`]).
    pub auth: bool,
}

impl HttpOptions {
    /// `listen` must be a loopback address unless `any` (the user typed
    /// `--listen-any`): the mock answers whoever reaches the port.
    pub fn new(listen: &str, any: bool, path: String) -> Result<Self, ListenError> {
        Ok(Self {
            listen: crate::listen::listen_addr(listen, any, "the mock", Some("--listen-any"))?,
            any_host: any,
            path,
            max_connections: 64,
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
            auth: false,
        })
    }
}

/// The endpoint path for a capture recorded from `url`: the same path, so a
/// client's configured URL only needs its origin changed; `/mcp` otherwise.
pub fn endpoint_path(url: Option<&str>) -> String {
    url.and_then(|u| url::Url::parse(u).ok())
        .map(|u| u.path().to_owned())
        .filter(|p| p.len() > 1)
        .unwrap_or_else(|| "/mcp".to_owned())
}

/// What goes to a request waiting for its answer.
enum Piece {
    Line(Vec<u8>),
    /// Answer as a stream (it was recorded so).
    Stream,
    /// No answer will come: the recording has none.
    Unanswered,
}

/// What a connection asks of a session's mock.
enum Cmd {
    /// A client request; the lines for it (server traffic, then its answer) go to `to`.
    Request {
        line: Vec<u8>,
        to: mpsc::UnboundedSender<Piece>,
    },
    /// A notification, or an answer to a replayed server request.
    Message(Vec<u8>),
    /// A GET stream: server traffic outside any request goes there from now on.
    Listen(mpsc::UnboundedSender<Vec<u8>>),
    /// The client of this request (a listen) left before its end: forget it.
    Gone(Vec<u8>),
}

struct Shared {
    index: Arc<Index>,
    options: MockOptions,
    path: String,
    any_host: bool,
    /// The capture is of the stateless era: requests need no session.
    modern: bool,
    header_timeout: Duration,
    idle_timeout: Duration,
    start: Instant,
    sessions: Mutex<HashMap<String, mpsc::UnboundedSender<Cmd>>>,
    stateless: Mutex<Option<mpsc::UnboundedSender<Cmd>>>,
    /// Each mock's counts, summed when the server stops.
    stats: Mutex<Vec<Arc<Mutex<Stats>>>>,
    next_session: AtomicU64,
    log: Log,
    fallback: Option<Fallback>,
    auth: Option<Mutex<AuthServer>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The maps stay usable whatever panicked while holding them.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    /// Starts a session's mock in a task of its own; `label` prefixes its log lines.
    fn spawn_session(&self, label: String) -> mpsc::UnboundedSender<Cmd> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mock = Mock::shared(self.index.clone(), self.options.clone());
        let stats = Arc::new(Mutex::new(Stats::default()));
        lock(&self.stats).push(stats.clone());
        let ends = SessionEnds {
            start: self.start,
            log: self.log.clone(),
            fallback: self.fallback.clone(),
            label,
            stats,
        };
        tokio::spawn(session(mock, rx, ends));
        tx
    }

    fn stateless(&self) -> mpsc::UnboundedSender<Cmd> {
        let mut s = lock(&self.stateless);
        if let Some(tx) = &*s {
            return tx.clone();
        }
        let tx = self.spawn_session(String::new());
        *s = Some(tx.clone());
        tx
    }

    /// A session id no one can guess (it is the only key to a session), and
    /// unique even if the system's randomness failed.
    fn new_session_id(&self) -> String {
        use ring::rand::SecureRandom as _;
        let mut b = [0u8; 16];
        let _ = ring::rand::SystemRandom::new().fill(&mut b);
        let n = self.next_session.fetch_add(1, Ordering::Relaxed);
        let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
        format!("{hex}{n:x}")
    }
}

/// A request waiting for its answer.
struct Waiting {
    /// The client's id, raw: the mock's answer carries these very bytes.
    id: Vec<u8>,
    /// A `subscriptions/listen` (2026-07-28): open until the client leaves,
    /// taking what the server tags with its id, not the next answer.
    listen: bool,
    to: mpsc::UnboundedSender<Piece>,
}

/// Where a session's lines go.
#[derive(Default)]
struct Router {
    /// Requests waiting for their answers, oldest first.
    waiting: Vec<Waiting>,
    get: Option<mpsc::UnboundedSender<Vec<u8>>>,
    held: VecDeque<Vec<u8>>,
    dropped: usize,
}

impl Router {
    /// The oldest request waiting for an answer (not a listen): the mock
    /// serves in order, so server traffic and marks are about it.
    fn oldest(&self) -> Option<usize> {
        self.waiting.iter().position(|w| !w.listen)
    }

    fn route(&mut self, o: Output) {
        match o {
            Output::Line(l) => {
                // Listens whose clients left take nothing more. (A request
                // whose client left still takes its lines and its answer, so
                // that the next request does not get them.)
                self.waiting.retain(|w| !(w.listen && w.to.is_closed()));
                let target = if is_response(&l) {
                    // An answer goes to the request with its id: a listen only
                    // when it is that listen's close (ids are the clients' own,
                    // and the stateless mock serves several clients).
                    let id = member_span(&l, "id").map(|s| l[s].to_vec());
                    let close = subscription_of(&l).is_some();
                    let with_id = |listen: Option<bool>| {
                        self.waiting
                            .iter()
                            .position(|w| Some(&w.id) == id.as_ref() && listen.is_none_or(|l| w.listen == l))
                    };
                    // A refused listen gets its error: any request with the id, then.
                    let refused = member_span(&l, "error").is_some();
                    with_id(Some(close))
                        .or_else(|| if refused { with_id(None) } else { None })
                        .or_else(|| self.oldest())
                } else if let Some(sub) = subscription_of(&l) {
                    self.waiting.iter().position(|w| w.listen && w.id == sub)
                } else {
                    self.oldest()
                };
                if let Some(k) = target {
                    let answer = is_response(&l);
                    // A request whose client left still takes its lines, so
                    // that the next request does not get them.
                    let gone = self.waiting[k].to.send(Piece::Line(l)).is_err();
                    if answer || (gone && self.waiting[k].listen) {
                        self.waiting.remove(k);
                    }
                    return;
                }
                let l = match &self.get {
                    Some(g) => match g.send(l) {
                        Ok(()) => return,
                        Err(mpsc::error::SendError(l)) => l,
                    },
                    None => l,
                };
                self.get = None;
                if self.held.len() >= MAX_HELD {
                    self.held.pop_front();
                    self.dropped += 1;
                }
                self.held.push_back(l);
            }
            Output::Stream => {
                if let Some(k) = self.oldest() {
                    let _ = self.waiting[k].to.send(Piece::Stream);
                }
            }
            Output::Unanswered => {
                if let Some(k) = self.oldest() {
                    let _ = self.waiting.remove(k).to.send(Piece::Unanswered);
                }
            }
            // The owner handles these: see `session`.
            Output::Forward { .. } | Output::Log(_) => {}
        }
    }

    /// A miss goes to the fallback server; its answer, whenever it comes,
    /// goes to the request that asked (later requests are not held up).
    fn forward(&mut self, fallback: &Fallback, method: String, params: Option<Value>, id: Vec<u8>) {
        let listen = method == LISTEN;
        let Some(k) = self
            .waiting
            .iter()
            .position(|w| w.id == id && w.listen == listen)
            .or_else(|| self.oldest())
        else {
            return;
        };
        let to = self.waiting.remove(k).to;
        let fallback = fallback.clone();
        tokio::task::spawn_blocking(move || {
            let _ = to.send(Piece::Line(fallback(&method, params, &id)));
        });
    }

    /// A listen whose client left (its receiver is dropped); whether
    /// another client's listen with the same id is still open.
    fn gone(&mut self, id: &[u8]) -> bool {
        self.waiting.retain(|w| !(w.listen && w.id == id && w.to.is_closed()));
        self.waiting.iter().any(|w| w.listen && w.id == id)
    }

    fn listen(&mut self, to: mpsc::UnboundedSender<Vec<u8>>) {
        for l in self.held.drain(..) {
            let _ = to.send(l);
        }
        self.get = Some(to);
    }
}

/// The raw id of the listen a server message is tagged with (a
/// notification's `params._meta`, a listen's close in `result._meta`).
fn subscription_of(line: &[u8]) -> Option<Vec<u8>> {
    crate::replay::mock::subscription_span(line).map(|s| line[s].to_vec())
}

/// Whether a line the mock sends is an answer (server traffic has a method).
fn is_response(line: &[u8]) -> bool {
    member_span(line, "method").is_none()
}

/// What a session's task needs besides its mock and its channel.
struct SessionEnds {
    start: Instant,
    log: Log,
    fallback: Option<Fallback>,
    /// Prefixes its log lines.
    label: String,
    stats: Arc<Mutex<Stats>>,
}

/// One session's mock: fed by its channel, woken at its deadlines; ends
/// when the session is gone (DELETE, or the server stopping).
async fn session(mut mock: Mock, mut rx: mpsc::UnboundedReceiver<Cmd>, ends: SessionEnds) {
    let SessionEnds {
        start,
        log,
        fallback,
        label,
        stats,
    } = ends;
    let mut router = Router::default();
    loop {
        while let Some(o) = mock.next_output() {
            match (o, &fallback) {
                (Output::Log(t), _) => log(&format!("{label}{t}")),
                (Output::Forward { method, params, id }, Some(f)) => router.forward(f, method, params, id),
                // Forward comes only with a fallback; without one it is a miss.
                (Output::Forward { .. }, None) => router.route(Output::Unanswered),
                (o, _) => router.route(o),
            }
        }
        *lock(&stats) = mock.stats.clone();
        let cmd = match mock.deadline() {
            Some(d) => match timeout_at(start + d, rx.recv()).await {
                Ok(c) => c,
                Err(_) => {
                    mock.on_time(start.elapsed());
                    continue;
                }
            },
            None => rx.recv().await,
        };
        let now = start.elapsed();
        match cmd {
            Some(Cmd::Request { line, to }) => {
                let id = member_span(&line, "id").map_or_else(Vec::new, |s| line[s].to_vec());
                let listen = member_span(&line, "method").is_some_and(|s| line[s] == *LISTEN_METHOD);
                router.waiting.push(Waiting { id, listen, to });
                mock.on_line(&line, now);
            }
            Some(Cmd::Message(line)) => mock.on_line(&line, now),
            Some(Cmd::Listen(to)) => router.listen(to),
            Some(Cmd::Gone(id)) => {
                if !router.gone(&id) {
                    mock.on_gone(&id);
                }
            }
            None => break,
        }
    }
    if router.dropped > 0 {
        log(&format!(
            "{label}{} server message(s) outside any request were dropped: no GET stream took them",
            router.dropped
        ));
    }
}

pub use crate::listen::Stopper;

pub struct MockServer {
    listener: TcpListener,
    local: SocketAddr,
    shared: Arc<Shared>,
    slots: Arc<Slots>,
    stop: Arc<AtomicBool>,
}

impl MockServer {
    pub fn bind(
        options: HttpOptions,
        index: Index,
        mock: MockOptions,
        log: Log,
        fallback: Option<Fallback>,
    ) -> Result<Self, ListenError> {
        let (listener, local) = crate::listen::bind(options.listen)?;
        let modern = index.era() == "modern";
        let auth = options.auth.then(|| {
            // The issuer must be an address clients can reach: not 0.0.0.0.
            let host = if local.ip().is_unspecified() {
                SocketAddr::new(std::net::Ipv4Addr::LOCALHOST.into(), local.port())
            } else {
                local
            };
            let random: Random = Box::new(|b: &mut [u8]| {
                use ring::rand::SecureRandom as _;
                ring::rand::SystemRandom::new().fill(b).is_ok()
            });
            Mutex::new(AuthServer::new(format!("http://{host}"), options.path.clone(), random))
        });
        Ok(Self {
            listener,
            local,
            shared: Arc::new(Shared {
                index: Arc::new(index),
                options: mock,
                path: options.path,
                any_host: options.any_host,
                modern,
                header_timeout: options.header_timeout,
                idle_timeout: options.idle_timeout,
                start: Instant::now(),
                sessions: Mutex::new(HashMap::new()),
                stateless: Mutex::new(None),
                stats: Mutex::new(Vec::new()),
                next_session: AtomicU64::new(0),
                log,
                fallback,
                auth,
            }),
            slots: Arc::new(Slots::new(options.max_connections.max(1))),
            stop: Arc::new(AtomicBool::new(false)),
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// With `--auth`, the authorization server's issuer.
    pub fn issuer(&self) -> Option<String> {
        self.shared.auth.as_ref().map(|a| lock(a).issuer().to_owned())
    }

    /// The URL a client is given.
    pub fn url(&self) -> String {
        format!("http://{}{}", self.local, self.shared.path)
    }

    pub fn stopper(&self) -> Stopper {
        Stopper::new(self.stop.clone(), self.local)
    }

    /// Serves until [`Stopper::stop`]; the counts of every session's mock.
    pub fn serve(self) -> std::io::Result<Stats> {
        let shared = self.shared.clone();
        accept_loop(
            self.listener,
            self.slots,
            self.stop,
            "mcpscope mock: too many connections at once",
            move |stream, slot| serve_connection(shared.clone(), stream, slot),
        )?;
        let mut total = Stats::default();
        for s in lock(&self.shared.stats).iter() {
            let s = lock(s);
            total.served += s.served;
            total.unmatched += s.unmatched;
            total.notifications += s.notifications;
            total.forwarded += s.forwarded;
        }
        Ok(total)
    }

    /// Serves until mcpscope is asked to stop (SIGINT, SIGTERM, SIGHUP).
    pub fn run_until_stopped(self) -> std::io::Result<Stats> {
        let _live = crate::transport::lifecycle::LiveGuard::new();
        let stop = crate::transport::lifecycle::stop_signal();
        let stopper = self.stopper();
        let _ = std::thread::Builder::new()
            .name("mcpscope-mock-stop".into())
            .spawn(move || {
                // Ready (disconnected) once mcpscope is asked to stop.
                let _ = stop.recv();
                stopper.stop();
            });
        self.serve()
    }
}

async fn serve_connection(shared: Arc<Shared>, stream: TcpStream, slot: Slot) {
    let mut conn = Conn::new(stream, slot.evict.clone());
    let mut wait = shared.header_timeout;
    let gate = if shared.any_host {
        Gate::any_host("mcpscope mock", "the mock")
    } else {
        Gate::loopback("mcpscope mock", "the mock")
    };
    loop {
        let refused = |why: String| (shared.log)(&why);
        let Some(req) = next_request(&mut conn, &slot, wait, shared.header_timeout, gate, refused).await else {
            return;
        };
        let keep = req.keep_alive();
        if !handle(&shared, &mut conn, req).await || !keep {
            return;
        }
        wait = shared.idle_timeout;
    }
}

/// Answers one request; whether the connection can carry another.
async fn handle(shared: &Arc<Shared>, conn: &mut Conn<TcpStream>, req: Request) -> bool {
    let path = req.target.split('?').next().unwrap_or_default();
    if let Some(auth) = &shared.auth {
        let asked = AuthRequest {
            method: &req.method,
            host: req.header("host"),
            target: &req.target,
            authorization: req.header("authorization"),
            body: &req.body,
        };
        let now = shared.start.elapsed();
        let decided = {
            let mut auth = lock(auth);
            let decided = match auth.serve(&asked, now) {
                Some(a) => Some(a),
                None if path == shared.path => auth.admit(asked.authorization, asked.host, now).err(),
                None => None,
            };
            for line in auth.take_log() {
                (shared.log)(&format!("auth: {line}"));
            }
            decided
        };
        if let Some(a) = decided {
            return send(conn, &auth_answer(&a)).await;
        }
    }
    if path != shared.path {
        let text = format!("mcpscope mock: nothing at {path}; the MCP endpoint is {}", shared.path);
        return send(conn, &answer(404, &[], "text/plain; charset=utf-8", text.as_bytes())).await;
    }
    match req.method.as_str() {
        "POST" => post(shared, conn, req).await,
        "GET" => get(shared, conn, &req).await,
        "DELETE" => delete(shared, conn, &req).await,
        m => {
            let text = format!("mcpscope mock: {m} is not served; the endpoint takes POST, GET and DELETE");
            let allow = [("allow", "GET, POST, DELETE")];
            send(conn, &answer(405, &allow, "text/plain; charset=utf-8", text.as_bytes())).await
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Request,
    Notification,
    Response,
}

/// Whether a message speaks the stateless 2026-07-28 era.
fn looks_modern(v: &Value) -> bool {
    v.get("method").and_then(Value::as_str) == Some("server/discover")
        || v.pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
            .is_some()
}

async fn post(shared: &Arc<Shared>, conn: &mut Conn<TcpStream>, req: Request) -> bool {
    let v: Value = match serde_json::from_slice(&req.body) {
        Ok(v) => v,
        Err(e) => return send(conn, &rpc_error(400, PARSE_ERROR, &format!("Parse error: {e}"))).await,
    };
    if v.is_array() {
        let why = "JSON-RPC batches are not accepted (MCP dropped them): send one message per POST";
        return send(conn, &rpc_error(400, INVALID_REQUEST, why)).await;
    }
    let method = v.get("method").and_then(Value::as_str);
    let kind = match (method, v.get("id").filter(|i| !i.is_null())) {
        (Some(_), Some(_)) => Kind::Request,
        (Some(_), None) => Kind::Notification,
        (None, Some(_)) if v.get("result").is_some() || v.get("error").is_some() => Kind::Response,
        _ => {
            let why = "Invalid Request: not a JSON-RPC request, notification or response";
            return send(conn, &rpc_error(400, INVALID_REQUEST, why)).await;
        }
    };
    let mut issued = None;
    let to = if kind == Kind::Request && method == Some("initialize") {
        // A new session with a mock of its own: each client gets the
        // recording from its start, whatever others asked before.
        let id = shared.new_session_id();
        let tx = shared.spawn_session(format!("session {}: ", &id[..8]));
        lock(&shared.sessions).insert(id.clone(), tx.clone());
        issued = Some(id);
        tx
    } else if let Some(sid) = req.header("mcp-session-id") {
        let found = lock(&shared.sessions).get(sid).cloned();
        match found {
            Some(tx) => tx,
            None => return send(conn, &session_not_found(sid)).await,
        }
    } else if shared.modern || looks_modern(&v) {
        shared.stateless()
    } else {
        let why = "Bad Request: an Mcp-Session-Id header is required (the session starts with initialize)";
        return send(conn, &rpc_error(400, BAD_REQUEST, why)).await;
    };
    if kind != Kind::Request {
        let _ = to.send(Cmd::Message(req.body));
        return send(conn, &answer(202, &[], "", b"")).await;
    }
    let id = member_span(&req.body, "id").map_or_else(|| b"null".to_vec(), |s| req.body[s].to_vec());
    let listen = method == Some(LISTEN);
    let sid = req.header("mcp-session-id").unwrap_or_default().to_owned();
    let (ptx, mut prx) = mpsc::unbounded_channel();
    if to
        .send(Cmd::Request {
            line: req.body,
            to: ptx,
        })
        .is_err()
    {
        return send(conn, &session_not_found(&sid)).await;
    }
    // For a listen, to say when its client leaves: weak, so that a DELETE
    // still ends the session.
    let session_tx = listen.then(|| to.downgrade());
    drop(to);
    let session: Vec<(&str, &str)> = issued.iter().map(|s| ("mcp-session-id", s.as_str())).collect();
    let (mut as_stream, mut streaming) = (false, false);
    let mut scratch = [0u8; 512];
    loop {
        let piece = if streaming || listen {
            // A listen stays open as long as its client wants: a client that
            // leaves ends it (and the session forgets it).
            match first_of(prx.recv(), conn.stream.read(&mut scratch)).await {
                Either::A(p) => p,
                Either::B(Ok(0) | Err(_)) => {
                    if let Some(tx) = session_tx.as_ref().and_then(|w| w.upgrade()) {
                        // Closed first: the session tells this listen from another with its id.
                        drop(prx);
                        let _ = tx.send(Cmd::Gone(id.clone()));
                    }
                    return false;
                }
                // Nothing is expected from the client on a stream.
                Either::B(Ok(_)) => continue,
            }
        } else {
            prx.recv().await
        };
        let (line, last) = match piece {
            Some(Piece::Stream) => {
                as_stream = true;
                continue;
            }
            Some(Piece::Line(l)) => {
                let last = is_response(&l);
                (l, last)
            }
            Some(Piece::Unanswered) => {
                let why = "mcpscope mock: the recorded request was never answered, so neither is this one";
                (error_line(&id, NOT_SERVED, why), true)
            }
            None if streaming => return false,
            // The session was ended (DELETE) while the request waited.
            None => return send(conn, &session_not_found("(ended)")).await,
        };
        if last && !streaming && !as_stream {
            return send(conn, &answer(200, &session, "application/json", &line)).await;
        }
        if !streaming {
            streaming = true;
            if !send(conn, &sse_head(&session)).await {
                return false;
            }
        }
        if !send(conn, &sse_event(&line)).await {
            return false;
        }
        if last {
            // The stream's end is the connection's (no length, no chunking).
            let _ = timeout(WRITE_TIMEOUT, conn.stream.shutdown()).await;
            return false;
        }
    }
}

/// The GET stream of a session: server traffic outside any request.
async fn get(shared: &Arc<Shared>, conn: &mut Conn<TcpStream>, req: &Request) -> bool {
    let Some(sid) = req.header("mcp-session-id") else {
        let text = "mcpscope mock: a GET stream needs a session (Mcp-Session-Id); without one (the stateless era) \
                    server traffic comes with the answers to POSTs";
        let allow = [("allow", "POST, DELETE")];
        return send(conn, &answer(405, &allow, "text/plain; charset=utf-8", text.as_bytes())).await;
    };
    let found = lock(&shared.sessions).get(sid).cloned();
    let (gtx, mut grx) = mpsc::unbounded_channel();
    // The sender is not kept: a DELETE must be able to end the session.
    if found.is_none_or(|tx| tx.send(Cmd::Listen(gtx)).is_err()) {
        return send(conn, &session_not_found(sid)).await;
    }
    if !send(conn, &sse_head(&[])).await {
        return false;
    }
    let mut scratch = [0u8; 512];
    loop {
        match first_of(grx.recv(), conn.stream.read(&mut scratch)).await {
            Either::A(Some(line)) => {
                if !send(conn, &sse_event(&line)).await {
                    return false;
                }
            }
            // The session ended, or another GET stream replaced this one.
            Either::A(None) => break,
            // The client went away.
            Either::B(Ok(0) | Err(_)) => return false,
            // Nothing is expected from the client on a stream.
            Either::B(Ok(_)) => {}
        }
    }
    let _ = timeout(WRITE_TIMEOUT, conn.stream.shutdown()).await;
    false
}

async fn delete(shared: &Arc<Shared>, conn: &mut Conn<TcpStream>, req: &Request) -> bool {
    let Some(sid) = req.header("mcp-session-id") else {
        let why = "Bad Request: DELETE ends a session and needs its Mcp-Session-Id header";
        return send(conn, &rpc_error(400, BAD_REQUEST, why)).await;
    };
    let removed = lock(&shared.sessions).remove(sid);
    match removed {
        Some(_) => send(conn, &answer(200, &[], "", b"")).await,
        None => send(conn, &session_not_found(sid)).await,
    }
}

fn auth_answer(a: &AuthAnswer) -> Vec<u8> {
    let headers: Vec<(&str, &str)> = a.headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    answer(a.status, &headers, a.content_type, &a.body)
}

async fn send(conn: &mut Conn<TcpStream>, bytes: &[u8]) -> bool {
    matches!(timeout(WRITE_TIMEOUT, conn.stream.write_all(bytes)).await, Ok(Ok(())))
}

/// The head of an SSE answer, which ends when the connection closes.
fn sse_head(headers: &[(&str, &str)]) -> Vec<u8> {
    let mut out =
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n"
            .to_owned();
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.into_bytes()
}

/// One message as one SSE event. The mock's lines hold no line breaks (they
/// are recorded lines, or its own compact JSON), so one `data:` line carries it.
fn sse_event(line: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(line.len() + 24);
    out.extend_from_slice(b"event: message\ndata: ");
    out.extend_from_slice(line);
    out.extend_from_slice(b"\n\n");
    out
}

fn error_line(id: &[u8], code: i64, message: &str) -> Vec<u8> {
    let mut line = br#"{"jsonrpc":"2.0","id":"#.to_vec();
    line.extend_from_slice(id);
    line.extend_from_slice(br#","error":"#);
    line.extend_from_slice(json!({"code": code, "message": message}).to_string().as_bytes());
    line.push(b'}');
    line
}

/// An HTTP refusal with a JSON-RPC error body, as SDK servers send them.
fn rpc_error(status: u16, code: i64, message: &str) -> Vec<u8> {
    answer(status, &[], "application/json", &error_line(b"null", code, message))
}

fn session_not_found(sid: &str) -> Vec<u8> {
    let shown = crate::text::shorten(sid, 80);
    rpc_error(
        404,
        SESSION_NOT_FOUND,
        &format!("Session not found: no session {shown:?} (it ended, or the mock was restarted): initialize again"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_keeps_the_recorded_path() {
        assert_eq!(endpoint_path(None), "/mcp");
        assert_eq!(endpoint_path(Some("http://127.0.0.1:3001/")), "/mcp");
        assert_eq!(endpoint_path(Some("https://api.example.com/v1/mcp?x=1")), "/v1/mcp");
        assert_eq!(endpoint_path(Some("not a url")), "/mcp");
    }

    fn got(rx: &mut mpsc::UnboundedReceiver<Piece>) -> Vec<String> {
        let mut v = vec![];
        while let Ok(p) = rx.try_recv() {
            v.push(match p {
                Piece::Line(l) => String::from_utf8(l).unwrap(),
                Piece::Stream => "stream".into(),
                Piece::Unanswered => "unanswered".into(),
            });
        }
        v
    }

    fn waiting(r: &mut Router, id: &str, listen: bool) -> mpsc::UnboundedReceiver<Piece> {
        let (to, rx) = mpsc::unbounded_channel();
        r.waiting.push(Waiting {
            id: id.as_bytes().to_vec(),
            listen,
            to,
        });
        rx
    }

    #[test]
    fn lines_go_to_the_oldest_waiting_request_then_to_the_get_stream() {
        let mut r = Router::default();
        let mut ar = waiting(&mut r, "1", false);
        let mut br = waiting(&mut r, "2", false);
        r.route(Output::Line(
            br#"{"jsonrpc":"2.0","method":"notifications/progress"}"#.to_vec(),
        ));
        r.route(Output::Line(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_vec()));
        r.route(Output::Unanswered);
        r.route(Output::Line(
            br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#.to_vec(),
        ));
        assert_eq!(got(&mut ar).len(), 2, "progress, then the answer");
        assert_eq!(got(&mut br), ["unanswered"]);
        assert_eq!(r.held.len(), 1, "kept for a GET stream");
        let (g, mut gr) = mpsc::unbounded_channel();
        r.listen(g);
        assert!(gr.try_recv().unwrap().ends_with(b"list_changed\"}"));
    }

    /// A listen (2026-07-28) stays first in line without holding up the
    /// answers behind it, and takes only what is tagged with its id.
    #[test]
    fn a_listen_takes_its_tagged_lines_and_answers_pass_it_by_id() {
        let mut r = Router::default();
        let mut listen = waiting(&mut r, r#""L""#, true);
        let mut call = waiting(&mut r, "7", false);
        r.route(Output::Stream);
        r.route(Output::Line(
            br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"}}}"#.to_vec(),
        ));
        r.route(Output::Line(
            br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1}}"#.to_vec(),
        ));
        r.route(Output::Line(br#"{"jsonrpc":"2.0","id":7,"result":{}}"#.to_vec()));
        let on_listen = got(&mut listen);
        assert_eq!(on_listen.len(), 1, "{on_listen:?}");
        assert!(on_listen[0].contains("list_changed"));
        assert_eq!(got(&mut call).len(), 3, "stream, progress, the answer");
        assert_eq!(r.waiting.len(), 1, "the listen stays open");
        // An answer with the listen's id (another client's request, ids are
        // theirs) goes to that request, not to the listen.
        let mut same_id = waiting(&mut r, r#""L""#, false);
        r.route(Output::Line(br#"{"jsonrpc":"2.0","id":"L","result":{}}"#.to_vec()));
        assert_eq!(got(&mut same_id).len(), 1);
        assert!(got(&mut listen).is_empty());
        // A listen whose client left is dropped at the next line.
        drop(listen);
        r.route(Output::Line(
            br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"}}}"#.to_vec(),
        ));
        assert!(r.waiting.is_empty());
    }

    /// Ids are the clients' own: a refused listen still gets its error, a
    /// request whose client left still takes its own lines, and one client's
    /// listen leaving does not end another's with the same id.
    #[test]
    fn lines_reach_their_own_request_whoever_else_waits() {
        let mut r = Router::default();
        let mut refused = waiting(&mut r, r#""L""#, true);
        r.route(Output::Line(
            br#"{"jsonrpc":"2.0","id":"L","error":{"code":-32601,"message":"no"}}"#.to_vec(),
        ));
        assert_eq!(got(&mut refused).len(), 1, "the refused listen's error");
        assert!(r.waiting.is_empty());

        let left = waiting(&mut r, "1", false);
        drop(left);
        let mut next = waiting(&mut r, "2", false);
        r.route(Output::Line(
            br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1}}"#.to_vec(),
        ));
        r.route(Output::Line(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_vec()));
        assert!(
            got(&mut next).is_empty(),
            "the left request's lines are not the next one's"
        );
        r.route(Output::Line(br#"{"jsonrpc":"2.0","id":2,"result":{}}"#.to_vec()));
        assert_eq!(got(&mut next).len(), 1);

        let x = waiting(&mut r, r#""L""#, true);
        let mut y = waiting(&mut r, r#""L""#, true);
        drop(x);
        assert!(r.gone(br#""L""#), "another client's listen with that id stays");
        assert_eq!(r.waiting.len(), 1);
        r.route(Output::Line(
            br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"}}}"#.to_vec(),
        ));
        assert_eq!(got(&mut y).len(), 1);
    }

    #[test]
    fn modern_requests_are_told_by_discover_or_meta() {
        assert!(looks_modern(&json!({"method": "server/discover"})));
        assert!(looks_modern(
            &json!({"method": "tools/list", "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}})
        ));
        assert!(!looks_modern(&json!({"method": "tools/list", "params": {}})));
    }
}
