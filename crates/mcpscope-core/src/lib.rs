//! mcpscope's engine: everything an MCP inspector needs except drawing.
//!
//! The modules are the layers, lowest first; each depends only on the floors
//! before it (`layers.rs` keeps the order by a test, and the compiler keeps
//! it for the bottom floors, which are crates of their own re-exported here
//! under their module names).
//!
//! From the crates below:
//! - [`wire`], [`text`], [`duration`] (`mcpscope-wire`): bytes to lines
//!   (framing, SSE events), classification, JSON-RPC messages, frames, id
//!   correlation and the sequence that numbers, times and links them; text
//!   for people (sizes, moments, shortening); durations people write;
//! - [`schema`] (`mcpscope-schema`): forms from JSON Schema (analysis, example
//!   values, validation, typed command-line arguments; no drawing);
//! - [`protocol`], [`driver`] (`mcpscope-protocol`): what MCP means
//!   (handshake, eras, multi round-trip chains, tasks, subscriptions,
//!   authorization, tool results, skills), and the client's state machine
//!   built on it; no I/O in either.
//!
//! In this crate:
//! - [`platform`]: what differs between operating systems (so far: process
//!   trees, the watchdog, and other processes' state and usage), behind
//!   types that say what they do;
//! - [`listen`]: the HTTP/1.1 listeners' shared pieces (request reading, the
//!   `Host`/`Origin` gate, connection slots, answers) and the sign-in's redirect listener;
//! - [`model`]: a model in the loop, sans I/O: the provider APIs
//!   (OpenAI-compatible Chat Completions, Anthropic Messages), a conversation
//!   and the server's tools as each wants them, a streamed answer assembled;
//! - [`transport`]: child processes over stdio, Streamable HTTP and HTTP+SSE,
//!   the session thread that moves bytes, the recorder that frames what
//!   crosses, the authorizer that runs OAuth, and shutting down on a signal;
//! - [`pilot`]: the one owner between a session and the driver, for the CLI's
//!   client and the app's live sessions alike;
//! - [`record`]: what a session leaves on disk: captures (written, read back,
//!   followed as they grow), private files, the state directory, the rule
//!   for output files;
//! - [`sessions`]: the index of sessions other mcpscope processes (proxies) run;
//! - [`timeline`]: the row store, the session model the panels read, and
//!   sessions built from lines for tests and tools;
//! - [`client`]: a blocking client over a session, for the CLI and the doctor;
//! - [`proxy`]: the stdio and HTTP reverse proxies, recording both sides;
//! - [`apps`]: MCP Apps (a server's Views, their policy, the host side of the
//!   View protocol, the pages that put a View in a browser);
//! - [`config`]: client config files (Claude Desktop, .mcp.json, VS Code,
//!   Cursor), wrapping them through the proxy, and the token store;
//! - [`analysis`]: protocol lint, session and answer diffs, the doctor;
//! - [`filter`]: display filters (parse, check, run on rows and on captures);
//! - [`interop`]: captures in other tools' formats (HAR, OpenTelemetry), and imports;
//! - [`intercept`]: breakpoints, injected frames and fault rules on the proxies;
//! - [`replay`]: a capture served again as a mock server: the mock a state
//!   machine with no I/O (the CLI serves it on stdio), and its Streamable HTTP
//!   server, with its own authorization server under `--auth`;
//! - [`chat`]: a model in the loop over the wire (a model turn over HTTP);
//! - [`verify`]: a recorded session's requests sent again to a live server,
//!   each answer compared with the recorded one;
//! - [`load`]: load testing (workloads, open and closed loops, HDR figures).
//!
//! The desktop app (`mcpscope-app`) and the CLI (`mcpscope`) are built on it; nothing
//! here depends on egui.

// The bottom floors are crates of their own (the compiler keeps their order):
// re-exported under the names they had as modules here.
pub use mcpscope_protocol::{driver, protocol};
pub use mcpscope_schema as schema;
pub use mcpscope_wire::{duration, text, wire};

pub mod analysis;
pub mod apps;
pub mod chat;
pub mod client;
pub mod collection;
pub mod config;
pub mod filter;
pub mod intercept;
pub mod interop;
pub mod listen;
pub mod load;
pub mod model;
pub mod pilot;
pub mod platform;
pub mod proxy;
pub mod record;
pub mod replay;
pub mod sessions;
pub mod stats;
pub mod timeline;
pub mod transport;
pub mod verify;

#[cfg(test)]
mod layers;
