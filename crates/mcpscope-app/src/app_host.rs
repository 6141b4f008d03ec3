//! The MCP Apps a session hosts: one entry per View, keyed by the tool
//! call that opened it. Each View's host (its loopback pages and the
//! host-side state machine, `mcpscope_core::apps::run`) runs on a worker
//! thread; the UI thread only relays: the View's requests go out on the
//! session as the app's own requests, their answers go back, and every
//! View↔host message is put on the session's record. Nothing here blocks.

use crossbeam_channel::{Receiver, Sender, unbounded};
use mcpscope_core::apps::host::Shown;
use mcpscope_core::apps::linkage;
use mcpscope_core::apps::run::{AppRecord, AppRun, Prepared, ServerCall};
use mcpscope_core::wire::message::RequestId;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// What the UI thread tells a View's worker.
enum ToWorker {
    Input(Value),
    Result(Value),
    Cancelled(String),
    Answered(u64, Result<Value, Value>),
    Theme(String),
    Close,
}

/// What a View's worker tells the UI thread.
enum FromWorker {
    Started {
        url: String,
    },
    Failed(String),
    Call(ServerCall),
    Record(AppRecord),
    Snapshot(Box<Snapshot>),
    /// The View said `ui/notifications/initialized`, at this instant.
    Initialized(Instant),
    Closed,
}

/// What the App panel shows of a View (copied from the worker).
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub phase: String,
    pub display_mode: String,
    pub model_context: Option<Value>,
    pub messages: Vec<Value>,
    pub logs: Vec<Value>,
    /// From opening the View (the tool's Run) to its `initialized`.
    pub initialized_after: Option<Duration>,
}

/// Where a View is.
#[derive(Clone, Debug, PartialEq)]
pub enum Stage {
    /// Its resource is being read (`resources/read` sent).
    Reading,
    /// Hosted: the pages are up.
    Hosting,
    /// It could not be hosted, and why.
    Failed(String),
    Closed,
}

/// One hosted View.
pub struct HostedView {
    pub tool: String,
    pub stage: Stage,
    /// The host page to open in a browser.
    pub url: Option<String>,
    /// The policy and warnings said before it loaded.
    pub csp: String,
    pub warnings: Vec<String>,
    pub snapshot: Snapshot,
    /// The tool's definition, as listed.
    tool_def: Value,
    arguments: Value,
    /// The tools/call that opened it, while its answer is awaited.
    call: Option<RequestId>,
    /// A result known already ("Open app" on a recorded result).
    result: Option<Value>,
    read: Option<RequestId>,
    /// The View's requests sent on the session: their ids, and the ticket each answers.
    pending: HashMap<RequestId, u64>,
    to_worker: Option<Sender<ToWorker>>,
    from_worker: Option<Receiver<FromWorker>>,
    pub(crate) opened: Instant,
}

/// How long a hosted View's page may go unopened before the App tab says
/// the browser did not connect.
pub const BROWSER_PATIENCE: Duration = Duration::from_secs(10);

impl HostedView {
    /// How long its page has waited for a browser to load it; `None` once a
    /// browser connected (or when it is not being hosted).
    pub fn waiting_for_browser(&self) -> Option<Duration> {
        let waiting = self.snapshot.phase.is_empty() || self.snapshot.phase == "waitingforsandbox";
        (self.stage == Stage::Hosting && waiting).then(|| self.opened.elapsed())
    }
}

/// What the hub asks of the session each frame.
pub enum SessionRequest {
    /// Send this request; tell the hub its id ([`HostedApps::sent`]).
    Send {
        view: usize,
        method: String,
        params: Option<Value>,
        ticket: Option<u64>,
    },
    /// Put this on the session's record.
    Record(AppRecord),
    /// Open the View's page in the browser.
    OpenBrowser(String),
}

/// The Views of one session.
#[derive(Default)]
pub struct HostedApps {
    pub views: Vec<HostedView>,
    /// Permissions the user grants Views (camera, microphone, …): none by default.
    pub granted: Vec<String>,
    pub theme: String,
}

