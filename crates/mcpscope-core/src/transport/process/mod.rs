//! Starting a server process and ending it (and everything it started).
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

use std::ffi::OsString;
use std::fmt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};

/// What to run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerSpec {
    pub program: String,
    pub args: Vec<String>,
    /// Added to (or overriding) the inherited environment.
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
}

impl ServerSpec {
    pub fn new(program: impl Into<String>, args: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }

    /// The command line as a person would type it.
    pub fn display(&self) -> String {
        std::iter::once(&self.program)
            .chain(&self.args)
            .map(|a| shell_quote(a))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Quotes an argument for a POSIX shell when it needs it.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:@,+%".contains(&b))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Why a server could not be started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpawnError {
    pub program: String,
    /// Where the program was found, if it was.
    pub resolved: Option<PathBuf>,
    pub message: String,
}

impl fmt::Display for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.resolved {
            Some(path) if path.as_os_str() != self.program.as_str() => {
                write!(f, "{} ({}): {}", self.program, path.display(), self.message)
            }
            _ => write!(f, "{}: {}", self.program, self.message),
        }
    }
}

impl std::error::Error for SpawnError {}

/// Finds `program` the way the child's `execvp` would: a path with a slash is
/// taken relative to the working directory, anything else is looked up in PATH.
pub fn resolve_program(spec: &ServerSpec) -> Result<PathBuf, SpawnError> {
    let program = &spec.program;
    let fail = |message: String, resolved: Option<PathBuf>| SpawnError {
        program: program.clone(),
        resolved,
        message,
    };
    if program.is_empty() {
        return Err(fail("no command given".into(), None));
    }
    if program.contains('/') {
        let path = match &spec.cwd {
            Some(cwd) if Path::new(program).is_relative() => cwd.join(program),
            _ => PathBuf::from(program),
        };
        return match std::fs::metadata(&path) {
            Ok(m) if m.is_dir() => Err(fail("is a directory".into(), Some(path))),
            Ok(m) if !is_executable(&m) => Err(fail("permission denied (not executable)".into(), Some(path))),
            Ok(_) => Ok(path),
            Err(e) => Err(fail(e.to_string(), Some(path))),
        };
    }
    let path_var: OsString = spec
        .env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| OsString::from(v))
        .or_else(|| std::env::var_os("PATH"))
        .unwrap_or_default();
    for dir in std::env::split_paths(&path_var) {
        let dir = match &spec.cwd {
            Some(cwd) if dir.is_relative() => cwd.join(dir),
            _ => dir,
        };
        let candidate = dir.join(program);
        if let Ok(m) = std::fs::metadata(&candidate)
            && m.is_file()
            && is_executable(&m)
        {
            return Ok(candidate);
        }
    }
    Err(fail(
        format!(
            "not found in PATH ({})",
            std::env::split_paths(&path_var)
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(":")
        ),
        None,
    ))
}

fn is_executable(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode() & 0o111 != 0
}

/// Variables mcpscope changed for itself (name, value before: `None` when
/// unset) that servers get as they were. Set at most once, at start-up.
static RESTORED_FOR_SERVERS: std::sync::OnceLock<Vec<(OsString, Option<OsString>)>> = std::sync::OnceLock::new();

/// Servers started from now on see these variables as they were before
/// mcpscope changed them for itself (`None`: unset), unless their spec sets
/// them. Only the first call counts.
pub fn restore_for_servers(vars: Vec<(OsString, Option<OsString>)>) {
    let _ = RESTORED_FOR_SERVERS.set(vars);
}

/// A started server with its three pipes.
pub struct Spawned {
    pub child: Child,
    pub program: PathBuf,
    /// Everything the server started, daemons included.
    pub tree: ServerTree,
}

