//! One POST: the message goes out with the session's headers, and its answer
//! (a JSON body, an SSE stream, an error page, an HTTP refusal) comes back
//! as events, every byte kept.

use super::*;

pub(super) fn post(ctx: Ctx, job: PostJob) {
    if let Some(answer) = post_head(&ctx, job) {
        answer.read(&ctx, Head::First);
    }
}

/// A POST on the session's own thread, for an owner that waits on it anyway
/// (the blocking client): the request and the answer's head here, and a
/// whole body whose length is known to fit; anything that may go on (an SSE
/// stream, a body of unknown length) is read on a worker, as
/// [`post`] would, so the session can answer what the server asks meanwhile.
///
/// True when the POST is over (its answer read, or failed) on return.
pub(super) fn post_inline(ctx: Ctx, job: PostJob, workers: &workers::Workers) -> bool {
    let Some(answer) = post_head(&ctx, job) else {
        return true;
    };
    if answer.whole_and_small(ctx.max_held) {
        // Nothing takes the head before this returns: it may wait for the body.
        answer.read(&ctx, Head::WithTheBody);
        return true;
    }
    let (worker, info) = (answer.worker, answer.base.clone());
    let on_worker = ctx.clone();
    if let Err(e) = workers.run(move || answer.read(&on_worker, Head::First)) {
        let info = HttpInfo {
            error: Some(format!("could not start a thread to read the answer: {e}")),
            ..info
        };
        send(
            &ctx,
            HttpMsg::Failed {
                info,
                at: Instant::now(),
                expired_session: false,
            },
        );
        send(&ctx, HttpMsg::WorkerDone { worker });
        return true;
    }
    false
}

/// When the answer's head (which opens the ordering gate) is handed on.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Head {
    /// Before its body is read: the next POST need not wait for the body.
    First,
    /// With its whole body, when nothing could take the head sooner (a POST
    /// made on the session's thread). The head's record is then moved into
    /// it, not copied, unless a failure follows and needs it too.
    WithTheBody,
}

/// A POST answered, its body not read yet.
pub(super) struct PostAnswer {
    worker: u64,
    out: Outgoing,
    base: HttpInfo,
    status: u16,
    content_type: String,
    received_headers: Vec<(String, String)>,
    session_header: Option<String>,
    answered_by: String,
    session_id: Option<String>,
    protocol_version: Option<String>,
    is_initialize: bool,
    body: ureq::Body,
}

/// Sends the POST and waits for its answer's head; `None` when it failed
/// (said, and the worker's slot given back).
fn post_head(ctx: &Ctx, job: PostJob) -> Option<PostAnswer> {
    let PostJob {
        worker,
        url,
        session_id,
        protocol_version,
        out,
        is_initialize,
    } = job;
    let (headers, protocol_version) = post_headers(&ctx.target, &url, &out, &session_id, protocol_version);
    let sent = exchange(ctx, "POST", &url, &headers, Some(&out.body), out.request_id.as_ref());
    let mut base = HttpInfo {
        request_id: out.request_id.clone(),
        ..headers.into_info("POST", &url)
    };
    let (resp, answered_by) = match sent {
        Ok(r) => r,
        Err(error) => {
            send(
                ctx,
                HttpMsg::Failed {
                    info: HttpInfo {
                        error: Some(error),
                        ..base
                    },
                    at: Instant::now(),
                    expired_session: false,
                },
            );
            send(ctx, HttpMsg::WorkerDone { worker });
            return None;
        }
    };
    if answered_by != url {
        base.url = mask_url(&answered_by);
    }
    let session_header = resp
        .headers()
        .get("mcp-session-id")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    Some(PostAnswer {
        worker,
        status: resp.status().as_u16(),
        content_type: content_type(&resp),
        received_headers: relevant_headers(&resp),
        session_header,
        answered_by,
        session_id,
        protocol_version,
        is_initialize,
        out,
        base,
        body: resp.into_body(),
    })
}

impl PostAnswer {
    fn sse(&self) -> bool {
        (200..300).contains(&self.status) && is_sse(&self.content_type)
    }

