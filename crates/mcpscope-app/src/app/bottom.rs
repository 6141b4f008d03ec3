//! The bottom panel: its tabs (stderr, Expert, Notifications, Log,
//! Statistics, Load, Intercept, App) and what each shows.

use super::*;

impl McpscopeApp {
    pub(crate) fn bottom_ui(&mut self, ui: &mut Ui, commands: &mut Vec<Command>) {
        let Some(i) = &self.session().inspection else { return };
        // Every tab fills the panel's height: a panel keeps the size of its
        // content, so a short tab shrank it and its tabs jumped under the pointer.
        ui.set_min_height(ui.max_rect().height());
        // The Intercept and App tabs exist only for sessions that have them:
        // another tab's choice falls back to stderr here (and comes back with
        // that tab), so a body never speaks about a session it does not belong to.
        let has_intercept = i.intercept.is_some();
        let has_app = i.apps_advertised || !i.apps.views.is_empty();
        let mut shown = match self.bottom_tab {
            BottomTab::Intercept if !has_intercept => BottomTab::Stderr,
            BottomTab::App if !has_app => BottomTab::Stderr,
            t => t,
        };
        let before = shown;
        ui.horizontal(|ui| {
            let stderr = format!("stderr ({} lines)", i.model.stderr_rows.len());
            ui.selectable_value(&mut shown, BottomTab::Stderr, stderr);
            let (e, w) = (
                self.session().expert.count(Severity::Error),
                self.session().expert.count(Severity::Warning),
            );
            let expert = if e + w == 0 {
                RichText::new("Expert")
            } else {
                RichText::new(format!(
                    "Expert ({e} error{}, {w} warning{})",
                    if e == 1 { "" } else { "s" },
                    if w == 1 { "" } else { "s" }
                ))
                .color(theme::severity_color(if e > 0 {
                    Severity::Error
                } else {
                    Severity::Warning
                }))
            };
            ui.selectable_value(&mut shown, BottomTab::Expert, expert);
            let notes = format!("Notifications ({})", i.model.notification_rows.len());
            ui.selectable_value(&mut shown, BottomTab::Notifications, notes);
            let logs = format!("Log ({})", i.model.log_rows.len());
            ui.selectable_value(&mut shown, BottomTab::Log, logs);
            ui.selectable_value(&mut shown, BottomTab::Statistics, "Statistics");
            let load = if self.session().load.running() {
                "Load (running)"
            } else {
                "Load"
            };
            ui.selectable_value(&mut shown, BottomTab::Load, load);
            if let Some(link) = &i.intercept {
                let held = link.board.held.len();
                let text = if held > 0 {
                    RichText::new(format!("Intercept ({held} held)")).color(theme::RowKind::Touch.color())
                } else {
                    RichText::new("Intercept")
                };
                ui.selectable_value(&mut shown, BottomTab::Intercept, text);
            }
            if has_app {
                let open = i
                    .apps
                    .views
                    .iter()
                    .filter(|v| v.stage == app_host::Stage::Hosting)
                    .count();
                let text = if open > 0 {
                    RichText::new(format!("App ({open} open)")).color(theme::RowKind::App.color())
                } else {
                    RichText::new("App")
                };
                ui.selectable_value(&mut shown, BottomTab::App, text);
            }
        });
        if shown != before {
            self.bottom_tab = shown;
        }
        ui.separator();
        match shown {
            BottomTab::Stderr => self.console_ui(ui, commands),
            BottomTab::Expert => {
                let view = &mut self.tabs[self.active_tab].view;
                if let Some(i) = &view.inspection
                    && let Some(ExpertAction::SelectRows(rows)) = view.expert.ui(ui, &i.model)
                {
                    commands.push(Command::SelectRows(rows));
                }
            }
            BottomTab::Notifications => {
                let view = &mut self.tabs[self.active_tab].view;
                if let Some(i) = &view.inspection
                    && let Some(NotificationsAction::Select(row)) = view.notifications.ui(ui, &i.model)
                {
                    commands.push(Command::Select(row));
                }
            }
            BottomTab::Log => {
                let view = &mut self.tabs[self.active_tab].view;
                if let Some(i) = &view.inspection
                    && let Some(LogAction::Select(row)) = view.log.ui(ui, &i.model)
                {
                    commands.push(Command::Select(row));
                }
            }
            BottomTab::Statistics => {
                let tab = &mut self.tabs[self.active_tab];
                let view = &mut tab.view;
                let Some(i) = &view.inspection else { return };
                match view.stats.ui(ui, &view.expert, &tab.title) {
                    Some(StatsAction::Filter(text)) => commands.push(Command::Filter(None, text)),
                    Some(StatsAction::ShowMoment(at)) => {
                        if let Some(row) = panels::stats_view::first_row_at(&i.model, at) {
                            commands.push(Command::Select(row));
                        }
                    }
                    Some(StatsAction::Budget(budget)) => {
                        view.expert.options.context_budget = budget;
                        view.expert.request_run();
                    }
                    None => {}
                }
            }
            BottomTab::Intercept => {
                let view = &mut self.tabs[self.active_tab].view;
                let Some(i) = view.inspection.as_mut() else {
                    return;
                };
                let Some(link) = i.intercept.as_mut() else {
                    ui.weak(
                        "This session was not started with breakpoints or fault rules (mcpscope proxy --intercept).",
                    );
                    return;
                };
                // A held frame's time counts up on screen.
                if !link.board.held.is_empty() {
                    ui.ctx().request_repaint_after(Duration::from_millis(200));
                }
                let age = link.board_at.elapsed();
                let action = egui::ScrollArea::vertical().id_salt("intercept").show(ui, |ui| {
                    view.intercept.ui(
                        ui,
                        &link.board,
                        age,
                        link.said.as_ref(),
                        link.lost.as_deref(),
                        link.record.as_deref(),
                    )
                });
                match action.inner {
                    Some(panels::intercept_view::InterceptAction::OpenRecord(path)) => {
                        commands.push(Command::OpenCapture(path));
                    }
                    Some(a) => {
                        if let Some(request) = a.request() {
                            link.send(request);
                        }
                    }
                    None => {}
                }
            }
            BottomTab::App => {
                let selected = self.selected_ui_call();
                let view = &mut self.tabs[self.active_tab].view;
                let Some(i) = view.inspection.as_mut() else {
                    return;
                };
                let action = egui::ScrollArea::vertical().id_salt("apps").show(ui, |ui| {
                    view.app_view.ui(ui, &i.apps, selected.as_ref(), i.apps_advertised)
                });
                match action.inner {
                    Some(panels::app_view::AppAction::Close(view)) => i.apps.close(view),
                    Some(panels::app_view::AppAction::OpenInBrowser(url)) => {
                        if let Err(e) = mcpscope_core::transport::auth::browser::open(&url) {
                            self.message = Some((Severity::Warning, format!("{e}; open {url} yourself")));
                        }
                    }
                    Some(panels::app_view::AppAction::CopyUrl(url)) => ui.ctx().copy_text(url),
                    Some(panels::app_view::AppAction::OpenForCall(call)) => {
                        i.open_app(&call.tool, call.arguments, None, Some(call.result));
                    }
                    Some(panels::app_view::AppAction::Theme(t)) => i.apps.set_theme(&t),
                    Some(panels::app_view::AppAction::Grant(p, on)) => {
                        i.apps.granted.retain(|g| *g != p);
                        if on {
                            i.apps.granted.push(p);
                        }
                    }
                    None => {}
                }
            }
            BottomTab::Load => {
                let setup = self.load_setup();
                egui::ScrollArea::vertical().id_salt("load").show(ui, |ui| {
                    if let Some(panels::load_view::LoadAction::OpenCapture(path)) =
                        self.tabs[self.active_tab].view.load.ui(ui, setup.as_ref(), &self.waker)
                    {
                        commands.push(Command::OpenCapture(path));
                    }
                });
            }
        }
    }

