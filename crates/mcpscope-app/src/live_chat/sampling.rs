//! A server's sampling request answered by a model, as the spec asks of
//! hosts: the person sees the request and may edit, send or refuse it;
//! then sees the model's answer and may edit, send or refuse that. The
//! same for `sampling/createMessage` (legacy era) and for a 2026-07-28
//! `input_required` asking for sampling: both are questions of the driver.

use super::turn::{TurnEnd, TurnWorker, key_finder};
use crate::job::Wake;
use mcpscope_core::model::provider::ModelSpec;
use mcpscope_core::model::record::ModelExchange;
use mcpscope_core::model::request::OfferedTools;
use mcpscope_core::model::sampling;
use serde_json::Value;

pub enum Stage {
    /// The request as the model will get it, for the person to edit.
    Request { params: String, problem: Option<String> },
    /// Sent; the model's text as it streams.
    Asking {
        turn: TurnWorker,
        text: String,
        offered: OfferedTools,
        notes: Vec<String>,
    },
    /// The `CreateMessageResult` to send back, for the person to edit.
    Answer {
        result: String,
        problem: Option<String>,
        notes: Vec<String>,
    },
    /// The model could not answer; the person may try again or refuse.
    Failed(String),
}

pub struct SamplingAnswer {
    pub spec: ModelSpec,
    /// A key typed in the Chat mode; `None`: the variable or the keyring.
    typed_key: Option<String>,
    /// The request as the server sent it (for "try again").
    original: String,
    pub stage: Stage,
}

impl SamplingAnswer {
    pub fn new(spec: ModelSpec, typed_key: Option<String>, params: &Value) -> SamplingAnswer {
        let original = serde_json::to_string_pretty(params).unwrap_or_else(|_| params.to_string());
        SamplingAnswer {
            spec,
            typed_key,
            stage: Stage::Request {
                params: original.clone(),
                problem: None,
            },
            original,
        }
    }

    /// Sends the request as edited to the model.
    pub fn send(&mut self, wake: Option<Wake>) {
        let Stage::Request { params, problem } = &mut self.stage else {
            return;
        };
        let parsed = serde_json::from_str::<Value>(params)
            .map_err(|e| format!("not JSON: {e}"))
            .and_then(|v| sampling::from_request(&self.spec, &v));
        let t = match parsed {
            Ok(t) => t,
            Err(e) => {
                *problem = Some(e);
                return;
            }
        };
        let key = key_finder(&self.spec, self.typed_key.clone());
        let body = t.body(&self.spec);
        self.stage = Stage::Asking {
            turn: TurnWorker::spawn(self.spec.clone(), key, body, wake),
            text: String::new(),
            offered: t.offered,
            notes: t.notes,
        };
    }

    /// Takes what the model sent; returns the turn to record once it ended.
    pub fn poll(&mut self) -> Option<ModelExchange> {
        let Stage::Asking {
            turn,
            text,
            offered,
            notes,
        } = &mut self.stage
        else {
            return None;
        };
        let end = turn.poll(text)?;
        let record = end.record(&self.spec);
        self.stage = match end {
            TurnEnd::Asked { result: Ok(x), .. } if x.turn.complete && x.turn.error.is_none() => {
                let result = sampling::result_of(&self.spec, &x.turn, offered);
                Stage::Answer {
                    result: serde_json::to_string_pretty(&result).unwrap_or_default(),
                    problem: None,
                    notes: std::mem::take(notes),
                }
            }
            TurnEnd::Asked { result: Ok(x), .. } => Stage::Failed(
                x.turn
                    .error
                    .unwrap_or_else(|| "the answer's stream ended before it said it was over".into()),
            ),
            TurnEnd::Asked { result: Err(e), .. } => Stage::Failed(e.to_string()),
            TurnEnd::NotSent(why) => Stage::Failed(why),
        };
        record
    }

    /// Stops the model's answer.
    pub fn stop(&mut self) {
        if let Stage::Asking { turn, .. } = &self.stage {
            turn.stop();
        }
    }

    /// Back to the request as the server sent it.
    pub fn retry(&mut self) {
        self.stage = Stage::Request {
            params: self.original.clone(),
            problem: None,
        };
    }

    /// The answer as edited, when it can be sent: a JSON object with the
    /// fields a `CreateMessageResult` must have.
    pub fn approved(&mut self) -> Option<Value> {
        let Stage::Answer { result, problem, .. } = &mut self.stage else {
            return None;
        };
        match serde_json::from_str::<Value>(result) {
            Ok(v) if ["role", "content", "model"].iter().all(|k| v.get(k).is_some()) => Some(v),
            Ok(_) => {
                *problem = Some("a CreateMessageResult needs role, content and model".into());
                None
            }
            Err(e) => {
                *problem = Some(format!("not JSON: {e}"));
                None
            }
        }
    }
}
