//! The index of proxied sessions in the per-user state directory.
//!
//! Each session a proxy records (`mcpscope proxy --session NAME`) leaves two
//! files in [`state_dir::sessions_dir`]: its capture `ID.jsonl`, and `ID.json`,
//! a small [`SessionRecord`] saying what it is (server name, command or
//! upstream URL, the client's name from its `initialize`, when it started, the
//! proxy's pid) and, once over, how it ended. The proxy rewrites the record
//! atomically as it learns more, so a reader never sees half of one.
//!
//! [`list_sessions`] reads them back, running sessions first. A record that
//! still says "running" whose proxy is gone (killed with SIGKILL, a crash, a
//! reboot) is reported as [`SessionState::Vanished`] rather than trusted.

use crate::platform::process;
use crate::record::state_dir;
use crate::transport::process::{ExitInfo, ServerSpec};
use serde::{Deserialize, Serialize};
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

pub const FORMAT: &str = "mcpscope-session";
pub const VERSION: u32 = 1;

/// What the client said it was in `initialize` (`params.clientInfo`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientInfo {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

impl ClientInfo {
    /// The client's name and version from a frame it sent: `params.clientInfo`
    /// of its `initialize` (2025-11-25 and before), or the
    /// `io.modelcontextprotocol/clientInfo` every 2026-07-28 request carries
    /// in `_meta`. `None` for anything else, or one without a string name.
    pub fn from_client_frame(frame: &crate::wire::frame::Frame) -> Option<ClientInfo> {
        use crate::protocol::{era::META_CLIENT_INFO, methods};
        if frame.class.kind != crate::wire::classify::Kind::Request {
            return None;
        }
        let v = frame.json()?;
        let params = v.get("params")?;
        let info = if frame.class.method.as_deref() == Some(methods::INITIALIZE) {
            params.get("clientInfo")
        } else {
            params.get("_meta").and_then(|m| m.get(META_CLIENT_INFO))
        }?;
        Some(ClientInfo {
            name: info.get("name")?.as_str()?.to_owned(),
            version: info
                .get("version")
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned),
        })
    }
}

/// How a session ended, as the proxy saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndCause {
    /// The client closed the proxy's stdin (it quit, or turned the server off).
    ClientClosed,
    /// The client stopped reading the server's output (its end of the pipe closed).
    ClientStoppedReading,
    /// The server exited (or closed its stdout) on its own.
    ServerExited,
    /// The proxy was told to stop (SIGINT, SIGTERM, SIGHUP, or from the app).
    ProxyStopped,
    /// The server could not be started.
    SpawnFailed,
    /// Anything else the proxy can name; `text` says what.
    Other,
}

