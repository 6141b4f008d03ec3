//! The Collections window's list: one row per line (a file's head, its
//! mistakes or steps, what failed with what it saw, contracts, evals,
//! notes), laid out as indices so only the rows on screen are drawn.

use super::{CollectionsAction, CollectionsView, Listed};
use crate::theme;
use egui::{Color32, RichText, Ui};
use mcpscope_core::collection::report::{Check, StepResult, Verdict};

impl CollectionsView {
    /// What the list shows, a line each: per file its head, then (unless
    /// folded) its mistakes or its steps, then what failed with what it saw.
    pub(super) fn rows(&self) -> Vec<Row> {
        let mut rows = Vec::new();
        for (n, f) in self.files.iter().enumerate() {
            rows.push(Row::Head(n));
            if self.folded.contains(&n) {
                continue;
            }
            let outline = match &f.read {
                Ok(o) => o,
                Err(mistakes) => {
                    rows.extend((0..mistakes.len()).map(|i| Row::Mistake(n, i)));
                    continue;
                }
            };
            rows.extend((0..outline.steps.len()).map(|i| Row::Step(n, i)));
            for (i, (_, line)) in outline.steps.iter().enumerate() {
                let Some(r) = f.step(i, *line) else { continue };
                if matches!(r.verdict, Verdict::Passed | Verdict::Skipped) {
                    continue;
                }
                rows.push(Row::Failed(n, i));
                if r.error.is_some() {
                    rows.push(Row::StepError(n, i));
                }
                for (c, check) in r.checks.iter().enumerate().filter(|(_, c)| !c.passed) {
                    rows.push(Row::Check(n, Some(i), c));
                    rows.extend((0..check.saw.len()).map(|k| Row::Saw(n, Some(i), c, k)));
                }
            }
            for (c, check) in f.contracts().iter().enumerate().filter(|(_, c)| !c.passed) {
                rows.push(Row::Check(n, None, c));
                rows.extend((0..check.saw.len()).map(|k| Row::Saw(n, None, c, k)));
            }
            for (e, eval) in f.evals().iter().enumerate() {
                rows.push(Row::Eval(n, e));
                let why = eval.failures.len() + usize::from(eval.error.is_some());
                rows.extend((0..why).map(|k| Row::EvalWhy(n, e, k)));
            }
            if let Some(r) = &f.last {
                let said = r.problems.len() + usize::from(r.error.is_some()) + r.notes.len();
                rows.extend((0..said).map(|k| Row::Said(n, k)));
            }
        }
        rows
    }

    pub(super) fn row_ui(&self, ui: &mut Ui, row: Row, idle: bool) -> Option<Clicked> {
        let mut clicked = None;
        let mono = |t: String| RichText::new(t).monospace();
        // A line is one row: what does not fit is cut, and shown whole on hover.
        let line = |ui: &mut Ui, text: RichText| {
            ui.add(egui::Label::new(text).truncate());
        };
        match row {
            Row::Head(n) => {
                let f = &self.files[n];
                ui.horizontal(|ui| {
                    let fold = if self.folded.contains(&n) { "Show" } else { "Hide" };
                    if ui.small_button(fold).on_hover_text("Show or hide its steps").clicked() {
                        clicked = Some(Clicked::Fold(n));
                    }
                    if ui
                        .add_enabled(idle && f.read.is_ok(), egui::Button::new("Run").small())
                        .clicked()
                    {
                        clicked = Some(Clicked::Run(n));
                    }
                    let (title, color) = head(ui, f);
                    ui.label(RichText::new(title).strong().color(color));
                    ui.weak(summary(f));
                });
            }
            Row::Mistake(n, i) => {
                if let Err(m) = &self.files[n].read {
                    line(ui, mono(format!("    {}", m[i])).color(theme::ERROR));
                }
            }
            Row::Step(n, i) => {
                let f = &self.files[n];
                let Ok(outline) = &f.read else { return None };
                let (name, at) = &outline.steps[i];
                let r = f.step(i, *at);
                let (mark, color) = verdict_mark(r.map(|r| r.verdict));
                let capture = f.last.as_ref().and_then(|r| r.capture.clone());
                let seq = r.and_then(|r| r.response_seq.or(r.request_seq));
                ui.horizontal(|ui| {
                    ui.add_space(16.0);
                    ui.label(RichText::new(mark).color(color));
                    let text = RichText::new(format!("{name}  (line {at})"));
                    match (capture, seq) {
                        (Some(capture), Some(seq)) if f.running.is_none() => {
                            if ui
                                .link(text)
                                .on_hover_text("Open this run's capture at the step's frame")
                                .clicked()
                            {
                                clicked = Some(Clicked::Action(CollectionsAction::ShowFrame { capture, seq }));
                            }
                        }
                        _ => {
                            ui.label(text);
                        }
                    }
                    if let Some(r) = r {
                        let latency = r
                            .latency
                            .map(|l| format!(" {:.1} ms", l.as_secs_f64() * 1e3))
                            .unwrap_or_default();
                        ui.weak(format!("{}{latency}", r.method));
                    }
                });
            }
            Row::Failed(n, i) => {
                if let (Some(r), Ok(o)) = (self.step_of(n, i), &self.files[n].read) {
                    let (mark, color) = verdict_mark(Some(r.verdict));
                    line(ui, RichText::new(format!("    {mark} {}", o.steps[i].0)).color(color));
                }
            }
            Row::StepError(n, i) => {
                if let Some(e) = self.step_of(n, i).and_then(|r| r.error.as_ref()) {
                    line(ui, mono(format!("          {e}")));
                }
            }
            Row::Check(n, step, c) => {
                if let Some(check) = self.check_of(n, step, c) {
                    let what = if step.is_none() { "contract " } else { "" };
                    line(
                        ui,
                        mono(format!("        ✖ {what}{} (line {})", check.what, check.at.line)).color(theme::ERROR),
                    );
                }
            }
            Row::Saw(n, step, c, k) => {
                if let Some(saw) = self.check_of(n, step, c).and_then(|c| c.saw.get(k)) {
                    line(ui, mono(format!("            saw: {saw}")));
                }
            }
            Row::Eval(n, e) => {
                if let Some(e) = self.files[n].evals().get(e) {
                    let (mark, color) = verdict_mark(Some(e.verdict));
                    let text = mcpscope_core::collection::output::eval_summary(e);
                    line(ui, RichText::new(format!("    {mark} {text}")).color(color));
                }
            }
            Row::EvalWhy(n, e, k) => {
                if let Some(why) = self.files[n]
                    .evals()
                    .get(e)
                    .and_then(|e| e.failures.iter().chain(&e.error).nth(k))
                {
                    line(ui, mono(format!("            {why}")));
                }
            }
            Row::Said(n, k) => {
                if let Some(r) = &self.files[n].last {
                    let problems = r.problems.iter().chain(&r.error).count();
                    match r.problems.iter().chain(&r.error).nth(k) {
                        Some(p) => line(ui, RichText::new(format!("    {p}")).color(theme::ERROR)),
                        None => {
                            if let Some(note) = r.notes.get(k - problems) {
                                line(ui, RichText::new(format!("    {note}")).weak());
                            }
                        }
                    }
                }
            }
        }
        clicked
    }

