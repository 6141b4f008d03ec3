//! What the panels ask for while drawing, as [`Command`]s, and their
//! application once the frame is drawn (rerun's `UICommand`s): launching,
//! opening, saving, selecting, sending what the composer composed.

use super::*;

/// Side effects asked for while drawing.
#[derive(Debug)]
pub(crate) enum Command {
    Launch(Box<SavedServer>),
    Stop,
    Restart,
    OpenCapture(PathBuf),
    /// Serve this capture with `mcpscope mock` in a new tab.
    MockCapture(PathBuf),
    SaveCapture(PathBuf),
    /// Write the open capture as HAR 1.2 there.
    ExportHar(PathBuf),
    ImportConfig(PathBuf),
    Pick(DialogPurpose),
    Select(usize),
    /// Select a row and bring the Frame tab forward (a click on the timeline).
    ShowRow(usize),
    /// Select several rows at once (a lint finding's frames); the first is shown.
    SelectRows(Vec<usize>),
    Compose(ComposerAction),
    /// Send a recorded request again (the Frame tab's Replay); its row is
    /// selected when it comes.
    Replay(String, Option<serde_json::Value>),
    Ping,
    /// Open a proxied session in a tab, following it while it runs.
    OpenLive(Box<ListedSession>),
    StopProxied(Box<ListedSession>),
    RemoveProxied(Box<ListedSession>),
    /// Ask before wrapping the imported config for its client.
    WatchInClient,
    /// Apply a condition as the timeline's filter (no join), or join it to the filter.
    Filter(Option<mcpscope_core::filter::Join>, String),
    /// Start the server a restored tab ran.
    Relaunch,
    DismissRelaunch,
    /// Save to collection: a request (its label, and what it sends) waits in
    /// the Collections window for the file it goes into.
    SaveToCollection(String, mcpscope_core::collection::save::NewStep),
    /// Write the waiting step into this test file.
    SaveStep(PathBuf),
    /// Show a frame of a capture (a test run's): its tab if open, else
    /// opened in a new one; the frame is selected once it is loaded.
    ShowCapturedFrame(PathBuf, u64),
}

impl McpscopeApp {
    /// Starts `saved` in the tab on screen, replacing its session.
    fn launch_here(&mut self, saved: SavedServer) {
        let auth = match saved.oauth.auth_config() {
            Ok(a) => a,
            Err(e) => {
                self.message = Some((
                    Severity::Error,
                    format!("{} not launched: {}", saved.name, error_view::one_line(&e)),
                ));
                return;
            }
        };
        // Through an intercepting proxy: the same server, started by
        // `mcpscope proxy`, whose control socket the Intercept tab attaches to.
        let intercepted = match intercept_link::through_proxy(&saved, self.mcpscope_binary.as_deref()) {
            Ok(t) => t,
            Err(e) => {
                self.message = Some((Severity::Error, format!("{} not launched: {e}", saved.name)));
                return;
            }
        };
        self.replace_inspection();
        // Into Recent once the server has answered: a launch that failed is
        // not a server to come back to.
        self.session_mut().unremembered = Some(saved.clone());
        self.tokens.keep_launcher_values(&saved);
        let target = intercepted
            .as_ref()
            .map_or_else(|| saved.target(), |i| i.target.clone());
        self.session_mut().inspection = Some(Inspection::launch_signing_in(
            target,
            &saved.protocol_version,
            saved.era_choice(),
            auth,
            mcpscope_core::transport::auth::Interaction::Browser,
            inspection::AppServices {
                tokens: &self.tokens,
                otlp_endpoint: self.otlp_endpoint.as_deref(),
                apps: !saved.text_only,
            },
            Some(Arc::clone(&self.waker)),
        ));
        if let (Some(via), Some(i)) = (intercepted, self.tabs[self.active_tab].view.inspection.as_mut()) {
            let waker: job::Wake = Arc::clone(&self.waker);
            let mut link = intercept_link::InterceptLink::start(&via.socket, Some(waker));
            link.record = Some(via.record);
            i.intercept = Some(link);
            i.keep_own_proxy(via.own_proxy);
        }
        self.tabs[self.active_tab].title = saved.name.clone();
        self.message = Some((Severity::Info, format!("launched {}", saved.command_line())));
        self.session_mut().last_launch = Some(saved);
    }

