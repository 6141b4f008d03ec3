//! The HTTP transports: the reference server (`server-everything`) in its
//! Streamable HTTP and HTTP+SSE modes on loopback, and a tiny hand-written
//! HTTP server for what real servers rarely do on purpose (HTML error pages,
//! forgotten sessions, bodies that are not JSON, streams cut short).

use crate::support::*;
use mcpscope_core::client::ClientError;
use mcpscope_core::protocol::handshake::HandshakeOptions;
use mcpscope_core::transport::event::{Event, HttpInfo};
use mcpscope_core::transport::session::SessionOptions;
use mcpscope_core::transport::target::HttpTarget;
use mcpscope_core::wire::classify::Kind;
use serde_json::json;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// `server-everything` in an HTTP mode, killed (its whole process group)
/// when dropped, also when the test fails.
pub struct HttpServer {
    child: Child,
    port: u16,
}

impl HttpServer {
    pub fn start(mode: &str) -> HttpServer {
        let entry = repo().join("tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
        assert!(
            entry.exists(),
            "{} is missing: run scripts/setup-test-peers",
            entry.display()
        );
        let port = free_port();
        let mut cmd = Command::new("node");
        cmd.arg(&entry)
            .arg(mode)
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let child = cmd.spawn().expect("starting node");
        let server = HttpServer { child, port };
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "server-everything {mode} did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let pgid = self.child.id();
        mcpscope_core::transport::process::signal_group(pgid, 9); // SIGKILL
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn options() -> SessionOptions {
    SessionOptions {
        request_timeout: Some(Duration::from_secs(15)),
        stdin_close_grace: Duration::from_secs(2),
        ..quick()
    }
}

fn methods_in(events: &[Event]) -> Vec<String> {
    received(events).iter().filter_map(|f| f.class.method.clone()).collect()
}

#[test]
fn streamable_http_against_server_everything() {
    let server = HttpServer::start("streamableHttp");
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("http.jsonl");
    let target = HttpTarget::streamable(server.url("/mcp")).with_header("Authorization", "Bearer s3cret-token");
    let (c, sink) = connect(
        target,
        SessionOptions {
            capture: Some(capture.clone()),
            ..options()
        },
    );
    let mut c = c.with_roots(vec![json!({"uri": "file:///tmp", "name": "tmp"})]);
    c.wait_started(T).unwrap();
    let hs = c
        .initialize(
            &HandshakeOptions {
                capabilities: json!({"roots": {"listChanged": true}}),
                ..HandshakeOptions::default()
            },
            T,
        )
        .unwrap()
        .unwrap();
    assert!(hs.usable(), "{}", hs.verdict_text());
    assert!(hs.server_name().contains("everything"), "{}", hs.server_name());

    let tools = c.request("tools/list", None, T).unwrap().outcome.unwrap();
    assert!(
        tools["tools"].as_array().unwrap().iter().any(|t| t["name"] == "echo"),
        "{tools}"
    );
    let r = c
        .request(
            "tools/call",
            Some(json!({"name": "echo", "arguments": {"message": "over http"}})),
            T,
        )
        .unwrap();
    assert_eq!(r.outcome.unwrap()["content"][0]["text"], "Echo: over http");
    // A request the server refuses is a JSON-RPC error, as over stdio.
    let r = c.request("no/such/method", None, T).unwrap();
    assert_eq!(r.outcome.unwrap_err().code, -32601);

    // Server-initiated traffic on the GET stream: the server asks for our
    // roots 350 ms after `initialized`, and logs once we answered; the
    // logging toggle sends a message at once, unrelated to any request.
    c.request(
        "tools/call",
        Some(json!({"name": "toggle-simulated-logging", "arguments": {}})),
        T,
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        c.pump_for(Duration::from_millis(200));
        let evs = snapshot(&sink);
        let m = methods_in(&evs);
        if m.iter().any(|m| m == "roots/list") && m.iter().filter(|m| *m == "notifications/message").count() >= 2 {
            break;
        }
    }
    c.close();
    let evs = snapshot(&sink);
    let methods = methods_in(&evs);
    assert!(methods.iter().any(|m| m == "roots/list"), "{methods:?}");
    assert!(methods.iter().any(|m| m == "notifications/message"), "{methods:?}");
    // We answered roots/list with a response POST.
    assert!(
        sent(&evs)
            .iter()
            .any(|f| f.kind() == Kind::Result && f.text().contains("file:///tmp")),
        "no roots answer sent"
    );

    let http = http_events(&evs);
    let posts: Vec<_> = http.iter().filter(|h| h.method == "POST").collect();
    let init = posts.first().expect("a POST");
    assert_eq!(init.status, Some(200));
    assert_eq!(init.sent_header("Accept"), Some("application/json, text/event-stream"));
    assert_eq!(init.sent_header("Content-Type"), Some("application/json"));
    assert_eq!(init.sent_header("Mcp-Session-Id"), None);
    let sid = init.received_header("mcp-session-id").expect("a session id").to_owned();
    for p in &posts[1..] {
        assert_eq!(p.sent_header("Mcp-Session-Id"), Some(sid.as_str()), "{}", p.summary());
        assert_eq!(
            p.sent_header("MCP-Protocol-Version"),
            Some("2025-11-25"),
            "{}",
            p.summary()
        );
    }
    // The notification was accepted with 202.
    assert!(
        posts
            .iter()
            .any(|p| p.status == Some(202) && p.text.contains("notifications/initialized")),
        "{posts:#?}"
    );
    // The GET stream opened, and the session was ended with DELETE.
    assert!(
        http.iter().any(|h| h.method == "GET" && h.status == Some(200)),
        "{http:#?}"
    );
    let delete = http.iter().find(|h| h.method == "DELETE").expect("a DELETE");
    assert_eq!(delete.status, Some(200));
    assert_eq!(delete.sent_header("Mcp-Session-Id"), Some(sid.as_str()));
    // The token never shows: masked in every event and in the capture.
    assert!(
        http.iter()
            .all(|h| h.sent_header("Authorization") == Some("Bearer ****"))
    );
    let text = std::fs::read_to_string(&capture).unwrap();
    assert!(!text.contains("s3cret"), "the capture holds the token");
    assert!(text.contains("Bearer ****"));
    assert!(matches!(evs.last(), Some(Event::Closed { .. })));

    // The capture loads back with the same frames and HTTP facts.
    let loaded = mcpscope_core::record::capture::load(&capture).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(loaded.header.transport, "http");
    assert_eq!(loaded.header.url.as_deref(), Some(server.url("/mcp").as_str()));
    let live: Vec<_> = frames(&evs);
    let back: Vec<_> = frames(&loaded.events);
    assert_eq!(live.len(), back.len());
    for (a, b) in live.iter().zip(&back) {
        assert_eq!(a.raw, b.raw);
        assert_eq!(a.direction, b.direction);
        assert_eq!(a.class, b.class);
        let link = |f: &mcpscope_core::wire::frame::Frame| f.link.as_ref().map(|l| (l.request_seq, l.method.clone()));
        assert_eq!(link(a), link(b));
    }
    let back_http = http_events(&loaded.events);
    assert_eq!(back_http.len(), http.len());
    for (a, b) in http.iter().zip(&back_http) {
        // The capture keeps microseconds.
        let a = HttpInfo {
            at: Duration::from_micros(a.at.as_micros() as u64),
            ..(*a).clone()
        };
        assert_eq!(&a, *b);
    }
    // And the protocol lint finds nothing wrong with a well-behaved session.
    let findings =
        mcpscope_core::analysis::lint::lint(&loaded.events, &mcpscope_core::analysis::lint::LintOptions::default());
    let errors: Vec<_> = findings
        .iter()
        .filter(|f| f.severity == mcpscope_core::timeline::model::Severity::Error)
        .map(|f| f.line())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn legacy_http_sse_against_server_everything() {
    let server = HttpServer::start("sse");
    let (mut c, sink) = connect(HttpTarget::sse(server.url("/sse")), options());
    let hs = c.initialize(&HandshakeOptions::default(), T).unwrap().unwrap();
    assert!(hs.usable(), "{}", hs.verdict_text());
    let r = c
        .request(
            "tools/call",
            Some(json!({"name": "echo", "arguments": {"message": "over sse"}})),
            T,
        )
        .unwrap();
    assert_eq!(r.outcome.unwrap()["content"][0]["text"], "Echo: over sse");
    c.close();
    let evs = snapshot(&sink);
    let http = http_events(&evs);
    let endpoint = http
        .iter()
        .find(|h| h.text.starts_with("endpoint:"))
        .expect("the endpoint event");
    assert!(endpoint.text.contains("/message?sessionId="), "{}", endpoint.text);
    // Messages were POSTed to the endpoint and answered on the stream.
    assert!(
        http.iter()
            .any(|h| h.method == "POST" && h.status == Some(202) && h.url.contains("/message?sessionId=")),
        "{http:#?}"
    );
    let answers: Vec<_> = received(&evs)
        .into_iter()
        .filter(|f| f.kind() == Kind::Result)
        .collect();
    assert_eq!(answers.len(), 2);
    assert!(answers.iter().all(|f| f.link.is_some()));
}

/// One request as the tiny server saw it.
#[derive(Clone, Debug)]
struct Req {
    method: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Req {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn rpc_method(&self) -> Option<String> {
        serde_json::from_slice::<serde_json::Value>(&self.body)
            .ok()
            .and_then(|v| v["method"].as_str().map(str::to_owned))
    }

    fn rpc_id(&self) -> serde_json::Value {
        serde_json::from_slice::<serde_json::Value>(&self.body)
            .ok()
            .map(|v| v["id"].clone())
            .unwrap_or_default()
    }
}

type Handler = Box<dyn Fn(&Req) -> Vec<u8> + Send + Sync>;

/// A hand-written HTTP/1.1 server on 127.0.0.1: one connection per request,
/// answered with whatever bytes the handler returns, then closed.
struct TinyServer {
    url: String,
    seen: Arc<Mutex<Vec<Req>>>,
}

impl TinyServer {
    fn start(handler: impl Fn(&Req) -> Vec<u8> + Send + Sync + 'static) -> TinyServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let seen: Arc<Mutex<Vec<Req>>> = Default::default();
        let log = seen.clone();
        let handler: Arc<Handler> = Arc::new(Box::new(handler));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let log = log.clone();
                let handler = handler.clone();
                std::thread::spawn(move || serve(stream, &handler, &log));
            }
        });
        TinyServer { url, seen }
    }

    fn seen(&self) -> Vec<Req> {
        self.seen.lock().unwrap().clone()
    }
}

fn serve(stream: TcpStream, handler: &Handler, log: &Mutex<Vec<Req>>) {
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_owned(), v.trim().to_owned()));
        }
    }
    let len = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    let _ = reader.read_exact(&mut body);
    let req = Req { method, headers, body };
    log.lock().unwrap().push(req.clone());
    let response = handler(&req);
    let mut stream = stream;
    let _ = stream.write_all(&response);
    let _ = stream.flush();
}

