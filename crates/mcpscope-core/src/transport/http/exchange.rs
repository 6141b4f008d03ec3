//! One HTTP request and its answer as the link makes them: the request's
//! headers (real for the wire, masked for the record), redirects followed
//! only where a careful client would, failures in words a person can act
//! on, and bodies read within the memory the session may hold.

use super::*;

/// The most request head ureq writes (its default output buffer).
pub(super) const SENDABLE_HEAD: usize = 128 * 1024;

/// The headers of a request: real values for the wire, masked ones for the record.
pub(super) struct Headers {
    pub(super) wire: Vec<(String, String)>,
    /// The record's value where it is not the wire's (the user's headers
    /// and the credentials, masked), by place in `wire`. The headers mcpscope
    /// adds itself are shown as sent, and not copied until recorded.
    masked: Vec<(usize, String)>,
    /// The Authorization header is the authorizer's token, not the user's.
    pub(super) from_authorizer: bool,
}

impl Headers {
    /// The headers of a `method` request to `url`: the user's, and the
    /// authorizer's token (with a DPoP proof of this very request when the
    /// token is bound to a key).
    pub(super) fn new(target: &HttpTarget, method: &str, url: &str) -> Self {
        let mut h = Headers {
            // The user's, the credentials, and what a POST adds (a few).
            wire: Vec::with_capacity(target.headers.len() + 8),
            masked: Vec::new(),
            from_authorizer: false,
        };
        for (k, v) in &target.headers {
            h.add_masked(k.clone(), v.clone(), mask_value(v));
        }
        // OAuth: the token the authorizer obtained (transport::auth), unless
        // the user gave an Authorization header of their own.
        if let Some(c) = target.bearer.credential()
            && !target
                .headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
        {
            let scheme = if c.dpop.is_some() { "DPoP" } else { "Bearer" };
            let value = format!("{scheme} {}", c.token);
            let shown = mask_value(&value);
            h.add_masked("Authorization".into(), value, shown);
            h.from_authorizer = true;
            if let Some(key) = &c.dpop {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs());
                let jti = dpop::random_jti();
                // A proof that cannot be made leaves the request without one:
                // the server's refusal then says what is missing.
                if let Ok(proof) = key.proof(method, url, now, &jti, Some(&c.token), c.nonce.as_deref()) {
                    // A proof is good for this one request only, but still shown masked.
                    h.add_masked(dpop::HEADER.into(), proof, "****".into());
                }
            }
        }
        h
    }

    /// Headers sent as given, with no credential in them (mcpscope's own).
    #[cfg(test)]
    pub(super) fn plain(wire: Vec<(String, String)>) -> Self {
        Headers {
            wire,
            masked: Vec::new(),
            from_authorizer: false,
        }
    }

    fn add_masked(&mut self, k: String, v: String, shown: String) {
        if shown != v {
            self.masked.push((self.wire.len(), shown));
        }
        self.wire.push((k, v));
    }

    pub(super) fn add(&mut self, k: &str, v: &str) {
        self.wire.push((k.into(), v.into()));
    }

    pub(super) fn session(&mut self, session_id: &Option<String>, protocol_version: &Option<String>) {
        if let Some(s) = session_id {
            self.add("Mcp-Session-Id", s);
        }
        if let Some(v) = protocol_version {
            self.add("MCP-Protocol-Version", v);
        }
    }

    /// The headers as the record shows them (secrets masked).
    pub(super) fn shown(&self) -> Vec<(String, String)> {
        let mut shown = self.wire.clone();
        for (i, v) in &self.masked {
            shown[*i].1.clone_from(v);
        }
        shown
    }

    /// The record of a request with these headers.
    pub(super) fn info(&self, method: &str, url: &str) -> HttpInfo {
        HttpInfo {
            sent: self.shown(),
            ..Self::bare_info(method, url)
        }
    }

    /// The record of a request with these headers, once they are sent (the
    /// headers move into it, masked: one POST per step shows them once).
    pub(super) fn into_info(self, method: &str, url: &str) -> HttpInfo {
        let mut sent = self.wire;
        for (i, v) in self.masked {
            sent[i].1 = v;
        }
        HttpInfo {
            sent,
            ..Self::bare_info(method, url)
        }
    }

    fn bare_info(method: &str, url: &str) -> HttpInfo {
        HttpInfo {
            method: method.into(),
            url: mask_url(url),
            ..HttpInfo::default()
        }
    }
}

