//! mcpscope's captures in other tools' formats: HAR for browser devtools
//! and HTTP debuggers, OTLP/JSON traces for tracing backends.

pub mod har;
pub mod otlp;

use crate::record::capture::{CaptureError, EventReader, Item, READ_BUFFER};
use std::path::Path;

/// What an export format does with a capture's events.
trait Exporter {
    fn push(&mut self, event: &crate::transport::event::Event);
    fn new_session(&mut self);
    fn finish(self) -> serde_json::Value;
}

impl Exporter for har::HarWriter {
    fn push(&mut self, event: &crate::transport::event::Event) {
        har::HarWriter::push(self, event)
    }
    fn new_session(&mut self) {
        har::HarWriter::new_session(self)
    }
    fn finish(self) -> serde_json::Value {
        har::HarWriter::finish(self)
    }
}

impl Exporter for otlp::OtlpWriter {
    fn push(&mut self, event: &crate::transport::event::Event) {
        otlp::OtlpWriter::push(self, event)
    }
    fn new_session(&mut self) {
        otlp::OtlpWriter::new_session(self)
    }
    fn finish(self) -> serde_json::Value {
        otlp::OtlpWriter::finish(self)
    }
}

/// Reads a capture record by record into `make`'s exporter (every session
/// of an appended capture, in order); the lines that could not be read are
/// returned to be said.
fn export<E: Exporter>(
    path: &Path,
    make: impl FnOnce(crate::record::capture::Header) -> E,
) -> Result<(serde_json::Value, Vec<String>), CaptureError> {
    let file = crate::record::private_files::open_regular(path).map_err(CaptureError::open(path))?;
    let mut reader =
        EventReader::new(std::io::BufReader::with_capacity(READ_BUFFER, file)).map_err(CaptureError::read(path))?;
    let mut out = make(reader.header().clone());
    let mut warnings = Vec::new();
    while let Some(item) = reader.next_item().map_err(CaptureError::read(path))? {
        match item {
            Item::Event(e) => out.push(&e),
            Item::Warning(w) => warnings.push(w),
            Item::Boundary(..) => out.new_session(),
        }
    }
    Ok((out.finish(), warnings))
}

/// A capture file as HAR 1.2.
pub fn har_of_capture(path: &Path, tool_version: &str) -> Result<(serde_json::Value, Vec<String>), CaptureError> {
    export(path, |h| har::HarWriter::new(h, tool_version))
}

/// A capture file as an OTLP/JSON `ExportTraceServiceRequest`.
pub fn otlp_of_capture(path: &Path, tool_version: &str) -> Result<(serde_json::Value, Vec<String>), CaptureError> {
    export(path, |h| otlp::OtlpWriter::new(h, tool_version))
}
