//! Printing that never panics: `println!` aborts with a backtrace when stdout
//! is a closed pipe (`mcpscope lint X | head -c1`). Here a closed stdout is
//! remembered and further output is dropped; the command then ends quietly
//! with status 141 (128 + SIGPIPE) on Unix, as a tool killed by SIGPIPE would
//! (232, the system's "pipe is being closed", on Windows).
//! A stderr that cannot be written (a closed terminal) is ignored.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// The exit status of a command whose stdout was closed under it.
pub const STDOUT_CLOSED_STATUS: u8 = mcpscope_core::platform::interrupt::STDOUT_CLOSED_STATUS;

pub fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// Writes to stdout; after a broken pipe, nothing more is written. Control
/// characters other than newlines and tabs are shown escaped, as on stderr
/// (a report quotes the server; JSON output has none to escape).
pub fn out(args: std::fmt::Arguments) {
    if stdout_closed() {
        return;
    }
    let text = args.to_string();
    let safe = mcpscope_core::text::terminal_safe(&text, true);
    let mut o = std::io::stdout().lock();
    if o.write_all(safe.as_bytes()).and_then(|_| o.flush()).is_err() {
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

/// Writes to stderr with every control character that is not a newline or
/// a tab shown as an escape (`\u{1b}`): what mcpscope says there often
/// quotes a peer (an error message, a server's stderr, an authorization
/// server's error_description, `--trace`'s frames), and a peer must not
/// retitle, clear or forge the user's terminal.
pub fn err(args: std::fmt::Arguments) {
    let text = args.to_string();
    let safe = mcpscope_core::text::terminal_safe(&text, true);
    let _ = std::io::stderr().lock().write_all(safe.as_bytes());
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

/// The server's stderr passed through to a terminal (the stdio proxy run by
/// hand): control bytes other than newline and tab are shown escaped. When
/// stderr is not a terminal (a client's log), bytes pass unchanged.
pub struct TerminalSafeBytes<W: Write> {
    inner: W,
    /// A 0xC2 that ended the last write: a C1 control (U+0080..U+009F) may
    /// be split across two writes.
    held: bool,
}

impl<W: Write> TerminalSafeBytes<W> {
    pub fn new(inner: W) -> Self {
        Self { inner, held: false }
    }
}

impl<W: Write> Write for TerminalSafeBytes<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut out = Vec::with_capacity(buf.len() + 8);
        let mut bytes = buf.iter().copied().peekable();
        if std::mem::take(&mut self.held) {
            match bytes.peek() {
                Some(&b) if (0x80..0xa0).contains(&b) => {
                    bytes.next();
                    out.extend_from_slice(format!("\\u{{{b:x}}}").as_bytes());
                }
                _ => out.push(0xc2),
            }
        }
        while let Some(b) = bytes.next() {
            match b {
                b'\n' | b'\t' => out.push(b),
                0..0x20 | 0x7f => out.extend_from_slice(format!("\\u{{{b:x}}}").as_bytes()),
                0xc2 => match bytes.peek() {
                    Some(&c) if (0x80..0xa0).contains(&c) => {
                        bytes.next();
                        out.extend_from_slice(format!("\\u{{{c:x}}}").as_bytes());
                    }
                    Some(_) => out.push(b),
                    None => self.held = true,
                },
                _ => out.push(b),
            }
        }
        self.inner.write_all(&out)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_bytes_reach_a_terminal_escaped_even_split_across_writes() {
        let mut w = TerminalSafeBytes::new(Vec::new());
        w.write_all(b"a\x1b]0;x\x07 \xc2").unwrap();
        w.write_all(b"\x9b2J line\n\ttab \xc3\xa9\r").unwrap();
        assert_eq!(
            String::from_utf8(w.inner).unwrap(),
            "a\\u{1b}]0;x\\u{7} \\u{9b}2J line\n\ttab é\\u{d}"
        );
    }
}
