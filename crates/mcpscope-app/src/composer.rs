//! The request composer: forms from each tool's `inputSchema`, prompt
//! arguments, resource template variables, logging level, a raw composer for
//! anything at all, and a history to re-send from. It only builds
//! [`ComposerAction`]s; the app sends them through the inspection.

use crate::inspection::{Outgoing, ServerRequest};
use crate::panels::form_view;
use crate::panels::result_view::ResultView;
use crate::theme;
use egui::{Key, Modifiers, RichText, Ui};
use mcpscope_core::protocol::uri_template::UriTemplate;
use mcpscope_core::record::model::SessionModel;
use mcpscope_core::schema::form::{FieldError, Form};
use mcpscope_core::wire::message::RequestId;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// What the composer asks the app to do.
#[derive(Clone, Debug, PartialEq)]
pub enum ComposerAction {
    Send(Outgoing),
    Cancel(RequestId),
    /// Answer a server request (elicitation, sampling).
    Answer(RequestId, Result<Value, mcpscope_core::wire::message::ErrorObject>),
    /// The user edited the roots offered to the server.
    RootsChanged(Vec<Value>),
    /// A task request (tasks/get, tasks/result, tasks/cancel) made by the composer itself.
    Task(Outgoing),
}

/// A tool call running as a task: its state as last polled, and the
/// transitions seen, for the answer area.
#[derive(Clone, Debug)]
pub struct TaskRun {
    pub flavor: mcpscope_core::protocol::tasks::Flavor,
    pub task: mcpscope_core::protocol::tasks::Task,
    /// Status lines in the order they were seen.
    pub transitions: Vec<String>,
    /// The poll or fetch in flight.
    pub waiting_on: Option<RequestId>,
    pub next_poll: std::time::Instant,
    /// The row holding the task's final result (tasks/result, or the tasks/get that inlined it).
    pub result_row: Option<usize>,
    pub cancel_sent: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Tool,
    Prompt,
    Resource,
    Logging,
    Listen,
    Raw,
}

impl Mode {
    const ALL: [Mode; 6] = [
        Mode::Tool,
        Mode::Prompt,
        Mode::Resource,
        Mode::Logging,
        Mode::Listen,
        Mode::Raw,
    ];

    fn label(self) -> &'static str {
        match self {
            Mode::Tool => "Tool",
            Mode::Prompt => "Prompt",
            Mode::Resource => "Resource",
            Mode::Logging => "Logging",
            Mode::Listen => "Listen",
            Mode::Raw => "Raw",
        }
    }

    /// The server capability that offers this mode's methods.
    fn capability(self) -> Option<&'static str> {
        match self {
            Mode::Tool => Some("tools"),
            Mode::Prompt => Some("prompts"),
            Mode::Resource => Some("resources"),
            Mode::Logging => Some("logging"),
            Mode::Listen | Mode::Raw => None,
        }
    }

    /// The list request that fills this mode's picker.
    fn list_method(self) -> Option<&'static str> {
        match self {
            Mode::Tool => Some("tools/list"),
            Mode::Prompt => Some("prompts/list"),
            Mode::Resource => Some("resources/list"),
            _ => None,
        }
    }
}

/// A tool as listed by the server.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolDef {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
}

impl ToolDef {
    pub fn from_json(v: &Value) -> Option<ToolDef> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        Some(ToolDef {
            name: s("name")?,
            title: s("title").or_else(|| {
                v.pointer("/annotations/title")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            }),
            description: s("description"),
            input_schema: v
                .get("inputSchema")
                .cloned()
                .unwrap_or_else(|| json!({"type": "object"})),
            output_schema: v.get("outputSchema").cloned(),
        })
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct PromptArg {
    pub name: String,
    pub description: Option<String>,
    pub required: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PromptDef {
    pub name: String,
    pub description: Option<String>,
    pub arguments: Vec<PromptArg>,
}

impl PromptDef {
    pub fn from_json(v: &Value) -> Option<PromptDef> {
        Some(PromptDef {
            name: v.get("name")?.as_str()?.to_owned(),
            description: v.get("description").and_then(Value::as_str).map(str::to_owned),
            arguments: v
                .get("arguments")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|x| {
                            Some(PromptArg {
                                name: x.get("name")?.as_str()?.to_owned(),
                                description: x.get("description").and_then(Value::as_str).map(str::to_owned),
                                required: x.get("required").and_then(Value::as_bool).unwrap_or(false),
                            })
                        })
                        .collect()
                })
                .unwrap_or_default(),
        })
    }
}

/// One thing sent from the composer, to re-send or edit later.
#[derive(Clone, Debug, PartialEq)]
pub struct HistoryEntry {
    pub outgoing: Outgoing,
    /// e.g. `tools/call echo`
    pub label: String,
    pub id: Option<RequestId>,
}

impl HistoryEntry {
    fn describe(out: &Outgoing) -> String {
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
                mcpscope_core::text::shorten(&String::from_utf8_lossy(line), 60)
            ),
        }
    }
}

/// The last request sent, whose answer the result view shows.
#[derive(Clone, Debug)]
pub struct Pending {
    pub id: RequestId,
    pub method: String,
    /// The tool's outputSchema, to check structuredContent against.
    pub output_schema: Option<Value>,
    /// `params._meta.progressToken`, to show `notifications/progress` for it.
    pub progress_token: Option<Value>,
    /// The user cancelled it (`notifications/cancelled` was sent).
    pub cancelled: bool,
}

/// Raw composer state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RawKind {
    Request,
    Notification,
    Line,
}

pub struct RawComposer {
    pub kind: RawKind,
    pub method: String,
    pub params: String,
    /// Empty: the next free id. Otherwise a number or a string (quoted or not).
    pub id: String,
    pub line: String,
}

impl Default for RawComposer {
    fn default() -> Self {
        Self {
            kind: RawKind::Request,
            method: "ping".into(),
            params: String::new(),
            id: String::new(),
            line: r#"{"jsonrpc":"2.0","id":"raw-1","method":"ping"}"#.into(),
        }
    }
}

impl RawComposer {
    /// What the raw composer would send, or why it cannot.
    pub fn outgoing(&self) -> Result<Outgoing, String> {
        if self.kind == RawKind::Line {
            // Sent as typed, even when it is not JSON: that is the point.
            return Ok(Outgoing::Raw(self.line.clone().into_bytes()));
        }
        let method = self.method.trim();
        if method.is_empty() {
            return Err("method is empty".into());
        }
        let params = if self.params.trim().is_empty() {
            None
        } else {
            Some(serde_json::from_str::<Value>(&self.params).map_err(|e| format!("params are not JSON: {e}"))?)
        };
        Ok(match self.kind {
            RawKind::Notification => Outgoing::Notification {
                method: method.to_owned(),
                params,
            },
            _ => Outgoing::Request {
                method: method.to_owned(),
                params,
                id: parse_id(&self.id)?,
            },
        })
    }
}

/// `""` → next free id; `7` → number; `abc` or `"abc"` → string.
pub fn parse_id(s: &str) -> Result<Option<RequestId>, String> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(None);
    }
    if let Ok(n) = s.parse::<i64>() {
        return Ok(Some(RequestId::Number(n)));
    }
    if s.starts_with('"') {
        return serde_json::from_str::<String>(s)
            .map(|x| Some(RequestId::String(x)))
            .map_err(|e| format!("id is not a JSON string: {e}"));
    }
    Ok(Some(RequestId::String(s.to_owned())))
}

