//! `mcpscope filter`, `lint --filter` and `diff --filter` as a user runs
//! them, on a capture recorded from a real server and on golden captures.

use crate::support::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn mcpscope(args: &[&str]) -> std::process::Output {
    crate::support::mcpscope_command()
        .args(args)
        .output()
        .expect("running mcpscope")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn golden(name: &str) -> PathBuf {
    repo().join("tests/captures").join(name)
}

/// A capture of server-everything: tools/list, then a tools/call of echo.
fn everything_capture(dir: &Path) -> PathBuf {
    let path = dir.join("everything.jsonl");
    let spec = everything();
    for args in [
        vec!["call", "--method", "tools/list"],
        vec!["call", "--tool-name", "echo", "--tool-arg", "message=hello filter"],
    ] {
        let mut call: Vec<&str> = args;
        call.extend(["--capture", path.to_str().unwrap(), "--", &spec.program]);
        call.extend(spec.args.iter().map(String::as_str));
        let out = mcpscope(&call);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    path
}

#[test]
fn filter_prints_matching_records_as_a_capture_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let cap = everything_capture(dir.path());
    let c = cap.to_str().unwrap();

    // JSONL: each session's header, then its matching records as they are in the file.
    let out = mcpscope(&[
        "filter",
        c,
        r#"method == "tools/call" and params.arguments.message contains "filter""#,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert!(lines[0].contains("\"format\":\"mcpscope-capture\""), "{}", lines[0]);
    let file = std::fs::read_to_string(&cap).unwrap();
    assert!(
        file.lines().any(|l| l == lines[1]),
        "printed as in the file: {}",
        lines[1]
    );
    let rec: Value = serde_json::from_str(lines[1]).unwrap();
    let raw: Value = serde_json::from_str(rec["raw"].as_str().unwrap()).unwrap();
    assert_eq!(raw["params"]["arguments"]["message"], "hello filter");
    // ...so it is a capture: it lints and filters again.
    let sub = dir.path().join("sub.jsonl");
    std::fs::write(&sub, &out.stdout).unwrap();
    let again = mcpscope(&["filter", "--count", sub.to_str().unwrap(), "params.name == \"echo\""]);
    assert_eq!(text(&again.stdout).trim(), "1", "{}", text(&again.stderr));

    // The answer, reached from its request; and from the answer, its request.
    let out = mcpscope(&[
        "filter",
        "--count",
        c,
        r#"request.params.name == "echo" and result.content[0].text contains "hello filter""#,
    ]);
    assert_eq!(text(&out.stdout).trim(), "1", "{}", text(&out.stderr));
    let out = mcpscope(&[
        "filter",
        "--count",
        c,
        r#"response.kind == "result" and method == "tools/list""#,
    ]);
    assert_eq!(
        text(&out.stdout).trim(),
        "2",
        "one tools/list asked directly, one before the call: {}",
        text(&out.stderr)
    );
    // Two sessions appended to one file: the second is session 2.
    let out = mcpscope(&["filter", "--count", c, r#"session == "2" and method == "initialize""#]);
    assert_eq!(text(&out.stdout).trim(), "1");
    let out = mcpscope(&["filter", "--count", c, "any(result.tools[*].name == \"echo\")"]);
    assert_eq!(text(&out.stdout).trim(), "2");
    let out = mcpscope(&["filter", "--count", c, "era == \"legacy\" and method == \"initialize\""]);
    assert_eq!(text(&out.stdout).trim(), "2");

    // A table for people, JSON for tools.
    let out = mcpscope(&[
        "filter",
        "--format",
        "table",
        c,
        "kind == \"request\" and session == \"2\"",
    ]);
    let table = text(&out.stdout);
    assert!(table.contains("s2  c2s    request        initialize #1"), "{table}");
    assert!(table.contains("tools/call #3"), "{table}");
    let out = mcpscope(&[
        "filter",
        "--format",
        "json",
        c,
        "latency and request.method == \"tools/call\"",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let arr: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(arr.len(), 1, "{arr:#?}");
    assert_eq!(arr[0]["kind"], "result");
    assert_eq!(arr[0]["request_method"], "tools/call");
    assert!(arr[0]["latency_ms"].as_f64().unwrap() > 0.0);
    assert_eq!(arr[0]["session"], 2);

    // Nothing matches: exit 1, like grep.
    let out = mcpscope(&["filter", c, "error.code == -1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
}

#[test]
#[cfg(unix)]
fn a_bad_filter_or_file_is_refused_with_a_message() {
    let cap = golden("not-json.jsonl");
    let c = cap.to_str().unwrap();
    let out = mcpscope(&["filter", c, "method == \"x\" and lattency > 1s"]);
    assert_eq!(out.status.code(), Some(64));
    let err = text(&out.stderr);
    assert!(err.contains("method == \"x\" and lattency > 1s\n"), "{err}");
    assert!(
        err.contains("                  ^^^^^^^^ unknown field \"lattency\": did you mean \"latency\"?"),
        "{err}"
    );
    let out = mcpscope(&["filter", c, "latency contains \"x\""]);
    assert_eq!(out.status.code(), Some(64));
    assert!(
        text(&out.stderr).contains("latency is a duration"),
        "{}",
        text(&out.stderr)
    );

    let dir = tempfile::tempdir().unwrap();
    let out = mcpscope(&["filter", dir.path().join("missing.jsonl").to_str().unwrap(), "pending"]);
    assert_eq!(out.status.code(), Some(4));
    assert!(
        text(&out.stderr).contains("cannot open the capture"),
        "{}",
        text(&out.stderr)
    );
    let fifo = dir.path().join("fifo");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let out = mcpscope(&["filter", fifo.to_str().unwrap(), "pending"]);
    assert_eq!(out.status.code(), Some(4), "a FIFO is refused, not waited on");
    let other = dir.path().join("other.jsonl");
    std::fs::write(&other, "{\"hello\":1}\n").unwrap();
    let out = mcpscope(&["filter", other.to_str().unwrap(), "pending"]);
    assert_eq!(out.status.code(), Some(4));
    assert!(
        text(&out.stderr).contains("not an mcpscope capture"),
        "{}",
        text(&out.stderr)
    );

    let out = mcpscope(&["filter", "--fields"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("finding.severity"));
}

#[test]
fn table_output_escapes_what_a_server_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("esc.jsonl");
    std::fs::write(
        &cap,
        concat!(
            r#"{"format":"mcpscope-capture","version":1,"mcpscope":"0.1.0","mode":"session","started_unix_ms":1,"command_line":"x","program":"x","args":[],"cwd":null,"env_keys":[]}"#,
            "\n",
            r#"{"t_us":1,"seq":0,"dir":"stderr","raw":"\u001b]0;pwned\u0007 \u001b[2J","eol":"lf"}"#,
            "\n"
        ),
    )
    .unwrap();
    let out = mcpscope(&[
        "filter",
        "--format",
        "table",
        cap.to_str().unwrap(),
        "kind == \"stderr\"",
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(!out.stdout.contains(&0x1b), "no escape byte reaches the terminal");
    assert!(
        text(&out.stdout).contains("\\u{1b}]0;pwned\\u{7}"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn lint_and_diff_take_a_filter() {
    let cap = golden("not-json.jsonl");
    let c = cap.to_str().unwrap();
    let out = mcpscope(&["lint", "--filter", "kind == \"not_json\"", c]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let report = text(&out.stdout);
    assert!(report.contains("[not-json]"), "{report}");
    assert!(
        report.contains("filter: kind == \"not_json\" (1 of 1 finding(s) on the 1 record(s)"),
        "{report}"
    );
    // Findings elsewhere are left out, and so is their exit status.
    let out = mcpscope(&["lint", "--filter", "method == \"initialize\"", c]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(!text(&out.stdout).contains("[not-json]"));
    let out = mcpscope(&["lint", "--filter", "method = \"x\"", c]);
    assert_eq!(out.status.code(), Some(64));

    let dir = tempfile::tempdir().unwrap();
    let a = everything_capture(dir.path());
    let b = dir.path().join("b.jsonl");
    // B: the same session, the echo answered differently.
    let changed = std::fs::read_to_string(&a)
        .unwrap()
        .replace("Echo: hello filter", "Echo: something else");
    std::fs::write(&b, changed).unwrap();
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let out = mcpscope(&["diff", a, b]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let out = mcpscope(&["diff", "--filter", "method == \"tools/list\"", a, b]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "only tools/list compared: {}",
        text(&out.stdout)
    );
    let out = mcpscope(&["diff", "--json", "--all", "--filter", "params.name == \"echo\"", a, b]);
    assert_eq!(out.status.code(), Some(1));
    let list: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list.len(), 1, "{list:#?}");
    assert_eq!(list[0]["exchange"], "tools/call echo #1");
    // A filter on the answer keeps its exchange.
    let out = mcpscope(&[
        "diff",
        "--json",
        "--filter",
        "result.content[0].text contains \"Echo\"",
        a,
        b,
    ]);
    let list: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list.len(), 1, "{list:#?}");
}

/// The app's filter box: an expression typed into it filters the timeline,
/// a wrong one is named (and the last good one stays applied), the quick
/// controls write the expression, and a filter saved becomes a button.
#[test]
fn the_timeline_filters_by_an_expression_typed_in_the_app() {
    use egui::accesskit::Role;
    use egui_kittest::Harness;
    use egui_kittest::kittest::Queryable as _;
    let dir = tempfile::tempdir().unwrap();
    let cap = everything_capture(dir.path());
    let mut h = Harness::builder()
        .with_size([1440.0, 900.0])
        .build_eframe(|cc| mcpscope_app::McpscopeApp::new(cc, mcpscope_app::StartupArgs::default()));
    h.state_mut().open_capture(cap.clone());
    step_until(&mut h, "the capture loaded", |app| {
        app.session()
            .inspection
            .as_ref()
            .is_some_and(|i| i.model.store.len() > 10)
            && app.session().timeline.index.progress().is_none()
    });
    let all = h.state().session().timeline.index.len();
    let typed = |h: &mut Harness<'_, mcpscope_app::McpscopeApp>, text: &str| {
        h.get_by_role_and_label(Role::TextInput, "Filter").focus();
        h.step();
        h.state_mut().session_mut().timeline.filter.text.clear();
        h.step();
        h.get_by_role_and_label(Role::TextInput, "Filter").type_text(text);
        h.step();
    };
    typed(&mut h, r#"method == "tools/call""#);
    step_until(&mut h, "the filter applied", |app| {
        app.session().timeline.index.progress().is_none() && app.session().timeline.index.len() < all
    });
    assert_eq!(
        h.state().session().timeline.index.len(),
        1,
        "one tools/call in the capture"
    );
    assert!(h.query_by_label_contains("tools/call #").is_some(), "its row is listed");
    assert!(h.query_by_label_contains("row 0: ").is_none(), "the rest are not");

    // A wrong filter is named under the box; the last good one stays applied.
    h.state_mut()
        .session_mut()
        .timeline
        .filter
        .text
        .push_str(" and lattency > 1s");
    h.run_steps(3);
    assert!(
        h.query_by_label_contains("unknown field \"lattency\": did you mean \"latency\"?")
            .is_some()
    );
    assert_eq!(h.state().session().timeline.index.len(), 1);

    // A request's answer, found through the request it answers.
    typed(
        &mut h,
        r#"request.method == "tools/list" and any(result.tools[*].name == "echo")"#,
    );
    step_until(&mut h, "the tools/list answers", |app| {
        app.session().timeline.index.progress().is_none() && app.session().timeline.index.len() == 2
    });
    assert!(h.state().session().timeline.filter.error.is_none());

    // The quick controls write the expression they stand for.
    h.state_mut().session_mut().timeline.filter.text.clear();
    h.run_steps(2);
    assert_eq!(
        h.state().session().timeline.index.len(),
        all,
        "an empty filter lists every row"
    );
    h.get_by_role_and_label(Role::TextInput, "Filter").focus();
    h.state_mut().session_mut().timeline.filter.shorthand.method = "TOOLS/C".into();
    h.run_steps(3);
    assert_eq!(
        h.state().session().timeline.filter.text,
        r#"(lower(method) contains "tools/c" or lower(request.method) contains "tools/c")"#
    );
    step_until(&mut h, "the shorthand applied", |app| {
        app.session().timeline.index.progress().is_none() && app.session().timeline.index.len() == 2
    });

    // Saved as a button; Enter keeps it in the history.
    h.get_by_label("Save").click();
    h.run_steps(2);
    assert_eq!(
        h.state().session().timeline.filter.text.len(),
        h.state().session().timeline.filter.text.trim().len()
    );
    assert!(
        h.query_by_label_contains("(lower(method) contains").is_some(),
        "a button for the saved filter"
    );
}

/// Tab takes the first completion and the focus stays in the box: the keys
/// typed next go on the expression (they went to the Colours button, and
/// were lost, when Tab also moved the focus on). Escape closes the list
/// without leaving the box either.
#[test]
fn tab_takes_a_completion_and_the_next_keys_stay_in_the_filter_box() {
    use egui::accesskit::Role;
    use egui_kittest::Harness;
    use egui_kittest::kittest::Queryable as _;
    let dir = tempfile::tempdir().unwrap();
    let cap = everything_capture(dir.path());
    let mut h = Harness::builder()
        .with_size([1440.0, 900.0])
        .build_eframe(|cc| mcpscope_app::McpscopeApp::new(cc, mcpscope_app::StartupArgs::default()));
    h.state_mut().open_capture(cap);
    step_until(&mut h, "the capture loaded", |app| {
        app.session()
            .inspection
            .as_ref()
            .is_some_and(|i| i.model.store.len() > 10)
            && app.session().timeline.index.progress().is_none()
    });
    h.get_by_role_and_label(Role::TextInput, "Filter").focus();
    h.run_steps(2);
    h.get_by_role_and_label(Role::TextInput, "Filter").type_text("meth");
    h.run_steps(2);
    assert!(
        h.query_by_label_contains("Tab takes the first").is_some(),
        "completions offered"
    );
    h.key_press(egui::Key::Tab);
    h.run_steps(2);
    assert!(
        h.state().session().timeline.filter.text.starts_with("method"),
        "{:?}",
        h.state().session().timeline.filter.text
    );
    assert!(
        h.get_by_role_and_label(Role::TextInput, "Filter").is_focused(),
        "the focus stayed in the filter box"
    );
    h.get_by_role_and_label(Role::TextInput, "Filter")
        .type_text(" == \"tools/c");
    h.run_steps(2);
    h.get_by_role_and_label(Role::TextInput, "Filter").type_text("all\"");
    h.run_steps(3);
    let typed = h
        .state()
        .session()
        .timeline
        .filter
        .text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert_eq!(typed, r#"method == "tools/call""#);
    step_until(&mut h, "the filter applied", |app| {
        app.session().timeline.index.progress().is_none() && app.session().timeline.index.len() == 1
    });

    // A string still being typed: the rows are worked out as if it were
    // closed, so the closing quote has nothing left to do (at a million rows
    // the whole pass after the last key took several frames).
    h.state_mut().session_mut().timeline.filter.text.clear();
    h.run_steps(2);
    h.get_by_role_and_label(Role::TextInput, "Filter")
        .type_text("method contains \"tools/c");
    step_until(&mut h, "the rows of the unclosed string", |app| {
        app.session().timeline.index.progress().is_none() && app.session().timeline.index.len() == 1
    });
    assert!(
        h.state().session().timeline.filter.error.is_some(),
        "still said to be unclosed"
    );
    assert!(h.query_by_label_contains("as if it were").is_some());
    h.get_by_role_and_label(Role::TextInput, "Filter").type_text("\"");
    h.step();
    assert!(h.state().session().timeline.filter.error.is_none());
    assert!(
        h.state().session().timeline.index.progress().is_none(),
        "the closing quote needs no pass over the rows"
    );
    assert_eq!(h.state().session().timeline.index.len(), 1);
    // Back to the filter applied before the string: applied again.
    h.state_mut().session_mut().timeline.filter.text = r#"method == "tools/call""#.into();
    step_until(&mut h, "the earlier filter again", |app| {
        app.session().timeline.index.progress().is_none() && app.session().timeline.index.len() == 1
    });

    // Escape with completions open closes them and keeps the box focused.
    h.get_by_role_and_label(Role::TextInput, "Filter").type_text(" and lat");
    h.run_steps(2);
    assert!(
        h.query_by_label_contains("Tab takes the first").is_some(),
        "completions offered"
    );
    h.key_press(egui::Key::Escape);
    h.run_steps(2);
    assert!(
        h.query_by_label_contains("Tab takes the first").is_none(),
        "closed by Escape"
    );
    assert!(h.get_by_role_and_label(Role::TextInput, "Filter").is_focused());
}
