//! The MCP authorization client (OAuth 2.1 as the MCP specification profiles
//! it: 2025-11-25, with the 2025-03-26 fallbacks and the 2026-07-28 changes),
//! as pure logic: no sockets, no files, no clock and no randomness of its own.
//!
//! - [`challenge`]: `WWW-Authenticate` parsing, and what a 401/403 asks for;
//! - [`discovery`]: where protected resource and authorization server
//!   metadata live (RFC 9728, RFC 8414, OpenID Connect discovery), and
//!   whether a document may be used;
//! - [`registration`]: which client identity to use (pre-registered, a
//!   Client ID Metadata Document, dynamic registration);
//! - [`scopes`]: which scopes to ask for, and step-up;
//! - [`pkce`]: the code verifier, its S256 challenge and `state`;
//! - [`authorize`]: the authorization URL and the callback's checks (state, RFC 9207 `iss`);
//! - [`token`]: token requests for every grant and client authentication;
//! - [`jwt`]: client assertions (ES256/RS256 via `ring`) and decoding tokens for display;
//! - [`mask`]: what of an exchange may be recorded;
//! - [`flow`]: the state machine that ties them together (responses in,
//!   requests and outcomes out), driven by `transport::auth`.

pub mod authorize;
pub mod challenge;
pub mod discovery;
pub mod dpop;
pub mod flow;
pub mod jwt;
pub mod mask;
pub mod pkce;
pub mod registration;
pub mod scopes;
pub mod token;

use std::fmt;

/// A step of the authorization, as the timeline labels it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Step {
    /// The MCP server's 401/403 that started (or continued) the authorization.
    Challenge,
    /// Protected resource metadata (RFC 9728).
    ResourceMetadata,
    /// Authorization server metadata (RFC 8414 / OpenID Connect discovery).
    ServerMetadata,
    /// Dynamic client registration (RFC 7591).
    Registration,
    /// The authorization request (the browser's first stop).
    Authorize,
    /// The redirect back to mcpscope with the code.
    Callback,
    /// A token request at the authorization server.
    Token,
    /// A token exchange at the enterprise identity provider (ID-JAG).
    IdpTokenExchange,
    /// The original MCP request, sent again with the new token.
    Retry,
    /// The authorization gave up.
    Failed,
}

impl Step {
    pub const ALL: [Step; 10] = [
        Step::Challenge,
        Step::ResourceMetadata,
        Step::ServerMetadata,
        Step::Registration,
        Step::Authorize,
        Step::Callback,
        Step::Token,
        Step::IdpTokenExchange,
        Step::Retry,
        Step::Failed,
    ];

    /// The stable name used in captures.
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Challenge => "challenge",
            Step::ResourceMetadata => "resource-metadata",
            Step::ServerMetadata => "server-metadata",
            Step::Registration => "registration",
            Step::Authorize => "authorize",
            Step::Callback => "callback",
            Step::Token => "token",
            Step::IdpTokenExchange => "idp-token-exchange",
            Step::Retry => "retry",
            Step::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Step> {
        Some(match s {
            "challenge" => Step::Challenge,
            "resource-metadata" => Step::ResourceMetadata,
            "server-metadata" => Step::ServerMetadata,
            "registration" => Step::Registration,
            "authorize" => Step::Authorize,
            "callback" => Step::Callback,
            "token" => Step::Token,
            "idp-token-exchange" => Step::IdpTokenExchange,
            "retry" => Step::Retry,
            "failed" => Step::Failed,
            _ => return None,
        })
    }

    /// What a person reads on the timeline.
    pub fn label(self) -> &'static str {
        match self {
            Step::Challenge => "challenge",
            Step::ResourceMetadata => "resource metadata",
            Step::ServerMetadata => "server metadata",
            Step::Registration => "registration",
            Step::Authorize => "authorize",
            Step::Callback => "callback",
            Step::Token => "token",
            Step::IdpTokenExchange => "IdP token exchange",
            Step::Retry => "retry",
            Step::Failed => "failed",
        }
    }
}

/// Why an authorization failed, one line each. Callers branch on the kind
/// (the CLI exits 3 for all of them; the app shows the line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthError {
    /// The protected resource metadata lists no authorization server.
    NoAuthorizationServer { metadata_url: String },
    /// No authorization server metadata at any of the well-known URLs.
    NoServerMetadata { issuer: String, tried: Vec<String> },
    /// The protected resource metadata names another resource than this server.
    ResourceMismatch { resource: String, server: String },
    /// The metadata's `issuer` is not the issuer it was looked up for (RFC 8414 §3.3).
    IssuerMismatch { expected: String, found: String },
    /// The authorization server does not advertise PKCE with S256.
    NoS256 {
        issuer: String,
        advertised: Option<Vec<String>>,
    },
    /// Nothing to identify mcpscope with at this authorization server.
    NoClientIdentity { issuer: String },
    /// Pre-registered credentials bound to another authorization server.
    CredentialsForOtherIssuer { bound: String, issuer: String },
    /// Dynamic client registration was refused.
    RegistrationRefused {
        status: u16,
        error: Option<String>,
        description: Option<String>,
    },
    /// The person (or the server on their behalf) declined at the authorization server.
    Denied { error: String, description: Option<String> },
    /// Cancelled before the callback came.
    Cancelled,
    /// No callback came in time.
    CallbackTimedOut { waited_ms: u64 },
    /// The callback's `state` is not the one sent.
    StateMismatch,
    /// The callback's `iss` does not match (or is missing where it must be) (RFC 9207).
    IssMismatch { expected: String, found: Option<String> },
    /// The callback carried neither a code nor an error.
    NoCode,
    /// Non-interactive mode met a page that wants a person.
    NeedsUser { url: String, status: u16 },
    /// The token endpoint refused.
    TokenRefused {
        status: u16,
        error: Option<String>,
        description: Option<String>,
    },
    /// The server still says insufficient_scope for scopes already granted.
    InsufficientScope {
        scopes: Vec<String>,
        description: Option<String>,
    },
    /// More authorization attempts for one request than allowed.
    TooManyAttempts { attempts: u32 },
    /// A request of the flow got no HTTP answer.
    Unreachable { url: String, error: String },
    /// An answer that cannot be used (not JSON, a required member missing).
    BadResponse { step: Step, url: String, why: String },
    /// The user's settings cannot work (unreadable key file, bad URL, …).
    Config(String),
}

