//! Service response time: per method, and per tool, prompt and resource,
//! counts and latency percentiles from HDR histograms (3 significant
//! digits, as `load` keeps them), min, max and mean exact.

use super::By;
use hdrhistogram::Histogram;
use std::collections::HashMap;

/// Distinct tools (prompts, resources) kept apart; more are counted under
/// [`OTHER`], so a hostile capture cannot make a histogram per request.
pub const MAX_DETAILS: usize = 10_000;
pub const OTHER: &str = "(other)";

/// One key's figures.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct SrtRow {
    pub method: String,
    /// The tool, prompt or resource URI; empty on a method's own row.
    pub detail: String,
    /// Requests: answered, plus those never answered.
    pub requests: u64,
    pub answered: u64,
    /// JSON-RPC error responses.
    pub errors: u64,
    /// Results with `isError: true`.
    pub tool_errors: u64,
    pub unanswered: u64,
    pub min_us: u64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p95_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
    pub mean_us: u64,
    /// Over HTTP: answers that came in an event stream, and as JSON.
    pub by_stream: u64,
    pub by_json: u64,
}

impl SrtRow {
    /// The display filter that keeps this key's requests and answers.
    pub fn filter(&self) -> String {
        let m = super::filter_literal(&self.method);
        if self.detail.is_empty() {
            return format!("method == {m} or request.method == {m}");
        }
        let member = By::ALL_DETAILS
            .iter()
            .find(|(method, _)| *method == self.method)
            .map_or("name", |(_, member)| member);
        let d = super::filter_literal(&self.detail);
        format!(
            "(method == {m} and params.{member} == {d}) or (request.method == {m} and request.params.{member} == {d})"
        )
    }
}

/// The rows of one `--by`: methods (each followed by its tools under
/// `tools/call`), or only tools, prompts or resources.
pub fn rows_by(rows: &[SrtRow], by: By) -> Vec<&SrtRow> {
    match by.detail() {
        None => {
            let mut out: Vec<&SrtRow> = rows.iter().filter(|r| r.detail.is_empty()).collect();
            let tools: Vec<&SrtRow> = rows
                .iter()
                .filter(|r| r.method == "tools/call" && !r.detail.is_empty())
                .collect();
            if let Some(at) = out.iter().position(|r| r.method == "tools/call") {
                out.splice(at + 1..at + 1, tools);
            }
            out
        }
        Some((method, _)) => rows
            .iter()
            .filter(|r| r.method == method && !r.detail.is_empty())
            .collect(),
    }
}

#[derive(Clone)]
struct Figures {
    hist: Histogram<u64>,
    answered: u64,
    errors: u64,
    tool_errors: u64,
    unanswered: u64,
    min_us: u64,
    max_us: u64,
    sum_us: u128,
    by_stream: u64,
    by_json: u64,
}

impl Default for Figures {
    fn default() -> Self {
        Self {
            // 1 µs to an hour; a slower answer is clamped to an hour.
            hist: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds"),
            answered: 0,
            errors: 0,
            tool_errors: 0,
            unanswered: 0,
            min_us: u64::MAX,
            max_us: 0,
            sum_us: 0,
            by_stream: 0,
            by_json: 0,
        }
    }
}

/// How an answer ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    Result,
    ToolError,
    Error,
}

#[derive(Default, Clone)]
pub(super) struct Srt {
    keys: HashMap<(String, String), Figures>,
    details: usize,
}

impl Srt {
    fn figures(&mut self, method: &str, detail: &str) -> &mut Figures {
        // Lookups first: the key is built only the first time.
        if !self.keys.contains_key(&(method.to_owned(), detail.to_owned())) {
            let detail = if detail.is_empty() || self.details < MAX_DETAILS {
                detail
            } else {
                OTHER
            };
            if !detail.is_empty() {
                self.details += 1;
            }
            return self.keys.entry((method.to_owned(), detail.to_owned())).or_default();
        }
        self.keys
            .get_mut(&(method.to_owned(), detail.to_owned()))
            .expect("present")
    }

    /// An answered request, under its method and its detail (if any).
    pub fn answered(
        &mut self,
        method: &str,
        detail: Option<&str>,
        latency_us: u64,
        outcome: Outcome,
        stream: Option<bool>,
    ) {
        for d in std::iter::once("").chain(detail) {
            let f = self.figures(method, d);
            f.answered += 1;
            match outcome {
                Outcome::Result => {}
                Outcome::ToolError => f.tool_errors += 1,
                Outcome::Error => f.errors += 1,
            }
            f.hist.saturating_record(latency_us.max(1));
            f.min_us = f.min_us.min(latency_us);
            f.max_us = f.max_us.max(latency_us);
            f.sum_us += latency_us as u128;
            match stream {
                Some(true) => f.by_stream += 1,
                Some(false) => f.by_json += 1,
                None => {}
            }
        }
    }

    /// A request that will get no answer (its session is over).
    pub fn unanswered(&mut self, method: &str, detail: Option<&str>, n: u64) {
        for d in std::iter::once("").chain(detail) {
            self.figures(method, d).unanswered += n;
        }
    }

    /// The rows, with `waiting` (requests still in flight, by key) counted
    /// as unanswered: methods by name, each method's details by name.
    pub fn rows(&self, waiting: &HashMap<(String, String), u64>) -> Vec<SrtRow> {
        let empty = Figures::default();
        let mut keys: Vec<&(String, String)> = self.keys.keys().chain(waiting.keys()).collect();
        keys.sort();
        keys.dedup();
        keys.into_iter()
            .map(|k| {
                let f = self.keys.get(k).unwrap_or(&empty);
                let unanswered = f.unanswered + waiting.get(k).copied().unwrap_or(0);
                // HDR gives the top of a value's bucket: never past what was seen.
                let p = |q: f64| {
                    if f.answered == 0 {
                        0
                    } else {
                        f.hist.value_at_quantile(q).clamp(f.min_us, f.max_us)
                    }
                };
                SrtRow {
                    method: k.0.clone(),
                    detail: k.1.clone(),
                    requests: f.answered + unanswered,
                    answered: f.answered,
                    errors: f.errors,
                    tool_errors: f.tool_errors,
                    unanswered,
                    min_us: if f.answered == 0 { 0 } else { f.min_us },
                    p50_us: p(0.50),
                    p90_us: p(0.90),
                    p95_us: p(0.95),
                    p99_us: p(0.99),
                    max_us: f.max_us,
                    mean_us: if f.answered == 0 {
                        0
                    } else {
                        (f.sum_us / f.answered as u128) as u64
                    },
                    by_stream: f.by_stream,
                    by_json: f.by_json,
                }
            })
            .collect()
    }
}
