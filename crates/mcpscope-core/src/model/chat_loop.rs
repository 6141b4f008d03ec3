//! The chat loop as a state machine with no I/O: ask the model, run the
//! tools it asks for (or refuse them), hand the results back, until the
//! model stops or the round trips run out. Whoever drives it performs each
//! [`Step`] and reports what came back: the CLI's `chat` through a live
//! session, the app's Chat mode alike.

use super::provider::ModelSpec;
use super::request::{self, Conversation, Message, OfferedTools, Part, Role, Settings};
use super::stream::Turn;
use serde_json::Value;

/// What the model is told of a call the user refused.
const DECLINED: &str = "The user declined to run this tool.";

/// Whether the model's tool calls run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Approval {
    /// Every call runs.
    Auto,
    /// None runs: the model is told the user declined.
    Never,
}

/// What the driver does next.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Post this body for a model turn, then [`ChatLoop::model_answered`].
    AskModel(Value),
    /// Call this MCP tool, then [`ChatLoop::tool_answered`] with `call_id`.
    CallTool {
        call_id: String,
        /// The MCP name (mapped back from the name it was offered under).
        tool: String,
        arguments: Value,
    },
    /// Over.
    Finished(Outcome),
}

/// How the conversation ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The model answered without asking for tools.
    Done,
    /// The model still wanted tools after this many round trips.
    RoundTripLimit(usize),
    /// The provider failed (an HTTP error, an error in the stream, a cut stream).
    ProviderFailed(String),
}

pub struct ChatLoop {
    spec: ModelSpec,
    settings: Settings,
    offered: OfferedTools,
    approval: Approval,
    max_round_trips: usize,
    pub conversation: Conversation,
    /// Model turns asked for so far.
    turns: usize,
    /// Tool calls of the last turn still to run: (call id, MCP name, arguments or why not).
    queue: Vec<(String, String, Result<Value, String>)>,
    /// Results gathered for the last turn's calls.
    results: Vec<Part>,
    waiting: Waiting,
    outcome: Option<Outcome>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Waiting {
    Nothing,
    Model,
    Tool(String),
}

impl ChatLoop {
    /// `tools`: the server's `tools/list` entries offered to the model.
    pub fn new(
        spec: ModelSpec,
        conversation: Conversation,
        tools: &[Value],
        settings: Settings,
        approval: Approval,
        max_round_trips: usize,
    ) -> Self {
        ChatLoop {
            offered: request::offer_tools(spec.api, tools),
            spec,
            settings,
            approval,
            max_round_trips,
            conversation,
            turns: 0,
            queue: Vec::new(),
            results: Vec::new(),
            waiting: Waiting::Nothing,
            outcome: None,
        }
    }

    /// What had to change in the tools for this provider.
    pub fn tool_notes(&self) -> &[request::ToolNote] {
        &self.offered.notes
    }

    /// The next thing to do. Asking again before an answer repeats the step.
    pub fn next_step(&mut self) -> Step {
        if let Some(o) = &self.outcome {
            return Step::Finished(o.clone());
        }
        // Calls of the last turn, in order; a refused or unreadable one is
        // answered here without a step.
        while let Some((id, tool, args)) = self.queue.first().cloned() {
            match (self.approval, args) {
                (Approval::Auto, Ok(arguments)) => {
                    self.waiting = Waiting::Tool(id.clone());
                    return Step::CallTool {
                        call_id: id,
                        tool,
                        arguments,
                    };
                }
                (Approval::Never, _) => {
                    let _ = self.queue.remove(0);
                    self.results.push(Part::ToolResult {
                        id,
                        text: DECLINED.into(),
                        is_error: true,
                    });
                }
                (Approval::Auto, Err(why)) => {
                    let _ = self.queue.remove(0);
                    self.results.push(Part::ToolResult {
                        id,
                        text: format!("The tool was not called: {why}."),
                        is_error: true,
                    });
                }
            }
        }
        if !self.results.is_empty() {
            self.conversation.messages.push(Message {
                role: Role::User,
                parts: std::mem::take(&mut self.results),
            });
        }
        if self.waiting == Waiting::Model {
            return Step::AskModel(self.body());
        }
        let wants_more = self.conversation.messages.last().is_none_or(|m| m.role == Role::User);
        if !wants_more {
            self.outcome = Some(Outcome::Done);
            return Step::Finished(Outcome::Done);
        }
        if self.turns > self.max_round_trips {
            let o = Outcome::RoundTripLimit(self.max_round_trips);
            self.outcome = Some(o.clone());
            return Step::Finished(o);
        }
        self.turns += 1;
        self.waiting = Waiting::Model;
        Step::AskModel(self.body())
    }

