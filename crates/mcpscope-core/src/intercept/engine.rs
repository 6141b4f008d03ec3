//! The intercepting gate: breakpoints with a queue of held frames, fault
//! rules, and frames the user injects. A state machine with no I/O: the
//! proxy hands it each frame and the time, and does what it says
//! ([`GateAction`]); the user's commands arrive through an
//! [`InterceptHandle`] and are taken on the next tick.

use super::rule::{Breakpoint, Corruption, FaultAction, FaultRule};
use super::subject::{GateSubject, Pending};
use crate::proxy::gate::{Gate, GateAction, Waker, wire_bytes};
use crate::transport::event::{Event, Touch, TouchKind};
use crate::wire::classify::Kind;
use crate::wire::frame::{Direction, Frame};
use crossbeam_channel::{Receiver, Sender, unbounded};
use serde_json::Value;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long a `reorder` waits for the frame it swaps with.
pub const REORDER_WAIT: Duration = Duration::from_secs(2);

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

/// What to send back instead of a held request.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// A result (`{"content": …}`), a whole response, or `{"error": …}`:
    /// completed with the request's id and `jsonrpc`.
    Json(Value),
    /// Sent as typed (a line ending added if it has none).
    Raw(Vec<u8>),
}

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

/// A command and where to say how it went.
pub struct Command {
    pub op: Op,
    pub reply: Option<Sender<Result<String, String>>>,
}

/// The user's side: sends commands, reads the board. Cheap to clone.
#[derive(Clone)]
pub struct InterceptHandle {
    tx: Sender<Command>,
    shared: Arc<Shared>,
}

struct Shared {
    board: Mutex<Board>,
    changed: Condvar,
    waker: Mutex<Option<Waker>>,
}

