//! An in-app file picker: works where no desktop portal runs (minimal
//! desktops, Xvfb, containers), where the system dialog returns nothing. A
//! path can also be typed or pasted. Directories are listed on a worker.

use crate::job::Job;
use egui::Ui;
use std::path::{Path, PathBuf};

/// What is being picked.
#[derive(Clone, Debug, PartialEq)]
pub enum PickKind {
    /// An existing file; names ending in one of these are listed first.
    Open {
        extensions: Vec<&'static str>,
    },
    /// A file to write (it may not exist yet).
    Save {
        default_name: String,
    },
    Folder,
}

/// One entry of a directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub is_dir: bool,
}

/// What the user did with the picker.
#[derive(Clone, Debug, PartialEq)]
pub enum PickerAction {
    Chosen(PathBuf),
    Cancelled,
    /// Try the desktop's own dialog instead.
    SystemDialog,
}

struct Listing {
    dir: PathBuf,
    job: Job<anyhow::Result<Vec<Entry>>>,
}

pub struct FilePicker {
    pub title: String,
    pub kind: PickKind,
    pub dir: PathBuf,
    pub entries: Vec<Entry>,
    listing: Option<Listing>,
    pub error: Option<anyhow::Error>,
    /// The typed path or file name.
    pub name: String,
    pub show_hidden: bool,
    /// Opening: list only names with the wanted extensions.
    pub only_wanted: bool,
}

/// Lists a directory: folders first, then files, each by name.
pub fn list_dir(dir: &Path) -> anyhow::Result<Vec<Entry>> {
    use anyhow::Context as _;
    let mut out = Vec::new();
    let rd = std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?;
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let is_dir = std::fs::metadata(e.path()).map(|m| m.is_dir()).unwrap_or(false);
        out.push(Entry { name, is_dir });
    }
    out.sort_by(|a, b| {
        b.is_dir
            .cmp(&a.is_dir)
            .then_with(|| a.name.to_lowercase().cmp(&b.name.to_lowercase()))
    });
    Ok(out)
}

impl FilePicker {
    pub fn new(title: impl Into<String>, kind: PickKind, start: PathBuf, ctx: &egui::Context) -> Self {
        let name = match &kind {
            PickKind::Save { default_name } => default_name.clone(),
            _ => String::new(),
        };
        let mut p = Self {
            title: title.into(),
            kind,
            dir: start.clone(),
            entries: Vec::new(),
            listing: None,
            error: None,
            name,
            show_hidden: false,
            only_wanted: false,
        };
        p.go(start, ctx);
        p
    }

    /// Lists `dir` on a worker; the list shows once it is read.
    pub fn go(&mut self, dir: PathBuf, ctx: &egui::Context) {
        let (d, ctx) = (dir.clone(), ctx.clone());
        let wake: crate::job::Wake = std::sync::Arc::new(move || ctx.request_repaint());
        let job = Job::spawn("list-dir", Some(wake), move || list_dir(&d));
        self.listing = Some(Listing { dir, job });
    }

    fn poll(&mut self) {
        let Some(l) = &mut self.listing else { return };
        let Some(result) = l.job.poll() else { return };
        let dir = l.dir.clone();
        self.listing = None;
        match result.unwrap_or_else(|dead| Err(dead.into())) {
            Ok(entries) => {
                self.dir = dir;
                self.entries = entries;
                self.error = None;
            }
            Err(e) => self.error = Some(e),
        }
    }

    /// Whether a file's name ends in an extension this pick looks for.
    fn has_wanted_extension(&self, e: &Entry) -> bool {
        match &self.kind {
            PickKind::Open { extensions } => extensions
                .iter()
                .any(|x| e.name.to_lowercase().ends_with(&format!(".{x}"))),
            _ => false,
        }
    }

    fn wanted(&self, e: &Entry) -> bool {
        (self.show_hidden || !e.name.starts_with('.'))
            && match &self.kind {
                PickKind::Folder => e.is_dir,
                PickKind::Open { .. } if self.only_wanted => e.is_dir || self.has_wanted_extension(e),
                _ => true,
            }
    }

