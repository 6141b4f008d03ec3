//! The HTTP/1.1 server pieces shared by mcpscope's loopback listeners (the
//! reverse proxy, the mock's Streamable HTTP endpoint, the MCP App pages,
//! the sign-in's redirect listener): reading a request with `httparse` under
//! header and body timeouts, connection slots that make room by closing the
//! client that has waited longest, the one [`Gate`] on `Host` and `Origin`,
//! and plain-text error answers.
//!
//! Kept in one place so that every listener refuses the same malformed or
//! hostile requests the same way.

use httparse::Status;
use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Poll;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::time::{Instant, timeout, timeout_at};

/// Requests larger than this are refused (413): MCP messages are far smaller.
pub(crate) const MAX_REQUEST_BODY: usize = 64 * 1024 * 1024;
/// Request line and headers (and a chunked body's trailers) larger than this are refused (431).
pub(crate) const MAX_HEAD: usize = 64 * 1024;
/// More header fields than this is a 431.
const MAX_HEADERS: usize = 100;
/// The longest chunk-size line (size, extensions, CRLF).
const MAX_CHUNK_LINE: usize = 4096;
/// After an error answer, how long (and how much) of the rest of the request
/// is read and dropped, so that closing does not reset the connection before
/// the client has read the answer.
const LINGER: Duration = Duration::from_secs(2);
const LINGER_BYTES: usize = 256 * 1024;
/// One socket read.
pub(crate) const READ_SIZE: usize = 64 * 1024;

/// One request as the client sent it.
#[derive(Clone)]
pub(crate) struct Request {
    pub(crate) method: String,
    pub(crate) target: String,
    /// HTTP/1.0 (no keep-alive unless asked)?
    pub(crate) http10: bool,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Request {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn keep_alive(&self) -> bool {
        let conn = self.header("connection").map(str::to_ascii_lowercase);
        match conn.as_deref() {
            Some(c) if c.split(',').any(|t| t.trim() == "close") => false,
            Some(c) if c.split(',').any(|t| t.trim() == "keep-alive") => true,
            _ => !self.http10,
        }
    }
}

/// How long a client turned away (503) has to take its answer.
const REFUSE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a newcomer waits for a slot to be made before it gets 503.
const ROOM_WAIT: Duration = Duration::from_secs(2);

/// What the accept loop woke for.
enum Next {
    Accepted(std::io::Result<(TcpStream, std::net::SocketAddr)>),
    /// A newcomer that waited found room.
    Room((TcpStream, Slot)),
}

/// Accepts connections on a current-thread runtime until `stop` is set (and
/// the listener woken), giving each one a slot and its own task (`serve`);
/// when every slot stays busy for [`ROOM_WAIT`], the client gets 503 `busy`.
/// Tasks still running when it stops are dropped.
pub(crate) fn accept_loop<F, Fut>(
    listener: std::net::TcpListener,
    slots: Arc<Slots>,
    stop: Arc<AtomicBool>,
    busy: &'static str,
    mut serve: F,
) -> std::io::Result<()>
where
    F: FnMut(TcpStream, Slot) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    listener.set_nonblocking(true)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()?;
    let result = rt.block_on(async {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        // Connections that found no room at once and got a slot a moment later.
        let (room_tx, mut room_rx) = tokio::sync::mpsc::unbounded_channel::<(TcpStream, Slot)>();
        loop {
            let next = std::future::poll_fn(|cx| {
                if let std::task::Poll::Ready(Some(found)) = room_rx.poll_recv(cx) {
                    return std::task::Poll::Ready(Next::Room(found));
                }
                listener.poll_accept(cx).map(Next::Accepted)
            })
            .await;
            if stop.load(Ordering::SeqCst) {
                return Ok(());
            }
            let stream = match next {
                Next::Room((stream, slot)) => {
                    tokio::spawn(serve(stream, slot));
                    continue;
                }
                Next::Accepted(Ok((s, _))) => s,
                Next::Accepted(Err(_)) => {
                    // Out of file descriptors, say: wait for some to close instead of spinning.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            match Slots::take(&slots) {
                Some(slot) => {
                    tokio::spawn(serve(stream, slot));
                }
                None => {
                    // Every slot is in an exchange or just accepted and not yet
                    // read by its task (read in moments, when it will wait or
                    // be busy): the newcomer waits a little for room before it
                    // is turned away (a normal client behind a crowd of slow
                    // ones got 503 while their tasks had not run yet).
                    let (slots, room) = (Arc::clone(&slots), room_tx.clone());
                    tokio::spawn(async move {
                        let deadline = tokio::time::Instant::now() + ROOM_WAIT;
                        while tokio::time::Instant::now() < deadline {
                            tokio::time::sleep(Duration::from_millis(10)).await;
                            if let Some(slot) = Slots::take(&slots) {
                                let _ = room.send((stream, slot));
                                return;
                            }
                        }
                        let mut conn = Conn::new(stream, Arc::new(Notify::new()));
                        conn.answer_and_close(503, busy, REFUSE_TIMEOUT).await
                    });
                }
            }
        }
    });
    rt.shutdown_background();
    result
}

/// The open connections, and which of them are waiting for a request.
pub(crate) struct Slots {
    max: usize,
    inner: Mutex<SlotsInner>,
}

#[derive(Default)]
struct SlotsInner {
    next_id: u64,
    open: HashMap<u64, Entry>,
}

struct Entry {
    /// Since when it has waited for (the rest of) a request; `None` while an exchange runs.
    waiting_since: Option<std::time::Instant>,
    /// Told when the connection is closed to make room.
    evict: Arc<Notify>,
}

impl Slots {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            max,
            inner: Mutex::new(SlotsInner::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, SlotsInner> {
        // The map stays consistent whatever panicked while holding it.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn open(&self) -> usize {
        self.lock().open.len()
    }

    /// A slot for a new connection, making room if need be; `None` when
    /// every open connection is in the middle of an exchange or not yet
    /// looked at by its task.
    pub(crate) fn take(this: &Arc<Self>) -> Option<Slot> {
        let mut inner = this.lock();
        if inner.open.len() >= this.max {
            let (_, oldest) = inner
                .open
                .iter()
                .filter_map(|(id, e)| e.waiting_since.map(|t| (t, *id)))
                .min()?;
            if let Some(e) = inner.open.remove(&oldest) {
                e.evict.notify_one();
            }
        }
        let id = inner.next_id;
        inner.next_id += 1;
        let evict = Arc::new(Notify::new());
        // Not waiting until its task says so: a connection just accepted may
        // hold a whole request its task has not read yet, and closing it to
        // make room would leave that request unanswered.
        inner.open.insert(
            id,
            Entry {
                waiting_since: None,
                evict: evict.clone(),
            },
        );
        Some(Slot {
            slots: this.clone(),
            id,
            evict,
        })
    }
}

/// A connection's place among the open ones, given back when dropped,
/// however its task ends (a panic included).
pub(crate) struct Slot {
    slots: Arc<Slots>,
    id: u64,
    pub(crate) evict: Arc<Notify>,
}

impl Slot {
    pub(crate) fn waiting(&self) {
        if let Some(e) = self.slots.lock().open.get_mut(&self.id) {
            e.waiting_since = Some(std::time::Instant::now());
        }
    }

