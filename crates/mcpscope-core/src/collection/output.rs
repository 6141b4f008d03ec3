//! Test reports as people and CI read them: a line per verdict (the CLI's
//! progress), JSON, JUnit XML (one suite per file, one case per step,
//! contract and eval per model) and SARIF 2.1.0 as `lint` writes it (each
//! failure placed at its line and column in the test file). No I/O.

use super::report::{Check, Counts, EvalResult, FileReport, StepResult, Verdict};
use crate::analysis::lint::report::{SARIF_SCHEMA, artifact_uri};
use crate::text::xml_escape;
use serde_json::{Value, json};

/// A step's verdict on one line, then its failed checks (indented), each
/// with what it saw.
pub fn step_lines(s: &StepResult) -> Vec<String> {
    use std::fmt::Write;
    // One line a step, made in one piece.
    let mut line = String::with_capacity(s.name.len() + 32);
    let _ = write!(line, "  {:<7} {}", s.verdict.as_str(), s.name);
    if let Some(d) = s.latency {
        let _ = write!(line, " ({:.1} ms)", d.as_secs_f64() * 1e3);
    }
    let mut out = vec![line];
    if let Some(e) = s.error.as_ref().filter(|e| !e.is_empty()) {
        out.push(format!("          {}: {e}", s.at));
    }
    for c in s.checks.iter().filter(|c| !c.passed) {
        out.extend(check_lines(c));
    }
    out
}

fn check_lines(c: &Check) -> Vec<String> {
    let mut out = vec![format!("          {}: {} did not hold", c.at, c.what)];
    out.extend(c.saw.iter().map(|s| format!("            saw {s}")));
    out
}

pub fn contract_lines(c: &Check) -> Vec<String> {
    let verdict = if c.passed { "passed" } else { "failed" };
    let mut out = vec![format!("  {verdict:<7} contract {}", c.what)];
    if !c.passed {
        out.extend(c.saw.iter().map(|s| format!("            saw {s}")));
    }
    out
}

/// `eval NAME with MODEL: 2/3 runs passed (needs 100%)`.
pub fn eval_summary(e: &EvalResult) -> String {
    format!(
        "eval {} with {}: {}/{} runs passed (needs {:.0}%)",
        e.name,
        e.model,
        e.passed,
        e.runs,
        e.pass_rate * 100.0
    )
}

pub fn eval_lines(e: &EvalResult) -> Vec<String> {
    let mut out = vec![format!("  {:<7} {}", e.verdict.as_str(), eval_summary(e))];
    if let Some(err) = &e.error {
        out.push(format!("          {}: {err}", e.at));
    }
    out.extend(e.failures.iter().map(|f| format!("            {f}")));
    out
}

/// The closing line: counts and the time.
pub fn summary_line(counts: Counts, files: usize, took: std::time::Duration) -> String {
    format!(
        "{} passed, {} failed, {} errors, {} skipped in {} file(s), {:.2} s",
        counts.passed,
        counts.failed,
        counts.errors,
        counts.skipped,
        files,
        took.as_secs_f64()
    )
}

/// The `--format json` document: the verdict, the counts, every file's report.
pub fn json(reports: &[FileReport]) -> JsonReport<'_> {
    let mut counts = Counts::default();
    for r in reports {
        counts.merge(r.counts());
    }
    JsonReport {
        passed: reports.iter().all(FileReport::passed),
        counts,
        files: reports,
    }
}

/// Serialized straight from the reports: for a run of many steps,
/// building a `Value` of them first cost more than printing it.
#[derive(serde::Serialize)]
pub struct JsonReport<'a> {
    pub passed: bool,
    pub counts: Counts,
    pub files: &'a [FileReport],
}

fn case(classname: &str, name: &str, seconds: f64, verdict: Verdict, message: &str, detail: &[String]) -> String {
    let head = format!(
        "    <testcase classname=\"{}\" name=\"{}\" time=\"{seconds:.3}\"",
        xml_escape(classname),
        xml_escape(name)
    );
    let detail = xml_escape(&detail.join("\n"));
    match verdict {
        Verdict::Passed => format!("{head}/>\n"),
        Verdict::Skipped => format!(
            "{head}>\n      <skipped message=\"{}\"/>\n    </testcase>\n",
            xml_escape(message)
        ),
        Verdict::Failed => format!(
            "{head}>\n      <failure type=\"assertion\" message=\"{}\">{detail}</failure>\n    </testcase>\n",
            xml_escape(message)
        ),
        Verdict::Error => format!(
            "{head}>\n      <error type=\"error\" message=\"{}\">{detail}</error>\n    </testcase>\n",
            xml_escape(message)
        ),
    }
}

