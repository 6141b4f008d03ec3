//! `mcpscope --otlp-endpoint URL`: each session the app launches sends its
//! OpenTelemetry traces to the collector while it runs (the same exporter
//! as `proxy --otlp-endpoint`); what happened is shown in the status bar.

use mcpscope_core::interop::otlp_live::{LiveExport, Report, interval_from_env};
use mcpscope_core::transport::recorder::EventTap;
use mcpscope_core::transport::target::Target;
use std::sync::{Arc, Mutex, PoisonError};

pub struct SessionTraces {
    export: LiveExport,
    status: Arc<Mutex<String>>,
}

impl SessionTraces {
    /// None for an endpoint that is not a URL (refused at start).
    pub fn start(endpoint: &str, target: &Target) -> Option<SessionTraces> {
        let status = Arc::new(Mutex::new(String::new()));
        let told = Arc::clone(&status);
        let spans = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let report: Report = Arc::new(move |result| {
            let text = match result {
                Ok(sent) => {
                    let n = spans.fetch_add(sent.spans, std::sync::atomic::Ordering::Relaxed) + sent.spans;
                    format!("traces: {n} span(s) sent to {}", sent.url)
                }
                Err(e) => format!("traces not sent: {}", mcpscope_core::text::error_chain(e)),
            };
            *told.lock().unwrap_or_else(PoisonError::into_inner) = text;
        });
        let header = mcpscope_core::record::capture::Header::for_target(target, "session");
        let export =
            LiveExport::start(endpoint, header, env!("CARGO_PKG_VERSION"), interval_from_env(), report).ok()?;
        Some(SessionTraces { export, status })
    }

    pub fn tap(&self) -> EventTap {
        self.export.tap()
    }

    /// What the last send did, for the status bar (empty before the first).
    pub fn status(&self) -> String {
        self.status.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}
