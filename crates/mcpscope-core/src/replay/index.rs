//! What one recorded session offers a mock: the client's requests with the
//! answers the server gave, and the server's own frames placed where they
//! happened (between a request and its answer, or after an answer).

use crate::transport::event::Event;
use crate::wire::classify::Kind;
use crate::wire::frame::{Direction, Frame};
use crate::wire::framing::LineEnding;
use crate::wire::message::RequestId;
use serde_json::Value;
use std::collections::HashMap;
use std::time::Duration;

/// The methods a client must get through before anything else works; they are
/// kept by `--only` and matched leniently (their params name the client).
pub const HANDSHAKE_METHODS: [&str; 2] = ["initialize", "server/discover"];

/// How the server answered a recorded request.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// A whole response line: served with the live id put in.
    Recorded { at: Duration, raw: Vec<u8> },
    /// The session ended (or the request timed out) without an answer.
    Never,
    /// The answer was longer than the in-memory cap and was recorded in
    /// pieces; it is not served (a client would not get it whole either).
    Cut { bytes: usize, pieces: usize },
}

/// A frame the server sent on its own: a notification or a request.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerFrame {
    pub seq: u64,
    pub at: Duration,
    pub raw: Vec<u8>,
    pub method: String,
    /// For a server → client request: its recorded id and the client's recorded
    /// answer (the whole response), when one came.
    pub request: Option<ServerRequest>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ServerRequest {
    pub id: RequestId,
    pub reply: Option<Value>,
}

/// One client request and what followed it.
#[derive(Clone, Debug, PartialEq)]
pub struct Exchange {
    pub seq: u64,
    pub at: Duration,
    pub method: String,
    /// The recorded request line. Its params are read from it when needed:
    /// a parsed copy of every request would cost more memory than the capture.
    pub request: Vec<u8>,
    pub answer: Answer,
    /// Server frames sent while this request was outstanding.
    pub during: Vec<ServerFrame>,
    /// Server frames after its answer, before the next client request.
    pub after: Vec<ServerFrame>,
    /// Recorded over Streamable HTTP with the answer in an SSE stream: the
    /// HTTP mock answers it as a stream again (a JSON answer where the
    /// server streamed could hide a client's SSE handling from a test).
    pub sse: bool,
}

impl Exchange {
    pub fn servable(&self) -> bool {
        matches!(self.answer, Answer::Recorded { .. })
    }

    /// The recorded request's params.
    pub fn params(&self) -> Option<Value> {
        params_of(&self.request)
    }
}

/// The `params` of a JSON-RPC message line.
pub fn params_of(raw: &[u8]) -> Option<Value> {
    #[derive(serde::Deserialize)]
    struct Message {
        #[serde(default)]
        params: Option<Value>,
    }
    serde_json::from_slice::<Message>(raw).ok()?.params
}

/// Something in the session a mock cannot serve, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Unservable {
    pub seq: u64,
    pub what: String,
    pub why: String,
}

/// A recorded session, ready to be served.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Index {
    pub exchanges: Vec<Exchange>,
    /// Server frames before the first client request (sent after the first answer:
    /// a stdio server that speaks first is sent to a client that has not spoken).
    pub prelude: Vec<ServerFrame>,
    pub unservable: Vec<Unservable>,
}

/// Where a server frame was put, so the client's answer to it can be added.
#[derive(Clone, Copy)]
enum Place {
    Prelude(usize),
    During(usize, usize),
    After(usize, usize),
}

impl Index {
    /// Builds the index of one session's events (ids are matched within it).
    pub fn build(events: &[Event]) -> Index {
        let mut b = Builder::default();
        for e in events {
            b.push(e);
        }
        b.finish()
    }

    /// Whether anything can be served.
    pub fn servable_count(&self) -> usize {
        self.exchanges.iter().filter(|e| e.servable()).count()
    }

