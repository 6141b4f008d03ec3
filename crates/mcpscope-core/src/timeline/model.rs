//! What the inspector knows about one session, live or loaded from a capture:
//! every row, the process's state, and the judged handshake. Pure logic fed
//! by [`Event`]s, so the UI only draws it.

use crate::protocol::handshake::{self, Handshake};
use crate::protocol::lifecycle::{Level, LifecycleFacts};
use crate::protocol::methods;
use crate::timeline::store::FrameStore;
use crate::transport::event::Event;
use crate::transport::process::{ExitInfo, SpawnError};
use crate::wire::classify::Kind;
use crate::wire::frame::Frame;
use crate::wire::message::RequestId;
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Ok,
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Ok => "ok",
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// The handshake as observed: the lifecycle facts (shared with the protocol
/// lint and the doctor), and the rows of its frames for the timeline.
#[derive(Clone, Debug, Default)]
pub struct HandshakeView {
    pub facts: LifecycleFacts,
    pub initialize_row: Option<usize>,
    pub response_row: Option<usize>,
    pub initialized_row: Option<usize>,
}

impl HandshakeView {
    /// Rows that belong to the handshake group.
    pub fn rows(&self) -> impl Iterator<Item = usize> + '_ {
        [self.initialize_row, self.response_row, self.initialized_row]
            .into_iter()
            .flatten()
    }

    pub fn contains(&self, row: usize) -> bool {
        self.rows().any(|r| r == row)
    }

    /// The initialize result, judged.
    pub fn judged(&self) -> Option<&Handshake> {
        self.facts.judged.as_ref()
    }

    /// Takes one more frame (at `row`) into account.
    fn observe(&mut self, f: &Frame, row: usize) {
        self.facts.observe(f);
        let at = Some(f.seq);
        if self.facts.init_req == at {
            self.initialize_row = Some(row);
        } else if self.facts.init_resp == at {
            self.response_row = Some(row);
        } else if self.facts.initialized == at {
            self.initialized_row = Some(row);
        }
    }

    /// Judgements a person reads, most severe first (the lifecycle verdicts).
    pub fn findings(&self, closed: bool) -> Vec<(Severity, String)> {
        self.facts
            .verdicts(closed)
            .into_iter()
            .map(|v| {
                let sev = match v.level {
                    Level::Ok => Severity::Ok,
                    Level::Info => Severity::Info,
                    Level::Warning => Severity::Warning,
                    Level::Error => Severity::Error,
                };
                (sev, v.text)
            })
            .collect()
    }
}

/// Where the session's rows come from.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    Live { command_line: String },
    Capture { path: PathBuf, command_line: String },
}

/// One session as the inspector shows it.
pub struct SessionModel {
    pub source: Source,
    pub store: FrameStore,
    pub pid: Option<u32>,
    pub program: Option<PathBuf>,
    pub spawn_error: Option<SpawnError>,
    /// When the process started and ended, in session time.
    pub started_at: Option<Duration>,
    pub exit: Option<(Duration, ExitInfo)>,
    pub closed: bool,
    pub handshake: HandshakeView,
    /// The latest time seen on any event.
    pub last_at: Duration,
    /// Rows of stderr lines, for the console.
    pub stderr_rows: Vec<usize>,
    /// Rows with anomalies, for quick navigation.
    pub anomaly_rows: Vec<usize>,
    pub counts: KindCounts,
    /// Row of the latest result to each method the client asked (e.g. the
    /// current `tools/list`), for the composer.
    pub latest_results: HashMap<String, usize>,
    /// Client request ids someone waits for, with the row of their response.
    watched: HashMap<RequestId, Option<usize>>,
    /// Rows of `notifications/message` from the server, for the log view.
    pub log_rows: Vec<usize>,
    /// Every notification the server sent, in order.
    pub notification_rows: Vec<usize>,
    /// Latest `notifications/progress` per progress token (as JSON text).
    pub progress: HashMap<String, Progress>,
    /// `notifications/resources/updated` per URI.
    pub resource_updates: HashMap<String, ResourceUpdates>,
    /// Response latencies by request method (both directions).
    pub latencies: HashMap<String, LatencyStats>,
    /// The server is reached over HTTP (there is no process).
    pub remote: bool,
    /// Capabilities from `server/discover` (modern era; legacy ones are in the handshake).
    pub server_capabilities: Option<Value>,
    /// Multi round-trip chains: request id -> conversation number.
    pub conversations: HashMap<RequestId, usize>,
    /// Rows that belong to a conversation, with its number.
    pub conversation_rows: HashMap<usize, usize>,
    /// A request id -> the id of the retry that continued it.
    pub mrtr_next: HashMap<RequestId, RequestId>,
}

