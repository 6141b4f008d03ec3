//! Intercept on the command line: the gate `proxy --break/--fault` runs,
//! and `mcpscope intercept`, which drives a running proxy's held-frame
//! queue through its control socket.

use super::exit;
use super::proxy::ProxyArgs;
use clap::{Args, Subcommand};
use mcpscope_core::intercept::control::{self, ControlClient, ControlServer};
use mcpscope_core::intercept::rule::{Breakpoint, parse_breakpoint};
use mcpscope_core::intercept::rules_file::parse_rules_file;
use mcpscope_core::intercept::{Interceptor, parse_fault};
use mcpscope_core::record::state_dir;
use mcpscope_core::sessions::index;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// The gate a proxy runs and the socket it is driven through.
pub struct Gated {
    pub gate: Interceptor,
    pub control: ControlServer,
}

/// `c2s: EXPR`, `s2c: EXPR` or `EXPR`.
fn breakpoint(text: &str, timeout: Option<Duration>) -> Result<Breakpoint, String> {
    parse_breakpoint(text, timeout).map_err(|e| format!("--break {:?}: {e}", mcpscope_core::text::ellipsize(text, 80)))
}

/// The gate `proxy`'s flags ask for, with its control socket started;
/// None when they ask for none.
pub fn gate_of(args: &ProxyArgs, http: bool) -> Result<Option<Gated>, String> {
    if args.breaks.is_empty()
        && args.faults.is_empty()
        && args.faults_file.is_none()
        && !args.intercept
        && args.control_name.is_none()
    {
        return Ok(None);
    }
    let timeout = match args.break_timeout.trim() {
        "none" | "0" => None,
        t => Some(mcpscope_core::duration::parse(t).map_err(|e| format!("--break-timeout: {e}, or none"))?),
    };
    let mut breakpoints = args
        .breaks
        .iter()
        .map(|b| breakpoint(b, timeout))
        .collect::<Result<Vec<_>, _>>()?;
    let mut faults = args
        .faults
        .iter()
        .map(|f| parse_fault(f).map_err(|e| format!("--fault {:?}: {e}", mcpscope_core::text::ellipsize(f, 80))))
        .collect::<Result<Vec<_>, _>>()?;
    let mut seed = args.seed;
    if let Some(path) = &args.faults_file {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let json = path.extension().is_some_and(|x| x == "json");
        // The error's first line names the place (fault N, or line and
        // column); the lines after it show the text with a caret.
        let file = parse_rules_file(&text, json).map_err(|e| {
            format!(
                "{}: {}",
                path.display(),
                mcpscope_core::text::terminal_safe(&e.render(), true)
            )
        })?;
        faults.extend(file.faults);
        breakpoints.extend(file.breakpoints.into_iter().map(|mut b| {
            b.timeout = b.timeout.or(timeout);
            b
        }));
        seed = seed.or(file.seed);
    }
    let seed_given = seed.is_some();
    let seed = seed.unwrap_or_else(Interceptor::fresh_seed);
    let (mut gate, handle) = Interceptor::new(faults, breakpoints, seed);
    if http {
        gate = gate.over_http();
    }
    for w in gate.warnings() {
        crate::errln!("mcpscope proxy: {w}");
    }
    let dir = control::sockets_dir().map_err(|e| format!("no state directory for the control socket: {e}"))?;
    let path = match &args.control_name {
        Some(name) => control::named_socket_path(&dir, name).map_err(|e| e.to_string())?,
        None => control::socket_path(&dir, std::process::id()),
    };
    let control = ControlServer::start(&path, handle)
        .map_err(|e| format!("cannot open the control socket {}: {e}", path.display()))?;
    if !seed_given && (!args.faults.is_empty() || args.faults_file.is_some()) {
        crate::errln!("mcpscope proxy: fault rules' seed {seed} (--seed {seed} repeats this run's dice)");
    }
    crate::errln!(
        "mcpscope proxy: intercepting; control socket {} (mcpscope intercept --socket … list)",
        path.display()
    );
    Ok(Some(Gated { gate, control }))
}

/// Moves the client's end of stdout to a handle the proxy alone holds
/// (stdout then points at the null device), so closing it is a real
/// disconnect.
pub fn take_stdout() -> std::io::Result<std::fs::File> {
    mcpscope_core::platform::process::take_stdout()
}

#[derive(Args, Debug)]
pub struct InterceptArgs {
    /// The proxy's control socket (printed when it starts).
    #[arg(long, value_name = "PATH", conflicts_with = "session")]
    pub socket: Option<PathBuf>,

    /// The running proxied session with this name (`proxy --session NAME`).
    #[arg(long, value_name = "NAME")]
    pub session: Option<String>,

