//! Spawning, process groups, the watchdog and the subreaper, with real
//! processes.

use super::*;

#[test]
fn missing_program_names_itself_and_path() {
    let spec = ServerSpec {
        env: vec![("PATH".into(), "/nonexistent-a:/nonexistent-b".into())],
        ..ServerSpec::new("npx", Vec::<String>::new())
    };
    let e = resolve_program(&spec).unwrap_err();
    let text = e.to_string();
    assert!(text.starts_with("npx: not found in PATH"), "{text}");
    assert!(text.contains("/nonexistent-a"), "{text}");
}

#[test]
fn resolves_through_path_and_relative_to_cwd() {
    let found = resolve_program(&ServerSpec::new("sh", Vec::<String>::new())).unwrap();
    assert!(found.is_absolute());
    let spec = ServerSpec {
        cwd: Some("/bin".into()),
        ..ServerSpec::new("./sh", Vec::<String>::new())
    };
    assert_eq!(resolve_program(&spec).unwrap(), PathBuf::from("/bin/./sh"));
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("server.js");
    std::fs::write(&plain, "console.log(1)").unwrap();
    let spec = ServerSpec::new(plain.display().to_string(), Vec::<String>::new());
    let e = resolve_program(&spec).unwrap_err();
    assert!(e.message.contains("not executable"), "{e}");
    let e = resolve_program(&ServerSpec::new("/tmp", Vec::<String>::new())).unwrap_err();
    assert!(e.message.contains("directory"), "{e}");
}

#[test]
fn a_script_with_a_missing_interpreter_names_it() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("server.py");
    std::fs::write(&script, "#!/nonexistent/python9 -u\nprint(1)\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let e = spawn(&ServerSpec::new(script.display().to_string(), Vec::<String>::new()))
        .err()
        .unwrap();
    assert!(e.message.contains("/nonexistent/python9"), "{e}");
    assert!(e.message.contains("#!"), "{e}");
    std::fs::write(&script, "#!/bin/sh\r\necho\r\n").unwrap();
    let e = spawn(&ServerSpec::new(script.display().to_string(), Vec::<String>::new()))
        .err()
        .unwrap();
    assert!(e.message.contains("carriage return"), "{e}");
}

#[test]
fn a_tagged_process_outside_the_group_is_found_and_only_with_its_whole_tag() {
    let tag = format!("unit.{}", std::process::id());
    let mut daemon = Command::new("sleep")
        .arg("30")
        .env(TREE_TAG_VAR, &tag)
        .process_group(0)
        .spawn()
        .unwrap();
    let mut other = Command::new("sleep")
        .arg("30")
        .env(TREE_TAG_VAR, format!("{tag}0"))
        .process_group(0)
        .spawn()
        .unwrap();
    let pid = daemon.id();
    // A group that cannot exist (above the kernel's largest pid_max):
    // the daemon is outside it, as a setsid'd one is.
    let tree = ServerTree::for_tests(4_194_305, &tag);
    assert_eq!(tree.strays(), vec![(pid, false)], "the longer tag is another server's");
    let marker = tree.marker();
    // SAFETY: plain reads of /proc.
    unsafe {
        assert!(environ_holds(pid as libc::pid_t, &marker));
        assert!(!environ_holds(other.id() as libc::pid_t, &marker));
    }
    assert!(tree.signal(libc::SIGKILL));
    daemon.wait().unwrap();
    assert!(tree.strays().is_empty());
    other.kill().unwrap();
    other.wait().unwrap();
}

#[test]
fn the_watchdog_ends_the_group_when_released_and_not_when_stood_down() {
    let spawn_group = || {
        std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap()
    };
    let mut kept = spawn_group();
    let w = Watchdog::start(
        &ServerTree::for_tests(kept.id(), "t1"),
        std::time::Duration::from_millis(200),
    )
    .unwrap();
    w.stand_down();
    assert!(group_alive(kept.id()), "standing down must not signal the group");
    let _ = kept.kill();
    let _ = kept.wait();

    let mut ended = spawn_group();
    let w = Watchdog::start(
        &ServerTree::for_tests(ended.id(), "t2"),
        std::time::Duration::from_millis(200),
    )
    .unwrap();
    w.release();
    let status = ended.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGTERM));
}

#[test]
fn the_watchdog_names_itself() {
    let mut group = std::process::Command::new("sleep")
        .arg("30")
        .process_group(0)
        .spawn()
        .unwrap();
    let w = Watchdog::start(
        &ServerTree::for_tests(group.id(), "t3"),
        std::time::Duration::from_millis(200),
    )
    .unwrap();
    let pid = w.pid;
    let read = |what: &str| std::fs::read(format!("/proc/{pid}/{what}")).unwrap_or_default();
    // The child names itself just after the fork: give it a moment.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while read("comm") != b"mcpscope-watchd\n" && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let (comm, cmdline) = (read("comm"), read("cmdline"));
    w.stand_down();
    let _ = group.kill();
    let _ = group.wait();
    assert_eq!(String::from_utf8_lossy(&comm), "mcpscope-watchd\n");
    assert!(
        cmdline.starts_with(b"mcpscope-watchdog\0"),
        "{:?}",
        String::from_utf8_lossy(&cmdline)
    );
    assert!(
        cmdline[WATCHDOG_NAME.count_bytes()..].iter().all(|&b| b == 0),
        "{cmdline:?}"
    );
}

#[test]
fn a_group_of_zombies_is_alive_but_not_running() {
    let mut leader = std::process::Command::new("sleep")
        .arg("30")
        .process_group(0)
        .spawn()
        .unwrap();
    let pgid = leader.id();
    assert!(group_running(pgid));
    leader.kill().unwrap();
    // Killed and not yet waited for: a zombie.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while group_running(pgid) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(!group_running(pgid), "a killed process no longer runs");
    assert!(group_alive(pgid), "the zombie is still there until it is waited for");
    leader.wait().unwrap();
    assert!(!group_alive(pgid) && !group_running(pgid));
}

#[test]
fn servers_get_the_variables_mcpscope_changed_for_itself_as_they_were() {
    // Names no other test uses: the list is global and set once.
    restore_for_servers(vec![
        ("MCPSCOPE_TEST_RESTORED".into(), Some("as it was".into())),
        ("MCPSCOPE_TEST_OVERRIDDEN".into(), Some("as it was".into())),
    ]);
    let spec = ServerSpec {
        env: vec![("MCPSCOPE_TEST_OVERRIDDEN".into(), "from the spec".into())],
        ..ServerSpec::new(
            "sh",
            ["-c", "echo \"$MCPSCOPE_TEST_RESTORED|$MCPSCOPE_TEST_OVERRIDDEN\""],
        )
    };
    let mut spawned = spawn(&spec).unwrap();
    drop(spawned.child.stdin.take());
    let out = spawned.child.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "as it was|from the spec\n");
}

#[test]
fn exit_info_display() {
    let code = ExitInfo {
        code: Some(3),
        signal: None,
    };
    assert_eq!(code.to_string(), "exited with code 3");
    let sig = ExitInfo {
        code: None,
        signal: Some(9),
    };
    assert_eq!(sig.to_string(), "was killed by signal 9 (SIGKILL)");
    assert_eq!(sig.shell_code(), 137);
}

#[test]
fn display_quotes_arguments() {
    let s = ServerSpec::new("node", ["a b", "x", "it's"]);
    assert_eq!(s.display(), r"node 'a b' x 'it'\''s'");
}
