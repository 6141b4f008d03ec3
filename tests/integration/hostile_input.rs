//! Hostile peers, round three: input that is too deep or too large: nested filter expressions, huge durations, huge load sizes.
//! Each test fails without the fix it guards.

use crate::hostile::{run_bin, text, wait_output, wait_until};
use crate::support::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::process::{Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const WITHIN: Duration = Duration::from_secs(30);
const TOO_DEEP: &str = "nested deeper than 100 levels";
const TOO_LONG: &str = "is longer than 8760h (365 days)";

/// The issue's two shapes: 5,000 nested parentheses and 30,000 `not`s.
fn deep_filters() -> [String; 2] {
    [
        format!("{}method{}", "(".repeat(5000), ")".repeat(5000)),
        format!("{}method", "not ".repeat(30_000)),
    ]
}

fn server() -> Vec<String> {
    vec![
        "--".into(),
        "python3".into(),
        faulty_path(),
        "--mode".into(),
        "normal".into(),
    ]
}

/// A usage error (64) that says `what`: no panic, no crash by signal.
#[track_caller]
fn refused(out: &Output, what: &str) {
    let err = text(&out.stderr);
    let shown: String = err.chars().take(600).collect();
    assert_eq!(out.status.code(), Some(64), "{:?}: {shown}", out.status);
    assert!(err.contains(what), "wanted {what:?}: {shown}");
    assert!(!err.contains("panicked") && !err.contains("overflowed"), "{shown}");
}

fn run(args: &[String]) -> Output {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run_bin(&args, WITHIN)
}

fn proxy(args: &[&str]) -> Output {
    let mut all: Vec<String> = vec!["proxy".into()];
    all.extend(args.iter().map(|s| s.to_string()));
    all.extend(server());
    run(&all)
}

#[test]
fn the_filter_command_refuses_deep_filters() {
    let capture = repo().join("tests/captures/crlf.jsonl").display().to_string();
    for expr in deep_filters() {
        let out = run(&["filter".into(), capture.clone(), expr]);
        refused(&out, TOO_DEEP);
        // The caret points at the level too many.
        assert!(
            text(&out.stderr).contains("^ nested deeper"),
            "{}",
            text(&out.stderr).len()
        );
    }
}

#[test]
fn proxy_breaks_faults_and_rules_files_refuse_deep_filters() {
    let dir = tempfile::tempdir().unwrap();
    for expr in deep_filters() {
        refused(&proxy(&["--break", &expr]), TOO_DEEP);
        refused(&proxy(&["--break", &format!("c2s: {expr}")]), TOO_DEEP);
        refused(&proxy(&["--fault", &format!("{expr} => drop")]), TOO_DEEP);
        let toml = dir.path().join("rules.toml");
        std::fs::write(&toml, format!("faults = [\"{expr} => drop\"]\n")).unwrap();
        refused(&proxy(&["--faults", toml.to_str().unwrap()]), TOO_DEEP);
        let json = dir.path().join("rules.json");
        std::fs::write(&json, json!({"breaks": [{"match": expr}]}).to_string()).unwrap();
        refused(&proxy(&["--faults", json.to_str().unwrap()]), TOO_DEEP);
    }
}

#[test]
fn huge_durations_are_usage_errors_on_every_flag_and_in_rules_files() {
    let huge = "18446744073709551615s";
    refused(&proxy(&["--break", "true", "--break-timeout", huge]), TOO_LONG);
    refused(&proxy(&["--fault", &format!("true => delay {huge}")]), TOO_LONG);
    refused(&proxy(&["--fault", "true => delay 1s..1e30s"]), TOO_LONG);
    let dir = tempfile::tempdir().unwrap();
    for (name, rules, what) in [
        (
            "a.json",
            r#"{"breaks": [{"match": "true", "timeout": 1e300}]}"#,
            TOO_LONG,
        ),
        (
            "b.json",
            r#"{"breaks": [{"match": "true", "timeout": -1}]}"#,
            "is negative",
        ),
        ("c.toml", "[[break]]\nmatch = 'true'\ntimeout = 1e300\n", TOO_LONG),
        (
            "d.toml",
            "[[break]]\nmatch = 'true'\ntimeout = inf\n",
            "not a finite number",
        ),
        (
            "e.toml",
            "faults = ['true => delay 1s..18446744073709551615s']\n",
            TOO_LONG,
        ),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, rules).unwrap();
        refused(&proxy(&["--faults", path.to_str().unwrap()]), what);
    }
    // Nothing listens there, and nothing is sent: the flags are refused first.
    let load = |flags: &[&str]| {
        let mut all: Vec<String> = vec!["load".into(), "--method".into(), "ping".into()];
        all.extend(flags.iter().map(|s| s.to_string()));
        all.extend(["--server-url".into(), "http://127.0.0.1:9/mcp".into()]);
        run(&all)
    };
    refused(&load(&["--duration", huge]), TOO_LONG);
    refused(&load(&["--warmup", huge]), TOO_LONG);
    refused(&load(&["--duration", "1e30s"]), TOO_LONG);
    refused(&load(&["--ramp", &format!("1..2 over {huge}")]), TOO_LONG);
    let mut app: Vec<String> = ["app", "--tool-name", "echo", "--close-after", huge]
        .map(String::from)
        .to_vec();
    app.extend(server());
    refused(&run(&app), TOO_LONG);
}

