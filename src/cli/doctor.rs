//! `mcpscope doctor`: the checklist as a report.

use super::TargetArgs;
use clap::Args;
use mcpscope_core::analysis::doctor::{self, DoctorOptions};
use mcpscope_core::protocol::handshake;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct DoctorArgs {
    /// How long to wait for each answer, in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    pub timeout_ms: u64,

    /// The protocol version to offer.
    #[arg(long, default_value = handshake::DEFAULT_VERSION)]
    pub protocol_version: String,

    /// Which protocol era to speak: auto (default) probes with server/discover
    /// and falls back to the initialize handshake; the report says which it
    /// found and why.
    #[arg(long, value_enum, default_value = "auto")]
    pub era: super::EraArg,

    /// Skip starting the server a second time to test handshake enforcement.
    #[arg(long)]
    pub no_enforcement_probe: bool,

    #[command(flatten)]
    pub server: TargetArgs,

    #[command(flatten)]
    pub auth: super::auth::AuthArgs,
}

pub fn run(args: DoctorArgs) -> ExitCode {
    let target = match args.server.target() {
        Ok(t) => t,
        Err(e) => {
            crate::errln!("mcpscope doctor: {e}");
            return ExitCode::from(super::exit::USAGE);
        }
    };
    let authorizer = match args.auth.authorizer(&target) {
        Ok(a) => a,
        Err(e) => {
            crate::errln!("mcpscope doctor: {e}");
            return ExitCode::from(super::exit::USAGE);
        }
    };
    let options = DoctorOptions {
        authorizer: authorizer.map(|a| std::sync::Arc::new(std::sync::Mutex::new(Some(a)))),
        timeout: Duration::from_millis(args.timeout_ms),
        protocol_version: args.protocol_version,
        era: args.era.into(),
        probe_enforcement: !args.no_enforcement_probe,
        limits: args.server.limits(),
        ..DoctorOptions::default()
    };
    crate::outln!("mcpscope doctor: {}", target.display());
    let report = doctor::diagnose_target(&target, &options);
    for check in &report.checks {
        crate::outln!("[{}] {}", check.status.mark(), check.title);
        for d in &check.details {
            crate::outln!("       {d}");
        }
    }
    if report.healthy() {
        crate::outln!(
            "Healthy: the server speaks MCP over {} as expected.",
            match &target {
                mcpscope_core::transport::target::Target::Stdio(_) => "stdio",
                mcpscope_core::transport::target::Target::Http(h) => h.kind.label(),
            }
        );
        ExitCode::SUCCESS
    } else {
        crate::outln!("Not healthy: see the FAIL lines above.");
        ExitCode::from(super::exit::FAILED)
    }
}
