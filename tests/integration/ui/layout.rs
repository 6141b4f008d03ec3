//! The window's layout: the bottom tabs, small windows, and idle repaints.

use super::*;

/// #25 item 9: the bottom tabs stay where they are whichever tab is shown
/// (the panel's height is the user's, not its content's).
#[test]
fn the_bottom_tabs_stay_put() {
    let mut h = harness_any_glyphs(launching(&everything()));
    step_until(&mut h, "the handshake", handshake_done);
    h.run_steps(5);
    let mut tops = Vec::new();
    for tab in [
        "Statistics",
        "Notifications (",
        "Log (",
        "Expert",
        "stderr (",
        "Statistics",
    ] {
        h.get_by_label_contains(tab).click();
        h.run_steps(3);
        tops.push((tab, h.get_by_label("Statistics").rect().top()));
    }
    let first = tops[0].1;
    assert!(tops.iter().all(|(_, t)| (t - first).abs() < 1.0), "{tops:?}");
    h.state_mut().session_mut().inspection = None;
}

/// #25 item 5: at 1024x700 the side panels give way and the timeline keeps
/// room for both lifelines and the stderr lane.
#[test]
fn the_layout_is_usable_at_1024_by_700() {
    // Opened at the default size, then made smaller, as a user resizes it.
    let mut h = harness(launching(&faulty("normal")));
    step_until(&mut h, "the handshake", handshake_done);
    h.set_size(egui::Vec2::new(1024.0, 700.0));
    h.run_steps(4);
    let row = h.get_by_label_contains("row 0:").rect();
    assert!(row.width() >= 420.0, "the timeline is {row:?} wide");
    assert!(row.right() <= 1024.0, "{row:?}");
    // The Frame tab (right panel) and the launcher (left) are still there.
    assert!(h.get_by_label("Frame").rect().right() <= 1024.0);
    assert!(h.get_by_label("▶ Launch").rect().left() >= 0.0);
    h.state_mut().session_mut().inspection = None;
}

/// #25 item 15: a focused text field asks for no frames while nothing
/// changes (a blinking cursor repainted twice a second: ~20% of a core
/// with software rendering).
#[test]
fn an_idle_window_with_a_focused_field_asks_for_no_frames() {
    let mut h = harness(StartupArgs::default());
    h.run_steps(2);
    assert!(!h.ctx.global_style().visuals.text_cursor.blink, "no blinking cursor");
    // The live sessions' first listing (a worker reading the state directory,
    // slow on a loaded machine) asks for a frame when it lands: not idleness.
    step_until(&mut h, "the first listing of live sessions", |app| app.live.listed);
    h.get_by_role_and_label(Role::TextInput, "Command").focus();
    h.run_steps(3);
    h.step();
    assert!(!h.ctx.has_requested_repaint(), "an idle frame asks for another");
}
