//! MCP Apps: `call --app-info` beside the official Inspector CLI, and
//! `mcpscope app` hosting real Views (written by hand, built with the
//! ext-apps SDK, misbehaving) in headless Chromium driven through WebDriver
//! (Debian's chromium and chromium-driver), each step checked on the page
//! and on the capture.

use crate::support::{KilledOnDrop, need, repo};
use mcpscope_core::record::capture;
use mcpscope_core::transport::event::{AppMessage, AppToward, Event};
use mcpscope_core::wire::frame::Direction;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn server_args() -> Vec<String> {
    need(repo().join("tests/peers/node_modules/@modelcontextprotocol/ext-apps/package.json"));
    vec![
        "node".into(),
        repo().join("tests/servers/apps_server.mjs").display().to_string(),
    ]
}

fn python() -> PathBuf {
    need(repo().join("tests/peers/.venv/bin/python"))
}

/// `mcpscope call ... --app-info`: exit status and stdout.
fn app_info(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = crate::support::mcpscope_command()
        .arg("call")
        .args(args)
        .arg("--app-info")
        .arg("--")
        .args(server_args())
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn app_info_answers_as_the_inspector_cli_does() {
    let inspector =
        need(repo().join("tests/peers/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"));
    // The Inspector's CLI does not advertise the UI extension: this server
    // then lists its Views to every client, so both see the same tools.
    let env = [("APPS_SERVER_ALWAYS_UI", "1")];
    for (tool, want) in [
        ("show_counter", 0),
        ("show_bad", 0),
        ("legacy_flat", 0),
        ("increment", 0),
        ("plain_echo", 2),
        ("secret_model_only", 2),
        ("no_such_tool", 5),
    ] {
        let (ours, stdout, stderr) = app_info(&["--tool-name", tool], &env);
        assert_eq!(ours, want, "{tool}: {stdout} {stderr}");
        let theirs = Command::new("node")
            .arg(&inspector)
            .arg("--cli")
            // The Inspector gives its server only a few variables of its own environment.
            .args(["-e", "APPS_SERVER_ALWAYS_UI=1"])
            .args(server_args())
            .args(["--method", "tools/call", "--tool-name", tool, "--app-info"])
            .envs(env)
            .output()
            .unwrap();
        assert_eq!(theirs.status.code(), Some(want), "the Inspector on {tool}");
        let their_line = String::from_utf8_lossy(&theirs.stdout)
            .lines()
            .next()
            .map(str::to_owned)
            .unwrap_or_default();
        if want == 5 {
            assert!(
                stdout.is_empty() && stderr.contains("no tool \"no_such_tool\""),
                "{stderr}"
            );
            continue;
        }
        let ours: Value = serde_json::from_str(stdout.trim()).unwrap();
        let theirs: Value = serde_json::from_str(&their_line).unwrap();
        assert_eq!(ours, theirs, "{tool}: the same line as the Inspector's");
        if tool == "legacy_flat" {
            assert!(stderr.contains("deprecated flat key"), "{stderr}");
        }
    }
    // tools/list --app-info: one line per tool.
    let (code, stdout, _) = app_info(&["--method", "tools/list"], &[]);
    assert_eq!(code, 0);
    let lines: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 9, "{stdout}");
    let with_app = lines.iter().filter(|l| l["hasApp"] == true).count();
    assert_eq!(with_app, 7, "{stdout}");
}

