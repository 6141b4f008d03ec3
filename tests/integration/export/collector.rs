//! OTLP/HTTP: `call`, `export`, the proxies, the app and `load` send their
//! sessions' spans to a collector, as JSON or protobuf.

use super::*;

// ---- OTLP/HTTP ---------------------------------------------------------------

/// The test collector (tests/clients/otlp_receiver.py), killed when dropped.
struct Collector {
    /// Killed when the collector is dropped.
    _child: crate::support::KilledOnDrop,
    port: u16,
    exports: crossbeam_channel::Receiver<Value>,
}

impl Collector {
    fn start(mode: &str) -> Collector {
        use std::io::BufRead as _;
        let python = need(repo().join("tests/peers/.venv/bin/python"));
        // Guarded before its first line is read: that read can fail.
        let mut child = crate::support::KilledOnDrop(
            Command::new(python)
                .arg(repo().join("tests/clients/otlp_receiver.py"))
                .env("MODE", mode)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap(),
        );
        let mut lines = std::io::BufReader::new(child.0.stdout.take().unwrap()).lines();
        let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        let port = first["port"].as_u64().unwrap() as u16;
        let (tx, exports) = crossbeam_channel::unbounded();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                if tx.send(serde_json::from_str(&line).unwrap()).is_err() {
                    return;
                }
            }
        });
        Collector {
            _child: child,
            port,
            exports,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The next export it received, decoded.
    fn next(&mut self) -> Value {
        self.exports
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("the collector reported an export")
    }
}

#[test]
fn call_sends_its_session_to_an_otlp_collector() {
    let mut collector = Collector::start("");
    let everything =
        need(repo().join("tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"));
    let out = crate::support::mcpscope_command()
        .args(["call", "--otlp-endpoint", &collector.url()])
        .args(["--tool-name", "echo", "--tool-arg", "message=to the collector", "--"])
        .arg("node")
        .arg(&everything)
        .arg("stdio")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("span(s) sent to"), "{}", text(&out.stderr));
    let got = collector.next();
    assert_eq!(got["path"], "/v1/traces");
    assert_eq!(got["type"], "application/json");
    assert!(got["problems"].as_array().unwrap().is_empty(), "{got}");
    let call = got["spans"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "tools/call echo")
        .unwrap_or_else(|| panic!("{got}"));
    assert_eq!(call["kind"], 3);
    assert_eq!(call["attributes"]["network.transport"]["stringValue"], "pipe");
    assert_eq!(call["attributes"]["gen_ai.tool.name"]["stringValue"], "echo");
}

#[test]
fn export_sends_a_capture_retries_a_busy_collector_and_says_a_refusal() {
    let cap = repo().join("tests/captures/unanswered-request.jsonl");
    let mut busy = Collector::start("busy");
    let out = crate::support::mcpscope_command()
        .args([
            "export",
            "--format",
            "otlp-json",
            "--otlp-endpoint",
            &format!("{}/v1/traces", busy.url()),
        ])
        .arg(&cap)
        .output()
        .unwrap();
    assert!(out.status.success(), "retried after the 503: {}", text(&out.stderr));
    assert!(out.stdout.is_empty(), "sent, not printed");
    let got = busy.next();
    assert!(got["problems"].as_array().unwrap().is_empty(), "{got}");
    assert!(
        got["spans"].as_array().unwrap().iter().any(|s| s["status"] == 2),
        "{got}"
    );

    let refuse = Collector::start("refuse");
    let out = crate::support::mcpscope_command()
        .args(["export", "--format", "otlp-json", "--otlp-endpoint", &refuse.url()])
        .arg(&cap)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(
        text(&out.stderr).contains("refused the traces: HTTP 400: bad traces"),
        "{}",
        text(&out.stderr)
    );
    // Nobody listening: said, with the cause.
    let port = refuse.port;
    drop(refuse);
    let out = crate::support::mcpscope_command()
        .args([
            "export",
            "--format",
            "otlp-json",
            "--otlp-endpoint",
            &format!("http://127.0.0.1:{port}"),
        ])
        .arg(&cap)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(
        text(&out.stderr).contains("could not be reached"),
        "{}",
        text(&out.stderr)
    );
    let out = crate::support::mcpscope_command()
        .args(["export", "--format", "har", "--otlp-endpoint", "http://127.0.0.1:9"])
        .arg(&cap)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(64), "{}", text(&out.stderr));
}

