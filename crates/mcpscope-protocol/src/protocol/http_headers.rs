//! The HTTP headers a 2026-07-28 request carries besides its body (SEP-2243).
//!
//! Every modern request carries `MCP-Protocol-Version` (equal to its
//! `_meta`), `Mcp-Method`, and `Mcp-Name` for `tools/call`, `prompts/get`
//! (the name) and `resources/read` (the URI): [`standard`].
//!
//! A tool may annotate primitive properties of its `inputSchema` with
//! `x-mcp-header: "Name"`; a client calling it over Streamable HTTP mirrors
//! each such argument into an `Mcp-Param-Name` header, so intermediaries can
//! route on it without reading bodies. Values a header cannot carry as they
//! are (non-ASCII, control characters, leading or trailing whitespace, or
//! text that looks like the sentinel) travel as `=?base64?…?=`; null and
//! absent arguments send no header. A tool whose annotations break the rules
//! (empty, not an RFC 9110 token, repeated ignoring case, on a property that
//! is not a string, integer or boolean) must not be called: the client
//! leaves it out.

use crate::protocol::era::{self, Era};
use crate::protocol::methods;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;
use std::fmt;

/// The standard headers of a message whose `_meta` carries a modern
/// protocol version; empty for legacy messages and bodies that are not JSON.
pub fn standard(body: &[u8]) -> Vec<(String, String)> {
    // Every POST passes here: a body that cannot hold a `_meta` key (none
    // written plainly, no escape that could spell one) is not parsed.
    if !body.contains(&b'\\') && !body.windows(5).any(|w| w == b"_meta") {
        return Vec::new();
    }
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return Vec::new();
    };
    let Some(version) = v
        .get("params")
        .and_then(era::request_version)
        .filter(|ver| Era::of_version(ver) != Some(Era::Legacy))
    else {
        return Vec::new();
    };
    let mut out = vec![("MCP-Protocol-Version".to_owned(), version.to_owned())];
    if let Some(method) = v.get("method").and_then(Value::as_str) {
        out.push(("Mcp-Method".to_owned(), encode_text(method)));
        let name = match method {
            methods::TOOLS_CALL | methods::PROMPTS_GET => v.pointer("/params/name"),
            methods::RESOURCES_READ => v.pointer("/params/uri"),
            _ => None,
        };
        if let Some(n) = name.and_then(Value::as_str) {
            out.push(("Mcp-Name".to_owned(), encode_text(n)));
        }
    }
    out
}

/// The schema keyword that names a property's header.
pub const ANNOTATION: &str = "x-mcp-header";
/// The prefix of the mirrored headers.
pub const HEADER_PREFIX: &str = "Mcp-Param-";

/// One annotated parameter: where it is in the arguments and its header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamHeader {
    /// Keys from the arguments object down to the value.
    pub path: Vec<String>,
    /// The annotation, e.g. `Region` (the header is `Mcp-Param-Region`).
    pub name: String,
}

impl ParamHeader {
    pub fn header_name(&self) -> String {
        format!("{HEADER_PREFIX}{}", self.name)
    }
}

/// Why a tool's annotations make it uncallable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InvalidAnnotation {
    Empty { path: String },
    NotAToken { path: String, name: String },
    NotPrimitive { path: String, name: String, kind: String },
    Duplicate { name: String, paths: [String; 2] },
}

impl fmt::Display for InvalidAnnotation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvalidAnnotation::Empty { path } => write!(f, "{ANNOTATION} of {path} is empty"),
            InvalidAnnotation::NotAToken { path, name } => write!(
                f,
                "{ANNOTATION} {name:?} of {path} is not a header name (RFC 9110 token: letters, digits and !#$%&'*+-.^_`|~)"
            ),
            InvalidAnnotation::NotPrimitive { path, name, kind } => {
                let article = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
                    "an"
                } else {
                    "a"
                };
                write!(
                    f,
                    "{ANNOTATION} {name:?} is on {path}, {article} {kind}: only string, integer and boolean parameters can be headers"
                )
            }
            InvalidAnnotation::Duplicate { name, paths } => write!(
                f,
                "{ANNOTATION} {name:?} names two parameters ({} and {}), ignoring case",
                paths[0], paths[1]
            ),
        }
    }
}

