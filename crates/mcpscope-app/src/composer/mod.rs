//! The request composer, one file per mode, each with its own state: tool
//! (forms from `inputSchema`), chat (a model over the tools), prompt,
//! resource, logging, listen and raw; the
//! history to re-send from; the answers the user gives to the server; the
//! roots offered; and the answer area. It only builds [`ComposerAction`]s;
//! the app carries them out through the inspection.

mod answers;
mod chat;
mod completion;
pub mod history;
mod listen;
mod lists;
mod prompt;
mod raw;
mod resource;
mod result;
mod roots;
mod skills;
mod tool;

pub use chat::ChatMode;
pub use history::{History, HistoryEntry};
pub use lists::{Lists, PromptArg, PromptDef, ToolDef};
pub use raw::{RawComposer, RawKind, parse_id};
pub use result::{Pending, progress_ui};
pub use roots::parse_roots;

use crate::inspection::{Inspection, Outgoing};
use crate::panels::log_view::LOG_LEVELS;
use crate::theme;
use egui::{Key, Modifiers, RichText, Ui};
use mcpscope_core::driver::QuestionId;
use mcpscope_core::protocol::methods;
use mcpscope_core::protocol::subscriptions::Filter;
use mcpscope_core::protocol::tasks::Flavor;
use mcpscope_core::timeline::model::SessionModel;
use mcpscope_core::wire::message::{ErrorObject, RequestId};
use serde_json::{Value, json};

/// What the composer asks the app to do.
#[derive(Clone, Debug, PartialEq)]
pub enum ComposerAction {
    Send(Outgoing),
    /// A `completion/complete` asked by a prompt or template field (not history).
    Complete(Outgoing),
    Cancel(RequestId),
    /// Answer a question from the server (elicitation, sampling).
    Answer(QuestionId, Result<Value, ErrorObject>),
    /// The user edited the roots offered to the server.
    RootsChanged(Vec<Value>),
    /// Run `tools/call` with these params as a task.
    RunTask(Value),
    CancelTask(RequestId),
    /// Open a `subscriptions/listen` stream.
    Listen(Filter),
    /// A `resources/read` of a skill's file, for the Skills mode (not history).
    ReadSkillFile(Outgoing),
    /// A proxied session: the raw composer's message injected by the proxy
    /// toward the server (`Out`) or the client.
    Inject {
        toward: mcpscope_core::wire::frame::Direction,
        bytes: Vec<u8>,
    },
    /// A `tools/call` the model of the chat's run N asked for: sent, its id
    /// given back to [`ChatMode::tool_sent`] (not history).
    ChatCall(usize, Outgoing),
    /// A model turn of the chat, for the timeline and the capture.
    RecordModel(Box<mcpscope_core::model::record::ModelExchange>),
    /// Choose a capture whose chat the Chat mode replays.
    PickChatRecording,
    /// Save this request (its label, what it sends) as a step of a test file.
    SaveToCollection(String, mcpscope_core::collection::save::NewStep),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Tool,
    Chat,
    Prompt,
    Resource,
    Skills,
    Logging,
    Listen,
    Raw,
}

impl Mode {
    const ALL: [Mode; 8] = [
        Mode::Tool,
        Mode::Chat,
        Mode::Prompt,
        Mode::Resource,
        Mode::Skills,
        Mode::Logging,
        Mode::Listen,
        Mode::Raw,
    ];

