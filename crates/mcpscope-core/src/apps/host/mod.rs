//! The host side of the MCP Apps protocol (View↔host JSON-RPC over
//! postMessage) as a state machine with no I/O, like the driver: the
//! runner feeds it what the View sent, the server's answers, the user's
//! decisions and the clock, and performs the effects it returns.
//!
//! Rules kept here, in one place: nothing goes to the View before
//! `ui/notifications/initialized` (queued until then); tool-input-partial*
//! → tool-input (once) → tool-result or tool-cancelled; a View's
//! `tools/call` only to tools whose `visibility` has "app"; display modes
//! only among those both sides declared, the resulting one answered;
//! links http(s) only and asked; downloads asked, sanitised and capped;
//! teardown sent and awaited with a timeout; draft names flagged, never sent.

use crate::apps::linkage::UI_PROTOCOL_VERSION;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

pub use view::{is_http_url, sanitize_file_name};

mod view;

/// Display modes a browser-page host can give a View.
pub const HOST_DISPLAY_MODES: [&str; 2] = ["inline", "fullscreen"];
/// At most this many files in one `ui/download-file`.
pub const MAX_DOWNLOAD_ITEMS: usize = 20;
/// At most this many bytes in one `ui/download-file`, all files together.
pub const MAX_DOWNLOAD_BYTES: usize = 16 * 1024 * 1024;
/// Messages, logs and model contexts kept for the App → host panel.
const MAX_KEPT: usize = 500;

/// Names from drafts and older versions: recognised and flagged, never sent.
pub const LEGACY_NAMES: [&str; 8] = [
    "ui/log",
    "ui/size-change",
    "ui/host-context-change",
    "ui/tool-cancelled",
    "ui/call-view-tool",
    "ui/list-view-tools",
    "ui/notifications/sandbox-ready",
    "ui/notifications/size-change",
];

/// Every message a View may send its host (besides the proxied ones and
/// `ui/notifications/sandbox-*`, which are the sandbox proxy's).
pub const VIEW_METHODS: [&str; 11] = [
    "ui/initialize",
    "ui/notifications/initialized",
    "ui/notifications/size-changed",
    "ui/notifications/request-teardown",
    "ui/open-link",
    "ui/message",
    "ui/update-model-context",
    "ui/request-display-mode",
    "ui/download-file",
    "ping",
    "notifications/message",
];

/// Requests a View may send that the host passes to the server on the
/// same session.
pub const PROXIED_METHODS: [&str; 6] = [
    "tools/call",
    "tools/list",
    "resources/read",
    "resources/list",
    "resources/templates/list",
    "prompts/list",
];

/// What the host is and what it offers; fixed for one View.
#[derive(Clone, Debug)]
pub struct HostSetup {
    /// The View's name on the timeline (its tool's name).
    pub app: String,
    /// The tool whose App this is, as listed.
    pub tool: Value,
    /// Every tool the server listed (a View's `tools/call` is checked against them).
    pub tools: Vec<Value>,
    /// The id of the `tools/call` that opened the View (`toolInfo.id`), if any.
    pub call_id: Option<Value>,
    pub host_version: String,
    pub theme: String,
    /// `containerDimensions`: a fixed width and a flexible height by default.
    pub width: Option<u32>,
    pub max_height: Option<u32>,
    pub locale: String,
    pub time_zone: String,
    /// The View's document, its policy already in its head.
    pub html: String,
    /// The View's Content Security Policy as applied.
    pub csp: String,
    /// The declared domains granted (`hostCapabilities.sandbox.csp`).
    pub csp_granted: Value,
    /// The iframe `allow` attribute (what the user granted of what was asked).
    pub allow: String,
    /// How long a View has to answer `ui/resource-teardown`.
    pub teardown_timeout: Duration,
    /// After this long without `initialized` the host says so (once).
    pub initialized_timeout: Duration,
}

impl HostSetup {
    pub fn new(app: impl Into<String>, tool: Value, html: String) -> Self {
        HostSetup {
            app: app.into(),
            tool,
            tools: Vec::new(),
            call_id: None,
            host_version: env!("CARGO_PKG_VERSION").to_owned(),
            theme: "light".into(),
            width: Some(760),
            max_height: Some(6000),
            locale: "en-US".into(),
            time_zone: "UTC".into(),
            html,
            csp: String::new(),
            csp_granted: json!({}),
            allow: String::new(),
            teardown_timeout: Duration::from_secs(3),
            initialized_timeout: Duration::from_secs(10),
        }
    }
}

