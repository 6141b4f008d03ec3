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

fn export(capture: &Path, to: &Path) -> Value {
    let out = Command::new(bin())
        .args(["export", "--format", "har", "-o"])
        .arg(to)
        .arg(capture)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&std::fs::read(to).unwrap()).unwrap()
}

#[test]
fn a_streamable_http_session_is_one_entry_per_exchange_with_its_headers_masked() {
    let server = HttpServer::start("streamableHttp");
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("http.jsonl");
    let out = Command::new(bin())
        .args(["call", "--server-url", &server.url("/mcp")])
        .args(["-H", "Authorization: Bearer sekrit-token-123"])
        .args(["--tool-name", "echo", "--tool-arg", "message=hello har"])
        .arg("--capture")
        .arg(&cap)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
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
    for entry in std::fs::read_dir(repo().join("tests/captures")).unwrap().flatten() {
        let cap = entry.path();
        if cap.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
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
    let out = Command::new(bin())
        .args(["export", "--format", "otlp-json", "-o"])
        .arg(to)
        .arg(capture)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&std::fs::read(to).unwrap()).unwrap()
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
    let cap = dir.path().join("http.jsonl");
    let out = Command::new(bin())
        .args(["call", "--server-url", &server.url("/mcp")])
        .args(["--tool-name", "echo", "--tool-arg", "message=hello otel"])
        .arg("--capture")
        .arg(&cap)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let file = dir.path().join("http.otlp.json");
    let v = otlp(&cap, &file);
    let all = spans(&v);
    let session = &all[0];
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
    assert_eq!(spans(&again)[0]["traceId"], session["traceId"]);
    let problems = otlp_problems(&[file]);
    assert!(problems.is_empty(), "{problems}");
}

#[test]
fn otlp_json_of_every_test_capture_decodes_and_failures_set_the_status() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for entry in std::fs::read_dir(repo().join("tests/captures")).unwrap().flatten() {
        let cap = entry.path();
        if cap.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
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
