//! The authorization as a state machine with no I/O: it is started by a
//! challenge, asks for HTTP requests, a redirect URI and an authorization
//! (a browser, or redirects followed without one), and ends with a token
//! or a reason. `transport::auth` runs it and records every exchange.
//!
//! One flow is one answer to one challenge. What outlives it (metadata,
//! registrations keyed by issuer, the token, refresh tokens keyed by
//! issuer, the scopes last asked for) is its [`Memory`], handed from flow
//! to flow by the caller.
//!
//! The steps live by stage: finding the server's metadata (`metadata`),
//! choosing and running a grant (`grants`), and the token endpoint
//! (`exchange`).

use super::authorize::{self, PendingAuthorization};
use super::challenge::BearerChallenge;
use super::discovery::{self, ResourceMetadata, ServerMetadata};
use super::dpop::{self, DpopKey, DpopMode};
use super::jwt::{self, SigningKey};
use super::pkce::{self, Pkce};
use super::registration::{self, Client, ClientKind, ClientSettings, Plan};
use super::scopes::{self, StepUp};
use super::token::{self, ClientAuth, Grant, TokenSet};
use super::{AuthError, Step};
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

mod exchange;
mod grants;
mod metadata;

/// Which grant to use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GrantChoice {
    /// Client credentials with a signing key, or with a secret where the
    /// server offers only that grant; the ID-JAG flow with an ID token;
    /// else the authorization code flow.
    #[default]
    Auto,
    AuthorizationCode,
    /// The `io.modelcontextprotocol/oauth-client-credentials` extension.
    ClientCredentials,
    /// Enterprise-managed authorization (SEP-990): token exchange at the
    /// identity provider, then a JWT bearer grant.
    IdJag,
    /// Workload identity federation (SEP-1933): the workload's own JWT (from
    /// its platform) as an RFC 7523 JWT bearer grant.
    WorkloadIdentity,
}

/// The audience of a `private_key_jwt` client assertion.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AssertionAudience {
    /// The authorization server's issuer (RFC 7523 §3; what the MCP extension checks).
    #[default]
    Issuer,
    TokenEndpoint,
}

/// The enterprise identity provider of the ID-JAG flow.
#[derive(Clone, PartialEq, Eq)]
pub struct IdpSettings {
    pub token_endpoint: String,
    /// The person's ID token at the identity provider.
    pub id_token: String,
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
}

impl std::fmt::Debug for IdpSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdpSettings")
            .field("token_endpoint", &self.token_endpoint)
            .field("id_token", &"****")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "****"))
            .finish()
    }
}

/// What the user configured.
#[derive(Clone, Debug, Default)]
pub struct AuthConfig {
    pub client: ClientSettings,
    /// Scopes to ask for instead of choosing them.
    pub scope: Option<Vec<String>>,
    pub grant: GrantChoice,
    pub signing_key: Option<Arc<SigningKey>>,
    pub assertion_kid: Option<String>,
    pub assertion_audience: AssertionAudience,
    pub idp: Option<IdpSettings>,
    /// Ask for refresh tokens (`offline_access` where the server lists it).
    pub want_refresh: bool,
    /// Use this authorization server when the resource lists several.
    pub issuer: Option<String>,
    /// When to bind tokens to a key with DPoP (RFC 9449).
    pub dpop: DpopMode,
    /// The session's DPoP key (made once, so every token of the session is
    /// bound to the same key); `None` with [`DpopMode::Never`].
    pub dpop_key: Option<Arc<DpopKey>>,
    /// The workload's JWT for [`GrantChoice::WorkloadIdentity`].
    pub workload_token: Option<String>,
}

/// A token and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Granted {
    pub token: TokenSet,
    /// The issuer (the authorization base URL on the 2025-03-26 path).
    pub issuer: String,
    pub resource: Option<String>,
    pub client: Option<Client>,
    pub token_endpoint: String,
    /// The thumbprint of the DPoP key a DPoP token is bound to (`cnf.jkt`).
    pub dpop_jkt: Option<String>,
}

/// What outlives one flow.
#[derive(Clone, Default, PartialEq)]
pub struct Memory {
    pub resource_metadata: Option<ResourceMetadata>,
    /// The authorization server in use (the base URL on the 2025-03-26 path).
    pub issuer: Option<String>,
    pub server_metadata: Option<ServerMetadata>,
    /// Found through the 2025-03-26 fallbacks (no resource metadata).
    pub legacy: bool,
    /// Dynamically registered clients, by issuer.
    pub clients: BTreeMap<String, Client>,
    /// Refresh tokens, by issuer.
    pub refresh_tokens: BTreeMap<String, String>,
    pub token: Option<Granted>,
    /// The scopes of the last authorization request.
    pub requested_scopes: Option<Vec<String>>,
    /// The authorization server's latest DPoP nonce (RFC 9449 §8).
    pub dpop_nonce: Option<String>,
}

