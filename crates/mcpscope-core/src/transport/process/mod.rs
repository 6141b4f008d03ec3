//! Starting a server process and ending it (and everything it started).
//! How a process tree is made, stopped and watched differs between systems:
//! that is `platform::process`, re-exported here.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};

pub use crate::platform::process::{
    ServerTree, TREE_TAG_VAR, WATCHDOG_NAME, Watchdog, group_alive, group_running, signal_group, signal_name,
    spawn_reaped,
};
use crate::platform::process::{exit_signal, is_executable, names_a_path, prepare_tree, program_candidates, refusal};

/// What to run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerSpec {
    pub program: String,
    pub args: Vec<String>,
    /// Added to (or overriding) the inherited environment.
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
}

impl ServerSpec {
    pub fn new(program: impl Into<String>, args: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }

    /// The command line as a person would type it.
    pub fn display(&self) -> String {
        std::iter::once(&self.program)
            .chain(&self.args)
            .map(|a| shell_quote(a))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Quotes an argument for a POSIX shell when it needs it.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:@,+%".contains(&b))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Why a server could not be started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpawnError {
    pub program: String,
    /// Where the program was found, if it was.
    pub resolved: Option<PathBuf>,
    pub message: String,
}

impl fmt::Display for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.resolved {
            Some(path) if path.as_os_str() != self.program.as_str() => {
                write!(f, "{} ({}): {}", self.program, path.display(), self.message)
            }
            _ => write!(f, "{}: {}", self.program, self.message),
        }
    }
}

impl std::error::Error for SpawnError {}

/// Finds `program` the way the system's shell would: a path (a slash; on
/// Windows a backslash too) is taken relative to the working directory,
/// anything else is looked up in PATH (on Windows with each extension of
/// PATHEXT: `npx` is `npx.cmd`).
pub fn resolve_program(spec: &ServerSpec) -> Result<PathBuf, SpawnError> {
    let program = &spec.program;
    let fail = |message: String, resolved: Option<PathBuf>| SpawnError {
        program: program.clone(),
        resolved,
        message,
    };
    if program.is_empty() {
        return Err(fail("no command given".into(), None));
    }
    if names_a_path(program) {
        let base = match &spec.cwd {
            Some(cwd) if Path::new(program).is_relative() => cwd.clone(),
            _ => PathBuf::new(),
        };
        // On Windows `.\server` may be `.\server.exe` or `.\server.cmd`.
        let path = program_candidates(&base, program)
            .into_iter()
            .find(|p| p.is_file())
            .unwrap_or_else(|| base.join(program));
        return match std::fs::metadata(&path) {
            Ok(m) if m.is_dir() => Err(fail("is a directory".into(), Some(path))),
            Ok(m) if !is_executable(&m) => Err(fail("permission denied (not executable)".into(), Some(path))),
            Ok(_) => Ok(path),
            Err(e) => Err(fail(e.to_string(), Some(path))),
        };
    }
    let path_var: OsString = spec
        .env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| OsString::from(v))
        .or_else(|| std::env::var_os("PATH"))
        .unwrap_or_default();
    for dir in std::env::split_paths(&path_var) {
        let dir = match &spec.cwd {
            Some(cwd) if dir.is_relative() => cwd.join(dir),
            _ => dir,
        };
        for candidate in program_candidates(&dir, program) {
            if let Ok(m) = std::fs::metadata(&candidate)
                && m.is_file()
                && is_executable(&m)
            {
                return Ok(candidate);
            }
        }
    }
    Err(fail(
        format!("not found in PATH ({})", path_var.to_string_lossy()),
        None,
    ))
}

/// Variables mcpscope changed for itself (name, value before: `None` when
/// unset) that servers get as they were. Set at most once, at start-up.
static RESTORED_FOR_SERVERS: std::sync::OnceLock<Vec<(OsString, Option<OsString>)>> = std::sync::OnceLock::new();

