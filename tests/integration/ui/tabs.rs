//! Session tabs: a launch takes a new tab, closing asks first, the strip
//! stays one row high.

use super::*;

/// #25 item 6: Launch is not greyed while a session runs: it opens a new
/// tab, says so, and the session on screen keeps running.
#[test]
fn launch_while_a_session_runs_takes_a_new_tab() {
    let mut h = harness(launching(&faulty("normal")));
    step_until(&mut h, "the handshake", handshake_done);
    assert!(
        shows(&h, "Launch opens a new tab"),
        "the launcher says what Launch will do"
    );
    h.get_by_label("▶ Launch").click();
    step_until(&mut h, "a second tab's handshake", |app| {
        app.tabs.len() == 2 && handshake_done(app)
    });
    assert_eq!(h.state().active_tab, 1);
    assert!(
        h.state().tabs[0]
            .view
            .inspection
            .as_ref()
            .is_some_and(|i| i.model.running()),
        "the first session still runs"
    );
    h.state_mut().session_mut().inspection = None;
    h.state_mut().tabs[0].view.inspection = None;
}

/// #25 item 12: closing a tab whose server runs asks first; "Keep it open"
/// keeps it running, "Stop the server and close" stops it.
#[test]
fn closing_a_running_tab_asks_first() {
    let mut h = harness(launching(&faulty("normal")));
    step_until(&mut h, "the handshake", handshake_done);
    h.get_by_label("x").click();
    h.step();
    h.step();
    h.step();
    assert!(
        shows(&h, "Close a running session?"),
        "asked before stopping the server"
    );
    assert!(
        h.state()
            .session()
            .inspection
            .as_ref()
            .is_some_and(|i| i.model.running())
    );
    h.get_by_label("Keep it open").click();
    h.step();
    h.step();
    assert!(!shows(&h, "Close a running session?"));
    assert!(
        h.state()
            .session()
            .inspection
            .as_ref()
            .is_some_and(|i| i.model.running()),
        "kept"
    );
    h.get_by_label("x").click();
    h.step();
    h.step();
    h.get_by_label("Stop the server and close").click();
    h.step();
    assert!(
        h.state().session().inspection.is_none(),
        "the session is gone with its tab"
    );
}

/// #25 item 4: many tabs keep the tab strip one row high, and "Compare
/// with…" keeps its width.
#[test]
fn many_tabs_keep_the_strip_one_row_high() {
    let mut h = harness(StartupArgs::default());
    h.run_steps(2);
    let strip_before = h.get_by_label("+").rect();
    for i in 0..12 {
        h.get_by_label("+").click();
        h.step();
        h.step();
        let last = h.state().tabs.len() - 1;
        h.state_mut().tabs[last].title = format!("session {i} with long title");
        // The labels are fitted to the strip over a frame or two: let the "+" settle.
        h.run_steps(4);
    }
    assert_eq!(h.state().tabs.len(), 13);
    h.run_steps(3);
    let plus = h.get_by_label("+").rect();
    assert!(
        (plus.top() - strip_before.top()).abs() < 1.0,
        "the strip stayed one row: {strip_before:?} → {plus:?}"
    );
    let compare = h.get_by_label("Compare with…").rect();
    assert!(compare.width() > 60.0 && compare.height() < 40.0, "{compare:?}");
    // Every tab's label is shortened to fit: all of them are in the strip's view.
    let tabs: Vec<egui::Rect> = h
        .query_all_by(|n| n.label().is_some_and(|l| l.starts_with("sess")))
        .map(|n| n.rect())
        .filter(|r| r.top() < plus.bottom())
        .collect();
    assert_eq!(tabs.len(), 12, "{tabs:?}");
    for t in tabs {
        assert!(t.left() >= 0.0 && t.right() <= compare.left(), "{t:?} hidden");
    }
}
