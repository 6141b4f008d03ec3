//! A live session's owner, off the render thread: the session and the core's
//! [`Pilot`] run on a thread of their own, with their own timers, so pings,
//! task polls, sign-ins and `list_changed` re-fetches go on whether or not a
//! frame is drawn (a minimised or hidden window draws none). The session's
//! events never wait for the UI: the thread takes them as they come and
//! hands them on, in order, with what the pilot did about each.
//!
//! The UI only drains [`Update`]s into its model, reads a [`DriverView`]
//! copied when the driver changed, and sends commands under the lock for the
//! moment they take.

use crate::job::Job;
use crate::sign_in::{SignInState, SignInStatus};
use crossbeam_channel::{Receiver, Sender, select};
use mcpscope_core::driver::view::DriverView;
use mcpscope_core::pilot::{Performed, Pilot};
use mcpscope_core::protocol::auth::AuthError;
use mcpscope_core::transport::auth::gate::Held;
use mcpscope_core::transport::auth::{self, Authorizer};
use mcpscope_core::transport::event::{AuthExchange, Event};
use mcpscope_core::transport::session::{Session, Waker};
use mcpscope_core::wire::message::RequestId;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// Events taken from the session at once, under one lock.
const BATCH: usize = 256;

/// What the owner's thread owns: the session and the pilot that drives
/// it, shared with the UI's commands (under the lock for the moment they take).
pub struct PilotState {
    pub pilot: Pilot,
    pub session: Session,
}

pub fn lock(state: &Mutex<PilotState>) -> MutexGuard<'_, PilotState> {
    state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What the owner's thread hands the UI, in the order it happened.
pub enum Update {
    /// An event of the session (the model applies it).
    Event(Event),
    /// What the pilot did about it (the model keeps its view of requests);
    /// boxed: far rarer than events, and the queue holds the largest variant.
    Performed(Box<Performed>),
    /// A request held for a sign-in went out again under this id.
    Resent(RequestId),
}