impl EndCause {
    pub fn label(self) -> &'static str {
        match self {
            EndCause::ClientClosed => "the client closed the connection",
            EndCause::ClientStoppedReading => "the client stopped reading",
            EndCause::ServerExited => "the server exited",
            EndCause::ProxyStopped => "the proxy was stopped",
            EndCause::SpawnFailed => "the server could not be started",
            EndCause::Other => "ended",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionEnd {
    pub ended_unix_ms: u64,
    pub cause: EndCause,
    /// For a person: what happened, in a sentence.
    pub text: String,
    /// The server's exit, when it was seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_signal: Option<i32>,
}

/// The index record of one proxied session (`ID.json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub format: String,
    pub version: u32,
    pub id: String,
    /// The server's name (`--session NAME`, the key in the client's config).
    pub name: String,
    /// `stdio` (a proxied command) or `http` (the reverse proxy).
    pub transport: String,
    /// The server command as a person would type it, or the upstream URL.
    pub command_line: String,
    #[serde(default)]
    pub program: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The reverse proxy's upstream URL and listening address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listen: Option<String>,
    #[serde(default)]
    pub client: Option<ClientInfo>,
    pub started_unix_ms: u64,
    pub proxy_pid: u32,
    /// The proxy's start time in clock ticks since boot (Linux), so a later
    /// process that reuses the pid is not taken for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_start_ticks: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_pid: Option<u32>,
    /// The proxy's intercept control socket, when it runs a gate
    /// (breakpoints, fault rules): where the app attaches to the queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_socket: Option<String>,
    /// The capture's file name, next to this record.
    pub capture: String,
    #[serde(default)]
    pub ended: Option<SessionEnd>,
}

/// What a new session is, before it starts.
#[derive(Clone, Debug, Default)]
pub struct NewSession {
    pub name: String,
    pub transport: String,
    pub command_line: String,
    pub program: String,
    pub args: Vec<String>,
    pub cwd: Option<String>,
    pub upstream: Option<String>,
    pub listen: Option<String>,
}

impl NewSession {
    /// A stdio session running `spec`.
    pub fn stdio(name: &str, spec: &ServerSpec) -> Self {
        Self {
            name: name.to_owned(),
            transport: "stdio".into(),
            command_line: spec.display(),
            program: spec.program.clone(),
            args: spec.args.clone(),
            cwd: spec.cwd.as_ref().map(|c| c.display().to_string()),
            ..Self::default()
        }
    }

    /// A reverse-proxy session forwarding `listen` to `upstream`.
    pub fn http(name: &str, listen: &str, upstream: &str) -> Self {
        Self {
            name: name.to_owned(),
            transport: "http".into(),
            command_line: upstream.to_owned(),
            upstream: Some(upstream.to_owned()),
            listen: Some(listen.to_owned()),
            ..Self::default()
        }
    }
}

/// A session being recorded: the proxy's handle on its index record.
///
/// Every change is written at once (atomically). A failed write is returned
/// for the proxy to report; it never stops the proxying.
#[derive(Debug)]
pub struct LiveSession {
    record: SessionRecord,
    index_path: PathBuf,
    capture_path: PathBuf,
}

impl LiveSession {
    /// Creates the session's capture file (owner-only, empty) and its index
    /// record, in `dir`. The caller writes the capture into the returned file.
    pub fn start(dir: &Path, new: NewSession) -> io::Result<(Self, fs::File)> {
        state_dir::ensure_private_dir(dir)?;
        let started_unix_ms = unix_ms();
        let pid = std::process::id();
        let base = format!("{}-{}-{pid}", timestamp_id(started_unix_ms), slug(&new.name));
        // Two sessions of one proxy in the same second (the reverse proxy
        // restarting a session) get a counter.
        let mut n = 0;
        let (id, capture_path, file) = loop {
            let id = if n == 0 { base.clone() } else { format!("{base}-{n}") };
            let capture_path = dir.join(format!("{id}.jsonl"));
            match state_dir::create_private_file(&capture_path) {
                Ok(f) => break (id, capture_path, f),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 1000 => n += 1,
                Err(e) => return Err(e),
            }
        };
        let record = SessionRecord {
            format: FORMAT.into(),
            version: VERSION,
            capture: format!("{id}.jsonl"),
            id: id.clone(),
            name: new.name,
            transport: new.transport,
            command_line: new.command_line,
            program: new.program,
            args: new.args,
            cwd: new.cwd,
            upstream: new.upstream,
            listen: new.listen,
            client: None,
            started_unix_ms,
            proxy_pid: pid,
            proxy_start_ticks: process::start_stamp(pid),
            server_pid: None,
            control_socket: None,
            ended: None,
        };
        let live = Self {
            record,
            index_path: dir.join(format!("{id}.json")),
            capture_path,
        };
        if let Err(e) = live.save() {
            let _ = fs::remove_file(&live.capture_path);
            return Err(e);
        }
        Ok((live, file))
    }

    pub fn record(&self) -> &SessionRecord {
        &self.record
    }

    pub fn capture_path(&self) -> &Path {
        &self.capture_path
    }

