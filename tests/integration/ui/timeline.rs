//! The timeline and the panels beside it: findings, notifications, the
//! JSON tree and HTTP exchanges.

use super::*;

#[test]
fn expert_panel_lists_live_findings_and_selects_their_frames() {
    let mut h = harness(launching(&faulty("stdout-log")));
    step_until(&mut h, "the handshake", handshake_done);
    step_until(&mut h, "a not-json finding from the live capture", |app| {
        app.session()
            .expert
            .findings
            .iter()
            .any(|f| f.finding.rule == mcpscope_core::analysis::lint::rule::NOT_JSON)
    });
    h.get_by_label_contains("Expert (").click();
    h.step();
    h.step();
    let rows = h
        .state()
        .session()
        .expert
        .findings
        .iter()
        .find(|f| f.finding.rule == mcpscope_core::analysis::lint::rule::NOT_JSON)
        .unwrap()
        .rows
        .clone();
    h.get_by_label_contains("[not-json]").click();
    h.step();
    h.step();
    let app = h.state();
    assert_eq!(
        app.session().timeline.selected,
        Some(rows[0]),
        "the finding's frame is selected"
    );
    assert_eq!(app.session().timeline.highlighted, rows);
    let model = &app.session().inspection.as_ref().unwrap().model;
    let label = mcpscope_app::panels::timeline::row_label(&model.store, &model.store.get(rows[0]).unwrap());
    assert!(label.starts_with("NOT JSON: Server started"), "{label}");
    // The row is marked on the timeline and the detail shows it.
    assert!(shows(&h, &format!("row {}: NOT JSON", rows[0])));
    assert!(h.query_all_by_label_contains("[lint ").next().is_some());
    assert!(shows(&h, "logs belong on stderr"));
    h.state_mut().session_mut().inspection = None;
}

/// #14: the notifications the server sent are listed, not only counted.
#[test]
fn notifications_are_listed_in_their_own_tab() {
    let mut h = launch_everything();
    step_until(&mut h, "a notification", |app| {
        app.session()
            .inspection
            .as_ref()
            .is_some_and(|i| !i.model.notification_rows.is_empty())
    });
    h.get_by_label_contains("Notifications (").click();
    h.step();
    h.step();
    let n = h
        .state()
        .session()
        .inspection
        .as_ref()
        .unwrap()
        .model
        .notification_rows
        .len();
    assert!(shows(&h, &format!("{n} of {n} notifications")));
    assert!(h.query_all_by_label_contains("notifications/").count() >= 1);
    h.state_mut().session_mut().inspection = None;
}

/// #14: a request pending when the server dies ends at once, saying so.
#[test]
fn a_request_pending_when_the_server_dies_ends_as_server_exited() {
    let mut h = harness(launching(&faulty("crash-on-call")));
    wait_for_tool(&mut h, "echo");
    choose_tool(&mut h, "echo", "");
    h.get_by_label("Send tools/call").click_accesskit();
    step_until(&mut h, "the end of the call", |app| {
        let (Some(p), Some(i)) = (&app.session().composer.result.pending, &app.session().inspection) else {
            return false;
        };
        i.failure(&p.id).is_some()
    });
    assert!(
        shows(&h, "the server exited with code 7 before answering"),
        "the reason is shown"
    );
    assert!(
        !shows(&h, "waiting for the answer"),
        "no spinner for a request that cannot be answered"
    );
    h.state_mut().session_mut().inspection = None;
}

#[test]
fn the_json_tree_starts_at_the_top_of_each_frame_selected() {
    let mut h = launch_everything();
    step_until(&mut h, "tools/list", |app| {
        has_row(app, |l| l.starts_with("result #2 (tools/list)"))
    });
    // A second frame as long as the first: the same list again.
    let id = h
        .state_mut()
        .session_mut()
        .inspection
        .as_mut()
        .unwrap()
        .send(mcpscope_app::inspection::Outgoing::Request {
            method: "tools/list".into(),
            params: None,
            id: Some(mcpscope_core::wire::message::RequestId::Number(900)),
        })
        .unwrap();
    step_until(&mut h, "the second tools/list", |app| {
        app.session()
            .inspection
            .as_ref()
            .unwrap()
            .model
            .response_to(&id)
            .is_some()
    });
    h.state_mut().session_mut().right_tab = mcpscope_app::RightTab::Frame;
    h.get_by_label_contains("result #2 (tools/list)").click();
    for _ in 0..3 {
        h.step();
    }
    // The top of the tree sits just under the detail's toolbar.
    let toolbar = h.get_by_label("Expand all").rect();
    let top_of_tree = |h: &Harness<'static, McpscopeApp>| {
        h.query_all_by_label_contains("result: {")
            .map(|n| n.rect())
            .min_by(|a, b| a.top().total_cmp(&b.top()))
            .expect("the tree's result node")
    };
    let first = top_of_tree(&h);
    assert!(
        first.top() > toolbar.bottom() && first.top() < toolbar.bottom() + 120.0,
        "{first:?} under {toolbar:?}"
    );
    // Scroll the long tree down with the mouse wheel.
    h.get_by_label_contains("result: {").hover();
    h.step();
    for _ in 0..5 {
        h.event(egui::Event::MouseWheel {
            unit: egui::MouseWheelUnit::Point,
            delta: egui::vec2(0.0, -200.0),
            phase: egui::TouchPhase::Move,
            source: egui::MouseWheelSource::Unknown,
            modifiers: egui::Modifiers::NONE,
        });
        h.step();
    }
    for _ in 0..10 {
        h.step();
        std::thread::sleep(Duration::from_millis(20));
    }
    let scrolled = top_of_tree(&h);
    assert!(scrolled.top() < toolbar.top() - 500.0, "scrolled away: {scrolled:?}");
    // The next frame starts at its top, not at the offset the last one had.
    h.get_by_label_contains("result #900 (tools/list)").click();
    for _ in 0..3 {
        h.step();
    }
    let next = top_of_tree(&h);
    assert!(
        (next.top() - first.top()).abs() < 1.0,
        "the next frame's tree starts at the top: {next:?}, expected {first:?}"
    );
    h.state_mut().session_mut().inspection = None;
}

/// #25 item 8: an HTTP exchange's row shows its record as a tree (method,
/// URL, status, the headers sent and received), with a way to the request
/// it carried; it was one summary line.
#[test]
fn an_http_exchange_shows_its_headers_as_a_tree() {
    let mut h = harness(StartupArgs {
        open: Some(repo().join("tests/captures/401-without-www-authenticate.jsonl")),
        ..StartupArgs::default()
    });
    step_until(&mut h, "the capture loaded", |app| {
        app.session()
            .inspection
            .as_ref()
            .is_some_and(|i| i.model.store.len() >= 2)
    });
    h.get_by_label_contains("HTTP POST").click();
    h.step();
    h.step();
    assert!(shows(&h, "status: 401"), "the status is a node of the tree");
    assert!(
        shows(&h, "\"application/json, text/event-stream\""),
        "a header sent is shown"
    );
    h.get_by_label_contains("Go to the request it carried").click();
    h.step();
    h.step();
    assert_eq!(h.state().session().timeline.selected, Some(0));
}
