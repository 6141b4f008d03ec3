//! `mcpscope proxy`: put mcpscope between a real client and its server.

use super::{ServerArgs, exit, watch};
use clap::Args;
use mcpscope_core::record::capture;
use mcpscope_core::transport::proxy::{self, ProxyOptions};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct ProxyArgs {
    /// Append both directions and the server's stderr to this JSONL capture
    /// (each session after a header line of its own; created 0600).
    #[arg(long, value_name = "FILE")]
    pub capture: Option<PathBuf>,

    #[command(flatten)]
    pub server: ServerArgs,
}

/// Exit status: the server's (128 + signal when it was killed); 127 when it
/// could not be started (as a shell says for a command not found); 4 when the
/// capture cannot be written (checked before the server starts).
pub fn run(args: ProxyArgs) -> ExitCode {
    // Refuse before the client starts talking: a proxy that cannot record
    // is not what was asked for.
    if let Err(e) = watch::check_capture(args.capture.as_deref()) {
        crate::errln!("mcpscope proxy: {e}");
        return ExitCode::from(exit::IO);
    }
    let options = ProxyOptions {
        capture: args.capture,
        ..ProxyOptions::default()
    };
    // The client reads our stdout as the server's: nothing of ours may go there.
    match proxy::run(
        &args.server.spec(),
        &options,
        std::io::stdin(),
        std::io::stdout(),
        std::io::stderr(),
    ) {
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
