//! A tool run as a task: the call, polling at the server's interval, input
//! the task waits for, the result, and cancelling (both forms: the
//! 2025-11-25 experimental tasks and the 2026-07-28 extension).

use super::{Driver, Failure, Outcome, Pending, Purpose, QuestionOrigin};
use crate::protocol::methods;
use crate::protocol::mrtr::InputRequired;
use crate::protocol::tasks::{self, Flavor, Status, Task};
use crate::wire::message::{ErrorObject, RequestId};
use serde_json::{Map, Value, json};
use std::time::Duration;

/// Polling interval when the server names none, and its bounds.
const DEFAULT_POLL: Duration = Duration::from_millis(500);
const MIN_POLL: Duration = Duration::from_millis(50);
const MAX_POLL: Duration = Duration::from_secs(5);

/// Which request of a task run is in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Call,
    Poll,
    Result,
    Cancel,
    Update,
}

/// One tool run as a task.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskRun {
    /// The `tools/call`'s id: the run is known by it.
    pub root: RequestId,
    /// `None` until the server answers with a task (and when it answers at once).
    pub flavor: Option<Flavor>,
    pub task: Option<Task>,
    /// Every distinct state seen, in order.
    pub transitions: Vec<Task>,
    /// `tasks/cancel` was sent (by the owner, or after `give_up`).
    pub cancelled: bool,
    pub(super) in_flight: Option<Step>,
    pub(super) next_poll: Option<Duration>,
    pub(super) give_up_at: Option<Duration>,
    /// Inputs of an `input_required` task still unanswered, and the answers.
    pub(super) waiting: Vec<String>,
    pub(super) responses: Map<String, Value>,
}

impl TaskRun {
    /// A run whose call never got an answer.
    pub fn unstarted(root: RequestId) -> TaskRun {
        TaskRun {
            root,
            flavor: None,
            task: None,
            transitions: Vec::new(),
            cancelled: false,
            in_flight: None,
            next_poll: None,
            give_up_at: None,
            waiting: Vec::new(),
            responses: Map::new(),
        }
    }

    pub(super) fn next_poll_at(&self) -> Option<Duration> {
        if self.in_flight.is_some() {
            return None;
        }
        match (self.next_poll, self.give_up_at.filter(|_| !self.cancelled)) {
            (Some(p), Some(g)) => Some(p.min(g)),
            (p, g) => p.or(g),
        }
    }

    /// The task's status line ("working", "completed: done"), or what is awaited.
    pub fn status_line(&self) -> String {
        self.task
            .as_ref()
            .map_or_else(|| "waiting for the server to create the task".into(), Task::status_line)
    }
}

impl Driver {
    /// Runs `tools/call` as a task in the form of the session's era (the
    /// experimental `task` param in the legacy era, the extension in the
    /// modern one) and follows it: [`super::Action::TaskStatus`] on every
    /// change, [`super::Action::Done`] with the tool's result. When `give_up`
    /// passes (from now) the task is cancelled.
    pub fn run_task(&mut self, params: Value, give_up: Option<Duration>) -> RequestId {
        let flavor = Flavor::for_era(self.era.era().unwrap_or(crate::protocol::era::Era::Legacy));
        let id = self.alloc_id();
        self.tasks.push(TaskRun {
            root: id.clone(),
            flavor: None,
            task: None,
            transitions: Vec::new(),
            cancelled: false,
            in_flight: Some(Step::Call),
            next_poll: None,
            give_up_at: give_up.map(|g| self.now + g),
            waiting: Vec::new(),
            responses: Map::new(),
        });
        let root = id.clone();
        self.owner.insert(
            root.clone(),
            super::OwnerRequest {
                method: methods::TOOLS_CALL.into(),
                current: root.clone(),
                rounds: Vec::new(),
                last_input_result: None,
                frame_only: false,
            },
        );
        let pending = Pending {
            purpose: Purpose::Task(Step::Call),
            root,
            method: methods::TOOLS_CALL.into(),
            params: Some(tasks::call_params(params, flavor, None)),
            timeout: self.config.request_timeout,
            enveloped: self.era.state == super::EraState::Modern,
            version_retries: 0,
        };
        self.send_pending(id.clone(), pending);
        id
    }

    /// Cancels a task run (`tasks/cancel`); it ends with what the server
    /// says the task came to.
    pub fn cancel_task(&mut self, root: &RequestId) {
        let Some(i) = self.tasks.iter().position(|t| &t.root == root) else {
            return;
        };
        let run = &self.tasks[i];
        if run.cancelled || run.task.as_ref().is_none_or(|t| t.status.is_terminal()) {
            return;
        }
        self.send_task_step(i, Step::Cancel);
    }

