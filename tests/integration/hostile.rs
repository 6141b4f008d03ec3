//! A hostile environment: servers of our own that steal credentials, redirect,
//! flood, never send a newline, exit at once or leave children behind
//! (`tests/servers/hostile_server.py`, `tests/servers/hostile_http.py`), and
//! the signals, closed pipes, FIFOs and unwritable captures a user's shell
//! throws at the binary. Each test fails without the fix it guards.

use crate::support::*;
use mcpscope_core::client::ClientError;
use mcpscope_core::protocol::handshake::HandshakeOptions;
use mcpscope_core::record::capture;
use mcpscope_core::transport::event::{Event, HttpInfo};
use mcpscope_core::transport::session::{Session, SessionOptions};
use mcpscope_core::transport::target::{HttpTarget, Target};
use mcpscope_core::wire::classify::{Anomalies, Kind, Limits};
use mcpscope_core::wire::framing::LineEnding;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn hostile_server() -> String {
    repo().join("tests/servers/hostile_server.py").display().to_string()
}

fn hostile_args(mode: &str, extra: &[&str]) -> Vec<String> {
    let mut v = vec!["python3".to_owned(), hostile_server(), "--mode".into(), mode.into()];
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

fn hostile(mode: &str, extra: &[&str]) -> mcpscope_core::transport::process::ServerSpec {
    let mut a = hostile_args(mode, extra);
    let program = a.remove(0);
    mcpscope_core::transport::process::ServerSpec::new(program, a)
}

pub(crate) fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs the binary to its end, killing it (and failing) if it takes longer than `within`.
pub(crate) fn run_bin(args: &[&str], within: Duration) -> Output {
    let child = Command::new(bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running mcpscope");
    wait_output(child, within, &format!("mcpscope {}", args.join(" ")))
}

pub(crate) fn wait_output(mut child: Child, within: Duration, what: &str) -> Output {
    let deadline = Instant::now() + within;
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut o = Vec::new();
        let mut e = Vec::new();
        if let Some(s) = out.as_mut() {
            let _ = s.read_to_end(&mut o);
        }
        if let Some(s) = err.as_mut() {
            let _ = s.read_to_end(&mut e);
        }
        (o, e)
    });
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let (stdout, stderr) = reader.join().unwrap();
            return Output { status, stdout, stderr };
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish within {within:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether a process exists and is not a zombie.
pub(crate) fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z"),
        Err(_) => false,
    }
}

