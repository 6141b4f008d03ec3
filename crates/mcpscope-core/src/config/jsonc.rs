//! Where each value sits in a JSON(C) text, so an edit can replace one value
//! and leave every other byte (comments, blank lines, indentation, trailing
//! commas) as the user wrote it.
//!
//! The parser reads text that [`strip_jsonc`] has already blanked of
//! comments and trailing commas (same length, same offsets) and checked
//! with serde_json, so it only needs strict JSON; offsets it returns are byte
//! offsets into the original text.

/// A value and the bytes it spans (`start..end`).
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub start: usize,
    pub end: usize,
    pub value: NodeValue,
}

#[derive(Clone, Debug, PartialEq)]
pub enum NodeValue {
    Object(Vec<Member>),
    Array(Vec<Node>),
    String(String),
    /// A number, `true`, `false` or `null`.
    Scalar,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    pub key: String,
    /// Where the key's opening quote is.
    pub key_start: usize,
    pub value: Node,
}

impl Node {
    pub fn members(&self) -> &[Member] {
        match &self.value {
            NodeValue::Object(m) => m,
            _ => &[],
        }
    }

    pub fn get(&self, key: &str) -> Option<&Node> {
        self.members().iter().find(|m| m.key == key).map(|m| &m.value)
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            NodeValue::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn elements(&self) -> Option<&[Node]> {
        match &self.value {
            NodeValue::Array(a) => Some(a),
            _ => None,
        }
    }
}

/// Parses strict JSON (surrounding whitespace allowed) into spans.
/// Where and why a config's text is not JSON with comments.
#[derive(Debug, thiserror::Error)]
pub enum SyntaxError {
    #[error("bad string at byte {at}")]
    BadString {
        at: usize,
        #[source]
        source: serde_json::Error,
    },
    #[error("unexpected text at byte {0}")]
    Trailing(usize),
    #[error("expected {what} at byte {at}")]
    Expected { what: String, at: usize },
    #[error("nested too deeply")]
    TooDeep,
    #[error("the text ends where a value should be")]
    Truncated,
    #[error("unterminated string at byte {0}")]
    Unterminated(usize),
}

pub fn parse(text: &str) -> Result<Node, SyntaxError> {
    let mut p = Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
    };
    p.ws();
    let node = p.value(0)?;
    p.ws();
    if p.pos != p.bytes.len() {
        return Err(SyntaxError::Trailing(p.pos));
    }
    Ok(node)
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

const MAX_DEPTH: usize = 256;

impl Parser<'_> {
    fn ws(&mut self) {
        while self.pos < self.bytes.len() && matches!(self.bytes[self.pos], b' ' | b'\t' | b'\n' | b'\r') {
            self.pos += 1;
        }
    }

