//! Fault rules and breakpoints as written: `EXPR => ACTION [modifiers]`,
//! where EXPR is a display filter.
//!
//! ```text
//! method == "tools/list" => delay 2s
//! method == "notifications/initialized" => drop
//! dir == "s2c" and kind == "result" => corrupt truncate p=0.1 --
//! method == "tools/call" => error -32603 "injected failure" first 2
//! method == "ping" => http-status 503 30 every 3
//! ```

use crate::filter::{Filter, FilterError};
use crate::wire::frame::Direction;
use serde_json::Value;
use std::time::Duration;

/// What a fault rule does to a frame it matches.
#[derive(Clone, Debug, PartialEq)]
pub enum FaultAction {
    /// Hold the frame for a time drawn from `min..=max`, then send it.
    Delay {
        min: Duration,
        max: Duration,
    },
    Drop,
    /// Send it twice.
    Duplicate,
    /// Send it after the next frame going the same way.
    Reorder,
    Corrupt(Corruption),
    /// Send this message instead (the frame's id kept when it has none).
    Replace(Value),
    /// A request: answer its sender with this error (the other side never
    /// sees it). A response: send this error in its place.
    Error {
        code: i64,
        message: String,
    },
    /// Hold it for ever.
    Stall,
    /// Close both sides.
    Disconnect,
    KillServer,
    /// HTTP only: answer the POST that carried it with this status.
    HttpStatus {
        code: u16,
        retry_after: Option<u32>,
    },
    /// HTTP only: send the answer at this many bytes per second.
    Slow {
        bytes_per_sec: u64,
    },
}

/// How `corrupt` breaks a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Corruption {
    /// Cut it in half.
    Truncate,
    /// Flip a few bits of a few bytes.
    FlipBytes,
    /// Put bytes that are not UTF-8 inside it.
    BadUtf8,
    /// Send a line that is not JSON at all.
    NotJson,
    /// One of the above, drawn from the seeded generator.
    Any,
}

impl Corruption {
    pub const NAMES: &[(&str, Corruption)] = &[
        ("truncate", Corruption::Truncate),
        ("flip", Corruption::FlipBytes),
        ("utf8", Corruption::BadUtf8),
        ("not-json", Corruption::NotJson),
    ];

    pub fn name(self) -> &'static str {
        Self::NAMES.iter().find(|(_, c)| *c == self).map_or("any", |(n, _)| n)
    }
}

impl FaultAction {
    /// Whether only the HTTP proxy can do this.
    pub fn http_only(&self) -> bool {
        matches!(self, FaultAction::HttpStatus { .. } | FaultAction::Slow { .. })
    }

    /// The action as it would be written.
    pub fn text(&self) -> String {
        let d = |d: &Duration| crate::text::duration(*d);
        match self {
            FaultAction::Delay { min, max } if min == max => format!("delay {}", d(min)),
            FaultAction::Delay { min, max } => format!("delay {}..{}", d(min), d(max)),
            FaultAction::Drop => "drop".into(),
            FaultAction::Duplicate => "duplicate".into(),
            FaultAction::Reorder => "reorder".into(),
            FaultAction::Corrupt(Corruption::Any) => "corrupt".into(),
            FaultAction::Corrupt(c) => format!("corrupt {}", c.name()),
            FaultAction::Replace(v) => format!("replace {v}"),
            FaultAction::Error { code, message } => format!("error {code} {}", Value::from(message.as_str())),
            FaultAction::Stall => "stall".into(),
            FaultAction::Disconnect => "disconnect".into(),
            FaultAction::KillServer => "kill-server".into(),
            FaultAction::HttpStatus {
                code,
                retry_after: None,
            } => format!("http-status {code}"),
            FaultAction::HttpStatus {
                code,
                retry_after: Some(s),
            } => format!("http-status {code} {s}"),
            FaultAction::Slow { bytes_per_sec } => format!("slow {bytes_per_sec}B/s"),
        }
    }
}

/// Which matches of a rule it acts on.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Modifiers {
    /// Acts with this probability (after the counts below allow it).
    pub probability: Option<f64>,
    /// Only the first N matches.
    pub first: Option<u64>,
    /// Not before the (N+1)th match.
    pub after: Option<u64>,
    /// Every Nth match (the Nth, 2Nth, …).
    pub every: Option<u64>,
}

