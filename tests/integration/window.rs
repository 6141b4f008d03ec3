//! What a new user hits in the window at 1024×700 (issue #48): the status
//! line, the tab strip, the bottom panel's tabs and its size. egui_kittest
//! drives the real app on captures from `tests/captures`.

use crate::support::*;
use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable as _;
use mcpscope_app::{BottomTab, McpscopeApp, StartupArgs};

const SMALL: [f32; 2] = [1024.0, 700.0];

fn small_window() -> Harness<'static, McpscopeApp> {
    Harness::builder()
        .with_size(SMALL)
        .build_eframe(|cc| McpscopeApp::new(cc, StartupArgs::default()))
}

fn open(h: &mut Harness<'static, McpscopeApp>, name: &str) {
    let tabs = h.state().tabs.len();
    let first = h.state().session().inspection.is_none();
    h.state_mut().open_capture(repo().join("tests/captures").join(name));
    step_until(h, name, |app| {
        (app.tabs.len() > tabs || first)
            && app
                .session()
                .inspection
                .as_ref()
                .is_some_and(|i| i.capture_path.as_ref().is_some_and(|p| p.ends_with(name)) && !i.loading())
    });
}

/// The node whose label starts with `prefix` that lies furthest left (a
/// tab's label; the status bar's path holds the name further right).
fn leftmost(h: &Harness<'static, McpscopeApp>, prefix: &str) -> egui::Rect {
    h.query_all_by(|n| n.label().is_some_and(|l| l.starts_with(prefix)))
        .map(|n| n.rect())
        .min_by(|a, b| a.left().total_cmp(&b.left()))
        .unwrap_or_else(|| panic!("no node labelled {prefix}…"))
}

const EIGHT: [&str; 8] = [
    "bom.jsonl",
    "crlf.jsonl",
    "blank-line.jsonl",
    "invalid-id.jsonl",
    "batch-not-allowed.jsonl",
    "duplicate-response.jsonl",
    "malformed-error.jsonl",
    "missing-jsonrpc.jsonl",
];

/// Eight tabs at 1024 px: every tab's name starts inside the window (the
/// strip scrolled the first one's away), and the Tabs menu lists them all.
/// Then a file that is not a capture: its error is on screen, whole, even
/// with the status bar full of the session's figures and path.
#[test]
fn at_1024_eight_tabs_keep_their_names_and_an_error_is_seen_whole() {
    let mut h = small_window();
    for name in EIGHT {
        open(&mut h, name);
    }
    assert_eq!(h.state().tabs.len(), 8);
    h.run_steps(3);
    for name in EIGHT {
        let r = leftmost(&h, &name[..3]);
        assert!(r.left() >= 0.0 && r.right() <= SMALL[0], "tab {name} is cut: {r:?}");
    }
    h.get_by_label("Tabs").click();
    h.run_steps(2);
    for name in EIGHT {
        assert!(
            h.query_all_by_label(name).count() >= 1,
            "the Tabs menu names {name} in full"
        );
    }
    h.key_press(egui::Key::Escape);
    h.run_steps(2);

    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("notes.txt");
    std::fs::write(&junk, "these are my notes, not a capture\n".repeat(20)).unwrap();
    h.state_mut().open_capture(junk.clone());
    step_until(&mut h, "the error", |app| {
        app.message
            .as_ref()
            .is_some_and(|(s, _)| *s == mcpscope_core::timeline::model::Severity::Error)
    });
    let (_, message) = h.state().message.clone().unwrap();
    let shown = h
        .query_all_by_label_contains(&message)
        .next()
        .unwrap_or_else(|| panic!("the message is on screen: {message}"));
    let r = shown.rect();
    assert!(
        r.left() >= 0.0 && r.right() <= SMALL[0] && r.bottom() <= SMALL[1],
        "the error is whole on screen: {r:?} ({message})"
    );
}

/// The bottom panel's Intercept and App tabs belong to sessions that have
/// them: a capture shown after one of them falls back to stderr, and says
/// nothing false about itself ("not started with breakpoints", "did not
/// advertise MCP Apps").
#[test]
fn a_bottom_tab_the_session_lacks_is_not_shown_for_it() {
    let mut h = small_window();
    open(&mut h, "bom.jsonl");
    for chosen in [BottomTab::Intercept, BottomTab::App] {
        // Chosen on another tab (the bottom panel's tab is the window's).
        h.state_mut().bottom_tab = chosen;
        h.run_steps(3);
        assert!(
            h.query_by_label_contains("was not started with breakpoints").is_none(),
            "{chosen:?}: the Intercept body of another session"
        );
        assert!(
            h.query_by_label_contains("did not advertise MCP Apps").is_none(),
            "{chosen:?}: the App body of another session"
        );
        assert!(
            h.query_by_label_contains("servers log here").is_some(),
            "{chosen:?}: stderr shown"
        );
    }
}

/// At 1024×700 the bottom panel can be dragged smaller and larger whichever
/// tab it shows (the Load tab's minimum kept it at 330 px), and never takes
/// the timeline below a third of the window.
#[test]
fn at_1024x700_the_bottom_panel_resizes_both_ways_and_the_timeline_keeps_a_third() {
    let mut h = small_window();
    open(&mut h, "bom.jsonl");
    h.state_mut().bottom_tab = BottomTab::Load;
    h.run_steps(4);
    let top = |h: &Harness<'static, McpscopeApp>| leftmost(h, "stderr (").top();
    let filter = h.get_by_role_and_label(Role::TextInput, "Filter").rect().top();
    let drag = |h: &mut Harness<'static, McpscopeApp>, by: f32| {
        let from = egui::pos2(600.0, top(h) - 7.0);
        let to = from + egui::vec2(0.0, by);
        h.hover_at(from);
        h.run_steps(2);
        h.drag_at(from);
        h.run_steps(2);
        for i in 1..=8 {
            h.hover_at(from + egui::vec2(0.0, by * i as f32 / 8.0));
            h.step();
        }
        h.drop_at(to);
        h.run_steps(3);
    };
    let before = top(&h);
    drag(&mut h, 80.0);
    let lower = top(&h);
    assert!(lower > before + 60.0, "dragged down: {before} -> {lower}");
    drag(&mut h, -600.0);
    let higher = top(&h);
    assert!(higher < lower - 100.0, "dragged up: {lower} -> {higher}");
    assert!(
        higher - filter >= SMALL[1] / 3.0 - 40.0,
        "the timeline keeps a third of the window: filter at {filter}, panel at {higher}"
    );
}

