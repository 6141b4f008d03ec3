//! `mcpscope export --format har`: captures as HAR 1.2, checked with the HAR
//! schema's own validator (npm `har-validator`, which Chrome-compatible HAR
//! readers follow) against a real Streamable HTTP server and stdio captures.

use crate::http::HttpServer;
use crate::support::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

mod collector;
mod har;
mod import;
mod otlp;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `mcpscope call` of server-everything's echo tool over Streamable HTTP,
/// recorded in DIR/http.jsonl (the capture's path).
fn echo_over_http(server: &HttpServer, dir: &Path, message: &str, extra: &[&str]) -> PathBuf {
    let cap = dir.join("http.jsonl");
    let out = crate::support::mcpscope_command()
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
    let out = crate::support::mcpscope_command()
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
