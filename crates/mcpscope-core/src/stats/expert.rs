//! Expert Info: lint findings grouped by severity (worst first), then rule.

use crate::analysis::lint::{Finding, RULES, Severity};
use std::collections::BTreeMap;

/// Frames named per group at most; the count is always whole.
pub const MAX_FRAMES_PER_GROUP: usize = 10_000;

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ExpertGroup {
    pub severity: Severity,
    pub rule: &'static str,
    /// What the rule checks.
    pub summary: &'static str,
    /// Findings in the group.
    pub count: u64,
    /// The first finding's message, as an example.
    pub example: String,
    /// The frames the findings are about: (session, seq), in order.
    pub frames: Vec<(String, u64)>,
}

impl ExpertGroup {
    /// The display filter that keeps the records with this rule's findings.
    pub fn filter(&self) -> String {
        format!("finding.rule == {}", super::filter_literal(self.rule))
    }
}

/// Groups findings, each with the session it was found in.
pub fn group_findings<'a>(findings: impl IntoIterator<Item = (&'a str, &'a Finding)>) -> Vec<ExpertGroup> {
    let mut groups: BTreeMap<(std::cmp::Reverse<Severity>, &'static str), ExpertGroup> = BTreeMap::new();
    for (session, f) in findings {
        let g = groups
            .entry((std::cmp::Reverse(f.severity), f.rule))
            .or_insert_with(|| ExpertGroup {
                severity: f.severity,
                rule: f.rule,
                summary: RULES.iter().find(|r| r.id == f.rule).map_or("", |r| r.summary),
                count: 0,
                example: f.message.clone(),
                frames: Vec::new(),
            });
        g.count += 1;
        for &seq in &f.seqs {
            if g.frames.len() < MAX_FRAMES_PER_GROUP {
                g.frames.push((session.to_owned(), seq));
            }
        }
    }
    groups.into_values().collect()
}
