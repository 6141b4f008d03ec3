//! Hostile peers, round three: wrap/unwrap of client configs: no litter, lost ledgers.
//! Each test fails without the fix it guards.

use crate::hostile::{text, wait_output};
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

/// A config of each kind of entry: stdio with and without args, and a remote
/// whose URL has a query (all of it must come back).
const CONFIG: &str = r#"{
  // the user's own comment
  "mcpServers": {
    "a": {"command": "srv-a", "args": ["--flag"]},
    "b": {"command": "srv-b"},
    "r": {"type": "http", "url": "https://mcp.example.com/mcp?k=1"}
  },
  "globalShortcut": "Ctrl+Space"
}
"#;

const NAME: &str = "claude_desktop_config.json";
const BACKUP: &str = "claude_desktop_config.json.mcpscope-backup";

/// `mcpscope ARGS` with its state directory under `state`, bounded in time.
fn mcpscope(state: &Path, args: &[&str]) -> Output {
    let child = crate::support::mcpscope_command()
        .args(args)
        .env("XDG_STATE_HOME", state)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running mcpscope");
    wait_output(child, Duration::from_secs(20), &format!("mcpscope {}", args.join(" ")))
}

fn ok(state: &Path, args: &[&str]) -> Output {
    let out = mcpscope(state, args);
    assert!(
        out.status.success(),
        "{args:?}: {}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    out
}

/// The names in the config's folder, sorted.
fn folder(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A folder holding the user's config and another file of theirs, and a
/// separate state directory.
fn setup() -> (tempfile::TempDir, tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let config = dir.path().join(NAME);
    std::fs::write(&config, CONFIG).unwrap();
    std::fs::write(dir.path().join("settings.json"), "{}\n").unwrap();
    (dir, state, config)
}

/// #47 item 16: every wrap and unwrap used to add a numbered backup and a
/// lock file beside the config (four backups after two cycles). Now one
/// backup holds the original while anything is wrapped, a wrap of an
/// already wrapped config keeps it, and the unwrap that brings the config
/// back removes it.
#[test]
fn wrap_cycles_leave_the_config_folder_as_the_user_had_it() {
    let (dir, state, config) = setup();
    let c = config.to_str().unwrap();
    let mine = folder(dir.path());
    for cycle in 0..2 {
        ok(state.path(), &["wrap", c, "--server", "a"]);
        // A second wrap of a wrapped config must not replace the original.
        ok(state.path(), &["wrap", c, "--server", "r"]);
        ok(state.path(), &["wrap", c, "--all"]);
        let wrapped = std::fs::read_to_string(&config).unwrap();
        assert!(
            wrapped.contains("\"proxy\"") && wrapped.contains("http://127.0.0.1:"),
            "{wrapped}"
        );
        let mut expected = mine.clone();
        expected.push(BACKUP.to_owned());
        expected.sort();
        assert_eq!(folder(dir.path()), expected, "cycle {cycle}: one backup, no lock file");
        assert_eq!(
            std::fs::read_to_string(dir.path().join(BACKUP)).unwrap(),
            CONFIG,
            "cycle {cycle}: the backup is the config before any wrap"
        );
        let out = ok(state.path(), &["unwrap", c]);
        assert_eq!(
            std::fs::read_to_string(&config).unwrap(),
            CONFIG,
            "cycle {cycle}: byte for byte"
        );
        assert!(text(&out.stdout).contains("removed"), "{}", text(&out.stdout));
        assert_eq!(
            folder(dir.path()),
            mine,
            "cycle {cycle}: nothing left beside the config"
        );
    }
}

/// #47 item 16: a run that fails (exit 4 or 64, nothing written) leaves
/// nothing beside the config either.
#[test]
fn a_failed_run_leaves_no_lock_beside_the_config() {
    let (dir, state, config) = setup();
    let broken = "{\"mcpServers\": {\"a\": {\"command\": \"a\",,}}}";
    std::fs::write(&config, broken).unwrap();
    let mine = folder(dir.path());
    let c = config.to_str().unwrap();
    for (args, code) in [
        (vec!["wrap", c, "--all"], 4),
        (vec!["unwrap", c], 4),
        (vec!["wrap", c, "--server", "nope"], 4),
    ] {
        let out = mcpscope(state.path(), &args);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains("nothing was written"),
            "{}",
            text(&out.stderr)
        );
        assert_eq!(folder(dir.path()), mine, "{args:?}");
    }
    std::fs::write(&config, CONFIG).unwrap();
    let out = mcpscope(state.path(), &["wrap", c, "--server", "nope"]);
    assert_eq!(out.status.code(), Some(64), "{}", text(&out.stderr));
    assert_eq!(folder(dir.path()), mine);
    assert_eq!(std::fs::read_to_string(&config).unwrap(), CONFIG);
    // Nothing to unwrap: nothing written, nothing left.
    ok(state.path(), &["unwrap", c]);
    assert_eq!(folder(dir.path()), mine);
}

/// #47 item 17: with the ledger gone, unwrap used to leave the remote entry
/// pointing at a proxy that no longer runs, though the backup beside the
/// config holds its URL. It now takes the URL from there and says so.
#[test]
fn unwrap_without_the_ledger_takes_a_remote_url_from_the_backup() {
    let (dir, state, config) = setup();
    let c = config.to_str().unwrap();
    ok(state.path(), &["wrap", c, "--all"]);
    let wrapped = std::fs::read_to_string(&config).unwrap();
    assert!(!wrapped.contains("mcp.example.com"), "{wrapped}");
    std::fs::remove_file(state.path().join("mcpscope/wrapped-remotes.json")).unwrap();
    let out = ok(state.path(), &["unwrap", c]);
    assert_eq!(std::fs::read_to_string(&config).unwrap(), CONFIG, "byte for byte");
    let err = text(&out.stderr);
    assert!(
        err.contains("r:") && err.contains("ledger") && err.contains(BACKUP),
        "says where the URL came from: {err}"
    );
    assert!(
        text(&out.stdout).contains("r: restored its URL"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(folder(dir.path()), ["claude_desktop_config.json", "settings.json"]);
}

/// #47 item 17: the backup is only trusted for a URL wrap could have made
/// from it: a local URL with another path is left, and said.
#[test]
fn a_local_url_the_backup_does_not_explain_is_left_alone() {
    let (_dir, state, config) = setup();
    let c = config.to_str().unwrap();
    ok(state.path(), &["wrap", c, "--server", "r"]);
    std::fs::remove_file(state.path().join("mcpscope/wrapped-remotes.json")).unwrap();
    let wrapped = std::fs::read_to_string(&config).unwrap();
    let moved = wrapped.replace("/mcp?k=1", "/elsewhere");
    assert_ne!(moved, wrapped);
    std::fs::write(&config, &moved).unwrap();
    let out = ok(state.path(), &["unwrap", c]);
    assert!(text(&out.stdout).contains("r: skipped"), "{}", text(&out.stdout));
    assert_eq!(std::fs::read_to_string(&config).unwrap(), moved);
}
