//! The "Live sessions" panel: sessions `mcpscope proxy --session` recorded
//! for real clients (running first), kept up to date by a worker that lists
//! the session directories every half second; the UI thread only draws.

use crate::job::{Feed, Feeder};
use crate::theme::{self, RowKindStyle as _};
use egui::{RichText, Ui};
use mcpscope_core::record::state_dir;
use mcpscope_core::sessions::index::{ListedSession, SessionRecord, SessionState, format_unix_ms_utc, list_sessions};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How often the directories are listed (a readdir and a few small reads).
const LIST_INTERVAL: Duration = Duration::from_millis(500);
/// Ended sessions shown before "Show all": the running ones always are.
const ENDED_SHOWN: usize = 8;

/// What the panel asks the app to do.
#[derive(Clone, Debug)]
pub enum LiveAction {
    /// Open the session in a tab, following it while it runs.
    Open(Box<ListedSession>),
    /// Ask the proxy to end the session.
    Stop(Box<ListedSession>),
    /// Delete an ended session's record and capture.
    Remove(Box<ListedSession>),
}

/// One listing of every session directory.
#[derive(Clone, Debug, Default)]
pub struct Sessions {
    pub sessions: Vec<ListedSession>,
    pub problems: Vec<String>,
}

/// Lists every directory, running sessions first, then newest first.
pub fn list_all(dirs: &[PathBuf]) -> Sessions {
    let mut all = Sessions::default();
    for dir in dirs {
        match list_sessions(dir) {
            Ok(l) => {
                all.sessions.extend(l.sessions);
                all.problems.extend(l.problems);
            }
            Err(e) => all.problems.push(format!("cannot list {}: {e}", dir.display())),
        }
    }
    all.sessions.sort_by(|a, b| {
        b.state
            .is_running()
            .cmp(&a.state.is_running())
            .then(b.record.started_unix_ms.cmp(&a.record.started_unix_ms))
            .then(b.record.id.cmp(&a.record.id))
    });
    all
}

pub struct LiveSessionsPanel {
    /// The directories listed (the state directory, by default).
    pub dirs: Vec<PathBuf>,
    pub sessions: Vec<ListedSession>,
    pub problems: Vec<String>,
    /// Whether a first listing arrived.
    pub listed: bool,
    /// Capture paths open in a tab (marked in the list).
    pub open: Vec<PathBuf>,
    /// Every ended session listed, not only the latest few.
    pub show_all_ended: bool,
    worker: Option<Feed<Sessions>>,
    error: Option<String>,
}

impl Default for LiveSessionsPanel {
    fn default() -> Self {
        Self::new(state_dir::session_dirs())
    }
}

impl LiveSessionsPanel {
    /// A panel listing `dirs`; its worker starts at the first [`poll`](Self::poll).
    pub fn new(dirs: Vec<PathBuf>) -> Self {
        Self {
            dirs,
            sessions: Vec::new(),
            problems: Vec::new(),
            listed: false,
            open: Vec::new(),
            show_all_ended: false,
            worker: None,
            error: None,
        }
    }

    /// Lists other directories from now on.
    pub fn watch(&mut self, dirs: Vec<PathBuf>) {
        self.worker = None;
        self.dirs = dirs;
        self.sessions.clear();
        self.problems.clear();
        self.listed = false;
    }

    pub fn running(&self) -> usize {
        self.sessions.iter().filter(|s| s.state.is_running()).count()
    }

    /// Takes the latest listing; starts the worker the first time.
    pub fn poll(&mut self, waker: &Arc<dyn Fn() + Send + Sync>) {
        if self.worker.is_none() && self.error.is_none() {
            self.start(Arc::clone(waker));
        }
        let Some(w) = &self.worker else { return };
        let mut latest = None;
        while let Some(l) = w.try_recv() {
            latest = Some(l);
        }
        if let Some(l) = latest {
            self.sessions = l.sessions;
            self.problems = l.problems;
            self.listed = true;
        }
    }

