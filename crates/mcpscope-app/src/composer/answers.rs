//! Answers the user gives to the server: elicitation forms (defaults applied;
//! Accept, Decline, Cancel) and sampling replies, for the server's requests
//! (legacy era) and the input requests of a multi round-trip chain (modern).

use super::{ChatMode, ComposerAction, fitted};
use crate::inspection::Inspection;
use crate::live_chat::sampling::{SamplingAnswer, Stage};
use crate::panels::form_view;
use crate::theme;
use egui::{RichText, Ui};
use mcpscope_core::driver::{Question, QuestionId, QuestionOrigin};
use mcpscope_core::protocol::methods;
use mcpscope_core::schema::form::{FieldError, Form};
use mcpscope_core::wire::message::ErrorObject;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The error MCP gives for a sampling request the user turned down.
const USER_REJECTED_SAMPLING: i64 = -1;

#[derive(Default)]
pub struct Answers {
    /// Elicitation forms being filled, by question.
    forms: Vec<(QuestionId, Form, Vec<FieldError>)>,
    /// Sampling replies being typed, by question.
    replies: BTreeMap<QuestionId, String>,
    /// Sampling requests a model answers, by question.
    pub models: BTreeMap<QuestionId, SamplingAnswer>,
}

fn origin_text(i: &Inspection, q: &Question) -> String {
    match &q.origin {
        QuestionOrigin::ServerRequest(id) => match i.question_row(q) {
            Some(row) => format!("{} #{id} (row {row})", q.method),
            None => format!("{} #{id}", q.method),
        },
        QuestionOrigin::Input { root, key } => format!("{} for #{root} (input \"{key}\")", q.method),
        QuestionOrigin::TaskInput { root, key } => format!("{} for the task of #{root} (input \"{key}\")", q.method),
    }
}

impl Answers {
    /// Moves the models answering sampling requests on; their turns, for
    /// the timeline and the capture.
    pub fn poll(&mut self) -> Vec<ComposerAction> {
        self.models
            .values_mut()
            .filter_map(SamplingAnswer::poll)
            .map(|m| ComposerAction::RecordModel(Box::new(m)))
            .collect()
    }

    pub fn ui(&mut self, ui: &mut Ui, i: &Inspection, chat: &ChatMode, actions: &mut Vec<ComposerAction>) {
        let questions = i.questions();
        self.forms.retain(|(id, _, _)| questions.iter().any(|q| q.id == *id));
        self.replies.retain(|id, _| questions.iter().any(|q| q.id == *id));
        self.models.retain(|id, _| questions.iter().any(|q| q.id == *id));
        for q in questions {
            ui.label(
                RichText::new(format!("‼ The server asks: {}", origin_text(i, q)))
                    .color(theme::WARN)
                    .strong(),
            );
            ui.push_id(format!("question-{}", q.id), |ui| match q.method.as_str() {
                methods::ELICITATION_CREATE => self.elicitation_ui(ui, q, actions),
                methods::SAMPLING_CREATE_MESSAGE => self.sampling_ui(ui, q, chat, actions),
                _ => {}
            });
        }
    }

    fn elicitation_ui(&mut self, ui: &mut Ui, q: &Question, actions: &mut Vec<ComposerAction>) {
        let message = q.params.get("message").and_then(Value::as_str).unwrap_or("");
        ui.add(egui::Label::new(message).wrap());
        let answer = |outcome| ComposerAction::Answer(q.id, outcome);
        if q.params.get("mode").and_then(Value::as_str) == Some("url") {
            let url = q.params.get("url").and_then(Value::as_str).unwrap_or("?");
            ui.label(format!(
                "The server asks you to open {url} (URL mode). mcpscope does not open it."
            ));
            ui.horizontal(|ui| {
                for action in ["accept", "decline", "cancel"] {
                    if ui.button(action).clicked() {
                        actions.push(answer(Ok(json!({ "action": action }))));
                    }
                }
            });
            return;
        }
        let pos = match self.forms.iter().position(|(id, _, _)| *id == q.id) {
            Some(p) => p,
            None => {
                let schema = q.params.get("requestedSchema").cloned().unwrap_or(json!({}));
                let mut form = Form::from_schema(&schema);
                form.apply_defaults();
                let errors = form.validate();
                self.forms.push((q.id, form, errors));
                self.forms.len() - 1
            }
        };
        let (_, form, errors) = &mut self.forms[pos];
        if form_view::form_ui(ui, form, errors) {
            *errors = form.validate();
        }
        ui.horizontal(|ui| {
            if ui.button("Accept").clicked() {
                actions.push(answer(Ok(json!({"action": "accept", "content": form.value()}))));
            }
            if ui.button("Decline").clicked() {
                actions.push(answer(Ok(json!({"action": "decline"}))));
            }
            if ui.button("Cancel").clicked() {
                actions.push(answer(Ok(json!({"action": "cancel"}))));
            }
            if !errors.is_empty() {
                ui.label(RichText::new(format!("{} problem(s)", errors.len())).color(theme::WARN));
            }
        });
    }