    fn label(self) -> &'static str {
        match self {
            Mode::Tool => "Tool",
            Mode::Chat => "Chat",
            Mode::Prompt => "Prompt",
            Mode::Resource => "Resource",
            Mode::Skills => "Skills",
            Mode::Logging => "Logging",
            Mode::Listen => "Listen",
            Mode::Raw => "Raw",
        }
    }

    /// The method whose capability decides whether this mode is offered
    /// (the one table in `protocol::capabilities` says which capability).
    fn gating_method(self) -> Option<&'static str> {
        match self {
            Mode::Logging => Some(methods::LOGGING_SET_LEVEL),
            _ => self.list_method(),
        }
    }

    /// The list request that fills this mode's picker.
    fn list_method(self) -> Option<&'static str> {
        match self {
            Mode::Tool | Mode::Chat => Some(methods::TOOLS_LIST),
            Mode::Prompt => Some(methods::PROMPTS_LIST),
            Mode::Resource => Some(methods::RESOURCES_LIST),
            Mode::Skills => Some(mcpscope_core::protocol::skills::SKILLS_LIST),
            _ => None,
        }
    }
}

/// A widget's width, but no more than the row has left: the panel grows to
/// its widest widget, and at 1024 px it has no room to grow (it would slide
/// under the timeline).
fn fitted(ui: &Ui, width: f32) -> f32 {
    width.min(ui.available_width())
}

/// Sends from anywhere in the composer: Ctrl+Enter, or Cmd+Enter on macOS.
const SEND: egui::KeyboardShortcut = egui::KeyboardShortcut::new(Modifiers::COMMAND, Key::Enter);

/// The send button with its shortcut; true when either was used.
fn send_row(ui: &mut Ui, live: bool, enabled: bool, label: &str) -> bool {
    let mut send = false;
    ui.horizontal(|ui| {
        let b = ui.add_enabled(live && enabled, egui::Button::new(label));
        send = b.clicked();
        // As this system spells it: "Ctrl+Enter", or "Cmd+Enter" on macOS.
        ui.weak(ui.ctx().format_shortcut(&SEND));
        if !live {
            ui.weak("(no live session)");
        }
    });
    // The shortcut sends from anywhere in the composer, even from a text field.
    if live && enabled && ui.input_mut(|i| i.consume_shortcut(&SEND)) {
        send = true;
    }
    send
}

pub struct ComposerPanel {
    pub mode: Mode,
    pub lists: Lists,
    pub tool: tool::ToolMode,
    pub chat: chat::ChatMode,
    pub prompt: prompt::PromptMode,
    pub resource: resource::ResourceMode,
    pub skills: skills::SkillsMode,
    pub log_level: String,
    pub listen: listen::ListenMode,
    pub raw: RawComposer,
    pub history: History,
    pub answers: answers::Answers,
    pub roots: roots::RootsEditor,
    pub result: result::ResultArea,
    completions: completion::Completions,
    /// Which flavour of tasks the session can use (set from the era).
    pub task_flavor: Option<Flavor>,
}

impl ComposerPanel {
    /// Raw mode, holding this request to edit and send (Edit & replay).
    pub fn load_raw_request(&mut self, method: &str, params: Option<&Value>) {
        self.mode = Mode::Raw;
        self.raw.kind = RawKind::Request;
        self.raw.method = method.to_owned();
        self.raw.params = params
            .map(|p| serde_json::to_string_pretty(p).unwrap_or_else(|_| p.to_string()))
            .unwrap_or_default();
        self.raw.id = String::new();
    }
}

impl Default for ComposerPanel {
    fn default() -> Self {
        Self {
            mode: Mode::Tool,
            lists: Lists::default(),
            tool: tool::ToolMode::default(),
            chat: chat::ChatMode::default(),
            prompt: prompt::PromptMode::default(),
            resource: resource::ResourceMode::default(),
            skills: skills::SkillsMode::default(),
            log_level: "info".into(),
            listen: listen::ListenMode::default(),
            raw: RawComposer::default(),
            history: History::default(),
            answers: answers::Answers::default(),
            roots: roots::RootsEditor::default(),
            result: result::ResultArea::default(),
            completions: completion::Completions::default(),
            task_flavor: None,
        }
    }
}

impl ComposerPanel {
    /// Forgets the session (keeps the history, to re-send to the next one,
    /// and the chat's settings).
    pub fn reset(&mut self) {
        let history = std::mem::take(&mut self.history);
        let chat = std::mem::take(&mut self.chat).settings_only();
        *self = ComposerPanel {
            history,
            chat,
            ..ComposerPanel::default()
        };
    }

