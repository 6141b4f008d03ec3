//! The one accumulator behind every table: fed a session's events in
//! order, it keeps the running figures and what later events still need.

use super::conversations::{Conversation, Implementation};
use super::io_graph::IoGraph;
use super::srt::{Outcome, Srt};
use super::{ContextListing, ContextReport, Report, StatsOptions};
use crate::analysis::context_cost::{DefinitionKind, ListingPages, Tokenizers, listing_cost};
use crate::analysis::lint::{Finding, LintOptions, Linter};
use crate::filter::rows::EraGuess;
use crate::record::capture::Header;
use crate::transport::event::Event;
use crate::wire::classify::Kind;
use crate::wire::frame::{Direction, Frame};
use crate::wire::framing::LineEnding;
use crate::wire::message::RequestId;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::time::Duration;

/// What the caller's filters made of one record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// The display filter keeps it (always, without one).
    pub kept: bool,
    /// The I/O graph's series that keep it: bit i for series i.
    pub series: u8,
}

impl Verdict {
    /// Kept by everything: no filter, every series.
    pub const ALL: Verdict = Verdict {
        kept: true,
        series: u8::MAX,
    };
}

/// What is known of a session before its first record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionInfo {
    /// Its number in the capture, or the tab's title.
    pub name: String,
    /// The server's command line or URL.
    pub target: String,
    pub transport: String,
    pub started_unix_ms: u64,
}

impl SessionInfo {
    pub fn of_header(name: String, h: &Header) -> Self {
        SessionInfo {
            name,
            target: h.url.clone().unwrap_or_else(|| h.command_line.clone()),
            transport: if h.transport.is_empty() {
                "stdio".into()
            } else {
                h.transport.clone()
            },
            started_unix_ms: h.started_unix_ms,
        }
    }
}

/// A request waiting for its answer.
struct Pending {
    method: String,
    /// The tool, prompt or resource it names.
    detail: Option<String>,
    kept: bool,
    /// For a list method: whether it asked for the first page.
    first_page: Option<bool>,
}

struct Current {
    conv: Conversation,
    first_at: Option<Duration>,
    pending: HashMap<u64, Pending>,
    /// Over HTTP: whether the POST that carried a request was answered by
    /// an event stream (by the request's id).
    streamed: HashMap<RequestId, bool>,
    era: EraGuess,
    linter: Option<Linter>,
    /// The seqs the filter kept, when Expert Info must be narrowed to them.
    kept_seqs: Option<HashSet<u64>>,
}

/// Statistics of one capture or live session, as far as it has been read.
pub struct Collector {
    options: StatsOptions,
    /// Whether a display filter narrows what counts.
    filtered: bool,
    done: Vec<Conversation>,
    current: Option<Current>,
    srt: Srt,
    io: IoGraph,
    findings: Vec<(String, Finding)>,
    listings: HashMap<DefinitionKind, ListingPages>,
    /// The context report, and whether a listing changed since it was made.
    context: ContextReport,
    context_stale: bool,
    /// Loaded for the first context report, kept while the collector lives.
    tokenizers: Option<Tokenizers>,
}

impl Collector {
    /// `filtered`: whether the verdicts come from a display filter (Expert
    /// Info then keeps the findings about kept records only).
    pub fn new(options: StatsOptions, filtered: bool) -> Self {
        let io = IoGraph::new(options.interval, &options.series);
        Collector {
            options,
            filtered,
            done: Vec::new(),
            current: None,
            srt: Srt::default(),
            io,
            findings: Vec::new(),
            listings: HashMap::new(),
            context: ContextReport::default(),
            context_stale: false,
            tokenizers: None,
        }
    }

    /// Tokenizers loaded elsewhere (on a thread of their own while a file is read).
    pub fn give_tokenizers(&mut self, t: Tokenizers) {
        self.tokenizers.get_or_insert(t);
    }

    /// A session starts (the one before, if any, is over).
    pub fn begin_session(&mut self, info: SessionInfo) {
        self.end_session();
        self.current = Some(Current {
            conv: Conversation {
                session: info.name,
                target: info.target,
                transport: info.transport,
                started_unix_ms: info.started_unix_ms,
                running: true,
                ..Conversation::default()
            },
            first_at: None,
            pending: HashMap::new(),
            streamed: HashMap::new(),
            era: EraGuess::default(),
            linter: self.options.expert.then(|| Linter::new(LintOptions::default())),
            kept_seqs: (self.options.expert && self.filtered).then(HashSet::new),
        });
    }

