//! The `mcpscope` command line: the desktop app's entry points and the
//! headless subcommands (`call`, `proxy`, `wrap`, `doctor`, `lint`, …) that share its engine.

mod app;
mod auth;
mod call;
mod chat;
mod diff;
mod docs;
mod doctor;
mod exit;
mod export;
mod filter;
mod gui;
mod import;
mod intercept;
mod lint;
mod listen;
mod load;
mod mock;
pub(crate) mod output;
mod proxy;
mod signals;
mod skills;
mod stats;
mod test;
mod trace;
mod verify;
mod watch;
mod wrap;

use clap::{Args, Parser, Subcommand};
use mcpscope_core::transport::process::ServerSpec;
use mcpscope_core::transport::target::{HttpKind, HttpTarget, Target};
use mcpscope_core::wire::classify::Limits;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// The version and the commit it was built from (`build.rs`).
pub(crate) const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("MCPSCOPE_COMMIT"), ")");

#[derive(Parser, Debug)]
#[command(
    name = "mcpscope",
    version = VERSION,
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

    /// The desktop app sends each session it launches to this OpenTelemetry
    /// collector while it runs (OTLP/HTTP JSON; `/v1/traces` is added unless given).
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
}

// Parsed once at startup and matched once: the size of the largest variant
// costs nothing, and boxing it would only obscure the clap derive.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Handshake, send one request, print its result as JSON.
    Call(call::CallArgs),
    /// Sit between a real client and the server, forwarding every byte and recording both directions.
    Proxy(proxy::ProxyArgs),
    /// Act on a running intercepting proxy (`proxy --break/--fault/--intercept`):
    /// list, forward, edit, drop or answer held frames, inject frames, set rules.
    Intercept(intercept::InterceptArgs),
    /// Check a server step by step and explain what is wrong.
    Doctor(doctor::DoctorArgs),
    /// Check a saved capture against the protocol's rules; exit 1 on any error-level finding.
    Lint(lint::LintArgs),
    /// Compare two captures of the same session against different servers, method by method.
    Diff(diff::DiffArgs),
    /// Print the records of a capture that match a display filter
    /// (e.g. 'method == "tools/call" and latency > 500ms'; --fields lists the fields).
    Filter(filter::FilterArgs),
    /// A model in the loop: the server's tools offered to a model (OpenAI-compatible
    /// or Anthropic), each call it asks for run through the session, until it answers.
    Chat(chat::ChatArgs),
    /// Run test files (*.mcp.yaml): steps with assertions, captures, snapshots,
    /// contracts over the session and evals with a model, against a live server
    /// or a recording (--against); reports as text, JSON, JUnit or SARIF.
    Test(test::TestArgs),
    /// Statistics of a capture, as Wireshark's Statistics menu: conversations,
    /// endpoints, service response time, I/O graph, Expert Info, and what the
    /// server's definitions cost a model's context (also of a live server: --context -- SERVER).
    Stats(stats::StatsArgs),
    /// Open a subscriptions/listen stream on a 2026-07-28 server and print its notifications, one per line.
    Listen(listen::ListenArgs),
    /// Skills over MCP (SEP-2640): list a server's skills, or load one (SKILL.md
    /// and the files asked for), each file verified against the listing.
    Skills(skills::SkillsArgs),
    /// Serve a capture again as a stdio MCP server: each request gets its recorded
    /// answer (--check lists what can be served).
    Mock(mock::MockArgs),
    /// Check a live server against a capture: `--surface` compares its capabilities
    /// and tool, prompt, resource and template lists (breaking or compatible changes).
    Verify(verify::VerifyArgs),
    /// Many sessions against one server: throughput and latency percentiles
    /// (HDR), errors by class; a closed loop (--concurrency), an open loop at a
    /// fixed rate (--rate, latency from each due time), or a ramp to the knee.
    Load(load::LoadArgs),
    /// Host a tool's MCP App (its ui:// View) in your browser, with every View<->host message traced and recorded.
    App(app::AppArgs),
    /// Make a client's config (Claude Desktop, .mcp.json, VS Code, Cursor) run its servers through `mcpscope proxy`.
    Wrap(wrap::WrapArgs),
    /// Restore the config entries `mcpscope wrap` changed, exactly as they were.
    Unwrap(wrap::UnwrapArgs),
    /// Write a capture in another tool's format: HAR for browser devtools and HTTP debuggers.
    Export(export::ExportArgs),
    /// Read another tool's capture (mcpsnoop, mcp-recorder, the MCP Inspector, HAR) into an mcpscope capture.
    Import(import::ImportArgs),
    /// Open a saved capture in the desktop app.
    Open {
        /// A JSONL capture written by mcpscope (call --capture, proxy --capture, or the app).
        capture: PathBuf,
    },
    /// Print the shell completion script for SHELL, e.g.
    /// `mcpscope completions bash > ~/.local/share/bash-completion/completions/mcpscope`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), e.g. `mcpscope man > mcpscope.1`.
    Man,
}

