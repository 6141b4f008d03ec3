//! `mcpscope mock CAPTURE`: the server side of a capture, served again over
//! stdio, or over Streamable HTTP with `--listen`; `--check` says what can be served. The engine is
//! `mcpscope_core::replay`; this file owns the pipes, the clock and stderr.

use clap::Args;
use mcpscope_core::client::Client;
use mcpscope_core::protocol::era::EraChoice;
use mcpscope_core::protocol::handshake::HandshakeOptions;
use mcpscope_core::replay::index::Exchange;
use mcpscope_core::replay::matcher::{Exhausted, Rule};
use mcpscope_core::replay::mock::{Mock, MockOptions, Output, Timing};
use mcpscope_core::replay::{self, Check, LoadError, http};
use mcpscope_core::text::ErrorChain;
use mcpscope_core::transport::process::ServerSpec;
use mcpscope_core::transport::session::SessionOptions;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::io::{BufRead, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::mpsc::{RecvTimeoutError, sync_channel};
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct MockArgs {
    /// A JSONL capture written by mcpscope (call, proxy, proxy --session, the reverse proxy or the app).
    pub capture: PathBuf,

    /// List what can be served (per method) and why the rest cannot; serve nothing.
    #[arg(long)]
    pub check: bool,

    /// How a request finds its recorded answer: method-params (same method, same
    /// params apart from _meta, progressToken and key order), strict (params
    /// exactly, _meta included) or sequence (the n-th request gets the n-th answer).
    #[arg(long = "match", value_enum, default_value = "method-params", value_name = "RULE")]
    pub rule: RuleArg,

    /// Once the recorded answers to a request are used up: repeat the last one, or answer with an error.
    #[arg(long, value_enum, default_value = "repeat", value_name = "WHAT")]
    pub exhausted: ExhaustedArg,

    /// fast: answer at once; recorded: wait the recorded gaps (divided by --speed).
    #[arg(long, value_enum, default_value = "fast")]
    pub timing: TimingArg,

    /// With --timing recorded: 2 plays twice as fast, 0.5 half as fast.
    #[arg(long, value_name = "X", default_value_t = 1.0, value_parser = parse_speed)]
    pub speed: f64,

    /// Serve only these methods (comma-separated, e.g. tools/list,tools/call) or
    /// the exchanges matching a display filter ('method == "tools/call"'). The
    /// handshake is always served.
    #[arg(long, value_name = "METHODS|FILTER")]
    pub only: Option<String>,

    /// The session to serve (1-based) in a capture of several; default: the
    /// last one with a server answer.
    #[arg(long, value_name = "N")]
    pub session: Option<usize>,

    /// How long the mock waits for the client's answer to a recorded server →
    /// client request (roots/list, sampling, elicitation, ping) before going on.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub reply_timeout_ms: u64,

    /// Serve over Streamable HTTP on this address instead of stdio (e.g.
    /// 127.0.0.1:8931; port 0 picks a free one, printed on stderr). Loopback
    /// only unless --listen-any.
    #[arg(long, value_name = "ADDR", conflicts_with = "check")]
    pub listen: Option<String>,

    /// With --listen: allow an address other machines can reach (0.0.0.0:PORT);
    /// any Host is then answered (a non-local Origin is still refused).
    #[arg(long, requires = "listen")]
    pub listen_any: bool,

    /// With --listen: protect the endpoint with OAuth as a real server would
    /// (401 until a token comes), served by the mock's own authorization
    /// server (metadata, registration, authorization approved at once,
    /// tokens), so a client's whole sign-in runs offline.
    #[arg(long, requires = "listen")]
    pub auth: bool,

    /// Record on miss: a request without a recorded answer goes to this real
    /// server (Streamable HTTP) instead of getting an error.
    #[arg(long, value_name = "URL", conflicts_with_all = ["check", "fallback_command"])]
    pub fallback: Option<String>,

    /// Where the fallback server's session is recorded (default CAPTURE.fallback.jsonl).
    #[arg(long, value_name = "FILE")]
    pub fallback_capture: Option<PathBuf>,

    /// Record on miss, a server to start: after `--`, its command and arguments.
    #[arg(last = true, value_name = "FALLBACK COMMAND", conflicts_with_all = ["check"])]
    pub fallback_command: Vec<String>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleArg {
    MethodParams,
    Strict,
    Sequence,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExhaustedArg {
    Repeat,
    Error,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimingArg {
    Fast,
    Recorded,
}

fn parse_speed(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!("{s:?} is not a speed: give a number above 0, e.g. 2 or 0.5")),
    }
}

/// Method names, when `--only` is a list of them rather than a filter.
fn method_list(only: &str) -> Option<HashSet<String>> {
    let is_name = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '_' | '-' | '.' | '$'))
    };
    let names: Vec<&str> = only.split(',').map(str::trim).collect();
    names
        .iter()
        .all(|n| is_name(n))
        .then(|| names.into_iter().map(String::from).collect())
}

