//! The control socket: a running proxy's intercept handle served on a Unix
//! socket in the user's state dir (the directory 0700, the socket 0600), so
//! the app or `mcpscope intercept` can see the held frames and act on them.
//!
//! One JSON object per line each way. A request names an `op`:
//!
//! ```text
//! {"op":"board"}                                  the queue, breakpoints, rules
//! {"op":"watch"}                                  the board now and on each change
//! {"op":"forward","id":3}                         {"op":"forward","id":3,"bytes":"…edited…"}
//! {"op":"drop","id":3}                            {"op":"answer","id":3,"json":{…}} or "raw":"…"
//! {"op":"forward-all"}   {"op":"disable"}         {"op":"hold-everything","on":true}
//! {"op":"inject","toward":"server","bytes":"…"}   toward "server" or "client"
//! {"op":"break","match":"EXPR","toward":"c2s","timeout":"30s"}
//! {"op":"unbreak","index":1}   {"op":"break-enable","index":1,"on":false}
//! {"op":"fault","rule":"EXPR => ACTION"}
//! {"op":"unfault","index":1}   {"op":"fault-enable","index":1,"on":false}
//! ```
//!
//! and is answered `{"ok":true,"said":"…"}` or `{"ok":false,"error":"…"}`.

use super::engine::{Answer, Board, InterceptHandle, Op};
use super::rule::{Breakpoint, RuleError, Toward, parse_fault};
use crate::duration::DurationError;
use crate::filter::{Filter, FilterError};
use crate::platform::ipc::{ControlListener, ControlStream};
use crate::wire::frame::Direction;
use base64::Engine as _;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long a command may wait for the proxy's loop.
const COMMAND_WAIT: Duration = Duration::from_secs(5);
/// A request line longer than this is refused (an edited frame fits).
const MAX_REQUEST: usize = 16 * 1024 * 1024;

/// Where a proxy with this pid puts its socket.
pub fn socket_path(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("proxy-{pid}.sock"))
}

/// Where a proxy told to use `name` puts its socket; a name that could
/// leave the directory is refused.
pub fn named_socket_path(dir: &Path, name: &str) -> Result<PathBuf, BadSocketName> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !ok {
        return Err(BadSocketName(name.to_owned()));
    }
    Ok(dir.join(format!("{name}.sock")))
}

/// A control socket name that is not a plain file name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("--control-name {0:?}: use up to 64 letters, digits, '-', '_' or '.' (not first)")]
pub struct BadSocketName(pub String);

/// The directory of control sockets under the state dir.
pub fn sockets_dir() -> std::io::Result<PathBuf> {
    Ok(crate::record::state_dir::root()?.join("intercept"))
}

