//! Issue #26 items 2 and 8: files mcpscope is pointed at are opened without
//! blocking and without following another user's links.

use crate::support::*;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// Runs mcpscope, killing it (and failing) if it has not ended in 20 s.
fn run_bounded(args: &[&str]) -> Output {
    let mut child = crate::support::mcpscope_command()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("mcpscope {args:?} blocked");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn fifos_are_refused_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let f = fifo.to_str().unwrap();
    let faulty = faulty_path();
    let out = run_bounded(&[
        "call",
        "--capture",
        f,
        "--method",
        "tools/list",
        "--",
        "python3",
        &faulty,
        "--mode",
        "normal",
    ]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("FIFO"), "{}", text(&out.stderr));
    let out = run_bounded(&["wrap", f, "--all"]);
    assert_ne!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("FIFO"), "{}", text(&out.stderr));
    // The wrap ledger in the state directory.
    let state = dir.path().join("state");
    std::fs::create_dir_all(state.join("mcpscope")).unwrap();
    std::fs::set_permissions(
        state.join("mcpscope"),
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    mkfifo(&state.join("mcpscope/wrapped-remotes.json"));
    let config = dir.path().join(".mcp.json");
    std::fs::write(
        &config,
        r#"{"mcpServers":{"r":{"type":"http","url":"https://mcp.example.com/mcp"}}}"#,
    )
    .unwrap();
    let mut cmd = crate::support::mcpscope_command();
    cmd.args(["wrap", config.to_str().unwrap(), "--all"])
        .env("XDG_STATE_HOME", &state);
    let started = Instant::now();
    let out = cmd.output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_ne!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(
        std::fs::read_to_string(&config)
            .unwrap()
            .contains("https://mcp.example.com/mcp"),
        "the config is not rewritten when the ledger cannot be read"
    );
}

/// A user id that is not ours (nobody's, unless we are nobody).
fn another_uid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 65534 {
        65533
    } else {
        65534
    }
}

#[test]
fn a_capture_path_planted_as_another_users_link_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let faulty = faulty_path();
    let call_capturing_to = |capture: &Path| {
        run_bounded(&[
            "call",
            "--capture",
            capture.to_str().unwrap(),
            "--method",
            "tools/list",
            "--",
            "python3",
            &faulty,
            "--mode",
            "normal",
        ])
    };
    // The user's own link is followed (checked as any user).
    let mine = dir.path().join("mine.jsonl");
    let real = dir.path().join("real.jsonl");
    std::os::unix::fs::symlink(&real, &mine).unwrap();
    let out = call_capturing_to(&mine);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(std::fs::read_to_string(&real).unwrap().contains("mcpscope-capture"));
    // Another user's link is not: making one needs root (lchown to another
    // user), so as anyone else that half is skipped, and said so.
    let target = dir.path().join("victim.txt");
    std::fs::write(&target, "precious\n").unwrap();
    let link = dir.path().join("capture.jsonl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let c = std::ffi::CString::new(link.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string; lchown changes the link itself.
    if unsafe { libc::lchown(c.as_ptr(), another_uid(), another_uid()) } != 0 {
        eprintln!(
            "skipped the other user's link: giving a link to another user needs root (the user's own link was checked)"
        );
        return;
    }
    let out = call_capturing_to(&link);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("owned by another user"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "precious\n",
        "nothing appended through the link"
    );
}

/// #26 item 16: a bare --token-store takes the documented default path (it
/// was refused as a usage error).
#[test]
fn a_bare_token_store_uses_the_default_path() {
    let home = tempfile::tempdir().unwrap();
    let out = crate::support::mcpscope_command()
        .args([
            "call",
            "--server-url",
            "http://127.0.0.1:9/mcp",
            "--token-store",
            "--method",
            "tools/list",
        ])
        .env("HOME", home.path())
        .env_remove("XDG_STATE_HOME")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "unreachable, not a usage error: {}",
        text(&out.stderr)
    );
}

