//! The one rule for every file mcpscope writes where the user says
//! (`export -o`, `import -o`, `verify --junit`, every `--capture`).
//!
//! The name means what the user meant by it, never something to clear away:
//! - nothing there, or a regular file: replaced whole (a private `0600`
//!   temporary file beside it, renamed over it: readers see the old or the
//!   new content) or, for a capture, appended to (but not to a file another
//!   user put in a sticky directory others can write to: they could read it);
//! - a device (`/dev/null`, `/dev/full`, a copy made with mknod) or a FIFO:
//!   written into, never replaced, and its errors (ENOSPC) are the command's.
//!   A FIFO needs its reader first: mcpscope does not wait for one, and a
//!   capture, opened again for every session, cannot be one;
//! - a symbolic link: followed, hop by hop, only when each link is the
//!   user's own or belongs to the owner of the directory it is in (root's
//!   `/dev/stdout`, the process's `/proc/self/fd/1`). In a sticky,
//!   world-writable directory such as /tmp another user can plant one to
//!   make mcpscope write over a file of the victim's; such a link is
//!   refused. What a link leads to is written in place, the link kept;
//! - anything else (a directory, a socket) is refused.

use crate::platform::fs::{self as platform_fs, FileKind, User};
use crate::record::state_dir;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Why an output file was refused or could not be written. Every variant
/// names the path.
#[derive(Debug, thiserror::Error)]
pub enum OutputFileError {
    #[error("{} is a symbolic link owned by another user (uid {owner}): refusing to follow it", .link.display())]
    ForeignLink { link: PathBuf, owner: User },
    #[error("{} is {what}: refusing to write there (give {wanted})", .path.display())]
    Refused {
        path: PathBuf,
        what: &'static str,
        wanted: &'static str,
    },
    #[error(
        "{} belongs to another user (uid {owner}) in a shared directory: refusing to append a capture to it (they could read it)",
        .path.display()
    )]
    ForeignFile { path: PathBuf, owner: User },
    #[error("{} is a FIFO with no reader: start its reader first (mcpscope does not wait for one)", .0.display())]
    NoReader(PathBuf),
    #[error("{} changed while it was being opened (it is {now} now): refusing it", .path.display())]
    Changed { path: PathBuf, now: &'static str },
    #[error("cannot open {}", .path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot write {}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl OutputFileError {
    /// The operating system's error underneath, if there is one.
    pub fn io_error(&self) -> Option<&io::Error> {
        match self {
            OutputFileError::Open { source, .. } | OutputFileError::Write { source, .. } => Some(source),
            _ => None,
        }
    }

    /// As an [`io::Error`] for a caller that names the path itself: the
    /// system's error as it is, a refusal carried whole.
    pub fn into_io(self) -> io::Error {
        match self {
            OutputFileError::Open { source, .. } | OutputFileError::Write { source, .. } => source,
            refused => io::Error::new(refused.kind(), refused),
        }
    }

    /// The closest [`io::ErrorKind`], for callers that carry an [`io::Error`].
    pub fn kind(&self) -> io::ErrorKind {
        match self {
            OutputFileError::Open { source, .. } | OutputFileError::Write { source, .. } => source.kind(),
            OutputFileError::ForeignLink { .. } | OutputFileError::ForeignFile { .. } => {
                io::ErrorKind::PermissionDenied
            }
            _ => io::ErrorKind::InvalidInput,
        }
    }
}

type Result<T, E = OutputFileError> = std::result::Result<T, E>;

/// How an output is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// A report or an export: a regular file is replaced whole.
    Replace,
    /// A capture: appended to, each session after its own header, and
    /// opened again for every session (so never a FIFO).
    Append,
}

/// What the name leads to, once links (checked) are followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Found {
    Nothing,
    Regular,
    Device,
    Fifo,
}

#[derive(Clone, Copy, Debug)]
struct Target {
    found: Found,
    /// Reached through a symbolic link (the user's own, or its directory owner's).
    via_link: bool,
}

const WANTED_REPLACE: &str = "a regular file, a device or a FIFO";
const WANTED_APPEND: &str = "a regular file or a device: a capture is opened again for every session";

fn wanted(policy: Policy) -> &'static str {
    match policy {
        Policy::Replace => WANTED_REPLACE,
        Policy::Append => WANTED_APPEND,
    }
}

fn open_error(path: &Path) -> impl FnOnce(io::Error) -> OutputFileError + '_ {
    move |source| OutputFileError::Open {
        path: path.to_owned(),
        source,
    }
}

