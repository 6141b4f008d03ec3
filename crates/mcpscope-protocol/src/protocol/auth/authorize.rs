//! The authorization request (RFC 6749 §4.1.1 with PKCE, RFC 8707
//! `resource`) and the checks on the redirect that answers it: `state`
//! first, then RFC 9207 `iss`, and only then `error` or `code`.

use super::AuthError;
use super::pkce::Pkce;
use url::Url;

/// What the client remembers between sending the person to the
/// authorization server and getting them back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingAuthorization {
    pub state: String,
    pub pkce: Pkce,
    pub redirect_uri: String,
    pub client_id: String,
    pub resource: Option<String>,
    pub scopes: Option<Vec<String>>,
    /// The validated metadata issuer to compare `iss` with; `None` where
    /// no metadata was validated (the 2025-03-26 default endpoints).
    pub expected_issuer: Option<String>,
    /// `authorization_response_iss_parameter_supported` of the metadata.
    pub iss_advertised: bool,
}

/// The URL to open in the browser.
pub fn authorization_url(endpoint: &str, p: &PendingAuthorization) -> Result<String, AuthError> {
    let mut url = Url::parse(endpoint)
        .map_err(|e| AuthError::Config(format!("the authorization endpoint {endpoint:?} is not a URL: {e}")))?;
    {
        let mut q = url.query_pairs_mut();
        q.append_pair("response_type", "code");
        q.append_pair("client_id", &p.client_id);
        q.append_pair("redirect_uri", &p.redirect_uri);
        q.append_pair("state", &p.state);
        q.append_pair("code_challenge", &p.pkce.challenge);
        q.append_pair("code_challenge_method", "S256");
        if let Some(r) = &p.resource {
            q.append_pair("resource", r);
        }
        if let Some(s) = p.scopes.as_ref().filter(|s| !s.is_empty()) {
            q.append_pair("scope", &s.join(" "));
        }
    }
    Ok(url.into())
}

/// Whether `url` is a redirect to `redirect_uri` (same scheme, host, port and path).
pub fn targets_redirect_uri(url: &str, redirect_uri: &str) -> bool {
    let (Ok(a), Ok(b)) = (Url::parse(url), Url::parse(redirect_uri)) else {
        return false;
    };
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
        && a.path() == b.path()
}

