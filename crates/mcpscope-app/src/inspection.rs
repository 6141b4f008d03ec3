//! One session shown in the app: a live server (driven through the engine's
//! session thread) or a capture opened offline. The UI calls [`Inspection::drain`]
//! once per frame; nothing here blocks.

use anyhow::{Context as _, Result};
use mcpscope_core::protocol::era::{self, Discovery, Envelope, Era, EraChoice, ProbeVerdict};
use mcpscope_core::protocol::handshake::HandshakeOptions;
use mcpscope_core::protocol::mrtr::{self, InputRequired};
use mcpscope_core::record::capture;
use mcpscope_core::record::model::{SessionModel, Source};
use mcpscope_core::transport::event::Event;
use mcpscope_core::transport::session::{Session, SessionOptions, Waker};
use mcpscope_core::transport::target::Target;
use mcpscope_core::wire::classify::Kind;
use mcpscope_core::wire::frame::{Direction, Frame};
use mcpscope_core::wire::message::{ErrorObject, RequestId, error_code};
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
    /// Probe (again) with `server/discover` under the envelope's version.
    Discover,
    /// The probe said legacy: do the `initialize` handshake.
    Initialize,
    /// A note on the timeline.
    Note(String),
    /// Every input of an `input_required` chain is answered: send the retry.
    Retry(usize),
    /// A request refused with -32022 mid-session: send it again (new id)
    /// under the envelope's new version.
    Resend {
        id: RequestId,
        method: String,
        params: Option<Value>,
    },
}

/// Which protocol era the session speaks, as settled so far.
#[derive(Clone, Debug, PartialEq)]
pub enum EraState {
    Legacy,
    /// `server/discover` sent with this id and version; waiting for its answer.
    Probing {
        id: RequestId,
        offered: String,
    },
    Modern,
}

/// The era the user chose, where it stands, and why.
#[derive(Clone, Debug)]
pub struct EraStatus {
    pub choice: EraChoice,
    pub state: EraState,
    /// One sentence: why this era ("-32601 to server/discover: legacy server").
    pub reason: String,
    pub discovery: Option<Discovery>,
}

impl EraStatus {
    pub fn era(&self) -> Option<Era> {
        match self.state {
            EraState::Legacy => Some(Era::Legacy),
            EraState::Modern => Some(Era::Modern),
            EraState::Probing { .. } => None,
        }
    }
}

/// A multi round-trip request (2026-07-28) in progress: what was asked, and
/// the answers collected for the current round.
#[derive(Clone, Debug)]
pub struct InputChain {
    /// Conversation number shown on the timeline (from 1).
    pub no: usize,
    pub method: String,
    /// The original params (without inputResponses/requestState).
    pub params: Value,
    pub current_id: RequestId,
    pub round: usize,
    pub waiting: Vec<String>,
    pub responses: serde_json::Map<String, Value>,
    pub state: Option<String>,
}

/// A request from the server that waits for the user (elicitation, sampling).
#[derive(Clone, Debug)]
pub struct ServerRequest {
    pub id: RequestId,
    pub method: String,
    pub params: Value,
    /// Its row on the timeline.
    pub row: usize,
    /// Set when it is one input of an `input_required` result (2026-07-28):
    /// the chain and the server's key. The id is then mcpscope's own.
    pub input: Option<(usize, String)>,
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
    pub era: EraStatus,
    envelope: Envelope,
    /// The version `initialize` offers when the session is (or falls back to) legacy.
    legacy_version: String,
    pub chains: Vec<InputChain>,
    /// Requests already re-sent after -32022 (and their re-sends): never twice.
    resent: Vec<RequestId>,
    /// Lists being re-fetched after list_changed, with the request's id:
    /// a burst of notifications causes one re-fetch, not one each.
    refetching: Vec<(&'static str, RequestId)>,
}

impl Inspection {
    /// Starts a server, records it to a fresh capture file, and begins the handshake.
    pub fn launch(target: Target, protocol_version: &str, waker: Option<Waker>) -> Inspection {
        Self::launch_with_era(
            target,
            protocol_version,
            EraChoice::implied_by_version(protocol_version),
            waker,
        )
    }

