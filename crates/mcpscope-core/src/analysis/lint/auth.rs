//! Authorization (OAuth): what goes wrong in real deployments, judged from
//! the recorded exchanges (HTTP answers and the authorizer's steps).

use super::{Finding, Severity, rule};
use crate::protocol::auth::Step;
use crate::protocol::auth::challenge::BearerChallenge;
use crate::transport::event::Event;
use crate::wire::classify::Kind;
use crate::wire::frame::{Direction, Frame};
use crate::wire::message::RequestId;
use serde_json::Value;
use std::collections::HashMap;

#[derive(Default)]
pub(super) struct Auth {
    /// Client requests not answered yet, by id: an HTTP refusal names its request by id.
    open: HashMap<RequestId, u64>,
    /// The MCP server's URL: where its requests went, or what a challenge names.
    server_url: Option<String>,
    /// Scopes the challenges and metadata named so far.
    advertised: Vec<String>,
    prm_servers: Vec<String>,
    prm_found: bool,
}

impl Auth {
    pub fn frame(&mut self, f: &Frame) {
        match (f.direction, f.kind()) {
            (Direction::Out, Kind::Request) => {
                if let Some(id) = &f.class.id {
                    self.open.insert(id.clone(), f.seq);
                }
            }
            (Direction::In, Kind::Result | Kind::Error) => {
                if let Some(id) = &f.class.id {
                    self.open.remove(id);
                }
            }
            _ => {}
        }
    }

    pub fn event(&mut self, e: &Event, out: &mut Vec<Finding>) {
        if self.server_url.is_none() {
            self.server_url = match e {
                Event::Http(h) if h.method == "POST" => Some(h.url.clone()),
                Event::Auth(a) if a.step == Step::Challenge => Some(a.url.clone()),
                _ => None,
            };
        }
        match e {
        Event::Http(h) if h.status == Some(401) => {
            match h.received_header("www-authenticate") {
                None => out.push(Finding::new(
                    rule::UNAUTHORIZED_WITHOUT_CHALLENGE,
                    Severity::Error,
                    h.request_id.as_ref().and_then(|id| self.open.get(id).copied()).into_iter().collect(),
                    format!(
                        "{} {} was answered 401 Unauthorized without a WWW-Authenticate header. HTTP requires one with every 401, and MCP clients read it to find the protected resource metadata and the scopes to ask for; without it they can only guess at well-known URLs.",
                        h.method, h.url
                    ),
                )),
                Some(w) => {
                    if let Some(s) = BearerChallenge::from_header(w).and_then(|b| b.scope) {
                        self.advertised.extend(s);
                    }
                }
            }
        }
        Event::Http(h) if h.status == Some(403) => {
            if let Some(s) = h
                .received_header("www-authenticate")
                .and_then(BearerChallenge::from_header)
                .and_then(|b| b.scope)
            {
                self.advertised.extend(s);
            }
        }
        Event::Auth(a) => {
            let body = a.response_body.as_ref().filter(|b| b.is_object());
            let ok = a.status.is_some_and(|s| (200..300).contains(&s));
            match a.step {
                Step::Failed => {
                    let why = a.error.as_deref().filter(|e| !e.is_empty()).unwrap_or(&a.text);
                    // The request that asked for it (the earliest still open).
                    let waiting = self.open.values().min().copied();
                    out.push(Finding::new(
                        rule::AUTHORIZATION_FAILED,
                        Severity::Error,
                        waiting.into_iter().collect(),
                        format!(
                            "The authorization the server asked for failed: {why}. The request that needed it was not sent again, so the session went no further."
                        ),
                    ));
                }
                Step::Challenge => {
                    if let Some(s) = a
                        .received_header("www-authenticate")
                        .and_then(BearerChallenge::from_header)
                        .and_then(|b| b.scope)
                    {
                        self.advertised.extend(s);
                    }
                }
                Step::ResourceMetadata if ok => {
                    let Some(body) = body else { return };
                    let Some(resource) = body.get("resource").and_then(Value::as_str) else {
                        return;
                    };
                    self.prm_found = true;
                    self.advertised.extend(json_strings(body.get("scopes_supported")));
                    self.prm_servers = json_strings(body.get("authorization_servers"));
                    if let Some(server) = &self.server_url
                        && crate::protocol::auth::discovery::check_resource(resource, server).is_err()
                    {
                        out.push(Finding::new(
                            rule::OAUTH_RESOURCE_MISMATCH,
                            Severity::Error,
                            vec![],
                            format!(
                                "The protected resource metadata at {} says it is for {resource}, but it was fetched for {server}. A client must not authorize on its word: a token for {resource} is not for this server (and the metadata may be an attacker's). The resource must be this server's URL or a prefix of it.",
                                a.url
                            ),
                        ));
                    }
                }
                Step::ServerMetadata if ok => {
                    let Some(body) = body else { return };
                    self.advertised.extend(json_strings(body.get("scopes_supported")));
                    let found = body.get("issuer").and_then(Value::as_str);
                    let looked_up = issuer_of_metadata_url(&a.url);
                    let matches = |i: &str| {
                        self.prm_servers.iter().any(|p| p == i)
                            || looked_up.as_deref().is_some_and(|l| {
                                l == i || l.trim_end_matches('/') == i.trim_end_matches('/')
                            })
                    };
                    let expected = self.prm_servers
                        .first()
                        .cloned()
                        .or(looked_up.clone())
                        .unwrap_or_else(|| a.url.clone());
                    if found.is_none_or(|f| !matches(f)) {
                        out.push(Finding::new(
                            rule::OAUTH_ISSUER_MISMATCH,
                            if self.prm_found { Severity::Error } else { Severity::Warning },
                            vec![],
                            format!(
                                "The authorization server metadata at {} has issuer {}, but it was looked up for {expected}. RFC 8414 §3.3 forbids using such metadata (it may be an impersonation); clients that check refuse to authorize.{}",
                                a.url,
                                found.map_or_else(|| "(none)".to_owned(), |f| format!("{f:?}")),
                                if self.prm_found {
                                    ""
                                } else {
                                    " (Found through the 2025-03-26 fallback, which predates the check: a warning, not an error.)"
                                }
                            ),
                        ));
                    }
                    let methods = body.get("code_challenge_methods_supported");
                    let grants = json_strings(body.get("grant_types_supported"));
                    let code_flow = grants.is_empty() || grants.iter().any(|g| g == "authorization_code");
                    if code_flow && !json_strings(methods).iter().any(|m| m == "S256") {
                        out.push(Finding::new(
                            rule::OAUTH_PKCE_S256_MISSING,
                            Severity::Error,
                            vec![],
                            format!(
                                "The authorization server metadata at {} {}. MCP clients must refuse an authorization server that does not advertise PKCE with S256 (2025-11-25, \"Authorization Code Protection\").",
                                a.url,
                                match methods {
                                    None => "has no code_challenge_methods_supported".to_owned(),
                                    Some(m) => format!("lists code_challenge_methods_supported {m} without S256"),
                                }
                            ),
                        ));
                    }
                }
                Step::Authorize if a.method == "GET" => {
                    let scope = url::Url::parse(&a.url)
                        .ok()
                        .and_then(|u| u.query_pairs().find(|(k, _)| k == "scope").map(|(_, v)| v.into_owned()));
                    if let Some(scope) = scope {
                        unadvertised_scopes(&scope, &self.advertised, &a.url, out);
                    }
                }
                Step::Token if a.method == "POST" => {
                    let Some(req) = a.request_body.as_ref().filter(|b| b.is_object()) else {
                        return;
                    };
                    let grant = req.get("grant_type").and_then(Value::as_str).unwrap_or_default();
                    if ["authorization_code", "refresh_token", "client_credentials"].contains(&grant)
                        && req.get("resource").is_none()
                    {
                        out.push(Finding::new(
                            rule::OAUTH_TOKEN_REQUEST_WITHOUT_RESOURCE,
                            Severity::Warning,
                            vec![],
                            format!(
                                "The {grant} token request to {} has no resource parameter. MCP clients must send it (RFC 8707) so the token is issued for this server alone; without it an authorization server may issue a token any server accepts, and this one may accept tokens meant for others.",
                                a.url
                            ),
                        ));
                    }
                    if grant == "client_credentials"
                        && let Some(scope) = req.get("scope").and_then(Value::as_str)
                    {
                        unadvertised_scopes(scope, &self.advertised, &a.url, out);
                    }
                }
                _ => {}
            }
        }

            _ => {}
        }
    }
}

