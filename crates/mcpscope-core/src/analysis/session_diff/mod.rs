//! Compares the same session against two servers, method by method.
//!
//! Exchanges are aligned by method (and tool, prompt or resource name) and
//! by occurrence, never by id; values compare without regard to key order;
//! timing is ignored. Lists of named things (tools, prompts, resources) are
//! matched by name, since SDKs list them in different orders.

use crate::protocol::methods;
use crate::record::capture::CaptureError;
use crate::transport::event::Event;
use crate::wire::classify::Kind;
use crate::wire::frame::{Direction, Frame};
use crate::wire::message::ErrorObject;
use foldhash::{HashMap, HashMapExt as _};
use serde_json::Value;
use serde_json::value::RawValue;
use std::collections::BTreeMap;

/// One request and what came back.
#[derive(Clone, Debug)]
pub struct Exchange {
    /// e.g. `tools/call echo #1`
    pub key: String,
    pub method: String,
    pub params: Option<Value>,
    pub outcome: Outcome,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Result(Value),
    Error(ErrorObject),
    /// An `error` member that is not a JSON-RPC error object (no integer
    /// code or no message), as it was sent: no code is made up for it.
    MalformedError(Value),
    NoResponse,
}

/// How one aligned exchange compares.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    Same,
    OnlyInA,
    OnlyInB,
    /// Each line names a path and how the two sides differ.
    Differs(Vec<String>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct DiffEntry {
    pub key: String,
    pub verdict: Verdict,
}

/// Requests the client sent and their responses, in order.
pub fn exchanges(events: &[Event]) -> Vec<Exchange> {
    let mut c = Collector::default();
    for e in events {
        c.push(e);
    }
    c.finish().iter().map(RawExchange::to_exchange).collect()
}

/// An exchange as read, its JSON kept as text until it is compared or shown:
/// a million of them cost about their bytes, not a tree of values each.
#[derive(Clone, Debug)]
pub struct RawExchange {
    pub key: String,
    pub method: String,
    params: Option<Box<RawValue>>,
    outcome: RawOutcome,
}

#[derive(Clone, Debug)]
enum RawOutcome {
    Result(Box<RawValue>),
    Error(ErrorObject),
    MalformedError(Value),
    NoResponse,
}

fn parse(raw: &RawValue) -> Value {
    serde_json::from_str(raw.get()).unwrap_or(Value::Null)
}

fn to_raw(v: &Value) -> Box<RawValue> {
    RawValue::from_string(v.to_string()).expect("a Value prints as JSON")
}

impl RawExchange {
    pub fn to_exchange(&self) -> Exchange {
        Exchange {
            key: self.key.clone(),
            method: self.method.clone(),
            params: self.params.as_deref().map(parse),
            outcome: self.outcome(),
        }
    }

    fn outcome(&self) -> Outcome {
        match &self.outcome {
            RawOutcome::Result(r) => Outcome::Result(parse(r)),
            RawOutcome::Error(e) => Outcome::Error(e.clone()),
            RawOutcome::MalformedError(v) => Outcome::MalformedError(v.clone()),
            RawOutcome::NoResponse => Outcome::NoResponse,
        }
    }
}

/// `Some` for any value, `null` included (a plain `Option` reads `null` as absent).
fn present_raw<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue as serde::Deserialize>::deserialize(d).map(Some)
}

#[derive(serde::Deserialize)]
struct RequestParts<'a> {
    #[serde(borrow, default, deserialize_with = "present_raw")]
    params: Option<&'a RawValue>,
}

#[derive(serde::Deserialize)]
struct Subject {
    #[serde(default)]
    name: Option<Value>,
    #[serde(default)]
    uri: Option<Value>,
}

#[derive(serde::Deserialize)]
struct ResponseParts<'a> {
    #[serde(borrow, default, deserialize_with = "present_raw")]
    result: Option<&'a RawValue>,
    #[serde(default)]
    error: Option<Value>,
}