/// Checks that `path` may be written under `policy`, without creating,
/// opening or changing anything: so a command can refuse before its work
/// instead of after it.
pub fn check(path: &Path, policy: Policy) -> Result<()> {
    inspect(path, policy).map(drop)
}

fn inspect(path: &Path, policy: Policy) -> Result<Target> {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(Target {
                found: Found::Nothing,
                via_link: false,
            });
        }
        Err(e) => return Err(open_error(path)(e)),
    };
    if !meta.file_type().is_symlink() {
        let target = Target {
            found: found(path, &meta, policy)?,
            via_link: false,
        };
        refuse_planted_file(path, &meta, target, policy)?;
        return Ok(target);
    }
    check_links(path)?;
    let found = match fs::metadata(path) {
        Ok(m) => found(path, &m, policy)?,
        // A link to a name not taken yet: opening it creates that name.
        Err(e) if e.kind() == io::ErrorKind::NotFound => Found::Nothing,
        Err(e) => return Err(open_error(path)(e)),
    };
    Ok(Target { found, via_link: true })
}

/// What a path is, in words, for a refusal ("a FIFO (named pipe)").
pub(crate) fn what_it_is(ft: &fs::FileType) -> &'static str {
    match FileKind::of(ft) {
        FileKind::Regular => "a regular file",
        FileKind::Directory => "a directory",
        FileKind::Fifo => "a FIFO (named pipe)",
        FileKind::CharacterDevice => "a character device",
        FileKind::BlockDevice => "a block device",
        FileKind::Socket => "a socket",
        FileKind::SymbolicLink => "a symbolic link",
        FileKind::Other => "neither a file, a device nor a FIFO",
    }
}

fn is_device(ft: &fs::FileType) -> bool {
    matches!(FileKind::of(ft), FileKind::CharacterDevice | FileKind::BlockDevice)
}

fn found(path: &Path, meta: &fs::Metadata, policy: Policy) -> Result<Found> {
    let ft = meta.file_type();
    let refused = || OutputFileError::Refused {
        path: path.to_owned(),
        what: what_it_is(&ft),
        wanted: wanted(policy),
    };
    match FileKind::of(&ft) {
        FileKind::Regular => Ok(Found::Regular),
        FileKind::CharacterDevice | FileKind::BlockDevice => Ok(Found::Device),
        FileKind::Fifo if policy == Policy::Replace => Ok(Found::Fifo),
        _ => Err(refused()),
    }
}

/// The directory a name is in.
fn dir_of(at: &Path) -> PathBuf {
    match at.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    }
}

/// Whether a name owned by `owner` may have been put at `at` by someone
/// other than the user or the owner of its directory.
fn foreign(at: &Path, owner: &User) -> bool {
    *owner != User::current() && Some(owner) != fs::metadata(dir_of(at)).map(|m| User::owner_of(&m)).ok().as_ref()
}

/// A capture is not appended to a file another user put in a sticky
/// directory others can write to (they would read it): the kernel's
/// `protected_regular` rule, kept whether or not it is switched on.
fn refuse_planted_file(path: &Path, meta: &fs::Metadata, target: Target, policy: Policy) -> Result<()> {
    if policy != Policy::Append || target.via_link || !meta.file_type().is_file() {
        return Ok(());
    }
    let shared = fs::metadata(dir_of(path))
        .map(|d| platform_fs::others_may_plant_names_in(&d))
        .unwrap_or(false);
    let owner = User::owner_of(meta);
    if shared && foreign(path, &owner) {
        return Err(OutputFileError::ForeignFile {
            path: path.to_owned(),
            owner,
        });
    }
    Ok(())
}

/// Follows the links at `path`, one hop at a time, refusing one that is
/// neither the user's nor its directory owner's. A hop that cannot be
/// looked at by name (a name not taken yet, `/proc/self/fd/1`'s `pipe:[N]`)
/// ends the walk: the kernel resolves it when the file is opened.
fn check_links(path: &Path) -> Result<()> {
    let mut at = path.to_owned();
    // The kernel's own limit on links in one lookup.
    for _ in 0..40 {
        let Ok(meta) = fs::symlink_metadata(&at) else {
            return Ok(());
        };
        if !meta.file_type().is_symlink() {
            return Ok(());
        }
        let owner = User::owner_of(&meta);
        if foreign(&at, &owner) {
            return Err(OutputFileError::ForeignLink { link: at, owner });
        }
        let next = fs::read_link(&at).map_err(open_error(path))?;
        at = if next.is_absolute() {
            next
        } else {
            dir_of(&at).join(next)
        };
    }
    Err(open_error(path)(platform_fs::too_many_links()))
}

