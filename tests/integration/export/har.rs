//! `mcpscope export --format har`: HTTP and stdio captures as valid HAR 1.2.

use super::*;

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

#[test]
#[cfg(unix)]
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
    let out = crate::support::mcpscope_command()
        .args(["export"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert!(
        text(&out.stderr).contains("not an mcpscope capture"),
        "{}",
        text(&out.stderr)
    );
}