/// How often a task is polled when the server suggests no interval.
const TASK_POLL: std::time::Duration = std::time::Duration::from_secs(1);

pub const LOG_LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// Suggestions from `completion/complete` for one field.
#[derive(Default)]
struct Completion {
    /// Which field asked: `prompt:<name>:<arg>` or `template:<uri>:<var>`.
    field: String,
    asked_with: String,
    pending: Option<RequestId>,
    values: Vec<String>,
}

pub struct ComposerPanel {
    pub mode: Mode,
    pub tools: Vec<ToolDef>,
    pub prompts: Vec<PromptDef>,
    pub resources: Vec<Value>,
    pub templates: Vec<Value>,
    lists_from: BTreeMap<&'static str, usize>,
    /// `nextCursor` of the last page of each list, while more pages remain.
    pub next_cursor: BTreeMap<&'static str, String>,
    /// Pages fetched so far per list.
    pub pages: BTreeMap<&'static str, usize>,
    /// Ask for progress notifications on tool calls.
    pub with_progress: bool,
    /// Ask the server to run tool calls as tasks (when it offers them).
    pub as_task: bool,
    /// The task the last tool call became, if it did.
    pub task: Option<TaskRun>,
    /// Which flavour of tasks the session can use (set from the era).
    pub task_flavor: Option<mcpscope_core::protocol::tasks::Flavor>,
    /// What `subscriptions/listen` asks for.
    pub listen_filter: mcpscope_core::protocol::subscriptions::Filter,
    pub listen_uris: String,
    /// Subscriptions seen on the timeline, recomputed when rows arrive.
    pub subscriptions: Vec<mcpscope_core::protocol::subscriptions::Subscription>,
    /// Rows already looked at for subscriptions, and the frames kept from them.
    subscriptions_for: usize,
    listen_frames: Vec<mcpscope_core::wire::frame::Frame>,
    /// The tools/call answer row already checked for a task.
    task_checked: Option<usize>,
    pub tool: Option<String>,
    pub form: Option<Form>,
    pub errors: Vec<FieldError>,
    /// The `arguments` JSON as text, kept in sync with the form both ways.
    pub args_text: String,
    pub args_error: Option<String>,
    pub prompt: Option<String>,
    pub prompt_args: BTreeMap<String, String>,
    pub template: Option<String>,
    pub template_values: BTreeMap<String, String>,
    pub resource_uri: String,
    pub log_level: String,
    pub raw: RawComposer,
    pub history: Vec<HistoryEntry>,
    pub pending: Option<Pending>,
    pub result: ResultView,
    completion: Completion,
    /// Answer forms for server requests, by request id.
    elicitations: Vec<(RequestId, Form, Vec<FieldError>)>,
    sampling_reply: BTreeMap<String, String>,
    pub roots_text: String,
    roots_error: Option<String>,
}

impl Default for ComposerPanel {
    fn default() -> Self {
        Self {
            mode: Mode::Tool,
            tools: Vec::new(),
            prompts: Vec::new(),
            resources: Vec::new(),
            templates: Vec::new(),
            lists_from: BTreeMap::new(),
            next_cursor: BTreeMap::new(),
            pages: BTreeMap::new(),
            with_progress: true,
            as_task: false,
            task: None,
            task_flavor: None,
            listen_filter: mcpscope_core::protocol::subscriptions::Filter::all_lists(),
            listen_uris: String::new(),
            subscriptions: Vec::new(),
            subscriptions_for: 0,
            listen_frames: Vec::new(),
            task_checked: None,
            tool: None,
            form: None,
            errors: Vec::new(),
            args_text: "{}".into(),
            args_error: None,
            prompt: None,
            prompt_args: BTreeMap::new(),
            template: None,
            template_values: BTreeMap::new(),
            resource_uri: String::new(),
            log_level: "info".into(),
            raw: RawComposer::default(),
            history: Vec::new(),
            pending: None,
            result: ResultView::default(),
            completion: Completion::default(),
            elicitations: Vec::new(),
            sampling_reply: BTreeMap::new(),
            roots_text: String::new(),
            roots_error: None,
        }
    }
}

impl ComposerPanel {
    pub fn reset(&mut self) {
        let history = std::mem::take(&mut self.history);
        *self = ComposerPanel {
            history,
            ..ComposerPanel::default()
        };
    }

    /// Picks up new `tools/list`, `prompts/list`, `resources/list` and
    /// `resources/templates/list` results.
    pub fn sync(&mut self, model: &SessionModel) {
        for method in [
            "tools/list",
            "prompts/list",
            "resources/list",
            "resources/templates/list",
        ] {
            let Some(&row) = model.latest_results.get(method) else {
                continue;
            };
            if self.lists_from.get(method) == Some(&row) {
                continue;
            }
            self.lists_from.insert(method, row);
            let Some((_, result)) = model.latest_result(method) else {
                continue;
            };
            let items = |key: &str| result.get(key).and_then(Value::as_array).cloned().unwrap_or_default();
            // A page fetched with a cursor extends the list; one without starts it over.
            let continued = model
                .store
                .get(row)
                .and_then(|r| r.link())
                .and_then(|(req, _)| model.store.get(req))
                .and_then(|r| serde_json::from_slice::<Value>(r.raw()).ok())
                .is_some_and(|v| v.pointer("/params/cursor").is_some());
            match result.get("nextCursor").and_then(Value::as_str) {
                Some(c) => self.next_cursor.insert(method, c.to_owned()),
                None => self.next_cursor.remove(method),
            };
            let pages = self.pages.entry(method).or_default();
            *pages = if continued { *pages + 1 } else { 1 };
            match method {
                "tools/list" if continued => {
                    self.tools.extend(items("tools").iter().filter_map(ToolDef::from_json));
                }
                "prompts/list" if continued => {
                    self.prompts
                        .extend(items("prompts").iter().filter_map(PromptDef::from_json));
                }
                "resources/list" if continued => self.resources.extend(items("resources")),
                "resources/templates/list" if continued => self.templates.extend(items("resourceTemplates")),
                "tools/list" => {
                    self.tools = items("tools").iter().filter_map(ToolDef::from_json).collect();
                    // Keep the form when the chosen tool's schema did not change.
                    let still = self
                        .tool
                        .as_ref()
                        .and_then(|t| self.tools.iter().find(|d| &d.name == t));
                    if still.is_none() && self.tool.is_some() {
                        self.tool = None;
                        self.form = None;
                    }
                }
                "prompts/list" => self.prompts = items("prompts").iter().filter_map(PromptDef::from_json).collect(),
                "resources/list" => self.resources = items("resources"),
                _ => self.templates = items("resourceTemplates"),
            }
        }
    }