    fn task_index(&self, root: &RequestId) -> Option<usize> {
        self.tasks.iter().position(|t| &t.root == root)
    }

    fn send_task_step(&mut self, i: usize, step: Step) {
        let run = &mut self.tasks[i];
        let Some(task) = &run.task else { return };
        let (method, params) = match step {
            Step::Poll => (methods::TASKS_GET, tasks::task_params(&task.task_id)),
            Step::Result => (methods::TASKS_RESULT, tasks::task_params(&task.task_id)),
            Step::Cancel => {
                run.cancelled = true;
                (methods::TASKS_CANCEL, tasks::task_params(&task.task_id))
            }
            Step::Update => (
                methods::TASKS_UPDATE,
                json!({"taskId": task.task_id, "inputResponses": run.responses}),
            ),
            Step::Call => return,
        };
        run.in_flight = Some(step);
        run.next_poll = None;
        let root = run.root.clone();
        // tasks/result blocks until the task ends: wait as long as the run may.
        let timeout = match step {
            Step::Result => None,
            _ => self.config.request_timeout,
        };
        let id = self.alloc_id();
        let pending = Pending {
            purpose: Purpose::Task(step),
            root,
            method: method.into(),
            params: Some(params),
            timeout,
            enveloped: self.era.state == super::EraState::Modern,
            version_retries: 0,
        };
        self.send_pending(id, pending);
    }

    /// Timers: polls that are due, and runs that passed their `give_up`.
    pub(super) fn poll_tasks(&mut self) {
        if self.gone.is_some() {
            return;
        }
        for i in 0..self.tasks.len() {
            let run = &self.tasks[i];
            if run.in_flight.is_some() {
                continue;
            }
            let terminal = run.task.as_ref().is_some_and(|t| t.status.is_terminal());
            if !terminal && !run.cancelled && run.give_up_at.is_some_and(|g| self.now >= g) {
                self.note(format!(
                    "task {}: not ended in time, mcpscope cancels it",
                    run.task.as_ref().map_or("?", |t| t.task_id.as_str())
                ));
                self.send_task_step(i, Step::Cancel);
                continue;
            }
            if run.next_poll.is_some_and(|p| self.now >= p) {
                self.send_task_step(i, Step::Poll);
            }
        }
    }

    pub(super) fn task_failed(&mut self, root: &RequestId, _step: Step, failure: Failure) {
        if let Some(i) = self.task_index(root) {
            self.tasks[i].in_flight = None;
            self.tasks[i].next_poll = None;
        }
        let last = self.owner.get(root).map_or_else(|| root.clone(), |o| o.current.clone());
        self.finish(root, &last, Outcome::Failed(failure), None);
    }

    pub(super) fn task_answer(
        &mut self,
        id: &RequestId,
        root: &RequestId,
        step: Step,
        outcome: Result<Value, ErrorObject>,
    ) {
        let Some(i) = self.task_index(root) else { return };
        self.tasks[i].in_flight = None;
        let result = match outcome {
            Err(e) => {
                if step == Step::Update {
                    // The task goes on; the next poll says where it stands.
                    self.note(format!("tasks/update was refused: {e}"));
                    self.schedule_poll(i);
                } else {
                    self.tasks[i].next_poll = None;
                    self.finish(root, id, Outcome::Error(e), None);
                }
                return;
            }
            Ok(v) => v,
        };
        match step {
            Step::Call => match Task::created(&result) {
                None => {
                    // The server answered at once, without a task.
                    self.finish(root, id, Outcome::Result(result), None);
                }
                Some((flavor, task)) => {
                    self.tasks[i].flavor = Some(flavor);
                    self.task_changed(i, task);
                    self.advance(i, id);
                }
            },
            Step::Poll | Step::Cancel => {
                let task = Task::from_value(&result).or_else(|| result.get("task").and_then(Task::from_value));
                match task {
                    Some(t) => {
                        self.task_changed(i, t);
                        self.advance(i, id);
                    }
                    None => {
                        self.tasks[i].next_poll = None;
                        self.finish(
                            root,
                            id,
                            Outcome::Failed(Failure::Stopped(format!(
                                "{} answered without a task: {}",
                                if step == Step::Poll {
                                    methods::TASKS_GET
                                } else {
                                    methods::TASKS_CANCEL
                                },
                                crate::text::shorten(&result.to_string(), 160)
                            ))),
                            None,
                        );
                    }
                }
            }
            Step::Result => {
                self.tasks[i].next_poll = None;
                self.finish(root, id, Outcome::Result(result), None);
            }
            Step::Update => self.schedule_poll(i),
        }
    }

