//! `mcpscope app` (host a tool's MCP App in the browser) and `call
//! --app-info` (print a tool's App linkage without calling it).

use super::call::{self, CallArgs, SessionWork};
use super::exit;
use clap::Args;
use mcpscope_core::apps::csp::PERMISSIONS;
use mcpscope_core::apps::linkage::{self, ui_link};
use mcpscope_core::apps::run::{AppRecord, AppRun, ServerCall, prepare};
use mcpscope_core::client::{Client, ClientError};
use mcpscope_core::protocol::methods;
use mcpscope_core::wire::message::RequestId;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct AppArgs {
    /// Print the host page's URL instead of opening the browser.
    #[arg(long)]
    pub no_browser: bool,

    /// Grant a permission the View asks for (camera, microphone,
    /// geolocation, clipboard-write); repeat for more. Nothing is granted
    /// unless given.
    #[arg(long, value_name = "PERMISSION")]
    pub grant: Vec<String>,

    /// Close the View (with `ui/resource-teardown`) after this long, e.g.
    /// `30s`; by default it stays until the page's Close, Ctrl-C or the
    /// server ends.
    #[arg(long, value_name = "DURATION")]
    pub close_after: Option<String>,

    /// The theme the View starts with.
    #[arg(long, value_parser = ["light", "dark"], default_value = "light")]
    pub theme: String,

    /// Leave out the per-message trace on stderr.
    #[arg(long)]
    pub quiet: bool,

    #[command(flatten)]
    pub call: CallArgs,
}

fn fail(code: u8, reason: impl std::fmt::Display) -> ExitCode {
    crate::errln!("mcpscope: {reason}");
    ExitCode::from(code)
}

/// `call --app-info`: the linkage of `--tool-name` (reading its resource),
/// or of every tool with `--method tools/list`.
pub fn run_app_info(args: CallArgs) -> ExitCode {
    let listing = args.method.as_deref() == Some(methods::TOOLS_LIST);
    let name = args.tool_name.clone();
    if !listing && name.is_none() {
        return fail(exit::USAGE, "--app-info needs --tool-name NAME, or --method tools/list");
    }
    let work: SessionWork = Box::new(move |client: &mut Client, timeout: Duration| {
        let tools = match client.list_all(methods::TOOLS_LIST, "tools", timeout)? {
            Ok(t) => t,
            Err(e) => {
                crate::errln!("mcpscope: tools/list failed: {} ({})", e.message, e.code);
                return Ok(exit::FAILED);
            }
        };
        if listing {
            for tool in &tools {
                let resource = read_ui_resource(client, tool, timeout)?;
                crate::outln!("{}", linkage::app_info(tool, resource.as_ref()));
            }
            return Ok(exit::OK);
        }
        let name = name.unwrap_or_default();
        let Some(tool) = tools
            .iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some(name.as_str()))
        else {
            crate::errln!("mcpscope: no tool {name:?} (the server lists {})", names(&tools));
            return Ok(exit::NO_SUCH_TOOL);
        };
        if let Some(link) = ui_link(tool) {
            for p in &link.problems {
                crate::errln!("mcpscope: warning: tool {name:?}: {p}");
            }
            if link.resource_uri.is_some() && link.usable_uri().is_none() {
                return Ok(exit::FAILED);
            }
        }
        let resource = read_ui_resource(client, tool, timeout)?;
        let info = linkage::app_info(tool, resource.as_ref());
        crate::outln!("{info}");
        Ok(if info["hasApp"] == true { exit::OK } else { exit::NO_APP })
    });
    call::run_with(args, Some(work))
}

fn names(tools: &[Value]) -> String {
    let n: Vec<&str> = tools
        .iter()
        .filter_map(|t| t.get("name").and_then(Value::as_str))
        .collect();
    if n.is_empty() { "no tools".into() } else { n.join(", ") }
}

/// `resources/read` of the tool's `ui://` resource, when it has one and the
/// server answers (a refusal is said, not fatal: the linkage is still printed).
fn read_ui_resource(client: &mut Client, tool: &Value, timeout: Duration) -> Result<Option<Value>, ClientError> {
    let Some(uri) = ui_link(tool).and_then(|l| l.usable_uri().map(str::to_owned)) else {
        return Ok(None);
    };
    match client
        .request(methods::RESOURCES_READ, Some(json!({"uri": uri})), timeout)?
        .outcome
    {
        Ok(r) => Ok(Some(r)),
        Err(e) => {
            crate::errln!(
                "mcpscope: warning: resources/read {uri} failed: {} ({})",
                e.message,
                e.code
            );
            Ok(None)
        }
    }
}

