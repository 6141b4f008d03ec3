//! What the proxy changes in a request or an answer: credential masking for
//! the record, and the upstream origin turned into the proxy's where a client
//! would follow it. (The local checks against DNS rebinding are shared with
//! the mock, in [`crate::listen`].)

use serde_json::Value;

pub(crate) fn is_secret_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    matches!(
        n.as_str(),
        "authorization" | "proxy-authorization" | "cookie" | "set-cookie"
    ) || ["token", "secret", "api-key", "apikey", "password", "auth", "credential"]
        .iter()
        .any(|s| n.contains(s))
}

/// A URL for the record, with userinfo and the values of secret-looking
/// query parameters masked.
pub(super) fn masked_url(u: &url::Url) -> String {
    if u.query().is_none() {
        return crate::transport::target::mask_url(u.as_str());
    }
    let mut shown = u.clone();
    let pairs: Vec<(String, String)> = u
        .query_pairs()
        .map(|(k, v)| {
            let lk = k.to_ascii_lowercase();
            let secret = ["token", "key", "secret", "password", "code", "sig", "auth"]
                .iter()
                .any(|s| lk.contains(s));
            (k.into_owned(), if secret { "****".into() } else { v.into_owned() })
        })
        .collect();
    shown.query_pairs_mut().clear().extend_pairs(pairs);
    crate::transport::target::mask_url(shown.as_str())
}

/// Whether a body is JSON-RPC (one message or a batch): only those are recorded as frames.
pub(super) fn is_json_rpc(body: &[u8]) -> bool {
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return false;
    };
    let one = |m: &Value| m.get("jsonrpc").is_some();
    match &v {
        Value::Array(items) => !items.is_empty() && items.iter().all(one),
        m => one(m),
    }
}

/// Replaces the upstream origin at the start of a JSON document's `resource`.
pub(super) fn rewrite_resource(bytes: &[u8], upstream_origin: &str, local_origin: &str) -> Vec<u8> {
    let Ok(mut v) = serde_json::from_slice::<Value>(bytes) else {
        return bytes.to_vec();
    };
    let Some(resource) = v.get("resource").and_then(Value::as_str) else {
        return bytes.to_vec();
    };
    let Some(rest) = resource.strip_prefix(upstream_origin) else {
        return bytes.to_vec();
    };
    v["resource"] = Value::String(format!("{local_origin}{rest}"));
    serde_json::to_vec(&v).unwrap_or_else(|_| bytes.to_vec())
}

/// HTTP+SSE: an `endpoint` event naming the upstream's origin is pointed at the proxy.
pub(super) fn rewrite_endpoint(event: Vec<u8>, upstream_origin: &str, local_origin: &str) -> Vec<u8> {
    // Only an event that says it is one: a large data event is passed on without a copy.
    let named = |pat: &[u8]| memchr::memmem::find(&event, pat).is_some();
    if !named(b"event: endpoint") && !named(b"event:endpoint") {
        return event;
    }
    match String::from_utf8(event) {
        Ok(text) => text.replace(upstream_origin, local_origin).into_bytes(),
        Err(e) => e.into_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_masked_in_headers_and_query() {
        assert!(is_secret_header("Authorization"));
        assert!(is_secret_header("X-Api-Key"));
        assert!(is_secret_header("cookie"));
        assert!(!is_secret_header("Mcp-Session-Id"));
        assert!(!is_secret_header("Last-Event-ID"));
        let u = url::Url::parse("https://h/mcp?api_key=abc&mode=x").unwrap();
        assert_eq!(masked_url(&u), "https://h/mcp?api_key=****&mode=x");
    }

    #[test]
    fn json_rpc_bodies_are_told_from_others() {
        assert!(is_json_rpc(br#"{"jsonrpc":"2.0","id":1,"method":"x"}"#));
        assert!(is_json_rpc(br#"[{"jsonrpc":"2.0","method":"x"}]"#));
        assert!(!is_json_rpc(br#"{"access_token":"secret","token_type":"Bearer"}"#));
        assert!(!is_json_rpc(b"<html>"));
        assert!(!is_json_rpc(b"[]"));
    }

    #[test]
    fn protected_resource_metadata_names_the_proxy() {
        let body =
            br#"{"resource":"https://api.example.com/mcp","authorization_servers":["https://auth.example.com"]}"#;
        let out = rewrite_resource(body, "https://api.example.com", "http://127.0.0.1:9");
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["resource"], "http://127.0.0.1:9/mcp");
        assert_eq!(v["authorization_servers"][0], "https://auth.example.com");
        // Another origin's resource is left alone.
        let other = br#"{"resource":"https://elsewhere/mcp"}"#;
        assert_eq!(
            rewrite_resource(other, "https://api.example.com", "http://127.0.0.1:9"),
            other.to_vec()
        );
    }

    #[test]
    fn an_endpoint_event_is_pointed_at_the_proxy_and_others_are_not_touched() {
        let up = "https://api.example.com";
        let local = "http://127.0.0.1:9";
        let ev = b"event: endpoint\ndata: https://api.example.com/messages?s=1\n\n".to_vec();
        assert_eq!(
            rewrite_endpoint(ev, up, local),
            b"event: endpoint\ndata: http://127.0.0.1:9/messages?s=1\n\n"
        );
        let data = b"data: https://api.example.com/x\n\n".to_vec();
        assert_eq!(rewrite_endpoint(data.clone(), up, local), data);
    }
}
