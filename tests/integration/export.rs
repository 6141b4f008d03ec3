//! `mcpscope export --format har`: captures as HAR 1.2, checked with the HAR
//! schema's own validator (npm `har-validator`, which Chrome-compatible HAR
//! readers follow) against a real Streamable HTTP server and stdio captures.

use crate::http::HttpServer;
use crate::support::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// What `har-validator` says of each file: empty when every one is valid HAR 1.2.
fn har_problems(files: &[PathBuf]) -> String {
    let module = need(repo().join("tests/peers/node_modules/har-validator"));
    let script = "const v = require(process.argv[1]); const fs = require('fs');\n\
                  (async () => { for (const f of process.argv.slice(2)) {\n\
                    try { await v.har(JSON.parse(fs.readFileSync(f, 'utf8'))); }\n\
                    catch (e) { console.log(f + ': ' + JSON.stringify(e.errors || e.message)); } } })();";
    let out = Command::new("node")
        .arg("-e")
        .arg(script)
        .arg(&module)
        .args(files)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout).trim().to_owned()
}

/// `mcpscope call` of server-everything's echo tool over Streamable HTTP,
/// recorded in DIR/http.jsonl (the capture's path).
fn echo_over_http(server: &HttpServer, dir: &Path, message: &str, extra: &[&str]) -> PathBuf {
    let cap = dir.join("http.jsonl");
    let out = Command::new(bin())
        .args(["call", "--server-url", &server.url("/mcp")])
        .args(extra)
        .args(["--tool-name", "echo", "--tool-arg", &format!("message={message}")])
        .arg("--capture")
        .arg(&cap)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    cap
}

