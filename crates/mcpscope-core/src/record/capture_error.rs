//! Why a capture could not be opened, read or written (the types
//! [`crate::record::capture`] returns), kept apart from the format itself.

use crate::record::capture::NotACapture;
use crate::record::private_files::PrivateFileError;
use std::io;
use std::path::{Path, PathBuf};

/// A capture file that could not be opened, read or written; names the file.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("cannot open capture {}", .path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: PrivateFileError,
    },
    #[error("cannot read capture {}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: ReadError,
    },
    #[error("cannot open the capture {}", .path.display())]
    Create {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot write the capture {}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A thread working on the capture panicked (a bug: said, not hidden).
    #[error("{what} stopped on {}", .path.display())]
    Stopped { path: PathBuf, what: &'static str },
}

impl CaptureError {
    pub fn open(path: &Path) -> impl FnOnce(PrivateFileError) -> Self + '_ {
        move |source| CaptureError::Open {
            path: path.to_owned(),
            source,
        }
    }

    pub fn read(path: &Path) -> impl FnOnce(ReadError) -> Self + '_ {
        move |source| CaptureError::Read {
            path: path.to_owned(),
            source,
        }
    }

    pub(crate) fn write(path: &Path) -> impl FnOnce(io::Error) -> Self + '_ {
        move |source| CaptureError::Write {
            path: path.to_owned(),
            source,
        }
    }

    /// The operating system's error underneath, if there is one.
    pub fn io_error(&self) -> Option<&io::Error> {
        match self {
            CaptureError::Open { source, .. } => source.io_error(),
            CaptureError::Read {
                source: ReadError::Io(e),
                ..
            }
            | CaptureError::Create { source: e, .. }
            | CaptureError::Write { source: e, .. } => Some(e),
            CaptureError::Read { .. } | CaptureError::Stopped { .. } => None,
        }
    }
}

/// Why the lines of a capture could not be read (the file is named by [`CaptureError`]).
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("the file is empty")]
    Empty,
    #[error(transparent)]
    NotACapture(#[from] NotACapture),
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// A record of a capture that could not be read back (reported as a
/// warning with its line number, and skipped).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadRecord(std::borrow::Cow<'static, str>);

impl From<&'static str> for BadRecord {
    fn from(why: &'static str) -> Self {
        BadRecord(why.into())
    }
}

impl From<String> for BadRecord {
    fn from(why: String) -> Self {
        BadRecord(why.into())
    }
}