/// The UI's end of a running owner thread. Dropping it ends the thread and
/// waits for it (the session is shut down there when it held the last
/// handle), so a closing app leaves no server behind.
pub struct PilotThread {
    pub updates: Receiver<Update>,
    generation: Arc<AtomicU64>,
    seen: u64,
    /// Dropped to end the thread.
    quit: Option<Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for PilotThread {
    fn drop(&mut self) {
        self.quit = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl PilotThread {
    /// Whether the driver may have changed since the UI last looked.
    pub fn changed(&mut self) -> bool {
        let g = self.generation.load(Ordering::Acquire);
        let changed = g != self.seen;
        self.seen = g;
        changed
    }
}

/// How the owner's thread signs in when a server asks: one sign-in at a
/// time on a worker (it waits on the browser and the network), requests
/// refused meanwhile waiting their turn; the steps go to the session
/// (timeline and capture).
pub struct SignInRunner {
    authorizer: Arc<Mutex<Authorizer>>,
    status: Arc<Mutex<SignInStatus>>,
    cancel: Arc<std::sync::atomic::AtomicBool>,
    waiting: VecDeque<Held>,
    running: Option<(Held, Job<Result<(), AuthError>>)>,
    steps: (Sender<AuthExchange>, Receiver<AuthExchange>),
    /// When a refresh ahead of time was last tried: an authorization server
    /// that cannot be reached is not asked again on every pass.
    refreshed_at: Option<std::time::Instant>,
}

/// How long after a refresh that reached the network the next may be tried.
const REFRESH_RETRY: Duration = Duration::from_secs(60);

impl SignInRunner {
    /// The runner of `state`'s sign-ins (it shares its authorizer, status and cancel flag).
    pub fn new(state: &SignInState) -> Self {
        SignInRunner {
            authorizer: Arc::clone(&state.authorizer),
            status: Arc::clone(&state.status),
            cancel: Arc::clone(&state.cancel),
            waiting: VecDeque::new(),
            running: None,
            steps: crossbeam_channel::unbounded(),
            refreshed_at: None,
        }
    }

    fn status(&self) -> MutexGuard<'_, SignInStatus> {
        self.status.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn start_next(&mut self, poke: &Sender<()>) {
        if self.running.is_some() {
            return;
        }
        let Some(held) = self.waiting.pop_front() else { return };
        self.cancel.store(false, Ordering::Relaxed);
        let authorizer = Arc::clone(&self.authorizer);
        let steps = self.steps.0.clone();
        let challenge = held.challenge.clone();
        let attempt = held.attempt;
        let (poke_step, poke_end) = (poke.clone(), poke.clone());
        // The owner's thread is poked however the sign-in ends (a worker
        // that died included: the job says so).
        let ended: crate::job::Wake = Arc::new(move || {
            let _ = poke_end.send(());
        });
        let job = Job::spawn("sign-in", Some(ended), move || {
            let mut a = authorizer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let mut record = |x: AuthExchange| {
                let _ = steps.send(x);
                let _ = poke_step.send(());
            };
            auth::answer_challenge_with(&mut a, &mut record, &challenge, attempt)
        });
        self.running = Some((held, job));
        self.status().running = true;
    }

    /// A token about to expire is refreshed here, ahead of the sends that
    /// need it (never under the owner's lock, never on the UI thread); not
    /// while a sign-in runs (a new token is coming).
    fn refresh_ahead(&mut self, state: &Mutex<PilotState>) {
        if self.running.is_some() || self.refreshed_at.is_some_and(|t| t.elapsed() < REFRESH_RETRY) {
            return;
        }
        let Ok(mut a) = self.authorizer.try_lock() else { return };
        let mut steps = Vec::new();
        a.refresh_if_expiring(&mut |x| steps.push(x));
        drop(a);
        if !steps.is_empty() {
            self.refreshed_at = Some(std::time::Instant::now());
            let l = lock(state);
            for step in steps {
                l.session.record_auth(step);
            }
        }
    }

    /// Steps to the session; a finished sign-in sends its request again
    /// (or fails it) and the next one starts.
    fn poll(&mut self, state: &Mutex<PilotState>, out: &Sender<Update>, poke: &Sender<()>) {
        let mut guard = lock(state);
        let PilotState { pilot, session } = &mut *guard;
        while let Ok(step) = self.steps.1.try_recv() {
            session.record_auth(step);
        }
        let finished = self.running.as_mut().and_then(|(_, job)| job.poll());
        if let Some(outcome) = finished {
            let outcome = outcome.unwrap_or_else(|failed| Err(AuthError::Config(failed.to_string())));
            let (held, _) = self.running.take().expect("checked");
            while let Ok(step) = self.steps.1.try_recv() {
                session.record_auth(step);
            }
            {
                let mut st = self.status();
                st.failed = outcome.as_ref().err().map(ToString::to_string);
                st.running = false;
            }
            if let Some(new) = pilot.signed_in(session, &held, outcome.as_ref().map(|_| ())) {
                let _ = out.send(Update::Resent(new));
            }
            drop(guard);
            self.start_next(poke);
        }
    }
}

/// Starts the owner's thread for `state` (its driver already started). The
/// UI's `waker` is called whenever there is something new to draw.
pub fn spawn(
    state: Arc<Mutex<PilotState>>,
    sign_in: Option<SignInRunner>,
    waker: Option<Waker>,
) -> std::io::Result<PilotThread> {
    let events = lock(&state).session.events().clone();
    let (out, updates) = crossbeam_channel::unbounded();
    let (quit_tx, quit) = crossbeam_channel::bounded::<()>(0);
    let generation = Arc::new(AtomicU64::new(0));
    let g = Arc::clone(&generation);
    let thread = std::thread::Builder::new()
        .name("mcpscope-pilot".into())
        .spawn(move || run(&state, &events, &quit, &out, sign_in, &g, waker))?;
    Ok(PilotThread {
        updates,
        generation,
        seen: u64::MAX,
        quit: Some(quit_tx),
        thread: Some(thread),
    })
}

fn run(
    state: &Mutex<PilotState>,
    events: &Receiver<Event>,
    quit: &Receiver<()>,
    out: &Sender<Update>,
    mut sign_in: Option<SignInRunner>,
    generation: &AtomicU64,
    waker: Option<Waker>,
) {
    let (poke, pokes) = crossbeam_channel::unbounded::<()>();
    let mut open = true;
    while open {
        let wait = {
            let l = lock(state);
            l.pilot
                .driver
                .next_wakeup()
                .map(|at| at.saturating_sub(l.pilot.now()).max(Duration::from_millis(1)))
                .unwrap_or(Duration::from_secs(3600))
        };
        // Whether the UI has something new to draw.
        let mut news = false;
        select! {
            recv(events) -> ev => match ev {
                Ok(first) => {
                    news = true;
                    let mut guard = lock(state);
                    let PilotState { pilot, session } = &mut *guard;
                    for ev in std::iter::once(first).chain(events.try_iter().take(BATCH - 1)) {
                        let held = pilot.feed(&ev);
                        let _ = out.send(Update::Event(ev));
                        if let (Some(h), Some(si)) = (held, sign_in.as_mut()) {
                            si.waiting.push_back(h);
                        }
                        pilot.perform(session, &mut |p| {
                            let _ = out.send(Update::Performed(Box::new(p)));
                        });
                    }
                }
                // The session ended: what it said is all handed on.
                Err(_) => open = false,
            },
            // A sign-in moved on (a step, an end, a URL to show).
            recv(pokes) -> _ => news = true,
            // The UI is gone.
            recv(quit) -> _ => return,
            default(wait) => {}
        }
        pokes.try_iter().for_each(drop);
        if let Some(si) = &mut sign_in {
            si.start_next(&poke);
            si.poll(state, out, &poke);
            si.refresh_ahead(state);
        }
        {
            let mut guard = lock(state);
            let PilotState { pilot, session } = &mut *guard;
            pilot.tick();
            pilot.perform(session, &mut |p| {
                news = true;
                let _ = out.send(Update::Performed(Box::new(p)));
            });
        }
        if news || !open {
            generation.fetch_add(1, Ordering::Release);
            if let Some(w) = &waker {
                w();
            }
        }
    }
}

/// The driver as the UI reads it.
pub fn view(state: &Mutex<PilotState>) -> DriverView {
    DriverView::of(&lock(state).pilot.driver)
}
