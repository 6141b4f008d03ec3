//! Answers the user gives to the server: elicitation forms (defaults applied;
//! Accept, Decline, Cancel) and sampling replies, for the server's requests
//! (legacy era) and the input requests of a multi round-trip chain (modern).

use super::ComposerAction;
use crate::inspection::Inspection;
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
    pub fn ui(&mut self, ui: &mut Ui, i: &Inspection, actions: &mut Vec<ComposerAction>) {
        let questions = i.questions();
        self.forms.retain(|(id, _, _)| questions.iter().any(|q| q.id == *id));
        self.replies.retain(|id, _| questions.iter().any(|q| q.id == *id));
        for q in questions {
            ui.label(
                RichText::new(format!("‼ The server asks: {}", origin_text(i, q)))
                    .color(theme::WARN)
                    .strong(),
            );
            ui.push_id(format!("question-{}", q.id), |ui| match q.method.as_str() {
                methods::ELICITATION_CREATE => self.elicitation_ui(ui, q, actions),
                methods::SAMPLING_CREATE_MESSAGE => self.sampling_ui(ui, q, actions),
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

    fn sampling_ui(&mut self, ui: &mut Ui, q: &Question, actions: &mut Vec<ComposerAction>) {
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
                actions.push(ComposerAction::Answer(
                    q.id,
                    Err(ErrorObject::new(
                        USER_REJECTED_SAMPLING,
                        "User rejected sampling request",
                    )),
                ));
                self.replies.remove(&q.id);
            }
        });
    }
}