    fn body(&self) -> Value {
        request::body(&self.spec, &self.conversation, &self.offered, &self.settings)
    }

    /// The model's turn came back whole.
    pub fn model_answered(&mut self, turn: &Turn) {
        self.waiting = Waiting::Nothing;
        if let Some(e) = &turn.error {
            self.outcome = Some(Outcome::ProviderFailed(e.clone()));
            return;
        }
        if !turn.complete {
            self.outcome = Some(Outcome::ProviderFailed(
                "the answer's stream ended before it said it was over".into(),
            ));
            return;
        }
        let mut parts = Vec::new();
        if !turn.text.is_empty() {
            parts.push(Part::Text(turn.text.clone()));
        }
        for c in &turn.tool_calls {
            let tool = self.offered.mcp_name(&c.name).to_owned();
            parts.push(Part::ToolCall {
                id: c.id.clone(),
                name: tool.clone(),
                arguments: c
                    .arguments
                    .clone()
                    .unwrap_or_else(|_| Value::Object(Default::default())),
            });
            self.queue.push((c.id.clone(), tool, c.arguments.clone()));
        }
        self.conversation.messages.push(Message {
            role: Role::Assistant,
            parts,
        });
    }

    /// The model's turn failed (HTTP, unreachable, stopped).
    pub fn model_failed(&mut self, why: String) {
        self.waiting = Waiting::Nothing;
        self.outcome = Some(Outcome::ProviderFailed(why));
    }

    /// A tool call came back (`is_error`: a tool that failed, or a protocol error said as text).
    pub fn tool_answered(&mut self, call_id: &str, text: String, is_error: bool) {
        if self.waiting != Waiting::Tool(call_id.to_owned()) {
            return;
        }
        self.waiting = Waiting::Nothing;
        self.queue.retain(|(id, ..)| id != call_id);
        self.results.push(Part::ToolResult {
            id: call_id.to_owned(),
            text,
            is_error,
        });
    }

    /// The person refused the call [`Step::CallTool`] asked for: the model
    /// is told, as with [`Approval::Never`].
    pub fn tool_declined(&mut self, call_id: &str) {
        self.tool_answered(call_id, DECLINED.into(), true);
    }

