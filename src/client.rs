//! A blocking client on top of a [`Session`], for the CLI, the doctor and tests.
//!
//! It waits for one response at a time while still seeing every other event
//! (passed to an observer, e.g. `--trace`) and answers the server's own
//! requests so that a server waiting on them does not stall the session.

use crate::classify::Kind;
use crate::event::Event;
use crate::frame::{Direction, Frame};
use crate::handshake::{Handshake, HandshakeOptions};
use crate::message::{ErrorObject, RequestId, error_code};
use crate::process::{ExitInfo, ServerSpec, SpawnError};
use crate::session::{Session, SessionOptions};
use crate::transport::Target;
use crossbeam_channel::RecvTimeoutError;
use serde_json::{Value, json};
use std::fmt;
use std::time::{Duration, Instant};

/// Why a request got no response.
#[derive(Clone, Debug, PartialEq)]
pub enum ClientError {
    SpawnFailed(SpawnError),
    TimedOut {
        method: String,
        after: Duration,
    },
    ServerExited {
        method: String,
        status: ExitInfo,
    },
    Closed {
        method: String,
    },
    WriteFailed {
        method: String,
        error: String,
    },
    /// The HTTP exchange carrying the request failed (connection refused, an
    /// error status, a body that is not the response, an expired session).
    Http {
        method: String,
        error: String,
    },
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::SpawnFailed(e) => write!(f, "could not start the server: {e}"),
            ClientError::TimedOut { method, after } => {
                write!(f, "{method} got no response within {} ms", after.as_millis())
            }
            ClientError::ServerExited { method, status } => {
                write!(f, "the server {status} before answering {method}")
            }
            ClientError::Closed { method } => write!(f, "the session ended before {method} was answered"),
            ClientError::WriteFailed { method, error } => write!(f, "could not send {method}: {error}"),
            ClientError::Http { method, error } => write!(f, "{method} failed over HTTP: {error}"),
        }
    }
}

impl std::error::Error for ClientError {}

/// A response: its frame and what it says.
#[derive(Clone, Debug)]
pub struct Response {
    pub frame: Frame,
    pub outcome: Result<Value, ErrorObject>,
}

impl Response {
    pub fn latency(&self) -> Duration {
        self.frame.link.as_ref().map_or(Duration::ZERO, |l| l.latency)
    }

    pub fn is_tool_error(&self) -> bool {
        self.frame.class.tool_error
    }
}

pub type Observer = Box<dyn FnMut(&Event) + Send>;

pub struct Client {
    session: Session,
    /// Over HTTP there is no process to wait for.
    remote: bool,
    observer: Observer,
    /// Answer `roots/list` with these roots; refuse it when `None`.
    roots: Option<Vec<Value>>,
    pid: Option<u32>,
    spawn_error: Option<SpawnError>,
    exited: Option<ExitInfo>,
    closed: bool,
}

impl Client {
    pub fn start(spec: ServerSpec, options: SessionOptions, observer: Observer) -> Client {
        Self::connect(Target::Stdio(spec), options, observer)
    }

    /// A client for a server over any transport (stdio, Streamable HTTP, HTTP+SSE).
    pub fn connect(target: impl Into<Target>, options: SessionOptions, observer: Observer) -> Client {
        let target = target.into();
        let remote = matches!(target, Target::Http(_));
        Client {
            session: Session::connect(target, options),
            remote,
            observer,
            roots: None,
            pid: None,
            spawn_error: None,
            exited: None,
            closed: false,
        }
    }

