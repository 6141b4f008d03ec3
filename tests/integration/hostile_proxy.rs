//! Hostile peers, round three: the reverse proxy against a hostile upstream: endless and huge SSE events.
//! Each test fails without the fix it guards.

use crate::hostile::{HostileHttp, alive, text};
use crate::support::*;
use mcpscope_core::record::capture::{EventReader, Item};
use mcpscope_core::transport::event::Event;
use mcpscope_core::wire::classify::{Anomalies, Kind};
use mcpscope_core::wire::frame::Direction;
use mcpscope_core::wire::framing::LineEnding;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const MIB: u64 = 1024 * 1024;

/// `mcpscope proxy --listen 127.0.0.1:0 --upstream …` as a process, with a
/// watchdog on its memory: past `ceiling` it is killed at once, so a proxy
/// that holds what it relays fails the test instead of the machine.
struct ProxyProcess {
    child: Child,
    port: u16,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// The most it held (VmHWM, KiB).
    peak_kib: Arc<AtomicU64>,
    killed_at_ceiling: Arc<AtomicBool>,
    stop_watch: Arc<AtomicBool>,
}

impl ProxyProcess {
    fn start(upstream_port: u16, extra: &[&str], ceiling: u64) -> Self {
        let upstream = format!("http://127.0.0.1:{upstream_port}/mcp");
        let mut child = crate::support::mcpscope_command()
            .args(["proxy", "--listen", "127.0.0.1:0", "--upstream", &upstream])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("running mcpscope");
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let addr = listening_addr(&mut err);
        let port = addr.rsplit(':').next().and_then(|p| p.parse().ok()).expect("a port");
        let stderr: Arc<Mutex<Vec<u8>>> = Default::default();
        let e = stderr.clone();
        std::thread::spawn(move || {
            let mut buf = [0; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    return;
                }
                e.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        let peak_kib = Arc::new(AtomicU64::new(0));
        let killed_at_ceiling = Arc::new(AtomicBool::new(false));
        let stop_watch = Arc::new(AtomicBool::new(false));
        let (pid, peak, killed, stop) = (
            child.id() as i32,
            peak_kib.clone(),
            killed_at_ceiling.clone(),
            stop_watch.clone(),
        );
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                let Some(kib) = hwm_kib(pid) else { return };
                peak.fetch_max(kib, Ordering::SeqCst);
                if kib * 1024 > ceiling {
                    killed.store(true, Ordering::SeqCst);
                    // SAFETY: a plain kill of the test's own child.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                    return;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        Self {
            child,
            port,
            stderr,
            peak_kib,
            killed_at_ceiling,
            stop_watch,
        }
    }

    fn peak_bytes(&self) -> u64 {
        let now = hwm_kib(self.child.id() as i32).unwrap_or(0);
        self.peak_kib.fetch_max(now, Ordering::SeqCst).max(now) * 1024
    }

    fn stderr(&self) -> String {
        text(&self.stderr.lock().unwrap())
    }

    /// SIGTERM, then its exit status (killed if it does not end within 10 s).
    fn stop(&mut self) -> ExitStatus {
        self.stop_watch.store(true, Ordering::SeqCst);
        // SAFETY: a plain signal to the test's own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the proxy did not stop within 10 s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for ProxyProcess {
    fn drop(&mut self) {
        self.stop_watch.store(true, Ordering::SeqCst);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// VmHWM of a process, in KiB (None once it is gone).
fn hwm_kib(pid: i32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// POSTs a JSON-RPC message through the proxy; the answer's head (lowercase)
/// and the connection, positioned at its body.
fn post(port: u16, body: &str, read_timeout: Duration) -> (String, BufReader<TcpStream>) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(read_timeout)).unwrap();
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut r = BufReader::new(s);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        head.push_str(&line.to_ascii_lowercase());
    }
    (head, r)
}

/// Reads a chunked body to its last chunk, handing each piece to `seen`.
/// Err says how it broke off (the connection closed without the last chunk…).
fn read_chunked(r: &mut impl BufRead, mut seen: impl FnMut(&[u8])) -> Result<(), String> {
    let mut buf = vec![0; 256 * 1024];
    loop {
        let mut size = String::new();
        match r.read_line(&mut size) {
            Ok(0) => return Err("the connection closed without the last chunk".into()),
            Ok(_) => {}
            Err(e) => return Err(format!("reading a chunk size: {e}")),
        }
        let mut left = usize::from_str_radix(size.trim(), 16).map_err(|e| format!("chunk size {size:?}: {e}"))?;
        if left == 0 {
            return Ok(());
        }
        while left > 0 {
            let want = left.min(buf.len());
            r.read_exact(&mut buf[..want])
                .map_err(|e| format!("reading a chunk: {e}"))?;
            seen(&buf[..want]);
            left -= want;
        }
        let mut crlf = [0; 2];
        r.read_exact(&mut crlf).map_err(|e| format!("after a chunk: {e}"))?;
    }
}

/// A normal exchange through the proxy still works (it is alive and serving).
fn assert_serves_initialize(port: u16) {
    let (head, mut r) = post(
        port,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        Duration::from_secs(10),
    );
    assert!(head.starts_with("http/1.1 200 "), "{head}");
    let mut body = Vec::new();
    if head.contains("transfer-encoding: chunked") {
        read_chunked(&mut r, |b| body.extend_from_slice(b)).unwrap();
    } else {
        r.read_to_end(&mut body).unwrap();
    }
    assert!(text(&body).contains("hostile-http"), "{}", text(&body));
}

// ---------------------------------------------------------------------------
// Item 1: an SSE event that never ends kills the proxy.

#[test]
fn an_endless_sse_event_from_the_upstream_passes_in_pieces_and_the_proxy_serves_on() {
    // Twice what the proxy may hold: a proxy that keeps the event is killed
    // at the ceiling long before the client has it all.
    const SENT: u64 = 1024 * MIB;
    const CEILING: u64 = 512 * MIB;
    let sent = SENT.to_string();
    // Without a gate, and with one (which judges whole events).
    let gated: &[&str] = &["--fault", r#"method == "never/sent" => drop"#];
    for extra in [&[][..], gated] {
        let upstream = HostileHttp::start(&["--mode", "sse-endless", "--on", "tools/list", "--bytes", &sent]);
        let mut proxy = ProxyProcess::start(upstream.port, extra, CEILING);
        let (head, mut r) = post(
            proxy.port,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
            Duration::from_secs(60),
        );
        assert!(head.starts_with("http/1.1 200 "), "{extra:?}: {head}");
        assert!(head.contains("text/event-stream"), "{head}");
        let xs = vec![b'x'; 256 * 1024];
        let mut stream = b"data: ".iter().copied();
        let mut got = 0u64;
        let mut same = true;
        let ended = read_chunked(&mut r, |mut piece| {
            got += piece.len() as u64;
            while let (Some(&b), Some(want)) = (piece.first(), stream.next()) {
                same &= b == want;
                piece = &piece[1..];
            }
            same &= *piece == xs[..piece.len()];
        });
        let peak = proxy.peak_bytes();
        assert!(
            !proxy.killed_at_ceiling.load(Ordering::SeqCst),
            "{extra:?}: the proxy held more than {} MiB (killed) after passing on {} MiB",
            CEILING / MIB,
            got / MIB
        );
        // The stream ended as the upstream's did: every byte, then the last chunk.
        assert_eq!(ended, Ok(()), "{extra:?}: after {got} bytes");
        assert_eq!(got, SENT + 6, "{extra:?}");
        assert!(same, "{extra:?}: the bytes differ");
        eprintln!("{extra:?}: {} MiB passed on, proxy peak {} MiB", got / MIB, peak / MIB);
        assert!(peak < CEILING, "{extra:?}: peak {} MiB", peak / MIB);
        // Alive, and serving other exchanges.
        assert!(alive(proxy.child.id() as i32), "{extra:?}: {}", proxy.stderr());
        assert_serves_initialize(proxy.port);
        let status = proxy.stop();
        let err = proxy.stderr();
        // Stopped by the test's SIGTERM, as documented: 128 + 15.
        assert_eq!(status.code(), Some(143), "{extra:?}: {err}");
        assert!(!err.contains("memory allocation"), "{err}");
    }
}

// ---------------------------------------------------------------------------
// Item 13: one large SSE event costs the proxy at most twice its size.

/// An SSE stream: one event holding a JSON-RPC answer of `size` bytes
/// (`{…"text":"0123…"}]}}`), then a notification, then `tail` (an event
/// the stream may end in the middle of). Also where the answer lies in it.
fn big_stream(size: usize, tail: &[u8]) -> (Vec<u8>, std::ops::Range<usize>) {
    let head = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":""#;
    let end = br#""}]}}"#;
    let mut s = b"event: message\r\ndata: ".to_vec();
    let start = s.len();
    s.extend_from_slice(head);
    let filler = size - head.len() - end.len();
    s.extend_from_slice(&b"0123456789abcdef".repeat(filler / 16 + 1)[..filler]);
    s.extend_from_slice(end);
    let answer = start..s.len();
    s.extend_from_slice(
        b"\r\n\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"after\"}}\r\n\r\n",
    );
    s.extend_from_slice(tail);
    (s, answer)
}

/// An upstream that answers its first request with `stream` as SSE, then closes.
fn sse_upstream(stream: Arc<Vec<u8>>) -> u16 {
    let upstream = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = upstream.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let Ok((mut c, _)) = upstream.accept() else { return };
        let mut r = BufReader::new(c.try_clone().unwrap());
        let mut length = 0;
        let mut line = String::new();
        while r.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
            line.clear();
        }
        let mut body = vec![0; length];
        let _ = r.read_exact(&mut body);
        let _ = c.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n");
        let _ = c.write_all(&stream);
    });
    port
}

const BIG_CALL: &str = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"big","arguments":{}}}"#;