impl std::fmt::Debug for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memory")
            .field("resource_metadata", &self.resource_metadata)
            .field("issuer", &self.issuer)
            .field("legacy", &self.legacy)
            .field("clients", &self.clients)
            .field(
                "refresh_tokens",
                &self.refresh_tokens.keys().map(|k| (k, "****")).collect::<Vec<_>>(),
            )
            .field("token", &self.token)
            .field("requested_scopes", &self.requested_scopes)
            .finish_non_exhaustive()
    }
}

impl Memory {
    /// Whether the current token can be refreshed.
    pub fn can_refresh(&self) -> bool {
        self.token
            .as_ref()
            .is_some_and(|g| self.refresh_tokens.contains_key(&g.issuer))
    }
}

/// Why a flow starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// A 401. `with_token`: a token had been sent (it is no longer good;
    /// the server may have moved to another authorization server).
    Unauthorized {
        challenge: BearerChallenge,
        with_token: bool,
    },
    /// A 403 with `insufficient_scope`.
    InsufficientScope { challenge: BearerChallenge },
    /// The token expires soon: refresh it, ask nobody.
    Expiring,
}

/// The randomness one flow needs.
#[derive(Clone, Copy)]
pub struct Entropy {
    pub bytes: [u8; 64],
}

/// An HTTP method the flow uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Body {
    Empty,
    Form(Vec<(String, String)>),
    Json(Value),
}

/// A request the flow wants made (with redirects not followed).
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    pub step: Step,
    pub method: Method,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Body,
    /// Why, for the timeline.
    pub purpose: String,
}

/// What the flow wants next.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    Send(Request),
    /// A redirect URI is needed now (to register, or to authorize): bind
    /// the loopback listener and answer with [`Input::RedirectUri`].
    NeedRedirectUri,
    /// Send the person to this URL; answer with [`Input::Callback`] (the
    /// URL the authorization server redirected to) or [`Input::Failed`].
    Authorize {
        url: String,
        redirect_uri: String,
    },
    /// A token is in [`AuthFlow::memory`].
    Done,
    Fail(AuthError),
}

