//! Compact in-memory storage for a session's frames and stderr lines.
//!
//! A million small notifications must fit in about twice their raw size, so
//! raw bytes go into large shared chunks and each line keeps a fixed-size
//! row; methods and string ids are interned. Rows are addressed by index,
//! which is also their order on the wire.

use crate::protocol::auth::Step;
use crate::transport::event::{AppMessage, AppToward, AuthExchange, Event, StderrLine, Touch, TouchKind};
use crate::wire::classify::{Anomalies, Classification, Kind};
use crate::wire::frame::{Direction, Frame, Link};
use crate::wire::framing::LineEnding;
use crate::wire::message::RequestId;
use std::collections::HashMap;
use std::time::Duration;

const CHUNK_BYTES: usize = 8 * 1024 * 1024;

/// Where a row came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lane {
    Out,
    In,
    Stderr,
    /// Something the session noticed: exit, timeout, shutdown step.
    Meta,
    /// A step of an authorization (OAuth) with the authorization server,
    /// the identity provider or the server's metadata: the row holds the
    /// step's capture record (JSON, secrets masked).
    Auth,
    /// What an intercepting proxy did (held, edited, dropped, injected,
    /// answered, a fault): the row holds the touch's capture record.
    Touch,
    /// A message between an MCP App's View and mcpscope as its host: the
    /// row holds the message's capture record; `method` is its method (or
    /// `result` / `error`).
    App,
    /// A model turn (a request to a model provider and its streamed
    /// answer): the row holds the turn's capture record (the key is never
    /// in it); `method` is `PROVIDER:MODEL`.
    Model,
}

impl Lane {
    pub fn direction(self) -> Option<Direction> {
        match self {
            Lane::Out => Some(Direction::Out),
            Lane::In => Some(Direction::In),
            Lane::Stderr | Lane::Meta | Lane::Auth | Lane::Touch | Lane::App | Lane::Model => None,
        }
    }

    /// A row that is no frame or stderr line of a peer's (it has no seq).
    pub fn is_note(self) -> bool {
        matches!(self, Lane::Meta | Lane::Auth | Lane::Touch | Lane::App | Lane::Model)
    }
}

/// An App row's facts beside its message.
struct AppRow {
    toward: AppToward,
    /// Index into the store's App names.
    view: u32,
    note: Option<Box<str>>,
}

/// A proxy's touch, as the timeline draws it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TouchInfo {
    pub kind: TouchKind,
    /// The way the frame was going.
    pub direction: Direction,
    /// The way the bytes it sent went, if it sent any.
    pub sent_toward: Option<Direction>,
    /// The row of the frame it is about.
    pub of_row: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IdSlot {
    None,
    Number(i64),
    Str(u32),
}

/// One stored line: fixed size, no heap of its own.
#[derive(Clone, Copy, Debug)]
struct Row {
    at_us: u64,
    chunk: u32,
    offset: u32,
    len: u32,
    anomalies: u32,
    method: u32,
    /// Row index of the request this response answers (u32::MAX: none).
    link_row: u32,
    /// For a request: the row of its first response (u32::MAX: none yet).
    /// Fits in the row's padding: the row stays 64 bytes.
    answer_row: u32,
    latency_us: u32,
    error_code: i32,
    id: IdSlot,
    lane: Lane,
    kind: Kind,
    ending: LineEnding,
    tool_error: bool,
}

const NONE: u32 = u32::MAX;

#[derive(Default)]
struct Interner {
    strings: Vec<Box<str>>,
    index: HashMap<Box<str>, u32>,
}

impl Interner {
    fn intern(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.strings.len() as u32;
        self.strings.push(s.into());
        self.index.insert(s.into(), i);
        i
    }

    fn get(&self, i: u32) -> &str {
        &self.strings[i as usize]
    }
}

