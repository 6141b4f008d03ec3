//! SIGINT, SIGTERM and SIGHUP for the subcommands that run servers (`call`,
//! `proxy`, `doctor`, `listen`, the app): instead of mcpscope vanishing and
//! leaving the server's children running, every live session runs its
//! shutdown sequence (close stdin, SIGTERM, SIGKILL to the server's process
//! group) and records why in its capture; then mcpscope exits with 128 + the
//! signal. A second signal exits at once (the sessions' watchdogs still end
//! the server groups).
//!
//! The handler only writes the signal number to a pipe (async-signal-safe);
//! a thread reads it and does the rest.

use mcpscope_core::transport::lifecycle;
use mcpscope_core::transport::process::signal_name;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

static PIPE_WRITE: AtomicI32 = AtomicI32::new(-1);
static CAUGHT: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    // SAFETY: only async-signal-safe calls; errno is saved and restored.
    unsafe {
        let errno = *libc::__errno_location();
        let _ = CAUGHT.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
        let fd = PIPE_WRITE.load(Ordering::SeqCst);
        if fd >= 0 {
            let byte = sig as u8;
            libc::write(fd, (&byte as *const u8).cast(), 1);
        }
        *libc::__errno_location() = errno;
    }
}

/// What to do once the sessions were asked to stop.
#[derive(Clone, Copy)]
pub enum Then {
    /// The main thread notices its session ended and returns; exit only if
    /// it has not after `grace` (a backstop).
    Return { grace: Duration },
    /// Nothing on the main thread will notice (the app's event loop): exit
    /// as soon as every session is closed.
    Exit,
}

/// The signal that stopped mcpscope, if one did.
pub fn caught() -> Option<i32> {
    match CAUGHT.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// Installs the handlers. Failing to (very unlikely) leaves the default
/// behaviour, which the watchdogs still make safe.
pub fn install(then: Then) {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: fds has room for two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return;
    }
    let (read_fd, write_fd) = (fds[0], fds[1]);
    // A full pipe must never block the handler.
    // SAFETY: fcntl on our own descriptor.
    unsafe {
        let flags = libc::fcntl(write_fd, libc::F_GETFL);
        libc::fcntl(write_fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
    PIPE_WRITE.store(write_fd, Ordering::SeqCst);
    let spawned = std::thread::Builder::new()
        .name("mcpscope-signals".into())
        .spawn(move || watch(read_fd, then));
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

fn watch(read_fd: libc::c_int, then: Then) {
    let mut seen = 0;
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
        let sig = i32::from(byte);
        seen += 1;
        if seen > 1 {
            crate::errln!("mcpscope: {} again: exiting now", signal_name(sig));
            std::process::exit(128 + sig);
        }
        let name = signal_name(sig);
        lifecycle::request_stop(format!("mcpscope received {name}"));
        let live = lifecycle::live();
        if live > 0 {
            crate::errln!(
                "mcpscope: received {name}: shutting down {live} server session(s) (close stdin, SIGTERM, SIGKILL); \
                 {name} again to exit at once"
            );
        }
        let code = 128 + CAUGHT.load(Ordering::SeqCst).max(1);
        match then {
            Then::Exit => {
                lifecycle::wait_idle(Duration::from_secs(30));
                std::process::exit(code);
            }
            Then::Return { grace } => {
                std::thread::spawn(move || {
                    std::thread::sleep(grace);
                    lifecycle::wait_idle(Duration::from_secs(10));
                    std::process::exit(code);
                });
            }
        }
    }
}
