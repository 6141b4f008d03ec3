//! Resource mode: read, subscribe and unsubscribe by URI, RFC 6570 resource
//! templates with suggestions for their variables, and the updates the
//! server announced.

use super::completion::Completions;
use super::lists::Lists;
use super::{ComposerAction, fitted};
use crate::inspection::Outgoing;
use crate::theme;
use egui::{RichText, Ui};
use mcpscope_core::protocol::methods;
use mcpscope_core::protocol::uri_template::UriTemplate;
use mcpscope_core::timeline::model::SessionModel;
use serde_json::{Value, json};
use std::collections::BTreeMap;

#[derive(Default)]
pub struct ResourceMode {
    pub uri: String,
    pub template: Option<String>,
    pub template_values: BTreeMap<String, String>,
}

fn request(method: &str, uri: &str) -> ComposerAction {
    ComposerAction::Send(Outgoing::Request {
        method: method.into(),
        params: Some(json!({ "uri": uri })),
        id: None,
    })
}

impl ResourceMode {
    /// The URI the chosen template expands to with the values typed so far.
    pub fn expanded_template(&self) -> Option<Result<String, String>> {
        let t = self.template.as_ref()?;
        Some(UriTemplate::parse(t).map_err(|e| e.to_string()).map(|tpl| {
            let values = self
                .template_values
                .iter()
                .filter(|(_, v)| !v.is_empty())
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect();
            tpl.expand(&values)
        }))
    }

    pub fn ui(
        &mut self,
        ui: &mut Ui,
        lists: &Lists,
        completions: Option<&mut Completions>,
        live: bool,
        actions: &mut Vec<ComposerAction>,
    ) {
        let mut read = None;
        if !lists.resources.is_empty() {
            egui::CollapsingHeader::new(format!("resources ({})", lists.resources.len()))
                .id_salt("composer-resources")
                .default_open(true)
                .show(ui, |ui| {
                    let row_h = ui.spacing().interact_size.y;
                    egui::ScrollArea::vertical()
                        .id_salt("composer-resource-list")
                        .max_height(160.0)
                        .show_rows(ui, row_h, lists.resources.len(), |ui, range| {
                            for r in &lists.resources[range] {
                                let uri = r.get("uri").and_then(Value::as_str).unwrap_or("?");
                                let name = r.get("name").and_then(Value::as_str).unwrap_or("");
                                // Cut to the panel's width (a long URI would widen the
                                // panel under the timeline); the whole one is on hover.
                                let row =
                                    egui::Button::selectable(self.uri == uri, format!("{name}  {uri}")).truncate();
                                if ui.add(row).on_hover_text(uri).clicked() {
                                    read = Some(uri.to_owned());
                                }
                            }
                        });
                });
        }
        if let Some(uri) = read {
            self.uri = uri;
        }
        if !lists.templates.is_empty() {
            self.template_ui(ui, lists, completions, live, actions);
        }
        ui.horizontal(|ui| {
            let l = ui.label("uri");
            ui.add(egui::TextEdit::singleline(&mut self.uri).desired_width(fitted(ui, 320.0)))
                .labelled_by(l.id);
        });
        let uri = self.uri.trim().to_owned();
        ui.horizontal_wrapped(|ui| {
            for (label, method) in [
                ("Read", methods::RESOURCES_READ),
                ("Subscribe", methods::RESOURCES_SUBSCRIBE),
                ("Unsubscribe", methods::RESOURCES_UNSUBSCRIBE),
            ] {
                if ui
                    .add_enabled(live && !uri.is_empty(), egui::Button::new(label))
                    .clicked()
                {
                    actions.push(request(method, &uri));
                }
            }
        });
    }

    fn template_ui(
        &mut self,
        ui: &mut Ui,
        lists: &Lists,
        mut completions: Option<&mut Completions>,
        live: bool,
        actions: &mut Vec<ComposerAction>,
    ) {
        let mut chosen = None;
        let label = ui.label("template");
        egui::ComboBox::from_id_salt("composer-template")
            .selected_text(self.template.clone().unwrap_or_else(|| "choose a template".into()))
            .width(fitted(ui, 300.0))
            .show_ui(ui, |ui| {
                for t in &lists.templates {
                    let tpl = t.get("uriTemplate").and_then(Value::as_str).unwrap_or("?");
                    if ui
                        .selectable_label(self.template.as_deref() == Some(tpl), tpl)
                        .clicked()
                    {
                        chosen = Some(tpl.to_owned());
                    }
                }
            })
            .response
            .labelled_by(label.id);
        if let Some(t) = chosen {
            self.template = Some(t);
            self.template_values.clear();
            if let Some(c) = completions.as_deref_mut() {
                c.reset();
            }
        }
        let Some(tpl) = self.template.clone() else { return };
        let parsed = match UriTemplate::parse(&tpl) {
            Err(e) => {
                ui.label(RichText::new(format!("not a valid URI template: {e}")).color(theme::ERROR));
                return;
            }
            Ok(p) => p,
        };
        for var in parsed.variables() {
            let name = var.name.clone();
            let field = format!("template:{tpl}:{name}");
            let value = self.template_values.entry(name.clone()).or_default();
            ui.horizontal(|ui| {
                let l = ui.label(&name);
                ui.add(egui::TextEdit::singleline(value).desired_width(fitted(ui, 220.0)))
                    .labelled_by(l.id);
            });
            let value = value.clone();
            let Some(c) = completions.as_deref_mut() else { continue };
            if live {
                let context = self
                    .template_values
                    .iter()
                    .filter(|(k, v)| **k != name && !v.is_empty())
                    .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                    .collect();
                if let Some(a) = c.ask(
                    &field,
                    json!({"type": "ref/resource", "uri": tpl}),
                    &name,
                    &value,
                    context,
                ) {
                    actions.push(a);
                }
            }
            if let Some(pick) = c.ui(ui, &field) {
                self.template_values.insert(name, pick);
            }
        }
        if let Some(Ok(uri)) = self.expanded_template() {
            ui.horizontal(|ui| {
                ui.weak("expands to");
                ui.monospace(&uri);
                if ui.small_button("use").clicked() {
                    self.uri = uri;
                }
            });
        }
    }

    /// `notifications/resources/updated` seen so far, by URI.
    pub fn updates_ui(&mut self, ui: &mut Ui, model: &SessionModel, live: bool, actions: &mut Vec<ComposerAction>) {
        if model.resource_updates.is_empty() {
            return;
        }
        ui.strong("Updated resources (notifications/resources/updated)");
        let mut updates: Vec<_> = model.resource_updates.iter().collect();
        updates.sort_by_key(|u| std::cmp::Reverse(u.1.last_row));
        for (uri, u) in updates.into_iter().take(50) {
            ui.horizontal(|ui| {
                ui.monospace(uri);
                ui.label(format!("{} update(s), last at row {}", u.count, u.last_row));
                if ui.add_enabled(live, egui::Button::new("Read").small()).clicked() {
                    actions.push(request(methods::RESOURCES_READ, uri));
                }
            });
        }
    }
}
