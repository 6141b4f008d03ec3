//! Side-by-side session diff: two captures (e.g. the same session against a
//! Node SDK and a Python SDK server) compared method by method. Loading and
//! comparing run on a worker thread; the window only draws the result.

use crate::job::{Job, PollOutcome as _};
use crate::panels::json_tree::{self, JsonTreeState};
use crate::theme;
use egui::{RichText, Ui};
use mcpscope_core::analysis::session_diff::{self, Comparison, Exchange, Outcome, Verdict};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Which side a file belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    A,
    B,
}

/// What the window asks the app to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiffAction {
    /// Open a file dialog for one side.
    Pick(Side),
    /// Use the capture of the session on screen for one side.
    UseSession(Side),
}

/// A finished comparison with what it was made from.
pub struct Compared {
    pub a: PathBuf,
    pub b: PathBuf,
    pub a_command: String,
    pub b_command: String,
    pub comparison: Comparison,
}

#[derive(Default)]
pub struct DiffView {
    pub open: bool,
    pub a: Option<PathBuf>,
    pub b: Option<PathBuf>,
    pub result: Option<Compared>,
    pub error: Option<anyhow::Error>,
    pub only_differences: bool,
    pub selected: Option<usize>,
    job: Option<Job<anyhow::Result<Compared>>>,
    tree_a: JsonTreeState,
    tree_b: JsonTreeState,
}

/// Loads both captures and compares them (runs on the worker).
pub fn load_and_compare(a: &Path, b: &Path) -> anyhow::Result<Compared> {
    let (xa, xb) = session_diff::read_both(a, b)?;
    Ok(Compared {
        a: a.to_owned(),
        b: b.to_owned(),
        a_command: xa.header.command_line,
        b_command: xb.header.command_line,
        comparison: session_diff::compare_exchanges(&xa.exchanges, &xb.exchanges),
    })
}

impl DiffView {
    pub fn busy(&self) -> bool {
        self.job.is_some()
    }

    /// Sets one side; compares as soon as both are known.
    pub fn set(&mut self, side: Side, path: PathBuf, waker: &Arc<dyn Fn() + Send + Sync>) {
        match side {
            Side::A => self.a = Some(path),
            Side::B => self.b = Some(path),
        }
        self.open = true;
        self.start(waker);
    }

    pub fn start(&mut self, waker: &Arc<dyn Fn() + Send + Sync>) {
        let (Some(a), Some(b)) = (self.a.clone(), self.b.clone()) else {
            return;
        };
        self.job = Some(Job::spawn("diff", Some(Arc::clone(waker)), move || {
            load_and_compare(&a, &b)
        }));
    }

    /// Collects a finished comparison.
    pub fn poll(&mut self) {
        let Some(outcome) = self.job.take_outcome() else { return };
        match outcome {
            Ok(c) => {
                self.error = None;
                self.selected = c
                    .comparison
                    .entries
                    .iter()
                    .position(|e| e.verdict != Verdict::Same)
                    .or((!c.comparison.entries.is_empty()).then_some(0));
                self.result = Some(c);
                self.tree_a.reset();
                self.tree_b.reset();
            }
            Err(e) => {
                self.result = None;
                self.error = Some(e);
            }
        }
    }

    /// Draws the window (when open).
    pub fn window(&mut self, ctx: &egui::Context, has_session_capture: bool) -> Option<DiffAction> {
        let mut action = None;
        let mut open = self.open;
        egui::Window::new("Compare sessions")
            .open(&mut open)
            .default_size([1100.0, 640.0])
            .resizable(true)
            .show(ctx, |ui| action = self.ui(ui, has_session_capture));
        self.open = open;
        action
    }

