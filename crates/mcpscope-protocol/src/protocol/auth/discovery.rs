//! Where the metadata lives and whether it may be used: protected resource
//! metadata (RFC 9728), authorization server metadata (RFC 8414 and OpenID
//! Connect discovery, in the order the MCP specification gives), and the
//! 2025-03-26 fallbacks for servers without either.
//!
//! Resource and issuer identifiers are kept as the strings the documents
//! hold: re-serializing them through a URL parser adds a `/` to
//! `http://host:port`, and both RFC 8707 and RFC 9207 compare strings.

use super::AuthError;
use serde_json::Value;
use url::Url;

const PRM_WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";
const OAUTH_WELL_KNOWN: &str = "/.well-known/oauth-authorization-server";
const OIDC_WELL_KNOWN: &str = "/.well-known/openid-configuration";

/// `scheme://host[:port]` of a URL (default ports dropped), or `None` when it is not one.
pub fn origin(url: &str) -> Option<String> {
    let u = Url::parse(url).ok()?;
    match u.origin() {
        url::Origin::Tuple(..) => Some(u.origin().ascii_serialization()),
        url::Origin::Opaque(_) => None,
    }
}

fn path_without_trailing_slash(url: &str) -> Option<String> {
    let u = Url::parse(url).ok()?;
    Some(u.path().trim_end_matches('/').to_owned())
}

/// Where to look for the protected resource metadata, in order (RFC 9728
/// §3.1, MCP 2025-11-25 "Protected Resource Metadata Discovery"): the
/// `resource_metadata` of the challenge alone when there is one (a client
/// must not second-guess it), else the path-based then the root well-known URL.
pub fn prm_candidates(server_url: &str, hint: Option<&str>) -> Vec<String> {
    if let Some(h) = hint.filter(|h| !h.is_empty()) {
        return vec![h.to_owned()];
    }
    let (Some(origin), Some(path)) = (origin(server_url), path_without_trailing_slash(server_url)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if !path.is_empty() {
        out.push(format!("{origin}{PRM_WELL_KNOWN}{path}"));
    }
    out.push(format!("{origin}{PRM_WELL_KNOWN}"));
    out
}

/// Where to look for an issuer's metadata, in order (MCP 2025-11-25
/// "Authorization Server Metadata Discovery"): with a path, RFC 8414 path
/// insertion, OpenID Connect path insertion, OpenID Connect path appending;
/// without one, the two well-known URLs at the root.
pub fn server_metadata_candidates(issuer: &str) -> Vec<String> {
    let (Some(origin), Some(path)) = (origin(issuer), path_without_trailing_slash(issuer)) else {
        return Vec::new();
    };
    if path.is_empty() {
        vec![
            format!("{origin}{OAUTH_WELL_KNOWN}"),
            format!("{origin}{OIDC_WELL_KNOWN}"),
        ]
    } else {
        vec![
            format!("{origin}{OAUTH_WELL_KNOWN}{path}"),
            format!("{origin}{OIDC_WELL_KNOWN}{path}"),
            format!("{origin}{path}{OIDC_WELL_KNOWN}"),
        ]
    }
}

/// 2025-03-26: the authorization base URL is the MCP server's URL with
/// the path discarded; its metadata is at the RFC 8414 well-known URL there.
pub fn legacy_base(server_url: &str) -> Option<String> {
    origin(server_url)
}

pub fn legacy_metadata_url(base: &str) -> String {
    format!("{base}{OAUTH_WELL_KNOWN}")
}

/// 2025-03-26: the endpoints to use when the server has no metadata at all.
pub fn legacy_default_endpoints(base: &str) -> ServerMetadata {
    ServerMetadata {
        issuer: None,
        authorization_endpoint: Some(format!("{base}/authorize")),
        token_endpoint: Some(format!("{base}/token")),
        registration_endpoint: Some(format!("{base}/register")),
        ..ServerMetadata::default()
    }
}

fn strings(v: &Value, key: &str) -> Option<Vec<String>> {
    v.get(key)?
        .as_array()
        .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect())
}

fn string(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// Protected resource metadata (RFC 9728 §2).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResourceMetadata {
    pub resource: String,
    pub authorization_servers: Vec<String>,
    pub scopes_supported: Option<Vec<String>>,
    /// Where it was found.
    pub url: String,
}

impl ResourceMetadata {
    /// `None` when the body is not a metadata document (an HTML 404 page, JSON without `resource`).
    pub fn parse(body: &[u8], url: &str) -> Option<Self> {
        let v: Value = serde_json::from_slice(body).ok()?;
        Some(Self {
            resource: string(&v, "resource")?,
            authorization_servers: strings(&v, "authorization_servers").unwrap_or_default(),
            scopes_supported: strings(&v, "scopes_supported"),
            url: url.to_owned(),
        })
    }
}