/// JUnit XML as the strict schema CI tools validate against allows.
pub fn junit(reports: &[FileReport]) -> String {
    let mut suites = String::new();
    let (mut all_tests, mut all_failures, mut all_errors) = (0, 0, 0);
    let mut all_time = 0.0;
    for r in reports {
        let class = format!("mcpscope.test.{}", r.name);
        let mut body = String::new();
        let c = r.counts();
        for p in &r.problems {
            body.push_str(&case(&class, "the file", 0.0, Verdict::Error, p, &r.problems));
        }
        if let Some(e) = &r.error {
            body.push_str(&case(&class, "the session", 0.0, Verdict::Error, e, &[]));
        }
        for s in &r.steps {
            let failed: Vec<String> = s
                .checks
                .iter()
                .filter(|c| !c.passed)
                .flat_map(|c| {
                    std::iter::once(format!("{}: {} did not hold", c.at, c.what))
                        .chain(c.saw.iter().map(|x| format!("  saw {x}")))
                })
                .collect();
            let message = match (&s.error, failed.first()) {
                (Some(e), _) => e.clone(),
                (None, Some(f)) => f.clone(),
                (None, None) => String::new(),
            };
            let secs = s.latency.map_or(0.0, |d| d.as_secs_f64());
            body.push_str(&case(&class, &s.name, secs, s.verdict, &message, &failed));
        }
        for k in &r.contracts {
            let v = if k.passed { Verdict::Passed } else { Verdict::Failed };
            let message = format!("{} did not hold", k.what);
            body.push_str(&case(&class, &format!("contract {}", k.what), 0.0, v, &message, &k.saw));
        }
        for e in &r.evals {
            let message = e.error.clone().unwrap_or_else(|| {
                format!(
                    "{}/{} runs passed (needs {:.0}%)",
                    e.passed,
                    e.runs,
                    e.pass_rate * 100.0
                )
            });
            body.push_str(&case(
                &class,
                &format!("eval {} with {}", e.name, e.model),
                0.0,
                e.verdict,
                &message,
                &e.failures,
            ));
        }
        let tests = c.total();
        let time = r.duration.as_secs_f64();
        all_tests += tests;
        all_failures += c.failed;
        all_errors += c.errors;
        all_time += time;
        suites.push_str(&format!(
            "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{time:.3}\">\n{body}  </testsuite>\n",
            xml_escape(&r.path.display().to_string()),
            c.failed,
            c.errors,
            c.skipped,
        ));
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"mcpscope test\" tests=\"{all_tests}\" failures=\"{all_failures}\" errors=\"{all_errors}\" time=\"{all_time:.3}\">\n{suites}</testsuites>\n"
    )
}

/// SARIF's rules: what kind of check failed.
const RULES: &[(&str, &str)] = &[
    (
        "file",
        "The test file has a mistake (a wrong key, an unknown tool or variable)",
    ),
    ("session", "The server could not be started or reached"),
    ("step-error", "A step could not run (no answer, the session gone)"),
    ("assertion", "An assertion on a step's answer did not hold"),
    (
        "output-schema",
        "A tool's result does not validate against its outputSchema",
    ),
    ("snapshot", "An answer differs from its snapshot"),
    ("capture", "A value to capture is absent from the answer"),
    ("contract", "A contract over the whole session did not hold"),
    ("eval", "An eval's pass rate was not reached"),
];

fn rule_of(what: &str) -> &'static str {
    if what == "output_schema" {
        "output-schema"
    } else if what.starts_with("snapshot ") {
        "snapshot"
    } else if what.starts_with("capture ") {
        "capture"
    } else {
        "assertion"
    }
}

fn result(rule: &str, message: String, uri: &str, line: usize, column: usize) -> Value {
    let index = RULES.iter().position(|(id, _)| *id == rule).unwrap_or(0);
    json!({
        "ruleId": rule,
        "ruleIndex": index,
        "level": "error",
        "message": {"text": message},
        "locations": [{
            "physicalLocation": {
                "artifactLocation": {"uri": uri},
                "region": {"startLine": line.max(1), "startColumn": column.max(1)},
            }
        }],
    })
}

/// `(line, column)` of a `L:C: rest` problem, and the rest.
fn placed(problem: &str) -> (usize, usize, &str) {
    let mut parts = problem.splitn(3, ':');
    let (Some(l), Some(c), Some(rest)) = (parts.next(), parts.next(), parts.next()) else {
        return (1, 1, problem);
    };
    match (l.trim().parse(), c.trim().parse()) {
        (Ok(l), Ok(c)) => (l, c, rest.trim_start()),
        _ => (1, 1, problem),
    }
}

