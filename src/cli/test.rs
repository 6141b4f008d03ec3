//! `mcpscope test`: test files (`*.mcp.yaml`) run headless. Every file is
//! read and checked first (a mistake is said with its line and column, and
//! nothing runs); then each file runs in a session of its own, its steps'
//! verdicts printed as they come, and the report written as text, JSON,
//! JUnit or SARIF.

use clap::{Args, ValueEnum};
use mcpscope_core::collection::file::{self, TestFile};
use mcpscope_core::collection::output;
use mcpscope_core::collection::report::{Check, Counts, EvalResult, FileReport, StepResult};
use mcpscope_core::collection::run::{self, RunOptions, Watch};
use mcpscope_core::collection::vars::{self, Lookup};
use mcpscope_core::record::output_file;
use mcpscope_core::text::ErrorChain;
use mcpscope_core::transport::process::ServerSpec;
use mcpscope_core::transport::target::Target;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::exit;
use super::output::PacedLines;

#[derive(Args, Debug)]
pub struct TestArgs {
    /// Test files (*.mcp.yaml) or folders to look in (recursively); the
    /// current folder when none is given.
    pub paths: Vec<PathBuf>,
    /// The environment whose variables are used (a file's `environments:`).
    #[arg(long)]
    pub env: Option<String>,
    /// Only the steps and evals whose name holds this text (`*` matches anything).
    #[arg(long)]
    pub only: Option<String>,
    /// How the report is written.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write the report here (the verdicts still go to the terminal).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Run this many files at once, each in a session of its own.
    #[arg(long, default_value_t = 1)]
    pub parallel: usize,
    /// Keep the capture of each file whose session had a failure here
    /// (FILE.jsonl; secrets masked).
    #[arg(long)]
    pub capture_dir: Option<PathBuf>,
    /// Take each snapshot step's answer as its new snapshot.
    #[arg(long)]
    pub update_snapshots: bool,
    /// Run the steps against `mcpscope mock` of this recording instead of the file's server.
    #[arg(long, value_name = "CAPTURE")]
    pub against: Option<PathBuf>,
    /// Timeout for each request, in milliseconds.
    #[arg(long, default_value_t = 30_000)]
    pub timeout_ms: u64,
    /// Keep a secret in the OS keyring for `{{secret:NAME}}` (the value is read
    /// from standard input) and run nothing.
    #[arg(long, value_name = "NAME")]
    pub store_secret: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
    Junit,
    Sarif,
}

fn store_secret(name: &str) -> ExitCode {
    let mut value = String::new();
    if let Err(e) = std::io::stdin().read_line(&mut value) {
        crate::errln!("mcpscope test: reading the secret from standard input: {e}");
        return ExitCode::from(exit::IO);
    }
    let value = value.trim_end_matches(['\r', '\n']);
    if value.is_empty() {
        crate::errln!("mcpscope test: no value on standard input: nothing stored");
        return ExitCode::from(exit::USAGE);
    }
    match mcpscope_core::config::keyring::Keyring::open().and_then(|k| k.set(&vars::keyring_entry(name), value)) {
        Ok(()) => {
            crate::errln!(
                "mcpscope test: kept in the keyring as {} (a file uses it as {{{{secret:{name}}}}})",
                vars::keyring_entry(name)
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            crate::errln!("mcpscope test: the keyring: {e}");
            ExitCode::from(exit::IO)
        }
    }
}

/// Prints verdicts as they come (one file at a time), or keeps them for
/// the file's block (files in parallel).
struct Progress<'a> {
    lines: Vec<String>,
    streaming: bool,
    to_stderr: bool,
    out: &'a PacedLines,
}

impl Progress<'_> {
    fn say(&mut self, lines: Vec<String>) {
        if self.streaming {
            self.out.say(lines, self.to_stderr);
        } else {
            self.lines.extend(lines);
        }
    }
}

impl Watch for Progress<'_> {
    fn step(&mut self, r: &StepResult) {
        self.say(output::step_lines(r));
    }

    fn contract(&mut self, c: &Check) {
        self.say(output::contract_lines(c));
    }

    fn eval(&mut self, e: &EvalResult) {
        self.say(output::eval_lines(e));
    }
}

