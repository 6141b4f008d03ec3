//! Tool mode: a form from the chosen tool's `inputSchema`, the `arguments`
//! JSON kept in sync with it both ways, progress and run-as-task options.

use super::lists::{Lists, ToolDef};
use super::{ComposerAction, fitted, send_row};
use crate::inspection::Outgoing;
use crate::panels::form_view;
use crate::theme;
use egui::{RichText, Ui};
use mcpscope_core::protocol::methods;
use mcpscope_core::protocol::tasks::Flavor;
use mcpscope_core::schema::form::{FieldError, Form};
use serde_json::{Value, json};

pub struct ToolMode {
    /// The chosen tool's name.
    pub name: Option<String>,
    pub form: Option<Form>,
    pub errors: Vec<FieldError>,
    /// The `arguments` JSON as text, kept in sync with the form both ways.
    pub args_text: String,
    pub args_error: Option<String>,
    /// Ask for progress notifications on tool calls.
    pub with_progress: bool,
    /// Ask the server to run tool calls as tasks (when it offers them).
    pub as_task: bool,
    /// Tool calls sent so far: each gets a fresh progress token.
    pub calls: usize,
    /// What the tool picker is filtered by.
    pub search: String,
    /// The picker was open last frame (its search field takes the focus
    /// only when it opens).
    picker_open: bool,
    /// What each tool's definition costs a model's context (o200k tokens),
    /// as the Statistics tab measured it.
    pub tokens: std::collections::HashMap<String, u64>,
}

impl Default for ToolMode {
    fn default() -> Self {
        Self {
            name: None,
            form: None,
            errors: Vec::new(),
            args_text: "{}".into(),
            args_error: None,
            with_progress: true,
            as_task: false,
            calls: 0,
            search: String::new(),
            picker_open: false,
            tokens: std::collections::HashMap::new(),
        }
    }
}

/// Whether a tool matches what was typed in the picker's search field (every
/// word, ignoring case, in its name, title or description).
pub fn tool_matches(t: &ToolDef, search: &str) -> bool {
    let hay = format!(
        "{} {} {}",
        t.name,
        t.title.as_deref().unwrap_or_default(),
        t.description.as_deref().unwrap_or_default()
    )
    .to_lowercase();
    search.to_lowercase().split_whitespace().all(|w| hay.contains(w))
}

