//! The Statistics tab: Wireshark's Statistics menu for the session on
//! screen, one tab per table (Conversations, Endpoints, Response times,
//! I/O graph, Expert Info, Context cost). Each row's display filter is a
//! click away; a click on the I/O graph goes to that moment on the
//! timeline.
//!
//! The numbers come from a worker that owns the session's
//! [`mcpscope_core::stats::capture::Following`] and reads only what the
//! session gained since its last step, at most twice a second while rows
//! stream in: the UI thread only hands over the step and draws the report.

mod table;
mod worker;

use crate::panels::expert::ExpertPanel;
use crate::theme;
use egui::{RichText, Ui};
use egui_plot::{Legend, Line, Plot, PlotPoints};
use mcpscope_core::analysis::context_cost::Budget;
use mcpscope_core::stats::{self, By, ExpertGroup, Report};
use mcpscope_core::timeline::model::SessionModel;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use table::{Cell, Row, Sort, table_ui};
use worker::{Config, Source, Step, Worker};

/// At most this often while rows stream in.
const STEP_INTERVAL: Duration = Duration::from_millis(500);

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StatsTab {
    #[default]
    Conversations,
    Endpoints,
    ResponseTimes,
    IoGraph,
    ExpertInfo,
    Context,
}

impl StatsTab {
    const ALL: [StatsTab; 6] = [
        StatsTab::Conversations,
        StatsTab::Endpoints,
        StatsTab::ResponseTimes,
        StatsTab::IoGraph,
        StatsTab::ExpertInfo,
        StatsTab::Context,
    ];

    fn label(self) -> &'static str {
        match self {
            StatsTab::Conversations => "Conversations",
            StatsTab::Endpoints => "Endpoints",
            StatsTab::ResponseTimes => "Response times",
            StatsTab::IoGraph => "I/O graph",
            StatsTab::ExpertInfo => "Expert Info",
            StatsTab::Context => "Context cost",
        }
    }

    fn index(self) -> usize {
        Self::ALL.iter().position(|t| *t == self).unwrap_or(0)
    }
}

/// What the I/O graph plots.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IoMetric {
    #[default]
    Frames,
    Bytes,
    Latency,
}

/// What the panel asks the app to do.
#[derive(Clone, Debug, PartialEq)]
pub enum StatsAction {
    /// Apply this display filter to the timeline.
    Filter(String),
    /// Select the first row at or after this time on the timeline.
    ShowMoment(Duration),
    /// The lint budgets for context-budget changed (the Expert panel lints again).
    Budget(Budget),
}

const INTERVALS: [(Duration, &str); 7] = [
    (Duration::from_millis(1), "1 ms"),
    (Duration::from_millis(10), "10 ms"),
    (Duration::from_millis(100), "100 ms"),
    (Duration::from_secs(1), "1 s"),
    (Duration::from_secs(5), "5 s"),
    (Duration::from_secs(10), "10 s"),
    (Duration::from_secs(60), "1 min"),
];

pub struct StatsPanel {
    pub tab: StatsTab,
    pub by: By,
    pub interval: Duration,
    /// The I/O graph's series as typed (at most five).
    pub series: Vec<String>,
    /// Count only what the timeline's display filter keeps.
    pub limit_to_filter: bool,
    pub metric: IoMetric,
    pub report: Option<Report>,
    /// Bumped whenever `report` changes.
    pub generation: u64,
    pub error: Option<String>,
    /// Records the numbers are over, and the time spent on them.
    pub records: u64,
    took: Duration,
    sorts: [Sort; 6],
    worker: Option<Worker>,
    in_flight: bool,
    /// What the last step was for: rows, whether the session was over, the config.
    stepped_for: Option<(usize, bool, Config)>,
    rows_sent: usize,
    next_step: Option<Instant>,
    wakeup: Option<Instant>,
    /// Expert Info's groups and the Expert panel generation they are of.
    groups: Option<(u64, Vec<ExpertGroup>)>,
    /// The series being typed (applied with Enter or the button).
    series_draft: Vec<String>,
}

impl Default for StatsPanel {
    fn default() -> Self {
        Self {
            tab: StatsTab::default(),
            by: By::Method,
            interval: Duration::from_secs(1),
            series: Vec::new(),
            limit_to_filter: false,
            metric: IoMetric::Frames,
            report: None,
            generation: 0,
            error: None,
            records: 0,
            took: Duration::ZERO,
            sorts: [Sort::default(); 6],
            worker: None,
            in_flight: false,
            stepped_for: None,
            rows_sent: 0,
            next_step: None,
            wakeup: None,
            groups: None,
            series_draft: Vec::new(),
        }
    }
}

