//! The launcher: what to run, with which environment, where, and which
//! protocol version to offer; recent servers; servers imported from config files.

use crate::saved_server::{SavedServer, SignIn};
use egui::{RichText, Ui};
use mcpscope_core::platform::dirs::Client;
use mcpscope_core::protocol::handshake;
use mcpscope_core::transport::process::shell_quote;
use mcpscope_core::transport::target::HttpKind;
use std::path::PathBuf;

/// The protocol version to offer when the era changes to `era`: the modern
/// version for modern, the default legacy one for legacy, unless the version
/// already belongs to that era (one typed on purpose is kept); `None` to keep it.
fn version_for_era(era: &str, version: &str) -> Option<&'static str> {
    use mcpscope_core::protocol::era::{DEFAULT_MODERN_VERSION, Era};
    let modern = Era::of_version(version) == Some(Era::Modern);
    match era {
        "modern" if !modern => Some(DEFAULT_MODERN_VERSION),
        "legacy" if modern => Some(handshake::DEFAULT_VERSION),
        _ => None,
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct EnvRow {
    pub key: String,
    pub value: String,
    pub revealed: bool,
    /// Keep the value in the OS keyring (else it is asked for after a restart).
    pub kept: bool,
}

impl EnvRow {
    fn rows_of(pairs: &[(String, String)], kind: &str, kept: &[String]) -> Vec<EnvRow> {
        pairs
            .iter()
            .map(|(k, v)| EnvRow {
                key: k.clone(),
                value: v.clone(),
                revealed: false,
                kept: kept.contains(&format!("{kind}:{k}")),
            })
            .collect()
    }
}

/// The rows marked to be kept, as `kind:NAME`.
fn kept_rows(rows: &[EnvRow], kind: &str) -> Vec<String> {
    rows.iter()
        .filter(|r| r.kept && !r.key.trim().is_empty())
        .map(|r| format!("{kind}:{}", r.key.trim()))
        .collect()
}

/// The form's contents.
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchForm {
    pub name: String,
    /// "stdio", "http" or "sse".
    pub transport: String,
    pub url: String,
    /// HTTP headers, masked like environment values.
    pub headers: Vec<EnvRow>,
    /// Sign-in (OAuth) for HTTP servers.
    pub oauth: SignIn,
    pub secret_revealed: bool,
    /// "legacy", "modern" or "auto".
    pub era: String,
    pub command: String,
    pub args: String,
    pub env: Vec<EnvRow>,
    pub cwd: String,
    pub protocol_version: String,
    pub intercept: bool,
    pub text_only: bool,
}

impl Default for LaunchForm {
    fn default() -> Self {
        Self {
            name: String::new(),
            transport: "stdio".into(),
            url: String::new(),
            headers: Vec::new(),
            oauth: SignIn::default(),
            secret_revealed: false,
            era: "legacy".into(),
            command: String::new(),
            args: String::new(),
            env: Vec::new(),
            cwd: String::new(),
            protocol_version: handshake::DEFAULT_VERSION.to_owned(),
            intercept: false,
            text_only: false,
        }
    }
}

impl LaunchForm {
    pub fn from_saved(s: &SavedServer) -> Self {
        Self {
            name: s.name.clone(),
            transport: if s.transport.is_empty() {
                "stdio".into()
            } else {
                s.transport.clone()
            },
            url: s.url.clone(),
            era: s.era_choice().as_str().to_owned(),
            headers: EnvRow::rows_of(&s.headers, "header", &s.kept),
            oauth: s.oauth.clone(),
            secret_revealed: false,
            command: s.program.clone(),
            args: s.args.iter().map(|a| shell_quote(a)).collect::<Vec<_>>().join(" "),
            env: EnvRow::rows_of(&s.env, "env", &s.kept),
            cwd: s.cwd.clone().unwrap_or_default(),
            protocol_version: if s.protocol_version.is_empty() {
                handshake::DEFAULT_VERSION.to_owned()
            } else {
                s.protocol_version.clone()
            },
            intercept: s.intercept,
            text_only: s.text_only,
        }
    }

    /// Validates the form into something to launch, or says what is wrong.
    pub fn to_saved(&self) -> Result<SavedServer, String> {
        let version = self.protocol_version.trim();
        let version = if version.is_empty() {
            handshake::DEFAULT_VERSION.to_owned()
        } else {
            version.to_owned()
        };
        if let Some(kind) = match self.transport.as_str() {
            "http" => Some(HttpKind::StreamableHttp),
            "sse" => Some(HttpKind::Sse),
            _ => None,
        } {
            let url = self.url.trim();
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err("Enter the server's URL (http:// or https://).".into());
            }
            let headers = named_rows(&self.headers, "Header", &[':', ' '])?;
            let name = if self.name.trim().is_empty() {
                url
            } else {
                self.name.trim()
            };
            if self.oauth.client_id.trim().is_empty() && !self.oauth.client_secret.trim().is_empty() {
                return Err("A client secret needs its client id (Sign-in).".into());
            }
            // Said now, in the form, rather than when the server asks.
            self.oauth.auth_config().map_err(|e| crate::error_view::one_line(&e))?;
            return Ok(SavedServer {
                protocol_version: version,
                era: self.era.clone(),
                oauth: self.oauth.clone(),
                kept: kept_rows(&self.headers, "header"),
                intercept: self.intercept,
                text_only: self.text_only,
                ..SavedServer::http(name, url, kind, headers)
            });
        }
        let command = self.command.trim();
        if command.is_empty() {
            return Err("Enter a command to run (e.g. npx, node, python3, uv).".into());
        }
        // A whole command line pasted into the command field is split for the user.
        let (program, mut args) = if command.contains(char::is_whitespace) && self.args.trim().is_empty() {
            let mut parts = split_args(command)?;
            let program = parts.remove(0);
            (program, parts)
        } else {
            (command.to_owned(), Vec::new())
        };
        args.extend(split_args(&self.args)?);
        let env = named_rows(&self.env, "Environment", &['='])?;
        Ok(SavedServer {
            name: if self.name.trim().is_empty() {
                program.rsplit('/').next().unwrap_or(&program).to_owned()
            } else {
                self.name.trim().to_owned()
            },
            program,
            args,
            env,
            cwd: Some(self.cwd.trim().to_owned()).filter(|c| !c.is_empty()),
            protocol_version: version,
            era: self.era.clone(),
            kept: kept_rows(&self.env, "env"),
            intercept: self.intercept,
            text_only: self.text_only,
            ..SavedServer::default()
        })
    }
}

