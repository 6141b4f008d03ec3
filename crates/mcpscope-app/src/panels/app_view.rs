//! The App tab: the MCP Apps this session hosts (their Views run in the
//! browser, on loopback pages), what each View said to the host ("App →
//! host": its messages, its model context, its logs), the policy it runs
//! under, and the controls: open, copy the URL, close (with teardown).

use crate::app_host::{HostedApps, Stage};
use egui::{RichText, Ui};
use serde_json::Value;
use std::time::Duration;

/// A recorded tool call whose tool has a View (the timeline's selection).
#[derive(Clone, Debug)]
pub struct SelectedCall {
    pub tool: Value,
    pub arguments: Value,
    pub result: Value,
}

#[derive(Clone, Debug)]
pub enum AppAction {
    Close(usize),
    OpenInBrowser(String),
    CopyUrl(String),
    /// Host the View of a recorded call, with its input and result.
    OpenForCall(SelectedCall),
    Theme(String),
    /// Grant (or not) a permission to the Views opened from now on.
    Grant(String, bool),
}

#[derive(Default)]
pub struct AppView;

impl AppView {
    pub fn ui(
        &mut self,
        ui: &mut Ui,
        apps: &HostedApps,
        selected: Option<&SelectedCall>,
        advertised: bool,
    ) -> Option<AppAction> {
        let mut action = None;
        ui.horizontal(|ui| {
            if let Some(call) = selected {
                let name = call.tool.get("name").and_then(Value::as_str).unwrap_or("?");
                if ui
                    .button(format!("Open app for the selected {name} call"))
                    .on_hover_text("Hosts the tool's View with the recorded input and result, without running it again")
                    .clicked()
                {
                    action = Some(AppAction::OpenForCall(call.clone()));
                }
            }
            let dark = apps.theme == "dark";
            if ui
                .selectable_label(dark, "Dark theme")
                .on_hover_text("The theme Views get (host-context-changed tells the open ones)")
                .clicked()
            {
                action = Some(AppAction::Theme(if dark { "light" } else { "dark" }.into()));
            }
        });
        ui.horizontal_wrapped(|ui| {
            ui.label("Views opened from now on may use:")
                .on_hover_text("A View gets a permission only if its resource asks for it and it is ticked here");
            for p in mcpscope_core::apps::csp::PERMISSIONS {
                let mut on = apps.granted.iter().any(|g| g == p);
                if ui.checkbox(&mut on, p).changed() {
                    action = Some(AppAction::Grant(p.to_owned(), on));
                }
            }
        });
        if apps.views.is_empty() {
            ui.weak(if advertised {
                "Run a tool that has an MCP App (a ui:// View) from the composer: its View opens in your browser, \
                 and every message between it and mcpscope is drawn on the App lifeline. Select a recorded call \
                 of such a tool to open its View again."
            } else {
                "This session did not advertise MCP Apps (the launcher's \"host Views\" was off): the server shows \
                 its text-only side."
            });
            return action;
        }
        for (index, v) in apps.views.iter().enumerate().rev() {
            ui.separator();
            ui.horizontal_wrapped(|ui| {
                ui.label(RichText::new(format!("App {}", v.tool)).strong());
                let (text, color) = match &v.stage {
                    Stage::Reading => ("reading its resource…".to_owned(), ui.visuals().weak_text_color()),
                    Stage::Hosting if v.snapshot.phase.is_empty() => (
                        "waiting for its page to be opened in a browser".to_owned(),
                        ui.visuals().weak_text_color(),
                    ),
                    Stage::Hosting => (v.snapshot.phase.clone(), ui.visuals().text_color()),
                    Stage::Failed(why) => (format!("not hosted: {why}"), crate::theme::ERROR),
                    Stage::Closed => ("closed".to_owned(), ui.visuals().weak_text_color()),
                };
                ui.colored_label(color, text);
                if let Some(d) = v.snapshot.initialized_after {
                    ui.weak(format!("initialized {} ms after Run", d.as_millis()));
                }
                if !v.snapshot.display_mode.is_empty() {
                    ui.weak(format!("mode {}", v.snapshot.display_mode));
                }
            });
            if let Some(url) = &v.url
                && v.stage == Stage::Hosting
            {
                ui.horizontal_wrapped(|ui| {
                    ui.monospace(url);
                    if ui.button("Open in browser").clicked() {
                        action = Some(AppAction::OpenInBrowser(url.clone()));
                    }
                    if ui.button("Copy URL").clicked() {
                        action = Some(AppAction::CopyUrl(url.clone()));
                    }
                    if ui
                        .button("Close app")
                        .on_hover_text("Sends ui/resource-teardown and waits for the View's answer")
                        .clicked()
                    {
                        action = Some(AppAction::Close(index));
                    }
                });
            }
            if let Some(waited) = v.waiting_for_browser() {
                if waited >= crate::app_host::BROWSER_PATIENCE {
                    ui.colored_label(
                        crate::theme::WARN,
                        format!(
                            "No browser has loaded this View's page in {} s. If none opened (or it closed at \
                             start), set BROWSER to your browser's command (e.g. BROWSER=chromium) and press \
                             Open in browser, or open the URL above in any browser yourself.",
                            waited.as_secs()
                        ),
                    );
                }
                // The hint comes, and its seconds count, without other input.
                ui.ctx().request_repaint_after(Duration::from_secs(1));
            }
            for w in &v.warnings {
                ui.colored_label(crate::theme::WARN, w);
            }
            if !v.csp.is_empty() {
                egui::CollapsingHeader::new("Content-Security-Policy the View runs under")
                    .id_salt(("app-csp", index))
                    .show(ui, |ui| {
                        ui.monospace(&v.csp);
                    });
            }
            let s = &v.snapshot;
            ui.label(
                RichText::new(format!(
                    "App to host: {} message(s), {} log line(s)",
                    s.messages.len(),
                    s.logs.len()
                ))
                .strong(),
            );
            for m in s.messages.iter().rev().take(20) {
                ui.horizontal_wrapped(|ui| {
                    ui.label("ui/message:");
                    ui.label(content_text(m.get("content")));
                });
            }
            match &s.model_context {
                Some(c) => {
                    ui.horizontal_wrapped(|ui| {
                        ui.label("Model context (the last one wins):");
                        ui.monospace(mcpscope_core::text::shorten(&c.to_string(), 300));
                    });
                }
                None => {
                    ui.weak("No model context yet (ui/update-model-context).");
                }
            }
            for l in s.logs.iter().rev().take(10) {
                ui.horizontal_wrapped(|ui| {
                    ui.weak(l.get("level").and_then(Value::as_str).unwrap_or("log"));
                    ui.label(match l.get("data") {
                        Some(Value::String(t)) => mcpscope_core::text::shorten(t, 200),
                        Some(other) => mcpscope_core::text::shorten(&other.to_string(), 200),
                        None => String::new(),
                    });
                });
            }
        }
        action
    }
}

