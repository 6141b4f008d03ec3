//! Sending traces to an OpenTelemetry collector over OTLP/HTTP:
//! `POST {endpoint}/v1/traces`, as JSON or protobuf (`OTEL_EXPORTER_OTLP_PROTOCOL`
//! or `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`: `http/json`, the default here,
//! or `http/protobuf`), retried as the specification says (429, 502, 503
//! and 504 only, honouring `Retry-After`), a partial success said.

use serde_json::Value;
use std::io::Read as _;
use std::time::Duration;

/// Tries of one export, the first included.
const ATTEMPTS: u32 = 3;
/// The longest wait a `Retry-After` may ask for.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(5);

/// Why traces did not reach the collector.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    #[error("--otlp-endpoint {0:?} is not an http:// or https:// URL")]
    BadUrl(String),
    #[error("the collector at {url} could not be reached")]
    Unreachable {
        url: String,
        #[source]
        source: ureq::Error,
    },
    #[error("the collector at {url} refused the traces: HTTP {status}{}", if .body.is_empty() { String::new() } else { format!(": {}", .body) })]
    Refused { url: String, status: u16, body: String },
    #[error("{var}={value:?}: mcpscope sends http/json or http/protobuf (not gRPC)")]
    UnknownProtocol { var: &'static str, value: String },
}

/// The body's encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Json,
    Protobuf,
}

impl Protocol {
    /// As the OpenTelemetry SDKs read it: the traces variable, else the
    /// general one; unset is JSON (readable, and what `export` writes).
    pub fn from_env() -> Result<Protocol, SendError> {
        for var in ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"] {
            if let Ok(value) = std::env::var(var)
                && !value.trim().is_empty()
            {
                return match value.trim() {
                    "http/json" => Ok(Protocol::Json),
                    "http/protobuf" => Ok(Protocol::Protobuf),
                    _ => Err(SendError::UnknownProtocol { var, value }),
                };
            }
        }
        Ok(Protocol::Json)
    }

    fn content_type(self) -> &'static str {
        match self {
            Protocol::Json => "application/json",
            Protocol::Protobuf => "application/x-protobuf",
        }
    }

    fn encode(self, request: &Value) -> Vec<u8> {
        match self {
            Protocol::Json => serde_json::to_vec(request).unwrap_or_default(),
            Protocol::Protobuf => super::otlp_proto::encode_traces(request),
        }
    }
}

/// What the collector said of an export.
#[derive(Debug, PartialEq)]
pub struct Sent {
    pub url: String,
    pub spans: usize,
    /// Spans the collector dropped (`partialSuccess.rejectedSpans`), and why.
    pub rejected: u64,
    pub message: Option<String>,
}

/// The traces URL for `endpoint`: as given when it already names
/// `/v1/traces`, else with that path added (as OTEL_EXPORTER_OTLP_ENDPOINT does).
pub fn traces_url(endpoint: &str) -> Result<String, SendError> {
    let u = url::Url::parse(endpoint.trim()).map_err(|_| SendError::BadUrl(endpoint.to_owned()))?;
    if !matches!(u.scheme(), "http" | "https") || u.host().is_none() {
        return Err(SendError::BadUrl(endpoint.to_owned()));
    }
    let s = u.as_str().trim_end_matches('/');
    Ok(if s.ends_with("/v1/traces") {
        s.to_owned()
    } else {
        format!("{s}/v1/traces")
    })
}

/// Posts `request` (an OTLP/JSON `ExportTraceServiceRequest`) to `endpoint`,
/// encoded as [`Protocol::from_env`] says.
pub fn send(endpoint: &str, request: &Value) -> Result<Sent, SendError> {
    let url = traces_url(endpoint)?;
    let protocol = Protocol::from_env()?;
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_connect(Some(Duration::from_secs(5)))
        .timeout_global(Some(Duration::from_secs(30)))
        .user_agent(concat!("mcpscope/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let body = protocol.encode(request);
    let spans = request["resourceSpans"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|r| r["scopeSpans"].as_array().into_iter().flatten())
        .map(|s| s["spans"].as_array().map_or(0, Vec::len))
        .sum();
    let mut attempt = 1;
    loop {
        let resp = agent
            .post(&url)
            .header("Content-Type", protocol.content_type())
            .send(&body[..])
            .map_err(|source| SendError::Unreachable {
                url: url.clone(),
                source,
            })?;
        let status = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let mut raw = Vec::new();
        let _ = resp.into_body().into_reader().take(64 * 1024).read_to_end(&mut raw);
        let text = String::from_utf8_lossy(&raw).into_owned();
        match status {
            200..=299 => {
                let (rejected, message) = match protocol {
                    Protocol::Json => {
                        let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                        let partial = &answer["partialSuccess"];
                        let rejected = match &partial["rejectedSpans"] {
                            Value::String(s) => s.parse().unwrap_or(0),
                            v => v.as_u64().unwrap_or(0),
                        };
                        let message = partial["errorMessage"].as_str().map(str::to_owned);
                        (rejected, message)
                    }
                    Protocol::Protobuf => super::otlp_proto::partial_success(&raw),
                };
                let message = message.filter(|m| !m.is_empty());
                return Ok(Sent {
                    url,
                    spans,
                    rejected,
                    message,
                });
            }
            429 | 502 | 503 | 504 if attempt < ATTEMPTS => {
                std::thread::sleep(
                    retry_after
                        .unwrap_or(Duration::from_millis(500 * u64::from(attempt)))
                        .min(MAX_RETRY_WAIT),
                );
                attempt += 1;
            }
            _ => {
                return Err(SendError::Refused {
                    url,
                    status,
                    body: crate::text::shorten(text.trim(), 300),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_traces_path_is_added_once() {
        assert_eq!(
            traces_url("http://127.0.0.1:4318").unwrap(),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(traces_url("http://c:4318/").unwrap(), "http://c:4318/v1/traces");
        assert_eq!(
            traces_url("https://c/otlp/v1/traces").unwrap(),
            "https://c/otlp/v1/traces"
        );
        assert!(matches!(traces_url("grpc://c:4317"), Err(SendError::BadUrl(_))));
        assert!(matches!(traces_url("not a url"), Err(SendError::BadUrl(_))));
    }
}
