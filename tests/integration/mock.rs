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

const HELLO: &str = "hello through mcpscope";

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn python() -> String {
    need(repo().join("tests/peers/.venv/bin/python")).display().to_string()
}

fn mcpscope(args: &[&str]) -> Output {
    Command::new(bin()).args(args).output().expect("running mcpscope")
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

/// The mock fed these lines (then stdin closed): (stdout lines as JSON, stderr, status).
fn mock_io(args: &[&str], lines: &[&str]) -> (Vec<Value>, String, Option<i32>) {
    let mut child = Command::new(bin())
        .arg("mock")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for l in lines {
        writeln!(stdin, "{l}").unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stdout = text(&out.stdout);
    assert!(stdout.is_empty() || stdout.ends_with('\n'));
    let values = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not one JSON per line: {l}: {e}")))
        .collect();
    (values, text(&out.stderr), out.status.code())
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

#[test]
fn python_and_typescript_sdk_clients_get_the_recorded_session_from_the_mock() {
    let dir = tempfile::tempdir().unwrap();
    let cap = py_echo_capture(dir.path());
    let before = std::fs::read(&cap).unwrap();
    let live = py_server();
    let live: Vec<String> = std::iter::once(live.program.clone()).chain(live.args.clone()).collect();
    let mocked = vec![bin().display().to_string(), "mock".into(), cap.display().to_string()];
    for (program, script) in [
        (python(), "tests/clients/py_client.py"),
        ("node".to_string(), "tests/clients/ts_client.mjs"),
    ] {
        let real = run_client(&program, &client_args(script, &live));
        let served = run_client(&program, &client_args(script, &mocked));
        assert_eq!(served, real, "{script}");
        assert_eq!(served["echo"]["content"][0]["text"], HELLO);
    }
    assert_eq!(std::fs::read(&cap).unwrap(), before, "the capture is never modified");
}

#[test]
fn mcpscope_call_against_the_mock_gets_the_recorded_result_in_both_eras() {
    let dir = tempfile::tempdir().unwrap();
    let legacy = dir.path().join("legacy.jsonl");
    let args = ["--tool-name", "add", "--tool-arg", "a=2", "--tool-arg", "b=3"];
    let recorded = record(&legacy, &args, &py_server());
    assert_eq!(call_the_mock(&legacy, &args), recorded);

    let modern = dir.path().join("modern.jsonl");
    let args = [
        "--era",
        "modern",
        "--tool-name",
        "add",
        "--tool-arg",
        "a=2",
        "--tool-arg",
        "b=3",
    ];
    let recorded = record(&modern, &args, &py_modern_server());
    assert!(recorded.contains('5'), "{recorded}");
    assert_eq!(call_the_mock(&modern, &args), recorded);
    let check = mcpscope(&["mock", "--check", modern.to_str().unwrap()]);
    let report = text(&check.stdout);
    assert_eq!(check.status.code(), Some(0), "{report}");
    assert!(
        report.contains("modern era") && report.contains("server/discover"),
        "{report}"
    );
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

#[test]
fn progress_is_replayed_before_the_answer_with_the_live_token_and_recorded_timing() {
    let dir = tempfile::tempdir().unwrap();
    let cap = everything_progress_capture(dir.path());
    let cap_s = cap.to_str().unwrap();
    let (out, err, code) = mock_io(&[cap_s], &[INIT, LONG_CALL]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.len(), 5, "{out:?}");
    assert_eq!(out[0]["id"], "i");
    for p in &out[1..4] {
        assert_eq!(p["method"], "notifications/progress");
        assert_eq!(p["params"]["progressToken"], "live");
    }
    assert_eq!(out[4]["id"], 42);
    assert!(
        out[4]["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("completed")
    );

    // Recorded timing: the server took about a second over its three steps.
    let started = Instant::now();
    let (out, err, _) = mock_io(&["--timing", "recorded", cap_s], &[INIT, LONG_CALL]);
    let recorded = started.elapsed();
    assert_eq!(out.len(), 5, "{err}");
    assert!(recorded >= Duration::from_millis(900), "{recorded:?}");
    let started = Instant::now();
    mock_io(&["--timing", "recorded", "--speed", "4", cap_s], &[INIT, LONG_CALL]);
    let faster = started.elapsed();
    assert!(faster < recorded, "{faster:?} vs {recorded:?}");
    eprintln!("recorded timing: {recorded:?}; at --speed 4: {faster:?}");
}

#[test]
fn unmatched_and_repeated_requests() {
    let dir = tempfile::tempdir().unwrap();
    let cap = py_echo_capture(dir.path());
    let cap_s = cap.to_str().unwrap();
    let echo = |id: u32, msg: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"message":"{msg}"}}}}}}"#
        )
    };
    let (a, b, c) = (echo(1, HELLO), echo(2, HELLO), echo(3, "bye"));
    let lines = [
        INIT,
        a.as_str(),
        b.as_str(),
        c.as_str(),
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/lst"}"#,
    ];
    let (out, err, code) = mock_io(&[cap_s], &lines);
    assert_eq!(code, Some(0));
    assert_eq!(out[1]["result"], out[2]["result"], "the last answer again");
    assert_eq!(out[3]["id"], 3);
    let msg = out[3]["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("bye") && msg.contains(HELLO),
        "names what was asked and the nearest: {msg}"
    );
    let msg = out[4]["error"]["message"].as_str().unwrap();
    assert_eq!(out[4]["error"]["code"], -32601);
    assert!(msg.contains("tools/lst") && msg.contains("tools/list"), "{msg}");
    assert_eq!(
        err.lines().filter(|l| l.contains("no recorded answer")).count(),
        2,
        "{err}"
    );

    let (out, _, _) = mock_io(&["--exhausted", "error", cap_s], &lines[..3]);
    assert!(out[1]["result"].is_object());
    assert!(
        out[2]["error"]["message"].as_str().unwrap().contains("exhausted"),
        "{:?}",
        out[2]
    );

    let (out, _, _) = mock_io(&["--only", "tools/list", cap_s], &lines[..2]);
    assert!(out[0]["result"].is_object(), "the handshake is always served");
    assert!(out[1]["error"].is_object(), "{:?}", out[1]);
    let (out, _, _) = mock_io(&["--only", r#"method == "tools/call""#, cap_s], &lines[..2]);
    assert!(out[1]["result"].is_object(), "{:?}", out[1]);
    // A time range of the capture: the session lasted well under 1000 s.
    let (out, _, _) = mock_io(&["--only", "time >= 0s and time < 1000s", cap_s], &lines[..2]);
    assert!(out[1]["result"].is_object(), "{:?}", out[1]);
    let (out, _, _) = mock_io(&["--only", "time >= 1000s", cap_s], &lines[..2]);
    assert!(out[0]["result"].is_object(), "the handshake is always served");
    assert!(out[1]["error"].is_object(), "{:?}", out[1]);

    let (out, _, _) = mock_io(&["--match", "sequence", cap_s], &[INIT, a.as_str()]);
    assert!(out[1]["error"].is_object(), "tools/list comes second in the recording");
}

#[test]
fn sessions_of_an_appended_capture() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("two.jsonl");
    record(
        &cap,
        &["--tool-name", "echo", "--tool-arg", "message=first"],
        &py_server(),
    );
    record(
        &cap,
        &["--tool-name", "echo", "--tool-arg", "message=second"],
        &py_server(),
    );
    let cap_s = cap.to_str().unwrap();
    let ask = |m: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"message":"{m}"}}}}}}"#
        )
    };
    let (out, _, _) = mock_io(&[cap_s], &[&ask("second")]);
    assert!(out[0]["result"].is_object(), "the last session by default");
    let (out, _, _) = mock_io(&["--session", "1", cap_s], &[&ask("first")]);
    assert!(out[0]["result"].is_object());
    let (_, err, code) = mock_io(&["--session", "3", cap_s], &[]);
    assert_eq!(code, Some(64), "{err}");
}

