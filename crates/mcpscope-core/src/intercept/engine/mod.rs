//! The intercepting gate: breakpoints with a queue of held frames, fault
//! rules, and frames the user injects. A state machine with no I/O: the
//! proxy hands it each frame and the time, and does what it says
//! ([`GateAction`]); the user's commands arrive through an
//! [`InterceptHandle`] and are taken on the next tick.
//!
//! [`held`] keeps the queue; [`faults`] the rules and the frames they send
//! later; [`dice`] the seeded draws they make; [`answers`] builds the lines
//! the gate writes itself; [`commands`] is the user's side.

mod answers;
mod commands;
mod dice;
mod faults;
mod held;
#[cfg(test)]
mod test_support;

pub use answers::{Answer, answer_line};
pub use commands::{Command, CommandError, InterceptHandle, Op, Refusal};
pub use dice::{Dice, corrupt};
pub use faults::REORDER_WAIT;
pub use held::HeldFrame;

use super::rule::{Breakpoint, FaultRule};
use super::subject::{GateSubject, Pending};
use crate::proxy::gate::{Gate, GateAction, Waker, wire_bytes};
use crate::transport::event::{Event, Touch, TouchKind};
use crate::wire::frame::Frame;
use crossbeam_channel::{Receiver, unbounded};
use faults::Faults;
use held::HeldQueue;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// What the user (the app, the control socket) sees: the queue, the
/// breakpoints and the rules.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Board {
    /// Bumped on every change, so a watcher knows when to look again.
    pub version: u64,
    pub held: Vec<HeldFrame>,
    pub breakpoints: Vec<BreakpointView>,
    pub faults: Vec<FaultView>,
    pub hold_everything: bool,
    pub seed: u64,
    /// The proxy has ended: commands go nowhere.
    pub closed: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct BreakpointView {
    pub text: String,
    pub enabled: bool,
    pub timeout: Option<Duration>,
    pub hits: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FaultView {
    pub text: String,
    pub enabled: bool,
    /// Frames it matched, and how many of those it acted on.
    pub matched: u64,
    pub applied: u64,
}

/// The board as the gate last published it, shared with the handles.
struct Shared {
    board: Mutex<Board>,
    changed: Condvar,
    waker: Mutex<Option<Waker>>,
}

struct BreakState {
    bp: Breakpoint,
    hits: u64,
}

/// The gate itself (see the module's docs).
pub struct Interceptor {
    faults: Faults,
    breakpoints: Vec<BreakState>,
    hold_everything: bool,
    seed: u64,
    held: HeldQueue,
    commands: Receiver<Command>,
    shared: Arc<Shared>,
    /// Frames so far (for the board's version when nothing else changes).
    version: u64,
    /// Requests kept for rules that read `request.…` of a response.
    pending: Pending,
    /// Whether some rule or breakpoint reads `request.…`.
    needs_requests: bool,
}

impl Interceptor {
    /// A gate with these rules and breakpoints; `seed` makes the dice
    /// (probabilities, delay ranges, corruptions) repeatable.
    pub fn new(faults: Vec<FaultRule>, breakpoints: Vec<Breakpoint>, seed: u64) -> (Interceptor, InterceptHandle) {
        let (tx, rx) = unbounded();
        let shared = Arc::new(Shared {
            board: Mutex::new(Board::default()),
            changed: Condvar::new(),
            waker: Mutex::new(None),
        });
        let mut gate = Interceptor {
            faults: Faults::new(faults, seed),
            breakpoints: breakpoints.into_iter().map(|bp| BreakState { bp, hits: 0 }).collect(),
            hold_everything: false,
            seed,
            held: HeldQueue::new(),
            commands: rx,
            shared: shared.clone(),
            version: 0,
            pending: Pending::default(),
            needs_requests: false,
        };
        gate.note_needs();
        gate.publish();
        (gate, InterceptHandle { tx, shared })
    }

    /// For the HTTP proxy: `http-status` and `slow` apply.
    pub fn over_http(mut self) -> Self {
        self.faults.http = true;
        self
    }

    /// A seed from the clock, for runs that need not repeat.
    pub fn fresh_seed() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
            ^ u64::from(std::process::id()).rotate_left(32)
    }

    /// Rules that cannot act over this transport, said once at the start.
    pub fn warnings(&self) -> Vec<String> {
        self.faults.warnings()
    }

    fn note_needs(&mut self) {
        self.needs_requests = self.faults.rules.iter().any(|s| s.rule.filter.needs().request)
            || self.breakpoints.iter().any(|s| s.bp.filter.needs().request);
    }

    fn publish(&mut self) {
        self.version += 1;
        let mut b = self.shared.board.lock().unwrap_or_else(|e| e.into_inner());
        b.version = self.version;
        b.held = self.held.frames().to_vec();
        b.hold_everything = self.hold_everything;
        b.seed = self.seed;
        b.breakpoints = self
            .breakpoints
            .iter()
            .map(|s| BreakpointView {
                text: s.bp.text(),
                enabled: s.bp.enabled,
                timeout: s.bp.timeout,
                hits: s.hits,
            })
            .collect();
        b.faults = self.faults.views();
        drop(b);
        self.shared.changed.notify_all();
    }

    /// The breakpoint (its index) or `None` for "hold everything" that
    /// holds `frame`, if one does.
    fn breakpoint_for(&mut self, frame: &Frame, subject: &mut LazySubject<'_>) -> Option<Option<usize>> {
        if self.hold_everything {
            return Some(None);
        }
        for (i, s) in self.breakpoints.iter_mut().enumerate() {
            if s.bp.enabled
                && s.bp.toward.admits(frame.direction)
                && s.bp.filter.may_match_line(&frame.raw)
                && subject.matches(frame, &s.bp.filter)
            {
                s.hits += 1;
                return Some(Some(i));
            }
        }
        None
    }

    fn hold(&mut self, frame: &Frame, bp: Option<usize>, now: Instant, out: &mut Vec<GateAction>) {
        let (by, timeout) = match bp {
            Some(i) => (self.breakpoints[i].bp.text(), self.breakpoints[i].bp.timeout),
            None => ("hold everything".to_owned(), None),
        };
        self.held.hold(frame, by, timeout, now, out);
    }
}