    /// Marks the connection busy with an exchange; false if it was closed to make room.
    pub(crate) fn busy(&self) -> bool {
        match self.slots.lock().open.get_mut(&self.id) {
            Some(e) => {
                e.waiting_since = None;
                true
            }
            None => false,
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.lock().open.remove(&self.id);
    }
}

/// Why reading a request stopped short.
#[derive(Debug, PartialEq)]
pub(crate) enum Stop {
    /// Close without a word: nothing (more) came, or the client left.
    Closed,
    /// Its slot was needed for a newcomer while it waited for (the rest of) a request.
    Evicted,
    /// Answer with this status and reason, then close.
    Bad(u16, String),
    /// The [`Gate`] refused it (`request` is its method and target): answer
    /// with this status, note it, then close.
    Refused { status: u16, request: String, why: Refusal },
}

pub(crate) fn bad(status: u16, why: impl Into<String>) -> Stop {
    Stop::Bad(status, why.into())
}

pub(crate) enum Either<A, B> {
    A(A),
    B(B),
}

/// Whichever of two futures finishes first (`a` if both are ready).
pub(crate) async fn first_of<A: Future, B: Future>(a: A, b: B) -> Either<A::Output, B::Output> {
    let mut a = pin!(a);
    let mut b = pin!(b);
    std::future::poll_fn(move |cx| {
        if let Poll::Ready(v) = a.as_mut().poll(cx) {
            return Poll::Ready(Either::A(v));
        }
        if let Poll::Ready(v) = b.as_mut().poll(cx) {
            return Poll::Ready(Either::B(v));
        }
        Poll::Pending
    })
    .await
}

/// A client connection and the bytes read from it but not used yet
/// (the start of a pipelined request, say).
pub(crate) struct Conn<S> {
    pub(crate) stream: S,
    pub(crate) buf: Vec<u8>,
    scratch: Box<[u8]>,
    pub(crate) evict: Arc<Notify>,
    /// Requests read whole on it so far.
    requests: u64,
}

impl<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin> Conn<S> {
    pub(crate) fn new(stream: S, evict: Arc<Notify>) -> Self {
        Self {
            stream,
            buf: Vec::new(),
            scratch: vec![0; READ_SIZE].into_boxed_slice(),
            evict,
            requests: 0,
        }
    }

    /// Reads more into `buf` before `deadline`; `what` names the part of the
    /// request the client is in, for the answer when it ends there. Before a
    /// request has started (`what` is `None`), its end or silence is no error.
    pub(crate) async fn more(&mut self, deadline: Instant, what: Option<&str>) -> Result<(), Stop> {
        let read = self.stream.read(&mut self.scratch);
        let outcome = timeout_at(deadline, first_of(read, self.evict.notified())).await;
        if let Ok(Either::B(())) = outcome {
            return Err(Stop::Evicted);
        }
        let Some(what) = what else {
            return match outcome {
                Ok(Either::A(Ok(n))) if n > 0 => {
                    self.buf.extend_from_slice(&self.scratch[..n]);
                    Ok(())
                }
                _ => Err(Stop::Closed),
            };
        };
        match outcome {
            Ok(Either::A(Ok(0))) => Err(bad(400, format!("the request ended inside {what}"))),
            Ok(Either::A(Ok(n))) => {
                self.buf.extend_from_slice(&self.scratch[..n]);
                Ok(())
            }
            Ok(Either::A(Err(_)) | Either::B(())) => Err(Stop::Closed),
            Err(_) => Err(bad(408, format!("{what} did not come in time"))),
        }
    }

