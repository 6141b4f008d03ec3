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

#[cfg(test)]
mod tests {
    use super::*;

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
