//! Capabilities: a method used that the other side never advertised.

use super::facts::Facts;
use super::{Finding, Severity, rule};
use crate::protocol::capabilities::{advertised, client_capability_for, server_capability_for};
use crate::protocol::methods;
use crate::wire::classify::Kind;
use crate::wire::frame::{Direction, Frame};
use std::collections::HashMap;

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Use {
    /// A request that needs the other side's capability.
    Call,
    /// A list_changed notification that needs the sender's own flag.
    ListChanged,
}

/// Every frame that used a method needing a capability, by direction and
/// method, in order of first use; judged when the capabilities are known.
/// Once they are settled, uses of an advertised method are not kept.
#[derive(Default)]
pub(super) struct Capabilities {
    uses: Vec<(Direction, Use, String, Vec<u64>)>,
    index: HashMap<(Direction, Use, String), usize>,
}

impl Capabilities {
    pub fn frame(&mut self, f: &Frame, facts: &Facts) {
        let Some(m) = f.class.method.as_deref() else { return };
        let kind = match (f.direction, f.kind()) {
            (Direction::Out, Kind::Request) => {
                if server_capability_for(m, None).is_none() && server_capability_for(m, Some("2024-11-05")).is_none() {
                    return;
                }
                if let Some(caps) = facts.settled_server_caps()
                    && server_capability_for(m, facts.negotiated()).is_none_or(|path| advertised(caps, path))
                {
                    return;
                }
                Use::Call
            }
            (Direction::In, Kind::Request) => {
                let Some(path) = client_capability_for(m) else { return };
                if facts.init_req.is_some()
                    && facts
                        .client_caps
                        .as_ref()
                        .is_none_or(|c| !c.is_object() || advertised(c, path))
                {
                    return;
                }
                Use::Call
            }
            (Direction::In, Kind::Notification) => {
                if !matches!(
                    m,
                    methods::TOOLS_LIST_CHANGED | methods::PROMPTS_LIST_CHANGED | methods::RESOURCES_LIST_CHANGED
                ) {
                    return;
                }
                Use::ListChanged
            }
            (Direction::Out, Kind::Notification) if m == methods::ROOTS_LIST_CHANGED => Use::ListChanged,
            _ => return,
        };
        let key = (f.direction, kind, m.to_owned());
        match self.index.get(&key) {
            Some(&i) => self.uses[i].3.push(f.seq),
            None => {
                self.index.insert(key, self.uses.len());
                self.uses.push((f.direction, kind, m.to_owned(), vec![f.seq]));
            }
        }
    }

    pub fn provisional(&self, facts: &Facts, out: &mut Vec<Finding>) {
        let server_caps = facts.server_caps();
        let client_caps = facts.client_caps.as_ref().filter(|c| c.is_object());
        let negotiated = facts.negotiated();
        // One finding per method, listing every frame that used it.
        let mut missing: Vec<(Direction, &str, String, Vec<u64>)> = Vec::new();
        let mut list_changed: Vec<(Direction, &str, String, Vec<u64>)> = Vec::new();
        for (dir, kind, m, seqs) in &self.uses {
            let m = m.as_str();
            match (dir, kind) {
                (Direction::Out, Use::Call) => {
                    if let (Some(caps), Some(path)) = (server_caps, server_capability_for(m, negotiated))
                        && !advertised(caps, path)
                    {
                        missing.push((*dir, m, path.join("."), seqs.clone()));
                    }
                }
                (Direction::In, Use::Call) => {
                    if let (Some(caps), Some(path)) = (client_caps, client_capability_for(m))
                        && !advertised(caps, path)
                    {
                        missing.push((*dir, m, path.join("."), seqs.clone()));
                    }
                }
                (Direction::In, Use::ListChanged) => {
                    let cap = match m {
                        methods::TOOLS_LIST_CHANGED => "tools",
                        methods::PROMPTS_LIST_CHANGED => "prompts",
                        _ => "resources",
                    };
                    if let Some(caps) = server_caps
                        && !advertised(caps, &[cap, "listChanged"])
                    {
                        list_changed.push((*dir, m, format!("{cap}.listChanged"), seqs.clone()));
                    }
                }
                (Direction::Out, Use::ListChanged) => {
                    if let Some(caps) = client_caps
                        && !advertised(caps, &["roots", "listChanged"])
                    {
                        list_changed.push((*dir, m, "roots.listChanged".into(), seqs.clone()));
                    }
                }
            }
        }
        for (dir, method, cap, seqs) in missing {
            let times = if seqs.len() == 1 {
                String::new()
            } else {
                format!(" ({} times)", seqs.len())
            };
            let (severity, msg) = match dir {
                Direction::Out => (
                    Severity::Warning,
                    format!(
                        "The client called {method}{times}, but the server did not advertise the `{cap}` capability in \
                         its initialize result; a server without it may answer -32601 Method not found, and a client \
                         should only use what was negotiated."
                    ),
                ),
                Direction::In => (
                    Severity::Error,
                    format!(
                        "The server sent {method}{times}, but the client did not declare the `{cap}` capability in \
                         initialize; a server must only use capabilities the client declared."
                    ),
                ),
            };
            out.push(Finding::new(rule::CAPABILITY_NOT_ADVERTISED, severity, seqs, msg));
        }
        for (dir, method, cap, seqs) in list_changed {
            let side = match dir {
                Direction::In => "server",
                Direction::Out => "client",
            };
            out.push(Finding::new(
                rule::LIST_CHANGED_NOT_ADVERTISED,
                Severity::Warning,
                seqs,
                format!(
                    "The {side} sent {method} without `{cap}: true` in its capabilities; the other side has no reason \
                     to expect it and may ignore it."
                ),
            ));
        }
    }
}
