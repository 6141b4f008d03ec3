//! Skills mode (SEP-2640, Skills over MCP): the skills `skills/list`
//! announced, a skill's frontmatter and its files as a tree, each file read
//! only when the user asks (never prefetched) and checked against the
//! listing by core's [`SkillLoad`]: `SKILL.md` first, size and digest,
//! frontmatter; a failed check is shown as an error and stops the skill.

use super::ComposerAction;
use super::lists::Lists;
use crate::inspection::{Inspection, Outgoing};
use crate::theme;
use egui::{RichText, Ui};
use mcpscope_core::protocol::methods;
use mcpscope_core::protocol::skills::{FileState, SkillEntry, SkillLoad};
use mcpscope_core::wire::message::RequestId;
use serde_json::{Value, json};

#[derive(Default)]
pub struct SkillsMode {
    /// The skill being looked at, and what of it was read.
    pub load: Option<SkillLoad>,
    /// The file whose content is shown.
    pub viewing: Option<String>,
    /// The file just asked for, until the app says which id it went out under.
    last_ask: Option<String>,
    /// Reads in flight: request id and file URI.
    pending: Vec<(RequestId, String)>,
    /// Whether skills/list was asked for once on entering the mode.
    listed_once: bool,
}

impl SkillsMode {
    /// Chooses a skill (a fresh load: nothing of it read yet).
    pub fn choose(&mut self, entry: &SkillEntry) {
        self.load = Some(SkillLoad::new(entry.clone()));
        self.viewing = None;
        self.pending.clear();
        self.last_ask = None;
    }

    /// The listing changed: a skill whose entry changed starts over (its
    /// reads were checked against the old entry); one that is gone is dropped.
    pub fn lists_replaced(&mut self, lists: &Lists) {
        let Some(load) = &self.load else { return };
        match lists.skills.iter().find(|e| e.uri == load.entry().uri) {
            Some(e) if e == load.entry() => {}
            Some(e) => self.choose(&e.clone()),
            None => {
                *self = SkillsMode {
                    listed_once: self.listed_once,
                    ..SkillsMode::default()
                }
            }
        }
    }

    /// The last asked read went out under `id`.
    pub fn sent(&mut self, id: RequestId) {
        if let Some(uri) = self.last_ask.take() {
            self.pending.push((id, uri));
        }
    }

    /// The last asked read could not be sent: it ends as a failed read (the
    /// user may try again).
    pub fn not_sent(&mut self, why: &str) {
        if let (Some(uri), Some(load)) = (self.last_ask.take(), &mut self.load) {
            load.finish_read(&uri, Err(format!("resources/read {uri} was not sent: {why}")));
        }
    }

    /// Takes the answers that arrived (or the reason none will).
    pub fn poll(&mut self, i: &Inspection) {
        let Some(load) = &mut self.load else { return };
        let model = &i.model;
        self.pending.retain(|(id, uri)| {
            let answer = if let Some(row) = model.response_to(&i.current_id(id)) {
                let frame: Value = model
                    .store
                    .get(row)
                    .and_then(|r| serde_json::from_slice(r.raw()).ok())
                    .unwrap_or(Value::Null);
                match (frame.get("result"), frame.get("error")) {
                    (Some(result), _) => {
                        load.finish_read(uri, Ok(result));
                        return false;
                    }
                    (None, Some(e)) => format!("resources/read {uri} failed with JSON-RPC error {e}"),
                    (None, None) => format!("resources/read {uri}: the answer has neither result nor error"),
                }
            } else if let Some(failure) = i.failure(id) {
                format!("resources/read {uri} {failure}")
            } else {
                return true;
            };
            load.finish_read(uri, Err(answer));
            false
        });
    }