    /// The session is over: what was never answered is counted so, and its
    /// findings are final.
    pub fn end_session(&mut self) {
        let Some(mut c) = self.current.take() else { return };
        for p in c.pending.values().filter(|p| p.kept) {
            self.srt.unanswered(&p.method, p.detail.as_deref(), 1);
            c.conv.unanswered += 1;
        }
        c.conv.running = false;
        if let Some(l) = c.linter.take() {
            for f in l.finish() {
                let about_kept = c
                    .kept_seqs
                    .as_ref()
                    .is_none_or(|kept| f.seqs.iter().any(|s| kept.contains(s)));
                if about_kept {
                    self.findings.push((c.conv.session.clone(), f));
                }
            }
        }
        self.done.push(c.conv);
    }

    /// One record of the current session (a session is begun for it if
    /// none was).
    pub fn push(&mut self, event: &Event, verdict: Verdict) {
        if self.current.is_none() {
            self.begin_session(SessionInfo {
                name: "1".into(),
                ..SessionInfo::default()
            });
        }
        let c = self.current.as_mut().expect("begun above");
        if let Some(l) = c.linter.as_mut() {
            l.push(event);
        }
        if !self.options.traffic && !self.options.context {
            return;
        }
        let at = event.at();
        let first = *c.first_at.get_or_insert(at);
        c.conv.start_us = first.as_micros() as u64;
        c.conv.duration_us = c.conv.duration_us.max(at.saturating_sub(first).as_micros() as u64);
        let series = if verdict.kept { verdict.series } else { 0 };
        match event {
            Event::Frame(f) => {
                if verdict.kept
                    && let Some(kept) = c.kept_seqs.as_mut()
                {
                    kept.insert(f.seq);
                }
                let bytes = f.raw.len() as u64 + terminator(f.ending);
                self.io.record(at, series, bytes, f.link.as_ref().map(|l| l.latency));
                frame(
                    c,
                    f,
                    verdict.kept,
                    bytes,
                    &mut self.srt,
                    &mut self.listings,
                    &mut self.context_stale,
                );
            }
            Event::Stderr(s) => {
                if verdict.kept
                    && let Some(kept) = c.kept_seqs.as_mut()
                {
                    kept.insert(s.seq);
                }
                self.io
                    .record(at, series, s.raw.len() as u64 + terminator(s.ending), None);
            }
            Event::Http(h) => {
                if let (Some(id), Some(_)) = (&h.request_id, h.status) {
                    let ct = h
                        .received_header("content-type")
                        .unwrap_or_default()
                        .to_ascii_lowercase();
                    if ct.starts_with("text/event-stream") {
                        c.streamed.insert(id.clone(), true);
                    } else if ct.starts_with("application/json") {
                        c.streamed.insert(id.clone(), false);
                    }
                }
                self.io.record(at, series, 0, None);
            }
            _ => self.io.record(at, series, 0, None),
        }
    }

    /// Every table as far as the events go; a running session counts its
    /// requests in flight as unanswered. Expert Info holds the findings of
    /// the sessions that are over.
    pub fn report(&mut self) -> Report {
        let mut conversations = self.done.clone();
        let mut waiting: HashMap<(String, String), u64> = HashMap::new();
        if let Some(c) = &self.current {
            let mut conv = c.conv.clone();
            for p in c.pending.values().filter(|p| p.kept) {
                conv.unanswered += 1;
                *waiting.entry((p.method.clone(), String::new())).or_default() += 1;
                if let Some(d) = &p.detail {
                    *waiting.entry((p.method.clone(), d.clone())).or_default() += 1;
                }
            }
            conversations.push(conv);
        }
        if self.context_stale && self.options.context {
            self.context_stale = false;
            let t = self.tokenizers.get_or_insert_with(Tokenizers::load);
            let mut listings: Vec<ContextListing> = self
                .listings
                .iter()
                .map(|(&kind, pages)| ContextListing {
                    kind,
                    complete: pages.is_complete(),
                    cost: listing_cost(t, kind, pages.items()),
                })
                .collect();
            listings.sort_by_key(|l| l.kind);
            self.context = ContextReport { listings };
        }
        Report {
            endpoints: super::endpoints(&conversations),
            conversations,
            srt: self.srt.rows(&waiting),
            io: self.io.clone(),
            expert: super::group_findings(self.findings.iter().map(|(s, f)| (s.as_str(), f))),
            context: self.context.clone(),
        }
    }

    /// The I/O graph alone (the app redraws it without the other tables).
    pub fn io(&self) -> &IoGraph {
        &self.io
    }
}

fn terminator(e: LineEnding) -> u64 {
    match e {
        LineEnding::Lf => 1,
        LineEnding::CrLf => 2,
        LineEnding::Eof | LineEnding::Cut => 0,
    }
}

