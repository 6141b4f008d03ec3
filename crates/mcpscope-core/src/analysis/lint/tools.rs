//! Tools: names, schemas, and results checked against the schemas the same
//! server published.

use super::request::RequestParams;
use super::{Finding, Severity, is_request, quote, rule};
use crate::protocol::methods;
use crate::wire::classify::Kind;
use crate::wire::frame::{Direction, Frame};
use serde_json::Value;
use std::collections::HashMap;

/// The JSON Schema dialect a schema declares (2020-12 when it declares none).
fn dialect(schema: &Value) -> Result<jsonschema::Draft, String> {
    use jsonschema::Draft;
    let Some(uri) = schema.get("$schema").and_then(Value::as_str) else {
        // A non-string `$schema` is left to the meta-schema to reject.
        return Ok(Draft::Draft202012);
    };
    let key = uri
        .trim()
        .trim_end_matches('#')
        .trim_start_matches("https://")
        .trim_start_matches("http://");
    Ok(match key {
        "json-schema.org/draft/2020-12/schema" => Draft::Draft202012,
        "json-schema.org/draft/2019-09/schema" => Draft::Draft201909,
        "json-schema.org/draft-07/schema" => Draft::Draft7,
        "json-schema.org/draft-06/schema" => Draft::Draft6,
        "json-schema.org/draft-04/schema" => Draft::Draft4,
        _ => return Err(uri.to_owned()),
    })
}

fn draft_name(d: jsonschema::Draft) -> &'static str {
    use jsonschema::Draft;
    match d {
        Draft::Draft4 => "draft-04",
        Draft::Draft6 => "draft-06",
        Draft::Draft7 => "draft-07",
        Draft::Draft201909 => "2019-09",
        _ => "2020-12",
    }
}

/// A sentence naming up to three places where `instance` breaks a schema.
fn describe_errors<'a>(errors: impl Iterator<Item = jsonschema::ValidationError<'a>>) -> Option<String> {
    let errors: Vec<String> = errors
        .take(4)
        .map(|e| {
            let at = e.instance_path().to_string();
            let at = if at.is_empty() { "/".to_owned() } else { at };
            format!("at {at}: {}", crate::text::shorten(&e.to_string(), 200))
        })
        .collect();
    if errors.is_empty() {
        return None;
    }
    let mut s = errors.iter().take(3).cloned().collect::<Vec<_>>().join("; ");
    if errors.len() > 3 {
        s.push_str("; …");
    }
    Some(s)
}

enum SchemaCheck {
    Valid(Box<jsonschema::Validator>),
    /// Broken (reported) or in a dialect we cannot check: nothing to validate against.
    Unusable,
}

/// Checks a tool schema against its meta-schema and compiles it.
fn check_schema(
    schema: &Value,
    what: &str,
    invalid_rule: &'static str,
    seq: u64,
    out: &mut Vec<Finding>,
) -> SchemaCheck {
    let draft = match dialect(schema) {
        Ok(d) => d,
        Err(uri) => {
            out.push(Finding::new(
                rule::UNSUPPORTED_SCHEMA_DIALECT,
                Severity::Warning,
                vec![seq],
                format!(
                    "The {what} declares \"$schema\": {uri:?}, a dialect mcpscope cannot check (it knows 2020-12, \
                     2019-09, draft-07, draft-06 and draft-04); clients that cannot either must reject the tool."
                ),
            ));
            return SchemaCheck::Unusable;
        }
    };
    use jsonschema::Draft;
    let meta = match draft {
        Draft::Draft4 => jsonschema::draft4::meta::validator(),
        Draft::Draft6 => jsonschema::draft6::meta::validator(),
        Draft::Draft7 => jsonschema::draft7::meta::validator(),
        Draft::Draft201909 => jsonschema::draft201909::meta::validator(),
        _ => jsonschema::draft202012::meta::validator(),
    };
    if let Some(errors) = describe_errors(meta.iter_errors(schema)) {
        out.push(Finding::new(
            invalid_rule,
            Severity::Error,
            vec![seq],
            format!("The {what} is not valid JSON Schema ({}): {errors}.", draft_name(draft)),
        ));
        return SchemaCheck::Unusable;
    }
    // Compiling also resolves `$ref`s; with no retriever configured a remote
    // one fails here instead of being fetched.
    match jsonschema::options().with_draft(draft).build(schema) {
        Ok(v) => SchemaCheck::Valid(Box::new(v)),
        Err(e) => {
            out.push(Finding::new(
                invalid_rule,
                Severity::Error,
                vec![seq],
                format!(
                    "The {what} cannot be used as JSON Schema ({}): {}.",
                    draft_name(draft),
                    crate::text::shorten(&e.to_string(), 300)
                ),
            ));
            SchemaCheck::Unusable
        }
    }
}

