//! Token requests (RFC 6749 §4.1.3, §6, §4.4; RFC 8693 token exchange;
//! RFC 7523 JWT bearer), client authentication at the token endpoint
//! (RFC 6749 §2.3.1, RFC 7523 §2.2) and reading the answer (§5.1, §5.2).

use super::AuthError;
use super::discovery::ServerMetadata;
use super::registration::Client;
use base64::Engine as _;
use serde_json::Value;

pub const GRANT_TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
pub const GRANT_JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
pub const TOKEN_TYPE_ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";
pub const TOKEN_TYPE_ID_TOKEN: &str = "urn:ietf:params:oauth:token-type:id_token";
pub const ASSERTION_TYPE_JWT: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// What is asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Grant {
    AuthorizationCode {
        code: String,
        redirect_uri: String,
        verifier: String,
    },
    RefreshToken {
        refresh_token: String,
    },
    ClientCredentials,
    /// RFC 7523 §2.1: an assertion (an ID-JAG) as the grant.
    JwtBearer {
        assertion: String,
    },
    /// RFC 8693 at the identity provider: an ID token for an ID-JAG whose
    /// audience is the MCP server's authorization server.
    IdJagExchange {
        id_token: String,
        audience: String,
    },
}

impl Grant {
    pub fn grant_type(&self) -> &'static str {
        match self {
            Grant::AuthorizationCode { .. } => "authorization_code",
            Grant::RefreshToken { .. } => "refresh_token",
            Grant::ClientCredentials => "client_credentials",
            Grant::JwtBearer { .. } => GRANT_JWT_BEARER,
            Grant::IdJagExchange { .. } => GRANT_TOKEN_EXCHANGE,
        }
    }
}

/// How the client proves who it is at the token endpoint.
#[derive(Clone, PartialEq, Eq)]
pub enum ClientAuth {
    /// A public client: `client_id` in the body.
    None { client_id: String },
    /// `Authorization: Basic` (RFC 6749 §2.3.1).
    SecretBasic { client_id: String, secret: String },
    /// `client_id` and `client_secret` in the body.
    SecretPost { client_id: String, secret: String },
    /// A signed assertion; the client id is its subject, not a body parameter.
    PrivateKeyJwt { assertion: String },
    /// Nothing at all.
    Omit,
}

impl std::fmt::Debug for ClientAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.method())
    }
}

impl ClientAuth {
    /// The RFC 8414 name of the method.
    pub fn method(&self) -> &'static str {
        match self {
            ClientAuth::None { .. } => "none",
            ClientAuth::SecretBasic { .. } => "client_secret_basic",
            ClientAuth::SecretPost { .. } => "client_secret_post",
            ClientAuth::PrivateKeyJwt { .. } => "private_key_jwt",
            ClientAuth::Omit => "none (no client_id)",
        }
    }
}

/// Which token endpoint auth method a client uses: the one fixed at
/// registration, else a signed assertion when there is a key, else (with
/// a secret) Basic where the server allows it (RFC 8414's default), then
/// POST, else none.
pub fn choose_method(client: &Client, meta: &ServerMetadata, has_key: bool) -> &'static str {
    match client.auth_method.as_deref() {
        Some("client_secret_basic") if client.client_secret.is_some() => return "client_secret_basic",
        Some("client_secret_post") if client.client_secret.is_some() => return "client_secret_post",
        Some("private_key_jwt") if has_key => return "private_key_jwt",
        Some("none") => return "none",
        _ => {}
    }
    if has_key && meta.supports_auth_method("private_key_jwt") {
        return "private_key_jwt";
    }
    if client.client_secret.is_some() {
        if meta.supports_auth_method("client_secret_basic") {
            return "client_secret_basic";
        }
        if meta.supports_auth_method("client_secret_post") {
            return "client_secret_post";
        }
    }
    if has_key {
        return "private_key_jwt";
    }
    "none"
}

/// A form POST to make.
#[derive(Clone, PartialEq, Eq)]
pub struct TokenRequest {
    pub form: Vec<(String, String)>,
    pub headers: Vec<(String, String)>,
}

fn form_encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// `Basic base64(urlencode(id) ":" urlencode(secret))`.
pub fn basic_header(client_id: &str, secret: &str) -> String {
    let pair = format!("{}:{}", form_encode(client_id), form_encode(secret));
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair))
}

