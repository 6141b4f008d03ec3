//! What a session reports: frames, stderr lines and lifecycle facts.

use crate::correlation::TimedOut;
use crate::frame::Frame;
use crate::framing::LineEnding;
use crate::message::RequestId;
use crate::process::{ExitInfo, SpawnError};
use std::path::PathBuf;
use std::time::Duration;

/// One line the server wrote to stderr.
#[derive(Clone, Debug, PartialEq)]
pub struct StderrLine {
    pub seq: u64,
    pub at: Duration,
    pub raw: Vec<u8>,
    pub ending: LineEnding,
}

impl StderrLine {
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.raw)
    }
}

/// Everything a session tells its owner, in the order it happened.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    Spawned {
        at: Duration,
        pid: u32,
        program: PathBuf,
        command_line: String,
    },
    SpawnFailed {
        at: Duration,
        error: SpawnError,
    },
    /// A line sent to the server (Out) or received from it (In).
    Frame(Frame),
    Stderr(StderrLine),
    /// A request got no response within its timeout.
    TimedOut {
        at: Duration,
        timed_out: TimedOut,
    },
    /// The client cancelled one of its requests (`notifications/cancelled` was sent).
    Cancelled {
        at: Duration,
        id: RequestId,
    },
    /// Writing to the server's stdin failed; the line did not reach it.
    WriteFailed {
        at: Duration,
        error: String,
        line: Vec<u8>,
    },
    /// Something the session did or noticed that is not a frame, e.g. a
    /// shutdown step ("sent SIGTERM to process group 123") or a capture
    /// write failure.
    Note {
        at: Duration,
        text: String,
    },
    Exited {
        at: Duration,
        status: ExitInfo,
    },
    /// The session is over: no more events follow.
    Closed {
        at: Duration,
    },
}

impl Event {
    pub fn at(&self) -> Duration {
        match self {
            Event::Frame(f) => f.at,
            Event::Stderr(s) => s.at,
            Event::Spawned { at, .. }
            | Event::SpawnFailed { at, .. }
            | Event::TimedOut { at, .. }
            | Event::Cancelled { at, .. }
            | Event::WriteFailed { at, .. }
            | Event::Note { at, .. }
            | Event::Exited { at, .. }
            | Event::Closed { at } => *at,
        }
    }

    /// One line for a person, for events that are not lines on the wire.
    pub fn summary(&self) -> String {
        match self {
            Event::Frame(f) => f.label(),
            Event::Stderr(s) => s.text().into_owned(),
            Event::Spawned { pid, program, .. } => format!("started {} (pid {pid})", program.display()),
            Event::SpawnFailed { error, .. } => format!("could not start: {error}"),
            Event::TimedOut { timed_out, .. } => format!(
                "{} #{} timed out after {} ms",
                timed_out.method,
                timed_out.id,
                timed_out.waited.as_millis()
            ),
            Event::Cancelled { id, .. } => format!("cancelled request #{id}"),
            Event::WriteFailed { error, .. } => format!("write to stdin failed: {error}"),
            Event::Note { text, .. } => text.clone(),
            Event::Exited { status, .. } => format!("server {status}"),
            Event::Closed { .. } => "session closed".into(),
        }
    }
}
