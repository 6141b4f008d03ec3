//! Process trees on Unix: a server's process group and every process that
//! carries its tag.
//!
//! Servers are often launched through wrappers (`npx`, `uv run`, shell
//! scripts) whose grandchildren hold the pipes open, so each server gets its
//! own process group and shutdown signals the whole group.
//!
//! A descendant that daemonises (`setsid()`, a double fork) leaves the
//! group. Each server therefore also carries a tag in its environment,
//! which its descendants inherit: shutdown ends the group and every process
//! carrying the tag (a [`ServerTree`]). mcpscope is a child subreaper, so a
//! daemon whose parent died is re-parented to mcpscope, not to init, and its
//! status is collected here.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus};
use std::time::Duration;

pub use super::watchdog::{WATCHDOG_NAME, Watchdog};

/// The environment variable that marks a server's descendants.
pub const TREE_TAG_VAR: &str = "MCPSCOPE_SERVER";

pub use super::super::{Stop, Usage};

impl Stop {
    /// What is sent, as notes name it ("SIGTERM").
    pub fn name(self) -> &'static str {
        signal_name(self.signal())
    }

    fn signal(self) -> i32 {
        match self {
            Stop::Gently => libc::SIGTERM,
            Stop::ForGood => libc::SIGKILL,
        }
    }
}

/// A server's process group and every process that carries its tag.
#[derive(Clone, Debug)]
pub struct ServerTree {
    pub pgid: u32,
    tag: String,
    /// Strays seen alive: once dead, their environment can no longer be
    /// read, but an adopted one still has to be reaped.
    seen: std::sync::Arc<std::sync::Mutex<std::collections::BTreeSet<u32>>>,
}

impl PartialEq for ServerTree {
    fn eq(&self, other: &Self) -> bool {
        self.pgid == other.pgid && self.tag == other.tag
    }
}

impl Eq for ServerTree {}

impl ServerTree {
    #[cfg(all(test, target_os = "linux"))]
    pub(crate) fn for_tests(pgid: u32, tag: &str) -> Self {
        Self::with_tag(pgid, tag.to_owned())
    }

    /// The tree of a child started from a command [`prepare_tree`] readied.
    pub(crate) fn started(child: &std::process::Child, tag: String) -> std::io::Result<Self> {
        Ok(Self::with_tag(child.id(), tag))
    }

    pub(crate) fn with_tag(pgid: u32, tag: String) -> Self {
        Self {
            pgid,
            tag,
            seen: Default::default(),
        }
    }

    /// `NAME=tag`, as it appears in `/proc/PID/environ`.
    pub(super) fn marker(&self) -> Vec<u8> {
        format!("{TREE_TAG_VAR}={}", self.tag).into_bytes()
    }

