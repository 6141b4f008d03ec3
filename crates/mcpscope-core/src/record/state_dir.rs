//! mcpscope's per-user state directory, and files in it that only the user can read.
//!
//! Captures hold tokens, file contents and whatever else a client sends its
//! server, so everything here is created owner-only (directories 0700, files
//! 0600), never through a symbolic link, and an existing directory that is not
//! ours (a symlink, another user's, one others can write to) is refused rather
//! than used.
//!
//! The root is `$XDG_STATE_HOME/mcpscope` (an absolute `XDG_STATE_HOME` only,
//! as the XDG base directory specification says), else
//! `$HOME/.local/state/mcpscope`.

use crate::platform::dirs::{System, UserDirs, state_root, state_root_missing};
use crate::platform::fs::{
    User, make_blocking, others_may_access, owner_only_dirs, restrict_dir_to_owner, this_file_only,
};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Sub-directory of the state root that holds proxied sessions.
pub const SESSIONS: &str = "sessions";

/// The state root, where this system keeps such things (see
/// [`crate::platform::dirs::state_root`]): `$XDG_STATE_HOME/mcpscope` or
/// `~/.local/state/mcpscope` on Linux.
pub fn root() -> io::Result<PathBuf> {
    root_from(&UserDirs::from_env())
}

fn root_from(dirs: &UserDirs) -> io::Result<PathBuf> {
    let system = System::this();
    state_root(system, dirs).ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, state_root_missing(system)))
}

/// The directory of proxied sessions (created owner-only if missing). The
/// root is checked first: a root that is a link (another user's, pointing at
/// their directory) is refused, and one of ours that others can read is
/// made 0700 again, before anything is created under it.
pub fn sessions_dir() -> io::Result<PathBuf> {
    let root = root()?;
    ensure_private_dir(&root)?;
    let dir = root.join(SESSIONS);
    ensure_private_dir(&dir)?;
    Ok(dir)
}

/// Every directory proxied sessions may be in, for a reader such as the app.
///
/// Clients start servers with a minimal environment (the TypeScript and
/// Python SDKs keep `HOME` but drop `XDG_STATE_HOME`), so a proxy may record
/// under `~/.local/state` while this process sees another `XDG_STATE_HOME`:
/// both are listed when they differ. Nothing is created.
pub fn session_dirs() -> Vec<PathBuf> {
    session_dirs_from(&UserDirs::from_env())
}

fn session_dirs_from(user: &UserDirs) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Ok(r) = root_from(user) {
        dirs.push(r.join(SESSIONS));
    }
    let without_xdg = UserDirs {
        xdg_state_home: None,
        ..user.clone()
    };
    if let Ok(r) = root_from(&without_xdg) {
        let d = r.join(SESSIONS);
        if !dirs.contains(&d) {
            dirs.push(d);
        }
    }
    dirs
}

/// Creates `dir` (and missing parents) and checks that it is a real directory
/// owned by this user that nobody else can read or write. mcpscope's own
/// directories (the last component, and any parent it creates) get mode 0700;
/// a looser mode on an existing one of ours is tightened.
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    match fs::symlink_metadata(dir) {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                owner_only_dirs(fs::DirBuilder::new().recursive(true)).create(parent)?;
            }
            match owner_only_dirs(&mut fs::DirBuilder::new()).create(dir) {
                // Where the builder cannot say who may use it (an ACL on
                // Windows), it is said now, before anything is put inside.
                Ok(()) => restrict_dir_to_owner(dir).map_err(|e| with_path(e, "cannot restrict", dir))?,
                // Another process made it first: check it like any existing one.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(with_path(e, "cannot create", dir)),
            }
        }
        Err(e) => return Err(with_path(e, "cannot inspect", dir)),
    }
    let meta = fs::symlink_metadata(dir).map_err(|e| with_path(e, "cannot inspect", dir))?;
    if meta.file_type().is_symlink() {
        return Err(refused(
            dir,
            "is a symbolic link; mcpscope keeps private state only in a real directory",
        ));
    }
    if !meta.is_dir() {
        return Err(refused(dir, "exists but is not a directory"));
    }
    let (owner, me) = (User::owner_of(&meta), User::current());
    if owner != me {
        return Err(refused(dir, &format!("belongs to user id {owner}, not to you ({me})")));
    }
    if others_may_access(&meta) {
        restrict_dir_to_owner(dir).map_err(|e| with_path(e, "cannot restrict", dir))?;
    }
    Ok(())
}

