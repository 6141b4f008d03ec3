//! `mcpscope verify`, the engine: a recorded session's requests sent again
//! to a live server through the client, each answer compared with the
//! recorded one, and the server's surface compared by name. The CLI prints
//! and gates on the report; the app shows it beside the side-by-side diff.

use crate::analysis::answer_diff::{self, Ignore};
use crate::analysis::session_diff::{self, Exchange};
use crate::analysis::surface::{self, Change, Surface};
use crate::client::{Client, ClientError};
use crate::protocol::era::EraChoice;
use crate::protocol::handshake::HandshakeOptions;
use crate::protocol::methods;
use crate::protocol::mrtr::{ElicitAnswer, InputPolicy};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A recorded session, read for verifying a server against it.
pub struct Recording {
    pub exchanges: Vec<Exchange>,
    pub surface: Surface,
    /// The era it spoke (a `server/discover` in it means 2026-07-28).
    pub era: EraChoice,
    /// Lines of the capture that could not be read.
    pub warnings: Vec<String>,
    /// How the client answered the server's own requests (roots,
    /// elicitation, sampling) in the recording: answered the same again.
    pub policy: InputPolicy,
}

impl Recording {
    /// Reads a capture; an error names what is wrong with it (unreadable,
    /// or holding nothing to compare against).
    pub fn read(path: &Path) -> Result<Recording, String> {
        use crate::record::capture::{EventReader, Item, READ_BUFFER};
        let file = crate::record::private_files::open_regular(path)
            .map_err(|e| format!("cannot open capture {}: {e:#}", path.display()))?;
        let mut reader = EventReader::new(std::io::BufReader::with_capacity(READ_BUFFER, file))
            .map_err(|e| format!("cannot read capture {}: {e:#}", path.display()))?;
        // One pass: the client's exchanges, and its answers to the server's requests.
        let mut collector = session_diff::Collector::default();
        let mut answers = Answers::default();
        let mut warnings = Vec::new();
        while let Some(item) = reader
            .next_item()
            .map_err(|e| format!("cannot read capture {}: {e:#}", path.display()))?
        {
            match item {
                Item::Event(e) => {
                    answers.push(&e);
                    collector.push(&e);
                }
                Item::Warning(w) => warnings.push(w),
                Item::Boundary(..) => {}
            }
        }
        let exchanges: Vec<Exchange> = collector.finish().iter().map(|x| x.to_exchange()).collect();
        let surface = Surface::from_exchanges(&exchanges);
        if surface.capabilities.is_none() && surface.lists.is_empty() {
            return Err(format!(
                "{} holds no handshake and no list answered: nothing to compare the server against",
                path.display()
            ));
        }
        let modern = exchanges
            .iter()
            .any(|x| x.method == methods::SERVER_DISCOVER && matches!(x.outcome, session_diff::Outcome::Result(_)));
        Ok(Recording {
            exchanges,
            surface,
            era: if modern { EraChoice::Modern } else { EraChoice::Legacy },
            warnings,
            policy: answers.policy,
        })
    }
}

/// The client's recorded answers to the server's `roots/list`,
/// `elicitation/create` and `sampling/createMessage` (the last of each).
#[derive(Default)]
struct Answers {
    asked: std::collections::HashMap<crate::wire::message::RequestId, String>,
    policy: InputPolicy,
}

impl Answers {
    fn push(&mut self, e: &crate::transport::event::Event) {
        use crate::wire::classify::Kind;
        use crate::wire::frame::Direction;
        let crate::transport::event::Event::Frame(f) = e else {
            return;
        };
        let Some(id) = &f.class.id else { return };
        match (f.direction, f.class.kind) {
            (Direction::In, Kind::Request) => {
                if let Some(m) = f.class.method.as_deref()
                    && matches!(
                        m,
                        methods::ROOTS_LIST | methods::ELICITATION_CREATE | methods::SAMPLING_CREATE_MESSAGE
                    )
                {
                    self.asked.insert(id.clone(), m.to_owned());
                }
            }
            (Direction::Out, Kind::Result) => {
                let Some(method) = self.asked.remove(id) else { return };
                let Some(msg) = f.json() else { return };
                let result = msg.get("result").cloned().unwrap_or(Value::Null);
                let policy = &mut self.policy;
                match method.as_str() {
                    methods::ROOTS_LIST => policy.roots = result.get("roots").and_then(Value::as_array).cloned(),
                    methods::ELICITATION_CREATE => {
                        policy.elicit = Some(match result.get("action").and_then(Value::as_str) {
                            Some("accept") => ElicitAnswer::Accept(result.get("content").cloned().unwrap_or(json!({}))),
                            Some("cancel") => ElicitAnswer::Cancel,
                            _ => ElicitAnswer::Decline,
                        });
                    }
                    _ => {
                        policy.sample_reply = result
                            .pointer("/content/text")
                            .and_then(Value::as_str)
                            .map(str::to_owned);
                    }
                }
            }
            _ => {}
        }
    }
}

/// What verifying found.
pub struct Report {
    pub old: Surface,
    pub new: Surface,
    /// The surface's changes, breaking first.
    pub changes: Vec<Change>,
    /// Each recorded request sent again (none with `surface_only`).
    pub replayed: Vec<Replayed>,
    /// What could not be compared, and why (a list the server refused).
    pub notes: Vec<String>,
}

