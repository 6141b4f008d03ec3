//! Matching responses to requests by id, in both directions.
//!
//! Responses may arrive out of order, after interleaved notifications and
//! server-to-client requests, twice, late, or for ids nobody sent. Pure logic
//! with times passed in, so it is tested without processes.

use crate::wire::classify::{Anomalies, Kind};
use crate::wire::frame::{Direction, Frame, Link};
use crate::wire::message::RequestId;
use foldhash::HashMap;
use std::time::Duration;

#[derive(Clone, Debug)]
pub struct Pending {
    pub request_seq: u64,
    pub method: String,
    pub sent_at: Duration,
    pub deadline: Option<Duration>,
    pub cancelled: bool,
}

/// How a request ended without a normal response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Closed {
    Answered,
    TimedOut,
}

/// A request whose deadline passed.
#[derive(Clone, Debug, PartialEq)]
pub struct TimedOut {
    pub id: RequestId,
    pub request_seq: u64,
    pub method: String,
    pub waited: Duration,
}

#[derive(Default)]
struct Side {
    /// Requests this side sent and that are still waiting.
    pending: HashMap<RequestId, Pending>,
    /// Requests of this side that were answered or given up on. Every
    /// recent id this side has used is here or in `pending` (a reused id
    /// moves back), so the two together flag reuse without a third set of
    /// every id.
    closed: ClosedIds,
}

type ClosedRequest = (u64, String, Duration, Closed);

/// Closed requests remembered per side: the latest [`ClosedIds::KEPT`] to
/// [`ClosedIds::KEPT`] × 2, in two generations (the older one dropped whole
/// when the newer fills). An id reused or answered again long after (by
/// then a legal reuse, or a stray) is no longer recognised, so a session or
/// a capture read of a million requests costs no more than one of 130,000.
#[derive(Default)]
struct ClosedIds {
    recent: HashMap<RequestId, ClosedRequest>,
    older: HashMap<RequestId, ClosedRequest>,
}

impl ClosedIds {
    const KEPT: usize = 1 << 16;

    fn insert(&mut self, id: RequestId, closed: ClosedRequest) {
        self.older.remove(&id);
        self.recent.insert(id, closed);
        if self.recent.len() >= Self::KEPT {
            self.older = std::mem::take(&mut self.recent);
        }
    }

    fn remove(&mut self, id: &RequestId) -> Option<ClosedRequest> {
        self.recent.remove(id).or_else(|| self.older.remove(id))
    }

    fn get_mut(&mut self, id: &RequestId) -> Option<&mut ClosedRequest> {
        match self.recent.get_mut(id) {
            Some(c) => Some(c),
            None => self.older.get_mut(id),
        }
    }
}

/// Request/response bookkeeping for one session.
#[derive(Default)]
pub struct Correlator {
    client: Side,
    server: Side,
}

impl Correlator {
    pub fn new() -> Self {
        Self::default()
    }

    fn side(&mut self, requester: Direction) -> &mut Side {
        match requester {
            Direction::Out => &mut self.client,
            Direction::In => &mut self.server,
        }
    }

    /// Records a frame and fills in its link and correlation anomalies.
    /// `timeout` applies to outgoing requests.
    pub fn observe(&mut self, frame: &mut Frame, timeout: Option<Duration>) {
        let Some(id) = frame.class.id.clone() else {
            return;
        };
        match frame.class.kind {
            Kind::Request => {
                let method = frame.class.method.clone().unwrap_or_default();
                let flags = self.on_request(frame.direction, id, method, frame.seq, frame.at, timeout);
                frame.class.anomalies.insert(flags);
            }
            Kind::Result | Kind::Error => {
                let (link, flags) = self.on_response(frame.direction, &id, frame.at);
                frame.link = link;
                frame.class.anomalies.insert(flags);
            }
            _ => {}
        }
    }

