//! `mcpscope call`: handshake, one request, the result as JSON on stdout.

use super::TargetArgs;
use super::watch::{self, Watch};
use super::{exit, trace};
use clap::Args;
use mcpscope_core::client::{Client, ClientError};
use mcpscope_core::driver::Outcome;
use mcpscope_core::protocol::era::{Era, EraChoice};
use mcpscope_core::protocol::handshake::{self, HandshakeOptions};
use mcpscope_core::protocol::methods;
use mcpscope_core::protocol::mrtr::{ElicitAnswer, InputPolicy};
use mcpscope_core::schema::typed_arg;
use mcpscope_core::transport::event::Event;
use mcpscope_core::transport::session::SessionOptions;
use serde_json::{Map, Value, json};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct CallArgs {
    /// The JSON-RPC method, e.g. tools/list (defaults to tools/call with
    /// --tool-name, resources/read with --uri, prompts/get with --prompt-name).
    #[arg(long, required_unless_present_any = ["tool_name", "uri", "prompt_name"])]
    pub method: Option<String>,

    /// The request's params as a JSON object.
    #[arg(long, value_name = "JSON")]
    pub params: Option<String>,

    /// Call this tool (tools/call).
    #[arg(long, value_name = "NAME")]
    pub tool_name: Option<String>,

    /// A tool argument (repeatable), typed by the tool's inputSchema (mcpscope
    /// lists the tools first): text for a string parameter, a number, true or
    /// false, JSON for objects and arrays. A value that does not fit is
    /// refused before the call is sent.
    #[arg(long, value_name = "KEY=VALUE", value_parser = super::parse_key_value)]
    pub tool_arg: Vec<(String, String)>,

    /// The tool's arguments as one JSON object, sent as they are (--tool-arg values are added to them).
    #[arg(long, value_name = "JSON")]
    pub tool_args: Option<String>,

    /// Do not type --tool-arg values by the schema: JSON where they parse, else text.
    #[arg(long)]
    pub raw_args: bool,

    /// The resource for resources/read (the default method with --uri),
    /// resources/subscribe or resources/unsubscribe.
    #[arg(long, value_name = "URI")]
    pub uri: Option<String>,

    /// Get this prompt (prompts/get).
    #[arg(long, value_name = "NAME")]
    pub prompt_name: Option<String>,

    /// A prompt argument (repeatable; prompt arguments are text).
    #[arg(long, value_name = "KEY=VALUE", value_parser = super::parse_key_value, requires = "prompt_name")]
    pub prompt_arg: Vec<(String, String)>,

    /// The protocol version to offer in initialize, or to send in every
    /// request's _meta (modern era). Any string, to test counter-offers and
    /// -32022. Defaults to 2025-11-25 (legacy) or 2026-07-28 (modern).
    #[arg(long)]
    pub protocol_version: Option<String>,

    /// Which protocol era to speak: legacy (initialize handshake), modern
    /// (stateless, _meta envelope, server/discover) or auto (probe with
    /// server/discover, fall back to initialize). Default: the era of
    /// --protocol-version when it names a modern version, else legacy.
    #[arg(long, value_enum)]
    pub era: Option<super::EraArg>,

    /// Answer elicitations (legacy elicitation/create requests, modern
    /// input requests) by declining: the default in the modern era.
    #[arg(long, conflicts_with = "elicit_accept")]
    pub elicit_decline: bool,

    /// Answer elicitations by accepting with this content (a JSON object;
    /// with --elicit-accept-defaults, laid over the schema's defaults).
    #[arg(long, value_name = "JSON")]
    pub elicit_accept: Option<String>,

    /// Answer elicitations by accepting with the defaults the requested
    /// schema gives its fields (SEP-1034).
    #[arg(long, conflicts_with = "elicit_decline")]
    pub elicit_accept_defaults: bool,

    /// Declare sampling and answer every sampling request with this text
    /// (without it sampling is refused).
    #[arg(long, value_name = "TEXT")]
    pub sample_reply: Option<String>,

    /// Run the tool as a task: 2025-11-25 experimental tasks (legacy) or the
    /// io.modelcontextprotocol/tasks extension (modern); poll until it ends,
    /// printing status changes on stderr and the result on stdout.
    #[arg(long, requires = "tool_name")]
    pub task: bool,

    /// With --task: cancel the task (tasks/cancel) when it has not ended after this many milliseconds.
    #[arg(long, default_value_t = 300_000)]
    pub task_timeout_ms: u64,

    /// Timeout for each request, in milliseconds.
    #[arg(long, default_value_t = 30_000)]
    pub timeout_ms: u64,

    /// Send the session as OpenTelemetry traces (a span per request, the MCP
    /// semantic conventions) to this collector over OTLP/HTTP (JSON) when it ends.
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,

    /// Append every event to this JSONL capture file.
    #[arg(long, value_name = "FILE")]
    pub capture: Option<PathBuf>,

    /// Print every frame on stderr: → sent, ← received, server stderr and anomalies marked.
    #[arg(long)]
    pub trace: bool,

    /// Declare the roots capability and answer roots/list with this URI or path (repeatable).
    #[arg(long, value_name = "URI")]
    pub root: Vec<String>,

    /// Send the request without the initialize handshake.
    #[arg(long)]
    pub no_handshake: bool,

    /// Print the tool's MCP App linkage as one JSON line (with `--method
    /// tools/list`, one line per tool) without calling it. Exit 0: it has
    /// an App; 2: it has none; 5: no such tool (the Inspector CLI's contract).
    #[arg(long)]
    pub app_info: bool,

    /// Advertise the MCP Apps extension (`io.modelcontextprotocol/ui`) in
    /// `initialize` and in every 2026-07-28 request (`--app-info` and
    /// `mcpscope app` always do).
    #[arg(long)]
    pub app_extension: bool,

    #[command(flatten)]
    pub server: TargetArgs,

    #[command(flatten)]
    pub auth: super::auth::AuthArgs,
}