/// A report as a JSON document with its final newline (added in place: a
/// thousand steps' report is half a megabyte, not worth a second copy).
fn json_document(printed: Result<String, serde_json::Error>) -> String {
    let mut doc = printed.expect("JSON prints");
    doc.push('\n');
    doc
}

fn file_head(r: &FileReport) -> String {
    format!("{} ({})", r.path.display(), r.name)
}

/// The lines a file's report ends with: why nothing ran, where the capture is.
fn file_tail(r: &FileReport) -> Vec<String> {
    let mut out: Vec<String> = r
        .problems
        .iter()
        .map(|p| format!("  problem {}:{p}", r.path.display()))
        .collect();
    if let Some(e) = &r.error {
        out.push(format!("  error   {e}"));
    }
    out.extend(r.notes.iter().map(|n| format!("  note    {n}")));
    if let Some(c) = &r.capture {
        out.push(format!("  capture kept: {}", c.display()));
    }
    out
}

pub fn run(args: TestArgs) -> ExitCode {
    if let Some(name) = &args.store_secret {
        return store_secret(name);
    }
    if args.parallel == 0 {
        crate::errln!("mcpscope test: --parallel takes 1 or more");
        return ExitCode::from(exit::USAGE);
    }
    if let Some(path) = &args.output
        && let Err(e) = output_file::check(path, output_file::Policy::Replace)
    {
        crate::errln!("mcpscope test: {}", ErrorChain(&e));
        return ExitCode::from(exit::IO);
    }
    let files = match mcpscope_core::collection::find::test_files(&args.paths) {
        Ok(f) if f.is_empty() => {
            crate::errln!("mcpscope test: no test files (*.mcp.yaml) found");
            return ExitCode::from(exit::USAGE);
        }
        Ok(f) => f,
        Err(e) => {
            crate::errln!("mcpscope test: {e}");
            return ExitCode::from(exit::IO);
        }
    };
    // Every file read and checked before anything runs.
    let mut read: Vec<(PathBuf, TestFile)> = Vec::new();
    let mut mistakes = 0;
    for path in &files {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                crate::errln!("{}: {e}", path.display());
                mistakes += 1;
                continue;
            }
        };
        match file::read(&text) {
            Ok(f) => read.push((path.clone(), f)),
            Err(errors) => {
                for e in errors {
                    crate::errln!("{}:{e}", path.display());
                }
                mistakes += 1;
            }
        }
    }
    if mistakes > 0 {
        crate::errln!("mcpscope test: {mistakes} test file(s) have mistakes: nothing was run");
        return ExitCode::from(exit::IO);
    }
    if let Some(dir) = &args.capture_dir
        && let Err(e) = std::fs::create_dir_all(dir)
    {
        crate::errln!("mcpscope test: --capture-dir {}: {e}", dir.display());
        return ExitCode::from(exit::IO);
    }
    let against = match &args.against {
        None => None,
        Some(capture) => match std::env::current_exe() {
            Ok(exe) => Some(Target::Stdio(ServerSpec::new(
                exe.display().to_string(),
                ["mock".to_owned(), capture.display().to_string()],
            ))),
            Err(e) => {
                crate::errln!("mcpscope test: --against: this program's path: {e}");
                return ExitCode::from(exit::IO);
            }
        },
    };
    // Verdicts go to stdout unless the report itself does.
    let to_stderr = args.format != Format::Text && args.output.is_none();
    let streaming = args.parallel == 1 || read.len() == 1;
    let started = Instant::now();
    let out = PacedLines::start();
    let run_one = |(n, (path, f)): (usize, &(PathBuf, TestFile))| -> FileReport {
        let keep_capture = args.capture_dir.as_ref().map(|d| {
            let stem = path
                .file_name()
                .map(|n| {
                    n.to_string_lossy()
                        .trim_end_matches(".yaml")
                        .trim_end_matches(".yml")
                        .to_owned()
                })
                .unwrap_or_default();
            d.join(format!("{n:03}-{stem}.jsonl"))
        });
        let options = RunOptions {
            env: args.env.clone(),
            only: args.only.clone(),
            update_snapshots: args.update_snapshots,
            timeout: Duration::from_millis(args.timeout_ms),
            against: against.clone(),
            keep_capture,
            ..RunOptions::default()
        };
        let mut progress = Progress {
            lines: Vec::new(),
            streaming,
            to_stderr,
            out: &out,
        };
        if streaming {
            progress.say(vec![format!(
                "{}{}",
                path.display(),
                f.name.as_ref().map(|n| format!(" ({n})")).unwrap_or_default()
            )]);
        }
        let report = run::run_file(path, f, &options, Lookup::here(), &mut progress);
        let mut block = Vec::new();
        if !streaming {
            block.push(file_head(&report));
            block.append(&mut progress.lines);
        }
        block.extend(file_tail(&report));
        out.say(block, to_stderr);
        report
    };
    let reports: Vec<FileReport> = if streaming {
        read.iter().enumerate().map(run_one).collect()
    } else {
        let next = std::sync::atomic::AtomicUsize::new(0);
        let results = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for _ in 0..args.parallel.min(read.len()) {
                s.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(item) = read.get(i) else { break };
                        let r = run_one((i, item));
                        results
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .push((i, r));
                    }
                });
            }
        });
        let mut results = results.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
        results.sort_by_key(|(i, _)| *i);
        results.into_iter().map(|(_, r)| r).collect()
    };
    let mut counts = Counts::default();
    for r in &reports {
        counts.merge(r.counts());
    }
    out.say(
        [output::summary_line(counts, reports.len(), started.elapsed())],
        to_stderr,
    );
    out.finish();
    let document = match args.format {
        Format::Text => None,
        Format::Json => Some(json_document(serde_json::to_string_pretty(&output::json(&reports)))),
        Format::Junit => Some(output::junit(&reports)),
        Format::Sarif => Some(json_document(serde_json::to_string_pretty(&output::sarif(
            &reports,
            super::VERSION,
        )))),
    };
    match (&args.output, document) {
        (Some(path), Some(doc)) => {
            if let Err(e) = output_file::write_all(path, doc.as_bytes()) {
                crate::errln!("mcpscope test: {}", ErrorChain(&e));
                return ExitCode::from(exit::IO);
            }
        }
        (Some(path), None) => {
            let lines: Vec<String> = reports
                .iter()
                .flat_map(|r| {
                    std::iter::once(file_head(r))
                        .chain(r.steps.iter().flat_map(output::step_lines))
                        .chain(r.contracts.iter().flat_map(output::contract_lines))
                        .chain(r.evals.iter().flat_map(output::eval_lines))
                        .chain(file_tail(r))
                })
                .chain(std::iter::once(output::summary_line(
                    counts,
                    reports.len(),
                    started.elapsed(),
                )))
                .collect();
            if let Err(e) = output_file::write_all(path, format!("{}\n", lines.join("\n")).as_bytes()) {
                crate::errln!("mcpscope test: {}", ErrorChain(&e));
                return ExitCode::from(exit::IO);
            }
        }
        (None, Some(doc)) => crate::cli::output::out(format_args!("{doc}")),
        (None, None) => {}
    }
    let code = ExitCode::from(status(&reports));
    // The process ends next: freeing every step's events, frames and file
    // entry one by one would only hold its exit (a few ms per thousand steps).
    std::mem::forget(reports);
    std::mem::forget(read);
    code
}

/// 4 when a file has a mistake found once its server was reached (an
/// unknown tool or variable); else 1 when a check failed; else 3 when a
/// session or a request failed; else 0.
fn status(reports: &[FileReport]) -> u8 {
    if reports.iter().any(|r| !r.problems.is_empty()) {
        return exit::IO;
    }
    let mut c = Counts::default();
    for r in reports {
        c.merge(r.counts());
    }
    if c.failed > 0 {
        exit::FAILED
    } else if c.errors > 0 {
        exit::UNREACHABLE
    } else {
        exit::OK
    }
}
