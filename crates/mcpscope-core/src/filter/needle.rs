//! Text found in a line: exactly (memmem), or ignoring ASCII case from the
//! needle's rarest byte. Shared by the filter's `contains` and the text
//! pre-check.

/// Filter text, found in a line ignoring ASCII case. A needle without ASCII
/// letters is searched as it is (memmem, SIMD). One with letters is found
/// from its rarest byte (by a rough rank of bytes in JSON-RPC lines: a digit
/// or `_` before a lowercase letter, a letter before `"`), scanned for in
/// both cases with memchr and checked around each hit; scanning for the
/// first byte instead stopped at every `n` of every line.
#[derive(Clone, Debug)]
pub(crate) struct Needle {
    search: Search,
}

#[derive(Clone, Debug)]
enum Search {
    Empty,
    Exact(Box<memchr::memmem::Finder<'static>>),
    AnyCase {
        lower: Vec<u8>,
        /// Where the rarest byte sits in `lower`.
        at: usize,
    },
}

/// How common a byte is in JSON-RPC lines (higher: more common), roughly.
fn commonness(b: u8) -> u8 {
    match b {
        b'"' | b':' | b',' => 250,
        b'e' | b't' | b'a' | b'o' | b'i' | b'n' | b's' | b'r' => 200,
        b'{' | b'}' | b'l' | b'c' | b'd' | b'm' | b'u' | b'h' | b'p' => 180,
        b' ' | b'/' | b'.' => 150,
        b'a'..=b'z' => 120,
        b'0'..=b'9' => 100,
        _ => 50,
    }
}

impl Needle {
    /// Found exactly as written (memmem).
    pub(crate) fn exact(text: &str) -> Self {
        let search = if text.is_empty() {
            Search::Empty
        } else {
            Search::Exact(Box::new(memchr::memmem::Finder::new(text.as_bytes()).into_owned()))
        };
        Self { search }
    }

    /// Found ignoring ASCII case.
    pub(crate) fn new(text: &str) -> Self {
        let search = if text.is_empty() {
            Search::Empty
        } else if !text.bytes().any(|b| b.is_ascii_alphabetic()) {
            Search::Exact(Box::new(memchr::memmem::Finder::new(text.as_bytes()).into_owned()))
        } else {
            let lower = text.to_lowercase().into_bytes();
            let at = (0..lower.len()).min_by_key(|&i| commonness(lower[i])).unwrap_or(0);
            Search::AnyCase { lower, at }
        };
        Self { search }
    }

    pub(crate) fn found_in(&self, hay: &[u8]) -> bool {
        let (n, at) = match &self.search {
            Search::Empty => return true,
            Search::Exact(f) => return f.find(hay).is_some(),
            Search::AnyCase { lower, at } => (&lower[..], *at),
        };
        if n.len() > hay.len() {
            return false;
        }
        let rare = n[at];
        // Candidates for the rare byte where the whole needle still fits.
        let window = &hay[at..=hay.len() - n.len() + at];
        let mut from = 0;
        while let Some(p) = memchr::memchr2(rare, rare.to_ascii_uppercase(), &window[from..]) {
            let start = from + p;
            if hay[start..start + n.len()]
                .iter()
                .zip(n)
                .all(|(a, b)| a.to_ascii_lowercase() == *b)
            {
                return true;
            }
            from = start + 1;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_found_ignoring_ascii_case() {
        for (hay, needle, found) in [
            ("Hello World", "hello", true),
            ("Hello World", "O W", true),
            ("Hello World", "world!", false),
            ("abc", "", true),
            ("ab", "abc", false),
            ("xxAbC", "abc", true),
            ("ÉCOLE école", "école", true),
            // The rare byte is found mid-needle and the needle checked around it.
            ("hello NUMBER 42 from", "number 42", true),
            ("number 4 and 2", "number 42", false),
            ("42 number", "number 42", false),
            ("Tools/Call", "tools/call", true),
            ("x_y", "X_Y", true),
            ("4242", "42", true),
            ("no digits", "4", false),
        ] {
            assert_eq!(
                Needle::new(needle).found_in(hay.as_bytes()),
                found,
                "{hay:?} {needle:?}"
            );
        }
    }
}