pub fn run(mut args: AppArgs) -> ExitCode {
    let Some(tool_name) = args.call.tool_name.clone() else {
        return fail(exit::USAGE, "give --tool-name NAME: the tool whose App to host");
    };
    if args.call.method.as_deref().is_some_and(|m| m != methods::TOOLS_CALL) {
        return fail(exit::USAGE, "mcpscope app runs a tool (--tool-name), not --method");
    }
    for g in &args.grant {
        if !PERMISSIONS.contains(&g.as_str()) {
            return fail(exit::USAGE, format!("--grant {g:?}: one of {}", PERMISSIONS.join(", ")));
        }
    }
    let close_after = match args.close_after.as_deref() {
        None => None,
        Some(text) => match mcpscope_core::duration::parse(text) {
            Ok(d) => Some(d),
            Err(e) => return fail(exit::USAGE, format!("--close-after: {e}")),
        },
    };
    let (_, params) = match call::build_request(&args.call) {
        Ok(r) => r,
        Err(e) => return fail(exit::USAGE, e),
    };
    args.call.app_extension = true;
    args.call.trace = !args.quiet;
    let options = HostOptions {
        tool_name,
        params: params.unwrap_or_else(|| json!({})),
        grant: args.grant.clone(),
        open_browser: !args.no_browser,
        close_after,
        theme: args.theme.clone(),
        tool_args: args.call.tool_arg.clone(),
        raw_args: args.call.raw_args,
    };
    let work: SessionWork = Box::new(move |client: &mut Client, timeout: Duration| host(client, timeout, options));
    call::run_with(args.call, Some(work))
}

struct HostOptions {
    tool_name: String,
    params: Value,
    grant: Vec<String>,
    open_browser: bool,
    close_after: Option<Duration>,
    theme: String,
    tool_args: Vec<(String, String)>,
    raw_args: bool,
}

/// What the session is waiting on.
enum Waiting {
    /// The tools/call that opened the View.
    Call,
    /// A request the View made (its ticket).
    View(u64),
}

