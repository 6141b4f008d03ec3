//! Where mcpscope keeps what it records for the user alone: captures of
//! live sessions, saved content blobs, the app's saved state.
//!
//! Captures hold whole conversations (tool arguments, results, sometimes
//! secrets), so they live in a per-user directory created `0700` — by
//! default `$XDG_STATE_HOME/mcpscope` (`~/.local/state/mcpscope`) — never in
//! a shared temp directory. A directory that is a symlink, not a directory,
//! or owned by someone else is refused (never followed or trusted), and one
//! of ours that others can read is made private again. Files are created
//! `0600`, exclusively (`O_EXCL | O_NOFOLLOW`), with names that cannot be
//! predicted (a random suffix).

use crate::platform::fs::{User, make_blocking, without_waiting};
use crate::record::state_dir;
use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

/// Why a private directory or file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum PrivateFileError {
    #[error("cannot use the private directory {}", .dir.display())]
    Directory {
        dir: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot create a file in {}", .dir.display())]
    Create {
        dir: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot find a free file name in {}", .0.display())]
    NoFreeName(PathBuf),
    #[error("cannot write {}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot get random bytes for a file name")]
    Random(#[source] io::Error),
    /// Names no path: the caller says what it was opening.
    #[error("it is {0}, not a regular file")]
    NotRegular(&'static str),
    /// Opening or inspecting a file to read; names no path either.
    #[error(transparent)]
    Open(#[from] io::Error),
}

impl PrivateFileError {
    /// The operating system's error underneath, if there is one.
    pub fn io_error(&self) -> Option<&io::Error> {
        match self {
            PrivateFileError::Directory { source, .. }
            | PrivateFileError::Create { source, .. }
            | PrivateFileError::Write { source, .. }
            | PrivateFileError::Random(source)
            | PrivateFileError::Open(source) => Some(source),
            PrivateFileError::NoFreeName(_) | PrivateFileError::NotRegular(_) => None,
        }
    }
}

type Result<T, E = PrivateFileError> = std::result::Result<T, E>;

/// mcpscope's private directory for this user (created if needed).
pub fn state_dir() -> Result<PathBuf> {
    let dir = base_dir()?;
    ensure_private_dir(&dir)?;
    Ok(dir)
}

/// Where live sessions are recorded.
pub fn captures_dir() -> Result<PathBuf> {
    private_subdir("captures")
}

/// Where content blobs (audio, binary resources) a tool returned are saved.
pub fn blobs_dir() -> Result<PathBuf> {
    private_subdir("content")
}

fn private_subdir(name: &str) -> Result<PathBuf> {
    let dir = state_dir()?.join(name);
    ensure_private_dir(&dir)?;
    Ok(dir)
}

/// [`state_dir::root`] (`$XDG_STATE_HOME/mcpscope`, `~/.local/state/mcpscope`);
/// with no home, `$XDG_RUNTIME_DIR/mcpscope`, then a per-user directory in
/// the temp dir.
fn base_dir() -> Result<PathBuf> {
    if let Ok(root) = state_dir::root() {
        return Ok(root);
    }
    let absolute = |v: Option<std::ffi::OsString>| v.map(PathBuf::from).filter(|p| p.is_absolute());
    if let Some(runtime) = absolute(std::env::var_os("XDG_RUNTIME_DIR")) {
        return Ok(runtime.join("mcpscope"));
    }
    Ok(std::env::temp_dir().join(format!("mcpscope-{}", User::current())))
}

/// Makes sure `dir` is a directory of this user that only they can use
/// (the one rule is [`state_dir::ensure_private_dir`]).
pub fn ensure_private_dir(dir: &Path) -> Result<()> {
    state_dir::ensure_private_dir(dir).map_err(|source| PrivateFileError::Directory {
        dir: dir.to_owned(),
        source,
    })
}

/// Creates a new file `0600` in `dir` (which should be private), named
/// `{prefix}-{unix ms}-{random}.{ext}`: exclusive, never through a symlink.
pub fn create_private_file(dir: &Path, prefix: &str, ext: &str) -> Result<(File, PathBuf)> {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    for _ in 0..16 {
        let path = dir.join(format!("{prefix}-{stamp}-{}.{ext}", random_hex()?));
        match state_dir::create_private_file(&path) {
            Ok(f) => return Ok((f, path)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(source) => {
                return Err(PrivateFileError::Create {
                    dir: dir.to_owned(),
                    source,
                });
            }
        }
    }
    Err(PrivateFileError::NoFreeName(dir.to_owned()))
}

/// A new, empty capture file for a live session, in [`captures_dir`].
pub fn new_capture_file() -> Result<PathBuf> {
    let dir = captures_dir()?;
    let (_, path) = create_private_file(&dir, "capture", "jsonl")?;
    Ok(path)
}

/// Writes `bytes` to a new private file in [`blobs_dir`].
pub fn save_blob(prefix: &str, ext: &str, bytes: &[u8]) -> Result<PathBuf> {
    use std::io::Write;
    let dir = blobs_dir()?;
    let (mut f, path) = create_private_file(&dir, prefix, ext)?;
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .map_err(|source| PrivateFileError::Write {
            path: path.clone(),
            source,
        })?;
    Ok(path)
}

/// 64 random bits as hex, from the system's random source.
fn random_hex() -> Result<String> {
    use ring::rand::SecureRandom;
    let mut buf = [0u8; 8];
    ring::rand::SystemRandom::new()
        .fill(&mut buf)
        .map_err(|_| PrivateFileError::Random(io::Error::other("the system's random source failed")))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// Opens a file for reading only if it is a regular file: a FIFO (which
/// would block until a writer appears), a device (`/dev/zero`, endless) or a
/// directory is refused with a clear error, without blocking. The error does
/// not name the path: the caller says what it was opening.
pub fn open_regular(path: &Path) -> Result<File> {
    let file = without_waiting(OpenOptions::new().read(true)).open(path)?;
    let meta = file.metadata()?;
    let ft = meta.file_type();
    if !ft.is_file() {
        return Err(PrivateFileError::NotRegular(super::output_file::what_it_is(&ft)));
    }
    make_blocking(&file);
    Ok(file)
}

#[cfg(test)]
// About modes, FIFOs and links: Unix's.
#[cfg(unix)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn creates_a_private_dir_and_tightens_an_open_one() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("mine");
        ensure_private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        ensure_private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
    }

    #[test]
    fn a_symlink_or_a_file_at_the_path_is_refused_and_not_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("attacker");
        std::fs::create_dir(&target).unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o777)).unwrap();
        let link = tmp.path().join("mcpscope");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let e = crate::text::error_chain(&ensure_private_dir(&link).unwrap_err());
        assert!(e.contains("symbolic link"), "{e}");
        // The link's target was left alone.
        assert_eq!(mode(&target), 0o777);
        let file = tmp.path().join("plain");
        std::fs::write(&file, "x").unwrap();
        let e = crate::text::error_chain(&ensure_private_dir(&file).unwrap_err());
        assert!(e.contains("not a directory"), "{e}");
    }

    #[test]
    fn a_dir_of_another_user_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        // SAFETY: geteuid cannot fail.
        let dir = if unsafe { libc::geteuid() } == 0 {
            // As root, make one that belongs to nobody.
            let d = tmp.path().join("theirs");
            std::fs::create_dir(&d).unwrap();
            std::os::unix::fs::chown(&d, Some(65534), Some(65534)).unwrap();
            d
        } else {
            PathBuf::from("/")
        };
        let e = crate::text::error_chain(&ensure_private_dir(&dir).unwrap_err());
        assert!(e.contains("belongs to user id"), "{e}");
    }

    #[test]
    fn private_files_are_0600_exclusive_and_unpredictable() {
        let tmp = tempfile::tempdir().unwrap();
        let (_, a) = create_private_file(tmp.path(), "capture", "jsonl").unwrap();
        let (_, b) = create_private_file(tmp.path(), "capture", "jsonl").unwrap();
        assert_ne!(a, b);
        assert_eq!(mode(&a), 0o600);
        let name = a.file_name().unwrap().to_string_lossy().into_owned();
        let random = name.trim_end_matches(".jsonl").rsplit('-').next().unwrap();
        assert_eq!(random.len(), 16, "{name}");
        assert!(random.bytes().all(|b| b.is_ascii_hexdigit()), "{name}");
    }

    #[test]
    fn only_regular_files_are_opened() {
        let tmp = tempfile::tempdir().unwrap();
        let fifo = tmp.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid C string path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Would block forever without O_NONBLOCK: there is no writer.
        let e = open_regular(&fifo).unwrap_err().to_string();
        assert!(e.contains("FIFO"), "{e}");
        let e = open_regular(Path::new("/dev/zero")).unwrap_err().to_string();
        assert!(e.contains("character device"), "{e}");
        let e = open_regular(tmp.path()).unwrap_err().to_string();
        assert!(e.contains("directory"), "{e}");
        let file = tmp.path().join("f");
        std::fs::write(&file, "x").unwrap();
        assert!(open_regular(&file).is_ok());
    }
}
