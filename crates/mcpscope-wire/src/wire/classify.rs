//! Turns one raw line into a description of what it is and what is wrong with it.
//!
//! Classification never fails: a line that is not JSON, or JSON that is not
//! JSON-RPC, is a finding, not an error. The fast path borrows the top-level
//! fields as raw JSON so a flood of notifications is validated, not copied.

use crate::wire::framing::LineEnding;
use crate::wire::message::RequestId;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

/// What kind of message a line holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Request,
    Notification,
    /// A response carrying `result` (also when it wrongly carries `error` too).
    Result,
    /// A response carrying a JSON-RPC `error`.
    Error,
    /// A JSON array at the top level.
    Batch,
    /// Valid JSON that is not a JSON-RPC message.
    NotJsonRpc,
    /// Not JSON at all: usually a log line printed to stdout.
    NotJson,
}

impl Kind {
    pub const ALL: [Kind; 7] = [
        Kind::Request,
        Kind::Notification,
        Kind::Result,
        Kind::Error,
        Kind::Batch,
        Kind::NotJsonRpc,
        Kind::NotJson,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Request => "request",
            Kind::Notification => "notification",
            Kind::Result => "result",
            Kind::Error => "error",
            Kind::Batch => "batch",
            Kind::NotJsonRpc => "not-jsonrpc",
            Kind::NotJson => "not-json",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Kind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    pub fn is_response(self) -> bool {
        matches!(self, Kind::Result | Kind::Error)
    }
}

macro_rules! anomalies {
    ($($(#[doc = $doc:literal])* $name:ident = $bit:literal, $code:literal;)*) => {
        /// A set of protocol anomalies found on one frame.
        #[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
        pub struct Anomalies(u32);

        impl Anomalies {
            $( $(#[doc = $doc])* pub const $name: Anomalies = Anomalies(1 << $bit); )*

            const TABLE: &'static [(Anomalies, &'static str, &'static str)] = &[
                $( (Anomalies::$name, $code, concat!($($doc),*)), )*
            ];
        }
    };
}

anomalies! {
    /// The message is not JSON. On stdio, servers must write only MCP messages to stdout: logs belong on stderr.
    NOT_JSON = 0, "not-json";
    /// The line is not valid UTF-8, which the stdio transport requires.
    INVALID_UTF8 = 1, "invalid-utf8";
    /// Valid JSON, but not a JSON-RPC message (no method, result or error).
    NOT_JSON_RPC = 2, "not-jsonrpc";
    /// The `jsonrpc` member is missing; it must be "2.0".
    MISSING_JSONRPC = 3, "missing-jsonrpc";
    /// The `jsonrpc` member is not "2.0".
    WRONG_JSONRPC = 4, "wrong-jsonrpc";
    /// A response carries both `result` and `error`; exactly one is allowed.
    RESULT_AND_ERROR = 5, "result-and-error";
    /// A notification carries an id; notifications must not have one and get no reply.
    NOTIFICATION_WITH_ID = 6, "notification-with-id";
    /// The id is null; MCP request ids must be a string or an integer.
    NULL_ID = 7, "null-id";
    /// The id is neither a string nor an integer.
    INVALID_ID = 8, "invalid-id";
    /// A JSON array (batch); MCP allowed batches only in revision 2025-03-26 (removed in 2025-06-18).
    BATCH = 9, "batch";
    /// The line is longer than the configured limit (kept whole, shortened only for display), or is a piece of a line longer than the in-memory cap.
    OVERSIZE = 10, "oversize";
    /// The stream ended in the middle of a line: a message cut short.
    PARTIAL_AT_EOF = 11, "partial-at-eof";
    /// The line ends with CRLF; the stdio transport delimits messages with LF.
    CRLF = 12, "crlf";
    /// The line starts with a UTF-8 byte-order mark.
    BOM = 13, "bom";
    /// An empty or whitespace-only line.
    BLANK_LINE = 14, "blank-line";
    /// `params` is present but not an object.
    PARAMS_NOT_OBJECT = 15, "params-not-object";
    /// `result` is not an object, as MCP requires.
    RESULT_NOT_OBJECT = 16, "result-not-object";
    /// The error object lacks an integer `code` or a string `message`.
    MALFORMED_ERROR = 17, "malformed-error";
    /// A response whose id matches no request that was sent.
    UNKNOWN_RESPONSE_ID = 18, "unknown-response-id";
    /// A second response to a request that was already answered.
    DUPLICATE_RESPONSE = 19, "duplicate-response";
    /// A request reuses an id its sender already used in this session.
    DUPLICATE_REQUEST_ID = 20, "duplicate-request-id";
    /// A response to a request that had already timed out.
    LATE_AFTER_TIMEOUT = 21, "late-after-timeout";
    /// A response to a request that had been cancelled.
    AFTER_CANCEL = 22, "after-cancel";
    /// `result.isError` is present but not a boolean.
    IS_ERROR_NOT_BOOL = 23, "is-error-not-bool";
}

impl Anomalies {
    pub fn empty() -> Self {
        Anomalies(0)
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn contains(self, other: Anomalies) -> bool {
        self.0 & other.0 == other.0
    }

    pub fn insert(&mut self, other: Anomalies) {
        self.0 |= other.0;
    }

    pub fn bits(self) -> u32 {
        self.0
    }

    pub fn from_bits(bits: u32) -> Self {
        Anomalies(bits)
    }

    /// Stable kebab-case codes, as written to captures.
    pub fn codes(self) -> impl Iterator<Item = &'static str> {
        Self::TABLE
            .iter()
            .filter(move |(f, _, _)| self.contains(*f))
            .map(|(_, code, _)| *code)
    }

    /// A sentence per anomaly that a newcomer understands.
    pub fn descriptions(self) -> impl Iterator<Item = (&'static str, &'static str)> {
        Self::TABLE
            .iter()
            .filter(move |(f, _, _)| self.contains(*f))
            .map(|(_, code, desc)| (*code, desc.trim()))
    }

    pub fn from_code(code: &str) -> Option<Anomalies> {
        Self::TABLE.iter().find(|(_, c, _)| *c == code).map(|(f, _, _)| *f)
    }
}

impl std::ops::BitOr for Anomalies {
    type Output = Anomalies;
    fn bitor(self, rhs: Self) -> Self {
        Anomalies(self.0 | rhs.0)
    }
}

impl std::fmt::Debug for Anomalies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.codes()).finish()
    }
}

/// What a line is, and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Classification {
    pub kind: Kind,
    pub id: Option<RequestId>,
    pub method: Option<String>,
    /// `result.isError == true`: the tool ran and failed (not a protocol error).
    pub tool_error: bool,
    /// The JSON-RPC error code of an error response.
    pub error_code: Option<i64>,
    pub anomalies: Anomalies,
}

