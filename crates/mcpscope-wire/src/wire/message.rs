//! The JSON-RPC 2.0 message model, as MCP uses it.
//!
//! These types are for messages we *build*. Messages we *receive* are kept as
//! raw bytes and described by [`crate::wire::classify`], because a debugger must be
//! able to show a message that does not fit any of these types.

use serde_json::{Map, Value};
use std::fmt;

/// A request id: MCP allows strings and integers (never null).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RequestId {
    Number(i64),
    String(String),
}

impl RequestId {
    /// Reads an id from JSON; `None` for null, fractions, objects and the like.
    pub fn from_json(v: &Value) -> Option<Self> {
        match v {
            Value::Number(n) => n.as_i64().map(RequestId::Number),
            Value::String(s) => Some(RequestId::String(s.clone())),
            _ => None,
        }
    }

    pub fn to_json(&self) -> Value {
        match self {
            RequestId::Number(n) => Value::from(*n),
            RequestId::String(s) => Value::from(s.clone()),
        }
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::String(s.to_owned())
    }
}

/// Standard JSON-RPC and MCP error codes.
pub mod error_code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
    pub const URL_ELICITATION_REQUIRED: i64 = -32042;
    pub const HEADER_MISMATCH: i64 = -32020;
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

    /// A short name for a code, for display next to the number.
    pub fn name(code: i64) -> Option<&'static str> {
        Some(match code {
            PARSE_ERROR => "Parse error",
            INVALID_REQUEST => "Invalid Request",
            METHOD_NOT_FOUND => "Method not found",
            INVALID_PARAMS => "Invalid params",
            INTERNAL_ERROR => "Internal error",
            RESOURCE_NOT_FOUND => "Resource not found",
            URL_ELICITATION_REQUIRED => "URL elicitation required",
            HEADER_MISMATCH => "Header mismatch",
            MISSING_REQUIRED_CLIENT_CAPABILITY => "Missing required client capability",
            UNSUPPORTED_PROTOCOL_VERSION => "Unsupported protocol version",
            -32099..=-32000 => "Server error",
            _ => return None,
        })
    }
}

/// A JSON-RPC error object.
#[derive(Clone, Debug, PartialEq)]
pub struct ErrorObject {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl ErrorObject {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn from_json(v: &Value) -> Option<Self> {
        let o = v.as_object()?;
        Some(Self {
            code: o.get("code")?.as_i64()?,
            message: o.get("message").and_then(Value::as_str).unwrap_or_default().to_owned(),
            data: o.get("data").cloned(),
        })
    }

    pub fn to_json(&self) -> Value {
        let mut o = Map::new();
        o.insert("code".into(), self.code.into());
        o.insert("message".into(), self.message.clone().into());
        if let Some(d) = &self.data {
            o.insert("data".into(), d.clone());
        }
        Value::Object(o)
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match error_code::name(self.code) {
            Some(name) => write!(f, "{} ({name}): {}", self.code, self.message),
            None => write!(f, "{}: {}", self.code, self.message),
        }
    }
}

/// An outgoing JSON-RPC message.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    Request {
        id: RequestId,
        method: String,
        params: Option<Value>,
    },
    Notification {
        method: String,
        params: Option<Value>,
    },
    Result {
        id: RequestId,
        result: Value,
    },
    Error {
        id: Option<RequestId>,
        error: ErrorObject,
    },
}

impl Message {
    pub fn request(id: impl Into<RequestId>, method: &str, params: Option<Value>) -> Self {
        Message::Request {
            id: id.into(),
            method: method.to_owned(),
            params,
        }
    }

    pub fn notification(method: &str, params: Option<Value>) -> Self {
        Message::Notification {
            method: method.to_owned(),
            params,
        }
    }

    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request { method, .. } | Message::Notification { method, .. } => Some(method),
            _ => None,
        }
    }

    /// The message as a JSON value (the shape is its `Serialize`'s).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("a message of strings, numbers and Values always serialises")
    }

    /// Serialises to one line (no terminator). serde_json escapes control
    /// characters inside strings, so the output never contains a raw newline.
    pub fn to_line(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a message of strings, numbers and Values always serialises")
    }
}

