//! End-to-end flood: a server writes N notifications; how long until all are
//! in the capture, against `cat` of the same bytes as the floor; and peak RSS
//! with 1,000,000 frames held in the store.
//!
//! Run: `cargo bench --bench flood` (MCPSCOPE_FLOOD_COUNT=200000,
//! MCPSCOPE_RSS_COUNT=1000000 to change the sizes).

use mcpscope_core::timeline::store::FrameStore;
use mcpscope_core::transport::event::Event;
use mcpscope_core::transport::process::ServerSpec;
use mcpscope_core::transport::session::{Session, SessionOptions};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "support/proc_status.rs"]
mod proc_status;
use proc_status::vm_kb;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn emit_blob(count: usize, path: &Path) {
    let status = Command::new("python3")
        .arg(repo().join("tests/servers/faulty_server.py"))
        .args(["--mode", "flood", "--count", &count.to_string(), "--emit-file"])
        .arg(path)
        .status()
        .expect("python3");
    assert!(status.success(), "writing the flood blob failed");
}

/// The floor: `cat` pushing the bytes through a pipe to a reader that only counts lines.
fn cat_floor(blob: &Path) -> (Duration, usize) {
    let start = Instant::now();
    let mut child = Command::new("cat").arg(blob).stdout(Stdio::piped()).spawn().unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut buf = vec![0u8; 64 * 1024];
    let mut lines = 0;
    loop {
        let n = out.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        lines += buf[..n].iter().filter(|&&b| b == b'\n').count();
    }
    child.wait().unwrap();
    (start.elapsed(), lines)
}

/// Runs a session with a capture until it closes; returns the time and the
/// number of frames that reached the capture file.
fn session_until_captured(spec: ServerSpec, capture: &Path, store: Option<&mut FrameStore>) -> (Duration, usize) {
    let options = SessionOptions {
        capture: Some(capture.to_owned()),
        request_timeout: None,
        ..SessionOptions::new(mcpscope_core::record::capture::open_log)
    };
    let start = Instant::now();
    let session = Session::start(spec, options);
    let mut store = store;
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
        if let Some(s) = store.as_deref_mut() {
            s.push_event(&ev);
        }
        if exited && frames > 0 && session.events().is_empty() {
            // The server is done: ask the session to wind down (it still
            // records everything left in the pipes).
            session.shutdown();
        }
    }
    let elapsed = start.elapsed();
    drop(session);
    let in_capture = std::fs::read(capture)
        .unwrap()
        .split(|&b| b == b'\n')
        .filter(|l| l.starts_with(b"{\"t_us\"") && l.windows(10).any(|w| w == b"\"dir\":\"in\""))
        .count();
    assert_eq!(in_capture, frames, "every frame is in the capture");
    (elapsed, in_capture)
}

fn rss_child(blob: &Path) {
    let before = vm_kb("VmRSS:");
    let dir = tempfile::tempdir().unwrap();
    let mut store = FrameStore::new();
    let (elapsed, frames) = session_until_captured(
        ServerSpec::new("cat", [blob.display().to_string()]),
        &dir.path().join("c.jsonl"),
        Some(&mut store),
    );
    let peak = vm_kb("VmHWM:");
    let raw = store.raw_bytes();
    println!(
        "rss: {frames} frames stored in {:.2} s; raw {:.1} MB; store heap {:.1} MB; process RSS before {:.1} MB, peak {:.1} MB; peak/raw {:.2}, (peak-before)/raw {:.2}",
        elapsed.as_secs_f64(),
        raw as f64 / 1e6,
        store.heap_bytes() as f64 / 1e6,
        before as f64 / 1e3,
        peak as f64 / 1e3,
        peak as f64 * 1e3 / raw as f64,
        (peak - before) as f64 * 1e3 / raw as f64
    );
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo bench -- --list` and test discovery
    }
    if let Ok(blob) = std::env::var("MCPSCOPE_RSS_CHILD") {
        rss_child(Path::new(&blob));
        return;
    }
    let count: usize = std::env::var("MCPSCOPE_FLOOD_COUNT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200_000);
    let rss_count: usize = std::env::var("MCPSCOPE_RSS_COUNT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().unwrap();
    let blob = dir.path().join("flood.jsonl");
    emit_blob(count, &blob);
    let bytes = std::fs::metadata(&blob).unwrap().len();
    println!("flood: {count} notifications, {:.1} MB", bytes as f64 / 1e6);

    for round in 1..=3 {
        let (floor, lines) = cat_floor(&blob);
        assert_eq!(lines, count);
        let (via_cat, n1) = session_until_captured(
            ServerSpec::new("cat", [blob.display().to_string()]),
            &dir.path().join("cat.jsonl"),
            None,
        );
        let py = ServerSpec::new(
            "python3",
            [
                repo().join("tests/servers/faulty_server.py").display().to_string(),
                "--mode".into(),
                "flood".into(),
                "--flood-only".into(),
                "--count".into(),
                count.to_string(),
            ],
        );
        let (via_py, n2) = session_until_captured(py, &dir.path().join("py.jsonl"), None);
        assert_eq!(n1, count);
        assert_eq!(n2, count);
        let rate = |d: Duration| count as f64 / d.as_secs_f64();
        println!(
            "round {round}: cat floor {:.3} s ({:.0} lines/s) | mcpscope on `cat` {:.3} s ({:.0} frames/s) | mcpscope on python flood server {:.3} s ({:.0} frames/s)",
            floor.as_secs_f64(),
            rate(floor),
            via_cat.as_secs_f64(),
            rate(via_cat),
            via_py.as_secs_f64(),
            rate(via_py)
        );
    }

    let big = dir.path().join("rss.jsonl");
    emit_blob(rss_count, &big);
    let status = Command::new(std::env::current_exe().unwrap())
        .env("MCPSCOPE_RSS_CHILD", &big)
        .status()
        .unwrap();
    assert!(status.success());
}
