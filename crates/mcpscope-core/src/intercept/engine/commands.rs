//! The user's side of the gate: the commands (forward, edit, drop, answer,
//! inject, rules set live), the handle that sends them, and why the gate
//! may not carry one out.

use super::answers::{Answer, answer_line, trim_ending, with_ending};
use super::faults::RuleState;
use super::held;
use super::{Board, BreakState, Interceptor, Shared};
use crate::intercept::rule::{Breakpoint, FaultRule};
use crate::proxy::gate::GateAction;
use crate::transport::event::{Touch, TouchKind};
use crate::wire::frame::Direction;
use crossbeam_channel::Sender;
use std::sync::Arc;
use std::time::Duration;

/// A user's command.
#[derive(Clone, Debug)]
pub enum Op {
    Forward(u64),
    /// Forward these bytes instead (anything, even malformed).
    ForwardEdited(u64, Vec<u8>),
    Drop(u64),
    Answer(u64, Answer),
    /// Forward everything held.
    ForwardAll,
    /// Switch every breakpoint off and forward everything held.
    Disable,
    /// Hold every frame from now on (or stop doing so).
    HoldEverything(bool),
    /// Send a line no peer wrote, toward the server (`Out`) or the client.
    Inject {
        toward: Direction,
        bytes: Vec<u8>,
    },
    AddBreakpoint(Breakpoint),
    RemoveBreakpoint(usize),
    EnableBreakpoint(usize, bool),
    AddFault(FaultRule),
    RemoveFault(usize),
    EnableFault(usize, bool),
}

/// Why a command was not carried out.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// The proxy's loop has stopped: nothing takes commands any more.
    #[error("the proxy has ended")]
    Ended,
    /// The proxy's loop did not take the command in time.
    #[error("the proxy did not answer (is it still starting?)")]
    NoAnswer,
    /// The gate took the command and refused it.
    #[error(transparent)]
    Refused(#[from] Refusal),
}

/// What the gate refuses to do, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("no held frame #{0} (it was forwarded, dropped or timed out)")]
    NoHeldFrame(u64),
    #[error("#{0} is not a request: only a request can be answered instead")]
    NotARequest(u64),
    #[error("the held frame has no id to answer")]
    NoIdToAnswer,
    /// Numbered from 1, as the board shows them.
    #[error("no breakpoint {0}")]
    NoBreakpoint(usize),
    #[error("no fault rule {0}")]
    NoFaultRule(usize),
    /// The rule as written, for a proxy that is not the HTTP one.
    #[error("{0}: only the HTTP proxy can do this")]
    HttpOnly(String),
}

/// A command and where to say how it went.
pub struct Command {
    pub op: Op,
    pub reply: Option<Sender<Result<String, CommandError>>>,
}

/// The user's side: sends commands, reads the board. Cheap to clone.
#[derive(Clone)]
pub struct InterceptHandle {
    pub(super) tx: Sender<Command>,
    pub(super) shared: Arc<Shared>,
}

impl InterceptHandle {
    /// Sends a command and waits (up to `wait`) for how it went. A proxy
    /// that has ended says so.
    pub fn command(&self, op: Op, wait: Duration) -> Result<String, CommandError> {
        if self.board().closed {
            return Err(CommandError::Ended);
        }
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.tx
            .send(Command { op, reply: Some(tx) })
            .map_err(|_| CommandError::Ended)?;
        self.wake();
        rx.recv_timeout(wait).map_err(|_| CommandError::NoAnswer)?
    }

    /// Sends a command without waiting.
    pub fn send(&self, op: Op) {
        let _ = self.tx.send(Command { op, reply: None });
        self.wake();
    }

    fn wake(&self) {
        if let Some(w) = self.shared.waker.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            w.wake();
        }
    }

    pub fn board(&self) -> Board {
        self.shared.board.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The board once its version is past `seen`, or after `wait`.
    pub fn board_after(&self, seen: u64, wait: Duration) -> Board {
        let guard = self.shared.board.lock().unwrap_or_else(|e| e.into_inner());
        let (guard, _) = self
            .shared
            .changed
            .wait_timeout_while(guard, wait, |b| b.version <= seen && !b.closed)
            .unwrap_or_else(|e| e.into_inner());
        guard.clone()
    }
}

