//! Listen mode (2026-07-28): one long `subscriptions/listen` request carries
//! the notifications asked for; each stream is shown with its
//! acknowledgement and what it delivered.

use super::{ComposerAction, send_row};
use crate::theme;
use egui::{RichText, Ui};
use mcpscope_core::protocol::subscriptions::{self, Filter, Subscription};
use mcpscope_core::timeline::model::SessionModel;
use mcpscope_core::timeline::store::Lane;
use mcpscope_core::wire::classify::Kind;
use mcpscope_core::wire::frame::Frame;

pub struct ListenMode {
    pub filter: Filter,
    pub uris: String,
    /// Subscriptions seen on the timeline, recomputed when rows arrive.
    pub subscriptions: Vec<Subscription>,
    /// Rows already looked at, and the frames kept from them.
    looked_at: usize,
    frames: Vec<Frame>,
}

impl Default for ListenMode {
    fn default() -> Self {
        Self {
            filter: Filter::all_lists(),
            uris: String::new(),
            subscriptions: Vec::new(),
            looked_at: 0,
            frames: Vec::new(),
        }
    }
}

impl ListenMode {
    /// Recomputes the streams from the rows (only the listen requests and
    /// notifications are read), when rows arrived.
    pub fn sync(&mut self, model: &SessionModel) {
        let store = &model.store;
        if store.len() < self.looked_at {
            // Another session's rows: start over.
            self.looked_at = 0;
            self.frames.clear();
        }
        // Only rows added since the last call are looked at; notifications
        // before the first listen request cannot belong to a subscription.
        let before = self.frames.len();
        for i in self.looked_at..store.len() {
            let Some(r) = store.get(i) else { continue };
            let relevant = match r.lane() {
                Lane::Out => r.method() == Some(subscriptions::LISTEN),
                Lane::In => !self.frames.is_empty() && r.kind() == Kind::Notification,
                _ => false,
            };
            if relevant && let Some(f) = r.to_frame() {
                self.frames.push(f);
            }
        }
        self.looked_at = store.len();
        if self.frames.len() != before {
            let refs: Vec<&Frame> = self.frames.iter().collect();
            self.subscriptions = subscriptions::subscriptions(&refs);
        }
    }

    pub fn ui(&mut self, ui: &mut Ui, model: &SessionModel, live: bool, actions: &mut Vec<ComposerAction>) {
        ui.weak("2026-07-28: one long request carries the notifications you ask for (replaces the GET stream and resources/subscribe).");
        let f = &mut self.filter;
        ui.checkbox(&mut f.tools_list_changed, "toolsListChanged");
        ui.checkbox(&mut f.prompts_list_changed, "promptsListChanged");
        ui.checkbox(&mut f.resources_list_changed, "resourcesListChanged");
        let l = ui.label("resource URIs (one per line)");
        ui.add(
            egui::TextEdit::multiline(&mut self.uris)
                .desired_rows(2)
                .desired_width(f32::INFINITY),
        )
        .labelled_by(l.id);
        self.filter.resource_subscriptions = self
            .uris
            .lines()
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .map(str::to_owned)
            .collect();
        if send_row(ui, live, true, "Send subscriptions/listen") {
            actions.push(ComposerAction::Listen(self.filter.clone()));
        }
        self.sync(model);
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
}
