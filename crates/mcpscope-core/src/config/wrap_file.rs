//! `wrap` and `unwrap` on a file: read it, edit it (see [`super::wrap`]),
//! back it up, write it back in one step, and keep the ledger of remote
//! servers pointed at a local reverse proxy.
//!
//! The way back is stored before the config changes, or the config is not
//! changed: a wrapped remote's original URL exists only in the ledger, so the
//! ledger is written (and synced) first, and a ledger that cannot be written
//! leaves the config as it was. Every write also leaves a backup of the
//! config as it was just before (`CONFIG.mcpscope-backup`, then `.1`, `.2`…:
//! an existing backup may be the only copy of an original, so none is ever
//! replaced). Backups are owner-only: configs hold API keys.
//!
//! Runs on one config are serialised by an advisory lock on a file beside it
//! (`CONFIG.mcpscope-lock`), and runs touching the ledger by a lock beside the
//! ledger, always taken in that order; each run reads the config and the
//! ledger only once it holds them, so two runs never both edit the same old
//! text. The config and the ledger are replaced atomically (a temporary file
//! in the same directory, synced, renamed over). The new config keeps the
//! old one's owner, group and mode (root wrapping a user's config must not
//! leave it root's); a config that is a symbolic link (dotfile managers) has
//! its target rewritten, the link kept.

use crate::config::server_config::ConfigError;
use crate::config::wrap::{self, Change, RemoteWrap, Remotes, Selection, WrapError};
use crate::record::state_dir;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

pub const BACKUP_SUFFIX: &str = ".mcpscope-backup";
/// The lock file beside a config (`CONFIG.mcpscope-lock`). It stays after a
/// run: removing a lock file others may be waiting on would let two runs in.
pub const LOCK_SUFFIX: &str = ".mcpscope-lock";
const LEDGER: &str = "wrapped-remotes.json";
const LEDGER_LOCK: &str = "wrapped-remotes.json.lock";

/// What a file-level wrap or unwrap did.
#[derive(Debug)]
pub struct FileReport {
    pub changes: Vec<Change>,
    /// Where the previous content was saved, when the file was written.
    pub backup: Option<PathBuf>,
    /// False when nothing needed changing (or `dry_run`).
    pub written: bool,
    /// What went wrong after the config was written (it stays written):
    /// unwrap could not drop the restored servers from the ledger.
    pub warnings: Vec<String>,
}

impl FileReport {
    fn unwritten(changes: Vec<Change>) -> Self {
        FileReport {
            changes,
            backup: None,
            written: false,
            warnings: Vec::new(),
        }
    }
}

/// The remote servers wrapped so far, kept in the state directory.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Ledger {
    #[serde(default)]
    remotes: Vec<RemoteWrap>,
    #[serde(skip)]
    path: Option<PathBuf>,
    /// `remotes` by local URL: wrap and unwrap ask once per remote server.
    #[serde(skip)]
    by_local_url: HashMap<String, usize>,
    /// The ports of the recorded remotes and those handed out since the
    /// ledger was read, so one run never gives two servers the same port.
    #[serde(skip)]
    ports: HashSet<u16>,
}

impl Ledger {
    /// Reads the ledger from the state root (an empty one if there is none yet).
    pub fn load(state_root: &Path) -> io::Result<Self> {
        let path = state_root.join(LEDGER);
        let mut ledger = Self::read(&path)?;
        ledger.path = Some(path);
        Ok(ledger)
    }

    fn read(path: &Path) -> io::Result<Self> {
        let mut ledger = match state_dir::open_no_follow(path) {
            Ok(f) => serde_json::from_reader::<_, Ledger>(io::BufReader::new(f))
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {e}", path.display())))?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ledger::default(),
            Err(e) => return Err(e),
        };
        ledger.reindex();
        Ok(ledger)
    }

    /// Reads the file again: another run may have changed it since `load`.
    fn reload(&mut self) -> io::Result<()> {
        if let Some(path) = self.path.take() {
            let fresh = Self::read(&path);
            self.path = Some(path);
            let fresh = fresh?;
            self.remotes = fresh.remotes;
            self.reindex();
        }
        Ok(())
    }