/// Opens what `target` found at `path` for writing in place, and checks
/// that it is still that once open (a name swapped meanwhile is refused).
/// Never blocks: a FIFO without a reader is an error.
fn open_in_place(path: &Path, target: Target, policy: Policy) -> Result<File> {
    let mut options = OpenOptions::new();
    options.write(true);
    if target.via_link {
        platform_fs::owner_only_when_created(platform_fs::without_waiting(&mut options));
    } else {
        platform_fs::this_file_only(&mut options);
    }
    let regular = matches!(target.found, Found::Nothing | Found::Regular);
    if regular {
        options.create(true);
        match policy {
            Policy::Append => options.append(true),
            Policy::Replace => options.truncate(true),
        };
    } else if policy == Policy::Append {
        options.append(true);
    }
    let file = options.open(path).map_err(|e| {
        if target.found == Found::Fifo && platform_fs::is_fifo_without_reader(&e) {
            OutputFileError::NoReader(path.to_owned())
        } else if !target.via_link && platform_fs::is_refused_link(&e) {
            OutputFileError::Changed {
                path: path.to_owned(),
                now: "a symbolic link",
            }
        } else {
            open_error(path)(e)
        }
    })?;
    let meta = file.metadata().map_err(open_error(path))?;
    let ft = meta.file_type();
    let same = if regular {
        ft.is_file()
    } else if target.found == Found::Device {
        is_device(&ft)
    } else {
        FileKind::of(&ft) == FileKind::Fifo
    };
    if !same {
        return Err(OutputFileError::Changed {
            path: path.to_owned(),
            now: what_it_is(&ft),
        });
    }
    // Again on what was opened: the name may have been taken meanwhile.
    refuse_planted_file(path, &meta, target, policy)?;
    platform_fs::make_blocking(&file);
    Ok(file)
}

/// Opens a capture at `path` for appending ([`Policy::Append`]): created
/// `0600` when new, an existing file keeping its mode and contents.
pub fn open_append(path: &Path) -> Result<File> {
    let target = inspect(path, Policy::Append)?;
    open_in_place(path, target, Policy::Append)
}

/// An output being written under [`Policy::Replace`]; [`OutputFile::finish`]
/// puts it in place. Dropped unfinished, a regular file's temporary file is
/// removed and the name keeps what it had.
pub struct OutputFile {
    file: File,
    path: PathBuf,
    /// The temporary file renamed over `path` when finished.
    temp: Option<PathBuf>,
    regular: bool,
}

