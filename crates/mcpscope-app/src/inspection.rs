//! One session shown in the app: a live server (its session thread and the
//! protocol driver) or a capture opened offline. The app calls
//! [`Inspection::drain`] once per frame; nothing here blocks.
//!
//! Every protocol decision is the driver's (the same one the CLI uses):
//! this file feeds it the session's events, performs its actions on the
//! session, and keeps the model the panels read in step with it.

use crate::live_follow::{FollowMsg, LiveFollow};
use crate::live_pilot::{self, Live, PilotThread, SignInRunner, Update};
use anyhow::{Context as _, Result};
use mcpscope_core::client::pilot::{Performed, Pilot};
use mcpscope_core::driver::view::DriverView;
use mcpscope_core::driver::{
    Action, Chain, Driver, DriverConfig, EraStatus, Failure, Outcome, Question, QuestionId, RequestOptions, TaskRun,
};
use mcpscope_core::protocol::auth::flow::AuthConfig;
use mcpscope_core::protocol::era::EraChoice;
use mcpscope_core::protocol::handshake::HandshakeOptions;
use mcpscope_core::protocol::mrtr::InputPolicy;
use mcpscope_core::protocol::subscriptions::Filter;
use mcpscope_core::protocol::tasks::Flavor;
use mcpscope_core::record::capture;
use mcpscope_core::sessions::index::ListedSession;
use mcpscope_core::timeline::model::{SessionModel, Source};
use mcpscope_core::transport::auth::{AuthOptions, Authorizer, Interaction};
use mcpscope_core::transport::event::Event;
use mcpscope_core::transport::session::{Session, SessionOptions, Waker};
use mcpscope_core::transport::target::Target;
use mcpscope_core::wire::message::{ErrorObject, RequestId};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long one frame may spend applying events before it draws.
const DRAIN_BUDGET: Duration = Duration::from_millis(8);

/// The same while a capture loads, at least: nothing else competes for the
/// frame then.
const LOAD_BUDGET: Duration = Duration::from_millis(12);

/// A loading capture's share of a frame: as long as the last frame took to
/// draw, so that with software rendering (50-100 ms a frame) about half the
/// time goes to loading; a fixed 12 ms gave a million rows 11.6 s on screen
/// for 2.4 s of work. At most 100 ms, so input is still handled ~5 times a second.
pub(crate) fn load_budget(last_frame: Duration) -> Duration {
    last_frame.clamp(LOAD_BUDGET, Duration::from_millis(100))
}

/// Events a loading worker hands over at once.
const LOAD_BATCH: usize = 8192;

/// What the capture loading worker sends.
enum Loaded {
    /// The header and the file's size.
    Header(capture::Header, u64),
    /// Events and how far into the file they reach.
    Events(Vec<mcpscope_core::transport::event::Event>, u64),
    Done(Vec<String>),
    Failed(String),
    /// The file was another tool's capture: read from this mcpscope capture
    /// it was imported into, with what its format lacks.
    Imported(PathBuf, Vec<String>),
}

/// A capture read on a worker and applied a frame's budget at a time.
struct CaptureLoad {
    feed: crate::job::Feed<Loaded>,
    batch: std::vec::IntoIter<mcpscope_core::transport::event::Event>,
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

/// Something the user composed, to send as it is.
#[derive(Clone, Debug, PartialEq)]
pub enum Outgoing {
    /// A request; `id` None takes the next free id.
    Request {
        method: String,
        params: Option<Value>,
        id: Option<RequestId>,
    },
    Notification {
        method: String,
        params: Option<Value>,
    },
    /// Bytes sent as they are (a newline is appended), even if malformed.
    Raw(Vec<u8>),
}

/// The capabilities the app offers: it answers roots itself and lets the
/// user answer sampling and elicitation; it hosts MCP Apps unless the
/// user asked for the server's text-only side (`apps` false).
pub fn client_capabilities(apps: bool) -> Value {
    let caps = serde_json::json!({
        "roots": {"listChanged": true},
        "sampling": {},
        "elicitation": {},
    });
    if apps {
        mcpscope_core::apps::linkage::advertise(caps)
    } else {
        caps
    }
}

/// The default root offered to servers: the directory they run in.
pub fn default_roots(target: &Target) -> Vec<Value> {
    let cwd = match target {
        Target::Stdio(spec) => spec.cwd.clone(),
        Target::Http(_) => None,
    };
    let dir = cwd
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("/"));
    let name = dir
        .file_name()
        .map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into_owned());
    vec![serde_json::json!({"uri": format!("file://{}", dir.display()), "name": name})]
}

