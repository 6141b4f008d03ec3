//! The frame's work before drawing: every session drains what came within
//! its budget (the tab on screen and the others), the workers' results
//! are taken, and the views follow their session.

use super::*;

impl McpscopeApp {
    /// Applies waiting events; returns true when more work remains.
    pub fn pump(&mut self) -> bool {
        self.poll_dialog();
        self.poll_import();
        if let Some(said) = self.tokens.poll() {
            self.waiting_notes.push(said);
        }
        // The token store's notes wait while the status bar says something
        // more pressing (a launch that failed must not be hidden by them).
        if !self.waiting_notes.is_empty() && self.message.as_ref().is_none_or(|(s, _)| *s == Severity::Info) {
            self.message = Some(self.waiting_notes.remove(0));
        }
        if self.tokens.take_opened() {
            self.tokens.fill_kept(&mut self.launcher.recent);
        }
        self.poll_jobs();
        self.diff.poll();
        self.collections.drain();
        if let Some(said) = self.collections.said.take() {
            self.message = Some(match said {
                Ok(text) => (Severity::Info, text),
                Err(text) => (Severity::Error, format!("not saved: {text}")),
            });
        }
        if let Some(panels::verify_view::VerifyAction::Compare { recorded, live }) = self.verify.poll() {
            // The recording and the live session, side by side.
            self.diff.set(Side::A, recorded, &self.waker);
            self.diff.set(Side::B, live, &self.waker);
        }
        self.live.poll(&self.waker);
        self.session_mut().load.poll();
        if let Some(w) = &mut self.watch_client
            && let Some(outcome) = w.poll()
        {
            for line in self.remote_proxies.stop(&outcome.unwrapped) {
                outcome.lines.push(line);
            }
            for (ok, line) in self.remote_proxies.start(&outcome.remotes) {
                outcome.ok &= ok;
                outcome.lines.push(line);
            }
        }
        let mut more = self.pump_tabs_off_screen();
        self.live.open = self.tabs.iter().filter_map(|t| t.capture_path().cloned()).collect();
        let last_frame = Duration::from_secs_f32(self.ctx.input(|i| i.unstable_dt).clamp(0.0, 1.0));
        if let Some(o) = &mut self.opening {
            o.last_frame = last_frame;
            o.drain();
            if let LoadState::Failed(e) = o.load_state() {
                self.message = Some((Severity::Error, e));
                self.opening = None;
                self.select_on_open = None;
            } else if o.load_started() {
                if let Some(t) = self.open_trace {
                    eprintln!(
                        "open-trace: first rows after {:.0} ms ({} rows)",
                        t.elapsed().as_secs_f64() * 1e3,
                        o.model.store.len()
                    );
                }
                let opened = self.opening.take();
                // An imported file's tab is named after that file, not its private copy.
                let title = opened
                    .as_ref()
                    .and_then(|i| i.imported_from.as_ref().or(i.capture_path.as_ref()))
                    .and_then(|p| p.file_name())
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
                self.tab_for_new_session(title);
                // Opened for a click in Collections: its frame is selected once loaded.
                if let Some((path, seq)) = self.select_on_open.take() {
                    if opened.as_ref().and_then(|i| i.capture_path.as_ref()) == Some(&path) {
                        self.session_mut().restored = Some(crate::restore::Restored {
                            select_seq: Some(seq),
                            relaunch: None,
                        });
                    } else {
                        self.select_on_open = Some((path, seq));
                    }
                }
                self.session_mut().inspection = opened;
            }
        }
        self.pump_restore();
        let mut chat_actions = Vec::new();
        let title = self.tabs[self.active_tab].title.clone();
        let view = &mut self.tabs[self.active_tab].view;
        if let Some(i) = &view.inspection
            && i.resets() != view.resets_seen
        {
            view.resets_seen = i.resets();
            view.reset_views();
        }
        if let Some(i) = &mut view.inspection {
            let was_loading = i.loading();
            i.last_frame = last_frame;
            more |= i.drain();
            i.pump_apps();
            if was_loading && !i.loading() {
                if let Some(t) = self.open_trace.take() {
                    eprintln!(
                        "open-trace: opened after {:.0} ms ({} rows)",
                        t.elapsed().as_secs_f64() * 1e3,
                        i.model.store.len()
                    );
                }
                let path = i.capture_path.clone().unwrap_or_default();
                self.message = Some(match i.load_state() {
                    LoadState::Failed(e) => (Severity::Error, e),
                    _ if i.load_warnings.is_empty() => (Severity::Info, format!("opened {}", path.display())),
                    _ => (
                        Severity::Warning,
                        format!("opened {} ({})", path.display(), i.load_warnings.join("; ")),
                    ),
                });
            }
            // The lint worker wakes the UI itself when it finishes.
            view.expert
                .poll(&i.model, i.capture_path.as_ref(), !i.loading(), &self.waker);
            // The statistics worker too; what it measured of each tool shows in the composer.
            let generation = view.stats.generation;
            view.stats.poll(
                &i.model,
                i.capture_path.as_ref(),
                !i.loading(),
                &view.timeline.filter.text,
                &title,
                &self.waker,
            );
            if view.stats.generation != generation {
                view.composer.tool.tokens = view.stats.tool_tokens();
            }
            view.composer.sync(&i.model);
            view.composer.task_flavor = i.task_flavor();
            // A chat with a model, and models answering sampling requests,
            // move on whatever the composer shows.
            view.composer.chat.wake.get_or_insert_with(|| Arc::clone(&self.waker));
            chat_actions = view.composer.poll(i);
            // A question from the server brings the composer forward.
            if i.questions().len() > view.seen_server_requests {
                view.right_tab = RightTab::Compose;
            }
            view.seen_server_requests = i.questions().len();
            if view.expert.generation != view.marks_generation {
                view.marks_generation = view.expert.generation;
                view.timeline.finding_marks = view.expert.marks.clone();
                view.timeline.set_findings(&view.expert.findings);
            }
        }
        for a in chat_actions {
            self.compose(a);
        }
        self.show_replayed();
        self.remember_answered_launch();
        more || self.session().detail.busy()
    }

