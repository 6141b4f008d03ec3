//! `mcpscope mock --auth`: the mock as an OAuth-protected server, with an
//! authorization server of its own, so that a client's whole sign-in can be
//! exercised offline.
//!
//! A capture never holds usable tokens (they are masked when recorded), so
//! the mock issues its own. What a client meets, as the MCP authorization
//! spec (2025-06-18 and later) describes it:
//! - the endpoint answers 401 with `WWW-Authenticate: Bearer
//!   resource_metadata="…"` until a token this server issued comes as
//!   `Authorization: Bearer …` (`error="invalid_token"` for one it did not
//!   issue, or that expired);
//! - protected resource metadata (RFC 9728) at
//!   `/.well-known/oauth-protected-resource{path}` (and at the root);
//! - authorization server metadata (RFC 8414) at
//!   `/.well-known/oauth-authorization-server` (and `openid-configuration`);
//! - dynamic client registration (RFC 7591) at `/register`;
//! - `/authorize`: the code flow with PKCE S256 only, approved at once (no
//!   one to ask), the redirect carrying `code`, `state` and `iss` (RFC 9207);
//! - `/token`: `authorization_code` (the verifier checked against the
//!   challenge, the redirect URI and client against the code's), then
//!   `refresh_token` (rotated) and `client_credentials` (clients registered
//!   with a secret).
//!
//! No I/O here: the listener hands each request in and writes the answer;
//! randomness and the time come from the caller.

use crate::protocol::auth::pkce;
use base64::Engine as _;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::Duration;

/// How long an access token lasts.
pub const ACCESS_TOKEN_LIFETIME: Duration = Duration::from_secs(3600);
/// How long an authorization code can be exchanged (RFC 6749 §4.1.2 suggests at most 10 minutes).
const CODE_LIFETIME: Duration = Duration::from_secs(60);
/// Registered clients, codes and tokens kept at most; past it the server
/// refuses new ones (a client registering in a loop must not grow the mock).
const MAX_ENTRIES: usize = 10_000;

const AUTHORIZE: &str = "/authorize";
const TOKEN: &str = "/token";
const REGISTER: &str = "/register";
const PRM: &str = "/.well-known/oauth-protected-resource";
const AS_METADATA: &str = "/.well-known/oauth-authorization-server";
const OIDC_METADATA: &str = "/.well-known/openid-configuration";

/// One HTTP request, as much of it as the authorization server reads.
pub struct AuthRequest<'a> {
    pub method: &'a str,
    /// The `Host` the client used (checked by the listener): the issuer and
    /// the resource are named as the client reaches them (`localhost` or
    /// `127.0.0.1`, or a name other machines use with `--listen-any`).
    pub host: Option<&'a str>,
    /// Path and query.
    pub target: &'a str,
    pub authorization: Option<&'a str>,
    pub body: &'a [u8],
}

/// What to answer.
#[derive(Debug, PartialEq)]
pub struct AuthAnswer {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl AuthAnswer {
    fn json(status: u16, body: Value) -> Self {
        AuthAnswer {
            status,
            // Browser-based clients (a web inspector) read metadata and
            // tokens with fetch; the listener refuses non-local origins anyway.
            headers: vec![("access-control-allow-origin", "*".into())],
            content_type: "application/json",
            body: body.to_string().into_bytes(),
        }
    }

    /// An OAuth error (RFC 6749 §5.2).
    fn error(status: u16, error: &str, description: &str) -> Self {
        Self::json(status, json!({"error": error, "error_description": description}))
    }

    fn no_store(mut self) -> Self {
        self.headers.push(("cache-control", "no-store".into()));
        self
    }

    fn redirect(location: String) -> Self {
        AuthAnswer {
            status: 302,
            headers: vec![("location", location), ("cache-control", "no-store".into())],
            content_type: "text/plain; charset=utf-8",
            body: Vec::new(),
        }
    }