    pub fn ui(&mut self, ui: &mut Ui, lists: &Lists, advertised: bool, live: bool, actions: &mut Vec<ComposerAction>) {
        // Listing reads no skill file, so it is asked for on entering the mode.
        if live && advertised && !self.listed_once && !lists.skills_listed() {
            self.listed_once = true;
            actions.push(ComposerAction::Send(Outgoing::Request {
                method: mcpscope_core::protocol::skills::SKILLS_LIST.into(),
                params: None,
                id: None,
            }));
        }
        for p in &lists.skill_problems {
            ui.label(RichText::new(format!("skills/list: {p}")).color(theme::WARN));
        }
        if lists.skills.is_empty() {
            ui.weak("No skills listed yet: fetch skills/list.");
            return;
        }
        self.picker_ui(ui, lists);
        let Some(load) = &self.load else { return };
        ui.separator();
        let entry = load.entry();
        ui.horizontal(|ui| {
            ui.strong(entry.name());
            ui.weak(&entry.uri);
        });
        if let Some(e) = load.rejected() {
            ui.label(RichText::new(format!("✖ verification failed, not using this skill: {e}")).color(theme::ERROR));
        }
        self.frontmatter_ui(ui);
        ui.label(RichText::new("Files").strong());
        ui.weak("Read on demand, SKILL.md first; each checked against the listing's size and digest.");
        let mut read = None;
        let mut view = None;
        if let Some(load) = &self.load {
            let paths: Vec<(String, usize)> = load
                .files()
                .iter()
                .enumerate()
                .map(|(n, (f, _))| (load.path_of(f).to_owned(), n))
                .collect();
            let files: Vec<(&str, usize)> = paths.iter().map(|(p, n)| (p.as_str(), *n)).collect();
            tree_ui(
                ui,
                load,
                &files,
                "",
                live,
                self.viewing.as_deref(),
                &mut read,
                &mut view,
            );
        }
        if let Some(uri) = view {
            self.viewing = Some(uri);
        }
        if let Some(uri) = read
            && let Some(load) = &mut self.load
            && let Ok(file) = load.start_read(&uri)
        {
            self.last_ask = Some(file.uri.clone());
            self.viewing = Some(file.uri.clone());
            actions.push(ComposerAction::ReadSkillFile(Outgoing::Request {
                method: methods::RESOURCES_READ.into(),
                params: Some(json!({ "uri": file.uri })),
                id: None,
            }));
        }
        self.content_ui(ui);
    }

    fn picker_ui(&mut self, ui: &mut Ui, lists: &Lists) {
        let mut chosen = None;
        let current = self.load.as_ref().map(|l| l.entry().uri.clone());
        egui::ScrollArea::vertical()
            .id_salt("composer-skill-list")
            .max_height(140.0)
            .show_rows(ui, ui.spacing().interact_size.y, lists.skills.len(), |ui, range| {
                for e in &lists.skills[range] {
                    let description = e
                        .frontmatter
                        .get("description")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    let label = format!("{}  {description}", e.name());
                    if ui
                        .selectable_label(current.as_deref() == Some(&e.uri), label)
                        .on_hover_text(&e.uri)
                        .clicked()
                    {
                        chosen = Some(e.clone());
                    }
                }
            });
        if let Some(e) = chosen
            && current.as_deref() != Some(&e.uri)
        {
            self.choose(&e);
        }
    }

    fn frontmatter_ui(&self, ui: &mut Ui) {
        let Some(load) = &self.load else { return };
        let (title, fields) = match load.frontmatter() {
            Some(found) => ("Frontmatter ✔ SKILL.md matches the listing", found),
            None => (
                "Frontmatter as listed (not yet checked against SKILL.md)",
                &load.entry().frontmatter,
            ),
        };
        egui::CollapsingHeader::new(title)
            .id_salt("composer-skill-frontmatter")
            .default_open(true)
            .show(ui, |ui| {
                egui::Grid::new("composer-skill-frontmatter-grid")
                    .num_columns(2)
                    .striped(true)
                    .show(ui, |ui| {
                        for (k, v) in fields {
                            ui.monospace(k);
                            match v {
                                Value::String(s) => ui.label(s),
                                other => ui.monospace(other.to_string()),
                            };
                            ui.end_row();
                        }
                    });
            });
    }