impl Modifiers {
    /// Whether the `n`th match (from 1) may be acted on, before the dice.
    pub fn counts_allow(&self, n: u64) -> bool {
        self.first.is_none_or(|f| n <= f)
            && self.after.is_none_or(|a| n > a)
            && self.every.is_none_or(|e| e > 0 && n.is_multiple_of(e))
    }

    fn text(&self) -> String {
        let mut s = String::new();
        if let Some(p) = self.probability {
            s.push_str(&format!(" p={p}"));
        }
        if let Some(n) = self.first {
            s.push_str(&format!(" first {n}"));
        }
        if let Some(n) = self.after {
            s.push_str(&format!(" after {n}"));
        }
        if let Some(n) = self.every {
            s.push_str(&format!(" every {n}"));
        }
        s
    }
}

/// A fault rule: frames matching `filter` get `action`.
#[derive(Clone, Debug)]
pub struct FaultRule {
    pub filter: Filter,
    pub action: FaultAction,
    pub modifiers: Modifiers,
    /// Rules can be switched off and on while the proxy runs.
    pub enabled: bool,
}

impl FaultRule {
    /// The rule as written (canonical filter, action, modifiers).
    pub fn text(&self) -> String {
        format!(
            "{} => {}{}",
            self.filter.canonical(),
            self.action.text(),
            self.modifiers.text()
        )
    }
}

/// Which way a breakpoint stops frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Toward {
    #[default]
    Both,
    /// Client to server.
    Server,
    /// Server to client.
    Client,
}

impl Toward {
    pub fn admits(self, d: Direction) -> bool {
        match self {
            Toward::Both => true,
            Toward::Server => d == Direction::Out,
            Toward::Client => d == Direction::In,
        }
    }

    pub fn parse(s: &str) -> Option<Toward> {
        match s {
            "both" | "" => Some(Toward::Both),
            "c2s" | "server" | "to-server" => Some(Toward::Server),
            "s2c" | "client" | "to-client" => Some(Toward::Client),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Toward::Both => "both",
            Toward::Server => "c2s",
            Toward::Client => "s2c",
        }
    }
}

/// A breakpoint: frames matching `filter` going `toward` are held until
/// the user acts, or forwarded after `timeout`.
#[derive(Clone, Debug)]
pub struct Breakpoint {
    pub filter: Filter,
    pub toward: Toward,
    /// Forwards a held frame after this long, so a forgotten breakpoint
    /// does not hang a real client. None: held until the user acts.
    pub timeout: Option<Duration>,
    pub enabled: bool,
}

impl Breakpoint {
    /// How the board shows it: `[c2s] EXPR`, or the expression alone.
    pub fn text(&self) -> String {
        let mut s = self.filter.canonical();
        if self.toward != Toward::Both {
            s = format!("[{}] {s}", self.toward.as_str());
        }
        s
    }
}

/// A breakpoint as `--break` takes it (`c2s: EXPR`, `s2c: EXPR` or `EXPR`)
/// or as the board shows it (`[c2s] EXPR`).
pub fn parse_breakpoint(text: &str, timeout: Option<Duration>) -> Result<Breakpoint, FilterError> {
    let trimmed = text.trim_start();
    let (toward, expr) = if let Some((dir, rest)) = trimmed
        .strip_prefix('[')
        .and_then(|t| t.split_once(']'))
        .filter(|(dir, _)| matches!(dir.trim(), "c2s" | "s2c"))
    {
        (Toward::parse(dir.trim()).unwrap_or_default(), rest)
    } else {
        match trimmed.split_once(':') {
            Some((dir, rest)) if matches!(dir.trim(), "c2s" | "s2c") => {
                (Toward::parse(dir.trim()).unwrap_or_default(), rest)
            }
            _ => (Toward::Both, text),
        }
    };
    Ok(Breakpoint {
        filter: Filter::parse(expr.trim())?,
        toward,
        timeout,
        enabled: true,
    })
}