impl fmt::Display for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn server_said(
            f: &mut fmt::Formatter<'_>,
            error: &Option<String>,
            description: &Option<String>,
        ) -> fmt::Result {
            match (error, description) {
                (Some(e), Some(d)) => write!(f, ": {e}: {d}"),
                (Some(e), None) => write!(f, ": {e}"),
                (None, Some(d)) => write!(f, ": {d}"),
                (None, None) => Ok(()),
            }
        }
        match self {
            AuthError::NoAuthorizationServer { metadata_url } => write!(
                f,
                "the protected resource metadata at {metadata_url} lists no authorization server"
            ),
            AuthError::NoServerMetadata { issuer, tried } => write!(
                f,
                "no authorization server metadata for {issuer} (tried {})",
                tried.join(", ")
            ),
            AuthError::ResourceMismatch { resource, server } => write!(
                f,
                "the protected resource metadata is for {resource}, not for {server}: refusing to authorize"
            ),
            AuthError::IssuerMismatch { expected, found } => write!(
                f,
                "the authorization server metadata says issuer {found}, but it was looked up for {expected}: refusing to use it"
            ),
            AuthError::NoS256 { issuer, advertised } => match advertised {
                None => write!(
                    f,
                    "{issuer} does not advertise PKCE (no code_challenge_methods_supported): refusing to authorize"
                ),
                Some(m) => write!(
                    f,
                    "{issuer} does not support PKCE with S256 (code_challenge_methods_supported: {}): refusing to authorize",
                    m.join(", ")
                ),
            },
            AuthError::NoClientIdentity { issuer } => write!(
                f,
                "{issuer} offers no dynamic registration and no client metadata documents: give --client-id (and --client-secret) registered there"
            ),
            AuthError::CredentialsForOtherIssuer { bound, issuer } => write!(
                f,
                "the client id is registered at {bound}, but this server uses {issuer}: not sending it there"
            ),
            AuthError::RegistrationRefused {
                status,
                error,
                description,
            } => {
                write!(f, "client registration was refused (HTTP {status})")?;
                server_said(f, error, description)
            }
            AuthError::Denied { error, description } => {
                write!(f, "the authorization server denied the request: {error}")?;
                if let Some(d) = description {
                    write!(f, ": {d}")?;
                }
                Ok(())
            }
            AuthError::Cancelled => write!(f, "the authorization was cancelled"),
            AuthError::CallbackTimedOut { waited_ms } => write!(
                f,
                "no redirect back to mcpscope within {} s: the authorization timed out",
                waited_ms / 1000
            ),
            AuthError::StateMismatch => write!(
                f,
                "the redirect's state did not match: refused (a redirect mcpscope did not ask for, possibly a CSRF)"
            ),
            AuthError::IssMismatch { expected, found } => match found {
                Some(found) => write!(
                    f,
                    "the redirect's iss is {found}, not the authorization server's issuer {expected} (RFC 9207): refusing the code"
                ),
                None => write!(
                    f,
                    "the redirect has no iss although {expected} promises one (RFC 9207): refusing the code"
                ),
            },
            AuthError::NoCode => write!(f, "the redirect carried neither a code nor an error"),
            AuthError::NeedsUser { url, status } => write!(
                f,
                "the authorization server answered {url} with a page for a person (HTTP {status}): run without --auth-non-interactive"
            ),
            AuthError::TokenRefused {
                status,
                error,
                description,
            } => {
                write!(f, "the token request was refused (HTTP {status})")?;
                server_said(f, error, description)
            }
            AuthError::InsufficientScope { scopes, description } => {
                write!(
                    f,
                    "the server still answers insufficient_scope after mcpscope was granted {}",
                    if scopes.is_empty() {
                        "what it asked for".to_owned()
                    } else {
                        scopes.join(" ")
                    }
                )?;
                if let Some(d) = description {
                    write!(f, " ({d})")?;
                }
                Ok(())
            }
            AuthError::TooManyAttempts { attempts } => write!(
                f,
                "gave up after {attempts} authorization attempts for the same request"
            ),
            AuthError::Unreachable { url, error } => write!(f, "{url}: {error}"),
            AuthError::BadResponse { step, url, why } => write!(f, "{} at {url}: {why}", step.label()),
            AuthError::Config(why) => write!(f, "{why}"),
        }
    }
}

impl std::error::Error for AuthError {}
