//! A conversation, and the server's tools, as each API wants them.
//!
//! MCP and the providers name and describe tools differently: a tool name
//! may hold dots and run to 128 characters in MCP, while both APIs accept
//! only `[A-Za-z0-9_-]{1,64}`; an inputSchema may lack `"type": "object"`,
//! which both require. What had to change for a provider is said, tool by
//! tool ([`ToolNote`]), and the names map back ([`OfferedTools::mcp_name`]).

use super::provider::{Api, ModelSpec};
use serde_json::{Map, Value, json};

#[derive(Clone, Debug, PartialEq)]
pub enum Part {
    Text(String),
    /// The model asked for a tool (`arguments` as the model wrote them).
    ToolCall {
        id: String,
        name: String,
        arguments: Value,
    },
    /// What the tool gave back, for the call `id`.
    ToolResult {
        id: String,
        text: String,
        is_error: bool,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    pub role: Role,
    pub parts: Vec<Part>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Conversation {
    pub system: Option<String>,
    pub messages: Vec<Message>,
}

impl Conversation {
    pub fn user(&mut self, text: impl Into<String>) {
        self.messages.push(Message {
            role: Role::User,
            parts: vec![Part::Text(text.into())],
        });
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub temperature: Option<f64>,
    pub max_tokens: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            temperature: None,
            max_tokens: 1024,
        }
    }
}

/// One change made to a tool so a provider takes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolNote {
    pub tool: String,
    pub note: String,
}

/// The tools as offered to the model, with the name each goes by there.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OfferedTools {
    /// (name offered, MCP name)
    names: Vec<(String, String)>,
    pub json: Vec<Value>,
    pub notes: Vec<ToolNote>,
}

impl OfferedTools {
    /// The MCP tool behind a name the model used (itself when not renamed).
    pub fn mcp_name<'a>(&'a self, offered: &'a str) -> &'a str {
        self.names
            .iter()
            .find(|(o, _)| o == offered)
            .map_or(offered, |(_, m)| m.as_str())
    }

    fn offered_name(&self, mcp: &str) -> String {
        self.names
            .iter()
            .find(|(_, m)| m == mcp)
            .map_or_else(|| mcp.to_owned(), |(o, _)| o.clone())
    }
}

const NAME_MAX: usize = 64;

/// Whether OpenAI's and Anthropic's APIs take `name` as a tool's name as it is.
pub fn provider_accepts_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= NAME_MAX
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The server's tools (each a `tools/list` entry) as `api` wants them.
/// A tool's name as providers accept it (1-64 of A-Z a-z 0-9 _ -), before
/// two names that map to one are told apart by a `_N` suffix.
pub fn offered_base(name: &str) -> String {
    let mut offered: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(NAME_MAX)
        .collect();
    if offered.is_empty() {
        offered.push('_');
    }
    offered
}

/// Whether the MCP tool `name` may be the one offered as `offered` (its
/// base name, or that with a `_N` suffix told it apart): how a recording
/// ties a model's tool call to the `tools/call` it caused without the list
/// the names were made from.
pub fn offered_as(name: &str, offered: &str) -> bool {
    let base = offered_base(name);
    if offered == base {
        return true;
    }
    offered
        .rsplit_once('_')
        .is_some_and(|(head, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && base.starts_with(head))
}

pub fn offer_tools(api: Api, tools: &[Value]) -> OfferedTools {
    let mut out = OfferedTools::default();
    for tool in tools {
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            continue;
        };
        let mut offered = offered_base(name);
        // Two names that map to one are told apart by a number.
        let mut n = 2;
        let base = offered.clone();
        while out.names.iter().any(|(o, _)| *o == offered) {
            let suffix = format!("_{n}");
            offered = format!("{}{suffix}", &base[..base.len().min(NAME_MAX - suffix.len())]);
            n += 1;
        }
        if !provider_accepts_name(name) {
            out.notes.push(ToolNote {
                tool: name.to_owned(),
                note: format!("offered as {offered:?}: names there are 1-64 of A-Z a-z 0-9 _ -"),
            });
        }
        let mut schema = tool.get("inputSchema").cloned().unwrap_or_else(|| json!({}));
        if !schema.is_object() {
            out.notes.push(ToolNote {
                tool: name.to_owned(),
                note: "its inputSchema is not an object: offered as {\"type\": \"object\"}".into(),
            });
            schema = json!({});
        }
        if let Some(obj) = schema.as_object_mut() {
            if obj.get("type").and_then(Value::as_str) != Some("object") {
                out.notes.push(ToolNote {
                    tool: name.to_owned(),
                    note: "its inputSchema has no \"type\": \"object\", which the provider requires: added".into(),
                });
                obj.insert("type".into(), json!("object"));
            }
            if !obj.contains_key("properties") && api == Api::OpenAiChat {
                obj.insert("properties".into(), json!({}));
            }
        }
        let description = tool.get("description").and_then(Value::as_str).unwrap_or_default();
        out.json.push(match api {
            Api::OpenAiChat => json!({
                "type": "function",
                "function": {"name": offered, "description": description, "parameters": schema},
            }),
            Api::AnthropicMessages => json!({"name": offered, "description": description, "input_schema": schema}),
        });
        out.names.push((offered, name.to_owned()));
    }
    out
}