    /// Writes an error answer and closes, without resetting the connection
    /// under an answer the client has not read yet.
    pub(crate) async fn answer_and_close(&mut self, status: u16, why: &str, within: Duration) {
        let answer = plain_answer(status, why);
        if !matches!(timeout(within, self.stream.write_all(&answer)).await, Ok(Ok(()))) {
            return;
        }
        let _ = timeout(within, self.stream.shutdown()).await;
        let deadline = Instant::now() + LINGER;
        let mut drained = 0;
        while drained < LINGER_BYTES {
            match timeout_at(deadline, self.stream.read(&mut self.scratch)).await {
                Ok(Ok(n)) if n > 0 => drained += n,
                _ => break,
            }
        }
    }
}

/// Reads one request: the head within `wait` of the call (its first byte) and
/// `head_timeout` of its first byte (the rest), the body with no pause longer
/// than `head_timeout`.
pub(crate) async fn read_request<S>(
    conn: &mut Conn<S>,
    wait: Duration,
    head_timeout: Duration,
    gate: Gate,
) -> Result<Request, Stop>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let idle_deadline = Instant::now() + wait;
    let mut head_deadline = None;
    let mut scanned: usize = 0;
    let (head_len, mut req) = loop {
        // Blank lines before a request are allowed (RFC 9112 §2.2).
        let blank = conn.buf.iter().take_while(|b| matches!(b, b'\r' | b'\n')).count();
        if blank > 0 {
            conn.buf.drain(..blank);
            scanned = 0;
        }
        if !conn.buf.is_empty() && head_deadline.is_none() {
            head_deadline = Some(Instant::now() + head_timeout);
        }
        // Parsed only once the blank line after the headers has come, so a
        // head sent a byte at a time is parsed once, not once a byte.
        let from = scanned.saturating_sub(2);
        let ended = memchr::memmem::find(&conn.buf[from..], b"\n\r\n").is_some()
            || memchr::memmem::find(&conn.buf[from..], b"\n\n").is_some();
        if ended && let Some(parsed) = parse_head(&conn.buf)? {
            break parsed;
        }
        scanned = conn.buf.len();
        if conn.buf.len() > MAX_HEAD {
            return Err(bad(431, "request headers too large"));
        }
        let what = (!conn.buf.is_empty()).then_some("the request headers");
        conn.more(head_deadline.unwrap_or(idle_deadline), what).await?;
    };
    conn.buf.drain(..head_len);
    // On the head, so that nothing of a refused request's body is read.
    if let Err((status, why)) = gate.admit(&req) {
        return Err(Stop::Refused {
            status,
            request: format!("{} {}", req.method, req.target),
            why,
        });
    }
    let framing = framing(&req)?;
    if framing != Framing::Length(0)
        && !req.http10
        && req
            .header("expect")
            .is_some_and(|e| e.eq_ignore_ascii_case("100-continue"))
    {
        let _ = timeout(head_timeout, conn.stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")).await;
    }
    match framing {
        Framing::Chunked => req.body = read_chunked(conn, head_timeout).await?,
        Framing::Length(len) => {
            while conn.buf.len() < len {
                conn.more(Instant::now() + head_timeout, Some("the request body"))
                    .await?;
            }
            let rest = conn.buf.split_off(len);
            req.body = std::mem::replace(&mut conn.buf, rest);
        }
    }
    conn.requests += 1;
    Ok(req)
}

/// The request line and headers, once `buf` holds them all: how many bytes
/// they took, and the request without its body.
pub(crate) fn parse_head(buf: &[u8]) -> Result<Option<(usize, Request)>, Stop> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Request::new(&mut headers);
    let len = match parsed.parse(buf) {
        Ok(Status::Complete(n)) => n,
        Ok(Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(bad(431, format!("more than {MAX_HEADERS} header fields")));
        }
        Err(e) => return Err(bad(400, format!("malformed request head: {e}"))),
    };
    let (Some(method), Some(target), Some(version)) = (parsed.method, parsed.path, parsed.version) else {
        return Ok(None);
    };
    if !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(bad(400, format!("not an HTTP method: {method:?}")));
    }
    if !target.starts_with('/') {
        return Err(bad(400, format!("only origin-form targets are served, got {target:?}")));
    }
    if ureq::http::uri::PathAndQuery::try_from(target).is_err() {
        return Err(bad(400, format!("not a path and query: {target:?}")));
    }
    let mut fields = Vec::with_capacity(parsed.headers.len());
    for h in parsed.headers.iter() {
        let Ok(value) = std::str::from_utf8(h.value) else {
            return Err(bad(400, format!("the value of header {:?} is not UTF-8", h.name)));
        };
        fields.push((h.name.to_owned(), value.trim().to_owned()));
    }
    Ok(Some((
        len,
        Request {
            method: method.to_owned(),
            target: target.to_owned(),
            http10: version == 0,
            headers: fields,
            body: Vec::new(),
        },
    )))
}

/// How a request body is framed (RFC 9112 §6); no framing is a length of 0.
#[derive(Debug, PartialEq)]
pub(crate) enum Framing {
    Length(usize),
    Chunked,
}

pub(crate) fn framing(req: &Request) -> Result<Framing, Stop> {
    let field = |name: &str| -> Vec<&str> {
        req.headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            .flat_map(|(_, v)| v.split(','))
            .map(str::trim)
            .collect()
    };
    let te = field("transfer-encoding");
    let cl = field("content-length");
    if !te.is_empty() {
        // Both is how requests are smuggled past a proxy: refuse rather than pick one.
        if !cl.is_empty() {
            return Err(bad(400, "the request has both Transfer-Encoding and Content-Length"));
        }
        if req.http10 {
            return Err(bad(400, "Transfer-Encoding in an HTTP/1.0 request"));
        }
        if te.len() != 1 || !te[0].eq_ignore_ascii_case("chunked") {
            return Err(bad(
                501,
                format!(
                    "Transfer-Encoding {:?} is not supported; only chunked is",
                    te.join(", ")
                ),
            ));
        }
        return Ok(Framing::Chunked);
    }
    let Some(first) = cl.first() else {
        return Ok(Framing::Length(0));
    };
    if cl.iter().any(|v| v != first) {
        return Err(bad(
            400,
            format!("conflicting Content-Length values {:?}", cl.join(", ")),
        ));
    }
    if first.is_empty() || !first.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad(400, format!("bad Content-Length {first:?}")));
    }
    match first.parse::<usize>() {
        Ok(n) if n <= MAX_REQUEST_BODY => Ok(Framing::Length(n)),
        _ => Err(bad(413, format!("request body of {first} bytes is too large"))),
    }
}

