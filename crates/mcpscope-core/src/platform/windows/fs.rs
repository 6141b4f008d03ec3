//! Files on Windows: which file a path is, reads at an offset, opening the
//! path itself, locks, and owner-only access.
//!
//! Who may use a file is an ACL here, not mode bits, and a file's metadata
//! does not carry its owner. mcpscope keeps its private files in
//! directories it made and gave a protected, owner-only DACL (what is created
//! inside inherits it), under the user's profile, which Windows already keeps
//! from other users. There is no shared, sticky directory like Unix's /tmp
//! (each user's %TEMP% is their own), so the checks that guard against files
//! and links planted there by other users have nothing to find: a file's
//! owner is taken to be the user, and nobody else is taken to have access.

use std::fs::{DirBuilder, File, Metadata, OpenOptions};
use std::os::windows::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::Path;
use windows_sys::Win32::Storage::FileSystem::FILE_FLAG_OPEN_REPARSE_POINT;

/// Which file this is: the same for the same file under any name, another
/// for a file put in its place (a capture rotated or rewritten). Windows'
/// metadata has no file index on stable Rust: the creation time stands in
/// (a file made in another's place is created later). NTFS gives a file
/// made within 15 s under a just-deleted name that name's old creation
/// time ("tunneling"): the follower then tells a rewrite by its length and
/// its first bytes instead.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileId {
    created: u64,
}

impl FileId {
    pub fn of(meta: &Metadata) -> FileId {
        FileId {
            created: meta.creation_time(),
        }
    }
}

/// Fills `buf` from `offset` in `file` without moving the file's cursor for
/// the reader that reads on from it. (A positioned read moves it here: it is
/// put back.)
pub fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    use std::io::Seek;
    let mut cursor = file;
    let kept = cursor.stream_position()?;
    let read = read_all_at(file, buf, offset);
    cursor.seek(std::io::SeekFrom::Start(kept))?;
    read
}

fn read_all_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        match file.seek_read(buf, offset) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Opens a file another program keeps writing, replacing or truncating
/// (a capture being followed): Windows refuses to rename over or delete a
/// file open without FILE_SHARE_DELETE, so the writer would fail.
pub fn open_shared_with_writers(path: &Path) -> std::io::Result<File> {
    use windows_sys::Win32::Storage::FileSystem::{FILE_SHARE_DELETE, FILE_SHARE_READ, FILE_SHARE_WRITE};
    OpenOptions::new()
        .read(true)
        .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE)
        .open(path)
}

/// Opens the path itself, never what a symbolic link or junction there
/// points to (the reparse point itself is opened, and callers that check
/// for a regular file refuse it). Handles are not inherited by the
/// programs mcpscope starts (std's default here). A file this creates
/// inherits the owner-only DACL of mcpscope's private directory.
pub fn this_file_only(options: &mut OpenOptions) -> &mut OpenOptions {
    options.custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
}

/// Opens whatever the path leads to. Windows has no FIFOs on a path and
/// opens never wait for a reader: nothing to add.
pub fn without_waiting(options: &mut OpenOptions) -> &mut OpenOptions {
    options
}

/// Nothing to add: a created file inherits its directory's DACL.
pub fn owner_only_when_created(options: &mut OpenOptions) -> &mut OpenOptions {
    options
}

/// Never: a FIFO cannot be named by a path here.
pub fn is_fifo_without_reader(_e: &std::io::Error) -> bool {
    false
}

/// The error a lookup through too many links ends with.
pub fn too_many_links() -> std::io::Error {
    std::io::Error::from_raw_os_error(windows_sys::Win32::Foundation::ERROR_CANT_RESOLVE_FILENAME as i32)
}

/// Whether an open with [`this_file_only`] failed because the path is a
/// link: it does not fail here (the link itself is opened), so never.
pub fn is_refused_link(_e: &std::io::Error) -> bool {
    false
}

/// Waits for an exclusive lock on `file` (LockFileEx through std): other
/// mcpscope runs wait for it. Closing the file releases it, also when the
/// process dies.
pub fn lock_exclusive(file: &File) -> std::io::Result<()> {
    file.lock()
}

/// What of a file's access is given to the file that replaces it: here the
/// read-only attribute (the DACL comes from the directory, as it does for
/// any file saved there).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ownership {
    readonly: bool,
}

impl Ownership {
    pub fn of(meta: &Metadata) -> Ownership {
        Ownership {
            readonly: meta.permissions().readonly(),
        }
    }

    /// As it is: the DACL already keeps others out of mcpscope's files.
    pub fn owner_only(self) -> Ownership {
        self
    }

    /// Nothing to do: the replacement is created by the user, who owns it,
    /// as the file it replaces was (files of other users cannot be given
    /// away without the privilege to take ownership).
    pub fn give_owner(&self, _file: &File) -> std::io::Result<()> {
        Ok(())
    }

    pub fn give_permissions(&self, file: &File) -> std::io::Result<()> {
        let mut permissions = file.metadata()?.permissions();
        permissions.set_readonly(self.readonly);
        file.set_permissions(permissions)
    }
}

impl std::fmt::Display for Ownership {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.readonly { "read-only" } else { "writable" })
    }
}

/// Nothing to do: opens on Windows never wait.
pub fn make_blocking(_file: &File) {}

/// Directories are given their owner-only DACL after they are made (see
/// [`restrict_dir_to_owner`]); the builder itself cannot carry one.
pub fn owner_only_dirs(builder: &mut DirBuilder) -> &mut DirBuilder {
    builder
}

/// Gives the directory at `dir` a protected DACL that lets only the user in;
/// what is created inside inherits it.
pub fn restrict_dir_to_owner(dir: &Path) -> std::io::Result<()> {
    super::security::restrict_to_owner(dir)
}

/// Gives the file at `path` a protected DACL that lets only the user in.
pub fn restrict_file_to_owner(path: &Path) -> std::io::Result<()> {
    super::security::restrict_to_owner(path)
}

/// Not read from metadata here (see the module's notes): no.
pub fn others_may_access(_meta: &Metadata) -> bool {
    false
}

/// Never: Windows has no shared sticky directory.
pub fn others_may_plant_names_in(_dir: &Metadata) -> bool {
    false
}

pub use super::super::FileKind;

impl FileKind {
    pub fn of(ft: &std::fs::FileType) -> FileKind {
        if ft.is_symlink() {
            FileKind::SymbolicLink
        } else if ft.is_file() {
            FileKind::Regular
        } else if ft.is_dir() {
            FileKind::Directory
        } else {
            FileKind::Other
        }
    }
}

/// Its attributes, as `attrib` would say.
pub fn access_of(meta: &Metadata) -> String {
    format!("attributes {:#x}", meta.file_attributes())
}

/// A user of this system, by SID.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User(std::sync::Arc<str>);

impl User {
    /// The user mcpscope runs as.
    pub fn current() -> User {
        static CURRENT: std::sync::OnceLock<User> = std::sync::OnceLock::new();
        CURRENT
            .get_or_init(|| {
                User(
                    super::security::current_user_sid()
                        .unwrap_or_else(|_| "S-1-0-0".to_owned())
                        .into(),
                )
            })
            .clone()
    }

    /// The user (see the module's notes).
    pub fn owner_of(_meta: &Metadata) -> User {
        User::current()
    }
}

impl std::fmt::Display for User {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
