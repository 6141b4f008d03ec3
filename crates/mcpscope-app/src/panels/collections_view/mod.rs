//! File → Collections…: the test files (`*.mcp.yaml`) of a folder, each step
//! with its last verdict; Run one file, Run all, Stop; a failed check shown
//! with what it saw, and a click on a step opens its run's capture at the
//! step's frame. The files are run by the core's runner on a worker, as
//! `mcpscope test` runs them; the panel only reads what it reports.
//!
//! It is also where Save to collection lands: a request from the composer,
//! History or a frame waits here until the user picks the file it goes into.

mod rows;

use crate::job::{Feed, Feeder, Job, PollSlot as _};
use crate::theme;
use egui::{RichText, Ui};
use mcpscope_core::collection::file::{self, TestFile};
use mcpscope_core::collection::report::{Check, EvalResult, FileReport, StepResult};
use mcpscope_core::collection::run::{self, RunOptions, Watch};
use mcpscope_core::collection::save::{NewServer, NewStep, SaveError, Saved};
use mcpscope_core::collection::vars::Lookup;
use rows::Clicked;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// What the user asked of the panel, applied by the app.
#[derive(Clone, Debug, PartialEq)]
pub enum CollectionsAction {
    ChooseFolder,
    /// Open a run's capture and select the frame with this sequence number.
    ShowFrame {
        capture: PathBuf,
        seq: u64,
    },
    /// Write the waiting step into this file.
    SaveInto(PathBuf),
    /// Choose or name another file for the waiting step.
    SaveElsewhere,
}

/// A file as read: what it holds, for the rows drawn before it runs.
#[derive(Clone, Debug, Default)]
struct Outline {
    name: Option<String>,
    /// Each step's name and line.
    steps: Vec<(String, usize)>,
    environments: Vec<String>,
}

impl Outline {
    fn of(f: &TestFile) -> Outline {
        Outline {
            name: f.name.clone(),
            steps: f.steps.iter().map(|s| (s.name.clone(), s.at.line)).collect(),
            environments: f.environments.iter().map(|(n, _)| n.clone()).collect(),
        }
    }
}

/// Reads a test file: its outline, or every mistake with its place.
fn read(path: &Path) -> Result<(TestFile, Outline), Vec<String>> {
    let text = std::fs::read_to_string(path).map_err(|e| vec![e.to_string()])?;
    let f = file::read(&text).map_err(|errors| errors.iter().map(ToString::to_string).collect::<Vec<_>>())?;
    let outline = Outline::of(&f);
    Ok((f, outline))
}

/// One file in the list, with its last run.
struct Listed {
    path: PathBuf,
    read: Result<Outline, Vec<String>>,
    /// The run in progress: what it has reported so far.
    running: Option<Partial>,
    last: Option<FileReport>,
}

#[derive(Default)]
struct Partial {
    steps: Vec<StepResult>,
    contracts: Vec<Check>,
    evals: Vec<EvalResult>,
}

impl Listed {
    /// The result of the file's step `i`, written at `line`, from the run in
    /// progress or the last one. Results come in the steps' order, so the
    /// i-th is looked at first: drawing a list of thousands of steps is not
    /// a search per step (the file may have been edited since: then it is).
    fn step(&self, i: usize, line: usize) -> Option<&StepResult> {
        let results = match &self.running {
            Some(p) => &p.steps,
            None => &self.last.as_ref()?.steps,
        };
        match results.get(i) {
            Some(r) if r.at.line == line => Some(r),
            _ => results.iter().find(|s| s.at.line == line),
        }
    }

    fn contracts(&self) -> &[Check] {
        match (&self.running, &self.last) {
            (Some(p), _) => &p.contracts,
            (None, Some(r)) => &r.contracts,
            (None, None) => &[],
        }
    }

    fn evals(&self) -> &[EvalResult] {
        match (&self.running, &self.last) {
            (Some(p), _) => &p.evals,
            (None, Some(r)) => &r.evals,
            (None, None) => &[],
        }
    }
}

/// A request waiting for the file it is saved into.
#[derive(Clone, Debug, PartialEq)]
pub struct PendingSave {
    /// How it is named in the window (`tools/call echo`).
    pub label: String,
    pub step: NewStep,
    /// The server of the tab it came from, for a new file.
    pub server: Option<NewServer>,
}

