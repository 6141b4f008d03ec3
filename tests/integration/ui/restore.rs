//! What comes back after a restart: kept values and tabs.

use super::*;

/// #33: an environment value marked "keep" in the launcher is kept in the
/// store (the keyring, here a private file standing in for it), never in
/// the app's saved state, and is back in the recent entry after a restart.
#[test]
fn a_value_marked_to_keep_comes_back_after_a_restart() {
    use mcpscope_app::panels::launcher::EnvRow;
    use mcpscope_app::tokens::AppTokens;
    use mcpscope_core::config::token_store::TokenStore;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens.json");
    let mut h = harness(StartupArgs::default());
    h.state_mut().tokens = AppTokens::kept_in(TokenStore::open(&file).unwrap());
    h.state_mut().launcher.form.name = "keeper".into();
    // A server that answers: a launch goes into Recent once it has.
    h.state_mut().launcher.form.command = "python3".into();
    h.state_mut().launcher.form.args = format!("{} --mode normal", faulty_path());
    h.state_mut().launcher.form.env.push(EnvRow {
        key: "API_KEY".into(),
        value: "sk-live-kept".into(),
        ..EnvRow::default()
    });
    h.step();
    h.get_by_label("Environment (1)").click();
    h.step();
    h.step();
    h.get_by_label("keep").click();
    h.step();
    assert!(h.state().launcher.form.env[0].kept);
    h.get_by_label("▶ Launch").click();
    h.step();
    let deadline = Instant::now() + Duration::from_secs(10);
    while TokenStore::open(&file).unwrap().secret("launcher/keeper/env/API_KEY") != Some("sk-live-kept") {
        assert!(Instant::now() < deadline, "the value never reached the store");
        std::thread::sleep(Duration::from_millis(20));
    }
    step_until(&mut h, "the server answered and is in Recent", |app| {
        app.launcher.recent.iter().any(|r| r.name == "keeper")
    });
    let saved = h.state().saved_state();
    assert!(!serde_json::to_string(&saved).unwrap().contains("sk-live-kept"));
    drop(h);

    // The restart: the saved state and a store opened afresh.
    let mut h = harness(StartupArgs::default());
    h.state_mut().launcher.recent = saved;
    h.state_mut().tokens = AppTokens::kept_in(TokenStore::open(&file).unwrap());
    h.step();
    h.step();
    assert_eq!(h.state().launcher.recent[0].env[0].1, "sk-live-kept");
    h.get_by_label_contains("keeper — ").click();
    h.step();
    let form = &h.state().launcher.form;
    assert_eq!(form.env[0].value, "sk-live-kept");
    assert!(form.env[0].kept);
}

/// #33: tabs come back after a restart: the open capture with its filter
/// and selected row, the running server's tab with its recording and a
/// "Relaunch" offer (never started on its own), the same tab on screen;
/// Relaunch starts it.
#[test]
fn tabs_come_back_after_a_restart() {
    use mcpscope_app::restore::TabMemory;
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("c.jsonl");
    let out = crate::support::mcpscope_command()
        .args(["call", "--method", "tools/list", "--capture"])
        .arg(&cap)
        .args(["--", "python3", &faulty_path(), "--mode", "tool-error"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let mut h = launch_everything();
    h.state_mut().open_capture(cap.clone());
    step_until(&mut h, "the capture loaded in a second tab", |app| {
        app.tabs.len() == 2 && app.session().inspection.as_ref().is_some_and(|i| !i.loading())
    });
    h.get_by_label_contains("result #2 (tools/list)").click();
    h.step();
    h.state_mut()
        .session_mut()
        .timeline
        .filter
        .set_text("method == \"tools/list\"");
    h.step();
    h.step();
    let selected_seq = {
        let app = h.state();
        let i = app.session().inspection.as_ref().unwrap();
        i.model
            .store
            .get(app.session().timeline.selected.unwrap())
            .unwrap()
            .seq()
    };
    assert!(selected_seq.is_some());
    let saved = h.state().tab_memories();
    // As the app's state file keeps it.
    let saved: Vec<TabMemory> = serde_json::from_str(&serde_json::to_string(&saved).unwrap()).unwrap();
    assert_eq!(saved.len(), 2, "{saved:?}");
    assert!(saved[0].server.is_some() && saved[0].capture.is_some() && !saved[0].active);
    assert!(saved[1].server.is_none() && saved[1].capture.as_ref() == Some(&cap) && saved[1].active);
    drop(h);

    let mut h = harness_any_glyphs(StartupArgs::default());
    h.state_mut().restore_tabs(saved);
    step_until(&mut h, "the tabs back", |app| {
        !app.restoring_tabs() && app.session().inspection.as_ref().is_some_and(|i| !i.loading())
    });
    let app = h.state();
    assert_eq!(app.tabs.len(), 2);
    assert_eq!(app.active_tab, 1, "the capture's tab is on screen again");
    assert_eq!(app.session().timeline.filter.text, "method == \"tools/list\"");
    let i = app.session().inspection.as_ref().unwrap();
    let row = app.session().timeline.selected.expect("the selection is back");
    assert_eq!(i.model.store.get(row).unwrap().seq(), selected_seq);
    assert!(!i.model.running(), "nothing was started");
    assert!(!shows(&h, "when mcpscope closed"), "the capture's tab ran no server");

    // The server's tab: its recording, and the offer.
    h.state_mut().activate_tab(0);
    h.step();
    h.step();
    assert_eq!(h.state().active_tab, 0);
    assert!(!h.state().session().inspection.as_ref().unwrap().model.running());
    assert!(shows(&h, "when mcpscope closed"));
    h.get_by_label("Relaunch").click();
    h.step();
    step_until(&mut h, "the relaunched handshake", handshake_done);
    assert!(h.state().session().inspection.as_ref().unwrap().model.running());
    assert!(!shows(&h, "when mcpscope closed"), "the offer is gone once taken");
}
