//! `mcpscope proxy`: put mcpscope between a real client and its server, over
//! stdio (`-- COMMAND`) or HTTP (`--listen ADDR --upstream URL`).

use super::{exit, watch};
use clap::Args;
use mcpscope_core::proxy::reverse::{self, ReverseProxyOptions};
use mcpscope_core::proxy::stdio::{self, LiveRecord, ProxyOptions};
use mcpscope_core::record::{capture, state_dir};
use mcpscope_core::text::ErrorChain;
use mcpscope_core::transport::process::ServerSpec;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct ProxyArgs {
    /// Append both directions and the server's stderr to this JSONL capture
    /// (each session after a header line of its own; created 0600).
    #[arg(long, value_name = "FILE")]
    pub capture: Option<PathBuf>,

    /// Record the session under this name in the per-user session directory
    /// ($XDG_STATE_HOME/mcpscope/sessions), where the app lists and follows it live.
    #[arg(long, value_name = "NAME", conflicts_with = "capture")]
    pub session: Option<String>,

    /// Be an HTTP reverse proxy listening on this loopback address (e.g.
    /// 127.0.0.1:8931) for a client of a remote server; needs --upstream.
    #[arg(long, value_name = "ADDR", requires = "upstream")]
    pub listen: Option<String>,

    /// The remote server's MCP endpoint that --listen forwards to.
    #[arg(long, value_name = "URL", requires = "listen")]
    pub upstream: Option<String>,

    /// Environment variable for the server (repeatable), added to the inherited environment.
    #[arg(short = 'e', long = "env", value_name = "KEY=VALUE", value_parser = super::parse_key_value)]
    pub env: Vec<(String, String)>,

    /// Working directory for the server.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,

    /// Send OpenTelemetry traces of the sessions to this collector while they
    /// run (OTLP/HTTP JSON; `/v1/traces` is added unless given): a span per
    /// request, sent within 5 s of its answer; the session span and requests
    /// never answered when the proxy ends.
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,

    /// Hold frames matching this display filter until you act on them (app,
    /// or `mcpscope intercept`); repeatable. Prefix `c2s:` or `s2c:` to stop
    /// one direction only, e.g. 'c2s: method == "tools/call"'.
    #[arg(long = "break", value_name = "EXPR")]
    pub breaks: Vec<String>,

    /// A held frame goes on by itself after this long, so a forgotten
    /// breakpoint does not hang the client (`none`: wait for ever).
    #[arg(long, value_name = "DURATION", default_value = "60s")]
    pub break_timeout: String,

    /// A fault rule, `EXPR => ACTION [p=P] [first N] [after N] [every N]`
    /// (repeatable): delay 2s | delay 100ms..2s | drop | duplicate | reorder |
    /// corrupt [truncate|flip|utf8|not-json] | replace JSON | error CODE "msg" |
    /// stall | disconnect | kill-server | http-status 503 [RETRY_AFTER] | slow 100B/s.
    #[arg(long = "fault", value_name = "RULE")]
    pub faults: Vec<String>,

    /// Fault rules and breakpoints from a file (TOML, or JSON when it ends in .json).
    #[arg(long = "faults", value_name = "FILE")]
    pub faults_file: Option<PathBuf>,

    /// Seed for the fault rules' dice (probabilities, delay ranges,
    /// corruptions), so a run can be repeated; printed when not given.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,

    /// Serve the intercept control socket even with no breakpoint or rule
    /// given, so they can be set live from the app or `mcpscope intercept`.
    #[arg(long)]
    pub intercept: bool,

    /// Name the control socket (`$XDG_STATE_HOME/mcpscope/intercept/NAME.sock`;
    /// letters, digits, `-`, `_`, `.`) instead of after the proxy's pid, so
    /// whoever started the proxy knows where to attach (the app does).
    #[arg(long, value_name = "NAME")]
    pub control_name: Option<String>,

    /// The server command and its arguments, after `--` (stdio).
    #[arg(last = true, value_name = "COMMAND ARGS")]
    pub command: Vec<String>,
}