/// Where the View is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for the sandbox proxy to say it is ready.
    WaitingForSandbox,
    /// The document was handed to the proxy; waiting for `ui/initialize`.
    Loading,
    /// `ui/initialize` answered; waiting for `initialized`.
    Initializing,
    /// Initialized: messages flow both ways.
    Ready,
    /// `ui/resource-teardown` sent; waiting for its answer.
    TearingDown,
    /// Gone (torn down, or closed before it was ready).
    Closed,
}

/// What the host page does (it is the View's container).
#[derive(Clone, Debug, PartialEq)]
pub enum PageAction {
    /// The View reported its size: the page resizes its frame (within the container).
    Resize { width: Option<f64>, height: Option<f64> },
    /// The display mode in effect changed.
    DisplayMode(String),
    /// Ask the user (the answer comes back as [`AppHost::user_answered`]).
    Ask { ticket: u64, question: String },
    /// Open this http(s) URL (the user allowed it).
    OpenLink(String),
    /// Save these files (the user allowed it): name, mime type, base64 bytes.
    Download(Vec<DownloadItem>),
    /// The View is gone: remove its frame.
    Close,
}

/// One file of a `ui/download-file`, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct DownloadItem {
    pub name: String,
    pub mime_type: String,
    /// An embedded resource's bytes (base64), or none for a link.
    pub base64: Option<String>,
    /// A resource link's URL (http(s) only).
    pub url: Option<String>,
}

/// Something for the runner to do.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Post this to the View (through the sandbox proxy).
    ToView(Value),
    /// Post this to the sandbox proxy itself (never forwarded to the View).
    ToSandbox(Value),
    /// Send this request to the server on the session; its answer goes to
    /// [`AppHost::server_answered`] with the ticket.
    ToServer {
        ticket: u64,
        method: String,
        params: Option<Value>,
    },
    /// Something for the host page.
    Page(PageAction),
    /// Something the host noticed that no message carries (a timeout).
    Note(String),
}

/// What the View showed the host, for the App → host panel.
#[derive(Clone, Debug, PartialEq)]
pub enum Shown {
    /// `ui/message`: content for the conversation.
    Message(Value),
    /// `notifications/message`: a log line.
    Log(Value),
}

enum Pending {
    /// A View request passed to the server: its id there.
    Proxied {
        view_id: Value,
    },
    /// A question for the user about a View request.
    OpenLink {
        view_id: Value,
        url: String,
    },
    Download {
        view_id: Value,
        items: Vec<DownloadItem>,
    },
}

/// The host side of one View.
pub struct AppHost {
    setup: HostSetup,
    phase: Phase,
    effects: Vec<Effect>,
    /// Host→View notifications held until `initialized`.
    queued: VecDeque<Value>,
    /// tool-input was queued or sent; a partial after it is dropped.
    input_given: bool,
    result_given: bool,
    /// What the View was told of its tool call (input, then result or
    /// cancellation), to tell it again when its page loads anew.
    told: Vec<Value>,
    /// The View's `appCapabilities` from `ui/initialize`.
    app_capabilities: Value,
    app_info: Value,
    display_mode: String,
    next_ticket: u64,
    pending: BTreeMap<u64, Pending>,
    next_request_id: i64,
    teardown: Option<(i64, Duration)>,
    loaded_at: Option<Duration>,
    warned_not_initialized: bool,
    model_context: Option<Value>,
    shown: Vec<Shown>,
    size: Option<(Option<f64>, Option<f64>)>,
}

impl AppHost {
    pub fn new(setup: HostSetup) -> Self {
        AppHost {
            setup,
            phase: Phase::WaitingForSandbox,
            effects: Vec::new(),
            queued: VecDeque::new(),
            input_given: false,
            result_given: false,
            told: Vec::new(),
            app_capabilities: Value::Null,
            app_info: Value::Null,
            display_mode: "inline".into(),
            next_ticket: 1,
            pending: BTreeMap::new(),
            next_request_id: 1,
            teardown: None,
            loaded_at: None,
            warned_not_initialized: false,
            model_context: None,
            shown: Vec::new(),
            size: None,
        }
    }

