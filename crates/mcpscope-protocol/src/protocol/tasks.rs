//! Tasks: a long request run in the background, polled for its status.
//!
//! Two forms exist:
//! * **Experimental** (2025-11-25, legacy era): the client asks for a task
//!   with a `task` param on `tools/call`; the result is `{task: Task}`;
//!   `tasks/get` polls, `tasks/result` fetches (blocking until terminal),
//!   `tasks/list` lists, `tasks/cancel` cancels; `notifications/tasks/status`
//!   may report changes. Fields `ttl`, `pollInterval`.
//! * **Extension** `io.modelcontextprotocol/tasks` (2026-07-28): the client
//!   declares the extension; the server decides to answer with a task
//!   (`resultType: "task"`, the task's fields inline); `tasks/get` polls and
//!   carries the result (or error, or input requests) once there is one;
//!   `tasks/cancel`; no `tasks/result` or `tasks/list`. Fields `ttlMs`, `pollIntervalMs`.

use serde_json::{Value, json};
use std::fmt;
use std::time::Duration;

/// The extension id, in `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// 2025-11-25 `task` param and `tasks/result`.
    Experimental,
    /// 2026-07-28 extension, result inlined in `tasks/get`.
    Extension,
}

impl Flavor {
    pub fn for_era(era: crate::protocol::era::Era) -> Flavor {
        match era {
            crate::protocol::era::Era::Legacy => Flavor::Experimental,
            crate::protocol::era::Era::Modern => Flavor::Extension,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Flavor::Experimental => "tasks (2025-11-25, experimental)",
            Flavor::Extension => "tasks extension (io.modelcontextprotocol/tasks)",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
    Other(String),
}

impl Status {
    pub fn parse(s: &str) -> Status {
        match s {
            "working" => Status::Working,
            "input_required" => Status::InputRequired,
            "completed" => Status::Completed,
            "failed" => Status::Failed,
            "cancelled" => Status::Cancelled,
            other => Status::Other(other.to_owned()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
            Status::Other(s) => s,
        }
    }

    pub fn is_terminal(&self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A task's state, in either form.
#[derive(Clone, Debug, PartialEq)]
pub struct Task {
    pub task_id: String,
    pub status: Status,
    pub status_message: Option<String>,
    pub created_at: Option<String>,
    pub last_updated_at: Option<String>,
    /// How long the server keeps it (`ttl` / `ttlMs`); `None` for null or absent.
    pub ttl: Option<Duration>,
    pub poll_interval: Option<Duration>,
    /// Extension `tasks/get`: the inlined result of a completed task.
    pub result: Option<Value>,
    /// Extension `tasks/get`: the inlined error of a failed task.
    pub error: Option<Value>,
    /// Extension `tasks/get`: input requests of an `input_required` task.
    pub input_requests: Option<Value>,
}

fn millis(v: Option<&Value>) -> Option<Duration> {
    v.and_then(Value::as_f64)
        .filter(|n| *n >= 0.0)
        .map(|n| Duration::from_millis(n as u64))
}

impl Task {
    /// Reads a task object (either form's field names).
    pub fn from_value(v: &Value) -> Option<Task> {
        let task_id = v.get("taskId")?.as_str()?.to_owned();
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        Some(Task {
            task_id,
            status: Status::parse(v.get("status").and_then(Value::as_str).unwrap_or("?")),
            status_message: s("statusMessage"),
            created_at: s("createdAt"),
            last_updated_at: s("lastUpdatedAt"),
            ttl: millis(v.get("ttlMs").or_else(|| v.get("ttl"))),
            poll_interval: millis(v.get("pollIntervalMs").or_else(|| v.get("pollInterval"))),
            result: v.get("result").cloned(),
            error: v.get("error").cloned(),
            input_requests: v.get("inputRequests").cloned(),
        })
    }

    /// The task a `tools/call` answered with, if it answered with one:
    /// `{task: {...}}` (experimental) or `resultType: "task"` (extension).
    pub fn created(result: &Value) -> Option<(Flavor, Task)> {
        if let Some(t) = result.get("task") {
            return Task::from_value(t).map(|t| (Flavor::Experimental, t));
        }
        if result.get("resultType").and_then(Value::as_str) == Some("task") {
            return Task::from_value(result).map(|t| (Flavor::Extension, t));
        }
        None
    }

    /// "working: Gathering sources..."
    pub fn status_line(&self) -> String {
        match &self.status_message {
            Some(m) => format!("{}: {m}", self.status),
            None => self.status.to_string(),
        }
    }
}

/// `tools/call` params asking for a task (experimental form: the `task`
/// param; the extension form asks nothing per request, the server decides).
pub fn call_params(params: Value, flavor: Flavor, ttl: Option<Duration>) -> Value {
    let mut p = match params {
        Value::Object(_) => params,
        _ => json!({}),
    };
    if flavor == Flavor::Experimental {
        p["task"] = match ttl {
            Some(t) => json!({"ttl": t.as_millis() as u64}),
            None => json!({}),
        };
    }
    p
}

/// The params of `tasks/get`, `tasks/result` and `tasks/cancel`.
pub fn task_params(task_id: &str) -> Value {
    json!({ "taskId": task_id })
}

/// The client capabilities that declare tasks support.
pub fn client_capabilities(mut caps: Value, flavor: Flavor) -> Value {
    if !caps.is_object() {
        caps = json!({});
    }
    match flavor {
        Flavor::Experimental => {
            caps["tasks"] = json!({"list": {}, "cancel": {}});
        }
        Flavor::Extension => {
            if !caps.get("extensions").is_some_and(Value::is_object) {
                caps["extensions"] = json!({});
            }
            caps["extensions"][EXTENSION] = json!({});
        }
    }
    caps
}

/// Whether a server's capabilities offer tasks for `tools/call`.
pub fn server_offers(caps: &Value, flavor: Flavor) -> bool {
    match flavor {
        Flavor::Experimental => caps.pointer("/tasks/requests/tools/call").is_some(),
        Flavor::Extension => caps.pointer("/extensions").and_then(|e| e.get(EXTENSION)).is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_read() {
        let exp = json!({"task":{"taskId":"t1","status":"working","ttl":300000,"pollInterval":1000,
            "createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z"}});
        let (flavor, t) = Task::created(&exp).unwrap();
        assert_eq!(flavor, Flavor::Experimental);
        assert_eq!(t.poll_interval, Some(Duration::from_secs(1)));
        assert_eq!(t.ttl, Some(Duration::from_secs(300)));
        assert!(!t.status.is_terminal());

        let ext = json!({"resultType":"task","taskId":"t2","status":"working","ttlMs":null,"pollIntervalMs":200,
            "statusMessage":"started"});
        let (flavor, t) = Task::created(&ext).unwrap();
        assert_eq!(flavor, Flavor::Extension);
        assert_eq!(t.ttl, None);
        assert_eq!(t.status_line(), "working: started");

        let done = json!({"resultType":"complete","taskId":"t2","status":"completed","result":{"content":[]}});
        let t = Task::from_value(&done).unwrap();
        assert!(t.status.is_terminal());
        assert!(t.result.is_some());
        assert!(Task::created(&json!({"content":[]})).is_none());
    }

    #[test]
    fn params_and_capabilities() {
        let p = call_params(json!({"name":"x"}), Flavor::Experimental, Some(Duration::from_secs(60)));
        assert_eq!(p["task"], json!({"ttl": 60000}));
        let p = call_params(json!({"name":"x"}), Flavor::Extension, None);
        assert!(p.get("task").is_none());
        assert_eq!(task_params("a"), json!({"taskId":"a"}));
        let c = client_capabilities(json!({"roots":{}}), Flavor::Extension);
        assert_eq!(c["extensions"][EXTENSION], json!({}));
        assert!(c.get("roots").is_some());
        let c = client_capabilities(json!({}), Flavor::Experimental);
        assert!(c.get("tasks").is_some());
        assert!(server_offers(
            &json!({"tasks":{"requests":{"tools":{"call":{}}}}}),
            Flavor::Experimental
        ));
        assert!(server_offers(
            &json!({"extensions":{"io.modelcontextprotocol/tasks":{}}}),
            Flavor::Extension
        ));
        assert!(!server_offers(&json!({}), Flavor::Extension));
    }
}
