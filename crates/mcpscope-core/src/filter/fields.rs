//! Every field a filter can name: its type, what it means, and the values
//! it takes where they are a fixed set. One table serves the checker, the
//! app's completion and `mcpscope filter --fields`.

/// What a field holds, for type checking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    Str,
    Num,
    Bool,
    /// Seconds; compared with durations (`500ms`) or plain seconds.
    Duration,
    /// A string from a fixed set of values.
    Enum(&'static [&'static str]),
    /// Whatever the message holds there (checked when it is read).
    Json,
}

impl Ty {
    pub fn name(self) -> &'static str {
        match self {
            Ty::Str | Ty::Enum(_) => "text",
            Ty::Num => "number",
            Ty::Bool => "boolean",
            Ty::Duration => "duration",
            Ty::Json => "JSON value",
        }
    }
}

pub const DIRS: &[&str] = &["c2s", "s2c", "stderr", "note", "auth", "http", "proxy", "app", "model"];
pub const KINDS: &[&str] = &[
    "request",
    "notification",
    "result",
    "error",
    "iserror",
    "server_request",
    "not_json",
    "stderr",
    "auth",
    "note",
    "http",
    "touch",
    "app",
    "model",
];
pub const TRANSPORTS: &[&str] = &["stdio", "http", "sse"];
pub const ERAS: &[&str] = &["legacy", "modern"];
pub const SEVERITIES: &[&str] = &["error", "warning", "info"];

/// A named field.
#[derive(Clone, Copy, Debug)]
pub struct FieldDef {
    pub name: &'static str,
    pub ty: Ty,
    pub doc: &'static str,
}

const fn f(name: &'static str, ty: Ty, doc: &'static str) -> FieldDef {
    FieldDef { name, ty, doc }
}

/// The fields with a name of their own. Paths into the message start with
/// one of [`MESSAGE_ROOTS`]; `request.` and `response.` put any field of the
/// other side of an exchange in reach.
pub const FIELDS: &[FieldDef] = &[
    f(
        "dir",
        Ty::Enum(DIRS),
        "direction: c2s (client to server), s2c, stderr, note, auth, http",
    ),
    f(
        "kind",
        Ty::Enum(KINDS),
        "what the record is: request, notification, result, error, iserror, server_request, not_json, stderr, auth, note, http",
    ),
    f("seq", Ty::Num, "the record's sequence number in its capture"),
    f("time", Ty::Duration, "time since the capture started"),
    f("len", Ty::Num, "the line's length in bytes"),
    f("raw", Ty::Str, "the line as it was sent"),
    f("session", Ty::Str, "the session's name (the tab's title in the app)"),
    f("tab", Ty::Str, "the tab's title (the same as session)"),
    f("transport", Ty::Enum(TRANSPORTS), "stdio, http or sse"),
    f(
        "era",
        Ty::Enum(ERAS),
        "the protocol era the session speaks: legacy (initialize) or modern (2026-07-28)",
    ),
    f("id", Ty::Json, "the JSON-RPC id"),
    f("method", Ty::Str, "the JSON-RPC method (requests and notifications)"),
    f("error.code", Ty::Num, "a JSON-RPC error's code"),
    f("error.message", Ty::Str, "a JSON-RPC error's message"),
    f(
        "latency",
        Ty::Duration,
        "how long the answer took (on the response, and on its request)",
    ),
    f("pending", Ty::Bool, "a request with no answer (yet)"),
    f(
        "request.method",
        Ty::Str,
        "on a response: the method of its request (request.params.… reaches its params)",
    ),
    f(
        "response.kind",
        Ty::Enum(KINDS),
        "on a request: what its answer was (response.result.… reaches the answer)",
    ),
    f("finding", Ty::Bool, "the record has a lint finding"),
    f("finding.rule", Ty::Str, "the rule id of a lint finding on the record"),
    f(
        "finding.severity",
        Ty::Enum(SEVERITIES),
        "a lint finding's severity: error, warning, info",
    ),
    f("model.name", Ty::Str, "a model turn's model (mcpscope chat)"),
    f("model.provider", Ty::Str, "a model turn's provider"),
    f("model.tool_calls", Ty::Num, "how many tools a model turn asked for"),
    f(
        "model.input_tokens",
        Ty::Num,
        "a model turn's input tokens, as the provider counted them",
    ),
    f("model.output_tokens", Ty::Num, "a model turn's output tokens"),
    f(
        "model.first_token",
        Ty::Duration,
        "a model turn's time to its first token",
    ),
    f("model.total", Ty::Duration, "a model turn's time in all"),
    f("http.status", Ty::Num, "an HTTP exchange's status code"),
    f("http.method", Ty::Str, "an HTTP exchange's method (POST, GET, DELETE)"),
    f("http.url", Ty::Str, "an HTTP exchange's URL (credentials masked)"),
    f(
        "http.header",
        Ty::Str,
        "http.header[\"name\"]: a header sent or received",
    ),
    f("http.sent", Ty::Str, "http.sent[\"name\"]: a request header"),
    f("http.received", Ty::Str, "http.received[\"name\"]: a response header"),
    f(
        "task.id",
        Ty::Str,
        "the task a message is about (taskId, or the related-task _meta)",
    ),
    f(
        "task.status",
        Ty::Str,
        "a task's status: working, input_required, completed, failed, cancelled",
    ),
    f(
        "conversation",
        Ty::Num,
        "the multi round-trip conversation a record belongs to",
    ),
];

/// First names of paths into the JSON-RPC message (`json` is the message itself).
pub const MESSAGE_ROOTS: &[&str] = &["params", "result", "error", "jsonrpc", "json"];

/// Functions, for completion.
pub const FUNCTIONS: &[(&str, &str)] = &[
    ("len(", "length of a text, array or object"),
    ("lower(", "text in lower case"),
    ("count(", "how many values a path with [*] has"),
    ("any(", "true when the condition holds for some element of a [*] array"),
    ("all(", "true when the condition holds for every element of a [*] array"),
];

/// Operators, for completion.
pub const OPERATORS: &[&str] = &[
    "==", "!=", "<", "<=", ">", ">=", "contains", "matches", "in", "and", "or", "not",
];

pub fn lookup(name: &str) -> Option<&'static FieldDef> {
    FIELDS.iter().find(|f| f.name == name)
}

/// Every name a user may start a field with, for "did you mean".
pub fn all_names() -> impl Iterator<Item = &'static str> {
    FIELDS
        .iter()
        .map(|f| f.name)
        .chain(MESSAGE_ROOTS.iter().copied())
        .chain(["request", "response", "http", "task", "finding", "model"])
}
