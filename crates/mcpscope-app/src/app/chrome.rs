//! The window's chrome around the panels: the menu bar, the status bar,
//! the handshake strip and the server's card.

use super::ui::{capability_summary, format_duration};
use super::*;

impl McpscopeApp {
    pub(crate) fn menu_bar(&mut self, ui: &mut Ui, commands: &mut Vec<Command>) {
        egui::MenuBar::new().ui(ui, |ui| {
            ui.menu_button("File", |ui| {
                if ui.button("Open capture…").clicked() {
                    commands.push(Command::Pick(DialogPurpose::OpenCapture));
                    ui.close();
                }
                if ui
                    .add_enabled(self.session().inspection.is_some(), egui::Button::new("Save capture…"))
                    .clicked()
                {
                    commands.push(Command::Pick(DialogPurpose::SaveCapture));
                    ui.close();
                }
                let capture = self.session().inspection.as_ref().and_then(|i| i.capture_path.as_ref());
                if ui
                    .add_enabled(capture.is_some(), egui::Button::new("Export as HAR…"))
                    .on_hover_text("HAR 1.2 for browser devtools and HTTP debuggers (mcpscope export --format har)")
                    .clicked()
                {
                    commands.push(Command::Pick(DialogPurpose::ExportHar));
                    ui.close();
                }
                if ui.button("Import servers from config…").clicked() {
                    commands.push(Command::Pick(DialogPurpose::ImportConfig));
                    ui.close();
                }
                let capture = self.session().inspection.as_ref().and_then(|i| i.capture_path.clone());
                if ui
                    .add_enabled(capture.is_some(), egui::Button::new("Mock this capture"))
                    .on_hover_text("Serve the open capture again as a stdio server (mcpscope mock), in a new tab")
                    .clicked()
                    && let Some(path) = capture
                {
                    commands.push(Command::MockCapture(path));
                    ui.close();
                }
                if ui
                    .add_enabled(
                        self.session()
                            .inspection
                            .as_ref()
                            .is_some_and(|i| i.capture_path.is_some()),
                        egui::Button::new("Verify against server…"),
                    )
                    .on_hover_text("Send the capture's requests again to a server and compare every answer")
                    .clicked()
                {
                    self.verify.open = true;
                    ui.close();
                }
                if ui
                    .button("Collections…")
                    .on_hover_text("Test files (*.mcp.yaml): run them, see each step's verdict, save requests to them")
                    .clicked()
                {
                    self.collections.open = true;
                    ui.close();
                }
                if ui.button("Compare two captures…").clicked() {
                    self.diff.open = true;
                    ui.close();
                }
                ui.separator();
                if ui.button("Quit").clicked() {
                    ui.ctx().send_viewport_cmd(egui::ViewportCommand::Close);
                }
            });
            ui.menu_button("View", |ui| {
                ui.checkbox(&mut self.console_open, "Bottom panel (stderr, Expert)");
                if ui.button("Expert: lint findings").clicked() {
                    self.console_open = true;
                    self.bottom_tab = BottomTab::Expert;
                    ui.close();
                }
            });
            ui.separator();
            if let Some(i) = &self.session().inspection {
                ui.label(RichText::new(mcpscope_core::text::ellipsize(i.model.command_line(), 100)).monospace());
            }
        });
    }

    pub(crate) fn status_bar(&self, ui: &mut Ui) {
        // What the user just did comes first and whole, on a line of its own
        // (after the session's figures and path it was cut at the window's edge).
        if let Some((sev, text)) = &self.message {
            ui.add(egui::Label::new(RichText::new(text).color(theme::severity_color(*sev))).wrap())
                .on_hover_text(text);
        }
        ui.horizontal(|ui| {
            match &self.session().inspection {
                None => {
                    ui.weak("No session");
                }
                Some(i) => {
                    let m = &i.model;
                    match i.followed() {
                        Some(followed) if followed.is_following() => {
                            ui.label(
                                RichText::new("live: a proxied session, followed as it is written").color(theme::OK),
                            );
                        }
                        Some(followed) => {
                            let ended = followed.ended.as_ref().map(|s| s.label()).unwrap_or_default();
                            ui.label(RichText::new(format!("offline capture ({ended})")).strong());
                        }
                        None if !m.is_live() => {
                            ui.label(RichText::new("offline capture").strong());
                        }
                        None => {}
                    }
                    if let Some(problem) = i.followed().and_then(|f| f.problem.as_ref()) {
                        ui.label(RichText::new(problem).color(theme::WARN));
                    }
                    if let Some(e) = &m.spawn_error {
                        ui.label(RichText::new(format!("could not start: {e}")).color(theme::ERROR));
                    } else if let Some(pid) = m.pid {
                        ui.label(format!("pid {pid}"));
                    } else if m.remote {
                        ui.label("remote server (HTTP)");
                    }
                    if let Some(up) = i.uptime() {
                        // An offline capture is not up: it says how long its session ran.
                        let what = if m.is_live() { "uptime" } else { "the session ran" };
                        ui.label(format!("{what} {}", format_duration(up)));
                    }
                    match (m.exit, m.running()) {
                        (Some((_, status)), _) => {
                            let color = if status.success() { theme::OK } else { theme::ERROR };
                            ui.label(RichText::new(format!("server {status}")).color(color));
                        }
                        (None, true) => {
                            ui.label(RichText::new("running").color(theme::OK));
                        }
                        _ => {}
                    }
                    let c = &m.counts;
                    ui.separator();
                    ui.label(format!(
                        "{} req · {} notif · {} results · {} errors · {} isError · {} not JSON-RPC · {} stderr",
                        c.requests, c.notifications, c.results, c.errors, c.tool_errors, c.not_jsonrpc, c.stderr
                    ));
                    if let Some(t) = i.traces() {
                        let status = t.status();
                        if !status.is_empty() {
                            ui.separator();
                            let color = if status.starts_with("traces not sent") {
                                theme::WARN
                            } else {
                                theme::OK
                            };
                            ui.label(RichText::new(status).color(color));
                        }
                    }
                    if let LoadState::Loading(done) = i.load_state() {
                        ui.separator();
                        ui.spinner();
                        ui.label(format!(
                            "loading capture: {:.0} % ({} rows)",
                            done * 100.0,
                            i.model.store.len()
                        ));
                    }
                    // The path last: it is cut (whole on hover) before anything else is.
                    if let Some(p) = &i.capture_path {
                        ui.separator();
                        let path = format!("capture: {}", p.display());
                        ui.add(egui::Label::new(RichText::new(&path).weak()).truncate())
                            .on_hover_text(path);
                    }
                }
            }
        });
    }

