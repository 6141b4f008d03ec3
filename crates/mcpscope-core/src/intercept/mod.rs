//! Intercept and fault injection on the proxies: breakpoints that hold
//! frames for the user (forward, edit, drop, answer instead), frames the
//! user injects, and fault rules (`EXPR => ACTION`, EXPR a display filter)
//! that delay, drop, duplicate, reorder, corrupt, replace or answer frames,
//! stall, disconnect or kill the server.
//!
//! [`engine::Interceptor`] is the gate a proxy runs ([`crate::proxy::gate`]);
//! [`control`] serves its [`engine::InterceptHandle`] on a private Unix
//! socket so the app or `mcpscope intercept` can drive a proxy running in
//! someone's client. [`rule`] reads a rule or breakpoint as written and
//! [`rules_file`] a file of them; their errors point into the text.

pub mod control;
pub mod engine;
pub mod rule;
pub mod rules_file;
mod subject;

pub use engine::{Answer, Board, CommandError, HeldFrame, InterceptHandle, Interceptor, Op, Refusal};
pub use rule::{Breakpoint, FaultAction, FaultRule, Toward, parse_fault};
