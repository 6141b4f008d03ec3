//! Filter text to tokens, each with where it stood.

use super::ast::Span;
use super::error::FilterError;

#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    Ident(String),
    Str(String),
    /// A number and its text.
    Num(f64, String),
    /// Seconds and the text (`500ms`).
    Duration(f64, String),
    Dot,
    DotDot,
    LBracket,
    RBracket,
    LParen,
    RParen,
    LBrace,
    RBrace,
    Comma,
    Star,
    EqEq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    AndAnd,
    OrOr,
    Bang,
    Tilde,
    End,
}

impl Tok {
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("{s:?}"),
            Tok::Str(s) => format!("the string {}", super::ast::quote(s)),
            Tok::Num(_, t) | Tok::Duration(_, t) => t.clone(),
            Tok::End => "the end of the filter".into(),
            other => format!("\"{}\"", other.text()),
        }
    }

    fn text(&self) -> &'static str {
        match self {
            Tok::Dot => ".",
            Tok::DotDot => "..",
            Tok::LBracket => "[",
            Tok::RBracket => "]",
            Tok::LParen => "(",
            Tok::RParen => ")",
            Tok::LBrace => "{",
            Tok::RBrace => "}",
            Tok::Comma => ",",
            Tok::Star => "*",
            Tok::EqEq => "==",
            Tok::Ne => "!=",
            Tok::Lt => "<",
            Tok::Le => "<=",
            Tok::Gt => ">",
            Tok::Ge => ">=",
            Tok::AndAnd => "&&",
            Tok::OrOr => "||",
            Tok::Bang => "!",
            Tok::Tilde => "~",
            _ => "",
        }
    }
}

/// Words that are operators or literals, never field names.
pub const KEYWORDS: &[&str] = &[
    "and", "or", "not", "contains", "matches", "in", "true", "false", "null", "eq", "ne", "lt", "le", "gt", "ge",
];

pub fn is_keyword(s: &str) -> bool {
    KEYWORDS.contains(&s)
}

/// A duration literal's value in seconds (divided for the small units,
/// so that `100us` is exactly what `0.0001` is).
fn seconds(value: f64, unit: &str) -> Option<f64> {
    Some(match unit {
        "ns" => value / 1e9,
        "us" | "µs" => value / 1e6,
        "ms" => value / 1e3,
        "s" => value,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        _ => return None,
    })
}

pub fn tokenize(src: &str) -> Result<Vec<(Tok, Span)>, FilterError> {
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        let two = |a: u8, b: u8| c == a && bytes.get(i + 1) == Some(&b);
        let (tok, len) =
            if two(b'=', b'=') {
                (Tok::EqEq, 2)
            } else if two(b'!', b'=') {
                (Tok::Ne, 2)
            } else if two(b'<', b'=') {
                (Tok::Le, 2)
            } else if two(b'>', b'=') {
                (Tok::Ge, 2)
            } else if two(b'&', b'&') {
                (Tok::AndAnd, 2)
            } else if two(b'|', b'|') {
                (Tok::OrOr, 2)
            } else if two(b'.', b'.') {
                (Tok::DotDot, 2)
            } else {
                match c {
                    b'=' => {
                        return Err(FilterError::new("\"=\" is not an operator", Span::new(i, i + 1))
                            .suggest("write \"==\" to compare"));
                    }
                    b'&' => {
                        return Err(FilterError::new("\"&\" is not an operator", Span::new(i, i + 1))
                            .suggest("\"&&\" or \"and\""));
                    }
                    b'|' => {
                        return Err(FilterError::new("\"|\" is not an operator", Span::new(i, i + 1))
                            .suggest("\"||\" or \"or\""));
                    }
                    b'.' => (Tok::Dot, 1),
                    b'[' => (Tok::LBracket, 1),
                    b']' => (Tok::RBracket, 1),
                    b'(' => (Tok::LParen, 1),
                    b')' => (Tok::RParen, 1),
                    b'{' => (Tok::LBrace, 1),
                    b'}' => (Tok::RBrace, 1),
                    b',' => (Tok::Comma, 1),
                    b'*' => (Tok::Star, 1),
                    b'<' => (Tok::Lt, 1),
                    b'>' => (Tok::Gt, 1),
                    b'!' => (Tok::Bang, 1),
                    b'~' => (Tok::Tilde, 1),
                    b'"' | b'\'' => {
                        let (s, end) = string(src, i)?;
                        out.push((Tok::Str(s), Span::new(start, end)));
                        i = end;
                        continue;
                    }
                    b'0'..=b'9' | b'-' => {
                        let (tok, end) = number(src, i)?;
                        out.push((tok, Span::new(start, end)));
                        i = end;
                        continue;
                    }
                    c if c.is_ascii_alphabetic() || c == b'_' || c == b'$' => {
                        let mut end = i + 1;
                        while end < bytes.len()
                            && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_' || bytes[end] == b'$')
                        {
                            end += 1;
                        }
                        out.push((Tok::Ident(src[i..end].to_owned()), Span::new(start, end)));
                        i = end;
                        continue;
                    }
                    _ => {
                        let ch = src[i..].chars().next().unwrap_or('?');
                        return Err(FilterError::new(
                            format!("unexpected character {ch:?}"),
                            Span::new(i, i + ch.len_utf8()),
                        ));
                    }
                }
            };
        out.push((tok, Span::new(start, start + len)));
        i += len;
    }
    out.push((Tok::End, Span::new(src.len(), src.len())));
    Ok(out)
}

