//! What the owner asks for: requests (enveloped, retried after a -32022,
//! followed through `input_required` rounds), notifications, raw lines,
//! cancellations, answers to questions, roots and listen streams.

use super::*;

impl Driver {
    /// Sends a request for the owner: enveloped in the modern era, retried
    /// after a -32022, followed through `input_required` rounds. Ends in
    /// [`Action::Done`] under the returned id.
    pub fn request(&mut self, method: &str, params: Option<Value>) -> RequestId {
        self.request_with(method, params, RequestOptions::default())
    }

    pub fn request_with(&mut self, method: &str, params: Option<Value>, opts: RequestOptions) -> RequestId {
        let id = opts.id.unwrap_or_else(|| self.alloc_id());
        let timeout = opts.timeout.unwrap_or(self.config.request_timeout);
        self.owner.insert(
            id.clone(),
            OwnerRequest {
                method: method.to_owned(),
                current: id.clone(),
                rounds: Vec::new(),
                last_input_result: None,
                frame_only: opts.frame_only,
            },
        );
        if let Some(why) = self.gone.clone() {
            self.send_untracked(&id, method, params, timeout, !opts.as_is);
            self.finish(&id, &id, Outcome::Failed(Failure::ServerGone(why)), None);
            return id;
        }
        let pending = Pending {
            purpose: Purpose::Owner,
            root: id.clone(),
            method: method.to_owned(),
            params,
            timeout,
            enveloped: !opts.as_is && self.era.state == EraState::Modern,
            version_retries: 0,
        };
        self.send_pending(id.clone(), pending);
        id
    }

    /// Sends a notification (enveloped in the modern era).
    pub fn notify(&mut self, method: &str, params: Option<Value>) {
        let params = self.wrap(params);
        self.push_send(Message::notification(method, params), None);
    }

    /// Sends a line exactly as the user typed it. A request in it (an object
    /// with a method and an id) is followed like any other of the owner's.
    pub fn send_raw(&mut self, line: Vec<u8>) -> Option<RequestId> {
        let parsed = serde_json::from_slice::<Value>(&line).ok();
        let id = parsed.as_ref().and_then(|v| v.get("id")).and_then(RequestId::from_json);
        let method = parsed
            .as_ref()
            .and_then(|v| v.get("method"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let timeout = self.config.request_timeout;
        if let (Some(id), Some(method)) = (&id, method) {
            self.owner.insert(
                id.clone(),
                OwnerRequest {
                    method: method.clone(),
                    current: id.clone(),
                    rounds: Vec::new(),
                    last_input_result: None,
                    frame_only: false,
                },
            );
            // Never re-sent or enveloped: it is the user's line, kept as typed.
            self.pending.insert(
                id.clone(),
                Pending {
                    purpose: Purpose::Owner,
                    root: id.clone(),
                    method,
                    params: None,
                    timeout,
                    enveloped: false,
                    version_retries: MAX_VERSION_RETRIES,
                },
            );
        }
        self.actions.push_back(Action::SendRaw { line, timeout });
        id
    }

    /// Asks the server to cancel a request of the owner (by the id it was
    /// given, or the id of its current send); it ends as cancelled.
    pub fn cancel(&mut self, id: &RequestId, reason: &str) {
        let root = self.conversations.root(id);
        let current = self.owner.get(&root).map_or_else(|| id.clone(), |o| o.current.clone());
        self.pending.remove(&current);
        self.actions.push_back(Action::Cancel {
            id: current.clone(),
            reason: reason.to_owned(),
        });
        if self.owner.contains_key(&root) {
            self.finish(&root, &current, Outcome::Failed(Failure::Cancelled), None);
        }
        self.listens.remove(id);
        self.withdraw_questions(|o| matches!(o, QuestionOrigin::Input { root: r, .. } if *r == root));
    }

    /// The user answered a question.
    pub fn answer(&mut self, question: QuestionId, outcome: Result<Value, ErrorObject>) {
        let Some(pos) = self.questions.iter().position(|q| q.id == question) else {
            return;
        };
        let q = self.questions.remove(pos);
        match q.origin {
            QuestionOrigin::ServerRequest(id) => self.respond(id, outcome),
            QuestionOrigin::Input { root, key } => {
                // An input response is the result the legacy request would have had.
                let value = outcome.unwrap_or_else(|e| json!({ "error": e.to_json() }));
                if let Some(ready) = self.chains.record(&root, key, value) {
                    self.send_next_round(&root, ready);
                }
            }
            QuestionOrigin::TaskInput { root, key } => {
                let value = outcome.unwrap_or_else(|e| json!({ "error": e.to_json() }));
                self.task_input_answered(&root, key, value);
            }
        }
    }

    /// Changes the roots answered to `roots/list`; a legacy session is told
    /// with `notifications/roots/list_changed` (2026-07-28 removed it: roots
    /// are asked for per request).
    pub fn set_roots(&mut self, roots: Vec<Value>) {
        self.config.policy.roots = Some(roots);
        if self.era.state == EraState::Legacy && self.gone.is_none() {
            self.push_send(Message::notification(methods::ROOTS_LIST_CHANGED, None), None);
        }
    }

    /// Opens a `subscriptions/listen` stream (no timeout): [`Action::Listening`]
    /// when acknowledged; [`Driver::cancel`] ends it.
    pub fn listen(&mut self, filter: &Filter) -> RequestId {
        let id = self.alloc_id();
        self.listens.insert(id.clone(), false);
        self.owner.insert(
            id.clone(),
            OwnerRequest {
                method: subscriptions::LISTEN.to_owned(),
                current: id.clone(),
                rounds: Vec::new(),
                last_input_result: None,
                frame_only: false,
            },
        );
        let pending = Pending {
            purpose: Purpose::Listen,
            root: id.clone(),
            method: subscriptions::LISTEN.to_owned(),
            params: Some(filter.listen_params()),
            timeout: None,
            enveloped: self.era.state == EraState::Modern,
            version_retries: MAX_VERSION_RETRIES,
        };
        self.send_pending(id.clone(), pending);
        id
    }
}