    pub fn setup(&self) -> &HostSetup {
        &self.setup
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    pub fn display_mode(&self) -> &str {
        &self.display_mode
    }

    /// The last `ui/update-model-context` (last one wins).
    pub fn model_context(&self) -> Option<&Value> {
        self.model_context.as_ref()
    }

    /// Messages and logs, oldest first.
    pub fn shown(&self) -> &[Shown] {
        &self.shown
    }

    /// The View's `appInfo` from `ui/initialize`.
    pub fn app_info(&self) -> &Value {
        &self.app_info
    }

    /// The last size the View reported.
    pub fn size(&self) -> Option<(Option<f64>, Option<f64>)> {
        self.size
    }

    /// What the runner must do now, in order.
    pub fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    /// `ui/initialize`'s answer: what the host is, offers and shows.
    pub fn initialize_result(&self, asked_version: Option<&str>) -> Value {
        let version = match asked_version {
            Some(v) if v == UI_PROTOCOL_VERSION => v,
            _ => UI_PROTOCOL_VERSION,
        };
        let content_kinds =
            json!({"text": {}, "image": {}, "audio": {}, "resource": {}, "resourceLink": {}, "structuredContent": {}});
        let mut sandbox = Map::new();
        sandbox.insert(
            "permissions".into(),
            crate::apps::csp::permissions_json(&self.setup.allow),
        );
        sandbox.insert("csp".into(), self.setup.csp_granted.clone());
        json!({
            "protocolVersion": version,
            "hostInfo": {"name": "mcpscope", "version": self.setup.host_version},
            "hostCapabilities": {
                "openLinks": {},
                "downloadFile": {},
                "serverTools": {},
                "serverResources": {},
                "logging": {},
                "updateModelContext": content_kinds,
                "message": content_kinds,
                "sandbox": sandbox,
            },
            "hostContext": self.host_context(),
        })
    }

    fn host_context(&self) -> Value {
        let mut dims = Map::new();
        if let Some(w) = self.setup.width {
            dims.insert("width".into(), w.into());
        }
        if let Some(h) = self.setup.max_height {
            dims.insert("maxHeight".into(), h.into());
        }
        let mut tool_info = Map::new();
        if let Some(id) = &self.setup.call_id {
            tool_info.insert("id".into(), id.clone());
        }
        tool_info.insert("tool".into(), self.setup.tool.clone());
        json!({
            "toolInfo": tool_info,
            "theme": self.setup.theme,
            "displayMode": self.display_mode,
            "availableDisplayModes": HOST_DISPLAY_MODES,
            "containerDimensions": dims,
            "locale": self.setup.locale,
            "timeZone": self.setup.time_zone,
            "platform": "web",
            "userAgent": format!("mcpscope/{}", self.setup.host_version),
        })
    }

    // ---- what the runner tells the host ----

    /// A message from the sandbox proxy's side (the View, or the proxy
    /// itself): what the host made of it, for the record.
    pub fn view_sent(&mut self, bytes: &[u8], now: Duration) -> Option<String> {
        let Ok(v) = serde_json::from_slice::<Value>(bytes) else {
            return Some("not JSON: ignored".into());
        };
        let Some(obj) = v.as_object() else {
            return Some("not a JSON-RPC object: ignored".into());
        };
        if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Some("no \"jsonrpc\": \"2.0\": ignored".into());
        }
        let id = obj.get("id").cloned();
        match obj.get("method").and_then(Value::as_str) {
            Some(method) => {
                let params = obj.get("params").cloned().unwrap_or(json!({}));
                match id {
                    Some(id) => self.view_request(id, method, params, now),
                    None => self.view_notification(method, params, now),
                }
            }
            None => match id {
                Some(id) => self.view_response(&id, obj),
                None => Some("neither a request, a notification nor a response: ignored".into()),
            },
        }
    }

