//! What the proxy checks and changes in a request or an answer: the local
//! checks against DNS rebinding, credential masking for the record, and the
//! upstream origin turned into the proxy's where a client would follow it.

use super::Request;
use serde_json::Value;
use std::net::IpAddr;

/// RFC 9112 §3.2: a request without exactly one well-formed `Host` is a 400,
/// and two `Origin`s are as ambiguous (which one would the local check have
/// looked at?). This runs before the body is read, so nothing of such a
/// request reaches the upstream.
pub(super) fn check_host_syntax(req: &Request) -> Result<(), String> {
    for name in ["Host", "Origin"] {
        let n = req.headers.iter().filter(|(k, _)| k.eq_ignore_ascii_case(name)).count();
        if n > 1 {
            return Err(format!("the request has {n} {name} headers; at most one is allowed"));
        }
    }
    let Some(host) = req.header("host") else {
        return Err("the request has no Host header".into());
    };
    // Userinfo is not allowed in Host (RFC 9110 §7.2), yet `http` takes it in
    // an authority; and it does not check the port.
    let well_formed = !host.contains('@')
        && ureq::http::uri::Authority::try_from(host).is_ok_and(|a| match host.strip_prefix(a.host()) {
            Some("") => !a.host().is_empty(),
            Some(port) => port
                .strip_prefix(':')
                .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()) && p.parse::<u16>().is_ok()),
            None => false,
        });
    if !well_formed {
        return Err(format!("Host {host:?} is not a host name with an optional port"));
    }
    Ok(())
}

/// Whether a host name (without port) names this machine.
fn is_local_host(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host.to_ascii_lowercase().ends_with(".localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// `host[:port]` or `[v6][:port]` without the port.
fn strip_port(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match authority.rsplit_once(':') {
        Some((h, p)) if p.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => authority,
    }
}

/// DNS-rebinding protection: a page on an attacker's name that resolves to
/// 127.0.0.1 sends its own name as `Host`, and its origin as `Origin`.
pub(super) fn check_local(req: &Request) -> Result<(), String> {
    match req.header("host") {
        None => return Err("the request has no Host header".into()),
        Some(h) if !is_local_host(strip_port(h)) => {
            return Err(format!(
                "Host {h:?} is not local; the proxy only answers requests addressed to localhost or a loopback address"
            ));
        }
        _ => {}
    }
    if let Some(o) = req.header("origin") {
        let local = url::Url::parse(o)
            .ok()
            .and_then(|u| u.host_str().map(is_local_host))
            .unwrap_or(false);
        if !local {
            return Err(format!(
                "Origin {o:?} is not local; the proxy refuses requests from web pages elsewhere"
            ));
        }
    }
    Ok(())
}

pub(super) fn is_secret_header(name: &str) -> bool {
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

    fn req(headers: &[(&str, &str)]) -> Request {
        Request {
            method: "POST".into(),
            target: "/mcp".into(),
            http10: false,
            headers: headers.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect(),
            body: vec![],
        }
    }

    #[test]
    fn dns_rebinding_is_refused_by_host_and_origin() {
        assert!(check_local(&req(&[("Host", "127.0.0.1:8931")])).is_ok());
        assert!(check_local(&req(&[("Host", "localhost:8931"), ("Origin", "http://localhost:3000")])).is_ok());
        assert!(check_local(&req(&[("host", "[::1]:8931")])).is_ok());
        let e = check_local(&req(&[("Host", "evil.example:8931")])).unwrap_err();
        assert!(e.contains("not local"), "{e}");
        let e = check_local(&req(&[("Host", "127.0.0.1:8931"), ("Origin", "https://evil.example")])).unwrap_err();
        assert!(e.contains("Origin"), "{e}");
        assert!(check_local(&req(&[("Host", "127.0.0.1"), ("Origin", "null")])).is_err());
        assert!(check_local(&req(&[])).is_err(), "no Host at all");
        // A name that merely starts like a local one is not local.
        assert!(check_local(&req(&[("Host", "127.0.0.1.evil.example")])).is_err());
        assert!(check_local(&req(&[("Host", "localhost.evil.example")])).is_err());
    }

    #[test]
    fn a_missing_duplicate_or_malformed_host_is_a_syntax_error() {
        assert!(check_host_syntax(&req(&[("Host", "127.0.0.1:8931")])).is_ok());
        assert!(check_host_syntax(&req(&[("Host", "[::1]:8931")])).is_ok());
        assert!(
            check_host_syntax(&req(&[("Host", "evil.example")])).is_ok(),
            "well-formed, refused later as not local"
        );
        for bad in [
            "",
            "127.0.0.1:8931/x",
            "a b",
            "user@127.0.0.1",
            "127.0.0.1:port",
            "[::1",
        ] {
            let Err(e) = check_host_syntax(&req(&[("Host", bad)])) else {
                panic!("{bad:?} passed")
            };
            assert!(e.contains("not a host name"), "{bad:?}: {e}");
        }
        assert!(check_host_syntax(&req(&[])).unwrap_err().contains("no Host"));
        let two = req(&[("Host", "localhost"), ("host", "localhost")]);
        assert!(check_host_syntax(&two).unwrap_err().contains("2 Host headers"));
        let two = req(&[
            ("Host", "localhost"),
            ("Origin", "http://localhost"),
            ("origin", "http://x"),
        ]);
        assert!(check_host_syntax(&two).unwrap_err().contains("2 Origin headers"));
    }

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