#[test]
fn the_extension_is_advertised_only_when_asked_and_the_server_falls_back() {
    let list = |extra: &[&str]| -> Value {
        let out = crate::support::mcpscope_command()
            .args(["call", "--method", "tools/list"])
            .args(extra)
            .arg("--")
            .args(server_args())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let plain = list(&[]);
    let tools = plain["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 2, "the text-only fallback: {plain}");
    assert!(tools.iter().all(|t| t.get("_meta").is_none()));
    let ui = list(&["--app-extension"]);
    assert!(ui["tools"].as_array().unwrap().len() > 2);
    // The same advertisement in every request's _meta in 2026-07-28.
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("modern.jsonl");
    let out = crate::support::mcpscope_command()
        .args([
            "call",
            "--method",
            "tools/list",
            "--era",
            "modern",
            "--app-extension",
            "--capture",
        ])
        .arg(&cap)
        .arg("--")
        .args(server_args())
        .output()
        .unwrap();
    let _ = out;
    let events = capture::load(&cap).unwrap().events;
    let sent = events
        .iter()
        .filter_map(|e| match e {
            Event::Frame(f) if f.direction == Direction::Out => f.json(),
            _ => None,
        })
        .find(|v| v["method"] == "server/discover" || v["method"] == "tools/list")
        .expect("a request went out");
    assert_eq!(
        sent["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"]["io.modelcontextprotocol/ui"]
            ["mimeTypes"],
        serde_json::json!(["text/html;profile=mcp-app"]),
        "{sent}"
    );
}

#[test]
fn mcpscope_app_refuses_what_it_cannot_host() {
    for (tool, want, said) in [
        ("no_such_tool", 5, "no tool \"no_such_tool\""),
        ("plain_echo", 2, "has no MCP App"),
        ("show_not_html", 1, "mime type \"text/html\""),
    ] {
        let out = crate::support::mcpscope_command()
            .args(["app", "--no-browser", "--quiet", "--tool-name", tool, "--"])
            .args(server_args())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(want), "{tool}: {stderr}");
        assert!(stderr.contains(said), "{tool}: {stderr}");
    }
}

/// One View hosted by `mcpscope app` and driven by the browser script.
struct Hosted {
    page: Value,
    events: Vec<Event>,
    stderr: String,
    status: Option<i32>,
}

fn host(tool: &str, extra: &[&str], scenario: &str) -> Hosted {
    let mut target = vec!["--".to_owned()];
    target.extend(server_args());
    host_on(tool, extra, scenario, &target)
}

/// [`host`] against `target` (`-- CMD…` or `--server-url URL`).
fn host_on(tool: &str, extra: &[&str], scenario: &str, target: &[String]) -> Hosted {
    need(PathBuf::from("/usr/bin/chromium"));
    need(PathBuf::from("/usr/bin/chromedriver"));
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("app.jsonl");
    // Killed if the test fails before the View closes (it ends by itself then).
    let mut child = crate::support::KilledOnDrop(
        crate::support::mcpscope_command()
            .args(["app", "--no-browser", "--tool-name", tool, "--capture"])
            .arg(&cap)
            .args(extra)
            .args(target)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let (tx, rx) = crossbeam_channel::unbounded();
    let stderr = child.0.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(url) = line.split("open ").nth(1).filter(|u| u.starts_with("http://")) {
                let _ = tx.send(url.trim().to_owned());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let url = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("mcpscope app printed its URL");
    let driver = Command::new(python())
        .arg(repo().join("tests/clients/app_browser.py"))
        .args([scenario, &url])
        .output()
        .unwrap();
    let page_out = String::from_utf8_lossy(&driver.stdout).into_owned();
    // The View is closed: mcpscope ends by itself.
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.0.try_wait().unwrap() {
            break s.code();
        }
        if Instant::now() > deadline {
            let _ = child.0.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stderr = reader.join().unwrap();
    assert!(
        driver.status.success(),
        "the browser script failed: {}\n{}\nmcpscope said:\n{stderr}",
        String::from_utf8_lossy(&driver.stderr),
        page_out
    );
    let page: Value = serde_json::from_str(page_out.trim()).unwrap();
    let events = capture::load(&cap).unwrap().events;
    Hosted {
        page,
        events,
        stderr,
        status,
    }
}

fn app_messages(events: &[Event]) -> Vec<&AppMessage> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::App(a) => Some(&**a),
            _ => None,
        })
        .collect()
}

fn method_of(a: &AppMessage) -> String {
    match a.json() {
        Some(v) => match v.get("method").and_then(Value::as_str) {
            Some(m) => m.to_owned(),
            None if v.get("error").is_some() => "error".into(),
            None => "result".into(),
        },
        None => "not json".into(),
    }
}

/// `(toward, method)` of every App record, in order.
fn steps(events: &[Event]) -> Vec<(AppToward, String)> {
    app_messages(events).iter().map(|a| (a.toward, method_of(a))).collect()
}

fn position(steps: &[(AppToward, String)], toward: AppToward, method: &str) -> usize {
    steps
        .iter()
        .position(|(t, m)| *t == toward && m == method)
        .unwrap_or_else(|| panic!("no {toward:?} {method} in {steps:?}"))
}

#[test]
fn a_hand_written_view_in_chromium() {
    let h = host("show_counter", &["--tool-arg", "start=3"], "counter");
    assert_eq!(h.status, Some(0), "{}", h.stderr);
    let p = &h.page;
    // What the page showed.
    assert_eq!(p["value_after_result"], "3");
    assert_eq!(p["theme"], "light");
    assert_eq!(p["mode"], "inline");
    assert_eq!(
        p["value_after_increment"], "4",
        "the app's own tools/call went to the server"
    );
    let secret = p["secret_answer"].as_str().unwrap();
    assert!(
        secret.contains("-32602") && secret.contains("not callable by apps"),
        "{secret}"
    );
    assert_eq!(p["host_display_mode"], "fullscreen");
    assert_eq!(p["message_answer"], "message {}");
    assert_eq!(p["asked"], "The app asks to open https://example.com/docs");
    assert_eq!(p["link_answer"], "link {\"isError\":true}", "declined by the user");
    assert_eq!(p["theme_after_switch"], "dark");
    // Isolation: the View reaches neither the host page nor anything its
    // policy does not allow, and the browser reported the violations.
    let probe = p["probe"].as_str().unwrap();
    for want in [
        "top:blocked",
        "parent:blocked",
        "host-fetch:blocked",
        "data-fetch:blocked",
        "eval:blocked",
        "origin:null",
    ] {
        assert!(probe.contains(want), "{want} in {probe}");
    }
    assert!(!probe.contains("violations:0"), "CSP reported nothing: {probe}");

    // The record, in order.
    let s = steps(&h.events);
    let ready = position(&s, AppToward::FromSandbox, "ui/notifications/sandbox-proxy-ready");
    let resource = position(&s, AppToward::Sandbox, "ui/notifications/sandbox-resource-ready");
    let init = position(&s, AppToward::Host, "ui/initialize");
    let initialized = position(&s, AppToward::Host, "ui/notifications/initialized");
    let input = position(&s, AppToward::View, "ui/notifications/tool-input");
    let result = position(&s, AppToward::View, "ui/notifications/tool-result");
    assert!(
        ready < resource && resource < init && init < initialized && initialized < input && input < result,
        "{s:?}"
    );
    // Before initialized the host said nothing but the answer to ui/initialize.
    let early: Vec<_> = s[..initialized].iter().filter(|(t, _)| *t == AppToward::View).collect();
    assert_eq!(early.len(), 1, "{early:?}");
    assert_eq!(early[0].1, "result");
    let teardown = position(&s, AppToward::View, "ui/resource-teardown");
    assert!(
        s[teardown..]
            .iter()
            .any(|(t, m)| *t == AppToward::Host && m == "result"),
        "teardown answered: {s:?}"
    );
    // The View's tools/call is followed by the host's own request to the server.
    let at = h
        .events
        .iter()
        .position(|e| {
            matches!(e, Event::App(a) if a.toward == AppToward::Host && method_of(a) == "tools/call"
            && a.json().is_some_and(|v| v["params"]["name"] == "increment"))
        })
        .unwrap();
    let next_frame = h.events[at..]
        .iter()
        .find_map(|e| match e {
            Event::Frame(f) if f.direction == Direction::Out => f.json(),
            _ => None,
        })
        .unwrap();
    assert_eq!(next_frame["method"], "tools/call");
    assert_eq!(next_frame["params"]["name"], "increment");
    // The refused one never reached the server, and the record says why.
    let refused = app_messages(&h.events)
        .into_iter()
        .find(|a| a.json().is_some_and(|v| v["params"]["name"] == "secret_model_only"))
        .unwrap();
    assert!(refused.note.as_deref().unwrap_or_default().contains("model-only"));
    assert!(
        !h.events
            .iter()
            .any(|e| matches!(e, Event::Frame(f) if f.direction == Direction::Out
        && f.json().is_some_and(|v| v["params"]["name"] == "secret_model_only")))
    );
    // Fullscreen gave the View a larger container, and it was told.
    assert!(
        app_messages(&h.events).iter().any(|a| a.toward == AppToward::View
            && a.json()
                .is_some_and(|v| v["method"] == "ui/notifications/host-context-changed"
                    && v["params"]["containerDimensions"]["width"]
                        .as_u64()
                        .is_some_and(|w| w > 760))),
        "{s:?}"
    );
    // The App -> host panel's facts: a message, a model context, a log line.
    assert!(s.iter().any(|(t, m)| *t == AppToward::Host && m == "ui/message"));
    assert!(
        s.iter()
            .any(|(t, m)| *t == AppToward::Host && m == "ui/update-model-context")
    );
    assert!(
        s.iter()
            .any(|(t, m)| *t == AppToward::Host && m == "notifications/message")
    );
    assert!(
        h.stderr.contains("initialized") && h.stderr.contains("ms after the tool was run"),
        "{}",
        h.stderr
    );
    // Lint understands the record: the model-only call is an error.
    let findings = mcpscope_core::analysis::lint::lint(&h.events, &Default::default());
    assert!(
        findings.iter().any(|f| f.rule == "app-model-only-tool-call"),
        "{findings:?}"
    );
    assert!(
        !findings
            .iter()
            .any(|f| f.rule == "app-initialized-not-sent" || f.rule == "app-host-early-message")
    );
}

#[test]
fn a_view_built_with_the_ext_apps_sdk_in_chromium() {
    let h = host("show_sdk_counter", &["--tool-arg", "start=5"], "sdk");
    assert_eq!(h.status, Some(0), "{}", h.stderr);
    assert_eq!(h.page["value_after_result"], "5");
    assert_eq!(h.page["increment_answer"], "{\"value\":6}");
    assert_eq!(h.page["mode"], "fullscreen");
    let s = steps(&h.events);
    let init = app_messages(&h.events)
        .into_iter()
        .find(|a| method_of(a) == "ui/initialize")
        .and_then(|a| a.json())
        .unwrap();
    assert_eq!(
        init["params"]["appInfo"]["name"], "sdk-counter",
        "the SDK's own handshake"
    );
    assert_eq!(init["params"]["protocolVersion"], "2026-01-26");
    position(&s, AppToward::Host, "ui/notifications/initialized");
    position(&s, AppToward::Host, "ui/request-display-mode");
    let teardown = position(&s, AppToward::View, "ui/resource-teardown");
    assert!(
        s[teardown..]
            .iter()
            .any(|(t, m)| *t == AppToward::Host && m == "result"),
        "{s:?}"
    );
    // No View message the host did not understand.
    assert!(
        app_messages(&h.events)
            .iter()
            .filter(|a| a.toward == AppToward::Host)
            .all(|a| a.note.is_none()),
        "{:?}",
        app_messages(&h.events)
            .iter()
            .filter_map(|a| a.note.clone())
            .collect::<Vec<_>>()
    );
}

#[test]
fn a_misbehaving_view_in_chromium() {
    let h = host("show_bad", &["--close-after", "4s"], "bad");
    assert_eq!(h.status, Some(0), "{}", h.stderr);
    let log = h.page["log"].as_str().unwrap();
    assert!(log.contains("not callable by apps"), "{log}");
    assert!(
        log.contains("fullscreen {\"mode\":\"inline\"}"),
        "refused, the mode in effect answered: {log}"
    );
    assert!(log.contains("pip {\"mode\":\"inline\"}"), "{log}");
    assert!(
        log.contains("img-src https://undeclared.example/pixel.png"),
        "CSP blocked the undeclared image: {log}"
    );
    assert_eq!(h.page["host_status"], "initializing");
    // Never initialized: the host sent it nothing but the initialize answer
    // and the refusals of its requests, and no teardown.
    let s = steps(&h.events);
    let to_view: Vec<&String> = s
        .iter()
        .filter(|(t, _)| *t == AppToward::View)
        .map(|(_, m)| m)
        .collect();
    assert!(to_view.iter().all(|m| *m == "result" || *m == "error"), "{to_view:?}");
    // The policy dropped the entry with a semicolon and kept the declared domain.
    let policy = h
        .stderr
        .lines()
        .find(|l| l.contains("Content-Security-Policy:"))
        .unwrap_or_default();
    assert!(
        policy.contains("connect-src 'self' https://api.example.com;"),
        "{policy}"
    );
    assert!(!policy.contains("evil.example"), "{policy}");
    assert!(h.stderr.contains("dropped: it holds a ;"), "{}", h.stderr);
    let findings = mcpscope_core::analysis::lint::lint(&h.events, &Default::default());
    for rule in [
        "app-initialized-not-sent",
        "app-model-only-tool-call",
        "app-display-mode-undeclared",
        "app-undeclared-domain",
        "app-csp-origin",
        "app-legacy-name",
        "app-csp-applied",
    ] {
        assert!(findings.iter().any(|f| f.rule == rule), "{rule} in {findings:?}");
    }
}

/// The status code of one raw HTTP/1.1 exchange.
fn raw_status(authority: &str, request: &str) -> u16 {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(authority).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0)
}

