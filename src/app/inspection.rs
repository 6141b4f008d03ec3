//! One session shown in the app: a live server (driven through the engine's
//! session thread) or a capture opened offline. The UI calls [`Inspection::drain`]
//! once per frame; nothing here blocks.

use crate::capture;
use crate::classify::Kind;
use crate::event::Event;
use crate::frame::{Direction, Frame};
use crate::handshake::HandshakeOptions;
use crate::message::{ErrorObject, RequestId, error_code};
use crate::model::{SessionModel, Source};
use crate::session::{Session, SessionOptions, Waker};
use crate::transport::Target;
use anyhow::{Context as _, Result};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long one frame may spend applying events before it draws.
const DRAIN_BUDGET: Duration = Duration::from_millis(8);

/// What the app sends by itself in reaction to the server.
enum Reply {
    Initialized,
    ListTools,
    /// Re-fetch a list the server said changed (`tools/list`, …).
    Refetch(&'static str),
    Answer(RequestId, Result<Value, ErrorObject>),
}

/// A request from the server that waits for the user (elicitation, sampling).
#[derive(Clone, Debug)]
pub struct ServerRequest {
    pub id: RequestId,
    pub method: String,
    pub params: Value,
    /// Its row on the timeline.
    pub row: usize,
}

/// Something the user composed, to send as it is.
#[derive(Clone, Debug, PartialEq)]
pub enum Outgoing {
    /// A request; `id` None takes the next free id.
    Request {
        method: String,
        params: Option<Value>,
        id: Option<RequestId>,
    },
    Notification {
        method: String,
        params: Option<Value>,
    },
    /// Bytes sent as they are (a newline is appended), even if malformed.
    Raw(Vec<u8>),
}

/// The capabilities the app offers: it answers roots itself and lets the
/// user answer sampling and elicitation.
pub fn client_capabilities() -> Value {
    serde_json::json!({
        "roots": {"listChanged": true},
        "sampling": {},
        "elicitation": {},
    })
}

/// The default root offered to servers: the directory they run in.
pub fn default_roots(target: &Target) -> Vec<Value> {
    let cwd = match target {
        Target::Stdio(spec) => spec.cwd.clone(),
        Target::Http(_) => None,
    };
    let dir = cwd
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("/"));
    let name = dir
        .file_name()
        .map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into_owned());
    vec![serde_json::json!({"uri": format!("file://{}", dir.display()), "name": name})]
}

pub struct Inspection {
    pub model: SessionModel,
    session: Option<Session>,
    /// The capture this inspection writes (live) or was loaded from (offline).
    pub capture_path: Option<PathBuf>,
    pub target: Option<Target>,
    pub protocol_version: String,
    /// When the live session started, for the uptime shown in the status bar.
    pub started: Option<Instant>,
    /// Problems reading a capture, shown once.
    pub load_warnings: Vec<String>,
    initialized_sent: bool,
    tools_listed: bool,
    /// Roots answered to `roots/list`.
    pub roots: Vec<Value>,
    /// Server requests waiting for the user, oldest first.
    pub server_requests: Vec<ServerRequest>,
    /// Lists being re-fetched after list_changed, with the request's id:
    /// a burst of notifications causes one re-fetch, not one each.
    refetching: Vec<(&'static str, RequestId)>,
}

fn temp_capture_path() -> PathBuf {
    let dir = std::env::temp_dir().join("mcpscope");
    let _ = std::fs::create_dir_all(&dir);
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    dir.join(format!("capture-{stamp}-{}.jsonl", std::process::id()))
}

impl Inspection {
    /// Starts a server, records it to a fresh capture file, and begins the handshake.
    pub fn launch(target: Target, protocol_version: &str, waker: Option<Waker>) -> Inspection {
        let capture_path = temp_capture_path();
        let options = SessionOptions {
            capture: Some(capture_path.clone()),
            waker,
            ..SessionOptions::default()
        };
        let session = Session::connect(target.clone(), options);
        let hs = HandshakeOptions {
            protocol_version: protocol_version.to_owned(),
            capabilities: client_capabilities(),
            ..HandshakeOptions::default()
        };
        session.request("initialize", Some(hs.params()));
        let mut model = SessionModel::new(Source::Live {
            command_line: target.display(),
        });
        model.remote = matches!(target, Target::Http(_));
        Inspection {
            model,
            session: Some(session),
            capture_path: Some(capture_path),
            roots: default_roots(&target),
            target: Some(target),
            protocol_version: protocol_version.to_owned(),
            started: Some(Instant::now()),
            load_warnings: Vec::new(),
            initialized_sent: false,
            tools_listed: false,
            refetching: Vec::new(),
            server_requests: Vec::new(),
        }
    }

