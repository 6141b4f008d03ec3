use super::*;

#[test]
fn config_entries_become_targets() {
    let t = Target::from(Transport::Http {
        url: "https://example.com/mcp".into(),
        headers: vec![("X-Api-Key".into(), "k".into())],
        kind: HttpKind::Sse,
    });
    let Target::Http(h) = t else { panic!() };
    assert_eq!(h.kind, HttpKind::Sse);
    assert_eq!(h.headers.len(), 1);
    assert_eq!(h.url, "https://example.com/mcp");
}

fn no_env(_: &str) -> Option<String> {
    None
}

fn parse(path: &str, text: &str) -> ConfigImport {
    parse_config_with_env(Path::new(path), text, &no_env).unwrap()
}

fn parse_err(path: &str, text: &str) -> String {
    parse_config_with_env(Path::new(path), text, &no_env)
        .unwrap_err()
        .to_string()
}

fn stdio(server: &ConfiguredServer) -> &ServerSpec {
    match &server.transport {
        Transport::Stdio(spec) => spec,
        other => panic!("{} is not stdio: {other:?}", server.name),
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// The one problem a file produced, as the user would read it.
fn only_problem(import: &ConfigImport) -> String {
    assert_eq!(import.problems.len(), 1, "{:?}", import.problems);
    import.problems[0].to_string()
}

const CLAUDE_DESKTOP: &str = r#"{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop", "/Users/me/Downloads"]
    },
    "everything": {
      "command": "npx",
      "args": ["@modelcontextprotocol/server-everything"],
      "env": { "DEBUG": "1", "LOG_LEVEL": "info" }
    },
    "github": {
      "command": "docker",
      "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
      "env": { "GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_xxx" }
    }
  },
  "globalShortcut": ""
}"#;

#[test]
fn claude_desktop_sample() {
    let import = parse(
        "/Users/me/Library/Application Support/Claude/claude_desktop_config.json",
        CLAUDE_DESKTOP,
    );
    assert_eq!(import.format, ConfigFormat::ClaudeDesktop);
    assert!(import.problems.is_empty(), "{:?}", import.problems);
    let names: Vec<_> = import.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["filesystem", "everything", "github"]);

    let fs = stdio(&import.servers[0]);
    assert_eq!(fs.program, "npx");
    assert_eq!(fs.args[1], "@modelcontextprotocol/server-filesystem");
    assert_eq!(fs.args.len(), 4);
    assert!(fs.env.is_empty() && fs.cwd.is_none());
    assert!(import.servers[0].notes.is_empty(), "{:?}", import.servers[0].notes);

    let everything = &import.servers[1];
    assert_eq!(stdio(everything).env, pairs(&[("DEBUG", "1"), ("LOG_LEVEL", "info")]));
    assert_eq!(everything.notes.len(), 1);
    assert!(everything.notes[0].contains("without -y"), "{}", everything.notes[0]);

    let github = stdio(&import.servers[2]);
    assert_eq!(github.env, pairs(&[("GITHUB_PERSONAL_ACCESS_TOKEN", "ghp_xxx")]));
    assert!(import.servers[2].notes.is_empty());
}

const VSCODE: &str = r#"{
  // Prompted once per session and stored by VS Code.
  "inputs": [
    { "type": "promptString", "id": "github-token", "description": "GitHub Personal Access Token", "password": true },
    { "type": "promptString", "id": "api-key", "password": true }
  ],
  "servers": {
    "github": {
      "type": "http",
      "url": "https://api.githubcopilot.com/mcp/",
      "headers": { "Authorization": "Bearer ${input:github-token}" }
    },
    "notes": {
      "type": "stdio",
      "command": "node",
      "args": ["${workspaceFolder}/build/index.js", "--root", "${workspaceFolder}"],
      "env": { "API_KEY": "${input:api-key}", "HOME_DIR": "${env:HOME}" },
      "envFile": "${workspaceFolder}/.env",
      "cwd": "${workspaceFolder}/server",
    },
    "fetch": {
      "command": "uvx",
      "args": ["mcp-server-fetch"]
    }
  }
}"#;