/// A HAR opened in the app is imported into a private copy; its tab is
/// named after the file the user opened, not the copy's `import-…` name.
#[test]
fn an_imported_files_tab_is_named_after_that_file() {
    let dir = tempfile::tempdir().unwrap();
    let har = dir.path().join("checkout-flow.har");
    let out = crate::support::mcpscope_command()
        .args(["export", "--format", "har", "-o"])
        .arg(&har)
        .arg(repo().join("tests/captures/slow-response.jsonl"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut h = small_window();
    h.state_mut().open_capture(har.clone());
    step_until(&mut h, "the HAR opened", |app| {
        app.session()
            .inspection
            .as_ref()
            .is_some_and(|i| !i.loading() && i.model.store.len() > 1)
    });
    assert_eq!(h.state().tab_label(h.state().active_tab), "checkout-flow.har");
    let i = h.state().session().inspection.as_ref().unwrap();
    assert_eq!(i.imported_from.as_deref(), Some(har.as_path()));
    assert!(
        i.capture_path
            .as_ref()
            .and_then(|p| p.file_name())
            .is_some_and(|n| n.to_string_lossy().starts_with("import-")),
        "read from its private copy"
    );
}

/// A launch that fails does not go into Recent; one whose server answers does.
#[test]
fn only_a_launch_that_was_answered_goes_into_recent() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-server").display().to_string();
    let args = StartupArgs {
        launch: vec![missing.clone()],
        ..StartupArgs::default()
    };
    let mut h = Harness::builder()
        .with_size(SMALL)
        .build_eframe(move |cc| McpscopeApp::new(cc, args));
    step_until(&mut h, "the failed launch", |app| {
        app.session()
            .inspection
            .as_ref()
            .is_some_and(|i| i.model.spawn_error.is_some())
    });
    h.run_steps(3);
    assert!(
        !h.state().launcher.recent.iter().any(|r| r.program == missing),
        "{:?}",
        h.state().launcher.recent
    );

    let spec = faulty("normal");
    let mut h = Harness::builder()
        .with_size(SMALL)
        .build_eframe(move |cc| McpscopeApp::new(cc, launching(&spec)));
    step_until(&mut h, "the handshake answered", |app| {
        app.session()
            .inspection
            .as_ref()
            .is_some_and(|i| i.model.counts.results > 0)
    });
    assert!(h.state().launcher.recent.iter().any(|r| r.program == "python3"));
}

/// At 1024×700 the composer fits its panel in every mode: its widgets of a
/// set width (the tool and template pickers, the method and URI fields) used
/// to make the panel wider than the room it had, so it slid under the
/// timeline, which hid its left edge ("Frame", the mode buttons).
#[test]
fn at_1024x700_the_composer_fits_its_panel_in_every_mode() {
    let mut h = Harness::builder()
        .with_size(SMALL)
        .allow_missing_glyphs()
        .build_eframe(|cc| McpscopeApp::new(cc, launching(&everything())));
    step_until(&mut h, "tools from the server", |app| {
        !app.session().composer.lists.tools.is_empty() && !app.session().composer.lists.prompts.is_empty()
    });
    h.get_by_label("Compose").click();
    h.run_steps(3);
    for mode in ["Tool", "Prompt", "Resource", "Logging", "Listen", "Raw"] {
        h.get_by_label(mode).click();
        h.run_steps(4);
        composer_fits(&h, mode);
    }
    // A tool's form, and a prompt's arguments.
    for (mode, picker, choice) in [("Tool", "tool", "get-sum"), ("Prompt", "prompt", "args-prompt")] {
        h.get_by_label(mode).click();
        h.run_steps(3);
        h.get_by_role_and_label(Role::ComboBox, picker).click();
        h.run_steps(2);
        h.get_by_label_contains(choice).click_accesskit();
        h.run_steps(4);
        let picked = h.get_by_role_and_label(Role::ComboBox, picker).value();
        assert_eq!(picked.as_deref(), Some(choice), "the {picker} was chosen");
        composer_fits(&h, choice);
    }
}

/// The right panel starts right of the timeline and nothing in the window
/// runs past its right edge.
fn composer_fits(h: &Harness<'static, McpscopeApp>, shown: &str) {
    let timeline_right = h.get_by_role_and_label(Role::TextInput, "Filter").rect().right();
    for label in ["Frame", "Compose"] {
        let left = h.get_by_label(label).rect().left();
        assert!(
            left > timeline_right,
            "{shown}: {label:?} starts at x={left}, under the timeline (its filter ends at {timeline_right})"
        );
    }
    let beyond: Vec<String> = h
        .query_all_by(|n| {
            n.bounding_box()
                .is_some_and(|r| r.x1 > f64::from(SMALL[0]) + 1.0 && r.x0 < f64::from(SMALL[0]))
        })
        .map(|n| format!("{n:?} at {:?}", n.rect()))
        .collect();
    assert!(beyond.is_empty(), "{shown}: past the window's right edge: {beyond:#?}");
}
