//! The handshake and the era, as far as the session has shown them.

use super::is_request;
use crate::protocol::era::{self, Discovery};
use crate::protocol::handshake::{self, Handshake};
use crate::protocol::methods;
use crate::wire::classify::Kind;
use crate::wire::frame::{Direction, Frame};
use serde_json::{Value, json};
use std::time::Duration;

#[derive(Default)]
pub(super) struct Facts {
    pub init_req: Option<u64>,
    pub offered: Option<String>,
    /// The client's capabilities from the initialize params (`{}` when absent).
    pub client_caps: Option<Value>,
    pub init_resp: Option<u64>,
    /// `initialize` sent again before any answer (the first one's HTTP
    /// exchange asked for authorization): whichever is answered counts.
    pub init_resent: Vec<u64>,
    pub judged: Option<Handshake>,
    pub initialized: Option<u64>,
    /// The first `server/discover` result: its seq and what it says.
    pub discovery: Option<(u64, Discovery)>,
    /// Why the server is known to speak only the modern era, from its refusal of initialize.
    refused_modern_only: Option<String>,
    /// A client request (other than initialize) carried a modern protocol version in its `_meta`.
    modern_request: bool,
    /// The client sent initialize at some point (an era probe that fell back).
    pub initialize_sent: bool,
}

fn all_modern(v: &[String]) -> bool {
    !v.is_empty() && v.iter().all(|x| era::Era::of_version(x) == Some(era::Era::Modern))
}

impl Facts {
    pub fn observe(&mut self, f: &Frame) {
        let method = f.class.method.as_deref();
        if f.direction == Direction::Out && method == Some(methods::INITIALIZE) {
            self.initialize_sent = true;
        }
        match (f.direction, f.kind()) {
            (Direction::Out, Kind::Request)
                if method == Some(methods::INITIALIZE) && self.init_req.is_some() && self.init_resp.is_none() =>
            {
                self.init_resent.push(f.seq);
            }
            (Direction::Out, Kind::Request) if method == Some(methods::INITIALIZE) && self.init_req.is_none() => {
                self.init_req = Some(f.seq);
                let params = f.json().and_then(|v| v.get("params").cloned()).unwrap_or(Value::Null);
                self.offered = params.get("protocolVersion").and_then(Value::as_str).map(str::to_owned);
                self.client_caps = Some(params.get("capabilities").cloned().unwrap_or_else(|| json!({})));
            }
            (Direction::Out, Kind::Notification)
                if method == Some(methods::INITIALIZED) && self.initialized.is_none() =>
            {
                self.initialized = Some(f.seq);
            }
            (Direction::In, Kind::Result | Kind::Error)
                if self.init_resp.is_none()
                    && self.init_req.is_some()
                    && f.link.as_ref().is_some_and(|l| {
                        Some(l.request_seq) == self.init_req || self.init_resent.contains(&l.request_seq)
                    }) =>
            {
                if let Some(l) = &f.link {
                    self.init_req = Some(l.request_seq);
                }
                self.init_resp = Some(f.seq);
                if f.kind() == Kind::Result {
                    let result = f.json().and_then(|v| v.get("result").cloned()).unwrap_or(Value::Null);
                    let latency = f.link.as_ref().map_or(Duration::ZERO, |l| l.latency);
                    self.judged = Some(Handshake::judge(
                        self.offered.as_deref().unwrap_or_default(),
                        &result,
                        latency,
                    ));
                } else if let Some(e) = f
                    .json()
                    .and_then(|v| v.get("error").and_then(crate::wire::message::ErrorObject::from_json))
                {
                    let supported = handshake::supported_from_error(&e);
                    if all_modern(&supported) {
                        self.refused_modern_only = Some(format!(
                            "it refused initialize naming only {} as supported",
                            supported.join(", ")
                        ));
                    }
                }
            }
            _ => {}
        }
        if f.direction == Direction::In
            && f.kind() == Kind::Result
            && self.discovery.is_none()
            && f.link.as_ref().is_some_and(|l| l.method == methods::SERVER_DISCOVER)
            && let Some(d) = f.json().and_then(|v| v.get("result").and_then(Discovery::from_result))
        {
            self.discovery = Some((f.seq, d));
        }
        // Only worth parsing params while there is no handshake to go by.
        if self.negotiated().is_none()
            && !self.modern_request
            && is_request(f, Direction::Out)
            && method != Some(methods::INITIALIZE)
            && f.json().is_some_and(|v| {
                v.get("params")
                    .and_then(era::request_version)
                    .is_some_and(|ver| era::Era::of_version(ver) == Some(era::Era::Modern))
            })
        {
            self.modern_request = true;
        }
    }

    /// The version both sides settled on, when they did.
    pub fn negotiated(&self) -> Option<&str> {
        self.judged.as_ref()?.version()
    }

    /// The client speaks the stateless 2026-07-28 revision, which has no
    /// handshake. Settled once a version is negotiated (then never).
    pub fn modern(&self) -> bool {
        self.negotiated().is_none() && (self.discovery.is_some() || self.modern_request)
    }

    /// Whether the session may still turn out modern.
    pub fn may_be_modern(&self) -> bool {
        self.negotiated().is_none()
    }

    /// Whether anything so far says the session is modern.
    pub fn modern_hint(&self) -> bool {
        self.discovery.is_some() || self.modern_request
    }

    /// Why the server is known to speak only the modern era (its own words), if it is.
    pub fn modern_only(&self) -> Option<String> {
        if let Some((_, d)) = &self.discovery
            && all_modern(&d.supported_versions)
        {
            return Some(format!(
                "its server/discover lists only {}",
                d.supported_versions.join(", ")
            ));
        }
        self.refused_modern_only.clone()
    }

    /// The server's capabilities: from the initialize result, or (modern era)
    /// from `server/discover`.
    pub fn server_caps(&self) -> Option<&Value> {
        self.judged
            .as_ref()
            .and_then(|h| h.capabilities.as_ref())
            .or_else(|| self.discovery.as_ref().and_then(|(_, d)| d.capabilities.as_ref()))
            .filter(|c| c.is_object())
    }

    /// The server's capabilities once nothing later can change them.
    pub fn settled_server_caps(&self) -> Option<&Value> {
        self.judged
            .as_ref()
            .and_then(|h| h.capabilities.as_ref())
            .filter(|c| c.is_object())
    }
}