fn response(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

/// An SSE body without Content-Length: the stream ends when the connection closes.
fn sse_response(body: &str) -> Vec<u8> {
    format!("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: text/event-stream\r\n\r\n{body}").into_bytes()
}

fn init_result(id: &serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "jsonrpc": "2.0",
        "id": id,
        "result": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "tiny", "version": "1"}
        }
    }))
    .unwrap()
}

const HTML_500: &[u8] =
    b"<!DOCTYPE html>\n<html><head><title>500</title></head>\n<body><h1>Internal Server Error</h1></body></html>\n";

#[test]
fn html_error_page_is_a_clear_failure_and_kept_whole() {
    let server = TinyServer::start(|_| {
        response(
            "500 Internal Server Error",
            &[("Content-Type", "text/html; charset=utf-8")],
            HTML_500,
        )
    });
    let (mut c, sink) = connect(HttpTarget::streamable(&server.url), options());
    let started = Instant::now();
    let err = c.initialize(&HandshakeOptions::default(), T).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5), "waited for a timeout");
    let ClientError::Http { error, .. } = &err else {
        panic!("{err:?}")
    };
    assert!(
        error.contains("500 Internal Server Error") && error.contains("HTML"),
        "{error}"
    );
    c.close();
    let evs = snapshot(&sink);
    let page: Vec<_> = received(&evs);
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].raw, HTML_500, "every byte of the page is kept");
    assert_eq!(page[0].kind(), Kind::NotJson);
    let http = http_events(&evs);
    assert!(http.iter().any(|h| {
        h.status == Some(500)
            && h.received_header("content-type")
                .is_some_and(|ct| ct.starts_with("text/html"))
    }));
    // No timeout and no cancellation for a request that failed at the HTTP level.
    assert!(!evs.iter().any(|e| matches!(e, Event::TimedOut { .. })));
    assert!(
        !sent(&evs)
            .iter()
            .any(|f| f.class.method.as_deref() == Some("notifications/cancelled"))
    );
}

