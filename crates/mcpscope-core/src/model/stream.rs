//! A streamed answer assembled event by event, sans I/O: OpenAI's
//! `chat.completion.chunk`s (text in `delta.content`, tool calls in
//! `delta.tool_calls` pieces keyed by index, usage in a last chunk when asked
//! for, then `[DONE]`) and Anthropic's typed events (`message_start`,
//! `content_block_start` / `_delta` / `_stop` with `text_delta` and
//! `input_json_delta`, `message_delta` with the stop reason and usage,
//! `message_stop`, `error`).
//!
//! Whatever a provider (or something posing as one) sends, the assembler
//! keeps going: a chunk that is not JSON, a tool call's arguments that are
//! not JSON once whole, an error event: each is said in the [`Turn`], never
//! a panic.

use super::provider::Api;
use crate::wire::sse::SseEvent;
use serde_json::Value;

#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Usage {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    /// What the turn cost, where the provider says (OpenRouter's
    /// `usage.cost`, in its credits); no provider's prices are assumed.
    pub cost: Option<f64>,
}

/// A tool call the model asked for.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ToolCall {
    pub id: String,
    /// As the model wrote it (the name the tool was offered under).
    pub name: String,
    /// The arguments' text, as streamed.
    pub arguments_text: String,
    /// Parsed (`{}` when the model sent none), or why they are not JSON.
    pub arguments: Result<Value, String>,
}

/// One assembled answer.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Turn {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    /// Why the model stopped, in the provider's words (`stop`, `tool_calls`,
    /// `length`, `end_turn`, `tool_use`, `max_tokens` …).
    pub stop_reason: Option<String>,
    pub usage: Usage,
    /// An error the provider sent inside the stream.
    pub error: Option<String>,
    /// Events that could not be read, said once each.
    pub unreadable: Vec<String>,
    /// The stream said it was over (`[DONE]`, `message_stop`).
    pub complete: bool,
}

impl Turn {
    /// Whether the model wants tools run before it goes on.
    pub fn wants_tools(&self) -> bool {
        !self.tool_calls.is_empty()
    }
}

/// What an event changed, for showing the answer as it streams.
#[derive(Clone, Debug, PartialEq)]
pub enum Delta {
    Text(String),
    ToolCallStarted { index: usize, name: String },
    ToolArguments { index: usize, fragment: String },
    Stopped(String),
    Error(String),
}

#[derive(Clone, Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

pub struct Assembler {
    api: Api,
    turn: Turn,
    calls: Vec<PartialCall>,
    /// Anthropic: content block index → call index.
    blocks: Vec<(u64, usize)>,
}

/// At most this many unreadable events are kept (a hostile stream of junk
/// is counted, not hoarded).
const MAX_UNREADABLE: usize = 16;

impl Assembler {
    pub fn new(api: Api) -> Self {
        Assembler {
            api,
            turn: Turn::default(),
            calls: Vec::new(),
            blocks: Vec::new(),
        }
    }

    /// The answer so far is over (the stream said so).
    pub fn is_complete(&self) -> bool {
        self.turn.complete
    }

    /// Reads one event; returns what it changed.
    pub fn event(&mut self, ev: &SseEvent) -> Vec<Delta> {
        if !ev.has_data() {
            return Vec::new();
        }
        let data = String::from_utf8_lossy(&ev.data);
        if self.api == Api::OpenAiChat && data.trim() == "[DONE]" {
            self.turn.complete = true;
            return Vec::new();
        }
        let v: Value = match serde_json::from_str(&data) {
            Ok(v) => v,
            Err(e) => {
                self.unreadable(format!(
                    "an event that is not JSON ({e}): {}",
                    crate::text::shorten(&data, 120)
                ));
                return Vec::new();
            }
        };
        match self.api {
            Api::OpenAiChat => self.openai(&v),
            Api::AnthropicMessages => self.anthropic(ev.kind(), &v),
        }
    }