    fn reindex(&mut self) {
        self.by_local_url.clear();
        self.ports.clear();
        for (i, r) in self.remotes.iter().enumerate() {
            // The first record wins, as a search of the list would find it.
            self.by_local_url.entry(r.local_url.clone()).or_insert(i);
            if let Some(port) = r.listen.rsplit(':').next().and_then(|p| p.parse().ok()) {
                self.ports.insert(port);
            }
        }
    }

    /// Every remote recorded.
    pub fn remotes(&self) -> &[RemoteWrap] {
        &self.remotes
    }

    /// Where the ledger is kept (None for one that was never loaded from a file).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    fn add(&mut self, added: &[RemoteWrap]) {
        self.remotes.extend_from_slice(added);
        self.reindex();
    }

    fn drop_local_urls(&mut self, local_urls: &HashSet<&str>) {
        self.remotes.retain(|r| !local_urls.contains(r.local_url.as_str()));
        self.reindex();
    }

    /// Replaces the file atomically and syncs it and its directory: when this
    /// returns, the record survives a crash.
    fn save(&self) -> io::Result<()> {
        let Some(path) = &self.path else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "this ledger was not loaded from a file, so it cannot be stored",
            ));
        };
        let dir = parent_dir(path);
        state_dir::ensure_private_dir(dir)?;
        let mut bytes = serde_json::to_vec_pretty(self).map_err(io::Error::other)?;
        bytes.push(b'\n');
        state_dir::write_private_atomic(path, &bytes)?;
        sync_dir(dir)
    }

    /// The lock beside the ledger (creating the state directory if needed).
    fn lock(&self) -> io::Result<FileLock> {
        let Some(path) = &self.path else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "this ledger was not loaded from a file",
            ));
        };
        let dir = parent_dir(path);
        state_dir::ensure_private_dir(dir)?;
        lock_file(&dir.join(LEDGER_LOCK), None)
    }

    /// The remotes wrapped in `config` (as the path was given to wrap).
    pub fn for_config(&self, config: &Path) -> Vec<&RemoteWrap> {
        let want = canonical(config);
        self.remotes
            .iter()
            .filter(|r| canonical(Path::new(&r.config)) == want)
            .collect()
    }

    fn describe(&self) -> String {
        self.path
            .as_ref()
            .map_or_else(|| "the ledger".to_owned(), |p| p.display().to_string())
    }
}

fn canonical(p: &Path) -> PathBuf {
    fs::canonicalize(p).unwrap_or_else(|_| std::path::absolute(p).unwrap_or_else(|_| p.to_owned()))
}

fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

impl Remotes for Ledger {
    fn allocate_port(&mut self) -> io::Result<u16> {
        // A port the OS says is free now and no other wrapped remote uses.
        let any = || -> io::Result<u16> { Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port()) };
        for _ in 0..4 {
            let port = any()?;
            if self.ports.insert(port) {
                return Ok(port);
            }
        }
        // Linux hands out only odd ports for bind(0), so with thousands of
        // remotes in one file random picks keep landing on taken ones (each
        // try a socket): walk on from one instead, to the first port that is
        // free and not ours.
        let start = any()?;
        let walk = (start..=u16::MAX).chain(1024..start);
        for port in walk {
            if !self.ports.contains(&port) && std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
                self.ports.insert(port);
                return Ok(port);
            }
        }
        Err(io::Error::new(io::ErrorKind::AddrInUse, "no free port found"))
    }

    fn lookup(&self, local_url: &str) -> Option<RemoteWrap> {
        self.by_local_url.get(local_url).map(|&i| self.remotes[i].clone())
    }
}

/// An exclusive advisory lock (flock), held until dropped: closing the file
/// releases it, also when the process dies.
#[derive(Debug)]
struct FileLock {
    _file: File,
}

