//! Files on Unix: which file a path is, reads at an offset, opening the
//! path itself, advisory locks, who owns a file and who else may use it.

use std::fs::{DirBuilder, File, Metadata, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, FileExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Which file this is: the same for the same file under any name, another
/// for a file put in its place (a capture rotated or rewritten).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileId {
    device: u64,
    inode: u64,
}

impl FileId {
    pub fn of(meta: &Metadata) -> FileId {
        FileId {
            device: meta.dev(),
            inode: meta.ino(),
        }
    }
}

/// Fills `buf` from `offset` in `file` without moving the file's cursor, so
/// that another reader of the same open file is not disturbed.
pub fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    file.read_exact_at(buf, offset)
}

/// Opens a file another program keeps writing, replacing or truncating (a
/// capture being followed): on Unix any open file allows that.
pub fn open_shared_with_writers(path: &Path) -> std::io::Result<File> {
    File::open(path)
}

/// Opens the path itself, never what a symbolic link there points to (the
/// open fails: see [`is_refused_link`]); a FIFO planted there does not
/// block the open; the file is not inherited by the programs mcpscope
/// starts, nor made a terminal. A file this creates is the owner's only.
pub fn this_file_only(options: &mut OpenOptions) -> &mut OpenOptions {
    options
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY)
}

/// Opens whatever the path leads to (links followed), but a FIFO there does
/// not block the open (see [`make_blocking`]), the file is not inherited by
/// the programs mcpscope starts, nor made a terminal.
pub fn without_waiting(options: &mut OpenOptions) -> &mut OpenOptions {
    options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
}

/// A file this creates is the owner's only; links are followed.
pub fn owner_only_when_created(options: &mut OpenOptions) -> &mut OpenOptions {
    options.mode(0o600)
}

/// Whether an open with [`without_waiting`] failed because the FIFO there
/// has no reader.
pub fn is_fifo_without_reader(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::ENXIO)
}

/// The error a lookup through too many links ends with.
pub fn too_many_links() -> std::io::Error {
    std::io::Error::from_raw_os_error(libc::ELOOP)
}

/// Whether an open with [`this_file_only`] failed because the path is a
/// symbolic link.
pub fn is_refused_link(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

/// Waits for an exclusive advisory lock on `file` (flock): other mcpscope
/// runs wait for it, other programs are not stopped from reading or
/// writing. Closing the file releases it, also when the process dies.
pub fn lock_exclusive(file: &File) -> std::io::Result<()> {
    loop {
        // SAFETY: flock on a descriptor the caller owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Who owns a file and who else may use it: given to the file that
/// replaces it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ownership {
    uid: u32,
    gid: u32,
    /// Permission bits, set-id and sticky included.
    mode: u32,
}

impl Ownership {
    pub fn of(meta: &Metadata) -> Ownership {
        Ownership {
            uid: meta.uid(),
            gid: meta.gid(),
            mode: meta.mode() & 0o7777,
        }
    }

    /// The same owner, and nobody else may read or write.
    pub fn owner_only(self) -> Ownership {
        Ownership { mode: 0o600, ..self }
    }

    /// Gives `file` this owner and group, unless it has them already. Do
    /// it before [`give_permissions`](Self::give_permissions): a change of
    /// owner clears set-id bits.
    pub fn give_owner(&self, file: &File) -> std::io::Result<()> {
        let meta = file.metadata()?;
        if (meta.uid(), meta.gid()) == (self.uid, self.gid) {
            return Ok(());
        }
        // SAFETY: fchown on a descriptor the caller owns.
        if unsafe { libc::fchown(file.as_raw_fd(), self.uid, self.gid) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// Gives `file` these permissions.
    pub fn give_permissions(&self, file: &File) -> std::io::Result<()> {
        file.set_permissions(std::fs::Permissions::from_mode(self.mode))
    }
}

/// The owner as the system names it: "uid 1000, gid 1000".
impl std::fmt::Display for Ownership {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "uid {}, gid {}", self.uid, self.gid)
    }
}

/// Reads from a file opened with [`this_file_only`] block as usual again
/// (it was opened non-blocking only so that a FIFO could not stall the
/// open; regular files ignore the flag, but a reader should not see it).
pub fn make_blocking(file: &File) {
    // SAFETY: fcntl on a descriptor the caller owns.
    unsafe {
        let fd = file.as_raw_fd();
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
}

/// Makes the directories `builder` creates the owner's alone.
pub fn owner_only_dirs(builder: &mut DirBuilder) -> &mut DirBuilder {
    builder.mode(0o700)
}

/// Makes the directory at `dir` the owner's alone.
pub fn restrict_dir_to_owner(dir: &Path) -> std::io::Result<()> {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

/// Makes the file at `path` the owner's alone.
pub fn restrict_file_to_owner(path: &Path) -> std::io::Result<()> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
}

/// Whether users other than the owner may read, write or enter it.
pub fn others_may_access(meta: &Metadata) -> bool {
    meta.mode() & 0o077 != 0
}

/// Whether other users may put names in this directory that the owner of
/// the directory cannot tell from their own: sticky and writable by group or
/// others, as /tmp is.
pub fn others_may_plant_names_in(dir: &Metadata) -> bool {
    // S_ISVTX, the sticky bit: 0o1000 on every Unix (a u16 in macOS's libc).
    const STICKY: u32 = 0o1000;
    dir.mode() & STICKY != 0 && dir.mode() & 0o022 != 0
}

pub use super::super::FileKind;

impl FileKind {
    pub fn of(ft: &std::fs::FileType) -> FileKind {
        if ft.is_file() {
            FileKind::Regular
        } else if ft.is_dir() {
            FileKind::Directory
        } else if ft.is_symlink() {
            FileKind::SymbolicLink
        } else if ft.is_fifo() {
            FileKind::Fifo
        } else if ft.is_char_device() {
            FileKind::CharacterDevice
        } else if ft.is_block_device() {
            FileKind::BlockDevice
        } else if ft.is_socket() {
            FileKind::Socket
        } else {
            FileKind::Other
        }
    }
}

/// Who may do what with it, as `ls -l` would say: "mode 644".
pub fn access_of(meta: &Metadata) -> String {
    format!("mode {:o}", meta.mode() & 0o777)
}

/// A user of this system, as a file names its owner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User(u32);

impl User {
    /// The user mcpscope runs as: the owner of the files it creates.
    pub fn current() -> User {
        // SAFETY: geteuid has no preconditions and cannot fail.
        User(unsafe { libc::geteuid() })
    }

    pub fn owner_of(meta: &Metadata) -> User {
        User(meta.uid())
    }
}

/// The user's number ("1000"), as error messages have always shown it.
impl std::fmt::Display for User {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}