#[test]
fn check_says_what_can_be_served_and_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let cap = everything_progress_capture(dir.path());
    let out = mcpscope(&["mock", "--check", cap.to_str().unwrap()]);
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert!(report.contains("can be served: 3 exchange(s)"), "{report}");
    assert!(
        report.contains("notifications/progress") && report.contains("legacy era"),
        "{report}"
    );

    // Only a request that was never answered, and a line that is not JSON.
    let header = std::fs::read_to_string(&cap)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_owned();
    let lonely = dir.path().join("lonely.jsonl");
    std::fs::write(
        &lonely,
        format!(
            "{header}\n{}\n{}\n",
            r#"{"t_us":1,"seq":0,"dir":"out","raw":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}","eol":"lf"}"#,
            r#"{"t_us":2,"seq":1,"dir":"in","raw":"starting up...","eol":"lf"}"#
        ),
    )
    .unwrap();
    let out = mcpscope(&["mock", "--check", lonely.to_str().unwrap()]);
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(
        report.contains("never answered") && report.contains("not JSON"),
        "{report}"
    );
    let (_, err, code) = mock_io(&[lonely.to_str().unwrap()], &[]);
    assert_eq!(code, Some(4), "nothing to serve: {err}");
    assert!(err.contains("nothing can be served"), "{err}");
}

