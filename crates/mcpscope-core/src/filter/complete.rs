//! What could come next at the cursor: field names, operators, and the
//! values a field takes (kinds, directions, the session's methods and tool
//! names), for the app's filter box.

use super::fields::{self, FIELDS, FUNCTIONS, MESSAGE_ROOTS, OPERATORS, Ty};
use super::lexer::{Tok, tokenize};

/// Values seen in the session, offered inside quotes.
#[derive(Clone, Debug, Default)]
pub struct Vocabulary {
    pub methods: Vec<String>,
    pub tools: Vec<String>,
    pub rules: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Completion {
    /// What replaces `replace` in the text.
    pub insert: String,
    /// Byte range of the text it replaces.
    pub replace: std::ops::Range<usize>,
    /// A short description.
    pub doc: String,
}

const MAX: usize = 12;

/// Completions at byte offset `cursor` of `text`.
pub fn complete(text: &str, cursor: usize, vocab: &Vocabulary) -> Vec<Completion> {
    let cursor = cursor.min(text.len());
    let before = &text[..cursor];
    // Inside an open string: the values the field before it takes.
    if let Some(quote_at) = open_quote(before) {
        let typed = &before[quote_at + 1..];
        let field = field_before(&before[..quote_at]);
        let values: Vec<(String, &str)> = match field.as_deref() {
            Some("method" | "request.method") => vocab
                .methods
                .iter()
                .map(|m| (m.clone(), "a method in this session"))
                .collect(),
            Some("params.name" | "request.params.name") => vocab
                .tools
                .iter()
                .map(|t| (t.clone(), "a tool of this server"))
                .collect(),
            Some("finding.rule") => vocab.rules.iter().map(|r| (r.clone(), "a lint rule")).collect(),
            Some(name) => match fields::lookup(name).map(|f| f.ty) {
                Some(Ty::Enum(vals)) => vals.iter().map(|v| ((*v).to_owned(), "")).collect(),
                _ => Vec::new(),
            },
            None => Vec::new(),
        };
        let quote = &before[quote_at..quote_at + 1];
        return values
            .into_iter()
            .filter(|(v, _)| v.starts_with(typed) && v != typed)
            .take(MAX)
            .map(|(v, doc)| Completion {
                insert: format!("{quote}{v}{quote}"),
                replace: quote_at..closing_end(text, cursor, quote),
                doc: doc.to_owned(),
            })
            .collect();
    }
    let word_start = before
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '$'))
        .map_or(0, |i| i + 1);
    let word = &before[word_start..];
    let after_operand = expects_operator(&before[..word_start]);
    let mut out = Vec::new();
    let lower = word.to_ascii_lowercase();
    if after_operand {
        for op in OPERATORS {
            if op.starts_with(&lower) && !word.is_empty() || word.is_empty() {
                out.push(Completion {
                    insert: format!("{op} "),
                    replace: word_start..cursor,
                    doc: "operator".into(),
                });
            }
        }
        return out.into_iter().take(MAX).collect();
    }
    if word.is_empty() && !before.trim_end().is_empty() && !before.ends_with([' ', '(', '!']) {
        return out;
    }
    for f in FIELDS {
        if f.name.starts_with(&lower) && f.name != lower {
            let insert = match f.name {
                "http.header" | "http.sent" | "http.received" => format!("{}[\"", f.name),
                n => n.to_owned(),
            };
            out.push(Completion {
                insert,
                replace: word_start..cursor,
                doc: f.doc.into(),
            });
        }
    }
    for root in MESSAGE_ROOTS {
        if root.starts_with(&lower) && *root != lower && !out.iter().any(|c| c.insert == *root) {
            out.push(Completion {
                insert: format!("{root}."),
                replace: word_start..cursor,
                doc: "a path into the message".into(),
            });
        }
    }
    for (name, doc) in FUNCTIONS {
        if name.starts_with(&lower) && !lower.is_empty() {
            out.push(Completion {
                insert: (*name).to_owned(),
                replace: word_start..cursor,
                doc: (*doc).into(),
            });
        }
    }
    if word.is_empty() {
        out.retain(|c| !c.insert.contains('.') || c.insert.ends_with('.'));
    }
    out.truncate(MAX);
    out
}