    /// Opens a capture offline.
    pub fn open_capture(path: &Path) -> Result<Inspection> {
        let loaded = capture::load(path)?;
        let mut i = Inspection::offline(SessionModel::from_capture(path.to_owned(), &loaded));
        i.capture_path = Some(path.to_owned());
        i.load_warnings = loaded.warnings;
        Ok(i)
    }

    /// Shows a model that is already complete (no process behind it).
    pub fn offline(model: SessionModel) -> Inspection {
        Inspection {
            model,
            session: None,
            capture_path: None,
            target: None,
            protocol_version: String::new(),
            started: None,
            load_warnings: Vec::new(),
            initialized_sent: true,
            tools_listed: true,
            roots: Vec::new(),
            server_requests: Vec::new(),
            refetching: Vec::new(),
        }
    }

    pub fn session(&self) -> Option<&Session> {
        self.session.as_ref()
    }

    /// Applies waiting events for at most one frame's budget.
    /// Returns true when events remain (the caller should repaint again).
    pub fn drain(&mut self) -> bool {
        let Some(session) = self.session.take() else {
            return false;
        };
        let deadline = Instant::now() + DRAIN_BUDGET;
        let mut replies = Vec::new();
        let mut applied = 0usize;
        while let Ok(ev) = session.events().try_recv() {
            let row = self.model.store.len();
            if let Event::Frame(f) = &ev {
                replies.extend(self.autopilot(f, row));
            }
            self.model.apply(&ev);
            applied += 1;
            // Check the clock every few events: a flood has many tiny ones.
            if applied.is_multiple_of(64) && Instant::now() >= deadline {
                break;
            }
        }
        for reply in replies {
            match reply {
                Reply::Initialized => session.notify("notifications/initialized", None),
                Reply::ListTools => {
                    session.request("tools/list", None);
                }
                Reply::Refetch(method) => {
                    let model = &self.model;
                    self.refetching.retain(|(_, id)| model.response_to(id).is_none());
                    if self.refetching.iter().any(|(m, _)| *m == method) {
                        continue;
                    }
                    let id = session.request(method, None);
                    self.model.watch(id.clone());
                    self.refetching.push((method, id));
                    self.model.apply(&Event::Note {
                        at: self.model.last_at,
                        text: format!("mcpscope re-fetches {method}: the server said the list changed"),
                    });
                }
                Reply::Answer(id, outcome) => session.respond(id, outcome),
            }
        }
        let more = !session.events().is_empty();
        self.session = Some(session);
        more
    }