impl StatsPanel {
    /// A new session: the numbers go, the settings stay.
    pub fn reset(&mut self) {
        *self = StatsPanel {
            tab: self.tab,
            by: self.by,
            interval: self.interval,
            series: std::mem::take(&mut self.series),
            series_draft: std::mem::take(&mut self.series_draft),
            limit_to_filter: self.limit_to_filter,
            metric: self.metric,
            sorts: self.sorts,
            generation: self.generation + 1,
            ..StatsPanel::default()
        };
    }

    /// When the next step is allowed, if one is waiting for it.
    pub fn wakeup(&self) -> Option<Instant> {
        self.wakeup
    }

    pub fn busy(&self) -> bool {
        self.in_flight
    }

    /// o200k tokens of each listed tool's definition, for the composer.
    pub fn tool_tokens(&self) -> HashMap<String, u64> {
        let Some(r) = &self.report else { return HashMap::new() };
        r.context
            .listings
            .iter()
            .filter(|l| l.kind == mcpscope_core::analysis::context_cost::DefinitionKind::Tool)
            .flat_map(|l| l.cost.definitions.iter().map(|d| (d.name.clone(), d.tokens.o200k)))
            .collect()
    }

    fn config(&self, display_filter: &str, name: &str) -> Config {
        let filter = display_filter.trim();
        Config {
            interval: self.interval,
            series: self.series.clone(),
            filter: (self.limit_to_filter && !filter.is_empty()).then(|| filter.to_owned()),
            name: name.to_owned(),
        }
    }

    /// Collects a finished step and starts the next when the session or
    /// the settings changed. `ready` is false while a capture is still being
    /// loaded. Returns true while a step runs.
    pub fn poll(
        &mut self,
        model: &SessionModel,
        capture: Option<&PathBuf>,
        ready: bool,
        display_filter: &str,
        name: &str,
        waker: &Arc<dyn Fn() + Send + Sync>,
    ) -> bool {
        if let Some(w) = &self.worker
            && let Some(outcome) = w.outcomes.try_recv()
        {
            self.in_flight = false;
            self.took += outcome.took;
            // `MCPSCOPE_STATS_TRACE=1`: each step on stderr, for the figures in BENCHMARKS.md.
            if std::env::var_os("MCPSCOPE_STATS_TRACE").is_some() {
                eprintln!(
                    "stats-trace: step over {} records took {:.0} ms ({:.0} ms in all)",
                    outcome.records,
                    outcome.took.as_secs_f64() * 1e3,
                    self.took.as_secs_f64() * 1e3
                );
            }
            self.error = outcome.error;
            if self.error.is_none() {
                self.records = outcome.records;
                self.report = Some(outcome.report);
                self.generation += 1;
            }
            // The worker let go of a finished session's state: its memory goes back.
            if self.stepped_for.as_ref().is_some_and(|(_, over, _)| *over) {
                crate::memory::give_back();
            }
        }
        if self.in_flight || !ready {
            return self.in_flight;
        }
        let config = self.config(display_filter, name);
        let session_over = model.closed || model.exit.is_some() || !model.is_live();
        let key = (model.store.len(), session_over, config.clone());
        if self.stepped_for.as_ref() == Some(&key) {
            self.wakeup = None;
            return false;
        }
        let changed = self.stepped_for.as_ref().is_some_and(|(_, _, c)| *c != config);
        let due = self.next_step.is_none_or(|t| Instant::now() >= t);
        let just_ended = session_over && self.stepped_for.as_ref().is_some_and(|(_, over, _)| !over);
        if !(due || just_ended || changed) {
            self.wakeup = self.next_step;
            return false;
        }
        self.wakeup = None;
        if changed {
            // The worker starts over for a new config: the rows go again too.
            self.rows_sent = 0;
        }
        if self.worker.is_none() {
            match Worker::spawn(waker.clone()) {
                Ok(w) => self.worker = Some(w),
                Err(e) => {
                    self.error = Some(e.0);
                    return false;
                }
            }
        }
        let source = match capture {
            Some(path) => Source::Capture(path.clone()),
            None => {
                let events = crate::panels::expert::events_from_rows(model, self.rows_sent);
                self.rows_sent = model.store.len();
                Source::Rows(events)
            }
        };
        let sent = self.worker.as_ref().is_some_and(|w| {
            w.send(Step {
                config,
                source,
                session_over,
            })
        });
        if !sent {
            self.worker = None;
            self.error = Some("the statistics worker stopped".into());
            return false;
        }
        self.in_flight = true;
        self.stepped_for = Some(key);
        self.next_step = Some(Instant::now() + STEP_INTERVAL);
        true
    }

