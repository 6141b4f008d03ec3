//! Peers that stop reading: the proxy's client and a stalled session.

use super::*;

// ---------------------------------------------------------------------------
// 17. The proxy notices a client that stopped reading; times never go back.

#[test]
fn the_proxy_records_a_client_that_stopped_reading() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("c.jsonl");
    let mut args = vec![
        "proxy".to_owned(),
        "--capture".into(),
        cap.display().to_string(),
        "--".into(),
    ];
    args.extend(hostile_args("interleave", &["--count", "5000"]));
    let mut child = crate::support::mcpscope_command()
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the client reads nothing at all
    let stdin = child.stdin.take();
    let out = wait_output(child, Duration::from_secs(30), "proxy with a client that does not read");
    drop(stdin);
    let _ = out;
    let recorded = std::fs::read_to_string(&cap).unwrap();
    assert!(recorded.contains("the client stopped reading"), "{recorded}");
}

// ---------------------------------------------------------------------------
// #11: the owner never blocks on a session that is not keeping up.

#[test]
fn sending_to_a_stalled_session_never_blocks_and_is_reported() {
    let options = SessionOptions {
        event_capacity: 16,
        ..quick()
    };
    // A server flooding stdout with nobody reading events: the session
    // thread blocks on its full event channel and stops taking commands.
    let session = Arc::new(Session::start(faulty_with("flood", &["--count", "200000"]), options));
    let (done_tx, done_rx) = crossbeam_channel::bounded(1);
    let s = session.clone();
    std::thread::spawn(move || {
        for _ in 0..5000 {
            s.notify("notifications/progress", None);
        }
        let _ = done_tx.send(());
    });
    assert!(
        done_rx.recv_timeout(Duration::from_secs(20)).is_ok(),
        "the owner was blocked by a full command channel"
    );
    let evs = collect_until(
        &session,
        Duration::from_secs(60),
        |e| matches!(e, Event::Note { text, .. } if text.contains("were not accepted")),
    );
    assert!(!evs.is_empty());
}