#[test]
fn bad_captures_are_refused_with_status_4_and_never_modified() {
    let dir = tempfile::tempdir().unwrap();
    let good = py_echo_capture(dir.path());
    let whole = std::fs::read_to_string(&good).unwrap();
    let header = whole.lines().next().unwrap();
    let cases = [
        ("empty.jsonl", String::new()),
        ("header-only.jsonl", format!("{header}\n")),
        ("foreign.jsonl", "{\"type\":\"log\",\"msg\":\"hello\"}\n".to_owned()),
        ("truncated.jsonl", header[..header.len() / 2].to_owned()),
        ("binary.jsonl", "\u{0}\u{1}garbage".to_owned()),
    ];
    for (name, content) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, &content).unwrap();
        for check in [false, true] {
            let mut args = vec![];
            if check {
                args.push("--check");
            }
            args.push(path.to_str().unwrap());
            let (out, err, code) = mock_io(&args, &[INIT]);
            assert_eq!(code, Some(4), "{name}: {err}");
            assert!(out.is_empty(), "{name}");
            assert_eq!(err.lines().count(), 1, "one clear line: {err}");
            assert!(err.contains(name), "{err}");
        }
        assert_eq!(std::fs::read_to_string(&path).unwrap(), content, "{name} unchanged");
    }
    let (_, err, code) = mock_io(&[dir.path().join("missing.jsonl").to_str().unwrap()], &[]);
    assert_eq!(code, Some(4), "{err}");

    // A capture cut short mid-line (a crash) serves what is whole, with a warning.
    let cut = dir.path().join("cut.jsonl");
    std::fs::write(&cut, &whole[..whole.len() - 20]).unwrap();
    let (out, err, code) = mock_io(&[cut.to_str().unwrap()], &[INIT]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("skipped"), "{err}");
    assert!(out[0]["result"].is_object());
}

#[test]
fn closed_stdin_or_stdout_ends_the_mock_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let cap = py_echo_capture(dir.path());
    let (out, err, code) = mock_io(&[cap.to_str().unwrap()], &[]);
    assert_eq!((out.len(), code), (0, Some(0)), "{err}");

    let mut child = Command::new(bin())
        .args(["mock", cap.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().unwrap();
    // The first answer finds stdout closed; the mock stops without reading more.
    let _ = writeln!(stdin, "{INIT}");
    let _ = writeln!(stdin, "{INIT}");
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "the mock did not stop");
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(stdin);
    assert_eq!(status.code(), Some(0));
}

#[test]
fn server_requests_are_replayed_with_fresh_ids_and_the_client_answers_compared() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("sampling.jsonl");
    let args = [
        "--sample-reply",
        "the model says hi",
        "--root",
        "file:///tmp",
        "--tool-name",
        "trigger-sampling-request",
        "--tool-args",
        r#"{"prompt":"say hi","maxTokens":20}"#,
    ];
    let recorded = record(&cap, &args, &everything());
    assert!(recorded.contains("the model says hi"), "{recorded}");
    // mcpscope's own client answers the replayed sampling request as it did when recording.
    assert_eq!(call_the_mock(&cap, &args), recorded);

    let call = r#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"trigger-sampling-request","arguments":{"prompt":"say hi","maxTokens":20}}}"#;
    let other = r#"{"jsonrpc":"2.0","id":1,"result":{"model":"other","role":"assistant","content":{"type":"text","text":"no"}}}"#;
    let (out, err, code) = mock_io(&[cap.to_str().unwrap()], &[INIT, call, other]);
    assert_eq!(code, Some(0), "{err}");
    let methods: Vec<String> = out
        .iter()
        .map(|v| v["method"].as_str().map_or(format!("answer {}", v["id"]), String::from))
        .collect();
    assert_eq!(
        methods,
        [r#"answer "i""#, "sampling/createMessage", "answer 42", "roots/list"],
        "{out:?}"
    );
    assert_eq!(out[1]["id"], 1, "fresh ids for the server's requests");
    assert_eq!(out[3]["id"], 2);
    assert!(
        err.lines()
            .any(|l| l.contains("answered sampling/createMessage differently")),
        "{err}"
    );
}

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
        let mut child = Command::new(bin())
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

