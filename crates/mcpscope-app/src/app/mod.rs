//! The app shell, as rerun's `re_viewer/src/app/` is: [`McpscopeApp`] holds
//! the open tabs (each a [`SessionView`], the one on screen `tabs[active_tab]`)
//! and the app-wide panels. A frame runs `logic` ([`pump`]: drain every
//! session within a time budget, poll workers) then `ui` ([`ui`]: draw and
//! collect [`Command`]s), and the commands are applied once drawing is done
//! ([`commands`]).

mod bottom;
mod chrome;
mod commands;
mod dialogs;
mod import;
mod pump;
mod restore;
mod tabs;
mod ui;

use crate::composer::ComposerAction;
use crate::inspection::{Inspection, LoadState, Outgoing};
use crate::panels::detail::DetailAction;
use crate::panels::diff_view::{DiffAction, DiffView, Side};
use crate::panels::expert::ExpertAction;
use crate::panels::file_picker::FilePicker;
use crate::panels::launcher::{ImportedServer, LauncherAction, LauncherPanel};
use crate::panels::live_sessions::{LiveAction, LiveSessionsPanel};
use crate::panels::log_view::LogAction;
use crate::panels::notifications::NotificationsAction;
use crate::panels::stats_view::StatsAction;
use crate::panels::timeline::TimelineAction;
use crate::panels::watch_client::WatchClientDialog;
use crate::saved_server::SavedServer;
use crate::tabs::{RightTab, SessionTab, SessionView};
use crate::theme::RowKindStyle as _;
use anyhow::Context as _;
use egui::{RichText, Ui};
use mcpscope_core::config::server_config::{self, Transport};
use mcpscope_core::protocol::methods;
use mcpscope_core::sessions::index::{self as session_index, ListedSession};
use mcpscope_core::timeline::model::Severity;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use crate::{app_host, error_view, inspection, intercept_link, job, panels, remote_proxies, sign_in, theme, tokens};
use commands::Command;

/// How the app was started from the command line.
#[derive(Clone, Debug, Default)]
pub struct StartupArgs {
    pub config: Option<PathBuf>,
    pub server: Option<String>,
    pub launch: Vec<String>,
    pub open: Option<PathBuf>,
    /// Two captures to compare side by side.
    pub diff: Option<(PathBuf, PathBuf)>,
    /// Send each launched session's traces to this OpenTelemetry collector.
    pub otlp_endpoint: Option<String>,
}

/// The icon the Debian package installs (assets/mcpscope.png), for the window too.
fn window_icon() -> egui::IconData {
    eframe::icon_data::from_png_bytes(include_bytes!("../../../../assets/mcpscope.png")).unwrap_or_default()
}

pub fn run(args: StartupArgs) -> ExitCode {
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_inner_size([1440.0, 900.0])
            .with_min_inner_size([800.0, 500.0])
            .with_title("mcpscope")
            // The desktop file's StartupWMClass: the menu entry and the window are one app.
            .with_app_id("mcpscope")
            .with_icon(window_icon()),
        persistence_path: state_file(),
        ..Default::default()
    };
    match eframe::run_native(
        "mcpscope",
        options,
        Box::new(move |cc| Ok(Box::new(McpscopeApp::new(cc, args)))),
    ) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcpscope: cannot open the window: {e}");
            eprintln!(
                "mcpscope: without a display, run it under Xvfb (scripts/run does), or use the CLI: mcpscope --help"
            );
            ExitCode::from(1)
        }
    }
}

/// The app's saved state (recent servers, window layout), readable by the
/// user alone: `app.ron` in mcpscope's private directory (0700), created 0600.
/// The file eframe used to write (`~/.local/share/mcpscope/app.ron`, 0644,
/// which held environment and header values) is moved there once.
/// Without a private directory nothing is saved.
fn state_file() -> Option<PathBuf> {
    let dir = match mcpscope_core::record::private_files::state_dir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!(
                "mcpscope: not saving the app's state: {ec}",
                ec = mcpscope_core::text::ErrorChain(&e)
            );
            return None;
        }
    };
    let file = dir.join("app.ron");
    if let Some(old) = eframe::storage_dir("mcpscope").map(|d| d.join("app.ron"))
        && old != file
        && old.exists()
    {
        if !file.exists() {
            let _ = std::fs::copy(&old, &file);
        }
        let _ = std::fs::remove_file(&old);
    }
    // eframe creates the file with the default mode: create it first, the
    // user's alone.
    let _ = mcpscope_core::record::state_dir::create_private_file(&file)
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"{}"));
    let _ = mcpscope_core::platform::fs::restrict_file_to_owner(&file);
    Some(file)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DialogPurpose {
    OpenCapture,
    SaveCapture,
    ExportHar,
    ImportConfig,
    WorkingDirectory,
    DiffSide(Side),
    /// A capture whose recorded chat the Chat mode replays.
    ChatRecording,
    /// The folder whose test files the Collections window lists.
    CollectionsFolder,
    /// The test file a waiting Save to collection goes into (or a new one).
    SaveToCollection,
}