    /// Print the proxy's answers as JSON.
    #[arg(long)]
    pub json: bool,

    #[command(subcommand)]
    pub action: InterceptAction,
}

#[derive(Subcommand, Debug)]
pub enum InterceptAction {
    /// The held frames (with the ids the other actions take), breakpoints and rules.
    List,
    /// The board again on every change, one JSON object per line.
    Watch,
    /// Send a held frame on, unchanged or as given (anything, even malformed).
    Forward {
        id: u64,
        #[arg(long, value_name = "TEXT")]
        edited: Option<String>,
    },
    /// Never send a held frame.
    Drop { id: u64 },
    /// Answer a held request yourself; the other side never sees it.
    Answer {
        id: u64,
        /// A result (`{"content": …}`), or `{"error": {"code": …, "message": …}}`.
        #[arg(long, value_name = "JSON", conflicts_with = "raw")]
        json: Option<String>,
        /// A line sent back exactly as typed.
        #[arg(long, value_name = "TEXT")]
        raw: Option<String>,
    },
    /// Forward every held frame.
    ForwardAll,
    /// Switch every breakpoint off and forward what is held.
    Disable,
    /// Hold every frame from now on (`on`), or stop (`off`).
    HoldEverything {
        #[arg(value_parser = ["on", "off"])]
        on: String,
    },
    /// Send a line no peer wrote, exactly as typed.
    Inject {
        #[arg(long, conflicts_with = "to_client", required_unless_present = "to_client")]
        to_server: bool,
        #[arg(long)]
        to_client: bool,
        line: String,
    },
    /// Add a breakpoint.
    Break {
        expr: String,
        /// c2s, s2c or both.
        #[arg(long, default_value = "both")]
        toward: String,
        #[arg(long, value_name = "DURATION")]
        timeout: Option<String>,
    },
    /// Remove breakpoint N (from 1, as `list` numbers them).
    Unbreak { index: u64 },
    /// Add a fault rule, `EXPR => ACTION`.
    Fault { rule: String },
    /// Remove fault rule N.
    Unfault { index: u64 },
    /// Switch fault rule N on or off.
    FaultEnable {
        index: u64,
        #[arg(value_parser = ["on", "off"])]
        on: String,
    },
}

