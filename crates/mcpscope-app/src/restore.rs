//! Tabs come back after a restart: which captures were open (a launched
//! server's own recording included), each tab's filter and selected row,
//! and which servers were running, offered as "Relaunch": a server is never
//! started on its own, since starting one runs a program with the user's
//! credentials.
//!
//! The tabs are saved with the app's state (`app.ron`, `0600`); servers
//! without their secret values, which come back from the keyring when the
//! launcher row kept them.

use crate::saved_server::SavedServer;
use egui::{RichText, Ui};
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

/// A restored tab's leftovers, kept in its [`crate::tabs::SessionView`].
#[derive(Clone, Debug, Default)]
pub struct Restored {
    /// Select this row once the capture is loaded.
    pub select_seq: Option<u64>,
    /// The server the tab ran: offered as "Relaunch".
    pub relaunch: Option<SavedServer>,
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