    pub fn ui(&mut self, ui: &mut Ui, expert: &ExpertPanel, session_name: &str) -> Option<StatsAction> {
        let mut action = None;
        ui.horizontal_wrapped(|ui| {
            for t in StatsTab::ALL {
                ui.selectable_value(&mut self.tab, t, t.label());
            }
            ui.separator();
            ui.checkbox(&mut self.limit_to_filter, "Limit to display filter")
                .on_hover_text("count only what the timeline's filter keeps, as `mcpscope stats --filter` does");
            let status = match (&self.error, self.in_flight) {
                (Some(e), _) => RichText::new(e).color(theme::ERROR),
                (None, true) => RichText::new("computing…").weak(),
                (None, false) => RichText::new(format!(
                    "{} records, {:.0} ms of work",
                    self.records,
                    self.took.as_secs_f64() * 1e3
                ))
                .weak(),
            };
            ui.label(status);
        });
        ui.separator();
        let tab = self.tab;
        let sort_index = tab.index();
        if tab == StatsTab::ExpertInfo {
            return self.expert_ui(ui, expert, session_name);
        }
        let Some(report) = self.report.take() else {
            ui.weak("No statistics yet.");
            return None;
        };
        let mut sort = self.sorts[sort_index];
        match tab {
            StatsTab::Conversations => {
                let mut rows = conversation_rows(&report);
                sort.apply(&mut rows);
                let head = [
                    "session",
                    "client",
                    "server",
                    "transport",
                    "era",
                    "duration",
                    "requests",
                    "notif out",
                    "notif in",
                    "srv requests",
                    "bytes out",
                    "bytes in",
                    "errors",
                    "isError",
                    "unanswered",
                ];
                action = table_ui(ui, "stats-conversations", &head, &rows, &mut sort).map(StatsAction::Filter);
            }
            StatsTab::Endpoints => {
                let mut rows = endpoint_rows(&report);
                sort.apply(&mut rows);
                let head = [
                    "role",
                    "name",
                    "sessions",
                    "requests",
                    "bytes out",
                    "bytes in",
                    "errors",
                    "isError",
                    "unanswered",
                    "duration",
                ];
                action = table_ui(ui, "stats-endpoints", &head, &rows, &mut sort).map(StatsAction::Filter);
            }
            StatsTab::ResponseTimes => action = self.srt_ui(ui, &report, &mut sort),
            StatsTab::IoGraph => action = self.io_ui(ui, &report),
            StatsTab::Context => action = context_ui(ui, &report, expert, &mut sort),
            StatsTab::ExpertInfo => {}
        }
        self.sorts[sort_index] = sort;
        self.report = Some(report);
        action
    }

    fn srt_ui(&mut self, ui: &mut Ui, report: &Report, sort: &mut Sort) -> Option<StatsAction> {
        ui.horizontal(|ui| {
            ui.label("rows per");
            ui.selectable_value(&mut self.by, By::Method, "method");
            ui.selectable_value(&mut self.by, By::Tool, "tool");
            ui.selectable_value(&mut self.by, By::Prompt, "prompt");
            ui.selectable_value(&mut self.by, By::Resource, "resource");
        });
        let mut rows: Vec<Row> = stats::rows_by(&report.srt, self.by)
            .into_iter()
            .map(|r| Row {
                cells: vec![
                    Cell::text(if r.detail.is_empty() {
                        r.method.clone()
                    } else {
                        format!("  {}", r.detail)
                    }),
                    Cell::num(r.requests),
                    Cell::num(r.errors),
                    Cell::num(r.tool_errors),
                    Cell::num(r.unanswered),
                    Cell::micros(r.min_us),
                    Cell::micros(r.p50_us),
                    Cell::micros(r.p90_us),
                    Cell::micros(r.p95_us),
                    Cell::micros(r.p99_us),
                    Cell::micros(r.max_us),
                    Cell::micros(r.mean_us),
                    Cell::num(r.by_stream),
                    Cell::num(r.by_json),
                ],
                filter: Some(r.filter()),
                color: (r.errors + r.tool_errors > 0).then_some(theme::WARN),
            })
            .collect();
        sort.apply(&mut rows);
        if rows.is_empty() {
            ui.weak("No requests yet.");
            return None;
        }
        let head = [
            "method / name",
            "requests",
            "errors",
            "isError",
            "unanswered",
            "min",
            "p50",
            "p90",
            "p95",
            "p99",
            "max",
            "mean",
            "stream",
            "json",
        ];
        table_ui(ui, "stats-srt", &head, &rows, sort).map(StatsAction::Filter)
    }

