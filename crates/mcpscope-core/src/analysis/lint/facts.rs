//! The handshake and the era, as far as the session has shown them.

use super::is_request;
use crate::protocol::era;
use crate::protocol::lifecycle::LifecycleFacts;
use crate::protocol::methods;
use crate::wire::frame::{Direction, Frame};
use serde_json::Value;

/// The lifecycle facts the handshake strip also judges
/// ([`LifecycleFacts`], one set for both), plus what only lint's era rules ask.
#[derive(Default)]
pub(super) struct Facts {
    lifecycle: LifecycleFacts,
    /// A client request (other than initialize) carried a modern protocol
    /// version in its `_meta` while no version was negotiated.
    modern_request: bool,
    /// The client sent initialize at some point (an era probe that fell back).
    pub initialize_sent: bool,
}

impl std::ops::Deref for Facts {
    type Target = LifecycleFacts;

    fn deref(&self) -> &LifecycleFacts {
        &self.lifecycle
    }
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
        self.lifecycle.observe(f);
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
        all_modern(&self.refused_supported).then(|| {
            format!(
                "it refused initialize naming only {} as supported",
                self.refused_supported.join(", ")
            )
        })
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
