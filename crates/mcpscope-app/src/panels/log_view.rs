//! The server's log: `notifications/message` by level, with a level filter.
//! Rows are parsed once, as they arrive, into a filtered index.

use crate::theme;
use egui::{RichText, Ui};
use mcpscope_core::timeline::model::SessionModel;
use serde_json::Value;

/// MCP's log levels (RFC 5424's), least severe first: what the panel
/// filters by and what the composer offers for `logging/setLevel`.
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

/// One log message as shown.
#[derive(Clone, Debug, PartialEq)]
pub struct LogLine {
    pub row: usize,
    pub level: String,
    pub logger: Option<String>,
    pub text: String,
}

impl LogLine {
    pub fn parse(model: &SessionModel, row: usize) -> Option<LogLine> {
        let r = model.store.get(row)?;
        let v: Value = serde_json::from_slice(r.raw()).ok()?;
        let p = v.get("params")?;
        Some(LogLine {
            row,
            level: p.get("level").and_then(Value::as_str).unwrap_or("?").to_owned(),
            logger: p.get("logger").and_then(Value::as_str).map(str::to_owned),
            text: match p.get("data") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            },
        })
    }
}

/// Severity rank of a syslog level name (unknown names rank as info).
pub fn level_rank(level: &str) -> usize {
    LOG_LEVELS.iter().position(|l| *l == level).unwrap_or(1)
}

#[derive(Default)]
pub struct LogPanel {
    /// Only messages at this level or above are listed.
    pub min_level: usize,
    pub text: String,
    lines: Vec<LogLine>,
    scanned: usize,
    filter_for: (usize, String),
}

/// What the log panel asks the app to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogAction {
    Select(usize),
}

impl LogPanel {
    pub fn reset(&mut self) {
        self.lines.clear();
        self.scanned = 0;
    }

    /// Parses new log rows that pass the filter.
    pub fn sync(&mut self, model: &SessionModel) {
        let key = (self.min_level, self.text.to_lowercase());
        if key != self.filter_for || model.log_rows.len() < self.scanned {
            self.filter_for = key;
            self.reset();
        }
        let (min, needle) = (&self.filter_for.0, &self.filter_for.1);
        for &row in &model.log_rows[self.scanned..] {
            if let Some(line) = LogLine::parse(model, row)
                && level_rank(&line.level) >= *min
                && (needle.is_empty() || line.text.to_lowercase().contains(needle.as_str()))
            {
                self.lines.push(line);
            }
        }
        self.scanned = model.log_rows.len();
    }

    pub fn lines(&self) -> &[LogLine] {
        &self.lines
    }

    pub fn ui(&mut self, ui: &mut Ui, model: &SessionModel) -> Option<LogAction> {
        self.sync(model);
        let mut action = None;
        ui.horizontal(|ui| {
            let label = ui.label("level");
            egui::ComboBox::from_id_salt("log-level-filter")
                .selected_text(format!("{} and above", LOG_LEVELS[self.min_level]))
                .show_ui(ui, |ui| {
                    for (i, l) in LOG_LEVELS.iter().enumerate() {
                        ui.selectable_value(&mut self.min_level, i, format!("{l} and above"));
                    }
                })
                .response
                .labelled_by(label.id);
            ui.add(
                egui::TextEdit::singleline(&mut self.text)
                    .hint_text("text in the message")
                    .desired_width(160.0),
            );
            ui.weak(format!(
                "{} of {} messages · the server sends these after logging/setLevel (Compose, Logging)",
                self.lines.len(),
                model.log_rows.len()
            ));
        });
        let row_h = ui.text_style_height(&egui::TextStyle::Monospace) + 2.0;
        egui::ScrollArea::vertical()
            .id_salt("log-lines")
            .auto_shrink([false, false])
            .stick_to_bottom(true)
            .show_rows(ui, row_h, self.lines.len(), |ui, range| {
                for line in &self.lines[range] {
                    let at = model.store.get(line.row).map_or(0.0, |r| r.at().as_secs_f64());
                    let color = match level_rank(&line.level) {
                        0 => ui.visuals().weak_text_color(),
                        1 | 2 => ui.visuals().text_color(),
                        3 => theme::WARN,
                        _ => theme::ERROR,
                    };
                    let logger = line.logger.as_ref().map(|l| format!("[{l}] ")).unwrap_or_default();
                    let text = format!(
                        "{at:>9.3}  {:<9} {logger}{}",
                        line.level,
                        mcpscope_core::text::shorten(&line.text, 400)
                    );
                    let resp = ui.add(
                        egui::Label::new(RichText::new(text).monospace().color(color))
                            .sense(egui::Sense::click())
                            .truncate(),
                    );
                    if resp.clicked() {
                        action = Some(LogAction::Select(line.row));
                    }
                }
            });
        action
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpscope_core::timeline::model::Source;
    use mcpscope_core::timeline::replay::Replay;
    use mcpscope_core::transport::event::Event;
    use mcpscope_core::wire::frame::Direction;

    #[test]
    fn filters_by_level_and_text_incrementally() {
        let mut r = Replay::new();
        let mut m = SessionModel::new(Source::Live {
            command_line: "x".into(),
        });
        let mut push = |m: &mut SessionModel, level: &str, data: &str| {
            let line = format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"level":"{level}","logger":"db","data":{data}}}}}"#
            );
            m.apply(&Event::Frame(r.frame(Direction::In, line.as_bytes())));
        };
        push(&mut m, "debug", r#""connecting""#);
        push(&mut m, "error", r#"{"code":5}"#);
        let mut p = LogPanel::default();
        p.sync(&m);
        assert_eq!(p.lines().len(), 2);
        assert_eq!(p.lines()[1].text, r#"{"code":5}"#);
        assert_eq!(p.lines()[1].logger.as_deref(), Some("db"));
        p.min_level = level_rank("warning");
        p.sync(&m);
        assert_eq!(p.lines().len(), 1);
        push(&mut m, "critical", r#""disk full""#);
        push(&mut m, "info", r#""ok""#);
        p.sync(&m);
        assert_eq!(
            p.lines().iter().map(|l| l.level.as_str()).collect::<Vec<_>>(),
            ["error", "critical"]
        );
        p.min_level = 0;
        p.text = "DISK".into();
        p.sync(&m);
        assert_eq!(p.lines().len(), 1);
    }
}