pub(super) fn valid_tool_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

struct ToolInfo {
    /// None when the tool declares no outputSchema, or one we could not use.
    output: Option<Box<jsonschema::Validator>>,
    has_output_schema: bool,
}

#[derive(Default)]
pub(super) struct Tools {
    /// The tools listed so far, by name (a later list replaces an entry).
    tools: HashMap<String, ToolInfo>,
    /// `tools/call` requests waiting for their answer: the tool they call.
    calls: HashMap<u64, Option<String>>,
}

#[derive(serde::Deserialize)]
struct Call {
    #[serde(default)]
    params: Option<CallParams>,
}

#[derive(serde::Deserialize)]
struct CallParams {
    #[serde(default)]
    name: Option<Value>,
}

/// `params.name` of a `tools/call`: from the params read for every concern,
/// or, when those could not be read whole (a member the round trips read
/// given twice, say), from the name alone as before.
fn tool_called(f: &Frame, params: &RequestParams) -> Option<String> {
    let name = match params {
        RequestParams::Read(p) => p.as_ref()?.name.clone()?,
        RequestParams::NotRead | RequestParams::Unreadable => {
            serde_json::from_slice::<Call>(&f.raw).ok()?.params?.name?
        }
    };
    match name {
        Value::String(s) => Some(s),
        _ => None,
    }
}

impl Tools {
    pub fn frame(&mut self, f: &Frame, params: &RequestParams, description_budget: usize, out: &mut Vec<Finding>) {
        if is_request(f, Direction::Out) {
            if f.class.method.as_deref() == Some(methods::TOOLS_CALL) {
                self.calls.insert(f.seq, tool_called(f, params));
            }
            return;
        }
        if f.direction != Direction::In {
            return;
        }
        let Some(link) = &f.link else { return };
        match (f.kind(), link.method.as_str()) {
            (Kind::Result, methods::TOOLS_LIST) => {
                let Some(v) = f.json() else { return };
                let Some(list) = v.pointer("/result/tools").and_then(Value::as_array) else {
                    return;
                };
                for (i, tool) in list.iter().enumerate() {
                    header_annotations(tool, f.seq, out);
                    if let Some((name, info)) = check_tool(tool, i, f.seq, out) {
                        self.tools.insert(name, info);
                    }
                }
                model_facing(list, f.seq, description_budget, out);
            }
            (Kind::Result, methods::TOOLS_CALL) => {
                let name = self.calls.remove(&link.request_seq).flatten();
                self.check_result(f, link.request_seq, name.as_deref(), out);
            }
            (Kind::Error, methods::TOOLS_CALL) => {
                let name = self.calls.remove(&link.request_seq).flatten();
                let listed = name.as_deref().is_some_and(|n| self.tools.contains_key(n));
                if listed && let Some(v) = f.json() {
                    check_tool_call_error(f, link.request_seq, name.as_deref().unwrap_or_default(), &v, out);
                }
            }
            _ => {}
        }
    }

    fn check_result(&self, f: &Frame, request_seq: u64, name: Option<&str>, out: &mut Vec<Finding>) {
        let tool = name.map_or_else(|| "the tool".to_owned(), |n| format!("the tool {n:?}"));
        let seqs = vec![request_seq, f.seq];
        if f.class.tool_error {
            let Some(v) = f.json() else { return };
            let text = result_text(&v["result"]);
            let lower = text.to_lowercase();
            let protocolish = ["unknown tool", "method not found", "not found: tool", "tool not found"]
                .iter()
                .any(|p| lower.contains(p));
            if protocolish {
                out.push(Finding::new(
                    rule::TOOL_ERROR_FOR_PROTOCOL_ERROR,
                    Severity::Warning,
                    seqs,
                    format!(
                        "Heuristic: the server answered a call to {tool} with an isError result saying {}. An \
                         unknown tool is a protocol error (a JSON-RPC error, -32602), not a tool execution failure; \
                         isError is for a tool that ran and failed.",
                        quote(&text)
                    ),
                ));
            }
            return;
        }
        // Only a tool with an outputSchema has more to check: most results
        // are not parsed again.
        let Some(info) = name.and_then(|n| self.tools.get(n)).filter(|i| i.has_output_schema) else {
            return;
        };
        let Some(v) = f.json() else { return };
        let result = &v["result"];
        // Task handles and input requests are not the tool's output.
        if result.get("task").is_some()
            || result
                .get("resultType")
                .and_then(Value::as_str)
                .is_some_and(|t| t != "complete")
        {
            return;
        }
        match result.get("structuredContent") {
            None => out.push(Finding::new(
                rule::STRUCTURED_CONTENT_MISSING,
                Severity::Error,
                seqs,
                format!(
                    "The server declared an outputSchema for {tool} but its successful result has no \
                     structuredContent; a tool with an outputSchema must return structured results that conform \
                     to it."
                ),
            )),
            Some(sc) => {
                if let Some(validator) = &info.output
                    && let Some(errors) = describe_errors(validator.iter_errors(sc))
                {
                    out.push(Finding::new(
                        rule::STRUCTURED_CONTENT_MISMATCH,
                        Severity::Error,
                        seqs,
                        format!("The structuredContent returned by {tool} does not match its outputSchema: {errors}."),
                    ));
                }
            }
        }
    }
}

