//! Watching real clients' traffic: `mcpscope proxy --session` recording into
//! the per-user state directory (indexed, followed while it grows), real
//! clients (the official Inspector's CLI, TypeScript and Python SDK clients)
//! through the stdio proxy and the HTTP reverse proxy, and `wrap`/`unwrap` on
//! config files.

use crate::http::HttpServer;
use crate::support::*;
use mcpscope_core::record::capture;
use mcpscope_core::record::follower::Follower;
use mcpscope_core::sessions::index::{EndCause, ListedSession, SessionState, list_sessions};
use mcpscope_core::transport::event::Event;
use mcpscope_core::wire::frame::Direction;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A private XDG state home for one test, so sessions never mix.
struct State {
    dir: tempfile::TempDir,
}

impl State {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn home(&self) -> &Path {
        self.dir.path()
    }

    fn sessions_dir(&self) -> PathBuf {
        self.xdg().join("mcpscope/sessions")
    }

    fn sessions(&self) -> Vec<ListedSession> {
        let listing = list_sessions(&self.sessions_dir()).unwrap();
        assert!(listing.problems.is_empty(), "{:?}", listing.problems);
        listing.sessions
    }

    /// The only session, once `ready` says it is far enough along.
    fn wait_session(&self, what: &str, ready: impl Fn(&ListedSession) -> bool) -> ListedSession {
        let deadline = Instant::now() + T;
        loop {
            let sessions = self.sessions();
            if let Some(s) = sessions.iter().find(|s| ready(s)) {
                return s.clone();
            }
            assert!(Instant::now() < deadline, "{what}: sessions are {sessions:#?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn mcpscope(&self) -> Command {
        let mut c = crate::support::mcpscope_command();
        self.apply(&mut c);
        c
    }

    /// Points a command (and whatever it starts) at this state home. SDK clients
    /// start servers with a minimal environment that keeps HOME but drops
    /// XDG_STATE_HOME, so both are set: either way mcpscope lands here.
    fn apply(&self, c: &mut Command) {
        c.env("XDG_STATE_HOME", self.xdg()).env("HOME", self.home());
    }

    fn xdg(&self) -> PathBuf {
        self.home().join(".local/state")
    }
}

fn everything_entry() -> String {
    let p = repo().join("tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(p.exists(), "run scripts/setup-test-peers");
    p.display().to_string()
}

fn inspector() -> String {
    let p = repo().join("tests/peers/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    assert!(p.exists(), "{} is missing: run scripts/setup-test-peers", p.display());
    p.display().to_string()
}

fn python() -> String {
    let p = repo().join("tests/peers/.venv/bin/python");
    assert!(p.exists(), "run scripts/setup-test-peers");
    p.display().to_string()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn run_ok(mut cmd: Command, what: &str) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({:?}):\nstdout: {}\nstderr: {}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
    out
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// What a capture holds, as the bytes each side wrote (frames in order, with their line endings).
fn wire(events: &[Event], direction: Direction) -> Vec<u8> {
    let mut out = Vec::new();
    for e in events {
        if let Event::Frame(f) = e
            && f.direction == direction
        {
            out.extend_from_slice(&f.raw);
            out.extend_from_slice(f.ending.bytes());
        }
    }
    out
}

/// Polls the follower until `done` holds for everything it delivered.
fn follow_until(follower: &mut Follower, seen: &mut Vec<Event>, what: &str, done: &dyn Fn(&[Event]) -> bool) {
    let deadline = Instant::now() + T;
    while !done(seen) {
        assert!(Instant::now() < deadline, "{what}; followed so far: {seen:#?}");
        let u = follower.poll().unwrap();
        assert!(!u.reset && u.warnings.is_empty(), "{u:?}");
        seen.extend(u.events);
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn proxied_session_is_indexed_followed_while_it_grows_and_ended() {
    let state = State::new();
    let mut child = state
        .mcpscope()
        .args([
            "proxy",
            "--session",
            "everything",
            "--",
            "node",
            &everything_entry(),
            "stdio",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |line: &str| {
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    };

    // Listed as running before the client has said anything.
    let session = state.wait_session("a running session", |s| s.state == SessionState::Running);
    assert_eq!(session.record.name, "everything");
    assert_eq!(session.record.proxy_pid, child.id());
    assert!(session.record.command_line.contains("server-everything"));
    assert_eq!(mode(&state.sessions_dir()), 0o700);
    assert_eq!(mode(&session.capture_path), 0o600);
    assert_eq!(mode(&session.index_path), 0o600);

    let mut follower = Follower::new(&session.capture_path);
    let mut seen: Vec<Event> = Vec::new();
    let has = |dir: Direction, method: &'static str| {
        move |evs: &[Event]| {
            evs.iter().any(|e| {
                matches!(e, Event::Frame(f) if f.direction == dir
                    && (f.class.method.as_deref() == Some(method)
                        || f.link.as_ref().is_some_and(|l| l.method == method)))
            })
        }
    };

    ask(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"live-test-client","version":"9.9"}}}"#,
    );
    let mut line = Vec::new();
    stdout.read_until(b'\n', &mut line).unwrap();
    assert!(text(&line).contains("\"result\""), "{}", text(&line));
    follow_until(
        &mut follower,
        &mut seen,
        "the handshake in the followed capture",
        &has(Direction::In, "initialize"),
    );
    let session = state.wait_session("the client's name in the index", |s| s.record.client.is_some());
    let client = session.record.client.as_ref().unwrap();
    assert_eq!(
        (client.name.as_str(), client.version.as_deref()),
        ("live-test-client", Some("9.9"))
    );

    // More traffic arrives in the same follower, without starting over.
    let before = follower.offset();
    ask(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    ask(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    // server-everything may announce list changes first.
    while !text(&line).contains("\"id\":1") {
        line.clear();
        assert!(
            stdout.read_until(b'\n', &mut line).unwrap() > 0,
            "the proxy closed stdout"
        );
    }
    follow_until(
        &mut follower,
        &mut seen,
        "tools/list answered in the followed capture",
        &has(Direction::In, "tools/list"),
    );
    assert!(follower.offset() > before);
    let answer = seen
        .iter()
        .find_map(|e| match e {
            Event::Frame(f) if f.link.as_ref().is_some_and(|l| l.method == "tools/list") => Some(f),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        text(&answer.raw),
        text(line.strip_suffix(b"\n").unwrap()),
        "the bytes the client got"
    );

    drop(stdin);
    assert!(child.wait().unwrap().success());
    let session = state.wait_session("the session ended", |s| matches!(s.state, SessionState::Ended(_)));
    let SessionState::Ended(end) = &session.state else {
        unreachable!()
    };
    assert_eq!(end.cause, EndCause::ClientClosed, "{end:?}");
    assert_eq!(end.exit_code, Some(0));
    assert!(end.text.contains("closed its stdin"), "{}", end.text);
    // The follower sees the end too, and the whole capture loads as an offline one.
    follow_until(
        &mut follower,
        &mut seen,
        "the exit in the followed capture",
        &|evs: &[Event]| evs.iter().any(|e| matches!(e, Event::Exited { .. })),
    );
    let loaded = capture::load(&session.capture_path).unwrap();
    assert_eq!(loaded.events.len(), seen.len());
}

#[test]
fn a_session_that_cannot_be_recorded_is_still_proxied() {
    let state = State::new();
    // The state home is a file: no session directory can exist there.
    let blocker = state.home().join("blocked");
    std::fs::write(&blocker, "").unwrap();
    let mut child = crate::support::mcpscope_command()
        .env("XDG_STATE_HOME", &blocker)
        .env("HOME", &blocker)
        .args([
            "proxy",
            "--session",
            "x",
            "--",
            "python3",
            &faulty_path(),
            "--mode",
            "normal",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n")
        .unwrap();
    drop(stdin);
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    child.wait().unwrap();
    assert!(out.contains("\"tools\""), "the server still answered: {out:?}");
    assert!(err.contains("not recording this session"), "{err}");
}

/// The same client run twice: straight at the server, and through `mcpscope
/// proxy --session NAME`; a tap between proxy (or client) and server records
/// the bytes the server received and sent each time.
struct StdioRun {
    stdout: Vec<u8>,
    server_in: Vec<u8>,
    server_out: Vec<u8>,
}

fn tapped_server(log: &Path) -> Vec<String> {
    vec![
        "python3".into(),
        repo().join("tests/servers/tee_stdio.py").display().to_string(),
        log.display().to_string(),
        "--".into(),
        "node".into(),
        everything_entry(),
        "stdio".into(),
    ]
}

fn run_client(client: &[String], server: &[String], state: &State) -> Output {
    let mut cmd = Command::new(&client[0]);
    cmd.args(&client[1..]).args(server);
    state.apply(&mut cmd);
    run_ok(cmd, &format!("{client:?}"))
}

fn direct_and_proxied(name: &str, client: &[String]) -> (StdioRun, StdioRun, State) {
    let logs = tempfile::tempdir().unwrap();
    let direct_log = logs.path().join("direct");
    let state = State::new();
    let out = run_client(client, &tapped_server(&direct_log), &state);
    let direct = StdioRun {
        stdout: out.stdout,
        server_in: std::fs::read(direct_log.join("in")).unwrap(),
        server_out: std::fs::read(direct_log.join("out")).unwrap(),
    };
    let proxied_log = logs.path().join("proxied");
    let mut server = vec![
        bin().display().to_string(),
        "proxy".into(),
        "--session".into(),
        name.into(),
        "--".into(),
    ];
    server.extend(tapped_server(&proxied_log));
    let out = run_client(client, &server, &state);
    let proxied = StdioRun {
        stdout: out.stdout,
        server_in: std::fs::read(proxied_log.join("in")).unwrap(),
        server_out: std::fs::read(proxied_log.join("out")).unwrap(),
    };
    (direct, proxied, state)
}

/// Lines of server output that do not depend on timing (server-everything
/// may interleave its own notifications).
fn without_notifications(bytes: &[u8]) -> Vec<String> {
    text(bytes)
        .lines()
        .filter(|l| !l.contains("\"method\":\"notifications/"))
        .map(str::to_owned)
        .collect()
}

fn check_stdio_client(name: &str, client: Vec<String>, client_name: &str) {
    let (direct, proxied, state) = direct_and_proxied(name, &client);
    // What the client printed and what the server received are the same with mcpscope in between.
    assert_eq!(text(&proxied.stdout), text(&direct.stdout), "client output");
    assert_eq!(
        text(&proxied.server_in),
        text(&direct.server_in),
        "bytes the server received"
    );
    assert_eq!(
        without_notifications(&proxied.server_out),
        without_notifications(&direct.server_out),
        "bytes the server sent"
    );
    // The session holds both directions, byte for byte as they passed.
    let session = state.wait_session("the ended session", |s| matches!(s.state, SessionState::Ended(_)));
    assert_eq!(session.record.name, name);
    assert_eq!(
        session.record.client.as_ref().map(|c| c.name.as_str()),
        Some(client_name)
    );
    let loaded = capture::load(&session.capture_path).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(text(&wire(&loaded.events, Direction::Out)), text(&proxied.server_in));
    assert_eq!(text(&wire(&loaded.events, Direction::In)), text(&proxied.server_out));
    assert!(!proxied.server_in.is_empty() && !proxied.server_out.is_empty());
}

#[test]
fn typescript_sdk_client_over_stdio_through_the_proxy() {
    check_stdio_client(
        "ts",
        vec![
            "node".into(),
            repo().join("tests/clients/ts_client.mjs").display().to_string(),
            "stdio".into(),
        ],
        "mcpscope-ts-client",
    );
}

#[test]
fn python_sdk_client_over_stdio_through_the_proxy() {
    check_stdio_client(
        "py",
        vec![
            python(),
            repo().join("tests/clients/py_client.py").display().to_string(),
            "stdio".into(),
        ],
        "mcpscope-py-client",
    );
}

#[test]
fn inspector_cli_through_a_wrapped_config() {
    // The Inspector reads the same kind of config a desktop client does; wrap it,
    // point the Inspector at it, and unwrap it again.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("claude_desktop_config.json");
    let logs = dir.path().join("logs");
    let entry = |log: &str| {
        let args: Vec<String> = tapped_server(&logs.join(log))[1..].to_vec();
        serde_json::json!({"mcpServers": {"everything": {"command": "python3", "args": args}}})
    };
    let inspect = |config: &Path, state: &State| {
        let mut cmd = Command::new("node");
        cmd.args([
            inspector().as_str(),
            "--cli",
            "--config",
            &config.display().to_string(),
            "--server",
            "everything",
            "--method",
            "tools/call",
            "--tool-name",
            "echo",
            "--tool-arg",
            "message=hi from the inspector",
        ]);
        state.apply(&mut cmd);
        run_ok(cmd, "the inspector CLI")
    };
    let state = State::new();
    std::fs::write(&config, serde_json::to_string_pretty(&entry("direct")).unwrap()).unwrap();
    let direct = inspect(&config, &state);
    assert!(
        text(&direct.stdout).contains("hi from the inspector"),
        "{}",
        text(&direct.stdout)
    );

    let original = serde_json::to_string_pretty(&entry("proxied")).unwrap() + "\n";
    std::fs::write(&config, &original).unwrap();
    let out = run_ok(
        {
            let mut c = state.mcpscope();
            c.arg("wrap").arg(&config).arg("--all");
            c
        },
        "mcpscope wrap",
    );
    assert!(
        text(&out.stdout).contains("everything: wrapped"),
        "{}",
        text(&out.stdout)
    );
    let proxied = inspect(&config, &state);
    assert_eq!(text(&proxied.stdout), text(&direct.stdout));
    let server_in = |log: &str| text(&std::fs::read(logs.join(log).join("in")).unwrap());
    assert_eq!(server_in("proxied"), server_in("direct"), "bytes the server received");

    // The Inspector ends its server with SIGTERM rather than by closing stdin; until the
    // proxy handles signals itself the record is left "running" and listed as vanished.
    let session = state.wait_session("the inspector's session", |s| !s.state.is_running());
    assert_eq!(session.record.name, "everything");
    assert!(session.record.client.is_some(), "the Inspector's clientInfo is noted");
    let loaded = capture::load(&session.capture_path).unwrap();
    assert_eq!(text(&wire(&loaded.events, Direction::Out)), server_in("proxied"));
    let server_out = text(&std::fs::read(logs.join("proxied/out")).unwrap());
    assert_eq!(text(&wire(&loaded.events, Direction::In)), server_out);

    run_ok(
        {
            let mut c = state.mcpscope();
            c.arg("unwrap").arg(&config);
            c
        },
        "mcpscope unwrap",
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), original);
}

/// `mcpscope proxy --listen` in front of server-everything's Streamable HTTP.
struct ReverseProxy {
    child: Child,
    url: String,
    addr: String,
}

impl ReverseProxy {
    fn start(state: &State, upstream: &str) -> Self {
        let mut child = state
            .mcpscope()
            .args([
                "proxy",
                "--listen",
                "127.0.0.1:0",
                "--upstream",
                upstream,
                "--session",
                "remote",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        while !line.contains("listening on") {
            line.clear();
            assert!(
                err.read_line(&mut line).unwrap() > 0,
                "the proxy ended before listening"
            );
        }
        let addr = line
            .split("listening on http://")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .unwrap_or_else(|| panic!("no listening line: {line:?}"))
            .to_owned();
        // Keep draining stderr so the proxy never blocks on it.
        std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
        let after_scheme = upstream.split_once("://").map_or(upstream, |(_, rest)| rest);
        let path = after_scheme.find('/').map_or("/", |i| &after_scheme[i..]).to_owned();
        Self {
            child,
            url: format!("http://{addr}{path}"),
            addr,
        }
    }
}

impl Drop for ReverseProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn raw_request(addr: &str, request: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

#[test]
fn real_clients_through_the_http_reverse_proxy() {
    let server = HttpServer::start("streamableHttp");
    let upstream = server.url("/mcp");
    let state = State::new();
    let proxy = ReverseProxy::start(&state, &upstream);

    let ts = |url: &str| {
        let mut c = Command::new("node");
        c.arg(repo().join("tests/clients/ts_client.mjs")).args(["http", url]);
        run_ok(c, "the TypeScript client").stdout
    };
    let py = |url: &str| {
        let mut c = Command::new(python());
        c.arg(repo().join("tests/clients/py_client.py")).args(["http", url]);
        run_ok(c, "the Python client").stdout
    };
    let inspect = |url: &str| {
        let mut c = Command::new("node");
        c.args([
            inspector().as_str(),
            "--cli",
            url,
            "--transport",
            "http",
            "--method",
            "tools/call",
            "--tool-name",
            "get-sum",
            "--tool-arg",
            "a=2",
            "b=40",
        ])
        .env("HOME", state.home());
        run_ok(c, "the inspector CLI").stdout
    };
    assert_eq!(text(&ts(&proxy.url)), text(&ts(&upstream)), "TypeScript client");
    assert_eq!(text(&py(&proxy.url)), text(&py(&upstream)), "Python client");
    let through = inspect(&proxy.url);
    assert_eq!(text(&through), text(&inspect(&upstream)), "Inspector CLI");
    assert!(text(&through).contains("42"), "{}", text(&through));

    // DNS rebinding: a page whose name resolves to 127.0.0.1 is refused.
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let evil_host = raw_request(
        &proxy.addr,
        &format!(
            "POST /mcp HTTP/1.1\r\nHost: evil.example:80\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ),
    );
    assert!(evil_host.starts_with("HTTP/1.1 403"), "{evil_host}");
    let evil_origin = raw_request(
        &proxy.addr,
        &format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nOrigin: https://evil.example\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            proxy.addr,
            body.len()
        ),
    );
    assert!(evil_origin.starts_with("HTTP/1.1 403"), "{evil_origin}");

    // The session: running, then stopped by SIGTERM and marked so.
    let session = state.wait_session("the reverse proxy's session", |s| s.state == SessionState::Running);
    assert_eq!(session.record.transport, "http");
    assert_eq!(session.record.upstream.as_deref(), Some(upstream.as_str()));
    assert!(session.record.client.is_some());
    // SAFETY: signalling the proxy child this test started.
    unsafe { libc::kill(proxy.child.id() as libc::pid_t, libc::SIGTERM) };
    let session = state.wait_session("the stopped session", |s| matches!(s.state, SessionState::Ended(_)));
    let SessionState::Ended(end) = &session.state else {
        unreachable!()
    };
    assert_eq!(end.cause, EndCause::ProxyStopped);
    assert!(end.text.contains("SIGTERM"), "{}", end.text);

    let raw = std::fs::read_to_string(&session.capture_path).unwrap();
    for secret in ["ts-client-secret", "py-client-secret"] {
        assert!(!raw.contains(secret), "{secret} must be masked in the capture");
    }
    let loaded = capture::load(&session.capture_path).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let out_methods: Vec<String> = loaded
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Frame(f) if f.direction == Direction::Out => f.class.method.clone(),
            _ => None,
        })
        .collect();
    assert_eq!(
        out_methods.iter().filter(|m| *m == "initialize").count(),
        3,
        "three clients: {out_methods:?}"
    );
    let answered: Vec<&str> = loaded
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Frame(f) if f.direction == Direction::In => f.link.as_ref().map(|l| l.method.as_str()),
            _ => None,
        })
        .collect();
    for m in ["initialize", "tools/list", "tools/call"] {
        assert!(answered.contains(&m), "{m} answered in the capture: {answered:?}");
    }
    let masked = loaded
        .events
        .iter()
        .any(|e| matches!(e, Event::Http(h) if h.sent_header("authorization") == Some("Bearer ****")));
    assert!(masked, "the Authorization header is recorded masked");
    let refused = loaded
        .events
        .iter()
        .filter(|e| matches!(e, Event::Note { text, .. } if text.starts_with("refused")))
        .count();
    assert_eq!(refused, 2);
}

#[test]
fn wrap_and_unwrap_from_the_command_line() {
    let state = State::new();
    let dir = tempfile::tempdir().unwrap();
    let vscode = dir.path().join(".vscode");
    std::fs::create_dir(&vscode).unwrap();
    let config = vscode.join("mcp.json");
    let original = r#"{
  // Servers for this workspace
  "inputs": [
    { "type": "promptString", "id": "api-key", "description": "API key", "password": true }
  ],
  "servers": {
    "everything": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-everything"], // pinned below
      "env": { "API_KEY": "${input:api-key}" }
    },
    "remote": { "type": "http", "url": "https://mcp.example.com/mcp", "headers": { "Authorization": "Bearer ${input:api-key}" } },
  }
}
"#;
    std::fs::write(&config, original).unwrap();
    let run = |args: &[&str]| state.mcpscope().args(args).arg(&config).output().unwrap();
    let out = run(&["wrap", "--server", "nope"]);
    assert_eq!(out.status.code(), Some(64));
    assert!(
        text(&out.stderr).contains("its servers are \"everything\", \"remote\""),
        "{}",
        text(&out.stderr)
    );
    let out = run(&["wrap"]);
    assert_eq!(out.status.code(), Some(64), "neither --server nor --all");

    let out = run(&["wrap", "--all"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("proxy --listen 127.0.0.1:"), "{stdout}");
    let wrapped = std::fs::read_to_string(&config).unwrap();
    assert!(wrapped.contains("// Servers for this workspace") && wrapped.contains("// pinned below"));
    let me = std::fs::canonicalize(bin()).unwrap();
    assert!(
        wrapped.contains(&format!("\"command\": \"{}\"", me.display())),
        "{wrapped}"
    );
    assert!(wrapped.contains("\"url\": \"http://127.0.0.1:"), "{wrapped}");
    let backup = PathBuf::from(format!("{}.mcpscope-backup", config.display()));
    assert_eq!(std::fs::read_to_string(&backup).unwrap(), original);

    let out = run(&["wrap", "--all"]);
    assert!(text(&out.stdout).contains("already wrapped"), "{}", text(&out.stdout));
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        wrapped,
        "never wrapped twice"
    );

    let out = run(&["unwrap"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&config).unwrap(), original);

    // A file that does not parse: line and column, exit 4, nothing written.
    let broken = "{\n  \"servers\": {\n    \"a\": {\"command\" \"x\"}\n  }\n}\n";
    std::fs::write(&config, broken).unwrap();
    let out = run(&["wrap", "--all"]);
    assert_eq!(out.status.code(), Some(4));
    assert!(
        text(&out.stderr).contains("not valid JSON at line 3, column 21"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), broken);
}

#[test]
fn reverse_proxy_refuses_a_non_loopback_listen_address() {
    let out = crate::support::mcpscope_command()
        .args(["proxy", "--listen", "0.0.0.0:0", "--upstream", "http://127.0.0.1:9/mcp"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(64));
    assert!(
        text(&out.stderr).contains("not a loopback address"),
        "{}",
        text(&out.stderr)
    );
}
