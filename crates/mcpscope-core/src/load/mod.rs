//! Load testing: how a server holds up under many clients (`mcpscope load`).
//!
//! [`plan`] says what is sent and when (workloads, the open loop's
//! timetable, ramps), [`stats`] what was measured (HDR histograms, error
//! classes, the knee), [`report`] writes it for people, scripts and CI;
//! [`http`] drives Streamable HTTP servers from one thread, [`sessions`]
//! drives stdio (and https) servers through real client sessions.

pub mod http;
pub mod plan;
pub mod report;
pub mod sessions;
pub mod stats;

use crate::load::plan::RequestSpec;
use crate::record::capture;
use std::path::Path;

/// The client side of a capture: every request the client sent, in order,
/// without the handshake (each session makes its own) and notifications.
pub fn requests_of_capture(path: &Path) -> Result<Vec<RequestSpec>, crate::record::capture::CaptureError> {
    use crate::transport::event::Event;
    use crate::wire::frame::Direction;
    let loaded = capture::load(path)?;
    let mut out = Vec::new();
    for ev in &loaded.events {
        let Event::Frame(f) = ev else { continue };
        if f.direction != Direction::Out {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&f.raw) else {
            continue;
        };
        let (Some(method), Some(_)) = (v.get("method").and_then(|m| m.as_str()), v.get("id")) else {
            continue;
        };
        if matches!(method, "initialize" | "server/discover") {
            continue;
        }
        let mut params = v.get("params").cloned();
        // The live session adds its own envelope.
        if let Some(p) = params.as_mut().and_then(|p| p.as_object_mut())
            && let Some(meta) = p.get_mut("_meta").and_then(|m| m.as_object_mut())
        {
            meta.retain(|k, _| !k.starts_with("io.modelcontextprotocol/"));
            if meta.is_empty() {
                p.remove("_meta");
            }
        }
        out.push(RequestSpec {
            method: method.to_owned(),
            params,
        });
    }
    Ok(out)
}

use crate::load::plan::{Ramp, Workload};
use crate::load::stats::{Report, Stats};
use crate::protocol::era::{Envelope, EraChoice};
use crate::protocol::handshake::HandshakeOptions;
use crate::transport::target::{HttpKind, Target};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// A whole run, whichever engine drives it.
#[derive(Clone)]
pub struct LoadPlan {
    pub target: Target,
    pub era: EraChoice,
    pub protocol_version: String,
    pub workload: Workload,
    pub sessions: usize,
    /// Requests in flight per session in a closed loop (stdio and client
    /// sessions; over plain http a session is a connection, one at a time).
    pub in_flight: usize,
    pub rate: Option<f64>,
    pub duration: Option<Duration>,
    pub requests: Option<u64>,
    pub warmup: Duration,
    pub timeout: Duration,
    pub ramp: Option<Ramp>,
    pub sampling: http::Sampling,
}

/// What a run came to.
pub struct LoadOutcome {
    pub report: Report,
    /// Sessions that could not start or shake hands, and why.
    pub failed_sessions: Vec<String>,
    /// Captures kept (sampled sessions and failed ones).
    pub captures: Vec<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("--ramp drives Streamable HTTP servers over http:// only")]
    RampNeedsHttp,
    #[error(transparent)]
    Size(#[from] plan::SizeError),
    #[error(transparent)]
    Http(#[from] http::HttpLoadError),
}

impl LoadPlan {
    /// Streamable HTTP over plain http:// goes to the one-thread engine;
    /// stdio, https and HTTP+SSE through client sessions.
    pub fn fast_http(&self) -> bool {
        matches!(&self.target, Target::Http(h) if h.kind == HttpKind::StreamableHttp && h.url.starts_with("http://"))
    }
}

/// Runs `plan`; `progress` is called about once a second, `otlp_report`
/// about each batch of the sampled sessions' traces.
pub fn run(
    plan: LoadPlan,
    stop: Arc<AtomicBool>,
    otlp_report: crate::interop::otlp_live::Report,
    progress: impl FnMut(&Stats, Duration),
) -> Result<LoadOutcome, LoadError> {
    plan::check_sizes(plan.sessions, plan.in_flight)?;
    if let Some(r) = &plan.ramp {
        plan::check_sizes(r.to, 1)?;
    }
    if plan.fast_http() {
        let ramp = plan.ramp.is_some();
        let Target::Http(h) = &plan.target else {
            unreachable!("fast_http")
        };
        let kind = match plan.era {
            EraChoice::Modern => http::SessionKind::Modern {
                envelope: Envelope::from_handshake(&HandshakeOptions {
                    protocol_version: plan.protocol_version.clone(),
                    ..HandshakeOptions::default()
                }),
            },
            _ => http::SessionKind::Legacy {
                protocol_version: plan.protocol_version.clone(),
            },
        };
        let mut headers = h.headers.clone();
        if let Some(token) = h.bearer.get() {
            headers.push(("Authorization".into(), format!("Bearer {token}")));
        }
        let url = h.url.clone();
        let done = http::run(
            http::HttpPlan {
                load: plan,
                url,
                headers,
                kind,
            },
            stop,
            otlp_report,
            progress,
        )?;
        let mut report = done.stats.report(done.elapsed);
        if ramp {
            report.find_knee();
        }
        return Ok(LoadOutcome {
            report,
            failed_sessions: done.failed_sessions,
            captures: done.captures,
        });
    }
    if plan.ramp.is_some() {
        return Err(LoadError::RampNeedsHttp);
    }
    let run = sessions::run(plan, otlp_report, stop, progress);
    let mut report = run.stats.report(run.elapsed);
    report.servers = run.servers;
    report.sessions_ready_ms = Some(run.ready_after.as_millis() as u64);
    Ok(LoadOutcome {
        report,
        failed_sessions: run.failed_sessions,
        captures: run.captures,
    })
}
