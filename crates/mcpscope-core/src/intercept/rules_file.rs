//! A rules file: JSON (`{"faults": ["EXPR => ACTION", …]}` or a list of
//! strings) or TOML (`faults = ["…"]`, or `[[fault]]` tables with `rule`
//! or `match` and `action`), with breakpoints alike (`breaks`/`[[break]]`
//! with `match`, `toward` and `timeout`).

use super::rule::{Breakpoint, FaultRule, RuleError, Toward, parse_fault};
use crate::duration::DurationError;
use crate::filter::ast::Span;
use crate::filter::{Filter, FilterError};
use serde_json::Value;
use std::fmt;

/// The rules, breakpoints and seed a file gives.
#[derive(Debug, Default)]
pub struct RulesFile {
    pub faults: Vec<FaultRule>,
    pub breakpoints: Vec<Breakpoint>,
    pub seed: Option<u64>,
}

/// Why a rules file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum RulesFileError {
    /// The file is not JSON, or not TOML, at all. Line and column count
    /// from 1, the column in characters.
    #[error("not {format} at line {line}, column {column}: {message}")]
    Syntax {
        format: Format,
        line: usize,
        column: usize,
        message: String,
        /// The line the error is on.
        line_text: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// TOML that read but has no JSON form (the rules are read as JSON).
    #[error(transparent)]
    NoJsonForm(serde_json::Error),
    #[error("a rules file holds a list of rules or an object with `faults` and `breaks`")]
    Shape,
    /// The `index`th fault rule (from 1).
    #[error("fault {index}: {problem}")]
    Fault { index: usize, problem: ItemError },
    /// The `index`th breakpoint (from 1).
    #[error("break {index}: {problem}")]
    Break { index: usize, problem: ItemError },
}

/// The file's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    Toml,
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::Json => "JSON",
            Format::Toml => "TOML",
        })
    }
}

/// What is wrong with one fault rule or breakpoint of the file.
#[derive(Debug, thiserror::Error)]
pub enum ItemError {
    #[error("give `rule`, or `match` and `action`")]
    NoRule,
    #[error("a rule is a string or a table")]
    NotARule,
    /// `text`: the rule as the file gives it.
    #[error("{error}")]
    Rule { text: String, error: RuleError },
    #[error("give `match`")]
    NoMatch,
    #[error("toward is c2s, s2c or both")]
    Toward,
    /// TOML has no null: this was `nan` or `inf`, which its conversion to
    /// JSON turns into null.
    #[error("timeout is not a finite number of seconds")]
    InfiniteTimeout,
    #[error("timeout {0}")]
    Timeout(DurationError),
    /// `text`: the breakpoint's `match` as the file gives it.
    #[error("{error}")]
    Filter { text: String, error: FilterError },
    #[error("a breakpoint is a string or a table")]
    NotABreakpoint,
}

impl RulesFileError {
    /// The error on one line, then, when it is about some text of the
    /// file, that text with a caret under the error.
    pub fn render(&self) -> String {
        let shown = match self {
            RulesFileError::Syntax {
                column,
                message,
                line_text,
                ..
            } => {
                let at = line_text
                    .char_indices()
                    .nth(column - 1)
                    .map_or(line_text.len(), |(i, _)| i);
                Some(FilterError::new(message.as_str(), Span::new(at, at)).render(line_text))
            }
            RulesFileError::Fault { problem, .. } | RulesFileError::Break { problem, .. } => match problem {
                ItemError::Rule { text, error } => Some(error.render(text)),
                ItemError::Filter { text, error } => Some(error.render(text)),
                _ => None,
            },
            RulesFileError::Shape | RulesFileError::NoJsonForm(_) => None,
        };
        match shown {
            Some(s) => format!("{self}\n{s}"),
            None => self.to_string(),
        }
    }
}

/// Line and column (from 1, the column in characters) of byte `at` in
/// `text`, and that line.
fn position(text: &str, at: usize) -> (usize, usize, String) {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    let line = text[..at].matches('\n').count() + 1;
    let column = text[start..at].chars().count() + 1;
    (line, column, text[start..end].trim_end_matches('\r').to_owned())
}

fn json_syntax(text: &str, e: serde_json::Error) -> RulesFileError {
    // serde_json counts the column in bytes from 1; its message ends with
    // the position, said again here in characters.
    let line_start: usize = text
        .split_inclusive('\n')
        .take(e.line().saturating_sub(1))
        .map(str::len)
        .sum();
    let (line, column, line_text) = position(text, line_start + e.column().saturating_sub(1));
    let full = e.to_string();
    let message = full
        .strip_suffix(&format!(" at line {} column {}", e.line(), e.column()))
        .unwrap_or(&full)
        .to_owned();
    RulesFileError::Syntax {
        format: Format::Json,
        line,
        column,
        message,
        line_text,
        source: Box::new(e),
    }
}

