//! The step every line goes through once it is off the wire: number it, time
//! it, classify it, correlate it, append it to the capture.
//!
//! Shared by the session (mcpscope drives the server), the proxy (a real
//! client drives it) and capture loading (replay), so all three agree.
//!
//! Times come from several threads (each reader stamps what it read), so the
//! recorder is the one clock of a session: every time it hands out is at
//! least the one before, and a capture's `t_us` never runs backwards.

use crate::transport::event::{Event, StderrLine};
use crate::transport::event_log::{EventLog, FAILED};
use crate::wire::classify::Limits;
use crate::wire::correlation::{Correlator, TimedOut};
use crate::wire::frame::{Direction, Frame};
use crate::wire::framing::RawLine;
use crate::wire::message::RequestId;
use crate::wire::sequence::{Sequence, Stream};
use std::time::{Duration, Instant};

/// Something that sees every event a recorder records, on the recording thread.
#[derive(Clone)]
pub struct EventTap(std::sync::Arc<dyn Fn(&Event) + Send + Sync>);

impl EventTap {
    pub fn new(f: impl Fn(&Event) + Send + Sync + 'static) -> Self {
        Self(std::sync::Arc::new(f))
    }

    pub fn see(&self, event: &Event) {
        (self.0)(event)
    }
}

impl std::fmt::Debug for EventTap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EventTap")
    }
}

pub struct Recorder {
    start: Instant,
    /// Numbers, times, classifies and links what crosses the wire.
    sequence: Sequence,
    capture: Option<Box<dyn EventLog>>,
    /// Sees every event recorded (a live exporter), capture or not.
    tap: Option<EventTap>,
    capture_failed: Option<String>,
}

impl Recorder {
    pub fn new(limits: Limits, start: Instant) -> Self {
        Self {
            start,
            sequence: Sequence::new(limits),
            capture: None,
            tap: None,
            capture_failed: None,
        }
    }

    /// A recorder for frames whose times are already known (loading a capture).
    pub fn replay(limits: Limits) -> Self {
        Self::new(limits, Instant::now())
    }

    /// A replay recorder for the next session of a capture: ids are matched
    /// afresh, sequence numbers go on from `next_seq`.
    pub fn replay_after(limits: Limits, next_seq: u64) -> Self {
        let mut r = Self::replay(limits);
        r.sequence = Sequence::starting_at(limits, next_seq);
        r
    }

    /// A seq as the session's own record wrote it, as this recorder numbers it.
    pub fn renumbered(&self, recorded_seq: u64) -> u64 {
        self.sequence.renumbered(recorded_seq)
    }

    /// The sequence number the next line will get.
    pub fn next_seq(&self) -> u64 {
        self.sequence.next_seq()
    }

    pub fn with_capture(mut self, writer: Box<dyn EventLog>) -> Self {
        self.capture = Some(writer);
        self
    }

    /// Hands every recorded event to `tap` as well (OpenTelemetry sent live).
    pub fn with_tap(mut self, tap: Option<EventTap>) -> Self {
        self.tap = tap;
        self
    }

    pub fn start(&self) -> Instant {
        self.start
    }

    /// The session time of an instant seen by some thread, never earlier
    /// than a time already handed out.
    pub fn since_start(&mut self, at: Instant) -> Duration {
        self.sequence.monotonic(at.saturating_duration_since(self.start))
    }

    /// The session time now. (Never earlier than what was handed out: every
    /// earlier time came from an instant before this one.)
    pub fn now(&self) -> Duration {
        Instant::now()
            .saturating_duration_since(self.start)
            .max(self.sequence.last_at())
    }

    pub fn correlator(&self) -> &Correlator {
        self.sequence.correlator()
    }

    /// Counts a frame or stderr line that is not looked at (a reader that
    /// skips records keeps later sequence numbers those of a full read).
    pub fn skip_seq(&mut self) {
        self.sequence.skip_seq();
    }

    /// Builds a frame from a line seen at `at` (time since start); see
    /// [`Sequence::frame`].
    pub fn frame_at(&mut self, direction: Direction, line: RawLine, at: Duration, timeout: Option<Duration>) -> Frame {
        self.sequence.frame(direction, line, at, timeout)
    }

    pub fn stderr_at(&mut self, line: RawLine, at: Duration) -> StderrLine {
        let at = self.sequence.monotonic(at);
        self.sequence.continuation(Stream::Stderr, line.ending);
        StderrLine {
            seq: self.sequence.take_seq(),
            at,
            raw: line.bytes,
            ending: line.ending,
        }
    }

