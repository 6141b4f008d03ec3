//! `mcpscope import`: HAR files, mcpsnoop sessions, Inspector exports and
//! mcp-recorder cassettes become captures.

use super::*;

// ---- import ----------------------------------------------------------------

fn import(file: &Path, to: &Path) -> std::process::Output {
    crate::support::mcpscope_command()
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
    let lint = crate::support::mcpscope_command()
        .arg("lint")
        .arg(&back)
        .output()
        .unwrap();
    assert!(
        text(&lint.stdout).contains("unanswered-request"),
        "{}",
        text(&lint.stdout)
    );
    let check = crate::support::mcpscope_command()
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
    let lint = crate::support::mcpscope_command()
        .arg("lint")
        .arg(&back)
        .output()
        .unwrap();
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
    let mock = crate::support::mcpscope_command()
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
    let out = crate::support::mcpscope_command()
        .arg("import")
        .arg("/dev/zero")
        .output()
        .unwrap();
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
    let lint = crate::support::mcpscope_command()
        .arg("lint")
        .arg(&back)
        .output()
        .unwrap();
    assert!(lint.status.code().is_some_and(|c| c <= 1), "{}", text(&lint.stdout));
    // The mock answers a live client as the real server did.
    let call = crate::support::mcpscope_command()
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
