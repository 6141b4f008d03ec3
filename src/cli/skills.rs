//! `mcpscope skills list|get`: Skills over MCP (SEP-2640). Listing reads no
//! skill file; getting a skill reads its `SKILL.md`, checks it against the
//! listing (size, sha256 digest, YAML frontmatter) and only then reads the
//! other files asked for, each checked the same way. The first failed check
//! stops everything (exit 1) and nothing further of the skill is read.

use super::call::CallArgs;
use super::{EraArg, TargetArgs, exit};
use clap::{Args, Subcommand};
use mcpscope_core::client::{Client, ClientError};
use mcpscope_core::protocol::methods;
use mcpscope_core::protocol::skills::{self, SkillEntry, SkillFile};
use serde_json::json;
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
    super::call::run(CallArgs::for_skills(request, session))
}

/// Runs the request on an established session; the exit status.
pub fn perform(client: &mut Client, request: &SkillRequest, timeout: Duration) -> Result<u8, ClientError> {
    let raw = match client.list_all(skills::SKILLS_LIST, "skills", timeout)? {
        Ok(raw) => raw,
        Err(e) => {
            super::call::print_json(&e.to_json());
            eprintln!("mcpscope: skills/list failed with JSON-RPC error {e}");
            return Ok(exit::FAILED);
        }
    };
    let listing = json!({ "skills": raw });
    let (entries, problems) = SkillEntry::all_from_result(&listing);
    for p in &problems {
        eprintln!("mcpscope: skills/list: {p}");
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
        eprintln!(
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
    let manifest = entry.manifest();
    let mut extra: Vec<SkillFile> = Vec::new();
    if all_files {
        extra.extend(entry.files.iter().filter(|f| f.uri != manifest.uri).cloned());
    }
    for f in files {
        match entry.file(f) {
            Some(file) if file.uri == manifest.uri => {}
            Some(file) => extra.push(file.clone()),
            None => {
                let listed: Vec<&str> = entry
                    .files
                    .iter()
                    .map(|f| f.uri.strip_prefix(entry.base()).unwrap_or(&f.uri))
                    .collect();
                eprintln!(
                    "mcpscope: skill {} lists no file {f:?} (files: {})",
                    entry.name(),
                    listed.join(", ")
                );
                return Ok(exit::USAGE);
            }
        }
    }

    let mut out_files = Vec::new();
    let (bytes, code) = read_verified(client, &manifest, timeout)?;
    let Some(bytes) = bytes else { return Ok(code) };
    let text = match String::from_utf8(bytes.clone()) {
        Ok(t) => t,
        Err(_) => {
            eprintln!(
                "mcpscope: not loading skill {}: SKILL.md is not UTF-8 text",
                entry.name()
            );
            return Ok(exit::FAILED);
        }
    };
    let frontmatter = match skills::verify_frontmatter(entry, &text) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("mcpscope: not loading skill {}: {e}", entry.name());
            return Ok(exit::FAILED);
        }
    };
    eprintln!(
        "mcpscope: {}: {} bytes, digest and frontmatter match the listing",
        manifest.uri,
        bytes.len()
    );
    out_files.push(skills::file_json(&manifest, &bytes));
    for file in &extra {
        let (bytes, code) = read_verified(client, file, timeout)?;
        let Some(bytes) = bytes else { return Ok(code) };
        eprintln!(
            "mcpscope: {}: {} bytes, digest matches the listing",
            file.uri,
            bytes.len()
        );
        out_files.push(skills::file_json(file, &bytes));
    }
    let unread: Vec<&str> = entry
        .files
        .iter()
        .filter(|f| f.uri != manifest.uri && !extra.iter().any(|e| e.uri == f.uri))
        .map(|f| f.uri.strip_prefix(entry.base()).unwrap_or(&f.uri))
        .collect();
    if !unread.is_empty() {
        eprintln!(
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

/// Reads one file and checks it against the listing: the bytes, or the
/// exit status when the read or the check failed (already reported).
fn read_verified(
    client: &mut Client,
    file: &SkillFile,
    timeout: Duration,
) -> Result<(Option<Vec<u8>>, u8), ClientError> {
    let resp = client.request(methods::RESOURCES_READ, Some(json!({ "uri": file.uri })), timeout)?;
    let result = match resp.outcome {
        Ok(r) => r,
        Err(e) => {
            super::call::print_json(&e.to_json());
            eprintln!("mcpscope: resources/read {} failed with JSON-RPC error {e}", file.uri);
            return Ok((None, exit::FAILED));
        }
    };
    let checked = skills::read_bytes(&result, &file.uri).and_then(|b| skills::verify_bytes(file, &b).map(|()| b));
    match checked {
        Ok(b) => Ok((Some(b), exit::OK)),
        Err(e) => {
            eprintln!("mcpscope: verification failed, not using the skill: {e}");
            Ok((None, exit::FAILED))
        }
    }
}
