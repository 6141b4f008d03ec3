use super::*;

/// The App's lifeline shrinks its room before the server's goes off screen.
#[test]
fn an_app_lifeline_sits_left_of_the_client_and_the_server_stays_in_view() {
    for width in [430.0, 700.0, 1100.0] {
        let rect = Rect::from_min_size(Pos2::ZERO, Vec2::new(width, ROW_HEIGHT));
        let g = Geometry::new(rect, true, false);
        let app = g.app_x.unwrap();
        assert!(app < g.client_x && g.client_x < g.server_x, "{width}");
        assert!(g.client_x - app >= Geometry::APP_ROOM_MIN, "{width}");
        assert!(g.server_x <= rect.right(), "the server's lifeline on screen at {width}");
        assert!(Geometry::new(rect, false, false).app_x.is_none());
    }
}

/// With an App and a model, both lifelines stand left of the client, in
/// that order, and the server's stays on screen.
#[test]
fn a_model_lifeline_sits_left_of_the_client_beside_an_apps() {
    for width in [430.0, 700.0, 1100.0] {
        let rect = Rect::from_min_size(Pos2::ZERO, Vec2::new(width, ROW_HEIGHT));
        let g = Geometry::new(rect, true, true);
        let (app, model) = (g.app_x.unwrap(), g.model_x.unwrap());
        assert!(app < model && model < g.client_x && g.client_x < g.server_x, "{width}");
        assert!(g.server_x <= rect.right(), "the server's lifeline on screen at {width}");
        let alone = Geometry::new(rect, false, true);
        assert!(alone.app_x.is_none() && alone.model_x.unwrap() < alone.client_x);
    }
}

/// Who speaks to whom in the authorization lane.
#[test]
fn authorization_arrows_run_between_the_right_lifelines() {
    use mcpscope_core::protocol::auth::Step;
    let g = Geometry::new(
        Rect::from_min_size(Pos2::ZERO, Vec2::new(900.0, ROW_HEIGHT)),
        false,
        false,
    );
    assert!(
        g.client_x < g.auth_x && g.auth_x < g.server_x,
        "auth between client and server"
    );
    assert_eq!(g.auth_arrow(Some(Step::Challenge)), (Some(g.server_x), g.client_x));
    assert_eq!(g.auth_arrow(Some(Step::Retry)), (Some(g.client_x), g.server_x));
    assert_eq!(g.auth_arrow(Some(Step::Token)), (Some(g.client_x), g.auth_x));
    assert_eq!(g.auth_arrow(Some(Step::Callback)), (Some(g.auth_x), g.client_x));
    assert_eq!(
        g.auth_arrow(Some(Step::Failed)),
        (None, g.client_x),
        "a dot, not an arrow"
    );
}
use mcpscope_core::timeline::replay::Replay;
use mcpscope_core::wire::frame::Direction;

fn model(lines: &[(Direction, &str)]) -> SessionModel {
    Replay::of(lines).model()
}