pub struct Inspection {
    pub model: SessionModel,
    /// A live session and its owner (the core's pilot), run by a thread of
    /// its own ([`live_pilot`]); the UI's commands take the lock briefly.
    owner: Option<Arc<Mutex<Live>>>,
    /// That thread: the updates to apply, and whether the driver changed.
    thread: Option<PilotThread>,
    /// The driver as last copied from the owner (what the panels read).
    view: DriverView,
    /// The UI's waker, for the owner's thread.
    waker: Option<Waker>,
    /// The capture this inspection writes (live) or was loaded from (offline).
    pub capture_path: Option<PathBuf>,
    /// How long the app's last frame took: what a loading capture may spend
    /// of the next one (see [`load_budget`]).
    pub last_frame: Duration,
    /// The file the user opened when it was another tool's (a HAR, an
    /// Inspector export): `capture_path` is then the copy it was imported into.
    pub imported_from: Option<PathBuf>,
    pub target: Option<Target>,
    pub protocol_version: String,
    /// When the live session started: the uptime in the status bar and the driver's clock.
    pub started: Option<Instant>,
    /// Problems reading a capture, shown once.
    pub load_warnings: Vec<String>,
    ends: Ends,
    /// A proxied session's capture followed while it grows.
    pub live: Option<LiveFollow>,
    /// That session's proxy intercepts (breakpoints, fault rules): its
    /// control socket, while the session runs.
    pub intercept: Option<crate::intercept_link::InterceptLink>,
    /// The reverse proxy an HTTP session launched with Intercept goes
    /// through, run here; stopped when the inspection is dropped.
    pub own_proxy: Option<crate::intercept_link::OwnProxy>,
    /// Followed events not applied yet (a frame's budget is spent).
    pending: VecDeque<Event>,
    /// Bumped when a followed capture starts over: the views drop what they showed.
    pub resets: u64,
    /// Signing in when an HTTP server asks (OAuth); `None` for stdio and offline.
    pub sign_in: Option<SignInState>,
    /// A capture still being read.
    load: Option<CaptureLoad>,
    /// The driver's state was copied while updates were still queued: copy it again.
    view_behind: bool,
    /// The MCP Apps this session hosts (their Views in the browser).
    pub apps: crate::app_host::HostedApps,
    /// Whether a View's page is opened in the browser when it is hosted
    /// (tests open it themselves).
    pub apps_open_browser: bool,
    /// Whether the handshake advertised the App extension.
    pub apps_advertised: bool,
    /// OpenTelemetry sent while the session runs (`mcpscope --otlp-endpoint`);
    /// last, so it is dropped (and sends the rest) after the session ended.
    pub traces: Option<crate::traces::SessionTraces>,
}

/// Where a sign-in stands, kept by the owner's thread.
#[derive(Default)]
pub struct SignInStatus {
    /// A sign-in is under way (the person may be in the browser).
    pub running: bool,
    /// Why the last sign-in failed.
    pub failed: Option<String>,
}

/// What the app gives every session it launches.
#[derive(Clone, Copy)]
pub struct AppServices<'a> {
    /// Where OAuth tokens are kept between runs.
    pub tokens: &'a crate::tokens::AppTokens,
    /// The OpenTelemetry collector to send the session to, if any.
    pub otlp_endpoint: Option<&'a str>,
    /// Advertise the MCP Apps extension (false: the server's text-only side).
    pub apps: bool,
}

/// How a session signs in (the owner's thread runs it on a worker, see
/// [`live_pilot::SignInRunner`]); what the UI shows of it and can do.
pub struct SignInState {
    authorizer: Arc<Mutex<Authorizer>>,
    status: Arc<Mutex<SignInStatus>>,
    /// Where to authorize, once the flow has an authorization URL.
    pub url: Arc<Mutex<Option<String>>>,
    cancel: Arc<AtomicBool>,
}

impl SignInState {
    fn status(&self) -> std::sync::MutexGuard<'_, SignInStatus> {
        self.status.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether a sign-in is under way (the person may be in the browser).
    pub fn in_progress(&self) -> bool {
        self.status().running
    }

    /// Why the last sign-in failed.
    pub fn failed(&self) -> Option<String> {
        self.status().failed.clone()
    }

