//! Choosing the grant and the scopes, and each grant's steps up to its token
//! request: the authorization code (with registration, PKCE and the redirect),
//! client credentials, the ID-JAG exchange and workload identity.

use super::*;

impl AuthFlow {
    pub(super) fn issuer(&self) -> String {
        self.memory.issuer.clone().unwrap_or_default()
    }

    pub(super) fn meta(&self) -> ServerMetadata {
        self.memory.server_metadata.clone().unwrap_or_default()
    }

    /// The `resource` parameter: the metadata's string as it is, else (on
    /// the 2025-03-26 path) the server's URL without a fragment.
    pub(super) fn resource(&self) -> Option<String> {
        match &self.memory.resource_metadata {
            Some(prm) => Some(prm.resource.clone()),
            None => Some(self.server_url.split('#').next().unwrap_or_default().to_owned()),
        }
    }

    pub(super) fn grant(&self) -> GrantChoice {
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

    pub(super) fn choose_scopes(&mut self, for_code: bool) {
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

    pub(super) fn after_metadata(&mut self) -> Action {
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

    pub(super) fn workload_identity(&mut self) -> Action {
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
    pub(super) fn dpop_key(&self) -> Option<Arc<DpopKey>> {
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

    pub(super) fn configured_client(&self) -> Option<Client> {
        let s = &self.config.client;
        Some(Client {
            client_id: s.client_id.clone()?,
            client_secret: s.client_secret.clone(),
            auth_method: None,
            kind: ClientKind::PreRegistered,
            issuer: s.client_issuer.clone(),
        })
    }

    pub(super) fn authorization_code(&mut self) -> Action {
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

    pub(super) fn on_registration(&mut self, input: Input) -> Action {
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

    pub(super) fn start_authorization(&mut self) -> Action {
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

    pub(super) fn on_callback(&mut self, input: Input, pending: PendingAuthorization) -> Action {
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

    pub(super) fn client_credentials(&mut self) -> Action {
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

    pub(super) fn idp_exchange(&mut self) -> Action {
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

    pub(super) fn on_idp_exchange(&mut self, input: Input) -> Action {
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
}
