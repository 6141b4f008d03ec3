//! Multi round-trip conversations (2026-07-28): a request answered with
//! `input_required` is sent again, with the answers and the echoed
//! `requestState`, until it completes.

use crate::protocol::mrtr::{self, InputRequired};
use crate::wire::message::RequestId;
use serde_json::{Map, Value, json};

/// One conversation: the request the owner sent and the rounds it took.
#[derive(Clone, Debug, PartialEq)]
pub struct Chain {
    /// Shown on the timeline, from 1.
    pub no: usize,
    /// The first request's id.
    pub root: RequestId,
    pub method: String,
    /// The original params (without `inputResponses`/`requestState`).
    pub params: Value,
    /// The id of the latest send.
    pub current: RequestId,
    /// `input_required` answers received so far.
    pub rounds: usize,
    /// Keys of the current round still unanswered.
    pub waiting: Vec<String>,
    pub responses: Map<String, Value>,
    pub state: Option<String>,
}

/// A round whose inputs are all answered: what to send next.
#[derive(Clone, Debug, PartialEq)]
pub struct Ready {
    pub no: usize,
    pub method: String,
    pub params: Value,
    /// Which send of the conversation this is (the first retry is 2).
    pub round: usize,
    pub echoed_state: bool,
}

#[derive(Default)]
pub struct Chains {
    list: Vec<Chain>,
}

impl Chains {
    pub fn all(&self) -> &[Chain] {
        &self.list
    }

    fn get_mut(&mut self, root: &RequestId) -> Option<&mut Chain> {
        self.list.iter_mut().find(|c| &c.root == root)
    }

    /// `id`, a send of the conversation begun by `root`, was answered with
    /// `input_required`: start the conversation or go on with it. Returns its
    /// number and how many rounds it has had.
    pub fn round(
        &mut self,
        root: &RequestId,
        id: &RequestId,
        method: &str,
        params: Option<Value>,
        ir: &InputRequired,
    ) -> (usize, usize) {
        let next_no = self.list.len() + 1;
        let chain = match self.list.iter().position(|c| &c.root == root) {
            Some(i) => &mut self.list[i],
            None => {
                self.list.push(Chain {
                    no: next_no,
                    root: root.clone(),
                    method: method.to_owned(),
                    params: params.unwrap_or_else(|| json!({})),
                    current: id.clone(),
                    rounds: 0,
                    waiting: Vec::new(),
                    responses: Map::new(),
                    state: None,
                });
                self.list.last_mut().expect("just pushed")
            }
        };
        chain.current = id.clone();
        chain.rounds += 1;
        chain.state = ir.request_state.clone();
        chain.waiting = ir.requests.iter().map(|r| r.key.clone()).collect();
        chain.responses.clear();
        (chain.no, chain.rounds)
    }

    /// Stores one answer of the current round; the retry once all are in.
    pub fn record(&mut self, root: &RequestId, key: String, value: Value) -> Option<Ready> {
        let c = self.get_mut(root)?;
        if !c.waiting.contains(&key) {
            return None;
        }
        c.waiting.retain(|k| k != &key);
        c.responses.insert(key, value);
        self.ready(root)
    }

    /// The retry, when no input of the current round is still awaited.
    pub fn ready(&self, root: &RequestId) -> Option<Ready> {
        let c = self.of_root(root)?;
        if !c.waiting.is_empty() {
            return None;
        }
        let params = mrtr::retry_params(&c.params, &c.responses, c.state.as_deref());
        Some(Ready {
            no: c.no,
            method: c.method.clone(),
            params,
            round: c.rounds + 1,
            echoed_state: c.state.is_some(),
        })
    }

    /// The retry went out under `id`.
    pub fn sent(&mut self, root: &RequestId, id: RequestId) {
        if let Some(c) = self.get_mut(root) {
            c.current = id;
            c.responses.clear();
        }
    }

    /// The conversation a request id belongs to (any of its sends).
    pub fn of_root(&self, root: &RequestId) -> Option<&Chain> {
        self.list.iter().find(|c| &c.root == root)
    }
}