/// The `--break` form of a breakpoint the board shows (`[c2s] EXPR` becomes
/// `c2s: EXPR`), to start a proxy again with it.
pub fn break_flag(shown: &str) -> String {
    match shown
        .trim_start()
        .strip_prefix('[')
        .and_then(|t| t.split_once(']'))
        .filter(|(dir, _)| matches!(dir.trim(), "c2s" | "s2c"))
    {
        Some((dir, rest)) => format!("{}: {}", dir.trim(), rest.trim()),
        None => shown.trim().to_owned(),
    }
}

/// Why a rule could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RuleError {
    #[error("a fault rule is `EXPR => ACTION`: no `=>` in {0:?}")]
    NoArrow(String),
    #[error("the filter before `=>` is empty (write `true` to match every frame)")]
    EmptyFilter,
    #[error("bad filter: {0}")]
    Filter(#[from] FilterError),
    #[error("{0}")]
    Action(String),
}

/// Parses `EXPR => ACTION [p=P] [first N] [after N] [every N]`.
pub fn parse_fault(text: &str) -> Result<FaultRule, RuleError> {
    let (expr, action) = split_arrow(text).ok_or_else(|| RuleError::NoArrow(text.to_owned()))?;
    if expr.trim().is_empty() {
        return Err(RuleError::EmptyFilter);
    }
    let filter = Filter::parse(expr.trim())?;
    let (action, modifiers) = parse_action(action.trim()).map_err(RuleError::Action)?;
    Ok(FaultRule {
        filter,
        action,
        modifiers,
        enabled: true,
    })
}

/// The text before and after the first `=>` outside a quoted string.
fn split_arrow(text: &str) -> Option<(&str, &str)> {
    let b = text.as_bytes();
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < b.len() {
        match (quote, b[i]) {
            (Some(_), b'\\') => i += 1,
            (Some(q), c) if c == q => quote = None,
            (None, c @ (b'"' | b'\'')) => quote = Some(c),
            (None, b'=') if b.get(i + 1) == Some(&b'>') => return Some((&text[..i], &text[i + 2..])),
            _ => {}
        }
        i += 1;
    }
    None
}

fn parse_action(text: &str) -> Result<(FaultAction, Modifiers), String> {
    let (word, rest) = split_word(text);
    let mut rest = rest;
    let action = match word {
        "" => return Err("no action after `=>` (delay, drop, duplicate, reorder, corrupt, replace, error, stall, disconnect, kill-server, http-status, slow)".into()),
        "delay" => {
            let (spec, r) = split_word(rest);
            rest = r;
            let (min, max) = match spec.split_once("..") {
                Some((a, b)) => (duration(a)?, duration(b)?),
                None => {
                    let d = duration(spec)?;
                    (d, d)
                }
            };
            if min > max {
                return Err(format!("delay {spec}: the range runs backwards"));
            }
            FaultAction::Delay { min, max }
        }
        "drop" => FaultAction::Drop,
        "duplicate" => FaultAction::Duplicate,
        "reorder" => FaultAction::Reorder,
        "corrupt" => {
            let (how, r) = split_word(rest);
            match Corruption::NAMES.iter().find(|(n, _)| *n == how) {
                Some((_, c)) => {
                    rest = r;
                    FaultAction::Corrupt(*c)
                }
                None if how.is_empty() || is_modifier(how) => FaultAction::Corrupt(Corruption::Any),
                None => {
                    return Err(format!(
                        "corrupt {how}: say how (truncate, flip, utf8 or not-json), or nothing for any of them"
                    ));
                }
            }
        }
        "replace" => {
            let (value, r) = leading_json(rest).map_err(|e| format!("replace: {e}"))?;
            rest = r;
            FaultAction::Replace(value)
        }
        "error" => {
            let (code, r) = split_word(rest);
            let code: i64 = code
                .parse()
                .map_err(|_| format!("error {code}: give a JSON-RPC error code, e.g. error -32603 \"message\""))?;
            rest = r;
            let message = if rest.trim_start().starts_with('"') {
                let (v, r) = leading_json(rest).map_err(|e| format!("error {code}: {e}"))?;
                rest = r;
                v.as_str().unwrap_or_default().to_owned()
            } else {
                "injected by mcpscope".to_owned()
            };
            FaultAction::Error { code, message }
        }
        "stall" => FaultAction::Stall,
        "disconnect" => FaultAction::Disconnect,
        "kill-server" => FaultAction::KillServer,
        "http-status" => {
            let (code, r) = split_word(rest);
            let code: u16 = code
                .parse()
                .ok()
                .filter(|c| (100..=599).contains(c))
                .ok_or_else(|| format!("http-status {code}: give a status from 100 to 599"))?;
            rest = r;
            let (after, r) = split_word(rest);
            let retry_after = match after.parse::<u32>() {
                Ok(s) => {
                    rest = r;
                    Some(s)
                }
                Err(_) => None,
            };
            FaultAction::HttpStatus { code, retry_after }
        }
        "slow" => {
            let (rate, r) = split_word(rest);
            rest = r;
            let n = rate
                .strip_suffix("B/s")
                .or_else(|| rate.strip_suffix("b/s"))
                .and_then(|n| n.parse::<u64>().ok())
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("slow {rate}: give a rate such as 100B/s"))?;
            FaultAction::Slow { bytes_per_sec: n }
        }
        other => return Err(format!("unknown action {other:?} (delay, drop, duplicate, reorder, corrupt, replace, error, stall, disconnect, kill-server, http-status, slow)")),
    };
    let modifiers = parse_modifiers(rest)?;
    Ok((action, modifiers))
}

