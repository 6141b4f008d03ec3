//! Importing server definitions from the MCP config files people already have.
//!
//! Three shapes exist in the wild: Claude Desktop's `claude_desktop_config.json`
//! and Claude Code's project `.mcp.json` (both `{"mcpServers": {...}}`), and
//! VS Code's `.vscode/mcp.json` (`{"servers": {...}, "inputs": [...]}`). They
//! differ mainly in what `${...}` means, so the format decides how values are
//! expanded.
//!
//! One broken entry should not cost the user the rest of the file: only
//! file-level failures are a [`ConfigError`]; a bad server becomes an
//! [`ImportProblem`] next to the servers that did import.

mod expand;
mod fields;
mod problems;

pub use problems::{ConfigError, ImportProblem};

use crate::config::jsonc::strip_jsonc;
use crate::transport::process::ServerSpec;
pub use crate::transport::target::HttpKind;
use crate::transport::target::{HttpTarget, Target};
use expand::Expander;
use fields::Fields;
use problems::{describe, json_error};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigFormat {
    /// `claude_desktop_config.json` (and other `mcpServers` files, e.g. Cursor's).
    ClaudeDesktop,
    /// Claude Code's project-level `.mcp.json`.
    McpJson,
    /// VS Code's `.vscode/mcp.json`.
    VsCode,
}

impl ConfigFormat {
    pub fn label(self) -> &'static str {
        match self {
            ConfigFormat::ClaudeDesktop => "Claude Desktop",
            ConfigFormat::McpJson => "Claude Code .mcp.json",
            ConfigFormat::VsCode => "VS Code mcp.json",
        }
    }

    pub fn servers_key(self) -> &'static str {
        match self {
            ConfigFormat::ClaudeDesktop | ConfigFormat::McpJson => "mcpServers",
            ConfigFormat::VsCode => "servers",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    Stdio(ServerSpec),
    Http {
        url: String,
        headers: Vec<(String, String)>,
        kind: HttpKind,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfiguredServer {
    pub name: String,
    pub transport: Transport,
    /// Things the user should know before launching (unfilled prompts, hang risks, ...).
    pub notes: Vec<String>,
}

/// What a config file yielded: the servers that imported, and why any others did not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigImport {
    pub format: ConfigFormat,
    /// In file order.
    pub servers: Vec<ConfiguredServer>,
    pub problems: Vec<ImportProblem>,
}

/// Reads and imports a config file.
pub fn load_config(path: &Path) -> Result<ConfigImport, ConfigError> {
    let text = crate::config::wrap_file::read_regular(path).map_err(|source| ConfigError::Unreadable {
        path: path.to_owned(),
        source,
    })?;
    // Relative cwds and ${workspaceFolder} are resolved against the file's location,
    // which must not depend on where mcpscope happens to run.
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    parse_config(&path, &text)
}

/// Imports config text; `path_hint` tells `.mcp.json` from Claude Desktop and
/// anchors relative paths. `${VAR}` in `.mcp.json` reads mcpscope's environment.
pub fn parse_config(path_hint: &Path, text: &str) -> Result<ConfigImport, ConfigError> {
    parse_config_with_env(path_hint, text, &|name| std::env::var(name).ok())
}

/// [`parse_config`] with the environment lookup supplied by the caller.
pub fn parse_config_with_env(
    path_hint: &Path,
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ConfigImport, ConfigError> {
    if text.trim_start_matches('\u{feff}').trim().is_empty() {
        return Err(ConfigError::Empty);
    }
    let (json, lenient) = strip_jsonc(text);
    // The file is checked whole here, but each server's entry becomes a
    // `Value` only when it is read: a config of 200,000 servers never
    // exists as one tree (time and memory of that tree were most of an import).
    let root: Members = match serde_json::from_str(&json) {
        Ok(root) => root,
        Err(e) if e.classify() == serde_json::error::Category::Data => {
            let root: Value = serde_json::from_str(&json).map_err(json_error)?;
            return Err(ConfigError::TopLevelNotObject { found: describe(&root) });
        }
        Err(e) => return Err(json_error(e)),
    };
    let format = detect_format(path_hint, &root)?;
    let key = format.servers_key();
    let entries: Members = match root.get(key).map(|raw| serde_json::from_str(raw.get())) {
        Some(Ok(entries)) => entries,
        _ => {
            let found = root.value(key);
            return Err(ConfigError::ServersNotObject {
                key,
                found: describe(&found),
            });
        }
    };
    let entries = &entries.0;

    let mut problems = Vec::new();
    if lenient && format != ConfigFormat::VsCode {
        // VS Code reads mcp.json as JSONC; the Claude apps do not.
        problems.push(ImportProblem::NotStrictJson { format });
    }
    if entries.is_empty() {
        problems.push(ImportProblem::NoServers { key });
    }

    let expander = Expander {
        format,
        env,
        workspace: workspace_folder(path_hint),
        inputs: if format == ConfigFormat::VsCode {
            declared_inputs(&root)
        } else {
            HashMap::new()
        },
    };
    let config_dir = path_hint.parent().filter(|d| !d.as_os_str().is_empty());
    let mut servers = Vec::with_capacity(entries.len());
    for (name, entry) in entries {
        // Already checked as JSON with the whole file.
        let entry: Value = serde_json::from_str(entry.get()).unwrap_or(Value::Null);
        let Value::Object(entry) = entry else {
            problems.push(ImportProblem::EntryNotObject {
                server: name.to_string(),
                found: describe(&entry),
            });
            continue;
        };
        match parse_server(name, &entry, &expander, config_dir) {
            Ok(server) => servers.push(server),
            Err(mut errs) => problems.append(&mut errs),
        }
    }
    Ok(ConfigImport {
        format,
        servers,
        problems,
    })
}

/// The members of a JSON object in file order, each value as its JSON text
/// (borrowed from the file); a repeated key keeps its first place and its
/// last value, as `serde_json::Map` does.
struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for Members<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
            type Value = Members<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<Members<'a>, M::Error> {
                let mut members: Vec<(Cow<'a, str>, &'a RawValue)> = Vec::with_capacity(map.size_hint().unwrap_or(0));
                let mut at: HashMap<Cow<'a, str>, usize> = HashMap::new();
                while let Some((key, value)) = map.next_entry::<Cow<'a, str>, &'a RawValue>()? {
                    match at.get(&key) {
                        Some(&i) => members[i].1 = value,
                        None => {
                            at.insert(key.clone(), members.len());
                            members.push((key, value));
                        }
                    }
                }
                Ok(Members(members))
            }
        }
        d.deserialize_map(Visit(std::marker::PhantomData))
    }
}

