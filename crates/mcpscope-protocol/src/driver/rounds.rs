//! Answering `input_required` (2026-07-28 multi round-trip): the next round
//! of a chain is sent, or the chain stops and its request ends.

use super::*;

impl Driver {
    pub(super) fn input_required(&mut self, id: &RequestId, p: Pending, ir: InputRequired) {
        let root = p.root.clone();
        if let Some(o) = self.owner.get_mut(&root) {
            o.rounds.push((id.clone(), ir.clone()));
        }
        let (no, round) = self.chains.round(&root, id, &p.method, p.params.clone(), &ir);
        self.note(format!(
            "conversation {no}: {} needs input ({}): {}",
            p.method,
            ir.requests.len(),
            ir.requests.iter().map(|r| r.summary()).collect::<Vec<_>>().join("; ")
        ));
        if round >= mrtr::MAX_ROUNDS {
            let why = format!("gave up after {} input_required rounds", mrtr::MAX_ROUNDS);
            self.note(format!("conversation {no}: {why}"));
            self.finish_stopped(&root, id, why);
            return;
        }
        for r in &ir.requests {
            let answer = match r.method.as_str() {
                methods::ELICITATION_CREATE | methods::SAMPLING_CREATE_MESSAGE if self.config.ask_user => {
                    self.ask(
                        &r.method,
                        r.params.clone(),
                        QuestionOrigin::Input {
                            root: root.clone(),
                            key: r.key.clone(),
                        },
                        None,
                    );
                    continue;
                }
                methods::ROOTS_LIST if self.config.policy.roots.is_none() && self.config.ask_user => {
                    // The app always has roots; a client without any says so.
                    Ok(json!({"roots": []}))
                }
                m => self.config.policy.answer(m, &r.params).map_err(|e| e.to_string()),
            };
            match answer {
                Ok(v) => {
                    if let Some(ready) = self.chains.record(&root, r.key.clone(), v) {
                        self.send_next_round(&root, ready);
                    }
                }
                Err(why) => {
                    self.note(format!("conversation {no}: {why}"));
                    self.finish_stopped(&root, id, why);
                    return;
                }
            }
        }
        if ir.requests.is_empty()
            && let Some(ready) = self.chains.ready(&root)
        {
            self.send_next_round(&root, ready);
        }
    }

    /// Every input of the current round is answered: send the request again
    /// with `inputResponses`, the echoed `requestState` and a new id.
    pub(super) fn send_next_round(&mut self, root: &RequestId, ready: chains::Ready) {
        let Some(o) = self.owner.get(root) else { return };
        let old = o.current.clone();
        let new = self.alloc_id();
        let chains::Ready {
            no,
            method,
            params,
            round,
            echoed_state,
        } = ready;
        self.note(format!(
            "conversation {no}: {method} sent again as #{new} with inputResponses{} (round {round})",
            if echoed_state {
                " and the echoed requestState"
            } else {
                ""
            },
        ));
        self.resent(&old, &new, root, Some(no));
        let pending = Pending {
            purpose: Purpose::Owner,
            root: root.clone(),
            method,
            params: Some(params),
            timeout: self.config.request_timeout,
            enveloped: self.era.state == EraState::Modern,
            version_retries: 0,
        };
        self.chains.sent(root, new.clone());
        self.send_pending(new, pending);
    }

    pub(super) fn finish_stopped(&mut self, root: &RequestId, last: &RequestId, why: String) {
        self.withdraw_questions(|o| matches!(o, QuestionOrigin::Input { root: r, .. } if r == root));
        let outcome = self
            .owner
            .get(root)
            .and_then(|o| o.last_input_result.clone())
            .map(Outcome::Result)
            .unwrap_or(Outcome::Failed(Failure::Stopped(why.clone())));
        self.finish(root, last, outcome, Some(why));
    }
}