/// Servers started from now on see these variables as they were before
/// mcpscope changed them for itself (`None`: unset), unless their spec sets
/// them. Only the first call counts.
pub fn restore_for_servers(vars: Vec<(OsString, Option<OsString>)>) {
    let _ = RESTORED_FOR_SERVERS.set(vars);
}

/// A started server with its three pipes.
pub struct Spawned {
    pub child: Child,
    pub program: PathBuf,
    /// Everything the server started, daemons included.
    pub tree: ServerTree,
}

/// Starts the server in a new process group with piped stdio.
pub fn spawn(spec: &ServerSpec) -> Result<Spawned, SpawnError> {
    let program = resolve_program(spec)?;
    if let Some(cwd) = &spec.cwd
        && !cwd.is_dir()
    {
        return Err(SpawnError {
            program: spec.program.clone(),
            resolved: Some(program),
            message: format!("working directory {} does not exist", cwd.display()),
        });
    }
    let tag = crate::platform::new_tree_tag();
    let mut cmd = Command::new(&program);
    for (name, before) in RESTORED_FOR_SERVERS.get().into_iter().flatten() {
        match before {
            Some(value) => cmd.env(name, value),
            None => cmd.env_remove(name),
        };
    }
    cmd.args(&spec.args)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .env(TREE_TAG_VAR, &tag)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    prepare_tree(&mut cmd);
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(cwd);
    }
    match cmd.spawn() {
        Ok(mut child) => match ServerTree::started(&child, tag) {
            Ok(tree) => Ok(Spawned { child, program, tree }),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(SpawnError {
                    program: spec.program.clone(),
                    resolved: Some(program),
                    message: format!("started, but its process tree could not be set up: {e}"),
                })
            }
        },
        Err(e) => {
            let message = refusal(&program, &e).unwrap_or_else(|| match e.kind() {
                // The file exists (it was resolved), so ENOENT means its
                // `#!` interpreter does not: say which one.
                std::io::ErrorKind::NotFound => missing_interpreter(&program).unwrap_or_else(|| e.to_string()),
                _ => e.to_string(),
            });
            Err(SpawnError {
                program: spec.program.clone(),
                resolved: Some(program),
                message,
            })
        }
    }
}

/// Why a script that exists cannot be run: its `#!` line names an
/// interpreter that is not there (or carries a Windows line ending).
fn missing_interpreter(script: &Path) -> Option<String> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(script).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = &line[..line.iter().position(|&b| b == b'\n').unwrap_or(line.len())];
    let text = String::from_utf8_lossy(line);
    let interpreter = text.split([' ', '\t']).find(|w| !w.is_empty())?;
    if let Some(bare) = interpreter.strip_suffix('\r') {
        return Some(format!(
            "its #! line ends with a carriage return (Windows line endings), so the interpreter {bare:?} \
             is looked up as {interpreter:?}, which does not exist: convert the file to LF line endings"
        ));
    }
    if Path::new(interpreter).exists() {
        return None;
    }
    Some(format!(
        "the interpreter named on its #! line, {interpreter}, does not exist (the script itself does)"
    ))
}

/// How a process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExitInfo {
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

impl ExitInfo {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// The shell convention: the code, or 128 + signal.
    pub fn shell_code(&self) -> i32 {
        self.code.or(self.signal.map(|s| 128 + s)).unwrap_or(1)
    }
}

impl From<ExitStatus> for ExitInfo {
    fn from(s: ExitStatus) -> Self {
        Self {
            code: s.code(),
            signal: exit_signal(&s),
        }
    }
}

impl fmt::Display for ExitInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.code, self.signal) {
            (Some(c), _) => write!(f, "exited with code {c}"),
            (None, Some(s)) => write!(f, "was killed by signal {s} ({})", signal_name(s)),
            (None, None) => write!(f, "ended"),
        }
    }
}

#[cfg(test)]
mod tests;
