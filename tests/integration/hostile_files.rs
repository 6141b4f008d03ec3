//! Hostile peers, round three: output files: devices, pipes, symlinks planted by others, and every flag that writes a file.
//! Each test fails without the fix it guards.

use crate::hostile::{run_bin, text};
use crate::support::*;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

const WITHIN: Duration = Duration::from_secs(20);

/// A small capture of two exchanges (two HAR entries).
fn capture(dir: &Path) -> PathBuf {
    let path = dir.join("session.jsonl");
    let frame = |t: u64, seq: u64, d: &str, raw: &str| {
        serde_json::json!({"t_us": t, "seq": seq, "dir": d, "raw": raw, "eol": "lf"}).to_string()
    };
    let lines = [
        serde_json::json!({"format": "mcpscope-capture", "version": 1, "mode": "session",
            "started_unix_ms": 1_700_000_000_000u64, "command_line": "python3 server.py",
            "program": "python3", "args": ["server.py"], "transport": "stdio"})
        .to_string(),
        frame(10, 0, "out", r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
        frame(20, 1, "in", r#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
        frame(30, 2, "out", r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#),
        frame(40, 3, "in", r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}"#),
    ];
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

fn export_to(capture: &Path, out: &Path) -> std::process::Output {
    run_bin(
        &["export", capture.to_str().unwrap(), "-o", out.to_str().unwrap()],
        WITHIN,
    )
}

fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn mknod_char(path: &Path, of: &Path) -> bool {
    let rdev = std::fs::metadata(of).unwrap().rdev();
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string; a character device node like `of`'s.
    unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, rdev as libc::dev_t) == 0 }
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

fn kind(path: &Path) -> std::fs::FileType {
    std::fs::symlink_metadata(path).unwrap().file_type()
}

/// `-o DEVICE`: written into, never replaced; a device's error is the command's.
fn export_into_device(cap: &Path, device: &Path, full: bool) {
    let out = export_to(cap, device);
    let err = text(&out.stderr);
    if full {
        assert_eq!(out.status.code(), Some(4), "{err}");
        assert!(err.contains("No space left on device"), "{err}");
        assert!(!err.contains("written to"), "{err}");
    } else {
        assert_eq!(out.status.code(), Some(0), "{err}");
    }
    assert!(kind(device).is_char_device(), "{} stays a device", device.display());
}

#[test]
fn export_writes_into_devices_and_leaves_them_devices() {
    let dir = tempfile::tempdir().unwrap();
    let cap = capture(dir.path());
    // Copies made with mknod first (root only): were the fix undone, a copy
    // is what gets replaced, and the test stops before the system's own.
    let null_copy = dir.path().join("null");
    let full_copy = dir.path().join("full");
    if is_root() && mknod_char(&null_copy, Path::new("/dev/null")) && mknod_char(&full_copy, Path::new("/dev/full")) {
        export_into_device(&cap, &null_copy, false);
        export_into_device(&cap, &full_copy, true);
    } else {
        eprintln!("skipped the mknod copies: cannot make device nodes here");
    }
    export_into_device(&cap, Path::new("/dev/null"), false);
    export_into_device(&cap, Path::new("/dev/full"), true);
}

#[test]
fn export_through_a_link_to_standard_output_writes_to_standard_output() {
    let dir = tempfile::tempdir().unwrap();
    let cap = capture(dir.path());
    let link = dir.path().join("stdout.har");
    std::os::unix::fs::symlink("/proc/self/fd/1", &link).unwrap();
    for to in [link.as_path(), Path::new("/dev/stdout")] {
        let out = export_to(&cap, to);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let har: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("-o {}: no HAR on stdout ({e}): {:?}", to.display(), text(&out.stdout)));
        assert_eq!(har["log"]["entries"].as_array().map(Vec::len), Some(2));
    }
    assert!(kind(&link).is_symlink(), "the link is kept, not replaced by a file");
}

#[test]
fn export_refuses_a_directory_and_a_socket_and_leaves_them() {
    let dir = tempfile::tempdir().unwrap();
    let cap = capture(dir.path());
    let sub = dir.path().join("reports");
    std::fs::create_dir(&sub).unwrap();
    let out = export_to(&cap, &sub);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("is a directory"), "{}", text(&out.stderr));
    assert!(kind(&sub).is_dir());

    let sock = dir.path().join("agent.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let out = export_to(&cap, &sock);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("is a socket"), "{}", text(&out.stderr));
    assert!(kind(&sock).is_socket(), "the socket is not replaced");
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 3, "no temporary file left: {names:?}");
}

#[test]
fn a_fifo_with_a_reader_gets_the_export_and_one_without_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let cap = capture(dir.path());
    let fifo = dir.path().join("pipe");
    mkfifo(&fifo);

    // No reader: an error now, not a wait for one.
    let out = export_to(&cap, &fifo);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("no reader"), "{}", text(&out.stderr));

    // The reader is open before mcpscope runs; the export (a few KB) fits the pipe's buffer.
    let mut reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    let out = export_to(&cap, &fifo);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut got = Vec::new();
    reader.read_to_end(&mut got).unwrap();
    let har: serde_json::Value = serde_json::from_slice(&got).expect("the HAR came through the FIFO");
    assert_eq!(har["log"]["entries"].as_array().map(Vec::len), Some(2));
    assert!(kind(&fifo).is_fifo(), "the FIFO is not replaced");
}

