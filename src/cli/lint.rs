//! `mcpscope lint`: the protocol lint rules over a saved capture.

use clap::Args;
use mcpscope_core::analysis::lint::{self, LintOptions, Severity};
use mcpscope_core::text::ErrorChain;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct LintArgs {
    /// A JSONL capture written by mcpscope (call --capture, proxy --capture, or the app).
    pub capture: PathBuf,

    /// Print the findings as a JSON array instead of one line each.
    #[arg(long)]
    pub json: bool,

    /// Report responses slower than this many milliseconds.
    #[arg(long, value_name = "N", default_value_t = 5000)]
    pub slow_ms: u64,

    /// Only the findings on records matching this display filter (e.g.
    /// 'method == "tools/call"'); the exit status counts only those.
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
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
    if args.json {
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
