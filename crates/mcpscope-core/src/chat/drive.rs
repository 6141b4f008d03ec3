//! The chat loop driven over a blocking [`Client`]: each model turn asked of
//! a live provider or served from a recording, each tool call the model
//! asks for made in the session (so it is recorded, paired and judged
//! beside the model's turns), until the loop says it is over. `mcpscope
//! chat` prints as it goes; `mcpscope test`'s evals grade what came of it.
//! (The app drives the same [`ChatLoop`] on its own threads.)

use super::provider_call::{self, ProviderError, Timing};
use super::replay::RecordedChat;
use crate::client::{Client, ClientError};
use crate::model::chat_loop::{self, ChatLoop, Outcome, Step};
use crate::model::compare::{RunSummary, RunTally};
use crate::model::provider::ModelSpec;
use crate::model::stream::{Delta, Turn};
use serde_json::{Value, json};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// Where the model's turns come from.
pub enum TurnSource {
    /// The provider itself, with this key (none for a local server).
    Live { key: Option<String>, timeout: Duration },
    /// A recorded chat, served turn by turn; tool results that differ from
    /// the recording's are counted.
    Replay { chat: RecordedChat, differs: usize },
}

/// What the driver tells whoever watches, as it happens.
pub trait ChatWatch {
    /// A model turn is asked for.
    fn model_asked(&mut self) {}
    /// Text the model streamed.
    fn text(&mut self, _text: &str) {}
    /// The turn came back (or failed).
    fn model_done(&mut self, _failed: bool) {}
    /// The provider made the driver wait (HTTP 429), this long in all.
    fn rate_limited(&mut self, _waited: Duration) {}
    /// The provider refused the key.
    fn key_refused(&mut self) {}
    fn tool_call(&mut self, _tool: &str, _arguments: &Value) {}
    fn tool_result(&mut self, _text: &str, _is_error: bool) {}
    /// With a replay: the tool's result is not what the recording had.
    fn differs(&mut self, _tool: &str, _recorded: &str) {}
}

/// A watcher that watches nothing.
pub struct Unwatched;
impl ChatWatch for Unwatched {}

/// What one run came to.
pub struct ChatRun {
    pub outcome: Outcome,
    pub summary: RunSummary,
    /// Tool results that differed from the recording (a replay only).
    pub differs: usize,
    /// Every model turn and tool call, as `chat --format json` prints them.
    pub transcript: Vec<Value>,
    /// Model turns asked for.
    pub model_turns: usize,
}

/// Runs `chat` to its end in `client`'s session. `Err` only when the
/// session itself failed (a provider's failure ends the loop as its outcome).
pub fn drive(
    client: &mut Client,
    timeout: Duration,
    mut chat: ChatLoop,
    spec: &ModelSpec,
    source: &mut TurnSource,
    watch: &mut dyn ChatWatch,
) -> Result<ChatRun, ClientError> {
    let mut tally = RunTally::new(format!("{}:{}", spec.provider, spec.model));
    let mut transcript: Vec<Value> = Vec::new();
    let stop = AtomicBool::new(false);
    loop {
        match chat.next_step() {
            Step::AskModel(body) => {
                watch.model_asked();
                match model_turn(client, spec, &body, source, &stop, &mut tally, watch) {
                    Ok((turn, timing)) => {
                        watch.model_done(false);
                        transcript.push(json!({
                            "model_turn": {
                                "text": turn.text,
                                "tool_calls": turn.tool_calls,
                                "stop_reason": turn.stop_reason,
                                "usage": turn.usage,
                                "first_token_ms": timing.first_token.map(|d| d.as_secs_f64() * 1e3),
                                "total_ms": timing.total.as_secs_f64() * 1e3,
                                "error": turn.error,
                            }
                        }));
                        tally.turn(&turn, timing.first_token, timing.total);
                        chat.model_answered(&turn);
                    }
                    Err(e) => {
                        watch.model_done(true);
                        chat.model_failed(e);
                    }
                }
            }
            Step::CallTool {
                call_id,
                tool,
                arguments,
            } => {
                watch.tool_call(&tool, &arguments);
                tally.called(&tool, &arguments);
                let response = client.request(
                    "tools/call",
                    Some(json!({"name": tool, "arguments": arguments})),
                    timeout,
                )?;
                let (text, is_error) = match &response.outcome {
                    Ok(result) => (
                        chat_loop::result_text(result),
                        result.get("isError").and_then(Value::as_bool).unwrap_or(false),
                    ),
                    Err(e) => (chat_loop::rpc_error_text(e.code, &e.message), true),
                };
                watch.tool_result(&text, is_error);
                let mut entry =
                    json!({"id": call_id, "tool": tool, "arguments": arguments, "result": text, "is_error": is_error});
                if let TurnSource::Replay { chat, differs } = source {
                    let was = chat.differs(&text, is_error);
                    if let Some(was) = &was {
                        *differs += 1;
                        watch.differs(&tool, was);
                    }
                    entry["same_as_recorded"] = json!(was.is_none());
                }
                transcript.push(json!({ "tool_call": entry }));
                chat.tool_answered(&call_id, text, is_error);
            }
            Step::Finished(outcome) => {
                let differs = match source {
                    TurnSource::Replay { differs, .. } => *differs,
                    TurnSource::Live { .. } => 0,
                };
                return Ok(ChatRun {
                    summary: tally.finish(&outcome),
                    outcome,
                    differs,
                    transcript,
                    model_turns: chat.turns(),
                });
            }
        }
    }
}

/// One model turn, from the provider or the recording, recorded in the
/// session beside the tool calls it causes.
fn model_turn(
    client: &mut Client,
    spec: &ModelSpec,
    body: &Value,
    source: &mut TurnSource,
    stop: &AtomicBool,
    tally: &mut RunTally,
    watch: &mut dyn ChatWatch,
) -> Result<(Turn, Timing), String> {
    match source {
        TurnSource::Live { key, timeout } => {
            let started = Instant::now();
            let mut on_delta = |d: &Delta| {
                if let Delta::Text(t) = d {
                    watch.text(t);
                }
            };
            let result = provider_call::stream_turn(spec, key.as_deref(), body, *timeout, stop, &mut on_delta);
            let took = started.elapsed();
            if let Ok(x) = &result
                && !x.waited.is_empty()
            {
                watch.rate_limited(x.waited.iter().sum());
            }
            client
                .session()
                .record_model(provider_call::record(spec, body, &result, took));
            if result.is_err() {
                tally.failed_turn(took);
            }
            result.map(|x| (x.turn, x.timing)).map_err(|e| {
                if let ProviderError::Status { status: 401 | 403, .. } = e {
                    watch.key_refused();
                }
                e.to_string()
            })
        }
        TurnSource::Replay { chat, .. } => {
            let recorded = chat.next_turn()?;
            let turn = recorded.turn();
            if !turn.text.is_empty() {
                watch.text(&turn.text);
            }
            let timing = Timing {
                first_token: recorded.first_token,
                total: recorded.total,
            };
            let failed = recorded.error.clone();
            client.session().record_model(recorded);
            match failed {
                Some(e) => Err(format!("the recorded turn failed: {e}")),
                None => Ok((turn, timing)),
            }
        }
    }
}
