//! Frame time of the whole app (timeline + detail) with 1,000,000 frames
//! loaded, measured by stepping the real app in egui_kittest (layout and
//! tessellation, no GPU). Also prints the process's RSS after loading.
//!
//! Run: `cargo bench --bench ui_frame` (MCPSCOPE_UI_FRAMES to change the count).

use criterion::{Criterion, criterion_group, criterion_main};
use egui_kittest::Harness;
use mcpscope_app::inspection::Inspection;
use mcpscope_app::{McpscopeApp, StartupArgs};
use mcpscope_core::timeline::model::{SessionModel, Source};
use mcpscope_core::timeline::replay::Replay;
use mcpscope_core::transport::event::Event;
use mcpscope_core::wire::frame::Direction;
use std::time::Duration;

#[path = "support/proc_status.rs"]
mod proc_status;
use proc_status::vm_kb;

fn big_model(n: usize) -> SessionModel {
    let mut r = Replay::new().without_events();
    let mut m = SessionModel::new(Source::Live {
        command_line: "bench".into(),
    });
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}"#;
    m.apply(&Event::Frame(r.frame(Direction::Out, init.as_bytes())));
    let answer = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"bench","version":"1"}}}"#;
    m.apply(&Event::Frame(r.frame(Direction::In, answer.as_bytes())));
    for i in 2..n {
        r.at(Duration::from_micros(i as u64 * 10));
        let (dir, text) = match i % 10 {
            0 => (
                Direction::Out,
                format!(
                    r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"echo","arguments":{{"message":"m{i}"}}}}}}"#
                ),
            ),
            1 => (
                Direction::In,
                format!(
                    r#"{{"jsonrpc":"2.0","id":{},"result":{{"content":[{{"type":"text","text":"m{i}"}}]}}}}"#,
                    i - 1
                ),
            ),
            _ => (
                Direction::In,
                format!(
                    r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"level":"info","data":"event {i}"}}}}"#
                ),
            ),
        };
        m.apply(&Event::Frame(r.frame(dir, text.as_bytes())));
    }
    m
}

fn bench(c: &mut Criterion) {
    let n: usize = std::env::var("MCPSCOPE_UI_FRAMES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let before = vm_kb("VmRSS:");
    let model = big_model(n);
    let raw = model.store.raw_bytes();
    let after = vm_kb("VmRSS:");
    eprintln!(
        "ui_frame: {n} frames, raw {:.1} MB, store heap {:.1} MB, RSS {:.1} MB → {:.1} MB",
        raw as f64 / 1e6,
        model.store.heap_bytes() as f64 / 1e6,
        before as f64 / 1e3,
        after as f64 / 1e3
    );
    let mut harness = Harness::builder()
        .with_size([1440.0, 900.0])
        .build_eframe(|cc| McpscopeApp::new(cc, StartupArgs::default()));
    harness.state_mut().session_mut().inspection = Some(Inspection::offline(model));
    harness.step();
    let mut group = c.benchmark_group("ui");
    group.sample_size(50);
    group.bench_function("frame_follow_tail_1M", |b| b.iter(|| harness.step()));
    // Select a response in the middle: detail tree + linked request highlighted.
    let mid = (n / 2) / 10 * 10 + 1;
    harness.state_mut().session_mut().timeline.select(mid);
    {
        let view = harness.state_mut().session_mut();
        let model = &view.inspection.as_ref().unwrap().model;
        view.detail.show_row(model, Some(mid));
    }
    harness.step();
    group.bench_function("frame_selected_middle_1M", |b| b.iter(|| harness.step()));
    group.finish();
    eprintln!("ui_frame: RSS after stepping {:.1} MB", vm_kb("VmRSS:") as f64 / 1e3);
}

criterion_group!(benches, bench);
criterion_main!(benches);
