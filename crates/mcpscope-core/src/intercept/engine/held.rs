//! The queue of frames a breakpoint holds for the user: numbered as they
//! come, taken out by the user's commands or by their breakpoint's timeout.

use super::commands::Refusal;
use crate::proxy::gate::{GateAction, wire_bytes};
use crate::transport::event::{Touch, TouchKind};
use crate::wire::classify::Kind;
use crate::wire::frame::{Direction, Frame};
use std::time::{Duration, Instant};

/// A frame waiting for the user.
#[derive(Clone, Debug, PartialEq)]
pub struct HeldFrame {
    /// Numbered from 1 for this proxy; what commands name.
    pub id: u64,
    pub direction: Direction,
    /// The recorded frame (its `seq` in the capture).
    pub seq: u64,
    /// Exactly as it arrived, ending included.
    pub bytes: Vec<u8>,
    /// The breakpoint that held it, as written.
    pub by: String,
    pub since: Instant,
    /// Forwarded on its own at this time (the breakpoint's timeout).
    pub deadline: Option<Instant>,
    /// A request's method, or a notification's.
    pub method: Option<String>,
    /// A request (the only kind that can be answered instead).
    pub is_request: bool,
}

/// The held frames, oldest first.
pub(super) struct HeldQueue {
    frames: Vec<HeldFrame>,
    next_id: u64,
}

impl HeldQueue {
    pub(super) fn new() -> Self {
        HeldQueue {
            frames: Vec::new(),
            next_id: 1,
        }
    }

    pub(super) fn frames(&self) -> &[HeldFrame] {
        &self.frames
    }

    pub(super) fn len(&self) -> usize {
        self.frames.len()
    }

    /// Holds `frame` for the user; `by` names what held it, `timeout` how
    /// long before it goes on alone.
    pub(super) fn hold(
        &mut self,
        frame: &Frame,
        by: String,
        timeout: Option<Duration>,
        now: Instant,
        out: &mut Vec<GateAction>,
    ) {
        let id = self.next_id;
        self.next_id += 1;
        let text = match timeout {
            Some(t) => format!("held as #{id}; forwarded on its own after {}", crate::text::duration(t)),
            None => format!("held as #{id} until the user acts"),
        };
        out.push(GateAction::Record(
            Touch::new(TouchKind::Held, frame.direction, Some(frame.seq), text).with_rule(Some(&by)),
        ));
        self.frames.push(HeldFrame {
            id,
            direction: frame.direction,
            seq: frame.seq,
            bytes: wire_bytes(frame),
            by,
            since: now,
            deadline: timeout.map(|t| now + t),
            method: frame.class.method.clone(),
            is_request: frame.class.kind == Kind::Request,
        });
    }

    pub(super) fn get(&self, id: u64) -> Result<&HeldFrame, Refusal> {
        self.frames.iter().find(|h| h.id == id).ok_or(Refusal::NoHeldFrame(id))
    }

    pub(super) fn take(&mut self, id: u64) -> Result<HeldFrame, Refusal> {
        match self.frames.iter().position(|h| h.id == id) {
            Some(i) => Ok(self.frames.remove(i)),
            None => Err(Refusal::NoHeldFrame(id)),
        }
    }

    pub(super) fn take_all(&mut self) -> Vec<HeldFrame> {
        std::mem::take(&mut self.frames)
    }

    /// Forwards the frames whose breakpoint's timeout has passed; whether
    /// there were any.
    pub(super) fn forward_expired(&mut self, now: Instant, out: &mut Vec<GateAction>) -> bool {
        let mut any = false;
        let mut i = 0;
        while i < self.frames.len() {
            if self.frames[i].deadline.is_some_and(|d| d <= now) {
                let h = self.frames.remove(i);
                let waited = h
                    .deadline
                    .map(|d| d.saturating_duration_since(h.since))
                    .unwrap_or_default();
                let why = format!(
                    "forwarded on its own: nobody acted within the breakpoint's {}",
                    crate::text::duration(waited)
                );
                forward(h, &why, out);
                any = true;
            } else {
                i += 1;
            }
        }
        any
    }

    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.frames.iter().filter_map(|h| h.deadline).min()
    }
}