/// #26 item 1: the reverse proxy's session files and its own stderr keep
/// no credential of the upstream URL or of the client's headers.
#[test]
fn the_reverse_proxy_records_no_credentials() {
    use std::io::{Read, Write};
    // An upstream that answers every request with an empty JSON object.
    let upstream = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = upstream.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in upstream.incoming().take(4) {
            let Ok(mut s) = s else { continue };
            let mut buf = [0u8; 8192];
            let _ = s.read(&mut buf);
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}");
        }
    });
    let state = tempfile::tempdir().unwrap();
    let up = format!("http://alice:s3cret-pw@127.0.0.1:{port}/mcp?api_key=k3y-123&x=1");
    // Killed however the test ends (it runs until signalled).
    let mut proxy = crate::support::KilledOnDrop(
        crate::support::mcpscope_command()
            .args([
                "proxy",
                "--listen",
                "127.0.0.1:0",
                "--upstream",
                &up,
                "--session",
                "creds",
            ])
            .env("XDG_STATE_HOME", state.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut err = proxy.0.stderr.take().unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 1024];
    let listening = loop {
        let n = err.read(&mut buf).unwrap();
        assert!(n > 0, "the proxy ended: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&seen).into_owned();
        if let Some(i) = text.find("listening on http://") {
            let rest = &text[i + "listening on http://".len()..];
            break rest.split_whitespace().next().unwrap().to_owned();
        }
    };
    let mut c = std::net::TcpStream::connect(&listening).unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    write!(
        c,
        "POST /mcp?api_key=k3y-123&x=1 HTTP/1.1\r\nHost: {listening}\r\nAuthorization: Bearer t0ken-xyz\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    let _ = c.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // SAFETY: a pid of our own child.
    unsafe { libc::kill(proxy.0.id() as i32, libc::SIGTERM) };
    let _ = err.read_to_end(&mut seen);
    proxy.0.wait().unwrap();
    let mut everything = String::from_utf8_lossy(&seen).into_owned();
    for e in std::fs::read_dir(state.path().join("mcpscope/sessions")).unwrap() {
        everything.push_str(&std::fs::read_to_string(e.unwrap().path()).unwrap());
    }
    assert!(
        everything.contains("\"event\":\"http\""),
        "the exchange is recorded: {everything}"
    );
    for secret in ["s3cret-pw", "k3y-123", "t0ken-xyz", "alice:"] {
        assert!(
            !everything.contains(secret),
            "{secret} is in the session files or the proxy's stderr:\n{everything}"
        );
    }
}

/// #26 item 3: a state root that is another user's link is refused (the
/// session is still proxied, not recorded there), and a root of ours that
/// others can read is made 0700 again.
#[test]
fn the_state_root_is_checked_before_sessions_are_recorded() {
    use std::os::unix::fs::PermissionsExt;
    let faulty = faulty_path();
    let session = |state: &Path| {
        crate::support::mcpscope_command()
            .args(["proxy", "--session", "s", "--", "python3", &faulty, "--mode", "normal"])
            .env("XDG_STATE_HOME", state)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    // Ours, but 0777.
    let state = tempfile::tempdir().unwrap();
    let root = state.path().join("mcpscope");
    std::fs::create_dir(&root).unwrap();
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = session(state.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::metadata(&root).unwrap().permissions().mode() & 0o777, 0o700);
    assert!(root.join("sessions").is_dir());

    // Another user's link.
    let state = tempfile::tempdir().unwrap();
    let theirs = state.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    let link = state.path().join("mcpscope");
    std::os::unix::fs::symlink(&theirs, &link).unwrap();
    let c = std::ffi::CString::new(link.to_str().unwrap()).unwrap();
    // A state root that is a link is refused whoever owns it; another
    // user's is the case that matters, but giving a link away needs root:
    // as anyone else, the link stays ours and is checked as such.
    // SAFETY: a valid C string; lchown changes the link itself.
    if unsafe { libc::lchown(c.as_ptr(), another_uid(), another_uid()) } != 0 {
        eprintln!("not root: the state root is a link of our own, not another user's (lchown needs root)");
    }
    let out = session(state.path());
    assert!(out.status.success(), "still proxied: {}", text(&out.stderr));
    assert!(text(&out.stderr).contains("symbolic link"), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_dir(&theirs).unwrap().count(),
        0,
        "nothing written through the link"
    );
}

/// `mcpscope ARGS` with its state (the wrap ledger) under `state`.
fn mcpscope_in(state: &Path, args: &[&str]) -> Command {
    let mut cmd = crate::support::mcpscope_command();
    cmd.args(args)
        .env("XDG_STATE_HOME", state)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

fn backups_of(config: &Path) -> Vec<(String, String)> {
    let name = config.file_name().unwrap().to_string_lossy().into_owned();
    let mut found: Vec<(String, String)> = std::fs::read_dir(config.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(&format!("{name}.mcpscope-backup"))
        })
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    found.sort();
    found
}

const WRAP_CONFIG: &str = r#"{
  "mcpServers": {
    "a": {"command": "srv-a", "args": ["--flag"]},
    "b": {"command": "srv-b"},
    "r": {"type": "http", "url": "https://mcp.example.com/mcp?k=1"}
  }
}
"#;

/// #26 item 4: the remote's original URL lives only in the ledger; when the
/// ledger cannot be written, the config must not be rewritten.
#[test]
fn wrap_leaves_the_config_alone_when_its_way_back_cannot_be_stored() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("claude_desktop_config.json");
    std::fs::write(&config, WRAP_CONFIG).unwrap();
    // A state root that is a link (even to a directory of ours) is never written through.
    let state = dir.path().join("state");
    std::fs::create_dir_all(dir.path().join("elsewhere")).unwrap();
    std::fs::create_dir(&state).unwrap();
    std::os::unix::fs::symlink(dir.path().join("elsewhere"), state.join("mcpscope")).unwrap();
    let out = mcpscope_in(&state, &["wrap", config.to_str().unwrap(), "--all"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(
        err.contains("original URLs") && err.contains("nothing was written"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        WRAP_CONFIG,
        "config untouched"
    );
    assert!(backups_of(&config).is_empty(), "no backup either");
}

/// #26 item 4: a second wrap never replaces the backup of the original
/// (#47 item 16: it is the one backup now, and the unwrap that restores the
/// config removes it), and when the ledger is lost the original URL comes
/// back from it (#47 item 17).
#[test]
fn the_backup_keeps_the_original_and_survives_a_lost_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let config = dir.path().join("claude_desktop_config.json");
    std::fs::write(&config, WRAP_CONFIG).unwrap();
    let c = config.to_str().unwrap();
    let run = |args: &[&str]| {
        let out = mcpscope_in(&state, args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        out
    };
    run(&["wrap", c, "--server", "a"]);
    run(&["wrap", c, "--server", "r"]);
    let backups = backups_of(&config);
    assert_eq!(
        backups,
        [(
            "claude_desktop_config.json.mcpscope-backup".to_owned(),
            WRAP_CONFIG.to_owned()
        )],
        "one backup, the original"
    );
    // With the ledger: unwrap restores every byte.
    run(&["unwrap", c]);
    assert_eq!(std::fs::read_to_string(&config).unwrap(), WRAP_CONFIG);
    assert!(backups_of(&config).is_empty());

    // Without it, the original URL comes back from the backup.
    run(&["wrap", c, "--all"]);
    std::fs::remove_file(state.join("mcpscope/wrapped-remotes.json")).unwrap();
    let out = run(&["unwrap", c]);
    assert!(
        text(&out.stdout).contains("r: restored its URL from the config's backup"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), WRAP_CONFIG);
}

/// #26 item 4: two runs at once on one config each see the other's change
/// (2–4 lost updates in 40 trials before the lock).
#[test]
fn concurrent_wraps_of_one_config_lose_no_update() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let config = dir.path().join(".mcp.json");
    let original = r#"{"mcpServers": {"a": {"command": "srv-a"}, "b": {"command": "srv-b", "args": ["x"]}}}"#;
    let c = config.to_str().unwrap();
    for trial in 0..40 {
        std::fs::write(&config, original).unwrap();
        let a = mcpscope_in(&state, &["wrap", c, "--server", "a"]).spawn().unwrap();
        let b = mcpscope_in(&state, &["wrap", c, "--server", "b"]).spawn().unwrap();
        for out in [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()] {
            assert!(out.status.success(), "trial {trial}: {}", text(&out.stderr));
        }
        let wrapped: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
        for server in ["a", "b"] {
            assert_eq!(
                wrapped["mcpServers"][server]["args"][0], "proxy",
                "trial {trial}: {server} lost: {wrapped}"
            );
        }
    }
}

/// #26 item 4: wrapping a config leaves it (and its backup) its owner's,
/// with its mode: root wrapping a user's config above all.
#[test]
fn wrap_keeps_the_configs_owner_and_mode() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let config = dir.path().join("claude_desktop_config.json");
    std::fs::write(&config, WRAP_CONFIG).unwrap();
    // As root the config is given to another user (1000), whose it must
    // stay; anyone else cannot give a file away, so it stays theirs and what
    // is checked is that wrapping keeps its owner and mode all the same.
    // SAFETY: geteuid has no preconditions.
    let owner = if unsafe { libc::geteuid() } == 0 {
        std::os::unix::fs::chown(&config, Some(1000), Some(1000)).unwrap();
        (1000, 1000)
    } else {
        eprintln!("not root: the config stays ours (chown to another user needs root); its owner and mode are checked");
        let meta = std::fs::metadata(&config).unwrap();
        (meta.uid(), meta.gid())
    };
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = mcpscope_in(&state, &["wrap", config.to_str().unwrap(), "--all"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let meta = std::fs::metadata(&config).unwrap();
    assert!(std::fs::read_to_string(&config).unwrap().contains("proxy"));
    assert_eq!((meta.uid(), meta.gid()), owner, "still the user's");
    assert_eq!(meta.mode() & 0o7777, 0o600);
    let backup = std::fs::metadata(dir.path().join("claude_desktop_config.json.mcpscope-backup")).unwrap();
    assert_eq!(
        (backup.uid(), backup.gid(), backup.mode() & 0o777),
        (owner.0, owner.1, 0o600)
    );
}
