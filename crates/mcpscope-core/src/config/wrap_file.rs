//! `wrap` and `unwrap` on a file: read it, edit it (see [`super::wrap`]),
//! back it up, write it back in one step, and keep the ledger of remote
//! servers pointed at a local reverse proxy.
//!
//! The way back is stored before the config changes, or the config is not
//! changed: a wrapped remote's original URL is recorded in the ledger, so the
//! ledger is written (and synced) first, and a ledger that cannot be written
//! leaves the config as it was.
//!
//! The only file mcpscope keeps beside a config is one backup,
//! `CONFIG.mcpscope-backup` (owner-only, since configs hold API keys, and
//! owned like the config), holding the config as it was before mcpscope
//! changed it: the user's original, and where unwrap finds a remote's URL
//! the ledger lost. A wrap saves it when there is none, and replaces it (a
//! synced temporary file renamed over it) only when the config holds nothing
//! of mcpscope's, so a newer copy never hides an original that a wrapped entry
//! still needs; a wrap of a config already wrapped keeps it. Unwrap writes
//! none, and removes it once the config is back to exactly its content.
//!
//! Runs on one config are serialised by an advisory lock (flock) on the
//! config file itself, so no lock file is left anywhere; a run that got the
//! lock on a file another run has since replaced takes it again on the new
//! one, and a run locks its replacement before renaming it into place, so it
//! holds the config until its backup is settled. Runs touching the ledger
//! also lock a file beside the ledger, always after the config. Each run
//! reads the config, its backup and the ledger only once it holds them, so
//! two runs never both edit the same old text. The config and the ledger are
//! replaced atomically (a temporary file in the same directory, synced,
//! renamed over). The new config keeps the old one's owner, group and mode
//! (root wrapping a user's config must not leave it root's); a config that is
//! a symbolic link (dotfile managers) has its target rewritten, the link kept.

use crate::config::server_config::ConfigError;
use crate::config::wrap::{self, Change, Originals, RemoteWrap, Remotes, Selection, WrapError};
use crate::record::state_dir;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

pub const BACKUP_SUFFIX: &str = ".mcpscope-backup";
/// The lock file earlier versions left beside a config (`CONFIG.mcpscope-lock`).
const OLD_LOCK_SUFFIX: &str = ".mcpscope-lock";
const LEDGER: &str = "wrapped-remotes.json";
const LEDGER_LOCK: &str = "wrapped-remotes.json.lock";

/// What a file-level wrap or unwrap did.
#[derive(Debug)]
pub struct FileReport {
    pub changes: Vec<Change>,
    /// What became of the backup beside the config.
    pub backup: BackupOutcome,
    /// False when nothing needed changing (or `dry_run`).
    pub written: bool,
    /// What the user should know although the run succeeded: unwrap could
    /// not drop the restored servers from the ledger, or took URLs from the
    /// backup because the ledger had lost them.
    pub warnings: Vec<String>,
}

/// What became of `CONFIG.mcpscope-backup`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackupOutcome {
    /// Nothing was written, or unwrap found no backup.
    None,
    /// The config as it was before this run, saved.
    Saved(PathBuf),
    /// The backup already there, kept: it holds the config as it was before
    /// mcpscope changed it (the config now differs from it).
    Kept(PathBuf),
    /// The config is back to exactly the backup's content, so the backup was removed.
    Removed(PathBuf),
}

impl FileReport {
    fn unwritten(changes: Vec<Change>) -> Self {
        FileReport {
            changes,
            backup: BackupOutcome::None,
            written: false,
            warnings: Vec::new(),
        }
    }