/// What the worker running files reports, as it happens, each about a
/// file by its path (the list may be read again meanwhile).
enum Progress {
    Started(PathBuf, Result<Outline, Vec<String>>),
    Step(PathBuf, StepResult),
    Contract(PathBuf, Check),
    Eval(PathBuf, EvalResult),
    Finished(PathBuf, Box<FileReport>),
}

/// The folder's files as read, and whether the search stopped at its limit.
type Listing = Result<(Vec<(PathBuf, Result<Outline, Vec<String>>)>, bool), String>;

/// How many entries of a folder are looked at for test files: a folder
/// chosen by mistake (a home directory) is not searched for minutes.
const SEARCH_LIMIT: usize = 200_000;

pub struct CollectionsView {
    pub open: bool,
    folder: Option<PathBuf>,
    files: Vec<Listed>,
    listing: Option<Job<Listing>>,
    listing_error: Option<String>,
    /// The last search stopped at [`SEARCH_LIMIT`].
    listing_cut: bool,
    /// The environment the files run with (`--env`); `None`: their variables only.
    pub env: Option<String>,
    run: Option<Feed<Progress>>,
    stop: Arc<AtomicBool>,
    /// A request waiting to be saved into a file the user picks.
    pub pending_save: Option<PendingSave>,
    /// Files whose steps are hidden.
    folded: std::collections::HashSet<usize>,
    saving: Option<Job<(PendingSave, Result<Saved, SaveError>)>>,
    /// What the last save did, for the status bar (taken by the app).
    pub said: Option<Result<String, String>>,
    wake: Option<crate::job::Wake>,
}

impl Default for CollectionsView {
    fn default() -> Self {
        CollectionsView {
            open: false,
            folder: None,
            files: Vec::new(),
            listing: None,
            listing_error: None,
            listing_cut: false,
            env: None,
            run: None,
            stop: Arc::new(AtomicBool::new(false)),
            pending_save: None,
            folded: Default::default(),
            saving: None,
            said: None,
            wake: None,
        }
    }
}

/// Hands the runner's reports to the panel; a panel that let go stops the run.
struct ToPanel<'a> {
    feeder: &'a Feeder<Progress>,
    file: &'a Path,
    stop: &'a AtomicBool,
}

impl ToPanel<'_> {
    fn send(&self, p: Progress) {
        if !self.feeder.send(p) {
            self.stop.store(true, Ordering::SeqCst);
        }
    }
}

impl Watch for ToPanel<'_> {
    fn step(&mut self, r: &StepResult) {
        self.send(Progress::Step(self.file.to_owned(), r.clone()));
    }
    fn contract(&mut self, c: &Check) {
        self.send(Progress::Contract(self.file.to_owned(), c.clone()));
    }
    fn eval(&mut self, e: &EvalResult) {
        self.send(Progress::Eval(self.file.to_owned(), e.clone()));
    }
}

impl CollectionsView {
    pub fn folder(&self) -> Option<&Path> {
        self.folder.as_deref()
    }

    /// The test files listed, in order.
    pub fn files(&self) -> Vec<PathBuf> {
        self.files.iter().map(|f| f.path.clone()).collect()
    }

    /// The last run's report of each listed file that has one.
    pub fn reports(&self) -> Vec<&FileReport> {
        self.files.iter().filter_map(|f| f.last.as_ref()).collect()
    }

    /// The last run's report of the listed file at `path`.
    pub fn report_of(&self, path: &Path) -> Option<&FileReport> {
        self.files.iter().find(|f| f.path == path)?.last.as_ref()
    }

    pub fn running(&self) -> bool {
        self.run.is_some()
    }

    /// Lists the test files of `folder` (on a worker).
    pub fn set_folder(&mut self, folder: PathBuf, wake: &crate::job::Wake) {
        self.wake = Some(Arc::clone(wake));
        self.folder = Some(folder);
        self.reload();
    }

    /// Asks where `pending` goes: the window opens with the listed files to
    /// choose from.
    pub fn offer_save(&mut self, pending: PendingSave, wake: &crate::job::Wake) {
        self.wake = Some(Arc::clone(wake));
        self.pending_save = Some(pending);
        self.open = true;
    }

