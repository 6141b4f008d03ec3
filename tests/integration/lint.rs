//! The protocol lint: one capture per rule that triggers it, real servers that
//! trigger no error, and `mcpscope lint` as a user runs it.

use crate::support::*;
use mcpscope_core::analysis::doctor::{self, DoctorOptions, Status};
use mcpscope_core::analysis::lint::{self, Finding, LintOptions, RULES, Severity};
use mcpscope_core::protocol::handshake::HandshakeOptions;
use mcpscope_core::record::capture;
use mcpscope_core::transport::event::Event;
use mcpscope_core::transport::process::ServerSpec;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Duration;

fn captures() -> PathBuf {
    repo().join("tests/captures")
}

fn lint_file(path: &std::path::Path) -> Vec<Finding> {
    let loaded = capture::load(path).unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
    assert!(loaded.warnings.is_empty(), "{}: {:?}", path.display(), loaded.warnings);
    lint::lint(&loaded.events, &LintOptions::default())
}

fn lines(findings: &[Finding]) -> String {
    findings.iter().map(|f| format!("{}\n", f.line())).collect()
}

#[test]
fn every_rule_has_a_capture_that_triggers_it() {
    let mut failures = Vec::new();
    for rule in RULES {
        let path = captures().join(format!("{}.jsonl", rule.id));
        if !path.exists() {
            failures.push(format!("{}: no capture at {}", rule.id, path.display()));
            continue;
        }
        let findings = lint_file(&path);
        if !findings.iter().any(|f| f.rule == rule.id) {
            failures.push(format!("{}: not triggered; found:\n{}", rule.id, lines(&findings)));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_capture_is_named_after_a_rule() {
    for entry in std::fs::read_dir(captures()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            continue;
        }
        let stem = path.file_stem().unwrap().to_str().unwrap();
        assert!(
            RULES.iter().any(|r| r.id == stem),
            "{} is not named after a rule",
            path.display()
        );
    }
}

/// Each capture shows one problem: apart from the findings its problem
/// drags along, nothing else fires, so the files stay readable examples.
#[test]
fn rule_captures_are_otherwise_clean() {
    // Consequences a capture cannot avoid while showing its rule.
    let allowed: &[(&str, &[&str])] = &[
        // The broken response never reaches the request it answers.
        ("split-message", &["unanswered-request"]),
        ("neither-result-nor-error", &["unanswered-request"]),
        ("response-without-id", &["unanswered-request"]),
        // The server died mid-message.
        ("partial-at-eof", &["exited-during-request"]),
        ("continued-after-unsupported-version", &["unsupported-version"]),
        // A name outside MCP's rule is outside the model providers' too.
        ("tool-name-format", &["provider-tool-name"]),
        // Two names that become one: the one with a dot is refused as it is.
        ("provider-tool-name-clash", &["provider-tool-name"]),
        // The definition over its budget is one with a very long description.
        ("context-budget", &["tool-description-long"]),
        // mcpscope's authorizer refuses what these show, and says so.
        ("oauth-issuer-mismatch", &["authorization-failed"]),
        ("oauth-pkce-s256-missing", &["authorization-failed"]),
        ("oauth-resource-mismatch", &["authorization-failed"]),
        ("oauth-scope-not-advertised", &["authorization-failed"]),
        // Every View that was loaded ran under some policy, and says which.
        ("app-no-initialize", &["app-csp-applied"]),
        ("app-initialized-not-sent", &["app-csp-applied"]),
        ("app-unknown-method", &["app-csp-applied"]),
        ("app-legacy-name", &["app-csp-applied"]),
        ("app-display-mode-undeclared", &["app-csp-applied"]),
        ("app-model-only-tool-call", &["app-csp-applied"]),
        ("app-host-early-message", &["app-csp-applied"]),
        ("app-teardown-unanswered", &["app-csp-applied"]),
    ];
    let mut failures = Vec::new();
    for rule in RULES {
        let path = captures().join(format!("{}.jsonl", rule.id));
        let extra: &[&str] = allowed.iter().find(|(r, _)| *r == rule.id).map_or(&[], |(_, e)| e);
        let findings = lint_file(&path);
        let others: Vec<&Finding> = findings
            .iter()
            .filter(|f| f.rule != rule.id && !extra.contains(&f.rule))
            .collect();
        if !others.is_empty() {
            failures.push(format!(
                "{}: unexpected findings:\n{}",
                rule.id,
                others.iter().map(|f| format!("{}\n", f.line())).collect::<String>()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn live_findings(spec: ServerSpec, client_caps: Value, steps: &[(&str, Option<Value>)]) -> (Vec<Event>, Vec<Finding>) {
    let (c, sink) = client(spec);
    let mut c = c.with_roots(vec![json!({"uri": "file:///tmp", "name": "tmp"})]);
    c.wait_spawned(T).unwrap();
    let hs = c
        .initialize(
            &HandshakeOptions {
                capabilities: client_caps,
                ..HandshakeOptions::default()
            },
            T,
        )
        .unwrap()
        .unwrap();
    assert!(hs.usable(), "{}", hs.verdict_text());
    for (method, params) in steps {
        c.request(method, params.clone(), T).unwrap();
    }
    c.pump_for(Duration::from_millis(500));
    c.close();
    let events = snapshot(&sink);
    let findings = lint::lint(&events, &LintOptions::default());
    (events, findings)
}

#[test]
fn server_everything_live_has_no_error_findings() {
    let (events, findings) = live_findings(
        everything(),
        json!({"roots": {"listChanged": true}}),
        &[
            ("tools/list", None),
            (
                "tools/call",
                Some(json!({"name": "echo", "arguments": {"message": "hi from mcpscope lint"}})),
            ),
            (
                "tools/call",
                Some(json!({"name": "get-structured-content", "arguments": {"location": "Chicago"}})),
            ),
            ("prompts/list", None),
            ("resources/list", None),
        ],
    );
    // The structured-content tool really was checked against its outputSchema.
    assert!(
        received(&events).iter().any(|f| f.text().contains("structuredContent")),
        "{}",
        events.iter().map(describe).collect::<Vec<_>>().join("\n")
    );
    assert!(!lint::has_errors(&findings), "{}", lines(&findings));
}

#[test]
fn sdk_servers_live_have_no_error_findings() {
    for spec in [py_server(), node_zod_server()] {
        let name = spec.display();
        let (_, findings) = live_findings(spec, json!({}), &[("tools/list", None)]);
        assert!(!lint::has_errors(&findings), "{name}:\n{}", lines(&findings));
    }
}

#[test]
fn a_server_that_crashes_mid_request() {
    let (c, sink) = client(faulty("crash"));
    let mut c = c;
    c.wait_spawned(T).unwrap();
    c.initialize(&HandshakeOptions::default(), T).unwrap().unwrap();
    assert!(c.request("tools/list", None, T).is_err());
    c.close();
    let findings = lint::lint(&snapshot(&sink), &LintOptions::default());
    let rules: Vec<&str> = findings.iter().map(|f| f.rule).collect();
    assert!(rules.contains(&"exited-during-request"), "{}", lines(&findings));
    assert!(rules.contains(&"stderr-error"), "{}", lines(&findings));
}

#[test]
fn doctor_reports_lint_findings() {
    let options = DoctorOptions {
        timeout: Duration::from_secs(5),
        probe_enforcement: false,
        ..DoctorOptions::default()
    };
    let report = doctor::diagnose(&faulty("normal"), &options);
    let check = report.check("Protocol lint").expect("a lint check");
    assert_eq!(check.status, Status::Pass, "{check:?}");
    assert!(report.healthy());

    let report = doctor::diagnose(&faulty("stdout-log"), &options);
    let check = report.check("Protocol lint").expect("a lint check");
    assert_eq!(check.status, Status::Fail, "{check:?}");
    assert!(check.details.iter().any(|d| d.contains("[not-json]")), "{check:?}");
}

fn mcpscope(args: &[&str]) -> std::process::Output {
    crate::support::mcpscope_command()
        .args(args)
        .output()
        .expect("running mcpscope")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn lint_cli_exit_codes_text_and_json() {
    let dir = tempfile::tempdir().unwrap();

    // 0: a capture recorded live from the reference server.
    let live = dir.path().join("everything.jsonl");
    let spec = everything();
    let mut call = vec![
        "call",
        "--method",
        "tools/list",
        "--capture",
        live.to_str().unwrap(),
        "--",
    ];
    call.push(&spec.program);
    call.extend(spec.args.iter().map(String::as_str));
    let out = mcpscope(&call);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = mcpscope(&["lint", "--json", live.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    let findings: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(findings.iter().all(|f| f["severity"] != "error"), "{findings:#?}");

    // 1: an error-level finding, as JSON and as text.
    let bad = captures().join("not-json.jsonl");
    let out = mcpscope(&["lint", "--json", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let findings: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let f = findings.iter().find(|f| f["rule"] == "not-json").expect("not-json");
    assert_eq!(f["severity"], "error");
    assert_eq!(f["seqs"], json!([3]));
    assert!(
        f["message"].as_str().unwrap().contains("Server started on stdio"),
        "{f}"
    );

    let out = mcpscope(&["lint", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let report = text(&out.stdout);
    assert!(report.starts_with("error  [not-json] seq 3: "), "{report}");
    assert!(report.contains("1 error(s), 0 warning(s), 0 info"), "{report}");

    // Warnings alone exit 0, and --slow-ms moves the threshold.
    let slow = captures().join("slow-response.jsonl");
    let out = mcpscope(&["lint", "--json", slow.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("slow-response"));
    let out = mcpscope(&["lint", "--json", "--slow-ms", "60000", slow.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(serde_json::from_slice::<Value>(&out.stdout).unwrap(), json!([]));

    // 4: nothing to read.
    let out = mcpscope(&["lint", dir.path().join("missing.jsonl").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(4));
    assert!(
        text(&out.stderr).contains("cannot open capture"),
        "{}",
        text(&out.stderr)
    );
    let not_capture = dir.path().join("other.jsonl");
    std::fs::write(&not_capture, "{\"hello\":1}\n").unwrap();
    let out = mcpscope(&["lint", "--json", not_capture.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(4));
    assert!(
        text(&out.stderr).contains("not an mcpscope capture"),
        "{}",
        text(&out.stderr)
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn lint_findings_agree_with_severity_helpers() {
    let findings = lint_file(&captures().join("crlf.jsonl"));
    assert!(
        findings.iter().all(|f| f.severity == Severity::Warning),
        "{}",
        lines(&findings)
    );
    assert!(!lint::has_errors(&findings));
}

/// Each rule and the capture that triggers it (tests/captures/<rule-id>.jsonl).
fn rule_captures() -> Vec<(&'static lint::Rule, PathBuf)> {
    RULES
        .iter()
        .map(|r| (r, captures().join(format!("{}.jsonl", r.id.replace('/', "-")))))
        .filter(|(_, cap)| cap.exists())
        .collect()
}

/// Every rule's capture as `lint --format sarif` writes it, checked by the
/// official validator with GitHub's ingestion rules; each result points at
/// the capture line of its first record.
#[test]
fn sarif_output_passes_the_official_validator_and_points_at_the_records() {
    let dir = tempfile::tempdir().unwrap();
    let mut written = Vec::new();
    let mut results = 0;
    for (rule, cap) in rule_captures() {
        let out = crate::support::mcpscope_command()
            .args(["lint", "--format", "sarif"])
            .arg(&cap)
            .output()
            .unwrap();
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let lines: Vec<String> = std::fs::read_to_string(&cap)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        for r in v["runs"][0]["results"].as_array().unwrap() {
            results += 1;
            let seq = r["properties"]["seqs"][0].as_u64();
            let line = r["locations"][0]["physicalLocation"]["region"]["startLine"]
                .as_u64()
                .unwrap() as usize;
            if let Some(seq) = seq.filter(|_| line > 1) {
                let record: Value = serde_json::from_str(&lines[line - 1]).unwrap();
                assert_eq!(record["seq"].as_u64(), Some(seq), "{}: {r}", cap.display());
            }
        }
        let file = dir.path().join(format!("{}.sarif", rule.id.replace('/', "-")));
        std::fs::write(&file, &out.stdout).unwrap();
        written.push(file);
    }
    assert!(
        written.len() > 40 && results > 40,
        "{} files, {results} results",
        written.len()
    );
    let problems = sarif_problems(&written);
    assert!(problems.is_empty(), "{problems}");
}

/// The check above can fail: a result GitHub would refuse is reported.
#[test]
fn the_sarif_validator_refuses_what_github_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let out = crate::support::mcpscope_command()
        .args(["lint", "--format", "sarif"])
        .arg(captures().join("crlf.jsonl"))
        .output()
        .unwrap();
    let mut v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["runs"][0]["results"][0]["locations"] = json!([]);
    let bad = dir.path().join("bad.sarif");
    std::fs::write(&bad, serde_json::to_vec(&v).unwrap()).unwrap();
    let problems = sarif_problems(&[bad]);
    assert!(problems.contains("GH1015"), "{problems}");
}

/// `lint --format junit` for every rule's capture: valid for the schema CI
/// tools read, failed exactly where an error-level finding is.
#[test]
fn junit_output_is_valid_and_fails_on_errors_only() {
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for (_, cap) in rule_captures() {
        let out = crate::support::mcpscope_command()
            .args(["lint", "--format", "junit"])
            .arg(&cap)
            .output()
            .unwrap();
        let xml = String::from_utf8(out.stdout).unwrap();
        let errors = lint_file(&cap).iter().any(|f| f.severity == Severity::Error);
        assert_eq!(out.status.code(), Some(if errors { 1 } else { 0 }), "{}", cap.display());
        assert_eq!(xml.contains("<failure "), errors, "{}:\n{xml}", cap.display());
        let file = dir.path().join(format!("{checked}.xml"));
        std::fs::write(&file, &xml).unwrap();
        let problems = junit_schema_errors(&file);
        assert!(problems.is_empty(), "{}: {problems}", cap.display());
        checked += 1;
    }
    assert!(checked > 40);
}
