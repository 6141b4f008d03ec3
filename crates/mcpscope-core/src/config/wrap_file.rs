//! `wrap` and `unwrap` on a file: read it, edit it (see [`super::wrap`]),
//! back it up, write it back in one step, and keep the ledger of remote
//! servers pointed at a local reverse proxy.
//!
//! Nothing is written unless the edit changes the file. The backup
//! (`CONFIG.mcpscope-backup`, owner-only: configs hold API keys) is the file
//! as it was just before this change. The new text replaces the file
//! atomically with the file's own permissions; a config that is a symbolic
//! link (dotfile managers) has its target rewritten, the link kept.

use crate::config::wrap::{self, Change, Edit, RemoteWrap, Remotes, Selection, WrapError};
use crate::record::state_dir;
use serde::{Deserialize, Serialize};
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

pub const BACKUP_SUFFIX: &str = ".mcpscope-backup";
const LEDGER: &str = "wrapped-remotes.json";

/// What a file-level wrap or unwrap did.
#[derive(Debug)]
pub struct FileReport {
    pub changes: Vec<Change>,
    /// Where the previous content was saved, when the file was written.
    pub backup: Option<PathBuf>,
    /// False when nothing needed changing (or `dry_run`).
    pub written: bool,
}

/// The remote servers wrapped so far, kept in the state directory.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Ledger {
    #[serde(default)]
    pub remotes: Vec<RemoteWrap>,
    #[serde(skip)]
    path: Option<PathBuf>,
}

impl Ledger {
    /// Reads the ledger from the state root (an empty one if there is none yet).
    pub fn load(state_root: &Path) -> io::Result<Self> {
        let path = state_root.join(LEDGER);
        let mut ledger = match state_dir::open_no_follow(&path) {
            Ok(f) => serde_json::from_reader::<_, Ledger>(io::BufReader::new(f))
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {e}", path.display())))?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ledger::default(),
            Err(e) => return Err(e),
        };
        ledger.path = Some(path);
        Ok(ledger)
    }

    fn save(&self) -> io::Result<()> {
        let Some(path) = &self.path else { return Ok(()) };
        if let Some(dir) = path.parent() {
            state_dir::ensure_private_dir(dir)?;
        }
        let mut bytes = serde_json::to_vec_pretty(self).map_err(io::Error::other)?;
        bytes.push(b'\n');
        state_dir::write_private_atomic(path, &bytes)
    }

    /// The remotes wrapped in `config` (as the path was given to wrap).
    pub fn for_config(&self, config: &Path) -> Vec<&RemoteWrap> {
        let want = canonical(config);
        self.remotes
            .iter()
            .filter(|r| canonical(Path::new(&r.config)) == want)
            .collect()
    }
}

fn canonical(p: &Path) -> PathBuf {
    fs::canonicalize(p).unwrap_or_else(|_| std::path::absolute(p).unwrap_or_else(|_| p.to_owned()))
}

impl Remotes for Ledger {
    fn allocate_port(&mut self) -> io::Result<u16> {
        // A port the OS says is free now and no other wrapped remote uses.
        for _ in 0..32 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
            if !self.remotes.iter().any(|r| r.listen.ends_with(&format!(":{port}"))) {
                return Ok(port);
            }
        }
        Err(io::Error::new(io::ErrorKind::AddrInUse, "no free port found"))
    }

    fn lookup(&self, local_url: &str) -> Option<RemoteWrap> {
        self.remotes.iter().find(|r| r.local_url == local_url).cloned()
    }
}

/// Wraps the chosen servers of the config at `path`.
pub fn wrap_file(
    path: &Path,
    mcpscope: &str,
    selection: &Selection,
    ledger: &mut Ledger,
    dry_run: bool,
) -> Result<FileReport, WrapError> {
    let text = read(path)?;
    let config_name = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let mut edit = wrap::wrap_text(path, &text, mcpscope, selection, ledger)?;
    for c in &mut edit.changes {
        if let Change::WrappedRemote { remote, .. } = c {
            remote.config = config_name.display().to_string();
        }
    }
    let report = commit(path, &text, &edit, dry_run)?;
    if report.written {
        for c in &edit.changes {
            if let Change::WrappedRemote { remote, .. } = c {
                ledger.remotes.push(remote.clone());
            }
        }
        ledger.save().map_err(|e| {
            WrapError::Io(format!(
                "the config was written, but the ledger of remote servers was not: {e}"
            ))
        })?;
    }
    Ok(report)
}