    pub(crate) fn handshake_strip(&self, ui: &mut Ui) {
        let Some(i) = &self.session().inspection else { return };
        let m = &i.model;
        let handshake = |ui: &mut Ui| {
            ui.strong("Handshake");
            for (sev, text) in m.handshake.findings(m.closed || m.exit.is_some()) {
                ui.label(RichText::new(text).color(theme::severity_color(sev)));
            }
            // A wait shows how long it has lasted (ticking while nothing arrives).
            if let Some(w) = i.initialize_waited() {
                ui.weak(format!("{:.1} s", w.as_secs_f64()));
                ui.ctx().request_repaint_after(std::time::Duration::from_millis(100));
            }
        };
        ui.horizontal_wrapped(|ui| {
            use mcpscope_core::driver::EraState;
            use mcpscope_core::protocol::era::EraChoice;
            // An offline capture has no driver: its handshake rows are judged as recorded.
            if !i.has_pilot() {
                handshake(ui);
                return;
            }
            let era = i.era();
            match &era.state {
                EraState::Probing { offered, .. } => {
                    ui.strong("Era");
                    ui.label(format!("{}: probing with server/discover ({offered})…", era.choice));
                }
                EraState::Modern => {
                    ui.strong("Era");
                    let sev = if era.failure.is_some() {
                        Severity::Error
                    } else if era.discovery.is_some() {
                        Severity::Ok
                    } else {
                        Severity::Warning
                    };
                    ui.label(
                        RichText::new(format!("modern ({}: {})", era.choice, era.reason))
                            .color(theme::severity_color(sev)),
                    );
                    if let Some(d) = &era.discovery
                        && !d.missing_fields.is_empty()
                    {
                        ui.label(
                            RichText::new(format!("server/discover lacks {}", d.missing_fields.join(", ")))
                                .color(theme::ERROR),
                        );
                    }
                }
                EraState::Unsettled | EraState::Initializing { .. } | EraState::Legacy => {
                    if era.choice != EraChoice::Legacy && m.is_live() {
                        ui.strong("Era");
                        ui.label(format!("legacy ({}: {})", era.choice, era.reason));
                        ui.separator();
                    }
                    handshake(ui);
                }
            }
        });
    }

    pub(crate) fn server_info_ui(&mut self, ui: &mut Ui, commands: &mut Vec<Command>) {
        let Some(i) = &self.session().inspection else { return };
        let Some(h) = i.model.handshake.judged() else {
            match &i.era().discovery {
                Some(d) => {
                    ui.horizontal_wrapped(|ui| {
                        ui.strong(d.server_name());
                        ui.label(format!("modern: {}", d.supported_versions.join(", ")));
                    });
                    if let Some(caps) = &d.capabilities {
                        ui.label(format!(
                            "capabilities: {}",
                            caps.as_object()
                                .map(|o| o.keys().cloned().collect::<Vec<_>>().join(" · "))
                                .unwrap_or_default()
                        ));
                    }
                    if let Some(text) = &d.instructions {
                        egui::CollapsingHeader::new("instructions")
                            .default_open(false)
                            .show(ui, |ui| {
                                ui.add(egui::Label::new(text.as_str()).wrap().selectable(true));
                            });
                    }
                }
                None => {
                    ui.weak("No initialize or server/discover result yet.");
                }
            }
            return;
        };
        ui.horizontal_wrapped(|ui| {
            ui.strong(h.server_name());
            if let Some(v) = &h.answered {
                ui.label(format!("protocol {v}"));
            }
            ui.label(format!(
                "initialize took {}",
                panels::timeline::format_latency(h.latency)
            ));
            if ui
                .add_enabled(i.model.running(), egui::Button::new("Ping").small())
                .clicked()
            {
                commands.push(Command::Ping);
            }
            if let Some(id) = &self.session().ping {
                match i.model.response_to(id).and_then(|r| i.model.store.get(r)) {
                    Some(r) => {
                        let rtt = r
                            .link()
                            .map(|(_, l)| panels::timeline::format_latency(l))
                            .unwrap_or_default();
                        if r.kind() == mcpscope_core::wire::classify::Kind::Error {
                            ui.label(RichText::new(format!("ping answered with an error ({rtt})")).color(theme::ERROR));
                        } else {
                            ui.label(format!("ping {rtt}"));
                        }
                    }
                    None => {
                        ui.weak("ping…");
                    }
                }
            }
        });
        if let Some(caps) = &h.capabilities {
            ui.label(format!("capabilities: {}", capability_summary(caps)));
        }
        if let Some(text) = &h.instructions {
            egui::CollapsingHeader::new("instructions")
                .default_open(false)
                .show(ui, |ui| {
                    ui.add(egui::Label::new(text.as_str()).wrap().selectable(true));
                });
        }
    }
}
