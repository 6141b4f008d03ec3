//! Newline-delimited framing over a byte stream.
//!
//! MCP's stdio transport puts one JSON-RPC message on each line. A debugger must
//! not trust that, so the framer never interprets or drops bytes: it splits on
//! `\n`, remembers how each line ended, and hands every byte on. Interpretation
//! happens later, in [`crate::wire::classify`].

use std::io::Read;

/// How a line was terminated on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LineEnding {
    /// `\n`, the only ending the MCP stdio transport defines.
    Lf,
    /// `\r\n`: tolerated by most clients, but not what the spec says.
    CrLf,
    /// The stream ended before a newline arrived: a partial last line.
    Eof,
    /// Not an ending: the line reached the in-memory cap
    /// ([`crate::wire::classify::Limits::max_held_line_bytes`]) and goes on in
    /// the next line of the same stream. Every byte is still recorded; the
    /// pieces together are the line.
    Cut,
}

impl LineEnding {
    pub fn as_str(self) -> &'static str {
        match self {
            LineEnding::Lf => "lf",
            LineEnding::CrLf => "crlf",
            LineEnding::Eof => "eof",
            LineEnding::Cut => "cut",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "lf" => Some(LineEnding::Lf),
            "crlf" => Some(LineEnding::CrLf),
            "eof" => Some(LineEnding::Eof),
            "cut" => Some(LineEnding::Cut),
            _ => None,
        }
    }

    /// The bytes that terminated the line, for byte-exact replay.
    pub fn bytes(self) -> &'static [u8] {
        match self {
            LineEnding::Lf => b"\n",
            LineEnding::CrLf => b"\r\n",
            LineEnding::Eof | LineEnding::Cut => b"",
        }
    }
}

/// One line as it appeared on the wire, without its terminator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawLine {
    pub bytes: Vec<u8>,
    pub ending: LineEnding,
}

impl RawLine {
    /// The exact bytes, terminator included.
    pub fn wire_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.bytes.len() + 2);
        out.extend_from_slice(&self.bytes);
        out.extend_from_slice(self.ending.bytes());
        out
    }
}

/// Push-based line splitter: feed it chunks as they are read, get whole lines.
///
/// Push-based so the same code frames a child's stdout, the proxy's two
/// directions (which forward chunks unchanged and frame a copy) and benchmarks.
///
/// A line never holds more than `limit` bytes in memory: a stream without
/// newlines (or one enormous line) comes out in pieces of `limit` bytes
/// ending in [`LineEnding::Cut`], so memory stays bounded and no byte is lost.
pub struct LineSplitter {
    pending: Vec<u8>,
    limit: usize,
}

impl Default for LineSplitter {
    fn default() -> Self {
        Self::new()
    }
}

impl LineSplitter {
    /// The lines a whole body makes on a line-framed wire (its last line
    /// ended as if a newline followed): what an owner's raw send becomes.
    pub fn lines_of(body: &[u8]) -> Vec<RawLine> {
        let mut lines = Vec::new();
        let mut splitter = LineSplitter::new();
        splitter.push(body, |l| lines.push(l));
        splitter.push(b"\n", |l| lines.push(l));
        lines
    }

    /// A splitter with no cap on a line's length (for bytes already in memory).
    pub fn new() -> Self {
        Self::with_limit(usize::MAX)
    }

    /// A splitter that cuts lines at `limit` bytes (at least 1).
    pub fn with_limit(limit: usize) -> Self {
        Self {
            pending: Vec::new(),
            limit: limit.max(1),
        }
    }

    /// Feeds a chunk; `emit` is called once per completed line (or piece).
    pub fn push(&mut self, mut chunk: &[u8], mut emit: impl FnMut(RawLine)) {
        loop {
            let room = self.limit - self.pending.len();
            let newline = memchr_newline(&chunk[..chunk.len().min(room.saturating_add(1))]);
            match newline {
                Some(pos) => {
                    let (line_part, rest) = chunk.split_at(pos);
                    chunk = &rest[1..];
                    let mut bytes = if self.pending.is_empty() {
                        line_part.to_vec()
                    } else {
                        let mut b = std::mem::take(&mut self.pending);
                        b.extend_from_slice(line_part);
                        b
                    };
                    let ending = if bytes.last() == Some(&b'\r') {
                        bytes.pop();
                        LineEnding::CrLf
                    } else {
                        LineEnding::Lf
                    };
                    emit(RawLine { bytes, ending });
                }
                None if chunk.len() > room => {
                    // No newline within the cap: hand over a piece and go on.
                    let (piece, rest) = chunk.split_at(room);
                    chunk = rest;
                    let mut bytes = std::mem::take(&mut self.pending);
                    bytes.extend_from_slice(piece);
                    emit(RawLine {
                        bytes,
                        ending: LineEnding::Cut,
                    });
                    if chunk.is_empty() {
                        return;
                    }
                }
                None => {
                    self.pending.extend_from_slice(chunk);
                    return;
                }
            }
        }
    }

    /// Ends the stream: a non-empty remainder becomes a partial line.
    pub fn finish(&mut self) -> Option<RawLine> {
        if self.pending.is_empty() {
            None
        } else {
            Some(RawLine {
                bytes: std::mem::take(&mut self.pending),
                ending: LineEnding::Eof,
            })
        }
    }
}

fn memchr_newline(haystack: &[u8]) -> Option<usize> {
    // The std iterator search compiles to a vectorised loop; good enough to
    // keep framing well under the cost of JSON parsing.
    haystack.iter().position(|&b| b == b'\n')
}

