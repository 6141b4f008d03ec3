#![allow(dead_code)]

use crossbeam_channel::RecvTimeoutError;
use mcpscope_core::transport::event::Event;
use mcpscope_core::transport::process::ServerSpec;
use mcpscope_core::transport::session::{Session, SessionOptions};
use mcpscope_core::wire::frame::{Direction, Frame};
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_mcpscope"))
}

/// The variable that points the CLI's tests at a Windows build of
/// mcpscope, run under Wine (scripts/wine-test sets it).
pub const WINE_EXE_VAR: &str = "MCPSCOPE_TEST_WINE_EXE";

/// The mcpscope binary to test, as a command: this build's, or with
/// [`WINE_EXE_VAR`] set, the Windows build it names, run under Wine.
pub fn mcpscope_command() -> std::process::Command {
    match std::env::var_os(WINE_EXE_VAR) {
        Some(exe) => {
            // Which tests ran the Windows build: scripts/wine-test counts
            // only those (libtest names each test's thread after it).
            if let Some(log) = std::env::var_os("MCPSCOPE_TEST_WINE_LOG")
                && let Some(test) = std::thread::current().name()
                && let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(log)
            {
                let _ = std::io::Write::write_all(&mut f, format!("{test}\n").as_bytes());
            }
            let mut cmd = std::process::Command::new("wine");
            cmd.arg(exe);
            cmd
        }
        None => std::process::Command::new(bin()),
    }
}

/// `path`, or a failed test telling how to install the peer it belongs to.
pub fn need(path: PathBuf) -> PathBuf {
    assert!(
        path.exists(),
        "{} is missing: run scripts/setup-test-peers first",
        path.display()
    );
    path
}

pub fn faulty_path() -> String {
    repo().join("tests/servers/faulty_server.py").display().to_string()
}

/// The project's misbehaving server in one of its modes.
pub fn faulty(mode: &str) -> ServerSpec {
    faulty_with(mode, &[])
}

pub fn faulty_with(mode: &str, extra: &[&str]) -> ServerSpec {
    let mut args = vec![faulty_path(), "--mode".into(), mode.into()];
    args.extend(extra.iter().map(|s| s.to_string()));
    ServerSpec::new("python3", args)
}

pub fn everything() -> ServerSpec {
    let entry = need(repo().join("tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"));
    ServerSpec::new("node", [entry.display().to_string(), "stdio".into()])
}

pub fn py_server() -> ServerSpec {
    let python = need(repo().join("tests/peers/.venv/bin/python"));
    ServerSpec::new(
        python.display().to_string(),
        [repo().join("tests/servers/py_server.py").display().to_string()],
    )
}

/// The Python SDK server exercising the 2026-07-28 era (MRTR, listen).
pub fn py_modern_server() -> ServerSpec {
    let python = need(repo().join("tests/peers/.venv/bin/python"));
    ServerSpec::new(
        python.display().to_string(),
        [repo().join("tests/servers/py_modern_server.py").display().to_string()],
    )
}

pub fn node_zod_server() -> ServerSpec {
    need(repo().join("tests/peers/node_modules/@modelcontextprotocol/sdk/package.json"));
    ServerSpec::new(
        "node",
        [repo().join("tests/servers/node_zod_server.mjs").display().to_string()],
    )
}

/// Session options with short shutdown graces so tests stay quick.
pub fn quick() -> SessionOptions {
    SessionOptions {
        request_timeout: Some(Duration::from_secs(20)),
        stdin_close_grace: Duration::from_millis(500),
        term_grace: Duration::from_millis(500),
        ..SessionOptions::new(mcpscope_core::record::capture::open_log)
    }
}

/// Receives events until `stop` says so (the matching event included) or the time is up.
pub fn collect_until(session: &Session, timeout: Duration, mut stop: impl FnMut(&Event) -> bool) -> Vec<Event> {
    let deadline = Instant::now() + timeout;
    let mut out = Vec::new();
    loop {
        match session
            .events()
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            Ok(ev) => {
                let done = stop(&ev);
                out.push(ev);
                if done {
                    return out;
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                let kinds: Vec<String> = out.iter().map(describe).collect();
                panic!(
                    "condition not met within {timeout:?}; events so far:\n{}",
                    kinds.join("\n")
                );
            }
            Err(RecvTimeoutError::Disconnected) => return out,
        }
    }
}

pub fn describe(e: &Event) -> String {
    match e {
        Event::Frame(f) => format!("{} {} {:?}", f.direction.arrow(), f.text(), f.anomalies()),
        other => format!("{other:?}").chars().take(200).collect(),
    }
}

pub fn frames(events: &[Event]) -> Vec<&Frame> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Frame(f) => Some(f),
            _ => None,
        })
        .collect()
}

