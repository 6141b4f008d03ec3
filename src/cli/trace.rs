//! Human-readable lines for events, as printed by `--trace` and the doctor.

use mcpscope_core::transport::event::Event;
use mcpscope_core::wire::classify::Anomalies;
use mcpscope_core::wire::frame::{Direction, Frame};

/// Longest line shown before it is shortened (the capture keeps it whole).
const DISPLAY_LIMIT: usize = 2000;

fn shorten(text: &str) -> String {
    mcpscope_core::text::shorten(text, DISPLAY_LIMIT)
}

/// `→ {...}` / `← {...}`, with latency for responses and anomalies below.
pub fn frame_lines(f: &Frame) -> Vec<String> {
    let arrow = f.direction.arrow();
    let mut head = format!("{arrow} {}", shorten(&f.text()));
    if let Some(link) = &f.link {
        head.push_str(&format!("   ({} ms)", link.latency.as_millis()));
    }
    let mut out = vec![head];
    for (code, desc) in f.anomalies().descriptions() {
        out.push(format!("  ! {code}: {desc}"));
    }
    out
}

/// Lines for one event, or none for events not worth printing.
pub fn event_lines(ev: &Event) -> Vec<String> {
    match ev {
        Event::Frame(f) => frame_lines(f),
        Event::Stderr(s) => vec![format!("  [stderr] {}", shorten(&s.text()))],
        Event::Closed { .. } => vec![],
        other => vec![format!("  [meta] {}", other.summary())],
    }
}

/// One-line warning for a received frame with anomalies (printed even
/// without --trace). Over HTTP a body that is not JSON is usually an error
/// page, not a log line, and is described as such.
pub fn anomaly_warning(f: &Frame, http: bool) -> Option<String> {
    if f.direction != Direction::In || f.anomalies().is_empty() {
        return None;
    }
    let codes: Vec<&str> = f.anomalies().codes().collect();
    let first = f.anomalies().descriptions().next().map(|(_, d)| d).unwrap_or_default();
    let what = if http && f.anomalies().contains(Anomalies::NOT_JSON) {
        "a response body that is not JSON (an error page or a proxy's answer?)"
    } else {
        first
    };
    Some(format!(
        "mcpscope: warning: from the server: {} [{}]: {}",
        shorten(&format!("{:?}", f.text())),
        codes.join(", "),
        what
    ))
}