/// Every capture in tests/captures.
fn test_captures() -> Vec<PathBuf> {
    let mut all: Vec<PathBuf> = std::fs::read_dir(repo().join("tests/captures"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    all.sort();
    all
}

/// `mcpscope export --format FORMAT -o TO CAPTURE`, read back.
fn export_as(format: &str, capture: &Path, to: &Path) -> Value {
    let out = Command::new(bin())
        .args(["export", "--format", format, "-o"])
        .arg(to)
        .arg(capture)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&std::fs::read(to).unwrap()).unwrap()
}

fn export(capture: &Path, to: &Path) -> Value {
    export_as("har", capture, to)
}

#[test]
fn a_streamable_http_session_is_one_entry_per_exchange_with_its_headers_masked() {
    let server = HttpServer::start("streamableHttp");
    let dir = tempfile::tempdir().unwrap();
    let cap = echo_over_http(
        &server,
        dir.path(),
        "hello har",
        &["-H", "Authorization: Bearer sekrit-token-123"],
    );
    let file = dir.path().join("http.har");
    let har = export(&cap, &file);
    let raw = std::fs::read_to_string(&file).unwrap();
    assert!(!raw.contains("sekrit-token-123"), "the token is masked");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    let entries = har["log"]["entries"].as_array().unwrap();
    let by_method = |m: &str| {
        entries
            .iter()
            .find(|e| e["_mcp"]["method"] == m)
            .unwrap_or_else(|| panic!("no {m} entry: {har}"))
    };
    let init = by_method("initialize");
    assert_eq!(init["request"]["method"], "POST");
    assert_eq!(init["request"]["url"], server.url("/mcp"));
    assert_eq!(init["response"]["status"], 200);
    let auth = init["request"]["headers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["name"].as_str().unwrap().eq_ignore_ascii_case("authorization"))
        .expect("the header is listed, its value masked");
    assert_eq!(auth["value"], "Bearer ****");
    let call = by_method("tools/call");
    assert!(call["_mcp"]["sessionId"].is_string(), "{call}");
    assert!(
        call["request"]["postData"]["text"]
            .as_str()
            .unwrap()
            .contains("hello har")
    );
    let content = &call["response"]["content"];
    if content["mimeType"] == "text/event-stream" {
        assert!(
            content["text"].as_str().unwrap().starts_with("event: message\ndata: {"),
            "{content}"
        );
    }
    assert!(content["text"].as_str().unwrap().contains("hello har"));
    let dirs: Vec<&str> = call["_mcpMessages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["dir"].as_str().unwrap())
        .collect();
    assert_eq!(dirs.first(), Some(&"send"));
    assert_eq!(dirs.last(), Some(&"receive"));
    let initialized = by_method("notifications/initialized");
    assert_eq!(initialized["response"]["status"], 202, "the POST that carried it");
    let problems = har_problems(&[file]);
    assert!(problems.is_empty(), "{problems}");
}

#[test]
fn stdio_captures_become_valid_har_with_json_rpc_statuses() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for cap in test_captures() {
        let to = dir.path().join(cap.file_name().unwrap()).with_extension("har");
        let har = export(&cap, &to);
        let entries = har["log"]["entries"].as_array().unwrap();
        for e in entries {
            let url = e["request"]["url"].as_str().unwrap();
            if e["request"]["httpVersion"] == "JSON-RPC/2.0" {
                assert!(url.starts_with("mcp://"), "{}: {url}", cap.display());
            }
        }
        match cap.file_name().unwrap().to_str().unwrap() {
            "unanswered-request.jsonl" => {
                assert!(entries.iter().any(|e| e["response"]["status"] == 0), "{har}");
                assert!(har["log"]["comment"].as_str().unwrap().contains("never answered"));
            }
            "protocol-error-for-tool-failure.jsonl" => {
                assert!(entries.iter().any(|e| e["response"]["status"] == 500), "{har}");
            }
            _ => {}
        }
        files.push(to);
    }
    assert!(files.len() > 40);
    let problems = har_problems(&files);
    assert!(problems.is_empty(), "{problems}");
}

#[test]
fn the_validator_refuses_what_is_not_har_and_bad_input_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.har");
    std::fs::write(
        &bad,
        r#"{"log":{"version":"1.2","creator":{"name":"x"},"entries":[{"request":{}}]}}"#,
    )
    .unwrap();
    assert!(
        !har_problems(std::slice::from_ref(&bad)).is_empty(),
        "the check can fail"
    );
    let out = Command::new(bin()).args(["export"]).arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert!(
        text(&out.stderr).contains("not an mcpscope capture"),
        "{}",
        text(&out.stderr)
    );
}

/// Problems the official proto definitions find in OTLP/JSON files (see
/// tests/clients/otlp_check.py); empty when every one decodes.
fn otlp_problems(files: &[PathBuf]) -> String {
    let python = need(repo().join("tests/peers/.venv/bin/python"));
    let out = Command::new(python)
        .arg(repo().join("tests/clients/otlp_check.py"))
        .args(files)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout).trim().to_owned()
}

fn otlp(capture: &Path, to: &Path) -> Value {
    export_as("otlp-json", capture, to)
}

fn spans(v: &Value) -> &Vec<Value> {
    v["resourceSpans"][0]["scopeSpans"][0]["spans"].as_array().unwrap()
}

fn attribute<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| &a["value"])
}