/// Serves a handle until dropped (the socket file is removed then).
pub struct ControlServer {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ControlServer {
    pub fn start(path: &Path, handle: InterceptHandle) -> std::io::Result<ControlServer> {
        if let Some(dir) = path.parent() {
            crate::record::state_dir::ensure_private_dir(dir)?;
        }
        let listener = ControlListener::bind(path)?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("intercept-control".into())
            .spawn(move || accept_loop(listener, handle, s))?;
        Ok(ControlServer {
            path: path.to_owned(),
            stop,
            thread: Some(thread),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

fn accept_loop(listener: ControlListener, handle: InterceptHandle, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok(Some(stream)) => {
                let h = handle.clone();
                let s = stop.clone();
                let _ = std::thread::Builder::new()
                    .name("intercept-client".into())
                    .spawn(move || serve(stream, h, s));
            }
            Ok(None) | Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

fn serve(stream: ControlStream, handle: InterceptHandle, stop: Arc<AtomicBool>) {
    let Ok(mut out) = stream.try_clone() else { return };
    let mut reader = BufReader::new(stream);
    let mut line = Vec::new();
    loop {
        line.clear();
        match std::io::Read::take(&mut reader, MAX_REQUEST as u64 + 1).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) if line.len() > MAX_REQUEST => {
                let _ = writeln!(out, "{}", json!({"ok": false, "error": "request too long"}));
                return;
            }
            Ok(_) => {}
        }
        let request: Value = match serde_json::from_slice(&line) {
            Ok(v) => v,
            Err(e) => {
                if writeln!(out, "{}", json!({"ok": false, "error": format!("not JSON: {e}")})).is_err() {
                    return;
                }
                continue;
            }
        };
        match request.get("op").and_then(Value::as_str) {
            Some("board") => {
                let reply = json!({"ok": true, "board": board_json(&handle.board(), Instant::now())});
                if writeln!(out, "{reply}").is_err() {
                    return;
                }
            }
            Some("watch") => {
                let mut seen = 0;
                loop {
                    let b = handle.board_after(seen, Duration::from_millis(500));
                    if b.version != seen || b.closed {
                        seen = b.version;
                        if writeln!(out, "{}", json!({"board": board_json(&b, Instant::now())})).is_err() {
                            return;
                        }
                    }
                    if b.closed || stop.load(Ordering::SeqCst) {
                        return;
                    }
                }
            }
            _ => {
                let reply = match op_from_json(&request) {
                    Ok(op) => match handle.command(op, COMMAND_WAIT) {
                        Ok(said) => json!({"ok": true, "said": said}),
                        Err(e) => json!({"ok": false, "error": e.to_string()}),
                    },
                    Err(e) => json!({"ok": false, "error": e.to_string()}),
                };
                if writeln!(out, "{reply}").is_err() {
                    return;
                }
            }
        }
    }
}

/// Puts `bytes` in `o` under `key` as text, or under `KEY_b64` when they
/// are not UTF-8 (the way every request and board carries bytes).
pub fn put_bytes(o: &mut Value, key: &str, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(s) => o[key] = s.into(),
        Err(_) => o[format!("{key}_b64")] = base64::engine::general_purpose::STANDARD.encode(bytes).into(),
    }
}

fn bytes_field(v: &Value, key: &str) -> Option<Vec<u8>> {
    if let Some(s) = v.get(key).and_then(Value::as_str) {
        return Some(s.as_bytes().to_vec());
    }
    v.get(format!("{key}_b64"))
        .and_then(Value::as_str)
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
}

/// Why a request line names no command the gate can take.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("a request names its `op`")]
    NoOp,
    #[error("unknown op {0:?}")]
    UnknownOp(String),
    /// `op` lacks a field, or has it with the wrong type; `what` says what to give.
    #[error("{op}: give {what}")]
    Missing { op: String, what: &'static str },
    /// `op`'s `toward` is none of `allowed`.
    #[error("{op}: `toward` is {allowed}")]
    Toward { op: &'static str, allowed: &'static str },
    #[error("break: {0}")]
    Filter(FilterError),
    #[error("break: timeout {0}")]
    Timeout(DurationError),
    #[error("fault: {0}")]
    Rule(RuleError),
}

/// A request line's command.
pub fn op_from_json(v: &Value) -> Result<Op, RequestError> {
    let op = v.get("op").and_then(Value::as_str).ok_or(RequestError::NoOp)?;
    let missing = |what| RequestError::Missing {
        op: op.to_owned(),
        what,
    };
    let id = || {
        v.get("id")
            .and_then(Value::as_u64)
            .ok_or_else(|| missing("the held frame's `id`"))
    };
    let index = || {
        v.get("index")
            .and_then(Value::as_u64)
            .filter(|i| *i >= 1)
            .map(|i| i as usize - 1)
            .ok_or_else(|| missing("`index` (from 1)"))
    };
    let on = || v.get("on").and_then(Value::as_bool).unwrap_or(true);
    Ok(match op {
        "forward" => match bytes_field(v, "bytes") {
            Some(b) => Op::ForwardEdited(id()?, b),
            None => Op::Forward(id()?),
        },
        "drop" => Op::Drop(id()?),
        "answer" => {
            let answer = if let Some(j) = v.get("json") {
                Answer::Json(j.clone())
            } else if let Some(raw) = bytes_field(v, "raw") {
                Answer::Raw(raw)
            } else {
                return Err(missing("`json` (a result, or {\"error\": …}) or `raw`"));
            };
            Op::Answer(id()?, answer)
        }
        "forward-all" => Op::ForwardAll,
        "disable" => Op::Disable,
        "hold-everything" => Op::HoldEverything(on()),
        "inject" => {
            let toward = match v.get("toward").and_then(Value::as_str) {
                Some("server") => Direction::Out,
                Some("client") => Direction::In,
                _ => {
                    return Err(RequestError::Toward {
                        op: "inject",
                        allowed: "\"server\" or \"client\"",
                    });
                }
            };
            let bytes = bytes_field(v, "bytes").ok_or_else(|| missing("`bytes`"))?;
            Op::Inject { toward, bytes }
        }
        "break" => {
            let text = v
                .get("match")
                .and_then(Value::as_str)
                .ok_or_else(|| missing("`match`"))?;
            let filter = Filter::parse(text).map_err(RequestError::Filter)?;
            let toward = match v.get("toward").and_then(Value::as_str) {
                Some(t) => Toward::parse(t).ok_or(RequestError::Toward {
                    op: "break",
                    allowed: "c2s, s2c or both",
                })?,
                None => Toward::Both,
            };
            // A peer's number is checked like a person's text: `1e300`
            // would panic the conversion and end this client's thread.
            let timeout = match v.get("timeout") {
                // 0 seconds as a number has always meant no timeout.
                Some(Value::Number(n)) if n.as_f64() == Some(0.0) => None,
                Some(t) => crate::duration::from_json(t).map_err(RequestError::Timeout)?,
                None => None,
            };
            Op::AddBreakpoint(Breakpoint {
                filter,
                toward,
                timeout,
                enabled: true,
            })
        }
        "unbreak" => Op::RemoveBreakpoint(index()?),
        "break-enable" => Op::EnableBreakpoint(index()?, on()),
        "fault" => {
            let text = v.get("rule").and_then(Value::as_str).ok_or_else(|| missing("`rule`"))?;
            Op::AddFault(parse_fault(text).map_err(RequestError::Rule)?)
        }
        "unfault" => Op::RemoveFault(index()?),
        "fault-enable" => Op::EnableFault(index()?, on()),
        other => return Err(RequestError::UnknownOp(other.to_owned())),
    })
}

/// The board as the socket sends it.
pub fn board_json(b: &Board, now: Instant) -> Value {
    let held: Vec<Value> = b
        .held
        .iter()
        .map(|h| {
            let mut o = json!({
                "id": h.id,
                "toward": if h.direction == Direction::Out { "c2s" } else { "s2c" },
                "seq": h.seq,
                "method": h.method,
                "request": h.is_request,
                "by": h.by,
                "held_ms": now.saturating_duration_since(h.since).as_millis() as u64,
                "timeout_left_ms": h.deadline.map(|d| d.saturating_duration_since(now).as_millis() as u64),
            });
            put_bytes(&mut o, "bytes", &h.bytes);
            o
        })
        .collect();
    json!({
        "version": b.version,
        "held": held,
        "breakpoints": b.breakpoints.iter().map(|x| json!({
            "match": x.text, "enabled": x.enabled, "hits": x.hits,
            "timeout_ms": x.timeout.map(|t| t.as_millis() as u64),
        })).collect::<Vec<_>>(),
        "faults": b.faults.iter().map(|f| json!({
            "rule": f.text, "enabled": f.enabled, "matched": f.matched, "applied": f.applied,
        })).collect::<Vec<_>>(),
        "hold_everything": b.hold_everything,
        "seed": b.seed,
        "closed": b.closed,
    })
}

/// A held frame as the socket describes it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HeldView {
    pub id: u64,
    /// `Out`: toward the server.
    pub direction: Option<Direction>,
    pub seq: u64,
    pub method: Option<String>,
    pub is_request: bool,
    pub by: String,
    pub held_ms: u64,
    pub timeout_left_ms: Option<u64>,
    /// Exactly as it arrived, ending included.
    pub bytes: Vec<u8>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct RuleView {
    pub text: String,
    pub enabled: bool,
    /// A breakpoint's hits, or a fault rule's matches.
    pub matched: u64,
    /// A fault rule's actions taken.
    pub applied: u64,
}

/// The board as read from the socket (what the app draws).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BoardView {
    pub version: u64,
    pub held: Vec<HeldView>,
    pub breakpoints: Vec<RuleView>,
    pub faults: Vec<RuleView>,
    pub hold_everything: bool,
    pub seed: u64,
    pub closed: bool,
}

impl BoardView {
    /// Reads [`board_json`]'s output; what is missing reads as empty.
    pub fn from_json(v: &Value) -> BoardView {
        let u = |v: &Value, k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
        let b = |v: &Value, k: &str| v.get(k).and_then(Value::as_bool).unwrap_or(false);
        let st = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
        let list = |k: &str| v.get(k).and_then(Value::as_array).cloned().unwrap_or_default();
        BoardView {
            version: u(v, "version"),
            held: list("held")
                .iter()
                .map(|h| HeldView {
                    id: u(h, "id"),
                    direction: match h.get("toward").and_then(Value::as_str) {
                        Some("c2s") => Some(Direction::Out),
                        Some("s2c") => Some(Direction::In),
                        _ => None,
                    },
                    seq: u(h, "seq"),
                    method: h.get("method").and_then(Value::as_str).map(str::to_owned),
                    is_request: b(h, "request"),
                    by: st(h, "by"),
                    held_ms: u(h, "held_ms"),
                    timeout_left_ms: h.get("timeout_left_ms").and_then(Value::as_u64),
                    bytes: bytes_field(h, "bytes").unwrap_or_default(),
                })
                .collect(),
            breakpoints: list("breakpoints")
                .iter()
                .map(|x| RuleView {
                    text: st(x, "match"),
                    enabled: b(x, "enabled"),
                    matched: u(x, "hits"),
                    applied: 0,
                })
                .collect(),
            faults: list("faults")
                .iter()
                .map(|x| RuleView {
                    text: st(x, "rule"),
                    enabled: b(x, "enabled"),
                    matched: u(x, "matched"),
                    applied: u(x, "applied"),
                })
                .collect(),
            hold_everything: b(v, "hold_everything"),
            seed: u(v, "seed"),
            closed: b(v, "closed"),
        }
    }
}

/// The user's end of a control socket.
pub struct ControlClient {
    reader: BufReader<ControlStream>,
    writer: ControlStream,
    /// A line read in part when a read timed out.
    partial: Vec<u8>,
}

impl ControlClient {
    pub fn connect(path: &Path) -> std::io::Result<ControlClient> {
        let stream = ControlStream::connect(path)?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        Ok(ControlClient {
            writer: stream.try_clone()?,
            reader: BufReader::new(stream),
            partial: Vec::new(),
        })
    }