/// Gathers the exchanges of a session event by event, keeping only their JSON
/// text and the requests still waiting for an answer.
#[derive(Default)]
pub struct Collector {
    /// Only requests with these seqs become exchanges (a filter's), when set;
    /// the others still count towards each key's `#n`, so keys stay those of
    /// the unfiltered diff.
    keep: Option<std::collections::HashSet<u64>>,
    out: Vec<RawExchange>,
    /// Request seq -> its exchange, until the first response.
    waiting: HashMap<u64, usize>,
    /// Response seq -> its exchange, for a proxy that later changed or
    /// dropped that response.
    answered_by: HashMap<u64, usize>,
    seen: HashMap<String, usize>,
    /// A View's request (its name and id) -> its exchange, until the host answers.
    app_waiting: HashMap<(String, String), usize>,
}

impl Collector {
    pub fn keeping(seqs: std::collections::HashSet<u64>) -> Self {
        Self {
            keep: Some(seqs),
            ..Self::default()
        }
    }

    pub fn push(&mut self, e: &Event) {
        if let Event::Touch(t) = e {
            self.touched(t);
            return;
        }
        if let Event::App(a) = e {
            self.app_message(a);
            return;
        }
        if let Event::Model(m) = e {
            self.model_turn(m);
            return;
        }
        let Event::Frame(f) = e else { return };
        if f.direction == Direction::In
            && f.kind().is_response()
            && let Some(link) = &f.link
        {
            if let Some(i) = self.waiting.remove(&link.request_seq) {
                self.out[i].outcome = response_outcome(f);
                self.answered_by.insert(f.seq, i);
            }
            return;
        }
        if f.direction != Direction::Out || f.kind() != Kind::Request {
            return;
        }
        let method = f.class.method.clone().unwrap_or_default();
        let params: Option<Box<RawValue>> = match serde_json::from_slice::<RequestParts>(&f.raw) {
            Ok(parts) => parts.params.map(ToOwned::to_owned),
            Err(_) => f.json().and_then(|v| v.get("params").map(to_raw)),
        };
        let subject = params
            .as_deref()
            .and_then(|p| serde_json::from_str::<Subject>(p.get()).ok())
            .and_then(|s| {
                [s.name, s.uri].into_iter().find_map(|v| match v {
                    Some(Value::String(s)) => Some(s),
                    _ => None,
                })
            });
        let base = match subject {
            Some(s) => format!("{method} {s}"),
            None => method.clone(),
        };
        // Counted without copying the base when it was seen before (most requests).
        let n = match self.seen.get_mut(&base) {
            Some(n) => {
                *n += 1;
                *n
            }
            None => {
                self.seen.insert(base.clone(), 1);
                1
            }
        };
        if self.keep.as_ref().is_some_and(|k| !k.contains(&f.seq)) {
            return;
        }
        self.waiting.insert(f.seq, self.out.len());
        self.out.push(RawExchange {
            key: format!("{base} #{n}"),
            method,
            params,
            outcome: RawOutcome::NoResponse,
        });
    }

    /// A View's request to its host is an exchange of its own (keyed `app
    /// NAME METHOD SUBJECT #n`), answered by what the host sent back: two
    /// captures of the same View compare message for message.
    fn app_message(&mut self, a: &crate::transport::event::AppMessage) {
        use crate::transport::event::AppToward;
        let Some(v) = a.json() else { return };
        let Some(id) = v.get("id").map(Value::to_string) else {
            return;
        };
        match (a.toward, a.method.as_deref()) {
            (AppToward::Host, Some(method)) => {
                let params = v.get("params").map(to_raw);
                let subject = v
                    .get("params")
                    .and_then(|p| p.get("name").or_else(|| p.get("uri")).or_else(|| p.get("mode")))
                    .and_then(Value::as_str)
                    .map(|s| format!(" {s}"))
                    .unwrap_or_default();
                let base = format!("app {} {method}{subject}", a.app);
                let n = self.seen.entry(base.clone()).or_insert(0);
                *n += 1;
                let key = format!("{base} #{n}");
                if self.keep.is_some() {
                    // A filter's diff keeps frames; the View's traffic has no seq.
                    return;
                }
                self.app_waiting.insert((a.app.clone(), id), self.out.len());
                self.out.push(RawExchange {
                    key,
                    method: method.to_owned(),
                    params,
                    outcome: RawOutcome::NoResponse,
                });
            }
            (AppToward::View, None) => {
                if let Some(i) = self.app_waiting.remove(&(a.app.clone(), id)) {
                    self.out[i].outcome = match v.get("error") {
                        Some(e) => match ErrorObject::from_json(e) {
                            Some(e) => RawOutcome::Error(e),
                            None => RawOutcome::MalformedError(e.clone()),
                        },
                        None => RawOutcome::Result(to_raw(v.get("result").unwrap_or(&Value::Null))),
                    };
                }
            }
            _ => {}
        }
    }