    /// The authorization URL to show while signing in.
    pub fn pending_url(&self) -> Option<String> {
        if !self.in_progress() {
            return None;
        }
        self.url
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Stops waiting for the browser.
    pub fn cancel(&self) {
        self.cancel.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Forgets the tokens: the next request the server refuses signs in
    /// again (the browser opens). Not while a sign-in runs.
    pub fn forget_tokens(&self) {
        if let Ok(mut a) = self.authorizer.try_lock() {
            a.forget_tokens();
        }
    }

    /// The authorization state in one line (none, authorized with scopes and expiry).
    pub fn summary(&self) -> String {
        self.authorizer
            .try_lock()
            .map_or_else(|_| "signing in…".to_owned(), |a| a.summary())
    }
}

/// How the user's requests ended.
#[derive(Default)]
struct Ends {
    /// The id of each one's last send (after retries and input rounds).
    finished: HashMap<RequestId, RequestId>,
    /// Why one ended without an answer.
    failures: HashMap<RequestId, Failure>,
}

impl Inspection {
    /// Starts a server, records it to a fresh capture file, and begins the handshake.
    pub fn launch(target: Target, protocol_version: &str, waker: Option<Waker>) -> Inspection {
        Self::launch_with_era(
            target,
            protocol_version,
            EraChoice::implied_by_version(protocol_version),
            waker,
        )
    }

    /// Starts a server in the chosen era: `initialize` (legacy), or a
    /// `server/discover` probe (modern; auto falls back to `initialize`).
    pub fn launch_with_era(
        target: Target,
        protocol_version: &str,
        choice: EraChoice,
        waker: Option<Waker>,
    ) -> Inspection {
        let mut i = Self::launch_deferred(target, protocol_version, choice, None, true, waker);
        i.start_driver(None);
        i
    }

    /// Starts the driver (the handshake goes out), then the owner's thread.
    fn start_driver(&mut self, sign_in: Option<SignInRunner>) {
        if let Some(live) = &self.owner {
            live_pilot::lock(live).pilot.driver.start();
        }
        self.perform();
        let Some(live) = &self.owner else { return };
        match live_pilot::spawn(Arc::clone(live), sign_in, self.waker.clone()) {
            Ok(t) => self.thread = Some(t),
            Err(e) => {
                let lock = live_pilot::lock(live);
                lock.session
                    .note(format!("could not start the session's owner thread: {e}"));
                lock.session.shutdown();
            }
        }
    }

    /// The session started, the driver not yet.
    fn launch_deferred(
        target: Target,
        protocol_version: &str,
        choice: EraChoice,
        otlp_endpoint: Option<&str>,
        apps: bool,
        waker: Option<Waker>,
    ) -> Inspection {
        // A private file (0600, in a 0700 directory of this user): captures
        // hold whole conversations.
        let capture = mcpscope_core::record::private_files::new_capture_file();
        let traces = otlp_endpoint.and_then(|e| crate::traces::SessionTraces::start(e, &target));
        let options = SessionOptions {
            capture: capture.as_ref().ok().cloned(),
            // The owner's thread takes the events; it wakes the UI.
            waker: None,
            tap: traces.as_ref().map(crate::traces::SessionTraces::tap),
            ..SessionOptions::default()
        };
        let request_timeout = options.request_timeout;
        let session = Session::connect(target.clone(), options);
        if let Err(e) = &capture {
            session.note(format!(
                "{}no private capture file: {ec} (this session is not recorded)",
                mcpscope_core::record::capture::FAILED,
                ec = mcpscope_core::text::ErrorChain(&e)
            ));
        }
        let capture_path = capture.ok();
        let driver = Driver::new(DriverConfig {
            era: choice,
            handshake: HandshakeOptions {
                protocol_version: protocol_version.to_owned(),
                capabilities: client_capabilities(apps),
                ..HandshakeOptions::default()
            },
            policy: InputPolicy {
                roots: Some(default_roots(&target)),
                ..InputPolicy::default()
            },
            ask_user: true,
            fetch_lists: true,
            request_timeout,
            ..DriverConfig::default()
        });
        let mut model = SessionModel::new(Source::Live {
            command_line: target.display(),
        });
        model.remote = matches!(target, Target::Http(_));
        let started = Instant::now();
        let view = DriverView::of(&driver);
        let mut i = Inspection {
            model,
            owner: Some(Arc::new(Mutex::new(Live {
                pilot: Pilot::new(driver, started),
                session,
            }))),
            thread: None,
            view,
            waker,
            capture_path,
            imported_from: None,
            last_frame: Duration::ZERO,
            target: Some(target),
            protocol_version: protocol_version.to_owned(),
            started: Some(started),
            load_warnings: Vec::new(),
            ends: Ends::default(),
            live: None,
            intercept: None,
            own_proxy: None,
            pending: VecDeque::new(),
            resets: 0,
            sign_in: None,
            load: None,
            view_behind: false,
            apps: crate::app_host::HostedApps::default(),
            apps_open_browser: true,
            apps_advertised: apps,
            traces,
        };
        i.perform();
        i
    }

    /// [`Inspection::launch_with_era`], signing in with these settings when
    /// an HTTP server asks (a stdio target, or one with an Authorization
    /// header of the user's, does not sign in).
    pub fn launch_signing_in(
        target: Target,
        protocol_version: &str,
        choice: EraChoice,
        config: AuthConfig,
        interaction: Interaction,
        app: AppServices<'_>,
        waker: Option<Waker>,
    ) -> Inspection {
        let AppServices {
            tokens,
            otlp_endpoint,
            apps,
        } = app;
        let sign_in = match &target {
            Target::Http(h) if !h.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("authorization")) => {
                let url: Arc<Mutex<Option<String>>> = Arc::default();
                let shown = Arc::clone(&url);
                let cancel = Arc::new(AtomicBool::new(false));
                let (memory, on_change) = tokens.for_server(&h.url);
                let options = AuthOptions {
                    interaction,
                    cancel: Arc::clone(&cancel),
                    show_url: Some(Arc::new(move |u: &str, _opened: Option<&str>| {
                        *shown.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(u.to_owned());
                    })),
                    on_change: Some(on_change),
                    ..AuthOptions::default()
                };
                let authorizer = Arc::new(Mutex::new(
                    Authorizer::new(h.url.clone(), config, options, h.bearer.clone()).with_memory(memory),
                ));
                let status = Arc::new(Mutex::new(SignInStatus::default()));
                Some(SignInState {
                    authorizer,
                    status,
                    url,
                    cancel,
                })
            }
            _ => None,
        };
        // The gate must see the very first request (the handshake) go out.
        let mut i = Self::launch_deferred(target, protocol_version, choice, otlp_endpoint, apps, waker);
        let runner = sign_in.as_ref().map(|si| {
            if let Some(live) = &i.owner {
                let mut l = live_pilot::lock(live);
                l.pilot.set_authorizer(Arc::clone(&si.authorizer));
                // The owner thread refreshes ahead: the UI's commands never wait on the network.
                l.pilot.set_refresh_before_send(false);
            }
            SignInRunner::new(
                Arc::clone(&si.authorizer),
                Arc::clone(&si.status),
                Arc::clone(&si.cancel),
            )
        });
        i.sign_in = sign_in;
        i.start_driver(runner);
        i
    }

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
        let from = path.to_owned();
        // Detached: closing the tab mid-read must not wait for the read.
        let feed = crate::job::Feed::spawn_detached("open", 4, waker, move |feed| read_capture(&from, &feed));
        let failed = feed.failed().map(|e| e.to_string());
        let mut i = Inspection::offline(SessionModel::new(Source::Capture {
            path: path.to_owned(),
            command_line: String::new(),
        }));
        i.capture_path = Some(path.to_owned());
        i.load = Some(CaptureLoad {
            feed,
            batch: Vec::new().into_iter(),
            total_bytes: 0,
            read_bytes: 0,
            header_seen: false,
            failed,
        });
        i
    }

