//! `mcpscope proxy --listen --upstream` with fault rules, in front of
//! server-everything's Streamable HTTP (its answers come as SSE).

use super::*;
use crate::http::HttpServer;

struct Proxy {
    child: std::process::Child,
    url: String,
}

impl Proxy {
    fn start(home: &Home, upstream: &str, capture: &Path, rules: &[&str]) -> Proxy {
        let mut c = crate::support::mcpscope_command();
        c.args(["proxy", "--listen", "127.0.0.1:0", "--upstream", upstream, "--capture"])
            .arg(capture);
        for r in rules {
            c.args(["--fault", r]);
        }
        home.apply(&mut c);
        let mut child = c
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let addr = listening_addr(&mut err);
        std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
        Proxy {
            child,
            url: format!("http://{addr}/mcp"),
        }
    }
}

#[cfg(unix)] // stopped with SIGTERM, as a person's Ctrl-C
impl Drop for Proxy {
    fn drop(&mut self) {
        // As a person stops it (Ctrl-C): it records how it ended.
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + T;
        while self.child.try_wait().unwrap().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run(home: &Home, server: &HttpServer, client: Client, rule: &str, timeout_ms: u64) -> (Value, Vec<Event>) {
    static RUN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = RUN.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let capture = home.path(&format!("http-{n}.jsonl"));
    let proxy = Proxy::start(home, &server.url("/mcp"), &capture, &[rule]);
    let mut cmd_line = client.command(timeout_ms);
    cmd_line.push(proxy.url.clone());
    let out = Command::new(&cmd_line[0]).args(&cmd_line[1..]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("{client:?} printed nothing: {}", String::from_utf8_lossy(&out.stderr)));
    let seen: Value = serde_json::from_str(line).unwrap();
    drop(proxy);
    (seen, capture::load(&capture).unwrap().events)
}

#[test]
fn each_http_fault_as_the_sdk_clients_see_it() {
    let home = Home::new();
    let server = HttpServer::start("streamableHttp");
    for client in [Client::Ts, Client::Py] {
        let what = |rule: &str| format!("{client:?} over HTTP with {rule}");

        let rule = r#"method == "tools/call" => error -32042 "via http""#;
        let (seen, events) = run(&home, &server, client, rule, 3000);
        assert_eq!(error_code(&seen["call"]), Some(-32042), "{}: {seen}", what(rule));
        assert_eq!(kinds(&events), [TouchKind::Answered]);
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::Http(h) if h.text.contains("answered by the proxy")))
        );

        let rule = r#"method == "tools/call" => http-status 503 7"#;
        let (seen, events) = run(&home, &server, client, rule, 3000);
        assert!(seen["call"]["error"].is_object(), "{}: {seen}", what(rule));
        assert!(seen["call"]["ms"].as_u64().unwrap() < 1000, "at once: {seen}");
        assert_eq!(kinds(&events), [TouchKind::Fault]);
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::Http(h) if h.status == Some(503)))
        );

        let rule = r#"request.method == "tools/list" => replace {"jsonrpc":"2.0","result":{"tools":[]}}"#;
        let (seen, events) = run(&home, &server, client, rule, 3000);
        assert_eq!(seen["list"]["ok"], serde_json::json!([]), "{}: {seen}", what(rule));
        // (The Python SDK lists again before calling a tool it did not see.)
        let lists = if let Client::Py = client { 2 } else { 1 };
        assert_eq!(kinds(&events), vec![TouchKind::Edited; lists], "an SSE event changed");

        let rule = r#"method == "tools/list" => delay 700ms"#;
        let (seen, events) = run(&home, &server, client, rule, 5000);
        assert!(seen["list"]["ms"].as_u64().unwrap() >= 690, "{}: {seen}", what(rule));
        assert_eq!(kinds(&events), [TouchKind::Fault, TouchKind::Forwarded]);

        // A dropped request is accepted (202) and never answered.
        let rule = r#"method == "tools/call" => drop"#;
        let (seen, events) = run(&home, &server, client, rule, 1000);
        assert!(seen["call"]["error"].is_object(), "{}: {seen}", what(rule));
        assert_eq!(kinds(&events), [TouchKind::Dropped]);
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::Http(h) if h.status == Some(202)))
        );

        let rule = r#"request.method == "tools/call" => corrupt not-json"#;
        let (seen, _) = run(&home, &server, client, rule, 1000);
        assert!(seen["call"]["error"].is_object(), "{}: {seen}", what(rule));

        let rule = r#"method == "tools/call" => disconnect"#;
        let (seen, events) = run(&home, &server, client, rule, 3000);
        assert!(
            seen["call"]["error"].is_object() || seen["closed_with"].is_string(),
            "{}: {seen}",
            what(rule)
        );
        assert_eq!(kinds(&events), [TouchKind::Fault]);

        // slow: the list's answer at 2 kB/s takes longer than the client waits.
        let rule = r#"request.method == "tools/list" => slow 2000B/s first 1"#;
        let (seen, events) = run(&home, &server, client, rule, 1000);
        assert!(seen["list"]["error"].is_object(), "{}: {seen}", what(rule));
        assert_eq!(kinds(&events), [TouchKind::Fault]);

        // duplicate: the call goes upstream twice; the client gets one answer.
        let rule = r#"method == "tools/call" => duplicate"#;
        let (seen, events) = run(&home, &server, client, rule, 3000);
        assert!(seen["call"]["ok"].is_object(), "{}: {seen}", what(rule));
        assert_eq!(kinds(&events), [TouchKind::Fault]);
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::Note { text, .. } if text.contains("a second time (duplicate)"))),
            "the second send is noted"
        );

        // stall: the list's POST is held for ever; the client gives up.
        let rule = r#"method == "tools/list" => stall first 1"#;
        let (seen, _) = run(&home, &server, client, rule, 800);
        assert!(seen["list"]["error"].is_object(), "{}: {seen}", what(rule));

        // reorder: each SDK waits for its initialized POST's answer before
        // its next POST, so nothing comes to swap with: it goes on after
        // the 2 s wait. The TypeScript SDK waits inside connect, the
        // Python SDK before its next request (tools/list).
        let rule = r#"method == "notifications/initialized" => reorder"#;
        let (seen, events) = run(&home, &server, client, rule, 5000);
        assert!(seen["connect"]["ok"].is_string(), "{}: {seen}", what(rule));
        let waited = match client {
            Client::Ts => &seen["connect"],
            Client::Py => &seen["list"],
        };
        assert!(waited["ms"].as_u64().unwrap() >= 1900, "{}: {seen}", what(rule));
        let t = touches(&events);
        assert_eq!(
            t.iter().map(|t| t.kind).collect::<Vec<_>>(),
            [TouchKind::Fault, TouchKind::Forwarded]
        );
        assert!(t[1].text.contains("no other frame"), "{}", t[1].text);
    }
}