    fn text(status: u16, text: &str) -> Self {
        AuthAnswer {
            status,
            headers: Vec::new(),
            content_type: "text/plain; charset=utf-8",
            body: text.as_bytes().to_vec(),
        }
    }
}

struct Registered {
    redirect_uris: Vec<String>,
    /// `None` for a public client (`token_endpoint_auth_method` `none`).
    secret: Option<String>,
}

struct Code {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    scope: Option<String>,
    expires: Duration,
}

struct Grant {
    client_id: String,
    scope: Option<String>,
}

/// Where randomness comes from: fills the buffer, or says it could not.
pub type Random = Box<dyn FnMut(&mut [u8]) -> bool + Send>;

/// The mock's authorization server and the endpoint's gate.
pub struct AuthServer {
    /// `http://127.0.0.1:PORT`: the issuer and the base of every endpoint
    /// when the request names no usable `Host`.
    default_base: String,
    /// The base for the request being answered.
    base: String,
    endpoint_path: String,
    clients: HashMap<String, Registered>,
    codes: HashMap<String, Code>,
    /// Access token → (grant, expiry).
    access: HashMap<String, (Grant, Duration)>,
    refresh: HashMap<String, Grant>,
    random: Random,
    log: Vec<String>,
}

impl AuthServer {
    pub fn new(base: String, endpoint_path: String, random: Random) -> Self {
        AuthServer {
            default_base: base.clone(),
            base,
            endpoint_path,
            clients: HashMap::new(),
            codes: HashMap::new(),
            access: HashMap::new(),
            refresh: HashMap::new(),
            random,
            log: Vec::new(),
        }
    }

    /// The issuer as the listen address names it (clients reaching the mock
    /// by another name see that name).
    pub fn issuer(&self) -> &str {
        &self.default_base
    }

    /// The MCP endpoint's URL: the resource tokens are for (RFC 8707).
    pub fn resource(&self) -> String {
        format!("{}{}", self.base, self.endpoint_path)
    }

    fn prm_url(&self) -> String {
        format!("{}{PRM}{}", self.base, self.endpoint_path)
    }

    /// Lines for the person running the mock (never a token or a code).
    pub fn take_log(&mut self) -> Vec<String> {
        std::mem::take(&mut self.log)
    }

    /// Names everything after the `Host` the client used, when it is a
    /// plain host and port.
    fn reached_as(&mut self, host: Option<&str>) {
        let plain = |h: &&str| {
            !h.is_empty() && h.len() <= 255 && h.bytes().all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
        };
        self.base = match host.filter(plain) {
            Some(h) => format!("http://{h}"),
            None => self.default_base.clone(),
        };
    }

    /// Whether a request to the MCP endpoint may go on; else the 401 to send.
    pub fn admit(&mut self, authorization: Option<&str>, host: Option<&str>, now: Duration) -> Result<(), AuthAnswer> {
        self.reached_as(host);
        let token = authorization.and_then(|a| {
            let (scheme, token) = a.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        });
        let Some(token) = token else {
            return Err(self.unauthorized(None));
        };
        match self.access.get(token) {
            Some((_, expires)) if *expires > now => Ok(()),
            Some(_) => {
                self.access.remove(token);
                Err(self.unauthorized(Some("the access token expired")))
            }
            None => Err(self.unauthorized(Some("the access token was not issued by this mock"))),
        }
    }

    fn unauthorized(&mut self, invalid: Option<&str>) -> AuthAnswer {
        let mut challenge = format!("Bearer resource_metadata=\"{}\"", self.prm_url());
        let body = match invalid {
            Some(why) => {
                self.log.push(format!("401: {why}"));
                challenge.push_str(&format!(", error=\"invalid_token\", error_description=\"{why}\""));
                json!({"error": "invalid_token", "error_description": why})
            }
            None => {
                json!({"error": "invalid_token", "error_description": "an access token is required (mcpscope mock --auth)"})
            }
        };
        let mut a = AuthAnswer::json(401, body);
        a.headers.push(("www-authenticate", challenge));
        a
    }

