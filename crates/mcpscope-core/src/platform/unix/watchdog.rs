//! The watchdog: a process outside the server's group that ends the group
//! if mcpscope dies without doing so.

use super::process::ServerTree;

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
    pub(super) pid: libc::pid_t,
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
        let (read_fd, write_fd) = super::cloexec_pipe()?;
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
        #[cfg(target_os = "linux")]
        let closed = {
            let below = read_fd > 0 && libc::syscall(libc::SYS_close_range, 0u32, (read_fd - 1) as u32, 0u32) == 0;
            let above = libc::syscall(libc::SYS_close_range, (read_fd + 1) as u32, u32::MAX, 0u32) == 0;
            (below || read_fd == 0) && above
        };
        #[cfg(not(target_os = "linux"))]
        let closed = false;
        if !closed {
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
            if n < 0 && super::errno() == libc::EINTR {
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
#[cfg(not(target_os = "linux"))]
unsafe fn signal_tagged(_marker: &[u8], _pgid: libc::pid_t, _signal: i32) -> bool {
    // No /proc to find them by: a process that left the group is not
    // found here (macOS; see the module's notes).
    false
}

/// Sends `signal` to every process outside group `pgid` whose environment
/// holds `marker` (`NAME=tag`); true if one was found. For the watchdog:
/// raw syscalls and stack buffers only (it runs between fork and exit).
///
/// # Safety
/// Async-signal-safe; `marker` is at most [`MARKER_MAX`] bytes.
#[cfg(target_os = "linux")]
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
#[cfg(target_os = "linux")]
pub(super) unsafe fn environ_holds(pid: libc::pid_t, marker: &[u8]) -> bool {
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
        #[cfg(target_os = "linux")]
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
