//! Scale (issue #16): lint, diff and open a million-record capture,
//! each against the floors of the same run: `wc -l` of the file and a bare
//! `serde_json` pass (every line parsed into a `Value`, nothing kept).
//!
//! Each phase runs in a child process of its own, so its peak RSS (VmHWM) is
//! its own. The capture comes from `scripts/gen-capture` (500,000 pairs =
//! 1,000,008 records, ~258 MB) unless MCPSCOPE_SCALE_CAPTURE names one.
//!
//! Run: `cargo bench -p mcpscope-core --bench scale` (MCPSCOPE_SCALE_PAIRS=500000 to change the size,
//! MCPSCOPE_SCALE_ROUNDS=2 the number of rounds). Each phase also prints its CPU time: on a loaded
//! machine, the wall-clock time of a phase is only comparable with the floors of the same round.

use mcpscope_core::analysis::lint::{self, LintOptions};
use mcpscope_core::analysis::session_diff;
use mcpscope_core::record::capture::{EventReader, Item, READ_BUFFER};
use mcpscope_core::timeline::model::{SessionModel, Source};
use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const PHASE: &str = "MCPSCOPE_SCALE_PHASE";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[path = "../../../benches/support/proc_status.rs"]
mod proc_status;

fn peak_mb() -> f64 {
    proc_status::vm_kb("VmHWM:") as f64 / 1e3
}

/// CPU time (user + system) this process has used: on a machine others load
/// too, it moves much less than the wall-clock time does.
fn cpu_s() -> f64 {
    mcpscope_core::platform::process::usage(std::process::id()).map_or(0.0, |u| u.cpu.as_secs_f64())
}

fn report(what: &str, took: Duration, file_mb: f64, extra: &str) {
    let peak = peak_mb();
    println!(
        "{what:<34} {:>7.2} s (cpu {:>5.2} s)   peak RSS {:>7.1} MB = {:.2}× the input{extra}",
        took.as_secs_f64(),
        cpu_s(),
        peak,
        peak / file_mb
    );
}

fn open_reader(path: &Path) -> EventReader<std::io::BufReader<std::fs::File>> {
    let f = std::fs::File::open(path).unwrap();
    EventReader::new(std::io::BufReader::with_capacity(READ_BUFFER, f)).unwrap()
}

/// One phase, in this (child) process.
fn phase(name: &str, path: &Path) {
    let mb = std::fs::metadata(path).unwrap().len() as f64 / 1e6;
    let start = Instant::now();
    match name {
        "serde" => {
            // The floor: every line parsed as JSON, nothing kept.
            let f = std::fs::File::open(path).unwrap();
            let mut n = 0usize;
            for line in std::io::BufReader::with_capacity(READ_BUFFER, f).split(b'\n') {
                let v: serde_json::Value = serde_json::from_slice(&line.unwrap()).unwrap();
                n += usize::from(!v.is_null());
            }
            report("floor: serde_json pass", start.elapsed(), mb, &format!(" ({n} lines)"));
        }
        "lint" => {
            let linted = lint::lint_capture(path, &LintOptions::default()).unwrap();
            report(
                "lint (streaming)",
                start.elapsed(),
                mb,
                &format!(" ({} events, {} findings)", linted.events, linted.findings.len()),
            );
        }
        "diff" => {
            let (a, b) = session_diff::read_both(path, path).unwrap();
            let entries = session_diff::diff_exchanges(&a.exchanges, &b.exchanges);
            report(
                "diff A A",
                start.elapsed(),
                mb * 2.0,
                &format!(" ({} exchanges; × both inputs)", entries.len()),
            );
        }
        "open" => {
            // What the app's loading worker and UI thread do between them.
            let mut reader = open_reader(path);
            let mut model = SessionModel::new(Source::Capture {
                path: path.to_owned(),
                command_line: String::new(),
            });
            let mut first = None;
            while let Some(item) = reader.next_item().unwrap() {
                if let Item::Event(e) = item {
                    model.apply(&e);
                    if first.is_none() && model.store.len() == 8192 {
                        first = Some(start.elapsed());
                    }
                }
            }
            let loaded = start.elapsed();
            let t = Instant::now();
            let summary = model.latency_summary();
            let latency = t.elapsed();
            report(
                "open (whole capture into the model)",
                loaded,
                mb,
                &format!(
                    " ({} rows; first 8192 rows after {:.0} ms)",
                    model.store.len(),
                    first.unwrap_or_default().as_secs_f64() * 1e3
                ),
            );
            println!(
                "latency summary                    {:>7.3} ms ({} methods)",
                latency.as_secs_f64() * 1e3,
                summary.len()
            );
        }
        "filter" | "filter-all" | "filter-loaded" => {
            // `mcpscope filter --count` as the CLI runs it.
            let expr = match name {
                "filter" => FILTER_EXPR,
                // No text every match must hold: every record is read and tested.
                "filter-all" => "len > 300 and dir == \"s2c\"",
                // The request of each answer: each session is held as the app holds it.
                _ => "latency > 250us and request.method == \"tools/call\"",
            };
            let f = mcpscope_core::filter::Filter::parse(expr).unwrap();
            let summary =
                mcpscope_core::filter::records::run(path, &f, &mut |_| std::ops::ControlFlow::Continue(())).unwrap();
            report(
                name,
                start.elapsed(),
                mb,
                &format!(" ({} of {} records match {expr})", summary.matched, summary.records),
            );
        }
        other => panic!("unknown phase {other}"),
    }
}

