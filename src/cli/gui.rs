//! The desktop app's entry points, present only in builds with the `gui`
//! feature; a headless build says so instead of failing obscurely.

#[cfg(feature = "gui")]
use std::ffi::OsStr;
#[cfg(feature = "gui")]
use std::path::Path;
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
    pub otlp_endpoint: Option<String>,
}

#[cfg(feature = "gui")]
pub fn run(s: Startup) -> ExitCode {
    mcpscope_app::run(mcpscope_app::StartupArgs {
        config: s.config,
        server: s.server,
        launch: s.launch,
        open: s.open,
        diff: s.diff,
        otlp_endpoint: s.otlp_endpoint,
    })
}

/// Readies the process environment for the app's windowing and graphics
/// libraries. Call it before any other thread starts: it may set variables.
///
/// Without `XDG_RUNTIME_DIR` (or with one that is not an absolute path),
/// libwayland-client, probed by Mesa and wgpu for a Wayland display, prints
/// `error: XDG_RUNTIME_DIR is invalid or not set in the environment.` at
/// each probe (four times at start). The app then gets a private directory
/// of its own for this run, said in one line; servers it starts still see
/// the variable as it was.
#[cfg(feature = "gui")]
pub fn prepare_environment() {
    if !mcpscope_core::platform::desktop::wants_xdg_runtime_dir() {
        return;
    }
    let current = std::env::var_os("XDG_RUNTIME_DIR");
    let uid = mcpscope_core::platform::fs::User::current().to_string();
    let Some(dir) = runtime_dir_fallback(current.as_deref(), &std::env::temp_dir(), &uid) else {
        return;
    };
    let why = match current.as_deref() {
        None => "is not set".to_owned(),
        Some(v) if v.is_empty() => "is empty".to_owned(),
        Some(v) => format!("is not an absolute path ({})", v.to_string_lossy()),
    };
    match mcpscope_core::record::state_dir::ensure_private_dir(&dir) {
        Ok(()) => {
            // SAFETY: main calls this before any other thread exists (before
            // signals::install starts its thread, before the app starts), so
            // nothing reads or writes the environment meanwhile.
            unsafe { std::env::set_var("XDG_RUNTIME_DIR", &dir) };
            mcpscope_core::transport::process::restore_for_servers(vec![("XDG_RUNTIME_DIR".into(), current)]);
            crate::errln!("mcpscope: XDG_RUNTIME_DIR {why}; using {} for this run", dir.display());
        }
        Err(e) => crate::errln!(
            "mcpscope: XDG_RUNTIME_DIR {why}, and no private directory could stand in for it ({e}); \
             the graphics libraries may complain about it below. Set XDG_RUNTIME_DIR to a directory only \
             you can use (usually /run/user/{uid})."
        ),
    }
}

#[cfg(not(feature = "gui"))]
pub fn prepare_environment() {}

/// The directory to use as `XDG_RUNTIME_DIR` when `current` is not one
/// libwayland accepts (set, and an absolute path), or None to keep it:
/// `mcpscope-runtime-UID` in the temp directory (`/tmp` when that is not
/// absolute either).
#[cfg(feature = "gui")]
fn runtime_dir_fallback(current: Option<&OsStr>, temp: &Path, uid: &str) -> Option<PathBuf> {
    if current.is_some_and(|v| Path::new(v).is_absolute()) {
        return None;
    }
    let temp = if temp.is_absolute() { temp } else { Path::new("/tmp") };
    Some(temp.join(format!("mcpscope-runtime-{uid}")))
}

#[cfg(not(feature = "gui"))]
pub fn run(s: Startup) -> ExitCode {
    let what = if s.open.is_some() {
        "`mcpscope open`"
    } else if s.diff.is_some() {
        "`mcpscope diff --app`"
    } else if !s.launch.is_empty() || s.server.is_some() || s.config.is_some() || s.otlp_endpoint.is_some() {
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

#[cfg(all(test, feature = "gui"))]
mod tests {
    use super::*;

    #[test]
    fn a_runtime_dir_is_made_up_only_when_there_is_no_usable_one() {
        let tmp = Path::new("/var/tmp");
        let ours = Some(PathBuf::from("/var/tmp/mcpscope-runtime-1000"));
        assert_eq!(runtime_dir_fallback(None, tmp, "1000"), ours);
        assert_eq!(runtime_dir_fallback(Some(OsStr::new("")), tmp, "1000"), ours);
        assert_eq!(
            runtime_dir_fallback(Some(OsStr::new("run/user/1000")), tmp, "1000"),
            ours
        );
        assert_eq!(
            runtime_dir_fallback(Some(OsStr::new("/run/user/1000")), tmp, "1000"),
            None
        );
        assert_eq!(
            runtime_dir_fallback(None, Path::new("relative-tmp"), "7"),
            Some(PathBuf::from("/tmp/mcpscope-runtime-7"))
        );
    }
}