/// Exit status: 0 when the client closed its side (or stdout closed), 1 for
/// `--check` with nothing servable, 4 for a capture that cannot be served, 64
/// for a wrong command line.
pub fn run(args: MockArgs) -> ExitCode {
    let loaded = match replay::load(&args.capture, args.session) {
        Ok(l) => l,
        Err(e) => {
            crate::errln!("mcpscope mock: {}: {}", args.capture.display(), ErrorChain(&e));
            let code = match e {
                LoadError::NoSuchSession { .. } => super::exit::USAGE,
                _ => super::exit::IO,
            };
            return ExitCode::from(code);
        }
    };
    for w in &loaded.warnings {
        crate::errln!("mcpscope mock: {}: skipped {w}", args.capture.display());
    }
    let mut index = loaded.index;
    if let Some(only) = &args.only {
        if let Some(methods) = method_list(only) {
            index.retain(|e| methods.contains(&e.method));
        } else {
            let filter = match super::filter::parse_or_report("mock", only) {
                Ok(f) => f,
                Err(code) => return code,
            };
            let seqs = match mcpscope_core::filter::records::matching_seqs(&args.capture, &filter) {
                Ok(s) => s,
                Err(e) => {
                    crate::errln!("mcpscope mock: {}: {}", args.capture.display(), ErrorChain(&e));
                    return ExitCode::from(super::exit::IO);
                }
            };
            index.retain(|e: &Exchange| seqs.exchanges.contains(&e.seq));
        }
    }
    let where_ = format!(
        "{}, session {} of {} ({} era{})",
        args.capture.display(),
        loaded.session,
        loaded.sessions,
        index.era(),
        if loaded.header.command_line.is_empty() {
            String::new()
        } else {
            format!(", recorded from {}", loaded.header.command_line)
        }
    );
    if args.check {
        return check(&index, &where_);
    }
    if index.servable_count() == 0 {
        crate::errln!("mcpscope mock: {where_}: nothing can be served (mcpscope mock --check says why)");
        return ExitCode::from(super::exit::IO);
    }
    let options = MockOptions {
        rule: match args.rule {
            RuleArg::MethodParams => Rule::MethodParams,
            RuleArg::Strict => Rule::Strict,
            RuleArg::Sequence => Rule::Sequence,
        },
        exhausted: match args.exhausted {
            ExhaustedArg::Repeat => Exhausted::Repeat,
            ExhaustedArg::Error => Exhausted::Error,
        },
        timing: match args.timing {
            TimingArg::Fast => Timing::Fast,
            TimingArg::Recorded => Timing::Recorded,
        },
        speed: args.speed,
        reply_timeout: Duration::from_millis(args.reply_timeout_ms),
        fallback: args.fallback.is_some() || !args.fallback_command.is_empty(),
    };
    // The fallback speaks the recording's era, as the client does to the mock.
    let era = if index.era() == "modern" {
        EraChoice::Modern
    } else {
        EraChoice::Legacy
    };
    let fallback = match fallback_client(&args, era) {
        Ok(f) => f,
        Err(e) => {
            crate::errln!("mcpscope mock: --fallback: {e}");
            return ExitCode::from(super::exit::UNREACHABLE);
        }
    };
    if let Some(listen) = &args.listen {
        let path = http::endpoint_path(loaded.header.url.as_deref());
        return serve_http(&args, listen, path, index, options, &where_, fallback);
    }
    crate::errln!(
        "mcpscope mock: serving {} exchange(s) from {where_} on stdio",
        index.servable_count()
    );
    serve_stdio(Mock::new(index, options), fallback)
}

