//! Being asked from outside to stop: SIGINT, SIGTERM and SIGHUP.
//!
//! The handler only writes the signal number to a pipe (async-signal-safe);
//! a thread reads it and hands it on.

use std::sync::atomic::{AtomicI32, Ordering};

static PIPE_WRITE: AtomicI32 = AtomicI32::new(-1);
static CAUGHT: AtomicI32 = AtomicI32::new(0);

/// A request to stop: here, the signal that carried it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interrupt(i32);

impl Interrupt {
    /// As the system names it: "SIGINT".
    pub fn name(self) -> &'static str {
        super::process::signal_name(self.0)
    }

    /// The status a program stopped by it ends with: 128 + the signal, as
    /// shells report a program killed by it.
    pub fn exit_status(self) -> u8 {
        (128 + self.0).clamp(0, 255) as u8
    }
}

/// The first interrupt since [`on_interrupt`] was called, if one came.
pub fn caught() -> Option<Interrupt> {
    match CAUGHT.load(Ordering::SeqCst) {
        0 => None,
        s => Some(Interrupt(s)),
    }
}

extern "C" fn on_signal(sig: libc::c_int) {
    // SAFETY: only async-signal-safe calls; errno is saved and restored.
    unsafe {
        let errno = super::errno();
        let _ = CAUGHT.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
        let fd = PIPE_WRITE.load(Ordering::SeqCst);
        if fd >= 0 {
            let byte = sig as u8;
            libc::write(fd, (&byte as *const u8).cast(), 1);
        }
        super::set_errno(errno);
    }
}

/// Calls `handle` on a thread of its own for each interrupt from now on.
/// Failing to install (very unlikely) leaves the default behaviour.
pub fn on_interrupt(handle: impl Fn(Interrupt) + Send + Sync + 'static) {
    let Ok((read_fd, write_fd)) = super::cloexec_pipe() else {
        return;
    };
    // A full pipe must never block the handler.
    // SAFETY: fcntl on our own descriptor.
    unsafe {
        let flags = libc::fcntl(write_fd, libc::F_GETFL);
        libc::fcntl(write_fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
    PIPE_WRITE.store(write_fd, Ordering::SeqCst);
    let spawned = std::thread::Builder::new()
        .name("mcpscope-signals".into())
        .spawn(move || {
            loop {
                let mut byte = 0u8;
                // SAFETY: reading one byte into a local from our own descriptor.
                let n = unsafe { libc::read(read_fd, (&mut byte as *mut u8).cast(), 1) };
                if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                if n != 1 {
                    return;
                }
                handle(Interrupt(i32::from(byte)));
            }
        });
    if spawned.is_err() {
        return;
    }
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: installing a handler that is async-signal-safe.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as usize;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}

/// The status of a command whose stdout was closed under it: 128 + SIGPIPE,
/// as a Unix tool killed by SIGPIPE ends.
pub const STDOUT_CLOSED_STATUS: u8 = 128 + libc::SIGPIPE as u8;
