//! Client configuration files: servers imported from Claude Desktop,
//! `.mcp.json`, VS Code and Cursor, and wrapping them so the client's own
//! traffic runs through `mcpscope proxy`.

pub mod jsonc;
pub mod server_config;
pub mod wrap;
pub mod wrap_file;
