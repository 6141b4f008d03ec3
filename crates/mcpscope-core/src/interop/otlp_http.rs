//! Sending traces to an OpenTelemetry collector over OTLP/HTTP (JSON):
//! `POST {endpoint}/v1/traces`, retried as the specification says (429,
//! 502, 503 and 504 only, honouring `Retry-After`), a partial success said.

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

/// Posts `request` (an OTLP/JSON `ExportTraceServiceRequest`) to `endpoint`.
pub fn send(endpoint: &str, request: &Value) -> Result<Sent, SendError> {
    let url = traces_url(endpoint)?;
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_connect(Some(Duration::from_secs(5)))
        .timeout_global(Some(Duration::from_secs(30)))
        .user_agent(concat!("mcpscope/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let body = serde_json::to_vec(request).unwrap_or_default();
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
            .header("Content-Type", "application/json")
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
        let mut text = Vec::new();
        let _ = resp.into_body().into_reader().take(64 * 1024).read_to_end(&mut text);
        let text = String::from_utf8_lossy(&text).into_owned();
        match status {
            200..=299 => {
                let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                let partial = &answer["partialSuccess"];
                let rejected = match &partial["rejectedSpans"] {
                    Value::String(s) => s.parse().unwrap_or(0),
                    v => v.as_u64().unwrap_or(0),
                };
                let message = partial["errorMessage"]
                    .as_str()
                    .filter(|m| !m.is_empty())
                    .map(str::to_owned);
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
