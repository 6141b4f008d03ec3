//! What differs between operating systems, kept in one place: the rest of
//! the core names no `libc`, no `std::os::unix` and no OS `cfg` outside it
//! (the layers test keeps a list of the files still to move here, which may
//! only shrink).
//!
//! - `desktop`: how this system opens a URL in the user's browser;
//! - `dirs`: where mcpscope keeps its state and the MCP clients their
//!   configs, on each system;
//! - `fs`: which file a path is ([`fs::FileId`]), reads at an offset,
//!   opening the path itself or without waiting on a FIFO, advisory locks,
//!   who owns a file and whether others may use it;
//! - `interrupt`: being asked from outside to stop (signals; Ctrl-C and
//!   closing the console on Windows), and the status that says so;
//! - `ipc`: the intercept control channel, reachable by this user only;
//! - `keyring`: the system's credential store;
//! - `net`: whether a kept-alive connection is still fit to reuse;
//! - `process`: a server's process tree, started so that it can be stopped
//!   gently and then for good, a watchdog that ends it if mcpscope dies,
//!   and other processes: running or not, their start, CPU and memory.

pub mod desktop;
pub mod dirs;
pub mod keyring;
#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::{fs, interrupt, ipc, net, process};
#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::{fs, interrupt, ipc, net, process};

/// A tag no other server of any mcpscope shares (pid, sequence, time),
/// put in a server's environment so that its descendants carry it.
pub(crate) fn new_tree_tag() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{}.{}.{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// How hard to stop a process tree (what each system sends: see
/// `process::Stop::name`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Ask it to end: SIGTERM on Unix, CTRL_BREAK_EVENT on Windows.
    Gently,
    /// End it now: SIGKILL on Unix, TerminateJobObject on Windows.
    ForGood,
}

/// What a process has used: CPU time so far, and memory now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Usage {
    /// User and system time together.
    pub cpu: std::time::Duration,
    pub resident_kib: u64,
}

/// What kind of file this is, for the rules that depend on it (each
/// system's `fs::FileKind::of` tells).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    Regular,
    Directory,
    SymbolicLink,
    Fifo,
    CharacterDevice,
    BlockDevice,
    Socket,
    Other,
}

#[cfg(test)]
mod net_tests {
    use super::net::idle_and_open;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::time::Duration;

    #[test]
    fn a_quiet_connection_is_open_one_with_bytes_or_closed_is_not() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        assert!(idle_and_open(&client));
        // Still blocking afterwards: the probe left the socket's mode as it was.
        client.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        let mut b = [0u8; 1];
        assert!((&client).read(&mut b).is_err());
        server.write_all(b"x").unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert!(!idle_and_open(&client));
        // The peeked byte is still there to read.
        assert_eq!((&client).read(&mut b).unwrap(), 1);
        drop(server);
        std::thread::sleep(Duration::from_millis(50));
        assert!(!idle_and_open(&client));
    }
}
