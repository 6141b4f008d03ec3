//! The Load tab: `mcpscope load` from the app, configured from the server on
//! screen and the composer's tool and arguments; live plots of throughput,
//! latency percentiles and errors per second, the results table, Stop at
//! any time, and the sampled sessions' captures to open in a tab.

use crate::job::Job;
use crate::theme;
use egui::{RichText, Ui};
use egui_plot::{Legend, Line, Plot, PlotPoints};
use mcpscope_core::load::plan::{RequestSpec, Workload};
use mcpscope_core::load::stats::Report;
use mcpscope_core::load::{LoadOutcome, LoadPlan};
use mcpscope_core::protocol::era::EraChoice;
use mcpscope_core::text::format_micros;
use mcpscope_core::transport::target::Target;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// What the run is aimed at, from the session on screen.
#[derive(Clone)]
pub struct LoadSetup {
    pub server: String,
    pub target: Target,
    pub era: EraChoice,
    pub protocol_version: String,
    pub request: RequestSpec,
    /// The sampled sessions' traces go here (`mcpscope --otlp-endpoint`).
    pub otlp_endpoint: Option<String>,
}

/// What the tab asks the app for.
#[derive(Debug, PartialEq)]
pub enum LoadAction {
    OpenCapture(PathBuf),
}

struct Running {
    stop: Arc<AtomicBool>,
    live: Arc<Mutex<Option<Report>>>,
    done: Job<Result<LoadOutcome, String>>,
}

pub struct LoadPanel {
    pub sessions: usize,
    /// An open loop at `rate` requests a second; else a closed loop.
    pub open_loop: bool,
    pub rate: f64,
    pub seconds: u64,
    running: Option<Running>,
    /// The latest figures: live while running, then final.
    pub report: Option<Report>,
    pub captures: Vec<PathBuf>,
    pub failed_sessions: Vec<String>,
    pub error: Option<String>,
}

impl Default for LoadPanel {
    fn default() -> Self {
        Self {
            sessions: 4,
            open_loop: false,
            rate: 100.0,
            seconds: 10,
            running: None,
            report: None,
            captures: Vec::new(),
            failed_sessions: Vec::new(),
            error: None,
        }
    }
}

impl LoadPanel {
    pub fn running(&self) -> bool {
        self.running.is_some()
    }

    /// Starts a run on a worker; the figures arrive about once a second.
    pub fn start(&mut self, setup: &LoadSetup, waker: Arc<dyn Fn() + Send + Sync>) {
        let capture_dir = mcpscope_core::record::private_files::captures_dir()
            .ok()
            .map(|d| d.join(format!("load-{}", std::process::id())))
            .filter(|d| mcpscope_core::record::state_dir::ensure_private_dir(d).is_ok());
        let plan = LoadPlan {
            target: setup.target.clone(),
            era: setup.era,
            protocol_version: setup.protocol_version.clone(),
            workload: Workload::One(setup.request.clone()),
            sessions: self.sessions.max(1),
            in_flight: 1,
            rate: self.open_loop.then_some(self.rate),
            duration: Some(Duration::from_secs(self.seconds.max(1))),
            requests: None,
            warmup: Duration::ZERO,
            timeout: Duration::from_secs(30),
            ramp: None,
            sampling: mcpscope_core::load::http::Sampling {
                capture_dir,
                sample_every: 10,
                otlp_endpoint: setup.otlp_endpoint.clone(),
            },
        };
        let stop = Arc::new(AtomicBool::new(false));
        let live: Arc<Mutex<Option<Report>>> = Arc::default();
        let (stopping, shown, wake) = (Arc::clone(&stop), Arc::clone(&live), Arc::clone(&waker));
        let done = Job::spawn("load", Some(waker), move || {
            mcpscope_core::load::run(plan, stopping, Arc::new(|_| {}), move |stats, elapsed| {
                *shown.lock().unwrap_or_else(PoisonError::into_inner) = Some(stats.report(elapsed));
                wake();
            })
            .map_err(|e| mcpscope_core::text::error_chain(&e))
        });
        self.report = None;
        self.captures.clear();
        self.failed_sessions.clear();
        self.error = None;
        self.running = Some(Running { stop, live, done });
    }

    pub fn stop(&mut self) {
        if let Some(r) = &self.running {
            r.stop.store(true, Ordering::Relaxed);
        }
    }

    /// Takes the live figures and, once done, the outcome.
    pub fn poll(&mut self) {
        let Some(r) = &mut self.running else { return };
        if let Some(rep) = r.live.lock().unwrap_or_else(PoisonError::into_inner).take() {
            self.report = Some(rep);
        }
        if let Some(outcome) = r.done.poll() {
            self.running = None;
            match outcome.unwrap_or_else(|dead| Err(dead.to_string())) {
                Ok(o) => {
                    self.report = Some(o.report);
                    self.captures = o.captures;
                    self.failed_sessions = o.failed_sessions;
                }
                Err(e) => self.error = Some(e),
            }
        }
    }