    /// Drives a task the last tool call became: polls `tasks/get` at the
    /// server's interval and fetches the result once it is terminal. Called
    /// every frame from the app's logic, not from drawing.
    pub fn poll_task(&mut self, model: &SessionModel) -> Vec<ComposerAction> {
        use mcpscope_core::protocol::tasks::{Flavor, Status, Task, task_params};
        let mut out = Vec::new();
        // A tool call that answered with a task starts the run.
        // The answer is parsed once, not every frame (it can be megabytes).
        if self.task.is_none()
            && let Some(p) = &self.pending
            && p.method == "tools/call"
            && let Some(row) = model.response_to(&model.chain_head(&p.id))
            && self.task_checked.replace(row) != Some(row)
            && let Some(v) = model
                .store
                .get(row)
                .and_then(|r| serde_json::from_slice::<Value>(r.raw()).ok())
            && let Some((flavor, task)) = v.get("result").and_then(Task::created)
        {
            self.task = Some(TaskRun {
                flavor,
                transitions: vec![task.status_line()],
                task,
                waiting_on: None,
                next_poll: std::time::Instant::now(),
                result_row: None,
                cancel_sent: false,
            });
        }
        let Some(run) = &mut self.task else { return out };
        if let Some(id) = &run.waiting_on {
            let Some(row) = model.response_to(id) else { return out };
            run.waiting_on = None;
            let v: Value = model
                .store
                .get(row)
                .and_then(|r| serde_json::from_slice(r.raw()).ok())
                .unwrap_or(Value::Null);
            let result = v.get("result").cloned().unwrap_or(Value::Null);
            match Task::from_value(&result).or_else(|| result.get("task").and_then(Task::from_value)) {
                // A tasks/get (or cancel) answer: the task's new state.
                Some(t) => {
                    let line = t.status_line();
                    if run.transitions.last() != Some(&line) {
                        run.transitions.push(line);
                    }
                    if run.flavor == Flavor::Extension && t.status.is_terminal() {
                        run.result_row = Some(row);
                    }
                    run.task = t;
                }
                // tasks/result: the tool's own result (or error).
                None => run.result_row = Some(row),
            }
            run.next_poll = std::time::Instant::now() + run.task.poll_interval.unwrap_or(TASK_POLL);
        }
        if run.waiting_on.is_some() || run.result_row.is_some() {
            return out;
        }
        let terminal = run.task.status.is_terminal();
        let request = if terminal && run.flavor == Flavor::Experimental && run.task.status == Status::Completed {
            Some("tasks/result")
        } else if terminal {
            None
        } else if std::time::Instant::now() >= run.next_poll {
            Some("tasks/get")
        } else {
            None
        };
        if let Some(method) = request {
            out.push(ComposerAction::Task(Outgoing::Request {
                method: method.into(),
                params: Some(task_params(&run.task.task_id)),
                id: None,
            }));
        }
        out
    }

    /// The app sent a task request for the composer.
    pub fn task_sent(&mut self, id: Option<RequestId>) {
        if let Some(run) = &mut self.task {
            run.waiting_on = id;
        }
    }

    fn task_ui(&mut self, ui: &mut Ui, model: &SessionModel, live: bool, actions: &mut Vec<ComposerAction>) -> bool {
        let Some(run) = &mut self.task else { return false };
        ui.label(
            RichText::new(format!(
                "Task {} ({}): {}",
                run.task.task_id,
                run.flavor.label(),
                run.task.status_line()
            ))
            .strong(),
        );
        ui.weak(format!("status: {}", run.transitions.join(" ▶ ")));
        if !run.task.status.is_terminal() {
            ui.horizontal(|ui| {
                ui.spinner();
                ui.label("polling tasks/get");
                if live && !run.cancel_sent && ui.button("Cancel task").clicked() {
                    run.cancel_sent = true;
                    actions.push(ComposerAction::Task(Outgoing::Request {
                        method: "tasks/cancel".into(),
                        params: Some(mcpscope_core::protocol::tasks::task_params(&run.task.task_id)),
                        id: None,
                    }));
                }
            });
        }
        let row = run.result_row;
        match row {
            Some(row) => {
                let schema = self.pending.as_ref().and_then(|p| p.output_schema.clone());
                self.result.ui(ui, model, row, "tools/call", schema.as_ref());
            }
            None if run.task.status.is_terminal() => {
                ui.label(format!("the task ended {}", run.task.status));
            }
            None => {}
        }
        true
    }

    pub fn tool_def(&self) -> Option<&ToolDef> {
        let name = self.tool.as_ref()?;
        self.tools.iter().find(|t| &t.name == name)
    }

    /// Chooses a tool and builds its form.
    pub fn choose_tool(&mut self, name: &str) {
        let Some(def) = self.tools.iter().find(|t| t.name == name) else {
            return;
        };
        let form = Form::from_schema(&def.input_schema);
        self.tool = Some(name.to_owned());
        self.form = Some(form);
        self.form_changed();
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

    /// The `tools/call` for the chosen tool, as the form has it.
    pub fn tool_call(&self) -> Option<Outgoing> {
        let def = self.tool_def()?;
        let arguments = self.form.as_ref().map_or_else(|| json!({}), Form::value);
        let mut params = json!({"name": def.name, "arguments": arguments});
        if self.with_progress {
            params["_meta"] = json!({ "progressToken": format!("mcpscope-{}", self.history.len() + 1) });
        }
        if self.as_task
            && let Some(flavor) = self.task_flavor
        {
            params = mcpscope_core::protocol::tasks::call_params(params, flavor, None);
        }
        Some(Outgoing::Request {
            method: "tools/call".into(),
            params: Some(params),
            id: None,
        })
    }

    fn prompt_get(&self) -> Option<Outgoing> {
        let name = self.prompt.as_ref()?;
        let def = self.prompts.iter().find(|p| &p.name == name);
        let mut arguments = Map::new();
        for (k, v) in &self.prompt_args {
            let required = def.is_some_and(|d| d.arguments.iter().any(|a| &a.name == k && a.required));
            // An empty optional argument is left out rather than sent as "".
            if !v.is_empty() || required {
                arguments.insert(k.clone(), Value::String(v.clone()));
            }
        }
        Some(Outgoing::Request {
            method: "prompts/get".into(),
            params: Some(json!({"name": name, "arguments": arguments})),
            id: None,
        })
    }

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

    /// Records a sent message (the app calls this with the id it got).
    pub fn sent(&mut self, outgoing: Outgoing, id: Option<RequestId>) {
        let label = HistoryEntry::describe(&outgoing);
        let method = match &outgoing {
            Outgoing::Request { method, .. } => Some(method.clone()),
            Outgoing::Raw(line) => serde_json::from_slice::<Value>(line)
                .ok()
                .and_then(|v| v.get("method").and_then(Value::as_str).map(str::to_owned)),
            Outgoing::Notification { .. } => None,
        };
        if let (Some(id), Some(method)) = (&id, method) {
            let output_schema = match &outgoing {
                Outgoing::Request { params: Some(p), .. } if method == "tools/call" => p
                    .get("name")
                    .and_then(Value::as_str)
                    .and_then(|n| self.tools.iter().find(|t| t.name == n))
                    .and_then(|t| t.output_schema.clone()),
                _ => None,
            };
            if method == mcpscope_core::protocol::subscriptions::LISTEN {
                // A listen stays open: its stream shows under Listen, not as an answer.
                self.history.push(HistoryEntry {
                    outgoing,
                    label,
                    id: Some(id.clone()),
                });
                return;
            }
            let is_completion = method == "completion/complete";
            if is_completion {
                self.completion.pending = Some(id.clone());
            } else {
                let progress_token = match &outgoing {
                    Outgoing::Request { params: Some(p), .. } => p.pointer("/_meta/progressToken").cloned(),
                    _ => None,
                };
                self.task = None;
                self.pending = Some(Pending {
                    id: id.clone(),
                    method,
                    output_schema,
                    progress_token,
                    cancelled: false,
                });
                self.result.reset();
            }
            if is_completion {
                // Suggestions are not history worth keeping.
                return;
            }
        }
        self.history.push(HistoryEntry { outgoing, label, id });
    }

    /// Loads a past message into the composer to edit.
    pub fn load(&mut self, entry: &HistoryEntry) {
        match &entry.outgoing {
            Outgoing::Request {
                method,
                params: Some(p),
                ..
            } if method == "tools/call"
                && p.get("name")
                    .and_then(Value::as_str)
                    .is_some_and(|n| self.tools.iter().any(|t| t.name == n)) =>
            {
                let name = p["name"].as_str().unwrap_or_default().to_owned();
                self.mode = Mode::Tool;
                self.choose_tool(&name);
                if let Some(form) = &mut self.form {
                    form.set_value(p.get("arguments").unwrap_or(&json!({})));
                }
                self.form_changed();
            }
            Outgoing::Request { method, params, id } => {
                self.mode = Mode::Raw;
                self.raw.kind = RawKind::Request;
                self.raw.method = method.clone();
                self.raw.params = params
                    .as_ref()
                    .map(|p| serde_json::to_string_pretty(p).unwrap_or_default())
                    .unwrap_or_default();
                self.raw.id = match id {
                    Some(RequestId::Number(n)) => n.to_string(),
                    Some(RequestId::String(s)) => serde_json::to_string(s).unwrap_or_default(),
                    None => String::new(),
                };
            }
            Outgoing::Notification { method, params } => {
                self.mode = Mode::Raw;
                self.raw.kind = RawKind::Notification;
                self.raw.method = method.clone();
                self.raw.params = params
                    .as_ref()
                    .map(|p| serde_json::to_string_pretty(p).unwrap_or_default())
                    .unwrap_or_default();
            }
            Outgoing::Raw(line) => {
                self.mode = Mode::Raw;
                self.raw.kind = RawKind::Line;
                self.raw.line = String::from_utf8_lossy(line).into_owned();
            }
        }
    }

    /// Takes completion suggestions when they arrive.
    fn poll_completion(&mut self, model: &SessionModel) {
        let Some(id) = &self.completion.pending else { return };
        let Some(row) = model.response_to(id) else { return };
        self.completion.pending = None;
        let v: Value = model
            .store
            .get(row)
            .and_then(|r| serde_json::from_slice(r.raw()).ok())
            .unwrap_or(Value::Null);
        self.completion.values = v
            .pointer("/result/completion/values")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect())
            .unwrap_or_default();
    }