pub(crate) fn wait_until(within: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !cond() {
        assert!(Instant::now() < deadline, "{what}: not within {within:?}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

fn read_pid(path: &Path, within: Duration) -> i32 {
    wait_until(within, "the grandchild's pid file", || path.exists());
    std::fs::read_to_string(path).unwrap().trim().parse().unwrap()
}

struct KillOnDrop(i32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        // SAFETY: a plain kill of a test's own stray process.
        unsafe { libc::kill(self.0, libc::SIGKILL) };
    }
}

/// The hostile HTTP server, killed when dropped; its report lines collected.
pub(crate) struct HostileHttp {
    child: Child,
    pub(crate) port: u16,
    lines: Arc<Mutex<Vec<String>>>,
}

impl HostileHttp {
    pub(crate) fn start(args: &[&str]) -> HostileHttp {
        let mut child = Command::new("python3")
            .arg(repo().join("tests/servers/hostile_http.py"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3");
        let mut reader = BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        reader.read_line(&mut first).unwrap();
        let port = first
            .strip_prefix("PORT ")
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("hostile_http.py said {first:?}"));
        let lines: Arc<Mutex<Vec<String>>> = Default::default();
        let l = lines.clone();
        std::thread::spawn(move || {
            for line in reader.lines() {
                let Ok(line) = line else { return };
                l.lock().unwrap().push(line);
            }
        });
        HostileHttp { child, port, lines }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Everything the server reported before now (a GET /mark orders it).
    fn reported(&self) -> Vec<String> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.write_all(b"GET /mark HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut sink = Vec::new();
        let _ = s.read_to_end(&mut sink);
        wait_until(Duration::from_secs(10), "the MARK line", || {
            self.lines.lock().unwrap().iter().any(|l| l == "MARK")
        });
        let lines = self.lines.lock().unwrap();
        let end = lines.iter().position(|l| l == "MARK").unwrap();
        let out = lines[..end].to_vec();
        drop(lines);
        self.lines.lock().unwrap().retain(|l| l != "MARK");
        out
    }

    fn wait_line(&self, within: Duration, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + within;
        loop {
            if let Some(l) = self.lines.lock().unwrap().iter().find(|l| pred(l)) {
                return l.clone();
            }
            assert!(Instant::now() < deadline, "no such report line within {within:?}");
            std::thread::sleep(Duration::from_millis(25));
        }
    }
}

impl Drop for HostileHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------
// 1. Credentials go only to the origin the user named.

#[test]
fn an_sse_endpoint_on_another_origin_is_refused_and_gets_no_credentials() {
    let server = HostileHttp::start(&["--mode", "sse-steal"]);
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("c.jsonl");
    let url = server.url("/sse");
    let out = run_bin(
        &[
            "call",
            "--method",
            "tools/list",
            "--transport",
            "sse",
            "--server-url",
            &url,
            "-H",
            "Authorization: Bearer s3cret-token",
            "--timeout-ms",
            "20000",
            "--capture",
            cap.to_str().unwrap(),
        ],
        Duration::from_secs(30),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("another origin") && err.contains("127.0.0.2"), "{err}");
    let stolen: Vec<String> = server
        .reported()
        .into_iter()
        .filter(|l| l.starts_with("STOLEN"))
        .collect();
    assert!(stolen.is_empty(), "credentials went to another origin: {stolen:?}");
    let loaded = capture::load(&cap).unwrap();
    assert!(loaded.events.iter().any(|e| matches!(e, Event::Http(h)
        if h.error.as_deref().is_some_and(|x| x.contains("refused the endpoint")))));
}

#[test]
fn a_redirect_to_another_origin_is_recorded_and_not_followed() {
    for status in ["301", "307", "308"] {
        let server = HostileHttp::start(&["--mode", "redirect-other", "--status", status]);
        let target = HttpTarget::streamable(server.url("/mcp")).with_header("Authorization", "Bearer s3cret-token");
        let (mut c, sink) = connect(target, SessionOptions { ..quick() });
        let started = Instant::now();
        let err = c.initialize(&HandshakeOptions::default(), T).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(10), "waited for a timeout");
        let ClientError::Http { error, .. } = &err else {
            panic!("{err:?}")
        };
        assert!(
            error.contains("another origin") && error.contains("127.0.0.2"),
            "{status}: {error}"
        );
        c.close();
        let evs = snapshot(&sink);
        let hops: Vec<&HttpInfo> = http_events(&evs)
            .into_iter()
            .filter(|h| h.status == Some(status.parse().unwrap()))
            .collect();
        assert_eq!(hops.len(), 1, "{status}: the redirect is recorded once");
        assert!(
            hops[0]
                .received_header("location")
                .is_some_and(|l| l.contains("127.0.0.2"))
        );
        assert!(hops[0].text.contains("redirected"), "{:?}", hops[0]);
        let stolen: Vec<String> = server
            .reported()
            .into_iter()
            .filter(|l| l.starts_with("STOLEN"))
            .collect();
        assert!(stolen.is_empty(), "{status}: followed to another origin: {stolen:?}");
    }
}

#[test]
fn a_same_origin_307_is_followed_with_the_method_and_recorded() {
    let server = HostileHttp::start(&["--mode", "redirect-same"]);
    let (mut c, sink) = connect(HttpTarget::streamable(server.url("/mcp")), quick());
    let hs = c.initialize(&HandshakeOptions::default(), T).unwrap().unwrap();
    assert!(hs.usable());
    c.close();
    let evs = snapshot(&sink);
    let http = http_events(&evs);
    assert!(
        http.iter().any(|h| h.status == Some(307) && h.text.contains("/mcp2")),
        "{http:#?}"
    );
    assert!(
        http.iter().any(|h| h.status == Some(200) && h.url.ends_with("/mcp2")),
        "{http:#?}"
    );
}

// ---------------------------------------------------------------------------
// 4. Credentials in URLs are masked wherever a URL is shown or recorded.

#[test]
fn credentials_in_the_url_never_reach_the_capture_or_the_trace() {
    let server = HostileHttp::start(&["--mode", "plain"]);
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("c.jsonl");
    let url = format!(
        "http://alice:pw-SECRET1@127.0.0.1:{}/mcp?token=SECRET2&page=1",
        server.port
    );
    let out = run_bin(
        &[
            "call",
            "--method",
            "tools/list",
            "--server-url",
            &url,
            "--trace",
            "--capture",
            cap.to_str().unwrap(),
        ],
        Duration::from_secs(30),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let recorded = std::fs::read_to_string(&cap).unwrap();
    for secret in ["SECRET1", "SECRET2", "alice"] {
        assert!(!err.contains(secret), "{secret} in the trace:\n{err}");
        assert!(!recorded.contains(secret), "{secret} in the capture:\n{recorded}");
    }
    assert!(recorded.contains("token=****"), "{recorded}");
    assert!(err.contains("page=1"), "the rest of the URL is still shown:\n{err}");
}

// ---------------------------------------------------------------------------
// 3. Captures of the app: per-user private directory, private files.

#[test]
fn the_apps_captures_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let mut a = mcpscope_app::inspection::Inspection::launch(
        Target::Stdio(hostile("interleave", &["--count", "1"])),
        "2025-11-25",
        None,
    );
    let b = mcpscope_app::inspection::Inspection::launch(
        Target::Stdio(hostile("interleave", &["--count", "1"])),
        "2025-11-25",
        None,
    );
    let (pa, pb) = (a.capture_path.clone().unwrap(), b.capture_path.clone().unwrap());
    assert_ne!(pa, pb);
    let mode = |p: &Path| std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&pa), 0o600, "{}", pa.display());
    assert_eq!(mode(pa.parent().unwrap()), 0o700, "{}", pa.display());
    assert!(!pa.starts_with(std::env::temp_dir()), "{}", pa.display());
    a.stop();
    drop(a);
    drop(b);
    let _ = std::fs::remove_file(pa);
    let _ = std::fs::remove_file(pb);
}

// ---------------------------------------------------------------------------
// 5. Signals: the whole process group is ended and the end is recorded.

fn grandchild_session(sub: &[&str], sig: i32, ignores_term: bool) {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("grandchild.pid");
    let cap = dir.path().join("c.jsonl");
    let mut args: Vec<String> = sub.iter().map(|s| s.to_string()).collect();
    // The doctor keeps no capture; the others are checked for the record of the end.
    let captured = sub[0] != "doctor";
    if captured {
        args.extend(["--capture".into(), cap.display().to_string()]);
    }
    args.push("--".into());
    let mut extra = vec!["--pid-file", pid_file.to_str().unwrap()];
    if ignores_term {
        extra.push("--grandchild-ignores-term");
    }
    args.extend(hostile_args("grandchild", &extra));
    let mut child = Command::new(bin())
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take(); // a proxy's client keeps its end open
    let grandchild = read_pid(&pid_file, Duration::from_secs(20));
    let _cleanup = KillOnDrop(grandchild);
    // SAFETY: signalling the mcpscope we started.
    unsafe { libc::kill(child.id() as i32, sig) };
    let what = format!("{sub:?} after signal {sig}");
    let out = wait_output(child, Duration::from_secs(30), &what);
    drop(stdin);
    let err = text(&out.stderr);
    if sig == libc::SIGKILL {
        assert_eq!(out.status.signal(), Some(libc::SIGKILL));
    } else {
        assert_eq!(out.status.code(), Some(128 + sig), "{what}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    wait_until(Duration::from_secs(15), &format!("{what}: the grandchild dies"), || {
        !alive(grandchild)
    });
    if sig != libc::SIGKILL && captured {
        let recorded = std::fs::read_to_string(&cap).unwrap();
        let name = mcpscope_core::transport::process::signal_name(sig);
        assert!(
            recorded.contains(&format!("mcpscope received {name}")),
            "{what}: the capture says why it ended:\n{recorded}"
        );
        assert!(recorded.contains(r#""event":"closed""#), "{what}:\n{recorded}");
    }
}

#[test]
fn sigint_sigterm_and_sighup_end_the_servers_whole_group() {
    let call = ["call", "--method", "tools/list"];
    grandchild_session(&call, libc::SIGINT, false);
    grandchild_session(&call, libc::SIGTERM, true);
    grandchild_session(&["proxy"], libc::SIGHUP, false);
    grandchild_session(&["proxy"], libc::SIGTERM, true);
}

#[test]
fn doctor_and_listen_end_the_group_on_a_signal_too() {
    grandchild_session(
        &["doctor", "--era", "legacy", "--timeout-ms", "20000"],
        libc::SIGTERM,
        false,
    );
    grandchild_session(&["listen", "--timeout-ms", "20000"], libc::SIGINT, true);
}

#[test]
fn when_mcpscope_is_killed_outright_the_group_still_dies() {
    grandchild_session(&["call", "--method", "tools/list"], libc::SIGKILL, false);
    grandchild_session(&["proxy"], libc::SIGKILL, true);
}

/// A server whose grandchild daemonises (double fork, `setsid`: out of the
/// process group, re-parented): mcpscope ends it too, whether it exits by
/// itself (`sig` None), on a signal, or is killed outright (the watchdog).
fn daemon_session(sub: &[&str], sig: Option<i32>) {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("daemon.pid");
    let mut args: Vec<String> = sub.iter().map(|s| s.to_string()).collect();
    args.push("--".into());
    args.extend(hostile_args(
        "grandchild",
        &["--grandchild-setsid", "--pid-file", pid_file.to_str().unwrap()],
    ));
    let mut child = Command::new(bin())
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    let daemon = read_pid(&pid_file, Duration::from_secs(20));
    let _cleanup = KillOnDrop(daemon);
    let what = format!("{sub:?} with {sig:?}");
    match sig {
        // SAFETY: signalling the mcpscope we started.
        Some(sig) => unsafe {
            libc::kill(child.id() as i32, sig);
        },
        // A proxy ends when its client closes; call and doctor time out.
        None => drop(stdin),
    }
    let out = wait_output(child, Duration::from_secs(30), &what);
    let err = text(&out.stderr);
    assert!(!err.contains("panicked"), "{what}: {err}");
    if sig == Some(libc::SIGKILL) {
        // The watchdog ends it on its own time.
        wait_until(Duration::from_secs(15), &format!("{what}: the daemon dies"), || {
            !alive(daemon)
        });
    } else {
        // Whoever waits for mcpscope finds nothing of the server left.
        assert!(!alive(daemon), "{what}: the daemon {daemon} outlived mcpscope: {err}");
    }
}

#[test]
fn a_daemonised_descendant_outside_the_group_is_ended_on_every_exit_path() {
    let call = ["call", "--method", "tools/list", "--timeout-ms", "1500"];
    daemon_session(&call, None);
    daemon_session(&["doctor", "--era", "legacy", "--timeout-ms", "1500"], None);
    daemon_session(&["proxy"], None);
    daemon_session(&call, Some(libc::SIGTERM));
    daemon_session(&call, Some(libc::SIGKILL));
    daemon_session(&["proxy"], Some(libc::SIGKILL));
}

// ---------------------------------------------------------------------------
// 6, 7. Captures: a failure is an error; a second session is appended.

#[test]
fn a_capture_that_cannot_be_written_fails_the_command() {
    let server = hostile_args("interleave", &["--count", "1"]);
    let server: Vec<&str> = server.iter().map(String::as_str).collect();
    for (sub, cap) in [
        (vec!["call", "--method", "tools/list"], "/nonexistent/x.jsonl"),
        (vec!["call", "--method", "tools/list"], "/dev/full"),
        (vec!["proxy"], "/nonexistent/x.jsonl"),
        (vec!["listen", "--for-ms", "100"], "/nonexistent/x.jsonl"),
    ] {
        let mut args = sub.clone();
        args.extend(["--capture", cap, "--"]);
        args.extend(&server);
        let out = run_bin(&args, Duration::from_secs(30));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{sub:?} {cap}: {err}");
        let lines: Vec<&str> = err.lines().filter(|l| l.contains(cap)).collect();
        assert_eq!(lines.len(), 1, "{sub:?} {cap}: one line names the capture:\n{err}");
    }
}

#[test]
fn a_second_run_appends_a_session_instead_of_truncating() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("c.jsonl");
    let server = hostile_args("interleave", &["--count", "1"]);
    for _ in 0..2 {
        let mut args = vec![
            "call",
            "--method",
            "tools/list",
            "--capture",
            cap.to_str().unwrap(),
            "--",
        ];
        args.extend(server.iter().map(String::as_str));
        let out = run_bin(&args, Duration::from_secs(30));
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let loaded = capture::load(&cap).unwrap();
    assert_eq!(loaded.sessions.len(), 2);
    for i in 0..2 {
        let answered = loaded
            .session_events(i)
            .iter()
            .filter(|e| matches!(e, Event::Frame(f) if f.kind() == Kind::Result))
            .count();
        assert_eq!(answered, 2, "session {i}: initialize and tools/list answered");
    }
    let out = run_bin(&["lint", cap.to_str().unwrap()], Duration::from_secs(30));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("of 2 sessions"), "{stdout}");
    assert_eq!(out.status.code(), Some(0), "{stdout}");
}

// ---------------------------------------------------------------------------
// 8, 9. Memory stays bounded: endless lines, floods faster than the capture.

#[test]
fn a_line_without_newline_is_capped_recorded_whole_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("c.jsonl");
    let options = SessionOptions {
        limits: Limits {
            max_held_line_bytes: 1024 * 1024,
            ..Limits::default()
        },
        capture: Some(cap.clone()),
        ..quick()
    };
    let junk = 5 * 1024 * 1024 + 17;
    let (mut c, sink) = client_with(hostile("no-newline", &["--bytes", &junk.to_string()]), options);
    let hs = c.initialize(&HandshakeOptions::default(), T).unwrap().unwrap();
    assert!(hs.usable(), "the session goes on after the oversize line");
    let r = c.request("tools/list", None, T).unwrap();
    assert!(r.outcome.is_ok());
    c.close();
    let evs = snapshot(&sink);
    let pieces: Vec<_> = received(&evs)
        .into_iter()
        .filter(|f| f.anomalies().contains(Anomalies::OVERSIZE))
        .collect();
    assert_eq!(pieces.len(), 6, "5 MiB + 17 in pieces of at most 1 MiB");
    assert!(pieces.iter().all(|f| f.raw.len() <= 1024 * 1024));
    assert_eq!(pieces.iter().map(|f| f.raw.len()).sum::<usize>(), junk);
    assert!(pieces[..5].iter().all(|f| f.ending == LineEnding::Cut));
    assert_eq!(pieces[5].ending, LineEnding::Lf);
    // Every byte is in the capture, and it loads back the same way.
    let loaded = capture::load(&cap).unwrap();
    let recorded: usize = loaded
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Frame(f) if f.anomalies().contains(Anomalies::OVERSIZE) => Some(f.raw.len()),
            _ => None,
        })
        .sum();
    assert_eq!(recorded, junk);
}

