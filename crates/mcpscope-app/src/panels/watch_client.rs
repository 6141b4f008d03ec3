//! "Watch in your client": rewrites an imported config so the client itself
//! runs the chosen servers through `mcpscope proxy --session NAME` (the same
//! `config::wrap_file` the `mcpscope wrap` command uses). The window says what
//! will change and where the backup goes, and asks before writing; the writing
//! runs on a worker.

use crate::job::{Job, PollSlot as _};
use crate::theme;
use egui::{RichText, Ui};
use mcpscope_core::config::wrap::{Change, Selection};
use mcpscope_core::config::wrap_file::{self, Ledger};
use mcpscope_core::record::state_dir;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a wrap or unwrap did, as lines for people.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub lines: Vec<String>,
    pub ok: bool,
    /// Remote entries of the config now wrapped: their reverse proxies to run.
    pub remotes: Vec<mcpscope_core::config::wrap::RemoteWrap>,
    /// Remote entries unwrapped: their reverse proxies to stop.
    pub unwrapped: Vec<String>,
}

/// Where the client will find mcpscope: this very binary, by absolute path,
/// since a desktop client's PATH is minimal.
pub fn this_binary() -> anyhow::Result<String> {
    use anyhow::Context as _;
    std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .map(|p| p.display().to_string())
        .context("cannot tell where this mcpscope binary is")
}

/// Where `wrap` keeps the config as it was before mcpscope changed it.
pub fn backup_path(config: &Path) -> PathBuf {
    wrap_file::backup_path(config)
}

/// Wraps (or, with `undo`, unwraps) the chosen servers of `config`. File I/O: run it on a worker.
pub fn apply(config: &Path, servers: Vec<String>, undo: bool, mcpscope: &str) -> Outcome {
    let fail = |text: String| Outcome {
        lines: vec![text],
        ok: false,
        remotes: Vec::new(),
        unwrapped: Vec::new(),
    };
    let root = match state_dir::root() {
        Ok(r) => r,
        Err(e) => return fail(format!("no state directory: {e}")),
    };
    let mut ledger = match Ledger::load(&root) {
        Ok(l) => l,
        Err(e) => return fail(format!("cannot read the ledger of wrapped remote servers: {e}")),
    };
    let selection = Selection::Named(servers.clone());
    let report = if undo {
        wrap_file::unwrap_file(config, &selection, &mut ledger, false)
    } else {
        wrap_file::wrap_file(config, mcpscope, &selection, &mut ledger, false)
    };
    let report = match report {
        Ok(r) => r,
        Err(e) => return fail(format!("{e}; nothing was written")),
    };
    let mut lines = Vec::new();
    let mut unwrapped = Vec::new();
    for c in &report.changes {
        lines.push(c.to_string());
        if let Change::UnwrappedRemote { server, .. } = c {
            unwrapped.push(server.clone());
        }
    }
    // Newly wrapped or wrapped before: the app runs each one's reverse proxy
    // (`mcpscope proxy --listen` does the same without the app).
    let remotes: Vec<_> = if undo {
        Vec::new()
    } else {
        ledger
            .remotes()
            .iter()
            .filter(|r| Path::new(&r.config) == config && servers.contains(&r.server))
            .cloned()
            .collect()
    };
    for r in &remotes {
        lines.push(format!(
            "{}: without the app, run its proxy yourself: {}",
            r.server,
            r.proxy_command(mcpscope)
        ));
    }
    lines.push(report.summary(config));
    if report.written && !undo {
        lines.push("restart the client (or reload its MCP servers): its sessions appear under Live sessions".into());
    }
    lines.extend(report.warnings.iter().map(|w| format!("warning: {w}")));
    Outcome {
        lines,
        ok: true,
        remotes,
        unwrapped,
    }
}

/// The confirmation window for one imported config.
pub struct WatchClientDialog {
    pub config: PathBuf,
    /// Each server of the config and whether it is chosen.
    pub servers: Vec<(String, bool)>,
    pub outcome: Option<Outcome>,
    /// The mcpscope binary the client is to run; None: this one (the app is
    /// the `mcpscope` binary; tests name the real one).
    pub mcpscope: Option<String>,
    job: Option<Job<Outcome>>,
}

impl WatchClientDialog {
    pub fn new(config: PathBuf, servers: Vec<String>) -> Self {
        Self {
            config,
            servers: servers.into_iter().map(|s| (s, true)).collect(),
            outcome: None,
            mcpscope: None,
            job: None,
        }
    }

    pub fn busy(&self) -> bool {
        self.job.is_some()
    }

    /// Takes a finished wrap or unwrap; the remote entries whose reverse
    /// proxies are to start or stop (the app runs them).
    pub fn poll(&mut self) -> Option<&mut Outcome> {
        let outcome = self.job.take_ready()?;
        self.outcome = Some(outcome.unwrap_or_else(|e| Outcome {
            lines: vec![e.to_string()],
            ok: false,
            remotes: Vec::new(),
            unwrapped: Vec::new(),
        }));
        self.outcome.as_mut()
    }

    fn chosen(&self) -> Vec<String> {
        self.servers
            .iter()
            .filter(|(_, on)| *on)
            .map(|(n, _)| n.clone())
            .collect()
    }