    pub(crate) fn console_ui(&mut self, ui: &mut Ui, commands: &mut Vec<Command>) {
        let Some(i) = &self.session().inspection else { return };
        let m = &i.model;
        ui.weak("servers log here; click a line to find it on the timeline");
        let row_h = ui.text_style_height(&egui::TextStyle::Monospace);
        egui::ScrollArea::vertical()
            .id_salt("console")
            .auto_shrink([false, false])
            .stick_to_bottom(true)
            .show_rows(ui, row_h, m.stderr_rows.len(), |ui, range| {
                for pos in range {
                    let row_idx = m.stderr_rows[pos];
                    let Some(row) = m.store.get(row_idx) else { continue };
                    let text = format!("{:>9.3}  {}", row.at().as_secs_f64(), row.text());
                    let resp = ui.add(
                        egui::Label::new(RichText::new(mcpscope_core::text::shorten(&text, 400)).monospace())
                            .sense(egui::Sense::click())
                            .truncate(),
                    );
                    if resp.clicked() {
                        commands.push(Command::Select(row_idx));
                    }
                }
            });
    }

    /// The timeline's selected row, when it is a `tools/call` (or its
    /// answer) of a tool with a View, with the call's input and result.
    pub(crate) fn selected_ui_call(&self) -> Option<panels::app_view::SelectedCall> {
        let i = self.session().inspection.as_ref()?;
        let row = self.session().timeline.selected?;
        let r = i.model.store.get(row)?;
        let (request_row, answer_row) = match r.answer() {
            Some(a) => (row, a),
            None => (r.link()?.0, row),
        };
        let parse =
            |n: usize| -> Option<serde_json::Value> { serde_json::from_slice(i.model.store.get(n)?.raw()).ok() };
        let request = parse(request_row)?;
        if request.get("method").and_then(serde_json::Value::as_str)
            != Some(mcpscope_core::protocol::methods::TOOLS_CALL)
        {
            return None;
        }
        let name = request["params"]["name"].as_str()?;
        let tools = i.listed_tools();
        let tool = app_host::HostedApps::ui_tool(&tools, name)?.clone();
        let result = parse(answer_row)?.get("result")?.clone();
        Some(panels::app_view::SelectedCall {
            tool,
            arguments: request["params"]
                .get("arguments")
                .cloned()
                .unwrap_or_else(|| serde_json::json!({})),
            result,
        })
    }
}
