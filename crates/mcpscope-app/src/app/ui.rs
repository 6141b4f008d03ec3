//! The frame's drawing: the panels laid out around the timeline, each
//! returning what it asks for as [`Command`]s (applied after drawing).

use super::*;

/// How soon the composer wants a frame while a field's text settles.
pub(super) fn composer_debounce() -> Duration {
    Duration::from_millis(50)
}

pub(super) fn format_duration(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m{:02}s", s / 3600, s / 60 % 60, s % 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

impl McpscopeApp {
    /// The session on screen: its timeline, or what to do when there is none.
    fn central_ui(&mut self, ui: &mut Ui, commands: &mut Vec<Command>) {
        let Some(i) = &self.session().inspection else {
            ui.vertical_centered(|ui| {
                ui.add_space(ui.available_height() / 3.0);
                ui.heading("mcpscope");
                ui.label("Launch a server on the left, open a capture (File, Open capture…), or import servers from a config file.");
            });
            return;
        };
        if let Some(si) = i.sign_in() {
            sign_in_banner(ui, si);
        }
        self.handshake_strip(ui);
        ui.separator();
        let tab = &mut self.tabs[self.active_tab];
        let view = &mut tab.view;
        let Some(i) = &view.inspection else { return };
        let tools: Vec<String> = view.composer.lists.tools.iter().map(|t| t.name.clone()).collect();
        let transport = match i.target() {
            Some(mcpscope_core::transport::target::Target::Http(h)) => h.kind.as_str(),
            Some(_) => "stdio",
            None if i.model.remote => "http",
            None => "stdio",
        };
        let era = match i.era().era() {
            Some(mcpscope_core::protocol::era::Era::Legacy) => Some("legacy"),
            Some(mcpscope_core::protocol::era::Era::Modern) => Some("modern"),
            None => None,
        };
        let cx = panels::timeline::FilterContext {
            facts: mcpscope_core::filter::rows::SessionFacts {
                session: Some(&tab.title),
                transport: Some(transport),
                era,
                findings: None,
                conversations: Some(&i.model.conversation_rows),
            },
            prefs: &mut self.filter_prefs,
            tools: &tools,
        };
        if let Some(TimelineAction::Select(r)) = view.timeline.ui(ui, &i.model, cx) {
            // A row picked on the timeline is shown, even over the composer.
            commands.push(Command::ShowRow(r));
        }
    }

    /// Draws the frame, then applies what it asked for.
    pub(super) fn frame_ui(&mut self, ui: &mut Ui) {
        let mut commands = Vec::new();
        let window_height = ui.max_rect().height();
        egui::Panel::top("menu").show(ui, |ui| self.menu_bar(ui, &mut commands));
        let mut tab_action = None;
        egui::Panel::top("tabs").show(ui, |ui| {
            tab_action = crate::tabs::tab_bar_ui(ui, &self.tabs, self.active_tab, self.closing)
        });
        egui::Panel::bottom("status").show(ui, |ui| self.status_bar(ui));
        let running = self.running();
        // The side panels give way to the timeline: at any window size it
        // keeps TIMELINE_MIN (the lifelines and the stderr lane), from
        // 1024x700 up; the panels share what is left, 2 to 3.
        // The launcher may widen into the right panel's share when dragged
        // (its rows are wide at 1024 px); the right panel takes what is left.
        let side_room = (ui.available_width() - TIMELINE_MIN).max(400.0);
        let left_max = (side_room - RIGHT_MIN).max(180.0);
        let left_default = (side_room * 0.4).max(180.0);
        egui::Panel::left("launcher")
            .resizable(true)
            .default_size(300.0_f32.min(left_default))
            .max_size(left_max)
            .show(ui, |ui| {
                egui::ScrollArea::vertical().id_salt("launcher-scroll").show(ui, |ui| {
                    match self.live.ui(ui) {
                        Some(LiveAction::Open(s)) => commands.push(Command::OpenLive(s)),
                        Some(LiveAction::Stop(s)) => commands.push(Command::StopProxied(s)),
                        Some(LiveAction::Remove(s)) => commands.push(Command::RemoveProxied(s)),
                        None => {}
                    }
                    ui.separator();
                    if let Some(a) = self.launcher.ui(ui, running) {
                        commands.push(match a {
                            LauncherAction::Launch(s) => Command::Launch(s),
                            LauncherAction::Stop => Command::Stop,
                            LauncherAction::Restart => Command::Restart,
                            LauncherAction::PickCwd => Command::Pick(DialogPurpose::WorkingDirectory),
                            LauncherAction::PickConfig => Command::Pick(DialogPurpose::ImportConfig),
                            LauncherAction::ImportConfig(path) => Command::ImportConfig(path),
                            LauncherAction::WatchInClient => Command::WatchInClient,
                        });
                    }
                });
            });
        let right_max = (ui.available_width() - TIMELINE_MIN).max(RIGHT_MIN);
        if self.console_open && self.session().inspection.is_some() {
            let (min, wanted, max) = bottom_panel_sizes(self.bottom_tab, ui.available_height(), window_height);
            let mut panel = egui::Panel::bottom("console")
                .resizable(true)
                .default_size(wanted)
                .min_size(min)
                .max_size(max);
            // A tab that needs room (Load's plots, Intercept's held frame)
            // opens the panel to its size once, when it is chosen; after
            // that the divider is the user's, both ways.
            if self.bottom_sized_for != Some(self.bottom_tab) {
                self.bottom_sized_for = Some(self.bottom_tab);
                if self.bottom_height < wanted {
                    panel = panel.exact_size(wanted);
                }
            }
            let shown = panel.show(ui, |ui| self.bottom_ui(ui, &mut commands));
            self.bottom_height = shown.response.rect.height();
        }
        egui::Panel::right("detail")
            .resizable(true)
            .default_size(460.0_f32.min(right_max))
            .max_size(right_max)
            .show(ui, |ui| {
                self.server_info_ui(ui, &mut commands);
                ui.separator();
                let asks = self.session().inspection.as_ref().map_or(0, |i| i.questions().len());
                ui.horizontal(|ui| {
                    ui.selectable_value(&mut self.session_mut().right_tab, RightTab::Frame, "Frame");
                    let compose = if asks > 0 {
                        RichText::new(format!("Compose ({asks} waiting)")).color(theme::WARN)
                    } else {
                        RichText::new("Compose")
                    };
                    ui.selectable_value(&mut self.session_mut().right_tab, RightTab::Compose, compose);
                });
                ui.separator();
                match self.session().right_tab {
                    RightTab::Frame => {
                        let view = &mut self.tabs[self.active_tab].view;
                        if let Some(i) = &view.inspection {
                            match view.detail.ui(ui, &i.model) {
                                Some(DetailAction::Select(r)) => commands.push(Command::Select(r)),
                                Some(DetailAction::Filter(join, cond)) => commands.push(Command::Filter(join, cond)),
                                Some(DetailAction::Replay(method, params)) => {
                                    commands.push(Command::Replay(method, params));
                                }
                                Some(DetailAction::EditReplay(method, params)) => {
                                    view.composer.load_raw_request(&method, params.as_ref());
                                    view.right_tab = RightTab::Compose;
                                }
                                Some(DetailAction::SaveToCollection(method, params)) => {
                                    let label = crate::composer::history::describe(&Outgoing::Request {
                                        method: method.clone(),
                                        params: params.clone(),
                                        id: None,
                                    });
                                    let step = mcpscope_core::collection::save::NewStep {
                                        method,
                                        params,
                                        notification: false,
                                    };
                                    commands.push(Command::SaveToCollection(label, step));
                                }
                                None => {}
                            }
                        }
                    }
                    RightTab::Compose => match &mut self.tabs[self.active_tab].view {
                        SessionView { inspection: None, .. } => {
                            ui.weak("Launch a server to compose requests.");
                        }
                        SessionView {
                            inspection: Some(i),
                            composer,
                            ..
                        } => {
                            egui::ScrollArea::vertical().id_salt("composer-scroll").show(ui, |ui| {
                                for a in composer.ui(ui, i) {
                                    commands.push(Command::Compose(a));
                                }
                            });
                        }
                    },
                }
            });
        egui::CentralPanel::default().show(ui, |ui| {
            if let Some(server) = self.session().restored.as_ref().and_then(|r| r.relaunch.as_ref()) {
                match crate::restore::relaunch_offer_ui(ui, server) {
                    Some(crate::restore::OfferAction::Relaunch) => commands.push(Command::Relaunch),
                    Some(crate::restore::OfferAction::Dismiss) => commands.push(Command::DismissRelaunch),
                    None => {}
                }
            }
            self.central_ui(ui, &mut commands)
        });
        let session_capture = self.session().inspection.as_ref().and_then(|i| i.capture_path.clone());
        self.picker_ui(ui.ctx());
        match self.diff.window(ui.ctx(), session_capture.is_some()) {
            Some(DiffAction::Pick(side)) => commands.push(Command::Pick(DialogPurpose::DiffSide(side))),
            Some(DiffAction::UseSession(side)) => {
                if let Some(p) = session_capture.clone() {
                    self.diff.set(side, p, &self.waker);
                }
            }
            None => {}
        }
        if self.verify.open {
            // The launcher's form first (what the user is editing), then the
            // recent servers it is not; each says which it is.
            let same = |a: &SavedServer, b: &SavedServer| a.command_line() == b.command_line() && a.env == b.env;
            let mut servers: Vec<(SavedServer, &str)> = Vec::new();
            for (s, from) in self
                .launcher
                .form
                .to_saved()
                .into_iter()
                .map(|s| (s, "the launcher's form"))
                .chain(self.launcher.recent.iter().cloned().map(|s| (s, "recent")))
            {
                if !servers.iter().any(|(t, _)| same(t, &s)) {
                    servers.push((s, from));
                }
            }
            if let Some(server) = self.verify.window(ui.ctx(), session_capture.as_deref(), &servers)
                && let Some(capture) = session_capture.clone()
            {
                self.verify.start(capture, server, self.tokens.share(), &self.waker);
            }
        }
        if self.collections.open {
            use panels::collections_view::CollectionsAction;
            match self.collections.window(ui.ctx()) {
                Some(CollectionsAction::ChooseFolder) => commands.push(Command::Pick(DialogPurpose::CollectionsFolder)),
                Some(CollectionsAction::SaveElsewhere) => {
                    commands.push(Command::Pick(DialogPurpose::SaveToCollection));
                }
                Some(CollectionsAction::SaveInto(path)) => commands.push(Command::SaveStep(path)),
                Some(CollectionsAction::ShowFrame { capture, seq }) => {
                    commands.push(Command::ShowCapturedFrame(capture, seq));
                }
                None => {}
            }
        }
        if let Some(w) = &mut self.watch_client
            && !w.window(ui.ctx(), &self.waker)
        {
            self.watch_client = None;
        }
        if let Some(a) = tab_action {
            self.apply_tab_action(a);
        }
        for c in commands {
            self.apply(c);
        }
    }
}

/// A server's capabilities in one line: each capability, with the flags that
/// are on (`{"listChanged": false}` says nothing, so `tools`, not `tools ()`).
pub(super) fn capability_summary(caps: &serde_json::Value) -> String {
    let parts: Vec<String> = caps
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| {
            let flags: Vec<&str> = v
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(_, b)| b.as_bool() == Some(true))
                .map(|(n, _)| n.as_str())
                .collect();
            if flags.is_empty() {
                k.clone()
            } else {
                format!("{k} ({})", flags.join(", "))
            }
        })
        .collect();
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(" · ")
    }
}