/// Reads `reader` to the end, calling `on_line` for every line; a line longer
/// than `limit` bytes is handed over in pieces (see [`LineSplitter`]).
///
/// Returns the I/O error that ended the stream, if any; lines read before the
/// error (and a partial remainder) are still delivered.
pub fn read_lines<R: Read>(mut reader: R, limit: usize, mut on_line: impl FnMut(RawLine)) -> std::io::Result<()> {
    let mut splitter = LineSplitter::with_limit(limit);
    let mut buf = vec![0u8; 64 * 1024];
    let result = loop {
        match reader.read(&mut buf) {
            Ok(0) => break Ok(()),
            Ok(n) => splitter.push(&buf[..n], &mut on_line),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => break Err(e),
        }
    };
    if let Some(last) = splitter.finish() {
        on_line(last);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_all(chunks: &[&[u8]]) -> Vec<RawLine> {
        let mut s = LineSplitter::new();
        let mut out = Vec::new();
        for c in chunks {
            s.push(c, |l| out.push(l));
        }
        out.extend(s.finish());
        out
    }

    #[test]
    fn splits_lines_and_keeps_every_byte() {
        let lines = split_all(&[b"{\"a\":1}\n{\"b\"", b":2}\r\n\n tail"]);
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0].bytes, b"{\"a\":1}");
        assert_eq!(lines[0].ending, LineEnding::Lf);
        assert_eq!(lines[1].bytes, b"{\"b\":2}");
        assert_eq!(lines[1].ending, LineEnding::CrLf);
        assert_eq!(lines[2].bytes, b"");
        assert_eq!(lines[3].bytes, b" tail");
        assert_eq!(lines[3].ending, LineEnding::Eof);
        let rejoined: Vec<u8> = lines.iter().flat_map(|l| l.wire_bytes()).collect();
        assert_eq!(rejoined, b"{\"a\":1}\n{\"b\":2}\r\n\n tail");
    }

    #[test]
    fn chunk_boundary_inside_crlf() {
        let lines = split_all(&[b"x\r", b"\ny\n"]);
        assert_eq!(lines[0].bytes, b"x");
        assert_eq!(lines[0].ending, LineEnding::CrLf);
        assert_eq!(lines[1].bytes, b"y");
    }

    #[test]
    fn invalid_utf8_passes_through_untouched() {
        let lines = split_all(&[b"\xff\xfe bad\n"]);
        assert_eq!(lines[0].bytes, b"\xff\xfe bad");
    }

    #[test]
    fn no_partial_line_when_stream_ends_on_newline() {
        assert_eq!(split_all(&[b"a\n"]).len(), 1);
        assert!(split_all(&[]).is_empty());
    }

    #[test]
    fn read_lines_from_reader_with_tiny_reads() {
        struct OneByte<'a>(&'a [u8]);
        impl Read for OneByte<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                if self.0.is_empty() || buf.is_empty() {
                    return Ok(0);
                }
                buf[0] = self.0[0];
                self.0 = &self.0[1..];
                Ok(1)
            }
        }
        let mut got = Vec::new();
        read_lines(OneByte(b"ab\ncd"), usize::MAX, |l| got.push(l)).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].ending, LineEnding::Eof);
    }

    fn split_capped(limit: usize, chunks: &[&[u8]]) -> Vec<RawLine> {
        let mut s = LineSplitter::with_limit(limit);
        let mut out = Vec::new();
        for c in chunks {
            s.push(c, |l| out.push(l));
        }
        out.extend(s.finish());
        out
    }

    #[test]
    fn a_line_over_the_cap_comes_in_pieces_and_keeps_every_byte() {
        let input: &[&[u8]] = &[b"abcdefghij", b"klm\nxy", b"z\n0123456789\n"];
        let lines = split_capped(4, input);
        let shape: Vec<(&[u8], LineEnding)> = lines.iter().map(|l| (&l.bytes[..], l.ending)).collect();
        assert_eq!(
            shape,
            vec![
                (&b"abcd"[..], LineEnding::Cut),
                (b"efgh", LineEnding::Cut),
                (b"ijkl", LineEnding::Cut),
                (b"m", LineEnding::Lf),
                (b"xyz", LineEnding::Lf),
                (b"0123", LineEnding::Cut),
                (b"4567", LineEnding::Cut),
                (b"89", LineEnding::Lf),
            ]
        );
        let rejoined: Vec<u8> = lines.iter().flat_map(|l| l.wire_bytes()).collect();
        assert_eq!(rejoined, input.concat());
        assert!(lines.iter().all(|l| l.bytes.len() <= 4));
    }

    #[test]
    fn a_line_of_exactly_the_cap_is_not_cut() {
        let lines = split_capped(4, &[b"abcd\nefgh", b"\n"]);
        assert_eq!(lines.len(), 2);
        assert!(lines.iter().all(|l| l.ending == LineEnding::Lf), "{lines:?}");
    }

    #[test]
    fn an_endless_stream_without_newlines_holds_at_most_the_cap() {
        struct Zeros(usize);
        impl Read for Zeros {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = buf.len().min(self.0);
                buf[..n].fill(0);
                self.0 -= n;
                Ok(n)
            }
        }
        let mut pieces = 0;
        let mut total = 0;
        read_lines(Zeros(10 * 1024 * 1024 + 5), 1024 * 1024, |l| {
            assert!(l.bytes.len() <= 1024 * 1024);
            total += l.bytes.len();
            pieces += 1;
        })
        .unwrap();
        assert_eq!(total, 10 * 1024 * 1024 + 5);
        assert_eq!(pieces, 11);
    }
}
