//! The Statistics tab: each table on a recorded server-everything session,
//! a row's filter applied to the timeline, the I/O graph's series, the
//! context cost beside the composer's tools, and a live session's numbers
//! moving while it runs.

use super::*;
use mcpscope_app::panels::stats_view::{StatsPanel, StatsTab};

fn open_recorded() -> Harness<'static, McpscopeApp> {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("everything.jsonl");
    std::fs::copy(repo().join("tests/vectors/server-everything-session.jsonl"), &cap).unwrap();
    // The capture outlives the directory's handle: the app reads it on a worker.
    std::mem::forget(dir);
    let mut h = harness(StartupArgs {
        open: Some(cap),
        ..StartupArgs::default()
    });
    step_until(&mut h, "the capture loaded", |app| {
        app.session().inspection.as_ref().is_some_and(|i| !i.loading())
    });
    h.get_by_label("Statistics").click();
    step_until(&mut h, "the statistics", |app| {
        stats(app).report.is_some() && !stats(app).busy()
    });
    h
}

fn stats(app: &McpscopeApp) -> &StatsPanel {
    &app.session().stats
}

fn show_tab(h: &mut Harness<'static, McpscopeApp>, tab: &str) {
    h.get_by_label(tab).click();
    h.step();
    h.step();
}

#[test]
fn each_table_shows_the_session_and_a_row_filters_the_timeline() {
    let mut h = open_recorded();
    assert_eq!(stats(h.state()).tab, StatsTab::Conversations);
    assert!(shows(&h, "mcp-servers/everything 2.0.0"), "a conversation row");
    let conversations = stats(h.state()).report.as_ref().unwrap().conversations.clone();
    assert_eq!(conversations.len(), 6);
    // Sorting by requests, most first, then applying the top row's filter.
    h.get_by_label("requests").click();
    h.step();
    h.step();
    h.get_all_by_label("filter").next().unwrap().click();
    step_until(&mut h, "the filter applied", |app| {
        !app.session().timeline.filter.text.is_empty()
    });
    let applied = h.state().session().timeline.filter.text.clone();
    assert!(conversations.iter().any(|c| c.filter() == applied), "{applied}");
    assert!(
        conversations
            .iter()
            .filter(|c| c.requests == 3)
            .any(|c| c.filter() == applied)
    );

    show_tab(&mut h, "Endpoints");
    assert!(shows(&h, "mcpscope 0.1.0"), "the client's row");

    show_tab(&mut h, "Response times");
    assert!(shows(&h, "initialize"));
    h.get_by_label("tool").click();
    h.step();
    h.step();
    assert!(shows(&h, "get-sum"), "rows per tool");
    h.get_by_label("prompt").click();
    h.step();
    h.step();
    assert!(!shows(&h, "get-sum"), "rows per prompt only");

    show_tab(&mut h, "Expert Info");
    step_until(&mut h, "the lint findings", |app| {
        !app.session().expert.findings.is_empty()
    });
    assert!(shows(&h, "tool-error-for-protocol-error"));
    h.get_all_by_label("filter").next().unwrap().click();
    step_until(&mut h, "the rule's filter", |app| {
        app.session().timeline.filter.text == r#"finding.rule == "tool-error-for-protocol-error""#
    });

    show_tab(&mut h, "Context cost");
    assert!(shows(&h, "gzip-file-as-resource"));
    assert!(shows(&h, "claude~"));
    // The composer's tool list carries the same figure.
    let tokens = &h.state().session().composer.tool.tokens;
    assert!(tokens.get("echo").is_some_and(|n| *n > 10), "{tokens:?}");
}

#[test]
fn the_io_graph_plots_a_series_per_filter_and_a_display_filter_narrows_everything() {
    let mut h = open_recorded();
    show_tab(&mut h, "I/O graph");
    assert!(shows(&h, "frames/s"));
    h.get_by_label("Add series").click();
    h.step();
    h.step();
    h.get_by_role_and_label(Role::TextInput, "series 1").focus();
    h.step();
    h.get_by_role_and_label(Role::TextInput, "series 1")
        .type_text(r#"kind == "iserror""#);
    h.step();
    h.get_by_label("Apply series").click();
    step_until(&mut h, "the series computed", |app| {
        stats(app)
            .report
            .as_ref()
            .is_some_and(|r| r.io.series.len() == 1 && r.io.series[0].expr == r#"kind == "iserror""#)
    });
    let io = stats(h.state()).report.as_ref().unwrap().io.clone();
    let errors: u64 = io.series[0].buckets.iter().map(|b| b.frames).sum();
    assert_eq!(errors, 2, "two isError answers in the recording");
    // Limited to the display filter: only tools/call is counted.
    h.state_mut()
        .session_mut()
        .timeline
        .filter
        .set_text(r#"method == "tools/call""#);
    h.get_by_label("Limit to display filter").click();
    step_until(&mut h, "numbers over the filter", |app| {
        stats(app)
            .report
            .as_ref()
            .is_some_and(|r| r.conversations.iter().all(|c| c.notifications_sent == 0))
    });
    let r = stats(h.state()).report.as_ref().unwrap();
    assert_eq!(r.conversations.iter().map(|c| c.requests).sum::<u64>(), 4);
}

#[test]
fn a_live_session_updates_while_it_runs() {
    let mut h = launch_everything();
    wait_for_tool(&mut h, "echo");
    h.get_by_label("Statistics").click();
    step_until(&mut h, "a running conversation", |app| {
        stats(app)
            .report
            .as_ref()
            .is_some_and(|r| r.conversations.first().is_some_and(|c| c.running && c.requests >= 2))
    });
    let before = stats(h.state()).report.as_ref().unwrap().conversations[0].requests;
    h.state_mut().session_mut().stats.tab = StatsTab::ResponseTimes;
    // A ping from the app: one more request, answered.
    h.get_by_label("Ping").click();
    step_until(&mut h, "the ping counted", |app| {
        stats(app).report.as_ref().is_some_and(|r| {
            r.conversations[0].requests > before && r.srt.iter().any(|s| s.method == "ping" && s.answered == 1)
        })
    });
    assert!(shows(&h, "ping"));
}