    /// The answer when `req` is for the authorization server; `None` when
    /// it is for something else (the MCP endpoint, a 404).
    pub fn serve(&mut self, req: &AuthRequest, now: Duration) -> Option<AuthAnswer> {
        self.reached_as(req.host);
        let (path, query) = req.target.split_once('?').unwrap_or((req.target, ""));
        let known = [AUTHORIZE, TOKEN, REGISTER, AS_METADATA, OIDC_METADATA].contains(&path)
            || path == PRM
            || path.strip_prefix(PRM) == Some(self.endpoint_path.as_str());
        if !known || path == self.endpoint_path {
            return None;
        }
        if req.method == "OPTIONS" {
            // A browser's preflight before a cross-origin fetch.
            return Some(AuthAnswer {
                status: 204,
                headers: vec![
                    ("access-control-allow-origin", "*".into()),
                    ("access-control-allow-methods", "GET, POST, OPTIONS".into()),
                    (
                        "access-control-allow-headers",
                        "authorization, content-type, mcp-protocol-version".into(),
                    ),
                ],
                content_type: "text/plain; charset=utf-8",
                body: Vec::new(),
            });
        }
        let wanted = if path == TOKEN || path == REGISTER {
            "POST"
        } else {
            "GET"
        };
        if req.method != wanted {
            let mut a = AuthAnswer::text(405, &format!("mcpscope mock: {path} takes {wanted}"));
            a.headers.push(("allow", format!("{wanted}, OPTIONS")));
            return Some(a);
        }
        Some(match path {
            AUTHORIZE => self.authorize(query, now),
            TOKEN => self.token(req, now).no_store(),
            REGISTER => self.register(req.body, now),
            AS_METADATA | OIDC_METADATA => AuthAnswer::json(200, self.metadata()),
            _ => AuthAnswer::json(
                200,
                json!({
                    "resource": self.resource(),
                    "authorization_servers": [self.base],
                    "bearer_methods_supported": ["header"],
                    "resource_name": "mcpscope mock",
                }),
            ),
        })
    }

    fn metadata(&self) -> Value {
        let b = &self.base;
        json!({
            "issuer": b,
            "authorization_endpoint": format!("{b}{AUTHORIZE}"),
            "token_endpoint": format!("{b}{TOKEN}"),
            "registration_endpoint": format!("{b}{REGISTER}"),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_post", "client_secret_basic"],
            "authorization_response_iss_parameter_supported": true,
        })
    }

    /// A value no one can guess; without randomness nothing is issued.
    fn fresh(&mut self, prefix: &str) -> Result<String, AuthAnswer> {
        let mut b = [0u8; 24];
        if !(self.random)(&mut b) {
            return Err(AuthAnswer::error(
                503,
                "temporarily_unavailable",
                "the system's randomness failed: nothing can be issued",
            ));
        }
        Ok(format!(
            "{prefix}{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
        ))
    }

    /// Whether nothing more can be kept, once codes and access tokens past
    /// their time are forgotten.
    fn full(&mut self, now: Duration) -> bool {
        self.codes.retain(|_, c| c.expires > now);
        self.access.retain(|_, (_, expires)| *expires > now);
        self.clients.len() + self.codes.len() + self.access.len() + self.refresh.len() >= MAX_ENTRIES
    }

    fn register(&mut self, body: &[u8], now: Duration) -> AuthAnswer {
        let meta: Value = match serde_json::from_slice(body) {
            Ok(v @ Value::Object(_)) => v,
            _ => return AuthAnswer::error(400, "invalid_client_metadata", "the body is not a JSON object"),
        };
        let uris: Vec<String> = match meta.get("redirect_uris").and_then(Value::as_array) {
            Some(a) => a.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
            None => Vec::new(),
        };
        let method = meta
            .get("token_endpoint_auth_method")
            .and_then(Value::as_str)
            .unwrap_or("client_secret_basic");
        let grants: Vec<&str> = meta
            .get("grant_types")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_else(|| vec!["authorization_code"]);
        if grants.contains(&"authorization_code") && uris.is_empty() {
            return AuthAnswer::error(
                400,
                "invalid_redirect_uri",
                "redirect_uris is required for the code flow",
            );
        }
        if let Some(bad) = uris.iter().find(|u| url::Url::parse(u).is_err()) {
            return AuthAnswer::error(400, "invalid_redirect_uri", &format!("not a URL: {bad}"));
        }
        if !["none", "client_secret_post", "client_secret_basic"].contains(&method) {
            let why = format!(
                "token_endpoint_auth_method {method} is not supported (none, client_secret_post, client_secret_basic)"
            );
            return AuthAnswer::error(400, "invalid_client_metadata", &why);
        }
        if self.full(now) {
            return AuthAnswer::error(503, "temporarily_unavailable", "too many clients registered");
        }
        let client_id = match self.fresh("mock-client-") {
            Ok(id) => id,
            Err(a) => return a,
        };
        let secret = match (method != "none").then(|| self.fresh("mock-secret-")).transpose() {
            Ok(s) => s,
            Err(a) => return a,
        };
        let name = meta.get("client_name").and_then(Value::as_str).unwrap_or("a client");
        self.log.push(format!("registered {name} as {client_id} ({method})"));
        let mut answer = meta.clone();
        answer["client_id"] = json!(client_id);
        answer["client_id_issued_at"] = json!(0);
        answer["token_endpoint_auth_method"] = json!(method);
        if let Some(s) = &secret {
            answer["client_secret"] = json!(s);
            answer["client_secret_expires_at"] = json!(0);
        }
        self.clients.insert(
            client_id,
            Registered {
                redirect_uris: uris,
                secret,
            },
        );
        AuthAnswer::json(201, answer).no_store()
    }

