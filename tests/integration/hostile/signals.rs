//! Signals: the server's whole process group is ended and the end recorded.

use super::*;

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
    let mut child = crate::support::mcpscope_command()
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
    let mut child = crate::support::mcpscope_command()
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
