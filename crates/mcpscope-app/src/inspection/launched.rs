//! A server this app launched: its session and the core's [`Pilot`] run on
//! an owner thread of their own ([`crate::live_pilot`]); the UI drains what
//! that thread hands over, and its commands take the pilot's lock briefly.
//!
//! Every protocol decision is the driver's (the same one the CLI uses):
//! this file feeds it the UI's commands, performs its actions on the
//! session, and keeps the model the panels read in step with it.

use super::{DRAIN_BUDGET, EventSource, Inspection, client_capabilities, default_roots};
use crate::live_pilot::{self, PilotState, PilotThread, SignInRunner, Update};
use crate::sign_in::SignInState;
use mcpscope_core::driver::view::DriverView;
use mcpscope_core::driver::{Action, Driver, DriverConfig, Failure, Outcome};
use mcpscope_core::pilot::{Performed, Pilot};
use mcpscope_core::protocol::auth::flow::AuthConfig;
use mcpscope_core::protocol::era::EraChoice;
use mcpscope_core::protocol::handshake::HandshakeOptions;
use mcpscope_core::protocol::mrtr::InputPolicy;
use mcpscope_core::timeline::model::{SessionModel, Source};
use mcpscope_core::transport::auth::Interaction;
use mcpscope_core::transport::session::{Session, SessionOptions, Waker};
use mcpscope_core::transport::target::Target;
use mcpscope_core::wire::message::RequestId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

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

/// A launched session's own state.
pub(super) struct Launched {
    /// The session and its pilot, shared with the owner's thread.
    pub(super) pilot: Arc<Mutex<PilotState>>,
    /// That thread: the updates to apply, and whether the driver changed.
    thread: Option<PilotThread>,
    /// The UI's waker, for the owner's thread and hosted Views.
    pub(super) waker: Option<Waker>,
    /// The driver's state was copied while updates were still queued: copy it again.
    view_behind: bool,
    pub(super) target: Target,
    /// When the session started: the uptime in the status bar and the driver's clock.
    pub(super) started: Instant,
    /// Signing in when an HTTP server asks (OAuth); `None` for stdio.
    pub(super) sign_in: Option<SignInState>,
    /// The reverse proxy an HTTP session launched with Intercept goes
    /// through, run here; stopped after the session.
    pub(super) own_proxy: Option<crate::intercept_link::OwnProxy>,
    /// OpenTelemetry sent while the session runs (`mcpscope --otlp-endpoint`);
    /// last, so it is dropped (and sends the rest) after the session ended.
    pub(super) traces: Option<crate::traces::SessionTraces>,
}

impl Launched {
    /// Applies the owner thread's updates for at most a frame's budget, and
    /// copies the driver's state when it changed; whether updates remain.
    fn drain(&mut self, model: &mut SessionModel, ends: &mut Ends, view: &mut DriverView) -> bool {
        let Some(thread) = &mut self.thread else {
            return false;
        };
        // The driver's state is copied first, then the updates drained: the
        // owner thread sends them under the lock the copy takes, so every
        // update behind the copied state has arrived. Copied after, the view
        // could say a request had ended before its end was applied (a
        // finished task shown without its result).
        let fresh = (thread.changed() || self.view_behind).then(|| live_pilot::view(&self.pilot));
        let deadline = Instant::now() + DRAIN_BUDGET;
        let mut applied = 0usize;
        let mut cut_short = false;
        while let Ok(u) = thread.updates.try_recv() {
            match u {
                Update::Event(ev) => model.apply(&ev),
                Update::Performed(p) => note_performed(*p, model, ends),
                Update::Resent(id) => model.watch(id),
            }
            applied += 1;
            // Check the clock every few updates: a flood has many tiny ones.
            if applied.is_multiple_of(64) && Instant::now() >= deadline {
                cut_short = true;
                break;
            }
        }
        if let Some(fresh) = fresh {
            // Not all of what led to it is applied yet: keep the older view
            // and copy again on the next drain.
            self.view_behind = cut_short;
            if !cut_short {
                *view = fresh;
            }
        }
        !thread.updates.is_empty()
    }

    /// Performs what the driver asked after a command of the UI (the
    /// owner's thread does the same for what the session said), and copies
    /// the driver's state for the panels.
    fn perform(&self, model: &mut SessionModel, ends: &mut Ends, view: &mut DriverView) {
        let mut guard = live_pilot::lock(&self.pilot);
        let PilotState { pilot, session } = &mut *guard;
        pilot.perform(session, &mut |p| note_performed(p, model, ends));
        *view = DriverView::of(&pilot.driver);
    }
}

