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

use crate::duration::DurationError;
use crate::filter::ast::Span;
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

/// Why a rule could not be read, and where in its text.
#[derive(Debug, thiserror::Error)]
pub enum RuleError {
    #[error("a fault rule is `EXPR => ACTION`: no `=>` in {text:?}")]
    NoArrow { text: String },
    #[error("the filter before `=>` is empty (write `true` to match every frame)")]
    EmptyFilter { span: Span },
    /// `at`: where the filter starts in the rule (its error's span counts from there).
    #[error("bad filter: {error}")]
    Filter { error: FilterError, at: usize },
    #[error("{error}")]
    Action { error: ActionError, span: Span },
}

impl RuleError {
    /// Byte offsets into the rule's text.
    pub fn span(&self) -> Span {
        match self {
            RuleError::NoArrow { text } => Span::new(0, text.len()),
            RuleError::EmptyFilter { span } | RuleError::Action { span, .. } => *span,
            RuleError::Filter { error, at } => Span::new(at + error.span.start, at + error.span.end),
        }
    }

    /// The rule, a caret line under the error, and the message, as
    /// [`FilterError::render`] shows a filter's.
    pub fn render(&self, text: &str) -> String {
        let message = match self {
            // The caret says where: the filter's own "at N" would count from elsewhere.
            RuleError::Filter { error, .. } => format!("bad filter: {}", error.summary()),
            other => other.to_string(),
        };
        FilterError::new(message, self.span()).render(text)
    }
}

/// What is wrong with the action after `=>` (or its modifiers).
#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    #[error("no action after `=>` ({ACTIONS})")]
    Missing,
    #[error("unknown action {0:?} ({ACTIONS})")]
    Unknown(String),
    #[error("{0}")]
    Duration(#[from] DurationError),
    #[error("delay {0}: the range runs backwards")]
    Backwards(String),
    #[error("corrupt {0}: say how (truncate, flip, utf8 or not-json), or nothing for any of them")]
    Corruption(String),
    #[error("replace: {0}")]
    Replace(JsonArgError),
    #[error("error {0}: give a JSON-RPC error code, e.g. error -32603 \"message\"")]
    ErrorCode(String),
    #[error("error {code}: {error}")]
    ErrorMessage { code: i64, error: JsonArgError },
    #[error("http-status {0}: give a status from 100 to 599")]
    HttpStatus(String),
    #[error("slow {0}: give a rate such as 100B/s")]
    SlowRate(String),
    #[error("{0}: a probability is from 0 to 1")]
    Probability(String),
    #[error("unexpected {0:?} after the action (p=0.1, first N, after N, every N)")]
    Unexpected(String),
    #[error("{modifier} {count}: give a whole number")]
    Count { modifier: String, count: String },
}

/// What `replace` and `error` say of the JSON they take.
#[derive(Debug, thiserror::Error)]
pub enum JsonArgError {
    #[error("not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    #[error("give the JSON to send")]
    Missing,
}

const ACTIONS: &str =
    "delay, drop, duplicate, reorder, corrupt, replace, error, stall, disconnect, kill-server, http-status, slow";

/// Where `part`, a slice of `whole`, lies in it.
fn span_in(whole: &str, part: &str) -> Span {
    let start = (part.as_ptr() as usize).wrapping_sub(whole.as_ptr() as usize);
    debug_assert!(start <= whole.len(), "a slice of the rule");
    let start = start.min(whole.len());
    Span::new(start, (start + part.len()).min(whole.len()))
}

/// Parses `EXPR => ACTION [p=P] [first N] [after N] [every N]`.
pub fn parse_fault(text: &str) -> Result<FaultRule, RuleError> {
    let (expr, action) = split_arrow(text).ok_or_else(|| RuleError::NoArrow { text: text.to_owned() })?;
    let expr = expr.trim();
    if expr.is_empty() {
        return Err(RuleError::EmptyFilter {
            span: Span::new(0, text.len() - action.len()),
        });
    }
    let filter = Filter::parse(expr).map_err(|error| RuleError::Filter {
        error,
        at: span_in(text, expr).start,
    })?;
    let (action, modifiers) = parse_action(action.trim()).map_err(|(error, at)| RuleError::Action {
        error,
        span: span_in(text, at),
    })?;
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

/// An action's error and the words of the rule it is about.
type Located<'a> = (ActionError, &'a str);

