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
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[derive(Default)]
    struct FakeRemotes {
        next_port: u16,
        known: HashMap<String, RemoteWrap>,
    }

    impl Remotes for FakeRemotes {
        fn allocate_port(&mut self) -> std::io::Result<u16> {
            self.next_port += 1;
            Ok(40000 + self.next_port)
        }
        fn lookup(&self, local_url: &str) -> Option<RemoteWrap> {
            self.known.get(local_url).cloned()
        }
    }

    impl FakeRemotes {
        fn remember(&mut self, edit: &Edit) {
            for c in &edit.changes {
                if let Change::WrappedRemote { remote, .. } = c {
                    self.known.insert(remote.local_url.clone(), remote.clone());
                }
            }
        }
    }

    const BIN: &str = "/opt/mcp scope/bin/mcpscope";

    fn round_trip(path: &str, text: &str) -> (String, Vec<Change>) {
        let mut remotes = FakeRemotes::default();
        let wrapped = wrap_text(Path::new(path), text, BIN, &Selection::All, &mut remotes).unwrap();
        remotes.remember(&wrapped);
        // The result is still a config that imports.
        parse_config(Path::new(path), &wrapped.text).unwrap();
        let again = wrap_text(Path::new(path), &wrapped.text, BIN, &Selection::All, &mut remotes).unwrap();
        assert_eq!(again.text, wrapped.text, "wrapping twice changes nothing");
        assert!(
            again
                .changes
                .iter()
                .all(|c| matches!(c, Change::AlreadyWrapped { .. } | Change::Skipped { .. })),
            "{:?}",
            again.changes
        );
        let unwrapped = unwrap_text(Path::new(path), &wrapped.text, &Selection::All, &remotes, None).unwrap();
        assert_eq!(unwrapped.text, text, "unwrap restores every byte");
        (wrapped.text, wrapped.changes)
    }

    #[test]
    fn claude_desktop_entries_run_through_the_proxy_and_come_back_exactly() {
        let text = r#"{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": [
        "-y",
        "@modelcontextprotocol/server-filesystem",
        "/Users/me/Desktop"
      ]
    },
    "weather": { "command": "C:\\tools\\weather.exe", "env": { "API_KEY": "k" } },
    "empty": {"command": "srv", "args": []}
  },
  "globalShortcut": "Ctrl+Space"
}
"#;
        let (wrapped, changes) = round_trip("claude_desktop_config.json", text);
        assert_eq!(changes.len(), 3);
        let import = parse_config(Path::new("claude_desktop_config.json"), &wrapped).unwrap();
        let spec = |name: &str| match &import.servers.iter().find(|s| s.name == name).unwrap().transport {
            Transport::Stdio(s) => s.clone(),
            other => panic!("{other:?}"),
        };
        let fs = spec("filesystem");
        assert_eq!(fs.program, BIN);
        assert_eq!(
            fs.args,
            [
                "proxy",
                "--session",
                "filesystem",
                "--",
                "npx",
                "-y",
                "@modelcontextprotocol/server-filesystem",
                "/Users/me/Desktop"
            ]
        );
        assert_eq!(
            spec("weather").args,
            ["proxy", "--session=weather", "--", "C:\\tools\\weather.exe"]
        );
        assert_eq!(spec("weather").env, [("API_KEY".to_owned(), "k".to_owned())]);
        assert_eq!(spec("empty").args, ["proxy", "--session", "empty", "--", "srv"]);
        // The original layout is still there around the inserted text.
        assert!(
            wrapped
                .contains("\"args\": [\n        \"proxy\", \"--session\", \"filesystem\", \"--\", \"npx\", \"-y\",\n"),
            "{wrapped}"
        );
        assert!(wrapped.contains("\"globalShortcut\": \"Ctrl+Space\""));
    }

    #[test]
    fn vscode_jsonc_keeps_comments_inputs_and_trailing_commas() {
        let text = r#"// VS Code MCP servers
{
  "inputs": [
    { "type": "promptString", "id": "token", "description": "GitHub token", "password": true },
  ],
  "servers": {
    /* local */
    "fetch": {
      "type": "stdio",
      "command": "uvx", // from PyPI
      "args": ["mcp-server-fetch", /* pinned */ "--ignore-robots-txt",],
      "env": { "TOKEN": "${input:token}" },
    },
    "github": {
      "type": "http",
      "url": "https://api.githubcopilot.com/mcp/",
      "headers": { "Authorization": "Bearer ${input:token}" }
    },
  },
}
"#;
        let (wrapped, changes) = round_trip("/w/.vscode/mcp.json", text);
        assert!(wrapped.starts_with("// VS Code MCP servers\n"));
        assert!(wrapped.contains("/* local */"));
        assert!(wrapped.contains("\"--ignore-robots-txt\",]"));
        assert!(wrapped.contains("// from PyPI"));
        let Change::WrappedRemote { remote, .. } = &changes[1] else {
            panic!("{changes:?}")
        };
        assert_eq!(remote.upstream, "https://api.githubcopilot.com/mcp/");
        assert_eq!(remote.local_url, "http://127.0.0.1:40001/mcp/");
        assert_eq!(remote.original_literal, "\"https://api.githubcopilot.com/mcp/\"");
        assert!(wrapped.contains("\"url\": \"http://127.0.0.1:40001/mcp/\""));
        assert!(remote.proxy_command(BIN).ends_with(
            "proxy --listen 127.0.0.1:40001 --upstream https://api.githubcopilot.com/mcp/ --session github"
        ));
    }

    #[test]
    fn mcp_json_and_cursor_files_with_escapes_and_variables() {
        let text = "{\"mcpServers\":{\"a\u{e9}\":{\"command\":\"/bin/\\u0073h\",\"args\":[\"-c\",\"echo \\\"${HOME}\\\"\"]},\n\"remote\":{\"type\":\"http\",\"url\":\"${BASE:-https://example.com}/mcp\"}}}";
        let (wrapped, changes) = round_trip("/p/.mcp.json", text);
        // The original literal moved verbatim, escapes included.
        assert!(wrapped.contains("\"--\", \"/bin/\\u0073h\", \"-c\""), "{wrapped}");
        let Change::WrappedRemote { remote, .. } = &changes[1] else {
            panic!("{changes:?}")
        };
        // The proxy needs the expanded URL; unwrap puts the variable back.
        assert!(remote.upstream.ends_with("/mcp") && !remote.upstream.contains("${"));
        round_trip(
            "/home/me/.cursor/mcp.json",
            r#"{"mcpServers": {"x": {"url": "http://localhost:3000/sse"}}}"#,
        );
    }

    #[test]
    fn only_the_chosen_servers_change() {
        let text = r#"{"mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}}}"#;
        let mut r = FakeRemotes::default();
        let e = wrap_text(
            Path::new("c.json"),
            text,
            BIN,
            &Selection::Named(vec!["b".into()]),
            &mut r,
        )
        .unwrap();
        assert!(
            e.text
                .starts_with(r#"{"mcpServers": {"a": {"command": "a"}, "b": {"command": "/opt"#)
        );
        let u = unwrap_text(Path::new("c.json"), &e.text, &Selection::All, &r, None).unwrap();
        assert_eq!(u.text, text);
        assert_eq!(
            u.changes,
            [
                Change::NotWrapped { server: "a".into() },
                Change::Unwrapped { server: "b".into() }
            ]
        );
    }

    #[test]
    fn errors_name_the_place_and_the_servers() {
        let mut r = FakeRemotes::default();
        let e = wrap_text(
            Path::new("c.json"),
            "{\n  \"mcpServers\": {\n    \"a\": {\"command\" \"x\"}\n  }\n}",
            BIN,
            &Selection::All,
            &mut r,
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "not valid JSON at line 3, column 21: expected `:`");
        let text = r#"{"mcpServers": {"a": {"command": "a"}, "b": {"url": "https://x/mcp"}}}"#;
        let e = wrap_text(
            Path::new("c.json"),
            text,
            BIN,
            &Selection::Named(vec!["c".into()]),
            &mut r,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "no server named \"c\" in the file; its servers are \"a\", \"b\""
        );
        let e = wrap_text(Path::new("c.json"), text, BIN, &Selection::Named(vec![]), &mut r).unwrap_err();
        assert!(e.to_string().starts_with("say which servers"), "{e}");
    }

    #[test]
    fn a_hand_reformatted_wrapped_entry_still_unwraps_to_the_same_values() {
        let text = r#"{"mcpServers": {"a": {"command": "node", "args": ["s.js"]}}}"#;
        let mut r = FakeRemotes::default();
        let e = wrap_text(Path::new("c.json"), text, BIN, &Selection::All, &mut r).unwrap();
        let reformatted =
            serde_json::to_string_pretty(&serde_json::from_str::<serde_json::Value>(&e.text).unwrap()).unwrap();
        let u = unwrap_text(Path::new("c.json"), &reformatted, &Selection::All, &r, None).unwrap();
        let v: serde_json::Value = serde_json::from_str(&u.text).unwrap();
        assert_eq!(v, serde_json::from_str::<serde_json::Value>(text).unwrap());
    }

    /// `apply` before it became one pass: each splice in place, last first.
    fn apply_one_by_one(text: &str, mut splices: Vec<Splice>) -> String {
        splices.sort_by(|a, b| b.start.cmp(&a.start).then(b.end.cmp(&a.end)));
        let mut out = text.to_owned();
        for s in splices {
            out.replace_range(s.start..s.end, &s.text);
        }
        out
    }

    #[test]
    fn one_pass_splicing_gives_what_splicing_one_by_one_gave() {
        let text = "0123456789abcdef";
        let sp = |start, end, text: &str| Splice {
            start,
            end,
            text: text.into(),
        };
        let cases: Vec<Vec<(usize, usize, &str)>> = vec![
            vec![],
            vec![(0, 0, "<")],
            vec![(16, 16, ">")],
            vec![(2, 4, "X"), (4, 4, "I"), (10, 12, "")],
            // An insertion where a replacement starts, and two insertions at one point.
            vec![(5, 8, "R"), (5, 5, "i"), (9, 9, "first"), (9, 9, "second")],
            vec![(15, 16, "F"), (0, 1, "Z"), (7, 7, "mid"), (8, 10, "")],
        ];
        for case in cases {
            let make = || case.iter().map(|&(a, b, t)| sp(a, b, t)).collect::<Vec<_>>();
            assert_eq!(apply(text, make()), apply_one_by_one(text, make()), "{case:?}");
        }
    }

    /// A file of `n` servers of every shape wrap handles.
    fn many_servers(n: usize) -> String {
        let mut text = String::from("{\n  // generated\n  \"mcpServers\": {\n");
        for i in 0..n {
            let entry = match i % 5 {
                0 => format!(r#"{{ "command": "npx", "args": ["-y", "pkg-{i}"], "env": {{"K": "v{i}"}} }}"#),
                1 => format!(r#"{{"command": "srv-{i}"}}"#),
                2 => format!(r#"{{"type": "http", "url": "https://h{i}.example.com/mcp?x={i}"}}"#),
                3 => format!(r#"{{"command": "C:\\bin\\s{i}.exe", "args": []}}"#),
                _ => "42".to_owned(),
            };
            let comma = if i + 1 < n { "," } else { "" };
            text.push_str(&format!("    \"s{i}\": {entry}{comma}\n"));
        }
        text.push_str("  }\n}\n");
        text
    }

    #[test]
    fn wrapping_every_server_at_once_is_wrapping_them_one_at_a_time() {
        let text = many_servers(250);
        let path = Path::new("c.json");
        let mut once = FakeRemotes::default();
        let all = wrap_text(path, &text, BIN, &Selection::All, &mut once).unwrap();
        let mut each = FakeRemotes::default();
        let mut stepwise = text.clone();
        for i in 0..250 {
            let e = wrap_text(
                path,
                &stepwise,
                BIN,
                &Selection::Named(vec![format!("s{i}")]),
                &mut each,
            )
            .unwrap();
            each.remember(&e);
            stepwise = e.text;
        }
        assert_eq!(all.text, stepwise);
        once.remember(&all);
        let back = unwrap_text(path, &all.text, &Selection::All, &once, None).unwrap();
        assert_eq!(back.text, text);
    }

    #[test]
    fn a_wrapped_url_the_ledger_forgot_is_reported_and_left() {
        let text = r#"{"mcpServers": {"r": {"url": "https://h/mcp"}, "mine": {"url": "http://127.0.0.1:8080/mcp"}}}"#;
        let mut r = FakeRemotes::default();
        let e = wrap_text(
            Path::new("c.json"),
            text,
            BIN,
            &Selection::Named(vec!["r".into()]),
            &mut r,
        )
        .unwrap();
        // No remember(): the record is lost, and there is no backup.
        let u = unwrap_text(Path::new("c.json"), &e.text, &Selection::All, &r, None).unwrap();
        assert_eq!(u.text, e.text);
        assert!(
            u.changes
                .iter()
                .all(|c| matches!(c, Change::Skipped { why, .. } if why.contains("backup"))),
            "{:?}",
            u.changes
        );
        assert!(!holds_wrapped_entries(Path::new("c.json"), &e.text, &r, None).unwrap());
    }

    #[test]
    fn the_backup_gives_back_a_url_the_ledger_forgot() {
        let text = "{\"mcpServers\": {\"r\": {\"type\": \"http\", \"url\": \"${BASE:-https://h.example}/mcp?x=1\"},\n \"mine\": {\"url\": \"http://127.0.0.1:8080/mcp\"}, \"s\": {\"command\": \"s\"}}}";
        let path = Path::new("/p/.mcp.json");
        let mut r = FakeRemotes::default();
        let e = wrap_text(path, text, BIN, &Selection::All, &mut r).unwrap();
        let originals = Originals::parse(path, text).unwrap();
        let u = unwrap_text(path, &e.text, &Selection::All, &r, Some(&originals)).unwrap();
        assert_eq!(u.text, text, "the literal comes back as written, variable and all");
        let from_backup: Vec<&str> = u
            .changes
            .iter()
            .filter_map(|c| match c {
                Change::UnwrappedRemote {
                    server,
                    from_backup: true,
                    ..
                } => Some(server.as_str()),
                _ => None,
            })
            .collect();
        // "mine" was wrapped too (to another port), and is restored the same way.
        assert_eq!(from_backup, ["r", "mine"], "{:?}", u.changes);
        assert!(holds_wrapped_entries(path, &e.text, &r, Some(&originals)).unwrap());
        assert!(!holds_wrapped_entries(path, text, &r, Some(&originals)).unwrap());
        // A local URL the backup's URL does not explain (another path, no
        // port) is not replaced by it.
        for other in ["http://127.0.0.1:41234/other?x=1", "http://127.0.0.1:/mcp?x=1"] {
            let at = e.text.find("http://127.0.0.1:").unwrap();
            let end = at + e.text[at..].find('"').unwrap();
            let moved = format!("{}{other}{}", &e.text[..at], &e.text[end..]);
            let u = unwrap_text(path, &moved, &Selection::Named(vec!["r".into()]), &r, Some(&originals)).unwrap();
            assert_eq!(u.text, moved, "{other}");
            assert!(matches!(&u.changes[..], [Change::Skipped { .. }]), "{:?}", u.changes);
        }
    }
}
