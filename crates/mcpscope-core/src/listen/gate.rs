//! Who may talk to a listener, by the request's `Host` and `Origin`.

use crate::listen::request::Request;
use std::net::IpAddr;

/// Who may talk to a listener, by the request's `Host` and `Origin`: the one
/// check of every mcpscope listener (the mock, the reverse proxy, the App
/// pages, the sign-in's redirect listener), run on the head before any of
/// the body is read. A missing, repeated or malformed `Host` (an empty one
/// included) is a 400 (RFC 9112 §3.2); a `Host` or `Origin` that is not this
/// machine, which is how DNS rebinding looks, a 403.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Gate {
    /// The listener in its answers: "mcpscope mock".
    pub(crate) name: &'static str,
    /// The listener in refusals: "the mock".
    who: &'static str,
    /// Opened to other machines by the user: any `Host` is expected, but a
    /// web page elsewhere must still not drive it from a browser.
    any_host: bool,
}

impl Gate {
    pub(crate) const fn loopback(name: &'static str, who: &'static str) -> Self {
        Self {
            name,
            who,
            any_host: false,
        }
    }

    pub(crate) const fn any_host(name: &'static str, who: &'static str) -> Self {
        Self {
            name,
            who,
            any_host: true,
        }
    }

    /// Whether `req` may be answered; if not, the status to refuse it with and why.
    pub(crate) fn admit(&self, req: &Request) -> Result<(), (u16, Refusal)> {
        check_host_syntax(req).map_err(|why| (400, why))?;
        let local = if self.any_host {
            check_local_origin(req, self.who)
        } else {
            check_local(req, self.who)
        };
        local.map_err(|why| (403, why))
    }
}

/// Why a listener refused a request before reading its body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("the request has {count} {name} headers; at most one is allowed")]
    Repeated { name: &'static str, count: usize },
    #[error("the request has no Host header")]
    NoHost,
    #[error("Host {0:?} is not a host name with an optional port")]
    BadHost(String),
    #[error("Host {host:?} is not local; {who} only answers requests addressed to localhost or a loopback address")]
    HostNotLocal { host: String, who: &'static str },
    #[error("Origin {origin:?} is not local; {who} refuses requests from web pages elsewhere")]
    OriginNotLocal { origin: String, who: &'static str },
}

/// RFC 9112 §3.2: a request without exactly one well-formed `Host` is a 400,
/// and two `Origin`s are as ambiguous (which one would the local check have
/// looked at?). This runs before the body is read, so nothing of such a
/// request reaches the upstream.
fn check_host_syntax(req: &Request) -> Result<(), Refusal> {
    for name in ["Host", "Origin"] {
        let count = req.headers.iter().filter(|(k, _)| k.eq_ignore_ascii_case(name)).count();
        if count > 1 {
            return Err(Refusal::Repeated { name, count });
        }
    }
    let Some(host) = req.header("host") else {
        return Err(Refusal::NoHost);
    };
    // Userinfo is not allowed in Host (RFC 9110 §7.2), yet `http` takes it in
    // an authority; and it does not check the port.
    // A host name is needed: an empty one, port or not, names no one.
    let well_formed = !host.contains('@')
        && ureq::http::uri::Authority::try_from(host).is_ok_and(|a| match host.strip_prefix(a.host()) {
            _ if a.host().is_empty() => false,
            Some("") => true,
            Some(port) => port
                .strip_prefix(':')
                .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()) && p.parse::<u16>().is_ok()),
            None => false,
        });
    if !well_formed {
        return Err(Refusal::BadHost(host.to_owned()));
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
/// `who` ("the proxy", "the mock") is named in the reason.
fn check_local(req: &Request, who: &'static str) -> Result<(), Refusal> {
    match req.header("host") {
        None => return Err(Refusal::NoHost),
        Some(h) if !is_local_host(strip_port(h)) => {
            return Err(Refusal::HostNotLocal {
                host: h.to_owned(),
                who,
            });
        }
        _ => {}
    }
    check_local_origin(req, who)
}

/// The `Origin` half of [`check_local`]: what is left of it on a listener the
/// user opened to other machines, where any `Host` is expected but a web
/// page elsewhere must still not drive it from a browser.
fn check_local_origin(req: &Request, who: &'static str) -> Result<(), Refusal> {
    if let Some(o) = req.header("origin") {
        let local = url::Url::parse(o)
            .ok()
            .and_then(|u| u.host_str().map(is_local_host))
            .unwrap_or(false);
        if !local {
            return Err(Refusal::OriginNotLocal {
                origin: o.to_owned(),
                who,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(headers: &[(&str, &str)]) -> Request {
        Request::with_headers(headers)
    }

    #[test]
    fn dns_rebinding_is_refused_by_host_and_origin() {
        assert!(check_local(&req(&[("Host", "127.0.0.1:8931")]), "the proxy").is_ok());
        assert!(
            check_local(
                &req(&[("Host", "localhost:8931"), ("Origin", "http://localhost:3000")]),
                "the proxy"
            )
            .is_ok()
        );
        assert!(check_local(&req(&[("host", "[::1]:8931")]), "the proxy").is_ok());
        let e = check_local(&req(&[("Host", "evil.example:8931")]), "the proxy").unwrap_err();
        assert!(matches!(e, Refusal::HostNotLocal { .. }), "{e}");
        let e = check_local(
            &req(&[("Host", "127.0.0.1:8931"), ("Origin", "https://evil.example")]),
            "the proxy",
        )
        .unwrap_err();
        assert!(matches!(e, Refusal::OriginNotLocal { .. }), "{e}");
        assert!(check_local(&req(&[("Host", "127.0.0.1"), ("Origin", "null")]), "the proxy").is_err());
        assert!(check_local(&req(&[]), "the proxy").is_err(), "no Host at all");
        // A name that merely starts like a local one is not local.
        assert!(check_local(&req(&[("Host", "127.0.0.1.evil.example")]), "the proxy").is_err());
        assert!(check_local(&req(&[("Host", "localhost.evil.example")]), "the proxy").is_err());
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
            ":8931",
            "127.0.0.1:8931/x",
            "a b",
            "user@127.0.0.1",
            "127.0.0.1:port",
            "[::1",
        ] {
            let Err(e) = check_host_syntax(&req(&[("Host", bad)])) else {
                panic!("{bad:?} passed")
            };
            assert_eq!(e, Refusal::BadHost(bad.into()));
        }
        assert_eq!(check_host_syntax(&req(&[])), Err(Refusal::NoHost));
        let two = req(&[("Host", "localhost"), ("host", "localhost")]);
        assert!(
            check_host_syntax(&two)
                .unwrap_err()
                .to_string()
                .contains("2 Host headers")
        );
        let two = req(&[
            ("Host", "localhost"),
            ("Origin", "http://localhost"),
            ("origin", "http://x"),
        ]);
        assert_eq!(
            check_host_syntax(&two),
            Err(Refusal::Repeated {
                name: "Origin",
                count: 2
            })
        );
    }
}
