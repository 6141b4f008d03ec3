//! Several sessions open at once, as tabs. Each session and every view of
//! it is one [`SessionView`] in a [`SessionTab`]; the app keeps them all in
//! one list, the tab on screen being the one its index names (a new
//! per-session panel is a field of `SessionView`, nothing more). A tab not
//! on screen keeps draining its session (a launched server or a followed
//! capture goes on growing).

use crate::composer::ComposerPanel;
use crate::inspection::Inspection;
use crate::panels::detail::DetailPanel;
use crate::panels::expert::ExpertPanel;
use crate::panels::log_view::LogPanel;
use crate::panels::notifications::NotificationsPanel;
use crate::panels::stats_view::StatsPanel;
use crate::panels::timeline::TimelinePanel;
use crate::restore::TabMemory;
use crate::saved_server::SavedServer;
use mcpscope_core::timeline::model::Severity;
use mcpscope_core::wire::message::RequestId;
use std::path::PathBuf;

/// The tabs of the right panel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RightTab {
    #[default]
    Frame,
    Compose,
}

/// One session and every view of it.
#[derive(Default)]
pub struct SessionView {
    pub inspection: Option<Inspection>,
    /// The right panel's tab (Frame or Compose) for this session.
    pub right_tab: RightTab,
    pub timeline: TimelinePanel,
    pub detail: DetailPanel,
    pub expert: ExpertPanel,
    pub composer: ComposerPanel,
    pub log: LogPanel,
    pub notifications: NotificationsPanel,
    pub stats: StatsPanel,
    /// A proxied session's held-frame queue and rules.
    pub intercept: crate::panels::intercept_view::InterceptView,
    pub app_view: crate::panels::app_view::AppView,
    /// The Load tab: its settings, its run and its figures are this
    /// session's (a new tab showed the previous tab's run).
    pub load: crate::panels::load_view::LoadPanel,
    /// A request replayed from the Frame tab, until its row comes (then it
    /// is selected and scrolled to, wherever Follow tail is).
    pub(crate) replayed: Option<RequestId>,
    /// The server launched here, until it answers (then it goes into Recent).
    pub(crate) unremembered: Option<SavedServer>,
    /// The last ping sent from the app, to show its round trip.
    pub ping: Option<RequestId>,
    /// Server requests already announced (to switch to the composer once).
    pub(crate) seen_server_requests: usize,
    pub(crate) marks_generation: u64,
    /// The followed capture's restarts the views have caught up with.
    pub(crate) resets_seen: u64,
    pub(crate) last_launch: Option<SavedServer>,
    /// Brought back from the last run: a selection to make, a server to offer.
    pub restored: Option<crate::restore::Restored>,
}

impl SessionView {
    /// Empties every view (a new session, or a followed capture that started over).
    pub fn reset_views(&mut self) {
        self.timeline.reset();
        self.expert.reset();
        self.log.reset();
        self.notifications.reset();
        self.stats.reset();
        self.detail = DetailPanel::default();
    }

    /// Takes the session out (to end it) and empties every view of it.
    pub fn end_session(&mut self) -> Option<Inspection> {
        let old = self.inspection.take();
        self.reset_views();
        self.composer.reset();
        // A run against the ended server ends with it, its figures too.
        self.load.stop();
        self.load = Default::default();
        self.ping = None;
        self.replayed = None;
        self.seen_server_requests = 0;
        self.resets_seen = 0;
        self.restored = None;
        old
    }
}

/// A tab: its title and its session's views.
#[derive(Default)]
pub struct SessionTab {
    pub title: String,
    pub view: SessionView,
}

impl SessionTab {
    pub fn titled(title: impl Into<String>) -> Self {
        Self {
            title: title.into(),
            ..Self::default()
        }
    }

    /// A new tab that opens on the same right-panel tab as `shown` (the tab on screen).
    pub fn beside(shown: &SessionView) -> Self {
        let mut tab = Self::default();
        tab.view.right_tab = shown.right_tab;
        tab
    }

