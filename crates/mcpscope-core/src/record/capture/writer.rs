//! Appending a session's events to a capture file, by the one rule for
//! output files; and the opener a session is given to write its capture.

use crate::record::capture::format::{Header, meta_json, write_frame, write_prefix, write_raw};
use crate::record::capture_error::CaptureError;
use crate::transport::event::Event;
use crate::transport::event_log::{EventLog, OpenLogError};
use crate::transport::target::Target;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Appends events to a capture file.
pub struct Writer {
    out: BufWriter<File>,
    path: PathBuf,
}

/// Opens `path` for appending by the one rule for output files
/// ([`crate::record::output_file`]): created `0600` when missing, an
/// existing file keeping its mode and contents, a device written into,
/// another user's planted link and a FIFO refused without blocking.
fn open_append(path: &Path) -> io::Result<File> {
    crate::record::output_file::open_append(path).map_err(crate::record::output_file::OutputFileError::into_io)
}

/// Checks that a capture can be opened for appending at `path` (creating it
/// `0600` if needed), so a command can refuse to start instead of running a
/// session nobody can look at later.
pub fn check_writable(path: &Path) -> Result<(), CaptureError> {
    open_append(path).map(drop).map_err(CaptureError::write(path))
}

impl EventLog for Writer {
    fn write(&mut self, event: &Event) -> io::Result<()> {
        Writer::write(self, event)
    }

    fn flush(&mut self) -> io::Result<()> {
        Writer::flush(self)
    }

    fn path(&self) -> &Path {
        Writer::path(self)
    }
}

/// How a session opens its capture in this format: given to it as
/// `SessionOptions::new(open_log)` (transport, a floor below, cannot name it).
pub fn open_log(path: &Path, target: &Target) -> Result<Box<dyn EventLog>, OpenLogError> {
    Ok(Box::new(Writer::open(path, &Header::for_target(target, "session"))?))
}

impl Writer {
    /// Opens a capture for appending and writes this session's header (the
    /// boundary from any session already in the file).
    pub fn open(path: &Path, header: &Header) -> Result<Self, CaptureError> {
        let file = open_append(path).map_err(|source| CaptureError::Create {
            path: path.to_owned(),
            source,
        })?;
        Self::with_file(file, path, header)
    }

    /// Starts a capture in a file the caller opened (e.g. a private one in the
    /// state directory); `path` names it in messages.
    pub fn with_file(file: File, path: &Path, header: &Header) -> Result<Self, CaptureError> {
        let mut w = Self {
            out: BufWriter::with_capacity(256 * 1024, file),
            path: path.to_owned(),
        };
        serde_json::to_writer(&mut w.out, &header.to_json())
            .map_err(io::Error::from)
            .and_then(|_| w.out.write_all(b"\n"))
            .and_then(|_| w.out.flush())
            .map_err(CaptureError::write(path))?;
        Ok(w)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Hands buffered records to the OS. The session calls this whenever it
    /// has no further event waiting, so a crash loses at most one burst.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    pub fn write(&mut self, event: &Event) -> io::Result<()> {
        let w = &mut self.out;
        match event {
            Event::Frame(f) => write_frame(w, f)?,
            Event::Stderr(s) => {
                write_prefix(w, s.at, Some(s.seq), "stderr")?;
                write_raw(w, &s.raw, s.ending)?;
                w.write_all(b"}\n")?;
            }
            other => {
                let mut v = meta_json(other);
                let o = v.as_object_mut().expect("meta records are objects");
                let mut rec = serde_json::Map::new();
                rec.insert("t_us".into(), (other.at().as_micros() as u64).into());
                rec.insert("dir".into(), "meta".into());
                rec.append(o);
                serde_json::to_writer(&mut *w, &rec)?;
                w.write_all(b"\n")?;
            }
        }
        Ok(())
    }
}
