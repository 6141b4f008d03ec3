//! One very large SSE event through the HTTP reverse proxy (hostile peers
//! item 10a), against the same bytes read straight from the upstream as the
//! floor. The proxy finds where each event ends in one pass over the bytes,
//! so the event gets through in about the time to copy it.
//!
//! Run: `cargo bench --bench reverse_proxy_sse` (MCPSCOPE_SSE_EVENT_MB=200 to
//! change the event's size).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mcpscope_core::proxy::reverse::{ReverseProxy, ReverseProxyOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

/// An upstream that answers every request with `stream` as an SSE body.
fn upstream(stream: Arc<Vec<u8>>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { continue };
            let stream = stream.clone();
            std::thread::spawn(move || {
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut line = String::new();
                while r.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                    line.clear();
                }
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n");
                let _ = s.write_all(&stream);
            });
        }
    });
    port
}

/// GETs the stream from `port` and returns how many bytes came (head and framing included).
fn fetch(port: u16) -> usize {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(600))).unwrap();
    write!(
        s,
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut buf = vec![0u8; 256 * 1024];
    let mut total = 0;
    loop {
        match s.read(&mut buf) {
            Ok(0) => return total,
            Ok(n) => total += n,
            Err(e) => panic!("reading the answer: {e} after {total} bytes"),
        }
    }
}

fn bench(c: &mut Criterion) {
    let mb: usize = std::env::var("MCPSCOPE_SSE_EVENT_MB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let size = mb * 1024 * 1024;
    let mut stream = b"data: ".to_vec();
    stream.extend((0..size).map(|i| b"0123456789abcdef"[i % 16]));
    stream.extend_from_slice(b"\n\n");
    let up = upstream(Arc::new(stream));

    let options = ReverseProxyOptions::new("127.0.0.1:0", &format!("http://127.0.0.1:{up}/mcp")).unwrap();
    let proxy = ReverseProxy::bind(options).unwrap();
    let port = proxy.local_addr().port();
    let stopper = proxy.stopper();
    let served = std::thread::spawn(move || proxy.serve(|| "the bench ended".into()));

    let mut group = c.benchmark_group("reverse_proxy_sse");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(30));
    group.throughput(Throughput::Bytes(size as u64));
    group.bench_function(format!("one {mb} MiB event, straight from the upstream (floor)"), |b| {
        b.iter(|| assert!(fetch(up) > size))
    });
    group.bench_function(format!("one {mb} MiB event through the reverse proxy"), |b| {
        b.iter(|| assert!(fetch(port) > size))
    });
    group.finish();
    stopper.stop();
    let _ = served.join();
}

criterion_group!(benches, bench);
criterion_main!(benches);
