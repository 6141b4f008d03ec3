//! The two protocol eras and how to tell which one a server speaks.
//!
//! * **Legacy**: the revisions that begin with `initialize` (2024-11-05 …
//!   2025-11-25), see [`crate::protocol::handshake`].
//! * **Modern**: 2026-07-28, stateless. No handshake: every request carries
//!   the protocol version, the client's capabilities and its info in
//!   `params._meta` (the *envelope*), `server/discover` says what the server
//!   supports, a version the server does not speak is refused with -32022 and
//!   the list it does speak, and every result carries `resultType`.
//!
//! This module is pure (no I/O): it builds envelopes and judges answers. The
//! blocking driver that probes and falls back is `mcpscope_core::client::Client::establish`;
//! the desktop app can call the same functions on its own timeline.

use crate::protocol::handshake::{self, Handshake, HandshakeOptions};
use crate::protocol::methods;
use crate::wire::message::{ErrorObject, error_code};
use serde_json::{Map, Value, json};
use std::fmt;
use std::str::FromStr;

/// `_meta` key: the protocol version of this request (required).
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities for this request (required).
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client's name and version (SHOULD).
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key: the log level wanted for this request (optional, deprecated).
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key of a result: who answered.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key of a notification on a `subscriptions/listen` stream.
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The stateless revisions, oldest first.
pub const MODERN_VERSIONS: [&str; 1] = [handshake::MODERN_VERSION];
/// What a modern request carries unless told otherwise.
pub const DEFAULT_MODERN_VERSION: &str = handshake::MODERN_VERSION;

/// Methods that exist only in the legacy era (removed in 2026-07-28).
pub const LEGACY_ONLY_METHODS: [&str; 10] = [
    methods::INITIALIZE,
    methods::INITIALIZED,
    methods::PING,
    methods::LOGGING_SET_LEVEL,
    methods::RESOURCES_SUBSCRIBE,
    methods::RESOURCES_UNSUBSCRIBE,
    methods::ROOTS_LIST_CHANGED,
    "notifications/elicitation/complete",
    methods::TASKS_LIST,
    methods::TASKS_RESULT,
];

/// Results that a modern server must mark cacheable (`ttlMs`, `cacheScope`).
pub const CACHEABLE_METHODS: [&str; 6] = [
    methods::SERVER_DISCOVER,
    methods::TOOLS_LIST,
    methods::PROMPTS_LIST,
    methods::RESOURCES_LIST,
    methods::RESOURCES_TEMPLATES_LIST,
    methods::RESOURCES_READ,
];

/// Which protocol family a session speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Era {
    /// `initialize` handshake (2024-11-05 … 2025-11-25).
    Legacy,
    /// Stateless, per-request `_meta` (2026-07-28).
    Modern,
}

impl Era {
    /// The era of a known revision; `None` for strings mcpscope does not know.
    /// Unknown strings are never ordered against known ones.
    pub fn of_version(version: &str) -> Option<Era> {
        if MODERN_VERSIONS.contains(&version) {
            Some(Era::Modern)
        } else if handshake::is_supported(version) {
            Some(Era::Legacy)
        } else {
            None
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
        }
    }

    /// For a person: "legacy (initialize handshake)".
    pub fn label(self) -> &'static str {
        match self {
            Era::Legacy => "legacy (initialize handshake, 2024-11-05 … 2025-11-25)",
            Era::Modern => "modern (stateless, 2026-07-28)",
        }
    }

    /// The versions mcpscope speaks in this era, oldest first.
    pub fn versions(self) -> &'static [&'static str] {
        match self {
            Era::Legacy => &handshake::SUPPORTED_VERSIONS,
            Era::Modern => &MODERN_VERSIONS,
        }
    }
}