/// The real server misses go to, handshaken, its session recorded.
fn fallback_client(args: &MockArgs, era: EraChoice) -> Result<Option<(Client, PathBuf)>, String> {
    use mcpscope_core::transport::target::{HttpTarget, Target};
    let target = match (&args.fallback, args.fallback_command.split_first()) {
        (Some(url), _) => Target::Http(HttpTarget::streamable(url.clone())),
        (None, Some((program, rest))) => Target::Stdio(ServerSpec::new(program.clone(), rest.iter().cloned())),
        (None, None) => return Ok(None),
    };
    let capture = args.fallback_capture.clone().unwrap_or_else(|| {
        let mut name = args.capture.as_os_str().to_owned();
        name.push(".fallback.jsonl");
        PathBuf::from(name)
    });
    let options = SessionOptions {
        request_timeout: Some(FALLBACK_TIMEOUT),
        capture: Some(capture.clone()),
        ..SessionOptions::new(mcpscope_core::record::capture::open_log)
    };
    let mut client = Client::connect(target, options, Box::new(|_| {}));
    client
        .wait_started(Duration::from_secs(10))
        .map_err(|e| e.to_string())?;
    client
        .establish(era, &HandshakeOptions::default(), FALLBACK_TIMEOUT)
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    crate::errln!(
        "mcpscope mock: requests without a recorded answer go to the fallback server; recorded in {}",
        capture.display()
    );
    Ok(Some((client, capture)))
}

/// How long the fallback server may take to answer.
const FALLBACK_TIMEOUT: Duration = Duration::from_secs(30);

/// The fallback server's answer to a request the recording has none for,
/// as a line for the client under its own `id`.
fn forward(client: &mut Client, method: &str, params: Option<Value>, id: &[u8]) -> Vec<u8> {
    let client_id: Value = serde_json::from_slice(id).unwrap_or(Value::Null);
    // The client's envelope named its session with the mock; the fallback's own is added.
    let params = params.map(|mut p| {
        if let Some(o) = p.as_object_mut() {
            o.remove("_meta");
        }
        p
    });
    let answer = match client.request(method, params, FALLBACK_TIMEOUT) {
        Ok(r) => match r.frame.json() {
            Some(mut v) if v.is_object() => {
                v["id"] = client_id;
                v
            }
            _ => json!({"jsonrpc": "2.0", "id": client_id,
                        "error": {"code": -32603, "message": "mcpscope mock: the fallback server's answer is not JSON"}}),
        },
        Err(e) => return forward_refused(id, &format!("the fallback server: {e}")),
    };
    answer.to_string().into_bytes()
}

/// The error a client gets when its request could not go to the fallback server.
fn forward_refused(id: &[u8], why: &str) -> Vec<u8> {
    let client_id: Value = serde_json::from_slice(id).unwrap_or(Value::Null);
    json!({"jsonrpc": "2.0", "id": client_id, "error": {"code": -32603, "message": format!("mcpscope mock: {why}")}})
        .to_string()
        .into_bytes()
}

