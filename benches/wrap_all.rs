//! `mcpscope wrap --all` on large configs (issue #26 item 10b: 100,000
//! servers took over a minute, growing quadratically). Two measurements per
//! size: the edit alone (`wrap_text`, in memory) and the whole command's work
//! on a file (`wrap_file`: locks, ledger written and synced, backup, atomic
//! replace). Sizes 10,000, 20,000 and 100,000 servers, so a linear cost shows
//! as times in the ratio 1 : 2 : 10.
//!
//! Run: `cargo bench --bench wrap_all` (MCPSCOPE_WRAP_SIZES=10000,20000 to
//! choose the sizes).

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use mcpscope_core::config::wrap::{self, RemoteWrap, Remotes, Selection};
use mcpscope_core::config::wrap_file::{self, Ledger};
use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

/// A Claude Desktop config as big tools write them (the `config_import`
/// bench's shape): nine in ten stdio servers with arguments and an
/// environment, one in ten remote.
fn config(n: usize) -> String {
    let mut servers = serde_json::Map::new();
    for i in 0..n {
        let entry = if i % 10 == 9 {
            serde_json::json!({"type": "http", "url": format!("https://mcp{i}.example.com/mcp"),
                "headers": {"Authorization": format!("Bearer token-{i}")}})
        } else {
            serde_json::json!({"command": "npx", "args": ["-y", format!("@example/server-{i}"), format!("/home/me/project-{i}")],
                "env": {"API_KEY": format!("sk-{i:08}"), "LOG_LEVEL": "info"}})
        };
        servers.insert(format!("server-{i:06}"), entry);
    }
    serde_json::to_string_pretty(&serde_json::json!({ "mcpServers": servers })).unwrap()
}

/// Ports without sockets, so the edit is measured alone.
struct CountingPorts(u16);

impl Remotes for CountingPorts {
    fn allocate_port(&mut self) -> std::io::Result<u16> {
        self.0 = self.0.wrapping_add(1).max(1024);
        Ok(self.0)
    }
    fn lookup(&self, _: &str) -> Option<RemoteWrap> {
        None
    }
}

fn sizes() -> Vec<usize> {
    std::env::var("MCPSCOPE_WRAP_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .filter(|v: &Vec<usize>| !v.is_empty())
        .unwrap_or_else(|| vec![10_000, 20_000, 100_000])
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("wrap_all");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    for n in sizes() {
        let text = config(n);
        println!("{n} servers: {:.1} MB", text.len() as f64 / 1e6);
        g.throughput(Throughput::Elements(n as u64));
        g.bench_function(format!("wrap_text/{n}"), |b| {
            b.iter(|| {
                let mut ports = CountingPorts(40000);
                let edit = wrap::wrap_text(
                    Path::new("claude_desktop_config.json"),
                    black_box(&text),
                    "/usr/local/bin/mcpscope",
                    &Selection::All,
                    &mut ports,
                )
                .unwrap();
                black_box(edit.text.len())
            })
        });

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("claude_desktop_config.json");
        let state = dir.path().join("state");
        g.bench_function(format!("wrap_file/{n}"), |b| {
            b.iter_batched(
                || {
                    // Each run starts from the unwrapped file, no backups, an empty ledger.
                    for e in std::fs::read_dir(dir.path()).unwrap() {
                        let p = e.unwrap().path();
                        if p.is_file() {
                            std::fs::remove_file(&p).unwrap();
                        }
                    }
                    let _ = std::fs::remove_dir_all(&state);
                    std::fs::write(&path, &text).unwrap();
                    Ledger::load(&state).unwrap()
                },
                |mut ledger| {
                    let r = wrap_file::wrap_file(&path, "/usr/local/bin/mcpscope", &Selection::All, &mut ledger, false)
                        .unwrap();
                    assert!(r.written);
                    black_box(r.changes.len())
                },
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
