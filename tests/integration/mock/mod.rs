//! `mcpscope mock` over stdio and Streamable HTTP: sessions recorded from real servers with
//! `mcpscope call --capture`, served again to real clients (the Python and
//! TypeScript SDKs, mcpscope's own `call`), whose results must be the
//! recorded ones; matching, server-initiated traffic, `--check`, bad input.

use crate::support::*;
use mcpscope_core::transport::process::ServerSpec;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

mod auth;
mod fallback;
mod interop;
mod over_http;
mod stdio;

const HELLO: &str = "hello through mcpscope";

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn python() -> String {
    need(repo().join("tests/peers/.venv/bin/python")).display().to_string()
}

fn mcpscope(args: &[&str]) -> Output {
    crate::support::mcpscope_command()
        .args(args)
        .output()
        .expect("running mcpscope")
}

/// `mcpscope call ARGS --capture CAPTURE -- SERVER`: its stdout (the result).
fn record(capture: &Path, args: &[&str], server: &ServerSpec) -> String {
    let mut call: Vec<&str> = vec!["call"];
    call.extend(args);
    call.extend(["--capture", capture.to_str().unwrap(), "--", &server.program]);
    call.extend(server.args.iter().map(String::as_str));
    let out = mcpscope(&call);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
}

/// `mcpscope call ARGS -- mcpscope mock CAPTURE`: its stdout.
fn call_the_mock(capture: &Path, args: &[&str]) -> String {
    let mut call: Vec<&str> = vec!["call"];
    call.extend(args);
    let bin = bin();
    call.extend(["--", bin.to_str().unwrap(), "mock", capture.to_str().unwrap()]);
    let out = mcpscope(&call);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
}

fn py_echo_capture(dir: &Path) -> PathBuf {
    let cap = dir.join("py.jsonl");
    let arg = format!("message={HELLO}");
    record(&cap, &["--tool-name", "echo", "--tool-arg", &arg], &py_server());
    cap
}

fn run_client(program: &str, args: &[String]) -> Value {
    let out = Command::new(program).args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)))
}

fn client_args(script: &str, server: &[String]) -> Vec<String> {
    let mut a = vec![repo().join(script).display().to_string(), "stdio".into()];
    a.extend(server.iter().cloned());
    a
}

/// server-everything's long-running operation, with progress: initialize,
/// tools/list (answered after a list_changed), tools/call with 3 progress notifications.
fn everything_progress_capture(dir: &Path) -> PathBuf {
    let cap = dir.join("everything.jsonl");
    let params = r#"{"name":"trigger-long-running-operation","arguments":{"duration":1,"steps":3},"_meta":{"progressToken":"recorded"}}"#;
    record(&cap, &["--method", "tools/call", "--params", params], &everything());
    cap
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

const LONG_CALL: &str = r#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"arguments":{"steps":3,"duration":1},"name":"trigger-long-running-operation","_meta":{"progressToken":"live"}}}"#;

// ---- Streamable HTTP: `mcpscope mock CAPTURE --listen 127.0.0.1:0` ----

/// A mock serving over HTTP, killed when dropped; its stderr is kept.
struct HttpMock {
    child: std::process::Child,
    /// The endpoint, from the line the mock prints once it listens.
    url: String,
    /// `127.0.0.1:PORT`.
    addr: String,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
}

impl HttpMock {
    fn start(args: &[&str]) -> HttpMock {
        use std::io::BufRead;
        let mut child = crate::support::mcpscope_command()
            .arg("mock")
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
        let mut seen = String::new();
        let url = loop {
            let mut line = String::new();
            assert!(
                err.read_line(&mut line).unwrap() > 0,
                "the mock ended before listening: {seen}"
            );
            seen.push_str(&line);
            if line.starts_with("mcpscope mock: serving ")
                && let Some((_, url)) = line.trim_end().rsplit_once(" at ")
                && url.starts_with("http://")
            {
                break url.to_owned();
            }
        };
        let addr = url["http://".len()..].split('/').next().unwrap().to_owned();
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(seen));
        let kept = stderr.clone();
        // Drained all along, so the mock never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut line = String::new();
            while err.read_line(&mut line).is_ok_and(|n| n > 0) {
                kept.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        HttpMock {
            child,
            url,
            addr,
            stderr,
        }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for HttpMock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP exchange on its own connection: (status, lower-cased head, body).
fn http(addr: &str, method: &str, headers: &[(&str, &str)], body: &str) -> (u16, String, String) {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut req = format!("{method} /mcp HTTP/1.1\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!(
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    s.write_all(req.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, head.to_ascii_lowercase(), body.to_owned())
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(str::trim)
}

/// `mcpscope call ARGS --server-url URL`: its stdout.
fn call_over_http(url: &str, args: &[&str]) -> String {
    let mut call: Vec<&str> = vec!["call", "--server-url", url];
    call.extend(args);
    let out = mcpscope(&call);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
}