/// What happened.
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    Response {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// The request got no HTTP answer.
    Unreachable(String),
    RedirectUri(String),
    Callback(String),
    /// The authorization step failed on the caller's side (timed out, cancelled, a login page).
    Failed(AuthError),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TokenKind {
    Code,
    Refresh,
    ClientCredentials,
    JwtBearer,
    Workload,
}

enum Stage {
    ResourceMetadata {
        candidates: VecDeque<String>,
        fallback: VecDeque<String>,
    },
    ServerMetadata {
        issuer: String,
        candidates: VecDeque<String>,
        tried: Vec<String>,
    },
    AwaitRedirectUri,
    Registration,
    Authorization(Box<PendingAuthorization>),
    IdpExchange,
    Token(TokenKind),
    Finished,
}

pub struct AuthFlow {
    config: Arc<AuthConfig>,
    server_url: String,
    memory: Memory,
    trigger: Trigger,
    stage: Stage,
    notes: Vec<String>,
    entropy: Entropy,
    draws: u8,
    now: u64,
    /// Scopes chosen for this flow (`None`: omitted).
    scopes: Option<Vec<String>>,
    scopes_chosen: bool,
    redirect_uri: Option<String>,
    client: Option<Client>,
    refresh_tried: bool,
    reregistered: bool,
    /// The URL of the last request asked for (its answer is the next input).
    last_sent: Option<String>,
    /// The token request in flight, to send again with a DPoP nonce.
    last_token: Option<(Grant, Option<Client>)>,
    dpop_nonce_retried: bool,
}

impl AuthFlow {
    /// Starts a flow for `server_url` (the MCP endpoint) and says what to do first.
    pub fn start(
        config: Arc<AuthConfig>,
        memory: Memory,
        server_url: &str,
        trigger: Trigger,
        entropy: Entropy,
        now: u64,
    ) -> (AuthFlow, Action) {
        let mut f = AuthFlow {
            config,
            server_url: server_url.to_owned(),
            memory,
            trigger: trigger.clone(),
            stage: Stage::Finished,
            notes: Vec::new(),
            entropy,
            draws: 0,
            now,
            scopes: None,
            scopes_chosen: false,
            redirect_uri: None,
            client: None,
            refresh_tried: false,
            reregistered: false,
            last_sent: None,
            last_token: None,
            dpop_nonce_retried: false,
        };
        let action = match trigger {
            Trigger::Expiring => f.refresh(),
            Trigger::Unauthorized { challenge, with_token } => {
                if with_token {
                    f.note("the token mcpscope sent was refused: discovering again (the authorization server may have changed)");
                }
                f.memory.token = None;
                f.discover(challenge.resource_metadata.as_deref())
            }
            Trigger::InsufficientScope { challenge } => {
                let previous = f.memory.requested_scopes.clone().unwrap_or_default();
                match scopes::step_up(&previous, challenge.scope.as_deref()) {
                    StepUp::GiveUp => f.fail(AuthError::InsufficientScope {
                        scopes: previous,
                        description: challenge.error_description.clone(),
                    }),
                    StepUp::Reauthorize(union) => {
                        f.note(format!("step-up: asking for {}", union.join(" ")));
                        f.scopes = Some(union);
                        f.scopes_chosen = true;
                        f.memory.token = None;
                        let same_resource = match (&challenge.resource_metadata, &f.memory.resource_metadata) {
                            (None, _) => true,
                            (Some(hint), Some(prm)) => *hint == prm.url,
                            (Some(_), None) => false,
                        };
                        if same_resource && f.memory.server_metadata.is_some() && f.memory.issuer.is_some() {
                            f.after_metadata()
                        } else {
                            f.discover(challenge.resource_metadata.as_deref())
                        }
                    }
                }
            }
        };
        (f, action)
    }

    pub fn memory(&self) -> &Memory {
        &self.memory
    }

    pub fn into_memory(self) -> Memory {
        self.memory
    }

    /// What the flow concluded from the last input, for the timeline.
    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    fn note(&mut self, text: impl Into<String>) {
        self.notes.push(text.into());
    }

    fn send(&mut self, req: Request) -> Action {
        self.last_sent = Some(req.url.clone());
        Action::Send(req)
    }

    fn fail(&mut self, e: AuthError) -> Action {
        self.stage = Stage::Finished;
        Action::Fail(e)
    }

    /// Fresh random bytes for the n-th use within this flow.
    fn random<const N: usize>(&mut self) -> [u8; N] {
        self.draws += 1;
        let mut seed = self.entropy.bytes.to_vec();
        seed.push(self.draws);
        let d = ring::digest::digest(&ring::digest::SHA256, &seed);
        let mut out = [0u8; N];
        out.copy_from_slice(&d.as_ref()[..N]);
        out
    }

    fn jti(&mut self) -> String {
        let r: [u8; 16] = self.random();
        r.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Feeds what happened; says what to do next.
    pub fn on_event(&mut self, input: Input, now: u64) -> Action {
        self.now = now;
        if let Input::Failed(e) = input {
            return self.fail(e);
        }
        match std::mem::replace(&mut self.stage, Stage::Finished) {
            Stage::ResourceMetadata { candidates, fallback } => self.on_resource_metadata(input, candidates, fallback),
            Stage::ServerMetadata {
                issuer,
                candidates,
                tried,
            } => self.on_server_metadata(input, issuer, candidates, tried),
            Stage::AwaitRedirectUri => match input {
                Input::RedirectUri(uri) => {
                    self.redirect_uri = Some(uri);
                    self.authorization_code()
                }
                other => self.unexpected(other),
            },
            Stage::Registration => self.on_registration(input),
            Stage::Authorization(pending) => self.on_callback(input, *pending),
            Stage::IdpExchange => self.on_idp_exchange(input),
            Stage::Token(kind) => self.on_token(input, kind),
            Stage::Finished => Action::Fail(AuthError::Config("the authorization had already ended".into())),
        }
    }

    fn unexpected(&mut self, input: Input) -> Action {
        self.fail(AuthError::Config(format!(
            "internal: unexpected {input:?} in the authorization flow"
        )))
    }
}

/// Whether an endpoint from an authorization server's metadata may be used:
/// https anywhere, http only on a loopback host.
pub fn endpoint_allowed(url: &str) -> Result<(), &'static str> {
    let Ok(u) = url::Url::parse(url) else {
        return Err("is not a URL");
    };
    match u.scheme() {
        "https" => Ok(()),
        "http" => {
            let loopback = match u.host() {
                Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
                Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
                Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
                None => false,
            };
            if loopback {
                Ok(())
            } else {
                Err("is plain http on a host that is not this machine")
            }
        }
        _ => Err("is neither https nor http"),
    }
}

#[cfg(test)]
mod tests;
