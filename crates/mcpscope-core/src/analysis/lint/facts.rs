//! The handshake and the era, as far as the session has shown them.

use crate::protocol::lifecycle::LifecycleFacts;
use crate::protocol::methods;
use crate::wire::frame::{Direction, Frame};
use serde_json::Value;

/// The lifecycle facts the handshake strip also judges
/// ([`LifecycleFacts`], one set for both), plus what only lint's era rules ask.
#[derive(Default)]
pub(super) struct Facts {
    lifecycle: LifecycleFacts,
    /// The client sent initialize at some point (an era probe that fell back).
    pub initialize_sent: bool,
}

impl std::ops::Deref for Facts {
    type Target = LifecycleFacts;

    fn deref(&self) -> &LifecycleFacts {
        &self.lifecycle
    }
}

impl Facts {
    pub fn observe(&mut self, f: &Frame) {
        if f.direction == Direction::Out && f.class.method.as_deref() == Some(methods::INITIALIZE) {
            self.initialize_sent = true;
        }
        self.lifecycle.observe(f);
    }

    /// Whether the session may still turn out modern.
    pub fn may_be_modern(&self) -> bool {
        self.negotiated().is_none()
    }

    /// Whether anything so far says the session is modern.
    pub fn modern_hint(&self) -> bool {
        self.discovery.is_some() || self.modern_request
    }

    /// The server's capabilities once nothing later can change them.
    pub fn settled_server_caps(&self) -> Option<&Value> {
        self.judged
            .as_ref()
            .and_then(|h| h.capabilities.as_ref())
            .filter(|c| c.is_object())
    }
}