/// The body of a streamed request for one turn.
pub fn body(spec: &ModelSpec, conv: &Conversation, tools: &OfferedTools, settings: &Settings) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(spec.model));
    body.insert("stream".into(), json!(true));
    if let Some(t) = settings.temperature {
        body.insert("temperature".into(), json!(t));
    }
    match spec.api {
        Api::OpenAiChat => {
            // OpenAI's own API refuses max_tokens for its reasoning models;
            // compatible servers know only max_tokens.
            let key = if spec.provider == "openai" {
                "max_completion_tokens"
            } else {
                "max_tokens"
            };
            body.insert(key.into(), json!(settings.max_tokens));
            body.insert("stream_options".into(), json!({"include_usage": true}));
            body.insert("messages".into(), Value::Array(openai_messages(conv, tools)));
        }
        Api::AnthropicMessages => {
            body.insert("max_tokens".into(), json!(settings.max_tokens));
            if let Some(s) = &conv.system {
                body.insert("system".into(), json!(s));
            }
            body.insert("messages".into(), Value::Array(anthropic_messages(conv, tools)));
        }
    }
    if !tools.json.is_empty() {
        body.insert("tools".into(), Value::Array(tools.json.clone()));
    }
    Value::Object(body)
}

fn openai_messages(conv: &Conversation, tools: &OfferedTools) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(s) = &conv.system {
        out.push(json!({"role": "system", "content": s}));
    }
    for m in &conv.messages {
        let text: String = m
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        match m.role {
            Role::User => {
                // Tool results are messages of their own there.
                for p in &m.parts {
                    if let Part::ToolResult { id, text, is_error } = p {
                        let content = if *is_error {
                            format!("Error: {text}")
                        } else {
                            text.clone()
                        };
                        out.push(json!({"role": "tool", "tool_call_id": id, "content": content}));
                    }
                }
                if !text.is_empty() {
                    out.push(json!({"role": "user", "content": text}));
                }
            }
            Role::Assistant => {
                let calls: Vec<Value> = m
                    .parts
                    .iter()
                    .filter_map(|p| match p {
                        Part::ToolCall { id, name, arguments } => Some(json!({
                            "id": id,
                            "type": "function",
                            "function": {"name": tools.offered_name(name), "arguments": arguments.to_string()},
                        })),
                        _ => None,
                    })
                    .collect();
                let mut msg =
                    json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
                if !calls.is_empty() {
                    msg["tool_calls"] = Value::Array(calls);
                }
                out.push(msg);
            }
        }
    }
    out
}