/// What another subcommand does on `call`'s established session instead of
/// the one request (`mcpscope skills`): its exit status.
pub type SessionWork = Box<dyn FnOnce(&mut Client, Duration) -> Result<u8, ClientError>>;

fn root_uri(root: &str) -> String {
    if root.contains("://") {
        return root.to_owned();
    }
    let path = std::fs::canonicalize(root).unwrap_or_else(|_| PathBuf::from(root));
    format!("file://{}", path.display())
}

/// Builds the method and params from the arguments. `--tool-arg` values are
/// taken as JSON where they parse; [`type_tool_args`] retypes them once the
/// tool's schema is known.
pub fn build_request(args: &CallArgs) -> Result<(String, Option<Value>), String> {
    let mut params = match &args.params {
        None => None,
        Some(text) => Some(json_object(text, "--params")?),
    };
    let method = match (&args.method, &args.tool_name, &args.uri, &args.prompt_name) {
        (Some(m), ..) => m.clone(),
        (None, Some(_), _, _) => methods::TOOLS_CALL.to_owned(),
        (None, None, Some(_), _) => methods::RESOURCES_READ.to_owned(),
        (None, None, None, Some(_)) => methods::PROMPTS_GET.to_owned(),
        (None, None, None, None) => return Err("give --method, --tool-name, --uri or --prompt-name".into()),
    };
    if let (Some(name), Some(Value::Object(p))) = (&args.tool_name, &params) {
        // With --tool-name, --params is the whole tools/call params; a bare
        // arguments object would be sent as params and the tool would get no
        // arguments: say so instead.
        let known = ["name", "arguments", "_meta", "task"];
        let unknown: Vec<&str> = p.keys().map(String::as_str).filter(|k| !known.contains(k)).collect();
        if !unknown.is_empty() {
            return Err(format!(
                "--params with --tool-name is the whole tools/call params ({{\"arguments\": {{…}}}}), but it has \
                 {}: for the tool's arguments use --tool-arg KEY=VALUE or --params '{{\"arguments\": {}}}'",
                unknown.iter().map(|k| format!("{k:?}")).collect::<Vec<_>>().join(", "),
                Value::Object(p.clone())
            ));
        }
        if let Some(other) = p.get("name").and_then(Value::as_str)
            && other != name
        {
            return Err(format!(
                "--tool-name {name:?} and the name {other:?} in --params disagree"
            ));
        }
    }
    if let Some(name) = &args.tool_name {
        let p = params.get_or_insert_with(|| json!({}));
        p["name"] = Value::from(name.clone());
    }
    if let Some(text) = &args.tool_args {
        let p = params.get_or_insert_with(|| json!({}));
        p["arguments"] = json_object(text, "--tool-args")?;
    }
    if !args.tool_arg.is_empty() {
        let p = params.get_or_insert_with(|| json!({}));
        let mut arguments = match p.get("arguments") {
            Some(Value::Object(o)) => o.clone(),
            _ => Map::new(),
        };
        for (k, v) in &args.tool_arg {
            arguments.insert(k.clone(), typed_arg::untyped(v));
        }
        p["arguments"] = Value::Object(arguments);
    }
    if let Some(uri) = &args.uri {
        let p = params.get_or_insert_with(|| json!({}));
        p["uri"] = Value::from(uri.clone());
    }
    if let Some(name) = &args.prompt_name {
        let p = params.get_or_insert_with(|| json!({}));
        p["name"] = Value::from(name.clone());
        if !args.prompt_arg.is_empty() {
            let arguments: Map<String, Value> = args
                .prompt_arg
                .iter()
                .map(|(k, v)| (k.clone(), Value::from(v.clone())))
                .collect();
            p["arguments"] = Value::Object(arguments);
        }
    }
    Ok((method, params))
}

