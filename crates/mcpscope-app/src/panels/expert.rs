//! The Expert panel: protocol lint findings for the session on screen.
//!
//! A lint worker owns a streaming [`Linter`] for the session and, on each
//! step, reads only what is new: the lines its capture gained since the last
//! step (live sessions append theirs as they go), or the store's new rows for
//! a session without a capture. The UI thread merges what comes back, so the
//! findings stay current as rows arrive at any session size, and a request
//! still in flight is not reported as unanswered until the session is over.

use crate::job::{Feed, Feeder};
use crate::theme;
use crossbeam_channel::{Sender, unbounded};
use egui::{RichText, Ui};
use mcpscope_core::analysis::lint::{self, Finding, LintOptions, Linter, Severity};
use mcpscope_core::record::capture::{EventReader, Item, READ_BUFFER};
use mcpscope_core::timeline::model::SessionModel;
use mcpscope_core::timeline::store::Lane;
use mcpscope_core::transport::event::{Event, StderrLine};
use std::collections::HashMap;
use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// At most this often while rows stream in.
const STEP_INTERVAL: Duration = Duration::from_millis(250);

/// What a lint step reads.
pub enum LintSource {
    /// A capture file; findings name event seqs, resolved through the store.
    Capture(PathBuf),
    /// Events rebuilt from the store, whose seqs are row indices.
    Rows(Vec<Event>),
}

/// The store's frames and stderr lines from `from` on, as events numbered by row.
pub fn events_from_rows(model: &SessionModel, from: usize) -> Vec<Event> {
    model
        .store
        .iter()
        .skip(from)
        .filter_map(|row| match row.lane() {
            Lane::Out | Lane::In => row.to_frame().map(Event::Frame),
            Lane::Stderr => Some(Event::Stderr(StderrLine {
                seq: row.index() as u64,
                at: row.at(),
                raw: row.raw().to_vec(),
                ending: row.ending(),
            })),
            // The authorization rules read the steps.
            Lane::Auth => row.to_auth().map(|a| Event::Auth(Box::new(a))),
            // The proxy rules read what the proxy did.
            Lane::Touch => row.to_touch().map(|t| Event::Touch(Box::new(t))),
            // The App rules read the View's messages.
            Lane::App => row.to_app().map(|a| Event::App(Box::new(a))),
            // No rule reads model turns.
            Lane::Meta | Lane::Model => None,
        })
        .collect()
}

struct Step {
    source: LintSource,
    session_over: bool,
}

struct StepOutcome {
    settled: Vec<Finding>,
    provisional: Vec<Finding>,
    error: Option<String>,
    lines: u64,
    took: Duration,
}

/// The worker: a linter and, for a capture, where it stopped reading. It
/// takes one step at a time and feeds back its outcome.
struct Worker {
    /// Declared first: dropping it ends the worker's wait for a next step.
    steps: Sender<Step>,
    outcomes: Feed<StepOutcome>,
    seqs_are_rows: bool,
}

fn spawn_worker(
    options: LintOptions,
    seqs_are_rows: bool,
    waker: Arc<dyn Fn() + Send + Sync>,
) -> Result<Worker, crate::job::JobFailed> {
    let (steps, step_rx) = unbounded::<Step>();
    // Detached: a step over a large capture may be running when the panel lets go.
    let outcomes = Feed::spawn_detached("lint", 2, Some(waker), move |feed: Feeder<StepOutcome>| {
        let mut linter = Linter::new(options);
        let mut reader: Option<EventReader<BufReader<File>>> = None;
        while let Ok(step) = step_rx.recv() {
            let started = Instant::now();
            let mut error = None;
            match step.source {
                LintSource::Rows(events) => events.iter().for_each(|e| linter.push(e)),
                LintSource::Capture(path) => {
                    if let Err(e) = read_new(&mut reader, &path, step.session_over, &mut linter) {
                        error = Some(crate::error_view::one_line(&e));
                    }
                }
            }
            let outcome = StepOutcome {
                settled: linter.take_settled(),
                provisional: linter.provisional(step.session_over),
                error,
                lines: linter.lines_seen(),
                took: started.elapsed(),
            };
            if !feed.send(outcome) {
                break;
            }
        }
    });
    if let Some(e) = outcomes.failed() {
        return Err(e.clone());
    }
    Ok(Worker {
        steps,
        outcomes,
        seqs_are_rows,
    })
}

