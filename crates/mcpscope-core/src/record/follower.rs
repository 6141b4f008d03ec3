//! Following a capture while it is still being written (a live proxied session).
//!
//! [`Follower::poll`] reads only what was appended since the last call and
//! turns each new complete line into an event, through the same
//! [`RecordReader`] that loads whole captures, so a followed session and a
//! loaded one look the same. A last line without its `\n` is the writer
//! mid-line: it waits for the rest. A file that was truncated or replaced
//! (a new session under the same name, a rotated file) starts over, and the
//! update says so, so the owner can drop what it had.
//!
//! Polling is a `stat` per call while nothing changes; call it every few tens
//! of milliseconds (or use [`spawn_follow`]) to see a session within ~100 ms.

use crate::platform::fs::{self, FileId};
use crate::record::capture::{Header, LineRead, NotACapture, RecordReader};
use crate::transport::event::Event;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// At most this much is read per poll, so a huge capture opened mid-session
/// does not stall the caller; [`Update::more`] says when there is more.
const MAX_READ_PER_POLL: u64 = 8 * 1024 * 1024;

/// What one poll found.
#[derive(Debug, Default)]
pub struct Update {
    /// The file was truncated or replaced: drop everything delivered so far;
    /// the header and events in this update start the new content.
    pub reset: bool,
    /// The capture's header, when this update read it.
    pub header: Option<Header>,
    pub events: Vec<Event>,
    /// Lines that could not be read (with their line numbers), as when loading.
    pub warnings: Vec<String>,
    /// More bytes were waiting than one poll reads: poll again at once.
    pub more: bool,
}

impl Update {
    pub fn is_empty(&self) -> bool {
        !self.reset && self.header.is_none() && self.events.is_empty() && self.warnings.is_empty()
    }
}

#[derive(Debug)]
pub enum FollowError {
    /// The file's first line is not a capture header.
    NotACapture(PathBuf, NotACapture),
    Io(PathBuf, io::Error),
}

impl std::fmt::Display for FollowError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FollowError::NotACapture(p, why) => write!(f, "{}: {why}", p.display()),
            FollowError::Io(p, e) => write!(f, "cannot read {}: {e}", p.display()),
        }
    }
}

impl std::error::Error for FollowError {}

/// Tails one capture file. Sans threads: the caller decides when to poll.
pub struct Follower {
    path: PathBuf,
    file: Option<File>,
    /// Which file is open, to notice a replacement.
    identity: FileId,
    /// Bytes consumed so far (complete lines and the pending partial one).
    offset: u64,
    /// The file's length at the last poll.
    seen_len: u64,
    /// A last line still waiting for its `\n`.
    partial: Vec<u8>,
    /// The first line with its `\n`: if it changes, the file was rewritten in place.
    head: Vec<u8>,
    reader: RecordReader,
    buf: Vec<u8>,
}

impl Follower {
    /// Follows `path`, which need not exist yet.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            file: None,
            identity: FileId::default(),
            offset: 0,
            seen_len: 0,
            partial: Vec::new(),
            head: Vec::new(),
            reader: RecordReader::new(),
            buf: vec![0; 64 * 1024],
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of the file consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    pub fn header(&self) -> Option<&Header> {
        self.reader.header()
    }

    /// Reads whatever was appended since the last poll.
    pub fn poll(&mut self) -> Result<Update, FollowError> {
        let mut update = Update::default();
        let meta = match std::fs::metadata(&self.path) {
            Ok(m) => m,
            // Not there yet, or deleted: keep what was delivered.
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(update),
            Err(e) => return Err(self.io(e)),
        };
        let identity = FileId::of(&meta);
        if self.file.is_some() {
            let replaced = identity != self.identity;
            let truncated = meta.len() < self.offset;
            let rewritten = !replaced && !truncated && meta.len() != self.seen_len && !self.head_unchanged()?;
            if replaced || truncated || rewritten {
                self.restart();
                update.reset = true;
            }
        }
        if self.file.is_none() {
            let file = fs::open_shared_with_writers(&self.path).map_err(|e| self.io(e))?;
            // The path may have been replaced between the stat and the open.
            let m = file.metadata().map_err(|e| self.io(e))?;
            self.identity = FileId::of(&m);
            self.file = Some(file);
        }
        self.seen_len = meta.len();
        self.read_new(&mut update)?;
        Ok(update)
    }

