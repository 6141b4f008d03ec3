//! The desktop app. `logic` drains the session's channel within a time budget;
//! `ui` only draws and collects [`Command`]s, applied once drawing is done.

pub mod app_host;
mod bottom;
mod chrome;
pub mod composer;
mod dialogs;
pub mod error_view;
pub mod inspection;
pub mod intercept_link;
pub mod job;
pub mod live_follow;
pub mod live_pilot;
pub mod memory;
pub mod panels;
pub mod remote_proxies;
pub mod restore;
pub mod tabs;
pub mod theme;
pub mod tokens;
pub mod traces;

use self::composer::ComposerAction;
use self::inspection::{Inspection, LoadState, Outgoing};
use self::panels::detail::{DetailAction, DetailPanel};
use self::panels::diff_view::{DiffAction, DiffView, Side};
use self::panels::expert::ExpertAction;
use self::panels::file_picker::FilePicker;
use self::panels::launcher::{ImportedServer, LauncherAction, LauncherPanel, SavedServer};
use self::panels::live_sessions::{LiveAction, LiveSessionsPanel};
use self::panels::log_view::LogAction;
use self::panels::notifications::NotificationsAction;
use self::panels::timeline::TimelineAction;
use self::panels::watch_client::WatchClientDialog;
use self::tabs::{SessionTab, SessionView};
use self::theme::RowKindStyle as _;
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
    eframe::icon_data::from_png_bytes(include_bytes!("../../../assets/mcpscope.png")).unwrap_or_default()
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
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
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
    // eframe creates the file with the default mode: create it first, 0600.
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&file)
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"{}"));
    let _ = std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600));
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
}

/// Side effects asked for while drawing.
#[derive(Debug)]
enum Command {
    Launch(Box<SavedServer>),
    Stop,
    Restart,
    OpenCapture(PathBuf),
    /// Serve this capture with `mcpscope mock` in a new tab.
    MockCapture(PathBuf),
    SaveCapture(PathBuf),
    /// Write the open capture as HAR 1.2 there.
    ExportHar(PathBuf),
    ImportConfig(PathBuf),
    Pick(DialogPurpose),
    Select(usize),
    /// Select a row and bring the Frame tab forward (a click on the timeline).
    ShowRow(usize),
    /// Select several rows at once (a lint finding's frames); the first is shown.
    SelectRows(Vec<usize>),
    Compose(ComposerAction),
    /// Send a recorded request again (the Frame tab's Replay); its row is
    /// selected when it comes.
    Replay(String, Option<serde_json::Value>),
    Ping,
    /// Open a proxied session in a tab, following it while it runs.
    OpenLive(Box<ListedSession>),
    StopProxied(Box<ListedSession>),
    RemoveProxied(Box<ListedSession>),
    /// Ask before wrapping the imported config for its client.
    WatchInClient,
    /// Apply a condition as the timeline's filter (no join), or join it to the filter.
    Filter(Option<mcpscope_core::filter::Join>, String),
    /// Start the server a restored tab ran.
    Relaunch,
    DismissRelaunch,
}

/// The tabs of the right panel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RightTab {
    Frame,
    Compose,
}

/// The tabs of the bottom panel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BottomTab {
    Stderr,
    Expert,
    Notifications,
    Log,
    Latency,
    Load,
    /// A proxied session's held frames, breakpoints, fault rules and inject.
    Intercept,
    /// The MCP Apps (Views) the session hosts, and what they said to the host.
    App,
}

pub struct McpscopeApp {
    pub launcher: LauncherPanel,
    /// The session on screen and its views (the other tabs' are parked in
    /// `tabs`; switching tabs swaps this one struct).
    pub session: SessionView,
    pub diff: DiffView,
    pub verify: panels::verify_view::VerifyView,
    /// The mcpscope binary File → Mock runs (`None`: this one; tests name the CLI).
    pub mcpscope_binary: Option<String>,
    pub right_tab: RightTab,
    pub console_open: bool,
    pub bottom_tab: BottomTab,
    /// The bottom tab the panel was last opened to the size of, and the
    /// panel's height last frame.
    bottom_sized_for: Option<BottomTab>,
    bottom_height: f32,
    /// `MCPSCOPE_OPEN_TRACE=1`: when a capture being opened began, to say on
    /// stderr when its first rows and its end came (the README's open figures).
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
    importing: Option<Importing>,
    /// The in-app file picker, while open.
    pub picker: Option<(DialogPurpose, FilePicker)>,
    ctx: egui::Context,
    /// File work running on workers: what it is, and its outcome when done.
    jobs: Vec<(String, crate::job::Job<anyhow::Result<String>>)>,
    waker: Arc<dyn Fn() + Send + Sync>,
    /// Every open session; the one on screen is `active_tab`, whose state is
    /// in the fields above (its slot holds only its title).
    pub tabs: Vec<SessionTab>,
    pub active_tab: usize,
    /// Proxied sessions recorded for real clients.
    pub live: LiveSessionsPanel,
    /// The "Watch in your client" confirmation, while open.
    pub watch_client: Option<WatchClientDialog>,
    /// OAuth tokens kept between runs (the keyring, else a private file).
    pub tokens: tokens::AppTokens,
    /// The last run's tabs, while they are brought back.
    pub(crate) restoring: restore::Restoring,
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
        BottomTab::Load => 330.0,
        BottomTab::Intercept => 380.0,
        BottomTab::App => 240.0,
        _ => 170.0,
    };
    (60.0_f32.min(max), wanted.min(max), max)
}
const FILTERS_KEY: &str = "display_filters";
const TABS_KEY: &str = "tabs";