#[test]
fn otlp_json_of_a_streamable_http_session_decodes_with_the_official_protos() {
    let server = HttpServer::start("streamableHttp");
    let dir = tempfile::tempdir().unwrap();
    let cap = echo_over_http(&server, dir.path(), "hello otel", &[]);
    let file = dir.path().join("http.otlp.json");
    let v = otlp(&cap, &file);
    let all = spans(&v);
    // Spans are written as they end: the session's comes last.
    let session = all
        .iter()
        .find(|s| s["name"] == "mcp session")
        .expect("the session span");
    assert_eq!(session["kind"], 1, "the session span is internal");
    let call = all
        .iter()
        .find(|s| s["name"] == "tools/call echo")
        .expect("a span named for the tool");
    assert_eq!(call["kind"], 3, "an integer kind: CLIENT");
    assert_eq!(call["traceId"], session["traceId"]);
    assert_eq!(call["parentSpanId"], session["spanId"]);
    assert_eq!(attribute(call, "mcp.method.name").unwrap()["stringValue"], "tools/call");
    assert_eq!(attribute(call, "gen_ai.tool.name").unwrap()["stringValue"], "echo");
    assert_eq!(attribute(call, "network.transport").unwrap()["stringValue"], "tcp");
    assert_eq!(attribute(call, "jsonrpc.request.id").unwrap()["stringValue"], "3");
    assert!(
        attribute(call, "mcp.session.id").is_some(),
        "a 2025-11-25 session has one"
    );
    assert_eq!(
        attribute(call, "server.port").unwrap()["intValue"],
        server.url("").rsplit(':').next().unwrap()
    );
    let start: u128 = call["startTimeUnixNano"].as_str().unwrap().parse().unwrap();
    let end: u128 = call["endTimeUnixNano"].as_str().unwrap().parse().unwrap();
    assert!(end >= start && start > 1_700_000_000_000_000_000);
    // Exported twice, the same trace.
    let again = otlp(&cap, &dir.path().join("again.json"));
    assert!(spans(&again).iter().all(|s| s["traceId"] == session["traceId"]));
    let problems = otlp_problems(&[file]);
    assert!(problems.is_empty(), "{problems}");
}

#[test]
fn otlp_json_of_every_test_capture_decodes_and_failures_set_the_status() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for cap in test_captures() {
        let to = dir.path().join(cap.file_name().unwrap()).with_extension("json");
        let v = otlp(&cap, &to);
        let error_types: Vec<&str> = spans(&v)
            .iter()
            .filter(|s| s["status"]["code"] == 2)
            .filter_map(|s| attribute(s, "error.type").and_then(|t| t["stringValue"].as_str()))
            .collect();
        match cap.file_name().unwrap().to_str().unwrap() {
            "unanswered-request.jsonl" => assert!(error_types.contains(&"no_response"), "{error_types:?}"),
            "tool-error-for-protocol-error.jsonl" => assert!(error_types.contains(&"tool_error"), "{error_types:?}"),
            "protocol-error-for-tool-failure.jsonl" => {
                assert!(
                    error_types.iter().any(|t| t.starts_with('-')),
                    "a JSON-RPC code: {error_types:?}"
                )
            }
            _ => {}
        }
        files.push(to);
    }
    assert!(files.len() > 40);
    let problems = otlp_problems(&files);
    assert!(problems.is_empty(), "{problems}");
}

/// The check above can fail: what OTLP/JSON forbids (enum names, base64 ids) is reported.
#[test]
fn the_otlp_check_refuses_enum_names_and_non_hex_ids() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"W47/95gDgQPSabYzgT/GDA==","spanId":"7uGbfsPBsXQ=",
            "name":"x","kind":"SPAN_KIND_CLIENT","startTimeUnixNano":"1","endTimeUnixNano":"2"}]}]}]}"#,
    )
    .unwrap();
    let problems = otlp_problems(&[bad]);
    assert!(problems.contains("kind") && problems.contains("traceId"), "{problems}");
}

// ---- import ----------------------------------------------------------------

fn import(file: &Path, to: &Path) -> std::process::Output {
    Command::new(bin())
        .arg("import")
        .arg(file)
        .arg("-o")
        .arg(to)
        .output()
        .unwrap()
}

/// The imported capture's frames: (direction, bytes as text).
fn frames_of(capture: &Path) -> Vec<(String, String)> {
    let loaded = mcpscope_core::record::capture::load(capture).unwrap();
    loaded
        .events
        .iter()
        .filter_map(|e| match e {
            mcpscope_core::transport::event::Event::Frame(f) => Some((format!("{:?}", f.direction), text(&f.raw))),
            _ => None,
        })
        .collect()
}

