//! Files on Unix: which file a path is, and reads at an offset.

use std::fs::{File, Metadata};
use std::os::unix::fs::{FileExt, MetadataExt};

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