/// Written straight from the message (a `Value` built first copied every
/// request's params). Field order follows the spec's examples: jsonrpc, id,
/// method, params.
impl serde::Serialize for Message {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        struct Id<'a>(&'a RequestId);
        impl serde::Serialize for Id<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self.0 {
                    RequestId::Number(n) => s.serialize_i64(*n),
                    RequestId::String(v) => s.serialize_str(v),
                }
            }
        }
        struct Error<'a>(&'a ErrorObject);
        impl serde::Serialize for Error<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("code", &self.0.code)?;
                m.serialize_entry("message", &self.0.message)?;
                if let Some(d) = &self.0.data {
                    m.serialize_entry("data", d)?;
                }
                m.end()
            }
        }
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("jsonrpc", "2.0")?;
        match self {
            Message::Request { id, method, params } => {
                m.serialize_entry("id", &Id(id))?;
                m.serialize_entry("method", method)?;
                if let Some(p) = params {
                    m.serialize_entry("params", p)?;
                }
            }
            Message::Notification { method, params } => {
                m.serialize_entry("method", method)?;
                if let Some(p) = params {
                    m.serialize_entry("params", p)?;
                }
            }
            Message::Result { id, result } => {
                m.serialize_entry("id", &Id(id))?;
                m.serialize_entry("result", result)?;
            }
            Message::Error { id, error } => {
                m.serialize_entry("id", &id.as_ref().map(Id))?;
                m.serialize_entry("error", &Error(error))?;
            }
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lines_never_contain_raw_newlines() {
        let m = Message::request(
            1,
            "tools/call",
            Some(json!({"name": "echo", "arguments": {"message": "a\nb\r\nc\u{2028}"}})),
        );
        let line = m.to_line();
        assert!(!line.contains(&b'\n'));
        assert!(!line.contains(&b'\r'));
        let back: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(back["params"]["arguments"]["message"], "a\nb\r\nc\u{2028}");
    }

    #[test]
    fn a_line_is_the_bytes_of_its_json_value() {
        let mut with_data = ErrorObject::new(-32602, "bad \"params\"\n");
        with_data.data = Some(json!({"z": 1, "a": [null, 2.5, "\u{1F600}"]}));
        let messages = [
            Message::request(
                7,
                "tools/call",
                Some(json!({"name": "echo", "arguments": {"b": 1, "a": "\u{0}"}})),
            ),
            Message::request("s-1", "ping", None),
            Message::notification("notifications/initialized", None),
            Message::notification("notifications/progress", Some(json!({"progress": 0.5}))),
            Message::Result {
                id: RequestId::Number(-3),
                result: json!({"content": [], "isError": false}),
            },
            Message::Error {
                id: None,
                error: ErrorObject::new(-32700, "parse error"),
            },
            Message::Error {
                id: Some("x".into()),
                error: with_data,
            },
        ];
        for m in messages {
            assert_eq!(m.to_line(), serde_json::to_vec(&m.to_json()).unwrap(), "{m:?}");
        }
    }

    #[test]
    fn field_order_and_shapes() {
        let m = Message::request("abc", "ping", None);
        assert_eq!(
            String::from_utf8(m.to_line()).unwrap(),
            r#"{"jsonrpc":"2.0","id":"abc","method":"ping"}"#
        );
        let n = Message::notification("notifications/initialized", None);
        assert_eq!(
            String::from_utf8(n.to_line()).unwrap(),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
        );
        let e = Message::Error {
            id: Some(3.into()),
            error: ErrorObject::new(error_code::METHOD_NOT_FOUND, "nope"),
        };
        assert_eq!(
            String::from_utf8(e.to_line()).unwrap(),
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"nope"}}"#
        );
    }

    #[test]
    fn request_ids() {
        assert_eq!(RequestId::from_json(&json!(5)), Some(RequestId::Number(5)));
        assert_eq!(RequestId::from_json(&json!("x")), Some(RequestId::String("x".into())));
        assert_eq!(RequestId::from_json(&json!(null)), None);
        assert_eq!(RequestId::from_json(&json!(1.5)), None);
        assert_eq!(RequestId::Number(5).to_string(), "5");
        assert_eq!(RequestId::String("5".into()).to_string(), "\"5\"");
    }

    #[test]
    fn error_display_names_the_code() {
        let e = ErrorObject::new(-32601, "Method not found: foo");
        assert_eq!(e.to_string(), "-32601 (Method not found): Method not found: foo");
    }
}