/// All lines of a session, in wire order.
#[derive(Default)]
pub struct FrameStore {
    chunks: Vec<Vec<u8>>,
    /// The shared chunk small lines are appended to.
    current: Option<usize>,
    rows: Vec<Row>,
    strings: Interner,
    /// Event seq -> row index, to resolve links (seq counts events we may not store).
    seq_to_row: HashMap<u64, u32>,
    /// Whether any row is an authorization step (the timeline then draws
    /// the authorization server's lifeline).
    has_auth: bool,
    /// `(seq, row)` at every break in the run of consecutive seqs, so any
    /// frame or stderr line can be found by seq without a map entry per row.
    seq_runs: Vec<(u64, u32)>,
    last_seq: Option<u64>,
    raw_bytes: u64,
    /// The capture record of each HTTP exchange row (its row shows the
    /// summary): few rows, each needed whole by the detail and filters.
    http_records: HashMap<u32, Box<str>>,
    /// Each touch row's meaning (few rows: only intercepting proxies make them).
    touches: HashMap<u32, TouchInfo>,
    /// App rows: which way each message went, whose it is, the host's note.
    apps: HashMap<u32, AppRow>,
    app_names: Vec<String>,
    /// Model rows: what the timeline draws of each turn, read once.
    models: HashMap<u32, ModelRow>,
    /// The MCP requests a model turn caused, by the request's row.
    model_calls: HashMap<u32, u32>,
    /// The latest model turn's tool calls not yet seen as a `tools/call`
    /// (their names as offered to the model), with that turn's row.
    model_asked: Option<(u32, Vec<String>)>,
    /// What became of a frame a proxy touched, by the frame's row: the
    /// latest touch (a held frame later forwarded reads `Forwarded`).
    fates: HashMap<u32, TouchKind>,
}

/// What the timeline shows of a model turn without reading its record again.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelRow {
    /// The start of the answer's text, on one line.
    pub text: Box<str>,
    /// The tools the turn asked for, as offered to the model.
    pub tool_calls: Vec<String>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub first_token: Option<Duration>,
    pub total: Duration,
    /// Why the turn failed (HTTP, unreachable, stopped, cut).
    pub failed: Option<Box<str>>,
}

/// A borrowed view of one stored line.
#[derive(Clone, Copy)]
pub struct RowRef<'a> {
    store: &'a FrameStore,
    index: usize,
    row: &'a Row,
}