/// The field expression the filter figures are measured with, and what jq
/// is asked for the same records.
const FILTER_EXPR: &str = r#"method == "tools/call" and params.arguments.message contains "number 4242""#;
const JQ_EXPR: &str =
    r#"select(.method=="tools/call" and (.raw|fromjson|.params.arguments.message|contains("number 4242")))"#;

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo bench -- --list` and test discovery
    }
    if let Ok(name) = std::env::var(PHASE) {
        let path = PathBuf::from(std::env::var("MCPSCOPE_SCALE_CAPTURE").unwrap());
        phase(&name, &path);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = match std::env::var("MCPSCOPE_SCALE_CAPTURE") {
        Ok(p) => PathBuf::from(p),
        Err(_) => {
            let pairs = std::env::var("MCPSCOPE_SCALE_PAIRS").unwrap_or_else(|_| "500000".into());
            let path = dir.path().join("scale.jsonl");
            let status = Command::new("python3")
                .arg(repo().join("scripts/gen-capture"))
                .arg(&path)
                .arg(&pairs)
                .status()
                .expect("python3");
            assert!(status.success(), "scripts/gen-capture failed");
            path
        }
    };
    let mb = std::fs::metadata(&path).unwrap().len() as f64 / 1e6;
    println!("capture: {} ({mb:.1} MB)", path.display());
    let rounds: u32 = std::env::var("MCPSCOPE_SCALE_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(2);
    for round in 1..=rounds {
        println!("round {round}");
        let start = Instant::now();
        let out = Command::new("wc").arg("-l").arg(&path).output().unwrap();
        println!(
            "{:<34} {:>7.2} s   ({})",
            "floor: wc -l",
            start.elapsed().as_secs_f64(),
            String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .next()
                .unwrap_or("?")
        );
        let phases = std::env::var("MCPSCOPE_SCALE_PHASES")
            .unwrap_or_else(|_| "serde,lint,diff,open,filter,filter-all,filter-loaded,jq".into());
        for name in phases.split(',') {
            if name == "jq" {
                // The tool users would reach for, on the same records.
                let start = Instant::now();
                match Command::new("jq").arg("-c").arg(JQ_EXPR).arg(&path).output() {
                    Ok(out) if out.status.success() => println!(
                        "{:<34} {:>7.2} s   ({} records match)",
                        "peer: jq -c 'select(…)'",
                        start.elapsed().as_secs_f64(),
                        out.stdout.iter().filter(|&&b| b == b'\n').count()
                    ),
                    _ => println!("peer: jq not run (not installed, or it failed)"),
                }
                continue;
            }
            let status = Command::new(std::env::current_exe().unwrap())
                .env(PHASE, name)
                .env("MCPSCOPE_SCALE_CAPTURE", &path)
                .status()
                .unwrap();
            assert!(status.success(), "phase {name} failed");
        }
    }
}