    /// Whether the body is one piece of a length said in advance, small
    /// enough to hold (an accepted notification has none to speak of).
    fn whole_and_small(&self, max_held: usize) -> bool {
        !self.sse()
            && (self.status == 202
                || self.status == 204
                || self.body.content_length().is_some_and(|n| n <= max_held as u64))
    }

    /// Reads the answer to its end and says what it was.
    fn read(self, ctx: &Ctx, when: Head) {
        let sse = self.sse();
        let whole = self
            .whole_and_small(ctx.max_held)
            .then(|| self.body.content_length().unwrap_or(0));
        let PostAnswer {
            worker,
            out,
            base,
            status,
            content_type: ct,
            received_headers,
            session_header,
            answered_by,
            session_id,
            protocol_version,
            is_initialize,
            body,
        } = self;
        let what = out.method.as_deref().unwrap_or("message");
        let failed = |error: String, expired: bool| HttpMsg::Failed {
            info: HttpInfo {
                status: Some(status),
                received: received_headers.clone(),
                error: Some(error),
                ..base.clone()
            },
            at: Instant::now(),
            expired_session: expired,
        };
        let new_session = (is_initialize && (200..300).contains(&status)).then_some(session_header);
        // The answer's head, which opens the ordering gate (once: one or the other below).
        let head = |text: String, at: Instant| HttpMsg::Http {
            info: HttpInfo {
                status: Some(status),
                received: received_headers.clone(),
                text,
                ..base.clone()
            },
            at,
            worker: Some(worker),
            new_session: new_session.clone(),
            whole,
        };
        if sse {
            send(
                ctx,
                head(format!("{what}: the answer comes as an SSE stream"), Instant::now()),
            );
            let stream = Stream {
                answered_by: &answered_by,
                session_id: &session_id,
                protocol_version: &protocol_version,
                what,
            };
            after_stream(ctx, body, &out, &stream, &base, &failed);
            send(ctx, HttpMsg::WorkerDone { worker });
            return;
        }

        // A whole body: JSON, an error page, or anything else. Every byte is kept.
        let at = Instant::now();
        let accepted = status == 202 || status == 204;
        let mut text = match status {
            202 | 204 => format!("{what} accepted"),
            200..=299 => String::new(),
            _ => status_text(status),
        };
        let mut reader = body.into_reader();
        if accepted {
            // A 202 body is not a message (Python's HTTP+SSE server says "Accepted").
            let mut bytes = Vec::new();
            let _ = (&mut reader).take(64 * 1024).read_to_end(&mut bytes);
            if !bytes.is_empty() {
                text.push_str(&format!(
                    " (body: {})",
                    crate::text::shorten(&String::from_utf8_lossy(&bytes), 200)
                ));
            }
        }
        let unsaid = match when {
            Head::First => {
                send(ctx, head(text, at));
                None
            }
            Head::WithTheBody => Some(text),
        };
        let read = if accepted {
            Ok(Some(Vec::new()))
        } else {
            read_body(ctx, &mut reader, whole)
        };
        let bytes = match read {
            Ok(Some(bytes)) => bytes,
            Ok(None) | Err(_) => {
                if let Some(text) = unsaid {
                    send(ctx, head(text, at));
                }
                let why = match read {
                    Err(e) => format!("reading the response body failed: {e}"),
                    _ => format!(
                        "the response body is longer than the {} MiB a message may hold in memory; it is \
                         recorded in pieces and not taken as the response",
                        ctx.max_held / (1024 * 1024)
                    ),
                };
                send(ctx, failed(why, false));
                send(ctx, HttpMsg::WorkerDone { worker });
                return;
            }
        };
        // A 401/403 body is usually an OAuth error object, not a JSON-RPC
        // message: kept with the exchange, not passed on as a malformed frame.
        let auth_refusal = (status == 401 || status == 403) && !bytes.is_empty() && !is_jsonrpc(&bytes);
        let facts = BodyFacts {
            status,
            content_type: &ct,
            request_id: out.request_id.as_ref(),
            streamable: ctx.target.kind == HttpKind::StreamableHttp,
            session_id: session_id.as_deref(),
            body: &bytes,
            www_authenticate: received_headers
                .iter()
                .find(|(k, _)| k == "www-authenticate")
                .map(|(_, w)| w.as_str()),
            // (`answered_by`, masked.)
            endpoint: &base.url,
        };
        // Judged before the body is handed on (not copied), said after it.
        let verdict = judge_body(&facts);
        let message = (!bytes.is_empty() && !accepted && !auth_refusal).then_some(bytes);
        match (unsaid, verdict) {
            // Nothing needs the head's record after it: moved into it.
            (Some(text), None) => {
                let info = HttpInfo {
                    status: Some(status),
                    received: received_headers,
                    text,
                    ..base
                };
                send(
                    ctx,
                    HttpMsg::Http {
                        info,
                        at,
                        worker: Some(worker),
                        new_session,
                        whole,
                    },
                );
                if let Some(bytes) = message {
                    received(ctx, bytes, LineEnding::Lf);
                }
            }
            (unsaid, verdict) => {
                if let Some(text) = unsaid {
                    send(ctx, head(text, at));
                }
                if let Some(bytes) = message {
                    received(ctx, bytes, LineEnding::Lf);
                }
                if let Some((e, expired)) = verdict {
                    send(ctx, failed(e, expired));
                }
            }
        }
        send(ctx, HttpMsg::WorkerDone { worker });
    }
}

