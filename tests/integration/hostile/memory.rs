//! Memory stays bounded: endless lines and events, floods, oversize
//! answers and tokens.

use super::*;

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
