//! Client configuration files: servers imported from Claude Desktop,
//! `.mcp.json`, VS Code and Cursor, and wrapping them so the client's own
//! traffic runs through `mcpscope proxy`; and the store of OAuth tokens.

pub mod jsonc;
pub mod keyring;
pub mod secret_file;
pub mod server_config;
pub mod token_store;
pub mod wrap;
pub mod wrap_file;
