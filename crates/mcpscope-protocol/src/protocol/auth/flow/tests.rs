use super::*;
use crate::protocol::auth::challenge::BearerChallenge;
use serde_json::json;
use std::collections::HashMap;

const MCP: &str = "http://localhost:3000/mcp";
const AS: &str = "http://localhost:4000";

/// An answer given once: status, body, headers.
type Scripted = (u16, String, Vec<(String, String)>);

/// A scripted world: answers by "METHOD url-without-query", 404 otherwise.
struct World {
    answers: HashMap<String, (u16, String)>,
    /// Answers given once each, before `answers`, with headers.
    queued: HashMap<String, std::collections::VecDeque<Scripted>>,
    /// `iss` to put in the redirect: `None` omits it.
    iss: Option<String>,
    sent: Vec<Request>,
    authorize_urls: Vec<String>,
}

impl World {
    fn new() -> Self {
        World {
            answers: HashMap::new(),
            queued: HashMap::new(),
            iss: None,
            sent: Vec::new(),
            authorize_urls: Vec::new(),
        }
    }

    fn on(mut self, method: &str, url: &str, status: u16, body: Value) -> Self {
        self.answers
            .insert(format!("{method} {url}"), (status, body.to_string()));
        self
    }

    fn standard_as(self, issuer: &str, extra: Value) -> Self {
        let mut meta = json!({
            "issuer": issuer,
            "authorization_endpoint": format!("{issuer}/authorize"),
            "token_endpoint": format!("{issuer}/token"),
            "registration_endpoint": format!("{issuer}/register"),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
        });
        for (k, v) in extra.as_object().unwrap() {
            if v.is_null() {
                meta.as_object_mut().unwrap().remove(k);
            } else {
                meta[k] = v.clone();
            }
        }
        let origin = discovery::origin(issuer).unwrap();
        let path = issuer.strip_prefix(&origin).unwrap_or("");
        self.on(
            "GET",
            &format!("{origin}/.well-known/oauth-authorization-server{path}"),
            200,
            meta,
        )
        .on(
            "POST",
            &format!("{issuer}/register"),
            201,
            json!({"client_id": "test-client-id", "client_secret": "test-client-secret"}),
        )
        .on(
            "POST",
            &format!("{issuer}/token"),
            200,
            json!({"access_token": "test-token-1", "token_type": "Bearer", "expires_in": 3600}),
        )
    }

    /// Answers the next request to `url` (once) with headers.
    fn once(mut self, method: &str, url: &str, status: u16, body: Value, headers: &[(&str, &str)]) -> Self {
        let headers = headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        self.queued
            .entry(format!("{method} {url}"))
            .or_default()
            .push_back((status, body.to_string(), headers));
        self
    }

    fn prm(self, url: &str, body: Value) -> Self {
        self.on("GET", url, 200, body)
    }

    fn urls(&self) -> Vec<String> {
        self.sent
            .iter()
            .map(|r| format!("{} {}", r.method.as_str(), r.url))
            .collect()
    }

    fn form(&self, i: usize) -> Vec<(String, String)> {
        match &self.sent[i].body {
            Body::Form(f) => f.clone(),
            other => panic!("not a form: {other:?}"),
        }
    }

    fn run(&mut self, config: AuthConfig, memory: Memory, trigger: Trigger) -> (Result<(), AuthError>, Memory) {
        let (mut flow, mut action) =
            AuthFlow::start(Arc::new(config), memory, MCP, trigger, Entropy { bytes: [9; 64] }, 1000);
        for _ in 0..50 {
            let input = match action {
                Action::Done => return (Ok(()), flow.into_memory()),
                Action::Fail(e) => return (Err(e), flow.into_memory()),
                Action::NeedRedirectUri => Input::RedirectUri("http://127.0.0.1:5555/callback".into()),
                Action::Authorize { url, redirect_uri } => {
                    self.authorize_urls.push(url.clone());
                    let q: HashMap<String, String> =
                        url::Url::parse(&url).unwrap().query_pairs().into_owned().collect();
                    let mut cb = format!("{redirect_uri}?code=test-auth-code&state={}", q["state"]);
                    if let Some(i) = &self.iss {
                        cb.push_str(&format!(
                            "&iss={}",
                            url::form_urlencoded::byte_serialize(i.as_bytes()).collect::<String>()
                        ));
                    }
                    Input::Callback(cb)
                }
                Action::Send(req) => {
                    let key = format!("{} {}", req.method.as_str(), req.url.split('?').next().unwrap());
                    self.sent.push(req);
                    let (status, body, headers) = match self.queued.get_mut(&key).and_then(|q| q.pop_front()) {
                        Some(once) => once,
                        None => {
                            let (status, body) = self
                                .answers
                                .get(&key)
                                .cloned()
                                .unwrap_or((404, "<html>Cannot GET</html>".into()));
                            (status, body, vec![])
                        }
                    };
                    Input::Response {
                        status,
                        headers,
                        body: body.into_bytes(),
                    }
                }
            };
            action = flow.on_event(input, 1001);
        }
        panic!("the flow did not end");
    }
}