impl Classification {
    fn new(kind: Kind) -> Self {
        Self {
            kind,
            id: None,
            method: None,
            tool_error: false,
            error_code: None,
            anomalies: Anomalies::empty(),
        }
    }
}

/// Limits that affect framing and classification.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Lines longer than this are flagged as oversize (and still kept whole).
    pub max_line_bytes: usize,
    /// The most one line may hold in memory. A longer line (or a stream that
    /// never sends a newline) is recorded in pieces of this size, each marked
    /// oversize, so memory stays bounded and every byte still reaches the capture.
    pub max_held_line_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_line_bytes: 4 * 1024 * 1024,
            max_held_line_bytes: DEFAULT_MAX_HELD_LINE_BYTES,
        }
    }
}

/// See [`Limits::max_held_line_bytes`]: generous, far above any sane message.
pub const DEFAULT_MAX_HELD_LINE_BYTES: usize = 64 * 1024 * 1024;

/// A piece of a line longer than [`Limits::max_held_line_bytes`] (the first
/// one ends in [`LineEnding::Cut`]; the rest follow it): not parsed, since no
/// piece is a whole message.
pub fn classify_piece() -> Classification {
    let mut c = Classification::new(Kind::NotJson);
    c.anomalies.insert(Anomalies::OVERSIZE);
    c
}

/// Borrows a member as raw JSON. Unlike `Option<&RawValue>`, an explicit
/// `null` is kept (as the raw text `null`) rather than read as absent.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

#[derive(Deserialize)]
struct Probe<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ResultProbe<'a> {
    #[serde(rename = "isError", default, borrow, deserialize_with = "present")]
    is_error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ErrorProbe<'a> {
    code: Option<i64>,
    #[serde(borrow)]
    message: Option<&'a RawValue>,
}