impl fmt::Display for Era {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the user asked for: one era, or find out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum EraChoice {
    /// Always `initialize`.
    #[default]
    Legacy,
    /// Always the stateless envelope (probing with `server/discover`).
    Modern,
    /// Probe with `server/discover`; fall back to `initialize` when the
    /// answer is not a modern one.
    Auto,
}

impl EraChoice {
    pub fn as_str(self) -> &'static str {
        match self {
            EraChoice::Legacy => "legacy",
            EraChoice::Modern => "modern",
            EraChoice::Auto => "auto",
        }
    }

    /// The choice implied by an explicit protocol version: its era, or legacy
    /// for a string mcpscope does not know (to test counter-offers).
    pub fn implied_by_version(version: &str) -> EraChoice {
        match Era::of_version(version) {
            Some(Era::Modern) => EraChoice::Modern,
            _ => EraChoice::Legacy,
        }
    }
}

/// A name that is not an [`EraChoice`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown era {0:?}: legacy, modern or auto")]
pub struct UnknownEra(pub String);

impl FromStr for EraChoice {
    type Err = UnknownEra;
    fn from_str(s: &str) -> Result<Self, UnknownEra> {
        match s.to_ascii_lowercase().as_str() {
            "legacy" => Ok(EraChoice::Legacy),
            "modern" => Ok(EraChoice::Modern),
            "auto" => Ok(EraChoice::Auto),
            other => Err(UnknownEra(other.to_owned())),
        }
    }
}

impl fmt::Display for EraChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a modern request says about the client, in `params._meta`.
#[derive(Clone, Debug, PartialEq)]
pub struct Envelope {
    pub protocol_version: String,
    pub capabilities: Value,
    pub client_name: String,
    pub client_version: String,
    /// Deprecated `logLevel`; sent only when set.
    pub log_level: Option<String>,
}

impl Default for Envelope {
    fn default() -> Self {
        Self::from_handshake(&HandshakeOptions {
            protocol_version: DEFAULT_MODERN_VERSION.to_owned(),
            ..HandshakeOptions::default()
        })
    }
}

impl Envelope {
    /// The same client, described for the modern era.
    pub fn from_handshake(h: &HandshakeOptions) -> Self {
        Self {
            protocol_version: h.protocol_version.clone(),
            capabilities: h.capabilities.clone(),
            client_name: h.client_name.clone(),
            client_version: h.client_version.clone(),
            log_level: None,
        }
    }

    /// The `_meta` members of the envelope.
    pub fn meta(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert(META_PROTOCOL_VERSION.into(), self.protocol_version.clone().into());
        m.insert(META_CLIENT_CAPABILITIES.into(), self.capabilities.clone());
        m.insert(
            META_CLIENT_INFO.into(),
            json!({"name": self.client_name, "version": self.client_version}),
        );
        if let Some(level) = &self.log_level {
            m.insert(META_LOG_LEVEL.into(), level.clone().into());
        }
        m
    }

    /// `params` with the envelope added to `_meta` (members already in
    /// `_meta`, e.g. a `progressToken`, are kept; envelope keys are replaced).
    /// Params that are not an object are returned unchanged: a debugger sends
    /// what it was told to.
    pub fn wrap(&self, params: Option<Value>) -> Value {
        let mut params = params.unwrap_or_else(|| json!({}));
        let Some(obj) = params.as_object_mut() else {
            return params;
        };
        let meta = obj.entry("_meta").or_insert_with(|| json!({}));
        if let Some(m) = meta.as_object_mut() {
            for (k, v) in self.meta() {
                m.insert(k, v);
            }
        }
        params
    }

    /// The params of `server/discover`.
    pub fn discover_params(&self) -> Value {
        self.wrap(None)
    }
}

/// The protocol version a request's `_meta` names, if any.
pub fn request_version(params: &Value) -> Option<&str> {
    params.get("_meta")?.get(META_PROTOCOL_VERSION)?.as_str()
}

/// Which required envelope members a request's params lack.
pub fn missing_envelope(params: Option<&Value>) -> Vec<&'static str> {
    let meta = params.and_then(|p| p.get("_meta"));
    [META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES]
        .into_iter()
        .filter(|k| meta.and_then(|m| m.get(*k)).is_none())
        .collect()
}