/// `--listen`: Streamable HTTP until mcpscope is stopped. A listen address
/// that is refused (not loopback without --listen-any, a port in use) is a
/// command line to change: 64, before anything is served.
fn serve_http(
    args: &MockArgs,
    listen: &str,
    path: String,
    index: replay::index::Index,
    options: MockOptions,
    where_: &str,
    fallback: Option<(Client, PathBuf)>,
) -> ExitCode {
    let http_options = match http::HttpOptions::new(listen, args.listen_any, path) {
        Ok(o) => http::HttpOptions { auth: args.auth, ..o },
        Err(e) => {
            crate::errln!("mcpscope mock: {}", ErrorChain(&e));
            return ExitCode::from(super::exit::USAGE);
        }
    };
    let servable = index.servable_count();
    let log: http::Log = std::sync::Arc::new(|t: &str| crate::errln!("mcpscope mock: {t}"));
    // Every session's misses go to one fallback session, one at a time, recorded in one capture.
    let (fallback, recorded_in) = match fallback {
        Some((client, capture)) => (
            Some(std::sync::Arc::new(std::sync::Mutex::new(Some(client)))),
            Some(capture),
        ),
        None => (None, None),
    };
    let forwarder = fallback.clone().map(|client| -> http::Fallback {
        std::sync::Arc::new(move |method, params, id| {
            let mut client = client.lock().unwrap_or_else(|p| p.into_inner());
            match client.as_mut() {
                Some(c) => forward(c, method, params, id),
                None => forward_refused(id, "the fallback server was closed (mcpscope mock is stopping)"),
            }
        })
    });
    let server = match http::MockServer::bind(http_options, index, options, log, forwarder) {
        Ok(s) => s,
        Err(e) => {
            crate::errln!("mcpscope mock: {}", ErrorChain(&e));
            return ExitCode::from(super::exit::USAGE);
        }
    };
    crate::errln!("mcpscope mock: serving {servable} exchange(s) from {where_} over Streamable HTTP");
    if let Some(issuer) = server.issuer() {
        crate::errln!(
            "mcpscope mock: --auth: the endpoint wants a token from the mock's own authorization server, {issuer} (sign-ins are approved at once)"
        );
    }
    // Clients (and scripts) wait for this line: the port is open once it is printed.
    crate::errln!("mcpscope mock: serving {} at {}", args.capture.display(), server.url());
    let served = server.run_until_stopped();
    let closed = fallback.and_then(|c| c.lock().unwrap_or_else(|p| p.into_inner()).take());
    if let Some(client) = closed {
        client.close();
    }
    match served {
        Ok(s) => {
            crate::errln!(
                "mcpscope mock: done: {} request(s) served, {} not served, {} notification(s) from clients",
                s.served,
                s.unmatched,
                s.notifications
            );
            if let Some(capture) = recorded_in {
                crate::errln!(
                    "mcpscope mock: {} request(s) went to the fallback server, recorded in {}",
                    s.forwarded,
                    capture.display()
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            crate::errln!("mcpscope mock: the listener failed: {e}");
            ExitCode::from(super::exit::IO)
        }
    }
}

fn check(index: &replay::index::Index, where_: &str) -> ExitCode {
    let c = Check::of(index);
    crate::outln!("{where_}");
    crate::outln!("can be served: {} exchange(s)", c.servable_total());
    for (method, n) in &c.servable {
        crate::outln!("  {method:<32} {n}");
    }
    if !c.server_frames.is_empty() {
        let total: usize = c.server_frames.values().sum();
        crate::outln!("server-initiated frames replayed with them: {total}");
        for (method, n) in &c.server_frames {
            crate::outln!("  {method:<32} {n}");
        }
    }
    if !c.not_servable.is_empty() {
        crate::outln!("cannot be served: {}", c.not_servable.len());
        for (seq, what, why) in &c.not_servable {
            crate::outln!("  seq {seq:<6} {what}: {why}");
        }
    }
    if c.servable_total() > 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(super::exit::FAILED)
    }
}

/// Longest line read from the client; a longer one is answered with a parse
/// error instead of growing memory without bound.
const MAX_CLIENT_LINE: usize = 64 << 20;

enum Input {
    Line(Vec<u8>),
    TooLong(usize),
    Closed,
}

fn serve_stdio(mut mock: Mock, mut fallback: Option<(Client, PathBuf)>) -> ExitCode {
    let (tx, rx) = sync_channel::<Input>(64);
    // A blocking read on its own thread: the main loop also waits on timers.
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut input = stdin.lock();
        loop {
            let mut line = Vec::new();
            let read = (&mut input)
                .take(MAX_CLIENT_LINE as u64 + 1)
                .read_until(b'\n', &mut line);
            let msg = match read {
                Ok(0) | Err(_) => Input::Closed,
                Ok(_) if line.len() > MAX_CLIENT_LINE && line.last() != Some(&b'\n') => {
                    // Skip the rest of the line so that the next one is read whole.
                    let mut skipped = line.len();
                    let mut sink = Vec::new();
                    while let Ok(n @ 1..) = (&mut input).take(1 << 20).read_until(b'\n', &mut sink) {
                        skipped += n;
                        if sink.last() == Some(&b'\n') {
                            break;
                        }
                        sink.clear();
                    }
                    Input::TooLong(skipped)
                }
                Ok(_) => {
                    if line.last() == Some(&b'\n') {
                        line.pop();
                    }
                    Input::Line(line)
                }
            };
            let closed = matches!(msg, Input::Closed);
            if tx.send(msg).is_err() || closed {
                return;
            }
        }
    });
    let start = Instant::now();
    let mut stdout = std::io::stdout().lock();
    let mut closed = false;
    loop {
        if !flush(&mut mock, &mut stdout, fallback.as_mut().map(|(c, _)| c)) {
            // The client stopped reading: nobody is left to serve.
            crate::errln!("mcpscope mock: stdout closed, stopping");
            break;
        }
        let deadline = mock.deadline();
        if closed {
            // What was scheduled before the client closed still goes out.
            let Some(d) = deadline else { break };
            std::thread::sleep(d.saturating_sub(start.elapsed()));
            mock.on_time(start.elapsed());
            continue;
        }
        let msg = match deadline {
            Some(d) => match rx.recv_timeout(d.saturating_sub(start.elapsed())) {
                Ok(m) => m,
                Err(RecvTimeoutError::Timeout) => {
                    mock.on_time(start.elapsed());
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => Input::Closed,
            },
            None => rx.recv().unwrap_or(Input::Closed),
        };
        match msg {
            Input::Line(l) => mock.on_line(&l, start.elapsed()),
            Input::TooLong(n) => {
                crate::errln!("mcpscope mock: the client sent a line of {n} bytes, over {MAX_CLIENT_LINE}: not read");
                mock.on_line(b"\x00line too long", start.elapsed());
            }
            Input::Closed => {
                closed = true;
                mock.on_close(start.elapsed());
            }
        }
    }
    let s = &mock.stats;
    crate::errln!(
        "mcpscope mock: done: {} request(s) served, {} not served, {} notification(s) from the client",
        s.served,
        s.unmatched,
        s.notifications
    );
    if let Some((client, capture)) = fallback {
        client.close();
        crate::errln!(
            "mcpscope mock: {} request(s) went to the fallback server, recorded in {}",
            s.forwarded,
            capture.display()
        );
    }
    ExitCode::SUCCESS
}