    /// What the app does by itself in reaction to a frame: finish the
    /// handshake, list the tools, answer roots, queue sampling and
    /// elicitation for the user, refuse server requests it cannot answer.
    fn autopilot(&mut self, f: &Frame, row: usize) -> Vec<Reply> {
        let mut out = Vec::new();
        if f.direction != Direction::In {
            return out;
        }
        let is_init_response = f.link.as_ref().is_some_and(|l| l.method == "initialize");
        if is_init_response && !self.initialized_sent && f.kind() == Kind::Result {
            self.initialized_sent = true;
            let result = f.json().map(|v| v["result"].clone()).unwrap_or(Value::Null);
            let usable = crate::handshake::Handshake::judge(&self.protocol_version, &result, Duration::ZERO).usable();
            if usable {
                out.push(Reply::Initialized);
                if !self.tools_listed && result["capabilities"].get("tools").is_some() {
                    self.tools_listed = true;
                    out.push(Reply::ListTools);
                }
            }
        }
        if f.kind() == Kind::Notification {
            let list = match f.class.method.as_deref() {
                Some("notifications/tools/list_changed") => Some("tools/list"),
                Some("notifications/prompts/list_changed") => Some("prompts/list"),
                Some("notifications/resources/list_changed") => Some("resources/list"),
                _ => None,
            };
            // Only lists fetched before: the others are fetched when wanted.
            if let Some(list) = list
                && self.initialized_sent
                && (self.model.latest_results.contains_key(list) || (list == "tools/list" && self.tools_listed))
            {
                out.push(Reply::Refetch(list));
            }
        }
        if f.kind() == Kind::Request
            && let (Some(id), Some(method)) = (f.class.id.clone(), f.class.method.as_deref())
            && method != "ping"
        {
            match method {
                "roots/list" => out.push(Reply::Answer(id, Ok(serde_json::json!({"roots": self.roots})))),
                "sampling/createMessage" | "elicitation/create" => self.server_requests.push(ServerRequest {
                    id,
                    method: method.to_owned(),
                    params: f.json().and_then(|v| v.get("params").cloned()).unwrap_or(Value::Null),
                    row,
                }),
                _ => out.push(Reply::Answer(
                    id,
                    Err(ErrorObject::new(
                        error_code::METHOD_NOT_FOUND,
                        format!("mcpscope does not answer {method}"),
                    )),
                )),
            }
        }
        out
    }

    /// Answers a server request the user dealt with.
    pub fn answer(&mut self, id: &RequestId, outcome: Result<Value, ErrorObject>) {
        self.server_requests.retain(|r| &r.id != id);
        if let Some(s) = &self.session {
            s.respond(id.clone(), outcome);
        }
    }

    /// Sends what the user composed; returns the request id to watch.
    pub fn send(&mut self, out: Outgoing) -> Option<RequestId> {
        let s = self.session.as_ref()?;
        match out {
            Outgoing::Request { method, params, id } => {
                let id = s.request_with(id, &method, params, s.default_timeout());
                self.model.watch(id.clone());
                Some(id)
            }
            Outgoing::Notification { method, params } => {
                s.notify(&method, params);
                None
            }
            Outgoing::Raw(line) => {
                // Watch the id if the line has one, so the answer can be shown.
                let id = serde_json::from_slice::<Value>(&line)
                    .ok()
                    .and_then(|v| v.get("id").and_then(RequestId::from_json));
                s.send_raw(line);
                if let Some(id) = &id {
                    self.model.watch(id.clone());
                }
                id
            }
        }
    }

    /// Asks the server to cancel one of our requests.
    pub fn cancel(&self, id: &RequestId) {
        if let Some(s) = &self.session {
            s.cancel(id.clone(), Some("cancelled in mcpscope".into()));
        }
    }

    /// Tells the server the roots changed (after the user edited them).
    pub fn roots_changed(&self) {
        if let Some(s) = &self.session {
            s.notify("notifications/roots/list_changed", None);
        }
    }

    pub fn stop(&mut self) {
        if let Some(s) = &self.session {
            s.shutdown();
        }
    }

    /// Copies the capture to `to` (it is already complete on disk up to the last event).
    pub fn save_capture(&self, to: &Path) -> Result<()> {
        let from = self.capture_path.as_ref().context("this session has no capture")?;
        if from != to {
            std::fs::copy(from, to).with_context(|| format!("cannot write {}", to.display()))?;
        }
        Ok(())
    }

    /// Sends a request from the app (e.g. a ping or a re-list).
    pub fn request(&self, method: &str, params: Option<Value>) {
        if let Some(s) = &self.session {
            s.request(method, params);
        }
    }

    pub fn uptime(&self) -> Option<Duration> {
        match (self.started, self.model.exit) {
            (_, Some((at, _))) => Some(at.saturating_sub(self.model.started_at.unwrap_or_default())),
            (Some(t), None) if self.model.running() => Some(t.elapsed()),
            _ => None,
        }
    }
}
