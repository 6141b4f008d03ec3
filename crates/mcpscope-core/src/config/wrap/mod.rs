//! `mcpscope wrap` / `unwrap`: make a client run its servers through mcpscope,
//! by editing the client's own config file, and undo it exactly.
//!
//! A stdio server `{"command": "npx", "args": ["-y", "pkg"]}` becomes
//! `{"command": "/abs/mcpscope", "args": ["proxy", "--session", "NAME", "--", "npx", "-y", "pkg"]}`:
//! the command is the running binary's absolute path (a desktop client's
//! minimal PATH need not find mcpscope), and the original command and
//! arguments follow `--`. Only the `command` value and the start of the
//! `args` array are touched: the original command's literal moves into the
//! array as written (escapes and all), and the original elements, comments
//! and layout stay where they were, so `unwrap` restores the entry byte for
//! byte by taking the inserted text out again. When the entry had no `args`,
//! the inserted member says so with `--session=NAME` (instead of
//! `--session NAME`), and unwrap removes the whole member.
//!
//! A remote server's `url` is pointed at a local reverse proxy
//! (`http://127.0.0.1:PORT` + the original path), on a port chosen now; the
//! original URL's literal is kept in a ledger in the state directory, which
//! also says what command starts that proxy. When the ledger has lost the
//! record, unwrap takes the URL from the config's backup ([`Originals`]), but
//! only for a local URL wrap would have made from it.
//!
//! An entry already wrapped is left alone (wrapping twice never nests), a
//! file that does not parse is reported with line and column and left
//! untouched, and the file is only written (after a backup) when something
//! changed.

use crate::config::jsonc::{self, Node, strip_jsonc};
use crate::config::server_config::{ConfigError, ConfigImport, Transport, parse_config};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::Path;

/// Which servers of the file to change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    All,
    Named(Vec<String>),
}

impl Selection {
    /// The test per server, as a set: asking the list for each of a large
    /// file's servers would be quadratic.
    fn matcher(&self) -> impl Fn(&str) -> bool + '_ {
        let names: Option<HashSet<&str>> = match self {
            Selection::All => None,
            Selection::Named(names) => Some(names.iter().map(String::as_str).collect()),
        };
        move |name| names.as_ref().is_none_or(|n| n.contains(name))
    }
}

/// A remote server pointed at a local reverse proxy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteWrap {
    pub server: String,
    /// The config file, as given.
    pub config: String,
    /// The URL now in the config.
    pub local_url: String,
    /// `127.0.0.1:PORT`
    pub listen: String,
    /// The upstream URL with the config's variables expanded (what the proxy forwards to).
    pub upstream: String,
    /// The `url` value exactly as it was written, quotes included.
    pub original_literal: String,
}

impl RemoteWrap {
    /// The command that starts this server's reverse proxy.
    pub fn proxy_command(&self, mcpscope: &str) -> String {
        use crate::transport::process::shell_quote;
        format!(
            "{} proxy --listen {} --upstream {} --session {}",
            shell_quote(mcpscope),
            self.listen,
            shell_quote(&self.upstream),
            shell_quote(&self.server)
        )
    }
}

/// What wrapping needs from outside for remote servers: a free port, and what
/// earlier wraps recorded.
pub trait Remotes {
    fn allocate_port(&mut self) -> std::io::Result<u16>;
    /// The record of a remote wrapped to `local_url`, if any.
    fn lookup(&self, local_url: &str) -> Option<RemoteWrap>;
}

/// What happened to one server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    Wrapped {
        server: String,
    },
    WrappedRemote {
        server: String,
        remote: RemoteWrap,
    },
    AlreadyWrapped {
        server: String,
    },
    Unwrapped {
        server: String,
    },
    /// `from_backup`: the ledger had no record of `local_url`; the original
    /// came from the config's backup.
    UnwrappedRemote {
        server: String,
        local_url: String,
        from_backup: bool,
    },
    NotWrapped {
        server: String,
    },
    Skipped {
        server: String,
        why: String,
    },
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::Wrapped { server } => write!(f, "{server}: wrapped (runs through mcpscope proxy)"),
            Change::WrappedRemote { server, remote } => write!(
                f,
                "{server}: now {} (a reverse proxy to {})",
                remote.local_url, remote.upstream
            ),
            Change::AlreadyWrapped { server } => write!(f, "{server}: already wrapped; left as it is"),
            Change::Unwrapped { server } => write!(f, "{server}: restored"),
            Change::UnwrappedRemote {
                server,
                from_backup: false,
                ..
            } => write!(f, "{server}: restored its URL"),
            Change::UnwrappedRemote {
                server,
                from_backup: true,
                ..
            } => write!(f, "{server}: restored its URL from the config's backup"),
            Change::NotWrapped { server } => write!(f, "{server}: not wrapped; left as it is"),
            Change::Skipped { server, why } => write!(f, "{server}: skipped: {why}"),
        }
    }
}