/// The environment variable that marks a server's descendants.
pub const TREE_TAG_VAR: &str = "MCPSCOPE_SERVER";

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
    /// A tag no other server of any mcpscope shares: pid, sequence, time.
    fn new_tag() -> String {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        format!(
            "{}.{}.{nanos}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        )
    }

    #[cfg(test)]
    pub(crate) fn for_tests(pgid: u32, tag: &str) -> Self {
        Self::with_tag(pgid, tag.to_owned())
    }

    fn with_tag(pgid: u32, tag: String) -> Self {
        Self {
            pgid,
            tag,
            seen: Default::default(),
        }
    }

    /// `NAME=tag`, as it appears in `/proc/PID/environ`.
    fn marker(&self) -> Vec<u8> {
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

    /// Sends `signal` to the group and to every stray that can still run.
    /// False when nothing was left to signal.
    pub fn signal(&self, signal: i32) -> bool {
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
fn become_subreaper() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: plain prctl on this process.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
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
    let tag = ServerTree::new_tag();
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

/// Starts the server in a new process group with piped stdio.
pub fn spawn(spec: &ServerSpec) -> Result<Spawned, SpawnError> {
    let program = resolve_program(spec)?;
    if let Some(cwd) = &spec.cwd
        && !cwd.is_dir()
    {
        return Err(SpawnError {
            program: spec.program.clone(),
            resolved: Some(program),
            message: format!("working directory {} does not exist", cwd.display()),
        });
    }
    become_subreaper();
    let tag = ServerTree::new_tag();
    let mut cmd = Command::new(&program);
    for (name, before) in RESTORED_FOR_SERVERS.get().into_iter().flatten() {
        match before {
            Some(value) => cmd.env(name, value),
            None => cmd.env_remove(name),
        };
    }
    cmd.args(&spec.args)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .env(TREE_TAG_VAR, &tag)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(cwd);
    }
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    // If mcpscope itself is killed, the server is killed with it instead of
    // being left to run unobserved.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    match cmd.spawn() {
        Ok(child) => {
            let tree = ServerTree::with_tag(child.id(), tag);
            Ok(Spawned { child, program, tree })
        }
        Err(e) => {
            let message = match e.kind() {
                // The file exists (it was resolved), so ENOENT means its
                // `#!` interpreter does not: say which one.
                std::io::ErrorKind::NotFound => missing_interpreter(&program).unwrap_or_else(|| e.to_string()),
                _ => e.to_string(),
            };
            Err(SpawnError {
                program: spec.program.clone(),
                resolved: Some(program),
                message,
            })
        }
    }
}

/// Why a script that exists cannot be run: its `#!` line names an
/// interpreter that is not there (or carries a Windows line ending).
fn missing_interpreter(script: &Path) -> Option<String> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(script).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = &line[..line.iter().position(|&b| b == b'\n').unwrap_or(line.len())];
    let text = String::from_utf8_lossy(line);
    let interpreter = text.split([' ', '\t']).find(|w| !w.is_empty())?;
    if let Some(bare) = interpreter.strip_suffix('\r') {
        return Some(format!(
            "its #! line ends with a carriage return (Windows line endings), so the interpreter {bare:?} \
             is looked up as {interpreter:?}, which does not exist: convert the file to LF line endings"
        ));
    }
    if Path::new(interpreter).exists() {
        return None;
    }
    Some(format!(
        "the interpreter named on its #! line, {interpreter}, does not exist (the script itself does)"
    ))
}

/// A process outside the server's group that ends the group if mcpscope
/// dies without doing so itself (SIGKILL cannot be caught, and
/// `PR_SET_PDEATHSIG` reaches only the direct child, not what it started).
///
/// It waits on a pipe whose only writer is mcpscope. [`Watchdog::stand_down`]
/// writes a byte: the group is gone, nothing to do. End of file without that
/// byte means mcpscope is gone (or gave up): the watchdog sends SIGTERM to
/// the group, waits `grace`, then SIGKILL, and exits.
///
/// It names itself [`WATCHDOG_NAME`] (its command line, and its `comm` cut to
/// 15 bytes: `mcpscope-watchd`), so that `ps` and `pgrep -f` tell it from
/// mcpscope, whose command line a bare `fork` would otherwise keep.
pub struct Watchdog {
    pid: libc::pid_t,
    fd: Option<std::os::fd::OwnedFd>,
}

