//! Lint findings as CI systems read them: SARIF 2.1.0 (GitHub code
//! scanning shows each finding on the pull request) and JUnit XML (GitLab's
//! test report, the usual GitHub Actions reporters). No I/O: the caller
//! says where each finding's first record lies in the capture.

use super::{Finding, RULES, Severity};
use crate::text::xml_escape;
use serde_json::{Value, json};
use std::collections::HashMap;

/// Where the schema is served now (the OASIS path most tools still write 404s).
pub const SARIF_SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// GitHub rejects a run with more than 25,000 results and shows only 5,000.
pub const SARIF_MAX_RESULTS: usize = 5_000;

/// The capture the findings are about, as the report names it.
pub struct Subject<'a> {
    /// The capture's path as the user gave it (a repository-relative path
    /// stays relative, so code scanning can place the finding).
    pub path: &'a str,
    /// The line of a record in the capture, by its sequence number.
    pub line_of: &'a dyn Fn(u64) -> Option<usize>,
    pub tool_version: &'a str,
}

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info | Severity::Ok => "note",
    }
}

/// A finding's identity across runs: its rule and its message with the
/// numbers taken out (a slow response's milliseconds, a sequence number
/// change from run to run; the method, tool and ids named in it do not),
/// then which occurrence of that identity it is in this run.
fn fingerprint(f: &Finding, seen: &mut HashMap<String, usize>) -> String {
    let mut shape = String::with_capacity(f.rule.len() + f.message.len() + 1);
    shape.push_str(f.rule);
    shape.push('\0');
    let mut in_number = false;
    for c in f.message.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                shape.push('0');
            }
            in_number = true;
        } else {
            in_number = false;
            shape.push(c);
        }
    }
    let digest = ring::digest::digest(&ring::digest::SHA256, shape.as_bytes());
    let hex: String = digest.as_ref()[..16].iter().map(|b| format!("{b:02x}")).collect();
    let n = seen.entry(hex.clone()).or_insert(0);
    *n += 1;
    format!("{hex}:{n}")
}

/// The capture as a SARIF artifact URI: a relative path as it is (with `/`),
/// an absolute one as a `file://` URI.
pub fn artifact_uri(path: &str) -> String {
    let p = std::path::Path::new(path);
    if p.is_absolute()
        && let Ok(u) = url::Url::from_file_path(p)
    {
        return u.to_string();
    }
    path.replace('\\', "/")
        .split('/')
        .map(|seg| {
            url::form_urlencoded::byte_serialize(seg.as_bytes())
                .collect::<String>()
                .replace('+', "%20")
        })
        .collect::<Vec<_>>()
        .join("/")
}

fn location(uri: &str, line: usize, seq: u64) -> Value {
    json!({
        "physicalLocation": {
            "artifactLocation": {"uri": uri},
            "region": {"startLine": line.max(1)},
        },
        "message": {"text": format!("record #{seq}")},
    })
}

