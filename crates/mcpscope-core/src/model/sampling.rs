//! A server's sampling request (`sampling/createMessage`, or a 2026-07-28
//! `input_required` that asks for one) as one model turn, and the model's
//! answer as the `CreateMessageResult` the server expects, tools in
//! sampling included (2025-11-25: `tools`, `toolChoice`, `tool_use` and
//! `tool_result` blocks). What cannot be passed on to the provider is said,
//! never dropped in silence. No I/O: the app sends the turn and lets the
//! person approve the request and the answer.

use super::provider::ModelSpec;
use super::request::{self, Conversation, Message, OfferedTools, Part, Role, Settings};
use super::stream::Turn;
use serde_json::{Value, json};

/// A sampling request, ready to be sent as a model turn.
#[derive(Clone, Debug)]
pub struct SamplingTurn {
    pub conversation: Conversation,
    pub settings: Settings,
    pub offered: OfferedTools,
    /// What of the request the provider will not see, and why.
    pub notes: Vec<String>,
}

impl SamplingTurn {
    /// The provider's request body.
    pub fn body(&self, spec: &ModelSpec) -> Value {
        request::body(spec, &self.conversation, &self.offered, &self.settings)
    }
}

/// The text of a `tool_result`'s content blocks.
fn blocks_text(content: &Value) -> String {
    let blocks = match content {
        Value::Array(a) => a.iter().collect(),
        Value::Null => Vec::new(),
        one => vec![one],
    };
    blocks
        .iter()
        .map(|b| match b.get("type").and_then(Value::as_str) {
            Some("text") => b.get("text").and_then(Value::as_str).unwrap_or_default().to_owned(),
            Some(kind) => format!("[{kind}]"),
            None => b.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Reads a sampling request's params. `Err`: the request cannot be a
/// model turn (no messages, a role that is neither user nor assistant).
pub fn from_request(spec: &ModelSpec, params: &Value) -> Result<SamplingTurn, String> {
    let messages = params
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("the request has no messages")?;
    let mut notes = Vec::new();
    let mut conversation = Conversation {
        system: params.get("systemPrompt").and_then(Value::as_str).map(str::to_owned),
        messages: Vec::new(),
    };
    for (n, m) in messages.iter().enumerate() {
        let role = match m.get("role").and_then(Value::as_str) {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            other => return Err(format!("message {n} has the role {other:?}, not user or assistant")),
        };
        let blocks: Vec<&Value> = match m.get("content") {
            Some(Value::Array(a)) => a.iter().collect(),
            Some(b) => vec![b],
            None => Vec::new(),
        };
        let mut parts = Vec::new();
        for b in blocks {
            match b.get("type").and_then(Value::as_str) {
                Some("text") => parts.push(Part::Text(
                    b.get("text").and_then(Value::as_str).unwrap_or_default().to_owned(),
                )),
                Some("tool_use") => parts.push(Part::ToolCall {
                    id: b.get("id").and_then(Value::as_str).unwrap_or_default().to_owned(),
                    name: b.get("name").and_then(Value::as_str).unwrap_or_default().to_owned(),
                    arguments: b.get("input").cloned().unwrap_or_else(|| json!({})),
                }),
                Some("tool_result") => parts.push(Part::ToolResult {
                    id: b
                        .get("toolUseId")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    text: blocks_text(b.get("content").unwrap_or(&Value::Null)),
                    is_error: b.get("isError").and_then(Value::as_bool).unwrap_or(false),
                }),
                Some(kind) => {
                    let mime = b.get("mimeType").and_then(Value::as_str).unwrap_or("?");
                    notes.push(format!(
                        "message {n}: a {kind} block ({mime}) is not passed on: the model is told it was there"
                    ));
                    parts.push(Part::Text(format!("[{kind} {mime}]")));
                }
                None => notes.push(format!("message {n}: a block without a type was left out")),
            }
        }
        conversation.messages.push(Message { role, parts });
    }
    let mut settings = Settings::default();
    if let Some(max) = params.get("maxTokens").and_then(Value::as_u64) {
        settings.max_tokens = u32::try_from(max).unwrap_or(u32::MAX).max(1);
    }
    settings.temperature = params.get("temperature").and_then(Value::as_f64);
    let mut tools: Vec<Value> = params
        .get("tools")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    match params.pointer("/toolChoice/mode").and_then(Value::as_str) {
        Some("none") if !tools.is_empty() => {
            notes.push("toolChoice is none: the tools are not offered".into());
            tools.clear();
        }
        Some("required") => {
            notes.push("toolChoice is required: the model is offered the tools but may answer without them".into())
        }
        _ => {}
    }
    if params
        .get("stopSequences")
        .and_then(Value::as_array)
        .is_some_and(|s| !s.is_empty())
    {
        notes.push("stopSequences are not passed on".into());
    }
    if let Some(ctx) = params.get("includeContext").and_then(Value::as_str)
        && ctx != "none"
    {
        notes.push(format!("includeContext {ctx:?} (soft-deprecated): no context is added"));
    }
    let offered = request::offer_tools(spec.api, &tools);
    for n in &offered.notes {
        notes.push(format!("tool {:?}: {}", n.tool, n.note));
    }
    Ok(SamplingTurn {
        conversation,
        settings,
        offered,
        notes,
    })
}

/// The provider's stop reason in MCP's words.
fn stop_reason(provider: Option<&str>) -> Value {
    match provider {
        Some("stop" | "end_turn") => json!("endTurn"),
        Some("length" | "max_tokens") => json!("maxTokens"),
        Some("tool_calls" | "tool_use") => json!("toolUse"),
        Some("stop_sequence") => json!("stopSequence"),
        Some(other) => json!(other),
        None => json!("endTurn"),
    }
}

/// The model's turn as the `CreateMessageResult` answering the request:
/// one text block, or with tool calls an array of blocks (`tool_use` under
/// the tools' MCP names).
pub fn result_of(spec: &ModelSpec, turn: &Turn, offered: &OfferedTools) -> Value {
    let content = if turn.tool_calls.is_empty() {
        json!({"type": "text", "text": turn.text})
    } else {
        let mut blocks = Vec::new();
        if !turn.text.is_empty() {
            blocks.push(json!({"type": "text", "text": turn.text}));
        }
        for c in &turn.tool_calls {
            blocks.push(json!({
                "type": "tool_use",
                "id": c.id,
                "name": offered.mcp_name(&c.name),
                "input": c.arguments.clone().unwrap_or_else(|_| json!({})),
            }));
        }
        Value::Array(blocks)
    };
    json!({
        "role": "assistant",
        "content": content,
        "model": spec.model,
        "stopReason": stop_reason(turn.stop_reason.as_deref()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::stream::{ToolCall, Usage};

    fn spec() -> ModelSpec {
        ModelSpec::parse("anthropic:claude-x", None).unwrap()
    }

    #[test]
    fn a_sampling_request_with_tools_becomes_a_turn_and_its_answer_a_result() {
        let params = json!({
            "systemPrompt": "Be brief.",
            "maxTokens": 200,
            "temperature": 0.2,
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Weather in Paris?"}},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "get.weather", "input": {"city": "Paris"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "toolUseId": "t1", "content": [{"type": "text", "text": "18°C"}]},
                    {"type": "image", "mimeType": "image/png", "data": "AAAA"}
                ]}
            ],
            "tools": [{"name": "get.weather", "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
            "toolChoice": {"mode": "auto"},
            "stopSequences": ["\n\n"]
        });
        let t = from_request(&spec(), &params).unwrap();
        assert_eq!(t.conversation.system.as_deref(), Some("Be brief."));
        assert_eq!((t.settings.max_tokens, t.settings.temperature), (200, Some(0.2)));
        assert_eq!(t.conversation.messages.len(), 3);
        assert!(
            matches!(&t.conversation.messages[2].parts[0], Part::ToolResult { id, text, is_error: false } if id == "t1" && text == "18°C")
        );
        assert!(t.notes.iter().any(|n| n.contains("image block")), "{:?}", t.notes);
        assert!(t.notes.iter().any(|n| n.contains("stopSequences")), "{:?}", t.notes);
        assert!(
            t.notes.iter().any(|n| n.contains("offered as")),
            "the renamed tool: {:?}",
            t.notes
        );
        let body = t.body(&spec());
        assert_eq!(body["system"], "Be brief.");
        assert_eq!(body["tools"][0]["name"], "get_weather");
        assert_eq!(body["messages"][1]["content"][0]["name"], "get_weather");
        let turn = Turn {
            text: "Let me check.".into(),
            tool_calls: vec![ToolCall {
                id: "t2".into(),
                name: "get_weather".into(),
                arguments_text: r#"{"city":"Lyon"}"#.into(),
                arguments: Ok(json!({"city": "Lyon"})),
            }],
            stop_reason: Some("tool_use".into()),
            usage: Usage::default(),
            error: None,
            unreadable: vec![],
            complete: true,
        };
        let r = result_of(&spec(), &turn, &t.offered);
        assert_eq!(r["stopReason"], "toolUse");
        assert_eq!(r["model"], "claude-x");
        assert_eq!(
            r["content"][1],
            json!({"type": "tool_use", "id": "t2", "name": "get.weather", "input": {"city": "Lyon"}})
        );
        let plain = Turn {
            tool_calls: vec![],
            stop_reason: Some("end_turn".into()),
            ..turn
        };
        assert_eq!(
            result_of(&spec(), &plain, &t.offered),
            json!({"role": "assistant", "content": {"type": "text", "text": "Let me check."}, "model": "claude-x", "stopReason": "endTurn"})
        );
    }

    #[test]
    fn what_cannot_be_a_turn_is_said() {
        assert!(from_request(&spec(), &json!({})).unwrap_err().contains("no messages"));
        let e = from_request(
            &spec(),
            &json!({"messages": [{"role": "system", "content": {"type": "text", "text": "x"}}]}),
        )
        .unwrap_err();
        assert!(e.contains("not user or assistant"), "{e}");
        let none = from_request(
            &spec(),
            &json!({"messages": [], "tools": [{"name": "a", "inputSchema": {"type": "object"}}], "toolChoice": {"mode": "none"}}),
        )
        .unwrap();
        assert!(none.offered.json.is_empty() && none.notes[0].contains("none"));
    }
}
