//! Hostile clients of the reverse proxy (`mcpscope proxy --listen`):
//! malformed and mutated requests, slow clients, one very large SSE event.

use super::*;

// ---------------------------------------------------------------------------
// #26: hostile clients of the reverse proxy (`mcpscope proxy --listen`).

/// A local upstream that answers every request 200 and writes down each
/// request line before answering, so whatever the proxy forwarded is seen.
struct RevUpstream {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl RevUpstream {
    fn start() -> RevUpstream {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen: Arc<Mutex<Vec<String>>> = Default::default();
        let s = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let s = s.clone();
                std::thread::spawn(move || {
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                    let mut out = stream.try_clone().unwrap();
                    let mut r = BufReader::new(stream);
                    let mut first = String::new();
                    if r.read_line(&mut first).unwrap_or(0) == 0 {
                        return;
                    }
                    let mut len = 0usize;
                    loop {
                        let mut l = String::new();
                        if r.read_line(&mut l).unwrap_or(0) == 0 || l.trim().is_empty() {
                            break;
                        }
                        if let Some((k, v)) = l.split_once(':')
                            && k.eq_ignore_ascii_case("content-length")
                        {
                            len = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; len];
                    let _ = r.read_exact(&mut body);
                    s.lock().unwrap().push(first.trim().to_owned());
                    let answer = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
                    let _ = write!(
                        out,
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        answer.len()
                    );
                    let _ = out.write_all(answer);
                });
            }
        });
        RevUpstream { port, seen }
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

/// The reverse proxy in front of an upstream, stopped when dropped.
struct RevProxy {
    port: u16,
    stopper: mcpscope_core::proxy::reverse::Stopper,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RevProxy {
    fn start(upstream: &RevUpstream) -> RevProxy {
        use mcpscope_core::proxy::reverse::{ReverseProxy, ReverseProxyOptions};
        let options =
            ReverseProxyOptions::new("127.0.0.1:0", &format!("http://127.0.0.1:{}/mcp", upstream.port)).unwrap();
        let proxy = ReverseProxy::bind(options).unwrap();
        let port = proxy.local_addr().port();
        let stopper = proxy.stopper();
        let thread = std::thread::spawn(move || {
            proxy.serve(|| "the test ended".into());
        });
        RevProxy {
            port,
            stopper,
            thread: Some(thread),
        }
    }

    /// Sends raw bytes on a fresh connection and reads the answer to its end.
    fn raw(&self, request: &str) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let _ = s.write_all(request.as_bytes());
        let mut answer = Vec::new();
        let _ = s.read_to_end(&mut answer);
        text(&answer)
    }

    fn normal_request(&self, path: &str) -> String {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        self.raw(&format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nConnection: close\r\n\r\n{body}",
            self.port,
            body.len()
        ))
    }
}

impl Drop for RevProxy {
    fn drop(&mut self) {
        self.stopper.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn a_chunk_size_that_overflows_gets_400_and_never_uses_up_the_reverse_proxy() {
    let upstream = RevUpstream::start();
    let proxy = RevProxy::start(&upstream);
    // More requests than the proxy has connection slots (64): a connection
    // thread that panicked kept its slot, and later clients got 503.
    for i in 0..100 {
        let answer = proxy.raw(&format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n1\r\nA\r\nffffffffffffffff\r\n",
            proxy.port
        ));
        assert!(answer.starts_with("HTTP/1.1 400 "), "request {i}: {answer:?}");
        assert!(answer.contains("chunk size"), "request {i}: {answer:?}");
    }
    let answer = proxy.normal_request("/after");
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer:?}");
    assert_eq!(
        upstream.seen(),
        ["POST /after HTTP/1.1"],
        "only the normal request is forwarded"
    );
}

#[test]
fn two_host_or_two_origin_headers_get_400_and_never_reach_the_upstream() {
    let upstream = RevUpstream::start();
    let proxy = RevProxy::start(&upstream);
    let local = format!("127.0.0.1:{}", proxy.port);
    let cases = [
        format!("Host: {local}\r\nHost: evil.example\r\n"),
        format!("Host: evil.example\r\nHost: {local}\r\n"),
        format!("Host: {local}\r\nhost: {local}\r\n"),
        format!("Host: {local}\r\nOrigin: http://{local}\r\nOrigin: https://evil.example\r\n"),
        format!("Host: {local}\r\nOrigin: https://evil.example\r\nOrigin: http://{local}\r\n"),
    ];
    for headers in &cases {
        let answer = proxy.raw(&format!(
            "POST /dup HTTP/1.1\r\n{headers}content-type: application/json\r\ncontent-length: 2\r\nConnection: close\r\n\r\n{{}}"
        ));
        assert!(answer.starts_with("HTTP/1.1 400 "), "{headers:?}: {answer:?}");
    }
    // The upstream is observed: a normal request does reach it, and nothing before it did.
    let answer = proxy.normal_request("/ok");
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer:?}");
    assert_eq!(upstream.seen(), ["POST /ok HTTP/1.1"]);
}

