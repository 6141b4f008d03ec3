//! Sessions built from lines, as the recorder would have seen them on the
//! wire: frames classified and linked, stderr and notes in order. For unit
//! tests, benches and tools that need a session without a process.

use crate::timeline::model::{SessionModel, Source};
use crate::transport::event::Event;
use crate::transport::recorder::Recorder;
use crate::wire::classify::Limits;
use crate::wire::frame::{Direction, Frame};
use crate::wire::framing::{LineEnding, RawLine};
use std::time::Duration;

/// A session being written line by line; each line is `step` after the last.
pub struct Replay {
    recorder: Recorder,
    /// Whether events are kept (a bench building a million rows applies
    /// each frame as it comes instead).
    keep: bool,
    events: Vec<Event>,
    at: Duration,
    step: Duration,
}

impl Default for Replay {
    fn default() -> Self {
        Self::new()
    }
}

impl Replay {
    /// Lines 1 ms apart, from time zero.
    pub fn new() -> Self {
        Self {
            recorder: Recorder::replay(Limits::default()),
            keep: true,
            events: Vec::new(),
            at: Duration::ZERO,
            step: Duration::from_millis(1),
        }
    }

    /// A session of these lines (`Out` sent to the server, `In` from it).
    pub fn of(lines: &[(Direction, &str)]) -> Self {
        let mut r = Self::new();
        for (d, l) in lines {
            r.line(*d, l.as_bytes());
        }
        r
    }

    /// Time between lines from now on.
    pub fn with_step(mut self, step: Duration) -> Self {
        self.step = step;
        self
    }

    /// Do not keep the events: only the frames returned are there.
    pub fn without_events(mut self) -> Self {
        self.keep = false;
        self
    }

    /// The next line is at `at` (since the session started).
    pub fn at(&mut self, at: Duration) -> &mut Self {
        self.at = at;
        self
    }

    fn tick(&mut self) -> Duration {
        let at = self.at;
        self.at += self.step;
        at
    }

    /// Records a line ending in `\n` and returns its frame.
    pub fn frame(&mut self, direction: Direction, bytes: &[u8]) -> Frame {
        self.frame_ending(direction, bytes, LineEnding::Lf)
    }

    /// Records a line with this ending and returns its frame.
    pub fn frame_ending(&mut self, direction: Direction, bytes: &[u8], ending: LineEnding) -> Frame {
        let at = self.tick();
        let f = self.recorder.frame_at(
            direction,
            RawLine {
                bytes: bytes.to_vec(),
                ending,
            },
            at,
            None,
        );
        if self.keep {
            self.events.push(Event::Frame(f.clone()));
        }
        f
    }

    pub fn line(&mut self, direction: Direction, bytes: &[u8]) -> &mut Self {
        self.frame(direction, bytes);
        self
    }

    /// A line sent to the server.
    pub fn out(&mut self, line: &str) -> &mut Self {
        self.line(Direction::Out, line.as_bytes())
    }

    /// A line the server wrote on stdout.
    pub fn inn(&mut self, line: &str) -> &mut Self {
        self.line(Direction::In, line.as_bytes())
    }

    /// A line the server wrote on stderr.
    pub fn stderr(&mut self, bytes: &[u8]) -> &mut Self {
        let at = self.tick();
        let s = self.recorder.stderr_at(
            RawLine {
                bytes: bytes.to_vec(),
                ending: LineEnding::Lf,
            },
            at,
        );
        self.events.push(Event::Stderr(s));
        self
    }

    /// Any other event, as it is.
    pub fn event(&mut self, ev: Event) -> &mut Self {
        self.events.push(ev);
        self
    }

    /// A note on the timeline.
    pub fn note(&mut self, text: &str) -> &mut Self {
        let at = self.tick();
        self.event(Event::Note {
            at,
            text: text.to_owned(),
        })
    }

    pub fn events(&self) -> &[Event] {
        &self.events
    }

    pub fn into_events(self) -> Vec<Event> {
        self.events
    }

    /// The frames recorded so far.
    pub fn frames(&self) -> Vec<Frame> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Frame(f) => Some(f.clone()),
                _ => None,
            })
            .collect()
    }

    /// The session as the app's model of a live session would have it.
    pub fn model(&self) -> SessionModel {
        let mut m = SessionModel::new(Source::Live {
            command_line: "replay".into(),
        });
        for ev in &self.events {
            m.apply(ev);
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_become_linked_frames_in_order() {
        let mut r = Replay::new();
        r.out(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
            .stderr(b"log")
            .note("n")
            .inn(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        let frames = r.frames();
        assert_eq!(frames.len(), 2);
        assert_eq!(frames[1].link.as_ref().unwrap().method, "ping");
        assert_eq!(frames[1].at, Duration::from_millis(3));
        assert_eq!(r.model().store.len(), 4);
    }
}
