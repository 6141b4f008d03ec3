//! Chat mode: a model in the loop over the session's tools. The model
//! (PROVIDER:MODEL, any OpenAI-compatible server or Anthropic's Messages
//! API) is offered the tools ticked here; its calls run through the
//! session ([`crate::live_chat`]), each approved first when asked, with
//! its arguments editable; its text shows as it streams. Up to three more
//! models may get the same prompt at once, each in a tab of its own, then
//! compared side by side.

use super::lists::Lists;
use super::{ComposerAction, fitted, send_row};
use crate::inspection::Inspection;
use crate::job::{Job, Wake};
use crate::live_chat::{ChatEffect, ChatRun, Entry, ToolState};
use crate::panels::timeline::format_latency;
use crate::theme::{self, RowKindStyle as _};
use egui::{RichText, Ui};
use mcpscope_core::chat::key;
use mcpscope_core::chat::replay::RecordedChat;
use mcpscope_core::model::chat_loop::{Approval, ChatLoop};
use mcpscope_core::model::compare;
use mcpscope_core::model::provider::ModelSpec;
use mcpscope_core::model::request::{self, Conversation, Settings};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

/// What tool notes were worked out for: the provider's API and the tools left out.
type NotesFor = (mcpscope_core::model::provider::Api, BTreeSet<String>);

