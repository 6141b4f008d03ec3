//! The modern era in the app: multi-round trips, tasks and listen streams.

use super::*;

#[test]
fn modern_server_multi_round_trip_answered_in_the_ui_and_grouped_on_the_timeline() {
    let spec = py_modern_server();
    let mut h = harness_any_glyphs(StartupArgs::default());
    type_command(&mut h, &spec);
    h.get_by_label("auto").click();
    h.step();
    h.get_by_label("▶ Launch").click();
    step_until(&mut h, "the modern era", |app| {
        app.session().inspection.as_ref().is_some_and(|i| {
            i.era().state == mcpscope_core::driver::EraState::Modern && !app.session().composer.lists.tools.is_empty()
        })
    });
    assert!(
        shows(&h, "server/discover answered"),
        "the era and why, above the timeline"
    );
    choose_tool(&mut h, "setup_project", "");
    h.get_by_role_and_label(Role::TextInput, "name").focus();
    h.step();
    h.get_by_role_and_label(Role::TextInput, "name").type_text("demo");
    h.step();
    h.get_by_label("Send tools/call").click_accesskit();
    // Round 1 (roots) is answered by the app; round 2 asks the user.
    step_until(&mut h, "the confirmation to answer", |app| {
        app.session().inspection.as_ref().is_some_and(|i| {
            i.questions()
                .iter()
                .any(|q| matches!(q.origin, mcpscope_core::driver::QuestionOrigin::Input { .. }))
        })
    });
    assert!(shows(&h, "The server asks: elicitation/create"));
    h.get_by_role_and_label(Role::CheckBox, "confirm").click_accesskit();
    h.step();
    h.step();
    h.get_by_label("Accept").click_accesskit();
    step_until(&mut h, "the conversation's final answer", |app| {
        let (Some(p), Some(i)) = (&app.session().composer.result.pending, &app.session().inspection) else {
            return false;
        };
        let head = i.current_id(&p.id);
        head != p.id
            && i.model
                .response_to(&head)
                .and_then(|r| i.model.store.get(r))
                .is_some_and(|r| r.text().contains("action=accept"))
    });
    h.step();
    h.step();
    assert!(shows(&h, "conversation 1:"), "the answer area says the chain moved on");
    assert!(h.query_all_by_label_contains("[conversation 1]").count() >= 4);
    h.state_mut().session_mut().inspection = None;
}

/// Launches a stdio server from the form in the given era (strict glyph checks).
pub(super) fn launch_in_era(
    spec: &mcpscope_core::transport::process::ServerSpec,
    era: &str,
) -> Harness<'static, McpscopeApp> {
    let mut h = harness(StartupArgs::default());
    type_command(&mut h, spec);
    h.get_by_label(era).click();
    h.step();
    h.get_by_label("▶ Launch").click();
    step_until(&mut h, "the modern era and tools", |app| {
        app.session().inspection.as_ref().is_some_and(|i| {
            i.era().state == mcpscope_core::driver::EraState::Modern && !app.session().composer.lists.tools.is_empty()
        })
    });
    h
}

#[test]
fn a_tool_runs_as_a_task_and_a_listen_stream_is_shown_in_the_composer() {
    let tasks = mcpscope_core::transport::process::ServerSpec::new(
        "python3",
        [repo()
            .join("tests/servers/modern_tasks_server.py")
            .display()
            .to_string()],
    );
    let mut h = launch_in_era(&tasks, "modern");
    choose_tool(&mut h, "slow_sum", "");
    h.get_by_label_contains("run as a task").click_accesskit();
    h.step();
    {
        let c = &mut h.state_mut().session_mut().composer;
        c.tool.args_text = r#"{"a": 40, "b": 2}"#.into();
        c.tool.args_text_changed();
    }
    h.step();
    h.get_by_label("Send tools/call").click_accesskit();
    step_until(&mut h, "the task's result", |app| {
        let (Some(p), Some(i)) = (&app.session().composer.result.pending, &app.session().inspection) else {
            return false;
        };
        i.task(&p.id).is_some_and(|t| t.task.is_some()) && !i.is_pending(&p.id)
    });
    h.step();
    h.step();
    assert!(shows(&h, "Task task-1"), "the task and its flavour are named");
    assert!(shows(&h, "working: step 1 of 3 ▶"), "status transitions are listed");
    assert!(shows(&h, "✔ Tool result"));
    assert!(
        shows(&h, "sum is 42"),
        "the inline result is shown as the tool's answer"
    );
    h.state_mut().session_mut().inspection = None;

    let mut h = launch_in_era(&py_modern_server(), "auto");
    h.get_by_label("Compose").click();
    h.step();
    h.get_by_label("Listen").click();
    h.step();
    h.get_by_label("Send subscriptions/listen").click_accesskit();
    step_until(&mut h, "the acknowledgement", |app| {
        app.session()
            .composer
            .listen
            .subscriptions
            .iter()
            .any(|s| s.acknowledged.is_some())
    });
    h.step();
    assert!(h.query_all_by_label_contains("✔ acknowledged").next().is_some());
    assert!(shows(&h, "notification(s) on this stream"));
    h.state_mut().session_mut().inspection = None;
}
