//! The JSONL capture file: every event, appended as it happens.
//!
//! One JSON object per line. The first line is a header; every other line is a
//! record with `t_us` (microseconds since the session started) and `dir`
//! (`out`, `in`, `stderr` or `meta`). Frames and stderr lines keep their exact
//! bytes: `raw` as a string when the line is UTF-8, `raw_b64` otherwise, plus
//! `eol` (`lf`, `crlf` or `eof`). Classification fields (`kind`, `id`,
//! `method`, `anomalies`, `latency_us`) are written for readers such as `jq`;
//! loading recomputes them from the raw bytes so old captures gain new checks.
//!
//! A capture file is appended to, never truncated: every session starts with
//! its own header line, which is the boundary between sessions. Loading
//! keeps the sessions apart ([`Loaded::sessions`]): times go on from one to
//! the next, and ids are matched within a session only.
//!
//! `format` is the header and the event <-> JSON codec, `writer` appends,
//! `reader` reads back; everything is used through the names here.

mod format;
mod reader;
#[cfg(test)]
mod tests;
mod writer;

pub use crate::record::capture_error::{BadRecord, CaptureError, ReadError};
pub use format::{FORMAT, Header, VERSION, app_from_json, auth_from_json, auth_json, meta_json, touch_from_json};
pub use reader::{
    EventReader, Item, LineRead, Loaded, NotACapture, READ_BUFFER, RecordReader, SessionSpan, lines_of, load, load_from,
};
pub use writer::{Writer, check_writable, open_log};

/// Every note about a capture that could not be written starts with this, so
/// whoever runs a session (the CLI) can tell the user and fail.
pub use crate::transport::event_log::FAILED;