#[test]
fn lint_refuses_devices_and_fifos_instead_of_hanging_or_exhausting_memory() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for (path, says) in [(fifo.to_str().unwrap(), "FIFO"), ("/dev/zero", "character device")] {
        let out = run_bin(&["lint", path], Duration::from_secs(20));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{path}: {err}");
        assert!(err.contains(says), "{path}: {err}");
    }
    // The app opens captures the same way: refused, not blocked on.
    let e = mcpscope_app::inspection::Inspection::open_capture(&fifo).err().unwrap();
    assert!(format!("{e:#}").contains("FIFO"), "{e:#}");
}

#[test]
fn an_sse_flood_is_slowed_down_by_backpressure_not_buffered() {
    let server = HostileHttp::start(&["--mode", "sse-flood", "--count", "400000"]);
    let options = SessionOptions {
        event_capacity: 1024,
        ..quick()
    };
    let session = Session::connect(HttpTarget::streamable(server.url("/mcp")), options);
    session.request("initialize", Some(HandshakeOptions::default().params()));
    // Read only until the handshake is answered, then stop reading events:
    // the owner is slow, so the session must stop reading the server.
    collect_until(
        &session,
        T,
        |e| matches!(e, Event::Frame(f) if f.kind() == Kind::Result),
    );
    session.notify("notifications/initialized", None);
    let line = server.wait_line(Duration::from_secs(90), |l| {
        l.starts_with("BLOCKED") || l.starts_with("DONE")
    });
    assert!(
        line.starts_with("BLOCKED"),
        "the server wrote all its events although nobody read them: {line}"
    );
    drop(session);
}

