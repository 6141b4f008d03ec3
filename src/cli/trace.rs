//! Human-readable lines for events, as printed by `--trace` and the doctor.

use mcpscope_core::transport::event::Event;
use mcpscope_core::wire::classify::Anomalies;
use mcpscope_core::wire::frame::{Direction, Frame};
use mcpscope_core::wire::framing::LineEnding;

/// Longest line shown before it is shortened (the capture keeps it whole).
const DISPLAY_LIMIT: usize = 2000;

fn shorten(raw: &[u8]) -> String {
    mcpscope_core::text::shorten_bytes(raw, DISPLAY_LIMIT)
}

/// `→ {...}` / `← {...}`, with latency for responses and anomalies below.
pub fn frame_lines(f: &Frame) -> Vec<String> {
    let arrow = f.direction.arrow();
    let mut head = format!("{arrow} {}", shorten(&f.raw));
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
        Event::Stderr(s) => vec![format!("  [stderr] {}", shorten(&s.raw))],
        Event::Closed { .. } => vec![],
        Event::App(a) => {
            let arrow = match a.toward {
                mcpscope_core::transport::event::AppToward::Host => "view -> host",
                mcpscope_core::transport::event::AppToward::View => "host -> view",
                mcpscope_core::transport::event::AppToward::Sandbox => "host -> sandbox",
                mcpscope_core::transport::event::AppToward::FromSandbox => "sandbox -> host",
            };
            let mut out = vec![format!("  [app {}] {arrow} {}", a.app, shorten(&a.bytes))];
            if let Some(n) = &a.note {
                out.push(format!("  ! app: {n}"));
            }
            out
        }
        other => vec![format!("  [meta] {}", other.summary())],
    }
}

/// One-line warnings for received frames with anomalies (printed even
/// without --trace). Over HTTP a body that is not JSON is usually an error
/// page, not a log line, and is described as such. A line over the
/// in-memory cap arrives in pieces: it is warned about once when it starts
/// and once when it ends, not for every piece.
#[derive(Default)]
pub struct Warnings {
    /// Bytes of the long line read so far, while one is arriving.
    long_line: Option<u64>,
}

impl Warnings {
    pub fn frame(&mut self, f: &Frame, http: bool) -> Option<String> {
        if f.direction != Direction::In {
            return None;
        }
        if let Some(so_far) = self.long_line.as_mut() {
            *so_far += f.raw.len() as u64;
            if f.ending == LineEnding::Cut {
                return None;
            }
            let total = *so_far;
            self.long_line = None;
            return Some(format!(
                "mcpscope: warning: the long line from the server ended after {} ({total} bytes): it was not \
                 read as a message",
                mcpscope_core::text::human_bytes(total)
            ));
        }
        if f.ending == LineEnding::Cut {
            self.long_line = Some(f.raw.len() as u64);
            return Some(format!(
                "mcpscope: warning: the server is writing a line longer than the in-memory cap of {} (it \
                 starts {:?}): it is read in pieces of that size, each kept in the capture (--capture), and \
                 is not read as a message; --max-line raises the cap",
                mcpscope_core::text::human_bytes(f.raw.len() as u64),
                mcpscope_core::text::shorten_bytes(&f.raw, 80)
            ));
        }
        if f.anomalies().is_empty() {
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
            "mcpscope: warning: from the server: {:?} [{}]: {}",
            shorten(&f.raw),
            codes.join(", "),
            what
        ))
    }
}
