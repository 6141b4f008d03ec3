//! Filters evaluated on a hand-made session and on the golden captures,
//! the app's rows and the CLI's record reader side by side.

use super::rows::{RowSubject, SessionFacts};
use super::*;
use crate::record::capture;
use crate::timeline::store::FrameStore;
use crate::transport::event::{Event, HttpInfo};
use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn store_of(path: &Path) -> FrameStore {
    let loaded =
        capture::load(path).unwrap_or_else(|e| panic!("{}: {ec}", path.display(), ec = crate::text::ErrorChain(&e)));
    let mut store = FrameStore::new();
    for e in &loaded.events {
        store.push_event(e);
    }
    store
}

fn rows_matching(store: &FrameStore, facts: &SessionFacts<'_>, expr: &str) -> Vec<usize> {
    let f = Filter::parse(expr).unwrap_or_else(|e| panic!("{}", e.render(expr)));
    (0..store.len())
        .filter(|&i| f.matches(&RowSubject::new(store, i, facts).unwrap()))
        .collect()
}

/// A session written by hand: every kind of row the filter sees.
fn session() -> (tempfile::NamedTempFile, FrameStore) {
    let lines = [
        r#"{"format":"mcpscope-capture","version":1,"mcpscope":"0.1.0","mode":"session","started_unix_ms":1,"command_line":"srv","program":"srv","args":[],"cwd":null,"env_keys":[],"transport":"http","url":"http://127.0.0.1:1/mcp","header_keys":[]}"#,
        r#"{"t_us":100,"seq":0,"dir":"out","raw":"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}","eol":"lf"}"#,
        r#"{"t_us":200,"dir":"meta","event":"http","method":"POST","url":"http://127.0.0.1:1/mcp","status":200,"sent":[["accept","application/json, text/event-stream"]],"received":[["content-type","application/json"],["mcp-session-id","s-1"]],"request_id":0,"text":"","error":null}"#,
        r#"{"t_us":900,"seq":1,"dir":"in","raw":"{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"s\",\"version\":\"1\"}}}","eol":"lf"}"#,
        r#"{"t_us":1000,"seq":2,"dir":"out","raw":"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}","eol":"lf"}"#,
        r#"{"t_us":1100,"seq":3,"dir":"out","raw":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}","eol":"lf"}"#,
        r#"{"t_us":1500,"seq":4,"dir":"in","raw":"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"echo\",\"inputSchema\":{\"type\":\"object\"}},{\"name\":\"add\",\"inputSchema\":{\"type\":\"object\"}}]}}","eol":"lf"}"#,
        r#"{"t_us":2000,"seq":5,"dir":"out","raw":"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"add\",\"arguments\":{\"a\":7,\"b\":\"x\"}}}","eol":"lf"}"#,
        r#"{"t_us":2100,"seq":6,"dir":"stderr","raw":"Traceback: boom","eol":"lf"}"#,
        r#"{"t_us":2600,"seq":7,"dir":"in","raw":"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"bad b\"}],\"isError\":true}}","eol":"lf"}"#,
        r#"{"t_us":3000,"seq":8,"dir":"out","raw":"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"prompts/get\",\"params\":{\"name\":\"p\"}}","eol":"lf"}"#,
        r#"{"t_us":3100,"seq":9,"dir":"in","raw":"{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":-32601,\"message\":\"Method not found\"}}","eol":"lf"}"#,
        r#"{"t_us":4000,"seq":10,"dir":"in","raw":"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":5}}","eol":"lf"}"#,
        r#"{"t_us":5000,"seq":11,"dir":"in","raw":"this is not json","eol":"lf"}"#,
        r#"{"t_us":6000,"seq":12,"dir":"out","raw":"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"message\":\"hi \\u00e9\"}}}","eol":"lf"}"#,
        r#"{"t_us":7000,"seq":13,"dir":"in","raw":"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}","eol":"lf"}"#,
        r#"{"t_us":8000,"dir":"meta","event":"exited","code":0,"signal":null}"#,
    ];
    let mut file = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut file, (lines.join("\n") + "\n").as_bytes()).unwrap();
    let store = store_of(file.path());
    (file, store)
}

