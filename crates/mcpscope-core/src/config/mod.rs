//! Client configuration files: servers imported from Claude Desktop,
//! `.mcp.json`, VS Code and Cursor.

pub mod server_config;