/// While signing in: where to authorize (the browser was opened on it),
/// with a copy button and a way to stop waiting; afterwards, the state of
/// the authorization or why it failed.
fn sign_in_banner(ui: &mut Ui, si: &sign_in::SignInState) {
    if let Some(url) = si.pending_url() {
        ui.horizontal_wrapped(|ui| {
            ui.label(
                RichText::new("🔑 Signing in:")
                    .color(theme::RowKind::Auth.color())
                    .strong(),
            );
            ui.label("authorize in the browser that opened, or open");
            ui.add(egui::Label::new(RichText::new(&url).monospace()).truncate());
            if ui.button("Copy URL").clicked() {
                ui.ctx().copy_text(url.clone());
            }
            if ui.button("Cancel").clicked() {
                si.cancel();
            }
        });
        ui.separator();
    } else if si.in_progress() {
        ui.horizontal(|ui| {
            ui.spinner();
            ui.label(RichText::new("🔑 Signing in…").color(theme::RowKind::Auth.color()));
        });
        ui.separator();
    } else {
        let summary = si.summary();
        if summary == "not authorized" && si.failed().is_none() {
            // The server has not asked: nothing to say.
            return;
        }
        ui.horizontal_wrapped(|ui| {
            match &si.failed() {
                Some(e) => ui.label(RichText::new(format!("🔑 Sign-in failed: {e}")).color(theme::ERROR)),
                None => ui.label(RichText::new(format!("🔑 {summary}")).color(theme::RowKind::Auth.color())),
            };
            if ui
                .button("Forget tokens")
                .on_hover_text("The next request the server refuses signs in again (the browser opens)")
                .clicked()
            {
                si.forget_tokens();
            }
        });
        ui.separator();
    }
}

#[cfg(test)]
mod capability_tests {
    use super::*;

    #[test]
    fn the_window_icon_is_the_packaged_png() {
        let icon = window_icon();
        assert_eq!((icon.width, icon.height), (256, 256));
    }

    #[test]
    fn capabilities_name_only_the_flags_that_are_on() {
        let caps = serde_json::json!({"tools": {"listChanged": false}, "resources": {"subscribe": true, "listChanged": true}, "logging": {}});
        assert_eq!(
            capability_summary(&caps),
            "tools · resources (subscribe, listChanged) · logging"
        );
        assert_eq!(capability_summary(&serde_json::json!({})), "none");
    }
}
