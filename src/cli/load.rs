//! `mcpscope load`: many sessions against one server, with honest latency
//! percentiles (HDR histograms; an open loop measures from each request's
//! due time, as wrk2 does).

use super::TargetArgs;
use super::exit;
use clap::Args;
use mcpscope_core::load::plan::{Ramp, RequestSpec, Workload};
use mcpscope_core::load::report;
use mcpscope_core::load::stats::Stats;
use mcpscope_core::protocol::era::EraChoice;
use mcpscope_core::protocol::handshake::{self, HandshakeOptions};
use mcpscope_core::schema::typed_arg;
use mcpscope_core::transport::target::Target;
use serde_json::{Map, Value, json};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

#[derive(Args, Debug)]
pub struct LoadArgs {
    /// The method every request calls (with --params), e.g. tools/list.
    #[arg(long, conflicts_with_all = ["tool_name", "mix", "replay"])]
    pub method: Option<String>,

    /// The params of --method, as a JSON object.
    #[arg(long, value_name = "JSON", requires = "method")]
    pub params: Option<String>,

    /// Call this tool (tools/call) every time.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["mix", "replay"])]
    pub tool_name: Option<String>,

    /// An argument of --tool-name (repeatable; JSON values are typed: 3, true, {"a":1}).
    #[arg(long, value_name = "KEY=VALUE", value_parser = super::parse_key_value, requires = "tool_name")]
    pub tool_arg: Vec<(String, String)>,

    /// A weighted mix of requests: a JSON file of
    /// [{"weight": 70, "tool": "echo", "arguments": {...}}, {"weight": 10, "method": "tools/list"}, ...].
    #[arg(long, value_name = "FILE", conflicts_with = "replay")]
    pub mix: Option<PathBuf>,

    /// The client side of this capture, replayed by every session in order
    /// (its handshake left out: each session makes its own).
    #[arg(long, value_name = "CAPTURE")]
    pub replay: Option<PathBuf>,

    /// Sessions at once (stdio: server processes), at most 10000. Default: --concurrency, else 1.
    #[arg(long, value_name = "N")]
    pub sessions: Option<usize>,

    /// A closed loop with N requests in flight (N sessions, one request each
    /// at a time): the next request goes when an answer comes.
    #[arg(long, value_name = "N", conflicts_with = "rate")]
    pub concurrency: Option<usize>,

    /// Requests in flight per session in a closed loop (stdio and client
    /// sessions, told apart by id), at most 1000; with --concurrency N: N sessions × M.
    #[arg(long, value_name = "M", default_value_t = 1, conflicts_with = "rate")]
    pub in_flight: usize,

    /// An open loop at R requests a second on a fixed timetable; latency
    /// counts from each request's due time, so a stalled server shows its queue.
    #[arg(long, value_name = "R")]
    pub rate: Option<f64>,

    /// How long to run (e.g. 30s, 2m, at most 8760h); default 10s unless --requests.
    #[arg(long, value_name = "DURATION", value_parser = duration_arg)]
    pub duration: Option<Duration>,

    /// Stop after this many requests.
    #[arg(long, value_name = "N")]
    pub requests: Option<u64>,

    /// Run this long first without counting (caches, JIT, connections).
    #[arg(long, value_name = "DURATION", value_parser = duration_arg, default_value = "0s")]
    pub warmup: Duration,

    /// Raise the concurrency from FROM to TO over DURATION (closed loop) and
    /// report the knee: `--ramp "1..64 over 60s"`.
    #[arg(long, value_name = "FROM..TO over DURATION", value_parser = Ramp::parse, conflicts_with_all = ["rate", "concurrency", "duration"])]
    pub ramp: Option<Ramp>,

    /// Per-request timeout.
    #[arg(long, default_value_t = 30_000)]
    pub timeout_ms: u64,

    /// The protocol version to offer (legacy) or send (2026-07-28).
    #[arg(long)]
    pub protocol_version: Option<String>,

    /// legacy (initialize), modern (2026-07-28, stateless), or auto.
    #[arg(long, value_enum)]
    pub era: Option<super::EraArg>,

    /// text (a table), json, or junit (a case per method or tool, failed by its errors).
    #[arg(long, value_enum, default_value = "text")]
    pub format: LoadFormat,

    /// Keep captures of the sessions here (stdio and https sessions): every
    /// --sample-every'th, and every one that saw a failure.
    #[arg(long, value_name = "DIR")]
    pub capture_dir: Option<PathBuf>,

    /// With --capture-dir: keep every Nth session (the failed ones always).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub sample_every: usize,

    /// Send the sampled sessions' (every --sample-every'th) OpenTelemetry
    /// traces to this collector while they run (OTLP/HTTP, as `proxy` does).
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,

