//! Client configuration files (servers imported from Claude Desktop,
//! `.mcp.json`, VS Code and Cursor) and the store of OAuth tokens.

pub mod server_config;
pub mod token_store;
