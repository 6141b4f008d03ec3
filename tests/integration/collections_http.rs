//! `mcpscope test` over Streamable HTTP, where its session runs on the
//! runner's own thread and POSTs a request there while nothing else is in
//! flight: JSON answers from the fast test server (no GET stream), SSE
//! answers and a GET stream from server-everything, and a request the
//! server never answers, which fails on its timeout and leaves the session
//! usable (a POST made inline must not wait for ever).

use crate::http::HttpServer;
use crate::support::*;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// Runs `mcpscope test` on a file holding `body`; its exit status, what it
/// said, and the JSON report. A run that does not end fails the test.
fn run(dir: &Path, body: &str, extra: &[&str]) -> (Option<i32>, String, Value) {
    let path = dir.join("over-http.mcp.yaml");
    std::fs::write(&path, body).unwrap();
    let report = dir.join("report.json");
    let _ = std::fs::remove_file(&report);
    let mut child = mcpscope_command()
        .arg("test")
        .arg(&path)
        .args(["--format", "json", "-o"])
        .arg(&report)
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("mcpscope test did not end");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let report = std::fs::read(&report)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    (out.status.code(), said, report)
}

fn verdicts(report: &Value) -> Vec<String> {
    report["files"][0]["steps"]
        .as_array()
        .map(|s| {
            s.iter()
                .map(|s| s["verdict"].as_str().unwrap_or("?").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn json_answers_without_a_get_stream_and_sse_answers_with_one() {
    let dir = tempfile::tempdir().unwrap();
    let fast = FastServer::start(&[]);
    let file = format!(
        r#"name: fast over http
servers:
  fast: {{url: "{}"}}
steps:
  - name: echo
    call: echo
    arguments: {{message: first}}
    capture:
      said: result.content[0].text
    assert:
      - 'result.content[0].text == "first"'
  - name: echo what was said
    call: echo
    arguments: {{message: "{{{{said}}}} again"}}
    assert:
      - 'result.content[0].text == "first again"'
  - name: a tool error
    call: fail
    assert:
      - 'result.isError == true'
  - name: a protocol error
    request: nope/nope
    assert:
      - 'error.code == -32601'
"#,
        fast.url
    );
    let (code, said, report) = run(dir.path(), &file, &[]);
    assert_eq!(code, Some(0), "{said}");
    assert_eq!(verdicts(&report), ["passed"; 4], "{report}");

    let everything = HttpServer::start("streamableHttp");
    let file = format!(
        r#"name: everything over http
servers:
  everything: {{url: "{}"}}
steps:
  - name: echo
    call: echo
    arguments: {{message: over sse}}
    assert:
      - 'result.content[0].text contains "over sse"'
  - name: a long operation
    call: trigger-long-running-operation
    arguments: {{duration: 1, steps: 2}}
    assert:
      - 'kind == "result"'
  - name: echo again
    call: echo
    arguments: {{message: after}}
    assert:
      - 'result.content[0].text contains "after"'
"#,
        everything.url("/mcp")
    );
    let (code, said, report) = run(dir.path(), &file, &[]);
    assert_eq!(code, Some(0), "{said}");
    assert_eq!(verdicts(&report), ["passed"; 3], "{report}");
}

#[test]
fn a_request_never_answered_fails_on_its_timeout_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = std::process::Command::new("python3");
    cmd.arg(repo().join("tests/servers/hostile_http.py"))
        .args(["--mode", "silent", "--on", "tools/call"]);
    let (child, port) = spawn_listening(cmd, "PORT ");
    let _server = KilledOnDrop(child);
    let file = format!(
        r#"name: silent
servers:
  silent: {{url: "http://127.0.0.1:{port}/mcp"}}
steps:
  - name: never answered
    request: tools/call
    params: {{name: echo, arguments: {{message: x}}}}
  - name: the session goes on
    request: ping
    assert:
      - 'kind == "result"'
"#
    );
    let (code, said, report) = run(dir.path(), &file, &["--timeout-ms", "1000"]);
    assert_eq!(code, Some(3), "an error, not a failed check: {said}");
    assert_eq!(verdicts(&report)[1], "passed", "{report}");
    let first = report["files"][0]["steps"][0].to_string();
    assert_ne!(verdicts(&report)[0], "passed", "{report}");
    assert!(first.contains("no response within 1000 ms"), "{first}");
}

/// A server in JSON-response mode that, while a call waits, asks the client
/// something over the GET stream: the call is not made on the session's
/// thread while that stream is open, so the question is answered and the
/// call completes (made inline, each would wait for the other).
#[test]
fn a_question_on_the_get_stream_is_answered_while_a_call_waits() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = std::process::Command::new("node");
    cmd.arg(repo().join("tests/servers/get_stream_asker.mjs"));
    let (child, url) = spawn_listening(cmd, "MCP_URL=");
    let _server = KilledOnDrop(child);
    let file = format!(
        r#"name: asked on the get stream
servers:
  asker: {{url: "{url}"}}
steps:
  - name: echo first
    call: echo
  - name: the server pings over its get stream before it answers
    call: ask-on-get
    assert:
      - 'result.content[0].text == "answered"'
"#
    );
    let (code, said, report) = run(dir.path(), &file, &["--timeout-ms", "10000"]);
    assert_eq!(code, Some(0), "{said}");
    assert_eq!(verdicts(&report), ["passed"; 2], "{report}");
}

/// Ctrl-C while a request waits on a silent server: the run ends at once,
/// and the server's session is still ended with a DELETE (the request was
/// interrupted through an agent of its own, not the session's).
#[cfg(unix)]
#[test]
fn a_stop_while_a_request_waits_ends_the_run_and_the_servers_session() {
    use std::io::BufRead as _;
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = std::process::Command::new("python3");
    cmd.arg(repo().join("tests/servers/hostile_http.py"))
        .args(["--mode", "silent", "--on", "tools/call"]);
    cmd.stdout(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    // What the server says, read on a thread of its own so that a line that
    // never comes fails the test instead of hanging it.
    let (tx, said) = std::sync::mpsc::channel();
    let out = std::io::BufReader::new(child.stdout.take().unwrap());
    std::thread::spawn(move || out.lines().map_while(Result::ok).try_for_each(|l| tx.send(l)));
    let _server = KilledOnDrop(child);
    let next = || said.recv_timeout(Duration::from_secs(30)).unwrap_or_default();
    let port = next().trim_start_matches("PORT ").to_owned();
    let path = dir.path().join("stop.mcp.yaml");
    std::fs::write(
        &path,
        format!(
            r#"name: stopped
servers:
  silent: {{url: "http://127.0.0.1:{port}/mcp"}}
steps:
  # Answered whole, one after another: the call after them is made on the
  # runner's thread.
  - name: listed
    request: tools/list
  - name: listed again
    request: tools/list
  - name: and again
    request: tools/list
  - name: never answered
    request: tools/call
    params: {{name: echo, arguments: {{message: x}}}}
"#
        ),
    )
    .unwrap();
    let mut run = mcpscope_command()
        .arg("test")
        .arg(&path)
        .args(["--timeout-ms", "60000"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The server holds the call: then the stop.
    assert_eq!(next(), "SILENT tools/call");
    unsafe { libc::kill(run.id() as i32, libc::SIGINT) };
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = run.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = run.kill();
            panic!("mcpscope test did not end after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(!status.success(), "{status:?}");
    assert_eq!(next(), "DELETE", "the session was ended");
}