    /// No progress line on stderr.
    #[arg(long, short)]
    pub quiet: bool,

    #[command(flatten)]
    pub server: TargetArgs,

    #[command(flatten)]
    pub auth: super::auth::AuthArgs,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadFormat {
    Text,
    Json,
    Junit,
}

fn duration_arg(s: &str) -> Result<Duration, String> {
    mcpscope_core::duration::parse(s).map_err(|e| e.to_string())
}

fn workload(args: &LoadArgs) -> Result<Workload, String> {
    if let Some(path) = &args.mix {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read --mix {}: {e}", path.display()))?;
        return Workload::parse_mix(&text).map_err(|e| format!("--mix {}: {e}", path.display()));
    }
    if let Some(path) = &args.replay {
        let requests = mcpscope_core::load::requests_of_capture(path)
            .map_err(|e| format!("--replay: {}", mcpscope_core::text::ErrorChain(&e)))?;
        if requests.is_empty() {
            return Err(format!(
                "--replay {}: the capture has no client requests beyond the handshake",
                path.display()
            ));
        }
        return Ok(Workload::Sequence(requests));
    }
    if let Some(name) = &args.tool_name {
        let arguments: Map<String, Value> = args
            .tool_arg
            .iter()
            .map(|(k, v)| (k.clone(), typed_arg::untyped(v)))
            .collect();
        return Ok(Workload::One(RequestSpec {
            method: "tools/call".into(),
            params: Some(json!({"name": name, "arguments": arguments})),
        }));
    }
    if let Some(method) = &args.method {
        let params = match &args.params {
            None => None,
            Some(t) => match serde_json::from_str::<Value>(t) {
                Ok(v @ Value::Object(_)) => Some(v),
                _ => return Err("--params must be a JSON object".into()),
            },
        };
        return Ok(Workload::One(RequestSpec {
            method: method.clone(),
            params,
        }));
    }
    Err("say what to send: --tool-name NAME, --method METHOD, --mix FILE or --replay CAPTURE".into())
}

fn fail(code: u8, why: impl std::fmt::Display) -> ExitCode {
    crate::errln!("mcpscope load: {why}");
    ExitCode::from(code)
}

/// Exit status: 0 every request succeeded; 1 some failed (the report says
/// how); 3 no session could start; 64 a usage error.
pub fn run(args: LoadArgs) -> ExitCode {
    let workload = match workload(&args) {
        Ok(w) => w,
        Err(e) => return fail(exit::USAGE, e),
    };
    if args.rate.is_some_and(|r| !(r.is_finite() && r > 0.0)) {
        return fail(exit::USAGE, "--rate must be a positive number of requests a second");
    }
    let target = match args.server.target() {
        Ok(t) => t,
        Err(e) => return fail(exit::USAGE, e),
    };
    let choice = match (args.era, &args.protocol_version) {
        (Some(e), _) => e.into(),
        (None, Some(v)) => EraChoice::implied_by_version(v),
        (None, None) => EraChoice::Legacy,
    };
    let protocol_version = args.protocol_version.clone().unwrap_or_else(|| match choice {
        EraChoice::Modern => mcpscope_core::protocol::era::DEFAULT_MODERN_VERSION.to_owned(),
        _ => handshake::DEFAULT_VERSION.to_owned(),
    });
    let sessions = args
        .sessions
        .or(args.concurrency)
        .or(args.ramp.map(|r| r.to))
        .unwrap_or(1)
        .max(1);
    if let Some(c) = args.concurrency
        && c != sessions
    {
        return fail(
            exit::USAGE,
            format!(
                "--concurrency {c} is {c} sessions with a request each in flight: leave out --sessions, or make them equal"
            ),
        );
    }
    // Refused before anything is sent (a sign-in included).
    match mcpscope_core::load::plan::check_sizes(sessions, args.in_flight) {
        Ok(()) => {}
        Err(e @ mcpscope_core::load::plan::SizeError::InFlight(_)) => {
            return fail(exit::USAGE, format!("--in-flight: {e}"));
        }
        Err(e) => {
            let flag = if args.sessions.is_some() {
                "--sessions"
            } else {
                "--concurrency"
            };
            return fail(exit::USAGE, format!("{flag}: {e}"));
        }
    }
    let duration = match (args.duration, args.requests, args.ramp) {
        (Some(d), _, _) => Some(d),
        (None, Some(_), _) | (None, None, Some(_)) => None,
        (None, None, None) => Some(Duration::from_secs(10)),
    };
    let timeout = Duration::from_millis(args.timeout_ms);
    let stop = Arc::new(AtomicBool::new(false));
    let quiet = args.quiet;
    let stop_on_signal = Arc::clone(&stop);
    let progress = move |stats: &Stats, elapsed: Duration| {
        if super::signals::caught().is_some() {
            stop_on_signal.store(true, Ordering::Relaxed);
        }
        if !quiet {
            crate::errln!("{}", report::progress_line(stats, elapsed));
        }
    };
    if let Target::Http(h) = &target {
        // Sign in once; every session carries the same token.
        match args.auth.authorizer(&target) {
            Err(e) => return fail(exit::USAGE, e),
            Ok(None) => {}
            Ok(Some(authorizer)) => match sign_in_once(&target, authorizer, choice, &protocol_version, timeout) {
                Ok(Some(token)) => h.bearer.set(Some(token)),
                Ok(None) => {}
                Err(e) => return fail(exit::UNREACHABLE, e),
            },
        }
    }
    if let Some(dir) = &args.capture_dir
        && let Err(e) = mcpscope_core::record::state_dir::ensure_private_dir(dir)
    {
        return fail(exit::IO, format!("--capture-dir {}: {e}", dir.display()));
    }
    let plan = mcpscope_core::load::LoadPlan {
        target,
        era: choice,
        protocol_version,
        workload,
        sessions,
        in_flight: args.in_flight,
        rate: args.rate,
        duration,
        requests: args.requests,
        warmup: args.warmup,
        timeout,
        ramp: args.ramp,
        sampling: mcpscope_core::load::http::Sampling {
            capture_dir: args.capture_dir.clone(),
            sample_every: args.sample_every,
            otlp_endpoint: args.otlp_endpoint.clone(),
        },
    };
    if let Some(e) = &args.otlp_endpoint
        && let Err(e) = mcpscope_core::interop::otlp_http::traces_url(e)
    {
        return fail(exit::USAGE, mcpscope_core::text::ErrorChain(&e));
    }
    let traces = super::export::TraceTally::new("load");
    let outcome = match mcpscope_core::load::run(plan, stop, traces.report(), progress) {
        Ok(o) => o,
        Err(e) => return fail(exit::USAGE, mcpscope_core::text::ErrorChain(&e)),
    };
    let (result, failed_sessions, captures) = (outcome.report, outcome.failed_sessions, outcome.captures);
    for f in &failed_sessions {
        crate::errln!("mcpscope load: {f}");
    }
    if !captures.is_empty() {
        crate::errln!(
            "mcpscope load: {} session capture(s) kept in {} (open them with `mcpscope open`)",
            captures.len(),
            args.capture_dir
                .as_ref()
                .map(|d| d.display().to_string())
                .unwrap_or_default()
        );
    }
    traces.say(" of the sampled sessions");
    let out = match args.format {
        LoadFormat::Text => report::text(&result),
        LoadFormat::Json => report::json(&result),
        LoadFormat::Junit => report::junit(&result),
    };
    crate::outln!("{}", out.trim_end());
    if result.requests == 0 && !failed_sessions.is_empty() {
        return fail(exit::UNREACHABLE, "no session could start");
    }
    // A session that could not start is a failure too, though it sent nothing.
    ExitCode::from(if result.errors > 0 || !failed_sessions.is_empty() {
        exit::FAILED
    } else {
        exit::OK
    })
}

/// One session that signs in, so the others need not: its token.
fn sign_in_once(
    target: &Target,
    authorizer: mcpscope_core::transport::auth::Authorizer,
    choice: EraChoice,
    protocol_version: &str,
    timeout: Duration,
) -> Result<Option<String>, String> {
    let Target::Http(h) = target else { return Ok(None) };
    let slot = h.bearer.clone();
    let mut client = mcpscope_core::client::Client::connect(
        target.clone(),
        mcpscope_core::transport::session::SessionOptions::new(mcpscope_core::record::capture::open_log),
        Box::new(|_| {}),
    )
    .with_authorizer(authorizer);
    let hs = HandshakeOptions {
        protocol_version: protocol_version.to_owned(),
        ..HandshakeOptions::default()
    };
    let outcome = client.establish(choice, &hs, timeout);
    let credential = slot.credential();
    client.close();
    // Only a failed sign-in stops the run: a server that is down, slow or
    // speaks another era is what the run itself measures and reports.
    if let Err(e @ mcpscope_core::client::ClientError::Authorization { .. }) = &outcome {
        return Err(format!("signing in: {e}"));
    }
    match credential {
        Some(c) if c.dpop.is_some() => {
            Err("the server's token is bound to a DPoP key; load shares only Bearer tokens (--dpop never)".into())
        }
        Some(c) => Ok(Some(c.token)),
        None => Ok(None),
    }
}