    fn expect(&mut self, b: u8) -> Result<(), SyntaxError> {
        if self.bytes.get(self.pos) == Some(&b) {
            self.pos += 1;
            Ok(())
        } else {
            Err(SyntaxError::Expected {
                what: format!("{:?}", b as char),
                at: self.pos,
            })
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node, SyntaxError> {
        if depth > MAX_DEPTH {
            return Err(SyntaxError::TooDeep);
        }
        let start = self.pos;
        let value = match self.bytes.get(self.pos) {
            Some(b'{') => {
                self.pos += 1;
                let mut members = Vec::new();
                self.ws();
                if self.bytes.get(self.pos) == Some(&b'}') {
                    self.pos += 1;
                } else {
                    loop {
                        self.ws();
                        let key_start = self.pos;
                        let key = self.string()?;
                        self.ws();
                        self.expect(b':')?;
                        self.ws();
                        let value = self.value(depth + 1)?;
                        members.push(Member { key, key_start, value });
                        self.ws();
                        match self.bytes.get(self.pos) {
                            Some(b',') => self.pos += 1,
                            Some(b'}') => {
                                self.pos += 1;
                                break;
                            }
                            _ => {
                                return Err(SyntaxError::Expected {
                                    what: "',' or '}'".into(),
                                    at: self.pos,
                                });
                            }
                        }
                    }
                }
                NodeValue::Object(members)
            }
            Some(b'[') => {
                self.pos += 1;
                let mut items = Vec::new();
                self.ws();
                if self.bytes.get(self.pos) == Some(&b']') {
                    self.pos += 1;
                } else {
                    loop {
                        self.ws();
                        items.push(self.value(depth + 1)?);
                        self.ws();
                        match self.bytes.get(self.pos) {
                            Some(b',') => self.pos += 1,
                            Some(b']') => {
                                self.pos += 1;
                                break;
                            }
                            _ => {
                                return Err(SyntaxError::Expected {
                                    what: "',' or ']'".into(),
                                    at: self.pos,
                                });
                            }
                        }
                    }
                }
                NodeValue::Array(items)
            }
            Some(b'"') => NodeValue::String(self.string()?),
            Some(_) => {
                while self.pos < self.bytes.len()
                    && !matches!(self.bytes[self.pos], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
                {
                    self.pos += 1;
                }
                if self.pos == start {
                    return Err(SyntaxError::Expected {
                        what: "a value".into(),
                        at: start,
                    });
                }
                NodeValue::Scalar
            }
            None => return Err(SyntaxError::Truncated),
        };
        Ok(Node {
            start,
            end: self.pos,
            value,
        })
    }

    fn string(&mut self) -> Result<String, SyntaxError> {
        let start = self.pos;
        self.expect(b'"')?;
        while let Some(&b) = self.bytes.get(self.pos) {
            match b {
                b'\\' => self.pos += 2,
                b'"' => {
                    self.pos += 1;
                    let literal = &self.text[start..self.pos];
                    return serde_json::from_str(literal)
                        .map_err(|source| SyntaxError::BadString { at: start, source });
                }
                _ => self.pos += 1,
            }
        }
        Err(SyntaxError::Unterminated(start))
    }
}

/// Blanks out what JSONC allows and JSON does not (comments, trailing commas, a BOM)
/// with spaces, so serde_json's line and column still point into the original text.
/// Returns whether anything was blanked.
pub(crate) fn strip_jsonc(text: &str) -> (String, bool) {
    let mut bytes = text.as_bytes().to_vec();
    let mut changed = false;
    if bytes.starts_with("\u{feff}".as_bytes()) {
        bytes[..3].fill(b' ');
        changed = true;
    }
    let mut i = 0;
    let mut in_string = false;
    // Where the last comma outside a string was, if only blanks followed it so far.
    let mut pending_comma: Option<usize> = None;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        match (b, bytes.get(i + 1)) {
            (b'/', Some(b'/')) => {
                let end = bytes[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(bytes.len(), |n| i + n);
                bytes[i..end].fill(b' ');
                changed = true;
                i = end;
                continue;
            }
            (b'/', Some(b'*')) => {
                // An unterminated comment is left for serde_json to report.
                if let Some(n) = bytes[i + 2..].windows(2).position(|w| w == b"*/") {
                    let end = i + 2 + n + 2;
                    for c in &mut bytes[i..end] {
                        if *c != b'\n' {
                            *c = b' ';
                        }
                    }
                    changed = true;
                    i = end;
                    continue;
                }
            }
            (b'"', _) => in_string = true,
            (b',', _) => {
                pending_comma = Some(i);
                i += 1;
                continue;
            }
            (b'}' | b']', _) => {
                if let Some(comma) = pending_comma {
                    bytes[comma] = b' ';
                    changed = true;
                }
            }
            _ => {}
        }
        if !b.is_ascii_whitespace() {
            pending_comma = None;
        }
        i += 1;
    }
    // Only whole comments and ASCII bytes were replaced, so the text is still UTF-8.
    (String::from_utf8(bytes).expect("blanking keeps UTF-8 intact"), changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_point_into_the_text() {
        let text = r#" {"a": [1, "x\"y", {"b": null}], "c\u0041": true } "#;
        let root = parse(text).unwrap();
        assert_eq!(&text[root.start..root.end], &text[1..text.len() - 1]);
        let a = root.get("a").unwrap();
        assert_eq!(&text[a.start..a.end], r#"[1, "x\"y", {"b": null}]"#);
        let items = a.elements().unwrap();
        assert_eq!(items[1].as_str(), Some("x\"y"));
        assert_eq!(&text[items[1].start..items[1].end], r#""x\"y""#);
        // Keys are decoded; their span starts at the quote.
        let c = &root.members()[1];
        assert_eq!(c.key, "cA");
        assert_eq!(&text[c.key_start..c.key_start + 9], r#""c\u0041""#);
    }

    #[test]
    fn malformed_text_is_an_error_not_a_panic() {
        for bad in ["", "{", "[1,", r#"{"a" 1}"#, r#""abc"#, "{} x", r#"{"a":}"#] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        let deep = "[".repeat(1000) + &"]".repeat(1000);
        assert!(parse(&deep).is_err());
    }

    #[test]
    fn jsonc_blanking_keeps_strings_and_positions() {
        let text = "\u{feff}{\n  // a comment with \"quotes\" and ü\n  \"url\": \"https://x/*y*/\", /* block\n */ \"list\": [1, 2,],\n}";
        let (json, changed) = strip_jsonc(text);
        assert!(changed);
        assert_eq!(json.len(), text.len());
        assert_eq!(json.lines().count(), text.lines().count());
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value["url"], "https://x/*y*/");
        assert_eq!(value["list"], serde_json::json!([1, 2]));

        let (plain, changed) = strip_jsonc(r#"{"a": "b,]", "c": "\"//"}"#);
        assert!(!changed);
        assert_eq!(plain, r#"{"a": "b,]", "c": "\"//"}"#);
    }
}
