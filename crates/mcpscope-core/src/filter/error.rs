//! A filter that cannot be used: what is wrong, where, and what was likely meant.

use super::ast::Span;
use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterError {
    pub message: String,
    /// Byte offsets into the filter text.
    pub span: Span,
    /// What the user likely meant ("did you mean …").
    pub suggestion: Option<String>,
}

impl FilterError {
    pub fn new(message: impl Into<String>, span: Span) -> Self {
        Self {
            message: message.into(),
            span,
            suggestion: None,
        }
    }

    pub fn suggest(mut self, s: impl Into<String>) -> Self {
        self.suggestion = Some(s.into());
        self
    }

    /// The message with its suggestion, on one line.
    pub fn summary(&self) -> String {
        match &self.suggestion {
            Some(s) => format!("{}: {s}", self.message),
            None => self.message.clone(),
        }
    }

    /// Where the error is, in characters (what a caret under the text needs).
    pub fn char_range(&self, text: &str) -> (usize, usize) {
        let at = |b: usize| text.get(..b.min(text.len())).map_or(0, |s| s.chars().count());
        let start = at(self.span.start);
        (start, at(self.span.end).max(start + 1))
    }

    /// The expression, a caret line under the error, and the message:
    ///
    /// ```text
    /// method == "x" and lattency > 1s
    ///                   ^^^^^^^^ unknown field "lattency": did you mean "latency"?
    /// ```
    ///
    /// A long filter is cut to [`CONTEXT`] characters either side of the
    /// error (`…` marks a cut), so the caret stays on the screen and a
    /// filter of megabytes is not printed back whole.
    pub fn render(&self, text: &str) -> String {
        let (start, end) = self.char_range(text);
        let chars: Vec<char> = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
        let from = start.saturating_sub(CONTEXT);
        let to = end.saturating_add(CONTEXT).min(chars.len());
        let lead = if from > 0 { "…" } else { "" };
        let tail = if to < chars.len() { "…" } else { "" };
        let shown: String = chars.get(from..to).unwrap_or_default().iter().collect();
        let carets = end.min(to).saturating_sub(start).max(1);
        format!(
            "{lead}{shown}{tail}\n{}{} {}",
            " ".repeat(start - from + lead.chars().count()),
            "^".repeat(carets),
            self.summary()
        )
    }
}

/// How many characters [`FilterError::render`] shows either side of the error.
pub const CONTEXT: usize = 60;

impl fmt::Display for FilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at {}: {}", self.span.start + 1, self.summary())
    }
}

impl std::error::Error for FilterError {}

/// Levenshtein distance, for "did you mean".
pub fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The candidate nearest to `word`, if it is near enough to be a typo.
pub fn nearest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = word.to_ascii_lowercase();
    candidates
        .into_iter()
        .map(|c| (distance(&lower, c), c))
        .filter(|(d, c)| *d <= (c.len().max(word.len()) / 3).max(1) || c.starts_with(&lower) && !lower.is_empty())
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caret_sits_under_the_error_in_characters() {
        let text = "é == 1 and lattency > 1s";
        let start = text.find("lattency").unwrap();
        let e = FilterError::new("unknown field \"lattency\"", Span::new(start, start + 8))
            .suggest("did you mean \"latency\"?");
        let r = e.render(text);
        let lines: Vec<&str> = r.lines().collect();
        assert_eq!(lines[0], text);
        assert_eq!(lines[1].find('^'), Some(11), "{r}");
        assert!(
            lines[1].ends_with("^^^^^^^^ unknown field \"lattency\": did you mean \"latency\"?"),
            "{r}"
        );
    }

    #[test]
    fn a_long_filter_is_shown_around_its_error() {
        let text = format!("{}method == {}", "not ".repeat(30_000), "x".repeat(10_000));
        let at = text.find("method").unwrap();
        let e = FilterError::new("here", Span::new(at, at + 6));
        let r = e.render(&text);
        let lines: Vec<&str> = r.lines().collect();
        assert!(lines[0].starts_with('…') && lines[0].ends_with('…'), "{r}");
        assert_eq!(lines[0].chars().count(), 2 * CONTEXT + 6 + 2);
        let caret = lines[1].find('^').unwrap();
        assert_eq!(lines[0].chars().skip(caret).take(6).collect::<String>(), "method");
        assert!(lines[1].ends_with("^^^^^^ here"), "{r}");
        // At the very end (an expression cut short): one caret past the text.
        let e = FilterError::new("more", Span::new(text.len(), text.len()));
        let r = e.render(&text);
        let lines: Vec<&str> = r.lines().collect();
        assert_eq!(lines[1].find('^'), Some(lines[0].chars().count()), "{r}");
    }

    #[test]
    fn nearest_names_typos_only() {
        let fields = ["latency", "method", "kind", "pending"];
        assert_eq!(nearest("lattency", fields), Some("latency"));
        assert_eq!(nearest("Methd", fields), Some("method"));
        assert_eq!(nearest("zzzzzz", fields), None);
        assert_eq!(nearest("pend", fields), Some("pending"));
    }
}