impl InvalidAnnotation {
    /// A short name of the rule broken (for lint findings and tests).
    pub fn rule(&self) -> &'static str {
        match self {
            InvalidAnnotation::Empty { .. } => "not-empty",
            InvalidAnnotation::NotAToken { .. } => "charset",
            InvalidAnnotation::NotPrimitive { .. } => "primitive-only",
            InvalidAnnotation::Duplicate { .. } => "unique",
        }
    }
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The schema's type, for the primitive check: `type` (a string, or an array
/// whose only non-null member counts), else what `const`/`enum` imply.
fn primitive_kind(schema: &Value) -> Result<(), String> {
    let kind = match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => {
            let named: Vec<&str> = ts.iter().filter_map(Value::as_str).filter(|t| *t != "null").collect();
            match named.as_slice() {
                [one] => (*one).to_owned(),
                _ => format!("one of {}", named.join(", ")),
            }
        }
        _ => "value of no declared type".to_owned(),
    };
    match kind.as_str() {
        "string" | "integer" | "boolean" => Ok(()),
        _ => Err(kind),
    }
}

/// The annotated parameters of a tool, or the first rule they break.
pub fn annotations(input_schema: &Value) -> Result<Vec<ParamHeader>, InvalidAnnotation> {
    let mut found = Vec::new();
    walk(input_schema, &mut Vec::new(), &mut found)?;
    for (i, a) in found.iter().enumerate() {
        if let Some(b) = found[..i].iter().find(|b| b.name.eq_ignore_ascii_case(&a.name)) {
            return Err(InvalidAnnotation::Duplicate {
                name: a.name.clone(),
                paths: [b.path.join("."), a.path.join(".")],
            });
        }
    }
    Ok(found)
}

/// Annotations are read on properties reachable from the root through
/// `properties` only.
fn walk(schema: &Value, path: &mut Vec<String>, out: &mut Vec<ParamHeader>) -> Result<(), InvalidAnnotation> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    for (key, prop) in props {
        path.push(key.clone());
        if let Some(annotation) = prop.get(ANNOTATION) {
            let at = path.join(".");
            let name = match annotation {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            if name.is_empty() {
                return Err(InvalidAnnotation::Empty { path: at });
            }
            if !annotation.is_string() || !name.bytes().all(is_tchar) {
                return Err(InvalidAnnotation::NotAToken { path: at, name });
            }
            if let Err(kind) = primitive_kind(prop) {
                return Err(InvalidAnnotation::NotPrimitive { path: at, name, kind });
            }
            out.push(ParamHeader {
                path: path.clone(),
                name,
            });
        }
        walk(prop, path, out)?;
        path.pop();
    }
    Ok(())
}

/// A value as a header carries it: strings as they are when they can be,
/// integers and booleans as text, anything else (null, absent, objects,
/// arrays, non-integer numbers) not at all.
pub fn encode_value(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(encode_text(s)),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        _ => None,
    }
}

/// Text as a header value: visible ASCII as it is; anything else (or
/// leading/trailing whitespace, or text that looks like the sentinel) as
/// `=?base64?…?=` of its UTF-8.
pub fn encode_text(s: &str) -> String {
    let unsafe_byte = s.bytes().any(|b| !(0x20..=0x7e).contains(&b));
    let padded = s.starts_with([' ', '\t']) || s.ends_with([' ', '\t']);
    let looks_encoded = s.starts_with("=?base64?") && s.ends_with("?=");
    if unsafe_byte || padded || looks_encoded {
        format!("=?base64?{}?=", STANDARD.encode(s.as_bytes()))
    } else {
        s.to_owned()
    }
}