fn unauthorized(header: &str) -> Trigger {
    Trigger::Unauthorized {
        challenge: BearerChallenge::from_header(header).unwrap_or_default(),
        with_token: false,
    }
}

fn get<'a>(form: &'a [(String, String)], k: &str) -> Option<&'a str> {
    form.iter().find(|(a, _)| a == k).map(|(_, v)| v.as_str())
}

fn query(url: &str) -> HashMap<String, String> {
    url::Url::parse(url).unwrap().query_pairs().into_owned().collect()
}

#[test]
fn metadata_from_the_header_then_openid_path_appending() {
    let prm_url = "http://localhost:3000/custom/metadata/location.json";
    let mut w = World::new()
        .prm(
            prm_url,
            json!({"resource": MCP, "authorization_servers": [format!("{AS}/tenant1")]}),
        )
        .on(
            "GET",
            &format!("{AS}/tenant1/.well-known/openid-configuration"),
            200,
            json!({
                "issuer": format!("{AS}/tenant1"),
                "authorization_endpoint": format!("{AS}/tenant1/authorize"),
                "token_endpoint": format!("{AS}/tenant1/token"),
                "registration_endpoint": format!("{AS}/tenant1/register"),
                "code_challenge_methods_supported": ["S256"],
            }),
        )
        .on(
            "POST",
            &format!("{AS}/tenant1/register"),
            201,
            json!({"client_id": "test-client-id"}),
        )
        .on(
            "POST",
            &format!("{AS}/tenant1/token"),
            200,
            json!({"access_token": "test-token-1", "token_type": "Bearer"}),
        );
    w.iss = Some(format!("{AS}/tenant1"));
    let (r, mem) = w.run(
        AuthConfig::default(),
        Memory::default(),
        unauthorized(&format!("Bearer resource_metadata=\"{prm_url}\"")),
    );
    r.unwrap();
    assert_eq!(
        w.urls(),
        [
            format!("GET {prm_url}"),
            format!("GET {AS}/.well-known/oauth-authorization-server/tenant1"),
            format!("GET {AS}/.well-known/openid-configuration/tenant1"),
            format!("GET {AS}/tenant1/.well-known/openid-configuration"),
            format!("POST {AS}/tenant1/register"),
            format!("POST {AS}/tenant1/token"),
        ]
    );
    let q = query(&w.authorize_urls[0]);
    assert_eq!(q["resource"], MCP);
    assert_eq!(q["code_challenge_method"], "S256");
    assert!(!q.contains_key("scope"), "no scope anywhere: omitted");
    let form = w.form(5);
    assert_eq!(get(&form, "resource"), Some(MCP));
    assert_eq!(get(&form, "client_id"), Some("test-client-id"));
    assert_eq!(pkce::s256(get(&form, "code_verifier").unwrap()), q["code_challenge"]);
    assert_eq!(mem.token.unwrap().token.access_token, "test-token-1");
    let Body::Json(reg) = &w.sent[4].body else { panic!() };
    assert_eq!(reg["redirect_uris"], json!(["http://127.0.0.1:5555/callback"]));
}

#[test]
fn root_resource_metadata_is_sent_verbatim_and_path_insertion_is_used() {
    let mut w = World::new()
        .prm(
            "http://localhost:3000/.well-known/oauth-protected-resource",
            json!({"resource": "http://localhost:3000", "authorization_servers": [format!("{AS}/tenant1")]}),
        )
        .standard_as(&format!("{AS}/tenant1"), json!({}));
    let (r, _) = w.run(
        AuthConfig::default(),
        Memory::default(),
        unauthorized("Bearer error=\"invalid_token\""),
    );
    r.unwrap();
    let urls = w.urls();
    assert_eq!(
        urls[0],
        "GET http://localhost:3000/.well-known/oauth-protected-resource/mcp"
    );
    assert_eq!(
        urls[1],
        "GET http://localhost:3000/.well-known/oauth-protected-resource"
    );
    assert_eq!(
        urls[2],
        format!("GET {AS}/.well-known/oauth-authorization-server/tenant1")
    );
    assert!(!urls.contains(&format!("GET {AS}/.well-known/oauth-authorization-server")));
    assert_eq!(query(&w.authorize_urls[0])["resource"], "http://localhost:3000");
    assert_eq!(get(&w.form(4), "resource"), Some("http://localhost:3000"));
}