/// The Inspector's CLI over the reverse proxy: an injected error and an HTTP status.
#[test]
fn the_inspector_cli_over_http() {
    let home = Home::new();
    let server = HttpServer::start("streamableHttp");
    let inspector =
        need(repo().join("tests/peers/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"));
    for (rule, says) in [
        (
            r#"method == "tools/call" => error -32099 "chaos over http""#,
            "chaos over http",
        ),
        (r#"method == "tools/call" => http-status 503 7"#, "503"),
    ] {
        let capture = home.path(&format!("inspector-{}.jsonl", says.len()));
        let proxy = Proxy::start(&home, &server.url("/mcp"), &capture, &[rule]);
        let mut c = Command::new("node");
        c.arg(&inspector)
            .args(["--cli", &proxy.url, "--transport", "http", "--method", "tools/call"])
            .args(["--tool-name", "echo", "--tool-arg", "message=hi"]);
        home.apply(&mut c);
        let out = c.output().unwrap();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.status.success(), "{rule}: {all}");
        assert!(all.contains(says), "{rule}: {all}");
        drop(proxy);
        let k = kinds(&capture::load(&capture).unwrap().events);
        assert_eq!(k.len(), 1, "{rule}: {k:?}");
    }
}

/// Rules defined that match nothing: every exchange as without them.
#[test]
fn rules_that_match_nothing_change_nothing_over_http() {
    let home = Home::new();
    let server = HttpServer::start("streamableHttp");
    let plain = {
        let mut c = Command::new("node");
        c.arg(repo().join("tests/clients/ts_client.mjs"))
            .args(["http", &server.url("/mcp")]);
        c.output().unwrap().stdout
    };
    let capture = home.path("nothing.jsonl");
    let rules: Vec<String> = (0..10).map(|i| format!(r#"method == "never/{i}" => drop"#)).collect();
    let rules: Vec<&str> = rules.iter().map(String::as_str).collect();
    let proxy = Proxy::start(&home, &server.url("/mcp"), &capture, &rules);
    let mut c = Command::new("node");
    c.arg(repo().join("tests/clients/ts_client.mjs"))
        .args(["http", &proxy.url]);
    let through = c.output().unwrap();
    assert!(through.status.success(), "{}", String::from_utf8_lossy(&through.stderr));
    assert_eq!(
        String::from_utf8_lossy(&through.stdout),
        String::from_utf8_lossy(&plain)
    );
    drop(proxy);
    assert!(kinds(&capture::load(&capture).unwrap().events).is_empty());
}
