//! A model turn as the capture keeps it: what was sent (the body: the key
//! travels only in headers, which are not kept), the status, every event of
//! the streamed answer with its time, and how long it took. The assembled
//! turn is not stored: it is read again from the events, as frames are
//! classified again from their bytes, so a capture gains what later
//! versions learn to read.

use super::provider::Api;
use super::stream::{Assembler, Turn};
use crate::wire::sse::SseEvent;
use serde_json::{Value, json};
use std::time::Duration;

#[derive(Clone, Debug, PartialEq)]
pub struct ModelExchange {
    /// When the request was sent, on the session's clock.
    pub at: Duration,
    pub provider: String,
    pub model: String,
    pub api: Api,
    pub url: String,
    /// The request body as sent.
    pub request: Value,
    pub status: Option<u16>,
    /// Each event of the answer: time since the request, its `event:` name, its data.
    pub events: Vec<(Duration, Option<String>, String)>,
    pub first_token: Option<Duration>,
    pub total: Duration,
    /// Why the turn failed, when it did (HTTP, unreachable, stopped).
    pub error: Option<String>,
}

impl Api {
    pub fn as_str(self) -> &'static str {
        match self {
            Api::OpenAiChat => "openai-chat",
            Api::AnthropicMessages => "anthropic-messages",
        }
    }

    pub fn parse(s: &str) -> Option<Api> {
        match s {
            "openai-chat" => Some(Api::OpenAiChat),
            "anthropic-messages" => Some(Api::AnthropicMessages),
            _ => None,
        }
    }
}

impl ModelExchange {
    /// The answer, assembled from the recorded events.
    pub fn turn(&self) -> Turn {
        let mut a = Assembler::new(self.api);
        for (_, name, data) in &self.events {
            a.event(&SseEvent {
                event: name.clone(),
                data: data.as_bytes().to_vec(),
                ..SseEvent::default()
            });
        }
        a.finish()
    }

    /// One line for the timeline.
    pub fn summary(&self) -> String {
        if let Some(e) = &self.error {
            return format!("model {}: failed: {e}", self.model);
        }
        let t = self.turn();
        let mut s = format!("model {}", self.model);
        match t.tool_calls.len() {
            0 => s.push_str(&format!(": {}", crate::text::shorten(&t.text, 80))),
            1 => s.push_str(&format!(": calls {}", t.tool_calls[0].name)),
            n => s.push_str(&format!(": calls {n} tools")),
        }
        if let (Some(i), Some(o)) = (t.usage.input_tokens, t.usage.output_tokens) {
            s.push_str(&format!(" · {i}→{o} tokens"));
        }
        if let Some(f) = self.first_token {
            s.push_str(&format!(" · first token {} ms", f.as_millis()));
        }
        s.push_str(&format!(" · {} ms", self.total.as_millis()));
        s
    }

    /// The record as the detail view shows it: its fields and, under
    /// `answer`, the turn they assemble to (text, tool calls, stop reason,
    /// usage). The key is not there: it travelled only in the request's
    /// headers, which are never kept.
    pub fn shown(&self) -> Value {
        let t = self.turn();
        let answer = json!({
            "text": t.text,
            "tool_calls": t.tool_calls,
            "stop_reason": t.stop_reason,
            "usage": t.usage,
            "complete": t.complete,
            "error": t.error,
        });
        // The answer first, after who was asked: what a reader looks for.
        let mut shown = serde_json::Map::new();
        let Value::Object(record) = self.to_json() else {
            unreachable!("to_json makes an object")
        };
        for (k, v) in record {
            let before_request = k == "request";
            if before_request {
                shown.insert("answer".into(), answer.clone());
            }
            shown.insert(k, v);
        }
        Value::Object(shown)
    }

    /// The capture record's fields (besides `t_us` and `dir`).
    pub fn to_json(&self) -> Value {
        json!({
            "event": "model",
            "provider": self.provider,
            "model": self.model,
            "api": self.api.as_str(),
            "url": self.url,
            "status": self.status,
            "request": self.request,
            "events": self.events.iter().map(|(at, name, data)| json!([at.as_micros() as u64, name, data])).collect::<Vec<_>>(),
            "first_token_us": self.first_token.map(|d| d.as_micros() as u64),
            "total_us": self.total.as_micros() as u64,
            "error": self.error,
        })
    }

    pub fn from_json(v: &Value, at: Duration) -> Result<ModelExchange, String> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let api = s("api")
            .as_deref()
            .and_then(Api::parse)
            .ok_or("model record without api (openai-chat or anthropic-messages)")?;
        let mut events = Vec::new();
        for e in v.get("events").and_then(Value::as_array).into_iter().flatten() {
            let us = e
                .get(0)
                .and_then(Value::as_u64)
                .ok_or("a model event without its time")?;
            let name = e.get(1).and_then(Value::as_str).map(str::to_owned);
            let data = e.get(2).and_then(Value::as_str).ok_or("a model event without data")?;
            events.push((Duration::from_micros(us), name, data.to_owned()));
        }
        Ok(ModelExchange {
            at,
            provider: s("provider").unwrap_or_default(),
            model: s("model").ok_or("model record without model")?,
            api,
            url: s("url").unwrap_or_default(),
            request: v.get("request").cloned().unwrap_or(Value::Null),
            status: v.get("status").and_then(Value::as_u64).map(|c| c as u16),
            events,
            first_token: v
                .get("first_token_us")
                .and_then(Value::as_u64)
                .map(Duration::from_micros),
            total: Duration::from_micros(v.get("total_us").and_then(Value::as_u64).unwrap_or(0)),
            error: s("error"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips_and_its_turn_is_read_from_the_events() {
        let x = ModelExchange {
            at: Duration::from_millis(5),
            provider: "anthropic".into(),
            model: "claude-x".into(),
            api: Api::AnthropicMessages,
            url: "https://api.anthropic.com/v1/messages".into(),
            request: json!({"model": "claude-x", "messages": []}),
            status: Some(200),
            events: vec![
                (
                    Duration::from_millis(100),
                    Some("content_block_start".into()),
                    r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"echo","input":{}}}"#.into(),
                ),
                (
                    Duration::from_millis(110),
                    Some("content_block_delta".into()),
                    r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"m\":1}"}}"#.into(),
                ),
                (Duration::from_millis(120), Some("message_stop".into()), r#"{"type":"message_stop"}"#.into()),
            ],
            first_token: Some(Duration::from_millis(100)),
            total: Duration::from_millis(121),
            error: None,
        };
        let back = ModelExchange::from_json(&x.to_json(), x.at).unwrap();
        assert_eq!(back, x);
        let t = back.turn();
        assert!(t.complete);
        assert_eq!(t.tool_calls[0].arguments, Ok(json!({"m": 1})));
        assert_eq!(x.summary(), "model claude-x: calls echo · first token 100 ms · 121 ms");
        assert!(ModelExchange::from_json(&json!({"model": "m"}), Duration::ZERO).is_err());
        // Shown: the assembled answer, before the request.
        let shown = x.shown();
        assert_eq!(shown["answer"]["tool_calls"][0]["name"], "echo");
        let keys: Vec<&String> = shown.as_object().unwrap().keys().collect();
        let at = |k: &str| keys.iter().position(|x| *x == k).unwrap();
        assert!(at("answer") < at("request"), "{keys:?}");
    }
}