impl Interceptor {
    /// Carries out a user's command; what it did, or why not.
    pub(super) fn run(&mut self, op: Op, out: &mut Vec<GateAction>) -> Result<String, Refusal> {
        match op {
            Op::Forward(id) => {
                let h = self.held.take(id)?;
                held::forward(h, "forwarded by the user", out);
                Ok(format!("forwarded #{id}"))
            }
            Op::ForwardEdited(id, bytes) => {
                let h = self.held.take(id)?;
                let bytes = with_ending(bytes);
                out.push(GateAction::Send {
                    of_seq: Some(h.seq),
                    toward: h.direction,
                    bytes: bytes.clone(),
                });
                out.push(GateAction::Record(
                    Touch::new(TouchKind::Edited, h.direction, Some(h.seq), "edited by the user")
                        .with_rule(Some(&h.by))
                        .with_sent(bytes),
                ));
                Ok(format!("forwarded #{id} edited"))
            }
            Op::Drop(id) => {
                let h = self.held.take(id)?;
                out.push(GateAction::Record(
                    Touch::new(TouchKind::Dropped, h.direction, Some(h.seq), "dropped by the user")
                        .with_rule(Some(&h.by)),
                ));
                Ok(format!("dropped #{id}"))
            }
            Op::Answer(id, answer) => {
                let h = self.held.get(id)?;
                if !h.is_request {
                    return Err(Refusal::NotARequest(id));
                }
                let line = answer_line(trim_ending(&h.bytes), &answer)?;
                let h = self.held.take(id)?;
                let other = if h.direction == Direction::Out {
                    "server"
                } else {
                    "client"
                };
                out.push(GateAction::Send {
                    of_seq: Some(h.seq),
                    toward: h.direction.opposite(),
                    bytes: line.clone(),
                });
                out.push(GateAction::Record(
                    Touch::new(
                        TouchKind::Answered,
                        h.direction,
                        Some(h.seq),
                        format!("answered by the user; the {other} never saw the request"),
                    )
                    .with_rule(Some(&h.by))
                    .with_sent(line),
                ));
                Ok(format!("answered #{id}"))
            }
            Op::ForwardAll => {
                let n = self.held.len();
                for h in self.held.take_all() {
                    held::forward(h, "forwarded by the user (forward all)", out);
                }
                Ok(format!("forwarded {n} held frame(s)"))
            }
            Op::Disable => {
                for s in &mut self.breakpoints {
                    s.bp.enabled = false;
                }
                self.hold_everything = false;
                let n = self.held.len();
                for h in self.held.take_all() {
                    held::forward(h, "forwarded: breakpoints disabled", out);
                }
                Ok(format!("breakpoints off; forwarded {n} held frame(s)"))
            }
            Op::HoldEverything(on) => {
                self.hold_everything = on;
                Ok(if on {
                    "holding every frame from now on".into()
                } else {
                    "no longer holding every frame".into()
                })
            }

            Op::Inject { toward, bytes } => {
                let bytes = with_ending(bytes);
                let side = if toward == Direction::Out { "server" } else { "client" };
                out.push(GateAction::Send {
                    of_seq: None,
                    toward,
                    bytes: bytes.clone(),
                });
                out.push(GateAction::Record(
                    Touch::new(
                        TouchKind::Injected,
                        toward,
                        None,
                        format!("injected by the user toward the {side}"),
                    )
                    .with_sent(bytes),
                ));
                Ok(format!("sent to the {side}"))
            }
            Op::AddBreakpoint(bp) => {
                let text = bp.text();
                self.breakpoints.push(BreakState { bp, hits: 0 });
                self.note_needs();
                Ok(format!("breakpoint {} set: {text}", self.breakpoints.len()))
            }
            Op::RemoveBreakpoint(i) => {
                if i >= self.breakpoints.len() {
                    return Err(Refusal::NoBreakpoint(i + 1));
                }
                let s = self.breakpoints.remove(i);
                Ok(format!("breakpoint removed: {}", s.bp.text()))
            }
            Op::EnableBreakpoint(i, on) => {
                let s = self.breakpoints.get_mut(i).ok_or(Refusal::NoBreakpoint(i + 1))?;
                s.bp.enabled = on;
                Ok(format!("breakpoint {} {}", i + 1, if on { "on" } else { "off" }))
            }
            Op::AddFault(rule) => {
                let text = rule.text();
                if rule.action.http_only() && !self.faults.http {
                    return Err(Refusal::HttpOnly(text));
                }
                self.faults.rules.push(RuleState::new(rule));
                self.note_needs();
                Ok(format!("fault rule {} set: {text}", self.faults.rules.len()))
            }
            Op::RemoveFault(i) => {
                if i >= self.faults.rules.len() {
                    return Err(Refusal::NoFaultRule(i + 1));
                }
                let s = self.faults.rules.remove(i);
                Ok(format!("fault rule removed: {}", s.rule.text()))
            }
            Op::EnableFault(i, on) => {
                let s = self.faults.rules.get_mut(i).ok_or(Refusal::NoFaultRule(i + 1))?;
                s.rule.enabled = on;
                Ok(format!("fault rule {} {}", i + 1, if on { "on" } else { "off" }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{frame, gate, sends, touches};
    use super::*;
    use crate::proxy::gate::Gate;
    use serde_json::Value;
    use std::time::Instant;

    #[test]
    fn a_notification_cannot_be_answered_and_an_unknown_id_is_named() {
        let (mut g, h) = gate(&[], &[("true", None)]);
        let mut out = Vec::new();
        g.arrived(
            &frame(
                0,
                Direction::Out,
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            ),
            Instant::now(),
            &mut out,
        );
        let (tx, rx) = crossbeam_channel::bounded(1);
        h.tx.send(Command {
            op: Op::Answer(1, Answer::Json(Value::Null)),
            reply: Some(tx),
        })
        .unwrap();
        let (tx2, rx2) = crossbeam_channel::bounded(1);
        h.tx.send(Command {
            op: Op::Drop(99),
            reply: Some(tx2),
        })
        .unwrap();
        g.tick(Instant::now(), &mut out);
        let not_request = rx.recv().unwrap().unwrap_err();
        assert_eq!(not_request, CommandError::Refused(Refusal::NotARequest(1)));
        assert!(not_request.to_string().contains("#1 is not a request"), "{not_request}");
        let unknown = rx2.recv().unwrap().unwrap_err();
        assert_eq!(unknown, CommandError::Refused(Refusal::NoHeldFrame(99)));
        assert!(unknown.to_string().contains("no held frame #99"), "{unknown}");
        assert_eq!(h.board().held.len(), 1, "still held");
    }

    /// Each refusal as the user reads it (the control socket sends this text).
    #[test]
    fn rules_named_by_a_number_that_is_not_there_are_refused() {
        let (mut g, h) = gate(&["true => drop"], &[("true", None)]);
        let mut out = Vec::new();
        let mut refusal = |op: Op| {
            let (tx, rx) = crossbeam_channel::bounded(1);
            h.tx.send(Command { op, reply: Some(tx) }).unwrap();
            g.tick(Instant::now(), &mut out);
            rx.recv().unwrap().unwrap_err()
        };
        for (op, want, text) in [
            (Op::RemoveBreakpoint(1), Refusal::NoBreakpoint(2), "no breakpoint 2"),
            (
                Op::EnableBreakpoint(4, true),
                Refusal::NoBreakpoint(5),
                "no breakpoint 5",
            ),
            (Op::RemoveFault(2), Refusal::NoFaultRule(3), "no fault rule 3"),
            (Op::EnableFault(1, false), Refusal::NoFaultRule(2), "no fault rule 2"),
            (
                Op::AddFault(crate::intercept::parse_fault("true => slow 10B/s").unwrap()),
                Refusal::HttpOnly("true => slow 10B/s".into()),
                "true => slow 10B/s: only the HTTP proxy can do this",
            ),
        ] {
            let e = refusal(op);
            assert_eq!(e, CommandError::Refused(want));
            assert_eq!(e.to_string(), text);
        }
    }

    #[test]
    fn a_proxy_that_ended_or_does_not_tick_says_so() {
        let (mut g, h) = gate(&[], &[]);
        // Nothing ticks the gate: the command waits its time and gives up.
        let e = h.command(Op::ForwardAll, Duration::from_millis(10)).unwrap_err();
        assert_eq!(e, CommandError::NoAnswer);
        assert_eq!(e.to_string(), "the proxy did not answer (is it still starting?)");
        // A command queued when the proxy ends is answered so.
        let (tx, rx) = crossbeam_channel::bounded(1);
        h.tx.send(Command {
            op: Op::ForwardAll,
            reply: Some(tx),
        })
        .unwrap();
        g.closing(Instant::now(), &mut Vec::new());
        assert_eq!(rx.recv().unwrap(), Err(CommandError::Ended));
        // And one sent after it ended is not sent at all.
        let e = h.command(Op::ForwardAll, Duration::from_secs(5)).unwrap_err();
        assert_eq!(e, CommandError::Ended);
        assert_eq!(e.to_string(), "the proxy has ended");
    }

    #[test]
    fn inject_sends_what_was_typed_even_malformed() {
        let (mut g, h) = gate(&[], &[]);
        let mut out = Vec::new();
        h.send(Op::Inject {
            toward: Direction::In,
            bytes: b"{not json".to_vec(),
        });
        g.tick(Instant::now(), &mut out);
        assert_eq!(sends(&out), [(Direction::In, "{not json\n".to_owned())]);
        assert_eq!(touches(&out), [TouchKind::Injected]);
    }
}