    /// A model turn (a chat's) is an exchange of its own (keyed `model
    /// #n`): what the model was sent (the conversation so far) and what it
    /// answered (its text, the tools it asked for, why it stopped, which
    /// model): two recordings of a chat compare turn for turn; tokens and
    /// times are left out, as timing is.
    fn model_turn(&mut self, m: &crate::model::record::ModelExchange) {
        let n = self.seen.entry("model".to_owned()).or_insert(0);
        *n += 1;
        let key = format!("model #{n}");
        if self.keep.is_some() {
            // A filter's diff keeps frames; a model turn has no seq.
            return;
        }
        let mut sent = serde_json::Map::new();
        for k in ["system", "messages", "tools"] {
            if let Some(v) = m.request.get(k) {
                sent.insert(k.to_owned(), v.clone());
            }
        }
        let outcome = match &m.error {
            Some(e) => RawOutcome::MalformedError(serde_json::json!({"failed": e})),
            None => {
                let t = m.turn();
                let calls: Vec<Value> = t
                    .tool_calls
                    .iter()
                    .map(|c| serde_json::json!({"name": c.name, "arguments": c.arguments.clone().unwrap_or(Value::Null)}))
                    .collect();
                RawOutcome::Result(to_raw(&serde_json::json!({
                    "model": format!("{}:{}", m.provider, m.model),
                    "text": t.text,
                    "tool_calls": calls,
                    "stop_reason": t.stop_reason,
                })))
            }
        };
        self.out.push(RawExchange {
            key,
            method: "model".into(),
            params: Some(to_raw(&Value::Object(sent))),
            outcome,
        });
    }

    /// An intercepting proxy's touch: the exchange becomes what the client
    /// saw (the proxy's own answer, the changed response, none at all).
    fn touched(&mut self, t: &crate::transport::event::Touch) {
        use crate::transport::event::TouchKind;
        let Some(seq) = t.of_seq else { return };
        let sent_outcome = || {
            let sent = t.sent.as_deref()?;
            let line = crate::wire::framing::LineSplitter::lines_of(sent).into_iter().next()?;
            let frame = Frame::from_line(0, t.at, Direction::In, line, &crate::wire::classify::Limits::default());
            frame.kind().is_response().then(|| response_outcome(&frame))
        };
        match t.kind {
            TouchKind::Answered => {
                if let (Some(i), Some(outcome)) = (self.waiting.remove(&seq), sent_outcome()) {
                    self.out[i].outcome = outcome;
                }
            }
            TouchKind::Edited if t.direction == Direction::In => {
                if let Some(&i) = self.answered_by.get(&seq) {
                    // Changed into something that is no response: none came.
                    self.out[i].outcome = sent_outcome().unwrap_or(RawOutcome::NoResponse);
                }
            }
            TouchKind::Dropped if t.direction == Direction::In => {
                if let Some(&i) = self.answered_by.get(&seq) {
                    self.out[i].outcome = RawOutcome::NoResponse;
                }
            }
            _ => {}
        }
    }

    pub fn finish(self) -> Vec<RawExchange> {
        self.out
    }
}

fn response_outcome(r: &Frame) -> RawOutcome {
    let error = |v: Option<&Value>| match v.and_then(ErrorObject::from_json) {
        Some(e) => RawOutcome::Error(e),
        None => RawOutcome::MalformedError(v.cloned().unwrap_or(Value::Null)),
    };
    match serde_json::from_slice::<ResponseParts>(&r.raw) {
        Ok(parts) if r.kind() == Kind::Error => error(parts.error.as_ref()),
        Ok(parts) => RawOutcome::Result(parts.result.map_or_else(|| to_raw(&Value::Null), ToOwned::to_owned)),
        Err(_) => {
            let rv = r.json().unwrap_or(Value::Null);
            if r.kind() == Kind::Error {
                error(rv.get("error"))
            } else {
                RawOutcome::Result(to_raw(rv.get("result").unwrap_or(&Value::Null)))
            }
        }
    }
}

