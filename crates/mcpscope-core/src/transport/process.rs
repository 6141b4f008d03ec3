//! Starting a server process and ending it (and everything it started).
//!
//! Servers are often launched through wrappers (`npx`, `uv run`, shell
//! scripts) whose grandchildren hold the pipes open, so each server gets its
//! own process group and shutdown signals the whole group.

use std::ffi::OsString;
use std::fmt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};

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

/// Finds `program` the way the child's `execvp` would: a path with a slash is
/// taken relative to the working directory, anything else is looked up in PATH.
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
    if program.contains('/') {
        let path = match &spec.cwd {
            Some(cwd) if Path::new(program).is_relative() => cwd.join(program),
            _ => PathBuf::from(program),
        };
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
        let candidate = dir.join(program);
        if let Ok(m) = std::fs::metadata(&candidate)
            && m.is_file()
            && is_executable(&m)
        {
            return Ok(candidate);
        }
    }
    Err(fail(
        format!(
            "not found in PATH ({})",
            std::env::split_paths(&path_var)
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(":")
        ),
        None,
    ))
}

fn is_executable(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode() & 0o111 != 0
}

/// A started server with its three pipes.
pub struct Spawned {
    pub child: Child,
    pub program: PathBuf,
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
    let mut cmd = Command::new(&program);
    cmd.args(&spec.args)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(cwd);
    }
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    // If mcpscope itself is killed, the server is killed with it instead of
    // being left to run unobserved.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    match cmd.spawn() {
        Ok(child) => Ok(Spawned { child, program }),
        Err(e) => Err(SpawnError {
            program: spec.program.clone(),
            resolved: Some(program),
            message: e.to_string(),
        }),
    }
}

/// Sends `signal` to every process in the group led by `pgid`.
/// Returns false when no process is left in the group.
pub fn signal_group(pgid: u32, signal: i32) -> bool {
    // SAFETY: plain syscall; pgid comes from a child we spawned as group leader.
    unsafe { libc::killpg(pgid as libc::pid_t, signal) == 0 }
}

/// Whether any process of the group is still alive (zombies included).
pub fn group_alive(pgid: u32) -> bool {
    signal_group(pgid, 0)
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
            signal: s.signal(),
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

pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        _ => "signal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_program_names_itself_and_path() {
        let spec = ServerSpec {
            env: vec![("PATH".into(), "/nonexistent-a:/nonexistent-b".into())],
            ..ServerSpec::new("npx", Vec::<String>::new())
        };
        let e = resolve_program(&spec).unwrap_err();
        let text = e.to_string();
        assert!(text.starts_with("npx: not found in PATH"), "{text}");
        assert!(text.contains("/nonexistent-a"), "{text}");
    }

    #[test]
    fn resolves_through_path_and_relative_to_cwd() {
        let found = resolve_program(&ServerSpec::new("sh", Vec::<String>::new())).unwrap();
        assert!(found.is_absolute());
        let spec = ServerSpec {
            cwd: Some("/bin".into()),
            ..ServerSpec::new("./sh", Vec::<String>::new())
        };
        assert_eq!(resolve_program(&spec).unwrap(), PathBuf::from("/bin/./sh"));
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("server.js");
        std::fs::write(&plain, "console.log(1)").unwrap();
        let spec = ServerSpec::new(plain.display().to_string(), Vec::<String>::new());
        let e = resolve_program(&spec).unwrap_err();
        assert!(e.message.contains("not executable"), "{e}");
        let e = resolve_program(&ServerSpec::new("/tmp", Vec::<String>::new())).unwrap_err();
        assert!(e.message.contains("directory"), "{e}");
    }

    #[test]
    fn exit_info_display() {
        let code = ExitInfo {
            code: Some(3),
            signal: None,
        };
        assert_eq!(code.to_string(), "exited with code 3");
        let sig = ExitInfo {
            code: None,
            signal: Some(9),
        };
        assert_eq!(sig.to_string(), "was killed by signal 9 (SIGKILL)");
        assert_eq!(sig.shell_code(), 137);
    }

    #[test]
    fn display_quotes_arguments() {
        let s = ServerSpec::new("node", ["a b", "x", "it's"]);
        assert_eq!(s.display(), r"node 'a b' x 'it'\''s'");
    }
}