    /// Whether a capture is still being read.
    pub fn loading(&self) -> bool {
        self.load.as_ref().is_some_and(|l| l.failed.is_none())
    }

    /// Where loading a capture stands (Done for a live session).
    pub fn load_state(&self) -> LoadState {
        match &self.load {
            None => LoadState::Done,
            Some(l) => match &l.failed {
                Some(e) => LoadState::Failed(e.clone()),
                None if l.total_bytes == 0 => LoadState::Loading(0.0),
                None => LoadState::Loading((l.read_bytes as f64 / l.total_bytes as f64).min(1.0) as f32),
            },
        }
    }

    /// Whether the capture's header was read (it is a capture, and the rows come).
    pub fn load_started(&self) -> bool {
        self.load.as_ref().is_none_or(|l| l.header_seen)
    }

    /// Applies a loading capture's events for at most a frame's budget.
    fn drain_load(&mut self) -> bool {
        let Some(load) = &mut self.load else { return false };
        let deadline = Instant::now() + load_budget(self.last_frame);
        let mut applied = 0usize;
        loop {
            if let Some(ev) = load.batch.next() {
                self.model.apply(&ev);
                applied += 1;
                if applied.is_multiple_of(256) && Instant::now() >= deadline {
                    return true;
                }
                continue;
            }
            match load.feed.receiver().try_recv() {
                Ok(Loaded::Header(h, total)) => {
                    load.header_seen = true;
                    load.total_bytes = total;
                    if let Source::Capture { command_line, .. } = &mut self.model.source {
                        *command_line = h.command_line;
                    }
                }
                Ok(Loaded::Imported(to, notes)) => {
                    if let Source::Capture { path, .. } = &mut self.model.source {
                        self.imported_from = Some(std::mem::replace(path, to.clone()));
                    }
                    self.capture_path = Some(to);
                    self.load_warnings = notes;
                }
                Ok(Loaded::Events(events, offset)) => {
                    load.read_bytes = offset;
                    load.batch = events.into_iter();
                }
                Ok(Loaded::Done(warnings)) => {
                    self.model.closed = true;
                    self.load_warnings.extend(warnings);
                    self.load = None;
                    crate::memory::give_back();
                    return false;
                }
                Ok(Loaded::Failed(e)) => {
                    load.failed = Some(e);
                    return false;
                }
                Err(crossbeam_channel::TryRecvError::Empty) => return false,
                Err(crossbeam_channel::TryRecvError::Disconnected) => {
                    if load.failed.is_none() {
                        load.failed = Some("the loading thread stopped".into());
                    }
                    return false;
                }
            }
        }
    }

