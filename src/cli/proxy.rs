//! `mcpscope proxy`: put mcpscope between a real client and its server.

use super::ServerArgs;
use clap::Args;
use mcpscope_core::transport::proxy::{self, ProxyOptions};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct ProxyArgs {
    /// Record both directions and the server's stderr to this JSONL capture.
    #[arg(long, value_name = "FILE")]
    pub capture: Option<PathBuf>,

    #[command(flatten)]
    pub server: ServerArgs,
}

pub fn run(args: ProxyArgs) -> ExitCode {
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
                eprintln!("mcpscope proxy: {n}");
            }
            let code = outcome.status.map_or(1, |s| s.shell_code());
            ExitCode::from(code.clamp(0, 255) as u8)
        }
        Err(e) => {
            eprintln!("mcpscope proxy: could not start the server: {e}");
            ExitCode::from(127)
        }
    }
}
