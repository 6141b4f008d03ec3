//! Chat mode: a model in the loop over the session's tools. The model
//! (PROVIDER:MODEL, any OpenAI-compatible server or Anthropic's Messages
//! API) is offered the tools ticked here; its calls run through the
//! session ([`crate::live_chat`]), each approved first when asked, with
//! its arguments editable; its text shows as it streams.

use super::lists::Lists;
use super::{ComposerAction, fitted, send_row};
use crate::inspection::Inspection;
use crate::job::{Job, Wake};
use crate::live_chat::{ChatEffect, ChatRun, Entry, ToolState};
use crate::panels::timeline::format_latency;
use crate::theme::{self, RowKindStyle as _};
use egui::{RichText, Ui};
use mcpscope_core::chat::key::{self, FoundKey};
use mcpscope_core::model::chat_loop::{Approval, ChatLoop};
use mcpscope_core::model::provider::ModelSpec;
use mcpscope_core::model::request::{self, Conversation, Settings};
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::Duration;

/// A chat about to start: its key is being looked up (the keyring may
/// take a moment, off the UI thread).
struct Starting {
    spec: ModelSpec,
    tools: Vec<Value>,
    prompt: String,
    key: Job<Result<FoundKey, String>>,
}

pub struct ChatMode {
    /// PROVIDER:MODEL.
    pub model: String,
    /// The provider's API base when it is not the provider's own.
    pub base_url: String,
    /// A key typed here (masked); empty: the provider's variable or the keyring.
    pub key: String,
    /// Keep the typed key in the keyring for this provider.
    pub keep_key: bool,
    pub system: String,
    pub temperature: Option<f64>,
    pub max_tokens: u32,
    pub max_round_trips: usize,
    /// Ask before each tool call (with its arguments editable).
    pub approve_each: bool,
    /// Tools not offered to the model (all are, at first).
    pub unticked: BTreeSet<String>,
    pub prompt: String,
    pub run: Option<ChatRun>,
    starting: Option<Starting>,
    listing: Option<Job<Result<Vec<String>, String>>>,
    /// What the provider's models endpoint listed.
    pub listed: Vec<String>,
    /// Why the last start or listing failed.
    pub problem: Option<String>,
    /// Wakes the UI when a turn streams (the app gives it).
    pub wake: Option<Wake>,
}

impl Default for ChatMode {
    fn default() -> Self {
        Self {
            model: "openai:gpt-4.1-mini".into(),
            base_url: String::new(),
            key: String::new(),
            keep_key: false,
            system: String::new(),
            temperature: None,
            max_tokens: 1024,
            max_round_trips: 8,
            approve_each: true,
            unticked: BTreeSet::new(),
            prompt: String::new(),
            run: None,
            starting: None,
            listing: None,
            listed: Vec::new(),
            problem: None,
            wake: None,
        }
    }
}

impl ChatMode {
    /// The settings (model, prompt, limits, tools left out) without the
    /// conversation, a key typed, or work in flight: for the next session.
    pub fn settings_only(self) -> ChatMode {
        ChatMode {
            model: self.model,
            base_url: self.base_url,
            system: self.system,
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            max_round_trips: self.max_round_trips,
            approve_each: self.approve_each,
            unticked: self.unticked,
            prompt: self.prompt,
            listed: self.listed,
            wake: self.wake,
            ..ChatMode::default()
        }
    }

    /// The model that answers the server's sampling requests: this mode's,
    /// with the key typed here (`None`: the variable or the keyring).
    pub fn sampling_model(&self) -> Result<(ModelSpec, Option<String>), String> {
        let key = Some(self.key.trim().to_owned()).filter(|k| !k.is_empty());
        Ok((self.spec()?, key))
    }

    fn spec(&self) -> Result<ModelSpec, String> {
        let base = Some(self.base_url.trim()).filter(|b| !b.is_empty());
        ModelSpec::parse(self.model.trim(), base).map_err(|e| e.to_string())
    }

    /// The key typed here, or a worker that finds it (variable, keyring).
    fn key_job(&self, spec: &ModelSpec) -> Job<Result<FoundKey, String>> {
        let typed = self.key.trim().to_owned();
        let keep = self.keep_key;
        let spec = spec.clone();
        Job::spawn("model-key", self.wake.clone(), move || {
            if typed.is_empty() {
                return key::find_key_here(&spec, None);
            }
            if keep {
                key::store_key(&spec, &typed).map_err(|e| format!("keeping the key: {e}"))?;
            }
            Ok(FoundKey {
                key: Some(typed),
                source: key::KeySource::Keyring,
            })
        })
    }