fn sample() -> SessionModel {
    model(&[
        (Direction::Out, r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
        (
            Direction::In,
            r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"Hello"}}"#,
        ),
        (Direction::In, r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#),
        (Direction::In, "Server started on stdio"),
        (Direction::Out, r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#),
    ])
}

#[test]
fn labels_and_keyboard_steps() {
    let m = sample();
    assert_eq!(row_label(&m.store, &m.store.get(2).unwrap()), "result #1 (tools/list)");
    assert_eq!(
        row_label(&m.store, &m.store.get(3).unwrap()),
        "NOT JSON: Server started on stdio"
    );
    let mut t = TimelinePanel::default();
    t.index.sync(&m.store, &SessionFacts::default());
    t.step_selection(1);
    assert_eq!(t.selected, Some(0));
    t.step_selection(1);
    t.step_selection(1);
    assert_eq!(t.selected, Some(2));
    t.update_links(&m.store);
    assert_eq!(t.linked(), [0]);
    t.step_selection(10);
    assert_eq!(t.selected, Some(4));
    t.step_selection(-1);
    assert_eq!(t.selected, Some(3));
}

/// The era probe's expected refusal is said to be one; any other
/// "method not found" stays an error.
#[test]
fn the_era_probes_refusal_is_labelled_as_expected() {
    let m = model(&[
        (Direction::Out, r#"{"jsonrpc":"2.0","id":0,"method":"server/discover"}"#),
        (
            Direction::In,
            r#"{"jsonrpc":"2.0","id":0,"error":{"code":-32601,"message":"Method not found"}}"#,
        ),
        (Direction::Out, r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#),
        (
            Direction::In,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}"#,
        ),
    ]);
    let probe = m.store.get(1).unwrap();
    assert!(era_probe_refused(&m.store, &probe));
    assert!(row_label(&m.store, &probe).contains("era probe"));
    let other = m.store.get(3).unwrap();
    assert!(!era_probe_refused(&m.store, &other));
    assert_eq!(row_label(&m.store, &other), "error #1 -32601");
}

/// The timeline alone over `n` pings, 900x400, not following the tail.
fn pings_harness(n: usize) -> egui_kittest::Harness<'static, TimelinePanel> {
    let mut r = Replay::new();
    for i in 0..n {
        r.out(&format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"ping"}}"#));
    }
    let m = r.model();
    let panel = TimelinePanel {
        follow_tail: false,
        ..TimelinePanel::default()
    };
    egui_kittest::Harness::builder()
        .with_size([900.0, 400.0])
        .build_ui_state(
            move |ui, t: &mut TimelinePanel| {
                let mut prefs = FilterPrefs::default();
                let cx = FilterContext {
                    facts: SessionFacts::default(),
                    prefs: &mut prefs,
                    tools: &[],
                };
                let _ = t.ui(ui, &m, cx);
            },
            panel,
        )
}

/// #14: ticking Follow tail shows the newest row wherever the view was.
#[test]
fn follow_tail_jumps_to_the_newest_row() {
    use egui_kittest::kittest::Queryable as _;
    let mut h = pings_harness(400);
    h.run_steps(2);
    let newest = "ping #399";
    assert!(
        h.query_by_label_contains(newest).is_none(),
        "the view starts at the top"
    );
    h.state_mut().follow_tail = true;
    h.run_steps(2);
    assert!(h.query_by_label_contains(newest).is_some(), "the newest row is shown");
    assert!(h.state().follow_tail);
}

/// #25 item 11: with nothing selected, Down takes the first row on
/// screen, not row 0 (and the view stays where it was).
#[test]
fn down_with_nothing_selected_takes_the_first_row_on_screen() {
    use egui_kittest::kittest::Queryable as _;
    let mut h = pings_harness(2000);
    h.run_steps(2);
    h.state_mut().select(1000);
    h.run_steps(3);
    h.state_mut().selected = None;
    h.run_steps(2);
    let (first, _) = h.state().visible.expect("rows on screen");
    assert!(first > 900, "{first}");
    h.key_press(egui::Key::ArrowDown);
    h.run_steps(2);
    assert_eq!(h.state().selected, Some(first));
    assert_eq!(h.state().visible.unwrap().0, first, "the view did not move");
    assert!(h.query_by_label_contains("ping #0 ").is_none());
}

/// #14: at the default window size every lane, and the stderr lane's
/// text, fits in the timeline.
#[test]
fn every_lane_fits_at_the_default_size() {
    // 1440 px wide, minus the launcher (300) and detail (460) panels.
    let rect = Rect::from_min_size(egui::pos2(300.0, 0.0), Vec2::new(680.0, 500.0));
    let g = Geometry::new(rect, false, false);
    assert!(g.client_x > rect.left() + 100.0, "room for the time column");
    assert!(g.server_x - g.client_x > 200.0, "room for arrow labels");
    assert!(
        rect.right() - g.stderr_x >= Geometry::STDERR_TEXT,
        "room for stderr text"
    );
    // #25 item 14: a long method fits between the lifelines at this size.
    let label = "○ notifications/tools/list_changed";
    let room = g.server_x - g.client_x - 2.0 * ARROW_LABEL_MARGIN;
    assert!(room >= label.chars().count() as f32 * 7.3, "{room} px for {label:?}");
}