/// SARIF 2.1.0: one run, every lint rule described (so GitHub can show its
/// help), one result per finding located at its first record's line in the
/// capture (the other records as related locations), with a fingerprint
/// that stays the same while the problem does. Past [`SARIF_MAX_RESULTS`]
/// the rest are counted in a notification instead.
pub fn sarif(findings: &[Finding], subject: &Subject) -> Value {
    let uri = artifact_uri(subject.path);
    let rules: Vec<Value> = RULES
        .iter()
        .map(|r| {
            let mut rule = json!({
                "id": r.id,
                "shortDescription": {"text": r.summary},
                "fullDescription": {"text": r.summary},
                "help": {"text": format!("{} (mcpscope lint rule {})", r.summary, r.id)},
                "properties": {"tags": ["mcp", "protocol"]},
            });
            // SARIF wants a name unlike the id (case aside), or none.
            let name = rule_name(r.id);
            if !name.eq_ignore_ascii_case(r.id) {
                rule["name"] = json!(name);
            }
            rule
        })
        .collect();
    let index: HashMap<&str, usize> = RULES.iter().enumerate().map(|(i, r)| (r.id, i)).collect();
    let mut seen = HashMap::new();
    let results: Vec<Value> = findings
        .iter()
        .take(SARIF_MAX_RESULTS)
        .map(|f| {
            let mut located = f.seqs.iter().filter_map(|&s| (subject.line_of)(s).map(|l| (s, l)));
            let first = located.next();
            let mut r = json!({
                "ruleId": f.rule,
                "level": level(f.severity),
                "message": {"text": f.message},
                "locations": [match first {
                    Some((seq, line)) => location(&uri, line, seq),
                    // A finding about the session as a whole: the capture's first line.
                    None => location(&uri, 1, 0),
                }],
                "partialFingerprints": {"mcpscopeFinding/v1": fingerprint(f, &mut seen)},
                "properties": {"seqs": f.seqs},
            });
            if let Some(i) = index.get(f.rule) {
                r["ruleIndex"] = json!(i);
            }
            let related: Vec<Value> = located
                .enumerate()
                .map(|(i, (seq, line))| {
                    let mut l = location(&uri, line, seq);
                    l["id"] = json!(i + 1);
                    l
                })
                .collect();
            if !related.is_empty() {
                r["relatedLocations"] = Value::Array(related);
            }
            r
        })
        .collect();
    let mut invocation = json!({"executionSuccessful": true});
    if findings.len() > SARIF_MAX_RESULTS {
        invocation["toolExecutionNotifications"] = json!([{
            "level": "warning",
            "message": {"text": format!(
                "{} more finding(s) left out: GitHub code scanning shows at most {SARIF_MAX_RESULTS} per run; \
                 `mcpscope lint --format json` lists them all",
                findings.len() - SARIF_MAX_RESULTS
            )},
        }]);
    }
    json!({
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "mcpscope",
                "version": subject.tool_version,
                "semanticVersion": subject.tool_version.split_whitespace().next().unwrap_or_default(),
                "informationUri": "https://modelcontextprotocol.io/specification",
                "rules": rules,
            }},
            "invocations": [invocation],
            "artifacts": [{"location": {"uri": uri}, "mimeType": "application/x-ndjson"}],
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    })
}

