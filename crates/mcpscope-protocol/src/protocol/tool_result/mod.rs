//! What a `tools/call` response means, for rendering.
//!
//! [`interpret`] takes the whole JSON-RPC response message and sorts it into a tool success, a tool
//! failure (`result.isError == true`: the tool ran and failed, and the model is meant to read the
//! failure), a JSON-RPC protocol error, or a malformed message. Content blocks are decoded (base64
//! payloads, JSON inside text), `structuredContent` is validated against the tool's `outputSchema`,
//! and everything that deviates from the MCP schema (2025-11-25, read leniently back to 2024-11-05)
//! is collected as human-readable problems instead of failing. Nothing here panics, whatever the
//! input.
//!
//! This module depends on nothing else in mcpscope.

use base64::Engine as _;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use serde_json::{Map, Value};

mod media;
use media::{check_bytes_against_mime, decode_base64, mime_essence};
pub use media::{file_extension, sniff_mime};

/// The meaning of a whole `tools/call` response message.
#[derive(Debug, Clone, PartialEq)]
pub enum CallOutcome {
    /// A result without `isError: true`.
    ToolSuccess(ToolResult),
    /// `result.isError == true`: the tool ran and failed; the model should read the content.
    ToolFailure(ToolResult),
    /// A JSON-RPC error object: the request itself failed (unknown tool, bad params, ...).
    ProtocolError {
        code: i64,
        /// `error.message`; empty when missing, the JSON text when it is not a string.
        message: String,
        /// `error.data`, when present and not `null`.
        data: Option<Value>,
        /// What the code means, from [`error_meaning`].
        meaning: &'static str,
    },
    /// Not something a `tools/call` response can be: neither result nor error, result not an
    /// object, content not an array, ... The string says what is wrong.
    Malformed(String),
}

impl CallOutcome {
    /// The tool result of a success or failure.
    pub fn tool_result(&self) -> Option<&ToolResult> {
        match self {
            CallOutcome::ToolSuccess(r) | CallOutcome::ToolFailure(r) => Some(r),
            _ => None,
        }
    }
}

/// A decoded `CallToolResult`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// `result.content`, in order (one block per array element, even malformed ones).
    pub blocks: Vec<Block>,
    /// `result.structuredContent`, as sent.
    pub structured: Option<Value>,
    /// `structuredContent` checked against the tool's `outputSchema`.
    pub structured_check: StructuredCheck,
    /// `result._meta`.
    pub meta: Option<Value>,
    /// Deviations from the MCP schema, one sentence each, e.g. `isError is "true" (a string), not a
    /// boolean`; block problems start with `content[i]`.
    pub problems: Vec<String>,
}

/// One element of `result.content`.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Text {
        text: String,
        /// The parsed text, when it is a JSON object or array (not for bare numbers/strings).
        json: Option<Value>,
        annotations: Option<Value>,
    },
    Image {
        mime: String,
        /// The base64-decoded `data`, or why it could not be decoded.
        data: Result<Vec<u8>, String>,
        annotations: Option<Value>,
    },
    Audio {
        mime: String,
        data: Result<Vec<u8>, String>,
        annotations: Option<Value>,
    },
    ResourceLink {
        uri: String,
        name: Option<String>,
        title: Option<String>,
        description: Option<String>,
        mime: Option<String>,
        size: Option<u64>,
    },
    /// An embedded resource (`type: "resource"`).
    Resource {
        uri: String,
        mime: Option<String>,
        contents: ResourceContents,
    },
    /// A block of a type this module does not know (or with no `type` at all: `kind` is then
    /// empty), kept raw.
    Unknown { kind: String, raw: Value },
}

/// The payload of an embedded resource.
#[derive(Debug, Clone, PartialEq)]
pub enum ResourceContents {
    /// `text` (also used, empty, when the resource has neither `text` nor `blob`; a problem says so).
    Text(String),
    /// The base64-decoded `blob`, or why it could not be decoded.
    Blob(Result<Vec<u8>, String>),
}

/// `structuredContent` against the tool's `outputSchema`.
#[derive(Debug, Clone, PartialEq)]
pub enum StructuredCheck {
    /// No output schema was given (or the result is a failure without structured content: the
    /// schema describes successful output only, and the SDK clients skip it on errors too).
    NoSchema,
    Valid,
    /// Each entry: `at /json/pointer: message` (`at (root): message` for the whole value).
    Invalid(Vec<String>),
    /// An output schema is declared but the (successful) result has no `structuredContent`.
    MissingStructured,
    /// The schema cannot be used: not a schema, an unsupported `$schema` dialect, a `$ref` that
    /// would need fetching (never done), ...
    SchemaUnusable(String),
}