/// Decodes a chunked body (sizes and trailers parsed by `httparse`),
/// refusing one whose chunk sizes take it past [`MAX_REQUEST_BODY`] as soon
/// as such a size is read.
pub(crate) async fn read_chunked<S>(conn: &mut Conn<S>, stall: Duration) -> Result<Vec<u8>, Stop>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let mut body = Vec::new();
    // Decoded up to here in `conn.buf`.
    let mut pos = 0;
    loop {
        let (line, size) = loop {
            let rest = &conn.buf[pos..];
            // httparse reads an empty size as 0, the last chunk: here it is an error.
            if rest.first().is_some_and(|b| !b.is_ascii_hexdigit()) {
                return Err(bad(400, "a chunk size line that does not start with a hex digit"));
            }
            match httparse::parse_chunk_size(rest) {
                Ok(Status::Complete(found)) => break found,
                Ok(Status::Partial) if rest.len() > MAX_CHUNK_LINE => {
                    return Err(bad(
                        400,
                        format!("a chunk size line longer than {MAX_CHUNK_LINE} bytes"),
                    ));
                }
                Ok(Status::Partial) => conn.more(Instant::now() + stall, Some("a chunk size line")).await?,
                Err(_) => return Err(bad(400, "a chunk size line that is not a hex size")),
            }
        };
        pos += line;
        if size > (MAX_REQUEST_BODY - body.len()) as u64 {
            return Err(bad(
                400,
                format!("chunk size {size:#x} takes the body past the {MAX_REQUEST_BODY} byte limit"),
            ));
        }
        // Below the limit, so it fits in memory and in a usize.
        let size = size as usize;
        if size == 0 {
            loop {
                let mut trailers = [httparse::EMPTY_HEADER; MAX_HEADERS];
                match httparse::parse_headers(&conn.buf[pos..], &mut trailers) {
                    Ok(Status::Complete((n, _))) => {
                        conn.buf.drain(..pos + n);
                        return Ok(body);
                    }
                    Ok(Status::Partial) if conn.buf.len() - pos > MAX_HEAD => {
                        return Err(bad(431, "the chunked body's trailers are too large"));
                    }
                    Ok(Status::Partial) => conn.more(Instant::now() + stall, Some("the trailers")).await?,
                    Err(e) => return Err(bad(400, format!("malformed trailers: {e}"))),
                }
            }
        }
        while conn.buf.len() < pos + size + 2 {
            conn.more(Instant::now() + stall, Some("a chunk")).await?;
        }
        body.extend_from_slice(&conn.buf[pos..pos + size]);
        if conn.buf[pos + size..pos + size + 2] != *b"\r\n" {
            return Err(bad(400, format!("chunk data longer than its chunk size {size:#x}")));
        }
        pos += size + 2;
        // Now and then, not after every chunk: each drain moves what follows.
        if pos >= READ_SIZE {
            conn.buf.drain(..pos);
            pos = 0;
        }
    }
}

/// Who may talk to a listener, by the request's `Host` and `Origin`: the one
/// check of every mcpscope listener (the mock, the reverse proxy, the App
/// pages, the sign-in's redirect listener), run on the head before any of
/// the body is read. A missing, repeated or malformed `Host` (an empty one
/// included) is a 400 (RFC 9112 §3.2); a `Host` or `Origin` that is not this
/// machine, which is how DNS rebinding looks, a 403.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Gate {
    /// The listener in its answers: "mcpscope mock".
    pub(crate) name: &'static str,
    /// The listener in refusals: "the mock".
    who: &'static str,
    /// Opened to other machines by the user: any `Host` is expected, but a
    /// web page elsewhere must still not drive it from a browser.
    any_host: bool,
}

impl Gate {
    pub(crate) const fn loopback(name: &'static str, who: &'static str) -> Self {
        Self {
            name,
            who,
            any_host: false,
        }
    }

    pub(crate) const fn any_host(name: &'static str, who: &'static str) -> Self {
        Self {
            name,
            who,
            any_host: true,
        }
    }

    /// Whether `req` may be answered; if not, the status to refuse it with and why.
    pub(crate) fn admit(&self, req: &Request) -> Result<(), (u16, Refusal)> {
        check_host_syntax(req).map_err(|why| (400, why))?;
        let local = if self.any_host {
            check_local_origin(req, self.who)
        } else {
            check_local(req, self.who)
        };
        local.map_err(|why| (403, why))
    }
}