/// Feeds the linter the records the capture gained since the last call.
fn read_new(
    reader: &mut Option<EventReader<BufReader<File>>>,
    path: &std::path::Path,
    session_over: bool,
    linter: &mut Linter,
) -> anyhow::Result<()> {
    use mcpscope_core::record::capture::CaptureError;
    if reader.is_none() {
        // Only a regular file: a FIFO put in a capture's place must not block the worker.
        let file = mcpscope_core::record::private_files::open_regular(path).map_err(CaptureError::open(path))?;
        let r = EventReader::new(BufReader::with_capacity(READ_BUFFER, file)).map_err(CaptureError::read(path))?;
        *reader = Some(r);
    }
    let r = reader.as_mut().expect("opened above");
    // A live capture's last line may be half written; once the session is
    // over, a line cut short is read for what it is.
    r.following(!session_over);
    loop {
        match r.next_item() {
            Ok(Some(Item::Event(e))) => linter.push(&e),
            Ok(Some(Item::Warning(_))) => {}
            // Another session of the same capture: ids and the handshake start again.
            Ok(Some(Item::Boundary(..))) => linter.next_session(),
            Ok(None) => return Ok(()),
            Err(e) => return Err(CaptureError::read(path)(e).into()),
        }
    }
}

/// A finding with the rows it is about.
#[derive(Clone, Debug)]
pub struct ShownFinding {
    pub finding: Finding,
    pub rows: Vec<usize>,
    /// Depends on what comes next; replaced by every step.
    provisional: bool,
}

/// What the panel asks the app to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExpertAction {
    /// Select these rows on the timeline (the first one in the detail view).
    SelectRows(Vec<usize>),
}

pub struct ExpertPanel {
    /// Sorted as `mcpscope lint` lists them.
    pub findings: Vec<ShownFinding>,
    /// Bumped whenever `findings` changes.
    pub generation: u64,
    /// The most severe finding per row, for the timeline's markers.
    pub marks: HashMap<usize, Severity>,
    /// The same from settled findings alone (provisional ones come and go).
    settled_marks: HashMap<usize, Severity>,
    counts: [usize; 4],
    pub options: LintOptions,
    /// Only findings at least this severe are listed.
    pub min_severity: Severity,
    pub text_filter: String,
    pub selected: Option<usize>,
    pub error: Option<String>,
    worker: Option<Worker>,
    /// A step is running.
    in_flight: bool,
    /// Rows of the store already handed to the worker (rows source).
    rows_sent: usize,
    /// What the last step was asked for: rows the model had, and whether the session was over.
    stepped_for: Option<(usize, bool)>,
    /// Frames and stderr lines linted so far.
    lines_linted: Option<u64>,
    /// Time spent linting, over all steps.
    took: Duration,
    next_step: Option<Instant>,
    /// When a step that is not allowed yet becomes due.
    wakeup: Option<Instant>,
    restart_requested: bool,
    /// Positions in `findings` that pass the filters.
    visible: Vec<usize>,
    visible_for: Option<(Severity, String, u64)>,
}

impl Default for ExpertPanel {
    fn default() -> Self {
        Self {
            findings: Vec::new(),
            generation: 0,
            marks: HashMap::new(),
            settled_marks: HashMap::new(),
            counts: [0; 4],
            options: LintOptions::default(),
            min_severity: Severity::Info,
            text_filter: String::new(),
            selected: None,
            error: None,
            worker: None,
            in_flight: false,
            rows_sent: 0,
            stepped_for: None,
            lines_linted: None,
            took: Duration::ZERO,
            next_step: None,
            wakeup: None,
            restart_requested: false,
            visible: Vec::new(),
            visible_for: None,
        }
    }
}

