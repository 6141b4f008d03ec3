//! #43: the composer's Chat mode against server-everything and the fake
//! model provider (tests/servers/fake_llm.py, which the official SDKs take
//! for the real thing): the model's tool call waits for the person, who
//! edits its arguments and lets it run, or refuses it; the call goes
//! through the session; each model turn is a row on the Model lifeline,
//! linked to the call it caused, and in the capture without the key.

use super::*;
use crate::model::FakeProvider;
use mcpscope_app::live_chat::sampling::{SamplingAnswer, Stage};
use mcpscope_app::live_chat::{Entry, ToolState};
use mcpscope_core::model::chat_loop::Outcome;
use mcpscope_core::timeline::store::Lane;

/// server-everything launched, the composer in Chat mode.
fn chat_mode() -> Harness<'static, McpscopeApp> {
    let mut h = launch_everything();
    wait_for_tool(&mut h, "echo");
    h.get_by_label("Compose").click();
    h.step();
    h.get_by_label("Chat").click();
    h.step();
    h
}

fn chat_ready(fake: &FakeProvider) -> Harness<'static, McpscopeApp> {
    let mut h = chat_mode();
    name_the_model(&mut h, fake);
    h
}

/// The Chat mode's model: the fake provider, with the key typed.
fn name_the_model(h: &mut Harness<'static, McpscopeApp>, fake: &FakeProvider) {
    let chat = &mut h.state_mut().session_mut().composer.chat;
    chat.model = "openai:fake-gpt".into();
    chat.base_url = format!("{}/v1", fake.url);
    chat.key = "test-key".into();
    h.step();
}

fn has_question(app: &McpscopeApp) -> bool {
    app.session()
        .inspection
        .as_ref()
        .is_some_and(|i| !i.questions().is_empty())
}

/// The model's work on the sampling request on screen.
fn sampling<'h>(h: &'h mut Harness<'static, McpscopeApp>) -> &'h mut SamplingAnswer {
    let composer = &mut h.state_mut().session_mut().composer;
    composer.answers.models.values_mut().next().expect("a model answering")
}

