//! What MCP means, with no I/O: the protocol's rules ([`protocol`]: handshake,
//! eras, multi round-trip chains, tasks, subscriptions, authorization, tool
//! results) and the client's state machine built on them ([`driver`]).
//! `mcpscope-core` re-exports both modules under the same names.

pub mod driver;
pub mod protocol;

// The layer below, under the names the core gives it, so that a path reads
// the same in this crate and in the core (`crate::wire::frame::Frame`).
use mcpscope_wire::{text, wire};

#[cfg(test)]
mod testing;