fn span_names(export: &Value) -> Vec<String> {
    export["spans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect()
}

/// #33: `proxy --otlp-endpoint` sends while the session runs: a request's
/// span reaches the collector (decoded with the official protos) while the
/// client is still connected; the session span when the proxy ends.
#[test]
fn the_stdio_proxy_sends_spans_while_the_session_runs() {
    use std::io::{BufRead, Write};
    let mut collector = Collector::start("");
    let everything =
        need(repo().join("tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"));
    let mut proxy = crate::support::mcpscope_command()
        .args(["proxy", "--otlp-endpoint", &collector.url(), "--", "node"])
        .arg(&everything)
        .arg("stdio")
        .env("OTEL_BSP_SCHEDULE_DELAY", "200")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut to_server = proxy.stdin.take().unwrap();
    let mut from_server = std::io::BufReader::new(proxy.stdout.take().unwrap());
    let mut answer_to = |id: u64| loop {
        let mut line = String::new();
        assert!(from_server.read_line(&mut line).unwrap() > 0, "the proxy closed");
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["id"] == id {
            return v;
        }
    };
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    writeln!(to_server, "{initialize}").unwrap();
    answer_to(1);
    writeln!(to_server, r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#).unwrap();
    writeln!(
        to_server,
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"echo","arguments":{{"message":"live"}}}}}}"#
    )
    .unwrap();
    assert!(answer_to(2)["result"].is_object());
    // Still connected: the spans that ended are already at the collector.
    let mut live = Vec::new();
    while !live.iter().any(|n: &String| n == "tools/call echo") {
        let got = collector.next();
        assert!(got["problems"].as_array().unwrap().is_empty(), "{got}");
        live.extend(span_names(&got));
    }
    assert!(proxy.try_wait().unwrap().is_none(), "the session was still running");
    assert!(live.contains(&"initialize".to_owned()), "{live:?}");
    assert!(!live.contains(&"mcp session".to_owned()), "{live:?}");
    drop(to_server);
    let out = proxy.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    let mut last = Vec::new();
    while !last.contains(&"mcp session".to_owned()) {
        last.extend(span_names(&collector.next()));
    }
    assert!(
        !last.contains(&"tools/call echo".to_owned()),
        "a span sent live is not sent again: {last:?}"
    );
    assert!(stderr.contains("span(s) sent to"), "{stderr}");
}

