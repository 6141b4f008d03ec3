//! mcpscope: an inspector and debugger for MCP servers.
//!
//! The engine (framing, classification, correlation, sessions, captures) is
//! shared by the desktop app and the headless CLI.

pub mod app;
pub mod capture;
pub mod classify;
pub mod cli;
pub mod client;
pub mod correlation;
pub mod doctor;
pub mod era;
pub mod event;
pub mod frame;
pub mod framing;
pub mod handshake;
pub mod http;
pub mod lint;
pub mod message;
pub mod model;
pub mod mrtr;
pub mod process;
pub mod proxy;
pub mod recorder;
pub mod schema_form;
pub mod server_config;
pub mod session;
pub mod session_diff;
pub mod sse;
pub mod store;
pub mod subscriptions;
pub mod tasks;
pub mod text;
pub mod tool_result;
pub mod transport;
pub mod uri_template;