/// Creates a new file readable and writable by the user alone. Fails if
/// anything (a file, a symlink) is already at `path`.
pub fn create_private_file(path: &Path) -> io::Result<File> {
    this_file_only(OpenOptions::new().write(true).create_new(true))
        .open(path)
        .map_err(|e| with_path(e, "cannot create", path))
}

/// Opens an existing file for reading without following a symlink at `path`.
pub fn open_no_follow(path: &Path) -> io::Result<File> {
    let file = this_file_only(OpenOptions::new().read(true)).open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is not a regular file (a FIFO or a device?): refusing it",
                path.display()
            ),
        ));
    }
    make_blocking(&file);
    Ok(file)
}

/// Replaces `path` with `bytes` so readers see the old or the new content,
/// never a mix: a private temporary file next to it, synced, then renamed over.
pub fn write_private_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut attempt = 0u32;
    loop {
        let tmp = dir.join(format!(".{name}.{}.{attempt}.tmp", std::process::id()));
        match create_private_file(&tmp) {
            Ok(mut f) => {
                let written = f.write_all(bytes).and_then(|_| f.sync_data());
                let renamed = written.and_then(|_| fs::rename(&tmp, path));
                if let Err(e) = renamed {
                    let _ = fs::remove_file(&tmp);
                    return Err(with_path(e, "cannot write", path));
                }
                return Ok(());
            }
            // A stale temporary file from a crashed writer with our pid.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 16 => attempt += 1,
            Err(e) => return Err(e),
        }
    }
}

fn with_path(e: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}

fn refused(path: &Path, why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, format!("{} {why}", path.display()))
}

#[cfg(test)]
// About modes and links: Unix's (Windows' ACLs are the platform layer's).
#[cfg(unix)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn mode(p: &Path) -> u32 {
        fs::symlink_metadata(p).unwrap().mode() & 0o777
    }

    #[test]
    #[cfg(target_os = "linux")] // XDG_STATE_HOME is Linux's
    fn session_dirs_cover_a_client_that_dropped_xdg_state_home() {
        let user = |xdg: Option<&str>, home: Option<&str>| UserDirs {
            xdg_state_home: xdg.map(PathBuf::from),
            home: home.map(PathBuf::from),
            ..UserDirs::default()
        };
        assert_eq!(
            session_dirs_from(&user(Some("/x"), Some("/home/me"))),
            [
                PathBuf::from("/x/mcpscope/sessions"),
                PathBuf::from("/home/me/.local/state/mcpscope/sessions")
            ]
        );
        assert_eq!(
            session_dirs_from(&user(None, Some("/home/me"))),
            [PathBuf::from("/home/me/.local/state/mcpscope/sessions")]
        );
        assert!(session_dirs_from(&user(None, None)).is_empty());
        assert!(root_from(&user(None, None)).is_err());
    }

    #[test]
    fn private_dir_is_created_0700_and_loose_modes_are_tightened() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("a/b/sessions");
        ensure_private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&t.path().join("a/b")), 0o700);
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        ensure_private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
    }

    #[test]
    fn a_symlinked_or_non_directory_state_dir_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().join("real");
        fs::create_dir(&real).unwrap();
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let e = ensure_private_dir(&link).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let file = t.path().join("file");
        fs::write(&file, "").unwrap();
        assert!(
            ensure_private_dir(&file)
                .unwrap_err()
                .to_string()
                .contains("not a directory")
        );
    }

    #[test]
    fn private_files_are_0600_and_never_follow_symlinks() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("c.jsonl");
        create_private_file(&p).unwrap();
        assert_eq!(mode(&p), 0o600);
        // Already there: refused, not truncated.
        assert_eq!(
            create_private_file(&p).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );

        let target = t.path().join("elsewhere");
        let link = t.path().join("planted");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(create_private_file(&link).is_err());
        assert!(!target.exists(), "the symlink's target must not be created");
        assert!(open_no_follow(&link).is_err());
    }

    #[test]
    fn atomic_write_replaces_content_and_stays_private() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("s.json");
        write_private_atomic(&p, b"one").unwrap();
        write_private_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert_eq!(mode(&p), 0o600);
        let leftovers: Vec<_> = fs::read_dir(t.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary files left behind");
    }
}