impl InterceptHandle {
    /// Sends a command and waits (up to `wait`) for how it went. A proxy
    /// that has ended says so.
    pub fn command(&self, op: Op, wait: Duration) -> Result<String, String> {
        if self.board().closed {
            return Err("the proxy has ended".into());
        }
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.tx
            .send(Command { op, reply: Some(tx) })
            .map_err(|_| "the proxy has ended".to_owned())?;
        if let Some(w) = self.shared.waker.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            w.wake();
        }
        rx.recv_timeout(wait)
            .map_err(|_| "the proxy did not answer (is it still starting?)".to_owned())?
    }

    /// Sends a command without waiting.
    pub fn send(&self, op: Op) {
        let _ = self.tx.send(Command { op, reply: None });
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

/// A small, seedable generator (SplitMix64): the same seed gives the same
/// dice on every machine and in every version.
#[derive(Clone, Debug)]
pub struct Dice(u64);

impl Dice {
    pub fn new(seed: u64) -> Self {
        Dice(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// In [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }
}

struct RuleState {
    rule: FaultRule,
    matched: u64,
    applied: u64,
}

struct BreakState {
    bp: Breakpoint,
    hits: u64,
}

/// A frame the gate sends later on its own: a delay, or a reorder waiting
/// for the next frame.
struct Timed {
    at: Instant,
    direction: Direction,
    seq: u64,
    bytes: Vec<u8>,
    rule: String,
    why: Release,
}

#[derive(Clone, Copy, PartialEq)]
enum Release {
    Delay,
    /// Sent after the next frame going the same way, or at `at`.
    Reorder,
}

/// The gate itself (see the module's docs).
pub struct Interceptor {
    faults: Vec<RuleState>,
    breakpoints: Vec<BreakState>,
    hold_everything: bool,
    dice: Dice,
    seed: u64,
    held: Vec<HeldFrame>,
    timed: Vec<Timed>,
    /// Frames a `stall` holds for ever: (direction, seq, rule).
    stalled: Vec<(Direction, u64, String)>,
    next_id: u64,
    commands: Receiver<Command>,
    shared: Arc<Shared>,
    /// Frames so far (for the board's version when nothing else changes).
    version: u64,
    /// HTTP can do `http-status` and `slow`; stdio cannot.
    http: bool,
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
            faults: faults
                .into_iter()
                .map(|rule| RuleState {
                    rule,
                    matched: 0,
                    applied: 0,
                })
                .collect(),
            breakpoints: breakpoints.into_iter().map(|bp| BreakState { bp, hits: 0 }).collect(),
            hold_everything: false,
            dice: Dice::new(seed),
            seed,
            held: Vec::new(),
            timed: Vec::new(),
            stalled: Vec::new(),
            next_id: 1,
            commands: rx,
            shared: shared.clone(),
            version: 0,
            http: false,
            pending: Pending::default(),
            needs_requests: false,
        };
        gate.note_needs();
        gate.publish();
        (gate, InterceptHandle { tx, shared })
    }

    /// For the HTTP proxy: `http-status` and `slow` apply.
    pub fn over_http(mut self) -> Self {
        self.http = true;
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
        self.faults
            .iter()
            .filter(|r| r.rule.action.http_only() && !self.http)
            .map(|r| {
                format!(
                    "{}: only the HTTP proxy can do this; over stdio the frame is forwarded",
                    r.rule.text()
                )
            })
            .collect()
    }

    fn note_needs(&mut self) {
        self.needs_requests = self.faults.iter().any(|s| s.rule.filter.needs().request)
            || self.breakpoints.iter().any(|s| s.bp.filter.needs().request);
    }

    fn publish(&mut self) {
        self.version += 1;
        let mut b = self.shared.board.lock().unwrap_or_else(|e| e.into_inner());
        b.version = self.version;
        b.held = self.held.clone();
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
        b.faults = self
            .faults
            .iter()
            .map(|s| FaultView {
                text: s.rule.text(),
                enabled: s.rule.enabled,
                matched: s.matched,
                applied: s.applied,
            })
            .collect();
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

    /// The first enabled rule that matches and whose counts and dice say act.
    fn fault_for(&mut self, frame: &Frame, subject: &mut LazySubject<'_>) -> Option<usize> {
        for i in 0..self.faults.len() {
            let s = &mut self.faults[i];
            if !s.rule.enabled || !s.rule.filter.may_match_line(&frame.raw) || !subject.matches(frame, &s.rule.filter) {
                continue;
            }
            s.matched += 1;
            if !s.rule.modifiers.counts_allow(s.matched) {
                continue;
            }
            if let Some(p) = s.rule.modifiers.probability
                && self.dice.unit() >= p
            {
                continue;
            }
            self.faults[i].applied += 1;
            return Some(i);
        }
        None
    }

    fn hold(&mut self, frame: &Frame, bp: Option<usize>, now: Instant, out: &mut Vec<GateAction>) {
        let (by, timeout) = match bp {
            Some(i) => (self.breakpoints[i].bp.text(), self.breakpoints[i].bp.timeout),
            None => ("hold everything".to_owned(), None),
        };
        let id = self.next_id;
        self.next_id += 1;
        let text = match timeout {
            Some(t) => format!("held as #{id}; forwarded on its own after {}", crate::text::duration(t)),
            None => format!("held as #{id} until the user acts"),
        };
        out.push(GateAction::Record(
            Touch::new(TouchKind::Held, frame.direction, Some(frame.seq), text).with_rule(Some(&by)),
        ));
        self.held.push(HeldFrame {
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

    fn apply_fault(&mut self, i: usize, frame: &Frame, now: Instant, out: &mut Vec<GateAction>) {
        let rule = self.faults[i].rule.text();
        let action = self.faults[i].rule.action.clone();
        let d = frame.direction;
        let seq = Some(frame.seq);
        let bytes = wire_bytes(frame);
        let touch = |kind: TouchKind, text: String| Touch::new(kind, d, seq, text).with_rule(Some(&rule));
        match action {
            FaultAction::Delay { min, max } => {
                let span = max.saturating_sub(min).as_micros() as u64;
                let wait = min + Duration::from_micros(self.dice.below(span + 1));
                out.push(GateAction::Record(touch(
                    TouchKind::Fault,
                    format!("delayed {}", crate::text::duration(wait)),
                )));
                self.timed.push(Timed {
                    at: now + wait,
                    direction: d,
                    seq: frame.seq,
                    bytes,
                    rule,
                    why: Release::Delay,
                });
            }
            FaultAction::Drop => out.push(GateAction::Record(touch(
                TouchKind::Dropped,
                "dropped by a fault rule".into(),
            ))),
            FaultAction::Duplicate => {
                out.push(GateAction::Send {
                    of_seq: seq,
                    toward: d,
                    bytes: bytes.clone(),
                });
                out.push(GateAction::Send {
                    of_seq: seq,
                    toward: d,
                    bytes: bytes.clone(),
                });
                out.push(GateAction::Record(
                    touch(TouchKind::Fault, "sent twice".into()).with_sent(bytes),
                ));
            }
            FaultAction::Reorder => {
                out.push(GateAction::Record(touch(
                    TouchKind::Fault,
                    "held back to go after the next frame the same way".into(),
                )));
                self.timed.push(Timed {
                    at: now + REORDER_WAIT,
                    direction: d,
                    seq: frame.seq,
                    bytes,
                    rule,
                    why: Release::Reorder,
                });
            }
            FaultAction::Corrupt(how) => {
                let (broken, said) = corrupt(&frame.raw, frame.ending.bytes(), how, &mut self.dice);
                out.push(GateAction::Send {
                    of_seq: seq,
                    toward: d,
                    bytes: broken.clone(),
                });
                out.push(GateAction::Record(touch(TouchKind::Edited, said).with_sent(broken)));
            }
            FaultAction::Replace(value) => {
                let line = replacement(&value, frame);
                out.push(GateAction::Send {
                    of_seq: seq,
                    toward: d,
                    bytes: line.clone(),
                });
                out.push(GateAction::Record(
                    touch(TouchKind::Edited, "replaced by a fault rule".into()).with_sent(line),
                ));
            }
            FaultAction::Error { code, message } => {
                let error = serde_json::json!({"error": {"code": code, "message": message}});
                match frame.class.kind {
                    Kind::Request => {
                        let line = answer_line(&frame.raw, &Answer::Json(error)).expect("a request has an id");
                        out.push(GateAction::Send {
                            of_seq: seq,
                            toward: d.opposite(),
                            bytes: line.clone(),
                        });
                        let other = if d == Direction::Out { "server" } else { "client" };
                        out.push(GateAction::Record(
                            touch(
                                TouchKind::Answered,
                                format!("answered with error {code}; the {other} never saw the request"),
                            )
                            .with_sent(line),
                        ));
                    }
                    Kind::Result | Kind::Error => {
                        let line = answer_line_for_id(&frame.raw, &Answer::Json(error));
                        out.push(GateAction::Send {
                            of_seq: seq,
                            toward: d,
                            bytes: line.clone(),
                        });
                        out.push(GateAction::Record(
                            touch(TouchKind::Edited, format!("the response replaced by error {code}")).with_sent(line),
                        ));
                    }
                    _ => {
                        out.push(GateAction::Send {
                            toward: d,
                            bytes,
                            of_seq: seq,
                        });
                        out.push(GateAction::Record(touch(
                            TouchKind::Fault,
                            "error: this frame has no id to answer; forwarded".into(),
                        )));
                    }
                }
            }
            FaultAction::Stall => {
                out.push(GateAction::Record(touch(
                    TouchKind::Fault,
                    "stalled: held for ever".into(),
                )));
                self.stalled.push((d, frame.seq, rule));
            }
            FaultAction::Disconnect => {
                out.push(GateAction::Record(touch(
                    TouchKind::Fault,
                    "disconnected both sides instead of sending it".into(),
                )));
                out.push(GateAction::Disconnect { of_seq: seq });
            }
            FaultAction::KillServer if self.http => {
                out.push(GateAction::Send {
                    toward: d,
                    bytes,
                    of_seq: seq,
                });
                out.push(GateAction::Record(touch(
                    TouchKind::Fault,
                    "the HTTP proxy runs no server to kill; forwarded".into(),
                )));
            }
            FaultAction::KillServer => {
                out.push(GateAction::Record(touch(
                    TouchKind::Fault,
                    "killed the server instead of sending it".into(),
                )));
                out.push(GateAction::KillServer);
            }
            FaultAction::HttpStatus { code, retry_after } if self.http => {
                out.push(GateAction::Record(touch(
                    TouchKind::Fault,
                    format!("answered the exchange with HTTP {code} instead"),
                )));
                out.push(GateAction::HttpStatus {
                    of_seq: frame.seq,
                    code,
                    retry_after,
                });
            }
            FaultAction::Slow { bytes_per_sec } if self.http => {
                out.push(GateAction::Send {
                    toward: d,
                    bytes,
                    of_seq: seq,
                });
                out.push(GateAction::Slow {
                    of_seq: frame.seq,
                    bytes_per_sec,
                });
                out.push(GateAction::Record(touch(
                    TouchKind::Fault,
                    format!("its exchange's answer sent at {bytes_per_sec} bytes a second"),
                )));
            }
            FaultAction::HttpStatus { .. } | FaultAction::Slow { .. } => {
                out.push(GateAction::Send {
                    toward: d,
                    bytes,
                    of_seq: seq,
                });
                out.push(GateAction::Record(touch(
                    TouchKind::Fault,
                    "only the HTTP proxy can do this; forwarded".into(),
                )));
            }
        }
    }

    /// After a frame went `direction`: a reorder waiting for it goes now.
    fn release_reordered(&mut self, direction: Direction, after_seq: u64, out: &mut Vec<GateAction>) {
        let mut i = 0;
        while i < self.timed.len() {
            let t = &self.timed[i];
            if t.why == Release::Reorder && t.direction == direction && t.seq < after_seq {
                let t = self.timed.remove(i);
                out.push(GateAction::Send {
                    of_seq: Some(t.seq),
                    toward: t.direction,
                    bytes: t.bytes,
                });
                out.push(GateAction::Record(
                    Touch::new(
                        TouchKind::Forwarded,
                        t.direction,
                        Some(t.seq),
                        format!("sent after #{after_seq}"),
                    )
                    .with_rule(Some(&t.rule)),
                ));
            } else {
                i += 1;
            }
        }
    }

    fn take_held(&mut self, id: u64) -> Result<HeldFrame, String> {
        match self.held.iter().position(|h| h.id == id) {
            Some(i) => Ok(self.held.remove(i)),
            None => Err(format!("no held frame #{id} (it was forwarded, dropped or timed out)")),
        }
    }

    fn forward_held(&mut self, h: HeldFrame, why: &str, out: &mut Vec<GateAction>) {
        out.push(GateAction::Send {
            of_seq: Some(h.seq),
            toward: h.direction,
            bytes: h.bytes,
        });
        out.push(GateAction::Record(
            Touch::new(TouchKind::Forwarded, h.direction, Some(h.seq), why).with_rule(Some(&h.by)),
        ));
    }

    fn run(&mut self, op: Op, out: &mut Vec<GateAction>) -> Result<String, String> {
        match op {
            Op::Forward(id) => {
                let h = self.take_held(id)?;
                self.forward_held(h, "forwarded by the user", out);
                Ok(format!("forwarded #{id}"))
            }
            Op::ForwardEdited(id, bytes) => {
                let h = self.take_held(id)?;
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
                let h = self.take_held(id)?;
                out.push(GateAction::Record(
                    Touch::new(TouchKind::Dropped, h.direction, Some(h.seq), "dropped by the user")
                        .with_rule(Some(&h.by)),
                ));
                Ok(format!("dropped #{id}"))
            }
            Op::Answer(id, answer) => {
                let Some(h) = self.held.iter().find(|h| h.id == id) else {
                    return Err(format!("no held frame #{id} (it was forwarded, dropped or timed out)"));
                };
                if !h.is_request {
                    return Err(format!(
                        "#{id} is not a request: only a request can be answered instead"
                    ));
                }
                let line = answer_line(trim_ending(&h.bytes), &answer)?;
                let h = self.take_held(id)?;
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
                for h in std::mem::take(&mut self.held) {
                    self.forward_held(h, "forwarded by the user (forward all)", out);
                }
                Ok(format!("forwarded {n} held frame(s)"))
            }
            Op::Disable => {
                for s in &mut self.breakpoints {
                    s.bp.enabled = false;
                }
                self.hold_everything = false;
                let n = self.held.len();
                for h in std::mem::take(&mut self.held) {
                    self.forward_held(h, "forwarded: breakpoints disabled", out);
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
                    return Err(format!("no breakpoint {}", i + 1));
                }
                let s = self.breakpoints.remove(i);
                Ok(format!("breakpoint removed: {}", s.bp.text()))
            }
            Op::EnableBreakpoint(i, on) => {
                let s = self
                    .breakpoints
                    .get_mut(i)
                    .ok_or_else(|| format!("no breakpoint {}", i + 1))?;
                s.bp.enabled = on;
                Ok(format!("breakpoint {} {}", i + 1, if on { "on" } else { "off" }))
            }
            Op::AddFault(rule) => {
                let text = rule.text();
                if rule.action.http_only() && !self.http {
                    return Err(format!("{text}: only the HTTP proxy can do this"));
                }
                self.faults.push(RuleState {
                    rule,
                    matched: 0,
                    applied: 0,
                });
                self.note_needs();
                Ok(format!("fault rule {} set: {text}", self.faults.len()))
            }
            Op::RemoveFault(i) => {
                if i >= self.faults.len() {
                    return Err(format!("no fault rule {}", i + 1));
                }
                let s = self.faults.remove(i);
                Ok(format!("fault rule removed: {}", s.rule.text()))
            }
            Op::EnableFault(i, on) => {
                let s = self
                    .faults
                    .get_mut(i)
                    .ok_or_else(|| format!("no fault rule {}", i + 1))?;
                s.rule.enabled = on;
                Ok(format!("fault rule {} {}", i + 1, if on { "on" } else { "off" }))
            }
        }
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
        let matched_before: u64 = self.faults.iter().map(|s| s.matched).sum();
        if let Some(bp) = self.breakpoint_for(frame, &mut subject) {
            self.hold(frame, bp, now, out);
            self.publish();
        } else if let Some(i) = self.fault_for(frame, &mut subject) {
            self.apply_fault(i, frame, now, out);
            self.publish();
        } else {
            out.push(GateAction::Send {
                of_seq: Some(frame.seq),
                toward: frame.direction,
                bytes: wire_bytes(frame),
            });
            // A rule matched but its counts or dice said not this time.
            if self.faults.iter().map(|s| s.matched).sum::<u64>() != matched_before {
                self.publish();
            }
        }
        drop(subject);
        self.pending = pending;
        if self.needs_requests {
            self.pending.answered(frame);
            self.pending.note(frame);
        }
        if !self.timed.is_empty() {
            self.release_reordered(frame.direction, frame.seq, out);
        }
    }

    fn tick(&mut self, now: Instant, out: &mut Vec<GateAction>) {
        let mut changed = false;
        while let Ok(cmd) = self.commands.try_recv() {
            let result = self.run(cmd.op, out);
            if let Some(reply) = cmd.reply {
                let _ = reply.send(result);
            }
            changed = true;
        }
        let mut i = 0;
        while i < self.held.len() {
            if self.held[i].deadline.is_some_and(|d| d <= now) {
                let h = self.held.remove(i);
                let waited = h
                    .deadline
                    .map(|d| d.saturating_duration_since(h.since))
                    .unwrap_or_default();
                let why = format!(
                    "forwarded on its own: nobody acted within the breakpoint's {}",
                    crate::text::duration(waited)
                );
                self.forward_held(h, &why, out);
                changed = true;
            } else {
                i += 1;
            }
        }
        let mut i = 0;
        while i < self.timed.len() {
            if self.timed[i].at <= now {
                let t = self.timed.remove(i);
                let text = match t.why {
                    Release::Delay => "sent after its delay".to_owned(),
                    Release::Reorder => format!(
                        "sent: no other frame went the same way within {}",
                        crate::text::duration(REORDER_WAIT)
                    ),
                };
                out.push(GateAction::Send {
                    of_seq: Some(t.seq),
                    toward: t.direction,
                    bytes: t.bytes,
                });
                out.push(GateAction::Record(
                    Touch::new(TouchKind::Forwarded, t.direction, Some(t.seq), text).with_rule(Some(&t.rule)),
                ));
            } else {
                i += 1;
            }
        }
        if changed {
            self.publish();
        }
    }

    fn next_wake(&self) -> Option<Instant> {
        let held = self.held.iter().filter_map(|h| h.deadline);
        let timed = self.timed.iter().map(|t| t.at);
        held.chain(timed).min()
    }

    fn set_waker(&mut self, waker: Waker) {
        *self.shared.waker.lock().unwrap_or_else(|e| e.into_inner()) = Some(waker);
    }

    fn closing(&mut self, _now: Instant, out: &mut Vec<GateAction>) {
        // Commands still queued get their answer.
        while let Ok(cmd) = self.commands.try_recv() {
            if let Some(reply) = cmd.reply {
                let _ = reply.send(Err("the proxy has ended".into()));
            }
        }
        let ended = "never sent: the session ended while it was held";
        for h in std::mem::take(&mut self.held) {
            out.push(GateAction::Record(
                Touch::new(TouchKind::Dropped, h.direction, Some(h.seq), ended).with_rule(Some(&h.by)),
            ));
        }
        for t in std::mem::take(&mut self.timed) {
            out.push(GateAction::Record(
                Touch::new(TouchKind::Dropped, t.direction, Some(t.seq), ended).with_rule(Some(&t.rule)),
            ));
        }
        for (d, seq, rule) in std::mem::take(&mut self.stalled) {
            out.push(GateAction::Record(
                Touch::new(TouchKind::Dropped, d, Some(seq), "stalled until the session ended").with_rule(Some(&rule)),
            ));
        }
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

fn with_ending(mut bytes: Vec<u8>) -> Vec<u8> {
    if !bytes.ends_with(b"\n") {
        bytes.push(b'\n');
    }
    bytes
}

fn trim_ending(bytes: &[u8]) -> &[u8] {
    let b = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    b.strip_suffix(b"\r").unwrap_or(b)
}

/// The line that answers `request` (its raw JSON) with `answer`: a bare
/// result is wrapped, `{"error": …}` or `{"result": …}` gets the request's
/// id and `jsonrpc`; raw bytes go as typed.
pub fn answer_line(request: &[u8], answer: &Answer) -> Result<Vec<u8>, String> {
    let id = serde_json::from_slice::<Value>(request)
        .ok()
        .and_then(|v| v.get("id").cloned())
        .ok_or("the held frame has no id to answer")?;
    Ok(answer_with_id(id, answer))
}

/// For a response: the same id, with `answer` in its place.
fn answer_line_for_id(response: &[u8], answer: &Answer) -> Vec<u8> {
    let id = serde_json::from_slice::<Value>(response)
        .ok()
        .and_then(|v| v.get("id").cloned())
        .unwrap_or(Value::Null);
    answer_with_id(id, answer)
}

fn answer_with_id(id: Value, answer: &Answer) -> Vec<u8> {
    match answer {
        Answer::Raw(bytes) => with_ending(bytes.clone()),
        Answer::Json(v) => {
            let body = match v {
                Value::Object(o) if o.contains_key("result") || o.contains_key("error") => {
                    let mut o = o.clone();
                    o.entry("jsonrpc").or_insert("2.0".into());
                    o.entry("id").or_insert(id);
                    Value::Object(o)
                }
                other => serde_json::json!({"jsonrpc": "2.0", "id": id, "result": other}),
            };
            let mut line = serde_json::to_vec(&body).expect("JSON");
            line.push(b'\n');
            line
        }
    }
}

/// A `replace` rule's message for `frame`: an object without an id takes
/// the frame's, so one rule can stand in for many responses.
fn replacement(value: &Value, frame: &Frame) -> Vec<u8> {
    let mut v = value.clone();
    if let Value::Object(o) = &mut v
        && !o.contains_key("id")
        && let Some(id) = serde_json::from_slice::<Value>(&frame.raw)
            .ok()
            .and_then(|f| f.get("id").cloned())
    {
        o.insert("id".into(), id);
    }
    let mut line = serde_json::to_vec(&v).expect("JSON");
    line.extend_from_slice(frame.ending.bytes());
    if !line.ends_with(b"\n") {
        line.push(b'\n');
    }
    line
}

/// `raw` broken as `how` says, with its line ending, and what was done.
pub fn corrupt(raw: &[u8], ending: &[u8], how: Corruption, dice: &mut Dice) -> (Vec<u8>, String) {
    let how = match how {
        Corruption::Any => Corruption::NAMES[dice.below(Corruption::NAMES.len() as u64) as usize].1,
        h => h,
    };
    let ending = if ending.is_empty() { b"\n".as_slice() } else { ending };
    let mut out;
    let said = match how {
        Corruption::Truncate => {
            let keep = raw.len() / 2;
            out = raw[..keep].to_vec();
            format!("corrupted: cut to its first {keep} of {} bytes", raw.len())
        }
        Corruption::FlipBytes => {
            out = raw.to_vec();
            let n = (raw.len() / 64).clamp(1, 8);
            let mut at = Vec::new();
            for _ in 0..n.min(out.len()) {
                let i = dice.below(out.len() as u64) as usize;
                // Never a newline: the frame must stay one line.
                let flipped = out[i] ^ (1 << dice.below(7));
                out[i] = if flipped == b'\n' || flipped == b'\r' {
                    b'~'
                } else {
                    flipped
                };
                at.push(i);
            }
            format!("corrupted: flipped bits at byte(s) {at:?}")
        }
        Corruption::BadUtf8 => {
            out = raw.to_vec();
            let i = out.len() / 2;
            out.splice(i..i, [0xC3, 0x28, 0xFF]);
            format!("corrupted: bytes that are not UTF-8 put at byte {i}")
        }
        Corruption::NotJson => {
            out = b"this is not JSON (mcpscope fault rule)".to_vec();
            "corrupted: sent a line that is not JSON instead".to_owned()
        }
        Corruption::Any => unreachable!("drawn above"),
    };
    out.extend_from_slice(ending);
    (out, said)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intercept::rule::{Toward, parse_fault};
    use crate::wire::classify::Limits;
    use crate::wire::framing::{LineEnding, RawLine};

    fn frame(seq: u64, d: Direction, text: &str) -> Frame {
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

    fn gate(faults: &[&str], breaks: &[(&str, Option<u64>)]) -> (Interceptor, InterceptHandle) {
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

    fn sends(out: &[GateAction]) -> Vec<(Direction, String)> {
        out.iter()
            .filter_map(|a| match a {
                GateAction::Send { toward, bytes, .. } => Some((*toward, String::from_utf8_lossy(bytes).into_owned())),
                _ => None,
            })
            .collect()
    }

    fn touches(out: &[GateAction]) -> Vec<TouchKind> {
        out.iter()
            .filter_map(|a| match a {
                GateAction::Record(t) => Some(t.kind),
                _ => None,
            })
            .collect()
    }

    const CALL: &str = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}"#;
    const LIST: &str = r#"{"jsonrpc":"2.0","id":8,"method":"tools/list"}"#;

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
    fn answer_instead_goes_back_to_the_sender_with_the_requests_id() {
        let (mut g, h) = gate(&[], &[(r#"method == "tools/call""#, None)]);
        let now = Instant::now();
        let mut out = Vec::new();
        g.arrived(&frame(0, Direction::Out, CALL), now, &mut out);
        out.clear();
        h.send(Op::Answer(
            1,
            Answer::Json(serde_json::json!({"content": [{"type": "text", "text": "mine"}]})),
        ));
        g.tick(now, &mut out);
        let s = sends(&out);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].0, Direction::In, "to the client");
        let v: Value = serde_json::from_str(&s[0].1).unwrap();
        assert_eq!(v["id"], 7);
        assert_eq!(v["result"]["content"][0]["text"], "mine");
        assert_eq!(touches(&out), [TouchKind::Answered]);
    }

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
        assert!(rx.recv().unwrap().unwrap_err().contains("not a request"));
        assert!(rx2.recv().unwrap().unwrap_err().contains("no held frame #99"));
        assert_eq!(h.board().held.len(), 1, "still held");
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

    #[test]
    fn delay_drop_duplicate_and_stall() {
        let t0 = Instant::now();
        let (mut g, _) = gate(&[r#"method == "tools/list" => delay 2s"#], &[]);
        let mut out = Vec::new();
        g.arrived(&frame(0, Direction::Out, LIST), t0, &mut out);
        assert!(sends(&out).is_empty());
        g.tick(t0 + Duration::from_millis(1999), &mut out);
        assert!(sends(&out).is_empty());
        g.tick(t0 + Duration::from_secs(2), &mut out);
        assert_eq!(sends(&out).len(), 1);
        assert_eq!(touches(&out), [TouchKind::Fault, TouchKind::Forwarded]);

        let (mut g, _) = gate(&[r#"method == "tools/list" => drop"#], &[]);
        let mut out = Vec::new();
        g.arrived(&frame(0, Direction::Out, LIST), t0, &mut out);
        assert!(sends(&out).is_empty());
        assert_eq!(touches(&out), [TouchKind::Dropped]);

        let (mut g, _) = gate(&[r#"method == "tools/list" => duplicate"#], &[]);
        let mut out = Vec::new();
        g.arrived(&frame(0, Direction::Out, LIST), t0, &mut out);
        assert_eq!(sends(&out).len(), 2);

        let (mut g, _) = gate(&[r#"method == "tools/list" => stall"#], &[]);
        let mut out = Vec::new();
        g.arrived(&frame(0, Direction::Out, LIST), t0, &mut out);
        assert!(sends(&out).is_empty());
        assert_eq!(g.next_wake(), None, "held for ever");
        out.clear();
        g.closing(t0, &mut out);
        assert_eq!(touches(&out), [TouchKind::Dropped]);
    }

    #[test]
    fn reorder_swaps_with_the_next_frame_the_same_way() {
        let t0 = Instant::now();
        let (mut g, _) = gate(&[r#"id == 7 => reorder"#], &[]);
        let mut out = Vec::new();
        g.arrived(&frame(0, Direction::Out, CALL), t0, &mut out);
        g.arrived(
            &frame(1, Direction::In, r#"{"jsonrpc":"2.0","method":"x"}"#),
            t0,
            &mut out,
        );
        g.arrived(&frame(2, Direction::Out, LIST), t0, &mut out);
        let s: Vec<String> = sends(&out).into_iter().map(|(_, t)| t).collect();
        assert!(s[0].contains("\"x\""));
        assert!(s[1].contains("tools/list"), "the next frame the same way first: {s:?}");
        assert!(s[2].contains("tools/call"));
    }

    #[test]
    fn error_answers_a_request_and_replaces_a_response() {
        let t0 = Instant::now();
        let (mut g, _) = gate(
            &[
                r#"method == "tools/call" => error -32603 "boom""#,
                r#"kind == "result" => error 1"#,
            ],
            &[],
        );
        let mut out = Vec::new();
        g.arrived(&frame(0, Direction::Out, CALL), t0, &mut out);
        let s = sends(&out);
        assert_eq!(s[0].0, Direction::In);
        let v: Value = serde_json::from_str(&s[0].1).unwrap();
        assert_eq!(
            (v["id"].clone(), v["error"]["code"].clone()),
            (7.into(), (-32603).into())
        );
        out.clear();
        g.arrived(
            &frame(1, Direction::In, r#"{"jsonrpc":"2.0","id":8,"result":{}}"#),
            t0,
            &mut out,
        );
        let s = sends(&out);
        assert_eq!(s[0].0, Direction::In);
        let v: Value = serde_json::from_str(&s[0].1).unwrap();
        assert_eq!((v["id"].clone(), v["error"]["code"].clone()), (8.into(), 1.into()));
        assert_eq!(touches(&out), [TouchKind::Edited]);
    }

    #[test]
    fn replace_keeps_the_id_and_corrupt_breaks_each_way_on_one_line() {
        let t0 = Instant::now();
        let (mut g, _) = gate(
            &[r#"kind == "result" => replace {"jsonrpc":"2.0","result":{"tools":[]}}"#],
            &[],
        );
        let mut out = Vec::new();
        g.arrived(
            &frame(3, Direction::In, r#"{"jsonrpc":"2.0","id":"a","result":{"tools":[1]}}"#),
            t0,
            &mut out,
        );
        let v: Value = serde_json::from_str(&sends(&out)[0].1).unwrap();
        assert_eq!(v, serde_json::json!({"jsonrpc":"2.0","result":{"tools":[]},"id":"a"}));
        let mut dice = Dice::new(1);
        for (how, _) in Corruption::NAMES {
            let c = Corruption::NAMES.iter().find(|(n, _)| n == how).unwrap().1;
            let (bytes, said) = corrupt(CALL.as_bytes(), b"\n", c, &mut dice);
            assert!(
                bytes.ends_with(b"\n") && !bytes[..bytes.len() - 1].contains(&b'\n'),
                "{said}"
            );
            assert_ne!(&bytes[..bytes.len() - 1], CALL.as_bytes(), "{how}: {said}");
            if c != Corruption::FlipBytes {
                // (Flipped bits inside a string can leave valid JSON with wrong data.)
                assert!(serde_json::from_slice::<Value>(&bytes).is_err(), "{how}: {said}");
            }
        }
    }

    #[test]
    fn modifiers_and_the_seed_make_runs_repeatable() {
        let run = |seed: u64| {
            let (mut g, h) = Interceptor::new(vec![parse_fault("true => drop p=0.5").unwrap()], vec![], seed);
            let mut out = Vec::new();
            for i in 0..40 {
                g.arrived(&frame(i, Direction::Out, LIST), Instant::now(), &mut out);
            }
            (sends(&out).len(), h.board().faults[0].applied)
        };
        let (a, dropped) = run(9);
        assert_eq!(run(9), (a, dropped), "same seed, same dice");
        assert_eq!(a as u64 + dropped, 40);
        assert!((8..=32).contains(&dropped), "about half: {dropped}");
        let (mut g, h) = gate(&[r#"true => drop first 2"#], &[]);
        let mut out = Vec::new();
        for i in 0..4 {
            g.arrived(&frame(i, Direction::Out, LIST), Instant::now(), &mut out);
        }
        assert_eq!(sends(&out).len(), 2);
        assert_eq!((h.board().faults[0].matched, h.board().faults[0].applied), (4, 2));
    }

    #[test]
    fn a_rule_can_name_a_responses_request() {
        let mut rec = crate::transport::recorder::Recorder::replay(Limits::default());
        let mut line = |d: Direction, t: &str| {
            rec.frame_at(
                d,
                RawLine {
                    bytes: t.as_bytes().to_vec(),
                    ending: LineEnding::Lf,
                },
                Duration::ZERO,
                None,
            )
        };
        let (mut g, h) = gate(
            &[r#"request.method == "tools/list" => replace {"jsonrpc":"2.0","result":{"tools":[]}}"#],
            &[],
        );
        let mut out = Vec::new();
        let t0 = Instant::now();
        g.arrived(&line(Direction::Out, LIST), t0, &mut out);
        g.arrived(&line(Direction::Out, CALL), t0, &mut out);
        g.arrived(
            &line(Direction::In, r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#),
            t0,
            &mut out,
        );
        g.arrived(
            &line(
                Direction::In,
                r#"{"jsonrpc":"2.0","id":8,"result":{"tools":[{"name":"a"}]}}"#,
            ),
            t0,
            &mut out,
        );
        let s = sends(&out);
        assert!(s[2].1.contains("\"content\""), "the call's answer untouched");
        assert_eq!(s[3].1, "{\"jsonrpc\":\"2.0\",\"result\":{\"tools\":[]},\"id\":8}\n");
        assert_eq!(h.board().faults[0].applied, 1);
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

    #[test]
    fn http_only_actions_are_named_over_stdio() {
        let (g, h) = gate(&[r#"true => http-status 503"#], &[]);
        assert_eq!(g.warnings().len(), 1);
        drop(g);
        let _ = h;
    }
}