/// SARIF 2.1.0: one run, a result per failed check at its place in the test file.
pub fn sarif(reports: &[FileReport], tool_version: &str) -> Value {
    let mut results = Vec::new();
    for r in reports {
        let uri = artifact_uri(&r.path.display().to_string());
        for p in &r.problems {
            let (l, c, rest) = placed(p);
            results.push(result("file", rest.to_owned(), &uri, l, c));
        }
        if let Some(e) = &r.error {
            results.push(result("session", e.clone(), &uri, 1, 1));
        }
        for s in &r.steps {
            if let (Verdict::Error, Some(e)) = (s.verdict, &s.error) {
                results.push(result(
                    "step-error",
                    format!("{}: {e}", s.name),
                    &uri,
                    s.at.line,
                    s.at.column,
                ));
            }
            for c in s.checks.iter().filter(|c| !c.passed) {
                let mut text = format!("{}: {} did not hold", s.name, c.what);
                for saw in &c.saw {
                    text.push_str(&format!("; saw {saw}"));
                }
                results.push(result(rule_of(&c.what), text, &uri, c.at.line, c.at.column));
            }
        }
        for k in r.contracts.iter().filter(|k| !k.passed) {
            let text = format!("contract {} did not hold; saw {}", k.what, k.saw.join("; "));
            results.push(result("contract", text, &uri, k.at.line, k.at.column));
        }
        for e in r
            .evals
            .iter()
            .filter(|e| matches!(e.verdict, Verdict::Failed | Verdict::Error))
        {
            let text = match &e.error {
                Some(err) => format!("eval {} with {}: {err}", e.name, e.model),
                None => format!(
                    "eval {} with {}: {}/{} runs passed (needs {:.0}%): {}",
                    e.name,
                    e.model,
                    e.passed,
                    e.runs,
                    e.pass_rate * 100.0,
                    e.failures.join("; ")
                ),
            };
            results.push(result("eval", text, &uri, e.at.line, e.at.column));
        }
    }
    let rules: Vec<Value> = RULES
        .iter()
        .map(|(id, text)| {
            json!({
                "id": id,
                "shortDescription": {"text": text},
                "fullDescription": {"text": text},
                "help": {"text": format!("{text} (mcpscope test: the message says what was seen)")},
                "properties": {"tags": ["mcp", "test"]},
            })
        })
        .collect();
    json!({
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "mcpscope test",
                "version": tool_version,
                "informationUri": "https://github.com/mcpscope/mcpscope",
                "rules": rules,
            }},
            "results": results,
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collection::yaml::Pos;
    use std::time::Duration;

    fn report() -> FileReport {
        FileReport {
            path: "tests/collections/a<b.mcp.yaml".into(),
            name: "a<b".into(),
            steps: vec![
                StepResult {
                    name: "echo".into(),
                    at: Pos { line: 7, column: 5 },
                    verdict: Verdict::Failed,
                    checks: vec![Check::new(
                        "result.isError == false",
                        Pos { line: 9, column: 9 },
                        Some(vec!["result.isError = true".into()]),
                    )],
                    error: None,
                    method: "tools/call".into(),
                    latency: Some(Duration::from_millis(3)),
                    request_seq: Some(3),
                    response_seq: Some(4),
                },
                StepResult {
                    name: "later".into(),
                    at: Pos { line: 12, column: 5 },
                    verdict: Verdict::Skipped,
                    checks: vec![],
                    error: Some("left out by --only".into()),
                    method: String::new(),
                    latency: None,
                    request_seq: None,
                    response_seq: None,
                },
            ],
            contracts: vec![Check::new(
                "max_requests 1",
                Pos { line: 20, column: 3 },
                Some(vec!["4 requests".into()]),
            )],
            ..FileReport::default()
        }
    }

    #[test]
    fn junit_and_sarif_place_each_failure() {
        let r = report();
        let x = junit(std::slice::from_ref(&r));
        assert!(x.contains("tests=\"3\" failures=\"2\" errors=\"0\""), "{x}");
        assert!(x.contains("name=\"tests/collections/a&lt;b.mcp.yaml\""), "{x}");
        assert!(
            x.contains("<failure type=\"assertion\" message=\"9:9: result.isError == false did not hold\">"),
            "{x}"
        );
        assert!(x.contains("<skipped message=\"left out by --only\"/>"), "{x}");
        let s = sarif(std::slice::from_ref(&r), "0.1.0");
        let results = s["runs"][0]["results"].as_array().unwrap();
        assert_eq!(results.len(), 2);
        assert_eq!(results[0]["ruleId"], "assertion");
        assert_eq!(
            results[0]["locations"][0]["physicalLocation"]["region"],
            json!({"startLine": 9, "startColumn": 9})
        );
        assert_eq!(
            results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            "tests/collections/a%3Cb.mcp.yaml"
        );
        assert_eq!(results[1]["ruleId"], "contract");
        let lines = step_lines(&r.steps[0]);
        assert_eq!(lines[0], "  failed  echo (3.0 ms)");
        assert_eq!(lines[2], "            saw result.isError = true");
        assert_eq!(placed("3:14: no tool"), (3, 14, "no tool"));
    }
}