#[test]
fn a_har_mcpscope_exported_comes_back_as_the_same_messages() {
    let dir = tempfile::tempdir().unwrap();
    let cap = repo().join("tests/captures/unanswered-request.jsonl");
    let har = dir.path().join("out.har");
    export(&cap, &har);
    let back = dir.path().join("back.jsonl");
    let out = import(&har, &back);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("(HAR)"), "{}", text(&out.stderr));
    assert_eq!(
        frames_of(&back),
        frames_of(&cap),
        "every message, in order, byte for byte"
    );
    // It lints and mocks like any capture.
    let lint = Command::new(bin()).arg("lint").arg(&back).output().unwrap();
    assert!(
        text(&lint.stdout).contains("unanswered-request"),
        "{}",
        text(&lint.stdout)
    );
    let check = Command::new(bin())
        .args(["mock", "--check"])
        .arg(&back)
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", text(&check.stderr));
}

#[test]
fn a_har_from_another_tool_gives_its_json_rpc_bodies_and_event_streams() {
    let dir = tempfile::tempdir().unwrap();
    let har = dir.path().join("devtools.har");
    std::fs::write(
        &har,
        serde_json::json!({"log": {"version": "1.2", "creator": {"name": "WebInspector", "version": "537.36"},
          "entries": [
            {"startedDateTime": "2026-08-20T10:00:00.000Z", "time": 12,
             "request": {"method": "POST", "url": "http://127.0.0.1:3001/mcp", "httpVersion": "HTTP/1.1", "cookies": [],
                         "headers": [], "queryString": [], "headersSize": -1, "bodySize": 55,
                         "postData": {"mimeType": "application/json", "text": "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}"}},
             "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1", "cookies": [], "headers": [],
                          "content": {"size": 80, "mimeType": "text/event-stream",
                                      "text": "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}}\n\n"},
                          "redirectURL": "", "headersSize": -1, "bodySize": 80},
             "cache": {}, "timings": {"send": 0, "wait": 12, "receive": 0}},
            {"startedDateTime": "2026-08-20T10:00:01.000Z", "time": 1,
             "request": {"method": "GET", "url": "http://127.0.0.1:3001/favicon.ico", "httpVersion": "HTTP/1.1", "cookies": [],
                         "headers": [], "queryString": [], "headersSize": -1, "bodySize": 0},
             "response": {"status": 404, "statusText": "", "httpVersion": "HTTP/1.1", "cookies": [], "headers": [],
                          "content": {"size": 0, "mimeType": "text/html", "text": "<h1>no</h1>"},
                          "redirectURL": "", "headersSize": -1, "bodySize": 0},
             "cache": {}, "timings": {"send": 0, "wait": 1, "receive": 0}}]}})
        .to_string(),
    )
    .unwrap();
    let back = dir.path().join("back.jsonl");
    let out = import(&har, &back);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stderr);
    assert!(
        said.contains("3 message(s)") && said.contains("no stderr") && said.contains("1 entr(ies)"),
        "{said}"
    );
    let frames = frames_of(&back);
    assert_eq!(frames[0].0, "Out");
    assert!(
        frames[1].1.contains("notifications/progress") && frames[2].1.contains("\"tools\":[]"),
        "{frames:?}"
    );
    let loaded = mcpscope_core::record::capture::load(&back).unwrap();
    assert_eq!(loaded.header.transport, "http");
    assert_eq!(loaded.header.started_unix_ms, 1_787_220_000_000);
}