/// The tabs of the bottom panel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BottomTab {
    Stderr,
    Expert,
    Notifications,
    Log,
    /// Conversations, endpoints, response times, the I/O graph, Expert Info, context cost.
    Statistics,
    Load,
    /// A proxied session's held frames, breakpoints, fault rules and inject.
    Intercept,
    /// The MCP Apps (Views) the session hosts, and what they said to the host.
    App,
}

pub struct McpscopeApp {
    pub launcher: LauncherPanel,
    pub diff: DiffView,
    pub verify: panels::verify_view::VerifyView,
    pub collections: panels::collections_view::CollectionsView,
    /// A capture being opened for a click in Collections: the frame to select once it is.
    select_on_open: Option<(PathBuf, u64)>,
    /// The mcpscope binary File → Mock runs (`None`: this one; tests name the CLI).
    pub mcpscope_binary: Option<String>,
    pub console_open: bool,
    pub bottom_tab: BottomTab,
    /// The bottom tab the panel was last opened to the size of, and the
    /// panel's height last frame.
    bottom_sized_for: Option<BottomTab>,
    bottom_height: f32,
    /// `MCPSCOPE_OPEN_TRACE=1`: when a capture being opened began, to say on
    /// stderr when its first rows and its end came (BENCHMARKS.md's open figures).
    open_trace: Option<std::time::Instant>,
    /// The in-app picker the user left for the system dialog.
    picker_behind_dialog: Option<FilePicker>,
    /// A running tab the user asked to close: asked about first.
    pub closing: Option<usize>,
    /// Filter history, saved filters and colouring rules (every tab's).
    filter_prefs: panels::filter_bar::FilterPrefs,
    /// One line of feedback in the status bar (e.g. "capture saved").
    pub message: Option<(Severity, String)>,
    dialog: Option<(DialogPurpose, crate::job::Job<Option<PathBuf>>)>,
    /// A capture being opened: shown once its header is read.
    opening: Option<Inspection>,
    /// A config file being read.
    importing: Option<import::Importing>,
    /// The in-app file picker, while open.
    pub picker: Option<(DialogPurpose, FilePicker)>,
    ctx: egui::Context,
    /// File work running on workers: what it is, and its outcome when done.
    jobs: Vec<(String, crate::job::Job<anyhow::Result<String>>)>,
    waker: Arc<dyn Fn() + Send + Sync>,
    /// Every open session, each with every view of it; the one on screen is
    /// `tabs[active_tab]` (the others go on draining theirs).
    pub tabs: Vec<SessionTab>,
    pub active_tab: usize,
    /// Proxied sessions recorded for real clients.
    pub live: LiveSessionsPanel,
    /// The "Watch in your client" confirmation, while open.
    pub watch_client: Option<WatchClientDialog>,
    /// OAuth tokens kept between runs (the keyring, else a private file).
    pub tokens: tokens::AppTokens,
    /// The last run's tabs, while they are brought back.
    pub(crate) restoring: crate::restore::Restoring,
    /// Launched sessions send their traces here (`mcpscope --otlp-endpoint`).
    pub otlp_endpoint: Option<String>,
    /// Status-bar notes waiting for a more pressing message to be read.
    waiting_notes: Vec<(Severity, String)>,
    /// Reverse proxies for the remote entries wrapped from the app.
    pub remote_proxies: remote_proxies::RemoteProxies,
}

const RECENT_KEY: &str = "recent_servers";
/// The narrowest the timeline gets while the side panels have room to give.
const TIMELINE_MIN: f32 = 440.0;
/// The narrowest the right panel gets when the launcher is dragged wide.
const RIGHT_MIN: f32 = 220.0;

