//! MCP Apps (SEP-1865): how a server declares its Views (the tools it
//! lists, the `ui://` resources it reads out) and how each View and its
//! host behaved (the App records a host such as `mcpscope app` writes).
//! Rule seeds: the ext-apps validator's APP-001…011 (static) and
//! APP-100…106 (behavioural), and the host-side checks of the spec.

use super::{Finding, Severity, rule};
use crate::apps::csp::{self, DeclaredDomains};
use crate::apps::host::{HOST_DISPLAY_MODES, LEGACY_NAMES, PROXIED_METHODS, VIEW_METHODS};
use crate::apps::linkage::{self, UI_PROTOCOL_VERSION};
use crate::transport::event::{AppMessage, AppToward};
use crate::wire::classify::Kind;
use crate::wire::frame::{Direction, Frame};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

#[derive(Default)]
pub(super) struct Apps {
    /// Requests the client sent that a server's answer is checked against.
    asked: HashMap<String, Asked>,
    /// Tools the server listed, by name (for the View's tools/call).
    tools: HashMap<String, Value>,
    /// Each View on the record, by name.
    views: BTreeMap<String, View>,
}

enum Asked {
    ToolsList,
    Read(String),
}

#[derive(Default)]
struct View {
    loaded: bool,
    initialize_sent: bool,
    initialize_answered: bool,
    initialized: bool,
    declared_modes: Option<Vec<String>>,
    size_reported: bool,
    /// Host→View messages sent too early (methods).
    early: Vec<String>,
    /// Teardown requests the View has not answered (ids).
    teardown: Vec<Value>,
    /// Reported once: the policy the View ran under.
    policy_seen: bool,
}

impl Apps {
    pub fn frame(&mut self, f: &Frame, out: &mut Vec<Finding>) {
        match (f.direction, f.kind()) {
            (Direction::Out, Kind::Request) => {
                let Some(id) = f.class.id.as_ref().map(|i| i.to_string()) else {
                    return;
                };
                match f.class.method.as_deref() {
                    Some("tools/list") => {
                        self.asked.insert(id, Asked::ToolsList);
                    }
                    Some("resources/read") => {
                        if let Some(uri) = f
                            .json()
                            .and_then(|v| v.get("params")?.get("uri")?.as_str().map(str::to_owned))
                            .filter(|u| u.starts_with("ui://"))
                        {
                            self.asked.insert(id, Asked::Read(uri));
                        }
                    }
                    _ => {}
                }
            }
            (Direction::In, Kind::Result) => {
                let Some(id) = f.class.id.as_ref().map(|i| i.to_string()) else {
                    return;
                };
                let Some(asked) = self.asked.remove(&id) else { return };
                let Some(result) = f.json().and_then(|v| v.get("result").cloned()) else {
                    return;
                };
                match asked {
                    Asked::ToolsList => self.tools_listed(f.seq, &result, out),
                    Asked::Read(uri) => self.resource_read(f.seq, &uri, &result, out),
                }
            }
            _ => {}
        }
    }

    fn tools_listed(&mut self, seq: u64, result: &Value, out: &mut Vec<Finding>) {
        let Some(tools) = result.get("tools").and_then(Value::as_array) else {
            return;
        };
        for tool in tools {
            let name = tool.get("name").and_then(Value::as_str).unwrap_or("?").to_owned();
            self.tools.insert(name.clone(), tool.clone());
            let Some(link) = linkage::ui_link(tool) else { continue };
            for p in &link.problems {
                let (id, severity, why) = if p.contains("deprecated flat key") {
                    (
                        rule::APP_FLAT_RESOURCE_KEY,
                        Severity::Warning,
                        "hosts read _meta.ui.resourceUri first and the flat key was removed before the extension went final",
                    )
                } else if p.contains("visibility") {
                    (
                        rule::APP_VISIBILITY,
                        Severity::Error,
                        "visibility is a list of \"model\" and \"app\"; a host cannot tell who may call the tool",
                    )
                } else {
                    (
                        rule::APP_RESOURCE_URI,
                        Severity::Error,
                        "a host finds a tool's View by a ui:// resourceUri under _meta.ui",
                    )
                };
                out.push(Finding::new(
                    id,
                    severity,
                    vec![seq],
                    format!("Tool {name:?}: {p}: {why}."),
                ));
            }
        }
    }