    pub fn cancel(&mut self, id: &RequestId) -> bool {
        self.sequence.correlator_mut().on_cancel(id)
    }

    /// See [`Correlator::abandon`].
    pub fn abandon(&mut self, id: &RequestId) -> bool {
        self.sequence.correlator_mut().abandon(id)
    }

    /// Marks a request as timed out while replaying a capture.
    pub fn replay_timeout(&mut self, id: &RequestId) {
        self.sequence.correlator_mut().expire_one(id, Duration::ZERO);
    }

    pub fn expire(&mut self, now: Duration) -> Vec<TimedOut> {
        self.sequence.correlator_mut().expire(now)
    }

    pub fn next_deadline(&self) -> Option<Duration> {
        self.sequence.correlator().next_deadline()
    }

    /// Appends an event to the capture. A failing capture is reported once
    /// (as a note event returned to the caller) and then left alone, so a full
    /// disk does not stop the session.
    pub fn capture(&mut self, event: &Event) -> Option<Event> {
        // A note timed with `now()` is later than the last line handed out:
        // lines read before it but recorded after it must not go back in time.
        self.sequence.monotonic(event.at());
        if let Some(tap) = &self.tap {
            tap.see(event);
        }
        self.with_log(|w| w.write(event))
    }

    pub fn flush(&mut self) -> Option<Event> {
        self.with_log(|w| w.flush())
    }

    /// Runs `op` on the log; a failure stops the capture and is said once.
    fn with_log(&mut self, op: impl FnOnce(&mut dyn EventLog) -> std::io::Result<()>) -> Option<Event> {
        let w = self.capture.as_mut()?;
        let e = op(w.as_mut()).err()?;
        let text = format!(
            "{}writing {}: {e}; nothing more is recorded",
            FAILED,
            w.path().display()
        );
        self.capture = None;
        self.capture_failed = Some(text.clone());
        Some(Event::Note { at: self.now(), text })
    }

    pub fn capture_failed(&self) -> Option<&str> {
        self.capture_failed.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::framing::LineEnding;

    fn line(bytes: &[u8], ending: LineEnding) -> RawLine {
        RawLine {
            bytes: bytes.to_vec(),
            ending,
        }
    }

    #[test]
    fn times_from_several_threads_never_run_backwards() {
        let start = Instant::now();
        let mut r = Recorder::new(Limits::default(), start);
        let a = r.frame_at(
            Direction::In,
            line(b"{}", LineEnding::Lf),
            Duration::from_micros(150),
            None,
        );
        // A stderr line read earlier by another thread, recorded later.
        let b = r.stderr_at(line(b"log", LineEnding::Lf), Duration::from_micros(100));
        let c = r.since_start(start + Duration::from_micros(120));
        assert_eq!(a.at, Duration::from_micros(150));
        assert_eq!(b.at, Duration::from_micros(150));
        assert_eq!(c, Duration::from_micros(150));
        assert!(r.now() >= c);
    }

    #[test]
    fn every_piece_of_a_cut_line_is_oversize_and_unparsed() {
        use crate::wire::classify::{Anomalies, Kind};
        let mut r = Recorder::replay(Limits::default());
        let t = Duration::ZERO;
        let first = r.frame_at(Direction::In, line(br#"{"jsonrpc":"2.0","#, LineEnding::Cut), t, None);
        let middle = r.frame_at(Direction::In, line(br#""id":1,"#, LineEnding::Cut), t, None);
        // An outgoing line in between is not part of it.
        let out = r.frame_at(
            Direction::Out,
            line(br#"{"jsonrpc":"2.0","method":"x"}"#, LineEnding::Lf),
            t,
            None,
        );
        let last = r.frame_at(Direction::In, line(br#""result":{}}"#, LineEnding::Lf), t, None);
        let after = r.frame_at(
            Direction::In,
            line(br#"{"jsonrpc":"2.0","method":"y"}"#, LineEnding::Lf),
            t,
            None,
        );
        for f in [&first, &middle, &last] {
            assert_eq!(f.kind(), Kind::NotJson, "{f:?}");
            assert_eq!(f.anomalies(), Anomalies::OVERSIZE, "{f:?}");
        }
        assert_eq!(out.kind(), Kind::Notification);
        assert_eq!(after.kind(), Kind::Notification);
        assert!(after.anomalies().is_empty());
    }
}