/// Classifies one line received or sent on a stdio stream.
pub fn classify(line: &[u8], ending: LineEnding, limits: &Limits) -> Classification {
    let mut extra = Anomalies::empty();
    match ending {
        LineEnding::CrLf => extra.insert(Anomalies::CRLF),
        LineEnding::Eof => extra.insert(Anomalies::PARTIAL_AT_EOF),
        LineEnding::Cut => return classify_piece(),
        LineEnding::Lf => {}
    }
    if line.len() > limits.max_line_bytes {
        extra.insert(Anomalies::OVERSIZE);
    }
    let mut c = classify_bytes(line);
    c.anomalies.insert(extra);
    c
}

/// Classifies a complete JSON text (a line without its terminator, or an HTTP body).
pub fn classify_bytes(line: &[u8]) -> Classification {
    let mut flags = Anomalies::empty();
    let mut bytes = line;
    if let Some(rest) = bytes.strip_prefix(b"\xEF\xBB\xBF") {
        flags.insert(Anomalies::BOM);
        bytes = rest;
    }
    let text: Cow<str> = match std::str::from_utf8(bytes) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => {
            flags.insert(Anomalies::INVALID_UTF8);
            String::from_utf8_lossy(bytes)
        }
    };
    let mut c = classify_text(&text);
    c.anomalies.insert(flags);
    c
}

fn classify_text(text: &str) -> Classification {
    let trimmed = text.trim_start_matches([' ', '\t', '\r', '\n']);
    match trimmed.as_bytes().first() {
        None => {
            let mut c = Classification::new(Kind::NotJson);
            c.anomalies = Anomalies::NOT_JSON | Anomalies::BLANK_LINE;
            c
        }
        Some(b'{') => match serde_json::from_str::<Probe>(text) {
            Ok(p) => classify_object(p),
            // A duplicate key or a non-object somewhere trips the probe; decide
            // with a full parse.
            Err(_) => classify_slow(text),
        },
        Some(_) => classify_slow(text),
    }
}

fn classify_slow(text: &str) -> Classification {
    match serde_json::from_str::<serde_json::Value>(text) {
        Err(_) => {
            let mut c = Classification::new(Kind::NotJson);
            c.anomalies.insert(Anomalies::NOT_JSON);
            c
        }
        Ok(serde_json::Value::Array(items)) => {
            let mut c = Classification::new(Kind::Batch);
            c.anomalies.insert(Anomalies::BATCH);
            let all_messages = !items.is_empty()
                && items.iter().all(|i| {
                    i.as_object().is_some_and(|o| {
                        o.contains_key("method") || o.contains_key("result") || o.contains_key("error")
                    })
                });
            if !all_messages {
                c.anomalies.insert(Anomalies::NOT_JSON_RPC);
            }
            c
        }
        Ok(serde_json::Value::Object(o)) => {
            // Valid JSON the probe could not take: a duplicate key, which the
            // last-wins Value parse resolves the way most SDKs would.
            let get = |k: &str| o.get(k).map(|v| v.to_string());
            classify_owned([
                get("jsonrpc"),
                get("id"),
                get("method"),
                get("params"),
                get("result"),
                get("error"),
            ])
        }
        Ok(_) => {
            let mut c = Classification::new(Kind::NotJsonRpc);
            c.anomalies.insert(Anomalies::NOT_JSON_RPC);
            c
        }
    }
}

fn classify_owned(fields: [Option<String>; 6]) -> Classification {
    let raw: Vec<Option<Box<RawValue>>> = fields
        .into_iter()
        .map(|f| f.map(|s| RawValue::from_string(s).expect("re-serialised JSON is valid")))
        .collect();
    classify_object(Probe {
        jsonrpc: raw[0].as_deref(),
        id: raw[1].as_deref(),
        method: raw[2].as_deref(),
        params: raw[3].as_deref(),
        result: raw[4].as_deref(),
        error: raw[5].as_deref(),
    })
}

/// An id from its JSON text, as [`RequestId::from_json`] reads it. Most ids
/// are small non-negative integers, read without building a `Value`.
fn id_from_json(text: &str) -> Option<RequestId> {
    if !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && let Ok(n) = text.parse::<i64>()
    {
        return Some(RequestId::Number(n));
    }
    serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .as_ref()
        .and_then(RequestId::from_json)
}