/// The bottom panel's (min, default, max) height: the timeline keeps at
/// least a third of the window at any size, and the panel can be dragged
/// down to a few lines whichever tab it shows (each tab scrolls). The
/// Load, Intercept and App tabs open taller, where there is room.
pub(crate) fn bottom_panel_sizes(tab: BottomTab, available: f32, window: f32) -> (f32, f32, f32) {
    let max = (available - window / 3.0).max(90.0);
    let wanted: f32 = match tab {
        BottomTab::Load | BottomTab::Statistics => 330.0,
        BottomTab::Intercept => 380.0,
        BottomTab::App => 240.0,
        _ => 170.0,
    };
    (60.0_f32.min(max), wanted.min(max), max)
}
const FILTERS_KEY: &str = "display_filters";
const TABS_KEY: &str = "tabs";
/// The Collections window's folder and environment.
const COLLECTIONS_KEY: &str = "collections";

impl McpscopeApp {
    pub fn new(cc: &eframe::CreationContext<'_>, args: StartupArgs) -> Self {
        let ctx = cc.egui_ctx.clone();
        let mut app = Self::with_context(ctx);
        app.tokens = tokens::AppTokens::open_preferred(Some(Arc::clone(&app.waker)));
        if let Some(storage) = cc.storage
            && let Some(recent) = eframe::get_value::<Vec<SavedServer>>(storage, RECENT_KEY)
        {
            // State saved by older versions held secret values: drop them.
            app.launcher.recent = recent.iter().map(SavedServer::without_secrets).collect();
        }
        if let Some(storage) = cc.storage
            && let Some(prefs) = eframe::get_value(storage, FILTERS_KEY)
        {
            app.filter_prefs = prefs;
        }
        if let Some(storage) = cc.storage
            && let Some((folder, env)) =
                eframe::get_value::<(Option<PathBuf>, Option<String>)>(storage, COLLECTIONS_KEY)
        {
            app.collections.env = env;
            if let Some(folder) = folder.filter(|f| f.is_dir()) {
                app.collections.set_folder(folder, &app.waker);
            }
        }
        let nothing_asked =
            args.open.is_none() && args.diff.is_none() && args.config.is_none() && args.launch.is_empty();
        if nothing_asked
            && let Some(storage) = cc.storage
            && let Some(tabs) = eframe::get_value::<Vec<crate::restore::TabMemory>>(storage, TABS_KEY)
        {
            app.restore_tabs(tabs);
        }
        app.startup(args);
        app
    }

    /// An app bound to `ctx`, without persisted state (tests use this).
    pub fn with_context(ctx: egui::Context) -> Self {
        // A blinking text cursor asks for a frame twice a second for as long
        // as a field has the focus: with software rendering (50-100 ms a
        // frame) an idle window with the filter box focused used ~20% of a core.
        ctx.all_styles_mut(|s| s.visuals.text_cursor.blink = false);
        Self {
            launcher: LauncherPanel::default(),
            diff: DiffView::default(),
            verify: panels::verify_view::VerifyView::default(),
            collections: Default::default(),
            select_on_open: None,
            mcpscope_binary: None,
            console_open: true,
            bottom_tab: BottomTab::Stderr,
            bottom_sized_for: None,
            bottom_height: 0.0,
            open_trace: None,
            filter_prefs: Default::default(),
            closing: None,
            picker_behind_dialog: None,
            message: None,
            dialog: None,
            opening: None,
            importing: None,
            picker: None,
            ctx: ctx.clone(),
            jobs: Vec::new(),
            waker: Arc::new(move || ctx.request_repaint()),
            tabs: vec![SessionTab::default()],
            active_tab: 0,
            live: LiveSessionsPanel::default(),
            watch_client: None,
            tokens: tokens::AppTokens::in_memory(),
            restoring: crate::restore::Restoring::default(),
            otlp_endpoint: None,
            waiting_notes: Vec::new(),
            remote_proxies: remote_proxies::RemoteProxies::default(),
        }
    }

    pub fn startup(&mut self, args: StartupArgs) {
        self.otlp_endpoint = args.otlp_endpoint;
        if let Some((a, b)) = args.diff {
            self.diff.a = Some(a);
            self.diff.set(Side::B, b, &self.waker);
        }
        if let Some(path) = args.open {
            self.apply(Command::OpenCapture(path));
        } else if let (Some(config), Some(name)) = (args.config, args.server) {
            self.import_config_then(&config, Some(name));
        } else if !args.launch.is_empty() {
            let saved = SavedServer {
                name: args.launch[0].clone(),
                program: args.launch[0].clone(),
                args: args.launch[1..].to_vec(),
                protocol_version: mcpscope_core::protocol::handshake::DEFAULT_VERSION.to_owned(),
                ..SavedServer::default()
            };
            self.launcher.form = panels::launcher::LaunchForm::from_saved(&saved);
            self.apply(Command::Launch(Box::new(saved)));
        }
    }

