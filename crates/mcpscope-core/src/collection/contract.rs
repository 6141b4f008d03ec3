//! The contracts of a test file, over the whole session its steps ran in:
//! tools that must (not) be called, at most so many requests, a duration,
//! no lint finding at a severity, the server's surface as recorded.

use super::file::Contracts;
use super::report::Check;
use crate::analysis::answer_diff::Ignore;
use crate::analysis::lint::{self, LintOptions};
use crate::client::Client;
use crate::protocol::mrtr::InputPolicy;
use crate::transport::event::Event;
use crate::verify::{self, Recording};
use crate::wire::classify::Kind;
use crate::wire::frame::Direction;
use std::path::Path;
use std::time::Duration;

/// The tools the client called, in order.
fn tools_called(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Frame(f)
                if f.direction == Direction::Out
                    && f.class.kind == Kind::Request
                    && f.class.method.as_deref() == Some("tools/call") =>
            {
                let v = f.json()?;
                Some(v.get("params")?.get("name")?.as_str()?.to_owned())
            }
            _ => None,
        })
        .collect()
}

/// Checks each contract the file states. `connect` starts a fresh session
/// for the surface check (`verify --surface`'s own).
pub fn check(
    c: &Contracts,
    events: &[Event],
    took: Duration,
    dir: &Path,
    timeout: Duration,
    connect: &mut dyn FnMut(&InputPolicy) -> Client,
) -> Vec<Check> {
    let mut out = Vec::new();
    // Each call's message parsed again: only when a contract names tools.
    let called = if c.must_call.is_empty() && c.must_not_call.is_empty() {
        Vec::new()
    } else {
        tools_called(events)
    };
    for t in &c.must_call {
        let problem = (!called.contains(t)).then(|| {
            vec![if called.is_empty() {
                "no tool was called".to_owned()
            } else {
                format!("tools called: {}", called.join(", "))
            }]
        });
        out.push(Check::new(format!("must_call {t}"), c.at, problem));
    }
    for t in &c.must_not_call {
        let n = called.iter().filter(|x| *x == t).count();
        let problem = (n > 0).then(|| vec![format!("{t} was called {n} time(s)")]);
        out.push(Check::new(format!("must_not_call {t}"), c.at, problem));
    }
    if let Some(max) = c.max_requests {
        let sent = events
            .iter()
            .filter(|e| matches!(e, Event::Frame(f) if f.direction == Direction::Out && f.class.kind == Kind::Request))
            .count() as u64;
        let problem = (sent > max).then(|| vec![format!("{sent} requests were sent (the handshake's included)")]);
        out.push(Check::new(format!("max_requests {max}"), c.at, problem));
    }
    if let Some(max) = c.max_duration {
        let problem = (took > max).then(|| vec![format!("the session took {:.1} ms", took.as_secs_f64() * 1e3)]);
        out.push(Check::new(format!("max_duration {:?}", max), c.at, problem));
    }
    if let Some(severity) = c.lint {
        let findings: Vec<String> = lint::lint(events, &LintOptions::default())
            .iter()
            .filter(|f| f.severity >= severity)
            .map(|f| f.line())
            .collect();
        let problem = (!findings.is_empty()).then_some(findings);
        out.push(Check::new(format!("lint {}", severity.as_str()), c.at, problem));
    }
    if let Some(recording) = &c.surface {
        let path = dir.join(recording);
        let problem = match Recording::read(&path, None) {
            Err(e) => Some(vec![format!("{}: {}", path.display(), crate::text::ErrorChain(&e))]),
            Ok(rec) => match verify::verify(connect, &rec, &Ignore::default(), timeout, true) {
                Err(e) => Some(vec![format!("the surface could not be fetched: {e}")]),
                Ok(report) if report.changes.is_empty() => None,
                Ok(report) => Some(
                    report
                        .changes
                        .iter()
                        .map(|ch| format!("{} {}: {}", ch.impact.as_str(), ch.subject, ch.what))
                        .collect(),
                ),
            },
        };
        out.push(Check::new(format!("surface {recording}"), c.at, problem));
    }
    out
}