/// Locks `path`, creating it (0600) if needed and waiting for whoever holds
/// it. `owner`: the config the lock belongs to, whose owner a lock file we
/// create as root should have (its user may run wrap later).
fn lock_file(path: &Path, owner: Option<&fs::Metadata>) -> io::Result<FileLock> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(0o600)
        // O_NONBLOCK: a FIFO planted here must not block the open.
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| with_path(e, "cannot open the lock file", path))?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("the lock file {} is not a regular file", path.display()),
        ));
    }
    // Only a file of ours with one name can be given away: a hard link
    // planted here could name any file.
    if let Some(owner) = owner
        && meta.uid() == effective_uid()
        && meta.nlink() == 1
    {
        let _ = set_owner(&file, owner.uid(), owner.gid());
    }
    loop {
        // SAFETY: flock on a descriptor this function owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(FileLock { _file: file });
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(with_path(e, "cannot lock", path));
        }
    }
}

/// The locks of one run, taken config first, then ledger, in every run, so
/// two runs never wait on each other crosswise.
struct Locks {
    _config: FileLock,
    /// Why the ledger could not be locked: only fatal when the run must
    /// change the ledger.
    ledger: Result<FileLock, String>,
}

/// Locks the config at `path` and the ledger, then reads the ledger again.
/// Returns the file to write (a link's target).
fn begin(path: &Path, ledger: &mut Ledger) -> Result<(PathBuf, Locks), WrapError> {
    let target = fs::canonicalize(path).map_err(|e| unreadable(path, e))?;
    let meta = fs::metadata(&target).map_err(|e| unreadable(path, e))?;
    if !meta.is_file() {
        // The read says what it is (a FIFO, a directory…), without blocking.
        read(path)?;
        return Err(unreadable(path, io::Error::other("not a regular file")));
    }
    let mut lock_name = target.as_os_str().to_owned();
    lock_name.push(LOCK_SUFFIX);
    let config_lock = lock_file(Path::new(&lock_name), Some(&meta))
        .map_err(|e| WrapError::Io(format!("cannot lock {} against other runs: {e}", path.display())))?;
    let ledger_lock = ledger.lock().map_err(|e| e.to_string());
    ledger
        .reload()
        .map_err(|e| WrapError::Ledger(format!("cannot read the ledger of wrapped remote servers: {e}")))?;
    Ok((
        target,
        Locks {
            _config: config_lock,
            ledger: ledger_lock,
        },
    ))
}

/// Wraps the chosen servers of the config at `path`.
pub fn wrap_file(
    path: &Path,
    mcpscope: &str,
    selection: &Selection,
    ledger: &mut Ledger,
    dry_run: bool,
) -> Result<FileReport, WrapError> {
    let edit_of = |text: &str, ledger: &mut Ledger| {
        let config_name = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
        let mut edit = wrap::wrap_text(path, text, mcpscope, selection, ledger)?;
        for c in &mut edit.changes {
            if let Change::WrappedRemote { remote, .. } = c {
                remote.config = config_name.display().to_string();
            }
        }
        Ok::<_, WrapError>(edit)
    };
    if dry_run {
        let text = read(path)?;
        return Ok(FileReport::unwritten(edit_of(&text, ledger)?.changes));
    }
    let (target, locks) = begin(path, ledger)?;
    let text = read(path)?;
    let edit = edit_of(&text, ledger)?;
    if !edit.changed(&text) {
        return Ok(FileReport::unwritten(edit.changes));
    }
    let added: Vec<RemoteWrap> = edit
        .changes
        .iter()
        .filter_map(|c| match c {
            Change::WrappedRemote { remote, .. } => Some(remote.clone()),
            _ => None,
        })
        .collect();
    if !added.is_empty() {
        let stored = match &locks.ledger {
            Err(e) => Err(e.clone()),
            Ok(_) => {
                ledger.add(&added);
                ledger.save().map_err(|e| e.to_string())
            }
        };
        if let Err(e) = stored {
            forget(ledger, &added);
            return Err(WrapError::Ledger(format!(
                "cannot store the remote servers' original URLs in {} ({e}), and without them unwrap could not restore them",
                ledger.describe()
            )));
        }
    }
    match commit(&target, &text, &edit.text) {
        Ok(backup) => Ok(FileReport {
            changes: edit.changes,
            backup: Some(backup),
            written: true,
            warnings: Vec::new(),
        }),
        Err(e) => {
            if !added.is_empty() {
                // The config kept its URLs; their records would only hold ports.
                forget(ledger, &added);
                let _ = ledger.save();
            }
            Err(e)
        }
    }
}