    fn content_ui(&self, ui: &mut Ui) {
        let (Some(load), Some(uri)) = (&self.load, &self.viewing) else {
            return;
        };
        let Some(state) = load.state(uri) else { return };
        ui.separator();
        ui.monospace(uri);
        match state {
            FileState::Verified(bytes) => match std::str::from_utf8(bytes) {
                Ok(text) => {
                    egui::ScrollArea::vertical()
                        .id_salt("composer-skill-content")
                        .max_height(260.0)
                        .show(ui, |ui| {
                            ui.add(egui::Label::new(RichText::new(text).monospace()).wrap());
                        });
                }
                Err(_) => {
                    ui.weak(format!("{} bytes, not UTF-8 text", bytes.len()));
                }
            },
            FileState::Reading => {
                ui.horizontal(|ui| {
                    ui.spinner();
                    ui.weak("reading…");
                });
            }
            FileState::Rejected(e) => {
                ui.label(RichText::new(format!("✖ {e}")).color(theme::ERROR));
            }
            FileState::ReadFailed(why) => {
                ui.label(RichText::new(why).color(theme::ERROR));
            }
            FileState::Unread => {
                ui.weak("not read");
            }
        }
    }
}

/// The skill's files as a tree of their paths (`references/FORMS.md` under
/// `references`); `files` are (path relative to the part shown, index).
#[allow(clippy::too_many_arguments)]
fn tree_ui(
    ui: &mut Ui,
    load: &SkillLoad,
    files: &[(&str, usize)],
    dir: &str,
    live: bool,
    viewing: Option<&str>,
    read: &mut Option<String>,
    view: &mut Option<String>,
) {
    let mut dirs: Vec<&str> = Vec::new();
    for (path, n) in files {
        match path.split_once('/') {
            Some((d, _)) => {
                if !dirs.contains(&d) {
                    dirs.push(d);
                }
            }
            None => file_row(ui, load, *n, path, live, viewing, read, view),
        }
    }
    for d in dirs {
        let inner: Vec<(&str, usize)> = files
            .iter()
            .filter_map(|(p, n)| Some((p.strip_prefix(d)?.strip_prefix('/')?, *n)))
            .collect();
        let id = format!("{dir}{d}/");
        egui::CollapsingHeader::new(format!("{d}/"))
            .id_salt(("composer-skill-dir", &id))
            .default_open(true)
            .show(ui, |ui| tree_ui(ui, load, &inner, &id, live, viewing, read, view));
    }
}

#[allow(clippy::too_many_arguments)]
fn file_row(
    ui: &mut Ui,
    load: &SkillLoad,
    n: usize,
    name: &str,
    live: bool,
    viewing: Option<&str>,
    read: &mut Option<String>,
    view: &mut Option<String>,
) {
    let (file, state) = &load.files()[n];
    ui.horizontal(|ui| {
        let (mark, color) = match state {
            FileState::Unread => ("○", ui.visuals().weak_text_color()),
            FileState::Reading => ("…", ui.visuals().weak_text_color()),
            FileState::Verified(_) => ("✔", theme::OK),
            FileState::ReadFailed(_) => ("⚠", theme::WARN),
            FileState::Rejected(_) => ("✖", theme::ERROR),
        };
        ui.label(RichText::new(mark).color(color));
        if ui
            .selectable_label(viewing == Some(file.uri.as_str()), RichText::new(name).monospace())
            .on_hover_text(&file.uri)
            .clicked()
            && *state != FileState::Unread
        {
            *view = Some(file.uri.clone());
        }
        if let Some(size) = file.size {
            ui.weak(format!("{size} B"));
        }
        match state {
            FileState::Unread | FileState::ReadFailed(_) => {
                let label = if matches!(state, FileState::ReadFailed(_)) {
                    "Read again"
                } else {
                    "Read"
                };
                let allowed = load.can_read(&file.uri);
                let button = ui.add_enabled(live && allowed.is_ok(), egui::Button::new(label).small());
                let button = match &allowed {
                    Err(why) => button.on_disabled_hover_text(why.to_string()),
                    Ok(()) => button.on_hover_text(format!("resources/read {}", file.uri)),
                };
                if button.clicked() {
                    *read = Some(file.uri.clone());
                }
            }
            FileState::Reading => {
                ui.spinner();
            }
            FileState::Verified(bytes) => {
                ui.label(RichText::new(format!("verified, {} B", bytes.len())).color(theme::OK));
            }
            FileState::Rejected(_) => {
                ui.label(RichText::new("failed its check").color(theme::ERROR));
            }
        }
    });
    let problem = match state {
        FileState::ReadFailed(why) => Some(why.clone()),
        FileState::Rejected(e) => Some(e.to_string()),
        _ => None,
    };
    if let Some(problem) = problem {
        ui.label(RichText::new(problem).small().color(theme::ERROR));
    }
}
