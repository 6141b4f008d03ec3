//! The server's streams: SSE events read one at a time, a broken response
//! stream resumed with `Last-Event-ID`, the standalone GET stream, the
//! HTTP+SSE transport's endpoint stream, and the DELETE that ends a session.

use super::*;

#[derive(Default)]
pub(super) struct SseOutcome {
    pub(super) answer: Answer,
    pub(super) last_id: Option<String>,
    pub(super) retry: Option<u64>,
    pub(super) events: usize,
    pub(super) error: Option<String>,
}

/// Reads an SSE stream to its end, passing each message on.
pub(super) fn read_sse<R: std::io::BufRead>(
    ctx: &Ctx,
    reader: &mut SseReader<R>,
    waiting_for: Option<&RequestId>,
) -> SseOutcome {
    let mut o = SseOutcome::default();
    loop {
        match reader.next_event() {
            Ok(Some(ev)) => {
                o.events += 1;
                note_ids(&mut o, &ev);
                // Any event with data is kept: a server may name its events otherwise.
                if ev.has_data() {
                    if let Some(id) = waiting_for
                        && o.answer == Answer::No
                        && !ev.cut
                    {
                        o.answer = answers(&ev.data, id);
                    }
                    deliver(ctx, ev);
                }
            }
            Ok(None) => return o,
            Err(e) => {
                if !ctx.closing.load(Ordering::SeqCst) {
                    o.error = Some(e.to_string());
                }
                return o;
            }
        }
    }
}

pub(super) fn note_ids(o: &mut SseOutcome, ev: &SseEvent) {
    if let Some(id) = &ev.id {
        o.last_id = Some(id.clone());
    }
    if ev.retry.is_some() {
        o.retry = ev.retry;
    }
}

pub(super) fn deliver(ctx: &Ctx, ev: SseEvent) {
    let ending = ev.ending();
    received(ctx, ev.data, ending);
}

pub(super) fn sse_note(ctx: &Ctx, url: &str, text: String, error: Option<String>) {
    http(
        ctx,
        HttpInfo {
            method: "SSE".into(),
            url: mask_url(url),
            text,
            error,
            ..HttpInfo::default()
        },
    );
}

pub(super) fn retry_wait(ctx: &Ctx, retry: Option<u64>) -> Duration {
    retry.map_or(ctx.target.default_retry, Duration::from_millis)
}

/// Sleeps unless the session closes meanwhile; false when it did.
pub(super) fn pause(ctx: &Ctx, d: Duration) -> bool {
    let until = Instant::now() + d;
    while Instant::now() < until {
        if ctx.closing.load(Ordering::SeqCst) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20).min(until.saturating_duration_since(Instant::now())));
    }
    !ctx.closing.load(Ordering::SeqCst)
}

pub(super) fn failed_now(info: HttpInfo, error: String) -> HttpMsg {
    HttpMsg::Failed {
        info: HttpInfo {
            error: Some(error),
            ..info
        },
        at: Instant::now(),
        expired_session: false,
    }
}

impl SseOutcome {
    /// What a resumed stream adds to what came before it: the latest event
    /// id and retry the server gave (kept when the new stream gave none),
    /// every event counted, the new stream's error.
    fn then(self, next: SseOutcome) -> SseOutcome {
        SseOutcome {
            last_id: next.last_id.or(self.last_id),
            retry: next.retry.or(self.retry),
            events: self.events + next.events,
            error: next.error,
            answer: Answer::No,
        }
    }
}

/// Whether a stream that ended before the response to `id` can be resumed:
/// the event id to resume from, or why not (no id was given, or
/// `max_reconnects` are spent).
fn resume_from(outcome: &SseOutcome, attempts: u32, max_reconnects: u32, id: &RequestId) -> Result<String, String> {
    let Some(last) = outcome.last_id.clone() else {
        let mut e = format!(
            "the SSE stream ended after {} event(s) without the response to #{id}",
            outcome.events
        );
        if let Some(err) = &outcome.error {
            e.push_str(&format!(" ({err})"));
        }
        e.push_str(", and gave no event id to resume from");
        return Err(e);
    };
    if attempts >= max_reconnects {
        return Err(format!(
            "gave up resuming the stream for #{id} after {attempts} reconnect(s)"
        ));
    }
    Ok(last)
}

