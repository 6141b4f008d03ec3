//! POSTs made inline (on the session's own thread) over plain HTTP/1.1,
//! without ureq's general machinery.
//!
//! On loopback, what `mcpscope test` pays per step beyond what `load` pays
//! is the client's own work, and ureq's was a fifth of it: a request built
//! through `http` and a per-request config, a pool and a resolver, socket
//! timeouts set again for every phase, and a probe of three system calls
//! each time a connection goes back to the pool and again when it comes
//! out. Here a request is one buffer and one write, timeouts are set once
//! per connection, and a kept connection is probed once, by a single peek,
//! when it is reused. The answer is the same `http::Response<ureq::Body>`
//! ureq gives, so all that follows (the body read, the judgement, the
//! record) is shared.
//!
//! Anything it would have to rule on goes to ureq instead, before a byte is
//! sent: https, a proxy, credentials in the URL, a header that is not valid
//! or that governs the connection or the framing, a head larger than ureq
//! sends.

mod body;
#[cfg(test)]
mod tests;

use super::exchange::{Response, SENDABLE_HEAD};
use body::{Framing, StreamedBody};
use std::io::{self, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};
use ureq::http;

/// The largest response head read (ureq's own limit).
const MAX_HEAD: usize = 64 * 1024;
/// The most header fields a response head may have.
const MAX_HEADERS: usize = 128;
/// How much one read asks for.
const READ_SIZE: usize = 8 * 1024;
/// A read waits this long at most before it looks at its deadline and at
/// [`PlainClient::shutdown`] again: shutting a socket down ends a read
/// blocked on it on Linux and macOS, but not on every system (not under
/// Wine), so the flag is what every system sees.
const POLL: Duration = Duration::from_millis(100);

/// Request headers that govern the connection or the body's framing: a
/// request naming one goes through ureq, which rules on it.
const GOVERNING: [&str; 7] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "expect",
    "te",
    "upgrade",
];

/// The client of one session: at most one kept-alive connection, and the
/// sockets in use, so that [`PlainClient::shutdown`] can end a POST that
/// waits on one.
#[derive(Clone, Default)]
pub(super) struct PlainClient {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    idle: Mutex<Option<Conn>>,
    live: Mutex<Vec<Weak<TcpStream>>>,
    shut: Arc<AtomicBool>,
    /// The last URL posted to, as parsed (a session posts to one URL).
    last: Mutex<Option<(String, Arc<Origin>)>>,
    /// The read buffer, kept from one exchange to the next.
    scratch: Mutex<ReadBuf>,
}

/// Bytes read from a connection, `data[..filled]`; the rest is zeroed room.
/// Kept between exchanges: a buffer allocated and zeroed for each request
/// was a visible part of one.
#[derive(Default)]
struct ReadBuf {
    data: Vec<u8>,
    filled: usize,
}

/// A read buffer larger than this is not kept for the next exchange.
const KEPT_BUF: usize = 256 * 1024;

impl ReadBuf {
    fn bytes(&self) -> &[u8] {
        &self.data[..self.filled]
    }

    /// Drops the first `n` bytes.
    fn consume(&mut self, n: usize) {
        self.data.copy_within(n..self.filled, 0);
        self.filled -= n;
    }

    /// Reads once more from `stream`; the bytes read (0: the end).
    fn fill(
        &mut self,
        stream: &TcpStream,
        deadline: Instant,
        phase: ureq::Timeout,
        shut: &AtomicBool,
    ) -> Result<usize, ureq::Error> {
        if self.data.len() - self.filled < READ_SIZE {
            self.data.resize(self.filled + READ_SIZE, 0);
        }
        let n = read_polling(stream, &mut self.data[self.filled..], shut, || {
            (Instant::now() >= deadline).then_some(ureq::Error::Timeout(phase))
        })?;
        self.filled += n;
        Ok(n)
    }
}

/// Where a URL's requests go.
struct Origin {
    /// `host:port`: which kept connection may carry them.
    key: String,
    /// For the resolver: a name, or an address without brackets.
    host: String,
    port: u16,
    /// The Host header, as ureq writes it (the port when not 80).
    host_header: String,
    /// The request target: path and query.
    target: String,
}

struct Conn {
    stream: Arc<TcpStream>,
    key: String,
    /// The write timeout the socket has (reads wait [`POLL`] at a time).
    timeout: Option<Duration>,
}