fn rule_order(id: &str) -> usize {
    lint::RULES.iter().position(|r| r.id == id).unwrap_or(usize::MAX)
}

fn severity_slot(s: Severity) -> usize {
    match s {
        Severity::Ok => 0,
        Severity::Info => 1,
        Severity::Warning => 2,
        Severity::Error => 3,
    }
}

impl ExpertPanel {
    pub fn reset(&mut self) {
        *self = ExpertPanel {
            options: self.options.clone(),
            min_severity: self.min_severity,
            generation: self.generation + 1,
            ..ExpertPanel::default()
        };
    }

    pub fn busy(&self) -> bool {
        self.in_flight
    }

    /// When the next step is allowed, if one is waiting for it.
    pub fn wakeup(&self) -> Option<Instant> {
        self.wakeup
    }

    /// Lints the whole session again from its start (e.g. after the options changed).
    pub fn request_run(&mut self) {
        self.restart_requested = true;
    }

    pub fn count(&self, severity: Severity) -> usize {
        self.counts[severity_slot(severity)]
    }

    /// Frames and stderr lines linted so far.
    pub fn lines_linted(&self) -> Option<u64> {
        self.lines_linted
    }

    /// Collects a finished step and starts the next one when the session
    /// changed. `ready` is false while a capture is still being loaded (its
    /// rows are not all in the store yet). Returns true while a step runs.
    pub fn poll(
        &mut self,
        model: &SessionModel,
        capture: Option<&PathBuf>,
        ready: bool,
        waker: &Arc<dyn Fn() + Send + Sync>,
    ) -> bool {
        if let Some(w) = &self.worker
            && let Some(outcome) = w.outcomes.try_recv()
        {
            let seqs_are_rows = w.seqs_are_rows;
            self.in_flight = false;
            self.merge(model, outcome, seqs_are_rows);
            // A session that is over has nothing more to lint: the worker's
            // state (its reader's correlation maps) goes, and its memory too.
            if self.stepped_for.is_some_and(|(_, over)| over) {
                self.worker = None;
                crate::memory::give_back();
            }
        }
        if self.restart_requested && !self.in_flight {
            self.restart_requested = false;
            let options = self.options.clone();
            self.reset();
            self.options = options;
        }
        if self.in_flight || !ready {
            return self.in_flight;
        }
        let session_over = model.closed || model.exit.is_some() || !model.is_live();
        let key = (model.store.len(), session_over);
        if self.stepped_for == Some(key) {
            self.wakeup = None;
            return false;
        }
        let due = self.next_step.is_none_or(|t| Instant::now() >= t);
        // The session just ended: its last step is not held back.
        let just_ended = session_over && self.stepped_for.is_some_and(|(_, over)| !over);
        if !(due || just_ended) {
            // The app asks for a frame then ([`ExpertPanel::wakeup`]).
            self.wakeup = self.next_step;
            return false;
        }
        self.wakeup = None;
        if self.worker.is_none() {
            match spawn_worker(self.options.clone(), capture.is_none(), Arc::clone(waker)) {
                Ok(w) => self.worker = Some(w),
                Err(e) => {
                    self.error = Some(e.to_string());
                    return false;
                }
            }
        }
        let w = self.worker.as_ref().expect("started above");
        let source = match capture {
            Some(p) if !w.seqs_are_rows => LintSource::Capture(p.clone()),
            _ => {
                let events = events_from_rows(model, self.rows_sent);
                self.rows_sent = model.store.len();
                LintSource::Rows(events)
            }
        };
        if w.steps.send(Step { source, session_over }).is_err() {
            self.error = Some("the lint thread stopped".into());
            self.worker = None;
            return false;
        }
        self.stepped_for = Some(key);
        self.in_flight = true;
        true
    }