/// The text of a content block list (others by their type).
fn content_text(content: Option<&Value>) -> String {
    let Some(items) = content.and_then(Value::as_array) else {
        return String::new();
    };
    items
        .iter()
        .map(|c| match c.get("type").and_then(Value::as_str) {
            Some("text") => c.get("text").and_then(Value::as_str).unwrap_or_default().to_owned(),
            Some(other) => format!("[{other}]"),
            None => "[?]".to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use egui_kittest::Harness;
    use egui_kittest::kittest::Queryable as _;
    use std::time::Instant;

    /// A View whose page no browser loads (the browser died at start) gets a
    /// hint after a while: how to set BROWSER, or open the URL by hand.
    #[test]
    fn a_page_no_browser_loads_is_explained_after_a_while() {
        let mut apps = HostedApps::default();
        let tool = serde_json::json!({
            "name": "show",
            "inputSchema": {"type": "object"},
            "_meta": {"ui": {"resourceUri": "ui://show/view.html"}}
        });
        apps.open(&tool, serde_json::json!({}), None, None);
        let v = &mut apps.views[0];
        v.stage = Stage::Hosting;
        v.url = Some("http://127.0.0.1:1/app/x".into());
        assert!(
            v.waiting_for_browser()
                .is_some_and(|w| w < crate::app_host::BROWSER_PATIENCE)
        );
        let shows_hint = |apps: &HostedApps| {
            let mut h = Harness::new_ui(|ui| {
                AppView.ui(ui, apps, None, true);
            });
            h.run_steps(2);
            h.query_by_label_contains("set BROWSER").is_some()
        };
        assert!(!shows_hint(&apps), "not at once");
        apps.views[0].opened = Instant::now() - crate::app_host::BROWSER_PATIENCE;
        assert!(shows_hint(&apps), "after the patience is spent");
        apps.views[0].snapshot.phase = "ready".into();
        assert_eq!(apps.views[0].waiting_for_browser(), None, "a browser connected");
        assert!(!shows_hint(&apps));
    }
}