    /// Shows a model that is already complete (no process behind it).
    pub fn offline(model: SessionModel) -> Inspection {
        Inspection {
            model,
            owner: None,
            thread: None,
            view: DriverView::of(&Driver::new(DriverConfig::default())),
            waker: None,
            capture_path: None,
            imported_from: None,
            last_frame: Duration::ZERO,
            target: None,
            protocol_version: String::new(),
            started: None,
            load_warnings: Vec::new(),
            ends: Ends::default(),
            live: None,
            intercept: None,
            own_proxy: None,
            pending: VecDeque::new(),
            resets: 0,
            sign_in: None,
            load: None,
            view_behind: false,
            apps: crate::app_host::HostedApps::default(),
            apps_open_browser: true,
            apps_advertised: false,
            traces: None,
        }
    }

    /// Follows a proxied session's capture as the proxy writes it; nothing is
    /// read here (a worker does it). Once the session ends this is an offline capture.
    pub fn follow(session: ListedSession, waker: Option<Waker>) -> Inspection {
        let mut i = Inspection::offline(Self::followed_model(&session));
        i.capture_path = Some(session.capture_path.clone());
        if session.state.is_running()
            && let Some(socket) = &session.record.control_socket
        {
            i.intercept = Some(crate::intercept_link::InterceptLink::start(
                std::path::Path::new(socket),
                waker.clone(),
            ));
        }
        i.live = Some(LiveFollow::start(session, waker));
        i
    }

    fn followed_model(session: &ListedSession) -> SessionModel {
        let mut model = SessionModel::new(Source::Capture {
            path: session.capture_path.clone(),
            command_line: session.record.command_line.clone(),
        });
        model.remote = session.record.transport != "stdio";
        model
    }

    /// Whether this shows a proxied session that is still running.
    pub fn is_following(&self) -> bool {
        self.live.as_ref().is_some_and(LiveFollow::is_following)
    }

    /// Applies what the follow worker delivered, within the frame's budget.
    fn drain_followed(&mut self) -> bool {
        if let Some(link) = &mut self.intercept {
            link.drain();
        }
        let Some(live) = &mut self.live else { return false };
        let deadline = Instant::now() + DRAIN_BUDGET;
        let mut reset = false;
        while let Ok(msg) = live.receiver().try_recv() {
            match msg {
                FollowMsg::Update(u) => {
                    if u.reset {
                        reset = true;
                        self.pending.clear();
                        self.load_warnings.clear();
                    }
                    self.load_warnings.extend(u.warnings);
                    self.pending.extend(u.events);
                }
                FollowMsg::Problem(p) => live.problem = Some(p),
                FollowMsg::Ended(state) => live.ended = Some(state),
            }
            if Instant::now() >= deadline {
                break;
            }
        }
        if reset {
            self.model = Self::followed_model(&live.session);
            self.resets += 1;
        }
        let mut applied = 0usize;
        while let Some(ev) = self.pending.pop_front() {
            self.model.apply(&ev);
            applied += 1;
            if applied.is_multiple_of(64) && Instant::now() >= deadline {
                break;
            }
        }
        // The end is reported after the last update: once that is applied the
        // capture is complete, and judged as such.
        if live.ended.is_some() && self.pending.is_empty() && live.receiver().is_empty() {
            self.model.closed = true;
        }
        !self.pending.is_empty() || !live.receiver().is_empty()
    }

    pub fn is_live(&self) -> bool {
        self.owner.is_some()
    }

