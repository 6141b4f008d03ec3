//! What can go wrong importing a config file: the whole file ([`ConfigError`])
//! or one entry in it ([`ImportProblem`]), each worded for the user to act on.

use super::ConfigFormat;
use serde_json::Value;
use std::fmt;
use std::path::PathBuf;

/// The file as a whole could not be used.
#[derive(Debug)]
pub enum ConfigError {
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    Empty,
    InvalidJson {
        line: usize,
        column: usize,
        message: String,
    },
    TopLevelNotObject {
        found: String,
    },
    NoServersKey {
        keys: Vec<String>,
    },
    ServersNotObject {
        key: &'static str,
        found: String,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Unreadable { path, source } => write!(f, "cannot read {}: {source}", path.display()),
            ConfigError::Empty => {
                write!(
                    f,
                    "the file is empty; an MCP config is a JSON object such as {{\"mcpServers\": {{}}}}"
                )
            }
            ConfigError::InvalidJson { line, column, message } => {
                write!(f, "not valid JSON at line {line}, column {column}: {message}")
            }
            ConfigError::TopLevelNotObject { found } => write!(
                f,
                "the file holds {found}, but an MCP config must be a JSON object such as {{\"mcpServers\": {{...}}}}"
            ),
            ConfigError::NoServersKey { keys } => {
                write!(
                    f,
                    "found neither \"mcpServers\" (Claude Desktop, .mcp.json) nor \"servers\" (VS Code) at the top level"
                )?;
                if keys.is_empty() {
                    return write!(f, "; the object is empty");
                }
                // settings-style files can have hundreds of keys; a few are enough to recognise the file.
                const SHOWN: usize = 8;
                let shown: Vec<String> = keys.iter().take(SHOWN).map(|k| format!("\"{k}\"")).collect();
                write!(f, "; the keys there are {}", shown.join(", "))?;
                if keys.len() > SHOWN {
                    write!(f, " and {} more", keys.len() - SHOWN)?;
                }
                Ok(())
            }
            ConfigError::ServersNotObject { key, found } => write!(
                f,
                "\"{key}\" is {found}, but it must be an object mapping each server's name to its definition"
            ),
        }
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConfigError::Unreadable { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Something the user should fix in the file; unlike a [`ConfigError`], it does
/// not stop the rest of the file from importing. Entry problems skip that server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImportProblem {
    NoServers {
        key: &'static str,
    },
    /// The file only parsed after dropping comments, trailing commas or a BOM.
    NotStrictJson {
        format: ConfigFormat,
    },
    EntryNotObject {
        server: String,
        found: String,
    },
    NoCommandOrUrl {
        server: String,
        keys: Vec<String>,
    },
    /// `type` names a transport whose required field is missing.
    MissingForType {
        server: String,
        kind: String,
        field: &'static str,
    },
    UnknownType {
        server: String,
        kind: String,
    },
    /// `field` is a path such as `args[1]` or `env.PORT`.
    WrongType {
        server: String,
        field: String,
        expected: &'static str,
        found: String,
    },
}

impl fmt::Display for ImportProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImportProblem::NoServers { key } => write!(f, "no servers defined: \"{key}\" is empty"),
            ImportProblem::NotStrictJson { format } => write!(
                f,
                "the file has comments, trailing commas or a byte-order mark; mcpscope read it anyway, \
                 but {} expects strict JSON and may reject it",
                format.label()
            ),
            ImportProblem::EntryNotObject { server, found } => write!(
                f,
                "server \"{server}\" is {found}, but each server must be an object with \"command\" or \"url\"; skipped"
            ),
            ImportProblem::NoCommandOrUrl { server, keys } => {
                write!(
                    f,
                    "server \"{server}\" has neither \"command\" (to launch a local program) nor \"url\" \
                     (to reach a remote server)"
                )?;
                if keys.is_empty() {
                    write!(f, "; its definition is empty")?;
                } else {
                    let keys: Vec<String> = keys.iter().map(|k| format!("\"{k}\"")).collect();
                    write!(f, "; it only has {}", keys.join(", "))?;
                }
                write!(f, "; skipped")
            }
            ImportProblem::MissingForType { server, kind, field } => {
                write!(
                    f,
                    "server \"{server}\" has \"type\": \"{kind}\" but no \"{field}\"; skipped"
                )
            }
            ImportProblem::UnknownType { server, kind } => write!(
                f,
                "server \"{server}\" has \"type\": \"{kind}\", which mcpscope cannot connect to \
                 (it knows \"stdio\", \"http\" and \"sse\"); skipped"
            ),
            ImportProblem::WrongType {
                server,
                field,
                expected,
                found,
            } => {
                write!(f, "server \"{server}\": {field} is {found}, but it must be {expected}")?;
                // The most common slip is an unquoted port number or flag in env/args.
                if expected.starts_with("a string") && (found.starts_with("a number") || found.starts_with("a boolean"))
                {
                    write!(f, " (put the value in quotes)")?;
                }
                write!(f, "; skipped")
            }
        }
    }
}

pub(super) fn json_error(e: serde_json::Error) -> ConfigError {
    let full = e.to_string();
    // serde_json appends the position, which we report separately.
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let message = match e.classify() {
        serde_json::error::Category::Eof => "the file ends before the JSON is complete (is a } or ] missing?)".into(),
        _ => full.strip_suffix(&suffix).unwrap_or(&full).to_owned(),
    };
    ConfigError::InvalidJson {
        line: e.line(),
        column: e.column(),
        message,
    }
}

/// A short description of a JSON value for messages: its kind and, for scalars, the value.
pub(super) fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("a boolean ({b})"),
        Value::Number(n) => format!("a number ({n})"),
        Value::String(s) if s.chars().count() > 40 => {
            format!("a string (\"{}...\")", s.chars().take(40).collect::<String>())
        }
        Value::String(s) => format!("a string (\"{s}\")"),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}