impl ToolMode {
    pub fn def<'a>(&self, lists: &'a Lists) -> Option<&'a ToolDef> {
        lists.tool(self.name.as_ref()?)
    }

    /// Chooses a tool and builds its form.
    pub fn choose(&mut self, lists: &Lists, name: &str) {
        let Some(def) = lists.tool(name) else {
            return;
        };
        self.form = Some(Form::from_schema(&def.input_schema));
        self.name = Some(name.to_owned());
        self.form_changed();
    }

    /// The tool list was replaced: keep the form when the chosen tool is still there.
    pub fn lists_replaced(&mut self, lists: &Lists) {
        if self.name.as_ref().is_some_and(|n| lists.tool(n).is_none()) {
            self.name = None;
            self.form = None;
        }
    }

    /// Re-validates and rewrites the JSON view after a form edit.
    pub fn form_changed(&mut self) {
        if let Some(form) = &self.form {
            self.errors = form.validate();
            self.args_text = serde_json::to_string_pretty(&form.value()).unwrap_or_default();
            self.args_error = None;
        }
    }

    /// Loads the JSON view into the form after a text edit.
    pub fn args_text_changed(&mut self) {
        match serde_json::from_str::<Value>(&self.args_text) {
            Ok(v) => {
                self.args_error = if v.is_object() {
                    None
                } else {
                    Some("arguments must be a JSON object".into())
                };
                if let Some(form) = &mut self.form {
                    form.set_value(&v);
                    self.errors = form.validate();
                }
            }
            Err(e) => self.args_error = Some(format!("not JSON: {e}")),
        }
    }

    /// The `tools/call` params for the chosen tool, as the form has it.
    pub fn call_params(&self, lists: &Lists) -> Option<Value> {
        let def = self.def(lists)?;
        let arguments = self.form.as_ref().map_or_else(|| json!({}), Form::value);
        let mut params = json!({"name": def.name, "arguments": arguments});
        if self.with_progress {
            params["_meta"] = json!({ "progressToken": format!("mcpscope-{}", self.calls + 1) });
        }
        Some(params)
    }

    /// The `tools/call` request for the chosen tool.
    pub fn tool_call(&self, lists: &Lists) -> Option<Outgoing> {
        Some(Outgoing::Request {
            method: methods::TOOLS_CALL.into(),
            params: Some(self.call_params(lists)?),
            id: None,
        })
    }

    pub fn ui(
        &mut self,
        ui: &mut Ui,
        lists: &Lists,
        task_flavor: Option<Flavor>,
        live: bool,
        actions: &mut Vec<ComposerAction>,
    ) {
        if lists.tools.is_empty() {
            ui.weak("No tools listed yet: fetch tools/list.");
            return;
        }
        let current = self.name.clone().unwrap_or_else(|| "choose a tool".into());
        let mut chosen = None;
        let label = ui.label("tool");
        let search = &mut self.search;
        let selected = &self.name;
        let tokens = &self.tokens;
        let was_open = self.picker_open;
        let mut open = false;
        egui::ComboBox::from_id_salt("composer-tool")
            .selected_text(current)
            .width(fitted(ui, 260.0))
            .height(360.0)
            .show_ui(ui, |ui| {
                // Each opening starts a fresh search.
                if !was_open {
                    search.clear();
                }
                let l = ui.label("search tools");
                let field = ui
                    .add(egui::TextEdit::singleline(search).hint_text("name, title or description"))
                    .labelled_by(l.id);
                open = true;
                if !was_open {
                    field.request_focus();
                }
                let matching: Vec<&ToolDef> = lists.tools.iter().filter(|t| tool_matches(t, search)).collect();
                ui.weak(format!("{} of {} tools", matching.len(), lists.tools.len()));
                // A list as tall whatever the query: the popup keeps the size it
                // had last frame, so a list that shrank to nothing ("zzz") would
                // stay clipped to nothing when the query matches again.
                let row = ui.spacing().interact_size.y + ui.spacing().item_spacing.y;
                let list_height = (lists.tools.len() as f32 * row).min(280.0);
                egui::ScrollArea::vertical()
                    .id_salt("composer-tool-list")
                    .max_height(list_height)
                    .min_scrolled_height(list_height)
                    .auto_shrink([false, false])
                    .show(ui, |ui| {
                        for t in matching {
                            let mut text = match &t.title {
                                Some(title) if title != &t.name => format!("{} ({title})", t.name),
                                _ => t.name.clone(),
                            };
                            if t.app_only {
                                text.push_str("  [app only]");
                            } else if t.has_app {
                                text.push_str("  [App]");
                            }
                            // Greyed, still choosable: its schema can be read and a
                            // call shows how the server copes.
                            let problem = &t.header_problem;
                            let text = match problem {
                                Some(_) => RichText::new(format!("⚠ {text}")).weak(),
                                None => RichText::new(text),
                            };
                            // The context cost beside the name, not in it: the entry is still
                            // found by the tool's name.
                            let r = ui
                                .horizontal(|ui| {
                                    let r = ui.selectable_label(selected.as_ref() == Some(&t.name), text);
                                    if let Some(n) = tokens.get(&t.name) {
                                        ui.weak(format!("{n} tok"))
                                            .on_hover_text("its definition's tokens (o200k) in a model's context");
                                    }
                                    r
                                })
                                .inner;
                            let r = match problem {
                                Some(p) => r.on_hover_text(format!("2026-07-28 clients leave this tool out: {p}")),
                                None => r,
                            };
                            if r.clicked() {
                                chosen = Some(t.name.clone());
                                ui.close();
                            }
                        }
                    });
            })
            .response
            .labelled_by(label.id);
        self.picker_open = open;
        if let Some(name) = chosen {
            self.choose(lists, &name);
        }
        let Some(def) = self.def(lists).cloned() else { return };
        if let Some(p) = &def.header_problem {
            ui.add(
                egui::Label::new(
                    RichText::new(format!("⚠ 2026-07-28 clients leave this tool out: {p}")).color(theme::WARN),
                )
                .wrap(),
            );
        }
        if let Some(d) = &def.description {
            ui.add(egui::Label::new(RichText::new(d).weak()).wrap());
        }
        if let Some(n) = self.tokens.get(&def.name) {
            ui.weak(format!("its definition takes {n} tokens (o200k) of a model's context"))
                .on_hover_text("measured in the Statistics tab's Context cost");
        }
        if def.app_only {
            ui.add(
                egui::Label::new(
                    RichText::new(
                        "App only: its _meta.ui.visibility leaves out the model; a host lets only its View call it \
                         (here it can be called to see what the server does).",
                    )
                    .color(theme::WARN),
                )
                .wrap(),
            );
        } else if def.has_app {
            ui.add(
                egui::Label::new(RichText::new("Has an MCP App: running it opens its View in your browser.").weak())
                    .wrap(),
            );
        }
        if let Some(form) = &mut self.form {
            if let Some(problem) = form.schema_problem() {
                ui.label(RichText::new(format!("⚠ {problem}")).color(theme::WARN));
            }
            let changed = ui
                .push_id("tool-form", |ui| form_view::form_ui(ui, form, &self.errors))
                .inner;
            ui.horizontal(|ui| {
                if ui.button("Fill example").clicked() {
                    form.fill_sample();
                    self.errors.clear();
                    self.args_text.clear();
                }
            });
            if changed || self.args_text.is_empty() {
                self.form_changed();
            }
        }
        egui::CollapsingHeader::new("arguments as JSON")
            .id_salt("composer-args-json")
            .default_open(false)
            .show(ui, |ui| {
                let resp = ui.add(
                    egui::TextEdit::multiline(&mut self.args_text)
                        .code_editor()
                        .desired_rows(4)
                        .desired_width(f32::INFINITY),
                );
                if resp.changed() {
                    self.args_text_changed();
                }
                if let Some(e) = &self.args_error {
                    ui.label(RichText::new(e).color(theme::ERROR));
                }
            });
        let problems = self.errors.len() + usize::from(self.args_error.is_some());
        if problems > 0 {
            ui.label(
                RichText::new(format!(
                    "{problems} problem(s) with the arguments: sending anyway shows how the server copes"
                ))
                .color(theme::WARN),
            );
        }
        ui.checkbox(&mut self.with_progress, "ask for progress (send a progressToken)");
        if let Some(flavor) = task_flavor {
            ui.checkbox(&mut self.as_task, format!("run as a task ({})", flavor.label()))
                .on_hover_text("The server offers tasks for tools/call: the call returns a task, polled until it ends");
        }
        let send = send_row(ui, live, true, "Send tools/call");
        if ui
            .add_enabled(self.def(lists).is_some(), egui::Button::new("Save to collection…"))
            .on_hover_text("Write this call, with its arguments, as a step of a test file (mcpscope test runs it)")
            .clicked()
            && let Some(params) = self.call_params(lists)
        {
            let name = params["name"].as_str().unwrap_or_default().to_owned();
            actions.push(ComposerAction::SaveToCollection(
                format!("tools/call {name}"),
                mcpscope_core::collection::save::NewStep {
                    method: methods::TOOLS_CALL.into(),
                    params: Some(params),
                    notification: false,
                },
            ));
        }
        if send && let Some(params) = self.call_params(lists) {
            actions.push(if self.as_task && task_flavor.is_some() {
                ComposerAction::RunTask(params)
            } else {
                ComposerAction::Send(Outgoing::Request {
                    method: methods::TOOLS_CALL.into(),
                    params: Some(params),
                    id: None,
                })
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_with_a_broken_header_annotation_says_why() {
        let tool = |kind: &str| {
            ToolDef::from_json(&json!({"name": "q", "inputSchema":
                {"type": "object", "properties": {"f": {"type": kind, "x-mcp-header": "F"}}}}))
            .unwrap()
        };
        let p = tool("array").header_problem.expect("an array cannot be a header");
        assert!(p.contains("primitive-only"), "{p}");
        assert_eq!(tool("string").header_problem, None);
    }

    #[test]
    fn the_picker_matches_every_word_in_name_title_or_description() {
        let t = ToolDef {
            name: "get-weather".into(),
            title: Some("Weather".into()),
            description: Some("Forecast for a city".into()),
            input_schema: json!({}),
            output_schema: None,
            header_problem: None,
            app_only: false,
            has_app: false,
        };
        assert!(tool_matches(&t, ""));
        assert!(tool_matches(&t, "WEATHER city"));
        assert!(tool_matches(&t, "forecast"));
        assert!(!tool_matches(&t, "weather stock"));
    }

    /// #25 item 3: a query with no match, then one with matches, lists the
    /// matches (the popup went blank until reopened); reopening starts afresh.
    #[test]
    fn the_picker_lists_matches_after_a_query_that_had_none() {
        use egui::accesskit::Role;
        use egui_kittest::Harness;
        use egui_kittest::kittest::Queryable as _;
        let tool = |name: String| ToolDef {
            name,
            title: None,
            description: None,
            input_schema: json!({"type": "object"}),
            output_schema: None,
            header_problem: None,
            app_only: false,
            has_app: false,
        };
        let mut lists = Lists::default();
        lists.tools = (0..8)
            .map(|i| tool(format!("get-{i}")))
            .chain((0..8).map(|i| tool(format!("put-{i}"))))
            .collect();
        let mut h = Harness::builder().with_size([600.0, 800.0]).build_ui_state(
            |ui, m: &mut ToolMode| m.ui(ui, &lists, None, true, &mut Vec::new()),
            ToolMode::default(),
        );
        h.run_steps(2);
        h.get_by_role_and_label(Role::ComboBox, "tool").click();
        h.run_steps(2);
        h.get_by_role_and_label(Role::TextInput, "search tools")
            .type_text("zzz");
        h.run_steps(2);
        assert!(h.query_by_label_contains("0 of 16 tools").is_some());
        h.state_mut().search = "get".into();
        h.run_steps(3);
        assert!(h.query_by_label_contains("8 of 16 tools").is_some());
        // A pointer click: only a row really drawn in the popup takes it.
        h.get_by_label("get-3").click();
        h.run_steps(2);
        assert_eq!(h.state().name.as_deref(), Some("get-3"));
        h.get_by_role_and_label(Role::ComboBox, "tool").click();
        h.run_steps(2);
        assert!(h.state().search.is_empty(), "reopened with a fresh search");
        assert!(h.query_by_label_contains("16 of 16 tools").is_some());
    }
}
