//! One session shown in the app, whatever its events come from: a server
//! this app launched, a proxied session followed while it runs, a capture
//! being read, or a complete one. Each [`EventSource`] keeps its own state
//! and drains its own way ([`Inspection::drain`], once per frame; nothing
//! here blocks); what every session has (the model the panels read, its
//! capture, its hosted Views) is [`Inspection`]'s.

mod followed;
mod launched;
mod load;

pub use launched::AppServices;
pub use load::LoadState;

use anyhow::{Context as _, Result};
use mcpscope_core::driver::view::DriverView;
use mcpscope_core::driver::{
    Chain, Driver, DriverConfig, EraStatus, Failure, Question, QuestionId, RequestOptions, TaskRun,
};
use mcpscope_core::protocol::subscriptions::Filter;
use mcpscope_core::protocol::tasks::Flavor;
use mcpscope_core::timeline::model::SessionModel;
use mcpscope_core::transport::target::Target;
use mcpscope_core::wire::message::{ErrorObject, RequestId};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long one frame may spend applying events before it draws.
const DRAIN_BUDGET: Duration = Duration::from_millis(8);

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
/// user answer sampling and elicitation; it hosts MCP Apps unless the
/// user asked for the server's text-only side (`apps` false).
pub fn client_capabilities(apps: bool) -> Value {
    let caps = serde_json::json!({
        "roots": {"listChanged": true},
        "sampling": {},
        "elicitation": {},
    });
    if apps {
        mcpscope_core::apps::linkage::advertise(caps)
    } else {
        caps
    }
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
    /// Where the events come from, with that source's own state.
    source: EventSource,
    /// The driver as last copied from the pilot (what the panels read; a
    /// driver that never started for a session without a pilot).
    view: DriverView,
    /// The capture this inspection writes (launched), follows, or was loaded from.
    pub capture_path: Option<PathBuf>,
    /// How long the app's last frame took: what a loading capture may spend
    /// of the next one.
    pub last_frame: Duration,
    /// The file the user opened when it was another tool's (a HAR, an
    /// Inspector export): `capture_path` is then the copy it was imported into.
    pub imported_from: Option<PathBuf>,
    /// Problems reading a capture, shown once.
    pub load_warnings: Vec<String>,
    ends: launched::Ends,
    /// The session's proxy intercepts (breakpoints, fault rules): its
    /// control socket, while the session runs.
    pub intercept: Option<crate::intercept_link::InterceptLink>,
    /// The MCP Apps this session hosts (their Views in the browser).
    pub apps: crate::app_host::HostedApps,
    /// Whether a View's page is opened in the browser when it is hosted
    /// (tests open it themselves).
    pub apps_open_browser: bool,
    /// Whether the handshake advertised the App extension.
    pub apps_advertised: bool,
}

/// Where a session's events come from.
enum EventSource {
    /// A server this app launched, driven by its pilot.
    Launched(Box<launched::Launched>),
    /// A proxied session's capture, followed while the proxy writes it.
    Followed(Box<followed::Followed>),
    /// A capture being read on a worker.
    Loading(load::CaptureLoad),
    /// A capture read to its end (or a model given whole).
    Offline,
}

impl Inspection {
    /// Shows a model that is already complete (no process behind it).
    pub fn offline(model: SessionModel) -> Inspection {
        Inspection {
            model,
            source: EventSource::Offline,
            view: DriverView::of(&Driver::new(DriverConfig::default())),
            capture_path: None,
            last_frame: Duration::ZERO,
            imported_from: None,
            load_warnings: Vec::new(),
            ends: launched::Ends::default(),
            intercept: None,
            apps: crate::app_host::HostedApps::default(),
            apps_open_browser: true,
            apps_advertised: false,
        }
    }

    /// Applies waiting events for at most one frame's budget.
    /// Returns true when events remain (the caller should repaint again).
    pub fn drain(&mut self) -> bool {
        if let Some(link) = &mut self.intercept {
            link.drain();
        }
        match &mut self.source {
            EventSource::Launched(_) => self.drain_launched(),
            EventSource::Followed(f) => f.drain(&mut self.model, &mut self.load_warnings),
            EventSource::Loading(load) => {
                let opened = load::Opened {
                    model: &mut self.model,
                    capture_path: &mut self.capture_path,
                    imported_from: &mut self.imported_from,
                    load_warnings: &mut self.load_warnings,
                };
                match load.drain(opened, load::load_budget(self.last_frame)) {
                    load::LoadStep::More => true,
                    load::LoadStep::Waiting => false,
                    load::LoadStep::Done => {
                        self.source = EventSource::Offline;
                        crate::memory::give_back();
                        false
                    }
                }
            }
            EventSource::Offline => false,
        }
    }

    /// The era the session speaks, and why (unsettled for an offline capture).
    pub fn era(&self) -> &EraStatus {
        &self.view.era
    }