#[test]
fn the_2025_03_26_paths() {
    // Metadata at the server's origin, with an issuer that is not its URL.
    let mut w = World::new()
        .on(
            "GET",
            "http://localhost:3000/.well-known/oauth-authorization-server",
            200,
            json!({
                "issuer": "http://localhost:3000/oauth",
                "authorization_endpoint": "http://localhost:3000/oauth/authorize",
                "token_endpoint": "http://localhost:3000/oauth/token",
                "registration_endpoint": "http://localhost:3000/oauth/register",
                "code_challenge_methods_supported": ["S256"],
            }),
        )
        .on(
            "POST",
            "http://localhost:3000/oauth/register",
            201,
            json!({"client_id": "c"}),
        )
        .on(
            "POST",
            "http://localhost:3000/oauth/token",
            200,
            json!({"access_token": "t", "token_type": "Bearer"}),
        );
    let (r, mem) = w.run(AuthConfig::default(), Memory::default(), unauthorized("Bearer"));
    r.unwrap();
    assert!(mem.legacy);
    assert_eq!(
        w.sent[2]
            .headers
            .iter()
            .find(|(k, _)| k == "MCP-Protocol-Version")
            .map(|(_, v)| v.as_str()),
        Some("2025-03-26")
    );
    assert_eq!(w.urls().last().unwrap(), "POST http://localhost:3000/oauth/token");

    // No metadata at all: the default endpoints.
    let mut w = World::new()
        .on(
            "POST",
            "http://localhost:3000/register",
            201,
            json!({"client_id": "c", "client_secret": "s"}),
        )
        .on(
            "POST",
            "http://localhost:3000/token",
            200,
            json!({"access_token": "t", "token_type": "Bearer"}),
        );
    let (r, _) = w.run(AuthConfig::default(), Memory::default(), unauthorized("Bearer"));
    r.unwrap();
    assert_eq!(
        w.urls(),
        [
            "GET http://localhost:3000/.well-known/oauth-protected-resource/mcp",
            "GET http://localhost:3000/.well-known/oauth-protected-resource",
            "GET http://localhost:3000/.well-known/oauth-authorization-server",
            "POST http://localhost:3000/register",
            "POST http://localhost:3000/token",
        ]
    );
    assert!(w.authorize_urls[0].starts_with("http://localhost:3000/authorize?"));
    assert_eq!(
        get(&w.form(4), "resource"),
        Some(MCP),
        "the server itself is the resource"
    );
}

#[test]
fn refusals_before_anything_is_authorized() {
    let hint = "Bearer resource_metadata=\"http://localhost:3000/prm\"";
    // Resource of another server.
    let mut w = World::new().prm(
        "http://localhost:3000/prm",
        json!({"resource": "https://evil.example.com/mcp", "authorization_servers": [AS]}),
    );
    let (r, _) = w.run(AuthConfig::default(), Memory::default(), unauthorized(hint));
    assert!(matches!(r, Err(AuthError::ResourceMismatch { .. })), "{r:?}");
    assert_eq!(w.sent.len(), 1);
    assert!(w.authorize_urls.is_empty());
    // Metadata claiming another issuer.
    let mut w = World::new()
        .prm(
            "http://localhost:3000/prm",
            json!({"resource": MCP, "authorization_servers": [AS]}),
        )
        .standard_as(AS, json!({"issuer": "https://attacker.example.com"}));
    let (r, _) = w.run(AuthConfig::default(), Memory::default(), unauthorized(hint));
    assert!(matches!(r, Err(AuthError::IssuerMismatch { .. })), "{r:?}");
    assert_eq!(w.sent.len(), 2);
    // No S256.
    let mut w = World::new()
        .prm(
            "http://localhost:3000/prm",
            json!({"resource": MCP, "authorization_servers": [AS]}),
        )
        .standard_as(AS, json!({"code_challenge_methods_supported": null}));
    let (r, _) = w.run(AuthConfig::default(), Memory::default(), unauthorized(hint));
    assert!(matches!(r, Err(AuthError::NoS256 { advertised: None, .. })), "{r:?}");
    // No authorization server metadata anywhere.
    let mut w = World::new().prm(
        "http://localhost:3000/prm",
        json!({"resource": MCP, "authorization_servers": [AS]}),
    );
    let (r, _) = w.run(AuthConfig::default(), Memory::default(), unauthorized(hint));
    assert!(
        matches!(&r, Err(AuthError::NoServerMetadata { tried, .. }) if tried.len() == 2),
        "{r:?}"
    );
    // Wrong iss in the redirect: no token request.
    let mut w = World::new()
        .prm(
            "http://localhost:3000/prm",
            json!({"resource": MCP, "authorization_servers": [AS]}),
        )
        .standard_as(AS, json!({"authorization_response_iss_parameter_supported": true}));
    w.iss = Some("https://evil.example.com".into());
    let (r, _) = w.run(AuthConfig::default(), Memory::default(), unauthorized(hint));
    assert!(matches!(r, Err(AuthError::IssMismatch { .. })), "{r:?}");
    assert!(!w.urls().iter().any(|u| u.ends_with("/token")));
    // Registration refused.
    let mut w = World::new()
        .prm(
            "http://localhost:3000/prm",
            json!({"resource": MCP, "authorization_servers": [AS]}),
        )
        .standard_as(AS, json!({}))
        .on(
            "POST",
            &format!("{AS}/register"),
            400,
            json!({"error": "invalid_client_metadata", "error_description": "nope"}),
        );
    let (r, _) = w.run(AuthConfig::default(), Memory::default(), unauthorized(hint));
    assert_eq!(
        r.unwrap_err().to_string(),
        "client registration was refused (HTTP 400): invalid_client_metadata: nope"
    );
}