/// Answers the sampling request on screen with the model, through both
/// approvals: the request edited before it goes, the answer after.
fn answer_with_the_model(h: &mut Harness<'static, McpscopeApp>) {
    step_until(h, "the sampling request", has_question);
    press(h, "Ask the model (openai:fake-gpt)");
    h.step();
    h.step();
    assert!(shows(h, "1. The request the model will get"));
    // The person rewrites what the model is asked.
    let Stage::Request { params, .. } = &mut sampling(h).stage else {
        panic!("the request first")
    };
    let mut edited: serde_json::Value = serde_json::from_str(params).unwrap();
    edited["messages"][0]["content"]["text"] = serde_json::json!("edited request");
    *params = edited.to_string();
    h.step();
    press(h, "Send to the model");
    step_until(h, "the model's answer to approve", |app| {
        app.session()
            .composer
            .answers
            .models
            .values()
            .any(|m| matches!(m.stage, Stage::Answer { .. }))
    });
    h.step();
    assert!(shows(h, "2. The model's answer, to send to the server"));
    let Stage::Answer { result, .. } = &mut sampling(h).stage else {
        unreachable!()
    };
    assert!(
        result.contains("You said: edited request"),
        "the model got the edited request: {result}"
    );
    assert!(result.contains(r#""model": "fake-gpt""#), "{result}");
    // The person edits the answer before it goes back.
    *result = result.replace("You said: edited request", "checked by a person");
    h.step();
    press(h, "Send this answer");
}

fn send(h: &mut Harness<'static, McpscopeApp>, prompt: &str) {
    send_to(h, prompt, "Send to the model");
}

fn send_to(h: &mut Harness<'static, McpscopeApp>, prompt: &str, button: &str) {
    h.get_by_role_and_label(Role::MultilineTextInput, "prompt").focus();
    h.step();
    h.get_by_role_and_label(Role::MultilineTextInput, "prompt")
        .type_text(prompt);
    h.step();
    h.get_by_label(button).click();
}

/// A button of the composer (as a screen reader presses it: the transcript
/// grows below the settings, maybe out of view).
fn press(h: &mut Harness<'static, McpscopeApp>, label: &str) {
    h.get_by_label(label).click_accesskit();
}

fn asking(app: &McpscopeApp) -> bool {
    app.session().composer.chat.runs.first().is_some_and(|r| r.asking())
}

fn outcome(app: &McpscopeApp) -> Option<Outcome> {
    app.session().composer.chat.runs.first()?.outcome.clone()
}

#[test]
fn a_tool_call_is_approved_with_edited_arguments_and_drawn_from_the_model() {
    let fake = FakeProvider::start();
    let mut h = chat_ready(&fake);
    send(&mut h, r#"call echo {"message": "from the model"}"#);
    step_until(&mut h, "the call waiting for approval", asking);
    assert!(shows(&h, "Run it") && shows(&h, "Refuse"));
    // The person changes what the model asked for, then lets it run.
    {
        let run = h.state_mut().session_mut().composer.chat.runs.first_mut().unwrap();
        let (tool, arguments, _) = run.asking_arguments().unwrap();
        assert_eq!(tool, "echo");
        assert!(arguments.contains("from the model"), "{arguments}");
        *arguments = r#"{"message": "edited by the person"}"#.into();
    }
    // Brought into view when the model asked: clicked where it is drawn.
    h.step();
    h.step();
    h.get_by_label("Run it").click();
    step_until(&mut h, "the chat to end", |app| outcome(app).is_some());
    assert_eq!(outcome(h.state()), Some(Outcome::Done));
    let run = h.state().session().composer.chat.runs.first().unwrap();
    let answered = run.transcript.iter().find_map(|e| match e {
        Entry::Tool(t) => match &t.state {
            ToolState::Answered { text, is_error, .. } => Some((text.clone(), *is_error)),
            _ => None,
        },
        _ => None,
    });
    let (text, is_error) = answered.expect("the tool's answer in the transcript");
    assert!(text.contains("edited by the person") && !is_error, "{text}");
    let last_model = run.transcript.iter().rev().find_map(|e| match e {
        Entry::Model(m) => Some(m.text.clone()),
        _ => None,
    });
    assert!(
        last_model
            .as_deref()
            .is_some_and(|t| t.contains("The tool said") && t.contains("edited by the person")),
        "the model was given the result: {last_model:?}"
    );
    assert!(shows(&h, "The tool said"));
    // The timeline: two model turns on their own lane, the call linked to the first.
    step_until(&mut h, "both model turns on the timeline", |app| {
        let store = &app.session().inspection.as_ref().unwrap().model.store;
        store.iter().filter(|r| r.lane() == Lane::Model).count() == 2
    });
    let i = h.state().session().inspection.as_ref().unwrap();
    let store = &i.model.store;
    let turns: Vec<usize> = store
        .iter()
        .filter(|r| r.lane() == Lane::Model)
        .map(|r| r.index())
        .collect();
    let call = store
        .iter()
        .find(|r| {
            r.lane() == Lane::Out
                && r.method() == Some("tools/call")
                && String::from_utf8_lossy(r.raw()).contains("edited by the person")
        })
        .expect("the edited call went through the session");
    assert_eq!(call.caused_by_model(), Some(turns[0]));
    assert_eq!(store.get(turns[0]).unwrap().model_caused(), [call.index()]);
    let first = store.get(turns[0]).unwrap().model().unwrap().clone();
    assert_eq!(first.tool_calls, ["echo"]);
    assert!(first.input_tokens.is_some() && first.failed.is_none());
    assert!(
        shows(&h, "openai:fake-gpt calls echo"),
        "the turn's row on the timeline"
    );
    // The capture holds both turns and never the key.
    let capture = i.capture_path.clone().unwrap();
    let recorded = std::fs::read_to_string(&capture).unwrap();
    assert_eq!(
        recorded.matches(r#""event":"model""#).count(),
        2,
        "{}",
        capture.display()
    );
    assert!(!recorded.contains("test-key"));
    // The display filter reads model turns: the one that asked for a tool.
    h.state_mut()
        .session_mut()
        .timeline
        .filter
        .set_text("model.tool_calls > 0");
    step_until(&mut h, "the filter on the model's turns", |app| {
        let t = &app.session().timeline;
        t.index.len() == 1 && t.index.row_at(0) == Some(turns[0])
    });
    h.state_mut().session_mut().timeline.filter.set_text("");
    step_until(&mut h, "every row back on the timeline", |app| {
        let s = app.session();
        let t = &s.timeline;
        t.index.progress().is_none() && t.index.len() == s.inspection.as_ref().unwrap().model.store.len()
    });
    // Selecting the turn shows its record and the answer it assembles to. The
    // list scrolls as its rows come back, so the row is clicked by what it is,
    // not where it was drawn a frame ago.
    h.query_all_by_label_contains("openai:fake-gpt calls echo")
        .next()
        .expect("the turn's row")
        .click_accesskit();
    h.step();
    h.step();
    assert!(shows(&h, "a model turn: the request sent to the provider"));
}

#[test]
fn a_refused_call_is_said_to_the_model_and_stop_ends_a_chat() {
    let fake = FakeProvider::start();
    let mut h = chat_ready(&fake);
    send(&mut h, r#"call echo {"message": "nope"}"#);
    step_until(&mut h, "the call waiting for approval", asking);
    press(&mut h, "Refuse");
    step_until(&mut h, "the chat to end", |app| outcome(app).is_some());
    assert_eq!(outcome(h.state()), Some(Outcome::Done));
    let run = h.state().session().composer.chat.runs.first().unwrap();
    assert!(
        run.transcript
            .iter()
            .any(|e| matches!(e, Entry::Tool(t) if t.state == ToolState::Declined))
    );
    assert!(
        run.transcript
            .iter()
            .any(|e| matches!(e, Entry::Model(m) if m.text.contains("declined"))),
        "the model was told: {:?}",
        run.transcript
    );
    let store = &h.state().session().inspection.as_ref().unwrap().model.store;
    assert!(
        !store.iter().any(|r| r.method() == Some("tools/call")),
        "a refused call never reaches the server"
    );
    // A second chat, stopped while its call waits.
    h.state_mut().session_mut().composer.chat.prompt.clear();
    send(&mut h, r#"call echo {"message": "later"}"#);
    step_until(&mut h, "the call waiting for approval", asking);
    press(&mut h, "Stop");
    step_until(&mut h, "the chat stopped", |app| outcome(app).is_some());
    assert!(matches!(outcome(h.state()), Some(Outcome::ProviderFailed(why)) if why.contains("stopped")));
    assert!(shows(&h, "Send to the model"), "the chat can start again");
    // The provider's models, listed for the picker.
    press(&mut h, "List models");
    step_until(&mut h, "the models listed", |app| {
        !app.session().composer.chat.listed.is_empty()
    });
    assert_eq!(h.state().session().composer.chat.listed, ["fake-gpt"]);
}

/// A server's `sampling/createMessage` (legacy era) answered by the model
/// after the person approved (and edited) the request and the answer; the
/// model's turn is on the timeline.
#[test]
fn a_sampling_request_is_answered_by_the_model_after_two_approvals() {
    let fake = FakeProvider::start();
    let mut h = launch_everything();
    wait_for_tool(&mut h, "trigger-sampling-request");
    name_the_model(&mut h, &fake);
    choose_tool(&mut h, "trigger-sampling-request", "Trigger Sampling Request Tool");
    h.get_by_role_and_label(Role::MultilineTextInput, "prompt").focus();
    h.step();
    h.get_by_role_and_label(Role::MultilineTextInput, "prompt")
        .type_text("what is six times seven");
    h.step();
    h.get_by_label("Send tools/call").click_accesskit();
    answer_with_the_model(&mut h);
    step_until(&mut h, "the tool's result with the approved answer", |app| {
        answer_text(app).is_some_and(|t| t.contains("checked by a person"))
    });
    let text = answer_text(h.state()).unwrap();
    assert!(text.contains("fake-gpt"), "the model named in the result: {text}");
    let store = &h.state().session().inspection.as_ref().unwrap().model.store;
    assert_eq!(store.iter().filter(|r| r.lane() == Lane::Model).count(), 1);

    // Again, refused at the first approval: the server hears the spec's -1
    // and no model is asked.
    h.get_by_label("Send tools/call").click_accesskit();
    step_until(&mut h, "the second sampling request", has_question);
    press(&mut h, "Ask the model (openai:fake-gpt)");
    h.step();
    h.step();
    press(&mut h, "Refuse");
    step_until(&mut h, "the refusal answered", |app| {
        !has_question(app) && answer_text(app).is_some_and(|t| !t.contains("checked by a person"))
    });
    let frames: Vec<String> = h
        .state()
        .session()
        .inspection
        .as_ref()
        .unwrap()
        .model
        .store
        .iter()
        .filter(|r| r.lane() == Lane::Out)
        .map(|r| String::from_utf8_lossy(r.raw()).into_owned())
        .collect();
    assert!(
        frames
            .iter()
            .any(|f| f.contains("User rejected sampling request") && f.contains("-1")),
        "the refusal sent: {frames:?}"
    );
    let store = &h.state().session().inspection.as_ref().unwrap().model.store;
    assert_eq!(
        store.iter().filter(|r| r.lane() == Lane::Model).count(),
        1,
        "no model asked"
    );
}

/// The same for a 2026-07-28 server's `input_required` asking for sampling.
#[test]
fn a_modern_input_request_for_sampling_is_answered_by_the_model() {
    let fake = FakeProvider::start();
    let mut h = super::modern::launch_in_era(&py_modern_server(), "modern");
    name_the_model(&mut h, &fake);
    choose_tool(&mut h, "summarize", "");
    let tool = &mut h.state_mut().session_mut().composer.tool;
    tool.args_text = r#"{"text": "a long text"}"#.into();
    tool.args_text_changed();
    h.step();
    h.get_by_label("Send tools/call").click_accesskit();
    answer_with_the_model(&mut h);
    step_until(&mut h, "the conversation's final answer", |app| {
        let (Some(p), Some(i)) = (&app.session().composer.result.pending, &app.session().inspection) else {
            return false;
        };
        let head = i.current_id(&p.id);
        i.model
            .response_to(&head)
            .and_then(|r| i.model.store.get(r))
            .is_some_and(|r| r.text().contains("summary: checked by a person (model fake-gpt)"))
    });
}

/// One prompt to three models at once, each in its tab, then compared: the
/// one that never calls tools stands out, the cost shows only for the model
/// whose provider reported it.
#[test]
fn one_prompt_goes_to_several_models_and_they_are_compared() {
    let fake = FakeProvider::start();
    let mut h = chat_ready(&fake);
    {
        let chat = &mut h.state_mut().session_mut().composer.chat;
        chat.approve_each = false;
        chat.compare_with = vec![
            ("openai:fake-lazy".into(), format!("{}/v1", fake.url)),
            ("openai:fake-priced".into(), format!("{}/v1", fake.url)),
        ];
    }
    h.step();
    send_to(
        &mut h,
        r#"call echo {"message": "three at once"}"#,
        "Send to the 3 models",
    );
    step_until(&mut h, "all three runs to end", |app| {
        let chat = &app.session().composer.chat;
        chat.runs.len() == 3 && !chat.running()
    });
    assert!(shows(&h, "openai:fake-lazy") && shows(&h, "Compare"));
    press(&mut h, "Compare");
    h.step();
    h.step();
    assert!(shows(&h, "Tools: different"), "the lazy model called none");
    assert!(shows(&h, "openai:fake-lazy called no tool"));
    let chat = &h.state().session().composer.chat;
    let summaries: Vec<_> = chat.runs.iter().map(|r| r.summary()).collect();
    assert!(summaries.iter().all(|s| s.done));
    assert_eq!(summaries[0].tool_calls.len(), 1);
    assert!(summaries[1].tool_calls.is_empty());
    assert_eq!(summaries[0].cost, None);
    assert!(summaries[2].cost.is_some_and(|c| c > 0.0), "{:?}", summaries[2]);
    // Both tool calls went through the one session, each on its own id.
    let store = &h.state().session().inspection.as_ref().unwrap().model.store;
    let calls = store
        .iter()
        .filter(|r| r.lane() == Lane::Out && r.method() == Some("tools/call"))
        .count();
    assert_eq!(calls, 2);
    assert_eq!(store.iter().filter(|r| r.lane() == Lane::Model).count(), 5);
}

/// Records a chat with `mcpscope chat` against server-everything and the
/// fake provider, which is gone once this returns.
fn recorded_chat(dir: &std::path::Path) -> std::path::PathBuf {
    let fake = FakeProvider::start();
    let cap = dir.join("recorded-chat.jsonl");
    let server = everything();
    let out = mcpscope_command()
        .args([
            "chat",
            "--model",
            "openai:fake-gpt",
            "--base-url",
            &format!("{}/v1", fake.url),
        ])
        .args([
            "--prompt",
            r#"call echo {"message": "recorded"}"#,
            "--capture",
            cap.to_str().unwrap(),
        ])
        .arg("--")
        .arg(&server.program)
        .args(&server.args)
        .env("OPENAI_API_KEY", "test-key")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    cap
}

/// A recorded chat replayed in the app with no provider at all: the same
/// conversation against the server as it is now; a tool result that is not
/// what the recording got is pointed out.
#[test]
fn a_recorded_chat_is_replayed_without_a_provider() {
    let dir = tempfile::tempdir().unwrap();
    let cap = recorded_chat(dir.path());
    let mut h = chat_mode();
    press(&mut h, "Replay a recorded chat…");
    h.step();
    h.step();
    choose_in_picker(&mut h, &cap, "Open");
    step_until(&mut h, "the recording read", |app| {
        app.session().composer.chat.recording.is_some()
    });
    assert!(shows(&h, "2 model turn(s) served from it, no API call"));
    press(&mut h, "Replay the recorded chat");
    step_until(&mut h, "the replay to end", |app| outcome(app).is_some());
    assert_eq!(outcome(h.state()), Some(Outcome::Done));
    let run = h.state().session().composer.chat.runs.first().unwrap();
    assert_eq!(run.differs, 0);
    assert!(
        run.transcript
            .iter()
            .any(|e| matches!(e, Entry::Model(m) if m.text.contains("Echo: recorded")))
    );
    assert!(shows(&h, "Every tool result was the same as in the recording."));
    let store = &h.state().session().inspection.as_ref().unwrap().model.store;
    assert_eq!(
        store.iter().filter(|r| r.lane() == Lane::Model).count(),
        2,
        "replayed turns are recorded too"
    );

    // The recording's tool result, changed: the replay says so.
    let changed = dir.path().join("changed.jsonl");
    std::fs::write(
        &changed,
        std::fs::read_to_string(&cap)
            .unwrap()
            .replace("Echo: recorded", "Echo: before"),
    )
    .unwrap();
    h.state_mut().session_mut().composer.chat.load_recording(changed);
    step_until(&mut h, "the changed recording read", |app| {
        app.session()
            .composer
            .chat
            .recording
            .as_ref()
            .is_some_and(|(p, _)| p.ends_with("changed.jsonl"))
    });
    press(&mut h, "Replay the recorded chat");
    step_until(&mut h, "the second replay to end", |app| {
        app.session()
            .composer
            .chat
            .runs
            .first()
            .is_some_and(|r| r.differs > 0 && !r.running())
    });
    h.step();
    assert!(shows(&h, "1 tool result(s) differed from the recording."));
    assert!(shows(&h, "differs from the recording, which had: Echo: before"));
}

/// At 1024x700 the Chat mode fits the composer as it is: its rows wrap
/// rather than widen the panel over the timeline.
#[test]
fn the_chat_mode_fits_a_1024_window() {
    let mut h = chat_mode();
    h.state_mut().session_mut().composer.chat.compare_with =
        vec![("anthropic:claude-sonnet-4-5".into(), String::new())];
    h.set_size(egui::Vec2::new(1024.0, 700.0));
    h.run_steps(6);
    let row = h
        .query_all_by(|n| n.label().is_some_and(|l| l.starts_with("row ")))
        .next()
        .expect("a timeline row")
        .rect();
    let frame = h.get_by_label("Frame").rect();
    assert!(
        row.right() <= frame.left(),
        "the timeline {row:?} runs under the composer {frame:?}"
    );
    assert!(row.width() >= 420.0, "the timeline is {row:?} wide");
    let list = h.get_by_label("List models").rect();
    assert!(list.right() <= 1024.0 && list.left() >= frame.left() - 10.0, "{list:?}");
}
