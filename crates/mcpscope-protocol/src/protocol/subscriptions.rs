//! `subscriptions/listen` (2026-07-28): the modern replacement for the GET
//! stream and `resources/subscribe`.
//!
//! The client sends one long-lived request with a filter; the server answers
//! first with `notifications/subscriptions/acknowledged` (the subset of the
//! filter it honours), then sends the notifications the filter asked for,
//! each tagged with `_meta["io.modelcontextprotocol/subscriptionId"]` = the
//! listen request's id. A result comes only when the stream closes.
//! [`subscriptions`] groups all that, from frames alone, into one stream each.

use crate::protocol::era::META_SUBSCRIPTION_ID;
use crate::protocol::methods;
use crate::wire::classify::Kind;
use crate::wire::frame::{Direction, Frame};
use crate::wire::message::RequestId;
use serde_json::{Value, json};
use std::collections::HashMap;

pub const LISTEN: &str = "subscriptions/listen";
pub const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";

/// What a listen request asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    pub tools_list_changed: bool,
    pub prompts_list_changed: bool,
    pub resources_list_changed: bool,
    /// URIs whose `notifications/resources/updated` are wanted.
    pub resource_subscriptions: Vec<String>,
    /// Tasks extension: task ids whose `notifications/tasks` are wanted.
    pub task_ids: Vec<String>,
}

impl Filter {
    /// Everything the core protocol offers (list changes of all three kinds).
    pub fn all_lists() -> Self {
        Self {
            tools_list_changed: true,
            prompts_list_changed: true,
            resources_list_changed: true,
            ..Self::default()
        }
    }

    /// Reads a filter object (the `notifications` member of a listen request).
    pub fn from_json(v: &Value) -> Self {
        let flag = |k: &str| v.get(k).and_then(Value::as_bool).unwrap_or(false);
        let strings = |k: &str| {
            v.get(k)
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                .unwrap_or_default()
        };
        Self {
            tools_list_changed: flag("toolsListChanged"),
            prompts_list_changed: flag("promptsListChanged"),
            resources_list_changed: flag("resourcesListChanged"),
            resource_subscriptions: strings("resourceSubscriptions"),
            task_ids: strings("taskIds"),
        }
    }

    /// The filter object; members left out are not asked for.
    pub fn to_json(&self) -> Value {
        let mut f = json!({});
        if self.tools_list_changed {
            f["toolsListChanged"] = json!(true);
        }
        if self.prompts_list_changed {
            f["promptsListChanged"] = json!(true);
        }
        if self.resources_list_changed {
            f["resourcesListChanged"] = json!(true);
        }
        if !self.resource_subscriptions.is_empty() {
            f["resourceSubscriptions"] = json!(self.resource_subscriptions);
        }
        if !self.task_ids.is_empty() {
            f["taskIds"] = json!(self.task_ids);
        }
        f
    }

    /// The params of `subscriptions/listen` (before the envelope is added).
    pub fn listen_params(&self) -> Value {
        json!({ "notifications": self.to_json() })
    }
}

/// The subscription id a notification is tagged with.
pub fn subscription_id(message: &Value) -> Option<RequestId> {
    message
        .pointer("/params/_meta")
        .and_then(|m| m.get(META_SUBSCRIPTION_ID))
        .and_then(RequestId::from_json)
}

/// One listen stream as seen on the wire.
#[derive(Clone, Debug, PartialEq)]
pub struct Subscription {
    pub id: RequestId,
    pub listen_seq: u64,
    /// The filter the client asked for.
    pub requested: Value,
    /// The acknowledgement: its seq and the filter the server honours.
    pub acknowledged: Option<(u64, Value)>,
    /// Notifications tagged with this subscription (the acknowledgement excluded).
    pub notifications: Vec<u64>,
    /// The result (graceful close), an error, or the server's `notifications/cancelled`.
    pub closed_seq: Option<u64>,
}