    /// Adds a step's settled findings, replaces the provisional ones, and
    /// keeps the marks, counts and selection in step.
    fn merge(&mut self, model: &SessionModel, outcome: StepOutcome, seqs_are_rows: bool) {
        self.took += outcome.took;
        self.next_step = Some(Instant::now() + STEP_INTERVAL.max(outcome.took * 2));
        self.lines_linted = Some(outcome.lines);
        self.error = outcome.error;
        let unchanged = outcome.settled.is_empty()
            && outcome.provisional.len() == self.findings.iter().filter(|f| f.provisional).count()
            && outcome
                .provisional
                .iter()
                .zip(self.findings.iter().filter(|f| f.provisional))
                .all(|(a, b)| *a == b.finding);
        if unchanged {
            return;
        }
        let resolve = |seq: u64| -> Option<usize> {
            if seqs_are_rows {
                usize::try_from(seq).ok().filter(|&r| r < model.store.len())
            } else {
                model.store.row_of_seq(seq)
            }
        };
        let keep_selected = self
            .selected
            .and_then(|i| self.findings.get(i))
            .map(|f| (f.finding.rule, f.finding.seqs.clone()));
        // Provisional findings leave; their marks fall back to the settled ones.
        let mut touched: Vec<usize> = Vec::new();
        self.findings.retain(|f| {
            if f.provisional {
                touched.extend(&f.rows);
            }
            !f.provisional
        });
        for row in touched {
            match self.settled_marks.get(&row) {
                Some(s) => {
                    self.marks.insert(row, *s);
                }
                None => {
                    self.marks.remove(&row);
                }
            }
        }
        let shown = |f: Finding, provisional: bool| ShownFinding {
            rows: f.seqs.iter().filter_map(|&s| resolve(s)).collect(),
            finding: f,
            provisional,
        };
        for f in outcome.settled {
            let f = shown(f, false);
            for &r in &f.rows {
                let m = self.settled_marks.entry(r).or_insert(f.finding.severity);
                *m = (*m).max(f.finding.severity);
            }
            self.findings.push(f);
        }
        for f in outcome.provisional {
            self.findings.push(shown(f, true));
        }
        for f in &self.findings {
            for &r in &f.rows {
                let m = self.marks.entry(r).or_insert(f.finding.severity);
                *m = (*m).max(f.finding.severity);
            }
        }
        // Nearly sorted already (new findings are mostly about new frames).
        self.findings.sort_by_key(|f| {
            (
                f.finding.seqs.first().copied().unwrap_or(u64::MAX),
                rule_order(f.finding.rule),
            )
        });
        self.counts = [0; 4];
        for f in &self.findings {
            self.counts[severity_slot(f.finding.severity)] += 1;
        }
        self.selected = keep_selected.and_then(|(rule, seqs)| {
            self.findings
                .iter()
                .position(|f| f.finding.rule == rule && f.finding.seqs == seqs)
        });
        self.visible_for = None;
        self.generation += 1;
    }

    /// Shows findings computed elsewhere (replacing any), e.g. in tests.
    pub fn set_findings(&mut self, model: &SessionModel, findings: Vec<Finding>, seqs_are_rows: bool) {
        let generation = self.generation;
        self.findings.clear();
        self.marks.clear();
        self.settled_marks.clear();
        self.merge(
            model,
            StepOutcome {
                settled: findings,
                provisional: Vec::new(),
                error: None,
                lines: 0,
                took: Duration::ZERO,
            },
            seqs_are_rows,
        );
        self.generation = self.generation.max(generation + 1);
    }

    fn update_visible(&mut self) {
        let key = (self.min_severity, self.text_filter.to_lowercase(), self.generation);
        if self.visible_for.as_ref() == Some(&key) {
            return;
        }
        self.visible = self
            .findings
            .iter()
            .enumerate()
            .filter(|(_, f)| {
                f.finding.severity >= key.0
                    && (key.1.is_empty()
                        || f.finding.rule.contains(&key.1)
                        || f.finding.message.to_lowercase().contains(&key.1))
            })
            .map(|(i, _)| i)
            .collect();
        self.visible_for = Some(key);
    }

