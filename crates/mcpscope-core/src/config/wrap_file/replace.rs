//! Replacing a file in one step: new content in a synced temporary file
//! beside it, with the old file's owner and a chosen mode, renamed over it.

use super::lock::{FileLock, flock};
use super::parent_dir;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// New content in a temporary file beside its destination, removed unless installed.
pub(super) struct Replacement {
    path: PathBuf,
    file: File,
    installed: bool,
}

impl Replacement {
    /// `bytes` in a synced temporary file with `like`'s owner and group and `mode`.
    pub(super) fn prepare(dest: &Path, bytes: &[u8], like: &fs::Metadata, mode: u32) -> io::Result<Self> {
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let path = parent_dir(dest).join(format!(".{name}.mcpscope-{}.tmp", std::process::id()));
        // A stale one from a crashed run with our pid (we hold the config's lock).
        let _ = fs::remove_file(&path);
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)?;
        let mut tmp = Replacement {
            path,
            file,
            installed: false,
        };
        tmp.file.write_all(bytes)?;
        // Owner before mode: a change of owner clears set-id bits.
        set_owner(&tmp.file, like.uid(), like.gid()).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot give the new file the config's owner (uid {}, gid {}), so the config was not replaced: {e}",
                    like.uid(),
                    like.gid()
                ),
            )
        })?;
        tmp.file.set_permissions(fs::Permissions::from_mode(mode))?;
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

/// Gives `file` this owner and group unless it has them already.
fn set_owner(file: &File, uid: u32, gid: u32) -> io::Result<()> {
    let meta = file.metadata()?;
    if meta.uid() == uid && meta.gid() == gid {
        return Ok(());
    }
    // SAFETY: fchown on a descriptor the caller owns.
    if unsafe { libc::fchown(file.as_raw_fd(), uid, gid) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

pub(super) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}