impl LauncherPanel {
    /// Sign-in (OAuth): used when the server answers 401; without a client
    /// id mcpscope registers itself where the server allows it.
    fn sign_in_ui(&mut self, ui: &mut Ui) {
        let form = &mut self.form;
        let given = !form.oauth.client_id.trim().is_empty()
            || !form.oauth.scopes.trim().is_empty()
            || !form.oauth.workload_token_file.trim().is_empty()
            || !matches!(form.oauth.dpop.trim(), "" | "auto");
        let title = if given {
            "Sign-in (OAuth) ✔"
        } else {
            "Sign-in (OAuth)"
        };
        egui::CollapsingHeader::new(title)
            .id_salt("launcher-sign-in")
            .show(ui, |ui| {
                ui.weak("Used when the server answers 401: the browser opens on the authorization page.");
                egui::Grid::new("launcher-sign-in-grid").num_columns(2).show(ui, |ui| {
                    let label = ui.label("Client ID");
                    ui.add(
                        egui::TextEdit::singleline(&mut form.oauth.client_id)
                            .hint_text("register automatically")
                            .desired_width(180.0),
                    )
                    .labelled_by(label.id);
                    ui.end_row();
                    let label = ui.label("Client secret");
                    ui.horizontal(|ui| {
                        ui.add(
                            egui::TextEdit::singleline(&mut form.oauth.client_secret)
                                .hint_text("none")
                                .password(!form.secret_revealed)
                                .desired_width(130.0),
                        )
                        .labelled_by(label.id);
                        if ui
                            .small_button(if form.secret_revealed { "hide" } else { "show" })
                            .on_hover_text("Kept for this run only, never saved")
                            .clicked()
                        {
                            form.secret_revealed = !form.secret_revealed;
                        }
                    });
                    ui.end_row();
                    let label = ui.label("Scopes");
                    ui.add(
                        egui::TextEdit::singleline(&mut form.oauth.scopes)
                            .hint_text("as the server advertises")
                            .desired_width(180.0),
                    )
                    .labelled_by(label.id);
                    ui.end_row();
                    ui.label("DPoP").on_hover_text(
                        "Bind tokens to a key made for the session (RFC 9449): auto uses it when the \
                         authorization server lists ES256 or the server's challenge asks for DPoP",
                    );
                    let current = mcpscope_core::protocol::auth::dpop::DpopMode::parse(form.oauth.dpop.trim());
                    egui::ComboBox::from_id_salt("launcher-dpop")
                        .selected_text(current.as_str())
                        .show_ui(ui, |ui| {
                            for m in mcpscope_core::protocol::auth::dpop::DpopMode::ALL {
                                if ui.selectable_label(m == current, m.as_str()).clicked() {
                                    form.oauth.dpop = m.as_str().to_owned();
                                }
                            }
                        });
                    ui.end_row();
                    let label = ui.label("Workload token file").on_hover_text(
                        "Workload identity federation: a file with the workload's JWT (a Kubernetes \
                         service account token, a cloud identity token), sent as a JWT bearer grant \
                         instead of signing in with the browser",
                    );
                    ui.add(
                        egui::TextEdit::singleline(&mut form.oauth.workload_token_file)
                            .hint_text("none: sign in with the browser")
                            .desired_width(180.0),
                    )
                    .labelled_by(label.id);
                    ui.end_row();
                });
            });
    }
}

