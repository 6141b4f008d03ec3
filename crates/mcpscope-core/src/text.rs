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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortens_on_char_boundaries() {
        assert_eq!(shorten("abc", 5), "abc");
        assert_eq!(shorten("héllo", 2), "h… (6 bytes in all)");
    }
}
