//! A recorded chat served again: the model's turns come from a capture, in
//! order, as `mock` serves a server's answers, so the same conversation can
//! be run against a changed server with no provider, deterministically.
//! The tool results the recording got are kept to compare with the live ones.

use crate::model::chat_loop::answer_text;
use crate::model::record::ModelExchange;
use crate::transport::event::Event;
use crate::wire::classify::Kind;
use crate::wire::frame::Direction;
use std::collections::VecDeque;

/// What a tool call got in the recording.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedResult {
    pub tool: String,
    pub text: String,
    pub is_error: bool,
}

#[derive(Clone, Debug, Default)]
pub struct RecordedChat {
    pub turns: VecDeque<ModelExchange>,
    pub results: VecDeque<RecordedResult>,
}

impl RecordedChat {
    /// The recording's next model turn, or why there is none to serve.
    pub fn next_turn(&mut self) -> Result<ModelExchange, String> {
        self.turns
            .pop_front()
            .ok_or_else(|| "the recording has no more model turns: the conversation went further than recorded".into())
    }

    /// Compares a tool call's result with the recording's next one: `None`
    /// when it is the same, else what the recording had (or "no call").
    pub fn differs(&mut self, text: &str, is_error: bool) -> Option<String> {
        match self.results.pop_front() {
            Some(r) if r.text == text && r.is_error == is_error => None,
            Some(r) => Some(crate::text::shorten(&r.text, 400)),
            None => Some("no call".into()),
        }
    }

    /// What the user asked first, as the first turn's request has it.
    pub fn prompt(&self) -> Option<String> {
        let messages = self.turns.front()?.request.get("messages")?.as_array()?;
        let first = messages.iter().find(|m| m["role"] == "user")?;
        match &first["content"] {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Array(blocks) => blocks
                .iter()
                .find(|b| b["type"] == "text")
                .and_then(|b| b["text"].as_str().map(str::to_owned)),
            _ => None,
        }
    }

    /// The model turns and the `tools/call` results of a capture's events.
    pub fn from_events(events: &[Event]) -> RecordedChat {
        let mut chat = RecordedChat::default();
        // Requests by seq: the tool each called.
        let mut calls: Vec<(u64, String)> = Vec::new();
        for e in events {
            match e {
                Event::Model(m) => chat.turns.push_back((**m).clone()),
                Event::Frame(f)
                    if f.direction == Direction::Out
                        && f.class.kind == Kind::Request
                        && f.class.method.as_deref() == Some("tools/call") =>
                {
                    let tool = f
                        .json()
                        .and_then(|v| v["params"]["name"].as_str().map(str::to_owned))
                        .unwrap_or_default();
                    calls.push((f.seq, tool));
                }
                Event::Frame(f) if f.direction == Direction::In => {
                    let Some(link) = &f.link else { continue };
                    let Some(at) = calls.iter().position(|(seq, _)| *seq == link.request_seq) else {
                        continue;
                    };
                    let (_, tool) = calls.remove(at);
                    let (text, is_error) = match f.json() {
                        Some(v) => answer_text(&v),
                        None => (String::from_utf8_lossy(&f.raw).into_owned(), true),
                    };
                    chat.results.push_back(RecordedResult { tool, text, is_error });
                }
                _ => {}
            }
        }
        chat
    }
}
