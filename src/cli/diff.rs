//! `mcpscope diff A.jsonl B.jsonl`: the same session against two servers.

use clap::Args;
use mcpscope_core::analysis::session_diff::{self, Verdict};
use mcpscope_core::text::ErrorChain;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct DiffArgs {
    /// The first capture.
    pub a: PathBuf,
    /// The second capture.
    pub b: PathBuf,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also list exchanges that are the same.
    #[arg(long)]
    pub all: bool,
    /// Show the comparison side by side in the desktop app instead.
    #[arg(long, conflicts_with = "json")]
    pub app: bool,
    /// Compare only the exchanges whose request, or whose answer, matches
    /// this display filter (e.g. 'method == "tools/call"').
    #[arg(long, value_name = "EXPR", conflicts_with = "app")]
    pub filter: Option<String>,
}

pub fn run(args: DiffArgs) -> ExitCode {
    if args.app {
        return super::gui::run(super::gui::Startup {
            diff: Some((args.a, args.b)),
            ..Default::default()
        });
    }
    // Both captures are read at once, record by record, keeping only each
    // exchange's JSON text.
    let keep = match &args.filter {
        None => None,
        Some(expr) => {
            let f = match super::filter::parse_or_report("diff", expr) {
                Ok(f) => f,
                Err(code) => return code,
            };
            let seqs = |p: &std::path::Path| mcpscope_core::filter::records::matching_seqs(p, &f).map(|m| m.exchanges);
            match (seqs(&args.a), seqs(&args.b)) {
                (Ok(a), Ok(b)) => Some((a, b)),
                (Err(e), _) | (_, Err(e)) => {
                    crate::errln!(
                        "mcpscope diff: {}",
                        mcpscope_core::text::terminal_safe(&e.to_string(), false)
                    );
                    return ExitCode::from(super::exit::IO);
                }
            }
        }
    };
    let (a, b) = match session_diff::read_both_keeping(&args.a, &args.b, keep) {
        Ok(both) => both,
        Err(e) => {
            crate::errln!("mcpscope diff: {}", ErrorChain(&e));
            return ExitCode::from(super::exit::IO);
        }
    };
    // What was not compared is said, on stderr (so --json stays parseable).
    for (path, read) in [(&args.a, &a), (&args.b, &b)] {
        for w in &read.warnings {
            crate::errln!("mcpscope diff: {}: skipped {w}", path.display());
        }
        if read.sessions > 1 {
            crate::errln!(
                "mcpscope diff: {} holds {} sessions; they are compared as one, in order",
                path.display(),
                read.sessions
            );
        }
    }
    let entries = session_diff::diff_exchanges(&a.exchanges, &b.exchanges);
    let (a_header, b_header) = (a.header, b.header);
    drop((a.exchanges, b.exchanges));
    let differing = entries.iter().filter(|e| e.verdict != Verdict::Same).count();
    if args.json {
        let list: Vec<_> = entries
            .iter()
            .filter(|e| args.all || e.verdict != Verdict::Same)
            .map(|e| {
                let (verdict, details) = match &e.verdict {
                    Verdict::Same => ("same", vec![]),
                    Verdict::OnlyInA => ("only-in-a", vec![]),
                    Verdict::OnlyInB => ("only-in-b", vec![]),
                    Verdict::Differs(d) => ("differs", d.clone()),
                };
                json!({"exchange": e.key, "verdict": verdict, "details": details})
            })
            .collect();
        crate::outln!("{}", serde_json::to_string_pretty(&list).unwrap_or_default());
    } else {
        crate::outln!("A: {} ({})", args.a.display(), a_header.command_line);
        crate::outln!("B: {} ({})", args.b.display(), b_header.command_line);
        for e in &entries {
            match &e.verdict {
                Verdict::Same if args.all => crate::outln!("  same       {}", e.key),
                Verdict::Same => {}
                Verdict::OnlyInA => crate::outln!("  only in A  {}", e.key),
                Verdict::OnlyInB => crate::outln!("  only in B  {}", e.key),
                Verdict::Differs(lines) => {
                    crate::outln!("  differs    {}", e.key);
                    for l in lines {
                        crate::outln!("             {l}");
                    }
                }
            }
        }
        crate::outln!(
            "{} exchange(s) compared, {} differ (ids, progress tokens, key order and timing ignored)",
            entries.len(),
            differing
        );
    }
    if differing == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(super::exit::FAILED)
    }
}
