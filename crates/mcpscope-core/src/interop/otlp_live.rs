//! OpenTelemetry sent while a session runs (`proxy --otlp-endpoint`, the
//! app's sessions): every recorded event goes to an [`OtlpWriter`] through
//! a tap on the recorder, and a thread of its own sends the spans that ended
//! in batches, every few seconds or sooner when many have ended, so neither
//! the recording thread nor the client waits on a collector. The session
//! span and what never ended go out when the session is over.

use crate::interop::otlp::OtlpWriter;
use crate::interop::otlp_http::{self, SendError, Sent};
use crate::record::capture::Header;
use crate::transport::event::Event;
use crate::transport::recorder::EventTap;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often ended spans are sent.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);
/// `OTEL_BSP_SCHEDULE_DELAY` (milliseconds; the OpenTelemetry SDKs' knob
/// for their batch exporter's delay), else [`DEFAULT_INTERVAL`].
pub fn interval_from_env() -> Duration {
    std::env::var("OTEL_BSP_SCHEDULE_DELAY")
        .ok()
        .and_then(|ms| ms.trim().parse::<u64>().ok())
        .filter(|&ms| ms > 0)
        .map_or(DEFAULT_INTERVAL, Duration::from_millis)
}

/// Frames between wake-ups of the sender (a busy session sends sooner).
const WAKE_EVERY: u32 = 512;

/// Told about each batch sent (or not).
pub type Report = Arc<dyn Fn(&Result<Sent, SendError>) + Send + Sync>;

struct Shared {
    writer: Mutex<Option<OtlpWriter>>,
    frames: std::sync::atomic::AtomicU32,
    /// Set when the session is over: the loop sends its last batch and ends.
    stop: std::sync::atomic::AtomicBool,
}

pub struct LiveExport {
    shared: Arc<Shared>,
    endpoint: String,
    report: Report,
    wake: Sender<()>,
    thread: Option<JoinHandle<()>>,
}

impl LiveExport {
    /// Starts sending to `endpoint` (checked now: a bad URL is an error
    /// before the session starts).
    pub fn start(
        endpoint: &str,
        header: Header,
        tool_version: &str,
        interval: Duration,
        report: Report,
    ) -> Result<LiveExport, SendError> {
        otlp_http::traces_url(endpoint)?;
        let shared = Arc::new(Shared {
            writer: Mutex::new(Some(OtlpWriter::new(header, tool_version))),
            frames: Default::default(),
            stop: Default::default(),
        });
        let (wake, woken) = crossbeam_channel::bounded(1);
        let thread = {
            let shared = Arc::clone(&shared);
            let endpoint = endpoint.to_owned();
            let report = Arc::clone(&report);
            std::thread::Builder::new()
                .name("otlp-export".into())
                .spawn(move || send_loop(&shared, &endpoint, &report, &woken, interval))
                .ok()
        };
        Ok(LiveExport {
            shared,
            endpoint: endpoint.to_owned(),
            report,
            wake,
            thread,
        })
    }

    /// The recorder's tap: each event into the writer (a lock and a push).
    pub fn tap(&self) -> EventTap {
        let shared = Arc::clone(&self.shared);
        let wake = self.wake.clone();
        EventTap::new(move |ev: &Event| {
            if let Some(w) = shared.writer.lock().unwrap_or_else(PoisonError::into_inner).as_mut() {
                w.push(ev);
            }
            if matches!(ev, Event::Frame(_))
                && shared.frames.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % WAKE_EVERY == WAKE_EVERY - 1
            {
                let _ = wake.try_send(());
            }
        })
    }

    /// The session is over: what ended is sent, then the rest (the session
    /// span, requests never answered); waits for the collector's answer.
    /// Dropping it does the same.
    pub fn finish(mut self) {
        self.send_rest();
    }

    fn send_rest(&mut self) {
        self.stop_thread();
        let writer = self.shared.writer.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(w) = writer {
            let result = otlp_http::send(&self.endpoint, &w.finish());
            (self.report)(&result);
        }
    }

    fn stop_thread(&mut self) {
        self.shared.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = self.wake.try_send(());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for LiveExport {
    fn drop(&mut self) {
        self.send_rest();
    }
}

fn send_loop(shared: &Shared, endpoint: &str, report: &Report, woken: &Receiver<()>, interval: Duration) {
    loop {
        let disconnected = matches!(woken.recv_timeout(interval), Err(RecvTimeoutError::Disconnected));
        let last = disconnected || shared.stop.load(std::sync::atomic::Ordering::SeqCst);
        // Taken under the lock, sent outside it: the tap never waits on the network.
        let batch = shared
            .writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
            .and_then(OtlpWriter::take_ended);
        if let Some(batch) = batch {
            report(&otlp_http::send(endpoint, &batch));
        }
        if last {
            return;
        }
    }
}