impl HostedApps {
    /// The tool's View, if the tool declares a usable one.
    pub fn ui_tool<'a>(tools: &'a [Value], name: &str) -> Option<&'a Value> {
        tools
            .iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some(name))
            .filter(|t| linkage::ui_link(t).is_some_and(|l| l.usable_uri().is_some()))
    }

    /// A View for a tool call just sent (`call`), or for a recorded one
    /// (`result` known): its resource is read first.
    pub fn open(
        &mut self,
        tool: &Value,
        arguments: Value,
        call: Option<RequestId>,
        result: Option<Value>,
    ) -> Vec<SessionRequest> {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
        let uri = linkage::ui_link(tool).and_then(|l| l.usable_uri().map(str::to_owned));
        let index = self.views.len();
        self.views.push(HostedView {
            tool: name,
            stage: Stage::Reading,
            url: None,
            csp: String::new(),
            warnings: Vec::new(),
            snapshot: Snapshot::default(),
            tool_def: tool.clone(),
            arguments,
            call,
            result,
            read: None,
            pending: HashMap::new(),
            to_worker: None,
            from_worker: None,
            opened: Instant::now(),
        });
        match uri {
            Some(uri) => vec![SessionRequest::Send {
                view: index,
                method: "resources/read".into(),
                params: Some(json!({"uri": uri})),
                ticket: None,
            }],
            None => {
                self.views[index].stage = Stage::Failed("the tool declares no ui:// View".into());
                Vec::new()
            }
        }
    }

    /// The session sent a request the hub asked for: its id.
    pub fn sent(&mut self, view: usize, ticket: Option<u64>, id: Option<RequestId>) {
        let Some(v) = self.views.get_mut(view) else { return };
        match (ticket, id) {
            (None, Some(id)) => v.read = Some(id),
            (Some(t), Some(id)) => {
                v.pending.insert(id, t);
            }
            (None, None) => {
                v.stage = Stage::Failed("the resource could not be read: the session is not running".into())
            }
            (Some(t), None) => {
                if let Some(tx) = &v.to_worker {
                    let _ = tx.send(ToWorker::Answered(
                        t,
                        Err(json!({"code": -32603, "message": "the session is not running"})),
                    ));
                }
            }
        }
    }

    /// Whether any View is still being read or hosted (the UI keeps polling).
    pub fn active(&self) -> bool {
        self.views
            .iter()
            .any(|v| matches!(v.stage, Stage::Reading | Stage::Hosting))
    }

    /// Relays one frame's worth: answers the session has for the Views
    /// (`answer` gives a request's outcome once it arrived: a result, or a
    /// JSON-RPC error object), what the workers said, and what to send.
    pub fn pump(
        &mut self,
        tools: impl Fn() -> Vec<Value>,
        mut answer: impl FnMut(&RequestId) -> Option<Result<Value, Value>>,
        wake: Option<crate::job::Wake>,
    ) -> Vec<SessionRequest> {
        let mut out = Vec::new();
        let theme = if self.theme.is_empty() {
            "light".to_owned()
        } else {
            self.theme.clone()
        };
        for (index, v) in self.views.iter_mut().enumerate() {
            // The resource arrived: prepare and start the View's host.
            if v.stage == Stage::Reading
                && let Some(id) = v.read.clone()
                && let Some(outcome) = answer(&id)
            {
                v.read = None;
                match outcome {
                    Err(e) => {
                        v.stage = Stage::Failed(format!(
                            "resources/read failed: {}",
                            e.get("message").and_then(Value::as_str).unwrap_or("?")
                        ))
                    }
                    Ok(read) => {
                        match mcpscope_core::apps::run::prepare(&v.tool_def, &tools(), &read, None, &self.granted) {
                            Err(e) => v.stage = Stage::Failed(e.to_string()),
                            Ok(mut p) => {
                                p.setup.call_id = v.call.as_ref().map(RequestId::to_json);
                                p.setup.theme = theme.clone();
                                p.page.theme = theme.clone();
                                v.csp = p.setup.csp.clone();
                                v.warnings = p.warnings.clone();
                                let (to_tx, to_rx) = unbounded();
                                let (from_tx, from_rx) = unbounded();
                                let _ = to_tx.send(ToWorker::Input(v.arguments.clone()));
                                if let Some(r) = v.result.take() {
                                    let _ = to_tx.send(ToWorker::Result(r));
                                }
                                spawn_worker(p, to_rx, from_tx, wake.clone());
                                v.to_worker = Some(to_tx);
                                v.from_worker = Some(from_rx);
                                v.stage = Stage::Hosting;
                            }
                        }
                    }
                }
            }
            // The tool's own answer.
            if let Some(id) = v.call.clone()
                && let Some(outcome) = answer(&id)
            {
                v.call = None;
                if let Some(tx) = &v.to_worker {
                    let _ = tx.send(match outcome {
                        Ok(r) => ToWorker::Result(r),
                        Err(e) => {
                            ToWorker::Cancelled(e.get("message").and_then(Value::as_str).unwrap_or("failed").to_owned())
                        }
                    });
                } else if let Ok(r) = outcome {
                    // The View is still being read: it gets the result once it starts.
                    v.result = Some(r);
                }
            }
            // Answers to the View's own requests.
            let done: Vec<(RequestId, u64, Result<Value, Value>)> = v
                .pending
                .iter()
                .filter_map(|(id, t)| answer(id).map(|o| (id.clone(), *t, o)))
                .collect();
            for (id, ticket, outcome) in done {
                v.pending.remove(&id);
                if let Some(tx) = &v.to_worker {
                    let _ = tx.send(ToWorker::Answered(ticket, outcome));
                }
            }
            let Some(rx) = &v.from_worker else { continue };
            loop {
                let m = match rx.try_recv() {
                    Ok(m) => m,
                    Err(crossbeam_channel::TryRecvError::Empty) => break,
                    Err(crossbeam_channel::TryRecvError::Disconnected) => {
                        if v.stage == Stage::Hosting {
                            v.stage = Stage::Failed("the View's host stopped".into());
                        }
                        break;
                    }
                };
                match m {
                    FromWorker::Started { url } => {
                        out.push(SessionRequest::OpenBrowser(url.clone()));
                        v.url = Some(url);
                    }
                    FromWorker::Failed(why) => v.stage = Stage::Failed(why),
                    FromWorker::Call(c) => out.push(SessionRequest::Send {
                        view: index,
                        method: c.method,
                        params: c.params,
                        ticket: Some(c.ticket),
                    }),
                    FromWorker::Record(r) => out.push(SessionRequest::Record(r)),
                    FromWorker::Snapshot(s) => {
                        let mut s = *s;
                        s.initialized_after = v.snapshot.initialized_after;
                        v.snapshot = s;
                    }
                    FromWorker::Initialized(at) => {
                        v.snapshot.initialized_after = Some(at.saturating_duration_since(v.opened));
                    }
                    FromWorker::Closed => v.stage = Stage::Closed,
                }
            }
        }
        out
    }

    /// The user closes a View (teardown is sent and awaited).
    pub fn close(&mut self, view: usize) {
        if let Some(tx) = self.views.get(view).and_then(|v| v.to_worker.as_ref()) {
            let _ = tx.send(ToWorker::Close);
        }
    }

    /// The theme Views get (changes are announced to those open).
    pub fn set_theme(&mut self, theme: &str) {
        self.theme = theme.to_owned();
        for v in &self.views {
            if let Some(tx) = &v.to_worker {
                let _ = tx.send(ToWorker::Theme(theme.to_owned()));
            }
        }
    }

    /// Closes every View (the session is going).
    pub fn close_all(&mut self) {
        for i in 0..self.views.len() {
            self.close(i);
        }
    }

    /// How long after its tool call a View said `initialized`.
    pub fn initialized_after(&self, view: usize) -> Option<Duration> {
        self.views.get(view)?.snapshot.initialized_after
    }

    /// When a View was opened.
    pub fn opened(&self, view: usize) -> Option<Instant> {
        self.views.get(view).map(|v| v.opened)
    }
}

