//! The one owner between a session and the protocol driver, shared by the
//! CLI's blocking [`Client`](crate::client::Client) and the app's live
//! sessions alike: a floor of its own between the transport and the client.
//!
//! It feeds the driver the session's events, holds back a request an HTTP
//! server refused for authorization (the driver never hears of the
//! refusal: it waits on) until the caller has signed in, sends what the
//! driver says (a token about to expire refreshed first), and hands the
//! driver's other actions to the caller's bookkeeping. No thread and no
//! blocking of its own: how signing in waits (inline on the command line,
//! on a worker in the app) is the caller's.

use crate::driver::{Action, Driver, Input, Undelivered};
use crate::protocol::auth::AuthError;
use crate::transport::auth::gate::{ChallengeGate, Held};
use crate::transport::auth::{self, Authorizer};
use crate::transport::event::Event;
use crate::transport::session::Session;
use crate::wire::message::{Message, RequestId};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What [`Pilot::perform`] did, for the caller's bookkeeping.
// Moved once into the caller's callback, never stored: boxing the action
// would only add an allocation per action.
#[allow(clippy::large_enum_variant)]
pub enum Performed {
    /// This request went out (the app watches its id).
    Sent(RequestId),
    /// An action with no I/O of its own: the caller's to act on.
    Other(Action),
}

pub struct Pilot {
    pub driver: Driver,
    /// What each request was sent as, to send it again once signed in.
    gate: ChallengeGate,
    /// Answers OAuth challenges (HTTP targets only); shared with whoever
    /// runs a sign-in (the app's worker).
    authorizer: Option<Arc<Mutex<Authorizer>>>,
    /// The driver's clock starts here.
    started: Instant,
    /// Refresh a token about to expire just before a send (the command
    /// line); an owner that must not wait on the network there (the app's
    /// UI commands) refreshes ahead of time instead.
    refresh_before_send: bool,
}

impl Pilot {
    pub fn new(driver: Driver, started: Instant) -> Self {
        Pilot {
            driver,
            gate: ChallengeGate::new(),
            authorizer: None,
            started,
            refresh_before_send: true,
        }
    }

    /// Sign in whenever the server asks (the authorizer's slot must be the
    /// target's `bearer`).
    pub fn set_authorizer(&mut self, authorizer: Arc<Mutex<Authorizer>>) {
        self.authorizer = Some(authorizer);
    }

    /// Whether [`Pilot::perform`] refreshes an expiring token before a send
    /// (a network round trip, under the caller's locks).
    pub fn set_refresh_before_send(&mut self, on: bool) {
        self.refresh_before_send = on;
    }

    pub fn authorizer(&self) -> Option<&Arc<Mutex<Authorizer>>> {
        self.authorizer.as_ref()
    }

    pub fn take_authorizer(&mut self) -> Option<Arc<Mutex<Authorizer>>> {
        self.authorizer.take()
    }

    /// The driver's clock.
    pub fn now(&self) -> Duration {
        self.started.elapsed()
    }

    /// One event from the session: to the driver, or (a request an HTTP
    /// server refused with an authorization challenge) held back, returned
    /// for the caller to sign in and then call [`Pilot::signed_in`].
    pub fn feed(&mut self, ev: &Event) -> Option<Held> {
        if self.authorizer.is_some()
            && let Some(held) = self.gate.on_event(ev)
        {
            return Some(held);
        }
        let now = self.now();
        feed(&mut self.driver, ev, now);
        None
    }

    /// Lets timed things happen (retries, task polls, grace periods).
    pub fn tick(&mut self) {
        let now = self.now();
        self.driver.handle(Input::Tick(now));
    }

    /// Performs the driver's actions on the session, in order, each then
    /// handed to `done`.
    pub fn perform(&mut self, session: &Session, done: &mut dyn FnMut(Performed)) {
        while let Some(a) = self.driver.poll_action() {
            match a {
                Action::Send {
                    message,
                    timeout,
                    headers,
                } => {
                    if let Some(a) = &self.authorizer {
                        // A token about to expire is refreshed first; not while a
                        // sign-in holds the authorizer (a new token is coming).
                        if self.refresh_before_send
                            && let Ok(mut a) = a.try_lock()
                        {
                            auth::before_request(&mut a, session);
                        }
                        self.gate.on_send(&message, timeout, &headers);
                    }
                    let id = match &message {
                        Message::Request { id, .. } => Some(id.clone()),
                        _ => None,
                    };
                    session.send(&message, timeout, headers);
                    if let Some(id) = id {
                        done(Performed::Sent(id));
                    }
                }
                Action::SendRaw { line, .. } => session.send_raw(line),
                Action::Cancel { id, reason } => session.cancel(id, Some(reason)),
                // Through the session, so that the note is in the capture too.
                Action::Note(text) => session.note(text),
                other => done(Performed::Other(other)),
            }
        }
    }