    fn resource_read(&mut self, seq: u64, uri: &str, result: &Value, out: &mut Vec<Finding>) {
        let r = linkage::check_resource(uri, result, None);
        if !r.errors.is_empty() {
            out.push(Finding::new(
                rule::APP_RESOURCE_INVALID,
                Severity::Error,
                vec![seq],
                format!(
                    "The App resource {uri} cannot be hosted: {}. A View's resource is exactly one text or blob item of \
                     type {} holding an HTML5 document.",
                    r.errors.join("; "),
                    linkage::MIME_TYPE
                ),
            ));
            return;
        }
        let domains = DeclaredDomains::from_ui_meta(r.ui_meta.as_ref());
        if !domains.dropped.is_empty() {
            out.push(Finding::new(
                rule::APP_CSP_ORIGIN,
                Severity::Warning,
                vec![seq],
                format!(
                    "The App resource {uri} declares CSP sources a host must drop: {}. Each entry is one origin \
                     (https://host, https://*.host), with no spaces, quotes or semicolons.",
                    domains.dropped.join("; ")
                ),
            ));
        }
        let declared = domains.external();
        let undeclared: Vec<String> = csp::loaded_origins(r.html.as_deref().unwrap_or_default())
            .into_iter()
            .filter(|o| !declared.iter().any(|d| csp::source_allows(d, o)))
            .collect();
        if !undeclared.is_empty() {
            out.push(Finding::new(
                rule::APP_UNDECLARED_DOMAIN,
                Severity::Warning,
                vec![seq],
                format!(
                    "The View {uri} loads from {} without declaring it in _meta.ui.csp: a host's policy blocks \
                     what is not declared, so it breaks in every spec-following host.",
                    undeclared.join(", ")
                ),
            ));
        }
    }

