//! The gate in the HTTP reverse proxy. Each JSON-RPC message (a POST's
//! body, a JSON answer, an SSE event's data) is recorded as it arrived,
//! then judged; the thread forwarding that exchange waits for its verdict.
//! So a held POST keeps its connection open, a held SSE event holds only
//! its stream, and other exchanges go on. A ticker thread lets time pass
//! for the gate (delays, breakpoint timeouts) and takes the user's commands.

use super::{Shared, lock};
use crate::proxy::gate::{Gate, GateAction, Waker};
use crate::transport::event::{Event, TouchKind};
use crate::wire::frame::{Direction, Frame};
use crossbeam_channel::{Receiver, Sender, bounded, unbounded};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What becomes of one message.
#[derive(Debug, PartialEq)]
pub(super) enum Verdict {
    /// Send these bodies on, in order (two: `duplicate`), the answer to the
    /// exchange at `slow` bytes a second if set.
    Send { bodies: Vec<Vec<u8>>, slow: Option<u64> },
    /// Answer the exchange with this message; the other side never sees it.
    Answer(Vec<u8>),
    /// Answer the exchange with this HTTP status.
    Status { code: u16, retry_after: Option<u32> },
    /// Never sent on.
    Drop,
    /// Close the connection that carried it.
    Disconnect,
}

struct State {
    gate: Box<dyn Gate>,
    /// The threads waiting for a verdict, by the seq of their message.
    waiting: HashMap<u64, Sender<GateAction>>,
    out: Vec<GateAction>,
}

pub(super) struct HttpGate {
    state: Mutex<State>,
    wake: Sender<()>,
    stop: Arc<AtomicBool>,
    /// Messages the user injected toward the server, for the injector.
    injected: (Sender<Vec<u8>>, Receiver<Vec<u8>>),
    /// The client's open SSE streams (its GETs), newest last: a message
    /// injected toward the client is written into the newest as an event.
    client_streams: Mutex<Vec<(u64, tokio::sync::mpsc::Sender<Vec<u8>>)>>,
    next_stream: std::sync::atomic::AtomicU64,
}