    /// Like [`poll`](Self::poll), then takes a last line without `\n` as
    /// complete: for a session that has ended, whose writer will add nothing.
    pub fn poll_to_end(&mut self) -> Result<Update, FollowError> {
        let mut update = self.poll()?;
        while update.more {
            let next = self.poll()?;
            merge(&mut update, next);
        }
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.read_line(&line, &mut update)?;
        }
        Ok(update)
    }

    fn restart(&mut self) {
        self.file = None;
        self.offset = 0;
        self.seen_len = 0;
        self.partial.clear();
        self.head.clear();
        self.reader = RecordReader::new();
    }

    fn head_unchanged(&self) -> Result<bool, FollowError> {
        let (Some(file), false) = (&self.file, self.head.is_empty()) else {
            return Ok(true);
        };
        let mut now = vec![0; self.head.len()];
        match fs::read_exact_at(file, &mut now, 0) {
            Ok(()) => Ok(now == self.head),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(false),
            Err(e) => Err(self.io(e)),
        }
    }

    fn read_new(&mut self, update: &mut Update) -> Result<(), FollowError> {
        let Some(file) = self.file.as_mut() else { return Ok(()) };
        file.seek(SeekFrom::Start(self.offset))
            .map_err(|e| io_err(&self.path, e))?;
        let mut budget = MAX_READ_PER_POLL;
        loop {
            if budget == 0 {
                update.more = true;
                return Ok(());
            }
            let want = self.buf.len().min(budget as usize);
            let n = match self.file.as_mut().expect("open").read(&mut self.buf[..want]) {
                Ok(0) => return Ok(()),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.io(e)),
            };
            budget -= n as u64;
            self.offset += n as u64;
            let chunk = std::mem::take(&mut self.buf);
            let result = self.consume(&chunk[..n], update);
            self.buf = chunk;
            result?;
        }
    }

    fn consume(&mut self, mut chunk: &[u8], update: &mut Update) -> Result<(), FollowError> {
        while let Some(nl) = chunk.iter().position(|&b| b == b'\n') {
            let line = if self.partial.is_empty() {
                chunk[..nl].to_vec()
            } else {
                let mut l = std::mem::take(&mut self.partial);
                l.extend_from_slice(&chunk[..nl]);
                l
            };
            if self.reader.lines_read() == 0 {
                self.head = line.clone();
                self.head.push(b'\n');
            }
            self.read_line(&line, update)?;
            chunk = &chunk[nl + 1..];
        }
        self.partial.extend_from_slice(chunk);
        Ok(())
    }

    fn read_line(&mut self, line: &[u8], update: &mut Update) -> Result<(), FollowError> {
        match self.reader.read_line(line) {
            Ok(LineRead::Header(h)) => update.header = Some(h),
            Ok(LineRead::Boundary(_, note)) => update.events.push(note),
            Ok(LineRead::Event(ev)) => update.events.push(ev),
            Ok(LineRead::Warning(w)) => update.warnings.push(w),
            Ok(LineRead::Blank) => {}
            Err(why) => return Err(FollowError::NotACapture(self.path.clone(), why)),
        }
        Ok(())
    }

    fn io(&self, e: io::Error) -> FollowError {
        io_err(&self.path, e)
    }
}

fn io_err(path: &Path, e: io::Error) -> FollowError {
    FollowError::Io(path.to_owned(), e)
}

fn merge(into: &mut Update, next: Update) {
    if next.reset {
        *into = next;
        return;
    }
    if next.header.is_some() {
        into.header = next.header;
    }
    into.events.extend(next.events);
    into.warnings.extend(next.warnings);
    into.more = next.more;
}

