//! The app's tabs: which one is on screen, opening and closing them, and
//! keeping the ones not on screen draining (the tabs themselves are
//! [`crate::tabs`]).

use super::McpscopeApp;
use crate::tabs::{SessionTab, TabAction};

impl McpscopeApp {
    /// Shows tab `idx`.
    pub fn activate_tab(&mut self, idx: usize) {
        if idx < self.tabs.len() {
            self.active_tab = idx;
        }
    }

    /// Makes room for a new session: the tab on screen if it shows none,
    /// else a new tab. Either way the views start empty.
    pub(crate) fn tab_for_new_session(&mut self, title: String) {
        if self.session().inspection.is_some() {
            self.tabs.push(SessionTab::beside(self.session()));
            let idx = self.tabs.len() - 1;
            self.activate_tab(idx);
        }
        self.replace_inspection();
        self.tabs[self.active_tab].title = title;
    }

    /// Closes tab `idx`; its session ends off the UI thread.
    pub fn close_tab(&mut self, idx: usize) {
        if idx >= self.tabs.len() {
            return;
        }
        if self.tabs.len() == 1 {
            self.replace_inspection();
            self.tabs[0].title = String::new();
            return;
        }
        if idx == self.active_tab {
            let next = if idx + 1 < self.tabs.len() { idx + 1 } else { idx - 1 };
            self.activate_tab(next);
        }
        let closed = self.tabs.remove(idx);
        if idx < self.active_tab {
            self.active_tab -= 1;
        }
        if let Some(i) = closed.view.inspection {
            // Dropping a live session shuts its server down and may wait.
            crate::job::detach("shutdown", move || drop(i));
        }
    }

    /// The tab showing `capture`, if one does.
    pub fn tab_showing(&self, capture: &std::path::Path) -> Option<usize> {
        self.tabs
            .iter()
            .position(|t| t.capture_path().is_some_and(|p| p == capture))
    }

    /// A tab's label: its title, and whether it follows or runs a session.
    pub fn tab_label(&self, idx: usize) -> String {
        self.tabs[idx].label()
    }

    pub(crate) fn apply_tab_action(&mut self, a: TabAction) {
        match a {
            TabAction::Activate(i) => self.activate_tab(i),
            TabAction::Close(i) if self.tabs.get(i).is_some_and(SessionTab::runs_a_server) => self.closing = Some(i),
            TabAction::Close(i) | TabAction::CloseNow(i) => {
                self.closing = None;
                self.close_tab(i);
            }
            TabAction::KeepOpen => self.closing = None,
            TabAction::New => {
                self.tabs.push(SessionTab::beside(self.session()));
                self.activate_tab(self.tabs.len() - 1);
            }
            TabAction::CompareWith(other) => self.compare_tabs(self.active_tab, other),
        }
    }

    /// Puts two open tabs' captures side by side in the diff window.
    pub fn compare_tabs(&mut self, a: usize, b: usize) {
        let capture = |i: usize| self.tabs.get(i).and_then(SessionTab::capture_path).cloned();
        match (capture(a), capture(b)) {
            (Some(pa), Some(pb)) => {
                self.diff.a = Some(pa);
                self.diff.set(crate::panels::diff_view::Side::B, pb, &self.waker);
            }
            _ => {
                self.message = Some((
                    mcpscope_core::timeline::model::Severity::Warning,
                    "both tabs need a capture to compare".into(),
                ))
            }
        }
    }
}