    pub fn app(&mut self, a: &AppMessage, out: &mut Vec<Finding>) {
        let view = self.views.entry(a.app.clone()).or_default();
        let Some(v) = a.json() else {
            if a.toward == AppToward::Host {
                out.push(Finding::new(
                    rule::APP_UNKNOWN_METHOD,
                    Severity::Warning,
                    vec![],
                    format!(
                        "The View {} sent something that is not JSON: {}.",
                        a.app,
                        crate::text::shorten_bytes(&a.bytes, 80)
                    ),
                ));
            }
            return;
        };
        let method = v.get("method").and_then(Value::as_str).map(str::to_owned);
        match a.toward {
            AppToward::Sandbox => {
                if method.as_deref() == Some("ui/notifications/sandbox-resource-ready") {
                    view.loaded = true;
                    if !view.policy_seen {
                        view.policy_seen = true;
                        let html = v
                            .get("params")
                            .and_then(|p| p.get("html"))
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        let policy = applied_policy(html);
                        out.push(Finding::new(
                            rule::APP_CSP_APPLIED,
                            Severity::Info,
                            vec![],
                            match policy {
                                Some(p) => format!("The View {} ran under this Content-Security-Policy: {p}", a.app),
                                None => format!(
                                    "The View {} was loaded without a Content-Security-Policy of the host's in its document.",
                                    a.app
                                ),
                            },
                        ));
                    }
                }
            }
            AppToward::FromSandbox => {}
            AppToward::Host => {
                if v.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
                    out.push(Finding::new(
                        rule::APP_UNKNOWN_METHOD,
                        Severity::Warning,
                        vec![],
                        format!("The View {} sent a message without \"jsonrpc\": \"2.0\".", a.app),
                    ));
                    return;
                }
                if let Some(id) = v.get("id")
                    && method.is_none()
                {
                    view.teardown.retain(|t| t != id);
                    return;
                }
                let Some(m) = method else { return };
                let params = v.get("params").cloned().unwrap_or(Value::Null);
                match m.as_str() {
                    "ui/initialize" => {
                        view.initialize_sent = true;
                        view.declared_modes = params
                            .get("appCapabilities")
                            .and_then(|c| c.get("availableDisplayModes"))
                            .and_then(Value::as_array)
                            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect());
                    }
                    "ui/notifications/initialized" => view.initialized = true,
                    "ui/notifications/size-changed" => view.size_reported = true,
                    "ui/request-display-mode" => {
                        let mode = params.get("mode").and_then(Value::as_str).unwrap_or_default();
                        let declared = view.declared_modes.clone().unwrap_or_default();
                        if !declared.iter().any(|d| d == mode) || !HOST_DISPLAY_MODES.contains(&mode) {
                            out.push(Finding::new(
                                rule::APP_DISPLAY_MODE_UNDECLARED,
                                Severity::Warning,
                                vec![],
                                format!(
                                    "The View {} asked for display mode {mode:?}, which is not among the modes it \
                                     declared ({declared:?}) and the host offers ({HOST_DISPLAY_MODES:?}): a host keeps \
                                     the mode in effect and answers it.",
                                    a.app
                                ),
                            ));
                        }
                    }
                    "tools/call" => {
                        let name = params.get("name").and_then(Value::as_str).unwrap_or_default();
                        if let Some(tool) = self.tools.get(name)
                            && !linkage::visible_to(tool, "app")
                        {
                            out.push(Finding::new(
                                rule::APP_MODEL_ONLY_TOOL_CALL,
                                Severity::Error,
                                vec![],
                                format!(
                                    "The View {} called {name:?}, a tool whose _meta.ui.visibility has no \"app\": \
                                     hosts must refuse it. Give the tool \"app\" visibility or call another.",
                                    a.app
                                ),
                            ));
                        }
                    }
                    m if LEGACY_NAMES.contains(&m) => out.push(Finding::new(
                        rule::APP_LEGACY_NAME,
                        Severity::Warning,
                        vec![],
                        format!(
                            "The View {} used {m}, a name from a draft of the extension that hosts do not \
                             implement; see the {UI_PROTOCOL_VERSION} specification.",
                            a.app
                        ),
                    )),
                    m if !VIEW_METHODS.contains(&m)
                        && !PROXIED_METHODS.contains(&m)
                        && !m.starts_with("ui/notifications/sandbox-") =>
                    {
                        out.push(Finding::new(
                            rule::APP_UNKNOWN_METHOD,
                            Severity::Warning,
                            vec![],
                            format!("The View {} sent {m}, which no View-to-host message is called.", a.app),
                        ))
                    }
                    _ => {}
                }
            }
            AppToward::View => match method.as_deref() {
                Some("ui/resource-teardown") => {
                    if let Some(id) = v.get("id") {
                        view.teardown.push(id.clone());
                    }
                }
                Some(m) if !view.initialized => view.early.push(m.to_owned()),
                Some(_) => {}
                None => {
                    if v.get("result").is_some_and(|r| r.get("hostContext").is_some()) {
                        view.initialize_answered = true;
                    }
                }
            },
        }
    }

    pub fn provisional(&self, out: &mut Vec<Finding>) {
        for (name, v) in &self.views {
            if v.loaded && !v.initialize_sent {
                out.push(Finding::new(
                    rule::APP_NO_INITIALIZE,
                    Severity::Error,
                    vec![],
                    format!(
                        "The View {name} was loaded but never sent ui/initialize: a View starts every session with it, \
                         and a host sends it nothing until then."
                    ),
                ));
            }
            if v.initialize_sent && !v.initialized {
                out.push(Finding::new(
                    rule::APP_INITIALIZED_NOT_SENT,
                    Severity::Error,
                    vec![],
                    format!(
                        "The View {name} sent ui/initialize{} but never ui/notifications/initialized: a host sends \
                         it nothing (no tool input, no result) until it does.",
                        if v.initialize_answered {
                            " and got its answer"
                        } else {
                            ""
                        }
                    ),
                ));
            }
            if !v.early.is_empty() {
                out.push(Finding::new(
                    rule::APP_HOST_EARLY_MESSAGE,
                    Severity::Error,
                    vec![],
                    format!(
                        "The host sent the View {name} {} before it said ui/notifications/initialized: a host sends \
                         nothing before then and queues what arrives early.",
                        super::list_labels(&v.early)
                    ),
                ));
            }
            if !v.teardown.is_empty() {
                out.push(Finding::new(
                    rule::APP_TEARDOWN_UNANSWERED,
                    Severity::Warning,
                    vec![],
                    format!(
                        "The View {name} never answered ui/resource-teardown: a View answers it (with {{}}) once it \
                         has saved what it must, and the host waits for that before removing it."
                    ),
                ));
            }
        }
    }
}

/// The policy in the `<meta http-equiv="Content-Security-Policy">` a host
/// put in the View's document.
fn applied_policy(html: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let at = lower.find("http-equiv=\"content-security-policy\"")?;
    let tag_end = lower[at..].find('>')? + at;
    let content = lower[at..tag_end].find("content=\"")? + at + 9;
    let end = html[content..].find('"')? + content;
    Some(
        html[content..end]
            .replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&amp;", "&"),
    )
}