/// The `Mcp-Param-*` headers a `tools/call` with these arguments carries.
pub fn headers(annotations: &[ParamHeader], arguments: &Value) -> Vec<(String, String)> {
    annotations
        .iter()
        .filter_map(|a| {
            let mut v = arguments;
            for key in &a.path {
                v = v.get(key)?;
            }
            encode_value(v).map(|value| (a.header_name(), value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(props: Value) -> Value {
        json!({"type": "object", "properties": props})
    }

    #[test]
    fn modern_messages_get_the_standard_headers() {
        let body = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        assert_eq!(
            standard(body),
            [
                ("MCP-Protocol-Version".to_owned(), "2026-07-28".to_owned()),
                ("Mcp-Method".to_owned(), "tools/call".to_owned()),
                ("Mcp-Name".to_owned(), "add".to_owned()),
            ]
        );
        let read = br#"{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"file:///caf\u00e9","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        let h = standard(read);
        assert_eq!(h[2].0, "Mcp-Name");
        assert!(h[2].1.starts_with("=?base64?") && h[2].1.ends_with("?="), "{h:?}");
        let legacy = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        assert!(standard(legacy).is_empty());
        // A key spelled with escapes is still read.
        let escaped = br#"{"jsonrpc":"2.0","id":1,"method":"tools\/list","params":{"\u005fmeta":{"io.modelcontextprotocol\/protocolVersion":"2026-07-28"}}}"#;
        assert_eq!(
            standard(escaped),
            vec![
                ("MCP-Protocol-Version".to_owned(), "2026-07-28".to_owned()),
                ("Mcp-Method".to_owned(), "tools/list".to_owned())
            ]
        );
        assert!(standard(b"not json").is_empty());
    }

    #[test]
    fn values_are_mirrored_with_the_specs_encoding() {
        let schema = tool(json!({
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            "empty": {"type": "string", "x-mcp-header": "EmptyVal"},
            "non_ascii": {"type": "string", "x-mcp-header": "NonAscii"},
            "padded": {"type": "string", "x-mcp-header": "Whitespace"},
            "inner": {"type": "string", "x-mcp-header": "InternalSpace"},
            "ctl": {"type": "string", "x-mcp-header": "ControlChar"},
            "tab": {"type": "string", "x-mcp-header": "Tab"},
            "sentinel": {"type": "string", "x-mcp-header": "Sentinel"},
            "float": {"type": "number"},
            "query": {"type": "string"}
        }));
        let a = annotations(&schema).unwrap();
        let h = headers(
            &a,
            &json!({"region": "us-west1", "priority": 42, "verbose": false, "empty": "",
                    "non_ascii": "Hello, 世界", "padded": " padded ", "inner": "us west 1",
                    "ctl": "line1\nline2", "tab": "\tindented", "sentinel": "=?base64?eA==?=",
                    "float": 2.5, "query": "SELECT 1"}),
        );
        let get = |n: &str| h.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
        assert_eq!(get("Mcp-Param-Region"), Some("us-west1"));
        assert_eq!(get("Mcp-Param-Priority"), Some("42"));
        assert_eq!(get("Mcp-Param-Verbose"), Some("false"));
        assert_eq!(get("Mcp-Param-EmptyVal"), Some(""));
        assert_eq!(get("Mcp-Param-NonAscii"), Some("=?base64?SGVsbG8sIOS4lueVjA==?="));
        assert_eq!(get("Mcp-Param-Whitespace"), Some("=?base64?IHBhZGRlZCA=?="));
        assert_eq!(get("Mcp-Param-InternalSpace"), Some("us west 1"));
        assert_eq!(get("Mcp-Param-ControlChar"), Some("=?base64?bGluZTEKbGluZTI=?="));
        assert_eq!(get("Mcp-Param-Tab"), Some("=?base64?CWluZGVudGVk?="));
        assert!(get("Mcp-Param-Sentinel").unwrap().starts_with("=?base64?PT9i"));
        assert_eq!(h.len(), 10, "unannotated parameters are never mirrored: {h:?}");
        // Null and absent arguments send no header.
        let h = headers(&a, &json!({"region": "eu", "verbose": null}));
        assert_eq!(h, [("Mcp-Param-Region".to_owned(), "eu".to_owned())]);
    }

    #[test]
    fn each_broken_rule_is_named() {
        let bad = |props: Value| annotations(&tool(props)).unwrap_err().rule();
        assert_eq!(bad(json!({"a": {"type": "string", "x-mcp-header": ""}})), "not-empty");
        for kind in ["object", "array", "null", "number"] {
            assert_eq!(
                bad(json!({"a": {"type": kind, "x-mcp-header": "A"}})),
                "primitive-only",
                "{kind}"
            );
        }
        assert_eq!(
            bad(
                json!({"a": {"type": "string", "x-mcp-header": "Region"}, "b": {"type": "string", "x-mcp-header": "Region"}})
            ),
            "unique"
        );
        assert_eq!(
            bad(
                json!({"a": {"type": "string", "x-mcp-header": "MyField"}, "b": {"type": "string", "x-mcp-header": "myfield"}})
            ),
            "unique"
        );
        for name in ["My Region", "Region:Primary", "Région", "Region\t1"] {
            assert_eq!(
                bad(json!({"a": {"type": "string", "x-mcp-header": name}})),
                "charset",
                "{name:?}"
            );
        }
        let ok = annotations(&tool(json!({"a": {"type": ["string", "null"], "x-mcp-header": "A"},
            "nested": {"type": "object", "properties": {"b": {"type": "integer", "x-mcp-header": "B"}}}})))
        .unwrap();
        assert_eq!(ok[1].path, ["nested", "b"]);
        assert!(annotations(&json!({"type": "object"})).unwrap().is_empty());
    }
}
