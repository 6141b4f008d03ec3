//! Hostile peers, round three: our listeners and load against hostile servers and clients: wrong ids, bursts, empty Host.
//! Each test fails without the fix it guards.

use crate::hostile::{run_bin, text};
use crate::support::KilledOnDrop;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// A Streamable HTTP server that answers every request with another id
/// (its own plus 1000); `after-handshake` answers `initialize` rightly
/// first; `sse` answers with an event stream instead of a JSON body.
const WRONG_ID_SERVER: &str = r#"
import json, socket, sys, threading
mode, body_kind = sys.argv[1], sys.argv[2]
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(64)
print(s.getsockname()[1], flush=True)
def serve(c):
    buf = b""
    try:
        while True:
            while b"\r\n\r\n" not in buf:
                d = c.recv(65536)
                if not d:
                    return
                buf += d
            head, buf = buf.split(b"\r\n\r\n", 1)
            n = 0
            for line in head.split(b"\r\n")[1:]:
                k, _, v = line.partition(b":")
                if k.strip().lower() == b"content-length":
                    n = int(v)
            while len(buf) < n:
                d = c.recv(65536)
                if not d:
                    return
                buf += d
            msg, buf = json.loads(buf[:n]), buf[n:]
            if "id" not in msg:
                c.sendall(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
                continue
            initialize = msg.get("method") == "initialize"
            rid = msg["id"] if (initialize and mode == "after-handshake") else msg["id"] + 1000
            result = {"protocolVersion": "2025-06-18", "capabilities": {},
                      "serverInfo": {"name": "wrong-id", "version": "1"}} if initialize else {}
            out = json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode()
            ctype = b"application/json"
            if body_kind == "sse":
                out, ctype = b"event: message\ndata: " + out + b"\n\n", b"text/event-stream"
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: " + ctype + b"\r\nContent-Length: "
                      + str(len(out)).encode() + b"\r\n\r\n" + out)
    except (OSError, ValueError):
        pass
    finally:
        c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"#;

fn wrong_id_server(mode: &str, body: &str) -> (KilledOnDrop, String) {
    // Guarded before its port is read: that read can fail.
    let mut child = KilledOnDrop(
        Command::new("python3")
            .args(["-c", WRONG_ID_SERVER, mode, body])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut port = String::new();
    BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut port)
        .unwrap();
    (child, format!("http://127.0.0.1:{}/mcp", port.trim()))
}

