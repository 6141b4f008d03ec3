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
