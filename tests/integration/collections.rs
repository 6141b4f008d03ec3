//! `mcpscope test` against real servers: the project's own collection
//! (tests/collections/: server-everything, the Python SDK's server, an eval
//! against the fake model provider) passes; every kind of check is made to
//! fail (tests/collections-broken/) and says what it saw; a file's mistakes
//! are said with their place before anything runs; snapshots are written,
//! compared and updated; `--against` runs on a recording's mock; secrets
//! never appear in anything written; the reports pass their validators.

use crate::model::FakeProvider;
use crate::support::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

const TOKEN: &str = "sekrit-token-4242";

fn test_command(fake: Option<&FakeProvider>) -> std::process::Command {
    let mut cmd = mcpscope_command();
    cmd.arg("test")
        .env("OPENAI_API_KEY", "test-key")
        .env("MCPSCOPE_TEST_TOKEN", TOKEN)
        .env_remove("FAKE_LLM_URL");
    if let Some(f) = fake {
        cmd.env("FAKE_LLM_URL", &f.url);
    }
    cmd
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn said(out: &Output) -> String {
    format!("{}{}", text(&out.stdout), text(&out.stderr))
}

/// A copy of a folder of the repository's, in a temporary one of the same
/// depth (test files reach the servers by relative paths).
fn copied(from: &str, dir: &Path) -> PathBuf {
    let to = dir.join("tests").join(Path::new(from).file_name().unwrap());
    copy_dir(&repo().join(from), &to);
    #[cfg(unix)]
    for link in ["peers", "servers"] {
        std::os::unix::fs::symlink(repo().join("tests").join(link), dir.join("tests").join(link)).unwrap();
    }
    to
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
#[cfg(unix)]
fn the_projects_collection_passes_against_the_real_servers() {
    let fake = FakeProvider::start();
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("report.xml");
    let out = test_command(Some(&fake))
        .arg(repo().join("tests/collections"))
        .args(["--format", "junit", "-o"])
        .arg(&junit)
        .output()
        .unwrap();
    let s = said(&out);
    assert_eq!(out.status.code(), Some(0), "{s}");
    for step in [
        "passed  echo what echo said",
        "passed  structured content against its output schema",
        "passed  a method that does not exist is a protocol error",
        "passed  contract surface recordings/everything-surface.jsonl",
        "passed  eval the model echoes through the server with openai:gpt-fake: 3/3 runs passed",
        "passed  add the sum again",
        "passed  a secret goes to the server and nowhere else",
        "0 failed, 0 errors, 0 skipped in 2 file(s)",
    ] {
        assert!(s.contains(step), "{step}: {s}");
    }
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(junit_schema_errors(&junit), "", "{xml}");
    assert!(xml.contains("failures=\"0\" errors=\"0\""), "{xml}");
    assert!(!xml.contains(TOKEN) && !s.contains(TOKEN));
    // Another environment's variables.
    let out = test_command(Some(&fake))
        .arg(repo().join("tests/collections/python-sdk.mcp.yaml"))
        .args(["--env", "big", "--only", "add*", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let steps = report["files"][0]["steps"].as_array().unwrap();
    assert_eq!(steps[0]["verdict"], "passed");
    assert_eq!(steps[1]["name"], "add the sum again");
    assert_eq!(steps[1]["verdict"], "passed");
    assert_eq!(steps[2]["verdict"], "skipped", "--only: {report}");
    assert_eq!(report["counts"]["skipped"], 5, "{report}");
    assert_eq!(
        report["files"][0]["contracts"],
        serde_json::json!([]),
        "not checked on part of a file"
    );
    assert!(
        report["files"][0]["notes"][0]
            .as_str()
            .unwrap()
            .contains("contracts not checked"),
        "{report}"
    );
    let out = test_command(None)
        .arg(repo().join("tests/collections/python-sdk.mcp.yaml"))
        .args(["--env", "nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert!(
        said(&out).contains(r#"no environment "nope" in the file (it has big)"#),
        "{}",
        said(&out)
    );
}

/// Each assertion kind, a snapshot, a capture, each contract and an eval,
/// made to fail: each says what it saw, in text, JSON, JUnit and SARIF.
#[test]
#[cfg(unix)]
fn each_kind_of_check_fails_and_says_what_it_saw() {
    let fake = FakeProvider::start();
    let dir = tempfile::tempdir().unwrap();
    let broken = repo().join("tests/collections-broken/fails.mcp.yaml");
    let captures = dir.path().join("captures");
    let out = test_command(Some(&fake))
        .arg(&broken)
        .arg("--capture-dir")
        .arg(&captures)
        .output()
        .unwrap();
    let s = said(&out);
    assert_eq!(out.status.code(), Some(1), "{s}");
    for (what, saw) in [
        (
            r#"12:9: result.content[0].text contains "bye" did not hold"#,
            r#"saw result.content[0].text = "token [secret:MCPSCOPE_TEST_TOKEN] says hi""#,
        ),
        ("17:9: latency < 1us did not hold", "saw latency = "),
        (
            "18:9: count(result.content) >= 5 did not hold",
            r#"saw result.content[*] = [{"text":"3""#,
        ),
        (
            "23:9: error.code == -32602 did not hold",
            "saw error.code = none (not an error)",
        ),
        (
            "24:9: result.isError == true did not hold",
            "saw result.isError = false",
        ),
        (
            "25:5: snapshot greeting.json did not hold",
            r#"the snapshot "Hello from somewhere else" vs the server "Hello from mcpscope-py-server""#,
        ),
        (
            "32:16: capture missing = result.structuredContent.nothing did not hold",
            "result.structuredContent.nothing is absent from the answer",
        ),
        (
            "failed  contract must_call describe_person",
            "saw tools called: echo, add",
        ),
        ("failed  contract must_not_call add", "saw add was called 4 time(s)"),
        (
            "failed  contract max_requests 2",
            "requests were sent (the handshake's included)",
        ),
        ("failed  contract max_duration 1ms", "saw the session took"),
        ("failed  contract surface", "saw breaking tool get-sum: removed"),
        (
            "failed  eval a lazy model calls nothing with openai:lazy-fake: 0/2 runs passed (needs 50%)",
            "run 1: expected echo was not called",
        ),
        (
            "passed  eval a lazy model calls nothing with openai:gpt-fake: 2/2",
            "passed  this one passes",
        ),
        ("2 passed, 11 failed, 0 errors", "capture kept:"),
    ] {
        assert!(s.contains(what), "{what}: {s}");
        assert!(s.contains(saw), "{saw}: {s}");
    }
    // The capture of the failed session, with the secret masked in it too.
    let kept: Vec<PathBuf> = std::fs::read_dir(&captures)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    let capture = std::fs::read_to_string(&kept[0]).unwrap();
    assert!(
        capture.contains("[secret:MCPSCOPE_TEST_TOKEN]"),
        "the echoed argument is in it, masked"
    );
    assert!(!capture.contains(TOKEN));
    // A capture as any other: lint reads it (0: clean, 1: findings; 4 would be unreadable).
    let check = mcpscope_command().arg("lint").arg(&kept[0]).output().unwrap();
    assert!(matches!(check.status.code(), Some(0 | 1)), "{}", said(&check));
    // Every report format, each checked by its validator; the secret in none.
    let mut sarif_files = Vec::new();
    for format in ["json", "junit", "sarif", "text"] {
        let file = dir.path().join(format!("report.{format}"));
        let out = test_command(Some(&fake))
            .arg(&broken)
            .args(["--format", format, "-o"])
            .arg(&file)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", said(&out));
        let written = std::fs::read_to_string(&file).unwrap();
        assert!(!written.contains(TOKEN) && !said(&out).contains(TOKEN), "{format}");
        match format {
            "json" => {
                let v: Value = serde_json::from_str(&written).unwrap();
                assert_eq!(v["passed"], false);
                assert_eq!(v["counts"]["failed"], 11, "{v}");
                let step = &v["files"][0]["steps"][0];
                assert_eq!(step["checks"][0]["at"], serde_json::json!({"line": 12, "column": 9}));
                assert_eq!(step["method"], "tools/call");
            }
            "junit" => {
                assert_eq!(junit_schema_errors(&file), "", "{written}");
                assert!(written.contains("failures=\"11\""), "{written}");
            }
            "sarif" => {
                let v: Value = serde_json::from_str(&written).unwrap();
                let results = v["runs"][0]["results"].as_array().unwrap();
                let snapshot = results.iter().find(|r| r["ruleId"] == "snapshot").unwrap();
                assert_eq!(
                    snapshot["locations"][0]["physicalLocation"]["region"],
                    serde_json::json!({"startLine": 25, "startColumn": 5})
                );
                sarif_files.push(file);
            }
            _ => assert!(written.contains("2 passed, 11 failed"), "{written}"),
        }
    }
    assert_eq!(sarif_problems(&sarif_files), "");
}

#[test]
fn mistakes_in_a_file_are_said_with_their_place_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mistakes.mcp.yaml");
    std::fs::copy(repo().join("tests/collections-broken/mistakes.mcp.yaml"), &file).unwrap();
    let good = dir.path().join("good.mcp.yaml");
    std::fs::write(
        &good,
        "servers: {s: {command: python3, args: [-c, \"open('started', 'w').close()\"]}}\nsteps: [{request: ping}]\n",
    )
    .unwrap();
    let out = test_command(None).arg(dir.path()).output().unwrap();
    let s = said(&out);
    assert_eq!(out.status.code(), Some(4), "{s}");
    let f = file.display();
    assert!(
        s.contains(&format!(
            r#"{f}:9:5: step 1 has no key "asert" (did you mean "assert"?)"#
        )),
        "{s}"
    );
    assert!(
        s.contains(&format!(
            r#"{f}:12:26: assertion "result.isError ==": expected a field or a value"#
        )),
        "{s}"
    );
    assert!(
        s.contains(&format!(r#"{f}:13:19: lint "loud": error, warning or info"#)),
        "{s}"
    );
    assert!(s.contains("nothing was run"), "{s}");
    assert!(
        !dir.path().join("started").exists(),
        "no server was started, not even the good file's"
    );

    // Found once the server is reached, still before any step: an unknown
    // tool, and a variable nothing gives a value.
    let py = need(repo().join("tests/peers/.venv/bin/python"));
    std::fs::remove_file(&file).unwrap();
    std::fs::write(
        &good,
        format!(
            "servers: {{py: {{command: {}, args: [{}]}}}}\nsteps:\n  - call: ad\n    arguments: {{a: 1, b: 2}}\n  - call: echo\n    arguments: {{message: \"{{{{nope}}}}\"}}\n",
            py.display(),
            repo().join("tests/servers/py_server.py").display()
        ),
    )
    .unwrap();
    let out = test_command(None).arg(&good).output().unwrap();
    let s = said(&out);
    assert_eq!(out.status.code(), Some(4), "{s}");
    assert!(s.contains("5:5: step 2: no variable {{nope}}"), "{s}");
    std::fs::write(&good, std::fs::read_to_string(&good).unwrap().replace("{{nope}}", "hi")).unwrap();
    let out = test_command(None).arg(&good).output().unwrap();
    let s = said(&out);
    assert_eq!(out.status.code(), Some(4), "{s}");
    assert!(
        s.contains(r#"3:5: step 1: the server has no tool "ad" (did you mean "add"?)"#),
        "{s}"
    );
    assert!(!s.contains("  passed "), "no step ran: {s}");
    let out = test_command(None).arg(dir.path().join("none")).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", said(&out));
    let empty = tempfile::tempdir().unwrap();
    let out = test_command(None).arg(empty.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(64), "{}", said(&out));
    assert!(said(&out).contains("no test files"));
}

#[test]
#[cfg(unix)]
fn snapshots_are_written_compared_and_updated() {
    let dir = tempfile::tempdir().unwrap();
    let tests = copied("tests/collections", dir.path());
    let file = tests.join("python-sdk.mcp.yaml");
    let snap = tests.join("__snapshots__/python-sdk/greeting.json");
    std::fs::remove_file(&snap).unwrap();
    let run = |extra: &[&str]| test_command(None).arg(&file).args(extra).output().unwrap();
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(0), "written when missing: {}", said(&out));
    let written = std::fs::read_to_string(&snap).unwrap();
    assert!(written.contains("Hello from mcpscope-py-server"), "{written}");
    std::fs::write(&snap, written.replace("Hello from", "Goodbye from")).unwrap();
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(
        said(&out).contains("differs (--update-snapshots takes this answer)"),
        "{}",
        said(&out)
    );
    let out = run(&["--update-snapshots"]);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    assert_eq!(
        std::fs::read_to_string(&snap).unwrap(),
        written,
        "the answer taken again"
    );
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
}

/// `--against`: the steps run on `mcpscope mock` of a recording, no server
/// started; an answer that breaks the tool's output schema is caught there.
#[test]
#[cfg(unix)]
fn against_a_recording_the_steps_run_on_its_mock() {
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("py.jsonl");
    let py = py_server();
    let out = mcpscope_command()
        .args([
            "call",
            "--tool-name",
            "add",
            "--tool-arg",
            "a=2",
            "--tool-arg",
            "b=40",
            "--capture",
        ])
        .arg(&capture)
        .arg("--")
        .arg(&py.program)
        .args(&py.args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", said(&out));
    let file = dir.path().join("add.mcp.yaml");
    std::fs::write(
        &file,
        "servers: {nowhere: {command: /nonexistent/server}}\nsteps:\n  - call: add\n    arguments: {a: 2, b: 40}\n    output_schema: true\n    assert: [result.structuredContent.result == 42]\n",
    )
    .unwrap();
    let out = test_command(None)
        .arg(&file)
        .arg("--against")
        .arg(&capture)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    // The recording changed: the structured result is no longer an integer.
    let doctored = dir.path().join("doctored.jsonl");
    std::fs::write(
        &doctored,
        std::fs::read_to_string(&capture).unwrap().replace(
            r#"\"structuredContent\":{\"result\":42}"#,
            r#"\"structuredContent\":{\"result\":\"42\"}"#,
        ),
    )
    .unwrap();
    assert_ne!(std::fs::read(&doctored).unwrap(), std::fs::read(&capture).unwrap());
    let out = test_command(None)
        .arg(&file)
        .arg("--against")
        .arg(&doctored)
        .output()
        .unwrap();
    let s = said(&out);
    assert_eq!(out.status.code(), Some(1), "{s}");
    assert!(s.contains("output_schema did not hold"), "{s}");
    assert!(s.contains("saw structuredContent: at /result"), "{s}");
    // Without --against, the file's own server: it cannot be started.
    let out = test_command(None).arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", said(&out));
    assert!(said(&out).contains("/nonexistent/server"), "{}", said(&out));
}

/// A lint contract broken by a server that logs on stdout, files in
/// parallel, and a secret nowhere in the clear.
#[test]
#[cfg(unix)]
fn the_lint_contract_and_files_in_parallel() {
    let dir = tempfile::tempdir().unwrap();
    for n in 0..3 {
        std::fs::write(
            dir.path().join(format!("f{n}.mcp.yaml")),
            format!(
                "name: file {n}\nservers: {{f: {{command: python3, args: [{}, --mode, stdout-log]}}}}\nsteps:\n  - request: tools/list\n    assert: [kind == \"result\"]\ncontracts: {{lint: error}}\n",
                faulty_path()
            ),
        )
        .unwrap();
    }
    let out = test_command(None)
        .arg(dir.path())
        .args(["--parallel", "3", "--format", "json"])
        .output()
        .unwrap();
    let s = said(&out);
    assert_eq!(out.status.code(), Some(1), "{s}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let files = v["files"].as_array().unwrap();
    assert_eq!(files.len(), 3);
    for (n, f) in files.iter().enumerate() {
        assert_eq!(f["name"], format!("file {n}"), "in file order");
        let lint = &f["contracts"][0];
        assert_eq!(lint["what"], "lint error");
        assert_eq!(lint["passed"], false, "{lint}");
        assert!(lint["saw"][0].as_str().unwrap().contains("not-json"), "{lint}");
    }
}