#[test]
fn expired_session_404_is_reported_and_the_next_initialize_starts_fresh() {
    let server = TinyServer::start(|req| {
        match (
            req.method.as_str(),
            req.rpc_method().as_deref(),
            req.header("mcp-session-id"),
        ) {
            ("POST", Some("initialize"), None) => response(
                "200 OK",
                &[("Content-Type", "application/json"), ("Mcp-Session-Id", "sess-1")],
                &init_result(&req.rpc_id()),
            ),
            ("POST", Some("notifications/initialized"), Some("sess-1")) => response("202 Accepted", &[], b""),
            ("GET", _, _) => response("405 Method Not Allowed", &[("Allow", "POST, DELETE")], b""),
            ("DELETE", _, _) => response("405 Method Not Allowed", &[], b""),
            // The server restarted and forgot the session.
            _ => response("404 Not Found", &[("Content-Type", "text/plain")], b"Session not found"),
        }
    });
    let (mut c, sink) = connect(HttpTarget::streamable(&server.url), options());
    c.initialize(&HandshakeOptions::default(), T).unwrap().unwrap();
    let err = c.request("tools/list", None, T).unwrap_err();
    assert_eq!(
        err.to_string(),
        "tools/list failed over HTTP: the server forgot session sess-1 (HTTP 404): start a new session"
    );
    // A new initialize goes without the forgotten session id and gets a new one.
    c.initialize(&HandshakeOptions::default(), T).unwrap().unwrap();
    // The GET stream is tried on its own thread: wait for its answer.
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline && !http_events(&snapshot(&sink)).iter().any(|h| h.method == "GET") {
        c.pump_for(Duration::from_millis(50));
    }
    c.close();
    let evs = snapshot(&sink);
    let seen = server.seen();
    let inits: Vec<_> = seen
        .iter()
        .filter(|r| r.rpc_method().as_deref() == Some("initialize"))
        .collect();
    assert_eq!(inits.len(), 2);
    assert!(inits.iter().all(|r| r.header("mcp-session-id").is_none()));
    let list = seen
        .iter()
        .find(|r| r.rpc_method().as_deref() == Some("tools/list"))
        .unwrap();
    assert_eq!(list.header("mcp-protocol-version"), Some("2025-11-25"));
    // The body of the 404 is kept as what the server wrote.
    assert!(received(&evs).iter().any(|f| f.raw == b"Session not found"));
    let http = http_events(&evs);
    // 405 on GET: the server offers no GET stream; said, not an error.
    let get = http.iter().find(|h| h.method == "GET").expect("a GET");
    assert_eq!(get.status, Some(405));
    assert!(
        get.error.is_none() && get.text.contains("no GET stream"),
        "{}",
        get.summary()
    );
    let delete = http.iter().find(|h| h.method == "DELETE").expect("a DELETE");
    assert!(delete.text.contains("405"), "{}", delete.summary());
}

