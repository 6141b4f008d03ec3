//! The desktop app's entry points, present only in builds with the `gui`
//! feature; a headless build says so instead of failing obscurely.

use std::path::PathBuf;
use std::process::ExitCode;

/// What the app is asked to do when it starts.
#[derive(Default, Debug)]
pub struct Startup {
    pub config: Option<PathBuf>,
    pub server: Option<String>,
    pub launch: Vec<String>,
    pub open: Option<PathBuf>,
    pub diff: Option<(PathBuf, PathBuf)>,
}

#[cfg(feature = "gui")]
pub fn run(s: Startup) -> ExitCode {
    mcpscope_app::run(mcpscope_app::StartupArgs {
        config: s.config,
        server: s.server,
        launch: s.launch,
        open: s.open,
        diff: s.diff,
    })
}

#[cfg(not(feature = "gui"))]
pub fn run(s: Startup) -> ExitCode {
    let what = if s.open.is_some() {
        "`mcpscope open`"
    } else if s.diff.is_some() {
        "`mcpscope diff --app`"
    } else if !s.launch.is_empty() || s.server.is_some() || s.config.is_some() {
        // `call -- CMD` is the headless way to talk to the same server.
        "launching a server in the desktop app (try `mcpscope call -- CMD`)"
    } else {
        "the desktop app"
    };
    crate::errln!(
        "mcpscope: {what} is not in this build (it was built without the `gui` feature); \
         the headless subcommands are: call, proxy, doctor, lint, diff, listen. \
         Build with default features for the app."
    );
    ExitCode::from(super::exit::USAGE)
}
