//! Sessions for the unit tests, from lines framed as the recorder frames
//! them ([`Sequence`]: numbered, classified, responses linked to their
//! requests), one millisecond apart from time zero.

use crate::wire::classify::Limits;
use crate::wire::frame::{Direction, Frame};
use crate::wire::framing::{LineEnding, RawLine};
use crate::wire::sequence::Sequence;
use std::time::Duration;

pub(crate) struct Lines {
    sequence: Sequence,
    at: Duration,
    frames: Vec<Frame>,
}

impl Lines {
    pub(crate) fn new() -> Self {
        Self {
            sequence: Sequence::new(Limits::default()),
            at: Duration::ZERO,
            frames: Vec::new(),
        }
    }

    /// A session of these lines (`Out` sent to the server, `In` from it).
    pub(crate) fn of(lines: &[(Direction, &str)]) -> Self {
        let mut r = Self::new();
        for (d, l) in lines {
            r.line(*d, l);
        }
        r
    }

    fn line(&mut self, direction: Direction, text: &str) -> &mut Self {
        let line = RawLine {
            bytes: text.as_bytes().to_vec(),
            ending: LineEnding::Lf,
        };
        let f = self.sequence.frame(direction, line, self.at, None);
        self.at += Duration::from_millis(1);
        self.frames.push(f);
        self
    }

    /// A line sent to the server.
    pub(crate) fn out(&mut self, line: &str) -> &mut Self {
        self.line(Direction::Out, line)
    }

    /// A line from the server.
    pub(crate) fn inn(&mut self, line: &str) -> &mut Self {
        self.line(Direction::In, line)
    }

    pub(crate) fn frames(&self) -> Vec<Frame> {
        self.frames.clone()
    }
}
