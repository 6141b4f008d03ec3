//! The lifecycle of the legacy era (up to 2025-11-25), which starts with
//! initialize: what came too early, what never came.

use super::facts::Facts;
use super::{Finding, Severity, is_request, request_label, rule};
use crate::protocol::handshake::{self, VersionVerdict};
use crate::protocol::methods;
use crate::wire::frame::{Direction, Frame};

/// Requests named in one finding: every seq, the first few labels.
#[derive(Default)]
struct Listed {
    seqs: Vec<u64>,
    labels: Vec<String>,
}

impl Listed {
    const SHOWN: usize = 5;

    fn add(&mut self, f: &Frame) {
        self.seqs.push(f.seq);
        if self.labels.len() < Self::SHOWN {
            self.labels.push(request_label(f));
        }
    }

    /// Up to five labels, then a count, so a flood stays one readable sentence.
    fn text(&self) -> String {
        let mut s = self.labels.join(", ");
        if self.seqs.len() > Self::SHOWN {
            s.push_str(&format!(" and {} more", self.seqs.len() - Self::SHOWN));
        }
        s
    }
}

#[derive(Default)]
pub(super) struct Lifecycle {
    /// Client requests before the initialize response.
    early: Listed,
    /// Server requests before notifications/initialized.
    early_server: Listed,
    /// Client requests after the server answered an unsupported version.
    later: Listed,
}

impl Lifecycle {
    pub fn frame(&mut self, f: &Frame, facts: &Facts) {
        if is_request(f, Direction::Out) {
            if facts.init_resp.is_none()
                && !matches!(
                    f.class.method.as_deref(),
                    Some(methods::PING | methods::INITIALIZE | methods::SERVER_DISCOVER)
                )
            {
                self.early.add(f);
            }
            if facts.init_resp.is_some_and(|r| f.seq > r)
                && facts
                    .judged
                    .as_ref()
                    .is_some_and(|j| j.verdict == VersionVerdict::Unsupported)
            {
                self.later.add(f);
            }
        } else if is_request(f, Direction::In)
            && facts.initialized.is_none()
            && f.class.method.as_deref() != Some(methods::PING)
        {
            self.early_server.add(f);
        }
    }

    pub fn provisional(&self, facts: &Facts, out: &mut Vec<Finding>) {
        if facts.modern() {
            return;
        }
        let init_resp = facts.init_resp.unwrap_or(u64::MAX);
        if !self.early.seqs.is_empty() {
            let msg = if facts.init_req.is_none() {
                format!(
                    "The client sent {} without initialize. Up to protocol version 2025-11-25 a session starts with \
                     initialize; servers may refuse anything else until then.",
                    self.early.text()
                )
            } else {
                format!(
                    "The client sent {} before initialize was answered. Until the initialize response arrives the \
                     client should send nothing but ping.",
                    self.early.text()
                )
            };
            out.push(Finding::new(
                rule::REQUEST_BEFORE_INITIALIZE,
                Severity::Warning,
                self.early.seqs.clone(),
                msg,
            ));
        }

        let Some(init_req) = facts.init_req else { return };

        if let Some(judged) = &facts.judged {
            let resp = facts.init_resp.expect("judged from a response");
            match judged.verdict {
                VersionVerdict::Unsupported => {
                    let answered = judged.answered.as_deref().unwrap_or_default();
                    let msg = if answered == judged.offered {
                        format!(
                            "The server accepted protocol version {answered:?}, which is not an MCP revision mcpscope \
                             knows ({}); a conforming server answers an unknown offer with a version it supports.",
                            handshake::SUPPORTED_VERSIONS.join(", ")
                        )
                    } else {
                        format!(
                            "The client offered {} and the server answered {answered:?}, which is not a supported \
                             version ({}). The client should disconnect.",
                            judged.offered,
                            handshake::SUPPORTED_VERSIONS.join(", ")
                        )
                    };
                    out.push(Finding::new(
                        rule::UNSUPPORTED_VERSION,
                        Severity::Error,
                        vec![init_req, resp],
                        msg,
                    ));
                    if !self.later.seqs.is_empty() {
                        out.push(Finding::new(
                            rule::CONTINUED_AFTER_UNSUPPORTED_VERSION,
                            Severity::Warning,
                            self.later.seqs.clone(),
                            format!(
                                "The client went on with {} after the server answered the unsupported version \
                                 {answered:?}; it should have disconnected.",
                                self.later.text()
                            ),
                        ));
                    }
                }
                VersionVerdict::Missing => out.push(Finding::new(
                    rule::INITIALIZE_RESULT_INCOMPLETE,
                    Severity::Error,
                    vec![resp],
                    "The initialize result has no string protocolVersion, so no version was negotiated.".to_owned(),
                )),
                VersionVerdict::Accepted | VersionVerdict::CounterOffer => {}
            }
            let missing: Vec<&str> = judged
                .missing_fields
                .iter()
                .copied()
                .filter(|m| !(judged.verdict == VersionVerdict::Missing && *m == "protocolVersion"))
                .collect();
            if !missing.is_empty() {
                out.push(Finding::new(
                    rule::INITIALIZE_RESULT_INCOMPLETE,
                    Severity::Error,
                    vec![resp],
                    format!(
                        "The initialize result lacks {}, which every initialize result must carry.",
                        missing.join(", ")
                    ),
                ));
            }
            if judged.usable() && facts.initialized.is_none() {
                out.push(Finding::new(
                    rule::INITIALIZED_NOT_SENT,
                    Severity::Error,
                    vec![resp],
                    "The client never sent notifications/initialized after the initialize response. It must, and \
                     some servers refuse every request until it arrives."
                        .to_owned(),
                ));
            }
        }
        if let Some(initialized) = facts.initialized
            && initialized < init_resp
        {
            out.push(Finding::new(
                rule::INITIALIZED_BEFORE_RESPONSE,
                Severity::Warning,
                vec![initialized],
                "The client sent notifications/initialized before the initialize response arrived; it belongs \
                 after the response, once the version is settled."
                    .to_owned(),
            ));
        }
        if !self.early_server.seqs.is_empty() {
            out.push(Finding::new(
                rule::SERVER_REQUEST_BEFORE_INITIALIZED,
                Severity::Warning,
                self.early_server.seqs.clone(),
                format!(
                    "The server sent {} before the client's notifications/initialized; until then a server should \
                     send only ping requests (and log notifications).",
                    self.early_server.text()
                ),
            ));
        }
    }
}
