//! Where a session's server is: a child process spoken to over stdio, or a
//! URL spoken to over Streamable HTTP (2025-11-25) or the older HTTP+SSE
//! transport (2024-11-05). The session produces the same events for all of
//! them; see [`crate::transport::session`] and [`crate::transport::http`].

use crate::transport::process::{ServerSpec, shell_quote};
use std::time::Duration;

/// What a session connects to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// Start this command and speak newline-delimited JSON-RPC on its stdio.
    Stdio(ServerSpec),
    /// Speak to a server that is already running, over HTTP.
    Http(HttpTarget),
}

impl Target {
    /// One line for a person: the command line, or the URL and transport.
    pub fn display(&self) -> String {
        match self {
            Target::Stdio(spec) => spec.display(),
            Target::Http(h) => h.display(),
        }
    }
}

impl From<ServerSpec> for Target {
    fn from(spec: ServerSpec) -> Self {
        Target::Stdio(spec)
    }
}

impl From<HttpTarget> for Target {
    fn from(h: HttpTarget) -> Self {
        Target::Http(h)
    }
}

/// How a running server is reached over HTTP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpKind {
    StreamableHttp,
    /// The older HTTP+SSE transport, still common in deployed servers.
    Sse,
}

impl HttpKind {
    /// The name used by `--transport` and in captures.
    pub fn as_str(self) -> &'static str {
        match self {
            HttpKind::StreamableHttp => "http",
            HttpKind::Sse => "sse",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            HttpKind::StreamableHttp => "Streamable HTTP",
            HttpKind::Sse => "HTTP+SSE (2024-11-05)",
        }
    }
}

/// The access token an authorizer obtained, shared with the HTTP runner,
/// which sends it as `Authorization: Bearer …` with every request (unless
/// the user gave an `Authorization` header), or, for a DPoP-bound token,
/// as `Authorization: DPoP …` with a fresh proof of the key. Updated in
/// place, so a new token applies to the next request without a new
/// session. Never shown: its `Debug` is masked, and two slots are equal
/// only when they are the same.
#[derive(Clone, Default)]
pub struct BearerSlot(std::sync::Arc<std::sync::Mutex<SlotState>>);

#[derive(Default)]
struct SlotState {
    token: Option<String>,
    /// Set when the token is bound to this key (its type is DPoP).
    dpop: Option<std::sync::Arc<crate::protocol::auth::dpop::DpopKey>>,
    /// The resource server's latest `DPoP-Nonce` (RFC 9449 §9).
    nonce: Option<String>,
}

/// What goes with a request: the token, and the key it is bound to.
#[derive(Clone)]
pub struct Credential {
    pub token: String,
    pub dpop: Option<std::sync::Arc<crate::protocol::auth::dpop::DpopKey>>,
    pub nonce: Option<String>,
}

impl BearerSlot {
    fn state(&self) -> std::sync::MutexGuard<'_, SlotState> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn get(&self) -> Option<String> {
        self.state().token.clone()
    }

    /// A Bearer token (or none).
    pub fn set(&self, token: Option<String>) {
        self.set_bound(token, None);
    }

    /// A token, bound to `dpop` when given.
    pub fn set_bound(&self, token: Option<String>, dpop: Option<std::sync::Arc<crate::protocol::auth::dpop::DpopKey>>) {
        let mut st = self.state();
        st.token = token;
        st.dpop = dpop;
    }

    pub fn credential(&self) -> Option<Credential> {
        let st = self.state();
        Some(Credential {
            token: st.token.clone()?,
            dpop: st.dpop.clone(),
            nonce: st.nonce.clone(),
        })
    }

    /// A `DPoP-Nonce` the server sent: the next proofs carry it.
    pub fn set_nonce(&self, nonce: String) {
        self.state().nonce = Some(nonce);
    }

    pub fn is_set(&self) -> bool {
        self.state().token.is_some()
    }

    /// Whether the token is DPoP-bound and a nonce from the server is at hand.
    pub fn has_dpop_nonce(&self) -> bool {
        let st = self.state();
        st.dpop.is_some() && st.nonce.is_some()
    }
}

impl std::fmt::Debug for BearerSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.is_set() {
            "BearerSlot(****)"
        } else {
            "BearerSlot(empty)"
        })
    }
}