/// Sends a held frame on as it arrived, saying why.
pub(super) fn forward(h: HeldFrame, why: &str, out: &mut Vec<GateAction>) {
    out.push(GateAction::Send {
        of_seq: Some(h.seq),
        toward: h.direction,
        bytes: h.bytes,
    });
    out.push(GateAction::Record(
        Touch::new(TouchKind::Forwarded, h.direction, Some(h.seq), why).with_rule(Some(&h.by)),
    ));
}

#[cfg(test)]
mod tests {
    use super::super::Op;
    use super::super::test_support::{CALL, LIST, frame, gate, sends, touches};
    use super::*;
    use crate::proxy::gate::Gate;

    #[test]
    fn a_held_frame_waits_for_the_user_while_others_flow() {
        let (mut g, h) = gate(&[], &[(r#"method == "tools/call""#, None)]);
        let now = Instant::now();
        let mut out = Vec::new();
        g.arrived(&frame(0, Direction::Out, CALL), now, &mut out);
        assert!(sends(&out).is_empty());
        assert_eq!(touches(&out), [TouchKind::Held]);
        assert_eq!(h.board().held.len(), 1);
        assert_eq!(h.board().held[0].method.as_deref(), Some("tools/call"));
        out.clear();
        g.arrived(&frame(1, Direction::Out, LIST), now, &mut out);
        assert_eq!(sends(&out).len(), 1, "another id is not held up");
        out.clear();
        h.send(Op::ForwardEdited(
            1,
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add"}}"#.to_vec(),
        ));
        g.tick(now, &mut out);
        assert_eq!(
            sends(&out)[0].1,
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"add\"}}\n"
        );
        assert_eq!(touches(&out), [TouchKind::Edited]);
        assert!(h.board().held.is_empty());
    }

    #[test]
    fn a_forgotten_breakpoint_forwards_on_its_own_after_its_timeout() {
        let (mut g, h) = gate(&[], &[(r#"method == "tools/call""#, Some(5))]);
        let t0 = Instant::now();
        let mut out = Vec::new();
        g.arrived(&frame(0, Direction::Out, CALL), t0, &mut out);
        assert_eq!(g.next_wake(), Some(t0 + Duration::from_secs(5)));
        out.clear();
        g.tick(t0 + Duration::from_secs(4), &mut out);
        assert!(out.is_empty());
        g.tick(t0 + Duration::from_secs(5), &mut out);
        assert_eq!(sends(&out), [(Direction::Out, format!("{CALL}\n"))]);
        assert_eq!(touches(&out), [TouchKind::Forwarded]);
        assert!(h.board().held.is_empty());
    }

    #[test]
    fn hold_everything_forward_all_and_disable() {
        let (mut g, h) = gate(&[], &[(r#"method == "tools/call""#, None)]);
        let now = Instant::now();
        let mut out = Vec::new();
        h.send(Op::HoldEverything(true));
        g.tick(now, &mut out);
        g.arrived(&frame(0, Direction::Out, LIST), now, &mut out);
        g.arrived(
            &frame(
                1,
                Direction::In,
                r#"{"jsonrpc":"2.0","method":"notifications/message"}"#,
            ),
            now,
            &mut out,
        );
        assert_eq!(h.board().held.len(), 2);
        out.clear();
        h.send(Op::ForwardAll);
        g.tick(now, &mut out);
        assert_eq!(sends(&out).len(), 2);
        out.clear();
        h.send(Op::Disable);
        g.tick(now, &mut out);
        g.arrived(&frame(2, Direction::Out, CALL), now, &mut out);
        assert_eq!(sends(&out).len(), 1, "breakpoints off, nothing held");
        assert!(!h.board().hold_everything);
    }
}