    fn start(&mut self, undo: bool, waker: &Arc<dyn Fn() + Send + Sync>) {
        let (config, servers) = (self.config.clone(), self.chosen());
        let named = self.mcpscope.clone();
        self.job = Some(Job::spawn("wrap", Some(Arc::clone(waker)), move || {
            match named.map_or_else(this_binary, Ok) {
                Ok(me) => apply(&config, servers, undo, &me),
                Err(e) => Outcome {
                    lines: vec![crate::error_view::one_line(&e)],
                    ok: false,
                    remotes: Vec::new(),
                    unwrapped: Vec::new(),
                },
            }
        }));
    }

    /// Draws the window; returns false once it is closed.
    pub fn window(&mut self, ctx: &egui::Context, waker: &Arc<dyn Fn() + Send + Sync>) -> bool {
        let mut keep = true;
        egui::Window::new("Watch in your client")
            .collapsible(false)
            .resizable(true)
            .default_width(520.0)
            .show(ctx, |ui| keep = self.ui(ui, waker));
        keep
    }

    fn ui(&mut self, ui: &mut Ui, waker: &Arc<dyn Fn() + Send + Sync>) -> bool {
        let mut keep = true;
        ui.label(format!(
            "mcpscope will edit {} so that your client runs each chosen server through \
             `mcpscope proxy --session NAME` (remote servers: through a local reverse proxy, which \
             the app runs while it is open). Your client keeps working as before; each session it \
             starts appears under Live sessions.",
            self.config.display()
        ));
        ui.label(
            RichText::new(format!(
                "The file as it is before mcpscope changes it is saved first to {}. Unwrap (here or \
                 `mcpscope unwrap`) restores the entries exactly, and removes that copy once the file \
                 matches it again.",
                backup_path(&self.config).display()
            ))
            .color(theme::WARN),
        );
        ui.separator();
        for (name, on) in &mut self.servers {
            ui.checkbox(on, name.as_str());
        }
        ui.separator();
        let chosen = self.servers.iter().any(|(_, on)| *on);
        ui.horizontal(|ui| {
            let idle = !self.busy();
            if ui
                .add_enabled(idle && chosen, egui::Button::new("Wrap the chosen servers"))
                .clicked()
            {
                self.start(false, waker);
            }
            if ui
                .add_enabled(idle && chosen, egui::Button::new("Unwrap them"))
                .clicked()
            {
                self.start(true, waker);
            }
            if ui.button("Close").clicked() {
                keep = false;
            }
        });
        if self.busy() {
            ui.weak("writing…");
        }
        if let Some(o) = &self.outcome {
            let color = if o.ok { theme::OK } else { theme::ERROR };
            for line in &o.lines {
                ui.add(
                    egui::Label::new(RichText::new(line).color(color))
                        .wrap()
                        .selectable(true),
                );
            }
        }
        keep
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backup_sits_next_to_the_config() {
        assert_eq!(
            backup_path(Path::new("/home/u/.config/Claude/claude_desktop_config.json")),
            PathBuf::from("/home/u/.config/Claude/claude_desktop_config.json.mcpscope-backup")
        );
    }

    #[test]
    fn wraps_and_unwraps_a_config_and_keeps_a_backup() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("claude_desktop_config.json");
        let original =
            "{\n  \"mcpServers\": {\n    \"files\": {\"command\": \"python3\", \"args\": [\"server.py\"]}\n  }\n}\n";
        std::fs::write(&config, original).unwrap();
        // A stdio server only: the ledger of wrapped remotes is read, not written.
        let backup = backup_path(&config);
        let wrapped = apply(&config, vec!["files".into()], false, "/opt/mcpscope");
        assert!(wrapped.ok, "{:?}", wrapped.lines);
        let text = std::fs::read_to_string(&config).unwrap();
        assert!(text.contains("\"/opt/mcpscope\""), "{text}");
        assert!(text.contains("\"--session\""), "{text}");
        assert_eq!(std::fs::read_to_string(&backup).unwrap(), original);
        assert!(
            wrapped.lines.iter().any(|l| l.contains("mcpscope-backup")),
            "{:?}",
            wrapped.lines
        );
        let unwrapped = apply(&config, vec!["files".into()], true, "/opt/mcpscope");
        assert!(unwrapped.ok, "{:?}", unwrapped.lines);
        assert_eq!(std::fs::read_to_string(&config).unwrap(), original);
        // Back as it was: the backup is gone, and says so.
        assert!(!backup.exists());
        assert!(
            unwrapped.lines.iter().any(|l| l.contains("was removed")),
            "{:?}",
            unwrapped.lines
        );
    }

    #[test]
    fn a_broken_config_is_reported_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("mcp.json");
        std::fs::write(&config, "{\"mcpServers\": {").unwrap();
        let o = apply(&config, vec!["x".into()], false, "/opt/mcpscope");
        assert!(!o.ok);
        assert!(o.lines[0].contains("nothing was written"), "{:?}", o.lines);
        assert_eq!(std::fs::read_to_string(&config).unwrap(), "{\"mcpServers\": {");
        assert!(!backup_path(&config).exists());
    }
}
