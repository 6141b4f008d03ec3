//! Where each value sits in a JSON(C) text, so an edit can replace one value
//! and leave every other byte (comments, blank lines, indentation, trailing
//! commas) as the user wrote it.
//!
//! The parser reads text that [`super::server_config`] has already blanked
//! of comments and trailing commas (same length, same offsets) and checked
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
pub fn parse(text: &str) -> Result<Node, String> {
    let mut p = Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
    };
    p.ws();
    let node = p.value(0)?;
    p.ws();
    if p.pos != p.bytes.len() {
        return Err(format!("unexpected text at byte {}", p.pos));
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

    fn expect(&mut self, b: u8) -> Result<(), String> {
        if self.bytes.get(self.pos) == Some(&b) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!("expected {:?} at byte {}", b as char, self.pos))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node, String> {
        if depth > MAX_DEPTH {
            return Err("nested too deeply".into());
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
                            _ => return Err(format!("expected ',' or '}}' at byte {}", self.pos)),
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
                            _ => return Err(format!("expected ',' or ']' at byte {}", self.pos)),
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
                    return Err(format!("expected a value at byte {start}"));
                }
                NodeValue::Scalar
            }
            None => return Err("the text ends where a value should be".into()),
        };
        Ok(Node {
            start,
            end: self.pos,
            value,
        })
    }

    fn string(&mut self) -> Result<String, String> {
        let start = self.pos;
        self.expect(b'"')?;
        while let Some(&b) = self.bytes.get(self.pos) {
            match b {
                b'\\' => self.pos += 2,
                b'"' => {
                    self.pos += 1;
                    let literal = &self.text[start..self.pos];
                    return serde_json::from_str(literal).map_err(|e| format!("bad string at byte {start}: {e}"));
                }
                _ => self.pos += 1,
            }
        }
        Err(format!("unterminated string at byte {start}"))
    }
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
}