/// What a whole (not streamed) answer to a POST was, as far as deciding
/// goes.
pub(super) struct BodyFacts<'a> {
    pub status: u16,
    pub content_type: &'a str,
    /// The request the POST carried (none for a notification or an answer).
    pub request_id: Option<&'a RequestId>,
    /// Streamable HTTP (an HTTP+SSE message endpoint answers 202 by design).
    pub streamable: bool,
    pub session_id: Option<&'a str>,
    pub body: &'a [u8],
    pub www_authenticate: Option<&'a str>,
    /// The URL that answered, masked.
    pub endpoint: &'a str,
}

/// Why the POST did not give its request an answer, if it did not (the
/// failure to report, and whether the session expired); `None` when the
/// body is the answer, or nothing was owed.
pub(super) fn judge_body(f: &BodyFacts) -> Option<(String, bool)> {
    let ok = (200..300).contains(&f.status);
    let accepted = f.status == 202 || f.status == 204;
    let auth_refusal = (f.status == 401 || f.status == 403) && !f.body.is_empty() && !is_jsonrpc(f.body);
    if accepted {
        let id = f.request_id.filter(|_| f.streamable)?;
        return Some((
            format!(
                "the server accepted request #{id} with {} but sent no response to it",
                f.status
            ),
            false,
        ));
    }
    if f.status == 404 && f.session_id.is_some() {
        let sid = f.session_id.unwrap_or_default();
        return Some((
            format!("the server forgot session {sid} (HTTP 404): start a new session"),
            true,
        ));
    }
    if !ok {
        // A JSON-RPC error in the body of an HTTP error (400 for a bad
        // request) is the answer, already passed on; the status is in the
        // exchange's record. Not a second, transport-level failure.
        if f.request_id
            .is_some_and(|id| matches!(answers(f.body, id), Answer::Direct))
        {
            return None;
        }
        let mut e = format!("the server answered HTTP {}", status_text(f.status));
        if f.content_type.contains("html") {
            e.push_str(" with an HTML page");
        }
        if f.status == 401 || f.status == 403 {
            match f.www_authenticate {
                Some(w) => e.push_str(&format!(" (WWW-Authenticate: {w})")),
                None => e.push_str(" (check the Authorization or other --header values)"),
            }
        }
        if auth_refusal {
            e.push_str(&format!(
                " (body: {})",
                crate::text::shorten(&String::from_utf8_lossy(f.body), 4096)
            ));
        }
        if f.status == 405 || f.status == 404 {
            e.push_str(&format!(
                " (is {} the MCP endpoint? for an HTTP+SSE server use --transport sse)",
                f.endpoint
            ));
        }
        return Some((e, false));
    }
    let id = f.request_id?;
    if !is_json(f.content_type) {
        let shown = if f.content_type.is_empty() {
            "none"
        } else {
            f.content_type
        };
        let mut e = format!("the response has Content-Type {shown}, not application/json or text/event-stream");
        if f.content_type.contains("html") {
            e.push_str(" (an HTML page: is this the MCP endpoint?)");
        }
        return Some((e, false));
    }
    match answers(f.body, id) {
        Answer::Direct => None,
        Answer::InBatch => Some((batch_error(id), false)),
        Answer::No => {
            let e = if f.body.is_empty() {
                "the response body is empty".to_owned()
            } else if serde_json::from_slice::<Value>(f.body).is_err() {
                "the response body is not valid JSON".to_owned()
            } else {
                format!("the response body is not the response to request #{id}")
            };
            Some((e, false))
        }
    }
}