/// Reads a capture's exchanges record by record (the events are not kept).
/// The sessions of an appended capture are read as one, in order.
pub fn read_exchanges(path: &std::path::Path) -> Result<CaptureExchanges, CaptureError> {
    read_exchanges_keeping(path, None)
}

/// [`read_exchanges`] of only the requests whose seqs are in `keep` (and their answers).
pub fn read_exchanges_keeping(
    path: &std::path::Path,
    keep: Option<std::collections::HashSet<u64>>,
) -> Result<CaptureExchanges, CaptureError> {
    use crate::record::capture::{EventReader, Item, READ_BUFFER};
    let file = crate::record::private_files::open_regular(path).map_err(CaptureError::open(path))?;
    let mut reader =
        EventReader::new(std::io::BufReader::with_capacity(READ_BUFFER, file)).map_err(CaptureError::read(path))?;
    let mut c = keep.map_or_else(Collector::default, Collector::keeping);
    let (mut warnings, mut sessions) = (Vec::new(), 1);
    while let Some(item) = reader.next_item().map_err(CaptureError::read(path))? {
        match item {
            Item::Event(e) => c.push(&e),
            Item::Warning(w) => warnings.push(w),
            Item::Boundary(..) => sessions += 1,
        }
    }
    Ok(CaptureExchanges {
        header: reader.header().clone(),
        exchanges: c.finish(),
        warnings,
        sessions,
    })
}

/// A capture's header and exchanges, and what could not be read.
pub struct CaptureExchanges {
    /// The first session's header.
    pub header: crate::record::capture::Header,
    pub exchanges: Vec<RawExchange>,
    /// Lines skipped (see [`crate::record::capture::Loaded::warnings`]).
    pub warnings: Vec<String>,
    /// Sessions in the file.
    pub sessions: usize,
}

/// Both captures' exchanges, read at the same time on two threads.
pub fn read_both(
    a: &std::path::Path,
    b: &std::path::Path,
) -> Result<(CaptureExchanges, CaptureExchanges), CaptureError> {
    read_both_keeping(a, b, None)
}

/// [`read_both`], each capture keeping only the requests its set names.
pub fn read_both_keeping(
    a: &std::path::Path,
    b: &std::path::Path,
    keep: Option<(std::collections::HashSet<u64>, std::collections::HashSet<u64>)>,
) -> Result<(CaptureExchanges, CaptureExchanges), CaptureError> {
    let (ka, kb) = match keep {
        Some((a, b)) => (Some(a), Some(b)),
        None => (None, None),
    };
    std::thread::scope(|s| {
        let other = s.spawn(|| read_exchanges_keeping(b, kb));
        let first = read_exchanges_keeping(a, ka);
        let second = other.join().unwrap_or_else(|_| {
            Err(CaptureError::Stopped {
                path: b.to_owned(),
                what: "reading",
            })
        });
        Ok((first?, second?))
    })
}

/// One aligned pair of exchanges and how they compare.
#[derive(Clone, Debug, PartialEq)]
pub struct Aligned {
    pub key: String,
    pub verdict: Verdict,
    /// Positions in [`Comparison::a`] and [`Comparison::b`].
    pub a: Option<usize>,
    pub b: Option<usize>,
}

/// Both sessions' exchanges and their alignment, for a side-by-side view.
#[derive(Clone, Debug, Default)]
pub struct Comparison {
    pub a: Vec<Exchange>,
    pub b: Vec<Exchange>,
    pub entries: Vec<Aligned>,
}

impl Comparison {
    pub fn differing(&self) -> usize {
        self.entries.iter().filter(|e| e.verdict != Verdict::Same).count()
    }
}

/// Compares two sessions, keeping the exchanges.
pub fn compare(a: &[Event], b: &[Event]) -> Comparison {
    let collect = |events: &[Event]| {
        let mut c = Collector::default();
        for e in events {
            c.push(e);
        }
        c.finish()
    };
    compare_exchanges(&collect(a), &collect(b))
}