    pub fn index_path(&self) -> &Path {
        &self.index_path
    }

    pub fn set_server_pid(&mut self, pid: u32) -> io::Result<()> {
        self.record.server_pid = Some(pid);
        self.save()
    }

    pub fn set_control_socket(&mut self, path: &std::path::Path) -> io::Result<()> {
        self.record.control_socket = Some(path.display().to_string());
        self.save()
    }

    /// Notes the client's name; only the first `initialize` counts (a client
    /// that re-initializes is still the same client). Returns whether it changed.
    pub fn set_client(&mut self, client: ClientInfo) -> io::Result<bool> {
        if self.record.client.is_some() {
            return Ok(false);
        }
        self.record.client = Some(client);
        self.save().map(|_| true)
    }

    /// Marks the session ended. Later calls change nothing: the first cause wins.
    pub fn finish(&mut self, cause: EndCause, text: impl Into<String>, exit: Option<ExitInfo>) -> io::Result<()> {
        if self.record.ended.is_some() {
            return Ok(());
        }
        self.record.ended = Some(SessionEnd {
            ended_unix_ms: unix_ms(),
            cause,
            text: text.into(),
            exit_code: exit.and_then(|e| e.code),
            exit_signal: exit.and_then(|e| e.signal),
        });
        self.save()
    }

    fn save(&self) -> io::Result<()> {
        let mut bytes = serde_json::to_vec_pretty(&self.record).map_err(io::Error::other)?;
        bytes.push(b'\n');
        state_dir::write_private_atomic(&self.index_path, &bytes)
    }
}

/// Where a listed session stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionState {
    Running,
    Ended(SessionEnd),
    /// The record says running, but its proxy is gone without saying how it ended.
    Vanished,
}

impl SessionState {
    pub fn is_running(&self) -> bool {
        matches!(self, SessionState::Running)
    }