impl OutputFile {
    /// Opens `path` to be replaced whole (a regular file, or nothing there)
    /// or written into (a device, a FIFO, what the user's link leads to).
    pub fn create(path: &Path) -> Result<OutputFile> {
        let target = inspect(path, Policy::Replace)?;
        let regular = matches!(target.found, Found::Nothing | Found::Regular);
        if regular && !target.via_link {
            let (file, temp) = create_temp(path)?;
            return Ok(OutputFile {
                file,
                path: path.to_owned(),
                temp: Some(temp),
                regular,
            });
        }
        Ok(OutputFile {
            file: open_in_place(path, target, Policy::Replace)?,
            path: path.to_owned(),
            temp: None,
            regular,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The error to return for a failed write to this output.
    pub fn write_failed(&self, source: io::Error) -> OutputFileError {
        OutputFileError::Write {
            path: self.path.clone(),
            source,
        }
    }

    /// Makes the output final: a regular file is synced and renamed over
    /// the name (unless something other than a regular file took the name
    /// meantime); a device or a FIFO has had everything already.
    pub fn finish(mut self) -> Result<()> {
        if self.regular {
            self.file.sync_data().map_err(|e| self.write_failed(e))?;
        }
        let Some(temp) = self.temp.take() else {
            return Ok(());
        };
        let done = match fs::symlink_metadata(&self.path) {
            Ok(m) if !m.file_type().is_file() => Err(OutputFileError::Changed {
                path: self.path.clone(),
                now: what_it_is(&m.file_type()),
            }),
            _ => fs::rename(&temp, &self.path).map_err(|e| self.write_failed(e)),
        };
        if done.is_err() {
            let _ = fs::remove_file(&temp);
        }
        done
    }
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        if let Some(temp) = self.temp.take() {
            let _ = fs::remove_file(temp);
        }
    }
}

/// A private temporary file beside `path`, to be renamed over it.
fn create_temp(path: &Path) -> Result<(File, PathBuf)> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for attempt in 0..16 {
        let temp = dir.join(format!(".{name}.{}.{attempt}.tmp", std::process::id()));
        match state_dir::create_private_file(&temp) {
            Ok(f) => return Ok((f, temp)),
            // A stale temporary file from a crashed writer with our pid.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(open_error(path)(e)),
        }
    }
    Err(open_error(path)(io::Error::from(io::ErrorKind::AlreadyExists)))
}

/// Why [`write_with`] did not complete.
#[derive(Debug)]
pub enum WriteWithError<E> {
    /// The output was refused, or could not be opened, written or put in place.
    Output(OutputFileError),
    /// The content could not be made: a regular file is left as it was; what
    /// is written in place (a device, a FIFO, what a link leads to) has what
    /// was written before.
    Content(E),
}

/// Writes `path` under [`Policy::Replace`] with what `write` puts into it,
/// buffered; a regular file is replaced only when `write` returned `Ok`.
pub fn write_with<E>(
    path: &Path,
    write: impl FnOnce(&mut io::BufWriter<OutputFile>) -> Result<(), E>,
) -> Result<(), WriteWithError<E>> {
    let out = OutputFile::create(path).map_err(WriteWithError::Output)?;
    let mut out = io::BufWriter::with_capacity(256 * 1024, out);
    write(&mut out).map_err(WriteWithError::Content)?;
    let out = out.into_inner().map_err(|e| {
        let (e, out) = e.into_parts();
        WriteWithError::Output(out.get_ref().write_failed(e))
    })?;
    out.finish().map_err(WriteWithError::Output)
}

/// [`write_with`] for content already whole.
pub fn write_all(path: &Path, bytes: &[u8]) -> Result<()> {
    write_with(path, |out| out.write_all(bytes)).map_err(|e| match e {
        WriteWithError::Output(e) => e,
        WriteWithError::Content(source) => OutputFileError::Write {
            path: path.to_owned(),
            source,
        },
    })
}

#[cfg(test)]
// About FIFOs, devices, modes and other users' links: Unix's.
#[cfg(unix)]
mod tests {
    use super::*;
    use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};