impl FrameStore {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// The JSON-RPC methods the session's frames used (each once).
    pub fn methods(&self) -> impl Iterator<Item = &str> + '_ {
        let mut seen = vec![false; self.strings.strings.len()];
        for r in &self.rows {
            if r.method != NONE && matches!(r.lane, Lane::Out | Lane::In) {
                seen[r.method as usize] = true;
            }
        }
        seen.into_iter()
            .enumerate()
            .filter(|(_, s)| *s)
            .map(|(i, _)| self.strings.get(i as u32))
    }

    /// Whether the session has authorization steps.
    pub fn has_auth(&self) -> bool {
        self.has_auth
    }

    /// The MCP Apps whose messages the session holds, in the order they
    /// first spoke (the timeline then draws an App lifeline).
    pub fn app_names(&self) -> &[String] {
        &self.app_names
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Total raw bytes stored (without line terminators).
    pub fn raw_bytes(&self) -> u64 {
        self.raw_bytes
    }

    /// Approximate heap bytes held by the store.
    pub fn heap_bytes(&self) -> usize {
        self.chunks.iter().map(Vec::capacity).sum::<usize>()
            + self.rows.capacity() * std::mem::size_of::<Row>()
            + self.seq_to_row.capacity() * 24
            + self.strings.strings.iter().map(|s| s.len() * 2 + 40).sum::<usize>()
    }

    fn put_bytes(&mut self, bytes: &[u8]) -> (u32, u32) {
        self.raw_bytes += bytes.len() as u64;
        if bytes.len() > CHUNK_BYTES / 4 {
            // Large payloads get a chunk of their own so they do not waste the tail of a shared one.
            self.chunks.push(bytes.to_vec());
            return ((self.chunks.len() - 1) as u32, 0);
        }
        let fits = self
            .current
            .is_some_and(|c| self.chunks[c].len() + bytes.len() <= self.chunks[c].capacity());
        if !fits {
            self.chunks.push(Vec::with_capacity(CHUNK_BYTES));
            self.current = Some(self.chunks.len() - 1);
        }
        let c = self.current.expect("set above");
        let chunk = &mut self.chunks[c];
        let offset = chunk.len();
        chunk.extend_from_slice(bytes);
        (c as u32, offset as u32)
    }

    fn push_row(
        &mut self,
        seq: u64,
        lane: Lane,
        at: Duration,
        raw: &[u8],
        ending: LineEnding,
        frame: Option<(&Classification, Option<&Link>)>,
    ) {
        let (class, link) = match frame {
            Some((c, l)) => (Some(c), l),
            None => (None, None),
        };
        let (chunk, offset) = self.put_bytes(raw);
        let (kind, anomalies, method, id, error_code, tool_error) = match class {
            Some(c) => (
                c.kind,
                c.anomalies.bits(),
                c.method.as_deref().map_or(NONE, |m| self.strings.intern(m)),
                match &c.id {
                    None => IdSlot::None,
                    Some(RequestId::Number(n)) => IdSlot::Number(*n),
                    Some(RequestId::String(s)) => IdSlot::Str(self.strings.intern(s)),
                },
                c.error_code
                    .map_or(0, |c| c.clamp(i32::MIN as i64, i32::MAX as i64) as i32),
                c.tool_error,
            ),
            None => (Kind::NotJson, 0, NONE, IdSlot::None, 0, false),
        };
        let (link_row, latency_us) = match link {
            Some(l) => (
                self.seq_to_row.get(&l.request_seq).copied().unwrap_or(NONE),
                l.latency.as_micros().min(u32::MAX as u128) as u32,
            ),
            None => (NONE, 0),
        };
        let index = self.rows.len() as u32;
        if let Some(req) = self.rows.get_mut(link_row as usize)
            && req.answer_row == NONE
        {
            req.answer_row = index;
        }
        if seq != u64::MAX {
            if self.last_seq.is_none_or(|last| seq != last + 1) {
                self.seq_runs.push((seq, index));
            }
            self.last_seq = Some(seq);
        } else {
            // A meta row breaks the run: the next seq starts a new one.
            self.last_seq = None;
        }
        if matches!(kind, Kind::Request) && lane.direction().is_some() {
            self.seq_to_row.insert(seq, index);
        }
        self.rows.push(Row {
            at_us: at.as_micros() as u64,
            chunk,
            offset,
            len: raw.len() as u32,
            anomalies,
            method,
            link_row,
            answer_row: NONE,
            latency_us,
            error_code,
            id,
            lane,
            kind,
            ending,
            tool_error,
        });
    }

    pub fn push_frame(&mut self, f: &Frame) {
        let lane = match f.direction {
            Direction::Out => Lane::Out,
            Direction::In => Lane::In,
        };
        self.push_row(f.seq, lane, f.at, &f.raw, f.ending, Some((&f.class, f.link.as_ref())));
        if lane == Lane::Out && self.model_asked.is_some() {
            self.link_model_call(&f.raw, f.class.kind, f.class.method.as_deref());
        }
    }

    /// A `tools/call` the client sent after a model turn asked for that
    /// tool (and before the next turn) is that turn's: the first one per
    /// call asked, by the tool's name as it was offered to the model.
    fn link_model_call(&mut self, raw: &[u8], kind: Kind, method: Option<&str>) {
        if kind != Kind::Request || method != Some(crate::protocol::methods::TOOLS_CALL) {
            return;
        }
        let Some(name) = serde_json::from_slice::<serde_json::Value>(raw).ok().and_then(|v| {
            v.pointer("/params/name")
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        }) else {
            return;
        };
        let row = (self.rows.len() - 1) as u32;
        let Some((turn, asked)) = &mut self.model_asked else {
            return;
        };
        if let Some(i) = asked
            .iter()
            .position(|offered| crate::model::request::offered_as(&name, offered))
        {
            asked.remove(i);
            self.model_calls.insert(row, *turn);
        }
    }

    /// A model turn: its record as the row's bytes, `PROVIDER:MODEL` as the
    /// row's method, a failed turn marked like a tool error.
    pub fn push_model(&mut self, m: &crate::model::record::ModelExchange) {
        let record = crate::record::capture::meta_json(&Event::Model(Box::new(m.clone())));
        let raw = serde_json::to_vec(&record).unwrap_or_default();
        self.push_row(u64::MAX, Lane::Model, m.at, &raw, LineEnding::Lf, None);
        let row = (self.rows.len() - 1) as u32;
        let label = self.strings.intern(&format!("{}:{}", m.provider, m.model));
        let turn = m.turn();
        let failed =
            m.error.clone().or_else(|| turn.error.clone()).or_else(|| {
                (!turn.complete).then(|| "the answer's stream ended before it said it was over".to_owned())
            });
        if let Some(r) = self.rows.last_mut() {
            r.method = label;
            r.tool_error = failed.is_some();
            r.error_code = m.status.map_or(0, i32::from);
        }
        let tool_calls: Vec<String> = turn.tool_calls.iter().map(|c| c.name.clone()).collect();
        self.model_asked = Some((row, tool_calls.clone()));
        self.models.insert(
            row,
            ModelRow {
                text: crate::text::shorten(&turn.text.replace(['\n', '\r'], " "), 120).into(),
                tool_calls,
                input_tokens: turn.usage.input_tokens,
                output_tokens: turn.usage.output_tokens,
                first_token: m.first_token,
                total: m.total,
                failed: failed.map(Into::into),
            },
        );
    }

    /// Whether the session holds model turns (the timeline then draws the
    /// model's lifeline).
    pub fn has_model(&self) -> bool {
        !self.models.is_empty()
    }

    pub fn push_stderr(&mut self, s: &StderrLine) {
        self.push_row(s.seq, Lane::Stderr, s.at, &s.raw, s.ending, None);
    }

    /// A line of the session's own (exit, timeout, shutdown step).
    pub fn push_meta(&mut self, at: Duration, text: &str) {
        self.push_row(u64::MAX, Lane::Meta, at, text.as_bytes(), LineEnding::Lf, None);
    }

    /// A step of an authorization: its record as the row's bytes, its
    /// label as the row's method, a failed step marked like a tool error,
    /// its HTTP status in the error code and the step in the latency slot
    /// (an auth row links to no request), so drawing it parses nothing.
    pub fn push_auth(&mut self, a: &AuthExchange) {
        let raw = serde_json::to_vec(&crate::record::capture::auth_json(a)).unwrap_or_default();
        self.push_row(u64::MAX, Lane::Auth, a.at, &raw, LineEnding::Lf, None);
        self.has_auth = true;
        let label = self.strings.intern(&a.label());
        if let Some(row) = self.rows.last_mut() {
            row.method = label;
            row.tool_error = a.error.is_some();
            row.error_code = a.status.map_or(0, i32::from);
            row.latency_us = Step::ALL.iter().position(|s| *s == a.step).unwrap_or_default() as u32;
        }
    }

    /// A proxy's touch: its record as the row's bytes, its label as the
    /// row's method; the frame it is about learns its fate.
    pub fn push_touch(&mut self, t: &Touch) {
        let record = crate::record::capture::meta_json(&Event::Touch(Box::new(t.clone())));
        let raw = serde_json::to_vec(&record).unwrap_or_default();
        self.push_row(u64::MAX, Lane::Touch, t.at, &raw, LineEnding::Lf, None);
        let row = (self.rows.len() - 1) as u32;
        let label = self.strings.intern(&t.label());
        if let Some(r) = self.rows.last_mut() {
            r.method = label;
        }
        let of_row = t.of_seq.and_then(|seq| self.row_of_seq(seq));
        if let Some(frame_row) = of_row {
            self.fates.insert(frame_row as u32, t.kind);
        }
        self.touches.insert(
            row,
            TouchInfo {
                kind: t.kind,
                direction: t.direction,
                sent_toward: t.sent.is_some().then(|| t.sent_toward()),
                of_row,
            },
        );
    }

    /// Stores a message between an MCP App's View and its host.
    pub fn push_app(&mut self, a: &AppMessage) {
        // The row holds the message itself (filters and the JSON tree read
        // it); which way it went, the View and the host's note beside it.
        self.push_row(u64::MAX, Lane::App, a.at, &a.bytes, LineEnding::Lf, None);
        let label = match a.json() {
            Some(v) => match v.get("method").and_then(serde_json::Value::as_str) {
                Some(m) => m.to_owned(),
                None if v.get("error").is_some() => "error".to_owned(),
                None => "result".to_owned(),
            },
            None => "not JSON".to_owned(),
        };
        let label = self.strings.intern(&label);
        let row = (self.rows.len() - 1) as u32;
        if let Some(r) = self.rows.last_mut() {
            r.method = label;
        }
        if !self.app_names.contains(&a.app) {
            self.app_names.push(a.app.clone());
        }
        let view = self.app_names.iter().position(|n| *n == a.app).unwrap_or_default() as u32;
        self.apps.insert(
            row,
            AppRow {
                toward: a.toward,
                view,
                note: a.note.as_deref().map(Box::from),
            },
        );
    }

    /// Stores an event as a row: frames, stderr lines, authorization steps,
    /// and a line of text for the session's own events (the `Closed` marker
    /// is not stored).
    pub fn push_event(&mut self, e: &Event) -> bool {
        match e {
            Event::Frame(f) => self.push_frame(f),
            Event::Stderr(s) => self.push_stderr(s),
            Event::Auth(a) => self.push_auth(a),
            Event::Touch(t) => self.push_touch(t),
            Event::App(a) => self.push_app(a),
            Event::Model(m) => self.push_model(m),
            Event::Closed { .. } => return false,
            Event::Http(h) => {
                self.push_meta(h.at, &e.summary());
                let record = crate::record::capture::meta_json(e).to_string();
                self.http_records.insert((self.rows.len() - 1) as u32, record.into());
            }
            other => self.push_meta(other.at(), &other.summary()),
        }
        true
    }

    /// The row holding the frame or stderr line with event sequence number `seq`
    /// (what lint findings and captures refer to).
    pub fn row_of_seq(&self, seq: u64) -> Option<usize> {
        let run = match self.seq_runs.binary_search_by_key(&seq, |&(s, _)| s) {
            Ok(i) => i,
            Err(0) => return None,
            Err(i) => i - 1,
        };
        let (start_seq, start_row) = self.seq_runs[run];
        let row = start_row as u64 + (seq - start_seq);
        let end = self
            .seq_runs
            .get(run + 1)
            .map_or(self.rows.len() as u64, |&(_, r)| r as u64);
        let row = usize::try_from(row).ok()?;
        (row < end as usize && !self.rows[row].lane.is_note()).then_some(row)
    }

    pub fn get(&self, index: usize) -> Option<RowRef<'_>> {
        self.rows.get(index).map(|row| RowRef {
            store: self,
            index,
            row,
        })
    }

    pub fn iter(&self) -> impl Iterator<Item = RowRef<'_>> {
        self.rows.iter().enumerate().map(|(index, row)| RowRef {
            store: self,
            index,
            row,
        })
    }

    /// Rows that answer the request at `index`.
    pub fn responses_to(&self, index: usize) -> impl Iterator<Item = usize> + '_ {
        let target = index as u32;
        // Responses come after their request; scanning forward is bounded by the session.
        self.rows
            .iter()
            .enumerate()
            .skip(index + 1)
            .filter(move |(_, r)| r.link_row == target)
            .map(|(i, _)| i)
    }
}

