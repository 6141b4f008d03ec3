//! `mcpscope stats`: Wireshark's Statistics menu for a capture
//! (conversations, endpoints, service response time, I/O graph, Expert
//! Info) and what a server's definitions cost a model's context, of a
//! capture or of a live server (`--context -- SERVER…`).

use super::call::{CallArgs, SessionWork};
use super::skills::SessionFlags;
use clap::Args;
use mcpscope_core::analysis::context_cost::{Budget, DefinitionKind};
use mcpscope_core::client::{Client, ClientError};
use mcpscope_core::filter::Filter;
use mcpscope_core::stats::{self, By, Report, StatsOptions, Table};
use mcpscope_core::text::{ErrorChain, format_micros, terminal_safe};
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct StatsArgs {
    /// A JSONL capture written by mcpscope (call --capture, proxy --capture, or the app).
    #[arg(required_unless_present = "context", value_name = "CAPTURE")]
    pub file: Option<PathBuf>,

    /// Count only what this display filter keeps (as `mcpscope filter` does).
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,

    /// The table to print (repeatable); all of them by default.
    #[arg(long, value_enum)]
    pub table: Vec<TableArg>,

    /// Service response time rows: per method (with each tool under
    /// tools/call), or per tool, prompt or resource URI.
    #[arg(long, value_enum, default_value_t = ByArg::Method)]
    pub by: ByArg,

    /// The I/O graph's interval, 1ms to 1m.
    #[arg(long, default_value = "1s", value_parser = parse_interval)]
    pub interval: Duration,

    /// An I/O graph series: a display filter (repeatable, at most 5);
    /// without one, every record counts.
    #[arg(long, value_name = "EXPR")]
    pub series: Vec<String>,

    /// text for people, json, or csv (one table: give --table).
    #[arg(long, value_enum, default_value_t = FormatArg::Text)]
    pub format: FormatArg,

    /// The context cost of a live server: connect, list every tool, prompt
    /// and resource template (all pages), print the context table; the
    /// server comes after `--` (or --server-url). Exit 1 over budget.
    #[arg(long, conflicts_with_all = ["file", "filter", "series"])]
    pub context: bool,

    /// The most o200k tokens one definition may take (0: no limit); the
    /// context table exits 1 when one takes more.
    #[arg(long, value_name = "TOKENS", default_value_t = Budget::DEFAULT.per_definition.unwrap_or(0))]
    pub budget_definition: u64,

    /// The most o200k tokens a whole listing (all tools, say) may take (0: no limit).
    #[arg(long, value_name = "TOKENS", default_value_t = Budget::DEFAULT.per_listing.unwrap_or(0))]
    pub budget_listing: u64,

    #[command(flatten)]
    pub session: SessionFlags,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableArg {
    Conversations,
    Endpoints,
    Srt,
    Io,
    Expert,
    Context,
}

impl TableArg {
    fn table(self) -> Table {
        match self {
            TableArg::Conversations => Table::Conversations,
            TableArg::Endpoints => Table::Endpoints,
            TableArg::Srt => Table::Srt,
            TableArg::Io => Table::Io,
            TableArg::Expert => Table::Expert,
            TableArg::Context => Table::Context,
        }
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByArg {
    Method,
    Tool,
    Prompt,
    Resource,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormatArg {
    Text,
    Json,
    Csv,
}

fn parse_interval(s: &str) -> Result<Duration, String> {
    let d = mcpscope_core::duration::parse(s).map_err(|e| e.to_string())?;
    if d < stats::MIN_INTERVAL || d > stats::MAX_INTERVAL {
        return Err(format!("{s:?} is outside 1ms to 1m"));
    }
    Ok(d)
}

/// Exit status: 0, 1 when a definition or listing is over its budget (the
/// context table), 4 when the capture cannot be read, 64 for a usage error.
pub fn run(args: StatsArgs) -> ExitCode {
    let budget = Budget {
        per_definition: (args.budget_definition > 0).then_some(args.budget_definition),
        per_listing: (args.budget_listing > 0).then_some(args.budget_listing),
    };
    let mut tables: Vec<Table> = args.table.iter().map(|t| t.table()).collect();
    tables.dedup();
    if args.context {
        tables = vec![Table::Context];
    } else if tables.is_empty() {
        tables = Table::ALL.to_vec();
    }
    if args.format == FormatArg::Csv && tables.len() != 1 {
        crate::errln!("mcpscope stats: --format csv prints one table: give --table");
        return ExitCode::from(super::exit::USAGE);
    }
    if args.series.len() > stats::MAX_SERIES {
        crate::errln!("mcpscope stats: at most {} --series", stats::MAX_SERIES);
        return ExitCode::from(super::exit::USAGE);
    }
    let by = match args.by {
        ByArg::Method => By::Method,
        ByArg::Tool => By::Tool,
        ByArg::Prompt => By::Prompt,
        ByArg::Resource => By::Resource,
    };
    if args.context {
        return live_context(args, budget, by);
    }
    let Some(capture) = args.file.clone() else {
        return ExitCode::from(super::exit::USAGE);
    };
    let filter = match args
        .filter
        .as_deref()
        .map(|e| super::filter::parse_or_report("stats", e))
    {
        Some(Err(code)) => return code,
        Some(Ok(f)) => Some(f),
        None => None,
    };
    let mut series: Vec<Filter> = Vec::new();
    for e in &args.series {
        match super::filter::parse_or_report("stats", e) {
            Ok(f) => series.push(f),
            Err(code) => return code,
        }
    }
    let options = StatsOptions {
        interval: args.interval,
        series: args.series.clone(),
        expert: tables.contains(&Table::Expert),
        context: tables.contains(&Table::Context),
        traffic: tables
            .iter()
            .any(|t| matches!(t, Table::Conversations | Table::Endpoints | Table::Srt | Table::Io)),
    };
    let (report, summary) = match stats::capture::run(&capture, &options, filter.as_ref(), &series) {
        Ok(r) => r,
        Err(e) => {
            crate::errln!("mcpscope stats: {}: {e}", capture.display());
            return ExitCode::from(super::exit::IO);
        }
    };
    for w in &summary.warnings {
        crate::errln!("mcpscope stats: {}: skipped {w}", capture.display());
    }
    print(&report, &tables, by, args.format, budget)
}

/// Prints the tables; the exit status (1 when the context is over budget).
fn print(report: &Report, tables: &[Table], by: By, format: FormatArg, budget: Budget) -> ExitCode {
    let over = over_budgets(report, budget);
    let mut out = super::output::Buffered::new();
    match format {
        FormatArg::Json => {
            let mut doc = serde_json::Map::new();
            for t in tables {
                doc.insert(t.as_str().to_owned(), json_table(report, *t, by, &over));
            }
            let text = serde_json::to_string_pretty(&Value::Object(doc)).unwrap_or_default();
            out.write(text.as_bytes());
            out.write(b"\n");
        }
        FormatArg::Csv => {
            let (head, rows) = rows_of(report, tables[0], by);
            let mut text = csv_line(&head);
            for r in rows {
                text.push_str(&csv_line(&r));
            }
            // A peer's names may hold control bytes: shown escaped, as in the text tables.
            out.write(terminal_safe(&text, true).as_bytes());
        }
        FormatArg::Text => {
            let mut text = String::new();
            for (i, t) in tables.iter().enumerate() {
                if i > 0 {
                    text.push('\n');
                }
                let _ = writeln!(text, "{}", title(*t, report));
                let (head, rows) = rows_of(report, *t, by);
                if rows.is_empty() {
                    let _ = writeln!(text, "  (none)");
                } else {
                    text.push_str(&aligned(&head, &rows));
                }
                if *t == Table::Context {
                    for o in &over {
                        let _ = writeln!(text, "over budget: {o}");
                    }
                }
            }
            out.write(terminal_safe(&text, true).as_bytes());
        }
    }
    drop(out);
    if tables.contains(&Table::Context) && !over.is_empty() {
        ExitCode::from(super::exit::FAILED)
    } else {
        ExitCode::SUCCESS
    }
}

fn over_budgets(report: &Report, budget: Budget) -> Vec<String> {
    let mut out = Vec::new();
    for l in &report.context.listings {
        for d in &l.cost.definitions {
            if let Some(b) = budget.per_definition
                && d.tokens.o200k > b
            {
                out.push(format!(
                    "the {} {:?} takes {} tokens (o200k), budget {b}",
                    l.kind.as_str(),
                    d.name,
                    d.tokens.o200k
                ));
            }
        }
        if let Some(b) = budget.per_listing
            && l.cost.total_tokens.o200k > b
        {
            out.push(format!(
                "the whole {} takes {} tokens (o200k), budget {b}",
                l.kind.listed_by().0,
                l.cost.total_tokens.o200k
            ));
        }
    }
    out
}

fn title(t: Table, report: &Report) -> String {
    match t {
        Table::Conversations => "Conversations (one per session)".into(),
        Table::Endpoints => "Endpoints".into(),
        Table::Srt => "Service response time".into(),
        Table::Io => format!("I/O graph (interval {})", format_micros(report.io.interval_us)),
        Table::Expert => "Expert Info".into(),
        Table::Context => format!(
            "Context cost (tokens: o200k and cl100k exact; claude~ estimated as cl100k x {})",
            mcpscope_core::analysis::context_cost::CLAUDE_PER_CL100K
        ),
    }
}

fn opt(s: &Option<impl ToString>) -> String {
    s.as_ref().map_or_else(String::new, ToString::to_string)
}

/// A table's header and rows, as text cells (the CSV and the text table).
fn rows_of(report: &Report, t: Table, by: By) -> (Vec<String>, Vec<Vec<String>>) {
    let head = |h: &[&str]| h.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    match t {
        Table::Conversations => (
            head(&[
                "session",
                "client",
                "server",
                "transport",
                "era",
                "version",
                "start",
                "duration",
                "requests",
                "notif_out",
                "notif_in",
                "server_requests",
                "bytes_out",
                "bytes_in",
                "errors",
                "is_error",
                "unanswered",
            ]),
            report
                .conversations
                .iter()
                .map(|c| {
                    vec![
                        c.session.clone(),
                        c.client.as_ref().map(|i| i.label()).unwrap_or_default(),
                        c.server.as_ref().map_or_else(|| c.target.clone(), |i| i.label()),
                        c.transport.clone(),
                        opt(&c.era),
                        opt(&c.protocol_version),
                        mcpscope_core::text::iso8601_utc_ms(c.started_unix_ms),
                        format_micros(c.duration_us),
                        c.requests.to_string(),
                        c.notifications_sent.to_string(),
                        c.notifications_received.to_string(),
                        c.server_requests.to_string(),
                        c.bytes_sent.to_string(),
                        c.bytes_received.to_string(),
                        c.errors.to_string(),
                        c.tool_errors.to_string(),
                        c.unanswered.to_string(),
                    ]
                })
                .collect(),
        ),
        Table::Endpoints => (
            head(&[
                "role",
                "name",
                "sessions",
                "requests",
                "bytes_out",
                "bytes_in",
                "errors",
                "is_error",
                "unanswered",
                "duration",
            ]),
            report
                .endpoints
                .iter()
                .map(|e| {
                    vec![
                        e.role.to_owned(),
                        e.name.clone(),
                        e.sessions.len().to_string(),
                        e.requests.to_string(),
                        e.bytes_sent.to_string(),
                        e.bytes_received.to_string(),
                        e.errors.to_string(),
                        e.tool_errors.to_string(),
                        e.unanswered.to_string(),
                        format_micros(e.duration_us),
                    ]
                })
                .collect(),
        ),
        Table::Srt => (
            head(&[
                "method",
                "detail",
                "requests",
                "errors",
                "is_error",
                "unanswered",
                "min",
                "p50",
                "p90",
                "p95",
                "p99",
                "max",
                "mean",
                "stream",
                "json",
            ]),
            stats::rows_by(&report.srt, by)
                .into_iter()
                .map(|r| {
                    vec![
                        r.method.clone(),
                        r.detail.clone(),
                        r.requests.to_string(),
                        r.errors.to_string(),
                        r.tool_errors.to_string(),
                        r.unanswered.to_string(),
                        format_micros(r.min_us),
                        format_micros(r.p50_us),
                        format_micros(r.p90_us),
                        format_micros(r.p95_us),
                        format_micros(r.p99_us),
                        format_micros(r.max_us),
                        format_micros(r.mean_us),
                        r.by_stream.to_string(),
                        r.by_json.to_string(),
                    ]
                })
                .collect(),
        ),
        Table::Io => {
            let mut h = vec!["start".to_owned()];
            for (i, s) in report.io.series.iter().enumerate() {
                let name = if s.expr.is_empty() {
                    "all".to_owned()
                } else {
                    format!("s{}", i + 1)
                };
                h.extend([
                    format!("{name}_frames"),
                    format!("{name}_bytes"),
                    format!("{name}_latency_mean"),
                ]);
            }
            let rows = (0..report.io.len())
                .map(|b| {
                    let mut row = vec![format_micros(b as u64 * report.io.interval_us)];
                    for i in 0..report.io.series.len() {
                        let k = report.io.bucket(i, b);
                        row.extend([
                            k.frames.to_string(),
                            k.bytes.to_string(),
                            if k.answers == 0 {
                                String::new()
                            } else {
                                format_micros(k.latency_mean_us())
                            },
                        ]);
                    }
                    row
                })
                .collect();
            (h, rows)
        }
        Table::Expert => (
            head(&["severity", "rule", "count", "frames", "example"]),
            report
                .expert
                .iter()
                .map(|g| {
                    vec![
                        g.severity.as_str().to_owned(),
                        g.rule.to_owned(),
                        g.count.to_string(),
                        g.frames.len().to_string(),
                        mcpscope_core::text::ellipsize(&g.example, 100),
                    ]
                })
                .collect(),
        ),
        Table::Context => {
            let mut rows = Vec::new();
            for l in &report.context.listings {
                for d in &l.cost.definitions {
                    let largest = d
                        .largest_part()
                        .map(|p| format!("{} ({})", p.part, p.tokens.o200k))
                        .unwrap_or_default();
                    rows.push(vec![
                        l.kind.as_str().to_owned(),
                        d.name.clone(),
                        d.bytes.to_string(),
                        d.tokens.o200k.to_string(),
                        d.tokens.cl100k.to_string(),
                        d.tokens.claude_estimate.to_string(),
                        largest,
                    ]);
                }
                rows.push(vec![
                    l.kind.as_str().to_owned(),
                    format!(
                        "(all {}{})",
                        l.cost.definitions.len(),
                        if l.complete { "" } else { ", listing incomplete" }
                    ),
                    l.cost.total_bytes.to_string(),
                    l.cost.total_tokens.o200k.to_string(),
                    l.cost.total_tokens.cl100k.to_string(),
                    l.cost.total_tokens.claude_estimate.to_string(),
                    String::new(),
                ]);
            }
            (
                head(&["kind", "name", "bytes", "o200k", "cl100k", "claude~", "largest part"]),
                rows,
            )
        }
    }
}

fn json_table(report: &Report, t: Table, by: By, over: &[String]) -> Value {
    let value = |v: Result<Value, serde_json::Error>| v.unwrap_or(Value::Null);
    match t {
        Table::Conversations => with_filters(
            report
                .conversations
                .iter()
                .map(|c| (value(serde_json::to_value(c)), c.filter())),
        ),
        Table::Endpoints => with_filters(
            report
                .endpoints
                .iter()
                .map(|e| (value(serde_json::to_value(e)), e.filter())),
        ),
        Table::Srt => with_filters(
            stats::rows_by(&report.srt, by)
                .into_iter()
                .map(|r| (value(serde_json::to_value(r)), r.filter())),
        ),
        Table::Io => value(serde_json::to_value(&report.io)),
        Table::Expert => with_filters(
            report
                .expert
                .iter()
                .map(|g| (value(serde_json::to_value(g)), g.filter())),
        ),
        Table::Context => json!({
            "listings": value(serde_json::to_value(&report.context.listings)),
            "claude_per_cl100k": mcpscope_core::analysis::context_cost::CLAUDE_PER_CL100K,
            "over_budget": over,
        }),
    }
}

/// Rows as JSON, each with the display filter that keeps what it counts.
fn with_filters(rows: impl Iterator<Item = (Value, String)>) -> Value {
    Value::Array(
        rows.map(|(mut row, filter)| {
            row["filter"] = Value::String(filter);
            row
        })
        .collect(),
    )
}

fn csv_line(cells: &[String]) -> String {
    let mut line = String::new();
    for (i, c) in cells.iter().enumerate() {
        if i > 0 {
            line.push(',');
        }
        if c.contains([',', '"', '\n', '\r']) {
            line.push('"');
            line.push_str(&c.replace('"', "\"\""));
            line.push('"');
        } else {
            line.push_str(c);
        }
    }
    line.push('\n');
    line
}

fn aligned(head: &[String], rows: &[Vec<String>]) -> String {
    let cell = |s: &str| mcpscope_core::text::ellipsize(s, 60);
    let mut widths: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            widths[i] = widths[i].max(cell(c).chars().count());
        }
    }
    let mut text = String::new();
    for r in std::iter::once(head).chain(rows.iter().map(Vec::as_slice)) {
        let mut line = String::from(" ");
        for (i, c) in r.iter().enumerate() {
            let _ = write!(line, " {:<w$}", cell(c), w = widths[i]);
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}

/// `--context -- SERVER…`: the server's listings, recorded to a capture (the
/// one given, or a private one in mcpscope's captures folder, removed after:
/// nothing goes to a shared temp directory), measured from that capture so
/// that a live server and its recording give the same figures.
fn live_context(args: StatsArgs, budget: Budget, by: By) -> ExitCode {
    let temporary = args.session.capture.is_none();
    let capture = match args.session.capture.clone() {
        Some(c) => c,
        None => match mcpscope_core::record::private_files::captures_dir() {
            Ok(dir) => {
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos());
                dir.join(format!("stats-context-{}-{nanos}.jsonl", std::process::id()))
            }
            Err(e) => {
                crate::errln!(
                    "mcpscope stats: no private folder for the session's capture: {}",
                    ErrorChain(&e)
                );
                return ExitCode::from(super::exit::IO);
            }
        },
    };
    let mut session = args.session;
    session.capture = Some(capture.clone());
    let call = call_args(session);
    let work: SessionWork = Box::new(list_everything);
    let code = super::call::run_with(call, Some(work));
    let result = stats::capture::run(
        &capture,
        &StatsOptions {
            expert: false,
            ..StatsOptions::default()
        },
        None,
        &[],
    );
    if temporary {
        let _ = std::fs::remove_file(&capture);
    }
    if code != ExitCode::SUCCESS {
        return code;
    }
    match result {
        Ok((report, _)) if report.context.listings.is_empty() => {
            crate::errln!("mcpscope stats: the server listed nothing");
            ExitCode::from(super::exit::FAILED)
        }
        Ok((report, _)) => print(&report, &[Table::Context], by, args.format, budget),
        Err(e) => {
            crate::errln!("mcpscope stats: reading the session back: {}", ErrorChain(&e));
            ExitCode::from(super::exit::IO)
        }
    }
}

/// Lists every tool, prompt and resource template (every page). A server
/// without prompts or templates answers those with an error: left out.
fn list_everything(client: &mut Client, timeout: Duration) -> Result<u8, ClientError> {
    for kind in [
        DefinitionKind::Tool,
        DefinitionKind::Prompt,
        DefinitionKind::ResourceTemplate,
    ] {
        let (method, key) = kind.listed_by();
        if let Err(e) = client.list_all(method, key, timeout)?
            && kind == DefinitionKind::Tool
        {
            crate::errln!("mcpscope stats: tools/list failed with JSON-RPC error {e}");
            return Ok(super::exit::FAILED);
        }
    }
    Ok(super::exit::OK)
}

fn call_args(s: SessionFlags) -> CallArgs {
    let mut args = super::skills::call_args(s);
    args.method = Some("tools/list".into());
    args
}