    /// Starts a server in the chosen era: `initialize` (legacy), or a
    /// `server/discover` probe (modern; auto falls back to `initialize`).
    pub fn launch_with_era(
        target: Target,
        protocol_version: &str,
        choice: EraChoice,
        waker: Option<Waker>,
    ) -> Inspection {
        // A private file (0600, in a 0700 directory of this user): captures
        // hold whole conversations.
        let capture = mcpscope_core::record::private_files::new_capture_file();
        let options = SessionOptions {
            capture: capture.as_ref().ok().cloned(),
            waker,
            ..SessionOptions::default()
        };
        let session = Session::connect(target.clone(), options);
        if let Err(e) = &capture {
            session.note(format!(
                "{}no private capture file: {e:#} (this session is not recorded)",
                mcpscope_core::record::capture::FAILED
            ));
        }
        let capture_path = capture.ok();
        let hs = HandshakeOptions {
            protocol_version: protocol_version.to_owned(),
            capabilities: client_capabilities(),
            ..HandshakeOptions::default()
        };
        let legacy_version = if Era::of_version(protocol_version) == Some(Era::Modern) {
            mcpscope_core::protocol::handshake::DEFAULT_VERSION.to_owned()
        } else {
            protocol_version.to_owned()
        };
        let mut envelope = Envelope::from_handshake(&hs);
        // A legacy version is no envelope version; an unknown one is sent as
        // typed (to see the server's -32022 and the retry).
        if Era::of_version(protocol_version) == Some(Era::Legacy) {
            envelope.protocol_version = era::DEFAULT_MODERN_VERSION.to_owned();
        }
        let era_state = match choice {
            EraChoice::Legacy => {
                session.request("initialize", Some(hs.params()));
                EraState::Legacy
            }
            EraChoice::Modern | EraChoice::Auto => {
                let id = session.request("server/discover", Some(envelope.discover_params()));
                EraState::Probing {
                    id,
                    offered: envelope.protocol_version.clone(),
                }
            }
        };
        let mut model = SessionModel::new(Source::Live {
            command_line: target.display(),
        });
        model.remote = matches!(target, Target::Http(_));
        Inspection {
            model,
            session: Some(session),
            capture_path,
            roots: default_roots(&target),
            target: Some(target),
            protocol_version: protocol_version.to_owned(),
            started: Some(Instant::now()),
            load_warnings: Vec::new(),
            initialized_sent: false,
            tools_listed: false,
            refetching: Vec::new(),
            server_requests: Vec::new(),
            era: EraStatus {
                choice,
                reason: match choice {
                    EraChoice::Legacy => "legacy chosen: initialize handshake".into(),
                    _ => "probing with server/discover".into(),
                },
                state: era_state,
                discovery: None,
            },
            envelope,
            legacy_version,
            chains: Vec::new(),
            resent: Vec::new(),
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
            era: EraStatus {
                choice: EraChoice::Legacy,
                state: EraState::Legacy,
                reason: "offline capture".into(),
                discovery: None,
            },
            envelope: Envelope::default(),
            legacy_version: mcpscope_core::protocol::handshake::DEFAULT_VERSION.to_owned(),
            chains: Vec::new(),
            resent: Vec::new(),
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
            if let Event::TimedOut { timed_out, .. } = &ev
                && matches!(&self.era.state, EraState::Probing { id, .. } if *id == timed_out.id)
            {
                replies.extend(self.settle_era(ProbeVerdict::judge("", None, "timed out")));
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
                    let params = self.wrap(None);
                    session.request("tools/list", params);
                }
                Reply::Refetch(method) => {
                    let model = &self.model;
                    self.refetching.retain(|(_, id)| model.response_to(id).is_none());
                    if self.refetching.iter().any(|(m, _)| *m == method) {
                        continue;
                    }
                    let params = self.wrap(None);
                    let id = session.request(method, params);
                    self.model.watch(id.clone());
                    self.refetching.push((method, id));
                    session.note(format!(
                        "mcpscope re-fetches {method}: the server said the list changed"
                    ));
                }
                Reply::Answer(id, outcome) => session.respond(id, outcome),
                Reply::Discover => {
                    let id = session.request("server/discover", Some(self.envelope.discover_params()));
                    self.era.state = EraState::Probing {
                        id,
                        offered: self.envelope.protocol_version.clone(),
                    };
                }
                Reply::Initialize => {
                    let hs = HandshakeOptions {
                        protocol_version: self.legacy_version.clone(),
                        capabilities: client_capabilities(),
                        ..HandshakeOptions::default()
                    };
                    self.protocol_version = self.legacy_version.clone();
                    session.request("initialize", Some(hs.params()));
                }
                // Through the session, so the note is in the capture too.
                Reply::Note(text) => session.note(text),
                Reply::Retry(chain) => self.retry(&session, chain),
                Reply::Resend { id, method, params } => {
                    let params = self.wrap(params);
                    let new = session.request(&method, params);
                    self.resent.push(new.clone());
                    self.model.watch(new.clone());
                    self.model.mrtr_next.insert(id, new);
                }
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
        if let EraState::Probing { id, offered } = &self.era.state
            && f.kind().is_response()
            && f.class.id.as_ref() == Some(id)
        {
            let offered = offered.clone();
            let outcome = mcpscope_core::client::response_outcome(f);
            let verdict = ProbeVerdict::judge(&offered, Some(&outcome), "");
            out.extend(self.settle_era(verdict));
            return out;
        }
        if self.era.state == EraState::Modern
            && f.kind() == Kind::Error
            && f.class.error_code == Some(error_code::UNSUPPORTED_PROTOCOL_VERSION)
            && let (Some(id), Some(link)) = (f.class.id.clone(), f.link.as_ref())
            && !self.resent.contains(&id)
        {
            let error = mcpscope_core::client::response_outcome(f).err();
            let supported = error.as_ref().map(era::supported_versions).unwrap_or_default();
            let requested = self.envelope.protocol_version.clone();
            if let Some(v) = era::mutual_version(&supported).filter(|v| *v != requested) {
                let params = self
                    .model
                    .store
                    .row_of_seq(link.request_seq)
                    .and_then(|r| self.model.store.get(r))
                    .and_then(|r| serde_json::from_slice::<Value>(r.raw()).ok())
                    .and_then(|v| v.get("params").cloned());
                out.push(Reply::Note(era::retry_note(&link.method, &requested, &supported, &v)));
                self.envelope.protocol_version = v;
                self.resent.push(id.clone());
                out.push(Reply::Resend {
                    id,
                    method: link.method.clone(),
                    params,
                });
            }
            return out;
        }
        if f.kind() == Kind::Result
            && let Some(link) = &f.link
            && mrtr::may_require_input(&link.method)
            && let Some(result) = f.json().and_then(|v| v.get("result").cloned())
            && let Some(ir) = InputRequired::from_result(&result)
        {
            out.extend(self.input_required(f, &link.method, link.request_seq, ir, row));
            return out;
        }
        let is_init_response = f.link.as_ref().is_some_and(|l| l.method == "initialize");
        if is_init_response && !self.initialized_sent && f.kind() == Kind::Result {
            self.initialized_sent = true;
            let result = f.json().map(|v| v["result"].clone()).unwrap_or(Value::Null);
            let usable =
                mcpscope_core::protocol::handshake::Handshake::judge(&self.protocol_version, &result, Duration::ZERO)
                    .usable();
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
        {
            match method {
                "ping" => out.push(Reply::Answer(id, Ok(serde_json::json!({})))),
                "roots/list" => out.push(Reply::Answer(id, Ok(serde_json::json!({"roots": self.roots})))),
                "sampling/createMessage" | "elicitation/create" => self.server_requests.push(ServerRequest {
                    id,
                    method: method.to_owned(),
                    params: f.json().and_then(|v| v.get("params").cloned()).unwrap_or(Value::Null),
                    row,
                    input: None,
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
        let input = self
            .server_requests
            .iter()
            .find(|r| &r.id == id)
            .and_then(|r| r.input.clone());
        self.server_requests.retain(|r| &r.id != id);
        match input {
            None => {
                if let Some(s) = &self.session {
                    s.respond(id.clone(), outcome);
                }
            }
            Some((chain, key)) => {
                // An input response is the result the legacy request would have had.
                let value = outcome.unwrap_or_else(|e| serde_json::json!({ "error": e.to_json() }));
                self.record_input(chain, key, value);
            }
        }
    }

    /// Stores one answer of a chain; sends the retry once all are in.
    fn record_input(&mut self, chain: usize, key: String, value: Value) {
        let Some(c) = self.chains.get_mut(chain) else { return };
        c.waiting.retain(|k| k != &key);
        c.responses.insert(key, value);
        if c.waiting.is_empty()
            && let Some(session) = self.session.take()
        {
            self.retry(&session, chain);
            self.session = Some(session);
        }
    }

    /// Sends the next round of a chain: the original request with
    /// `inputResponses`, the echoed `requestState`, and a new id.
    fn retry(&mut self, session: &Session, chain: usize) {
        let Some(c) = self.chains.get(chain) else { return };
        let params = self.wrap(Some(mrtr::retry_params(&c.params, &c.responses, c.state.as_deref())));
        let c = &mut self.chains[chain];
        let old = c.current_id.clone();
        let new = session.request(&c.method, params);
        c.current_id = new.clone();
        c.round += 1;
        c.responses.clear();
        let text = format!(
            "conversation {}: {} sent again as #{new} with inputResponses{} (round {})",
            c.no,
            c.method,
            if c.state.is_some() {
                " and the echoed requestState"
            } else {
                ""
            },
            c.round
        );
        self.model.conversations.insert(new.clone(), c.no);
        self.model.mrtr_next.insert(old, new.clone());
        self.model.watch(new);
        session.note(text);
    }

    /// An `input_required` result: start or continue a chain, answer roots
    /// ourselves, queue elicitation and sampling for the user.
    fn input_required(
        &mut self,
        f: &Frame,
        method: &str,
        request_seq: u64,
        ir: InputRequired,
        row: usize,
    ) -> Vec<Reply> {
        let Some(id) = f.class.id.clone() else { return vec![] };
        let chain = match self.chains.iter().position(|c| c.current_id == id) {
            Some(i) => i,
            None => {
                let params = self
                    .model
                    .store
                    .row_of_seq(request_seq)
                    .and_then(|r| self.model.store.get(r))
                    .and_then(|r| serde_json::from_slice::<Value>(r.raw()).ok())
                    .and_then(|v| v.get("params").cloned())
                    .unwrap_or_else(|| serde_json::json!({}));
                let no = self.chains.len() + 1;
                if let Some(req_row) = self.model.store.row_of_seq(request_seq) {
                    self.model.conversation_rows.insert(req_row, no);
                }
                self.model.conversations.insert(id.clone(), no);
                self.chains.push(InputChain {
                    no,
                    method: method.to_owned(),
                    params,
                    current_id: id.clone(),
                    round: 1,
                    waiting: Vec::new(),
                    responses: serde_json::Map::new(),
                    state: None,
                });
                self.chains.len() - 1
            }
        };
        let c = &mut self.chains[chain];
        c.state = ir.request_state.clone();
        c.waiting = ir.requests.iter().map(|r| r.key.clone()).collect();
        c.responses.clear();
        let no = c.no;
        let mut out = vec![Reply::Note(format!(
            "conversation {no}: {method} needs input ({}): {}",
            ir.requests.len(),
            ir.requests.iter().map(|r| r.summary()).collect::<Vec<_>>().join("; ")
        ))];
        if c.round > mrtr::MAX_ROUNDS {
            out.push(Reply::Note(format!(
                "conversation {no}: more than {} rounds, mcpscope stops answering",
                mrtr::MAX_ROUNDS
            )));
            return out;
        }
        let mut answered = Vec::new();
        for r in &ir.requests {
            match r.method.as_str() {
                "roots/list" => answered.push((r.key.clone(), serde_json::json!({"roots": self.roots}))),
                "elicitation/create" | "sampling/createMessage" => self.server_requests.push(ServerRequest {
                    id: RequestId::String(format!("input-{no}-{}-{}", self.chains[chain].round, r.key)),
                    method: r.method.clone(),
                    params: r.params.clone(),
                    row,
                    input: Some((chain, r.key.clone())),
                }),
                other => answered.push((
                    r.key.clone(),
                    serde_json::json!({"error": {"code": error_code::METHOD_NOT_FOUND,
                        "message": format!("mcpscope does not answer {other}")}}),
                )),
            }
        }
        let c = &mut self.chains[chain];
        for (k, v) in answered {
            c.waiting.retain(|w| w != &k);
            c.responses.insert(k, v);
        }
        if c.waiting.is_empty() {
            out.push(Reply::Retry(chain));
        }
        out
    }

    /// Reads the `server/discover` probe's answer and settles the era.
    fn settle_era(&mut self, verdict: ProbeVerdict) -> Vec<Reply> {
        let choice = self.era.choice;
        match verdict {
            ProbeVerdict::Modern(d) => {
                self.era.state = EraState::Modern;
                self.era.reason = format!(
                    "server/discover answered (supports {}): modern server",
                    d.supported_versions.join(", ")
                );
                self.model.server_capabilities = d.capabilities.clone();
                let tools = d.capabilities.as_ref().is_some_and(|c| c.get("tools").is_some());
                self.era.discovery = Some(d);
                self.initialized_sent = true;
                let mut out = vec![Reply::Note(format!("era: modern ({})", self.era.reason))];
                if tools && !self.tools_listed {
                    self.tools_listed = true;
                    out.push(Reply::ListTools);
                }
                out
            }
            ProbeVerdict::UnsupportedVersion {
                requested,
                supported,
                retry_with: Some(v),
            } => {
                let note = era::retry_note("server/discover", &requested, &supported, &v);
                self.envelope.protocol_version = v;
                vec![Reply::Note(note), Reply::Discover]
            }
            ProbeVerdict::UnsupportedVersion {
                requested, supported, ..
            } => self.fall_back(
                choice,
                format!(
                    "-32022 to server/discover for {requested} and no modern version in common (server: {})",
                    supported.join(", ")
                ),
            ),
            ProbeVerdict::ModernError(e) => {
                self.era.state = EraState::Modern;
                self.era.reason = format!("server/discover refused with {e}: a modern server");
                vec![Reply::Note(format!("era: modern ({})", self.era.reason))]
            }
            ProbeVerdict::Legacy(why) => self.fall_back(choice, why),
        }
    }

    fn fall_back(&mut self, choice: EraChoice, why: String) -> Vec<Reply> {
        if choice == EraChoice::Modern {
            // The user asked for modern: stay, and say the probe failed.
            self.era.state = EraState::Modern;
            self.era.reason = format!("modern chosen, but {why}");
            return vec![Reply::Note(format!("era: modern as chosen ({why})"))];
        }
        self.era.state = EraState::Legacy;
        self.era.reason = why.clone();
        vec![
            Reply::Note(format!("era: legacy ({why}); falling back to initialize")),
            Reply::Initialize,
        ]
    }

    /// The protocol version modern requests carry in `_meta` (changed, e.g.,
    /// to see how a server answers a version it does not speak).
    pub fn set_modern_version(&mut self, version: &str) {
        self.envelope.protocol_version = version.to_owned();
    }

    pub fn modern_version(&self) -> &str {
        &self.envelope.protocol_version
    }

    /// The tasks flavour the server offers for tools/call in this era, if any.
    pub fn task_flavor(&self) -> Option<mcpscope_core::protocol::tasks::Flavor> {
        let era = self.era.era()?;
        let flavor = mcpscope_core::protocol::tasks::Flavor::for_era(era);
        let caps = self.model.capabilities()?;
        mcpscope_core::protocol::tasks::server_offers(caps, flavor).then_some(flavor)
    }

    /// Params with the modern envelope when the session is modern.
    fn wrap(&self, params: Option<Value>) -> Option<Value> {
        match self.era.state {
            EraState::Modern => Some(self.envelope.wrap(params)),
            _ => params,
        }
    }

    /// Sends what the user composed; returns the request id to watch.
    pub fn send(&mut self, out: Outgoing) -> Option<RequestId> {
        let s = self.session.as_ref()?;
        match out {
            Outgoing::Request { method, params, id } => {
                let params = self.wrap(params);
                let id = s.request_with(id, &method, params, s.default_timeout());
                self.model.watch(id.clone());
                Some(id)
            }
            Outgoing::Notification { method, params } => {
                let params = self.wrap(params);
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
        // 2026-07-28 removed the notification: roots are asked for per request.
        if self.era.state == EraState::Modern {
            return;
        }
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
