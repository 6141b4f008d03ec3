//! Framing and the shape of each message: rules about one line, and the
//! message broken over several lines by raw newlines.

use super::facts::Facts;
use super::{Finding, Severity, quote, request_label, rule, sender, stream};
use crate::protocol::methods;
use crate::wire::classify::{Anomalies, Kind};
use crate::wire::frame::{Direction, Frame};
use serde_json::Value;
use std::collections::VecDeque;

// Bounds keep a flood of log lines from turning quadratic.
const MAX_PIECES: usize = 256;
const MAX_BYTES: usize = 8 * 1024 * 1024;

/// A line that is not JSON, kept until it is known whether it is a piece of
/// a split message.
#[derive(Clone)]
struct Piece {
    seq: u64,
    direction: Direction,
    anomalies: Anomalies,
    text: String,
}

impl Piece {
    fn starts_like_json(&self) -> bool {
        self.text
            .trim_start_matches([' ', '\t', '\u{feff}'])
            .starts_with(['{', '['])
            && !self.anomalies.contains(Anomalies::BLANK_LINE)
    }
}

/// The joined text of the pieces from the first one on, as far as scanned.
#[derive(Clone)]
struct Scan {
    next: usize,
    with_newlines: String,
    joined: String,
}

/// The run of lines that are not JSON in one direction, from the first one
/// whose fate is open.
#[derive(Clone, Default)]
struct Pieces {
    pieces: VecDeque<Piece>,
    scan: Option<Scan>,
}

enum Scanned {
    Found(usize),
    Failed,
    NeedMore,
}

impl Pieces {
    /// Settles every piece whose fate is known; with `ended`, no piece
    /// follows the last one (a JSON line came next, or the session is over).
    fn advance(&mut self, ended: bool, out: &mut Vec<Finding>) {
        loop {
            let Some(first) = self.pieces.front() else {
                self.scan = None;
                return;
            };
            if !first.starts_like_json() {
                let p = self.pieces.pop_front().expect("front exists");
                self.scan = None;
                not_json_rules(&p, false, out);
                continue;
            }
            let scan = self.scan.get_or_insert_with(|| Scan {
                next: 1,
                with_newlines: first.text.clone(),
                joined: first.text.clone(),
            });
            let mut outcome = Scanned::NeedMore;
            while scan.next < self.pieces.len() {
                let j = scan.next;
                if j >= MAX_PIECES || scan.joined.len() > MAX_BYTES {
                    outcome = Scanned::Failed;
                    break;
                }
                let text = &self.pieces[j].text;
                scan.with_newlines.push('\n');
                scan.with_newlines.push_str(text);
                scan.joined.push_str(text);
                scan.next += 1;
                // A message can only be complete where a piece closes a bracket.
                if !text.trim_end().ends_with(['}', ']']) {
                    continue;
                }
                if serde_json::from_str::<Value>(&scan.with_newlines).is_ok()
                    || serde_json::from_str::<Value>(&scan.joined).is_ok()
                {
                    outcome = Scanned::Found(j);
                    break;
                }
            }
            match outcome {
                Scanned::Found(j) => {
                    self.scan = None;
                    let pieces: Vec<Piece> = self.pieces.drain(..=j).collect();
                    let first = &pieces[0];
                    out.push(Finding::new(
                        rule::SPLIT_MESSAGE,
                        Severity::Error,
                        pieces.iter().map(|p| p.seq).collect(),
                        format!(
                            "{} wrote one JSON message over {} lines on {}, starting with {}. Over stdio every \
                             message must be on a single line: newlines inside strings must be escaped as \\n \
                             and the JSON must not be pretty-printed.",
                            sender(first.direction),
                            pieces.len(),
                            stream(first.direction),
                            quote(&first.text),
                        ),
                    ));
                    for p in &pieces {
                        not_json_rules(p, true, out);
                    }
                }
                Scanned::NeedMore if !ended => return,
                Scanned::Failed | Scanned::NeedMore => {
                    self.scan = None;
                    let p = self.pieces.pop_front().expect("front exists");
                    not_json_rules(&p, false, out);
                }
            }
        }
    }
}

/// A batch, judged once the negotiated version is known.
struct Batch {
    seq: u64,
    direction: Direction,
    has_initialize: bool,
    bad_items: bool,
}