    pub fn ui(
        &mut self,
        ui: &mut Ui,
        setup: Option<&LoadSetup>,
        waker: &Arc<dyn Fn() + Send + Sync>,
    ) -> Option<LoadAction> {
        self.poll();
        let mut action = None;
        match setup {
            Some(s) => {
                let mut what = format!("{} · {}", s.server, s.request.key());
                if let Some(a) = s.request.params.as_ref().and_then(|p| p.get("arguments")) {
                    what.push_str(&format!(" · {}", mcpscope_core::text::shorten(&a.to_string(), 80)));
                }
                ui.label(what);
            }
            None => {
                ui.weak("Launch a server (the tool chosen in the composer is what the run calls).");
            }
        }
        ui.horizontal_wrapped(|ui| {
            let idle = self.running.is_none();
            ui.add_enabled_ui(idle, |ui| {
                ui.label("Sessions");
                ui.add(egui::DragValue::new(&mut self.sessions).range(1..=512));
                ui.selectable_value(&mut self.open_loop, false, "closed loop")
                    .on_hover_text("Each session sends its next request when the answer comes");
                ui.selectable_value(&mut self.open_loop, true, "fixed rate")
                    .on_hover_text("Requests on a fixed timetable; latency counts from each due time (wrk2)");
                if self.open_loop {
                    ui.add(
                        egui::DragValue::new(&mut self.rate)
                            .range(1.0..=100_000.0)
                            .suffix(" req/s"),
                    );
                }
                ui.label("for");
                ui.add(egui::DragValue::new(&mut self.seconds).range(1..=3600).suffix(" s"));
            });
            if idle {
                if ui
                    .add_enabled(setup.is_some(), egui::Button::new("▶ Run load"))
                    .clicked()
                    && let Some(s) = setup
                {
                    self.start(s, Arc::clone(waker));
                }
            } else if ui.button("■ Stop").clicked() {
                self.stop();
            }
            if !idle {
                ui.spinner();
            }
        });
        if let Some(e) = &self.error {
            ui.label(RichText::new(e).color(theme::ERROR));
        }
        for f in &self.failed_sessions {
            ui.label(RichText::new(f).color(theme::WARN));
        }
        let Some(r) = &self.report else { return None };
        ui.label(
            RichText::new(format!(
                "{} requests in {:.1} s: {:.1} req/s · p50 {} · p99 {} · max {} · {} failed",
                r.requests,
                r.duration_s,
                r.throughput,
                format_micros(r.latency.p50_us),
                format_micros(r.latency.p99_us),
                format_micros(r.latency.max_us),
                r.errors
            ))
            .strong(),
        );
        if !self.captures.is_empty() {
            ui.horizontal_wrapped(|ui| {
                ui.label("Sampled sessions:");
                for c in &self.captures {
                    let name = c
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    if ui.small_button(name).on_hover_text("Open it in a tab").clicked() {
                        action = Some(LoadAction::OpenCapture(c.clone()));
                    }
                }
            });
        }
        if let Some(behind) = r.generator_fell_behind() {
            ui.label(
                RichText::new(format!(
                    "the generator fell behind by {}: the asked rate was more than this machine could generate",
                    format_micros(behind.as_micros() as u64)
                ))
                .color(theme::WARN),
            );
        }
        let done = self.running.is_none();
        ui.columns(2, |cols| {
            throughput_plot(&mut cols[0], r, done);
            latency_plot(&mut cols[1], r, done);
        });
        egui::Grid::new("load-keys").striped(true).show(ui, |ui| {
            for h in ["", "requests", "errors", "p50", "p90", "p99", "p99.9", "max"] {
                ui.strong(h);
            }
            ui.end_row();
            for k in &r.per_key {
                ui.label(&k.key);
                ui.label(k.requests.to_string());
                ui.label(k.errors.to_string());
                for v in [
                    k.latency.p50_us,
                    k.latency.p90_us,
                    k.latency.p99_us,
                    k.latency.p999_us,
                    k.latency.max_us,
                ] {
                    ui.label(format_micros(v));
                }
                ui.end_row();
            }
        });
        for c in &r.error_classes {
            ui.label(RichText::new(format!("{} × {}", c.count, c.class)).color(theme::ERROR));
        }
        action
    }
}

