//! A test file read and checked before anything runs: every key known,
//! every value of its type, every assertion a display filter that parses,
//! every pattern a regular expression; each problem with its line and
//! column (all of them, not the first only).

use super::yaml::{self, Node, Pos, Value};
use crate::analysis::lint::Severity;
use crate::filter::Filter;
use serde_json::Value as Json;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// A problem in the file, where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileError {
    pub at: Pos,
    pub message: String,
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.at, self.message)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
        cwd: Option<String>,
    },
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Server {
    pub name: String,
    pub target: Target,
    /// legacy, modern or auto (the launcher's words).
    pub era: Option<String>,
    pub at: Pos,
}

/// What a step sends.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    Call { tool: String, arguments: Json },
    Request { method: String, params: Option<Json> },
    Notify { method: String, params: Option<Json> },
    Read { uri: String },
    Prompt { name: String, arguments: Json },
}

#[derive(Clone, Debug)]
pub struct Assertion {
    pub text: String,
    pub at: Pos,
    /// Shared by the assertions written alike (a file repeats
    /// `result.isError == false` step after step): parsed once.
    pub filter: Arc<Filter>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    pub name: String,
    /// JSON paths left out of the comparison (`result._meta`, …).
    pub ignore: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct Step {
    pub name: String,
    pub at: Pos,
    pub action: Action,
    /// Variable name, the path in the answer it takes, where it was written.
    pub capture: Vec<(String, String, Pos)>,
    pub asserts: Vec<Assertion>,
    /// The result must validate against the tool's outputSchema.
    pub output_schema: bool,
    pub snapshot: Option<Snapshot>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Contracts {
    pub must_call: Vec<String>,
    pub must_not_call: Vec<String>,
    pub max_requests: Option<u64>,
    pub max_duration: Option<Duration>,
    /// No lint finding at this severity or worse.
    pub lint: Option<Severity>,
    /// A recording whose surface (tools, prompts, resources) must not change.
    pub surface: Option<String>,
    /// Where `contracts:` is written.
    pub at: Pos,
}

impl Contracts {
    /// No contract, written at `at` (a file without any compares equal).
    pub fn default_at(at: Pos) -> Contracts {
        Contracts {
            at,
            ..Contracts::default()
        }
    }

    /// Whether the file states any contract (one is then checked over the
    /// whole session, which needs all of its events).
    pub fn stated(&self) -> bool {
        *self != Contracts::default_at(self.at)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ExpectedCall {
    pub tool: String,
    /// Arguments the call must contain (a subset of what was sent).
    pub arguments: Option<Json>,
}

#[derive(Clone, Debug)]
pub struct Eval {
    pub name: String,
    pub at: Pos,
    pub prompt: String,
    pub models: Vec<String>,
    pub runs: u32,
    pub expect_tools: Vec<ExpectedCall>,
    pub in_order: bool,
    pub forbid_tools: Vec<String>,
    pub expect_text: Option<regex::Regex>,
    /// The share of runs (0-1) that must pass, per model.
    pub pass_rate: f64,
    /// The provider's URL, for a provider mcpscope does not know (or a local one).
    pub base_url: Option<String>,
    /// A capture whose model turns are served instead of a live provider's
    /// (offline, deterministic), relative to the test file.
    pub replay: Option<String>,
    pub system: Option<String>,
    /// Round trips to tools before a run is given up.
    pub max_turns: usize,
}

#[derive(Clone, Debug, Default)]
pub struct TestFile {
    pub name: Option<String>,
    pub servers: Vec<Server>,
    /// The server the steps run against (the only one, or `server:`).
    pub server: Option<String>,
    /// Each environment's variables (`--env NAME`).
    pub environments: Vec<(String, Vec<(String, String)>)>,
    pub variables: Vec<(String, String)>,
    pub steps: Vec<Step>,
    pub contracts: Contracts,
    pub evals: Vec<Eval>,
}

/// Reads a test file; `Err` holds every problem found, in file order.
pub fn read(text: &str) -> Result<TestFile, Vec<FileError>> {
    let root = yaml::parse(text).map_err(|e| {
        vec![FileError {
            at: e.at,
            message: e.message,
        }]
    })?;
    let mut r = Reader::default();
    let file = r.file(&root);
    if r.errors.is_empty() {
        Ok(file)
    } else {
        r.errors.sort_by_key(|e| (e.at.line, e.at.column));
        Err(r.errors)
    }
}

#[derive(Default)]
struct Reader {
    errors: Vec<FileError>,
    /// Each assertion's filter by the text it was parsed from.
    filters: HashMap<String, Arc<Filter>>,
}

impl Reader {
    /// The filter `text` says, parsed the first time it is met.
    fn filter(&mut self, text: &str) -> Result<Arc<Filter>, crate::filter::FilterError> {
        if let Some(f) = self.filters.get(text) {
            return Ok(f.clone());
        }
        let f = Arc::new(Filter::parse(text)?);
        self.filters.insert(text.to_owned(), f.clone());
        Ok(f)
    }

    fn error(&mut self, at: Pos, message: impl Into<String>) {
        self.errors.push(FileError {
            at,
            message: message.into(),
        });
    }

    /// The mapping's pairs, each key checked against `known`.
    fn map<'n>(&mut self, node: &'n Node, what: &str, known: &[&str]) -> Vec<(&'n str, &'n Node)> {
        let Value::Map(pairs) = &node.value else {
            self.error(node.at, format!("{what} must be a mapping, not {}", node.kind()));
            return Vec::new();
        };
        let mut out = Vec::new();
        for (k, v) in pairs {
            let key = k.text().unwrap_or_default();
            if !known.is_empty() && !known.contains(&key) {
                let hint = crate::filter::error::nearest(key, known.iter().copied())
                    .map(|n| format!(" (did you mean {n:?}?)"))
                    .unwrap_or_default();
                self.error(
                    k.at,
                    format!("{what} has no key {key:?}{hint}; it knows {}", known.join(", ")),
                );
                continue;
            }
            out.push((key, v));
        }
        out
    }

    fn string(&mut self, node: &Node, what: &str) -> Option<String> {
        match &node.value {
            Value::Scalar { text, .. } => Some(text.clone()),
            _ => {
                // `a contains "b: c"` unquoted is a mapping to YAML.
                let hint = if matches!(&node.value, Value::Map(_)) {
                    " (a \": \" in it makes YAML read a mapping: put it in single quotes)"
                } else {
                    ""
                };
                self.error(node.at, format!("{what} must be text, not {}{hint}", node.kind()));
                None
            }
        }
    }

    fn strings(&mut self, node: &Node, what: &str) -> Vec<String> {
        match &node.value {
            Value::Seq(items) => items.iter().filter_map(|i| self.string(i, what)).collect(),
            Value::Scalar { text, .. } => vec![text.clone()],
            Value::Map(_) => {
                self.error(node.at, format!("{what} must be a list, not a mapping"));
                Vec::new()
            }
        }
    }

    fn pairs(&mut self, node: &Node, what: &str) -> Vec<(String, String)> {
        self.map(node, what, &[])
            .into_iter()
            .filter_map(|(k, v)| self.string(v, &format!("{what}.{k}")).map(|v| (k.to_owned(), v)))
            .collect()
    }

    fn number(&mut self, node: &Node, what: &str) -> Option<u64> {
        let n = node.text().and_then(|t| t.parse::<u64>().ok());
        if n.is_none() {
            self.error(node.at, format!("{what} must be a whole number"));
        }
        n
    }

    fn boolean(&mut self, node: &Node, what: &str) -> bool {
        match node.to_json() {
            Json::Bool(b) => b,
            _ => {
                self.error(node.at, format!("{what} must be true or false"));
                false
            }
        }
    }

    fn file(&mut self, root: &Node) -> TestFile {
        const KEYS: &[&str] = &[
            "name",
            "servers",
            "server",
            "environments",
            "variables",
            "steps",
            "contracts",
            "evals",
        ];
        let mut f = TestFile::default();
        let mut server_at = None;
        // Whether there is anything to run (even steps with mistakes in them).
        let mut has_work = false;
        for (key, v) in self.map(root, "the file", KEYS) {
            match key {
                "name" => f.name = self.string(v, "name"),
                "servers" => {
                    for (name, def) in self.map(v, "servers", &[]) {
                        if let Some(s) = self.server(name, def) {
                            f.servers.push(s);
                        }
                    }
                }
                "server" => {
                    f.server = self.string(v, "server");
                    server_at = Some(v.at);
                }
                "environments" => {
                    for (name, vars) in self.map(v, "environments", &[]) {
                        let vars = self.pairs(vars, &format!("environment {name}"));
                        f.environments.push((name.to_owned(), vars));
                    }
                }
                "variables" => f.variables = self.pairs(v, "variables"),
                "steps" => {
                    has_work |= matches!(&v.value, Value::Seq(s) if !s.is_empty());
                    f.steps = self.steps(v);
                }
                "contracts" => f.contracts = self.contracts(v),
                "evals" => {
                    has_work |= matches!(&v.value, Value::Seq(s) if !s.is_empty());
                    f.evals = self.evals(v);
                }
                _ => unreachable!("keys are checked"),
            }
        }
        match (&f.server, f.servers.len()) {
            (Some(name), _) if !f.servers.iter().any(|s| s.name == *name) => {
                let known: Vec<&str> = f.servers.iter().map(|s| s.name.as_str()).collect();
                self.error(
                    server_at.unwrap_or(root.at),
                    format!("server {name:?} is not one of servers ({})", known.join(", ")),
                );
            }
            (None, 0) if has_work => self.error(
                root.at,
                "the file has steps or evals but no servers to run them against",
            ),
            (None, n) if n > 1 => self.error(
                server_at.unwrap_or(root.at),
                "several servers: say which the steps run against with server: NAME",
            ),
            _ => {}
        }
        if f.server.is_none() && f.servers.len() == 1 {
            f.server = Some(f.servers[0].name.clone());
        }
        f
    }

    fn server(&mut self, name: &str, node: &Node) -> Option<Server> {
        const KEYS: &[&str] = &["command", "args", "env", "cwd", "url", "headers", "era"];
        let what = format!("server {name}");
        let (mut command, mut args, mut env, mut cwd, mut url, mut headers, mut era) =
            (None, Vec::new(), Vec::new(), None, None, Vec::new(), None);
        for (key, v) in self.map(node, &what, KEYS) {
            match key {
                "command" => command = self.string(v, "command"),
                "args" => args = self.strings(v, "args"),
                "env" => env = self.pairs(v, "env"),
                "cwd" => cwd = self.string(v, "cwd"),
                "url" => url = self.string(v, "url"),
                "headers" => headers = self.pairs(v, "headers"),
                "era" => {
                    era = self.string(v, "era");
                    if let Some(e) = &era
                        && !["legacy", "modern", "auto"].contains(&e.as_str())
                    {
                        self.error(v.at, format!("era {e:?}: legacy, modern or auto"));
                    }
                }
                _ => unreachable!("keys are checked"),
            }
        }
        let target = match (command, url) {
            (Some(command), None) => Target::Stdio {
                command,
                args,
                env,
                cwd,
            },
            (None, Some(url)) => Target::Http { url, headers },
            (Some(_), Some(_)) => {
                self.error(node.at, format!("{what} has both command and url: one or the other"));
                return None;
            }
            (None, None) => {
                self.error(node.at, format!("{what} needs a command (stdio) or a url (HTTP)"));
                return None;
            }
        };
        Some(Server {
            name: name.to_owned(),
            target,
            era,
            at: node.at,
        })
    }

    fn steps(&mut self, node: &Node) -> Vec<Step> {
        let Value::Seq(items) = &node.value else {
            self.error(node.at, format!("steps must be a list, not {}", node.kind()));
            return Vec::new();
        };
        items
            .iter()
            .enumerate()
            .filter_map(|(n, item)| self.step(n + 1, item))
            .collect()
    }

    fn step(&mut self, n: usize, node: &Node) -> Option<Step> {
        const KEYS: &[&str] = &[
            "name",
            "call",
            "arguments",
            "request",
            "params",
            "notify",
            "read",
            "prompt",
            "capture",
            "assert",
            "output_schema",
            "snapshot",
        ];
        const ACTIONS: &[&str] = &["call", "request", "notify", "read", "prompt"];
        let what = format!("step {n}");
        let pairs = self.map(node, &what, KEYS);
        let get = |k: &str| pairs.iter().find(|(key, _)| *key == k).map(|(_, v)| *v);
        let actions: Vec<&str> = ACTIONS.iter().copied().filter(|a| get(a).is_some()).collect();
        let name = get("name").and_then(|v| self.string(v, "name"));
        let object = |r: &mut Reader, v: Option<&Node>, key: &str| match v.map(Node::to_json) {
            None => Json::Object(Default::default()),
            Some(j @ Json::Object(_)) => j,
            Some(_) => {
                r.error(v.map_or(node.at, |v| v.at), format!("{key} must be a mapping"));
                Json::Null
            }
        };
        let action = match actions.as_slice() {
            ["call"] => {
                let tool = self.string(get("call")?, "call")?;
                Action::Call {
                    arguments: object(self, get("arguments"), "arguments"),
                    tool,
                }
            }
            ["request"] => Action::Request {
                method: self.string(get("request")?, "request")?,
                params: get("params").map(|_| object(self, get("params"), "params")),
            },
            ["notify"] => Action::Notify {
                method: self.string(get("notify")?, "notify")?,
                params: get("params").map(|_| object(self, get("params"), "params")),
            },
            ["read"] => Action::Read {
                uri: self.string(get("read")?, "read")?,
            },
            ["prompt"] => {
                let name = self.string(get("prompt")?, "prompt")?;
                Action::Prompt {
                    arguments: object(self, get("arguments"), "arguments"),
                    name,
                }
            }
            [] => {
                self.error(
                    node.at,
                    format!("{what} sends nothing: give it one of {}", ACTIONS.join(", ")),
                );
                return None;
            }
            many => {
                self.error(node.at, format!("{what} has {}: one action a step", many.join(" and ")));
                return None;
            }
        };
        let mut step = Step {
            name: name.unwrap_or_else(|| what.clone()),
            at: node.at,
            action,
            capture: Vec::new(),
            asserts: Vec::new(),
            output_schema: false,
            snapshot: None,
        };
        if let Some(v) = get("capture") {
            for (var, path) in self.map(v, "capture", &[]) {
                if let Some(p) = self.string(path, &format!("capture.{var}")) {
                    step.capture.push((var.to_owned(), p, path.at));
                }
            }
        }
        if let Some(v) = get("assert") {
            let items: Vec<&Node> = match &v.value {
                Value::Seq(items) => items.iter().collect(),
                _ => vec![v],
            };
            for item in items {
                let Some(text) = self.string(item, "an assertion") else {
                    continue;
                };
                match self.filter(&placeholders_as_numbers(&text)) {
                    Ok(filter) => step.asserts.push(Assertion {
                        text,
                        at: item.at,
                        filter,
                    }),
                    Err(e) => {
                        // The filter's own column within the assertion's text,
                        // from where the text starts (a quoted one starts after its quote).
                        let quote = usize::from(matches!(&item.value, Value::Scalar { quoted: true, .. }));
                        let at = Pos {
                            line: item.at.line,
                            column: item.at.column + quote + text[..e.span.start.min(text.len())].chars().count(),
                        };
                        let hint = e
                            .suggestion
                            .map(|s| format!(" (did you mean {s}?)"))
                            .unwrap_or_default();
                        self.error(at, format!("assertion {text:?}: {}{hint}", e.message));
                    }
                }
            }
        }
        if let Some(v) = get("output_schema") {
            step.output_schema = self.boolean(v, "output_schema");
        }
        if let Some(v) = get("snapshot") {
            let mut snap = Snapshot {
                name: format!("{}.json", slug(&step.name)),
                ignore: Vec::new(),
            };
            if !matches!(v.to_json(), Json::Bool(true)) {
                for (key, sv) in self.map(v, "snapshot", &["name", "ignore"]) {
                    match key {
                        "name" => snap.name = self.string(sv, "snapshot.name").unwrap_or_default(),
                        _ => snap.ignore = self.strings(sv, "snapshot.ignore"),
                    }
                }
            }
            step.snapshot = Some(snap);
        }
        Some(step)
    }

    fn contracts(&mut self, node: &Node) -> Contracts {
        const KEYS: &[&str] = &[
            "must_call",
            "must_not_call",
            "max_requests",
            "max_duration",
            "lint",
            "surface",
        ];
        let mut c = Contracts {
            at: node.at,
            ..Contracts::default()
        };
        for (key, v) in self.map(node, "contracts", KEYS) {
            match key {
                "must_call" => c.must_call = self.strings(v, "must_call"),
                "must_not_call" => c.must_not_call = self.strings(v, "must_not_call"),
                "max_requests" => c.max_requests = self.number(v, "max_requests"),
                "max_duration" => {
                    c.max_duration = self.string(v, "max_duration").and_then(|t| {
                        crate::duration::parse(&t)
                            .map_err(|e| self.error(v.at, format!("max_duration {t:?}: {e}")))
                            .ok()
                    })
                }
                "lint" => {
                    c.lint = self.string(v, "lint").and_then(|t| match t.as_str() {
                        "error" => Some(Severity::Error),
                        "warning" => Some(Severity::Warning),
                        "info" => Some(Severity::Info),
                        other => {
                            self.error(v.at, format!("lint {other:?}: error, warning or info"));
                            None
                        }
                    })
                }
                "surface" => c.surface = self.string(v, "surface"),
                _ => unreachable!("keys are checked"),
            }
        }
        c
    }

    fn evals(&mut self, node: &Node) -> Vec<Eval> {
        let Value::Seq(items) = &node.value else {
            self.error(node.at, format!("evals must be a list, not {}", node.kind()));
            return Vec::new();
        };
        items
            .iter()
            .enumerate()
            .filter_map(|(n, e)| self.eval(n + 1, e))
            .collect()
    }

    fn eval(&mut self, n: usize, node: &Node) -> Option<Eval> {
        const KEYS: &[&str] = &[
            "name",
            "prompt",
            "models",
            "runs",
            "expect_tools",
            "in_order",
            "forbid_tools",
            "expect_text",
            "pass_rate",
            "base_url",
            "replay",
            "system",
            "max_turns",
        ];
        let what = format!("eval {n}");
        let mut e = Eval {
            name: what.clone(),
            at: node.at,
            prompt: String::new(),
            models: Vec::new(),
            runs: 1,
            expect_tools: Vec::new(),
            in_order: false,
            forbid_tools: Vec::new(),
            expect_text: None,
            pass_rate: 1.0,
            base_url: None,
            replay: None,
            system: None,
            max_turns: 10,
        };
        for (key, v) in self.map(node, &what, KEYS) {
            match key {
                "name" => e.name = self.string(v, "name").unwrap_or(e.name),
                "prompt" => e.prompt = self.string(v, "prompt").unwrap_or_default(),
                "models" => e.models = self.strings(v, "models"),
                "runs" => e.runs = self.number(v, "runs").map_or(1, |r| r.clamp(1, 1000) as u32),
                "in_order" => e.in_order = self.boolean(v, "in_order"),
                "base_url" => e.base_url = self.string(v, "base_url"),
                "replay" => e.replay = self.string(v, "replay"),
                "system" => e.system = self.string(v, "system"),
                "max_turns" => e.max_turns = self.number(v, "max_turns").map_or(10, |r| r.clamp(1, 100) as usize),
                "forbid_tools" => e.forbid_tools = self.strings(v, "forbid_tools"),
                "expect_text" => {
                    e.expect_text = self.string(v, "expect_text").and_then(|t| {
                        regex::Regex::new(&t)
                            .map_err(|err| {
                                self.error(v.at, format!("expect_text {t:?} is not a regular expression: {err}"))
                            })
                            .ok()
                    })
                }
                "pass_rate" => match v.to_json().as_f64() {
                    Some(r) if (0.0..=1.0).contains(&r) => e.pass_rate = r,
                    _ => self.error(v.at, "pass_rate must be a number from 0 to 1"),
                },
                "expect_tools" => {
                    let items: Vec<&Node> = match &v.value {
                        Value::Seq(items) => items.iter().collect(),
                        _ => vec![v],
                    };
                    for item in items {
                        match &item.value {
                            Value::Scalar { text, .. } => e.expect_tools.push(ExpectedCall {
                                tool: text.clone(),
                                arguments: None,
                            }),
                            _ => {
                                let mut call = ExpectedCall {
                                    tool: String::new(),
                                    arguments: None,
                                };
                                for (k, cv) in self.map(item, "an expected call", &["name", "arguments"]) {
                                    match k {
                                        "name" => call.tool = self.string(cv, "name").unwrap_or_default(),
                                        _ => call.arguments = Some(cv.to_json()),
                                    }
                                }
                                if call.tool.is_empty() {
                                    self.error(item.at, "an expected call needs the tool's name");
                                }
                                e.expect_tools.push(call);
                            }
                        }
                    }
                }
                _ => unreachable!("keys are checked"),
            }
        }
        if e.prompt.trim().is_empty() {
            self.error(node.at, format!("{what} needs a prompt"));
        }
        if e.models.is_empty() {
            self.error(node.at, format!("{what} needs models (PROVIDER:MODEL, one or more)"));
        }
        for m in &e.models {
            // The URL may be a variable (`{{env:…}}`): any will do to check the name.
            let base = e.base_url.as_ref().map(|_| "http://127.0.0.1/");
            if let Err(err) = crate::model::provider::ModelSpec::parse(m, base) {
                self.error(node.at, format!("{what}: model {m:?}: {err}"));
            }
        }
        Some(e)
    }
}

/// An assertion with each `{{…}}` (filled in when the step runs) written
/// as a number of the same width, so its syntax is checked now and an
/// error's column stays where it is in the file.
fn placeholders_as_numbers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let Some(len) = rest[start + 2..].find("}}") else { break };
        out.push_str(&rest[..start]);
        let width = rest[start..start + 2 + len + 2].chars().count();
        out.extend(std::iter::repeat_n('0', width));
        rest = &rest[start + 2 + len + 2..];
    }
    out.push_str(rest);
    out
}

/// A step's name as a file name.
fn slug(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let s = s.split('-').filter(|p| !p.is_empty()).collect::<Vec<_>>().join("-");
    if s.is_empty() { "step".into() } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const GOOD: &str = r#"
name: everything
servers:
  everything:
    command: node
    args: [server.js, stdio]
    env: {DEBUG: "1"}
environments:
  staging: {city: Lyon}
variables:
  city: Paris
steps:
  - name: list tools
    request: tools/list
    assert:
      - count(result.tools) >= 3
    capture:
      first: result.tools[0].name
  - name: echo
    call: echo
    arguments: {message: "hi {{city}}", n: 3}
    assert:
      - result.isError == false
      - 'result.content[0].text contains "Paris"'
      - latency < 500ms
    output_schema: true
    snapshot: {ignore: [result._meta]}
  - notify: notifications/roots/list_changed
contracts:
  must_call: [echo]
  must_not_call: [delete_everything]
  max_requests: 20
  max_duration: 10s
  lint: error
evals:
  - name: weather
    prompt: What's the weather in {{city}}?
    models: [openai:gpt-4.1-mini, anthropic:claude-sonnet-4-5]
    runs: 3
    expect_tools: [{name: get_weather, arguments: {city: Paris}}, echo]
    expect_text: (?i)paris
    pass_rate: 0.66
"#;

    #[test]
    fn assertions_written_alike_share_one_parsed_filter() {
        let f = read(
            "servers: {s: {url: 'http://127.0.0.1:1/mcp'}}\nsteps:\n\
             - {call: a, assert: ['result.isError == false', 'latency < 5s']}\n\
             - {call: b, assert: ['result.isError == false']}\n\
             - {call: c, assert: ['result.isError == false ']}\n",
        )
        .unwrap_or_else(|e| panic!("{e:?}"));
        let filter = |step: usize, n: usize| &f.steps[step].asserts[n].filter;
        assert!(Arc::ptr_eq(filter(0, 0), filter(1, 0)), "the same text: one filter");
        assert!(!Arc::ptr_eq(filter(0, 0), filter(0, 1)));
        assert!(
            !Arc::ptr_eq(filter(0, 0), filter(2, 0)),
            "another text, if only by a space"
        );
        assert_eq!(f.steps[2].asserts[0].text, "result.isError == false ");
    }

    #[test]
    fn a_test_file_is_read_whole() {
        let f = read(GOOD).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(f.name.as_deref(), Some("everything"));
        assert_eq!(f.server.as_deref(), Some("everything"), "the only server");
        assert!(
            matches!(&f.servers[0].target, Target::Stdio { command, args, .. } if command == "node" && args.len() == 2)
        );
        assert_eq!(
            f.environments,
            vec![("staging".into(), vec![("city".into(), "Lyon".into())])]
        );
        assert_eq!(f.steps.len(), 3);
        assert_eq!(f.steps[0].capture[0].0, "first");
        assert_eq!(
            f.steps[1].action,
            Action::Call {
                tool: "echo".into(),
                arguments: json!({"message": "hi {{city}}", "n": 3})
            }
        );
        assert_eq!(f.steps[1].asserts.len(), 3);
        assert_eq!(f.steps[1].asserts[1].text, r#"result.content[0].text contains "Paris""#);
        assert_eq!(f.steps[1].snapshot.as_ref().unwrap().name, "echo.json");
        assert!(
            matches!(&f.steps[2].action, Action::Notify { method, params: None } if method == "notifications/roots/list_changed")
        );
        assert_eq!(f.contracts.max_duration, Some(Duration::from_secs(10)));
        assert_eq!(f.contracts.lint, Some(Severity::Error));
        let e = &f.evals[0];
        assert_eq!((e.runs, e.pass_rate, e.models.len()), (3, 0.66, 2));
        assert_eq!(e.expect_tools[0].arguments, Some(json!({"city": "Paris"})));
        assert_eq!(e.expect_tools[1].tool, "echo");
        assert!(e.expect_text.as_ref().unwrap().is_match("PARIS"));
    }

    /// Every mistake is said before anything runs, with its line and column.
    #[test]
    fn mistakes_are_said_with_their_place() {
        let text = "servers:
  a: {command: x}
steps:
  - call: echo
    asert: [x]
  - request: ping
    assert:
      - result.isError ==
  - name: nothing
contracts: {lint: loud, max_duration: soon}
evals:
  - prompt: hi
    models: [nocolon]
    expect_text: '('
";
        let errors = read(text).unwrap_err();
        let said: Vec<String> = errors.iter().map(ToString::to_string).collect();
        let has = |at: &str, what: &str| said.iter().any(|s| s.starts_with(at) && s.contains(what));
        assert!(has("5:5", r#"no key "asert" (did you mean "assert"?)"#), "{said:#?}");
        assert!(
            has("8:26", "assertion"),
            "the filter's own column within the line: {said:#?}"
        );
        assert!(has("9:5", "sends nothing"), "{said:#?}");
        assert!(has("10:19", "lint \"loud\""), "{said:#?}");
        assert!(has("10:39", "max_duration"), "{said:#?}");
        assert!(has("12:5", "model \"nocolon\""), "{said:#?}");
        assert!(has("14:18", "not a regular expression"), "{said:#?}");
        let e = read(
            "steps:
  - call: a
    request: b
",
        )
        .unwrap_err();
        assert!(e.iter().any(|e| e.message.contains("call and request")), "{e:?}");
        assert!(e.iter().any(|e| e.message.contains("no servers")), "{e:?}");
        let e = read(
            "servers:
  a: {command: x}
  b: {url: http://h}
steps: [{request: ping}]
",
        )
        .unwrap_err();
        assert!(e[0].message.contains("server: NAME"), "{e:?}");
        let e = read(
            "a: [1,
",
        )
        .unwrap_err();
        assert_eq!(e.len(), 1, "{e:?}");
    }
}