#[test]
fn non_json_bodies_are_clear_failures_and_kept() {
    let server = TinyServer::start(|req| match req.rpc_method().as_deref() {
        Some("initialize") => response("200 OK", &[("Content-Type", "application/json")], b"hello, not json"),
        _ => response("200 OK", &[("Content-Type", "text/plain")], b"plain words"),
    });
    let (mut c, sink) = connect(HttpTarget::streamable(&server.url), options());
    let err = c.initialize(&HandshakeOptions::default(), T).unwrap_err();
    assert!(err.to_string().contains("not valid JSON"), "{err}");
    let err = c.request("tools/list", None, T).unwrap_err();
    assert!(err.to_string().contains("Content-Type text/plain"), "{err}");
    c.close();
    let evs = snapshot(&sink);
    let bodies: Vec<_> = received(&evs).iter().map(|f| (f.raw.clone(), f.kind())).collect();
    assert_eq!(
        bodies,
        vec![
            (b"hello, not json".to_vec(), Kind::NotJson),
            (b"plain words".to_vec(), Kind::NotJson)
        ]
    );
}

#[test]
fn connection_refused_is_clear_and_quick() {
    let url = format!("http://127.0.0.1:{}/mcp", free_port());
    let (mut c, sink) = connect(HttpTarget::streamable(&url), options());
    let started = Instant::now();
    let err = c.initialize(&HandshakeOptions::default(), T).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(err.to_string().contains("connection refused"), "{err}");
    c.close();
    let evs = snapshot(&sink);
    let http = http_events(&evs);
    assert_eq!(http.len(), 1);
    assert_eq!(http[0].status, None);
    assert!(matches!(evs.last(), Some(Event::Closed { .. })));

    // The same over HTTP+SSE: every message fails with the reason.
    let (mut c, _sink) = connect(HttpTarget::sse(url.replace("/mcp", "/sse")), options());
    let err = c.initialize(&HandshakeOptions::default(), T).unwrap_err();
    assert!(err.to_string().contains("connection refused"), "{err}");
    c.close();
}

