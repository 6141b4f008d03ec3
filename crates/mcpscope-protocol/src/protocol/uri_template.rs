//! RFC 6570 URI templates, as used by MCP resource templates (`resources/templates/list` →
//! `uriTemplate`).
//!
//! [`UriTemplate::parse`] accepts the full level 4 grammar (operators `+ # . / ; ? &`, prefix
//! modifiers `:n` and explode `*`), [`UriTemplate::expand`] implements the expansion algorithm of
//! RFC 6570 section 3.2 / appendix A, and [`UriTemplate::match_uri`] does the (best effort) reverse:
//! given a concrete URI, which variable values would have produced it.
//!
//! Values are `serde_json::Value`s: strings, numbers and booleans are scalar values, arrays are
//! lists and objects are associative arrays (in their own key order; with serde_json's
//! `preserve_order` that is the order the object was written in). `null`, a missing key, an empty
//! array and an empty object are all "undefined" and are skipped, as the RFC says.
//!
//! This module depends on nothing else in mcpscope.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use serde_json::Value;

/// The expression operator (RFC 6570 section 2.2 / 3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `{var}`: simple string expansion (level 1).
    Simple,
    /// `{+var}`: reserved expansion, reserved characters are not encoded (level 2).
    Reserved,
    /// `{#var}`: fragment expansion, like `+` with a leading `#` (level 2).
    Fragment,
    /// `{.var}`: label expansion with dot-prefix (level 3).
    Label,
    /// `{/var}`: path segment expansion (level 3).
    PathSegment,
    /// `{;var}`: path-style parameter expansion (level 3).
    PathParameter,
    /// `{?var}`: form-style query expansion (level 3).
    Query,
    /// `{&var}`: form-style query continuation (level 3).
    QueryContinuation,
}

impl Operator {
    /// The operator character as written in a template (`""` for [`Operator::Simple`]).
    pub fn symbol(self) -> &'static str {
        match self {
            Operator::Simple => "",
            Operator::Reserved => "+",
            Operator::Fragment => "#",
            Operator::Label => ".",
            Operator::PathSegment => "/",
            Operator::PathParameter => ";",
            Operator::Query => "?",
            Operator::QueryContinuation => "&",
        }
    }

    fn from_char(c: char) -> Option<Operator> {
        Some(match c {
            '+' => Operator::Reserved,
            '#' => Operator::Fragment,
            '.' => Operator::Label,
            '/' => Operator::PathSegment,
            ';' => Operator::PathParameter,
            '?' => Operator::Query,
            '&' => Operator::QueryContinuation,
            _ => return None,
        })
    }

    /// String emitted before the first defined variable (appendix A "first").
    fn first(self) -> &'static str {
        match self {
            Operator::Simple | Operator::Reserved => "",
            _ => self.symbol(),
        }
    }

    /// Separator between defined variables (appendix A "sep").
    fn sep(self) -> char {
        match self {
            Operator::Simple | Operator::Reserved | Operator::Fragment => ',',
            Operator::Label => '.',
            Operator::PathSegment => '/',
            Operator::PathParameter => ';',
            Operator::Query | Operator::QueryContinuation => '&',
        }
    }

    /// Whether expansions are `name=value` pairs (appendix A "named").
    fn named(self) -> bool {
        matches!(
            self,
            Operator::PathParameter | Operator::Query | Operator::QueryContinuation
        )
    }

    /// What follows the name of an empty value (appendix A "ifemp").
    fn if_empty(self) -> &'static str {
        match self {
            Operator::Query | Operator::QueryContinuation => "=",
            _ => "",
        }
    }

    /// Whether reserved characters and pct-encoded triplets pass through (appendix A "allow": U+R).
    fn allow_reserved(self) -> bool {
        matches!(self, Operator::Reserved | Operator::Fragment)
    }
}

/// One variable of a template, as returned by [`UriTemplate::variables`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variable {
    /// The variable name exactly as written (it may contain `.` and pct-encoded triplets).
    pub name: String,
    /// The operator of the expression the variable (first) appears in.
    pub operator: Operator,
    /// `*` modifier.
    pub explode: bool,
    /// `:n` modifier (1..=9999).
    pub prefix: Option<u16>,
}

