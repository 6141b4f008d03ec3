//! The composer: tool calls from their schemas, answers, elicitation and
//! sampling, prompts with completions, and replaying a frame.

use super::*;

#[test]
fn compose_a_tool_call_from_its_schema_and_see_the_result() {
    let mut h = launch_everything();
    wait_for_tool(&mut h, "echo");
    wait_for_tool(&mut h, "get-resource-links");
    choose_tool(&mut h, "echo", "Echo Tool");
    // A field's description is text to read, at the body size (it once rendered at ~7 px).
    let description = h.get_by_label("Message to echo").rect();
    let field = h.get_by_role_and_label(Role::TextInput, "message").rect();
    assert!(
        description.height() >= 0.6 * field.height() && description.height() >= 12.0,
        "description {description:?} beside field {field:?}"
    );
    // A default's mark goes on its field's row before the editor, which
    // takes the rest of the row (after it, the mark wrapped onto a line of its own).
    choose_tool(&mut h, "get-resource-links", "Get Resource Links Tool");
    let mark = h.get_by_label("(default)").rect();
    let editor = h.get_by_role_and_label(Role::TextInput, "count").rect();
    assert!(
        mark.center().y > editor.top() && mark.center().y < editor.bottom() && mark.right() <= editor.left(),
        "(default) {mark:?} before the editor {editor:?} on its row"
    );
    choose_tool(&mut h, "echo", "Echo Tool");
    h.get_by_role_and_label(Role::TextInput, "message").focus();
    h.step();
    h.get_by_role_and_label(Role::TextInput, "message")
        .type_text("hello from kittest");
    h.step();
    h.step();
    assert!(
        h.state().session().composer.tool.errors.is_empty(),
        "{:?}",
        h.state().session().composer.tool.errors
    );
    assert!(
        h.state()
            .session()
            .composer
            .tool
            .args_text
            .contains("hello from kittest"),
        "JSON view follows the form"
    );
    h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::Enter);
    step_until(&mut h, "the echo result", |app| answer_text(app).is_some());
    let text = answer_text(h.state()).unwrap();
    assert!(text.contains("Echo: hello from kittest"), "{text}");
    assert!(shows(&h, "✔ Tool result"));
    assert!(shows(&h, "Echo: hello from kittest"));
    // The same call is on the timeline, and in the history to send again.
    assert!(has_row(h.state(), |l| l.contains("(tools/call)")));
    assert_eq!(h.state().session().composer.history.len(), 1);
    h.get_by_label_contains("History (1)").click();
    h.step();
    h.get_by_label("Re-send").click();
    h.step();
    step_until(&mut h, "the second echo", |app| {
        app.session().composer.history.len() == 2
            && answer_text(app).is_some_and(|t| t.contains("Echo: hello from kittest"))
    });
    h.state_mut().session_mut().inspection = None;
}

#[test]
fn tool_failure_and_protocol_error_look_different() {
    let mut h = launch_everything();
    wait_for_tool(&mut h, "echo");
    h.get_by_label("Compose").click();
    h.step();
    h.get_by_label("Raw").click();
    h.step();
    // A call to a tool that does not exist.
    let c = &mut h.state_mut().session_mut().composer;
    c.raw.method = "tools/call".into();
    c.raw.params = r#"{"name": "no-such-tool", "arguments": {}}"#.into();
    h.step();
    h.get_by_label("Send").click();
    step_until(&mut h, "the answer to the unknown tool", |app| {
        answer_text(app).is_some()
    });
    let text = answer_text(h.state()).unwrap();
    if text.contains("\"error\"") {
        assert!(shows(&h, "✖ Protocol error"), "{text}");
    } else {
        assert!(shows(&h, "⚠ Tool failure (isError: true)"), "{text}");
    }
    // A method the server does not have is a protocol error, never a tool failure.
    h.state_mut().session_mut().composer.raw.method = "no/such/method".into();
    h.state_mut().session_mut().composer.raw.params.clear();
    h.step();
    h.get_by_label("Send").click();
    step_until(&mut h, "the -32601", |app| {
        answer_text(app).is_some_and(|t| t.contains("-32601"))
    });
    h.step();
    assert!(shows(&h, "✖ Protocol error -32601 (Method not found)"));
    // A raw line goes out exactly as typed, even when it is not JSON.
    h.get_by_label("raw line").click();
    h.step();
    h.state_mut().session_mut().composer.raw.line = "{this is not json".into();
    h.step();
    h.get_by_label("Send").click();
    step_until(&mut h, "the malformed line on the timeline", |app| {
        has_row(app, |l| l.contains("NOT JSON: {this is not json"))
    });
    h.state_mut().session_mut().inspection = None;
}