/// The latest progress reported for one token.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
    pub row: usize,
    /// How many progress notifications came for the token.
    pub count: usize,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResourceUpdates {
    pub count: usize,
    pub last_row: usize,
}

/// The latencies of one method's responses: exact count and maximum, and
/// quantiles from an HDR histogram (three significant digits, so within 0.1 %),
/// each response recorded in O(1) time and no memory of its own.
#[derive(Clone, Debug)]
pub struct LatencyStats {
    histogram: hdrhistogram::Histogram<u64>,
    count: usize,
    max_us: u64,
}

impl Default for LatencyStats {
    fn default() -> Self {
        Self {
            histogram: hdrhistogram::Histogram::new(3).expect("3 significant digits is a valid precision"),
            count: 0,
            max_us: 0,
        }
    }
}

impl LatencyStats {
    pub fn record(&mut self, latency: Duration) {
        let us = latency.as_micros().min(u128::from(u64::MAX)) as u64;
        // The histogram grows to the largest value seen; should growing ever
        // fail, the value is counted at the top of the range it has.
        if self.histogram.record(us).is_err() {
            self.histogram.saturating_record(us);
        }
        self.count += 1;
        self.max_us = self.max_us.max(us);
    }

    pub fn count(&self) -> usize {
        self.count
    }

    pub fn max(&self) -> Duration {
        Duration::from_micros(self.max_us)
    }

    /// The smallest latency with at least `q` of the responses at or below it
    /// (nearest rank), to the histogram's precision and never above the maximum.
    pub fn quantile(&self, q: f64) -> Duration {
        if self.count == 0 {
            return Duration::ZERO;
        }
        Duration::from_micros(self.histogram.value_at_quantile(q).min(self.max_us))
    }
}

/// Latency summary of one method.
#[derive(Clone, Debug, PartialEq)]
pub struct LatencySummary {
    pub method: String,
    pub count: usize,
    pub p50: Duration,
    pub p95: Duration,
    pub max: Duration,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct KindCounts {
    pub requests: usize,
    pub notifications: usize,
    pub results: usize,
    pub errors: usize,
    pub tool_errors: usize,
    pub not_jsonrpc: usize,
    pub stderr: usize,
}

impl SessionModel {
    pub fn new(source: Source) -> Self {
        Self {
            source,
            store: FrameStore::new(),
            pid: None,
            program: None,
            spawn_error: None,
            started_at: None,
            exit: None,
            closed: false,
            handshake: HandshakeView::default(),
            last_at: Duration::ZERO,
            stderr_rows: Vec::new(),
            anomaly_rows: Vec::new(),
            counts: KindCounts::default(),
            latest_results: HashMap::new(),
            watched: HashMap::new(),
            log_rows: Vec::new(),
            notification_rows: Vec::new(),
            progress: HashMap::new(),
            resource_updates: HashMap::new(),
            latencies: HashMap::new(),
            remote: false,
            server_capabilities: None,
            conversations: HashMap::new(),
            conversation_rows: HashMap::new(),
            mrtr_next: HashMap::new(),
        }
    }

    pub fn command_line(&self) -> &str {
        match &self.source {
            Source::Live { command_line } | Source::Capture { command_line, .. } => command_line,
        }
    }

    pub fn is_live(&self) -> bool {
        matches!(self.source, Source::Live { .. })
    }

    /// Whether the server can be talked to right now: its process runs, or
    /// (remote servers have no process) the session is open.
    pub fn running(&self) -> bool {
        self.is_live() && (self.pid.is_some() || self.remote) && self.exit.is_none() && !self.closed
    }

    pub fn apply(&mut self, ev: &Event) {
        self.last_at = self.last_at.max(ev.at());
        match ev {
            Event::Spawned { at, pid, program, .. } => {
                self.pid = Some(*pid);
                self.program = Some(program.clone());
                self.started_at = Some(*at);
            }
            Event::SpawnFailed { error, .. } => self.spawn_error = Some(error.clone()),
            Event::Exited { at, status } => self.exit = Some((*at, *status)),
            Event::Closed { .. } => self.closed = true,
            Event::TimedOut { timed_out, .. } => {
                self.handshake.facts.timed_out(timed_out.request_seq, timed_out.waited);
            }
            Event::Auth(a) if a.step == crate::protocol::auth::Step::Failed => {
                let why = a.error.as_deref().unwrap_or(&a.text);
                self.handshake.facts.authorization_failed(why);
            }
            _ => {}
        }
        let row = self.store.len();
        if !self.store.push_event(ev) {
            return;
        }
        match ev {
            Event::Frame(f) => self.on_frame(row, f),
            Event::Stderr(_) => {
                self.stderr_rows.push(row);
                self.counts.stderr += 1;
            }
            _ => {}
        }
    }