#[test]
fn vscode_sample() {
    let env = |name: &str| (name == "HOME").then(|| "/home/me".to_owned());
    let import = parse_config_with_env(Path::new("/home/me/proj/.vscode/mcp.json"), VSCODE, &env).unwrap();
    assert_eq!(import.format, ConfigFormat::VsCode);
    // mcp.json is JSONC in VS Code, so comments and trailing commas are fine there.
    assert!(import.problems.is_empty(), "{:?}", import.problems);
    let names: Vec<_> = import.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["github", "notes", "fetch"]);

    let github = &import.servers[0];
    assert_eq!(
        github.transport,
        Transport::Http {
            url: "https://api.githubcopilot.com/mcp/".into(),
            headers: pairs(&[("Authorization", "Bearer ${input:github-token}")]),
            kind: HttpKind::StreamableHttp,
        }
    );
    assert_eq!(
        github.notes,
        [
            "header Authorization uses ${input:github-token} (\"GitHub Personal Access Token\"), \
              which VS Code prompts for; fill it in before launching"
        ]
    );

    let notes = &import.servers[1];
    let spec = stdio(notes);
    assert_eq!(spec.program, "node");
    assert_eq!(
        spec.args,
        strings(&["/home/me/proj/build/index.js", "--root", "/home/me/proj"])
    );
    assert_eq!(
        spec.env,
        pairs(&[("API_KEY", "${input:api-key}"), ("HOME_DIR", "/home/me")])
    );
    assert_eq!(spec.cwd, Some(PathBuf::from("/home/me/proj/server")));
    assert_eq!(notes.notes.len(), 2, "{:?}", notes.notes);
    assert_eq!(
        notes.notes[0],
        "env API_KEY uses ${input:api-key}, which VS Code prompts for; fill it in before launching"
    );
    assert!(
        notes.notes[1].contains("envFile /home/me/proj/.env"),
        "{}",
        notes.notes[1]
    );

    assert_eq!(stdio(&import.servers[2]).args, strings(&["mcp-server-fetch"]));
    assert!(import.servers[2].notes.is_empty());
}

const MCP_JSON: &str = r#"{
  "mcpServers": {
    "db": {
      "command": "${TOOLS_DIR:-/opt/tools}/db-server",
      "args": ["--url", "${DATABASE_URL}", "--schema=${DB_SCHEMA:-public}"],
      "env": { "LOG": "${LOG_LEVEL:-warn}", "TOKEN": "${DB_TOKEN}" }
    },
    "api": {
      "type": "sse",
      "url": "${API_BASE:-https://mcp.example.com}/sse",
      "headers": { "X-API-Key": "${API_KEY}" }
    }
  }
}"#;

#[test]
fn mcp_json_sample_expands_variables() {
    let env = |name: &str| match name {
        "DATABASE_URL" => Some("postgres://localhost/app".to_owned()),
        "API_KEY" => Some("secret".to_owned()),
        "LOG_LEVEL" => Some(String::new()),
        _ => None,
    };
    let import = parse_config_with_env(Path::new("/src/app/.mcp.json"), MCP_JSON, &env).unwrap();
    assert_eq!(import.format, ConfigFormat::McpJson);
    assert!(import.problems.is_empty(), "{:?}", import.problems);

    let db = &import.servers[0];
    let spec = stdio(db);
    assert_eq!(spec.program, "/opt/tools/db-server");
    assert_eq!(
        spec.args,
        strings(&["--url", "postgres://localhost/app", "--schema=public"])
    );
    // An empty LOG_LEVEL falls back to the default, as `:-` does in the shell.
    assert_eq!(spec.env, pairs(&[("LOG", "warn"), ("TOKEN", "${DB_TOKEN}")]));
    assert_eq!(db.notes.len(), 1);
    assert!(
        db.notes[0].starts_with("env TOKEN uses ${DB_TOKEN}, but DB_TOKEN is not set"),
        "{}",
        db.notes[0]
    );

    assert_eq!(
        import.servers[1].transport,
        Transport::Http {
            url: "https://mcp.example.com/sse".into(),
            headers: pairs(&[("X-API-Key", "secret")]),
            kind: HttpKind::Sse,
        }
    );
    assert!(import.servers[1].notes.is_empty());
}

#[test]
fn file_name_separates_mcp_json_from_claude_desktop() {
    let text = r#"{"mcpServers": {"a": {"command": "${HOME}/bin/a"}}}"#;
    let env = |_: &str| Some("/home/me".to_owned());
    let claude = parse_config_with_env(Path::new("/x/claude_desktop_config.json"), text, &env).unwrap();
    assert_eq!(claude.format, ConfigFormat::ClaudeDesktop);
    // Claude Desktop does not expand, so neither do we; but we say so.
    assert_eq!(stdio(&claude.servers[0]).program, "${HOME}/bin/a");
    assert!(claude.servers[0].notes[0].contains("passes on literally"));

    let mcp = parse_config_with_env(Path::new("/x/.mcp.json"), text, &env).unwrap();
    assert_eq!(mcp.format, ConfigFormat::McpJson);
    assert_eq!(stdio(&mcp.servers[0]).program, "/home/me/bin/a");
    assert!(mcp.servers[0].notes.is_empty());
}

