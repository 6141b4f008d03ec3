//! Exit statuses and messages that say what happened: HTTP batch and
//! error answers, unloadable configs, usage errors, servers that exit.

use super::*;

// ---------------------------------------------------------------------------
// 12. A batch answer over HTTP fails at once, with the right words.

#[test]
fn an_http_batch_answer_fails_at_once_and_says_what_it_is() {
    let server = HostileHttp::start(&["--mode", "batch"]);
    let (mut c, sink) = connect(HttpTarget::streamable(server.url("/mcp")), quick());
    c.initialize(&HandshakeOptions::default(), T).unwrap().unwrap();
    let started = Instant::now();
    let err = c.request("tools/list", None, T).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(10), "waited for the timeout");
    let ClientError::Http { error, .. } = &err else {
        panic!("{err:?}")
    };
    assert!(error.contains("batch"), "{error}");
    c.close();
    let evs = snapshot(&sink);
    let batch = received(&evs)
        .into_iter()
        .find(|f| f.kind() == Kind::Batch)
        .expect("the batch is kept as it came");
    let words: Vec<&str> = batch.anomalies().descriptions().map(|(_, d)| d).collect();
    assert!(words.iter().all(|d| !d.contains("stdio")), "{words:?}");
}

/// #18: an HTTP 400 whose body is the JSON-RPC error answering the request is
/// that error (exit 1, its code and message), not also an HTTP failure.
#[test]
fn an_http_400_carrying_a_jsonrpc_error_is_that_error() {
    let server = HostileHttp::start(&["--mode", "bad-request"]);
    let url = server.url("/mcp");
    let out = run_bin(
        &[
            "call",
            "--server-url",
            &url,
            "--method",
            "tools/call",
            "--params",
            r#"{"name":"nope"}"#,
        ],
        Duration::from_secs(60),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("-32602") && err.contains("no tool named nope"), "{err}");
    assert!(!err.contains("answered HTTP 400"), "{err}");
}

// ---------------------------------------------------------------------------
// 14. --config F --server N shows the real load error.

#[test]
fn a_config_that_cannot_be_loaded_is_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, bytes: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    };
    let cases: Vec<(PathBuf, &str)> = vec![
        (dir.path().join("missing.json"), "No such file"),
        (file("malformed.json", b"{\"mcpServers\": {"), "JSON"),
        (file("empty.json", b""), "empty"),
        (file("binary.json", b"\x00\xff\xfe\x01"), ""),
        (dir.path().to_owned(), ""),
        (file("shape.json", b"{\"mcpServers\": 5}"), "mcpServers"),
    ];
    for (path, says) in cases {
        let mut app = mcpscope_app::McpscopeApp::with_context(egui::Context::default());
        app.startup(mcpscope_app::StartupArgs {
            config: Some(path.clone()),
            server: Some("a".into()),
            ..Default::default()
        });
        // The config is read on a worker.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while app.importing() {
            assert!(std::time::Instant::now() < deadline, "the config was never read");
            app.pump();
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let (_, message) = app.message.clone().expect("a message");
        assert!(
            !message.starts_with("no server named"),
            "{}: the load error is hidden: {message}",
            path.display()
        );
        assert!(message.contains(says), "{}: {message}", path.display());
    }
}

// ---------------------------------------------------------------------------
// 15, 16. Exit statuses and messages that say what happened.

#[test]
fn usage_errors_exit_64_in_every_subcommand() {
    for args in [
        vec!["doctor", "--transport", "http"],
        vec!["listen", "--transport", "sse"],
        vec!["proxy"],
        vec!["call", "--method", "x", "--elicit-accept", "[1]", "--", "true"],
        vec!["call", "--tool-name", "add", "--params", r#"{"a":1}"#, "--", "true"],
        vec!["lint"],
    ] {
        let out = run_bin(&args, Duration::from_secs(20));
        assert_eq!(out.status.code(), Some(64), "{args:?}: {}", text(&out.stderr));
    }
}

#[test]
fn a_server_that_exits_at_once_is_explained_with_its_status_and_stderr() {
    let mut args = vec!["call", "--method", "tools/list", "--"];
    let server = hostile_args("exit-at-once", &[]);
    args.extend(server.iter().map(String::as_str));
    let out = run_bin(&args, Duration::from_secs(30));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("exited with code 3"), "{err}");
    assert!(
        err.contains("HOSTILE_CONFIG is not set"),
        "the server's last words: {err}"
    );
}

#[test]
fn random_bytes_are_not_an_empty_capture_and_diff_names_skipped_lines() {
    let dir = tempfile::tempdir().unwrap();
    let noise = dir.path().join("noise.jsonl");
    let bytes: Vec<u8> = (0u32..1_000_000)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
        .collect();
    std::fs::write(&noise, bytes).unwrap();
    let out = run_bin(&["lint", noise.to_str().unwrap()], Duration::from_secs(20));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(
        !err.contains("empty") && err.contains("not an mcpscope capture"),
        "{err}"
    );

    let cap = dir.path().join("c.jsonl");
    let good = format!(
        "{}\n{}\n{}\n",
        serde_json::json!({"format": "mcpscope-capture", "version": 1}),
        r#"{"t_us":1,"seq":0,"dir":"out","raw":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}","eol":"lf"}"#,
        "garbage that is not a record"
    );
    std::fs::write(&cap, good).unwrap();
    let c = cap.to_str().unwrap();
    let out = run_bin(&["diff", c, c], Duration::from_secs(20));
    let err = text(&out.stderr);
    assert!(err.contains("skipped") && err.contains("line 3"), "{err}");
}