fn toml_syntax(text: &str, e: toml::de::Error) -> RulesFileError {
    let (line, column, line_text) = position(text, e.span().map_or(0, |s| s.start));
    RulesFileError::Syntax {
        format: Format::Toml,
        line,
        column,
        message: e.message().trim_end().to_owned(),
        line_text,
        source: Box::new(e),
    }
}

pub fn parse_rules_file(text: &str, json: bool) -> Result<RulesFile, RulesFileError> {
    let value: Value = if json {
        serde_json::from_str(text).map_err(|e| json_syntax(text, e))?
    } else {
        let t: toml::Value = toml::from_str(text).map_err(|e| toml_syntax(text, e))?;
        serde_json::to_value(t).map_err(RulesFileError::NoJsonForm)?
    };
    let mut out = RulesFile::default();
    let (faults, breaks) = match &value {
        Value::Array(items) => (Some(items.clone()), None),
        Value::Object(o) => {
            out.seed = o.get("seed").and_then(Value::as_u64);
            let list = |keys: &[&str]| {
                keys.iter()
                    .find_map(|k| o.get(*k))
                    .map(|v| v.as_array().cloned().unwrap_or_else(|| vec![v.clone()]))
            };
            (list(&["faults", "fault"]), list(&["breaks", "break", "breakpoints"]))
        }
        _ => return Err(RulesFileError::Shape),
    };
    for (i, item) in faults.unwrap_or_default().iter().enumerate() {
        let fault = |problem| RulesFileError::Fault { index: i + 1, problem };
        let text = match item {
            Value::String(s) => s.clone(),
            Value::Object(o) => match (o.get("rule"), o.get("match"), o.get("action")) {
                (Some(Value::String(r)), _, _) => r.clone(),
                (_, Some(Value::String(m)), Some(Value::String(a))) => format!("{m} => {a}"),
                _ => return Err(fault(ItemError::NoRule)),
            },
            _ => return Err(fault(ItemError::NotARule)),
        };
        let mut rule = match parse_fault(&text) {
            Ok(rule) => rule,
            Err(error) => return Err(fault(ItemError::Rule { text, error })),
        };
        if let Some(Value::Bool(false)) = item.get("enabled") {
            rule.enabled = false;
        }
        out.faults.push(rule);
    }
    for (i, item) in breaks.unwrap_or_default().iter().enumerate() {
        let refuse = |problem| RulesFileError::Break { index: i + 1, problem };
        let (expr, toward, timeout) = match item {
            Value::String(s) => (s.clone(), Toward::Both, None),
            Value::Object(o) => {
                let expr = o
                    .get("match")
                    .and_then(Value::as_str)
                    .ok_or_else(|| refuse(ItemError::NoMatch))?;
                let toward = match o.get("toward").and_then(Value::as_str) {
                    Some(t) => Toward::parse(t).ok_or_else(|| refuse(ItemError::Toward))?,
                    None => Toward::Both,
                };
                let timeout = match o.get("timeout") {
                    Some(Value::Null) if !json => return Err(refuse(ItemError::InfiniteTimeout)),
                    Some(t) => crate::duration::from_json(t).map_err(|e| refuse(ItemError::Timeout(e)))?,
                    None => None,
                };
                (expr.to_owned(), toward, timeout)
            }
            _ => return Err(refuse(ItemError::NotABreakpoint)),
        };
        let filter = match Filter::parse(&expr) {
            Ok(f) => f,
            Err(error) => return Err(refuse(ItemError::Filter { text: expr, error })),
        };
        out.breakpoints.push(Breakpoint {
            filter,
            toward,
            timeout,
            enabled: true,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intercept::rule::FaultAction;
    use std::time::Duration;

    #[test]
    fn rules_files_in_json_and_toml_say_the_same() {
        let json = r#"{"seed": 7, "faults": ["method == \"ping\" => drop", {"match": "true", "action": "delay 1s", "enabled": false}],
                       "breaks": [{"match": "method == \"tools/call\"", "toward": "c2s", "timeout": "30s"}]}"#;
        let toml = r#"
seed = 7
breaks = [{ match = 'method == "tools/call"', toward = "c2s", timeout = "30s" }]
[[fault]]
rule = 'method == "ping" => drop'
[[fault]]
match = "true"
action = "delay 1s"
enabled = false
"#;
        for (text, is_json) in [(json, true), (toml, false)] {
            let f = parse_rules_file(text, is_json).unwrap();
            assert_eq!(f.seed, Some(7));
            assert_eq!(f.faults.len(), 2);
            assert_eq!(f.faults[0].action, FaultAction::Drop);
            assert!(!f.faults[1].enabled);
            assert_eq!(f.breakpoints.len(), 1);
            assert_eq!(f.breakpoints[0].toward, Toward::Server);
            assert_eq!(f.breakpoints[0].timeout, Some(Duration::from_secs(30)));
        }
        assert!(
            parse_rules_file("[\"true => boom\"]", true)
                .unwrap_err()
                .to_string()
                .contains("fault 1")
        );
        assert!(
            parse_rules_file("faults = 3 [", false)
                .unwrap_err()
                .to_string()
                .contains("not TOML")
        );
    }

    #[test]
    fn out_of_range_timeouts_and_deep_files_are_refused() {
        for (text, json, want) in [
            (
                r#"{"breaks": [{"match": "true", "timeout": 1e300}]}"#,
                true,
                "timeout \"1e+300\" is longer than",
            ),
            (
                r#"{"breaks": [{"match": "true", "timeout": -1}]}"#,
                true,
                "timeout \"-1\" is negative",
            ),
            (
                r#"{"breaks": [{"match": "true", "timeout": "18446744073709551615s"}]}"#,
                true,
                "is longer than",
            ),
            ("[[break]]\nmatch = 'true'\ntimeout = 1e300", false, "is longer than"),
            ("[[break]]\nmatch = 'true'\ntimeout = inf", false, "not a finite number"),
            ("[[break]]\nmatch = 'true'\ntimeout = nan", false, "not a finite number"),
        ] {
            let e = parse_rules_file(text, json).unwrap_err().to_string();
            assert!(e.starts_with("break 1: ") && e.contains(want), "{text}: {e}");
        }
        // The file formats' own nesting is bounded by their parsers.
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(
            parse_rules_file(&deep, true)
                .unwrap_err()
                .to_string()
                .contains("not JSON")
        );
        assert!(
            parse_rules_file(&format!("x = {deep}"), false)
                .unwrap_err()
                .to_string()
                .contains("not TOML")
        );
    }

    /// A file that does not parse names the line and column, in
    /// characters, and shows that line with a caret under the place.
    #[test]
    fn a_file_that_does_not_parse_says_where() {
        let toml = "seed = 7\nfaults = ['é' 3]\n";
        let e = parse_rules_file(toml, false).unwrap_err();
        let RulesFileError::Syntax {
            format, line, column, ..
        } = &e
        else {
            panic!("{e:?}")
        };
        assert_eq!((*format, *line, *column), (Format::Toml, 2, 15), "{e}");
        assert!(e.to_string().starts_with("not TOML at line 2, column 15: "), "{e}");
        assert!(
            std::error::Error::source(&e).is_some(),
            "the parser's own error is kept"
        );
        let shown = e.render();
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(lines[1], "faults = ['é' 3]");
        assert_eq!(lines[2].find('^'), Some(14), "{shown}");

        let json = "{\"faults\": [\n  \"true => drop\",\n  oops\n]}";
        let e = parse_rules_file(json, true).unwrap_err();
        assert!(
            matches!(
                &e,
                RulesFileError::Syntax {
                    format: Format::Json,
                    line: 3,
                    column: 3,
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(e.to_string(), "not JSON at line 3, column 3: expected value");
        assert!(e.render().ends_with("  oops\n  ^ expected value"), "{}", e.render());
    }

    /// A rule or a breakpoint that is wrong is named by its place in the
    /// file and shown with a caret under the words at fault.
    #[test]
    fn a_wrong_rule_is_shown_with_its_text() {
        let e = parse_rules_file("[[fault]]\nmatch = 'true'\naction = 'delay soon'\n", false).unwrap_err();
        assert_eq!(
            e.to_string(),
            "fault 1: \"soon\" is not a duration (e.g. 500ms, 30s, 2m, 1h)"
        );
        assert_eq!(
            e.render().lines().skip(1).collect::<Vec<_>>(),
            [
                "true => delay soon",
                "              ^^^^ \"soon\" is not a duration (e.g. 500ms, 30s, 2m, 1h)"
            ]
        );
        let e = parse_rules_file(r#"{"breaks": ["method == \"x\"", "methd == 1"]}"#, true).unwrap_err();
        assert!(matches!(&e, RulesFileError::Break { index: 2, .. }), "{e:?}");
        assert!(e.render().contains("methd == 1\n^^^^^"), "{}", e.render());
        for (text, want) in [
            (
                "3",
                "a rules file holds a list of rules or an object with `faults` and `breaks`",
            ),
            ("[{\"rule\": 1}]", "fault 1: give `rule`, or `match` and `action`"),
            ("[1]", "fault 1: a rule is a string or a table"),
            ("{\"breaks\": [{}]}", "break 1: give `match`"),
            (
                "{\"breaks\": [{\"match\": \"true\", \"toward\": \"up\"}]}",
                "break 1: toward is c2s, s2c or both",
            ),
            ("{\"breaks\": [1]}", "break 1: a breakpoint is a string or a table"),
        ] {
            assert_eq!(parse_rules_file(text, true).unwrap_err().to_string(), want, "{text}");
        }
    }
}
