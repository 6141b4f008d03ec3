//! An incremental reader for `text/event-stream` bodies (Server-Sent Events,
//! as the HTML standard defines them), for the HTTP transports.
//!
//! It hands each event over as soon as its blank line arrives, so a stream
//! that stays open (a GET stream, a long tool call) is seen live. The parser
//! ([`SseParser`]) takes bytes as they come; [`SseReader`] pulls them from a
//! reader, the reverse proxy pushes what it relays.

use crate::wire::framing::LineEnding;
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

    /// How it is recorded: a piece of a longer event, an event the stream
    /// ended in the middle of, or a whole one.
    pub fn ending(&self) -> LineEnding {
        if self.cut {
            LineEnding::Cut
        } else if self.truncated {
            LineEnding::Eof
        } else {
            LineEnding::Lf
        }
    }

    /// Events without data (a priming event that only sets `id`/`retry`, or
    /// keep-alive noise) carry no message.
    pub fn has_data(&self) -> bool {
        !self.data.is_empty()
    }
}

/// Room for a field name (`data: `) beyond the data limit on one line.
const FIELD_SLACK: usize = 64;

/// A line buffer that grew past this is given back once its line is done,
/// so one huge line does not keep its memory for the rest of the stream.
const KEPT_LINE_CAPACITY: usize = 64 * 1024;

/// Parses an event stream from bytes as they come (sans I/O), holding at
/// most `limit` bytes of an event's data (and of one line) in memory: a
/// longer event comes in pieces ([`SseEvent::cut`]), an overlong comment or
/// field is skipped. Lines end at LF (a CR before it is dropped).
#[derive(Debug)]
pub struct SseParser {
    limit: usize,
    first_line: bool,
    /// The line being read (not in `MidData`).
    line: Vec<u8>,
    mode: Mode,
    /// The event being read.
    ev: SseEvent,
    data_lines: usize,
    any_field: bool,
    /// In `MidData` with the data at the limit, a CR came: it is the line's
    /// end if a LF follows, else data of the next piece.
    cr_held: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Reading a line into `line`.
    Line,
    /// The rest of a `data:` line cut at the limit, read straight into the
    /// event's data; it began at this length of the data.
    MidData(usize),
    /// Dropping the rest of an overlong comment or field.
    Skip,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::with_limit(usize::MAX - FIELD_SLACK)
    }
}

impl SseParser {
    pub fn with_limit(limit: usize) -> Self {
        Self {
            limit: limit.clamp(1, usize::MAX - FIELD_SLACK),
            first_line: true,
            line: Vec::new(),
            mode: Mode::Line,
            ev: SseEvent::default(),
            data_lines: 0,
            any_field: false,
            cr_held: false,
        }
    }

