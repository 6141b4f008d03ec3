//! The seam where an intercepting gate (breakpoints, fault rules, frames
//! the user injects) sits in a proxy. The proxies know only this trait;
//! the rules live above them (`intercept`, which reads display filters).
//!
//! With no gate a proxy forwards bytes as it reads them. With one, each
//! whole line is recorded as it arrived and then handed to the gate, and
//! the proxy sends, records, disconnects or kills as the gate says: a line
//! the gate lets through is sent byte for byte.

use crate::transport::event::Touch;
use crate::wire::frame::{Direction, Frame};
use crossbeam_channel::Sender;
use std::time::Instant;

/// What a proxy does for its gate.
#[derive(Clone, Debug, PartialEq)]
pub enum GateAction {
    /// Write these bytes (a whole line, ending included) toward the server
    /// (`Out`) or the client (`In`). `of_seq`: the frame they stand for (an
    /// answer: the request it answers), so the HTTP proxy can send them on
    /// the exchange that carried it; none for an injected frame.
    Send {
        toward: Direction,
        bytes: Vec<u8>,
        of_seq: Option<u64>,
    },
    /// Record what the gate did (the proxy stamps the time).
    Record(Touch),
    /// Close both sides' pipes (over HTTP: the connection that carried `of_seq`).
    Disconnect { of_seq: Option<u64> },
    /// Kill the server's process group.
    KillServer,
    /// HTTP only: answer the exchange that carried `of_seq` with this status.
    HttpStatus {
        of_seq: u64,
        code: u16,
        retry_after: Option<u32>,
    },
    /// HTTP only: the frame goes on, and the answer to its exchange is sent
    /// at this rate.
    Slow { of_seq: u64, bytes_per_sec: u64 },
}

impl GateAction {
    /// The frame this action settles, if any (what the HTTP proxy routes by).
    pub fn of_seq(&self) -> Option<u64> {
        match self {
            GateAction::Send { of_seq, .. } | GateAction::Disconnect { of_seq } => *of_seq,
            GateAction::Record(t) => t.of_seq,
            GateAction::HttpStatus { of_seq, .. } | GateAction::Slow { of_seq, .. } => Some(*of_seq),
            GateAction::KillServer => None,
        }
    }
}

/// Wakes a proxy's loop so the gate can act on something that came from
/// elsewhere (a user's command) without waiting for the next frame.
#[derive(Clone, Debug)]
pub struct Waker(Sender<()>);

impl Waker {
    pub fn new(tx: Sender<()>) -> Self {
        Waker(tx)
    }

    pub fn wake(&self) {
        // One pending wake is enough: the loop asks the gate for everything.
        let _ = self.0.try_send(());
    }
}

/// Decides what becomes of each line between a client and its server.
/// Called on the proxy's recording thread only; it must not block.
pub trait Gate: Send {
    /// `frame` arrived from a peer and was recorded; push what to do with it.
    fn arrived(&mut self, frame: &Frame, now: Instant, out: &mut Vec<GateAction>);
    /// Time passed or the gate was woken: push what is due (released
    /// delays, timed-out breakpoints, the user's commands).
    fn tick(&mut self, now: Instant, out: &mut Vec<GateAction>);
    /// When `tick` must next be called, if nothing else happens first.
    fn next_wake(&self) -> Option<Instant>;
    /// The proxy's waker, given once before the first frame.
    fn set_waker(&mut self, waker: Waker);
    /// The session ended: push what becomes of what is still held.
    fn closing(&mut self, now: Instant, out: &mut Vec<GateAction>);
}

/// A line's bytes as they crossed the wire, ending included.
pub fn wire_bytes(frame: &Frame) -> Vec<u8> {
    let mut out = Vec::with_capacity(frame.raw.len() + 2);
    out.extend_from_slice(&frame.raw);
    out.extend_from_slice(frame.ending.bytes());
    out
}
