//! What running a test file came to: each step with its checks, each
//! contract, each eval per model, and where the session's capture was kept.
//! `mcpscope test` prints it ([`super::output`]); the app shows it.

use super::yaml::Pos;
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Passed,
    /// A check did not hold.
    Failed,
    /// It could not run (a variable without a value, a request that got no
    /// answer, the session gone).
    Error,
    /// Left out by `--only`.
    Skipped,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Passed => "passed",
            Verdict::Failed => "failed",
            Verdict::Error => "error",
            Verdict::Skipped => "skipped",
        }
    }
}

/// One check: an assertion, the output schema, a snapshot, a capture, a
/// contract, an eval's expectation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Check {
    /// As written (`result.isError == false`, `snapshot echo.json`, `max_requests: 20`).
    pub what: String,
    #[serde(serialize_with = "pos")]
    pub at: Pos,
    pub passed: bool,
    /// When it failed: what was seen (each field the assertion read, the
    /// snapshot's differences, the findings).
    pub saw: Vec<String>,
}

impl Check {
    pub fn new(what: impl Into<String>, at: Pos, problem: Option<Vec<String>>) -> Check {
        Check {
            what: what.into(),
            at,
            passed: problem.is_none(),
            saw: problem.unwrap_or_default(),
        }
    }
}

fn pos<S: serde::Serializer>(p: &Pos, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeStruct;
    let mut st = s.serialize_struct("Pos", 2)?;
    st.serialize_field("line", &p.line)?;
    st.serialize_field("column", &p.column)?;
    st.end()
}

fn millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((d.as_secs_f64() * 1e6).round() / 1e3)
}

fn millis_opt<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => millis(d, s),
        None => s.serialize_none(),
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepResult {
    pub name: String,
    #[serde(serialize_with = "pos")]
    pub at: Pos,
    pub verdict: Verdict,
    pub checks: Vec<Check>,
    /// Why it could not run.
    pub error: Option<String>,
    /// The method sent.
    pub method: String,
    #[serde(serialize_with = "millis_opt", rename = "latency_ms")]
    pub latency: Option<Duration>,
    /// The frames on the timeline (the session's sequence numbers).
    pub request_seq: Option<u64>,
    pub response_seq: Option<u64>,
}

/// One eval with one model: its runs and how many passed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EvalResult {
    pub name: String,
    #[serde(serialize_with = "pos")]
    pub at: Pos,
    /// PROVIDER:MODEL.
    pub model: String,
    pub runs: u32,
    pub passed: u32,
    /// The share that had to pass.
    pub pass_rate: f64,
    pub verdict: Verdict,
    /// Why each failed run failed (`run 2: forbidden tool delete called`).
    pub failures: Vec<String>,
    /// Why it could not run at all.
    pub error: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FileReport {
    pub path: PathBuf,
    /// The file's `name:`, else its file name.
    pub name: String,
    /// Problems found before anything ran (a wrong key, an unknown tool or
    /// variable): nothing ran when there are any.
    pub problems: Vec<String>,
    /// The session could not be started (or established).
    pub error: Option<String>,
    pub steps: Vec<StepResult>,
    pub contracts: Vec<Check>,
    pub evals: Vec<EvalResult>,
    #[serde(serialize_with = "millis", rename = "duration_ms")]
    pub duration: Duration,
    /// The session's capture, kept because something failed.
    pub capture: Option<PathBuf>,
    /// What a reader should know (contracts not checked on part of a file).
    pub notes: Vec<String>,
}

/// How many of each verdict.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub passed: usize,
    pub failed: usize,
    pub errors: usize,
    pub skipped: usize,
}

impl Counts {
    fn add(&mut self, v: Verdict) {
        match v {
            Verdict::Passed => self.passed += 1,
            Verdict::Failed => self.failed += 1,
            Verdict::Error => self.errors += 1,
            Verdict::Skipped => self.skipped += 1,
        }
    }

    pub fn merge(&mut self, o: Counts) {
        self.passed += o.passed;
        self.failed += o.failed;
        self.errors += o.errors;
        self.skipped += o.skipped;
    }

    pub fn total(&self) -> usize {
        self.passed + self.failed + self.errors + self.skipped
    }
}

impl FileReport {
    /// Steps, contracts and evals, each counted once.
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for s in &self.steps {
            c.add(s.verdict);
        }
        for k in &self.contracts {
            c.add(if k.passed { Verdict::Passed } else { Verdict::Failed });
        }
        for e in &self.evals {
            c.add(e.verdict);
        }
        if !self.problems.is_empty() || self.error.is_some() {
            c.errors += 1;
        }
        c
    }

    pub fn passed(&self) -> bool {
        let c = self.counts();
        c.failed == 0 && c.errors == 0
    }
}