/// The headers of a POST carrying `out`: the user's and the authorizer's,
/// the session's, and in the modern era the standard ones from the message
/// itself, its version header equal to the request's `_meta` (whatever the
/// session negotiated). The protocol version sent, for a resumed stream.
fn post_headers(
    target: &HttpTarget,
    url: &str,
    out: &Outgoing,
    session_id: &Option<String>,
    protocol_version: Option<String>,
) -> (Headers, Option<String>) {
    let mut headers = Headers::new(target, "POST", url);
    headers.add("Content-Type", "application/json");
    headers.add("Accept", ACCEPT_POST);
    let modern = crate::protocol::http_headers::standard(&out.body);
    let protocol_version = match modern.iter().find(|(k, _)| k == "MCP-Protocol-Version") {
        Some((_, v)) => Some(v.clone()),
        None => protocol_version,
    };
    headers.session(session_id, &protocol_version);
    for (k, v) in modern.iter().filter(|(k, _)| k != "MCP-Protocol-Version") {
        headers.add(k, v);
    }
    for (k, v) in &out.headers {
        headers.add(k, v);
    }
    (headers, protocol_version)
}

/// Where an SSE answer came from, for resuming it.
struct Stream<'a> {
    answered_by: &'a str,
    session_id: &'a Option<String>,
    protocol_version: &'a Option<String>,
    /// The method it answers, for the notes.
    what: &'a str,
}