    /// Writes the waiting step into `path` (on a worker), one save at a time.
    pub fn save(&mut self, path: PathBuf) {
        if self.saving.is_some() {
            return;
        }
        let Some(pending) = self.pending_save.clone() else {
            self.said = Some(Err("nothing waits to be saved".into()));
            return;
        };
        self.saving = Some(Job::spawn("save-step", self.wake.clone(), move || {
            let saved = mcpscope_core::collection::save::save_step(&path, &pending.step, pending.server.as_ref());
            (pending, saved)
        }));
    }

    /// Reads the folder's files again (they may have been edited by hand).
    pub fn reload(&mut self) {
        let Some(folder) = self.folder.clone() else { return };
        self.listing = Some(Job::spawn("collections", self.wake.clone(), move || {
            let (paths, cut) =
                mcpscope_core::collection::find::test_files_within(std::slice::from_ref(&folder), SEARCH_LIMIT)?;
            let read = paths
                .into_iter()
                .map(|p| {
                    let r = read(&p).map(|(_, o)| o);
                    (p, r)
                })
                .collect();
            Ok((read, cut))
        }));
    }

    /// Takes what the workers have for the panel; true when something changed.
    pub fn drain(&mut self) -> bool {
        let mut changed = false;
        if let Some(done) = self.listing.take_ready() {
            changed = true;
            match done.map_err(|e| e.to_string()).and_then(|l| l) {
                Ok((list, cut)) => {
                    self.listing_error = None;
                    self.listing_cut = cut;
                    self.folded.clear();
                    // A file's last run is kept while it is still listed.
                    let mut old: Vec<Listed> = std::mem::take(&mut self.files);
                    self.files = list
                        .into_iter()
                        .map(|(path, read)| {
                            // A file's last run, and the run in progress, stay with it.
                            let (running, last) = old
                                .iter_mut()
                                .find(|o| o.path == path)
                                .map_or((None, None), |o| (o.running.take(), o.last.take()));
                            Listed {
                                path,
                                read,
                                running,
                                last,
                            }
                        })
                        .collect();
                }
                Err(e) => self.listing_error = Some(e),
            }
        }
        if let Some(done) = self.saving.take_ready() {
            changed = true;
            let (pending, saved) = match done {
                Ok((pending, saved)) => (Some(pending), saved.map_err(|e| e.to_string())),
                Err(e) => (None, Err(e.to_string())),
            };
            match saved {
                Ok(saved) => {
                    let mut text = format!(
                        "step \"{}\" saved to {}{} ({} step(s))",
                        saved.name,
                        saved.path.display(),
                        if saved.created { ", a new test file" } else { "" },
                        saved.steps
                    );
                    if !saved.secrets.is_empty() {
                        text.push_str(&format!(
                            "; not written in the clear: {} (set each as an environment variable, or mcpscope test --store-secret NAME)",
                            saved
                                .secrets
                                .iter()
                                .map(|s| format!("{{{{secret:{s}}}}}"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ));
                    }
                    for note in &saved.notes {
                        text.push_str(&format!("; {note}"));
                    }
                    self.said = Some(Ok(text));
                    // What was offered since waits on.
                    if self.pending_save == pending {
                        self.pending_save = None;
                    }
                    if self.folder.is_none() {
                        self.folder = saved.path.parent().map(Path::to_owned);
                    }
                    self.reload();
                }
                Err(e) => self.said = Some(Err(e)),
            }
        }
        let mut ended = false;
        let mut came = Vec::new();
        if let Some(feed) = &self.run {
            if let Some(e) = feed.failed() {
                self.listing_error = Some(e.to_string());
                ended = true;
            }
            loop {
                match feed.receiver().try_recv() {
                    Ok(p) => came.push(p),
                    Err(crossbeam_channel::TryRecvError::Empty) => break,
                    // The worker is done (or gone): the run is over.
                    Err(crossbeam_channel::TryRecvError::Disconnected) => {
                        ended = true;
                        break;
                    }
                }
            }
        }
        changed |= !came.is_empty();
        for p in came {
            self.apply(p);
        }
        if ended {
            self.run = None;
            for f in &mut self.files {
                f.running = None;
            }
            changed = true;
        }
        changed
    }

    fn apply(&mut self, p: Progress) {
        fn listed<'a>(files: &'a mut [Listed], path: &Path) -> Option<&'a mut Listed> {
            files.iter_mut().find(|f| f.path == path)
        }
        match p {
            Progress::Started(path, outline) => {
                if let Some(f) = listed(&mut self.files, &path) {
                    f.read = outline;
                    f.running = f.read.is_ok().then(Partial::default);
                }
            }
            Progress::Step(path, r) => {
                if let Some(p) = listed(&mut self.files, &path).and_then(|f| f.running.as_mut()) {
                    p.steps.push(r);
                }
            }
            Progress::Contract(path, c) => {
                if let Some(p) = listed(&mut self.files, &path).and_then(|f| f.running.as_mut()) {
                    p.contracts.push(c);
                }
            }
            Progress::Eval(path, e) => {
                if let Some(p) = listed(&mut self.files, &path).and_then(|f| f.running.as_mut()) {
                    p.evals.push(e);
                }
            }
            Progress::Finished(path, report) => {
                if let Some(f) = listed(&mut self.files, &path) {
                    f.running = None;
                    f.last = Some(*report);
                }
            }
        }
    }