/// Why a template failed to parse. `position` is a 0-based character (not byte) offset into the
/// template string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    pub position: usize,
    pub message: String,
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at position {}", self.message, self.position)
    }
}

impl std::error::Error for TemplateError {}

#[derive(Debug, Clone, PartialEq, Eq)]
struct VarSpec {
    name: String,
    explode: bool,
    prefix: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    /// A literal, stored already expanded (characters not allowed in a URI pct-encoded).
    Literal(String),
    Expression {
        operator: Operator,
        vars: Vec<VarSpec>,
    },
}

/// A parsed RFC 6570 URI template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    source: String,
    parts: Vec<Part>,
}

impl fmt::Display for UriTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl FromStr for UriTemplate {
    type Err = TemplateError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        UriTemplate::parse(s)
    }
}

fn err(position: usize, message: impl Into<String>) -> TemplateError {
    TemplateError {
        position,
        message: message.into(),
    }
}

fn describe(c: Option<char>) -> String {
    match c {
        None => "end of template".to_owned(),
        Some(c) if c.is_control() || c == ' ' => format!("{:?}", c),
        Some(c) => format!("'{c}'"),
    }
}

impl UriTemplate {
    /// Parses a template. Literal text is accepted leniently (characters that are not allowed in a
    /// URI are pct-encoded on expansion, as RFC 6570 section 3.1 says); expressions are checked
    /// strictly: balanced braces, a known operator, well-formed variable names (`ALPHA / DIGIT /
    /// "_" / pct-encoded`, with single interior dots), prefix lengths 1..=9999 and at most one
    /// modifier per variable.
    pub fn parse(s: &str) -> Result<UriTemplate, TemplateError> {
        let chars: Vec<char> = s.chars().collect();
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut i = 0;
        while i < chars.len() {
            match chars[i] {
                '{' => {
                    if !literal.is_empty() {
                        parts.push(Part::Literal(encode(&literal, true)));
                        literal.clear();
                    }
                    let (part, next) = parse_expression(&chars, i)?;
                    parts.push(part);
                    i = next;
                }
                '}' => return Err(err(i, "unbalanced '}' (no '{' opens it)")),
                c => {
                    literal.push(c);
                    i += 1;
                }
            }
        }
        if !literal.is_empty() {
            parts.push(Part::Literal(encode(&literal, true)));
        }
        Ok(UriTemplate {
            source: s.to_owned(),
            parts,
        })
    }

    /// The template text this was parsed from.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The variables in order of first appearance, deduplicated by name (the first occurrence's
    /// operator and modifiers are reported).
    pub fn variables(&self) -> Vec<Variable> {
        let mut out: Vec<Variable> = Vec::new();
        for part in &self.parts {
            if let Part::Expression { operator, vars } = part {
                for v in vars {
                    if !out.iter().any(|o| o.name == v.name) {
                        out.push(Variable {
                            name: v.name.clone(),
                            operator: *operator,
                            explode: v.explode,
                            prefix: v.prefix,
                        });
                    }
                }
            }
        }
        out
    }

