//! The CLI on Windows, run under Wine against a Windows server: the Rust
//! stdio test server (tests/servers/rust_stdio) cross-built for Windows.
//! scripts/wine-test runs these (`--ignored`) with MCPSCOPE_TEST_WINE_EXE
//! and MCPSCOPE_TEST_WINE_SERVER naming the two .exe files.

use crate::support::*;
use serde_json::Value;
use std::path::PathBuf;
use std::process::Output;

fn server() -> String {
    let exe = std::env::var_os("MCPSCOPE_TEST_WINE_SERVER").expect("scripts/wine-test sets MCPSCOPE_TEST_WINE_SERVER");
    // As a Windows program names it: Wine maps / to Z:.
    format!("Z:{}", PathBuf::from(exe).display()).replace('/', "\\")
}

fn run(args: &[&str], server_args: &[&str]) -> Output {
    let server = server();
    let mut all: Vec<&str> = args.to_vec();
    all.push("--");
    all.push(&server);
    all.extend_from_slice(server_args);
    mcpscope_command()
        .args(&all)
        .output()
        .expect("running mcpscope under wine")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
#[ignore = "run by scripts/wine-test against the Windows build"]
fn call_lists_the_tools_of_a_windows_server() {
    let out = run(&["call", "--method", "tools/list"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["echo", "add", "fail", "spawn_child"]);
}

#[test]
#[ignore = "run by scripts/wine-test against the Windows build"]
fn a_tool_is_called_with_typed_arguments_and_its_structured_result_printed() {
    let out = run(
        &["call", "--tool-name", "add", "--tool-arg", "a=2", "--tool-arg", "b=3.5"],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["structuredContent"]["sum"], 5.5);
}

#[test]
#[ignore = "run by scripts/wine-test against the Windows build"]
fn a_tool_error_is_not_a_protocol_error() {
    let out = run(&["call", "--tool-name", "fail"], &[]);
    assert_eq!(out.status.code(), Some(2), "isError exits 2: {}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["isError"], true);
    let unknown = run(&["call", "--method", "nope/nothing"], &[]);
    assert_ne!(unknown.status.code(), Some(0));
    assert!(text(&unknown.stderr).contains("-32601"), "{}", text(&unknown.stderr));
}

/// A server that ends its lines with CRLF is read all the same, and the
/// capture keeps the bytes and the anomaly.
#[test]
#[ignore = "run by scripts/wine-test against the Windows build"]
fn crlf_lines_are_read_and_recorded_as_they_came() {
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("crlf.jsonl");
    let out = run(
        &[
            "call",
            "--method",
            "tools/list",
            "--capture",
            &capture.display().to_string(),
        ],
        &["--crlf"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("[crlf]"), "{}", text(&out.stderr));
    let loaded = mcpscope_core::record::capture::load(&capture).unwrap();
    let crlf = loaded.events.iter().any(|e| {
        matches!(e, mcpscope_core::transport::event::Event::Frame(f)
            if f.ending == mcpscope_core::wire::framing::LineEnding::CrLf)
    });
    assert!(crlf, "the line ending is kept in the capture");
    // The Linux build lints the Windows capture: the same file on both.
    let lint = std::process::Command::new(bin())
        .args(["lint"])
        .arg(&capture)
        .output()
        .unwrap();
    assert!(text(&lint.stdout).contains("crlf"), "{}", text(&lint.stdout));
}

/// The proxy forwards bytes unchanged between a client and a Windows
/// server, and ends when the client closes its side.
#[test]
#[ignore = "run by scripts/wine-test against the Windows build"]
fn the_proxy_forwards_a_session_unchanged() {
    use std::io::Write;
    let server = server();
    let mut proxy = mcpscope_command()
        .args(["proxy", "--", &server])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let echo = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"through the proxy"}}}"#;
    let mut stdin = proxy.stdin.take().unwrap();
    writeln!(stdin, "{init}").unwrap();
    writeln!(stdin, "{echo}").unwrap();
    drop(stdin);
    let out = proxy.wait_with_output().unwrap();
    let lines: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{}", text(&out.stderr));
    assert_eq!(lines[1]["result"]["content"][0]["text"], "through the proxy");
}

/// What the server started is in its Job Object: when the session ends,
/// the child it spawned stops too (its heartbeat file stops growing).
#[test]
#[ignore = "run by scripts/wine-test against the Windows build"]
fn a_servers_child_ends_with_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let beat = dir.path().join("heartbeat");
    let windows_path = format!("Z:{}", beat.display()).replace('/', "\\");
    let out = run(
        &[
            "call",
            "--tool-name",
            "spawn_child",
            "--tool-arg",
            &format!("heartbeat={windows_path}"),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // The child ran (a positive control), then stopped with the session.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::fs::metadata(&beat).map_or(0, |m| m.len()) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the child never wrote its heartbeat"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    let before = std::fs::metadata(&beat).unwrap().len();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let after = std::fs::metadata(&beat).unwrap().len();
    assert_eq!(before, after, "the child outlived the session: its heartbeat goes on");
}

#[test]
#[ignore = "run by scripts/wine-test against the Windows build"]
fn a_missing_program_is_said_with_the_windows_path() {
    let out = mcpscope_command()
        .args(["call", "--method", "tools/list", "--", "definitely-not-installed"])
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let err = text(&out.stderr);
    assert!(err.contains("definitely-not-installed: not found in PATH"), "{err}");
    assert!(err.contains("C:\\windows"), "the Windows PATH is named: {err}");
}