    fn io_ui(&mut self, ui: &mut Ui, report: &Report) -> Option<StatsAction> {
        let mut action = None;
        ui.horizontal_wrapped(|ui| {
            ui.label("interval");
            let current = INTERVALS
                .iter()
                .find(|(d, _)| *d == self.interval)
                .map_or("1 s", |(_, l)| l);
            egui::ComboBox::from_id_salt("stats-interval")
                .selected_text(current)
                .show_ui(ui, |ui| {
                    for (d, l) in INTERVALS {
                        ui.selectable_value(&mut self.interval, d, l);
                    }
                });
            ui.separator();
            ui.selectable_value(&mut self.metric, IoMetric::Frames, "frames/s");
            ui.selectable_value(&mut self.metric, IoMetric::Bytes, "bytes/s");
            ui.selectable_value(&mut self.metric, IoMetric::Latency, "latency (mean)");
        });
        // The series: display filters, typed and applied together.
        if self.series_draft.len() != self.series.len() && self.series_draft.is_empty() {
            self.series_draft = self.series.clone();
        }
        let mut apply = false;
        let mut remove = None;
        for (i, s) in self.series_draft.iter_mut().enumerate() {
            ui.horizontal(|ui| {
                let l = ui.label(RichText::new(format!("series {}", i + 1)).color(series_color(i)));
                let r = ui
                    .add(
                        egui::TextEdit::singleline(s)
                            .desired_width(360.0)
                            .hint_text("display filter"),
                    )
                    .labelled_by(l.id);
                apply |= r.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
                if ui.small_button("remove").clicked() {
                    remove = Some(i);
                }
                if let Err(e) = mcpscope_core::filter::Filter::parse(s)
                    && !s.trim().is_empty()
                {
                    ui.label(RichText::new(e.to_string()).color(theme::ERROR));
                }
            });
        }
        if let Some(i) = remove {
            self.series_draft.remove(i);
            apply = true;
        }
        ui.horizontal(|ui| {
            if self.series_draft.len() < stats::MAX_SERIES && ui.button("Add series").clicked() {
                self.series_draft.push(String::new());
            }
            apply |= ui.button("Apply series").clicked();
        });
        if apply {
            let valid: Vec<String> = self
                .series_draft
                .iter()
                .filter(|s| !s.trim().is_empty() && mcpscope_core::filter::Filter::parse(s).is_ok())
                .cloned()
                .collect();
            self.series = valid;
        }
        let io = &report.io;
        if io.is_empty() {
            ui.weak("Nothing to plot yet.");
            return None;
        }
        let interval_s = io.interval_us as f64 / 1e6;
        let metric = self.metric;
        let value = |b: &stats::Bucket| match metric {
            IoMetric::Frames => b.frames as f64 / interval_s,
            IoMetric::Bytes => b.bytes as f64 / interval_s,
            IoMetric::Latency => b.latency_mean_us() as f64 / 1000.0,
        };
        let y_label = match metric {
            IoMetric::Frames => "records per second",
            IoMetric::Bytes => "bytes per second",
            IoMetric::Latency => "mean latency of answers (ms)",
        };
        let response = Plot::new("stats-io")
            .height((ui.available_height() - 8.0).max(120.0))
            .legend(Legend::default().position(egui_plot::Corner::LeftTop))
            .x_axis_label("time (s)")
            .y_axis_label(y_label)
            .include_y(0.0)
            .show(ui, |p| {
                for (i, s) in io.series.iter().enumerate() {
                    let points: PlotPoints = (0..io.len())
                        .map(|b| [b as f64 * interval_s, value(&io.bucket(i, b))])
                        .collect();
                    let name = if s.expr.is_empty() {
                        "all records".to_owned()
                    } else {
                        s.expr.clone()
                    };
                    p.line(Line::new(name, points).color(series_color(i)));
                }
                p.response().clicked().then(|| p.pointer_coordinate()).flatten()
            });
        if let Some(at) = response.inner
            && at.x >= 0.0
        {
            action = Some(StatsAction::ShowMoment(Duration::from_secs_f64(at.x)));
        }
        if io.beyond > 0 {
            ui.weak(format!(
                "{} records past the last interval drawn: choose a longer interval",
                io.beyond
            ));
        }
        action
    }