    pub fn on_request(
        &mut self,
        direction: Direction,
        id: RequestId,
        method: String,
        seq: u64,
        at: Duration,
        timeout: Option<Duration>,
    ) -> Anomalies {
        let side = self.side(direction);
        let mut flags = Anomalies::empty();
        let was_closed = side.closed.remove(&id).is_some();
        let was_pending = side
            .pending
            .insert(
                id,
                Pending {
                    request_seq: seq,
                    method,
                    sent_at: at,
                    deadline: timeout.map(|t| at + t),
                    cancelled: false,
                },
            )
            .is_some();
        if was_closed || was_pending {
            flags.insert(Anomalies::DUPLICATE_REQUEST_ID);
        }
        flags
    }

    /// A response travelling in `direction` answers a request that travelled
    /// the other way.
    pub fn on_response(&mut self, direction: Direction, id: &RequestId, at: Duration) -> (Option<Link>, Anomalies) {
        let side = self.side(direction.opposite());
        if let Some(p) = side.pending.remove(id) {
            let flags = if p.cancelled {
                Anomalies::AFTER_CANCEL
            } else {
                Anomalies::empty()
            };
            let link = Link {
                request_seq: p.request_seq,
                method: p.method.clone(),
                latency: at.saturating_sub(p.sent_at),
            };
            side.closed
                .insert(id.clone(), (p.request_seq, p.method, p.sent_at, Closed::Answered));
            return (Some(link), flags);
        }
        match side.closed.get_mut(id) {
            Some((seq, method, sent_at, state)) => {
                let link = Link {
                    request_seq: *seq,
                    method: method.clone(),
                    latency: at.saturating_sub(*sent_at),
                };
                let flags = match *state {
                    Closed::Answered => Anomalies::DUPLICATE_RESPONSE,
                    Closed::TimedOut => {
                        *state = Closed::Answered;
                        Anomalies::LATE_AFTER_TIMEOUT
                    }
                };
                (Some(link), flags)
            }
            None => (None, Anomalies::UNKNOWN_RESPONSE_ID),
        }
    }

    /// Marks an outgoing request as cancelled; its response, if any, is flagged.
    /// Stops the clock on an outgoing request whose transport failed (an
    /// HTTP error, a refused connection): it will get no response, and it
    /// must not time out and be cancelled on top of that.
    pub fn abandon(&mut self, id: &RequestId) -> bool {
        match self.client.pending.get_mut(id) {
            Some(p) => {
                p.deadline = None;
                true
            }
            None => false,
        }
    }

    pub fn on_cancel(&mut self, id: &RequestId) -> bool {
        match self.client.pending.get_mut(id) {
            Some(p) => {
                p.cancelled = true;
                p.deadline = None;
                true
            }
            None => false,
        }
    }

    /// Removes and returns outgoing requests whose deadline is at or before `now`.
    pub fn expire(&mut self, now: Duration) -> Vec<TimedOut> {
        let due: Vec<RequestId> = self
            .client
            .pending
            .iter()
            .filter(|(_, p)| p.deadline.is_some_and(|d| d <= now))
            .map(|(id, _)| id.clone())
            .collect();
        let mut out: Vec<TimedOut> = due
            .into_iter()
            .map(|id| {
                let p = self.client.pending.remove(&id).expect("listed above");
                self.client.closed.insert(
                    id.clone(),
                    (p.request_seq, p.method.clone(), p.sent_at, Closed::TimedOut),
                );
                TimedOut {
                    id,
                    request_seq: p.request_seq,
                    method: p.method,
                    waited: now.saturating_sub(p.sent_at),
                }
            })
            .collect();
        out.sort_by_key(|t| t.request_seq);
        out
    }

    /// Closes one outgoing request as timed out, whatever its deadline.
    pub fn expire_one(&mut self, id: &RequestId, now: Duration) -> Option<TimedOut> {
        let p = self.client.pending.remove(id)?;
        self.client.closed.insert(
            id.clone(),
            (p.request_seq, p.method.clone(), p.sent_at, Closed::TimedOut),
        );
        Some(TimedOut {
            id: id.clone(),
            request_seq: p.request_seq,
            method: p.method,
            waited: now.saturating_sub(p.sent_at),
        })
    }