#[test]
fn a_response_stream_cut_short_is_resumed_with_last_event_id() {
    let server = TinyServer::start(|req| match (req.method.as_str(), req.rpc_method().as_deref()) {
        ("POST", Some("initialize")) => response(
            "200 OK",
            &[("Content-Type", "application/json"), ("Mcp-Session-Id", "s")],
            &init_result(&req.rpc_id()),
        ),
        ("POST", Some("tools/list")) => {
            // Priming event with an id and a retry delay, a progress note, then the connection drops.
            sse_response(
                "id: ev-1\nretry: 50\ndata: \n\nid: ev-2\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"working\"}}\n\n",
            )
        }
        ("GET", _) if req.header("last-event-id") == Some("ev-2") => {
            sse_response("id: ev-3\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":[]}}\n\n")
        }
        ("GET", _) => response("405 Method Not Allowed", &[], b""),
        ("POST", _) => response("202 Accepted", &[], b""),
        _ => response("405 Method Not Allowed", &[], b""),
    });
    let mut target = HttpTarget::streamable(&server.url);
    target.open_get_stream = false;
    let (mut c, sink) = connect(target, options());
    c.initialize(&HandshakeOptions::default(), T).unwrap().unwrap();
    let r = c.request("tools/list", None, T).unwrap();
    assert_eq!(r.outcome.unwrap(), json!({"tools": []}));
    c.close();
    let evs = snapshot(&sink);
    let http = http_events(&evs);
    let note = http
        .iter()
        .find(|h| h.method == "SSE" && h.text.contains("reconnecting"))
        .expect("a reconnect note");
    assert!(
        note.text.contains("50 ms") && note.text.contains("Last-Event-ID: ev-2"),
        "{}",
        note.text
    );
    let get = http.iter().find(|h| h.method == "GET").expect("the resuming GET");
    assert_eq!(get.sent_header("Last-Event-ID"), Some("ev-2"));
    assert_eq!(get.sent_header("Mcp-Session-Id"), Some("s"));
    // The notification that came before the cut is on the timeline too.
    assert!(methods_in(&evs).iter().any(|m| m == "notifications/message"));
    assert!(received(&evs).iter().all(|f| f.anomalies().is_empty()));
}