    pub fn capture_path(&self) -> Option<&PathBuf> {
        self.view.inspection.as_ref().and_then(|i| i.capture_path.as_ref())
    }

    /// Its label: its title, and whether its session follows a proxied
    /// one or runs a server.
    pub fn label(&self) -> String {
        let title = match self.title.as_str() {
            "" => "New tab",
            t => t,
        };
        match &self.view.inspection {
            Some(i) if i.is_following() => format!("{title} (following)"),
            // A server that runs but whose handshake failed is not simply running.
            Some(i)
                if i.model.running()
                    && i.model
                        .handshake
                        .findings(false)
                        .iter()
                        .any(|(s, _)| *s == Severity::Error) =>
            {
                format!("{title} (running, handshake failed)")
            }
            Some(i) if i.model.running() => format!("{title} (running)"),
            _ => title.to_owned(),
        }
    }

    /// Whether closing it would stop a server mcpscope runs (a followed
    /// proxy session or a capture stops nothing).
    pub fn runs_a_server(&self) -> bool {
        self.view
            .inspection
            .as_ref()
            .is_some_and(|i| !i.is_following() && i.model.running())
    }

    /// The tab as it is saved, if it is worth bringing back (it has a
    /// capture, or ran a server).
    pub fn memory(&self, active: bool) -> Option<TabMemory> {
        let view = &self.view;
        let i = view.inspection.as_ref()?;
        let server = view
            .last_launch
            .as_ref()
            .filter(|_| i.model.running())
            .map(|s| crate::intercept_link::with_live_rules(s.without_secrets(), i.intercept.as_ref()));
        let selected_seq = view
            .timeline
            .selected
            .and_then(|row| i.model.store.get(row))
            .and_then(|r| r.seq());
        let memory = TabMemory {
            title: self.title.clone(),
            capture: i.capture_path.clone(),
            server,
            filter: view.timeline.filter.text.clone(),
            selected_seq,
            active,
        };
        (memory.capture.is_some() || memory.server.is_some()).then_some(memory)
    }
}

/// What the tab bar asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TabAction {
    Activate(usize),
    /// Close a tab; one whose server runs is asked about first.
    Close(usize),
    /// Close it, stopping its server (the user said so).
    CloseNow(usize),
    /// Keep it open after all.
    KeepOpen,
    /// Compare the tab on screen with another in the side-by-side diff.
    CompareWith(usize),
    New,
}