fn prm_world(scopes: Option<Value>, as_extra: Value) -> World {
    let mut prm = json!({"resource": MCP, "authorization_servers": [AS]});
    if let Some(s) = scopes {
        prm["scopes_supported"] = s;
    }
    World::new()
        .prm("http://localhost:3000/prm", prm)
        .standard_as(AS, as_extra)
}

#[test]
fn scope_selection_end_to_end() {
    let hint = |extra: &str| format!("Bearer resource_metadata=\"http://localhost:3000/prm\"{extra}");
    let mut w = prm_world(Some(json!(["mcp:basic", "mcp:read"])), json!({}));
    w.run(
        AuthConfig::default(),
        Memory::default(),
        unauthorized(&hint(", scope=\"mcp:basic\"")),
    )
    .0
    .unwrap();
    assert_eq!(query(&w.authorize_urls[0])["scope"], "mcp:basic");
    let mut w = prm_world(Some(json!(["mcp:basic", "mcp:read"])), json!({}));
    w.run(AuthConfig::default(), Memory::default(), unauthorized(&hint("")))
        .0
        .unwrap();
    assert_eq!(query(&w.authorize_urls[0])["scope"], "mcp:basic mcp:read");
    // offline_access where the authorization server lists it, with want_refresh.
    let cfg = AuthConfig {
        want_refresh: true,
        ..AuthConfig::default()
    };
    let mut w = prm_world(
        Some(json!(["mcp:basic"])),
        json!({"scopes_supported": ["mcp:basic", "offline_access"]}),
    );
    w.run(cfg.clone(), Memory::default(), unauthorized(&hint("")))
        .0
        .unwrap();
    assert_eq!(query(&w.authorize_urls[0])["scope"], "mcp:basic offline_access");
    let Body::Json(reg) = &w.sent[2].body else { panic!() };
    assert!(reg["grant_types"].as_array().unwrap().contains(&json!("refresh_token")));
    let mut w = prm_world(
        Some(json!(["mcp:basic"])),
        json!({"scopes_supported": ["mcp:basic", "mcp:read"]}),
    );
    w.run(cfg, Memory::default(), unauthorized(&hint(""))).0.unwrap();
    assert_eq!(query(&w.authorize_urls[0])["scope"], "mcp:basic");
}

#[test]
fn step_up_reuses_discovery_and_the_client_and_gives_up_on_repeats() {
    let hint = "Bearer scope=\"mcp:basic\", resource_metadata=\"http://localhost:3000/prm\"";
    let mut w = prm_world(None, json!({}));
    let (r, mem) = w.run(AuthConfig::default(), Memory::default(), unauthorized(hint));
    r.unwrap();
    let first = w.sent.len();
    let challenge = BearerChallenge::from_header(
            "Bearer scope=\"mcp:basic mcp:write\", resource_metadata=\"http://localhost:3000/prm\", error=\"insufficient_scope\"",
        )
        .unwrap();
    let (r, mem) = w.run(
        AuthConfig::default(),
        mem,
        Trigger::InsufficientScope {
            challenge: challenge.clone(),
        },
    );
    r.unwrap();
    assert_eq!(
        w.urls()[first..],
        [format!("POST {AS}/token")],
        "no new discovery, no new registration"
    );
    assert_eq!(query(&w.authorize_urls[1])["scope"], "mcp:basic mcp:write");
    assert_eq!(query(&w.authorize_urls[1])["client_id"], "test-client-id");
    // The same challenge again: nothing more to ask for.
    let (r, _) = w.run(AuthConfig::default(), mem, Trigger::InsufficientScope { challenge });
    assert!(matches!(r, Err(AuthError::InsufficientScope { .. })), "{r:?}");
    assert_eq!(w.authorize_urls.len(), 2);
}

