//! Save to collection: a request sent from the app (the composer, History, a
//! frame's Replay) written as a step into a test file, with an assertion to
//! start from. The file stays the one a person edits: the step is inserted
//! as text at the end of `steps:`, the rest of the file (comments, order,
//! spacing) untouched, and the result is read back before it replaces the
//! file, so a save never leaves a file `mcpscope test` refuses.

use super::file::{self, Target};
use serde_json::Value as Json;
use std::path::{Path, PathBuf};

/// The request to save.
#[derive(Clone, Debug, PartialEq)]
pub struct NewStep {
    pub method: String,
    pub params: Option<Json>,
    /// Sent as a notification (no answer to check).
    pub notification: bool,
}

/// The server a new file runs against (the session's).
#[derive(Clone, Debug, PartialEq)]
pub struct NewServer {
    pub name: String,
    pub target: Target,
    /// legacy, modern or auto.
    pub era: Option<String>,
    /// Env and header names whose values are secrets whatever they are
    /// called (the ones the user keeps in the OS keyring).
    pub secret_names: Vec<String>,
}

/// What a save did.
#[derive(Clone, Debug, PartialEq)]
pub struct Saved {
    pub path: PathBuf,
    /// The step's name, as written.
    pub name: String,
    /// The file was made by this save.
    pub created: bool,
    /// Steps in the file now.
    pub steps: usize,
    /// Values not written in the clear: each as a `{{secret:NAME}}` to set.
    pub secrets: Vec<String>,
    /// What the user should know about the step as written.
    pub notes: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
    #[error(transparent)]
    Write(#[from] crate::record::output_file::OutputFileError),
    #[error("{path}:{line}:{column}: {message}: fix the file first, then save to it again")]
    Mistaken {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{0}: a new test file needs a server to run against: launch one first (its settings are written)")]
    NoServer(PathBuf),
    #[error("{0}: `steps:` is not a list of steps written one per line: add the step by hand")]
    Unplaceable(PathBuf),
    #[error("{0}: the file would not read back with the step added ({1}): it was left as it was")]
    WouldBreak(PathBuf, String),
}

/// Writes `step` at the end of the test file at `path`; a file that does
/// not exist (or is empty) is made, running against `server`.
pub fn save_step(path: &Path, step: &NewStep, server: Option<&NewServer>) -> Result<Saved, SaveError> {
    let io = |e| SaveError::Io(path.to_owned(), e);
    let old = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(io(e)),
    };
    let created = old.trim().is_empty();
    let mut secrets = Vec::new();
    let (before, names) = if created {
        let server = server.ok_or_else(|| SaveError::NoServer(path.to_owned()))?;
        let stem = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let stem = stem.trim_end_matches(".yaml").trim_end_matches(".yml");
        let stem = stem.trim_end_matches(".mcp");
        let mut text = format!("name: {}\n", scalar(stem));
        text.push_str(&server_text(server, &mut secrets));
        (text, Vec::new())
    } else {
        let read = file::read(&old).map_err(|errors| {
            let e = &errors[0];
            SaveError::Mistaken {
                path: path.to_owned(),
                line: e.at.line,
                column: e.at.column,
                message: e.message.clone(),
            }
        })?;
        (
            old.clone(),
            read.steps.iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
        )
    };
    let name = unique(&step_name(step), &names);
    let new = insert(&before, &step_text(step, &name)).ok_or_else(|| SaveError::Unplaceable(path.to_owned()))?;
    let steps = match file::read(&new) {
        Ok(f) if f.steps.len() == names.len() + 1 => {
            if let Some(changed) = changed_besides_the_step(&before, &new) {
                return Err(SaveError::WouldBreak(path.to_owned(), changed));
            }
            f.steps.len()
        }
        Ok(f) => {
            return Err(SaveError::WouldBreak(
                path.to_owned(),
                format!("{} step(s) read instead of {}", f.steps.len(), names.len() + 1),
            ));
        }
        Err(errors) => {
            let e = &errors[0];
            return Err(SaveError::WouldBreak(
                path.to_owned(),
                format!("{}:{}: {}", e.at.line, e.at.column, e.message),
            ));
        }
    };
    crate::record::output_file::write_all(path, new.as_bytes())?;
    let mut notes = Vec::new();
    if step.params.as_ref().is_some_and(|p| p.to_string().contains("{{")) {
        notes.push(
            "its arguments hold {{…}}, which mcpscope test fills in as a variable: define it, or change the text"
                .to_owned(),
        );
    }
    Ok(Saved {
        path: path.to_owned(),
        name,
        created,
        steps,
        secrets,
        notes,
    })
}

/// What the insertion changed in the file besides adding one step at the
/// end of `steps:` (a block scalar it ran into, a key it moved), if anything.
fn changed_besides_the_step(before: &str, after: &str) -> Option<String> {
    let tree = |t: &str| super::yaml::parse(t).map(|n| n.to_json()).ok();
    let (Some(mut old), Some(mut new)) = (tree(before), tree(after)) else {
        return Some("the file no longer reads as YAML".into());
    };
    let steps = |v: &mut Json| match v.as_object_mut().and_then(|o| o.remove("steps")) {
        Some(Json::Array(a)) => a,
        _ => Vec::new(),
    };
    let (old_steps, mut new_steps) = (steps(&mut old), steps(&mut new));
    new_steps.pop();
    if old != new {
        return Some("a part of the file other than its steps would have changed".into());
    }
    (old_steps != new_steps).then(|| "a step already in the file would have changed".into())
}

/// A step's name from what it sends: the tool, prompt or resource, else the method.
fn step_name(step: &NewStep) -> String {
    let p = step.params.as_ref();
    let field = |k: &str| p.and_then(|p| p.get(k)).and_then(Json::as_str).map(str::to_owned);
    match step.method.as_str() {
        "tools/call" | "prompts/get" => field("name").unwrap_or_else(|| step.method.clone()),
        "resources/read" => field("uri").map_or_else(|| step.method.clone(), |u| format!("read {u}")),
        m => m.to_owned(),
    }
}

/// `name`, or `name 2`, `name 3`… if the file has it already.
fn unique(name: &str, taken: &[String]) -> String {
    let free = |n: &str| !taken.iter().any(|t| t == n);
    if free(name) {
        return name.to_owned();
    }
    (2..)
        .map(|i| format!("{name} {i}"))
        .find(|n| free(n))
        .unwrap_or_default()
}

/// The params without what belongs to one sending (a progress token).
fn without_meta(params: &Json) -> Json {
    let mut p = params.clone();
    if let Some(o) = p.as_object_mut() {
        o.remove("_meta");
    }
    p
}

/// The step as YAML lines, indented as an item of `steps:` at column 2.
fn step_text(step: &NewStep, name: &str) -> String {
    let params = step.params.as_ref().map(without_meta);
    let obj = params.as_ref().and_then(Json::as_object);
    let only = |keys: &[&str]| obj.is_some_and(|o| o.keys().all(|k| keys.contains(&k.as_str())));
    let str_of = |k: &str| obj.and_then(|o| o.get(k)).and_then(Json::as_str);
    let args_of = |k: &str| {
        obj.and_then(|o| o.get(k))
            .cloned()
            .unwrap_or_else(|| Json::Object(Default::default()))
    };
    let mut lines = vec![format!("  - name: {}", scalar(name))];
    let mut push = |k: &str, v: String| lines.push(format!("    {k}: {v}"));
    let flow = |v: &Json| serde_json::to_string(v).unwrap_or_default();
    if step.notification {
        push("notify", scalar(&step.method));
        if let Some(p) = &params {
            push("params", flow(p));
        }
    } else if step.method == "tools/call" && only(&["name", "arguments"]) && str_of("name").is_some() {
        push("call", scalar(str_of("name").unwrap_or_default()));
        push("arguments", flow(&args_of("arguments")));
    } else if step.method == "prompts/get" && only(&["name", "arguments"]) && str_of("name").is_some() {
        push("prompt", scalar(str_of("name").unwrap_or_default()));
        push("arguments", flow(&args_of("arguments")));
    } else if step.method == "resources/read" && only(&["uri"]) && str_of("uri").is_some() {
        push("read", scalar(str_of("uri").unwrap_or_default()));
    } else {
        push("request", scalar(&step.method));
        if let Some(p) = &params {
            push("params", flow(p));
        }
    }
    if !step.notification {
        // What every answer should be to start from: a tool that did not
        // fail; anything else answered without a JSON-RPC error.
        let check = if step.method == "tools/call" {
            "result.isError == false"
        } else {
            "not error"
        };
        lines.push("    assert:".into());
        lines.push(format!("      - {check}"));
    }
    let mut text = lines.join("\n");
    text.push('\n');
    text
}

/// The `servers:` block of a new file. Values that are secrets (by their
/// names, the user's keyring choices, or credentials in a URL) are written
/// as `{{secret:NAME}}`, named in `secrets`.
fn server_text(server: &NewServer, secrets: &mut Vec<String>) -> String {
    let mut out = format!("servers:\n  {}:\n", scalar(&server.name));
    let mut secret = |name: &str| {
        let var: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_uppercase()
                } else {
                    '_'
                }
            })
            .collect();
        if !secrets.contains(&var) {
            secrets.push(var.clone());
        }
        format!("{{{{secret:{var}}}}}")
    };
    let kept = |name: &str| server.secret_names.iter().any(|k| k.eq_ignore_ascii_case(name));
    match &server.target {
        Target::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            out.push_str(&format!("    command: {}\n", scalar(command)));
            if !args.is_empty() {
                let args = secret_args(args, &mut secret);
                out.push_str(&format!(
                    "    args: {}\n",
                    serde_json::to_string(&args).unwrap_or_default()
                ));
            }
            let env_secret = |k: &str, v: &str| kept(k) || secret_env(k) || credentials_in(v);
            out.push_str(&mapping("env", env, &env_secret, &mut secret));
            if let Some(cwd) = cwd {
                out.push_str(&format!("    cwd: {}\n", scalar(cwd)));
            }
        }
        Target::Http { url, headers } => {
            let url = if credentials_in(url) {
                // Credentials in the URL itself: the secret is the whole URL.
                secret("SERVER_URL")
            } else {
                url.clone()
            };
            out.push_str(&format!("    url: {}\n", scalar(&url)));
            let header_secret =
                |k: &str, v: &str| kept(k) || crate::proxy::reverse::is_secret_header(k) || credentials_in(v);
            out.push_str(&mapping("headers", headers, &header_secret, &mut secret));
        }
    }
    if let Some(era) = &server.era {
        out.push_str(&format!("    era: {}\n", scalar(era)));
    }
    out.push_str("steps:\n");
    out
}

