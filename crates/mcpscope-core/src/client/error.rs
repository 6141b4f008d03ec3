//! Why a request got no response: the client's error, and the one mapping
//! from the driver's failures (and how the session ended) to it.

use crate::driver::{Failure, Undelivered};
use crate::transport::process::{ExitInfo, SpawnError};
use std::fmt;
use std::time::Duration;

/// Why a request got no response.
#[derive(Clone, Debug, PartialEq)]
pub enum ClientError {
    SpawnFailed(SpawnError),
    TimedOut {
        method: String,
        after: Duration,
    },
    ServerExited {
        method: String,
        status: ExitInfo,
    },
    Closed {
        method: String,
    },
    WriteFailed {
        method: String,
        error: String,
    },
    /// The HTTP exchange carrying the request failed (connection refused, an
    /// error status, a body that is not the response, an expired session).
    Http {
        method: String,
        error: String,
    },
    /// The server asked for authorization and it could not be obtained.
    Authorization {
        method: String,
        error: crate::protocol::auth::AuthError,
    },
    /// The server answered with a line over the in-memory cap (`--max-line`).
    TooLong {
        method: String,
        bytes: u64,
        cap: usize,
    },
    /// The server answered, but with a result serde_json cannot turn into a
    /// value (nested too deep, a number out of range): reading it as empty
    /// would misreport what the server said.
    Unreadable {
        method: String,
        why: String,
        bytes: usize,
    },
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::SpawnFailed(e) => write!(f, "could not start the server: {e}"),
            ClientError::TimedOut { method, after } => {
                write!(f, "{method} got no response within {} ms", after.as_millis())
            }
            ClientError::ServerExited { method, status } => {
                write!(f, "the server {status} before answering {method}")
            }
            ClientError::Closed { method } => write!(f, "the session ended before {method} was answered"),
            ClientError::WriteFailed { method, error } => write!(f, "could not send {method}: {error}"),
            ClientError::Http { method, error } => write!(f, "{method} failed over HTTP: {error}"),
            ClientError::Authorization { method, error } => write!(f, "{method}: authorization failed: {error}"),
            ClientError::TooLong { method, bytes, cap } => {
                let failure = Failure::TooLong {
                    bytes: *bytes,
                    cap: *cap,
                };
                write!(f, "{method} {failure}")
            }
            ClientError::Unreadable { method, why, bytes } => {
                write!(f, "{method}: cannot read the result: {why} ({bytes} bytes)")
            }
        }
    }
}

impl std::error::Error for ClientError {}

/// How a session ended, as far as a failed request's error needs to know.
pub(super) struct SessionFate<'a> {
    pub(super) spawn_error: Option<&'a SpawnError>,
    pub(super) exited: Option<ExitInfo>,
    /// Why signing in failed, when it did.
    pub(super) auth_error: Option<&'a crate::protocol::auth::AuthError>,
}

/// What a request that got no answer tells the caller: a timeout, a
/// refused sign-in, a failed write or HTTP exchange, an answer too long to
/// hold, or the session's own end (the server did not start, exited, or the
/// session closed).
pub(super) fn client_error(
    method: &str,
    failure: &Failure,
    timeout: Option<Duration>,
    fate: &SessionFate,
) -> ClientError {
    let method = method.to_owned();
    match failure {
        Failure::TimedOut { after } => ClientError::TimedOut {
            method,
            after: after.or(timeout).unwrap_or_default(),
        },
        Failure::NotDelivered {
            cause: Undelivered::Authorization,
            ..
        } if let Some(error) = &fate.auth_error => ClientError::Authorization {
            method,
            error: (*error).clone(),
        },
        Failure::NotDelivered {
            why,
            cause: Undelivered::Authorization,
        } => ClientError::Http {
            method,
            error: format!("authorization failed: {why}"),
        },
        Failure::NotDelivered {
            why,
            cause: Undelivered::Http,
        } => ClientError::Http {
            method,
            error: why.clone(),
        },
        Failure::NotDelivered {
            why,
            cause: Undelivered::Write,
        } => ClientError::WriteFailed {
            method,
            error: why.clone(),
        },
        Failure::TooLong { bytes, cap } => ClientError::TooLong {
            method,
            bytes: *bytes,
            cap: *cap,
        },
        Failure::ServerGone(_) | Failure::Cancelled | Failure::Stopped(_) => match (fate.spawn_error, fate.exited) {
            (Some(e), _) => ClientError::SpawnFailed(e.clone()),
            (None, Some(status)) => ClientError::ServerExited { method, status },
            _ => ClientError::Closed { method },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_request_says_what_ended_it() {
        let alive = SessionFate {
            spawn_error: None,
            exited: None,
            auth_error: None,
        };
        let timeout = Some(Duration::from_secs(3));
        let e = client_error("tools/list", &Failure::TimedOut { after: None }, timeout, &alive);
        assert!(matches!(e, ClientError::TimedOut { after, .. } if after == Duration::from_secs(3)));
        let write = Failure::NotDelivered {
            why: "broken pipe".into(),
            cause: Undelivered::Write,
        };
        assert!(matches!(
            client_error("x", &write, None, &alive),
            ClientError::WriteFailed { .. }
        ));
        // A sign-in that failed is said as such when its reason is known.
        let auth = Failure::NotDelivered {
            why: "401".into(),
            cause: Undelivered::Authorization,
        };
        assert!(
            matches!(client_error("x", &auth, None, &alive), ClientError::Http { error, .. } if error == "authorization failed: 401")
        );
        let refused = crate::protocol::auth::AuthError::NoAuthorizationServer {
            metadata_url: "http://m".into(),
        };
        let signed_out = SessionFate {
            auth_error: Some(&refused),
            ..alive
        };
        assert!(matches!(
            client_error("x", &auth, None, &signed_out),
            ClientError::Authorization { .. }
        ));
        // The session's end: a server that never started, one that exited, or a closed session.
        let gone = Failure::ServerGone("eof".into());
        assert!(matches!(
            client_error("x", &gone, None, &alive),
            ClientError::Closed { .. }
        ));
        let exited = SessionFate {
            exited: Some(ExitInfo {
                code: Some(1),
                signal: None,
            }),
            ..alive
        };
        assert!(matches!(
            client_error("x", &gone, None, &exited),
            ClientError::ServerExited { .. }
        ));
        let spawn = SpawnError {
            program: "nope".into(),
            resolved: None,
            message: "not found".into(),
        };
        let never = SessionFate {
            spawn_error: Some(&spawn),
            ..exited
        };
        assert!(matches!(
            client_error("x", &Failure::Cancelled, None, &never),
            ClientError::SpawnFailed(_)
        ));
    }
}