/// What `server/discover` answered.
#[derive(Clone, Debug, PartialEq)]
pub struct Discovery {
    pub supported_versions: Vec<String>,
    pub capabilities: Option<Value>,
    pub instructions: Option<String>,
    pub server_info: Option<Value>,
    pub ttl_ms: Option<u64>,
    pub cache_scope: Option<String>,
    /// Fields the 2026-07-28 schema requires that the result lacks.
    pub missing_fields: Vec<&'static str>,
}

impl Discovery {
    /// Reads a `server/discover` result; `None` when it is not one (no
    /// `supportedVersions` array), which is how a server of another kind
    /// answering the method by accident is told apart.
    pub fn from_result(result: &Value) -> Option<Discovery> {
        let supported = result.get("supportedVersions")?.as_array()?;
        let missing_fields = ["supportedVersions", "capabilities", "ttlMs", "cacheScope", "resultType"]
            .into_iter()
            .filter(|k| result.get(*k).is_none())
            .collect();
        Some(Discovery {
            supported_versions: supported.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
            capabilities: result.get("capabilities").cloned(),
            instructions: result.get("instructions").and_then(Value::as_str).map(str::to_owned),
            server_info: result.pointer(&meta_pointer(META_SERVER_INFO)).cloned(),
            ttl_ms: result.get("ttlMs").and_then(Value::as_u64),
            cache_scope: result.get("cacheScope").and_then(Value::as_str).map(str::to_owned),
            missing_fields,
        })
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

    /// The modern versions both sides speak, newest first.
    pub fn modern_versions(&self) -> Vec<String> {
        pick_versions(&MODERN_VERSIONS, &self.supported_versions)
    }
}

/// A JSON pointer to a `_meta` member (escaping the `/` in its key).
pub fn meta_pointer(key: &str) -> String {
    format!("/_meta/{}", key.replace('~', "~0").replace('/', "~1"))
}

/// The versions in both lists, newest of ours first (never ordering strings
/// mcpscope does not know).
pub fn pick_versions(ours: &[&str], theirs: &[String]) -> Vec<String> {
    ours.iter()
        .rev()
        .filter(|v| theirs.iter().any(|t| t == *v))
        .map(|v| (*v).to_owned())
        .collect()
}

/// The newest version both sides speak, across both eras: modern first.
pub fn mutual_version(theirs: &[String]) -> Option<String> {
    pick_versions(&MODERN_VERSIONS, theirs)
        .into_iter()
        .chain(pick_versions(&handshake::SUPPORTED_VERSIONS, theirs))
        .next()
}

/// The newest modern version both sides speak: what a -32022 is retried with.
pub fn best_modern_version(theirs: &[String]) -> Option<String> {
    pick_versions(&MODERN_VERSIONS, theirs).into_iter().next()
}

/// `data.supported` of a -32022 (or of a refused `initialize`).
pub fn supported_versions(e: &ErrorObject) -> Vec<String> {
    handshake::supported_from_error(e)
}

/// How the answer to a `server/discover` probe is read.
#[derive(Clone, Debug, PartialEq)]
pub enum ProbeVerdict {
    /// A discover result: the server speaks the modern era.
    Modern(Discovery),
    /// -32022: modern, but not this version. Retry with `version` (mutually
    /// supported); `None` when there is none, and the server's list says
    /// whether it is modern at all.
    UnsupportedVersion {
        requested: String,
        supported: Vec<String>,
        retry_with: Option<String>,
    },
    /// A recognised modern error other than -32022 (-32020, -32021): the
    /// server is modern but refused this probe.
    ModernError(ErrorObject),
    /// Anything else: fall back to `initialize`. The string says why.
    Legacy(String),
}

impl ProbeVerdict {
    /// Reads the outcome of a `server/discover` sent with `offered`:
    /// `Ok(result)`, `Err(error)`, or `None` when no answer came (timeout,
    /// closed, transport failure; `why` says which).
    pub fn judge(offered: &str, outcome: Option<&Result<Value, ErrorObject>>, why_none: &str) -> ProbeVerdict {
        match outcome {
            None => ProbeVerdict::Legacy(format!("no answer to server/discover ({why_none}): legacy server")),
            Some(Ok(result)) => match Discovery::from_result(result) {
                Some(d) => ProbeVerdict::Modern(d),
                None => ProbeVerdict::Legacy(format!(
                    "server/discover answered without supportedVersions ({}): not a modern server",
                    crate::text::shorten(&result.to_string(), 120)
                )),
            },
            Some(Err(e)) if e.code == error_code::UNSUPPORTED_PROTOCOL_VERSION => {
                let supported = supported_versions(e);
                let retry_with = pick_versions(&MODERN_VERSIONS, &supported)
                    .into_iter()
                    .find(|v| v != offered);
                ProbeVerdict::UnsupportedVersion {
                    requested: offered.to_owned(),
                    supported,
                    retry_with,
                }
            }
            Some(Err(e))
                if matches!(
                    e.code,
                    error_code::HEADER_MISMATCH | error_code::MISSING_REQUIRED_CLIENT_CAPABILITY
                ) =>
            {
                ProbeVerdict::ModernError(e.clone())
            }
            Some(Err(e)) => ProbeVerdict::Legacy(format!(
                "{} to server/discover: legacy server",
                match e.code {
                    error_code::METHOD_NOT_FOUND => "-32601 (Method not found)".to_owned(),
                    code => format!("error {code} ({})", crate::text::shorten(&e.message, 80)),
                }
            )),
        }
    }
}

/// The era a session settled on, and why: what a UI shows next to the server.
#[derive(Clone, Debug, PartialEq)]
pub struct EraDecision {
    pub choice: EraChoice,
    pub era: Era,
    /// The version in use: negotiated by `initialize`, or sent in `_meta`.
    pub version: String,
    /// One sentence: "server/discover answered: modern server" or
    /// "-32601 to server/discover: legacy server".
    pub reason: String,
    /// What happened on the way (a -32022 retry, …), also on the timeline as notes.
    pub notes: Vec<String>,
    pub discovery: Option<Discovery>,
    pub handshake: Option<Handshake>,
}

impl EraDecision {
    /// "modern 2026-07-28 (auto: server/discover answered …)"
    pub fn summary(&self) -> String {
        format!("{} {} ({}: {})", self.era, self.version, self.choice, self.reason)
    }