/// Checks a redirect (a full URL or just its query) and returns the code.
pub fn parse_callback(url_or_query: &str, p: &PendingAuthorization) -> Result<String, AuthError> {
    let query = match Url::parse(url_or_query) {
        Ok(u) => u.query().unwrap_or_default().to_owned(),
        Err(_) => url_or_query.trim_start_matches('?').to_owned(),
    };
    let query = query.split('#').next().unwrap_or_default();
    let mut state = None;
    let mut iss = None;
    let mut code = None;
    let mut error = None;
    let mut description = None;
    for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
        let slot = match k.as_ref() {
            "state" => &mut state,
            "iss" => &mut iss,
            "code" => &mut code,
            "error" => &mut error,
            "error_description" => &mut description,
            _ => continue,
        };
        if slot.is_none() {
            *slot = Some(v.into_owned());
        }
    }
    if state.as_deref() != Some(p.state.as_str()) {
        return Err(AuthError::StateMismatch);
    }
    // RFC 9207 §2.4, byte for byte: no case folding, no trailing-slash or
    // port normalization. Applies to error responses too.
    if let Some(expected) = &p.expected_issuer {
        match &iss {
            Some(found) if found != expected => {
                return Err(AuthError::IssMismatch {
                    expected: expected.clone(),
                    found: Some(found.clone()),
                });
            }
            None if p.iss_advertised => {
                return Err(AuthError::IssMismatch {
                    expected: expected.clone(),
                    found: None,
                });
            }
            _ => {}
        }
    }
    if let Some(error) = error {
        return Err(AuthError::Denied { error, description });
    }
    code.filter(|c| !c.is_empty()).ok_or(AuthError::NoCode)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(expected: Option<&str>, advertised: bool) -> PendingAuthorization {
        PendingAuthorization {
            state: "st".into(),
            pkce: Pkce::from_random([1; 32]),
            redirect_uri: "http://127.0.0.1:5000/callback".into(),
            client_id: "https://c.example/meta.json".into(),
            resource: Some("http://localhost:3000".into()),
            scopes: Some(vec!["mcp:basic".into(), "offline_access".into()]),
            expected_issuer: expected.map(str::to_owned),
            iss_advertised: advertised,
        }
    }

    #[test]
    fn the_url_carries_pkce_state_resource_and_scope() {
        let p = pending(Some("http://a"), true);
        let u = authorization_url("http://a/authorize?tenant=x", &p).unwrap();
        let url = Url::parse(&u).unwrap();
        let q: Vec<(String, String)> = url.query_pairs().into_owned().collect();
        let get = |k: &str| q.iter().find(|(a, _)| a == k).map(|(_, v)| v.as_str());
        assert_eq!(get("tenant"), Some("x"));
        assert_eq!(get("response_type"), Some("code"));
        assert_eq!(get("client_id"), Some("https://c.example/meta.json"));
        assert_eq!(get("code_challenge_method"), Some("S256"));
        assert_eq!(get("code_challenge"), Some(p.pkce.challenge.as_str()));
        assert_eq!(get("resource"), Some("http://localhost:3000"));
        assert_eq!(get("scope"), Some("mcp:basic offline_access"));
        assert!(!u.contains(&p.pkce.verifier));
        let none = PendingAuthorization {
            scopes: None,
            resource: None,
            ..p
        };
        let u = authorization_url("http://a/authorize", &none).unwrap();
        assert!(!u.contains("scope=") && !u.contains("resource="), "{u}");
    }

    #[test]
    fn state_is_checked_first() {
        let p = pending(Some("http://a"), true);
        assert_eq!(parse_callback("code=c&state=st&iss=http%3A%2F%2Fa", &p), Ok("c".into()));
        assert_eq!(
            parse_callback("http://127.0.0.1:5000/callback?code=c&state=other&iss=http://a", &p),
            Err(AuthError::StateMismatch)
        );
        assert_eq!(parse_callback("code=c&iss=http://a", &p), Err(AuthError::StateMismatch));
    }

    #[test]
    fn rfc9207_table() {
        // Advertised and present: exact compare.
        assert!(parse_callback("code=c&state=st&iss=http://a", &pending(Some("http://a"), true)).is_ok());
        // Advertised and absent: reject.
        assert_eq!(
            parse_callback("code=c&state=st", &pending(Some("http://a"), true)),
            Err(AuthError::IssMismatch {
                expected: "http://a".into(),
                found: None
            })
        );
        // Not advertised and present: still compared.
        assert!(parse_callback("code=c&state=st&iss=https://evil", &pending(Some("http://a"), false)).is_err());
        // Not advertised and absent: proceed.
        assert!(parse_callback("code=c&state=st", &pending(Some("http://a"), false)).is_ok());
        // No normalization: trailing slash, case.
        assert!(parse_callback("code=c&state=st&iss=http://a/", &pending(Some("http://a"), true)).is_err());
        assert!(parse_callback("code=c&state=st&iss=HTTP://A", &pending(Some("http://a"), true)).is_err());
        // No validated issuer (2025-03-26 defaults): nothing to compare with.
        assert!(parse_callback("code=c&state=st&iss=whatever", &pending(None, false)).is_ok());
    }

    #[test]
    fn errors_come_after_the_issuer_check() {
        let p = pending(Some("http://a"), true);
        assert!(matches!(
            parse_callback("error=access_denied&state=st&iss=https://evil", &p),
            Err(AuthError::IssMismatch { .. })
        ));
        assert_eq!(
            parse_callback(
                "error=access_denied&error_description=User%20cancelled&state=st&iss=http://a",
                &p
            ),
            Err(AuthError::Denied {
                error: "access_denied".into(),
                description: Some("User cancelled".into())
            })
        );
        assert_eq!(parse_callback("state=st&iss=http://a", &p), Err(AuthError::NoCode));
    }

    #[test]
    fn redirect_targets() {
        let r = "http://127.0.0.1:5000/callback";
        assert!(targets_redirect_uri("http://127.0.0.1:5000/callback?code=x", r));
        assert!(!targets_redirect_uri("http://127.0.0.1:5001/callback?code=x", r));
        assert!(!targets_redirect_uri("http://127.0.0.1:5000/login", r));
        assert!(!targets_redirect_uri("/relative", r));
    }
}