impl PartialEq for BearerSlot {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for BearerSlot {}

/// A server reached over HTTP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpTarget {
    /// The MCP endpoint (Streamable HTTP) or the SSE endpoint (HTTP+SSE).
    pub url: String,
    pub kind: HttpKind,
    /// Extra headers sent with every request, e.g. `Authorization: Bearer …`.
    /// Their values are masked wherever they are shown or recorded.
    pub headers: Vec<(String, String)>,
    /// Streamable HTTP: open the GET stream for server-initiated messages once
    /// the handshake is done (a server answering 405 simply does not offer it).
    pub open_get_stream: bool,
    /// How long to wait for a TCP (and TLS) connection.
    pub connect_timeout: Duration,
    /// How many times a broken SSE stream is reopened before giving up.
    pub max_reconnects: u32,
    /// Wait before reconnecting when the server gave no `retry:`.
    pub default_retry: Duration,
    /// The OAuth access token to send, once an authorizer has one.
    pub bearer: BearerSlot,
}

impl HttpTarget {
    pub fn new(url: impl Into<String>, kind: HttpKind) -> Self {
        Self {
            url: url.into(),
            kind,
            headers: Vec::new(),
            open_get_stream: true,
            connect_timeout: Duration::from_secs(10),
            max_reconnects: 3,
            default_retry: Duration::from_millis(1000),
            bearer: BearerSlot::default(),
        }
    }

    pub fn streamable(url: impl Into<String>) -> Self {
        Self::new(url, HttpKind::StreamableHttp)
    }

    pub fn sse(url: impl Into<String>) -> Self {
        Self::new(url, HttpKind::Sse)
    }

    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The URL (credentials masked), the transport and the extra headers (values masked).
    pub fn display(&self) -> String {
        let mut s = format!("{} ({})", mask_url(&self.url), self.kind.label());
        for (k, v) in &self.headers {
            s.push_str(&format!(" -H {}", shell_quote(&format!("{k}: {}", mask_value(v)))));
        }
        s
    }

    /// The extra headers as they may be shown: values masked.
    pub fn masked_headers(&self) -> Vec<(String, String)> {
        self.headers.iter().map(|(k, v)| (k.clone(), mask_value(v))).collect()
    }
}

pub use crate::text::mask_value;

/// Query parameters whose values are secrets (compared without case, `-`, `_`, `.`).
const SECRET_PARAMS: &[&str] = &["key", "pwd", "pass", "sig", "code", "jwt", "bearer"];
/// ...and parts of names that make a parameter a secret.
const SECRET_PARTS: &[&str] = &[
    "token",
    "secret",
    "password",
    "passwd",
    "apikey",
    "signature",
    "credential",
    "auth",
    "privatekey",
];

/// Whether a query parameter's (or a variable's) name says its value is a secret.
pub(crate) fn secret_param(name: &str) -> bool {
    let n: String = name
        .chars()
        .filter(|c| !matches!(c, '-' | '_' | '.'))
        .flat_map(char::to_lowercase)
        .collect();
    SECRET_PARAMS.contains(&n.as_str()) || SECRET_PARTS.iter().any(|p| n.contains(p))
}

/// A URL as it may be shown or recorded: userinfo (`alice:pw@`) and the
/// values of secret-looking query parameters (`token`, `api_key`,
/// `access_token`, `password`, `sig`…) become `****`. Anything else is
/// returned exactly as given.
pub fn mask_url(url: &str) -> String {
    // A session masks its one URL for every request it records: parsing it
    // each time was a few percent of a fast run.
    thread_local! {
        static LAST: std::cell::RefCell<Option<(String, String)>> = const { std::cell::RefCell::new(None) };
    }
    LAST.with_borrow_mut(|last| match last {
        Some((was, masked)) if was == url => masked.clone(),
        _ => {
            let masked = mask_url_uncached(url);
            *last = Some((url.to_owned(), masked.clone()));
            masked
        }
    })
}

fn mask_url_uncached(url: &str) -> String {
    let Ok(mut u) = url::Url::parse(url) else {
        return mask_userinfo_text(url);
    };
    let mut masked = false;
    if !u.username().is_empty() || u.password().is_some() {
        let _ = u.set_password(None);
        let _ = u.set_username("****");
        masked = true;
    }
    if u.query_pairs().any(|(k, _)| secret_param(&k)) {
        let pairs: Vec<(String, String)> = u
            .query_pairs()
            .map(|(k, v)| {
                let v = if secret_param(&k) {
                    "****".to_owned()
                } else {
                    v.into_owned()
                };
                (k.into_owned(), v)
            })
            .collect();
        u.query_pairs_mut().clear().extend_pairs(pairs);
        masked = true;
    }
    if masked { u.to_string() } else { url.to_owned() }
}