impl<'a> Members<'a> {
    fn get(&self, key: &str) -> Option<&'a RawValue> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }

    fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(k, _)| k.as_ref())
    }

    /// A member as a `Value` (small members only: `inputs`, a wrong-typed servers key).
    fn value(&self, key: &str) -> Value {
        self.get(key)
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
            .unwrap_or(Value::Null)
    }
}

fn detect_format(path_hint: &Path, root: &Members<'_>) -> Result<ConfigFormat, ConfigError> {
    let in_vscode_dir = path_hint.parent().and_then(Path::file_name) == Some(".vscode".as_ref());
    let mcp_servers = root.contains_key("mcpServers");
    if root.contains_key("servers") && (!mcp_servers || in_vscode_dir) {
        return Ok(ConfigFormat::VsCode);
    }
    if !mcp_servers {
        return Err(ConfigError::NoServersKey {
            keys: root.keys().map(str::to_owned).collect(),
        });
    }
    // Both files use the same key; only the name tells them apart.
    Ok(if path_hint.file_name() == Some(".mcp.json".as_ref()) {
        ConfigFormat::McpJson
    } else {
        ConfigFormat::ClaudeDesktop
    })
}

/// `${workspaceFolder}` is the folder holding `.vscode`; elsewhere (a user-level
/// mcp.json) there is no workspace to point at.
fn workspace_folder(path_hint: &Path) -> Option<PathBuf> {
    let dir = path_hint.parent()?;
    if dir.file_name()? != ".vscode" {
        return None;
    }
    let workspace = dir.parent()?;
    // A relative hint like `.vscode/mcp.json` means the current directory.
    Some(if workspace.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        workspace.to_owned()
    })
}

/// VS Code input ids with their descriptions, to tell the user what each prompt asks for.
fn declared_inputs(root: &Members<'_>) -> HashMap<String, Option<String>> {
    let Value::Array(inputs) = root.value("inputs") else {
        return HashMap::new();
    };
    inputs
        .iter()
        .filter_map(|input| {
            let id = input.get("id")?.as_str()?;
            let description = input.get("description").and_then(Value::as_str).map(str::to_owned);
            Some((id.to_owned(), description))
        })
        .collect()
}

