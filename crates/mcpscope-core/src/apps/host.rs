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

use crate::apps::linkage::{UI_PROTOCOL_VERSION, visible_to};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

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

    // ---- the View's messages ----

    fn view_request(&mut self, id: Value, method: &str, params: Value, now: Duration) -> Option<String> {
        if self.phase == Phase::Closed {
            return Some("the View is closed: ignored".into());
        }
        let early = (!matches!(self.phase, Phase::Ready | Phase::TearingDown)
            && !matches!(method, "ui/initialize" | "ping"))
        .then(|| "sent before ui/notifications/initialized".to_owned());
        let note = match method {
            "ui/initialize" => {
                let asked = params.get("protocolVersion").and_then(Value::as_str).map(str::to_owned);
                self.app_capabilities = params.get("appCapabilities").cloned().unwrap_or(Value::Null);
                self.app_info = params.get("appInfo").cloned().unwrap_or(Value::Null);
                let result = self.initialize_result(asked.as_deref());
                self.answer(id, result);
                if matches!(self.phase, Phase::WaitingForSandbox | Phase::Loading) {
                    self.phase = Phase::Initializing;
                }
                match asked.as_deref() {
                    Some(UI_PROTOCOL_VERSION) => None,
                    Some(other) => Some(format!(
                        "asked for ui protocol {other:?}; answered {UI_PROTOCOL_VERSION}"
                    )),
                    None => Some(format!("no protocolVersion; answered {UI_PROTOCOL_VERSION}")),
                }
            }
            "ping" => {
                self.answer(id, json!({}));
                None
            }
            "tools/call" => self.view_tool_call(id, params),
            m if PROXIED_METHODS.contains(&m) => {
                self.proxy(id, m, params);
                None
            }
            "ui/request-display-mode" => {
                let mode = params
                    .get("mode")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let refusal = self.mode_refusal(&mode);
                let current = if refusal.is_none() {
                    mode.clone()
                } else {
                    self.display_mode.clone()
                };
                // The answer first, then the change it announces.
                self.answer(id, json!({"mode": current}));
                if refusal.is_none() {
                    self.switch_mode(&mode);
                }
                refusal.map(|why| format!("{why}; answered the mode in effect, {current:?}"))
            }
            "ui/open-link" => match params.get("url").and_then(Value::as_str) {
                Some(url) if is_http_url(url) => {
                    let ticket = self.ticket();
                    self.pending.insert(
                        ticket,
                        Pending::OpenLink {
                            view_id: id,
                            url: url.to_owned(),
                        },
                    );
                    self.effects.push(Effect::Page(PageAction::Ask {
                        ticket,
                        question: format!("The app asks to open {url}"),
                    }));
                    Some("asked the user".into())
                }
                Some(url) => {
                    self.answer(id, json!({"isError": true}));
                    Some(format!(
                        "refused: only http(s) links are opened, not {:?}",
                        crate::text::shorten(url, 80)
                    ))
                }
                None => {
                    self.error(id, -32602, "ui/open-link needs params.url, a string");
                    Some("refused: no url".into())
                }
            },
            "ui/message" => {
                if params.get("role").and_then(Value::as_str) != Some("user")
                    || !params.get("content").is_some_and(Value::is_array)
                {
                    self.error(id, -32602, "ui/message needs role \"user\" and a content array");
                    Some("refused: malformed params".into())
                } else {
                    self.keep(Shown::Message(params));
                    self.answer(id, json!({}));
                    None
                }
            }
            "ui/update-model-context" => {
                let replaced = self.model_context.is_some();
                self.model_context = Some(params);
                self.answer(id, json!({}));
                replaced.then(|| "replaces the previous model context".to_owned())
            }
            "ui/download-file" => self.download(id, &params),
            "sampling/createMessage" => {
                self.error(
                    id,
                    -32601,
                    "mcpscope does not offer sampling to apps (no hostCapabilities.sampling)",
                );
                Some("refused: sampling is not offered".into())
            }
            m if LEGACY_NAMES.contains(&m) => {
                self.error(
                    id,
                    -32601,
                    &format!("{m} is a name from a draft; see the 2026-01-26 spec"),
                );
                Some(format!("legacy name {m}: not handled"))
            }
            m => {
                self.error(id, -32601, &format!("method not found: {m}"));
                Some(format!("unknown method {m}"))
            }
        };
        let _ = now;
        join_notes(early, note)
    }

    fn view_notification(&mut self, method: &str, params: Value, now: Duration) -> Option<String> {
        match method {
            "ui/notifications/sandbox-proxy-ready" => {
                // Again: the page was reloaded. The View starts over (a new
                // handshake); what it was told of its tool call is told again.
                let reloaded = match self.phase {
                    Phase::WaitingForSandbox => false,
                    Phase::TearingDown | Phase::Closed => {
                        return Some("the sandbox said ready after the View closed: ignored".into());
                    }
                    _ => true,
                };
                if reloaded {
                    self.queued = self.told.iter().cloned().collect();
                    self.pending.clear();
                    self.app_capabilities = Value::Null;
                    self.warned_not_initialized = false;
                }
                self.phase = Phase::Loading;
                self.loaded_at = Some(now);
                let mut p = Map::new();
                p.insert("html".into(), self.setup.html.clone().into());
                p.insert("sandbox".into(), "allow-scripts allow-forms".into());
                p.insert("csp".into(), self.setup.csp_granted.clone());
                p.insert(
                    "permissions".into(),
                    crate::apps::csp::permissions_json(&self.setup.allow),
                );
                self.effects.push(Effect::ToSandbox(json!({
                    "jsonrpc": "2.0", "method": "ui/notifications/sandbox-resource-ready", "params": p
                })));
                reloaded.then(|| "the page was loaded again: the View starts over".to_owned())
            }
            "ui/notifications/initialized" => match self.phase {
                Phase::Initializing => {
                    self.phase = Phase::Ready;
                    while let Some(m) = self.queued.pop_front() {
                        self.effects.push(Effect::ToView(m));
                    }
                    None
                }
                Phase::Ready => Some("initialized again: ignored".into()),
                _ => Some("initialized before ui/initialize was answered: ignored".into()),
            },
            "ui/notifications/size-changed" => {
                let width = params.get("width").and_then(Value::as_f64);
                let height = params.get("height").and_then(Value::as_f64);
                self.size = Some((width, height));
                self.effects.push(Effect::Page(PageAction::Resize { width, height }));
                None
            }
            "ui/notifications/request-teardown" => {
                self.close("the app asked to close", now);
                Some("the host closes the View".into())
            }
            "notifications/message" => {
                self.keep(Shown::Log(params));
                None
            }
            m if LEGACY_NAMES.contains(&m) => Some(format!("legacy name {m}: not handled")),
            m if m.starts_with("ui/notifications/sandbox-") => {
                Some(format!("{m} comes from the host, not the View: ignored"))
            }
            m => Some(format!("unknown notification {m}: ignored")),
        }
    }

    fn view_response(&mut self, id: &Value, obj: &Map<String, Value>) -> Option<String> {
        match self.teardown {
            Some((tid, _)) if id.as_i64() == Some(tid) && self.phase == Phase::TearingDown => {
                self.closed();
                obj.get("error")
                    .map(|e| format!("the View refused teardown ({e}); closed anyway"))
            }
            _ => Some("an answer to nothing the host asked: ignored".into()),
        }
    }

    fn view_tool_call(&mut self, id: Value, params: Value) -> Option<String> {
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let Some(tool) = self
            .setup
            .tools
            .iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some(name.as_str()))
        else {
            self.error(
                id,
                -32602,
                &format!("unknown tool: {name:?} (not in this server's tools/list)"),
            );
            return Some(format!("refused: {name:?} is not one of this server's tools"));
        };
        if !visible_to(tool, "app") {
            self.error(
                id,
                -32602,
                &format!("tool {name:?} is not callable by apps: its _meta.ui.visibility has no \"app\""),
            );
            return Some(format!("refused: {name:?} is a model-only tool"));
        }
        self.proxy(id, "tools/call", params);
        None
    }

    fn download(&mut self, id: Value, params: &Value) -> Option<String> {
        let Some(contents) = params.get("contents").and_then(Value::as_array) else {
            self.error(id, -32602, "ui/download-file needs params.contents, an array");
            return Some("refused: no contents".into());
        };
        if contents.is_empty() || contents.len() > MAX_DOWNLOAD_ITEMS {
            self.answer(id, json!({"isError": true}));
            return Some(format!(
                "refused: {} files (1 to {MAX_DOWNLOAD_ITEMS} at once)",
                contents.len()
            ));
        }
        let mut items = Vec::new();
        let mut total = 0usize;
        for (i, c) in contents.iter().enumerate() {
            let (uri, res) = match c.get("type").and_then(Value::as_str) {
                Some("resource") => {
                    let r = c.get("resource").unwrap_or(&Value::Null);
                    (r.get("uri").and_then(Value::as_str).unwrap_or_default(), r)
                }
                Some("resource_link") => (c.get("uri").and_then(Value::as_str).unwrap_or_default(), c),
                _ => {
                    self.answer(id, json!({"isError": true}));
                    return Some(format!("refused: item {i} is neither a resource nor a resource_link"));
                }
            };
            let mime_type = res
                .get("mimeType")
                .and_then(Value::as_str)
                .filter(|m| m.len() < 128 && !m.contains(['\r', '\n']))
                .unwrap_or("application/octet-stream")
                .to_owned();
            let name = sanitize_file_name(res.get("name").and_then(Value::as_str).unwrap_or(uri), i);
            let (base64, url) = if let Some(text) = res.get("text").and_then(Value::as_str) {
                use base64::Engine;
                total += text.len();
                (Some(base64::engine::general_purpose::STANDARD.encode(text)), None)
            } else if let Some(blob) = res.get("blob").and_then(Value::as_str) {
                total += blob.len() / 4 * 3;
                (Some(blob.to_owned()), None)
            } else if is_http_url(uri) {
                (None, Some(uri.to_owned()))
            } else {
                self.answer(id, json!({"isError": true}));
                return Some(format!("refused: item {i} has no text, no blob and no http(s) uri"));
            };
            items.push(DownloadItem {
                name,
                mime_type,
                base64,
                url,
            });
        }
        if total > MAX_DOWNLOAD_BYTES {
            self.answer(id, json!({"isError": true}));
            return Some(format!("refused: {total} bytes (at most {MAX_DOWNLOAD_BYTES})"));
        }
        let ticket = self.ticket();
        let names: Vec<&str> = items.iter().map(|i| i.name.as_str()).collect();
        let question = format!("The app asks to save {}", names.join(", "));
        self.pending.insert(ticket, Pending::Download { view_id: id, items });
        self.effects.push(Effect::Page(PageAction::Ask { ticket, question }));
        Some("asked the user".into())
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

fn join_notes(a: Option<String>, b: Option<String>) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.or(b),
    }
}

