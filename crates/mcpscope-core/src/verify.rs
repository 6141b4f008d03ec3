//! `mcpscope verify`, the engine: a recorded session's requests sent again
//! to a live server through the client, each answer compared with the
//! recorded one, and the server's surface compared by name. The CLI prints
//! and gates on the report; the app shows it beside the side-by-side diff.

use crate::analysis::answer_diff::{self, Ignore};
use crate::analysis::session_diff::{self, Exchange};
use crate::analysis::surface::{self, Change, Surface};
use crate::client::{Client, ClientError};
use crate::protocol::era::{EraChoice, EraDecision};
use crate::protocol::handshake::HandshakeOptions;
use crate::protocol::methods;
use crate::protocol::mrtr::{ElicitAnswer, InputPolicy};
use crate::record::capture::CaptureError;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One recorded session, replayed in a live session of its own.
pub struct RecordedSession {
    /// 1-based, in the capture.
    pub number: usize,
    pub exchanges: Vec<Exchange>,
    /// The era it spoke (a `server/discover` in it means 2026-07-28).
    pub era: EraChoice,
    /// How the client answered the server's own requests (roots,
    /// elicitation, sampling) in it: answered the same again.
    pub policy: InputPolicy,
    /// The capabilities the recorded client offered (its `initialize`, or
    /// the `_meta` of its first 2026-07-28 request): offered again, since a
    /// server may list other tools to a client that offers less.
    pub client_capabilities: Option<Value>,
}

/// A capture, read for verifying a server against it.
pub struct Recording {
    /// The sessions to replay, in order (a capture appended to by several
    /// runs holds several; each starts with its own handshake).
    pub sessions: Vec<RecordedSession>,
    /// The surface to compare: the last session's with a handshake or a list.
    pub surface: Surface,
    /// The session it is from (its live counterpart is fetched in that one).
    pub surface_session: usize,
    /// Sessions in the file.
    pub of: usize,
    /// Lines of the capture that could not be read.
    pub warnings: Vec<String>,
}

/// Why a capture cannot be verified against.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    /// `--session N` beyond the sessions in the file.
    #[error("there is no session {asked}: the capture has {sessions} session(s)")]
    NoSuchSession { asked: usize, sessions: usize },
    #[error(transparent)]
    Capture(#[from] CaptureError),
    /// Holding nothing to compare against.
    #[error("{}{which} holds no handshake and no list answered: nothing to compare the server against", .path.display())]
    NothingToCompare { path: PathBuf, which: String },
}

/// Why a verification stopped: the server could not be reached or went away.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(transparent)]
    Handshake(#[from] crate::protocol::era::EraFailure),
    /// The session ended while a recorded exchange was sent again.
    #[error("{key}")]
    Replay {
        key: String,
        #[source]
        source: ClientError,
    },
}

