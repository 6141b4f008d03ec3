//! `mcpscope stats` as a user runs it: on a recorded server-everything
//! session, over HTTP (answers by stream or JSON), on a live server
//! (`--context`, with its budget exit status), and on bad input.

use crate::support::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn mcpscope(args: &[&str]) -> std::process::Output {
    mcpscope_command().args(args).output().expect("running mcpscope")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn recorded() -> PathBuf {
    repo().join("tests/vectors/server-everything-session.jsonl")
}

fn everything_args() -> Vec<String> {
    let spec = everything();
    std::iter::once(spec.program).chain(spec.args).collect()
}

fn json_of(args: &[&str]) -> Value {
    let out = mcpscope(args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)))
}

fn count(capture: &Path, expr: &str) -> u64 {
    let out = mcpscope(&["filter", "--count", capture.to_str().unwrap(), expr]);
    text(&out.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{expr}: {}", text(&out.stderr)))
}

#[test]
fn every_table_as_json_with_a_filter_to_apply_per_row() {
    let c = recorded();
    let v = json_of(&["stats", "--format", "json", c.to_str().unwrap()]);
    for table in ["conversations", "endpoints", "srt", "io", "expert", "context"] {
        assert!(v.get(table).is_some(), "{table} missing: {v}");
    }
    assert_eq!(v["conversations"].as_array().unwrap().len(), 6);
    // Each row's filter keeps what the row counts, as `filter` sees it.
    for row in v["srt"].as_array().unwrap() {
        let expr = row["filter"].as_str().unwrap();
        let requests = row["requests"].as_u64().unwrap();
        let answered = row["answered"].as_u64().unwrap();
        assert_eq!(count(&c, expr), requests + answered, "{expr}");
    }
    for conv in v["conversations"].as_array().unwrap() {
        let expr = conv["filter"].as_str().unwrap();
        assert!(count(&c, expr) > 0, "{expr}");
    }
    let expert = &v["expert"][0];
    assert_eq!(expert["rule"], "tool-error-for-protocol-error");
    assert_eq!(count(&c, expert["filter"].as_str().unwrap()), 2);
    let echo = v["context"]["listings"][0]["definitions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "echo")
        .unwrap();
    assert!(echo["tokens"]["o200k"].as_u64().unwrap() > 10);
}

#[test]
fn io_series_agree_with_filter_count_per_interval() {
    let c = recorded();
    let v = json_of(&[
        "stats",
        "--format",
        "json",
        "--table",
        "io",
        "--interval",
        "500ms",
        "--series",
        r#"method == "tools/call""#,
        "--series",
        r#"kind == "iserror""#,
        c.to_str().unwrap(),
    ]);
    let io = &v["io"];
    assert_eq!(io["interval_us"], 500_000);
    for (i, expr) in [r#"method == "tools/call""#, r#"kind == "iserror""#].iter().enumerate() {
        let buckets = io["series"][i]["buckets"].as_array().unwrap();
        let mut total = 0;
        for (b, bucket) in buckets.iter().enumerate() {
            let (from, to) = (b * 500, (b + 1) * 500);
            let frames = bucket["frames"].as_u64().unwrap();
            if frames > 0 {
                assert_eq!(
                    count(&c, &format!("time >= {from}ms and time < {to}ms and ({expr})")),
                    frames
                );
            }
            total += frames;
        }
        assert_eq!(total, count(&c, expr), "{expr}");
    }
}

#[test]
fn srt_as_csv_by_tool_and_the_text_tables() {
    let c = recorded();
    let out = mcpscope(&[
        "stats",
        "--table",
        "srt",
        "--by",
        "tool",
        "--format",
        "csv",
        c.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let csv = text(&out.stdout);
    let mut lines = csv.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("method,detail,requests,errors,is_error")
    );
    let tools: Vec<&str> = lines.map(|l| l.split(',').nth(1).unwrap()).collect();
    assert_eq!(tools, ["echo", "get-sum", "no-such-tool"]);
    let out = mcpscope(&["stats", c.to_str().unwrap()]);
    let t = text(&out.stdout);
    for heading in [
        "Conversations",
        "Endpoints",
        "Service response time",
        "I/O graph",
        "Expert Info",
        "Context cost",
    ] {
        assert!(t.contains(heading), "{heading} missing:\n{t}");
    }
    assert!(t.contains("mcp-servers/everything"), "{t}");
}

#[test]
fn http_answers_are_counted_by_stream_or_json() {
    let server = crate::http::HttpServer::start("streamableHttp");
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("http.jsonl");
    let out = mcpscope(&[
        "call",
        "--server-url",
        &server.url("/mcp"),
        "--header",
        "Authorization: Bearer stats-s3cret",
        "--tool-name",
        "echo",
        "--tool-arg",
        "message=hi",
        "--capture",
        capture.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v = json_of(&[
        "stats",
        "--format",
        "json",
        "--table",
        "srt",
        "--table",
        "conversations",
        capture.to_str().unwrap(),
    ]);
    let conv = &v["conversations"][0];
    assert_eq!(conv["transport"], "http");
    let srt = v["srt"].as_array().unwrap();
    let answered: u64 = srt
        .iter()
        .filter(|r| r["detail"] == "")
        .map(|r| r["answered"].as_u64().unwrap())
        .sum();
    let classified: u64 = srt
        .iter()
        .filter(|r| r["detail"] == "")
        .map(|r| r["by_stream"].as_u64().unwrap() + r["by_json"].as_u64().unwrap())
        .sum();
    assert!(answered >= 2);
    assert_eq!(
        classified, answered,
        "every answer over HTTP came by stream or JSON: {srt:?}"
    );
    // The bearer token is nowhere in what stats prints.
    let all = mcpscope(&["stats", "--format", "json", capture.to_str().unwrap()]);
    assert!(!text(&all.stdout).contains("stats-s3cret"));
}

#[test]
fn live_context_cost_with_its_budget_as_the_exit_status() {
    let mut args = vec![
        "stats".to_owned(),
        "--context".into(),
        "--format".into(),
        "json".into(),
        "--".into(),
    ];
    args.extend(everything_args());
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let v = json_of(&refs);
    let listings = v["context"]["listings"].as_array().unwrap();
    let kinds: Vec<&str> = listings.iter().map(|l| l["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["tool", "prompt", "resource-template"]);
    assert!(listings.iter().all(|l| l["complete"] == true));
    // The same figures as the recording of the same server.
    let recorded = json_of(&[
        "stats",
        "--format",
        "json",
        "--table",
        "context",
        recorded().to_str().unwrap(),
    ]);
    assert_eq!(
        recorded["context"]["listings"][0]["total_tokens"],
        listings[0]["total_tokens"]
    );
    // Over a budget: exit 1, and it says which.
    let mut tight = vec![
        "stats".to_owned(),
        "--context".into(),
        "--budget-definition".into(),
        "150".into(),
        "--".into(),
    ];
    tight.extend(everything_args());
    let refs: Vec<&str> = tight.iter().map(String::as_str).collect();
    let out = mcpscope(&refs);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    assert!(t.contains("over budget: the tool \"gzip-file-as-resource\""), "{t}");
}

#[test]
fn bad_input_gets_a_clear_message_and_its_exit_status() {
    let c = recorded();
    let c = c.to_str().unwrap();
    let out = mcpscope(&["stats", "--filter", "method ==", c]);
    assert_eq!(out.status.code(), Some(64));
    assert!(
        text(&out.stderr).contains("the filter is not valid"),
        "{}",
        text(&out.stderr)
    );
    let out = mcpscope(&["stats", "--format", "csv", c]);
    assert_eq!(out.status.code(), Some(64));
    assert!(text(&out.stderr).contains("give --table"));
    let out = mcpscope(&["stats", "--interval", "2m", c]);
    assert_eq!(out.status.code(), Some(64));
    assert!(text(&out.stderr).contains("outside 1ms to 1m"), "{}", text(&out.stderr));
    let out = mcpscope(&["stats", "/nonexistent/capture.jsonl"]);
    assert_eq!(out.status.code(), Some(4));
    assert!(
        text(&out.stderr).contains("cannot open the capture"),
        "{}",
        text(&out.stderr)
    );
    let dir = tempfile::tempdir().unwrap();
    let not = dir.path().join("not.jsonl");
    std::fs::write(&not, "hello\n").unwrap();
    let out = mcpscope(&["stats", not.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(4));
    assert!(text(&out.stderr).contains("not JSON"), "{}", text(&out.stderr));
    // A server that is not one: the session's own message, no table.
    let out = mcpscope(&["stats", "--context", "--", "python3", "-c", "import sys; sys.exit(3)"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(text(&out.stdout).is_empty(), "{}", text(&out.stdout));
    assert!(!text(&out.stderr).is_empty());
}

#[test]
fn a_hostile_definition_is_measured_in_bounded_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hostile.jsonl");
    let header = std::fs::read_to_string(repo().join("tests/captures/context-budget.jsonl")).unwrap();
    let mut lines: Vec<String> = header.lines().take(6).map(str::to_owned).collect();
    // Half a megabyte without a space, and a name that is a terminal escape.
    let tool = serde_json::json!({"name": "\u{1b}[2Jevil", "description": "x".repeat(500_000), "inputSchema": {"type": "object"}});
    let raw = serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [tool]}}).to_string();
    lines.push(serde_json::json!({"t_us": 5000, "seq": 4, "dir": "in", "raw": raw, "eol": "lf"}).to_string());
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let out = mcpscope(&["stats", "--table", "context", path.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "over the default budget: {}",
        text(&out.stderr)
    );
    let t = text(&out.stdout);
    assert!(!t.contains('\u{1b}'), "escapes reach the terminal: {t:?}");
    assert!(t.contains("evil"), "{t}");
    let out = mcpscope(&["stats", "--table", "context", "--format", "csv", path.to_str().unwrap()]);
    let csv = text(&out.stdout);
    assert!(!csv.contains('\u{1b}') && csv.contains("evil"), "{csv:?}");
}