/// Where a standalone GET stream stands between its openings.
#[derive(Debug, Default, PartialEq)]
struct GetStreamState {
    last_id: Option<String>,
    retry: Option<u64>,
    /// Openings in a row that delivered no event (a stream that delivers
    /// starts the count again).
    failures: u32,
}

impl GetStreamState {
    /// Counts how an opening ended (`None`: it could not be opened);
    /// false when the stream should be given up.
    fn ended(&mut self, outcome: Option<SseOutcome>, max_reconnects: u32) -> bool {
        match outcome {
            Some(o) => {
                if o.events > 0 {
                    self.failures = 0;
                }
                self.failures += 1;
                self.last_id = o.last_id.or(self.last_id.take());
                self.retry = o.retry.or(self.retry);
            }
            None => self.failures += 1,
        }
        self.failures <= max_reconnects
    }
}

/// What a GET stream's answer means: 405 is "no GET stream" (said once, not
/// retried), anything but a 200 event stream a refusal.
#[derive(Debug, PartialEq)]
enum GetAnswer {
    NoStream,
    Refused,
    Open,
}

fn judge_get_answer(status: u16, content_type: &str) -> GetAnswer {
    match status {
        405 => GetAnswer::NoStream,
        200 if is_sse(content_type) => GetAnswer::Open,
        _ => GetAnswer::Refused,
    }
}

/// The response stream ended before the response: resume it with a GET and
/// `Last-Event-ID` where the server gave event ids, else report it.
pub(super) fn resume(
    ctx: &Ctx,
    url: &str,
    id: &RequestId,
    mut outcome: SseOutcome,
    session_id: &Option<String>,
    protocol_version: &Option<String>,
    base: HttpInfo,
) {
    let mut attempts = 0;
    loop {
        let last = match resume_from(&outcome, attempts, ctx.target.max_reconnects, id) {
            Ok(last) => last,
            Err(why) => {
                send(ctx, failed_now(base, why));
                return;
            }
        };
        attempts += 1;
        let wait = retry_wait(ctx, outcome.retry);
        sse_note(
            ctx,
            url,
            format!(
                "the stream for #{id} ended before its response; reconnecting in {} ms with Last-Event-ID: {last}",
                wait.as_millis()
            ),
            None,
        );
        if !pause(ctx, wait) {
            return;
        }
        let mut headers = Headers::new(&ctx.target, "GET", url);
        headers.add("Accept", "text/event-stream");
        headers.session(session_id, protocol_version);
        headers.add("Last-Event-ID", &last);
        let info = HttpInfo {
            request_id: Some(id.clone()),
            ..headers.info("GET", url)
        };
        match exchange(ctx, "GET", url, &headers, None, Some(id)) {
            Err(e) => {
                sse_note(ctx, url, "resuming failed".into(), Some(e.clone()));
                outcome.error = Some(e);
            }
            Ok((resp, at_url)) => {
                let status = resp.status().as_u16();
                let ct = content_type(&resp);
                http(
                    ctx,
                    HttpInfo {
                        url: mask_url(&at_url),
                        status: Some(status),
                        received: relevant_headers(&resp),
                        text: format!("resuming the stream for #{id}"),
                        ..info.clone()
                    },
                );
                if status != 200 || !is_sse(&ct) {
                    send(
                        ctx,
                        HttpMsg::Failed {
                            info: HttpInfo {
                                status: Some(status),
                                error: Some(format!(
                                    "the server did not resume the stream (HTTP {}): #{id} gets no response",
                                    status_text(status)
                                )),
                                ..info
                            },
                            at: Instant::now(),
                            expired_session: status == 404,
                        },
                    );
                    return;
                }
                let mut reader = SseReader::with_limit(BufReader::new(resp.into_body().into_reader()), ctx.max_held);
                let next = read_sse(ctx, &mut reader, Some(id));
                match next.answer {
                    Answer::Direct => return,
                    Answer::InBatch => {
                        send(ctx, failed_now(base, batch_error(id)));
                        return;
                    }
                    Answer::No => {}
                }
                outcome = outcome.then(next);
            }
        }
        if ctx.closing.load(Ordering::SeqCst) {
            return;
        }
    }
}

