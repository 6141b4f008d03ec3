//! A request sent in one write. ureq hands its transport a request's head
//! and its body separately, and a TCP socket with Nagle off (ureq's
//! default, and right for an interactive protocol) sends each as its own
//! segment: the server is woken twice and parses twice, and on loopback the
//! second send costs as much as the first. [`Coalescing`] keeps what ureq
//! writes until ureq waits for the answer (or a body grows past
//! [`FLUSH_AT`]), then sends it all at once. Nothing is reordered or
//! dropped: every byte written goes out, before anything is read.

use std::fmt;
use ureq::Error;
use ureq::unversioned::transport::{Buffers, ConnectionDetails, Connector, LazyBuffers, NextTimeout, Transport};

/// Held bytes beyond this are sent at once (a big body streams as before).
const FLUSH_AT: usize = 64 * 1024;

/// Wraps whatever transport the connectors before it made (TCP, TLS over
/// TCP, a proxy's tunnel) in [`Coalescing`]; last in the chain.
#[derive(Debug, Default)]
pub(super) struct CoalescingConnector;

impl<In: Transport> Connector<In> for CoalescingConnector {
    type Out = Coalescing<In>;

    fn connect(&self, details: &ConnectionDetails, chained: Option<In>) -> Result<Option<Self::Out>, Error> {
        let config = details.config;
        Ok(chained.map(|inner| Coalescing {
            inner,
            buffers: LazyBuffers::new(config.input_buffer_size(), config.output_buffer_size()),
            held: Vec::new(),
        }))
    }
}

/// A transport whose writes wait for the next read. It has buffers of its
/// own (ureq's `Buffers` reads input through `&self`, which cannot reach
/// the inner transport's): what the inner one reads is moved over.
pub(super) struct Coalescing<T> {
    inner: T,
    buffers: LazyBuffers,
    /// Written, not sent yet.
    held: Vec<u8>,
}

impl<T> fmt::Debug for Coalescing<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Coalescing").field("held", &self.held.len()).finish()
    }
}

impl<T: Transport> Coalescing<T> {
    /// Sends what is held, through the inner transport's own output buffer.
    fn flush(&mut self, timeout: NextTimeout) -> Result<(), Error> {
        let mut sent = 0;
        while sent < self.held.len() {
            let out = self.inner.buffers().output();
            let n = out.len().min(self.held.len() - sent);
            out[..n].copy_from_slice(&self.held[sent..sent + n]);
            if let Err(e) = self.inner.transmit_output(n, timeout) {
                // What went out is not sent again (ureq may go on after a
                // timed-out wait for `100 Continue`).
                self.held.drain(..sent);
                return Err(e);
            }
            sent += n;
        }
        self.held.clear();
        Ok(())
    }

    /// Moves what the inner transport has read into this one's input;
    /// whether anything moved.
    fn take_input(&mut self) -> bool {
        let from = self.inner.buffers();
        let to = self.buffers.input_append_buf();
        let n = from.input().len().min(to.len());
        to[..n].copy_from_slice(&from.input()[..n]);
        from.input_consume(n);
        self.buffers.input_appended(n);
        n > 0
    }
}