// ---------------------------------------------------------------------------
// 10, 11. Closed pipes and FIFOs.

/// `call tools/list` recorded to `cap`, against a server that interleaves
/// `count` stdout and stderr lines.
fn interleaved_capture(cap: &Path, count: u32) -> Output {
    let count = count.to_string();
    let mut args = vec![
        "call",
        "--method",
        "tools/list",
        "--capture",
        cap.to_str().unwrap(),
        "--",
    ];
    let server = hostile_args("interleave", &["--count", &count]);
    args.extend(server.iter().map(String::as_str));
    run_bin(&args, Duration::from_secs(60))
}

#[test]
fn a_closed_stdout_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("c.jsonl");
    let out = interleaved_capture(&cap, 300);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let c = cap.to_str().unwrap();
    for args in [
        vec!["lint", c],
        vec!["lint", "--json", c],
        vec!["diff", "--json", "--all", c, c],
    ] {
        let mut child = Command::new(bin())
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take()); // like `| head -c0`: nobody reads
        let out = wait_output(child, Duration::from_secs(30), &format!("{args:?}"));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(141), "{args:?}: {err}");
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe"),
            "{args:?}: {err}"
        );
    }
}

// ---------------------------------------------------------------------------
// 12. A batch answer over HTTP fails at once, with the right words.

#[test]
fn an_http_batch_answer_fails_at_once_and_says_what_it_is() {
    let server = HostileHttp::start(&["--mode", "batch"]);
    let (mut c, sink) = connect(HttpTarget::streamable(server.url("/mcp")), quick());
    c.initialize(&HandshakeOptions::default(), T).unwrap().unwrap();
    let started = Instant::now();
    let err = c.request("tools/list", None, T).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(10), "waited for the timeout");
    let ClientError::Http { error, .. } = &err else {
        panic!("{err:?}")
    };
    assert!(error.contains("batch"), "{error}");
    c.close();
    let evs = snapshot(&sink);
    let batch = received(&evs)
        .into_iter()
        .find(|f| f.kind() == Kind::Batch)
        .expect("the batch is kept as it came");
    let words: Vec<&str> = batch.anomalies().descriptions().map(|(_, d)| d).collect();
    assert!(words.iter().all(|d| !d.contains("stdio")), "{words:?}");
}

/// #18: an HTTP 400 whose body is the JSON-RPC error answering the request is
/// that error (exit 1, its code and message), not also an HTTP failure.
#[test]
fn an_http_400_carrying_a_jsonrpc_error_is_that_error() {
    let server = HostileHttp::start(&["--mode", "bad-request"]);
    let url = server.url("/mcp");
    let out = run_bin(
        &[
            "call",
            "--server-url",
            &url,
            "--method",
            "tools/call",
            "--params",
            r#"{"name":"nope"}"#,
        ],
        Duration::from_secs(60),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("-32602") && err.contains("no tool named nope"), "{err}");
    assert!(!err.contains("answered HTTP 400"), "{err}");
}

// ---------------------------------------------------------------------------
// 14. --config F --server N shows the real load error.

#[test]
fn a_config_that_cannot_be_loaded_is_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, bytes: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    };
    let cases: Vec<(PathBuf, &str)> = vec![
        (dir.path().join("missing.json"), "No such file"),
        (file("malformed.json", b"{\"mcpServers\": {"), "JSON"),
        (file("empty.json", b""), "empty"),
        (file("binary.json", b"\x00\xff\xfe\x01"), ""),
        (dir.path().to_owned(), ""),
        (file("shape.json", b"{\"mcpServers\": 5}"), "mcpServers"),
    ];
    for (path, says) in cases {
        let mut app = mcpscope_app::McpscopeApp::with_context(egui::Context::default());
        app.startup(mcpscope_app::StartupArgs {
            config: Some(path.clone()),
            server: Some("a".into()),
            ..Default::default()
        });
        // The config is read on a worker.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while app.importing() {
            assert!(std::time::Instant::now() < deadline, "the config was never read");
            app.pump();
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let (_, message) = app.message.clone().expect("a message");
        assert!(
            !message.starts_with("no server named"),
            "{}: the load error is hidden: {message}",
            path.display()
        );
        assert!(message.contains(says), "{}: {message}", path.display());
    }
}

// ---------------------------------------------------------------------------
// 15, 16. Exit statuses and messages that say what happened.

#[test]
fn usage_errors_exit_64_in_every_subcommand() {
    for args in [
        vec!["doctor", "--transport", "http"],
        vec!["listen", "--transport", "sse"],
        vec!["proxy"],
        vec!["call", "--method", "x", "--elicit-accept", "[1]", "--", "true"],
        vec!["call", "--tool-name", "add", "--params", r#"{"a":1}"#, "--", "true"],
        vec!["lint"],
    ] {
        let out = run_bin(&args, Duration::from_secs(20));
        assert_eq!(out.status.code(), Some(64), "{args:?}: {}", text(&out.stderr));
    }
}

#[test]
fn a_server_that_exits_at_once_is_explained_with_its_status_and_stderr() {
    let mut args = vec!["call", "--method", "tools/list", "--"];
    let server = hostile_args("exit-at-once", &[]);
    args.extend(server.iter().map(String::as_str));
    let out = run_bin(&args, Duration::from_secs(30));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("exited with code 3"), "{err}");
    assert!(
        err.contains("HOSTILE_CONFIG is not set"),
        "the server's last words: {err}"
    );
}

#[test]
fn random_bytes_are_not_an_empty_capture_and_diff_names_skipped_lines() {
    let dir = tempfile::tempdir().unwrap();
    let noise = dir.path().join("noise.jsonl");
    let bytes: Vec<u8> = (0u32..1_000_000)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
        .collect();
    std::fs::write(&noise, bytes).unwrap();
    let out = run_bin(&["lint", noise.to_str().unwrap()], Duration::from_secs(20));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(
        !err.contains("empty") && err.contains("not an mcpscope capture"),
        "{err}"
    );

    let cap = dir.path().join("c.jsonl");
    let good = format!(
        "{}\n{}\n{}\n",
        serde_json::json!({"format": "mcpscope-capture", "version": 1}),
        r#"{"t_us":1,"seq":0,"dir":"out","raw":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}","eol":"lf"}"#,
        "garbage that is not a record"
    );
    std::fs::write(&cap, good).unwrap();
    let c = cap.to_str().unwrap();
    let out = run_bin(&["diff", c, c], Duration::from_secs(20));
    let err = text(&out.stderr);
    assert!(err.contains("skipped") && err.contains("line 3"), "{err}");
}