    /// Keeps the sessions of the tabs not on screen moving; true when one
    /// has more waiting.
    fn pump_tabs_off_screen(&mut self) -> bool {
        let mut more = false;
        for (idx, t) in self.tabs.iter_mut().enumerate() {
            if idx != self.active_tab
                && let Some(i) = &mut t.view.inspection
            {
                more |= i.drain();
                i.pump_apps();
            }
        }
        more
    }

    fn poll_jobs(&mut self) {
        let mut done = Vec::new();
        self.jobs.retain_mut(|(what, job)| match job.poll() {
            Some(outcome) => {
                done.push(
                    outcome
                        .map_err(|dead| anyhow::Error::new(dead).context(what.clone()))
                        .and_then(|r| r),
                );
                false
            }
            None => true,
        });
        for outcome in done {
            self.message = Some(match outcome {
                Ok(text) => (Severity::Ok, text),
                Err(e) => (Severity::Error, error_view::one_line(&e)),
            });
        }
    }

    /// Selects a replayed request's row once the session has recorded it.
    fn show_replayed(&mut self) {
        let (Some(id), Some(i)) = (&self.session().replayed, &self.session().inspection) else {
            return;
        };
        let store = &i.model.store;
        // It is among the newest rows: look back a little way only.
        let found = (store.len().saturating_sub(4096)..store.len()).rev().find(|&r| {
            store.get(r).is_some_and(|row| {
                row.lane() == mcpscope_core::timeline::store::Lane::Out
                    && row.kind() == mcpscope_core::wire::classify::Kind::Request
                    && row.id().as_ref() == Some(id)
            })
        });
        if let Some(row) = found {
            self.message = Some((Severity::Info, format!("replayed as row {row} (id {id})")));
            self.session_mut().replayed = None;
            self.apply(Command::ShowRow(row));
        }
    }

    /// Puts the launched server into Recent once it has answered, and drops
    /// it if it could not start or ended without a word.
    fn remember_answered_launch(&mut self) {
        let (Some(saved), Some(i)) = (&self.session().unremembered, &self.session().inspection) else {
            return;
        };
        let m = &i.model;
        if m.counts.results + m.counts.errors > 0 {
            // Recent keeps the server, not a session's breakpoints and rules.
            let saved = SavedServer {
                intercept_breaks: Vec::new(),
                intercept_faults: Vec::new(),
                ..saved.clone()
            };
            self.launcher.remember(&saved);
            self.session_mut().unremembered = None;
        } else if m.spawn_error.is_some() || m.exit.is_some() || m.closed {
            self.session_mut().unremembered = None;
        }
    }
}
