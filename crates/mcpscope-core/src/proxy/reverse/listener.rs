//! The client side: accepting connections, reading requests with `httparse`
//! under timeouts (the shared [`crate::listen`]), and handing
//! each one to [`forward`] on a blocking thread.
//!
//! Capacity: at most `max_connections` are open. A connection waiting for (the
//! rest of) a request is closed when its time is up, and sooner when a new
//! client needs its slot: the one that has waited longest goes. So clients
//! that hold sockets and send nothing, or a byte now and then, cannot keep a
//! client that sends its request at once from being served.

use super::forward::{self, Sink};
use super::{Ctx, lock};
use crate::listen::accept::accept_loop;
use crate::listen::conn::Conn;
use crate::listen::gate::Gate;
use crate::listen::request::{Request, next_request};
use crate::listen::slots::{Slot, Slots};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::time::timeout;

/// A client that does not take any of an answer for this long is gone.
const WRITE_TIMEOUT: Duration = Duration::from_secs(60);
/// Answer pieces queued between the forwarding thread and the connection task.
const QUEUED_PIECES: usize = 8;

/// Accepts and serves connections until `stop` is set (and the listener woken).
pub(super) fn run(
    listener: std::net::TcpListener,
    ctx: Arc<Ctx>,
    slots: Arc<Slots>,
    stop: Arc<AtomicBool>,
) -> std::io::Result<()> {
    // Exchanges still running when it stops are cut; their forwarding
    // threads end on their own once they find the connection gone.
    accept_loop(
        listener,
        slots,
        stop,
        "mcpscope proxy: too many connections at once",
        move |stream, slot| serve_connection(ctx.clone(), stream, slot),
    )
}

async fn serve_connection(ctx: Arc<Ctx>, stream: TcpStream, slot: Slot) {
    let mut conn = Conn::new(stream, slot.evict.clone());
    let mut wait = ctx.header_timeout;
    let gate = Gate::loopback("mcpscope proxy", "the proxy");
    loop {
        let refused = |why: String| lock(&ctx.shared).note(why);
        let Some(req) = next_request(&mut conn, &slot, wait, ctx.header_timeout, gate, refused).await else {
            return;
        };
        let keep = req.keep_alive();
        if !exchange(&ctx, &mut conn.stream, req).await || !keep {
            return;
        }
        wait = ctx.idle_timeout;
    }
}

/// Forwards one request on a blocking thread (ureq) and writes the answer as
/// it comes. Returns whether the connection can carry another request.
async fn exchange(ctx: &Arc<Ctx>, stream: &mut TcpStream, req: Request) -> bool {
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(QUEUED_PIECES);
    let c = ctx.clone();
    let task = tokio::task::spawn_blocking(move || forward::forward(&c, &req, &mut Sink(tx)));
    while let Some(bytes) = rx.recv().await {
        if !matches!(timeout(WRITE_TIMEOUT, stream.write_all(&bytes)).await, Ok(Ok(()))) {
            // Dropping `rx` makes the forwarding thread's next send fail: it
            // notes that the client went away and stops.
            return false;
        }
    }
    matches!(task.await, Ok(Ok(true)))
}