    fn sampling_ui(&mut self, ui: &mut Ui, q: &Question, chat: &ChatMode, actions: &mut Vec<ComposerAction>) {
        if self.models.contains_key(&q.id) {
            self.model_answer_ui(ui, q, chat, actions);
            return;
        }
        if let Some(system) = q.params.get("systemPrompt").and_then(Value::as_str) {
            ui.weak(format!("system: {system}"));
        }
        for m in q.params.get("messages").and_then(Value::as_array).into_iter().flatten() {
            let role = m.get("role").and_then(Value::as_str).unwrap_or("?");
            let blocks = match m.get("content") {
                Some(Value::Array(a)) => a.clone(),
                Some(b) => vec![b.clone()],
                None => vec![],
            };
            for b in blocks {
                let text = match b.get("type").and_then(Value::as_str) {
                    Some("text") => b.get("text").and_then(Value::as_str).unwrap_or("").to_owned(),
                    Some(other) => format!("[{other} block]"),
                    None => b.to_string(),
                };
                ui.add(egui::Label::new(format!("{role}: {text}")).wrap());
            }
        }
        if let Some(max) = q.params.get("maxTokens") {
            ui.weak(format!("maxTokens: {max}"));
        }
        let reply = self.replies.entry(q.id).or_default();
        let l = ui.label("reply");
        ui.add(
            egui::TextEdit::multiline(reply)
                .desired_rows(2)
                .desired_width(f32::INFINITY),
        )
        .labelled_by(l.id);
        let text = reply.clone();
        ui.horizontal(|ui| {
            if ui.button("Send reply").clicked() {
                actions.push(ComposerAction::Answer(
                    q.id,
                    Ok(json!({
                        "role": "assistant",
                        "content": {"type": "text", "text": text},
                        "model": "mcpscope-human",
                        "stopReason": "endTurn",
                    })),
                ));
                self.replies.remove(&q.id);
            }
            if ui.button("Reject").clicked() {
                actions.push(rejected(q.id));
                self.replies.remove(&q.id);
            }
        });
        match chat.sampling_model() {
            Ok((spec, key)) => {
                let label = format!("Ask the model ({}:{})", spec.provider, spec.model);
                if ui.button(label).clicked() {
                    self.models.insert(q.id, SamplingAnswer::new(spec, key, &q.params));
                }
            }
            Err(why) => {
                ui.weak(format!("A model can answer once the Chat mode names one ({why})."));
            }
        }
    }

    /// The two approvals: the request before it goes to the model, the
    /// answer before it goes to the server.
    fn model_answer_ui(&mut self, ui: &mut Ui, q: &Question, chat: &ChatMode, actions: &mut Vec<ComposerAction>) {
        let Some(m) = self.models.get_mut(&q.id) else { return };
        ui.label(RichText::new(format!("Answered by {}:{}", m.spec.provider, m.spec.model)).strong());
        let mut drop = false;
        let mut refuse = false;
        match &mut m.stage {
            Stage::Request { params, problem } => {
                approval_editor(
                    ui,
                    "1. The request the model will get (edit it if need be):",
                    params,
                    problem,
                );
                let mut send = false;
                ui.horizontal(|ui| {
                    send = ui.button("Send to the model").clicked();
                    refuse = ui.button("Refuse").clicked();
                    drop = ui.button("Answer by hand").clicked();
                });
                if send {
                    m.send(chat.wake.clone());
                }
            }
            Stage::Asking { text, notes, .. } => {
                notes_ui(ui, notes);
                let mut stop = false;
                ui.horizontal(|ui| {
                    ui.spinner();
                    ui.label("the model is answering");
                    stop = ui.button("Stop").clicked();
                });
                if !text.is_empty() {
                    ui.label(text.as_str());
                }
                if stop {
                    m.stop();
                }
            }
            Stage::Answer { result, problem, notes } => {
                notes_ui(ui, notes);
                approval_editor(
                    ui,
                    "2. The model's answer, to send to the server (edit it if need be):",
                    result,
                    problem,
                );
                let mut send = false;
                ui.horizontal(|ui| {
                    send = ui.button("Send this answer").clicked();
                    refuse = ui.button("Refuse").clicked();
                });
                if send && let Some(v) = m.approved() {
                    actions.push(ComposerAction::Answer(q.id, Ok(v)));
                    drop = true;
                }
            }
            Stage::Failed(why) => {
                ui.label(RichText::new(format!("The model could not answer: {why}")).color(theme::ERROR));
                let mut retry = false;
                ui.horizontal(|ui| {
                    retry = ui.button("Try again").clicked();
                    refuse = ui.button("Refuse").clicked();
                    drop = ui.button("Answer by hand").clicked();
                });
                if retry {
                    m.retry();
                }
            }
        }
        if refuse {
            actions.push(rejected(q.id));
            drop = true;
        }
        if drop {
            self.models.remove(&q.id);
        }
    }
}

/// What the provider will not see of the request.
fn notes_ui(ui: &mut Ui, notes: &[String]) {
    for n in notes {
        ui.label(RichText::new(format!("⚠ {n}")).color(theme::WARN));
    }
}

/// One of the two approvals: the JSON the person may edit, and why it
/// cannot go as it is.
fn approval_editor(ui: &mut Ui, title: &str, text: &mut String, problem: &Option<String>) {
    ui.label(title);
    ui.add(
        egui::TextEdit::multiline(text)
            .code_editor()
            .desired_rows(6)
            .desired_width(fitted(ui, 420.0)),
    );
    if let Some(p) = problem {
        ui.label(RichText::new(p.as_str()).color(theme::ERROR));
    }
}

/// The answer to a sampling request the person turned down.
fn rejected(q: QuestionId) -> ComposerAction {
    ComposerAction::Answer(
        q,
        Err(ErrorObject::new(
            USER_REJECTED_SAMPLING,
            "User rejected sampling request",
        )),
    )
}
