//! mcpscope's captures in other tools' formats: HAR for browser devtools
//! and HTTP debuggers (more to come: OpenTelemetry, imports).

pub mod har;

use crate::record::capture::{CaptureError, EventReader, Item, READ_BUFFER};
use std::path::Path;

/// A capture file as HAR, read record by record (every session of an
/// appended capture, in order); the lines that could not be read are
/// returned to be said.
pub fn har_of_capture(path: &Path, tool_version: &str) -> Result<(serde_json::Value, Vec<String>), CaptureError> {
    let file = crate::record::private_files::open_regular(path).map_err(CaptureError::open(path))?;
    let mut reader =
        EventReader::new(std::io::BufReader::with_capacity(READ_BUFFER, file)).map_err(CaptureError::read(path))?;
    let mut har = har::HarWriter::new(reader.header().clone(), tool_version);
    let mut warnings = Vec::new();
    while let Some(item) = reader.next_item().map_err(CaptureError::read(path))? {
        match item {
            Item::Event(e) => har.push(&e),
            Item::Warning(w) => warnings.push(w),
            Item::Boundary(..) => har.new_session(),
        }
    }
    Ok((har.finish(), warnings))
}
