//! stderr: lines that look like an error or a traceback.

use super::{Finding, Severity, quote, rule};
use crate::transport::event::StderrLine;

const STDERR_PATTERNS: [&str; 5] = [
    "Traceback (most recent call last)",
    "Error:",
    "panicked at",
    "UnhandledPromiseRejection",
    "FATAL",
];

/// One finding per run of consecutive stderr lines, so a traceback is one
/// finding and not one per frame of the stack.
#[derive(Default)]
pub(super) struct Stderr {
    block: Vec<(u64, String)>,
}

impl Stderr {
    pub fn line(&mut self, s: &StderrLine) {
        let text = s.text();
        if STDERR_PATTERNS.iter().any(|p| text.contains(p)) {
            self.block.push((s.seq, text.trim_end().to_owned()));
        }
    }

    /// Any other event ends a run.
    pub fn flush(&mut self, out: &mut Vec<Finding>) {
        if !self.block.is_empty() {
            out.push(finding(&self.block));
            self.block.clear();
        }
    }

    /// The run still open, as if nothing followed.
    pub fn provisional(&self, out: &mut Vec<Finding>) {
        if !self.block.is_empty() {
            out.push(finding(&self.block));
        }
    }
}

fn finding(block: &[(u64, String)]) -> Finding {
    let seqs: Vec<u64> = block.iter().map(|(s, _)| *s).collect();
    let first = &block[0].1;
    let last = &block[block.len() - 1].1;
    let quoted = if block.len() == 1 {
        quote(first)
    } else {
        format!("{} … {}", quote(first), quote(last))
    };
    Finding::new(
        rule::STDERR_ERROR,
        Severity::Warning,
        seqs,
        format!(
            "The server wrote what looks like an error on stderr: {quoted}. stderr is for logs of any kind, \
             so this is a hint that something failed inside the server, not a protocol fault."
        ),
    )
}
