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
    /// The event's data reached the reader's limit: this is a piece, and the
    /// rest of the data comes in the next event(s) returned.
    pub cut: bool,
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

/// Room for a field name (`data: `) beyond the data limit on one line.
const FIELD_SLACK: usize = 64;

/// Reads events one at a time from a byte stream, holding at most `limit`
/// bytes of an event's data (and of one line) in memory: a longer event comes
/// in pieces ([`SseEvent::cut`]), an overlong comment or field is skipped.
pub struct SseReader<R> {
    inner: R,
    first_line: bool,
    line: Vec<u8>,
    limit: usize,
    /// Data of the event being cut that did not fit into the last piece.
    carry: Vec<u8>,
    /// The last piece stopped in the middle of a `data:` line.
    mid_data: bool,
    /// The last piece stopped between `data:` lines: the next one is joined with a newline.
    join_data: bool,
}

/// What reading one line found.
enum LineRead {
    End,
    /// A whole line (or the last bytes before the end of the stream).
    Whole,
    /// The line goes on beyond the bytes read.
    Cut,
}

impl<R: BufRead> SseReader<R> {
    pub fn new(inner: R) -> Self {
        Self::with_limit(inner, usize::MAX - FIELD_SLACK)
    }

    pub fn with_limit(inner: R, limit: usize) -> Self {
        Self {
            inner,
            first_line: true,
            line: Vec::new(),
            limit: limit.clamp(1, usize::MAX - FIELD_SLACK),
            carry: Vec::new(),
            mid_data: false,
            join_data: false,
        }
    }

    /// Reads one line (without its terminator) into `self.line`, at most `max` bytes.
    fn read_line(&mut self, max: usize) -> io::Result<LineRead> {
        self.line.clear();
        loop {
            let buf = match self.inner.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                return Ok(if self.line.is_empty() {
                    LineRead::End
                } else {
                    LineRead::Whole
                });
            }
            let room = max - self.line.len();
            let window = &buf[..buf.len().min(room.saturating_add(1))];
            match window.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    self.line.extend_from_slice(&buf[..i]);
                    self.inner.consume(i + 1);
                    if self.line.last() == Some(&b'\r') {
                        self.line.pop();
                    }
                    return Ok(LineRead::Whole);
                }
                None if buf.len() > room => {
                    self.line.extend_from_slice(&buf[..room]);
                    self.inner.consume(room);
                    return Ok(LineRead::Cut);
                }
                None => {
                    let n = buf.len();
                    self.line.extend_from_slice(buf);
                    self.inner.consume(n);
                }
            }
        }
    }

    /// Discards the rest of a line that was cut.
    fn skip_rest(&mut self) -> io::Result<()> {
        while let LineRead::Cut = self.read_line(self.limit)? {}
        Ok(())
    }

    /// Finishes a piece of an event that reached the limit.
    fn cut(&mut self, mut ev: SseEvent) -> SseEvent {
        if ev.data.len() > self.limit {
            self.carry = ev.data.split_off(self.limit);
        }
        self.join_data = !self.mid_data;
        ev.cut = true;
        ev
    }

    /// The next event, or `None` at the end of the stream. Comments
    /// (`: keep-alive`) are skipped; events with only `id`/`retry` are returned.
    pub fn next_event(&mut self) -> io::Result<Option<SseEvent>> {
        let continuing = !self.carry.is_empty() || self.mid_data || self.join_data;
        let mut ev = SseEvent {
            data: std::mem::take(&mut self.carry),
            ..SseEvent::default()
        };
        let mut data_lines = usize::from(continuing);
        let mut any_field = continuing;
        self.join_data = false;
        loop {
            if ev.data.len() >= self.limit {
                return Ok(Some(self.cut(ev)));
            }
            if self.mid_data {
                let room = self.limit - ev.data.len();
                match self.read_line(room)? {
                    LineRead::End => {
                        self.mid_data = false;
                        ev.truncated = true;
                        return Ok(Some(ev));
                    }
                    LineRead::Whole => {
                        ev.data.extend_from_slice(&self.line);
                        self.mid_data = false;
                    }
                    LineRead::Cut => {
                        ev.data.extend_from_slice(&self.line);
                        return Ok(Some(self.cut(ev)));
                    }
                }
                continue;
            }
            let read = self.read_line(self.limit + FIELD_SLACK)?;
            let complete = match read {
                LineRead::End => {
                    // End of stream: keep a partial event rather than drop bytes.
                    if any_field {
                        ev.truncated = true;
                        return Ok(Some(ev));
                    }
                    return Ok(None);
                }
                LineRead::Whole => true,
                LineRead::Cut => false,
            };
            let mut line: &[u8] = &self.line;
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
                if !complete {
                    self.skip_rest()?;
                }
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
                    if !complete {
                        self.mid_data = true;
                        return Ok(Some(self.cut(ev)));
                    }
                }
                b"event" => ev.event = Some(String::from_utf8_lossy(value).into_owned()),
                b"id" if !value.contains(&0) => ev.id = Some(String::from_utf8_lossy(value).into_owned()),
                b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                    ev.retry = std::str::from_utf8(value).ok().and_then(|s| s.parse().ok());
                }
                _ => {}
            }
            if !complete {
                // An absurdly long field that is not data: keep what was read, skip the rest.
                self.skip_rest()?;
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

    #[test]
    fn an_event_longer_than_the_limit_comes_in_pieces_with_every_byte() {
        let big = "x".repeat(25);
        let input = format!("event: message\ndata: {big}\ndata: yy\n\ndata: {{}}\n\n");
        let mut r = SseReader::with_limit(input.as_bytes(), 10);
        let mut pieces = Vec::new();
        while let Some(e) = r.next_event().unwrap() {
            pieces.push(e);
        }
        let data: Vec<&[u8]> = pieces.iter().map(|e| &e.data[..]).collect();
        assert_eq!(data, vec![&b"xxxxxxxxxx"[..], b"xxxxxxxxxx", b"xxxxx\nyy", b"{}"]);
        let joined: Vec<u8> = pieces[..pieces.len() - 1].iter().flat_map(|e| e.data.clone()).collect();
        assert_eq!(joined, format!("{big}\nyy").into_bytes());
        assert!(pieces.iter().all(|e| e.data.len() <= 10), "{pieces:?}");
        assert!(pieces[..pieces.len() - 2].iter().all(|e| e.cut), "{pieces:?}");
        assert!(!pieces[pieces.len() - 2].cut);
        assert_eq!(pieces.last().unwrap().data, b"{}");
        assert!(!pieces.last().unwrap().cut);
    }

    #[test]
    fn an_endless_line_is_read_with_bounded_memory() {
        struct Endless(usize, u8);
        impl std::io::Read for Endless {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = buf.len().min(self.0);
                buf[..n].fill(self.1);
                self.0 -= n;
                Ok(n)
            }
        }
        // A comment that never ends is skipped; a data line that never ends comes in pieces.
        let comment = std::io::BufReader::new(std::io::Read::chain(&b":"[..], Endless(3_000_000, b'c')));
        let mut r = SseReader::with_limit(comment, 1000);
        assert!(r.next_event().unwrap().is_none());
        let data = std::io::BufReader::new(std::io::Read::chain(&b"data: "[..], Endless(3_000_000, b'd')));
        let mut r = SseReader::with_limit(data, 1000);
        let mut total = 0;
        while let Some(e) = r.next_event().unwrap() {
            assert!(e.data.len() <= 1000);
            total += e.data.len();
        }
        assert_eq!(total, 3_000_000);
    }
}