/// At most this many validation errors are listed (a last entry says how many more there were).
const MAX_SCHEMA_ERRORS: usize = 50;
/// Validation messages quote the offending value; longer messages are cut.
const MAX_MESSAGE_CHARS: usize = 300;

/// Interprets a whole JSON-RPC response to `tools/call`. `output_schema` is the tool's
/// `outputSchema` from `tools/list`, if known.
pub fn interpret(response: &Value, output_schema: Option<&Value>) -> CallOutcome {
    let Some(obj) = response.as_object() else {
        return CallOutcome::Malformed(format!(
            "the response is {}, not a JSON-RPC object",
            crate::text::json_kind(response)
        ));
    };
    let mut problems = Vec::new();
    match obj.get("jsonrpc") {
        Some(Value::String(v)) if v == "2.0" => {}
        None => problems.push("\"jsonrpc\" is missing (must be \"2.0\")".to_owned()),
        Some(other) => problems.push(format!("\"jsonrpc\" is {}, not \"2.0\"", short(other))),
    }
    match (obj.get("result"), obj.get("error")) {
        (Some(result), Some(Value::Null)) => {
            problems.push("the response has \"error\": null next to \"result\"".to_owned());
            interpret_result(result, output_schema, problems)
        }
        (Some(Value::Null), Some(error)) => interpret_error(error),
        (Some(_), Some(_)) => {
            CallOutcome::Malformed("the response has both \"result\" and \"error\" (JSON-RPC allows one)".to_owned())
        }
        (Some(result), None) => interpret_result(result, output_schema, problems),
        (None, Some(error)) => interpret_error(error),
        (None, None) if obj.contains_key("method") => {
            CallOutcome::Malformed("this is a request or notification (it has \"method\"), not a response".to_owned())
        }
        (None, None) => CallOutcome::Malformed("the response has neither \"result\" nor \"error\"".to_owned()),
    }
}

/// What a JSON-RPC / MCP error code means.
pub fn error_meaning(code: i64) -> &'static str {
    match code {
        -32700 => "Parse error",
        -32600 => "Invalid Request",
        -32601 => "Method not found",
        -32602 => "Invalid params",
        -32603 => "Internal error",
        -32002 => "Resource not found",
        -32042 => "URL elicitation required",
        -32020 => "Header mismatch",
        -32021 => "Missing required client capability",
        -32022 => "Unsupported protocol version",
        -32000 => "Server error (implementation-defined; SDKs use it for connection closed / transport errors)",
        -32001 => "Server error (implementation-defined; SDKs use it for request timeout / session not found)",
        -32099..=-32003 => "Server error (implementation-defined, -32000..-32099)",
        -32768..=-32100 => "Reserved JSON-RPC error code",
        _ => "Application-defined error",
    }
}

fn interpret_error(error: &Value) -> CallOutcome {
    let Some(e) = error.as_object() else {
        return CallOutcome::Malformed(format!("\"error\" is {}, not an object", crate::text::json_kind(error)));
    };
    let code = match e.get("code") {
        Some(Value::Number(n)) => n.as_i64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= i64::MIN as f64 && *f <= i64::MAX as f64)
                .map(|f| f as i64)
        }),
        _ => None,
    };
    let Some(code) = code else {
        return CallOutcome::Malformed(match e.get("code") {
            None => "the error object has no \"code\"".to_owned(),
            Some(c) => format!("the error code is {}, not an integer", short(c)),
        });
    };
    let message = match e.get("message") {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => String::new(),
        Some(other) => other.to_string(),
    };
    let data = e.get("data").filter(|d| !d.is_null()).cloned();
    CallOutcome::ProtocolError {
        code,
        message,
        data,
        meaning: error_meaning(code),
    }
}