/// The JSON messages of an SSE body, one per `data:` line.
fn sse_messages(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| serde_json::from_str(d.trim()).unwrap())
        .collect()
}

/// `mcpscope call ARGS --server-url URL`: its stdout.
fn call_over_http(url: &str, args: &[&str]) -> String {
    let mut call: Vec<&str> = vec!["call", "--server-url", url];
    call.extend(args);
    let out = mcpscope(&call);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn http_mock_gives_mcpscope_call_the_recorded_result_in_both_eras() {
    let dir = tempfile::tempdir().unwrap();
    let legacy = dir.path().join("legacy.jsonl");
    let args = ["--tool-name", "add", "--tool-arg", "a=2", "--tool-arg", "b=3"];
    let recorded = record(&legacy, &args, &py_server());
    let mock = HttpMock::start(&[legacy.to_str().unwrap()]);
    assert!(mock.url.ends_with("/mcp"), "{}", mock.url);
    assert_eq!(call_over_http(&mock.url, &args), recorded);
    // A second client gets a session of its own, from the recording's start.
    assert_eq!(call_over_http(&mock.url, &args), recorded);

    let modern = dir.path().join("modern.jsonl");
    let args = [
        "--era",
        "modern",
        "--tool-name",
        "add",
        "--tool-arg",
        "a=2",
        "--tool-arg",
        "b=3",
    ];
    let recorded = record(&modern, &args, &py_modern_server());
    assert!(recorded.contains('5'), "{recorded}");
    let mock = HttpMock::start(&[modern.to_str().unwrap()]);
    assert_eq!(call_over_http(&mock.url, &args), recorded, "{}", mock.stderr());
}

#[test]
fn python_and_typescript_sdk_clients_complete_a_session_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let cap = py_echo_capture(dir.path());
    let before = std::fs::read(&cap).unwrap();
    let live = py_server();
    let live: Vec<String> = std::iter::once(live.program.clone()).chain(live.args.clone()).collect();
    let mock = HttpMock::start(&[cap.to_str().unwrap()]);
    for (program, script) in [
        (python(), "tests/clients/py_client.py"),
        ("node".to_string(), "tests/clients/ts_client.mjs"),
    ] {
        let real = run_client(&program, &client_args(script, &live));
        let path = repo().join(script).display().to_string();
        let served = run_client(&program, &[path, "http".into(), mock.url.clone()]);
        assert_eq!(served, real, "{script}: {}", mock.stderr());
        assert_eq!(served["echo"]["content"][0]["text"], HELLO);
    }
    let err = mock.stderr();
    assert!(!err.contains("no recorded answer"), "{err}");
    assert!(!err.contains("refused"), "{err}");
    assert_eq!(std::fs::read(&cap).unwrap(), before, "the capture is never modified");
}