    pub fn next_deadline(&self) -> Option<Duration> {
        self.client.pending.values().filter_map(|p| p.deadline).min()
    }

    /// Requests sent in `direction` that are still waiting for an answer.
    pub fn pending(&self, direction: Direction) -> impl Iterator<Item = (&RequestId, &Pending)> {
        match direction {
            Direction::Out => self.client.pending.iter(),
            Direction::In => self.server.pending.iter(),
        }
    }

    pub fn is_pending(&self, direction: Direction, id: &RequestId) -> bool {
        match direction {
            Direction::Out => self.client.pending.contains_key(id),
            Direction::In => self.server.pending.contains_key(id),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::classify::Limits;
    use crate::wire::framing::{LineEnding, RawLine};

    fn frame(seq: u64, ms: u64, dir: Direction, json: &str) -> Frame {
        Frame::from_line(
            seq,
            Duration::from_millis(ms),
            dir,
            RawLine {
                bytes: json.as_bytes().to_vec(),
                ending: LineEnding::Lf,
            },
            &Limits::default(),
        )
    }

    #[test]
    fn closed_requests_are_remembered_for_a_while_not_forever() {
        let mut c = Correlator::new();
        let n = ClosedIds::KEPT as i64 * 3;
        for i in 0..n {
            let id = RequestId::Number(i);
            c.on_request(
                Direction::Out,
                id.clone(),
                "ping".into(),
                i as u64,
                Duration::ZERO,
                None,
            );
            c.on_response(Direction::In, &id, Duration::ZERO);
        }
        let closed = &c.client.closed;
        assert!(closed.recent.len() + closed.older.len() < 2 * ClosedIds::KEPT);
        // A recent one answered again is still a duplicate, and reusing it is flagged.
        let (link, flags) = c.on_response(Direction::In, &RequestId::Number(n - 1), Duration::ZERO);
        assert!(link.is_some() && flags.contains(Anomalies::DUPLICATE_RESPONSE));
        let flags = c.on_request(
            Direction::Out,
            RequestId::Number(n - 2),
            "ping".into(),
            0,
            Duration::ZERO,
            None,
        );
        assert!(flags.contains(Anomalies::DUPLICATE_REQUEST_ID));
    }

    #[test]
    fn out_of_order_responses_with_interleaving() {
        let mut c = Correlator::new();
        let mut f = [
            frame(
                0,
                0,
                Direction::Out,
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            ),
            frame(
                1,
                5,
                Direction::Out,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
            ),
            frame(
                2,
                6,
                Direction::In,
                r#"{"jsonrpc":"2.0","method":"notifications/message"}"#,
            ),
            frame(3, 7, Direction::In, r#"{"jsonrpc":"2.0","id":1,"method":"roots/list"}"#),
            frame(4, 9, Direction::In, r#"{"jsonrpc":"2.0","id":2,"result":{}}"#),
            frame(
                5,
                10,
                Direction::Out,
                r#"{"jsonrpc":"2.0","id":1,"result":{"roots":[]}}"#,
            ),
            frame(6, 30, Direction::In, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
        ];
        for fr in f.iter_mut() {
            c.observe(fr, None);
        }
        // Server's request id 1 does not collide with the client's id 1.
        assert!(f[3].anomalies().is_empty());
        let l4 = f[4].link.as_ref().unwrap();
        assert_eq!((l4.request_seq, l4.latency), (1, Duration::from_millis(4)));
        assert_eq!(l4.method, "tools/list");
        let l5 = f[5].link.as_ref().unwrap();
        assert_eq!(l5.request_seq, 3);
        assert_eq!(l5.method, "roots/list");
        let l6 = f[6].link.as_ref().unwrap();
        assert_eq!((l6.request_seq, l6.latency), (0, Duration::from_millis(30)));
        assert!(f.iter().all(|fr| fr.anomalies().is_empty()));
        assert_eq!(c.pending(Direction::Out).count(), 0);
    }

    #[test]
    fn unknown_and_duplicate_responses() {
        let mut c = Correlator::new();
        let mut req = frame(0, 0, Direction::Out, r#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#);
        c.observe(&mut req, None);
        let mut r1 = frame(1, 1, Direction::In, r#"{"jsonrpc":"2.0","id":"a","result":{}}"#);
        let mut r2 = frame(2, 2, Direction::In, r#"{"jsonrpc":"2.0","id":"a","result":{}}"#);
        let mut r3 = frame(3, 3, Direction::In, r#"{"jsonrpc":"2.0","id":999,"result":{}}"#);
        c.observe(&mut r1, None);
        c.observe(&mut r2, None);
        c.observe(&mut r3, None);
        assert!(r1.anomalies().is_empty());
        assert!(r2.anomalies().contains(Anomalies::DUPLICATE_RESPONSE));
        assert_eq!(r2.link.as_ref().unwrap().request_seq, 0);
        assert!(r3.anomalies().contains(Anomalies::UNKNOWN_RESPONSE_ID));
        assert!(r3.link.is_none());
    }

    #[test]
    fn duplicate_request_ids_per_sender() {
        let mut c = Correlator::new();
        let mut a = frame(0, 0, Direction::Out, r#"{"jsonrpc":"2.0","id":1,"method":"x"}"#);
        let mut b = frame(1, 1, Direction::Out, r#"{"jsonrpc":"2.0","id":1,"method":"y"}"#);
        let mut s = frame(2, 1, Direction::In, r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
        c.observe(&mut a, None);
        c.observe(&mut b, None);
        c.observe(&mut s, None);
        assert!(a.anomalies().is_empty());
        assert!(b.anomalies().contains(Anomalies::DUPLICATE_REQUEST_ID));
        assert!(s.anomalies().is_empty());
    }

    #[test]
    fn timeouts_and_late_responses() {
        let mut c = Correlator::new();
        let mut a = frame(0, 0, Direction::Out, r#"{"jsonrpc":"2.0","id":1,"method":"slow"}"#);
        let mut b = frame(1, 10, Direction::Out, r#"{"jsonrpc":"2.0","id":2,"method":"fast"}"#);
        c.observe(&mut a, Some(Duration::from_millis(100)));
        c.observe(&mut b, Some(Duration::from_millis(500)));
        assert_eq!(c.next_deadline(), Some(Duration::from_millis(100)));
        assert!(c.expire(Duration::from_millis(99)).is_empty());
        let t = c.expire(Duration::from_millis(150));
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].id, RequestId::Number(1));
        assert_eq!(t[0].waited, Duration::from_millis(150));
        assert_eq!(c.next_deadline(), Some(Duration::from_millis(510)));
        let mut late = frame(2, 200, Direction::In, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        c.observe(&mut late, None);
        assert!(late.anomalies().contains(Anomalies::LATE_AFTER_TIMEOUT));
        assert_eq!(late.link.as_ref().unwrap().latency, Duration::from_millis(200));
    }

    #[test]
    fn response_after_cancel_is_flagged() {
        let mut c = Correlator::new();
        let mut a = frame(
            0,
            0,
            Direction::Out,
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call"}"#,
        );
        c.observe(&mut a, Some(Duration::from_secs(1)));
        assert!(c.on_cancel(&RequestId::Number(5)));
        assert!(
            c.expire(Duration::from_secs(5)).is_empty(),
            "cancelled requests do not time out"
        );
        let mut r = frame(1, 20, Direction::In, r#"{"jsonrpc":"2.0","id":5,"result":{}}"#);
        c.observe(&mut r, None);
        assert!(r.anomalies().contains(Anomalies::AFTER_CANCEL));
    }
}