    fn task_changed(&mut self, i: usize, mut task: Task) {
        let run = &mut self.tasks[i];
        // A state that names no interval keeps the one the server gave before.
        if task.poll_interval.is_none() {
            task.poll_interval = run.task.as_ref().and_then(|t| t.poll_interval);
        }
        let changed = run
            .transitions
            .last()
            .is_none_or(|p| p.status != task.status || p.status_message != task.status_message);
        run.task = Some(task.clone());
        if changed {
            run.transitions.push(task.clone());
            let id = run.root.clone();
            self.actions.push_back(super::Action::TaskStatus { id, task });
        }
    }

    /// After a new state: fetch the result, answer input, or poll again.
    fn advance(&mut self, i: usize, last: &RequestId) {
        let run = &self.tasks[i];
        let (Some(flavor), Some(task)) = (run.flavor, run.task.clone()) else {
            return;
        };
        let root = run.root.clone();
        match (flavor, &task.status) {
            (Flavor::Experimental, s) if s.is_terminal() => {
                if run.cancelled {
                    self.finish_task_inline(i, last);
                } else {
                    self.send_task_step(i, Step::Result);
                }
            }
            // Experimental tasks that wait for input deliver the server's
            // requests through tasks/result: go there at once.
            (Flavor::Experimental, Status::InputRequired) => self.send_task_step(i, Step::Result),
            (Flavor::Extension, s) if s.is_terminal() => self.finish_task_inline(i, last),
            (Flavor::Extension, Status::InputRequired) => {
                let reqs = task.input_requests.clone().unwrap_or(Value::Null);
                let ir = InputRequired::from_result(&json!({"resultType": "input_required", "inputRequests": reqs}));
                match ir {
                    Some(ir) if !ir.requests.is_empty() && self.tasks[i].waiting.is_empty() => {
                        self.task_inputs(i, &root, ir)
                    }
                    _ => self.schedule_poll(i),
                }
            }
            _ => self.schedule_poll(i),
        }
    }

    fn schedule_poll(&mut self, i: usize) {
        let run = &mut self.tasks[i];
        let every = run
            .task
            .as_ref()
            .and_then(|t| t.poll_interval)
            .unwrap_or(DEFAULT_POLL)
            .clamp(MIN_POLL, MAX_POLL);
        run.next_poll = Some(self.now + every);
    }

    /// An extension task's inlined result or error, or why there is none.
    fn finish_task_inline(&mut self, i: usize, last: &RequestId) {
        let run = &mut self.tasks[i];
        run.next_poll = None;
        let root = run.root.clone();
        let task = run.task.clone().expect("a task");
        let outcome = match (&task.result, &task.error) {
            (Some(r), _) => Outcome::Result(r.clone()),
            (None, Some(e)) => match ErrorObject::from_json(e) {
                Some(e) => Outcome::Error(e),
                None => Outcome::Failed(Failure::Stopped(format!(
                    "the task failed with an error that is not a JSON-RPC error object: {}",
                    crate::text::shorten(&e.to_string(), 200)
                ))),
            },
            (None, None) => Outcome::Failed(Failure::Stopped(format!(
                "the task ended {} without a result",
                task.status_line()
            ))),
        };
        self.finish(&root, last, outcome, None);
    }

    /// Answers a task's input requests (policy or user), then `tasks/update`.
    fn task_inputs(&mut self, i: usize, root: &RequestId, ir: InputRequired) {
        self.tasks[i].waiting = ir.requests.iter().map(|r| r.key.clone()).collect();
        self.tasks[i].responses.clear();
        for r in &ir.requests {
            if self.config.ask_user && r.method != methods::ROOTS_LIST {
                self.ask(
                    &r.method,
                    r.params.clone(),
                    QuestionOrigin::TaskInput {
                        root: root.clone(),
                        key: r.key.clone(),
                    },
                    None,
                );
                continue;
            }
            match self.config.policy.answer(&r.method, &r.params) {
                Ok(v) => self.task_input_answered(root, r.key.clone(), v),
                Err(why) => {
                    self.tasks[i].waiting.clear();
                    self.tasks[i].next_poll = None;
                    let last = self.owner.get(root).map_or_else(|| root.clone(), |o| o.current.clone());
                    self.finish(root, &last, Outcome::Failed(Failure::Stopped(why.to_string())), None);
                    return;
                }
            }
        }
    }

    pub(super) fn task_input_answered(&mut self, root: &RequestId, key: String, value: Value) {
        let Some(i) = self.task_index(root) else { return };
        let run = &mut self.tasks[i];
        if !run.waiting.contains(&key) {
            return;
        }
        run.waiting.retain(|k| k != &key);
        run.responses.insert(key, value);
        if run.waiting.is_empty() {
            self.send_task_step(i, Step::Update);
        }
    }
}