    fn authorize(&mut self, query: &str, now: Duration) -> AuthAnswer {
        let q: HashMap<String, String> = url::form_urlencoded::parse(query.as_bytes()).into_owned().collect();
        let get = |k: &str| q.get(k).map(String::as_str);
        // Until the client and its redirect URI are known good, errors are
        // shown, not redirected (RFC 6749 §4.1.2.1).
        let Some(client_id) = get("client_id") else {
            return AuthAnswer::text(400, "mcpscope mock: /authorize needs client_id");
        };
        let Some(client) = self.clients.get(client_id) else {
            let text = format!("mcpscope mock: unknown client_id {client_id} (register it at {REGISTER} first)");
            return AuthAnswer::text(400, &text);
        };
        let redirect_uri = match get("redirect_uri") {
            Some(r) if client.redirect_uris.iter().any(|u| same_redirect(u, r)) => r.to_owned(),
            Some(r) => {
                let text = format!("mcpscope mock: redirect_uri {r} is not one this client registered");
                return AuthAnswer::text(400, &text);
            }
            None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
            None => return AuthAnswer::text(400, "mcpscope mock: redirect_uri is required"),
        };
        let state = get("state").map(str::to_owned);
        let issuer = self.base.clone();
        let back = |pairs: &[(&str, &str)]| {
            let mut u = match url::Url::parse(&redirect_uri) {
                Ok(u) => u,
                Err(_) => return AuthAnswer::text(400, "mcpscope mock: the redirect_uri is not a URL"),
            };
            {
                let mut qp = u.query_pairs_mut();
                for (k, v) in pairs {
                    qp.append_pair(k, v);
                }
                if let Some(s) = &state {
                    qp.append_pair("state", s);
                }
                qp.append_pair("iss", &issuer);
            }
            AuthAnswer::redirect(u.into())
        };
        let refuse = |error: &str, why: &str| back(&[("error", error), ("error_description", why)]);
        if get("response_type") != Some("code") {
            return refuse("unsupported_response_type", "only response_type=code is served");
        }
        let Some(challenge) = get("code_challenge") else {
            return refuse("invalid_request", "PKCE is required: code_challenge is missing");
        };
        if get("code_challenge_method") != Some("S256") {
            return refuse("invalid_request", "PKCE code_challenge_method must be S256");
        }
        if let Some(r) = get("resource")
            && !same_resource(r, &self.resource())
        {
            let why = format!("resource {r} is not this server's ({})", self.resource());
            return refuse("invalid_target", &why);
        }
        if self.full(now) {
            return refuse("temporarily_unavailable", "too many codes outstanding");
        }
        let code = match self.fresh("mock-code-") {
            Ok(c) => c,
            Err(a) => return a,
        };
        let scope = get("scope").map(str::to_owned);
        self.log.push(format!(
            "authorized {client_id}{} (approved at once: no one to ask)",
            scope.as_deref().map(|s| format!(" for scope {s}")).unwrap_or_default()
        ));
        let entry = Code {
            client_id: client_id.to_owned(),
            redirect_uri: redirect_uri.clone(),
            challenge: challenge.to_owned(),
            scope,
            expires: now + CODE_LIFETIME,
        };
        let answer = back(&[("code", &code)]);
        self.codes.insert(code, entry);
        answer
    }

