//! The order of what crossed the wire: sequence numbers, session times that
//! never go back, lines cut at the in-memory cap continued by their next
//! piece, and frames built from lines, classified and linked to their
//! requests. The recorder numbers a live session (and a capture read back)
//! with it; tests of the layers above frame their scripted lines the same way.

use super::classify::{Limits, classify_piece};
use super::correlation::Correlator;
use super::frame::{Direction, Frame};
use super::framing::{LineEnding, RawLine};
use std::time::Duration;

/// One of the three streams of a session, each cut at the cap on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Out,
    In,
    Stderr,
}

impl From<Direction> for Stream {
    fn from(d: Direction) -> Stream {
        match d {
            Direction::Out => Stream::Out,
            Direction::In => Stream::In,
        }
    }
}

pub struct Sequence {
    next_seq: u64,
    /// The first sequence number of this session: a later session of an
    /// appended capture goes on from the one before, and what its records
    /// name by seq (a proxy's touch) is moved up by as much.
    first_seq: u64,
    /// The latest time handed out: times never go back.
    last_at: Duration,
    /// Per stream (out, in, stderr): the last line was cut at the in-memory
    /// cap, so the next one is its continuation.
    continues: [bool; 3],
    limits: Limits,
    correlator: Correlator,
}

impl Sequence {
    pub fn new(limits: Limits) -> Self {
        Self::starting_at(limits, 0)
    }

    /// A session whose first line gets `next_seq`.
    pub fn starting_at(limits: Limits, next_seq: u64) -> Self {
        Self {
            next_seq,
            first_seq: next_seq,
            last_at: Duration::ZERO,
            continues: [false; 3],
            limits,
            correlator: Correlator::new(),
        }
    }

    /// A seq as the session's own record wrote it, as this sequence numbers it.
    pub fn renumbered(&self, recorded_seq: u64) -> u64 {
        self.first_seq + recorded_seq
    }

    /// The sequence number the next line will get.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Counts a line that is not looked at (a reader that skips records keeps
    /// later sequence numbers those of a full read).
    pub fn skip_seq(&mut self) {
        self.next_seq += 1;
    }

    /// The next sequence number, now taken.
    pub fn take_seq(&mut self) -> u64 {
        let s = self.next_seq;
        self.next_seq += 1;
        s
    }

    /// The latest time handed out.
    pub fn last_at(&self) -> Duration {
        self.last_at
    }

    /// `at`, or the latest time handed out when that is later.
    pub fn monotonic(&mut self, at: Duration) -> Duration {
        self.last_at = self.last_at.max(at);
        self.last_at
    }

    /// Whether this line continues one cut at the cap, and remembers whether
    /// the next one will.
    pub fn continuation(&mut self, stream: Stream, ending: LineEnding) -> bool {
        let slot = &mut self.continues[stream as usize];
        let continues = *slot;
        *slot = ending == LineEnding::Cut;
        continues
    }

    /// Builds a frame from a line seen at `at` (time since start).
    /// `timeout` is the deadline for an outgoing request.
    /// A piece of a line longer than the in-memory cap is marked as such
    /// (oversize, not parsed), whichever piece it is.
    pub fn frame(&mut self, direction: Direction, line: RawLine, at: Duration, timeout: Option<Duration>) -> Frame {
        let at = self.monotonic(at);
        let seq = self.take_seq();
        let piece = self.continuation(direction.into(), line.ending);
        let mut frame = Frame::from_line(seq, at, direction, line, &self.limits);
        if piece {
            frame.class = classify_piece();
        }
        self.correlator.observe(&mut frame, timeout);
        frame
    }

    pub fn correlator(&self) -> &Correlator {
        &self.correlator
    }

    pub fn correlator_mut(&mut self) -> &mut Correlator {
        &mut self.correlator
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str, ending: LineEnding) -> RawLine {
        RawLine {
            bytes: text.as_bytes().to_vec(),
            ending,
        }
    }

    #[test]
    fn numbers_lines_in_order_and_times_never_go_back() {
        let mut s = Sequence::starting_at(Limits::default(), 7);
        let a = s.frame(
            Direction::Out,
            line(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, LineEnding::Lf),
            Duration::from_millis(5),
            None,
        );
        let b = s.frame(
            Direction::In,
            line(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, LineEnding::Lf),
            Duration::from_millis(3),
            None,
        );
        assert_eq!((a.seq, b.seq), (7, 8));
        assert_eq!(
            b.at,
            Duration::from_millis(5),
            "an earlier time is raised to the last one handed out"
        );
        assert_eq!(s.renumbered(2), 9);
        assert_eq!(s.next_seq(), 9);
    }

    #[test]
    fn a_cut_line_is_continued_on_its_own_stream_only() {
        let mut s = Sequence::new(Limits::default());
        assert!(!s.continuation(Stream::In, LineEnding::Cut));
        assert!(
            !s.continuation(Stream::Out, LineEnding::Lf),
            "the other stream was not cut"
        );
        assert!(
            s.continuation(Stream::In, LineEnding::Lf),
            "the piece after the cut continues it"
        );
        assert!(!s.continuation(Stream::In, LineEnding::Lf));
    }
}
