//! The `mcpscope` command line: the desktop app's entry points and the
//! headless subcommands (`call`, `proxy`, `doctor`, `lint`) that share its engine.

mod call;
mod diff;
mod doctor;
mod lint;
mod proxy;
mod trace;

use crate::process::ServerSpec;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "mcpscope",
    version,
    about = "Inspect and debug MCP servers: see exactly what goes over the wire.",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Cmd>,

    /// Open the desktop app and launch this server from a config file
    /// (Claude Desktop, .mcp.json or VS Code mcp.json).
    #[arg(long, value_name = "FILE", requires = "server")]
    pub config: Option<PathBuf>,

    /// The server to launch from --config.
    #[arg(long, value_name = "NAME", requires = "config")]
    pub server: Option<String>,

    /// Open the desktop app and launch this server at once.
    #[arg(last = true, value_name = "COMMAND ARGS")]
    pub launch: Vec<String>,
}

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Handshake, send one request, print its result as JSON.
    Call(call::CallArgs),
    /// Sit between a real client and the server, forwarding every byte and recording both directions.
    Proxy(proxy::ProxyArgs),
    /// Check a server step by step and explain what is wrong.
    Doctor(doctor::DoctorArgs),
    /// Check a saved capture against the protocol's rules; exit 1 on any error-level finding.
    Lint(lint::LintArgs),
    /// Compare two captures of the same session against different servers, method by method.
    Diff(diff::DiffArgs),
    /// Open a saved capture in the desktop app.
    Open {
        /// A JSONL capture written by mcpscope (call --capture, proxy --capture, or the app).
        capture: PathBuf,
    },
}

/// How to start the server: shared by the subcommands.
#[derive(Args, Debug, Clone)]
pub struct ServerArgs {
    /// Environment variable for the server (repeatable), added to the inherited environment.
    #[arg(short = 'e', long = "env", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub env: Vec<(String, String)>,

    /// Working directory for the server.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,

    /// The server command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND ARGS")]
    pub command: Vec<String>,
}

impl ServerArgs {
    pub fn spec(&self) -> ServerSpec {
        let mut parts = self.command.iter();
        ServerSpec {
            program: parts.next().cloned().unwrap_or_default(),
            args: parts.cloned().collect(),
            env: self.env.clone(),
            cwd: self.cwd.clone(),
        }
    }
}

fn parse_key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
        _ => Err(format!("expected KEY=VALUE, got {s:?}")),
    }
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Cmd::Call(args)) => call::run(args),
        Some(Cmd::Proxy(args)) => proxy::run(args),
        Some(Cmd::Doctor(args)) => doctor::run(args),
        Some(Cmd::Lint(args)) => lint::run(args),
        Some(Cmd::Diff(args)) => diff::run(args),
        Some(Cmd::Open { capture }) => crate::app::run(crate::app::StartupArgs {
            open: Some(capture),
            ..Default::default()
        }),
        None => crate::app::run(crate::app::StartupArgs {
            config: cli.config,
            server: cli.server,
            launch: cli.launch,
            ..Default::default()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn env_pairs_parse() {
        assert_eq!(parse_key_value("A=b=c").unwrap(), ("A".into(), "b=c".into()));
        assert!(parse_key_value("=x").is_err());
        assert!(parse_key_value("novalue").is_err());
    }
}