#[test]
fn http_mock_streams_progress_and_keeps_the_session_and_local_rules() {
    let dir = tempfile::tempdir().unwrap();
    let cap = everything_progress_capture(dir.path());
    let mock = HttpMock::start(&[cap.to_str().unwrap()]);
    let a = mock.addr.as_str();

    // initialize: JSON, with a session id.
    let (status, head, body) = http(a, "POST", &[], INIT);
    assert_eq!(status, 200, "{head}{body}");
    assert!(
        header(&head, "content-type").unwrap().starts_with("application/json"),
        "{head}"
    );
    let sid = header(&head, "mcp-session-id").expect("a session id").to_owned();
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["id"], "i");
    let with_sid = [("Mcp-Session-Id", sid.as_str())];
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert_eq!(http(a, "POST", &with_sid, initialized).0, 202);

    // Progress before the answer: an SSE stream, one event per message.
    let (status, head, body) = http(a, "POST", &with_sid, LONG_CALL);
    assert_eq!(status, 200, "{head}{body}");
    assert!(
        header(&head, "content-type").unwrap().starts_with("text/event-stream"),
        "{head}"
    );
    let events = sse_messages(&body);
    assert_eq!(events.len(), 4, "{body}");
    for p in &events[..3] {
        assert_eq!(p["method"], "notifications/progress");
        assert_eq!(p["params"]["progressToken"], "live");
    }
    assert_eq!(events[3]["id"], 42);
    assert!(
        events[3]["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("completed")
    );

    // Session rules: none is 400, an unknown one 404, DELETE ends it.
    let list = r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#;
    let (status, _, body) = http(a, "POST", &[], list);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("Mcp-Session-Id"), "{body}");
    assert_eq!(http(a, "POST", &[("Mcp-Session-Id", "nope")], list).0, 404);
    assert_eq!(http(a, "GET", &[], "").0, 405, "no stream without a session");
    assert_eq!(http(a, "DELETE", &with_sid, "").0, 200);
    assert_eq!(http(a, "POST", &with_sid, list).0, 404, "the session ended");

    // DNS rebinding: a non-local Host or Origin is 403; two Hosts are 400.
    let (status, _, body) = http(a, "POST", &[("Host", "evil.example")], INIT);
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("not local"), "{body}");
    assert_eq!(http(a, "POST", &[("Origin", "https://evil.example")], INIT).0, 403);
    let two_hosts = [("Host", "127.0.0.1"), ("Host", "localhost")];
    assert_eq!(http(a, "POST", &two_hosts, INIT).0, 400);
    assert_eq!(http(a, "POST", &[], "not json").0, 400);
    let err = mock.stderr();
    assert!(err.contains("refused POST /mcp: Host \"evil.example\""), "{err}");
}

#[test]
fn http_mock_refuses_a_port_in_use_and_a_non_loopback_address() {
    let dir = tempfile::tempdir().unwrap();
    let cap = py_echo_capture(dir.path());
    let cap_s = cap.to_str().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = mcpscope(&["mock", cap_s, "--listen", &addr]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(64), "{err}");
    assert!(err.contains(&addr) && err.contains("already in use"), "{err}");
    assert_eq!(err.lines().count(), 1, "one clear line: {err}");

    let out = mcpscope(&["mock", cap_s, "--listen", "0.0.0.0:0"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(64), "{err}");
    assert!(
        err.contains("not a loopback address") && err.contains("--listen-any"),
        "{err}"
    );
}

#[test]
fn http_mock_replays_server_requests_on_the_stream_and_answers_as_recorded() {
    let dir = tempfile::tempdir().unwrap();
    // Sampling during the call, roots/list after it: mcpscope's client
    // answers both over HTTP as it did over stdio.
    let cap = dir.path().join("sampling.jsonl");
    let args = [
        "--sample-reply",
        "the model says hi",
        "--root",
        "file:///tmp",
        "--tool-name",
        "trigger-sampling-request",
        "--tool-args",
        r#"{"prompt":"say hi","maxTokens":20}"#,
    ];
    let recorded = record(&cap, &args, &everything());
    let mock = HttpMock::start(&[cap.to_str().unwrap()]);
    assert_eq!(call_over_http(&mock.url, &args), recorded);
    let err = mock.stderr();
    assert!(!err.contains("did not answer") && !err.contains("differently"), "{err}");
    drop(mock);

    // A capture recorded over Streamable HTTP (through a first mock) keeps
    // which answers came as SSE: served again, such an answer is a stream
    // even when there is no progress to send before it.
    let progress = everything_progress_capture(dir.path());
    let first = HttpMock::start(&[progress.to_str().unwrap()]);
    let over_http = dir.path().join("over-http.jsonl");
    let params = r#"{"name":"trigger-long-running-operation","arguments":{"duration":1,"steps":3},"_meta":{"progressToken":"p"}}"#;
    let cap_s = over_http.to_str().unwrap();
    call_over_http(
        &first.url,
        &["--method", "tools/call", "--params", params, "--capture", cap_s],
    );
    drop(first);
    let second = HttpMock::start(&[cap_s]);
    let a = second.addr.as_str();
    let (_, head, _) = http(a, "POST", &[], INIT);
    let sid = header(&head, "mcp-session-id").unwrap().to_owned();
    let no_token = r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"trigger-long-running-operation","arguments":{"duration":1,"steps":3}}}"#;
    let (status, head, body) = http(a, "POST", &[("Mcp-Session-Id", &sid)], no_token);
    assert_eq!(status, 200, "{body}");
    assert!(
        header(&head, "content-type").unwrap().starts_with("text/event-stream"),
        "{head}"
    );
    let events = sse_messages(&body);
    assert_eq!(events.len(), 1, "no progress without a token, the answer alone: {body}");
    assert_eq!(events[0]["id"], 9);
}