/// Where an unclosed string starts, if the cursor is inside one.
fn open_quote(before: &str) -> Option<usize> {
    let mut open: Option<(usize, char)> = None;
    let mut escaped = false;
    for (i, c) in before.char_indices() {
        match open {
            Some(_) if escaped => escaped = false,
            Some(_) if c == '\\' => escaped = true,
            Some((_, q)) if c == q => open = None,
            None if c == '"' || c == '\'' => open = Some((i, c)),
            _ => {}
        }
    }
    open.map(|(i, _)| i)
}

/// The end of the string the cursor is in, with its closing quote if typed.
fn closing_end(text: &str, cursor: usize, quote: &str) -> usize {
    text[cursor..].find(quote).map_or(text.len(), |i| cursor + i + 1)
}

/// The field a value is being compared with: `method == "` → `method`.
fn field_before(before: &str) -> Option<String> {
    let toks = tokenize(before).ok()?;
    let mut i = toks.len().checked_sub(2)?; // last is End
    // Skip the operator (and an opening brace or a comma of a set).
    while matches!(
        toks[i].0,
        Tok::EqEq | Tok::Ne | Tok::LBrace | Tok::Comma | Tok::Str(_) | Tok::Lt | Tok::Le | Tok::Gt | Tok::Ge
    ) || matches!(&toks[i].0, Tok::Ident(w) if matches!(w.as_str(), "contains" | "matches" | "in" | "eq" | "ne"))
    {
        i = i.checked_sub(1)?;
    }
    // Then the field: names joined by dots.
    let end = i;
    while i >= 2 && toks[i - 1].0 == Tok::Dot && matches!(toks[i - 2].0, Tok::Ident(_)) {
        i -= 2;
    }
    let names: Vec<&str> = toks[i..=end]
        .iter()
        .filter_map(|(t, _)| match t {
            Tok::Ident(w) => Some(w.as_str()),
            _ => None,
        })
        .collect();
    (!names.is_empty()).then(|| names.join("."))
}

/// Whether the text so far ends with a complete operand (so an operator comes next).
fn expects_operator(before: &str) -> bool {
    if !before.ends_with(char::is_whitespace) {
        return false;
    }
    let Ok(toks) = tokenize(before) else { return false };
    let n = toks.len();
    if n < 2 {
        return false;
    }
    match &toks[n - 2].0 {
        Tok::Ident(w) => !super::lexer::is_keyword(w) || matches!(w.as_str(), "true" | "false" | "null"),
        Tok::RBracket | Tok::RParen => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab() -> Vocabulary {
        Vocabulary {
            methods: vec!["tools/call".into(), "tools/list".into(), "initialize".into()],
            tools: vec!["echo".into(), "add".into()],
            rules: vec!["not-json".into()],
        }
    }

    fn inserts(text: &str) -> Vec<String> {
        complete(text, text.len(), &vocab())
            .into_iter()
            .map(|c| c.insert)
            .collect()
    }

    #[test]
    fn fields_operators_and_values() {
        assert!(inserts("lat").contains(&"latency".to_owned()));
        assert!(inserts("http.s").contains(&"http.status".to_owned()));
        assert!(inserts("http.h").contains(&"http.header[\"".to_owned()));
        assert!(inserts("par").contains(&"params.".to_owned()));
        assert!(inserts("method ").contains(&"== ".to_owned()));
        assert_eq!(inserts("method co"), ["contains "]);
        assert_eq!(inserts("method == \"tools/"), ["\"tools/call\"", "\"tools/list\""]);
        assert_eq!(inserts("kind == \"re"), ["\"request\"", "\"result\""]);
        assert_eq!(inserts("params.name == 'e"), ["'echo'"]);
        assert_eq!(inserts("method in {\"tools/call\", \"ini"), ["\"initialize\""]);
        assert_eq!(inserts("finding.rule == \""), ["\"not-json\""]);
        let c = complete("method == \"to\" and x", 12, &vocab());
        assert_eq!(c[0].replace, 10..14, "{c:?}");
    }
}