    /// Positions of the listed findings (after filters).
    pub fn visible(&mut self) -> &[usize] {
        self.update_visible();
        &self.visible
    }

    /// Selects a finding; the app then selects its rows.
    pub fn select(&mut self, index: usize) -> Option<ExpertAction> {
        let f = self.findings.get(index)?;
        self.selected = Some(index);
        (!f.rows.is_empty()).then(|| ExpertAction::SelectRows(f.rows.clone()))
    }

    pub fn ui(&mut self, ui: &mut Ui, _model: &SessionModel) -> Option<ExpertAction> {
        let mut action = None;
        ui.horizontal(|ui| {
            for sev in [Severity::Error, Severity::Warning, Severity::Info] {
                let n = self.count(sev);
                let text = RichText::new(format!("{n} {}", plural(sev, n)));
                ui.label(if n > 0 {
                    text.color(theme::severity_color(sev))
                } else {
                    text.weak()
                });
            }
            ui.separator();
            egui::ComboBox::from_id_salt("expert-min-severity")
                .selected_text(format!("{} and worse", self.min_severity.as_str()))
                .show_ui(ui, |ui| {
                    for sev in [Severity::Info, Severity::Warning, Severity::Error] {
                        ui.selectable_value(&mut self.min_severity, sev, format!("{} and worse", sev.as_str()));
                    }
                });
            ui.add(
                egui::TextEdit::singleline(&mut self.text_filter)
                    .hint_text("rule or words")
                    .desired_width(140.0),
            );
            if self.busy() {
                ui.spinner();
            }
            if ui
                .button("Lint again")
                .on_hover_text("Lint the whole session again from its first line")
                .clicked()
            {
                self.request_run();
            }
            match self.lines_linted {
                Some(lines) => ui.weak(format!(
                    "{lines} frames and stderr lines linted ({:.0} ms)",
                    self.took.as_secs_f64() * 1000.0
                )),
                None => ui.weak("not linted yet"),
            };
        });
        if let Some(e) = &self.error {
            ui.label(RichText::new(format!("lint failed: {e}")).color(theme::ERROR));
        }
        self.update_visible();
        if self.findings.is_empty() && self.lines_linted.is_some() {
            ui.label(RichText::new("✔ no findings: nothing looks wrong in this session").color(theme::OK));
            return None;
        }
        // The selected finding in full, wrapped: the list keeps one line a
        // finding (it is virtualised), the sentence is read here.
        if let Some(f) = self.selected.and_then(|i| self.findings.get(i)) {
            egui::Frame::group(ui.style()).show(ui, |ui| {
                ui.set_width(ui.available_width());
                ui.add(
                    egui::Label::new(
                        RichText::new(format!("[{}] {}", f.finding.rule, f.finding.message))
                            .color(theme::severity_color(f.finding.severity)),
                    )
                    .wrap(),
                );
            });
        }
        let row_h = ui.text_style_height(&egui::TextStyle::Body) + 4.0;
        let visible = std::mem::take(&mut self.visible);
        egui::ScrollArea::vertical()
            .id_salt("expert-findings")
            .auto_shrink([false, false])
            .show_rows(ui, row_h, visible.len(), |ui, range| {
                for &i in &visible[range] {
                    let f = &self.findings[i];
                    let glyph = match f.finding.severity {
                        Severity::Error => "✖",
                        Severity::Warning => "⚠",
                        _ => "•",
                    };
                    let rows = match f.rows.as_slice() {
                        [] => String::new(),
                        [r] => format!("row {r}"),
                        [r, rest @ ..] => format!("rows {r} +{}", rest.len()),
                    };
                    let text = format!(
                        "{glyph} [{}] {rows}: {}",
                        f.finding.rule,
                        mcpscope_core::text::shorten(&f.finding.message, 300)
                    );
                    let resp = ui
                        .add(
                            egui::Button::selectable(
                                self.selected == Some(i),
                                RichText::new(text).color(theme::severity_color(f.finding.severity)),
                            )
                            .truncate(),
                        )
                        .on_hover_text(&f.finding.message);
                    if resp.clicked() {
                        action = self.select(i);
                    }
                }
            });
        self.visible = visible;
        action
    }
}