    /// Reads `bytes`; hands over each event (or piece of one) they complete, in order.
    pub fn feed(&mut self, mut bytes: &[u8], emit: &mut impl FnMut(SseEvent)) {
        while !bytes.is_empty() {
            match self.mode {
                Mode::Skip => match memchr::memchr(b'\n', bytes) {
                    Some(i) => {
                        bytes = &bytes[i + 1..];
                        self.mode = Mode::Line;
                    }
                    None => return,
                },
                Mode::MidData(_) if self.cr_held => {
                    self.cr_held = false;
                    if bytes[0] == b'\n' {
                        bytes = &bytes[1..];
                        self.mode = Mode::Line;
                    } else {
                        self.cut(emit);
                        self.ev.data.push(b'\r');
                    }
                }
                Mode::MidData(began) => {
                    // Zero when the data is at the limit: then a LF ends the
                    // line, any other byte cuts a piece.
                    let room = self.limit - self.ev.data.len();
                    let window = &bytes[..bytes.len().min(room.saturating_add(1))];
                    match memchr::memchr(b'\n', window) {
                        Some(i) => {
                            self.ev.data.extend_from_slice(&bytes[..i]);
                            bytes = &bytes[i + 1..];
                            if self.ev.data.len() > began && self.ev.data.last() == Some(&b'\r') {
                                self.ev.data.pop();
                            }
                            self.mode = Mode::Line;
                            self.cut_while_full(emit);
                        }
                        None if bytes.len() > room => {
                            self.ev.data.extend_from_slice(&bytes[..room]);
                            bytes = &bytes[room..];
                            if bytes[0] == b'\r' {
                                // Data, or the line's CRLF: the next byte says.
                                self.cr_held = true;
                                bytes = &bytes[1..];
                            } else {
                                self.cut(emit);
                            }
                        }
                        None => {
                            self.ev.data.extend_from_slice(bytes);
                            return;
                        }
                    }
                }
                Mode::Line => {
                    let room = self.limit + FIELD_SLACK - self.line.len();
                    let window = &bytes[..bytes.len().min(room.saturating_add(1))];
                    match memchr::memchr(b'\n', window) {
                        Some(i) => {
                            self.line.extend_from_slice(&bytes[..i]);
                            bytes = &bytes[i + 1..];
                            if self.line.last() == Some(&b'\r') {
                                self.line.pop();
                            }
                            self.line_done(true, emit);
                        }
                        None if bytes.len() > room => {
                            self.line.extend_from_slice(&bytes[..room]);
                            bytes = &bytes[room..];
                            self.line_done(false, emit);
                        }
                        None => {
                            self.line.extend_from_slice(bytes);
                            return;
                        }
                    }
                }
            }
        }
    }

    /// The stream ended: what is left of an event is handed over, marked
    /// [`SseEvent::truncated`]. The parser is then ready for a new stream.
    pub fn finish(&mut self, emit: &mut impl FnMut(SseEvent)) {
        match self.mode {
            Mode::MidData(_) => {
                if self.cr_held {
                    self.cut(emit);
                    self.ev.data.push(b'\r');
                }
                self.ev.truncated = true;
                emit(std::mem::take(&mut self.ev));
            }
            Mode::Skip | Mode::Line => {
                // The last line, without its LF, still counts.
                if self.mode == Mode::Line && !self.line.is_empty() {
                    self.line_done(true, emit);
                }
                if self.any_field {
                    self.ev.truncated = true;
                    emit(std::mem::take(&mut self.ev));
                }
            }
        }
        *self = Self::with_limit(self.limit);
    }

    /// A line was read whole (`complete`) or up to the line limit.
    fn line_done(&mut self, complete: bool, emit: &mut impl FnMut(SseEvent)) {
        let mut line = std::mem::take(&mut self.line);
        let mut from = 0;
        if self.first_line {
            self.first_line = false;
            if line.starts_with(b"\xEF\xBB\xBF") {
                from = 3;
            }
        }
        let text = &line[from..];
        if text.is_empty() {
            if self.any_field {
                self.any_field = false;
                self.data_lines = 0;
                emit(std::mem::take(&mut self.ev));
            }
        } else if text[0] == b':' {
            if !complete {
                self.mode = Mode::Skip;
            }
        } else {
            let (name, value_at) = match memchr::memchr(b':', text) {
                Some(i) => (&text[..i], from + i + 1 + usize::from(text.get(i + 1) == Some(&b' '))),
                None => (text, line.len()),
            };
            self.any_field = true;
            match name {
                b"data" => {
                    if self.data_lines > 0 {
                        self.ev.data.push(b'\n');
                    }
                    self.data_lines += 1;
                    if self.ev.data.is_empty() {
                        // The line becomes the data: one copy of a long line, not two.
                        line.drain(..value_at);
                        self.ev.data = std::mem::take(&mut line);
                    } else {
                        self.ev.data.extend_from_slice(&line[value_at..]);
                    }
                    if !complete {
                        self.mode = Mode::MidData(self.ev.data.len());
                    }
                }
                b"event" => self.ev.event = Some(String::from_utf8_lossy(&line[value_at..]).into_owned()),
                b"id" if !line[value_at..].contains(&0) => {
                    self.ev.id = Some(String::from_utf8_lossy(&line[value_at..]).into_owned());
                }
                b"retry" => {
                    let value = &line[value_at..];
                    if !value.is_empty() && value.iter().all(u8::is_ascii_digit) {
                        self.ev.retry = std::str::from_utf8(value).ok().and_then(|s| s.parse().ok());
                    }
                }
                _ => {}
            }
            if !complete && self.mode == Mode::Line {
                // An absurdly long field that is not data: keep what was read, skip the rest.
                self.mode = Mode::Skip;
            }
        }
        line.clear();
        if line.capacity() <= KEPT_LINE_CAPACITY {
            self.line = line;
        }
        self.cut_while_full(emit);
    }

