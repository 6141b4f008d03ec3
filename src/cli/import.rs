//! `mcpscope import`: another tool's capture as an mcpscope capture.

use super::exit;
use clap::Args;
use mcpscope_core::text::ErrorChain;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// An mcpsnoop session (JSONL), an mcp-recorder cassette, an MCP Inspector
    /// export (JSON) or a HAR; the format is recognised from the content.
    pub file: PathBuf,

    /// The capture to write (default: FILE with `.mcpscope.jsonl` in place of
    /// its extension). It must not exist yet; it is created 0600.
    #[arg(short, long, value_name = "CAPTURE")]
    pub output: Option<PathBuf>,
}

/// Exit status: 0 written; 4 the file cannot be read or is not a known
/// format, or the capture cannot be written.
pub fn run(args: ImportArgs) -> ExitCode {
    let to = args.output.clone().unwrap_or_else(|| {
        let stem = args
            .file
            .file_stem()
            .map_or_else(|| "import".into(), |s| s.to_string_lossy().into_owned());
        args.file.with_file_name(format!("{stem}.mcpscope.jsonl"))
    });
    match mcpscope_core::interop::import_file(&args.file, &to) {
        Ok(r) => {
            crate::errln!(
                "mcpscope import: {} ({}): {} message(s) in {} session(s) written to {}",
                args.file.display(),
                r.format.name(),
                r.messages,
                r.sessions,
                to.display()
            );
            for n in &r.notes {
                crate::errln!("mcpscope import: note: {n}");
            }
            ExitCode::from(exit::OK)
        }
        Err(e) => {
            crate::errln!("mcpscope import: {}", ErrorChain(&e));
            ExitCode::from(exit::IO)
        }
    }
}
