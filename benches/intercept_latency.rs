//! What intercepting costs a frame that nothing matches (issue #30): the
//! round trip of one request through `mcpscope proxy` with ten breakpoints
//! and ten fault rules defined that never match, against the same proxy
//! with none (its byte-exact path) and against no proxy at all (the floor).
//!
//! The server is `cat`: it echoes each line at once, so what is measured is
//! the pipes and the proxy. A round trip crosses the proxy twice (the
//! request and its echo), so the added latency per frame is half the
//! difference of the round trips. The binary is the bench profile's
//! (optimised, as shipped); the renderer plays no part in a proxy.
//!
//! Run: `cargo bench --bench intercept_latency` (MCPSCOPE_BENCH_FRAMES to
//! change the frames per round; three rounds of each, interleaved).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const REQUEST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello through the proxy"}}}"#;

struct Peer {
    child: Child,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
}

impl Peer {
    fn start(cmd: &[String], state: &std::path::Path) -> Peer {
        let mut child = Command::new(&cmd[0])
            .args(&cmd[1..])
            .env("XDG_STATE_HOME", state)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the peer");
        Peer {
            stdin: child.stdin.take().unwrap(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            child,
        }
    }

    fn round_trips(&mut self, n: usize, out: &mut Vec<Duration>) {
        let mut line = String::new();
        for _ in 0..n {
            let t0 = Instant::now();
            self.stdin.write_all(REQUEST.as_bytes()).unwrap();
            self.stdin.write_all(b"\n").unwrap();
            self.stdin.flush().unwrap();
            line.clear();
            self.stdout.read_line(&mut line).unwrap();
            out.push(t0.elapsed());
            assert_eq!(line.trim_end(), REQUEST, "the frame came back unchanged");
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn quantile(sorted: &[Duration], q: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[i].as_secs_f64() * 1e6
}

fn main() {
    let bin = env!("CARGO_BIN_EXE_mcpscope");
    let frames: usize = std::env::var("MCPSCOPE_BENCH_FRAMES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    let state = tempfile::tempdir().unwrap();
    let mut gated: Vec<String> = vec![bin.into(), "proxy".into(), "--seed".into(), "1".into()];
    for i in 0..10 {
        // Half are rejected by their text alone; half must be evaluated.
        let expr = if i % 2 == 0 {
            format!(r#"method == "never/{i}""#)
        } else {
            format!(r#"dir == "s2c" and kind == "error" and error.code == {}"#, -32000 - i)
        };
        gated.extend(["--break".into(), expr]);
        gated.extend(["--fault".into(), format!(r#"params.name == "nothing-{i}" => drop"#)]);
    }
    gated.extend(["--".into(), "cat".into()]);
    let configs: Vec<(&str, Vec<String>)> = vec![
        ("cat alone (floor)", vec!["cat".into()]),
        (
            "proxy, no rules",
            vec![bin.into(), "proxy".into(), "--".into(), "cat".into()],
        ),
        ("proxy, 10 breakpoints + 10 rules, none matching", gated),
    ];
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); configs.len()];
    let mut peers: Vec<Peer> = configs.iter().map(|(_, c)| Peer::start(c, state.path())).collect();
    for p in &mut peers {
        p.round_trips(2_000, &mut Vec::new()); // warm up
    }
    for _round in 0..3 {
        for (i, p) in peers.iter_mut().enumerate() {
            p.round_trips(frames, &mut samples[i]);
        }
    }
    drop(peers);
    println!(
        "intercept_latency: {} round trips each, one request at a time",
        frames * 3
    );
    println!("{:<52} {:>9} {:>9} {:>9}", "", "p50 µs", "p99 µs", "p99.9 µs");
    let mut table = Vec::new();
    for (i, (name, _)) in configs.iter().enumerate() {
        let s = &mut samples[i];
        s.sort();
        let row = (quantile(s, 0.5), quantile(s, 0.99), quantile(s, 0.999));
        println!("{name:<52} {:>9.1} {:>9.1} {:>9.1}", row.0, row.1, row.2);
        table.push(row);
    }
    let per_frame = |a: (f64, f64, f64), b: (f64, f64, f64)| ((a.0 - b.0) / 2.0, (a.1 - b.1) / 2.0, (a.2 - b.2) / 2.0);
    let vs_plain = per_frame(table[2], table[1]);
    let vs_floor = per_frame(table[2], table[0]);
    println!(
        "added per frame by the gate (vs the proxy without rules): p50 {:.1} µs, p99 {:.1} µs, p99.9 {:.1} µs",
        vs_plain.0, vs_plain.1, vs_plain.2
    );
    println!(
        "added per frame by the gated proxy (vs no proxy):         p50 {:.1} µs, p99 {:.1} µs, p99.9 {:.1} µs",
        vs_floor.0, vs_floor.1, vs_floor.2
    );
}
