//! How a session starts: the `server/discover` probe, the fallback to
//! `initialize`, the handshake, and the lists fetched once it is ready.

use super::*;

impl Driver {
    pub(super) fn send_probe(&mut self) {
        let id = self.alloc_id();
        let timeout = match self.config.era {
            EraChoice::Auto => match (self.config.probe_timeout, self.config.request_timeout) {
                (Some(p), Some(r)) => Some(p.min(r)),
                (p, r) => p.or(r),
            },
            _ => self.config.request_timeout,
        };
        let offered = self.envelope.protocol_version.clone();
        self.era.state = EraState::Probing {
            id: id.clone(),
            offered: offered.clone(),
        };
        self.pending.insert(
            id.clone(),
            Pending {
                purpose: Purpose::Probe,
                root: id.clone(),
                method: methods::SERVER_DISCOVER.into(),
                params: None,
                timeout,
                enveloped: true,
                version_retries: 0,
            },
        );
        let params = self.envelope.discover_params();
        self.push_send(Message::request(id, methods::SERVER_DISCOVER, Some(params)), timeout);
    }

    pub(super) fn send_initialize(&mut self) {
        let id = self.alloc_id();
        let hs = HandshakeOptions {
            protocol_version: self.legacy_version.clone(),
            ..self.config.handshake.clone()
        };
        self.era.state = EraState::Initializing { id: id.clone() };
        let timeout = self.config.request_timeout;
        self.pending.insert(
            id.clone(),
            Pending {
                purpose: Purpose::Initialize,
                root: id.clone(),
                method: methods::INITIALIZE.into(),
                params: Some(hs.params()),
                timeout,
                enveloped: false,
                version_retries: 0,
            },
        );
        self.push_send(Message::request(id, methods::INITIALIZE, Some(hs.params())), timeout);
    }

    pub(super) fn settle_probe(&mut self, verdict: ProbeVerdict) {
        let choice = self.era.choice;
        match verdict {
            ProbeVerdict::Modern(d) => {
                self.era.state = EraState::Modern;
                self.era.reason = format!(
                    "server/discover answered (supportedVersions: {}): modern server",
                    d.supported_versions.join(", ")
                );
                self.era.discovery = Some(d);
                let decision = self.decision().expect("settled modern");
                self.note(format!("era: {}", decision.summary()));
                self.actions.push_back(Action::Settled(Ok(decision)));
                self.session_ready();
            }
            ProbeVerdict::UnsupportedVersion {
                requested, supported, ..
            } => {
                let best = era::best_modern_version(&supported);
                if let Some(v) = best.filter(|_| self.probe_retries < MAX_VERSION_RETRIES) {
                    let note = era::retry_note(methods::SERVER_DISCOVER, &requested, &supported, &v);
                    self.era.notes.push(note.clone());
                    self.note(note);
                    self.envelope.protocol_version = v;
                    self.probe_retries += 1;
                    self.send_probe();
                    return;
                }
                let legacy_ok = supported.iter().any(|v| handshake::is_supported(v));
                let why = era::unsupported_note(methods::SERVER_DISCOVER, &requested, &supported, self.probe_retries);
                if choice == EraChoice::Modern || !legacy_ok {
                    self.era.state = EraState::Modern;
                    self.era.reason = why.clone();
                    self.settle_failed(EraFailure::NotModern(format!(
                        "{why}; mcpscope speaks {}",
                        era::MODERN_VERSIONS.join(", ")
                    )));
                } else {
                    self.fall_back(format!("{why}: only legacy versions in common"));
                }
            }
            ProbeVerdict::ModernError(e) => {
                self.era.state = EraState::Modern;
                self.era.reason = format!("server/discover refused with {e}: a modern server");
                self.settle_failed(EraFailure::NotModern(format!(
                    "server/discover was refused with {e} (a modern error: the server is modern but refused the probe)"
                )));
            }
            ProbeVerdict::Legacy(why) => {
                if choice == EraChoice::Modern {
                    self.era.state = EraState::Modern;
                    self.era.reason = format!("modern chosen, but {why}");
                    self.settle_failed(EraFailure::NotModern(why));
                } else {
                    self.fall_back(why);
                }
            }
        }
    }