    /// Processes outside the group that carry the tag: (pid, zombie).
    pub fn strays(&self) -> Vec<(u32, bool)> {
        let marker = self.marker();
        let me = std::process::id();
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        let mut found = Vec::new();
        for entry in dir.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            if pid == me {
                continue;
            }
            let Some(stat) = ProcStat::read(pid) else { continue };
            if stat.pgrp == self.pgid || stat.state == 'X' {
                continue;
            }
            let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
                continue;
            };
            if environ.split(|&b| b == 0).any(|var| var == marker.as_slice()) {
                found.push((pid, stat.state == 'Z'));
            }
        }
        let mut seen = self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        seen.extend(found.iter().map(|&(pid, _)| pid));
        found
    }

    /// Stops the tree: the group and every stray that can still run.
    /// False when nothing was left to stop.
    pub fn stop(&self, how: Stop) -> bool {
        self.signal(how.signal())
    }

    /// Sends `signal` to the group and to every stray that can still run.
    /// False when nothing was left to signal.
    pub(super) fn signal(&self, signal: i32) -> bool {
        let mut any = signal_group(self.pgid, signal);
        for (pid, zombie) in self.strays() {
            // SAFETY: plain syscall to a process that carries our server's tag.
            if !zombie && unsafe { libc::kill(pid as libc::pid_t, signal) } == 0 {
                any = true;
            }
        }
        any
    }

    /// Whether anything of the server is still alive (zombies included:
    /// those mcpscope adopted are reaped first).
    pub fn alive(&self) -> bool {
        self.reap_adopted();
        group_alive(self.pgid) || self.strays().iter().any(|&(_, zombie)| !zombie)
    }

    /// Whether anything of the server can still run (zombies are over).
    pub fn running(&self) -> bool {
        self.reap_adopted();
        group_running(self.pgid) || self.strays().iter().any(|&(_, zombie)| !zombie)
    }

    /// Collects the status of the server's processes that ended as
    /// mcpscope's children (the subreaper adopted them when their parent
    /// died), so they do not linger as zombies and keep the group "alive".
    /// Only members of the group other than its leader, and strays seen
    /// carrying the tag: std owns the status of the children it started.
    pub fn reap_adopted(&self) {
        let me = std::process::id();
        let Ok(dir) = std::fs::read_dir("/proc") else { return };
        let seen = self
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        for entry in dir.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            if pid == self.pgid {
                continue;
            }
            let Some(stat) = ProcStat::read(pid) else { continue };
            if stat.state == 'Z' && stat.ppid == me && (stat.pgrp == self.pgid || seen.contains(&pid)) {
                // SAFETY: collecting the status of our own (adopted) child, without blocking.
                unsafe { libc::waitpid(pid as libc::pid_t, std::ptr::null_mut(), libc::WNOHANG) };
            }
        }
    }
}

/// The fields of `/proc/PID/stat` this module reads.
struct ProcStat {
    state: char,
    ppid: u32,
    pgrp: u32,
}

impl ProcStat {
    fn read(pid: u32) -> Option<ProcStat> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The name (field 2) may hold spaces and parentheses: count from the last ')'.
        let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
        let state = fields.next()?.chars().next()?;
        let ppid = fields.next()?.parse().ok()?;
        let pgrp = fields.next()?.parse().ok()?;
        Some(ProcStat { state, ppid, pgrp })
    }
}

/// Makes mcpscope the one that inherits its servers' orphaned descendants
/// (instead of init), once per process.
pub(crate) fn become_subreaper() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: plain prctl on this process. macOS has no subreapers: a
        // daemon whose parent died goes to launchd, which reaps it.
        #[cfg(target_os = "linux")]
        unsafe {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        };
    });
}

/// Starts a program mcpscope hands work to but does not serve as a server
/// (the browser a View or a sign-in opens in): in a group of its own, its
/// descendants tagged like a server's, and a thread that waits for it and
/// then, for as long as anything of it runs, reaps what it leaves orphaned
/// to mcpscope (the subreaper): a browser's crash handler and its helpers
/// were left as zombies under the app. Nothing of it is killed: it is the
/// user's program, and outlives mcpscope if it likes.
pub fn spawn_reaped(cmd: &mut Command) -> std::io::Result<u32> {
    become_subreaper();
    let tag = super::super::new_tree_tag();
    cmd.env(TREE_TAG_VAR, &tag).process_group(0);
    let mut child = cmd.spawn()?;
    let pid = child.id();
    let tree = ServerTree::with_tag(pid, tag);
    let reaper = std::thread::Builder::new()
        .name("mcpscope-reaper".into())
        .spawn(move || {
            let _ = child.wait();
            while tree.alive() {
                std::thread::sleep(std::time::Duration::from_millis(500));
            }
        });
    // Without a thread (none could be made) the child is reaped when
    // mcpscope ends; the browser is open all the same.
    drop(reaper);
    Ok(pid)
}

