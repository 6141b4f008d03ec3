//! `mcpscope lint`: the protocol lint rules over a saved capture.

use super::output;
use clap::Args;
use mcpscope_core::analysis::context_cost::Budget;
use mcpscope_core::analysis::lint::{self, LintOptions, Severity, report};
use mcpscope_core::text::ErrorChain;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct LintArgs {
    /// A JSONL capture written by mcpscope (call --capture, proxy --capture, or the app).
    pub capture: PathBuf,

    /// How to print the findings: one line each (text), a JSON array (json),
    /// SARIF 2.1.0 for GitHub code scanning (sarif), or JUnit XML for CI test
    /// reports (junit). The exit status is the same for all.
    #[arg(long, value_enum, value_name = "FORMAT", default_value = "text")]
    pub format: LintFormat,

    /// The same as --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,

    /// Report responses slower than this many milliseconds.
    #[arg(long, value_name = "N", default_value_t = 5000)]
    pub slow_ms: u64,

    /// context-budget: the most o200k tokens one listed tool, prompt or
    /// resource template may take of a model's context (0: no limit).
    #[arg(long, value_name = "TOKENS", default_value_t = Budget::DEFAULT.per_definition.unwrap_or(0))]
    pub budget_definition: u64,

    /// context-budget: the most o200k tokens a whole listing may take (0: no limit).
    #[arg(long, value_name = "TOKENS", default_value_t = Budget::DEFAULT.per_listing.unwrap_or(0))]
    pub budget_listing: u64,

    /// tool-description-long: the most characters a tool's description may
    /// have (0: no limit).
    #[arg(long, value_name = "CHARS", default_value_t = lint::DESCRIPTION_BUDGET)]
    pub budget_description: usize,

    /// Only the findings on records matching this display filter (e.g.
    /// 'method == "tools/call"'); the exit status counts only those.
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LintFormat {
    Text,
    Json,
    Sarif,
    Junit,
}

/// Exit status: 0 without error-level findings, 1 with some, 4 when the
/// capture cannot be read.
pub fn run(args: LintArgs) -> ExitCode {
    let filter = match args
        .filter
        .as_deref()
        .map(|e| super::filter::parse_or_report("lint", e))
    {
        Some(Err(code)) => return code,
        Some(Ok(f)) => Some(f),
        None => None,
    };
    let options = LintOptions {
        slow_response: Duration::from_millis(args.slow_ms),
        context_budget: Budget {
            per_definition: (args.budget_definition > 0).then_some(args.budget_definition),
            per_listing: (args.budget_listing > 0).then_some(args.budget_listing),
        },
        description_budget: args.budget_description,
    };
    // One pass over the file, record by record: the events are not kept.
    let linted = match lint::lint_capture(&args.capture, &options) {
        Ok(l) => l,
        Err(e) => {
            crate::errln!("mcpscope lint: {}", ErrorChain(&e));
            return ExitCode::from(super::exit::IO);
        }
    };
    // On stderr, so that --json output stays parseable.
    for w in &linted.warnings {
        crate::errln!("mcpscope lint: {}: skipped {w}", args.capture.display());
    }
    // Each session of an appended capture is linted on its own: ids and the
    // handshake start again at a session boundary.
    let sessions = linted.sessions;
    let mut findings = linted.findings;
    let mut narrowed = String::new();
    if let Some(f) = &filter {
        let matching = match mcpscope_core::filter::records::matching_seqs(&args.capture, f) {
            Ok(m) => m,
            Err(e) => {
                crate::errln!("mcpscope lint: {}: {e}", args.capture.display());
                return ExitCode::from(super::exit::IO);
            }
        };
        let all = findings.len();
        findings.retain(|x| x.seqs.iter().any(|s| matching.records.contains(s)));
        narrowed = format!(
            " ({} of {all} finding(s) on the {} record(s) matching the filter)",
            findings.len(),
            matching.records.len()
        );
    }
    let format = if args.json { LintFormat::Json } else { args.format };
    if matches!(format, LintFormat::Sarif | LintFormat::Junit) {
        // Reports point into the capture: the line of each finding's records.
        let seqs = findings.iter().flat_map(|f| f.seqs.iter().copied()).collect();
        let lines = match mcpscope_core::record::capture::lines_of(&args.capture, &seqs) {
            Ok(l) => l,
            Err(e) => {
                crate::errln!("mcpscope lint: {}", ErrorChain(&e));
                return ExitCode::from(super::exit::IO);
            }
        };
        let path = args.capture.to_string_lossy();
        let line_of = |s: u64| lines.get(&s).copied();
        let subject = report::Subject {
            path: &path,
            line_of: &line_of,
            tool_version: super::VERSION,
        };
        if format == LintFormat::Sarif {
            let v = report::sarif(&findings, &subject);
            crate::outln!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        } else {
            output::out_bytes(report::junit(&findings, &subject).as_bytes());
        }
    } else if format == LintFormat::Json {
        let array: Vec<_> = findings.iter().map(lint::Finding::to_json).collect();
        crate::outln!("{}", serde_json::to_string_pretty(&array).unwrap_or_default());
    } else {
        for f in &findings {
            crate::outln!("{}", f.line());
        }
        let count = |s: Severity| findings.iter().filter(|f| f.severity == s).count();
        crate::outln!(
            "{}: {} error(s), {} warning(s), {} info in {} event(s){}",
            args.capture.display(),
            count(Severity::Error),
            count(Severity::Warning),
            count(Severity::Info),
            linted.events,
            if sessions > 1 {
                format!(" of {sessions} sessions (each linted on its own)")
            } else {
                String::new()
            }
        );
        if !narrowed.is_empty() {
            crate::outln!("filter: {}{narrowed}", f_text(&args.filter));
        }
    }
    if lint::has_errors(&findings) {
        ExitCode::from(super::exit::FAILED)
    } else {
        ExitCode::SUCCESS
    }
}

fn f_text(f: &Option<String>) -> std::borrow::Cow<'_, str> {
    mcpscope_core::text::terminal_safe(f.as_deref().unwrap_or_default(), false)
}