    pub(super) fn fall_back(&mut self, why: String) {
        let note = format!("era: auto: {why}; falling back to initialize");
        self.era.notes.push(note.clone());
        self.era.reason = why;
        self.note(note);
        self.send_initialize();
    }

    pub(super) fn on_initialize(&mut self, f: &Frame, outcome: Result<Value, ErrorObject>) {
        match outcome {
            // The fallback's initialize was refused by a server that names a
            // modern version: the probe only missed it (e.g. a slow start past
            // the probe's short timeout). Probe once more.
            Err(e)
                if self.era.choice == EraChoice::Auto
                    && !self.reprobed
                    && era::best_modern_version(&handshake::supported_from_error(&e)).is_some() =>
            {
                self.reprobed = true;
                let note = format!(
                    "era: auto: initialize was refused by a server that supports {}; probing again with server/discover",
                    handshake::supported_from_error(&e).join(", ")
                );
                self.era.notes.push(note.clone());
                self.note(note);
                self.config.probe_timeout = self.config.request_timeout;
                self.send_probe();
            }
            Err(e) => {
                self.era.state = EraState::Legacy;
                self.settle_failed(EraFailure::InitializeRefused(e));
            }
            Ok(result) => {
                let latency = f.link.as_ref().map_or(Duration::ZERO, |l| l.latency);
                let hs = Handshake::judge(&self.legacy_version, &result, latency);
                let usable = hs.usable();
                self.era.state = EraState::Legacy;
                self.era.handshake = Some(hs.clone());
                if !usable {
                    self.settle_failed(EraFailure::Handshake(Box::new(hs)));
                    return;
                }
                self.push_send(Message::notification(methods::INITIALIZED, None), None);
                let decision = self.decision().expect("settled legacy");
                self.actions.push_back(Action::Settled(Ok(decision)));
                self.session_ready();
            }
        }
    }

    pub(super) fn settle_failed(&mut self, failure: EraFailure) {
        if !self.era.settled() {
            self.era.state = match self.era.choice {
                EraChoice::Modern => EraState::Modern,
                _ => EraState::Legacy,
            };
        }
        self.era.failure = Some(failure.clone());
        self.note(format!("era: {failure}"));
        self.actions.push_back(Action::Settled(Err(failure)));
    }

    /// The session can be used: fetch what the server advertises.
    pub(super) fn session_ready(&mut self) {
        if !self.config.fetch_lists {
            return;
        }
        let caps = self.era.server_capabilities().cloned().unwrap_or(Value::Null);
        for (capability, list) in methods::ADVERTISED_LISTS {
            if caps.get(capability).is_some() && !self.lists_fetched.contains(&list) {
                self.fetch_list(list);
            }
        }
    }

    pub(super) fn fetch_list(&mut self, list: &'static str) {
        if !self.lists_fetched.contains(&list) {
            self.lists_fetched.push(list);
        }
        let id = self.alloc_id();
        self.refetching.insert(list, id.clone());
        let pending = Pending {
            purpose: Purpose::List(list),
            root: id.clone(),
            method: list.to_owned(),
            params: None,
            timeout: self.config.request_timeout,
            enveloped: self.era.state == EraState::Modern,
            version_retries: 0,
        };
        self.send_pending(id, pending);
    }

    pub(super) fn refetch(&mut self, list: &'static str) {
        self.note(format!("mcpscope re-fetches {list}: the server said the list changed"));
        self.fetch_list(list);
    }

    /// A fetch of `list` ended: fetch again if the list changed meanwhile.
    pub(super) fn list_answered(&mut self, list: &'static str) {
        self.refetching.remove(list);
        if self.stale_lists.remove(list) && self.gone.is_none() {
            self.refetch(list);
        }
    }

    /// The owner fetched a list itself: a later list_changed re-fetches it.
    pub fn list_fetched(&mut self, list: &str) {
        if let Some(l) = methods::LISTS.iter().find(|l| **l == list)
            && !self.lists_fetched.contains(l)
        {
            self.lists_fetched.push(l);
        }
    }
}
