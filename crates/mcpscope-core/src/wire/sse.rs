//! An incremental reader for `text/event-stream` bodies (Server-Sent Events,
//! as the HTML standard defines them), for the HTTP transports.
//!
//! It hands each event over as soon as its blank line arrives, so a stream
//! that stays open (a GET stream, a long tool call) is seen live.

use std::io::{self, BufRead};

/// One event of a stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field; `None` means the default type, `message`.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: Vec<u8>,
    /// The `id:` field, when this event had one.
    pub id: Option<String>,
    /// The `retry:` field, in milliseconds, when this event had a valid one.
    pub retry: Option<u64>,
    /// The stream ended before the blank line that ends an event: what came
    /// is kept, but it may be cut short.
    pub truncated: bool,
}

impl SseEvent {
    pub fn kind(&self) -> &str {
        self.event.as_deref().unwrap_or("message")
    }

    /// Events without data (a priming event that only sets `id`/`retry`, or
    /// keep-alive noise) carry no message.
    pub fn has_data(&self) -> bool {
        !self.data.is_empty()
    }
}

/// Reads events one at a time from a byte stream.
pub struct SseReader<R> {
    inner: R,
    first_line: bool,
    line: Vec<u8>,
}

impl<R: BufRead> SseReader<R> {
    pub fn new(inner: R) -> Self {
        Self {
            inner,
            first_line: true,
            line: Vec::new(),
        }
    }

    /// The next event, or `None` at the end of the stream. Comments
    /// (`: keep-alive`) are skipped; events with only `id`/`retry` are returned.
    pub fn next_event(&mut self) -> io::Result<Option<SseEvent>> {
        let mut ev = SseEvent::default();
        let mut data_lines = 0usize;
        let mut any_field = false;
        loop {
            self.line.clear();
            let n = self.inner.read_until(b'\n', &mut self.line)?;
            if n == 0 {
                // End of stream: keep a partial event rather than drop bytes.
                if any_field {
                    ev.truncated = true;
                    return Ok(Some(ev));
                }
                return Ok(None);
            }
            let mut line: &[u8] = &self.line;
            if line.last() == Some(&b'\n') {
                line = &line[..line.len() - 1];
            }
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            if self.first_line {
                self.first_line = false;
                line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
            }
            if line.is_empty() {
                if any_field {
                    return Ok(Some(ev));
                }
                continue;
            }
            if line[0] == b':' {
                continue;
            }
            let (name, value) = match line.iter().position(|&b| b == b':') {
                Some(i) => {
                    let v = &line[i + 1..];
                    (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
                }
                None => (line, &b""[..]),
            };
            any_field = true;
            match name {
                b"data" => {
                    if data_lines > 0 {
                        ev.data.push(b'\n');
                    }
                    ev.data.extend_from_slice(value);
                    data_lines += 1;
                }
                b"event" => ev.event = Some(String::from_utf8_lossy(value).into_owned()),
                b"id" if !value.contains(&0) => ev.id = Some(String::from_utf8_lossy(value).into_owned()),
                b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                    ev.retry = std::str::from_utf8(value).ok().and_then(|s| s.parse().ok());
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8]) -> Vec<SseEvent> {
        let mut r = SseReader::new(input);
        let mut out = Vec::new();
        while let Some(e) = r.next_event().unwrap() {
            out.push(e);
        }
        out
    }

    #[test]
    fn parses_typescript_sdk_framing() {
        let evs = all(b"id: p1\nretry: 1500\ndata: \n\nevent: message\nid: e1\ndata: {\"jsonrpc\":\"2.0\"}\n\n");
        assert_eq!(evs.len(), 2);
        assert_eq!(evs[0].id.as_deref(), Some("p1"));
        assert_eq!(evs[0].retry, Some(1500));
        assert!(!evs[0].has_data());
        assert_eq!(evs[1].kind(), "message");
        assert_eq!(evs[1].data, br#"{"jsonrpc":"2.0"}"#);
        assert_eq!(evs[1].id.as_deref(), Some("e1"));
    }

    #[test]
    fn multi_line_data_comments_crlf_and_bom() {
        let evs = all(b"\xEF\xBB\xBF: hello\r\nevent: endpoint\r\ndata: a\r\ndata:b\r\n\r\n:ka\n\n");
        assert_eq!(evs.len(), 1);
        assert_eq!(evs[0].kind(), "endpoint");
        assert_eq!(evs[0].data, b"a\nb");
    }

    #[test]
    fn partial_event_at_end_is_kept_and_marked() {
        let evs = all(b"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"res");
        assert_eq!(evs.len(), 1);
        assert!(evs[0].truncated);
        assert_eq!(evs[0].data, br#"{"jsonrpc":"2.0","id":1,"res"#);
    }

    #[test]
    fn invalid_retry_is_ignored() {
        let evs = all(b"retry: soon\ndata: x\n\n");
        assert_eq!(evs[0].retry, None);
        assert_eq!(evs[0].data, b"x");
    }
}