/// The next request on a connection for its listener to answer, or `None`
/// once the connection is done. What is refused is answered here, the same
/// way on every listener: a malformed request with its 4xx, one the [`Gate`]
/// refuses with 400 or 403 (and told to `refused`), and a whole request that
/// came as its connection was closed to make room with 503 and Retry-After
/// (as is a new connection closed to make room before its first request
/// came whole). A connection is never closed under a whole request without
/// an answer.
pub(crate) async fn next_request<S>(
    conn: &mut Conn<S>,
    slot: &Slot,
    wait: Duration,
    head_timeout: Duration,
    gate: Gate,
    refused: impl FnOnce(String),
) -> Option<Request>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    slot.waiting();
    let name = gate.name;
    let full = || (503, "too many connections at once".to_owned());
    let (status, why) = match read_request(conn, wait, head_timeout, gate).await {
        Ok(req) if slot.busy() => return Some(req),
        Ok(_) => full(),
        // A client that has just connected is about to send its first
        // request, if it has not already: told to come back, not cut off.
        Err(Stop::Evicted) if conn.requests == 0 => full(),
        // Idle between requests: closing is what HTTP/1.1 keep-alive allows.
        Err(Stop::Closed | Stop::Evicted) => return None,
        Err(Stop::Bad(status, why)) => (status, why),
        Err(Stop::Refused { status, request, why }) => {
            refused(format!("refused {request}: {why}"));
            (status, why.to_string())
        }
    };
    conn.answer_and_close(status, &format!("{name}: {why}"), head_timeout)
        .await;
    None
}

/// Why a listener refused a request before reading its body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("the request has {count} {name} headers; at most one is allowed")]
    Repeated { name: &'static str, count: usize },
    #[error("the request has no Host header")]
    NoHost,
    #[error("Host {0:?} is not a host name with an optional port")]
    BadHost(String),
    #[error("Host {host:?} is not local; {who} only answers requests addressed to localhost or a loopback address")]
    HostNotLocal { host: String, who: &'static str },
    #[error("Origin {origin:?} is not local; {who} refuses requests from web pages elsewhere")]
    OriginNotLocal { origin: String, who: &'static str },
}

/// Why a listener could not be opened where the user asked.
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    /// The resolver's words are part of the message (not a separate cause):
    /// they read as one sentence with the example.
    #[error("--listen {listen:?}: {error} (expected e.g. 127.0.0.1:8931)")]
    Unresolved { listen: String, error: std::io::Error },
    #[error("--listen {0:?} names no address")]
    NoAddress(String),
    /// `opened_by`: the flag that would open it to other machines, if there is one.
    #[error(
        "--listen {listen:?} is not a loopback address; {who} listens only on 127.0.0.1, [::1] or localhost{}",
        .opened_by.map(|flag| format!(" unless {flag} is given (then anyone who reaches the port is answered)")).unwrap_or_default()
    )]
    NotLoopback {
        listen: String,
        who: &'static str,
        opened_by: Option<&'static str>,
    },
    #[error("cannot listen on {0}: the port is already in use (pick another, or port 0 for any free one)")]
    InUse(std::net::SocketAddr),
    #[error("cannot listen on {addr}")]
    Bind {
        addr: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// The address `listen` names, which must be a loopback one unless `any`
/// (the user typed `opened_by`): every listener is loopback-only unless asked.
pub fn listen_addr(
    listen: &str,
    any: bool,
    who: &'static str,
    opened_by: Option<&'static str>,
) -> Result<std::net::SocketAddr, ListenError> {
    use std::net::ToSocketAddrs;
    let addrs: Vec<std::net::SocketAddr> = listen
        .to_socket_addrs()
        .map_err(|error| ListenError::Unresolved {
            listen: listen.to_owned(),
            error,
        })?
        .collect();
    let Some(first) = addrs.first() else {
        return Err(ListenError::NoAddress(listen.to_owned()));
    };
    if any {
        return Ok(*first);
    }
    match addrs.iter().find(|a| a.ip().is_loopback()) {
        Some(a) if addrs.iter().all(|a| a.ip().is_loopback()) => Ok(*a),
        _ => Err(ListenError::NotLoopback {
            listen: listen.to_owned(),
            who,
            opened_by,
        }),
    }
}

/// Binds `addr`, saying plainly when the port is taken.
pub fn bind(addr: std::net::SocketAddr) -> Result<(std::net::TcpListener, std::net::SocketAddr), ListenError> {
    let listener = std::net::TcpListener::bind(addr).map_err(|e| match e.kind() {
        std::io::ErrorKind::AddrInUse => ListenError::InUse(addr),
        _ => ListenError::Bind { addr, source: e },
    })?;
    let local = listener
        .local_addr()
        .map_err(|source| ListenError::Bind { addr, source })?;
    Ok((listener, local))
}

/// RFC 9112 §3.2: a request without exactly one well-formed `Host` is a 400,
/// and two `Origin`s are as ambiguous (which one would the local check have
/// looked at?). This runs before the body is read, so nothing of such a
/// request reaches the upstream.
fn check_host_syntax(req: &Request) -> Result<(), Refusal> {
    for name in ["Host", "Origin"] {
        let count = req.headers.iter().filter(|(k, _)| k.eq_ignore_ascii_case(name)).count();
        if count > 1 {
            return Err(Refusal::Repeated { name, count });
        }
    }
    let Some(host) = req.header("host") else {
        return Err(Refusal::NoHost);
    };
    // Userinfo is not allowed in Host (RFC 9110 §7.2), yet `http` takes it in
    // an authority; and it does not check the port.
    // A host name is needed: an empty one, port or not, names no one.
    let well_formed = !host.contains('@')
        && ureq::http::uri::Authority::try_from(host).is_ok_and(|a| match host.strip_prefix(a.host()) {
            _ if a.host().is_empty() => false,
            Some("") => true,
            Some(port) => port
                .strip_prefix(':')
                .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()) && p.parse::<u16>().is_ok()),
            None => false,
        });
    if !well_formed {
        return Err(Refusal::BadHost(host.to_owned()));
    }
    Ok(())
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
/// `who` ("the proxy", "the mock") is named in the reason.
fn check_local(req: &Request, who: &'static str) -> Result<(), Refusal> {
    match req.header("host") {
        None => return Err(Refusal::NoHost),
        Some(h) if !is_local_host(strip_port(h)) => {
            return Err(Refusal::HostNotLocal {
                host: h.to_owned(),
                who,
            });
        }
        _ => {}
    }
    check_local_origin(req, who)
}