    fn on_frame(&mut self, row: usize, f: &Frame) {
        if !f.anomalies().is_empty() {
            self.anomaly_rows.push(row);
        }
        let c = &mut self.counts;
        match f.kind() {
            Kind::Request => c.requests += 1,
            Kind::Notification => c.notifications += 1,
            Kind::Result => {
                c.results += 1;
                if f.class.tool_error {
                    c.tool_errors += 1;
                }
            }
            Kind::Error => c.errors += 1,
            Kind::Batch | Kind::NotJsonRpc | Kind::NotJson => c.not_jsonrpc += 1,
        }
        if f.kind().is_response()
            && let Some((req, latency)) = self.store.get(row).and_then(|r| r.link())
            && let Some(m) = self.store.get(req).and_then(|r| r.method())
        {
            match self.latencies.get_mut(m) {
                Some(s) => s.record(latency),
                None => {
                    let mut s = LatencyStats::default();
                    s.record(latency);
                    self.latencies.insert(m.to_owned(), s);
                }
            }
        }
        if f.direction == crate::wire::frame::Direction::In && f.kind() == Kind::Notification {
            self.notification_rows.push(row);
            match f.class.method.as_deref() {
                Some(methods::MESSAGE) => self.log_rows.push(row),
                Some(methods::PROGRESS) => {
                    if let Some(p) = f.json().and_then(|v| v.get("params").cloned())
                        && let Some(token) = p.get("progressToken")
                    {
                        let entry = self.progress.entry(token.to_string()).or_insert(Progress {
                            progress: 0.0,
                            total: None,
                            message: None,
                            row,
                            count: 0,
                        });
                        entry.progress = p.get("progress").and_then(Value::as_f64).unwrap_or(entry.progress);
                        entry.total = p.get("total").and_then(Value::as_f64);
                        entry.message = p.get("message").and_then(Value::as_str).map(str::to_owned);
                        entry.row = row;
                        entry.count += 1;
                    }
                }
                Some(methods::RESOURCES_UPDATED) => {
                    if let Some(uri) = f
                        .json()
                        .and_then(|v| v.pointer("/params/uri").and_then(Value::as_str).map(str::to_owned))
                    {
                        let e = self.resource_updates.entry(uri).or_default();
                        e.count += 1;
                        e.last_row = row;
                    }
                }
                _ => {}
            }
        }
        if f.direction == crate::wire::frame::Direction::In
            && f.kind().is_response()
            && let Some(req) = self.store.get(row).and_then(|r| r.link()).map(|(req, _)| req)
            && let Some(request) = self.store.get(req)
        {
            let duplicate = f
                .anomalies()
                .contains(crate::wire::classify::Anomalies::DUPLICATE_RESPONSE);
            if f.kind() == Kind::Result
                && !duplicate
                && let Some(m) = request.method()
            {
                match self.latest_results.get_mut(m) {
                    Some(r) => *r = row,
                    None => {
                        self.latest_results.insert(m.to_owned(), row);
                    }
                }
            }
            if let Some(id) = request.id()
                && let Some(slot) = self.watched.get_mut(&id)
                && slot.is_none()
            {
                *slot = Some(row);
            }
        }
        // Multi round-trip conversations: the retries and their answers.
        if f.direction == crate::wire::frame::Direction::Out
            && f.kind() == Kind::Request
            && let Some(no) = f.class.id.as_ref().and_then(|id| self.conversations.get(id))
        {
            self.conversation_rows.insert(row, *no);
        }
        if f.kind().is_response()
            && let Some(no) = self
                .store
                .get(row)
                .and_then(|r| r.link())
                .and_then(|(req, _)| self.conversation_rows.get(&req).copied())
        {
            self.conversation_rows.insert(row, no);
        }
        self.handshake.observe(f, row);
    }