    /// Asks for suggestions when the field's text changed since the last ask.
    fn complete(
        &mut self,
        field: String,
        reference: Value,
        arg: &str,
        value: &str,
        context: Map<String, Value>,
    ) -> Option<ComposerAction> {
        if self.completion.pending.is_some() || (self.completion.field == field && self.completion.asked_with == value)
        {
            return None;
        }
        if self.completion.field != field {
            self.completion.values.clear();
        }
        self.completion.field = field;
        self.completion.asked_with = value.to_owned();
        let mut params = json!({"ref": reference, "argument": {"name": arg, "value": value}});
        if !context.is_empty() {
            params["context"] = json!({ "arguments": context });
        }
        Some(ComposerAction::Send(Outgoing::Request {
            method: "completion/complete".into(),
            params: Some(params),
            id: None,
        }))
    }

    pub fn ui(
        &mut self,
        ui: &mut Ui,
        model: &SessionModel,
        live: bool,
        server_requests: &[ServerRequest],
        roots: &[Value],
    ) -> Vec<ComposerAction> {
        self.sync(model);
        self.poll_completion(model);
        let mut actions = Vec::new();
        if !server_requests.is_empty() {
            self.server_requests_ui(ui, server_requests, &mut actions);
            ui.separator();
        }
        let caps = model.capabilities().cloned().unwrap_or(Value::Null);
        ui.horizontal_wrapped(|ui| {
            for m in Mode::ALL {
                ui.selectable_value(&mut self.mode, m, m.label());
            }
        });
        if let Some(cap) = self.mode.capability()
            && model.capabilities().is_some()
            && caps.get(cap).is_none()
        {
            ui.label(
                RichText::new(format!(
                    "⚠ the server did not advertise \"{cap}\": it may answer -32601 (you can still send on purpose)"
                ))
                .color(theme::WARN),
            );
        }
        if let Some(list) = self.mode.list_method() {
            ui.horizontal(|ui| {
                if ui
                    .add_enabled(live, egui::Button::new(format!("Fetch {list}")))
                    .clicked()
                {
                    actions.push(ComposerAction::Send(Outgoing::Request {
                        method: list.into(),
                        params: None,
                        id: None,
                    }));
                }
                if let Some(cursor) = self.next_cursor.get(list) {
                    let page = self.pages.get(list).copied().unwrap_or(1);
                    if ui
                        .add_enabled(live, egui::Button::new(format!("Load page {} (nextCursor)", page + 1)))
                        .clicked()
                    {
                        actions.push(ComposerAction::Send(Outgoing::Request {
                            method: list.into(),
                            params: Some(json!({ "cursor": cursor })),
                            id: None,
                        }));
                    }
                }
                if self.mode == Mode::Resource
                    && ui
                        .add_enabled(live, egui::Button::new("Fetch resources/templates/list"))
                        .clicked()
                {
                    actions.push(ComposerAction::Send(Outgoing::Request {
                        method: "resources/templates/list".into(),
                        params: None,
                        id: None,
                    }));
                }
            });
        }
        ui.separator();
        let completions = caps.get("completions").is_some();
        match self.mode {
            Mode::Tool => self.tool_ui(ui, live, &mut actions),
            Mode::Prompt => self.prompt_ui(ui, live, completions, &mut actions),
            Mode::Resource => {
                self.resource_ui(ui, live, completions, &mut actions);
                self.updates_ui(ui, model, live, &mut actions);
            }
            Mode::Logging => self.logging_ui(ui, live, &mut actions),
            Mode::Listen => self.listen_ui(ui, model, live, &mut actions),
            Mode::Raw => self.raw_ui(ui, live, &mut actions),
        }
        ui.separator();
        self.result_ui(ui, model, live, &mut actions);
        ui.separator();
        self.history_ui(ui, live, &mut actions);
        self.roots_ui(ui, roots, &mut actions);
        actions
    }

    fn send_row(&self, ui: &mut Ui, live: bool, enabled: bool, label: &str) -> bool {
        let mut send = false;
        ui.horizontal(|ui| {
            let b = ui.add_enabled(live && enabled, egui::Button::new(label));
            send = b.clicked();
            ui.weak("Ctrl+Enter");
            if !live {
                ui.weak("(no live session)");
            }
        });
        // Ctrl+Enter sends from anywhere in the composer, even from a text field.
        if live && enabled && ui.input_mut(|i| i.consume_key(Modifiers::COMMAND, Key::Enter)) {
            send = true;
        }
        send
    }

