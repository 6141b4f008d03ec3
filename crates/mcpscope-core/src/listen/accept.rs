//! Opening a listener where the user asked (loopback unless told
//! otherwise), the accept loop that gives each connection a slot and a task
//! (or a 503 when every slot stays busy), and stopping it from elsewhere.

use crate::listen::conn::Conn;
use crate::listen::slots::{Slot, Slots};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::Notify;

/// How long a client turned away (503) has to take its answer.
const REFUSE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a newcomer waits for a slot to be made before it gets 503.
const ROOM_WAIT: Duration = Duration::from_secs(2);

/// What the accept loop woke for.
enum Next {
    Accepted(std::io::Result<(TcpStream, std::net::SocketAddr)>),
    /// A newcomer that waited found room.
    Room((TcpStream, Slot)),
}

/// Accepts connections on a current-thread runtime until `stop` is set (and
/// the listener woken), giving each one a slot and its own task (`serve`);
/// when every slot stays busy for [`ROOM_WAIT`], the client gets 503 `busy`.
/// Tasks still running when it stops are dropped.
pub(crate) fn accept_loop<F, Fut>(
    listener: std::net::TcpListener,
    slots: Arc<Slots>,
    stop: Arc<AtomicBool>,
    busy: &'static str,
    mut serve: F,
) -> std::io::Result<()>
where
    F: FnMut(TcpStream, Slot) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    listener.set_nonblocking(true)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()?;
    let result = rt.block_on(async {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        // Connections that found no room at once and got a slot a moment later.
        let (room_tx, mut room_rx) = tokio::sync::mpsc::unbounded_channel::<(TcpStream, Slot)>();
        loop {
            let next = std::future::poll_fn(|cx| {
                if let std::task::Poll::Ready(Some(found)) = room_rx.poll_recv(cx) {
                    return std::task::Poll::Ready(Next::Room(found));
                }
                listener.poll_accept(cx).map(Next::Accepted)
            })
            .await;
            if stop.load(Ordering::SeqCst) {
                return Ok(());
            }
            let stream = match next {
                Next::Room((stream, slot)) => {
                    tokio::spawn(serve(stream, slot));
                    continue;
                }
                Next::Accepted(Ok((s, _))) => s,
                Next::Accepted(Err(_)) => {
                    // Out of file descriptors, say: wait for some to close instead of spinning.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            match Slots::take(&slots) {
                Some(slot) => {
                    tokio::spawn(serve(stream, slot));
                }
                None => {
                    // Every slot is in an exchange or just accepted and not yet
                    // read by its task (read in moments, when it will wait or
                    // be busy): the newcomer waits a little for room before it
                    // is turned away (a normal client behind a crowd of slow
                    // ones got 503 while their tasks had not run yet).
                    let (slots, room) = (Arc::clone(&slots), room_tx.clone());
                    tokio::spawn(async move {
                        let deadline = tokio::time::Instant::now() + ROOM_WAIT;
                        while tokio::time::Instant::now() < deadline {
                            tokio::time::sleep(Duration::from_millis(10)).await;
                            if let Some(slot) = Slots::take(&slots) {
                                let _ = room.send((stream, slot));
                                return;
                            }
                        }
                        let mut conn = Conn::new(stream, Arc::new(Notify::new()));
                        conn.answer_and_close(503, busy, REFUSE_TIMEOUT).await
                    });
                }
            }
        }
    });
    rt.shutdown_background();
    result
}

/// Why a listener could not be opened where the user asked.
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    /// The resolver's words are part of the message (not a separate cause):
    /// they read as one sentence with the example.
    #[error("--listen {listen:?}: {error} (expected e.g. 127.0.0.1:8931)")]
    Unresolved { listen: String, error: std::io::Error },
    #[error("--listen {0:?} names no address")]
    NoAddress(String),
    /// `opened_by`: the flag that would open it to other machines, if there is one.
    #[error(
        "--listen {listen:?} is not a loopback address; {who} listens only on 127.0.0.1, [::1] or localhost{}",
        .opened_by.map(|flag| format!(" unless {flag} is given (then anyone who reaches the port is answered)")).unwrap_or_default()
    )]
    NotLoopback {
        listen: String,
        who: &'static str,
        opened_by: Option<&'static str>,
    },
    #[error("cannot listen on {0}: the port is already in use (pick another, or port 0 for any free one)")]
    InUse(std::net::SocketAddr),
    #[error("cannot listen on {addr}")]
    Bind {
        addr: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// The address `listen` names, which must be a loopback one unless `any`
/// (the user typed `opened_by`): every listener is loopback-only unless asked.
pub fn listen_addr(
    listen: &str,
    any: bool,
    who: &'static str,
    opened_by: Option<&'static str>,
) -> Result<std::net::SocketAddr, ListenError> {
    use std::net::ToSocketAddrs;
    let addrs: Vec<std::net::SocketAddr> = listen
        .to_socket_addrs()
        .map_err(|error| ListenError::Unresolved {
            listen: listen.to_owned(),
            error,
        })?
        .collect();
    let Some(first) = addrs.first() else {
        return Err(ListenError::NoAddress(listen.to_owned()));
    };
    if any {
        return Ok(*first);
    }
    match addrs.iter().find(|a| a.ip().is_loopback()) {
        Some(a) if addrs.iter().all(|a| a.ip().is_loopback()) => Ok(*a),
        _ => Err(ListenError::NotLoopback {
            listen: listen.to_owned(),
            who,
            opened_by,
        }),
    }
}

/// Binds `addr`, saying plainly when the port is taken.
pub fn bind(addr: std::net::SocketAddr) -> Result<(std::net::TcpListener, std::net::SocketAddr), ListenError> {
    let listener = std::net::TcpListener::bind(addr).map_err(|e| match e.kind() {
        std::io::ErrorKind::AddrInUse => ListenError::InUse(addr),
        _ => ListenError::Bind { addr, source: e },
    })?;
    let local = listener
        .local_addr()
        .map_err(|source| ListenError::Bind { addr, source })?;
    Ok((listener, local))
}

/// Stops a running listener from another thread: sets its flag and wakes
/// its accept loop with a connection of its own.
#[derive(Clone)]
pub struct Stopper {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    local: std::net::SocketAddr,
}

impl Stopper {
    pub fn new(stop: std::sync::Arc<std::sync::atomic::AtomicBool>, local: std::net::SocketAddr) -> Self {
        Self { stop, local }
    }

    pub fn stop(&self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = std::net::TcpStream::connect_timeout(&self.local, std::time::Duration::from_secs(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_is_loopback_unless_asked() {
        let proxy = |l| listen_addr(l, false, "the proxy", None);
        assert!(proxy("127.0.0.1:0").is_ok());
        assert!(proxy("[::1]:0").is_ok());
        assert!(proxy("localhost:0").is_ok());
        let e = proxy("0.0.0.0:8080").unwrap_err().to_string();
        assert!(e.contains("not a loopback address") && !e.contains("unless"), "{e}");
        assert!(proxy("127.0.0.1").is_err(), "a port is needed");
        let e = listen_addr("0.0.0.0:0", false, "the mock", Some("--listen-any"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("the mock listens only on") && e.contains("unless --listen-any"),
            "{e}"
        );
        assert!(listen_addr("0.0.0.0:0", true, "the mock", Some("--listen-any")).is_ok());
    }
}