pub fn received(events: &[Event]) -> Vec<&Frame> {
    frames(events)
        .into_iter()
        .filter(|f| f.direction == Direction::In)
        .collect()
}

pub fn sent(events: &[Event]) -> Vec<&Frame> {
    frames(events)
        .into_iter()
        .filter(|f| f.direction == Direction::Out)
        .collect()
}

pub fn stderr_text(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Stderr(s) => Some(format!("{}\n", s.text())),
            _ => None,
        })
        .collect()
}

/// Whether any process of the group is still alive.
pub fn group_alive(pgid: u32) -> bool {
    mcpscope_core::transport::process::group_alive(pgid)
}

pub fn pid_of(events: &[Event]) -> u32 {
    events
        .iter()
        .find_map(|e| match e {
            Event::Spawned { pid, .. } => Some(*pid),
            _ => None,
        })
        .expect("a Spawned event")
}

/// Waits (bounded) for a process group to disappear.
pub fn wait_group_gone(pgid: u32, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if !group_alive(pgid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    !group_alive(pgid)
}

pub type Sink = std::sync::Arc<std::sync::Mutex<Vec<Event>>>;

/// A blocking client whose events are all kept in the returned sink.
pub fn client(spec: ServerSpec) -> (mcpscope_core::client::Client, Sink) {
    client_with(spec, quick())
}

pub fn client_with(spec: ServerSpec, options: SessionOptions) -> (mcpscope_core::client::Client, Sink) {
    connect(mcpscope_core::transport::target::Target::Stdio(spec), options)
}

/// A blocking client of any target whose events are all kept in the returned sink.
pub fn connect(
    target: impl Into<mcpscope_core::transport::target::Target>,
    options: SessionOptions,
) -> (mcpscope_core::client::Client, Sink) {
    let sink: Sink = Default::default();
    let s = sink.clone();
    let c =
        mcpscope_core::client::Client::connect(target, options, Box::new(move |e: Event| s.lock().unwrap().push(e)));
    (c, sink)
}

/// The HTTP exchanges among the events.
pub fn http_events(events: &[Event]) -> Vec<&mcpscope_core::transport::event::HttpInfo> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Http(h) => Some(h),
            _ => None,
        })
        .collect()
}

pub fn snapshot(sink: &Sink) -> Vec<Event> {
    sink.lock().unwrap().clone()
}

pub const T: Duration = Duration::from_secs(20);

/// Steps the app (which repaints while a session runs) until `done` holds,
/// then a few frames more so what changed is drawn.
pub fn step_until(
    h: &mut egui_kittest::Harness<'static, mcpscope_app::McpscopeApp>,
    what: &str,
    done: impl Fn(&mcpscope_app::McpscopeApp) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done(h.state()) {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        h.step();
        std::thread::sleep(Duration::from_millis(20));
    }
    for _ in 0..4 {
        h.step();
    }
}