fn string(src: &str, start: usize) -> Result<(String, usize), FilterError> {
    let quote = src.as_bytes()[start] as char;
    let mut out = String::new();
    let mut chars = src[start + 1..].char_indices();
    while let Some((off, c)) = chars.next() {
        let at = start + 1 + off;
        match c {
            c if c == quote => return Ok((out, at + 1)),
            '\\' => {
                let Some((_, e)) = chars.next() else { break };
                match e {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    '0' => out.push('\0'),
                    'u' => {
                        let hex: String = chars.by_ref().take(4).map(|(_, c)| c).collect();
                        let code = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32);
                        match code {
                            Some(c) if hex.len() == 4 => out.push(c),
                            _ => {
                                return Err(FilterError::new(
                                    "\\u needs four hex digits naming a character",
                                    Span::new(at, (at + 6).min(src.len())),
                                ));
                            }
                        }
                    }
                    '"' | '\'' | '\\' | '/' => out.push(e),
                    other => {
                        return Err(FilterError::new(
                            format!("unknown escape \\{other}"),
                            Span::new(at, at + 1 + other.len_utf8()),
                        )
                        .suggest("\\\\ for a backslash"));
                    }
                }
            }
            c => out.push(c),
        }
    }
    Err(
        FilterError::new("this string is not closed", Span::new(start, src.len()))
            .suggest(format!("end it with {quote}")),
    )
}

fn number(src: &str, start: usize) -> Result<(Tok, usize), FilterError> {
    let b = src.as_bytes();
    let mut i = start;
    if b[i] == b'-' {
        i += 1;
        if !b.get(i).is_some_and(u8::is_ascii_digit) {
            return Err(FilterError::new(
                "\"-\" must start a number",
                Span::new(start, start + 1),
            ));
        }
    }
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    // A fraction, but not the `..` of a range.
    if b.get(i) == Some(&b'.') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        i += 1;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E'))
        && (b.get(i + 1).is_some_and(u8::is_ascii_digit)
            || (matches!(b.get(i + 1), Some(b'+' | b'-')) && b.get(i + 2).is_some_and(u8::is_ascii_digit)))
    {
        i += 2;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
    }
    let num_end = i;
    let value: f64 = src[start..num_end]
        .parse()
        .map_err(|_| FilterError::new("not a number", Span::new(start, num_end)))?;
    // A unit right after the digits makes it a duration.
    let unit_end = src[num_end..]
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_alphabetic() || *c == 'µ'))
        .map_or(src.len(), |(o, _)| num_end + o);
    if unit_end > num_end {
        let unit = &src[num_end..unit_end];
        let Some(secs) = seconds(value, unit) else {
            return Err(
                FilterError::new(format!("unknown unit {unit:?}"), Span::new(num_end, unit_end))
                    .suggest("a duration ends in ns, us, ms, s, m or h (500ms, 2s)"),
            );
        };
        return Ok((Tok::Duration(secs, src[start..unit_end].to_owned()), unit_end));
    }
    if !value.is_finite() {
        return Err(FilterError::new(
            "this number is out of range",
            Span::new(start, num_end),
        ));
    }
    Ok((Tok::Num(value, src[start..num_end].to_owned()), num_end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        tokenize(s).unwrap().into_iter().map(|(t, _)| t).collect()
    }

    #[test]
    fn operators_numbers_durations_and_strings() {
        assert_eq!(
            toks(r#"a.b[0] >= -1.5e2 && x != "q\"\u0041" || !y ~ 'z' latency<500ms"#),
            vec![
                Tok::Ident("a".into()),
                Tok::Dot,
                Tok::Ident("b".into()),
                Tok::LBracket,
                Tok::Num(0.0, "0".into()),
                Tok::RBracket,
                Tok::Ge,
                Tok::Num(-150.0, "-1.5e2".into()),
                Tok::AndAnd,
                Tok::Ident("x".into()),
                Tok::Ne,
                Tok::Str("q\"A".into()),
                Tok::OrOr,
                Tok::Bang,
                Tok::Ident("y".into()),
                Tok::Tilde,
                Tok::Str("z".into()),
                Tok::Ident("latency".into()),
                Tok::Lt,
                Tok::Duration(0.5, "500ms".into()),
                Tok::End,
            ]
        );
        assert_eq!(
            toks("{200..299}")[1..4],
            [
                Tok::Num(200.0, "200".into()),
                Tok::DotDot,
                Tok::Num(299.0, "299".into())
            ]
        );
        assert_eq!(
            toks("2s 1.5m 100us")[..3],
            [
                Tok::Duration(2.0, "2s".into()),
                Tok::Duration(90.0, "1.5m".into()),
                Tok::Duration(100e-6, "100us".into())
            ]
        );
    }

    #[test]
    fn lexical_errors_say_where_and_what() {
        let e = tokenize("method = \"x\"").unwrap_err();
        assert_eq!((e.span.start, e.span.end), (7, 8));
        assert!(e.suggestion.as_deref().unwrap().contains("=="), "{e:?}");
        let e = tokenize("x == \"open").unwrap_err();
        assert_eq!(e.span.start, 5);
        assert!(e.message.contains("not closed"));
        let e = tokenize("latency > 5parsecs").unwrap_err();
        assert!(e.message.contains("\"parsecs\""), "{e:?}");
        let e = tokenize("a == 1e999").unwrap_err();
        assert!(e.message.contains("out of range"), "{e:?}");
        let e = tokenize("a # b").unwrap_err();
        assert_eq!(e.span.start, 2);
    }
}
