//! `mcpscope load` against real servers: the fast JSON-mode test server
//! (tests/servers/fast_http_server.mjs), server-everything over stdio, the
//! Python SDK server, servers that fail and die. Counts and classes are
//! asserted, not timings (the figures are in BENCHMARKS.md, from
//! scripts/load-bench); the one latency check is a stall ten times longer
//! than anything else in the run.

use crate::support::*;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn load(args: &[&str]) -> Output {
    crate::support::mcpscope_command()
        .arg("load")
        .args(args)
        .args(["--quiet", "--format", "json"])
        .output()
        .unwrap()
}

/// [`load`] with a server command after `--` (the output flags go before it).
fn load_with_server(args: &[&str]) -> Output {
    let split = args.iter().position(|a| *a == "--").unwrap_or(args.len());
    crate::support::mcpscope_command()
        .arg("load")
        .args(&args[..split])
        .args(["--quiet", "--format", "json"])
        .args(&args[split..])
        .output()
        .unwrap()
}

fn report(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&out.stdout), text(&out.stderr)))
}

fn key<'a>(r: &'a Value, k: &str) -> &'a Value {
    r["per_key"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["key"] == k)
        .unwrap_or_else(|| panic!("no {k} in {r}"))
}

fn class_count(r: &Value, class: &str) -> u64 {
    r["error_classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["class"] == class)
        .map_or(0, |c| c["count"].as_u64().unwrap())
}

#[test]
fn a_closed_loop_over_http_sends_exactly_what_was_asked() {
    let s = FastServer::start(&[]);
    let out = load(&[
        "--server-url",
        &s.url,
        "--tool-name",
        "echo",
        "--tool-arg",
        "message=hi",
        "--concurrency",
        "4",
        "--requests",
        "500",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let r = report(&out);
    assert_eq!(r["requests"], 500);
    assert_eq!(r["ok"], 500);
    assert_eq!(key(&r, "tools/call echo")["requests"], 500);
    assert!(r["latency"]["p50_us"].as_u64().unwrap() > 0);
    assert!(r["latency"]["p99_us"].as_u64() >= r["latency"]["p50_us"].as_u64());
}

#[test]
fn a_mix_is_sent_in_its_proportions_and_errors_are_classed() {
    let s = FastServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let mix = dir.path().join("mix.json");
    std::fs::write(
        &mix,
        r#"[{"weight": 70, "tool": "echo", "arguments": {"message": "m"}},
            {"weight": 20, "tool": "fail"},
            {"weight": 5, "tool": "missing"},
            {"weight": 5, "method": "tools/list"}]"#,
    )
    .unwrap();
    let out = load(&[
        "--server-url",
        &s.url,
        "--mix",
        mix.to_str().unwrap(),
        "--concurrency",
        "1",
        "--requests",
        "1000",
    ]);
    assert_eq!(out.status.code(), Some(1), "some failed: {}", text(&out.stderr));
    let r = report(&out);
    assert_eq!(key(&r, "tools/call echo")["requests"], 700);
    assert_eq!(key(&r, "tools/call fail")["requests"], 200);
    assert_eq!(key(&r, "tools/list")["requests"], 50);
    // A tool that failed is not a protocol error, and neither is an unknown tool a tool failure.
    assert_eq!(class_count(&r, "isError (tool failed)"), 200);
    assert_eq!(class_count(&r, "JSON-RPC error -32602"), 50);
    assert_eq!(r["errors"], 250);
    // JUnit for CI: the failing keys fail, against the schema CI tools read.
    let junit = crate::support::mcpscope_command()
        .args(["load", "--server-url", &s.url, "--mix", mix.to_str().unwrap()])
        .args([
            "--concurrency",
            "1",
            "--requests",
            "100",
            "--quiet",
            "--format",
            "junit",
        ])
        .output()
        .unwrap();
    let file = dir.path().join("load.xml");
    std::fs::write(&file, &junit.stdout).unwrap();
    assert_eq!(junit_schema_errors(&file), "");
    let xml = text(&junit.stdout);
    assert!(xml.contains("tests=\"4\" failures=\"2\""), "{xml}");
}

#[test]
fn an_open_loop_sends_every_due_request_and_shows_a_stall() {
    // 1 s of stall in a 3 s run at 200 requests a second.
    let stalled = FastServer::start(&[("STALL_AT_MS", "500"), ("STALL_MS", "1000")]);
    let out = load(&[
        "--server-url",
        &stalled.url,
        "--tool-name",
        "echo",
        "--rate",
        "200",
        "--sessions",
        "4",
        "--duration",
        "3s",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let open = report(&out);
    // Every slot of the timetable is sent, late or not.
    assert_eq!(open["requests"], 600);
    assert!(
        open["latency"]["p99_us"].as_u64().unwrap() >= 500_000,
        "measured from the due time, the requests due during the stall waited for it: {}",
        open["latency"]
    );
    // The same stall, measured as a closed loop does: one request sees it.
    let stalled = FastServer::start(&[("STALL_AT_MS", "500"), ("STALL_MS", "1000")]);
    let out = load(&[
        "--server-url",
        &stalled.url,
        "--tool-name",
        "echo",
        "--concurrency",
        "1",
        "--duration",
        "3s",
    ]);
    let closed = report(&out);
    assert!(
        closed["latency"]["max_us"].as_u64().unwrap() >= 900_000,
        "{}",
        closed["latency"]
    );
    assert!(
        closed["latency"]["p99_us"].as_u64().unwrap() < 500_000,
        "a closed loop hides it: {}",
        closed["latency"]
    );
}

#[test]
fn the_modern_era_and_a_ramp_over_http() {
    let s = FastServer::start(&[]);
    let out = load(&[
        "--server-url",
        &s.url,
        "--era",
        "modern",
        "--tool-name",
        "echo",
        "--requests",
        "200",
        "--concurrency",
        "2",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(report(&out)["ok"], 200);
    let out = load(&["--server-url", &s.url, "--tool-name", "echo", "--ramp", "1..3 over 3s"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let r = report(&out);
    let levels: Vec<u64> = r["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["concurrency"].as_u64().unwrap())
        .collect();
    assert_eq!(levels[..3], [1, 2, 3], "{r}");
}

#[test]
fn refused_connections_and_a_server_that_dies_are_said_as_such() {
    let out = load(&[
        "--server-url",
        "http://127.0.0.1:9/mcp",
        "--tool-name",
        "echo",
        "--requests",
        "5",
    ]);
    // No session could start (#47 item 7): exit 3, with the reason, as over stdio.
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let r = report(&out);
    assert_eq!(r["requests"], 0, "{r}");
    assert!(text(&out.stderr).contains("cannot connect"), "{}", text(&out.stderr));
    // A stdio server that crashes on its first tools/call.
    let out = crate::support::mcpscope_command()
        .args([
            "load",
            "--tool-name",
            "echo",
            "--tool-arg",
            "message=x",
            "--requests",
            "3",
            "--quiet",
            "--format",
            "json",
        ])
        .args([
            "--timeout-ms",
            "5000",
            "--",
            "python3",
            &faulty_path(),
            "--mode",
            "crash-on-call",
        ])
        .output()
        .unwrap();
    let r = report(&out);
    assert!(class_count(&r, "server exited") >= 1, "{r}");
    assert_eq!(out.status.code(), Some(1));
    let out = load(&[
        "--server-url",
        "http://127.0.0.1:9/mcp",
        "--tool-name",
        "echo",
        "--rate",
        "-3",
    ]);
    assert_eq!(out.status.code(), Some(64));
}

#[test]
fn stdio_sessions_of_real_servers_with_their_usage_and_sampled_captures() {
    let everything =
        need(repo().join("tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"));
    let dir = tempfile::tempdir().unwrap();
    let captures = dir.path().join("captures");
    let out = crate::support::mcpscope_command()
        .args([
            "load",
            "--tool-name",
            "echo",
            "--tool-arg",
            "message=load",
            "--sessions",
            "2",
            "--duration",
            "2s",
        ])
        .args([
            "--quiet",
            "--format",
            "json",
            "--capture-dir",
            captures.to_str().unwrap(),
            "--sample-every",
            "2",
        ])
        .arg("--")
        .arg("node")
        .arg(&everything)
        .arg("stdio")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let r = report(&out);
    assert!(r["ok"].as_u64().unwrap() > 10, "{r}");
    assert_eq!(r["errors"], 0);
    let servers = r["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 2, "both server processes sampled: {r}");
    assert!(
        servers[0]["samples"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s[2].as_u64().unwrap() > 1000),
        "RSS in KiB"
    );
    // Every second session kept (sessions 1 of 2), and it opens as a capture.
    let kept: Vec<_> = std::fs::read_dir(&captures)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    let loaded = mcpscope_core::record::capture::load(&kept[0]).unwrap();
    assert!(loaded.events.len() > 10);
    // The Python SDK server: a real server in another language.
    let out = crate::support::mcpscope_command()
        .args([
            "load",
            "--method",
            "tools/list",
            "--requests",
            "30",
            "--quiet",
            "--format",
            "json",
            "--",
        ])
        .arg(need(repo().join("tests/peers/.venv/bin/python")))
        .arg(repo().join("tests/servers/py_server.py"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(report(&out)["ok"], 30);
}

/// #31: the app's Load tab runs against the server on screen with the
/// composer's tool: live figures, the table, the sampled sessions' captures
/// (one opens in a tab of its own).
#[test]
fn the_load_tab_runs_the_composers_tool_against_the_server_on_screen() {
    use egui_kittest::Harness;
    use egui_kittest::kittest::Queryable as _;
    use mcpscope_app::{BottomTab, McpscopeApp, StartupArgs};
    let args = StartupArgs {
        launch: vec!["python3".into(), faulty_path(), "--mode".into(), "normal".into()],
        ..StartupArgs::default()
    };
    let mut h = Harness::builder()
        .with_size([1440.0, 900.0])
        .build_eframe(move |cc| McpscopeApp::new(cc, args));
    step_until(&mut h, "the tool list", |app| {
        app.session().composer.lists.tools.iter().any(|t| t.name == "echo")
    });
    h.state_mut().session_mut().composer.choose_tool("echo");
    h.state_mut().bottom_tab = BottomTab::Load;
    h.state_mut().session_mut().load.seconds = 1;
    h.state_mut().session_mut().load.sessions = 2;
    h.step();
    h.step();
    assert!(
        h.query_by_label_contains("tools/call echo").is_some(),
        "the setup is shown"
    );
    h.get_by_label("▶ Run load").click();
    h.step();
    assert!(h.state().session().load.running());
    step_until(&mut h, "the run to end", |app| !app.session().load.running());
    let app = h.state();
    assert!(app.session().load.error.is_none(), "{:?}", app.session().load.error);
    let r = app.session().load.report.as_ref().expect("a report");
    assert!(r.requests > 0);
    assert_eq!(r.errors, 0, "{:?}", r.error_classes);
    assert_eq!(r.per_key[0].key, "tools/call echo");
    // Session 1 of 2 is sampled (every tenth, from the first).
    assert_eq!(
        app.session().load.captures.len(),
        1,
        "{:?}",
        app.session().load.captures
    );
    let tabs = app.tabs.len();
    h.get_by_label("session-0001.jsonl").click();
    step_until(&mut h, "the capture in a new tab", |app| app.tabs.len() == tabs + 1);
    // The new tab has no run of its own: the last tab's figures stay there.
    h.state_mut().bottom_tab = BottomTab::Load;
    h.run_steps(3);
    assert!(h.state().session().load.report.is_none());
    assert!(
        h.query_by_label_contains("requests in").is_none(),
        "the other tab's figures are not shown here"
    );
    h.state_mut().activate_tab(0);
    h.run_steps(3);
    assert!(h.state().session().load.report.is_some(), "and are still there");
}

/// Several requests in flight on one stdio session (pipelined by id): all
/// answered, and the capture shows them outstanding at once.
#[test]
fn requests_in_flight_on_one_stdio_session_are_told_apart_by_id() {
    let everything =
        need(repo().join("tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"));
    let dir = tempfile::tempdir().unwrap();
    let out = crate::support::mcpscope_command()
        .args([
            "load",
            "--tool-name",
            "echo",
            "--tool-arg",
            "message=p",
            "--sessions",
            "1",
            "--in-flight",
            "4",
        ])
        .args([
            "--requests",
            "200",
            "--quiet",
            "--format",
            "json",
            "--sample-every",
            "1",
            "--capture-dir",
        ])
        .arg(dir.path())
        .arg("--")
        .arg("node")
        .arg(&everything)
        .arg("stdio")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let r = report(&out);
    assert_eq!(r["ok"], 200, "{r}");
    let cap = std::fs::read_dir(dir.path()).unwrap().flatten().next().unwrap().path();
    let loaded = mcpscope_core::record::capture::load(&cap).unwrap();
    let mut outstanding = 0i64;
    let mut most = 0;
    for ev in &loaded.events {
        if let mcpscope_core::transport::event::Event::Frame(f) = ev {
            let v: Value = serde_json::from_slice(&f.raw).unwrap_or(Value::Null);
            if v["method"] == "tools/call" {
                outstanding += 1;
            } else if v["result"]["content"].is_array() {
                outstanding -= 1;
            }
            most = most.max(outstanding);
        }
    }
    assert!(most >= 2, "at most {most} in flight");
}

/// `--replay`: the client side of a capture, sent again by every session.
#[test]
fn a_capture_is_replayed_by_every_session() {
    let s = FastServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("c.jsonl");
    let out = crate::support::mcpscope_command()
        .args([
            "call",
            "--server-url",
            &s.url,
            "--tool-name",
            "echo",
            "--tool-arg",
            "message=again",
            "--capture",
        ])
        .arg(&cap)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = load(&[
        "--server-url",
        &s.url,
        "--replay",
        cap.to_str().unwrap(),
        "--concurrency",
        "2",
        "--requests",
        "40",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let r = report(&out);
    assert_eq!(r["ok"], 40);
    assert!(key(&r, "tools/call echo")["requests"].as_u64().unwrap() > 0, "{r}");
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, std::fs::read_to_string(&cap).unwrap().lines().next().unwrap()).unwrap();
    let out = load(&["--server-url", &s.url, "--replay", empty.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(64), "{}", text(&out.stderr));
}

/// A hostile HTTP peer: an answer that is not HTTP, a body that never ends,
/// a connection closed mid-answer. Each is a failure of its class with its
/// reason, within the timeout; the run ends and reports.
#[test]
fn a_hostile_http_peer_is_reported_not_waited_on() {
    let script = r#"
import socket, sys, threading
mode = sys.argv[1]
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(16)
print(s.getsockname()[1], flush=True)
def serve(c):
    try:
        c.recv(65536)
        if mode == "garbage":
            c.sendall(b"SSH-2.0-OpenSSH\r\n\r\n")
        elif mode == "endless":
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 999999\r\n\r\n{")
            threading.Event().wait(60)
        elif mode == "cut":
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"")
        c.close()
    except OSError:
        pass
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"#;
    for (mode, expect) in [
        ("garbage", "not an HTTP response"),
        ("endless", "timeout"),
        ("cut", "closed the connection"),
    ] {
        // Killed however the test ends: it serves until then (and holds
        // the test's stderr).
        let mut server = crate::support::KilledOnDrop(
            Command::new("python3")
                .args(["-c", script, mode])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap(),
        );
        let mut port = String::new();
        BufReader::new(server.0.stdout.take().unwrap())
            .read_line(&mut port)
            .unwrap();
        let url = format!("http://127.0.0.1:{}/mcp", port.trim());
        let out = load(&[
            "--server-url",
            &url,
            "--era",
            "modern",
            "--tool-name",
            "echo",
            "--requests",
            "3",
            "--timeout-ms",
            "1000",
        ]);
        drop(server);
        assert_eq!(out.status.code(), Some(1), "{mode}: {}", text(&out.stderr));
        let r = report(&out);
        assert_eq!(r["errors"], 3, "{mode}: {r}");
        let said = r["error_classes"].to_string();
        assert!(said.contains(expect), "{mode}: {said}");
    }
}

/// #48: a fixed-rate run over stdio whose servers take 2 s to start. The
/// run's clock starts once every session is up: no latency includes the
/// start-up (its p99 was the start-up itself), the first second sends its
/// share of the timetable, and the report says how long the start took.
#[test]
fn a_fixed_rate_run_starts_its_timetable_when_the_sessions_are_up() {
    let slow_start = format!("sleep 2; exec python3 {} --mode normal", faulty_path());
    let out = load_with_server(&[
        "--tool-name",
        "echo",
        "--tool-arg",
        "message=x",
        "--rate",
        "50",
        "--sessions",
        "2",
        "--duration",
        "2s",
        "--",
        "sh",
        "-c",
        &slow_start,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let r = report(&out);
    let ready = r["sessions_ready_ms"].as_u64().expect("the start-up is reported");
    assert!(
        ready >= 2_000,
        "the servers slept 2 s before they could answer: {ready}"
    );
    let max = r["latency"]["max_us"].as_u64().unwrap();
    assert!(
        max < ready * 1000,
        "no request's latency holds the start-up ({ready} ms): max {max} us"
    );
    assert_eq!(r["requests"], 100, "the whole timetable was sent: {r}");
    let first = &r["series"][0];
    assert_eq!(first["second"], 0);
    assert!(
        first["requests"].as_u64().unwrap() >= 25,
        "the first second sent its share: {first}"
    );
}

/// A run's time is its calls': a stdio server that takes 2 s to go once
/// its stdin closes (here a shell that sleeps after it) is not counted into
/// the duration or the rate (3 calls were reported as 2.1 s).
#[test]
fn a_run_over_stdio_ends_at_its_last_call_not_when_its_servers_have_gone() {
    let lingers = format!("python3 {} --mode normal; sleep 2", faulty_path());
    let args = [
        "--tool-name=echo",
        "--tool-arg=message=x",
        "--requests=3",
        "--",
        "sh",
        "-c",
        &lingers,
    ];
    let out = load_with_server(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let r = report(&out);
    assert_eq!(r["requests"], 3, "{r}");
    let took = r["duration_s"].as_f64().unwrap();
    assert!(took < 1.0, "the server's 2 s on its way out is not the run's: {took} s");
}
