//! Where a server is and how bytes reach it: child processes over stdio,
//! Streamable HTTP and HTTP+SSE, the session thread that owns either, the
//! byte-exact stdio proxy, and the authorizer that runs OAuth for HTTP
//! servers that ask for it.

pub mod auth;
pub mod event;
pub mod http;
pub mod process;
pub mod proxy;
pub mod session;
pub mod target;