    /// The era the session speaks, and why (unsettled for an offline capture).
    pub fn era(&self) -> &EraStatus {
        &self.view.era
    }

    /// Server requests and input requests waiting for the user, oldest first.
    pub fn questions(&self) -> &[Question] {
        &self.view.questions
    }

    /// The row of the frame that asked a question, when it came in one.
    pub fn question_row(&self, q: &Question) -> Option<usize> {
        q.asked_by_seq.and_then(|s| self.model.store.row_of_seq(s))
    }

    /// Roots answered to `roots/list`.
    pub fn roots(&self) -> &[Value] {
        &self.view.roots
    }

    /// Multi round-trip conversations so far.
    pub fn chains(&self) -> &[Chain] {
        &self.view.chains
    }

    /// The task run started by the request `id`.
    pub fn task(&self, id: &RequestId) -> Option<&TaskRun> {
        self.view.task(id)
    }

    /// Whether a request of the user is still waiting for its end.
    pub fn is_pending(&self, id: &RequestId) -> bool {
        self.view.is_pending(id)
    }

    /// Why a request of the user ended without an answer, if it did.
    pub fn failure(&self, id: &RequestId) -> Option<&Failure> {
        self.ends.failures.get(id)
    }

    /// The id a request is currently waiting on (its latest send after
    /// -32022 retries and input rounds).
    pub fn current_id(&self, id: &RequestId) -> RequestId {
        self.view
            .current_id(id)
            .or_else(|| self.ends.finished.get(id))
            .cloned()
            .unwrap_or_else(|| self.model.chain_head(id))
    }

    /// How long until the driver's next timer (task polls, a settling
    /// list_changed burst, exit grace), as of the last copy of its state.
    /// Its owner thread keeps the timers; the UI need not wake for them.
    pub fn next_wakeup(&self) -> Option<Duration> {
        let started = self.started?;
        let at = self.view.next_wakeup?;
        Some(at.saturating_sub(started.elapsed()))
    }

    /// Applies waiting events for at most one frame's budget.
    /// Returns true when events remain (the caller should repaint again).
    pub fn drain(&mut self) -> bool {
        if self.live.is_none()
            && let Some(link) = &mut self.intercept
        {
            link.drain();
        }
        if self.load.is_some() {
            return self.drain_load();
        }
        if self.live.is_some() {
            return self.drain_followed();
        }
        let Some(thread) = &mut self.thread else {
            return false;
        };
        // The driver's state is copied first, then the updates drained: the
        // owner thread sends them under the lock the copy takes, so every
        // update behind the copied state has arrived. Copied after, the view
        // could say a request had ended before its end was applied (a
        // finished task shown without its result).
        let fresh = match &self.owner {
            Some(live) if thread.changed() || self.view_behind => Some(live_pilot::view(live)),
            _ => None,
        };
        let deadline = Instant::now() + DRAIN_BUDGET;
        let mut applied = 0usize;
        let mut cut_short = false;
        while let Ok(u) = thread.updates.try_recv() {
            match u {
                Update::Event(ev) => self.model.apply(&ev),
                Update::Performed(p) => note_performed(*p, &mut self.model, &mut self.ends),
                Update::Resent(id) => self.model.watch(id),
            }
            applied += 1;
            // Check the clock every few updates: a flood has many tiny ones.
            if applied.is_multiple_of(64) && Instant::now() >= deadline {
                cut_short = true;
                break;
            }
        }
        if let Some(view) = fresh {
            // Not all of what led to it is applied yet: keep the older view
            // and copy again on the next drain.
            self.view_behind = cut_short;
            if !cut_short {
                self.view = view;
            }
        }
        !thread.updates.is_empty()
    }

    /// Performs what the driver asked after a command of the UI (the
    /// owner's thread does the same for what the session said), and copies
    /// the driver's state for the panels.
    fn perform(&mut self) {
        if let Some(live) = &self.owner {
            let mut guard = live_pilot::lock(live);
            let Live { pilot, session } = &mut *guard;
            let (model, ends) = (&mut self.model, &mut self.ends);
            pilot.perform(session, &mut |p| note_performed(p, model, ends));
            self.view = DriverView::of(&pilot.driver);
        }
    }

    /// Runs `f` on the driver under the owner's lock (a command of the UI).
    fn with_driver<T>(&mut self, f: impl FnOnce(&mut Driver) -> T) -> Option<T> {
        let live = self.owner.as_ref()?;
        let out = f(&mut live_pilot::lock(live).pilot.driver);
        Some(out)
    }