fn state(m: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl HttpGate {
    /// Starts the gate's ticker; it ends when `stop` is set.
    pub(super) fn start(mut gate: Box<dyn Gate>, shared: Arc<Mutex<Shared>>, stop: Arc<AtomicBool>) -> Arc<HttpGate> {
        let (wake_tx, wake_rx) = bounded(1);
        gate.set_waker(Waker::new(wake_tx.clone()));
        let g = Arc::new(HttpGate {
            state: Mutex::new(State {
                gate,
                waiting: HashMap::new(),
                out: Vec::new(),
            }),
            wake: wake_tx,
            stop,
            injected: unbounded(),
            client_streams: Mutex::new(Vec::new()),
            next_stream: std::sync::atomic::AtomicU64::new(0),
        });
        let ticker = g.clone();
        let _ = std::thread::Builder::new()
            .name("mcpscope-rproxy-gate".into())
            .spawn(move || ticker.tick_until_stopped(&shared, &wake_rx));
        g
    }

    /// A GET's SSE stream to the client is open (its chunked body goes
    /// through `tx`); returns its number, to close it with.
    pub(super) fn open_client_stream(&self, tx: tokio::sync::mpsc::Sender<Vec<u8>>) -> u64 {
        let id = self.next_stream.fetch_add(1, Ordering::SeqCst);
        self.client_streams
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((id, tx));
        id
    }

    pub(super) fn close_client_stream(&self, id: u64) {
        self.client_streams
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(i, _)| *i != id);
    }

    /// Writes an injected message into the client's newest open stream, as
    /// one SSE event in one chunk; false when there is none.
    fn inject_to_client(&self, bytes: &[u8]) -> bool {
        let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let mut event = Vec::new();
        for line in body.split(|b| *b == b'\n') {
            event.extend_from_slice(b"data: ");
            event.extend_from_slice(line);
            event.push(b'\n');
        }
        event.push(b'\n');
        let chunk = crate::listen::response::chunk(&event);
        let streams = self.client_streams.lock().unwrap_or_else(|p| p.into_inner());
        streams.iter().rev().any(|(_, tx)| tx.try_send(chunk.clone()).is_ok())
    }

    /// Sends what the user injects toward the server, one after another,
    /// on the client's session, until the proxy stops.
    pub(super) fn start_injector(gate: &Arc<HttpGate>, ctx: Arc<super::Ctx>) {
        let gate = gate.clone();
        let _ = std::thread::Builder::new()
            .name("mcpscope-rproxy-inject".into())
            .spawn(move || {
                while !gate.stopped() {
                    if let Ok(bytes) = gate.injected.1.recv_timeout(Duration::from_millis(200)) {
                        super::forward::inject_upstream(&ctx, bytes);
                    }
                }
            });
    }

    fn tick_until_stopped(&self, shared: &Mutex<Shared>, wakes: &Receiver<()>) {
        while !self.stop.load(Ordering::SeqCst) {
            let next = state(&self.state).gate.next_wake();
            let wait = next
                .map_or(Duration::from_millis(200), |t| {
                    t.saturating_duration_since(Instant::now())
                })
                .min(Duration::from_millis(200));
            let _ = wakes.recv_timeout(wait);
            let mut st = state(&self.state);
            let st = &mut *st;
            st.gate.tick(Instant::now(), &mut st.out);
            self.dispatch(st, shared);
        }
        let mut st = state(&self.state);
        let st = &mut *st;
        st.gate.closing(Instant::now(), &mut st.out);
        self.dispatch(st, shared);
    }

    pub(super) fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Judges `frame` (already recorded) and waits for what becomes of it.
    pub(super) fn judge(&self, shared: &Mutex<Shared>, frame: &Frame) -> Verdict {
        let (tx, rx) = unbounded();
        {
            let mut st = state(&self.state);
            let st = &mut *st;
            st.waiting.insert(frame.seq, tx);
            st.gate.arrived(frame, Instant::now(), &mut st.out);
            self.dispatch(st, shared);
        }
        // A delay or a breakpoint's timeout may now be the next thing due.
        let _ = self.wake.try_send(());
        let verdict = self.wait(frame, &rx);
        state(&self.state).waiting.remove(&frame.seq);
        verdict
    }

    fn wait(&self, frame: &Frame, rx: &Receiver<GateAction>) -> Verdict {
        let mut bodies = Vec::new();
        let mut slow = None;
        loop {
            let first = match rx.recv_timeout(Duration::from_millis(200)) {
                Ok(a) => a,
                Err(_) if self.stop.load(Ordering::SeqCst) => return Verdict::Drop,
                Err(_) => continue,
            };
            // What one step of the gate decided arrives together.
            for action in std::iter::once(first).chain(rx.try_iter()) {
                match action {
                    GateAction::Send { toward, bytes, .. } if toward == frame.direction => bodies.push(bytes),
                    GateAction::Send { bytes, .. } => return Verdict::Answer(bytes),
                    GateAction::HttpStatus { code, retry_after, .. } => return Verdict::Status { code, retry_after },
                    GateAction::Slow { bytes_per_sec, .. } => slow = Some(bytes_per_sec),
                    GateAction::Disconnect { .. } => return Verdict::Disconnect,
                    GateAction::Record(t) if t.kind == TouchKind::Dropped => return Verdict::Drop,
                    GateAction::Record(_) | GateAction::KillServer => {}
                }
            }
            if !bodies.is_empty() {
                return Verdict::Send { bodies, slow };
            }
        }
    }
}

impl HttpGate {
    /// Records what the gate did and hands each action about a message to the
    /// thread waiting for it.
    fn dispatch(&self, st: &mut State, shared: &Mutex<Shared>) {
        if st.out.is_empty() {
            return;
        }
        let mut sh = lock(shared);
        for action in st.out.drain(..) {
            if let GateAction::Record(t) = &action {
                let mut t = t.clone();
                t.at = sh.recorder.now();
                sh.record(&Event::Touch(Box::new(t)));
            }
            match action.of_seq().and_then(|seq| st.waiting.get(&seq)) {
                Some(tx) => {
                    let _ = tx.send(action);
                }
                None => match action {
                    GateAction::Send {
                        of_seq: None,
                        toward: Direction::Out,
                        bytes,
                    } => {
                        let _ = self.injected.0.send(bytes);
                    }
                    GateAction::Send {
                        of_seq: None, bytes, ..
                    } if !self.inject_to_client(&bytes) => {
                        sh.note(
                            "not sent to the client: it has no SSE stream open (a GET) to write the message into"
                                .into(),
                        );
                    }
                    GateAction::KillServer => sh.note("kill-server: the HTTP proxy runs no server to kill".into()),
                    _ => {}
                },
            }
        }
        sh.flush();
    }
}
