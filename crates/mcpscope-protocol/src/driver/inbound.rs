//! What comes in: frames from the server (responses, its own requests,
//! notifications, a long line in pieces), the passing of time, and the
//! server going away; each ends in actions, never in I/O.

use super::*;

impl Driver {
    pub fn handle(&mut self, input: Input<'_>) {
        match input {
            Input::Frame(f) => {
                self.now = self.now.max(f.at);
                if f.direction == Direction::In && !self.long_line_piece(f) {
                    self.on_frame(f);
                }
            }
            Input::TimedOut(id) => {
                if let Some(p) = self.pending.remove(id) {
                    let after = p.timeout;
                    self.no_answer(id, p, Failure::TimedOut { after });
                }
            }
            Input::NotDelivered { id, why, cause } => {
                if let Some(p) = self.pending.remove(id) {
                    self.no_answer(
                        id,
                        p,
                        Failure::NotDelivered {
                            why: why.to_owned(),
                            cause,
                        },
                    );
                }
            }
            Input::Exited(why) => {
                if self.exited.is_none() {
                    self.exited = Some((self.now, why.to_owned()));
                }
            }
            Input::Gone(why) => self.gone(why),
            Input::Tick(now) => {
                self.now = self.now.max(now);
                if let Some((at, why)) = self.exited.clone()
                    && self.now >= at + EXIT_GRACE
                {
                    self.gone(&why);
                }
                self.poll_tasks();
                self.refetch_due_lists();
            }
        }
    }

    pub(super) fn refetch_due_lists(&mut self) {
        if self.gone.is_some() {
            self.refetch_due.clear();
            return;
        }
        let mut due: Vec<&'static str> = self
            .refetch_due
            .iter()
            .filter(|(_, at)| self.now >= **at)
            .map(|(l, _)| *l)
            .collect();
        due.sort_unstable();
        for list in due {
            self.refetch_due.remove(list);
            self.refetch(list);
        }
    }

    pub(super) fn gone(&mut self, why: &str) {
        if self.gone.is_some() {
            return;
        }
        self.gone = Some(why.to_owned());
        let mut pending: Vec<(RequestId, Pending)> = self.pending.drain().collect();
        pending.sort_by(|a, b| a.0.cmp(&b.0));
        for (id, p) in pending {
            self.no_answer(&id, p, Failure::ServerGone(why.to_owned()));
        }
        // Whatever was still waiting on the user can no longer be answered.
        self.questions.clear();
        let roots: Vec<RequestId> = self.owner.keys().cloned().collect();
        for root in roots {
            let current = self.owner[&root].current.clone();
            self.finish(
                &root,
                &current,
                Outcome::Failed(Failure::ServerGone(why.to_owned())),
                None,
            );
        }
        for t in &mut self.tasks {
            t.next_poll = None;
        }
    }

    /// A request of ours will get no answer.
    pub(super) fn no_answer(&mut self, id: &RequestId, p: Pending, failure: Failure) {
        match p.purpose {
            Purpose::Probe => {
                let offered = self.envelope.protocol_version.clone();
                let why = match &failure {
                    Failure::TimedOut { .. } => "timed out".to_owned(),
                    other => other.to_string(),
                };
                if matches!(failure, Failure::ServerGone(_)) {
                    self.era.cause = Some(failure.clone());
                    self.settle_failed(EraFailure::NoAnswer {
                        method: methods::SERVER_DISCOVER.into(),
                        why: failure.to_string(),
                    });
                } else {
                    self.settle_probe(ProbeVerdict::judge(&offered, None, &why));
                }
            }
            Purpose::Initialize => {
                self.era.cause = Some(failure.clone());
                self.settle_failed(EraFailure::NoAnswer {
                    method: methods::INITIALIZE.into(),
                    why: failure.to_string(),
                })
            }
            Purpose::List(list) => self.list_answered(list),
            Purpose::Owner | Purpose::Listen => {
                self.listens.remove(id);
                self.finish(&p.root, id, Outcome::Failed(failure), None)
            }
            Purpose::Task(step) => self.task_failed(&p.root, step, failure),
        }
    }

