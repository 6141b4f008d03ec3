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
use crate::config::wrap::{self, Change, Originals, RemoteWrap, Selection, WrapError};
use crate::platform::fs::{Ownership, is_refused_link};
use crate::record::state_dir;
use lock::{FileLock, lock_config};
use replace::{Replacement, sync_dir};
use std::collections::HashSet;
use std::ffi::OsString;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

pub use ledger::Ledger;

mod ledger;
mod lock;
mod replace;

pub const BACKUP_SUFFIX: &str = ".mcpscope-backup";
/// The lock file earlier versions left beside a config (`CONFIG.mcpscope-lock`).
const OLD_LOCK_SUFFIX: &str = ".mcpscope-lock";

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

fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
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
    let ownership = Ownership::of(&meta);
    let tmp = Replacement::prepare(target, new_text.as_bytes(), ownership).map_err(cannot_write)?;
    let lock = tmp.lock().map_err(cannot_write)?;
    if let Some(backup) = backup {
        // Owner-only (configs hold keys), owned like the config.
        Replacement::prepare(backup, original.as_bytes(), ownership.owner_only())
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
        Err(e) if is_refused_link(&e) => Ok(None),
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
// About modes, owners and links kept across a rewrite: Unix's.
#[cfg(unix)]
mod tests;