    fn expert_ui(&mut self, ui: &mut Ui, expert: &ExpertPanel, session_name: &str) -> Option<StatsAction> {
        if self.groups.as_ref().is_none_or(|(g, _)| *g != expert.generation) {
            let groups = stats::group_findings(expert.findings.iter().map(|f| (session_name, &f.finding)));
            self.groups = Some((expert.generation, groups));
        }
        let groups = &self.groups.as_ref().expect("set above").1;
        if groups.is_empty() {
            ui.weak("No findings.");
            return None;
        }
        let mut rows: Vec<Row> = groups
            .iter()
            .map(|g| Row {
                cells: vec![
                    Cell {
                        text: g.severity.as_str().to_owned(),
                        key: table::Key::Num(g.severity as u8 as f64),
                    },
                    Cell::text(g.rule),
                    Cell::num(g.count),
                    Cell::num(g.frames.len() as u64),
                    Cell::text(g.summary),
                ],
                filter: Some(g.filter()),
                color: Some(theme::severity_color(g.severity)),
            })
            .collect();
        let mut sort = self.sorts[StatsTab::ExpertInfo.index()];
        sort.apply(&mut rows);
        let head = ["severity", "rule", "findings", "frames", "what it checks"];
        let action = table_ui(ui, "stats-expert", &head, &rows, &mut sort).map(StatsAction::Filter);
        self.sorts[StatsTab::ExpertInfo.index()] = sort;
        action
    }
}