#[test]
fn relative_cwd_is_resolved_against_the_config_directory() {
    let text = r#"{"mcpServers": {"a": {"command": "a", "cwd": "tools/a"}, "b": {"command": "b", "cwd": "/abs"}}}"#;
    let import = parse("/home/me/cfg/servers.json", text);
    assert_eq!(
        stdio(&import.servers[0]).cwd,
        Some(PathBuf::from("/home/me/cfg/tools/a"))
    );
    assert_eq!(stdio(&import.servers[1]).cwd, Some(PathBuf::from("/abs")));
}

#[test]
fn remote_servers_in_mcp_servers_files() {
    let text = r#"{"mcpServers": {
            "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}},
            "legacy": {"url": "https://example.com/sse"},
            "both": {"command": "srv", "url": "https://example.com/mcp"},
            "typed": {"type": "streamable-http", "url": "https://example.com/mcp"}
        }}"#;
    let import = parse("claude_desktop_config.json", text);
    assert!(import.problems.is_empty(), "{:?}", import.problems);
    let [remote, legacy, both, typed] = &import.servers[..] else {
        panic!("{:?}", import.servers)
    };
    assert_eq!(
        remote.transport,
        Transport::Http {
            url: "https://example.com/mcp".into(),
            headers: pairs(&[("Authorization", "Bearer x")]),
            kind: HttpKind::StreamableHttp,
        }
    );
    assert!(remote.notes.is_empty());
    assert!(legacy.notes[0].contains("\"type\": \"sse\""), "{:?}", legacy.notes);
    assert_eq!(stdio(both).program, "srv");
    assert!(both.notes[0].contains("launches the command"));
    assert!(matches!(
        typed.transport,
        Transport::Http {
            kind: HttpKind::StreamableHttp,
            ..
        }
    ));
}

#[test]
fn npx_hang_note_only_without_yes() {
    let text = r#"{"mcpServers": {
            "win": {"command": "cmd", "args": ["/c", "npx", "@scope/server"]},
            "long_flag": {"command": "npx", "args": ["--yes", "@scope/server"]},
            "npm_config": {"command": "npx", "args": ["@scope/server"], "env": {"npm_config_yes": "true"}},
            "path": {"command": "/usr/local/bin/npx", "args": ["@scope/server"]}
        }}"#;
    let import = parse("claude_desktop_config.json", text);
    let flagged: Vec<_> = import
        .servers
        .iter()
        .filter(|s| !s.notes.is_empty())
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(flagged, ["win", "path"]);
}

#[test]
fn vscode_outside_a_vscode_folder_keeps_workspace_placeholder() {
    let text =
        r#"{"servers": {"a": {"command": "a", "args": ["${workspaceFolder}", "${userHome}", "${input:nope}"]}}}"#;
    let import = parse("/home/me/.config/Code/User/mcp.json", text);
    let server = &import.servers[0];
    assert_eq!(
        stdio(server).args,
        strings(&["${workspaceFolder}", "${userHome}", "${input:nope}"])
    );
    assert!(
        server.notes[0].contains("not inside a .vscode folder"),
        "{}",
        server.notes[0]
    );
    assert!(server.notes[1].contains("does not expand"), "{}", server.notes[1]);
    assert!(server.notes[2].contains("declares no \"nope\""), "{}", server.notes[2]);
}

// --- file-level errors ---

#[test]
fn error_unreadable_names_the_path_and_os_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing.json");
    let msg = load_config(&path).unwrap_err().to_string();
    assert!(msg.starts_with(&format!("cannot read {}: ", path.display())), "{msg}");
    assert!(msg.contains("os error"), "{msg}");
}

#[test]
fn load_config_reads_a_real_file() {
    let dir = tempfile::tempdir().unwrap();
    let vscode = dir.path().join(".vscode");
    std::fs::create_dir(&vscode).unwrap();
    let path = vscode.join("mcp.json");
    std::fs::write(
        &path,
        r#"{"servers": {"a": {"command": "a", "cwd": "${workspaceFolder}"}}}"#,
    )
    .unwrap();
    let import = load_config(&path).unwrap();
    assert_eq!(import.format, ConfigFormat::VsCode);
    assert_eq!(stdio(&import.servers[0]).cwd.as_deref(), Some(dir.path()));
}

#[test]
fn error_invalid_json_gives_line_and_column() {
    let msg = parse_err(
        "c.json",
        "{\n  \"mcpServers\": {\n    \"a\": {\"command\" \"x\"}\n  }\n}",
    );
    assert_eq!(msg, "not valid JSON at line 3, column 21: expected `:`");
}