/// The issuer a metadata URL was built for (RFC 8414 §3.1 / OpenID
/// Connect path insertion or appending); `None` for another URL.
fn issuer_of_metadata_url(url: &str) -> Option<String> {
    let origin = crate::protocol::auth::discovery::origin(url)?;
    let path = url.strip_prefix(&origin)?.split(['?', '#']).next().unwrap_or_default();
    for wk in [
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
    ] {
        if let Some(rest) = path.strip_prefix(wk) {
            return Some(format!("{origin}{rest}"));
        }
    }
    path.strip_suffix("/.well-known/openid-configuration")
        .map(|p| format!("{origin}{p}"))
}

fn json_strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

fn unadvertised_scopes(scope: &str, advertised: &[String], url: &str, out: &mut Vec<Finding>) {
    let requested: Vec<String> = scope.split(' ').filter(|s| !s.is_empty()).map(str::to_owned).collect();
    let missing = crate::protocol::auth::scopes::never_advertised(&requested, &[advertised]);
    if missing.is_empty() {
        return;
    }
    out.push(Finding::new(
        rule::OAUTH_SCOPE_NOT_ADVERTISED,
        Severity::Warning,
        vec![],
        format!(
            "The request to {} asks for {} — never named by the server's challenge, its protected resource metadata or the authorization server's scopes_supported. Authorization servers refuse (invalid_scope) or silently drop unknown scopes; ask for what the server advertises.",
            url.split('?').next().unwrap_or(url),
            missing.join(", ")
        ),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_urls_name_their_issuer() {
        assert_eq!(
            issuer_of_metadata_url("http://a:1/.well-known/oauth-authorization-server/tenant1").as_deref(),
            Some("http://a:1/tenant1")
        );
        assert_eq!(
            issuer_of_metadata_url("http://a:1/.well-known/openid-configuration").as_deref(),
            Some("http://a:1")
        );
        assert_eq!(
            issuer_of_metadata_url("http://a:1/tenant1/.well-known/openid-configuration").as_deref(),
            Some("http://a:1/tenant1")
        );
        assert_eq!(issuer_of_metadata_url("http://a:1/metadata.json"), None);
    }
}