    /// Hands over pieces while the event's data is over the limit.
    fn cut_while_full(&mut self, emit: &mut impl FnMut(SseEvent)) {
        while self.ev.data.len() > self.limit {
            self.cut(emit);
        }
    }

    /// Hands over the event so far as a piece; the rest of its data (over the
    /// limit) begins the next one.
    fn cut(&mut self, emit: &mut impl FnMut(SseEvent)) {
        let mut piece = std::mem::take(&mut self.ev);
        if piece.data.len() > self.limit {
            self.ev.data = piece.data.split_off(self.limit);
        }
        piece.cut = true;
        emit(piece);
        self.data_lines = 1;
        self.any_field = true;
        if let Mode::MidData(_) = self.mode {
            self.mode = Mode::MidData(self.ev.data.len());
        }
    }
}

/// Reads events one at a time from a byte stream with an [`SseParser`].
pub struct SseReader<R> {
    inner: R,
    parser: SseParser,
    ready: std::collections::VecDeque<SseEvent>,
    ended: bool,
}

impl<R: BufRead> SseReader<R> {
    pub fn new(inner: R) -> Self {
        Self::with_limit(inner, usize::MAX - FIELD_SLACK)
    }

    pub fn with_limit(inner: R, limit: usize) -> Self {
        Self {
            inner,
            parser: SseParser::with_limit(limit),
            ready: Default::default(),
            ended: false,
        }
    }

    /// The next event, or `None` at the end of the stream. Comments
    /// (`: keep-alive`) are skipped; events with only `id`/`retry` are returned.
    pub fn next_event(&mut self) -> io::Result<Option<SseEvent>> {
        loop {
            if let Some(ev) = self.ready.pop_front() {
                return Ok(Some(ev));
            }
            if self.ended {
                return Ok(None);
            }
            let ready = &mut self.ready;
            let buf = match self.inner.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                self.parser.finish(&mut |ev| ready.push_back(ev));
                self.ended = true;
                continue;
            }
            let n = buf.len();
            self.parser.feed(buf, &mut |ev| ready.push_back(ev));
            self.inner.consume(n);
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

    /// However the bytes arrive, the same events and pieces come out.
    #[test]
    fn bytes_fed_in_pieces_of_any_size_parse_the_same() {
        let stream: &[u8] = b"\xEF\xBB\xBFevent: a\r\ndata: 0123456789abc\r\ndata: \r\n\r\n: a comment far too long\n\
            id: 1\nretry: 20\n\ndata:x\r\rdata: yy\n\nevent: a field name far too long to keep\ndata: z\n\n\
            data: 0123456789\r\ndata: 0123456\r\n\ndata: tail without end\r";
        for limit in [4, 7, 10, 64] {
            let all = |piece: usize| {
                let mut p = SseParser::with_limit(limit);
                let mut out = Vec::new();
                for part in stream.chunks(piece) {
                    p.feed(part, &mut |e| out.push(e));
                }
                p.finish(&mut |e| out.push(e));
                out
            };
            let whole = all(stream.len());
            assert!(whole.iter().all(|e| e.data.len() <= limit), "{whole:?}");
            assert!(whole.last().unwrap().truncated, "{whole:?}");
            for piece in 1..stream.len() {
                assert_eq!(all(piece), whole, "limit {limit}, pieces of {piece}");
            }
        }
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