fn json_object(text: &str, flag: &str) -> Result<Value, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(format!("{flag} must be a JSON object")),
        Err(e) => Err(format!("{flag} is not valid JSON: {e}")),
    }
}

/// Retypes the `--tool-arg` values in `params.arguments` by the tool's
/// `inputSchema`, or says which value does not fit.
pub fn type_tool_args(params: &mut Value, tool_args: &[(String, String)], input_schema: &Value) -> Result<(), String> {
    for (k, v) in tool_args {
        let typed = typed_arg::typed_argument(k, v, input_schema)
            .map_err(|e| format!("--tool-arg {k}={v}: {e} (--raw-args sends it as JSON or text)"))?;
        params["arguments"][k] = typed;
    }
    Ok(())
}

fn fail(code: u8, reason: impl std::fmt::Display) -> ExitCode {
    crate::errln!("mcpscope: {reason}");
    ExitCode::from(code)
}

pub fn print_json(v: &Value) {
    let text = serde_json::to_string_pretty(v).unwrap_or_default();
    crate::outln!("{text}");
}

pub fn run(args: CallArgs) -> ExitCode {
    if args.app_info {
        return super::app::run_app_info(args);
    }
    run_with(args, None)
}

/// [`run`], with `work` done on the session instead of the request.
pub fn run_with(args: CallArgs, work: Option<SessionWork>) -> ExitCode {
    let (method, params) = match build_request(&args) {
        Ok(r) => r,
        Err(e) => return fail(exit::USAGE, e),
    };
    let target = match args.server.target() {
        Ok(t) => t,
        Err(e) => return fail(exit::USAGE, e),
    };
    let authorizer = match args.auth.authorizer(&target) {
        Ok(a) => a,
        Err(e) => return fail(exit::USAGE, e),
    };
    let choice = era_choice(&args);
    let roots: Vec<Value> = args
        .root
        .iter()
        .map(|r| json!({"uri": root_uri(r), "name": r}))
        .collect();
    let policy = match input_policy(&args, roots, choice) {
        Ok(p) => p,
        Err(e) => return fail(exit::USAGE, e),
    };
    if let Err(e) = watch::check_capture(args.capture.as_deref()) {
        return fail(exit::IO, e);
    }
    let timeout = Duration::from_millis(args.timeout_ms);
    let options = SessionOptions {
        request_timeout: Some(timeout),
        capture: args.capture.clone(),
        limits: args.server.limits(),
        ..SessionOptions::new(mcpscope_core::record::capture::open_log)
    };
    let tracing = args.trace;
    let http = matches!(target, mcpscope_core::transport::target::Target::Http(_));
    let watch = Watch::default();
    let seen = watch.clone();
    let mut warnings = trace::Warnings::default();
    if let Some(endpoint) = &args.otlp_endpoint
        && let Err(e) = mcpscope_core::interop::otlp_http::traces_url(endpoint)
    {
        return fail(exit::USAGE, e);
    }
    let traces = args.otlp_endpoint.as_ref().map(|_| {
        let header = mcpscope_core::record::capture::Header::for_target(&target, "session");
        std::sync::Arc::new(std::sync::Mutex::new(Some(
            mcpscope_core::interop::otlp::OtlpWriter::new(header, super::VERSION),
        )))
    });
    let traced = traces.clone();
    let observer = Box::new(move |ev: Event| {
        let ev = &ev;
        seen.see(ev, "mcpscope");
        if let Some(t) = &traced
            && let Some(w) = t.lock().unwrap_or_else(std::sync::PoisonError::into_inner).as_mut()
        {
            w.push(ev);
        }
        if tracing {
            for line in trace::event_lines(ev) {
                crate::errln!("{line}");
            }
        } else if let Event::Frame(f) = ev
            && let Some(w) = warnings.frame(f, http)
        {
            crate::errln!("{w}");
        } else if let Event::Http(h) = ev
            && h.error.is_some()
            && h.request_id.is_none()
        {
            // Failures of a request are reported with it; these are the others.
            crate::errln!("mcpscope: {}", h.summary());
        }
    });
    let mut client = Client::connect(target, options, observer);
    if let Some(a) = authorizer {
        client = client.with_authorizer(a);
    }
    let mut capabilities = policy.capabilities();
    if args.app_info || args.app_extension {
        capabilities = mcpscope_core::apps::linkage::advertise(capabilities);
    }
    if args.task && choice != EraChoice::Legacy {
        capabilities = mcpscope_core::protocol::tasks::client_capabilities(
            capabilities,
            mcpscope_core::protocol::tasks::Flavor::Extension,
        );
    }
    client = client.with_policy(policy);

    let code = call(&mut client, &args, choice, &method, params, capabilities, work);
    let exit = client.close();
    // The session is over: its traces go to the collector (a failure is said;
    // the call's own result stands).
    if let (Some(endpoint), Some(t)) = (&args.otlp_endpoint, traces)
        && let Some(w) = t.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()
    {
        super::export::send_traces("call", endpoint, &w.finish());
    }
    let code = match code {
        Ok(code) => code,
        Err(e @ ClientError::TooLong { .. }) => {
            // It did answer; what it sent is kept (or could be), not lost.
            let kept = match &args.capture {
                Some(path) => format!("kept in pieces in {}", path.display()),
                None => "give --capture FILE to keep it".to_owned(),
            };
            crate::errln!("mcpscope: {e}; {kept}; --max-line SIZE reads longer lines");
            exit::UNREADABLE
        }
        Err(e @ ClientError::Unreadable { .. }) => {
            // It did answer: saying "no tools" instead would misreport it.
            crate::errln!("mcpscope: {e}");
            exit::UNREADABLE
        }
        Err(e) => {
            if super::signals::caught().is_none() {
                watch.explain("mcpscope", &e.to_string(), exit);
            }
            exit::UNREACHABLE
        }
    };
    if watch.capture_failed() {
        // The session ran, but what was asked for (a record of it) is lost.
        return ExitCode::from(exit::IO);
    }
    ExitCode::from(code)
}

