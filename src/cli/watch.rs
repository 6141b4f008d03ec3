//! What a subcommand that runs a session keeps an eye on besides its own
//! work: a capture that could not be written (said once, and the command
//! fails with [`super::exit::IO`]), and the last lines the server wrote to
//! stderr (shown when the session fails: they usually say why).

use mcpscope_core::record::capture;
use mcpscope_core::transport::event::Event;
use mcpscope_core::transport::process::ExitInfo;
use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Stderr lines kept for a failure report.
const TAIL: usize = 6;

#[derive(Clone, Default)]
pub struct Watch(Arc<Mutex<State>>);

#[derive(Default)]
struct State {
    stderr_tail: VecDeque<String>,
    capture_failed: bool,
}

impl Watch {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Called for every event of the session.
    pub fn see(&self, ev: &Event, prefix: &str) {
        match ev {
            Event::Stderr(s) => {
                let mut st = self.state();
                if st.stderr_tail.len() == TAIL {
                    st.stderr_tail.pop_front();
                }
                st.stderr_tail
                    .push_back(mcpscope_core::text::shorten_bytes(s.raw.trim_ascii_end(), 300));
            }
            Event::Note { text, .. } if text.starts_with(capture::FAILED) => {
                let mut st = self.state();
                if !st.capture_failed {
                    st.capture_failed = true;
                    crate::errln!("{prefix}: {text}");
                }
            }
            _ => {}
        }
    }

    pub fn capture_failed(&self) -> bool {
        self.state().capture_failed
    }

    /// Says why the session failed, with the server's exit status (when it
    /// exited) and the last lines of its stderr.
    pub fn explain(&self, prefix: &str, reason: &str, exit: Option<ExitInfo>) {
        let mut line = reason.to_owned();
        if let Some(status) = exit
            && !reason.contains("the server exited")
            && !reason.contains("was killed")
        {
            line.push_str(&format!(" (the server {status})"));
        }
        crate::errln!("{prefix}: {line}");
        // The error stays one line; the server's last words follow it, indented.
        for l in &self.state().stderr_tail {
            crate::errln!("  [stderr] {l}");
        }
    }
}

/// Checks a `--capture` path before anything starts; the error to print.
pub fn check_capture(path: Option<&Path>) -> Result<(), String> {
    match path {
        Some(p) => capture::check_writable(p).map_err(|e| mcpscope_core::text::error_chain(&e)),
        None => Ok(()),
    }
}
