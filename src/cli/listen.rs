//! `mcpscope listen`: open a `subscriptions/listen` stream on a 2026-07-28
//! server and print what it carries, one JSON message per line.

use super::watch::{self, Watch};
use super::{TargetArgs, exit};
use clap::Args;
use mcpscope_core::client::Client;
use mcpscope_core::protocol::era::{self, EraChoice};
use mcpscope_core::protocol::handshake::HandshakeOptions;
use mcpscope_core::protocol::subscriptions::{ACKNOWLEDGED, Filter};
use mcpscope_core::transport::event::Event;
use mcpscope_core::transport::session::SessionOptions;
use mcpscope_core::wire::frame::Direction;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct ListenArgs {
    /// Ask for notifications/tools/list_changed (with none of --tools/--prompts/--resources/--resource, all three lists are asked for).
    #[arg(long)]
    pub tools: bool,
    /// Ask for notifications/prompts/list_changed.
    #[arg(long)]
    pub prompts: bool,
    /// Ask for notifications/resources/list_changed.
    #[arg(long)]
    pub resources: bool,
    /// Ask for notifications/resources/updated of this URI (repeatable).
    #[arg(long, value_name = "URI")]
    pub resource: Vec<String>,
    /// Stop listening after this many milliseconds.
    #[arg(long, default_value_t = 10_000)]
    pub for_ms: u64,
    /// The modern version to send in `_meta`.
    #[arg(long, default_value = era::DEFAULT_MODERN_VERSION)]
    pub protocol_version: String,
    /// Timeout for server/discover and the acknowledgement, in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    pub timeout_ms: u64,
    /// Append every event to this JSONL capture file.
    #[arg(long, value_name = "FILE")]
    pub capture: Option<PathBuf>,
    #[command(flatten)]
    pub server: TargetArgs,
    #[command(flatten)]
    pub auth: super::auth::AuthArgs,
}

impl ListenArgs {
    pub fn filter(&self) -> Filter {
        if !(self.tools || self.prompts || self.resources || !self.resource.is_empty()) {
            return Filter::all_lists();
        }
        Filter {
            tools_list_changed: self.tools,
            prompts_list_changed: self.prompts,
            resources_list_changed: self.resources,
            resource_subscriptions: self.resource.clone(),
            ..Filter::default()
        }
    }
}

fn fail(code: u8, reason: impl std::fmt::Display) -> ExitCode {
    crate::errln!("mcpscope listen: {reason}");
    ExitCode::from(code)
}

/// Exit status: 0; 1 when the server refuses the listen; 3 when it is not a
/// modern server or cannot be reached; 4 when the capture cannot be written;
/// 64 for a wrong command line.
pub fn run(args: ListenArgs) -> ExitCode {
    let target = match args.server.target() {
        Ok(t) => t,
        Err(e) => return fail(exit::USAGE, e),
    };
    let authorizer = match args.auth.authorizer(&target) {
        Ok(a) => a,
        Err(e) => return fail(exit::USAGE, e),
    };
    if let Err(e) = watch::check_capture(args.capture.as_deref()) {
        return fail(exit::IO, e);
    }
    let timeout = Duration::from_millis(args.timeout_ms);
    let options = SessionOptions {
        request_timeout: Some(timeout),
        capture: args.capture.clone(),
        limits: args.server.limits(),
        ..SessionOptions::new(mcpscope_core::record::capture::open_log)
    };
    let watch = Watch::default();
    let seen = watch.clone();
    // Every notification the server sends (acknowledgement included) goes to stdout as it comes.
    let observer = Box::new(move |ev: Event| {
        let ev = &ev;
        seen.see(ev, "mcpscope listen");
        if let Event::Frame(f) = ev
            && f.direction == Direction::In
            && f.class.kind == mcpscope_core::wire::classify::Kind::Notification
        {
            let mut line = f.raw.clone();
            line.push(b'\n');
            super::output::out_bytes(&line);
        }
    });
    let mut client = Client::connect(target, options, observer);
    if let Some(a) = authorizer {
        client = client.with_authorizer(a);
    }
    let code = listen(&mut client, &args, timeout, &watch);
    let exit = client.close();
    let code = match code {
        Ok(()) => exit::OK,
        Err((code, reason)) => {
            if super::signals::caught().is_none() {
                watch.explain("mcpscope listen", &reason, exit);
            }
            code
        }
    };
    if watch.capture_failed() {
        return ExitCode::from(exit::IO);
    }
    ExitCode::from(code)
}

fn listen(client: &mut Client, args: &ListenArgs, timeout: Duration, _watch: &Watch) -> Result<(), (u8, String)> {
    let unreachable = |e: &dyn std::fmt::Display| (exit::UNREACHABLE, e.to_string());
    client.wait_started(timeout).map_err(|e| unreachable(&e))?;
    let hs = HandshakeOptions {
        protocol_version: args.protocol_version.clone(),
        ..HandshakeOptions::default()
    };
    match client.establish(EraChoice::Modern, &hs, timeout) {
        Err(e) => return Err(unreachable(&e)),
        Ok(Err(e)) => {
            return Err(unreachable(&format!(
                "{e} (subscriptions/listen needs a 2026-07-28 server)"
            )));
        }
        Ok(Ok(d)) if d.discovery.is_none() => {
            return Err(unreachable(&format!(
                "{} (subscriptions/listen needs a 2026-07-28 server)",
                d.reason
            )));
        }
        Ok(Ok(d)) => crate::errln!("mcpscope listen: {} ({})", d.summary(), d.server_name()),
    }
    let filter = args.filter();
    let id = match client.listen(&filter, timeout) {
        Err(e) => return Err(unreachable(&e)),
        Ok(Err(e)) => {
            return Err((exit::FAILED, format!("the server refused subscriptions/listen: {e}")));
        }
        Ok(Ok((id, honoured))) => {
            crate::errln!("mcpscope listen: #{id} acknowledged ({ACKNOWLEDGED}); the server honours {honoured}");
            id
        }
    };
    client.pump_for(Duration::from_millis(args.for_ms));
    client.stop_listening(id);
    client.pump_for(Duration::from_millis(200));
    Ok(())
}