#[derive(Default)]
pub(super) struct Framing {
    /// Out, In.
    runs: [Pieces; 2],
    batches: Vec<Batch>,
}

fn lane(d: Direction) -> usize {
    match d {
        Direction::Out => 0,
        Direction::In => 1,
    }
}

impl Framing {
    pub fn frame(&mut self, f: &Frame, out: &mut Vec<Finding>) {
        let run = &mut self.runs[lane(f.direction)];
        if f.kind() == Kind::NotJson {
            run.pieces.push_back(Piece {
                seq: f.seq,
                direction: f.direction,
                anomalies: f.anomalies(),
                text: f.text().into_owned(),
            });
            run.advance(false, out);
            return;
        }
        if !run.pieces.is_empty() {
            run.advance(true, out);
        }
        frame_rules(f, out);
        if f.kind() == Kind::Batch {
            let text = f.text();
            let has_initialize = text.contains("\"initialize\"")
                && f.json().and_then(|v| v.as_array().cloned()).is_some_and(|items| {
                    items
                        .iter()
                        .any(|m| m.get("method").and_then(Value::as_str) == Some(methods::INITIALIZE))
                });
            self.batches.push(Batch {
                seq: f.seq,
                direction: f.direction,
                has_initialize,
                bad_items: f.anomalies().contains(Anomalies::NOT_JSON_RPC),
            });
        }
    }

    /// Lines whose fate is open are settled as if nothing followed; batches
    /// are judged by the version negotiated so far.
    pub fn provisional(&self, facts: &Facts, out: &mut Vec<Finding>) {
        for run in &self.runs {
            if !run.pieces.is_empty() {
                run.clone().advance(true, out);
            }
        }
        let negotiated = facts.negotiated();
        for b in &self.batches {
            let why = if b.has_initialize {
                Some("initialize must never be part of a batch".to_owned())
            } else if negotiated == Some("2025-03-26") {
                None
            } else {
                Some(match negotiated {
                    Some(v) => {
                        format!("batches exist only in protocol version 2025-03-26 and this session negotiated {v}")
                    }
                    None => "batches exist only in protocol version 2025-03-26 and this session negotiated none".into(),
                })
            };
            if let Some(why) = why {
                let mut msg = format!(
                    "{} sent a JSON-RPC batch (a JSON array): {why}. Send one message per line.",
                    sender(b.direction)
                );
                if b.bad_items {
                    msg.push_str(" Some of its items are not JSON-RPC messages either.");
                }
                out.push(Finding::new(rule::BATCH_NOT_ALLOWED, Severity::Error, vec![b.seq], msg));
            }
        }
    }
}

/// Rules about the bytes of any line: encoding, terminator, a cut-off end.
fn line_rules(seq: u64, direction: Direction, a: Anomalies, text: &str, in_split: bool, out: &mut Vec<Finding>) {
    let who = sender(direction);
    let mut push = |rule: &'static str, severity: Severity, message: String| {
        out.push(Finding::new(rule, severity, vec![seq], message));
    };
    if a.contains(Anomalies::INVALID_UTF8) {
        push(
            rule::INVALID_UTF8,
            Severity::Error,
            format!(
                "{who} wrote a line on {} that is not valid UTF-8 ({}); the stdio transport carries UTF-8 only.",
                stream(direction),
                quote(text)
            ),
        );
    }
    if a.contains(Anomalies::BOM) {
        push(
            rule::BOM,
            Severity::Warning,
            format!(
                "{who} started a line with a UTF-8 byte-order mark; many JSON parsers reject it. Write plain \
                 UTF-8 without a BOM."
            ),
        );
    }
    if a.contains(Anomalies::CRLF) {
        push(
            rule::CRLF,
            Severity::Warning,
            format!(
                "{who} ended a line with CRLF (\\r\\n); the stdio transport delimits messages with LF (\\n) alone. \
                 Most clients cope, some do not."
            ),
        );
    }
    if a.contains(Anomalies::PARTIAL_AT_EOF) && !in_split {
        if serde_json::from_str::<Value>(text).is_ok() {
            push(
                rule::PARTIAL_AT_EOF,
                Severity::Warning,
                format!(
                    "{who}'s last message on {} has no terminating newline; a client waiting for the newline \
                     never sees it.",
                    stream(direction)
                ),
            );
        } else {
            push(
                rule::PARTIAL_AT_EOF,
                Severity::Error,
                format!(
                    "The stream ended in the middle of a line: {} was cut off while writing {} (the process \
                     died or closed {} mid-message).",
                    who.to_lowercase(),
                    quote(text),
                    stream(direction)
                ),
            );
        }
    }
}

