//! A client connection as a listener reads it: the bytes read but not used
//! yet, reads that give way when the slot is needed for a newcomer, and an
//! error answer that closes without resetting the connection under it.

use crate::listen::request::{Stop, bad};
use crate::listen::response::plain_answer;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Notify;
use tokio::time::{Instant, timeout, timeout_at};

/// After an error answer, how long (and how much) of the rest of the request
/// is read and dropped, so that closing does not reset the connection before
/// the client has read the answer.
const LINGER: Duration = Duration::from_secs(2);
const LINGER_BYTES: usize = 256 * 1024;
/// One socket read.
pub(crate) const READ_SIZE: usize = 64 * 1024;

pub(crate) enum Either<A, B> {
    A(A),
    B(B),
}

/// Whichever of two futures finishes first (`a` if both are ready).
pub(crate) async fn first_of<A: Future, B: Future>(a: A, b: B) -> Either<A::Output, B::Output> {
    let mut a = pin!(a);
    let mut b = pin!(b);
    std::future::poll_fn(move |cx| {
        if let Poll::Ready(v) = a.as_mut().poll(cx) {
            return Poll::Ready(Either::A(v));
        }
        if let Poll::Ready(v) = b.as_mut().poll(cx) {
            return Poll::Ready(Either::B(v));
        }
        Poll::Pending
    })
    .await
}

/// A client connection and the bytes read from it but not used yet
/// (the start of a pipelined request, say).
pub(crate) struct Conn<S> {
    pub(crate) stream: S,
    pub(crate) buf: Vec<u8>,
    scratch: Box<[u8]>,
    pub(crate) evict: Arc<Notify>,
    /// Requests read whole on it so far.
    pub(crate) requests: u64,
}

impl<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin> Conn<S> {
    pub(crate) fn new(stream: S, evict: Arc<Notify>) -> Self {
        Self {
            stream,
            buf: Vec::new(),
            scratch: vec![0; READ_SIZE].into_boxed_slice(),
            evict,
            requests: 0,
        }
    }

    /// Reads more into `buf` before `deadline`; `what` names the part of the
    /// request the client is in, for the answer when it ends there. Before a
    /// request has started (`what` is `None`), its end or silence is no error.
    pub(crate) async fn more(&mut self, deadline: Instant, what: Option<&str>) -> Result<(), Stop> {
        let read = self.stream.read(&mut self.scratch);
        let outcome = timeout_at(deadline, first_of(read, self.evict.notified())).await;
        if let Ok(Either::B(())) = outcome {
            return Err(Stop::Evicted);
        }
        let Some(what) = what else {
            return match outcome {
                Ok(Either::A(Ok(n))) if n > 0 => {
                    self.buf.extend_from_slice(&self.scratch[..n]);
                    Ok(())
                }
                _ => Err(Stop::Closed),
            };
        };
        match outcome {
            Ok(Either::A(Ok(0))) => Err(bad(400, format!("the request ended inside {what}"))),
            Ok(Either::A(Ok(n))) => {
                self.buf.extend_from_slice(&self.scratch[..n]);
                Ok(())
            }
            Ok(Either::A(Err(_)) | Either::B(())) => Err(Stop::Closed),
            Err(_) => Err(bad(408, format!("{what} did not come in time"))),
        }
    }

    /// Writes an error answer and closes, without resetting the connection
    /// under an answer the client has not read yet.
    pub(crate) async fn answer_and_close(&mut self, status: u16, why: &str, within: Duration) {
        let answer = plain_answer(status, why);
        if !matches!(timeout(within, self.stream.write_all(&answer)).await, Ok(Ok(()))) {
            return;
        }
        let _ = timeout(within, self.stream.shutdown()).await;
        let deadline = Instant::now() + LINGER;
        let mut drained = 0;
        while drained < LINGER_BYTES {
            match timeout_at(deadline, self.stream.read(&mut self.scratch)).await {
                Ok(Ok(n)) if n > 0 => drained += n,
                _ => break,
            }
        }
    }
}