fn spawn_worker(p: Prepared, rx: Receiver<ToWorker>, tx: Sender<FromWorker>, wake: Option<crate::job::Wake>) {
    // Not spawned: the sender is dropped with the closure, and the entry
    // says its host stopped on the next pump.
    let _ = std::thread::Builder::new()
        .name("mcpscope-app-view".into())
        .spawn(move || {
            let wake = move || {
                if let Some(w) = &wake {
                    w();
                }
            };
            let mut run = match AppRun::start(p) {
                Ok(r) => r,
                Err(e) => {
                    let _ = tx.send(FromWorker::Failed(e.to_string()));
                    wake();
                    return;
                }
            };
            let _ = tx.send(FromWorker::Started { url: run.url() });
            let mut initialized_sent = false;
            let mut orphaned = false;
            loop {
                let mut calls = Vec::new();
                loop {
                    let m = match rx.try_recv() {
                        Ok(m) => m,
                        Err(crossbeam_channel::TryRecvError::Empty) => break,
                        // The session's tab is gone: the View is closed (its
                        // teardown still awaited), then the thread ends.
                        Err(crossbeam_channel::TryRecvError::Disconnected) => {
                            if !orphaned {
                                orphaned = true;
                                calls.extend(run.close("the session ended"));
                            }
                            break;
                        }
                    };
                    calls.extend(match m {
                        ToWorker::Input(a) => run.with_host(|h, _| h.tool_input(a)),
                        ToWorker::Result(r) => run.with_host(|h, _| h.tool_result(r)),
                        ToWorker::Cancelled(why) => run.with_host(|h, _| h.tool_cancelled(Some(why))),
                        ToWorker::Answered(t, o) => run.answered(t, o),
                        ToWorker::Theme(t) => run.with_host(|h, _| h.set_theme(&t)),
                        ToWorker::Close => run.close("closed in mcpscope"),
                    });
                }
                // What the page sent since, and the host's clock.
                calls.extend(run.wait(Duration::ZERO));
                let records = run.take_records();
                let busy = !calls.is_empty() || !records.is_empty();
                for r in records {
                    let _ = tx.send(FromWorker::Record(r));
                }
                for c in calls {
                    let _ = tx.send(FromWorker::Call(c));
                }
                if busy {
                    let h = run.host();
                    let mut s = Snapshot {
                        phase: format!("{:?}", h.phase()).to_lowercase(),
                        display_mode: h.display_mode().to_owned(),
                        model_context: h.model_context().cloned(),
                        ..Snapshot::default()
                    };
                    for shown in h.shown() {
                        match shown {
                            Shown::Message(m) => s.messages.push(m.clone()),
                            Shown::Log(l) => s.logs.push(l.clone()),
                        }
                    }
                    if !initialized_sent && let Some(at) = run.initialized_at {
                        initialized_sent = true;
                        let _ = tx.send(FromWorker::Initialized(at));
                    }
                    let _ = tx.send(FromWorker::Snapshot(Box::new(s)));
                    wake();
                }
                if run.is_closed() {
                    run.server().wait_delivered(Duration::from_secs(1));
                    let _ = tx.send(FromWorker::Closed);
                    wake();
                    return;
                }
                // Asleep until the session or the page says something, or
                // the host's clock is due (the session's end is said once).
                let mut ready = crossbeam_channel::Select::new();
                if !orphaned {
                    ready.recv(&rx);
                }
                ready.recv(run.server().inbox());
                let _ = match run.until_next_tick() {
                    Some(due) => ready.ready_timeout(due).ok(),
                    None => Some(ready.ready()),
                };
            }
        });
}