pub(crate) type Response = ureq::http::Response<ureq::Body>;

pub(super) fn relevant_headers(resp: &Response) -> Vec<(String, String)> {
    let mut headers = joined_headers(resp, RELEVANT);
    for (name, v) in &mut headers {
        // A Location can carry credentials too.
        if name == "location" {
            *v = mask_url(v);
        }
    }
    headers
}

/// The named response headers present, each once: a header sent several
/// times is one comma-separated list (RFC 9110 §5.3), as WWW-Authenticate
/// often is. Values as received (lossy UTF-8), unmasked.
pub(crate) fn joined_headers(resp: &Response, names: &[&str]) -> Vec<(String, String)> {
    // One pass over what came (a name looked up per wanted header hashed
    // each and allocated on every answer).
    let mut found: Vec<(usize, String)> = Vec::new();
    for (name, value) in resp.headers() {
        let Some(i) = names.iter().position(|n| n.eq_ignore_ascii_case(name.as_str())) else {
            continue;
        };
        let value = String::from_utf8_lossy(value.as_bytes());
        match found.iter_mut().find(|(j, _)| *j == i) {
            Some((_, joined)) => {
                joined.push_str(", ");
                joined.push_str(&value);
            }
            None => found.push((i, value.into_owned())),
        }
    }
    found.sort_by_key(|(i, _)| *i);
    found.into_iter().map(|(i, v)| (names[i].to_owned(), v)).collect()
}

/// Whether a body is (or holds) a JSON-RPC message, rather than, say, an
/// OAuth error object (RFC 6750 `{"error": "invalid_token"}`).
pub(super) fn is_jsonrpc(bytes: &[u8]) -> bool {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(o)) => o.contains_key("jsonrpc"),
        Ok(Value::Array(a)) => a.iter().any(|m| m.get("jsonrpc").is_some()),
        _ => false,
    }
}

pub(super) fn content_type(resp: &Response) -> String {
    resp.headers()
        .get("content-type")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).to_ascii_lowercase())
        .unwrap_or_default()
}

pub(super) fn is_sse(ct: &str) -> bool {
    ct.starts_with("text/event-stream")
}

pub(super) fn is_json(ct: &str) -> bool {
    let base = ct.split(';').next().unwrap_or("").trim();
    base == "application/json" || base.ends_with("+json")
}

pub(super) fn status_text(status: u16) -> String {
    let reason = ureq::http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    format!("{status} {reason}").trim_end().to_owned()
}

/// `host:port` of a URL, without userinfo, for messages.
pub(super) fn host_of(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => match (u.host_str(), u.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_owned(),
            _ => mask_url(url),
        },
        Err(_) => mask_url(url),
    }
}

/// Whether two URLs have the same origin (scheme, host and port).
pub(super) fn same_origin(a: &url::Url, b: &url::Url) -> bool {
    a.origin() == b.origin()
}

pub(super) fn origin_text(u: &url::Url) -> String {
    u.origin().ascii_serialization()
}

/// A transport failure in words a person can act on.
pub(super) fn describe_error(e: &ureq::Error, url: &str, headers: &Headers) -> String {
    let host = host_of(url);
    let head: usize = headers.wire.iter().map(|(k, v)| k.len() + v.len() + 4).sum();
    // ureq writes the request head into a fixed buffer: a head that does not
    // fit is refused before a byte is sent, so the server is not to blame.
    if matches!(e, ureq::Error::Protocol(_)) && head > SENDABLE_HEAD {
        let (name, biggest) = headers
            .wire
            .iter()
            .map(|(k, v)| (k.as_str(), v.len()))
            .max_by_key(|&(_, n)| n)
            .unwrap_or_default();
        let what = if name.eq_ignore_ascii_case("authorization") && headers.from_authorizer {
            "the access token the authorization server issued".to_owned()
        } else {
            format!("the {name} header")
        };
        return format!(
            "mcpscope could not send the request to {host}: its headers are {} ({what} alone is {}), more \
             than mcpscope's HTTP client sends ({}); servers commonly refuse headers over 8-16 KiB anyway",
            crate::text::human_bytes(head as u64),
            crate::text::human_bytes(biggest as u64),
            crate::text::human_bytes(SENDABLE_HEAD as u64)
        );
    }
    match e {
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
            format!("connection refused: nothing is listening at {host} (is the server running, on this port?)")
        }
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionReset => {
            format!("the connection to {host} was reset by the server")
        }
        // What the plain client found not to be HTTP (see `plain::not_http`).
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::InvalidData => {
            format!("{host} did not answer with valid HTTP: {io}")
        }
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            format!("{host} closed the connection without an HTTP response")
        }
        ureq::Error::Timeout(t) => format!("timed out talking to {host} ({t:?})"),
        ureq::Error::HostNotFound => format!("host not found: {host}"),
        ureq::Error::BadUri(_) => format!("not a usable URL: {}", mask_url(url)),
        ureq::Error::Protocol(p) => format!("{host} did not answer with valid HTTP: {p}"),
        other => format!("HTTP request to {host} failed: {}", mask_url(&other.to_string())),
    }
}

