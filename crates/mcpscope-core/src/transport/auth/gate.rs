//! Between the session and the protocol driver: the one place that decides
//! that an HTTP refusal of a request is an authorization challenge to
//! answer (a 401, or a 403 `insufficient_scope`) rather than a request that
//! could not be delivered. Shared by the CLI's client and the app.
//!
//! The gate remembers what each request was sent as. When the session
//! reports a challenge for one, the owner holds the event back from the
//! driver, runs the authorizer (blocking: the CLI on its own thread, the
//! app on a worker), then either sends the same message again under a new
//! id (the request never reached the MCP layer; a new id keeps ids unique
//! on the wire) or tells the driver it could not be delivered. Bounded:
//! [`MAX_AUTHORIZATIONS_PER_REQUEST`] per request, carried over its resends.

use super::{HttpChallenge, MAX_AUTHORIZATIONS_PER_REQUEST};
use crate::transport::event::Event;
use crate::wire::frame::Direction;
use crate::wire::message::{Message, RequestId};
use std::collections::HashMap;
use std::time::Duration;

/// A request as it was handed to the session.
#[derive(Clone, Debug, PartialEq)]
pub struct Sent {
    pub message: Message,
    pub timeout: Option<Duration>,
    /// Per-message HTTP headers (e.g. `Mcp-Param-*`).
    pub headers: Vec<(String, String)>,
}

/// A request whose HTTP exchange asked for authorization: hold its event
/// back from the driver until the authorizer has answered.
#[derive(Clone, Debug, PartialEq)]
pub struct Held {
    pub id: RequestId,
    pub challenge: HttpChallenge,
    /// The how-manieth authorization for this request (from 1); above
    /// [`MAX_AUTHORIZATIONS_PER_REQUEST`] the authorizer gives up.
    pub attempt: u32,
}

#[derive(Debug, Default)]
pub struct ChallengeGate {
    sent: HashMap<RequestId, (Sent, u32)>,
}

impl ChallengeGate {
    pub fn new() -> Self {
        Self::default()
    }

    /// Remembers a message handed to the session (only requests matter).
    pub fn on_send(&mut self, message: &Message, timeout: Option<Duration>, headers: &[(String, String)]) {
        if let Message::Request { id, .. } = message {
            let sent = Sent {
                message: message.clone(),
                timeout,
                headers: headers.to_vec(),
            };
            self.sent.insert(id.clone(), (sent, 0));
        }
    }

    /// Looks at a session event before the driver does: `Some` when it is
    /// an authorization challenge for one of the remembered requests (the
    /// owner then holds it back). Answers and failures of other kinds end
    /// what is remembered of a request.
    pub fn on_event(&mut self, ev: &Event) -> Option<Held> {
        match ev {
            Event::Http(h) => {
                let id = h.request_id.as_ref()?;
                h.error.as_ref()?;
                let (sent, attempts) = self.sent.get(id)?;
                let method = match &sent.message {
                    Message::Request { method, .. } => method.clone(),
                    _ => return None,
                };
                match HttpChallenge::from_http(&method, h) {
                    Some(challenge) => Some(Held {
                        id: id.clone(),
                        challenge,
                        attempt: attempts + 1,
                    }),
                    None => {
                        self.sent.remove(id);
                        None
                    }
                }
            }
            Event::Frame(f) if f.direction == Direction::In => {
                if let Some(id) = &f.class.id
                    && matches!(
                        f.class.kind,
                        crate::wire::classify::Kind::Result | crate::wire::classify::Kind::Error
                    )
                {
                    self.sent.remove(id);
                }
                None
            }
            Event::TimedOut { timed_out, .. } => {
                self.sent.remove(&timed_out.id);
                None
            }
            _ => None,
        }
    }

    /// After a successful authorization: the held request's message again,
    /// under `new_id` (which the driver now waits on), with the attempts so
    /// far carried over. `None` when the request is not remembered.
    pub fn reissue(&mut self, held: &Held, new_id: RequestId) -> Option<Sent> {
        let (mut sent, _) = self.sent.remove(&held.id)?;
        if let Message::Request { id, .. } = &mut sent.message {
            *id = new_id.clone();
        }
        self.sent.insert(new_id, (sent.clone(), held.attempt));
        Some(sent)
    }

