//! What the gate's unit tests share: frames from text, a gate from rules
//! as written, and what the gate did, read back.

use super::{InterceptHandle, Interceptor};
use crate::intercept::rule::{Breakpoint, Toward, parse_fault};
use crate::proxy::gate::GateAction;
use crate::transport::event::TouchKind;
use crate::wire::classify::Limits;
use crate::wire::frame::{Direction, Frame};
use crate::wire::framing::{LineEnding, RawLine};
use std::time::Duration;

pub(super) const CALL: &str = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}"#;
pub(super) const LIST: &str = r#"{"jsonrpc":"2.0","id":8,"method":"tools/list"}"#;

pub(super) fn frame(seq: u64, d: Direction, text: &str) -> Frame {
    Frame::from_line(
        seq,
        Duration::ZERO,
        d,
        RawLine {
            bytes: text.as_bytes().to_vec(),
            ending: LineEnding::Lf,
        },
        &Limits::default(),
    )
}

/// A gate with these fault rules and breakpoints (text, timeout in seconds), seed 42.
pub(super) fn gate(faults: &[&str], breaks: &[(&str, Option<u64>)]) -> (Interceptor, InterceptHandle) {
    let faults = faults.iter().map(|t| parse_fault(t).unwrap()).collect();
    let breaks = breaks
        .iter()
        .map(|(t, secs)| Breakpoint {
            filter: crate::filter::Filter::parse(t).unwrap(),
            toward: Toward::Both,
            timeout: secs.map(Duration::from_secs),
            enabled: true,
        })
        .collect();
    Interceptor::new(faults, breaks, 42)
}

/// The lines sent, and which way.
pub(super) fn sends(out: &[GateAction]) -> Vec<(Direction, String)> {
    out.iter()
        .filter_map(|a| match a {
            GateAction::Send { toward, bytes, .. } => Some((*toward, String::from_utf8_lossy(bytes).into_owned())),
            _ => None,
        })
        .collect()
}

/// The kinds of what was recorded.
pub(super) fn touches(out: &[GateAction]) -> Vec<TouchKind> {
    out.iter()
        .filter_map(|a| match a {
            GateAction::Record(t) => Some(t.kind),
            _ => None,
        })
        .collect()
}
