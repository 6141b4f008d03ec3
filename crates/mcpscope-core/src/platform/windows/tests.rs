//! The Windows platform layer against the real system calls (run under
//! Wine by scripts/wine-test, and natively by the GitHub workflow).

use super::ipc::{ControlListener, ControlStream};
use super::process::{Stop, program_candidates};
use crate::transport::process::{ServerSpec, resolve_program, spawn};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

#[test]
fn npx_is_found_as_npx_cmd_through_pathext() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("npx.cmd"), "@echo off\r\n").unwrap();
    let spec = ServerSpec {
        env: vec![("PATH".into(), dir.path().display().to_string())],
        ..ServerSpec::new("npx", ["-y", "server"])
    };
    assert_eq!(resolve_program(&spec).unwrap(), dir.path().join("npx.cmd"));
    // A name that carries a PATHEXT extension is tried as it is first.
    let tried = program_candidates(dir.path(), "tool.exe");
    assert_eq!(tried[0], dir.path().join("tool.exe"));
}

#[test]
fn a_batch_files_unsafe_argument_is_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("server.cmd");
    std::fs::write(&script, "@echo off\r\n").unwrap();
    // cmd.exe cannot be told a line break inside an argument.
    let spec = ServerSpec::new(script.display().to_string(), ["line\nbreak"]);
    let Err(e) = spawn(&spec) else {
        panic!("std let the argument through")
    };
    assert!(e.to_string().contains("batch file"), "{e}");
}

#[test]
fn the_control_pipe_carries_bytes_both_ways_and_has_one_owner() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("control.sock");
    let listener = ControlListener::bind(&path).unwrap();
    assert!(listener.accept().unwrap().is_none(), "nobody connected yet");
    // A second listener on the same name is refused, not shared
    // (FILE_FLAG_FIRST_PIPE_INSTANCE; Wine 8 does not enforce it, so
    // scripts/wine-test says it runs there and this is checked natively).
    if std::env::var_os("MCPSCOPE_UNDER_WINE").is_none() {
        assert!(ControlListener::bind(&path).is_err());
    }
    let mut client = ControlStream::connect(&path).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut served = loop {
        if let Some(s) = listener.accept().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the connection was never accepted");
        std::thread::sleep(Duration::from_millis(10));
    };
    client.write_all(b"list\n").unwrap();
    let mut got = [0u8; 5];
    served.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"list\n");
    served.write_all(b"ok\n").unwrap();
    let mut answer = [0u8; 3];
    client.read_exact(&mut answer).unwrap();
    assert_eq!(&answer, b"ok\n");
}

/// The server and what it started are in its job: stopping the tree for
/// good ends both, and nothing of it runs after.
#[test]
fn stopping_the_tree_ends_the_server_and_its_child() {
    // cmd.exe starts a second cmd.exe that waits on the open stdin.
    let mut spawned = spawn(&ServerSpec::new("cmd.exe", ["/c", "cmd.exe /k"])).unwrap();
    let tree = spawned.tree.clone();
    assert!(tree.running());
    assert!(tree.stop(Stop::ForGood));
    let deadline = Instant::now() + Duration::from_secs(10);
    while tree.running() {
        assert!(Instant::now() < deadline, "the job still has processes");
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = spawned.child.wait();
}

/// A secret goes into Windows' Credential Manager and comes back (under
/// Wine, its own credential store), and is gone once deleted.
#[test]
fn a_secret_is_kept_in_the_credential_manager() {
    let keyring = crate::config::keyring::Keyring::open().unwrap();
    let key = format!("mcpscope-test-{}", std::process::id());
    keyring.set(&key, "s3cret value").unwrap();
    assert_eq!(keyring.get(&key).unwrap().as_deref(), Some("s3cret value"));
    assert!(keyring.delete(&key).unwrap());
    assert_eq!(keyring.get(&key).unwrap(), None);
}