#[test]
fn token_endpoint_auth_follows_the_registration() {
    let hint = "Bearer resource_metadata=\"http://localhost:3000/prm\"";
    for (method, expect_basic, expect_secret_in_body) in [
        ("client_secret_basic", true, false),
        ("client_secret_post", false, true),
        ("none", false, false),
    ] {
        let mut w = prm_world(None, json!({"token_endpoint_auth_methods_supported": [method]})).on(
            "POST",
            &format!("{AS}/register"),
            201,
            json!({"client_id": "id", "client_secret": "sec", "token_endpoint_auth_method": method}),
        );
        w.run(AuthConfig::default(), Memory::default(), unauthorized(hint))
            .0
            .unwrap();
        let tok = w.sent.last().unwrap();
        let basic = tok
            .headers
            .iter()
            .any(|(k, v)| k == "Authorization" && v.starts_with("Basic "));
        assert_eq!(basic, expect_basic, "{method}");
        let form = w.form(w.sent.len() - 1);
        assert_eq!(get(&form, "client_secret").is_some(), expect_secret_in_body, "{method}");
        assert_eq!(get(&form, "client_id").is_some(), !expect_basic, "{method}");
    }
}

#[test]
fn pre_registered_and_metadata_document_clients_do_not_register() {
    let hint = "Bearer resource_metadata=\"http://localhost:3000/prm\"";
    let cfg = AuthConfig {
        client: ClientSettings {
            client_id: Some("pre-registered-client".into()),
            client_secret: Some("pre-registered-secret".into()),
            metadata_document_url: Some("https://c.example/m.json".into()),
            ..ClientSettings::default()
        },
        ..AuthConfig::default()
    };
    let mut w = prm_world(
        None,
        json!({"registration_endpoint": null, "token_endpoint_auth_methods_supported": ["client_secret_basic"]}),
    );
    w.run(cfg, Memory::default(), unauthorized(hint)).0.unwrap();
    assert!(!w.urls().iter().any(|u| u.contains("register")));
    assert!(w.sent.last().unwrap().headers.iter().any(|(k, _)| k == "Authorization"));
    let cimd = AuthConfig {
        client: ClientSettings {
            metadata_document_url: Some("https://c.example/m.json".into()),
            ..ClientSettings::default()
        },
        ..AuthConfig::default()
    };
    let mut w = prm_world(None, json!({"client_id_metadata_document_supported": true}));
    w.run(cimd, Memory::default(), unauthorized(hint)).0.unwrap();
    assert!(!w.urls().iter().any(|u| u.contains("register")));
    assert_eq!(query(&w.authorize_urls[0])["client_id"], "https://c.example/m.json");
}

#[test]
fn client_credentials_with_a_secret_and_with_a_key() {
    let hint = "Bearer resource_metadata=\"http://localhost:3000/prm\"";
    let as_extra = json!({"grant_types_supported": ["client_credentials"], "token_endpoint_auth_methods_supported": ["client_secret_basic"]});
    let cfg = AuthConfig {
        client: ClientSettings {
            client_id: Some("conformance-test-client".into()),
            client_secret: Some("conformance-test-secret".into()),
            ..ClientSettings::default()
        },
        ..AuthConfig::default()
    };
    let mut w = prm_world(None, as_extra);
    w.run(cfg, Memory::default(), unauthorized(hint)).0.unwrap();
    assert!(w.authorize_urls.is_empty());
    let form = w.form(2);
    assert_eq!(get(&form, "grant_type"), Some("client_credentials"));
    assert_eq!(get(&form, "resource"), Some(MCP));
    let auth = &w.sent[2].headers.iter().find(|(k, _)| k == "Authorization").unwrap().1;
    assert_eq!(
        *auth,
        token::basic_header("conformance-test-client", "conformance-test-secret")
    );

    let key = Arc::new(SigningKey::from_pem(&crate::protocol::auth::jwt::tests::test_key_pem()).unwrap());
    let cfg = AuthConfig {
        client: ClientSettings {
            client_id: Some("conformance-test-client".into()),
            ..ClientSettings::default()
        },
        signing_key: Some(key),
        ..AuthConfig::default()
    };
    let mut w = prm_world(
        None,
        json!({"grant_types_supported": ["client_credentials"], "token_endpoint_auth_methods_supported": ["private_key_jwt"]}),
    );
    w.run(cfg, Memory::default(), unauthorized(hint)).0.unwrap();
    let form = w.form(2);
    assert_eq!(get(&form, "client_id"), None);
    assert_eq!(get(&form, "client_assertion_type"), Some(token::ASSERTION_TYPE_JWT));
    let d = jwt::decode("client_assertion", get(&form, "client_assertion").unwrap(), 1001).unwrap();
    assert_eq!(d.claims["aud"], AS);
    assert_eq!(d.claims["iss"], "conformance-test-client");
    assert_eq!(d.claims["sub"], "conformance-test-client");
    assert_eq!(d.header["alg"], "ES256");
}