/// A line that is not JSON, once known to be a piece of a split message or not.
fn not_json_rules(p: &Piece, in_split: bool, out: &mut Vec<Finding>) {
    line_rules(p.seq, p.direction, p.anomalies, &p.text, in_split, out);
    let who = sender(p.direction);
    if p.anomalies.contains(Anomalies::BLANK_LINE) {
        out.push(Finding::new(
            rule::BLANK_LINE,
            Severity::Warning,
            vec![p.seq],
            format!(
                "{who} wrote an empty line on {}; every line must be one JSON-RPC message.",
                stream(p.direction)
            ),
        ));
    } else if !in_split && !p.anomalies.contains(Anomalies::PARTIAL_AT_EOF) {
        let advice = match p.direction {
            Direction::In => {
                "Over stdio, stdout carries only JSON-RPC messages; logs belong on stderr (console.error in \
                 Node, print(..., file=sys.stderr) or logging in Python)."
            }
            Direction::Out => "The server's stdin carries only JSON-RPC messages.",
        };
        out.push(Finding::new(
            rule::NOT_JSON,
            Severity::Error,
            vec![p.seq],
            format!(
                "{who} wrote a line on {} that is not JSON: {}. {advice}",
                stream(p.direction),
                quote(&p.text)
            ),
        ));
    }
}

/// Rules about one line that is JSON (batches are judged later, see [`Framing::provisional`]).
fn frame_rules(f: &Frame, out: &mut Vec<Finding>) {
    let a = f.anomalies();
    if a.is_empty() && f.kind() != Kind::NotJsonRpc {
        // Most lines: nothing to say, and no need to look at their text.
        return;
    }
    let text = f.text();
    line_rules(f.seq, f.direction, a, &text, false, out);
    let who = sender(f.direction);
    let seq = vec![f.seq];
    let mut push = |rule: &'static str, severity: Severity, message: String| {
        out.push(Finding::new(rule, severity, seq.clone(), message));
    };
    match f.kind() {
        Kind::NotJson | Kind::Batch => {}
        Kind::NotJsonRpc => {
            let v = f.json();
            let obj = v.as_ref().and_then(Value::as_object);
            let neither = obj.is_some_and(|o| {
                o.contains_key("id")
                    && !o.contains_key("method")
                    && !o.contains_key("result")
                    && !o.contains_key("error")
            });
            if neither {
                push(
                    rule::NEITHER_RESULT_NOR_ERROR,
                    Severity::Error,
                    format!(
                        "{who} sent {} with an id but neither result nor error: a response must carry exactly one \
                         of them.",
                        quote(&text)
                    ),
                );
            } else {
                push(
                    rule::NOT_JSONRPC,
                    Severity::Error,
                    format!(
                        "{who} wrote JSON on {} that is not a JSON-RPC message (no method, result or error): {}. \
                         Only JSON-RPC messages may appear there.",
                        stream(f.direction),
                        quote(&text)
                    ),
                );
            }
        }
        Kind::Request | Kind::Notification | Kind::Result | Kind::Error => {
            // Most lines have no anomaly: nothing to say about them.
            if !a.is_empty() {
                message_rules(f, &mut push);
            }
        }
    }
}