/// The watchdog's process name.
pub const WATCHDOG_NAME: &std::ffi::CStr = c"mcpscope-watchdog";

/// Where this process's command line lies in its own memory, `[start, end)`
/// (fields 48 and 49 of `/proc/self/stat`: `ps` and `pgrep -f` read it
/// through `/proc/PID/cmdline`).
fn own_command_line_area() -> Option<(usize, usize)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The name (field 2) may hold spaces and parentheses: count from the last ')'.
    // Field 3 is the first after it, so field 48 is the 46th.
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace().skip(45);
    let start: usize = fields.next()?.parse().ok()?;
    let end: usize = fields.next()?.parse().ok()?;
    (start != 0 && end > start).then_some((start, end))
}

impl Watchdog {
    pub fn start(tree: &ServerTree, grace: std::time::Duration) -> std::io::Result<Watchdog> {
        let pgid = tree.pgid;
        // The marker the child looks for, built before fork (no allocation after it).
        let mut marker = [0u8; MARKER_MAX];
        let bytes = tree.marker();
        let marker_len = bytes.len().min(MARKER_MAX);
        marker[..marker_len].copy_from_slice(&bytes[..marker_len]);
        use std::os::fd::FromRawFd;
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: fds has room for two descriptors.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let (read_fd, write_fd) = (fds[0], fds[1]);
        // Everything the child needs is computed before fork: after it, only
        // async-signal-safe calls (no allocation, no locks).
        // SAFETY: getrlimit writes into a local struct.
        let max_fd = unsafe {
            let mut rl = std::mem::zeroed::<libc::rlimit>();
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) == 0 && rl.rlim_cur != libc::RLIM_INFINITY {
                rl.rlim_cur.min(1 << 20) as libc::c_int
            } else {
                1 << 16
            }
        };
        let pgid = pgid as libc::pid_t;
        let steps = (grace.as_millis() / 50).max(1) as u32;
        let command_line = own_command_line_area();
        // SAFETY: the child runs only async-signal-safe functions and _exits.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            let e = std::io::Error::last_os_error();
            // SAFETY: closing descriptors we own.
            unsafe {
                libc::close(read_fd);
                libc::close(write_fd);
            }
            return Err(e);
        }
        if pid == 0 {
            // SAFETY: the child of fork, see above.
            unsafe { watchdog_main(read_fd, max_fd, pgid, steps, command_line, &marker[..marker_len]) }
        }
        // SAFETY: closing the read end we no longer need; write_fd is ours.
        unsafe { libc::close(read_fd) };
        Ok(Watchdog {
            pid,
            fd: Some(unsafe { std::os::fd::OwnedFd::from_raw_fd(write_fd) }),
        })
    }

    /// The group is gone: the watchdog exits without signalling anything.
    pub fn stand_down(mut self) {
        if let Some(fd) = self.fd.take() {
            use std::os::fd::AsRawFd;
            // SAFETY: writing one byte from a local to a descriptor we own.
            unsafe { libc::write(fd.as_raw_fd(), b"x".as_ptr().cast(), 1) };
        }
        self.reap();
    }

    /// Hands the group over: the watchdog ends it (SIGTERM, then SIGKILL).
    pub fn release(mut self) {
        self.fd = None;
        let pid = self.pid;
        self.pid = 0;
        // Reaped on the side: the watchdog may take the grace period.
        let _ = std::thread::Builder::new()
            .name("mcpscope-watchdog-reaper".into())
            .spawn(move || {
                // SAFETY: waiting for our own child.
                unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
            });
    }

    fn reap(&mut self) {
        if self.pid > 0 {
            // SAFETY: waiting for our own child, which exits at once.
            unsafe { libc::waitpid(self.pid, std::ptr::null_mut(), 0) };
            self.pid = 0;
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        if self.pid > 0 {
            // Not stood down: the same as release.
            let w = Watchdog {
                pid: self.pid,
                fd: self.fd.take(),
            };
            self.pid = 0;
            w.release();
        }
    }
}

