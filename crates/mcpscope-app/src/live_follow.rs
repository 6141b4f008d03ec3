//! Following a proxied session's capture while the proxy writes it.
//!
//! A worker thread tails the capture with the core's [`Follower`] (it reads
//! only what was appended) and watches the session's index record; it hands
//! what it finds to the UI thread over a bounded channel and wakes it. When
//! the record says the session ended (or its proxy is gone), the worker reads
//! the capture to its very end, says so, and stops: the tab stays open as an
//! offline capture.

use crate::job::{Feed, Feeder};
use crossbeam_channel::Receiver;
use mcpscope_core::record::follower::{FollowError, Follower, Update};
use mcpscope_core::sessions::index::{ListedSession, SessionState, proxy_alive, read_record};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the capture is polled: a `stat` while nothing changes, and well
/// inside the ~100 ms a user notices.
const POLL_INTERVAL: Duration = Duration::from_millis(40);
/// How often the index record is read to notice the end of the session.
const RECORD_INTERVAL: Duration = Duration::from_millis(300);

/// What the worker reports.
#[derive(Debug)]
pub enum FollowMsg {
    Update(Box<Update>),
    /// A problem reading the capture (retried), or the reason following stopped.
    Problem(String),
    /// The session is over and everything it wrote was delivered.
    Ended(SessionState),
}

/// A followed session: its channel and its worker (stopped and joined on drop).
pub struct FollowedSession {
    pub session: ListedSession,
    /// Set once the worker reported the end.
    pub ended: Option<SessionState>,
    pub problem: Option<String>,
    feed: Feed<FollowMsg>,
}

impl FollowedSession {
    pub fn start(session: ListedSession, waker: Option<Arc<dyn Fn() + Send + Sync>>) -> FollowedSession {
        let s = session.clone();
        let feed = Feed::spawn("live", 16, waker, move |feed| follow(&s, &feed));
        FollowedSession {
            session,
            ended: None,
            problem: feed.failed().map(|e| e.to_string()),
            feed,
        }
    }

    pub fn receiver(&self) -> &Receiver<FollowMsg> {
        self.feed.receiver()
    }

    pub fn is_following(&self) -> bool {
        self.ended.is_none()
    }
}

/// Where the session stands according to its record (None: still running).
fn ended_state(session: &ListedSession) -> anyhow::Result<Option<SessionState>> {
    use anyhow::Context as _;
    let record =
        read_record(&session.index_path).with_context(|| format!("cannot read {}", session.index_path.display()))?;
    Ok(match &record.ended {
        Some(end) => Some(SessionState::Ended(end.clone())),
        None if proxy_alive(&record) => None,
        None => Some(SessionState::Vanished),
    })
}

fn follow(session: &ListedSession, feed: &Feeder<FollowMsg>) {
    let mut follower = Follower::new(&session.capture_path);
    let mut last_problem: Option<String> = None;
    let mut next_record_check = Instant::now();
    while !feed.stopped() {
        let (ended, record_problem) = if Instant::now() >= next_record_check {
            next_record_check = Instant::now() + RECORD_INTERVAL;
            match ended_state(session) {
                Ok(state) => (state, None),
                // A removed record ends the session as far as the app can tell.
                Err(e) => (Some(SessionState::Vanished), Some(crate::error_view::one_line(&e))),
            }
        } else {
            (None, None)
        };
        let polled = match &ended {
            Some(_) => follower.poll_to_end(),
            None => follower.poll(),
        };
        let more = match polled {
            Ok(u) => {
                let more = u.more;
                if !u.is_empty() && !feed.send(FollowMsg::Update(Box::new(u))) {
                    return;
                }
                last_problem = None;
                more
            }
            Err(e) => {
                let fatal = matches!(e, FollowError::NotACapture(..));
                let text = e.to_string();
                if last_problem.as_deref() != Some(text.as_str()) {
                    if !feed.send(FollowMsg::Problem(text.clone())) {
                        return;
                    }
                    last_problem = Some(text);
                }
                if fatal {
                    return;
                }
                false
            }
        };
        if let Some(state) = ended {
            if let Some(p) = record_problem {
                feed.send(FollowMsg::Problem(p));
            }
            feed.send(FollowMsg::Ended(state));
            return;
        }
        if !more {
            feed.pause(POLL_INTERVAL);
        }
    }
}