#[test]
fn id_jag_exchange_then_jwt_bearer() {
    let hint = "Bearer resource_metadata=\"http://localhost:3000/prm\"";
    let idp = "http://localhost:6000/token";
    let cfg = AuthConfig {
        client: ClientSettings {
            client_id: Some("xaa-client".into()),
            client_secret: Some("xaa-secret".into()),
            ..ClientSettings::default()
        },
        idp: Some(IdpSettings {
            token_endpoint: idp.into(),
            id_token: "id.token.jwt".into(),
            client_id: Some("idp-client".into()),
            client_secret: None,
        }),
        ..AuthConfig::default()
    };
    let mut w = prm_world(None, json!({"grant_types_supported": [token::GRANT_JWT_BEARER], "token_endpoint_auth_methods_supported": ["client_secret_basic"]}))
            .on("POST", idp, 200, json!({"access_token": "the-id-jag", "issued_token_type": token::TOKEN_TYPE_ID_JAG, "token_type": "N_A"}));
    w.run(cfg, Memory::default(), unauthorized(hint)).0.unwrap();
    assert_eq!(w.sent[2].url, idp);
    let ex = w.form(2);
    assert_eq!(get(&ex, "audience"), Some(AS));
    assert_eq!(get(&ex, "resource"), Some(MCP));
    assert_eq!(get(&ex, "subject_token"), Some("id.token.jwt"));
    assert_eq!(get(&ex, "client_id"), Some("idp-client"));
    let jb = w.form(3);
    assert_eq!(get(&jb, "grant_type"), Some(token::GRANT_JWT_BEARER));
    assert_eq!(get(&jb, "assertion"), Some("the-id-jag"));
    assert_eq!(
        w.sent[3].headers.iter().find(|(k, _)| k == "Authorization").unwrap().1,
        token::basic_header("xaa-client", "xaa-secret")
    );
}

#[test]
fn refresh_before_asking_again_and_reauthorize_when_refused() {
    let hint = "Bearer resource_metadata=\"http://localhost:3000/prm\"";
    let mut w = prm_world(None, json!({})).on(
        "POST",
        &format!("{AS}/token"),
        200,
        json!({"access_token": "t1", "token_type": "Bearer", "expires_in": 60, "refresh_token": "r1"}),
    );
    let (r, mem) = w.run(AuthConfig::default(), Memory::default(), unauthorized(hint));
    r.unwrap();
    assert!(mem.can_refresh());
    assert_eq!(w.authorize_urls.len(), 1);
    // Expiring: one refresh request, nobody asked.
    let (r, mem) = w.run(AuthConfig::default(), mem, Trigger::Expiring);
    r.unwrap();
    assert_eq!(get(&w.form(w.sent.len() - 1), "grant_type"), Some("refresh_token"));
    assert_eq!(get(&w.form(w.sent.len() - 1), "resource"), Some(MCP));
    assert_eq!(w.authorize_urls.len(), 1);
    // A 401 with the token: discovery again, then the refresh token first.
    let with_token = Trigger::Unauthorized {
        challenge: BearerChallenge::from_header(hint).unwrap(),
        with_token: true,
    };
    let (r, mem) = w.run(AuthConfig::default(), mem, with_token.clone());
    r.unwrap();
    assert_eq!(w.authorize_urls.len(), 1);
    // Refused refresh: authorize again (no new registration).
    let mut w2 = prm_world(None, json!({})).on("POST", &format!("{AS}/token"), 400, json!({"error": "invalid_grant"}));
    let (r, _) = w2.run(AuthConfig::default(), mem, with_token);
    assert!(matches!(r, Err(AuthError::TokenRefused { .. })));
    assert_eq!(w2.authorize_urls.len(), 1, "authorized again after the refused refresh");
    assert!(!w2.urls().iter().any(|u| u.contains("register")));
}

