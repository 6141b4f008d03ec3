//! Ending a server, as the stdio transport says: close its stdin, wait,
//! SIGTERM, wait, SIGKILL, to everything the server started. One state
//! machine with no I/O and no clock of its own (the caller passes `now` and
//! what it sees), driven by the session link and by the stdio proxy alike.

use crate::platform::process::Stop;
use std::time::{Duration, Instant};

/// What to do now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    CloseStdin,
    /// Stop the server's tree (group and daemons) this hard.
    Stop(Stop),
    /// SIGKILL had its time: stop waiting (what is left is the watchdog's).
    GiveUp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Running,
    /// stdin closed; waiting for the server to exit by itself.
    ClosedStdin {
        deadline: Instant,
    },
    /// SIGTERM sent.
    Terminated {
        deadline: Instant,
    },
    /// SIGKILL sent.
    Killed {
        deadline: Instant,
    },
    GaveUp,
}

/// How long SIGKILL is given before giving up on a process that does not die.
const KILL_GRACE: Duration = Duration::from_secs(1);

#[derive(Clone, Copy, Debug)]
pub struct Shutdown {
    phase: Phase,
    stdin_grace: Duration,
    term_grace: Duration,
}

impl Shutdown {
    pub fn new(stdin_grace: Duration, term_grace: Duration) -> Self {
        Self {
            phase: Phase::Running,
            stdin_grace,
            term_grace,
        }
    }

    /// Still serving: no shutdown asked for.
    pub fn running(&self) -> bool {
        self.phase == Phase::Running
    }

    pub fn gave_up(&self) -> bool {
        self.phase == Phase::GaveUp
    }

    /// Starts the sequence (idempotent): close stdin first.
    pub fn begin(&mut self, now: Instant) -> Option<Step> {
        if self.phase != Phase::Running {
            return None;
        }
        self.phase = Phase::ClosedStdin {
            deadline: now + self.stdin_grace,
        };
        Some(Step::CloseStdin)
    }

    /// The server's first process exited while shutting down: whatever it
    /// left behind (`tree_alive`) gets SIGTERM at once.
    pub fn leader_exited(&mut self, now: Instant, tree_alive: bool) -> Option<Step> {
        match self.phase {
            Phase::ClosedStdin { .. } if tree_alive => {
                self.phase = Phase::Terminated {
                    deadline: now + self.term_grace,
                };
                Some(Step::Stop(Stop::Gently))
            }
            _ => None,
        }
    }

    /// Advances the timers: `exited` (the first process is gone) and
    /// `tree_alive` (anything of the server still alive) as seen now.
    pub fn tick(&mut self, now: Instant, exited: bool, tree_alive: bool) -> Option<Step> {
        match self.phase {
            Phase::ClosedStdin { deadline } if now >= deadline && !exited => {
                self.phase = Phase::Terminated {
                    deadline: now + self.term_grace,
                };
                Some(Step::Stop(Stop::Gently))
            }
            Phase::Terminated { deadline } if now >= deadline && tree_alive => {
                self.phase = Phase::Killed {
                    deadline: now + KILL_GRACE,
                };
                Some(Step::Stop(Stop::ForGood))
            }
            Phase::Killed { deadline } if now >= deadline => {
                self.phase = Phase::GaveUp;
                Some(Step::GiveUp)
            }
            _ => None,
        }
    }

    /// When [`Shutdown::tick`] may next have something to do.
    pub fn next_wakeup(&self) -> Option<Instant> {
        match self.phase {
            Phase::ClosedStdin { deadline } | Phase::Terminated { deadline } | Phase::Killed { deadline } => {
                Some(deadline)
            }
            Phase::Running | Phase::GaveUp => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_server_that_exits_on_eof_gets_no_signal() {
        let t0 = Instant::now();
        let mut s = Shutdown::new(ms(2000), ms(2000));
        assert_eq!(s.begin(t0), Some(Step::CloseStdin));
        assert_eq!(s.begin(t0), None, "idempotent");
        assert_eq!(s.leader_exited(t0 + ms(10), false), None);
        assert_eq!(s.tick(t0 + ms(5000), true, false), None);
        assert!(!s.running());
    }

    #[test]
    fn a_server_that_ignores_eof_gets_sigterm_then_sigkill_then_is_given_up() {
        let t0 = Instant::now();
        let mut s = Shutdown::new(ms(2000), ms(2000));
        s.begin(t0);
        assert_eq!(s.tick(t0 + ms(1999), false, true), None);
        assert_eq!(s.next_wakeup(), Some(t0 + ms(2000)));
        assert_eq!(s.tick(t0 + ms(2000), false, true), Some(Step::Stop(Stop::Gently)));
        assert_eq!(s.tick(t0 + ms(3000), false, true), None);
        assert_eq!(s.tick(t0 + ms(4000), false, true), Some(Step::Stop(Stop::ForGood)));
        assert_eq!(s.tick(t0 + ms(5000), false, true), Some(Step::GiveUp));
        assert!(s.gave_up());
        assert_eq!(s.next_wakeup(), None);
    }

    #[test]
    fn what_the_leader_left_behind_gets_sigterm_at_once_and_sigkill_if_it_stays() {
        let t0 = Instant::now();
        let mut s = Shutdown::new(ms(2000), ms(500));
        s.begin(t0);
        assert_eq!(s.leader_exited(t0 + ms(100), true), Some(Step::Stop(Stop::Gently)));
        // Gone within the grace: nothing more.
        assert_eq!(s.tick(t0 + ms(700), true, false), None);
        let mut s = Shutdown::new(ms(2000), ms(500));
        s.begin(t0);
        s.leader_exited(t0 + ms(100), true);
        assert_eq!(s.tick(t0 + ms(600), true, true), Some(Step::Stop(Stop::ForGood)));
    }

    #[test]
    fn a_running_server_is_never_signalled() {
        let t0 = Instant::now();
        let mut s = Shutdown::new(ms(10), ms(10));
        assert_eq!(s.leader_exited(t0, true), None);
        assert_eq!(s.tick(t0 + ms(1000), false, true), None);
        assert!(s.running());
    }
}