/// NAME/value rows (environment, headers): empty rows skipped, a name that
/// is empty or holds one of `forbidden` refused with the row's number.
fn named_rows(rows: &[EnvRow], what: &str, forbidden: &[char]) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let key = row.key.trim();
        if key.is_empty() && row.value.is_empty() {
            continue;
        }
        if key.is_empty() || key.contains(forbidden) {
            return Err(format!("{what} row {}: the name {:?} is not valid", i + 1, row.key));
        }
        out.push((key.to_owned(), row.value.clone()));
    }
    Ok(out)
}

/// Splits a command line the way a POSIX shell would (quotes and backslashes,
/// no expansion).
pub fn split_args(s: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => cur.push(c),
                        None => return Err("unterminated ' quote in the arguments".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => cur.push(c),
                            Some(c) => {
                                cur.push('\\');
                                cur.push(c);
                            }
                            None => return Err("unterminated \" quote in the arguments".into()),
                        },
                        Some(c) => cur.push(c),
                        None => return Err("unterminated \" quote in the arguments".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(c) = chars.next() {
                    cur.push(c);
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    Ok(out)
}

/// What the launcher asks of the app.
#[derive(Clone, Debug, PartialEq)]
pub enum LauncherAction {
    Launch(Box<SavedServer>),
    Stop,
    Restart,
    PickCwd,
    PickConfig,
    /// Import this client's config (found where its system keeps it).
    ImportConfig(PathBuf),
    /// Wrap the imported config so its client runs servers through mcpscope.
    WatchInClient,
}

/// A server found in an imported config file.
#[derive(Clone, Debug)]
pub struct ImportedServer {
    pub saved: Option<SavedServer>,
    pub name: String,
    /// Why it cannot be launched here (e.g. an HTTP server), or notes.
    pub notes: Vec<String>,
}

#[derive(Default)]
pub struct LauncherPanel {
    pub form: LaunchForm,
    pub recent: Vec<SavedServer>,
    pub imported: Option<(PathBuf, Vec<ImportedServer>, Vec<String>)>,
    pub error: Option<String>,
    /// The MCP clients' configs found here (looked for once, when the
    /// launcher is first shown).
    pub client_configs: Option<Vec<(Client, PathBuf)>>,
}

const RECENT_LIMIT: usize = 12;

impl LauncherPanel {
    /// Remembers a launched server at the top of the recent list.
    pub fn remember(&mut self, s: &SavedServer) {
        self.recent.retain(|r| {
            !(r.program == s.program
                && r.args == s.args
                && r.cwd == s.cwd
                && r.url == s.url
                && r.transport == s.transport)
        });
        self.recent.insert(0, s.clone());
        self.recent.truncate(RECENT_LIMIT);
    }

    pub fn ui(&mut self, ui: &mut Ui, running: bool) -> Option<LauncherAction> {
        ui.heading("Launch a server");
        let mut action = self.form_ui(ui);
        let http = self.form.transport != "stdio";
        self.rows_ui(ui, http);
        if http {
            self.sign_in_ui(ui);
        }
        action = self.buttons_ui(ui, running).or(action);
        action = self.imported_ui(ui).or(action);
        self.recent_ui(ui);
        action
    }

    /// The form's fields: name, transport, command or URL, era, version.
    fn form_ui(&mut self, ui: &mut Ui) -> Option<LauncherAction> {
        let mut action = None;
        egui::Grid::new("launch-form")
            .num_columns(2)
            .spacing([8.0, 6.0])
            .show(ui, |ui| {
                let label = ui.label("Name");
                ui.add(
                    egui::TextEdit::singleline(&mut self.form.name)
                        .hint_text("optional")
                        .desired_width(f32::INFINITY),
                )
                .labelled_by(label.id);
                ui.end_row();
                // A drop-down: three buttons in a row were cut at 1024 px
                // ("Streamable HTTI"), and wrapped they ran into the next row.
                let label = ui.label("Transport");
                let name = |t: &str| match t {
                    "http" => "Streamable HTTP",
                    "sse" => "HTTP+SSE",
                    _ => "stdio",
                };
                egui::ComboBox::from_id_salt("transport")
                    .selected_text(name(&self.form.transport))
                    .show_ui(ui, |ui| {
                        for t in ["stdio", "http", "sse"] {
                            ui.selectable_value(&mut self.form.transport, t.to_owned(), name(t));
                        }
                    })
                    .response
                    .labelled_by(label.id);
                ui.end_row();
                if self.form.transport == "stdio" {
                    let label = ui.label("Command");
                    ui.add(
                        egui::TextEdit::singleline(&mut self.form.command)
                            .hint_text("npx, node, python3, uv…")
                            .desired_width(f32::INFINITY),
                    )
                    .labelled_by(label.id);
                    ui.end_row();
                    let label = ui.label("Arguments");
                    ui.add(
                        egui::TextEdit::singleline(&mut self.form.args)
                            .hint_text("-y @modelcontextprotocol/server-everything")
                            .desired_width(f32::INFINITY),
                    )
                    .labelled_by(label.id);
                    ui.end_row();
                    let label = ui.label("Directory");
                    ui.horizontal(|ui| {
                        ui.add(
                            egui::TextEdit::singleline(&mut self.form.cwd)
                                .hint_text("inherit")
                                .desired_width(160.0),
                        )
                        .labelled_by(label.id);
                        if ui.button("Choose…").clicked() {
                            action = Some(LauncherAction::PickCwd);
                        }
                    });
                    ui.end_row();
                    ui.label("Intercept");
                    ui.checkbox(&mut self.form.intercept, "through mcpscope proxy")
                        .on_hover_text(
                            "Runs the server behind an intercepting proxy: hold, edit, drop or answer frames, \
                             inject frames and set fault rules in the Intercept tab",
                        );
                    ui.end_row();
                } else {
                    let label = ui.label("URL");
                    ui.add(
                        egui::TextEdit::singleline(&mut self.form.url)
                            .hint_text("http://localhost:3001/mcp")
                            .desired_width(f32::INFINITY),
                    )
                    .labelled_by(label.id);
                    ui.end_row();
                    ui.label("Intercept");
                    ui.checkbox(&mut self.form.intercept, "through mcpscope proxy")
                        .on_hover_text(
                            "Goes through an intercepting reverse proxy run by the app: hold, edit, drop or answer \
                             messages and set fault rules in the Intercept tab",
                        );
                    ui.end_row();
                }
                ui.label("MCP Apps");
                let mut apps = !self.form.text_only;
                if ui
                    .checkbox(&mut apps, "host Views")
                    .on_hover_text(
                        "Advertises the MCP Apps extension (io.modelcontextprotocol/ui): a tool with a ui:// View opens \
                         it in your browser when run. Untick to see the server's text-only side.",
                    )
                    .changed()
                {
                    self.form.text_only = !apps;
                }
                ui.end_row();
                ui.label("Era");
                ui.horizontal(|ui| {
                    let before = self.form.era.clone();
                    ui.selectable_value(&mut self.form.era, "legacy".to_owned(), "legacy")
                        .on_hover_text("initialize handshake (2024-11-05 … 2025-11-25)");
                    ui.selectable_value(&mut self.form.era, "modern".to_owned(), "modern")
                        .on_hover_text("2026-07-28: no handshake, _meta on every request, server/discover");
                    ui.selectable_value(&mut self.form.era, "auto".to_owned(), "auto")
                        .on_hover_text("probe with server/discover, fall back to initialize");
                    if before != self.form.era
                        && let Some(v) = version_for_era(&self.form.era, &self.form.protocol_version)
                    {
                        self.form.protocol_version = v.into();
                    }
                });
                ui.end_row();
                let label = ui.label("Protocol");
                ui.horizontal(|ui| {
                    ui.add(egui::TextEdit::singleline(&mut self.form.protocol_version).desired_width(100.0))
                        .labelled_by(label.id);
                    ui.menu_button("versions", |ui| {
                        for v in handshake::SUPPORTED_VERSIONS.iter().rev() {
                            if ui.button(*v).clicked() {
                                self.form.protocol_version = (*v).to_owned();
                                ui.close();
                            }
                        }
                        if ui.button("2099-01-01 (unknown, on purpose)").clicked() {
                            self.form.protocol_version = "2099-01-01".into();
                            ui.close();
                        }
                    });
                });
                ui.end_row();
            });
        action
    }

    /// The environment (stdio) or the headers (HTTP), values masked.
    fn rows_ui(&mut self, ui: &mut Ui, http: bool) {
        let (title, rows) = if http {
            (format!("Headers ({})", self.form.headers.len()), &mut self.form.headers)
        } else {
            (format!("Environment ({})", self.form.env.len()), &mut self.form.env)
        };
        // A salt that does not change with the count: a title with the count
        // in it would be another header (collapsed) after each Add.
        let salt = if http { "launcher-headers" } else { "launcher-env" };
        egui::CollapsingHeader::new(title).id_salt(salt).show(ui, |ui| {
            let mut remove = None;
            for (i, row) in rows.iter_mut().enumerate() {
                // The row's buttons on a line of their own: beside the fields
                // they went past the edge of a narrow launcher, out of sight.
                ui.horizontal(|ui| {
                    ui.add(
                        egui::TextEdit::singleline(&mut row.key)
                            .hint_text(if http { "Authorization" } else { "NAME" })
                            .desired_width(90.0),
                    );
                    ui.add(
                        egui::TextEdit::singleline(&mut row.value)
                            .hint_text(if row.kept {
                                "value (kept in the keyring)"
                            } else {
                                "value (never saved to disk)"
                            })
                            .password(!row.revealed)
                            .desired_width(120.0),
                    );
                });
                ui.horizontal(|ui| {
                    if ui
                        .small_button(if row.revealed { "hide" } else { "show" })
                        .on_hover_text("Values are masked: they often hold API keys and tokens")
                        .clicked()
                    {
                        row.revealed = !row.revealed;
                    }
                    ui.toggle_value(&mut row.kept, "keep").on_hover_text(
                        "Keep this value in the OS keyring (else the launcher asks for it again after a restart)",
                    );
                    if ui.small_button("✖").on_hover_text("Remove").clicked() {
                        remove = Some(i);
                    }
                });
            }
            if let Some(i) = remove {
                rows.remove(i);
            }
            if ui.button(if http { "Add header" } else { "Add variable" }).clicked() {
                rows.push(EnvRow::default());
            }
        });
    }

    /// Launch, Stop, Restart, and what went wrong.
    fn buttons_ui(&mut self, ui: &mut Ui, running: bool) -> Option<LauncherAction> {
        let mut action = None;
        ui.horizontal(|ui| {
            // Launching while a session runs takes a new tab: the one on screen keeps running.
            let launch = ui.button("▶ Launch");
            let launch = if running {
                launch.on_hover_text("Starts it in a new tab; the session on screen keeps running (■ Stop ends it)")
            } else {
                launch
            };
            if launch.clicked() {
                match self.form.to_saved() {
                    Ok(s) => {
                        self.error = None;
                        action = Some(LauncherAction::Launch(Box::new(s)));
                    }
                    Err(e) => self.error = Some(e),
                }
            }
            if ui.add_enabled(running, egui::Button::new("■ Stop")).clicked() {
                action = Some(LauncherAction::Stop);
            }
            if ui
                .button("⟳ Restart")
                .on_hover_text("Starts the server again as the launcher shows it (your edits included); the composer keeps its tool and mode")
                .clicked()
            {
                action = Some(LauncherAction::Restart);
            }
        });
        if running {
            ui.weak("Launch opens a new tab: this session keeps running.");
        }
        if let Some(e) = &self.error {
            ui.label(RichText::new(e).color(crate::theme::ERROR));
        }
        action
    }

    /// Importing a config file, and the servers it lists (virtualised).
    fn imported_ui(&mut self, ui: &mut Ui) -> Option<LauncherAction> {
        let mut action = None;
        ui.separator();
        // Wrapped: one button per client config found, up to five.
        ui.horizontal_wrapped(|ui| {
            ui.strong("Import");
            if ui
                .button("Config file…")
                .on_hover_text("claude_desktop_config.json, .mcp.json or .vscode/mcp.json")
                .clicked()
            {
                action = Some(LauncherAction::PickConfig);
            }
            let found = self
                .client_configs
                .get_or_insert_with(mcpscope_core::platform::dirs::client_configs_here);
            for (client, path) in found.iter() {
                if ui
                    .button(client.name())
                    .on_hover_text(format!("Import {}", path.display()))
                    .clicked()
                {
                    action = Some(LauncherAction::ImportConfig(path.clone()));
                }
            }
        });
        if let Some((path, servers, problems)) = &self.imported {
            ui.horizontal_wrapped(|ui| {
                ui.weak(path.display().to_string());
                if ui
                    .button("Watch in your client…")
                    .on_hover_text(
                        "Make the client of this config run its servers through mcpscope, to watch them live",
                    )
                    .clicked()
                {
                    action = Some(LauncherAction::WatchInClient);
                }
            });
            const PROBLEMS_SHOWN: usize = 20;
            for p in problems.iter().take(PROBLEMS_SHOWN) {
                ui.label(RichText::new(p).color(crate::theme::WARN));
            }
            if problems.len() > PROBLEMS_SHOWN {
                ui.weak(format!("and {} more problem(s)", problems.len() - PROBLEMS_SHOWN));
            }
            // Virtualised: a config may list hundreds of thousands of servers.
            let row_h = ui.spacing().interact_size.y;
            let mut pick = None;
            egui::ScrollArea::vertical()
                .id_salt("imported-servers")
                .max_height(320.0)
                .auto_shrink([false, true])
                .show_rows(ui, row_h, servers.len(), |ui, range| {
                    for s in &servers[range] {
                        ui.horizontal(|ui| {
                            match &s.saved {
                                Some(saved) => {
                                    if ui.button(&s.name).on_hover_text(saved.command_line()).clicked() {
                                        pick = Some(saved.clone());
                                    }
                                }
                                None => {
                                    ui.add_enabled(false, egui::Button::new(&s.name));
                                }
                            }
                            if !s.notes.is_empty() {
                                ui.add(egui::Label::new(RichText::new(s.notes.join("; ")).weak()).truncate());
                            }
                        });
                    }
                });
            if let Some(saved) = pick {
                self.form = LaunchForm::from_saved(&saved);
            }
        }
        action
    }

    /// The servers launched before, to load into the form.
    fn recent_ui(&mut self, ui: &mut Ui) {
        if !self.recent.is_empty() {
            ui.separator();
            ui.strong("Recent");
            let mut pick = None;
            for (i, r) in self.recent.iter().enumerate() {
                let text = format!("{} — {}", r.name, mcpscope_core::text::ellipsize(&r.command_line(), 60));
                if ui
                    .selectable_label(false, text)
                    .on_hover_text("Load into the form")
                    .clicked()
                {
                    pick = Some(i);
                }
            }
            if let Some(i) = pick {
                self.form = LaunchForm::from_saved(&self.recent[i]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpscope_core::transport::target::Target;

    #[test]
    fn switching_era_offers_its_version_unless_one_of_it_was_typed() {
        use mcpscope_core::protocol::era::DEFAULT_MODERN_VERSION;
        assert_eq!(version_for_era("modern", "2025-11-25"), Some(DEFAULT_MODERN_VERSION));
        assert_eq!(version_for_era("modern", "2026-07-28"), None, "already modern: kept");
        assert_eq!(
            version_for_era("legacy", "2026-07-28"),
            Some(handshake::DEFAULT_VERSION)
        );
        assert_eq!(version_for_era("legacy", "2024-11-05"), None, "typed on purpose: kept");
        assert_eq!(version_for_era("auto", "2026-07-28"), None);
    }

    #[test]
    fn splits_like_a_shell() {
        assert_eq!(
            split_args(r#"-y @scope/pkg "a b" 'c d' e\ f"#).unwrap(),
            ["-y", "@scope/pkg", "a b", "c d", "e f"]
        );
        assert_eq!(split_args(r#""say \"hi\"""#).unwrap(), [r#"say "hi""#]);
        assert_eq!(split_args("''").unwrap(), [""]);
        assert!(split_args("'open").unwrap_err().contains("unterminated"));
        assert!(split_args("   ").unwrap().is_empty());
    }

    #[test]
    fn form_validation_and_round_trip() {
        let mut f = LaunchForm {
            command: "npx -y @modelcontextprotocol/server-everything".into(),
            ..LaunchForm::default()
        };
        let s = f.to_saved().unwrap();
        assert_eq!(s.program, "npx");
        assert_eq!(s.args, ["-y", "@modelcontextprotocol/server-everything"]);
        assert_eq!(s.name, "npx");
        f.env.push(EnvRow {
            key: "API_KEY".into(),
            value: "s3cret value".into(),
            ..EnvRow::default()
        });
        f.env.push(EnvRow::default());
        let s = f.to_saved().unwrap();
        assert_eq!(s.env, [("API_KEY".to_owned(), "s3cret value".to_owned())]);
        let back = LaunchForm::from_saved(&s);
        assert_eq!(back.to_saved().unwrap(), s);
        f.env.push(EnvRow {
            key: "A=B".into(),
            value: "x".into(),
            ..EnvRow::default()
        });
        assert!(f.to_saved().unwrap_err().contains("row 3"));
        assert!(
            LaunchForm::default()
                .to_saved()
                .unwrap_err()
                .contains("Enter a command")
        );
    }

    #[test]
    fn sign_in_settings_are_kept_but_never_the_secret() {
        let mut f = LaunchForm {
            transport: "http".into(),
            url: "http://127.0.0.1:9/mcp".into(),
            ..LaunchForm::default()
        };
        f.oauth.client_secret = "s3cret".into();
        assert!(f.to_saved().unwrap_err().contains("client id"));
        f.oauth = SignIn {
            client_id: "my-client".into(),
            client_secret: "s3cret".into(),
            scopes: " mcp:read  mcp:write ".into(),
            ..SignIn::default()
        };
        let saved = f.to_saved().unwrap();
        let config = saved.oauth.auth_config().unwrap();
        assert_eq!(config.client.client_id.as_deref(), Some("my-client"));
        assert_eq!(config.client.client_secret.as_deref(), Some("s3cret"));
        assert_eq!(config.scope, Some(vec!["mcp:read".to_owned(), "mcp:write".to_owned()]));
        let json = serde_json::to_string(&saved).unwrap();
        assert!(json.contains("my-client") && !json.contains("s3cret"), "{json}");
        let back: SavedServer = serde_json::from_str(&json).unwrap();
        assert_eq!(back.oauth.client_secret, "");
        assert_eq!(SignIn::default().auth_config().unwrap().scope, None);
    }

    #[test]
    fn dpop_and_workload_identity_settings_reach_the_authorization() {
        use mcpscope_core::protocol::auth::dpop::DpopMode;
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("token");
        std::fs::write(&token, "eyJh.eyJz.c2ln\n").unwrap();
        let mut f = LaunchForm {
            transport: "http".into(),
            url: "http://127.0.0.1:9/mcp".into(),
            ..LaunchForm::default()
        };
        f.oauth.dpop = "never".into();
        f.oauth.workload_token_file = token.display().to_string();
        let saved = f.to_saved().unwrap();
        let config = saved.oauth.auth_config().unwrap();
        assert_eq!(config.dpop, DpopMode::Never);
        assert!(config.dpop_key.is_none());
        assert_eq!(config.workload_token.as_deref(), Some("eyJh.eyJz.c2ln"));
        let json = serde_json::to_string(&saved).unwrap();
        assert!(!json.contains("eyJh"), "the path is saved, never the token: {json}");
        // The default makes a key, used where the server asks for DPoP.
        let default = SignIn::default().auth_config().unwrap();
        assert_eq!(default.dpop, DpopMode::Auto);
        assert!(default.dpop_key.is_some());
        f.oauth.workload_token_file = dir.path().join("missing").display().to_string();
        assert!(f.to_saved().unwrap_err().contains("Workload token file"));
    }

    #[test]
    fn http_servers_need_a_url_and_keep_their_headers() {
        let mut f = LaunchForm {
            transport: "http".into(),
            ..LaunchForm::default()
        };
        assert!(f.to_saved().unwrap_err().contains("URL"));
        f.url = "http://127.0.0.1:3001/mcp".into();
        f.headers.push(EnvRow {
            key: "Authorization".into(),
            value: "Bearer t0ken".into(),
            ..EnvRow::default()
        });
        let s = f.to_saved().unwrap();
        assert_eq!(s.http_kind(), Some(HttpKind::StreamableHttp));
        assert_eq!(s.name, "http://127.0.0.1:3001/mcp");
        match s.target() {
            Target::Http(h) => assert_eq!(h.headers, [("Authorization".to_owned(), "Bearer t0ken".to_owned())]),
            other => panic!("{other:?}"),
        }
        assert_eq!(LaunchForm::from_saved(&s).to_saved().unwrap(), s);
        // Older saved entries without the new fields still load.
        let old: SavedServer = serde_json::from_str(
            r#"{"name":"x","program":"node","args":[],"env":[],"cwd":null,"protocol_version":"2025-11-25"}"#,
        )
        .unwrap();
        assert!(matches!(old.target(), Target::Stdio(_)));
        f.headers[0].key = "Bad Name".into();
        assert!(f.to_saved().unwrap_err().contains("Header row 1"));
    }

    #[test]
    fn recent_list_deduplicates_and_is_bounded() {
        let mut l = LauncherPanel::default();
        for i in 0..20 {
            l.remember(&SavedServer {
                program: format!("p{i}"),
                ..SavedServer::default()
            });
        }
        l.remember(&SavedServer {
            program: "p10".into(),
            ..SavedServer::default()
        });
        assert_eq!(l.recent.len(), RECENT_LIMIT);
        assert_eq!(l.recent[0].program, "p10");
        assert_eq!(l.recent.iter().filter(|r| r.program == "p10").count(), 1);
    }

    /// #33: a row marked "keep" is remembered as kept, its value goes to the
    /// store under the server's name, and comes back into an entry saved
    /// without it; unmarked rows have their kept value forgotten.
    #[test]
    fn kept_rows_go_to_the_store_and_come_back() {
        let mut f = LaunchForm {
            name: "srv".into(),
            command: "node".into(),
            ..LaunchForm::default()
        };
        f.env.push(EnvRow {
            key: "API_KEY".into(),
            value: "sk-live-123".into(),
            kept: true,
            ..EnvRow::default()
        });
        f.env.push(EnvRow {
            key: "DEBUG".into(),
            value: "1".into(),
            ..EnvRow::default()
        });
        let s = f.to_saved().unwrap();
        assert_eq!(s.kept, ["env:API_KEY"]);
        assert_eq!(
            s.kept_values(),
            [
                ("launcher/srv/env/API_KEY".to_owned(), Some("sk-live-123".to_owned())),
                ("launcher/srv/env/DEBUG".to_owned(), None),
            ]
        );
        let stored = serde_json::to_string(&s.without_secrets()).unwrap();
        assert!(!stored.contains("sk-live-123"), "{stored}");
        let mut back: SavedServer = serde_json::from_str(&stored).unwrap();
        back.fill_kept(|k| (k == "launcher/srv/env/API_KEY").then(|| "sk-live-123".to_owned()));
        assert_eq!(back.env[0].1, "sk-live-123");
        assert_eq!(back.env[1].1, "", "an unkept value stays asked for");
        let form = LaunchForm::from_saved(&back);
        assert!(form.env[0].kept && !form.env[1].kept);
    }
}
