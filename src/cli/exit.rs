//! Exit statuses, one meaning each, shared by every subcommand (documented in
//! docs/guide/exit-statuses.md).

/// Success.
pub const OK: u8 = 0;
/// A JSON-RPC error response (`call`), error-level findings (`lint`), an
/// unhealthy server (`doctor`), differences (`diff`), or a refused listen.
pub const FAILED: u8 = 1;
/// `call`: the tool answered with `isError: true`.
pub const TOOL_ERROR: u8 = 2;
/// Could not connect, the handshake failed, a request timed out, or the
/// server asked for authorization and none could be obtained.
pub const UNREACHABLE: u8 = 3;
/// A capture or input file could not be read or written, or an output file
/// (`-o`, `--junit`, `--capture`) was refused (another user's link, a
/// directory, a socket, a FIFO without a reader) or could not be written
/// (ENOSPC on `/dev/full`).
pub const IO: u8 = 4;
/// `call`: the server answered with a result mcpscope cannot read as a
/// JSON value (nested too deep, a number out of range, a lone surrogate):
/// printed as sent; or with a line longer than `--max-line` (kept in the
/// capture, not printed). `call --app-info` and `app` too when it is the
/// tools list they read.
pub const UNREADABLE: u8 = 5;
/// `call --app-info`: the tool has no MCP App (the same number as
/// [`TOOL_ERROR`]: the official Inspector CLI's contract, so scripts carry over).
pub const NO_APP: u8 = 2;
/// `call --app-info`, `app`: there is no tool of that name (the Inspector
/// CLI's number, shared with [`UNREADABLE`]).
pub const NO_SUCH_TOOL: u8 = 5;
/// `chat`: the model provider failed (an HTTP error, unreachable, an error
/// in its stream, a stream cut short).
pub const PROVIDER_FAILED: u8 = 6;
/// `chat`: the model still wanted tools after `--max-turns` round trips.
pub const ROUND_TRIP_LIMIT: u8 = 7;
/// The command line itself is wrong (sysexits' EX_USAGE): nothing was sent.
pub const USAGE: u8 = 64;
/// `proxy`: the server could not be started (a shell's "command not found").
pub const NOT_STARTED: u8 = 127;
// Also: 128 + N when mcpscope was stopped by signal N (130 for SIGINT), and
// 141 when its stdout was closed (see `output`).