/// A config file being read on a worker.
struct Importing {
    path: PathBuf,
    job: crate::job::Job<anyhow::Result<ConfigRead>>,
    /// The server to launch once it is read (`--config F --server NAME`).
    launch: Option<String>,
}

/// A config file, read and turned into launcher entries (on the worker).
struct ConfigRead {
    format: String,
    servers: Vec<ImportedServer>,
    problems: Vec<String>,
}

fn read_config(path: &Path) -> anyhow::Result<ConfigRead> {
    let import = server_config::load_config(path)?;
    let servers = import
        .servers
        .into_iter()
        .map(|s| match s.transport {
            Transport::Stdio(spec) => ImportedServer {
                saved: Some(SavedServer {
                    name: s.name.clone(),
                    program: spec.program,
                    args: spec.args,
                    env: spec.env,
                    cwd: spec.cwd.map(|c| c.display().to_string()),
                    protocol_version: mcpscope_core::protocol::handshake::DEFAULT_VERSION.to_owned(),
                    ..SavedServer::default()
                }),
                name: s.name,
                notes: s.notes,
            },
            Transport::Http { url, headers, kind } => ImportedServer {
                saved: Some(SavedServer::http(&s.name, &url, kind, headers)),
                name: s.name,
                notes: s.notes,
            },
        })
        .collect();
    Ok(ConfigRead {
        format: import.format.label().to_owned(),
        servers,
        problems: import.problems.iter().map(ToString::to_string).collect(),
    })
}

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
        let nothing_asked =
            args.open.is_none() && args.diff.is_none() && args.config.is_none() && args.launch.is_empty();
        if nothing_asked
            && let Some(storage) = cc.storage
            && let Some(tabs) = eframe::get_value::<Vec<restore::TabMemory>>(storage, TABS_KEY)
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
            session: SessionView::default(),
            diff: DiffView::default(),
            verify: panels::verify_view::VerifyView::default(),
            mcpscope_binary: None,
            right_tab: RightTab::Frame,
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
            restoring: restore::Restoring::default(),
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

    /// Loads a config file into the launcher's import list, reading and
    /// parsing it on a worker (a config may list 200,000 servers).
    pub fn import_config(&mut self, path: &Path) {
        self.import_config_then(path, None);
    }

    /// [`McpscopeApp::import_config`], then launches the server of this name.
    fn import_config_then(&mut self, path: &Path, launch: Option<String>) {
        let from = path.to_owned();
        let job = crate::job::Job::spawn("import", Some(Arc::clone(&self.waker)), move || read_config(&from));
        self.importing = Some(Importing {
            path: path.to_owned(),
            job,
            launch,
        });
        self.message = Some((Severity::Info, format!("reading {}…", path.display())));
    }

    /// Whether a config file is being read.
    pub fn importing(&self) -> bool {
        self.importing.is_some()
    }

    fn poll_import(&mut self) {
        let Some(job) = &mut self.importing else { return };
        let Some(result) = job.job.poll() else { return };
        let job = self.importing.take().expect("checked above");
        let path = job.path;
        match result.unwrap_or_else(|dead| Err(dead.into())) {
            Ok(read) => {
                self.message = Some((
                    Severity::Info,
                    format!(
                        "{}: {} server(s) from {}",
                        read.format,
                        read.servers.len(),
                        path.display()
                    ),
                ));
                if let Some(name) = job.launch {
                    match read.servers.iter().find(|s| s.name == name).cloned() {
                        Some(ImportedServer { saved: Some(s), .. }) => self.apply(Command::Launch(Box::new(s))),
                        Some(ImportedServer { notes, .. }) => {
                            self.message =
                                Some((Severity::Error, format!("cannot launch {name}: {}", notes.join("; "))))
                        }
                        None => {
                            let mut text = format!("no server named {name:?} in {}", path.display());
                            let names: Vec<&str> = read.servers.iter().map(|s| s.name.as_str()).collect();
                            if names.is_empty() {
                                text.push_str(": it lists no servers");
                            } else {
                                const NAMES_SHOWN: usize = 20;
                                let mut list = names.iter().take(NAMES_SHOWN).copied().collect::<Vec<_>>().join(", ");
                                if names.len() > NAMES_SHOWN {
                                    list.push_str(&format!(" and {} more", names.len() - NAMES_SHOWN));
                                }
                                text.push_str(&format!(" (it has: {list})"));
                            }
                            if !read.problems.is_empty() {
                                text.push_str(&format!("; {}", read.problems.join("; ")));
                            }
                            self.message = Some((Severity::Error, text))
                        }
                    }
                }
                self.launcher.imported = Some((path, read.servers, read.problems));
            }
            Err(e) => {
                self.launcher.imported = None;
                let text = format!("{}: {e}", path.display());
                self.message = Some(match job.launch {
                    // The config could not be read: that is the problem to
                    // show, not a missing server name.
                    Some(name) => (Severity::Error, format!("cannot launch {name:?}: {text}")),
                    None => (Severity::Error, text),
                });
            }
        }
    }

    /// The recent servers as they are saved: names of environment variables
    /// and headers, never their values.
    pub fn saved_state(&self) -> Vec<SavedServer> {
        self.launcher.recent.iter().map(SavedServer::without_secrets).collect()
    }

    /// What the Load tab runs: the server on screen and the composer's tool
    /// call as the form has it (`ping` when no tool is chosen).
    pub fn load_setup(&self) -> Option<panels::load_view::LoadSetup> {
        let saved = self.session.last_launch.as_ref()?;
        let request = match self.session.composer.tool_call() {
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
        self.session.inspection.as_ref().is_some_and(|i| i.model.running())
    }

    /// Ends the session on screen (off the UI thread: dropping it shuts the
    /// server down and may wait) and clears every view of it.
    fn replace_inspection(&mut self) {
        if let Some(old) = self.session.end_session() {
            crate::job::detach("shutdown", move || drop(old));
        }
    }

    /// Clears the views of a followed capture that started over.
    fn reset_views(&mut self) {
        self.session.reset_views();
    }

    /// Starts `saved` in the tab on screen, replacing its session.
    fn launch_here(&mut self, saved: SavedServer) {
        let auth = match saved.oauth.auth_config() {
            Ok(a) => a,
            Err(e) => {
                self.message = Some((
                    Severity::Error,
                    format!("{} not launched: {}", saved.name, error_view::one_line(&e)),
                ));
                return;
            }
        };
        // Through an intercepting proxy: the same server, started by
        // `mcpscope proxy`, whose control socket the Intercept tab attaches to.
        let intercepted = match intercept_link::through_proxy(&saved, self.mcpscope_binary.as_deref()) {
            Ok(t) => t,
            Err(e) => {
                self.message = Some((Severity::Error, format!("{} not launched: {e}", saved.name)));
                return;
            }
        };
        self.replace_inspection();
        // Into Recent once the server has answered: a launch that failed is
        // not a server to come back to.
        self.session.unremembered = Some(saved.clone());
        self.tokens.keep_launcher_values(&saved);
        let target = intercepted
            .as_ref()
            .map_or_else(|| saved.target(), |i| i.target.clone());
        self.session.inspection = Some(Inspection::launch_signing_in(
            target,
            &saved.protocol_version,
            saved.era_choice(),
            auth,
            mcpscope_core::transport::auth::Interaction::Browser,
            inspection::AppServices {
                tokens: &self.tokens,
                otlp_endpoint: self.otlp_endpoint.as_deref(),
                apps: !saved.text_only,
            },
            Some(Arc::clone(&self.waker)),
        ));
        if let (Some(via), Some(i)) = (intercepted, self.session.inspection.as_mut()) {
            let waker: job::Wake = Arc::clone(&self.waker);
            let mut link = intercept_link::InterceptLink::start(&via.socket, Some(waker));
            link.record = Some(via.record);
            i.intercept = Some(link);
            i.own_proxy = via.own_proxy;
        }
        self.tabs[self.active_tab].title = saved.name.clone();
        self.message = Some((Severity::Info, format!("launched {}", saved.command_line())));
        self.session.last_launch = Some(saved);
    }

    fn apply(&mut self, cmd: Command) {
        match cmd {
            Command::Launch(saved) => {
                // A running session keeps its tab; the new one gets its own.
                self.tab_for_new_session(saved.name.clone());
                self.launch_here(*saved);
            }
            Command::MockCapture(path) => {
                let me = match self
                    .mcpscope_binary
                    .clone()
                    .map_or_else(panels::watch_client::this_binary, Ok)
                {
                    Ok(me) => me,
                    Err(e) => {
                        self.message = Some((Severity::Error, error_view::one_line(&e)));
                        return;
                    }
                };
                let file = path
                    .file_name()
                    .map_or_else(|| path.display().to_string(), |f| f.to_string_lossy().into_owned());
                let saved = SavedServer {
                    name: format!("mock of {file}"),
                    program: me,
                    args: vec!["mock".into(), path.display().to_string()],
                    protocol_version: mcpscope_core::protocol::handshake::DEFAULT_VERSION.to_owned(),
                    // Probe first: a recording of either era answers as it was recorded.
                    era: "auto".into(),
                    ..SavedServer::default()
                };
                self.tab_for_new_session(saved.name.clone());
                self.launch_here(saved);
            }
            Command::Stop => {
                if let Some(i) = &mut self.session.inspection {
                    i.stop();
                }
            }
            Command::Restart => {
                // What the launcher shows, edits included (else what ran last).
                let form = self.launcher.form.to_saved();
                let edited = match (&form, &self.session.last_launch) {
                    (Ok(f), Some(last)) => f.target_differs(last),
                    _ => false,
                };
                let again = form.ok().or_else(|| self.session.last_launch.clone());
                // An intercepted session restarts with its breakpoints and rules.
                let again = match (again, &self.session.inspection) {
                    (Some(s), Some(i)) => Some(intercept_link::with_live_rules(s, i)),
                    (again, _) => again,
                };
                if let Some(s) = again {
                    let composer = std::mem::take(&mut self.session.composer);
                    self.launch_here(s);
                    self.session.composer = composer;
                    self.session.composer.restart();
                    if edited && let Some(s) = &self.session.last_launch {
                        self.message = Some((
                            Severity::Info,
                            format!("restarted with the launcher's edits: {}", s.command_line()),
                        ));
                    }
                }
            }
            Command::OpenCapture(path) => {
                if std::env::var_os("MCPSCOPE_OPEN_TRACE").is_some() {
                    self.open_trace = Some(std::time::Instant::now());
                }
                // Read on a worker: the rows appear as they are read.
                self.opening = Some(Inspection::open_capture_in_background(
                    &path,
                    Some(Arc::clone(&self.waker)),
                ));
                self.message = Some((Severity::Info, format!("opening {}…", path.display())));
            }
            Command::SaveCapture(path) => match self.session.inspection.as_ref().and_then(|i| i.capture_path.clone()) {
                Some(from) => {
                    let to = path.clone();
                    self.background(format!("saving the capture to {}", path.display()), move || {
                        Inspection::save_capture(&from, &to).map(|()| format!("capture saved to {}", to.display()))
                    });
                }
                None => self.message = Some((Severity::Warning, "nothing to save yet".into())),
            },
            Command::ExportHar(path) => match self.session.inspection.as_ref().and_then(|i| i.capture_path.clone()) {
                Some(from) => {
                    let to = path.clone();
                    self.background(format!("exporting HAR to {}", path.display()), move || {
                        use mcpscope_core::record::output_file::{WriteWithError, write_with};
                        // Written as the capture is read, through the one rule for
                        // output files, as `mcpscope export` does.
                        let mut n = 0;
                        let written = write_with(&to, |out| {
                            n = mcpscope_core::interop::write_har(&from, env!("CARGO_PKG_VERSION"), out, &mut |_| {})?;
                            Ok::<(), mcpscope_core::interop::ExportError>(())
                        });
                        match written {
                            Ok(()) => Ok(format!("{n} HAR entries written to {}", to.display())),
                            Err(WriteWithError::Content(e)) => Err(anyhow::Error::new(e)),
                            Err(WriteWithError::Output(e)) => Err(anyhow::Error::new(e)),
                        }
                    });
                }
                None => self.message = Some((Severity::Warning, "nothing to export yet".into())),
            },
            Command::ImportConfig(path) => self.import_config(&path),
            Command::Pick(purpose) => self.pick(purpose),
            Command::SelectRows(rows) => {
                if let Some(&first) = rows.first() {
                    self.apply(Command::Select(first));
                }
                self.session.timeline.highlighted = rows;
            }
            Command::Compose(action) => self.compose(action),
            Command::Ping => {
                if let Some(i) = &mut self.session.inspection {
                    self.session.ping = i.send(inspection::Outgoing::Request {
                        method: methods::PING.into(),
                        params: None,
                        id: None,
                    });
                }
            }
            Command::OpenLive(s) => match self.tab_showing(&s.capture_path) {
                Some(idx) => self.activate_tab(idx),
                None => {
                    self.tab_for_new_session(s.record.name.clone());
                    self.message = Some((
                        Severity::Info,
                        format!("following {} ({})", s.record.name, s.capture_path.display()),
                    ));
                    self.session.inspection = Some(Inspection::follow(*s, Some(Arc::clone(&self.waker))));
                }
            },
            Command::StopProxied(s) => {
                let name = s.record.name.clone();
                self.background(format!("stopping {name}"), move || {
                    session_index::request_stop(&s)
                        .map(|()| format!("asked the proxy of {name} to stop"))
                        .with_context(|| format!("cannot stop {name}"))
                });
            }
            Command::RemoveProxied(s) => {
                if let Some(idx) = self.tab_showing(&s.capture_path) {
                    self.close_tab(idx);
                }
                let name = s.record.name.clone();
                self.background(format!("removing {name}"), move || {
                    session_index::remove_session(&s)
                        .map(|()| format!("removed the session {name}"))
                        .with_context(|| format!("cannot remove {name}"))
                });
            }
            Command::WatchInClient => {
                if let Some((path, servers, _)) = &self.launcher.imported {
                    let names = servers.iter().map(|s| s.name.clone()).collect();
                    self.watch_client = Some(WatchClientDialog::new(path.clone(), names));
                }
            }
            Command::ShowRow(row) => {
                self.right_tab = RightTab::Frame;
                self.apply(Command::Select(row));
            }
            Command::Replay(method, params) => self.replay(method, params),
            Command::Relaunch => self.relaunch(),
            Command::DismissRelaunch => self.session.restored = None,
            Command::Filter(join, cond) => {
                let text = match join {
                    None => cond,
                    Some(j) => mcpscope_core::filter::combine(&self.session.timeline.filter.text, j, &cond),
                };
                self.session.timeline.filter.set_text(text);
            }
            Command::Select(row) => {
                self.session.timeline.highlighted.clear();
                self.session.timeline.select(row);
                if let Some(i) = &self.session.inspection {
                    self.session.detail.show_row(&i.model, Some(row));
                }
            }
        }
    }

    /// Puts the launched server into Recent once it has answered, and drops
    /// it if it could not start or ended without a word.
    fn remember_answered_launch(&mut self) {
        let (Some(saved), Some(i)) = (&self.session.unremembered, &self.session.inspection) else {
            return;
        };
        let m = &i.model;
        if m.counts.results + m.counts.errors > 0 {
            // Recent keeps the server, not a session's breakpoints and rules.
            let saved = SavedServer {
                intercept_breaks: Vec::new(),
                intercept_faults: Vec::new(),
                ..saved.clone()
            };
            self.launcher.remember(&saved);
            self.session.unremembered = None;
        } else if m.spawn_error.is_some() || m.exit.is_some() || m.closed {
            self.session.unremembered = None;
        }
    }

    /// Sends a recorded request again; `pump` selects its row when it comes.
    fn replay(&mut self, method: String, params: Option<serde_json::Value>) {
        let Some(i) = &mut self.session.inspection else { return };
        if !i.model.running() {
            self.message = Some((
                Severity::Warning,
                "not replayed: this session's server is not running (Relaunch starts it again)".into(),
            ));
            return;
        }
        let out = Outgoing::Request {
            method,
            params,
            id: None,
        };
        let id = i.send(out.clone());
        self.session.composer.sent(out, id.clone());
        self.session.replayed = id;
    }

    /// Selects a replayed request's row once the session has recorded it.
    fn show_replayed(&mut self) {
        let (Some(id), Some(i)) = (&self.session.replayed, &self.session.inspection) else {
            return;
        };
        let store = &i.model.store;
        // It is among the newest rows: look back a little way only.
        let found = (store.len().saturating_sub(4096)..store.len()).rev().find(|&r| {
            store.get(r).is_some_and(|row| {
                row.lane() == mcpscope_core::timeline::store::Lane::Out
                    && row.kind() == mcpscope_core::wire::classify::Kind::Request
                    && row.id().as_ref() == Some(id)
            })
        });
        if let Some(row) = found {
            self.message = Some((Severity::Info, format!("replayed as row {row} (id {id})")));
            self.session.replayed = None;
            self.apply(Command::ShowRow(row));
        }
    }

    /// Carries out what the composer asked for.
    fn compose(&mut self, action: ComposerAction) {
        let Some(i) = &mut self.session.inspection else {
            self.message = Some((Severity::Warning, "no session to send to".into()));
            return;
        };
        let live = i.model.running();
        match action {
            ComposerAction::Inject { toward, bytes } => match i.intercept.as_mut() {
                Some(link) => {
                    if let Some(request) = (panels::intercept_view::InterceptAction::Inject { toward, bytes }).request()
                    {
                        link.send(request);
                    }
                }
                None => {
                    self.message = Some((Severity::Warning, "this session's proxy does not intercept".into()));
                }
            },
            ComposerAction::ReadSkillFile(_) if !live => {
                self.session.composer.skill_read_not_sent("the server is not running");
                self.message = Some((Severity::Warning, "the server is not running".into()));
            }
            ComposerAction::Send(_) | ComposerAction::RunTask(_) | ComposerAction::Listen(_) if !live => {
                self.message = Some((Severity::Warning, "the server is not running".into()));
            }
            ComposerAction::Send(out) => {
                let id = i.send(out.clone());
                // A tool with a View: the View opens in the browser beside the call.
                if let (
                    Some(id),
                    inspection::Outgoing::Request {
                        method,
                        params: Some(p),
                        ..
                    },
                ) = (&id, &out)
                    && method == mcpscope_core::protocol::methods::TOOLS_CALL
                    && i.apps_advertised
                    && let Some(name) = p.get("name").and_then(serde_json::Value::as_str)
                {
                    let tools = i.listed_tools();
                    if let Some(tool) = app_host::HostedApps::ui_tool(&tools, name).cloned() {
                        let arguments = p.get("arguments").cloned().unwrap_or_else(|| serde_json::json!({}));
                        i.open_app(&tool, arguments, Some(id.clone()), None);
                        self.bottom_tab = BottomTab::App;
                        self.console_open = true;
                    }
                }
                self.session.composer.sent(out, id);
            }
            ComposerAction::Complete(out) => {
                if let Some(id) = i.send(out) {
                    self.session.composer.completion_sent(id);
                }
            }
            ComposerAction::ReadSkillFile(out) => match i.send(out) {
                Some(id) => self.session.composer.skill_read_sent(id),
                None => self.session.composer.skill_read_not_sent("no session to send to"),
            },
            ComposerAction::RunTask(params) => {
                if let Some(id) = i.run_task(params.clone()) {
                    self.session.composer.task_started(params, id);
                }
            }
            ComposerAction::CancelTask(id) => i.cancel_task(&id),
            ComposerAction::Listen(filter) => {
                let out = inspection::Outgoing::Request {
                    method: mcpscope_core::protocol::subscriptions::LISTEN.into(),
                    params: Some(filter.listen_params()),
                    id: None,
                };
                let id = i.send(out.clone());
                self.session.composer.sent(out, id);
            }
            ComposerAction::Cancel(id) => i.cancel(&id),
            ComposerAction::Answer(q, outcome) => i.answer(q, outcome),
            ComposerAction::RootsChanged(roots) => {
                let n = roots.len();
                i.set_roots(roots);
                let modern = i.era().state == mcpscope_core::driver::EraState::Modern;
                let how = if modern {
                    "sent with the next roots input request"
                } else {
                    "server notified (notifications/roots/list_changed)"
                };
                self.message = Some((Severity::Info, format!("{n} root(s) offered; {how}")));
            }
        }
    }

    /// Runs file work on a worker (the UI thread never does I/O); its outcome
    /// shows in the status bar.
    fn background(&mut self, what: String, work: impl FnOnce() -> anyhow::Result<String> + Send + 'static) {
        let job = crate::job::Job::spawn("file", Some(Arc::clone(&self.waker)), work);
        self.message = Some((Severity::Info, format!("{what}…")));
        self.jobs.push((what, job));
    }

    fn poll_jobs(&mut self) {
        let mut done = Vec::new();
        self.jobs.retain_mut(|(what, job)| match job.poll() {
            Some(outcome) => {
                done.push(
                    outcome
                        .map_err(|dead| anyhow::Error::new(dead).context(what.clone()))
                        .and_then(|r| r),
                );
                false
            }
            None => true,
        });
        for outcome in done {
            self.message = Some(match outcome {
                Ok(text) => (Severity::Ok, text),
                Err(e) => (Severity::Error, error_view::one_line(&e)),
            });
        }
    }

    /// Applies waiting events; returns true when more work remains.
    pub fn pump(&mut self) -> bool {
        self.poll_dialog();
        self.poll_import();
        if let Some(said) = self.tokens.poll() {
            self.waiting_notes.push(said);
        }
        // The token store's notes wait while the status bar says something
        // more pressing (a launch that failed must not be hidden by them).
        if !self.waiting_notes.is_empty() && self.message.as_ref().is_none_or(|(s, _)| *s == Severity::Info) {
            self.message = Some(self.waiting_notes.remove(0));
        }
        if self.tokens.take_opened() {
            self.tokens.fill_kept(&mut self.launcher.recent);
        }
        self.poll_jobs();
        self.diff.poll();
        if let Some(panels::verify_view::VerifyAction::Compare { recorded, live }) = self.verify.poll() {
            // The recording and the live session, side by side.
            self.diff.set(Side::A, recorded, &self.waker);
            self.diff.set(Side::B, live, &self.waker);
        }
        self.live.poll(&self.waker);
        self.session.load.poll();
        if let Some(w) = &mut self.watch_client
            && let Some(outcome) = w.poll()
        {
            for line in self.remote_proxies.stop(&outcome.unwrapped) {
                outcome.lines.push(line);
            }
            for (ok, line) in self.remote_proxies.start(&outcome.remotes) {
                outcome.ok &= ok;
                outcome.lines.push(line);
            }
        }
        let mut more = self.pump_parked();
        self.live.open = (0..self.tabs.len())
            .filter_map(|t| self.tab_capture(t).cloned())
            .collect();
        let last_frame = Duration::from_secs_f32(self.ctx.input(|i| i.unstable_dt).clamp(0.0, 1.0));
        if let Some(o) = &mut self.opening {
            o.last_frame = last_frame;
            o.drain();
            if let LoadState::Failed(e) = o.load_state() {
                self.message = Some((Severity::Error, e));
                self.opening = None;
            } else if o.load_started() {
                if let Some(t) = self.open_trace {
                    eprintln!(
                        "open-trace: first rows after {:.0} ms ({} rows)",
                        t.elapsed().as_secs_f64() * 1e3,
                        o.model.store.len()
                    );
                }
                let opened = self.opening.take();
                // An imported file's tab is named after that file, not its private copy.
                let title = opened
                    .as_ref()
                    .and_then(|i| i.imported_from.as_ref().or(i.capture_path.as_ref()))
                    .and_then(|p| p.file_name())
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
                self.tab_for_new_session(title);
                self.session.inspection = opened;
            }
        }
        self.pump_restore();
        if let Some(i) = &self.session.inspection
            && i.resets != self.session.resets_seen
        {
            self.session.resets_seen = i.resets;
            self.reset_views();
        }
        if let Some(i) = &mut self.session.inspection {
            let was_loading = i.loading();
            i.last_frame = last_frame;
            more |= i.drain();
            i.pump_apps();
            if was_loading && !i.loading() {
                if let Some(t) = self.open_trace.take() {
                    eprintln!(
                        "open-trace: opened after {:.0} ms ({} rows)",
                        t.elapsed().as_secs_f64() * 1e3,
                        i.model.store.len()
                    );
                }
                let path = i.capture_path.clone().unwrap_or_default();
                self.message = Some(match i.load_state() {
                    LoadState::Failed(e) => (Severity::Error, e),
                    _ if i.load_warnings.is_empty() => (Severity::Info, format!("opened {}", path.display())),
                    _ => (
                        Severity::Warning,
                        format!("opened {} ({})", path.display(), i.load_warnings.join("; ")),
                    ),
                });
            }
            // The lint worker wakes the UI itself when it finishes.
            self.session
                .expert
                .poll(&i.model, i.capture_path.as_ref(), !i.loading(), &self.waker);
            self.session.composer.sync(&i.model);
            self.session.composer.task_flavor = i.task_flavor();
            // A question from the server brings the composer forward.
            if i.questions().len() > self.session.seen_server_requests {
                self.right_tab = RightTab::Compose;
            }
            self.session.seen_server_requests = i.questions().len();
            if self.session.expert.generation != self.session.marks_generation {
                self.session.marks_generation = self.session.expert.generation;
                self.session.timeline.finding_marks = self.session.expert.marks.clone();
                self.session.timeline.set_findings(&self.session.expert.findings);
            }
        }
        self.show_replayed();
        self.remember_answered_launch();
        more || self.session.detail.busy()
    }
}