/// Groups listen requests with their acknowledgement and tagged notifications.
pub fn subscriptions(frames: &[&Frame]) -> Vec<Subscription> {
    let mut subs: Vec<Subscription> = Vec::new();
    let find = |subs: &mut Vec<Subscription>, id: &RequestId| subs.iter().rposition(|s| &s.id == id);
    for f in frames {
        match (f.direction, f.kind()) {
            (Direction::Out, Kind::Request) if f.class.method.as_deref() == Some(LISTEN) => {
                let Some(id) = f.class.id.clone() else { continue };
                let requested = f
                    .json()
                    .and_then(|v| v.pointer("/params/notifications").cloned())
                    .unwrap_or(Value::Null);
                subs.push(Subscription {
                    id,
                    listen_seq: f.seq,
                    requested,
                    acknowledged: None,
                    notifications: Vec::new(),
                    closed_seq: None,
                });
            }
            (Direction::In, Kind::Notification) => {
                let Some(v) = f.json() else { continue };
                if f.class.method.as_deref() == Some(methods::CANCELLED) {
                    if let Some(id) = v.pointer("/params/requestId").and_then(RequestId::from_json)
                        && let Some(i) = find(&mut subs, &id)
                    {
                        subs[i].closed_seq.get_or_insert(f.seq);
                    }
                    continue;
                }
                let Some(id) = subscription_id(&v) else { continue };
                let Some(i) = find(&mut subs, &id) else { continue };
                let s = &mut subs[i];
                if f.class.method.as_deref() == Some(ACKNOWLEDGED) && s.acknowledged.is_none() {
                    let honoured = v.pointer("/params/notifications").cloned().unwrap_or(Value::Null);
                    s.acknowledged = Some((f.seq, honoured));
                } else {
                    s.notifications.push(f.seq);
                }
            }
            (Direction::In, Kind::Result | Kind::Error) => {
                let Some(link) = &f.link else { continue };
                if let Some(s) = subs.iter_mut().find(|s| s.listen_seq == link.request_seq) {
                    s.closed_seq.get_or_insert(f.seq);
                }
            }
            _ => {}
        }
    }
    subs
}

/// For every frame of a listen stream, the seq of its listen request: what a
/// timeline groups by.
pub fn stream_of(subs: &[Subscription]) -> HashMap<u64, u64> {
    let mut m = HashMap::new();
    for s in subs {
        let seqs = std::iter::once(s.listen_seq)
            .chain(s.acknowledged.as_ref().map(|(seq, _)| *seq))
            .chain(s.notifications.iter().copied())
            .chain(s.closed_seq);
        for seq in seqs {
            m.insert(seq, s.listen_seq);
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::mrtr::tests::frames_of;

    #[test]
    fn filters_read_back_what_they_write() {
        let f = Filter {
            resource_subscriptions: vec!["file:///a".into()],
            task_ids: vec!["t".into()],
            ..Filter::all_lists()
        };
        assert_eq!(Filter::from_json(&f.to_json()), f);
        assert_eq!(Filter::from_json(&json!({})), Filter::default());
    }

    #[test]
    fn filters() {
        assert_eq!(Filter::default().to_json(), json!({}));
        let f = Filter {
            tools_list_changed: true,
            resource_subscriptions: vec!["test://a".into()],
            ..Filter::default()
        };
        assert_eq!(
            f.listen_params(),
            json!({"notifications":{"toolsListChanged":true,"resourceSubscriptions":["test://a"]}})
        );
        assert_eq!(Filter::all_lists().to_json().as_object().unwrap().len(), 3);
    }

    #[test]
    fn groups_a_stream() {
        use Direction::{In, Out};
        let fs = frames_of(&[
            (
                Out,
                r#"{"jsonrpc":"2.0","id":"L1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"promptsListChanged":true}}}"#,
            ),
            (
                In,
                r#"{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":"L1"}}}"#,
            ),
            (
                In,
                r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}"#,
            ),
            (
                In,
                r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L1"}}}"#,
            ),
            (
                In,
                r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"other"}}}"#,
            ),
            (
                In,
                r#"{"jsonrpc":"2.0","id":"L1","result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":"L1"}}}"#,
            ),
        ]);
        let refs: Vec<&Frame> = fs.iter().collect();
        let subs = subscriptions(&refs);
        assert_eq!(subs.len(), 1);
        let s = &subs[0];
        assert_eq!(s.id, RequestId::String("L1".into()));
        assert_eq!(s.acknowledged, Some((1, json!({"toolsListChanged":true}))));
        assert_eq!(s.notifications, [3]);
        assert_eq!(s.closed_seq, Some(5));
        let m = stream_of(&subs);
        assert_eq!(m.len(), 4);
        assert!(!m.contains_key(&2));
    }
}