/// Why `--update` could not put the fresh recording in place.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    #[error("no free name to keep the old baseline under")]
    NoFreeName,
    #[error("cannot keep {}", .path.display())]
    Keep {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot replace {}", .path.display())]
    Replace {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// One session of a capture, as read so far.
#[derive(Default)]
struct SessionRead {
    collector: session_diff::Collector,
    answers: Answers,
    client_capabilities: Option<Value>,
}

impl SessionRead {
    /// Keeps the capabilities the client offered, from the first request
    /// that says them.
    fn note_offer(&mut self, e: &crate::transport::event::Event) {
        use crate::wire::classify::Kind;
        use crate::wire::frame::Direction;
        if self.client_capabilities.is_some() {
            return;
        }
        let crate::transport::event::Event::Frame(f) = e else {
            return;
        };
        if f.direction != Direction::Out || f.class.kind != Kind::Request {
            return;
        }
        let Some(msg) = f.json() else { return };
        let params = msg.get("params");
        self.client_capabilities = if f.class.method.as_deref() == Some(methods::INITIALIZE) {
            params.and_then(|p| p.get("capabilities")).cloned()
        } else {
            params
                .and_then(|p| p.get("_meta"))
                .and_then(|m| m.get(crate::protocol::era::META_CLIENT_CAPABILITIES))
                .cloned()
        };
    }
}

impl Recording {
    /// Reads session `session` (1-based) of a capture, or by default every
    /// session the server answered anything in (a client restarted by its
    /// host, or several `call --capture` runs, append sessions). An error
    /// names what is wrong with it (unreadable, or holding nothing to
    /// compare against).
    pub fn read(path: &Path, session: Option<usize>) -> Result<Recording, RecordingError> {
        use crate::record::capture::{EventReader, Item, READ_BUFFER};
        let file = crate::record::private_files::open_regular(path).map_err(CaptureError::open(path))?;
        let mut reader =
            EventReader::new(std::io::BufReader::with_capacity(READ_BUFFER, file)).map_err(CaptureError::read(path))?;
        // One pass: the client's exchanges, and its answers to the server's requests.
        let mut warnings = Vec::new();
        let mut current = (1usize, SessionRead::default());
        let mut kept: Vec<RecordedSession> = Vec::new();
        // The last session, kept when none had an answer (to say what is wrong with it).
        let mut unanswered: Option<RecordedSession> = None;
        let mut take = |(number, read): (usize, SessionRead)| {
            if session.is_some_and(|s| s != number) {
                return;
            }
            let exchanges: Vec<Exchange> = read.collector.finish().iter().map(|x| x.to_exchange()).collect();
            let answered = exchanges
                .iter()
                .any(|x| !matches!(x.outcome, session_diff::Outcome::NoResponse));
            let modern = exchanges
                .iter()
                .any(|x| x.method == methods::SERVER_DISCOVER && matches!(x.outcome, session_diff::Outcome::Result(_)));
            let s = RecordedSession {
                number,
                exchanges,
                era: if modern { EraChoice::Modern } else { EraChoice::Legacy },
                policy: read.answers.policy,
                client_capabilities: read.client_capabilities,
            };
            if answered || session.is_some() {
                kept.push(s);
            } else {
                unanswered = Some(s);
            }
        };
        while let Some(item) = reader.next_item().map_err(CaptureError::read(path))? {
            match item {
                Item::Event(e) => {
                    current.1.note_offer(&e);
                    current.1.answers.push(&e);
                    current.1.collector.push(&e);
                }
                Item::Warning(w) => warnings.push(w),
                Item::Boundary(..) => {
                    let next = (current.0 + 1, SessionRead::default());
                    take(std::mem::replace(&mut current, next));
                }
            }
        }
        let of = current.0;
        take(current);
        if kept.is_empty() {
            match (session, unanswered) {
                (Some(asked), _) => return Err(RecordingError::NoSuchSession { asked, sessions: of }),
                (None, Some(s)) => kept.push(s),
                (None, None) => {}
            }
        }
        let surface = kept
            .iter()
            .rev()
            .map(|s| (s.number, Surface::from_exchanges(&s.exchanges)))
            .find(|(_, s)| s.capabilities.is_some() || !s.lists.is_empty());
        let Some((surface_session, surface)) = surface else {
            let which = match session {
                Some(n) if of > 1 => format!(" (session {n} of {of})"),
                _ => String::new(),
            };
            return Err(RecordingError::NothingToCompare {
                path: path.to_owned(),
                which,
            });
        };
        Ok(Recording {
            sessions: kept,
            surface,
            surface_session,
            of,
            warnings,
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

/// Verifies a server against `recording`: each recorded session replayed
/// in a live session of its own, from `connect` (given how the recording
/// answered the server's requests), the one the recorded surface is from
/// also fetching the live surface, in its era (with `surface_only`, the only
/// one, and nothing replayed). An authorizer
/// the first client signed in with goes on to the next. `Err`: the server
/// could not be reached (or went away), in words.
pub fn verify(
    connect: &mut dyn FnMut(&InputPolicy) -> Client,
    recording: &Recording,
    ignore: &Ignore,
    timeout: Duration,
    surface_only: bool,
) -> Result<Report, VerifyError> {
    let mut notes = Vec::new();
    let mut new = None;
    let mut replayed = Vec::new();
    let mut authorizer = None;
    let several = recording.sessions.len() > 1;
    for s in &recording.sessions {
        let compares = s.number == recording.surface_session;
        if surface_only && !compares {
            continue;
        }
        let mut client = connect(&s.policy);
        if let Some(a) = authorizer.take() {
            client = client.with_authorizer(a);
        }
        let offer = offered_capabilities(s, &mut notes);
        let mut run = || -> Result<(), VerifyError> {
            if compares {
                new = Some(live_surface(
                    &mut client,
                    &recording.surface,
                    s.era,
                    &offer,
                    timeout,
                    &mut notes,
                )?);
            } else {
                establish(&mut client, s.era, &offer, timeout)?;
            }
            if !surface_only {
                let mut r = replay(&mut client, &s.exchanges, ignore, timeout)?;
                if several {
                    for x in &mut r {
                        x.key = format!("session {}: {}", s.number, x.key);
                    }
                }
                replayed.extend(r);
            }
            Ok(())
        };
        let ran = run();
        authorizer = client.take_authorizer();
        client.close();
        ran?;
    }
    let new = new.unwrap_or_default();
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
) -> Result<Vec<Replayed>, VerifyError> {
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
                return Err(VerifyError::Replay {
                    key: x.key.clone(),
                    source: e,
                });
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
pub fn update_baseline(capture: &std::path::Path, fresh: &std::path::Path) -> Result<PathBuf, BaselineError> {
    let kept = (1..10_000)
        .map(|n| {
            let mut name = capture.as_os_str().to_owned();
            name.push(format!(".{n}"));
            PathBuf::from(name)
        })
        .find(|p| std::fs::symlink_metadata(p).is_err())
        .ok_or(BaselineError::NoFreeName)?;
    // A hard link first: at no moment is there no baseline at CAPTURE.
    std::fs::hard_link(capture, &kept).map_err(|source| BaselineError::Keep {
        path: capture.to_owned(),
        source,
    })?;
    std::fs::rename(fresh, capture).map_err(|source| BaselineError::Replace {
        path: capture.to_owned(),
        source,
    })?;
    Ok(kept)
}

/// The client capabilities a verify session offers: the recording's, so
/// the server sees the same client (it may list other tools to a client
/// that offers less); what the recording never answered is still refused
/// if asked, and said. Without a recorded offer, what the recorded answers
/// show, and a note that the comparison may not be like for like.
fn offered_capabilities(s: &RecordedSession, notes: &mut Vec<String>) -> Value {
    let answerable = s.policy.capabilities();
    let Some(recorded) = s.client_capabilities.clone().filter(Value::is_object) else {
        notes.push(format!(
            "session {}: the recording does not say which capabilities its client offered (no initialize \
             recorded): the server was offered {answerable}, so it may not be compared like for like",
            s.number
        ));
        return answerable;
    };
    let unanswerable: Vec<&str> = ["roots", "sampling", "elicitation"]
        .into_iter()
        .filter(|c| recorded.get(c).is_some() && answerable.get(c).is_none())
        .collect();
    if !unanswerable.is_empty() {
        notes.push(format!(
            "session {}: offered {} as the recording did; the recording holds no answer to give such requests \
             from the server, so they are refused",
            s.number,
            unanswerable.join(", ")
        ));
    }
    recorded
}

/// The handshake (or discovery) of a live session, in the recording's era,
/// offering `capabilities`.
fn establish(
    client: &mut Client,
    choice: EraChoice,
    capabilities: &Value,
    timeout: Duration,
) -> Result<EraDecision, VerifyError> {
    client.wait_started(Duration::from_secs(10))?;
    let hs = HandshakeOptions {
        capabilities: capabilities.clone(),
        ..HandshakeOptions::default()
    };
    Ok(client.establish(choice, &hs, timeout)??)
}

/// The live server's surface: the lists the recording fetched, fetched again.
fn live_surface(
    client: &mut Client,
    old: &Surface,
    choice: EraChoice,
    capabilities: &Value,
    timeout: Duration,
    notes: &mut Vec<String>,
) -> Result<Surface, VerifyError> {
    let decision = establish(client, choice, capabilities, timeout)?;
    let mut new = Surface {
        capabilities: decision.server_capabilities().cloned(),
        ..Surface::default()
    };
    for (list, method, key, _) in surface::LISTS {
        if !old.lists.contains_key(list) {
            continue;
        }
        match client.list_all(method, key, timeout)? {
            Ok(items) => new.set(list, items),
            // Left out: compare() says the server did not list them.
            Err(e) => notes.push(format!("{method} failed: {e}")),
        }
    }
    Ok(new)
}