/// Record on miss: a request the capture never answered goes to the real
/// server given after `--`, the client gets its answer, and the new exchange
/// is recorded in CAPTURE.fallback.jsonl.
#[test]
fn a_miss_goes_to_the_fallback_server_and_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("lists.jsonl");
    let server = py_server();
    record(&cap, &["--method", "tools/list"], &server);
    let bin = bin().display().to_string();
    let mut args = vec![
        "call",
        "--tool-name",
        "echo",
        "--tool-arg",
        "message=from the real server",
        "--",
    ];
    args.extend([
        bin.as_str(),
        "mock",
        cap.to_str().unwrap(),
        "--",
        server.program.as_str(),
    ]);
    args.extend(server.args.iter().map(String::as_str));
    let out = mcpscope(&args);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("from the real server"), "{stdout}");
    let misses = std::fs::read_to_string(dir.path().join("lists.jsonl.fallback.jsonl")).unwrap();
    assert!(
        misses.contains("from the real server") && misses.contains("tools/call"),
        "the fallback exchange is recorded"
    );
    // Without a fallback the same call is refused, naming the nearest recording.
    let mut args = vec!["call", "--tool-name", "echo", "--tool-arg", "message=x", "--"];
    args.extend([bin.as_str(), "mock", cap.to_str().unwrap()]);
    let out = mcpscope(&args);
    assert_ne!(out.status.code(), Some(0));
}

/// Over HTTP too: every session's misses go to one fallback session, recorded
/// in one capture, and a mock stopped with SIGTERM says how many went there.
#[test]
fn over_http_a_miss_goes_to_the_fallback_server_and_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("lists.jsonl");
    let server = py_server();
    record(&cap, &["--method", "tools/list"], &server);
    let misses = dir.path().join("misses.jsonl");
    let mut args = vec![
        cap.to_str().unwrap(),
        "--fallback-capture",
        misses.to_str().unwrap(),
        "--",
        server.program.as_str(),
    ];
    args.extend(server.args.iter().map(String::as_str));
    let mut mock = HttpMock::start(&args);
    let echo = ["--tool-name", "echo", "--tool-arg", "message=from the real server"];
    let out = call_over_http(&mock.url, &echo);
    assert!(out.contains("from the real server"), "{out}");
    // A second client's session misses too, and is answered by the same fallback.
    let out = call_over_http(
        &mock.url,
        &["--tool-name", "add", "--tool-arg", "a=2", "--tool-arg", "b=40"],
    );
    assert!(out.contains("42"), "{out}");
    // What was recorded is still served from the recording.
    let listed = call_over_http(&mock.url, &["--method", "tools/list"]);
    assert!(listed.contains("echo"), "{listed}");

    unsafe { libc::kill(mock.child.id() as i32, libc::SIGTERM) };
    // Stopped by a signal, as every subcommand that runs a server: 128 + 15.
    let status = mock.child.wait().unwrap();
    assert_eq!(status.code(), Some(143), "{}", mock.stderr());
    let deadline = Instant::now() + Duration::from_secs(10);
    while !mock.stderr().contains("went to the fallback server") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let stderr = mock.stderr();
    assert!(stderr.contains("2 request(s) went to the fallback server"), "{stderr}");
    let recorded = std::fs::read_to_string(&misses).unwrap();
    assert!(
        recorded.contains("from the real server") && recorded.matches("\"method\":\"tools/call\"").count() == 2,
        "both misses are in the fallback's capture: {recorded}"
    );
}

