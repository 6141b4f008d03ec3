//! One test file run in one session: its variables filled in and checked,
//! the server started (or `--against`'s mock of a recording), every `call:`
//! checked against the tools the server lists before any step runs, then
//! the steps in order (captures feeding later steps), the contracts over
//! the session, the evals (a model in the loop over the same session). The
//! CLI and the app drive it alike; what happens is told to a [`Watch`] as
//! it happens, and the whole comes back as a [`FileReport`].

use super::check::Exchange;
use super::evals::run_eval;
use super::file::{Action, Assertion, Server, Step, Target as FileTarget, TestFile};
use super::report::{Check, EvalResult, FileReport, StepResult, Verdict};
use super::snapshot;
use super::vars::{self, Lookup, Reference, Vars};
use super::yaml::Pos;
use crate::client::{Client, ClientError};
use crate::driver::RequestOptions;
use crate::filter::Filter;
use crate::protocol::era::EraChoice;
use crate::protocol::handshake::HandshakeOptions;
use crate::transport::event::Event;
use crate::transport::process::ServerSpec;
use crate::transport::session::SessionOptions;
use crate::transport::target::{HttpTarget, Target};
use crate::wire::frame::{Direction, Frame};
use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How a file is run.
pub struct RunOptions {
    /// The environment whose variables are used (`--env NAME`).
    pub env: Option<String>,
    /// Only the steps and evals whose name holds this (`*` matches anything).
    pub only: Option<String>,
    pub update_snapshots: bool,
    /// Each request's timeout.
    pub timeout: Duration,
    /// Run against this server instead of the file's (`--against`: `mock` of a recording).
    pub against: Option<Target>,
    /// Where to keep the session's capture when something failed.
    pub keep_capture: Option<PathBuf>,
    /// Keep it when everything passed too (the app, where any step's frame
    /// is a click away).
    pub keep_passing: bool,
    /// Set to stop after the step in flight.
    pub stop: Arc<AtomicBool>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            env: None,
            only: None,
            update_snapshots: false,
            timeout: Duration::from_secs(30),
            against: None,
            keep_capture: None,
            keep_passing: false,
            stop: Arc::new(AtomicBool::new(false)),
        }
    }
}

/// Told as the run goes (the CLI's progress, the app's verdicts).
pub trait Watch {
    fn step(&mut self, _result: &StepResult) {}
    fn contract(&mut self, _check: &Check) {}
    fn eval(&mut self, _result: &EvalResult) {}
    /// Every event of the session, as it happens.
    fn event(&mut self, _event: &Event) {}
}

/// A watcher that watches nothing.
pub struct Quiet;
impl Watch for Quiet {}

/// Whether `name` is picked by `--only`.
pub fn picked(only: Option<&str>, name: &str) -> bool {
    let Some(pattern) = only else { return true };
    let (p, n) = (pattern.to_lowercase(), name.to_lowercase());
    if !p.contains('*') {
        return n.contains(&p);
    }
    // A glob: the pieces between stars, in order, anchored at the ends.
    let pieces: Vec<&str> = p.split('*').collect();
    let mut rest = n.as_str();
    for (i, piece) in pieces.iter().enumerate() {
        if i == 0 {
            let Some(r) = rest.strip_prefix(piece) else {
                return false;
            };
            rest = r;
        } else if i == pieces.len() - 1 {
            return rest.ends_with(piece);
        } else {
            let Some(at) = rest.find(piece) else { return false };
            rest = &rest[at + piece.len()..];
        }
    }
    true
}