/// Drains an inspection (no UI) until `done` holds; on timeout prints its rows.
pub fn drain_until(
    i: &mut mcpscope_app::inspection::Inspection,
    what: &str,
    done: impl Fn(&mcpscope_app::inspection::Inspection) -> bool,
) {
    let deadline = Instant::now() + T;
    while !done(i) {
        if Instant::now() >= deadline {
            for r in i.model.store.iter() {
                eprintln!("ROW {}", mcpscope_core::text::shorten(&r.text(), 240));
            }
            panic!("timed out waiting for {what}");
        }
        i.drain();
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Startup arguments that launch `spec` at once (`mcpscope -- CMD ARGS`).
pub fn launching(spec: &ServerSpec) -> mcpscope_app::StartupArgs {
    let mut launch = vec![spec.program.clone()];
    launch.extend(spec.args.clone());
    mcpscope_app::StartupArgs {
        launch,
        ..mcpscope_app::StartupArgs::default()
    }
}

/// The authorization steps a session recorded, in order.
pub fn auth_steps(events: &[mcpscope_core::transport::event::Event]) -> Vec<mcpscope_core::protocol::auth::Step> {
    events
        .iter()
        .filter_map(|e| match e {
            mcpscope_core::transport::event::Event::Auth(a) => Some(a.step),
            _ => None,
        })
        .collect()
}

/// Errors of a JUnit file against the schema CI tools read (Jenkins xunit's
/// junit-10.xsd, from pytest's sources; scripts/setup-test-peers fetches it),
/// one per line; empty when it is valid.
pub fn junit_schema_errors(file: &std::path::Path) -> String {
    let xsd = need(repo().join("tests/peers/junit-10.xsd"));
    let python = need(repo().join("tests/peers/.venv/bin/python"));
    let out = std::process::Command::new(python)
        .args([
            "-c",
            "import sys, xmlschema\n\
             schema = xmlschema.XMLSchema(sys.argv[1])\n\
             print('\\n'.join(str(e).splitlines()[0] for e in schema.iter_errors(sys.argv[2])))",
            xsd.to_str().unwrap(),
            file.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "xmlschema: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// What the official SARIF validator (Microsoft's SARIF Multitool, the SARIF
/// rules and GitHub code scanning's ingestion rules) reports for `files`:
/// one line per error or warning; empty when they are clean.
pub fn sarif_problems(files: &[PathBuf]) -> String {
    let tool = need(repo().join("tests/peers/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool"));
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(tool)
        .arg("validate")
        .args(files)
        .arg("-o")
        .arg(dir.path().join("validation.sarif"))
        .args(["--rule-kind", "Sarif;Gh", "--log", "ForceOverwrite"])
        // A self-contained .NET program: no ICU needed, no telemetry.
        .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
        .env("DOTNET_CLI_TELEMETRY_OPTOUT", "1")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        said.contains("Analysis completed"),
        "the validator did not run: {said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    said.lines()
        .filter(|l| l.contains(": error ") || l.contains(": warning "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Reads a proxy's or mock's stderr up to its "listening on http://ADDR"
/// line: the address.
pub fn listening_addr(err: &mut impl std::io::BufRead) -> String {
    let mut line = String::new();
    while !line.contains("listening on http://") {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "it ended before listening");
    }
    line.split("listening on http://")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned()
}

/// The fast JSON-mode test server (tests/servers/fast_http_server.mjs).
pub struct FastServer {
    child: std::process::Child,
    pub url: String,
}

impl FastServer {
    pub fn start(env: &[(&str, &str)]) -> FastServer {
        let mut cmd = std::process::Command::new("node");
        cmd.arg(repo().join("tests/servers/fast_http_server.mjs"));
        for (k, v) in env {
            cmd.env(k, v);
        }
        let (child, url) = spawn_listening(cmd, "MCP_URL=");
        FastServer { child, url }
    }
}

/// Starts a test server that prints `PREFIX<its address>` as its first line
/// on stdout; the child and the address.
pub fn spawn_listening(mut cmd: std::process::Command, prefix: &str) -> (std::process::Child, String) {
    use std::io::BufRead as _;
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("starting {cmd:?}: {e}"));
    let mut line = String::new();
    let read = std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line);
    let Some(url) = read
        .ok()
        .and_then(|_| line.trim().strip_prefix(prefix))
        .map(str::to_owned)
    else {
        // Not left running: the caller never gets it to kill.
        let _ = child.kill();
        let _ = child.wait();
        panic!("{cmd:?} printed {line:?}, not its address");
    };
    (child, url)
}

/// A process a test started, killed and waited for when the test ends,
/// failed or not (one left running holds the test runner's output open).
pub struct KilledOnDrop(pub std::process::Child);

impl Drop for KilledOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for FastServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether the app's timeline on screen has a row whose label holds `text`.
pub fn timeline_has(app: &mcpscope_app::McpscopeApp, text: &str) -> bool {
    app.session().inspection.as_ref().is_some_and(|i| {
        i.model
            .store
            .iter()
            .any(|r| mcpscope_app::panels::timeline::row_label(&i.model.store, &r).contains(text))
    })
}

/// Runs `script` (bash) in a D-Bus session of its own with GNOME Keyring's
/// Secret Service started and unlocked in it, as a desktop session has; the
/// script's environment has `$MCPSCOPE` and a private `$HOME` under `dir`.
pub fn in_a_keyring_session(dir: &std::path::Path, script: &str, env: &[(&str, &str)]) -> std::process::Output {
    for tool in ["dbus-run-session", "gnome-keyring-daemon", "secret-tool"] {
        assert!(
            std::process::Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .output()
                .unwrap()
                .status
                .success(),
            "{tool} is missing: run scripts/setup"
        );
    }
    let home = dir.join("home");
    std::fs::create_dir_all(home.join("run")).unwrap();
    let prelude = r#"set -e
chmod 700 "$XDG_RUNTIME_DIR"
eval "$(printf 'test-password' | gnome-keyring-daemon --unlock --components=secrets)"
"#;
    let mut cmd = std::process::Command::new("dbus-run-session");
    cmd.args(["--", "bash", "-c", &format!("{prelude}{script}")])
        .env("MCPSCOPE", bin())
        .env("HOME", &home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env("XDG_RUNTIME_DIR", home.join("run"))
        .env_remove("BROWSER")
        .env_remove("DBUS_SESSION_BUS_ADDRESS");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("running dbus-run-session")
}
