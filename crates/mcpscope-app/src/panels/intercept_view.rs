//! The Intercept tab of a proxied session: the queue of held frames (each
//! with its JSON tree and raw text, editable as JSON or as raw bytes), what
//! to do with one (forward, forward edited, drop, answer instead), forward
//! all, hold everything, the breakpoints and fault rules (added and
//! switched live), and frames to inject toward either side.
//!
//! It reads the board the proxy last sent and returns what the user asked
//! for as an [`InterceptAction`]; the app sends it over the control socket.

use super::json_tree::{self, JsonTreeState};
use crate::theme;
use egui::{RichText, Ui};
use mcpscope_core::intercept::control::{BoardView, HeldView, put_bytes};
use mcpscope_core::intercept::rule::Toward;
use mcpscope_core::wire::frame::Direction;
use serde_json::{Value, json};

/// What the user asked the proxy to do.
#[derive(Clone, Debug, PartialEq)]
pub enum InterceptAction {
    Forward(u64),
    ForwardEdited(u64, Vec<u8>),
    Drop(u64),
    /// A result or `{"error": …}`, completed with the request's id by the proxy.
    AnswerJson(u64, Value),
    ForwardAll,
    DisableBreakpoints,
    HoldEverything(bool),
    Inject {
        toward: Direction,
        bytes: Vec<u8>,
    },
    AddBreakpoint {
        expr: String,
        toward: Toward,
        timeout: Option<String>,
    },
    RemoveBreakpoint(usize),
    EnableBreakpoint(usize, bool),
    AddFault(String),
    RemoveFault(usize),
    EnableFault(usize, bool),
    /// Open the proxy's own record (its touches, both versions) in a tab.
    OpenRecord(std::path::PathBuf),
}

impl InterceptAction {
    /// The control socket's request for it (indices from 1 there); None
    /// for what the app does itself.
    pub fn request(&self) -> Option<Value> {
        Some(match self {
            InterceptAction::Forward(id) => json!({"op": "forward", "id": id}),
            InterceptAction::ForwardEdited(id, bytes) => {
                let mut v = json!({"op": "forward", "id": id});
                put_bytes(&mut v, "bytes", bytes);
                v
            }
            InterceptAction::Drop(id) => json!({"op": "drop", "id": id}),
            InterceptAction::AnswerJson(id, v) => json!({"op": "answer", "id": id, "json": v}),
            InterceptAction::ForwardAll => json!({"op": "forward-all"}),
            InterceptAction::DisableBreakpoints => json!({"op": "disable"}),
            InterceptAction::HoldEverything(on) => json!({"op": "hold-everything", "on": on}),
            InterceptAction::Inject { toward, bytes } => {
                let side = if *toward == Direction::Out { "server" } else { "client" };
                let mut v = json!({"op": "inject", "toward": side});
                put_bytes(&mut v, "bytes", bytes);
                v
            }
            InterceptAction::AddBreakpoint { expr, toward, timeout } => {
                json!({"op": "break", "match": expr, "toward": toward.as_str(), "timeout": timeout})
            }
            InterceptAction::RemoveBreakpoint(i) => json!({"op": "unbreak", "index": i + 1}),
            InterceptAction::EnableBreakpoint(i, on) => json!({"op": "break-enable", "index": i + 1, "on": on}),
            InterceptAction::AddFault(rule) => json!({"op": "fault", "rule": rule}),
            InterceptAction::RemoveFault(i) => json!({"op": "unfault", "index": i + 1}),
            InterceptAction::EnableFault(i, on) => json!({"op": "fault-enable", "index": i + 1, "on": on}),
            InterceptAction::OpenRecord(_) => return None,
        })
    }
}

/// How the editor's text is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum EditMode {
    /// Must parse as JSON; sent as one line.
    #[default]
    Json,
    /// Sent exactly as typed, malformed or not.
    Raw,
}

/// The editor's text as the bytes to send, or why it cannot be sent.
pub fn edited_bytes(text: &str, mode: EditMode) -> Result<Vec<u8>, String> {
    match mode {
        EditMode::Raw => Ok(text.as_bytes().to_vec()),
        EditMode::Json => {
            let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
            // One line: a frame on stdio must not hold a raw newline.
            Ok(serde_json::to_vec(&v).expect("JSON"))
        }
    }
}