    pub fn server_name(&self) -> String {
        match (&self.discovery, &self.handshake) {
            (Some(d), _) => d.server_name(),
            (None, Some(h)) => h.server_name(),
            _ => "(unknown server)".into(),
        }
    }

    pub fn server_capabilities(&self) -> Option<&Value> {
        match (&self.discovery, &self.handshake) {
            (Some(d), _) => d.capabilities.as_ref(),
            (None, Some(h)) => h.capabilities.as_ref(),
            _ => None,
        }
    }

    pub fn instructions(&self) -> Option<&str> {
        match (&self.discovery, &self.handshake) {
            (Some(d), _) => d.instructions.as_deref(),
            (None, Some(h)) => h.instructions.as_deref(),
            _ => None,
        }
    }
}

/// Why no era could be settled on.
#[derive(Clone, Debug, PartialEq)]
pub enum EraFailure {
    /// `initialize` was refused with a JSON-RPC error (a modern-only server
    /// names its versions in `data.supported`).
    InitializeRefused(ErrorObject),
    /// `initialize` answered with a version mcpscope cannot use.
    Handshake(Box<Handshake>),
    /// The modern era was asked for and the server does not speak it, or
    /// refused `server/discover`; the string says why.
    NotModern(String),
    /// `initialize` (or the probe) got no answer at all: the string says why.
    NoAnswer { method: String, why: String },
}

impl fmt::Display for EraFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EraFailure::InitializeRefused(e) => {
                write!(f, "initialize was refused: {e}")?;
                let supported = handshake::supported_from_error(e);
                if !supported.is_empty() {
                    write!(f, "; the server supports: {}", supported.join(", "))?;
                    if supported.iter().any(|v| Era::of_version(v) == Some(Era::Modern)) {
                        write!(f, " (a modern server: try --era modern or --era auto)")?;
                    }
                }
                Ok(())
            }
            EraFailure::Handshake(h) => write!(f, "handshake failed: {}", h.verdict_text()),
            EraFailure::NotModern(why) => write!(f, "the server does not speak the modern era: {why}"),
            EraFailure::NoAnswer { method, why } => write!(f, "{method} {why}"),
        }
    }
}