// ---------------------------------------------------------------------------
// 17. The proxy notices a client that stopped reading; times never go back.

#[test]
fn the_proxy_records_a_client_that_stopped_reading() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("c.jsonl");
    let mut args = vec![
        "proxy".to_owned(),
        "--capture".into(),
        cap.display().to_string(),
        "--".into(),
    ];
    args.extend(hostile_args("interleave", &["--count", "5000"]));
    let mut child = Command::new(bin())
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the client reads nothing at all
    let stdin = child.stdin.take();
    let out = wait_output(child, Duration::from_secs(30), "proxy with a client that does not read");
    drop(stdin);
    let _ = out;
    let recorded = std::fs::read_to_string(&cap).unwrap();
    assert!(recorded.contains("the client stopped reading"), "{recorded}");
}

#[test]
fn capture_times_never_run_backwards() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("c.jsonl");
    let out = interleaved_capture(&cap, 20000);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let text = std::fs::read_to_string(&cap).unwrap();
    let times: Vec<u64> = text
        .lines()
        .skip(1)
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["t_us"].as_u64())
        .collect();
    assert!(times.len() > 40_000);
    let back = times.windows(2).filter(|w| w[1] < w[0]).count();
    assert_eq!(back, 0, "{back} record(s) earlier than the one before");
}

// ---------------------------------------------------------------------------
// #11: the owner never blocks on a session that is not keeping up.

#[test]
fn sending_to_a_stalled_session_never_blocks_and_is_reported() {
    let options = SessionOptions {
        event_capacity: 16,
        ..quick()
    };
    // A server flooding stdout with nobody reading events: the session
    // thread blocks on its full event channel and stops taking commands.
    let session = Arc::new(Session::start(faulty_with("flood", &["--count", "200000"]), options));
    let (done_tx, done_rx) = crossbeam_channel::bounded(1);
    let s = session.clone();
    std::thread::spawn(move || {
        for _ in 0..5000 {
            s.notify("notifications/progress", None);
        }
        let _ = done_tx.send(());
    });
    assert!(
        done_rx.recv_timeout(Duration::from_secs(20)).is_ok(),
        "the owner was blocked by a full command channel"
    );
    let evs = collect_until(
        &session,
        Duration::from_secs(60),
        |e| matches!(e, Event::Note { text, .. } if text.contains("were not accepted")),
    );
    assert!(!evs.is_empty());
}

// ---------------------------------------------------------------------------
// #26: hostile clients of the reverse proxy (`mcpscope proxy --listen`).

/// A local upstream that answers every request 200 and writes down each
/// request line before answering, so whatever the proxy forwarded is seen.
struct RevUpstream {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl RevUpstream {
    fn start() -> RevUpstream {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen: Arc<Mutex<Vec<String>>> = Default::default();
        let s = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let s = s.clone();
                std::thread::spawn(move || {
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                    let mut out = stream.try_clone().unwrap();
                    let mut r = BufReader::new(stream);
                    let mut first = String::new();
                    if r.read_line(&mut first).unwrap_or(0) == 0 {
                        return;
                    }
                    let mut len = 0usize;
                    loop {
                        let mut l = String::new();
                        if r.read_line(&mut l).unwrap_or(0) == 0 || l.trim().is_empty() {
                            break;
                        }
                        if let Some((k, v)) = l.split_once(':')
                            && k.eq_ignore_ascii_case("content-length")
                        {
                            len = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; len];
                    let _ = r.read_exact(&mut body);
                    s.lock().unwrap().push(first.trim().to_owned());
                    let answer = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
                    let _ = write!(
                        out,
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        answer.len()
                    );
                    let _ = out.write_all(answer);
                });
            }
        });
        RevUpstream { port, seen }
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

/// The reverse proxy in front of an upstream, stopped when dropped.
struct RevProxy {
    port: u16,
    stopper: mcpscope_core::proxy::reverse::Stopper,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RevProxy {
    fn start(upstream: &RevUpstream) -> RevProxy {
        use mcpscope_core::proxy::reverse::{ReverseProxy, ReverseProxyOptions};
        let options =
            ReverseProxyOptions::new("127.0.0.1:0", &format!("http://127.0.0.1:{}/mcp", upstream.port)).unwrap();
        let proxy = ReverseProxy::bind(options).unwrap();
        let port = proxy.local_addr().port();
        let stopper = proxy.stopper();
        let thread = std::thread::spawn(move || {
            proxy.serve(|| "the test ended".into());
        });
        RevProxy {
            port,
            stopper,
            thread: Some(thread),
        }
    }

    /// Sends raw bytes on a fresh connection and reads the answer to its end.
    fn raw(&self, request: &str) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let _ = s.write_all(request.as_bytes());
        let mut answer = Vec::new();
        let _ = s.read_to_end(&mut answer);
        text(&answer)
    }

    fn normal_request(&self, path: &str) -> String {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        self.raw(&format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nConnection: close\r\n\r\n{body}",
            self.port,
            body.len()
        ))
    }
}

impl Drop for RevProxy {
    fn drop(&mut self) {
        self.stopper.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn a_chunk_size_that_overflows_gets_400_and_never_uses_up_the_reverse_proxy() {
    let upstream = RevUpstream::start();
    let proxy = RevProxy::start(&upstream);
    // More requests than the proxy has connection slots (64): a connection
    // thread that panicked kept its slot, and later clients got 503.
    for i in 0..100 {
        let answer = proxy.raw(&format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n1\r\nA\r\nffffffffffffffff\r\n",
            proxy.port
        ));
        assert!(answer.starts_with("HTTP/1.1 400 "), "request {i}: {answer:?}");
        assert!(answer.contains("chunk size"), "request {i}: {answer:?}");
    }
    let answer = proxy.normal_request("/after");
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer:?}");
    assert_eq!(
        upstream.seen(),
        ["POST /after HTTP/1.1"],
        "only the normal request is forwarded"
    );
}

#[test]
fn two_host_or_two_origin_headers_get_400_and_never_reach_the_upstream() {
    let upstream = RevUpstream::start();
    let proxy = RevProxy::start(&upstream);
    let local = format!("127.0.0.1:{}", proxy.port);
    let cases = [
        format!("Host: {local}\r\nHost: evil.example\r\n"),
        format!("Host: evil.example\r\nHost: {local}\r\n"),
        format!("Host: {local}\r\nhost: {local}\r\n"),
        format!("Host: {local}\r\nOrigin: http://{local}\r\nOrigin: https://evil.example\r\n"),
        format!("Host: {local}\r\nOrigin: https://evil.example\r\nOrigin: http://{local}\r\n"),
    ];
    for headers in &cases {
        let answer = proxy.raw(&format!(
            "POST /dup HTTP/1.1\r\n{headers}content-type: application/json\r\ncontent-length: 2\r\nConnection: close\r\n\r\n{{}}"
        ));
        assert!(answer.starts_with("HTTP/1.1 400 "), "{headers:?}: {answer:?}");
    }
    // The upstream is observed: a normal request does reach it, and nothing before it did.
    let answer = proxy.normal_request("/ok");
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer:?}");
    assert_eq!(upstream.seen(), ["POST /ok HTTP/1.1"]);
}

