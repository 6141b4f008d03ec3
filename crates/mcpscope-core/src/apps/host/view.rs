//! What the View sends its host: its requests (answered, proxied to the
//! server, or asked of the user), its notifications and its answers, each
//! checked against the rules in [`super`] before anything is done for it.

use super::{
    AppHost, DownloadItem, Effect, LEGACY_NAMES, MAX_DOWNLOAD_BYTES, MAX_DOWNLOAD_ITEMS, PROXIED_METHODS, PageAction,
    Pending, Phase, Shown,
};
use crate::apps::linkage::{UI_PROTOCOL_VERSION, visible_to};
use serde_json::{Map, Value, json};
use std::time::Duration;

impl AppHost {
    pub(super) fn view_request(&mut self, id: Value, method: &str, params: Value, now: Duration) -> Option<String> {
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

    pub(super) fn view_notification(&mut self, method: &str, params: Value, now: Duration) -> Option<String> {
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

    pub(super) fn view_response(&mut self, id: &Value, obj: &Map<String, Value>) -> Option<String> {
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
