//! Printing that never panics: `println!` aborts with a backtrace when stdout
//! is a closed pipe (`mcpscope lint X | head -c1`). Here a closed stdout is
//! remembered and further output is dropped; the command then ends quietly
//! with status 141 (128 + SIGPIPE), as a Unix tool killed by SIGPIPE would.
//! A stderr that cannot be written (a closed terminal) is ignored.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// The exit status of a command whose stdout was closed under it.
pub const STDOUT_CLOSED_STATUS: u8 = 128 + libc::SIGPIPE as u8;

pub fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// Writes to stdout; after a broken pipe, nothing more is written.
pub fn out(args: std::fmt::Arguments) {
    if stdout_closed() {
        return;
    }
    let mut o = std::io::stdout().lock();
    if o.write_fmt(args).and_then(|_| o.flush()).is_err() {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
    }
}

/// Writes raw bytes to stdout (for lines exactly as a server sent them).
pub fn out_bytes(bytes: &[u8]) {
    if stdout_closed() {
        return;
    }
    let mut o = std::io::stdout().lock();
    if o.write_all(bytes).and_then(|_| o.flush()).is_err() {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
    }
}

/// Buffered stdout for commands that print many lines (`filter`): one
/// flush at the end instead of one per line; a closed pipe is remembered
/// as for [`out`].
pub struct Buffered {
    w: std::io::BufWriter<std::io::StdoutLock<'static>>,
}

impl Buffered {
    pub fn new() -> Self {
        Self {
            w: std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock()),
        }
    }

    /// Writes `bytes`; false once stdout is closed (stop producing output).
    pub fn write(&mut self, bytes: &[u8]) -> bool {
        if stdout_closed() {
            return false;
        }
        if self.w.write_all(bytes).is_err() {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
            return false;
        }
        true
    }

    pub fn finish(mut self) {
        if !stdout_closed() && self.w.flush().is_err() {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
        }
    }
}

pub fn err(args: std::fmt::Arguments) {
    let _ = std::io::stderr().lock().write_fmt(args);
}

/// `println!` that survives a closed stdout.
#[macro_export]
macro_rules! outln {
    () => { $crate::cli::output::out(format_args!("\n")) };
    ($($t:tt)*) => { $crate::cli::output::out(format_args!("{}\n", format_args!($($t)*))) };
}

/// `eprintln!` that survives a closed stderr.
#[macro_export]
macro_rules! errln {
    ($($t:tt)*) => { $crate::cli::output::err(format_args!("{}\n", format_args!($($t)*))) };
}