    /// Expands the template (RFC 6570 section 3.2, all levels).
    ///
    /// Scalars: strings as-is, numbers in their JSON spelling, booleans as `true`/`false`.
    /// Inside lists and objects, `null` members are skipped and nested arrays/objects are expanded
    /// as their compact JSON text. A prefix modifier applies to scalar values only (the RFC says it
    /// is not applicable to composite values; they are expanded whole). The prefix counts Unicode
    /// characters; for `+` and `#` a pct-encoded triplet in the value counts as one character.
    pub fn expand(&self, values: &HashMap<String, Value>) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Literal(text) => out.push_str(text),
                Part::Expression { operator, vars } => expand_expression(*operator, vars, values, &mut out),
            }
        }
        out
    }

    /// Best-effort reverse of [`expand`](Self::expand) for simple templates: returns the
    /// (pct-decoded) value of each variable that the URI defines, or `None` when the URI cannot have
    /// come from this template.
    ///
    /// Supported: every operator, without explode (`*`) — a template with an exploded variable
    /// never matches. Each variable is taken to be a single string; a prefix modifier does not
    /// constrain the match. Values of `{x}`, `{.x}`, `{/x}` and `{;x}` may not contain `/`, `?` or
    /// `#` (so `{id}` never spans a path segment; other reserved characters are accepted, because
    /// servers often build URIs by plain string concatenation), those of `{?x}`/`{&x}` may not
    /// contain `#`, those of `{+x}`/`{#x}` may contain anything (the shortest text that lets the
    /// rest of the template match wins, so in `{+path}{?v}` a query goes to `v`). Several
    /// variables in one expression are split on the operator's separator and assigned in order,
    /// which is ambiguous when some were undefined; `?`/`&`/`;` expressions are matched by name and
    /// reject names not in the expression. An empty `{x}` expansion maps `x` to `""`. Values are
    /// pct-decoded (invalid UTF-8 is replaced with U+FFFD). Literal text must match exactly (after
    /// the template's own pct-encoding of the literal); the comparison is case-sensitive. The
    /// search backtracks, with a work budget: a pathological template/URI pair gives `None`.
    pub fn match_uri(&self, uri: &str) -> Option<HashMap<String, String>> {
        let explodes = self.parts.iter().any(|p| match p {
            Part::Expression { vars, .. } => vars.iter().any(|v| v.explode),
            Part::Literal(_) => false,
        });
        if explodes {
            return None;
        }
        let mut captures = HashMap::new();
        let mut budget: usize = 4_000_000;
        if self.match_from(0, uri, 0, &mut captures, &mut budget) {
            Some(captures)
        } else {
            None
        }
    }

    fn match_from(
        &self,
        idx: usize,
        uri: &str,
        pos: usize,
        captures: &mut HashMap<String, String>,
        budget: &mut usize,
    ) -> bool {
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
        let Some(part) = self.parts.get(idx) else {
            return pos == uri.len();
        };
        let rest = &uri[pos..];
        match part {
            Part::Literal(text) => {
                rest.starts_with(text.as_str()) && self.match_from(idx + 1, uri, pos + text.len(), captures, budget)
            }
            Part::Expression { operator, vars } => {
                // Candidate ends, shortest first. Only ends followed by the next literal (or the end
                // of the URI when this is the last part) can work.
                let next_literal = match self.parts.get(idx + 1) {
                    Some(Part::Literal(text)) => Some(text.as_str()),
                    _ => None,
                };
                let first_end = if idx + 1 == self.parts.len() { uri.len() } else { pos };
                for end in first_end..=uri.len() {
                    if !uri.is_char_boundary(end) {
                        continue;
                    }
                    if let Some(lit) = next_literal
                        && !uri[end..].starts_with(lit)
                    {
                        continue;
                    }
                    // The work per candidate is linear in its length; charge for it.
                    let cost = end - pos + 1;
                    if *budget < cost {
                        *budget = 0;
                        return false;
                    }
                    *budget -= cost;
                    let Some(assigned) = match_expression(*operator, vars, &uri[pos..end]) else {
                        continue;
                    };
                    let mut inserted = Vec::new();
                    let mut consistent = true;
                    for (name, value) in assigned {
                        match captures.get(&name) {
                            Some(existing) if *existing != value => {
                                consistent = false;
                                break;
                            }
                            Some(_) => {}
                            None => {
                                captures.insert(name.clone(), value);
                                inserted.push(name);
                            }
                        }
                    }
                    if consistent && self.match_from(idx + 1, uri, end, captures, budget) {
                        return true;
                    }
                    for name in inserted {
                        captures.remove(&name);
                    }
                }
                false
            }
        }
    }
}