#[derive(Default)]
pub struct InterceptView {
    /// The held frame shown (by its id).
    pub selected: Option<u64>,
    pub edit_text: String,
    pub edit_mode: EditMode,
    pub answer_text: String,
    pub new_break: String,
    pub new_break_toward: Toward,
    pub new_break_timeout: String,
    pub new_fault: String,
    pub inject_text: String,
    tree: JsonTreeState,
    /// The frame the editor was filled from, so a new selection refills it.
    editing: Option<u64>,
}

const DEFAULT_ANSWER: &str = r#"{"content": [{"type": "text", "text": "answered by mcpscope"}]}"#;

impl InterceptView {
    pub fn ui(
        &mut self,
        ui: &mut Ui,
        board: &BoardView,
        board_age: std::time::Duration,
        said: Option<&Result<String, String>>,
        lost: Option<&str>,
        record: Option<&std::path::Path>,
    ) -> Option<InterceptAction> {
        let mut action = None;
        if let Some(path) = record {
            // An own session's timeline shows what the app saw; what the
            // proxy did is in its own record.
            ui.horizontal_wrapped(|ui| {
                ui.weak("What the proxy did, with both versions of what it changed:");
                ui.monospace(path.display().to_string());
                if ui.button("Open the proxy's record").clicked() {
                    action = Some(InterceptAction::OpenRecord(path.to_owned()));
                }
            });
        }
        if let Some(why) = lost {
            ui.colored_label(theme::ERROR, format!("not connected to the proxy: {why}"));
        }
        if board.closed {
            ui.weak("The proxy has ended: nothing is held any more.");
        }
        ui.horizontal_wrapped(|ui| {
            ui.label(RichText::new(format!("{} held", board.held.len())).strong());
            let mut hold = board.hold_everything;
            if ui
                .checkbox(&mut hold, "Hold everything")
                .on_hover_text("Hold every frame from now on, both ways, until you act on it")
                .changed()
            {
                action = Some(InterceptAction::HoldEverything(hold));
            }
            if ui
                .add_enabled(!board.held.is_empty(), egui::Button::new("Forward all"))
                .clicked()
            {
                action = Some(InterceptAction::ForwardAll);
            }
            if ui
                .button("Disable breakpoints")
                .on_hover_text("Switch every breakpoint off and forward what is held")
                .clicked()
            {
                action = Some(InterceptAction::DisableBreakpoints);
            }
            ui.weak(format!("seed {}", board.seed));
            match said {
                Some(Ok(s)) => {
                    ui.colored_label(theme::OK, s);
                }
                Some(Err(e)) => {
                    ui.colored_label(theme::ERROR, e);
                }
                None => {}
            }
        });
        ui.separator();
        if self.selected.is_some_and(|id| !board.held.iter().any(|h| h.id == id)) {
            self.selected = None;
        }
        if self.selected.is_none() {
            self.selected = board.held.first().map(|h| h.id);
        }
        // Three columns, so the actions on a held frame, the rules and the
        // injector all show without scrolling: the queue and the injector,
        // the frame on show, the breakpoints and rules.
        ui.columns(3, |cols| {
            if let Some(a) = self.queue_ui(&mut cols[0], board, board_age) {
                action = Some(a);
            }
            cols[0].separator();
            if let Some(a) = self.inject_ui(&mut cols[0]) {
                action = Some(a);
            }
            let held = self
                .selected
                .and_then(|id| board.held.iter().find(|h| h.id == id))
                .cloned();
            match held {
                Some(h) => {
                    if let Some(a) = self.held_ui(&mut cols[1], &h) {
                        action = Some(a);
                    }
                }
                None => {
                    cols[1].weak("Nothing is held. Frames matching a breakpoint stop here until you act.");
                }
            }
            if let Some(a) = self.rules_ui(&mut cols[2], board) {
                action = Some(a);
            }
        });
        action
    }