/// The new text and what changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edit {
    pub text: String,
    pub changes: Vec<Change>,
}

impl Edit {
    pub fn changed(&self, original: &str) -> bool {
        self.text != original
    }
}

#[derive(Debug)]
pub enum WrapError {
    /// The file does not parse or is not an MCP config (with line and column where it applies).
    Config(ConfigError),
    UnknownServers {
        missing: Vec<String>,
        known: Vec<String>,
    },
    /// Neither --server nor --all.
    NothingChosen {
        known: Vec<String>,
    },
    Io(String),
    /// The ledger of remote servers (their way back) cannot be locked, read
    /// or written; the config was left as it was.
    Ledger(String),
}

impl fmt::Display for WrapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |names: &[String]| {
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", ")
            }
        };
        match self {
            WrapError::Config(e) => write!(f, "{e}"),
            WrapError::UnknownServers { missing, known } => write!(
                f,
                "no server named {} in the file; its servers are {}",
                list(missing),
                list(known)
            ),
            WrapError::NothingChosen { known } => write!(
                f,
                "say which servers: --server NAME (repeatable) or --all; the file's servers are {}",
                list(known)
            ),
            WrapError::Io(e) | WrapError::Ledger(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for WrapError {}

/// The parsed file: the import (for values with variables expanded) and the spans.
struct Parsed {
    import: ConfigImport,
    servers: Node,
}

fn parse(path_hint: &Path, text: &str) -> Result<Parsed, WrapError> {
    let import = parse_config(path_hint, text).map_err(WrapError::Config)?;
    let (blanked, _) = strip_jsonc(text);
    let root = jsonc::parse(&blanked)
        .map_err(|e| WrapError::Io(format!("cannot locate the entries: {}", crate::text::ErrorChain(&e))))?;
    let servers = root
        .get(import.format.servers_key())
        .cloned()
        .ok_or_else(|| WrapError::Io("the servers object disappeared".into()))?;
    Ok(Parsed { import, servers })
}

fn check_selection(servers: &Node, selection: &Selection) -> Result<(), WrapError> {
    if let Selection::Named(names) = selection {
        let known = || servers.members().iter().map(|m| m.key.clone()).collect::<Vec<_>>();
        if names.is_empty() {
            return Err(WrapError::NothingChosen { known: known() });
        }
        let present: HashSet<&str> = servers.members().iter().map(|m| m.key.as_str()).collect();
        let missing: Vec<String> = names
            .iter()
            .filter(|n| !present.contains(n.as_str()))
            .cloned()
            .collect();
        if !missing.is_empty() {
            return Err(WrapError::UnknownServers {
                missing,
                known: known(),
            });
        }
    }
    Ok(())
}

/// One replacement of `start..end` by `text`.
struct Splice {
    start: usize,
    end: usize,
    text: String,
}

/// Applies non-overlapping splices in one pass over the text. (Replacing
/// them one by one in place moved the rest of the text each time: quadratic
/// in the number of servers, minutes for a 100,000-server file.) Splices at
/// the same place come out in the order the one-by-one version gave: an
/// insertion before a replacement starting there, and of two insertions at
/// one point, the later one first.
fn apply(text: &str, splices: Vec<Splice>) -> String {
    let mut order: Vec<(usize, Splice)> = splices.into_iter().enumerate().collect();
    order.sort_by(|(ia, a), (ib, b)| a.start.cmp(&b.start).then(a.end.cmp(&b.end)).then(ib.cmp(ia)));
    let added: usize = order.iter().map(|(_, s)| s.text.len()).sum();
    let mut out = String::with_capacity(text.len() + added);
    let mut at = 0;
    for (_, s) in order {
        // Splices come from one parse and never overlap; clamping keeps a
        // slip from slicing backwards.
        let start = s.start.max(at);
        let end = s.end.max(start);
        out.push_str(&text[at..start]);
        out.push_str(&s.text);
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

fn lit(s: &str) -> String {
    serde_json::to_string(s).expect("strings serialise")
}

/// What every local URL wrap writes starts with; the port follows.
const LOCAL_PREFIX: &str = "http://127.0.0.1:";

/// The part of an upstream URL a wrapped entry's local URL keeps.
fn path_and_query(url: &url::Url) -> String {
    match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_owned(),
    }
}

/// Whether wrap could have written `local_url` for a server whose URL (as
/// the client sees it, variables expanded) was `upstream`.
fn is_local_url_for(local_url: &str, upstream: &str) -> bool {
    let Ok(parsed) = url::Url::parse(upstream) else {
        return false;
    };
    let Some(rest) = local_url.strip_prefix(LOCAL_PREFIX) else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    (1..=5).contains(&digits) && rest[digits..] == path_and_query(&parsed)
}

/// Each remote server's URL in a config as it was before wrap changed it
/// (its backup): where unwrap finds an original URL the ledger has lost.
#[derive(Debug, Default)]
pub struct Originals {
    /// Server name: (the URL as the client sees it, its literal as written).
    remotes: HashMap<String, (String, String)>,
}

impl Originals {
    /// Reads the remote servers of a config's text (a backup).
    pub fn parse(path_hint: &Path, text: &str) -> Result<Self, WrapError> {
        let parsed = parse(path_hint, text)?;
        let mut remotes = HashMap::new();
        for s in &parsed.import.servers {
            let Transport::Http { url, .. } = &s.transport else {
                continue;
            };
            let Some(node) = parsed.servers.get(&s.name).and_then(|e| e.get("url")) else {
                continue;
            };
            remotes.insert(s.name.clone(), (url.clone(), text[node.start..node.end].to_owned()));
        }
        Ok(Originals { remotes })
    }

    /// The literal to put back for `server`, whose URL is now `local_url`:
    /// only when wrap would have turned this backup's URL into that one.
    fn literal_for(&self, server: &str, local_url: &str) -> Option<&str> {
        let (upstream, literal) = self.remotes.get(server)?;
        is_local_url_for(local_url, upstream).then_some(literal.as_str())
    }
}

/// Whether anything in a config's text is mcpscope's doing that unwrap
/// would undo (a wrapped stdio entry, a remote the ledger or the backup
/// explains). A text with none is the user's own: a fresh backup of it
/// loses nothing an older one held.
pub fn holds_wrapped_entries(
    path_hint: &Path,
    text: &str,
    remotes: &dyn Remotes,
    originals: Option<&Originals>,
) -> Result<bool, WrapError> {
    Ok(unwrap_text(path_hint, text, &Selection::All, remotes, originals)?.changed(text))
}

/// Whether `command`'s file name is mcpscope's.
fn is_mcpscope(command: &str) -> bool {
    Path::new(command)
        .file_name()
        .is_some_and(|n| n == "mcpscope" || n == "mcpscope.exe")
}

/// Where a wrapped stdio entry keeps the original: the index of `--` in args.
fn wrapped_layout(entry: &Node) -> Option<(usize, bool)> {
    let command = entry.get("command")?.as_str()?;
    let args = entry.get("args")?.elements()?;
    if !is_mcpscope(command) || args.first()?.as_str()? != "proxy" {
        return None;
    }
    let sep = args.iter().position(|a| a.as_str() == Some("--"))?;
    args.get(sep + 1)?.as_str()?;
    let had_no_args = args[1..sep]
        .iter()
        .any(|a| a.as_str().is_some_and(|s| s.starts_with("--session=")));
    let has_session = had_no_args || args[1..sep].iter().any(|a| a.as_str() == Some("--session"));
    has_session.then_some((sep, had_no_args))
}

fn kind_of(entry: &Node) -> Option<&str> {
    entry.get("type").and_then(Node::as_str)
}

fn is_stdio(entry: &Node) -> bool {
    entry.get("command").and_then(Node::as_str).is_some() && matches!(kind_of(entry), None | Some("stdio"))
}

fn is_remote(entry: &Node) -> bool {
    entry.get("url").and_then(Node::as_str).is_some() && !is_stdio(entry)
}

/// Wraps the chosen servers of a config's text.
pub fn wrap_text(
    path_hint: &Path,
    text: &str,
    mcpscope: &str,
    selection: &Selection,
    remotes: &mut dyn Remotes,
) -> Result<Edit, WrapError> {
    let parsed = parse(path_hint, text)?;
    check_selection(&parsed.servers, selection)?;
    let mut splices = Vec::new();
    let mut changes = Vec::new();
    let chosen = selection.matcher();
    // Each remote's URL as the client sees it, by name: looked up per server,
    // so a map (a search of the list per server was quadratic).
    let expanded: HashMap<&str, &str> = parsed
        .import
        .servers
        .iter()
        .filter_map(|s| match &s.transport {
            Transport::Http { url, .. } => Some((s.name.as_str(), url.as_str())),
            Transport::Stdio(_) => None,
        })
        .collect();
    for member in parsed.servers.members() {
        let server = member.key.clone();
        if !chosen(&server) {
            continue;
        }
        let entry = &member.value;
        if entry.members().is_empty() && !matches!(entry.value, jsonc::NodeValue::Object(_)) {
            changes.push(Change::Skipped {
                server,
                why: "it is not an object".into(),
            });
            continue;
        }
        if is_stdio(entry) {
            if wrapped_layout(entry).is_some() {
                changes.push(Change::AlreadyWrapped { server });
                continue;
            }
            match wrap_stdio(text, entry, &server, mcpscope) {
                Ok(mut s) => {
                    splices.append(&mut s);
                    changes.push(Change::Wrapped { server });
                }
                Err(why) => changes.push(Change::Skipped { server, why }),
            }
        } else if is_remote(entry) {
            let url_node = entry.get("url").expect("is_remote");
            let current = url_node.as_str().unwrap_or_default();
            if remotes.lookup(current).is_some() {
                changes.push(Change::AlreadyWrapped { server });
                continue;
            }
            // The proxy forwards to the URL as the client would see it, variables expanded.
            let upstream = expanded.get(server.as_str()).copied().unwrap_or(current).to_owned();
            if upstream.contains("${") {
                changes.push(Change::Skipped {
                    server,
                    why: format!("its URL {upstream} still holds a variable mcpscope cannot fill in"),
                });
                continue;
            }
            let Ok(parsed_url) = url::Url::parse(&upstream) else {
                changes.push(Change::Skipped {
                    server,
                    why: format!("its URL {upstream:?} is not a URL"),
                });
                continue;
            };
            let port = remotes
                .allocate_port()
                .map_err(|e| WrapError::Io(format!("cannot find a free local port: {e}")))?;
            let local_url = format!("{LOCAL_PREFIX}{port}{}", path_and_query(&parsed_url));
            let remote = RemoteWrap {
                server: server.clone(),
                config: path_hint.display().to_string(),
                local_url: local_url.clone(),
                listen: format!("127.0.0.1:{port}"),
                upstream,
                original_literal: text[url_node.start..url_node.end].to_owned(),
            };
            splices.push(Splice {
                start: url_node.start,
                end: url_node.end,
                text: lit(&local_url),
            });
            changes.push(Change::WrappedRemote { server, remote });
        } else {
            changes.push(Change::Skipped {
                server,
                why: "it has neither a usable \"command\" nor a \"url\"".into(),
            });
        }
    }
    Ok(Edit {
        text: apply(text, splices),
        changes,
    })
}

fn wrap_stdio(text: &str, entry: &Node, server: &str, mcpscope: &str) -> Result<Vec<Splice>, String> {
    let command = entry.get("command").expect("is_stdio");
    let command_literal = &text[command.start..command.end];
    let mut splices = vec![Splice {
        start: command.start,
        end: command.end,
        text: lit(mcpscope),
    }];
    match entry.get("args") {
        Some(args) => {
            let Some(items) = args.elements() else {
                return Err("its \"args\" is not an array".into());
            };
            let prefix = format!(
                "{}, {}, {}, {}, {command_literal}",
                lit("proxy"),
                lit("--session"),
                lit(server),
                lit("--")
            );
            match items.first() {
                // Before the first element, so the original indentation stays in front.
                Some(first) => splices.push(Splice {
                    start: first.start,
                    end: first.start,
                    text: format!("{prefix}, "),
                }),
                None => splices.push(Splice {
                    start: args.start + 1,
                    end: args.start + 1,
                    text: prefix,
                }),
            }
        }
        None => splices.push(Splice {
            start: command.end,
            end: command.end,
            text: format!(
                ", {}: [{}, {}, {}, {command_literal}]",
                lit("args"),
                lit("proxy"),
                lit(&format!("--session={server}")),
                lit("--")
            ),
        }),
    }
    Ok(splices)
}

/// Restores the chosen (by default all) wrapped servers of a config's text.
/// `originals`: the config's backup, for remote URLs the ledger lost.
pub fn unwrap_text(
    path_hint: &Path,
    text: &str,
    selection: &Selection,
    remotes: &dyn Remotes,
    originals: Option<&Originals>,
) -> Result<Edit, WrapError> {
    let parsed = parse(path_hint, text)?;
    check_selection(&parsed.servers, selection)?;
    let mut splices = Vec::new();
    let mut changes = Vec::new();
    let chosen = selection.matcher();
    for member in parsed.servers.members() {
        let server = member.key.clone();
        if !chosen(&server) {
            continue;
        }
        let entry = &member.value;
        if is_stdio(entry) {
            let Some((sep, had_no_args)) = wrapped_layout(entry) else {
                changes.push(Change::NotWrapped { server });
                continue;
            };
            splices.append(&mut unwrap_stdio(text, entry, sep, had_no_args));
            changes.push(Change::Unwrapped { server });
        } else if is_remote(entry) {
            let url_node = entry.get("url").expect("is_remote");
            let current = url_node.as_str().unwrap_or_default();
            let written = &text[url_node.start..url_node.end];
            let restored = match remotes.lookup(current) {
                Some(remote) => Some((remote.original_literal, false)),
                None => match originals.and_then(|o| o.literal_for(&server, current)) {
                    // The backup has this very URL: the user's own local server.
                    Some(literal) if literal == written => {
                        changes.push(Change::NotWrapped { server });
                        continue;
                    }
                    found => found.map(|literal| (literal.to_owned(), true)),
                },
            };
            match restored {
                Some((literal, from_backup)) => {
                    splices.push(Splice {
                        start: url_node.start,
                        end: url_node.end,
                        text: literal,
                    });
                    changes.push(Change::UnwrappedRemote {
                        server,
                        local_url: current.to_owned(),
                        from_backup,
                    });
                }
                // What wrap writes, with no record of it (the ledger was
                // lost) and no backup that explains it.
                None if current.starts_with(LOCAL_PREFIX) => changes.push(Change::Skipped {
                    server,
                    why: "its local URL is neither in mcpscope's ledger of wrapped servers nor made from \
                          this server's URL in the config's backup, so it is left as it is"
                        .into(),
                }),
                None => changes.push(Change::NotWrapped { server }),
            }
        } else {
            changes.push(Change::NotWrapped { server });
        }
    }
    Ok(Edit {
        text: apply(text, splices),
        changes,
    })
}

fn unwrap_stdio(text: &str, entry: &Node, sep: usize, had_no_args: bool) -> Vec<Splice> {
    let command = entry.get("command").expect("is_stdio");
    let args_member = entry.members().iter().position(|m| m.key == "args").expect("wrapped");
    let args = &entry.members()[args_member].value;
    let items = args.elements().expect("wrapped");
    let original = &items[sep + 1];
    let mut splices = vec![Splice {
        start: command.start,
        end: command.end,
        text: text[original.start..original.end].to_owned(),
    }];
    if had_no_args {
        // The member wrap added right after the command; if it moved since,
        // take it out with the comma in front of it.
        let end = args.end;
        let start = if args_member > 0 {
            entry.members()[args_member - 1].value.end
        } else {
            entry.members()[args_member].key_start
        };
        let start = if text[command.end..].starts_with(", \"args\": [") {
            command.end
        } else {
            start
        };
        splices.push(Splice {
            start,
            end,
            text: String::new(),
        });
    } else {
        let start = items[0].start;
        let end = match items.get(sep + 2) {
            // What wrap inserted ends with ", " right before the first original element.
            Some(next) if text[original.end..next.start] == *", " => next.start,
            Some(next) => next.start,
            None => original.end,
        };
        splices.push(Splice {
            start,
            end,
            text: String::new(),
        });
    }
    splices
}

#[cfg(test)]
mod tests;
