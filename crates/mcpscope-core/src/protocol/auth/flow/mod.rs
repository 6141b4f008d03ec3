//! The authorization as a state machine with no I/O: it is started by a
//! challenge, asks for HTTP requests, a redirect URI and an authorization
//! (a browser, or redirects followed without one), and ends with a token
//! or a reason. `transport::auth` runs it and records every exchange.
//!
//! One flow is one answer to one challenge. What outlives it (metadata,
//! registrations keyed by issuer, the token, refresh tokens keyed by
//! issuer, the scopes last asked for) is its [`Memory`], handed from flow
//! to flow by the caller.

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

    // --- discovery -------------------------------------------------------

    fn discover(&mut self, hint: Option<&str>) -> Action {
        let candidates: VecDeque<String> = discovery::prm_candidates(&self.server_url, hint).into();
        // When the challenge's URL fails, the well-known ones are still worth a try.
        let fallback: VecDeque<String> = if hint.is_some() {
            discovery::prm_candidates(&self.server_url, None)
                .into_iter()
                .filter(|c| !candidates.contains(c))
                .collect()
        } else {
            VecDeque::new()
        };
        if let Some(h) = hint {
            self.note(format!("resource metadata from WWW-Authenticate: {h}"));
        }
        self.next_resource_metadata(candidates, fallback)
    }

    fn next_resource_metadata(&mut self, mut candidates: VecDeque<String>, mut fallback: VecDeque<String>) -> Action {
        if candidates.is_empty() {
            candidates = std::mem::take(&mut fallback);
        }
        let Some(url) = candidates.pop_front() else {
            return self.legacy_discovery();
        };
        self.stage = Stage::ResourceMetadata { candidates, fallback };
        self.send(Request {
            step: Step::ResourceMetadata,
            method: Method::Get,
            url,
            headers: vec![("Accept".into(), "application/json".into())],
            body: Body::Empty,
            purpose: "where is this server's authorization server? (RFC 9728)".into(),
        })
    }

    fn on_resource_metadata(
        &mut self,
        input: Input,
        candidates: VecDeque<String>,
        fallback: VecDeque<String>,
    ) -> Action {
        let (status, body) = match input {
            Input::Response { status, body, .. } => (status, body),
            Input::Unreachable(e) => {
                self.note(format!("no answer ({e}): trying the next location"));
                return self.next_resource_metadata(candidates, fallback);
            }
            other => return self.unexpected(other),
        };
        let url = self.last_url_hint();
        let prm = (200..300)
            .contains(&status)
            .then(|| ResourceMetadata::parse(&body, &url))
            .flatten();
        let Some(prm) = prm else {
            self.note(format!("no protected resource metadata here (HTTP {status})"));
            return self.next_resource_metadata(candidates, fallback);
        };
        if let Err(e) = discovery::check_resource(&prm.resource, &self.server_url) {
            self.note(format!("resource {} does not name {}", prm.resource, self.server_url));
            return self.fail(e);
        }
        self.note(format!("resource {} names this server", prm.resource));
        let issuer = match &self.config.issuer {
            Some(pick) if prm.authorization_servers.contains(pick) => pick.clone(),
            _ => match prm.authorization_servers.first() {
                Some(i) => i.clone(),
                None => {
                    return self.fail(AuthError::NoAuthorizationServer {
                        metadata_url: prm.url.clone(),
                    });
                }
            },
        };
        if prm.authorization_servers.len() > 1 {
            self.note(format!(
                "{} authorization servers listed; using {issuer}",
                prm.authorization_servers.len()
            ));
        }
        self.memory.resource_metadata = Some(prm);
        self.memory.legacy = false;
        let candidates = discovery::server_metadata_candidates(&issuer).into();
        self.next_server_metadata(issuer, candidates, Vec::new())
    }

    /// The URL of the request whose answer is being handled.
    fn last_url_hint(&self) -> String {
        self.last_sent.clone().unwrap_or_default()
    }

    fn legacy_discovery(&mut self) -> Action {
        let Some(base) = discovery::legacy_base(&self.server_url) else {
            return self.fail(AuthError::Config(format!("{} is not a URL", self.server_url)));
        };
        self.note(format!(
            "no protected resource metadata: using the 2025-03-26 rules (authorization server at {base})"
        ));
        self.memory.resource_metadata = None;
        self.memory.legacy = true;
        let url = discovery::legacy_metadata_url(&base);
        self.next_server_metadata(base, VecDeque::from([url]), Vec::new())
    }

    fn next_server_metadata(&mut self, issuer: String, mut candidates: VecDeque<String>, tried: Vec<String>) -> Action {
        let Some(url) = candidates.pop_front() else {
            if self.memory.legacy {
                self.note(format!(
                    "no authorization server metadata: using the default endpoints {issuer}/authorize, /token, /register"
                ));
                self.memory.issuer = Some(issuer.clone());
                self.memory.server_metadata = Some(discovery::legacy_default_endpoints(&issuer));
                return self.after_metadata();
            }
            return self.fail(AuthError::NoServerMetadata { issuer, tried });
        };
        let mut headers = vec![("Accept".to_owned(), "application/json".to_owned())];
        if self.memory.legacy {
            // 2025-03-26 "Server Metadata Discovery": clients SHOULD send it.
            headers.push(("MCP-Protocol-Version".into(), "2025-03-26".into()));
        }
        self.stage = Stage::ServerMetadata {
            issuer,
            candidates,
            tried,
        };
        self.send(Request {
            step: Step::ServerMetadata,
            method: Method::Get,
            url,
            headers,
            body: Body::Empty,
            purpose: "the authorization server's endpoints and capabilities (RFC 8414 / OpenID Connect)".into(),
        })
    }

    fn on_server_metadata(
        &mut self,
        input: Input,
        issuer: String,
        candidates: VecDeque<String>,
        mut tried: Vec<String>,
    ) -> Action {
        let url = self.last_url_hint();
        tried.push(url.clone());
        let (status, body) = match input {
            Input::Response { status, body, .. } => (status, body),
            Input::Unreachable(e) => {
                self.note(format!("no answer ({e}): trying the next location"));
                return self.next_server_metadata(issuer, candidates, tried);
            }
            other => return self.unexpected(other),
        };
        let meta = (200..300)
            .contains(&status)
            .then(|| ServerMetadata::parse(&body, &url))
            .flatten();
        let Some(meta) = meta else {
            self.note(format!("no authorization server metadata here (HTTP {status})"));
            return self.next_server_metadata(issuer, candidates, tried);
        };
        let key = if self.memory.legacy {
            if meta.issuer.as_deref() != Some(issuer.as_str()) {
                self.note(format!(
                    "issuer {} differs from {issuer}; accepted on the 2025-03-26 path, which predates the check",
                    meta.issuer.as_deref().unwrap_or("(none)")
                ));
            }
            meta.issuer.clone().unwrap_or_else(|| issuer.clone())
        } else {
            if let Err(e) = discovery::check_issuer(&meta, &issuer) {
                return self.fail(e);
            }
            self.note("issuer matches");
            issuer
        };
        self.memory.issuer = Some(key);
        self.memory.server_metadata = Some(meta);
        self.after_metadata()
    }

    // --- choosing the grant ------------------------------------------------

    fn issuer(&self) -> String {
        self.memory.issuer.clone().unwrap_or_default()
    }

    fn meta(&self) -> ServerMetadata {
        self.memory.server_metadata.clone().unwrap_or_default()
    }

    /// The `resource` parameter: the metadata's string as it is, else (on
    /// the 2025-03-26 path) the server's URL without a fragment.
    fn resource(&self) -> Option<String> {
        match &self.memory.resource_metadata {
            Some(prm) => Some(prm.resource.clone()),
            None => Some(self.server_url.split('#').next().unwrap_or_default().to_owned()),
        }
    }

    fn grant(&self) -> GrantChoice {
        let c = &self.config;
        match c.grant {
            GrantChoice::Auto => {
                let meta = self.meta();
                if c.workload_token.is_some() {
                    GrantChoice::WorkloadIdentity
                } else if c.idp.is_some() {
                    GrantChoice::IdJag
                } else if c.signing_key.is_some()
                    || (c.client.client_id.is_some()
                        && c.client.client_secret.is_some()
                        && meta.supports_grant("client_credentials")
                        && !meta.supports_grant("authorization_code"))
                {
                    GrantChoice::ClientCredentials
                } else {
                    GrantChoice::AuthorizationCode
                }
            }
            g => g,
        }
    }

    fn choose_scopes(&mut self, for_code: bool) {
        if self.scopes_chosen {
            return;
        }
        self.scopes_chosen = true;
        if let Some(s) = &self.config.scope {
            self.scopes = Some(s.clone()).filter(|s| !s.is_empty());
            return;
        }
        let challenged = match &self.trigger {
            Trigger::Unauthorized { challenge, .. } | Trigger::InsufficientScope { challenge } => {
                challenge.scope.clone()
            }
            Trigger::Expiring => None,
        };
        let prm = self
            .memory
            .resource_metadata
            .as_ref()
            .and_then(|p| p.scopes_supported.clone());
        let meta = self.meta();
        self.scopes = scopes::initial(
            challenged.as_deref(),
            prm.as_deref(),
            meta.scopes_supported.as_deref(),
            self.config.want_refresh && for_code,
        );
        let from = if challenged.is_some() {
            "from the challenge"
        } else if prm.is_some() {
            "from the resource's scopes_supported"
        } else {
            "none named anywhere: omitted"
        };
        match &self.scopes {
            Some(s) => self.note(format!("scopes: {} ({from})", s.join(" "))),
            None => self.note(format!("scopes: {from}")),
        }
    }

    fn after_metadata(&mut self) -> Action {
        match self.grant() {
            GrantChoice::AuthorizationCode | GrantChoice::Auto => {
                self.choose_scopes(true);
                let issuer = self.issuer();
                let refreshable = matches!(self.trigger, Trigger::Unauthorized { .. })
                    && !self.refresh_tried
                    && self.memory.refresh_tokens.contains_key(&issuer);
                if refreshable {
                    self.refresh_tried = true;
                    let rt = self.memory.refresh_tokens[&issuer].clone();
                    let client = self
                        .memory
                        .clients
                        .get(&issuer)
                        .cloned()
                        .or_else(|| self.configured_client());
                    self.note("a refresh token is at hand: refreshing before asking anyone");
                    return self.token_request(TokenKind::Refresh, Grant::RefreshToken { refresh_token: rt }, client);
                }
                self.authorization_code()
            }
            GrantChoice::ClientCredentials => {
                self.choose_scopes(false);
                self.client_credentials()
            }
            GrantChoice::IdJag => {
                self.choose_scopes(false);
                self.idp_exchange()
            }
            GrantChoice::WorkloadIdentity => {
                self.choose_scopes(false);
                self.workload_identity()
            }
        }
    }

    fn workload_identity(&mut self) -> Action {
        let Some(assertion) = self.config.workload_token.clone() else {
            return self.fail(AuthError::Config(
                "workload identity needs the workload's JWT (--workload-token FILE)".into(),
            ));
        };
        if !self.meta().supports_grant(token::GRANT_JWT_BEARER) {
            self.note("the authorization server does not list the JWT bearer grant: trying it anyway");
        }
        self.memory.requested_scopes = self.scopes.clone();
        let client = self.configured_client();
        self.token_request(TokenKind::Workload, Grant::JwtBearer { assertion }, client)
    }

    /// The DPoP key, when this flow's tokens are to be bound to it.
    fn dpop_key(&self) -> Option<Arc<DpopKey>> {
        let key = self.config.dpop_key.clone()?;
        let challenged = match &self.trigger {
            Trigger::Unauthorized { challenge, .. } | Trigger::InsufficientScope { challenge } => {
                challenge.scheme.eq_ignore_ascii_case("dpop")
            }
            Trigger::Expiring => false,
        };
        let bound_before = self
            .memory
            .token
            .as_ref()
            .is_some_and(|g| g.token.token_type.eq_ignore_ascii_case("dpop"));
        match self.config.dpop {
            DpopMode::Never => None,
            DpopMode::Always => Some(key),
            DpopMode::Auto => (dpop::server_accepts(self.meta().dpop_signing_alg_values_supported.as_deref())
                || challenged
                || bound_before)
                .then_some(key),
        }
    }

    fn configured_client(&self) -> Option<Client> {
        let s = &self.config.client;
        Some(Client {
            client_id: s.client_id.clone()?,
            client_secret: s.client_secret.clone(),
            auth_method: None,
            kind: ClientKind::PreRegistered,
            issuer: s.client_issuer.clone(),
        })
    }

    fn authorization_code(&mut self) -> Action {
        let meta = self.meta();
        let issuer = self.issuer();
        if meta.url.is_some() {
            if let Err(e) = meta.check_s256(&issuer) {
                return self.fail(e);
            }
        } else {
            self.note("no metadata to check PKCE support against: sending S256 regardless");
        }
        if meta.authorization_endpoint.is_none() || meta.token_endpoint.is_none() {
            return self.fail(AuthError::BadResponse {
                step: Step::ServerMetadata,
                url: meta.url.clone().unwrap_or(issuer),
                why: "no authorization_endpoint or token_endpoint".into(),
            });
        }
        // What the browser will be sent to, and where codes and secrets go:
        // https, or http on this machine only (never file:, javascript: …).
        for (name, endpoint) in [
            ("authorization_endpoint", &meta.authorization_endpoint),
            ("token_endpoint", &meta.token_endpoint),
            ("registration_endpoint", &meta.registration_endpoint),
        ] {
            if let Some(url) = endpoint
                && let Err(why) = endpoint_allowed(url)
            {
                return self.fail(AuthError::BadResponse {
                    step: Step::ServerMetadata,
                    url: meta.url.clone().unwrap_or(issuer),
                    why: format!("its {name} {url:?} {why}: refusing to use it"),
                });
            }
        }
        let Some(redirect_uri) = self.redirect_uri.clone() else {
            self.stage = Stage::AwaitRedirectUri;
            return Action::NeedRedirectUri;
        };
        match registration::plan(
            &self.config.client,
            &meta,
            &issuer,
            self.memory.clients.get(&issuer),
            &redirect_uri,
        ) {
            Plan::Use(c) => {
                self.note(format!("client {} ({})", c.client_id, c.kind.as_str()));
                self.client = Some(c);
                self.start_authorization()
            }
            Plan::Register { endpoint, body } => {
                self.stage = Stage::Registration;
                self.send(Request {
                    step: Step::Registration,
                    method: Method::Post,
                    url: endpoint,
                    headers: vec![
                        ("Content-Type".into(), "application/json".into()),
                        ("Accept".into(), "application/json".into()),
                    ],
                    body: Body::Json(body),
                    purpose: "register mcpscope as a client (RFC 7591)".into(),
                })
            }
            Plan::Impossible(e) => self.fail(e),
        }
    }

    fn on_registration(&mut self, input: Input) -> Action {
        let issuer = self.issuer();
        match input {
            Input::Response { status, body, .. } => match registration::parse_registration(status, &body, &issuer) {
                Ok(c) => {
                    self.note(format!(
                        "registered as {}{}",
                        c.client_id,
                        c.auth_method
                            .as_deref()
                            .map(|m| format!(" (token endpoint auth: {m})"))
                            .unwrap_or_default()
                    ));
                    self.memory.clients.insert(issuer, c.clone());
                    self.client = Some(c);
                    self.start_authorization()
                }
                Err(e) => self.fail(e),
            },
            Input::Unreachable(error) => {
                let url = self.last_url_hint();
                self.fail(AuthError::Unreachable { url, error })
            }
            other => self.unexpected(other),
        }
    }

    fn start_authorization(&mut self) -> Action {
        let meta = self.meta();
        let Some(client) = self.client.clone() else {
            return self.fail(AuthError::Config("internal: no client".into()));
        };
        let redirect_uri = self.redirect_uri.clone().unwrap_or_default();
        let verifier: [u8; 32] = self.random();
        let state: [u8; 16] = self.random();
        let pending = PendingAuthorization {
            state: pkce::state(state),
            pkce: Pkce::from_random(verifier),
            redirect_uri: redirect_uri.clone(),
            client_id: client.client_id.clone(),
            resource: self.resource(),
            scopes: self.scopes.clone(),
            expected_issuer: (!self.memory.legacy).then(|| self.issuer()),
            iss_advertised: meta.authorization_response_iss_parameter_supported,
        };
        let endpoint = meta.authorization_endpoint.clone().unwrap_or_default();
        let url = match authorize::authorization_url(&endpoint, &pending) {
            Ok(u) => u,
            Err(e) => return self.fail(e),
        };
        self.memory.requested_scopes = self.scopes.clone();
        self.stage = Stage::Authorization(Box::new(pending));
        Action::Authorize { url, redirect_uri }
    }

    fn on_callback(&mut self, input: Input, pending: PendingAuthorization) -> Action {
        let Input::Callback(url) = input else {
            return self.unexpected(input);
        };
        let code = match authorize::parse_callback(&url, &pending) {
            Ok(c) => c,
            Err(e) => return self.fail(e),
        };
        match &pending.expected_issuer {
            Some(i) if url.contains("iss=") => self.note(format!("state matches; iss matches {i}")),
            Some(_) => self.note("state matches; no iss (the server does not promise one)"),
            None => self.note("state matches"),
        }
        let grant = Grant::AuthorizationCode {
            code,
            redirect_uri: pending.redirect_uri.clone(),
            verifier: pending.pkce.verifier.clone(),
        };
        let client = self.client.clone();
        self.token_request(TokenKind::Code, grant, client)
    }

    fn client_credentials(&mut self) -> Action {
        let Some(client) = self.configured_client() else {
            return self.fail(AuthError::Config(
                "the client credentials grant needs --client-id (with --client-secret or --client-assertion-key)"
                    .into(),
            ));
        };
        if let Some(bound) = &client.issuer
            && *bound != self.issuer()
        {
            return self.fail(AuthError::CredentialsForOtherIssuer {
                bound: bound.clone(),
                issuer: self.issuer(),
            });
        }
        self.memory.requested_scopes = self.scopes.clone();
        self.token_request(TokenKind::ClientCredentials, Grant::ClientCredentials, Some(client))
    }

    fn idp_exchange(&mut self) -> Action {
        let Some(idp) = self.config.idp.clone() else {
            return self.fail(AuthError::Config(
                "the ID-JAG flow needs --idp-token-endpoint and --idp-id-token".into(),
            ));
        };
        let audience = self.issuer();
        let auth = match (&idp.client_id, &idp.client_secret) {
            (Some(id), Some(secret)) => ClientAuth::SecretBasic {
                client_id: id.clone(),
                secret: secret.clone(),
            },
            (Some(id), None) => ClientAuth::None { client_id: id.clone() },
            _ => ClientAuth::Omit,
        };
        let resource = self.resource();
        let req = token::request(
            &Grant::IdJagExchange {
                id_token: idp.id_token.clone(),
                audience: audience.clone(),
            },
            &auth,
            resource.as_deref(),
            self.scopes.as_deref(),
        );
        self.stage = Stage::IdpExchange;
        self.send(Request {
            step: Step::IdpTokenExchange,
            method: Method::Post,
            url: idp.token_endpoint.clone(),
            headers: req.headers,
            body: Body::Form(req.form),
            purpose: format!("exchange the ID token for an ID-JAG for {audience} (RFC 8693)"),
        })
    }

    fn on_idp_exchange(&mut self, input: Input) -> Action {
        let (status, body) = match input {
            Input::Response { status, body, .. } => (status, body),
            Input::Unreachable(error) => {
                let url = self.last_url_hint();
                return self.fail(AuthError::Unreachable { url, error });
            }
            other => return self.unexpected(other),
        };
        let ts = match token::parse_response(status, &body, self.now) {
            Ok(t) => t,
            Err(e) => return self.fail(e),
        };
        match ts.issued_token_type.as_deref() {
            Some(token::TOKEN_TYPE_ID_JAG) => self.note("ID-JAG issued"),
            Some(other) => self.note(format!("issued_token_type is {other}, not an ID-JAG: trying it anyway")),
            None => self.note("no issued_token_type: trying the token as an ID-JAG"),
        }
        let client = self.configured_client();
        self.token_request(
            TokenKind::JwtBearer,
            Grant::JwtBearer {
                assertion: ts.access_token,
            },
            client,
        )
    }

    fn refresh(&mut self) -> Action {
        let Some(g) = self.memory.token.clone() else {
            return self.fail(AuthError::Config("no token to refresh".into()));
        };
        let Some(rt) = self.memory.refresh_tokens.get(&g.issuer).cloned() else {
            return self.fail(AuthError::Config("no refresh token".into()));
        };
        self.refresh_tried = true;
        self.token_request(TokenKind::Refresh, Grant::RefreshToken { refresh_token: rt }, g.client)
    }

    fn client_auth(&mut self, client: &Client) -> Result<ClientAuth, AuthError> {
        let meta = self.meta();
        let key = self.config.signing_key.clone();
        Ok(match token::choose_method(client, &meta, key.is_some()) {
            "client_secret_basic" => ClientAuth::SecretBasic {
                client_id: client.client_id.clone(),
                secret: client.client_secret.clone().unwrap_or_default(),
            },
            "client_secret_post" => ClientAuth::SecretPost {
                client_id: client.client_id.clone(),
                secret: client.client_secret.clone().unwrap_or_default(),
            },
            "private_key_jwt" => {
                let key: Arc<SigningKey> =
                    key.ok_or_else(|| AuthError::Config("private_key_jwt needs --client-assertion-key".into()))?;
                let audience = match self.config.assertion_audience {
                    AssertionAudience::Issuer => self.issuer(),
                    AssertionAudience::TokenEndpoint => meta.token_endpoint.clone().unwrap_or_default(),
                };
                let jti = self.jti();
                let assertion = jwt::client_assertion(
                    &client.client_id,
                    &audience,
                    &key,
                    self.config.assertion_kid.as_deref(),
                    self.now,
                    &jti,
                )
                .map_err(|e| AuthError::Config(e.to_string()))?;
                ClientAuth::PrivateKeyJwt { assertion }
            }
            _ => ClientAuth::None {
                client_id: client.client_id.clone(),
            },
        })
    }

    fn token_request(&mut self, kind: TokenKind, grant: Grant, client: Option<Client>) -> Action {
        let meta = self.meta();
        let Some(endpoint) = meta.token_endpoint.clone().or_else(|| {
            (kind == TokenKind::Refresh)
                .then(|| self.memory.token.as_ref().map(|g| g.token_endpoint.clone()))
                .flatten()
        }) else {
            return self.fail(AuthError::BadResponse {
                step: Step::ServerMetadata,
                url: meta.url.clone().unwrap_or_else(|| self.issuer()),
                why: "no token_endpoint".into(),
            });
        };
        let auth = match &client {
            Some(c) => match self.client_auth(c) {
                Ok(a) => a,
                Err(e) => return self.fail(e),
            },
            None => ClientAuth::Omit,
        };
        let resource = self.resource();
        let scopes = match kind {
            TokenKind::ClientCredentials | TokenKind::Workload => self.scopes.clone(),
            _ => None,
        };
        let mut req = token::request(&grant, &auth, resource.as_deref(), scopes.as_deref());
        let mut purpose = match kind {
            TokenKind::Code => "exchange the code for a token",
            TokenKind::Refresh => "refresh the token",
            TokenKind::ClientCredentials => "a token for mcpscope itself (client credentials)",
            TokenKind::JwtBearer => "a token for the ID-JAG (RFC 7523 JWT bearer)",
            TokenKind::Workload => "a token for the workload's JWT (RFC 7523 JWT bearer, workload identity)",
        }
        .to_owned();
        if let Some(key) = self.dpop_key() {
            let jti = self.jti();
            let nonce = self.memory.dpop_nonce.clone();
            match key.proof("POST", &endpoint, self.now, &jti, None, nonce.as_deref()) {
                Ok(proof) => req.headers.push((dpop::HEADER.into(), proof)),
                Err(e) => return self.fail(AuthError::Config(format!("DPoP: {e}"))),
            }
            purpose.push_str(&format!(
                "; DPoP proof for key {}{}",
                key.thumbprint(),
                if nonce.is_some() {
                    ", with the server's nonce"
                } else {
                    ""
                }
            ));
        }
        self.last_token = Some((grant, client.clone()));
        self.client = client;
        self.stage = Stage::Token(kind);
        self.send(Request {
            step: Step::Token,
            method: Method::Post,
            url: endpoint,
            headers: req.headers,
            body: Body::Form(req.form),
            purpose: format!("{purpose}; client authentication: {}", auth.method()),
        })
    }

    fn on_token(&mut self, input: Input, kind: TokenKind) -> Action {
        let (status, body) = match input {
            Input::Response { status, body, headers } => {
                if let Some((_, nonce)) = headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(dpop::NONCE_HEADER)) {
                    self.memory.dpop_nonce = Some(nonce.clone());
                }
                (status, body)
            }
            Input::Unreachable(error) => {
                let url = self.last_url_hint();
                return self.fail(AuthError::Unreachable { url, error });
            }
            other => return self.unexpected(other),
        };
        let issuer = self.issuer();
        let proved = self.dpop_key();
        match token::parse_response(status, &body, self.now) {
            Ok(ts) => {
                let mut what = format!("{} token issued", ts.token_type);
                let bound = ts.token_type.eq_ignore_ascii_case("dpop");
                match (&proved, bound) {
                    (Some(key), true) => what.push_str(&format!(", bound to DPoP key {}", key.thumbprint())),
                    (Some(_), false) => what.push_str(" (not DPoP-bound although a proof was sent)"),
                    (None, true) => what.push_str(" (DPoP-bound, but mcpscope sent no proof)"),
                    (None, false) => {}
                }
                if let Some(e) = ts.expires_at {
                    what.push_str(&format!(", expires in {} s", e.saturating_sub(self.now)));
                }
                if let Some(s) = &ts.scope {
                    what.push_str(&format!(", scope {}", s.join(" ")));
                }
                if ts.refresh_token.is_some() {
                    what.push_str(", with a refresh token");
                }
                self.note(what);
                if let Some(rt) = &ts.refresh_token {
                    self.memory.refresh_tokens.insert(issuer.clone(), rt.clone());
                }
                let token_endpoint = self.meta().token_endpoint.unwrap_or_default();
                self.memory.token = Some(Granted {
                    token: ts,
                    issuer,
                    resource: self.resource(),
                    client: self.client.clone(),
                    token_endpoint,
                    dpop_jkt: proved.as_ref().filter(|_| bound).map(|k| k.thumbprint().to_owned()),
                });
                self.stage = Stage::Finished;
                Action::Done
            }
            Err(AuthError::TokenRefused { error: Some(x), .. })
                if x == dpop::USE_NONCE
                    && proved.is_some()
                    && !self.dpop_nonce_retried
                    && self.memory.dpop_nonce.is_some() =>
            {
                self.dpop_nonce_retried = true;
                self.note("the authorization server asked for a DPoP nonce (use_dpop_nonce): sending the token request again with it");
                let Some((grant, client)) = self.last_token.take() else {
                    return self.fail(AuthError::Config("internal: no token request to repeat".into()));
                };
                self.token_request(kind, grant, client)
            }
            Err(e) => {
                if kind == TokenKind::Refresh {
                    self.memory.refresh_tokens.remove(&issuer);
                    if self.trigger == Trigger::Expiring {
                        return self.fail(e);
                    }
                    self.note(format!("refresh refused ({e}): authorizing again"));
                    return self.authorization_code();
                }
                let invalid_client =
                    matches!(&e, AuthError::TokenRefused { error: Some(x), .. } if x == "invalid_client");
                let registered = self.client.as_ref().is_some_and(|c| c.kind == ClientKind::Registered);
                if kind == TokenKind::Code && invalid_client && registered && !self.reregistered {
                    self.reregistered = true;
                    self.memory.clients.remove(&issuer);
                    self.note("the registered client is no longer valid: registering again");
                    return self.authorization_code();
                }
                self.fail(e)
            }
        }
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
