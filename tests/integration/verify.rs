//! `mcpscope verify --surface` against a real server (the Python SDK's),
//! unchanged and then drifted the way a careless release drifts.

use crate::support::*;
use std::process::{Command, Output};

fn mcpscope(args: &[&str]) -> Output {
    crate::support::mcpscope_command()
        .args(args)
        .output()
        .expect("running mcpscope")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A server's command line, as `mcpscope … -- COMMAND ARGS` takes it.
fn command_of(spec: &mcpscope_core::transport::process::ServerSpec) -> Vec<&str> {
    std::iter::once(spec.program.as_str())
        .chain(spec.args.iter().map(String::as_str))
        .collect()
}

/// The check above can fail: a file CI tools would refuse is refused.
#[test]
fn the_junit_schema_check_refuses_what_ci_tools_refuse() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.xml");
    std::fs::write(
        &bad,
        r#"<?xml version="1.0" encoding="UTF-8"?><testsuites><testsuite name="s" tests="1"><testcase classname="k"/></testsuite></testsuites>"#,
    )
    .unwrap();
    let errors = junit_schema_errors(&bad);
    assert!(errors.contains("failures") && errors.contains("name"), "{errors}");
}

#[test]
fn verify_surface_finds_nothing_on_the_same_server_and_each_change_of_a_drifted_one() {
    let spec = py_server();
    let server = command_of(&spec);
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("baseline.jsonl");
    let cap_arg = cap.to_str().unwrap();
    let mut record = vec!["call", "--method", "tools/list", "--capture", cap_arg, "--"];
    record.extend(&server);
    let out = mcpscope(&record);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let before = std::fs::read(&cap).unwrap();

    // The same server: nothing changed.
    let mut same = vec!["verify", cap_arg, "--surface", "--"];
    same.extend(&server);
    let out = mcpscope(&same);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).contains("as recorded"), "{}", text(&out.stdout));

    // Drifted: one description reworded, one field made required, one tool removed.
    let junit = dir.path().join("report.xml");
    let junit_arg = junit.to_str().unwrap();
    let mut drifted = vec![
        "verify",
        cap_arg,
        "--surface",
        "--junit",
        junit_arg,
        "-e",
        "MCPSCOPE_TEST_DRIFT=1",
        "--",
    ];
    drifted.extend(&server);
    let out = mcpscope(&drifted);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "breaking   tool describe_person: inputSchema: property shout became required",
            "breaking   tool fail: removed",
            "compatible tool echo: description changed",
            "3 change(s): 2 breaking, 1 compatible",
        ],
        "{stdout}"
    );
    // Only breaking changes count with --fail-on breaking; none with a compatible-only drift.
    let mut json = drifted.clone();
    json.splice(3..5, ["--format", "json", "--fail-on", "breaking"]);
    let out = mcpscope(&json);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((v["breaking"].as_u64(), v["compatible"].as_u64()), (Some(2), Some(1)));

    // The JUnit report reads as XML, a case per tool, the changed ones failed.
    let check = Command::new("python3")
        .args([
            "-c",
            "import sys, xml.etree.ElementTree as E\n\
             r = E.parse(sys.argv[1]).getroot()\n\
             s = r.find('testsuite')\n\
             cases = s.findall('testcase')\n\
             failed = sorted(c.get('name') for c in cases if c.find('failure') is not None)\n\
             print(r.tag, s.get('tests'), len(cases), s.get('failures'), ','.join(failed))",
            junit_arg,
        ])
        .output()
        .unwrap();
    assert_eq!(
        text(&check.stdout).trim(),
        "testsuites 6 6 3 describe_person,echo,fail",
        "{}",
        text(&check.stderr)
    );
    assert_eq!(
        junit_schema_errors(&junit),
        "",
        "{}",
        std::fs::read_to_string(&junit).unwrap()
    );
    // The capture is never modified.
    assert_eq!(std::fs::read(&cap).unwrap(), before);
}

#[test]
fn verify_needs_a_capture_with_something_to_compare() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let out = mcpscope(&["verify", empty.to_str().unwrap(), "--ignore", "content", "--", "true"]);
    assert_eq!(out.status.code(), Some(64), "{}", text(&out.stderr));
    let out = mcpscope(&["verify", empty.to_str().unwrap(), "--surface", "--", "true"]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("mcpscope verify:"), "{}", text(&out.stderr));
}