/// The bytes ureq says did not parse as HTTP, here: an `InvalidData` I/O
/// error, which `describe_error` words as such.
pub(super) fn not_http(why: impl Into<String>) -> ureq::Error {
    ureq::Error::Io(io::Error::new(io::ErrorKind::InvalidData, why.into()))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl PlainClient {
    /// POSTs `body` to `url` and waits for the answer's head (and a whole
    /// body of at most `max_held` bytes whose length was said). Each phase
    /// (connect, send, answer head, body) has `timeout`, connecting
    /// `connect_timeout` at most. `None`: not a request for this client
    /// (nothing was sent); ureq makes it.
    pub(super) fn post(
        &self,
        url: &str,
        headers: &[(String, String)],
        body: &[u8],
        timeout: Duration,
        connect_timeout: Duration,
        max_held: usize,
    ) -> Option<Result<Response, ureq::Error>> {
        let origin = self.origin(url)?;
        let mut request = request_head(&origin, headers, body.len())?;
        request.extend_from_slice(body);
        Some(self.exchange(&origin, &request, timeout, connect_timeout, max_held))
    }

    /// Ends every exchange under way (a read waiting on a socket returns)
    /// and closes the kept connection; later POSTs fail at once.
    pub(super) fn shutdown(&self) {
        self.shared.shut.store(true, Ordering::SeqCst);
        lock(&self.shared.idle).take();
        for stream in lock(&self.shared.live).drain(..) {
            if let Some(s) = stream.upgrade() {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
    }

    /// `url` parsed, when this client may POST to it.
    fn origin(&self, url: &str) -> Option<Arc<Origin>> {
        let mut last = lock(&self.shared.last);
        if let Some((u, o)) = &*last
            && u == url
        {
            return Some(o.clone());
        }
        let u = url::Url::parse(url).ok()?;
        if u.scheme() != "http" || !u.username().is_empty() || u.password().is_some() {
            return None;
        }
        let host = match u.host()? {
            url::Host::Domain(d) => d.to_owned(),
            url::Host::Ipv4(a) => a.to_string(),
            url::Host::Ipv6(a) => a.to_string(),
        };
        let port = u.port_or_known_default()?;
        let shown_host = u.host_str()?;
        let host_header = match u.port() {
            Some(p) => format!("{shown_host}:{p}"),
            None => shown_host.to_owned(),
        };
        let target = match u.query() {
            Some(q) => format!("{}?{q}", u.path()),
            None => u.path().to_owned(),
        };
        let origin = Arc::new(Origin {
            key: format!("{shown_host}:{port}"),
            host,
            port,
            host_header,
            target,
        });
        *last = Some((url.to_owned(), origin.clone()));
        Some(origin)
    }

    fn exchange(
        &self,
        origin: &Origin,
        request: &[u8],
        timeout: Duration,
        connect_timeout: Duration,
        max_held: usize,
    ) -> Result<Response, ureq::Error> {
        let mut conn = self.checkout(origin, connect_timeout.min(timeout))?;
        if conn.timeout.is_none() {
            conn.stream.set_read_timeout(Some(POLL))?;
        }
        if conn.timeout != Some(timeout) {
            conn.stream.set_write_timeout(Some(timeout))?;
            conn.timeout = Some(timeout);
        }
        (&*conn.stream)
            .write_all(request)
            .map_err(|e| timed_out(e, ureq::Timeout::SendRequest))?;
        let mut buf = std::mem::take(&mut *lock(&self.shared.scratch));
        buf.filled = 0;
        let shut = &self.shared.shut;
        let head = read_head(&conn.stream, &mut buf, Instant::now() + timeout, shut)?;
        let mut keep = head.keep_alive;
        let body = match head.framing {
            Framing::Length(n) if n <= max_held as u64 => {
                let deadline = Instant::now() + timeout;
                let mut failed = None;
                while ((buf.filled - head.len) as u64) < n {
                    match buf.fill(&conn.stream, deadline, ureq::Timeout::RecvBody, shut) {
                        Ok(0) => {
                            failed = Some(io::Error::new(
                                io::ErrorKind::UnexpectedEof,
                                format!(
                                    "the server closed the connection {} bytes into a body of {n} (its Content-Length)",
                                    buf.filled - head.len
                                ),
                            ));
                            break;
                        }
                        Ok(_) => {}
                        Err(e) => {
                            failed = Some(io::Error::other(e.to_string()));
                            break;
                        }
                    }
                }
                let came = &buf.bytes()[head.len..];
                // Bytes past the body: the connection's framing is lost.
                keep &= came.len() as u64 == n;
                match failed {
                    None => ureq::Body::builder().data(&came[..n as usize]),
                    Some(e) => {
                        keep = false;
                        ureq::Body::builder().reader(body::Failing::new(came.to_vec(), e))
                    }
                }
            }
            framing => {
                keep = false;
                let stream = conn.stream.clone();
                let came = buf.bytes()[head.len..].to_vec();
                let shut = self.shared.shut.clone();
                ureq::Body::builder().reader(StreamedBody::new(stream, came, framing, timeout, shut))
            }
        };
        if buf.data.len() <= KEPT_BUF {
            *lock(&self.shared.scratch) = buf;
        }
        if keep {
            *lock(&self.shared.idle) = Some(conn);
        }
        let mut response = http::Response::builder().status(head.status).version(head.version);
        if let Some(h) = response.headers_mut() {
            *h = head.headers;
        }
        response.body(body).map_err(ureq::Error::Http)
    }

    /// The kept connection to this origin if the server left it open and
    /// quiet, or a new one.
    fn checkout(&self, origin: &Origin, connect_timeout: Duration) -> Result<Conn, ureq::Error> {
        if self.shared.shut.load(Ordering::SeqCst) {
            return Err(ending().into());
        }
        if let Some(conn) = lock(&self.shared.idle).take()
            && conn.key == origin.key
            && crate::platform::net::idle_and_open(&conn.stream)
        {
            return Ok(conn);
        }
        let addrs: Vec<_> = (origin.host.as_str(), origin.port)
            .to_socket_addrs()
            .map_err(|_| ureq::Error::HostNotFound)?
            .collect();
        let mut last = None;
        let mut connected = None;
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, connect_timeout) {
                Ok(s) => {
                    connected = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let stream = match (connected, last) {
            (Some(s), _) => s,
            (None, Some(e)) => return Err(timed_out(e, ureq::Timeout::Connect)),
            (None, None) => return Err(ureq::Error::HostNotFound),
        };
        stream.set_nodelay(true)?;
        let stream = Arc::new(stream);
        {
            let mut live = lock(&self.shared.live);
            live.retain(|s| s.strong_count() > 0);
            live.push(Arc::downgrade(&stream));
        }
        // A shutdown between the first look and the registration missed it.
        if self.shared.shut.load(Ordering::SeqCst) {
            let _ = stream.shutdown(Shutdown::Both);
            return Err(ending().into());
        }
        Ok(Conn {
            stream,
            key: origin.key.clone(),
            timeout: None,
        })
    }
}

/// The request line and headers: the caller's, then what ureq adds (Host,
/// User-Agent and Accept unless given, Content-Length), names in lower
/// case as ureq writes them. `None` when ureq should make the request.
fn request_head(origin: &Origin, headers: &[(String, String)], body_len: usize) -> Option<Vec<u8>> {
    let given: usize = headers.iter().map(|(k, v)| k.len() + v.len() + 4).sum();
    let mut out = Vec::with_capacity(given + origin.target.len() + origin.host_header.len() + 128 + body_len);
    out.extend_from_slice(b"POST ");
    out.extend_from_slice(origin.target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\nhost: ");
    out.extend_from_slice(origin.host_header.as_bytes());
    out.extend_from_slice(b"\r\n");
    let (mut agent, mut accept) = (false, false);
    for (k, v) in headers {
        if !is_token(k) || !is_field_value(v) || GOVERNING.iter().any(|g| k.eq_ignore_ascii_case(g)) {
            return None;
        }
        agent |= k.eq_ignore_ascii_case("user-agent");
        accept |= k.eq_ignore_ascii_case("accept");
        out.extend(k.bytes().map(|b| b.to_ascii_lowercase()));
        out.extend_from_slice(b": ");
        out.extend_from_slice(v.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if !agent {
        out.extend_from_slice(concat!("user-agent: mcpscope/", env!("CARGO_PKG_VERSION"), "\r\n").as_bytes());
    }
    if !accept {
        out.extend_from_slice(b"accept: */*\r\n");
    }
    out.extend_from_slice(format!("content-length: {body_len}\r\n\r\n").as_bytes());
    (out.len() <= SENDABLE_HEAD).then_some(out)
}

/// RFC 9110 §5.6.2.
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// What `http::HeaderValue` accepts: no control characters but tab.
fn is_field_value(s: &str) -> bool {
    s.bytes().all(|b| b == b'\t' || (b >= 0x20 && b != 0x7f))
}

fn ending() -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionAborted, "the session is ending")
}

/// One read from a socket whose reads wait [`POLL`] at a time: between
/// waits, a shutdown ends it, and so does `expired` when it says why.
fn read_polling<E: From<io::Error>>(
    mut stream: &TcpStream,
    out: &mut [u8],
    shut: &AtomicBool,
    expired: impl Fn() -> Option<E>,
) -> Result<usize, E> {
    loop {
        if shut.load(Ordering::SeqCst) {
            return Err(ending().into());
        }
        match io::Read::read(&mut stream, out) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                if let Some(e) = expired() {
                    return Err(e);
                }
            }
            other => return Ok(other?),
        }
    }
}

/// A read or write that ran out of time is the phase's timeout.
fn timed_out(e: io::Error, phase: ureq::Timeout) -> ureq::Error {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => ureq::Error::Timeout(phase),
        _ => ureq::Error::Io(e),
    }
}

/// An answer's head, parsed.
struct Head {
    /// Its length in the buffer.
    len: usize,
    status: u16,
    version: http::Version,
    headers: http::HeaderMap,
    framing: Framing,
    keep_alive: bool,
}

/// Reads until a final answer's head is whole (interim 1xx answers are
/// passed over, as ureq does) and parses it.
fn read_head(stream: &TcpStream, buf: &mut ReadBuf, deadline: Instant, shut: &AtomicBool) -> Result<Head, ureq::Error> {
    loop {
        if buf.filled > 0 {
            let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut parsed = httparse::Response::new(&mut fields);
            match parsed.parse(buf.bytes()) {
                Ok(httparse::Status::Complete(len)) if len > MAX_HEAD => {}
                Ok(httparse::Status::Complete(len)) => {
                    let status = parsed.code.unwrap_or_default();
                    if !(100..200).contains(&status) || status == 101 {
                        return head(&parsed, &buf.bytes()[..len]);
                    }
                    buf.consume(len);
                    continue;
                }
                Ok(httparse::Status::Partial) => {}
                Err(httparse::Error::TooManyHeaders) => {
                    return Err(not_http(format!(
                        "a response head with more than {MAX_HEADERS} header fields"
                    )));
                }
                Err(e) => return Err(not_http(format!("a response head that does not parse ({e})"))),
            }
        }
        if buf.filled > MAX_HEAD {
            // (ureq's limit too: a head is not a place for data.)
            return Err(not_http(format!("a response head longer than {} KiB", MAX_HEAD / 1024)));
        }
        if buf.fill(stream, deadline, ureq::Timeout::RecvResponse, shut)? == 0 {
            return Err(if buf.filled == 0 {
                ureq::Error::Io(io::Error::new(io::ErrorKind::UnexpectedEof, "no response"))
            } else {
                not_http("the connection closed inside the response head")
            });
        }
    }
}

/// The head `parsed` from `raw` (its bytes, which its fields point into).
fn head(parsed: &httparse::Response, raw: &[u8]) -> Result<Head, ureq::Error> {
    let len = raw.len();
    // The values share one copy of the head rather than one copy each.
    let shared = bytes::Bytes::copy_from_slice(raw);
    let status = parsed.code.unwrap_or_default();
    if status == 101 {
        return Err(not_http("101 Switching Protocols, to a POST that asked for no upgrade"));
    }
    let version = match parsed.version {
        Some(0) => http::Version::HTTP_10,
        _ => http::Version::HTTP_11,
    };
    let mut headers = http::HeaderMap::with_capacity(parsed.headers.len());
    let (mut chunked_last, mut transfer_coded, mut close) = (false, false, version == http::Version::HTTP_10);
    let mut length: Option<u64> = None;
    for field in parsed.headers.iter() {
        let name = http::HeaderName::from_bytes(field.name.as_bytes())
            .map_err(|_| not_http(format!("a header name that is not valid: {:?}", field.name)))?;
        let at = field.value.as_ptr() as usize - raw.as_ptr() as usize;
        let value = http::HeaderValue::from_maybe_shared(shared.slice(at..at + field.value.len()))
            .map_err(|_| not_http(format!("the {name} header's value is not valid")))?;
        let text = String::from_utf8_lossy(field.value);
        if name == http::header::TRANSFER_ENCODING {
            transfer_coded = true;
            // The last coding decides: only a chunked one ends in-band.
            if let Some(last) = text.split(',').map(str::trim).rfind(|c| !c.is_empty()) {
                chunked_last = last.eq_ignore_ascii_case("chunked");
            }
        } else if name == http::header::CONTENT_LENGTH {
            for part in text.split(',').map(str::trim) {
                let n: u64 = part
                    .parse()
                    .map_err(|_| not_http(format!("a Content-Length that is not a number: {part:?}")))?;
                if length.is_some_and(|l| l != n) {
                    return Err(not_http("two different Content-Length values"));
                }
                length = Some(n);
            }
        } else if name == http::header::CONNECTION {
            if text.split(',').any(|t| t.trim().eq_ignore_ascii_case("close")) {
                close = true;
            } else if text.split(',').any(|t| t.trim().eq_ignore_ascii_case("keep-alive")) {
                close = false;
            }
        }
        headers.append(name, value);
    }
    let framing = match (status, transfer_coded, length) {
        (204 | 304, _, _) => Framing::Length(0),
        (_, true, _) if chunked_last => Framing::Chunked,
        (_, true, _) => Framing::UntilClose,
        (_, false, Some(n)) => Framing::Length(n),
        (_, false, None) => Framing::UntilClose,
    };
    Ok(Head {
        len,
        status,
        version,
        headers,
        keep_alive: !close && framing != Framing::UntilClose && !(transfer_coded && length.is_some()),
        framing,
    })
}