#[test]
fn cli_call_and_doctor_over_http() {
    let server = HttpServer::start("streamableHttp");
    let out = crate::support::mcpscope_command()
        .args([
            "call",
            "--trace",
            "--server-url",
            &server.url("/mcp"),
            "--header",
            "Authorization: Bearer cli-s3cret",
            "--tool-name",
            "echo",
            "--tool-arg",
            "message=from the cli",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("Echo: from the cli"), "{stdout}");
    assert!(stderr.contains("HTTP POST"), "{stderr}");
    assert!(stderr.contains("HTTP DELETE"), "{stderr}");
    assert!(!stderr.contains("cli-s3cret") && !stdout.contains("cli-s3cret"));

    // The doctor's checklist over HTTP (legacy era: the checks of the handshake).
    let out = crate::support::mcpscope_command()
        .args([
            "doctor",
            "--era",
            "legacy",
            "--server-url",
            &server.url("/mcp"),
            "-H",
            "X-Api-Key: doc-s3cret",
        ])
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{report}");
    assert!(
        report.contains("Healthy: the server speaks MCP over Streamable HTTP"),
        "{report}"
    );
    assert!(report.contains("HTTP responses carried only JSON-RPC"), "{report}");
    assert!(report.contains("session id: "), "{report}");
    assert!(
        report.contains("X-Api-Key: ****") && !report.contains("doc-s3cret"),
        "{report}"
    );
    // By default the doctor probes with server/discover: the TS SDK server
    // refuses it (HTTP 400), so it is found to be a legacy server.
    let out = crate::support::mcpscope_command()
        .args(["doctor", "--server-url", &server.url("/mcp")])
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{report}");
    assert!(
        report.contains("[info] Era: legacy 2025-11-25 (--era auto)"),
        "{report}"
    );
    assert!(report.contains("legacy server"), "{report}");
    let out = crate::support::mcpscope_command()
        .args([
            "doctor",
            "--server-url",
            &format!("http://127.0.0.1:{}/mcp", free_port()),
        ])
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(
        report.contains("[FAIL] initialize failed over HTTP") && report.contains("connection refused"),
        "{report}"
    );

    // Over HTTP+SSE, and a refused connection as an exit status and a sentence.
    let sse = HttpServer::start("sse");
    let out = crate::support::mcpscope_command()
        .args([
            "call",
            "--transport",
            "sse",
            "--server-url",
            &sse.url("/sse"),
            "--method",
            "tools/list",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"echo\""));
    let out = crate::support::mcpscope_command()
        .args([
            "call",
            "--server-url",
            &format!("http://127.0.0.1:{}/mcp", free_port()),
            "--method",
            "tools/list",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("connection refused"));
    // A URL without --transport http|sse, or a command with it, is refused up front.
    let out = crate::support::mcpscope_command()
        .args(["call", "--transport", "http", "--method", "tools/list"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--server-url"));
}

#[test]
fn the_get_stream_reconnects_with_last_event_id() {
    let server = TinyServer::start(|req| match (req.method.as_str(), req.rpc_method().as_deref()) {
        ("POST", Some("initialize")) => response(
            "200 OK",
            &[("Content-Type", "application/json"), ("Mcp-Session-Id", "g")],
            &init_result(&req.rpc_id()),
        ),
        ("GET", _) => match req.header("last-event-id") {
            None => sse_response(
                "retry: 30\nid: g1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n",
            ),
            Some("g1") => sse_response(
                "id: g2\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/prompts/list_changed\"}\n\n",
            ),
            Some(_) => response("405 Method Not Allowed", &[], b""),
        },
        _ => response("202 Accepted", &[], b""),
    });
    let (mut c, sink) = connect(HttpTarget::streamable(&server.url), options());
    c.initialize(&HandshakeOptions::default(), T).unwrap().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline
        && !methods_in(&snapshot(&sink))
            .iter()
            .any(|m| m == "notifications/prompts/list_changed")
    {
        c.pump_for(Duration::from_millis(50));
    }
    c.close();
    let evs = snapshot(&sink);
    let methods = methods_in(&evs);
    assert!(
        methods.iter().any(|m| m == "notifications/tools/list_changed"),
        "{methods:?}"
    );
    assert!(
        methods.iter().any(|m| m == "notifications/prompts/list_changed"),
        "{methods:?}"
    );
    let gets: Vec<_> = server.seen().into_iter().filter(|r| r.method == "GET").collect();
    assert!(gets.len() >= 2, "{gets:?}");
    assert_eq!(gets[1].header("last-event-id"), Some("g1"));
    assert_eq!(gets[1].header("mcp-session-id"), Some("g"));
    let http = http_events(&evs);
    assert!(
        http.iter()
            .any(|h| h.text.contains("reconnecting in 30 ms with Last-Event-ID: g1")),
        "{http:#?}"
    );
}

#[test]
fn a_server_that_never_answers_times_out_and_closing_does_not_hang() {
    let server = TinyServer::start(|req| match req.rpc_method().as_deref() {
        Some("initialize") => {
            std::thread::sleep(Duration::from_secs(30));
            Vec::new()
        }
        _ => response("202 Accepted", &[], b""),
    });
    let (mut c, sink) = connect(
        HttpTarget::streamable(&server.url),
        SessionOptions {
            request_timeout: Some(Duration::from_millis(500)),
            ..options()
        },
    );
    let err = c
        .initialize(&HandshakeOptions::default(), Duration::from_millis(500))
        .unwrap_err();
    assert!(matches!(err, ClientError::TimedOut { .. }), "{err:?}");
    let started = Instant::now();
    c.close();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "closing took {:?}",
        started.elapsed()
    );
    let evs = snapshot(&sink);
    assert!(evs.iter().any(|e| matches!(e, Event::TimedOut { .. })));
    // The timed-out request was cancelled, as over stdio.
    assert!(
        sent(&evs)
            .iter()
            .any(|f| f.class.method.as_deref() == Some("notifications/cancelled"))
    );
    assert!(matches!(evs.last(), Some(Event::Closed { .. })));
}