    fn start(&mut self, waker: Arc<dyn Fn() + Send + Sync>) {
        let dirs = self.dirs.clone();
        let feed = Feed::spawn("sessions", 2, Some(waker), move |feed: Feeder<Sessions>| {
            let mut last: Option<Vec<(SessionRecord, SessionState)>> = None;
            while !feed.stopped() {
                let listing = list_all(&dirs);
                let key: Vec<_> = listing
                    .sessions
                    .iter()
                    .map(|s| (s.record.clone(), s.state.clone()))
                    .collect();
                if last.as_ref() != Some(&key) {
                    if !feed.send(listing) {
                        return;
                    }
                    last = Some(key);
                }
                feed.pause(LIST_INTERVAL);
            }
        });
        match feed.failed() {
            Some(e) => self.error = Some(e.to_string()),
            None => self.worker = Some(feed),
        }
    }

    pub fn ui(&mut self, ui: &mut Ui) -> Option<LiveAction> {
        let mut action = None;
        let running = self.running();
        let title = if running > 0 {
            format!("Live sessions ({running} running)")
        } else {
            format!("Live sessions ({})", self.sessions.len())
        };
        egui::CollapsingHeader::new(RichText::new(title).heading())
            .id_salt("live-sessions")
            .default_open(true)
            .show(ui, |ui| {
                if let Some(e) = &self.error {
                    ui.label(RichText::new(e).color(theme::ERROR));
                }
                if !self.listed {
                    ui.weak("Looking for proxied sessions…");
                } else if self.sessions.is_empty() {
                    ui.weak(
                        "No proxied sessions yet. Run a server as `mcpscope proxy --session NAME -- CMD …` \
                         (Watch in your client, below, rewrites a client's config to do that).",
                    );
                }
                let running = self.running();
                let ended = self.sessions.len() - running;
                let shown = if self.show_all_ended {
                    self.sessions.len()
                } else {
                    running + ended.min(ENDED_SHOWN)
                };
                // Running sessions come first in the list.
                for s in &self.sessions[..shown] {
                    ui.push_id(&s.record.id, |ui| {
                        if let Some(a) = self.session_ui(ui, s) {
                            action = Some(a);
                        }
                    });
                }
                if ended > ENDED_SHOWN {
                    let text = if self.show_all_ended {
                        "Show only the latest ended sessions".to_owned()
                    } else {
                        format!("Show all {ended} ended sessions")
                    };
                    if ui.button(text).clicked() {
                        self.show_all_ended = !self.show_all_ended;
                    }
                }
                for p in &self.problems {
                    ui.label(RichText::new(p).color(theme::WARN).small());
                }
            });
        action
    }