/// The reverse proxy sends its sessions too (here at the end: the default
/// interval is longer than the session).
#[test]
#[cfg(unix)]
fn the_reverse_proxy_sends_its_sessions_spans() {
    let mut collector = Collector::start("");
    let server = HttpServer::start("streamableHttp");
    // Killed however the test ends; its stdout is not the test's.
    let mut proxy = crate::support::KilledOnDrop(
        crate::support::mcpscope_command()
            .args(["proxy", "--listen", "127.0.0.1:0", "--upstream", &server.url("/mcp")])
            .args(["--otlp-endpoint", &collector.url()])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut err = std::io::BufReader::new(proxy.0.stderr.take().unwrap());
    let addr = listening_addr(&mut err);
    let out = crate::support::mcpscope_command()
        .args([
            "call",
            "--server-url",
            &format!("http://{addr}/mcp"),
            "--tool-name",
            "echo",
        ])
        .args(["--tool-arg", "message=through the reverse proxy"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    unsafe { libc::kill(proxy.0.id() as i32, libc::SIGTERM) };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    proxy.0.wait().unwrap();
    let mut names = Vec::new();
    while !names.contains(&"mcp session".to_owned()) {
        let got = collector.next();
        assert!(got["problems"].as_array().unwrap().is_empty(), "{got}");
        names.extend(span_names(&got));
    }
    assert!(names.contains(&"tools/call echo".to_owned()), "{names:?}");
    assert!(names.contains(&"mcp session".to_owned()), "{names:?}");
    assert!(rest.contains("span(s) sent to"), "{rest}");
}

/// #33: the app (`mcpscope --otlp-endpoint URL`) sends each session it
/// launches; closing the tab sends the rest, the session span included.
#[test]
fn the_app_sends_its_sessions_to_the_collector() {
    use egui_kittest::Harness;
    use mcpscope_app::{McpscopeApp, StartupArgs};
    let mut collector = Collector::start("");
    let everything =
        need(repo().join("tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"));
    let args = StartupArgs {
        launch: vec!["node".into(), everything.display().to_string(), "stdio".into()],
        otlp_endpoint: Some(collector.url()),
        ..StartupArgs::default()
    };
    let mut h = Harness::builder()
        .with_size([1440.0, 900.0])
        .allow_missing_glyphs()
        .build_eframe(move |cc| McpscopeApp::new(cc, args));
    step_until(&mut h, "the handshake", |app| {
        app.session()
            .inspection
            .as_ref()
            .is_some_and(|i| i.model.handshake.initialized_row.is_some())
    });
    assert!(h.state().session().inspection.as_ref().unwrap().traces().is_some());
    // Closing the tab ends the session (off the UI thread) and sends the rest.
    h.state_mut().close_tab(0);
    h.step();
    let mut names = Vec::new();
    while !names.contains(&"mcp session".to_owned()) {
        let got = collector.next();
        assert!(got["problems"].as_array().unwrap().is_empty(), "{got}");
        names.extend(span_names(&got));
    }
    assert!(names.contains(&"initialize".to_owned()), "{names:?}");
    assert!(names.contains(&"tools/list".to_owned()), "{names:?}");
}

/// #33: OTLP/HTTP protobuf (`OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf`):
/// every test capture's traces, parsed by the official protobuf classes
/// (which must write back the very bytes sent), are the same spans as the
/// JSON export; a partial success in protobuf is read and said; gRPC is
/// refused as such.
#[test]
fn traces_go_as_protobuf_when_asked_and_match_the_json() {
    let mut collector = Collector::start("");
    let send = |cap: &Path, protocol: &str, url: &str| {
        crate::support::mcpscope_command()
            .args(["export", "--format", "otlp-json", "--otlp-endpoint", url])
            .arg(cap)
            .env("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
            .output()
            .unwrap()
    };
    let mut compared = 0;
    for cap in test_captures() {
        let out = send(&cap, "http/json", &collector.url());
        if !out.status.success() {
            // Captures with nothing to trace are refused the same way either way.
            assert!(!send(&cap, "http/protobuf", &collector.url()).status.success());
            continue;
        }
        let json = collector.next();
        let out = send(&cap, "http/protobuf", &collector.url());
        assert!(out.status.success(), "{}: {}", cap.display(), text(&out.stderr));
        let proto = collector.next();
        assert_eq!(proto["type"], "application/x-protobuf");
        assert!(
            proto["problems"].as_array().unwrap().is_empty(),
            "{}: {proto}",
            cap.display()
        );
        assert_eq!(json["spans"], proto["spans"], "{}", cap.display());
        compared += 1;
    }
    assert!(compared > 20, "{compared} captures compared");

    let mut partial = Collector::start("partial");
    let cap = repo().join("tests/captures/unanswered-request.jsonl");
    let out = send(&cap, "http/protobuf", &partial.url());
    assert!(out.status.success(), "{}", text(&out.stderr));
    partial.next();
    assert!(
        text(&out.stderr).contains("dropped 1 span(s): one span was bad"),
        "{}",
        text(&out.stderr)
    );
    let out = send(&cap, "grpc", &partial.url());
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("http/json or http/protobuf"),
        "{}",
        text(&out.stderr)
    );
}

/// #33: `load --otlp-endpoint` sends the sampled sessions' traces, from both
/// engines (Streamable HTTP driven from one thread, and stdio sessions).
#[test]
fn load_sends_its_sampled_sessions_to_the_collector() {
    let mut collector = Collector::start("");
    let fast = FastServer::start(&[]);
    let url = fast.url.clone();
    let dir = tempfile::tempdir().unwrap();
    let out = crate::support::mcpscope_command()
        .args([
            "load",
            "--server-url",
            &url,
            "--tool-name",
            "echo",
            "--concurrency",
            "2",
            "--requests",
            "20",
        ])
        .args([
            "--sample-every",
            "2",
            "--quiet",
            "--otlp-endpoint",
            &collector.url(),
            "--capture-dir",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    drop(fast);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("span(s) of the sampled sessions sent to"),
        "{}",
        text(&out.stderr)
    );
    let mut names = Vec::new();
    while !names.contains(&"mcp session".to_owned()) {
        let got = collector.next();
        assert!(got["problems"].as_array().unwrap().is_empty(), "{got}");
        names.extend(span_names(&got));
    }
    assert!(names.contains(&"initialize".to_owned()), "{names:?}");
    assert!(names.contains(&"tools/call echo".to_owned()), "{names:?}");
    // The sampled session (1 of 2) is kept as a capture too.
    let kept: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    let loaded = mcpscope_core::record::capture::load(&kept[0].path()).unwrap();
    assert!(loaded.events.len() >= 4, "{:?}", loaded.events.len());

    // stdio sessions through the client engine.
    let out = crate::support::mcpscope_command()
        .args([
            "load",
            "--tool-name",
            "echo",
            "--tool-arg",
            "message=x",
            "--sessions",
            "1",
            "--requests",
            "5",
        ])
        .args([
            "--quiet",
            "--otlp-endpoint",
            &collector.url(),
            "--sample-every",
            "1",
            "--",
        ])
        .args(["python3", &faulty_path(), "--mode", "normal"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut names = Vec::new();
    while !names.contains(&"mcp session".to_owned()) {
        names.extend(span_names(&collector.next()));
    }
    assert_eq!(names.iter().filter(|n| *n == "tools/call echo").count(), 5, "{names:?}");
}
