//! Prompt mode: `prompts/get` with the prompt's arguments, and suggestions
//! from `completion/complete` while typing.

use super::completion::Completions;
use super::lists::Lists;
use super::{ComposerAction, fitted, send_row};
use crate::inspection::Outgoing;
use crate::theme;
use egui::{RichText, Ui};
use mcpscope_core::protocol::methods;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

#[derive(Default)]
pub struct PromptMode {
    pub name: Option<String>,
    pub args: BTreeMap<String, String>,
}

impl PromptMode {
    /// The `prompts/get` for the chosen prompt; an empty optional argument
    /// is left out rather than sent as "".
    pub fn prompt_get(&self, lists: &Lists) -> Option<Outgoing> {
        let name = self.name.as_ref()?;
        let def = lists.prompt(name);
        let mut arguments = Map::new();
        for (k, v) in &self.args {
            let required = def.is_some_and(|d| d.arguments.iter().any(|a| &a.name == k && a.required));
            if !v.is_empty() || required {
                arguments.insert(k.clone(), Value::String(v.clone()));
            }
        }
        Some(Outgoing::Request {
            method: methods::PROMPTS_GET.into(),
            params: Some(json!({"name": name, "arguments": arguments})),
            id: None,
        })
    }

    pub fn ui(
        &mut self,
        ui: &mut Ui,
        lists: &Lists,
        completions: Option<&mut Completions>,
        live: bool,
        actions: &mut Vec<ComposerAction>,
    ) {
        if lists.prompts.is_empty() {
            ui.weak("No prompts listed yet: fetch prompts/list.");
            return;
        }
        let mut chosen = None;
        let label = ui.label("prompt");
        egui::ComboBox::from_id_salt("composer-prompt")
            .selected_text(self.name.clone().unwrap_or_else(|| "choose a prompt".into()))
            .width(fitted(ui, 260.0))
            .show_ui(ui, |ui| {
                for p in &lists.prompts {
                    if ui
                        .selectable_label(self.name.as_ref() == Some(&p.name), &p.name)
                        .clicked()
                    {
                        chosen = Some(p.name.clone());
                    }
                }
            })
            .response
            .labelled_by(label.id);
        let mut completions = completions;
        if let Some(name) = chosen {
            self.name = Some(name);
            self.args.clear();
            if let Some(c) = completions.as_deref_mut() {
                c.reset();
            }
        }
        let Some(def) = self.name.as_ref().and_then(|n| lists.prompt(n)).cloned() else {
            return;
        };
        if let Some(d) = &def.description {
            ui.add(egui::Label::new(RichText::new(d).weak()).wrap());
        }
        let mut missing = Vec::new();
        for arg in &def.arguments {
            let value = self.args.entry(arg.name.clone()).or_default();
            let field = format!("prompt:{}:{}", def.name, arg.name);
            ui.horizontal(|ui| {
                let text = if arg.required {
                    format!("{} *", arg.name)
                } else {
                    arg.name.clone()
                };
                let l = ui.label(text);
                ui.add(egui::TextEdit::singleline(value).desired_width(fitted(ui, 220.0)))
                    .labelled_by(l.id);
            });
            if let Some(d) = &arg.description {
                ui.weak(d);
            }
            if arg.required && value.is_empty() {
                missing.push(arg.name.clone());
            }
            let value = value.clone();
            let Some(c) = completions.as_deref_mut() else { continue };
            if live {
                let context: Map<String, Value> = self
                    .args
                    .iter()
                    .filter(|(k, v)| *k != &arg.name && !v.is_empty())
                    .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                    .collect();
                if let Some(a) = c.ask(
                    &field,
                    json!({"type": "ref/prompt", "name": def.name}),
                    &arg.name,
                    &value,
                    context,
                ) {
                    actions.push(a);
                }
            }
            if let Some(pick) = c.ui(ui, &field) {
                self.args.insert(arg.name.clone(), pick);
            }
        }
        if !missing.is_empty() {
            ui.label(RichText::new(format!("required: {}", missing.join(", "))).color(theme::WARN));
        }
        if send_row(ui, live, true, "Send prompts/get")
            && let Some(out) = self.prompt_get(lists)
        {
            actions.push(ComposerAction::Send(out));
        }
    }
}