impl DetailPanel {
    fn show_row_none(&mut self) {
        *self = DetailPanel::default();
    }
}

/// How soon the composer wants a frame while a field's text settles.
fn composer_debounce() -> Duration {
    Duration::from_millis(50)
}

fn format_duration(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m{:02}s", s / 3600, s / 60 % 60, s % 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

impl McpscopeApp {
    /// The session on screen: its timeline, or what to do when there is none.
    fn central_ui(&mut self, ui: &mut Ui, commands: &mut Vec<Command>) {
        match &self.session.inspection {
            None => {
                ui.vertical_centered(|ui| {
                ui.add_space(ui.available_height() / 3.0);
                ui.heading("mcpscope");
                ui.label("Launch a server on the left, open a capture (File, Open capture…), or import servers from a config file.");
            });
            }
            Some(i) => {
                if let Some(si) = &i.sign_in {
                    sign_in_banner(ui, si);
                }
                self.handshake_strip(ui);
                ui.separator();
                let title = &self.tabs[self.active_tab].title;
                let tools: Vec<String> = self
                    .session
                    .composer
                    .lists
                    .tools
                    .iter()
                    .map(|t| t.name.clone())
                    .collect();
                let transport = match &i.target {
                    Some(mcpscope_core::transport::target::Target::Http(h)) => h.kind.as_str(),
                    Some(_) => "stdio",
                    None if i.model.remote => "http",
                    None => "stdio",
                };
                let era = match i.era().era() {
                    Some(mcpscope_core::protocol::era::Era::Legacy) => Some("legacy"),
                    Some(mcpscope_core::protocol::era::Era::Modern) => Some("modern"),
                    None => None,
                };
                let cx = panels::timeline::FilterContext {
                    facts: mcpscope_core::filter::rows::SessionFacts {
                        session: Some(title),
                        transport: Some(transport),
                        era,
                        findings: None,
                        conversations: Some(&i.model.conversation_rows),
                    },
                    prefs: &mut self.filter_prefs,
                    tools: &tools,
                };
                if let Some(TimelineAction::Select(r)) = self.session.timeline.ui(ui, &i.model, cx) {
                    // A row picked on the timeline is shown, even over the composer.
                    commands.push(Command::ShowRow(r));
                }
            }
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
        let debounce = self.session.composer.wants_repaint().then_some(composer_debounce());
        let tick = self.running().then_some(Duration::from_secs(1));
        let lint = self
            .session
            .expert
            .wakeup()
            .map(|t| t.saturating_duration_since(std::time::Instant::now()));
        if let Some(after) = [debounce, tick, lint].into_iter().flatten().min() {
            ctx.request_repaint_after(after);
        }
    }

    fn ui(&mut self, ui: &mut Ui, _frame: &mut eframe::Frame) {
        let mut commands = Vec::new();
        let window_height = ui.max_rect().height();
        egui::Panel::top("menu").show(ui, |ui| self.menu_bar(ui, &mut commands));
        let mut tab_action = None;
        egui::Panel::top("tabs").show(ui, |ui| tab_action = self.tab_bar_ui(ui));
        egui::Panel::bottom("status").show(ui, |ui| self.status_bar(ui));
        let running = self.running();
        // The side panels give way to the timeline: at any window size it
        // keeps TIMELINE_MIN (the lifelines and the stderr lane), from
        // 1024x700 up; the panels share what is left, 2 to 3.
        // The launcher may widen into the right panel's share when dragged
        // (its rows are wide at 1024 px); the right panel takes what is left.
        let side_room = (ui.available_width() - TIMELINE_MIN).max(400.0);
        let left_max = (side_room - RIGHT_MIN).max(180.0);
        let left_default = (side_room * 0.4).max(180.0);
        egui::Panel::left("launcher")
            .resizable(true)
            .default_size(300.0_f32.min(left_default))
            .max_size(left_max)
            .show(ui, |ui| {
                egui::ScrollArea::vertical().id_salt("launcher-scroll").show(ui, |ui| {
                    match self.live.ui(ui) {
                        Some(LiveAction::Open(s)) => commands.push(Command::OpenLive(s)),
                        Some(LiveAction::Stop(s)) => commands.push(Command::StopProxied(s)),
                        Some(LiveAction::Remove(s)) => commands.push(Command::RemoveProxied(s)),
                        None => {}
                    }
                    ui.separator();
                    if let Some(a) = self.launcher.ui(ui, running) {
                        commands.push(match a {
                            LauncherAction::Launch(s) => Command::Launch(s),
                            LauncherAction::Stop => Command::Stop,
                            LauncherAction::Restart => Command::Restart,
                            LauncherAction::PickCwd => Command::Pick(DialogPurpose::WorkingDirectory),
                            LauncherAction::PickConfig => Command::Pick(DialogPurpose::ImportConfig),
                            LauncherAction::WatchInClient => Command::WatchInClient,
                        });
                    }
                });
            });
        let right_max = (ui.available_width() - TIMELINE_MIN).max(RIGHT_MIN);
        if self.console_open && self.session.inspection.is_some() {
            let (min, wanted, max) = bottom_panel_sizes(self.bottom_tab, ui.available_height(), window_height);
            let mut panel = egui::Panel::bottom("console")
                .resizable(true)
                .default_size(wanted)
                .min_size(min)
                .max_size(max);
            // A tab that needs room (Load's plots, Intercept's held frame)
            // opens the panel to its size once, when it is chosen; after
            // that the divider is the user's, both ways.
            if self.bottom_sized_for != Some(self.bottom_tab) {
                self.bottom_sized_for = Some(self.bottom_tab);
                if self.bottom_height < wanted {
                    panel = panel.exact_size(wanted);
                }
            }
            let shown = panel.show(ui, |ui| self.bottom_ui(ui, &mut commands));
            self.bottom_height = shown.response.rect.height();
        }
        egui::Panel::right("detail")
            .resizable(true)
            .default_size(460.0_f32.min(right_max))
            .max_size(right_max)
            .show(ui, |ui| {
                self.server_info_ui(ui, &mut commands);
                ui.separator();
                let asks = self.session.inspection.as_ref().map_or(0, |i| i.questions().len());
                ui.horizontal(|ui| {
                    ui.selectable_value(&mut self.right_tab, RightTab::Frame, "Frame");
                    let compose = if asks > 0 {
                        RichText::new(format!("Compose ({asks} waiting)")).color(theme::WARN)
                    } else {
                        RichText::new("Compose")
                    };
                    ui.selectable_value(&mut self.right_tab, RightTab::Compose, compose);
                });
                ui.separator();
                match self.right_tab {
                    RightTab::Frame => {
                        if let Some(i) = &self.session.inspection {
                            match self.session.detail.ui(ui, &i.model) {
                                Some(DetailAction::Select(r)) => commands.push(Command::Select(r)),
                                Some(DetailAction::Filter(join, cond)) => commands.push(Command::Filter(join, cond)),
                                Some(DetailAction::Replay(method, params)) => {
                                    commands.push(Command::Replay(method, params));
                                }
                                Some(DetailAction::EditReplay(method, params)) => {
                                    self.session.composer.load_raw_request(&method, params.as_ref());
                                    self.right_tab = RightTab::Compose;
                                }
                                None => {}
                            }
                        }
                    }
                    RightTab::Compose => match &self.session.inspection {
                        None => {
                            ui.weak("Launch a server to compose requests.");
                        }
                        Some(i) => {
                            egui::ScrollArea::vertical().id_salt("composer-scroll").show(ui, |ui| {
                                for a in self.session.composer.ui(ui, i) {
                                    commands.push(Command::Compose(a));
                                }
                            });
                        }
                    },
                }
            });
        egui::CentralPanel::default().show(ui, |ui| {
            if let Some(server) = self.session.restored.as_ref().and_then(|r| r.relaunch.as_ref()) {
                match restore::relaunch_offer_ui(ui, server) {
                    Some(restore::OfferAction::Relaunch) => commands.push(Command::Relaunch),
                    Some(restore::OfferAction::Dismiss) => commands.push(Command::DismissRelaunch),
                    None => {}
                }
            }
            self.central_ui(ui, &mut commands)
        });
        let session_capture = self.session.inspection.as_ref().and_then(|i| i.capture_path.clone());
        self.picker_ui(ui.ctx());
        match self.diff.window(ui.ctx(), session_capture.is_some()) {
            Some(DiffAction::Pick(side)) => commands.push(Command::Pick(DialogPurpose::DiffSide(side))),
            Some(DiffAction::UseSession(side)) => {
                if let Some(p) = session_capture.clone() {
                    self.diff.set(side, p, &self.waker);
                }
            }
            None => {}
        }
        if self.verify.open {
            // The launcher's form first (what the user is editing), then the
            // recent servers it is not; each says which it is.
            let same = |a: &SavedServer, b: &SavedServer| a.command_line() == b.command_line() && a.env == b.env;
            let mut servers: Vec<(SavedServer, &str)> = Vec::new();
            for (s, from) in self
                .launcher
                .form
                .to_saved()
                .into_iter()
                .map(|s| (s, "the launcher's form"))
                .chain(self.launcher.recent.iter().cloned().map(|s| (s, "recent")))
            {
                if !servers.iter().any(|(t, _)| same(t, &s)) {
                    servers.push((s, from));
                }
            }
            if let Some(server) = self.verify.window(ui.ctx(), session_capture.as_deref(), &servers)
                && let Some(capture) = session_capture.clone()
            {
                self.verify.start(capture, server, self.tokens.share(), &self.waker);
            }
        }
        if let Some(w) = &mut self.watch_client
            && !w.window(ui.ctx(), &self.waker)
        {
            self.watch_client = None;
        }
        if let Some(a) = tab_action {
            self.apply_tab_action(a);
        }
        for c in commands {
            self.apply(c);
        }
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        eframe::set_value(storage, RECENT_KEY, &self.saved_state());
        eframe::set_value(storage, FILTERS_KEY, &self.filter_prefs);
        eframe::set_value(storage, TABS_KEY, &self.tab_memories());
    }

    fn on_exit(&mut self) {
        // Every server is asked to stop first, so their grace periods run
        // side by side; dropping each then waits for its shutdown (close
        // stdin, SIGTERM, SIGKILL) to end.
        let all =
            std::iter::once(&mut self.session.inspection).chain(self.tabs.iter_mut().map(|t| &mut t.view.inspection));
        let mut stopping: Vec<Inspection> = all.filter_map(Option::take).collect();
        for i in &mut stopping {
            i.stop();
        }
        drop(stopping);
        self.remote_proxies.stop_all();
        self.session.load.stop();
        for t in &mut self.tabs {
            t.view.load.stop();
        }
    }
}

/// A server's capabilities in one line: each capability, with the flags that
/// are on (`{"listChanged": false}` says nothing, so `tools`, not `tools ()`).
fn capability_summary(caps: &serde_json::Value) -> String {
    let parts: Vec<String> = caps
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| {
            let flags: Vec<&str> = v
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(_, b)| b.as_bool() == Some(true))
                .map(|(n, _)| n.as_str())
                .collect();
            if flags.is_empty() {
                k.clone()
            } else {
                format!("{k} ({})", flags.join(", "))
            }
        })
        .collect();
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(" · ")
    }
}

