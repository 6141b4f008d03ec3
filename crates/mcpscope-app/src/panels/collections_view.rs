//! File → Collections…: the test files (`*.mcp.yaml`) of a folder, each step
//! with its last verdict; Run one file, Run all, Stop; a failed check shown
//! with what it saw, and a click on a step opens its run's capture at the
//! step's frame. The files are run by the core's runner on a worker, as
//! `mcpscope test` runs them; the panel only reads what it reports.
//!
//! It is also where Save to collection lands: a request from the composer,
//! History or a frame waits here until the user picks the file it goes into.

use crate::job::{Feed, Feeder, Job, PollSlot as _};
use crate::theme;
use egui::{Color32, RichText, Ui};
use mcpscope_core::collection::file::{self, TestFile};
use mcpscope_core::collection::report::{Check, EvalResult, FileReport, StepResult, Verdict};
use mcpscope_core::collection::run::{self, RunOptions, Watch};
use mcpscope_core::collection::save::{NewServer, NewStep, SaveError, Saved};
use mcpscope_core::collection::vars::Lookup;
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
    /// A step's result, from the run in progress or the last one.
    fn step(&self, line: usize) -> Option<&StepResult> {
        match &self.running {
            Some(p) => p.steps.iter().find(|s| s.at.line == line),
            None => self.last.as_ref()?.steps.iter().find(|s| s.at.line == line),
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

type Listing = Result<Vec<(PathBuf, Result<Outline, Vec<String>>)>, String>;

pub struct CollectionsView {
    pub open: bool,
    folder: Option<PathBuf>,
    files: Vec<Listed>,
    listing: Option<Job<Listing>>,
    listing_error: Option<String>,
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
            let paths = mcpscope_core::collection::find::test_files(std::slice::from_ref(&folder))?;
            Ok(paths
                .into_iter()
                .map(|p| {
                    let r = read(&p).map(|(_, o)| o);
                    (p, r)
                })
                .collect())
        }));
    }

    /// Takes what the workers have for the panel; true when something changed.
    pub fn drain(&mut self) -> bool {
        let mut changed = false;
        if let Some(done) = self.listing.take_ready() {
            changed = true;
            match done.map_err(|e| e.to_string()).and_then(|l| l) {
                Ok(list) => {
                    self.listing_error = None;
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

    /// What the list shows, a line each: per file its head, then (unless
    /// folded) its mistakes or its steps, then what failed with what it saw.
    fn rows(&self) -> Vec<Row> {
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
                let Some(r) = f.step(*line) else { continue };
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

    fn row_ui(&self, ui: &mut Ui, row: Row, idle: bool) -> Option<Clicked> {
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
                let r = f.step(*at);
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
        f.step(f.read.as_ref().ok()?.steps.get(i)?.1)
    }

    fn check_of(&self, n: usize, step: Option<usize>, c: usize) -> Option<&Check> {
        match step {
            Some(i) => self.step_of(n, i)?.checks.get(c),
            None => self.files[n].contracts().get(c),
        }
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
enum Row {
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

enum Clicked {
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