    fn step_of(&self, n: usize, i: usize) -> Option<&StepResult> {
        let f = &self.files[n];
        f.step(i, f.read.as_ref().ok()?.steps.get(i)?.1)
    }

    fn check_of(&self, n: usize, step: Option<usize>, c: usize) -> Option<&Check> {
        match step {
            Some(i) => self.step_of(n, i)?.checks.get(c),
            None => self.files[n].contracts().get(c),
        }
    }
}

fn verdict_mark(v: Option<Verdict>) -> (&'static str, Color32) {
    match v {
        None => ("·", Color32::GRAY),
        Some(Verdict::Passed) => ("✔", theme::OK),
        Some(Verdict::Failed) => ("✖", theme::ERROR),
        Some(Verdict::Error) => ("‼", theme::ERROR),
        Some(Verdict::Skipped) => ("–", Color32::GRAY),
    }
}

/// A row of the list (indices into the files and their reports).
#[derive(Clone, Copy, Debug)]
pub(super) enum Row {
    Head(usize),
    Mistake(usize, usize),
    Step(usize, usize),
    /// A step that did not pass.
    Failed(usize, usize),
    StepError(usize, usize),
    /// A failed check: of step i, or of the contracts (None).
    Check(usize, Option<usize>, usize),
    Saw(usize, Option<usize>, usize, usize),
    Eval(usize, usize),
    EvalWhy(usize, usize, usize),
    /// The run's problems, then its notes.
    Said(usize, usize),
}

pub(super) enum Clicked {
    Run(usize),
    Fold(usize),
    Action(CollectionsAction),
}

/// A file's title and its colour: red with mistakes or a failed run.
fn head(ui: &Ui, f: &Listed) -> (String, Color32) {
    let file_name = f
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let title = match &f.read {
        Ok(o) => o
            .name
            .as_ref()
            .map_or_else(|| file_name.clone(), |t| format!("{file_name} ({t})")),
        Err(_) => format!("{file_name} (has mistakes)"),
    };
    let color = match &f.last {
        _ if f.read.is_err() => theme::ERROR,
        Some(r) if !r.passed() => theme::ERROR,
        Some(_) => theme::OK,
        None => ui.visuals().text_color(),
    };
    (title, color)
}

fn summary(f: &Listed) -> String {
    match (&f.running, &f.last) {
        (Some(p), _) => format!("running… {} step(s) done", p.steps.len()),
        (None, Some(r)) => {
            let c = r.counts();
            format!(
                "{} passed, {} failed, {} errors, {:.2} s",
                c.passed,
                c.failed,
                c.errors,
                r.duration.as_secs_f64()
            )
        }
        (None, None) => "not run yet".into(),
    }
}