fn class_count(r: &Value, class: &str) -> u64 {
    r["error_classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["class"] == class)
        .map_or(0, |c| c["count"].as_u64().unwrap())
}

/// #47 item 6: every answer carried another id, and load counted each a
/// success (53,839 ok, 0 errors, exit 0). Each is now a "mismatched id",
/// in the JSON and the text report, and the run fails (exit 1); a
/// handshake answered with another id is a session that could not start.
#[test]
fn answers_to_another_id_are_mismatched_ids_never_successes() {
    let limit = Duration::from_secs(60);
    for (mode, body, era) in [
        ("all", "json", "modern"),
        ("all", "sse", "modern"),
        ("after-handshake", "json", "legacy"),
        ("after-handshake", "sse", "legacy"),
    ] {
        let (_server, url) = wrong_id_server(mode, body);
        let case = format!("{mode} {body} {era}");
        let args = [
            "load",
            "--server-url",
            &url,
            "--era",
            era,
            "--method",
            "tools/list",
            "--concurrency",
            "2",
            "--requests",
            "20",
            "--timeout-ms",
            "5000",
            "--quiet",
        ];
        let json = [&args[..], &["--format", "json"]].concat();
        let out = run_bin(&json, limit);
        assert_eq!(out.status.code(), Some(1), "{case}: {}", text(&out.stderr));
        let r: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{case}: {e}"));
        assert_eq!(r["ok"], 0, "{case}: {r}");
        assert_eq!(r["errors"], 20, "{case}: {r}");
        assert_eq!(class_count(&r, "mismatched id"), 20, "{case}: {r}");
        let example = r["error_classes"][0]["example"].as_str().unwrap_or_default();
        assert!(example.contains("was answered with id 10"), "{case}: {example}");
        let out = run_bin(&[&args[..], &["--format", "text"]].concat(), limit);
        assert_eq!(out.status.code(), Some(1), "{case}: {}", text(&out.stderr));
        let table = text(&out.stdout);
        assert!(table.contains(" 0 ok, 20 failed"), "{case}: {table}");
        assert!(table.contains("mismatched id"), "{case}: {table}");
    }
    // The handshake itself answered with another id: no session starts.
    let (_server, url) = wrong_id_server("all", "json");
    let out = run_bin(
        &[
            "load",
            "--server-url",
            &url,
            "--method",
            "tools/list",
            "--requests",
            "5",
            "--timeout-ms",
            "5000",
            "--quiet",
            "--format",
            "json",
        ],
        limit,
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("initialize (id 0) was answered with id 1000: a mismatched id"),
        "{err}"
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["ok"], 0, "{r}");
}

/// A port on 127.0.0.1 that nothing listens on (just freed by us).
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// #47 item 7: load against a port nothing listens on exited 1 after
/// counting every refused connection as a failed request. No session
/// could start: exit 3, as over stdio and SSE, with the reason.
#[test]
fn load_to_a_closed_port_exits_3_saying_no_session_could_start() {
    let url = format!("http://127.0.0.1:{}/mcp", closed_port());
    for era in ["legacy", "modern"] {
        let out = run_bin(
            &[
                "load",
                "--server-url",
                &url,
                "--era",
                era,
                "--method",
                "ping",
                "--concurrency",
                "3",
                "--duration",
                "2s",
                "--quiet",
                "--format",
                "json",
            ],
            Duration::from_secs(60),
        );
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{era}: {err}");
        assert!(err.contains("cannot connect to 127.0.0.1:"), "{era}: {err}");
        assert!(err.contains("no session could start"), "{era}: {err}");
        let r: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(r["requests"], 0, "{era}: {r}");
    }
}

/// A capture with a handshake and a tools/list, for the mock to serve.
fn write_capture(path: &Path) {
    let lines = [
        r#"{"format":"mcpscope-capture","version":1,"mcpscope":"0.1.0","mode":"session","started_unix_ms":1764700000000,"command_line":"python3 server.py","program":"python3","args":["server.py"],"cwd":null,"env_keys":[]}"#,
        r#"{"t_us":1000,"seq":0,"dir":"out","raw":"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}","eol":"lf"}"#,
        r#"{"t_us":2000,"seq":1,"dir":"in","raw":"{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"example\",\"version\":\"1.0\"}}}","eol":"lf"}"#,
        r#"{"t_us":3000,"seq":2,"dir":"out","raw":"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}","eol":"lf"}"#,
        r#"{"t_us":4000,"seq":3,"dir":"out","raw":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}","eol":"lf"}"#,
        r#"{"t_us":5000,"seq":4,"dir":"in","raw":"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}}","eol":"lf"}"#,
    ];
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

/// `mcpscope ARGS` that prints `… http://ADDR…` on stderr once it listens
/// (the mock, the proxy): the child and ADDR; its stderr drained after.
fn listening(args: &[&str], marker: &str) -> (KilledOnDrop, String) {
    let mut child = crate::support::mcpscope_command()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let child = KilledOnDrop(child);
    let mut seen = String::new();
    let addr = loop {
        let mut line = String::new();
        assert!(
            err.read_line(&mut line).unwrap() > 0,
            "it ended before listening: {seen}"
        );
        seen.push_str(&line);
        if line.contains(marker)
            && let Some((_, rest)) = line.split_once("http://")
        {
            break rest.split(['/', ' ', '\n']).next().unwrap().to_owned();
        }
    };
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    (child, addr)
}

/// One raw exchange: what came back until the listener closed (or 30 s passed).
fn exchange(addr: &str, request: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let _ = s.write_all(request);
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    text(&answer)
}

/// #47 item 8: 300 clients each sending a whole `initialize` at once; the
/// mock closed 86–197 of them without a word (a just-accepted connection
/// was closed to make room before its request was read). Each gets an
/// answer now: served (200), or turned away with 503 and Retry-After.
#[test]
fn a_burst_of_300_clients_each_gets_an_http_answer_from_the_mock() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("served.jsonl");
    write_capture(&cap);
    let (_mock, addr) = listening(
        &["mock", cap.to_str().unwrap(), "--listen", "127.0.0.1:0"],
        "mcpscope mock: serving ",
    );
    const CLIENTS: usize = 300;
    let body = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"burst","version":"1"}}}"#;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let start = std::sync::Arc::new(std::sync::Barrier::new(CLIENTS));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (start, addr, request) = (start.clone(), addr.clone(), request.clone());
            std::thread::spawn(move || {
                start.wait();
                let mut s = TcpStream::connect(&addr).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                // The whole request in one write, as the burst's clients sent it.
                let _ = s.write_all(request.as_bytes());
                let mut answer = Vec::new();
                let _ = s.read_to_end(&mut answer);
                text(&answer)
            })
        })
        .collect();
    let answers: Vec<String> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    let served = answers.iter().filter(|a| a.starts_with("HTTP/1.1 200 ")).count();
    let busy = answers
        .iter()
        .filter(|a| a.starts_with("HTTP/1.1 503 ") && a.to_ascii_lowercase().contains("\r\nretry-after: "))
        .count();
    let silent = answers.iter().filter(|a| a.is_empty()).count();
    assert_eq!(
        served + busy,
        CLIENTS,
        "{served} served, {busy} turned away with Retry-After, {silent} closed without an answer; others: {:?}",
        answers
            .iter()
            .filter(|a| !a.starts_with("HTTP/1.1 200 ") && !a.starts_with("HTTP/1.1 503 "))
            .take(3)
            .collect::<Vec<_>>()
    );
    assert!(served > 0, "nobody was served");
    // And the mock serves on.
    let after = exchange(&addr, request.as_bytes());
    assert!(after.starts_with("HTTP/1.1 200 "), "{after}");
}