/// Parses the expression whose `{` is at `start`; returns it and the index after its `}`.
fn parse_expression(chars: &[char], start: usize) -> Result<(Part, usize), TemplateError> {
    let mut i = start + 1;
    let mut operator = Operator::Simple;
    match chars.get(i).copied() {
        Some(c) if Operator::from_char(c).is_some() => {
            operator = Operator::from_char(c).unwrap_or(Operator::Simple);
            i += 1;
        }
        Some(c @ ('=' | ',' | '!' | '@' | '|')) => {
            return Err(err(
                i,
                format!("operator '{c}' is reserved by RFC 6570 for future extensions and not supported"),
            ));
        }
        Some('}') => return Err(err(i, "empty expression '{}'")),
        None => return Err(err(start, "unclosed '{' (no matching '}')")),
        _ => {}
    }
    let mut vars = Vec::new();
    loop {
        // varname = varchar *( ["."] varchar ); varchar = ALPHA / DIGIT / "_" / pct-encoded
        let mut name = String::new();
        let mut last_was_dot = true; // a name may not start with '.'
        loop {
            match chars.get(i).copied() {
                Some(c) if c.is_ascii_alphanumeric() || c == '_' => {
                    name.push(c);
                    last_was_dot = false;
                    i += 1;
                }
                Some('%') => {
                    let hex = |k: usize| chars.get(k).is_some_and(|c| c.is_ascii_hexdigit());
                    if !(hex(i + 1) && hex(i + 2)) {
                        return Err(err(
                            i,
                            "'%' in a variable name must start a pct-encoded triplet like %2F",
                        ));
                    }
                    name.extend(&chars[i..i + 3]);
                    last_was_dot = false;
                    i += 3;
                }
                Some('.') if !name.is_empty() => {
                    if last_was_dot {
                        return Err(err(i, "two dots in a row in variable name"));
                    }
                    name.push('.');
                    last_was_dot = true;
                    i += 1;
                }
                _ => break,
            }
        }
        if name.is_empty() {
            let c = chars.get(i).copied();
            return Err(match c {
                None => err(start, "unclosed '{' (no matching '}')"),
                Some(c) if i == start + 2 && operator != Operator::Simple && Operator::from_char(c).is_some() => err(
                    i,
                    format!("only one operator is allowed per expression, found a second one '{c}'"),
                ),
                Some(c) if i == start + 1 => err(
                    i,
                    format!("invalid operator or variable name: unexpected {}", describe(Some(c))),
                ),
                Some(_) => err(i, format!("expected a variable name, found {}", describe(c))),
            });
        }
        if last_was_dot {
            return Err(err(i - 1, "variable name may not end with '.'"));
        }
        let mut spec = VarSpec {
            name,
            explode: false,
            prefix: None,
        };
        match chars.get(i).copied() {
            Some(':') => {
                let digits_start = i + 1;
                let mut j = digits_start;
                while chars.get(j).is_some_and(|c| c.is_ascii_digit()) {
                    j += 1;
                }
                let digits: String = chars[digits_start..j].iter().collect();
                if digits.is_empty() || digits.starts_with('0') || digits.len() > 4 {
                    return Err(err(
                        digits_start,
                        "prefix length after ':' must be a number from 1 to 9999",
                    ));
                }
                spec.prefix = digits.parse::<u16>().ok();
                i = j;
                if chars.get(i) == Some(&'*') {
                    return Err(err(i, "a variable cannot have both a prefix (:n) and explode (*)"));
                }
            }
            Some('*') => {
                spec.explode = true;
                i += 1;
                if chars.get(i) == Some(&':') {
                    return Err(err(i, "a variable cannot have both explode (*) and a prefix (:n)"));
                }
            }
            _ => {}
        }
        vars.push(spec);
        match chars.get(i).copied() {
            Some(',') => i += 1,
            Some('}') => return Ok((Part::Expression { operator, vars }, i + 1)),
            None => return Err(err(start, "unclosed '{' (no matching '}')")),
            Some('{') => {
                return Err(err(
                    i,
                    format!("'{{' inside an expression (the '{{' at position {start} is not closed)"),
                ));
            }
            Some(c) => {
                return Err(err(
                    i,
                    format!("invalid character {} in variable name", describe(Some(c))),
                ));
            }
        }
    }
}

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

fn is_reserved(b: u8) -> bool {
    matches!(
        b,
        b':' | b'/'
            | b'?'
            | b'#'
            | b'['
            | b']'
            | b'@'
            | b'!'
            | b'$'
            | b'&'
            | b'\''
            | b'('
            | b')'
            | b'*'
            | b'+'
            | b','
            | b';'
            | b'='
    )
}

