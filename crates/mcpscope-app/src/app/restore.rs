//! Bringing the last run's tabs back, one capture after the other (the
//! saved form of a tab and the relaunch offer are [`crate::restore`]).

use super::{Command, McpscopeApp};
use crate::restore::{Restored, TabMemory};
use mcpscope_core::timeline::model::Severity;

impl McpscopeApp {
    /// Every tab worth bringing back, in order.
    pub fn tab_memories(&self) -> Vec<TabMemory> {
        self.tabs
            .iter()
            .enumerate()
            .filter_map(|(idx, t)| t.memory(idx == self.active_tab))
            .collect()
    }

    /// Brings `tabs` back: each capture opens in a tab of its own (one after
    /// the other), with its filter, selection and relaunch offer.
    pub fn restore_tabs(&mut self, tabs: Vec<TabMemory>) {
        if tabs.is_empty() {
            return;
        }
        self.restoring.active = None;
        self.restoring.queue = tabs.into();
        self.message = Some((Severity::Info, "bringing back the tabs of the last run…".into()));
    }

    /// Whether tabs are still being brought back.
    pub fn restoring_tabs(&self) -> bool {
        !self.restoring.queue.is_empty() || self.restoring.opening.is_some()
    }

    /// Starts the next tab to bring back once nothing is opening; applies a
    /// loaded tab's selection. Called every frame.
    pub(crate) fn pump_restore(&mut self) {
        if let Some(r) = &self.session().restored
            && let Some(seq) = r.select_seq
            && let Some(i) = &self.session().inspection
            && !i.loading()
        {
            if let Some(row) = i.model.store.row_of_seq(seq) {
                self.apply(Command::Select(row));
            }
            if let Some(r) = &mut self.session_mut().restored {
                r.select_seq = None;
            }
        }
        if self.opening.is_some() {
            return;
        }
        if let Some(memory) = self.restoring.opening.take() {
            // The capture before it has landed in the tab on screen, or failed to open.
            let landed = self
                .session()
                .inspection
                .as_ref()
                .is_some_and(|i| i.capture_path.is_some() && i.capture_path == memory.capture);
            if landed {
                self.adopt_memory(memory);
            } else {
                self.offer_without_capture(memory);
            }
        }
        let Some(memory) = self.restoring.queue.pop_front() else {
            if let Some(active) = self.restoring.active.take() {
                self.activate_tab(active);
                self.message = Some((Severity::Info, format!("{} tab(s) brought back", self.tabs.len())));
            }
            return;
        };
        match memory.capture.clone().filter(|p| p.is_file()) {
            Some(path) => {
                self.apply(Command::OpenCapture(path));
                self.restoring.opening = Some(memory);
            }
            None => self.offer_without_capture(memory),
        }
    }

    /// The tab on screen just got `memory`'s capture: its filter, selection and offer.
    fn adopt_memory(&mut self, memory: TabMemory) {
        self.tabs[self.active_tab].title = memory.title.clone();
        self.session_mut().timeline.filter.set_text(memory.filter.clone());
        self.session_mut().restored = Some(Restored {
            select_seq: memory.selected_seq,
            relaunch: memory.server,
        });
        if memory.active {
            self.restoring.active = Some(self.active_tab);
        }
    }

    /// A tab whose capture is gone: only its relaunch offer, if it had a server.
    fn offer_without_capture(&mut self, memory: TabMemory) {
        let Some(server) = memory.server else {
            if let Some(path) = memory.capture {
                self.message = Some((
                    Severity::Warning,
                    format!("{}: not brought back ({} is gone)", memory.title, path.display()),
                ));
            }
            return;
        };
        self.tab_for_new_session(memory.title.clone());
        self.session_mut().restored = Some(Restored {
            select_seq: None,
            relaunch: Some(server),
        });
        if memory.active {
            self.restoring.active = Some(self.active_tab);
        }
    }

    /// The server to relaunch in the tab on screen, with its kept values.
    pub(crate) fn relaunch(&mut self) {
        let Some(mut server) = self.session_mut().restored.as_mut().and_then(|r| r.relaunch.take()) else {
            return;
        };
        self.tokens.fill_kept(std::slice::from_mut(&mut server));
        let missing: Vec<&str> = server
            .env
            .iter()
            .chain(&server.headers)
            .filter(|(_, v)| v.is_empty())
            .map(|(k, _)| k.as_str())
            .collect();
        if missing.is_empty() {
            self.apply(Command::Launch(Box::new(server)));
            return;
        }
        // Values that were not kept: the launcher asks for them.
        self.message = Some((
            Severity::Warning,
            format!(
                "{} needs {} again (not kept in the keyring): fill them in the launcher, then Launch",
                server.name,
                missing.join(", ")
            ),
        ));
        self.launcher.form = crate::panels::launcher::LaunchForm::from_saved(&server);
    }
}