/// While signing in: where to authorize (the browser was opened on it),
/// with a copy button and a way to stop waiting; afterwards, the state of
/// the authorization or why it failed.
fn sign_in_banner(ui: &mut Ui, si: &inspection::SignInState) {
    if let Some(url) = si.pending_url() {
        ui.horizontal_wrapped(|ui| {
            ui.label(
                RichText::new("🔑 Signing in:")
                    .color(theme::RowKind::Auth.color())
                    .strong(),
            );
            ui.label("authorize in the browser that opened, or open");
            ui.add(egui::Label::new(RichText::new(&url).monospace()).truncate());
            if ui.button("Copy URL").clicked() {
                ui.ctx().copy_text(url.clone());
            }
            if ui.button("Cancel").clicked() {
                si.cancel();
            }
        });
        ui.separator();
    } else if si.in_progress() {
        ui.horizontal(|ui| {
            ui.spinner();
            ui.label(RichText::new("🔑 Signing in…").color(theme::RowKind::Auth.color()));
        });
        ui.separator();
    } else {
        let summary = si.summary();
        if summary == "not authorized" && si.failed().is_none() {
            // The server has not asked: nothing to say.
            return;
        }
        ui.horizontal_wrapped(|ui| {
            match &si.failed() {
                Some(e) => ui.label(RichText::new(format!("🔑 Sign-in failed: {e}")).color(theme::ERROR)),
                None => ui.label(RichText::new(format!("🔑 {summary}")).color(theme::RowKind::Auth.color())),
            };
            if ui
                .button("Forget tokens")
                .on_hover_text("The next request the server refuses signs in again (the browser opens)")
                .clicked()
            {
                si.forget_tokens();
            }
        });
        ui.separator();
    }
}

#[cfg(test)]
mod capability_tests {
    use super::*;

    #[test]
    fn the_window_icon_is_the_packaged_png() {
        let icon = window_icon();
        assert_eq!((icon.width, icon.height), (256, 256));
    }

    #[test]
    fn capabilities_name_only_the_flags_that_are_on() {
        let caps = serde_json::json!({"tools": {"listChanged": false}, "resources": {"subscribe": true, "listChanged": true}, "logging": {}});
        assert_eq!(
            capability_summary(&caps),
            "tools · resources (subscribe, listChanged) · logging"
        );
        assert_eq!(capability_summary(&serde_json::json!({})), "none");
    }
}