/// Streamable HTTP: the standalone GET stream for server-initiated messages,
/// reopened (with `Last-Event-ID` where the server gave ids) when it breaks.
pub(super) fn get_stream(ctx: Ctx, session_id: Option<String>, protocol_version: Option<String>) {
    let url = ctx.target.url.clone();
    let mut state = GetStreamState::default();
    loop {
        if ctx.closing.load(Ordering::SeqCst) {
            return;
        }
        let mut headers = Headers::new(&ctx.target, "GET", &url);
        headers.add("Accept", "text/event-stream");
        headers.session(&session_id, &protocol_version);
        if let Some(l) = &state.last_id {
            headers.add("Last-Event-ID", l);
        }
        let info = headers.info("GET", &url);
        // The first answer (open, refused or failed) releases the POST of
        // `notifications/initialized`, which waits for the stream to exist.
        let first = state == GetStreamState::default();
        let report = |info: HttpInfo| HttpMsg::Http {
            info,
            at: Instant::now(),
            worker: first.then_some(GET_WORKER),
            new_session: None,
            whole: None,
        };
        let outcome = match exchange(&ctx, "GET", &url, &headers, None, None) {
            Err(e) => {
                if ctx.closing.load(Ordering::SeqCst) {
                    return;
                }
                send(
                    &ctx,
                    report(HttpInfo {
                        text: "the GET stream could not be opened".into(),
                        error: Some(e),
                        ..info
                    }),
                );
                None
            }
            Ok((resp, at_url)) => {
                let info = HttpInfo {
                    url: mask_url(&at_url),
                    ..info
                };
                let status = resp.status().as_u16();
                let ct = content_type(&resp);
                let received = relevant_headers(&resp);
                let verdict = judge_get_answer(status, &ct);
                if verdict == GetAnswer::NoStream {
                    send(
                        &ctx,
                        report(HttpInfo {
                            status: Some(status),
                            received,
                            text: "the server offers no GET stream (405): it sends messages only on POST responses"
                                .into(),
                            ..info
                        }),
                    );
                    return;
                }
                if verdict == GetAnswer::Refused {
                    let mut bytes = Vec::new();
                    let _ = resp.into_body().into_reader().take(64 * 1024).read_to_end(&mut bytes);
                    send(
                        &ctx,
                        report(HttpInfo {
                            status: Some(status),
                            received,
                            text: format!(
                                "the GET stream was refused: {}",
                                crate::text::shorten(&String::from_utf8_lossy(&bytes), 300)
                            ),
                            ..info
                        }),
                    );
                    return;
                }
                let text = match &state.last_id {
                    Some(l) => format!("GET stream reopened after event {l}"),
                    None => "GET stream open for server-initiated messages".into(),
                };
                send(
                    &ctx,
                    report(HttpInfo {
                        status: Some(status),
                        received,
                        text,
                        ..info
                    }),
                );
                let mut reader = SseReader::with_limit(BufReader::new(resp.into_body().into_reader()), ctx.max_held);
                Some(read_sse(&ctx, &mut reader, None))
            }
        };
        if ctx.closing.load(Ordering::SeqCst) {
            return;
        }
        if !state.ended(outcome, ctx.target.max_reconnects) {
            sse_note(
                &ctx,
                &url,
                format!("gave up on the GET stream after {} attempt(s)", state.failures),
                None,
            );
            return;
        }
        let wait = retry_wait(&ctx, state.retry);
        let with = state
            .last_id
            .as_ref()
            .map(|l| format!(" with Last-Event-ID: {l}"))
            .unwrap_or_default();
        sse_note(
            &ctx,
            &url,
            format!("the GET stream ended; reconnecting in {} ms{with}", wait.as_millis()),
            None,
        );
        if !pause(&ctx, wait) {
            return;
        }
    }
}