/// A follower running on its own thread; dropping it stops the thread.
pub struct FollowHandle {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl FollowHandle {
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for FollowHandle {
    fn drop(&mut self) {
        self.halt();
    }
}

/// Polls `path` every `interval` on a thread named `mcpscope-follow` and hands
/// each non-empty update (or error) to `deliver`, which returns whether to go
/// on (e.g. false once the receiving side is gone). A [`FollowError::NotACapture`]
/// ends the thread after it is delivered; I/O errors are delivered and retried.
pub fn spawn_follow(
    path: impl Into<PathBuf>,
    interval: Duration,
    mut deliver: impl FnMut(Result<Update, FollowError>) -> bool + Send + 'static,
) -> FollowHandle {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let mut follower = Follower::new(path);
    let thread = std::thread::Builder::new()
        .name("mcpscope-follow".into())
        .spawn(move || {
            while !flag.load(Ordering::SeqCst) {
                let result = follower.poll();
                let (more, fatal) = match &result {
                    Ok(u) => (u.more, false),
                    Err(FollowError::NotACapture(..)) => (false, true),
                    Err(FollowError::Io(..)) => (false, false),
                };
                let skip = matches!(&result, Ok(u) if u.is_empty());
                if !skip && !deliver(result) {
                    return;
                }
                if fatal {
                    return;
                }
                if !more {
                    std::thread::sleep(interval);
                }
            }
        })
        .expect("spawning the follow thread");
    FollowHandle {
        stop,
        thread: Some(thread),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::capture::{self, Writer};
    use crate::transport::process::ServerSpec;
    use crate::transport::recorder::Recorder;
    use crate::wire::classify::Limits;
    use crate::wire::frame::Direction;
    use crate::wire::framing::{LineEnding, RawLine};
    use std::io::Write;
    use std::time::Instant;

    /// The text of a capture: a header and one frame per message, alternating directions.
    fn capture_text(messages: &[&str]) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        let mut w = Writer::open(
            &path,
            &capture::Header::for_spec(&ServerSpec::new("srv", ["a"]), "proxy"),
        )
        .unwrap();
        let mut rec = Recorder::new(Limits::default(), Instant::now());
        for (i, m) in messages.iter().enumerate() {
            let dir = if i % 2 == 0 { Direction::Out } else { Direction::In };
            let line = RawLine {
                bytes: m.as_bytes().to_vec(),
                ending: LineEnding::Lf,
            };
            let f = rec.frame_at(dir, line, Duration::from_millis(i as u64), None);
            w.write(&Event::Frame(f)).unwrap();
        }
        w.flush().unwrap();
        std::fs::read(&path).unwrap()
    }

    const REQ: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    const RESP: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#;

    fn frames(u: &Update) -> Vec<String> {
        u.events
            .iter()
            .filter_map(|e| match e {
                Event::Frame(f) => Some(f.text().into_owned()),
                _ => None,
            })
            .collect()
    }

    fn append(path: &Path, bytes: &[u8]) {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .unwrap();
        f.write_all(bytes).unwrap();
    }

    #[test]
    fn a_file_that_does_not_exist_yet_is_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("later.jsonl");
        let mut f = Follower::new(&path);
        assert!(f.poll().unwrap().is_empty());
        append(&path, &capture_text(&[REQ]));
        let u = f.poll().unwrap();
        assert!(!u.reset, "the first open is not a reset");
        assert_eq!(u.header.as_ref().unwrap().command_line, "srv a");
        assert_eq!(frames(&u), [REQ]);
    }

    #[test]
    fn appends_in_pieces_yield_each_line_once_it_is_complete() {
        let full = capture_text(&[REQ, RESP]);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        let mut f = Follower::new(&path);
        let mut seen = Vec::new();
        let mut header = None;
        // Seven bytes at a time: every line arrives split, some splits inside UTF-8 or escapes.
        for piece in full.chunks(7) {
            append(&path, piece);
            let u = f.poll().unwrap();
            assert!(!u.reset);
            assert!(u.warnings.is_empty(), "{:?}", u.warnings);
            header = header.or(u.header.clone());
            seen.extend(frames(&u));
            // Nothing is read twice: the follower is exactly at the end of the file.
            assert_eq!(f.offset(), std::fs::metadata(&path).unwrap().len());
        }
        assert!(header.is_some());
        assert_eq!(seen, [REQ, RESP]);
    }

    #[test]
    fn a_half_written_line_waits_for_its_end() {
        let full = capture_text(&[REQ, RESP]);
        let cut = full.len() - 10;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        append(&path, &full[..cut]);
        let mut f = Follower::new(&path);
        let u = f.poll().unwrap();
        assert_eq!(frames(&u), [REQ]);
        assert!(
            u.warnings.is_empty(),
            "a partial line is not a broken one: {:?}",
            u.warnings
        );
        assert!(f.poll().unwrap().is_empty());
        append(&path, &full[cut..]);
        let u = f.poll().unwrap();
        assert_eq!(frames(&u), [RESP]);
        // The response is linked to the request read in an earlier poll.
        let Event::Frame(resp) = &u.events[0] else { panic!() };
        assert_eq!(resp.link.as_ref().unwrap().method, "tools/list");
    }

