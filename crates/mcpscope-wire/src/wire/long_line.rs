//! What a line too long to hold in memory was, read from its pieces.
//!
//! A line over the in-memory cap is recorded in pieces and never parsed.
//! Its top-level members can still be read as the pieces pass: whether it
//! carried `result` or `error` and which `id`, so that a request answered
//! with a 100 MB line is told apart from a request that got no answer.

use crate::wire::message::RequestId;

/// Top-level member names longer than this are not ours to look for.
const MAX_KEY: usize = 16;
/// An `id` longer than this is no id we sent.
const MAX_ID: usize = 256;

/// Scans a JSON object's top level across pieces, without keeping them.
#[derive(Clone, Debug, Default)]
pub struct LongLine {
    bytes: u64,
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// At the top level, the next string is a member name.
    expect_key: bool,
    reading_key: bool,
    key: Vec<u8>,
    key_too_long: bool,
    /// The raw text of the top-level `id`'s value while it is read.
    id_text: Option<Vec<u8>>,
    id: Option<Vec<u8>>,
    has_result: bool,
    has_error: bool,
    has_method: bool,
}

/// What a long line turned out to be.
#[derive(Clone, Debug, PartialEq)]
pub struct LongLineSummary {
    pub bytes: u64,
    /// The top-level `id`, when it is one (a number or a string).
    pub id: Option<RequestId>,
    /// It carried a top-level `result` or `error` (a response).
    pub is_response: bool,
    pub has_method: bool,
}

impl LongLine {
    pub fn push(&mut self, piece: &[u8]) {
        self.bytes += piece.len() as u64;
        for &b in piece {
            self.step(b);
        }
    }

    fn step(&mut self, b: u8) {
        if let Some(id) = self.id_text.as_mut()
            && id.len() <= MAX_ID
        {
            id.push(b);
        }
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                if self.reading_key {
                    self.reading_key = false;
                    self.end_key();
                }
                return;
            }
            if self.reading_key {
                if self.key.len() < MAX_KEY {
                    self.key.push(b);
                } else {
                    self.key_too_long = true;
                }
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key {
                    self.reading_key = true;
                    self.key.clear();
                    self.key_too_long = false;
                }
            }
            b'{' | b'[' => {
                self.depth += 1;
                if self.depth == 1 {
                    self.expect_key = b == b'{';
                }
            }
            b'}' | b']' => {
                if self.depth == 1 {
                    self.end_value();
                }
                self.depth = self.depth.saturating_sub(1);
            }
            b':' if self.depth == 1 => {
                self.expect_key = false;
                if !self.key_too_long && self.key == b"id" {
                    self.id_text = Some(Vec::new());
                }
            }
            b',' if self.depth == 1 => {
                self.end_value();
                self.expect_key = true;
            }
            _ => {}
        }
    }

    fn end_key(&mut self) {
        if self.key_too_long {
            return;
        }
        match self.key.as_slice() {
            b"result" => self.has_result = true,
            b"error" => self.has_error = true,
            b"method" => self.has_method = true,
            _ => {}
        }
    }

    /// A top-level value ended (at a `,` or the closing `}`).
    fn end_value(&mut self) {
        if let Some(mut text) = self.id_text.take() {
            // The byte that ended it was pushed too.
            text.pop();
            self.id = Some(text);
        }
    }

    pub fn finish(self) -> LongLineSummary {
        let id = self
            .id
            .and_then(|t| serde_json::from_slice::<serde_json::Value>(&t).ok())
            .and_then(|v| RequestId::from_json(&v));
        LongLineSummary {
            bytes: self.bytes,
            id,
            is_response: self.has_result || self.has_error,
            has_method: self.has_method,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(pieces: &[&[u8]]) -> LongLineSummary {
        let mut l = LongLine::default();
        for p in pieces {
            l.push(p);
        }
        l.finish()
    }

    #[test]
    fn a_response_split_anywhere_gives_its_id() {
        let line = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"xx\"id\":9,"}]}}"#;
        for cut in 0..line.len() {
            let s = scan(&[&line[..cut], &line[cut..]]);
            assert_eq!(s.id, Some(RequestId::Number(7)), "cut at {cut}");
            assert!(s.is_response);
            assert_eq!(s.bytes, line.len() as u64);
        }
    }

    #[test]
    fn an_id_after_the_result_and_a_string_id_are_found() {
        let s = scan(&[br#"{"result":{"id":1,"a":[1,2,{"id":3}]}, "id" : "abc" }"#]);
        assert_eq!(s.id, Some(RequestId::String("abc".into())));
        assert!(s.is_response);
    }

    #[test]
    fn nested_ids_and_names_are_not_the_lines() {
        let s = scan(&[br#"{"method":"notifications/message","params":{"id":5,"result":1}}"#]);
        assert_eq!(s.id, None);
        assert!(!s.is_response);
        assert!(s.has_method);
    }

    #[test]
    fn endless_junk_is_nothing() {
        let s = scan(&[&[b'x'; 1000], b"{\"id\":1"]);
        assert_eq!(s.id, None);
        assert!(!s.is_response);
    }
}