#[test]
fn over_streamable_http_and_a_page_loaded_again() {
    // The server over HTTP (JSON answers); its port on stderr.
    let mut server = KilledOnDrop(
        Command::new("node")
            .arg(repo().join("tests/servers/apps_server.mjs"))
            .arg("--http")
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut lines = BufReader::new(server.0.stderr.take().unwrap()).lines();
    let port = lines
        .next()
        .unwrap()
        .unwrap()
        .trim_start_matches("PORT ")
        .trim()
        .to_owned();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let h = host_on(
        "show_counter",
        &["--tool-arg", "start=7"],
        "reload",
        &["--server-url".to_owned(), url],
    );
    drop(server);
    assert_eq!(h.status, Some(0), "{}", h.stderr);
    assert_eq!(h.page["value_before"], "7");
    assert_eq!(
        h.page["value_after_reload"], "7",
        "told its call again after the reload"
    );
    assert_eq!(h.page["value_after_increment"], "8", "{}", h.page);
    let s = steps(&h.events);
    let handshakes = s
        .iter()
        .filter(|(t, m)| *t == AppToward::Host && m == "ui/initialize")
        .count();
    assert_eq!(handshakes, 2, "a new handshake after the reload: {s:?}");
    assert!(
        app_messages(&h.events)
            .iter()
            .any(|a| a.note.as_deref().is_some_and(|n| n.contains("starts over"))),
        "the reload is said on the record"
    );
    let inputs = s
        .iter()
        .filter(|(t, m)| *t == AppToward::View && m == "ui/notifications/tool-input")
        .count();
    assert_eq!(inputs, 2);
    // The View's call went to the server over HTTP.
    assert!(
        h.events
            .iter()
            .any(|e| matches!(e, Event::Http(x) if x.method == "POST"))
    );
}

/// Every listening socket of `pid` is on a loopback address.
fn listening_addresses(pid: u32) -> Vec<String> {
    let mut inodes = Vec::new();
    for fd in std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().flatten() {
        if let Ok(target) = std::fs::read_link(fd.path()) {
            let t = target.display().to_string();
            if let Some(n) = t.strip_prefix("socket:[").and_then(|r| r.strip_suffix(']')) {
                inodes.push(n.to_owned());
            }
        }
    }
    let mut out = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            // st 0A = LISTEN; column 9 is the inode.
            if cols.len() > 9 && cols[3] == "0A" && inodes.iter().any(|i| i == cols[9]) {
                out.push(cols[1].to_owned());
            }
        }
    }
    out
}

