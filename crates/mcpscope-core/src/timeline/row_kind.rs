//! What a row of a session is, for showing and filtering: one kind per row,
//! from its lane and its classification (a tool's `isError` result is its
//! own kind, apart from a JSON-RPC error).

use crate::timeline::store::{Lane, RowRef};
use crate::wire::classify::Kind;

/// What a row shows itself as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RowKind {
    Request,
    Notification,
    Result,
    RpcError,
    ToolError,
    ServerRequest,
    NotJson,
    Stderr,
    Meta,
    /// A step of an authorization (OAuth).
    Auth,
    /// What an intercepting proxy did to a frame, or sent of its own.
    Touch,
    /// A message between an MCP App's View and mcpscope as its host.
    App,
    /// A model turn (request to a model provider and its streamed answer).
    Model,
}

impl RowKind {
    pub const ALL: [RowKind; 13] = [
        RowKind::Request,
        RowKind::Notification,
        RowKind::Result,
        RowKind::RpcError,
        RowKind::ToolError,
        RowKind::ServerRequest,
        RowKind::NotJson,
        RowKind::Stderr,
        RowKind::Meta,
        RowKind::Auth,
        RowKind::Touch,
        RowKind::App,
        RowKind::Model,
    ];

    pub fn of(row: &RowRef<'_>) -> RowKind {
        match row.lane() {
            Lane::Stderr => return RowKind::Stderr,
            Lane::Meta => return RowKind::Meta,
            Lane::Auth => return RowKind::Auth,
            Lane::Touch => return RowKind::Touch,
            Lane::App => return RowKind::App,
            Lane::Model => return RowKind::Model,
            _ => {}
        }
        match row.kind() {
            Kind::Request if row.lane() == Lane::In => RowKind::ServerRequest,
            Kind::Request => RowKind::Request,
            Kind::Notification => RowKind::Notification,
            Kind::Result if row.tool_error() => RowKind::ToolError,
            Kind::Result => RowKind::Result,
            Kind::Error => RowKind::RpcError,
            Kind::Batch | Kind::NotJsonRpc | Kind::NotJson => RowKind::NotJson,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            RowKind::Request => "request",
            RowKind::Notification => "notification",
            RowKind::Result => "result",
            RowKind::RpcError => "JSON-RPC error",
            RowKind::ToolError => "tool error (isError)",
            RowKind::ServerRequest => "server-to-client request",
            RowKind::NotJson => "not JSON-RPC",
            RowKind::Stderr => "stderr",
            RowKind::Meta => "session",
            RowKind::Auth => "authorization",
            RowKind::Touch => "proxy (intercept)",
            RowKind::App => "MCP App (View and host)",
            RowKind::Model => "model turn",
        }
    }
}
