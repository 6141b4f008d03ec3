//! `mcpscope lint`: the protocol lint rules over a saved capture.

use clap::Args;
use mcpscope_core::analysis::lint::{self, LintOptions, Severity};
use std::io::Write as _;
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
}

/// Exit status: 0 without error-level findings, 1 with some, 4 when the
/// capture cannot be read.
pub fn run(args: LintArgs) -> ExitCode {
    let options = LintOptions {
        slow_response: Duration::from_millis(args.slow_ms),
    };
    // One pass over the file, record by record: the events are not kept.
    let linted = match lint::lint_capture(&args.capture, &options) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("mcpscope lint: {e:#}");
            return ExitCode::from(super::exit::IO);
        }
    };
    // On stderr, so that --json output stays parseable.
    for w in &linted.warnings {
        eprintln!("mcpscope lint: {}: skipped {w}", args.capture.display());
    }
    let findings = linted.findings;
    if args.json {
        let array: Vec<_> = findings.iter().map(lint::Finding::to_json).collect();
        println!("{}", serde_json::to_string_pretty(&array).expect("findings serialise"));
    } else {
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        for f in &findings {
            let _ = writeln!(out, "{}", f.line());
        }
        let count = |s: Severity| findings.iter().filter(|f| f.severity == s).count();
        let _ = writeln!(
            out,
            "{}: {} error(s), {} warning(s), {} info in {} event(s)",
            args.capture.display(),
            count(Severity::Error),
            count(Severity::Warning),
            count(Severity::Info),
            linted.events
        );
    }
    if lint::has_errors(&findings) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
