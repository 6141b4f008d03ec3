//! Printing that never panics: `println!` aborts with a backtrace when stdout
//! is a closed pipe (`mcpscope lint X | head -c1`). Here a closed stdout is
//! remembered and further output is dropped; the command then ends quietly
//! with status 141 (128 + SIGPIPE) on Unix, as a tool killed by SIGPIPE would
//! (232, the system's "pipe is being closed", on Windows).
//! A stderr that cannot be written (a closed terminal) is ignored.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

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

/// Lines for someone watching a run (verdicts as they come): each written
/// within [`PacedLines::PACE`] of being said, the ones said meanwhile in
/// the same write. A fast run is then not one write per line, each waking
/// whoever reads (a terminal, a CI log, a pipe): a thousand quick steps
/// were a tenth of `mcpscope test`'s time. Lines keep their order, stdout's
/// and stderr's alike; everything said is written by [`PacedLines::finish`]
/// (or when dropped).
pub struct PacedLines {
    shared: Arc<Shared>,
    writer: Option<std::thread::JoinHandle<()>>,
}

/// Where a run of lines goes: the text (lines, each ending in a newline),
/// and whether to stderr.
type LineSink = Box<dyn FnMut(&str, bool) + Send>;

struct Pending {
    /// Each line with whether it goes to stderr.
    lines: Vec<(String, bool)>,
    done: bool,
    sink: LineSink,
}

impl Pending {
    fn write_out(&mut self) {
        let mut lines = std::mem::take(&mut self.lines).into_iter().peekable();
        let mut text = String::new();
        while let Some((first, to_stderr)) = lines.next() {
            text.clear();
            push_line(&mut text, &first);
            while let Some((l, _)) = lines.next_if(|(_, e)| *e == to_stderr) {
                push_line(&mut text, &l);
            }
            (self.sink)(&text, to_stderr);
        }
    }
}

/// A line as a terminal may be given it, into one text with the lines around
/// it (one allocation for a run of them, not one per line).
fn push_line(text: &mut String, line: &str) {
    text.push_str(&mcpscope_core::text::terminal_safe(line, false));
    text.push('\n');
}

type Shared = (Mutex<Pending>, Condvar);

/// The lines being paced, for [`write_paced_now`].
static CURRENT: Mutex<std::sync::Weak<Shared>> = Mutex::new(std::sync::Weak::new());

fn lock_current() -> MutexGuard<'static, std::sync::Weak<Shared>> {
    CURRENT.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Writes the lines said and not written yet, before mcpscope exits
/// without returning (a second Ctrl-C): none is lost, and what the run
/// said comes before what the exit says. Waits [`PacedLines::PACE`] at
/// most: a stdout nobody reads must not keep mcpscope from exiting.
pub fn write_paced_now() {
    let Some(shared) = lock_current().upgrade() else {
        return;
    };
    let (done, wait) = std::sync::mpsc::channel();
    let written = std::thread::Builder::new().spawn(move || {
        write_now(&shared);
        let _ = done.send(());
    });
    if written.is_ok() {
        let _ = wait.recv_timeout(PacedLines::PACE);
    }
}

fn write_now(shared: &Shared) {
    lock(&shared.0).write_out();
}

fn lock(pending: &Mutex<Pending>) -> MutexGuard<'_, Pending> {
    pending.lock().unwrap_or_else(PoisonError::into_inner)
}

impl PacedLines {
    pub const PACE: Duration = Duration::from_millis(50);

    /// To stdout and stderr.
    pub fn start() -> Self {
        Self::to_sink(Box::new(|text, to_stderr| {
            if to_stderr {
                err(format_args!("{text}"));
            } else {
                out(format_args!("{text}"));
            }
        }))
    }

    fn to_sink(sink: LineSink) -> Self {
        let pending = Pending {
            lines: Vec::new(),
            done: false,
            sink,
        };
        let shared = Arc::new((Mutex::new(pending), Condvar::new()));
        *lock_current() = Arc::downgrade(&shared);
        let theirs = shared.clone();
        // Without a thread of its own, every line is written when said.
        let writer = std::thread::Builder::new()
            .name("paced-lines".into())
            .spawn(move || Self::write_paced(&theirs))
            .ok();
        Self { shared, writer }
    }

    fn write_paced(shared: &Shared) {
        let (pending, said) = shared;
        loop {
            let mut p = lock(pending);
            while p.lines.is_empty() && !p.done {
                p = said.wait(p).unwrap_or_else(PoisonError::into_inner);
            }
            // Lines said meanwhile join these (a stop ends the wait).
            let (mut p, _) = said
                .wait_timeout_while(p, Self::PACE, |p| !p.done)
                .unwrap_or_else(PoisonError::into_inner);
            p.write_out();
            if p.done {
                return;
            }
        }
    }

    /// Says these lines together (no other line comes between them).
    pub fn say(&self, lines: impl IntoIterator<Item = String>, to_stderr: bool) {
        let (pending, said) = &*self.shared;
        let mut p = lock(pending);
        let was_empty = p.lines.is_empty();
        p.lines.extend(lines.into_iter().map(|l| (l, to_stderr)));
        if self.writer.is_none() {
            p.write_out();
        } else if was_empty {
            said.notify_one();
        }
    }

    /// Writes everything said, and stops the writer (as dropping does).
    pub fn finish(self) {
        drop(self);
    }
}

impl Drop for PacedLines {
    fn drop(&mut self) {
        let (pending, said) = &*self.shared;
        lock(pending).done = true;
        said.notify_one();
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
        // (Whatever a writer that panicked left.)
        lock(pending).write_out();
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

    #[test]
    fn paced_lines_are_all_written_in_order_and_together() {
        let writes: Arc<Mutex<Vec<(String, bool)>>> = Arc::default();
        let seen = writes.clone();
        let paced = PacedLines::to_sink(Box::new(move |text, to_stderr| {
            seen.lock().unwrap().push((text.to_owned(), to_stderr))
        }));
        for n in 0..100 {
            paced.say([format!("line {n}")], n >= 90);
        }
        paced.say(["a \u{1b}]0;title\u{7} line".to_owned()], false);
        paced.finish();
        let writes = writes.lock().unwrap();
        let stdout: String = writes.iter().filter(|(_, e)| !e).map(|(t, _)| t.as_str()).collect();
        let stderr: String = writes.iter().filter(|(_, e)| *e).map(|(t, _)| t.as_str()).collect();
        let expected: String = (0..90).map(|n| format!("line {n}\n")).collect();
        assert!(stdout.starts_with(&expected), "{stdout}");
        assert!(stdout.ends_with("a \\u{1b}]0;title\\u{7} line\n"), "escaped: {stdout}");
        assert_eq!(stderr, (90..100).map(|n| format!("line {n}\n")).collect::<String>());
        // 101 lines said within microseconds: a few writes, not one per line.
        assert!(writes.len() < 10, "{} writes", writes.len());
    }

    #[test]
    fn lines_said_are_written_at_once_before_an_exit() {
        let writes: Arc<Mutex<Vec<String>>> = Arc::default();
        let seen = writes.clone();
        let paced = PacedLines::to_sink(Box::new(move |text, _| seen.lock().unwrap().push(text.to_owned())));
        paced.say(["passed  a".to_owned(), "passed  b".to_owned()], false);
        write_now(&paced.shared);
        // Written now (by this call or the writer), once, without waiting for the pace.
        assert_eq!(writes.lock().unwrap().concat(), "passed  a\npassed  b\n");
        paced.finish();
        assert_eq!(writes.lock().unwrap().concat(), "passed  a\npassed  b\n");
    }
}
