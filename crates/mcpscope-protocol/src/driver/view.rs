//! What a UI on another thread reads of a driver: a copy taken when the
//! driver changed, so the UI never holds the owner's lock while it draws.

use super::{Chain, Driver, EraStatus, Question, TaskRun};
use crate::protocol::tasks::Flavor;
use crate::wire::message::RequestId;
use serde_json::Value;
use std::collections::HashMap;
use std::time::Duration;

#[derive(Clone, Debug)]
pub struct DriverView {
    pub era: EraStatus,
    /// Questions waiting for the user, oldest first.
    pub questions: Vec<Question>,
    pub roots: Vec<Value>,
    pub chains: Vec<Chain>,
    pub tasks: Vec<TaskRun>,
    /// The owner's requests in flight: first id → the id now waited on.
    pub in_flight: HashMap<RequestId, RequestId>,
    pub task_flavor: Option<Flavor>,
    /// The protocol version modern requests carry.
    pub modern_version: String,
    /// When the driver's next timer is due, on its clock.
    pub next_wakeup: Option<Duration>,
}

impl DriverView {
    pub fn of(d: &Driver) -> DriverView {
        DriverView {
            era: d.era().clone(),
            questions: d.questions().to_vec(),
            roots: d.roots().to_vec(),
            chains: d.chains().to_vec(),
            tasks: d.tasks().to_vec(),
            in_flight: d.owner.iter().map(|(k, o)| (k.clone(), o.current.clone())).collect(),
            task_flavor: d.task_flavor(),
            modern_version: d.envelope().protocol_version.clone(),
            next_wakeup: d.next_wakeup(),
        }
    }

    pub fn task(&self, root: &RequestId) -> Option<&TaskRun> {
        self.tasks.iter().find(|t| &t.root == root)
    }

    pub fn current_id(&self, root: &RequestId) -> Option<&RequestId> {
        self.in_flight.get(root)
    }

    pub fn is_pending(&self, root: &RequestId) -> bool {
        self.in_flight.contains_key(root)
    }
}
