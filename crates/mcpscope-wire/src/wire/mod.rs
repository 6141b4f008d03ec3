//! The wire: bytes to lines and SSE events, lines to classified JSON-RPC
//! frames, and requests correlated with their responses. Knows nothing of
//! processes, HTTP or MCP's methods beyond what a frame's label needs.

pub mod classify;
pub mod correlation;
pub mod frame;
pub mod framing;
pub mod long_line;
pub mod message;
pub mod raw_member;
pub mod sequence;
pub mod sse;
