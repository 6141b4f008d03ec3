//! mcpscope's captures in other tools' formats (HAR for browser devtools
//! and HTTP debuggers, OTLP/JSON traces for tracing backends), and other
//! tools' captures read into mcpscope's.

pub mod har;
pub mod import;
pub mod otlp;
pub mod otlp_http;
pub mod otlp_live;
pub mod otlp_proto;

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

/// Why a file could not be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportFileError {
    #[error("cannot read {}", .path.display())]
    Read {
        path: std::path::PathBuf,
        #[source]
        source: crate::record::private_files::PrivateFileError,
    },
    #[error("cannot read {}: it is not UTF-8 text", .0.display())]
    NotText(std::path::PathBuf),
    #[error("{} is larger than {} MiB: not imported (other tools' formats are read whole)", .0.display(), MAX_IMPORT >> 20)]
    TooLarge(std::path::PathBuf),
    #[error("{}: {source}", .path.display())]
    Format {
        path: std::path::PathBuf,
        source: import::ImportError,
    },
    #[error("{} already exists: give another --output (an import never appends to a capture)", .0.display())]
    Exists(std::path::PathBuf),
    #[error(transparent)]
    Write(#[from] CaptureError),
}

/// What an import wrote.
#[derive(Debug)]
pub struct ImportReport {
    pub format: import::Format,
    pub sessions: usize,
    pub messages: usize,
    pub notes: Vec<String>,
}

/// The largest file read for an import: they are read whole, and parsed
/// JSON takes several times its text.
const MAX_IMPORT: u64 = 256 << 20;

/// Reads another tool's capture at `from` (its format detected) and writes it
/// as a new mcpscope capture at `to` (created 0600; an existing file is
/// refused): every session, in order, each message a frame (or a stderr
/// line) at its time.
pub fn import_file(from: &Path, to: &Path) -> Result<ImportReport, ImportFileError> {
    use std::io::Read as _;
    let unreadable = |source| ImportFileError::Read {
        path: from.to_owned(),
        source,
    };
    let file = crate::record::private_files::open_regular(from).map_err(unreadable)?;
    let mut bytes = Vec::new();
    file.take(MAX_IMPORT + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| unreadable(crate::record::private_files::PrivateFileError::Open(e)))?;
    if bytes.len() as u64 > MAX_IMPORT {
        return Err(ImportFileError::TooLarge(from.to_owned()));
    }
    let text = String::from_utf8(bytes).map_err(|_| ImportFileError::NotText(from.to_owned()))?;
    let format_error = |source| ImportFileError::Format {
        path: from.to_owned(),
        source,
    };
    let format = import::detect(&text).ok_or_else(|| format_error(import::ImportError::Unknown))?;
    let imported = import::parse(format, &text).map_err(format_error)?;
    if std::fs::symlink_metadata(to).is_ok() {
        return Err(ImportFileError::Exists(to.to_owned()));
    }
    let mut messages = 0;
    for session in &imported.sessions {
        let mut header = session.header.clone();
        if header.command_line.is_empty() {
            header.command_line = format!("imported from {}", imported.format.name());
        }
        let mut writer = crate::record::capture::Writer::open(to, &header)?;
        let mut recorder = crate::transport::recorder::Recorder::new(
            crate::wire::classify::Limits::default(),
            std::time::Instant::now(),
        );
        let write_failed = |source| CaptureError::Create {
            path: to.to_owned(),
            source,
        };
        for m in &session.messages {
            let at = std::time::Duration::from_millis(m.unix_ms.saturating_sub(header.started_unix_ms));
            let line = crate::wire::framing::RawLine {
                bytes: m.bytes.clone(),
                ending: crate::wire::framing::LineEnding::Lf,
            };
            let event = if m.stderr {
                crate::transport::event::Event::Stderr(recorder.stderr_at(line, at))
            } else {
                crate::transport::event::Event::Frame(recorder.frame_at(m.direction, line, at, None))
            };
            writer.write(&event).map_err(write_failed)?;
            messages += 1;
        }
        for note in &imported.notes {
            let at = session.messages.last().map_or(std::time::Duration::ZERO, |m| {
                std::time::Duration::from_millis(m.unix_ms.saturating_sub(header.started_unix_ms))
            });
            writer
                .write(&crate::transport::event::Event::Note {
                    at,
                    text: format!("imported from {}: {note}", imported.format.name()),
                })
                .map_err(write_failed)?;
        }
        writer.flush().map_err(write_failed)?;
    }
    Ok(ImportReport {
        format: imported.format,
        sessions: imported.sessions.len(),
        messages,
        notes: imported.notes,
    })
}
