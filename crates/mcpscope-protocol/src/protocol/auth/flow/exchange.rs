//! The token endpoint: how the client authenticates there, the token
//! request of every grant and of a refresh, and what its answer means.

use super::*;

impl AuthFlow {
    pub(super) fn refresh(&mut self) -> Action {
        let Some(g) = self.memory.token.clone() else {
            return self.fail(AuthError::Config("no token to refresh".into()));
        };
        let Some(rt) = self.memory.refresh_tokens.get(&g.issuer).cloned() else {
            return self.fail(AuthError::Config("no refresh token".into()));
        };
        self.refresh_tried = true;
        self.token_request(TokenKind::Refresh, Grant::RefreshToken { refresh_token: rt }, g.client)
    }

    pub(super) fn client_auth(&mut self, client: &Client) -> Result<ClientAuth, AuthError> {
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

    pub(super) fn token_request(&mut self, kind: TokenKind, grant: Grant, client: Option<Client>) -> Action {
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

    pub(super) fn on_token(&mut self, input: Input, kind: TokenKind) -> Action {
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
