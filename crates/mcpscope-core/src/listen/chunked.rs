//! Decoding a chunked body (RFC 9112 §7.1), sans I/O: sizes and trailers
//! parsed by `httparse`, every part bounded. The listeners decode request
//! bodies with it and the load generator its servers' answers, each reading
//! more from its own socket when it says [`Piece::NeedMore`].

use std::ops::Range;

/// The longest chunk-size line (size, extensions, CRLF).
pub(crate) const MAX_CHUNK_LINE: usize = 4096;
/// Trailer fields larger than this are refused (431).
pub(crate) const MAX_TRAILERS: usize = 64 * 1024;
/// More trailer fields than this is malformed.
const MAX_TRAILER_FIELDS: usize = 100;

/// The next piece of a chunked body.
#[derive(Debug, PartialEq)]
pub(crate) enum Piece {
    /// Not all of it is in the buffer yet: read more and ask again from the
    /// same place. Names the part being waited for, for a timeout's message.
    NeedMore(&'static str),
    /// A chunk's bytes, and where the next piece starts.
    Chunk { data: Range<usize>, next: usize },
    /// The last chunk and its trailers: the body ended just before `next`.
    End { next: usize },
}

/// Why a chunked body cannot be read.
#[derive(Debug, PartialEq)]
pub(crate) enum ChunkError {
    /// A chunk of `size` bytes would take the body past what the reader holds.
    TooLarge { size: u64 },
    /// The framing is broken: the status a listener answers with (400, or
    /// 431 for trailers too large) and why.
    Malformed(u16, String),
}

fn malformed(status: u16, why: impl Into<String>) -> ChunkError {
    ChunkError::Malformed(status, why.into())
}

/// The piece of a chunked body that starts at `buf[pos..]`, when the body
/// may hold `room` more bytes. A size past `room` is refused as soon as its
/// line is read, before any of its bytes.
pub(crate) fn next_piece(buf: &[u8], pos: usize, room: usize) -> Result<Piece, ChunkError> {
    let rest = &buf[pos..];
    // httparse reads an empty size as 0, the last chunk: here it is an error.
    if rest.first().is_some_and(|b| !b.is_ascii_hexdigit()) {
        return Err(malformed(400, "a chunk size line that does not start with a hex digit"));
    }
    let (line, size) = match httparse::parse_chunk_size(rest) {
        Ok(httparse::Status::Complete(found)) => found,
        Ok(httparse::Status::Partial) if rest.len() > MAX_CHUNK_LINE => {
            return Err(malformed(
                400,
                format!("a chunk size line longer than {MAX_CHUNK_LINE} bytes"),
            ));
        }
        Ok(httparse::Status::Partial) => return Ok(Piece::NeedMore("a chunk size line")),
        Err(_) => return Err(malformed(400, "a chunk size line that is not a hex size")),
    };
    if size > room as u64 {
        return Err(ChunkError::TooLarge { size });
    }
    // Within `room`, so it fits in memory and in a usize.
    let size = size as usize;
    let start = pos + line;
    if size == 0 {
        let mut trailers = [httparse::EMPTY_HEADER; MAX_TRAILER_FIELDS];
        return match httparse::parse_headers(&buf[start..], &mut trailers) {
            Ok(httparse::Status::Complete((n, _))) => Ok(Piece::End { next: start + n }),
            Ok(httparse::Status::Partial) if buf.len() - start > MAX_TRAILERS => {
                Err(malformed(431, "the chunked body's trailers are too large"))
            }
            Ok(httparse::Status::Partial) => Ok(Piece::NeedMore("the trailers")),
            Err(e) => Err(malformed(400, format!("malformed trailers: {e}"))),
        };
    }
    let end = start + size;
    if buf.len() < end + 2 {
        return Ok(Piece::NeedMore("a chunk"));
    }
    if buf[end..end + 2] != *b"\r\n" {
        return Err(malformed(
            400,
            format!("chunk data longer than its chunk size {size:#x}"),
        ));
    }
    Ok(Piece::Chunk {
        data: start..end,
        next: end + 2,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The body `input` decodes to, reading it whole.
    fn decode(input: &[u8], room: usize) -> Result<(Vec<u8>, usize), ChunkError> {
        let (mut body, mut pos) = (Vec::new(), 0);
        loop {
            match next_piece(input, pos, room - body.len())? {
                Piece::Chunk { data, next } => {
                    body.extend_from_slice(&input[data]);
                    pos = next;
                }
                Piece::End { next } => return Ok((body, next)),
                Piece::NeedMore(what) => panic!("{input:?}: waits for {what}"),
            }
        }
    }

    #[test]
    fn chunks_extensions_and_trailers_decode_and_what_follows_is_left() {
        let input = b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-T: 1\r\n\r\nGET /next";
        let (body, next) = decode(input, 1024).unwrap();
        assert_eq!(body, b"hello world");
        assert_eq!(&input[next..], b"GET /next");
    }

    #[test]
    fn a_body_cut_short_asks_for_more_of_the_part_it_is_in() {
        let whole = b"5\r\nhello\r\n0\r\n\r\n";
        for cut in 0..whole.len() {
            let mut pos = 0;
            let waiting = loop {
                match next_piece(&whole[..cut], pos, 1024).unwrap() {
                    Piece::Chunk { next, .. } => pos = next,
                    Piece::NeedMore(what) => break what,
                    Piece::End { .. } => panic!("ended at {cut}"),
                }
            };
            let expected = match cut {
                0..=2 => "a chunk size line",
                3..=9 => "a chunk",
                10..=12 => "a chunk size line",
                _ => "the trailers",
            };
            assert_eq!(waiting, expected, "cut at {cut}");
        }
    }

    #[test]
    fn a_size_past_the_room_is_refused_before_its_bytes_come() {
        assert_eq!(
            next_piece(b"ffffffffffffffff\r\n", 0, 1 << 20),
            Err(ChunkError::TooLarge { size: u64::MAX })
        );
        assert_eq!(decode(b"4\r\nabcd\r\n5\r\n", 8), Err(ChunkError::TooLarge { size: 5 }));
        assert!(decode(b"4\r\nabcd\r\n4\r\nefgh\r\n0\r\n\r\n", 8).is_ok());
    }

    #[test]
    fn broken_framing_is_malformed() {
        for input in [
            &b"+5\r\nhello\r\n0\r\n\r\n"[..],
            b"\r\n",
            b";x\r\n",
            b"zz\r\n",
            b"5\r\nhello world\r\n0\r\n\r\n",
            b"10000000000000000\r\n",
            b"0\r\nno colon\r\n\r\n",
        ] {
            let e = decode(input, usize::MAX).unwrap_err();
            assert!(matches!(e, ChunkError::Malformed(400, _)), "{input:?}: {e:?}");
        }
        let long = [&vec![b'0'; MAX_CHUNK_LINE + 1][..], b"1"].concat();
        assert!(matches!(next_piece(&long, 0, 10), Err(ChunkError::Malformed(400, _))));
        let trailers = [&b"0\r\n"[..], &vec![b'a'; MAX_TRAILERS + 1]].concat();
        assert!(matches!(
            next_piece(&trailers, 0, 10),
            Err(ChunkError::Malformed(431, _))
        ));
    }
}