/// How the user's requests ended.
#[derive(Default)]
pub(super) struct Ends {
    /// The id of each one's last send (after retries and input rounds).
    pub(super) finished: HashMap<RequestId, RequestId>,
    /// Why one ended without an answer.
    pub(super) failures: HashMap<RequestId, Failure>,
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
        let sign_in = SignInState::for_target(&target, config, interaction, tokens);
        // The gate must see the very first request (the handshake) go out.
        let mut i = Self::launch_deferred(target, protocol_version, choice, otlp_endpoint, apps, waker);
        let runner = sign_in.as_ref().map(|si| {
            if let Some(l) = i.launched() {
                let mut state = live_pilot::lock(&l.pilot);
                state.pilot.set_authorizer(Arc::clone(&si.authorizer));
                // The owner thread refreshes ahead: the UI's commands never wait on the network.
                state.pilot.set_refresh_before_send(false);
            }
            SignInRunner::new(si)
        });
        if let EventSource::Launched(l) = &mut i.source {
            l.sign_in = sign_in;
        }
        i.start_driver(runner);
        i
    }

    /// Starts the driver (the handshake goes out), then the owner's thread.
    fn start_driver(&mut self, sign_in: Option<SignInRunner>) {
        if let Some(l) = self.launched() {
            live_pilot::lock(&l.pilot).pilot.driver.start();
        }
        self.perform();
        let EventSource::Launched(l) = &mut self.source else {
            return;
        };
        match live_pilot::spawn(Arc::clone(&l.pilot), sign_in, l.waker.clone()) {
            Ok(t) => l.thread = Some(t),
            Err(e) => {
                let state = live_pilot::lock(&l.pilot);
                state
                    .session
                    .note(format!("could not start the session's owner thread: {e}"));
                state.session.shutdown();
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
            ..SessionOptions::new(mcpscope_core::record::capture::open_log)
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
        let mut i = Inspection::offline(model);
        i.view = DriverView::of(&driver);
        i.capture_path = capture.ok();
        i.apps_advertised = apps;
        i.source = EventSource::Launched(Box::new(Launched {
            pilot: Arc::new(Mutex::new(PilotState {
                pilot: Pilot::new(driver, started),
                session,
            })),
            thread: None,
            waker,
            view_behind: false,
            target,
            started,
            sign_in: None,
            own_proxy: None,
            traces,
        }));
        i.perform();
        i
    }

    pub(super) fn launched(&self) -> Option<&Launched> {
        match &self.source {
            EventSource::Launched(l) => Some(l),
            _ => None,
        }
    }

    /// Whether a pilot drives a session here (a server this app launched),
    /// rather than a capture read or followed.
    pub fn has_pilot(&self) -> bool {
        self.launched().is_some()
    }

    /// The server this app launched, as it was reached.
    pub fn target(&self) -> Option<&Target> {
        self.launched().map(|l| &l.target)
    }

    /// Signing in to the launched server (OAuth), when it may ask.
    pub fn sign_in(&self) -> Option<&SignInState> {
        self.launched().and_then(|l| l.sign_in.as_ref())
    }

    /// The OpenTelemetry the launched session sends, if it sends any.
    pub fn traces(&self) -> Option<&crate::traces::SessionTraces> {
        self.launched().and_then(|l| l.traces.as_ref())
    }

    /// When the launched session started.
    pub(super) fn started(&self) -> Option<Instant> {
        self.launched().map(|l| l.started)
    }

    /// The UI's waker, given to what runs for a launched session.
    pub(super) fn waker(&self) -> Option<Waker> {
        self.launched().and_then(|l| l.waker.clone())
    }

    /// Keeps the reverse proxy the launched session goes through (it stops after the session).
    pub fn keep_own_proxy(&mut self, proxy: Option<crate::intercept_link::OwnProxy>) {
        if let EventSource::Launched(l) = &mut self.source {
            l.own_proxy = proxy;
        }
    }

    pub(super) fn drain_launched(&mut self) -> bool {
        match &mut self.source {
            EventSource::Launched(l) => l.drain(&mut self.model, &mut self.ends, &mut self.view),
            _ => false,
        }
    }

    /// Performs what the driver asked after a command of the UI.
    pub(super) fn perform(&mut self) {
        if let EventSource::Launched(l) = &self.source {
            l.perform(&mut self.model, &mut self.ends, &mut self.view);
        }
    }

    /// Runs `f` on the driver under the owner's lock (a command of the UI).
    pub(super) fn with_driver<T>(&mut self, f: impl FnOnce(&mut Driver) -> T) -> Option<T> {
        let l = self.launched()?;
        let out = f(&mut live_pilot::lock(&l.pilot).pilot.driver);
        Some(out)
    }
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