    /// Starts a chat with `prompt` over `tools` (the server's `tools/list`
    /// entries; the unticked ones are left out).
    pub fn start(&mut self, tools: Vec<Value>) {
        let spec = match self.spec() {
            Ok(s) => s,
            Err(e) => {
                self.problem = Some(e);
                return;
            }
        };
        let tools = tools
            .into_iter()
            .filter(|t| {
                t.get("name")
                    .and_then(Value::as_str)
                    .is_some_and(|n| !self.unticked.contains(n))
            })
            .collect();
        self.problem = None;
        self.run = None;
        self.starting = Some(Starting {
            key: self.key_job(&spec),
            spec,
            tools,
            prompt: self.prompt.trim().to_owned(),
        });
    }

    /// Moves the chat on (the app calls this every frame, whatever mode is
    /// on screen); returns what the app must do.
    pub fn poll(&mut self, i: &Inspection) -> Vec<ComposerAction> {
        if let Some(s) = &mut self.starting
            && let Some(found) = s.key.poll()
        {
            let s = self.starting.take().expect("polled above");
            match found.map_err(|e| e.to_string()).and_then(|r| r) {
                Ok(found) => self.begin(s, found.key),
                Err(e) => self.problem = Some(e),
            }
        }
        if let Some(job) = &mut self.listing
            && let Some(listed) = job.poll()
        {
            self.listing = None;
            match listed.map_err(|e| e.to_string()).and_then(|r| r) {
                Ok(models) => self.listed = models,
                Err(e) => self.problem = Some(format!("listing the models: {e}")),
            }
        }
        let Some(run) = &mut self.run else {
            return Vec::new();
        };
        effects_to_actions(run.poll(i))
    }

    fn begin(&mut self, s: Starting, key: Option<String>) {
        let mut conversation = Conversation {
            system: Some(self.system.trim().to_owned()).filter(|t| !t.is_empty()),
            ..Conversation::default()
        };
        conversation.user(s.prompt.clone());
        let settings = Settings {
            temperature: self.temperature,
            max_tokens: self.max_tokens,
        };
        // The person approves each call in the panel; the loop itself runs them.
        let chat = ChatLoop::new(
            s.spec.clone(),
            conversation,
            &s.tools,
            settings,
            Approval::Auto,
            self.max_round_trips,
        );
        self.run = Some(ChatRun::start(
            chat,
            s.spec,
            key,
            &s.prompt,
            self.approve_each,
            self.wake.clone(),
        ));
    }

    /// The app sent the chat's tool call as `id`.
    pub fn tool_sent(&mut self, id: Option<mcpscope_core::wire::message::RequestId>) {
        if let Some(run) = &mut self.run {
            run.tool_sent(id);
        }
    }

    pub fn ui(&mut self, ui: &mut Ui, lists: &Lists, i: &Inspection, live: bool, actions: &mut Vec<ComposerAction>) {
        let running = self.run.as_ref().is_some_and(ChatRun::running) || self.starting.is_some();
        ui.add_enabled_ui(!running, |ui| self.settings_ui(ui, lists));
        if lists.tools.is_empty() {
            ui.weak("No tools listed yet: fetch tools/list (the model is offered the server's tools).");
        }
        let label = ui.label("prompt");
        ui.add(
            egui::TextEdit::multiline(&mut self.prompt)
                .desired_rows(3)
                .desired_width(fitted(ui, 420.0))
                .hint_text("what the user asks the model"),
        )
        .labelled_by(label.id);
        if running {
            ui.horizontal(|ui| {
                ui.spinner();
                if ui.button("Stop").clicked() {
                    self.starting = None;
                    if let Some(run) = &mut self.run {
                        run.stop();
                    }
                }
            });
        } else if send_row(ui, live, !self.prompt.trim().is_empty(), "Send to the model") {
            self.start(i.listed_tools());
        }
        if let Some(p) = &self.problem {
            ui.label(RichText::new(p).color(theme::ERROR));
        }
        if let Some(run) = &mut self.run {
            ui.separator();
            transcript_ui(ui, run, actions);
        }
    }