    /// What happened to the file and its backup, in a sentence (for the CLI and the app).
    pub fn summary(&self, config: &Path) -> String {
        let c = config.display();
        if !self.written {
            return format!("nothing to change in {c}");
        }
        match &self.backup {
            BackupOutcome::None => format!("wrote {c}"),
            BackupOutcome::Saved(b) => format!("wrote {c} (the previous version is in {})", b.display()),
            BackupOutcome::Kept(b) => format!(
                "wrote {c} ({} still holds it as it was before mcpscope changed it)",
                b.display()
            ),
            BackupOutcome::Removed(b) => format!(
                "wrote {c}; it is as it was before mcpscope changed it, so {} was removed",
                b.display()
            ),
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
        lock_file(&dir.join(LEDGER_LOCK))
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

/// Locks `path`, creating it (0600) if needed and waiting for whoever holds it.
fn lock_file(path: &Path) -> io::Result<FileLock> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(0o600)
        // O_NONBLOCK: a FIFO planted here must not block the open.
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY)
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
fn lock_config(target: &Path) -> io::Result<FileLock> {
    loop {
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(target)?;
        let locked = file.metadata()?;
        if !locked.is_file() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a regular file"));
        }
        flock(&file, target)?;
        let now = fs::symlink_metadata(target)?;
        if (now.dev(), now.ino()) == (locked.dev(), locked.ino()) {
            return Ok(FileLock { _file: file });
        }
    }
}

/// Waits for an exclusive flock on `file`.
fn flock(file: &File, path: &Path) -> io::Result<()> {
    loop {
        // SAFETY: flock on a descriptor the caller owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(());
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
    let config_lock = lock_config(&target)
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
    let backup_path = backup_name(&target);
    // An existing backup gives way only to a config holding nothing of
    // mcpscope's: while anything is wrapped, it may hold the only original.
    let save_backup = match read_backup(&backup_path)? {
        None => true,
        Some(backup) => {
            let originals = originals_of(path, &backup);
            !wrap::holds_wrapped_entries(path, &text, ledger, originals.as_ref())?
        }
    };
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
    match commit(&target, &text, &edit.text, save_backup.then_some(&backup_path)) {
        Ok(_new_config) => Ok(FileReport {
            changes: edit.changes,
            backup: if save_backup {
                BackupOutcome::Saved(backup_path)
            } else {
                BackupOutcome::Kept(backup_path)
            },
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
    let (target, text, locks) = if dry_run {
        let text = read(path)?;
        let target = fs::canonicalize(path).map_err(|e| unreadable(path, e))?;
        (target, text, None)
    } else {
        let (target, locks) = begin(path, ledger)?;
        (target, read(path)?, Some(locks))
    };
    let backup_path = backup_name(&target);
    let backup = read_backup(&backup_path)?;
    let originals = backup.as_deref().and_then(|b| originals_of(path, b));
    let edit = wrap::unwrap_text(path, &text, selection, ledger, originals.as_ref())?;
    let mut warnings: Vec<String> = edit
        .changes
        .iter()
        .filter_map(|c| match c {
            Change::UnwrappedRemote {
                server,
                local_url,
                from_backup: true,
            } => Some(format!(
                "{server}: the ledger of wrapped remote servers ({}) has no record of {local_url}; its original URL comes from {}",
                ledger.describe(),
                backup_path.display()
            )),
            _ => None,
        })
        .collect();
    let Some(locks) = locks else {
        let mut report = FileReport::unwritten(edit.changes);
        report.warnings = warnings;
        return Ok(report);
    };
    if !edit.changed(&text) {
        return Ok(FileReport::unwritten(edit.changes));
    }
    // Held until the backup is settled: the config is ours until then.
    let _new_config = commit(&target, &text, &edit.text, None)?;
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
    // The backup is removed only when it holds nothing the config does not.
    let backup = match backup {
        None => BackupOutcome::None,
        Some(b) if b == edit.text => match fs::remove_file(&backup_path) {
            Ok(()) => BackupOutcome::Removed(backup_path),
            Err(e) => {
                warnings.push(format!("cannot remove {}: {e}", backup_path.display()));
                BackupOutcome::Kept(backup_path)
            }
        },
        Some(_) => BackupOutcome::Kept(backup_path),
    };
    remove_old_lock(&target);
    let _ = sync_dir(parent_dir(&target));
    Ok(FileReport {
        changes: edit.changes,
        backup,
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

/// Writes `new_text` over `target`, after saving `original` to `backup` when
/// given. The new file is made (with the old one's owner and mode) first, so
/// a config that cannot keep its owner gets no backup either; it is locked
/// before it is renamed into place, so runs waiting for the config get it
/// only once the returned lock is dropped.
fn commit(target: &Path, original: &str, new_text: &str, backup: Option<&Path>) -> Result<FileLock, WrapError> {
    let meta = fs::metadata(target).map_err(|e| WrapError::Io(format!("cannot inspect {}: {e}", target.display())))?;
    let dir = parent_dir(target);
    let cannot_write = |e: io::Error| WrapError::Io(format!("cannot write {}: {e}", target.display()));
    let tmp = Replacement::prepare(target, new_text.as_bytes(), &meta, meta.mode() & 0o7777).map_err(cannot_write)?;
    let lock = tmp.lock().map_err(cannot_write)?;
    if let Some(backup) = backup {
        // Owner-only (configs hold keys), owned like the config.
        Replacement::prepare(backup, original.as_bytes(), &meta, 0o600)
            .and_then(|b| b.install(backup))
            .map_err(|e| WrapError::Io(format!("cannot write the backup of {}: {e}", target.display())))?;
    }
    tmp.install(target).map_err(cannot_write)?;
    // The rename is what makes the new text the config: make it durable. The
    // content is already synced, so a failure here loses no data.
    let _ = sync_dir(dir);
    Ok(lock)
}

/// The backup of `config` beside it (beside a link's target): `CONFIG.mcpscope-backup`.
pub fn backup_path(config: &Path) -> PathBuf {
    backup_name(&fs::canonicalize(config).unwrap_or_else(|_| config.to_owned()))
}

fn backup_name(target: &Path) -> PathBuf {
    let mut name: OsString = target.as_os_str().to_owned();
    name.push(BACKUP_SUFFIX);
    PathBuf::from(name)
}

/// The backup's text, if a backup is there. What is not a regular file
/// (a link, a FIFO) is not ours: it is not read, and a new backup replaces it.
fn read_backup(path: &Path) -> Result<Option<String>, WrapError> {
    let cannot = |e: io::Error| WrapError::Io(format!("cannot read the backup {}: {e}", path.display()));
    match state_dir::open_no_follow(path) {
        Ok(mut f) => {
            let mut text = String::new();
            f.read_to_string(&mut text).map_err(cannot)?;
            Ok(Some(text))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound || e.kind() == io::ErrorKind::InvalidInput => Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => Ok(None),
        Err(e) => Err(cannot(e)),
    }
}

/// The remote URLs of a backup; one that no longer parses has none to give.
fn originals_of(path: &Path, backup: &str) -> Option<Originals> {
    Originals::parse(path, backup).ok()
}

/// Earlier versions left an empty lock file beside the config: a successful
/// unwrap takes it away with the rest of what wrapping needed.
fn remove_old_lock(target: &Path) {
    let mut name = target.as_os_str().to_owned();
    name.push(OLD_LOCK_SUFFIX);
    if let Ok(meta) = fs::symlink_metadata(&name)
        && meta.is_file()
        && meta.len() == 0
    {
        let _ = fs::remove_file(&name);
    }
}

/// New content in a temporary file beside its destination, removed unless installed.
struct Replacement {
    path: PathBuf,
    file: File,
    installed: bool,
}

impl Replacement {
    /// `bytes` in a synced temporary file with `like`'s owner and group and `mode`.
    fn prepare(dest: &Path, bytes: &[u8], like: &fs::Metadata, mode: u32) -> io::Result<Self> {
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
    fn lock(&self) -> io::Result<FileLock> {
        flock(&self.file, &self.path)?;
        // The lock belongs to the open file, shared by the clone.
        Ok(FileLock {
            _file: self.file.try_clone()?,
        })
    }

    fn install(mut self, dest: &Path) -> io::Result<()> {
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
        let backup = backup_path(&path);
        assert_eq!(r.backup, BackupOutcome::Saved(backup.clone()));
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
        // Back as it was: the backup has nothing more to give.
        assert_eq!(u.backup, BackupOutcome::Removed(backup.clone()));
        assert!(fs::symlink_metadata(&backup).is_err());
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
            .filter(|n| n.contains(BACKUP_SUFFIX) || n.contains(OLD_LOCK_SUFFIX) || n.ends_with(".tmp"))
            .collect();
        assert!(left.is_empty(), "no backup, no lock, no temporary file: {left:?}");
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
        assert!(!r.written && r.backup == BackupOutcome::None);
        assert_eq!(r.changes.len(), 2);
        assert_eq!(fs::read_to_string(&path).unwrap(), TEXT);
    }

    /// The names in `dir` other than the state directory.
    fn beside(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "state")
            .collect();
        names.sort();
        names
    }

    #[test]
    fn one_backup_keeps_the_original_until_unwrap_brings_it_back() {
        let (t, path, mut ledger) = setup(TEXT);
        let backup = backup_path(&path);
        let one = Selection::Named(vec!["a".into()]);
        let first = wrap_file(&path, "/bin/mcpscope", &one, &mut ledger, false).unwrap();
        assert_eq!(first.backup, BackupOutcome::Saved(backup.clone()));
        // Wrapping more of a wrapped config keeps the original.
        let second = wrap_file(&path, "/bin/mcpscope", &Selection::All, &mut ledger, false).unwrap();
        assert_eq!(second.backup, BackupOutcome::Kept(backup.clone()));
        assert_eq!(fs::read_to_string(&backup).unwrap(), TEXT);
        assert_eq!(
            beside(t.path()),
            [
                "claude_desktop_config.json",
                "claude_desktop_config.json.mcpscope-backup"
            ]
        );
        // A partial unwrap leaves it (the config still differs from it).
        let u = unwrap_file(&path, &one, &mut ledger, false).unwrap();
        assert_eq!(u.backup, BackupOutcome::Kept(backup.clone()));
        let u = unwrap_file(&path, &Selection::All, &mut ledger, false).unwrap();
        assert_eq!(u.backup, BackupOutcome::Removed(backup.clone()));
        assert_eq!(fs::read_to_string(&path).unwrap(), TEXT);
        assert_eq!(beside(t.path()), ["claude_desktop_config.json"]);

        // Edited by hand while wrapped: unwrap keeps the backup, since the
        // config no longer matches it...
        wrap_file(&path, "/bin/mcpscope", &one, &mut ledger, false).unwrap();
        let edited = fs::read_to_string(&path).unwrap().replace("// mine", "// mine, edited");
        fs::write(&path, &edited).unwrap();
        let u = unwrap_file(&path, &Selection::All, &mut ledger, false).unwrap();
        assert_eq!(u.backup, BackupOutcome::Kept(backup.clone()));
        let now = fs::read_to_string(&path).unwrap();
        assert_eq!(now, TEXT.replace("// mine", "// mine, edited"));
        // ...and the next wrap of the unwrapped config replaces it.
        let r = wrap_file(&path, "/bin/mcpscope", &one, &mut ledger, false).unwrap();
        assert_eq!(r.backup, BackupOutcome::Saved(backup.clone()));
        assert_eq!(fs::read_to_string(&backup).unwrap(), now);
    }

    #[test]
    fn a_lost_ledger_keeps_the_backup_for_the_remote_it_explains() {
        let (t, path, mut ledger) = setup(TEXT);
        let r = Selection::Named(vec!["r".into()]);
        wrap_file(&path, "/bin/mcpscope", &r, &mut ledger, false).unwrap();
        fs::remove_file(t.path().join("state").join(LEDGER)).unwrap();
        let mut ledger = Ledger::load(&t.path().join("state")).unwrap();
        // The wrapped remote is only explained by the backup: a wrap of
        // another server must not replace it.
        let a = wrap_file(
            &path,
            "/bin/mcpscope",
            &Selection::Named(vec!["a".into()]),
            &mut ledger,
            false,
        )
        .unwrap();
        assert!(matches!(a.backup, BackupOutcome::Kept(_)), "{:?}", a.backup);
        let u = unwrap_file(&path, &Selection::All, &mut ledger, false).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), TEXT);
        assert!(
            u.changes.iter().any(|c| matches!(
                c,
                Change::UnwrappedRemote { server, from_backup: true, .. } if server == "r"
            )),
            "{:?}",
            u.changes
        );
        assert_eq!(u.warnings.len(), 1, "{:?}", u.warnings);
        assert!(u.warnings[0].contains(BACKUP_SUFFIX), "{:?}", u.warnings);
        assert!(matches!(u.backup, BackupOutcome::Removed(_)));
    }

    #[test]
    fn something_planted_at_the_backup_name_is_replaced_not_followed() {
        let (t, path, mut ledger) = setup(TEXT);
        let victim = t.path().join("victim");
        fs::write(&victim, "precious").unwrap();
        std::os::unix::fs::symlink(&victim, backup_path(&path)).unwrap();
        wrap_file(&path, "/bin/mcpscope", &Selection::All, &mut ledger, false).unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
        let meta = fs::symlink_metadata(backup_path(&path)).unwrap();
        assert!(meta.is_file() && meta.mode() & 0o777 == 0o600);
        assert_eq!(fs::read_to_string(backup_path(&path)).unwrap(), TEXT);
    }

    #[test]
    fn unwrap_clears_the_lock_file_earlier_versions_left() {
        let (t, path, mut ledger) = setup(TEXT);
        let old = t.path().join("claude_desktop_config.json.mcpscope-lock");
        fs::write(&old, "").unwrap();
        wrap_file(&path, "/bin/mcpscope", &Selection::All, &mut ledger, false).unwrap();
        unwrap_file(&path, &Selection::All, &mut ledger, false).unwrap();
        assert_eq!(beside(t.path()), ["claude_desktop_config.json"]);
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
        assert!(fs::symlink_metadata(backup_path(&path)).is_err(), "no backup either");
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

    /// A Claude Desktop config of `n` stdio servers `s0`… running `c0`….
    fn config_of_servers(n: usize) -> String {
        let servers: Vec<String> = (0..n).map(|i| format!("\"s{i}\": {{\"command\": \"c{i}\"}}")).collect();
        format!("{{\"mcpServers\": {{{}}}}}", servers.join(", "))
    }

    #[test]
    fn concurrent_runs_on_one_config_lose_no_update() {
        let text = config_of_servers(8);
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
        assert_eq!(
            fs::read_to_string(backup_path(&path)).unwrap(),
            text,
            "the original, once"
        );
        assert_eq!(
            beside(t.path()),
            [
                "claude_desktop_config.json",
                "claude_desktop_config.json.mcpscope-backup"
            ]
        );
    }

    /// Wraps and unwraps racing: the lock on the config is held until the
    /// backup is settled, so no unwrap removes a backup a wrap has just saved.
    #[test]
    fn concurrent_wraps_and_unwraps_end_with_the_config_alone() {
        let text = config_of_servers(6);
        let (t, path, _) = setup(&text);
        let state = t.path().join("state");
        std::thread::scope(|s| {
            for i in 0..6 {
                let (path, state) = (&path, &state);
                s.spawn(move || {
                    let mut ledger = Ledger::load(state).unwrap();
                    let one = Selection::Named(vec![format!("s{i}")]);
                    for _ in 0..3 {
                        wrap_file(path, "/bin/mcpscope", &one, &mut ledger, false).unwrap();
                        unwrap_file(path, &one, &mut ledger, false).unwrap();
                    }
                });
            }
        });
        assert_eq!(fs::read_to_string(&path).unwrap(), text);
        assert_eq!(beside(t.path()), ["claude_desktop_config.json"]);
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
        assert_eq!(r.backup, BackupOutcome::Saved(backup_path(&path)));
        let backup = fs::metadata(backup_path(&path)).unwrap();
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
