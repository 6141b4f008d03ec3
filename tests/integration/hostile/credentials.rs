//! Credentials go only to the origin the user named, are masked in URLs,
//! and the app's captures are private.

use super::*;

// ---------------------------------------------------------------------------
// 1. Credentials go only to the origin the user named.

#[test]
fn an_sse_endpoint_on_another_origin_is_refused_and_gets_no_credentials() {
    let server = HostileHttp::start(&["--mode", "sse-steal"]);
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("c.jsonl");
    let url = server.url("/sse");
    let out = run_bin(
        &[
            "call",
            "--method",
            "tools/list",
            "--transport",
            "sse",
            "--server-url",
            &url,
            "-H",
            "Authorization: Bearer s3cret-token",
            "--timeout-ms",
            "20000",
            "--capture",
            cap.to_str().unwrap(),
        ],
        Duration::from_secs(30),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("another origin") && err.contains("127.0.0.2"), "{err}");
    let stolen: Vec<String> = server
        .reported()
        .into_iter()
        .filter(|l| l.starts_with("STOLEN"))
        .collect();
    assert!(stolen.is_empty(), "credentials went to another origin: {stolen:?}");
    let loaded = capture::load(&cap).unwrap();
    assert!(loaded.events.iter().any(|e| matches!(e, Event::Http(h)
        if h.error.as_deref().is_some_and(|x| x.contains("refused the endpoint")))));
}

#[test]
fn a_redirect_to_another_origin_is_recorded_and_not_followed() {
    for status in ["301", "307", "308"] {
        let server = HostileHttp::start(&["--mode", "redirect-other", "--status", status]);
        let target = HttpTarget::streamable(server.url("/mcp")).with_header("Authorization", "Bearer s3cret-token");
        let (mut c, sink) = connect(target, SessionOptions { ..quick() });
        let started = Instant::now();
        let err = c.initialize(&HandshakeOptions::default(), T).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(10), "waited for a timeout");
        let ClientError::Http { error, .. } = &err else {
            panic!("{err:?}")
        };
        assert!(
            error.contains("another origin") && error.contains("127.0.0.2"),
            "{status}: {error}"
        );
        c.close();
        let evs = snapshot(&sink);
        let hops: Vec<&HttpInfo> = http_events(&evs)
            .into_iter()
            .filter(|h| h.status == Some(status.parse().unwrap()))
            .collect();
        assert_eq!(hops.len(), 1, "{status}: the redirect is recorded once");
        assert!(
            hops[0]
                .received_header("location")
                .is_some_and(|l| l.contains("127.0.0.2"))
        );
        assert!(hops[0].text.contains("redirected"), "{:?}", hops[0]);
        let stolen: Vec<String> = server
            .reported()
            .into_iter()
            .filter(|l| l.starts_with("STOLEN"))
            .collect();
        assert!(stolen.is_empty(), "{status}: followed to another origin: {stolen:?}");
    }
}

#[test]
fn a_same_origin_307_is_followed_with_the_method_and_recorded() {
    let server = HostileHttp::start(&["--mode", "redirect-same"]);
    let (mut c, sink) = connect(HttpTarget::streamable(server.url("/mcp")), quick());
    let hs = c.initialize(&HandshakeOptions::default(), T).unwrap().unwrap();
    assert!(hs.usable());
    c.close();
    let evs = snapshot(&sink);
    let http = http_events(&evs);
    assert!(
        http.iter().any(|h| h.status == Some(307) && h.text.contains("/mcp2")),
        "{http:#?}"
    );
    assert!(
        http.iter().any(|h| h.status == Some(200) && h.url.ends_with("/mcp2")),
        "{http:#?}"
    );
}

// ---------------------------------------------------------------------------
// 4. Credentials in URLs are masked wherever a URL is shown or recorded.

#[test]
fn credentials_in_the_url_never_reach_the_capture_or_the_trace() {
    let server = HostileHttp::start(&["--mode", "plain"]);
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("c.jsonl");
    let url = format!(
        "http://alice:pw-SECRET1@127.0.0.1:{}/mcp?token=SECRET2&page=1",
        server.port
    );
    let out = run_bin(
        &[
            "call",
            "--method",
            "tools/list",
            "--server-url",
            &url,
            "--trace",
            "--capture",
            cap.to_str().unwrap(),
        ],
        Duration::from_secs(30),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let recorded = std::fs::read_to_string(&cap).unwrap();
    for secret in ["SECRET1", "SECRET2", "alice"] {
        assert!(!err.contains(secret), "{secret} in the trace:\n{err}");
        assert!(!recorded.contains(secret), "{secret} in the capture:\n{recorded}");
    }
    assert!(recorded.contains("token=****"), "{recorded}");
    assert!(err.contains("page=1"), "the rest of the URL is still shown:\n{err}");
}

// ---------------------------------------------------------------------------
// 3. Captures of the app: per-user private directory, private files.

#[test]
fn the_apps_captures_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let mut a = mcpscope_app::inspection::Inspection::launch(
        Target::Stdio(hostile("interleave", &["--count", "1"])),
        "2025-11-25",
        None,
    );
    let b = mcpscope_app::inspection::Inspection::launch(
        Target::Stdio(hostile("interleave", &["--count", "1"])),
        "2025-11-25",
        None,
    );
    let (pa, pb) = (a.capture_path.clone().unwrap(), b.capture_path.clone().unwrap());
    assert_ne!(pa, pb);
    let mode = |p: &Path| std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&pa), 0o600, "{}", pa.display());
    assert_eq!(mode(pa.parent().unwrap()), 0o700, "{}", pa.display());
    assert!(!pa.starts_with(std::env::temp_dir()), "{}", pa.display());
    a.stop();
    drop(a);
    drop(b);
    let _ = std::fs::remove_file(pa);
    let _ = std::fs::remove_file(pb);
}