    #[test]
    fn poll_to_end_reads_an_unterminated_last_line() {
        let full = capture_text(&[REQ]);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        append(&path, &full[..full.len() - 1]);
        let mut f = Follower::new(&path);
        let u = f.poll().unwrap();
        assert!(frames(&u).is_empty());
        let u = f.poll_to_end().unwrap();
        assert_eq!(frames(&u), [REQ]);
    }

    #[test]
    fn truncation_starts_over_with_a_reset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        append(&path, &capture_text(&[REQ, RESP]));
        let mut f = Follower::new(&path);
        assert_eq!(frames(&f.poll().unwrap()).len(), 2);
        std::fs::File::create(&path).unwrap(); // truncated to nothing
        let u = f.poll().unwrap();
        assert!(u.reset);
        assert!(u.events.is_empty());
        append(&path, &capture_text(&[RESP]));
        let u = f.poll().unwrap();
        assert!(!u.reset);
        assert!(u.header.is_some());
        assert_eq!(frames(&u), [RESP]);
    }

    #[test]
    fn a_replaced_file_starts_over_even_when_it_is_longer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        append(&path, &capture_text(&[REQ]));
        let mut f = Follower::new(&path);
        assert_eq!(frames(&f.poll().unwrap()), [REQ]);
        let other = dir.path().join("new.jsonl");
        append(&other, &capture_text(&[RESP, REQ, RESP]));
        std::fs::rename(&other, &path).unwrap();
        let u = f.poll().unwrap();
        assert!(u.reset);
        assert!(u.header.is_some());
        assert_eq!(frames(&u), [RESP, REQ, RESP]);
    }

    #[test]
    fn a_file_rewritten_in_place_is_noticed_by_its_first_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        append(&path, &capture_text(&[REQ]));
        let mut f = Follower::new(&path);
        f.poll().unwrap();
        // Same inode, longer content, a different header (another start time or command).
        let mut text = String::from_utf8(capture_text(&[RESP, REQ])).unwrap();
        text = text.replacen("srv a", "srv b", 1);
        std::fs::write(&path, text).unwrap();
        let u = f.poll().unwrap();
        assert!(u.reset);
        assert_eq!(u.header.as_ref().unwrap().command_line, "srv b");
        assert_eq!(frames(&u), [RESP, REQ]);
    }

    #[test]
    fn not_a_capture_is_an_error_and_broken_lines_are_warnings() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        append(&path, b"{\"hello\":1}\n");
        assert!(matches!(Follower::new(&path).poll(), Err(FollowError::NotACapture(..))));

        let path = dir.path().join("d.jsonl");
        append(&path, &capture_text(&[REQ]));
        append(&path, b"{broken\n");
        let u = Follower::new(&path).poll().unwrap();
        assert_eq!(frames(&u), [REQ]);
        assert_eq!(u.warnings.len(), 1);
        assert!(u.warnings[0].starts_with("line 3:"), "{:?}", u.warnings);
    }

    #[test]
    fn the_thread_delivers_appends_and_stops_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        let (tx, rx) = crossbeam_channel::unbounded();
        let handle = spawn_follow(&path, Duration::from_millis(5), move |u| tx.send(u).is_ok());
        let full = capture_text(&[REQ, RESP]);
        let split = full.len() - 20;
        append(&path, &full[..split]);
        let mut seen = Vec::new();
        let mut rest_written = false;
        let deadline = Instant::now() + Duration::from_secs(10);
        while seen.len() < 2 && Instant::now() < deadline {
            if seen.len() == 1 && !rest_written {
                append(&path, &full[split..]);
                rest_written = true;
            }
            if let Ok(u) = rx.recv_timeout(Duration::from_secs(5)) {
                seen.extend(frames(&u.unwrap()));
            }
        }
        assert_eq!(seen, [REQ, RESP]);
        handle.stop();
    }
}