    /// Runs these of the listed files (by index), one after another, on a worker.
    pub fn run(&mut self, which: Vec<usize>) {
        if self.run.is_some() {
            return;
        }
        let stop = Arc::new(AtomicBool::new(false));
        self.stop = Arc::clone(&stop);
        let env = self.env.clone();
        let jobs: Vec<PathBuf> = which
            .into_iter()
            .filter_map(|n| self.files.get(n).map(|f| f.path.clone()))
            .collect();
        self.run = Some(Feed::spawn_detached(
            "collection-run",
            256,
            self.wake.clone(),
            move |feeder| {
                for path in jobs {
                    if stop.load(Ordering::SeqCst) || feeder.stopped() {
                        break;
                    }
                    let (file, outline) = match read(&path) {
                        Ok(r) => r,
                        Err(mistakes) => {
                            feeder.send(Progress::Started(path.clone(), Err(mistakes)));
                            continue;
                        }
                    };
                    feeder.send(Progress::Started(path.clone(), Ok(outline)));
                    let options = RunOptions {
                        env: env.clone(),
                        keep_capture: mcpscope_core::record::private_files::new_capture_file().ok(),
                        keep_passing: true,
                        stop: Arc::clone(&stop),
                        ..RunOptions::default()
                    };
                    let mut watch = ToPanel {
                        feeder: &feeder,
                        file: &path,
                        stop: &stop,
                    };
                    let report = run::run_file(&path, &file, &options, Lookup::here(), &mut watch);
                    feeder.send(Progress::Finished(path.clone(), Box::new(report)));
                }
            },
        ));
    }

    /// Stops the run after the step in flight.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    /// The environments the listed files name, in order, once each.
    fn environments(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for f in &self.files {
            if let Ok(o) = &f.read {
                for e in &o.environments {
                    if !out.contains(e) {
                        out.push(e.clone());
                    }
                }
            }
        }
        out
    }

    pub fn window(&mut self, ctx: &egui::Context) -> Option<CollectionsAction> {
        let mut open = self.open;
        let mut action = None;
        egui::Window::new("Collections")
            .open(&mut open)
            // Most of a small screen, not more than the list needs on a large one.
            .default_size(egui::vec2(860.0, 640.0).min(ctx.content_rect().size() * egui::vec2(0.8, 0.85)))
            .show(ctx, |ui| action = self.ui(ui));
        self.open = open;
        action
    }

