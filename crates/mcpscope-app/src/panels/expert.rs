//! The Expert panel: protocol lint findings for the session on screen.
//!
//! Lint runs on a worker thread over the session's capture (live sessions
//! append theirs as they go), so the UI thread never parses a million frames.
//! A live session is linted again when new rows arrive, no more often than a
//! multiple of the previous run's duration.

use crate::theme;
use crossbeam_channel::{Receiver, bounded};
use egui::{RichText, Ui};
use mcpscope_core::analysis::lint::{self, Finding, LintOptions, Severity};
use mcpscope_core::record::model::SessionModel;
use mcpscope_core::record::store::Lane;
use mcpscope_core::transport::event::{Event, StderrLine};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Above this many rows a live session is linted only when asked: each run
/// re-reads the whole capture.
pub const AUTO_LINT_MAX_ROWS: usize = 200_000;

/// What a lint run reads.
pub enum LintSource {
    /// A capture file; findings name event seqs, resolved through the store.
    Capture(PathBuf),
    /// Events rebuilt from the store, whose seqs are row indices.
    Rows(Vec<Event>),
}

impl LintSource {
    /// The best source for a model: its capture if it has one, else its rows.
    pub fn for_model(model: &SessionModel, capture: Option<&PathBuf>) -> LintSource {
        match capture {
            Some(p) => LintSource::Capture(p.clone()),
            None => LintSource::Rows(events_from_rows(model)),
        }
    }
}

/// The store's frames and stderr lines as events, numbered by row.
pub fn events_from_rows(model: &SessionModel) -> Vec<Event> {
    model
        .store
        .iter()
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
            Lane::Meta => None,
        })
        .collect()
}

struct LintOutcome {
    findings: Result<Vec<Finding>, String>,
    seqs_are_rows: bool,
    took: Duration,
    /// Rows the linted events make (a live capture on disk may trail the UI).
    rows_seen: Option<usize>,
}

struct LintJob {
    rx: Receiver<LintOutcome>,
    rows_at_start: usize,
}

/// A finding with the rows it is about.
#[derive(Clone, Debug)]
pub struct ShownFinding {
    pub finding: Finding,
    pub rows: Vec<usize>,
}

/// What the panel asks the app to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExpertAction {
    /// Select these rows on the timeline (the first one in the detail view).
    SelectRows(Vec<usize>),
}

pub struct ExpertPanel {
    pub findings: Vec<ShownFinding>,
    /// Bumped whenever `findings` is replaced.
    pub generation: u64,
    /// The most severe finding per row, for the timeline's markers.
    pub marks: HashMap<usize, Severity>,
    pub options: LintOptions,
    /// Only findings at least this severe are listed.
    pub min_severity: Severity,
    pub text_filter: String,
    pub selected: Option<usize>,
    pub error: Option<String>,
    job: Option<LintJob>,
    rows_linted: Option<usize>,
    closed_linted: bool,
    last_took: Duration,
    next_run: Option<Instant>,
    /// When a run that is not allowed yet becomes due.
    wakeup: Option<Instant>,
    run_requested: bool,
    /// Positions in `findings` that pass the filters.
    visible: Vec<usize>,
    visible_for: Option<(Severity, String, usize)>,
}

impl Default for ExpertPanel {
    fn default() -> Self {
        Self {
            findings: Vec::new(),
            generation: 0,
            marks: HashMap::new(),
            options: LintOptions::default(),
            min_severity: Severity::Info,
            text_filter: String::new(),
            selected: None,
            error: None,
            job: None,
            rows_linted: None,
            closed_linted: false,
            last_took: Duration::ZERO,
            next_run: None,
            wakeup: None,
            run_requested: false,
            visible: Vec::new(),
            visible_for: None,
        }
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
        self.job.is_some()
    }

    /// When the next run is allowed, if one is waiting for it.
    pub fn wakeup(&self) -> Option<Instant> {
        self.wakeup
    }

    /// Asks for a run now, whatever the size of the session.
    pub fn request_run(&mut self) {
        self.run_requested = true;
    }

    pub fn count(&self, severity: Severity) -> usize {
        self.findings.iter().filter(|f| f.finding.severity == severity).count()
    }

    /// Collects a finished run and starts another when the session changed.
    /// Returns true while a run is in progress.
    pub fn poll(
        &mut self,
        model: &SessionModel,
        capture: Option<&PathBuf>,
        waker: &Arc<dyn Fn() + Send + Sync>,
    ) -> bool {
        if let Some(job) = &self.job
            && let Ok(outcome) = job.rx.try_recv()
        {
            let rows = job.rows_at_start;
            self.job = None;
            self.finish(model, outcome, rows);
        }
        if self.job.is_some() {
            return true;
        }
        let closed = model.closed || model.exit.is_some() || !model.is_live();
        let changed = self.rows_linted != Some(lintable_rows(model)) || self.closed_linted != closed;
        let due = self.next_run.is_none_or(|t| Instant::now() >= t);
        let automatic = model.store.len() <= AUTO_LINT_MAX_ROWS && changed && due;
        if !(automatic || self.run_requested) {
            // A run that is not allowed yet is due later: the app asks for a
            // frame then ([`ExpertPanel::wakeup`]).
            self.wakeup = (changed && !due).then_some(self.next_run).flatten();
            return false;
        }
        self.wakeup = None;
        self.run_requested = false;
        self.closed_linted = closed;
        self.start(model, capture, Arc::clone(waker));
        true
    }