#[test]
fn a_new_authorization_server_gets_its_own_registration() {
    let as2 = "http://localhost:4002";
    let hint = "Bearer resource_metadata=\"http://localhost:3000/prm\"";
    let mut w = prm_world(None, json!({}));
    let (r, mem) = w.run(AuthConfig::default(), Memory::default(), unauthorized(hint));
    r.unwrap();
    let mut w = World::new()
        .prm(
            "http://localhost:3000/prm",
            json!({"resource": MCP, "authorization_servers": [as2]}),
        )
        .standard_as(as2, json!({}))
        .on(
            "POST",
            &format!("{as2}/register"),
            201,
            json!({"client_id": "as2-client"}),
        );
    let (r, mem) = w.run(
        AuthConfig::default(),
        mem,
        Trigger::Unauthorized {
            challenge: BearerChallenge::from_header(hint).unwrap(),
            with_token: true,
        },
    );
    r.unwrap();
    assert!(w.urls().contains(&format!("POST {as2}/register")));
    assert_eq!(query(&w.authorize_urls[0])["client_id"], "as2-client");
    for req in &w.sent {
        let text = format!("{req:?}");
        assert!(!text.contains("test-client-id"), "AS1's client id sent to AS2: {text}");
    }
    assert_eq!(mem.clients.len(), 2);
}

/// #26 item 16: an endpoint that is not https (or http on this machine) is
/// refused before anything is opened or sent to it.
#[test]
fn endpoints_that_are_not_https_are_refused() {
    for (endpoint, why) in [
        ("file:///etc/passwd", "neither https nor http"),
        ("javascript:alert(1)", "neither https nor http"),
        ("http://as.example.com/authorize", "not this machine"),
    ] {
        let mut w = prm_world(None, json!({"authorization_endpoint": endpoint}));
        let (r, _) = w.run(
            AuthConfig::default(),
            Memory::default(),
            unauthorized("Bearer resource_metadata=\"http://localhost:3000/prm\""),
        );
        let e = r.unwrap_err().to_string();
        assert!(e.contains(why) && e.contains("refusing"), "{endpoint}: {e}");
        assert!(w.authorize_urls.is_empty(), "{endpoint}: nothing opened in a browser");
    }
    assert!(super::endpoint_allowed("https://as.example.com/authorize").is_ok());
    assert!(super::endpoint_allowed("http://127.0.0.1:9000/authorize").is_ok());
    assert!(super::endpoint_allowed("http://localhost:9000/authorize").is_ok());
    assert!(super::endpoint_allowed("http://[::1]:9000/authorize").is_ok());
}

fn dpop_config(mode: DpopMode) -> (AuthConfig, Arc<DpopKey>) {
    let key = Arc::new(DpopKey::generate().unwrap());
    let cfg = AuthConfig {
        dpop: mode,
        dpop_key: Some(key.clone()),
        ..AuthConfig::default()
    };
    (cfg, key)
}

fn proof_claims(req: &Request) -> Option<Value> {
    let proof = &req.headers.iter().find(|(k, _)| k == "DPoP")?.1;
    jwt::decode("dpop", proof, 0).map(|d| {
        assert_eq!(d.header["typ"], "dpop+jwt");
        d.claims
    })
}

#[test]
fn dpop_proofs_go_with_the_token_request_when_the_server_lists_es256() {
    let hint = "DPoP resource_metadata=\"http://localhost:3000/prm\"";
    let dpop_token = json!({"access_token": "h.c.s", "token_type": "DPoP", "expires_in": 3600});
    for (mode, listed, expect) in [
        (DpopMode::Auto, true, true),
        (DpopMode::Auto, false, false),
        (DpopMode::Always, false, true),
        (DpopMode::Never, true, false),
    ] {
        let extra = if listed {
            json!({"dpop_signing_alg_values_supported": ["ES256"]})
        } else {
            json!({})
        };
        let mut w = prm_world(None, extra).on("POST", &format!("{AS}/token"), 200, dpop_token.clone());
        let (cfg, key) = dpop_config(mode);
        // The Bearer scheme of the challenge: only the metadata (or the mode) says DPoP.
        let (r, memory) = w.run(cfg, Memory::default(), unauthorized(&hint.replace("DPoP", "Bearer")));
        r.unwrap();
        let token_req = w.sent.iter().find(|r| r.url.ends_with("/token")).unwrap();
        let claims = proof_claims(token_req);
        assert_eq!(claims.is_some(), expect, "{mode:?}, listed {listed}");
        if let Some(c) = claims {
            assert_eq!(c["htm"], "POST");
            assert_eq!(c["htu"], format!("{AS}/token"));
            assert!(c.get("ath").is_none() && c.get("nonce").is_none());
        }
        let g = memory.token.unwrap();
        assert_eq!(g.dpop_jkt.as_deref(), expect.then(|| key.thumbprint()), "{mode:?}");
    }
    // A DPoP challenge from the resource is enough in auto mode.
    let mut w = prm_world(None, json!({})).on("POST", &format!("{AS}/token"), 200, dpop_token);
    let (cfg, _) = dpop_config(DpopMode::Auto);
    w.run(cfg, Memory::default(), unauthorized(hint)).0.unwrap();
    assert!(proof_claims(w.sent.iter().find(|r| r.url.ends_with("/token")).unwrap()).is_some());
}