/// How a body relates to the request it should answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum Answer {
    #[default]
    No,
    /// The response to the request.
    Direct,
    /// A JSON array (a batch) holding the response.
    InBatch,
}

/// Whether a JSON body (or SSE data) is the response to `id`.
pub(super) fn answers(bytes: &[u8], id: &RequestId) -> Answer {
    use reply_shape::{Body, Reply};
    let one = |r: &Reply| r.answers && r.id.as_ref().and_then(RequestId::from_json).as_ref() == Some(id);
    match reply_shape::read(bytes) {
        Some(Body::One(r)) if one(&r) => Answer::Direct,
        Some(Body::Batch(items)) if items.iter().flatten().any(one) => Answer::InBatch,
        _ => Answer::No,
    }
}

pub(super) fn batch_error(id: &RequestId) -> String {
    format!(
        "the server answered request #{id} inside a JSON-RPC batch (a JSON array); MCP has had no batches \
         since 2025-06-18 (only 2025-03-26 allowed them), so the answer is kept as it came but not taken as \
         the response"
    )
}

pub(super) fn send(ctx: &Ctx, msg: HttpMsg) {
    let _ = ctx.tx.send(Input::Link(msg));
}

pub(super) fn http(ctx: &Ctx, info: HttpInfo) {
    send(
        ctx,
        HttpMsg::Http {
            info,
            at: Instant::now(),
            worker: None,
            new_session: None,
            whole: None,
        },
    );
}

pub(super) fn received(ctx: &Ctx, bytes: Vec<u8>, ending: LineEnding) {
    ctx.budget.acquire(bytes.len());
    let _ = ctx.tx.send(Input::Received {
        line: RawLine { bytes, ending },
        at: Instant::now(),
    });
}

/// Makes one HTTP request with these headers.
pub(super) fn call(
    ctx: &Ctx,
    method: &str,
    url: &str,
    headers: &Headers,
    body: Option<&[u8]>,
) -> Result<Response, ureq::Error> {
    macro_rules! with_headers {
        ($req:expr) => {{
            let mut req = $req;
            for (k, v) in &headers.wire {
                req = req.header(k.as_str(), v.as_str());
            }
            req
        }};
    }
    match method {
        "POST" => match (ctx.timeout, &ctx.inline_agent) {
            // Each phase that waits on the server, not `timeout_global`:
            // with that, ureq looks the host up on a thread of its own for
            // every request. (The phases can add up: the watcher of
            // `http::watch_inline` ends a POST that outlives its deadline.)
            (Some(t), Some(agent)) => {
                let connect = ctx.target.connect_timeout.min(t);
                if let Some(plain) = &ctx.plain
                    && let Some(answer) =
                        plain.post(url, &headers.wire, body.unwrap_or_default(), t, connect, ctx.max_held)
                {
                    return answer;
                }
                with_headers!(agent.post(url))
                    .config()
                    .timeout_connect(Some(connect))
                    .timeout_send_request(Some(t))
                    .timeout_send_body(Some(t))
                    .timeout_recv_response(Some(t))
                    .timeout_recv_body(Some(t))
                    .build()
                    .send(body.unwrap_or_default())
            }
            _ => with_headers!(ctx.agent.post(url)).send(body.unwrap_or_default()),
        },
        "DELETE" => with_headers!(ctx.agent.delete(url)).call(),
        _ => with_headers!(ctx.agent.get(url)).call(),
    }
}