    /// The same server again (Restart): what the user chose stays (mode,
    /// tool and its arguments, prompt, resource, raw message, roots, log
    /// level, history); what the old session answered goes.
    pub fn restart(&mut self) {
        let old = std::mem::take(self);
        *self = ComposerPanel {
            mode: old.mode,
            tool: old.tool,
            prompt: old.prompt,
            resource: old.resource,
            log_level: old.log_level,
            raw: old.raw,
            history: old.history,
            roots: old.roots,
            chat: old.chat.settings_only(),
            ..ComposerPanel::default()
        };
    }

    /// Picks up new list results; keeps the tool form while its tool is listed.
    pub fn sync(&mut self, model: &SessionModel) {
        let changes = self.lists.sync(model);
        if changes.tools_replaced {
            self.tool.lists_replaced(&self.lists);
            self.chat.tool_notes = None;
        }
        if changes.skills_changed {
            self.skills.lists_replaced(&self.lists);
        }
    }

    /// Moves the models on (the chat, the sampling answers) whatever the
    /// composer shows; returns what the app must do.
    pub fn poll(&mut self, i: &Inspection) -> Vec<ComposerAction> {
        let mut actions = self.chat.poll(i);
        actions.extend(self.answers.poll());
        actions
    }

    /// Chooses a tool and builds its form.
    pub fn choose_tool(&mut self, name: &str) {
        self.tool.choose(&self.lists, name);
    }

    /// The `tools/call` for the chosen tool, as the form has it.
    pub fn tool_call(&self) -> Option<Outgoing> {
        self.tool.tool_call(&self.lists)
    }

    /// Whether the composer needs another frame soon (a field's text is
    /// settling before suggestions are asked for).
    pub fn wants_repaint(&self) -> bool {
        self.completions.settling()
    }

    /// Records a sent message (the app calls this with the id it got).
    pub fn sent(&mut self, outgoing: Outgoing, id: Option<RequestId>) {
        let method = match &outgoing {
            Outgoing::Request { method, .. } => Some(method.clone()),
            Outgoing::Raw(line) => serde_json::from_slice::<Value>(line)
                .ok()
                .and_then(|v| v.get("method").and_then(Value::as_str).map(str::to_owned)),
            Outgoing::Notification { .. } => None,
        };
        if let (Some(id), Some(method)) = (&id, method)
            && method != mcpscope_core::protocol::subscriptions::LISTEN
        {
            // A listen stays open: its stream shows under Listen, not as an answer.
            let params = match &outgoing {
                Outgoing::Request { params, .. } => params.clone(),
                _ => None,
            };
            self.track(id.clone(), method, params.as_ref(), false);
        }
        self.history.push(outgoing, id);
    }

    /// A suggestion request went out under `id` (not kept in the history).
    pub fn completion_sent(&mut self, id: RequestId) {
        self.completions.sent(id);
    }

    /// A skill file's read went out under `id` (not kept in the history).
    pub fn skill_read_sent(&mut self, id: RequestId) {
        self.skills.sent(id);
    }

    /// A skill file's read could not be sent.
    pub fn skill_read_not_sent(&mut self, why: &str) {
        self.skills.not_sent(why);
    }

    /// A tool call run as a task went out under `id`.
    pub fn task_started(&mut self, params: Value, id: RequestId) {
        self.track(id.clone(), methods::TOOLS_CALL.into(), Some(&params), true);
        self.history.push(
            Outgoing::Request {
                method: methods::TOOLS_CALL.into(),
                params: Some(params),
                id: None,
            },
            Some(id),
        );
    }