#[test]
fn mcpsnoop_sessions_inspector_exports_and_mcp_recorder_cassettes_are_read() {
    let dir = tempfile::tempdir().unwrap();
    // mcpsnoop (internal/proxy/frame.go's Envelope): two sessions, stderr, a meta frame.
    let snoop = dir.path().join("s1.jsonl");
    std::fs::write(
        &snoop,
        [
            r#"{"session_id":"s1","server_label":"weather","seq":1,"ts":"2026-08-20T10:00:00.000000001Z","direction":"meta","transport":"stdio","raw":{"command":["node","weather.js"],"cwd":"/srv"}}"#,
            r#"{"session_id":"s1","server_label":"weather","seq":2,"ts":"2026-08-20T10:00:00.100Z","direction":"c2s","transport":"stdio","raw":{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_weather"}}}"#,
            r#"{"session_id":"s1","server_label":"weather","seq":3,"ts":"2026-08-20T10:00:00.150Z","direction":"stderr","transport":"stdio","text":"fetching forecast"}"#,
            r#"{"session_id":"s1","server_label":"weather","seq":4,"ts":"2026-08-20T10:00:00.200Z","direction":"s2c","transport":"stdio","raw":{"jsonrpc":"2.0","id":3,"result":{"content":[]}}}"#,
            r#"{"session_id":"s2","server_label":"weather","seq":1,"ts":"2026-08-20T11:00:00Z","direction":"c2s","transport":"stdio","raw":{"jsonrpc":"2.0","id":1,"method":"ping"}}"#,
        ]
        .join("\n"),
    )
    .unwrap();
    let back = dir.path().join("snoop.mcpscope.jsonl");
    let out = import(&snoop, &back);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("4 message(s) in 2 session(s)"),
        "{}",
        text(&out.stderr)
    );
    let loaded = mcpscope_core::record::capture::load(&back).unwrap();
    assert_eq!(loaded.sessions.len(), 2);
    assert_eq!(loaded.header.command_line, "node weather.js");
    assert!(loaded.events.iter().any(
        |e| matches!(e, mcpscope_core::transport::event::Event::Stderr(s) if text(&s.raw) == "fetching forecast")
    ));
    let latency = loaded.events.iter().find_map(|e| match e {
        mcpscope_core::transport::event::Event::Frame(f) => f.link.as_ref().map(|l| l.latency.as_millis()),
        _ => None,
    });
    assert_eq!(latency, Some(100), "times kept: the answer came 100 ms later");

    // The Inspector's Protocol tab export: the response nested in its request.
    let insp = dir.path().join("inspector-protocol-weather-2026-08-20T10-00-00.json");
    std::fs::write(
        &insp,
        serde_json::json!([
            {"id": "a", "timestamp": "2026-08-20T10:00:00.000Z", "direction": "request", "origin": "client",
             "message": {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {"roots": {}}, "clientInfo": {"name": "inspector", "version": "1"}}},
             "response": {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "w", "version": "1"}}},
             "duration": 25},
            {"id": "b", "timestamp": "2026-08-20T10:00:00.030Z", "direction": "notification", "origin": "client",
             "message": {"jsonrpc": "2.0", "method": "notifications/initialized"}},
            {"id": "c", "timestamp": "2026-08-20T10:00:00.040Z", "direction": "request", "origin": "server",
             "message": {"jsonrpc": "2.0", "id": 7, "method": "roots/list"},
             "response": {"jsonrpc": "2.0", "id": 7, "result": {"roots": []}}, "duration": 2}
        ])
        .to_string(),
    )
    .unwrap();
    let back = dir.path().join("insp.jsonl");
    let out = import(&insp, &back);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let frames = frames_of(&back);
    let dirs: Vec<&str> = frames.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(dirs, ["Out", "In", "Out", "In", "Out"], "{frames:?}");
    let lint = Command::new(bin()).arg("lint").arg(&back).output().unwrap();
    assert_eq!(lint.status.code(), Some(0), "a clean session: {}", text(&lint.stdout));

    // An mcp-recorder cassette (mcp_recorder/_types.py, format 1.0).
    let cassette = dir.path().join("recording.json");
    std::fs::write(
        &cassette,
        serde_json::json!({"version": "1.0",
          "metadata": {"recorded_at": "2026-08-20T10:00:00+00:00", "server_url": "stdio://node weather.js", "protocol_version": "2025-11-25"},
          "interactions": [
            {"type": "jsonrpc_request", "request": {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}},
             "response": {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-11-25", "capabilities": {}}}, "latency_ms": 30},
            {"type": "notification", "request": {"jsonrpc": "2.0", "method": "notifications/initialized"}, "response": null, "response_status": 202},
            {"type": "lifecycle", "http_method": "DELETE", "http_path": "/mcp", "response_status": 200},
            {"type": "jsonrpc_request", "request": {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_weather"}},
             "response": {"jsonrpc": "2.0", "id": 1, "result": {"content": []}}, "response_is_sse": true, "latency_ms": 120}
          ]})
        .to_string(),
    )
    .unwrap();
    let back = dir.path().join("cassette.jsonl");
    let out = import(&cassette, &back);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stderr);
    assert!(
        said.contains("5 message(s)") && said.contains("lifecycle") && said.contains("event stream"),
        "{said}"
    );
    let loaded = mcpscope_core::record::capture::load(&back).unwrap();
    assert_eq!(loaded.header.command_line, "node weather.js");
    let mock = Command::new(bin())
        .args(["mock", "--check"])
        .arg(&back)
        .output()
        .unwrap();
    assert!(text(&mock.stdout).contains("tools/call"), "{}", text(&mock.stdout));
}

