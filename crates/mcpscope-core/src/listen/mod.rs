//! mcpscope's HTTP/1.1 listeners and what they share: the reverse proxy,
//! the mock's Streamable HTTP endpoint and the MCP App pages run on
//! [`accept::accept_loop`]; the sign-in's redirect listener
//! ([`redirect::Loopback`]) is a small blocking one. All of them read
//! requests with `httparse` under header and body timeouts ([`request`]),
//! let them in by the one [`gate::Gate`] on `Host` and `Origin`, and answer
//! through [`response`]; the async ones share connection [`slots`] that make
//! room by closing the client that has waited longest. Chunked bodies are
//! decoded by [`chunked`], which the load generator's client uses too.
//!
//! Kept in one place so that every listener refuses the same malformed or
//! hostile requests the same way. It uses nothing else of the crate, and
//! sits a floor below `transport`, whose sign-in (`transport::auth`) waits
//! on the redirect listener.

pub(crate) mod accept;
pub(crate) mod chunked;
pub(crate) mod conn;
pub mod gate;
pub mod redirect;
pub(crate) mod request;
pub(crate) mod response;
pub(crate) mod slots;

pub use accept::{ListenError, Stopper, bind, listen_addr};
pub use gate::Refusal;