#[test]
fn elicitation_and_sampling_are_answered_by_the_user() {
    let mut h = launch_everything();
    // Registered only because the app declares elicitation and sampling.
    wait_for_tool(&mut h, "trigger-elicitation-request");
    wait_for_tool(&mut h, "trigger-sampling-request");
    choose_tool(
        &mut h,
        "trigger-elicitation-request",
        "Trigger Elicitation Request Tool",
    );
    h.get_by_label("Send tools/call").click_accesskit();
    step_until(&mut h, "the elicitation request", |app| {
        app.session()
            .inspection
            .as_ref()
            .is_some_and(|i| !i.questions().is_empty())
    });
    assert!(shows(&h, "The server asks: elicitation/create"));
    h.get_by_role_and_label(Role::TextInput, "name").focus();
    h.step();
    h.get_by_role_and_label(Role::TextInput, "name")
        .type_text("Ada Lovelace");
    h.step();
    h.step();
    h.get_by_label("Accept").click_accesskit();
    step_until(&mut h, "the tool result after accepting", |app| {
        answer_text(app).is_some_and(|t| t.contains("Name: Ada Lovelace"))
    });
    let text = answer_text(h.state()).unwrap();
    // Defaults from the requested schema were sent along (SEP-1034).
    assert!(text.contains("pet-1") || text.contains("Pet Type"), "{text}");

    choose_tool(&mut h, "trigger-sampling-request", "Trigger Sampling Request Tool");
    h.get_by_role_and_label(Role::MultilineTextInput, "prompt").focus();
    h.step();
    h.get_by_role_and_label(Role::MultilineTextInput, "prompt")
        .type_text("what is six times seven");
    h.step();
    h.get_by_label("Send tools/call").click_accesskit();
    step_until(&mut h, "the sampling request", |app| {
        app.session()
            .inspection
            .as_ref()
            .is_some_and(|i| !i.questions().is_empty())
    });
    assert!(shows(&h, "what is six times seven"));
    h.get_by_role_and_label(Role::MultilineTextInput, "reply").focus();
    h.step();
    h.get_by_role_and_label(Role::MultilineTextInput, "reply")
        .type_text("forty-two");
    h.step();
    h.get_by_label("Send reply").click_accesskit();
    step_until(&mut h, "the sampling result", |app| {
        answer_text(app).is_some_and(|t| t.contains("forty-two"))
    });
    h.state_mut().session_mut().inspection = None;
}

