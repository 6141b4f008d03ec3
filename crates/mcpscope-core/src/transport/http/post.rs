//! One POST: the message goes out with the session's headers, and its answer
//! (a JSON body, an SSE stream, an error page, an HTTP refusal) comes back
//! as events, every byte kept.

use super::*;

pub(super) fn post(ctx: Ctx, job: PostJob) {
    let PostJob {
        worker,
        url,
        session_id,
        protocol_version,
        out,
        is_initialize,
    } = job;
    let mut headers = Headers::new(&ctx.target, "POST", &url);
    headers.add("Content-Type", "application/json");
    headers.add("Accept", ACCEPT_POST);
    let modern = crate::protocol::http_headers::standard(&out.body);
    // In the modern era the version header must equal the request's `_meta`.
    let protocol_version = match modern.iter().find(|(k, _)| k == "MCP-Protocol-Version") {
        Some((_, v)) => Some(v.clone()),
        None => protocol_version,
    };
    headers.session(&session_id, &protocol_version);
    for (k, v) in modern.iter().filter(|(k, _)| k != "MCP-Protocol-Version") {
        headers.add(k, v);
    }
    for (k, v) in &out.headers {
        headers.add(k, v);
    }
    let mut base = HttpInfo {
        request_id: out.request_id.clone(),
        ..headers.info("POST", &url)
    };
    let (resp, answered_by) = match exchange(&ctx, "POST", &url, &headers, Some(&out.body), out.request_id.as_ref()) {
        Ok(r) => r,
        Err(error) => {
            send(
                &ctx,
                HttpMsg::Failed {
                    info: HttpInfo {
                        error: Some(error),
                        ..base
                    },
                    at: Instant::now(),
                    expired_session: false,
                },
            );
            send(&ctx, HttpMsg::WorkerDone { worker });
            return;
        }
    };
    base.url = mask_url(&answered_by);
    let status = resp.status().as_u16();
    let ct = content_type(&resp);
    let received_headers = relevant_headers(&resp);
    let session_header = resp
        .headers()
        .get("mcp-session-id")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let what = out.method.as_deref().unwrap_or("message");
    let sse = (200..300).contains(&status) && is_sse(&ct);
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
    let body = resp.into_body();
    if sse {
        send(
            &ctx,
            HttpMsg::Http {
                info: HttpInfo {
                    status: Some(status),
                    received: received_headers.clone(),
                    text: format!("{what}: the answer comes as an SSE stream"),
                    ..base.clone()
                },
                at: Instant::now(),
                worker: Some(worker),
                new_session: is_initialize.then_some(session_header),
            },
        );
        let mut reader = SseReader::with_limit(BufReader::new(body.into_reader()), ctx.max_held);
        let outcome = read_sse(&ctx, &mut reader, out.request_id.as_ref());
        let closing = ctx.closing.load(Ordering::SeqCst);
        match (&out.request_id, outcome.answer) {
            (Some(id), Answer::InBatch) => send(&ctx, failed(batch_error(id), false)),
            (Some(id), Answer::No) if !closing => {
                resume(
                    &ctx,
                    &answered_by,
                    id,
                    outcome,
                    &session_id,
                    &protocol_version,
                    base.clone(),
                );
            }
            (Some(_), Answer::No) => {}
            _ => {
                if let Some(e) = outcome.error
                    && !closing
                {
                    sse_note(
                        &ctx,
                        &answered_by,
                        format!("the stream answering {what} broke"),
                        Some(e),
                    );
                }
            }
        }
        send(&ctx, HttpMsg::WorkerDone { worker });
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
    send(
        &ctx,
        HttpMsg::Http {
            info: HttpInfo {
                status: Some(status),
                received: received_headers.clone(),
                text,
                ..base.clone()
            },
            at,
            worker: Some(worker),
            new_session: (is_initialize && (200..300).contains(&status)).then_some(session_header),
        },
    );
    let read = if accepted {
        Ok(Some(Vec::new()))
    } else {
        read_body(&ctx, &mut reader)
    };
    let bytes = match read {
        Ok(Some(bytes)) => bytes,
        Ok(None) => {
            send(
                &ctx,
                failed(
                    format!(
                        "the response body is longer than the {} MiB a message may hold in memory; it is recorded in \
                         pieces and not taken as the response",
                        ctx.max_held / (1024 * 1024)
                    ),
                    false,
                ),
            );
            send(&ctx, HttpMsg::WorkerDone { worker });
            return;
        }
        Err(e) => {
            send(&ctx, failed(format!("reading the response body failed: {e}"), false));
            send(&ctx, HttpMsg::WorkerDone { worker });
            return;
        }
    };
    // A 401/403 body is usually an OAuth error object, not a JSON-RPC
    // message: kept with the exchange, not passed on as a malformed frame.
    let auth_refusal = (status == 401 || status == 403) && !bytes.is_empty() && !is_jsonrpc(&bytes);
    if !bytes.is_empty() && !accepted && !auth_refusal {
        received(&ctx, bytes.clone(), LineEnding::Lf);
    }
    if accepted {
        if let Some(id) = &out.request_id
            && ctx.target.kind == HttpKind::StreamableHttp
        {
            send(
                &ctx,
                failed(
                    format!("the server accepted request #{id} with {status} but sent no response to it"),
                    false,
                ),
            );
        }
    } else if status == 404 && session_id.is_some() {
        let sid = session_id.as_deref().unwrap_or_default();
        send(
            &ctx,
            failed(
                format!("the server forgot session {sid} (HTTP 404): start a new session"),
                true,
            ),
        );
    } else if !(200..300).contains(&status)
        && out
            .request_id
            .as_ref()
            .is_some_and(|id| matches!(answers(&bytes, id), Answer::Direct))
    {
        // A JSON-RPC error in the body of an HTTP error (400 for a bad
        // request): that error is the answer, already passed on; the status
        // is in the exchange's record. Not a second, transport-level failure.
    } else if !(200..300).contains(&status) {
        let mut e = format!("the server answered HTTP {}", status_text(status));
        if ct.contains("html") {
            e.push_str(" with an HTML page");
        }
        if status == 401 || status == 403 {
            match received_headers.iter().find(|(k, _)| k == "www-authenticate") {
                Some((_, w)) => e.push_str(&format!(" (WWW-Authenticate: {w})")),
                None => e.push_str(" (check the Authorization or other --header values)"),
            }
        }
        if auth_refusal {
            e.push_str(&format!(
                " (body: {})",
                crate::text::shorten(&String::from_utf8_lossy(&bytes), 4096)
            ));
        }
        if status == 405 || status == 404 {
            e.push_str(&format!(
                " (is {} the MCP endpoint? for an HTTP+SSE server use --transport sse)",
                mask_url(&answered_by)
            ));
        }
        send(&ctx, failed(e, false));
    } else if out.request_id.is_some() && !is_json(&ct) {
        let shown = if ct.is_empty() { "none".to_owned() } else { ct.clone() };
        let mut e = format!("the response has Content-Type {shown}, not application/json or text/event-stream");
        if ct.contains("html") {
            e.push_str(" (an HTML page: is this the MCP endpoint?)");
        }
        send(&ctx, failed(e, false));
    } else if let Some(id) = &out.request_id {
        match answers(&bytes, id) {
            Answer::Direct => {}
            Answer::InBatch => send(&ctx, failed(batch_error(id), false)),
            Answer::No => {
                let e = if bytes.is_empty() {
                    "the response body is empty".to_owned()
                } else if serde_json::from_slice::<Value>(&bytes).is_err() {
                    "the response body is not valid JSON".to_owned()
                } else {
                    format!("the response body is not the response to request #{id}")
                };
                send(&ctx, failed(e, false));
            }
        }
    }
    send(&ctx, HttpMsg::WorkerDone { worker });
}
