//! Closed pipes, FIFOs and devices: a closed stdout ends quietly, and a
//! FIFO or a device is refused instead of read forever.

use super::*;

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
        let mut child = crate::support::mcpscope_command()
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