    pub(crate) fn apply(&mut self, cmd: Command) {
        match cmd {
            Command::Launch(saved) => {
                // A running session keeps its tab; the new one gets its own.
                self.tab_for_new_session(saved.name.clone());
                self.launch_here(*saved);
            }
            Command::MockCapture(path) => {
                let me = match self
                    .mcpscope_binary
                    .clone()
                    .map_or_else(panels::watch_client::this_binary, Ok)
                {
                    Ok(me) => me,
                    Err(e) => {
                        self.message = Some((Severity::Error, error_view::one_line(&e)));
                        return;
                    }
                };
                let file = path
                    .file_name()
                    .map_or_else(|| path.display().to_string(), |f| f.to_string_lossy().into_owned());
                let saved = SavedServer {
                    name: format!("mock of {file}"),
                    program: me,
                    args: vec!["mock".into(), path.display().to_string()],
                    protocol_version: mcpscope_core::protocol::handshake::DEFAULT_VERSION.to_owned(),
                    // Probe first: a recording of either era answers as it was recorded.
                    era: "auto".into(),
                    ..SavedServer::default()
                };
                self.tab_for_new_session(saved.name.clone());
                self.launch_here(saved);
            }
            Command::Stop => {
                if let Some(i) = &mut self.session_mut().inspection {
                    i.stop();
                }
            }
            Command::Restart => {
                // What the launcher shows, edits included (else what ran last).
                let form = self.launcher.form.to_saved();
                let edited = match (&form, &self.session().last_launch) {
                    (Ok(f), Some(last)) => f.target_differs(last),
                    _ => false,
                };
                let again = form.ok().or_else(|| self.session().last_launch.clone());
                // An intercepted session restarts with its breakpoints and rules.
                let again = match (again, &self.session().inspection) {
                    (Some(s), Some(i)) => Some(intercept_link::with_live_rules(s, i.intercept.as_ref())),
                    (again, _) => again,
                };
                if let Some(s) = again {
                    let composer = std::mem::take(&mut self.session_mut().composer);
                    self.launch_here(s);
                    self.session_mut().composer = composer;
                    self.session_mut().composer.restart();
                    if edited && let Some(s) = &self.session().last_launch {
                        self.message = Some((
                            Severity::Info,
                            format!("restarted with the launcher's edits: {}", s.command_line()),
                        ));
                    }
                }
            }
            Command::OpenCapture(path) => {
                if std::env::var_os("MCPSCOPE_OPEN_TRACE").is_some() {
                    self.open_trace = Some(std::time::Instant::now());
                }
                // Read on a worker: the rows appear as they are read.
                self.opening = Some(Inspection::open_capture_in_background(
                    &path,
                    Some(Arc::clone(&self.waker)),
                ));
                self.message = Some((Severity::Info, format!("opening {}…", path.display())));
            }
            Command::SaveCapture(path) => match self.session().inspection.as_ref().and_then(|i| i.capture_path.clone())
            {
                Some(from) => {
                    let to = path.clone();
                    self.background(format!("saving the capture to {}", path.display()), move || {
                        Inspection::save_capture(&from, &to).map(|()| format!("capture saved to {}", to.display()))
                    });
                }
                None => self.message = Some((Severity::Warning, "nothing to save yet".into())),
            },
            Command::ExportHar(path) => match self.session().inspection.as_ref().and_then(|i| i.capture_path.clone()) {
                Some(from) => {
                    let to = path.clone();
                    self.background(format!("exporting HAR to {}", path.display()), move || {
                        use mcpscope_core::record::output_file::{WriteWithError, write_with};
                        // Written as the capture is read, through the one rule for
                        // output files, as `mcpscope export` does.
                        let mut n = 0;
                        let written = write_with(&to, |out| {
                            n = mcpscope_core::interop::write_har(&from, env!("CARGO_PKG_VERSION"), out, &mut |_| {})?;
                            Ok::<(), mcpscope_core::interop::ExportError>(())
                        });
                        match written {
                            Ok(()) => Ok(format!("{n} HAR entries written to {}", to.display())),
                            Err(WriteWithError::Content(e)) => Err(anyhow::Error::new(e)),
                            Err(WriteWithError::Output(e)) => Err(anyhow::Error::new(e)),
                        }
                    });
                }
                None => self.message = Some((Severity::Warning, "nothing to export yet".into())),
            },
            Command::ImportConfig(path) => self.import_config(&path),
            Command::Pick(purpose) => self.pick(purpose),
            Command::SelectRows(rows) => {
                if let Some(&first) = rows.first() {
                    self.apply(Command::Select(first));
                }
                self.session_mut().timeline.highlighted = rows;
            }
            Command::Compose(action) => self.compose(action),
            Command::Ping => {
                if let Some(i) = &mut self.session_mut().inspection {
                    self.session_mut().ping = i.send(inspection::Outgoing::Request {
                        method: methods::PING.into(),
                        params: None,
                        id: None,
                    });
                }
            }
            Command::OpenLive(s) => match self.tab_showing(&s.capture_path) {
                Some(idx) => self.activate_tab(idx),
                None => {
                    self.tab_for_new_session(s.record.name.clone());
                    self.message = Some((
                        Severity::Info,
                        format!("following {} ({})", s.record.name, s.capture_path.display()),
                    ));
                    self.session_mut().inspection = Some(Inspection::follow(*s, Some(Arc::clone(&self.waker))));
                }
            },
            Command::StopProxied(s) => {
                let name = s.record.name.clone();
                self.background(format!("stopping {name}"), move || {
                    session_index::request_stop(&s)
                        .map(|()| format!("asked the proxy of {name} to stop"))
                        .with_context(|| format!("cannot stop {name}"))
                });
            }
            Command::RemoveProxied(s) => {
                if let Some(idx) = self.tab_showing(&s.capture_path) {
                    self.close_tab(idx);
                }
                let name = s.record.name.clone();
                self.background(format!("removing {name}"), move || {
                    session_index::remove_session(&s)
                        .map(|()| format!("removed the session {name}"))
                        .with_context(|| format!("cannot remove {name}"))
                });
            }
            Command::WatchInClient => {
                if let Some((path, servers, _)) = &self.launcher.imported {
                    let names = servers.iter().map(|s| s.name.clone()).collect();
                    self.watch_client = Some(WatchClientDialog::new(path.clone(), names));
                }
            }
            Command::ShowRow(row) => {
                self.session_mut().right_tab = RightTab::Frame;
                self.apply(Command::Select(row));
            }
            Command::Replay(method, params) => self.replay(method, params),
            Command::Relaunch => self.relaunch(),
            Command::DismissRelaunch => self.session_mut().restored = None,
            Command::SaveToCollection(label, step) => self.offer_to_collection(label, step),
            Command::SaveStep(path) => self.collections.save(path),
            Command::ShowCapturedFrame(capture, seq) => self.show_captured_frame(capture, seq),
            Command::Filter(join, cond) => {
                let text = match join {
                    None => cond,
                    Some(j) => mcpscope_core::filter::combine(&self.session().timeline.filter.text, j, &cond),
                };
                self.session_mut().timeline.filter.set_text(text);
            }
            Command::Select(row) => {
                let view = self.session_mut();
                view.timeline.highlighted.clear();
                view.timeline.select(row);
                if let Some(i) = &view.inspection {
                    view.detail.show_row(&i.model, Some(row));
                }
            }
        }
    }

