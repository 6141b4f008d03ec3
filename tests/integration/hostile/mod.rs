//! A hostile environment: servers of our own that steal credentials, redirect,
//! flood, never send a newline, exit at once or leave children behind
//! (`tests/servers/hostile_server.py`, `tests/servers/hostile_http.py`), and
//! the signals, closed pipes, FIFOs and unwritable captures a user's shell
//! throws at the binary. Each test fails without the fix it guards.

use crate::support::*;
use mcpscope_core::client::ClientError;
use mcpscope_core::protocol::handshake::HandshakeOptions;
use mcpscope_core::record::capture;
use mcpscope_core::transport::event::{Event, HttpInfo};
use mcpscope_core::transport::session::{Session, SessionOptions};
use mcpscope_core::transport::target::{HttpTarget, Target};
use mcpscope_core::wire::classify::{Anomalies, Kind, Limits};
use mcpscope_core::wire::framing::LineEnding;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
#[cfg(unix)]
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod captures;
#[cfg(unix)] // modes of the files it leaves
mod credentials;
mod errors;
#[cfg(unix)] // wait statuses
mod memory;
#[cfg(unix)] // FIFOs
mod pipes;
mod reverse_proxy;
#[cfg(unix)] // signals
mod signals;
mod stalls;

fn hostile_server() -> String {
    repo().join("tests/servers/hostile_server.py").display().to_string()
}

fn hostile_args(mode: &str, extra: &[&str]) -> Vec<String> {
    let mut v = vec!["python3".to_owned(), hostile_server(), "--mode".into(), mode.into()];
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

fn hostile(mode: &str, extra: &[&str]) -> mcpscope_core::transport::process::ServerSpec {
    let mut a = hostile_args(mode, extra);
    let program = a.remove(0);
    mcpscope_core::transport::process::ServerSpec::new(program, a)
}

pub(crate) fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs the binary to its end, killing it (and failing) if it takes longer than `within`.
pub(crate) fn run_bin(args: &[&str], within: Duration) -> Output {
    let child = crate::support::mcpscope_command()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running mcpscope");
    wait_output(child, within, &format!("mcpscope {}", args.join(" ")))
}

pub(crate) fn wait_output(mut child: Child, within: Duration, what: &str) -> Output {
    let deadline = Instant::now() + within;
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut o = Vec::new();
        let mut e = Vec::new();
        if let Some(s) = out.as_mut() {
            let _ = s.read_to_end(&mut o);
        }
        if let Some(s) = err.as_mut() {
            let _ = s.read_to_end(&mut e);
        }
        (o, e)
    });
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let (stdout, stderr) = reader.join().unwrap();
            return Output { status, stdout, stderr };
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish within {within:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether a process exists and is not a zombie.
pub(crate) fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z"),
        Err(_) => false,
    }
}

pub(crate) fn wait_until(within: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !cond() {
        assert!(Instant::now() < deadline, "{what}: not within {within:?}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// The hostile HTTP server, killed when dropped; its report lines collected.
pub(crate) struct HostileHttp {
    child: Child,
    pub(crate) port: u16,
    lines: Arc<Mutex<Vec<String>>>,
}

impl HostileHttp {
    pub(crate) fn start(args: &[&str]) -> HostileHttp {
        let mut child = Command::new("python3")
            .arg(repo().join("tests/servers/hostile_http.py"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3");
        let mut reader = BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        reader.read_line(&mut first).unwrap();
        let port = first
            .strip_prefix("PORT ")
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("hostile_http.py said {first:?}"));
        let lines: Arc<Mutex<Vec<String>>> = Default::default();
        let l = lines.clone();
        std::thread::spawn(move || {
            for line in reader.lines() {
                let Ok(line) = line else { return };
                l.lock().unwrap().push(line);
            }
        });
        HostileHttp { child, port, lines }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Everything the server reported before now (a GET /mark orders it).
    fn reported(&self) -> Vec<String> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.write_all(b"GET /mark HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut sink = Vec::new();
        let _ = s.read_to_end(&mut sink);
        wait_until(Duration::from_secs(10), "the MARK line", || {
            self.lines.lock().unwrap().iter().any(|l| l == "MARK")
        });
        let lines = self.lines.lock().unwrap();
        let end = lines.iter().position(|l| l == "MARK").unwrap();
        let out = lines[..end].to_vec();
        drop(lines);
        self.lines.lock().unwrap().retain(|l| l != "MARK");
        out
    }

    fn wait_line(&self, within: Duration, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + within;
        loop {
            if let Some(l) = self.lines.lock().unwrap().iter().find(|l| pred(l)) {
                return l.clone();
            }
            assert!(Instant::now() < deadline, "no such report line within {within:?}");
            std::thread::sleep(Duration::from_millis(25));
        }
    }
}

impl Drop for HostileHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `call tools/list` recorded to `cap`, against a server that interleaves
/// `count` stdout and stderr lines.
fn interleaved_capture(cap: &Path, count: u32) -> Output {
    let count = count.to_string();
    let mut args = vec![
        "call",
        "--method",
        "tools/list",
        "--capture",
        cap.to_str().unwrap(),
        "--",
    ];
    let server = hostile_args("interleave", &["--count", &count]);
    args.extend(server.iter().map(String::as_str));
    run_bin(&args, Duration::from_secs(60))
}

/// Runs the binary to its end like [`run_bin`], and the most memory it held
/// (VmHWM, in KiB, sampled while it ran: the high-water mark only grows).
pub(crate) fn run_bin_peak(args: &[&str], within: Duration) -> (Output, u64) {
    let child = crate::support::mcpscope_command()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running mcpscope");
    let status = format!("/proc/{}/status", child.id());
    let peak = Arc::new(Mutex::new(0u64));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (p, s) = (peak.clone(), stop.clone());
    let sampler = std::thread::spawn(move || {
        while !s.load(std::sync::atomic::Ordering::SeqCst) {
            if let Ok(text) = std::fs::read_to_string(&status)
                && let Some(kb) = text
                    .lines()
                    .find_map(|l| l.strip_prefix("VmHWM:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            {
                let mut p = p.lock().unwrap();
                *p = (*p).max(kb);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    let out = wait_output(child, within, &format!("mcpscope {}", args.join(" ")));
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    sampler.join().unwrap();
    let kb = *peak.lock().unwrap();
    (out, kb)
}