fn forget(ledger: &mut Ledger, added: &[RemoteWrap]) {
    ledger.drop_local_urls(&added.iter().map(|r| r.local_url.as_str()).collect());
}

/// Restores the chosen wrapped servers of the config at `path`.
pub fn unwrap_file(
    path: &Path,
    selection: &Selection,
    ledger: &mut Ledger,
    dry_run: bool,
) -> Result<FileReport, WrapError> {
    if dry_run {
        let text = read(path)?;
        return Ok(FileReport::unwritten(
            wrap::unwrap_text(path, &text, selection, ledger)?.changes,
        ));
    }
    let (target, locks) = begin(path, ledger)?;
    let text = read(path)?;
    let edit = wrap::unwrap_text(path, &text, selection, ledger)?;
    if !edit.changed(&text) {
        return Ok(FileReport::unwritten(edit.changes));
    }
    let backup = commit(&target, &text, &edit.text)?;
    let released: HashSet<&str> = edit
        .changes
        .iter()
        .filter_map(|c| match c {
            Change::UnwrappedRemote { local_url, .. } => Some(local_url.as_str()),
            _ => None,
        })
        .collect();
    // Restoring never waits on the ledger: a record left behind only keeps a
    // port out of use, while a config left wrapped keeps the client away
    // from its server.
    let mut warnings = Vec::new();
    if !released.is_empty() {
        let updated = match &locks.ledger {
            Err(e) => Err(e.clone()),
            Ok(_) => {
                ledger.drop_local_urls(&released);
                ledger.save().map_err(|e| e.to_string())
            }
        };
        if let Err(e) = updated {
            warnings.push(format!(
                "the config was restored, but {} still lists its remote servers: {e}",
                ledger.describe()
            ));
        }
    }
    Ok(FileReport {
        changes: edit.changes,
        backup: Some(backup),
        written: true,
        warnings,
    })
}

fn unreadable(path: &Path, source: io::Error) -> WrapError {
    WrapError::Config(ConfigError::Unreadable {
        path: path.to_owned(),
        source,
    })
}

fn read(path: &Path) -> Result<String, WrapError> {
    read_regular(path).map_err(|source| unreadable(path, source))
}

/// Writes `new_text` over `target` after backing up `original`. The new file
/// is made (with the old one's owner and mode) before the backup, so a
/// config that cannot keep its owner gets neither.
fn commit(target: &Path, original: &str, new_text: &str) -> Result<PathBuf, WrapError> {
    let meta = fs::metadata(target).map_err(|e| WrapError::Io(format!("cannot inspect {}: {e}", target.display())))?;
    let dir = parent_dir(target);
    let tmp = Replacement::prepare(target, new_text.as_bytes(), &meta)
        .map_err(|e| WrapError::Io(format!("cannot write {}: {e}", target.display())))?;
    let backup = write_backup(target, original.as_bytes(), &meta)
        .map_err(|e| WrapError::Io(format!("cannot write the backup of {}: {e}", target.display())))?;
    tmp.install(target)
        .map_err(|e| WrapError::Io(format!("cannot write {}: {e}", target.display())))?;
    // The rename is what makes the new text the config: make it durable. The
    // content is already synced, so a failure here loses no data.
    let _ = sync_dir(dir);
    Ok(backup)
}

/// The next free backup name: `CONFIG.mcpscope-backup`, then `.1`, `.2`…
pub fn next_backup_path(target: &Path) -> PathBuf {
    (0..u32::MAX)
        .map(|n| backup_name(target, n))
        .find(|p| fs::symlink_metadata(p).is_err())
        .unwrap_or_else(|| backup_name(target, 0))
}