fn parse_server(
    name: &str,
    entry: &Map<String, Value>,
    expander: &Expander,
    config_dir: Option<&Path>,
) -> Result<ConfiguredServer, Vec<ImportProblem>> {
    let mut fields = Fields::new(name, entry);
    let mut notes = Vec::new();
    let kind = fields.string("type");
    if !fields.problems.is_empty() {
        return Err(fields.problems);
    }
    let has_command = fields.present("command");
    let has_url = fields.present("url");
    let http_kind = match kind.as_deref() {
        None if has_command => {
            if has_url {
                notes.push("has both \"command\" and \"url\" but no \"type\"; mcpscope launches the command".into());
            }
            None
        }
        None if has_url => Some(HttpKind::StreamableHttp),
        None => {
            return Err(vec![ImportProblem::NoCommandOrUrl {
                server: name.to_owned(),
                keys: entry.keys().cloned().collect(),
            }]);
        }
        Some("stdio") => None,
        Some("http" | "streamable-http" | "streamableHttp") => Some(HttpKind::StreamableHttp),
        Some("sse") => Some(HttpKind::Sse),
        Some(other) => {
            return Err(vec![ImportProblem::UnknownType {
                server: name.to_owned(),
                kind: other.to_owned(),
            }]);
        }
    };
    let (field, has_field) = if http_kind.is_some() {
        ("url", has_url)
    } else {
        ("command", has_command)
    };
    if let Some(kind) = kind.as_ref().filter(|_| !has_field) {
        return Err(vec![ImportProblem::MissingForType {
            server: name.to_owned(),
            kind: kind.clone(),
            field,
        }]);
    }

    let transport = match http_kind {
        None => {
            let program = fields.non_empty_string("command");
            let args = fields.string_list("args");
            let env = fields.string_map("env");
            let cwd = fields.string("cwd");
            let env_file = fields.string("envFile");
            if !fields.problems.is_empty() {
                return Err(fields.problems);
            }
            let mut spec = ServerSpec {
                program: expander.expand(&"command", &program.unwrap_or_default(), &mut notes),
                ..ServerSpec::default()
            };
            for (i, arg) in args.iter().enumerate() {
                spec.args
                    .push(expander.expand(&format_args!("args[{i}]"), arg, &mut notes));
            }
            for (key, value) in env {
                let value = expander.expand(&format_args!("env {key}"), &value, &mut notes);
                spec.env.push((key, value));
            }
            spec.cwd = cwd.map(|cwd| resolve_cwd(&expander.expand(&"cwd", &cwd, &mut notes), config_dir));
            if let Some(env_file) = env_file {
                let env_file = expander.expand(&"envFile", &env_file, &mut notes);
                notes.push(format!(
                    "loads variables from envFile {env_file}, which mcpscope does not read; \
                     copy the ones the server needs into \"env\""
                ));
            }
            if npx_without_yes(&spec) {
                notes.push(
                    "runs npx without -y; depending on the npm version, npx can stop at an \"Ok to proceed?\" \
                     prompt for a package it has not installed yet, and the server then seems to hang; \
                     add \"-y\" before the package name"
                        .into(),
                );
            }
            Transport::Stdio(spec)
        }
        Some(http_kind) => {
            let url = fields.non_empty_string("url");
            let headers = fields.string_map("headers");
            if !fields.problems.is_empty() {
                return Err(fields.problems);
            }
            let url = expander.expand(&"url", &url.unwrap_or_default(), &mut notes);
            if kind.is_none() && url.trim_end_matches('/').ends_with("/sse") {
                notes.push(
                    "has no \"type\", so mcpscope assumes Streamable HTTP, but the URL ends in /sse; \
                     if connecting fails, set \"type\": \"sse\""
                        .into(),
                );
            }
            let headers = headers
                .into_iter()
                .map(|(key, value)| {
                    let value = expander.expand(&format_args!("header {key}"), &value, &mut notes);
                    (key, value)
                })
                .collect();
            Transport::Http {
                url,
                headers,
                kind: http_kind,
            }
        }
    };
    Ok(ConfiguredServer {
        name: name.to_owned(),
        transport,
        notes,
    })
}

fn resolve_cwd(cwd: &str, config_dir: Option<&Path>) -> PathBuf {
    let path = PathBuf::from(cwd);
    match config_dir {
        // An unexpanded placeholder is not a real relative path; joining would hide it.
        Some(dir) if path.is_relative() && !cwd.contains("${") => dir.join(path),
        _ => path,
    }
}

/// npx prompts before installing a missing package unless told yes, by flag or npm config.
fn npx_without_yes(spec: &ServerSpec) -> bool {
    let stem = |s: &str| {
        Path::new(s)
            .file_stem()
            .map(|s| s.to_string_lossy().to_ascii_lowercase())
    };
    let is_npx = |s: &str| stem(s).as_deref() == Some("npx");
    // On Windows, Claude Desktop configs usually say `cmd /c npx ...`.
    let uses_npx =
        is_npx(&spec.program) || (stem(&spec.program).as_deref() == Some("cmd") && spec.args.iter().any(|a| is_npx(a)));
    let yes_flag = spec.args.iter().any(|a| a == "-y" || a == "--yes");
    let yes_env = spec
        .env
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("npm_config_yes") && v == "true");
    uses_npx && !yes_flag && !yes_env
}

/// A server entry from a config file (Claude Desktop, .mcp.json, VS Code)
/// as something a session can connect to.
impl From<Transport> for Target {
    fn from(t: Transport) -> Self {
        match t {
            Transport::Stdio(spec) => Target::Stdio(spec),
            Transport::Http { url, headers, kind } => Target::Http(HttpTarget {
                headers,
                ..HttpTarget::new(url, kind)
            }),
        }
    }
}

impl From<&Transport> for Target {
    fn from(t: &Transport) -> Self {
        Target::from(t.clone())
    }
}

#[cfg(test)]
mod tests;