/// Exit status: the server's (128 + signal when it was killed); 127 when it
/// could not be started (as a shell says for a command not found); 4 when the
/// capture cannot be written (checked before the server starts).
pub fn run(args: ProxyArgs) -> ExitCode {
    if let (Some(listen), Some(upstream)) = (&args.listen, &args.upstream) {
        return run_reverse(&args, listen, upstream);
    }
    let mut parts = args.command.iter();
    let Some(program) = parts.next() else {
        crate::errln!("mcpscope proxy: give the server command after `--` (or --listen ADDR --upstream URL)");
        return ExitCode::from(exit::USAGE);
    };
    let spec = ServerSpec {
        program: program.clone(),
        args: parts.cloned().collect(),
        env: args.env.clone(),
        cwd: args.cwd.clone(),
    };
    // Refuse before the client starts talking: a proxy that cannot record
    // where it was told to is not what was asked for.
    if let Err(e) = watch::check_capture(args.capture.as_deref()) {
        crate::errln!("mcpscope proxy: {e}");
        return ExitCode::from(exit::IO);
    }
    let traces = match live_traces(&args, capture::Header::for_spec(&spec, "proxy")) {
        Ok(t) => t,
        Err(code) => return code,
    };
    let gate = match super::intercept::gate_of(&args, false) {
        Ok(g) => g,
        Err(e) => {
            crate::errln!("mcpscope proxy: {e}");
            return ExitCode::from(exit::USAGE);
        }
    };
    let mut options = ProxyOptions {
        capture: args.capture.clone(),
        tap: traces.as_ref().map(super::export::LiveTraces::tap),
        control_socket: gate.as_ref().map(|g| g.control.path().to_owned()),
        ..ProxyOptions::default()
    };
    if let Some(name) = &args.session {
        // The server must run even if there is nowhere to record it.
        match state_dir::sessions_dir() {
            Ok(dir) => {
                options.session = Some(LiveRecord {
                    dir,
                    name: name.clone(),
                })
            }
            Err(e) => crate::errln!("mcpscope proxy: not recording this session: {e}"),
        }
    }
    // The client reads our stdout as the server's: nothing of ours may go there.
    // The server's stderr goes to the client as it came; on a terminal (the
    // proxy run by hand) its control bytes are shown escaped.
    let client_err: Box<dyn std::io::Write + Send> = if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        Box::new(super::output::TerminalSafeBytes::new(std::io::stderr()))
    } else {
        Box::new(std::io::stderr())
    };
    let outcome = match gate {
        None => stdio::run(&spec, &options, std::io::stdin(), std::io::stdout(), client_err),
        Some(g) => {
            // A `disconnect` closes the client's stdout: the proxy holds the
            // only descriptor of it, fd 1 itself points at /dev/null.
            let client_out = match super::intercept::take_stdout() {
                Ok(f) => f,
                Err(e) => {
                    crate::errln!("mcpscope proxy: cannot take over stdout: {e}");
                    return ExitCode::from(exit::IO);
                }
            };
            let outcome = stdio::run_gated(
                &spec,
                &options,
                Some(Box::new(g.gate)),
                std::io::stdin(),
                client_out,
                client_err,
            );
            drop(g.control);
            outcome
        }
    };
    if let Some(t) = traces {
        t.finish();
    }
    match outcome {
        Ok(outcome) => {
            for n in &outcome.notes {
                crate::errln!("mcpscope proxy: {n}");
            }
            if outcome.notes.iter().any(|n| n.starts_with(capture::FAILED)) {
                return ExitCode::from(exit::IO);
            }
            let code = outcome.status.map_or(1, |s| s.shell_code());
            ExitCode::from(code.clamp(0, 255) as u8)
        }
        Err(e) => {
            crate::errln!("mcpscope proxy: could not start the server: {e}");
            ExitCode::from(exit::NOT_STARTED)
        }
    }
}

fn run_reverse(args: &ProxyArgs, listen: &str, upstream: &str) -> ExitCode {
    if !args.command.is_empty() || !args.env.is_empty() || args.cwd.is_some() {
        crate::errln!("mcpscope proxy: --listen forwards to --upstream; a command, --env or --cwd has no place there");
        return ExitCode::from(exit::USAGE);
    }
    let mut options = match ReverseProxyOptions::new(listen, upstream) {
        Ok(o) => o,
        Err(e) => {
            crate::errln!("mcpscope proxy: {}", ErrorChain(&e));
            return ExitCode::from(exit::USAGE);
        }
    };
    options.capture = args.capture.clone();
    let target = mcpscope_core::transport::target::Target::Http(
        mcpscope_core::transport::target::HttpTarget::streamable(upstream),
    );
    let traces = match live_traces(args, capture::Header::for_target(&target, "proxy")) {
        Ok(t) => t,
        Err(code) => return code,
    };
    options.tap = traces.as_ref().map(super::export::LiveTraces::tap);
    let gate = match super::intercept::gate_of(args, true) {
        Ok(g) => g,
        Err(e) => {
            crate::errln!("mcpscope proxy: {e}");
            return ExitCode::from(exit::USAGE);
        }
    };
    options.control_socket = gate.as_ref().map(|g| g.control.path().to_owned());
    if let Some(name) = &args.session {
        match state_dir::sessions_dir() {
            Ok(dir) => {
                options.session = Some(LiveRecord {
                    dir,
                    name: name.clone(),
                })
            }
            Err(e) => crate::errln!("mcpscope proxy: not recording this session: {e}"),
        }
    }
    let mut proxy = match reverse::ReverseProxy::bind(options) {
        Ok(p) => p,
        Err(e) => {
            crate::errln!("mcpscope proxy: {}", ErrorChain(&e));
            return ExitCode::from(exit::UNREACHABLE);
        }
    };
    // Kept until the proxy ends: dropping it removes the socket.
    let mut control = None;
    if let Some(g) = gate {
        proxy = proxy.with_gate(Box::new(g.gate));
        control = Some(g.control);
    }
    // A client (or a script) may wait for this line to know the port is open.
    for n in proxy.take_notes() {
        crate::errln!("mcpscope proxy: {n}; forwarding goes on");
    }
    crate::errln!(
        "mcpscope proxy: listening on http://{} and forwarding to {}",
        proxy.local_addr(),
        mcpscope_core::transport::target::mask_url(upstream)
    );
    let outcome = proxy.run_until_stopped();
    drop(control);
    for n in &outcome.notes {
        crate::errln!("mcpscope proxy: {n}");
    }
    if let Some(t) = traces {
        t.finish();
    }
    ExitCode::from(exit::OK)
}

/// `--otlp-endpoint`: the live exporter, or the usage error for a bad URL.
fn live_traces(args: &ProxyArgs, header: capture::Header) -> Result<Option<super::export::LiveTraces>, ExitCode> {
    let Some(endpoint) = &args.otlp_endpoint else {
        return Ok(None);
    };
    super::export::LiveTraces::start("proxy", endpoint, header)
        .map(Some)
        .map_err(|e| {
            crate::errln!("mcpscope proxy: {}", ErrorChain(&e));
            ExitCode::from(exit::USAGE)
        })
}