    pub fn ui(&mut self, ui: &mut Ui) -> Option<CollectionsAction> {
        let mut action = None;
        self.save_bar(ui, &mut action);
        ui.horizontal_wrapped(|ui| {
            match &self.folder {
                Some(f) => ui.label(RichText::new(f.display().to_string()).monospace()),
                None => ui.weak("No folder chosen: its *.mcp.yaml files are the collection"),
            };
            if ui.button("Choose folder…").clicked() {
                action = Some(CollectionsAction::ChooseFolder);
            }
            if ui
                .add_enabled(
                    self.folder.is_some() && self.listing.is_none(),
                    egui::Button::new("Reload"),
                )
                .on_hover_text("Read the files again (after editing them by hand)")
                .clicked()
            {
                self.reload();
            }
        });
        ui.horizontal_wrapped(|ui| {
            let envs = self.environments();
            ui.label("Environment:");
            egui::ComboBox::from_id_salt("collections-env")
                .selected_text(self.env.clone().unwrap_or_else(|| "(none)".into()))
                .show_ui(ui, |ui| {
                    ui.selectable_value(&mut self.env, None, "(none)");
                    for e in envs {
                        ui.selectable_value(&mut self.env, Some(e.clone()), e);
                    }
                });
            let idle = self.run.is_none();
            if ui
                .add_enabled(idle && !self.files.is_empty(), egui::Button::new("Run all"))
                .clicked()
            {
                self.run((0..self.files.len()).collect());
            }
            if ui.add_enabled(!idle, egui::Button::new("Stop")).clicked() {
                self.stop();
            }
            if !idle {
                ui.spinner();
            }
            let (mut passed, mut failed, mut errors) = (0, 0, 0);
            for f in &self.files {
                if let Some(r) = &f.last {
                    let c = r.counts();
                    (passed, failed, errors) = (passed + c.passed, failed + c.failed, errors + c.errors);
                }
            }
            if passed + failed + errors > 0 {
                let color = if failed + errors > 0 { theme::ERROR } else { theme::OK };
                ui.label(RichText::new(format!("{passed} passed, {failed} failed, {errors} errors")).color(color));
            }
        });
        if let Some(e) = &self.listing_error {
            ui.colored_label(theme::ERROR, e);
        }
        if self.listing.is_some() {
            ui.horizontal(|ui| {
                ui.spinner();
                ui.label("looking for test files in the folder…");
            });
        }
        if self.listing_cut {
            ui.colored_label(
                theme::WARN,
                format!(
                    "the search stopped after {SEARCH_LIMIT} entries of the folder: choose the folder that holds \
                     your test files"
                ),
            );
        }
        if self.folder.is_some() && self.files.is_empty() && self.listing.is_none() && self.listing_error.is_none() {
            ui.weak("No test files (*.mcp.yaml) in this folder: Save to collection makes one.");
        }
        ui.separator();
        let idle = self.run.is_none();
        let rows = self.rows();
        let mut clicked = None;
        // One list of rows, however many files and steps: only those on
        // screen are drawn. It fills the window (a window otherwise shrinks
        // to what it holds).
        let row_h = ui.spacing().interact_size.y;
        egui::ScrollArea::vertical()
            .id_salt("collections-rows")
            .auto_shrink([false, false])
            .show_rows(ui, row_h, rows.len(), |ui, range| {
                for row in &rows[range] {
                    if let Some(c) = self.row_ui(ui, *row, idle) {
                        clicked = Some(c);
                    }
                }
            });
        match clicked {
            Some(Clicked::Run(n)) => self.run(vec![n]),
            // Folded: shown again; shown: folded.
            Some(Clicked::Fold(n)) if !self.folded.remove(&n) => {
                self.folded.insert(n);
            }
            Some(Clicked::Fold(_)) => {}
            Some(Clicked::Action(a)) => action = Some(a),
            None => {}
        }
        action
    }

    fn save_bar(&mut self, ui: &mut Ui, action: &mut Option<CollectionsAction>) {
        let Some(pending) = &self.pending_save else { return };
        let label = pending.label.clone();
        let idle = self.saving.is_none();
        egui::Frame::group(ui.style()).show(ui, |ui| {
            ui.label(RichText::new(format!("Save `{label}` as a step, into:")).strong());
            ui.horizontal_wrapped(|ui| {
                for f in &self.files {
                    let name = f
                        .path
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    if ui
                        .add_enabled(idle && f.read.is_ok(), egui::Button::new(name))
                        .on_disabled_hover_text("This file has mistakes: fix them first")
                        .clicked()
                    {
                        *action = Some(CollectionsAction::SaveInto(f.path.clone()));
                    }
                }
                if ui
                    .add_enabled(idle, egui::Button::new("Another file…"))
                    .on_hover_text("An existing test file, or a new one's name")
                    .clicked()
                {
                    *action = Some(CollectionsAction::SaveElsewhere);
                }
                if ui.button("Cancel").clicked() {
                    self.pending_save = None;
                }
            });
        });
    }
}