/// A server's `env:` or `headers:`, each value `is_secret` says is one
/// (by its name or its value) written as what `secret` makes of the name.
fn mapping(
    key: &str,
    pairs: &[(String, String)],
    is_secret: &dyn Fn(&str, &str) -> bool,
    secret: &mut dyn FnMut(&str) -> String,
) -> String {
    if pairs.is_empty() {
        return String::new();
    }
    let mut out = format!("    {key}:\n");
    for (k, v) in pairs {
        let v = if is_secret(k, v) { secret(k) } else { v.clone() };
        out.push_str(&format!("      {}: {}\n", scalar(k), scalar(&v)));
    }
    out
}

/// An environment variable whose name says it holds a secret: the rule for
/// query parameters, and any `…KEY` or `…PAT` (`STRIPE_KEY`, `GITHUB_PAT`).
fn secret_env(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    crate::transport::target::secret_param(name) || upper.ends_with("KEY") || upper.ends_with("PAT")
}

/// A value with credentials in it (a URL's `user:password@`, a `?token=`).
fn credentials_in(value: &str) -> bool {
    value.contains("://") && crate::transport::target::mask_url(value) != value
}

/// The arguments with each secret as a `{{secret:NAME}}`: the value of a
/// secret-looking flag (`--api-key X`, `--token=X`) and a URL with credentials.
fn secret_args(args: &[String], secret: &mut dyn FnMut(&str) -> String) -> Vec<String> {
    let flag = |a: &str| {
        a.strip_prefix("--")
            .or_else(|| a.strip_prefix('-'))
            .filter(|f| !f.is_empty())
            .map(str::to_owned)
    };
    let mut out = Vec::with_capacity(args.len());
    for (i, a) in args.iter().enumerate() {
        let secret_flag_before =
            i > 0 && !a.starts_with('-') && flag(&args[i - 1]).is_some_and(|f| !f.contains('=') && secret_env(&f));
        if secret_flag_before {
            out.push(secret(&flag(&args[i - 1]).unwrap_or_default()));
        } else if let Some((name, _)) = a.split_once('=')
            && let Some(f) = flag(name)
            && secret_env(&f)
        {
            out.push(format!("{name}={}", secret(&f)));
        } else if credentials_in(a) {
            out.push(secret("SERVER_URL"));
        } else {
            out.push(a.clone());
        }
    }
    out
}