    fn tool_ui(&mut self, ui: &mut Ui, live: bool, actions: &mut Vec<ComposerAction>) {
        if self.tools.is_empty() {
            ui.weak("No tools listed yet: fetch tools/list.");
            return;
        }
        let current = self.tool.clone().unwrap_or_else(|| "choose a tool".into());
        let mut chosen = None;
        let label = ui.label("tool");
        egui::ComboBox::from_id_salt("composer-tool")
            .selected_text(current)
            .width(260.0)
            .show_ui(ui, |ui| {
                for t in &self.tools {
                    let text = match &t.title {
                        Some(title) if title != &t.name => format!("{} ({title})", t.name),
                        _ => t.name.clone(),
                    };
                    if ui.selectable_label(self.tool.as_ref() == Some(&t.name), text).clicked() {
                        chosen = Some(t.name.clone());
                    }
                }
            })
            .response
            .labelled_by(label.id);
        if let Some(name) = chosen {
            self.choose_tool(&name);
        }
        let Some(def) = self.tool_def().cloned() else { return };
        if let Some(d) = &def.description {
            ui.add(egui::Label::new(RichText::new(d).weak()).wrap());
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
        if let Some(flavor) = self.task_flavor {
            ui.checkbox(&mut self.as_task, format!("run as a task ({})", flavor.label()))
                .on_hover_text("The server offers tasks for tools/call: the call returns a task, polled until it ends");
        }
        if self.send_row(ui, live, true, "Send tools/call")
            && let Some(out) = self.tool_call()
        {
            actions.push(ComposerAction::Send(out));
        }
    }

    fn prompt_ui(&mut self, ui: &mut Ui, live: bool, completions: bool, actions: &mut Vec<ComposerAction>) {
        if self.prompts.is_empty() {
            ui.weak("No prompts listed yet: fetch prompts/list.");
            return;
        }
        let mut chosen = None;
        let label = ui.label("prompt");
        egui::ComboBox::from_id_salt("composer-prompt")
            .selected_text(self.prompt.clone().unwrap_or_else(|| "choose a prompt".into()))
            .width(260.0)
            .show_ui(ui, |ui| {
                for p in &self.prompts {
                    if ui
                        .selectable_label(self.prompt.as_ref() == Some(&p.name), &p.name)
                        .clicked()
                    {
                        chosen = Some(p.name.clone());
                    }
                }
            })
            .response
            .labelled_by(label.id);
        if let Some(name) = chosen {
            self.prompt = Some(name);
            self.prompt_args.clear();
            self.completion = Completion::default();
        }
        let Some(def) = self
            .prompt
            .as_ref()
            .and_then(|n| self.prompts.iter().find(|p| &p.name == n))
            .cloned()
        else {
            return;
        };
        if let Some(d) = &def.description {
            ui.add(egui::Label::new(RichText::new(d).weak()).wrap());
        }
        let mut missing = Vec::new();
        for arg in &def.arguments {
            let value = self.prompt_args.entry(arg.name.clone()).or_default();
            let field = format!("prompt:{}:{}", def.name, arg.name);
            ui.horizontal(|ui| {
                let text = if arg.required {
                    format!("{} *", arg.name)
                } else {
                    arg.name.clone()
                };
                let l = ui.label(text);
                ui.add(egui::TextEdit::singleline(value).desired_width(220.0))
                    .labelled_by(l.id);
            });
            if let Some(d) = &arg.description {
                ui.weak(d);
            }
            if arg.required && value.is_empty() {
                missing.push(arg.name.clone());
            }
            let value = value.clone();
            if completions && !value.is_empty() {
                let context: Map<String, Value> = self
                    .prompt_args
                    .iter()
                    .filter(|(k, v)| *k != &arg.name && !v.is_empty())
                    .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                    .collect();
                if let Some(a) = self.complete(
                    field.clone(),
                    json!({"type": "ref/prompt", "name": def.name}),
                    &arg.name,
                    &value,
                    context,
                ) && live
                {
                    actions.push(a);
                }
            }
            if let Some(pick) = self.suggestions_ui(ui, &field) {
                self.prompt_args.insert(arg.name.clone(), pick);
            }
        }
        if !missing.is_empty() {
            ui.label(RichText::new(format!("required: {}", missing.join(", "))).color(theme::WARN));
        }
        if self.send_row(ui, live, true, "Send prompts/get")
            && let Some(out) = self.prompt_get()
        {
            actions.push(ComposerAction::Send(out));
        }
    }

    /// Clickable suggestions for `field`; returns the one picked.
    fn suggestions_ui(&mut self, ui: &mut Ui, field: &str) -> Option<String> {
        if self.completion.field != field || self.completion.values.is_empty() {
            return None;
        }
        let mut picked = None;
        ui.horizontal_wrapped(|ui| {
            ui.weak("suggestions:");
            for v in self.completion.values.iter().take(20) {
                if ui.small_button(v).clicked() {
                    picked = Some(v.clone());
                }
            }
        });
        if let Some(p) = &picked {
            self.completion.asked_with = p.clone();
            self.completion.values.clear();
        }
        picked
    }

    fn resource_ui(&mut self, ui: &mut Ui, live: bool, completions: bool, actions: &mut Vec<ComposerAction>) {
        let mut read = None;
        if !self.resources.is_empty() {
            egui::CollapsingHeader::new(format!("resources ({})", self.resources.len()))
                .id_salt("composer-resources")
                .default_open(true)
                .show(ui, |ui| {
                    egui::ScrollArea::vertical()
                        .id_salt("composer-resource-list")
                        .max_height(160.0)
                        .show(ui, |ui| {
                            for r in &self.resources {
                                let uri = r.get("uri").and_then(Value::as_str).unwrap_or("?");
                                let name = r.get("name").and_then(Value::as_str).unwrap_or("");
                                if ui
                                    .selectable_label(self.resource_uri == uri, format!("{name}  {uri}"))
                                    .clicked()
                                {
                                    read = Some(uri.to_owned());
                                }
                            }
                        });
                });
        }
        if let Some(uri) = read {
            self.resource_uri = uri;
        }
        if !self.templates.is_empty() {
            let mut chosen = None;
            let label = ui.label("template");
            egui::ComboBox::from_id_salt("composer-template")
                .selected_text(self.template.clone().unwrap_or_else(|| "choose a template".into()))
                .width(300.0)
                .show_ui(ui, |ui| {
                    for t in &self.templates {
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
            }
            if let Some(tpl) = self.template.clone() {
                match UriTemplate::parse(&tpl) {
                    Err(e) => {
                        ui.label(RichText::new(format!("not a valid URI template: {e}")).color(theme::ERROR));
                    }
                    Ok(parsed) => {
                        for var in parsed.variables() {
                            let name = var.name.clone();
                            let field = format!("template:{tpl}:{name}");
                            let value = self.template_values.entry(name.clone()).or_default();
                            ui.horizontal(|ui| {
                                let l = ui.label(&name);
                                ui.add(egui::TextEdit::singleline(value).desired_width(220.0))
                                    .labelled_by(l.id);
                            });
                            let value = value.clone();
                            if completions && !value.is_empty() {
                                let context = self
                                    .template_values
                                    .iter()
                                    .filter(|(k, v)| **k != name && !v.is_empty())
                                    .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                                    .collect();
                                if let Some(a) = self.complete(
                                    field.clone(),
                                    json!({"type": "ref/resource", "uri": tpl}),
                                    &name,
                                    &value,
                                    context,
                                ) && live
                                {
                                    actions.push(a);
                                }
                            }
                            if let Some(pick) = self.suggestions_ui(ui, &field) {
                                self.template_values.insert(name, pick);
                            }
                        }
                        if let Some(Ok(uri)) = self.expanded_template() {
                            ui.horizontal(|ui| {
                                ui.weak("expands to");
                                ui.monospace(&uri);
                                if ui.small_button("use").clicked() {
                                    self.resource_uri = uri;
                                }
                            });
                        }
                    }
                }
            }
        }
        ui.horizontal(|ui| {
            let l = ui.label("uri");
            ui.add(egui::TextEdit::singleline(&mut self.resource_uri).desired_width(320.0))
                .labelled_by(l.id);
        });
        let uri = self.resource_uri.trim().to_owned();
        let mut send = |method: &str| {
            actions.push(ComposerAction::Send(Outgoing::Request {
                method: method.into(),
                params: Some(json!({ "uri": uri })),
                id: None,
            }))
        };
        ui.horizontal(|ui| {
            if ui
                .add_enabled(live && !uri.is_empty(), egui::Button::new("Read"))
                .clicked()
            {
                send("resources/read");
            }
            if ui
                .add_enabled(live && !uri.is_empty(), egui::Button::new("Subscribe"))
                .clicked()
            {
                send("resources/subscribe");
            }
            if ui
                .add_enabled(live && !uri.is_empty(), egui::Button::new("Unsubscribe"))
                .clicked()
            {
                send("resources/unsubscribe");
            }
        });
    }

    /// `notifications/resources/updated` seen so far, by URI.
    fn updates_ui(&mut self, ui: &mut Ui, model: &SessionModel, live: bool, actions: &mut Vec<ComposerAction>) {
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
                    actions.push(ComposerAction::Send(Outgoing::Request {
                        method: "resources/read".into(),
                        params: Some(json!({ "uri": uri })),
                        id: None,
                    }));
                }
            });
        }
    }

    /// Recomputes the `subscriptions/listen` streams from the rows (only the
    /// listen requests and notifications are read), when rows arrived.
    pub fn sync_subscriptions(&mut self, model: &SessionModel) {
        let store = &model.store;
        if store.len() < self.subscriptions_for {
            // Another session's rows: start over.
            self.subscriptions_for = 0;
            self.listen_frames.clear();
        }
        // Only rows added since the last call are looked at; notifications
        // before the first listen request cannot belong to a subscription.
        let before = self.listen_frames.len();
        for i in self.subscriptions_for..store.len() {
            let Some(r) = store.get(i) else { continue };
            let relevant = match r.lane() {
                mcpscope_core::record::store::Lane::Out => {
                    r.method() == Some(mcpscope_core::protocol::subscriptions::LISTEN)
                }
                mcpscope_core::record::store::Lane::In => {
                    !self.listen_frames.is_empty() && r.kind() == mcpscope_core::wire::classify::Kind::Notification
                }
                _ => false,
            };
            if relevant && let Some(f) = r.to_frame() {
                self.listen_frames.push(f);
            }
        }
        self.subscriptions_for = store.len();
        if self.listen_frames.len() != before {
            let refs: Vec<&mcpscope_core::wire::frame::Frame> = self.listen_frames.iter().collect();
            self.subscriptions = mcpscope_core::protocol::subscriptions::subscriptions(&refs);
        }
    }

    fn listen_ui(&mut self, ui: &mut Ui, model: &SessionModel, live: bool, actions: &mut Vec<ComposerAction>) {
        ui.weak("2026-07-28: one long request carries the notifications you ask for (replaces the GET stream and resources/subscribe).");
        let f = &mut self.listen_filter;
        ui.checkbox(&mut f.tools_list_changed, "toolsListChanged");
        ui.checkbox(&mut f.prompts_list_changed, "promptsListChanged");
        ui.checkbox(&mut f.resources_list_changed, "resourcesListChanged");
        let l = ui.label("resource URIs (one per line)");
        ui.add(
            egui::TextEdit::multiline(&mut self.listen_uris)
                .desired_rows(2)
                .desired_width(f32::INFINITY),
        )
        .labelled_by(l.id);
        self.listen_filter.resource_subscriptions = self
            .listen_uris
            .lines()
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .map(str::to_owned)
            .collect();
        if self.send_row(ui, live, true, "Send subscriptions/listen") {
            actions.push(ComposerAction::Send(Outgoing::Request {
                method: mcpscope_core::protocol::subscriptions::LISTEN.into(),
                params: Some(self.listen_filter.listen_params()),
                id: None,
            }));
        }
        self.sync_subscriptions(model);
        for sub in &self.subscriptions {
            egui::Frame::group(ui.style()).show(ui, |ui| {
                ui.set_width(ui.available_width());
                ui.horizontal_wrapped(|ui| {
                    ui.strong(format!("listen #{}", sub.id));
                    ui.monospace(sub.requested.to_string());
                    match &sub.acknowledged {
                        Some((row, honoured)) => {
                            ui.label(RichText::new(format!("✔ acknowledged (row {row}): {honoured}")).color(theme::OK));
                        }
                        None => {
                            ui.label(RichText::new("not acknowledged yet").color(theme::WARN));
                        }
                    }
                    if let Some(end) = sub.closed_seq {
                        ui.weak(format!("ended at row {end}"));
                    } else if live && ui.small_button("Stop").clicked() {
                        actions.push(ComposerAction::Cancel(sub.id.clone()));
                    }
                });
                ui.label(format!("{} notification(s) on this stream", sub.notifications.len()));
                for &row in sub.notifications.iter().rev().take(10) {
                    if let Some(r) = model.store.get(row as usize) {
                        ui.monospace(format!("row {row}: {}", r.method().unwrap_or("?")));
                    }
                }
            });
        }
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
        if self.send_row(ui, live, true, "Send logging/setLevel") {
            actions.push(ComposerAction::Send(Outgoing::Request {
                method: "logging/setLevel".into(),
                params: Some(json!({ "level": self.log_level })),
                id: None,
            }));
        }
    }

    fn raw_ui(&mut self, ui: &mut Ui, live: bool, actions: &mut Vec<ComposerAction>) {
        ui.horizontal(|ui| {
            ui.selectable_value(&mut self.raw.kind, RawKind::Request, "request");
            ui.selectable_value(&mut self.raw.kind, RawKind::Notification, "notification");
            ui.selectable_value(&mut self.raw.kind, RawKind::Line, "raw line");
        });
        if self.raw.kind == RawKind::Line {
            ui.weak("Sent exactly as typed (a newline is added), even if it is not JSON.");
            let l = ui.label("line");
            ui.add(
                egui::TextEdit::multiline(&mut self.raw.line)
                    .code_editor()
                    .desired_rows(3)
                    .desired_width(f32::INFINITY),
            )
            .labelled_by(l.id);
        } else {
            egui::Grid::new("raw-grid").num_columns(2).show(ui, |ui| {
                let l = ui.label("method");
                ui.add(egui::TextEdit::singleline(&mut self.raw.method).desired_width(260.0))
                    .labelled_by(l.id);
                ui.end_row();
                if self.raw.kind == RawKind::Request {
                    let l = ui.label("id");
                    ui.add(
                        egui::TextEdit::singleline(&mut self.raw.id)
                            .hint_text("next free id")
                            .desired_width(120.0),
                    )
                    .labelled_by(l.id);
                    ui.end_row();
                }
                let l = ui.label("params");
                ui.add(
                    egui::TextEdit::multiline(&mut self.raw.params)
                        .code_editor()
                        .hint_text("JSON, or empty for none")
                        .desired_rows(3)
                        .desired_width(f32::INFINITY),
                )
                .labelled_by(l.id);
                ui.end_row();
            });
        }
        let outgoing = self.raw.outgoing();
        if let Err(e) = &outgoing {
            ui.label(RichText::new(e).color(theme::ERROR));
        }
        if self.send_row(ui, live, outgoing.is_ok(), "Send")
            && let Ok(out) = outgoing
        {
            actions.push(ComposerAction::Send(out));
        }
    }

    fn result_ui(&mut self, ui: &mut Ui, model: &SessionModel, live: bool, actions: &mut Vec<ComposerAction>) {
        let Some(p) = self.pending.clone() else {
            ui.weak("The answer to what you send shows here.");
            return;
        };
        let progress = p.progress_token.as_ref().and_then(|t| model.progress_for(t));
        if self.task_ui(ui, model, live, actions) {
            return;
        }
        // A multi round-trip request is answered by the last retry of its chain.
        let head = model.chain_head(&p.id);
        if head != p.id {
            let no = model.conversations.get(&p.id).copied().unwrap_or_default();
            ui.label(
                RichText::new(format!(
                    "conversation {no}: {} #{} needed input; now waiting on #{head}",
                    p.method, p.id
                ))
                .color(theme::WARN),
            );
        }
        match model.response_to(&head) {
            None if p.cancelled => {
                ui.label(
                    RichText::new(format!(
                        "{} #{} cancelled: notifications/cancelled sent, the server should not answer",
                        p.method, p.id
                    ))
                    .color(theme::WARN),
                );
            }
            None => {
                ui.horizontal(|ui| {
                    ui.spinner();
                    ui.label(format!("waiting for the answer to {} #{}", p.method, p.id));
                    if live && ui.button("Cancel").clicked() {
                        actions.push(ComposerAction::Cancel(p.id.clone()));
                        if let Some(p) = &mut self.pending {
                            p.cancelled = true;
                        }
                    }
                });
                if let Some(pr) = progress {
                    progress_ui(ui, pr);
                }
            }
            Some(row) => {
                if p.cancelled {
                    ui.label(RichText::new("answered although it was cancelled").color(theme::WARN));
                }
                if let Some(pr) = progress {
                    progress_ui(ui, pr);
                }
                self.result.ui(ui, model, row, &p.method, p.output_schema.as_ref())
            }
        }
    }

    fn history_ui(&mut self, ui: &mut Ui, live: bool, actions: &mut Vec<ComposerAction>) {
        let mut load = None;
        egui::CollapsingHeader::new(format!("History ({})", self.history.len()))
            .id_salt("composer-history")
            .default_open(false)
            .show(ui, |ui| {
                let row_h = ui.spacing().interact_size.y;
                egui::ScrollArea::vertical()
                    .id_salt("composer-history-list")
                    .max_height(180.0)
                    .show_rows(ui, row_h, self.history.len(), |ui, range| {
                        // Newest first.
                        for pos in range {
                            let Some(e) = self
                                .history
                                .len()
                                .checked_sub(pos + 1)
                                .and_then(|i| self.history.get(i))
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
                                let id = e.id.as_ref().map(|i| format!(" #{i}")).unwrap_or_default();
                                ui.label(RichText::new(format!("{}{id}", e.label)).monospace());
                            });
                        }
                    });
            });
        if let Some(e) = load {
            self.load(&e);
        }
    }

    fn roots_ui(&mut self, ui: &mut Ui, roots: &[Value], actions: &mut Vec<ComposerAction>) {
        egui::CollapsingHeader::new(format!("Roots offered to the server ({})", roots.len()))
            .id_salt("composer-roots")
            .default_open(false)
            .show(ui, |ui| {
                if self.roots_text.is_empty() {
                    self.roots_text = roots
                        .iter()
                        .map(|r| {
                            let uri = r.get("uri").and_then(Value::as_str).unwrap_or_default();
                            match r.get("name").and_then(Value::as_str) {
                                Some(n) => format!("{uri} {n}"),
                                None => uri.to_owned(),
                            }
                        })
                        .collect::<Vec<_>>()
                        .join("\n");
                }
                ui.weak("One root per line: a file:// URI, then an optional name. roots/list is answered with these.");
                let l = ui.label("roots");
                ui.add(
                    egui::TextEdit::multiline(&mut self.roots_text)
                        .desired_rows(3)
                        .desired_width(f32::INFINITY),
                )
                .labelled_by(l.id);
                if let Some(e) = &self.roots_error {
                    ui.label(RichText::new(e).color(theme::ERROR));
                }
                if ui.button("Apply and notify the server").clicked() {
                    match parse_roots(&self.roots_text) {
                        Ok(r) => {
                            self.roots_error = None;
                            actions.push(ComposerAction::RootsChanged(r));
                        }
                        Err(e) => self.roots_error = Some(e),
                    }
                }
            });
    }

    fn server_requests_ui(&mut self, ui: &mut Ui, requests: &[ServerRequest], actions: &mut Vec<ComposerAction>) {
        self.elicitations
            .retain(|(id, _, _)| requests.iter().any(|r| &r.id == id));
        for req in requests {
            ui.label(
                RichText::new(format!(
                    "‼ The server asks: {} #{} (row {})",
                    req.method, req.id, req.row
                ))
                .color(theme::WARN)
                .strong(),
            );
            ui.push_id(format!("server-request-{}", req.id), |ui| match req.method.as_str() {
                "elicitation/create" => self.elicitation_ui(ui, req, actions),
                "sampling/createMessage" => self.sampling_ui(ui, req, actions),
                _ => {}
            });
        }
    }

    fn elicitation_ui(&mut self, ui: &mut Ui, req: &ServerRequest, actions: &mut Vec<ComposerAction>) {
        let message = req.params.get("message").and_then(Value::as_str).unwrap_or("");
        ui.add(egui::Label::new(message).wrap());
        if req.params.get("mode").and_then(Value::as_str) == Some("url") {
            let url = req.params.get("url").and_then(Value::as_str).unwrap_or("?");
            ui.label(format!(
                "The server asks you to open {url} (URL mode). mcpscope does not open it."
            ));
            ui.horizontal(|ui| {
                for action in ["accept", "decline", "cancel"] {
                    if ui.button(action).clicked() {
                        actions.push(ComposerAction::Answer(req.id.clone(), Ok(json!({ "action": action }))));
                    }
                }
            });
            return;
        }
        let pos = match self.elicitations.iter().position(|(id, _, _)| id == &req.id) {
            Some(p) => p,
            None => {
                let schema = req.params.get("requestedSchema").cloned().unwrap_or(json!({}));
                let mut form = Form::from_schema(&schema);
                form.apply_defaults();
                let errors = form.validate();
                self.elicitations.push((req.id.clone(), form, errors));
                self.elicitations.len() - 1
            }
        };
        let (_, form, errors) = &mut self.elicitations[pos];
        if form_view::form_ui(ui, form, errors) {
            *errors = form.validate();
        }
        ui.horizontal(|ui| {
            if ui.button("Accept").clicked() {
                actions.push(ComposerAction::Answer(
                    req.id.clone(),
                    Ok(json!({"action": "accept", "content": form.value()})),
                ));
            }
            if ui.button("Decline").clicked() {
                actions.push(ComposerAction::Answer(req.id.clone(), Ok(json!({"action": "decline"}))));
            }
            if ui.button("Cancel").clicked() {
                actions.push(ComposerAction::Answer(req.id.clone(), Ok(json!({"action": "cancel"}))));
            }
            if !errors.is_empty() {
                ui.label(RichText::new(format!("{} problem(s)", errors.len())).color(theme::WARN));
            }
        });
    }

    fn sampling_ui(&mut self, ui: &mut Ui, req: &ServerRequest, actions: &mut Vec<ComposerAction>) {
        if let Some(system) = req.params.get("systemPrompt").and_then(Value::as_str) {
            ui.weak(format!("system: {system}"));
        }
        for m in req
            .params
            .get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
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
        if let Some(max) = req.params.get("maxTokens") {
            ui.weak(format!("maxTokens: {max}"));
        }
        let key = req.id.to_string();
        let reply = self.sampling_reply.entry(key.clone()).or_default();
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
                    req.id.clone(),
                    Ok(json!({
                        "role": "assistant",
                        "content": {"type": "text", "text": text},
                        "model": "mcpscope-human",
                        "stopReason": "endTurn",
                    })),
                ));
                self.sampling_reply.remove(&key);
            }
            if ui.button("Reject").clicked() {
                actions.push(ComposerAction::Answer(
                    req.id.clone(),
                    Err(mcpscope_core::wire::message::ErrorObject::new(
                        -1,
                        "User rejected sampling request",
                    )),
                ));
                self.sampling_reply.remove(&key);
            }
        });
    }
}

