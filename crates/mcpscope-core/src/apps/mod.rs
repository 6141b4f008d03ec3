//! MCP Apps (SEP-1865, extension `io.modelcontextprotocol/ui`): how a
//! server declares a View (`linkage`), the policy a View gets (`csp`), the
//! host side of the View↔host protocol as a state machine (`host`), and
//! the loopback pages that put a View in a browser (`serve`).

pub mod csp;
pub mod host;
pub mod linkage;
pub mod run;
pub mod serve;
