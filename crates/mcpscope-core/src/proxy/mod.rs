//! The proxies: mcpscope between a client and its server, recording every
//! byte of both sides. On the client's floor: they run a server (or reach
//! one) through `transport` and write captures and the session index
//! through `record`.
//!
//! - [`stdio`]: a byte-exact stdio proxy (`mcpscope proxy -- CMD`, and what
//!   `wrap` puts in a client's config);
//! - [`reverse`]: an HTTP reverse proxy in front of a Streamable HTTP or
//!   HTTP+SSE server (`mcpscope proxy --listen --upstream`).

pub mod gate;
pub mod reverse;
pub mod stdio;
