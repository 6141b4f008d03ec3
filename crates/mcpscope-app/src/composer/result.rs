//! The answer area: the last request sent and how it ended — the answer
//! (shown by type), progress, a conversation's later rounds, a task's
//! status, or why no answer came (cancelled, timed out, server gone).

use super::ComposerAction;
use crate::inspection::Inspection;
use crate::panels::result_view::ResultView;
use crate::theme;
use egui::{RichText, Ui};
use mcpscope_core::driver::Failure;
use mcpscope_core::protocol::tasks::Status;
use mcpscope_core::timeline::model::Progress;
use mcpscope_core::wire::message::RequestId;
use serde_json::Value;

/// The last request sent, whose answer the result view shows.
#[derive(Clone, Debug)]
pub struct Pending {
    pub id: RequestId,
    pub method: String,
    /// The tool's outputSchema, to check structuredContent against.
    pub output_schema: Option<Value>,
    /// `params._meta.progressToken`, to show `notifications/progress` for it.
    pub progress_token: Option<Value>,
    /// It is a tool run as a task (the driver polls it).
    pub task: bool,
    /// The composer's mode, and the tool chosen, when it was sent: the
    /// answer shows only while they are on screen again.
    pub mode: super::Mode,
    pub tool: Option<String>,
}

#[derive(Default)]
pub struct ResultArea {
    pub pending: Option<Pending>,
    pub view: ResultView,
}

impl ResultArea {
    pub fn set(&mut self, pending: Pending) {
        self.pending = Some(pending);
        self.view.reset();
    }

    /// The answer to the last request, while the mode (and tool) it was
    /// sent from are the ones on screen: another tool's form never shows
    /// this one's answer.
    pub fn ui(
        &mut self,
        ui: &mut Ui,
        i: &Inspection,
        live: bool,
        shown: (super::Mode, Option<&str>),
        actions: &mut Vec<ComposerAction>,
    ) {
        let Some(p) = self
            .pending
            .clone()
            .filter(|p| p.mode == shown.0 && (p.tool.is_none() || p.tool.as_deref() == shown.1))
        else {
            ui.weak("The answer to what you send shows here.");
            return;
        };
        let model = &i.model;
        let progress = p.progress_token.as_ref().and_then(|t| model.progress_for(t));
        if p.task && self.task_ui(ui, i, &p, live, actions) {
            return;
        }
        // A multi round-trip request (or a -32022 retry) is answered by its latest send.
        let head = i.current_id(&p.id);
        if head != p.id {
            match model.conversations.get(&head).copied() {
                Some(no) => ui.label(
                    RichText::new(format!(
                        "conversation {no}: {} #{} needed input; now waiting on #{head}",
                        p.method, p.id
                    ))
                    .color(theme::WARN),
                ),
                None => ui.label(
                    RichText::new(format!("{} #{} was sent again as #{head}", p.method, p.id)).color(theme::WARN),
                ),
            };
        }
        match (model.response_to(&head), i.failure(&p.id)) {
            (None, Some(Failure::Cancelled)) => {
                ui.label(
                    RichText::new(format!(
                        "{} #{} cancelled: notifications/cancelled sent, the server should not answer",
                        p.method, p.id
                    ))
                    .color(theme::WARN),
                );
            }
            (None, Some(f)) => {
                ui.label(RichText::new(format!("{} #{} {}", p.method, p.id, failure_text(f))).color(theme::ERROR));
            }
            (None, None) => {
                ui.horizontal(|ui| {
                    ui.spinner();
                    ui.label(format!("waiting for the answer to {} #{}", p.method, p.id));
                    if live && ui.button("Cancel").clicked() {
                        actions.push(ComposerAction::Cancel(p.id.clone()));
                    }
                });
                if let Some(pr) = progress {
                    progress_ui(ui, pr);
                }
            }
            (Some(row), failure) => {
                if matches!(failure, Some(Failure::Cancelled)) {
                    ui.label(RichText::new("answered although it was cancelled").color(theme::WARN));
                }
                if let Some(pr) = progress {
                    progress_ui(ui, pr);
                }
                self.view.ui(ui, model, row, &p.method, p.output_schema.as_ref())
            }
        }
    }

    /// A tool run as a task: status, transitions, cancel, and the result once
    /// fetched. False while the server has not said whether it made a task.
    fn task_ui(
        &mut self,
        ui: &mut Ui,
        i: &Inspection,
        p: &Pending,
        live: bool,
        actions: &mut Vec<ComposerAction>,
    ) -> bool {
        let Some(run) = i.task(&p.id) else { return false };
        let (Some(flavor), Some(task)) = (run.flavor, &run.task) else {
            // No task (yet): the call's own answer shows as usual.
            return false;
        };
        ui.label(
            RichText::new(format!(
                "Task {} ({}): {}",
                task.task_id,
                flavor.label(),
                task.status_line()
            ))
            .strong(),
        );
        let transitions: Vec<String> = run.transitions.iter().map(|t| t.status_line()).collect();
        ui.weak(format!("status: {}", transitions.join(" ▶ ")));
        if !task.status.is_terminal() && task.status != Status::InputRequired {
            ui.horizontal(|ui| {
                ui.spinner();
                ui.label("polling tasks/get");
                if live && !run.cancelled && ui.button("Cancel task").clicked() {
                    actions.push(ComposerAction::CancelTask(p.id.clone()));
                }
            });
        }
        if let Some(f) = i.failure(&p.id) {
            ui.label(RichText::new(format!("the task {}", failure_text(f))).color(theme::ERROR));
            return true;
        }
        if i.is_pending(&p.id) {
            return true;
        }
        // Done: the last answer of the run holds the result (tasks/result,
        // or the tasks/get that inlined it).
        match i.model.response_to(&i.current_id(&p.id)) {
            Some(row) => self.view.ui(ui, &i.model, row, &p.method, p.output_schema.as_ref()),
            None if task.status.is_terminal() => {
                ui.label(format!("the task ended {}", task.status));
            }
            None => {}
        }
        true
    }
}

/// Why a request got no answer, for a person.
fn failure_text(f: &Failure) -> String {
    match f {
        Failure::ServerGone(why) => format!("got no answer: {why} before answering"),
        other => other.to_string(),
    }
}

pub fn progress_ui(ui: &mut Ui, p: &Progress) {
    let text = match (p.total, &p.message) {
        (Some(t), Some(m)) => format!("{} / {t} · {m}", p.progress),
        (Some(t), None) => format!("{} / {t}", p.progress),
        (None, Some(m)) => format!("{} · {m}", p.progress),
        (None, None) => format!("{} (no total)", p.progress),
    };
    let fraction = p.total.filter(|t| *t > 0.0).map_or(0.0, |t| (p.progress / t) as f32);
    let bar = egui::ProgressBar::new(fraction.clamp(0.0, 1.0)).text(format!("progress {text}"));
    ui.add(if p.total.is_some() { bar } else { bar.animate(true) });
}