/// A sticky, world-writable directory like /tmp, holding a victim's file
/// and a link to it planted by another user (uid 65534); None unless root.
struct Planted {
    dir: tempfile::TempDir,
    victim: PathBuf,
    link: PathBuf,
}

fn planted() -> Option<Planted> {
    if !is_root() {
        eprintln!("skipped: giving a link to another user needs root");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, "precious\n").unwrap();
    let link = dir.path().join("report.xml");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
    Some(Planted { dir, victim, link })
}

fn refused_and_untouched(p: &Planted, out: &std::process::Output, what: &str) {
    assert_eq!(out.status.code(), Some(4), "{what}: {}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("owned by another user (uid 65534)"),
        "{what}: {}",
        text(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&p.victim).unwrap(),
        "precious\n",
        "{what}: the victim is untouched"
    );
    assert!(kind(&p.link).is_symlink(), "{what}: the link is left where it was");
}

#[test]
fn verify_junit_refuses_another_users_planted_link() {
    let Some(p) = planted() else { return };
    let faulty = faulty_path();
    let base = p.dir.path().join("base.jsonl");
    let server = ["--", "python3", faulty.as_str(), "--mode", "normal"];
    let mut args = vec!["call", "--capture", base.to_str().unwrap(), "--method", "tools/list"];
    args.extend(server);
    let out = run_bin(&args, WITHIN);
    assert_eq!(out.status.code(), Some(0), "the baseline: {}", text(&out.stderr));

    let mut args = vec!["verify", base.to_str().unwrap(), "--junit", p.link.to_str().unwrap()];
    args.extend(server);
    refused_and_untouched(&p, &run_bin(&args, WITHIN), "verify --junit");
    // The user's own link is written through, and kept.
    let mine = p.dir.path().join("mine.xml");
    let real = p.dir.path().join("real.xml");
    std::os::unix::fs::symlink(&real, &mine).unwrap();
    let mut args = vec!["verify", base.to_str().unwrap(), "--junit", mine.to_str().unwrap()];
    args.extend(server);
    let out = run_bin(&args, WITHIN);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(std::fs::read_to_string(&real).unwrap().contains("<testsuites"));
    assert!(kind(&mine).is_symlink());
}

#[test]
fn export_import_and_capture_refuse_another_users_planted_link() {
    let Some(p) = planted() else { return };
    let cap = capture(p.dir.path());
    refused_and_untouched(&p, &export_to(&cap, &p.link), "export -o");

    let faulty = faulty_path();
    let out = run_bin(
        &[
            "call",
            "--capture",
            p.link.to_str().unwrap(),
            "--method",
            "tools/list",
            "--",
            "python3",
            &faulty,
            "--mode",
            "normal",
        ],
        WITHIN,
    );
    refused_and_untouched(&p, &out, "call --capture");

    // An import never writes over anything: refused as already there.
    let out = run_bin(
        &["import", cap.to_str().unwrap(), "-o", p.link.to_str().unwrap()],
        WITHIN,
    );
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&p.victim).unwrap(), "precious\n");
    assert!(kind(&p.link).is_symlink());
}

#[test]
fn load_refuses_another_users_planted_capture_dir() {
    let Some(p) = planted() else { return };
    let victim_dir = p.dir.path().join("victim-dir");
    std::fs::create_dir(&victim_dir).unwrap();
    let link = p.dir.path().join("captures");
    std::os::unix::fs::symlink(&victim_dir, &link).unwrap();
    std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
    let faulty = faulty_path();
    let out = run_bin(
        &[
            "load",
            "--method",
            "tools/list",
            "--requests",
            "1",
            "--quiet",
            "--capture-dir",
            link.to_str().unwrap(),
            "--",
            "python3",
            &faulty,
            "--mode",
            "normal",
        ],
        WITHIN,
    );
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("symbolic link"), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_dir(&victim_dir).unwrap().count(),
        0,
        "nothing written in the victim's directory"
    );
}

/// A stdio server whose only tool carries a `_meta` nested 100,000 levels deep.
const DEEP_SERVER: &str = r#"
import json, sys
deep = "[" * 100000 + "]" * 100000
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method = msg.get("method")
    if method == "initialize":
        body = json.dumps({"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                           "serverInfo": {"name": "deep", "version": "1"}})
    elif method == "tools/list":
        body = '{"tools":[{"name":"show","inputSchema":{"type":"object"},"_meta":{"x":%s}}]}' % deep
    else:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"],
                                     "error": {"code": -32601, "message": "not here"}}) + "\n")
        sys.stdout.flush()
        continue
    sys.stdout.write('{"jsonrpc":"2.0","id":%s,"result":%s}\n' % (json.dumps(msg["id"]), body))
    sys.stdout.flush()
"#;

#[test]
fn a_tool_list_nested_too_deep_is_said_so_not_called_empty() {
    let dir = tempfile::tempdir().unwrap();
    let server = dir.path().join("deep_server.py");
    std::fs::write(&server, DEEP_SERVER).unwrap();
    let server = server.to_str().unwrap();
    for args in [
        vec!["call", "--app-info", "--tool-name", "show", "--", "python3", server],
        vec![
            "app",
            "--tool-name",
            "show",
            "--no-browser",
            "--quiet",
            "--",
            "python3",
            server,
        ],
    ] {
        let out = run_bin(&args, WITHIN);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(5), "{args:?}: {err}");
        assert!(err.contains("tools/list: cannot read the result"), "{args:?}: {err}");
        assert!(err.contains("nests deeper"), "{args:?}: {err}");
        assert!(!err.contains("lists no tools"), "{args:?}: {err}");
    }
}