    pub fn ui(&mut self, ui: &mut Ui, has_session_capture: bool) -> Option<DiffAction> {
        let mut action = None;
        egui::Grid::new("diff-sides").num_columns(4).show(ui, |ui| {
            for side in [Side::A, Side::B] {
                let (name, path, command) = match side {
                    Side::A => ("A", &self.a, self.result.as_ref().map(|r| r.a_command.as_str())),
                    Side::B => ("B", &self.b, self.result.as_ref().map(|r| r.b_command.as_str())),
                };
                ui.strong(name);
                match path {
                    Some(p) => ui.label(RichText::new(p.display().to_string()).monospace()),
                    None => ui.weak("no capture chosen"),
                };
                if ui.button(format!("Choose capture {name}…")).clicked() {
                    action = Some(DiffAction::Pick(side));
                }
                if ui
                    .add_enabled(
                        has_session_capture,
                        egui::Button::new(format!("Use this session as {name}")),
                    )
                    .clicked()
                {
                    action = Some(DiffAction::UseSession(side));
                }
                ui.end_row();
                if let Some(c) = command.filter(|c| !c.is_empty()) {
                    ui.label("");
                    ui.weak(mcpscope_core::text::shorten(c, 120));
                    ui.end_row();
                }
            }
        });
        if self.busy() {
            ui.horizontal(|ui| {
                ui.spinner();
                ui.label("comparing…");
            });
        }
        if let Some(e) = &self.error {
            crate::error_view::show(ui, e);
        }
        let Some(result) = &self.result else {
            if self.a.is_none() || self.b.is_none() {
                ui.weak("Choose two captures of the same session against two servers; ids, progress tokens, key order and timing are ignored.");
            }
            return action;
        };
        let c = &result.comparison;
        ui.horizontal(|ui| {
            ui.label(format!(
                "{} exchange(s), {} differ (ids, progress tokens, key order and timing ignored)",
                c.entries.len(),
                c.differing()
            ));
            ui.checkbox(&mut self.only_differences, "Only differences");
        });
        ui.separator();
        let shown: Vec<usize> = (0..c.entries.len())
            .filter(|&i| !self.only_differences || c.entries[i].verdict != Verdict::Same)
            .collect();
        let mut selected = self.selected;
        egui::Panel::left("diff-entries")
            .resizable(true)
            .default_size(300.0)
            .show(ui, |ui| {
                let row_h = ui.text_style_height(&egui::TextStyle::Body) + 4.0;
                egui::ScrollArea::vertical()
                    .id_salt("diff-list")
                    .auto_shrink([false, false])
                    .show_rows(ui, row_h, shown.len(), |ui, range| {
                        for &i in &shown[range] {
                            let e = &c.entries[i];
                            let (glyph, what, color) = verdict_style(&e.verdict);
                            let text = RichText::new(format!("{glyph} {} ({what})", e.key)).color(color);
                            if ui
                                .add(egui::Button::selectable(selected == Some(i), text).truncate())
                                .clicked()
                            {
                                selected = Some(i);
                            }
                        }
                    });
            });
        if selected != self.selected {
            self.selected = selected;
            self.tree_a.reset();
            self.tree_b.reset();
        }
        egui::ScrollArea::vertical().id_salt("diff-detail").show(ui, |ui| {
            let Some(e) = self.selected.and_then(|i| c.entries.get(i)) else {
                ui.weak("Select an exchange.");
                return;
            };
            ui.strong(&e.key);
            match &e.verdict {
                Verdict::Differs(lines) => {
                    for l in lines {
                        ui.label(RichText::new(format!("• {l}")).color(theme::WARN));
                    }
                }
                Verdict::Same => {
                    ui.label(RichText::new("✔ the same on both sides").color(theme::OK));
                }
                Verdict::OnlyInA => {
                    ui.label(RichText::new("only in A: B never sent this request").color(theme::WARN));
                }
                Verdict::OnlyInB => {
                    ui.label(RichText::new("only in B: A never sent this request").color(theme::WARN));
                }
            }
            ui.separator();
            let a = e.a.and_then(|i| c.a.get(i));
            let b = e.b.and_then(|i| c.b.get(i));
            let (tree_a, tree_b) = (&mut self.tree_a, &mut self.tree_b);
            ui.columns(2, |cols| {
                exchange_ui(&mut cols[0], "A", a, tree_a);
                exchange_ui(&mut cols[1], "B", b, tree_b);
            });
        });
        action
    }
}

fn verdict_style(v: &Verdict) -> (&'static str, &'static str, egui::Color32) {
    match v {
        Verdict::Same => ("✔", "same", theme::OK),
        Verdict::Differs(_) => ("‼", "differs", theme::WARN),
        Verdict::OnlyInA => ("◀", "only in A", theme::WARN),
        Verdict::OnlyInB => ("▶", "only in B", theme::WARN),
    }
}

/// What one side sent and got, as a tree.
fn exchange_view(x: &Exchange) -> Value {
    let mut v = json!({ "method": x.method });
    if let Some(p) = &x.params {
        v["params"] = p.clone();
    }
    match &x.outcome {
        Outcome::Result(r) => v["result"] = r.clone(),
        Outcome::Error(e) => v["error"] = e.to_json(),
        Outcome::MalformedError(e) => v["error"] = e.clone(),
        Outcome::NoResponse => v["response"] = json!("none"),
    }
    v
}

fn exchange_ui(ui: &mut Ui, side: &str, x: Option<&Exchange>, tree: &mut JsonTreeState) {
    ui.strong(side);
    let Some(x) = x else {
        ui.weak("(not in this session)");
        return;
    };
    match &x.outcome {
        Outcome::Error(e) => {
            ui.label(RichText::new(format!("JSON-RPC error {e}")).color(theme::ERROR));
        }
        Outcome::Result(r) if r.get("isError").and_then(Value::as_bool) == Some(true) => {
            ui.label(RichText::new("tool failure (isError: true)").color(theme::WARN));
        }
        Outcome::MalformedError(_) => {
            ui.label(RichText::new("malformed JSON-RPC error (no integer code or no message)").color(theme::ERROR));
        }
        Outcome::NoResponse => {
            ui.label(RichText::new("no response").color(theme::WARN));
        }
        Outcome::Result(_) => {}
    }
    json_tree::show(ui, &exchange_view(x), tree, side);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparing_missing_files_names_the_file() {
        let err = load_and_compare(Path::new("/nonexistent/a.jsonl"), Path::new("/nonexistent/b.jsonl"))
            .err()
            .expect("missing files fail");
        assert!(err.to_string().contains("/nonexistent/a.jsonl"), "{err:#}");
        assert!(err.chain().count() > 1, "the cause is kept: {err:#}");
    }
}
