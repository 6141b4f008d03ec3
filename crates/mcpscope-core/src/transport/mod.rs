//! Where a server is and how bytes reach it: child processes over stdio,
//! Streamable HTTP and HTTP+SSE (two links behind one runner), the session
//! handle, what happens when mcpscope itself is
//! told to stop, and the authorizer that runs OAuth for HTTP servers that
//! ask for it.

pub mod auth;
pub(crate) mod budget;
pub mod event;
pub mod event_log;
pub mod http;
pub mod lifecycle;
pub mod process;
pub mod recorder;
pub(crate) mod runner;
pub mod session;
pub mod shutdown;
pub(crate) mod stdio;
pub mod target;