/// Runs the binary to its end like [`run_bin`], and the most memory it held
/// (VmHWM, in KiB, sampled while it ran: the high-water mark only grows).
pub(crate) fn run_bin_peak(args: &[&str], within: Duration) -> (Output, u64) {
    let child = Command::new(bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running mcpscope");
    let status = format!("/proc/{}/status", child.id());
    let peak = Arc::new(Mutex::new(0u64));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (p, s) = (peak.clone(), stop.clone());
    let sampler = std::thread::spawn(move || {
        while !s.load(std::sync::atomic::Ordering::SeqCst) {
            if let Ok(text) = std::fs::read_to_string(&status)
                && let Some(kb) = text
                    .lines()
                    .find_map(|l| l.strip_prefix("VmHWM:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            {
                let mut p = p.lock().unwrap();
                *p = (*p).max(kb);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    let out = wait_output(child, within, &format!("mcpscope {}", args.join(" ")));
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    sampler.join().unwrap();
    let kb = *peak.lock().unwrap();
    (out, kb)
}

fn captured_bytes(cap: &Path, stderr: bool) -> u64 {
    let loaded = capture::load(cap).unwrap();
    loaded
        .events
        .iter()
        .map(|e| match e {
            Event::Frame(f) if !stderr && f.direction == mcpscope_core::wire::frame::Direction::In => {
                f.raw.len() as u64
            }
            Event::Stderr(s) if stderr => s.raw.len() as u64,
            _ => 0,
        })
        .sum()
}

#[test]
fn an_answer_over_the_line_cap_is_named_kept_and_readable_with_max_line() {
    let dir = tempfile::tempdir().unwrap();
    let size = (3 * 1024 * 1024).to_string();
    for id_last in [false, true] {
        let cap = dir.path().join(format!("long-{id_last}.jsonl"));
        let mut server = hostile_args("huge-answer", &["--bytes", &size]);
        if id_last {
            server.push("--id-last".into());
        }
        let mut args = vec!["call", "--method", "tools/list", "--max-line", "1MiB", "--capture"];
        args.push(cap.to_str().unwrap());
        args.push("--");
        args.extend(server.iter().map(String::as_str));
        let out = run_bin(&args, Duration::from_secs(60));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(5), "id last: {id_last}; stderr: {err}");
        assert!(
            err.contains("tools/list was answered with a line of 3.0 MiB")
                && err.contains("over the in-memory cap of 1 MiB")
                && err.contains(&format!("kept in pieces in {}", cap.display())),
            "{err}"
        );
        assert!(!err.contains("got no response") && !err.contains("no answer"), "{err}");
        assert_eq!(
            err.matches("longer than the in-memory cap").count(),
            1,
            "one warning for the whole line, not one per piece: {err}"
        );
        assert!(out.stdout.is_empty(), "nothing the server did not send is printed");
        // Every byte of it is in the capture (the line, without its newline).
        let head_and_tail = r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[],"pad":""}}"#.len();
        assert_eq!(oversize_bytes(&cap), 3 * 1024 * 1024 + head_and_tail);
    }
    // With room for it, it is the answer.
    let server = hostile_args("huge-answer", &["--bytes", &size]);
    let mut args = vec!["call", "--method", "tools/list", "--max-line", "4MiB", "--"];
    args.extend(server.iter().map(String::as_str));
    let out = run_bin(&args, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["pad"].as_str().map(str::len), Some(3 * 1024 * 1024));
}

/// The bytes of the capture's received pieces of a line over the cap.
fn oversize_bytes(cap: &Path) -> usize {
    capture::load(cap)
        .unwrap()
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Frame(f)
                if f.direction == mcpscope_core::wire::frame::Direction::In
                    && f.anomalies().contains(Anomalies::OVERSIZE) =>
            {
                Some(f.raw.len())
            }
            _ => None,
        })
        .sum()
}

#[test]
fn endless_stdout_or_stderr_keeps_memory_bounded_and_every_byte() {
    // Pieces of 1 MiB: unbounded queues would hold a thousand of them.
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[&str], bool); 3] = [
        ("endless-no-newline", &[], false),
        ("endless-stderr", &["--bytes", "1048576"], true),
        ("endless-stderr", &["--bytes", "4096", "--no-newline"], true),
    ];
    for (i, (mode, extra, stderr)) in cases.into_iter().enumerate() {
        let cap = dir.path().join(format!("endless-{i}.jsonl"));
        let server = hostile_args(mode, extra);
        let mut args = vec!["call", "--method", "ping", "--timeout-ms", "3000", "--max-line", "1MiB"];
        args.extend(["--capture", cap.to_str().unwrap(), "--"]);
        args.extend(server.iter().map(String::as_str));
        let (out, peak_kb) = run_bin_peak(&args, Duration::from_secs(60));
        let err = text(&out.stderr);
        let kept = captured_bytes(&cap, stderr);
        eprintln!("{mode} {extra:?}: peak {peak_kb} KiB, {kept} bytes recorded");
        assert!(
            peak_kb < 200 * 1024,
            "{mode} {extra:?}: mcpscope held {peak_kb} KiB for a stream read in 1 MiB pieces ({kept} bytes recorded)"
        );
        assert!(out.status.signal().is_none(), "{mode}: ended by a signal: {err:.2000}");
        assert!(kept > 2 * 1024 * 1024, "{mode}: the stream is recorded ({kept} bytes)");
        assert!(
            err.len() < 64 * 1024,
            "{mode}: a few lines of warnings, not the stream: {} bytes",
            err.len()
        );
        assert_eq!(out.status.code(), Some(3), "{mode}: the request times out: {err:.2000}");
        if !stderr {
            assert_eq!(err.matches("longer than the in-memory cap").count(), 1, "{err}");
        }
    }
}

#[test]
fn an_endless_sse_event_keeps_memory_bounded_in_initialize_and_later_requests() {
    let dir = tempfile::tempdir().unwrap();
    for on in ["initialize", "tools/list"] {
        let server = HostileHttp::start(&["--mode", "sse-endless", "--on", on]);
        let cap = dir.path().join(format!("sse-{}.jsonl", on.replace('/', "-")));
        let url = server.url("/mcp");
        let args = [
            "call",
            "--method",
            "tools/list",
            "--timeout-ms",
            "3000",
            "--max-line",
            "1MiB",
            "--capture",
            cap.to_str().unwrap(),
            "--server-url",
            &url,
        ];
        let (out, peak_kb) = run_bin_peak(&args, Duration::from_secs(60));
        let err = text(&out.stderr);
        let kept = oversize_bytes(&cap);
        eprintln!("SSE on {on}: peak {peak_kb} KiB, {kept} bytes recorded");
        assert!(
            peak_kb < 200 * 1024,
            "{on}: mcpscope held {peak_kb} KiB ({kept} bytes recorded)"
        );
        assert!(
            kept > 2 * 1024 * 1024,
            "{on}: the event is recorded in pieces ({kept} bytes)"
        );
        assert_eq!(out.status.code(), Some(3), "{on}: the request times out: {err:.2000}");
        assert_eq!(err.matches("longer than the in-memory cap").count(), 1, "{err:.4000}");
    }
}

