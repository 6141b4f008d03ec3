//! An answer's body read as it comes (an SSE stream, a chunked body, one
//! longer than is held at once, one that ends when the connection does),
//! its framing undone with every part bounded, whatever the peer sends.

use crate::listen::chunked::{MAX_CHUNK_LINE, MAX_TRAILERS};
use std::io::{self, Read};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// How a body's end is known (RFC 9112 §6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Framing {
    Length(u64),
    Chunked,
    UntilClose,
}

/// Where a chunked body's reading is.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Chunks {
    /// Before a chunk-size line.
    Size,
    /// Inside a chunk: this many of its bytes to come.
    Data(u64),
    /// After a chunk's bytes: its CRLF.
    DataEnd,
    /// After the last chunk: trailer fields until an empty line; the
    /// bytes of them read so far.
    Trailers(usize),
    Done,
}

enum State {
    Length(u64),
    Chunked(Chunks),
    UntilClose,
}

/// A body read from its connection, which closes when the body is dropped
/// (it is not reused: the POSTs after such an answer go through ureq).
pub(super) struct StreamedBody {
    stream: Arc<TcpStream>,
    /// Bytes read past the head and not yet handed out, from `pos`.
    buf: Vec<u8>,
    pos: usize,
    state: State,
    /// How long the server may stay silent.
    quiet: Duration,
    /// Set when the client is shut down.
    shut: Arc<AtomicBool>,
}

fn broken(why: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why.into())
}

/// A read from the socket: it ends when the client is shut down, or when
/// nothing came for `quiet` (said as the silence it was).
fn read_quiet(stream: &TcpStream, out: &mut [u8], quiet: Duration, shut: &AtomicBool) -> io::Result<usize> {
    let since = Instant::now();
    super::read_polling(stream, out, shut, || {
        (since.elapsed() >= quiet).then(|| {
            io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the server sent nothing for {quiet:?}"),
            )
        })
    })
}

impl StreamedBody {
    pub(super) fn new(
        stream: Arc<TcpStream>,
        buf: Vec<u8>,
        framing: Framing,
        quiet: Duration,
        shut: Arc<AtomicBool>,
    ) -> Self {
        StreamedBody {
            stream,
            buf,
            pos: 0,
            state: match framing {
                Framing::Length(n) => State::Length(n),
                Framing::Chunked => State::Chunked(Chunks::Size),
                Framing::UntilClose => State::UntilClose,
            },
            quiet,
            shut,
        }
    }

    fn buffered(&self) -> &[u8] {
        &self.buf[self.pos..]
    }

    /// Reads more onto the buffer; false at the end of the stream.
    fn more(&mut self) -> io::Result<bool> {
        self.buf.drain(..self.pos);
        self.pos = 0;
        let len = self.buf.len();
        self.buf.resize(len + super::READ_SIZE, 0);
        let read = read_quiet(&self.stream, &mut self.buf[len..], self.quiet, &self.shut);
        self.buf.truncate(len + *read.as_ref().unwrap_or(&0));
        Ok(read? > 0)
    }

    /// Up to `limit` body bytes into `out`: from the buffer, or straight
    /// from the socket when the buffer is empty. 0 at the end of the stream.
    fn take(&mut self, out: &mut [u8], limit: u64) -> io::Result<usize> {
        let want = out.len().min(usize::try_from(limit).unwrap_or(usize::MAX));
        let held = self.buffered();
        if !held.is_empty() {
            let n = want.min(held.len());
            out[..n].copy_from_slice(&held[..n]);
            self.pos += n;
            return Ok(n);
        }
        read_quiet(&self.stream, &mut out[..want], self.quiet, &self.shut)
    }