    /// Server requests and input requests waiting for the user, oldest first.
    pub fn questions(&self) -> &[Question] {
        &self.view.questions
    }

    /// The row of the frame that asked a question, when it came in one.
    pub fn question_row(&self, q: &Question) -> Option<usize> {
        q.asked_by_seq.and_then(|s| self.model.store.row_of_seq(s))
    }

    /// Roots answered to `roots/list`.
    pub fn roots(&self) -> &[Value] {
        &self.view.roots
    }

    /// Multi round-trip conversations so far.
    pub fn chains(&self) -> &[Chain] {
        &self.view.chains
    }

    /// The task run started by the request `id`.
    pub fn task(&self, id: &RequestId) -> Option<&TaskRun> {
        self.view.task(id)
    }

    /// Whether a request of the user is still waiting for its end.
    pub fn is_pending(&self, id: &RequestId) -> bool {
        self.view.is_pending(id)
    }

    /// Why a request of the user ended without an answer, if it did.
    pub fn failure(&self, id: &RequestId) -> Option<&Failure> {
        self.ends.failures.get(id)
    }

    /// The id a request is currently waiting on (its latest send after
    /// -32022 retries and input rounds).
    pub fn current_id(&self, id: &RequestId) -> RequestId {
        self.view
            .current_id(id)
            .or_else(|| self.ends.finished.get(id))
            .cloned()
            .unwrap_or_else(|| self.model.chain_head(id))
    }

    /// How long until the driver's next timer (task polls, a settling
    /// list_changed burst, exit grace), as of the last copy of its state.
    /// Its owner thread keeps the timers; the UI need not wake for them.
    pub fn next_wakeup(&self) -> Option<Duration> {
        let started = self.started()?;
        let at = self.view.next_wakeup?;
        Some(at.saturating_sub(started.elapsed()))
    }

    /// The protocol version modern requests carry in `_meta` (changed, e.g.,
    /// to see how a server answers a version it does not speak).
    pub fn set_modern_version(&mut self, version: &str) {
        self.with_driver(|d| d.set_modern_version(version));
        self.perform();
    }

    pub fn modern_version(&self) -> &str {
        &self.view.modern_version
    }

    /// The tasks flavour the server offers for tools/call in this era, if any.
    pub fn task_flavor(&self) -> Option<Flavor> {
        self.view.task_flavor
    }

    /// Sends what the user composed; returns the request id to watch.
    pub fn send(&mut self, out: Outgoing) -> Option<RequestId> {
        let id = self.with_driver(|d| match out {
            Outgoing::Request { method, params, id } => {
                if let Some(id) = &id {
                    d.reserve_id(id);
                }
                let list = mcpscope_core::protocol::methods::LISTS.contains(&method.as_str());
                let id = if method == mcpscope_core::protocol::subscriptions::LISTEN {
                    let filter = params
                        .as_ref()
                        .and_then(|p| p.get("notifications"))
                        .map_or_else(Filter::all_lists, Filter::from_json);
                    d.listen(&filter)
                } else {
                    d.request_with(
                        &method,
                        params,
                        RequestOptions {
                            id,
                            ..Default::default()
                        },
                    )
                };
                if list {
                    d.list_fetched(&method);
                }
                Some(id)
            }
            Outgoing::Notification { method, params } => {
                d.notify(&method, params);
                None
            }
            Outgoing::Raw(line) => d.send_raw(line),
        })?;
        if let Some(id) = &id {
            self.model.watch(id.clone());
        }
        self.perform();
        id
    }

    /// Runs `tools/call` as a task; the driver polls it and fetches its result.
    pub fn run_task(&mut self, params: Value) -> Option<RequestId> {
        let id = self.with_driver(|d| d.run_task(params, None))?;
        self.model.watch(id.clone());
        self.perform();
        Some(id)
    }

    /// Cancels a task run (`tasks/cancel`).
    pub fn cancel_task(&mut self, id: &RequestId) {
        self.with_driver(|d| d.cancel_task(id));
        self.perform();
    }

    /// Asks the server to cancel one of our requests.
    pub fn cancel(&mut self, id: &RequestId) {
        self.with_driver(|d| d.cancel(id, "cancelled in mcpscope"));
        self.perform();
    }

    /// The user answered a question (an elicitation, a sampling request).
    pub fn answer(&mut self, question: QuestionId, outcome: Result<Value, ErrorObject>) {
        self.with_driver(|d| d.answer(question, outcome));
        self.perform();
    }

    /// The user edited the roots offered to the server.
    pub fn set_roots(&mut self, roots: Vec<Value>) {
        self.with_driver(|d| d.set_roots(roots));
        self.perform();
    }

    pub fn stop(&mut self) {
        self.apps.close_all();
        if let Some(l) = self.launched() {
            if let Some(si) = &l.sign_in {
                si.cancel();
            }
            crate::live_pilot::lock(&l.pilot).session.shutdown();
        }
    }