#[test]
fn error_truncated_json_says_the_file_ends_early() {
    let msg = parse_err("c.json", "{\"mcpServers\": {\"a\": {}");
    assert!(msg.starts_with("not valid JSON at line 1, column 23"), "{msg}");
    assert!(msg.contains("ends before the JSON is complete"), "{msg}");
}

#[test]
fn error_empty_file() {
    assert!(parse_err("c.json", " \n").starts_with("the file is empty"));
    assert!(parse_err("c.json", "\u{feff}\n").starts_with("the file is empty"));
}

/// Entries are read one at a time from the file's text: in file order, a
/// repeated name in its first place with its last value (as a JSON
/// object map reads it), escaped names unescaped.
#[test]
fn servers_keep_file_order_and_a_repeated_name_its_last_value() {
    let text = r#"{"mcpServers": {
            "zeta": {"command": "z"},
            "alpha": {"command": "first"},
            "caf\u00e9": {"command": "c"},
            "alpha": {"command": "last"}
        }, "mcpServers2": 1}"#;
    let import = parse_config_with_env(Path::new("c.json"), text, &no_env).unwrap();
    let names: Vec<&str> = import.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["zeta", "alpha", "café"]);
    assert_eq!(stdio(&import.servers[1]).program, "last");
    // The servers key present but not an object, and a broken entry.
    let msg = parse_err("c.json", r#"{"mcpServers": [1, 2]}"#);
    assert!(msg.contains("array"), "{msg}");
    let import = parse_config_with_env(
        Path::new("c.json"),
        r#"{"mcpServers": {"a": 5, "b": {"command": "x"}}}"#,
        &no_env,
    )
    .unwrap();
    assert_eq!(import.servers.len(), 1);
    assert!(
        import.problems[0].to_string().contains("a number"),
        "{:?}",
        import.problems
    );
}