/// A comparison of exchanges already read (see [`read_both`]).
pub fn compare_exchanges(a: &[RawExchange], b: &[RawExchange]) -> Comparison {
    Comparison {
        entries: align(a, b),
        a: a.iter().map(RawExchange::to_exchange).collect(),
        b: b.iter().map(RawExchange::to_exchange).collect(),
    }
}

fn align(ea: &[RawExchange], eb: &[RawExchange]) -> Vec<Aligned> {
    let mut b_by_key: HashMap<&str, usize> = HashMap::with_capacity(eb.len());
    for (i, e) in eb.iter().enumerate() {
        b_by_key.insert(e.key.as_str(), i);
    }
    // Sized once: a million entries grown by doubling were a tenth of a large diff.
    let mut entries = Vec::with_capacity(ea.len().max(eb.len()));
    for (ia, x) in ea.iter().enumerate() {
        match b_by_key.remove(x.key.as_str()) {
            None => entries.push(Aligned {
                key: x.key.clone(),
                verdict: Verdict::OnlyInA,
                a: Some(ia),
                b: None,
            }),
            Some(ib) => {
                let lines = compare_pair(x, &eb[ib]);
                entries.push(Aligned {
                    key: x.key.clone(),
                    verdict: if lines.is_empty() {
                        Verdict::Same
                    } else {
                        Verdict::Differs(lines)
                    },
                    a: Some(ia),
                    b: Some(ib),
                });
            }
        }
    }
    for (ib, y) in eb.iter().enumerate() {
        if b_by_key.contains_key(y.key.as_str()) {
            entries.push(Aligned {
                key: y.key.clone(),
                verdict: Verdict::OnlyInB,
                a: None,
                b: Some(ib),
            });
        }
    }
    entries
}

/// How two aligned exchanges differ; equal JSON text is equal without parsing.
fn compare_pair(x: &RawExchange, y: &RawExchange) -> Vec<String> {
    let mut lines = Vec::new();
    if x.method != methods::INITIALIZE {
        // initialize params differ only by clientInfo when the same client ran.
        let same_text = matches!((&x.params, &y.params), (Some(p), Some(q)) if p.get() == q.get());
        if !same_text {
            compare_values(
                "params",
                x.params.as_deref().map(parse).map(without_progress_token).as_ref(),
                y.params.as_deref().map(parse).map(without_progress_token).as_ref(),
                &mut lines,
            );
        }
    }
    match (&x.outcome, &y.outcome) {
        (RawOutcome::Result(p), RawOutcome::Result(q)) if p.get() == q.get() => {}
        _ => compare_outcomes(&x.outcome(), &y.outcome(), &mut lines),
    }
    lines
}

/// Params without `_meta.progressToken`: like the request's id, each
/// client picks its own per request, so two runs of the same call differ
/// there and nowhere that matters (`verify` sends the recorded params
/// without their `_meta`, and the two counted such calls differently).
fn without_progress_token(mut params: Value) -> Value {
    if let Some(meta) = params.get_mut("_meta").and_then(Value::as_object_mut) {
        meta.remove("progressToken");
        if meta.is_empty()
            && let Some(p) = params.as_object_mut()
        {
            p.remove("_meta");
        }
    }
    params
}

/// Compares two sessions.
pub fn diff(a: &[Event], b: &[Event]) -> Vec<DiffEntry> {
    compare(a, b)
        .entries
        .into_iter()
        .map(|e| DiffEntry {
            key: e.key,
            verdict: e.verdict,
        })
        .collect()
}

/// Compares exchanges already read, without keeping them.
pub fn diff_exchanges(a: &[RawExchange], b: &[RawExchange]) -> Vec<DiffEntry> {
    align(a, b)
        .into_iter()
        .map(|e| DiffEntry {
            key: e.key,
            verdict: e.verdict,
        })
        .collect()
}