    pub fn label(&self) -> String {
        match self {
            SessionState::Running => "running".into(),
            SessionState::Ended(end) => format!("ended: {}", end.text),
            SessionState::Vanished => "ended: the proxy is gone without recording how it ended".into(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct ListedSession {
    pub record: SessionRecord,
    pub state: SessionState,
    pub index_path: PathBuf,
    pub capture_path: PathBuf,
}

/// The sessions in a directory, and the files there that could not be read.
#[derive(Clone, Debug, Default)]
pub struct Listing {
    /// Running sessions first, then the rest; newest first within each.
    pub sessions: Vec<ListedSession>,
    pub problems: Vec<String>,
}

/// Reads every session record in `dir` (a missing directory has none).
/// Symbolic links are skipped, never followed.
pub fn list_sessions(dir: &Path) -> io::Result<Listing> {
    let mut listing = Listing::default();
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(listing),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        // `.ID.json.PID.N.tmp` files are records being written.
        if name.starts_with('.') || !name.ends_with(".json") {
            continue;
        }
        if entry.file_type()?.is_symlink() {
            continue;
        }
        let path = entry.path();
        match read_record(&path) {
            Ok(record) => {
                let state = match &record.ended {
                    Some(end) => SessionState::Ended(end.clone()),
                    None if proxy_alive(&record) => SessionState::Running,
                    None => SessionState::Vanished,
                };
                listing.sessions.push(ListedSession {
                    capture_path: dir.join(Path::new(&record.capture).file_name().unwrap_or_default()),
                    record,
                    state,
                    index_path: path,
                });
            }
            Err(e) => listing.problems.push(format!("{}: {e}", path.display())),
        }
    }
    listing.sessions.sort_by(|a, b| {
        b.state
            .is_running()
            .cmp(&a.state.is_running())
            .then(b.record.started_unix_ms.cmp(&a.record.started_unix_ms))
            .then(b.record.id.cmp(&a.record.id))
    });
    Ok(listing)
}

/// Reads one session record.
pub fn read_record(path: &Path) -> io::Result<SessionRecord> {
    let mut text = String::new();
    state_dir::open_no_follow(path)?
        .take(1024 * 1024)
        .read_to_string(&mut text)?;
    let record: SessionRecord =
        serde_json::from_str(&text).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    if record.format != FORMAT {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("not a session record (format {:?})", record.format),
        ));
    }
    Ok(record)
}

/// Asks a running session's proxy to stop (SIGTERM): the proxy ends the
/// server the way it ends it when the client quits, and records how.
pub fn request_stop(session: &ListedSession) -> io::Result<()> {
    if session.state != SessionState::Running || !proxy_alive(&session.record) {
        return Err(io::Error::new(io::ErrorKind::NotFound, "the session is not running"));
    }
    process::ask_to_stop(session.record.proxy_pid)
}

/// Deletes an ended session's record and capture.
pub fn remove_session(session: &ListedSession) -> io::Result<()> {
    if session.state.is_running() {
        return Err(io::Error::new(
            io::ErrorKind::ResourceBusy,
            "the session is still running; stop it first",
        ));
    }
    match fs::remove_file(&session.capture_path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    fs::remove_file(&session.index_path)
}

/// Whether the record's proxy process still runs (and is the same
/// process: not a later one given the same pid).
pub fn proxy_alive(record: &SessionRecord) -> bool {
    if !process::is_running(record.proxy_pid) {
        return false;
    }
    match (record.proxy_start_ticks, process::start_stamp(record.proxy_pid)) {
        (Some(recorded), Some(now)) => recorded == now,
        _ => true,
    }
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// `20260903T141502Z`: sorts by time, reads as a date.
fn timestamp_id(unix_ms: u64) -> String {
    let (y, m, d, h, mi, sec) = crate::text::utc_parts(unix_ms);
    format!("{y:04}{m:02}{d:02}T{h:02}{mi:02}{sec:02}Z")
}

pub use crate::text::format_unix_ms_utc;

/// A server name as a file-name part: letters, digits, `-`, `_`, `.`; at most 40.
fn slug(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    if s.is_empty() { "session".into() } else { s }
}

#[cfg(test)]
// About modes, links and live pids: Unix's.
#[cfg(unix)]
mod tests {
    #[test]
    fn the_client_is_named_by_its_initialize_or_by_a_2026_requests_meta() {
        use crate::transport::recorder::Recorder;
        use crate::wire::frame::Direction;
        use crate::wire::framing::{LineEnding, RawLine};
        let mut r = Recorder::new(crate::wire::classify::Limits::default(), std::time::Instant::now());
        let mut frame = |line: &str| {
            let raw = RawLine {
                bytes: line.as_bytes().to_vec(),
                ending: LineEnding::Lf,
            };
            r.frame_at(Direction::Out, raw, std::time::Duration::ZERO, None)
        };
        let legacy = frame(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"claude-ai","version":"0.1"}}}"#,
        );
        assert_eq!(
            ClientInfo::from_client_frame(&legacy),
            Some(ClientInfo {
                name: "claude-ai".into(),
                version: Some("0.1".into())
            })
        );
        let modern = frame(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"py"}}}}"#,
        );
        assert_eq!(
            ClientInfo::from_client_frame(&modern),
            Some(ClientInfo {
                name: "py".into(),
                version: None
            })
        );
        for other in [
            // clientInfo outside initialize, a name that is not a string, a notification, a response.
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"clientInfo":{"name":"x"}}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"clientInfo":{"name":7}}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized","params":{"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"n"}}}}"#,
            r#"{"jsonrpc":"2.0","id":4,"result":{"clientInfo":{"name":"r"}}}"#,
            "not json",
        ] {
            assert_eq!(ClientInfo::from_client_frame(&frame(other)), None, "{other}");
        }
    }

    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    fn new(name: &str) -> NewSession {
        NewSession::stdio(name, &ServerSpec::new("npx", ["-y", "@scope/server x"]))
    }

    #[test]
    fn a_session_is_a_private_capture_and_an_index_record() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("sessions");
        let (mut live, _file) = LiveSession::start(&dir, new("file system/../x")).unwrap();
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(live.capture_path()), 0o600);
        assert_eq!(mode(live.index_path()), 0o600);
        // The name cannot lead anywhere outside the directory.
        assert_eq!(live.capture_path().parent().unwrap(), dir);
        assert!(live.record().id.contains("file_system____x"), "{}", live.record().id);

        let r = read_record(live.index_path()).unwrap();
        assert_eq!(r.name, "file system/../x");
        assert_eq!(r.command_line, "npx -y '@scope/server x'");
        assert_eq!(r.proxy_pid, std::process::id());
        assert!(r.client.is_none() && r.ended.is_none());

        assert!(
            live.set_client(ClientInfo {
                name: "claude-ai".into(),
                version: Some("0.1.0".into()),
            })
            .unwrap()
        );
        // A second initialize does not rename the client.
        assert!(
            !live
                .set_client(ClientInfo {
                    name: "other".into(),
                    version: None,
                })
                .unwrap()
        );
        live.set_server_pid(4242).unwrap();
        let r = read_record(live.index_path()).unwrap();
        assert_eq!(r.client.unwrap().name, "claude-ai");
        assert_eq!(r.server_pid, Some(4242));

        let listing = list_sessions(&dir).unwrap();
        assert!(listing.problems.is_empty(), "{:?}", listing.problems);
        assert_eq!(listing.sessions.len(), 1);
        assert_eq!(listing.sessions[0].state, SessionState::Running);
        assert_eq!(listing.sessions[0].capture_path, live.capture_path());

        let exit = ExitInfo {
            code: Some(0),
            signal: None,
        };
        live.finish(EndCause::ClientClosed, "the client closed its stdin", Some(exit))
            .unwrap();
        live.finish(EndCause::ServerExited, "later", None).unwrap();
        let listing = list_sessions(&dir).unwrap();
        let SessionState::Ended(end) = &listing.sessions[0].state else {
            panic!("{:?}", listing.sessions[0].state)
        };
        assert_eq!(end.cause, EndCause::ClientClosed);
        assert_eq!(end.exit_code, Some(0));
        assert!(listing.sessions[0].state.label().contains("closed its stdin"));
    }

    fn write_record(dir: &Path, id: &str, started: u64, pid: u32, ticks: Option<u64>, ended: bool) {
        let record = SessionRecord {
            format: FORMAT.into(),
            version: VERSION,
            id: id.into(),
            name: id.into(),
            transport: "stdio".into(),
            command_line: "x".into(),
            program: "x".into(),
            args: vec![],
            cwd: None,
            upstream: None,
            listen: None,
            client: None,
            started_unix_ms: started,
            proxy_pid: pid,
            proxy_start_ticks: ticks,
            server_pid: None,
            control_socket: None,
            capture: format!("{id}.jsonl"),
            ended: ended.then(|| SessionEnd {
                ended_unix_ms: started + 1,
                cause: EndCause::ServerExited,
                text: "the server exited with code 0".into(),
                exit_code: Some(0),
                exit_signal: None,
            }),
        };
        fs::write(dir.join(format!("{id}.json")), serde_json::to_vec(&record).unwrap()).unwrap();
    }

    /// A pid that belonged to a process that has exited and been reaped.
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    #[test]
    fn listing_puts_running_first_and_notices_vanished_proxies() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path();
        let me = std::process::id();
        let my_ticks = process::start_stamp(me);
        assert!(my_ticks.is_some(), "/proc is readable on Linux");
        write_record(dir, "old-running", 100, me, my_ticks, false);
        write_record(dir, "new-ended", 300, me, my_ticks, true);
        write_record(dir, "newest-ended", 400, me, my_ticks, true);
        write_record(dir, "killed", 200, dead_pid(), None, false);
        // Our pid, but a different start time: a later process reusing a dead proxy's pid.
        write_record(dir, "reused-pid", 250, me, my_ticks.map(|t| t + 1), false);
        fs::write(dir.join("broken.json"), "{not json").unwrap();
        fs::write(dir.join(".x.json.1.0.tmp"), "{").unwrap();
        fs::write(dir.join("notes.txt"), "hi").unwrap();
        std::os::unix::fs::symlink(dir.join("new-ended.json"), dir.join("link.json")).unwrap();

        let listing = list_sessions(dir).unwrap();
        let order: Vec<(&str, &SessionState)> = listing
            .sessions
            .iter()
            .map(|s| (s.record.id.as_str(), &s.state))
            .collect();
        assert_eq!(order.len(), 5, "{order:?}");
        assert_eq!(order[0], ("old-running", &SessionState::Running));
        let ids: Vec<&str> = order.iter().map(|(id, _)| *id).collect();
        assert_eq!(
            ids,
            ["old-running", "newest-ended", "new-ended", "reused-pid", "killed"]
        );
        assert_eq!(*order[3].1, SessionState::Vanished);
        assert_eq!(*order[4].1, SessionState::Vanished);
        assert_eq!(listing.problems.len(), 1, "{:?}", listing.problems);
        assert!(listing.problems[0].contains("broken.json"));
    }

    #[test]
    fn an_exited_proxy_its_client_has_not_reaped_yet_is_not_running() {
        let t = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let ticks = process::start_stamp(pid);
        // Exited, not reaped: a zombie until `wait`.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while process::is_running(pid) {
            assert!(std::time::Instant::now() < deadline, "the child did not exit");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        write_record(t.path(), "zombie", 100, pid, ticks, false);
        let listing = list_sessions(t.path()).unwrap();
        assert_eq!(listing.sessions[0].state, SessionState::Vanished);
        child.wait().unwrap();
    }

    #[test]
    fn a_missing_directory_lists_nothing() {
        let t = tempfile::tempdir().unwrap();
        let listing = list_sessions(&t.path().join("nope")).unwrap();
        assert!(listing.sessions.is_empty());
    }

    #[test]
    fn ended_sessions_can_be_removed_running_ones_cannot() {
        let t = tempfile::tempdir().unwrap();
        let (mut live, _f) = LiveSession::start(t.path(), new("a")).unwrap();
        let listed = list_sessions(t.path()).unwrap().sessions.remove(0);
        assert!(remove_session(&listed).is_err());
        live.finish(EndCause::ServerExited, "done", None).unwrap();
        let listed = list_sessions(t.path()).unwrap().sessions.remove(0);
        remove_session(&listed).unwrap();
        assert!(!live.capture_path().exists() && !live.index_path().exists());
    }

    #[test]
    fn two_sessions_in_the_same_second_get_distinct_files() {
        let t = tempfile::tempdir().unwrap();
        let (a, _) = LiveSession::start(t.path(), new("s")).unwrap();
        let (b, _) = LiveSession::start(t.path(), new("s")).unwrap();
        assert_ne!(a.capture_path(), b.capture_path());
        assert_eq!(list_sessions(t.path()).unwrap().sessions.len(), 2);
    }

    #[test]
    fn timestamps_are_utc_calendar_dates() {
        assert_eq!(timestamp_id(0), "19700101T000000Z");
        // 2024-02-29 12:34:56 UTC, a leap day.
        assert_eq!(timestamp_id(1_709_210_096_000), "20240229T123456Z");
        assert_eq!(timestamp_id(951_782_400_000), "20000229T000000Z");
        assert_eq!(format_unix_ms_utc(1_709_210_096_000), "2024-02-29 12:34:56 UTC");
    }
}
