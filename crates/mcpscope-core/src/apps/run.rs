//! One hosted View: the host's state machine and its loopback pages, with
//! the effects performed and every message put on the record. The MCP
//! session is the caller's: requests the View makes of the server come out
//! as [`ServerCall`]s and their answers go back in, so the command line and
//! the desktop app drive a View the same way.

use crate::apps::csp::{self, DeclaredDomains};
use crate::apps::host::{AppHost, Effect, HostSetup, PageAction, Phase};
use crate::apps::linkage::{AppResource, check_resource, ui_link};
use crate::apps::serve::{AppServer, FromPage, PageConfig};
use crate::listen::ListenError;
use crate::transport::event::{AppMessage, AppToward};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// A request the View made that goes to the server on the session.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerCall {
    pub ticket: u64,
    pub method: String,
    pub params: Option<Value>,
}

/// Something for the session's record, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum AppRecord {
    Message(AppMessage),
    Note(String),
}

/// Why a tool's View cannot be hosted.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("tool {0:?} has no App (no _meta.ui.resourceUri)")]
    NoApp(String),
    #[error("tool {tool:?}: {why}")]
    BadLink { tool: String, why: String },
    #[error("the App's resource {uri}: {}", .errors.join("; "))]
    BadResource { uri: String, errors: Vec<String> },
    #[error("could not open the App's pages: {0}")]
    Listen(#[from] ListenError),
}

/// What the View needs, prepared from the tool and its resource.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub setup: HostSetup,
    pub page: PageConfig,
    pub resource: AppResource,
    pub domains: DeclaredDomains,
    /// Things worth saying before the View loads (dropped CSP entries,
    /// external domains, a flat key, a draft mime type).
    pub warnings: Vec<String>,
}

/// Checks the tool's link and its resource (`resources/read`'s result,
/// and its `resources/list` entry if the server listed it) and builds the
/// policy, the `allow` list (only the permissions in `granted`) and the
/// setup. The View is hosted only if the resource passes.
pub fn prepare(
    tool: &Value,
    tools: &[Value],
    read_result: &Value,
    listing: Option<&Value>,
    granted: &[String],
) -> Result<Prepared, AppError> {
    let name = tool.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
    let link = ui_link(tool).ok_or_else(|| AppError::NoApp(name.clone()))?;
    let Some(uri) = link.usable_uri().map(str::to_owned) else {
        return Err(AppError::BadLink {
            tool: name,
            why: link.problems.join("; "),
        });
    };
    let resource = check_resource(&uri, read_result, listing);
    if !resource.errors.is_empty() {
        return Err(AppError::BadResource {
            uri,
            errors: resource.errors,
        });
    }
    let mut warnings: Vec<String> = link.problems.clone();
    warnings.extend(resource.warnings.iter().cloned());
    let ui = resource.ui_meta.as_ref();
    let domains = DeclaredDomains::from_ui_meta(ui);
    warnings.extend(domains.dropped.iter().cloned());
    let external = domains.external();
    if !external.is_empty() {
        warnings.push(format!("the View may reach external origins: {}", external.join(", ")));
    }
    let policy = csp::policy(&domains);
    let requested = csp::requested_permissions(ui);
    let allow = csp::allow_attribute(&requested, granted);
    let not_granted: Vec<&str> = requested
        .iter()
        .filter(|p| !allow.split("; ").any(|a| a == **p))
        .copied()
        .collect();
    if !not_granted.is_empty() {
        warnings.push(format!(
            "permissions asked for and not granted: {}",
            not_granted.join(", ")
        ));
    }
    let html = csp::with_policy_meta(resource.html.as_deref().unwrap_or_default(), &policy);
    let mut setup = HostSetup::new(name.clone(), tool.clone(), html);
    setup.tools = tools.to_vec();
    setup.csp = policy.clone();
    setup.csp_granted = domains.granted_json();
    setup.allow = allow.clone();
    let page = PageConfig {
        app: name,
        allow,
        prefers_border: ui.and_then(|u| u.get("prefersBorder")).and_then(Value::as_bool),
        csp: policy,
        theme: setup.theme.clone(),
        max_height: setup.max_height,
        width: setup.width,
    };
    Ok(Prepared {
        setup,
        page,
        resource,
        domains,
        warnings,
    })
}

/// A View being hosted.
pub struct AppRun {
    host: AppHost,
    server: AppServer,
    started: Instant,
    records: Vec<AppRecord>,
    phase_shown: Option<Phase>,
    /// When the page's event stream first connected.
    pub opened_at: Option<Instant>,
    /// When the View sent `ui/notifications/initialized`.
    pub initialized_at: Option<Instant>,
}