fn interpret_result(result: &Value, output_schema: Option<&Value>, mut problems: Vec<String>) -> CallOutcome {
    let Some(r) = result.as_object() else {
        return CallOutcome::Malformed(format!(
            "\"result\" is {}, not an object",
            crate::text::json_kind(result)
        ));
    };
    match r.get("resultType") {
        None | Some(Value::Null) => {}
        Some(Value::String(t)) if t == "complete" => {}
        Some(Value::String(t)) if t == "input_required" => {
            return CallOutcome::Malformed(
                "the result is an InputRequiredResult (resultType \"input_required\", 2026-07-28): the server \
                 needs more input before the tool can finish; it is not a tool result"
                    .to_owned(),
            );
        }
        Some(other) => problems.push(format!("unknown resultType {}", short(other))),
    }
    if r.contains_key("task") && !r.contains_key("content") {
        return CallOutcome::Malformed(
            "the result is a CreateTaskResult (task-augmented tools/call): the tool result arrives later \
             through the task"
                .to_owned(),
        );
    }

    let blocks = match r.get("content") {
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| parse_block(i, item, &mut problems))
            .collect(),
        None | Some(Value::Null) => {
            problems.push("\"content\" is missing (it is required, use [] for no content)".to_owned());
            Vec::new()
        }
        Some(other) => {
            return CallOutcome::Malformed(format!(
                "\"content\" is {}, not an array",
                crate::text::json_kind(other)
            ));
        }
    };

    let failed = match r.get("isError") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => {
            problems.push(format!(
                "isError is {} (a string), not a boolean",
                short(&Value::String(s.clone()))
            ));
            s.trim().eq_ignore_ascii_case("true")
        }
        Some(other) => {
            problems.push(format!("isError is {}, not a boolean (read as false)", short(other)));
            false
        }
    };

    let structured = r.get("structuredContent").cloned();
    if let Some(s) = &structured
        && !s.is_object()
    {
        problems.push(format!(
            "structuredContent is {} (before protocol 2026-07-28 it must be an object)",
            crate::text::json_kind(s)
        ));
    }
    let structured_check = match (output_schema, &structured) {
        (None, _) => StructuredCheck::NoSchema,
        (Some(_), None) if failed => StructuredCheck::NoSchema,
        (Some(_), None) => StructuredCheck::MissingStructured,
        (Some(schema), Some(instance)) => validate_structured(schema, instance),
    };
    let meta = r.get("_meta").cloned();
    if let Some(m) = &meta
        && !m.is_object()
    {
        problems.push(format!("_meta is {}, not an object", crate::text::json_kind(m)));
    }

    let tool_result = ToolResult {
        blocks,
        structured,
        structured_check,
        meta,
        problems,
    };
    if failed {
        CallOutcome::ToolFailure(tool_result)
    } else {
        CallOutcome::ToolSuccess(tool_result)
    }
}

/// Validates `instance` against a tool's output schema. The dialect comes from `$schema` (draft-04,
/// -06, -07, 2019-09, 2020-12), 2020-12 when absent (MCP 2025-11-25). References are resolved only
/// inside the schema itself: a `$ref` to anything else makes the schema unusable, nothing is
/// fetched.
pub fn validate_structured(schema: &Value, instance: &Value) -> StructuredCheck {
    let draft = match schema {
        Value::Bool(_) => jsonschema::Draft::Draft202012,
        Value::Object(map) => match map.get("$schema") {
            None => jsonschema::Draft::Draft202012,
            Some(Value::String(uri)) => match jsonschema::Draft::from_schema_uri(uri) {
                // `with_draft(Draft::Unknown)` panics; custom meta-schemas would need fetching anyway.
                jsonschema::Draft::Unknown => {
                    return StructuredCheck::SchemaUnusable(format!(
                        "unsupported JSON Schema dialect {uri:?} in $schema (known: draft-04, draft-06, draft-07, \
                         2019-09, 2020-12)"
                    ));
                }
                draft => draft,
            },
            Some(other) => {
                return StructuredCheck::SchemaUnusable(format!(
                    "$schema is {}, not a string",
                    crate::text::json_kind(other)
                ));
            }
        },
        other => {
            return StructuredCheck::SchemaUnusable(format!(
                "the output schema is {}, not a schema object",
                crate::text::json_kind(other)
            ));
        }
    };
    // jsonschema is a large third-party validator fed with server-controlled schemas; a panic in it
    // must not take the inspector down.
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let validator = match jsonschema::options().with_draft(draft).build(schema) {
            Ok(v) => v,
            Err(e) => return StructuredCheck::SchemaUnusable(truncate(e.to_string())),
        };
        let mut errors = Vec::new();
        let mut extra = 0usize;
        for e in validator.iter_errors(instance) {
            if errors.len() >= MAX_SCHEMA_ERRORS {
                extra += 1;
                continue;
            }
            let path = e.instance_path().to_string();
            let at = if path.is_empty() { "(root)".to_owned() } else { path };
            errors.push(format!("at {at}: {}", truncate(e.to_string())));
        }
        if extra > 0 {
            errors.push(format!("... and {extra} more"));
        }
        if errors.is_empty() {
            StructuredCheck::Valid
        } else {
            StructuredCheck::Invalid(errors)
        }
    }));
    run.unwrap_or_else(|_| StructuredCheck::SchemaUnusable("the schema validator crashed on this schema".to_owned()))
}

