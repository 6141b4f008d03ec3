//! The `mcpscope` binary: call, proxy and doctor, as a user runs them.

use crate::support::*;
use mcpscope_core::record::capture;
use mcpscope_core::transport::event::Event;
use mcpscope_core::wire::classify::Kind;
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Output, Stdio};

fn mcpscope(args: &[&str]) -> Output {
    crate::support::mcpscope_command()
        .args(args)
        .output()
        .expect("running mcpscope")
}

fn call_faulty(mode: &str, extra: &[&str]) -> Output {
    let faulty = faulty_path();
    let mut args = vec!["call"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", "python3", &faulty, "--mode", mode]);
    mcpscope(&args)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn call_prints_result_json_and_exits_zero() {
    let out = call_faulty("normal", &["--method", "tools/list"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["tools"][0]["name"], "echo");
}

#[test]
fn call_tool_with_args() {
    let out = call_faulty("normal", &["--tool-name", "echo", "--tool-arg", "message=hello world"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["content"][0]["text"], "hello world");
}

#[test]
fn call_exit_statuses() {
    let out = call_faulty("tool-error", &["--tool-name", "echo", "--tool-arg", "message=x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("isError"), "{}", text(&out.stderr));

    let out = call_faulty("normal", &["--method", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("-32601"), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["code"], -32601);

    let out = call_faulty("hang", &["--method", "tools/list", "--timeout-ms", "2000"]);
    assert_eq!(out.status.code(), Some(3));
    let err = text(&out.stderr);
    assert_eq!(err.lines().filter(|l| l.starts_with("mcpscope:")).count(), 1, "{err}");
    assert!(err.contains("tools/list got no response within 2000 ms"), "{err}");

    let out = mcpscope(&[
        "call",
        "--method",
        "tools/list",
        "--",
        "npx-not-installed-xyz",
        "-y",
        "pkg",
    ]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        text(&out.stderr).contains("npx-not-installed-xyz: not found in PATH"),
        "{}",
        text(&out.stderr)
    );

    let out = call_faulty("bogus-version", &["--method", "tools/list"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(text(&out.stderr).contains("1999-01-01"), "{}", text(&out.stderr));
}

#[test]
fn call_trace_marks_directions_stderr_and_anomalies() {
    let out = call_faulty("stdout-log", &["--method", "tools/list", "--trace"]);
    assert_eq!(out.status.code(), Some(0));
    let err = text(&out.stderr);
    assert!(
        err.contains(r#"→ {"jsonrpc":"2.0","id":1,"method":"initialize""#),
        "{err}"
    );
    assert!(err.contains("← Server started on stdio"), "{err}");
    assert!(err.contains("! not-json"), "{err}");
    assert!(err.contains("[stderr]"), "{err}");
    // Without --trace the stray line is still reported.
    let out = call_faulty("stdout-log", &["--method", "tools/list"]);
    assert!(text(&out.stderr).contains("Server started on stdio"));
}

#[test]
fn call_against_server_everything_with_capture() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("e.jsonl");
    let spec = everything();
    let out = crate::support::mcpscope_command()
        .args(["call", "--tool-name", "echo", "--tool-arg", "message=hi42", "--capture"])
        .arg(&cap)
        .arg("--")
        .arg(&spec.program)
        .args(&spec.args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["content"][0]["text"].as_str().unwrap().contains("hi42"));
    let loaded = capture::load(&cap).unwrap();
    let methods: Vec<_> = loaded
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Frame(f) if f.kind() == Kind::Request => f.class.method.clone(),
            _ => None,
        })
        .collect();
    // The tools are listed first, so the arguments are typed by the tool's schema.
    assert_eq!(
        methods[..3],
        [
            "initialize".to_owned(),
            "tools/list".to_owned(),
            "tools/call".to_owned()
        ]
    );
}

#[test]
fn proxy_forwards_bytes_unchanged_and_records_both_directions() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("p.jsonl");
    let mut child = crate::support::mcpscope_command()
        .args(["proxy", "--capture"])
        .arg(&cap)
        .args(["--", "python3", &faulty_path(), "--mode", "crlf"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    stdin.write_all(init.as_bytes()).unwrap();
    stdin.write_all(b"\n").unwrap();
    stdin.flush().unwrap();
    let mut line = Vec::new();
    stdout.read_until(b'\n', &mut line).unwrap();
    assert!(
        line.ends_with(b"\r\n"),
        "CRLF passed through unchanged: {:?}",
        text(&line)
    );
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n")
        .unwrap();
    stdin.flush().unwrap();
    line.clear();
    stdout.read_until(b'\n', &mut line).unwrap();
    assert!(text(&line).contains("\"echo\""));
    drop(stdin);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    let loaded = capture::load(&cap).unwrap();
    assert_eq!(loaded.header.mode, "proxy");
    let frames: Vec<_> = loaded
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Frame(f) => Some(f),
            _ => None,
        })
        .collect();
    assert_eq!(frames.len(), 4);
    assert_eq!(frames[0].raw, init.as_bytes());
    assert!(frames[1].link.is_some(), "responses correlated in the capture");
    assert!(loaded.events.iter().any(|e| matches!(e, Event::Stderr(_))));
}

#[test]
fn proxy_passes_the_exit_status_on() {
    let mut child = crate::support::mcpscope_command()
        .args(["proxy", "--", "python3", &faulty_path(), "--mode", "crash"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{}}\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n")
        .unwrap();
    stdin.flush().unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(text(&out.stderr).contains("Traceback"), "server stderr passed through");
}

#[test]
fn doctor_healthy_and_unhealthy() {
    let faulty = faulty_path();
    let out = mcpscope(&[
        "doctor",
        "--timeout-ms",
        "5000",
        "--",
        "python3",
        &faulty,
        "--mode",
        "normal",
    ]);
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert!(report.contains("tools/list: 1 tool(s)"), "{report}");
    assert!(report.contains("Handshake not enforced"), "{report}");

    let out = mcpscope(&[
        "doctor",
        "--timeout-ms",
        "5000",
        "--",
        "python3",
        &faulty,
        "--mode",
        "stdout-log",
    ]);
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(report.contains("Server started on stdio"), "{report}");
    assert!(report.contains("stderr"), "{report}");

    let out = mcpscope(&["doctor", "--", "npx-not-installed-xyz"]);
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1));
    assert!(report.contains("not found in PATH"), "{report}");
    assert!(report.contains("which npx-not-installed-xyz"), "{report}");

    let out = mcpscope(&[
        "doctor",
        "--timeout-ms",
        "1000",
        "--no-enforcement-probe",
        "--",
        "python3",
        &faulty,
        "--mode",
        "hang",
    ]);
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(report.contains("[ok  ] initialize answered"), "{report}");
    assert!(report.contains("[FAIL] tools/list got no answer"), "{report}");

    let out = mcpscope(&[
        "doctor",
        "--timeout-ms",
        "5000",
        "--",
        "python3",
        &faulty,
        "--mode",
        "enforce",
    ]);
    assert!(
        text(&out.stdout).contains("Handshake enforced"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn doctor_on_real_python_server() {
    let spec = py_server();
    let out = crate::support::mcpscope_command()
        .args(["doctor", "--"])
        .arg(&spec.program)
        .args(&spec.args)
        .output()
        .unwrap();
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert!(report.contains("tools/list:"), "{report}");
}

fn capture_call(spec: &mcpscope_core::transport::process::ServerSpec, path: &std::path::Path, args: &[&str]) {
    let out = crate::support::mcpscope_command()
        .arg("call")
        .args(args)
        .arg("--capture")
        .arg(path)
        .arg("--")
        .arg(&spec.program)
        .args(&spec.args)
        .output()
        .unwrap();
    assert!(out.status.code().is_some_and(|c| c <= 2), "{}", text(&out.stderr));
}

#[test]
fn diff_the_same_session_against_node_and_python_sdks() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("node.jsonl");
    let b = dir.path().join("python.jsonl");
    let call = ["--tool-name", "add", "--tool-arg", "a=2", "--tool-arg", "b=3"];
    capture_call(&node_zod_server(), &a, &call);
    capture_call(&py_server(), &b, &call);

    let same = mcpscope(&["diff", a.to_str().unwrap(), a.to_str().unwrap()]);
    assert_eq!(same.status.code(), Some(0), "{}", text(&same.stdout));
    assert!(
        text(&same.stdout).contains("3 exchange(s) compared, 0 differ"),
        "{}",
        text(&same.stdout)
    );

    let out = mcpscope(&["diff", "--all", a.to_str().unwrap(), b.to_str().unwrap()]);
    let report = text(&out.stdout);
    assert!(report.contains("initialize #1"), "{report}");
    assert!(report.contains("tools/call add #1"), "{report}");
    // The two SDKs name themselves differently in serverInfo.
    assert!(report.contains("result.serverInfo.name"), "{report}");
    assert_eq!(out.status.code(), Some(1));

    let json = mcpscope(&["diff", "--json", a.to_str().unwrap(), b.to_str().unwrap()]);
    let v: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(v.as_array().unwrap().iter().any(|e| e["verdict"] == "differs"));

    let missing = mcpscope(&["diff", "/nonexistent/a.jsonl", a.to_str().unwrap()]);
    assert_eq!(missing.status.code(), Some(4));
    assert!(
        text(&missing.stderr).contains("cannot open capture"),
        "{}",
        text(&missing.stderr)
    );
}

#[test]
fn listen_prints_the_stream_of_a_modern_server_and_refuses_a_legacy_one() {
    let modern = py_modern_server();
    let out = crate::support::mcpscope_command()
        .args(["listen", "--tools", "--for-ms", "500", "--"])
        .arg(&modern.program)
        .args(&modern.args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let first: serde_json::Value = serde_json::from_str(stdout.lines().next().expect("a line")).unwrap();
    assert_eq!(first["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        first["params"]["notifications"],
        serde_json::json!({"toolsListChanged": true})
    );
    assert!(stderr.contains("acknowledged"), "{stderr}");

    let legacy = everything();
    let out = crate::support::mcpscope_command()
        .args(["listen", "--for-ms", "100", "--"])
        .arg(&legacy.program)
        .args(&legacy.args)
        .output()
        .unwrap();
    // 3, as for any server that cannot be spoken to as asked.
    assert_eq!(out.status.code(), Some(3));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("needs a 2026-07-28 server"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn skills_server() -> String {
    repo().join("tests/servers/skills_server.py").display().to_string()
}

/// The `resources/read` URIs a capture shows mcpscope sending, in order.
fn reads_sent(capture: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(capture)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["dir"] == "out" && r["method"] == "resources/read")
        .filter_map(|r| serde_json::from_str::<Value>(r["raw"].as_str()?).ok())
        .filter_map(|f| f.pointer("/params/uri")?.as_str().map(str::to_owned))
        .collect()
}

#[test]
fn skills_are_read_on_demand_verified_and_dropped_at_the_first_failed_check() {
    let dir = tempfile::tempdir().unwrap();
    let server = skills_server();
    let run = |name: &str, extra: &[&str], server_args: &[&str]| {
        let capture = dir.path().join(name);
        let capture_arg = capture.display().to_string();
        let mut args = vec!["skills"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--capture", &capture_arg, "--", "python3", &server]);
        args.extend_from_slice(server_args);
        (mcpscope(&args), reads_sent(&capture))
    };

    // Listing reads no file.
    let (out, reads) = run("list.jsonl", &["list"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["skills"].as_array().unwrap().len(), 2);
    assert!(reads.is_empty(), "{reads:?}");

    // SKILL.md first, then only the file asked for.
    let (out, reads) = run(
        "get.jsonl",
        &["get", "pdf-processing", "--file", "references/FORMS.md"],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        reads,
        [
            "skill://pdf-processing/SKILL.md",
            "skill://pdf-processing/references/FORMS.md"
        ]
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["frontmatter"]["name"], "pdf-processing");
    assert_eq!(v["files"][1]["text"], "# Forms\n\nField names are case-sensitive.\n");
    assert!(text(&out.stderr).contains("not read (ask with --file PATH or --all-files): scripts/fill.py"));

    // A file whose bytes differ from the listing: exit 1, and nothing after it is read.
    let (out, reads) = run(
        "tampered.jsonl",
        &["get", "pdf-processing", "--all-files"],
        &["--tamper", "pdf-processing/references/FORMS.md"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("verification failed, not using skill pdf-processing")
            && err.contains("references/FORMS.md: digest"),
        "{err}"
    );
    assert_eq!(reads.len(), 2, "scripts/fill.py must not be read: {reads:?}");
    assert!(out.stdout.is_empty(), "no skill printed after a failed check");

    // SKILL.md's frontmatter differs from the listing's: nothing else is read.
    let (out, reads) = run(
        "frontmatter.jsonl",
        &["get", "pdf-processing", "--all-files"],
        &["--drop-frontmatter"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("license is missing from the file"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(reads, ["skill://pdf-processing/SKILL.md"]);

    // A file the skill does not list is a usage error, before anything is read.
    let (out, reads) = run("unlisted.jsonl", &["get", "changelog", "--file", "nope.md"], &[]);
    assert_eq!(out.status.code(), Some(64), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("lists no file \"nope.md\""),
        "{}",
        text(&out.stderr)
    );
    assert!(reads.is_empty(), "{reads:?}");
}

/// The state letter of a process (`R`, `S`, `Z`…), or None once it is gone.
fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// The processes that are alive (not zombies) and carry `var` in their
/// environment: pid, name and command line.
fn tagged_processes(var: &str) -> Vec<(u32, String, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        if !environ.split(|&b| b == 0).any(|v| v == var.as_bytes()) {
            continue;
        }
        if matches!(process_state(pid), None | Some('Z')) {
            continue;
        }
        let read = |what: &str| {
            let bytes = std::fs::read(format!("/proc/{pid}/{what}")).unwrap_or_default();
            String::from_utf8_lossy(&bytes).replace('\0', " ").trim().to_owned()
        };
        found.push((pid, read("comm"), read("cmdline")));
    }
    found
}

#[test]
#[cfg(unix)]
fn call_returns_once_the_servers_tree_is_gone() {
    // The server leaves a grandchild that ignores SIGTERM and holds none of
    // the pipes: only the group tells whether it is still there.
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("grandchild.pid");
    // Inherited by mcpscope, its watchdog, the server and the grandchild.
    let tag_value = format!("{}-{}", std::process::id(), dir.path().display());
    let tag = format!("MCPSCOPE_TEST_TAG={tag_value}");
    let out = crate::support::mcpscope_command()
        .env("MCPSCOPE_TEST_TAG", &tag_value)
        .args(["call", "--method", "tools/list", "--", "python3", &faulty_path()])
        .args([
            "--mode",
            "grandchild",
            "--grandchild-devnull",
            "--grandchild-ignores-term",
        ])
        .arg("--pid-file")
        .arg(&pid_file)
        .output()
        .expect("running mcpscope");
    // Right after mcpscope exits.
    let left = tagged_processes(&tag);
    let grandchild: u32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    let state = process_state(grandchild);
    for pid in left.iter().map(|(pid, ..)| *pid).chain([grandchild]) {
        // SAFETY: ending this test's own strays.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // A zombie has ended: it waits for init to collect it, which mcpscope
    // cannot hasten (it is not its parent).
    assert!(
        matches!(state, None | Some('Z')),
        "the grandchild is still running (state {state:?}) after mcpscope exited"
    );
    assert!(
        left.is_empty(),
        "still alive after mcpscope exited (pid, name, command line): {left:?}"
    );
}

/// The children of `parent` named `name` (a `comm`, cut to 15 bytes).
fn children_named(parent: u32, name: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((head, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let ppid = rest.split_whitespace().nth(1).and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(parent) && head.ends_with(&format!("({name}")) {
            found.push(pid);
        }
    }
    found
}

#[test]
#[cfg(unix)]
fn the_app_without_xdg_runtime_dir_says_so_once() {
    use std::os::unix::process::CommandExt as _;
    let xvfb_run = need(std::path::PathBuf::from("/usr/bin/xvfb-run"));
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let mut child = Command::new(xvfb_run)
        .arg("-a")
        .arg(bin())
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("WAYLAND_DISPLAY")
        .env("HOME", &home)
        .env("TMPDIR", dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // A group of its own: Xvfb and the app are its children, and a
        // killed xvfb-run cannot end them itself.
        .process_group(0)
        .spawn()
        .expect("running xvfb-run");
    // Read stderr as it comes: the pipe must not fill up.
    let mut err_pipe = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err_pipe, &mut s);
        s
    });
    let mut out_pipe = child.stdout.take().unwrap();
    std::thread::spawn(move || std::io::copy(&mut out_pipe, &mut std::io::sink()));

    // Let the app start (and its graphics libraries probe for Wayland).
    let started = std::time::Instant::now();
    let mut app = Vec::new();
    while started.elapsed() < std::time::Duration::from_millis(3500) {
        if app.is_empty() {
            app = children_named(child.id(), "mcpscope");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    for pid in &app {
        // SAFETY: signalling the app this test started.
        unsafe { libc::kill(*pid as i32, libc::SIGTERM) };
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() >= deadline {
            // SAFETY: the group of the xvfb-run this test started (the app, Xvfb).
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            panic!("the app did not end after SIGTERM");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let stderr = stderr.join().unwrap();
    assert!(!app.is_empty(), "the app did not start under xvfb-run:\n{stderr}");
    assert!(
        !stderr.contains("XDG_RUNTIME_DIR is invalid"),
        "libwayland's complaint reached the user:\n{stderr}"
    );
    let mentions: Vec<&str> = stderr.lines().filter(|l| l.contains("XDG_RUNTIME_DIR")).collect();
    assert!(mentions.len() <= 1, "said more than once:\n{stderr}");
    // The directory that stands in for it is the user's alone.
    for line in mentions {
        let used = line
            .split("using ")
            .nth(1)
            .and_then(|r| r.strip_suffix(" for this run"));
        let used = std::path::Path::new(used.unwrap_or_else(|| panic!("which directory? {line}")));
        assert!(used.starts_with(dir.path()), "{line}");
        let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(used).unwrap().permissions());
        assert_eq!(mode & 0o777, 0o700, "{line}");
    }
}

/// `mcpscope skills …` against the skills test server with `server_args`; the
/// output and the `resources/read` URIs sent.
fn skills_run(dir: &std::path::Path, name: &str, extra: &[&str], server_args: &[&str]) -> (Output, Vec<String>) {
    let server = skills_server();
    let capture = dir.join(name);
    let capture_arg = capture.display().to_string();
    let mut args = vec!["skills"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--capture", &capture_arg, "--", "python3", &server]);
    args.extend_from_slice(server_args);
    (mcpscope(&args), reads_sent(&capture))
}

#[test]
fn skills_get_refuses_a_yaml_bomb_in_skill_md() {
    let dir = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let (out, reads) = skills_run(dir.path(), "bomb.jsonl", &["get", "bomb"], &["--yaml-bomb"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("verification failed, not using skill bomb")
            && err.contains("expands to more than 10000 nodes through its aliases"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "no skill printed after a failed check");
    assert_eq!(reads, ["skill://bomb/SKILL.md"]);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn skills_get_names_a_skill_file_answered_over_the_line_cap() {
    let dir = tempfile::tempdir().unwrap();
    let huge = (2 * 1024 * 1024).to_string();
    let (out, reads) = skills_run(
        dir.path(),
        "huge.jsonl",
        &["get", "huge", "--max-line", "1MiB"],
        &["--huge-skill", &huge],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(
        err.contains("resources/read was answered with a line of 2.0 MiB")
            && err.contains("over the in-memory cap of 1 MiB")
            && err.contains("kept in pieces in"),
        "{err}"
    );
    assert!(!err.contains("no response"), "{err}");
    assert!(out.stdout.is_empty(), "nothing the server did not send is printed");
    assert_eq!(reads, ["skill://huge/SKILL.md"]);
    // With room for it, the skill is read and verified.
    let (out, _) = skills_run(
        dir.path(),
        "huge-ok.jsonl",
        &["get", "huge", "--max-line", "4MiB"],
        &["--huge-skill", &huge],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn skills_get_fails_on_an_invalid_size_in_the_listing() {
    let dir = tempfile::tempdir().unwrap();
    for (i, size) in ["-5", "\"172\"", "123456789012345678901234567890"]
        .into_iter()
        .enumerate()
    {
        let (out, reads) = skills_run(
            dir.path(),
            &format!("size{i}.jsonl"),
            &["get", "pdf-processing"],
            &["--bad-size", size],
        );
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "size {size}: {err}");
        assert!(
            err.contains("verification failed, not using skill pdf-processing")
                && err.contains("resources[0].size")
                && err.contains("not a byte count"),
            "size {size}: {err}"
        );
        assert!(reads.is_empty(), "nothing read of an invalid entry: {reads:?}");
        assert!(out.stdout.is_empty());
    }
    // Listing shows the entry as the server gave it, and says what is wrong with it.
    let (out, _) = skills_run(dir.path(), "list.jsonl", &["list"], &["--bad-size", "-5"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["skills"][0]["resources"][0]["size"], -5);
    assert!(
        text(&out.stderr).contains("skill skill://pdf-processing/SKILL.md: resources[0].size"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn skills_list_shows_a_skill_whose_frontmatter_nests_too_deep() {
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = skills_run(dir.path(), "deep.jsonl", &["list"], &["--deep-frontmatter", "300"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let uris: Vec<&str> = v["skills"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["uri"].as_str())
        .collect();
    assert_eq!(
        uris,
        [
            "skill://pdf-processing/SKILL.md",
            "skill://changelog/SKILL.md",
            "skill://deep/SKILL.md"
        ]
    );
    assert_eq!(v["skills"][0]["frontmatter"]["name"], "pdf-processing");
    assert!(
        err.contains("skills/list: skill skill://deep/SKILL.md: its frontmatter cannot be read"),
        "{err}"
    );
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let out = mcpscope(&["--version"]);
    assert!(out.status.success());
    let v = text(&out.stdout);
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(repo())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| text(&o.stdout).trim().to_owned());
    match head {
        // Built from this checkout (a commit made since would rebuild it).
        Some(c) => assert!(v.contains(&format!("(commit {c})")), "{v}"),
        None => assert!(v.contains("(commit unknown)"), "{v}"),
    }
}

#[test]
fn completions_are_scripts_each_shell_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let out = mcpscope(&["completions", "bash"]);
    assert!(out.status.success());
    let script = dir.path().join("mcpscope.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    // Bash parses it, and it registers a completion for mcpscope.
    let check = Command::new("bash")
        .arg("-c")
        .arg(format!("set -e; source {}; complete -p mcpscope", script.display()))
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", text(&check.stderr));
    assert!(text(&check.stdout).contains("mcpscope"), "{}", text(&check.stdout));
    assert!(text(&out.stdout).contains("--surface"), "verify's options are in it");
    let zsh = mcpscope(&["completions", "zsh"]);
    assert!(text(&zsh.stdout).starts_with("#compdef mcpscope"));
    let fish = mcpscope(&["completions", "fish"]);
    assert!(text(&fish.stdout).contains("complete -c mcpscope"));
    let bad = mcpscope(&["completions", "cmd.exe"]);
    assert_eq!(bad.status.code(), Some(64), "an unknown shell is a usage error");
}

#[test]
fn the_man_page_covers_every_subcommand() {
    let out = mcpscope(&["man"]);
    assert!(out.status.success());
    let page = text(&out.stdout);
    assert!(page.contains(".TH mcpscope 1"), "{}", &page[..200.min(page.len())]);
    for sub in ["CALL", "PROXY", "LINT", "MOCK", "VERIFY", "WRAP", "COMPLETIONS"] {
        assert!(
            page.contains(&format!(".SH \"MCPSCOPE-{sub}\"")),
            "no section for {sub}"
        );
    }
    // Rendered by man(1) where it is installed, with no warnings.
    if let Ok(render) = Command::new("man")
        .args(["--warnings", "-l", "-"])
        .env("MANWIDTH", "80")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        let mut render = render;
        render.stdin.take().unwrap().write_all(&out.stdout).unwrap();
        let done = render.wait_with_output().unwrap();
        assert!(done.status.success(), "{}", text(&done.stderr));
        assert!(text(&done.stdout).contains("--server-url"));
        assert!(text(&done.stderr).trim().is_empty(), "{}", text(&done.stderr));
    }
}

/// `wrap --client` finds the client's config where this system keeps it
/// (on Linux, Claude Desktop's under ~/.config/Claude), and says so when
/// there is none.
#[test]
#[cfg(target_os = "linux")]
fn wrap_finds_a_clients_config_where_the_system_keeps_it() {
    let home = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        crate::support::mcpscope_command()
            .args(args)
            .env("HOME", home.path())
            .env_remove("XDG_CONFIG_HOME")
            .env("XDG_STATE_HOME", state.path())
            .output()
            .unwrap()
    };
    let missing = run(&["wrap", "--client", "claude-desktop", "--all", "--dry-run"]);
    assert!(!missing.status.success());
    let config = home.path().join(".config/Claude/claude_desktop_config.json");
    assert!(
        text(&missing.stderr).contains(&config.display().to_string()),
        "{}",
        text(&missing.stderr)
    );
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(
        &config,
        r#"{"mcpServers": {"weather": {"command": "node", "args": ["w.js"]}}}"#,
    )
    .unwrap();
    let out = run(&["wrap", "--client", "claude-desktop", "--all", "--dry-run"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("weather"), "{}", text(&out.stdout));
    let bad = run(&["wrap", "--client", "notepad", "--all"]);
    assert_eq!(bad.status.code(), Some(64), "{}", text(&bad.stderr));
}