fn anthropic_messages(conv: &Conversation, tools: &OfferedTools) -> Vec<Value> {
    conv.messages
        .iter()
        .map(|m| {
            let content: Vec<Value> = m
                .parts
                .iter()
                .map(|p| match p {
                    Part::Text(t) => json!({"type": "text", "text": t}),
                    Part::ToolCall { id, name, arguments } => {
                        json!({"type": "tool_use", "id": id, "name": tools.offered_name(name), "input": arguments})
                    }
                    Part::ToolResult { id, text, is_error } => {
                        json!({"type": "tool_result", "tool_use_id": id, "content": text, "is_error": is_error})
                    }
                })
                .collect();
            let role = match m.role {
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            json!({"role": role, "content": content})
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Vec<Value> {
        vec![
            json!({"name": "echo", "description": "Echo it", "inputSchema": {"type": "object", "properties": {"m": {"type": "string"}}}}),
            json!({"name": "files.read", "inputSchema": {"properties": {"path": {"type": "string"}}}}),
            json!({"name": "files_read", "inputSchema": {"type": "object"}}),
        ]
    }

    #[test]
    fn a_tool_is_known_by_the_name_it_was_offered_under() {
        assert!(offered_as("math.add", "math_add"));
        assert!(offered_as("math.add", "math_add_2"), "told apart from math_add");
        assert!(offered_as("echo", "echo"));
        assert!(!offered_as("echo", "echo2"));
        assert!(!offered_as("echo", "math_add"));
    }

    #[test]
    fn tools_are_offered_as_each_api_wants_and_changes_are_said() {
        let o = offer_tools(Api::OpenAiChat, &tools());
        assert_eq!(o.json[0]["function"]["name"], "echo");
        assert_eq!(o.json[0]["function"]["parameters"]["properties"]["m"]["type"], "string");
        // A dotted name is renamed, its twin after renaming told apart, and both map back.
        assert_eq!(o.json[1]["function"]["name"], "files_read");
        assert_eq!(o.json[2]["function"]["name"], "files_read_2");
        assert_eq!(o.mcp_name("files_read"), "files.read");
        assert_eq!(o.mcp_name("files_read_2"), "files_read");
        assert_eq!(o.json[1]["function"]["parameters"]["type"], "object");
        let said: Vec<&str> = o.notes.iter().map(|n| n.tool.as_str()).collect();
        assert_eq!(said, ["files.read", "files.read"], "{:?}", o.notes);
        let a = offer_tools(Api::AnthropicMessages, &tools());
        assert_eq!(a.json[0]["input_schema"]["type"], "object");
        assert_eq!(a.json[0]["name"], "echo");
        // A name past 64 characters is cut.
        let long = offer_tools(Api::OpenAiChat, &[json!({"name": "x".repeat(100)})]);
        assert_eq!(long.json[0]["function"]["name"].as_str().unwrap().len(), 64);
    }

    fn conversation() -> Conversation {
        let mut c = Conversation {
            system: Some("Be brief.".into()),
            ..Conversation::default()
        };
        c.user("Read notes.txt");
        c.messages.push(Message {
            role: Role::Assistant,
            parts: vec![
                Part::Text("Reading it.".into()),
                Part::ToolCall {
                    id: "call_1".into(),
                    name: "files.read".into(),
                    arguments: json!({"path": "notes.txt"}),
                },
            ],
        });
        c.messages.push(Message {
            role: Role::User,
            parts: vec![Part::ToolResult {
                id: "call_1".into(),
                text: "no such file".into(),
                is_error: true,
            }],
        });
        c
    }

    #[test]
    fn a_conversation_with_a_tool_round_trip_in_each_format() {
        let openai = ModelSpec::parse("openai:gpt-4.1-mini", None).unwrap();
        let offered = offer_tools(openai.api, &tools());
        let b = body(&openai, &conversation(), &offered, &Settings::default());
        assert_eq!(b["stream"], true);
        assert_eq!(b["max_completion_tokens"], 1024);
        assert_eq!(b["stream_options"]["include_usage"], true);
        let m = b["messages"].as_array().unwrap();
        assert_eq!(m[0], json!({"role": "system", "content": "Be brief."}));
        assert_eq!(
            m[2]["tool_calls"][0]["function"]["name"], "files_read",
            "the name it was offered under"
        );
        assert_eq!(
            m[2]["tool_calls"][0]["function"]["arguments"],
            r#"{"path":"notes.txt"}"#
        );
        assert_eq!(
            m[3],
            json!({"role": "tool", "tool_call_id": "call_1", "content": "Error: no such file"})
        );
        let local = ModelSpec::parse("ollama:llama3.1", None).unwrap();
        assert_eq!(
            body(&local, &conversation(), &offered, &Settings::default())["max_tokens"],
            1024
        );

        let anthropic = ModelSpec::parse("anthropic:claude-sonnet-4-5", None).unwrap();
        let offered = offer_tools(anthropic.api, &tools());
        let b = body(&anthropic, &conversation(), &offered, &Settings::default());
        assert_eq!(b["system"], "Be brief.");
        let m = b["messages"].as_array().unwrap();
        assert_eq!(m.len(), 3, "the system prompt is not a message there");
        assert_eq!(m[1]["content"][1]["type"], "tool_use");
        assert_eq!(m[1]["content"][1]["input"]["path"], "notes.txt");
        assert_eq!(m[2]["content"][0]["is_error"], true);
        assert!(b.get("stream_options").is_none());
    }
}