    fn session_ui(&self, ui: &mut Ui, s: &ListedSession) -> Option<LiveAction> {
        let mut action = None;
        let r = &s.record;
        ui.separator();
        ui.horizontal_wrapped(|ui| {
            ui.strong(&r.name);
            let (text, color) = match &s.state {
                SessionState::Running => ("running".to_owned(), theme::OK),
                SessionState::Ended(end) => (format!("ended: {}", end.cause.label()), egui::Color32::GRAY),
                SessionState::Vanished => ("ended: proxy gone".to_owned(), theme::WARN),
            };
            ui.label(RichText::new(text).color(color));
            if s.state.is_running() && r.control_socket.is_some() {
                ui.label(RichText::new("intercepting").color(theme::RowKind::Touch.color()))
                    .on_hover_text("Its proxy holds frames and applies fault rules: open it for the Intercept tab");
            }
            if self.open.contains(&s.capture_path) {
                ui.weak("(open)");
            }
        });
        let client = match &r.client {
            Some(c) => match &c.version {
                Some(v) => format!("{} {v}", c.name),
                None => c.name.clone(),
            },
            None => "not known yet (no initialize seen)".into(),
        };
        ui.label(format!("client: {client}"));
        let what = match (&r.upstream, &r.listen) {
            (Some(up), Some(listen)) => format!("{listen} -> {up}"),
            _ => r.command_line.clone(),
        };
        ui.add(
            egui::Label::new(
                RichText::new(mcpscope_core::text::shorten(&what, 120))
                    .monospace()
                    .small(),
            )
            .wrap(),
        )
        .on_hover_text(&what);
        ui.weak(format!("started {}", format_unix_ms_utc(r.started_unix_ms)));
        if let SessionState::Ended(end) = &s.state {
            ui.weak(&end.text);
        }
        ui.horizontal(|ui| {
            let open_label = if s.state.is_running() { "Open live" } else { "Open" };
            if ui
                .button(open_label)
                .on_hover_text(s.capture_path.display().to_string())
                .clicked()
            {
                action = Some(LiveAction::Open(Box::new(s.clone())));
            }
            if s.state.is_running() {
                if ui
                    .button("Stop")
                    .on_hover_text("End the session: the proxy shuts the server down and records it")
                    .clicked()
                {
                    action = Some(LiveAction::Stop(Box::new(s.clone())));
                }
            } else if ui
                .button("Remove")
                .on_hover_text("Delete this session's capture and record")
                .clicked()
            {
                action = Some(LiveAction::Remove(Box::new(s.clone())));
            }
        });
        action
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpscope_core::sessions::index::{LiveSession, NewSession};

    #[test]
    fn lists_every_directory_running_first() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let spec = mcpscope_core::transport::process::ServerSpec::new("python3", ["server.py".to_owned()]);
        let (mut ended, _f) = LiveSession::start(a.path(), NewSession::stdio("old", &spec)).unwrap();
        ended
            .finish(
                mcpscope_core::sessions::index::EndCause::ClientClosed,
                "the client closed its stdin",
                None,
            )
            .unwrap();
        let (_running, _g) = LiveSession::start(b.path(), NewSession::stdio("new", &spec)).unwrap();
        let missing = a.path().join("nope");
        let all = list_all(&[a.path().to_owned(), b.path().to_owned(), missing]);
        let names: Vec<_> = all.sessions.iter().map(|s| s.record.name.as_str()).collect();
        assert_eq!(names, ["new", "old"]);
        assert!(all.sessions[0].state.is_running());
        assert!(all.problems.is_empty(), "{:?}", all.problems);
    }

    #[test]
    fn only_the_latest_ended_sessions_are_shown_until_asked() {
        use egui_kittest::Harness;
        use egui_kittest::kittest::Queryable as _;
        let dir = tempfile::tempdir().unwrap();
        let spec = mcpscope_core::transport::process::ServerSpec::new("python3", ["server.py".to_owned()]);
        for n in 0..12 {
            let (mut s, _f) = LiveSession::start(dir.path(), NewSession::stdio(&format!("s{n}"), &spec)).unwrap();
            s.finish(
                mcpscope_core::sessions::index::EndCause::ClientClosed,
                "the client closed its stdin",
                None,
            )
            .unwrap();
        }
        let (_running, _g) = LiveSession::start(dir.path(), NewSession::stdio("live-one", &spec)).unwrap();
        let mut panel = LiveSessionsPanel::new(vec![dir.path().to_owned()]);
        let listing = list_all(&panel.dirs);
        panel.sessions = listing.sessions;
        panel.listed = true;
        // Tall enough to lay out every row at once.
        let mut h = Harness::builder().with_size([500.0, 4000.0]).build_ui_state(
            |ui, p: &mut LiveSessionsPanel| {
                p.ui(ui);
            },
            panel,
        );
        h.run();
        assert!(h.query_by_label("Live sessions (1 running)").is_some());
        assert_eq!(h.query_all_by_label("Open live").count(), 1);
        assert_eq!(h.query_all_by_label("Remove").count(), ENDED_SHOWN);
        h.get_by_label("Show all 12 ended sessions").click();
        h.run();
        assert_eq!(h.query_all_by_label("Remove").count(), 12);
        assert_eq!(h.query_all_by_label("Stop").count(), 1);
    }
}