    fn queue_ui(&mut self, ui: &mut Ui, board: &BoardView, board_age: std::time::Duration) -> Option<InterceptAction> {
        ui.label(RichText::new("Held frames").strong());
        egui::ScrollArea::vertical()
            .id_salt("held-queue")
            .max_height(160.0)
            .show(ui, |ui| {
                if board.held.is_empty() {
                    ui.weak("(none)");
                }
                for h in &board.held {
                    let dir = match h.direction {
                        Some(Direction::Out) => "to server",
                        Some(Direction::In) => "to client",
                        None => "",
                    };
                    let (held_s, left_s) = held_times(h, board_age);
                    let left = left_s
                        .map(|s| format!(", goes on in {:.0} s", s.ceil()))
                        .unwrap_or_default();
                    let text = format!(
                        "#{} {dir} {} (seq {}) held {held_s:.1} s{left}",
                        h.id,
                        h.method.as_deref().unwrap_or("response"),
                        h.seq,
                    );
                    if ui.selectable_label(self.selected == Some(h.id), text).clicked() {
                        self.selected = Some(h.id);
                    }
                }
            });
        None
    }

    fn held_ui(&mut self, ui: &mut Ui, h: &HeldView) -> Option<InterceptAction> {
        let mut action = None;
        let raw = String::from_utf8_lossy(&h.bytes);
        let raw = raw.trim_end_matches(['\n', '\r']).to_owned();
        if self.editing != Some(h.id) {
            self.editing = Some(h.id);
            self.edit_text = match serde_json::from_str::<Value>(&raw) {
                Ok(v) => serde_json::to_string_pretty(&v).unwrap_or(raw.clone()),
                Err(_) => raw.clone(),
            };
            self.edit_mode = if serde_json::from_str::<Value>(&raw).is_ok() {
                EditMode::Json
            } else {
                EditMode::Raw
            };
            self.answer_text = DEFAULT_ANSWER.to_owned();
            self.tree.reset();
        }
        ui.label(RichText::new(format!("#{} held by {}", h.id, h.by)).strong());
        let edited = edited_bytes(&self.edit_text, self.edit_mode);
        ui.horizontal_wrapped(|ui| {
            if ui.button("Forward").on_hover_text("Send it on as it arrived").clicked() {
                action = Some(InterceptAction::Forward(h.id));
            }
            if ui
                .add_enabled(edited.is_ok(), egui::Button::new("Forward edited"))
                .clicked()
                && let Ok(bytes) = &edited
            {
                action = Some(InterceptAction::ForwardEdited(h.id, bytes.clone()));
            }
            if ui.button("Drop").on_hover_text("Never send it").clicked() {
                action = Some(InterceptAction::Drop(h.id));
            }
        });
        if h.is_request {
            ui.label("Answer instead (a result, or {\"error\": {\"code\": …, \"message\": …}}):");
            ui.add(
                egui::TextEdit::singleline(&mut self.answer_text)
                    .code_editor()
                    .desired_width(f32::INFINITY),
            );
            let answer = serde_json::from_str::<Value>(&self.answer_text);
            if let Err(e) = &answer {
                ui.colored_label(theme::ERROR, format!("not JSON: {e}"));
            }
            let other = if h.direction == Some(Direction::Out) {
                "server"
            } else {
                "client"
            };
            if ui
                .add_enabled(answer.is_ok(), egui::Button::new("Answer instead"))
                .on_hover_text(format!("Send this answer back; the {other} never sees the request"))
                .clicked()
                && let Ok(v) = answer
            {
                action = Some(InterceptAction::AnswerJson(h.id, v));
            }
        }
        ui.horizontal(|ui| {
            ui.label("Edit as");
            ui.selectable_value(&mut self.edit_mode, EditMode::Json, "JSON")
                .on_hover_text("Checked as JSON, sent on one line");
            ui.selectable_value(&mut self.edit_mode, EditMode::Raw, "raw bytes")
                .on_hover_text("Sent exactly as typed, malformed or not (a line ending is added)");
        });
        egui::ScrollArea::vertical()
            .id_salt("held-editor")
            .max_height(140.0)
            .show(ui, |ui| {
                ui.add(
                    egui::TextEdit::multiline(&mut self.edit_text)
                        .code_editor()
                        .desired_rows(5)
                        .desired_width(f32::INFINITY),
                );
            });
        if let Err(e) = &edited {
            ui.colored_label(theme::ERROR, e);
        }
        egui::CollapsingHeader::new("JSON tree")
            .id_salt(("held-tree", h.id))
            .default_open(true)
            .show(ui, |ui| match serde_json::from_str::<Value>(&raw) {
                Ok(v) => {
                    egui::ScrollArea::vertical()
                        .id_salt("held-tree-scroll")
                        .max_height(140.0)
                        .show(ui, |ui| json_tree::show(ui, &v, &mut self.tree, "held"));
                }
                Err(e) => {
                    ui.colored_label(theme::ERROR, format!("not JSON: {e}"));
                }
            });
        action
    }