fn parse_block(i: usize, item: &Value, problems: &mut Vec<String>) -> Block {
    let Some(obj) = item.as_object() else {
        problems.push(format!(
            "content[{i}] is {}, not a content block object",
            crate::text::json_kind(item)
        ));
        return Block::Unknown {
            kind: String::new(),
            raw: item.clone(),
        };
    };
    let kind_str = match obj.get("type") {
        Some(Value::String(t)) => t.clone(),
        None => {
            problems.push(format!("content[{i}] has no \"type\""));
            return Block::Unknown {
                kind: String::new(),
                raw: item.clone(),
            };
        }
        Some(other) => {
            problems.push(format!(
                "content[{i}] \"type\" is {}, not a string",
                crate::text::json_kind(other)
            ));
            return Block::Unknown {
                kind: String::new(),
                raw: item.clone(),
            };
        }
    };
    let ctx = format!("content[{i}] ({kind_str})");
    let annotations = annotations_of(obj, &ctx, problems);
    match kind_str.as_str() {
        "text" => {
            let text = required_str(obj, "text", &ctx, problems);
            let json = json_in_text(&text);
            Block::Text {
                text,
                json,
                annotations,
            }
        }
        "image" | "audio" => {
            let mime = required_str(obj, "mimeType", &ctx, problems);
            let family = if kind_str == "image" { "image/" } else { "audio/" };
            if !mime.is_empty() && !mime_essence(&mime).starts_with(family) {
                problems.push(format!("{ctx}: mimeType {mime:?} is not an {family}* type"));
            }
            let data = base64_field(obj, "data", &ctx, problems);
            if let Ok(bytes) = &data {
                check_bytes_against_mime(bytes, Some(&mime), &ctx, problems);
            }
            if kind_str == "image" {
                Block::Image {
                    mime,
                    data,
                    annotations,
                }
            } else {
                Block::Audio {
                    mime,
                    data,
                    annotations,
                }
            }
        }
        "resource_link" => {
            let uri = required_str(obj, "uri", &ctx, problems);
            let name = optional_str(obj, "name", &ctx, problems);
            if name.is_none() {
                problems.push(format!("{ctx}: \"name\" is missing (required for resource links)"));
            }
            let size = match obj.get("size") {
                None | Some(Value::Null) => None,
                Some(v) => {
                    let size = v.as_u64();
                    if size.is_none() {
                        problems.push(format!("{ctx}: \"size\" is {}, not a non-negative integer", short(v)));
                    }
                    size
                }
            };
            Block::ResourceLink {
                uri,
                name,
                title: optional_str(obj, "title", &ctx, problems),
                description: optional_str(obj, "description", &ctx, problems),
                mime: optional_str(obj, "mimeType", &ctx, problems),
                size,
            }
        }
        "resource" => parse_embedded_resource(obj, &ctx, problems),
        other => {
            let hint = if matches!(other, "tool_use" | "tool_result") {
                " (it belongs in sampling messages, not in tool results)"
            } else {
                ""
            };
            problems.push(format!("content[{i}] has unknown type {other:?}{hint}"));
            Block::Unknown {
                kind: kind_str.clone(),
                raw: item.clone(),
            }
        }
    }
}

fn parse_embedded_resource(obj: &Map<String, Value>, ctx: &str, problems: &mut Vec<String>) -> Block {
    let src = match obj.get("resource") {
        Some(Value::Object(r)) => r,
        None | Some(Value::Null) => {
            problems.push(format!(
                "{ctx}: no \"resource\" object (old or flattened shape); reading uri/text/blob from the block itself"
            ));
            obj
        }
        Some(other) => {
            problems.push(format!(
                "{ctx}: \"resource\" is {}, not an object; reading uri/text/blob from the block itself",
                crate::text::json_kind(other)
            ));
            obj
        }
    };
    let uri = required_str(src, "uri", ctx, problems);
    let mime = optional_str(src, "mimeType", ctx, problems);
    let text = src.get("text").filter(|v| !v.is_null());
    let blob = src.get("blob").filter(|v| !v.is_null());
    let contents = match (text, blob) {
        (Some(Value::String(t)), blob) => {
            if blob.is_some() {
                problems.push(format!(
                    "{ctx}: the resource has both \"text\" and \"blob\"; showing the text"
                ));
            }
            ResourceContents::Text(t.clone())
        }
        (text, Some(_)) => {
            if let Some(t) = text {
                problems.push(format!(
                    "{ctx}: resource \"text\" is {}, not a string; showing the blob",
                    crate::text::json_kind(t)
                ));
            }
            let data = base64_field(src, "blob", ctx, problems);
            if let Ok(bytes) = &data {
                check_bytes_against_mime(bytes, mime.as_deref(), ctx, problems);
            }
            ResourceContents::Blob(data)
        }
        (Some(t), None) => {
            problems.push(format!(
                "{ctx}: resource \"text\" is {}, not a string",
                crate::text::json_kind(t)
            ));
            ResourceContents::Text(String::new())
        }
        (None, None) => {
            problems.push(format!("{ctx}: the resource has neither \"text\" nor \"blob\""));
            ResourceContents::Text(String::new())
        }
    };
    Block::Resource { uri, mime, contents }
}