    /// A held request's sign-in ended: with a token, the request goes out
    /// again under a new id (returned); without, it fails with the reason.
    pub fn signed_in(&mut self, session: &Session, held: &Held, outcome: Result<(), &AuthError>) -> Option<RequestId> {
        let resent = match outcome {
            Ok(()) => match self.driver.reissue(&held.id) {
                Some(new) => match self.gate.reissue(held, new.clone()) {
                    Some(sent) => {
                        session.send(&sent.message, sent.timeout, sent.headers);
                        Some(new)
                    }
                    // What it was sent as is gone: it cannot go out again.
                    None => {
                        self.driver.handle(Input::NotDelivered {
                            id: &new,
                            why: "the request to send again after signing in was not kept",
                            cause: Undelivered::Authorization,
                        });
                        None
                    }
                },
                // Nothing waits for it any more (cancelled meanwhile).
                None => {
                    self.gate.give_up(held);
                    None
                }
            },
            Err(error) => {
                self.gate.give_up(held);
                let why = error.to_string();
                self.driver.handle(Input::NotDelivered {
                    id: &held.id,
                    why: &why,
                    cause: Undelivered::Authorization,
                });
                None
            }
        };
        self.tick();
        resent
    }

    /// Signs in inline for a held request (the command line: nothing else
    /// to do meanwhile), then [`Pilot::signed_in`]. The error, if any.
    pub fn sign_in_here(&mut self, session: &Session, held: &Held) -> Result<Option<RequestId>, AuthError> {
        let outcome = match &self.authorizer {
            Some(a) => {
                let mut a = a.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                auth::answer_challenge(&mut a, session, &held.challenge, held.attempt)
            }
            // Only held with an authorizer; without one nobody can sign in.
            None => Err(AuthError::Cancelled),
        };
        let resent = self.signed_in(session, held, outcome.as_ref().map(|_| ()));
        outcome.map(|()| resent)
    }
}

/// Tells the protocol driver what a session event means to it: the one
/// mapping from transport events to driver inputs, behind
/// [`Pilot::feed`]. `now` is the time since the session started.
pub fn feed(driver: &mut Driver, ev: &Event, now: Duration) {
    match ev {
        Event::Frame(f) => driver.handle(Input::Frame(f)),
        Event::SpawnFailed { error, .. } => driver.handle(Input::Gone(&format!("could not start: {error}"))),
        Event::Exited { status, .. } => driver.handle(Input::Exited(&format!("the server {status}"))),
        Event::Closed { .. } => driver.handle(Input::Gone("the session ended")),
        Event::TimedOut { timed_out, .. } => driver.handle(Input::TimedOut(&timed_out.id)),
        Event::WriteFailed { error, line, .. } => {
            if let Some(id) = line_id(line) {
                driver.handle(Input::NotDelivered {
                    id: &id,
                    why: error,
                    cause: Undelivered::Write,
                });
            }
        }
        Event::Http(h) => {
            if let (Some(id), Some(error)) = (&h.request_id, &h.error) {
                driver.handle(Input::NotDelivered {
                    id,
                    why: error,
                    cause: Undelivered::Http,
                });
            }
        }
        Event::Spawned { .. }
        | Event::Stderr(_)
        | Event::Cancelled { .. }
        | Event::Note { .. }
        | Event::Auth(_)
        | Event::Touch(_)
        | Event::App(_)
        | Event::Model(_) => {}
    }
    driver.handle(Input::Tick(now));
}

/// The id of a request in a line that could not be written.
fn line_id(line: &[u8]) -> Option<RequestId> {
    serde_json::from_slice::<Value>(line)
        .ok()
        .and_then(|v| v.get("id").and_then(RequestId::from_json))
}
