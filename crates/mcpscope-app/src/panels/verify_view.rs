//! File → Verify against server…: the open capture's requests sent again to
//! a server chosen from the launcher (the form or a recent entry), on a
//! worker; what changed is listed here, breaking first, and the two
//! sessions open side by side in the diff view.

use crate::job::{Job, PollOutcome as _};
use crate::saved_server::SavedServer;
use crate::theme;
use egui::{RichText, Ui};
use mcpscope_core::analysis::answer_diff::Ignore;
use mcpscope_core::analysis::surface::Impact;
use mcpscope_core::client::Client;
use mcpscope_core::protocol::mrtr::InputPolicy;
use mcpscope_core::transport::auth::{AuthOptions, Authorizer, Interaction};
use mcpscope_core::transport::session::SessionOptions;
use mcpscope_core::transport::target::Target;
use mcpscope_core::verify::{self, Recording};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long each request may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// What a finished verification found.
#[derive(Clone, Debug)]
pub struct Verified {
    pub server: String,
    pub recorded: PathBuf,
    /// The live session, recorded for the side-by-side view.
    pub live: PathBuf,
    /// (breaking?, subject, change), breaking first.
    pub changes: Vec<(bool, String, String)>,
    /// (exchange, differences): the replayed requests.
    pub replayed: Vec<(String, Vec<String>)>,
    pub notes: Vec<String>,
}

pub enum VerifyAction {
    /// Show the recording and the live session side by side.
    Compare { recorded: PathBuf, live: PathBuf },
}

#[derive(Default)]
pub struct VerifyView {
    pub open: bool,
    job: Option<Job<anyhow::Result<Verified>>>,
    pub result: Option<Verified>,
    pub error: Option<anyhow::Error>,
    /// While signing in to an OAuth-protected server: the URL the browser
    /// was sent to, shown in case no browser opened.
    sign_in_url: Arc<Mutex<Option<String>>>,
}

/// Signs in as the launcher entry says when an HTTP server asks (not for
/// stdio, nor with an Authorization header of the user's); the URL to
/// authorize at goes to `shown`.
fn authorizer_for(
    target: &Target,
    server: &SavedServer,
    interaction: Interaction,
    shown: &Arc<Mutex<Option<String>>>,
    tokens: &crate::tokens::AppTokens,
) -> anyhow::Result<Option<Authorizer>> {
    let Target::Http(h) = target else {
        return Ok(None);
    };
    if h.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("authorization")) {
        return Ok(None);
    }
    let config = server.oauth.auth_config()?;
    let shown = Arc::clone(shown);
    let (memory, on_change) = tokens.for_server(&h.url);
    let options = AuthOptions {
        interaction,
        on_change: Some(on_change),
        show_url: Some(Arc::new(move |u: &str, _opened: Option<&str>| {
            *shown.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(u.to_owned());
        })),
        ..AuthOptions::default()
    };
    Ok(Some(
        Authorizer::new(h.url.clone(), config, options, h.bearer.clone()).with_memory(memory),
    ))
}

/// Runs on a worker: the recording, a client to the server (recorded into
/// a private capture; a client per recorded session, signed in once, in
/// the browser in the app), the comparison.
pub fn run(
    capture: &Path,
    server: &SavedServer,
    interaction: Interaction,
    sign_in_url: &Arc<Mutex<Option<String>>>,
    tokens: &crate::tokens::AppTokens,
) -> anyhow::Result<Verified> {
    let recording = Recording::read(capture, None)?;
    let live = mcpscope_core::record::private_files::new_capture_file()?;
    let options = SessionOptions {
        request_timeout: Some(TIMEOUT),
        capture: Some(live.clone()),
        ..SessionOptions::new(mcpscope_core::record::capture::open_log)
    };
    let target = server.target();
    let mut authorizer = authorizer_for(&target, server, interaction, sign_in_url, tokens)?;
    let mut connect = |policy: &InputPolicy| {
        let client = Client::connect(target.clone(), options.clone(), Box::new(|_| {})).with_policy(policy.clone());
        match authorizer.take() {
            Some(a) => client.with_authorizer(a),
            None => client,
        }
    };
    let ignore = Ignore::new(&[], &[])?;
    let report = verify::verify(&mut connect, &recording, &ignore, TIMEOUT, false)?;
    Ok(Verified {
        server: server.name.clone(),
        recorded: capture.to_owned(),
        live,
        changes: report
            .changes
            .iter()
            .map(|c| (c.impact == Impact::Breaking, c.subject.clone(), c.what.clone()))
            .collect(),
        replayed: report
            .replayed
            .iter()
            .map(|r| (r.key.clone(), r.differences.clone()))
            .collect(),
        notes: report.notes,
    })
}

