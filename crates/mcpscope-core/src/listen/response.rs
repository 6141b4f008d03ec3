//! What a listener writes back: whole answers with their length, the
//! plain-text error answer, and the chunks of a body sent as it comes.

/// A whole answer with its length (the connection can carry another request).
pub(crate) fn answer(status: u16, headers: &[(&str, &str)], content_type: &str, body: &[u8]) -> Vec<u8> {
    let reason = ureq::http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    let mut out = format!("HTTP/1.1 {status} {reason}\r\n");
    if !content_type.is_empty() {
        out.push_str(&format!("content-type: {content_type}\r\n"));
    }
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

/// A plain-text answer that closes the connection (errors and refusals).
/// A 503 says when to come back (RFC 9110 §10.2.3): the listener was full.
pub(crate) fn plain_answer(status: u16, text: &str) -> Vec<u8> {
    let reason = ureq::http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    let body = format!("{text}\n");
    let retry = if status == 503 { "retry-after: 1\r\n" } else { "" };
    format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\n{retry}connection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// One chunk of a body sent with `transfer-encoding: chunked` (RFC 9112
/// §7.1): its size line, the bytes, CRLF. `bytes` is not empty: an empty
/// chunk is the last one ([`LAST_CHUNK`]).
pub(crate) fn chunk(bytes: &[u8]) -> Vec<u8> {
    debug_assert!(!bytes.is_empty(), "an empty chunk would end the body");
    let mut framed = chunk_size_line(bytes.len());
    framed.reserve(bytes.len() + CHUNK_END.len());
    framed.extend_from_slice(bytes);
    framed.extend_from_slice(CHUNK_END);
    framed
}

/// The size line a chunk of `len` bytes starts with, for a caller that sends
/// a large chunk's bytes as they are rather than copied after it.
pub(crate) fn chunk_size_line(len: usize) -> Vec<u8> {
    format!("{len:x}\r\n").into_bytes()
}

/// What follows a chunk's bytes.
pub(crate) const CHUNK_END: &[u8] = b"\r\n";

/// The last chunk, with no trailers: the body ends.
pub(crate) const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunked_body_is_size_lines_bytes_and_the_last_chunk() {
        let mut body = chunk(b"hello");
        body.extend_from_slice(&chunk(&[b'x'; 26]));
        body.extend_from_slice(LAST_CHUNK);
        let mut expected = b"5\r\nhello\r\n1a\r\n".to_vec();
        expected.extend_from_slice(&[b'x'; 26]);
        expected.extend_from_slice(b"\r\n0\r\n\r\n");
        assert_eq!(body, expected);
        assert_eq!(chunk_size_line(4096), b"1000\r\n");
    }
}