/// The variables a file's run starts with: its own, then the chosen
/// environment's; every `{{…}}` a step uses checked to have a value by the
/// time it runs (a capture of an earlier step counts), and every
/// environment variable and secret looked up. Each problem with its place.
pub fn prepare(file: &TestFile, options: &RunOptions, lookup: Lookup) -> Result<Vars, Vec<String>> {
    let mut vars = Vars::new(lookup);
    let mut problems = Vec::new();
    for (k, v) in &file.variables {
        vars.set(k, Json::String(v.clone()));
    }
    if let Some(env) = &options.env {
        match file.environments.iter().find(|(n, _)| n == env) {
            Some((_, values)) => values.iter().for_each(|(k, v)| vars.set(k, Json::String(v.clone()))),
            None => {
                let known: Vec<&str> = file.environments.iter().map(|(n, _)| n.as_str()).collect();
                problems.push(format!(
                    "no environment {env:?} in the file ({})",
                    if known.is_empty() {
                        "it has none: `environments:`".to_owned()
                    } else {
                        format!("it has {}", known.join(", "))
                    }
                ));
            }
        }
    }
    let mut known: Vec<String> = vars.names().map(str::to_owned).collect();
    let mut check = |at: Pos, what: &str, refs: Vec<Reference>, known: &[String], vars: &mut Vars| {
        for r in refs {
            let text = match &r {
                Reference::Var(n) if known.iter().any(|k| k == n) => continue,
                Reference::Var(n) => format!("{{{{{n}}}}}"),
                Reference::Env(n) => format!("{{{{env:{n}}}}}"),
                Reference::Secret(n) => format!("{{{{secret:{n}}}}}"),
            };
            if let Err(e) = vars.fill(&text) {
                problems.push(format!("{at}: {what}: {e}"));
            }
        }
    };
    if let Some(server) = server_of(file) {
        check(
            server.at,
            "the server",
            target_references(&server.target),
            &known,
            &mut vars,
        );
    }
    for step in &file.steps {
        let mut refs = action_references(&step.action);
        refs.extend(step.asserts.iter().flat_map(|a| vars::references(&a.text)));
        check(step.at, &step.name, refs, &known, &mut vars);
        known.extend(step.capture.iter().map(|(n, _, _)| n.clone()));
    }
    for e in &file.evals {
        let mut refs = vars::references(&e.prompt);
        if let Some(b) = &e.base_url {
            refs.extend(vars::references(b));
        }
        check(e.at, &e.name, refs, &known, &mut vars);
    }
    if problems.is_empty() { Ok(vars) } else { Err(problems) }
}

fn server_of(file: &TestFile) -> Option<&Server> {
    let name = file.server.as_deref()?;
    file.servers.iter().find(|s| s.name == name)
}

fn target_references(t: &FileTarget) -> Vec<Reference> {
    let mut texts: Vec<&str> = Vec::new();
    match t {
        FileTarget::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            texts.push(command);
            texts.extend(args.iter().map(String::as_str));
            texts.extend(env.iter().map(|(_, v)| v.as_str()));
            texts.extend(cwd.as_deref());
        }
        FileTarget::Http { url, headers } => {
            texts.push(url);
            texts.extend(headers.iter().map(|(_, v)| v.as_str()));
        }
    }
    texts.into_iter().flat_map(vars::references).collect()
}

fn action_references(a: &Action) -> Vec<Reference> {
    let mut out = Vec::new();
    match a {
        Action::Call { tool, arguments } => {
            out.extend(vars::references(tool));
            vars::json_references(arguments, &mut out);
        }
        Action::Request { method, params } | Action::Notify { method, params } => {
            out.extend(vars::references(method));
            if let Some(p) = params {
                vars::json_references(p, &mut out);
            }
        }
        Action::Read { uri } => out.extend(vars::references(uri)),
        Action::Prompt { name, arguments } => {
            out.extend(vars::references(name));
            vars::json_references(arguments, &mut out);
        }
    }
    out
}

/// The file's server with its variables filled in; relative paths (the
/// command, `cwd`) from the test file's folder.
fn target(server: &Server, vars: &mut Vars, dir: &Path) -> Result<Target, String> {
    let mut fill = |t: &str| vars.fill_text(t).map_err(|e| e.to_string());
    match &server.target {
        FileTarget::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            // A command given as a path is from the test file's folder; a
            // bare name is looked up in PATH.
            let program = fill(command)?;
            let program = if program.contains('/') || program.contains(std::path::MAIN_SEPARATOR) {
                dir.join(&program).display().to_string()
            } else {
                program
            };
            let mut spec = ServerSpec::new(program, args.iter().map(|a| fill(a)).collect::<Result<Vec<_>, _>>()?);
            spec.env = env
                .iter()
                .map(|(k, v)| Ok((k.clone(), fill(v)?)))
                .collect::<Result<_, String>>()?;
            spec.cwd = Some(match cwd {
                Some(c) => dir.join(fill(c)?),
                None => dir.to_owned(),
            });
            Ok(Target::Stdio(spec))
        }
        FileTarget::Http { url, headers } => {
            let mut t = HttpTarget::streamable(fill(url)?);
            for (k, v) in headers {
                t = t.with_header(k.clone(), fill(v)?);
            }
            Ok(Target::Http(t))
        }
    }
}

fn era_choice(server: Option<&Server>) -> EraChoice {
    server
        .and_then(|s| s.era.as_deref())
        .and_then(|e| e.parse().ok())
        .unwrap_or(EraChoice::Legacy)
}