fn find_socket(args: &InterceptArgs) -> Result<PathBuf, String> {
    if let Some(p) = &args.socket {
        return Ok(p.clone());
    }
    let running: Vec<(String, String)> = state_dir::sessions_dir()
        .ok()
        .and_then(|d| index::list_sessions(&d).ok())
        .map(|l| {
            l.sessions
                .into_iter()
                .filter(|s| s.state.is_running())
                .filter_map(|s| Some((s.record.name.clone(), s.record.control_socket.clone()?)))
                .collect()
        })
        .unwrap_or_default();
    if let Some(name) = &args.session {
        return running
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, p)| PathBuf::from(p))
            .ok_or_else(|| format!("no running proxied session {name:?} with breakpoints or fault rules"));
    }
    let dir = control::sockets_dir().map_err(|e| e.to_string())?;
    let live: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "sock"))
                .filter(|p| mcpscope_core::platform::ipc::ControlStream::answers(p))
                .collect()
        })
        .unwrap_or_default();
    match live.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err("no intercepting proxy is running (start one with `mcpscope proxy --intercept -- CMD`)".into()),
        many => Err(format!(
            "{} intercepting proxies are running; name one with --socket ({}) or --session",
            many.len(),
            many.iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

fn request_of(action: &InterceptAction) -> Result<Value, String> {
    Ok(match action {
        InterceptAction::List => json!({"op": "board"}),
        InterceptAction::Watch => json!({"op": "watch"}),
        InterceptAction::Forward { id, edited: None } => json!({"op": "forward", "id": id}),
        InterceptAction::Forward { id, edited: Some(t) } => json!({"op": "forward", "id": id, "bytes": t}),
        InterceptAction::Drop { id } => json!({"op": "drop", "id": id}),
        InterceptAction::Answer { id, json, raw } => match (json, raw) {
            (Some(j), _) => {
                let v: Value = serde_json::from_str(j).map_err(|e| format!("--json is not JSON: {e}"))?;
                json!({"op": "answer", "id": id, "json": v})
            }
            (None, Some(r)) => json!({"op": "answer", "id": id, "raw": r}),
            (None, None) => return Err("answer: give --json or --raw".into()),
        },
        InterceptAction::ForwardAll => json!({"op": "forward-all"}),
        InterceptAction::Disable => json!({"op": "disable"}),
        InterceptAction::HoldEverything { on } => json!({"op": "hold-everything", "on": on == "on"}),
        InterceptAction::Inject { to_server, line, .. } => {
            json!({"op": "inject", "toward": if *to_server { "server" } else { "client" }, "bytes": line})
        }
        InterceptAction::Break { expr, toward, timeout } => {
            json!({"op": "break", "match": expr, "toward": toward, "timeout": timeout})
        }
        InterceptAction::Unbreak { index } => json!({"op": "unbreak", "index": index}),
        InterceptAction::Fault { rule } => json!({"op": "fault", "rule": rule}),
        InterceptAction::Unfault { index } => json!({"op": "unfault", "index": index}),
        InterceptAction::FaultEnable { index, on } => json!({"op": "fault-enable", "index": index, "on": on == "on"}),
    })
}

/// The board for a person.
fn print_board(b: &Value) {
    let held = b["held"].as_array().cloned().unwrap_or_default();
    crate::outln!("held frames: {}", held.len());
    for h in &held {
        let text = h["bytes"].as_str().unwrap_or("(not UTF-8)").trim_end();
        let left = h["timeout_left_ms"]
            .as_u64()
            .map(|ms| format!(", goes on in {:.1}s", ms as f64 / 1000.0))
            .unwrap_or_default();
        crate::outln!(
            "  #{} {} seq {} held {:.1}s{left} by {}",
            h["id"],
            h["toward"].as_str().unwrap_or(""),
            h["seq"],
            h["held_ms"].as_u64().unwrap_or(0) as f64 / 1000.0,
            h["by"].as_str().unwrap_or("")
        );
        // What a peer wrote never drives the terminal.
        crate::outln!(
            "     {}",
            mcpscope_core::text::terminal_safe(&mcpscope_core::text::shorten(text, 200), false)
        );
    }
    if b["hold_everything"] == true {
        crate::outln!("holding every frame");
    }
    for (i, x) in b["breakpoints"].as_array().into_iter().flatten().enumerate() {
        crate::outln!(
            "break {}: {}{} ({} hits)",
            i + 1,
            x["match"].as_str().unwrap_or(""),
            if x["enabled"] == true { "" } else { " [off]" },
            x["hits"]
        );
    }
    for (i, f) in b["faults"].as_array().into_iter().flatten().enumerate() {
        crate::outln!(
            "fault {}: {}{} (matched {}, applied {})",
            i + 1,
            f["rule"].as_str().unwrap_or(""),
            if f["enabled"] == true { "" } else { " [off]" },
            f["matched"],
            f["applied"]
        );
    }
    crate::outln!("seed {}", b["seed"]);
}

/// Exit status: 0 done, 1 the proxy refused (no such id…), 2 usage, 69 no proxy.
pub fn run(args: InterceptArgs) -> ExitCode {
    let path = match find_socket(&args) {
        Ok(p) => p,
        Err(e) => {
            crate::errln!("mcpscope intercept: {e}");
            return ExitCode::from(exit::UNREACHABLE);
        }
    };
    let request = match request_of(&args.action) {
        Ok(r) => r,
        Err(e) => {
            crate::errln!("mcpscope intercept: {e}");
            return ExitCode::from(exit::USAGE);
        }
    };
    let mut client = match ControlClient::connect(&path) {
        Ok(c) => c,
        Err(e) => {
            crate::errln!("mcpscope intercept: cannot reach {}: {e}", path.display());
            return ExitCode::from(exit::UNREACHABLE);
        }
    };
    if matches!(args.action, InterceptAction::Watch) {
        if let Err(e) = client.watch() {
            crate::errln!("mcpscope intercept: {e}");
            return ExitCode::from(exit::UNREACHABLE);
        }
        loop {
            match client.next_line() {
                Ok(v) => {
                    crate::outln!("{}", v["board"]);
                    if v["board"]["closed"] == true {
                        return ExitCode::SUCCESS;
                    }
                }
                Err(e) => {
                    crate::errln!("mcpscope intercept: {e}");
                    return ExitCode::SUCCESS;
                }
            }
        }
    }
    let reply = match client.request(&request) {
        Ok(r) => r,
        Err(e) => {
            crate::errln!("mcpscope intercept: {e}");
            return ExitCode::from(exit::UNREACHABLE);
        }
    };
    if args.json {
        crate::outln!("{reply}");
    } else if let Some(b) = reply.get("board") {
        print_board(b);
    } else if let Some(said) = reply["said"].as_str() {
        crate::outln!("{said}");
    }
    if reply["ok"] == true {
        ExitCode::SUCCESS
    } else {
        crate::errln!("mcpscope intercept: {}", reply["error"].as_str().unwrap_or("refused"));
        ExitCode::from(1)
    }
}
