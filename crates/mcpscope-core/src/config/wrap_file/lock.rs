//! Advisory locks (flock) that serialise runs on one config and on the
//! ledger: held until dropped, released by the kernel when a run dies.

use crate::platform::fs::{FileId, lock_exclusive, this_file_only};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::Path;

/// An exclusive advisory lock (flock), held until dropped: closing the file
/// releases it, also when the process dies.
#[derive(Debug)]
pub(super) struct FileLock {
    pub(super) _file: File,
}

/// Locks `path`, creating it (0600) if needed and waiting for whoever holds it.
pub(super) fn lock_file(path: &Path) -> io::Result<FileLock> {
    let file = this_file_only(OpenOptions::new().read(true).write(true).create(true))
        .open(path)
        .map_err(|e| with_path(e, "cannot open the lock file", path))?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("the lock file {} is not a regular file", path.display()),
        ));
    }
    flock(&file, path)?;
    Ok(FileLock { _file: file })
}

/// Locks the config file itself (a lock file beside it would be left in the
/// user's folder). A run that held the lock may have replaced the file while
/// this one waited: the lock must be on the file now at `target`, so it is
/// taken again until it is.
pub(super) fn lock_config(target: &Path) -> io::Result<FileLock> {
    loop {
        let file = this_file_only(OpenOptions::new().read(true)).open(target)?;
        let locked = file.metadata()?;
        if !locked.is_file() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a regular file"));
        }
        flock(&file, target)?;
        let now = fs::symlink_metadata(target)?;
        if FileId::of(&now) == FileId::of(&locked) {
            return Ok(FileLock { _file: file });
        }
    }
}

/// Waits for an exclusive lock on `file`.
pub(super) fn flock(file: &File, path: &Path) -> io::Result<()> {
    lock_exclusive(file).map_err(|e| with_path(e, "cannot lock", path))
}

fn with_path(e: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}
