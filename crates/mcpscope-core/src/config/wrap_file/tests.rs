use super::ledger::LEDGER;
use super::*;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

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