    fn mkfifo(path: &Path) {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid C string path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    fn only_entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_regular_file_is_replaced_whole_and_private() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("out.json");
        write_all(&p, b"one").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o644)).unwrap();
        write_all(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert_eq!(fs::metadata(&p).unwrap().mode() & 0o777, 0o600);
        assert_eq!(only_entries(t.path()), ["out.json"], "no temporary file left");
    }

    #[test]
    fn content_that_fails_leaves_the_old_file_and_no_temporary() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("out.json");
        fs::write(&p, "old").unwrap();
        let e = write_with(&p, |out| {
            out.write_all(b"half")?;
            Err::<(), io::Error>(io::Error::other("the source failed"))
        });
        assert!(matches!(e, Err(WriteWithError::Content(_))));
        assert_eq!(fs::read(&p).unwrap(), b"old");
        assert_eq!(only_entries(t.path()), ["out.json"]);
    }

    #[test]
    fn devices_are_written_into_and_kept() {
        write_all(Path::new("/dev/null"), b"gone").unwrap();
        assert!(fs::metadata("/dev/null").unwrap().file_type().is_char_device());
        let e = write_all(Path::new("/dev/full"), b"x").unwrap_err();
        assert_eq!(
            e.io_error().and_then(io::Error::raw_os_error),
            Some(libc::ENOSPC),
            "{e}"
        );
        // A capture appends to a device the same way.
        open_append(Path::new("/dev/null")).unwrap();
    }

    #[test]
    fn a_fifo_with_a_reader_is_written_into_and_one_without_is_refused_at_once() {
        let t = tempfile::tempdir().unwrap();
        let fifo = t.path().join("fifo");
        mkfifo(&fifo);
        let e = write_all(&fifo, b"x").unwrap_err();
        assert!(matches!(e, OutputFileError::NoReader(_)), "{e}");
        let mut reader = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        write_all(&fifo, b"through the pipe").unwrap();
        let mut got = Vec::new();
        io::Read::read_to_end(&mut reader, &mut got).unwrap();
        assert_eq!(got, b"through the pipe");
        assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
        // A capture is opened again for every session: never a FIFO.
        let e = open_append(&fifo).unwrap_err().to_string();
        assert!(e.contains("FIFO") && e.contains("capture"), "{e}");
    }

    #[test]
    fn directories_and_sockets_are_refused_and_left_alone() {
        let t = tempfile::tempdir().unwrap();
        let e = write_all(t.path(), b"x").unwrap_err().to_string();
        assert!(e.contains("a directory"), "{e}");
        let sock = t.path().join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let e = write_all(&sock, b"x").unwrap_err().to_string();
        assert!(e.contains("a socket"), "{e}");
        assert!(fs::symlink_metadata(&sock).unwrap().file_type().is_socket());
        assert!(check(&sock, Policy::Append).is_err());
    }

    #[test]
    fn an_own_link_is_written_through_and_kept() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().join("real.xml");
        fs::write(&real, "old, and longer than the new").unwrap();
        let link = t.path().join("link.xml");
        std::os::unix::fs::symlink("real.xml", &link).unwrap();
        write_all(&link, b"new").unwrap();
        assert_eq!(fs::read(&real).unwrap(), b"new");
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        // A link to a name not taken yet creates it.
        let fresh = t.path().join("fresh.xml");
        std::os::unix::fs::symlink(t.path().join("made.xml"), &fresh).unwrap();
        write_all(&fresh, b"made").unwrap();
        assert_eq!(fs::read(t.path().join("made.xml")).unwrap(), b"made");
    }

    #[test]
    fn a_link_of_another_user_is_refused_at_any_hop() {
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: giving a link to another user needs root");
            return;
        }
        let t = tempfile::tempdir().unwrap();
        fs::set_permissions(t.path(), fs::Permissions::from_mode(0o1777)).unwrap();
        let victim = t.path().join("victim");
        fs::write(&victim, "precious").unwrap();
        let planted = t.path().join("planted");
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        std::os::unix::fs::lchown(&planted, Some(65534), Some(65534)).unwrap();
        let mine = t.path().join("mine");
        std::os::unix::fs::symlink(&planted, &mine).unwrap();
        for path in [&planted, &mine] {
            let e = write_all(path, b"overwritten").unwrap_err();
            assert!(
                matches!(&e, OutputFileError::ForeignLink { link, owner } if link == &planted && owner.to_string() == "65534"),
                "{e}"
            );
            assert!(check(path, Policy::Append).is_err());
            assert!(open_append(path).is_err());
        }
        assert_eq!(fs::read(&victim).unwrap(), b"precious");
        assert!(fs::symlink_metadata(&planted).unwrap().file_type().is_symlink());
    }

    #[test]
    fn a_capture_is_not_appended_to_a_file_planted_in_a_shared_directory() {
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: giving a file to another user needs root");
            return;
        }
        let t = tempfile::tempdir().unwrap();
        fs::set_permissions(t.path(), fs::Permissions::from_mode(0o1777)).unwrap();
        let planted = t.path().join("capture.jsonl");
        fs::write(&planted, "").unwrap();
        fs::set_permissions(&planted, fs::Permissions::from_mode(0o666)).unwrap();
        std::os::unix::fs::chown(&planted, Some(65534), Some(65534)).unwrap();
        let e = open_append(&planted).unwrap_err();
        assert!(
            matches!(&e, OutputFileError::ForeignFile { owner, .. } if owner.to_string() == "65534"),
            "{e}"
        );
        assert_eq!(fs::metadata(&planted).unwrap().len(), 0);
        // A report replaces it instead, never writing into their file.
        write_all(&planted, b"mine").unwrap();
        assert_eq!(fs::metadata(&planted).unwrap().uid(), 0);
        // Not sticky: the directory's writers are trusted with it.
        fs::set_permissions(t.path(), fs::Permissions::from_mode(0o777)).unwrap();
        std::os::unix::fs::chown(&planted, Some(65534), Some(65534)).unwrap();
        open_append(&planted).unwrap();
    }

    #[test]
    fn a_capture_is_appended_to_and_created_private() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("c.jsonl");
        open_append(&p).unwrap().write_all(b"one\n").unwrap();
        open_append(&p).unwrap().write_all(b"two\n").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"one\ntwo\n");
        assert_eq!(fs::metadata(&p).unwrap().mode() & 0o777, 0o600);
    }
}
