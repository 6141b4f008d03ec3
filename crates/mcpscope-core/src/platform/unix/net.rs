//! Sockets: whether a kept-alive connection is still fit to reuse.

use std::net::TcpStream;
use std::os::fd::AsRawFd;

/// Whether the peer left this idle connection open and quiet: nothing to
/// read and no end of stream. One `recv` that peeks without waiting, where
/// toggling the socket's blocking mode around a read would take three calls.
pub fn idle_and_open(stream: &TcpStream) -> bool {
    let mut byte = [0u8; 1];
    loop {
        // SAFETY: a one-byte buffer we own, on a socket the stream keeps open.
        let n = unsafe {
            libc::recv(
                stream.as_raw_fd(),
                byte.as_mut_ptr().cast(),
                1,
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        if n >= 0 {
            // 0: the peer closed it; more: bytes nobody asked for.
            return false;
        }
        let err = std::io::Error::last_os_error();
        match err.kind() {
            std::io::ErrorKind::WouldBlock => return true,
            std::io::ErrorKind::Interrupted => continue,
            _ => return false,
        }
    }
}