/// The form and headers of a token request. `resource` (RFC 8707) is the
/// same string as in the authorization request; `scopes` only where given.
pub fn request(grant: &Grant, auth: &ClientAuth, resource: Option<&str>, scopes: Option<&[String]>) -> TokenRequest {
    let mut form: Vec<(String, String)> = vec![("grant_type".into(), grant.grant_type().into())];
    let mut push = |k: &str, v: &str| form.push((k.to_owned(), v.to_owned()));
    match grant {
        Grant::AuthorizationCode {
            code,
            redirect_uri,
            verifier,
        } => {
            push("code", code);
            push("redirect_uri", redirect_uri);
            push("code_verifier", verifier);
        }
        Grant::RefreshToken { refresh_token } => push("refresh_token", refresh_token),
        Grant::ClientCredentials => {}
        Grant::JwtBearer { assertion } => push("assertion", assertion),
        Grant::IdJagExchange { id_token, audience } => {
            push("requested_token_type", TOKEN_TYPE_ID_JAG);
            push("subject_token", id_token);
            push("subject_token_type", TOKEN_TYPE_ID_TOKEN);
            push("audience", audience);
        }
    }
    if let Some(r) = resource {
        push("resource", r);
    }
    if let Some(s) = scopes.filter(|s| !s.is_empty()) {
        push("scope", &s.join(" "));
    }
    let mut headers = vec![
        (
            "Content-Type".to_owned(),
            "application/x-www-form-urlencoded".to_owned(),
        ),
        ("Accept".to_owned(), "application/json".to_owned()),
    ];
    match auth {
        ClientAuth::None { client_id } => push("client_id", client_id),
        ClientAuth::SecretPost { client_id, secret } => {
            push("client_id", client_id);
            push("client_secret", secret);
        }
        ClientAuth::SecretBasic { client_id, secret } => {
            headers.push(("Authorization".to_owned(), basic_header(client_id, secret)));
        }
        ClientAuth::PrivateKeyJwt { assertion } => {
            push("client_assertion_type", ASSERTION_TYPE_JWT);
            push("client_assertion", assertion);
        }
        ClientAuth::Omit => {}
    }
    TokenRequest { form, headers }
}

/// What a token endpoint issued.
#[derive(Clone, PartialEq, Eq)]
pub struct TokenSet {
    pub access_token: String,
    pub token_type: String,
    /// Unix seconds.
    pub expires_at: Option<u64>,
    pub refresh_token: Option<String>,
    /// What was granted, when the server says.
    pub scope: Option<Vec<String>>,
    pub issued_token_type: Option<String>,
    pub id_token: Option<String>,
}

impl std::fmt::Debug for TokenSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSet")
            .field("access_token", &"****")
            .field("token_type", &self.token_type)
            .field("expires_at", &self.expires_at)
            .field("refresh_token", &self.refresh_token.as_ref().map(|_| "****"))
            .field("scope", &self.scope)
            .finish()
    }
}

impl TokenSet {
    /// Whether it expires within `margin` seconds of `now`.
    pub fn expires_within(&self, now: u64, margin: u64) -> bool {
        self.expires_at.is_some_and(|e| e <= now + margin)
    }
}

