//! The `mcpscope` binary: the CLI's subcommands, and the desktop app when built
//! with the default `gui` feature. All logic lives in `mcpscope-core` (and the
//! app in `mcpscope-app`); this crate only parses arguments and prints.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