/// The watchdog process. Never returns.
///
/// # Safety
/// Only in the child of `fork`: calls nothing but async-signal-safe functions.
/// `command_line` is this process's command line area (see
/// [`own_command_line_area`]), read before the fork.
unsafe fn watchdog_main(
    read_fd: libc::c_int,
    max_fd: libc::c_int,
    pgid: libc::pid_t,
    steps: u32,
    command_line: Option<(usize, usize)>,
    marker: &[u8],
) -> ! {
    unsafe {
        // Hold nothing of mcpscope's: not the server's pipes (the server
        // must see EOF on its stdin), not a proxy's client pipes.
        let below = read_fd > 0 && libc::syscall(libc::SYS_close_range, 0u32, (read_fd - 1) as u32, 0u32) == 0;
        let above = libc::syscall(libc::SYS_close_range, (read_fd + 1) as u32, u32::MAX, 0u32) == 0;
        if !(below || read_fd == 0) || !above {
            // An older kernel without close_range.
            for fd in 0..max_fd {
                if fd != read_fd {
                    libc::close(fd);
                }
            }
        }
        // Out of mcpscope's process group: Ctrl-C and a hangup of the
        // terminal, or a signal to mcpscope's whole group, do not reach it.
        libc::setpgid(0, 0);
        name_watchdog(command_line);
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGHUP, libc::SIG_IGN);
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        let mut byte = 0u8;
        loop {
            let n = libc::read(read_fd, (&mut byte as *mut u8).cast(), 1);
            if n == 1 {
                libc::_exit(0); // stood down
            }
            if n < 0 && *libc::__errno_location() == libc::EINTR {
                continue;
            }
            break; // end of file: mcpscope is gone
        }
        let group = libc::killpg(pgid, libc::SIGTERM) == 0;
        let strays = signal_tagged(marker, pgid, libc::SIGTERM);
        if group || strays {
            let pause = libc::timespec {
                tv_sec: 0,
                tv_nsec: 50_000_000,
            };
            for _ in 0..steps {
                libc::nanosleep(&pause, std::ptr::null_mut());
                if libc::killpg(pgid, 0) != 0 && !signal_tagged(marker, pgid, 0) {
                    libc::_exit(0);
                }
            }
            libc::killpg(pgid, libc::SIGKILL);
            signal_tagged(marker, pgid, libc::SIGKILL);
        }
        libc::_exit(0)
    }
}

/// The longest tag marker the watchdog looks for.
const MARKER_MAX: usize = 128;

/// Sends `signal` to every process outside group `pgid` whose environment
/// holds `marker` (`NAME=tag`); true if one was found. For the watchdog:
/// raw syscalls and stack buffers only (it runs between fork and exit).
///
/// # Safety
/// Async-signal-safe; `marker` is at most [`MARKER_MAX`] bytes.
unsafe fn signal_tagged(marker: &[u8], pgid: libc::pid_t, signal: i32) -> bool {
    unsafe {
        let dir = libc::open(c"/proc".as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC);
        if dir < 0 {
            return false;
        }
        let me = libc::getpid();
        let mut found = false;
        let mut entries = [0u8; 4096];
        loop {
            let n = libc::syscall(libc::SYS_getdents64, dir, entries.as_mut_ptr(), entries.len());
            if n <= 0 {
                break;
            }
            let mut at = 0usize;
            while at < n as usize {
                // struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name.
                let reclen = u16::from_ne_bytes([entries[at + 16], entries[at + 17]]) as usize;
                let name = &entries[at + 19..at + reclen];
                at += reclen;
                let mut pid: libc::pid_t = 0;
                let mut digits = 0;
                for &b in name.iter().take_while(|&&b| b != 0) {
                    if !b.is_ascii_digit() {
                        digits = 0;
                        break;
                    }
                    pid = pid.saturating_mul(10).saturating_add((b - b'0') as libc::pid_t);
                    digits += 1;
                }
                if digits == 0 || pid == me || libc::getpgid(pid) == pgid {
                    continue;
                }
                if environ_holds(pid, marker) && libc::kill(pid, signal) == 0 {
                    found = true;
                }
            }
        }
        libc::close(dir);
        found
    }
}