fn is_modifier(word: &str) -> bool {
    word.starts_with("p=") || matches!(word, "first" | "after" | "every")
}

fn parse_modifiers(mut rest: &str) -> Result<Modifiers, String> {
    let mut m = Modifiers::default();
    loop {
        let (word, r) = split_word(rest);
        rest = r;
        if word.is_empty() {
            return Ok(m);
        }
        if let Some(p) = word.strip_prefix("p=") {
            let p: f64 = p
                .parse()
                .ok()
                .filter(|p| (0.0..=1.0).contains(p))
                .ok_or_else(|| format!("{word}: a probability is from 0 to 1"))?;
            m.probability = Some(p);
            continue;
        }
        let slot = match word {
            "first" => &mut m.first,
            "after" => &mut m.after,
            "every" => &mut m.every,
            other => {
                return Err(format!(
                    "unexpected {other:?} after the action (p=0.1, first N, after N, every N)"
                ));
            }
        };
        let (n, r) = split_word(rest);
        rest = r;
        let n: u64 = n
            .parse()
            .ok()
            .filter(|n| *n > 0 || word == "after")
            .ok_or_else(|| format!("{word} {n}: give a whole number"))?;
        *slot = Some(n);
    }
}

fn split_word(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    match s.find(char::is_whitespace) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    }
}

fn duration(s: &str) -> Result<Duration, String> {
    crate::duration::parse(s).map_err(|e| e.to_string())
}

/// One JSON value at the start of `s`, and what follows it.
fn leading_json(s: &str) -> Result<(Value, &str), String> {
    let s = s.trim_start();
    let mut de = serde_json::Deserializer::from_str(s).into_iter::<Value>();
    match de.next() {
        Some(Ok(v)) => {
            let used = de.byte_offset();
            Ok((v, &s[used..]))
        }
        Some(Err(e)) => Err(format!("not JSON: {e}")),
        None => Err("give the JSON to send".into()),
    }
}

/// A rules file: JSON (`{"faults": ["EXPR => ACTION", …]}` or a list of
/// strings) or TOML (`faults = ["…"]`, or `[[fault]]` tables with `rule`
/// or `match` and `action`), with breakpoints alike (`breaks`/`[[break]]`
/// with `match`, `toward` and `timeout`).
#[derive(Debug, Default)]
pub struct RulesFile {
    pub faults: Vec<FaultRule>,
    pub breakpoints: Vec<Breakpoint>,
    pub seed: Option<u64>,
}

