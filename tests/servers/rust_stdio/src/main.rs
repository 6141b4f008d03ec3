//! An MCP server over stdio (2025-11-25 and the eras before it), small
//! enough to cross-build for Windows and run under Wine, where the Node.js
//! and Python peers of the other tests are not.
//!
//! Tools: `echo` (text back), `add` (two numbers, with structured content),
//! `fail` (a tool error: `isError: true`), `spawn_child` (starts a copy of
//! itself that writes a heartbeat to a file, to show a server's children
//! are stopped with it). Options: `--crlf` ends every line with CRLF (as
//! some Windows servers do); `--sleep SECS` only sleeps; `--heartbeat FILE`
//! is the child `spawn_child` starts.

use serde_json::{Value, json};
use std::io::{BufRead, Write};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--sleep") {
        let secs = args.get(i + 1).and_then(|s| s.parse().ok()).unwrap_or(60);
        std::thread::sleep(std::time::Duration::from_secs(secs));
        return;
    }
    // The child spawn_child starts: a byte every 100 ms into this file, for
    // five minutes, so a test sees whether it still runs.
    if let Some(i) = args.iter().position(|a| a == "--heartbeat") {
        let path = args.get(i + 1).cloned().unwrap_or_default();
        for _ in 0..3000 {
            if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(&path) {
                let _ = f.write_all(b".");
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        return;
    }
    let crlf = args.iter().any(|a| a == "--crlf");
    let ending = if crlf { "\r\n" } else { "\n" };
    eprintln!("rust-stdio-server: ready (pid {})", std::process::id());
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    let mut children = Vec::new();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let line = line.trim_end_matches('\r');
        if line.is_empty() {
            continue;
        }
        let Ok(msg) = serde_json::from_str::<Value>(line) else {
            let answer = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}});
            let _ = write!(out, "{answer}{ending}");
            let _ = out.flush();
            continue;
        };
        let Some(id) = msg.get("id").cloned() else {
            eprintln!("rust-stdio-server: notification {}", msg["method"]);
            continue;
        };
        let method = msg["method"].as_str().unwrap_or_default();
        let answer = match method {
            "initialize" => ok(
                &id,
                json!({
                    "protocolVersion": msg["params"]["protocolVersion"].as_str().unwrap_or("2025-11-25"),
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "rust-stdio-server", "version": "0.1.0"}
                }),
            ),
            "ping" => ok(&id, json!({})),
            "tools/list" => ok(&id, json!({"tools": tools()})),
            "tools/call" => call(&id, &msg["params"], &mut children),
            _ => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("Method not found: {method}")}})
            }
        };
        if write!(out, "{answer}{ending}").and_then(|_| out.flush()).is_err() {
            break;
        }
    }
    // The children are left running, as a careless server leaves them:
    // ending them is mcpscope's job (a process group, a Job Object).
    drop(children);
}

fn ok(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn tools() -> Value {
    json!([
        {"name": "echo", "description": "Says the text back.",
         "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
        {"name": "add", "description": "Adds two numbers.",
         "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]},
         "outputSchema": {"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]}},
        {"name": "fail", "description": "Always fails, as a tool (isError).",
         "inputSchema": {"type": "object"}},
        {"name": "spawn_child", "description": "Starts a child process that appends a byte to a file every 100 ms, and says its pid.",
         "inputSchema": {"type": "object", "properties": {"heartbeat": {"type": "string"}}, "required": ["heartbeat"]}}
    ])
}

fn call(id: &Value, params: &Value, children: &mut Vec<std::process::Child>) -> Value {
    let args = &params["arguments"];
    match params["name"].as_str().unwrap_or_default() {
        "echo" => ok(
            id,
            json!({"content": [{"type": "text", "text": args["text"].as_str().unwrap_or_default()}]}),
        ),
        "add" => match (args["a"].as_f64(), args["b"].as_f64()) {
            (Some(a), Some(b)) => ok(
                id,
                json!({"content": [{"type": "text", "text": format!("{}", a + b)}], "structuredContent": {"sum": a + b}}),
            ),
            _ => json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": "a and b must be numbers"}}),
        },
        "fail" => ok(
            id,
            json!({"content": [{"type": "text", "text": "it failed, as asked"}], "isError": true}),
        ),
        "spawn_child" => {
            let me = std::env::current_exe().unwrap_or_default();
            let heartbeat = args["heartbeat"].as_str().unwrap_or_default();
            match std::process::Command::new(me)
                .args(["--heartbeat", heartbeat])
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .spawn()
            {
                Ok(child) => {
                    let pid = child.id();
                    children.push(child);
                    ok(id, json!({"content": [{"type": "text", "text": format!("{pid}")}]}))
                }
                Err(e) => ok(
                    id,
                    json!({"content": [{"type": "text", "text": e.to_string()}], "isError": true}),
                ),
            }
        }
        other => {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": format!("Unknown tool: {other}")}})
        }
    }
}