#[test]
fn load_refuses_more_sessions_or_requests_in_flight_than_it_takes() {
    let load = |flags: &[&str]| {
        let mut all: Vec<String> = vec!["load".into(), "--method".into(), "ping".into()];
        all.extend(flags.iter().map(|s| s.to_string()));
        all.extend(["--server-url".into(), "http://127.0.0.1:9/mcp".into()]);
        run(&all)
    };
    let limit = "1000000000 sessions: at most 10000 run at once";
    refused(
        &load(&["--concurrency", "1000000000"]),
        &format!("--concurrency: {limit}"),
    );
    refused(&load(&["--sessions", "1000000000"]), &format!("--sessions: {limit}"));
    refused(&load(&["--ramp", "1..1000000000 over 2s"]), &format!("TO is {limit}"));
    refused(
        &load(&["--concurrency", "2", "--in-flight", "1000000000"]),
        "--in-flight: 1000000000 requests in flight per session: at most 1000",
    );
}

/// A proxy with its control socket, a client session through it, and a
/// program on the socket.
struct Intercepted {
    child: std::process::Child,
    to_server: std::process::ChildStdin,
    from_server: mpsc::Receiver<String>,
    home: tempfile::TempDir,
}

impl Intercepted {
    fn start() -> Intercepted {
        let home = tempfile::tempdir().unwrap();
        let mut child = crate::support::mcpscope_command()
            .args(["proxy", "--intercept", "--control-name", "hostile"])
            .args(server())
            .env("HOME", home.path())
            .env("XDG_STATE_HOME", home.path().join("state"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let to_server = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, from_server) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Intercepted {
            child,
            to_server,
            from_server,
            home,
        }
    }

    /// The answer to a request sent through the proxy, as the client gets it.
    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.to_server, "{line}").unwrap();
        self.to_server.flush().unwrap();
        let answer = self
            .from_server
            .recv_timeout(WITHIN)
            .unwrap_or_else(|_| panic!("no answer to {method} through the proxy"));
        let v: Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(v["id"], id, "{v}");
        v
    }

    fn socket(&self) -> (UnixStream, BufReader<UnixStream>) {
        let path = self.home.path().join("state/mcpscope/intercept/hostile.sock");
        wait_until(WITHIN, "the control socket", || path.exists());
        let s = UnixStream::connect(&path).unwrap();
        s.set_read_timeout(Some(WITHIN)).unwrap();
        let reader = BufReader::new(s.try_clone().unwrap());
        (s, reader)
    }
}

fn ask(socket: &mut UnixStream, reader: &mut BufReader<UnixStream>, request: &Value) -> Value {
    writeln!(socket, "{request}").unwrap();
    let mut line = String::new();
    let n = reader.read_line(&mut line).unwrap_or(0);
    assert!(
        n > 0,
        "the control socket hung up on {}",
        &request.to_string()[..80.min(request.to_string().len())]
    );
    serde_json::from_str(&line).unwrap()
}

#[test]
fn the_control_socket_answers_deep_breaks_and_huge_timeouts_and_the_session_goes_on() {
    let mut p = Intercepted::start();
    let init = p.request(
        0,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    assert!(init["result"].is_object(), "{init}");
    let (mut s, mut r) = p.socket();
    let [parens, nots] = deep_filters();
    let big: Value = serde_json::from_str("1e300").unwrap();
    for (request, what) in [
        (json!({"op": "break", "match": parens}), TOO_DEEP),
        (json!({"op": "break", "match": nots}), TOO_DEEP),
        (json!({"op": "fault", "rule": format!("{parens} => drop")}), TOO_DEEP),
        (
            json!({"op": "break", "match": "true", "timeout": big}),
            "longer than 8760h",
        ),
        (json!({"op": "break", "match": "true", "timeout": -1}), "is negative"),
        (
            json!({"op": "break", "match": "true", "timeout": "18446744073709551615s"}),
            TOO_LONG,
        ),
        (
            json!({"op": "fault", "rule": "true => delay 18446744073709551615s"}),
            TOO_LONG,
        ),
    ] {
        // Each on the same connection: its thread lives on to answer the next.
        let answer = ask(&mut s, &mut r, &request);
        assert_eq!(answer["ok"], false, "{answer}");
        let error = answer["error"].as_str().unwrap();
        assert!(error.contains(what), "{error}");
    }
    let board = ask(&mut s, &mut r, &json!({"op": "board"}));
    assert_eq!(board["ok"], true, "{board}");
    assert_eq!(board["board"]["breakpoints"], json!([]), "nothing was added: {board}");
    // The proxy is alive and its client's session goes on.
    assert!(p.child.try_wait().unwrap().is_none(), "the proxy ended");
    let tools = p.request(1, "tools/list", json!({}));
    assert_eq!(tools["result"]["tools"][0]["name"], "echo", "{tools}");
    drop(p.to_server);
    let out = wait_output(p.child, WITHIN, "the proxy after its client left");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("panicked"), "{}", text(&out.stderr));
}

/// `mock --speed 1e-300 --timing recorded`: the recorded gap before an
/// answer, played that slowly, is longer than a `Duration` holds; the mock
/// panicked on the first request (`div_f64`). Now the gap is at most a year
/// (`duration::at_speed`) and the mock goes on waiting, alive.
#[test]
fn a_mock_at_a_tiny_speed_waits_instead_of_panicking() {
    use std::io::Write as _;
    use std::process::Stdio;
    let capture = repo().join("tests/captures/slow-response.jsonl");
    let mut child = crate::support::mcpscope_command()
        .args(["mock", "--speed", "1e-300", "--timing", "recorded"])
        .arg(&capture)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running mcpscope mock");
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(
            br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":1,"method":"tools/list"}
"#,
        )
        .unwrap();
    stdin.flush().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let status = child.try_wait().unwrap();
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    assert!(
        status.is_none(),
        "the mock ended ({status:?}): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
}