    /// `legacy` (an initialize handshake), `modern` (server/discover or the
    /// `_meta` envelope), or `unknown`.
    pub fn era(&self) -> &'static str {
        let modern_meta = |e: &Exchange| {
            e.params()
                .as_ref()
                .and_then(|p| p.get("_meta"))
                .and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"))
                .is_some()
        };
        // The era shows in the first requests; reading them all would parse the whole capture.
        let first = || self.exchanges.iter().take(8);
        if first().any(|e| e.method == "initialize") {
            "legacy"
        } else if first().any(|e| e.method == "server/discover" || modern_meta(e)) {
            "modern"
        } else {
            "unknown"
        }
    }

    /// Whether the recorded server advertised `capability` in its handshake
    /// answer (`initialize` or `server/discover`).
    pub fn advertises(&self, capability: &str) -> bool {
        self.exchanges
            .iter()
            .take(8)
            .filter(|e| HANDSHAKE_METHODS.contains(&e.method.as_str()))
            .filter_map(|e| match &e.answer {
                Answer::Recorded { raw, .. } => serde_json::from_slice::<Value>(raw).ok(),
                _ => None,
            })
            .any(|v| v.pointer(&format!("/result/capabilities/{capability}")).is_some())
    }

    /// Keeps the exchanges `keep` accepts, and always the handshake: without it
    /// a client could not reach the part that was asked for.
    pub fn retain(&mut self, mut keep: impl FnMut(&Exchange) -> bool) {
        self.exchanges
            .retain(|e| HANDSHAKE_METHODS.contains(&e.method.as_str()) || keep(e));
    }
}

/// Builds an [`Index`] event by event, so that a capture is indexed while it
/// is read, without holding its events.
#[derive(Default)]
pub struct Builder {
    index: Index,
    /// Client requests not answered yet, by id, with the progress token they carry.
    outstanding: HashMap<RequestId, (usize, Option<Value>)>,
    /// Server requests, by id, waiting for the client's answer.
    server_requests: HashMap<RequestId, Place>,
    last_answered: Option<usize>,
    /// The latest exchange of each request id, for the HTTP facts about it
    /// (recorded before or after the answer, depending on the recorder).
    by_id: HashMap<RequestId, usize>,
    /// Pieces of a line over the cap, per direction: (first seq, bytes, count).
    cut: [Option<(u64, Vec<u8>, usize)>; 2],
}

fn slot(d: Direction) -> usize {
    match d {
        Direction::Out => 0,
        Direction::In => 1,
    }
}

impl Builder {
    pub fn push(&mut self, e: &Event) {
        match e {
            Event::Frame(f) => self.frame(f),
            Event::Http(h) => {
                let streamed = h
                    .received_header("content-type")
                    .is_some_and(|ct| ct.to_ascii_lowercase().contains("text/event-stream"));
                if streamed
                    && h.method == "POST"
                    && let Some(&i) = h.request_id.as_ref().and_then(|id| self.by_id.get(id))
                    && let Some(ex) = self.index.exchanges.get_mut(i)
                {
                    ex.sse = true;
                }
            }
            _ => {}
        }
    }

    /// Whether a server answer was seen so far.
    pub fn has_answers(&self) -> bool {
        self.index.servable_count() > 0
    }

    fn frame(&mut self, f: &Frame) {
        let s = slot(f.direction);
        if f.ending == LineEnding::Cut {
            let piece = self.cut[s].get_or_insert_with(|| (f.seq, Vec::new(), 0));
            piece.1.extend_from_slice(&f.raw);
            piece.2 += 1;
            return;
        }
        if let Some((seq, mut bytes, pieces)) = self.cut[s].take() {
            bytes.extend_from_slice(&f.raw);
            self.whole_of_pieces(f.direction, seq, &bytes, pieces + 1);
            return;
        }
        match (f.direction, f.kind()) {
            (Direction::Out, Kind::Request) => self.client_request(f),
            (Direction::Out, Kind::Notification) => {}
            (Direction::Out, Kind::Result | Kind::Error) => self.client_answer(f),
            (Direction::In, Kind::Result | Kind::Error) => self.server_answer(f),
            (Direction::In, Kind::Request | Kind::Notification) => self.server_frame(f),
            (d, Kind::Batch) => self.unservable(f.seq, side(d), "a JSON-RPC batch, which the mock does not replay"),
            (d, Kind::NotJsonRpc) => self.unservable(f.seq, side(d), "JSON that is not JSON-RPC"),
            (d, Kind::NotJson) => self.unservable(f.seq, side(d), "a line that is not JSON"),
        }
    }

    fn unservable(&mut self, seq: u64, what: impl Into<String>, why: impl Into<String>) {
        self.index.unservable.push(Unservable {
            seq,
            what: what.into(),
            why: why.into(),
        });
    }