    /// The server answered a request the host passed on (a result or a
    /// JSON-RPC error object).
    pub fn server_answered(&mut self, ticket: u64, outcome: Result<Value, Value>) {
        let Some(Pending::Proxied { view_id }) = self.pending.remove(&ticket) else {
            return;
        };
        if self.phase == Phase::Closed {
            return;
        }
        let msg = match outcome {
            Ok(result) => json!({"jsonrpc": "2.0", "id": view_id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": view_id, "error": error}),
        };
        self.effects.push(Effect::ToView(msg));
    }

    /// The user answered a question the page asked.
    pub fn user_answered(&mut self, ticket: u64, allowed: bool) -> Option<String> {
        let pending = self.pending.remove(&ticket)?;
        let (view_id, what) = match pending {
            Pending::Proxied { .. } => return None,
            Pending::OpenLink { view_id, url } => {
                if allowed {
                    self.effects.push(Effect::Page(PageAction::OpenLink(url.clone())));
                }
                (view_id, format!("open {url}"))
            }
            Pending::Download { view_id, items } => {
                let n = items.len();
                if allowed {
                    self.effects.push(Effect::Page(PageAction::Download(items)));
                }
                (view_id, format!("download {n} file(s)"))
            }
        };
        let result = if allowed { json!({}) } else { json!({"isError": true}) };
        self.answer(view_id, result);
        Some(format!(
            "the user {} to {what}",
            if allowed { "agreed" } else { "declined" }
        ))
    }

    /// `tool-input-partial`: arguments still streaming (dropped once the
    /// whole input was given).
    pub fn tool_input_partial(&mut self, arguments: Value) {
        if !self.input_given {
            self.notify_view("ui/notifications/tool-input-partial", json!({"arguments": arguments}));
        }
    }

    /// `tool-input`: the arguments the tool was called with (once).
    pub fn tool_input(&mut self, arguments: Value) {
        if self.input_given {
            return;
        }
        self.input_given = true;
        self.notify_view("ui/notifications/tool-input", json!({"arguments": arguments}));
    }

    /// `tool-result`: the tool's result (after tool-input; once).
    pub fn tool_result(&mut self, result: Value) {
        if self.result_given {
            return;
        }
        if !self.input_given {
            self.tool_input(json!({}));
        }
        self.result_given = true;
        self.notify_view("ui/notifications/tool-result", result);
    }

    /// `tool-cancelled`: the call will not give a result.
    pub fn tool_cancelled(&mut self, reason: Option<String>) {
        if self.result_given {
            return;
        }
        self.result_given = true;
        let params = match reason {
            Some(r) => json!({"reason": r}),
            None => json!({}),
        };
        self.notify_view("ui/notifications/tool-cancelled", params);
    }

    /// A notification from the server the View may care about
    /// (`notifications/*/list_changed` are passed on).
    pub fn server_notification(&mut self, method: &str, params: Option<Value>) {
        if matches!(
            method,
            "notifications/tools/list_changed"
                | "notifications/resources/list_changed"
                | "notifications/prompts/list_changed"
        ) {
            self.notify_view(method, params.unwrap_or(json!({})));
        }
    }

    /// The user switched the theme.
    pub fn set_theme(&mut self, theme: &str) {
        if self.setup.theme != theme {
            self.setup.theme = theme.to_owned();
            self.notify_view("ui/notifications/host-context-changed", json!({"theme": theme}));
        }
    }

    /// The container changed size.
    pub fn set_container(&mut self, width: Option<u32>, max_height: Option<u32>) {
        if (self.setup.width, self.setup.max_height) == (width, max_height) {
            return;
        }
        self.setup.width = width;
        self.setup.max_height = max_height;
        let mut dims = Map::new();
        if let Some(w) = width {
            dims.insert("width".into(), w.into());
        }
        if let Some(h) = max_height {
            dims.insert("maxHeight".into(), h.into());
        }
        self.notify_view(
            "ui/notifications/host-context-changed",
            json!({"containerDimensions": dims}),
        );
    }

    /// The user (the page's own control) switched the display mode; it
    /// stays within what both sides declared.
    pub fn user_display_mode(&mut self, mode: &str) -> Option<String> {
        match self.mode_refusal(mode) {
            Some(why) => Some(why),
            None => {
                self.switch_mode(mode);
                None
            }
        }
    }

    /// The user closes the View: `ui/resource-teardown`, awaited until the
    /// setup's timeout (closed at once when it never initialized).
    pub fn close(&mut self, reason: &str, now: Duration) {
        match self.phase {
            Phase::Closed | Phase::TearingDown => {}
            // Nothing goes to a View before `initialized`, teardown included.
            Phase::Ready => {
                let id = self.next_request_id;
                self.next_request_id += 1;
                self.teardown = Some((id, now + self.setup.teardown_timeout));
                self.phase = Phase::TearingDown;
                // Sent even if something is still queued: the View is going.
                self.effects.push(Effect::ToView(json!({
                    "jsonrpc": "2.0", "id": id, "method": "ui/resource-teardown", "params": {"reason": reason}
                })));
            }
            _ => self.closed(),
        }
    }

    /// The clock: teardown and `initialized` deadlines.
    pub fn tick(&mut self, now: Duration) {
        if let (Phase::TearingDown, Some((_, deadline))) = (self.phase, self.teardown)
            && now >= deadline
        {
            self.effects.push(Effect::Note(format!(
                "the View did not answer ui/resource-teardown within {} ms: closed anyway",
                self.setup.teardown_timeout.as_millis()
            )));
            self.closed();
        }
        if let Some(at) = self.loaded_at
            && matches!(self.phase, Phase::Loading | Phase::Initializing)
            && !self.warned_not_initialized
            && now.saturating_sub(at) >= self.setup.initialized_timeout
        {
            self.warned_not_initialized = true;
            self.effects.push(Effect::Note(format!(
                "the View has not sent ui/notifications/initialized {} s after it was loaded: nothing is sent to it until then",
                self.setup.initialized_timeout.as_secs()
            )));
        }
    }

    /// When the runner should call [`AppHost::tick`] next.
    pub fn next_wakeup(&self) -> Option<Duration> {
        let teardown = match (self.phase, self.teardown) {
            (Phase::TearingDown, Some((_, d))) => Some(d),
            _ => None,
        };
        let init = self
            .loaded_at
            .filter(|_| matches!(self.phase, Phase::Loading | Phase::Initializing) && !self.warned_not_initialized)
            .map(|at| at + self.setup.initialized_timeout);
        [teardown, init].into_iter().flatten().min()
    }

    // ---- helpers ----

    fn mode_refusal(&self, mode: &str) -> Option<String> {
        let declared: Vec<&str> = self
            .app_capabilities
            .get("availableDisplayModes")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if !HOST_DISPLAY_MODES.contains(&mode) {
            Some(format!(
                "display mode {mode:?} is not one the host offers ({HOST_DISPLAY_MODES:?})"
            ))
        } else if !declared.contains(&mode) {
            Some(format!(
                "display mode {mode:?} is not among the View's declared appCapabilities.availableDisplayModes {declared:?}"
            ))
        } else {
            None
        }
    }

    fn switch_mode(&mut self, mode: &str) {
        if self.display_mode == mode {
            return;
        }
        self.display_mode = mode.to_owned();
        self.effects
            .push(Effect::Page(PageAction::DisplayMode(mode.to_owned())));
        self.notify_view("ui/notifications/host-context-changed", json!({"displayMode": mode}));
    }

    fn proxy(&mut self, view_id: Value, method: &str, params: Value) {
        let ticket = self.ticket();
        self.pending.insert(ticket, Pending::Proxied { view_id });
        self.effects.push(Effect::ToServer {
            ticket,
            method: method.to_owned(),
            params: Some(params),
        });
    }

    fn ticket(&mut self) -> u64 {
        let t = self.next_ticket;
        self.next_ticket += 1;
        t
    }

    fn answer(&mut self, id: Value, result: Value) {
        self.effects
            .push(Effect::ToView(json!({"jsonrpc": "2.0", "id": id, "result": result})));
    }

    fn error(&mut self, id: Value, code: i64, message: &str) {
        self.effects.push(Effect::ToView(
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
        ));
    }

    fn notify_view(&mut self, method: &str, params: Value) {
        if self.phase == Phase::Closed || self.phase == Phase::TearingDown {
            return;
        }
        let msg = json!({"jsonrpc": "2.0", "method": method, "params": params});
        if matches!(
            method,
            "ui/notifications/tool-input" | "ui/notifications/tool-result" | "ui/notifications/tool-cancelled"
        ) {
            self.told.push(msg.clone());
        }
        if self.phase == Phase::Ready {
            self.effects.push(Effect::ToView(msg));
        } else {
            self.queued.push_back(msg);
        }
    }

    fn keep(&mut self, s: Shown) {
        if self.shown.len() >= MAX_KEPT {
            self.shown.remove(0);
        }
        self.shown.push(s);
    }

    fn closed(&mut self) {
        self.phase = Phase::Closed;
        self.teardown = None;
        self.queued.clear();
        self.pending.clear();
        self.effects.push(Effect::Page(PageAction::Close));
    }
}

#[cfg(test)]
mod tests;