#[test]
fn every_field_on_a_session() {
    let (_file, store) = session();
    // Row numbers: 0 initialize, 1 http, 2 its result, 3 initialized, 4 tools/list, 5 its result,
    // 6 tools/call add, 7 stderr, 8 isError result, 9 prompts/get, 10 error, 11 progress,
    // 12 not json, 13 tools/call echo (pending), 14 server ping, 15 exited note.
    let mut findings: HashMap<usize, Vec<(&'static str, &'static str)>> = HashMap::new();
    findings.insert(12, vec![("not-json", "error")]);
    findings.insert(7, vec![("stderr-error", "warning")]);
    let conversations: HashMap<usize, usize> = [(6, 1), (8, 1)].into();
    let facts = SessionFacts {
        session: Some("everything"),
        transport: Some("http"),
        era: super::rows::infer_era(&store),
        findings: Some(&findings),
        conversations: Some(&conversations),
    };
    let cases: &[(&str, &[usize])] = &[
        (r#"method == "tools/call""#, &[6, 13]),
        (
            r#"method == "tools/call" or request.method == "tools/call""#,
            &[6, 8, 13],
        ),
        (r#"kind == "request""#, &[0, 4, 6, 9, 13]),
        (r#"kind == "iserror""#, &[8]),
        (r#"kind == "error""#, &[10]),
        (r#"kind == "server_request""#, &[14]),
        (r#"kind == "not_json""#, &[12]),
        (r#"kind in {"stderr", "note"}"#, &[7, 15]),
        (r#"kind == "http""#, &[1]),
        (r#"dir == "c2s" and not id"#, &[3]),
        (r#"dir == "s2c" and kind == "notification""#, &[11]),
        ("seq == 4", &[5]),
        ("seq >= 12", &[13, 14]),
        ("time > 5s", &[]),
        ("time >= 6ms and time < 7500us", &[13, 14]),
        ("len > 130", &[0, 1, 2, 5]),
        ("id == 2", &[6, 8]),
        (r#"id == null and dir == "c2s""#, &[3]),
        ("error.code == -32601", &[10]),
        (r#"error.message contains "not found""#, &[10]),
        ("result.isError == true", &[8]),
        ("result.isError", &[8]),
        // A result without isError did not fail (the spec's default).
        ("result.isError == false", &[2, 5]),
        ("not result.isError and kind in {\"result\", \"iserror\"}", &[2, 5]),
        (r#"params.name == "add""#, &[6]),
        ("params.arguments.a > 5", &[6]),
        ("params.arguments.a > 7", &[]),
        (r#"params.arguments.b contains "x""#, &[6]),
        (r#"params.arguments.message == "hi é""#, &[13]),
        (r#"result.content[0].text == "bad b""#, &[8]),
        (r#"result.tools[*].name == "echo""#, &[5]),
        (r#"any(result.tools[*].name == "add")"#, &[5]),
        (r#"all(result.tools[*].inputSchema.type == "object")"#, &[5]),
        (r#"all(result.tools[*].name == "echo")"#, &[]),
        ("count(result.tools[*]) == 2", &[5]),
        ("count(result.tools) == 2", &[5]),
        ("count(result.content) == 1", &[8]),
        ("len(result.tools) == 2", &[5]),
        (r#"lower(raw) contains "traceback""#, &[7]),
        (r#"raw contains "Traceback""#, &[7]),
        (r#"raw contains "traceback""#, &[]),
        (r#"raw matches "^this is""#, &[12]),
        (r#"method matches "^notifications/""#, &[3, 11]),
        ("latency > 400us", &[0, 2, 6, 8]),
        ("latency >= 300us and latency < 500us", &[4, 5]),
        ("pending", &[13, 14]),
        (r#"pending and method == "tools/call""#, &[13]),
        (r#"request.method == "tools/list""#, &[5]),
        (r#"request.params.name == "add""#, &[8]),
        (r#"response.kind == "iserror""#, &[6]),
        ("response.result.isError == true", &[6]),
        ("finding", &[7, 12]),
        (r#"finding.rule == "not-json""#, &[12]),
        (r#"finding.severity == "warning""#, &[7]),
        ("http.status == 200", &[1]),
        (r#"http.method == "POST""#, &[1]),
        (r#"http.header["mcp-session-id"] == "s-1""#, &[1]),
        (r#"http.received["Content-Type"] contains "json""#, &[1]),
        (r#"http.sent["mcp-session-id"]"#, &[]),
        (r#"session == "everything" and seq == 0"#, &[0]),
        (r#"tab == "other""#, &[]),
        (r#"transport == "http" and seq == 0"#, &[0]),
        (r#"era == "legacy" and seq == 0"#, &[0]),
        ("conversation == 1", &[6, 8]),
        (r#"jsonrpc != "2.0" and dir == "s2c""#, &[12]),
        ("not (kind == \"request\" or dir != \"c2s\")", &[3]),
    ];
    for (expr, want) in cases {
        assert_eq!(rows_matching(&store, &facts, expr), *want, "{expr}");
    }
}

#[test]
fn the_record_reader_agrees_with_the_rows() {
    let (file, store) = session();
    let facts = SessionFacts {
        session: Some("1"),
        transport: Some("http"),
        era: super::rows::infer_era(&store),
        findings: None,
        conversations: None,
    };
    for expr in [
        r#"method == "tools/call""#,
        "params.arguments.a > 5",
        r#"kind == "http" and http.status == 200"#,
        r#"raw contains "Traceback""#,
        r#"params.arguments.message contains "é""#,
        "latency > 400us",
        r#"request.method == "tools/list""#,
        r#"response.kind == "iserror""#,
        "pending",
        r#"era == "legacy""#,
        r#"session == "1" and dir == "note""#,
        "seq >= 12",
    ] {
        let want: Vec<Option<u64>> = rows_matching(&store, &facts, expr)
            .into_iter()
            .map(|i| store.get(i).unwrap().seq())
            .collect();
        let f = Filter::parse(expr).unwrap();
        let mut got = Vec::new();
        let summary = records::run(file.path(), &f, &mut |m| {
            got.push(m.info.seq);
            assert!(
                serde_json::from_slice::<serde_json::Value>(m.line).is_ok(),
                "{expr}: the record's own line"
            );
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(got, want, "{expr}");
        assert_eq!(summary.matched as usize, want.len());
        assert_eq!(summary.sessions, 1);
    }
}

fn captures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/captures");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    v.sort();
    assert!(v.len() > 50, "{}", dir.display());
    v
}

/// Over every golden capture: the CLI's reader (streaming or loaded) finds
/// exactly the rows the timeline does, and what each expression finds is
/// what the rule capture is about.
#[test]
fn golden_captures_streamed_and_loaded_find_the_same_records() {
    let exprs = [
        r#"kind == "request""#,
        r#"kind == "not_json""#,
        "error.code",
        "result.isError == true",
        r#"method contains "tools/""#,
        "params.name",
        "latency > 1ms",
        r#"response.kind == "error""#,
        r#"finding.severity == "error""#,
        r#"kind == "auth""#,
        "pending",
    ];
    let mut found: HashMap<&str, usize> = HashMap::new();
    for path in captures() {
        let loaded = capture::load(&path).unwrap();
        if loaded.sessions.len() != 1 {
            continue;
        }
        let store = store_of(&path);
        let findings = crate::analysis::lint::lint(&loaded.events, &crate::analysis::lint::LintOptions::default());
        let mut by_row: HashMap<usize, Vec<(&'static str, &'static str)>> = HashMap::new();
        for f in &findings {
            for s in &f.seqs {
                if let Some(r) = store.row_of_seq(*s) {
                    by_row.entry(r).or_default().push((f.rule, f.severity.as_str()));
                }
            }
        }
        let transport = if loaded.header.transport.is_empty() {
            "stdio".to_owned()
        } else {
            loaded.header.transport.clone()
        };
        let facts = SessionFacts {
            session: Some("1"),
            transport: Some(&transport),
            era: super::rows::infer_era(&store),
            findings: Some(&by_row),
            conversations: None,
        };
        for expr in exprs {
            let want: Vec<usize> = rows_matching(&store, &facts, expr);
            let f = Filter::parse(expr).unwrap();
            let mut got = Vec::new();
            records::run(&path, &f, &mut |m| {
                got.push((m.info.seq, m.info.kind));
                ControlFlow::Continue(())
            })
            .unwrap();
            let want_keys: Vec<_> = want
                .iter()
                .map(|&i| {
                    let r = RowSubject::new(&store, i, &facts).unwrap();
                    (r.row.seq(), eval::Subject::kind(&r))
                })
                .collect();
            assert_eq!(got, want_keys, "{} {expr}", path.display());
            *found.entry(expr).or_default() += got.len();
        }
        // The rule a capture is named after is found by `finding.rule`.
        let rule = path.file_stem().unwrap().to_str().unwrap();
        if findings.iter().any(|f| f.rule == rule && !f.seqs.is_empty()) {
            let expr = format!("finding.rule == \"{rule}\"");
            assert!(
                !rows_matching(&store, &facts, &expr).is_empty(),
                "{expr} in {}",
                path.display()
            );
        }
    }
    for expr in exprs {
        assert!(
            found.get(expr).copied().unwrap_or(0) > 0,
            "{expr} found nothing in any golden capture"
        );
    }
}

#[test]
fn escapes_in_a_line_disable_the_text_precheck() {
    let f = Filter::parse(r#"method == "tools/call""#).unwrap();
    assert!(!f.may_match_line(br#"{"method":"tools/list"}"#));
    assert!(f.may_match_line(br#"{"method":"tools/call"}"#));
    assert!(f.may_match_line(br#"{"method":"tools\/call"}"#));
    assert!(f.may_match_line(br#"{"method":"tools\u002fcall"}"#));
    assert!(
        !f.may_match_line(br#"{"m":"a\\u"}"#),
        "an escaped backslash before u is no escape"
    );
}

#[test]
fn apply_and_prepare_as_filter() {
    let v = serde_json::json!("echo");
    assert_eq!(condition_for("$.params.name", &v).unwrap(), r#"params.name == "echo""#);
    assert_eq!(
        condition_for("$.result.tools[1].name", &v).unwrap(),
        r#"result.tools[1].name == "echo""#
    );
    assert_eq!(
        condition_for("$[\"odd key\"]", &serde_json::json!(3)).unwrap(),
        "json[\"odd key\"] == 3"
    );
    assert_eq!(condition_for("$.params", &serde_json::json!({})).unwrap(), "params");
    assert_eq!(
        condition_for("$.method", &serde_json::json!("ping")).unwrap(),
        r#"method == "ping""#
    );
    assert_eq!(
        condition_for("$.step", &serde_json::json!("token")).unwrap(),
        r#"json.step == "token""#
    );
    assert_eq!(condition_for("$", &serde_json::json!({})).unwrap(), "json");
    assert_eq!(condition_for("$.result.content[0].text#json.a", &v), None);
    for c in ["params.name", "json[\"odd key\"] == 3", "json.step == \"token\""] {
        Filter::parse(c).unwrap();
    }
    assert_eq!(combine("", Join::And, "a"), "a");
    assert_eq!(combine("", Join::AndNot, "a == 1"), "not a == 1");
    assert_eq!(combine("a or b", Join::And, "c"), "(a or b) and c");
    assert_eq!(combine("a", Join::OrNot, "b and c"), "a or not (b and c)");
    let joined = combine("a or b", Join::AndNot, "c or d");
    assert_eq!(joined, "(a or b) and not (c or d)");
    parser::parse(&joined).unwrap();
}

#[test]
fn a_store_built_live_has_http_rows_the_filter_reads() {
    let mut store = FrameStore::new();
    store.push_event(&Event::Http(HttpInfo {
        at: Duration::from_millis(1),
        method: "GET".into(),
        url: "http://127.0.0.1:9/mcp".into(),
        status: Some(405),
        sent: vec![],
        received: vec![("allow".into(), "POST".into())],
        request_id: None,
        text: "no GET stream".into(),
        error: None,
    }));
    let facts = SessionFacts::default();
    assert_eq!(rows_matching(&store, &facts, "http.status in {400..499}"), [0]);
    assert_eq!(rows_matching(&store, &facts, r#"http.header["Allow"] == "POST""#), [0]);
    assert_eq!(rows_matching(&store, &facts, r#"dir == "note""#), Vec::<usize>::new());
}

fn store_of_lines(lines: &[(crate::wire::frame::Direction, &str)]) -> FrameStore {
    let mut rec = crate::transport::recorder::Recorder::replay(crate::wire::classify::Limits::default());
    let mut store = FrameStore::new();
    for (d, raw) in lines {
        let line = crate::wire::framing::RawLine {
            bytes: raw.as_bytes().to_vec(),
            ending: crate::wire::framing::LineEnding::Lf,
        };
        store.push_frame(&rec.frame_at(*d, line, Duration::ZERO, None));
    }
    store
}

#[test]
fn tasks_and_conversations() {
    use crate::wire::frame::Direction::{In, Out};
    let store = store_of_lines(&[
        (
            Out,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","task":{}}}"#,
        ),
        (
            In,
            r#"{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"t1","status":"working"}}}"#,
        ),
        (
            Out,
            r#"{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"t1"}}"#,
        ),
        (
            In,
            r#"{"jsonrpc":"2.0","id":2,"result":{"taskId":"t1","status":"completed"}}"#,
        ),
        (
            In,
            r#"{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"t2","status":"failed"}}"#,
        ),
        (
            Out,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ask"}}"#,
        ),
        (
            In,
            r#"{"jsonrpc":"2.0","id":3,"result":{"resultType":"input_required","inputRequests":{},"requestState":"s1"}}"#,
        ),
        (
            Out,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ask","inputResponses":{},"requestState":"s1"}}"#,
        ),
        (
            In,
            r#"{"jsonrpc":"2.0","id":4,"result":{"resultType":"complete","content":[]}}"#,
        ),
        (
            Out,
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"other"}}"#,
        ),
    ]);
    let conversations = super::rows::infer_conversations(&store);
    let facts = SessionFacts {
        conversations: Some(&conversations),
        ..SessionFacts::default()
    };
    for (expr, want) in [
        (r#"task.id == "t1""#, &[1usize, 2, 3][..]),
        (r#"task.status == "completed""#, &[3]),
        (r#"task.status == "working""#, &[1]),
        (r#"task.id == "t2" and task.status == "failed""#, &[4]),
        ("conversation == 1", &[5, 6, 7, 8]),
        ("conversation", &[5, 6, 7, 8]),
    ] {
        assert_eq!(rows_matching(&store, &facts, expr), want, "{expr}");
    }
}
