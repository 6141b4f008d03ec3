//! `mcpscope verify` of a 10,000-exchange capture against a local server
//! (issue #29: at most 1.2x the time the same requests take through the
//! client without comparing). The server is `mcpscope mock` of the same
//! capture (fast, deterministic, every answer as recorded), so what is
//! measured is the client's round trips plus, for verify, reading the
//! recording and comparing every answer.
//!
//! Run: `cargo bench --bench verify` (MCPSCOPE_VERIFY_EXCHANGES=10000).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mcpscope_core::analysis::answer_diff::Ignore;
use mcpscope_core::client::Client;
use mcpscope_core::protocol::handshake::HandshakeOptions;
use mcpscope_core::protocol::mrtr::InputPolicy;
use mcpscope_core::transport::process::ServerSpec;
use mcpscope_core::transport::session::SessionOptions;
use mcpscope_core::verify::{self, Recording};
use std::path::Path;
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

fn mock(capture: &Path) -> Client {
    let spec = ServerSpec::new(
        env!("CARGO_BIN_EXE_mcpscope"),
        ["mock".to_owned(), capture.display().to_string()],
    );
    let options = SessionOptions {
        request_timeout: Some(T),
        ..SessionOptions::new(mcpscope_core::record::capture::open_log)
    };
    Client::start(spec, options, Box::new(|_| {}))
}

fn bench(c: &mut Criterion) {
    let n: usize = std::env::var("MCPSCOPE_VERIFY_EXCHANGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("bench.jsonl");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let made = std::process::Command::new("python3")
        .arg(root.join("scripts/gen-capture"))
        .arg(&cap)
        .arg(n.to_string())
        .status()
        .unwrap();
    assert!(made.success(), "scripts/gen-capture");
    let recording = Recording::read(&cap, None).unwrap();
    let calls: Vec<(String, Option<serde_json::Value>)> = recording
        .sessions
        .iter()
        .flat_map(|s| &s.exchanges)
        .filter(|x| x.method == "tools/call")
        .map(|x| (x.method.clone(), x.params.clone()))
        .collect();
    let mut g = c.benchmark_group("verify");
    g.sample_size(10);
    g.throughput(Throughput::Elements(calls.len() as u64));
    g.bench_function(format!("{} requests through the client (floor)", calls.len()), |b| {
        b.iter(|| {
            let mut client = mock(&cap);
            client.wait_started(T).unwrap();
            client.initialize(&HandshakeOptions::default(), T).unwrap().unwrap();
            for (m, p) in &calls {
                client.request(m, p.clone(), T).unwrap();
            }
            client.close();
        })
    });
    g.bench_function(format!("verify of {} exchanges", calls.len()), |b| {
        b.iter(|| {
            let recording = Recording::read(&cap, None).unwrap();
            let mut connect = |policy: &InputPolicy| mock(&cap).with_policy(policy.clone());
            let report = verify::verify(&mut connect, &recording, &Ignore::new(&[], &[]).unwrap(), T, false).unwrap();
            assert!(report.replayed.iter().all(|r| r.differences.is_empty()));
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
