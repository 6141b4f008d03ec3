//! Sockets: whether a kept-alive connection is still fit to reuse.

use std::net::TcpStream;

/// Whether the peer left this idle connection open and quiet: nothing to
/// read and no end of stream. Windows has no per-call non-blocking flag, so
/// the socket is made non-blocking for one peek.
pub fn idle_and_open(stream: &TcpStream) -> bool {
    if stream.set_nonblocking(true).is_err() {
        return false;
    }
    let quiet = matches!(stream.peek(&mut [0u8; 1]), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
    stream.set_nonblocking(false).is_ok() && quiet
}