/// Makes `cmd` the leader of a new process group that the kernel kills if
/// mcpscope dies, and mcpscope the subreaper of what it leaves behind.
pub fn prepare_tree(cmd: &mut Command) {
    become_subreaper();
    cmd.process_group(0);
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    // If mcpscope itself is killed, the server is killed with it instead of
    // being left to run unobserved.
    // (macOS has no PDEATHSIG: the watchdog alone does it there.)
    #[cfg(target_os = "linux")]
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

/// The signal that ended the process, if one did.
pub fn exit_signal(status: &ExitStatus) -> Option<i32> {
    status.signal()
}

/// Whether a command names a path rather than a program to look up in PATH
/// (as `execvp` decides: a slash).
pub fn names_a_path(program: &str) -> bool {
    program.contains('/')
}

/// The files in `dir` that running `program` may mean: the one.
pub fn program_candidates(dir: &std::path::Path, program: &str) -> Vec<std::path::PathBuf> {
    vec![dir.join(program)]
}

/// Why the system refused to start `program`, when the reason is this
/// system's own rather than what the error says: none on Unix.
pub fn refusal(_program: &std::path::Path, _e: &std::io::Error) -> Option<String> {
    None
}

/// Whether the file may be run (any x bit).
pub fn is_executable(m: &std::fs::Metadata) -> bool {
    m.permissions().mode() & 0o111 != 0
}

/// Sends `signal` to every process in the group led by `pgid`.
/// Returns false when no process is left in the group.
pub fn signal_group(pgid: u32, signal: i32) -> bool {
    // SAFETY: plain syscall; pgid comes from a child we spawned as group leader.
    unsafe { libc::killpg(pgid as libc::pid_t, signal) == 0 }
}

/// Whether any process of the group is still alive (zombies included).
pub fn group_alive(pgid: u32) -> bool {
    signal_group(pgid, 0)
}

/// Whether any process of the group can still run: alive and not a zombie.
///
/// A zombie has ended; it waits only for its parent to collect its status,
/// which for an orphan is init (or a subreaper), on init's own schedule:
/// some container inits take seconds, some never do. Nothing is left to end,
/// so mcpscope does not wait for it. When `/proc` cannot be read, this is
/// [`group_alive`].
pub fn group_running(pgid: u32) -> bool {
    if !group_alive(pgid) {
        return false;
    }
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return true;
    };
    dir.flatten().any(|entry| {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            return false;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return false; // gone meanwhile
        };
        // After the name: state (field 3), ppid, pgrp (field 5).
        let mut fields = stat.rsplit_once(')').map_or("", |(_, rest)| rest).split_whitespace();
        let state = fields.next().unwrap_or("");
        if fields.nth(1).and_then(|g| g.parse::<u32>().ok()) != Some(pgid) {
            return false;
        }
        match state {
            // A leader that called pthread_exit shows as a zombie while its
            // other threads run: count the threads.
            "Z" => std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|status| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix("Threads:"))
                    .and_then(|n| n.trim().parse::<u32>().ok())
                    .is_some_and(|n| n > 1)
            }),
            "X" | "x" => false,
            _ => true,
        }
    })
}

pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        _ => "signal",
    }
}

/// One of proc_pidinfo's structs for `pid`, if the whole of it was filled.
///
/// # Safety
/// `T` must be the plain C struct that `flavor` fills.
#[cfg(target_os = "macos")]
unsafe fn pid_info<T>(pid: u32, flavor: libc::c_int) -> Option<T> {
    let size = libc::c_int::try_from(std::mem::size_of::<T>()).ok()?;
    let mut info = std::mem::MaybeUninit::<T>::zeroed();
    // SAFETY: a buffer of the size given; the caller names its type.
    let n = unsafe {
        libc::proc_pidinfo(
            libc::c_int::try_from(pid).ok()?,
            flavor,
            0,
            info.as_mut_ptr().cast(),
            size,
        )
    };
    // SAFETY: all of it was written (and zeroed before).
    (n == size).then(|| unsafe { info.assume_init() })
}