    /// Follows a line over the in-memory cap through its pieces (the first
    /// ones end in `Cut`, the last does not); at its end, a request it
    /// answers fails as [`Failure::TooLong`] instead of waiting on.
    pub(super) fn long_line_piece(&mut self, f: &Frame) -> bool {
        if f.ending == LineEnding::Cut {
            let (scan, _) = self.long_line.get_or_insert_with(|| (LongLine::default(), f.raw.len()));
            scan.push(&f.raw);
            return true;
        }
        let Some((mut scan, cap)) = self.long_line.take() else {
            return false;
        };
        scan.push(&f.raw);
        let summary = scan.finish();
        if summary.is_response
            && let Some(id) = &summary.id
            && let Some(p) = self.pending.remove(id)
        {
            let failure = Failure::TooLong {
                bytes: summary.bytes,
                cap,
            };
            self.no_answer(id, p, failure);
        }
        true
    }

    pub(super) fn on_frame(&mut self, f: &Frame) {
        if f.class.kind == Kind::Result && f.link.as_ref().is_some_and(|l| l.method == methods::TOOLS_LIST) {
            self.tools_answered(f);
        }
        match f.class.kind {
            Kind::Result | Kind::Error => {
                if let Some(id) = &f.class.id
                    && let Some(p) = self.pending.remove(id)
                {
                    self.on_response(id, p, f);
                }
            }
            Kind::Request => self.on_server_request(f),
            Kind::Notification => self.on_notification(f),
            _ => {}
        }
    }

    pub(super) fn on_response(&mut self, id: &RequestId, p: Pending, f: &Frame) {
        // A result only an owner that reads the frame gets, and that cannot
        // ask for input (input rounds are modern): not parsed.
        let unread = p.purpose == Purpose::Owner
            && f.class.kind != Kind::Error
            && self.era.state != EraState::Modern
            && self.owner.get(&p.root).is_some_and(|o| o.frame_only);
        let outcome = if unread { Ok(Value::Null) } else { response_outcome(f) };
        // -32022 to a request that carried the envelope: once more, with the
        // best version both sides speak.
        if p.enveloped
            && let Err(e) = &outcome
            && e.code == error_code::UNSUPPORTED_PROTOCOL_VERSION
            && p.purpose != Purpose::Probe
        {
            if let Some(p) = self.retry_version(id, p, e) {
                self.deliver(id, p, f, outcome);
            }
            return;
        }
        self.deliver(id, p, f, outcome);
    }

    /// Sends `p` again under a new id with the best mutual version; gives the
    /// request back when it cannot (no version in common, or retried already).
    pub(super) fn retry_version(&mut self, id: &RequestId, mut p: Pending, e: &ErrorObject) -> Option<Pending> {
        let supported = era::supported_versions(e);
        let requested = self.envelope.protocol_version.clone();
        let best = era::best_modern_version(&supported);
        match best {
            Some(v) if p.version_retries < MAX_VERSION_RETRIES => {
                self.note(era::retry_note(&p.method, &requested, &supported, &v));
                self.envelope.protocol_version = v;
                p.version_retries += 1;
                let new = self.alloc_id();
                self.resent(id, &new, &p.root, None);
                self.send_pending(new, p);
                None
            }
            _ => {
                self.note(era::unsupported_note(
                    &p.method,
                    &requested,
                    &supported,
                    p.version_retries,
                ));
                Some(p)
            }
        }
    }

    /// A response that ends (or continues) what its request was for.
    pub(super) fn deliver(&mut self, id: &RequestId, p: Pending, f: &Frame, outcome: Result<Value, ErrorObject>) {
        match p.purpose {
            Purpose::Probe => {
                let offered = match &self.era.state {
                    EraState::Probing { offered, .. } => offered.clone(),
                    _ => self.envelope.protocol_version.clone(),
                };
                self.settle_probe(ProbeVerdict::judge(&offered, Some(&outcome), ""));
            }
            Purpose::Initialize => self.on_initialize(f, outcome),
            Purpose::List(list) => self.list_answered(list),
            Purpose::Listen => {
                self.listens.remove(id);
                let outcome = match outcome {
                    Ok(v) => Outcome::Failed(Failure::Stopped(format!(
                        "the stream closed at once: {}",
                        crate::text::shorten(&v.to_string(), 200)
                    ))),
                    Err(e) => Outcome::Error(e),
                };
                self.finish(&p.root, id, outcome, None);
            }
            Purpose::Owner => {
                if let Ok(result) = &outcome
                    && mrtr::may_require_input(&p.method)
                    && self.era.state == EraState::Modern
                    && let Some(ir) = InputRequired::from_result(result)
                {
                    if let Some(o) = self.owner.get_mut(&p.root) {
                        o.last_input_result = Some(result.clone());
                    }
                    self.input_required(id, p, ir);
                    return;
                }
                self.finish(&p.root, id, Outcome::answered(outcome), None);
            }
            Purpose::Task(step) => self.task_answer(id, &p.root, step, outcome),
        }
    }