/// Writes what the mock has to say: protocol lines on stdout (flushed line
/// by line: the client waits on each), logs on stderr. False once stdout is closed.
fn flush(mock: &mut Mock, stdout: &mut impl Write, mut fallback: Option<&mut Client>) -> bool {
    let mut ok = true;
    while let Some(o) = mock.next_output() {
        if let Output::Forward { method, params, id } = &o
            && let Some(client) = fallback.as_deref_mut()
        {
            let mut l = forward(client, method, params.clone(), id);
            if ok {
                l.push(b'\n');
                ok = stdout.write_all(&l).and_then(|_| stdout.flush()).is_ok();
            }
            continue;
        }
        match o {
            Output::Line(mut l) => {
                if ok {
                    l.push(b'\n');
                    ok = stdout.write_all(&l).and_then(|_| stdout.flush()).is_ok();
                }
            }
            Output::Log(t) => crate::errln!("mcpscope mock: {t}"),
            // Over stdio an unanswered request stays unanswered, as recorded,
            // and there is no SSE to choose. (Forward is handled above.)
            Output::Unanswered | Output::Stream | Output::Forward { .. } => {}
        }
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_tells_method_lists_from_filters() {
        let m = method_list("tools/list, tools/call").unwrap();
        assert!(m.contains("tools/list") && m.contains("tools/call"));
        assert!(method_list(r#"method == "tools/call""#).is_none());
        assert!(parse_speed("0").is_err() && parse_speed("nan").is_err() && parse_speed("2").is_ok());
    }
}