/// `not-json` → `NotJson`: SARIF's `name` is an identifier-like word.
fn rule_name(id: &str) -> String {
    id.split(['-', '/'])
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// JUnit XML: one test suite for the capture (named by its path), one test
/// case per rule (`classname` `mcpscope.lint`), failed by its error-level
/// findings (each a `<failure>` line); warnings and notes go to the case's
/// `<system-out>`, so they show without failing the build. Only what the
/// strict schema CI tools validate against allows (no `file` attribute).
pub fn junit(findings: &[Finding], subject: &Subject) -> String {
    let mut body = String::new();
    let mut failures = 0;
    for rule in RULES {
        let mine: Vec<&Finding> = findings.iter().filter(|f| f.rule == rule.id).collect();
        let errors: Vec<&&Finding> = mine.iter().filter(|f| f.severity == Severity::Error).collect();
        let describe = |f: &Finding| {
            let at: Vec<String> = f
                .seqs
                .iter()
                .map(|&s| match (subject.line_of)(s) {
                    Some(l) => format!("#{s} (line {l})"),
                    None => format!("#{s}"),
                })
                .collect();
            format!("{}: {} [{}]", f.severity.as_str(), f.message, at.join(", "))
        };
        body.push_str(&format!(
            "    <testcase classname=\"mcpscope.lint\" name=\"{}\" time=\"0\">",
            xml_escape(rule.id)
        ));
        if let Some(first) = errors.first() {
            failures += 1;
            let text: Vec<String> = errors.iter().map(|f| describe(f)).collect();
            body.push_str(&format!(
                "\n      <failure type=\"{}\" message=\"{}\">{}</failure>",
                xml_escape(rule.id),
                xml_escape(&first.message),
                xml_escape(&text.join("\n"))
            ));
        }
        let others: Vec<String> = mine
            .iter()
            .filter(|f| f.severity != Severity::Error)
            .map(|f| describe(f))
            .collect();
        if !others.is_empty() {
            body.push_str(&format!(
                "\n      <system-out>{}</system-out>",
                xml_escape(&others.join("\n"))
            ));
        }
        if errors.is_empty() && others.is_empty() {
            body.push_str("</testcase>\n");
        } else {
            body.push_str("\n    </testcase>\n");
        }
    }
    let tests = RULES.len();
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <testsuites name=\"mcpscope lint\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" time=\"0\">\n  \
         <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\" time=\"0\">\n{body}  \
         </testsuite>\n</testsuites>\n",
        xml_escape(subject.path)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(rule: &'static str, severity: Severity, seqs: Vec<u64>, message: &str) -> Finding {
        Finding::new(rule, severity, seqs, message)
    }

    fn subject<'a>(line_of: &'a dyn Fn(u64) -> Option<usize>) -> Subject<'a> {
        Subject {
            path: "captures/session one.jsonl",
            line_of,
            tool_version: "0.1.0 (commit abc)",
        }
    }

    #[test]
    fn sarif_places_each_finding_on_its_records_line_with_a_stable_fingerprint() {
        let line_of = |s: u64| (s < 100).then_some(s as usize + 1);
        let findings = vec![
            finding(
                "slow-response",
                Severity::Warning,
                vec![4, 5],
                "tools/call took 5012 ms",
            ),
            finding(
                "slow-response",
                Severity::Warning,
                vec![8, 9],
                "tools/call took 7300 ms",
            ),
            finding("not-json", Severity::Error, vec![200], "line is not JSON"),
        ];
        let v = sarif(&findings, &subject(&line_of));
        assert_eq!(v["version"], "2.1.0");
        let run = &v["runs"][0];
        assert_eq!(run["tool"]["driver"]["rules"].as_array().unwrap().len(), RULES.len());
        let r = &run["results"];
        assert_eq!(r[0]["level"], "warning");
        assert_eq!(r[0]["locations"][0]["physicalLocation"]["region"]["startLine"], 5);
        assert_eq!(
            r[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            "captures/session%20one.jsonl"
        );
        assert_eq!(
            r[0]["relatedLocations"][0]["physicalLocation"]["region"]["startLine"],
            6
        );
        let rule = r[0]["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(run["tool"]["driver"]["rules"][rule]["id"], "slow-response");
        // The same problem with other numbers: the same identity, told apart by its occurrence.
        let fp = |i: usize| {
            r[i]["partialFingerprints"]["mcpscopeFinding/v1"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        let (a, b) = (fp(0), fp(1));
        assert_eq!(a.split(':').next(), b.split(':').next());
        assert_ne!(a, b);
        assert!(a.ends_with(":1") && b.ends_with(":2"));
        // And the same across runs.
        let again = sarif(&findings, &subject(&line_of));
        assert_eq!(
            again["runs"][0]["results"][1]["partialFingerprints"],
            r[1]["partialFingerprints"]
        );
        // A record the capture does not have: the file's first line.
        assert_eq!(r[2]["level"], "error");
        assert_eq!(r[2]["locations"][0]["physicalLocation"]["region"]["startLine"], 1);
    }

    #[test]
    fn sarif_keeps_to_what_github_shows_and_says_what_it_left_out() {
        let line_of = |s: u64| Some(s as usize);
        let findings: Vec<Finding> = (0..SARIF_MAX_RESULTS as u64 + 3)
            .map(|s| finding("crlf", Severity::Info, vec![s + 2], "a line ending in CRLF"))
            .collect();
        let v = sarif(&findings, &subject(&line_of));
        assert_eq!(v["runs"][0]["results"].as_array().unwrap().len(), SARIF_MAX_RESULTS);
        let note = &v["runs"][0]["invocations"][0]["toolExecutionNotifications"][0]["message"]["text"];
        assert!(
            note.as_str().unwrap().starts_with("3 more finding(s) left out"),
            "{note}"
        );
    }

    #[test]
    fn junit_has_a_case_per_rule_failed_only_by_errors() {
        let line_of = |s: u64| Some(s as usize + 1);
        let findings = vec![
            finding(
                "not-json",
                Severity::Error,
                vec![3],
                "stdout line is not JSON: <oops> & \u{1b}",
            ),
            finding("crlf", Severity::Warning, vec![7], "a line ending in CRLF"),
        ];
        let x = junit(&findings, &subject(&line_of));
        assert!(x.contains(&format!("tests=\"{}\" failures=\"1\"", RULES.len())), "{x}");
        assert!(
            x.contains("<failure type=\"not-json\" message=\"stdout line is not JSON: &lt;oops&gt; &amp; \\u001b\">")
        );
        assert!(x.contains("error: stdout line is not JSON: &lt;oops&gt; &amp; \\u001b [#3 (line 4)]"));
        assert!(x.contains("<system-out>warning: a line ending in CRLF [#7 (line 8)]</system-out>"));
        assert!(x.contains("<testcase classname=\"mcpscope.lint\" name=\"blank-line\""));
        assert_eq!(rule_name("not-json"), "NotJson");
        let v = sarif(&findings, &subject(&line_of));
        let rules = v["runs"][0]["tool"]["driver"]["rules"].as_array().unwrap();
        let crlf = rules.iter().find(|r| r["id"] == "crlf").unwrap();
        assert!(
            crlf.get("name").is_none(),
            "a name that only recases the id is left out"
        );
    }
}