/// The first row at or after `at` (rows come in time order), else the
/// last: where a click on the I/O graph takes the timeline.
pub fn first_row_at(model: &SessionModel, at: Duration) -> Option<usize> {
    let store = &model.store;
    let (mut lo, mut hi) = (0, store.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        if store.get(mid).is_some_and(|r| r.at() < at) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if lo < store.len() {
        Some(lo)
    } else {
        store.len().checked_sub(1)
    }
}

fn series_color(i: usize) -> egui::Color32 {
    [
        theme::HANDSHAKE_MARK,
        theme::WARN,
        theme::OK,
        theme::ERROR,
        theme::ANOMALY_MARK,
    ][i % 5]
}

fn opt_label(i: &Option<stats::Implementation>) -> String {
    i.as_ref().map(stats::Implementation::label).unwrap_or_default()
}

fn conversation_rows(r: &Report) -> Vec<Row> {
    r.conversations
        .iter()
        .map(|c| Row {
            cells: vec![
                Cell::text(format!("{}{}", c.session, if c.running { " (running)" } else { "" })),
                Cell::text(opt_label(&c.client)),
                Cell::text(
                    c.server
                        .as_ref()
                        .map_or_else(|| c.target.clone(), stats::Implementation::label),
                ),
                Cell::text(&c.transport),
                Cell::text(c.era.unwrap_or("")),
                Cell::micros(c.duration_us),
                Cell::num(c.requests),
                Cell::num(c.notifications_sent),
                Cell::num(c.notifications_received),
                Cell::num(c.server_requests),
                Cell::num(c.bytes_sent),
                Cell::num(c.bytes_received),
                Cell::num(c.errors),
                Cell::num(c.tool_errors),
                Cell::num(c.unanswered),
            ],
            filter: Some(c.filter()),
            color: (c.errors + c.unanswered > 0).then_some(theme::WARN),
        })
        .collect()
}

fn endpoint_rows(r: &Report) -> Vec<Row> {
    r.endpoints
        .iter()
        .map(|e| Row {
            cells: vec![
                Cell::text(e.role),
                Cell::text(&e.name),
                Cell::num(e.sessions.len() as u64),
                Cell::num(e.requests),
                Cell::num(e.bytes_sent),
                Cell::num(e.bytes_received),
                Cell::num(e.errors),
                Cell::num(e.tool_errors),
                Cell::num(e.unanswered),
                Cell::micros(e.duration_us),
            ],
            filter: Some(e.filter()),
            color: None,
        })
        .collect()
}

fn context_ui(ui: &mut Ui, report: &Report, expert: &ExpertPanel, sort: &mut Sort) -> Option<StatsAction> {
    let mut action = None;
    let budget = expert.options.context_budget;
    let (mut per_def, mut per_list) = (budget.per_definition.unwrap_or(0), budget.per_listing.unwrap_or(0));
    ui.horizontal_wrapped(|ui| {
        ui.label("lint budget (o200k tokens, 0: none): per definition");
        let a = ui.add(egui::DragValue::new(&mut per_def).speed(50.0).range(0..=1_000_000));
        ui.label("per listing");
        let b = ui.add(egui::DragValue::new(&mut per_list).speed(500.0).range(0..=10_000_000));
        if (a.drag_stopped() || a.lost_focus() || b.drag_stopped() || b.lost_focus())
            && (Some(per_def).filter(|n| *n > 0), Some(per_list).filter(|n| *n > 0))
                != (budget.per_definition, budget.per_listing)
        {
            action = Some(StatsAction::Budget(Budget {
                per_definition: (per_def > 0).then_some(per_def),
                per_listing: (per_list > 0).then_some(per_list),
            }));
        }
    });
    ui.weak(format!(
        "Tokens: o200k and cl100k exact (tiktoken); claude~ estimated as cl100k × {} (Anthropic's tokenizer is not public).",
        mcpscope_core::analysis::context_cost::CLAUDE_PER_CL100K
    ));
    if report.context.listings.is_empty() {
        ui.weak("The server has listed nothing yet (tools/list, prompts/list, resources/templates/list).");
        return action;
    }
    let over = |tokens: u64, b: Option<u64>| b.is_some_and(|b| tokens > b);
    let mut rows = Vec::new();
    for l in &report.context.listings {
        for d in &l.cost.definitions {
            let largest = d
                .largest_part()
                .map(|p| format!("{} ({})", p.part, p.tokens.o200k))
                .unwrap_or_default();
            let (m, n) = l.kind.listed_by();
            rows.push(Row {
                cells: vec![
                    Cell::text(l.kind.as_str()),
                    Cell::text(&d.name),
                    Cell::num(d.bytes),
                    Cell::num(d.tokens.o200k),
                    Cell::num(d.tokens.cl100k),
                    Cell::num(d.tokens.claude_estimate),
                    Cell::text(largest),
                ],
                filter: Some(format!(
                    "request.method == {} and result.{n}[*].name == {}",
                    stats::filter_literal(m),
                    stats::filter_literal(&d.name)
                )),
                color: over(d.tokens.o200k, budget.per_definition).then_some(theme::WARN),
            });
        }
        rows.push(Row {
            cells: vec![
                Cell::text(l.kind.as_str()),
                Cell::text(format!(
                    "(all {}{})",
                    l.cost.definitions.len(),
                    if l.complete { "" } else { ", listing incomplete" }
                )),
                Cell::num(l.cost.total_bytes),
                Cell::num(l.cost.total_tokens.o200k),
                Cell::num(l.cost.total_tokens.cl100k),
                Cell::num(l.cost.total_tokens.claude_estimate),
                Cell::text(""),
            ],
            filter: Some(format!(
                "request.method == {}",
                stats::filter_literal(l.kind.listed_by().0)
            )),
            color: Some(if over(l.cost.total_tokens.o200k, budget.per_listing) {
                theme::WARN
            } else {
                ui.visuals().strong_text_color()
            }),
        });
    }
    sort.apply(&mut rows);
    let head = ["kind", "name", "bytes", "o200k", "cl100k", "claude~", "largest part"];
    if let Some(f) = table_ui(ui, "stats-context", &head, &rows, sort) {
        action = Some(StatsAction::Filter(f));
    }
    action
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpscope_core::timeline::replay::Replay;
    use mcpscope_core::wire::frame::Direction;

    #[test]
    fn a_moment_on_the_graph_is_the_first_row_at_or_after_it() {
        let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let pong = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
        let model = Replay::of(&[(Direction::Out, ping), (Direction::In, pong), (Direction::Out, ping)])
            .with_step(Duration::from_millis(100))
            .model();
        let at = |ms| first_row_at(&model, Duration::from_millis(ms));
        let times: Vec<Duration> = model.store.iter().map(|r| r.at()).collect();
        assert_eq!(at(0), Some(0));
        let second = times[1];
        assert_eq!(first_row_at(&model, second), Some(1));
        assert_eq!(first_row_at(&model, second + Duration::from_micros(1)), Some(2));
        assert_eq!(at(10_000), Some(model.store.len() - 1), "past the end: the last row");
        assert_eq!(first_row_at(&Replay::of(&[]).model(), Duration::ZERO), None);
    }
}