/// A request whose `Host` is empty, to `target` on `addr`.
fn empty_host(addr: &str, target: &str) -> String {
    exchange(
        addr,
        format!("GET {target} HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n").as_bytes(),
    )
}

fn status(answer: &str) -> u16 {
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// #47 item 12: an empty `Host` is a 400 on every listener mcpscope opens,
/// through the one gate they share: the mock, the reverse proxy, the App
/// host page and its sandbox, and the sign-in's redirect listener (which
/// took a callback with any `Host` at all).
#[test]
fn an_empty_host_gets_400_from_every_listener() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("served.jsonl");
    write_capture(&cap);
    let (_mock, mock) = listening(
        &["mock", cap.to_str().unwrap(), "--listen", "127.0.0.1:0"],
        "mcpscope mock: serving ",
    );
    let answer = empty_host(&mock, "/mcp");
    assert_eq!(status(&answer), 400, "the mock: {answer}");
    let upstream = format!("http://127.0.0.1:{}/mcp", closed_port());
    let (_proxy, proxy) = listening(
        &["proxy", "--listen", "127.0.0.1:0", "--upstream", &upstream],
        "listening on http://",
    );
    let answer = empty_host(&proxy, "/mcp");
    assert_eq!(status(&answer), 400, "the reverse proxy: {answer}");

    let app = mcpscope_core::apps::serve::AppServer::start(Default::default()).unwrap();
    let page = app.url();
    let (host_addr, page_path) = page["http://".len()..].split_once('/').unwrap();
    let answer = empty_host(host_addr, &format!("/{page_path}"));
    assert_eq!(status(&answer), 400, "the App host page: {answer}");
    let sandbox_addr = app
        .sandbox_origin()
        .trim_start_matches("http://")
        .replace("localhost", "127.0.0.1");
    let token = page_path.trim_start_matches("app/");
    let answer = empty_host(&sandbox_addr, &format!("/sandbox/{token}"));
    assert_eq!(status(&answer), 400, "the App sandbox: {answer}");
    // With its Host, the same page is served: the 400 is the Host's.
    let answer = exchange(
        host_addr,
        format!("GET /{page_path} HTTP/1.1\r\nHost: {host_addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    );
    assert_eq!(status(&answer), 200, "{answer}");
    app.stop();

    // The sign-in's redirect listener: a "browser" that first sends the
    // callback (with the right state) under an empty Host, then signs in
    // as a browser would, through the mock's own authorization server.
    let (_auth_mock, auth_mock) = listening(
        &["mock", cap.to_str().unwrap(), "--listen", "127.0.0.1:0", "--auth"],
        "mcpscope mock: serving ",
    );
    let probe = dir.path().join("probe.txt");
    let browser = dir.path().join("browser.py");
    std::fs::write(
        &browser,
        r#"
import socket, sys, urllib.parse, urllib.request
url = sys.argv[1]
q = urllib.parse.parse_qs(urllib.parse.urlparse(url).query)
redirect = urllib.parse.urlparse(q["redirect_uri"][0])
state = q["state"][0]
s = socket.create_connection((redirect.hostname, redirect.port), timeout=20)
s.sendall(("GET %s?code=forged&state=%s HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n"
           % (redirect.path, urllib.parse.quote(state))).encode())
answer = b""
while True:
    d = s.recv(65536)
    if not d:
        break
    answer += d
open(sys.argv[2], "w").write(answer.decode("utf-8", "replace"))
urllib.request.urlopen(url, timeout=20).read()
"#,
    )
    .unwrap();
    let child = crate::support::mcpscope_command()
        .args([
            "call",
            "--server-url",
            &format!("http://{auth_mock}/mcp"),
            "--method",
            "tools/list",
            "--auth-timeout-ms",
            "30000",
            "--timeout-ms",
            "20000",
        ])
        .env(
            "BROWSER",
            format!("python3 {} %s {}", browser.display(), probe.display()),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = crate::hostile::wait_output(child, Duration::from_secs(60), "mcpscope call with a sign-in");
    let answer = std::fs::read_to_string(&probe).unwrap_or_default();
    assert_eq!(
        status(&answer),
        400,
        "the redirect listener: {answer:?}; {}",
        text(&out.stderr)
    );
    // The forged callback was not taken: the real one was, and the call went on.
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}