/// Verifies the server behind `client` against `recording`: its surface,
/// then (unless `surface_only`) every replayable request. `Err`: the server
/// could not be reached (or went away), in words.
pub fn verify(
    client: &mut Client,
    recording: &Recording,
    ignore: &Ignore,
    timeout: Duration,
    surface_only: bool,
) -> Result<Report, String> {
    let mut notes = Vec::new();
    let new = live_surface(client, &recording.surface, recording.era, timeout, &mut notes)?;
    let replayed = if surface_only {
        Vec::new()
    } else {
        replay(client, &recording.exchanges, ignore, timeout)?
    };
    let changes = surface::compare(&recording.surface, &new);
    Ok(Report {
        old: recording.surface.clone(),
        new,
        changes,
        replayed,
        notes,
    })
}

/// One recorded exchange sent again.
pub struct Replayed {
    pub key: String,
    pub method: String,
    /// Empty: the same answer.
    pub differences: Vec<String>,
}

impl Replayed {
    pub fn to_json(&self) -> Value {
        json!({"exchange": self.key, "method": self.method, "same": self.differences.is_empty(),
               "differences": self.differences})
    }
}

/// Whether a recorded request is sent again: not the handshake (the client
/// makes its own), not a list (lists are compared whole, by name: a
/// recorded cursor means nothing to a new session), and only if it was
/// answered.
fn replayable(x: &Exchange) -> bool {
    !matches!(x.method.as_str(), methods::INITIALIZE | methods::SERVER_DISCOVER)
        && !surface::LISTS.iter().any(|(_, m, _, _)| *m == x.method)
        && !matches!(x.outcome, session_diff::Outcome::NoResponse)
}

/// Sends the recorded requests again, in their order, and compares each answer.
fn replay(
    client: &mut Client,
    recorded: &[Exchange],
    ignore: &Ignore,
    timeout: Duration,
) -> Result<Vec<Replayed>, String> {
    let mut out = Vec::new();
    for x in recorded.iter().filter(|x| replayable(x)) {
        // The recorded envelope named the recording's session; the client adds its own.
        let params = x.params.clone().map(|mut p| {
            if let Some(o) = p.as_object_mut() {
                o.remove("_meta");
            }
            p
        });
        let live = match client.request(&x.method, params, timeout) {
            Ok(r) => match r.outcome {
                Ok(v) => session_diff::Outcome::Result(v),
                Err(e) => session_diff::Outcome::Error(e),
            },
            Err(e @ (ClientError::ServerExited { .. } | ClientError::Closed { .. } | ClientError::SpawnFailed(_))) => {
                return Err(format!("{}: {e}", x.key));
            }
            Err(e) => {
                out.push(Replayed {
                    key: x.key.clone(),
                    method: x.method.clone(),
                    differences: vec![format!("no answer now: {e}")],
                });
                continue;
            }
        };
        out.push(Replayed {
            key: x.key.clone(),
            method: x.method.clone(),
            differences: answer_diff::compare(&x.outcome, &live, ignore),
        });
    }
    Ok(out)
}

/// Where the live session is recorded for --update (beside the baseline).
pub fn fresh_path(capture: &std::path::Path) -> PathBuf {
    let mut name = capture.as_os_str().to_owned();
    name.push(format!(".verify-{}", std::process::id()));
    PathBuf::from(name)
}

/// Keeps the old baseline under the first free CAPTURE.N and puts the
/// fresh recording in its place; the kept file's path.
pub fn update_baseline(capture: &std::path::Path, fresh: &std::path::Path) -> Result<PathBuf, String> {
    let kept = (1..10_000)
        .map(|n| {
            let mut name = capture.as_os_str().to_owned();
            name.push(format!(".{n}"));
            PathBuf::from(name)
        })
        .find(|p| std::fs::symlink_metadata(p).is_err())
        .ok_or("no free name to keep the old baseline under")?;
    // A hard link first: at no moment is there no baseline at CAPTURE.
    std::fs::hard_link(capture, &kept).map_err(|e| format!("cannot keep {}: {e}", capture.display()))?;
    std::fs::rename(fresh, capture).map_err(|e| format!("cannot replace {}: {e}", capture.display()))?;
    Ok(kept)
}

/// The live server's surface: the lists the recording fetched, fetched again.
fn live_surface(
    client: &mut Client,
    old: &Surface,
    choice: EraChoice,
    timeout: Duration,
    notes: &mut Vec<String>,
) -> Result<Surface, String> {
    client
        .wait_started(Duration::from_secs(10))
        .map_err(|e| e.to_string())?;
    let hs = HandshakeOptions {
        capabilities: client.policy().capabilities(),
        ..HandshakeOptions::default()
    };
    let decision = client
        .establish(choice, &hs, timeout)
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let mut new = Surface {
        capabilities: decision.server_capabilities().cloned(),
        ..Surface::default()
    };
    for (list, method, key, _) in surface::LISTS {
        if !old.lists.contains_key(list) {
            continue;
        }
        match client.list_all(method, key, timeout).map_err(|e| e.to_string())? {
            Ok(items) => new.set(list, items),
            // Left out: compare() says the server did not list them.
            Err(e) => notes.push(format!("{method} failed: {e}")),
        }
    }
    Ok(new)
}
