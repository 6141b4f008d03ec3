//! Other tools' clients and captures: the Inspector's CLI, 2026-07-28 SDK
//! clients, and a capture of the reverse proxy, served by the mock.

use super::*;

/// The official Inspector's CLI (a real client of its own, one method per
/// run) against the mock, over stdio and over Streamable HTTP: each result
/// is the recorded one.
#[test]
fn the_inspector_cli_gets_the_recorded_results_over_stdio_and_http() {
    let inspector =
        repo().join("tests/peers/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    let inspector = need(inspector).display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let server = everything();
    let sum = dir.path().join("sum.jsonl");
    let recorded_sum: Value = serde_json::from_str(&record(
        &sum,
        &["--tool-name", "get-sum", "--tool-arg", "a=2", "--tool-arg", "b=40"],
        &server,
    ))
    .unwrap();
    let prompt = dir.path().join("prompt.jsonl");
    let recorded_prompt: Value =
        serde_json::from_str(&record(&prompt, &["--prompt-name", "simple-prompt"], &server)).unwrap();
    // `-q --format json`: one line, {"result": …}.
    let inspect = |target: &[&str], method: &[&str]| -> Value {
        let out = Command::new("node")
            .args([inspector.as_str(), "--cli", "-q", "--format", "json"])
            .args(target)
            .args(method)
            .output()
            .unwrap();
        assert!(out.status.success(), "the Inspector CLI: {}", text(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["result"].clone()
    };
    let bin = bin().display().to_string();
    let call_sum = [
        "--method",
        "tools/call",
        "--tool-name",
        "get-sum",
        "--tool-arg",
        "a=2",
        "b=40",
    ];
    let get_prompt = ["--method", "prompts/get", "--prompt-name", "simple-prompt"];
    assert_eq!(inspect(&[&bin, "mock", sum.to_str().unwrap()], &call_sum), recorded_sum);
    assert_eq!(
        inspect(&[&bin, "mock", prompt.to_str().unwrap()], &get_prompt),
        recorded_prompt
    );

    let mock = HttpMock::start(&[sum.to_str().unwrap()]);
    assert_eq!(inspect(&[&mock.url, "--transport", "http"], &call_sum), recorded_sum);
}

/// 2026-07-28 with real clients: the Python SDK's `Client` (it probes
/// `server/discover`) and the TypeScript SDK v2's (`@modelcontextprotocol/client`,
/// pinned to 2026-07-28) each record a session with the real server through
/// `mcpscope proxy`, which the mock serves back over stdio and (stateless, no
/// session) over Streamable HTTP with the same results; the
/// `subscriptions/listen` stream stays open and brings the list_changed that
/// followed a call.
#[test]
fn sdk_clients_replay_a_2026_session_over_stdio_and_http() {
    let dir = tempfile::tempdir().unwrap();
    let server = py_modern_server();
    for (program, script) in [
        (python(), "tests/clients/py_modern_client.py"),
        ("node".to_string(), "tests/clients/ts_modern_client.mjs"),
    ] {
        let cap = dir.path().join(format!("{}.jsonl", script.rsplit('/').next().unwrap()));
        let client = repo().join(script).display().to_string();
        let mut through_proxy = vec![
            client.clone(),
            "stdio".into(),
            bin().display().to_string(),
            "proxy".into(),
            "--capture".into(),
            cap.display().to_string(),
            "--".into(),
            server.program.clone(),
        ];
        through_proxy.extend(server.args.iter().cloned());
        let real = run_client(&program, &through_proxy);
        assert_eq!(real["version"], "2026-07-28", "{script}: {real}");
        assert_eq!(real["result"]["structuredContent"]["result"], 5, "{script}: {real}");
        // list_changed came on the listen stream, tagged with its id.
        assert_eq!(
            real["events"],
            serde_json::json!(["ToolsListChanged"]),
            "{script}: {real}"
        );

        let mocked = [
            client.clone(),
            "stdio".into(),
            bin().display().to_string(),
            "mock".into(),
            cap.display().to_string(),
        ];
        assert_eq!(run_client(&program, &mocked), real, "{script} over stdio");

        let mock = HttpMock::start(&[cap.to_str().unwrap()]);
        let served = run_client(&program, &[client, "http".into(), mock.url.clone()]);
        assert_eq!(served, real, "{script} over HTTP: {}", mock.stderr());
        assert!(!mock.stderr().contains("no recorded answer"), "{}", mock.stderr());
    }
}

/// A capture of the reverse proxy (`proxy --listen --upstream --capture`)
/// in front of server-everything over Streamable HTTP serves too: the mock's
/// answer to `mcpscope call` is the one the client got through the proxy.
#[test]
#[cfg(unix)]
fn a_reverse_proxy_capture_is_served() {
    let upstream = crate::http::HttpServer::start("streamableHttp");
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("reverse.jsonl");
    // Killed however the test ends.
    let mut proxy = crate::support::KilledOnDrop(
        crate::support::mcpscope_command()
            .args(["proxy", "--listen", "127.0.0.1:0", "--upstream"])
            .arg(upstream.url("/mcp"))
            .args(["--capture", cap.to_str().unwrap()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut err = std::io::BufReader::new(proxy.0.stderr.take().unwrap());
    let addr = listening_addr(&mut err);
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    let args = ["--tool-name", "get-sum", "--tool-arg", "a=2", "--tool-arg", "b=40"];
    let through_proxy = call_over_http(&format!("http://{addr}/mcp"), &args);
    assert!(through_proxy.contains("42"), "{through_proxy}");
    unsafe { libc::kill(proxy.0.id() as i32, libc::SIGTERM) };
    proxy.0.wait().unwrap();

    assert_eq!(call_the_mock(&cap, &args), through_proxy);
    let mock = HttpMock::start(&[cap.to_str().unwrap()]);
    assert!(mock.url.ends_with("/mcp"), "the upstream's path: {}", mock.url);
    assert_eq!(call_over_http(&mock.url, &args), through_proxy);
}
