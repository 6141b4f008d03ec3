//! The intercept control channel on Unix: a socket file only its owner may
//! connect to.

use std::io::{self, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::time::Duration;

/// Where a proxy waits for the user's commands.
pub struct ControlListener(UnixListener);

impl ControlListener {
    /// Listens at `path` for this user only. A socket left there by a proxy
    /// that was killed (nobody answers on it) is replaced.
    pub fn bind(path: &Path) -> io::Result<ControlListener> {
        if path.exists() && UnixStream::connect(path).is_err() {
            let _ = std::fs::remove_file(path);
        }
        let listener = UnixListener::bind(path)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        listener.set_nonblocking(true)?;
        Ok(ControlListener(listener))
    }

    /// The next connection, or `None` when none is waiting: never blocks.
    pub fn accept(&self) -> io::Result<Option<ControlStream>> {
        match self.0.accept() {
            Ok((stream, _)) => {
                // Served by a thread of its own, which blocks on it.
                let _ = stream.set_nonblocking(false);
                Ok(Some(ControlStream(stream)))
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// One connection on the control channel, either end.
pub struct ControlStream(UnixStream);

impl ControlStream {
    pub fn connect(path: &Path) -> io::Result<ControlStream> {
        UnixStream::connect(path).map(ControlStream)
    }

    /// Whether a proxy answers at `path`.
    pub fn answers(path: &Path) -> bool {
        UnixStream::connect(path).is_ok()
    }

    pub fn try_clone(&self) -> io::Result<ControlStream> {
        self.0.try_clone().map(ControlStream)
    }

    pub fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.0.set_read_timeout(timeout)
    }
}

impl Read for ControlStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl Write for ControlStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}