    fn cut_short(what: &str) -> io::Error {
        io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("the server closed the connection inside {what}"),
        )
    }

    /// The next chunked piece; `Ok(0)` only at the body's end.
    fn read_chunked(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            let State::Chunked(chunks) = self.state else {
                return Ok(0);
            };
            let next = match chunks {
                Chunks::Done => return Ok(0),
                Chunks::Size => {
                    let rest = &self.buf[self.pos..];
                    if rest.first().is_some_and(|b| !b.is_ascii_hexdigit()) {
                        return Err(broken("a chunk size line that does not start with a hex digit"));
                    }
                    match httparse::parse_chunk_size(rest) {
                        Ok(httparse::Status::Complete((used, size))) => {
                            self.pos += used;
                            if size == 0 {
                                Chunks::Trailers(0)
                            } else {
                                Chunks::Data(size)
                            }
                        }
                        Ok(httparse::Status::Partial) if rest.len() > MAX_CHUNK_LINE => {
                            return Err(broken(format!("a chunk size line longer than {MAX_CHUNK_LINE} bytes")));
                        }
                        Ok(httparse::Status::Partial) => {
                            if !self.more()? {
                                return Err(Self::cut_short("a chunk size line"));
                            }
                            chunks
                        }
                        Err(_) => return Err(broken("a chunk size line that is not a hex size")),
                    }
                }
                Chunks::Data(left) => {
                    if out.is_empty() {
                        return Ok(0);
                    }
                    let n = self.take(out, left)?;
                    if n == 0 {
                        return Err(Self::cut_short("a chunk"));
                    }
                    let left = left - n as u64;
                    self.state = State::Chunked(if left == 0 { Chunks::DataEnd } else { Chunks::Data(left) });
                    return Ok(n);
                }
                Chunks::DataEnd => {
                    if self.buffered().len() < 2 {
                        if !self.more()? {
                            return Err(Self::cut_short("a chunk's line end"));
                        }
                        continue;
                    }
                    if &self.buffered()[..2] != b"\r\n" {
                        return Err(broken("a chunk longer than its size said"));
                    }
                    self.pos += 2;
                    Chunks::Size
                }
                Chunks::Trailers(seen) => match self.buffered().windows(2).position(|w| w == b"\r\n") {
                    // An empty line ends the trailers, and the body.
                    Some(0) => {
                        self.pos += 2;
                        self.state = State::Chunked(Chunks::Done);
                        return Ok(0);
                    }
                    Some(line) => {
                        let seen = seen + line + 2;
                        if seen > MAX_TRAILERS {
                            return Err(broken(format!("trailer fields over {} KiB", MAX_TRAILERS / 1024)));
                        }
                        self.pos += line + 2;
                        Chunks::Trailers(seen)
                    }
                    None => {
                        if seen + self.buffered().len() > MAX_TRAILERS {
                            return Err(broken(format!("trailer fields over {} KiB", MAX_TRAILERS / 1024)));
                        }
                        if !self.more()? {
                            return Err(Self::cut_short("the trailer fields"));
                        }
                        chunks
                    }
                },
            };
            self.state = State::Chunked(next);
        }
    }
}

impl Read for StreamedBody {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        match self.state {
            State::Length(0) => Ok(0),
            State::Length(left) => {
                if out.is_empty() {
                    return Ok(0);
                }
                let n = self.take(out, left)?;
                if n == 0 {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("the server closed the connection {left} bytes before the end its Content-Length said"),
                    ));
                }
                self.state = State::Length(left - n as u64);
                Ok(n)
            }
            State::UntilClose => self.take(out, u64::MAX),
            State::Chunked(_) => self.read_chunked(out),
        }
    }
}

/// A body that was cut short before it was whole: the bytes that came, then
/// what went wrong.
pub(super) struct Failing {
    came: io::Cursor<Vec<u8>>,
    error: Option<io::Error>,
}

impl Failing {
    pub(super) fn new(came: Vec<u8>, error: io::Error) -> Self {
        Failing {
            came: io::Cursor::new(came),
            error: Some(error),
        }
    }
}

impl Read for Failing {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        match self.came.read(out)? {
            0 if !out.is_empty() => match self.error.take() {
                Some(e) => Err(e),
                None => Ok(0),
            },
            n => Ok(n),
        }
    }
}