    /// Puts a model turn of a chat on the timeline and in the capture (a
    /// session this app launched; elsewhere there is no session to keep it).
    pub fn record_model(&mut self, exchange: mcpscope_core::model::record::ModelExchange) {
        if let Some(l) = self.launched() {
            crate::live_pilot::lock(&l.pilot).session.record_model(exchange);
        }
    }

    /// The tools the server listed last.
    pub fn listed_tools(&self) -> Vec<Value> {
        self.model
            .latest_result(mcpscope_core::protocol::methods::TOOLS_LIST)
            .and_then(|(_, r)| r.get("tools").and_then(Value::as_array).cloned())
            .unwrap_or_default()
    }

    /// Hosts the View of `tool` for a call just sent (`call`) or a recorded
    /// one (`result`): its resource is read on the session, then its pages
    /// open (see [`crate::app_host`]).
    pub fn open_app(&mut self, tool: &Value, arguments: Value, call: Option<RequestId>, result: Option<Value>) {
        let requests = self.apps.open(tool, arguments, call, result);
        self.apply_app_requests(requests);
    }

    /// Relays between the session and its hosted Views (once per frame).
    pub fn pump_apps(&mut self) {
        if !self.apps.active() {
            return;
        }
        let mut apps = std::mem::take(&mut self.apps);
        // The tool list is read only when a View's resource has come (not every frame).
        let requests = apps.pump(|| self.listed_tools(), |id| self.request_outcome(id), self.waker());
        self.apps = apps;
        self.apply_app_requests(requests);
    }

    fn apply_app_requests(&mut self, requests: Vec<crate::app_host::SessionRequest>) {
        use crate::app_host::SessionRequest;
        for r in requests {
            match r {
                SessionRequest::Send {
                    view,
                    method,
                    params,
                    ticket,
                } => {
                    let id = if self.model.running() {
                        self.send(Outgoing::Request {
                            method,
                            params,
                            id: None,
                        })
                    } else {
                        None
                    };
                    self.apps.sent(view, ticket, id);
                }
                SessionRequest::Record(record) => self.record_app(record),
                SessionRequest::OpenBrowser(url) => {
                    if self.apps_open_browser
                        && let Err(e) = mcpscope_core::transport::auth::browser::open(&url)
                    {
                        self.record_app(mcpscope_core::apps::run::AppRecord::Note(format!(
                            "{e}; open {url} yourself"
                        )));
                    }
                }
            }
        }
    }

    /// How a request of ours ended: its result, or a JSON-RPC error object
    /// (the server's, or one saying why no answer came); none while it waits.
    fn request_outcome(&self, id: &RequestId) -> Option<Result<Value, Value>> {
        if let Some(row) = self.model.response_to(&self.current_id(id)) {
            let v: Value = serde_json::from_slice(self.model.store.get(row)?.raw()).ok()?;
            return Some(match v.get("error") {
                Some(e) => Err(e.clone()),
                None => Ok(v.get("result").cloned().unwrap_or(Value::Null)),
            });
        }
        self.failure(id)
            .map(|f| Err(serde_json::json!({"code": -32603, "message": f.to_string()})))
    }

    /// Puts a View's message (or the host's note) on the session's record.
    fn record_app(&self, record: mcpscope_core::apps::run::AppRecord) {
        let Some(l) = self.launched() else { return };
        let state = crate::live_pilot::lock(&l.pilot);
        match record {
            mcpscope_core::apps::run::AppRecord::Message(m) => state.session.record_app(m),
            mcpscope_core::apps::run::AppRecord::Note(n) => state.session.note(n),
        }
    }

    /// Copies the capture to `to` (it is already complete on disk up to the
    /// last event). File I/O: the app runs it on a worker.
    pub fn save_capture(from: &Path, to: &Path) -> Result<()> {
        if from != to {
            std::fs::copy(from, to).with_context(|| format!("cannot write {}", to.display()))?;
        }
        Ok(())
    }

    /// How long `initialize` has waited for its answer, while it waits
    /// (not once it timed out, was refused, or its authorization failed).
    pub fn initialize_waited(&self) -> Option<Duration> {
        let facts = &self.model.handshake.facts;
        if facts.init_resp.is_some() || facts.init_timed_out.is_some() || facts.auth_failed.is_some() {
            return None;
        }
        if self.model.closed || self.model.exit.is_some() {
            return None;
        }
        let sent = self
            .model
            .handshake
            .initialize_row
            .and_then(|r| self.model.store.get(r))?
            .at();
        Some(self.started()?.elapsed().saturating_sub(sent))
    }

    pub fn uptime(&self) -> Option<Duration> {
        match (self.started(), self.model.exit) {
            (_, Some((at, _))) => Some(at.saturating_sub(self.model.started_at.unwrap_or_default())),
            (Some(t), None) if self.model.running() => Some(t.elapsed()),
            _ => None,
        }
    }
}