impl<T: Transport> Transport for Coalescing<T> {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), Error> {
        self.held.extend_from_slice(&self.buffers.output()[..amount]);
        if self.held.len() >= FLUSH_AT {
            self.flush(timeout)?;
        }
        Ok(())
    }

    // Whatever ureq reads next (the answer, or a `100 Continue`) comes after
    // what it wrote: send that first, even when input is already buffered.
    fn maybe_await_input(&mut self, timeout: NextTimeout) -> Result<bool, Error> {
        self.flush(timeout)?;
        if self.buffers.can_use_input() {
            return Ok(true);
        }
        self.await_input(timeout)
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, Error> {
        self.flush(timeout)?;
        // Bytes the inner transport read and this one had no room for yet.
        if self.take_input() {
            return Ok(true);
        }
        if !self.inner.await_input(timeout)? {
            return Ok(false);
        }
        Ok(self.take_input())
    }

    // (ureq reuses a connection only when nothing is left unread: that
    // includes bytes the inner transport read and this one did not take.)
    fn is_open(&mut self) -> bool {
        self.inner.buffers().input().is_empty() && self.inner.is_open()
    }

    fn is_tls(&self) -> bool {
        self.inner.is_tls()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A transport that keeps every write and answers each request with
    /// a canned `200 OK`.
    #[derive(Debug)]
    struct Recording {
        buffers: LazyBuffers,
        writes: Arc<Mutex<Vec<Vec<u8>>>>,
        owes_answer: bool,
    }

    const ANSWER: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";

    impl Transport for Recording {
        fn buffers(&mut self) -> &mut dyn Buffers {
            &mut self.buffers
        }

        fn transmit_output(&mut self, amount: usize, _: NextTimeout) -> Result<(), Error> {
            let sent = self.buffers.output()[..amount].to_vec();
            self.writes.lock().unwrap().push(sent);
            self.owes_answer = true;
            Ok(())
        }

        fn await_input(&mut self, _: NextTimeout) -> Result<bool, Error> {
            if !std::mem::take(&mut self.owes_answer) {
                return Ok(false);
            }
            let to = self.buffers.input_append_buf();
            to[..ANSWER.len()].copy_from_slice(ANSWER);
            self.buffers.input_appended(ANSWER.len());
            Ok(true)
        }

        fn is_open(&mut self) -> bool {
            true
        }
    }

    #[derive(Debug)]
    struct RecordingConnector(Arc<Mutex<Vec<Vec<u8>>>>);

    impl Connector<()> for RecordingConnector {
        type Out = Recording;

        fn connect(&self, _: &ConnectionDetails, _: Option<()>) -> Result<Option<Recording>, Error> {
            Ok(Some(Recording {
                buffers: LazyBuffers::new(16 * 1024, 16 * 1024),
                writes: self.0.clone(),
                owes_answer: false,
            }))
        }
    }

    fn agent(writes: &Arc<Mutex<Vec<Vec<u8>>>>) -> ureq::Agent {
        let connector = ().chain(RecordingConnector(writes.clone())).chain(CoalescingConnector);
        let config = ureq::Agent::config_builder().output_buffer_size(16 * 1024).build();
        ureq::Agent::with_parts(
            config,
            connector,
            ureq::unversioned::resolver::DefaultResolver::default(),
        )
    }

    #[test]
    fn a_request_and_its_body_go_out_in_one_write_and_the_answer_is_read_back() {
        let writes = Arc::new(Mutex::new(Vec::new()));
        let agent = agent(&writes);
        for n in 0..2 {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"ping"}}"#);
            let mut resp = agent.post("http://127.0.0.1:1/mcp").send(body.as_str()).unwrap();
            assert_eq!(resp.status(), 200);
            assert_eq!(resp.body_mut().read_to_string().unwrap(), "{}");
            let w = writes.lock().unwrap();
            assert_eq!(w.len(), n + 1, "one write per request (the connection reused)");
            let sent = String::from_utf8(w[n].clone()).unwrap();
            assert!(sent.starts_with("POST /mcp HTTP/1.1\r\n"), "{sent}");
            assert!(sent.ends_with(&format!("\r\n\r\n{body}")), "{sent}");
        }
    }

    #[test]
    fn a_big_body_is_sent_in_pieces_every_byte_in_order() {
        let writes = Arc::new(Mutex::new(Vec::new()));
        let agent = agent(&writes);
        let body: Vec<u8> = (0..300_000u32).map(|n| b'a' + (n % 26) as u8).collect();
        let resp = agent.post("http://127.0.0.1:1/mcp").send(&body[..]).unwrap();
        assert_eq!(resp.status(), 200);
        let w = writes.lock().unwrap();
        assert!(w.len() > 1, "a body past the flush size does not wait whole");
        // Each write is at most what the inner transport's buffer holds.
        assert!(w.iter().all(|piece| piece.len() <= 16 * 1024));
        let all: Vec<u8> = w.concat();
        let head_end = all.windows(4).position(|x| x == b"\r\n\r\n").unwrap() + 4;
        assert_eq!(&all[head_end..], &body[..]);
    }
}
