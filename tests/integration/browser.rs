//! The browser mcpscope opens (a View's page, a sign-in): started, waited
//! for, and what it leaves behind reaped (issue #48: `chrome_crashpad` and
//! `chromium <defunct>` zombies accumulated under the app).

use crate::hostile::{alive, wait_until};
use std::os::unix::fs::PermissionsExt as _;
use std::time::Duration;

/// State of `pid` from /proc (None once it is gone, reaped).
fn state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().next()?.chars().next()
}

/// A launcher that leaves a helper behind and exits at once, as a browser's
/// launcher does (the helper is orphaned to mcpscope, the subreaper): once
/// the helper ends it is reaped, not left a zombie.
#[test]
fn what_the_browser_leaves_behind_is_reaped_when_it_ends() {
    // The test process adopts orphans as the app does.
    // SAFETY: plain prctl on this process.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("helper.pid");
    let launcher = dir.path().join("browser.sh");
    std::fs::write(
        &launcher,
        format!(
            "#!/bin/sh\n( sleep 1; exit 0 ) &\necho $! > {}.tmp && mv {0}.tmp {0}\nexit 0\n",
            pidfile.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).unwrap();
    let program = mcpscope_core::transport::auth::browser::open_with(
        Some(&launcher.display().to_string()),
        "http://127.0.0.1:9/app/x",
    )
    .expect("the launcher starts");
    assert_eq!(program, launcher.display().to_string());
    wait_until(Duration::from_secs(10), "the helper's pid", || pidfile.exists());
    let helper: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    wait_until(Duration::from_secs(10), "the helper to end", || !alive(helper));
    wait_until(Duration::from_secs(10), "the helper to be reaped", || {
        state(helper).is_none()
    });
}
