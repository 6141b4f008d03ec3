//! `mcpscope wrap` / `mcpscope unwrap`: make a client's own config run its
//! servers through `mcpscope proxy`, and put it back.

use super::exit;
use clap::Args;
use mcpscope_core::config::wrap::{Change, Selection, WrapError};
use mcpscope_core::config::wrap_file::{self, Ledger};
use mcpscope_core::platform::dirs::{Client, System, UserDirs};
use mcpscope_core::record::state_dir;
use std::path::PathBuf;
use std::process::ExitCode;

/// Which config file: given by path, or a client's own, where this system
/// keeps it.
#[derive(Args, Debug)]
pub struct ConfigFile {
    /// The client's config: claude_desktop_config.json, a project .mcp.json,
    /// VS Code's mcp.json (comments and layout are kept) or Cursor's mcp.json.
    #[arg(required_unless_present = "client")]
    pub config: Option<PathBuf>,

    /// The config of this client, where this system keeps it (Claude
    /// Desktop: %APPDATA%\Claude on Windows, ~/Library/Application
    /// Support/Claude on macOS, ~/.config/Claude on Linux).
    #[arg(long, value_name = "CLIENT", conflicts_with = "config",
          value_parser = clap::builder::PossibleValuesParser::new(Client::ALL.map(Client::slug)))]
    pub client: Option<String>,
}

impl ConfigFile {
    /// The path, or the usage error said and its exit status.
    fn path(&self) -> Result<PathBuf, ExitCode> {
        self.resolve().map_err(|e| {
            crate::errln!("mcpscope: {e}");
            ExitCode::from(exit::USAGE)
        })
    }

    fn resolve(&self) -> Result<PathBuf, String> {
        if let Some(p) = &self.config {
            return Ok(p.clone());
        }
        let slug = self.client.as_deref().unwrap_or_default();
        let client = Client::from_slug(slug).ok_or_else(|| format!("no client called {slug}"))?;
        client
            .config_path(System::this(), &UserDirs::from_env())
            .ok_or_else(|| {
                format!(
                    "cannot tell where {} keeps its config here (no home directory)",
                    client.name()
                )
            })
    }
}

#[derive(Args, Debug)]
pub struct WrapArgs {
    #[command(flatten)]
    pub file: ConfigFile,

    /// A server to wrap (repeatable).
    #[arg(long = "server", value_name = "NAME", conflicts_with = "all")]
    pub servers: Vec<String>,

    /// Wrap every server in the file.
    #[arg(long)]
    pub all: bool,

    /// Say what would change without writing anything.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Args, Debug)]
pub struct UnwrapArgs {
    /// The config file `mcpscope wrap` changed.
    #[command(flatten)]
    pub file: ConfigFile,

    /// A server to restore (repeatable); by default every wrapped one.
    #[arg(long = "server", value_name = "NAME")]
    pub servers: Vec<String>,

    /// Say what would change without writing anything.
    #[arg(long)]
    pub dry_run: bool,
}

fn ledger() -> Result<Ledger, String> {
    let root = state_dir::root().map_err(|e| e.to_string())?;
    Ledger::load(&root).map_err(|e| format!("cannot read the ledger of wrapped remote servers: {e}"))
}

fn fail(e: &WrapError) -> ExitCode {
    crate::errln!("mcpscope: {e}; nothing was written");
    ExitCode::from(match e {
        WrapError::UnknownServers { .. } | WrapError::NothingChosen { .. } => exit::USAGE,
        WrapError::Config(_) | WrapError::Io(_) | WrapError::Ledger(_) => exit::IO,
    })
}

pub fn run_wrap(args: WrapArgs) -> ExitCode {
    let config = match args.file.path() {
        Ok(p) => p,
        Err(code) => return code,
    };
    let selection = if args.all {
        Selection::All
    } else {
        Selection::Named(args.servers.clone())
    };
    // Where the client will find mcpscope: this very binary, by absolute path,
    // since a desktop client's PATH is minimal.
    let me = match std::env::current_exe().and_then(std::fs::canonicalize) {
        Ok(p) => p.display().to_string(),
        Err(e) => {
            crate::errln!("mcpscope: cannot tell where this mcpscope binary is: {e}");
            return ExitCode::from(exit::IO);
        }
    };
    let mut ledger = match ledger() {
        Ok(l) => l,
        Err(e) => {
            crate::errln!("mcpscope: {e}");
            return ExitCode::from(exit::IO);
        }
    };
    let report = match wrap_file::wrap_file(&config, &me, &selection, &mut ledger, args.dry_run) {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    for c in &report.changes {
        println!("{c}");
        if let Change::WrappedRemote { remote, .. } = c {
            println!(
                "  start its proxy before the client connects:\n    {}",
                remote.proxy_command(&me)
            );
        }
    }
    summary(&config, &report, args.dry_run, "wrap");
    ExitCode::from(exit::OK)
}

pub fn run_unwrap(args: UnwrapArgs) -> ExitCode {
    let config = match args.file.path() {
        Ok(p) => p,
        Err(code) => return code,
    };
    let selection = if args.servers.is_empty() {
        Selection::All
    } else {
        Selection::Named(args.servers.clone())
    };
    let mut ledger = match ledger() {
        Ok(l) => l,
        Err(e) => {
            crate::errln!("mcpscope: {e}");
            return ExitCode::from(exit::IO);
        }
    };
    let report = match wrap_file::unwrap_file(&config, &selection, &mut ledger, args.dry_run) {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    for c in &report.changes {
        println!("{c}");
    }
    summary(&config, &report, args.dry_run, "unwrap");
    for w in &report.warnings {
        crate::errln!("mcpscope: warning: {w}");
    }
    ExitCode::from(exit::OK)
}

fn summary(config: &std::path::Path, report: &wrap_file::FileReport, dry_run: bool, verb: &str) {
    if dry_run {
        println!("dry run: {} left unchanged", config.display());
        return;
    }
    println!("{}", report.summary(config));
    if report.written && verb == "wrap" {
        println!("restart the client (or reload its MCP servers) to start watching; `mcpscope unwrap` undoes this");
    }
}