    /// After a failed authorization: the request is over.
    pub fn give_up(&mut self, held: &Held) {
        self.sent.remove(&held.id);
    }

    /// Whether another authorization is allowed for this held request.
    pub fn may_authorize(held: &Held) -> bool {
        held.attempt <= MAX_AUTHORIZATIONS_PER_REQUEST
    }

    /// Requests remembered (for tests: nothing must pile up).
    pub fn remembered(&self) -> usize {
        self.sent.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::event::HttpInfo;
    use serde_json::json;

    fn http(id: i64, status: u16, www: Option<&str>) -> Event {
        Event::Http(HttpInfo {
            method: "POST".into(),
            url: "http://127.0.0.1:1/mcp".into(),
            status: Some(status),
            received: www
                .map(|w| vec![("www-authenticate".to_owned(), w.to_owned())])
                .unwrap_or_default(),
            request_id: Some(RequestId::Number(id)),
            error: Some(format!("the server answered HTTP {status}")),
            ..HttpInfo::default()
        })
    }

    #[test]
    fn a_challenge_is_held_and_reissued_under_a_new_id_with_its_attempts() {
        let mut gate = ChallengeGate::new();
        let msg = Message::request(1, "tools/call", Some(json!({"name": "t"})));
        let headers = vec![("Mcp-Name".to_owned(), "t".to_owned())];
        gate.on_send(&msg, Some(Duration::from_secs(5)), &headers);
        gate.on_send(&Message::notification("notifications/initialized", None), None, &[]);
        assert_eq!(gate.remembered(), 1);

        let held = gate
            .on_event(&http(1, 401, Some(r#"Bearer resource_metadata="http://x/prm""#)))
            .expect("a 401 is a challenge");
        assert_eq!((held.attempt, held.challenge.method.as_str()), (1, "tools/call"));
        assert!(ChallengeGate::may_authorize(&held));
        let again = gate.reissue(&held, RequestId::Number(7)).unwrap();
        assert_eq!(
            again.message,
            Message::request(7, "tools/call", Some(json!({"name": "t"})))
        );
        assert_eq!((again.timeout, again.headers), (Some(Duration::from_secs(5)), headers));

        // The step-up on the new id counts as the second authorization.
        let held = gate
            .on_event(&http(7, 403, Some(r#"Bearer error="insufficient_scope", scope="b""#)))
            .expect("insufficient_scope is a challenge");
        assert_eq!(held.attempt, 2);
        let mut held = held;
        held.attempt = MAX_AUTHORIZATIONS_PER_REQUEST + 1;
        assert!(!ChallengeGate::may_authorize(&held));
        gate.give_up(&held);
        assert_eq!(gate.remembered(), 0);
    }

    #[test]
    fn other_refusals_and_answers_pass_through_and_are_forgotten() {
        let mut gate = ChallengeGate::new();
        gate.on_send(&Message::request(1, "tools/list", None), None, &[]);
        gate.on_send(&Message::request(2, "tools/list", None), None, &[]);
        gate.on_send(&Message::request(3, "tools/list", None), None, &[]);
        assert_eq!(gate.on_event(&http(1, 500, None)), None);
        assert_eq!(
            gate.on_event(&http(2, 403, Some(r#"Bearer error="invalid_token""#))),
            None
        );
        // A request mcpscope does not know of (a raw line) is not held.
        assert_eq!(gate.on_event(&http(9, 401, None)), None);
        assert_eq!(gate.remembered(), 1);
        let mut rec = crate::transport::recorder::Recorder::replay(crate::wire::classify::Limits::default());
        let answer = rec.frame_at(
            Direction::In,
            crate::wire::framing::RawLine {
                bytes: br#"{"jsonrpc":"2.0","id":3,"result":{}}"#.to_vec(),
                ending: crate::wire::framing::LineEnding::Lf,
            },
            Duration::ZERO,
            None,
        );
        assert_eq!(gate.on_event(&Event::Frame(answer)), None);
        assert_eq!(gate.remembered(), 0);
    }
}