/// A process's CPU time and resident memory (proc_pidinfo's task info),
/// if it can be read. (mach_timebase_info is deprecated in libc for the
/// mach2 crate, which would be a dependency for this one call.)
#[cfg(target_os = "macos")]
#[allow(deprecated)]
pub fn usage(pid: u32) -> Option<Usage> {
    // SAFETY: proc_taskinfo is what PROC_PIDTASKINFO fills.
    let info: libc::proc_taskinfo = unsafe { pid_info(pid, libc::PROC_PIDTASKINFO)? };
    // The times are in Mach absolute time units (nanoseconds on Intel, not
    // on Apple silicon): converted with the timebase.
    let mut timebase = libc::mach_timebase_info { numer: 1, denom: 1 };
    // SAFETY: fills the struct given.
    unsafe { libc::mach_timebase_info(&mut timebase) };
    let ticks = u128::from(info.pti_total_user + info.pti_total_system);
    let nanos = ticks * u128::from(timebase.numer) / u128::from(timebase.denom.max(1));
    Some(Usage {
        cpu: Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX)),
        resident_kib: info.pti_resident_size / 1024,
    })
}

/// A process's CPU time and resident memory (from /proc), if it can be read.
#[cfg(not(target_os = "macos"))]
pub fn usage(pid: u32) -> Option<Usage> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command may hold spaces and parentheses: fields start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let resident_kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    Some(Usage {
        cpu: Duration::from_secs_f64((utime + stime) as f64 / clock_ticks()),
        resident_kib,
    })
}

#[cfg(not(target_os = "macos"))]
fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

/// Asks a process mcpscope did not start to end (SIGTERM).
pub fn ask_to_stop(pid: u32) -> std::io::Result<()> {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return Err(std::io::Error::from(std::io::ErrorKind::NotFound));
    };
    // SAFETY: plain syscall; the caller checked whose pid it is.
    if unsafe { libc::kill(pid, libc::SIGTERM) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Whether a process exists (another user's too) and has not exited: a
/// zombie has, and lingers only until its parent collects it.
pub fn is_running(pid: u32) -> bool {
    let Ok(raw) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if raw <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists.
    let exists =
        unsafe { libc::kill(raw, 0) } == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    exists && !has_exited(pid)
}

/// Whether a process has exited but not been reaped yet (state Z or X in /proc/PID/stat).
pub(super) fn has_exited(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat.rfind(')').and_then(|i| stat[i + 1..].split_whitespace().next());
    matches!(state, Some("Z" | "X"))
}

/// When a process started, as a number that tells it from a later process
/// given the same pid (microseconds since the epoch): only ever compared.
#[cfg(target_os = "macos")]
pub fn start_stamp(pid: u32) -> Option<u64> {
    // SAFETY: proc_bsdinfo is what PROC_PIDTBSDINFO fills.
    let info: libc::proc_bsdinfo = unsafe { pid_info(pid, libc::PROC_PIDTBSDINFO)? };
    Some(info.pbi_start_tvsec * 1_000_000 + info.pbi_start_tvusec)
}

/// When a process started, as a number that tells it from a later process
/// given the same pid (clock ticks after boot): only ever compared.
#[cfg(not(target_os = "macos"))]
pub fn start_stamp(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

/// Moves this process's stdout to a descriptor the caller alone holds (fd 1
/// then points at /dev/null), so closing it is a real disconnect for the
/// reader. Close-on-exec: a server mcpscope starts must not hold the pipe
/// open too, or closing ours would not end it.
pub fn take_stdout() -> std::io::Result<std::fs::File> {
    use std::os::fd::{AsFd, AsRawFd};
    let out = std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned()?);
    let null = std::fs::OpenOptions::new().write(true).open("/dev/null")?;
    // SAFETY: both descriptors are open; dup2 replaces fd 1 atomically.
    if unsafe { libc::dup2(null.as_raw_fd(), 1) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(out)
}

/// Gives the heap pages malloc holds free back to the system (glibc keeps
/// them in its arenas after a large load); elsewhere nothing to do.
pub fn give_freed_memory_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases memory malloc holds free; it is
    // thread-safe and touches no live allocation.
    unsafe {
        libc::malloc_trim(0);
    }
}