#[test]
fn verify_replays_the_recorded_calls_reports_a_changed_result_and_updates_the_baseline() {
    let spec = py_server();
    let server = command_of(&spec);
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("baseline.jsonl");
    let cap_arg = cap.to_str().unwrap();
    for call in [
        &["--tool-name", "add", "--tool-arg", "a=2", "--tool-arg", "b=3"][..],
        &["--tool-name", "echo", "--tool-arg", "message=hi"][..],
    ] {
        let mut args = vec!["call", "--capture", cap_arg];
        args.extend(call);
        args.push("--");
        args.extend(&server);
        let out = mcpscope(&args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let before = std::fs::read(&cap).unwrap();

    let mut same = vec!["verify", cap_arg, "--"];
    same.extend(&server);
    let out = mcpscope(&same);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("2 exchange(s) replayed: 2 the same, 0 differ"),
        "{stdout}"
    );
    assert!(stdout.contains("as recorded"), "{stdout}");

    // Drifted: add is off by one (a result changed), and the surface drifted.
    let mut drifted = vec!["verify", cap_arg, "-e", "MCPSCOPE_TEST_DRIFT=1", "--"];
    drifted.extend(&server);
    let junit = dir.path().join("replay.xml");
    let mut with_junit = drifted.clone();
    with_junit.splice(2..2, ["--junit", junit.to_str().unwrap()]);
    let out = mcpscope(&with_junit);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let report = std::fs::read_to_string(&junit).unwrap();
    assert!(report.contains("the recording 5 vs the server 6"), "{report}");
    assert_eq!(junit_schema_errors(&junit), "", "{report}");
    let out = mcpscope(&drifted);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    // Two `call --capture` runs appended two sessions: each is replayed in
    // a live session of its own.
    assert!(stdout.contains("differs    session 1: tools/call add"), "{stdout}");
    assert!(stdout.contains("the recording 5 vs the server 6"), "{stdout}");
    assert!(stdout.contains("same       session 2: tools/call echo"), "{stdout}");
    assert!(
        text(&out.stderr).contains("holds 2 sessions: replaying session(s) 1, 2"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        stdout.contains("2 exchange(s) replayed: 1 the same, 1 differ"),
        "{stdout}"
    );
    assert!(stdout.contains("breaking   tool fail: removed"), "{stdout}");
    assert_eq!(std::fs::read(&cap).unwrap(), before, "verify only reads the capture");
    // --session N: that one alone; a session the capture does not have is a usage error.
    let mut second = vec!["verify", cap_arg, "--session", "2", "-e", "MCPSCOPE_TEST_DRIFT=1", "--"];
    second.extend(&server);
    let out = mcpscope(&second);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("1 exchange(s) replayed: 1 the same"), "{stdout}");
    assert!(!stdout.contains("tools/call add"), "{stdout}");
    second[3] = "3";
    let out = mcpscope(&second);
    assert_eq!(out.status.code(), Some(64), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("no session 3"), "{}", text(&out.stderr));

    // --update: the drifted session becomes the baseline, the old one is kept.
    let mut update = vec!["verify", cap_arg, "--update", "-e", "MCPSCOPE_TEST_DRIFT=1", "--"];
    update.extend(&server);
    let out = mcpscope(&update);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("is the new baseline"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(std::fs::read(dir.path().join("baseline.jsonl.1")).unwrap(), before);
    let out = mcpscope(&drifted);
    assert_eq!(
        out.status.code(),
        Some(0),
        "against the new baseline nothing differs: {}",
        text(&out.stdout)
    );
}

/// The server's own requests are answered as the recording answered them:
/// server-everything's sampling tool puts the client's reply in its result.
#[test]
fn verify_answers_the_servers_requests_as_recorded() {
    let spec = everything();
    let server = command_of(&spec);
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("sampling.jsonl");
    let cap_arg = cap.to_str().unwrap();
    let mut record = vec![
        "call",
        "--capture",
        cap_arg,
        "--sample-reply",
        "recorded reply",
        "--tool-name",
        "trigger-sampling-request",
        "--tool-arg",
        "prompt=say hi",
        "--tool-arg",
        "maxTokens=20",
        "--",
    ];
    record.extend(&server);
    let out = mcpscope(&record);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("recorded reply"), "{}", text(&out.stdout));
    let mut verify = vec!["verify", cap_arg, "--"];
    verify.extend(&server);
    let out = mcpscope(&verify);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("same       tools/call trigger-sampling-request"),
        "{stdout}"
    );
}

/// #48: a recording whose client offered sampling and elicitation, verified
/// against the very server it came from. server-everything lists its
/// sampling and elicitation tools only to a client that offers them: the
/// verify session offers what the recording offered, so nothing is called
/// removed, and it says that such requests would be refused (the recording
/// holds no answer to them).
#[test]
fn verify_offers_the_recorded_clients_capabilities_and_finds_the_same_server_the_same() {
    let spec = everything();
    let server = command_of(&spec);
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("offered.jsonl");
    let cap_arg = cap.to_str().unwrap();
    let mut record = vec![
        "call",
        "--method",
        "tools/list",
        "--capture",
        cap_arg,
        "--sample-reply",
        "hi",
        "--elicit-decline",
        "--",
    ];
    record.extend(&server);
    let out = mcpscope(&record);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let listed = text(&out.stdout);
    assert!(listed.contains("trigger-sampling-request"), "{listed}");
    let mut verify = vec!["verify", cap_arg, "--surface", "--"];
    verify.extend(&server);
    let out = mcpscope(&verify);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(!stdout.contains("removed"), "{stdout}");
    assert!(stdout.contains("as recorded"), "{stdout}");
}