    fn unreadable(&mut self, what: String) {
        if self.turn.unreadable.len() < MAX_UNREADABLE {
            self.turn.unreadable.push(what);
        }
    }

    fn error(&mut self, v: &Value) -> Vec<Delta> {
        let e = &v["error"];
        let text = match (e["type"].as_str(), e["message"].as_str()) {
            (Some(t), Some(m)) => format!("{t}: {m}"),
            (None, Some(m)) => m.to_owned(),
            _ => e.to_string(),
        };
        self.turn.error = Some(text.clone());
        vec![Delta::Error(text)]
    }

    fn openai(&mut self, v: &Value) -> Vec<Delta> {
        if v.get("error").is_some_and(|e| !e.is_null()) {
            return self.error(v);
        }
        let mut out = Vec::new();
        if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
            self.turn.usage.input_tokens = u["prompt_tokens"].as_u64().or(self.turn.usage.input_tokens);
            self.turn.usage.output_tokens = u["completion_tokens"].as_u64().or(self.turn.usage.output_tokens);
            self.turn.usage.cost = u["cost"].as_f64().or(self.turn.usage.cost);
        }
        let Some(choice) = v["choices"].as_array().and_then(|c| c.first()) else {
            return out;
        };
        let delta = &choice["delta"];
        if let Some(t) = delta["content"].as_str().filter(|t| !t.is_empty()) {
            self.turn.text.push_str(t);
            out.push(Delta::Text(t.to_owned()));
        }
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            // Pieces of one call share its index; the first carries id and name.
            let index = call["index"]
                .as_u64()
                .map_or(self.calls.len().saturating_sub(1), |i| i as usize);
            if index > 1024 {
                self.unreadable(format!("a tool call with index {index}"));
                continue;
            }
            while self.calls.len() <= index {
                self.calls.push(PartialCall::default());
            }
            let c = &mut self.calls[index];
            if let Some(id) = call["id"].as_str() {
                c.id = id.to_owned();
            }
            if let Some(name) = call["function"]["name"].as_str().filter(|n| !n.is_empty()) {
                c.name.push_str(name);
                out.push(Delta::ToolCallStarted {
                    index,
                    name: c.name.clone(),
                });
            }
            if let Some(args) = call["function"]["arguments"].as_str().filter(|a| !a.is_empty()) {
                c.arguments.push_str(args);
                out.push(Delta::ToolArguments {
                    index,
                    fragment: args.to_owned(),
                });
            }
        }
        if let Some(reason) = choice["finish_reason"].as_str() {
            self.turn.stop_reason = Some(reason.to_owned());
            out.push(Delta::Stopped(reason.to_owned()));
        }
        out
    }

    fn anthropic(&mut self, kind: &str, v: &Value) -> Vec<Delta> {
        // The type is in the data too; it wins over the event's name.
        let kind = v["type"].as_str().unwrap_or(kind);
        match kind {
            "message_start" => {
                let u = &v["message"]["usage"];
                self.turn.usage.input_tokens = u["input_tokens"].as_u64();
                self.turn.usage.output_tokens = u["output_tokens"].as_u64();
                Vec::new()
            }
            "content_block_start" => {
                let block = &v["content_block"];
                match block["type"].as_str() {
                    Some("tool_use") => {
                        let index = self.calls.len();
                        self.calls.push(PartialCall {
                            id: block["id"].as_str().unwrap_or_default().to_owned(),
                            name: block["name"].as_str().unwrap_or_default().to_owned(),
                            arguments: String::new(),
                        });
                        self.blocks.push((v["index"].as_u64().unwrap_or(u64::MAX), index));
                        vec![Delta::ToolCallStarted {
                            index,
                            name: self.calls[index].name.clone(),
                        }]
                    }
                    Some("text") => {
                        let t = block["text"].as_str().unwrap_or_default();
                        self.turn.text.push_str(t);
                        if t.is_empty() {
                            Vec::new()
                        } else {
                            vec![Delta::Text(t.to_owned())]
                        }
                    }
                    _ => Vec::new(),
                }
            }
            "content_block_delta" => {
                let delta = &v["delta"];
                match delta["type"].as_str() {
                    Some("text_delta") => {
                        let t = delta["text"].as_str().unwrap_or_default();
                        self.turn.text.push_str(t);
                        vec![Delta::Text(t.to_owned())]
                    }
                    Some("input_json_delta") => {
                        let block = v["index"].as_u64().unwrap_or(u64::MAX);
                        let Some(&(_, index)) = self.blocks.iter().find(|(b, _)| *b == block) else {
                            self.unreadable(format!("input_json_delta for block {block}, which is no tool_use"));
                            return Vec::new();
                        };
                        let fragment = delta["partial_json"].as_str().unwrap_or_default();
                        self.calls[index].arguments.push_str(fragment);
                        vec![Delta::ToolArguments {
                            index,
                            fragment: fragment.to_owned(),
                        }]
                    }
                    _ => Vec::new(),
                }
            }
            "message_delta" => {
                if let Some(o) = v["usage"]["output_tokens"].as_u64() {
                    self.turn.usage.output_tokens = Some(o);
                }
                if let Some(i) = v["usage"]["input_tokens"].as_u64() {
                    self.turn.usage.input_tokens = Some(i);
                }
                match v["delta"]["stop_reason"].as_str() {
                    Some(r) => {
                        self.turn.stop_reason = Some(r.to_owned());
                        vec![Delta::Stopped(r.to_owned())]
                    }
                    None => Vec::new(),
                }
            }
            "message_stop" => {
                self.turn.complete = true;
                Vec::new()
            }
            "error" => self.error(v),
            // ping, content_block_stop, and what later versions add.
            _ => Vec::new(),
        }
    }

    /// The answer, its tool calls' arguments read as JSON.
    pub fn finish(mut self) -> Turn {
        self.turn.tool_calls = self
            .calls
            .into_iter()
            .map(|c| {
                let arguments = if c.arguments.trim().is_empty() {
                    Ok(Value::Object(Default::default()))
                } else {
                    serde_json::from_str::<Value>(&c.arguments)
                        .map_err(|e| format!("the model's arguments are not JSON ({e})"))
                        .and_then(|v| {
                            if v.is_object() {
                                Ok(v)
                            } else {
                                Err(format!(
                                    "the model's arguments are {}, not an object",
                                    crate::text::json_kind(&v)
                                ))
                            }
                        })
                };
                ToolCall {
                    id: c.id,
                    name: c.name,
                    arguments_text: c.arguments,
                    arguments,
                }
            })
            .collect();
        self.turn
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::sse::SseParser;

    fn assemble(api: Api, stream: &str) -> (Turn, Vec<Delta>) {
        let mut a = Assembler::new(api);
        let mut deltas = Vec::new();
        let mut parser = SseParser::with_limit(1 << 20);
        // Fed in small pieces, as a network hands them over.
        for piece in stream.as_bytes().chunks(7) {
            parser.feed(piece, &mut |ev| deltas.extend(a.event(&ev)));
        }
        parser.finish(&mut |ev| deltas.extend(a.event(&ev)));
        (a.finish(), deltas)
    }

    #[test]
    fn an_openai_stream_with_text_and_two_tool_calls() {
        let stream = concat!(
            "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Let me check.\"},\"finish_reason\":null}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"city\\\":\"}}]},\"finish_reason\":null}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\" \\\"Paris\\\"}\"}}]},\"finish_reason\":null}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"type\":\"function\",\"function\":{\"name\":\"get_time\",\"arguments\":\"{}\"}}]},\"finish_reason\":null}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":81,\"completion_tokens\":37,\"total_tokens\":118,\"cost\":0.000458}}\n\n",
            "data: [DONE]\n\n",
        );
        let (turn, deltas) = assemble(Api::OpenAiChat, stream);
        assert_eq!(turn.text, "Let me check.");
        assert!(turn.complete && turn.wants_tools());
        assert_eq!(turn.stop_reason.as_deref(), Some("tool_calls"));
        assert_eq!(
            turn.usage,
            Usage {
                input_tokens: Some(81),
                output_tokens: Some(37),
                // OpenRouter's usage accounting.
                cost: Some(0.000458),
            }
        );
        assert_eq!(turn.tool_calls.len(), 2);
        assert_eq!(
            (turn.tool_calls[0].id.as_str(), turn.tool_calls[0].name.as_str()),
            ("call_a", "get_weather")
        );
        assert_eq!(turn.tool_calls[0].arguments, Ok(serde_json::json!({"city": "Paris"})));
        assert_eq!(turn.tool_calls[1].arguments, Ok(serde_json::json!({})));
        assert!(deltas.contains(&Delta::Text("Let me check.".into())));
        assert!(deltas.contains(&Delta::Stopped("tool_calls".into())));
        assert!(turn.unreadable.is_empty(), "{:?}", turn.unreadable);
    }

    #[test]
    fn an_anthropic_stream_with_text_and_a_tool_use() {
        let stream = concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5\",\"stop_reason\":null,\"usage\":{\"input_tokens\":472,\"output_tokens\":2}}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            "event: ping\ndata: {\"type\":\"ping\"}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Checking the weather.\"}}\n\n",
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_01\",\"name\":\"get_weather\",\"input\":{}}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"city\\\": \\\"Par\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"is\\\"}\"}}\n\n",
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":89}}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        );
        let (turn, deltas) = assemble(Api::AnthropicMessages, stream);
        assert_eq!(turn.text, "Checking the weather.");
        assert!(turn.complete);
        assert_eq!(turn.stop_reason.as_deref(), Some("tool_use"));
        assert_eq!(
            turn.usage,
            Usage {
                input_tokens: Some(472),
                output_tokens: Some(89),
                cost: None,
            }
        );
        assert_eq!(turn.tool_calls[0].id, "toolu_01");
        assert_eq!(turn.tool_calls[0].arguments, Ok(serde_json::json!({"city": "Paris"})));
        assert!(deltas.contains(&Delta::ToolCallStarted {
            index: 0,
            name: "get_weather".into()
        }));
    }

    #[test]
    fn a_hostile_or_broken_stream_is_said_not_panicked_on() {
        let stream = concat!(
            "data: not json at all\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"t\",\"arguments\":\"{\\\"a\\\":\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":99999999,\"function\":{\"name\":\"x\"}}]}}]}\n\n",
            "data: {\"error\":{\"message\":\"Rate limit reached\",\"type\":\"rate_limit_error\"}}\n\n",
        );
        let (turn, _) = assemble(Api::OpenAiChat, stream);
        assert_eq!(turn.error.as_deref(), Some("rate_limit_error: Rate limit reached"));
        assert_eq!(turn.unreadable.len(), 2, "{:?}", turn.unreadable);
        assert!(!turn.complete, "no [DONE]: the caller says the stream was cut");
        let args = turn.tool_calls[0].arguments.as_ref().unwrap_err();
        assert!(args.contains("not JSON"), "{args}");
        assert_eq!(turn.tool_calls[0].arguments_text, "{\"a\":");
        // Arguments that are JSON but not an object.
        let (turn, _) = assemble(
            Api::AnthropicMessages,
            concat!(
                "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\"}}\n\n",
                "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"[1,2]\"}}\n\n",
                "data: {\"type\":\"content_block_delta\",\"index\":5,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n",
                "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
            ),
        );
        assert!(
            turn.tool_calls[0]
                .arguments
                .as_ref()
                .unwrap_err()
                .contains("not an object")
        );
        assert_eq!(turn.error.as_deref(), Some("overloaded_error: Overloaded"));
        assert_eq!(turn.unreadable.len(), 1);
    }
}