fn frame(
    c: &mut Current,
    f: &Frame,
    kept: bool,
    bytes: u64,
    srt: &mut Srt,
    listings: &mut HashMap<DefinitionKind, ListingPages>,
    context_stale: &mut bool,
) {
    let conv = &mut c.conv;
    if kept {
        match f.direction {
            Direction::Out => conv.bytes_sent += bytes,
            Direction::In => conv.bytes_received += bytes,
        }
    }
    match f.class.kind {
        Kind::Request => {
            let method = f.class.method.clone().unwrap_or_default();
            if f.direction == Direction::Out {
                conv.requests += kept as u64;
                c.era.request(&f.raw);
                if conv.client.is_none() || conv.protocol_version.is_none() {
                    learn_from_request(conv, &method, &f.raw);
                }
            } else {
                conv.server_requests += kept as u64;
            }
            let detail = super::By::ALL_DETAILS
                .iter()
                .find(|(m, _)| *m == method)
                .and_then(|(_, member)| param_string(&f.raw, member))
                .map(|d| d.chars().take(512).collect());
            let first_page = DefinitionKind::of_list_method(&method)
                .filter(|_| f.direction == Direction::Out)
                .map(|_| !crate::analysis::lint::has_cursor(&f.raw));
            c.pending.insert(
                f.seq,
                Pending {
                    method,
                    detail,
                    kept,
                    first_page,
                },
            );
        }
        Kind::Notification => match f.direction {
            Direction::Out => conv.notifications_sent += kept as u64,
            Direction::In => conv.notifications_received += kept as u64,
        },
        Kind::Result | Kind::Error => {
            let outcome = match (f.class.kind, f.class.tool_error) {
                (Kind::Error, _) => Outcome::Error,
                (_, true) => Outcome::ToolError,
                _ => Outcome::Result,
            };
            if kept {
                match outcome {
                    Outcome::Error => conv.errors += 1,
                    Outcome::ToolError => conv.tool_errors += 1,
                    Outcome::Result => {}
                }
            }
            let Some(link) = &f.link else { return };
            let Some(p) = c.pending.remove(&link.request_seq) else {
                return;
            };
            let stream = f.class.id.as_ref().and_then(|id| c.streamed.remove(id));
            if p.kept || kept {
                let latency = link.latency.as_micros() as u64;
                srt.answered(&p.method, p.detail.as_deref(), latency, outcome, stream);
            }
            if outcome == Outcome::Error || f.direction != Direction::In {
                return;
            }
            c.era.answered(&p.method);
            if matches!(p.method.as_str(), "initialize" | "server/discover") {
                learn_from_result(conv, &f.raw);
            }
            if let (Some(first), Some(kind)) = (p.first_page, DefinitionKind::of_list_method(&p.method))
                && let Some(result) = crate::analysis::lint::result_of(&f.raw)
            {
                listings.entry(kind).or_default().page(kind, first, &result);
                *context_stale = true;
            }
        }
        Kind::Batch | Kind::NotJsonRpc | Kind::NotJson => {}
    }
    conv.era = c.era.era();
}

/// `params.<member>` (`name` or `uri`) of a request when it is a string.
fn param_string(raw: &[u8], member: &str) -> Option<String> {
    let p = crate::analysis::lint::NamingParams::of(raw);
    match if member == "uri" { p.uri } else { p.name }? {
        Value::String(s) => Some(s),
        _ => None,
    }
}

const CLIENT_INFO_META: &str = "io.modelcontextprotocol/clientInfo";
const SERVER_INFO_META: &str = "io.modelcontextprotocol/serverInfo";
const VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";

fn implementation(v: Option<&Value>) -> Option<Implementation> {
    serde_json::from_value(v?.clone()).ok()
}

/// `clientInfo` from `initialize`, or from a modern request's `_meta`.
fn learn_from_request(conv: &mut Conversation, method: &str, raw: &[u8]) {
    let modern = memchr::memmem::find(raw, CLIENT_INFO_META.as_bytes()).is_some()
        || memchr::memmem::find(raw, VERSION_META.as_bytes()).is_some();
    if method != "initialize" && !modern {
        return;
    }
    let Ok(v) = serde_json::from_slice::<Value>(raw) else {
        return;
    };
    let params = &v["params"];
    if method == "initialize" {
        conv.client = conv.client.take().or_else(|| implementation(params.get("clientInfo")));
    }
    let meta = &params["_meta"];
    conv.client = conv
        .client
        .take()
        .or_else(|| implementation(meta.get(CLIENT_INFO_META)));
    if let Some(version) = meta.get(VERSION_META).and_then(Value::as_str) {
        conv.protocol_version.get_or_insert_with(|| version.to_owned());
    }
}

/// `serverInfo` and the version from an `initialize` or `server/discover` result.
fn learn_from_result(conv: &mut Conversation, raw: &[u8]) {
    let Ok(v) = serde_json::from_slice::<Value>(raw) else {
        return;
    };
    let result = &v["result"];
    if let Some(s) =
        implementation(result.get("serverInfo")).or_else(|| implementation(result["_meta"].get(SERVER_INFO_META)))
    {
        conv.server = Some(s);
    }
    if let Some(version) = result.get("protocolVersion").and_then(Value::as_str) {
        conv.protocol_version = Some(version.to_owned());
    }
}
