//! Small text helpers for showing wire data to people.

/// Shortens `text` to at most `limit` bytes (on a character boundary),
/// saying how long it really was.
pub fn shorten(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_owned();
    }
    let mut cut = limit;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… ({} bytes in all)", &text[..cut], text.len())
}

/// Hides a header value the user gave (a token, a key), keeping an
/// authentication scheme so the reader still sees what kind it was:
/// `Bearer abc123` becomes `Bearer ****`, anything else `****`.
pub fn mask_value(value: &str) -> String {
    let trimmed = value.trim();
    if let Some((scheme, rest)) = trimmed.split_once(' ')
        && !rest.trim().is_empty()
        && !scheme.is_empty()
        && scheme.len() <= 20
        && scheme.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-')
    {
        return format!("{scheme} ****");
    }
    if trimmed.is_empty() {
        String::new()
    } else {
        "****".into()
    }
}

/// Shortens a label to at most `max_chars` characters, ending in `…` when
/// cut. For names and summaries in tight places, where the byte count that
/// [`shorten`] adds would only be noise.
pub fn ellipsize(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        None => text.to_owned(),
        Some(_) => {
            let keep: String = text.chars().take(max_chars.saturating_sub(1)).collect();
            format!("{keep}…")
        }
    }
}

/// Text a peer wrote, safe to print on a terminal: control characters
/// (C0, DEL, C1, and so ESC) become visible escapes (`\u{1b}`), so a server
/// cannot retitle, clear or forge the user's terminal; newlines and tabs
/// are escaped too unless `keep_lines`.
pub fn terminal_safe(text: &str, keep_lines: bool) -> std::borrow::Cow<'_, str> {
    // C0, DEL and C1 (`is_control`): what terminals act on. Nothing else is
    // touched, so JSON printed through here stays the JSON it was.
    let bad = |c: char| c.is_control() && !(keep_lines && (c == '\n' || c == '\t'));
    if !text.chars().any(bad) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' if !keep_lines => out.push_str("\\n"),
            '\t' if !keep_lines => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if bad(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_safe_text_shows_control_characters() {
        assert_eq!(terminal_safe("plain é", false), "plain é");
        assert_eq!(terminal_safe("a\u{1b}]0;pwned\u{7}b", false), "a\\u{1b}]0;pwned\\u{7}b");
        assert_eq!(terminal_safe("l1\nl2\tx\r", false), "l1\\nl2\\tx\\r");
        assert_eq!(terminal_safe("l1\nl2\tx", true), "l1\nl2\tx");
        assert_eq!(terminal_safe("\u{9b}2J", true), "\\u{9b}2J");
        let json = "{\"a\":\"line\u{2028}sep \\u001b\"}";
        assert_eq!(terminal_safe(json, true), json, "JSON stays JSON");
    }

    #[test]
    fn ellipsized_labels_keep_their_length_and_say_nothing_else() {
        assert_eq!(ellipsize("tools/list", 18), "tools/list");
        assert_eq!(ellipsize("notifications/progress", 10), "notificat…");
        assert_eq!(ellipsize("notifications/progress", 10).chars().count(), 10);
        assert_eq!(ellipsize("héllo wörld", 5), "héll…");
        assert_eq!(ellipsize("", 3), "");
    }

    #[test]
    fn shortens_on_char_boundaries() {
        assert_eq!(shorten("abc", 5), "abc");
        assert_eq!(shorten("héllo", 2), "h… (6 bytes in all)");
    }
}