    /// Model turns taken.
    pub fn turns(&self) -> usize {
        self.turns
    }
}

/// A JSON-RPC error as the model is told it (a protocol failure, not the tool's).
pub fn rpc_error_text(code: i64, message: &str) -> String {
    format!("JSON-RPC error {code}: {message}")
}

/// A `tools/call`'s answer (the whole JSON-RPC response) as text for the
/// model, and whether it is an error (`isError`, or a JSON-RPC error).
pub fn answer_text(answer: &Value) -> (String, bool) {
    if let Some(result) = answer.get("result") {
        let is_error = result.get("isError").and_then(Value::as_bool).unwrap_or(false);
        return (result_text(result), is_error);
    }
    let code = answer
        .pointer("/error/code")
        .and_then(Value::as_i64)
        .unwrap_or_default();
    let message = answer
        .pointer("/error/message")
        .and_then(Value::as_str)
        .unwrap_or_default();
    (rpc_error_text(code, message), true)
}

/// What a `tools/call` result says, as text for the model: its text blocks,
/// other blocks named, `structuredContent` when there is nothing else.
pub fn result_text(result: &Value) -> String {
    let mut out = Vec::new();
    for block in result["content"].as_array().into_iter().flatten() {
        match block["type"].as_str() {
            Some("text") => out.push(block["text"].as_str().unwrap_or_default().to_owned()),
            Some(kind) => out.push(format!(
                "[{kind}{}]",
                block["mimeType"].as_str().map(|m| format!(" {m}")).unwrap_or_default()
            )),
            None => {}
        }
    }
    if out.is_empty()
        && let Some(s) = result.get("structuredContent")
    {
        out.push(s.to_string());
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::stream::{ToolCall, Usage};
    use serde_json::json;

    fn spec() -> ModelSpec {
        ModelSpec::parse("openai:gpt-4.1-mini", None).unwrap()
    }

    fn answer(text: &str, calls: &[(&str, &str, Value)]) -> Turn {
        Turn {
            text: text.into(),
            tool_calls: calls
                .iter()
                .map(|(id, name, args)| ToolCall {
                    id: (*id).into(),
                    name: (*name).into(),
                    arguments_text: args.to_string(),
                    arguments: Ok(args.clone()),
                })
                .collect(),
            stop_reason: Some("stop".into()),
            usage: Usage::default(),
            error: None,
            unreadable: vec![],
            complete: true,
        }
    }

    fn start(approval: Approval, max: usize) -> ChatLoop {
        let mut conv = Conversation::default();
        conv.user("What is 2+3?");
        let tools = [json!({"name": "math.add", "inputSchema": {"type": "object"}})];
        ChatLoop::new(spec(), conv, &tools, Settings::default(), approval, max)
    }

    #[test]
    fn a_tool_round_trip_then_the_answer() {
        let mut c = start(Approval::Auto, 4);
        let Step::AskModel(body) = c.next_step() else { panic!() };
        assert_eq!(body["tools"][0]["function"]["name"], "math_add");
        c.model_answered(&answer("", &[("call_1", "math_add", json!({"a": 2, "b": 3}))]));
        assert_eq!(
            c.next_step(),
            Step::CallTool {
                call_id: "call_1".into(),
                tool: "math.add".into(),
                arguments: json!({"a": 2, "b": 3})
            }
        );
        c.tool_answered("call_1", "5".into(), false);
        let Step::AskModel(body) = c.next_step() else { panic!() };
        let msgs = body["messages"].as_array().unwrap();
        assert_eq!(
            msgs.last().unwrap(),
            &json!({"role": "tool", "tool_call_id": "call_1", "content": "5"})
        );
        c.model_answered(&answer("It is 5.", &[]));
        assert_eq!(c.next_step(), Step::Finished(Outcome::Done));
        assert_eq!(c.turns(), 2);
    }

    #[test]
    fn refused_calls_and_the_round_trip_limit() {
        let mut c = start(Approval::Never, 1);
        for _ in 0..2 {
            let Step::AskModel(_) = c.next_step() else {
                panic!("{:?}", c.next_step())
            };
            c.model_answered(&answer("", &[("c", "math_add", json!({}))]));
        }
        // The refusals went back to the model; it kept asking: the limit.
        assert_eq!(c.next_step(), Step::Finished(Outcome::RoundTripLimit(1)));
        let declined = c
            .conversation
            .messages
            .iter()
            .flat_map(|m| &m.parts)
            .any(|p| matches!(p, Part::ToolResult { text, is_error: true, .. } if text.contains("declined")));
        assert!(declined);
    }

    #[test]
    fn bad_arguments_and_provider_failures_end_or_are_answered() {
        let mut c = start(Approval::Auto, 4);
        let _ = c.next_step();
        let mut t = answer("", &[]);
        t.tool_calls.push(ToolCall {
            id: "x".into(),
            name: "math_add".into(),
            arguments_text: "{".into(),
            arguments: Err("the model's arguments are not JSON".into()),
        });
        c.model_answered(&t);
        // Not called: the model is told why and asked again.
        let Step::AskModel(body) = c.next_step() else { panic!() };
        assert!(body.to_string().contains("The tool was not called"));
        let mut cut = answer("half", &[]);
        cut.complete = false;
        c.model_answered(&cut);
        assert!(matches!(c.next_step(), Step::Finished(Outcome::ProviderFailed(_))));
    }

    #[test]
    fn a_tool_result_as_text_for_the_model() {
        let r = json!({"content": [{"type": "text", "text": "hello"}, {"type": "image", "mimeType": "image/png", "data": "…"}]});
        assert_eq!(result_text(&r), "hello\n[image image/png]");
        assert_eq!(
            result_text(&json!({"content": [], "structuredContent": {"n": 5}})),
            r#"{"n":5}"#
        );
        assert_eq!(
            answer_text(&json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [], "isError": true}})),
            (String::new(), true)
        );
        assert_eq!(
            answer_text(&json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "bad"}})),
            ("JSON-RPC error -32602: bad".to_owned(), true)
        );
    }
}
