//! A proxied session followed while the proxy writes its capture (the
//! Live sessions panel's Open): a worker tails the capture
//! ([`crate::live_follow`]); its events are applied a frame's budget at a
//! time. Once the session ends the tab stays open as an offline capture.

use super::{DRAIN_BUDGET, EventSource, Inspection};
use crate::live_follow::{FollowMsg, FollowedSession};
use mcpscope_core::sessions::index::ListedSession;
use mcpscope_core::timeline::model::{SessionModel, Source};
use mcpscope_core::transport::event::Event;
use mcpscope_core::transport::session::Waker;
use std::collections::VecDeque;
use std::time::Instant;

/// A followed session's own state.
pub(super) struct Followed {
    pub(super) session: FollowedSession,
    /// Events delivered but not applied yet (a frame's budget is spent).
    pending: VecDeque<Event>,
    /// Bumped when the capture starts over: the views drop what they showed.
    pub(super) resets: u64,
}

impl Followed {
    /// Applies what the follow worker delivered, within the frame's budget;
    /// whether more is waiting.
    pub(super) fn drain(&mut self, model: &mut SessionModel, load_warnings: &mut Vec<String>) -> bool {
        let deadline = Instant::now() + DRAIN_BUDGET;
        let mut reset = false;
        while let Ok(msg) = self.session.receiver().try_recv() {
            match msg {
                FollowMsg::Update(u) => {
                    if u.reset {
                        reset = true;
                        self.pending.clear();
                        load_warnings.clear();
                    }
                    load_warnings.extend(u.warnings);
                    self.pending.extend(u.events);
                }
                FollowMsg::Problem(p) => self.session.problem = Some(p),
                FollowMsg::Ended(state) => self.session.ended = Some(state),
            }
            if Instant::now() >= deadline {
                break;
            }
        }
        if reset {
            *model = followed_model(&self.session.session);
            self.resets += 1;
        }
        let mut applied = 0usize;
        while let Some(ev) = self.pending.pop_front() {
            model.apply(&ev);
            applied += 1;
            if applied.is_multiple_of(64) && Instant::now() >= deadline {
                break;
            }
        }
        let receiver = self.session.receiver();
        // The end is reported after the last update: once that is applied the
        // capture is complete, and judged as such.
        if self.session.ended.is_some() && self.pending.is_empty() && receiver.is_empty() {
            model.closed = true;
        }
        !self.pending.is_empty() || !receiver.is_empty()
    }
}

fn followed_model(session: &ListedSession) -> SessionModel {
    let mut model = SessionModel::new(Source::Capture {
        path: session.capture_path.clone(),
        command_line: session.record.command_line.clone(),
    });
    model.remote = session.record.transport != "stdio";
    model
}

impl Inspection {
    /// Follows a proxied session's capture as the proxy writes it; nothing is
    /// read here (a worker does it). Once the session ends this is an offline capture.
    pub fn follow(session: ListedSession, waker: Option<Waker>) -> Inspection {
        let mut i = Inspection::offline(followed_model(&session));
        i.capture_path = Some(session.capture_path.clone());
        if session.state.is_running()
            && let Some(socket) = &session.record.control_socket
        {
            i.intercept = Some(crate::intercept_link::InterceptLink::start(
                std::path::Path::new(socket),
                waker.clone(),
            ));
        }
        i.source = EventSource::Followed(Box::new(Followed {
            session: FollowedSession::start(session, waker),
            pending: VecDeque::new(),
            resets: 0,
        }));
        i
    }

    /// The proxied session this follows, if it follows one (running or ended).
    pub fn followed(&self) -> Option<&FollowedSession> {
        match &self.source {
            EventSource::Followed(f) => Some(&f.session),
            _ => None,
        }
    }

    /// Whether this shows a proxied session that is still running.
    pub fn is_following(&self) -> bool {
        self.followed().is_some_and(FollowedSession::is_following)
    }

    /// How many times a followed capture started over (the views catch up
    /// by emptying themselves); 0 for every other session.
    pub fn resets(&self) -> u64 {
        match &self.source {
            EventSource::Followed(f) => f.resets,
            _ => 0,
        }
    }
}