    /// Sends a recorded request again; `pump` selects its row when it comes.
    fn replay(&mut self, method: String, params: Option<serde_json::Value>) {
        let Some(i) = &mut self.session_mut().inspection else {
            return;
        };
        if !i.model.running() {
            self.message = Some((
                Severity::Warning,
                "not replayed: this session's server is not running (Relaunch starts it again)".into(),
            ));
            return;
        }
        let out = Outgoing::Request {
            method,
            params,
            id: None,
        };
        let id = i.send(out.clone());
        self.session_mut().composer.sent(out, id.clone());
        self.session_mut().replayed = id;
    }

    /// Carries out what the composer asked for.
    pub(super) fn compose(&mut self, action: ComposerAction) {
        let Some(i) = &mut self.session_mut().inspection else {
            self.message = Some((Severity::Warning, "no session to send to".into()));
            return;
        };
        let live = i.model.running();
        match action {
            ComposerAction::Inject { toward, bytes } => match i.intercept.as_mut() {
                Some(link) => {
                    if let Some(request) = (panels::intercept_view::InterceptAction::Inject { toward, bytes }).request()
                    {
                        link.send(request);
                    }
                }
                None => {
                    self.message = Some((Severity::Warning, "this session's proxy does not intercept".into()));
                }
            },
            ComposerAction::ReadSkillFile(_) if !live => {
                self.session_mut()
                    .composer
                    .skill_read_not_sent("the server is not running");
                self.message = Some((Severity::Warning, "the server is not running".into()));
            }
            ComposerAction::ChatCall(run, _) if !live => self.session_mut().composer.chat.tool_sent(run, None),
            ComposerAction::ChatCall(run, out) => {
                let id = i.send(out);
                self.session_mut().composer.chat.tool_sent(run, id);
            }
            ComposerAction::RecordModel(exchange) => i.record_model(*exchange),
            ComposerAction::PickChatRecording => self.pick(DialogPurpose::ChatRecording),
            ComposerAction::SaveToCollection(label, step) => self.offer_to_collection(label, step),
            ComposerAction::Send(_) | ComposerAction::RunTask(_) | ComposerAction::Listen(_) if !live => {
                self.message = Some((Severity::Warning, "the server is not running".into()));
            }
            ComposerAction::Send(out) => {
                let id = i.send(out.clone());
                // A tool with a View: the View opens in the browser beside the call.
                if let (
                    Some(id),
                    inspection::Outgoing::Request {
                        method,
                        params: Some(p),
                        ..
                    },
                ) = (&id, &out)
                    && method == mcpscope_core::protocol::methods::TOOLS_CALL
                    && i.apps_advertised
                    && let Some(name) = p.get("name").and_then(serde_json::Value::as_str)
                {
                    let tools = i.listed_tools();
                    if let Some(tool) = app_host::HostedApps::ui_tool(&tools, name).cloned() {
                        let arguments = p.get("arguments").cloned().unwrap_or_else(|| serde_json::json!({}));
                        i.open_app(&tool, arguments, Some(id.clone()), None);
                        self.bottom_tab = BottomTab::App;
                        self.console_open = true;
                    }
                }
                self.session_mut().composer.sent(out, id);
            }
            ComposerAction::Complete(out) => {
                if let Some(id) = i.send(out) {
                    self.session_mut().composer.completion_sent(id);
                }
            }
            ComposerAction::ReadSkillFile(out) => match i.send(out) {
                Some(id) => self.session_mut().composer.skill_read_sent(id),
                None => self.session_mut().composer.skill_read_not_sent("no session to send to"),
            },
            ComposerAction::RunTask(params) => {
                if let Some(id) = i.run_task(params.clone()) {
                    self.session_mut().composer.task_started(params, id);
                }
            }
            ComposerAction::CancelTask(id) => i.cancel_task(&id),
            ComposerAction::Listen(filter) => {
                let out = inspection::Outgoing::Request {
                    method: mcpscope_core::protocol::subscriptions::LISTEN.into(),
                    params: Some(filter.listen_params()),
                    id: None,
                };
                let id = i.send(out.clone());
                self.session_mut().composer.sent(out, id);
            }
            ComposerAction::Cancel(id) => i.cancel(&id),
            ComposerAction::Answer(q, outcome) => i.answer(q, outcome),
            ComposerAction::RootsChanged(roots) => {
                let n = roots.len();
                i.set_roots(roots);
                let modern = i.era().state == mcpscope_core::driver::EraState::Modern;
                let how = if modern {
                    "sent with the next roots input request"
                } else {
                    "server notified (notifications/roots/list_changed)"
                };
                self.message = Some((Severity::Info, format!("{n} root(s) offered; {how}")));
            }
        }
    }

