//! Captures: a failure to write is an error, a second session is appended,
//! and times never run backwards.

use super::*;

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