// ---------------------------------------------------------------------------
// Hostile peers items 6, 10a and 11: the reverse proxy's listener under
// mutated request bytes, slow clients, and one very large SSE event.

/// A reverse proxy in front of `upstream` with `options` changed by `tune`,
/// and the count of its open connections; stopped when dropped.
struct TunedRevProxy {
    port: u16,
    connections: mcpscope_core::proxy::reverse::Connections,
    stopper: mcpscope_core::proxy::reverse::Stopper,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TunedRevProxy {
    fn start(upstream_port: u16, tune: impl FnOnce(&mut mcpscope_core::proxy::reverse::ReverseProxyOptions)) -> Self {
        use mcpscope_core::proxy::reverse::{ReverseProxy, ReverseProxyOptions};
        let mut options =
            ReverseProxyOptions::new("127.0.0.1:0", &format!("http://127.0.0.1:{upstream_port}/mcp")).unwrap();
        tune(&mut options);
        let proxy = ReverseProxy::bind(options).unwrap();
        let port = proxy.local_addr().port();
        let stopper = proxy.stopper();
        let connections = proxy.connections();
        let thread = std::thread::spawn(move || {
            proxy.serve(|| "the test ended".into());
        });
        Self {
            port,
            connections,
            stopper,
            thread: Some(thread),
        }
    }

    /// Waits (generously) for every client connection to be given back.
    fn assert_no_connection_left(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.connections.open() > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(self.connections.open(), 0, "connection slots still taken");
    }
}

impl Drop for TunedRevProxy {
    fn drop(&mut self) {
        self.stopper.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// xorshift64*: the same cases on every run, from a printed seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// A well-formed request (sometimes chunked, sometimes kept alive), then one
/// to four mutations of the kinds a hostile client sends.
fn hostile_request(rng: &mut Rng, port: u16) -> Vec<u8> {
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let connection = if rng.below(4) == 0 { "" } else { "Connection: close\r\n" };
    let chunked = rng.below(2) == 0;
    let mut r =
        format!("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n{connection}")
            .into_bytes();
    if chunked {
        r.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
        for part in body.chunks(1 + rng.below(body.len())) {
            r.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
            r.extend_from_slice(part);
            r.extend_from_slice(b"\r\n");
        }
        r.extend_from_slice(b"0\r\n\r\n");
    } else {
        r.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
        r.extend_from_slice(body);
    }
    let insert = |r: &mut Vec<u8>, at: usize, bytes: &[u8]| {
        let at = at.min(r.len());
        r.splice(at..at, bytes.iter().copied());
    };
    let head_end = |r: &[u8]| r.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(r.len());
    for _ in 0..1 + rng.below(4) {
        let len = r.len();
        match rng.below(12) {
            0 => r.truncate(rng.below(len)),
            1 => {
                let b = *rng.pick(&[0u8, b'\r', b'\n', b' ', b':', b'\t', 0x7f, 0x80, 0xff, b';', b'0']);
                let at = rng.below(len + 1);
                insert(&mut r, at, &[b]);
            }
            2 if len > 0 => {
                let at = rng.below(len);
                r[at] = (rng.next() & 0xff) as u8;
            }
            3 if len > 0 => {
                let at = rng.below(len);
                let n = 1 + rng.below(16);
                r.drain(at..(at + n).min(len));
            }
            4 => {
                let size = *rng.pick(&[
                    "ffffffffffffffff",
                    "10000000000000000",
                    "4000001",
                    "-1",
                    "0x10",
                    "",
                    "7fffffffffffffff;ext",
                ]);
                let at = head_end(&r) + 4;
                insert(&mut r, at, format!("{size}\r\nA\r\n").as_bytes());
            }
            5 => {
                let cl = *rng.pick(&[
                    "99999999999999999999",
                    "18446744073709551616",
                    "-1",
                    "1e3",
                    "67108865",
                    " 5",
                    "5, 6",
                    "4294967296",
                ]);
                let at = head_end(&r) + 2;
                insert(&mut r, at, format!("Content-Length: {cl}\r\n").as_bytes());
            }
            6 => {
                let line = rng
                    .pick(&[
                        format!("Host: 127.0.0.1:{port}\r\n"),
                        "Host: evil.example\r\n".into(),
                        "Origin: https://evil.example\r\n".into(),
                        "Transfer-Encoding: chunked\r\n".into(),
                        "Transfer-Encoding: gzip\r\n".into(),
                        "Expect: 100-continue\r\n".into(),
                        "X-Nul: a\0b\r\n".into(),
                        "Bad Name: x\r\n".into(),
                        ": empty\r\n".into(),
                    ])
                    .clone();
                let at = head_end(&r) + 2;
                insert(&mut r, at, line.as_bytes());
            }
            7 => {
                let garbage: Vec<u8> = (0..rng.below(200)).map(|_| (rng.next() & 0xff) as u8).collect();
                r.extend_from_slice(&garbage);
            }
            8 => {
                let again = r.clone();
                r.extend_from_slice(&again);
            }
            9 => {
                let n = *rng.pick(&[70 * 1024, 5000, 100]);
                let at = head_end(&r) + 2;
                insert(&mut r, at, format!("X-Long: {}\r\n", "v".repeat(n)).as_bytes());
            }
            10 => {
                let many: String = (0..150).map(|i| format!("X-{i}: 1\r\n")).collect();
                let at = head_end(&r) + 2;
                insert(&mut r, at, many.as_bytes());
            }
            _ => {
                let (from, to): (&[u8], &[u8]) =
                    *rng.pick(&[(&b"\r\n"[..], &b"\n"[..]), (b"\r\n", b"\r"), (b" ", b"  ")]);
                let text = String::from_utf8_lossy(&r).into_owned();
                if let (Ok(f), Ok(t)) = (std::str::from_utf8(from), std::str::from_utf8(to)) {
                    r = text.replacen(f, t, 1 + rng.below(4)).into_bytes();
                }
            }
        }
    }
    r
}

/// The status codes in an answer, after any `100 Continue`.
fn statuses(answer: &[u8]) -> Vec<u16> {
    let text = String::from_utf8_lossy(answer);
    text.match_indices("HTTP/1.1 ")
        .filter_map(|(i, _)| text.get(i + 9..i + 12)?.parse().ok())
        .filter(|s| *s != 100)
        .collect()
}

#[test]
fn hostile_request_bytes_get_a_4xx_or_are_forwarded_and_give_back_their_slot() {
    let upstream = RevUpstream::start();
    let proxy = TunedRevProxy::start(upstream.port, |_| {});
    let port = proxy.port;
    let seed: u64 = std::env::var("MCPSCOPE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_2026);
    const CASES: usize = 500;
    const WORKERS: usize = 8;
    let forwarded = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let forwarded = forwarded.clone();
            std::thread::spawn(move || {
                for case in (w..CASES).step_by(WORKERS) {
                    let mut rng = Rng(seed ^ (case as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                    let request = hostile_request(&mut rng, port);
                    let shown = String::from_utf8_lossy(&request[..request.len().min(600)]).into_owned();
                    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
                    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
                    let _ = s.write_all(&request);
                    // The end of the request: nothing waits for more of it.
                    let _ = s.shutdown(std::net::Shutdown::Write);
                    let mut answer = Vec::new();
                    let read = s.read_to_end(&mut answer);
                    assert!(
                        !matches!(&read, Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)),
                        "case {case} (seed {seed}) hung: {shown:?}"
                    );
                    let got = statuses(&answer);
                    let blank = request.iter().all(|b| matches!(b, b'\r' | b'\n'));
                    assert!(
                        !got.is_empty() || blank,
                        "case {case} (seed {seed}): no answer to {shown:?}: {:?}",
                        text(&answer)
                    );
                    for status in &got {
                        assert!(
                            *status == 200 || (400..500).contains(status) || *status == 501,
                            "case {case} (seed {seed}): {status} for {shown:?}: {:?}",
                            text(&answer)
                        );
                    }
                    let ok = got.iter().filter(|s| **s == 200).count();
                    forwarded.fetch_add(ok, std::sync::atomic::Ordering::SeqCst);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    // Each 200 was one request forwarded, and nothing refused reached the upstream.
    let ok = forwarded.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        ok > 0 && ok < CASES,
        "{ok} of {CASES} forwarded: the cases are not mixed"
    );
    assert_eq!(upstream.seen().len(), ok);
    proxy.assert_no_connection_left();
    let answer = {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        write!(
            s,
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut a = Vec::new();
        let _ = s.read_to_end(&mut a);
        text(&a)
    };
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer:?}");
}

#[test]
fn a_normal_client_is_served_while_100_slow_clients_hold_sockets() {
    let upstream = RevUpstream::start();
    let proxy = TunedRevProxy::start(upstream.port, |_| {});
    let port = proxy.port;
    const SLOW: usize = 100;
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (closed_tx, closed_rx) = std::sync::mpsc::channel();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    for _ in 0..SLOW {
        let (ready_tx, closed_tx, stop) = (ready_tx.clone(), closed_tx.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
            let head = format!("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: ");
            let _ = s.write_all(head.as_bytes());
            let _ = ready_tx.send(());
            // A header byte a second, for as long as the proxy keeps the connection.
            let started = Instant::now();
            let mut buf = [0u8; 256];
            let closed = loop {
                if stop.load(std::sync::atomic::Ordering::SeqCst) || started.elapsed() > Duration::from_secs(90) {
                    break false;
                }
                match s.read(&mut buf) {
                    Ok(_) => break true,
                    Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                    Err(_) => break true,
                }
                if s.write_all(b"x").is_err() {
                    break true;
                }
            };
            let _ = closed_tx.send(closed);
        });
    }
    for _ in 0..SLOW {
        ready_rx.recv_timeout(Duration::from_secs(60)).unwrap();
    }
    // Every slow client has a connection open now, past the proxy's 64 slots.
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        s,
        "POST /normal HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let answer = text(&answer);
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer:?}");
    assert_eq!(upstream.seen(), ["POST /normal HTTP/1.1"]);
    // And none of the slow ones is kept for good: each is closed (made room
    // for, or out of time for its headers) while it still sends.
    let closed: Vec<bool> = (0..SLOW)
        .map(|_| closed_rx.recv_timeout(Duration::from_secs(120)).unwrap())
        .collect();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(
        closed.iter().all(|c| *c),
        "{} slow clients kept their connection",
        closed.iter().filter(|c| !**c).count()
    );
    proxy.assert_no_connection_left();
}

#[test]
fn a_100_mb_sse_event_passes_through_the_reverse_proxy_whole() {
    let size: usize = std::env::var("MCPSCOPE_SSE_EVENT_BYTES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100 * 1024 * 1024);
    let mut stream = b"data: ".to_vec();
    stream.extend((0..size).map(|i| b"0123456789abcdef"[i % 16]));
    stream.extend_from_slice(b"\n\ndata: after\n\n");
    let stream = Arc::new(stream);
    let upstream = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let upstream_port = upstream.local_addr().unwrap().port();
    let sent = stream.clone();
    std::thread::spawn(move || {
        let Ok((mut s, _)) = upstream.accept() else { return };
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut line = String::new();
        while r.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
            line.clear();
        }
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n");
        let _ = s.write_all(&sent);
    });
    let proxy = TunedRevProxy::start(upstream_port, |_| {});
    let mut s = TcpStream::connect(("127.0.0.1", proxy.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(300))).unwrap();
    write!(
        s,
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAccept: text/event-stream\r\nConnection: close\r\n\r\n",
        proxy.port
    )
    .unwrap();
    let mut answer = Vec::with_capacity(size + 4096);
    let read = s.read_to_end(&mut answer);
    assert!(read.is_ok(), "{read:?} after {} bytes", answer.len());
    let head_end = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an answer head")
        + 4;
    let head = text(&answer[..head_end]);
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    assert!(
        head.to_ascii_lowercase().contains("transfer-encoding: chunked"),
        "{head}"
    );
    // Undo the chunked framing.
    let mut body = Vec::with_capacity(size + 64);
    let mut at = head_end;
    loop {
        let line_end = at
            + answer[at..]
                .windows(2)
                .position(|w| w == b"\r\n")
                .expect("a chunk size line");
        let n = usize::from_str_radix(std::str::from_utf8(&answer[at..line_end]).unwrap(), 16).unwrap();
        at = line_end + 2;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&answer[at..at + n]);
        at += n + 2;
    }
    assert_eq!(body.len(), stream.len());
    assert!(body == *stream, "the event's bytes differ");
    proxy.assert_no_connection_left();
}