    fn rules_ui(&mut self, ui: &mut Ui, board: &BoardView) -> Option<InterceptAction> {
        let mut action = None;
        {
            ui.label(RichText::new("Breakpoints").strong());
            for (i, b) in board.breakpoints.iter().enumerate() {
                ui.horizontal_wrapped(|ui| {
                    let mut on = b.enabled;
                    if ui.checkbox(&mut on, "").changed() {
                        action = Some(InterceptAction::EnableBreakpoint(i, on));
                    }
                    ui.label(RichText::new(&b.text).monospace());
                    ui.weak(format!("{} hit(s)", b.matched));
                    if ui.small_button("remove").clicked() {
                        action = Some(InterceptAction::RemoveBreakpoint(i));
                    }
                });
            }
            ui.add(
                egui::TextEdit::singleline(&mut self.new_break)
                    .hint_text("method == \"tools/call\"")
                    .desired_width(f32::INFINITY),
            );
            ui.horizontal_wrapped(|ui| {
                egui::ComboBox::from_id_salt("break-toward")
                    .selected_text(self.new_break_toward.as_str())
                    .show_ui(ui, |ui| {
                        for t in [Toward::Both, Toward::Server, Toward::Client] {
                            ui.selectable_value(&mut self.new_break_toward, t, t.as_str());
                        }
                    });
                ui.add(
                    egui::TextEdit::singleline(&mut self.new_break_timeout)
                        .hint_text("timeout, e.g. 60s")
                        .desired_width(90.0),
                );
                if ui
                    .add_enabled(!self.new_break.trim().is_empty(), egui::Button::new("Add breakpoint"))
                    .clicked()
                {
                    let timeout = Some(self.new_break_timeout.trim().to_owned()).filter(|t| !t.is_empty());
                    action = Some(InterceptAction::AddBreakpoint {
                        expr: self.new_break.trim().to_owned(),
                        toward: self.new_break_toward,
                        timeout,
                    });
                }
            });
            ui.separator();
            ui.label(RichText::new("Fault rules").strong());
            for (i, f) in board.faults.iter().enumerate() {
                ui.horizontal_wrapped(|ui| {
                    let mut on = f.enabled;
                    if ui.checkbox(&mut on, "").changed() {
                        action = Some(InterceptAction::EnableFault(i, on));
                    }
                    ui.label(RichText::new(&f.text).monospace());
                    ui.weak(format!("{} matched, {} applied", f.matched, f.applied));
                    if ui.small_button("remove").clicked() {
                        action = Some(InterceptAction::RemoveFault(i));
                    }
                });
            }
            ui.add(
                egui::TextEdit::singleline(&mut self.new_fault)
                    .hint_text("method == \"tools/list\" => delay 2s")
                    .desired_width(f32::INFINITY),
            );
            ui.horizontal(|ui| {
                if ui
                    .add_enabled(self.new_fault.contains("=>"), egui::Button::new("Add rule"))
                    .clicked()
                {
                    action = Some(InterceptAction::AddFault(self.new_fault.trim().to_owned()));
                }
            });
        }
        action
    }

