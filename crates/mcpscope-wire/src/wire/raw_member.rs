//! A member of a JSON object as the text the peer sent, found by scanning
//! bytes: for messages serde_json cannot turn into a value (nested deeper
//! than its recursion limit, a number out of `f64`'s range, a lone UTF-16
//! surrogate escape) the inspector still shows what was sent, never a
//! value of its own (such as `null`).

/// The text of top-level member `key` of the JSON object `doc`, when `doc`
/// is an object whose structure can be followed (strings, brackets).
pub fn member<'a>(doc: &'a [u8], key: &str) -> Option<&'a [u8]> {
    let mut i = skip_ws(doc, 0);
    if doc.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    let mut found = None;
    loop {
        i = skip_ws(doc, i);
        match doc.get(i)? {
            b'}' => return found,
            b',' => {
                i += 1;
                continue;
            }
            b'"' => {}
            _ => return None,
        }
        let key_end = string_end(doc, i)?;
        let this_key = &doc[i + 1..key_end - 1];
        i = skip_ws(doc, key_end);
        if doc.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(doc, i + 1);
        let value_end = value_end(doc, i)?;
        // A key written with escapes is compared decoded.
        let matches = if this_key.contains(&b'\\') {
            serde_json::from_slice::<String>(&doc[key_end - this_key.len() - 2..key_end])
                .ok()
                .as_deref()
                == Some(key)
        } else {
            this_key == key.as_bytes()
        };
        if matches {
            // The last one, as JSON.parse keeps.
            found = Some(&doc[i..value_end]);
        }
        i = value_end;
    }
}

/// Where the text of top-level member `key` lies in `doc` (see [`member`]):
/// for putting another value in its place, byte for byte around it.
pub fn member_span(doc: &[u8], key: &str) -> Option<std::ops::Range<usize>> {
    let value = member(doc, key)?;
    // `member` borrows from `doc`: its offset is where the value starts.
    let start = value.as_ptr() as usize - doc.as_ptr() as usize;
    Some(start..start + value.len())
}

/// Where the member at `path` (each key one level down) lies in `doc`.
pub fn path_span(doc: &[u8], path: &[&str]) -> Option<std::ops::Range<usize>> {
    let mut at = 0..doc.len();
    for key in path {
        let inner = member_span(&doc[at.clone()], key)?;
        at = at.start + inner.start..at.start + inner.end;
    }
    Some(at)
}

/// `doc` with the value at `span` replaced by `value`, every other byte kept.
pub fn replaced(doc: &[u8], span: std::ops::Range<usize>, value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(doc.len() + value.len());
    out.extend_from_slice(&doc[..span.start]);
    out.extend_from_slice(value);
    out.extend_from_slice(&doc[span.end..]);
    out
}

fn skip_ws(doc: &[u8], mut i: usize) -> usize {
    while doc.get(i).is_some_and(|b| b.is_ascii_whitespace()) {
        i += 1;
    }
    i
}

/// Just past the closing quote of the string starting at `i`.
fn string_end(doc: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        let p = memchr::memchr2(b'"', b'\\', &doc[j..])? + j;
        if doc[p] == b'\\' {
            j = p + 2;
            if j > doc.len() {
                return None;
            }
        } else {
            return Some(p + 1);
        }
    }
}

/// Just past the value starting at `i`: a string, a container (any depth,
/// counted, not recursed), or a scalar up to the next delimiter.
fn value_end(doc: &[u8], i: usize) -> Option<usize> {
    match doc.get(i)? {
        b'"' => string_end(doc, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            while j < doc.len() {
                match doc[j] {
                    b'"' => {
                        j = string_end(doc, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        _ => {
            let len = doc[i..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace())
                .unwrap_or(doc.len() - i);
            (len > 0).then_some(i + len)
        }
    }
}

/// Why serde_json could not read a message that is otherwise JSON, in
/// words: what the inspector says next to the raw text it shows.
pub fn why_unreadable(e: &serde_json::Error) -> String {
    let m = e.to_string();
    if m.contains("recursion limit") {
        "it nests deeper than the 128 levels mcpscope reads as a value".into()
    } else if m.contains("number out of range") {
        "it holds a number out of range of a 64-bit float (such as 1e400)".into()
    } else if m.contains("surrogate") || m.contains("hex escape") {
        "it holds a lone UTF-16 surrogate escape (not a character)".into()
    } else {
        format!("it is not JSON mcpscope can read ({m})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nested_member_is_replaced_byte_for_byte() {
        let doc = br#"{"params": {"_meta": {"k": "old", "x": 1}}, "id": 3}"#;
        let span = path_span(doc, &["params", "_meta", "k"]).unwrap();
        assert_eq!(&doc[span.clone()], br#""old""#);
        assert_eq!(
            replaced(doc, span, br#""new""#),
            br#"{"params": {"_meta": {"k": "new", "x": 1}}, "id": 3}"#.to_vec()
        );
        assert!(path_span(doc, &["params", "missing"]).is_none());
    }

    #[test]
    fn members_are_found_as_sent_at_any_depth() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let doc = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"a":{deep},"n":1e400,"s":"\ud800 \" }}"}}}}"#);
        let got = member(doc.as_bytes(), "result").unwrap();
        assert_eq!(
            got,
            format!(r#"{{"a":{deep},"n":1e400,"s":"\ud800 \" }}"}}"#).as_bytes()
        );
        assert!(serde_json::from_slice::<serde_json::Value>(doc.as_bytes()).is_err());
        assert_eq!(member(br#"{"result":1,"result":[2]}"#, "result"), Some(&b"[2]"[..]));
        assert_eq!(
            member(br#"{ "id" : 7 , "result" : true }"#, "result"),
            Some(&b"true"[..])
        );
        assert_eq!(member(br#"{"error":{}}"#, "result"), None);
        assert_eq!(member(b"not json", "result"), None);
        assert_eq!(member(br#"{"result":[1,2"#, "result"), None, "cut short");
    }

    #[test]
    fn reasons_are_said_in_words() {
        let deep = format!("{}{}", "[".repeat(1000), "]".repeat(1000));
        for (text, want) in [
            (deep.as_str(), "deeper"),
            ("1e400", "out of range"),
            (r#""\ud800""#, "surrogate"),
        ] {
            let e = serde_json::from_str::<serde_json::Value>(text).unwrap_err();
            assert!(why_unreadable(&e).contains(want), "{text:.20}: {}", why_unreadable(&e));
        }
    }
}
