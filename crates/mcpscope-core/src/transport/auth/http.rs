//! The authorization's HTTP requests, made with redirects never followed
//! (a redirect is an answer the flow must see), each one turned into an
//! [`AuthExchange`] fit for the record.

use crate::protocol::auth::flow::{Body, Input, Request};
use crate::protocol::auth::mask;
use crate::protocol::auth::{Step, jwt::DecodedJwt};
use crate::transport::event::AuthExchange;
use serde_json::Value;
use std::io::Read;
use std::time::{Duration, Instant};

/// Answers longer than this are cut: metadata and token answers are small.
const MAX_BODY: u64 = 1024 * 1024;

/// Response headers worth recording.
const RELEVANT: &[&str] = &[
    "content-type",
    "location",
    "www-authenticate",
    "cache-control",
    "retry-after",
    "dpop-nonce",
    "set-cookie",
];

pub fn agent(connect_timeout: Duration, timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_connect(Some(connect_timeout))
        .timeout_global(Some(timeout))
        .user_agent(concat!("mcpscope/", env!("CARGO_PKG_VERSION")))
        .build()
        .into()
}

/// A response as the flow and the record need it.
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// Makes one request; `Err` when no HTTP answer came.
pub fn call(
    agent: &ureq::Agent,
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: Option<&[u8]>,
) -> Result<Answer, String> {
    let result = match (method, body) {
        ("POST", b) => {
            let mut req = agent.post(url);
            for (k, v) in headers {
                req = req.header(k.as_str(), v.as_str());
            }
            req.send(b.unwrap_or_default())
        }
        _ => {
            let mut req = agent.get(url);
            for (k, v) in headers {
                req = req.header(k.as_str(), v.as_str());
            }
            req.call()
        }
    };
    let resp = result.map_err(|e| describe(&e))?;
    let status = resp.status().as_u16();
    let headers = crate::transport::http::joined_headers(&resp, RELEVANT);
    let mut body = Vec::new();
    resp.into_body()
        .into_reader()
        .take(MAX_BODY)
        .read_to_end(&mut body)
        .map_err(|e| format!("reading the answer failed: {e}"))?;
    Ok(Answer { status, headers, body })
}

/// What went wrong with a request that got no HTTP answer, for a person.
pub(crate) fn describe(e: &ureq::Error) -> String {
    match e {
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => "connection refused".into(),
        ureq::Error::Timeout(t) => format!("timed out ({t:?})"),
        ureq::Error::HostNotFound => "host not found".into(),
        ureq::Error::BadUri(u) => format!("not a usable URL: {u}"),
        other => other.to_string(),
    }
}

/// The recordable form of a request body.
fn request_record(body: &Body, now: u64) -> (Option<Value>, Vec<DecodedJwt>) {
    match body {
        Body::Empty => (None, Vec::new()),
        Body::Form(f) => (Some(mask::form(f)), mask::jwts_in_form(f, now)),
        Body::Json(v) => (Some(mask::json(v)), mask::jwts_in_json(v, now)),
    }
}

/// The recordable form of a response body: JSON masked, anything else as
/// (shortened) text with secret form parameters masked. The body of a
/// redirect is not kept: it repeats the `Location`, code and all.
pub fn response_record(status: u16, body: &[u8], now: u64) -> (Option<Value>, Vec<DecodedJwt>) {
    if body.is_empty() {
        return (None, Vec::new());
    }
    if (300..400).contains(&status) {
        return (
            Some(Value::String(format!(
                "({} bytes not kept: a redirect's page repeats its Location)",
                body.len()
            ))),
            Vec::new(),
        );
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(v) => (Some(mask::json(&v)), mask::jwts_in_json(&v, now)),
        Err(_) => (
            Some(Value::String(crate::text::shorten(
                &mask::text(&String::from_utf8_lossy(body)),
                4096,
            ))),
            Vec::new(),
        ),
    }
}

/// Performs a request of the flow: the input for the flow and the record.
pub fn perform(agent: &ureq::Agent, req: &Request, now: u64) -> (Input, AuthExchange) {
    let bytes = match &req.body {
        Body::Empty => None,
        Body::Form(f) => Some(
            url::form_urlencoded::Serializer::new(String::new())
                .extend_pairs(f.iter())
                .finish()
                .into_bytes(),
        ),
        Body::Json(v) => Some(serde_json::to_vec(v).unwrap_or_default()),
    };
    let (request_body, mut jwts) = request_record(&req.body, now);
    // The DPoP proof is masked in the headers, but what it claims (method,
    // URL, nonce, public key) is what a person debugging DPoP reads.
    jwts.extend(
        req.headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(crate::protocol::auth::dpop::HEADER))
            .filter_map(|(_, v)| crate::protocol::auth::jwt::decode("DPoP proof", v, now)),
    );
    let started = Instant::now();
    let result = call(agent, req.method.as_str(), &req.url, &req.headers, bytes.as_deref());
    let mut x = AuthExchange {
        method: req.method.as_str().to_owned(),
        url: mask::url(&req.url),
        sent: mask::headers(&req.headers),
        request_body,
        elapsed: started.elapsed(),
        ..AuthExchange::new(req.step, req.purpose.clone())
    };
    match result {
        Ok(a) => {
            let (body, found) = response_record(a.status, &a.body, now);
            jwts.extend(found);
            x.status = Some(a.status);
            x.received = mask_received(&a.headers);
            x.response_body = body;
            x.jwts = jwts;
            (
                Input::Response {
                    status: a.status,
                    headers: a.headers,
                    body: a.body,
                },
                x,
            )
        }
        Err(e) => {
            x.jwts = jwts;
            x.error = Some(e.clone());
            (Input::Unreachable(e), x)
        }
    }
}

/// Response headers for the record: credentials masked, a `Location`'s secrets masked.
pub fn mask_received(h: &[(String, String)]) -> Vec<(String, String)> {
    mask::headers(h)
        .into_iter()
        .map(|(k, v)| {
            if k.eq_ignore_ascii_case("location") {
                (k, mask::url(&v))
            } else {
                (k, v)
            }
        })
        .collect()
}

/// A record for a step that is not an HTTP exchange of mcpscope's.
pub fn fact(step: Step, text: impl Into<String>) -> AuthExchange {
    AuthExchange::new(step, text)
}
