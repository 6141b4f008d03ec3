//! Reading a request: its head parsed by `httparse`, let in by the
//! [`Gate`] before any of the body is read, the body framed by length or
//! chunks (RFC 9112 §6) with limits on every part, each under a timeout.

use crate::listen::chunked::{self, ChunkError, Piece};
use crate::listen::conn::{Conn, READ_SIZE};
use crate::listen::gate::{Gate, Refusal};
use crate::listen::slots::Slot;
use httparse::Status;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::time::{Instant, timeout};

/// Requests larger than this are refused (413): MCP messages are far smaller.
pub(crate) const MAX_REQUEST_BODY: usize = 64 * 1024 * 1024;
/// Request line and headers larger than this are refused (431).
pub(crate) const MAX_HEAD: usize = 64 * 1024;
/// More header fields than this is a 431.
const MAX_HEADERS: usize = 100;

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

#[cfg(test)]
impl Request {
    /// A POST to `/mcp` with these headers and no body.
    pub(crate) fn with_headers(headers: &[(&str, &str)]) -> Self {
        Request {
            method: "POST".into(),
            target: "/mcp".into(),
            http10: false,
            headers: headers.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect(),
            body: vec![],
        }
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

/// Reads a request head from a blocking stream whose reads time out after
/// `within` (a listener with a thread per connection, as the sign-in's
/// redirect one): the parser and limits of [`read_request`], up to
/// `max_head` bytes, and no body.
pub(crate) fn read_head_blocking(
    stream: &mut impl std::io::Read,
    max_head: usize,
    within: Duration,
) -> Result<Request, Stop> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        if let Some((_, req)) = parse_head(&buf)? {
            return Ok(req);
        }
        if buf.len() >= max_head {
            return Err(bad(431, format!("a request head over {} KiB", max_head / 1024)));
        }
        match stream.read(&mut chunk) {
            Ok(0) => return Err(bad(400, "the connection closed before a whole request")),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) => {
                return Err(bad(
                    408,
                    format!("no whole request within {} s ({e})", within.as_secs()),
                ));
            }
        }
    }
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

/// Reads a chunked body ([`chunked`]), refusing one whose chunk sizes take
/// it past [`MAX_REQUEST_BODY`] as soon as such a size is read.
pub(crate) async fn read_chunked<S>(conn: &mut Conn<S>, stall: Duration) -> Result<Vec<u8>, Stop>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let mut body = Vec::new();
    // Decoded up to here in `conn.buf`.
    let mut pos = 0;
    loop {
        match chunked::next_piece(&conn.buf, pos, MAX_REQUEST_BODY - body.len()) {
            Ok(Piece::NeedMore(what)) => conn.more(Instant::now() + stall, Some(what)).await?,
            Ok(Piece::Chunk { data, next }) => {
                body.extend_from_slice(&conn.buf[data]);
                pos = next;
                // Now and then, not after every chunk: each drain moves what follows.
                if pos >= READ_SIZE {
                    conn.buf.drain(..pos);
                    pos = 0;
                }
            }
            Ok(Piece::End { next }) => {
                conn.buf.drain(..next);
                return Ok(body);
            }
            Err(ChunkError::TooLarge { size }) => {
                return Err(bad(
                    400,
                    format!("chunk size {size:#x} takes the body past the {MAX_REQUEST_BODY} byte limit"),
                ));
            }
            Err(ChunkError::Malformed(status, why)) => return Err(bad(status, why)),
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::listen::slots::Slots;
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::sync::Notify;

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
        let mut long = vec![b'0'; chunked::MAX_CHUNK_LINE + 10];
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
        Request::with_headers(headers)
    }
}
