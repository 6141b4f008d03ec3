//! Choosing files: the in-app picker (it works without a desktop portal),
//! the system dialog (on a worker; when it answers nothing the user is back
//! in the in-app picker), and what a chosen path is for.

use super::{Command, DialogPurpose, McpscopeApp};
use crate::job::Job;
use crate::panels::file_picker::{FilePicker, PickKind, PickerAction};
use mcpscope_core::timeline::model::Severity;
use std::path::PathBuf;
use std::sync::Arc;

impl McpscopeApp {
    /// Opens the in-app file picker (it works without a desktop portal); it
    /// offers the system dialog too.
    pub(crate) fn pick(&mut self, purpose: DialogPurpose) {
        let (title, kind) = match purpose {
            DialogPurpose::OpenCapture => (
                "Open capture",
                PickKind::Open {
                    extensions: vec!["jsonl"],
                },
            ),
            DialogPurpose::SaveCapture => (
                "Save capture",
                PickKind::Save {
                    default_name: "capture.jsonl".into(),
                },
            ),
            DialogPurpose::ExportHar => (
                "Export as HAR",
                PickKind::Save {
                    default_name: "capture.har".into(),
                },
            ),
            DialogPurpose::ImportConfig => (
                "Import servers from a config file",
                PickKind::Open {
                    extensions: vec!["json"],
                },
            ),
            DialogPurpose::DiffSide(_) => (
                "Choose a capture to compare",
                PickKind::Open {
                    extensions: vec!["jsonl"],
                },
            ),
            DialogPurpose::WorkingDirectory => ("Working directory", PickKind::Folder),
            DialogPurpose::CollectionsFolder => ("A folder of test files", PickKind::Folder),
            DialogPurpose::SaveToCollection => (
                "Save to a test file (an existing one, or a new name)",
                PickKind::Save {
                    default_name: "calls.mcp.yaml".into(),
                },
            ),
            DialogPurpose::ChatRecording => (
                "Replay the chat recorded in a capture",
                PickKind::Open {
                    extensions: vec!["jsonl"],
                },
            ),
        };
        let start = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        self.picker = Some((purpose, FilePicker::new(title, kind, start, &self.ctx)));
    }

    /// The desktop's own dialog, on a worker thread: it blocks until the user answers.
    pub(crate) fn system_dialog(&mut self, purpose: DialogPurpose) {
        if self.dialog.is_some() {
            return;
        }
        let job = Job::spawn("dialog", Some(Arc::clone(&self.waker)), move || {
            let dialog = rfd::FileDialog::new();
            match purpose {
                DialogPurpose::OpenCapture => dialog.add_filter("mcpscope capture", &["jsonl"]).pick_file(),
                DialogPurpose::SaveCapture => dialog
                    .add_filter("mcpscope capture", &["jsonl"])
                    .set_file_name("capture.jsonl")
                    .save_file(),
                DialogPurpose::ExportHar => dialog
                    .add_filter("HAR", &["har"])
                    .set_file_name("capture.har")
                    .save_file(),
                DialogPurpose::ImportConfig => dialog.add_filter("MCP config", &["json"]).pick_file(),
                DialogPurpose::DiffSide(_) | DialogPurpose::ChatRecording => {
                    dialog.add_filter("mcpscope capture", &["jsonl"]).pick_file()
                }
                DialogPurpose::WorkingDirectory | DialogPurpose::CollectionsFolder => dialog.pick_folder(),
                DialogPurpose::SaveToCollection => dialog
                    .add_filter("mcpscope test file", &["yaml", "yml"])
                    .set_file_name("calls.mcp.yaml")
                    .save_file(),
            }
        });
        self.dialog = Some((purpose, job));
    }

    pub(crate) fn poll_dialog(&mut self) {
        let Some((purpose, job)) = &mut self.dialog else { return };
        let Some(answer) = job.poll() else { return };
        let purpose = *purpose;
        self.dialog = None;
        let answer = match answer {
            Ok(a) => a,
            Err(e) => {
                self.message = Some((Severity::Error, format!("the system dialog: {e}")));
                None
            }
        };
        match answer {
            Some(path) => self.picked(purpose, path),
            // rfd answers nothing both when the user cancels and when no
            // dialog could be shown: say both.
            None => {
                self.message = Some((
                    Severity::Warning,
                    "the system dialog returned no file (cancelled, or no xdg-desktop-portal is running): back to \
                     mcpscope's own picker"
                        .into(),
                ));
                if let Some(p) = self.picker_behind_dialog.take() {
                    self.picker = Some((purpose, p));
                }
                return;
            }
        }
        self.picker_behind_dialog = None;
    }

    pub(crate) fn picked(&mut self, purpose: DialogPurpose, path: PathBuf) {
        match purpose {
            DialogPurpose::OpenCapture => self.apply(Command::OpenCapture(path)),
            DialogPurpose::SaveCapture => self.apply(Command::SaveCapture(path)),
            DialogPurpose::ExportHar => self.apply(Command::ExportHar(path)),
            DialogPurpose::ImportConfig => self.apply(Command::ImportConfig(path)),
            DialogPurpose::WorkingDirectory => self.launcher.form.cwd = path.display().to_string(),
            DialogPurpose::DiffSide(side) => self.diff.set(side, path, &self.waker),
            DialogPurpose::ChatRecording => self.session_mut().composer.chat.load_recording(path),
            DialogPurpose::CollectionsFolder => self.collections.set_folder(path, &self.waker),
            DialogPurpose::SaveToCollection => self.apply(Command::SaveStep(path)),
        }
    }

    /// The in-app picker, while one is open.
    pub(crate) fn picker_ui(&mut self, ctx: &egui::Context) {
        let Some((purpose, picker)) = &mut self.picker else {
            return;
        };
        let purpose = *purpose;
        match picker.window(ctx) {
            None => {}
            Some(PickerAction::Cancelled) => self.picker = None,
            Some(PickerAction::Chosen(path)) => {
                self.picker = None;
                self.picked(purpose, path);
            }
            Some(PickerAction::SystemDialog) => {
                // Kept aside: when no desktop dialog answers, the user is back in it.
                self.picker_behind_dialog = self.picker.take().map(|(_, p)| p);
                self.system_dialog(purpose);
            }
        }
    }
}