/// The tab strip (each tab with its close button, "+", the Tabs menu,
/// Compare with…) and, while a running tab is being closed, the question
/// whether to stop its server; what the user asked for.
pub fn tab_bar_ui(ui: &mut egui::Ui, tabs: &[SessionTab], active: usize, closing: Option<usize>) -> Option<TabAction> {
    let mut action = None;
    // One row whatever the number of tabs: the tabs scroll sideways,
    // their labels shortened, and the controls after them keep their room.
    // Top-aligned: the strip's scroll bar (when the tabs overflow) goes
    // under the tabs without moving the buttons beside them.
    ui.horizontal_top(|ui| {
        let controls = 230.0;
        let strip = (ui.available_width() - controls).max(120.0);
        // Labels shorten as tabs multiply, so every tab keeps its start
        // in view (at 1024 px seven tabs scrolled the first one's name
        // away); past the shortest, the strip scrolls and "Tabs" lists
        // all. The length is fitted to what the strip measured last frame.
        let budget_key = egui::Id::unique("tab-label-budget");
        let budget = ui.data(|d| d.get_temp::<usize>(budget_key)).unwrap_or(TAB_LABEL_MAX);
        let squeezed = tabs.len() as f32 * TAB_ROOM > strip;
        // A solid bar under the tabs: a floating one lay over them on
        // hover and took the clicks meant for a tab's close button.
        ui.spacing_mut().scroll = egui::style::ScrollStyle::thin();
        ui.spacing_mut().scroll.floating = false;
        let shown = egui::ScrollArea::horizontal()
            .id_salt("tab-strip")
            .max_width(strip)
            .auto_shrink([true, true])
            .show(ui, |ui| {
                ui.horizontal(|ui| {
                    for (idx, shown_tab) in tabs.iter().enumerate() {
                        ui.push_id(("tab", idx), |ui| {
                            let label = shown_tab.label();
                            let short = mcpscope_core::text::ellipsize(&label, budget);
                            let tab = ui.selectable_label(idx == active, &short);
                            let tab = if short != label { tab.on_hover_text(&label) } else { tab };
                            if tab.clicked() {
                                action = Some(TabAction::Activate(idx));
                            }
                            // When many tabs share the strip, only the one on
                            // screen keeps its close button: the others' names
                            // need the room (the Tabs menu closes any of them).
                            let close = (!squeezed || idx == active)
                                .then(|| ui.small_button("x").on_hover_text(format!("Close {label}")));
                            if close.as_ref().is_some_and(egui::Response::clicked) {
                                action = Some(TabAction::Close(idx));
                            }
                            // A tab that just came on screen (a launch, a
                            // capture opened) or was renamed is scrolled,
                            // close button included, into the strip's view.
                            if idx == active {
                                let key = egui::Id::unique("tab-strip-shown");
                                let shown = (idx, short.clone());
                                if ui.data(|d| d.get_temp::<(usize, String)>(key)).as_ref() != Some(&shown) {
                                    let rect = close.as_ref().map_or(tab.rect, |c| tab.rect.union(c.rect));
                                    ui.scroll_to_rect(rect, None);
                                    ui.data_mut(|d| d.insert_temp(key, shown));
                                }
                            }
                        });
                        ui.separator();
                    }
                });
            });
        let glyph = ui.fonts_mut(|f| f.glyph_width(&egui::TextStyle::Button.resolve(ui.style()), 'n'));
        let fitted = tab_label_budget(budget, shown.content_size.x, strip, tabs.len(), glyph);
        if fitted != budget {
            ui.data_mut(|d| d.insert_temp(budget_key, fitted));
            ui.ctx().request_repaint();
        }
        if ui.small_button("+").on_hover_text("New tab").clicked() {
            action = Some(TabAction::New);
        }
        if tabs.len() > 1 {
            ui.menu_button("Tabs", |ui| {
                for (idx, listed) in tabs.iter().enumerate() {
                    ui.horizontal(|ui| {
                        let label = listed.label();
                        if ui.selectable_label(idx == active, &label).clicked() {
                            action = Some(TabAction::Activate(idx));
                            ui.close();
                        }
                        if ui.small_button("x").on_hover_text(format!("Close {label}")).clicked() {
                            action = Some(TabAction::Close(idx));
                            ui.close();
                        }
                    });
                }
            })
            .response
            .on_hover_text("Every open tab, by its full name");
        }
        let others: Vec<usize> = (0..tabs.len())
            .filter(|&i| i != active && tabs[i].capture_path().is_some())
            .collect();
        let can = tabs[active].capture_path().is_some() && !others.is_empty();
        ui.add_enabled_ui(can, |ui| {
            ui.menu_button("Compare with…", |ui| {
                for i in others {
                    if ui.button(format!("with {}", tabs[i].label())).clicked() {
                        action = Some(TabAction::CompareWith(i));
                        ui.close();
                    }
                }
            })
            .response
            .on_disabled_hover_text("Open two sessions with captures to compare them side by side");
        });
    });
    if let Some(idx) = closing
        && idx < tabs.len()
    {
        let name = match tabs[idx].title.as_str() {
            "" => "this tab",
            t => t,
        };
        let modal = egui::Modal::new(egui::Id::unique("confirm-close-tab")).show(ui.ctx(), |ui| {
            ui.heading("Close a running session?");
            ui.label(format!(
                "{name}'s server is still running. Closing the tab stops it (stdin closed, then SIGTERM, then SIGKILL to its process group); its capture stays on disk."
            ));
            ui.horizontal(|ui| {
                if ui.button("Stop the server and close").clicked() {
                    action = Some(TabAction::CloseNow(idx));
                }
                if ui.button("Keep it open").clicked() {
                    action = Some(TabAction::KeepOpen);
                }
            });
        });
        if modal.should_close() && action.is_none() {
            action = Some(TabAction::KeepOpen);
        }
    }
    action
}

