//! What was sent from the composer, newest first: re-send it, or load it
//! back to edit.

use super::ComposerAction;
use crate::inspection::Outgoing;
use egui::{RichText, Ui};
use mcpscope_core::collection::save::NewStep;
use mcpscope_core::wire::message::RequestId;
use serde_json::Value;

/// One thing sent from the composer.
#[derive(Clone, Debug, PartialEq)]
pub struct HistoryEntry {
    pub outgoing: Outgoing,
    /// e.g. `tools/call echo`
    pub label: String,
    pub id: Option<RequestId>,
}

impl HistoryEntry {
    pub fn new(outgoing: Outgoing, id: Option<RequestId>) -> Self {
        let label = describe(&outgoing);
        Self { outgoing, label, id }
    }

    /// Save to collection, for what a test file can send (not raw bytes).
    pub fn save_action(&self) -> Option<ComposerAction> {
        let (method, params, notification) = match &self.outgoing {
            Outgoing::Request { method, params, .. } => (method, params, false),
            Outgoing::Notification { method, params } => (method, params, true),
            Outgoing::Raw(_) => return None,
        };
        Some(ComposerAction::SaveToCollection(
            self.label.clone(),
            NewStep {
                method: method.clone(),
                params: params.clone(),
                notification,
            },
        ))
    }
}

/// How a request is named in lists: its method and the tool, prompt or resource.
pub fn describe(out: &Outgoing) -> String {
    match out {
        Outgoing::Request { method, params, .. } | Outgoing::Notification { method, params } => {
            let subject = params.as_ref().and_then(|p| {
                ["name", "uri"]
                    .iter()
                    .find_map(|k| p.get(*k).and_then(Value::as_str))
                    .map(str::to_owned)
            });
            let kind = if matches!(out, Outgoing::Notification { .. }) {
                " (notification)"
            } else {
                ""
            };
            match subject {
                Some(s) => format!("{method} {s}{kind}"),
                None => format!("{method}{kind}"),
            }
        }
        Outgoing::Raw(line) => format!(
            "raw: {}",
            mcpscope_core::text::ellipsize(&String::from_utf8_lossy(line), 60)
        ),
    }
}

#[derive(Default)]
pub struct History {
    pub entries: Vec<HistoryEntry>,
}

impl History {
    pub fn push(&mut self, outgoing: Outgoing, id: Option<RequestId>) {
        self.entries.push(HistoryEntry::new(outgoing, id));
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Draws the list (virtualised); returns an entry the user wants to edit.
    pub fn ui(&mut self, ui: &mut Ui, live: bool, actions: &mut Vec<ComposerAction>) -> Option<HistoryEntry> {
        let mut load = None;
        egui::CollapsingHeader::new(format!("History ({})", self.entries.len()))
            .id_salt("composer-history")
            .default_open(false)
            .show(ui, |ui| {
                let row_h = ui.spacing().interact_size.y;
                egui::ScrollArea::vertical()
                    .id_salt("composer-history-list")
                    .max_height(180.0)
                    .show_rows(ui, row_h, self.entries.len(), |ui, range| {
                        // Newest first.
                        for pos in range {
                            let Some(e) = self
                                .entries
                                .len()
                                .checked_sub(pos + 1)
                                .and_then(|i| self.entries.get(i))
                            else {
                                continue;
                            };
                            ui.horizontal(|ui| {
                                if ui.add_enabled(live, egui::Button::new("Re-send").small()).clicked() {
                                    let mut out = e.outgoing.clone();
                                    // A re-sent request gets a fresh id unless it was chosen on purpose.
                                    if let Outgoing::Request { id, .. } = &mut out
                                        && e.id.as_ref().is_some_and(|x| matches!(x, RequestId::Number(_)))
                                    {
                                        *id = None;
                                    }
                                    actions.push(ComposerAction::Send(out));
                                }
                                if ui.small_button("Edit").clicked() {
                                    load = Some(e.clone());
                                }
                                let save = e.save_action();
                                if ui
                                    .add_enabled(save.is_some(), egui::Button::new("Save…").small())
                                    .on_hover_text(
                                        "Save to collection: a step of a test file, with an assertion to start from",
                                    )
                                    .on_disabled_hover_text("Raw bytes are not a step a test file can send")
                                    .clicked()
                                    && let Some(a) = save
                                {
                                    actions.push(a);
                                }
                                let id = e.id.as_ref().map(|i| format!(" #{i}")).unwrap_or_default();
                                ui.label(RichText::new(format!("{}{id}", e.label)).monospace());
                            });
                        }
                    });
            });
        load
    }
}