fn progress_ui(ui: &mut Ui, p: &mcpscope_core::record::model::Progress) {
    let text = match (p.total, &p.message) {
        (Some(t), Some(m)) => format!("{} / {t} · {m}", p.progress),
        (Some(t), None) => format!("{} / {t}", p.progress),
        (None, Some(m)) => format!("{} · {m}", p.progress),
        (None, None) => format!("{} (no total)", p.progress),
    };
    let fraction = p.total.filter(|t| *t > 0.0).map_or(0.0, |t| (p.progress / t) as f32);
    let bar = egui::ProgressBar::new(fraction.clamp(0.0, 1.0)).text(format!("progress {text}"));
    ui.add(if p.total.is_some() { bar } else { bar.animate(true) });
}

/// Parses the roots editor: one `file://` URI per line, then an optional name.
pub fn parse_roots(text: &str) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let (uri, name) = match line.split_once(char::is_whitespace) {
            Some((u, n)) => (u, Some(n.trim())),
            None => (line, None),
        };
        if !uri.starts_with("file://") {
            return Err(format!("line {}: a root must be a file:// URI, not {uri:?}", n + 1));
        }
        let mut root = json!({ "uri": uri });
        if let Some(name) = name.filter(|n| !n.is_empty()) {
            root["name"] = json!(name);
        }
        out.push(root);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_as_numbers_or_strings() {
        assert_eq!(parse_id(""), Ok(None));
        assert_eq!(parse_id(" 7 "), Ok(Some(RequestId::Number(7))));
        assert_eq!(parse_id("abc"), Ok(Some(RequestId::String("abc".into()))));
        assert_eq!(parse_id("\"7\""), Ok(Some(RequestId::String("7".into()))));
        assert!(parse_id("\"open").is_err());
    }

    #[test]
    fn raw_composer_builds_requests_notifications_and_lines() {
        let mut r = RawComposer {
            kind: RawKind::Request,
            method: "tools/list".into(),
            params: r#"{"cursor":"x"}"#.into(),
            id: "req-1".into(),
            line: String::new(),
        };
        assert_eq!(
            r.outgoing(),
            Ok(Outgoing::Request {
                method: "tools/list".into(),
                params: Some(json!({"cursor": "x"})),
                id: Some(RequestId::String("req-1".into())),
            })
        );
        r.params = "{oops".into();
        assert!(r.outgoing().unwrap_err().contains("params are not JSON"));
        r.kind = RawKind::Notification;
        r.params.clear();
        assert_eq!(
            r.outgoing(),
            Ok(Outgoing::Notification {
                method: "tools/list".into(),
                params: None
            })
        );
        r.kind = RawKind::Line;
        r.line = "{not json".into();
        assert_eq!(r.outgoing(), Ok(Outgoing::Raw(b"{not json".to_vec())));
    }

    #[test]
    fn roots_editor_parses_and_rejects_non_file_uris() {
        assert_eq!(
            parse_roots("file:///tmp tmp dir\n\nfile:///home\n").unwrap(),
            [
                json!({"uri": "file:///tmp", "name": "tmp dir"}),
                json!({"uri": "file:///home"})
            ]
        );
        assert!(parse_roots("https://x").unwrap_err().contains("line 1"));
    }

    fn composer_with_tool(schema: Value) -> ComposerPanel {
        let mut c = ComposerPanel {
            tools: vec![ToolDef {
                name: "echo".into(),
                title: None,
                description: None,
                input_schema: schema,
                output_schema: Some(json!({"type": "object"})),
            }],
            with_progress: false,
            ..ComposerPanel::default()
        };
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
        c.args_text = r#"{"message": "hi", "n": 3}"#.into();
        c.args_text_changed();
        assert_eq!(c.args_error, None);
        assert_eq!(
            c.tool_call(),
            Some(Outgoing::Request {
                method: "tools/call".into(),
                params: Some(json!({"name": "echo", "arguments": {"message": "hi", "n": 3}})),
                id: None,
            })
        );
        c.args_text = "[1]".into();
        c.args_text_changed();
        assert!(c.args_error.as_deref().unwrap().contains("object"));
        c.args_text = "{".into();
        c.args_text_changed();
        assert!(c.args_error.as_deref().unwrap().contains("not JSON"));
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
            c.pending.as_ref().unwrap().output_schema,
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
        assert_eq!(c.history[0].label, "tools/call echo");
        c.form = None;
        let first = c.history[0].clone();
        c.load(&first);
        assert_eq!(c.mode, Mode::Tool);
        assert_eq!(c.tool_call(), Some(call));
        let second = c.history[1].clone();
        c.load(&second);
        assert_eq!(c.mode, Mode::Raw);
        assert_eq!(c.raw.kind, RawKind::Notification);
        assert_eq!(c.raw.method, "notifications/x");
    }

    #[test]
    fn tool_calls_carry_a_progress_token_the_result_view_follows() {
        let mut c = composer_with_tool(json!({"type": "object"}));
        c.with_progress = true;
        let out = c.tool_call().unwrap();
        let Outgoing::Request { params: Some(p), .. } = &out else {
            panic!("{out:?}")
        };
        assert_eq!(p["_meta"]["progressToken"], "mcpscope-1");
        c.sent(out, Some(RequestId::Number(9)));
        assert_eq!(c.pending.as_ref().unwrap().progress_token, Some(json!("mcpscope-1")));
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
        let mut c = ComposerPanel {
            prompts: vec![
                PromptDef::from_json(&json!({
                    "name": "greet",
                    "arguments": [{"name": "who", "required": true}, {"name": "style"}]
                }))
                .unwrap(),
            ],
            ..ComposerPanel::default()
        };
        c.prompt = Some("greet".into());
        c.prompt_args.insert("who".into(), String::new());
        c.prompt_args.insert("style".into(), String::new());
        assert_eq!(
            c.prompt_get(),
            Some(Outgoing::Request {
                method: "prompts/get".into(),
                params: Some(json!({"name": "greet", "arguments": {"who": ""}})),
                id: None
            })
        );
    }
}