/// A second of the run as plotted: at the time it ended (a run stopped at
/// 5.0 s reaches 5 s), its counts as rates over the part of it that ran.
#[derive(Debug, PartialEq)]
pub struct PlottedSecond {
    pub end_s: f64,
    pub requests_per_s: f64,
    pub errors_per_s: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

/// The seconds to plot. While the run goes on the second in progress is left
/// out (it would show as a drop that is not one); once it is over, its last
/// part-second counts for the time it ran, unless that was too short to say
/// anything (under a quarter of a second).
pub fn plotted_seconds(r: &Report, done: bool) -> Vec<PlottedSecond> {
    r.series
        .iter()
        .filter_map(|s| {
            let start = s.second as f64;
            let end = (start + 1.0).min(r.duration_s);
            let span = end - start;
            let whole = span >= 1.0 - 1e-9;
            if !(whole || (done && span >= 0.25)) {
                return None;
            }
            Some(PlottedSecond {
                end_s: end,
                requests_per_s: s.requests as f64 / span,
                errors_per_s: s.errors as f64 / span,
                p50_ms: s.p50_us as f64 / 1000.0,
                p99_ms: s.p99_us as f64 / 1000.0,
            })
        })
        .collect()
}

/// A plot over the run's time: the x axis spans the whole run from 0 (not
/// just the points, which gave one "0" tick after a short run), the y axis
/// leaves room over the data for the legend, which sits top left, away from
/// the newest points.
fn run_plot(id: &str, y_title: &str, r: &Report, top: f64) -> Plot<'static> {
    Plot::new(id.to_owned())
        .height(140.0)
        .legend(Legend::default().position(egui_plot::Corner::LeftTop))
        .allow_scroll(false)
        .x_axis_label("time into the run (s)")
        .y_axis_label(y_title.to_owned())
        .include_x(0.0)
        .include_x(r.duration_s.max(1.0))
        .include_y(0.0)
        .include_y(top * 1.35 + 1e-9)
}

fn throughput_plot(ui: &mut Ui, r: &Report, done: bool) {
    let seconds = plotted_seconds(r, done);
    let top = seconds.iter().map(|s| s.requests_per_s).fold(0.0, f64::max);
    let ok: PlotPoints = seconds.iter().map(|s| [s.end_s, s.requests_per_s]).collect();
    let bad: PlotPoints = seconds.iter().map(|s| [s.end_s, s.errors_per_s]).collect();
    run_plot("load-throughput", "requests per second", r, top).show(ui, |p| {
        p.line(Line::new("requests/s", ok).color(theme::HANDSHAKE_MARK));
        p.line(Line::new("errors/s", bad).color(theme::ERROR));
    });
}

fn latency_plot(ui: &mut Ui, r: &Report, done: bool) {
    let seconds = plotted_seconds(r, done);
    let top = seconds.iter().map(|s| s.p99_ms).fold(0.0, f64::max);
    let p50: PlotPoints = seconds.iter().map(|s| [s.end_s, s.p50_ms]).collect();
    let p99: PlotPoints = seconds.iter().map(|s| [s.end_s, s.p99_ms]).collect();
    run_plot("load-latency", "latency (ms)", r, top).show(ui, |p| {
        p.line(Line::new("p50", p50).color(theme::OK));
        p.line(Line::new("p99", p99).color(theme::WARN));
    });
}

#[cfg(test)]
mod plotting_tests {
    use super::*;
    use mcpscope_core::load::stats::SecondReport;

    fn report(duration_s: f64, seconds: u64) -> Report {
        Report {
            duration_s,
            series: (0..seconds)
                .map(|second| SecondReport {
                    second,
                    requests: 100,
                    errors: 10,
                    p50_us: 2_000,
                    p99_us: 9_000,
                    concurrency: 4,
                })
                .collect(),
            ..Report::default()
        }
    }

    #[test]
    fn a_run_stopped_at_five_seconds_is_plotted_to_five() {
        let s = plotted_seconds(&report(5.0, 5), true);
        assert_eq!(s.len(), 5);
        assert_eq!(s.last().unwrap().end_s, 5.0);
        assert_eq!(s[0].requests_per_s, 100.0);
        assert_eq!(s[0].p99_ms, 9.0);
    }

    #[test]
    fn the_last_part_second_is_a_rate_over_the_time_it_ran_once_the_run_is_over() {
        let r = report(4.5, 5);
        let live = plotted_seconds(&r, false);
        assert_eq!(live.len(), 4, "the second going on is left out while running");
        let done = plotted_seconds(&r, true);
        assert_eq!(done.len(), 5);
        assert_eq!(done[4].end_s, 4.5);
        assert_eq!(done[4].requests_per_s, 200.0, "100 requests in half a second");
        assert_eq!(
            plotted_seconds(&report(4.1, 5), true).len(),
            4,
            "a tenth of a second says nothing"
        );
    }
}
