//! Tabs come back after a restart: which captures were open (a launched
//! server's own recording included), each tab's filter and selected row,
//! and which servers were running, offered as "Relaunch": a server is never
//! started on its own, since starting one runs a program with the user's
//! credentials.
//!
//! The tabs are saved with the app's state (`app.ron`, `0600`); servers
//! without their secret values, which come back from the keyring when the
//! launcher row kept them.

use crate::panels::launcher::SavedServer;
use crate::tabs::SessionView;
use crate::{Command, McpscopeApp};
use egui::{RichText, Ui};
use mcpscope_core::timeline::model::Severity;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::path::PathBuf;

/// One tab as it is saved.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TabMemory {
    pub title: String,
    /// The capture it showed (for a launched server: its recording).
    pub capture: Option<PathBuf>,
    /// The server it ran when the app closed (secret values left out).
    pub server: Option<SavedServer>,
    /// The filter as typed.
    pub filter: String,
    /// The selected row, by its record's sequence number.
    pub selected_seq: Option<u64>,
    /// The tab on screen.
    pub active: bool,
}

impl TabMemory {
    fn of(title: &str, view: &SessionView, active: bool) -> Option<TabMemory> {
        let i = view.inspection.as_ref()?;
        let server = view
            .last_launch
            .as_ref()
            .filter(|_| i.model.running())
            .map(|s| crate::intercept_link::with_live_rules(SavedServer::without_secrets(s), i));
        let selected_seq = view
            .timeline
            .selected
            .and_then(|row| i.model.store.get(row))
            .and_then(|r| r.seq());
        let memory = TabMemory {
            title: title.to_owned(),
            capture: i.capture_path.clone(),
            server,
            filter: view.timeline.filter.text.clone(),
            selected_seq,
            active,
        };
        (memory.capture.is_some() || memory.server.is_some()).then_some(memory)
    }
}

/// What a restored tab still has to do once its capture is loaded.
#[derive(Default)]
pub(crate) struct Restoring {
    /// Tabs not opened yet.
    pub queue: VecDeque<TabMemory>,
    /// The tab whose capture is being opened now.
    pub opening: Option<TabMemory>,
    /// The tab to show once every tab is back.
    pub active: Option<usize>,
}

/// A restored tab's leftovers, kept in its [`SessionView`].
#[derive(Clone, Debug, Default)]
pub struct Restored {
    /// Select this row once the capture is loaded.
    pub select_seq: Option<u64>,
    /// The server the tab ran: offered as "Relaunch".
    pub relaunch: Option<SavedServer>,
}

impl McpscopeApp {
    /// Every tab worth bringing back, in order.
    pub fn tab_memories(&self) -> Vec<TabMemory> {
        self.tabs
            .iter()
            .enumerate()
            .filter_map(|(idx, t)| {
                let view = if idx == self.active_tab { &self.session } else { &t.view };
                TabMemory::of(&t.title, view, idx == self.active_tab)
            })
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
        if let Some(r) = &self.session.restored
            && let Some(seq) = r.select_seq
            && let Some(i) = &self.session.inspection
            && !i.loading()
        {
            if let Some(row) = i.model.store.row_of_seq(seq) {
                self.apply(Command::Select(row));
            }
            if let Some(r) = &mut self.session.restored {
                r.select_seq = None;
            }
        }
        if self.opening.is_some() {
            return;
        }
        if let Some(memory) = self.restoring.opening.take() {
            // The capture before it has landed in the tab on screen, or failed to open.
            let landed = self
                .session
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
        self.session.timeline.filter.set_text(memory.filter.clone());
        self.session.restored = Some(Restored {
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
        self.session.restored = Some(Restored {
            select_seq: None,
            relaunch: Some(server),
        });
        if memory.active {
            self.restoring.active = Some(self.active_tab);
        }
    }

    /// The server to relaunch in the tab on screen, with its kept values.
    pub(crate) fn relaunch(&mut self) {
        let Some(mut server) = self.session.restored.as_mut().and_then(|r| r.relaunch.take()) else {
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

/// What the relaunch offer asks for.
pub(crate) enum OfferAction {
    Relaunch,
    Dismiss,
}

/// "This tab ran NAME": Relaunch or Dismiss.
pub(crate) fn relaunch_offer_ui(ui: &mut Ui, server: &SavedServer) -> Option<OfferAction> {
    let mut action = None;
    ui.horizontal_wrapped(|ui| {
        ui.label(RichText::new(format!("⟲ This tab ran {} when mcpscope closed.", server.name)).strong());
        if ui
            .button("Relaunch")
            .on_hover_text(format!("Start it again: {}", server.command_line()))
            .clicked()
        {
            action = Some(OfferAction::Relaunch);
        }
        if ui.button("Dismiss").clicked() {
            action = Some(OfferAction::Dismiss);
        }
    });
    ui.separator();
    action
}