/// `--auth`: the endpoint wants a token, and the mock's own authorization
/// server hands one out; `mcpscope call` and the Python SDK's OAuth client
/// each sign in from scratch (discovery, registration, PKCE, token) and then
/// get the recorded answers. Without signing in: 401, exit 3.
#[test]
fn with_auth_clients_sign_in_to_the_mocks_own_authorization_server() {
    use mcpscope_core::protocol::auth::Step;
    use mcpscope_core::record::capture;
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("add.jsonl");
    let args = ["--tool-name", "add", "--tool-arg", "a=2", "--tool-arg", "b=3"];
    let recorded = record(&cap, &args, &py_server());
    let mock = HttpMock::start(&[cap.to_str().unwrap(), "--auth"]);

    let mut refused = vec!["call", "--server-url", &mock.url, "--oauth", "off"];
    refused.extend(args);
    let out = mcpscope(&refused);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("401"), "{}", text(&out.stderr));

    let signed_in = dir.path().join("signed-in.jsonl");
    let mut call = vec![
        "call",
        "--server-url",
        &mock.url,
        "--auth-non-interactive",
        "--capture",
        signed_in.to_str().unwrap(),
    ];
    call.extend(args);
    let out = mcpscope(&call);
    assert_eq!(out.status.code(), Some(0), "{}\n{}", text(&out.stderr), mock.stderr());
    assert_eq!(text(&out.stdout), recorded);
    let steps = auth_steps(&capture::load(&signed_in).unwrap().events);
    assert_eq!(
        steps,
        [
            Step::Challenge,
            Step::ResourceMetadata,
            Step::ServerMetadata,
            Step::Registration,
            Step::Authorize,
            Step::Callback,
            Step::Token,
            Step::Retry,
        ]
    );

    let client = repo().join("tests/clients/py_oauth_client.py");
    let out = Command::new(python())
        .args([client.to_str().unwrap(), &mock.url, "add", r#"{"a":2,"b":3}"#])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", text(&out.stderr), mock.stderr());
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(seen["browser"], 1, "{seen}");
    assert_eq!(seen["result"]["structuredContent"]["result"], 5, "{seen}");
    assert!(seen["tools"].as_array().unwrap().iter().any(|t| t == "add"), "{seen}");

    // A client that reaches the mock as `localhost` signs in too: the
    // metadata names the resource as it uses it (the SDK checks).
    let as_localhost = mock.url.replace("127.0.0.1", "localhost");
    let out = Command::new(python())
        .args([client.to_str().unwrap(), &as_localhost, "add", r#"{"a":2,"b":3}"#])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", text(&out.stderr), mock.stderr());

    let log = mock.stderr();
    assert_eq!(log.matches("auth: issued an access token").count(), 3, "{log}");
    assert!(
        !log.contains("mock-access-") && !log.contains("mock-code-"),
        "no secret on stderr: {log}"
    );
}

/// The official Inspector's CLI (a real client of its own, one method per
/// run) against the mock, over stdio and over Streamable HTTP: each result
/// is the recorded one.
#[test]
fn the_inspector_cli_gets_the_recorded_results_over_stdio_and_http() {
    let inspector =
        repo().join("tests/peers/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    let inspector = need(inspector).display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let server = everything();
    let sum = dir.path().join("sum.jsonl");
    let recorded_sum: Value = serde_json::from_str(&record(
        &sum,
        &["--tool-name", "get-sum", "--tool-arg", "a=2", "--tool-arg", "b=40"],
        &server,
    ))
    .unwrap();
    let prompt = dir.path().join("prompt.jsonl");
    let recorded_prompt: Value =
        serde_json::from_str(&record(&prompt, &["--prompt-name", "simple-prompt"], &server)).unwrap();
    // `-q --format json`: one line, {"result": …}.
    let inspect = |target: &[&str], method: &[&str]| -> Value {
        let out = Command::new("node")
            .args([inspector.as_str(), "--cli", "-q", "--format", "json"])
            .args(target)
            .args(method)
            .output()
            .unwrap();
        assert!(out.status.success(), "the Inspector CLI: {}", text(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["result"].clone()
    };
    let bin = bin().display().to_string();
    let call_sum = [
        "--method",
        "tools/call",
        "--tool-name",
        "get-sum",
        "--tool-arg",
        "a=2",
        "b=40",
    ];
    let get_prompt = ["--method", "prompts/get", "--prompt-name", "simple-prompt"];
    assert_eq!(inspect(&[&bin, "mock", sum.to_str().unwrap()], &call_sum), recorded_sum);
    assert_eq!(
        inspect(&[&bin, "mock", prompt.to_str().unwrap()], &get_prompt),
        recorded_prompt
    );

    let mock = HttpMock::start(&[sum.to_str().unwrap()]);
    assert_eq!(inspect(&[&mock.url, "--transport", "http"], &call_sum), recorded_sum);
}

/// 2026-07-28 with real clients: the Python SDK's `Client` (it probes
/// `server/discover`) and the TypeScript SDK v2's (`@modelcontextprotocol/client`,
/// pinned to 2026-07-28) each record a session with the real server through
/// `mcpscope proxy`, which the mock serves back over stdio and (stateless, no
/// session) over Streamable HTTP with the same results; the
/// `subscriptions/listen` stream stays open and brings the list_changed that
/// followed a call.
#[test]
fn sdk_clients_replay_a_2026_session_over_stdio_and_http() {
    let dir = tempfile::tempdir().unwrap();
    let server = py_modern_server();
    for (program, script) in [
        (python(), "tests/clients/py_modern_client.py"),
        ("node".to_string(), "tests/clients/ts_modern_client.mjs"),
    ] {
        let cap = dir.path().join(format!("{}.jsonl", script.rsplit('/').next().unwrap()));
        let client = repo().join(script).display().to_string();
        let mut through_proxy = vec![
            client.clone(),
            "stdio".into(),
            bin().display().to_string(),
            "proxy".into(),
            "--capture".into(),
            cap.display().to_string(),
            "--".into(),
            server.program.clone(),
        ];
        through_proxy.extend(server.args.iter().cloned());
        let real = run_client(&program, &through_proxy);
        assert_eq!(real["version"], "2026-07-28", "{script}: {real}");
        assert_eq!(real["result"]["structuredContent"]["result"], 5, "{script}: {real}");
        // list_changed came on the listen stream, tagged with its id.
        assert_eq!(
            real["events"],
            serde_json::json!(["ToolsListChanged"]),
            "{script}: {real}"
        );

        let mocked = [
            client.clone(),
            "stdio".into(),
            bin().display().to_string(),
            "mock".into(),
            cap.display().to_string(),
        ];
        assert_eq!(run_client(&program, &mocked), real, "{script} over stdio");

        let mock = HttpMock::start(&[cap.to_str().unwrap()]);
        let served = run_client(&program, &[client, "http".into(), mock.url.clone()]);
        assert_eq!(served, real, "{script} over HTTP: {}", mock.stderr());
        assert!(!mock.stderr().contains("no recorded answer"), "{}", mock.stderr());
    }
}

/// A capture of the reverse proxy (`proxy --listen --upstream --capture`)
/// in front of server-everything over Streamable HTTP serves too: the mock's
/// answer to `mcpscope call` is the one the client got through the proxy.
#[test]
fn a_reverse_proxy_capture_is_served() {
    let upstream = crate::http::HttpServer::start("streamableHttp");
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("reverse.jsonl");
    let mut proxy = Command::new(bin())
        .args(["proxy", "--listen", "127.0.0.1:0", "--upstream"])
        .arg(upstream.url("/mcp"))
        .args(["--capture", cap.to_str().unwrap()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(proxy.stderr.take().unwrap());
    let addr = listening_addr(&mut err);
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    let args = ["--tool-name", "get-sum", "--tool-arg", "a=2", "--tool-arg", "b=40"];
    let through_proxy = call_over_http(&format!("http://{addr}/mcp"), &args);
    assert!(through_proxy.contains("42"), "{through_proxy}");
    unsafe { libc::kill(proxy.id() as i32, libc::SIGTERM) };
    proxy.wait().unwrap();

    assert_eq!(call_the_mock(&cap, &args), through_proxy);
    let mock = HttpMock::start(&[cap.to_str().unwrap()]);
    assert!(mock.url.ends_with("/mcp"), "the upstream's path: {}", mock.url);
    assert_eq!(call_over_http(&mock.url, &args), through_proxy);
}
