//! Framer + classification + correlation + store throughput on a ~100 MB
//! mixed stream, beside bare `serde_json::from_slice` per line in the same run.
//!
//! Run: `cargo bench --bench framing` (MCPSCOPE_BENCH_MB=20 for a quicker run).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mcpscope_core::timeline::store::FrameStore;
use mcpscope_core::transport::recorder::Recorder;
use mcpscope_core::wire::classify::Limits;
use mcpscope_core::wire::frame::Direction;
use mcpscope_core::wire::framing::LineSplitter;
use std::hint::black_box;
use std::time::Duration;

/// A deterministic stream resembling a busy session: notifications, requests
/// and results of several sizes, a few log lines and a few large payloads.
fn mixed_stream(target_bytes: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(target_bytes + 1024 * 1024);
    let filler = "lorem ipsum dolor sit amet ".repeat(40);
    let big = "x".repeat(256 * 1024);
    let mut i: u64 = 0;
    while out.len() < target_bytes {
        let line = match i % 100 {
            0..=59 => format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"level":"info","logger":"bench","data":"event {i} happened"}}}}"#
            ),
            60..=74 => format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":"t{i}","progress":{i},"total":1000000}}}}"#
            ),
            75..=84 => format!(
                r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"echo","arguments":{{"message":"m{i}"}}}}}}"#
            ),
            85..=96 => format!(
                r#"{{"jsonrpc":"2.0","id":{},"result":{{"content":[{{"type":"text","text":"{filler}"}}],"structuredContent":{{"n":{i},"ok":true,"items":[1,2,3,4,5]}},"isError":false}}}}"#,
                i - 10
            ),
            97 => format!("[{i}] INFO server log line printed to stdout by mistake"),
            98 => format!(r#"{{"jsonrpc":"2.0","id":{i},"error":{{"code":-32601,"message":"Method not found"}}}}"#),
            _ if i % 1000 == 99 => {
                format!(r#"{{"jsonrpc":"2.0","id":{i},"result":{{"content":[{{"type":"text","text":"{big}"}}]}}}}"#)
            }
            _ => format!(r#"{{"jsonrpc":"2.0","id":"s{i}","method":"roots/list"}}"#),
        };
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
        i += 1;
    }
    out
}

fn bare_parse(stream: &[u8]) -> usize {
    let mut ok = 0;
    for line in stream.split(|&b| b == b'\n') {
        if serde_json::from_slice::<serde_json::Value>(line).is_ok() {
            ok += 1;
        }
    }
    ok
}

fn engine(stream: &[u8]) -> usize {
    let mut splitter = LineSplitter::new();
    let mut recorder = Recorder::replay(Limits::default());
    let mut store = FrameStore::new();
    for chunk in stream.chunks(64 * 1024) {
        splitter.push(chunk, |line| {
            let f = recorder.frame_at(Direction::In, line, Duration::ZERO, None);
            store.push_frame(&f);
        });
    }
    if let Some(line) = splitter.finish() {
        let f = recorder.frame_at(Direction::In, line, Duration::ZERO, None);
        store.push_frame(&f);
    }
    store.len()
}

fn bench(c: &mut Criterion) {
    let mb: usize = std::env::var("MCPSCOPE_BENCH_MB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100);
    let stream = mixed_stream(mb * 1024 * 1024);
    let lines = stream.iter().filter(|&&b| b == b'\n').count();
    eprintln!("stream: {} bytes, {lines} lines", stream.len());
    let mut group = c.benchmark_group("stream");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.throughput(Throughput::Bytes(stream.len() as u64));
    group.bench_function("bare_serde_json_from_slice", |b| {
        b.iter(|| black_box(bare_parse(black_box(&stream))))
    });
    group.bench_function("framer_classify_store", |b| {
        b.iter(|| black_box(engine(black_box(&stream))))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