    fn settings_ui(&mut self, ui: &mut Ui, lists: &Lists) {
        egui::Grid::new("chat-settings").num_columns(2).show(ui, |ui| {
            let l = ui.label("model");
            ui.horizontal(|ui| {
                ui.add(
                    egui::TextEdit::singleline(&mut self.model)
                        .desired_width(fitted(ui, 220.0))
                        .hint_text("openai:gpt-4.1-mini"),
                )
                .labelled_by(l.id);
                if !self.listed.is_empty() {
                    egui::ComboBox::from_id_salt("chat-listed-models")
                        .selected_text("listed")
                        .show_ui(ui, |ui| {
                            let provider = self.model.split_once(':').map_or("", |(p, _)| p).to_owned();
                            for m in &self.listed {
                                if ui.selectable_label(false, m).clicked() {
                                    self.model = format!("{provider}:{m}");
                                }
                            }
                        });
                }
                if ui
                    .add_enabled(self.listing.is_none(), egui::Button::new("List models"))
                    .clicked()
                {
                    self.list_models();
                }
            });
            ui.end_row();
            let l = ui.label("base URL");
            ui.add(
                egui::TextEdit::singleline(&mut self.base_url)
                    .desired_width(fitted(ui, 300.0))
                    .hint_text("the provider's own; e.g. http://127.0.0.1:11434/v1"),
            )
            .labelled_by(l.id);
            ui.end_row();
            let l = ui.label("key");
            let hint = self.key_hint();
            ui.horizontal(|ui| {
                ui.add(
                    egui::TextEdit::singleline(&mut self.key)
                        .password(true)
                        .desired_width(fitted(ui, 200.0))
                        .hint_text(hint),
                )
                .labelled_by(l.id);
                ui.checkbox(&mut self.keep_key, "keep in the keyring");
            });
            ui.end_row();
            let l = ui.label("system");
            ui.add(
                egui::TextEdit::multiline(&mut self.system)
                    .desired_rows(1)
                    .desired_width(fitted(ui, 300.0)),
            )
            .labelled_by(l.id);
            ui.end_row();
            ui.label("limits");
            ui.horizontal_wrapped(|ui| {
                let mut set = self.temperature.is_some();
                if ui.checkbox(&mut set, "temperature").changed() {
                    self.temperature = set.then_some(1.0);
                }
                if let Some(t) = &mut self.temperature {
                    ui.add(egui::DragValue::new(t).range(0.0..=2.0).speed(0.05));
                }
                ui.label("max tokens");
                ui.add(egui::DragValue::new(&mut self.max_tokens).range(1..=200_000));
                ui.label("round trips");
                ui.add(egui::DragValue::new(&mut self.max_round_trips).range(1..=100));
            });
            ui.end_row();
        });
        ui.checkbox(
            &mut self.approve_each,
            "Ask before each tool call (the arguments can be edited first)",
        );
        self.tools_ui(ui, lists);
    }

    /// Where the key will come from when none is typed.
    fn key_hint(&self) -> String {
        match self.spec().ok().and_then(|s| s.key_variable()) {
            Some(var) => format!("${var} or the keyring"),
            None => "none needed, or the keyring".into(),
        }
    }

    fn tools_ui(&mut self, ui: &mut Ui, lists: &Lists) {
        let offered = lists.tools.iter().filter(|t| !self.unticked.contains(&t.name)).count();
        egui::CollapsingHeader::new(format!("Tools offered: {offered} of {}", lists.tools.len()))
            .id_salt("chat-tools")
            .show(ui, |ui| {
                ui.horizontal(|ui| {
                    if ui.small_button("all").clicked() {
                        self.unticked.clear();
                    }
                    if ui.small_button("none").clicked() {
                        self.unticked = lists.tools.iter().map(|t| t.name.clone()).collect();
                    }
                });
                for t in &lists.tools {
                    let mut on = !self.unticked.contains(&t.name);
                    if ui.checkbox(&mut on, &t.name).changed() {
                        if on {
                            self.unticked.remove(&t.name);
                        } else {
                            self.unticked.insert(t.name.clone());
                        }
                    }
                }
                // What the provider needs changed in the tools, said before sending.
                if let Ok(spec) = self.spec() {
                    let defs: Vec<Value> = lists
                        .tools
                        .iter()
                        .filter(|t| !self.unticked.contains(&t.name))
                        .map(|t| serde_json::json!({"name": t.name, "inputSchema": t.input_schema}))
                        .collect();
                    for n in request::offer_tools(spec.api, &defs).notes {
                        ui.label(RichText::new(format!("⚠ {}: {}", n.tool, n.note)).color(theme::WARN));
                    }
                }
            });
    }