    fn whole_of_pieces(&mut self, d: Direction, seq: u64, bytes: &[u8], pieces: usize) {
        let why = format!(
            "{} bytes recorded in {pieces} pieces (longer than the line cap): not served",
            bytes.len()
        );
        let id = serde_json::from_slice::<Value>(bytes)
            .ok()
            .and_then(|v| v.get("id").and_then(RequestId::from_json));
        if d == Direction::In
            && let Some((i, _)) = id.and_then(|id| self.outstanding.remove(&id))
        {
            self.index.exchanges[i].answer = Answer::Cut {
                bytes: bytes.len(),
                pieces,
            };
            self.last_answered = Some(i);
            return;
        }
        self.unservable(seq, side(d), why);
    }

    fn client_request(&mut self, f: &Frame) {
        let i = self.index.exchanges.len();
        self.index.exchanges.push(Exchange {
            seq: f.seq,
            at: f.at,
            method: f.class.method.clone().unwrap_or_default(),
            request: f.raw.clone(),
            answer: Answer::Never,
            during: Vec::new(),
            after: Vec::new(),
            sse: false,
        });
        if let Some(id) = &f.class.id {
            self.by_id.insert(id.clone(), i);
            let token = params_of(&f.raw).and_then(|p| p.get("_meta").and_then(|m| m.get("progressToken")).cloned());
            self.outstanding.insert(id.clone(), (i, token));
        }
    }

    fn client_answer(&mut self, f: &Frame) {
        let Some(place) = f.class.id.as_ref().and_then(|id| self.server_requests.remove(id)) else {
            return;
        };
        let frame = match place {
            Place::Prelude(k) => self.index.prelude.get_mut(k),
            Place::During(e, k) => self.index.exchanges.get_mut(e).and_then(|e| e.during.get_mut(k)),
            Place::After(e, k) => self.index.exchanges.get_mut(e).and_then(|e| e.after.get_mut(k)),
        };
        if let Some(req) = frame.and_then(|fr| fr.request.as_mut()) {
            req.reply = f.json();
        }
    }

    fn server_answer(&mut self, f: &Frame) {
        match f.class.id.as_ref().and_then(|id| self.outstanding.remove(id)) {
            Some((i, _)) => {
                self.index.exchanges[i].answer = Answer::Recorded {
                    at: f.at,
                    raw: f.raw.clone(),
                };
                self.last_answered = Some(i);
            }
            None => self.unservable(f.seq, "server answer", "it answers no recorded request"),
        }
    }

    fn server_frame(&mut self, f: &Frame) {
        let method = f.class.method.clone().unwrap_or_default();
        let request = match (f.kind(), &f.class.id) {
            (Kind::Request, Some(id)) => Some(ServerRequest {
                id: id.clone(),
                reply: None,
            }),
            _ => None,
        };
        let sf = ServerFrame {
            seq: f.seq,
            at: f.at,
            raw: f.raw.clone(),
            method,
            request,
        };
        let owner = self
            .progress_owner(f)
            .or_else(|| self.outstanding.values().map(|(i, _)| *i).max());
        let place = match (owner, self.last_answered) {
            (Some(i), _) => {
                let list = &mut self.index.exchanges[i].during;
                list.push(sf);
                Place::During(i, list.len() - 1)
            }
            (None, Some(i)) => {
                let list = &mut self.index.exchanges[i].after;
                list.push(sf);
                Place::After(i, list.len() - 1)
            }
            (None, None) => {
                self.index.prelude.push(sf);
                Place::Prelude(self.index.prelude.len() - 1)
            }
        };
        if let (Kind::Request, Some(id)) = (f.kind(), &f.class.id) {
            self.server_requests.insert(id.clone(), place);
        }
    }

    /// A progress notification belongs to the request that asked for it
    /// (its `progressToken`), even when other requests are outstanding.
    fn progress_owner(&self, f: &Frame) -> Option<usize> {
        if f.class.method.as_deref() != Some("notifications/progress") {
            return None;
        }
        let token = params_of(&f.raw)?.get("progressToken")?.clone();
        self.outstanding
            .values()
            .find(|(_, t)| t.as_ref() == Some(&token))
            .map(|(i, _)| *i)
    }

    pub fn finish(mut self) -> Index {
        for (d, slot) in [(Direction::Out, 0), (Direction::In, 1)] {
            if let Some((seq, bytes, pieces)) = self.cut[slot].take() {
                self.unservable(
                    seq,
                    side(d),
                    format!(
                        "{} bytes in {pieces} pieces, the session ended inside the line",
                        bytes.len()
                    ),
                );
            }
        }
        self.index
    }
}

