//! Statistics over a session or a whole capture, as Wireshark's Statistics
//! menu gives them for packets: conversations and endpoints (who talked to
//! whom, how much, how long), service response times per method and per
//! tool (HDR percentiles), an I/O graph whose series are display filters,
//! Expert Info (lint findings grouped by severity and rule), and what a
//! server's definitions cost a model's context.
//!
//! One [`Collector`] computes them all as events arrive, keeping only what
//! later events still need (requests in flight, one histogram per key, one
//! bucket per interval): `mcpscope stats` feeds it a capture
//! ([`capture::run`]), the app feeds it a session's new rows at each step.
//! Which records count is the caller's to say ([`Verdict`]): the CLI runs
//! the display filter over each record, the app over each row, each with
//! its own semantics of `filter`.

pub mod capture;
mod collector;
mod conversations;
mod expert;
mod io_graph;
mod srt;

#[cfg(test)]
mod tests;

pub use collector::{Collector, SessionInfo, Verdict};
pub use conversations::{Conversation, Endpoint, Implementation, endpoints};
pub use expert::{ExpertGroup, group_findings};
pub use io_graph::{Bucket, IoGraph, IoSeries, MAX_BUCKETS};
pub use srt::{SrtRow, rows_by};

use crate::analysis::context_cost::{DefinitionKind, ListingCost};
use std::time::Duration;

/// The tables, as `--table` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Table {
    Conversations,
    Endpoints,
    Srt,
    Io,
    Expert,
    Context,
}

impl Table {
    pub const ALL: [Table; 6] = [
        Table::Conversations,
        Table::Endpoints,
        Table::Srt,
        Table::Io,
        Table::Expert,
        Table::Context,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Table::Conversations => "conversations",
            Table::Endpoints => "endpoints",
            Table::Srt => "srt",
            Table::Io => "io",
            Table::Expert => "expert",
            Table::Context => "context",
        }
    }
}

/// What the service response time rows are keyed by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum By {
    /// One row per method, then one per tool under `tools/call`.
    #[default]
    Method,
    Tool,
    Prompt,
    Resource,
}

impl By {
    /// The methods whose requests name a thing, and the member that names it.
    pub const ALL_DETAILS: [(&'static str, &'static str); 3] = [
        ("tools/call", "name"),
        ("prompts/get", "name"),
        ("resources/read", "uri"),
    ];

    /// The method whose requests this key splits, and the member of its
    /// params that names the thing.
    pub fn detail(self) -> Option<(&'static str, &'static str)> {
        match self {
            By::Method => None,
            By::Tool => Some(Self::ALL_DETAILS[0]),
            By::Prompt => Some(Self::ALL_DETAILS[1]),
            By::Resource => Some(Self::ALL_DETAILS[2]),
        }
    }
}

/// What to compute.
#[derive(Clone, Debug)]
pub struct StatsOptions {
    /// The I/O graph's interval (1 ms to 1 min).
    pub interval: Duration,
    /// The I/O graph's series (at most [`MAX_SERIES`]), as written; with
    /// none, one series of every record kept.
    pub series: Vec<String>,
    /// Lint each session for Expert Info.
    pub expert: bool,
    /// Measure the listings' context cost (loads the tokenizers: ~40 MB).
    pub context: bool,
    /// Count the traffic (conversations, endpoints, response times, the I/O
    /// graph); without it only Expert Info and the context cost are kept.
    pub traffic: bool,
}

impl Default for StatsOptions {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(1),
            series: Vec::new(),
            expert: true,
            context: true,
            traffic: true,
        }
    }
}

pub const MAX_SERIES: usize = 5;
pub const MIN_INTERVAL: Duration = Duration::from_millis(1);
pub const MAX_INTERVAL: Duration = Duration::from_secs(60);

/// Every table, as computed so far.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Report {
    pub conversations: Vec<Conversation>,
    pub endpoints: Vec<Endpoint>,
    /// Every key: per method (`detail` empty) and per tool, prompt and
    /// resource; [`rows_by`] picks a table's rows.
    pub srt: Vec<SrtRow>,
    pub io: IoGraph,
    pub expert: Vec<ExpertGroup>,
    pub context: ContextReport,
}

/// What the last listing of each kind costs.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ContextReport {
    pub listings: Vec<ContextListing>,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct ContextListing {
    pub kind: DefinitionKind,
    /// Whether every page of the listing was read.
    pub complete: bool,
    #[serde(flatten)]
    pub cost: ListingCost,
}

/// Quotes `s` as a filter's string literal.
pub fn filter_literal(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}