#[test]
fn error_top_level_not_an_object() {
    let msg = parse_err("c.json", r#"[{"command": "x"}]"#);
    assert!(
        msg.starts_with("the file holds an array, but an MCP config must be a JSON object"),
        "{msg}"
    );
}

#[test]
fn error_no_servers_key_lists_the_keys_found() {
    let msg = parse_err("c.json", r#"{"mcp_servers": {}, "theme": "dark"}"#);
    assert!(msg.contains("neither \"mcpServers\""), "{msg}");
    assert!(msg.ends_with("the keys there are \"mcp_servers\", \"theme\""), "{msg}");

    let many: Map<String, Value> = (0..10).map(|i| (format!("k{i}"), Value::Null)).collect();
    let msg = parse_err("c.json", &Value::Object(many).to_string());
    assert!(msg.ends_with("\"k7\" and 2 more"), "{msg}");
    assert!(parse_err("c.json", "{}").ends_with("the object is empty"));
}

#[test]
fn error_servers_not_an_object() {
    let msg = parse_err("mcp.json", r#"{"servers": [{"command": "x"}]}"#);
    assert!(
        msg.starts_with("\"servers\" is an array, but it must be an object mapping"),
        "{msg}"
    );
}

// --- entry-level problems: reported, and the rest of the file still imports ---

#[test]
fn empty_servers_is_a_problem_not_an_error() {
    let import = parse("claude_desktop_config.json", r#"{"mcpServers": {}}"#);
    assert!(import.servers.is_empty());
    assert_eq!(only_problem(&import), "no servers defined: \"mcpServers\" is empty");
}

#[test]
fn problem_entry_not_an_object() {
    let import = parse(
        "c.json",
        r#"{"mcpServers": {"weather": "npx weather-server", "ok": {"command": "a"}}}"#,
    );
    assert_eq!(import.servers.len(), 1);
    assert_eq!(
        only_problem(&import),
        "server \"weather\" is a string (\"npx weather-server\"), but each server must be an object \
             with \"command\" or \"url\"; skipped"
    );
}

#[test]
fn problem_neither_command_nor_url() {
    let import = parse(
        "c.json",
        r#"{"mcpServers": {"typo": {"comand": "a", "args": []}, "empty": {}}}"#,
    );
    assert!(import.servers.is_empty());
    let problems: Vec<String> = import.problems.iter().map(ToString::to_string).collect();
    assert!(
        problems[0].starts_with("server \"typo\" has neither \"command\""),
        "{}",
        problems[0]
    );
    assert!(
        problems[0].contains("it only has \"comand\", \"args\""),
        "{}",
        problems[0]
    );
    assert!(problems[1].contains("\"empty\"") && problems[1].contains("definition is empty"));
}

#[test]
fn problem_args_element_not_a_string() {
    let text = r#"{"mcpServers": {
            "good": {"command": "a"},
            "weather": {"command": "node", "args": ["server.js", 8080, "--x", true]}
        }}"#;
    let import = parse("c.json", text);
    assert_eq!(import.servers.len(), 1);
    assert_eq!(import.servers[0].name, "good");
    let problems: Vec<String> = import.problems.iter().map(ToString::to_string).collect();
    assert_eq!(
        problems,
        [
            "server \"weather\": args[1] is a number (8080), but it must be a string (put the value in quotes); \
                 skipped",
            "server \"weather\": args[3] is a boolean (true), but it must be a string (put the value in quotes); \
                 skipped",
        ]
    );
}

#[test]
fn problem_args_not_an_array() {
    let import = parse(
        "c.json",
        r#"{"mcpServers": {"w": {"command": "node", "args": "server.js --port 1"}}}"#,
    );
    assert_eq!(
        only_problem(&import),
        "server \"w\": args is a string (\"server.js --port 1\"), but it must be an array of strings; skipped"
    );
}

#[test]
fn problem_env_value_not_a_string() {
    let import = parse(
        "c.json",
        r#"{"mcpServers": {"w": {"command": "node", "env": {"HOST": "x", "PORT": 8080}}}}"#,
    );
    assert_eq!(
        only_problem(&import),
        "server \"w\": env.PORT is a number (8080), but it must be a string (put the value in quotes); skipped"
    );
}

#[test]
fn problem_env_not_an_object() {
    let import = parse(
        "c.json",
        r#"{"mcpServers": {"w": {"command": "node", "env": ["PORT=1"]}}}"#,
    );
    assert_eq!(
        only_problem(&import),
        "server \"w\": env is an array, but it must be an object of strings (name to value); skipped"
    );
}

#[test]
fn problem_cwd_not_a_string() {
    let import = parse(
        "c.json",
        r#"{"mcpServers": {"w": {"command": "node", "cwd": ["/srv"]}}}"#,
    );
    assert_eq!(
        only_problem(&import),
        "server \"w\": cwd is an array, but it must be a string; skipped"
    );
}

#[test]
fn problem_command_empty_or_not_a_string() {
    let import = parse(
        "c.json",
        r#"{"mcpServers": {"w": {"command": ""}, "v": {"command": ["node"]}}}"#,
    );
    let problems: Vec<String> = import.problems.iter().map(ToString::to_string).collect();
    assert_eq!(
        problems,
        [
            "server \"w\": command is a string (\"\"), but it must be a non-empty string; skipped",
            "server \"v\": command is an array, but it must be a non-empty string; skipped",
        ]
    );
}

#[test]
fn problem_header_not_a_string() {
    let import = parse(
        "mcp.json",
        r#"{"servers": {"r": {"type": "http", "url": "https://x", "headers": {"X-N": 1}}}}"#,
    );
    assert!(only_problem(&import).starts_with("server \"r\": headers.X-N is a number (1)"));
}

#[test]
fn problem_type_not_a_string() {
    let import = parse("mcp.json", r#"{"servers": {"t": {"type": ["stdio"], "command": "x"}}}"#);
    assert_eq!(
        only_problem(&import),
        "server \"t\": type is an array, but it must be a string; skipped"
    );
}

#[test]
fn problem_unknown_type() {
    let import = parse(
        "mcp.json",
        r#"{"servers": {"ws": {"type": "websocket", "url": "wss://x"}}}"#,
    );
    assert_eq!(
        only_problem(&import),
        "server \"ws\" has \"type\": \"websocket\", which mcpscope cannot connect to \
             (it knows \"stdio\", \"http\" and \"sse\"); skipped"
    );
}

#[test]
fn problem_type_without_its_field() {
    let import = parse(
        "mcp.json",
        r#"{"servers": {"r": {"type": "http", "command": "x"}, "s": {"type": "stdio"}}}"#,
    );
    let problems: Vec<String> = import.problems.iter().map(ToString::to_string).collect();
    assert_eq!(
        problems,
        [
            "server \"r\" has \"type\": \"http\" but no \"url\"; skipped",
            "server \"s\" has \"type\": \"stdio\" but no \"command\"; skipped",
        ]
    );
}

#[test]
fn problem_comments_in_a_strict_json_format() {
    let import = parse(
        "/p/.mcp.json",
        "{\"mcpServers\": {\"a\": {\"command\": \"a\"},} // mine\n}",
    );
    assert_eq!(import.servers.len(), 1);
    assert!(only_problem(&import).contains("Claude Code .mcp.json expects strict JSON"));
}