    /// The entries listed: folders, then (when opening) the files with the
    /// wanted extensions, then the rest, each by name.
    pub fn shown(&self) -> Vec<Entry> {
        let mut v: Vec<Entry> = self.entries.iter().filter(|e| self.wanted(e)).cloned().collect();
        // Stable: the listing's order by name is kept within each group.
        v.sort_by_key(|e| (!e.is_dir, !self.has_wanted_extension(e)));
        v
    }

    /// The path the typed name means (absolute, or relative to the directory shown).
    pub fn typed_path(&self) -> Option<PathBuf> {
        let t = self.name.trim();
        if t.is_empty() {
            return None;
        }
        let p = PathBuf::from(shellish_home(t));
        Some(if p.is_absolute() { p } else { self.dir.join(p) })
    }

    /// Draws the picker window; returns what the user did.
    pub fn window(&mut self, ctx: &egui::Context) -> Option<PickerAction> {
        self.poll();
        let mut action = None;
        let mut open = true;
        egui::Window::new(self.title.clone())
            .open(&mut open)
            .collapsible(false)
            .default_size([560.0, 420.0])
            .show(ctx, |ui| action = self.ui(ui));
        if !open {
            action = Some(PickerAction::Cancelled);
        }
        action
    }

    fn ui(&mut self, ui: &mut Ui) -> Option<PickerAction> {
        let ctx = ui.ctx().clone();
        let mut action = None;
        let mut entered = false;
        ui.horizontal(|ui| {
            if ui.button("⬆ Up").clicked()
                && let Some(parent) = self.dir.parent()
            {
                self.go(parent.to_owned(), &ctx);
            }
            if ui.button("Home").clicked()
                && let Some(home) = std::env::var_os("HOME")
            {
                self.go(PathBuf::from(home), &ctx);
            }
            ui.monospace(self.dir.display().to_string());
            if self.listing.is_some() {
                ui.spinner();
            }
        });
        ui.horizontal(|ui| {
            ui.checkbox(&mut self.show_hidden, "show hidden files");
            if let PickKind::Open { extensions } = &self.kind
                && !extensions.is_empty()
            {
                let only = extensions.iter().map(|x| format!(".{x}")).collect::<Vec<_>>().join(" ");
                ui.checkbox(&mut self.only_wanted, format!("only {only} files"));
            }
        });
        if let Some(e) = &self.error {
            crate::error_view::show(ui, e);
        }
        let shown = self.shown();
        let row_h = ui.spacing().interact_size.y;
        egui::ScrollArea::vertical()
            .id_salt("file-picker-list")
            .max_height(260.0)
            .auto_shrink([false, false])
            .show_rows(ui, row_h, shown.len(), |ui, range| {
                for e in &shown[range] {
                    let text = if e.is_dir {
                        format!("📁 {}", e.name)
                    } else {
                        e.name.clone()
                    };
                    let r = ui.selectable_label(self.name == e.name, text);
                    if r.double_clicked() && e.is_dir {
                        self.go(self.dir.join(&e.name), &ctx);
                    } else if r.clicked() {
                        if e.is_dir && self.kind != PickKind::Folder {
                            self.go(self.dir.join(&e.name), &ctx);
                        } else {
                            self.name = e.name.clone();
                        }
                    }
                }
            });
        ui.horizontal(|ui| {
            let l = ui.label(match self.kind {
                PickKind::Folder => "folder",
                PickKind::Save { .. } => "file name",
                PickKind::Open { .. } => "file",
            });
            let field = ui
                .add(
                    egui::TextEdit::singleline(&mut self.name)
                        .hint_text("a name here, or a whole path")
                        .desired_width(360.0),
                )
                .labelled_by(l.id);
            // Enter in the name takes it, as the button does.
            if field.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter)) {
                entered = true;
            }
        });
        ui.horizontal(|ui| {
            let target = match self.kind {
                PickKind::Folder => self.typed_path().or_else(|| Some(self.dir.clone())),
                _ => self.typed_path(),
            };
            let label = match self.kind {
                PickKind::Save { .. } => "Save",
                PickKind::Open { .. } => "Open",
                PickKind::Folder => "Choose folder",
            };
            if (ui.add_enabled(target.is_some(), egui::Button::new(label)).clicked() || entered)
                && let Some(t) = target
            {
                action = Some(PickerAction::Chosen(t));
            }
            if ui.button("Cancel").clicked() {
                action = Some(PickerAction::Cancelled);
            }
            if ui
                .button("System dialog…")
                .on_hover_text("The desktop's own file dialog (needs an xdg-desktop-portal)")
                .clicked()
            {
                action = Some(PickerAction::SystemDialog);
            }
        });
        action
    }
}