    /// The session on screen and its views.
    pub fn session(&self) -> &SessionView {
        &self.tabs[self.active_tab].view
    }

    /// The session on screen and its views, to change.
    pub fn session_mut(&mut self) -> &mut SessionView {
        &mut self.tabs[self.active_tab].view
    }

    /// The recent servers as they are saved: names of environment variables
    /// and headers, never their values.
    pub fn saved_state(&self) -> Vec<SavedServer> {
        self.launcher.recent.iter().map(SavedServer::without_secrets).collect()
    }

    /// What the Load tab runs: the server on screen and the composer's tool
    /// call as the form has it (`ping` when no tool is chosen).
    pub fn load_setup(&self) -> Option<panels::load_view::LoadSetup> {
        let saved = self.session().last_launch.as_ref()?;
        let request = match self.session().composer.tool_call() {
            Some(inspection::Outgoing::Request { method, params, .. }) => {
                mcpscope_core::load::plan::RequestSpec { method, params }
            }
            _ => mcpscope_core::load::plan::RequestSpec {
                method: "ping".into(),
                params: None,
            },
        };
        Some(panels::load_view::LoadSetup {
            server: saved.name.clone(),
            target: saved.target(),
            era: saved.era_choice(),
            protocol_version: saved.protocol_version.clone(),
            request,
            otlp_endpoint: self.otlp_endpoint.clone(),
        })
    }

    /// Opens a capture file offline, in a tab of its own when the tab on screen shows a session.
    pub fn open_capture(&mut self, path: PathBuf) {
        self.apply(Command::OpenCapture(path));
    }

    fn running(&self) -> bool {
        self.session().inspection.as_ref().is_some_and(|i| i.model.running())
    }

    /// Ends the session on screen (off the UI thread: dropping it shuts the
    /// server down and may wait) and clears every view of it.
    fn replace_inspection(&mut self) {
        if let Some(old) = self.session_mut().end_session() {
            crate::job::detach("shutdown", move || drop(old));
        }
    }
}

impl eframe::App for McpscopeApp {
    fn logic(&mut self, ctx: &egui::Context, _frame: &mut eframe::Frame) {
        if self.pump() {
            ctx.request_repaint();
            return;
        }
        // The composer's debounce needs a frame at its time; the uptime ticks.
        // (The driver's timers are its owner thread's, which wakes the UI
        // when there is something new to draw.)
        let debounce = self
            .session()
            .composer
            .wants_repaint()
            .then_some(ui::composer_debounce());
        let tick = self.running().then_some(Duration::from_secs(1));
        let lint = self.tabs[self.active_tab]
            .view
            .expert
            .wakeup()
            .map(|t| t.saturating_duration_since(std::time::Instant::now()));
        let stats = self.tabs[self.active_tab]
            .view
            .stats
            .wakeup()
            .map(|t| t.saturating_duration_since(std::time::Instant::now()));
        if let Some(after) = [debounce, tick, lint, stats].into_iter().flatten().min() {
            ctx.request_repaint_after(after);
        }
    }

    fn ui(&mut self, ui: &mut Ui, _frame: &mut eframe::Frame) {
        self.frame_ui(ui);
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        eframe::set_value(storage, RECENT_KEY, &self.saved_state());
        eframe::set_value(storage, FILTERS_KEY, &self.filter_prefs);
        eframe::set_value(storage, TABS_KEY, &self.tab_memories());
        let collections = (
            self.collections.folder().map(Path::to_owned),
            self.collections.env.clone(),
        );
        eframe::set_value(storage, COLLECTIONS_KEY, &collections);
    }

    fn on_exit(&mut self) {
        // Every server is asked to stop first, so their grace periods run
        // side by side; dropping each then waits for its shutdown (close
        // stdin, SIGTERM, SIGKILL) to end.
        let mut stopping: Vec<Inspection> = self.tabs.iter_mut().filter_map(|t| t.view.inspection.take()).collect();
        for i in &mut stopping {
            i.stop();
        }
        drop(stopping);
        self.remote_proxies.stop_all();
        for t in &mut self.tabs {
            t.view.load.stop();
        }
    }
}