#[test]
fn a_token_too_large_to_send_is_named_as_ours_not_blamed_on_the_server() {
    let server = HostileHttp::start(&["--mode", "plain"]);
    let target = HttpTarget::streamable(server.url("/mcp"));
    target.bearer.set(Some("t".repeat(200_000)));
    let (mut c, _sink) = connect(target, quick());
    let err = match c.initialize(&HandshakeOptions::default(), T) {
        Err(e) => e.to_string(),
        Ok(Err(e)) => e.to_string(),
        Ok(Ok(_)) => panic!("a 200 kB header went through"),
    };
    c.close();
    assert!(!err.contains("did not answer with valid HTTP"), "{err}");
    assert!(
        err.contains("could not send") && err.contains("195.3 KiB") && err.contains("access token"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------
// Hostile peers items 6, 10a and 11: the reverse proxy's listener under
// mutated request bytes, slow clients, and one very large SSE event.

/// A reverse proxy in front of `upstream` with `options` changed by `tune`,
/// and the count of its open connections; stopped when dropped.
struct TunedRevProxy {
    port: u16,
    connections: mcpscope_core::proxy::reverse::Connections,
    stopper: mcpscope_core::proxy::reverse::Stopper,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TunedRevProxy {
    fn start(upstream_port: u16, tune: impl FnOnce(&mut mcpscope_core::proxy::reverse::ReverseProxyOptions)) -> Self {
        use mcpscope_core::proxy::reverse::{ReverseProxy, ReverseProxyOptions};
        let mut options =
            ReverseProxyOptions::new("127.0.0.1:0", &format!("http://127.0.0.1:{upstream_port}/mcp")).unwrap();
        tune(&mut options);
        let proxy = ReverseProxy::bind(options).unwrap();
        let port = proxy.local_addr().port();
        let stopper = proxy.stopper();
        let connections = proxy.connections();
        let thread = std::thread::spawn(move || {
            proxy.serve(|| "the test ended".into());
        });
        Self {
            port,
            connections,
            stopper,
            thread: Some(thread),
        }
    }

    /// Waits (generously) for every client connection to be given back.
    fn assert_no_connection_left(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.connections.open() > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(self.connections.open(), 0, "connection slots still taken");
    }
}

impl Drop for TunedRevProxy {
    fn drop(&mut self) {
        self.stopper.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// xorshift64*: the same cases on every run, from a printed seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// A well-formed request (sometimes chunked, sometimes kept alive), then one
/// to four mutations of the kinds a hostile client sends.
fn hostile_request(rng: &mut Rng, port: u16) -> Vec<u8> {
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let connection = if rng.below(4) == 0 { "" } else { "Connection: close\r\n" };
    let chunked = rng.below(2) == 0;
    let mut r =
        format!("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n{connection}")
            .into_bytes();
    if chunked {
        r.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
        for part in body.chunks(1 + rng.below(body.len())) {
            r.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
            r.extend_from_slice(part);
            r.extend_from_slice(b"\r\n");
        }
        r.extend_from_slice(b"0\r\n\r\n");
    } else {
        r.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
        r.extend_from_slice(body);
    }
    let insert = |r: &mut Vec<u8>, at: usize, bytes: &[u8]| {
        let at = at.min(r.len());
        r.splice(at..at, bytes.iter().copied());
    };
    let head_end = |r: &[u8]| r.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(r.len());
    for _ in 0..1 + rng.below(4) {
        let len = r.len();
        match rng.below(12) {
            0 => r.truncate(rng.below(len)),
            1 => {
                let b = *rng.pick(&[0u8, b'\r', b'\n', b' ', b':', b'\t', 0x7f, 0x80, 0xff, b';', b'0']);
                let at = rng.below(len + 1);
                insert(&mut r, at, &[b]);
            }
            2 if len > 0 => {
                let at = rng.below(len);
                r[at] = (rng.next() & 0xff) as u8;
            }
            3 if len > 0 => {
                let at = rng.below(len);
                let n = 1 + rng.below(16);
                r.drain(at..(at + n).min(len));
            }
            4 => {
                let size = *rng.pick(&[
                    "ffffffffffffffff",
                    "10000000000000000",
                    "4000001",
                    "-1",
                    "0x10",
                    "",
                    "7fffffffffffffff;ext",
                ]);
                let at = head_end(&r) + 4;
                insert(&mut r, at, format!("{size}\r\nA\r\n").as_bytes());
            }
            5 => {
                let cl = *rng.pick(&[
                    "99999999999999999999",
                    "18446744073709551616",
                    "-1",
                    "1e3",
                    "67108865",
                    " 5",
                    "5, 6",
                    "4294967296",
                ]);
                let at = head_end(&r) + 2;
                insert(&mut r, at, format!("Content-Length: {cl}\r\n").as_bytes());
            }
            6 => {
                let line = rng
                    .pick(&[
                        format!("Host: 127.0.0.1:{port}\r\n"),
                        "Host: evil.example\r\n".into(),
                        "Origin: https://evil.example\r\n".into(),
                        "Transfer-Encoding: chunked\r\n".into(),
                        "Transfer-Encoding: gzip\r\n".into(),
                        "Expect: 100-continue\r\n".into(),
                        "X-Nul: a\0b\r\n".into(),
                        "Bad Name: x\r\n".into(),
                        ": empty\r\n".into(),
                    ])
                    .clone();
                let at = head_end(&r) + 2;
                insert(&mut r, at, line.as_bytes());
            }
            7 => {
                let garbage: Vec<u8> = (0..rng.below(200)).map(|_| (rng.next() & 0xff) as u8).collect();
                r.extend_from_slice(&garbage);
            }
            8 => {
                let again = r.clone();
                r.extend_from_slice(&again);
            }
            9 => {
                let n = *rng.pick(&[70 * 1024, 5000, 100]);
                let at = head_end(&r) + 2;
                insert(&mut r, at, format!("X-Long: {}\r\n", "v".repeat(n)).as_bytes());
            }
            10 => {
                let many: String = (0..150).map(|i| format!("X-{i}: 1\r\n")).collect();
                let at = head_end(&r) + 2;
                insert(&mut r, at, many.as_bytes());
            }
            _ => {
                let (from, to): (&[u8], &[u8]) =
                    *rng.pick(&[(&b"\r\n"[..], &b"\n"[..]), (b"\r\n", b"\r"), (b" ", b"  ")]);
                let text = String::from_utf8_lossy(&r).into_owned();
                if let (Ok(f), Ok(t)) = (std::str::from_utf8(from), std::str::from_utf8(to)) {
                    r = text.replacen(f, t, 1 + rng.below(4)).into_bytes();
                }
            }
        }
    }
    r
}

/// The status codes in an answer, after any `100 Continue`.
fn statuses(answer: &[u8]) -> Vec<u16> {
    let text = String::from_utf8_lossy(answer);
    text.match_indices("HTTP/1.1 ")
        .filter_map(|(i, _)| text.get(i + 9..i + 12)?.parse().ok())
        .filter(|s| *s != 100)
        .collect()
}

#[test]
fn hostile_request_bytes_get_a_4xx_or_are_forwarded_and_give_back_their_slot() {
    let upstream = RevUpstream::start();
    let proxy = TunedRevProxy::start(upstream.port, |_| {});
    let port = proxy.port;
    let seed: u64 = std::env::var("MCPSCOPE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_2026);
    const CASES: usize = 500;
    const WORKERS: usize = 8;
    let forwarded = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let forwarded = forwarded.clone();
            std::thread::spawn(move || {
                for case in (w..CASES).step_by(WORKERS) {
                    let mut rng = Rng(seed ^ (case as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                    let request = hostile_request(&mut rng, port);
                    let shown = String::from_utf8_lossy(&request[..request.len().min(600)]).into_owned();
                    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
                    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
                    let _ = s.write_all(&request);
                    // The end of the request: nothing waits for more of it.
                    let _ = s.shutdown(std::net::Shutdown::Write);
                    let mut answer = Vec::new();
                    let read = s.read_to_end(&mut answer);
                    assert!(
                        !matches!(&read, Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)),
                        "case {case} (seed {seed}) hung: {shown:?}"
                    );
                    let got = statuses(&answer);
                    let blank = request.iter().all(|b| matches!(b, b'\r' | b'\n'));
                    assert!(
                        !got.is_empty() || blank,
                        "case {case} (seed {seed}): no answer to {shown:?}: {:?}",
                        text(&answer)
                    );
                    for status in &got {
                        assert!(
                            *status == 200 || (400..500).contains(status) || *status == 501,
                            "case {case} (seed {seed}): {status} for {shown:?}: {:?}",
                            text(&answer)
                        );
                    }
                    let ok = got.iter().filter(|s| **s == 200).count();
                    forwarded.fetch_add(ok, std::sync::atomic::Ordering::SeqCst);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    // Each 200 was one request forwarded, and nothing refused reached the upstream.
    let ok = forwarded.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        ok > 0 && ok < CASES,
        "{ok} of {CASES} forwarded: the cases are not mixed"
    );
    assert_eq!(upstream.seen().len(), ok);
    proxy.assert_no_connection_left();
    let answer = {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        write!(
            s,
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut a = Vec::new();
        let _ = s.read_to_end(&mut a);
        text(&a)
    };
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer:?}");
}

#[test]
fn a_normal_client_is_served_while_100_slow_clients_hold_sockets() {
    let upstream = RevUpstream::start();
    let proxy = TunedRevProxy::start(upstream.port, |_| {});
    let port = proxy.port;
    const SLOW: usize = 100;
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (closed_tx, closed_rx) = std::sync::mpsc::channel();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    for _ in 0..SLOW {
        let (ready_tx, closed_tx, stop) = (ready_tx.clone(), closed_tx.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
            let head = format!("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: ");
            let _ = s.write_all(head.as_bytes());
            let _ = ready_tx.send(());
            // A header byte a second, for as long as the proxy keeps the connection.
            let started = Instant::now();
            let mut buf = [0u8; 256];
            let closed = loop {
                if stop.load(std::sync::atomic::Ordering::SeqCst) || started.elapsed() > Duration::from_secs(90) {
                    break false;
                }
                match s.read(&mut buf) {
                    Ok(_) => break true,
                    Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                    Err(_) => break true,
                }
                if s.write_all(b"x").is_err() {
                    break true;
                }
            };
            let _ = closed_tx.send(closed);
        });
    }
    for _ in 0..SLOW {
        ready_rx.recv_timeout(Duration::from_secs(60)).unwrap();
    }
    // Every slow client has a connection open now, past the proxy's 64 slots.
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        s,
        "POST /normal HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let answer = text(&answer);
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer:?}");
    assert_eq!(upstream.seen(), ["POST /normal HTTP/1.1"]);
    // And none of the slow ones is kept for good: each is closed (made room
    // for, or out of time for its headers) while it still sends.
    let closed: Vec<bool> = (0..SLOW)
        .map(|_| closed_rx.recv_timeout(Duration::from_secs(120)).unwrap())
        .collect();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(
        closed.iter().all(|c| *c),
        "{} slow clients kept their connection",
        closed.iter().filter(|c| !**c).count()
    );
    proxy.assert_no_connection_left();
}

#[test]
fn a_100_mb_sse_event_passes_through_the_reverse_proxy_whole() {
    let size: usize = std::env::var("MCPSCOPE_SSE_EVENT_BYTES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100 * 1024 * 1024);
    let mut stream = b"data: ".to_vec();
    stream.extend((0..size).map(|i| b"0123456789abcdef"[i % 16]));
    stream.extend_from_slice(b"\n\ndata: after\n\n");
    let stream = Arc::new(stream);
    let upstream = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let upstream_port = upstream.local_addr().unwrap().port();
    let sent = stream.clone();
    std::thread::spawn(move || {
        let Ok((mut s, _)) = upstream.accept() else { return };
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut line = String::new();
        while r.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
            line.clear();
        }
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n");
        let _ = s.write_all(&sent);
    });
    let proxy = TunedRevProxy::start(upstream_port, |_| {});
    let mut s = TcpStream::connect(("127.0.0.1", proxy.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(300))).unwrap();
    write!(
        s,
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAccept: text/event-stream\r\nConnection: close\r\n\r\n",
        proxy.port
    )
    .unwrap();
    let mut answer = Vec::with_capacity(size + 4096);
    let read = s.read_to_end(&mut answer);
    assert!(read.is_ok(), "{read:?} after {} bytes", answer.len());
    let head_end = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an answer head")
        + 4;
    let head = text(&answer[..head_end]);
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    assert!(
        head.to_ascii_lowercase().contains("transfer-encoding: chunked"),
        "{head}"
    );
    // Undo the chunked framing.
    let mut body = Vec::with_capacity(size + 64);
    let mut at = head_end;
    loop {
        let line_end = at
            + answer[at..]
                .windows(2)
                .position(|w| w == b"\r\n")
                .expect("a chunk size line");
        let n = usize::from_str_radix(std::str::from_utf8(&answer[at..line_end]).unwrap(), 16).unwrap();
        at = line_end + 2;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&answer[at..at + n]);
        at += n + 2;
    }
    assert_eq!(body.len(), stream.len());
    assert!(body == *stream, "the event's bytes differ");
    proxy.assert_no_connection_left();
}