/// Restores the chosen wrapped servers of the config at `path`.
pub fn unwrap_file(
    path: &Path,
    selection: &Selection,
    ledger: &mut Ledger,
    dry_run: bool,
) -> Result<FileReport, WrapError> {
    let text = read(path)?;
    let edit = wrap::unwrap_text(path, &text, selection, ledger)?;
    let report = commit(path, &text, &edit, dry_run)?;
    if report.written {
        let released: Vec<&str> = edit
            .changes
            .iter()
            .filter_map(|c| match c {
                Change::UnwrappedRemote { local_url, .. } => Some(local_url.as_str()),
                _ => None,
            })
            .collect();
        if !released.is_empty() {
            ledger.remotes.retain(|r| !released.contains(&r.local_url.as_str()));
            ledger
                .save()
                .map_err(|e| WrapError::Io(format!("the config was written, but the ledger was not updated: {e}")))?;
        }
    }
    Ok(report)
}

fn read(path: &Path) -> Result<String, WrapError> {
    read_regular(path).map_err(|source| {
        WrapError::Config(crate::config::server_config::ConfigError::Unreadable {
            path: path.to_owned(),
            source,
        })
    })
}

fn commit(path: &Path, original: &str, edit: &Edit, dry_run: bool) -> Result<FileReport, WrapError> {
    if !edit.changed(original) || dry_run {
        return Ok(FileReport {
            changes: edit.changes.clone(),
            backup: None,
            written: false,
        });
    }
    // Write through a symlink to its target, so the link stays a link.
    let target =
        fs::canonicalize(path).map_err(|e| WrapError::Io(format!("cannot resolve {}: {e}", path.display())))?;
    let mut backup_name = target.as_os_str().to_owned();
    backup_name.push(BACKUP_SUFFIX);
    let backup = PathBuf::from(backup_name);
    // The backup may exist from an earlier run; it is replaced, never followed.
    state_dir::write_private_atomic(&backup, original.as_bytes())
        .map_err(|e| WrapError::Io(format!("cannot write the backup, so the config was left alone: {e}")))?;
    replace_keeping_mode(&target, edit.text.as_bytes())
        .map_err(|e| WrapError::Io(format!("cannot write {}: {e}", target.display())))?;
    Ok(FileReport {
        changes: edit.changes.clone(),
        backup: Some(backup),
        written: true,
    })
}

/// Replaces a file's content in one rename, keeping its permission bits.
fn replace_keeping_mode(target: &Path, bytes: &[u8]) -> io::Result<()> {
    let mode = fs::metadata(target)?.permissions().mode() & 0o7777;
    let dir = target.parent().unwrap_or(Path::new("."));
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.mcpscope-{}.tmp", std::process::id()));
    let _ = fs::remove_file(&tmp);
    let result = (|| {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::set_permissions(&tmp, fs::Permissions::from_mode(mode))?;
        fs::rename(&tmp, target)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// A config's text, refusing what is not a regular file (a FIFO would block
/// the read forever) without blocking.
pub(crate) fn read_regular(path: &Path) -> io::Result<String> {
    use std::io::Read;
    let mut f = crate::record::private_files::open_regular(path).map_err(|e| match e.downcast::<io::Error>() {
        Ok(io) => io,
        Err(other) => io::Error::new(io::ErrorKind::InvalidInput, format!("{other:#}")),
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
        assert_eq!(ledger.remotes[0].upstream, "https://h/mcp");

        // Nothing left to do: nothing written.
        let again = wrap_file(&path, "/bin/mcpscope", &Selection::All, &mut ledger, false).unwrap();
        assert!(!again.written);

        let u = unwrap_file(&path, &Selection::All, &mut ledger, false).unwrap();
        assert!(u.written);
        assert_eq!(fs::read_to_string(&path).unwrap(), TEXT);
        assert!(Ledger::load(&t.path().join("state")).unwrap().remotes.is_empty());
    }

    #[test]
    fn a_broken_file_is_left_untouched() {
        let broken = "{\"mcpServers\": {\"a\": {\"command\": \"a\",,}}}";
        let (t, path, mut ledger) = setup(broken);
        let e = wrap_file(&path, "/bin/mcpscope", &Selection::All, &mut ledger, false).unwrap_err();
        assert!(e.to_string().contains("line 1, column"), "{e}");
        assert_eq!(fs::read_to_string(&path).unwrap(), broken);
        assert_eq!(
            fs::read_dir(t.path()).unwrap().count(),
            1,
            "no backup, no temporary file"
        );
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
}
