//! The timeline's data: the compact row store every frame, stderr line and
//! note lands in, what kind of row each is, and the session model the panels
//! read (handshake facts, latencies, progress), applied event by event.
//! `replay` builds one from lines, for tests and tools without a process.

pub mod model;
pub mod replay;
pub mod row_kind;
pub mod store;
