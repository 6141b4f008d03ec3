//! A capture opened from a file: read on a worker, its events applied a
//! frame's budget at a time ([`CaptureLoad::drain`]), so the UI never
//! waits on the file. Another tool's capture is imported first.

use super::{EventSource, Inspection};
use anyhow::{Context as _, Result};
use mcpscope_core::record::capture;
use mcpscope_core::timeline::model::{SessionModel, Source};
use mcpscope_core::transport::event::Event;
use mcpscope_core::transport::session::Waker;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The same while a capture loads, at least: nothing else competes for the
/// frame then.
const LOAD_BUDGET: Duration = Duration::from_millis(12);

/// A loading capture's share of a frame: as long as the last frame took to
/// draw, so that with software rendering (50-100 ms a frame) about half the
/// time goes to loading; a fixed 12 ms gave a million rows 11.6 s on screen
/// for 2.4 s of work. At most 100 ms, so input is still handled ~5 times a second.
pub(super) fn load_budget(last_frame: Duration) -> Duration {
    last_frame.clamp(LOAD_BUDGET, Duration::from_millis(100))
}

/// Events a loading worker hands over at once.
const LOAD_BATCH: usize = 8192;

/// What the capture loading worker sends.
enum Loaded {
    /// The header and the file's size.
    Header(capture::Header, u64),
    /// Events and how far into the file they reach.
    Events(Vec<Event>, u64),
    Done(Vec<String>),
    Failed(String),
    /// The file was another tool's capture: read from this mcpscope capture
    /// it was imported into, with what its format lacks.
    Imported(PathBuf, Vec<String>),
}

/// A capture read on a worker and applied a frame's budget at a time.
pub(super) struct CaptureLoad {
    feed: crate::job::Feed<Loaded>,
    batch: std::vec::IntoIter<Event>,
    total_bytes: u64,
    read_bytes: u64,
    header_seen: bool,
    failed: Option<String>,
}

/// How far a capture has loaded.
#[derive(Clone, Debug, PartialEq)]
pub enum LoadState {
    /// Reading; the fraction of the file read so far.
    Loading(f32),
    Done,
    Failed(String),
}

/// How a frame's draining of a loading capture ended.
pub(super) enum LoadStep {
    /// The frame's budget is spent: events remain.
    More,
    /// Nothing to apply until the worker sends more (or it failed).
    Waiting,
    /// The whole capture is applied.
    Done,
}

impl CaptureLoad {
    fn start(path: &Path, waker: Option<Waker>) -> CaptureLoad {
        let from = path.to_owned();
        // Detached: closing the tab mid-read must not wait for the read.
        let feed = crate::job::Feed::spawn_detached("open", 4, waker, move |feed| read_capture(&from, &feed));
        let failed = feed.failed().map(|e| e.to_string());
        CaptureLoad {
            feed,
            batch: Vec::new().into_iter(),
            total_bytes: 0,
            read_bytes: 0,
            header_seen: false,
            failed,
        }
    }

    /// Applies the capture's events to `i`'s model for at most `budget`;
    /// an imported file's copy becomes `i`'s capture.
    pub(super) fn drain(&mut self, i: Opened<'_>, budget: Duration) -> LoadStep {
        let deadline = Instant::now() + budget;
        let mut applied = 0usize;
        loop {
            if let Some(ev) = self.batch.next() {
                i.model.apply(&ev);
                applied += 1;
                if applied.is_multiple_of(256) && Instant::now() >= deadline {
                    return LoadStep::More;
                }
                continue;
            }
            match self.feed.receiver().try_recv() {
                Ok(Loaded::Header(h, total)) => {
                    self.header_seen = true;
                    self.total_bytes = total;
                    if let Source::Capture { command_line, .. } = &mut i.model.source {
                        *command_line = h.command_line;
                    }
                }
                Ok(Loaded::Imported(to, notes)) => {
                    if let Source::Capture { path, .. } = &mut i.model.source {
                        *i.imported_from = Some(std::mem::replace(path, to.clone()));
                    }
                    *i.capture_path = Some(to);
                    *i.load_warnings = notes;
                }
                Ok(Loaded::Events(events, offset)) => {
                    self.read_bytes = offset;
                    self.batch = events.into_iter();
                }
                Ok(Loaded::Done(warnings)) => {
                    i.model.closed = true;
                    i.load_warnings.extend(warnings);
                    return LoadStep::Done;
                }
                Ok(Loaded::Failed(e)) => {
                    self.failed = Some(e);
                    return LoadStep::Waiting;
                }
                Err(crossbeam_channel::TryRecvError::Empty) => return LoadStep::Waiting,
                Err(crossbeam_channel::TryRecvError::Disconnected) => {
                    if self.failed.is_none() {
                        self.failed = Some("the loading thread stopped".into());
                    }
                    return LoadStep::Waiting;
                }
            }
        }
    }