/// HTTP+SSE (2024-11-05): GET the SSE URL, learn the POST endpoint from the
/// `endpoint` event, then pass every `message` event on. An endpoint on
/// another origin than the SSE URL is refused: the user's headers and every
/// message would go to a host they never named.
pub(super) fn legacy_stream(ctx: Ctx) {
    let url = ctx.target.url.clone();
    let mut headers = Headers::new(&ctx.target, "GET", &url);
    headers.add("Accept", "text/event-stream");
    let info = headers.info("GET", &url);
    let down = |reason: String| HttpMsg::LegacyDown { reason };
    let (resp, stream_url) = match exchange(&ctx, "GET", &url, &headers, None, None) {
        Ok(r) => r,
        Err(error) => {
            http(
                &ctx,
                HttpInfo {
                    text: "the SSE stream could not be opened".into(),
                    error: Some(error.clone()),
                    ..info
                },
            );
            send(&ctx, down(error));
            return;
        }
    };
    let info = HttpInfo {
        url: mask_url(&stream_url),
        ..info
    };
    let status = resp.status().as_u16();
    let ct = content_type(&resp);
    let received_headers = relevant_headers(&resp);
    if status != 200 || !is_sse(&ct) {
        let mut error = format!("the SSE URL answered HTTP {}", status_text(status));
        if status == 200 {
            error = format!("the SSE URL answered with Content-Type {ct}, not text/event-stream");
        }
        if status == 405 || status == 404 || (status == 200 && !is_sse(&ct)) {
            error.push_str(" (for a Streamable HTTP server use --transport http)");
        }
        http(
            &ctx,
            HttpInfo {
                status: Some(status),
                received: received_headers,
                error: Some(error.clone()),
                ..info
            },
        );
        let mut reader = resp.into_body().into_reader();
        if let Ok(Some(bytes)) = read_body(&ctx, &mut reader, None)
            && !bytes.is_empty()
        {
            received(&ctx, bytes, LineEnding::Lf);
        }
        send(&ctx, down(error));
        return;
    }
    http(
        &ctx,
        HttpInfo {
            status: Some(status),
            received: received_headers,
            text: "SSE stream open; waiting for the endpoint event".into(),
            ..info
        },
    );
    let base = url::Url::parse(&stream_url).ok();
    let mut reader = SseReader::with_limit(BufReader::new(resp.into_body().into_reader()), ctx.max_held);
    let mut have_endpoint = false;
    let mut events = 0usize;
    let error = loop {
        match reader.next_event() {
            Ok(Some(ev)) => {
                events += 1;
                if ev.kind() == "endpoint" && !ev.cut {
                    let target = String::from_utf8_lossy(&ev.data).trim().to_owned();
                    match base.as_ref().map(|b| b.join(&target)) {
                        Some(Ok(full)) if base.as_ref().is_some_and(|b| same_origin(b, &full)) => {
                            have_endpoint = true;
                            sse_note(
                                &ctx,
                                &stream_url,
                                format!("endpoint: messages go to {}", mask_url(full.as_str())),
                                None,
                            );
                            send(&ctx, HttpMsg::Endpoint { url: full.to_string() });
                        }
                        Some(Ok(full)) => {
                            let reason = format!(
                                "refused the endpoint {}: it is on another origin ({}) than the SSE stream ({}), \
                                 and your headers and messages go only where you connected",
                                mask_url(full.as_str()),
                                origin_text(&full),
                                base.as_ref().map(origin_text).unwrap_or_default()
                            );
                            sse_note(
                                &ctx,
                                &stream_url,
                                format!("endpoint event {:?}", mask_url(&target)),
                                Some(reason.clone()),
                            );
                            send(&ctx, down(reason));
                        }
                        Some(Err(e)) => {
                            sse_note(
                                &ctx,
                                &stream_url,
                                format!("endpoint event {:?}", mask_url(&target)),
                                Some(format!("not a usable URL: {e}")),
                            );
                        }
                        None => {}
                    }
                } else if ev.has_data() {
                    deliver(&ctx, ev);
                }
            }
            Ok(None) => break None,
            Err(e) => break Some(e.to_string()),
        }
    };
    if ctx.closing.load(Ordering::SeqCst) {
        return;
    }
    let reason = if have_endpoint {
        format!("the SSE stream closed after {events} event(s): the server can no longer answer")
    } else {
        format!("the SSE stream closed after {events} event(s) without an endpoint event")
    };
    sse_note(&ctx, &stream_url, reason.clone(), error);
    send(&ctx, down(reason));
}

