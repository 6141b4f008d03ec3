//! mcpscope's engine: everything an MCP inspector needs except drawing.
//!
//! The folders are the layers, each depending only on those listed before it:
//! - [`wire`]: bytes to lines (framing, SSE events), classification, JSON-RPC
//!   messages, frames, id correlation;
//! - [`protocol`]: what MCP means (handshake, eras, multi round-trip chains,
//!   tasks, subscriptions, tool results);
//! - [`transport`]: processes and HTTP, and the session thread that moves bytes;
//! - [`record`]: the recorder, captures on disk, the row store and the session model;
//! - [`replay`]: a capture served again as a mock server (sans I/O);
//! - [`client`]: a blocking client over a session, for the CLI and the doctor;
//! - [`analysis`]: protocol lint, session diff, the doctor;
//! - [`filter`]: display filters (parse, check, run on rows and on captures);
//! - [`intercept`]: breakpoints, injected frames and fault rules on the proxies;
//! - [`interop`]: captures in other tools' formats (HAR, OpenTelemetry), and imports;
//! - [`load`]: load testing (workloads, open and closed loops, HDR figures);
//! - [`config`]: client config files (Claude Desktop, .mcp.json, VS Code, Cursor);
//! - [`schema`]: forms from JSON Schema (analysis, example values, validation; no drawing).
//!
//! The desktop app (`mcpscope-app`) and the CLI (`mcpscope`) are built on it; nothing
//! here depends on egui.

pub mod analysis;
pub mod apps;
pub mod client;
pub mod config;
pub mod driver;
pub mod duration;
pub mod filter;
pub mod intercept;
pub mod interop;
pub mod load;
pub mod protocol;
pub mod proxy;
pub mod record;
pub mod replay;
pub mod schema;
pub mod sessions;
pub mod text;
pub mod timeline;
pub mod transport;
pub mod verify;
pub mod wire;

#[cfg(test)]
mod layers;