    fn state(&self) -> LoadState {
        match &self.failed {
            Some(e) => LoadState::Failed(e.clone()),
            None if self.total_bytes == 0 => LoadState::Loading(0.0),
            None => LoadState::Loading((self.read_bytes as f64 / self.total_bytes as f64).min(1.0) as f32),
        }
    }
}

/// What loading a capture writes into the inspection it is opened in.
pub(super) struct Opened<'a> {
    pub model: &'a mut SessionModel,
    pub capture_path: &'a mut Option<PathBuf>,
    pub imported_from: &'a mut Option<PathBuf>,
    pub load_warnings: &'a mut Vec<String>,
}

impl Inspection {
    /// Opens a capture offline.
    pub fn open_capture(path: &Path) -> Result<Inspection> {
        let loaded = capture::load(path)?;
        let mut i = Inspection::offline(SessionModel::from_capture(path.to_owned(), &loaded));
        i.capture_path = Some(path.to_owned());
        i.load_warnings = loaded.warnings;
        Ok(i)
    }

    /// Opens a capture offline, reading it on a worker: the rows appear as
    /// they are read ([`Inspection::drain`] applies them), the UI never waits
    /// on the file. See [`Inspection::load_state`].
    pub fn open_capture_in_background(path: &Path, waker: Option<Waker>) -> Inspection {
        let mut i = Inspection::offline(SessionModel::new(Source::Capture {
            path: path.to_owned(),
            command_line: String::new(),
        }));
        i.capture_path = Some(path.to_owned());
        i.source = EventSource::Loading(CaptureLoad::start(path, waker));
        i
    }

    fn capture_load(&self) -> Option<&CaptureLoad> {
        match &self.source {
            EventSource::Loading(l) => Some(l),
            _ => None,
        }
    }

    /// Whether a capture is still being read.
    pub fn loading(&self) -> bool {
        self.capture_load().is_some_and(|l| l.failed.is_none())
    }

    /// Where loading a capture stands (Done for a live session).
    pub fn load_state(&self) -> LoadState {
        self.capture_load().map_or(LoadState::Done, CaptureLoad::state)
    }

    /// Whether the capture's header was read (it is a capture, and the rows come).
    pub fn load_started(&self) -> bool {
        self.capture_load().is_none_or(|l| l.header_seen)
    }
}

/// File → Open of another tool's capture (mcpsnoop, mcp-recorder, the
/// Inspector, HAR): imported into a new private capture, which is then read;
/// `Ok(None)` for an mcpscope capture (or anything else, which the reader
/// refuses); `Err` when the import failed (said on the feed).
fn imported_copy(path: &Path, feed: &crate::job::Feeder<Loaded>) -> Result<Option<PathBuf>, ()> {
    use mcpscope_core::interop::{import, import_file};
    use std::io::Read as _;
    let mut head = Vec::new();
    // Unreadable: the reader says why.
    let Ok(f) = mcpscope_core::record::private_files::open_regular(path) else {
        return Ok(None);
    };
    if f.take(256 * 1024).read_to_end(&mut head).is_err() {
        return Ok(None);
    }
    let text = String::from_utf8_lossy(&head);
    if text.trim_start().starts_with("{\"format\"") || text.contains("\"mcpscope-capture\"") {
        return Ok(None);
    }
    let Some(format) = import::detect(&text) else {
        return Ok(None);
    };
    let fresh = || -> anyhow::Result<PathBuf> {
        let dir = mcpscope_core::record::private_files::captures_dir()?;
        let (_, to) = mcpscope_core::record::private_files::create_private_file(&dir, "import", "jsonl")?;
        // A name no one else has, in the private directory: the import creates it again.
        std::fs::remove_file(&to)?;
        Ok(to)
    };
    let imported = fresh().and_then(|to| Ok(import_file(path, &to).map(|r| (to, r))?));
    match imported {
        Ok((to, report)) => {
            let mut notes = vec![format!(
                "imported from {} ({}): {} message(s) in {} session(s), kept in {}",
                path.display(),
                format.name(),
                report.messages,
                report.sessions,
                to.display()
            )];
            notes.extend(report.notes);
            feed.send(Loaded::Imported(to.clone(), notes));
            Ok(Some(to))
        }
        Err(e) => {
            feed.send(Loaded::Failed(format!("{e:#}")));
            Err(())
        }
    }
}