#[test]
fn images_render_and_prompt_arguments_get_completions() {
    let mut h = launch_everything();
    wait_for_tool(&mut h, "get-tiny-image");
    choose_tool(&mut h, "get-tiny-image", "Get Tiny Image Tool");
    h.get_by_label("Send tools/call").click_accesskit();
    step_until(&mut h, "the image result", |app| answer_text(app).is_some());
    h.step();
    h.step();
    assert!(shows(&h, "image (image/png)"), "the block is named by type");
    assert!(shows(&h, " px, "), "the PNG was decoded into a texture");

    // Prompts: the server offers completions; typing asks for suggestions.
    h.get_by_label("Prompt").click();
    h.step();
    h.get_by_label("Fetch prompts/list").click_accesskit();
    step_until(&mut h, "the prompts", |app| {
        app.session()
            .composer
            .lists
            .prompts
            .iter()
            .any(|p| p.name == "completable-prompt")
    });
    h.get_by_role_and_label(Role::ComboBox, "prompt").click();
    h.step();
    h.step();
    h.get_by_label("completable-prompt").click_accesskit();
    h.step();
    h.get_by_role_and_label(Role::TextInput, "department *").focus();
    h.step();
    h.get_by_role_and_label(Role::TextInput, "department *")
        .type_text("Eng");
    h.step();
    step_until(&mut h, "a suggestion", |app| {
        app.session().inspection.as_ref().is_some_and(|i| {
            i.model
                .store
                .iter()
                .any(|r| r.lane() == mcpscope_core::timeline::store::Lane::In && r.text().contains("\"Engineering\""))
        })
    });
    h.step();
    h.step();
    h.get_by_label("Engineering").click_accesskit();
    h.step();
    assert_eq!(
        h.state()
            .session()
            .composer
            .prompt
            .args
            .get("department")
            .map(String::as_str),
        Some("Engineering")
    );
    // The suggestions row is gone on the next frame: query the button after it.
    h.step();
    // The second argument's suggestions depend on the first (sent as context)
    // and are shown; with both fields filled nothing asks again and again.
    h.get_by_role_and_label(Role::TextInput, "name *").focus();
    h.step();
    h.get_by_role_and_label(Role::TextInput, "name *").type_text("A");
    let completions = |app: &McpscopeApp| {
        app.session().inspection.as_ref().map_or(0, |i| {
            i.model
                .store
                .iter()
                .filter(|r| {
                    r.lane() == mcpscope_core::timeline::store::Lane::Out && r.method() == Some("completion/complete")
                })
                .count()
        })
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while h.query_by_label("Alice").is_none() {
        assert!(Instant::now() < deadline, "no suggestion for name");
        h.step();
        std::thread::sleep(Duration::from_millis(20));
    }
    let asked = completions(h.state());
    assert_eq!(asked, 2, "one request per settled text of each field");
    // Give a storm time to show: three round trips to the server.
    for _ in 0..3 {
        let ping = h.state_mut().session_mut().inspection.as_mut().unwrap().send(
            mcpscope_app::inspection::Outgoing::Request {
                method: "ping".into(),
                params: None,
                id: None,
            },
        );
        step_until(&mut h, "the ping's answer", |app| {
            let i = app.session().inspection.as_ref().unwrap();
            ping.as_ref().is_some_and(|id| i.model.response_to(id).is_some())
        });
    }
    assert_eq!(completions(h.state()), asked, "no requests while nothing changed");
    h.get_by_label("Alice").click_accesskit();
    h.step();
    h.step();
    h.get_by_label("Send prompts/get").click_accesskit();
    step_until(&mut h, "the prompt", |app| {
        answer_text(app).is_some_and(|t| t.contains("Engineering") && t.contains("Alice"))
    });
    h.state_mut().session_mut().inspection = None;
}

/// #14: the tool picker can be searched.
#[test]
fn the_tool_picker_is_searchable() {
    let mut h = launch_everything();
    wait_for_tool(&mut h, "get-tiny-image");
    h.get_by_label("Compose").click();
    h.step();
    h.get_by_role_and_label(Role::ComboBox, "tool").click();
    h.step();
    h.step();
    let total = h.state().session().composer.lists.tools.len();
    assert!(shows(&h, &format!("{total} of {total} tools")));
    h.get_by_role_and_label(Role::TextInput, "search tools")
        .type_text("TINY image");
    h.step();
    h.step();
    assert!(
        shows(&h, &format!("1 of {total} tools")),
        "only the matching tool is listed"
    );
    h.get_by_label("get-tiny-image (Get Tiny Image Tool)").click_accesskit();
    h.step();
    h.step();
    assert_eq!(
        h.state().session().composer.tool.name.as_deref(),
        Some("get-tiny-image")
    );
    h.state_mut().session_mut().inspection = None;
}

/// #25 item 13: the answer area belongs to what sent it: another tool, or
/// another mode, does not show the last tool's answer.
#[test]
fn the_answer_area_follows_the_tool_and_the_mode() {
    let mut h = launch_everything();
    wait_for_tool(&mut h, "echo");
    wait_for_tool(&mut h, "get-resource-links");
    choose_tool(&mut h, "echo", "Echo Tool");
    h.get_by_role_and_label(Role::TextInput, "message").focus();
    h.step();
    h.get_by_role_and_label(Role::TextInput, "message")
        .type_text("stale or not");
    h.step();
    h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::Enter);
    step_until(&mut h, "the echo result", |app| answer_text(app).is_some());
    assert!(shows(&h, "Echo: stale or not"));
    choose_tool(&mut h, "get-resource-links", "Get Resource Links Tool");
    assert!(
        !shows(&h, "Echo: stale or not"),
        "another tool's form shows no stale answer"
    );
    assert!(shows(&h, "The answer to what you send shows here."));
    choose_tool(&mut h, "echo", "Echo Tool");
    assert!(
        shows(&h, "Echo: stale or not"),
        "back on the tool, its answer is there again"
    );
    h.get_by_label("Prompt").click();
    h.step();
    h.step();
    assert!(!shows(&h, "Echo: stale or not"), "nor in another mode");
    h.state_mut().session_mut().inspection = None;
}