#[test]
fn an_unknown_file_or_an_existing_capture_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("notes.txt");
    std::fs::write(&junk, "just some notes\n").unwrap();
    let out = import(&junk, &dir.path().join("x.jsonl"));
    assert_eq!(out.status.code(), Some(4));
    assert!(
        text(&out.stderr).contains("not a format mcpscope imports"),
        "{}",
        text(&out.stderr)
    );
    let bad = dir.path().join("broken.har");
    std::fs::write(&bad, r#"{"log": {"creator": {"name": "x"}, "entries": 7}}"#).unwrap();
    let out = import(&bad, &dir.path().join("y.jsonl"));
    assert_eq!(out.status.code(), Some(4));
    assert!(
        text(&out.stderr).contains("HAR has no log.entries"),
        "{}",
        text(&out.stderr)
    );
    let existing = dir.path().join("existing.jsonl");
    std::fs::write(&existing, "keep me").unwrap();
    let har = dir.path().join("ok.har");
    export(&repo().join("tests/captures/crlf.jsonl"), &har);
    let out = import(&har, &existing);
    assert_eq!(out.status.code(), Some(4));
    assert!(text(&out.stderr).contains("already exists"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "keep me");
    let out = Command::new(bin()).arg("import").arg("/dev/zero").output().unwrap();
    assert_eq!(out.status.code(), Some(4), "a device is refused, not read");
    // Too large to read whole: refused as such, not cut short and then misread.
    let big = dir.path().join("big.har");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len((256 << 20) + 1).unwrap();
    let out = import(&big, &dir.path().join("big.jsonl"));
    assert_eq!(out.status.code(), Some(4));
    assert!(
        text(&out.stderr).contains("larger than 256 MiB"),
        "{}",
        text(&out.stderr)
    );
}

// ---- OTLP/HTTP ---------------------------------------------------------------

/// The test collector (tests/clients/otlp_receiver.py), killed when dropped.
struct Collector {
    child: std::process::Child,
    port: u16,
    exports: crossbeam_channel::Receiver<Value>,
}

impl Collector {
    fn start(mode: &str) -> Collector {
        use std::io::BufRead as _;
        let python = need(repo().join("tests/peers/.venv/bin/python"));
        let mut child = Command::new(python)
            .arg(repo().join("tests/clients/otlp_receiver.py"))
            .env("MODE", mode)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
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
        Collector { child, port, exports }
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

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn call_sends_its_session_to_an_otlp_collector() {
    let mut collector = Collector::start("");
    let everything =
        need(repo().join("tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"));
    let out = Command::new(bin())
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
    let out = Command::new(bin())
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
    let out = Command::new(bin())
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
    let out = Command::new(bin())
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
    let out = Command::new(bin())
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
    let mut proxy = Command::new(bin())
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
fn the_reverse_proxy_sends_its_sessions_spans() {
    let mut collector = Collector::start("");
    let server = HttpServer::start("streamableHttp");
    let mut proxy = Command::new(bin())
        .args(["proxy", "--listen", "127.0.0.1:0", "--upstream", &server.url("/mcp")])
        .args(["--otlp-endpoint", &collector.url()])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(proxy.stderr.take().unwrap());
    let addr = listening_addr(&mut err);
    let out = Command::new(bin())
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
    unsafe { libc::kill(proxy.id() as i32, libc::SIGTERM) };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    proxy.wait().unwrap();
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
        app.session
            .inspection
            .as_ref()
            .is_some_and(|i| i.model.handshake.initialized_row.is_some())
    });
    assert!(h.state().session.inspection.as_ref().unwrap().traces.is_some());
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
        Command::new(bin())
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

/// #33: a cassette made by the real mcp-recorder (0.5.0, from PyPI, in a
/// venv of its own) recording server-everything: imported, it holds the
/// session as recorded (the echo's answer included), lints, and the mock
/// serves it to `mcpscope call` with the recorded answer.
#[test]
fn a_cassette_the_real_mcp_recorder_made_is_imported_and_mocked() {
    let recorder = need(repo().join("tests/peers/.venv-recorder/bin/mcp-recorder"));
    let everything =
        need(repo().join("tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"));
    let dir = tempfile::tempdir().unwrap();
    let scenarios = dir.path().join("scenarios.yml");
    std::fs::write(
        &scenarios,
        format!(
            r#"schema_version: "1.0"
target:
  command: node
  args: ["{}", "stdio"]
scenarios:
  echo_session:
    actions:
      - list_tools
      - call_tool:
          name: echo
          arguments:
            message: recorded by mcp-recorder
"#,
            everything.display()
        ),
    )
    .unwrap();
    let out = Command::new(&recorder)
        .arg("record-scenarios")
        .arg(&scenarios)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}{}", text(&out.stdout), text(&out.stderr));
    let cassette = dir.path().join("cassettes/echo_session.json");
    let back = dir.path().join("imported.jsonl");
    let out = import(&cassette, &back);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("mcp-recorder"), "{}", text(&out.stderr));
    let loaded = mcpscope_core::record::capture::load(&back).unwrap();
    let frames: Vec<String> = loaded
        .events
        .iter()
        .filter_map(|e| match e {
            mcpscope_core::transport::event::Event::Frame(f) => Some(String::from_utf8_lossy(&f.raw).into_owned()),
            _ => None,
        })
        .collect();
    assert!(frames.iter().any(|f| f.contains("\"initialize\"")), "{frames:?}");
    assert!(
        frames.iter().any(|f| f.contains("Echo: recorded by mcp-recorder")),
        "the echo's answer is kept: {frames:?}"
    );
    let lint = Command::new(bin()).arg("lint").arg(&back).output().unwrap();
    assert!(lint.status.code().is_some_and(|c| c <= 1), "{}", text(&lint.stdout));
    // The mock answers a live client as the real server did.
    let call = Command::new(bin())
        .args([
            "call",
            "--tool-name",
            "echo",
            "--tool-arg",
            "message=recorded by mcp-recorder",
            "--",
        ])
        .arg(bin())
        .arg("mock")
        .arg(&back)
        .output()
        .unwrap();
    assert!(call.status.success(), "{}", text(&call.stderr));
    assert!(
        text(&call.stdout).contains("Echo: recorded by mcp-recorder"),
        "{}",
        text(&call.stdout)
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
    let out = Command::new(bin())
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
    let out = Command::new(bin())
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