fn classify_object(p: Probe) -> Classification {
    let mut flags = Anomalies::empty();
    match p.jsonrpc {
        None => flags.insert(Anomalies::MISSING_JSONRPC),
        Some(v) if v.get() != "\"2.0\"" => flags.insert(Anomalies::WRONG_JSONRPC),
        Some(_) => {}
    }

    let (id, id_present) = match p.id {
        None => (None, false),
        Some(raw) => {
            let text = raw.get();
            if text == "null" {
                flags.insert(Anomalies::NULL_ID);
                (None, true)
            } else {
                match id_from_json(text) {
                    Some(id) => (Some(id), true),
                    None => {
                        flags.insert(Anomalies::INVALID_ID);
                        (None, true)
                    }
                }
            }
        }
    };

    let method = p
        .method
        .and_then(|m| serde_json::from_str::<Cow<str>>(m.get()).ok())
        .map(Cow::into_owned);

    let mut c = if p.method.is_some() {
        if method.is_none() {
            // `method` must be a string.
            flags.insert(Anomalies::NOT_JSON_RPC);
        }
        if p.params.is_some_and(|params| !params.get().starts_with('{')) {
            flags.insert(Anomalies::PARAMS_NOT_OBJECT);
        }
        let is_notification_method = method.as_deref().is_some_and(|m| m.starts_with("notifications/"));
        if id_present && is_notification_method {
            flags.insert(Anomalies::NOTIFICATION_WITH_ID);
            let mut c = Classification::new(Kind::Notification);
            c.id = id;
            c
        } else if id_present && !flags.contains(Anomalies::NULL_ID) {
            let mut c = Classification::new(Kind::Request);
            c.id = id;
            c
        } else {
            // A null id makes a request unanswerable: treat it as the
            // notification it effectively is, and say so.
            if flags.contains(Anomalies::NULL_ID) {
                flags.insert(Anomalies::NOTIFICATION_WITH_ID);
            }
            Classification::new(Kind::Notification)
        }
    } else if p.result.is_some() || p.error.is_some() {
        let mut c = if let Some(err) = p.error {
            if p.result.is_some() {
                flags.insert(Anomalies::RESULT_AND_ERROR);
            }
            let mut c = Classification::new(if p.result.is_some() { Kind::Result } else { Kind::Error });
            match serde_json::from_str::<ErrorProbe>(err.get()) {
                Ok(ep) => {
                    c.error_code = ep.code;
                    let message_ok = ep.message.is_some_and(|m| m.get().starts_with('"'));
                    if ep.code.is_none() || !message_ok {
                        flags.insert(Anomalies::MALFORMED_ERROR);
                    }
                }
                Err(_) => flags.insert(Anomalies::MALFORMED_ERROR),
            }
            c
        } else {
            Classification::new(Kind::Result)
        };
        if let Some(result) = p.result {
            if result.get().starts_with('{') {
                if let Ok(rp) = serde_json::from_str::<ResultProbe>(result.get()) {
                    match rp.is_error.map(RawValue::get) {
                        Some("true") => c.tool_error = true,
                        Some("false") | None => {}
                        Some(_) => flags.insert(Anomalies::IS_ERROR_NOT_BOOL),
                    }
                }
            } else {
                flags.insert(Anomalies::RESULT_NOT_OBJECT);
            }
        }
        if !id_present && c.kind != Kind::Error {
            // A result must echo the request id; an error may lack one only
            // when the request id could not be read.
            flags.insert(Anomalies::NOT_JSON_RPC);
        }
        c.id = id;
        c
    } else {
        flags.insert(Anomalies::NOT_JSON_RPC);
        let mut c = Classification::new(Kind::NotJsonRpc);
        c.id = id;
        c
    };
    c.method = method;
    c.anomalies = flags;
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cl(s: &[u8]) -> Classification {
        classify(s, LineEnding::Lf, &Limits::default())
    }

    #[test]
    fn request_notification_result_error() {
        let r = cl(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#);
        assert_eq!(r.kind, Kind::Request);
        assert_eq!(r.id, Some(RequestId::Number(1)));
        assert_eq!(r.method.as_deref(), Some("initialize"));
        assert!(r.anomalies.is_empty());

        let n = cl(br#"{"method":"notifications/initialized","jsonrpc":"2.0"}"#);
        assert_eq!(n.kind, Kind::Notification);
        assert!(n.anomalies.is_empty(), "{:?}", n.anomalies);

        let res = cl(br#"{"result":{"content":[],"isError":false},"jsonrpc":"2.0","id":"a"}"#);
        assert_eq!(res.kind, Kind::Result);
        assert_eq!(res.id, Some(RequestId::String("a".into())));
        assert!(!res.tool_error);

        let e = cl(br#"{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"Method not found"}}"#);
        assert_eq!(e.kind, Kind::Error);
        assert_eq!(e.error_code, Some(-32601));
        assert!(e.anomalies.is_empty());
    }

    #[test]
    fn tool_error_is_not_a_protocol_error() {
        let r = cl(br#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"boom"}],"isError":true}}"#);
        assert_eq!(r.kind, Kind::Result);
        assert!(r.tool_error);
        let bad = cl(br#"{"jsonrpc":"2.0","id":3,"result":{"isError":"yes"}}"#);
        assert!(bad.anomalies.contains(Anomalies::IS_ERROR_NOT_BOOL));
    }

    #[test]
    fn log_line_on_stdout_is_not_json() {
        let c = cl(b"Server started on stdio");
        assert_eq!(c.kind, Kind::NotJson);
        assert!(c.anomalies.contains(Anomalies::NOT_JSON));
        // Looks like JSON at first, is not.
        assert_eq!(cl(b"{not json").kind, Kind::NotJson);
        assert_eq!(cl(b"[INFO] ready").kind, Kind::NotJson);
    }

    #[test]
    fn invalid_utf8_is_flagged_and_still_classified() {
        let c = cl(b"\xff\xfe not utf8");
        assert_eq!(c.kind, Kind::NotJson);
        assert!(c.anomalies.contains(Anomalies::INVALID_UTF8));
        let c = cl(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"\xff\"}}");
        assert_eq!(c.kind, Kind::Notification);
        assert!(c.anomalies.contains(Anomalies::INVALID_UTF8));
    }

    #[test]
    fn json_that_is_not_jsonrpc() {
        for line in [&b"{\"hello\":\"world\"}"[..], b"42", b"\"str\"", b"null"] {
            let c = cl(line);
            assert_eq!(c.kind, Kind::NotJsonRpc, "{}", String::from_utf8_lossy(line));
            assert!(c.anomalies.contains(Anomalies::NOT_JSON_RPC));
        }
        let c = cl(br#"{"jsonrpc":"2.0","id":1}"#);
        assert_eq!(c.kind, Kind::NotJsonRpc);
        let c = cl(br#"{"jsonrpc":"2.0","method":5}"#);
        assert!(c.anomalies.contains(Anomalies::NOT_JSON_RPC));
    }

    #[test]
    fn jsonrpc_member_missing_or_wrong() {
        let c = cl(br#"{"method":"notifications/message","params":{}}"#);
        assert_eq!(c.kind, Kind::Notification);
        assert!(c.anomalies.contains(Anomalies::MISSING_JSONRPC));
        let c = cl(br#"{"jsonrpc":"1.0","method":"notifications/message"}"#);
        assert!(c.anomalies.contains(Anomalies::WRONG_JSONRPC));
        let c = cl(br#"{"jsonrpc":2.0,"method":"notifications/message"}"#);
        assert!(c.anomalies.contains(Anomalies::WRONG_JSONRPC));
    }

    #[test]
    fn result_and_error_both() {
        let c = cl(br#"{"jsonrpc":"2.0","id":2,"result":{},"error":{"code":-1,"message":"x"}}"#);
        assert!(c.anomalies.contains(Anomalies::RESULT_AND_ERROR));
        assert_eq!(c.id, Some(RequestId::Number(2)));
    }

    #[test]
    fn notification_with_id_and_null_id() {
        let c = cl(br#"{"jsonrpc":"2.0","method":"notifications/message","id":7,"params":{}}"#);
        assert_eq!(c.kind, Kind::Notification);
        assert!(c.anomalies.contains(Anomalies::NOTIFICATION_WITH_ID));
        let c = cl(br#"{"jsonrpc":"2.0","method":"tools/list","id":null}"#);
        assert!(c.anomalies.contains(Anomalies::NULL_ID));
        assert_eq!(c.kind, Kind::Notification);
        let c = cl(br#"{"jsonrpc":"2.0","method":"tools/list","id":1.5}"#);
        assert!(c.anomalies.contains(Anomalies::INVALID_ID));
    }

    #[test]
    fn batch_array() {
        let c = cl(br#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b"}]"#);
        assert_eq!(c.kind, Kind::Batch);
        assert!(c.anomalies.contains(Anomalies::BATCH));
        assert!(!c.anomalies.contains(Anomalies::NOT_JSON_RPC));
        let c = cl(b"[1,2]");
        assert_eq!(c.kind, Kind::Batch);
        assert!(c.anomalies.contains(Anomalies::NOT_JSON_RPC));
    }

    #[test]
    fn oversize_crlf_partial_bom_blank() {
        let limits = Limits {
            max_line_bytes: 10,
            ..Limits::default()
        };
        let c = classify(
            br#"{"jsonrpc":"2.0","method":"notifications/x"}"#,
            LineEnding::CrLf,
            &limits,
        );
        assert_eq!(c.kind, Kind::Notification);
        assert!(c.anomalies.contains(Anomalies::OVERSIZE | Anomalies::CRLF));
        let c = classify(br#"{"jsonrpc":"2.0","id":2,"res"#, LineEnding::Eof, &Limits::default());
        assert_eq!(c.kind, Kind::NotJson);
        assert!(c.anomalies.contains(Anomalies::PARTIAL_AT_EOF));
        let c = cl(b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1}");
        assert_eq!(c.kind, Kind::Request);
        assert!(c.anomalies.contains(Anomalies::BOM));
        let c = cl(b"   ");
        assert!(c.anomalies.contains(Anomalies::BLANK_LINE));
    }

    #[test]
    fn duplicate_keys_take_the_slow_path() {
        let c = cl(br#"{"jsonrpc":"2.0","id":1,"id":2,"result":{}}"#);
        assert_eq!(c.kind, Kind::Result);
        assert_eq!(c.id, Some(RequestId::Number(2)));
    }

    #[test]
    fn params_and_result_shapes() {
        let c = cl(br#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}"#);
        assert!(c.anomalies.contains(Anomalies::PARAMS_NOT_OBJECT));
        let c = cl(br#"{"jsonrpc":"2.0","id":1,"result":5}"#);
        assert!(c.anomalies.contains(Anomalies::RESULT_NOT_OBJECT));
        let c = cl(br#"{"jsonrpc":"2.0","id":1,"result":null}"#);
        assert_eq!(c.kind, Kind::Result);
        assert!(c.anomalies.contains(Anomalies::RESULT_NOT_OBJECT));
        let c = cl(br#"{"jsonrpc":null,"method":"notifications/x"}"#);
        assert!(c.anomalies.contains(Anomalies::WRONG_JSONRPC));
        let c = cl(br#"{"jsonrpc":"2.0","id":1,"error":{"message":"no code"}}"#);
        assert!(c.anomalies.contains(Anomalies::MALFORMED_ERROR));
    }

    #[test]
    fn ids_read_as_from_json_reads_them() {
        for text in [
            "0",
            "7",
            "9223372036854775807",
            "9223372036854775808",
            "123456789012345678901234567890",
            "-1",
            "-0",
            "1.0",
            "1e3",
            "\"12\"",
            "\"a\\\"b\"",
            "true",
            "[1]",
        ] {
            let slow = serde_json::from_str::<serde_json::Value>(text)
                .ok()
                .as_ref()
                .and_then(RequestId::from_json);
            assert_eq!(id_from_json(text), slow, "{text}");
        }
    }

    #[test]
    fn escaped_method_names() {
        let c = cl(br#"{"jsonrpc":"2.0","id":1,"method":"tools\/list"}"#);
        assert_eq!(c.method.as_deref(), Some("tools/list"));
    }

    #[test]
    fn codes_round_trip() {
        let a = Anomalies::CRLF | Anomalies::BATCH;
        let codes: Vec<_> = a.codes().collect();
        assert_eq!(codes, ["batch", "crlf"]);
        let back = codes
            .iter()
            .fold(Anomalies::empty(), |acc, c| acc | Anomalies::from_code(c).unwrap());
        assert_eq!(back, a);
        assert!(a.descriptions().all(|(_, d)| !d.is_empty()));
    }
}