/// How a subcommand reaches its server: a command to start (stdio, the
/// default), or a URL (`--transport http|sse --server-url URL`).
#[derive(Args, Debug, Clone)]
pub struct TargetArgs {
    /// How to reach the server: stdio (start COMMAND), http (Streamable HTTP)
    /// or sse (the older HTTP+SSE transport). Defaults to http with --server-url.
    #[arg(long, value_enum, value_name = "TRANSPORT")]
    pub transport: Option<TransportArg>,

    /// The server's URL: the MCP endpoint (http), or the SSE endpoint (sse).
    #[arg(long, value_name = "URL")]
    pub server_url: Option<String>,

    /// An HTTP header sent with every request (repeatable), e.g.
    /// "Authorization: Bearer …". Values are masked in traces and captures.
    #[arg(short = 'H', long = "header", value_name = "NAME:VALUE", value_parser = mcpscope_core::transport::target::parse_header)]
    pub headers: Vec<(String, String)>,

    /// Streamable HTTP: do not open the GET stream for server-initiated messages.
    #[arg(long)]
    pub no_get_stream: bool,

    /// Environment variable for the server (repeatable), added to the inherited environment.
    #[arg(short = 'e', long = "env", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub env: Vec<(String, String)>,

    /// Working directory for the server.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,

    /// The most one message (a stdout line, an HTTP body, an SSE event) may
    /// hold in memory, e.g. 256MiB. A longer one is recorded in pieces of
    /// this size, every byte in the capture, but is not read as a message.
    #[arg(long, value_name = "SIZE", default_value = "64MiB", value_parser = parse_line_size)]
    pub max_line: usize,

    /// The server command and its arguments, after `--` (stdio only).
    #[arg(last = true, value_name = "COMMAND ARGS")]
    pub command: Vec<String>,
}

/// `--era`: which protocol era to speak.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum EraArg {
    /// The initialize handshake (2024-11-05 … 2025-11-25).
    Legacy,
    /// Stateless requests with the _meta envelope (2026-07-28).
    Modern,
    /// Probe with server/discover, fall back to initialize.
    Auto,
}