/// Whether the metadata's `resource` identifies the server mcpscope talks
/// to: the same origin, and the server's path equal to or below the
/// resource's (a resource of `https://h` covers `https://h/mcp`).
pub fn check_resource(resource: &str, server_url: &str) -> Result<(), AuthError> {
    let mismatch = || AuthError::ResourceMismatch {
        resource: resource.to_owned(),
        server: server_url.to_owned(),
    };
    let (Ok(r), Ok(s)) = (Url::parse(resource), Url::parse(server_url)) else {
        return Err(mismatch());
    };
    if r.origin() != s.origin() || r.fragment().is_some() {
        return Err(mismatch());
    }
    let dir = |p: &str| {
        if p.ends_with('/') {
            p.to_owned()
        } else {
            format!("{p}/")
        }
    };
    if dir(s.path()).starts_with(&dir(r.path())) {
        Ok(())
    } else {
        Err(mismatch())
    }
}

/// Authorization server metadata (RFC 8414 §2; OpenID Connect documents share the names).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerMetadata {
    pub issuer: Option<String>,
    pub authorization_endpoint: Option<String>,
    pub token_endpoint: Option<String>,
    pub registration_endpoint: Option<String>,
    pub scopes_supported: Option<Vec<String>>,
    pub grant_types_supported: Option<Vec<String>>,
    pub code_challenge_methods_supported: Option<Vec<String>>,
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    pub token_endpoint_auth_signing_alg_values_supported: Option<Vec<String>>,
    /// RFC 9449 §5.1: the algorithms the server accepts DPoP proofs in.
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
    pub client_id_metadata_document_supported: bool,
    pub authorization_response_iss_parameter_supported: bool,
    /// Where it was found (`None` for the 2025-03-26 default endpoints).
    pub url: Option<String>,
}

impl ServerMetadata {
    /// `None` when the body is not a metadata document (HTML, JSON without any endpoint).
    pub fn parse(body: &[u8], url: &str) -> Option<Self> {
        let v: Value = serde_json::from_slice(body).ok()?;
        if !v.is_object() {
            return None;
        }
        let m = Self {
            issuer: string(&v, "issuer"),
            authorization_endpoint: string(&v, "authorization_endpoint"),
            token_endpoint: string(&v, "token_endpoint"),
            registration_endpoint: string(&v, "registration_endpoint"),
            scopes_supported: strings(&v, "scopes_supported"),
            grant_types_supported: strings(&v, "grant_types_supported"),
            code_challenge_methods_supported: strings(&v, "code_challenge_methods_supported"),
            token_endpoint_auth_methods_supported: strings(&v, "token_endpoint_auth_methods_supported"),
            token_endpoint_auth_signing_alg_values_supported: strings(
                &v,
                "token_endpoint_auth_signing_alg_values_supported",
            ),
            dpop_signing_alg_values_supported: strings(&v, "dpop_signing_alg_values_supported"),
            client_id_metadata_document_supported: v
                .get("client_id_metadata_document_supported")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            authorization_response_iss_parameter_supported: v
                .get("authorization_response_iss_parameter_supported")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            url: Some(url.to_owned()),
        };
        (m.token_endpoint.is_some() || m.authorization_endpoint.is_some()).then_some(m)
    }

    /// Whether the server lists `grant` (RFC 8414's default is authorization_code and implicit).
    pub fn supports_grant(&self, grant: &str) -> bool {
        match &self.grant_types_supported {
            Some(g) => g.iter().any(|x| x == grant),
            None => grant == "authorization_code",
        }
    }

    /// Whether the server lists this token endpoint auth method (RFC 8414's default is client_secret_basic).
    pub fn supports_auth_method(&self, method: &str) -> bool {
        match &self.token_endpoint_auth_methods_supported {
            Some(m) => m.iter().any(|x| x == method),
            None => method == "client_secret_basic",
        }
    }

    /// Refuses a server that does not advertise PKCE with S256 (MCP
    /// 2025-11-25 "Authorization Code Protection": absent means unsupported).
    pub fn check_s256(&self, issuer: &str) -> Result<(), AuthError> {
        match &self.code_challenge_methods_supported {
            Some(m) if m.iter().any(|x| x == "S256") => Ok(()),
            other => Err(AuthError::NoS256 {
                issuer: issuer.to_owned(),
                advertised: other.clone(),
            }),
        }
    }
}