/// What models and their providers trip over in a listing: a tool with no
/// description, or one too long; a name the providers refuse, or two names
/// that become one under their rules; a schema a provider refuses.
fn model_facing(list: &[Value], seq: u64, description_budget: usize, out: &mut Vec<Finding>) {
    use crate::model::request::{offered_base, provider_accepts_name};
    let mut offered: HashMap<String, Vec<&str>> = HashMap::new();
    for tool in list {
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            continue;
        };
        let description = tool.get("description").and_then(Value::as_str).unwrap_or_default();
        if description.trim().is_empty() {
            out.push(Finding::new(
                rule::TOOL_DESCRIPTION_MISSING,
                Severity::Info,
                vec![seq],
                format!(
                    "The tool {name:?} has no description: a model chooses tools by their descriptions, and has \
                     only this one's name to go on."
                ),
            ));
        }
        let chars = description.chars().count();
        if description_budget > 0 && chars > description_budget {
            out.push(Finding::new(
                rule::TOOL_DESCRIPTION_LONG,
                Severity::Warning,
                vec![seq],
                format!(
                    "The tool {name:?} has a description of {chars} characters, over the budget of \
                     {description_budget}: every request to a model carries it (lint --budget-description)."
                ),
            ));
        }
        if !provider_accepts_name(name) {
            out.push(Finding::new(
                rule::PROVIDER_TOOL_NAME,
                Severity::Info,
                vec![seq],
                format!(
                    "The tool name {name:?} is one OpenAI's and Anthropic's APIs refuse (1-64 of A-Z a-z 0-9 _ -): \
                     a client must offer it under another name, such as {:?}, and map the model's calls back.",
                    offered_base(name)
                ),
            ));
        }
        offered.entry(offered_base(name)).or_default().push(name);
        let schema = tool.get("inputSchema");
        let combinators: Vec<&str> = ["anyOf", "oneOf", "allOf"]
            .into_iter()
            .filter(|k| schema.and_then(|s| s.get(k)).is_some())
            .collect();
        if !combinators.is_empty() {
            out.push(Finding::new(
                rule::PROVIDER_SCHEMA,
                Severity::Warning,
                vec![seq],
                format!(
                    "The inputSchema of the tool {name:?} has {} at its top: Anthropic's API refuses a tool whose \
                     input_schema does, and OpenAI's wants a plain object schema there. Put the alternatives \
                     inside a property.",
                    combinators.join(", ")
                ),
            ));
        }
    }
    let mut clashes: Vec<(String, Vec<&str>)> = offered.into_iter().filter(|(_, names)| names.len() > 1).collect();
    clashes.sort();
    for (as_offered, names) in clashes {
        out.push(Finding::new(
            rule::PROVIDER_TOOL_NAME_CLASH,
            Severity::Warning,
            vec![seq],
            format!(
                "The tools {} all become {as_offered:?} under the providers' name rules: a client can offer \
                 only one of them under that name, and must rename the others.",
                names.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", ")
            ),
        ));
    }
}