fn host(client: &mut Client, timeout: Duration, mut o: HostOptions) -> Result<u8, ClientError> {
    // From initialize, or from server/discover in 2026-07-28.
    let server_caps = client
        .era()
        .and_then(|e| e.server_capabilities().cloned())
        .unwrap_or(Value::Null);
    if !linkage::advertised(&server_caps) {
        crate::errln!(
            "mcpscope: note: the server does not say it supports MCP Apps (no capabilities.extensions[\"{}\"]); hosting anyway",
            linkage::EXTENSION_ID
        );
    }
    let tools = match client.list_all(methods::TOOLS_LIST, "tools", timeout)? {
        Ok(t) => t,
        Err(e) => {
            crate::errln!("mcpscope: tools/list failed: {} ({})", e.message, e.code);
            return Ok(exit::FAILED);
        }
    };
    let Some(tool) = tools
        .iter()
        .find(|t| t.get("name").and_then(Value::as_str) == Some(o.tool_name.as_str()))
        .cloned()
    else {
        crate::errln!(
            "mcpscope: no tool {:?} (the server lists {})",
            o.tool_name,
            names(&tools)
        );
        return Ok(exit::NO_SUCH_TOOL);
    };
    if !o.raw_args
        && let Some(schema) = tool.get("inputSchema")
        && let Err(e) = call::type_tool_args(&mut o.params, &o.tool_args, schema)
    {
        crate::errln!("mcpscope: {e}");
        return Ok(exit::USAGE);
    }
    let Some(uri) = ui_link(&tool).and_then(|l| l.usable_uri().map(str::to_owned)) else {
        crate::errln!(
            "mcpscope: tool {:?} has no MCP App (no _meta.ui.resourceUri with a ui:// URI); `mcpscope call` runs it",
            o.tool_name
        );
        return Ok(exit::NO_APP);
    };
    let read = match client
        .request(methods::RESOURCES_READ, Some(json!({"uri": uri})), timeout)?
        .outcome
    {
        Ok(r) => r,
        Err(e) => {
            crate::errln!("mcpscope: resources/read {uri} failed: {} ({})", e.message, e.code);
            return Ok(exit::FAILED);
        }
    };
    // The listing's _meta.ui counts when the content item has none.
    let listing = match linkage::resource_ui_meta(read.get("contents").and_then(|c| c.get(0)).unwrap_or(&Value::Null)) {
        Some(_) => None,
        None => match client.list_all(methods::RESOURCES_LIST, "resources", timeout)? {
            Ok(list) => list
                .into_iter()
                .find(|r| r.get("uri").and_then(Value::as_str) == Some(uri.as_str())),
            Err(_) => None,
        },
    };
    let mut prepared = match prepare(&tool, &tools, &read, listing.as_ref(), &o.grant) {
        Ok(p) => p,
        Err(e) => {
            crate::errln!("mcpscope: {e}");
            return Ok(exit::FAILED);
        }
    };
    prepared.setup.theme = o.theme.clone();
    prepared.page.theme = o.theme.clone();
    crate::errln!(
        "mcpscope: app {}: Content-Security-Policy: {}",
        o.tool_name,
        prepared.setup.csp
    );
    let started = Instant::now();
    let call_id = client.send(methods::TOOLS_CALL, Some(o.params.clone()), timeout);
    prepared.setup.call_id = Some(call_id.to_json());
    let mut run = match AppRun::start(prepared) {
        Ok(r) => r,
        Err(e) => {
            crate::errln!("mcpscope: {e}");
            return Ok(exit::FAILED);
        }
    };
    let url = run.url();
    crate::errln!("mcpscope: app {}: open {url}", o.tool_name);
    if o.open_browser {
        match mcpscope_core::transport::auth::browser::open(&url) {
            Ok(program) => crate::errln!("mcpscope: app {}: opened with {program}", o.tool_name),
            Err(e) => crate::errln!("mcpscope: {e}; open the URL above yourself"),
        }
    }
    let arguments = o.params.get("arguments").cloned().unwrap_or_else(|| json!({}));
    let mut pending: Vec<(RequestId, String)> = vec![(call_id.clone(), methods::TOOLS_CALL.to_owned())];
    let mut waiting: HashMap<RequestId, Waiting> = HashMap::new();
    waiting.insert(call_id, Waiting::Call);
    let mut code = exit::OK;
    let calls = run.with_host(|h, _| h.tool_input(arguments));
    send_calls(client, &mut run, &mut pending, &mut waiting, calls, timeout);
    let mut closing = false;
    let mut told_initialized = false;
    loop {
        flush(client, &mut run);
        if !told_initialized && let (Some(init), Some(_)) = (run.initialized_at, run.opened_at) {
            told_initialized = true;
            crate::errln!(
                "mcpscope: app {}: initialized {} ms after the tool was run",
                o.tool_name,
                init.duration_since(started).as_millis()
            );
        }
        if run.is_closed() {
            break;
        }
        let stop = super::signals::caught().is_some()
            || client.is_closed()
            || o.close_after.is_some_and(|d| started.elapsed() >= d);
        if stop && !closing {
            closing = true;
            let why = if client.is_closed() {
                "the server went away"
            } else {
                "mcpscope is closing the app"
            };
            let calls = run.close(why);
            send_calls(client, &mut run, &mut pending, &mut waiting, calls, timeout);
            continue;
        }
        let calls = run.wait(Duration::from_millis(10));
        send_calls(client, &mut run, &mut pending, &mut waiting, calls, timeout);
        if pending.is_empty() {
            continue;
        }
        while let Some((id, done)) = client.poll_any(&pending, Duration::from_millis(5)) {
            pending.retain(|(p, _)| *p != id);
            let outcome = match done {
                Ok(r) => r.outcome.map_err(|e| e.to_json()),
                Err(e) => Err(json!({"code": -32603, "message": e.to_string()})),
            };
            match waiting.remove(&id) {
                Some(Waiting::Call) => {
                    let calls = match outcome {
                        Ok(result) => {
                            call::print_json(&result);
                            if result.get("isError").and_then(Value::as_bool) == Some(true) {
                                code = exit::TOOL_ERROR;
                            }
                            run.with_host(|h, _| h.tool_result(result))
                        }
                        Err(e) => {
                            let message = e.get("message").and_then(Value::as_str).unwrap_or("failed").to_owned();
                            crate::errln!("mcpscope: tools/call failed: {message}");
                            code = exit::FAILED;
                            run.with_host(|h, _| h.tool_cancelled(Some(message)))
                        }
                    };
                    send_calls(client, &mut run, &mut pending, &mut waiting, calls, timeout);
                }
                Some(Waiting::View(ticket)) => {
                    let calls = run.answered(ticket, outcome);
                    send_calls(client, &mut run, &mut pending, &mut waiting, calls, timeout);
                }
                None => {}
            }
            if pending.is_empty() {
                break;
            }
        }
    }
    flush(client, &mut run);
    if let Some(m) = run.host().model_context() {
        client
            .session()
            .note(format!("app {}: the model context it left: {m}", o.tool_name));
    }
    // The page is told the View closed before the listeners go.
    run.server().wait_delivered(Duration::from_secs(1));
    Ok(code)
}

/// Sends the View's requests to the server, after recording what led to
/// them: on the timeline the View's message comes first, then the host's
/// request to the server.
fn send_calls(
    client: &mut Client,
    run: &mut AppRun,
    pending: &mut Vec<(RequestId, String)>,
    waiting: &mut HashMap<RequestId, Waiting>,
    calls: Vec<ServerCall>,
    timeout: Duration,
) {
    flush(client, run);
    for c in calls {
        let id = client.send(&c.method, c.params, timeout);
        pending.push((id.clone(), c.method));
        waiting.insert(id, Waiting::View(c.ticket));
    }
}

/// Puts the View's messages and the host's notes on the session's record.
fn flush(client: &Client, run: &mut AppRun) {
    for r in run.take_records() {
        match r {
            AppRecord::Message(m) => client.session().record_app(m),
            AppRecord::Note(n) => client.session().note(n),
        }
    }
}