pub fn parse_rules_file(text: &str, json: bool) -> Result<RulesFile, String> {
    let value: Value = if json {
        serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?
    } else {
        let t: toml::Value = toml::from_str(text).map_err(|e| format!("not TOML: {e}"))?;
        serde_json::to_value(t).map_err(|e| e.to_string())?
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
        _ => return Err("a rules file holds a list of rules or an object with `faults` and `breaks`".into()),
    };
    for (i, item) in faults.unwrap_or_default().iter().enumerate() {
        let text = match item {
            Value::String(s) => s.clone(),
            Value::Object(o) => match (o.get("rule"), o.get("match"), o.get("action")) {
                (Some(Value::String(r)), _, _) => r.clone(),
                (_, Some(Value::String(m)), Some(Value::String(a))) => format!("{m} => {a}"),
                _ => return Err(format!("fault {}: give `rule`, or `match` and `action`", i + 1)),
            },
            _ => return Err(format!("fault {}: a rule is a string or a table", i + 1)),
        };
        let mut rule = parse_fault(&text).map_err(|e| format!("fault {}: {e}", i + 1))?;
        if let Some(Value::Bool(false)) = item.get("enabled") {
            rule.enabled = false;
        }
        out.faults.push(rule);
    }
    for (i, item) in breaks.unwrap_or_default().iter().enumerate() {
        let (expr, toward, timeout) = match item {
            Value::String(s) => (s.clone(), Toward::Both, None),
            Value::Object(o) => {
                let expr = o
                    .get("match")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("break {}: give `match`", i + 1))?;
                let toward = match o.get("toward").and_then(Value::as_str) {
                    Some(t) => {
                        Toward::parse(t).ok_or_else(|| format!("break {}: toward is c2s, s2c or both", i + 1))?
                    }
                    None => Toward::Both,
                };
                let timeout = match o.get("timeout") {
                    // TOML has no null: this was `nan` or `inf`, which its
                    // conversion to JSON turns into null.
                    Some(Value::Null) if !json => {
                        return Err(format!("break {}: timeout is not a finite number of seconds", i + 1));
                    }
                    Some(t) => crate::duration::from_json(t).map_err(|e| format!("break {}: timeout {e}", i + 1))?,
                    None => None,
                };
                (expr.to_owned(), toward, timeout)
            }
            _ => return Err(format!("break {}: a breakpoint is a string or a table", i + 1)),
        };
        let filter = Filter::parse(&expr).map_err(|e| format!("break {}: {e}", i + 1))?;
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

    fn action(text: &str) -> FaultAction {
        parse_fault(text).unwrap_or_else(|e| panic!("{text}: {e}")).action
    }

    /// A breakpoint the board shows starts a proxy again as the same breakpoint.
    #[test]
    fn a_breakpoint_round_trips_through_the_board_and_the_flag() {
        for flag in [
            r#"c2s: method == "tools/call""#,
            r#"s2c: kind == "error""#,
            r#"method == "ping""#,
        ] {
            let b = parse_breakpoint(flag, None).unwrap();
            let again = parse_breakpoint(&break_flag(&b.text()), None).unwrap();
            assert_eq!(again.text(), b.text(), "{flag}");
            assert_eq!(again.toward, b.toward);
            assert_eq!(parse_breakpoint(&b.text(), None).unwrap().text(), b.text());
        }
        assert_eq!(break_flag(r#"[c2s] method == "x""#), r#"c2s: method == "x""#);
        assert!(parse_breakpoint("c2s: ((", None).is_err());
    }

    #[test]
    fn every_action_reads_and_prints_back() {
        for (text, want) in [
            ("true => delay 2s", "delay 2s"),
            ("true => delay 100ms..2s", "delay 100ms..2s"),
            ("true => drop", "drop"),
            ("true => duplicate", "duplicate"),
            ("true => reorder", "reorder"),
            ("true => corrupt", "corrupt"),
            ("true => corrupt not-json", "corrupt not-json"),
            ("true => replace {\"a\": [1, 2]}", "replace {\"a\":[1,2]}"),
            ("true => error -32603 \"it broke\"", "error -32603 \"it broke\""),
            ("true => stall", "stall"),
            ("true => disconnect", "disconnect"),
            ("true => kill-server", "kill-server"),
            ("true => http-status 503 30", "http-status 503 30"),
            ("true => http-status 500", "http-status 500"),
            ("true => slow 100B/s", "slow 100B/s"),
        ] {
            assert_eq!(action(text).text(), want, "{text}");
        }
        assert!(action("true => slow 5B/s").http_only());
        assert!(!action("true => drop").http_only());
    }

    #[test]
    fn modifiers_follow_the_action_and_choose_which_matches_act() {
        let r = parse_fault(r#"method == "tools/call" => error -1 "x" p=0.5 first 3 after 1 every 2"#).unwrap();
        assert_eq!(
            r.modifiers,
            Modifiers {
                probability: Some(0.5),
                first: Some(3),
                after: Some(1),
                every: Some(2)
            }
        );
        assert_eq!(
            r.text(),
            r#"method == "tools/call" => error -1 "x" p=0.5 first 3 after 1 every 2"#
        );
        let every2 = Modifiers {
            every: Some(2),
            ..Modifiers::default()
        };
        assert_eq!(
            (1..=4).map(|n| every2.counts_allow(n)).collect::<Vec<_>>(),
            [false, true, false, true]
        );
        let first2 = Modifiers {
            first: Some(2),
            ..Modifiers::default()
        };
        assert_eq!(
            (1..=3).map(|n| first2.counts_allow(n)).collect::<Vec<_>>(),
            [true, true, false]
        );
        let after2 = Modifiers {
            after: Some(2),
            ..Modifiers::default()
        };
        assert_eq!(
            (1..=3).map(|n| after2.counts_allow(n)).collect::<Vec<_>>(),
            [false, false, true]
        );
        assert_eq!(action("true => corrupt p=0.1"), FaultAction::Corrupt(Corruption::Any));
    }

    #[test]
    fn an_arrow_inside_a_quoted_string_is_part_of_the_filter() {
        let r = parse_fault(r#"params.name == "a=>b" => drop"#).unwrap();
        assert_eq!(r.filter.canonical(), r#"params.name == "a=>b""#);
        assert_eq!(r.action, FaultAction::Drop);
    }

    #[test]
    fn mistakes_are_named() {
        let err = |t: &str| parse_fault(t).unwrap_err().to_string();
        assert!(err("method == \"x\"").contains("no `=>`"));
        assert!(err(" => drop").contains("empty"));
        assert!(err("methd == \"x\" => drop").contains("bad filter"));
        assert!(err("true => explode").contains("unknown action \"explode\""));
        assert!(err("true => delay soon").contains("not a duration"));
        assert!(err("true => delay 2s..1s").contains("backwards"));
        assert!(err("true => drop p=2").contains("from 0 to 1"));
        assert!(err("true => drop first x").contains("whole number"));
        assert!(err("true => http-status 99").contains("100 to 599"));
        assert!(err("true => replace {oops").contains("not JSON"));
        assert!(err("true => drop loudly").contains("unexpected \"loudly\""));
        assert!(err("true => corrupt gently").contains("say how"));
    }

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
                .contains("fault 1")
        );
        assert!(
            parse_rules_file("faults = 3 [", false)
                .unwrap_err()
                .contains("not TOML")
        );
    }

    #[test]
    fn out_of_range_durations_and_deep_filters_in_rules_are_refused() {
        let err = |t: &str| parse_fault(t).unwrap_err().to_string();
        let e = err("true => delay 18446744073709551615s");
        assert!(e.contains("longer than 8760h"), "{e}");
        let e = err("true => delay 1s..1e30s");
        assert!(e.contains("\"1e30s\" is longer than 8760h"), "{e}");
        let e = err(&format!("{}true => drop", "(".repeat(5000)));
        assert!(e.contains("nested deeper than"), "{e}");
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
            let e = parse_rules_file(text, json).unwrap_err();
            assert!(e.starts_with("break 1: ") && e.contains(want), "{text}: {e}");
        }
        // The file formats' own nesting is bounded by their parsers.
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(parse_rules_file(&deep, true).unwrap_err().contains("not JSON"));
        assert!(
            parse_rules_file(&format!("x = {deep}"), false)
                .unwrap_err()
                .contains("not TOML")
        );
    }
}