/// `--era`, or the one `--protocol-version` implies (legacy by default).
pub fn era_choice(args: &CallArgs) -> EraChoice {
    match (args.era, &args.protocol_version) {
        (Some(e), _) => e.into(),
        (None, Some(v)) => EraChoice::implied_by_version(v),
        (None, None) => EraChoice::Legacy,
    }
}

/// How input requests are answered. Elicitation is declared when asked
/// for, and by default (declining) when the modern era may be spoken: a
/// modern server only asks for what the client declared.
pub fn input_policy(args: &CallArgs, roots: Vec<Value>, choice: EraChoice) -> Result<InputPolicy, String> {
    let given = match &args.elicit_accept {
        None => None,
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(v @ Value::Object(_)) => Some(v),
            Ok(_) => return Err("--elicit-accept must be a JSON object".into()),
            Err(e) => return Err(format!("--elicit-accept is not valid JSON: {e}")),
        },
    };
    let elicit = match (given, args.elicit_accept_defaults, args.elicit_decline) {
        (Some(v), true, _) => Some(ElicitAnswer::AcceptDefaults(v)),
        (None, true, _) => Some(ElicitAnswer::AcceptDefaults(json!({}))),
        (Some(v), false, _) => Some(ElicitAnswer::Accept(v)),
        (None, false, true) => Some(ElicitAnswer::Decline),
        (None, false, false) if choice != EraChoice::Legacy => Some(ElicitAnswer::Decline),
        (None, false, false) => None,
    };
    Ok(InputPolicy {
        roots: (!roots.is_empty()).then_some(roots),
        elicit,
        sample_reply: args.sample_reply.clone(),
    })
}

