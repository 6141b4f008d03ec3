//! Completions and the man page, generated from the parser's own
//! definitions (so they list exactly the options the binary takes).

use super::{Cli, exit, output};
use clap::CommandFactory;
use std::process::ExitCode;

/// `mcpscope completions SHELL`: the script on stdout.
pub fn completions(shell: clap_complete::Shell) -> ExitCode {
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "mcpscope", &mut script);
    output::out_bytes(&script);
    ExitCode::from(exit::OK)
}

/// `mcpscope man`: the man page (roff) on stdout, every subcommand in it.
pub fn man_page() -> ExitCode {
    let cmd = Cli::command();
    let mut page = Vec::new();
    if let Err(e) = man(&cmd, &mut page) {
        crate::errln!("mcpscope man: cannot render the page: {e}");
        return ExitCode::from(exit::IO);
    }
    output::out_bytes(&page);
    ExitCode::from(exit::OK)
}

/// The top page, then a section per subcommand (name, synopsis, options).
fn man(cmd: &clap::Command, out: &mut Vec<u8>) -> std::io::Result<()> {
    let top = clap_mangen::Man::new(cmd.clone());
    top.render(out)?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("mcpscope-{}", sub.get_name());
        let sub = sub.clone().bin_name(format!("mcpscope {}", sub.get_name()));
        let page = clap_mangen::Man::new(sub);
        out.extend_from_slice(format!(".SH \"{}\"\n", name.to_uppercase()).as_bytes());
        page.render_synopsis_section(out)?;
        page.render_description_section(out)?;
        page.render_options_section(out)?;
    }
    Ok(())
}
