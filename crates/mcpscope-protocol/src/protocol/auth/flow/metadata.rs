//! Finding the authorization server: the protected resource's metadata
//! (RFC 9728, from the challenge's hint or the well-known paths), then the
//! server's own (RFC 8414 or OpenID Connect discovery), with the legacy
//! fallback of servers that publish no resource metadata.

use super::*;

impl AuthFlow {
    pub(super) fn discover(&mut self, hint: Option<&str>) -> Action {
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

    pub(super) fn next_resource_metadata(
        &mut self,
        mut candidates: VecDeque<String>,
        mut fallback: VecDeque<String>,
    ) -> Action {
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

    pub(super) fn on_resource_metadata(
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
    pub(super) fn last_url_hint(&self) -> String {
        self.last_sent.clone().unwrap_or_default()
    }

    pub(super) fn legacy_discovery(&mut self) -> Action {
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

    pub(super) fn next_server_metadata(
        &mut self,
        issuer: String,
        mut candidates: VecDeque<String>,
        tried: Vec<String>,
    ) -> Action {
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

    pub(super) fn on_server_metadata(
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
}