fn backup_name(target: &Path, n: u32) -> PathBuf {
    let mut name: OsString = target.as_os_str().to_owned();
    name.push(BACKUP_SUFFIX);
    if n > 0 {
        name.push(format!(".{n}"));
    }
    PathBuf::from(name)
}

/// Saves `bytes` under the first backup name not taken (created exclusively,
/// so nothing there is ever replaced or followed), owner-only, owned like the
/// config, synced.
fn write_backup(target: &Path, bytes: &[u8], config: &fs::Metadata) -> io::Result<PathBuf> {
    for n in 0..u32::MAX {
        let path = backup_name(target, n);
        let mut f = match state_dir::create_private_file(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        };
        let written = set_owner(&f, config.uid(), config.gid())
            .and_then(|_| f.write_all(bytes))
            .and_then(|_| f.sync_all());
        if let Err(e) = written {
            let _ = fs::remove_file(&path);
            return Err(with_path(e, "cannot write", &path));
        }
        return Ok(path);
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "every backup name is taken",
    ))
}

/// The new content in a temporary file beside the target, removed unless installed.
struct Replacement {
    path: PathBuf,
    installed: bool,
}

impl Replacement {
    fn prepare(target: &Path, bytes: &[u8], like: &fs::Metadata) -> io::Result<Self> {
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let path = parent_dir(target).join(format!(".{name}.mcpscope-{}.tmp", std::process::id()));
        // A stale one from a crashed run with our pid (we hold the config's lock).
        let _ = fs::remove_file(&path);
        let f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)?;
        let tmp = Replacement { path, installed: false };
        let mut f = f;
        f.write_all(bytes)?;
        // Owner before mode: a change of owner clears set-id bits.
        set_owner(&f, like.uid(), like.gid()).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot give the new file the config's owner (uid {}, gid {}), so the config was not replaced: {e}",
                    like.uid(),
                    like.gid()
                ),
            )
        })?;
        f.set_permissions(fs::Permissions::from_mode(like.mode() & 0o7777))?;
        f.sync_all()?;
        Ok(tmp)
    }

    fn install(mut self, target: &Path) -> io::Result<()> {
        fs::rename(&self.path, target)?;
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

fn effective_uid() -> u32 {
    // SAFETY: geteuid cannot fail and has no preconditions.
    unsafe { libc::geteuid() }
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

fn with_path(e: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}

/// A config's text, refusing what is not a regular file (a FIFO would block
/// the read forever) without blocking.
pub(crate) fn read_regular(path: &Path) -> io::Result<String> {
    use crate::record::private_files::PrivateFileError;
    use std::io::Read;
    let mut f = crate::record::private_files::open_regular(path).map_err(|e| match e {
        PrivateFileError::Open(io) => io,
        other => io::Error::new(io::ErrorKind::InvalidInput, other.to_string()),
    })?;
    let mut text = String::new();
    f.read_to_string(&mut text)?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(text: &str) -> (tempfile::TempDir, PathBuf, Ledger) {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("claude_desktop_config.json");
        fs::write(&path, text).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        let ledger = Ledger::load(&t.path().join("state")).unwrap();
        (t, path, ledger)
    }

    const TEXT: &str =
        "{\n  // mine\n  \"mcpServers\": {\"a\": {\"command\": \"a\"}, \"r\": {\"url\": \"https://h/mcp\"}}\n}\n";

    #[test]
    fn wrap_backs_up_writes_and_unwrap_restores() {
        let (t, path, mut ledger) = setup(TEXT);
        let r = wrap_file(&path, "/bin/mcpscope", &Selection::All, &mut ledger, false).unwrap();
        assert!(r.written);
        let backup = r.backup.unwrap();
        assert_eq!(fs::read_to_string(&backup).unwrap(), TEXT);
        assert_eq!(fs::metadata(&backup).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o644);
        let wrapped = fs::read_to_string(&path).unwrap();
        assert!(wrapped.contains("/bin/mcpscope") && wrapped.contains("// mine"));
        // The ledger survives a reload and knows the remote.
        let mut ledger = Ledger::load(&t.path().join("state")).unwrap();
        assert_eq!(ledger.for_config(&path).len(), 1);
        assert_eq!(ledger.remotes()[0].upstream, "https://h/mcp");

        // Nothing left to do: nothing written.
        let again = wrap_file(&path, "/bin/mcpscope", &Selection::All, &mut ledger, false).unwrap();
        assert!(!again.written);

        let u = unwrap_file(&path, &Selection::All, &mut ledger, false).unwrap();
        assert!(u.written);
        assert_eq!(fs::read_to_string(&path).unwrap(), TEXT);
        assert!(Ledger::load(&t.path().join("state")).unwrap().remotes().is_empty());
    }

    #[test]
    fn a_broken_file_is_left_untouched() {
        let broken = "{\"mcpServers\": {\"a\": {\"command\": \"a\",,}}}";
        let (t, path, mut ledger) = setup(broken);
        let e = wrap_file(&path, "/bin/mcpscope", &Selection::All, &mut ledger, false).unwrap_err();
        assert!(e.to_string().contains("line 1, column"), "{e}");
        assert_eq!(fs::read_to_string(&path).unwrap(), broken);
        let left: Vec<String> = fs::read_dir(t.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(BACKUP_SUFFIX) || n.ends_with(".tmp"))
            .collect();
        assert!(left.is_empty(), "no backup, no temporary file: {left:?}");
    }

    #[test]
    fn a_symlinked_config_keeps_its_link() {
        let (t, real, mut ledger) = setup(TEXT);
        let link = t.path().join("link.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        wrap_file(
            &link,
            "/bin/mcpscope",
            &Selection::Named(vec!["a".into()]),
            &mut ledger,
            false,
        )
        .unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert!(fs::read_to_string(&real).unwrap().contains("/bin/mcpscope"));
    }

    #[test]
    fn dry_run_writes_nothing() {
        let (_t, path, mut ledger) = setup(TEXT);
        let r = wrap_file(&path, "/bin/mcpscope", &Selection::All, &mut ledger, true).unwrap();
        assert!(!r.written && r.backup.is_none());
        assert_eq!(r.changes.len(), 2);
        assert_eq!(fs::read_to_string(&path).unwrap(), TEXT);
    }

    #[test]
    fn backups_are_numbered_and_never_replaced() {
        let (t, path, mut ledger) = setup(TEXT);
        let one = Selection::Named(vec!["a".into()]);
        let first = wrap_file(&path, "/bin/mcpscope", &one, &mut ledger, false).unwrap();
        let after_first = fs::read_to_string(&path).unwrap();
        let second = wrap_file(&path, "/bin/mcpscope", &Selection::All, &mut ledger, false).unwrap();
        let u = unwrap_file(&path, &Selection::All, &mut ledger, false).unwrap();
        let name = |n: &str| t.path().join(format!("claude_desktop_config.json{BACKUP_SUFFIX}{n}"));
        assert_eq!(first.backup.unwrap(), name(""));
        assert_eq!(second.backup.unwrap(), name(".1"));
        assert_eq!(u.backup.unwrap(), name(".2"));
        assert_eq!(fs::read_to_string(name("")).unwrap(), TEXT);
        assert_eq!(fs::read_to_string(name(".1")).unwrap(), after_first);
        assert_eq!(fs::read_to_string(&path).unwrap(), TEXT);
        assert_eq!(next_backup_path(&path), name(".3"));
    }

    #[test]
    fn a_ledger_that_cannot_be_written_leaves_the_config_alone() {
        let (t, path, _) = setup(TEXT);
        // The state root is a link (to a directory of ours): refused for writing.
        let real = t.path().join("real-state");
        fs::create_dir(&real).unwrap();
        std::os::unix::fs::symlink(&real, t.path().join("state")).unwrap();
        let mut ledger = Ledger::load(&t.path().join("state")).unwrap();
        let e = wrap_file(&path, "/bin/mcpscope", &Selection::All, &mut ledger, false).unwrap_err();
        assert!(matches!(e, WrapError::Ledger(_)), "{e:?}");
        assert!(e.to_string().contains("original URLs"), "{e}");
        assert_eq!(fs::read_to_string(&path).unwrap(), TEXT);
        assert!(fs::symlink_metadata(backup_name(&path, 0)).is_err(), "no backup either");
        assert!(ledger.remotes().is_empty());
        // Stdio servers need no ledger: they still wrap.
        let r = wrap_file(
            &path,
            "/bin/mcpscope",
            &Selection::Named(vec!["a".into()]),
            &mut ledger,
            false,
        )
        .unwrap();
        assert!(r.written);
    }

    #[test]
    fn the_ledger_is_read_again_under_its_lock() {
        let (t, path, mut stale) = setup(TEXT);
        let state = t.path().join("state");
        let mut other = Ledger::load(&state).unwrap();
        wrap_file(&path, "/bin/mcpscope", &Selection::All, &mut other, false).unwrap();
        // `stale` was loaded before that run; unwrapping with it still finds the remote.
        let u = unwrap_file(&path, &Selection::All, &mut stale, false).unwrap();
        assert!(
            u.changes.iter().any(|c| matches!(c, Change::UnwrappedRemote { .. })),
            "{:?}",
            u.changes
        );
        assert_eq!(fs::read_to_string(&path).unwrap(), TEXT);
        assert!(Ledger::load(&state).unwrap().remotes().is_empty());
    }

    #[test]
    fn concurrent_runs_on_one_config_lose_no_update() {
        let servers: String = (0..8)
            .map(|i| format!("\"s{i}\": {{\"command\": \"c{i}\"}}"))
            .collect::<Vec<_>>()
            .join(", ");
        let text = format!("{{\"mcpServers\": {{{servers}}}}}");
        let (t, path, _) = setup(&text);
        let state = t.path().join("state");
        std::thread::scope(|s| {
            for i in 0..8 {
                let (path, state) = (&path, &state);
                s.spawn(move || {
                    let mut ledger = Ledger::load(state).unwrap();
                    let one = Selection::Named(vec![format!("s{i}")]);
                    wrap_file(path, "/bin/mcpscope", &one, &mut ledger, false).unwrap();
                });
            }
        });
        let wrapped = fs::read_to_string(&path).unwrap();
        assert_eq!(wrapped.matches("/bin/mcpscope").count(), 8, "{wrapped}");
        let backups = fs::read_dir(t.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains(BACKUP_SUFFIX)
            })
            .count();
        assert_eq!(backups, 8);
    }

    #[test]
    fn the_config_keeps_its_owner_and_mode() {
        let (_t, path, mut ledger) = setup(TEXT);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        let given = unsafe { libc::chown(c.as_ptr(), 1000, 1000) } == 0;
        let r = wrap_file(&path, "/bin/mcpscope", &Selection::All, &mut ledger, false).unwrap();
        let meta = fs::metadata(&path).unwrap();
        assert_eq!(meta.permissions().mode() & 0o7777, 0o640);
        let backup = fs::metadata(r.backup.unwrap()).unwrap();
        assert_eq!(backup.permissions().mode() & 0o777, 0o600);
        if given {
            assert_eq!((meta.uid(), meta.gid()), (1000, 1000));
            assert_eq!((backup.uid(), backup.gid()), (1000, 1000));
        } else {
            eprintln!("owner part skipped: cannot chown (not root)");
        }
    }

    #[test]
    fn one_run_never_hands_out_a_port_twice() {
        let servers: String = (0..2000)
            .map(|i| format!("\"r{i}\": {{\"url\": \"https://h{i}/mcp\"}}"))
            .collect::<Vec<_>>()
            .join(", ");
        let text = format!("{{\"mcpServers\": {{{servers}}}}}");
        let (_t, path, mut ledger) = setup(&text);
        wrap_file(&path, "/bin/mcpscope", &Selection::All, &mut ledger, false).unwrap();
        let ports: HashSet<&str> = ledger.remotes().iter().map(|r| r.listen.as_str()).collect();
        assert_eq!(ports.len(), 2000);
    }
}
