//! `mcpscope skills list|get`: Skills over MCP (SEP-2640). Listing reads no
//! skill file; getting a skill reads its `SKILL.md`, checks it against the
//! listing (size, sha256 digest, YAML frontmatter) and only then reads the
//! other files asked for, each checked the same way. The first failed check
//! stops everything (exit 1) and nothing further of the skill is read.

use super::call::{CallArgs, SessionWork};
use super::{EraArg, TargetArgs, exit};
use clap::{Args, Subcommand};
use mcpscope_core::client::{Client, ClientError, MAX_LIST_PAGES};
use mcpscope_core::protocol::methods;
use mcpscope_core::protocol::skills::{self, FileState, SkillEntry, SkillFile, SkillLoad};
use mcpscope_core::wire::message::ErrorObject;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct SkillsArgs {
    #[command(subcommand)]
    pub action: SkillsAction,
}

#[derive(Subcommand, Debug)]
pub enum SkillsAction {
    /// List the server's skills (skills/list, every page) as JSON. Reads no skill file.
    List {
        #[command(flatten)]
        session: SessionFlags,
    },
    /// Load a skill: read its SKILL.md, verify it against the listing (size,
    /// sha256 digest, frontmatter), then read and verify the files asked for.
    /// Prints the skill and its files as JSON; exit 1 on a failed check.
    Get {
        /// The skill: its name (e.g. pdf-processing) or its SKILL.md URI.
        skill: String,
        /// A file of the skill to read after SKILL.md verified, by its path in
        /// the skill (references/FORMS.md) or its URI (repeatable).
        #[arg(long, value_name = "PATH")]
        file: Vec<String>,
        /// Read every file the skill lists (after SKILL.md verified).
        #[arg(long, conflicts_with = "file")]
        all_files: bool,
        #[command(flatten)]
        session: SessionFlags,
    },
}

/// How to reach and talk to the server (the subset of `call`'s flags a skill needs).
#[derive(Args, Debug)]
pub struct SessionFlags {
    /// Which protocol era to speak (see `mcpscope call --help`).
    #[arg(long, value_enum)]
    pub era: Option<EraArg>,
    /// The protocol version to offer (initialize) or send (modern _meta).
    #[arg(long)]
    pub protocol_version: Option<String>,
    /// Timeout for each request, in milliseconds.
    #[arg(long, default_value_t = 30_000)]
    pub timeout_ms: u64,
    /// Append every event to this JSONL capture file.
    #[arg(long, value_name = "FILE")]
    pub capture: Option<PathBuf>,
    /// Print every frame on stderr.
    #[arg(long)]
    pub trace: bool,
    #[command(flatten)]
    pub server: TargetArgs,
    #[command(flatten)]
    pub auth: super::auth::AuthArgs,
}

/// What `call` does once the session is up, for `mcpscope skills`.
#[derive(Clone, Debug)]
pub enum SkillRequest {
    List,
    Get {
        skill: String,
        files: Vec<String>,
        all_files: bool,
    },
}

pub fn run(args: SkillsArgs) -> ExitCode {
    let (request, session) = match args.action {
        SkillsAction::List { session } => (SkillRequest::List, session),
        SkillsAction::Get {
            skill,
            file,
            all_files,
            session,
        } => (
            SkillRequest::Get {
                skill,
                files: file,
                all_files,
            },
            session,
        ),
    };
    let work: SessionWork = Box::new(move |client, timeout| perform(client, &request, timeout));
    super::call::run_with(call_args(session), Some(work))
}

/// The session `mcpscope skills` runs: `call`'s machinery with its flags
/// (`skills/list` as the method, for the capability check).
pub(super) fn call_args(s: SessionFlags) -> CallArgs {
    CallArgs {
        method: Some(mcpscope_core::protocol::skills::SKILLS_LIST.to_owned()),
        params: None,
        tool_name: None,
        tool_arg: Vec::new(),
        tool_args: None,
        raw_args: false,
        uri: None,
        prompt_name: None,
        prompt_arg: Vec::new(),
        protocol_version: s.protocol_version,
        era: s.era,
        elicit_decline: false,
        elicit_accept: None,
        elicit_accept_defaults: false,
        sample_reply: None,
        task: false,
        task_timeout_ms: 300_000,
        timeout_ms: s.timeout_ms,
        otlp_endpoint: None,
        capture: s.capture,
        trace: s.trace,
        root: Vec::new(),
        no_handshake: false,
        app_info: false,
        app_extension: false,
        server: s.server,
        auth: s.auth,
    }
}