fn compare_outcomes(a: &Outcome, b: &Outcome, out: &mut Vec<String>) {
    match (a, b) {
        (Outcome::Result(x), Outcome::Result(y)) => {
            let ex = x.get("isError").and_then(Value::as_bool).unwrap_or(false);
            let ey = y.get("isError").and_then(Value::as_bool).unwrap_or(false);
            if ex != ey {
                out.push(format!("tool failure: A isError={ex}, B isError={ey}"));
            }
            compare_values("result", Some(x), Some(y), out);
        }
        (Outcome::Error(x), Outcome::Error(y)) => {
            if x.code != y.code {
                out.push(format!("error code: A {} vs B {}", x, y));
            } else if x.message != y.message {
                out.push(format!("error message: A {:?} vs B {:?}", x.message, y.message));
            }
        }
        (Outcome::MalformedError(x), Outcome::MalformedError(y)) => compare_values("error", Some(x), Some(y), out),
        (Outcome::NoResponse, Outcome::NoResponse) => {}
        (Outcome::NoResponse, _) => out.push("A never answered, B did".into()),
        (_, Outcome::NoResponse) => out.push("B never answered, A did".into()),
        (x, y) => out.push(format!(
            "different error behaviour: A answered with {}, B with {}",
            answer_kind(x),
            answer_kind(y)
        )),
    }
}

fn answer_kind(o: &Outcome) -> String {
    match o {
        Outcome::Result(_) => "a result".into(),
        Outcome::Error(e) => format!("JSON-RPC error {e}"),
        Outcome::MalformedError(v) => format!("a malformed error object {}", preview(v)),
        Outcome::NoResponse => "no answer".into(),
    }
}

fn preview(v: &Value) -> String {
    crate::text::shorten(&v.to_string(), 80)
}

/// Field-by-field differences under `path`.
pub fn compare_values(path: &str, a: Option<&Value>, b: Option<&Value>, out: &mut Vec<String>) {
    compare_values_labelled(path, a, b, ("A", "B"), out);
}

/// [`compare_values`], naming the two sides `labels` ("the recording", "the server").
pub fn compare_values_labelled(
    path: &str,
    a: Option<&Value>,
    b: Option<&Value>,
    labels: (&str, &str),
    out: &mut Vec<String>,
) {
    let (la, lb) = labels;
    let recurse = |p: &str, x: Option<&Value>, y: Option<&Value>, out: &mut Vec<String>| {
        compare_values_labelled(p, x, y, labels, out)
    };
    match (a, b) {
        (None, None) => {}
        (Some(x), None) => out.push(format!("{path}: only in {la} ({})", preview(x))),
        (None, Some(y)) => out.push(format!("{path}: only in {lb} ({})", preview(y))),
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            for (k, vx) in x {
                recurse(&format!("{path}.{k}"), Some(vx), y.get(k), out);
            }
            for (k, vy) in y {
                if !x.contains_key(k) {
                    recurse(&format!("{path}.{k}"), None, Some(vy), out);
                }
            }
        }
        (Some(Value::Array(x)), Some(Value::Array(y))) => match (names(x), names(y)) {
            (Some(nx), Some(ny)) => {
                for (name, vx) in &nx {
                    recurse(&format!("{path}[{name}]"), Some(vx), ny.get(name).copied(), out);
                }
                for (name, vy) in &ny {
                    if !nx.contains_key(name) {
                        recurse(&format!("{path}[{name}]"), None, Some(vy), out);
                    }
                }
            }
            _ => {
                if x.len() != y.len() {
                    out.push(format!("{path}: {la} has {} item(s), {lb} has {}", x.len(), y.len()));
                }
                for (i, (vx, vy)) in x.iter().zip(y).enumerate() {
                    recurse(&format!("{path}[{i}]"), Some(vx), Some(vy), out);
                }
            }
        },
        (Some(x), Some(y)) => {
            if x != y {
                out.push(format!("{path}: {la} {} vs {lb} {}", preview(x), preview(y)));
            }
        }
    }
}

/// Items of a list keyed by their `name` (tools, prompts) or `uri` (resources).
fn names(items: &[Value]) -> Option<BTreeMap<String, &Value>> {
    if items.is_empty() {
        return None;
    }
    let mut map = BTreeMap::new();
    for item in items {
        let key = ["name", "uri"]
            .iter()
            .find_map(|k| item.get(*k).and_then(Value::as_str))?;
        if map.insert(key.to_owned(), item).is_some() {
            return None;
        }
    }
    Some(map)
}

#[cfg(test)]
mod tests;