fn parse_action(text: &str) -> Result<(FaultAction, Modifiers), Located<'_>> {
    let (word, rest) = split_word(text);
    let mut rest = rest;
    let action = match word {
        "" => return Err((ActionError::Missing, text)),
        "delay" => {
            let (spec, r) = split_word(rest);
            rest = r;
            let at = |e: DurationError, part| (ActionError::Duration(e), part);
            let (min, max) = match spec.split_once("..") {
                Some((a, b)) => (
                    crate::duration::parse(a).map_err(|e| at(e, a))?,
                    crate::duration::parse(b).map_err(|e| at(e, b))?,
                ),
                None => {
                    let d = crate::duration::parse(spec).map_err(|e| at(e, spec))?;
                    (d, d)
                }
            };
            if min > max {
                return Err((ActionError::Backwards(spec.to_owned()), spec));
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
                None => return Err((ActionError::Corruption(how.to_owned()), how)),
            }
        }
        "replace" => {
            let (value, r) = leading_json(rest).map_err(|(e, at)| (ActionError::Replace(e), at))?;
            rest = r;
            FaultAction::Replace(value)
        }
        "error" => {
            let (code_text, r) = split_word(rest);
            let code: i64 = code_text
                .parse()
                .map_err(|_| (ActionError::ErrorCode(code_text.to_owned()), code_text))?;
            rest = r;
            let message = if rest.trim_start().starts_with('"') {
                let (v, r) =
                    leading_json(rest).map_err(|(error, at)| (ActionError::ErrorMessage { code, error }, at))?;
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
            let (code_text, r) = split_word(rest);
            let code: u16 = code_text
                .parse()
                .ok()
                .filter(|c| (100..=599).contains(c))
                .ok_or_else(|| (ActionError::HttpStatus(code_text.to_owned()), code_text))?;
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
                .ok_or_else(|| (ActionError::SlowRate(rate.to_owned()), rate))?;
            FaultAction::Slow { bytes_per_sec: n }
        }
        other => return Err((ActionError::Unknown(other.to_owned()), other)),
    };
    let modifiers = parse_modifiers(rest)?;
    Ok((action, modifiers))
}

fn is_modifier(word: &str) -> bool {
    word.starts_with("p=") || matches!(word, "first" | "after" | "every")
}

fn parse_modifiers(mut rest: &str) -> Result<Modifiers, Located<'_>> {
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
                .ok_or_else(|| (ActionError::Probability(word.to_owned()), word))?;
            m.probability = Some(p);
            continue;
        }
        let slot = match word {
            "first" => &mut m.first,
            "after" => &mut m.after,
            "every" => &mut m.every,
            other => return Err((ActionError::Unexpected(other.to_owned()), other)),
        };
        let (n, r) = split_word(rest);
        rest = r;
        let count: u64 = n.parse().ok().filter(|n| *n > 0 || word == "after").ok_or_else(|| {
            let error = ActionError::Count {
                modifier: word.to_owned(),
                count: n.to_owned(),
            };
            (error, if n.is_empty() { word } else { n })
        })?;
        *slot = Some(count);
    }
}

fn split_word(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    match s.find(char::is_whitespace) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    }
}

/// One JSON value at the start of `s`, and what follows it; or why not,
/// and the text it is about.
fn leading_json(s: &str) -> Result<(Value, &str), (JsonArgError, &str)> {
    let s = s.trim_start();
    let mut de = serde_json::Deserializer::from_str(s).into_iter::<Value>();
    match de.next() {
        Some(Ok(v)) => {
            let used = de.byte_offset();
            Ok((v, &s[used..]))
        }
        Some(Err(e)) => Err((JsonArgError::NotJson(e), s)),
        None => Err((JsonArgError::Missing, s)),
    }
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
    fn out_of_range_durations_and_deep_filters_are_refused() {
        let err = |t: &str| parse_fault(t).unwrap_err().to_string();
        let e = err("true => delay 18446744073709551615s");
        assert!(e.contains("longer than 8760h"), "{e}");
        let e = err("true => delay 1s..1e30s");
        assert!(e.contains("\"1e30s\" is longer than 8760h"), "{e}");
        let e = err(&format!("{}true => drop", "(".repeat(5000)));
        assert!(e.contains("nested deeper than"), "{e}");
    }

    /// Each error points at the words it is about.
    #[test]
    fn errors_point_into_the_rule() {
        let at = |t: &str| {
            let e = parse_fault(t).unwrap_err();
            let s = e.span();
            (t[s.start..s.end].to_owned(), e)
        };
        let (words, e) = at(r#"method == "x" => error -32603 "unclosed"#);
        assert_eq!(words, r#""unclosed"#);
        assert!(matches!(
            e,
            RuleError::Action {
                error: ActionError::ErrorMessage { code: -32603, .. },
                ..
            }
        ));
        assert_eq!(at("true => drop first x").0, "x");
        assert_eq!(at("true => drop first").0, "first");
        assert_eq!(at("true =>  explode now").0, "explode");
        assert_eq!(at("true => delay 1s..soon").0, "soon");
        assert_eq!(at(" => drop").0, " =>");
        assert_eq!(at("no arrow").0, "no arrow");
        let (words, e) = at("  methd == 1 => drop");
        assert_eq!(words, "methd");
        assert!(e.to_string().starts_with("bad filter: at 1: unknown field"), "{e}");
        assert_eq!(
            e.render("  methd == 1 => drop").lines().nth(1).unwrap().trim_end(),
            format!(
                "  ^^^^^ bad filter: {}",
                match &e {
                    RuleError::Filter { error, .. } => error.summary(),
                    _ => unreachable!(),
                }
            )
        );
        let t = "true => drop p=2";
        assert_eq!(
            parse_fault(t).unwrap_err().render(t),
            "true => drop p=2\n             ^^^ p=2: a probability is from 0 to 1"
        );
    }
}