/// POSTs the big call through the proxy and checks that the client gets
/// `stream`, every byte, and the stream's proper end.
fn assert_relayed_whole(port: u16, stream: &[u8]) {
    let (head, mut r) = post(port, BIG_CALL, Duration::from_secs(120));
    assert!(head.starts_with("http/1.1 200 "), "{head}");
    let mut got = 0;
    let mut same = true;
    let ended = read_chunked(&mut r, |piece| {
        same &= stream.get(got..got + piece.len()) == Some(piece);
        got += piece.len();
    });
    assert_eq!(ended, Ok(()), "after {got} bytes");
    assert_eq!(got, stream.len());
    assert!(same, "the bytes differ");
}

#[test]
fn a_200_mb_sse_event_costs_the_proxy_at_most_twice_its_size() {
    let size: usize = std::env::var("MCPSCOPE_SSE_EVENT_BYTES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200 * MIB as usize);
    let (stream, _) = big_stream(size, b"");
    let stream = Arc::new(stream);
    let upstream_port = sse_upstream(stream.clone());
    // Far above the goal: only so that a proxy holding many copies fails fast.
    let ceiling = 6 * size as u64 + 400 * MIB;
    let mut proxy = ProxyProcess::start(upstream_port, &[], ceiling);
    let baseline = proxy.peak_bytes();
    assert_relayed_whole(proxy.port, &stream);
    let peak = proxy.peak_bytes();
    assert!(
        !proxy.killed_at_ceiling.load(Ordering::SeqCst),
        "killed at {} MiB",
        ceiling / MIB
    );
    let size = size as u64;
    eprintln!(
        "a {} MiB event: proxy baseline {} MiB, peak {} MiB",
        size / MIB,
        baseline / MIB,
        peak / MIB
    );
    assert!(
        peak <= baseline + 2 * size,
        "peak {} MiB for a {} MiB event (baseline {} MiB)",
        peak / MIB,
        size / MIB,
        baseline / MIB
    );
    assert_eq!(proxy.stop().code(), Some(143), "{}", proxy.stderr());
}

/// What the record holds: an event over the cap in pieces of at most the
/// cap, every byte, all but the last marked as cut; the next event as a
/// message; an event the stream ended inside, to its last byte, marked so;
/// and a note that says what happened.
#[test]
fn an_sse_event_over_the_cap_is_recorded_in_pieces_and_said_so() {
    use mcpscope_core::proxy::reverse::{ReverseProxy, ReverseProxyOptions};
    const CAP: usize = 1024 * 1024;
    let unended = [&b"data: "[..], &b"y".repeat(2 * CAP + 10)].concat();
    let (stream, answer) = big_stream(5 * CAP + 123, &unended);
    let stream = Arc::new(stream);
    let upstream_port = sse_upstream(stream.clone());
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("big.jsonl");
    let mut options =
        ReverseProxyOptions::new("127.0.0.1:0", &format!("http://127.0.0.1:{upstream_port}/mcp")).unwrap();
    options.capture = Some(cap.clone());
    options.limits.max_held_line_bytes = CAP;
    let proxy = ReverseProxy::bind(options).unwrap();
    let port = proxy.local_addr().port();
    let stopper = proxy.stopper();
    let serving = std::thread::spawn(move || proxy.serve(|| "the test ended".into()));
    assert_relayed_whole(port, &stream);
    stopper.stop();
    let outcome = serving.join().unwrap();
    assert!(outcome.notes.is_empty(), "{:?}", outcome.notes);

    let mut events = EventReader::new(BufReader::new(std::fs::File::open(&cap).unwrap())).unwrap();
    let mut frames = Vec::new();
    let mut notes = Vec::new();
    while let Some(item) = events.next_item().unwrap() {
        match item {
            Item::Event(Event::Frame(f)) if f.direction == Direction::In => frames.push(f),
            Item::Event(Event::Note { text, .. }) => notes.push(text),
            _ => {}
        }
    }
    let pieces = |frames: &[mcpscope_core::wire::frame::Frame]| -> Vec<(usize, LineEnding)> {
        frames.iter().map(|f| (f.raw.len(), f.ending)).collect()
    };
    // The answer: six pieces, the last one whole.
    let (answer_frames, rest) = frames.split_at(6.min(frames.len()));
    let recorded: Vec<u8> = answer_frames.iter().flat_map(|f| f.raw.clone()).collect();
    assert!(recorded == stream[answer], "{:?}", pieces(&frames));
    assert!(
        answer_frames
            .iter()
            .all(|f| f.raw.len() <= CAP && f.anomalies().contains(Anomalies::OVERSIZE)),
        "{:?}",
        pieces(answer_frames)
    );
    let endings: Vec<LineEnding> = answer_frames.iter().map(|f| f.ending).collect();
    assert_eq!(endings[..5], [LineEnding::Cut; 5]);
    assert_eq!(endings[5], LineEnding::Lf);
    // The notification: a message of its own, read as one.
    assert_eq!(rest[0].kind(), Kind::Notification, "{}", rest[0].text());
    assert!(rest[0].text().contains("\"after\""), "{}", rest[0].text());
    // The event the stream ended in: every byte, the last piece marked cut short.
    assert_eq!(
        pieces(&rest[1..]),
        [(CAP, LineEnding::Cut), (CAP, LineEnding::Cut), (10, LineEnding::Eof)]
    );
    assert!(rest[1..].iter().all(|f| f.raw.iter().all(|&b| b == b'y')));
    assert_eq!(
        notes
            .iter()
            .filter(|n| n.contains("longer than the in-memory cap (1 MiB)"))
            .count(),
        2,
        "{notes:#?}"
    );
}