    fn list_models(&mut self) {
        let spec = match self.spec() {
            Ok(s) => s,
            Err(e) => {
                self.problem = Some(e);
                return;
            }
        };
        let key_job_spec = spec.clone();
        let typed = Some(self.key.trim().to_owned()).filter(|k| !k.is_empty());
        self.listing = Some(Job::spawn("model-list", self.wake.clone(), move || {
            let key = match typed {
                Some(k) => Some(k),
                None => key::find_key_here(&key_job_spec, None)?.key,
            };
            mcpscope_core::chat::provider_call::list_models(&spec, key.as_deref(), Duration::from_secs(30))
                .map_err(|e| e.to_string())
        }));
    }
}

fn effects_to_actions(effects: Vec<ChatEffect>) -> Vec<ComposerAction> {
    effects
        .into_iter()
        .map(|e| match e {
            ChatEffect::Send(out) => ComposerAction::ChatCall(out),
            ChatEffect::Record(m) => ComposerAction::RecordModel(m),
        })
        .collect()
}

fn transcript_ui(ui: &mut Ui, run: &mut ChatRun, actions: &mut Vec<ComposerAction>) {
    let mut approve = false;
    let mut decline = false;
    let last = run.transcript.len().saturating_sub(1);
    for (n, entry) in run.transcript.iter_mut().enumerate() {
        match entry {
            Entry::User(text) => {
                ui.label(RichText::new("you").strong());
                ui.label(text.as_str());
            }
            Entry::Model(m) => {
                ui.horizontal_wrapped(|ui| {
                    ui.label(RichText::new("model").strong().color(theme::RowKind::Model.color()));
                    if m.streaming {
                        ui.spinner();
                    }
                    let mut facts = Vec::new();
                    if let (Some(i), Some(o)) = (m.input_tokens, m.output_tokens) {
                        facts.push(format!("{i} in / {o} out"));
                    }
                    if let Some(f) = m.first_token {
                        facts.push(format!("first token {}", format_latency(f)));
                    }
                    if let Some(t) = m.total {
                        facts.push(format_latency(t));
                    }
                    ui.weak(facts.join(" · "));
                });
                if !m.text.is_empty() {
                    ui.label(m.text.as_str());
                }
            }
            Entry::Tool(t) => {
                ui.label(RichText::new(format!("tool call: {}", t.tool)).strong());
                match &mut t.state {
                    ToolState::Asking { arguments, problem } if n == last => {
                        ui.label("The model asks to run this tool. Edit the arguments if need be:");
                        ui.add(
                            egui::TextEdit::multiline(arguments)
                                .code_editor()
                                .desired_rows(3)
                                .desired_width(fitted(ui, 420.0)),
                        );
                        if let Some(p) = problem {
                            ui.label(RichText::new(p.as_str()).color(theme::ERROR));
                        }
                        ui.horizontal(|ui| {
                            let run_it = ui.button("Run it");
                            // Brought into view once, when the model asks.
                            let seen = egui::Id::unique(("chat-asked", t.call_id.as_str()));
                            if !ui.data(|d| d.get_temp::<bool>(seen).unwrap_or(false)) {
                                ui.data_mut(|d| d.insert_temp(seen, true));
                                run_it.scroll_to_me(Some(egui::Align::Center));
                            }
                            approve = run_it.clicked();
                            decline = ui.button("Refuse").clicked();
                        });
                    }
                    ToolState::Asking { .. } => {}
                    ToolState::Running { arguments, .. } => {
                        ui.horizontal(|ui| {
                            ui.spinner();
                            ui.monospace(arguments.to_string());
                        });
                    }
                    ToolState::Answered {
                        arguments,
                        text,
                        is_error,
                    } => {
                        ui.monospace(arguments.to_string());
                        let shown = mcpscope_core::text::shorten(text, 600);
                        if *is_error {
                            ui.label(RichText::new(shown).color(theme::RowKind::ToolError.color()));
                        } else {
                            ui.label(shown);
                        }
                    }
                    ToolState::Declined => {
                        ui.label(RichText::new("refused: the model was told").color(theme::WARN));
                    }
                }
            }
            Entry::Note(text) => {
                ui.label(RichText::new(format!("⚠ {text}")).color(theme::WARN));
            }
        }
    }
    if let Some(o) = &run.outcome {
        let (text, failed) = crate::live_chat::outcome_text(o);
        if failed {
            ui.label(RichText::new(text).color(theme::ERROR));
        } else {
            ui.label(RichText::new(text).strong());
        }
    }
    if approve {
        actions.extend(effects_to_actions(run.approve()));
    }
    if decline {
        run.decline();
    }
    ui.weak(format!("{} model turn(s)", run.turns()));
}