    /// The client a token request comes from, its secret checked
    /// (client_secret_basic or client_secret_post), or none for a public one.
    fn client_of(&self, form: &HashMap<String, String>, authorization: Option<&str>) -> Result<String, AuthAnswer> {
        let basic = authorization.and_then(|a| {
            let (scheme, rest) = a.trim().split_once(' ')?;
            if !scheme.eq_ignore_ascii_case("basic") {
                return None;
            }
            let raw = base64::engine::general_purpose::STANDARD.decode(rest.trim()).ok()?;
            let raw = String::from_utf8(raw).ok()?;
            let (id, secret) = raw.split_once(':')?;
            // RFC 6749 §2.3.1: both form-urlencoded before being joined.
            let decode = |s: &str| {
                url::form_urlencoded::parse(format!("x={s}").as_bytes())
                    .next()
                    .map(|(_, v)| v.into_owned())
            };
            Some((decode(id)?, decode(secret)?))
        });
        let (id, secret) = match basic {
            Some((id, secret)) => (id, Some(secret)),
            None => match form.get("client_id") {
                Some(id) => (id.clone(), form.get("client_secret").cloned()),
                None => return Err(AuthAnswer::error(401, "invalid_client", "no client_id")),
            },
        };
        let Some(client) = self.clients.get(&id) else {
            return Err(AuthAnswer::error(
                401,
                "invalid_client",
                &format!("unknown client {id}"),
            ));
        };
        match (&client.secret, secret) {
            (None, _) => Ok(id),
            (Some(want), Some(got)) if same_secret(want, &got) => Ok(id),
            (Some(_), _) => Err(AuthAnswer::error(
                401,
                "invalid_client",
                "the client secret is missing or wrong",
            )),
        }
    }

    fn token(&mut self, req: &AuthRequest, now: Duration) -> AuthAnswer {
        let form: HashMap<String, String> = url::form_urlencoded::parse(req.body).into_owned().collect();
        let client_id = match self.client_of(&form, req.authorization) {
            Ok(id) => id,
            Err(a) => return a,
        };
        // Before a code or refresh token is spent: a refusal must not cost the grant.
        if self.full(now) {
            return AuthAnswer::error(503, "temporarily_unavailable", "too many tokens outstanding");
        }
        if let Some(r) = form.get("resource")
            && !same_resource(r, &self.resource())
        {
            return AuthAnswer::error(400, "invalid_target", &format!("resource {r} is not this server's"));
        }
        let grant = match form.get("grant_type").map(String::as_str) {
            Some("authorization_code") => {
                let Some(code) = form.get("code").and_then(|c| self.codes.remove(c)) else {
                    return AuthAnswer::error(400, "invalid_grant", "unknown or already used code");
                };
                if code.expires <= now {
                    return AuthAnswer::error(400, "invalid_grant", "the code expired");
                }
                if code.client_id != client_id {
                    return AuthAnswer::error(400, "invalid_grant", "the code was issued to another client");
                }
                if form.get("redirect_uri").is_some_and(|r| r != &code.redirect_uri) {
                    return AuthAnswer::error(
                        400,
                        "invalid_grant",
                        "redirect_uri differs from the authorization request's",
                    );
                }
                let Some(verifier) = form.get("code_verifier") else {
                    return AuthAnswer::error(400, "invalid_grant", "code_verifier is missing (PKCE)");
                };
                if pkce::s256(verifier) != code.challenge {
                    return AuthAnswer::error(400, "invalid_grant", "code_verifier does not match the code_challenge");
                }
                Grant {
                    client_id,
                    scope: code.scope,
                }
            }
            Some("refresh_token") => {
                let Some(grant) = form.get("refresh_token").and_then(|t| self.refresh.remove(t)) else {
                    return AuthAnswer::error(400, "invalid_grant", "unknown or already used refresh token");
                };
                if grant.client_id != client_id {
                    return AuthAnswer::error(400, "invalid_grant", "the refresh token was issued to another client");
                }
                grant
            }
            Some("client_credentials") => {
                if self.clients.get(&client_id).is_some_and(|c| c.secret.is_none()) {
                    return AuthAnswer::error(
                        400,
                        "unauthorized_client",
                        "client_credentials needs a confidential client",
                    );
                }
                Grant {
                    client_id,
                    scope: form.get("scope").cloned(),
                }
            }
            Some(g) => return AuthAnswer::error(400, "unsupported_grant_type", &format!("{g} is not served")),
            None => return AuthAnswer::error(400, "invalid_request", "grant_type is missing"),
        };
        let access = match self.fresh("mock-access-") {
            Ok(t) => t,
            Err(a) => return a,
        };
        let mut body = json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": ACCESS_TOKEN_LIFETIME.as_secs(),
        });
        if let Some(s) = &grant.scope {
            body["scope"] = json!(s);
        }
        let kind = form.get("grant_type").cloned().unwrap_or_default();
        self.log
            .push(format!("issued an access token to {} ({kind})", grant.client_id));
        let refresh = match (kind != "client_credentials")
            .then(|| self.fresh("mock-refresh-"))
            .transpose()
        {
            Ok(r) => r,
            Err(a) => return a,
        };
        if let Some(r) = &refresh {
            body["refresh_token"] = json!(r);
        }
        let granted = Grant {
            client_id: grant.client_id.clone(),
            scope: grant.scope.clone(),
        };
        self.access.insert(access, (granted, now + ACCESS_TOKEN_LIFETIME));
        if let Some(r) = refresh {
            self.refresh.insert(r, grant);
        }
        AuthAnswer::json(200, body)
    }
}

