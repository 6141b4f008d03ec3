//! Which client identity to present to an authorization server, in the
//! specification's order of preference: credentials the user registered
//! there, a Client ID Metadata Document URL (when the server accepts
//! them), dynamic client registration (RFC 7591), else a clear refusal.
//! Registered credentials belong to the issuer that issued them (2026-07-28
//! "Authorization Server Binding") and are never shown to another.

use super::AuthError;
use super::discovery::ServerMetadata;
use serde_json::{Value, json};

/// How the client id came to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientKind {
    /// Given by the user (`--client-id`).
    PreRegistered,
    /// The URL of a Client ID Metadata Document.
    MetadataDocument,
    /// Issued by dynamic client registration.
    Registered,
}

impl ClientKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ClientKind::PreRegistered => "pre-registered",
            ClientKind::MetadataDocument => "client metadata document",
            ClientKind::Registered => "dynamically registered",
        }
    }
}

/// A client identity at one authorization server.
#[derive(Clone, PartialEq, Eq)]
pub struct Client {
    pub client_id: String,
    pub client_secret: Option<String>,
    /// The token endpoint auth method fixed at registration, if any.
    pub auth_method: Option<String>,
    pub kind: ClientKind,
    /// The issuer the credentials belong to (`None`: usable anywhere, as a
    /// metadata document URL, or pre-registered without a binding).
    pub issuer: Option<String>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "****"))
            .field("auth_method", &self.auth_method)
            .field("kind", &self.kind)
            .field("issuer", &self.issuer)
            .finish()
    }
}

/// What the user configured about the client's identity.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ClientSettings {
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    /// The issuer the pre-registered credentials belong to; they are not
    /// sent to any other.
    pub client_issuer: Option<String>,
    /// An `https` URL with a path: the Client ID Metadata Document.
    pub metadata_document_url: Option<String>,
    /// `client_name` for dynamic registration.
    pub client_name: String,
}

impl std::fmt::Debug for ClientSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSettings")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "****"))
            .field("client_issuer", &self.client_issuer)
            .field("metadata_document_url", &self.metadata_document_url)
            .finish()
    }
}

/// Checks a Client ID Metadata Document URL: `https` with a path (2025-11-25 "Client ID Metadata Documents").
pub fn check_metadata_document_url(url: &str) -> Result<(), MetadataUrlError> {
    let u = url::Url::parse(url).map_err(|error| MetadataUrlError::NotAUrl {
        url: url.to_owned(),
        error,
    })?;
    let why = if u.scheme() != "https" {
        "must be an https URL"
    } else if u.path().trim_matches('/').is_empty() {
        "must have a path"
    } else if u.fragment().is_some() {
        "must not have a fragment"
    } else {
        return Ok(());
    };
    Err(MetadataUrlError::Unfit {
        url: url.to_owned(),
        why,
    })
}

/// A `--client-metadata-url` that cannot name a client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetadataUrlError {
    #[error("--client-metadata-url {url:?} is not a URL: {error}")]
    NotAUrl { url: String, error: url::ParseError },
    #[error("--client-metadata-url {why}, got {url:?}")]
    Unfit { url: String, why: &'static str },
}

/// What to do about the client identity.
#[derive(Clone, Debug, PartialEq)]
pub enum Plan {
    Use(Client),
    /// Register dynamically: POST this JSON to the endpoint.
    Register {
        endpoint: String,
        body: Value,
    },
    Impossible(AuthError),
}

/// Chooses the identity for `issuer` (`stored`: a client registered there
/// earlier). `redirect_uri` is needed only when registering.
pub fn plan(
    settings: &ClientSettings,
    meta: &ServerMetadata,
    issuer: &str,
    stored: Option<&Client>,
    redirect_uri: &str,
) -> Plan {
    if let Some(id) = &settings.client_id {
        if let Some(bound) = &settings.client_issuer
            && bound != issuer
        {
            return Plan::Impossible(AuthError::CredentialsForOtherIssuer {
                bound: bound.clone(),
                issuer: issuer.to_owned(),
            });
        }
        return Plan::Use(Client {
            client_id: id.clone(),
            client_secret: settings.client_secret.clone(),
            auth_method: None,
            kind: ClientKind::PreRegistered,
            issuer: settings.client_issuer.clone(),
        });
    }
    if let Some(c) = stored.filter(|c| c.issuer.as_deref() == Some(issuer)) {
        return Plan::Use(c.clone());
    }
    if meta.client_id_metadata_document_supported
        && let Some(url) = &settings.metadata_document_url
    {
        return Plan::Use(Client {
            client_id: url.clone(),
            client_secret: None,
            auth_method: Some("none".into()),
            kind: ClientKind::MetadataDocument,
            issuer: None,
        });
    }
    if let Some(endpoint) = &meta.registration_endpoint {
        return Plan::Register {
            endpoint: endpoint.clone(),
            body: registration_body(settings, meta, redirect_uri),
        };
    }
    Plan::Impossible(AuthError::NoClientIdentity {
        issuer: issuer.to_owned(),
    })
}

/// The RFC 7591 request: a native public client (2026-07-28 asks for
/// `application_type`), able to refresh, authenticating the way the
/// server prefers among those a public client can use.
pub fn registration_body(settings: &ClientSettings, meta: &ServerMetadata, redirect_uri: &str) -> Value {
    let listed = meta.token_endpoint_auth_methods_supported.as_deref();
    let method = match listed {
        None => "none",
        Some(l) if l.iter().any(|m| m == "none") => "none",
        Some(l) => l
            .iter()
            .find(|m| *m == "client_secret_basic" || *m == "client_secret_post")
            .map_or("none", String::as_str),
    };
    let name = if settings.client_name.is_empty() {
        "mcpscope"
    } else {
        settings.client_name.as_str()
    };
    json!({
        "client_name": name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": method,
        "application_type": "native",
    })
}