impl From<EraArg> for mcpscope_core::protocol::era::EraChoice {
    fn from(a: EraArg) -> Self {
        match a {
            EraArg::Legacy => mcpscope_core::protocol::era::EraChoice::Legacy,
            EraArg::Modern => mcpscope_core::protocol::era::EraChoice::Modern,
            EraArg::Auto => mcpscope_core::protocol::era::EraChoice::Auto,
        }
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransportArg {
    Stdio,
    Http,
    Sse,
}

fn parse_line_size(s: &str) -> Result<usize, String> {
    let n = mcpscope_core::text::parse_size(s).map_err(|e| e.to_string())?;
    // Below a few kilobytes every ordinary answer would be cut.
    if n < 4096 {
        return Err(format!("{s:?} is less than 4 KiB: ordinary messages would not fit"));
    }
    usize::try_from(n).map_err(|_| format!("{s:?} is more than this machine can address"))
}

impl TargetArgs {
    /// The framing limits these arguments ask for.
    pub fn limits(&self) -> Limits {
        Limits {
            max_held_line_bytes: self.max_line,
            ..Limits::default()
        }
    }

    /// What to connect to, or why the arguments do not say.
    pub fn target(&self) -> Result<Target, String> {
        let transport = self.transport.unwrap_or(if self.server_url.is_some() {
            TransportArg::Http
        } else {
            TransportArg::Stdio
        });
        let kind = match transport {
            TransportArg::Stdio => {
                if self.server_url.is_some() || !self.headers.is_empty() {
                    return Err("--server-url and --header need --transport http or sse".into());
                }
                if self.command.is_empty() {
                    return Err("give the server command after `--` (or --transport http|sse --server-url URL)".into());
                }
                let mut parts = self.command.iter();
                return Ok(Target::Stdio(ServerSpec {
                    program: parts.next().cloned().unwrap_or_default(),
                    args: parts.cloned().collect(),
                    env: self.env.clone(),
                    cwd: self.cwd.clone(),
                }));
            }
            TransportArg::Http => HttpKind::StreamableHttp,
            TransportArg::Sse => HttpKind::Sse,
        };
        let Some(url) = &self.server_url else {
            return Err(format!("--transport {} needs --server-url URL", kind.as_str()));
        };
        if !self.command.is_empty() {
            return Err(format!(
                "--transport {} connects to a running server: drop the command after `--`",
                kind.as_str()
            ));
        }
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(format!("--server-url must start with http:// or https://, got {url:?}"));
        }
        let mut t = HttpTarget::new(url.clone(), kind);
        t.headers = self.headers.clone();
        t.open_get_stream = !self.no_get_stream;
        Ok(Target::Http(t))
    }
}

fn parse_key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
        _ => Err(format!("expected KEY=VALUE, got {s:?}")),
    }
}

pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version are not errors; everything else clap
            // refuses is a usage error, with its own exit status.
            let code = if e.use_stderr() { exit::USAGE } else { exit::OK };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    // The app's environment is set while mcpscope is still single-threaded
    // (signals::install starts a thread).
    let opens_the_app = match &cli.command {
        Some(Cmd::Open { .. }) | None => true,
        Some(Cmd::Diff(d)) => d.app,
        Some(_) => false,
    };
    if opens_the_app {
        gui::prepare_environment();
    }
    // Subcommands that run servers end them properly on SIGINT, SIGTERM
    // and SIGHUP; lint and diff keep the default (they hold no processes).
    let backstop = signals::Then::Return {
        grace: Duration::from_secs(30),
    };
    match &cli.command {
        Some(
            Cmd::Call(_)
            | Cmd::Proxy(_)
            | Cmd::Doctor(_)
            | Cmd::Listen(_)
            | Cmd::Skills(_)
            | Cmd::Verify(_)
            | Cmd::Load(_)
            | Cmd::App(_)
            | Cmd::Mock(_)
            | Cmd::Stats(_)
            | Cmd::Chat(_)
            | Cmd::Test(_),
        ) => signals::install(backstop),
        Some(Cmd::Open { .. }) | None => signals::install(signals::Then::Exit),
        Some(Cmd::Diff(d)) if d.app => signals::install(signals::Then::Exit),
        Some(
            Cmd::Lint(_)
            | Cmd::Diff(_)
            | Cmd::Filter(_)
            | Cmd::Wrap(_)
            | Cmd::Unwrap(_)
            | Cmd::Export(_)
            | Cmd::Import(_)
            | Cmd::Intercept(_)
            | Cmd::Completions { .. }
            | Cmd::Man,
        ) => {}
    }
    let code = match cli.command {
        Some(Cmd::Call(args)) => call::run(args),
        Some(Cmd::Proxy(args)) => proxy::run(args),
        Some(Cmd::Intercept(args)) => intercept::run(args),
        Some(Cmd::Doctor(args)) => doctor::run(args),
        Some(Cmd::Lint(args)) => lint::run(args),
        Some(Cmd::Diff(args)) => diff::run(args),
        Some(Cmd::Filter(args)) => filter::run(args),
        Some(Cmd::Stats(args)) => stats::run(args),
        Some(Cmd::Chat(args)) => chat::run(args),
        Some(Cmd::Test(args)) => test::run(args),
        Some(Cmd::Listen(args)) => listen::run(args),
        Some(Cmd::Skills(args)) => skills::run(args),
        Some(Cmd::Mock(args)) => mock::run(args),
        Some(Cmd::Verify(args)) => verify::run(args),
        Some(Cmd::Load(args)) => load::run(args),
        Some(Cmd::App(args)) => app::run(args),
        Some(Cmd::Wrap(args)) => wrap::run_wrap(args),
        Some(Cmd::Unwrap(args)) => wrap::run_unwrap(args),
        Some(Cmd::Export(args)) => export::run(args),
        Some(Cmd::Import(args)) => import::run(args),
        Some(Cmd::Completions { shell }) => docs::completions(shell),
        Some(Cmd::Man) => docs::man_page(),
        Some(Cmd::Open { capture }) => gui::run(gui::Startup {
            open: Some(capture),
            ..Default::default()
        }),
        None => {
            if let Some(endpoint) = &cli.otlp_endpoint
                && let Err(e) = mcpscope_core::interop::otlp_http::traces_url(endpoint)
            {
                crate::errln!("mcpscope: {}", mcpscope_core::text::ErrorChain(&e));
                return ExitCode::from(exit::USAGE);
            }
            gui::run(gui::Startup {
                config: cli.config,
                server: cli.server,
                launch: cli.launch,
                otlp_endpoint: cli.otlp_endpoint,
                ..Default::default()
            })
        }
    };
    if let Some(what) = signals::caught() {
        crate::errln!(
            "mcpscope: stopped by {}: the server was shut down{}",
            what.name(),
            " (its capture, if any, records how)"
        );
        return ExitCode::from(what.exit_status());
    }
    if output::stdout_closed() {
        return ExitCode::from(output::STDOUT_CLOSED_STATUS);
    }
    code
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

    fn target(args: &[&str]) -> Result<Target, String> {
        #[derive(Parser)]
        struct W {
            #[command(flatten)]
            a: TargetArgs,
        }
        W::try_parse_from(std::iter::once("x").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?
            .a
            .target()
    }

    #[test]
    fn targets_from_arguments() {
        let Target::Stdio(spec) = target(&["--", "node", "s.js"]).unwrap() else {
            panic!()
        };
        assert_eq!(spec.program, "node");
        let Target::Http(h) = target(&[
            "--server-url",
            "http://127.0.0.1:9/mcp",
            "-H",
            "Authorization: Bearer t",
        ])
        .unwrap() else {
            panic!()
        };
        assert_eq!(h.kind, HttpKind::StreamableHttp);
        assert_eq!(h.headers, vec![("Authorization".into(), "Bearer t".into())]);
        let Target::Http(h) = target(&["--transport", "sse", "--server-url", "http://h/sse"]).unwrap() else {
            panic!()
        };
        assert_eq!(h.kind, HttpKind::Sse);
        assert!(target(&[]).unwrap_err().contains("after `--`"));
        assert!(target(&["--transport", "http"]).unwrap_err().contains("--server-url"));
        assert!(
            target(&["--server-url", "http://h/", "--", "node"])
                .unwrap_err()
                .contains("drop the command")
        );
        assert!(target(&["--transport", "stdio", "--server-url", "http://h/", "--", "x"]).is_err());
        assert!(target(&["--server-url", "ftp://h/"]).is_err());
    }
}