    /// Answer `roots/list` with these roots (URIs like `file:///home/me/project`).
    pub fn with_roots(mut self, roots: Vec<Value>) -> Self {
        self.roots = Some(roots);
        self
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    pub fn exit_status(&self) -> Option<ExitInfo> {
        self.exited
    }

    /// Waits until the server can be spoken to: started (stdio) or at once
    /// (HTTP, where a server that cannot be reached fails the first request).
    pub fn wait_started(&mut self, timeout: Duration) -> Result<(), ClientError> {
        if self.remote {
            return Ok(());
        }
        self.wait_spawned(timeout).map(|_| ())
    }

    /// Whether the server is reached over HTTP.
    pub fn is_remote(&self) -> bool {
        self.remote
    }

    /// Waits until the server has started (or failed to).
    pub fn wait_spawned(&mut self, timeout: Duration) -> Result<u32, ClientError> {
        let deadline = Instant::now() + timeout;
        while self.pid.is_none() && self.spawn_error.is_none() && !self.closed {
            if !self.pump_until(deadline) {
                break;
            }
        }
        match (&self.pid, &self.spawn_error) {
            (Some(pid), _) => Ok(*pid),
            (None, Some(e)) => Err(ClientError::SpawnFailed(e.clone())),
            _ => Err(ClientError::Closed { method: "start".into() }),
        }
    }

    /// Receives one event (or none before `deadline`); false once nothing more will come.
    fn pump_until(&mut self, deadline: Instant) -> bool {
        let wait = deadline.saturating_duration_since(Instant::now());
        match self.session.events().recv_timeout(wait) {
            Ok(ev) => {
                self.handle(&ev);
                (self.observer)(&ev);
                true
            }
            Err(RecvTimeoutError::Timeout) => false,
            Err(RecvTimeoutError::Disconnected) => {
                self.closed = true;
                false
            }
        }
    }

    /// Processes events for `d` (e.g. to collect trailing stderr).
    pub fn pump_for(&mut self, d: Duration) {
        let deadline = Instant::now() + d;
        while Instant::now() < deadline && !self.closed {
            self.pump_until(deadline);
        }
    }

    fn handle(&mut self, ev: &Event) {
        match ev {
            Event::Spawned { pid, .. } => self.pid = Some(*pid),
            Event::SpawnFailed { error, .. } => self.spawn_error = Some(error.clone()),
            Event::Exited { status, .. } => self.exited = Some(*status),
            Event::Closed { .. } => self.closed = true,
            Event::Frame(f) if f.direction == Direction::In && f.class.kind == Kind::Request => {
                self.answer_server_request(f);
            }
            _ => {}
        }
    }

    fn answer_server_request(&mut self, f: &Frame) {
        let (Some(id), Some(method)) = (f.class.id.clone(), f.class.method.as_deref()) else {
            return;
        };
        let outcome = match method {
            "ping" => return, // the session answers pings itself
            "roots/list" => match &self.roots {
                Some(roots) => Ok(json!({ "roots": roots })),
                None => Err(ErrorObject::new(
                    error_code::METHOD_NOT_FOUND,
                    "mcpscope does not expose roots in this session (pass --root to answer roots/list)",
                )),
            },
            "sampling/createMessage" => Err(ErrorObject::new(
                error_code::METHOD_NOT_FOUND,
                "mcpscope did not declare the sampling capability and cannot run a model",
            )),
            "elicitation/create" => Err(ErrorObject::new(
                error_code::METHOD_NOT_FOUND,
                "mcpscope did not declare the elicitation capability and cannot ask a person here",
            )),
            other => Err(ErrorObject::new(
                error_code::METHOD_NOT_FOUND,
                format!("Method not found: {other}"),
            )),
        };
        self.session.respond(id, outcome);
    }

    /// Sends a request and waits for its response.
    pub fn request(&mut self, method: &str, params: Option<Value>, timeout: Duration) -> Result<Response, ClientError> {
        let id = self.session.request_with(None, method, params, Some(timeout));
        self.wait_response(method, &id, timeout)
    }

    /// Sends a notification (no response is expected).
    pub fn notify(&mut self, method: &str, params: Option<Value>) {
        self.session.notify(method, params);
    }

    fn wait_response(&mut self, method: &str, id: &RequestId, timeout: Duration) -> Result<Response, ClientError> {
        // The session times the request out itself; this is only a backstop.
        let backstop = Instant::now() + timeout + Duration::from_secs(2);
        let mut exit_grace: Option<Instant> = None;
        loop {
            let deadline = exit_grace.map_or(backstop, |g| g.min(backstop));
            let ev = match self
                .session
                .events()
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(ev) => ev,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(match self.exited {
                        Some(status) if exit_grace.is_some() => ClientError::ServerExited {
                            method: method.into(),
                            status,
                        },
                        _ => ClientError::TimedOut {
                            method: method.into(),
                            after: timeout,
                        },
                    });
                }
                Err(RecvTimeoutError::Disconnected) => {
                    self.closed = true;
                    return Err(ClientError::Closed { method: method.into() });
                }
            };
            self.handle(&ev);
            (self.observer)(&ev);
            match &ev {
                Event::Frame(f)
                    if f.direction == Direction::In
                        && f.class.kind.is_response()
                        && f.class.id.as_ref() == Some(id) =>
                {
                    let outcome = response_outcome(f);
                    return Ok(Response {
                        frame: f.clone(),
                        outcome,
                    });
                }
                Event::TimedOut { timed_out, .. } if &timed_out.id == id => {
                    return Err(ClientError::TimedOut {
                        method: method.into(),
                        after: timeout,
                    });
                }
                Event::WriteFailed { error, line, .. } if line_has_id(line, id) => {
                    return Err(ClientError::WriteFailed {
                        method: method.into(),
                        error: error.clone(),
                    });
                }
                Event::SpawnFailed { error, .. } => return Err(ClientError::SpawnFailed(error.clone())),
                Event::Http(h) if h.request_id.as_ref() == Some(id) && h.error.is_some() => {
                    return Err(ClientError::Http {
                        method: method.into(),
                        error: h.error.clone().unwrap_or_default(),
                    });
                }
                // A response may still be in the stdout pipe when the exit is
                // noticed: give the reader a moment before giving up.
                Event::Exited { .. } => exit_grace = Some(Instant::now() + Duration::from_millis(300)),
                Event::Closed { .. } => return Err(ClientError::Closed { method: method.into() }),
                _ => {}
            }
        }
    }

    /// `initialize` then, when the answer is usable, `notifications/initialized`.
    /// The inner error is the server's JSON-RPC refusal of `initialize`.
    pub fn initialize(
        &mut self,
        options: &HandshakeOptions,
        timeout: Duration,
    ) -> Result<Result<Handshake, ErrorObject>, ClientError> {
        let resp = self.request("initialize", Some(options.params()), timeout)?;
        let latency = resp.latency();
        match resp.outcome {
            Ok(result) => {
                let hs = Handshake::judge(&options.protocol_version, &result, latency);
                if hs.usable() {
                    self.notify("notifications/initialized", None);
                }
                Ok(Ok(hs))
            }
            Err(e) => Ok(Err(e)),
        }
    }

    /// Shuts the server down and passes the remaining events to the observer.
    pub fn close(mut self) -> Option<ExitInfo> {
        let rest = self.session.close();
        for ev in &rest {
            self.handle(ev);
            (self.observer)(ev);
        }
        self.exited
    }
}

fn line_has_id(line: &[u8], id: &RequestId) -> bool {
    serde_json::from_slice::<Value>(line)
        .ok()
        .and_then(|v| v.get("id").and_then(RequestId::from_json))
        .as_ref()
        == Some(id)
}

/// The result or error a response frame carries.
pub fn response_outcome(f: &Frame) -> Result<Value, ErrorObject> {
    let v = f.json().unwrap_or(Value::Null);
    if f.class.kind == Kind::Error {
        Err(v
            .get("error")
            .and_then(ErrorObject::from_json)
            .unwrap_or_else(|| ErrorObject::new(0, "malformed error object")))
    } else {
        Ok(v.get("result").cloned().unwrap_or(Value::Null))
    }
}
