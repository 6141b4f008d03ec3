//! Process trees: tagged strays, the watchdog, zombies (these read /proc).

use super::process::*;
use super::watchdog::environ_holds;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::Command;

#[test]
fn a_tagged_process_outside_the_group_is_found_and_only_with_its_whole_tag() {
    let tag = format!("unit.{}", std::process::id());
    let mut daemon = Command::new("sleep")
        .arg("30")
        .env(TREE_TAG_VAR, &tag)
        .process_group(0)
        .spawn()
        .unwrap();
    let mut other = Command::new("sleep")
        .arg("30")
        .env(TREE_TAG_VAR, format!("{tag}0"))
        .process_group(0)
        .spawn()
        .unwrap();
    let pid = daemon.id();
    // A group that cannot exist (above the kernel's largest pid_max):
    // the daemon is outside it, as a setsid'd one is.
    let tree = ServerTree::for_tests(4_194_305, &tag);
    assert_eq!(tree.strays(), vec![(pid, false)], "the longer tag is another server's");
    let marker = tree.marker();
    // SAFETY: plain reads of /proc.
    unsafe {
        assert!(environ_holds(pid as libc::pid_t, &marker));
        assert!(!environ_holds(other.id() as libc::pid_t, &marker));
    }
    assert!(tree.signal(libc::SIGKILL));
    daemon.wait().unwrap();
    assert!(tree.strays().is_empty());
    other.kill().unwrap();
    other.wait().unwrap();
}

#[test]
fn the_watchdog_ends_the_group_when_released_and_not_when_stood_down() {
    let spawn_group = || {
        std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap()
    };
    let mut kept = spawn_group();
    let w = Watchdog::start(
        &ServerTree::for_tests(kept.id(), "t1"),
        std::time::Duration::from_millis(200),
    )
    .unwrap();
    w.stand_down();
    assert!(group_alive(kept.id()), "standing down must not signal the group");
    let _ = kept.kill();
    let _ = kept.wait();

    let mut ended = spawn_group();
    let w = Watchdog::start(
        &ServerTree::for_tests(ended.id(), "t2"),
        std::time::Duration::from_millis(200),
    )
    .unwrap();
    w.release();
    let status = ended.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGTERM));
}

#[test]
fn the_watchdog_names_itself() {
    let mut group = std::process::Command::new("sleep")
        .arg("30")
        .process_group(0)
        .spawn()
        .unwrap();
    let w = Watchdog::start(
        &ServerTree::for_tests(group.id(), "t3"),
        std::time::Duration::from_millis(200),
    )
    .unwrap();
    let pid = w.pid;
    let read = |what: &str| std::fs::read(format!("/proc/{pid}/{what}")).unwrap_or_default();
    // The child names itself just after the fork: give it a moment.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while read("comm") != b"mcpscope-watchd\n" && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let (comm, cmdline) = (read("comm"), read("cmdline"));
    w.stand_down();
    let _ = group.kill();
    let _ = group.wait();
    assert_eq!(String::from_utf8_lossy(&comm), "mcpscope-watchd\n");
    assert!(
        cmdline.starts_with(b"mcpscope-watchdog\0"),
        "{:?}",
        String::from_utf8_lossy(&cmdline)
    );
    assert!(
        cmdline[WATCHDOG_NAME.count_bytes()..].iter().all(|&b| b == 0),
        "{cmdline:?}"
    );
}

#[test]
fn a_group_of_zombies_is_alive_but_not_running() {
    let mut leader = std::process::Command::new("sleep")
        .arg("30")
        .process_group(0)
        .spawn()
        .unwrap();
    let pgid = leader.id();
    assert!(group_running(pgid));
    leader.kill().unwrap();
    // Killed and not yet waited for: a zombie.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while group_running(pgid) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(!group_running(pgid), "a killed process no longer runs");
    assert!(group_alive(pgid), "the zombie is still there until it is waited for");
    leader.wait().unwrap();
    assert!(!group_alive(pgid) && !group_running(pgid));
}

#[test]
fn this_process_usage_is_read() {
    let own = usage(std::process::id()).expect("our own /proc entry");
    assert!(own.resident_kib > 0);
    assert_eq!(usage(u32::MAX), None);
}

#[test]
fn a_process_that_exited_is_not_running_before_it_is_reaped() {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    assert!(start_stamp(pid).is_some() || !is_running(pid));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while is_running(pid) {
        assert!(std::time::Instant::now() < deadline, "the child did not exit");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(has_exited(pid), "a zombie until waited for");
    child.wait().unwrap();
    assert!(!is_running(pid) && !is_running(0) && !is_running(u32::MAX));
    assert!(is_running(std::process::id()));
    assert!(ask_to_stop(u32::MAX).is_err());
}
