//! The legacy-era `initialize` handshake and the judgement of its answer.

use crate::wire::message::ErrorObject;
use serde_json::{Value, json};
use std::time::Duration;

/// Revisions that begin with `initialize`, oldest first.
pub const SUPPORTED_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// What we offer unless told otherwise.
pub const DEFAULT_VERSION: &str = "2025-11-25";
/// The stateless revision without a handshake.
pub const MODERN_VERSION: &str = "2026-07-28";

pub fn is_supported(version: &str) -> bool {
    SUPPORTED_VERSIONS.contains(&version)
}

/// What the client says about itself in `initialize`.
#[derive(Clone, Debug)]
pub struct HandshakeOptions {
    pub protocol_version: String,
    pub capabilities: Value,
    pub client_name: String,
    pub client_version: String,
}

impl Default for HandshakeOptions {
    fn default() -> Self {
        Self {
            protocol_version: DEFAULT_VERSION.to_owned(),
            capabilities: json!({}),
            client_name: "mcpscope".to_owned(),
            client_version: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }
}

impl HandshakeOptions {
    pub fn params(&self) -> Value {
        json!({
            "protocolVersion": self.protocol_version,
            "capabilities": self.capabilities,
            "clientInfo": {"name": self.client_name, "version": self.client_version},
        })
    }
}

/// How the server answered the version we offered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VersionVerdict {
    /// It echoed our version.
    Accepted,
    /// It answered another version we also speak.
    CounterOffer,
    /// It answered a version we do not speak: the client should disconnect.
    Unsupported,
    /// The result had no string `protocolVersion`.
    Missing,
}

/// Everything learnt from `initialize`.
#[derive(Clone, Debug, PartialEq)]
pub struct Handshake {
    pub offered: String,
    pub answered: Option<String>,
    pub verdict: VersionVerdict,
    pub server_info: Option<Value>,
    pub capabilities: Option<Value>,
    pub instructions: Option<String>,
    pub latency: Duration,
    /// Fields the 2025-11-25 schema requires that the result lacks.
    pub missing_fields: Vec<&'static str>,
}

impl Handshake {
    pub fn judge(offered: &str, result: &Value, latency: Duration) -> Handshake {
        let answered = result.get("protocolVersion").and_then(Value::as_str).map(str::to_owned);
        let verdict = match answered.as_deref() {
            None => VersionVerdict::Missing,
            Some(v) if v == offered && is_supported(v) => VersionVerdict::Accepted,
            Some(v) if is_supported(v) => VersionVerdict::CounterOffer,
            Some(_) => VersionVerdict::Unsupported,
        };
        let missing_fields = ["protocolVersion", "capabilities", "serverInfo"]
            .into_iter()
            .filter(|k| result.get(*k).is_none())
            .collect();
        Handshake {
            offered: offered.to_owned(),
            answered,
            verdict,
            server_info: result.get("serverInfo").cloned(),
            capabilities: result.get("capabilities").cloned(),
            instructions: result.get("instructions").and_then(Value::as_str).map(str::to_owned),
            latency,
            missing_fields,
        }
    }

    /// Whether the session can go on after this answer.
    pub fn usable(&self) -> bool {
        matches!(self.verdict, VersionVerdict::Accepted | VersionVerdict::CounterOffer)
    }

    /// The negotiated version, when there is one.
    pub fn version(&self) -> Option<&str> {
        self.usable().then_some(self.answered.as_deref()).flatten()
    }

    /// One sentence on the version negotiation.
    pub fn verdict_text(&self) -> String {
        let answered = self.answered.as_deref().unwrap_or("nothing");
        match self.verdict {
            VersionVerdict::Accepted => format!("offered {}, server accepted it", self.offered),
            VersionVerdict::CounterOffer => format!(
                "offered {}, server counter-offered {answered} (supported, continuing with it)",
                self.offered
            ),
            VersionVerdict::Unsupported => format!(
                "offered {}, server answered {answered}, which mcpscope does not support ({})",
                self.offered,
                SUPPORTED_VERSIONS.join(", ")
            ),
            VersionVerdict::Missing => format!(
                "offered {}, but the initialize result has no protocolVersion",
                self.offered
            ),
        }
    }

    pub fn server_name(&self) -> String {
        let info = self.server_info.as_ref();
        let get = |k: &str| info.and_then(|i| i.get(k)).and_then(Value::as_str);
        match (get("name"), get("version")) {
            (Some(n), Some(v)) => format!("{n} {v}"),
            (Some(n), None) => n.to_owned(),
            _ => "(no serverInfo)".to_owned(),
        }
    }
}

/// An `initialize` that was refused with a JSON-RPC error: a modern-only
/// server names its versions in `data.supported`.
pub fn supported_from_error(e: &ErrorObject) -> Vec<String> {
    e.data
        .as_ref()
        .and_then(|d| d.get("supported"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts() {
        let ok = json!({"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}});
        let h = Handshake::judge("2025-11-25", &ok, Duration::ZERO);
        assert_eq!(h.verdict, VersionVerdict::Accepted);
        assert!(h.missing_fields.is_empty());
        assert_eq!(h.server_name(), "s 1");
        assert_eq!(h.version(), Some("2025-11-25"));

        let counter = json!({"protocolVersion":"2024-11-05","capabilities":{},"serverInfo":{"name":"s","version":"1"}});
        let h = Handshake::judge("2099-01-01", &counter, Duration::ZERO);
        assert_eq!(h.verdict, VersionVerdict::CounterOffer);
        assert!(h.verdict_text().contains("counter-offered 2024-11-05"));
        assert!(h.usable());

        let bogus = json!({"protocolVersion":"1999-01-01"});
        let h = Handshake::judge("2025-11-25", &bogus, Duration::ZERO);
        assert_eq!(h.verdict, VersionVerdict::Unsupported);
        assert!(!h.usable());
        assert_eq!(h.missing_fields, ["capabilities", "serverInfo"]);

        let h = Handshake::judge("2025-11-25", &json!({}), Duration::ZERO);
        assert_eq!(h.verdict, VersionVerdict::Missing);
    }

    #[test]
    fn offering_an_unknown_version_and_getting_it_echoed_is_unsupported() {
        let echo = json!({"protocolVersion":"2099-01-01","capabilities":{},"serverInfo":{"name":"s","version":"1"}});
        let h = Handshake::judge("2099-01-01", &echo, Duration::ZERO);
        assert_eq!(h.verdict, VersionVerdict::Unsupported);
    }

    #[test]
    fn supported_versions_from_a_refusal() {
        let e = ErrorObject {
            code: -32602,
            message: "Unsupported protocol version".into(),
            data: Some(json!({"supported":["2026-07-28"],"requested":"2025-11-25"})),
        };
        assert_eq!(supported_from_error(&e), ["2026-07-28"]);
    }
}