impl AppRun {
    /// Opens the pages; the View loads once the user's browser opens [`AppRun::url`].
    pub fn start(prepared: Prepared) -> Result<AppRun, AppError> {
        let server = AppServer::start(prepared.page)?;
        let mut run = AppRun {
            host: AppHost::new(prepared.setup),
            server,
            started: Instant::now(),
            records: Vec::new(),
            phase_shown: None,
            opened_at: None,
            initialized_at: None,
        };
        for w in prepared.warnings {
            run.records
                .push(AppRecord::Note(format!("app {}: {w}", run.host.setup().app)));
        }
        run.show_phase();
        Ok(run)
    }

    pub fn url(&self) -> String {
        self.server.url()
    }

    pub fn server(&self) -> &AppServer {
        &self.server
    }

    pub fn host(&self) -> &AppHost {
        &self.host
    }

    /// Tells the host something (tool input, result, a theme…) and performs
    /// what follows; the requests for the server.
    pub fn with_host(&mut self, f: impl FnOnce(&mut AppHost, Duration)) -> Vec<ServerCall> {
        let now = self.started.elapsed();
        f(&mut self.host, now);
        self.perform()
    }

    /// How long until the host's clock is due (a teardown's or the
    /// `initialized` deadline), if it runs: a caller that waits on the page's
    /// inbox itself ([`AppServer::inbox`]) calls [`AppRun::wait`] by then.
    pub fn until_next_tick(&self) -> Option<Duration> {
        let now = self.started.elapsed();
        self.host.next_wakeup().map(|at| at.saturating_sub(now))
    }

    /// Waits at most `max` for the page (or the host's clock) and handles
    /// what came; the requests for the server.
    pub fn wait(&mut self, max: Duration) -> Vec<ServerCall> {
        let wait = self.until_next_tick().map_or(max, |d| d.min(max));
        let mut calls = Vec::new();
        if let Ok(first) = self.server.inbox().recv_timeout(wait) {
            calls.extend(self.page_sent(first));
            while let Ok(more) = self.server.inbox().try_recv() {
                calls.extend(self.page_sent(more));
            }
        }
        let now = self.started.elapsed();
        self.host.tick(now);
        calls.extend(self.perform());
        for line in self.server.take_log() {
            self.records.push(AppRecord::Note(format!("app host: {line}")));
        }
        calls
    }

    /// The server answered a [`ServerCall`] (a result, or a JSON-RPC error object).
    pub fn answered(&mut self, ticket: u64, outcome: Result<Value, Value>) -> Vec<ServerCall> {
        self.host.server_answered(ticket, outcome);
        self.perform()
    }

    /// The user closes the View (teardown is sent and awaited).
    pub fn close(&mut self, reason: &str) -> Vec<ServerCall> {
        self.with_host(|h, now| h.close(reason, now))
    }

    pub fn is_closed(&self) -> bool {
        self.host.phase() == Phase::Closed
    }

    /// What to record, in order, since the last call.
    pub fn take_records(&mut self) -> Vec<AppRecord> {
        std::mem::take(&mut self.records)
    }

    fn page_sent(&mut self, m: FromPage) -> Vec<ServerCall> {
        let now = self.started.elapsed();
        let app = self.host.setup().app.clone();
        match m {
            FromPage::View(bytes) => {
                let toward = match serde_json::from_slice::<Value>(&bytes)
                    .ok()
                    .and_then(|v| v.get("method").and_then(Value::as_str).map(str::to_owned))
                {
                    Some(m) if m.starts_with("ui/notifications/sandbox-") => AppToward::FromSandbox,
                    _ => AppToward::Host,
                };
                let was = self.host.phase();
                let note = self.host.view_sent(&bytes, now);
                if was != Phase::Ready && self.host.phase() == Phase::Ready {
                    self.initialized_at.get_or_insert_with(Instant::now);
                }
                self.records
                    .push(AppRecord::Message(AppMessage::new(app, toward, bytes).with_note(note)));
            }
            FromPage::Answer { ticket, allow } => {
                if let Some(n) = self.host.user_answered(ticket, allow) {
                    self.records.push(AppRecord::Note(format!("app {app}: {n}")));
                }
            }
            FromPage::DisplayMode(mode) => {
                if let Some(why) = self.host.user_display_mode(&mode) {
                    self.records
                        .push(AppRecord::Note(format!("app {app}: the user's {why}")));
                }
            }
            FromPage::Theme(t) => self.host.set_theme(&t),
            FromPage::Container { width, max_height } => self.host.set_container(width, max_height),
            FromPage::Close => self.host.close("closed by the user", now),
            FromPage::Refused { origin } => self.records.push(AppRecord::Note(format!(
                "app {app}: the host page dropped a message from {origin:?} (not its sandbox frame)"
            ))),
            FromPage::Opened => {
                self.opened_at.get_or_insert_with(Instant::now);
            }
        }
        self.perform()
    }

