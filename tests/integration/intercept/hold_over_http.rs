//! Breakpoints on the reverse proxy: a held SSE event or POST waits for
//! the user and holds nothing else.

use super::*;

/// `mcpscope proxy --listen` in front of `server` with `args` (breakpoints),
/// and the TypeScript fault client started against it: the proxy, its
/// control socket, the client.
fn break_over_http(
    home: &Home,
    server: &crate::http::HttpServer,
    args: &[&str],
) -> (crate::support::KilledOnDrop, PathBuf, std::process::Child) {
    let mut c = crate::support::mcpscope_command();
    c.args(["proxy", "--listen", "127.0.0.1:0", "--upstream", &server.url("/mcp")])
        .args(args);
    home.apply(&mut c);
    // Killed however the test ends (it holds until told).
    let mut proxy = crate::support::KilledOnDrop(
        c.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut err = BufReader::new(proxy.0.stderr.take().unwrap());
    let addr = listening_addr(&mut err);
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    let socket = std::fs::read_dir(home.sockets())
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let mut cmd_line = Client::Ts.command(10_000);
    cmd_line.push(format!("http://{addr}/mcp"));
    let client = Command::new(&cmd_line[0])
        .args(&cmd_line[1..])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    (proxy, socket, client)
}

/// `mcpscope intercept --socket SOCKET ARGS`.
fn intercept_at(home: &Home, socket: &Path, args: &[&str]) -> std::process::Output {
    let mut c = crate::support::mcpscope_command();
    c.arg("intercept").arg("--socket").arg(socket).args(args);
    home.apply(&mut c);
    c.output().unwrap()
}

/// A breakpoint on the server's side over HTTP: the answer to tools/list
/// (an SSE event on its POST's stream) is held, that stream alone waits,
/// and it goes on when forwarded.
#[test]
fn a_held_sse_event_holds_its_stream_only() {
    use crate::http::HttpServer;
    let home = Home::new();
    let server = HttpServer::start("streamableHttp");
    let (proxy, socket, client) = break_over_http(
        &home,
        &server,
        &[
            "--break",
            r#"s2c: request.method == "tools/list""#,
            "--break-timeout",
            "none",
        ],
    );
    let intercept = |args: &[&str]| intercept_at(&home, &socket, args);
    let deadline = Instant::now() + T;
    loop {
        let listed = String::from_utf8_lossy(&intercept(&["list"]).stdout).into_owned();
        if listed.contains("held frames: 1") {
            assert!(listed.contains("#1 s2c"), "{listed}");
            break;
        }
        assert!(Instant::now() < deadline, "the answer was never held: {listed}");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(intercept(&["forward", "1"]).status.success());
    let out = client.wait_with_output().unwrap();
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(seen["list"]["ok"].as_array().is_some_and(|t| !t.is_empty()), "{seen}");
    assert!(seen["list"]["ms"].as_u64().unwrap() >= 50, "it waited: {seen}");
    assert!(seen["call"]["ok"].is_object(), "{seen}");
    drop(proxy);
}

/// A breakpoint on the HTTP proxy: the held POST keeps its connection open
/// while other exchanges go on, and is answered from `mcpscope intercept`.
#[test]
fn a_held_post_waits_for_the_user_over_http() {
    use crate::http::HttpServer;
    let home = Home::new();
    let server = HttpServer::start("streamableHttp");
    let capture = home.path("held-post.jsonl");
    let (proxy, socket, client) = break_over_http(
        &home,
        &server,
        &[
            "--capture",
            &capture.display().to_string(),
            "--break",
            r#"method == "tools/call""#,
            "--break-timeout",
            "none",
        ],
    );
    let intercept = |args: &[&str]| intercept_at(&home, &socket, args);
    let deadline = Instant::now() + T;
    loop {
        let out = intercept(&["list"]);
        if String::from_utf8_lossy(&out.stdout).contains("held frames: 1") {
            break;
        }
        assert!(Instant::now() < deadline, "the call was never held");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Inject the answer into the client's own stream (its GET), then drop
    // the held request: the client takes the injected answer.
    let board: Value = serde_json::from_slice(&intercept(&["--json", "list"]).stdout).unwrap();
    let held: Value = serde_json::from_str(board["board"]["held"][0]["bytes"].as_str().unwrap()).unwrap();
    let answer = serde_json::json!({
        "jsonrpc": "2.0",
        "id": held["id"],
        "result": {"content": [{"type": "text", "text": "injected into the client's stream"}]}
    });
    let out = intercept(&["inject", "--to-client", &answer.to_string()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = client.wait_with_output().unwrap();
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(seen["list"]["ok"].is_array(), "tools/list was not held up: {seen}");
    assert_eq!(
        seen["call"]["ok"]["content"][0]["text"], "injected into the client's stream",
        "{seen}"
    );
    assert!(intercept(&["drop", "1"]).status.success());
    // Toward the server, on the client's session: the answer is recorded.
    let out = intercept(&[
        "inject",
        "--to-server",
        r#"{"jsonrpc":"2.0","id":"injected-1","method":"tools/list"}"#,
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let deadline = Instant::now() + T;
    loop {
        let events = capture::load(&capture).unwrap().events;
        let answered = events.iter().any(|e| {
            matches!(e, Event::Frame(f) if f.direction == mcpscope_core::wire::frame::Direction::In
                && String::from_utf8_lossy(&f.raw).contains("\"injected-1\"")
                && String::from_utf8_lossy(&f.raw).contains("\"tools\""))
        });
        if answered {
            assert!(kinds(&events).contains(&TouchKind::Injected));
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no answer to the injected request: {:#?}",
            events.iter().rev().take(8).map(|e| e.summary()).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(proxy);
}