impl Gate for Interceptor {
    fn arrived(&mut self, frame: &Frame, now: Instant, out: &mut Vec<GateAction>) {
        let pending = std::mem::take(&mut self.pending);
        let mut subject = LazySubject {
            event: None,
            request: if self.needs_requests {
                pending.request_of(frame)
            } else {
                None
            },
        };
        let matched_before = self.faults.matched_total();
        if let Some(bp) = self.breakpoint_for(frame, &mut subject) {
            self.hold(frame, bp, now, out);
            self.publish();
        } else if let Some(i) = self.faults.pick(frame, &mut subject) {
            self.faults.apply(i, frame, now, out);
            self.publish();
        } else {
            out.push(GateAction::Send {
                of_seq: Some(frame.seq),
                toward: frame.direction,
                bytes: wire_bytes(frame),
            });
            // A rule matched but its counts or dice said not this time.
            if self.faults.matched_total() != matched_before {
                self.publish();
            }
        }
        drop(subject);
        self.pending = pending;
        if self.needs_requests {
            self.pending.answered(frame);
            self.pending.note(frame);
        }
        self.faults.release_reordered(frame.direction, frame.seq, out);
    }

    fn tick(&mut self, now: Instant, out: &mut Vec<GateAction>) {
        let mut changed = false;
        while let Ok(cmd) = self.commands.try_recv() {
            let result = self.run(cmd.op, out).map_err(CommandError::from);
            if let Some(reply) = cmd.reply {
                let _ = reply.send(result);
            }
            changed = true;
        }
        if self.held.forward_expired(now, out) {
            changed = true;
        }
        self.faults.release_due(now, out);
        if changed {
            self.publish();
        }
    }

    fn next_wake(&self) -> Option<Instant> {
        [self.held.next_deadline(), self.faults.next_due()]
            .into_iter()
            .flatten()
            .min()
    }

    fn set_waker(&mut self, waker: Waker) {
        *self.shared.waker.lock().unwrap_or_else(|e| e.into_inner()) = Some(waker);
    }

    fn closing(&mut self, _now: Instant, out: &mut Vec<GateAction>) {
        // Commands still queued get their answer.
        while let Ok(cmd) = self.commands.try_recv() {
            if let Some(reply) = cmd.reply {
                let _ = reply.send(Err(CommandError::Ended));
            }
        }
        let ended = "never sent: the session ended while it was held";
        for h in self.held.take_all() {
            out.push(GateAction::Record(
                Touch::new(TouchKind::Dropped, h.direction, Some(h.seq), ended).with_rule(Some(&h.by)),
            ));
        }
        self.faults.end(ended, out);
        self.publish();
        self.shared.board.lock().unwrap_or_else(|e| e.into_inner()).closed = true;
        self.shared.changed.notify_all();
    }
}

/// The frame as a filter subject, built once and only when some filter's
/// text pre-check lets it through.
struct LazySubject<'p> {
    event: Option<Event>,
    request: Option<&'p Event>,
}

impl LazySubject<'_> {
    fn matches(&mut self, frame: &Frame, filter: &crate::filter::Filter) -> bool {
        let event = self.event.get_or_insert_with(|| Event::Frame(frame.clone()));
        filter.matches_checked(&GateSubject::new(event, &frame.raw, self.request))
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::{frame, gate, sends, touches};
    use super::*;
    use crate::wire::frame::Direction;

    #[test]
    fn a_frame_no_rule_matches_goes_on_byte_for_byte_with_nothing_recorded() {
        let (mut g, _) = gate(
            &[r#"method == "ping" => drop"#],
            &[(r#"method == "resources/read""#, None)],
        );
        let mut out = Vec::new();
        let odd = "{\"jsonrpc\":\"2.0\", \"id\":8,  \"method\":\"tools/list\"}\r";
        g.arrived(&frame(0, Direction::Out, odd), Instant::now(), &mut out);
        assert_eq!(sends(&out), [(Direction::Out, format!("{odd}\n"))]);
        assert!(touches(&out).is_empty());
    }
}