/// An absolute http(s) URL with a host.
pub fn is_http_url(s: &str) -> bool {
    url::Url::parse(s)
        .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some_and(|h| !h.is_empty()))
}

/// A file name a browser may save under: the last path segment, without
/// control characters, separators or a leading dot, at most 100 characters.
pub fn sanitize_file_name(raw: &str, index: usize) -> String {
    let last = raw.rsplit(['/', '\\']).next().unwrap_or_default();
    let clean: String = last
        .chars()
        .filter(|c| !c.is_control() && !matches!(c, '<' | '>' | ':' | '"' | '|' | '?' | '*'))
        .take(100)
        .collect();
    let clean = clean.trim().trim_start_matches('.').to_owned();
    if clean.is_empty() {
        format!("download-{}", index + 1)
    } else {
        clean
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: Duration = Duration::ZERO;

    fn tools() -> Vec<Value> {
        vec![
            json!({"name":"show_counter","_meta":{"ui":{"resourceUri":"ui://t/c.html"}}}),
            json!({"name":"increment","_meta":{"ui":{"resourceUri":"ui://t/c.html","visibility":["app"]}}}),
            json!({"name":"secret_model_only","_meta":{"ui":{"visibility":["model"]}}}),
        ]
    }

    fn host() -> AppHost {
        let mut s = HostSetup::new("show_counter", tools()[0].clone(), "<!DOCTYPE html>".into());
        s.tools = tools();
        s.call_id = Some(json!(7));
        AppHost::new(s)
    }

    fn send(h: &mut AppHost, v: Value) -> Option<String> {
        h.view_sent(v.to_string().as_bytes(), T0)
    }

    fn to_view(effects: &[Effect]) -> Vec<Value> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::ToView(v) => Some(v.clone()),
                _ => None,
            })
            .collect()
    }

    /// Through the handshake; the effects so far are dropped.
    fn ready() -> AppHost {
        let mut h = host();
        send(
            &mut h,
            json!({"jsonrpc":"2.0","method":"ui/notifications/sandbox-proxy-ready","params":{}}),
        );
        send(
            &mut h,
            json!({"jsonrpc":"2.0","id":1,"method":"ui/initialize","params":{"protocolVersion":"2026-01-26",
                "appInfo":{"name":"c","version":"1"},"appCapabilities":{"availableDisplayModes":["inline","fullscreen"]}}}),
        );
        send(
            &mut h,
            json!({"jsonrpc":"2.0","method":"ui/notifications/initialized","params":{}}),
        );
        h.take_effects();
        h
    }

    #[test]
    fn the_handshake_and_nothing_before_initialized() {
        let mut h = host();
        h.tool_input(json!({"start": 3}));
        h.tool_result(json!({"content":[],"structuredContent":{"value":3}}));
        assert!(h.take_effects().is_empty(), "nothing before the sandbox is ready");
        send(
            &mut h,
            json!({"jsonrpc":"2.0","method":"ui/notifications/sandbox-proxy-ready","params":{}}),
        );
        let e = h.take_effects();
        assert!(matches!(&e[..], [Effect::ToSandbox(v)] if v["method"] == "ui/notifications/sandbox-resource-ready"));
        let note = send(
            &mut h,
            json!({"jsonrpc":"2.0","id":"a","method":"ui/initialize","params":{"protocolVersion":"2026-01-26","appInfo":{"name":"c","version":"1"},"appCapabilities":{}}}),
        );
        assert_eq!(note, None);
        let e = to_view(&h.take_effects());
        assert_eq!(e.len(), 1, "only the answer: {e:?}");
        let r = &e[0]["result"];
        assert_eq!(e[0]["id"], "a");
        assert_eq!(r["protocolVersion"], UI_PROTOCOL_VERSION);
        assert_eq!(r["hostContext"]["toolInfo"]["id"], 7);
        assert_eq!(r["hostContext"]["displayMode"], "inline");
        assert_eq!(
            r["hostContext"]["availableDisplayModes"],
            json!(["inline", "fullscreen"])
        );
        for key in ["theme", "containerDimensions", "locale", "timeZone", "platform"] {
            assert!(r["hostContext"].get(key).is_some(), "{key}");
        }
        assert!(r["hostCapabilities"].get("sampling").is_none());
        send(&mut h, json!({"jsonrpc":"2.0","method":"ui/notifications/initialized"}));
        let e = to_view(&h.take_effects());
        let methods: Vec<&str> = e.iter().map(|m| m["method"].as_str().unwrap()).collect();
        assert_eq!(methods, ["ui/notifications/tool-input", "ui/notifications/tool-result"]);
        assert_eq!(h.phase(), Phase::Ready);
    }

    #[test]
    fn partial_input_stops_after_the_whole_input_and_results_come_once() {
        let mut h = ready();
        h.tool_input_partial(json!({"start": 1}));
        h.tool_input(json!({"start": 3}));
        h.tool_input_partial(json!({"start": 4}));
        h.tool_input(json!({"start": 5}));
        h.tool_result(json!({"content": []}));
        h.tool_cancelled(None);
        let methods: Vec<String> = to_view(&h.take_effects())
            .iter()
            .map(|m| m["method"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            methods,
            [
                "ui/notifications/tool-input-partial",
                "ui/notifications/tool-input",
                "ui/notifications/tool-result"
            ]
        );
    }

    #[test]
    fn a_views_tool_call_is_proxied_only_to_app_tools() {
        let mut h = ready();
        assert_eq!(
            send(
                &mut h,
                json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"increment","arguments":{"n":3}}})
            ),
            None
        );
        let e = h.take_effects();
        let Effect::ToServer { ticket, method, params } = &e[0] else {
            panic!("{e:?}")
        };
        assert_eq!(method, "tools/call");
        assert_eq!(params.as_ref().unwrap()["arguments"]["n"], 3);
        h.server_answered(*ticket, Ok(json!({"content":[],"structuredContent":{"value":4}})));
        let e = to_view(&h.take_effects());
        assert_eq!(e[0]["id"], 5);
        assert_eq!(e[0]["result"]["structuredContent"]["value"], 4);

        let note = send(
            &mut h,
            json!({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"secret_model_only"}}),
        );
        assert!(note.unwrap().contains("model-only"));
        let e = to_view(&h.take_effects());
        assert_eq!(e[0]["error"]["code"], -32602);
        let note = send(
            &mut h,
            json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"nope"}}),
        );
        assert!(note.unwrap().contains("not one of this server's tools"));
        assert!(to_view(&h.take_effects())[0]["error"].is_object());
    }

    #[test]
    fn display_modes_stay_within_what_both_declared() {
        let mut h = ready();
        send(
            &mut h,
            json!({"jsonrpc":"2.0","id":1,"method":"ui/request-display-mode","params":{"mode":"fullscreen"}}),
        );
        let e = h.take_effects();
        assert!(e.contains(&Effect::Page(PageAction::DisplayMode("fullscreen".into()))));
        let v = to_view(&e);
        assert_eq!(v[0]["result"]["mode"], "fullscreen");
        assert_eq!(v[1]["params"]["displayMode"], "fullscreen");
        let note = send(
            &mut h,
            json!({"jsonrpc":"2.0","id":2,"method":"ui/request-display-mode","params":{"mode":"pip"}}),
        );
        assert!(note.unwrap().contains("not one the host offers"));
        assert_eq!(to_view(&h.take_effects())[0]["result"]["mode"], "fullscreen");

        let mut h = host();
        send(
            &mut h,
            json!({"jsonrpc":"2.0","method":"ui/notifications/sandbox-proxy-ready"}),
        );
        send(
            &mut h,
            json!({"jsonrpc":"2.0","id":1,"method":"ui/initialize","params":{"protocolVersion":"2026-01-26","appCapabilities":{}}}),
        );
        send(&mut h, json!({"jsonrpc":"2.0","method":"ui/notifications/initialized"}));
        h.take_effects();
        let note = send(
            &mut h,
            json!({"jsonrpc":"2.0","id":2,"method":"ui/request-display-mode","params":{"mode":"fullscreen"}}),
        );
        assert!(note.unwrap().contains("not among the View's declared"));
        assert_eq!(to_view(&h.take_effects())[0]["result"]["mode"], "inline");
    }

    #[test]
    fn links_are_http_only_and_asked() {
        let mut h = ready();
        let note = send(
            &mut h,
            json!({"jsonrpc":"2.0","id":1,"method":"ui/open-link","params":{"url":"javascript:alert(1)"}}),
        );
        assert!(note.unwrap().starts_with("refused"));
        assert_eq!(to_view(&h.take_effects())[0]["result"]["isError"], true);
        send(
            &mut h,
            json!({"jsonrpc":"2.0","id":2,"method":"ui/open-link","params":{"url":"https://example.com/x"}}),
        );
        let e = h.take_effects();
        let Effect::Page(PageAction::Ask { ticket, .. }) = e[0] else {
            panic!("{e:?}")
        };
        assert!(to_view(&e).is_empty(), "no answer before the user decides");
        h.user_answered(ticket, true);
        let e = h.take_effects();
        assert!(e.contains(&Effect::Page(PageAction::OpenLink("https://example.com/x".into()))));
        assert_eq!(to_view(&e)[0]["result"], json!({}));
    }

    #[test]
    fn downloads_are_sanitised_capped_and_asked() {
        let mut h = ready();
        let item = json!({"type":"resource","resource":{"uri":"file:///etc/../x","name":"../../.bashrc\u{7}","mimeType":"text/plain","text":"hi"}});
        send(
            &mut h,
            json!({"jsonrpc":"2.0","id":1,"method":"ui/download-file","params":{"contents":[item]}}),
        );
        let e = h.take_effects();
        let Effect::Page(PageAction::Ask { ticket, .. }) = e[0] else {
            panic!("{e:?}")
        };
        h.user_answered(ticket, true);
        let e = h.take_effects();
        let Some(Effect::Page(PageAction::Download(items))) = e.first() else {
            panic!("{e:?}")
        };
        assert_eq!(items[0].name, "bashrc");
        let many: Vec<Value> = (0..21).map(|_| item.clone()).collect();
        let note = send(
            &mut h,
            json!({"jsonrpc":"2.0","id":2,"method":"ui/download-file","params":{"contents":many}}),
        );
        assert!(note.unwrap().contains("21 files"));
    }

    #[test]
    fn model_context_last_wins_and_messages_are_kept() {
        let mut h = ready();
        send(
            &mut h,
            json!({"jsonrpc":"2.0","id":1,"method":"ui/update-model-context","params":{"structuredContent":{"value":1}}}),
        );
        let note = send(
            &mut h,
            json!({"jsonrpc":"2.0","id":2,"method":"ui/update-model-context","params":{"structuredContent":{"value":2}}}),
        );
        assert!(note.is_some());
        assert_eq!(h.model_context().unwrap()["structuredContent"]["value"], 2);
        send(
            &mut h,
            json!({"jsonrpc":"2.0","id":3,"method":"ui/message","params":{"role":"user","content":[{"type":"text","text":"hi"}]}}),
        );
        send(
            &mut h,
            json!({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"clicked"}}),
        );
        assert_eq!(h.shown().len(), 2);
    }

    #[test]
    fn legacy_names_are_flagged_and_unknown_ones_refused() {
        let mut h = ready();
        let note = send(&mut h, json!({"jsonrpc":"2.0","method":"ui/log","params":{}}));
        assert!(note.unwrap().contains("legacy name"));
        let note = send(
            &mut h,
            json!({"jsonrpc":"2.0","id":9,"method":"ui/call-view-tool","params":{}}),
        );
        assert!(note.unwrap().contains("legacy name"));
        assert_eq!(to_view(&h.take_effects())[0]["error"]["code"], -32601);
        assert!(send(&mut h, json!([1, 2])).is_some());
        assert!(h.view_sent(b"not json", T0).is_some());
    }

    #[test]
    fn teardown_is_awaited_then_times_out() {
        let mut h = ready();
        h.close("closed by the user", Duration::from_secs(1));
        let e = to_view(&h.take_effects());
        assert_eq!(e[0]["method"], "ui/resource-teardown");
        h.tool_result(json!({}));
        assert!(h.take_effects().is_empty(), "nothing after teardown began");
        send(&mut h, json!({"jsonrpc":"2.0","id": e[0]["id"], "result": {}}));
        assert_eq!(h.phase(), Phase::Closed);
        assert!(h.take_effects().contains(&Effect::Page(PageAction::Close)));

        let mut h = ready();
        h.close("bye", Duration::from_secs(1));
        h.take_effects();
        assert_eq!(h.next_wakeup(), Some(Duration::from_secs(4)));
        h.tick(Duration::from_secs(4));
        assert_eq!(h.phase(), Phase::Closed);
        assert!(matches!(h.take_effects()[0], Effect::Note(_)));
    }

    #[test]
    fn a_view_that_never_initializes_is_said_once() {
        let mut h = host();
        h.view_sent(
            br#"{"jsonrpc":"2.0","method":"ui/notifications/sandbox-proxy-ready"}"#,
            Duration::from_secs(1),
        );
        h.take_effects();
        h.tick(Duration::from_secs(5));
        assert!(h.take_effects().is_empty());
        h.tick(Duration::from_secs(11));
        assert!(matches!(&h.take_effects()[..], [Effect::Note(n)] if n.contains("initialized")));
        h.tick(Duration::from_secs(20));
        assert!(h.take_effects().is_empty());
    }

    #[test]
    fn a_reloaded_page_starts_over_and_is_told_its_call_again() {
        let mut h = ready();
        h.tool_input(json!({"start": 3}));
        h.tool_result(json!({"structuredContent": {"value": 3}}));
        h.take_effects();
        let note = send(
            &mut h,
            json!({"jsonrpc":"2.0","method":"ui/notifications/sandbox-proxy-ready","params":{}}),
        );
        assert!(note.unwrap().contains("starts over"));
        assert_eq!(h.phase(), Phase::Loading);
        assert!(
            matches!(&h.take_effects()[..], [Effect::ToSandbox(_)]),
            "the document again, nothing to the View yet"
        );
        send(
            &mut h,
            json!({"jsonrpc":"2.0","id":1,"method":"ui/initialize","params":{"protocolVersion":"2026-01-26","appCapabilities":{}}}),
        );
        send(&mut h, json!({"jsonrpc":"2.0","method":"ui/notifications/initialized"}));
        let methods: Vec<String> = to_view(&h.take_effects())
            .iter()
            .filter_map(|m| m["method"].as_str().map(str::to_owned))
            .collect();
        assert_eq!(methods, ["ui/notifications/tool-input", "ui/notifications/tool-result"]);
    }

    #[test]
    fn a_new_container_size_is_announced_once() {
        let mut h = ready();
        h.set_container(Some(760), Some(6000));
        assert!(h.take_effects().is_empty(), "unchanged: nothing said");
        h.set_container(Some(1200), Some(880));
        let v = to_view(&h.take_effects());
        assert_eq!(v[0]["method"], "ui/notifications/host-context-changed");
        assert_eq!(
            v[0]["params"]["containerDimensions"],
            json!({"width": 1200, "maxHeight": 880})
        );
    }

    #[test]
    fn file_names_are_sanitised() {
        assert_eq!(sanitize_file_name("a/b/report.csv", 0), "report.csv");
        assert_eq!(sanitize_file_name("..\\..\\x?.txt", 0), "x.txt");
        assert_eq!(sanitize_file_name("...", 2), "download-3");
    }
}
