//! What MCP means on top of JSON-RPC: the handshake, the two protocol eras,
//! multi round-trip requests, tasks, subscriptions, tool results and the
//! authorization client. Pure logic: no sockets, threads or files.

pub mod auth;
pub mod capabilities;
pub mod era;
pub mod handshake;
pub mod http_headers;
pub mod lifecycle;
pub mod methods;
pub mod mrtr;
pub mod skills;
pub mod subscriptions;
pub mod tasks;
pub mod tool_result;
pub mod uri_template;
