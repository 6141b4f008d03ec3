//! Spawning: resolving programs, interpreters, the environment, with real
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
#[cfg(unix)] // sh and /bin
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
#[cfg(unix)] // #! scripts are Unix's
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
#[cfg(unix)] // sh
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