/// The metadata's `issuer` must be the issuer it was looked up for, as a
/// string (RFC 8414 §3.3); a document without one fails too.
pub fn check_issuer(meta: &ServerMetadata, expected: &str) -> Result<(), AuthError> {
    match &meta.issuer {
        Some(found) if found == expected => Ok(()),
        found => Err(AuthError::IssuerMismatch {
            expected: expected.to_owned(),
            found: found.clone().unwrap_or_else(|| "(none)".into()),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prm_order() {
        assert_eq!(
            prm_candidates("http://localhost:3000/mcp", None),
            [
                "http://localhost:3000/.well-known/oauth-protected-resource/mcp",
                "http://localhost:3000/.well-known/oauth-protected-resource",
            ]
        );
        // The header's URL alone: the root document may be a trap.
        assert_eq!(
            prm_candidates("http://localhost:3000/mcp", Some("http://localhost:3000/custom.json")),
            ["http://localhost:3000/custom.json"]
        );
        // Trailing slash and query dropped; root URL has one candidate; default port elided.
        assert_eq!(
            prm_candidates("https://example.com:443/a/b/?x=1", None),
            [
                "https://example.com/.well-known/oauth-protected-resource/a/b",
                "https://example.com/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            prm_candidates("http://[::1]:8080", None),
            ["http://[::1]:8080/.well-known/oauth-protected-resource"]
        );
        assert!(prm_candidates("not a url", None).is_empty());
    }

    #[test]
    fn server_metadata_order() {
        assert_eq!(
            server_metadata_candidates("http://localhost:9000/tenant1"),
            [
                "http://localhost:9000/.well-known/oauth-authorization-server/tenant1",
                "http://localhost:9000/.well-known/openid-configuration/tenant1",
                "http://localhost:9000/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            server_metadata_candidates("https://auth.example.com"),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            server_metadata_candidates("https://auth.example.com/"),
            server_metadata_candidates("https://auth.example.com")
        );
        assert_eq!(
            legacy_base("http://localhost:5/a/mcp").as_deref(),
            Some("http://localhost:5")
        );
        let d = legacy_default_endpoints("http://localhost:5");
        assert_eq!(d.token_endpoint.as_deref(), Some("http://localhost:5/token"));
        assert_eq!(d.registration_endpoint.as_deref(), Some("http://localhost:5/register"));
    }

    #[test]
    fn resource_must_name_this_server() {
        assert!(check_resource("http://localhost:3000/mcp", "http://localhost:3000/mcp").is_ok());
        assert!(check_resource("http://localhost:3000", "http://localhost:3000/mcp").is_ok());
        assert!(check_resource("http://localhost:3000/", "http://localhost:3000/mcp").is_ok());
        assert!(check_resource("http://LOCALHOST:3000/mcp", "http://localhost:3000/mcp/").is_ok());
        assert!(check_resource("https://evil.example.com/mcp", "http://localhost:3000/mcp").is_err());
        assert!(check_resource("http://localhost:3001/mcp", "http://localhost:3000/mcp").is_err());
        assert!(check_resource("http://localhost:3000/mcp", "http://localhost:3000/mcp2").is_err());
        assert!(check_resource("http://localhost:3000/other", "http://localhost:3000/mcp").is_err());
        assert!(check_resource("not a url", "http://localhost:3000/mcp").is_err());
    }

    #[test]
    fn documents_parse_or_are_skipped() {
        let prm = ResourceMetadata::parse(
            br#"{"resource":"http://localhost:3000","authorization_servers":["http://a/t"],"scopes_supported":["x"]}"#,
            "http://u",
        )
        .unwrap();
        assert_eq!(prm.resource, "http://localhost:3000");
        assert_eq!(prm.authorization_servers, ["http://a/t"]);
        assert!(ResourceMetadata::parse(b"<html>Cannot GET</html>", "u").is_none());
        assert!(ResourceMetadata::parse(br#"{"authorization_servers":[]}"#, "u").is_none());

        let m = ServerMetadata::parse(
            br#"{"issuer":"http://a","authorization_endpoint":"http://a/authorize","token_endpoint":"http://a/token","code_challenge_methods_supported":["plain"],"client_id_metadata_document_supported":true}"#,
            "http://a/.well-known/oauth-authorization-server",
        )
        .unwrap();
        assert!(m.client_id_metadata_document_supported);
        assert!(!m.authorization_response_iss_parameter_supported);
        assert!(m.supports_grant("authorization_code"));
        assert!(!m.supports_grant("client_credentials"));
        assert!(m.supports_auth_method("client_secret_basic"));
        assert!(matches!(
            m.check_s256("http://a"),
            Err(AuthError::NoS256 {
                advertised: Some(_),
                ..
            })
        ));
        assert!(ServerMetadata::parse(br#"{"issuer":"x"}"#, "u").is_none());
        assert!(ServerMetadata::parse(b"[]", "u").is_none());
        let none = ServerMetadata::default();
        assert!(matches!(
            none.check_s256("i"),
            Err(AuthError::NoS256 { advertised: None, .. })
        ));
    }

    #[test]
    fn issuer_is_compared_as_a_string() {
        let m = |i: &str| ServerMetadata {
            issuer: Some(i.into()),
            ..ServerMetadata::default()
        };
        assert!(check_issuer(&m("http://a:1"), "http://a:1").is_ok());
        assert!(check_issuer(&m("http://a:1/"), "http://a:1").is_err());
        assert!(check_issuer(&m("https://attacker.example.com"), "http://a:1").is_err());
        assert!(check_issuer(&ServerMetadata::default(), "http://a:1").is_err());
    }
}