#[test]
fn a_use_dpop_nonce_answer_sends_the_token_request_once_more_with_the_nonce() {
    let hint = "DPoP resource_metadata=\"http://localhost:3000/prm\"";
    let token_url = format!("{AS}/token");
    let nonce_answer = json!({"error": "use_dpop_nonce", "error_description": "nonce required"});
    let mut w = prm_world(None, json!({"dpop_signing_alg_values_supported": ["ES256"]}))
        .once("POST", &token_url, 400, nonce_answer.clone(), &[("dpop-nonce", "n-1")])
        .on(
            "POST",
            &token_url,
            200,
            json!({"access_token": "h.c.s", "token_type": "DPoP"}),
        );
    let (cfg, _) = dpop_config(DpopMode::Auto);
    let (r, memory) = w.run(cfg.clone(), Memory::default(), unauthorized(hint));
    r.unwrap();
    let tokens: Vec<&Request> = w.sent.iter().filter(|r| r.url == token_url).collect();
    assert_eq!(tokens.len(), 2);
    assert!(proof_claims(tokens[0]).unwrap().get("nonce").is_none());
    let second = proof_claims(tokens[1]).unwrap();
    assert_eq!(second["nonce"], "n-1");
    assert_ne!(proof_claims(tokens[0]).unwrap()["jti"], second["jti"], "a fresh proof");
    assert_eq!(memory.dpop_nonce.as_deref(), Some("n-1"));
    // A server that asks again and again is asked once more only.
    let mut w = prm_world(None, json!({"dpop_signing_alg_values_supported": ["ES256"]}))
        .once("POST", &token_url, 400, nonce_answer.clone(), &[("dpop-nonce", "n-1")])
        .once("POST", &token_url, 400, nonce_answer, &[("dpop-nonce", "n-2")]);
    let err = w.run(cfg, Memory::default(), unauthorized(hint)).0.unwrap_err();
    assert!(err.to_string().contains("use_dpop_nonce"), "{err}");
    assert_eq!(w.sent.iter().filter(|r| r.url == token_url).count(), 2);
}

#[test]
fn workload_identity_sends_the_workload_jwt_as_a_jwt_bearer_grant_and_never_retries() {
    let hint = "Bearer resource_metadata=\"http://localhost:3000/prm\"";
    let cfg = AuthConfig {
        client: ClientSettings {
            client_id: Some("workload-client".into()),
            ..ClientSettings::default()
        },
        workload_token: Some("w.j.t".into()),
        scope: Some(vec!["read".into()]),
        ..AuthConfig::default()
    };
    let meta = json!({"grant_types_supported": [token::GRANT_JWT_BEARER], "registration_endpoint": null});
    let mut w = prm_world(None, meta.clone());
    w.run(cfg.clone(), Memory::default(), unauthorized(hint)).0.unwrap();
    assert!(w.authorize_urls.is_empty(), "no browser, no authorization code");
    let form = w.form(w.sent.len() - 1);
    assert_eq!(get(&form, "grant_type"), Some(token::GRANT_JWT_BEARER));
    assert_eq!(get(&form, "assertion"), Some("w.j.t"));
    assert_eq!(get(&form, "client_id"), Some("workload-client"));
    assert_eq!(get(&form, "scope"), Some("read"));
    assert_eq!(get(&form, "resource"), Some(MCP));
    // A refusal is the answer: no second try, no other grant.
    let mut w = prm_world(None, meta).once(
        "POST",
        &format!("{AS}/token"),
        400,
        json!({"error": "invalid_grant", "error_description": "JWT assertion is expired"}),
        &[],
    );
    let err = w.run(cfg, Memory::default(), unauthorized(hint)).0.unwrap_err();
    assert!(err.to_string().contains("invalid_grant"), "{err}");
    assert_eq!(w.sent.iter().filter(|r| r.method == Method::Post).count(), 1);
}