fn call(
    client: &mut Client,
    args: &CallArgs,
    choice: EraChoice,
    method: &str,
    mut params: Option<Value>,
    capabilities: Value,
    work: Option<SessionWork>,
) -> Result<u8, mcpscope_core::client::ClientError> {
    let timeout = Duration::from_millis(args.timeout_ms);
    client.wait_started(Duration::from_secs(10))?;
    if !args.no_handshake {
        let protocol_version = args.protocol_version.clone().unwrap_or_else(|| {
            match choice {
                EraChoice::Modern => mcpscope_core::protocol::era::DEFAULT_MODERN_VERSION,
                _ => handshake::DEFAULT_VERSION,
            }
            .to_owned()
        });
        let hs = HandshakeOptions {
            protocol_version,
            capabilities,
            ..HandshakeOptions::default()
        };
        match client.establish(choice, &hs, timeout)? {
            Err(e) => {
                crate::errln!("mcpscope: {e}");
                return Ok(exit::UNREACHABLE);
            }
            Ok(d) => {
                let accepted = d
                    .handshake
                    .as_ref()
                    .is_none_or(|h| h.verdict == handshake::VersionVerdict::Accepted);
                if choice != EraChoice::Legacy && (args.trace || !d.notes.is_empty() || choice == EraChoice::Auto) {
                    crate::errln!("mcpscope: era: {} ({})", d.summary(), d.server_name());
                    for n in d.notes.iter().filter(|n| !n.starts_with("era:")) {
                        crate::errln!("mcpscope: {n}");
                    }
                }
                if let Some(h) = &d.handshake
                    && (args.trace || !accepted)
                {
                    crate::errln!("mcpscope: {} ({})", h.verdict_text(), h.server_name());
                }
            }
        }
    }
    if !args.no_handshake {
        warn_unadvertised(client, method);
        if let Some(work) = work {
            return work(client, timeout);
        }
        if let Some(code) = prepare_tool_call(client, args, method, &mut params, timeout)? {
            return Ok(code);
        }
    }
    if args.task {
        let give_up = Duration::from_millis(args.task_timeout_ms);
        let mut on_status = |t: &mcpscope_core::protocol::tasks::Task| {
            crate::errln!("mcpscope: task {}: {}", t.task_id, t.status_line())
        };
        let run = client.run_task(params.unwrap_or_else(|| json!({})), timeout, give_up, &mut on_status)?;
        match run.flavor {
            None => crate::errln!("mcpscope: the server answered at once, without creating a task"),
            Some(f) => crate::errln!(
                "mcpscope: {} ended {}{}",
                f.label(),
                run.transitions.last().map_or("?".into(), |t| t.status.to_string()),
                if run.cancelled {
                    " (cancelled after --task-timeout-ms)"
                } else {
                    ""
                }
            ),
        }
        return Ok(match run.outcome {
            Outcome::Result(result) => {
                print_json(&result);
                if result.get("isError").and_then(Value::as_bool) == Some(true) {
                    crate::errln!("mcpscope: the tool reported a failure (result.isError is true)");
                    exit::TOOL_ERROR
                } else if run.cancelled {
                    exit::FAILED
                } else {
                    exit::OK
                }
            }
            Outcome::Error(e) => {
                print_json(&e.to_json());
                crate::errln!("mcpscope: the task failed: {e}");
                exit::FAILED
            }
            Outcome::Failed(why) => {
                crate::errln!("mcpscope: the task {why}");
                exit::FAILED
            }
        });
    }
    let modern = client.era().is_some_and(|d| d.era == Era::Modern);
    let resp = if modern && mcpscope_core::protocol::mrtr::may_require_input(method) {
        let out = client.request_with_input(method, params, timeout)?;
        for (id, ir) in &out.rounds {
            let what: Vec<String> = ir.requests.iter().map(|r| r.summary()).collect();
            crate::errln!(
                "mcpscope: #{id} answered input_required ({}){}",
                if what.is_empty() {
                    "no input requests".to_owned()
                } else {
                    what.join("; ")
                },
                if ir.request_state.is_some() {
                    ", with requestState"
                } else {
                    ""
                }
            );
        }
        if let Some(root) = out.rounds.first().map(|(id, _)| id)
            && let Some(last) = &out.response.frame.class.id
            && last != root
        {
            crate::errln!(
                "mcpscope: answered and retried as #{last} (one conversation with #{root}, {} round(s))",
                out.rounds.len() + 1
            );
        }
        if let Some(why) = &out.stopped {
            print_json(out.response.outcome.as_ref().unwrap_or(&Value::Null));
            crate::errln!("mcpscope: stopped: {why}");
            return Ok(exit::FAILED);
        }
        out.response
    } else {
        client.request(method, params, timeout)?
    };
    let tool_error = resp.is_tool_error();
    // A result serde_json cannot read (too deep, a number out of range, a
    // lone surrogate) is printed as the server sent it, never as a value
    // mcpscope made up (it was `null`).
    if resp.outcome.is_ok()
        && let Err(e) = serde_json::from_slice::<Value>(&resp.frame.raw)
        && let Some(raw) = mcpscope_core::wire::raw_member::member(&resp.frame.raw, "result")
    {
        super::output::out_bytes(raw);
        super::output::out_bytes(b"\n");
        crate::errln!(
            "mcpscope: {method}: the result is printed as the server sent it: {} ({} bytes; the capture keeps it whole)",
            mcpscope_core::wire::raw_member::why_unreadable(&e),
            raw.len()
        );
        return Ok(exit::UNREADABLE);
    }
    match resp.outcome {
        Ok(result) => {
            print_json(&result);
            if method == methods::TOOLS_LIST && modern {
                warn_invalid_tools(client, &result);
            }
            if tool_error {
                crate::errln!("mcpscope: the tool reported a failure (result.isError is true)");
                Ok(exit::TOOL_ERROR)
            } else {
                Ok(exit::OK)
            }
        }
        Err(e) => {
            print_json(&e.to_json());
            crate::errln!("mcpscope: {method} failed with JSON-RPC error {e}");
            Ok(exit::FAILED)
        }
    }
}

