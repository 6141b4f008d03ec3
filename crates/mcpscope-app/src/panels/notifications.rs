//! Every notification the server sent, newest at the bottom: its time, its
//! method and what it says, filtered by method or text, virtualised. A click
//! selects its frame. Rows are read once, as they arrive.

use egui::{RichText, Ui};
use mcpscope_core::timeline::model::SessionModel;
use std::collections::BTreeMap;

/// One notification as listed.
#[derive(Clone, Debug, PartialEq)]
pub struct Shown {
    pub row: usize,
    pub method: String,
    /// The params, shortened to one line.
    pub summary: String,
}

#[derive(Default)]
pub struct NotificationsPanel {
    pub filter: String,
    shown: Vec<Shown>,
    /// Notifications per method, over all of them (not only the shown).
    pub counts: BTreeMap<String, usize>,
    scanned: usize,
    filter_for: String,
}

/// What the panel asks the app to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotificationsAction {
    Select(usize),
}

impl NotificationsPanel {
    pub fn reset(&mut self) {
        *self = NotificationsPanel {
            filter: std::mem::take(&mut self.filter),
            ..Self::default()
        };
    }

    pub fn shown(&self) -> &[Shown] {
        &self.shown
    }

    /// Reads the notifications that arrived since the last call.
    pub fn sync(&mut self, model: &SessionModel) {
        let needle = self.filter.to_lowercase();
        if needle != self.filter_for || model.notification_rows.len() < self.scanned {
            self.shown.clear();
            self.counts.clear();
            self.scanned = 0;
            self.filter_for = needle.clone();
        }
        for &row in &model.notification_rows[self.scanned..] {
            let Some(r) = model.store.get(row) else { continue };
            let method = r.method().unwrap_or("?").to_owned();
            *self.counts.entry(method.clone()).or_default() += 1;
            let text = r.text();
            let summary = mcpscope_core::text::shorten(
                text.split_once("\"params\":")
                    .map_or("", |(_, p)| p.trim_end_matches('}')),
                300,
            );
            if needle.is_empty() || method.to_lowercase().contains(&needle) || summary.to_lowercase().contains(&needle)
            {
                self.shown.push(Shown { row, method, summary });
            }
        }
        self.scanned = model.notification_rows.len();
    }

    pub fn ui(&mut self, ui: &mut Ui, model: &SessionModel) -> Option<NotificationsAction> {
        self.sync(model);
        let mut action = None;
        ui.horizontal_wrapped(|ui| {
            let l = ui.label("filter");
            ui.add(
                egui::TextEdit::singleline(&mut self.filter)
                    .hint_text("method or text")
                    .desired_width(180.0),
            )
            .labelled_by(l.id);
            ui.weak(format!(
                "{} of {} notifications",
                self.shown.len(),
                model.notification_rows.len()
            ));
            for (method, n) in &self.counts {
                ui.weak(format!("· {method} {n}"));
            }
        });
        let row_h = ui.text_style_height(&egui::TextStyle::Monospace) + 2.0;
        egui::ScrollArea::vertical()
            .id_salt("notification-lines")
            .auto_shrink([false, false])
            .stick_to_bottom(true)
            .show_rows(ui, row_h, self.shown.len(), |ui, range| {
                for n in &self.shown[range] {
                    let at = model.store.get(n.row).map_or(0.0, |r| r.at().as_secs_f64());
                    let text = format!("{at:>9.3}  {}  {}", n.method, n.summary);
                    let resp = ui.add(
                        egui::Label::new(RichText::new(text).monospace())
                            .sense(egui::Sense::click())
                            .truncate(),
                    );
                    if resp.clicked() {
                        action = Some(NotificationsAction::Select(n.row));
                    }
                }
            });
        action
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpscope_core::timeline::replay::Replay;

    #[test]
    fn lists_counts_and_filters_incrementally() {
        let mut r = Replay::new();
        r.inn(r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#)
            .inn(r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"disk"}}"#)
            .out(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        let m = r.model();
        let mut p = NotificationsPanel::default();
        p.sync(&m);
        assert_eq!(p.shown().len(), 2, "only the server's");
        assert_eq!(p.counts.get("notifications/message"), Some(&1));
        p.filter = "DISK".into();
        p.sync(&m);
        assert_eq!(p.shown().len(), 1);
        assert_eq!(p.shown()[0].method, "notifications/message");
        p.filter = "list_changed".into();
        p.sync(&m);
        assert_eq!(p.shown()[0].row, 0);
    }
}