/// A YAML scalar: as it is where YAML reads it back as the same string,
/// else quoted (JSON's quoting is YAML's).
fn scalar(s: &str) -> String {
    let plain = !s.is_empty()
        && s.trim() == s
        && s.chars().all(|c| c.is_alphanumeric() || " _-./@".contains(c))
        && s.chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '.' || c == '/')
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "y" | "n"
        );
    if plain {
        s.to_owned()
    } else {
        serde_json::to_string(s).unwrap_or_default()
    }
}

/// `text` with `step` (lines indented for column 2) added at the end of its
/// top-level `steps:` list, in that list's own indentation and line ends;
/// `steps:` added if the file has none. `None` when `steps:` is written in
/// a way a line cannot be added to (a flow list with items).
fn insert(text: &str, step: &str) -> Option<String> {
    let crlf = text.contains("\r\n");
    let nl = if crlf { "\r\n" } else { "\n" };
    let lines: Vec<&str> = text.lines().collect();
    let key = lines.iter().position(|l| {
        l.strip_prefix("steps:")
            .is_some_and(|rest| rest.trim().is_empty() || rest.trim_start().starts_with('#') || rest.trim() == "[]")
    });
    let Some(key) = key else {
        if lines.iter().any(|l| l.starts_with("steps:")) {
            return None;
        }
        let mut out = text.to_owned();
        if !out.is_empty() && !out.ends_with('\n') {
            out.push_str(nl);
        }
        out.push_str("steps:");
        out.push_str(nl);
        out.push_str(&step.replace('\n', nl));
        return Some(out);
    };
    // The block: lines after the key that are indented, list items, blank
    // or comments; it ends at the next top-level key.
    let mut last = key;
    let mut item_indent = None;
    for (i, l) in lines.iter().enumerate().skip(key + 1) {
        let t = l.trim_start();
        let indent = l.len() - t.len();
        if t.is_empty() {
            continue;
        }
        // A comment deeper than the items may be a line of a block scalar
        // (`code: |` … `# done`): it is the step's. One at the items' own
        // depth or less is the file's, between the list and what follows.
        if t.starts_with('#') && item_indent.is_none_or(|d| indent <= d) {
            continue;
        }
        if indent == 0 && !t.starts_with('-') {
            break;
        }
        if t.starts_with('-') && item_indent.is_none() {
            item_indent = Some(indent);
        }
        last = i;
    }
    let shift = item_indent.unwrap_or(2);
    let step: String = step
        .lines()
        .map(|l| {
            let l = l.strip_prefix("  ").unwrap_or(l);
            format!("{}{l}{nl}", " ".repeat(shift))
        })
        .collect();
    let mut out = String::with_capacity(text.len() + step.len());
    for (i, l) in lines.iter().enumerate() {
        if i == key && l.trim_end().ends_with("[]") {
            out.push_str("steps:");
        } else {
            out.push_str(l);
        }
        out.push_str(nl);
        if i == last {
            out.push_str(&step);
        }
    }
    if !text.ends_with('\n') && last + 1 < lines.len() {
        // The file's own last line had no line end: keep it that way.
        out.truncate(out.len() - nl.len());
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(args: Json) -> NewStep {
        NewStep {
            method: "tools/call".into(),
            params: Some(json!({"name": "echo", "arguments": args, "_meta": {"progressToken": "p1"}})),
            notification: false,
        }
    }

    fn server() -> NewServer {
        NewServer {
            name: "everything".into(),
            target: Target::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "@modelcontextprotocol/server-everything".into()],
                env: vec![
                    ("DEBUG".into(), "1".into()),
                    ("OPENAI_API_KEY".into(), "sk-live-123".into()),
                ],
                cwd: None,
            },
            era: None,
            secret_names: vec!["DEBUG_TOKENLESS".into()],
        }
    }

    #[test]
    fn a_new_file_gets_the_server_and_the_step_and_reads_back() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("calls.mcp.yaml");
        let saved = save_step(&p, &call(json!({"message": "hi: there"})), Some(&server())).unwrap();
        assert!(saved.created);
        assert_eq!((saved.name.as_str(), saved.steps), ("echo", 1));
        assert_eq!(saved.secrets, ["OPENAI_API_KEY"]);
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(!text.contains("sk-live-123"), "a secret in the clear:\n{text}");
        assert!(!text.contains("progressToken"), "{text}");
        let f = file::read(&text).unwrap();
        assert_eq!(
            f.steps[0].action,
            file::Action::Call {
                tool: "echo".into(),
                arguments: json!({"message": "hi: there"})
            }
        );
        assert_eq!(f.steps[0].asserts[0].text, "result.isError == false");
        assert_eq!(f.name.as_deref(), Some("calls"));
        // Saving again appends, under a name of its own.
        let again = save_step(&p, &call(json!({})), None).unwrap();
        assert_eq!((again.name.as_str(), again.steps, again.created), ("echo 2", 2, false));
    }

    #[test]
    fn a_step_goes_at_the_end_of_steps_and_nothing_else_of_the_file_changes() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t.mcp.yaml");
        let before = "# hand-written\nservers:\n  s: {command: srv}\nsteps:\n- name: first   # mine\n  call: a\n\n# the contracts\ncontracts:\n  max_requests: 9\n";
        std::fs::write(&p, before).unwrap();
        let read = NewStep {
            method: "resources/read".into(),
            params: Some(json!({"uri": "test://x y"})),
            notification: false,
        };
        save_step(&p, &read, None).unwrap();
        let after = std::fs::read_to_string(&p).unwrap();
        assert_eq!(
            after,
            "# hand-written\nservers:\n  s: {command: srv}\nsteps:\n- name: first   # mine\n  call: a\n- name: \"read test://x y\"\n  read: \"test://x y\"\n  assert:\n    - not error\n\n# the contracts\ncontracts:\n  max_requests: 9\n"
        );
        let ping = NewStep {
            method: "notifications/roots/list_changed".into(),
            params: None,
            notification: true,
        };
        let s = save_step(&p, &ping, None).unwrap();
        assert_eq!(s.steps, 3);
        let f = file::read(&std::fs::read_to_string(&p).unwrap()).unwrap();
        assert!(
            matches!(&f.steps[2].action, file::Action::Notify { method, .. } if method == "notifications/roots/list_changed")
        );
        assert_eq!(f.contracts.max_requests, Some(9));
    }

    #[test]
    fn odd_requests_keep_their_params_and_empty_lists_of_steps_grow() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t.mcp.yaml");
        std::fs::write(&p, "servers:\r\n  s: {url: 'http://127.0.0.1:1/mcp'}\r\nsteps: []\r\n").unwrap();
        let raw = NewStep {
            method: "tools/call".into(),
            params: Some(json!({"name": "echo", "arguments": {"a": 1}, "task": {"ttl": 5}})),
            notification: false,
        };
        save_step(&p, &raw, None).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.contains("\r\n    request: tools/call\r\n"), "{text:?}");
        let f = file::read(&text).unwrap();
        assert!(matches!(&f.steps[0].action, file::Action::Request { params: Some(p), .. } if p["task"]["ttl"] == 5));
    }

    #[test]
    fn a_file_with_mistakes_or_no_server_is_refused_and_left_alone() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("bad.mcp.yaml");
        std::fs::write(&p, "servers:\n  s: {command: x}\nstepz: []\n").unwrap();
        let e = save_step(&p, &call(json!({})), None).unwrap_err();
        assert!(e.to_string().contains("bad.mcp.yaml:3:"), "{e}");
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "servers:\n  s: {command: x}\nstepz: []\n"
        );
        let e = save_step(&d.path().join("new.mcp.yaml"), &call(json!({})), None).unwrap_err();
        assert!(matches!(e, SaveError::NoServer(_)), "{e}");
        assert!(!d.path().join("new.mcp.yaml").exists());
    }

    #[test]
    fn http_secrets_are_placeholders() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("h.mcp.yaml");
        let s = NewServer {
            name: "remote server".into(),
            target: Target::Http {
                url: "https://example.com/mcp".into(),
                headers: vec![
                    ("Authorization".into(), "Bearer abc.def".into()),
                    ("X-Team".into(), "blue".into()),
                    ("X-Kept".into(), "kept-value".into()),
                ],
            },
            era: Some("modern".into()),
            secret_names: vec!["X-Kept".into()],
        };
        let saved = save_step(&p, &call(json!({})), Some(&s)).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(!text.contains("abc.def") && !text.contains("kept-value"), "{text}");
        assert!(text.contains("Authorization: \"{{secret:AUTHORIZATION}}\""), "{text}");
        assert!(text.contains("X-Team: blue"), "{text}");
        assert_eq!(saved.secrets, ["AUTHORIZATION", "X_KEPT"]);
        assert_eq!(file::read(&text).unwrap().servers[0].era.as_deref(), Some("modern"));
    }

    #[test]
    fn secrets_are_found_by_name_value_flag_and_the_users_keyring_choices() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.mcp.yaml");
        let s = NewServer {
            name: "s".into(),
            target: Target::Stdio {
                command: "srv".into(),
                args: vec![
                    "--api-key".into(),
                    "sk-one".into(),
                    "--token=tok-two".into(),
                    "postgres://u:pw-three@db/x".into(),
                    "--verbose".into(),
                    "plain".into(),
                ],
                env: vec![
                    ("STRIPE_KEY".into(), "rk-four".into()),
                    ("GITHUB_PAT".into(), "ghp-five".into()),
                    ("DATABASE_URL".into(), "postgres://u:pw-six@db/x".into()),
                    ("MY_SETTING".into(), "kept-seven".into()),
                    ("LOG_LEVEL".into(), "debug".into()),
                ],
                cwd: None,
            },
            era: None,
            secret_names: vec!["my_setting".into()],
        };
        let saved = save_step(&p, &call(json!({"message": "hi {{name}}"})), Some(&s)).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        for value in [
            "sk-one",
            "tok-two",
            "pw-three",
            "rk-four",
            "ghp-five",
            "pw-six",
            "kept-seven",
        ] {
            assert!(!text.contains(value), "{value} in the clear:\n{text}");
        }
        assert!(
            text.contains("LOG_LEVEL: debug") && text.contains("\"plain\""),
            "{text}"
        );
        assert!(text.contains("\"--token={{secret:TOKEN}}\""), "{text}");
        assert_eq!(
            saved.secrets,
            [
                "API_KEY",
                "TOKEN",
                "SERVER_URL",
                "STRIPE_KEY",
                "GITHUB_PAT",
                "DATABASE_URL",
                "MY_SETTING"
            ]
        );
        assert!(saved.notes[0].contains("{{…}}"), "{:?}", saved.notes);
        let f = file::read(&text).unwrap();
        assert!(matches!(&f.servers[0].target, Target::Stdio { args, .. } if args[1] == "{{secret:API_KEY}}"));
    }

    #[test]
    fn a_block_scalar_ending_in_a_comment_like_line_keeps_it() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("b.mcp.yaml");
        let before = "servers:\n  s: {command: srv}\nsteps:\n  - name: code\n    call: run\n    arguments:\n      code: |\n        x = 1\n        # done\n# the end\n";
        std::fs::write(&p, before).unwrap();
        save_step(&p, &call(json!({})), None).unwrap();
        let after = std::fs::read_to_string(&p).unwrap();
        assert!(
            after.starts_with(&before[..before.len() - "# the end\n".len()]),
            "{after}"
        );
        let f = file::read(&after).unwrap();
        assert!(
            matches!(&f.steps[0].action, file::Action::Call { arguments, .. } if arguments["code"] == "x = 1\n# done\n"),
            "{after}"
        );
        assert!(after.ends_with("# the end\n"), "{after}");
    }

    #[test]
    fn an_insertion_that_would_change_the_file_is_refused() {
        assert!(changed_besides_the_step("a: 1\nsteps: []\n", "a: 2\nsteps: [{name: x}]\n").is_some());
        assert!(changed_besides_the_step("steps: [{name: x}]\n", "steps: [{name: y}, {name: z}]\n").is_some());
        assert!(changed_besides_the_step("a: 1\nsteps: []\n", "a: 1\nsteps: [{name: x}]\n").is_none());
    }

    #[test]
    fn scalars_that_yaml_would_read_otherwise_are_quoted() {
        for (s, want) in [
            ("echo", "echo"),
            ("get-sum", "get-sum"),
            ("true", "\"true\""),
            ("12", "\"12\""),
            ("a: b", "\"a: b\""),
            ("#x", "\"#x\""),
            ("", "\"\""),
            ("test://x", "\"test://x\""),
        ] {
            assert_eq!(scalar(s), want, "{s}");
        }
    }
}
