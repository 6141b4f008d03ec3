//! The step every line goes through once it is off the wire: number it, time
//! it, classify it, correlate it, append it to the capture.
//!
//! Shared by the session (mcpscope drives the server), the proxy (a real
//! client drives it) and capture loading (replay), so all three agree.

use crate::record::capture;
use crate::transport::event::{Event, StderrLine};
use crate::wire::classify::Limits;
use crate::wire::correlation::{Correlator, TimedOut};
use crate::wire::frame::{Direction, Frame};
use crate::wire::framing::RawLine;
use crate::wire::message::RequestId;
use std::time::{Duration, Instant};

pub struct Recorder {
    start: Instant,
    next_seq: u64,
    limits: Limits,
    correlator: Correlator,
    capture: Option<capture::Writer>,
    capture_failed: Option<String>,
}

impl Recorder {
    pub fn new(limits: Limits, start: Instant) -> Self {
        Self {
            start,
            next_seq: 0,
            limits,
            correlator: Correlator::new(),
            capture: None,
            capture_failed: None,
        }
    }

    /// A recorder for frames whose times are already known (loading a capture).
    pub fn replay(limits: Limits) -> Self {
        Self::new(limits, Instant::now())
    }

    pub fn with_capture(mut self, writer: capture::Writer) -> Self {
        self.capture = Some(writer);
        self
    }

    pub fn start(&self) -> Instant {
        self.start
    }

    pub fn since_start(&self, at: Instant) -> Duration {
        at.saturating_duration_since(self.start)
    }

    pub fn now(&self) -> Duration {
        self.since_start(Instant::now())
    }

    pub fn correlator(&self) -> &Correlator {
        &self.correlator
    }

    fn take_seq(&mut self) -> u64 {
        let s = self.next_seq;
        self.next_seq += 1;
        s
    }

    /// Builds a frame from a line seen at `at` (time since start).
    /// `timeout` is the deadline for an outgoing request.
    pub fn frame_at(&mut self, direction: Direction, line: RawLine, at: Duration, timeout: Option<Duration>) -> Frame {
        let seq = self.take_seq();
        let mut frame = Frame::from_line(seq, at, direction, line, &self.limits);
        self.correlator.observe(&mut frame, timeout);
        frame
    }

    pub fn stderr_at(&mut self, line: RawLine, at: Duration) -> StderrLine {
        StderrLine {
            seq: self.take_seq(),
            at,
            raw: line.bytes,
            ending: line.ending,
        }
    }

    pub fn cancel(&mut self, id: &RequestId) -> bool {
        self.correlator.on_cancel(id)
    }

    /// See [`Correlator::abandon`].
    pub fn abandon(&mut self, id: &RequestId) -> bool {
        self.correlator.abandon(id)
    }

    /// Marks a request as timed out while replaying a capture.
    pub fn replay_timeout(&mut self, id: &RequestId) {
        self.correlator.expire_one(id, Duration::ZERO);
    }

    pub fn expire(&mut self, now: Duration) -> Vec<TimedOut> {
        self.correlator.expire(now)
    }

    pub fn next_deadline(&self) -> Option<Duration> {
        self.correlator.next_deadline()
    }

    /// Appends an event to the capture. A failing capture is reported once
    /// (as a note event returned to the caller) and then left alone, so a full
    /// disk does not stop the session.
    pub fn capture(&mut self, event: &Event) -> Option<Event> {
        let w = self.capture.as_mut()?;
        if let Err(e) = w.write(event) {
            let text = format!("capture to {} stopped: {e}", w.path().display());
            self.capture = None;
            self.capture_failed = Some(text.clone());
            return Some(Event::Note { at: self.now(), text });
        }
        None
    }

    pub fn flush(&mut self) -> Option<Event> {
        let w = self.capture.as_mut()?;
        if let Err(e) = w.flush() {
            let text = format!("capture to {} stopped: {e}", w.path().display());
            self.capture = None;
            self.capture_failed = Some(text.clone());
            return Some(Event::Note { at: self.now(), text });
        }
        None
    }

    pub fn capture_failed(&self) -> Option<&str> {
        self.capture_failed.as_deref()
    }
}