/// Reads a registration answer (any 2xx with a `client_id`).
pub fn parse_registration(status: u16, body: &[u8], issuer: &str) -> Result<Client, AuthError> {
    let v: Option<Value> = serde_json::from_slice(body).ok();
    let s = |k: &str| {
        v.as_ref()
            .and_then(|v| v.get(k))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    if !(200..300).contains(&status) {
        let (error, description) = super::token::oauth_error(body);
        return Err(AuthError::RegistrationRefused {
            status,
            error,
            description,
        });
    }
    let Some(client_id) = s("client_id") else {
        return Err(AuthError::RegistrationRefused {
            status,
            error: None,
            description: Some("the answer has no client_id".into()),
        });
    };
    Ok(Client {
        client_id,
        client_secret: s("client_secret"),
        auth_method: s("token_endpoint_auth_method"),
        kind: ClientKind::Registered,
        issuer: Some(issuer.to_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> ServerMetadata {
        ServerMetadata {
            issuer: Some("http://as".into()),
            registration_endpoint: Some("http://as/register".into()),
            ..ServerMetadata::default()
        }
    }

    #[test]
    fn order_of_preference() {
        let cimd = ClientSettings {
            metadata_document_url: Some("https://c.example/m.json".into()),
            ..ClientSettings::default()
        };
        let pre = ClientSettings {
            client_id: Some("pre".into()),
            client_secret: Some("s".into()),
            ..cimd.clone()
        };
        let mut m = meta();
        m.client_id_metadata_document_supported = true;
        // Pre-registered wins over everything.
        assert!(
            matches!(plan(&pre, &m, "http://as", None, "r"), Plan::Use(c) if c.client_id == "pre" && c.kind == ClientKind::PreRegistered)
        );
        // Then a client registered at this issuer before.
        let stored = Client {
            client_id: "dcr".into(),
            client_secret: None,
            auth_method: None,
            kind: ClientKind::Registered,
            issuer: Some("http://as".into()),
        };
        assert!(matches!(plan(&cimd, &m, "http://as", Some(&stored), "r"), Plan::Use(c) if c.client_id == "dcr"));
        // …but never one registered elsewhere.
        assert!(
            matches!(plan(&cimd, &m, "http://as2", Some(&stored), "r"), Plan::Use(c) if c.kind == ClientKind::MetadataDocument)
        );
        // A metadata document only where the server accepts them.
        m.client_id_metadata_document_supported = false;
        assert!(matches!(plan(&cimd, &m, "http://as", None, "r"), Plan::Register { .. }));
        // Nothing possible.
        m.registration_endpoint = None;
        assert!(matches!(
            plan(&cimd, &m, "http://as", None, "r"),
            Plan::Impossible(AuthError::NoClientIdentity { .. })
        ));
    }

    #[test]
    fn bound_credentials_stay_with_their_issuer() {
        let s = ClientSettings {
            client_id: Some("pre".into()),
            client_issuer: Some("http://as1".into()),
            ..ClientSettings::default()
        };
        assert!(matches!(plan(&s, &meta(), "http://as1", None, "r"), Plan::Use(_)));
        assert!(matches!(
            plan(&s, &meta(), "http://as2", None, "r"),
            Plan::Impossible(AuthError::CredentialsForOtherIssuer { .. })
        ));
    }

    #[test]
    fn registration_request_and_answer() {
        let mut m = meta();
        let b = registration_body(&ClientSettings::default(), &m, "http://127.0.0.1:5/callback");
        assert_eq!(b["token_endpoint_auth_method"], "none");
        assert_eq!(b["application_type"], "native");
        assert_eq!(b["grant_types"], json!(["authorization_code", "refresh_token"]));
        assert_eq!(b["redirect_uris"], json!(["http://127.0.0.1:5/callback"]));
        m.token_endpoint_auth_methods_supported = Some(vec!["private_key_jwt".into(), "client_secret_post".into()]);
        assert_eq!(
            registration_body(&ClientSettings::default(), &m, "r")["token_endpoint_auth_method"],
            "client_secret_post"
        );

        let c = parse_registration(
            201,
            br#"{"client_id":"id","client_secret":"sec","token_endpoint_auth_method":"client_secret_basic"}"#,
            "http://as",
        )
        .unwrap();
        assert_eq!(c.auth_method.as_deref(), Some("client_secret_basic"));
        assert_eq!(c.issuer.as_deref(), Some("http://as"));
        assert!(!format!("{c:?}").contains("sec\""));
        assert_eq!(
            parse_registration(
                400,
                br#"{"error":"invalid_redirect_uri","error_description":"no"}"#,
                "i"
            ),
            Err(AuthError::RegistrationRefused {
                status: 400,
                error: Some("invalid_redirect_uri".into()),
                description: Some("no".into())
            })
        );
        assert!(parse_registration(201, b"{}", "i").is_err());
        assert!(parse_registration(500, b"<html>", "i").is_err());
    }

    #[test]
    fn metadata_document_urls() {
        assert!(check_metadata_document_url("https://conformance-test.local/client-metadata.json").is_ok());
        assert!(check_metadata_document_url("http://c.example/m.json").is_err());
        assert!(check_metadata_document_url("https://c.example/").is_err());
        assert!(check_metadata_document_url("nope").is_err());
    }
}