    /// Shows the answer to `id` in the answer area.
    fn track(&mut self, id: RequestId, method: String, params: Option<&Value>, task: bool) {
        let output_schema = (method == methods::TOOLS_CALL)
            .then(|| params.and_then(|p| p.get("name")).and_then(Value::as_str))
            .flatten()
            .and_then(|n| self.lists.tool(n))
            .and_then(|t| t.output_schema.clone());
        if method == methods::TOOLS_CALL {
            self.tool.calls += 1;
        }
        let progress_token = params.and_then(|p| p.pointer("/_meta/progressToken")).cloned();
        // The tool matters only to the Tool mode's form (a raw tools/call is the Raw mode's).
        let tool = (method == methods::TOOLS_CALL && self.mode == Mode::Tool)
            .then(|| {
                params
                    .and_then(|p| p.get("name"))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .flatten();
        self.result.set(Pending {
            id,
            method,
            output_schema,
            progress_token,
            task,
            mode: self.mode,
            tool,
        });
    }

    /// Loads a past message into the composer to edit.
    pub fn load(&mut self, entry: &HistoryEntry) {
        match &entry.outgoing {
            Outgoing::Request {
                method,
                params: Some(p),
                ..
            } if method == methods::TOOLS_CALL
                && p.get("name")
                    .and_then(Value::as_str)
                    .is_some_and(|n| self.lists.tool(n).is_some()) =>
            {
                let name = p["name"].as_str().unwrap_or_default().to_owned();
                self.mode = Mode::Tool;
                self.choose_tool(&name);
                if let Some(form) = &mut self.tool.form {
                    form.set_value(p.get("arguments").unwrap_or(&json!({})));
                }
                self.tool.form_changed();
            }
            other => {
                self.mode = Mode::Raw;
                self.raw.load(other);
            }
        }
    }

    pub fn ui(&mut self, ui: &mut Ui, i: &Inspection) -> Vec<ComposerAction> {
        let model = &i.model;
        let live = model.running();
        self.sync(model);
        self.completions.poll(model, |id| i.failure(id).is_some());
        self.skills.poll(i);
        let mut actions = Vec::new();
        if !i.questions().is_empty() {
            self.answers.ui(ui, i, &self.chat, &mut actions);
            ui.separator();
        }
        let caps = model.capabilities().cloned().unwrap_or(Value::Null);
        ui.horizontal_wrapped(|ui| {
            for m in Mode::ALL {
                ui.selectable_value(&mut self.mode, m, m.label());
            }
        });
        let unadvertised = self
            .mode
            .gating_method()
            .and_then(|m| mcpscope_core::protocol::capabilities::unadvertised(&caps, m, model.negotiated_version()));
        let advertised = unadvertised.is_none();
        if model.capabilities().is_some()
            && let Some(why) = unadvertised
        {
            ui.label(
                RichText::new(format!("⚠ {why}: it may answer -32601 (you can still send on purpose)"))
                    .color(theme::WARN),
            );
        }
        if let Some(list) = self.mode.list_method() {
            self.list_buttons_ui(ui, list, live, &mut actions);
        }
        ui.separator();
        let completions = completion::server_completes(model).then_some(&mut self.completions);
        match self.mode {
            Mode::Tool => self.tool.ui(ui, &self.lists, self.task_flavor, live, &mut actions),
            Mode::Chat => {
                self.chat.ui(ui, &self.lists, i, live, &mut actions);
                if std::mem::take(&mut self.chat.wants_recording) {
                    actions.push(ComposerAction::PickChatRecording);
                }
            }
            Mode::Prompt => self.prompt.ui(ui, &self.lists, completions, live, &mut actions),
            Mode::Resource => {
                self.resource.ui(ui, &self.lists, completions, live, &mut actions);
                self.resource.updates_ui(ui, model, live, &mut actions);
            }
            Mode::Skills => self.skills.ui(ui, &self.lists, advertised, live, &mut actions),
            Mode::Logging => self.logging_ui(ui, live, &mut actions),
            Mode::Listen => self.listen.ui(ui, model, live, &mut actions),
            Mode::Raw => self.raw.ui(ui, live, i.intercept.is_some(), &mut actions),
        }
        ui.separator();
        // The chat shows its own answers (its calls are on the timeline too).
        if self.mode != Mode::Chat {
            let tool = (self.mode == Mode::Tool).then_some(self.tool.name.as_deref()).flatten();
            self.result.ui(ui, i, live, (self.mode, tool), &mut actions);
        }
        ui.separator();
        if let Some(e) = self.history.ui(ui, live, &mut actions) {
            self.load(&e);
        }
        self.roots.ui(ui, i.roots(), &mut actions);
        actions
    }

    fn list_buttons_ui(&mut self, ui: &mut Ui, list: &'static str, live: bool, actions: &mut Vec<ComposerAction>) {
        let request = |method: &str, params: Option<Value>| {
            ComposerAction::Send(Outgoing::Request {
                method: method.into(),
                params,
                id: None,
            })
        };
        ui.horizontal_wrapped(|ui| {
            if ui
                .add_enabled(live, egui::Button::new(format!("Fetch {list}")))
                .clicked()
            {
                actions.push(request(list, None));
            }
            if let Some(cursor) = self.lists.next_cursor.get(list) {
                let page = self.lists.pages.get(list).copied().unwrap_or(1);
                if ui
                    .add_enabled(live, egui::Button::new(format!("Load page {} (nextCursor)", page + 1)))
                    .clicked()
                {
                    actions.push(request(list, Some(json!({ "cursor": cursor }))));
                }
            }
            if self.mode == Mode::Resource
                && ui
                    .add_enabled(live, egui::Button::new("Fetch resources/templates/list"))
                    .clicked()
            {
                actions.push(request(methods::RESOURCES_TEMPLATES_LIST, None));
            }
        });
    }

    fn logging_ui(&mut self, ui: &mut Ui, live: bool, actions: &mut Vec<ComposerAction>) {
        let label = ui.label("level");
        egui::ComboBox::from_id_salt("composer-log-level")
            .selected_text(self.log_level.clone())
            .show_ui(ui, |ui| {
                for l in LOG_LEVELS {
                    ui.selectable_value(&mut self.log_level, l.to_owned(), l);
                }
            })
            .response
            .labelled_by(label.id);
        if send_row(ui, live, true, "Send logging/setLevel") {
            actions.push(ComposerAction::Send(Outgoing::Request {
                method: methods::LOGGING_SET_LEVEL.into(),
                params: Some(json!({ "level": self.log_level })),
                id: None,
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sending is Cmd+Enter on macOS and Ctrl+Enter elsewhere, and the hint
    /// beside the button says which.
    #[test]
    fn the_send_shortcut_is_each_systems_own() {
        let ctx = egui::Context::default();
        // The fonts (which tell whether ⌘ can be drawn) come with a first pass.
        ctx.run_ui(egui::RawInput::default(), |_| {}).textures_delta.clear();
        ctx.set_os(egui::os::OperatingSystem::Mac);
        let mac = ctx.format_shortcut(&SEND);
        // "⌘Return" where the font has the glyph, "Cmd+Enter" where not.
        assert!(
            (mac.contains('⌘') || mac.contains("Cmd")) && !mac.contains("Ctrl"),
            "{mac}"
        );
        ctx.set_os(egui::os::OperatingSystem::Windows);
        assert_eq!(ctx.format_shortcut(&SEND), "Ctrl+Enter");
    }

    fn composer_with_tool(schema: Value) -> ComposerPanel {
        let mut c = ComposerPanel::default();
        c.lists.tools = vec![ToolDef {
            name: "echo".into(),
            title: None,
            description: None,
            input_schema: schema,
            output_schema: Some(json!({"type": "object"})),
            header_problem: None,
            app_only: false,
            has_app: false,
        }];
        c.tool.with_progress = false;
        c.choose_tool("echo");
        c
    }

    #[test]
    fn tool_call_json_view_stays_in_sync_with_the_form() {
        let mut c = composer_with_tool(json!({
            "type": "object",
            "properties": {"message": {"type": "string"}, "n": {"type": "integer"}},
            "required": ["message"]
        }));
        c.tool.args_text = r#"{"message": "hi", "n": 3}"#.into();
        c.tool.args_text_changed();
        assert_eq!(c.tool.args_error, None);
        assert_eq!(
            c.tool_call(),
            Some(Outgoing::Request {
                method: "tools/call".into(),
                params: Some(json!({"name": "echo", "arguments": {"message": "hi", "n": 3}})),
                id: None,
            })
        );
        c.tool.args_text = "[1]".into();
        c.tool.args_text_changed();
        assert!(c.tool.args_error.as_deref().unwrap().contains("object"));
        c.tool.args_text = "{".into();
        c.tool.args_text_changed();
        assert!(c.tool.args_error.as_deref().unwrap().contains("not JSON"));
    }

    #[test]
    fn history_loads_back_into_the_form_or_the_raw_composer() {
        let mut c = composer_with_tool(json!({
            "type": "object",
            "properties": {"message": {"type": "string"}}
        }));
        let call = Outgoing::Request {
            method: "tools/call".into(),
            params: Some(json!({"name": "echo", "arguments": {"message": "again"}})),
            id: None,
        };
        c.sent(call.clone(), Some(RequestId::Number(4)));
        assert_eq!(
            c.result.pending.as_ref().unwrap().output_schema,
            Some(json!({"type": "object"}))
        );
        c.sent(
            Outgoing::Notification {
                method: "notifications/x".into(),
                params: Some(json!({"a": 1})),
            },
            None,
        );
        assert_eq!(c.history.len(), 2);
        assert_eq!(c.history.entries[0].label, "tools/call echo");
        c.tool.form = None;
        let first = c.history.entries[0].clone();
        c.load(&first);
        assert_eq!(c.mode, Mode::Tool);
        assert_eq!(c.tool_call(), Some(call));
        let second = c.history.entries[1].clone();
        c.load(&second);
        assert_eq!(c.mode, Mode::Raw);
        assert_eq!(c.raw.kind, RawKind::Notification);
        assert_eq!(c.raw.method, "notifications/x");
    }

    #[test]
    fn tool_calls_carry_a_progress_token_the_result_view_follows() {
        let mut c = composer_with_tool(json!({"type": "object"}));
        c.tool.with_progress = true;
        let out = c.tool_call().unwrap();
        let Outgoing::Request { params: Some(p), .. } = &out else {
            panic!("{out:?}")
        };
        assert_eq!(p["_meta"]["progressToken"], "mcpscope-1");
        c.sent(out, Some(RequestId::Number(9)));
        assert_eq!(
            c.result.pending.as_ref().unwrap().progress_token,
            Some(json!("mcpscope-1"))
        );
        assert_eq!(
            c.tool_call()
                .and_then(|o| match o {
                    Outgoing::Request { params, .. } => params,
                    _ => None,
                })
                .unwrap()["_meta"]["progressToken"],
            "mcpscope-2",
            "a fresh token per call"
        );
    }

    #[test]
    fn prompt_arguments_leave_out_empty_optionals() {
        let mut c = ComposerPanel::default();
        c.lists.prompts = vec![
            PromptDef::from_json(&json!({
                "name": "greet",
                "arguments": [{"name": "who", "required": true}, {"name": "style"}]
            }))
            .unwrap(),
        ];
        c.prompt.name = Some("greet".into());
        c.prompt.args.insert("who".into(), String::new());
        c.prompt.args.insert("style".into(), String::new());
        assert_eq!(
            c.prompt.prompt_get(&c.lists),
            Some(Outgoing::Request {
                method: "prompts/get".into(),
                params: Some(json!({"name": "greet", "arguments": {"who": ""}})),
                id: None
            })
        );
    }
}
