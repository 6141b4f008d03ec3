//! Where a server is and how bytes reach it: child processes over stdio,
//! Streamable HTTP and HTTP+SSE, the session thread that owns either, and the
//! byte-exact stdio proxy.

pub mod event;
pub mod http;
pub mod process;
pub mod proxy;
pub mod reverse_proxy;
pub mod session;
pub mod target;
