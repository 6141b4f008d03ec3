//! Conversations (one row per session) and endpoints (one row per server
//! and per client, over every session).

use std::collections::BTreeMap;

/// A client's or server's `Implementation` (`clientInfo`, `serverInfo`).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct Implementation {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub version: String,
}

impl Implementation {
    pub fn label(&self) -> String {
        if self.version.is_empty() {
            self.name.clone()
        } else {
            format!("{} {}", self.name, self.version)
        }
    }
}

/// One session.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Conversation {
    /// Its number in the capture (1 for the first), or the tab's title.
    pub session: String,
    pub client: Option<Implementation>,
    pub server: Option<Implementation>,
    /// The server's command line or URL.
    pub target: String,
    pub transport: String,
    /// `legacy` (initialize) or `modern` (2026-07-28), once known.
    pub era: Option<&'static str>,
    pub protocol_version: Option<String>,
    /// When the session started (wall clock, Unix ms).
    pub started_unix_ms: u64,
    /// Its first and last record on the capture's clock.
    pub start_us: u64,
    pub duration_us: u64,
    /// Client requests (client to server).
    pub requests: u64,
    /// Requests the server sent (sampling, elicitation, roots, ping).
    pub server_requests: u64,
    pub notifications_sent: u64,
    pub notifications_received: u64,
    /// Frames' bytes client to server and back, each line's terminator included.
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// JSON-RPC error responses, either way.
    pub errors: u64,
    /// Tool results with `isError: true`.
    pub tool_errors: u64,
    /// Requests never answered (or still waiting, while the session runs).
    pub unanswered: u64,
    /// Whether the session is still running (a live session's last step).
    pub running: bool,
}

impl Conversation {
    /// The display filter that keeps this session's records: its time on
    /// the capture's clock (the same in the app, whose tab names a whole
    /// file, as on the command line).
    pub fn filter(&self) -> String {
        time_range(self.start_us, self.start_us + self.duration_us)
    }
}

/// One server or client over all the sessions it was in.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Endpoint {
    /// `server` or `client`.
    pub role: &'static str,
    /// Its name and version, or the command line or URL when it gave none.
    pub name: String,
    pub sessions: Vec<String>,
    /// Each session's first and last record on the capture's clock (µs).
    pub spans: Vec<(u64, u64)>,
    pub requests: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub errors: u64,
    pub tool_errors: u64,
    pub unanswered: u64,
    pub duration_us: u64,
}

impl Endpoint {
    /// The display filter that keeps the sessions it was in.
    pub fn filter(&self) -> String {
        let ranges: Vec<String> = self.spans.iter().map(|&(from, to)| time_range(from, to)).collect();
        if ranges.len() == 1 {
            return ranges.into_iter().next().unwrap_or_default();
        }
        ranges.iter().map(|r| format!("({r})")).collect::<Vec<_>>().join(" or ")
    }
}

/// Endpoints from conversations: servers first, then clients, each by name.
pub fn endpoints(conversations: &[Conversation]) -> Vec<Endpoint> {
    let mut by: BTreeMap<(u8, String), Endpoint> = BTreeMap::new();
    for c in conversations {
        let server = c
            .server
            .as_ref()
            .map_or_else(|| c.target.clone(), Implementation::label);
        let client = c
            .client
            .as_ref()
            .map_or_else(|| "(unknown client)".to_owned(), Implementation::label);
        for (order, role, name) in [(0u8, "server", server), (1u8, "client", client)] {
            let e = by.entry((order, name.clone())).or_insert_with(|| Endpoint {
                role,
                name,
                ..Endpoint::default()
            });
            e.sessions.push(c.session.clone());
            e.spans.push((c.start_us, c.start_us + c.duration_us));
            e.requests += c.requests;
            e.bytes_sent += c.bytes_sent;
            e.bytes_received += c.bytes_received;
            e.errors += c.errors;
            e.tool_errors += c.tool_errors;
            e.unanswered += c.unanswered;
            e.duration_us += c.duration_us;
        }
    }
    by.into_values().collect()
}

/// `time` from `from_us` to `to_us` inclusive, to the microsecond.
fn time_range(from_us: u64, to_us: u64) -> String {
    let ms = |us: u64| format!("{}.{:03}ms", us / 1000, us % 1000);
    format!("time >= {} and time <= {}", ms(from_us), ms(to_us))
}