fn is_pct_triplet(bytes: &[u8], i: usize) -> bool {
    bytes.get(i) == Some(&b'%')
        && bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
        && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

fn push_pct(out: &mut String, b: u8) {
    out.push('%');
    out.push(HEX[usize::from(b >> 4)] as char);
    out.push(HEX[usize::from(b & 0xF)] as char);
}

/// Encodes `s`: unreserved characters pass; with `allow_reserved` reserved characters and
/// pct-encoded triplets pass too; everything else (including each byte of a multi-byte UTF-8
/// character) is pct-encoded with upper-case hex.
fn encode_into(out: &mut String, s: &str, allow_reserved: bool) {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if is_unreserved(b) || (allow_reserved && is_reserved(b)) {
            out.push(b as char);
        } else if allow_reserved && is_pct_triplet(bytes, i) {
            out.push_str(&s[i..i + 3]);
            i += 3;
            continue;
        } else {
            push_pct(out, b);
        }
        i += 1;
    }
}

fn encode(s: &str, allow_reserved: bool) -> String {
    let mut out = String::with_capacity(s.len());
    encode_into(&mut out, s, allow_reserved);
    out
}

/// The first `n` characters of `s` (a pct-encoded triplet counts as one when `triplets`).
fn prefix_of(s: &str, n: u16, triplets: bool) -> &str {
    let bytes = s.as_bytes();
    let mut count = 0u16;
    let mut i = 0;
    while i < s.len() {
        if count == n {
            return &s[..i];
        }
        if triplets && is_pct_triplet(bytes, i) {
            i += 3;
        } else {
            i += s[i..].chars().next().map_or(1, char::len_utf8);
        }
        count += 1;
    }
    s
}

enum Resolved<'a> {
    Scalar(Cow<'a, str>),
    List(Vec<Cow<'a, str>>),
    Map(Vec<(&'a str, Cow<'a, str>)>),
}

fn scalar_text(v: &Value) -> Option<Cow<'_, str>> {
    Some(match v {
        Value::Null => return None,
        Value::String(s) => Cow::Borrowed(s.as_str()),
        Value::Bool(b) => Cow::Borrowed(if *b { "true" } else { "false" }),
        Value::Number(n) => Cow::Owned(n.to_string()),
        Value::Array(_) | Value::Object(_) => Cow::Owned(v.to_string()),
    })
}

/// `None` means undefined (null, empty list, empty object).
fn resolve(v: &Value) -> Option<Resolved<'_>> {
    match v {
        Value::Array(items) => {
            let items: Vec<_> = items.iter().filter_map(scalar_text).collect();
            (!items.is_empty()).then_some(Resolved::List(items))
        }
        Value::Object(map) => {
            let pairs: Vec<_> = map
                .iter()
                .filter_map(|(k, v)| Some((k.as_str(), scalar_text(v)?)))
                .collect();
            (!pairs.is_empty()).then_some(Resolved::Map(pairs))
        }
        other => scalar_text(other).map(Resolved::Scalar),
    }
}