/// Ends the session on the server (Streamable HTTP).
pub(super) fn delete(ctx: Ctx, session_id: String, protocol_version: Option<String>) {
    let url = ctx.target.url.clone();
    let mut headers = Headers::new(&ctx.target, "DELETE", &url);
    headers.session(&Some(session_id.clone()), &protocol_version);
    let info = headers.info("DELETE", &url);
    let info = match exchange(&ctx, "DELETE", &url, &headers, None, None) {
        Ok((resp, at_url)) => {
            let status = resp.status().as_u16();
            let text = match status {
                200..=299 => format!("session {session_id} ended"),
                405 => "the server does not let clients end sessions (405)".into(),
                404 => format!("the server had already forgotten session {session_id} (404)"),
                _ => format!("ending session {session_id}: {}", status_text(status)),
            };
            HttpInfo {
                url: mask_url(&at_url),
                status: Some(status),
                received: relevant_headers(&resp),
                text,
                ..info
            }
        }
        Err(e) => HttpInfo {
            text: format!("ending session {session_id}"),
            error: Some(e),
            ..info
        },
    };
    http(&ctx, info);
    send(&ctx, HttpMsg::DeleteDone);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(last_id: Option<&str>, retry: Option<u64>, events: usize, error: Option<&str>) -> SseOutcome {
        SseOutcome {
            answer: Answer::No,
            last_id: last_id.map(str::to_owned),
            retry,
            events,
            error: error.map(str::to_owned),
        }
    }

    #[test]
    fn a_broken_response_stream_is_resumed_from_its_last_event_id_until_the_reconnects_are_spent() {
        let id = RequestId::Number(4);
        assert_eq!(
            resume_from(&outcome(Some("e7"), None, 3, None), 0, 2, &id),
            Ok("e7".into())
        );
        assert_eq!(
            resume_from(&outcome(Some("e7"), None, 3, None), 1, 2, &id),
            Ok("e7".into())
        );
        let spent = resume_from(&outcome(Some("e7"), None, 3, None), 2, 2, &id).unwrap_err();
        assert_eq!(spent, "gave up resuming the stream for #4 after 2 reconnect(s)");
        // No id to resume from: the response is lost, and the reason says why.
        let e = resume_from(&outcome(None, None, 3, Some("connection reset")), 0, 2, &id).unwrap_err();
        assert_eq!(
            e,
            "the SSE stream ended after 3 event(s) without the response to #4 (connection reset), \
             and gave no event id to resume from"
        );
    }

    #[test]
    fn a_resumed_stream_keeps_the_last_id_and_retry_it_was_given() {
        let first = outcome(Some("e1"), Some(500), 2, Some("reset"));
        let merged = first.then(outcome(None, None, 0, None));
        assert_eq!(
            (merged.last_id.as_deref(), merged.retry, merged.events),
            (Some("e1"), Some(500), 2)
        );
        assert_eq!(merged.error, None, "the newest stream's error, not an old one");
        let merged = merged.then(outcome(Some("e9"), Some(50), 4, Some("eof")));
        assert_eq!(
            (merged.last_id.as_deref(), merged.retry, merged.events),
            (Some("e9"), Some(50), 6)
        );
        assert_eq!(merged.error.as_deref(), Some("eof"));
    }

    #[test]
    fn the_get_stream_gives_up_after_openings_that_deliver_nothing_not_after_ones_that_do() {
        let mut s = GetStreamState::default();
        // A stream that delivers may break any number of times.
        for _ in 0..10 {
            assert!(s.ended(Some(outcome(Some("e"), None, 5, None)), 2));
        }
        assert_eq!(s.failures, 1);
        // Openings that deliver nothing (or fail to open) count up to the limit.
        assert!(s.ended(None, 2));
        assert!(!s.ended(Some(outcome(None, Some(100), 0, None)), 2));
        assert_eq!(
            s.last_id.as_deref(),
            Some("e"),
            "an empty stream keeps the id to resume from"
        );
        assert_eq!(s.retry, Some(100));
    }

    #[test]
    fn a_get_stream_answer_is_open_refused_or_absent() {
        assert_eq!(judge_get_answer(200, "text/event-stream"), GetAnswer::Open);
        assert_eq!(
            judge_get_answer(200, "text/event-stream; charset=utf-8"),
            GetAnswer::Open
        );
        assert_eq!(judge_get_answer(405, "text/plain"), GetAnswer::NoStream);
        assert_eq!(judge_get_answer(200, "application/json"), GetAnswer::Refused);
        assert_eq!(judge_get_answer(401, "text/event-stream"), GetAnswer::Refused);
    }
}