#[test]
fn only_loopback_listens_and_the_bridge_answers_only_its_page() {
    need(PathBuf::from("/usr/bin/chromium"));
    // Started by hand to look at its sockets while the View is open.
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("app.jsonl");
    // Killed if the test fails before the View closes (it ends by itself then).
    let mut child = crate::support::KilledOnDrop(
        crate::support::mcpscope_command()
            .args([
                "app",
                "--no-browser",
                "--quiet",
                "--tool-name",
                "show_counter",
                "--capture",
            ])
            .arg(&cap)
            .arg("--")
            .args(server_args())
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut lines = BufReader::new(child.0.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines.next().expect("a URL line").unwrap();
        if let Some(u) = line.split("open ").nth(1).filter(|u| u.starts_with("http://")) {
            break u.trim().to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    let listening = listening_addresses(child.0.id());
    assert_eq!(listening.len(), 2, "host page and sandbox: {listening:?}");
    for a in &listening {
        assert!(a.starts_with("0100007F:"), "{a} is not 127.0.0.1");
    }
    // A request that says it comes from elsewhere is refused.
    let authority = url.trim_start_matches("http://").split('/').next().unwrap().to_owned();
    let path = url
        .trim_start_matches("http://")
        .split_once('/')
        .map(|(_, p)| format!("/{p}"))
        .unwrap();
    let bridge = path.replace("/app/", "/bridge/");
    let body = r#"{"from":"page","action":"close"}"#;
    for origin in ["http://evil.example", "null", "http://localhost:1"] {
        let status = raw_status(
            &authority,
            &format!(
                "POST {bridge} HTTP/1.1\r\nHost: {authority}\r\nOrigin: {origin}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            ),
        );
        assert_eq!(status, 403, "{origin}");
    }
    let rebound = raw_status(
        &authority,
        &format!("GET {path} HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n"),
    );
    assert_eq!(rebound, 403, "DNS rebinding");
    // In the browser: a page on the sandbox's origin cannot drive the
    // bridge, and a frame that is not the sandbox cannot talk to the host.
    let driver = Command::new(python())
        .arg(repo().join("tests/clients/app_browser.py"))
        .args(["forge", &url])
        .output()
        .unwrap();
    assert!(driver.status.success(), "{}", String::from_utf8_lossy(&driver.stderr));
    let page: Value = serde_json::from_slice(&driver.stdout).unwrap();
    assert_ne!(page["forged_status"], 204, "{page}");
    assert_eq!(page["host_status"], "ready", "the forged close did nothing: {page}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.0.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "mcpscope app did not end");
        std::thread::sleep(Duration::from_millis(50));
    }
    let events = capture::load(&cap).unwrap().events;
    let notes: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::Note { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert!(
        notes.iter().any(|n| n.contains("dropped a message from")),
        "the intruding frame's message was dropped and said: {notes:?}"
    );
    assert!(
        notes.iter().filter(|n| n.contains("refused POST")).count() >= 3,
        "{notes:?}"
    );
    // The intruder's tools/call never reached the server.
    let calls = events
        .iter()
        .filter(|e| matches!(e, Event::Frame(f) if f.direction == Direction::Out && f.class.method.as_deref() == Some("tools/call")))
        .count();
    assert_eq!(calls, 1, "only the tool that opened the View");
}

/// The desktop app hosts the View: a tool run from the composer opens its
/// page (here opened by the browser script instead of a browser), the
/// app relays the View's own calls on its session, every message lands on
/// the App lifeline, and the App tab shows what the View said.
mod in_the_app {
    use super::*;
    use crate::support::step_until;
    use egui_kittest::Harness;
    use egui_kittest::kittest::Queryable as _;
    use mcpscope_app::McpscopeApp;
    use mcpscope_app::app_host::Stage;

    use crate::support::timeline_has as has_row;

    fn stage(app: &McpscopeApp) -> Option<Stage> {
        app.session()
            .inspection
            .as_ref()?
            .apps
            .views
            .first()
            .map(|v| v.stage.clone())
    }

    fn launch(h: &mut Harness<'static, McpscopeApp>, hosting: bool) {
        let args = server_args();
        {
            let form = &mut h.state_mut().launcher.form;
            form.command = args[0].clone();
            form.args = args[1].clone();
            form.text_only = !hosting;
        }
        h.step();
        h.get_by_label("▶ Launch").click();
        step_until(h, "the handshake and the tool list", |app| {
            app.session()
                .inspection
                .as_ref()
                .is_some_and(|i| !i.listed_tools().is_empty())
        });
        if let Some(i) = h.state_mut().session_mut().inspection.as_mut() {
            i.apps_open_browser = false;
        }
    }

    fn run_tool(h: &mut Harness<'static, McpscopeApp>, params: &str) {
        h.get_by_label("Compose").click();
        h.step();
        h.get_by_label("Raw").click();
        h.step();
        {
            let c = &mut h.state_mut().session_mut().composer;
            c.raw.method = "tools/call".into();
            c.raw.params = params.into();
        }
        h.step();
        h.get_by_label("Send").click();
        h.step();
    }

    #[test]
    fn a_tool_run_from_the_composer_opens_its_view_and_the_traffic_is_on_the_timeline() {
        need(PathBuf::from("/usr/bin/chromium"));
        let mut h = Harness::builder()
            .with_size([1440.0, 900.0])
            .build_eframe(|cc| McpscopeApp::new(cc, mcpscope_app::StartupArgs::default()));
        launch(&mut h, true);
        let advertised = h
            .state()
            .session()
            .inspection
            .as_ref()
            .unwrap()
            .model
            .store
            .iter()
            .any(|r| String::from_utf8_lossy(r.raw()).contains("\"io.modelcontextprotocol/ui\":{\"mimeTypes\""));
        assert!(advertised, "the handshake advertised the App extension");
        run_tool(&mut h, r#"{"name": "show_counter", "arguments": {"start": 3}}"#);
        step_until(&mut h, "the View hosted", |app| {
            stage(app) == Some(Stage::Hosting) && app.session().inspection.as_ref().unwrap().apps.views[0].url.is_some()
        });
        assert_eq!(
            h.state().bottom_tab,
            mcpscope_app::BottomTab::App,
            "the App tab comes forward"
        );
        let url = h.state().session().inspection.as_ref().unwrap().apps.views[0]
            .url
            .clone()
            .unwrap();
        // The browser script drives the View while the app relays.
        let mut driver = Command::new(python())
            .arg(repo().join("tests/clients/app_browser.py"))
            .args(["counter", &url])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(90);
        let status = loop {
            if let Some(s) = driver.try_wait().unwrap() {
                break s;
            }
            assert!(Instant::now() < deadline, "the browser script did not end");
            h.step();
            std::thread::sleep(Duration::from_millis(10));
        };
        let out = driver.wait_with_output().unwrap();
        assert!(
            status.success(),
            "{}\n{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        let page: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(page["value_after_increment"], "4", "{page}");
        assert_eq!(page["theme_after_switch"], "dark");
        step_until(&mut h, "the View closed", |app| stage(app) == Some(Stage::Closed));
        // On the App lifeline, in order, and the View's call went to the server.
        for label in [
            "show_counter -> ui/initialize",
            "show_counter <- result",
            "show_counter -> ui/notifications/initialized",
            "show_counter <- ui/notifications/tool-result",
            "show_counter -> tools/call",
            "show_counter <- ui/resource-teardown",
        ] {
            assert!(has_row(h.state(), label), "{label}");
        }
        let i = h.state().session().inspection.as_ref().unwrap();
        assert_eq!(i.model.store.app_names(), ["show_counter"]);
        let increments = i
            .model
            .store
            .iter()
            .filter(|r| r.lane() == mcpscope_core::timeline::store::Lane::Out)
            .filter(|r| String::from_utf8_lossy(r.raw()).contains("\"name\":\"increment\""))
            .count();
        assert_eq!(increments, 1, "the View's tools/call went out on the app's session");
        let v = &i.apps.views[0];
        assert_eq!(v.snapshot.messages.len(), 1, "ui/message in the App -> host panel");
        assert_eq!(
            v.snapshot.model_context.as_ref().unwrap()["structuredContent"]["value"],
            4
        );
        assert!(v.snapshot.initialized_after.is_some());
        // The View's rows filter by their own direction and kind.
        let f = mcpscope_core::filter::Filter::parse(r#"dir == "app" && method == "ui/message""#).unwrap();
        let facts = mcpscope_core::filter::rows::SessionFacts::default();
        let filtered = (0..i.model.store.len())
            .filter_map(|n| mcpscope_core::filter::rows::RowSubject::new(&i.model.store, n, &facts))
            .filter(|r| f.matches(r))
            .count();
        assert_eq!(filtered, 1);
        // The App tab shows it.
        h.step();
        assert!(
            h.query_all_by_label_contains("App to host: 1 message(s)")
                .next()
                .is_some()
        );
        assert!(
            h.query_all_by_label_contains("Model context (the last one wins)")
                .next()
                .is_some()
        );
        // Permissions are granted here for the Views opened later.
        h.get_by_label("camera").click();
        h.step();
        let granted = h.state().session().inspection.as_ref().unwrap().apps.granted.clone();
        assert_eq!(granted, ["camera"]);
        // The composer tells app-only tools and tools with an App apart.
        let tools = &h.state().session().composer.lists.tools;
        let increment = tools.iter().find(|t| t.name == "increment").unwrap();
        assert!(increment.app_only && increment.has_app);
        let counter = tools.iter().find(|t| t.name == "show_counter").unwrap();
        assert!(!counter.app_only && counter.has_app);
    }

    #[test]
    fn unticked_the_server_shows_its_text_only_side() {
        let mut h = Harness::builder()
            .with_size([1440.0, 900.0])
            .build_eframe(|cc| McpscopeApp::new(cc, mcpscope_app::StartupArgs::default()));
        launch(&mut h, false);
        let tools = h.state().session().inspection.as_ref().unwrap().listed_tools();
        assert_eq!(tools.len(), 2);
        run_tool(&mut h, r#"{"name": "show_counter", "arguments": {"start": 3}}"#);
        step_until(&mut h, "the text-only result", |app| has_row(app, "result #"));
        assert!(
            h.state().session().inspection.as_ref().unwrap().apps.views.is_empty(),
            "no View to host"
        );
    }
}