/// The RFC 6749 §5.2 error in a body, if it has one.
pub fn oauth_error(body: &[u8]) -> (Option<String>, Option<String>) {
    let v: Option<Value> = serde_json::from_slice(body).ok();
    let s = |k: &str| {
        v.as_ref()
            .and_then(|v| v.get(k))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    (s("error"), s("error_description"))
}

/// Reads a token answer. `now` turns `expires_in` into a time.
pub fn parse_response(status: u16, body: &[u8], now: u64) -> Result<TokenSet, AuthError> {
    let refused = || {
        let (error, description) = oauth_error(body);
        AuthError::TokenRefused {
            status,
            error,
            description,
        }
    };
    if !(200..300).contains(&status) {
        return Err(refused());
    }
    let v: Value = serde_json::from_slice(body).map_err(|_| AuthError::TokenRefused {
        status,
        error: None,
        description: Some("the answer is not JSON".into()),
    })?;
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let Some(access_token) = s("access_token").filter(|t| !t.is_empty()) else {
        return Err(AuthError::TokenRefused {
            status,
            error: s("error"),
            description: Some(s("error_description").unwrap_or_else(|| "the answer has no access_token".into())),
        });
    };
    let expires_in = v.get("expires_in").and_then(|e| {
        e.as_u64()
            .or_else(|| e.as_str().and_then(|s| s.trim().parse().ok()))
            .or_else(|| e.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
    });
    Ok(TokenSet {
        access_token,
        token_type: s("token_type").unwrap_or_else(|| "Bearer".into()),
        expires_at: expires_in.map(|e| now + e),
        refresh_token: s("refresh_token").filter(|t| !t.is_empty()),
        scope: s("scope").map(|sc| sc.split(' ').filter(|x| !x.is_empty()).map(str::to_owned).collect()),
        issued_token_type: s("issued_token_type"),
        id_token: s("id_token"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::auth::registration::ClientKind;

    fn client(secret: Option<&str>, method: Option<&str>) -> Client {
        Client {
            client_id: "id".into(),
            client_secret: secret.map(str::to_owned),
            auth_method: method.map(str::to_owned),
            kind: ClientKind::Registered,
            issuer: None,
        }
    }

    fn meta(methods: &[&str]) -> ServerMetadata {
        ServerMetadata {
            token_endpoint_auth_methods_supported: Some(methods.iter().map(|m| (*m).to_owned()).collect()),
            ..ServerMetadata::default()
        }
    }

    #[test]
    fn method_choice() {
        // The registration's answer wins.
        assert_eq!(
            choose_method(
                &client(Some("s"), Some("client_secret_post")),
                &meta(&["client_secret_basic"]),
                false
            ),
            "client_secret_post"
        );
        assert_eq!(
            choose_method(&client(Some("s"), Some("none")), &meta(&[]), false),
            "none"
        );
        // Else what the server lists, Basic first.
        assert_eq!(
            choose_method(
                &client(Some("s"), None),
                &meta(&["client_secret_post", "client_secret_basic"]),
                false
            ),
            "client_secret_basic"
        );
        assert_eq!(
            choose_method(&client(Some("s"), None), &meta(&["client_secret_post"]), false),
            "client_secret_post"
        );
        // RFC 8414 default when nothing is listed.
        assert_eq!(
            choose_method(&client(Some("s"), None), &ServerMetadata::default(), false),
            "client_secret_basic"
        );
        assert_eq!(choose_method(&client(None, None), &meta(&["none"]), false), "none");
        assert_eq!(
            choose_method(&client(None, None), &meta(&["private_key_jwt"]), true),
            "private_key_jwt"
        );
    }

    #[test]
    fn client_authentication_encodings() {
        let g = Grant::ClientCredentials;
        let basic = request(
            &g,
            &ClientAuth::SecretBasic {
                client_id: "a b:c".into(),
                secret: "p%ss:".into(),
            },
            Some("http://r"),
            None,
        );
        let auth = basic.headers.iter().find(|(k, _)| k == "Authorization").unwrap();
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(auth.1.strip_prefix("Basic ").unwrap())
            .unwrap();
        assert_eq!(String::from_utf8(decoded).unwrap(), "a+b%3Ac:p%25ss%3A");
        assert!(!basic.form.iter().any(|(k, _)| k == "client_id"));
        assert_eq!(
            basic.form,
            [
                ("grant_type".to_owned(), "client_credentials".to_owned()),
                ("resource".to_owned(), "http://r".to_owned())
            ]
        );
        let post = request(
            &g,
            &ClientAuth::SecretPost {
                client_id: "id".into(),
                secret: "s".into(),
            },
            None,
            Some(&["a".to_owned(), "b".to_owned()]),
        );
        assert!(post.form.contains(&("client_secret".into(), "s".into())));
        assert!(post.form.contains(&("scope".into(), "a b".into())));
        let jwt = request(
            &g,
            &ClientAuth::PrivateKeyJwt {
                assertion: "x.y.z".into(),
            },
            None,
            None,
        );
        assert!(
            jwt.form
                .contains(&("client_assertion_type".into(), ASSERTION_TYPE_JWT.into()))
        );
        assert!(!jwt.form.iter().any(|(k, _)| k == "client_id"));
        let none = request(
            &Grant::AuthorizationCode {
                code: "c".into(),
                redirect_uri: "r".into(),
                verifier: "v".into(),
            },
            &ClientAuth::None { client_id: "id".into() },
            Some("http://r"),
            None,
        );
        let keys: Vec<&str> = none.form.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "grant_type",
                "code",
                "redirect_uri",
                "code_verifier",
                "resource",
                "client_id"
            ]
        );
    }

    #[test]
    fn id_jag_exchange_form() {
        let r = request(
            &Grant::IdJagExchange {
                id_token: "idt".into(),
                audience: "http://as".into(),
            },
            &ClientAuth::None {
                client_id: "idp-client".into(),
            },
            Some("http://localhost:1/mcp"),
            None,
        );
        let get = |k: &str| r.form.iter().find(|(a, _)| a == k).map(|(_, v)| v.as_str());
        assert_eq!(get("grant_type"), Some(GRANT_TOKEN_EXCHANGE));
        assert_eq!(get("requested_token_type"), Some(TOKEN_TYPE_ID_JAG));
        assert_eq!(get("subject_token_type"), Some(TOKEN_TYPE_ID_TOKEN));
        assert_eq!(get("audience"), Some("http://as"));
        assert_eq!(get("resource"), Some("http://localhost:1/mcp"));
    }

    #[test]
    fn answers() {
        let t = parse_response(
            200,
            br#"{"access_token":"at","token_type":"Bearer","expires_in":3600,"refresh_token":"rt","scope":"a b"}"#,
            100,
        )
        .unwrap();
        assert_eq!(t.expires_at, Some(3700));
        assert_eq!(t.scope, Some(vec!["a".into(), "b".into()]));
        assert!(t.expires_within(3690, 30));
        assert!(!t.expires_within(100, 30));
        let dbg = format!("{t:?}");
        assert!(!dbg.contains("\"at\"") && !dbg.contains("rt"), "{dbg}");
        assert_eq!(
            parse_response(
                400,
                br#"{"error":"invalid_grant","error_description":"code expired"}"#,
                0
            ),
            Err(AuthError::TokenRefused {
                status: 400,
                error: Some("invalid_grant".into()),
                description: Some("code expired".into())
            })
        );
        assert!(parse_response(200, b"<html>", 0).is_err());
        assert!(parse_response(200, br#"{"token_type":"Bearer"}"#, 0).is_err());
        assert_eq!(
            parse_response(200, br#"{"access_token":"a","expires_in":"60"}"#, 0)
                .unwrap()
                .expires_at,
            Some(60)
        );
    }
}