fn message_rules(f: &Frame, push: &mut impl FnMut(&'static str, Severity, String)) {
    let a = f.anomalies();
    let who = sender(f.direction);
    let text = f.text();
    if a.contains(Anomalies::MISSING_JSONRPC) {
        push(
            rule::MISSING_JSONRPC,
            Severity::Error,
            format!(
                "{who} sent a message without \"jsonrpc\": \"2.0\": {}. Every JSON-RPC message must carry it.",
                quote(&text)
            ),
        );
    }
    if a.contains(Anomalies::WRONG_JSONRPC) {
        let value = f
            .json()
            .and_then(|v| v.get("jsonrpc").map(Value::to_string))
            .unwrap_or_else(|| "?".into());
        push(
            rule::WRONG_JSONRPC,
            Severity::Error,
            format!("{who} sent \"jsonrpc\": {value}; it must be exactly the string \"2.0\"."),
        );
    }
    if a.contains(Anomalies::RESULT_AND_ERROR) {
        push(
            rule::RESULT_AND_ERROR,
            Severity::Error,
            format!(
                "{who} sent a response with both result and error: {}. A response carries exactly one of them.",
                quote(&text)
            ),
        );
    }
    if a.contains(Anomalies::NULL_ID) {
        let (severity, msg) = match f.kind() {
            Kind::Error => (
                Severity::Warning,
                format!(
                    "{who} sent an error response with \"id\": null. JSON-RPC allows that only when the request id \
                     could not be read; otherwise the error must echo the id."
                ),
            ),
            Kind::Result => (
                Severity::Error,
                format!("{who} sent a result with \"id\": null; a result must echo the id of its request."),
            ),
            _ if f
                .class
                .method
                .as_deref()
                .is_some_and(|m| m.starts_with("notifications/")) =>
            {
                (
                    Severity::Error,
                    format!(
                        "{who} sent the notification {} with \"id\": null; notifications carry no id at all.",
                        request_label(f)
                    ),
                )
            }
            _ => (
                Severity::Error,
                format!(
                    "{who} sent {} with \"id\": null. MCP request ids must be a string or an integer; with a null \
                     id the request cannot be answered.",
                    request_label(f)
                ),
            ),
        };
        push(rule::NULL_ID, severity, msg);
    } else if a.contains(Anomalies::NOTIFICATION_WITH_ID) {
        push(
            rule::NOTIFICATION_WITH_ID,
            Severity::Error,
            format!(
                "{who} sent the notification {} with an id. Notifications carry no id and get no response; a \
                 receiver may treat it as a request to an unknown method.",
                f.class.method.as_deref().unwrap_or("?")
            ),
        );
    }
    if a.contains(Anomalies::INVALID_ID) {
        let value = f
            .json()
            .and_then(|v| v.get("id").map(Value::to_string))
            .unwrap_or_else(|| "?".into());
        push(
            rule::INVALID_ID,
            Severity::Error,
            format!(
                "{who} used the id {value}; MCP ids must be a string or an integer (no fractions, objects or arrays)."
            ),
        );
    }
    if a.contains(Anomalies::NOT_JSON_RPC) {
        if f.kind() == Kind::Result && f.class.id.is_none() && !a.contains(Anomalies::NULL_ID) {
            push(
                rule::RESPONSE_WITHOUT_ID,
                Severity::Error,
                format!(
                    "{who} sent a result without an id: {}. A result must echo the id of the request it answers, \
                     or it cannot be matched.",
                    quote(&text)
                ),
            );
        } else if matches!(f.kind(), Kind::Request | Kind::Notification) && f.class.method.is_none() {
            push(
                rule::NOT_JSONRPC,
                Severity::Error,
                format!("{who} sent a message whose method is not a string: {}.", quote(&text)),
            );
        }
    }
    if a.contains(Anomalies::PARAMS_NOT_OBJECT) {
        push(
            rule::PARAMS_NOT_OBJECT,
            Severity::Error,
            format!(
                "{who} sent {} with params that are not an object; MCP params are always a JSON object (by name, \
                 never positional).",
                request_label(f)
            ),
        );
    }
    if a.contains(Anomalies::RESULT_NOT_OBJECT) {
        push(
            rule::RESULT_NOT_OBJECT,
            Severity::Error,
            format!(
                "{who} sent a result that is not an object: {}. MCP results are always JSON objects (an empty one \
                 is {{}}).",
                quote(&text)
            ),
        );
    }
    if a.contains(Anomalies::MALFORMED_ERROR) {
        push(
            rule::MALFORMED_ERROR,
            Severity::Error,
            format!(
                "{who} sent an error whose error object lacks an integer code or a string message: {}.",
                quote(&text)
            ),
        );
    }
    if a.contains(Anomalies::IS_ERROR_NOT_BOOL) {
        push(
            rule::IS_ERROR_NOT_BOOL,
            Severity::Error,
            format!(
                "{who} sent a tool result whose isError is not true or false: {}.",
                quote(&text)
            ),
        );
    }
}