    pub(super) fn on_server_request(&mut self, f: &Frame) {
        let (Some(id), Some(method)) = (f.class.id.clone(), f.class.method.as_deref()) else {
            return;
        };
        if self.gone.is_some() {
            return;
        }
        let params = f.json().and_then(|v| v.get("params").cloned()).unwrap_or(Value::Null);
        match method {
            methods::PING => {
                if self.config.answer_ping {
                    self.respond(id, Ok(json!({})));
                }
            }
            methods::ROOTS_LIST => {
                let outcome = self.config.policy.answer(method, &params).map_err(|_| {
                    ErrorObject::new(
                        error_code::METHOD_NOT_FOUND,
                        "mcpscope does not expose roots in this session (pass --root to answer roots/list)",
                    )
                });
                self.respond(id, outcome);
            }
            methods::ELICITATION_CREATE | methods::SAMPLING_CREATE_MESSAGE if self.config.ask_user => {
                self.ask(method, params, QuestionOrigin::ServerRequest(id), Some(f.seq));
            }
            methods::ELICITATION_CREATE | methods::SAMPLING_CREATE_MESSAGE => {
                let declared = match method {
                    methods::ELICITATION_CREATE => self.config.policy.elicit.is_some(),
                    _ => self.config.policy.sample_reply.is_some(),
                };
                let outcome = if declared {
                    self.config
                        .policy
                        .answer(method, &params)
                        .map_err(|why| ErrorObject::new(error_code::INTERNAL_ERROR, why.to_string()))
                } else if method == methods::ELICITATION_CREATE {
                    Err(ErrorObject::new(
                        error_code::METHOD_NOT_FOUND,
                        "mcpscope did not declare the elicitation capability and cannot ask a person here",
                    ))
                } else {
                    Err(ErrorObject::new(
                        error_code::METHOD_NOT_FOUND,
                        "mcpscope did not declare the sampling capability and cannot run a model",
                    ))
                };
                self.respond(id, outcome);
            }
            other => self.respond(
                id,
                Err(ErrorObject::new(
                    error_code::METHOD_NOT_FOUND,
                    format!("Method not found: mcpscope does not answer {other}"),
                )),
            ),
        }
    }

    pub(super) fn on_notification(&mut self, f: &Frame) {
        let Some(method) = f.class.method.as_deref() else {
            return;
        };
        match method {
            subscriptions::ACKNOWLEDGED => {
                if let Some(v) = f.json()
                    && let Some(id) = subscriptions::subscription_id(&v)
                    && let Some(acked) = self.listens.get_mut(&id)
                    && !*acked
                {
                    *acked = true;
                    let honoured = v.pointer("/params/notifications").cloned().unwrap_or(Value::Null);
                    self.actions.push_back(Action::Listening { id, honoured });
                }
            }
            methods::CANCELLED => {
                // The server gave up on a request it asked us: stop asking the user.
                if let Some(id) = f
                    .json()
                    .and_then(|v| v.pointer("/params/requestId").and_then(RequestId::from_json))
                {
                    self.withdraw_questions(|o| matches!(o, QuestionOrigin::ServerRequest(r) if *r == id));
                }
            }
            _ => {
                if let Some(list) = methods::list_of_change(method)
                    && self.config.fetch_lists
                    && self.era.settled()
                    && self.lists_fetched.contains(&list)
                {
                    if self.refetching.contains_key(list) {
                        // The answer in flight may predate the change: one
                        // more fetch once it is in, however long the burst.
                        self.stale_lists.insert(list);
                    } else {
                        // Servers announce changes in bursts: wait for the
                        // burst to settle, then fetch once.
                        let due = self.now + LIST_CHANGED_SETTLE;
                        self.refetch_due.entry(list).or_insert(due);
                    }
                }
            }
        }
    }
}
