//! Replacing a file in one step: new content in a synced temporary file
//! beside it, with the old file's owner and a chosen mode, renamed over it.

use super::lock::{FileLock, flock};
use super::parent_dir;
use crate::platform::fs::{Ownership, this_file_only};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// New content in a temporary file beside its destination, removed unless installed.
pub(super) struct Replacement {
    path: PathBuf,
    file: File,
    installed: bool,
}

impl Replacement {
    /// `bytes` in a synced temporary file with this owner and these permissions.
    pub(super) fn prepare(dest: &Path, bytes: &[u8], ownership: Ownership) -> io::Result<Self> {
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let path = parent_dir(dest).join(format!(".{name}.mcpscope-{}.tmp", std::process::id()));
        // A stale one from a crashed run with our pid (we hold the config's lock).
        let _ = fs::remove_file(&path);
        let file = this_file_only(OpenOptions::new().write(true).create_new(true)).open(&path)?;
        let mut tmp = Replacement {
            path,
            file,
            installed: false,
        };
        tmp.file.write_all(bytes)?;
        ownership.give_owner(&tmp.file).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot give the new file the config's owner ({ownership}), so the config was not replaced: {e}"
                ),
            )
        })?;
        ownership.give_permissions(&tmp.file)?;
        tmp.file.sync_all()?;
        Ok(tmp)
    }

    /// Locks the new file: once renamed into place, it is the config others wait for.
    pub(super) fn lock(&self) -> io::Result<FileLock> {
        flock(&self.file, &self.path)?;
        // The lock belongs to the open file, shared by the clone.
        Ok(FileLock {
            _file: self.file.try_clone()?,
        })
    }

    pub(super) fn install(mut self, dest: &Path) -> io::Result<()> {
        fs::rename(&self.path, dest)?;
        self.installed = true;
        Ok(())
    }
}

impl Drop for Replacement {
    fn drop(&mut self) {
        if !self.installed {
            let _ = fs::remove_file(&self.path);
        }
    }
}

pub(super) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}
