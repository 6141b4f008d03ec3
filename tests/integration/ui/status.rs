//! What the status strip says during and after a handshake.

use super::*;

/// Every label on screen, for checks on what the whole window says.
fn all_labels(h: &Harness<'static, McpscopeApp>) -> Vec<String> {
    h.query_all_by_label_contains("")
        .filter_map(|n| n.accesskit_node().label())
        .collect()
}

#[test]
fn the_window_says_what_it_means_during_and_after_a_handshake() {
    // A normal handshake: the strip never claims, even for one frame, that
    // notifications/initialized was not sent.
    let mut h = harness(launching(&faulty("normal")));
    h.state_mut().launcher.recent = vec![mcpscope_app::saved_server::SavedServer {
        name: "long".into(),
        program: "python3".into(),
        args: vec!["/a/very/long/path/to/a/server/that/does/not/fit/on/one/line/server.py".into(); 3],
        ..Default::default()
    }];
    let deadline = Instant::now() + Duration::from_secs(30);
    while !h
        .state()
        .session()
        .inspection
        .as_ref()
        .is_some_and(|i| i.model.latest_results.contains_key("tools/list"))
    {
        assert!(Instant::now() < deadline, "no handshake and tools/list");
        h.step();
        assert!(
            !shows(&h, "notifications/initialized not sent"),
            "the strip judged the handshake before it was over"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    h.step();
    h.step();
    // An empty capability object is the capability, with no empty brackets.
    assert!(shows(&h, "capabilities: tools"));
    assert!(!shows(&h, "tools ()"));
    // Labels shortened to fit say nothing about byte counts (Recent list, Statistics).
    h.state_mut().bottom_tab = mcpscope_app::BottomTab::Statistics;
    h.step();
    h.step();
    let labels = all_labels(&h);
    assert!(
        labels.iter().any(|l| l.contains("long — python3")),
        "the recent entry is listed"
    );
    assert!(
        labels.iter().all(|l| !l.contains("bytes in all")),
        "{:?}",
        labels.iter().filter(|l| l.contains("bytes in all")).collect::<Vec<_>>()
    );
    h.state_mut().session_mut().inspection = None;

    // A stray stdout line during initialize: the strip is not green, it says so.
    let mut h = harness(launching(&faulty("stdout-log")));
    step_until(&mut h, "the handshake", handshake_done);
    h.step();
    h.step();
    assert!(shows(&h, "on stdout during the handshake are not JSON-RPC"));
    h.state_mut().session_mut().inspection = None;
}

/// #25 item 2: while initialize waits, the strip says for how long.
#[test]
fn a_waiting_initialize_shows_how_long_it_has_waited() {
    let mut h = harness(launching(&faulty("no-read")));
    step_until(&mut h, "initialize sent", |app| {
        app.session()
            .inspection
            .as_ref()
            .is_some_and(|i| i.model.handshake.initialize_row.is_some())
    });
    std::thread::sleep(Duration::from_millis(1200));
    h.run_steps(2);
    assert!(shows(&h, "waiting for the initialize response"));
    let waited = h
        .state()
        .session()
        .inspection
        .as_ref()
        .unwrap()
        .initialize_waited()
        .unwrap();
    assert!(waited >= Duration::from_secs(1), "{waited:?}");
    assert!(
        shows(&h, &format!("{:.0}.", waited.as_secs_f64().floor())),
        "the wait is on screen"
    );
    h.state_mut().session_mut().inspection = None;
}