impl VerifyView {
    pub fn busy(&self) -> bool {
        self.job.is_some()
    }

    /// Verifies `server` against `capture` on a worker.
    pub fn start(
        &mut self,
        capture: PathBuf,
        server: SavedServer,
        tokens: crate::tokens::AppTokens,
        waker: &Arc<dyn Fn() + Send + Sync>,
    ) {
        self.result = None;
        self.error = None;
        let url = Arc::clone(&self.sign_in_url);
        *url.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
        self.job = Some(Job::spawn("verify", Some(Arc::clone(waker)), move || {
            run(&capture, &server, Interaction::Browser, &url, &tokens)
        }));
    }

    /// Collects a finished verification: the comparison to show, if any.
    pub fn poll(&mut self) -> Option<VerifyAction> {
        match self.job.take_outcome()? {
            Ok(v) => {
                let action = VerifyAction::Compare {
                    recorded: v.recorded.clone(),
                    live: v.live.clone(),
                };
                self.result = Some(v);
                Some(action)
            }
            Err(e) => {
                self.error = Some(e);
                None
            }
        }
    }

    /// The window: pick a server (the launcher's form, then recent ones),
    /// then the findings. Returns the server to verify against, if chosen.
    pub fn window(
        &mut self,
        ctx: &egui::Context,
        capture: Option<&Path>,
        servers: &[(SavedServer, &str)],
    ) -> Option<SavedServer> {
        let mut open = self.open;
        let mut chosen = None;
        egui::Window::new("Verify against a server")
            .open(&mut open)
            .default_width(640.0)
            .show(ctx, |ui| chosen = self.ui(ui, capture, servers));
        self.open = open;
        chosen
    }

    fn ui(&mut self, ui: &mut Ui, capture: Option<&Path>, servers: &[(SavedServer, &str)]) -> Option<SavedServer> {
        let mut chosen = None;
        let Some(capture) = capture else {
            ui.weak("Open a capture (or run a session) first: its requests are what is sent again.");
            return None;
        };
        ui.label(format!(
            "The requests of {} are sent again to the server you choose; each answer and the server's \
             surface are compared with the recording.",
            capture.display()
        ));
        if servers.is_empty() {
            ui.weak("No server in the launcher: fill its form or launch one first.");
        }
        for (s, from) in servers {
            ui.horizontal(|ui| {
                if ui.add_enabled(!self.busy(), egui::Button::new("Verify")).clicked() {
                    chosen = Some(s.clone());
                }
                ui.label(RichText::new(&s.name).strong());
                ui.weak(format!("({from})"));
                ui.weak(mcpscope_core::text::ellipsize(&s.command_line(), 80));
            });
        }
        ui.separator();
        if self.busy() {
            ui.horizontal(|ui| {
                ui.spinner();
                ui.label("verifying…");
            });
            let url = self
                .sign_in_url
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone();
            if let Some(url) = url {
                ui.horizontal(|ui| {
                    ui.label("The server wants a sign-in: authorize in the browser that opened, or open");
                    if ui.small_button("Copy URL").clicked() {
                        ui.ctx().copy_text(url.clone());
                    }
                });
                ui.weak(mcpscope_core::text::ellipsize(&url, 120));
            }
        }
        if let Some(e) = &self.error {
            crate::error_view::show(ui, e);
        }
        if let Some(v) = &self.result {
            let breaking = v.changes.iter().filter(|c| c.0).count();
            let differ = v.replayed.iter().filter(|r| !r.1.is_empty()).count();
            ui.label(
                RichText::new(format!(
                    "{}: {} exchange(s) replayed, {differ} differ (the handshake and lists are compared as the \
                     surface: {} change(s), {breaking} breaking)",
                    v.server,
                    v.replayed.len(),
                    v.changes.len()
                ))
                .strong(),
            );
            egui::ScrollArea::vertical().max_height(360.0).show(ui, |ui| {
                for (is_breaking, subject, what) in &v.changes {
                    let (tag, color) = if *is_breaking {
                        ("breaking", theme::ERROR)
                    } else {
                        ("compatible", theme::WARN)
                    };
                    ui.label(
                        RichText::new(format!("{tag:<10} {subject}: {what}"))
                            .monospace()
                            .color(color),
                    );
                }
                for (key, differences) in &v.replayed {
                    if differences.is_empty() {
                        ui.label(RichText::new(format!("same       {key}")).monospace());
                    } else {
                        ui.label(
                            RichText::new(format!("differs    {key}"))
                                .monospace()
                                .color(theme::ERROR),
                        );
                        for d in differences {
                            ui.label(RichText::new(format!("             {d}")).monospace());
                        }
                    }
                }
                for n in &v.notes {
                    ui.weak(n);
                }
            });
        }
        chosen
    }
}