    /// Runs file work on a worker (the UI thread never does I/O); its outcome
    /// shows in the status bar.
    /// Save to collection: the request waits in the Collections window with
    /// the server of the tab it came from (else the launcher's), which a new
    /// file runs against.
    fn offer_to_collection(&mut self, label: String, step: mcpscope_core::collection::save::NewStep) {
        let server = self
            .session()
            .last_launch
            .clone()
            .or_else(|| self.launcher.form.to_saved().ok())
            .map(|s| s.for_test_file());
        let pending = panels::collections_view::PendingSave { label, step, server };
        self.collections.offer_save(pending, &self.waker);
    }

    fn show_captured_frame(&mut self, capture: PathBuf, seq: u64) {
        match self.tabs.iter().position(|t| t.capture_path() == Some(&capture)) {
            Some(idx) => {
                self.activate_tab(idx);
                let row = self
                    .session()
                    .inspection
                    .as_ref()
                    .filter(|i| !i.loading())
                    .and_then(|i| i.model.store.row_of_seq(seq));
                match row {
                    Some(row) => self.apply(Command::ShowRow(row)),
                    // Still loading: selected once it is (a Relaunch offer stays).
                    None => self.session_mut().restored.get_or_insert_default().select_seq = Some(seq),
                }
            }
            None => {
                self.select_on_open = Some((capture.clone(), seq));
                self.apply(Command::OpenCapture(capture));
            }
        }
    }

    pub(super) fn background(&mut self, what: String, work: impl FnOnce() -> anyhow::Result<String> + Send + 'static) {
        let job = crate::job::Job::spawn("file", Some(Arc::clone(&self.waker)), work);
        self.message = Some((Severity::Info, format!("{what}…")));
        self.jobs.push((what, job));
    }
}