/// Reads an SSE answer to its end; a request it did not answer is resumed
/// (`Last-Event-ID`), a batch in it refused, a broken stream noted.
fn after_stream(
    ctx: &Ctx,
    body: ureq::Body,
    out: &Outgoing,
    stream: &Stream,
    base: &HttpInfo,
    failed: &dyn Fn(String, bool) -> HttpMsg,
) {
    let Stream {
        answered_by,
        session_id,
        protocol_version,
        what,
    } = *stream;
    let mut reader = SseReader::with_limit(BufReader::new(body.into_reader()), ctx.max_held);
    let outcome = read_sse(ctx, &mut reader, out.request_id.as_ref());
    let closing = ctx.closing.load(Ordering::SeqCst);
    match (&out.request_id, outcome.answer) {
        (Some(id), Answer::InBatch) => send(ctx, failed(batch_error(id), false)),
        (Some(id), Answer::No) if !closing => {
            resume(
                ctx,
                answered_by,
                id,
                outcome,
                session_id,
                protocol_version,
                base.clone(),
            );
        }
        (Some(_), Answer::No) => {}
        _ => {
            if let Some(e) = outcome.error
                && !closing
            {
                sse_note(ctx, answered_by, format!("the stream answering {what} broke"), Some(e));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts<'a>(status: u16, ct: &'a str, body: &'a [u8], id: Option<&'a RequestId>) -> BodyFacts<'a> {
        BodyFacts {
            status,
            content_type: ct,
            request_id: id,
            streamable: true,
            session_id: None,
            body,
            www_authenticate: None,
            endpoint: "http://127.0.0.1:9/mcp",
        }
    }

    fn why(f: &BodyFacts) -> String {
        judge_body(f).map(|(e, _)| e).unwrap_or_default()
    }

    #[test]
    fn the_answer_in_a_json_body_is_no_failure() {
        let id = RequestId::Number(1);
        let ok = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
        assert_eq!(judge_body(&facts(200, "application/json", ok, Some(&id))), None);
        // A JSON-RPC error in an HTTP 400 is the answer too.
        let err = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"bad"}}"#;
        assert_eq!(judge_body(&facts(400, "application/json", err, Some(&id))), None);
        // A notification accepted with 202 owes nothing.
        assert_eq!(judge_body(&facts(202, "", b"", None)), None);
    }

    #[test]
    fn every_way_a_body_is_not_the_answer_is_named() {
        let id = RequestId::Number(7);
        assert!(why(&facts(202, "", b"", Some(&id))).contains("accepted request #7 with 202"));
        let sse_endpoint = BodyFacts {
            streamable: false,
            ..facts(202, "", b"", Some(&id))
        };
        assert_eq!(judge_body(&sse_endpoint), None, "HTTP+SSE answers on its stream");
        assert!(why(&facts(200, "text/html", b"<html>", Some(&id))).contains("an HTML page"));
        assert_eq!(
            why(&facts(200, "application/json", b"", Some(&id))),
            "the response body is empty"
        );
        assert!(why(&facts(200, "application/json", b"{", Some(&id))).contains("not valid JSON"));
        let other = br#"{"jsonrpc":"2.0","id":8,"result":{}}"#;
        assert!(why(&facts(200, "application/json", other, Some(&id))).contains("not the response to request #7"));
        let batch = br#"[{"jsonrpc":"2.0","id":7,"result":{}}]"#;
        assert!(why(&facts(200, "application/json", batch, Some(&id))).contains("batch"));
    }

    #[test]
    fn http_refusals_say_what_to_check() {
        let id = RequestId::Number(1);
        let expired = BodyFacts {
            session_id: Some("abc"),
            ..facts(404, "text/plain", b"gone", Some(&id))
        };
        let (e, is_expired) = judge_body(&expired).unwrap();
        assert!(e.contains("forgot session abc") && is_expired, "{e}");
        let e = why(&facts(404, "text/plain", b"nope", Some(&id)));
        assert!(e.contains("is http://127.0.0.1:9/mcp the MCP endpoint"), "{e}");
        let unauthorized = BodyFacts {
            www_authenticate: Some("Bearer resource_metadata=\"x\""),
            ..facts(401, "application/json", br#"{"error":"invalid_token"}"#, Some(&id))
        };
        let e = why(&unauthorized);
        assert!(
            e.contains("WWW-Authenticate: Bearer") && e.contains(r#"(body: {"error":"invalid_token"})"#),
            "{e}"
        );
        let e = why(&facts(403, "text/html", b"", Some(&id)));
        assert!(
            e.contains("with an HTML page") && e.contains("check the Authorization"),
            "{e}"
        );
    }

    #[test]
    fn a_modern_post_carries_the_version_of_its_own_meta() {
        let target = HttpTarget::streamable("http://127.0.0.1:9/mcp");
        let body = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        let out = Outgoing {
            body: body.to_vec(),
            ..Outgoing::default()
        };
        let session = Some("s1".to_owned());
        let (h, version) = post_headers(
            &target,
            "http://127.0.0.1:9/mcp",
            &out,
            &session,
            Some("2025-11-25".into()),
        );
        assert_eq!(
            version.as_deref(),
            Some("2026-07-28"),
            "the message's version, not the session's"
        );
        let sent: Vec<(&str, &str)> = h.wire.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert!(sent.contains(&("MCP-Protocol-Version", "2026-07-28")), "{sent:?}");
        assert!(sent.contains(&("Mcp-Session-Id", "s1")), "{sent:?}");
        assert_eq!(
            sent.iter().filter(|(k, _)| *k == "MCP-Protocol-Version").count(),
            1,
            "{sent:?}"
        );
        // A legacy message keeps the session's version.
        let legacy = Outgoing {
            body: br#"{"jsonrpc":"2.0","id":4,"method":"tools/list"}"#.to_vec(),
            ..Outgoing::default()
        };
        let (_, version) = post_headers(
            &target,
            "http://127.0.0.1:9/mcp",
            &legacy,
            &None,
            Some("2025-11-25".into()),
        );
        assert_eq!(version.as_deref(), Some("2025-11-25"));
    }
}