    /// Sends one request and reads its answer.
    pub fn request(&mut self, request: &Value) -> std::io::Result<Value> {
        writeln!(self.writer, "{request}")?;
        self.next_line()
    }

    /// Starts watching: each later [`ControlClient::next_line`] is a board.
    pub fn watch(&mut self) -> std::io::Result<()> {
        self.reader.get_ref().set_read_timeout(None)?;
        writeln!(self.writer, "{}", json!({"op": "watch"}))
    }

    /// Starts watching with reads that give up after `every`, so a caller
    /// can stop between boards ([`ControlClient::poll_board`]).
    pub fn watch_polled(&mut self, every: Duration) -> std::io::Result<()> {
        self.reader.get_ref().set_read_timeout(Some(every))?;
        writeln!(self.writer, "{}", json!({"op": "watch"}))
    }

    /// The next board, or None if none came within the read timeout (a
    /// line half read is kept for the next call).
    pub fn poll_board(&mut self) -> std::io::Result<Option<BoardView>> {
        match self.reader.read_until(b'\n', &mut self.partial) {
            Ok(0) => Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the proxy closed its control socket",
            )),
            Ok(_) if self.partial.ends_with(b"\n") => {
                let line = std::mem::take(&mut self.partial);
                let v: Value = serde_json::from_slice(&line)
                    .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
                Ok(Some(BoardView::from_json(&v["board"])))
            }
            Ok(_) => Ok(None),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub fn next_line(&mut self) -> std::io::Result<Value> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the proxy closed its control socket",
            ));
        }
        serde_json::from_str(&line).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intercept::engine::Interceptor;
    use crate::proxy::gate::Gate;

    #[test]
    fn a_named_socket_stays_in_its_directory() {
        let dir = Path::new("/s");
        assert_eq!(
            named_socket_path(dir, "app-12.3").unwrap(),
            Path::new("/s/app-12.3.sock")
        );
        for bad in ["", "../x", "a/b", ".hidden", "sp ace"] {
            assert_eq!(named_socket_path(dir, bad), Err(BadSocketName(bad.into())), "{bad:?}");
        }
        assert_eq!(
            named_socket_path(dir, "../x").unwrap_err().to_string(),
            "--control-name \"../x\": use up to 64 letters, digits, '-', '_' or '.' (not first)"
        );
    }

    /// Every way a request line is refused, as the socket's answer says it.
    #[test]
    fn each_refused_request_says_why() {
        let refused = |v: Value| op_from_json(&v).unwrap_err();
        for (request, want) in [
            (json!({"id": 1}), "a request names its `op`"),
            (json!({"op": "explode"}), "unknown op \"explode\""),
            (json!({"op": "forward"}), "forward: give the held frame's `id`"),
            (
                json!({"op": "fault-enable", "index": 0}),
                "fault-enable: give `index` (from 1)",
            ),
            (
                json!({"op": "answer", "id": 1}),
                "answer: give `json` (a result, or {\"error\": …}) or `raw`",
            ),
            (json!({"op": "inject", "toward": "server"}), "inject: give `bytes`"),
            (json!({"op": "break"}), "break: give `match`"),
            (json!({"op": "fault"}), "fault: give `rule`"),
            (
                json!({"op": "inject", "toward": "up", "bytes": "x"}),
                "inject: `toward` is \"server\" or \"client\"",
            ),
            (
                json!({"op": "break", "match": "true", "toward": "up"}),
                "break: `toward` is c2s, s2c or both",
            ),
        ] {
            assert_eq!(refused(request.clone()).to_string(), want, "{request}");
        }
        let e = refused(json!({"op": "break", "match": "methd == 1"}));
        assert!(matches!(e, RequestError::Filter(_)), "{e:?}");
        assert!(e.to_string().starts_with("break: at 1: unknown field \"methd\""), "{e}");
        let e = refused(json!({"op": "break", "match": "true", "timeout": "soon"}));
        assert!(matches!(e, RequestError::Timeout(_)), "{e:?}");
        assert_eq!(
            e.to_string(),
            "break: timeout \"soon\" is not a duration (e.g. 500ms, 30s, 2m, 1h)"
        );
        let e = refused(json!({"op": "fault", "rule": "true => boom"}));
        assert!(matches!(e, RequestError::Rule(_)), "{e:?}");
        assert!(e.to_string().starts_with("fault: unknown action \"boom\""), "{e}");
    }

    /// A proxy whose gate has ended answers on its socket that it has.
    #[test]
    fn an_ended_proxy_says_so_on_its_socket() {
        let dir = tempfile::tempdir().unwrap();
        let path = socket_path(dir.path(), 2);
        let (mut gate, handle) = Interceptor::new(vec![], vec![], 1);
        let _server = ControlServer::start(&path, handle).unwrap();
        gate.closing(Instant::now(), &mut Vec::new());
        let mut c = ControlClient::connect(&path).unwrap();
        let r = c.request(&json!({"op": "forward-all"})).unwrap();
        assert_eq!(r, json!({"ok": false, "error": "the proxy has ended"}));
    }

    #[test]
    fn requests_read_into_commands_and_mistakes_are_named() {
        let op = |v: Value| op_from_json(&v);
        let refused = |v: Value| op_from_json(&v).unwrap_err().to_string();
        assert!(matches!(op(json!({"op": "forward", "id": 3})), Ok(Op::Forward(3))));
        assert!(
            matches!(op(json!({"op": "forward", "id": 3, "bytes": "x"})), Ok(Op::ForwardEdited(3, b)) if b == b"x")
        );
        assert!(matches!(
            op(json!({"op": "answer", "id": 1, "json": {"a": 1}})),
            Ok(Op::Answer(1, Answer::Json(_)))
        ));
        assert!(
            matches!(op(json!({"op": "inject", "toward": "client", "bytes_b64": "/w=="})),
            Ok(Op::Inject { toward: Direction::In, bytes }) if bytes == [0xff])
        );
        assert!(
            matches!(op(json!({"op": "break", "match": "method == \"x\"", "timeout": "2s"})),
            Ok(Op::AddBreakpoint(b)) if b.timeout == Some(Duration::from_secs(2)))
        );
        assert!(matches!(
            op(json!({"op": "unfault", "index": 2})),
            Ok(Op::RemoveFault(1))
        ));
        assert!(refused(json!({"op": "drop"})).contains("`id`"));
        assert!(refused(json!({"op": "inject", "toward": "up", "bytes": "x"})).contains("toward"));
        assert!(refused(json!({"op": "fault", "rule": "true => boom"})).contains("unknown action"));
        assert!(refused(json!({"op": "explode"})).contains("unknown op"));
        assert!(refused(json!({"op": "unbreak", "index": 0})).contains("from 1"));
    }

    #[test]
    fn break_timeouts_out_of_range_and_deep_matches_are_answered_not_panicked_on() {
        let op = |v: Value| op_from_json(&v);
        let refused = |v: Value| op_from_json(&v).unwrap_err().to_string();
        let timeout = |t: Value| op(json!({"op": "break", "match": "true", "timeout": t}));
        let big: Value = serde_json::from_str("1e300").unwrap();
        assert!(timeout(big).unwrap_err().to_string().contains("longer than 8760h"));
        assert!(
            timeout(json!(u64::MAX))
                .unwrap_err()
                .to_string()
                .contains("longer than 8760h")
        );
        assert!(timeout(json!(-1.5)).unwrap_err().to_string().contains("negative"));
        assert!(
            timeout(json!("18446744073709551615s"))
                .unwrap_err()
                .to_string()
                .contains("longer than")
        );
        assert!(timeout(json!([1])).unwrap_err().to_string().contains("not a duration"));
        // 0 (and null, which the app and the CLI send) is no timeout.
        for none in [json!(0), Value::Null] {
            assert!(matches!(timeout(none), Ok(Op::AddBreakpoint(b)) if b.timeout.is_none()));
        }
        assert!(
            matches!(timeout(json!(1.5)), Ok(Op::AddBreakpoint(b)) if b.timeout == Some(Duration::from_millis(1500)))
        );
        let deep = format!("{}true{}", "(".repeat(5000), ")".repeat(5000));
        assert!(refused(json!({"op": "break", "match": deep})).contains("nested deeper than"));
        let deep = format!("{}true => drop", "not ".repeat(30_000));
        assert!(refused(json!({"op": "fault", "rule": deep})).contains("nested deeper than"));
    }

    #[test]
    fn the_board_reads_back_as_it_was_sent() {
        let (mut gate, handle) = Interceptor::new(
            vec![crate::intercept::parse_fault("method == \"ping\" => drop").unwrap()],
            vec![Breakpoint {
                filter: Filter::parse("method == \"tools/call\"").unwrap(),
                toward: Toward::Server,
                timeout: Some(Duration::from_secs(9)),
                enabled: true,
            }],
            3,
        );
        let frame = crate::wire::frame::Frame::from_line(
            4,
            Duration::ZERO,
            Direction::Out,
            crate::wire::framing::RawLine {
                bytes: br#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#.to_vec(),
                ending: crate::wire::framing::LineEnding::Lf,
            },
            &crate::wire::classify::Limits::default(),
        );
        gate.arrived(&frame, Instant::now(), &mut Vec::new());
        let view = BoardView::from_json(&board_json(&handle.board(), Instant::now()));
        assert_eq!(view.held.len(), 1);
        let h = &view.held[0];
        assert_eq!(
            (h.id, h.seq, h.direction, h.is_request),
            (1, 4, Some(Direction::Out), true)
        );
        assert_eq!(h.method.as_deref(), Some("tools/call"));
        assert!(h.timeout_left_ms.is_some_and(|ms| ms <= 9000 && ms > 8000));
        assert!(h.bytes.ends_with(b"}\n"));
        assert_eq!(view.breakpoints[0].text, "[c2s] method == \"tools/call\"");
        assert_eq!(view.breakpoints[0].matched, 1);
        assert_eq!(view.faults[0].text, "method == \"ping\" => drop");
        assert_eq!(view.seed, 3);
    }

    #[test]
    #[cfg(unix)] // checks the socket file's mode
    fn a_client_on_the_socket_sees_the_queue_and_acts_on_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = socket_path(dir.path(), 1);
        let (mut gate, handle) = Interceptor::new(vec![], vec![], 1);
        let server = ControlServer::start(&path, handle).unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        // The proxy's loop, ticking the gate.
        let done = Arc::new(AtomicBool::new(false));
        let d = done.clone();
        let sent = Arc::new(std::sync::Mutex::new(Vec::new()));
        let s = sent.clone();
        let lp = std::thread::spawn(move || {
            let (wtx, wrx) = crossbeam_channel::bounded(1);
            gate.set_waker(crate::proxy::gate::Waker::new(wtx));
            while !d.load(Ordering::SeqCst) {
                let _ = wrx.recv_timeout(Duration::from_millis(20));
                let mut out = Vec::new();
                gate.tick(Instant::now(), &mut out);
                s.lock().unwrap().extend(out);
            }
            let mut out = Vec::new();
            gate.closing(Instant::now(), &mut out);
        });
        let mut c = ControlClient::connect(&path).unwrap();
        let r = c
            .request(&json!({"op": "inject", "toward": "server", "bytes": "{\"jsonrpc\":\"2.0\",\"method\":\"x\"}"}))
            .unwrap();
        assert_eq!(r["ok"], true, "{r}");
        let r = c
            .request(&json!({"op": "fault", "rule": "method == \"ping\" => drop"}))
            .unwrap();
        assert_eq!(r["ok"], true, "{r}");
        let r = c.request(&json!({"op": "board"})).unwrap();
        assert_eq!(r["board"]["faults"][0]["rule"], "method == \"ping\" => drop");
        let r = c.request(&json!({"op": "drop", "id": 5})).unwrap();
        assert_eq!(r["ok"], false);
        assert!(r["error"].as_str().unwrap().contains("#5"));
        let r = c.request(&json!("nonsense")).unwrap();
        assert_eq!(r["ok"], false);
        assert!(sent.lock().unwrap().iter().any(|a| matches!(
            a,
            crate::proxy::gate::GateAction::Send {
                toward: Direction::Out,
                ..
            }
        )));
        done.store(true, Ordering::SeqCst);
        lp.join().unwrap();
        drop(server);
        assert!(!path.exists(), "the socket is removed");
    }
}