/// One exchange, with redirects handled as a careful client should: every
/// redirect is recorded; one that stays on the same origin and keeps the
/// method (307/308, or any for GET) is followed; one to another origin (your
/// headers would go there) or one that would turn a POST into a GET
/// (301/302/303) is not, and the error says why and where it pointed.
///
/// Returns the final response and the URL that gave it.
pub(super) fn exchange(
    ctx: &Ctx,
    method: &str,
    url: &str,
    headers: &Headers,
    body: Option<&[u8]>,
    request_id: Option<&RequestId>,
) -> Result<(Response, String), String> {
    let mut url = url.to_owned();
    for _ in 0..=MAX_REDIRECTS {
        let resp = call(ctx, method, &url, headers, body).map_err(|e| describe_error(&e, &url, headers))?;
        // RFC 9449 §9: any answer may carry the nonce the next proofs must name.
        if let Some(nonce) = resp.headers().get(dpop::NONCE_HEADER)
            && let Ok(nonce) = nonce.to_str()
        {
            ctx.target.bearer.set_nonce(nonce.to_owned());
        }
        let status = resp.status().as_u16();
        let location = resp
            .headers()
            .get("location")
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        let (true, Some(location)) = ((300..400).contains(&status) && status != 304, location) else {
            return Ok((resp, url));
        };
        let info = HttpInfo {
            status: Some(status),
            received: relevant_headers(&resp),
            request_id: request_id.cloned(),
            ..headers.info(method, &url)
        };
        let from = url::Url::parse(&url).map_err(|e| format!("not a usable URL: {e}"))?;
        let to = match from.join(&location) {
            Ok(t) => t,
            Err(e) => {
                http(
                    ctx,
                    HttpInfo {
                        text: format!("redirected ({}) to {location:?}", status_text(status)),
                        ..info
                    },
                );
                return Err(format!(
                    "the server redirected ({}) to {:?}, which is not a usable URL: {e}",
                    status_text(status),
                    mask_url(&location)
                ));
            }
        };
        let shown_to = mask_url(to.as_str());
        http(
            ctx,
            HttpInfo {
                text: format!("redirected ({}) to {shown_to}", status_text(status)),
                ..info
            },
        );
        if !same_origin(&from, &to) {
            return Err(format!(
                "the server redirected {method} ({}) to another origin, {shown_to}: not followed, because your \
                 headers (and the message) would go to {}; if you trust it, use that URL directly",
                status_text(status),
                origin_text(&to)
            ));
        }
        if method != "GET" && matches!(status, 301..=303) {
            return Err(format!(
                "the server moved the endpoint ({}) to {shown_to}: a {method} is not re-sent as GET, as that \
                 redirect would demand; use that URL instead",
                status_text(status)
            ));
        }
        url = to.to_string();
    }
    Err(format!("more than {MAX_REDIRECTS} redirects: gave up"))
}

/// Reads a whole body, holding at most `ctx.max_held` bytes: a longer body is
/// handed over in pieces as it is read (every byte recorded), and `Ok(None)`
/// says so. `Ok(Some(bytes))` is a body that fit. `expected`: the length
/// the answer said, if it said one (room made for it at once).
pub(super) fn read_body(ctx: &Ctx, reader: &mut impl Read, expected: Option<u64>) -> std::io::Result<Option<Vec<u8>>> {
    let room = expected.map_or(0, |n| n.min(ctx.max_held as u64) as usize);
    let mut bytes = Vec::with_capacity(room);
    let limit = ctx.max_held as u64;
    reader.by_ref().take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 <= limit {
        return Ok(Some(bytes));
    }
    let mut rest = bytes.split_off(ctx.max_held);
    received(ctx, bytes, LineEnding::Cut);
    loop {
        let have = rest.len();
        reader
            .by_ref()
            .take((ctx.max_held - have.min(ctx.max_held)) as u64 + 1)
            .read_to_end(&mut rest)?;
        if rest.len() <= ctx.max_held {
            received(ctx, rest, LineEnding::Lf);
            return Ok(None);
        }
        let next = rest.split_off(ctx.max_held);
        received(ctx, rest, LineEnding::Cut);
        rest = next;
    }
}