fn expand_expression(op: Operator, vars: &[VarSpec], values: &HashMap<String, Value>, out: &mut String) {
    let allow = op.allow_reserved();
    let sep = op.sep();
    let mut first = true;
    for spec in vars {
        let Some(value) = values.get(&spec.name).and_then(resolve) else {
            continue;
        };
        if first {
            out.push_str(op.first());
            first = false;
        } else {
            out.push(sep);
        }
        match value {
            Resolved::Scalar(s) => {
                if op.named() {
                    out.push_str(&spec.name);
                    if s.is_empty() {
                        out.push_str(op.if_empty());
                        continue;
                    }
                    out.push('=');
                }
                let s = match spec.prefix {
                    Some(n) => prefix_of(&s, n, allow),
                    None => &s,
                };
                encode_into(out, s, allow);
            }
            Resolved::List(items) if !spec.explode => {
                if op.named() {
                    out.push_str(&spec.name);
                    out.push('=');
                }
                for (k, item) in items.iter().enumerate() {
                    if k > 0 {
                        out.push(',');
                    }
                    encode_into(out, item, allow);
                }
            }
            Resolved::Map(pairs) if !spec.explode => {
                if op.named() {
                    out.push_str(&spec.name);
                    out.push('=');
                }
                for (k, (key, val)) in pairs.iter().enumerate() {
                    if k > 0 {
                        out.push(',');
                    }
                    encode_into(out, key, allow);
                    out.push(',');
                    encode_into(out, val, allow);
                }
            }
            Resolved::List(items) => {
                for (k, item) in items.iter().enumerate() {
                    if k > 0 {
                        out.push(sep);
                    }
                    if op.named() {
                        out.push_str(&spec.name);
                        if item.is_empty() {
                            out.push_str(op.if_empty());
                            continue;
                        }
                        out.push('=');
                    }
                    encode_into(out, item, allow);
                }
            }
            Resolved::Map(pairs) => {
                for (k, (key, val)) in pairs.iter().enumerate() {
                    if k > 0 {
                        out.push(sep);
                    }
                    encode_into(out, key, allow);
                    if op.named() && val.is_empty() {
                        out.push_str(op.if_empty());
                        continue;
                    }
                    out.push('=');
                    encode_into(out, val, allow);
                }
            }
        }
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if is_pct_triplet(bytes, i) {
            let hi = (bytes[i + 1] as char).to_digit(16).unwrap_or(0);
            let lo = (bytes[i + 2] as char).to_digit(16).unwrap_or(0);
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether `s` can be the (possibly unencoded) value of a variable of a non-reserved expression.
/// Strictly such values are unreserved characters and pct-encoded triplets, but real servers build
/// URIs by plain string concatenation (`users://a@b.c`), so only the characters that delimit URI
/// components are refused: `/ ? #` in path-like values (`#` only in query values), and control
/// characters anywhere. Separators never get here: the text is split on them first.
fn is_value_text(s: &str, op: Operator) -> bool {
    let delimiters: &[char] = match op {
        Operator::Query | Operator::QueryContinuation => &['#'],
        _ => &['/', '?', '#'],
    };
    !s.chars().any(|c| c.is_control() || delimiters.contains(&c))
}

/// Splits an expression's matched text into `(name, value)` pairs, or `None` if it cannot be an
/// expansion of that expression.
fn match_expression(op: Operator, vars: &[VarSpec], text: &str) -> Option<Vec<(String, String)>> {
    let mut out = Vec::new();
    match op {
        Operator::Simple | Operator::Reserved | Operator::Fragment => {
            let body = if op == Operator::Fragment {
                if text.is_empty() {
                    return Some(out);
                }
                text.strip_prefix('#')?
            } else {
                text
            };
            if vars.len() == 1 {
                if op == Operator::Simple && !is_value_text(body, op) {
                    return None;
                }
                out.push((vars[0].name.clone(), percent_decode(body)));
                return Some(out);
            }
            if body.is_empty() {
                return Some(out);
            }
            let pieces: Vec<&str> = body.split(',').collect();
            if pieces.len() > vars.len() {
                return None;
            }
            for (spec, piece) in vars.iter().zip(pieces) {
                if op == Operator::Simple && !is_value_text(piece, op) {
                    return None;
                }
                out.push((spec.name.clone(), percent_decode(piece)));
            }
        }
        Operator::Label | Operator::PathSegment => {
            if text.is_empty() {
                return Some(out);
            }
            let body = text.strip_prefix(op.sep())?;
            let pieces: Vec<&str> = body.split(op.sep()).collect();
            if pieces.len() > vars.len() {
                return None;
            }
            for (spec, piece) in vars.iter().zip(pieces) {
                if !is_value_text(piece, op) {
                    return None;
                }
                out.push((spec.name.clone(), percent_decode(piece)));
            }
        }
        Operator::PathParameter | Operator::Query | Operator::QueryContinuation => {
            if text.is_empty() {
                return Some(out);
            }
            let lead = if op == Operator::PathParameter {
                ';'
            } else {
                op.symbol().chars().next()?
            };
            let body = text.strip_prefix(lead)?;
            for piece in body.split(op.sep()) {
                let (name, value) = piece.split_once('=').unwrap_or((piece, ""));
                if !vars.iter().any(|v| v.name == name) || out.iter().any(|(n, _)| n == name) {
                    return None;
                }
                if !is_value_text(value, op) {
                    return None;
                }
                out.push((name.to_owned(), percent_decode(value)));
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests;