impl<'a> RowRef<'a> {
    pub fn index(&self) -> usize {
        self.index
    }

    pub fn lane(&self) -> Lane {
        self.row.lane
    }

    pub fn at(&self) -> Duration {
        Duration::from_micros(self.row.at_us)
    }

    pub fn raw(&self) -> &'a [u8] {
        let c = &self.store.chunks[self.row.chunk as usize];
        &c[self.row.offset as usize..self.row.offset as usize + self.row.len as usize]
    }

    pub fn text(&self) -> std::borrow::Cow<'a, str> {
        String::from_utf8_lossy(self.raw())
    }

    pub fn ending(&self) -> LineEnding {
        self.row.ending
    }

    pub fn kind(&self) -> Kind {
        self.row.kind
    }

    pub fn anomalies(&self) -> Anomalies {
        Anomalies::from_bits(self.row.anomalies)
    }

    pub fn method(&self) -> Option<&'a str> {
        (self.row.method != NONE).then(|| self.store.strings.get(self.row.method))
    }

    pub fn id(&self) -> Option<RequestId> {
        match self.row.id {
            IdSlot::None => None,
            IdSlot::Number(n) => Some(RequestId::Number(n)),
            IdSlot::Str(i) => Some(RequestId::String(self.store.strings.get(i).to_owned())),
        }
    }

    pub fn tool_error(&self) -> bool {
        self.row.tool_error && self.row.lane != Lane::Auth
    }

    pub fn error_code(&self) -> Option<i64> {
        (self.row.kind == Kind::Error && self.row.lane != Lane::Auth).then_some(self.row.error_code as i64)
    }

    /// For an authorization step: its HTTP status, if it had one.
    pub fn auth_status(&self) -> Option<u16> {
        (self.row.lane == Lane::Auth && self.row.error_code > 0).then_some(self.row.error_code as u16)
    }

    /// For an authorization step: which one.
    pub fn auth_step(&self) -> Option<Step> {
        (self.row.lane == Lane::Auth).then(|| Step::ALL.get(self.row.latency_us as usize).copied())?
    }

    /// For an authorization step: whether it failed.
    pub fn auth_failed(&self) -> bool {
        self.row.lane == Lane::Auth && self.row.tool_error
    }

    /// For an authorization step: the step as recorded.
    pub fn to_auth(&self) -> Option<AuthExchange> {
        if self.row.lane != Lane::Auth {
            return None;
        }
        let v: serde_json::Value = serde_json::from_slice(self.raw()).ok()?;
        crate::record::capture::auth_from_json(&v, self.at()).ok()
    }

    /// For a proxy's touch row: the touch, read back from its record.
    pub fn to_touch(&self) -> Option<Touch> {
        if self.row.lane != Lane::Touch {
            return None;
        }
        let v: serde_json::Value = serde_json::from_slice(self.raw()).ok()?;
        crate::record::capture::touch_from_json(&v, self.at()).ok()
    }

    /// For a request: the row of its first response.
    pub fn answer(&self) -> Option<usize> {
        (self.row.answer_row != NONE).then_some(self.row.answer_row as usize)
    }

    /// For an HTTP exchange's row: its capture record (method, url,
    /// status, `sent` and `received` headers, masked as recorded).
    pub fn http_record(&self) -> Option<&'a str> {
        if self.row.lane != Lane::Meta {
            return None;
        }
        self.store.http_records.get(&(self.index as u32)).map(|s| &**s)
    }

    /// For an App row: which way the message went.
    pub fn app_toward(&self) -> Option<AppToward> {
        self.store.apps.get(&(self.index as u32)).map(|a| a.toward)
    }

    /// For an App row: the View's name.
    pub fn app_name(&self) -> Option<&'a str> {
        let a = self.store.apps.get(&(self.index as u32))?;
        self.store.app_names.get(a.view as usize).map(String::as_str)
    }

    /// For an App row: the host's note on the message.
    pub fn app_note(&self) -> Option<&'a str> {
        self.store.apps.get(&(self.index as u32))?.note.as_deref()
    }

    /// For an App row: the message as recorded.
    pub fn to_app(&self) -> Option<AppMessage> {
        let a = self.store.apps.get(&(self.index as u32))?;
        let mut m = AppMessage::new(
            self.store.app_names.get(a.view as usize).cloned().unwrap_or_default(),
            a.toward,
            self.raw().to_vec(),
        );
        m.at = self.at();
        m.note = a.note.as_deref().map(str::to_owned);
        Some(m)
    }

    /// For a model turn's row: what the timeline shows of it.
    pub fn model(&self) -> Option<&'a ModelRow> {
        self.store.models.get(&(self.index as u32))
    }

    /// For a `tools/call` a model turn asked for: that turn's row; for its
    /// answer, the same (the answer goes back to the model).
    pub fn caused_by_model(&self) -> Option<usize> {
        if self.store.model_calls.is_empty() {
            return None;
        }
        let request = match self.row.lane {
            Lane::Out => self.index as u32,
            Lane::In => self.link().map(|(r, _)| r as u32)?,
            _ => return None,
        };
        self.store.model_calls.get(&request).map(|&t| t as usize)
    }

    /// For a model turn's row: the `tools/call` requests it caused.
    pub fn model_caused(&self) -> Vec<usize> {
        let me = self.index as u32;
        let mut rows: Vec<usize> = self
            .store
            .model_calls
            .iter()
            .filter(|(_, t)| **t == me)
            .map(|(r, _)| *r as usize)
            .collect();
        rows.sort_unstable();
        rows
    }

    /// For a proxy's touch row: what it did.
    pub fn touch(&self) -> Option<TouchInfo> {
        self.store.touches.get(&(self.index as u32)).copied()
    }

    /// For a frame a proxy touched: the latest thing it did to it.
    pub fn fate(&self) -> Option<TouchKind> {
        if self.store.fates.is_empty() {
            return None;
        }
        self.store.fates.get(&(self.index as u32)).copied()
    }

    /// The event sequence number of a frame or stderr line (what lint
    /// findings and captures name); meta rows have none.
    pub fn seq(&self) -> Option<u64> {
        if self.row.lane.is_note() {
            return None;
        }
        let runs = &self.store.seq_runs;
        let i = runs
            .partition_point(|&(_, r)| r as usize <= self.index)
            .checked_sub(1)?;
        let (seq, row) = runs[i];
        Some(seq + (self.index as u64 - row as u64))
    }

    /// For a response: the row of its request and the latency.
    pub fn link(&self) -> Option<(usize, Duration)> {
        (self.row.link_row != NONE).then(|| {
            (
                self.row.link_row as usize,
                Duration::from_micros(self.row.latency_us as u64),
            )
        })
    }

    /// The stored line as a full frame (copies the bytes).
    pub fn to_frame(&self) -> Option<Frame> {
        let direction = self.lane().direction()?;
        Some(Frame {
            seq: self.index as u64,
            at: self.at(),
            direction,
            raw: self.raw().to_vec(),
            ending: self.ending(),
            class: Classification {
                kind: self.kind(),
                id: self.id(),
                method: self.method().map(str::to_owned),
                tool_error: self.tool_error(),
                error_code: self.error_code(),
                anomalies: self.anomalies(),
            },
            link: self.link().map(|(row, latency)| Link {
                request_seq: row as u64,
                method: self
                    .store
                    .get(row)
                    .and_then(|r| r.method())
                    .unwrap_or_default()
                    .to_owned(),
                latency,
            }),
        })
    }
}

#[cfg(test)]
mod tests;