/// Whether `/proc/PID/environ` holds `marker` as one whole variable.
///
/// # Safety
/// Async-signal-safe; `marker` is at most [`MARKER_MAX`] bytes.
unsafe fn environ_holds(pid: libc::pid_t, marker: &[u8]) -> bool {
    unsafe {
        // "/proc/" + up to 10 digits + "/environ" + NUL.
        let mut path = [0u8; 32];
        let prefix = b"/proc/";
        path[..prefix.len()].copy_from_slice(prefix);
        let mut digits = [0u8; 10];
        let mut d = digits.len();
        let mut v = pid as u32;
        loop {
            d -= 1;
            digits[d] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        let mut len = prefix.len();
        for &b in &digits[d..] {
            path[len] = b;
            len += 1;
        }
        for &b in b"/environ" {
            path[len] = b;
            len += 1;
        }
        let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return false;
        }
        // The current variable so far: a variable is matched when it ends
        // (a NUL) with exactly the marker's bytes.
        let mut chunk = [0u8; 4096];
        let mut matched = 0usize;
        let mut whole = true;
        let mut found = false;
        'read: loop {
            let n = libc::read(fd, chunk.as_mut_ptr().cast(), chunk.len());
            if n <= 0 {
                break;
            }
            for &b in &chunk[..n as usize] {
                if b == 0 {
                    if whole && matched == marker.len() {
                        found = true;
                        break 'read;
                    }
                    matched = 0;
                    whole = true;
                } else if whole && matched < marker.len() && marker[matched] == b {
                    matched += 1;
                } else {
                    whole = false;
                }
            }
        }
        libc::close(fd);
        found
    }
}

/// Gives the watchdog its own name: `comm` (`ps -o comm`, `pgrep`, cut by
/// the kernel to 15 bytes) and the command line (`ps -f`, `pgrep -f`),
/// overwritten in place as `setproctitle` does: [`WATCHDOG_NAME`] (cut to
/// fit), then zeros to the end of the area, whose last byte stays zero so
/// the kernel reads the area as it is and not on into the environment.
///
/// # Safety
/// Only in the child of `fork`, with `command_line` this process's own
/// command line area: plain writes to memory of this (single-threaded)
/// process, which nothing in it reads again before `_exit`.
unsafe fn name_watchdog(command_line: Option<(usize, usize)>) {
    unsafe {
        libc::prctl(libc::PR_SET_NAME, WATCHDOG_NAME.as_ptr(), 0, 0, 0);
        if let Some((start, end)) = command_line {
            let len = end - start;
            let name = WATCHDOG_NAME.to_bytes();
            let n = name.len().min(len - 1);
            let area = start as *mut u8;
            std::ptr::copy_nonoverlapping(name.as_ptr(), area, n);
            std::ptr::write_bytes(area.add(n), 0, len - n);
        }
    }
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

/// How a process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExitInfo {
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

impl ExitInfo {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// The shell convention: the code, or 128 + signal.
    pub fn shell_code(&self) -> i32 {
        self.code.or(self.signal.map(|s| 128 + s)).unwrap_or(1)
    }
}

impl From<ExitStatus> for ExitInfo {
    fn from(s: ExitStatus) -> Self {
        Self {
            code: s.code(),
            signal: s.signal(),
        }
    }
}

impl fmt::Display for ExitInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.code, self.signal) {
            (Some(c), _) => write!(f, "exited with code {c}"),
            (None, Some(s)) => write!(f, "was killed by signal {s} ({})", signal_name(s)),
            (None, None) => write!(f, "ended"),
        }
    }
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

#[cfg(test)]
mod tests;