/// The `Origin` half of [`check_local`]: what is left of it on a listener the
/// user opened to other machines, where any `Host` is expected but a web
/// page elsewhere must still not drive it from a browser.
fn check_local_origin(req: &Request, who: &'static str) -> Result<(), Refusal> {
    if let Some(o) = req.header("origin") {
        let local = url::Url::parse(o)
            .ok()
            .and_then(|u| u.host_str().map(is_local_host))
            .unwrap_or(false);
        if !local {
            return Err(Refusal::OriginNotLocal {
                origin: o.to_owned(),
                who,
            });
        }
    }
    Ok(())
}

/// A whole answer with its length (the connection can carry another request).
pub(crate) fn answer(status: u16, headers: &[(&str, &str)], content_type: &str, body: &[u8]) -> Vec<u8> {
    let reason = ureq::http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    let mut out = format!("HTTP/1.1 {status} {reason}\r\n");
    if !content_type.is_empty() {
        out.push_str(&format!("content-type: {content_type}\r\n"));
    }
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

/// A plain-text answer that closes the connection (errors and refusals).
/// A 503 says when to come back (RFC 9110 §10.2.3): the listener was full.
pub(crate) fn plain_answer(status: u16, text: &str) -> Vec<u8> {
    let reason = ureq::http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    let body = format!("{text}\n");
    let retry = if status == 503 { "retry-after: 1\r\n" } else { "" };
    format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\n{retry}connection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Stops a running listener from another thread: sets its flag and wakes
/// its accept loop with a connection of its own.
#[derive(Clone)]
pub struct Stopper {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    local: std::net::SocketAddr,
}

impl Stopper {
    pub fn new(stop: std::sync::Arc<std::sync::atomic::AtomicBool>, local: std::net::SocketAddr) -> Self {
        Self { stop, local }
    }

    pub fn stop(&self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = std::net::TcpStream::connect_timeout(&self.local, std::time::Duration::from_secs(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every request read from `input` (sent whole, then the end of the
    /// stream), and how reading stopped.
    fn read_all(input: &[u8]) -> (Vec<Request>, Stop) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async {
            let (mut client, server) = tokio::io::duplex(input.len() + 1024);
            client.write_all(input).await.unwrap();
            client.shutdown().await.unwrap();
            let mut conn = Conn::new(server, Arc::new(Notify::new()));
            let mut got = Vec::new();
            loop {
                let secs = Duration::from_secs(5);
                match read_request(&mut conn, secs, secs, Gate::loopback("mcpscope test", "the test")).await {
                    Ok(r) => got.push(r),
                    Err(stop) => return (got, stop),
                }
            }
        })
    }

    fn refused(input: &[u8]) -> (u16, String) {
        match read_all(input) {
            (got, Stop::Bad(status, why)) if got.is_empty() => (status, why),
            (got, Stop::Refused { status, why, .. }) if got.is_empty() => (status, why.to_string()),
            (got, stop) => panic!(
                "{:?}: {} requests, then {stop:?}",
                String::from_utf8_lossy(input),
                got.len()
            ),
        }
    }

    fn chunked(body: &[u8]) -> Vec<u8> {
        let mut r = b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        r.extend_from_slice(body);
        r
    }

    #[test]
    fn pipelined_requests_are_read_one_after_the_other() {
        let input = b"\r\nGET /a HTTP/1.1\r\nHost: localhost\r\n\r\nPOST /b?x=1 HTTP/1.0\r\nhost: 127.0.0.1:9\r\nContent-Length: 5\r\nX-Y:  z \r\n\r\nhelloGET /c HTTP/1.1\r\nHost: localhost\r\n\r\n";
        let (got, stop) = read_all(input);
        assert_eq!(stop, Stop::Closed);
        let seen: Vec<_> = got
            .iter()
            .map(|r| (r.method.as_str(), r.target.as_str(), r.http10))
            .collect();
        assert_eq!(
            seen,
            [("GET", "/a", false), ("POST", "/b?x=1", true), ("GET", "/c", false)]
        );
        assert_eq!(got[1].body, b"hello");
        assert_eq!(got[1].header("x-y"), Some("z"));
    }

    #[test]
    fn chunked_request_bodies_are_decoded() {
        let (got, stop) = read_all(&chunked(b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-T: 1\r\n\r\n"));
        assert_eq!(stop, Stop::Closed);
        assert_eq!(got[0].body, b"hello world");
    }

    #[test]
    fn hostile_chunk_sizes_are_400s_not_panics() {
        for body in [
            &b"1\r\nA\r\nffffffffffffffff\r\n"[..],
            b"ffffffffffffffff\r\n",
            b"10000000000000000\r\n",
            b"1\r\nA\r\n4000000\r\n",
            b"+5\r\nhello\r\n0\r\n\r\n",
            b"\r\n",
            b";x\r\n",
            b"5\r\nhello world\r\n0\r\n\r\n",
            b"5\r\nhel",
            b"zz\r\n",
        ] {
            let (status, why) = refused(&chunked(body));
            assert_eq!(status, 400, "{:?}: {why}", String::from_utf8_lossy(body));
            assert!(why.contains("chunk") || why.contains("ended"), "{why}");
        }
        let mut long = vec![b'0'; MAX_CHUNK_LINE + 10];
        long.extend_from_slice(b"\r\n");
        assert_eq!(refused(&chunked(&long)).0, 400);
        let (_, why) = refused(&chunked(b"1\r\nA\r\nffffffffffffffff\r\n"));
        assert!(why.contains("chunk size") && why.contains("limit"), "{why}");
    }

    #[test]
    fn malformed_heads_and_framing_get_4xx() {
        let h = "Host: localhost\r\n";
        for (input, status) in [
            (format!("GET /\r\n{h}\r\n"), 400),
            (format!("GET / HTTP/2.0\r\n{h}\r\n"), 400),
            (format!("get / HTTP/1.1\r\n{h}\r\n"), 400),
            (format!("GET http://x/ HTTP/1.1\r\n{h}\r\n"), 400),
            (format!("GET / HTTP/1.1\r\n{h}Bad Name: x\r\n\r\n"), 400),
            (format!("GET / HTTP/1.1\r\n{h}X: a\0b\r\n\r\n"), 400),
            ("GET / HTTP/1.1\r\nX: 1\r\n\r\n".into(), 400),
            ("GET / HTTP/1.1\r\nHost: a b\r\n\r\n".into(), 400),
            (format!("POST / HTTP/1.1\r\n{h}Content-Length: +5\r\n\r\nhello"), 400),
            (
                format!("POST / HTTP/1.1\r\n{h}Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello"),
                400,
            ),
            (
                format!("POST / HTTP/1.1\r\n{h}Content-Length: 99999999999999999999999\r\n\r\n"),
                413,
            ),
            (format!("POST / HTTP/1.1\r\n{h}Content-Length: 67108865\r\n\r\n"), 413),
            (
                format!("POST / HTTP/1.1\r\n{h}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
                400,
            ),
            (
                format!("POST / HTTP/1.1\r\n{h}Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"),
                501,
            ),
            (
                format!("POST / HTTP/1.0\r\n{h}Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
                400,
            ),
            (format!("POST / HTTP/1.1\r\n{h}Content-Length: 10\r\n\r\nhello"), 400),
            (format!("GET / HTTP/1.1\r\n{h}X-A"), 400),
        ] {
            assert_eq!(refused(input.as_bytes()).0, status, "{input:?}");
        }
        let many: String = (0..MAX_HEADERS + 1).map(|i| format!("X-{i}: 1\r\n")).collect();
        assert_eq!(refused(format!("GET / HTTP/1.1\r\n{h}{many}\r\n").as_bytes()).0, 431);
        let huge = "a".repeat(MAX_HEAD + 1);
        assert_eq!(refused(format!("GET / HTTP/1.1\r\n{h}X: {huge}").as_bytes()).0, 431);
    }

    #[test]
    fn a_full_house_makes_room_by_closing_the_longest_waiting_connection() {
        let slots = Arc::new(Slots::new(2));
        let a = Slots::take(&slots).unwrap();
        let b = Slots::take(&slots).unwrap();
        a.waiting();
        assert!(b.busy());
        // `a` waited longest and is not in an exchange: it goes.
        let c = Slots::take(&slots).unwrap();
        assert_eq!(slots.open(), 2);
        assert!(!a.busy(), "closed to make room");
        assert!(c.busy());
        // Everyone busy: no room.
        assert!(Slots::take(&slots).is_none());
        drop(a);
        assert_eq!(slots.open(), 2, "an evicted slot was already given back");
        drop(b);
        assert_eq!(slots.open(), 1);
        drop(c);
        assert_eq!(slots.open(), 0);
    }

    /// #47 item 8: a burst of clients each sending a whole request at once.
    /// A connection just accepted is not closed to make room before its task
    /// has read what it sent: the newcomer is turned away (503) instead.
    #[test]
    fn a_connection_not_yet_read_is_not_closed_to_make_room() {
        let slots = Arc::new(Slots::new(2));
        let a = Slots::take(&slots).unwrap();
        let b = Slots::take(&slots).unwrap();
        assert!(Slots::take(&slots).is_none(), "neither has been read yet");
        assert!(a.busy() && b.busy(), "neither was closed");
        b.waiting();
        let c = Slots::take(&slots).unwrap();
        assert!(!b.busy(), "waiting, so it made room");
        assert!(a.busy() && c.busy());
    }

    /// Every refusal a listener makes, run on a duplex stream: the answer's
    /// status line and whether the request reached the listener.
    fn next_on(input: &[u8], evicted: bool) -> (String, bool, Vec<String>) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async {
            let slots = Arc::new(Slots::new(1));
            let slot = Slots::take(&slots).unwrap();
            if evicted {
                slot.waiting();
                let _newcomer = Slots::take(&slots).unwrap();
            }
            let (mut client, server) = tokio::io::duplex(input.len() + 4096);
            client.write_all(input).await.unwrap();
            let mut conn = Conn::new(server, slot.evict.clone());
            let mut notes = Vec::new();
            let secs = Duration::from_secs(5);
            let gate = Gate::loopback("mcpscope test", "the test");
            // The client reads until the listener closes, then leaves (ending its linger).
            let reader = tokio::spawn(async move {
                let mut answer = Vec::new();
                let _ = client.read_to_end(&mut answer).await;
                String::from_utf8_lossy(&answer).into_owned()
            });
            let got = next_request(&mut conn, &slot, secs, secs, gate, |n| notes.push(n)).await;
            drop(conn);
            let answer = reader.await.unwrap();
            (answer, got.is_some(), notes)
        })
    }

    #[test]
    fn a_whole_request_on_a_connection_closed_to_make_room_gets_503_with_retry_after() {
        let req = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:9\r\nContent-Length: 2\r\n\r\n{}";
        let (answer, served, _) = next_on(req, true);
        assert!(!served);
        assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");
        assert!(answer.contains("retry-after: 1\r\n"), "{answer}");
        let (answer, served, _) = next_on(req, false);
        assert!(served && answer.is_empty(), "{answer}");
        // Closed to make room before its first request came: told so too.
        let (answer, served, _) = next_on(b"", true);
        assert!(!served);
        assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");
    }

    #[test]
    fn the_gate_refuses_on_the_head_with_400_or_403_and_says_so() {
        for (host, status) in [
            ("Host:\r\n", "400"),
            ("Host: \r\n", "400"),
            ("", "400"),
            ("Host: :8080\r\n", "400"),
            ("Host: evil.example\r\n", "403"),
        ] {
            // The body never comes: refused on the head, it is not waited for.
            let req = format!("POST /mcp HTTP/1.1\r\n{host}Content-Length: 100\r\n\r\n");
            let (answer, served, notes) = next_on(req.as_bytes(), false);
            assert!(!served, "{host:?}");
            assert!(answer.starts_with(&format!("HTTP/1.1 {status} ")), "{host:?}: {answer}");
            assert!(answer.contains("mcpscope test: "), "{answer}");
            assert_eq!(notes.len(), 1, "{host:?}: {notes:?}");
            assert!(notes[0].starts_with("refused POST /mcp: "), "{notes:?}");
        }
        let open = Gate::any_host("mcpscope test", "the test");
        assert!(open.admit(&req(&[("Host", "evil.example")])).is_ok());
        assert_eq!(open.admit(&req(&[("Host", "")])).unwrap_err().0, 400);
        assert_eq!(
            open.admit(&req(&[("Host", "x"), ("Origin", "http://evil.example")]))
                .unwrap_err()
                .0,
            403
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
    fn listen_is_loopback_unless_asked() {
        let proxy = |l| listen_addr(l, false, "the proxy", None);
        assert!(proxy("127.0.0.1:0").is_ok());
        assert!(proxy("[::1]:0").is_ok());
        assert!(proxy("localhost:0").is_ok());
        let e = proxy("0.0.0.0:8080").unwrap_err().to_string();
        assert!(e.contains("not a loopback address") && !e.contains("unless"), "{e}");
        assert!(proxy("127.0.0.1").is_err(), "a port is needed");
        let e = listen_addr("0.0.0.0:0", false, "the mock", Some("--listen-any"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("the mock listens only on") && e.contains("unless --listen-any"),
            "{e}"
        );
        assert!(listen_addr("0.0.0.0:0", true, "the mock", Some("--listen-any")).is_ok());
    }

    #[test]
    fn dns_rebinding_is_refused_by_host_and_origin() {
        assert!(check_local(&req(&[("Host", "127.0.0.1:8931")]), "the proxy").is_ok());
        assert!(
            check_local(
                &req(&[("Host", "localhost:8931"), ("Origin", "http://localhost:3000")]),
                "the proxy"
            )
            .is_ok()
        );
        assert!(check_local(&req(&[("host", "[::1]:8931")]), "the proxy").is_ok());
        let e = check_local(&req(&[("Host", "evil.example:8931")]), "the proxy").unwrap_err();
        assert!(matches!(e, Refusal::HostNotLocal { .. }), "{e}");
        let e = check_local(
            &req(&[("Host", "127.0.0.1:8931"), ("Origin", "https://evil.example")]),
            "the proxy",
        )
        .unwrap_err();
        assert!(matches!(e, Refusal::OriginNotLocal { .. }), "{e}");
        assert!(check_local(&req(&[("Host", "127.0.0.1"), ("Origin", "null")]), "the proxy").is_err());
        assert!(check_local(&req(&[]), "the proxy").is_err(), "no Host at all");
        // A name that merely starts like a local one is not local.
        assert!(check_local(&req(&[("Host", "127.0.0.1.evil.example")]), "the proxy").is_err());
        assert!(check_local(&req(&[("Host", "localhost.evil.example")]), "the proxy").is_err());
    }

    #[test]
    fn a_missing_duplicate_or_malformed_host_is_a_syntax_error() {
        assert!(check_host_syntax(&req(&[("Host", "127.0.0.1:8931")])).is_ok());
        assert!(check_host_syntax(&req(&[("Host", "[::1]:8931")])).is_ok());
        assert!(
            check_host_syntax(&req(&[("Host", "evil.example")])).is_ok(),
            "well-formed, refused later as not local"
        );
        for bad in [
            "",
            ":8931",
            "127.0.0.1:8931/x",
            "a b",
            "user@127.0.0.1",
            "127.0.0.1:port",
            "[::1",
        ] {
            let Err(e) = check_host_syntax(&req(&[("Host", bad)])) else {
                panic!("{bad:?} passed")
            };
            assert_eq!(e, Refusal::BadHost(bad.into()));
        }
        assert_eq!(check_host_syntax(&req(&[])), Err(Refusal::NoHost));
        let two = req(&[("Host", "localhost"), ("host", "localhost")]);
        assert!(
            check_host_syntax(&two)
                .unwrap_err()
                .to_string()
                .contains("2 Host headers")
        );
        let two = req(&[
            ("Host", "localhost"),
            ("Origin", "http://localhost"),
            ("origin", "http://x"),
        ]);
        assert_eq!(
            check_host_syntax(&two),
            Err(Refusal::Repeated {
                name: "Origin",
                count: 2
            })
        );
    }
}