fn plural(s: Severity, n: usize) -> &'static str {
    match (s, n == 1) {
        (Severity::Error, true) => "error",
        (Severity::Error, false) => "errors",
        (Severity::Warning, true) => "warning",
        (Severity::Warning, false) => "warnings",
        (_, true) => "note",
        (_, false) => "notes",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpscope_core::timeline::replay::Replay;
    use mcpscope_core::transport::recorder::Recorder;
    use mcpscope_core::wire::classify::Limits;
    use mcpscope_core::wire::frame::Direction;
    use mcpscope_core::wire::framing::{LineEnding, RawLine};

    fn model(lines: &[(Direction, &str)]) -> SessionModel {
        let mut r = Replay::new();
        for (i, (d, l)) in lines.iter().enumerate() {
            if i == 1 {
                r.note("a meta row shifts row numbers");
            }
            r.line(*d, l.as_bytes());
        }
        r.model()
    }

    fn waiting(panel: &mut ExpertPanel, m: &SessionModel, capture: Option<&PathBuf>) {
        let waker: Arc<dyn Fn() + Send + Sync> = Arc::new(|| {});
        let deadline = Instant::now() + Duration::from_secs(10);
        panel.next_step = None;
        panel.poll(m, capture, true, &waker);
        while panel.poll(m, capture, true, &waker) {
            assert!(Instant::now() < deadline, "lint did not finish");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_fifo_in_the_captures_place_is_refused_not_waited_on() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("capture.jsonl");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let (tx, rx) = crossbeam_channel::bounded(1);
        let path = fifo.clone();
        std::thread::spawn(move || {
            let mut reader = None;
            let mut linter = Linter::new(LintOptions::default());
            let _ = tx.send(read_new(&mut reader, &path, false, &mut linter).map_err(|e| format!("{e:#}")));
        });
        let got = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("reading a FIFO blocked the lint worker");
        let e = got.unwrap_err();
        assert!(e.contains("FIFO") && e.contains("cannot open capture"), "{e}");
    }

    #[test]
    fn findings_resolve_to_rows_and_mark_the_timeline() {
        let m = model(&[
            (Direction::Out, r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
            (Direction::In, "Server listening on stdio"),
            (Direction::In, r#"{"jsonrpc":"2.0","id":7,"result":{}}"#),
        ]);
        let mut p = ExpertPanel::default();
        waiting(&mut p, &m, None);
        let not_json = p
            .findings
            .iter()
            .find(|f| f.finding.rule == lint::rule::NOT_JSON)
            .expect("the log line is a finding");
        assert_eq!(not_json.rows, [2], "row 1 is the meta row");
        let unknown = p
            .findings
            .iter()
            .position(|f| f.finding.rule == lint::rule::UNKNOWN_RESPONSE_ID)
            .expect("id 7 was never sent");
        assert_eq!(p.marks.get(&2), Some(&Severity::Error));
        assert_eq!(p.select(unknown), Some(ExpertAction::SelectRows(vec![3])));
        // Nothing changed: no second run.
        assert!(!p.poll(&m, None, true, &(Arc::new(|| {}) as Arc<dyn Fn() + Send + Sync>)));
    }

    #[test]
    fn a_capture_is_linted_with_seqs_resolved_through_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        let header = mcpscope_core::record::capture::Header::for_spec(
            &mcpscope_core::transport::process::ServerSpec::new("x", Vec::<String>::new()),
            "t",
        );
        let mut w = mcpscope_core::record::capture::Writer::open(&path, &header).unwrap();
        let mut rec = Recorder::replay(Limits::default());
        let mut events = vec![Event::Note {
            at: Duration::ZERO,
            text: "note".into(),
        }];
        events.push(Event::Stderr(rec.stderr_at(
            RawLine {
                bytes: b"Traceback (most recent call last):".to_vec(),
                ending: LineEnding::Lf,
            },
            Duration::ZERO,
        )));
        events.push(Event::Frame(rec.frame_at(
            Direction::In,
            RawLine {
                bytes: br#"{"jsonrpc":"1.0","method":"x"}"#.to_vec(),
                ending: LineEnding::Lf,
            },
            Duration::ZERO,
            None,
        )));
        for e in &events {
            w.write(e).unwrap();
        }
        w.flush().unwrap();
        drop(w);
        let loaded = mcpscope_core::record::capture::load(&path).unwrap();
        let m = SessionModel::from_capture(path.clone(), &loaded);
        let mut p = ExpertPanel::default();
        waiting(&mut p, &m, Some(&path));
        let rows = |rule: &str| {
            p.findings
                .iter()
                .find(|f| f.finding.rule == rule)
                .map(|f| f.rows.clone())
        };
        assert_eq!(rows(lint::rule::STDERR_ERROR), Some(vec![1]));
        assert_eq!(rows(lint::rule::WRONG_JSONRPC), Some(vec![2]));
        p.min_severity = Severity::Error;
        let visible = p.visible().to_vec();
        let listed: Vec<_> = visible.iter().map(|&i| p.findings[i].finding.severity).collect();
        assert!(!listed.is_empty() && listed.iter().all(|s| *s == Severity::Error));
    }

    /// Issue #14: findings stay current as rows arrive, at any size (the
    /// panel used to stop linting live sessions above 200,000 rows and keep
    /// a stale result), and a request in flight is not "unanswered".
    #[test]
    fn a_live_session_is_linted_as_rows_arrive_at_any_size() {
        let mut r = Replay::new().without_events();
        let mut m = SessionModel::new(mcpscope_core::timeline::model::Source::Live {
            command_line: "flood".into(),
        });
        let add = |m: &mut SessionModel, r: &mut Replay, d: Direction, line: &str| {
            let f = r.frame(d, line.as_bytes());
            m.apply(&Event::Frame(f));
        };
        add(
            &mut m,
            &mut r,
            Direction::Out,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        );
        for _ in 0..200_005 {
            add(
                &mut m,
                &mut r,
                Direction::In,
                r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}"#,
            );
        }
        let mut p = ExpertPanel::default();
        waiting(&mut p, &m, None);
        assert_eq!(p.lines_linted(), Some(200_006));
        assert!(
            !p.findings
                .iter()
                .any(|f| f.finding.rule == lint::rule::UNANSWERED_REQUEST),
            "tools/list is in flight, not missing"
        );
        // More rows: only they are linted, and the findings follow.
        add(&mut m, &mut r, Direction::In, "Server log line on stdout");
        add(
            &mut m,
            &mut r,
            Direction::Out,
            r#"{"jsonrpc":"2.0","id":2,"method":"prompts/list"}"#,
        );
        add(
            &mut m,
            &mut r,
            Direction::In,
            r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#,
        );
        waiting(&mut p, &m, None);
        assert_eq!(p.lines_linted(), Some(200_009));
        assert!(p.findings.iter().any(|f| f.finding.rule == lint::rule::NOT_JSON));
        assert!(
            !p.findings
                .iter()
                .any(|f| f.finding.rule == lint::rule::UNANSWERED_REQUEST)
        );
        // Once the session is over, what never got an answer is reported.
        m.closed = true;
        waiting(&mut p, &m, None);
        let unanswered: Vec<_> = p
            .findings
            .iter()
            .filter(|f| f.finding.rule == lint::rule::UNANSWERED_REQUEST)
            .collect();
        assert_eq!(unanswered.len(), 1, "prompts/list #2 only");
        assert_eq!(unanswered[0].rows, [200_007]);
        assert_eq!(p.marks.get(&200_007), Some(&Severity::Warning));
    }
}