/// `scheme://user:pass@host…` in text that is not a parseable URL.
fn mask_userinfo_text(s: &str) -> String {
    let Some(start) = s.find("://").map(|i| i + 3) else {
        return s.to_owned();
    };
    let rest = &s[start..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{}****{}", &s[..start], &rest[at..]),
        None => s.to_owned(),
    }
}

/// A `--header` that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error("expected NAME:VALUE, got {0:?}")]
    NoSeparator(String),
    #[error("{0:?} is not a valid HTTP header name")]
    BadName(String),
    #[error("a header value cannot contain a line break")]
    LineBreak,
}

/// Parses `Name: value` (or `Name=value`) as given to `--header`.
pub fn parse_header(s: &str) -> Result<(String, String), HeaderError> {
    let (k, v) = s
        .split_once(':')
        .or_else(|| s.split_once('='))
        .ok_or_else(|| HeaderError::NoSeparator(s.to_owned()))?;
    let k = k.trim();
    if k.is_empty() || !k.bytes().all(|b| b.is_ascii_graphic() && b != b':') {
        return Err(HeaderError::BadName(k.to_owned()));
    }
    let v = v.trim();
    if v.bytes().any(|b| b == b'\r' || b == b'\n') {
        return Err(HeaderError::LineBreak);
    }
    Ok((k.to_owned(), v.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_keep_the_scheme_only() {
        assert_eq!(mask_value("Bearer abc.def"), "Bearer ****");
        assert_eq!(mask_value("Basic dXNlcjpwYXNz"), "Basic ****");
        assert_eq!(mask_value("sk-12345"), "****");
        assert_eq!(mask_value("two words but=not a scheme"), "two ****");
        assert_eq!(mask_value("a=b c"), "****");
        assert_eq!(mask_value(""), "");
    }

    #[test]
    fn bearer_slots_are_shared_and_masked() {
        let t = HttpTarget::streamable("http://127.0.0.1:1/mcp");
        let copy = t.clone();
        t.bearer.set(Some("secret-token".into()));
        assert_eq!(copy.bearer.get().as_deref(), Some("secret-token"));
        assert_eq!(t, copy);
        assert_ne!(t, HttpTarget::streamable("http://127.0.0.1:1/mcp"));
        let dbg = format!("{t:?}");
        assert!(
            !dbg.contains("secret-token") && dbg.contains("BearerSlot(****)"),
            "{dbg}"
        );
        assert!(!t.display().contains("secret-token"));
    }

    #[test]
    fn headers_parse() {
        assert_eq!(
            parse_header("Authorization: Bearer x:y").unwrap(),
            ("Authorization".into(), "Bearer x:y".into())
        );
        assert_eq!(parse_header("X-Key=v").unwrap(), ("X-Key".into(), "v".into()));
        assert!(parse_header("novalue").is_err());
        assert!(parse_header(": v").is_err());
        assert!(parse_header("bad name: v").is_err());
    }

    #[test]
    fn urls_lose_their_credentials_when_shown() {
        assert_eq!(
            mask_url("http://alice:pw@host:8080/mcp?token=abc&x=1"),
            "http://****@host:8080/mcp?token=****&x=1"
        );
        assert_eq!(
            mask_url("https://h/mcp?api_key=1&Access-Token=2&page=3"),
            "https://h/mcp?api_key=****&Access-Token=****&page=3"
        );
        assert_eq!(
            mask_url("http://127.0.0.1:1/mcp?sessionId=abc"),
            "http://127.0.0.1:1/mcp?sessionId=abc"
        );
        // Untouched when there is nothing to mask (no normalisation either).
        assert_eq!(mask_url("http://host"), "http://host");
        assert_eq!(
            mask_url("not a url: http://bob:secret@h/x"),
            "not a url: http://****@h/x"
        );
        let t = HttpTarget::streamable("http://alice:pw@h/mcp?token=zzz");
        let d = t.display();
        assert!(!d.contains("pw") && !d.contains("zzz") && !d.contains("alice"), "{d}");
    }

    #[test]
    fn display_masks_header_values() {
        let t = HttpTarget::streamable("http://127.0.0.1:1/mcp").with_header("Authorization", "Bearer secret");
        let d = t.display();
        assert!(d.contains("Bearer ****"), "{d}");
        assert!(!d.contains("secret"), "{d}");
        assert!(d.contains("Streamable HTTP"), "{d}");
    }
}