fn annotations_of(obj: &Map<String, Value>, ctx: &str, problems: &mut Vec<String>) -> Option<Value> {
    let a = obj.get("annotations").filter(|a| !a.is_null())?;
    let Some(map) = a.as_object() else {
        problems.push(format!(
            "{ctx}: \"annotations\" is {}, not an object",
            crate::text::json_kind(a)
        ));
        return Some(a.clone());
    };
    if let Some(aud) = map.get("audience") {
        let ok = aud
            .as_array()
            .is_some_and(|roles| roles.iter().all(|r| matches!(r.as_str(), Some("user" | "assistant"))));
        if !ok {
            problems.push(format!(
                "{ctx}: annotations.audience must be an array of \"user\"/\"assistant\", got {}",
                short(aud)
            ));
        }
    }
    if let Some(p) = map.get("priority")
        && !p.as_f64().is_some_and(|p| (0.0..=1.0).contains(&p))
    {
        problems.push(format!(
            "{ctx}: annotations.priority must be a number from 0 to 1, got {}",
            short(p)
        ));
    }
    Some(a.clone())
}

fn required_str(obj: &Map<String, Value>, key: &str, ctx: &str, problems: &mut Vec<String>) -> String {
    match obj.get(key) {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => {
            problems.push(format!("{ctx}: \"{key}\" is missing"));
            String::new()
        }
        Some(other) => {
            problems.push(format!(
                "{ctx}: \"{key}\" is {}, not a string",
                crate::text::json_kind(other)
            ));
            match other {
                Value::Number(_) | Value::Bool(_) => other.to_string(),
                _ => String::new(),
            }
        }
    }
}

fn optional_str(obj: &Map<String, Value>, key: &str, ctx: &str, problems: &mut Vec<String>) -> Option<String> {
    match obj.get(key) {
        Some(Value::String(s)) => Some(s.clone()),
        None | Some(Value::Null) => None,
        Some(other) => {
            problems.push(format!(
                "{ctx}: \"{key}\" is {}, not a string",
                crate::text::json_kind(other)
            ));
            None
        }
    }
}

/// The JSON object or array a text block carries, if its whole text is one.
fn json_in_text(text: &str) -> Option<Value> {
    let t = text.trim();
    if !(t.starts_with('{') || t.starts_with('[')) {
        return None;
    }
    serde_json::from_str::<Value>(t)
        .ok()
        .filter(|v| v.is_object() || v.is_array())
}

fn base64_field(obj: &Map<String, Value>, key: &str, ctx: &str, problems: &mut Vec<String>) -> Result<Vec<u8>, String> {
    let data = match obj.get(key) {
        Some(Value::String(s)) => s,
        None | Some(Value::Null) => {
            problems.push(format!("{ctx}: \"{key}\" is missing"));
            return Err(format!("\"{key}\" is missing"));
        }
        Some(other) => {
            let e = format!("\"{key}\" is {}, not a base64 string", crate::text::json_kind(other));
            problems.push(format!("{ctx}: {e}"));
            return Err(e);
        }
    };
    let (decoded, note) = decode_base64(data);
    match &decoded {
        Ok(bytes) if bytes.is_empty() => problems.push(format!("{ctx}: \"{key}\" is empty")),
        Ok(_) => {}
        Err(e) => problems.push(format!("{ctx}: \"{key}\" is {e}")),
    }
    if let Some(note) = note {
        problems.push(format!("{ctx}: \"{key}\" {note}"));
    }
    decoded
}

/// A value for a problem message: short scalars verbatim, the rest by kind.
fn short(v: &Value) -> String {
    match v {
        Value::Array(_) | Value::Object(_) => crate::text::json_kind(v).to_owned(),
        _ => truncate(v.to_string()),
    }
}

fn truncate(mut s: String) -> String {
    if let Some((cut, _)) = s.char_indices().nth(MAX_MESSAGE_CHARS) {
        s.truncate(cut);
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests;