/// The most models one prompt goes to at once.
pub const MAX_MODELS: usize = 4;

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
    /// More models given the same prompt (PROVIDER:MODEL, base URL), side by side.
    pub compare_with: Vec<(String, String)>,
    /// One per model; the first is the one named above.
    pub runs: Vec<ChatRun>,
    /// The tab on screen: a run, or past the last, the comparison.
    pub shown: usize,
    /// Keeping the typed key in the keyring.
    keeping: Option<Job<Result<(), String>>>,
    /// A recorded chat to replay instead of asking a model, and its file.
    pub recording: Option<(PathBuf, RecordedChat)>,
    reading: Option<Job<Result<(PathBuf, RecordedChat), String>>>,
    listing: Option<Job<Result<Vec<String>, String>>>,
    /// What the provider's models endpoint listed.
    pub listed: Vec<String>,
    /// Why the last start or listing failed.
    pub problem: Option<String>,
    /// Wakes the UI when a turn streams (the app gives it).
    pub wake: Option<Wake>,
    /// What the provider needs changed in the tools offered, for the API
    /// and the tools left out it was worked out for (dropped when the
    /// server's tools are listed again).
    pub tool_notes: Option<(NotesFor, Vec<String>)>,
    /// The person asked to choose a recording (the app opens its picker).
    pub wants_recording: bool,
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
            compare_with: Vec::new(),
            runs: Vec::new(),
            shown: 0,
            keeping: None,
            recording: None,
            reading: None,
            listing: None,
            listed: Vec::new(),
            problem: None,
            wake: None,
            tool_notes: None,
            wants_recording: false,
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
            compare_with: self.compare_with,
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

    /// The models the prompt goes to: the one named, then those compared with it.
    fn specs(&self) -> Result<Vec<ModelSpec>, String> {
        let mut specs = vec![self.spec()?];
        for (model, base) in &self.compare_with {
            let base = Some(base.trim()).filter(|b| !b.is_empty());
            specs.push(ModelSpec::parse(model.trim(), base).map_err(|e| format!("{model}: {e}"))?);
        }
        Ok(specs)
    }

    /// Starts a chat with the prompt, one run per model, over `tools` (the
    /// server's `tools/list` entries; the unticked ones are left out).
    pub fn start(&mut self, tools: Vec<Value>) {
        if let Some((_, recording)) = &self.recording {
            self.start_replay(recording.clone(), tools);
            return;
        }
        let specs = match self.specs() {
            Ok(s) => s,
            Err(e) => {
                self.problem = Some(e);
                return;
            }
        };
        let tools: Vec<Value> = tools
            .into_iter()
            .filter(|t| {
                t.get("name")
                    .and_then(Value::as_str)
                    .is_some_and(|n| !self.unticked.contains(n))
            })
            .collect();
        self.problem = None;
        let typed = Some(self.key.trim().to_owned()).filter(|k| !k.is_empty());
        if self.keep_key
            && let Some(k) = &typed
        {
            let (spec, k) = (specs[0].clone(), k.clone());
            self.keeping = Some(Job::spawn("model-key", self.wake.clone(), move || {
                key::store_key(&spec, &k).map_err(|e| format!("keeping the key: {e}"))
            }));
        }
        let prompt = self.prompt.trim().to_owned();
        let (conversation, settings) = self.opening(&prompt);
        self.runs = specs
            .iter()
            .map(|spec| {
                // The key typed is the named model's provider's.
                let key = typed.clone().filter(|_| spec.provider == specs[0].provider);
                // The person approves each call in the tab; the loop itself runs them.
                let chat = ChatLoop::new(
                    spec.clone(),
                    conversation.clone(),
                    &tools,
                    settings.clone(),
                    Approval::Auto,
                    self.max_round_trips,
                );
                ChatRun::start(chat, spec.clone(), key, &prompt, self.approve_each, self.wake.clone())
            })
            .collect();
        self.shown = 0;
    }

    /// The conversation a run starts with (the system prompt, then the
    /// user's), and the settings of its turns.
    fn opening(&self, prompt: &str) -> (Conversation, Settings) {
        let mut conversation = Conversation {
            system: Some(self.system.trim().to_owned()).filter(|t| !t.is_empty()),
            ..Conversation::default()
        };
        conversation.user(prompt);
        let settings = Settings {
            temperature: self.temperature,
            max_tokens: self.max_tokens,
        };
        (conversation, settings)
    }

    /// Reads a capture's recorded chat on a worker.
    pub fn load_recording(&mut self, path: PathBuf) {
        self.reading = Some(Job::spawn("chat-recording", self.wake.clone(), move || {
            let loaded = mcpscope_core::record::capture::load(&path)
                .map_err(|e| mcpscope_core::text::ErrorChain(&e).to_string())?;
            let chat = RecordedChat::from_events(&loaded.events);
            if chat.turns.is_empty() {
                return Err(format!("{} holds no model turns (record a chat first)", path.display()));
            }
            Ok((path, chat))
        }));
    }

    /// The recorded conversation again, against the server as it is now:
    /// the model's turns from the recording (its model, its prompt).
    fn start_replay(&mut self, recording: RecordedChat, tools: Vec<Value>) {
        let first = &recording.turns[0];
        let spec = ModelSpec {
            api: first.api,
            provider: first.provider.clone(),
            model: first.model.clone(),
            base_url: String::new(),
        };
        let prompt = recording.prompt().unwrap_or_else(|| self.prompt.trim().to_owned());
        let (conversation, settings) = self.opening(&prompt);
        let chat = ChatLoop::new(
            spec.clone(),
            conversation,
            &tools,
            settings,
            Approval::Auto,
            self.max_round_trips,
        );
        self.problem = None;
        self.shown = 0;
        // The recorded calls were approved when they were made: a replay
        // runs them as a test does, without asking.
        self.runs = vec![ChatRun::start(chat, spec, None, &prompt, false, self.wake.clone()).replaying(recording)];
    }

    /// Moves the chat on (the app calls this every frame, whatever mode is
    /// on screen); returns what the app must do.
    pub fn poll(&mut self, i: &Inspection) -> Vec<ComposerAction> {
        if let Some(job) = &mut self.reading
            && let Some(read) = job.poll()
        {
            self.reading = None;
            match read.map_err(|e| e.to_string()).and_then(|r| r) {
                Ok(r) => {
                    self.problem = None;
                    self.recording = Some(r);
                }
                Err(e) => self.problem = Some(e),
            }
        }
        if let Some(job) = &mut self.keeping
            && let Some(kept) = job.poll()
        {
            self.keeping = None;
            if let Err(e) = kept.map_err(|e| e.to_string()).and_then(|r| r) {
                self.problem = Some(e);
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
        let mut actions = Vec::new();
        for (n, run) in self.runs.iter_mut().enumerate() {
            actions.extend(effects_to_actions(n, run.poll(i)));
        }
        actions
    }

    pub fn running(&self) -> bool {
        self.runs.iter().any(ChatRun::running)
    }

    /// The app sent run `run`'s tool call as `id`.
    pub fn tool_sent(&mut self, run: usize, id: Option<mcpscope_core::wire::message::RequestId>) {
        if let Some(r) = self.runs.get_mut(run) {
            r.tool_sent(id);
        }
    }

    pub fn ui(&mut self, ui: &mut Ui, lists: &Lists, i: &Inspection, live: bool, actions: &mut Vec<ComposerAction>) {
        let running = self.running();
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
                    self.runs.iter_mut().for_each(ChatRun::stop);
                }
            });
        } else {
            let label = match (&self.recording, self.compare_with.len()) {
                (Some(_), _) => "Replay the recorded chat".to_owned(),
                (None, 0) => "Send to the model".to_owned(),
                (None, n) => format!("Send to the {} models", n + 1),
            };
            let ready = !self.prompt.trim().is_empty() || self.recording.is_some();
            if send_row(ui, live, ready, &label) {
                self.start(i.listed_tools());
            }
        }
        if let Some(p) = &self.problem {
            ui.label(RichText::new(p).color(theme::ERROR));
        }
        if self.runs.is_empty() {
            return;
        }
        if let Some(run) = self.runs.first().filter(|r| r.is_replay() && !r.running()) {
            match run.differs {
                0 => ui.label(RichText::new("Every tool result was the same as in the recording.").strong()),
                n => ui.label(
                    RichText::new(format!("{n} tool result(s) differed from the recording.")).color(theme::ERROR),
                ),
            };
        }
        ui.separator();
        if self.runs.len() > 1 {
            ui.horizontal_wrapped(|ui| {
                for (n, run) in self.runs.iter().enumerate() {
                    let mut name = run.model_name();
                    if run.asking() {
                        name.push_str(" ⚠");
                    } else if run.running() {
                        name.push_str(" …");
                    }
                    ui.selectable_value(&mut self.shown, n, name);
                }
                ui.selectable_value(&mut self.shown, self.runs.len(), "Compare");
            });
        }
        let shown = self.shown;
        match self.runs.get_mut(shown) {
            Some(run) => transcript_ui(ui, shown, run, actions),
            None => {
                let summaries = self.runs.iter().map(ChatRun::summary).collect();
                comparison_ui(ui, &compare::compare(summaries));
            }
        }
    }

    fn settings_ui(&mut self, ui: &mut Ui, lists: &Lists) {
        // Rows that wrap, each field as wide as the row has left: at 1024 px
        // the composer has no room to grow (it would slide under the timeline).
        ui.horizontal_wrapped(|ui| {
            let l = ui.label("model");
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
        ui.horizontal_wrapped(|ui| {
            let l = ui.label("base URL");
            ui.add(
                egui::TextEdit::singleline(&mut self.base_url)
                    .desired_width(fitted(ui, 300.0))
                    .hint_text("the provider's own; e.g. http://127.0.0.1:11434/v1"),
            )
            .labelled_by(l.id);
        });
        let hint = self.key_hint();
        ui.horizontal_wrapped(|ui| {
            let l = ui.label("key");
            ui.add(
                egui::TextEdit::singleline(&mut self.key)
                    .password(true)
                    .desired_width(fitted(ui, 200.0))
                    .hint_text(hint),
            )
            .labelled_by(l.id);
            ui.checkbox(&mut self.keep_key, "keep in the keyring");
        });
        ui.horizontal_wrapped(|ui| {
            let l = ui.label("system");
            ui.add(
                egui::TextEdit::multiline(&mut self.system)
                    .desired_rows(1)
                    .desired_width(fitted(ui, 300.0)),
            )
            .labelled_by(l.id);
        });
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
        ui.horizontal_wrapped(|ui| match &self.recording {
            Some((path, recording)) => {
                ui.label(format!(
                    "Replaying {}: {} model turn(s) served from it, no API call; its tool calls run without asking.",
                    path.file_name()
                        .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned()),
                    recording.turns.len()
                ));
                if ui.button("Forget the recording").clicked() {
                    self.recording = None;
                }
            }
            None => {
                if ui
                    .add_enabled(self.reading.is_none(), egui::Button::new("Replay a recorded chat…"))
                    .on_hover_text("the model's turns from a capture, against the server as it is now")
                    .clicked()
                {
                    self.wants_recording = true;
                }
            }
        });
        ui.checkbox(
            &mut self.approve_each,
            "Ask before each tool call (the arguments can be edited first)",
        );
        self.tools_ui(ui, lists);
        self.compare_ui(ui);
    }

    /// The models compared with the one named: the same prompt to each.
    fn compare_ui(&mut self, ui: &mut Ui) {
        egui::CollapsingHeader::new(format!("Side by side: {} more model(s)", self.compare_with.len()))
            .id_salt("chat-compare")
            .show(ui, |ui| {
                let mut remove = None;
                for (n, (model, base)) in self.compare_with.iter_mut().enumerate() {
                    ui.horizontal_wrapped(|ui| {
                        let l = ui.label(format!("model {}", n + 2));
                        ui.add(
                            egui::TextEdit::singleline(model)
                                .desired_width(fitted(ui, 170.0))
                                .hint_text("anthropic:claude-sonnet-4-5"),
                        )
                        .labelled_by(l.id);
                        ui.add(
                            egui::TextEdit::singleline(base)
                                .desired_width(fitted(ui, 160.0))
                                .hint_text("base URL (optional)"),
                        );
                        if ui.small_button("✖").on_hover_text("leave this model out").clicked() {
                            remove = Some(n);
                        }
                    });
                }
                if let Some(n) = remove {
                    self.compare_with.remove(n);
                }
                if self.compare_with.len() + 1 < MAX_MODELS && ui.button("Add a model").clicked() {
                    self.compare_with.push((String::new(), self.base_url.clone()));
                }
                ui.weak("The key typed above is for the first model's provider; the others' come from their variables or the keyring.");
            });
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
                // What the provider needs changed in the tools, said before
                // sending; worked out again only when the API or the ticks change.
                if let Ok(spec) = self.spec() {
                    let key = (spec.api, self.unticked.clone());
                    if self.tool_notes.as_ref().is_none_or(|(k, _)| *k != key) {
                        let defs: Vec<Value> = lists
                            .tools
                            .iter()
                            .filter(|t| !self.unticked.contains(&t.name))
                            .map(|t| serde_json::json!({"name": t.name, "inputSchema": t.input_schema}))
                            .collect();
                        let notes = request::offer_tools(spec.api, &defs)
                            .notes
                            .into_iter()
                            .map(|n| format!("⚠ {}: {}", n.tool, n.note))
                            .collect();
                        self.tool_notes = Some((key, notes));
                    }
                    for n in self.tool_notes.iter().flat_map(|(_, notes)| notes) {
                        ui.label(RichText::new(n).color(theme::WARN));
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

fn effects_to_actions(run: usize, effects: Vec<ChatEffect>) -> Vec<ComposerAction> {
    effects
        .into_iter()
        .map(|e| match e {
            ChatEffect::Send(out) => ComposerAction::ChatCall(run, out),
            ChatEffect::Record(m) => ComposerAction::RecordModel(m),
        })
        .collect()
}

/// The runs side by side: one row per model, then what differs.
fn comparison_ui(ui: &mut Ui, c: &compare::Comparison) {
    // Eight columns: scrolled sideways in a narrow composer rather than widening it.
    egui::ScrollArea::horizontal()
        .id_salt("chat-comparison-scroll")
        .show(ui, |ui| {
            egui::Grid::new("chat-comparison").striped(true).show(ui, |ui| {
                for h in [
                    "model",
                    "outcome",
                    "turns",
                    "tools called",
                    "tokens in/out",
                    "first token",
                    "model time",
                    "cost",
                ] {
                    ui.strong(h);
                }
                ui.end_row();
                for r in &c.runs {
                    ui.label(&r.model);
                    if r.done {
                        ui.label(&r.outcome);
                    } else {
                        ui.label(RichText::new(&r.outcome).color(theme::WARN));
                    }
                    ui.label(r.turns.to_string());
                    let tools: Vec<String> = r.tool_calls.iter().map(|(t, a)| format!("{t} {a}")).collect();
                    ui.monospace(if tools.is_empty() { "-".into() } else { tools.join("\n") });
                    ui.label(match (r.input_tokens, r.output_tokens) {
                        (Some(i), Some(o)) => format!("{i} / {o}"),
                        _ => "not reported".into(),
                    });
                    ui.label(r.first_token.map_or_else(|| "-".into(), format_latency));
                    ui.label(format_latency(r.model_time));
                    ui.label(r.cost.map_or_else(|| "not reported".into(), |c| format!("{c:.6}")));
                    ui.end_row();
                }
            });
        });
    let same = |b: bool| if b { "the same" } else { "different" };
    ui.label(format!(
        "Tools: {} · arguments: {} · answers: {}",
        same(c.same_tools),
        same(c.same_arguments),
        same(c.same_answer)
    ));
    for d in &c.differences {
        ui.label(RichText::new(d).color(theme::WARN));
    }
    if !c.runs.is_empty() {
        ui.collapsing("Answers", |ui| {
            for r in &c.runs {
                ui.strong(&r.model);
                ui.label(if r.answer.is_empty() { "(no text)" } else { &r.answer });
            }
        });
    }
}

fn transcript_ui(ui: &mut Ui, run_index: usize, run: &mut ChatRun, actions: &mut Vec<ComposerAction>) {
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
                    if !m.rate_limited.is_zero() {
                        facts.push(format!(
                            "rate limited: waited {} as asked",
                            format_latency(m.rate_limited)
                        ));
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
                if let Some(was) = &t.differs_from_recording {
                    ui.label(
                        RichText::new(format!("differs from the recording, which had: {was}")).color(theme::ERROR),
                    );
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
        actions.extend(effects_to_actions(run_index, run.approve()));
    }
    if decline {
        run.decline();
    }
    ui.weak(format!("{} model turn(s)", run.turns()));
}