impl std::error::Error for EraFailure {}

/// The note put on the timeline when a -32022 is not (or no longer) answered
/// by a retry: what was offered, what the server said, and why we stop.
pub fn unsupported_note(method: &str, offered: &str, supported: &[String], retries: u32) -> String {
    let theirs = if supported.is_empty() {
        "without naming the versions it supports".to_owned()
    } else {
        format!("supporting {}", supported.join(", "))
    };
    let why = if retries > 0 {
        format!("after {retries} retry, mcpscope stops")
    } else if best_modern_version(supported).is_none() {
        format!("no version in common with mcpscope's {}", MODERN_VERSIONS.join(", "))
    } else {
        "mcpscope stops".to_owned()
    };
    format!("{method}: offered {offered}, the server answered -32022 {theirs}; {why}")
}

/// The `resultType` of a result: absent means `complete` (older servers).
pub fn result_type(result: &Value) -> &str {
    result.get("resultType").and_then(Value::as_str).unwrap_or("complete")
}

/// The note put on the timeline when a -32022 is answered by a retry.
pub fn retry_note(method: &str, requested: &str, supported: &[String], retry_with: &str) -> String {
    format!(
        "{method} was refused with -32022 (unsupported protocol version {requested}); the server supports {}: \
         retrying with {retry_with}",
        if supported.is_empty() {
            "(no list given)".to_owned()
        } else {
            supported.join(", ")
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eras_of_versions() {
        assert_eq!(Era::of_version("2026-07-28"), Some(Era::Modern));
        assert_eq!(Era::of_version("2025-11-25"), Some(Era::Legacy));
        assert_eq!(Era::of_version("2024-11-05"), Some(Era::Legacy));
        assert_eq!(Era::of_version("2099-01-01"), None);
        assert_eq!(EraChoice::implied_by_version("2026-07-28"), EraChoice::Modern);
        assert_eq!(EraChoice::implied_by_version("2099-01-01"), EraChoice::Legacy);
        assert_eq!("AUTO".parse::<EraChoice>(), Ok(EraChoice::Auto));
        assert!("x".parse::<EraChoice>().is_err());
    }

    #[test]
    fn the_envelope_goes_into_meta_and_keeps_what_was_there() {
        let env = Envelope {
            capabilities: json!({"elicitation": {"form": {}}}),
            ..Envelope::default()
        };
        let p = env.wrap(Some(json!({"name": "add", "_meta": {"progressToken": 7}})));
        assert_eq!(p["name"], "add");
        assert_eq!(p["_meta"]["progressToken"], 7);
        assert_eq!(p["_meta"][META_PROTOCOL_VERSION], "2026-07-28");
        assert_eq!(p["_meta"][META_CLIENT_CAPABILITIES]["elicitation"], json!({"form": {}}));
        assert_eq!(p["_meta"][META_CLIENT_INFO]["name"], "mcpscope");
        assert!(p["_meta"].get(META_LOG_LEVEL).is_none());
        assert_eq!(request_version(&p), Some("2026-07-28"));
        assert!(missing_envelope(Some(&p)).is_empty());
        assert_eq!(missing_envelope(None).len(), 2);
        assert_eq!(
            missing_envelope(Some(&json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28"}}))),
            [META_CLIENT_CAPABILITIES]
        );
        // Not an object: sent as it is.
        assert_eq!(env.wrap(Some(json!([1]))), json!([1]));
        assert!(env.discover_params()["_meta"].is_object());
    }

    #[test]
    fn discovery_reads_the_result() {
        let r = json!({"resultType":"complete","supportedVersions":["2026-07-28","2099-01-01"],
            "capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"private",
            "_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"2"}}});
        let d = Discovery::from_result(&r).unwrap();
        assert_eq!(d.server_name(), "s 2");
        assert!(d.missing_fields.is_empty());
        assert_eq!(d.modern_versions(), ["2026-07-28"]);
        let d = Discovery::from_result(&json!({"supportedVersions":[]})).unwrap();
        assert_eq!(d.missing_fields, ["capabilities", "ttlMs", "cacheScope", "resultType"]);
        assert!(Discovery::from_result(&json!({})).is_none());
    }

    #[test]
    fn probe_verdicts() {
        let ok = Ok(json!({"supportedVersions":["2026-07-28"],"capabilities":{}}));
        assert!(matches!(
            ProbeVerdict::judge("2026-07-28", Some(&ok), ""),
            ProbeVerdict::Modern(_)
        ));

        let e = ErrorObject {
            code: -32022,
            message: "Unsupported protocol version".into(),
            data: Some(json!({"supported":["2026-07-28"],"requested":"2099-01-01"})),
        };
        match ProbeVerdict::judge("2099-01-01", Some(&Err(e.clone())), "") {
            ProbeVerdict::UnsupportedVersion {
                retry_with, supported, ..
            } => {
                assert_eq!(retry_with.as_deref(), Some("2026-07-28"));
                assert_eq!(supported, ["2026-07-28"]);
            }
            other => panic!("{other:?}"),
        }
        // Never retry with the version that was just refused.
        match ProbeVerdict::judge("2026-07-28", Some(&Err(e)), "") {
            ProbeVerdict::UnsupportedVersion { retry_with, .. } => assert_eq!(retry_with, None),
            other => panic!("{other:?}"),
        }

        let nf = Err(ErrorObject::new(-32601, "Method not found"));
        match ProbeVerdict::judge("2026-07-28", Some(&nf), "") {
            ProbeVerdict::Legacy(why) => assert_eq!(why, "-32601 (Method not found) to server/discover: legacy server"),
            other => panic!("{other:?}"),
        }
        let other = Err(ErrorObject::new(-32600, "Server not initialized"));
        assert!(matches!(
            ProbeVerdict::judge("2026-07-28", Some(&other), ""),
            ProbeVerdict::Legacy(w) if w.contains("-32600")
        ));
        assert!(matches!(
            ProbeVerdict::judge("2026-07-28", None, "timed out"),
            ProbeVerdict::Legacy(w) if w.contains("timed out")
        ));
        let cap = Err(ErrorObject::new(-32021, "missing capability"));
        assert!(matches!(
            ProbeVerdict::judge("2026-07-28", Some(&cap), ""),
            ProbeVerdict::ModernError(_)
        ));
        let not_discover = Ok(json!({}));
        assert!(matches!(
            ProbeVerdict::judge("2026-07-28", Some(&not_discover), ""),
            ProbeVerdict::Legacy(_)
        ));
    }

    #[test]
    fn versions_in_common() {
        let theirs = vec!["2025-06-18".to_owned(), "2026-07-28".to_owned(), "zzz".to_owned()];
        assert_eq!(mutual_version(&theirs).as_deref(), Some("2026-07-28"));
        assert_eq!(
            mutual_version(&["2025-06-18".to_owned()]).as_deref(),
            Some("2025-06-18")
        );
        assert_eq!(mutual_version(&["zzz".to_owned()]), None);
        assert_eq!(result_type(&json!({})), "complete");
        assert_eq!(result_type(&json!({"resultType":"input_required"})), "input_required");
        assert_eq!(
            meta_pointer(META_SERVER_INFO),
            "/_meta/io.modelcontextprotocol~1serverInfo"
        );
    }
}
