//! Linux, and macOS where POSIX is enough: what only Linux has (`/proc`,
//! `prctl`, `close_range`, `pipe2`) is marked so, with macOS's way beside it
//! (`proc_pidinfo`) or, where there is none, said what is left out.

pub mod fs;
pub mod interrupt;
pub mod ipc;
pub mod net;
pub mod process;
mod watchdog;

// About /proc: Linux's.
#[cfg(all(test, target_os = "linux"))]
mod tests;

/// The calling thread's errno (async-signal-safe).
///
/// # Safety
/// Plain read of this thread's errno.
pub(super) unsafe fn errno() -> i32 {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    // SAFETY: this thread's errno.
    unsafe {
        *libc::__errno_location()
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    // SAFETY: this thread's errno.
    unsafe {
        *libc::__error()
    }
}

/// Sets the calling thread's errno (async-signal-safe).
///
/// # Safety
/// Plain write of this thread's errno.
pub(super) unsafe fn set_errno(e: i32) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    // SAFETY: this thread's errno.
    unsafe {
        *libc::__errno_location() = e
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    // SAFETY: this thread's errno.
    unsafe {
        *libc::__error() = e
    }
}

/// A pipe whose ends are not inherited by the programs mcpscope starts.
/// Linux makes both ends close-on-exec at once (pipe2); elsewhere they are
/// marked just after, where a fork on another thread in between could take
/// them along (the watchdog closes every descriptor it holds first).
pub(super) fn cloexec_pipe() -> std::io::Result<(libc::c_int, libc::c_int)> {
    let mut fds = [0 as libc::c_int; 2];
    #[cfg(any(target_os = "linux", target_os = "android"))]
    // SAFETY: fds has room for two descriptors.
    let made = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == 0;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    // SAFETY: fds has room for two descriptors; fcntl on them.
    let made = unsafe {
        libc::pipe(fds.as_mut_ptr()) == 0
            && libc::fcntl(fds[0], libc::F_SETFD, libc::FD_CLOEXEC) == 0
            && libc::fcntl(fds[1], libc::F_SETFD, libc::FD_CLOEXEC) == 0
    };
    if !made {
        return Err(std::io::Error::last_os_error());
    }
    Ok((fds[0], fds[1]))
}