/// Redirect URIs match exactly, except that a loopback one may come back
/// with another port (RFC 8252 §7.3: native apps pick a free port each time).
fn same_redirect(registered: &str, given: &str) -> bool {
    if registered == given {
        return true;
    }
    let (Ok(mut a), Ok(mut b)) = (url::Url::parse(registered), url::Url::parse(given)) else {
        return false;
    };
    let loopback =
        |u: &url::Url| u.scheme() == "http" && matches!(u.host_str(), Some("127.0.0.1" | "[::1]" | "localhost"));
    if !loopback(&a) || !loopback(&b) {
        return false;
    }
    let _ = a.set_port(None);
    let _ = b.set_port(None);
    a == b
}

/// Compares in time that does not depend on where the strings differ.
fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// RFC 8707 resources compare as URLs, a trailing slash aside.
fn same_resource(given: &str, ours: &str) -> bool {
    given.trim_end_matches('/') == ours.trim_end_matches('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> AuthServer {
        let mut n = 0u8;
        let random: Random = Box::new(move |b: &mut [u8]| {
            n = n.wrapping_add(1);
            b.fill(n);
            true
        });
        AuthServer::new("http://127.0.0.1:9".into(), "/mcp".into(), random)
    }

    fn get(s: &mut AuthServer, target: &str) -> AuthAnswer {
        let req = AuthRequest {
            method: "GET",
            host: None,
            target,
            authorization: None,
            body: b"",
        };
        s.serve(&req, Duration::ZERO).expect("an auth path")
    }

    fn post(s: &mut AuthServer, target: &str, authorization: Option<&str>, body: &str, now: Duration) -> AuthAnswer {
        let req = AuthRequest {
            method: "POST",
            host: None,
            target,
            authorization,
            body: body.as_bytes(),
        };
        s.serve(&req, now).expect("an auth path")
    }

    fn body(a: &AuthAnswer) -> Value {
        serde_json::from_slice(&a.body).unwrap()
    }

    fn header<'a>(a: &'a AuthAnswer, name: &str) -> &'a str {
        a.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
            .unwrap()
    }

    fn register(s: &mut AuthServer, extra: Value) -> Value {
        let mut meta = json!({"redirect_uris": ["http://127.0.0.1:5000/callback"], "token_endpoint_auth_method": "none", "client_name": "t"});
        meta.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let a = post(s, "/register", None, &meta.to_string(), Duration::ZERO);
        assert_eq!(a.status, 201, "{a:?}");
        body(&a)
    }

    /// A code for a public client whose verifier is "v".
    fn code(s: &mut AuthServer, client_id: &str, redirect: &str) -> (AuthAnswer, Option<String>) {
        let target = format!(
            "/authorize?response_type=code&client_id={client_id}&redirect_uri={}&code_challenge={}&code_challenge_method=S256&state=st&resource=http%3A%2F%2F127.0.0.1%3A9%2Fmcp",
            url::form_urlencoded::byte_serialize(redirect.as_bytes()).collect::<String>(),
            pkce::s256("v")
        );
        let a = get(s, &target);
        let code = (a.status == 302)
            .then(|| url::Url::parse(header(&a, "location")).unwrap())
            .and_then(|u| u.query_pairs().find(|(k, _)| k == "code").map(|(_, v)| v.into_owned()));
        (a, code)
    }

    #[test]
    fn the_endpoint_asks_for_a_token_and_names_its_metadata() {
        let mut s = server();
        let a = s.admit(None, None, Duration::ZERO).unwrap_err();
        assert_eq!(a.status, 401);
        assert_eq!(
            header(&a, "www-authenticate"),
            "Bearer resource_metadata=\"http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp\""
        );
        let a = s.admit(Some("Bearer forged"), None, Duration::ZERO).unwrap_err();
        assert!(header(&a, "www-authenticate").contains("error=\"invalid_token\""));
        let prm = body(&get(&mut s, "/.well-known/oauth-protected-resource/mcp"));
        assert_eq!(prm["resource"], "http://127.0.0.1:9/mcp");
        assert_eq!(prm["authorization_servers"][0], "http://127.0.0.1:9");
        let meta = body(&get(&mut s, "/.well-known/oauth-authorization-server"));
        assert_eq!(meta["token_endpoint"], "http://127.0.0.1:9/token");
        assert_eq!(meta["code_challenge_methods_supported"], json!(["S256"]));
        // Not the server's: the endpoint itself, and unknown paths.
        let req = AuthRequest {
            method: "POST",
            host: None,
            target: "/mcp",
            authorization: None,
            body: b"{}",
        };
        assert!(s.serve(&req, Duration::ZERO).is_none());
    }

    #[test]
    fn the_code_flow_with_pkce_gives_a_token_the_endpoint_takes() {
        let mut s = server();
        let client = register(&mut s, json!({}));
        let id = client["client_id"].as_str().unwrap().to_owned();
        assert!(client.get("client_secret").is_none(), "a public client has no secret");
        // A loopback redirect may come back on another port.
        let (a, code) = code(&mut s, &id, "http://127.0.0.1:6001/callback");
        let location = url::Url::parse(header(&a, "location")).unwrap();
        let q: HashMap<_, _> = location.query_pairs().into_owned().collect();
        assert_eq!((q["state"].as_str(), q["iss"].as_str()), ("st", "http://127.0.0.1:9"));
        let code = code.unwrap();
        let wrong = format!("grant_type=authorization_code&code={code}&code_verifier=w&client_id={id}");
        assert_eq!(
            body(&post(&mut s, "/token", None, &wrong, Duration::ZERO))["error"],
            "invalid_grant"
        );
        // The code was spent by the failed attempt too (single use).
        let again = format!("grant_type=authorization_code&code={code}&code_verifier=v&client_id={id}");
        assert_eq!(
            body(&post(&mut s, "/token", None, &again, Duration::ZERO))["error"],
            "invalid_grant"
        );
        let (_, code) = self::code(&mut s, &id, "http://127.0.0.1:6001/callback");
        let form = format!(
            "grant_type=authorization_code&code={}&code_verifier=v&client_id={id}&redirect_uri=http%3A%2F%2F127.0.0.1%3A6001%2Fcallback",
            code.unwrap()
        );
        let a = post(&mut s, "/token", None, &form, Duration::ZERO);
        assert_eq!(a.status, 200, "{a:?}");
        assert_eq!(header(&a, "cache-control"), "no-store");
        let t = body(&a);
        let access = t["access_token"].as_str().unwrap();
        assert!(
            s.admit(Some(&format!("Bearer {access}")), None, Duration::from_secs(5))
                .is_ok()
        );
        let late = ACCESS_TOKEN_LIFETIME + Duration::from_secs(1);
        assert!(
            s.admit(Some(&format!("Bearer {access}")), None, late).is_err(),
            "expired"
        );
        // Refresh rotates: the old refresh token is spent.
        let r = t["refresh_token"].as_str().unwrap().to_owned();
        let form = format!("grant_type=refresh_token&refresh_token={r}&client_id={id}");
        let fresh = body(&post(&mut s, "/token", None, &form, late));
        assert!(
            s.admit(
                Some(&format!("Bearer {}", fresh["access_token"].as_str().unwrap())),
                None,
                late
            )
            .is_ok()
        );
        assert_eq!(
            body(&post(&mut s, "/token", None, &form, late))["error"],
            "invalid_grant"
        );
        // Nothing secret reaches the log.
        for line in s.take_log() {
            assert!(
                !line.contains("mock-access-") && !line.contains("mock-code-") && !line.contains("mock-refresh-"),
                "{line}"
            );
        }
    }

    /// A client that reaches the mock as `localhost` is told `localhost`
    /// (the resource must match the URL it uses); an odd Host is not echoed.
    #[test]
    fn everything_is_named_after_the_host_the_client_used() {
        let mut s = server();
        let mut get_as = |host: &str, target: &str| {
            let req = AuthRequest {
                method: "GET",
                host: Some(host),
                target,
                authorization: None,
                body: b"",
            };
            body(&s.serve(&req, Duration::ZERO).unwrap())
        };
        let prm = get_as("localhost:9", "/.well-known/oauth-protected-resource/mcp");
        assert_eq!(prm["resource"], "http://localhost:9/mcp");
        assert_eq!(prm["authorization_servers"][0], "http://localhost:9");
        let meta = get_as("localhost:9", "/.well-known/oauth-authorization-server");
        assert_eq!(meta["issuer"], "http://localhost:9");
        let odd = get_as("x\"y", "/.well-known/oauth-authorization-server");
        assert_eq!(
            odd["issuer"], "http://127.0.0.1:9",
            "not a plain host: the listen address"
        );
        let a = s.admit(None, Some("localhost:9"), Duration::ZERO).unwrap_err();
        assert!(header(&a, "www-authenticate").contains("http://localhost:9/.well-known/"));
    }

    #[test]
    fn bad_authorization_requests_are_shown_or_redirected_with_an_error() {
        let mut s = server();
        let id = register(&mut s, json!({}))["client_id"].as_str().unwrap().to_owned();
        // Unknown client, or a redirect URI it did not register: shown, never redirected.
        assert_eq!(code(&mut s, "nobody", "http://127.0.0.1:5000/callback").0.status, 400);
        assert_eq!(code(&mut s, &id, "https://evil.example/callback").0.status, 400);
        assert_eq!(code(&mut s, &id, "http://127.0.0.1:5000/other").0.status, 400);
        // No PKCE: back to the client with an error.
        let a = get(
            &mut s,
            &format!("/authorize?response_type=code&client_id={id}&state=st"),
        );
        assert_eq!(a.status, 302);
        assert!(header(&a, "location").contains("error=invalid_request"), "{a:?}");
        assert!(header(&a, "location").contains("state=st"), "{a:?}");
        // Another resource than this server.
        let target = format!(
            "/authorize?response_type=code&client_id={id}&code_challenge=x&code_challenge_method=S256&resource=https%3A%2F%2Felsewhere"
        );
        assert!(header(&get(&mut s, &target), "location").contains("error=invalid_target"));
        // plain PKCE is refused.
        let target =
            format!("/authorize?response_type=code&client_id={id}&code_challenge=x&code_challenge_method=plain");
        assert!(header(&get(&mut s, &target), "location").contains("error=invalid_request"));
        // Registration without redirect URIs for the code flow.
        let a = post(&mut s, "/register", None, r#"{"client_name":"x"}"#, Duration::ZERO);
        assert_eq!(
            (a.status, body(&a)["error"].as_str()),
            (400, Some("invalid_redirect_uri"))
        );
        let a = post(&mut s, "/register", None, "not json", Duration::ZERO);
        assert_eq!(a.status, 400);
        // Wrong method on an endpoint.
        let req = AuthRequest {
            method: "GET",
            host: None,
            target: "/token",
            authorization: None,
            body: b"",
        };
        assert_eq!(s.serve(&req, Duration::ZERO).unwrap().status, 405);
    }

    #[test]
    fn confidential_clients_prove_their_secret_and_may_use_client_credentials() {
        let mut s = server();
        let c = register(
            &mut s,
            json!({"token_endpoint_auth_method": "client_secret_basic", "grant_types": ["client_credentials"], "redirect_uris": []}),
        );
        let (id, secret) = (c["client_id"].as_str().unwrap(), c["client_secret"].as_str().unwrap());
        let basic = |secret: &str| {
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"))
            )
        };
        let form = "grant_type=client_credentials&scope=read";
        let a = post(&mut s, "/token", Some(&basic("wrong")), form, Duration::ZERO);
        assert_eq!((a.status, body(&a)["error"].as_str()), (401, Some("invalid_client")));
        let a = post(&mut s, "/token", Some(&basic(secret)), form, Duration::ZERO);
        let t = body(&a);
        assert_eq!((a.status, t["scope"].as_str()), (200, Some("read")), "{t}");
        assert!(t.get("refresh_token").is_none());
        // A public client may not.
        let p = register(&mut s, json!({}));
        let form = format!(
            "grant_type=client_credentials&client_id={}",
            p["client_id"].as_str().unwrap()
        );
        assert_eq!(
            body(&post(&mut s, "/token", None, &form, Duration::ZERO))["error"],
            "unauthorized_client"
        );
    }

    #[test]
    fn loopback_redirects_may_change_port_and_nothing_else() {
        assert!(same_redirect("http://127.0.0.1:1/cb", "http://127.0.0.1:2/cb"));
        assert!(same_redirect("http://localhost/cb", "http://localhost:2/cb"));
        assert!(!same_redirect("http://127.0.0.1:1/cb", "http://127.0.0.1:1/other"));
        assert!(!same_redirect("https://app.example:1/cb", "https://app.example:2/cb"));
        assert!(!same_redirect("http://127.0.0.1:1/cb", "http://localhost:1/cb"));
    }
}
