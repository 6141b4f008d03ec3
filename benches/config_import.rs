//! Config import (issue #16): a Claude Desktop config listing 200,000 servers
//! imported into the real app (egui_kittest, layout and tessellation, no
//! GPU) the way File → Import does it: the file is read and parsed on a
//! worker while the UI keeps drawing. Prints, against the floor of a bare
//! `serde_json` parse of the same file: the time until the servers are
//! listed, the longest frame meanwhile (a blank window would be one long
//! frame), the frame time with every server listed, and the RSS.
//!
//! Run: `cargo bench --bench config_import` (MCPSCOPE_IMPORT_SERVERS to change the count).

use egui_kittest::Harness;
use mcpscope_app::{McpscopeApp, StartupArgs};
use std::time::{Duration, Instant};

#[path = "support/proc_status.rs"]
mod proc_status;
use proc_status::vm_kb;

/// A config as big tools write them: mostly stdio servers with arguments
/// and an environment, some remote ones.
fn write_config(path: &std::path::Path, n: usize) {
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
    let text = serde_json::to_string_pretty(&serde_json::json!({ "mcpServers": servers })).unwrap();
    std::fs::write(path, text).unwrap();
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let n: usize = std::env::var("MCPSCOPE_IMPORT_SERVERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200_000);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("claude_desktop_config.json");
    write_config(&path, n);
    let mb = std::fs::metadata(&path).unwrap().len() as f64 / 1e6;
    println!("config: {n} servers, {mb:.1} MB");

    for round in 1..=2 {
        println!("round {round}");
        let t = Instant::now();
        let text = std::fs::read_to_string(&path).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let floor = t.elapsed();
        drop((v, text));
        println!(
            "floor: read + bare serde_json parse      {:>8.1} ms",
            floor.as_secs_f64() * 1e3
        );

        let rss_before = vm_kb("VmRSS:");
        let mut h = Harness::builder()
            .with_size([1440.0, 900.0])
            .build_eframe(|cc| McpscopeApp::new(cc, StartupArgs::default()));
        h.step();
        let start = Instant::now();
        h.state_mut().import_config(&path);
        let mut longest = Duration::ZERO;
        let mut frames = 0usize;
        while h.state().importing() {
            let f = Instant::now();
            h.step();
            longest = longest.max(f.elapsed());
            frames += 1;
            // A UI idles between frames; the worker gets the cores meanwhile.
            std::thread::sleep(Duration::from_millis(4));
        }
        // The frame that takes the result and lists the servers.
        let f = Instant::now();
        h.step();
        longest = longest.max(f.elapsed());
        let listed = start.elapsed();
        let count = h
            .state()
            .launcher
            .imported
            .as_ref()
            .map_or(0, |(_, servers, _)| servers.len());
        assert_eq!(count, n, "every server imported");
        let mut frame_times: Vec<Duration> = (0..30)
            .map(|_| {
                let f = Instant::now();
                h.step();
                f.elapsed()
            })
            .collect();
        frame_times.sort();
        println!(
            "import until listed                      {:>8.1} ms ({frames} frames drawn meanwhile, longest {:.1} ms)",
            listed.as_secs_f64() * 1e3,
            longest.as_secs_f64() * 1e3
        );
        println!(
            "frame with {n} servers listed        {:>8.2} ms (median of 30)",
            frame_times[15].as_secs_f64() * 1e3
        );
        println!(
            "RSS                                      {:>8.1} MB → {:.1} MB (peak {:.1} MB)",
            rss_before as f64 / 1e3,
            vm_kb("VmRSS:") as f64 / 1e3,
            vm_kb("VmHWM:") as f64 / 1e3
        );
    }
}