/// The loading worker: reads a capture record by record and hands the
/// events over in batches (the bounded channel keeps it a few batches ahead
/// of the UI, so memory stays near the store's own).
fn read_capture(path: &Path, feed: &crate::job::Feeder<Loaded>) {
    use mcpscope_core::record::capture::{EventReader, Item, READ_BUFFER};
    let Ok(imported) = imported_copy(path, feed) else {
        return;
    };
    let path = imported.as_deref().unwrap_or(path);
    let opened = mcpscope_core::record::private_files::open_regular(path)
        .with_context(|| format!("cannot open capture {}", path.display()))
        .and_then(|f| {
            let total = f.metadata().map_or(0, |m| m.len());
            EventReader::new(std::io::BufReader::with_capacity(READ_BUFFER, f))
                .with_context(|| format!("cannot read capture {}", path.display()))
                .map(|r| (r, total))
        });
    let (mut reader, total) = match opened {
        Ok(r) => r,
        Err(e) => {
            feed.send(Loaded::Failed(format!("{e:#}")));
            return;
        }
    };
    if !feed.send(Loaded::Header(reader.header().clone(), total)) {
        return;
    }
    let mut warnings = Vec::new();
    let mut batch = Vec::with_capacity(LOAD_BATCH);
    loop {
        match reader.next_item() {
            Ok(Some(Item::Event(e))) => {
                batch.push(e);
                if batch.len() == LOAD_BATCH {
                    let full = std::mem::replace(&mut batch, Vec::with_capacity(LOAD_BATCH));
                    if !feed.send(Loaded::Events(full, reader.offset())) {
                        return;
                    }
                }
            }
            Ok(Some(Item::Warning(w))) => warnings.push(w),
            // The note that marks another session of the same capture.
            Ok(Some(Item::Boundary(_, note))) => batch.push(note),
            Ok(None) => break,
            Err(e) => {
                feed.send(Loaded::Failed(format!(
                    "cannot read capture {}: {ec}",
                    path.display(),
                    ec = mcpscope_core::text::ErrorChain(&e)
                )));
                return;
            }
        }
    }
    if !batch.is_empty() && !feed.send(Loaded::Events(batch, reader.offset())) {
        return;
    }
    feed.send(Loaded::Done(warnings));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loading_capture_gets_as_long_as_a_frame_takes_to_draw() {
        assert_eq!(load_budget(Duration::ZERO), LOAD_BUDGET, "quick frames: the floor");
        assert_eq!(load_budget(Duration::from_millis(70)), Duration::from_millis(70));
        assert_eq!(
            load_budget(Duration::from_secs(3)),
            Duration::from_millis(100),
            "never a freeze"
        );
    }

    #[test]
    fn a_capture_read_on_a_worker_becomes_an_offline_one_when_it_is_all_applied() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/captures/authorization-failed.jsonl");
        let mut i = Inspection::open_capture_in_background(&path, None);
        assert!(matches!(i.source, EventSource::Loading(_)));
        let deadline = Instant::now() + Duration::from_secs(30);
        while i.loading() {
            assert!(Instant::now() < deadline, "the capture never finished loading");
            if !i.drain() {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        assert_eq!(i.load_state(), LoadState::Done);
        assert!(matches!(i.source, EventSource::Offline), "the worker's state is gone");
        assert!(i.model.closed && !i.model.store.is_empty());
        assert!(!i.has_pilot() && i.followed().is_none() && !i.is_following());
        assert_eq!(i.capture_path.as_deref(), Some(path.as_path()));
    }
}