/// `~/x` → `$HOME/x`, as people type paths.
fn shellish_home(t: &str) -> String {
    match (t.strip_prefix("~/"), std::env::var("HOME")) {
        (Some(rest), Ok(home)) => format!("{home}/{rest}"),
        _ => t.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_list_folders_first_by_name() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("zdir")).unwrap();
        std::fs::write(d.path().join("b.jsonl"), "").unwrap();
        std::fs::write(d.path().join("A.json"), "").unwrap();
        let names: Vec<String> = list_dir(d.path()).unwrap().into_iter().map(|e| e.name).collect();
        assert_eq!(names, ["zdir", "A.json", "b.jsonl"]);
        let e = list_dir(&d.path().join("missing")).unwrap_err();
        assert!(e.to_string().contains("cannot list") && e.chain().count() == 2, "{e:#}");
    }

    /// #25 item 10: captures are listed before other files (folders first),
    /// can be shown alone, and Enter in the name field opens it.
    #[test]
    fn captures_come_first_and_enter_takes_the_name() {
        use egui_kittest::Harness;
        use egui_kittest::kittest::Queryable as _;
        let d = tempfile::tempdir().unwrap();
        for n in ["a.png", "b.png", "z.jsonl", "m.JSONL", "c.txt"] {
            std::fs::write(d.path().join(n), "").unwrap();
        }
        std::fs::create_dir(d.path().join("sub")).unwrap();
        let dir = d.path().to_owned();
        let mut h = Harness::builder().with_size([700.0, 600.0]).build_ui_state(
            move |ui, state: &mut (Option<FilePicker>, Option<PickerAction>)| {
                let picker = state.0.get_or_insert_with(|| {
                    let kind = PickKind::Open {
                        extensions: vec!["jsonl"],
                    };
                    FilePicker::new("Open capture", kind, dir.clone(), ui.ctx())
                });
                if let Some(a) = picker.window(ui.ctx()) {
                    state.1 = Some(a);
                }
            },
            (None, None),
        );
        for _ in 0..20 {
            h.run_steps(1);
            std::thread::sleep(std::time::Duration::from_millis(10));
            if h.state().0.as_ref().is_some_and(|p| !p.entries.is_empty()) {
                break;
            }
        }
        let names = |h: &Harness<'_, (Option<FilePicker>, Option<PickerAction>)>| -> Vec<String> {
            h.state()
                .0
                .as_ref()
                .unwrap()
                .shown()
                .into_iter()
                .map(|e| e.name)
                .collect()
        };
        assert_eq!(names(&h), ["sub", "m.JSONL", "z.jsonl", "a.png", "b.png", "c.txt"]);
        h.get_by_label("only .jsonl files").click();
        h.run_steps(2);
        assert_eq!(names(&h), ["sub", "m.JSONL", "z.jsonl"]);
        h.get_by_role_and_label(egui::accesskit::Role::TextInput, "file")
            .focus();
        h.run_steps(1);
        h.get_by_role_and_label(egui::accesskit::Role::TextInput, "file")
            .type_text("z.jsonl");
        h.run_steps(1);
        h.key_press(egui::Key::Enter);
        h.run_steps(2);
        assert_eq!(h.state().1, Some(PickerAction::Chosen(d.path().join("z.jsonl"))));
    }
}