    fn inject_ui(&mut self, ui: &mut Ui) -> Option<InterceptAction> {
        let mut action = None;
        ui.label(RichText::new("Inject").strong())
            .on_hover_text("A line no peer wrote, sent exactly as typed (malformed too)");
        ui.add(
            egui::TextEdit::singleline(&mut self.inject_text)
                .code_editor()
                .hint_text(r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#)
                .desired_width(f32::INFINITY),
        );
        ui.horizontal(|ui| {
            let ready = !self.inject_text.is_empty();
            if ui.add_enabled(ready, egui::Button::new("to client")).clicked() {
                action = Some(InterceptAction::Inject {
                    toward: Direction::In,
                    bytes: self.inject_text.as_bytes().to_vec(),
                });
            }
            if ui.add_enabled(ready, egui::Button::new("to server")).clicked() {
                action = Some(InterceptAction::Inject {
                    toward: Direction::Out,
                    bytes: self.inject_text.as_bytes().to_vec(),
                });
            }
        });
        action
    }
}

/// How long a frame has been held and how long until its time-out, in
/// seconds: the proxy measured both when it sent the board, `age` ago.
pub fn held_times(h: &HeldView, age: std::time::Duration) -> (f64, Option<f64>) {
    let age_ms = age.as_millis() as f64;
    let held = (h.held_ms as f64 + age_ms) / 1000.0;
    let left = h.timeout_left_ms.map(|ms| ((ms as f64 - age_ms) / 1000.0).max(0.0));
    (held, left)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_frames_time_counts_on_from_the_boards_figures() {
        let h = HeldView {
            held_ms: 1_500,
            timeout_left_ms: Some(2_000),
            ..HeldView::default()
        };
        assert_eq!(held_times(&h, std::time::Duration::ZERO), (1.5, Some(2.0)));
        assert_eq!(
            held_times(&h, std::time::Duration::from_millis(1_200)),
            (2.7, Some(0.8))
        );
        assert_eq!(held_times(&h, std::time::Duration::from_secs(9)).1, Some(0.0));
    }

    #[test]
    fn edits_are_checked_as_json_or_sent_raw() {
        assert_eq!(edited_bytes("{\n  \"a\": 1\n}", EditMode::Json).unwrap(), b"{\"a\":1}");
        assert!(edited_bytes("{oops", EditMode::Json).unwrap_err().contains("not JSON"));
        assert_eq!(edited_bytes("{oops", EditMode::Raw).unwrap(), b"{oops");
    }

    #[test]
    fn actions_become_the_sockets_requests() {
        assert_eq!(
            InterceptAction::Forward(3).request().unwrap(),
            json!({"op": "forward", "id": 3})
        );
        assert_eq!(
            InterceptAction::ForwardEdited(3, vec![0xff]).request().unwrap(),
            json!({"op": "forward", "id": 3, "bytes_b64": "/w=="})
        );
        assert_eq!(
            InterceptAction::RemoveFault(0).request(),
            Some(json!({"op": "unfault", "index": 1}))
        );
        assert_eq!(
            InterceptAction::OpenRecord("/x".into()).request(),
            None,
            "the app's own"
        );
        assert_eq!(
            InterceptAction::Inject {
                toward: Direction::In,
                bytes: b"x".to_vec()
            }
            .request()
            .unwrap(),
            json!({"op": "inject", "toward": "client", "bytes": "x"})
        );
        // Each request reads back as the command it stands for.
        for a in [
            InterceptAction::Drop(2),
            InterceptAction::AnswerJson(2, json!({"content": []})),
            InterceptAction::ForwardAll,
            InterceptAction::DisableBreakpoints,
            InterceptAction::HoldEverything(true),
            InterceptAction::AddBreakpoint {
                expr: "method == \"x\"".into(),
                toward: Toward::Client,
                timeout: Some("5s".into()),
            },
            InterceptAction::EnableBreakpoint(0, false),
            InterceptAction::AddFault("true => drop".into()),
            InterceptAction::EnableFault(1, true),
        ] {
            assert!(
                mcpscope_core::intercept::control::op_from_json(&a.request().unwrap()).is_ok(),
                "{a:?}"
            );
        }
    }
}