/// A request frame sent again from its detail (Replay), and loaded into the
/// raw composer to edit first (Edit & replay), envelope left out.
#[test]
fn a_request_frame_is_replayed_and_loaded_into_the_raw_composer() {
    let mut h = harness(launching(&faulty("normal")));
    step_until(&mut h, "tools/list answered", |app| {
        handshake_done(app) && has_row(app, |l| l.starts_with("result #2 (tools/list)"))
    });
    let count = |app: &McpscopeApp| {
        app.session().inspection.as_ref().map_or(0, |i| {
            i.model
                .store
                .iter()
                .filter(|r| mcpscope_app::panels::timeline::row_label(&i.model.store, r).starts_with("tools/list #"))
                .count()
        })
    };
    assert_eq!(count(h.state()), 1);
    h.get_by_label_contains("tools/list #2").click();
    h.step();
    h.step();
    // With Follow tail off the new row lands out of sight: it is selected,
    // and the status line says where it went.
    h.state_mut().session_mut().timeline.follow_tail = false;
    h.get_by_label("Replay").click();
    step_until(&mut h, "the replayed tools/list answered", |app| {
        count(app) == 2 && has_row(app, |l| l.starts_with("result #3 (tools/list)"))
    });
    let replayed = {
        let app = h.state();
        let i = app.session().inspection.as_ref().unwrap();
        i.model
            .store
            .iter()
            .find(|r| mcpscope_app::panels::timeline::row_label(&i.model.store, r).starts_with("tools/list #3"))
            .map(|r| r.index())
            .unwrap()
    };
    assert_eq!(
        h.state().session().timeline.selected,
        Some(replayed),
        "the replayed request is selected"
    );
    assert!(
        h.state()
            .message
            .as_ref()
            .is_some_and(|(_, m)| m.contains(&format!("replayed as row {replayed}"))),
        "{:?}",
        h.state().message
    );
    // Edit & replay: the raw composer holds the request, ready to change.
    // (The timeline's row is the first of the labels naming it; the detail's header is another.)
    h.query_all_by_label_contains("tools/list #2").next().unwrap().click();
    h.step();
    h.step();
    h.get_by_label("Edit & replay").click();
    h.step();
    h.step();
    let app = h.state();
    assert_eq!(app.session().composer.mode, mcpscope_app::composer::Mode::Raw);
    assert_eq!(app.session().composer.raw.method, "tools/list");
    assert!(
        !app.session().composer.raw.params.contains("_meta"),
        "{}",
        app.session().composer.raw.params
    );
    assert!(shows(&h, "tools/list"));
    // Once the server has ended there is nothing to replay to: the button says so.
    h.state_mut().session_mut().inspection.as_mut().unwrap().stop();
    step_until(&mut h, "the server ended", |app| {
        app.session().inspection.as_ref().is_some_and(|i| !i.model.running())
    });
    h.state_mut().session_mut().right_tab = mcpscope_app::RightTab::Frame;
    h.query_all_by_label_contains("tools/list #2").next().unwrap().click();
    h.run_steps(3);
    assert!(
        h.get_by_label("Replay").accesskit_node().is_disabled(),
        "Replay is off for a session whose server has ended"
    );
    h.state_mut().session_mut().inspection = None;
}
