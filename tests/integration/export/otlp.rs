//! `mcpscope export --format otlp`: OTLP/JSON files that the official
//! protos decode, with failures as span statuses.

use super::*;

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