    fn start(&mut self, model: &SessionModel, capture: Option<&PathBuf>, waker: Arc<dyn Fn() + Send + Sync>) {
        let source = LintSource::for_model(model, capture);
        let options = self.options.clone();
        let (tx, rx) = bounded(1);
        let spawned = std::thread::Builder::new().name("mcpscope-lint".into()).spawn(move || {
            let _ = tx.send(run_lint(source, &options));
            waker();
        });
        match spawned {
            Ok(_) => {
                self.job = Some(LintJob {
                    rx,
                    rows_at_start: lintable_rows(model),
                })
            }
            Err(e) => self.error = Some(format!("cannot start the lint thread: {e}")),
        }
    }

    fn finish(&mut self, model: &SessionModel, outcome: LintOutcome, rows: usize) {
        self.rows_linted = Some(outcome.rows_seen.unwrap_or(rows).min(rows));
        self.last_took = outcome.took;
        self.next_run = Some(Instant::now() + (outcome.took * 4).max(Duration::from_millis(500)));
        match outcome.findings {
            Err(e) => self.error = Some(e),
            Ok(findings) => {
                self.error = None;
                self.set_findings(model, findings, outcome.seqs_are_rows);
            }
        }
    }

    /// Resolves each finding's seqs to rows and rebuilds the timeline marks.
    pub fn set_findings(&mut self, model: &SessionModel, findings: Vec<Finding>, seqs_are_rows: bool) {
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
        self.findings = findings
            .into_iter()
            .map(|f| ShownFinding {
                rows: f.seqs.iter().filter_map(|&s| resolve(s)).collect(),
                finding: f,
            })
            .collect();
        self.marks.clear();
        for f in &self.findings {
            for &r in &f.rows {
                let m = self.marks.entry(r).or_insert(f.finding.severity);
                *m = (*m).max(f.finding.severity);
            }
        }
        self.selected = keep_selected.and_then(|(rule, seqs)| {
            self.findings
                .iter()
                .position(|f| f.finding.rule == rule && f.finding.seqs == seqs)
        });
        self.visible_for = None;
        self.generation += 1;
    }

    fn update_visible(&mut self) {
        let key = (self.min_severity, self.text_filter.to_lowercase(), self.findings.len());
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

    pub fn ui(&mut self, ui: &mut Ui, model: &SessionModel) -> Option<ExpertAction> {
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
                ui.weak("linting…");
            } else if ui.button("Lint now").clicked() {
                self.request_run();
            }
            match self.rows_linted {
                Some(rows) => ui.weak(format!(
                    "{rows} frames and stderr lines linted in {:.0} ms",
                    self.last_took.as_secs_f64() * 1000.0
                )),
                None if model.store.len() > AUTO_LINT_MAX_ROWS => {
                    ui.weak(format!("over {AUTO_LINT_MAX_ROWS} rows: lint runs when asked"))
                }
                None => ui.weak("not linted yet"),
            };
        });
        if let Some(e) = &self.error {
            ui.label(RichText::new(format!("lint failed: {e}")).color(theme::ERROR));
        }
        self.update_visible();
        if self.findings.is_empty() && self.rows_linted.is_some() {
            ui.label(RichText::new("✔ no findings: nothing looks wrong in this session").color(theme::OK));
            return None;
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

/// Frames and stderr lines: what lint reads (meta rows are the app's own).
fn lintable_rows(model: &SessionModel) -> usize {
    let c = &model.counts;
    c.requests + c.notifications + c.results + c.errors + c.not_jsonrpc + c.stderr
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

fn run_lint(source: LintSource, options: &LintOptions) -> LintOutcome {
    let started = Instant::now();
    let (findings, seqs_are_rows, rows_seen) = match source {
        LintSource::Capture(path) => match mcpscope_core::record::capture::load(&path) {
            Ok(loaded) => {
                let rows = loaded
                    .events
                    .iter()
                    .filter(|e| matches!(e, Event::Frame(_) | Event::Stderr(_)))
                    .count();
                // Each session of a capture is linted on its own (ids and
                // the handshake start again at a session boundary).
                let findings = (0..loaded.sessions.len())
                    .flat_map(|i| lint::lint(loaded.session_events(i), options))
                    .collect();
                (Ok(findings), false, Some(rows))
            }
            Err(e) => (Err(format!("{e:#}")), false, None),
        },
        LintSource::Rows(events) => (Ok(lint::lint(&events, options)), true, None),
    };
    LintOutcome {
        findings,
        seqs_are_rows,
        took: started.elapsed(),
        rows_seen,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpscope_core::record::recorder::Recorder;
    use mcpscope_core::record::replay::Replay;
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
        panel.poll(m, capture, &waker);
        while panel.poll(m, capture, &waker) {
            assert!(Instant::now() < deadline, "lint did not finish");
            std::thread::sleep(Duration::from_millis(5));
        }
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
        assert!(!p.poll(&m, None, &(Arc::new(|| {}) as Arc<dyn Fn() + Send + Sync>)));
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
}