fn check_tool(tool: &Value, index: usize, seq: u64, out: &mut Vec<Finding>) -> Option<(String, ToolInfo)> {
    let name = tool.get("name").and_then(Value::as_str);
    let label = match name {
        Some(n) => format!("tool {n:?}"),
        None => format!("tool #{index} in tools/list"),
    };
    match name {
        None => out.push(Finding::new(
            rule::TOOL_NAME_FORMAT,
            Severity::Error,
            vec![seq],
            format!("The {label} has no string name; every tool needs one to be called."),
        )),
        Some(n) if !valid_tool_name(n) => out.push(Finding::new(
            rule::TOOL_NAME_FORMAT,
            Severity::Warning,
            vec![seq],
            format!(
                "The tool name {n:?} does not follow the 2025-11-25 guidance: 1 to 128 characters of A-Z, a-z, \
                 0-9, underscore, hyphen and dot. Clients and models may mangle or reject it."
            ),
        )),
        Some(_) => {}
    }

    match tool.get("inputSchema") {
        Some(schema @ Value::Object(o)) => {
            if o.get("type").and_then(Value::as_str) != Some("object") {
                let ty = o
                    .get("type")
                    .map_or_else(|| "no type".to_owned(), |t| format!("type {t}"));
                out.push(Finding::new(
                    rule::INPUT_SCHEMA_NOT_OBJECT,
                    Severity::Error,
                    vec![seq],
                    format!(
                        "The {label} has an inputSchema with {ty}; it must be an object schema with \
                         \"type\": \"object\" (arguments are always a JSON object)."
                    ),
                ));
            }
            check_schema(
                schema,
                &format!("inputSchema of the {label}"),
                rule::INVALID_INPUT_SCHEMA,
                seq,
                out,
            );
        }
        other => {
            let what = match other {
                None => "no inputSchema".to_owned(),
                Some(v) => format!(
                    "an inputSchema that is not an object ({})",
                    crate::text::shorten(&v.to_string(), 60)
                ),
            };
            out.push(Finding::new(
                rule::INPUT_SCHEMA_NOT_OBJECT,
                Severity::Error,
                vec![seq],
                format!(
                    "The {label} has {what}; every tool needs an object schema, {{\"type\": \"object\"}} at least."
                ),
            ));
        }
    }

    let mut info = ToolInfo {
        output: None,
        has_output_schema: false,
    };
    match tool.get("outputSchema") {
        None | Some(Value::Null) => {}
        Some(schema @ Value::Object(_)) => {
            info.has_output_schema = true;
            if let SchemaCheck::Valid(v) = check_schema(
                schema,
                &format!("outputSchema of the {label}"),
                rule::INVALID_OUTPUT_SCHEMA,
                seq,
                out,
            ) {
                info.output = Some(v);
            }
        }
        Some(other) => {
            info.has_output_schema = true;
            out.push(Finding::new(
                rule::INVALID_OUTPUT_SCHEMA,
                Severity::Error,
                vec![seq],
                format!(
                    "The {label} has an outputSchema that is not a schema object: {}.",
                    crate::text::shorten(&other.to_string(), 80)
                ),
            ));
        }
    }
    name.map(|n| (n.to_owned(), info))
}

/// Text of a tool result's text blocks, for the heuristics.
fn result_text(result: &Value) -> String {
    result
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

fn check_tool_call_error(f: &Frame, request_seq: u64, name: &str, v: &Value, out: &mut Vec<Finding>) {
    let Some(code) = f.class.error_code else { return };
    if code != crate::wire::message::error_code::INTERNAL_ERROR && code != -32000 {
        return;
    }
    let message = v.pointer("/error/message").and_then(Value::as_str).unwrap_or_default();
    let lower = message.to_lowercase();
    // Anything that sounds like the protocol or the transport is left alone.
    let protocolish = [
        "unknown tool",
        "not found",
        "invalid param",
        "invalid request",
        "method",
        "parse error",
        "timed out",
        "timeout",
        "connection closed",
        "cancel",
    ]
    .iter()
    .any(|p| lower.contains(p));
    if protocolish || message.is_empty() {
        return;
    }
    out.push(Finding::new(
        rule::PROTOCOL_ERROR_FOR_TOOL_FAILURE,
        Severity::Info,
        vec![request_seq, f.seq],
        format!(
            "Heuristic: the listed tool {name:?} failed with a JSON-RPC error ({code}: {}). When a tool runs and \
             fails, the spec wants a result with isError: true so the model can see the error and correct \
             itself; JSON-RPC errors are for protocol problems.",
            quote(message)
        ),
    ));
}

/// SEP-2243: a tool whose `x-mcp-header` annotations break a rule is one a
/// 2026-07-28 client must leave out; said once per tool, naming the rule.
fn header_annotations(tool: &Value, seq: u64, out: &mut Vec<Finding>) {
    let Some(schema) = tool.get("inputSchema") else { return };
    if let Err(e) = crate::protocol::http_headers::annotations(schema) {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or("?");
        out.push(Finding::new(
            rule::INVALID_HEADER_ANNOTATION,
            Severity::Error,
            vec![seq],
            format!(
                "The tool {name:?} cannot be called over 2026-07-28 HTTP: {e} (rule: {}). Clients leave such a tool out \
                 rather than send headers the server did not mean; its schema is still listed.",
                e.rule()
            ),
        ));
    }
}