    fn perform(&mut self) -> Vec<ServerCall> {
        let app = self.host.setup().app.clone();
        let mut calls = Vec::new();
        for e in self.host.take_effects() {
            match e {
                Effect::ToView(v) => {
                    self.server.to_view(&v);
                    self.records.push(AppRecord::Message(AppMessage::new(
                        app.clone(),
                        AppToward::View,
                        v.to_string(),
                    )));
                }
                Effect::ToSandbox(v) => {
                    self.server.to_sandbox(&v);
                    self.records.push(AppRecord::Message(AppMessage::new(
                        app.clone(),
                        AppToward::Sandbox,
                        v.to_string(),
                    )));
                }
                Effect::ToServer { ticket, method, params } => calls.push(ServerCall { ticket, method, params }),
                Effect::Page(action) => self.server.to_page(page_json(&action)),
                Effect::Note(n) => self.records.push(AppRecord::Note(format!("app {app}: {n}"))),
            }
        }
        self.show_phase();
        calls
    }

    fn show_phase(&mut self) {
        let phase = self.host.phase();
        if self.phase_shown == Some(phase) {
            return;
        }
        self.phase_shown = Some(phase);
        let (name, text) = match phase {
            Phase::WaitingForSandbox => ("loading", "loading the sandbox…"),
            Phase::Loading => ("loading", "loading the View…"),
            Phase::Initializing => ("initializing", "the View is initializing…"),
            Phase::Ready => ("ready", "ready"),
            Phase::TearingDown => ("closing", "closing (waiting for the View's teardown answer)…"),
            Phase::Closed => ("closed", "closed"),
        };
        self.server
            .to_page(json!({"action": "status", "text": text, "phase": name}));
    }
}

fn page_json(a: &PageAction) -> Value {
    match a {
        PageAction::Resize { width, height } => json!({"action": "resize", "width": width, "height": height}),
        PageAction::DisplayMode(m) => json!({"action": "mode", "mode": m}),
        PageAction::Ask { ticket, question } => json!({"action": "ask", "ticket": ticket, "question": question}),
        PageAction::OpenLink(url) => json!({"action": "open", "url": url}),
        PageAction::Download(items) => json!({"action": "download", "items": items.iter().map(|i| json!({
            "name": i.name, "mimeType": i.mime_type, "base64": i.base64, "url": i.url,
        })).collect::<Vec<_>>()}),
        PageAction::Close => json!({"action": "close"}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::linkage::MIME_TYPE;

    fn tool() -> Value {
        json!({"name":"show","_meta":{"ui":{"resourceUri":"ui://t/a.html"}}})
    }

    #[test]
    fn prepare_checks_and_builds_the_policy() {
        let read = json!({"contents":[{"uri":"ui://t/a.html","mimeType":MIME_TYPE,"text":"<!DOCTYPE html><html><head></head></html>",
            "_meta":{"ui":{"csp":{"connectDomains":["https://api.example.com"]},"permissions":{"camera":{}}}}}]});
        let p = prepare(&tool(), &[tool()], &read, None, &[]).unwrap();
        assert!(
            p.setup.html.contains("connect-src &#39;self&#39;")
                || p.setup.html.contains("connect-src 'self' https://api.example.com")
        );
        assert!(
            p.warnings
                .iter()
                .any(|w| w.contains("external origins: https://api.example.com")),
            "{:?}",
            p.warnings
        );
        assert!(
            p.warnings.iter().any(|w| w.contains("not granted: camera")),
            "{:?}",
            p.warnings
        );
        assert_eq!(p.page.allow, "");
        let p = prepare(&tool(), &[tool()], &read, None, &["camera".into()]).unwrap();
        assert_eq!(p.page.allow, "camera");

        let bad = json!({"contents":[{"uri":"ui://t/a.html","mimeType":"text/html","text":"hi"}]});
        assert!(matches!(
            prepare(&tool(), &[], &bad, None, &[]),
            Err(AppError::BadResource { .. })
        ));
        assert!(matches!(
            prepare(&json!({"name":"x"}), &[], &read, None, &[]),
            Err(AppError::NoApp(_))
        ));
    }
}