    /// The protocol version modern requests carry in `_meta` (changed, e.g.,
    /// to see how a server answers a version it does not speak).
    pub fn set_modern_version(&mut self, version: &str) {
        self.with_driver(|d| d.set_modern_version(version));
        self.perform();
    }

    pub fn modern_version(&self) -> &str {
        &self.view.modern_version
    }

    /// The tasks flavour the server offers for tools/call in this era, if any.
    pub fn task_flavor(&self) -> Option<Flavor> {
        self.view.task_flavor
    }

    /// Sends what the user composed; returns the request id to watch.
    pub fn send(&mut self, out: Outgoing) -> Option<RequestId> {
        let id = self.with_driver(|d| match out {
            Outgoing::Request { method, params, id } => {
                if let Some(id) = &id {
                    d.reserve_id(id);
                }
                let list = mcpscope_core::protocol::methods::LISTS.contains(&method.as_str());
                let id = if method == mcpscope_core::protocol::subscriptions::LISTEN {
                    let filter = params
                        .as_ref()
                        .and_then(|p| p.get("notifications"))
                        .map_or_else(Filter::all_lists, Filter::from_json);
                    d.listen(&filter)
                } else {
                    d.request_with(
                        &method,
                        params,
                        RequestOptions {
                            id,
                            ..Default::default()
                        },
                    )
                };
                if list {
                    d.list_fetched(&method);
                }
                Some(id)
            }
            Outgoing::Notification { method, params } => {
                d.notify(&method, params);
                None
            }
            Outgoing::Raw(line) => d.send_raw(line),
        })?;
        if let Some(id) = &id {
            self.model.watch(id.clone());
        }
        self.perform();
        id
    }

    /// Runs `tools/call` as a task; the driver polls it and fetches its result.
    pub fn run_task(&mut self, params: Value) -> Option<RequestId> {
        let id = self.with_driver(|d| d.run_task(params, None))?;
        self.model.watch(id.clone());
        self.perform();
        Some(id)
    }

    /// Cancels a task run (`tasks/cancel`).
    pub fn cancel_task(&mut self, id: &RequestId) {
        self.with_driver(|d| d.cancel_task(id));
        self.perform();
    }

    /// Asks the server to cancel one of our requests.
    pub fn cancel(&mut self, id: &RequestId) {
        self.with_driver(|d| d.cancel(id, "cancelled in mcpscope"));
        self.perform();
    }

    /// The user answered a question (an elicitation, a sampling request).
    pub fn answer(&mut self, question: QuestionId, outcome: Result<Value, ErrorObject>) {
        self.with_driver(|d| d.answer(question, outcome));
        self.perform();
    }

    /// The user edited the roots offered to the server.
    pub fn set_roots(&mut self, roots: Vec<Value>) {
        self.with_driver(|d| d.set_roots(roots));
        self.perform();
    }

    pub fn stop(&mut self) {
        self.apps.close_all();
        if let Some(si) = &self.sign_in {
            si.cancel();
        }
        if let Some(live) = &self.owner {
            live_pilot::lock(live).session.shutdown();
        }
    }

    /// The tools the server listed last.
    pub fn listed_tools(&self) -> Vec<Value> {
        self.model
            .latest_result(mcpscope_core::protocol::methods::TOOLS_LIST)
            .and_then(|(_, r)| r.get("tools").and_then(Value::as_array).cloned())
            .unwrap_or_default()
    }

    /// Hosts the View of `tool` for a call just sent (`call`) or a recorded
    /// one (`result`): its resource is read on the session, then its pages
    /// open (see [`crate::app_host`]).
    pub fn open_app(&mut self, tool: &Value, arguments: Value, call: Option<RequestId>, result: Option<Value>) {
        let requests = self.apps.open(tool, arguments, call, result);
        self.apply_app_requests(requests);
    }

    /// Relays between the session and its hosted Views (once per frame).
    pub fn pump_apps(&mut self) {
        if !self.apps.active() {
            return;
        }
        let mut apps = std::mem::take(&mut self.apps);
        // The tool list is read only when a View's resource has come (not every frame).
        let requests = apps.pump(
            || self.listed_tools(),
            |id| self.request_outcome(id),
            self.waker.clone(),
        );
        self.apps = apps;
        self.apply_app_requests(requests);
    }