/// What a step sends, filled in: (method, params, is a notification).
fn message(action: &Action, vars: &mut Vars) -> Result<(String, Option<Json>, bool), vars::VarError> {
    Ok(match action {
        Action::Call { tool, arguments } => (
            "tools/call".into(),
            Some(params([
                ("name", Json::String(vars.fill_text(tool)?)),
                ("arguments", vars.fill_json(arguments)?),
            ])),
            false,
        ),
        Action::Request { method, params } => (
            vars.fill_text(method)?,
            params.as_ref().map(|p| vars.fill_json(p)).transpose()?,
            false,
        ),
        Action::Notify { method, params } => (
            vars.fill_text(method)?,
            params.as_ref().map(|p| vars.fill_json(p)).transpose()?,
            true,
        ),
        Action::Read { uri } => (
            "resources/read".into(),
            Some(params([("uri", Json::String(vars.fill_text(uri)?))])),
            false,
        ),
        Action::Prompt { name, arguments } => (
            "prompts/get".into(),
            Some(params([
                ("name", Json::String(vars.fill_text(name)?)),
                ("arguments", vars.fill_json(arguments)?),
            ])),
            false,
        ),
    })
}

/// A request's params from values already made (`json!` would serialize
/// each of them into a copy).
fn params<const N: usize>(members: [(&str, Json); N]) -> Json {
    Json::Object(members.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
}

/// The value at a path written as in an assertion (`result.structuredContent.id`,
/// `result.content[0].text`), from the answer.
pub fn value_at(doc: &Json, path: &str) -> Option<Json> {
    let mut v = doc;
    for part in path.split('.') {
        let (key, mut rest) = match part.find('[') {
            Some(at) => (&part[..at], &part[at..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            v = v.get(key)?;
        }
        while let Some(end) = rest.find(']') {
            let i: i64 = rest[1..end].trim().parse().ok()?;
            let a = v.as_array()?;
            let at = if i < 0 {
                a.len().checked_sub(i.unsigned_abs() as usize)?
            } else {
                i as usize
            };
            v = a.get(at)?;
            rest = &rest[end + 1..];
        }
    }
    Some(v.clone())
}

/// The session's events as the observer saw them.
type Seen = Arc<Mutex<Vec<Event>>>;

/// The frame numbered `seq`, or (`None`) the last one sent (a
/// notification's): borrowed from the events, which a long file holds many of.
fn sent_frame(events: &[Event], seq: Option<u64>) -> Option<&Frame> {
    events.iter().rev().find_map(|e| match e {
        Event::Frame(f) if seq.map_or(f.direction == Direction::Out, |s| f.seq == s) => Some(f),
        _ => None,
    })
}

/// Runs a test file (read and checked already) from `path`.
pub fn run_file(
    path: &Path,
    file: &TestFile,
    options: &RunOptions,
    lookup: Lookup,
    watch: &mut dyn Watch,
) -> FileReport {
    let started = Instant::now();
    // Absolute: the server runs in it, and paths in the file are from it.
    let dir = path.parent().map(Path::to_owned).unwrap_or_default();
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    let mut report = FileReport {
        path: path.to_owned(),
        name: file.name.clone().unwrap_or_else(|| {
            path.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        }),
        ..FileReport::default()
    };
    let mut vars = match prepare(file, options, lookup) {
        Ok(v) => v,
        Err(problems) => {
            report.problems = problems;
            return report;
        }
    };
    let server = server_of(file);
    let target = match (&options.against, server) {
        (Some(t), _) => Ok(t.clone()),
        (None, Some(s)) => target(s, &mut vars, &dir),
        (None, None) => Err("the file names no server".to_owned()),
    };
    let target = match target {
        Ok(t) => t,
        Err(e) => {
            report.error = Some(e);
            return report;
        }
    };
    let seen: Seen = Arc::default();
    let sink = seen.clone();
    // Events reach the watcher after each request returns (the observer
    // runs inside the client, where the watcher cannot be borrowed).
    // Steps go one after another, each waited on: over HTTP the session
    // runs on this thread, so a fast server's answer is not handed between threads.
    let session_options = SessionOptions {
        request_timeout: Some(options.timeout),
        owner_thread: true,
        ..SessionOptions::new(crate::record::capture::open_log)
    };
    let mut client = Client::connect(
        target.clone(),
        session_options,
        Box::new(move |ev: Event| {
            sink.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(ev);
        }),
    );
    // The session's events are kept to the end only for what reads them
    // then: a contract over the session, or its capture. Otherwise each
    // step's go once the watcher has them (a long file's memory stays that
    // of a step, and the next step's allocations reuse it).
    let keep_events = file.contracts.stated() || options.keep_capture.is_some();
    let mut told = 0;
    let mut tell = |watch: &mut dyn Watch| {
        let mut events = seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for e in &events[told..] {
            watch.event(e);
        }
        if keep_events {
            told = events.len();
        } else {
            events.clear();
            told = 0;
        }
    };
    let ran = run_session(
        &mut client,
        file,
        options,
        &mut vars,
        &dir,
        &mut report,
        watch,
        &mut tell,
        &seen,
        &target,
    );
    if let Err(e) = ran {
        report.error = Some(vars.mask(&e));
    }
    client.close();
    tell(watch);
    report.duration = started.elapsed();
    if (!report.passed() || options.keep_passing)
        && let Some(to) = &options.keep_capture
    {
        let events = seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match keep_capture(to, &target, &events, &vars) {
            Ok(()) => report.capture = Some(to.clone()),
            Err(e) => {
                report
                    .error
                    .get_or_insert(format!("the capture could not be kept: {e}"));
            }
        }
    }
    // Kept to the end, a long file's events are most of its memory, in many
    // small pieces: freed on a thread of their own, not while the report
    // waits (a thousand steps' took a millisecond and more).
    // (Should no thread start, they are freed here.)
    let _ = std::thread::Builder::new()
        .name("mcpscope-free".into())
        .spawn(move || drop(seen));
    report
}

#[allow(clippy::too_many_arguments)]
fn run_session(
    client: &mut Client,
    file: &TestFile,
    options: &RunOptions,
    vars: &mut Vars,
    dir: &Path,
    report: &mut FileReport,
    watch: &mut dyn Watch,
    tell: &mut dyn FnMut(&mut dyn Watch),
    seen: &Seen,
    target: &Target,
) -> Result<(), String> {
    let timeout = options.timeout;
    let session_started = Instant::now();
    client
        .wait_started(Duration::from_secs(10))
        .map_err(|e| e.to_string())?;
    let choice = era_choice(server_of(file));
    let hs = HandshakeOptions {
        protocol_version: match choice {
            EraChoice::Modern => crate::protocol::era::DEFAULT_MODERN_VERSION,
            _ => crate::protocol::handshake::DEFAULT_VERSION,
        }
        .to_owned(),
        ..HandshakeOptions::default()
    };
    match client.establish(choice, &hs, timeout) {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => return Err(format!("the handshake failed: {e}")),
        Err(e) => return Err(format!("the server could not be reached: {e}")),
    }
    let tools = match client.list_all("tools/list", "tools", timeout) {
        Ok(Ok(t)) => Some(t),
        Ok(Err(_)) => None,
        Err(e) => return Err(format!("tools/list: {e}")),
    };
    // A tool the server does not have is the file's mistake: said before any step runs.
    if let Some(tools) = &tools {
        let names: Vec<&str> = tools.iter().filter_map(|t| t.get("name")?.as_str()).collect();
        for step in &file.steps {
            if let Action::Call { tool, .. } = &step.action
                && !tool.contains("{{")
                && !names.contains(&tool.as_str())
            {
                let near = crate::filter::error::nearest(tool, names.iter().copied())
                    .map(|n| format!(" (did you mean {n:?}?)"))
                    .unwrap_or_default();
                report.problems.push(format!(
                    "{}: {}: the server has no tool {tool:?}{near}",
                    step.at, step.name
                ));
            }
        }
        if !report.problems.is_empty() {
            return Ok(());
        }
    }
    let output_schema = |name: &str| {
        tools
            .as_ref()?
            .iter()
            .find(|t| t.get("name").and_then(Json::as_str) == Some(name))?
            .get("outputSchema")
            .cloned()
    };
    let mut closed = false;
    for step in &file.steps {
        let result = if !picked(options.only.as_deref(), &step.name) {
            skipped(step, "left out by --only")
        } else if options.stop.load(Ordering::Relaxed) {
            skipped(step, "stopped")
        } else if closed {
            errored(step, String::new(), "the session had ended".into())
        } else {
            let r = run_step(client, step, vars, dir, options, seen, &output_schema);
            closed = client.is_closed();
            r
        };
        tell(watch);
        watch.step(&result);
        report.steps.push(result);
    }
    let session_took = session_started.elapsed();
    // The contracts are about the steps' session, before any eval adds to it.
    let mut connect_again = |policy: &crate::protocol::mrtr::InputPolicy| {
        Client::connect(
            target.clone(),
            SessionOptions {
                request_timeout: Some(timeout),
                ..SessionOptions::new(crate::record::capture::open_log)
            },
            Box::new(|_: Event| {}),
        )
        .with_policy(policy.clone())
    };
    // The contracts are about the whole file's session: part of it proves nothing.
    let contracts = if options.only.is_some() && file.contracts.stated() {
        report
            .notes
            .push("contracts not checked: --only ran part of the file".to_owned());
        Vec::new()
    } else {
        // Read where they are (this session's observer is done adding to
        // them), not copied: a long file's events are most of its memory.
        let events = seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        super::contract::check(&file.contracts, &events, session_took, dir, timeout, &mut connect_again)
    };
    for c in contracts {
        let c = Check {
            saw: c.saw.iter().map(|s| vars.mask(s)).collect(),
            ..c
        };
        watch.contract(&c);
        report.contracts.push(c);
    }
    let tool_list = tools.unwrap_or_default();
    for eval in &file.evals {
        for model in &eval.models {
            let result = if !picked(options.only.as_deref(), &eval.name) || options.stop.load(Ordering::Relaxed) {
                EvalResult {
                    name: eval.name.clone(),
                    at: eval.at,
                    model: model.clone(),
                    runs: eval.runs,
                    passed: 0,
                    pass_rate: eval.pass_rate,
                    verdict: Verdict::Skipped,
                    failures: Vec::new(),
                    error: None,
                }
            } else {
                run_eval(client, eval, model, vars, dir, timeout, &tool_list)
            };
            tell(watch);
            watch.eval(&result);
            report.evals.push(result);
        }
    }
    Ok(())
}

fn skipped(step: &Step, why: &str) -> StepResult {
    StepResult {
        verdict: Verdict::Skipped,
        error: Some(why.into()),
        ..errored(step, String::new(), String::new())
    }
}

fn errored(step: &Step, method: String, why: String) -> StepResult {
    StepResult {
        name: step.name.clone(),
        at: step.at,
        verdict: Verdict::Error,
        checks: Vec::new(),
        error: Some(why),
        method,
        latency: None,
        request_seq: None,
        response_seq: None,
    }
}

fn run_step(
    client: &mut Client,
    step: &Step,
    vars: &mut Vars,
    dir: &Path,
    options: &RunOptions,
    seen: &Seen,
    output_schema: &dyn Fn(&str) -> Option<Json>,
) -> StepResult {
    let (method, params, notification) = match message(&step.action, vars) {
        Ok(m) => m,
        Err(e) => return errored(step, String::new(), e.to_string()),
    };
    let (request_seq, response) = if notification {
        client.notify(&method, params);
        // Whatever the notification caused has a moment to arrive.
        client.pump_for(Duration::from_millis(20));
        (None, None)
    } else {
        // Judged on its frames: the driver need not read the result for it.
        let frame_only = RequestOptions {
            frame_only: true,
            ..RequestOptions::default()
        };
        let r = match client.request_with(&method, params, options.timeout, frame_only) {
            Ok(r) => r,
            Err(e @ (ClientError::TimedOut { .. } | ClientError::Unreadable { .. } | ClientError::TooLong { .. })) => {
                return errored(step, method, vars.mask(&e.to_string()));
            }
            Err(e) => return errored(step, method, vars.mask(&format!("the session failed: {e}"))),
        };
        let Some(seq) = r.frame.link.as_ref().map(|l| l.request_seq) else {
            return errored(step, method, "the request's frame was not seen".into());
        };
        (Some(seq), Some(r.frame))
    };
    // Held while the step is judged: nothing is received meanwhile.
    let events = seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(request) = sent_frame(&events, request_seq) else {
        let why = if notification {
            "the notification was not sent"
        } else {
            "the request's frame was not seen"
        };
        return errored(step, method, why.into());
    };
    let exchange = Exchange {
        request,
        response: response.as_ref(),
    };
    let mut checks = Vec::new();
    for a in &step.asserts {
        let saw = match filled_assertion(a, vars) {
            Ok(filled) => exchange
                .check(filled.as_ref().unwrap_or(a))
                .err()
                .map(|saw| saw.iter().map(|s| vars.mask(s)).collect()),
            Err(why) => Some(vec![why]),
        };
        checks.push(Check::new(a.text.clone(), a.at, saw));
    }
    if step.output_schema {
        let tool = match &step.action {
            Action::Call { tool, .. } => vars.fill_text(tool).unwrap_or_default(),
            _ => String::new(),
        };
        let problem = exchange.output_schema_problem(output_schema(&tool).as_ref());
        checks.push(Check::new("output_schema", step.at, problem.map(|p| vec![p])));
    }
    // Read only for what needs the message itself (most steps' checks do not).
    let answer = (step.snapshot.is_some() || !step.capture.is_empty())
        .then(|| response.as_ref().and_then(Frame::json))
        .flatten();
    if let Some(snap) = &step.snapshot {
        let what = format!("snapshot {}", snap.name);
        let problem = match &answer {
            None => Some(vec!["no answer to compare".to_owned()]),
            Some(a) => match snapshot::check(dir, snap, &vars.mask_json(a), options.update_snapshots) {
                Ok(snapshot::Verdict::Same | snapshot::Verdict::Written(_) | snapshot::Verdict::Updated(_)) => None,
                Ok(snapshot::Verdict::Differs(path, d)) => {
                    let mut saw = vec![format!(
                        "{} differs (--update-snapshots takes this answer):",
                        path.display()
                    )];
                    saw.extend(d);
                    Some(saw)
                }
                Err(e) => Some(vec![e.to_string()]),
            },
        };
        checks.push(Check::new(what, step.at, problem));
    }
    for (var, path, at) in &step.capture {
        let value = answer.as_ref().and_then(|a| value_at(a, path));
        match value {
            Some(v) => vars.set(var, v),
            None => checks.push(Check::new(
                format!("capture {var} = {path}"),
                *at,
                Some(vec![format!("{path} is absent from the answer")]),
            )),
        }
    }
    let failed = checks.iter().any(|c| !c.passed);
    StepResult {
        name: step.name.clone(),
        at: step.at,
        verdict: if failed { Verdict::Failed } else { Verdict::Passed },
        checks,
        error: None,
        method,
        latency: response.as_ref().and_then(|r| r.link.as_ref()).map(|l| l.latency),
        request_seq: Some(request.seq),
        response_seq: response.as_ref().map(|r| r.seq),
    }
}

/// An assertion with `{{…}}` in it, filled in and parsed again (`None`:
/// it has none).
fn filled_assertion(a: &Assertion, vars: &mut Vars) -> Result<Option<Assertion>, String> {
    if !a.text.contains("{{") {
        return Ok(None);
    }
    let text = vars.fill_text(&a.text).map_err(|e| e.to_string())?;
    let filter =
        Filter::parse(&text).map_err(|e| format!("filled in, it is not a filter: {}", vars.mask(&e.summary())))?;
    Ok(Some(Assertion {
        text,
        at: a.at,
        filter: std::sync::Arc::new(filter),
    }))
}

/// Writes the session's capture with every secret masked.
fn keep_capture(to: &Path, target: &Target, events: &[Event], vars: &Vars) -> Result<(), String> {
    use crate::record::capture::{Header, Writer};
    let header = Header::for_target(target, "session");
    let _ = std::fs::remove_file(to);
    let mut w = Writer::open(to, &header).map_err(|e| crate::text::ErrorChain(&e).to_string())?;
    for e in events {
        w.write(e).map_err(|e| e.to_string())?;
    }
    w.flush().map_err(|e| e.to_string())?;
    drop(w);
    if vars.has_secrets() {
        let text = std::fs::read_to_string(to).map_err(|e| e.to_string())?;
        std::fs::write(to, vars.mask(&text)).map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_takes_a_part_of_the_name_or_a_glob() {
        assert!(picked(None, "anything"));
        assert!(picked(Some("echo"), "Call echo twice"));
        assert!(!picked(Some("echo"), "add"));
        assert!(picked(Some("call *"), "call echo"));
        assert!(picked(Some("*echo"), "call echo"));
        assert!(!picked(Some("*echo"), "echo first"));
        assert!(picked(Some("c*l*o"), "call echo"));
    }

    #[test]
    fn values_are_captured_by_path() {
        let doc = json!({"result": {"structuredContent": {"id": 7}, "content": [{"text": "a"}, {"text": "b"}]}});
        assert_eq!(value_at(&doc, "result.structuredContent.id"), Some(json!(7)));
        assert_eq!(value_at(&doc, "result.content[1].text"), Some(json!("b")));
        assert_eq!(value_at(&doc, "result.content[-1].text"), Some(json!("b")));
        assert_eq!(value_at(&doc, "result.missing"), None);
    }
}
