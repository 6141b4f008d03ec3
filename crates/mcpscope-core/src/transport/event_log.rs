//! Where a session's events go as they happen. The session thread writes to
//! an [`EventLog`]; what a capture file looks like is `record`'s concern
//! (`record::capture` implements this, and its `open_log` is the opener the
//! callers hand to `SessionOptions::new`).

use crate::transport::event::Event;
use crate::transport::target::Target;
use std::path::Path;

/// A note that starts with this says the capture failed (said once, in the
/// session and on its timeline).
pub const FAILED: &str = "capture failed: ";

/// An append-only record of a session's events.
pub trait EventLog: Send {
    fn write(&mut self, event: &Event) -> std::io::Result<()>;
    fn flush(&mut self) -> std::io::Result<()>;
    /// Where it is (for saying why writing failed).
    fn path(&self) -> &Path;
}

/// Why a log could not be opened (the opener's own error, shown with its causes).
pub type OpenLogError = Box<dyn std::error::Error + Send + Sync>;

/// Opens the log of a new session of `target` at `path`.
pub type OpenLog = fn(&Path, &Target) -> Result<Box<dyn EventLog>, OpenLogError>;