/// Runs the request on an established session; the exit status.
pub fn perform(client: &mut Client, request: &SkillRequest, timeout: Duration) -> Result<u8, ClientError> {
    let (raw, mut problems) = match list_skills(client, timeout)? {
        Ok(listed) => listed,
        Err(e) => {
            super::call::print_json(&e.to_json());
            crate::errln!("mcpscope: skills/list failed with JSON-RPC error {e}");
            return Ok(exit::FAILED);
        }
    };
    let listing = json!({ "skills": raw });
    let (entries, unread) = SkillEntry::all_from_result(&listing);
    problems.extend(unread);
    if matches!(request, SkillRequest::List) {
        // An invalid entry is listed as the server gave it, and said so here.
        for e in &entries {
            problems.extend(e.problems.iter().map(|p| format!("skill {}: {p}", e.uri)));
        }
    }
    for p in &problems {
        crate::errln!("mcpscope: skills/list: {p}");
    }
    let (wanted, files, all_files) = match request {
        SkillRequest::List => {
            super::call::print_json(&listing);
            return Ok(exit::OK);
        }
        SkillRequest::Get {
            skill,
            files,
            all_files,
        } => (skill, files, *all_files),
    };
    let Some(entry) = entries.iter().find(|e| e.is(wanted)) else {
        let names: Vec<String> = entries.iter().map(SkillEntry::name).collect();
        crate::errln!(
            "mcpscope: skills/list has no skill {wanted:?} (listed: {})",
            if names.is_empty() {
                "none".into()
            } else {
                names.join(", ")
            }
        );
        return Ok(exit::FAILED);
    };
    // Which files, decided before anything is read.
    let mut load = SkillLoad::new(entry.clone());
    if let Some(e) = load.rejected() {
        crate::errln!("mcpscope: verification failed, not using skill {}: {e}", entry.name());
        return Ok(exit::FAILED);
    }
    let manifest_uri = load.files()[0].0.uri.clone();
    let extra: Vec<String> = if all_files {
        load.files()[1..].iter().map(|(f, _)| f.uri.clone()).collect()
    } else {
        let mut extra = Vec::new();
        for f in files {
            match entry.file(f) {
                Some(file) if file.uri == manifest_uri => {}
                Some(file) if !extra.contains(&file.uri) => extra.push(file.uri.clone()),
                Some(_) => {}
                None => {
                    let listed: Vec<&str> = load.files().iter().map(|(f, _)| load.path_of(f)).collect();
                    crate::errln!(
                        "mcpscope: skill {} lists no file {f:?} (files: {})",
                        entry.name(),
                        listed.join(", ")
                    );
                    return Ok(exit::USAGE);
                }
            }
        }
        extra
    };

    let mut out_files = Vec::new();
    for uri in std::iter::once(&manifest_uri).chain(&extra) {
        let (file, bytes) = match read_verified(client, &mut load, uri, timeout)? {
            Ok(read) => read,
            Err(code) => return Ok(code),
        };
        let checked = if *uri == manifest_uri {
            "digest and frontmatter match"
        } else {
            "digest matches"
        };
        crate::errln!("mcpscope: {uri}: {} bytes, {checked} the listing", bytes.len());
        out_files.push(skills::file_json(&file, &bytes));
    }
    let frontmatter = load.frontmatter().cloned().unwrap_or_default();
    let unread: Vec<&str> = load
        .files()
        .iter()
        .filter(|(_, s)| *s == FileState::Unread)
        .map(|(f, _)| load.path_of(f))
        .collect();
    if !unread.is_empty() {
        crate::errln!(
            "mcpscope: not read (ask with --file PATH or --all-files): {}",
            unread.join(", ")
        );
    }
    super::call::print_json(&json!({
        "uri": entry.uri,
        "name": entry.name(),
        "frontmatter": frontmatter,
        "files": out_files,
    }));
    Ok(exit::OK)
}

/// The entries of every `skills/list` page, and what could not be read of them.
type Listed = (Vec<Value>, Vec<String>);

/// Every `skills/list` page (at most [`MAX_LIST_PAGES`]): the entries, and
/// what could not be read of them. Each page is read from its frame's bytes
/// when it does not parse as one JSON value (an entry nested too deeply), so
/// such an entry is still listed, without what could not be read, and said so.
fn list_skills(client: &mut Client, timeout: Duration) -> Result<Result<Listed, ErrorObject>, ClientError> {
    let mut items = Vec::new();
    let mut problems = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_LIST_PAGES {
        let params = cursor.as_ref().map(|c| json!({ "cursor": c }));
        let resp = client.request(skills::SKILLS_LIST, params, timeout)?;
        let result = match resp.outcome {
            Ok(result) => result,
            Err(e) => return Ok(Err(e)),
        };
        if let Some(page) = result.get("skills").and_then(Value::as_array) {
            items.extend(page.iter().cloned());
            cursor = result.get("nextCursor").and_then(Value::as_str).map(str::to_owned);
        } else {
            let page = skills::list_page(&resp.frame.raw);
            items.extend(page.skills);
            problems.extend(page.problems);
            cursor = page.next_cursor;
        }
        if cursor.is_none() {
            break;
        }
    }
    Ok(Ok((items, problems)))
}

/// Reads one file and checks it against the listing (by [`SkillLoad`]'s
/// rules): the file and its bytes, or the exit status when the read or the check failed
/// (already reported).
fn read_verified(
    client: &mut Client,
    load: &mut SkillLoad,
    uri: &str,
    timeout: Duration,
) -> Result<Result<(SkillFile, Vec<u8>), u8>, ClientError> {
    let file = match load.start_read(uri) {
        Ok(file) => file,
        Err(refusal) => {
            crate::errln!("mcpscope: {refusal}");
            return Ok(Err(exit::FAILED));
        }
    };
    let resp = client.request(methods::RESOURCES_READ, Some(json!({ "uri": file.uri })), timeout)?;
    let answer = match &resp.outcome {
        Ok(r) => Ok(r),
        Err(e) => {
            super::call::print_json(&e.to_json());
            Err(format!("resources/read {} failed with JSON-RPC error {e}", file.uri))
        }
    };
    let skill = load.entry().name();
    match load.finish_read(&file.uri, answer) {
        Some(FileState::Verified(bytes)) => Ok(Ok((file.clone(), bytes.clone()))),
        Some(FileState::ReadFailed(why)) => {
            crate::errln!("mcpscope: {why}");
            Ok(Err(exit::FAILED))
        }
        Some(FileState::Rejected(e)) => {
            crate::errln!("mcpscope: verification failed, not using skill {skill}: {e}");
            Ok(Err(exit::FAILED))
        }
        // finish_read ends every read it started in one of the states above.
        _ => {
            crate::errln!("mcpscope: the read of {} did not finish", file.uri);
            Ok(Err(exit::FAILED))
        }
    }
}