    /// Applies every event of a loaded capture.
    pub fn from_capture(path: PathBuf, loaded: &crate::record::capture::Loaded) -> Self {
        let mut m = SessionModel::new(Source::Capture {
            path,
            command_line: loaded.header.command_line.clone(),
        });
        for ev in &loaded.events {
            m.apply(ev);
        }
        m.closed = true;
        m
    }

    pub fn server_info(&self) -> Option<&Value> {
        self.handshake.judged()?.server_info.as_ref()
    }

    pub fn negotiated_version(&self) -> Option<&str> {
        self.handshake.judged()?.version()
    }

    /// Count, p50, p95 and max latency per method, most used first: O(methods).
    pub fn latency_summary(&self) -> Vec<LatencySummary> {
        let mut out: Vec<LatencySummary> = self
            .latencies
            .iter()
            .filter(|(_, s)| s.count() > 0)
            .map(|(m, s)| LatencySummary {
                method: m.clone(),
                count: s.count(),
                p50: s.quantile(0.50),
                p95: s.quantile(0.95),
                max: s.max(),
            })
            .collect();
        out.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.method.cmp(&b.method)));
        out
    }

    /// Responses with a latency, over all methods.
    pub fn responses_timed(&self) -> usize {
        self.latencies.values().map(LatencyStats::count).sum()
    }

    /// Progress reported for a token (given as the JSON value sent).
    pub fn progress_for(&self, token: &Value) -> Option<&Progress> {
        self.progress.get(&token.to_string())
    }

    /// Remembers a client request id so its response row can be found (see [`Self::response_to`]).
    pub fn watch(&mut self, id: RequestId) {
        self.watched.entry(id).or_insert(None);
    }

    /// The row answering a watched request, once it arrived.
    pub fn response_to(&self, id: &RequestId) -> Option<usize> {
        self.watched.get(id).copied().flatten()
    }

    /// The id that answers for `id` now: itself, or the last retry of its
    /// multi round-trip chain.
    pub fn chain_head(&self, id: &RequestId) -> RequestId {
        let mut id = id.clone();
        for _ in 0..64 {
            match self.mrtr_next.get(&id) {
                Some(next) => id = next.clone(),
                None => break,
            }
        }
        id
    }

    /// The server's capabilities, from the handshake or from `server/discover`.
    pub fn capabilities(&self) -> Option<&Value> {
        self.handshake
            .judged()
            .and_then(|h| h.capabilities.as_ref())
            .or(self.server_capabilities.as_ref())
    }

    /// The latest result of `method` as JSON (e.g. `tools/list`'s `result`).
    pub fn latest_result(&self, method: &str) -> Option<(usize, Value)> {
        let row = *self.latest_results.get(method)?;
        let v: Value = serde_json::from_slice(self.store.get(row)?.raw()).ok()?;
        Some((row, v.get("result")?.clone()))
    }

    pub fn supported_versions() -> &'static [&'static str] {
        &handshake::SUPPORTED_VERSIONS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::recorder::Recorder;
    use crate::wire::classify::Limits;
    use crate::wire::frame::Direction;
    use crate::wire::framing::{LineEnding, RawLine};

    fn feed(lines: &[(Direction, &str)]) -> SessionModel {
        crate::timeline::replay::Replay::of(lines).model()
    }

    const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

    #[test]
    fn clean_handshake_is_grouped_and_ok() {
        let m = feed(&[
            (Direction::Out, INIT),
            (
                Direction::In,
                r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
            ),
            (
                Direction::In,
                r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#,
            ),
            (
                Direction::Out,
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            ),
        ]);
        let hs = &m.handshake;
        assert_eq!(hs.rows().collect::<Vec<_>>(), [0, 2, 3]);
        let f = hs.findings(false);
        assert_eq!(f[0].0, Severity::Ok, "{f:?}");
        assert_eq!(m.negotiated_version(), Some("2025-11-25"));
    }

    #[test]
    fn counter_offer_missing_initialized_and_early_requests() {
        let m = feed(&[
            (Direction::Out, r#"{"jsonrpc":"2.0","id":0,"method":"tools/list"}"#),
            (Direction::Out, INIT),
            (
                Direction::In,
                r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2024-11-05","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#,
            ),
            (Direction::In, r#"{"jsonrpc":"2.0","id":"r","method":"roots/list"}"#),
        ]);
        let f = m.handshake.findings(true);
        let text: Vec<_> = f.iter().map(|(_, t)| t.as_str()).collect();
        assert!(
            text.iter().any(|t| t.contains("counter-offered 2024-11-05")),
            "{text:?}"
        );
        assert!(text.iter().any(|t| t.contains("initialized not sent")), "{text:?}");
        assert!(text.iter().any(|t| t.contains("1 request(s) sent before")), "{text:?}");
        assert!(text.iter().any(|t| t.contains("server sent 1 request")), "{text:?}");
    }

    #[test]
    fn latest_results_and_watched_responses() {
        let mut m = feed(&[]);
        m.watch(RequestId::Number(3));
        let mut rec = Recorder::replay(Limits::default());
        for (d, l) in [
            (Direction::Out, r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#),
            (
                Direction::In,
                r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"a"}]}}"#,
            ),
            (Direction::Out, r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#),
            (
                Direction::In,
                r#"{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"b"}]}}"#,
            ),
            (Direction::In, r#"{"jsonrpc":"2.0","id":3,"result":{"late":true}}"#),
        ] {
            let f = rec.frame_at(
                d,
                RawLine {
                    bytes: l.as_bytes().to_vec(),
                    ending: LineEnding::Lf,
                },
                Duration::ZERO,
                None,
            );
            m.apply(&Event::Frame(f));
        }
        let (row, result) = m.latest_result("tools/list").unwrap();
        assert_eq!(row, 3);
        assert_eq!(result["tools"][0]["name"], "b");
        assert_eq!(m.response_to(&RequestId::Number(3)), Some(3), "the first answer counts");
        assert_eq!(m.response_to(&RequestId::Number(2)), None, "not watched");
    }

    #[test]
    fn logs_progress_updates_and_latency_percentiles() {
        let mut lines = vec![];
        for i in 0..20 {
            lines.push((
                Direction::Out,
                format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"ping"}}"#),
            ));
            lines.push((Direction::In, format!(r#"{{"jsonrpc":"2.0","id":{i},"result":{{}}}}"#)));
        }
        lines.push((
            Direction::In,
            r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}"#.into(),
        ));
        lines.push((
            Direction::In,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t1","progress":1,"total":4}}"#.into(),
        ));
        lines.push((
            Direction::In,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t1","progress":3,"total":4,"message":"almost"}}"#.into(),
        ));
        lines.push((
            Direction::In,
            r#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"test://1"}}"#.into(),
        ));
        let refs: Vec<(Direction, &str)> = lines.iter().map(|(d, l)| (*d, l.as_str())).collect();
        let m = feed(&refs);
        assert_eq!(m.log_rows, [40]);
        let p = m.progress_for(&serde_json::json!("t1")).unwrap();
        assert_eq!((p.progress, p.total, p.count), (3.0, Some(4.0), 2));
        assert_eq!(p.message.as_deref(), Some("almost"));
        assert_eq!(m.resource_updates["test://1"].count, 1);
        // Each response came 1 ms after its request (feed spaces lines 1 ms apart).
        let s = m.latency_summary();
        assert_eq!(s.len(), 1);
        assert_eq!((s[0].method.as_str(), s[0].count), ("ping", 20));
        assert_eq!(s[0].p50, Duration::from_millis(1));
        assert_eq!(s[0].max, Duration::from_millis(1));
    }

    #[test]
    fn refused_initialize() {
        let m = feed(&[
            (Direction::Out, INIT),
            (
                Direction::In,
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"]}}}"#,
            ),
        ]);
        let f = m.handshake.findings(true);
        assert_eq!(f[0].0, Severity::Error);
        assert!(f[0].1.contains("-32602"), "{f:?}");
    }

    #[test]
    fn latency_quantiles_from_the_sketch_are_within_its_precision() {
        let mut stats = LatencyStats::default();
        let mut exact: Vec<u64> = Vec::new();
        // A skewed spread from 50 us to about 9 s.
        for i in 0..10_000u64 {
            let us = 50 + (i * i * 7919) % 9_000_000;
            stats.record(Duration::from_micros(us));
            exact.push(us);
        }
        exact.sort_unstable();
        assert_eq!(stats.count(), 10_000);
        assert_eq!(
            stats.max(),
            Duration::from_micros(*exact.last().unwrap()),
            "the maximum is exact"
        );
        for q in [0.5, 0.95, 0.99] {
            let rank = ((q * exact.len() as f64).ceil() as usize).clamp(1, exact.len());
            let want = exact[rank - 1] as f64;
            let got = stats.quantile(q).as_micros() as f64;
            assert!((got - want).abs() <= want * 0.001 + 1.0, "q{q}: {got} vs {want}");
        }
        assert_eq!(LatencyStats::default().quantile(0.5), Duration::ZERO);
    }
}