fn side(d: Direction) -> &'static str {
    match d {
        Direction::Out => "client line",
        Direction::In => "server line",
    }
}

/// Where a top-level member's value is, in the message's exact bytes:
/// answers are served byte for byte, only the id is put in.
pub use crate::wire::raw_member::member_span;

/// `raw` with the top-level `id` member's value replaced by `id` (JSON text).
pub fn with_id(raw: &[u8], id: &[u8]) -> Option<Vec<u8>> {
    Some(crate::wire::raw_member::replaced(raw, member_span(raw, "id")?, id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::replay::Replay;
    use crate::wire::frame::Direction::{In, Out};

    fn index(lines: &[(Direction, &str)]) -> Index {
        Index::build(Replay::of(lines).events())
    }

    #[test]
    fn an_answer_recorded_as_an_sse_stream_is_marked_so() {
        let r = Replay::of(&[
            (Out, r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
            (In, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
            (Out, r#"{"jsonrpc":"2.0","id":2,"method":"tools/call"}"#),
            (In, r#"{"jsonrpc":"2.0","id":2,"result":{}}"#),
        ]);
        let http = |id: i64, ct: &str| {
            Event::Http(crate::transport::event::HttpInfo {
                method: "POST".into(),
                request_id: Some(RequestId::Number(id)),
                received: vec![("content-type".into(), ct.into())],
                ..Default::default()
            })
        };
        let mut events = r.events().to_vec();
        // The HTTP facts come after the answer here; before it works too.
        events.push(http(1, "application/json"));
        events.insert(3, http(2, "text/event-stream"));
        let ix = Index::build(&events);
        assert!(!ix.exchanges[0].sse);
        assert!(ix.exchanges[1].sse);
    }

    #[test]
    fn id_is_spliced_byte_for_byte() {
        let raw = br#"{"jsonrpc":"2.0", "id" : 7,"result":{"a":"}\"id\":1","b":[1,{"id":2}]}}"#;
        let out = with_id(raw, br#""abc""#).unwrap();
        assert_eq!(
            out,
            br#"{"jsonrpc":"2.0", "id" : "abc","result":{"a":"}\"id\":1","b":[1,{"id":2}]}}"#.to_vec()
        );
        assert_eq!(with_id(br#"{"result":{}}"#, b"1"), None);
        assert_eq!(with_id(b"not json", b"1"), None);
        assert_eq!(with_id(br#"{"id":"#, b"1"), None);
    }

    #[test]
    fn exchanges_and_server_frames_are_placed() {
        let ix = index(&[
            (Out, r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#),
            (In, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
            (Out, r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            (
                Out,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":5}}}"#,
            ),
            (
                In,
                r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":5,"progress":1}}"#,
            ),
            (In, r#"{"jsonrpc":"2.0","id":0,"method":"roots/list"}"#),
            (Out, r#"{"jsonrpc":"2.0","id":0,"result":{"roots":[]}}"#),
            (In, r#"{"jsonrpc":"2.0","id":2,"result":{"content":[]}}"#),
            (In, r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#),
            (In, "hello from stdout"),
            (Out, r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#),
        ]);
        assert_eq!(ix.exchanges.len(), 3);
        let call = &ix.exchanges[1];
        assert_eq!(call.during.len(), 2);
        assert_eq!(call.during[0].method, "notifications/progress");
        let reply = call.during[1].request.as_ref().unwrap().reply.as_ref().unwrap();
        assert_eq!(reply["result"]["roots"], serde_json::json!([]));
        assert_eq!(call.after.len(), 1);
        assert_eq!(ix.exchanges[2].answer, Answer::Never);
        assert_eq!(ix.unservable.len(), 1);
        assert_eq!(ix.servable_count(), 2);
        assert_eq!(ix.era(), "legacy");
    }

    #[test]
    fn retain_keeps_the_handshake() {
        let mut ix = index(&[
            (Out, r#"{"jsonrpc":"2.0","id":1,"method":"server/discover"}"#),
            (In, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
            (Out, r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#),
            (In, r#"{"jsonrpc":"2.0","id":2,"result":{}}"#),
        ]);
        assert_eq!(ix.era(), "modern");
        ix.retain(|e| e.method == "tools/call");
        assert_eq!(ix.exchanges.len(), 1);
        assert_eq!(ix.exchanges[0].method, "server/discover");
    }
}