/// The room a tab with a short label and its close button takes: with
/// less than this each, only the tab on screen shows its close button.
const TAB_ROOM: f32 = 110.0;

/// The longest and shortest a tab's label gets, in characters.
const TAB_LABEL_MAX: usize = 28;
const TAB_LABEL_MIN: usize = 4;

/// The label length for the next frame: shorter by as much as the tabs
/// overflowed the strip (`content` against `width`, at `glyph` points a
/// character), longer while there is room for more, within the bounds.
pub(crate) fn tab_label_budget(budget: usize, content: f32, width: f32, tabs: usize, glyph: f32) -> usize {
    let tabs = tabs.max(1) as f32;
    let glyph = glyph.max(1.0);
    if content > width + 0.5 {
        let chars = ((content - width) / tabs / glyph).ceil().max(1.0) as usize;
        budget.saturating_sub(chars).max(TAB_LABEL_MIN)
    } else {
        let room = ((width - content) / tabs / glyph).floor() as usize;
        if room >= 2 {
            (budget + room - 1).min(TAB_LABEL_MAX)
        } else {
            budget
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_shorten_as_far_as_the_tabs_overflow_and_grow_back_with_room() {
        // Eight tabs 181 points too wide at 7 points a character: 4 characters less each.
        assert_eq!(tab_label_budget(28, 975.0, 794.0, 8, 7.0), 24);
        assert_eq!(
            tab_label_budget(6, 2000.0, 794.0, 8, 7.0),
            TAB_LABEL_MIN,
            "never below the shortest"
        );
        assert_eq!(tab_label_budget(12, 790.0, 794.0, 8, 7.0), 12, "fits: stays");
        assert_eq!(
            tab_label_budget(12, 400.0, 794.0, 8, 7.0),
            18,
            "room for seven more each: grows"
        );
        assert_eq!(
            tab_label_budget(27, 100.0, 794.0, 1, 7.0),
            TAB_LABEL_MAX,
            "never above the longest"
        );
        // Growing never overflows what it measured: the room it takes is a character short of the room there is.
        let grown = tab_label_budget(10, 500.0, 794.0, 7, 7.0);
        assert!(500.0 + (grown - 10) as f32 * 7.0 * 7.0 <= 794.0);
    }

    #[test]
    fn a_new_tab_opens_on_the_right_panel_tab_of_the_one_on_screen() {
        let shown = SessionView {
            right_tab: RightTab::Compose,
            ..SessionView::default()
        };
        assert_eq!(SessionTab::beside(&shown).view.right_tab, RightTab::Compose);
        assert_eq!(SessionTab::default().view.right_tab, RightTab::Frame);
    }

    #[test]
    fn a_label_says_what_the_tab_holds() {
        use mcpscope_core::timeline::model::{SessionModel, Source};
        assert_eq!(SessionTab::default().label(), "New tab");
        let mut tab = SessionTab::titled("opened.jsonl");
        tab.view.inspection = Some(Inspection::offline(SessionModel::new(Source::Capture {
            path: "opened.jsonl".into(),
            command_line: String::new(),
        })));
        assert_eq!(tab.label(), "opened.jsonl", "a capture neither follows nor runs");
        assert!(!tab.runs_a_server(), "closing it stops nothing");
    }
}