    fn apply_app_requests(&mut self, requests: Vec<crate::app_host::SessionRequest>) {
        use crate::app_host::SessionRequest;
        for r in requests {
            match r {
                SessionRequest::Send {
                    view,
                    method,
                    params,
                    ticket,
                } => {
                    let id = if self.model.running() {
                        self.send(Outgoing::Request {
                            method,
                            params,
                            id: None,
                        })
                    } else {
                        None
                    };
                    self.apps.sent(view, ticket, id);
                }
                SessionRequest::Record(record) => self.record_app(record),
                SessionRequest::OpenBrowser(url) => {
                    if self.apps_open_browser
                        && let Err(e) = mcpscope_core::transport::auth::browser::open(&url)
                    {
                        self.record_app(mcpscope_core::apps::run::AppRecord::Note(format!(
                            "{e}; open {url} yourself"
                        )));
                    }
                }
            }
        }
    }

    /// How a request of ours ended: its result, or a JSON-RPC error object
    /// (the server's, or one saying why no answer came); none while it waits.
    fn request_outcome(&self, id: &RequestId) -> Option<Result<Value, Value>> {
        if let Some(row) = self.model.response_to(&self.current_id(id)) {
            let v: Value = serde_json::from_slice(self.model.store.get(row)?.raw()).ok()?;
            return Some(match v.get("error") {
                Some(e) => Err(e.clone()),
                None => Ok(v.get("result").cloned().unwrap_or(Value::Null)),
            });
        }
        self.failure(id)
            .map(|f| Err(serde_json::json!({"code": -32603, "message": f.to_string()})))
    }

    /// Puts a View's message (or the host's note) on the session's record.
    fn record_app(&self, record: mcpscope_core::apps::run::AppRecord) {
        let Some(live) = &self.owner else { return };
        let l = live_pilot::lock(live);
        match record {
            mcpscope_core::apps::run::AppRecord::Message(m) => l.session.record_app(m),
            mcpscope_core::apps::run::AppRecord::Note(n) => l.session.note(n),
        }
    }

    /// Copies the capture to `to` (it is already complete on disk up to the
    /// last event). File I/O: the app runs it on a worker.
    pub fn save_capture(from: &Path, to: &Path) -> Result<()> {
        if from != to {
            std::fs::copy(from, to).with_context(|| format!("cannot write {}", to.display()))?;
        }
        Ok(())
    }

    /// How long `initialize` has waited for its answer, while it waits
    /// (not once it timed out, was refused, or its authorization failed).
    pub fn initialize_waited(&self) -> Option<Duration> {
        let facts = &self.model.handshake.facts;
        if facts.init_resp.is_some() || facts.init_timed_out.is_some() || facts.auth_failed.is_some() {
            return None;
        }
        if self.model.closed || self.model.exit.is_some() {
            return None;
        }
        let sent = self
            .model
            .handshake
            .initialize_row
            .and_then(|r| self.model.store.get(r))?
            .at();
        Some(self.started?.elapsed().saturating_sub(sent))
    }

    pub fn uptime(&self) -> Option<Duration> {
        match (self.started, self.model.exit) {
            (_, Some((at, _))) => Some(at.saturating_sub(self.model.started_at.unwrap_or_default())),
            (Some(t), None) if self.model.running() => Some(t.elapsed()),
            _ => None,
        }
    }
}

/// The loading worker: reads a capture record by record and hands the
/// events over in batches (the bounded channel keeps it a few batches ahead
/// of the UI, so memory stays near the store's own).
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

/// Keeps the model's view of requests (watched ids, retries,
/// conversations) in step with what the pilot did.
fn note_performed(p: Performed, model: &mut SessionModel, ends: &mut Ends) {
    match p {
        Performed::Sent(id) => model.watch(id),
        Performed::Other(Action::Resent {
            old,
            new,
            root,
            conversation,
        }) => {
            model.mrtr_next.insert(old, new.clone());
            if let Some(no) = conversation {
                model.conversations.insert(new, no);
                model.conversations.entry(root.clone()).or_insert(no);
                // The first request of the conversation and its answer were
                // on the timeline before the conversation was known.
                if let Some(answer) = model.response_to(&root) {
                    model.conversation_rows.insert(answer, no);
                    if let Some((request, _)) = model.store.get(answer).and_then(|r| r.link()) {
                        model.conversation_rows.insert(request, no);
                    }
                }
            }
        }
        Performed::Other(Action::Settled(Ok(d))) => {
            if let Some(disc) = &d.discovery {
                model.server_capabilities = disc.capabilities.clone();
            }
        }
        Performed::Other(Action::Done(c)) => {
            ends.finished.insert(c.id.clone(), c.last);
            if let Outcome::Failed(f) = c.outcome {
                ends.failures.insert(c.id, f);
            }
        }
        Performed::Other(_) => {}
    }
}

#[cfg(test)]
mod load_budget_tests {
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
}