/// Names on stderr the listed tools mcpscope will not call (their
/// `x-mcp-header` annotations break the rules); the listing is printed whole.
fn warn_invalid_tools(client: &Client, result: &Value) {
    for name in result
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("name").and_then(Value::as_str))
    {
        if let Some(problem) = client.driver().tool_problem(name) {
            crate::errln!(
                "mcpscope: tool {name:?} cannot be called (x-mcp-header rule \"{}\"): {problem}",
                problem.rule()
            );
        }
    }
}

/// Says on stderr when the server did not advertise the capability `method`
/// needs: the request is sent all the same (the user asked for it).
fn warn_unadvertised(client: &Client, method: &str) {
    let Some(d) = client.era() else { return };
    let Some(caps) = d.server_capabilities() else { return };
    if let Some(why) = mcpscope_core::protocol::capabilities::unadvertised(caps, method, Some(&d.version)) {
        crate::errln!("mcpscope: {why}; sending {method} anyway");
    }
}

/// Before a `tools/call`: lists the tools (every page) so the tool's schema
/// and header annotations are known, refuses a tool whose `x-mcp-header`
/// annotations break the rules (modern era), and types the `--tool-arg`
/// values. `Some(code)`: stop with that exit status, nothing was called.
fn prepare_tool_call(
    client: &mut Client,
    args: &CallArgs,
    method: &str,
    params: &mut Option<Value>,
    timeout: Duration,
) -> Result<Option<u8>, mcpscope_core::client::ClientError> {
    let modern = client.era().is_some_and(|d| d.era == Era::Modern);
    if method == methods::TOOLS_LIST {
        return Ok(None);
    }
    let Some(name) = (method == methods::TOOLS_CALL)
        .then(|| params.as_ref()?.get("name")?.as_str().map(str::to_owned))
        .flatten()
    else {
        return Ok(None);
    };
    let advertised = client
        .era()
        .and_then(|d| d.server_capabilities())
        .is_none_or(|c| c.get("tools").is_some_and(|t| !t.is_null()));
    if !advertised {
        return Ok(None);
    }
    let tools = match client.list_all(methods::TOOLS_LIST, "tools", timeout)? {
        Ok(tools) => tools,
        Err(e) => {
            crate::errln!("mcpscope: tools/list failed ({e}): the arguments go untyped");
            Vec::new()
        }
    };
    if modern && let Some(problem) = client.driver().tool_problem(&name) {
        crate::errln!(
            "mcpscope: not calling tool {name:?}: its inputSchema breaks the x-mcp-header rule \"{}\": {problem}",
            problem.rule()
        );
        return Ok(Some(exit::FAILED));
    }
    let Some(tool) = tools
        .iter()
        .find(|t| t.get("name").and_then(Value::as_str) == Some(name.as_str()))
    else {
        if client.driver().tools_listed() {
            crate::errln!("mcpscope: the server's tools/list does not include {name:?}; calling it anyway");
        }
        return Ok(None);
    };
    if !args.raw_args
        && let (Some(p), Some(schema)) = (params.as_mut(), tool.get("inputSchema"))
        && let Err(e) = type_tool_args(p, &args.tool_arg, schema)
    {
        crate::errln!("mcpscope: {e}");
        return Ok(Some(exit::USAGE));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn parse(args: &[&str]) -> CallArgs {
        #[derive(Parser)]
        struct W {
            #[command(flatten)]
            a: CallArgs,
        }
        W::parse_from(std::iter::once("x").chain(args.iter().copied())).a
    }

    #[test]
    fn tool_args_parse_as_json_or_string() {
        let a = parse(&[
            "--tool-name",
            "add",
            "--tool-arg",
            "a=1",
            "--tool-arg",
            "b=[1,2]",
            "--tool-arg",
            "s=hello world",
            "--tool-arg",
            "t=true",
            "--tool-arg",
            "q=\"1\"",
            "--",
            "srv",
        ]);
        let (m, p) = build_request(&a).unwrap();
        assert_eq!(m, "tools/call");
        assert_eq!(
            p.unwrap(),
            json!({"name":"add","arguments":{"a":1,"b":[1,2],"s":"hello world","t":true,"q":"1"}})
        );
    }

    #[test]
    fn conveniences_build_their_requests() {
        let a = parse(&["--uri", "file:///a%20b.txt", "--", "srv"]);
        assert_eq!(
            build_request(&a).unwrap(),
            ("resources/read".into(), Some(json!({"uri":"file:///a%20b.txt"})))
        );
        let a = parse(&["--method", "resources/subscribe", "--uri", "x://y", "--", "srv"]);
        assert_eq!(
            build_request(&a).unwrap(),
            ("resources/subscribe".into(), Some(json!({"uri":"x://y"})))
        );
        let a = parse(&[
            "--prompt-name",
            "greet",
            "--prompt-arg",
            "n=42",
            "--prompt-arg",
            "who=Ann",
            "--",
            "srv",
        ]);
        assert_eq!(
            build_request(&a).unwrap(),
            (
                "prompts/get".into(),
                Some(json!({"name":"greet","arguments":{"n":"42","who":"Ann"}}))
            )
        );
        let a = parse(&[
            "--tool-name",
            "t",
            "--tool-args",
            r#"{"v":"true","n":null}"#,
            "--tool-arg",
            "x=1",
            "--",
            "srv",
        ]);
        assert_eq!(
            build_request(&a).unwrap().1.unwrap(),
            json!({"name":"t","arguments":{"v":"true","n":null,"x":1}})
        );
        let a = parse(&["--tool-name", "t", "--tool-args", "[1]", "--", "srv"]);
        assert!(
            build_request(&a)
                .unwrap_err()
                .contains("--tool-args must be a JSON object")
        );
    }

    #[test]
    fn tool_args_are_typed_by_the_schema() {
        let a = parse(&[
            "--tool-name",
            "t",
            "--tool-arg",
            "message=42",
            "--tool-arg",
            "a=2",
            "--",
            "srv",
        ]);
        let (_, p) = build_request(&a).unwrap();
        let mut p = p.unwrap();
        let schema = json!({"properties":{"message":{"type":"string"},"a":{"type":"number"}}});
        type_tool_args(&mut p, &a.tool_arg, &schema).unwrap();
        assert_eq!(p["arguments"], json!({"message":"42","a":2}));
        let a = parse(&["--tool-name", "t", "--tool-arg", "a=abc", "--", "srv"]);
        let mut p = build_request(&a).unwrap().1.unwrap();
        let e = type_tool_args(&mut p, &a.tool_arg, &schema).unwrap_err();
        assert!(
            e.contains("--tool-arg a=abc") && e.contains("a number") && e.contains("--raw-args"),
            "{e}"
        );
    }

    #[test]
    fn params_must_be_an_object() {
        let a = parse(&["--method", "x", "--params", "[1]", "--", "srv"]);
        assert!(build_request(&a).unwrap_err().contains("object"));
        let a = parse(&["--method", "x", "--params", "{", "--", "srv"]);
        assert!(build_request(&a).unwrap_err().contains("not valid JSON"));
        let a = parse(&["--method", "resources/read", "--params", r#"{"uri":"x"}"#, "--", "srv"]);
        assert_eq!(build_request(&a).unwrap().1.unwrap(), json!({"uri":"x"}));
    }

    #[test]
    fn params_with_a_tool_name_are_the_whole_call_params() {
        let a = parse(&["--tool-name", "add", "--params", r#"{"a":1}"#, "--", "srv"]);
        let e = build_request(&a).unwrap_err();
        assert!(e.contains("--tool-arg") && e.contains(r#""arguments""#), "{e}");
        let a = parse(&[
            "--tool-name",
            "add",
            "--params",
            r#"{"arguments":{"a":1}}"#,
            "--",
            "srv",
        ]);
        assert_eq!(
            build_request(&a).unwrap().1.unwrap(),
            json!({"arguments":{"a":1},"name":"add"})
        );
        let a = parse(&["--tool-name", "add", "--params", r#"{"name":"sub"}"#, "--", "srv"]);
        assert!(build_request(&a).unwrap_err().contains("disagree"));
    }
}
