//! The statistics worker: a thread that owns the session's [`Following`]
//! and, at each step, reads only what the session gained (from its capture,
//! or from rows the UI hands over), then sends back a fresh report.

use crate::job::{Feed, Feeder, JobFailed, Wake};
use crossbeam_channel::{Sender, unbounded};
use mcpscope_core::filter::Filter;
use mcpscope_core::stats::capture::{Following, needs_whole_sessions};
use mcpscope_core::stats::{Report, StatsOptions};
use mcpscope_core::transport::event::Event;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What the numbers are computed over; a change starts them over.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub interval: Duration,
    pub series: Vec<String>,
    /// The display filter, when the panel is limited to it.
    pub filter: Option<String>,
    /// The first session's name (the tab's title).
    pub name: String,
}

pub enum Source {
    /// A capture file: read from where the last step stopped.
    Capture(PathBuf),
    /// Rows of a session recorded nowhere, from where the last step stopped.
    Rows(Vec<Event>),
}

pub struct Step {
    pub config: Config,
    pub source: Source,
    pub session_over: bool,
}

pub struct Outcome {
    pub report: Report,
    pub records: u64,
    pub took: Duration,
    pub error: Option<String>,
}

pub struct Worker {
    /// Declared first: dropping it ends the worker's wait for a next step.
    steps: Sender<Step>,
    pub outcomes: Feed<Outcome>,
}

impl Worker {
    pub fn spawn(waker: Wake) -> Result<Worker, JobFailed> {
        let (steps, step_rx) = unbounded::<Step>();
        // Detached: a step over a large capture may be running when the panel lets go.
        let outcomes = Feed::spawn_detached("stats", 2, Some(waker), move |feed: Feeder<Outcome>| {
            let mut state: Option<(Config, Following)> = None;
            while let Ok(step) = step_rx.recv() {
                let started = Instant::now();
                let outcome = match take_step(&mut state, step) {
                    Ok((report, records)) => Outcome {
                        report,
                        records,
                        took: started.elapsed(),
                        error: None,
                    },
                    Err(e) => Outcome {
                        report: Report::default(),
                        records: 0,
                        took: started.elapsed(),
                        error: Some(e),
                    },
                };
                if !feed.send(outcome) {
                    break;
                }
            }
        });
        if let Some(e) = outcomes.failed() {
            return Err(e.clone());
        }
        Ok(Worker { steps, outcomes })
    }

    /// False when the worker is gone.
    pub fn send(&self, step: Step) -> bool {
        self.steps.send(step).is_ok()
    }
}

fn parse(expr: &str) -> Result<Filter, String> {
    Filter::parse(expr).map_err(|e| format!("{expr:?} is not a filter: {e}"))
}

fn take_step(state: &mut Option<(Config, Following)>, step: Step) -> Result<(Report, u64), String> {
    let filter = step.config.filter.as_deref().map(parse).transpose()?;
    let series = step
        .config
        .series
        .iter()
        .map(|e| parse(e))
        .collect::<Result<Vec<_>, _>>()?;
    let options = StatsOptions {
        interval: step.config.interval,
        series: step.config.series.clone(),
        // Expert Info in the app is the Expert panel's (live, per finding).
        expert: false,
        context: true,
        traffic: true,
    };
    let whole = filter.iter().chain(&series).any(needs_whole_sessions);
    if whole && let Source::Capture(path) = &step.source {
        // Filters that read other records than the one they test: the whole
        // capture again, the way `mcpscope stats` reads it.
        *state = None;
        let (report, summary) =
            mcpscope_core::stats::capture::run(path, &options, filter.as_ref(), &series).map_err(|e| e.to_string())?;
        return Ok((report, summary.records));
    }
    if state.as_ref().is_none_or(|(c, _)| *c != step.config) {
        *state = Some((
            step.config.clone(),
            Following::new(options, filter, series, step.config.name.clone()),
        ));
    }
    let (_, following) = state.as_mut().expect("set above");
    match step.source {
        Source::Capture(path) => following
            .read_new(&path, step.session_over)
            .map_err(|e| mcpscope_core::text::ErrorChain(&e).to_string())?,
        Source::Rows(events) => following.push_events(&events, step.session_over),
    }
    let done = (following.report(), following.records());
    if step.session_over {
        // Nothing more will come: the reader's maps and the tokenizers go.
        *state = None;
    }
    Ok(done)
}
