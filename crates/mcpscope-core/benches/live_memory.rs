//! Memory of live sessions, measured in a child process per case (peak RSS
//! from /proc/self/status), in release:
//!
//! * `stdio`: 1,000,000 frames through a live session (`cat` of a flood as the
//!   server, capture on, every event stored by the consumer): peak RSS against
//!   the raw bytes held.
//! * `http`: a Streamable HTTP server (`tests/servers/hostile_http.py
//!   --mode sse-flood`) streams notifications on its GET stream while the
//!   consumer reads slowly: RSS over time must stay flat (bounded queues,
//!   backpressure) instead of growing with what the server sent.
//!
//! Run: `cargo bench -p mcpscope-core --bench live_memory`
//! (MCPSCOPE_RSS_COUNT=1000000, MCPSCOPE_HTTP_SECS=30 to change the sizes).

use mcpscope_core::timeline::store::FrameStore;
use mcpscope_core::transport::event::Event;
use mcpscope_core::transport::process::ServerSpec;
use mcpscope_core::transport::session::{Session, SessionOptions};
use mcpscope_core::transport::target::HttpTarget;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "../../../benches/support/proc_status.rs"]
mod proc_status;
use proc_status::vm_kb;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The same notifications the flood server writes (about 120 bytes each).
fn write_blob(count: usize, path: &Path) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for i in 0..count {
        writeln!(
            f,
            r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"level":"info","logger":"flood","data":"line {i:08}"}}}}"#
        )
        .unwrap();
    }
}

fn stdio_child(blob: &Path) {
    let before = vm_kb("VmRSS:");
    let dir = tempfile::tempdir().unwrap();
    let options = SessionOptions {
        capture: Some(dir.path().join("c.jsonl")),
        request_timeout: None,
        ..SessionOptions::new(mcpscope_core::record::capture::open_log)
    };
    let started = Instant::now();
    let session = Session::start(ServerSpec::new("cat", [blob.display().to_string()]), options);
    let mut store = FrameStore::new();
    let mut frames = 0usize;
    let mut exited = false;
    loop {
        let ev = session.events().recv().expect("events until Closed");
        match &ev {
            Event::Frame(_) => frames += 1,
            Event::Exited { .. } => exited = true,
            Event::Closed { .. } => break,
            _ => {}
        }
        store.push_event(&ev);
        if exited && session.events().is_empty() {
            session.shutdown();
        }
    }
    let elapsed = started.elapsed();
    let peak = vm_kb("VmHWM:");
    let raw = store.raw_bytes();
    println!(
        "stdio: {frames} frames stored in {:.2} s; raw {:.1} MB; store heap {:.1} MB; RSS before {:.1} MB, peak {:.1} MB; \
         peak/raw {:.2}, (peak-before)/raw {:.2}",
        elapsed.as_secs_f64(),
        raw as f64 / 1e6,
        store.heap_bytes() as f64 / 1e6,
        before as f64 / 1e3,
        peak as f64 / 1e3,
        peak as f64 * 1e3 / raw as f64,
        (peak - before) as f64 * 1e3 / raw as f64
    );
}

fn http_child(secs: u64) {
    let mut server = Command::new("python3")
        .arg(repo().join("tests/servers/hostile_http.py"))
        .args(["--mode", "sse-flood", "--count", "100000000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3");
    let mut out = BufReader::new(server.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    let port = first.trim().strip_prefix("PORT ").unwrap().to_owned();
    let before = vm_kb("VmRSS:");
    let options = SessionOptions {
        request_timeout: None,
        capture: Some(tempfile::tempdir().unwrap().keep().join("http.jsonl")),
        ..SessionOptions::new(mcpscope_core::record::capture::open_log)
    };
    let session = Session::connect(HttpTarget::streamable(format!("http://127.0.0.1:{port}/mcp")), options);
    session.request(
        "initialize",
        Some(mcpscope_core::protocol::handshake::HandshakeOptions::default().params()),
    );
    let started = Instant::now();
    let mut frames = 0usize;
    let mut next_report = Duration::from_secs(0);
    let mut initialized = false;
    while started.elapsed() < Duration::from_secs(secs) {
        // A slow consumer: 1 ms per event, far slower than the server.
        if let Ok(ev) = session.events().recv_timeout(Duration::from_millis(100)) {
            if let Event::Frame(f) = &ev {
                frames += 1;
                if !initialized && f.class.kind == mcpscope_core::wire::classify::Kind::Result {
                    initialized = true;
                    session.notify("notifications/initialized", None);
                }
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        if started.elapsed() >= next_report {
            println!(
                "http: {:>3} s: {frames:>7} frames consumed, RSS {:.1} MB (before {:.1} MB)",
                started.elapsed().as_secs(),
                vm_kb("VmRSS:") as f64 / 1e3,
                before as f64 / 1e3
            );
            next_report += Duration::from_secs(5);
        }
    }
    println!("http: peak RSS {:.1} MB", vm_kb("VmHWM:") as f64 / 1e3);
    drop(session);
    let _ = server.kill();
    let _ = server.wait();
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    if let Ok(blob) = std::env::var("MCPSCOPE_STDIO_CHILD") {
        stdio_child(Path::new(&blob));
        return;
    }
    if let Ok(secs) = std::env::var("MCPSCOPE_HTTP_CHILD") {
        http_child(secs.parse().unwrap());
        return;
    }
    let count: usize = std::env::var("MCPSCOPE_RSS_COUNT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let secs: u64 = std::env::var("MCPSCOPE_HTTP_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let dir = tempfile::tempdir().unwrap();
    let blob = dir.path().join("flood.jsonl");
    write_blob(count, &blob);
    let me = std::env::current_exe().unwrap();
    let status = Command::new(&me).env("MCPSCOPE_STDIO_CHILD", &blob).status().unwrap();
    assert!(status.success());
    let status = Command::new(&me)
        .env("MCPSCOPE_HTTP_CHILD", secs.to_string())
        .status()
        .unwrap();
    assert!(status.success());
}
