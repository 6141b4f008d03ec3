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
        wrapped.contains("\"args\": [\n        \"proxy\", \"--session\", \"filesystem\", \"--\", \"npx\", \"-y\",\n"),
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
    assert!(
        remote
            .proxy_command(BIN)
            .ends_with("proxy --listen 127.0.0.1:40001 --upstream https://api.githubcopilot.com/mcp/ --session github")
    );
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
