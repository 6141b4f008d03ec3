//! Record on miss: requests the capture never answered go to a fallback
//! server, over stdio and over HTTP, and are recorded.

use super::*;

/// Record on miss: a request the capture never answered goes to the real
/// server given after `--`, the client gets its answer, and the new exchange
/// is recorded in CAPTURE.fallback.jsonl.
#[test]
fn a_miss_goes_to_the_fallback_server_and_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("lists.jsonl");
    let server = py_server();
    record(&cap, &["--method", "tools/list"], &server);
    let bin = bin().display().to_string();
    let mut args = vec![
        "call",
        "--tool-name",
        "echo",
        "--tool-arg",
        "message=from the real server",
        "--",
    ];
    args.extend([
        bin.as_str(),
        "mock",
        cap.to_str().unwrap(),
        "--",
        server.program.as_str(),
    ]);
    args.extend(server.args.iter().map(String::as_str));
    let out = mcpscope(&args);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("from the real server"), "{stdout}");
    let misses = std::fs::read_to_string(dir.path().join("lists.jsonl.fallback.jsonl")).unwrap();
    assert!(
        misses.contains("from the real server") && misses.contains("tools/call"),
        "the fallback exchange is recorded"
    );
    // Without a fallback the same call is refused, naming the nearest recording.
    let mut args = vec!["call", "--tool-name", "echo", "--tool-arg", "message=x", "--"];
    args.extend([bin.as_str(), "mock", cap.to_str().unwrap()]);
    let out = mcpscope(&args);
    assert_ne!(out.status.code(), Some(0));
}

/// Over HTTP too: every session's misses go to one fallback session, recorded
/// in one capture, and a mock stopped with SIGTERM says how many went there.
#[test]
#[cfg(unix)]
fn over_http_a_miss_goes_to_the_fallback_server_and_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("lists.jsonl");
    let server = py_server();
    record(&cap, &["--method", "tools/list"], &server);
    let misses = dir.path().join("misses.jsonl");
    let mut args = vec![
        cap.to_str().unwrap(),
        "--fallback-capture",
        misses.to_str().unwrap(),
        "--",
        server.program.as_str(),
    ];
    args.extend(server.args.iter().map(String::as_str));
    let mut mock = HttpMock::start(&args);
    let echo = ["--tool-name", "echo", "--tool-arg", "message=from the real server"];
    let out = call_over_http(&mock.url, &echo);
    assert!(out.contains("from the real server"), "{out}");
    // A second client's session misses too, and is answered by the same fallback.
    let out = call_over_http(
        &mock.url,
        &["--tool-name", "add", "--tool-arg", "a=2", "--tool-arg", "b=40"],
    );
    assert!(out.contains("42"), "{out}");
    // What was recorded is still served from the recording.
    let listed = call_over_http(&mock.url, &["--method", "tools/list"]);
    assert!(listed.contains("echo"), "{listed}");

    unsafe { libc::kill(mock.child.id() as i32, libc::SIGTERM) };
    // Stopped by a signal, as every subcommand that runs a server: 128 + 15.
    let status = mock.child.wait().unwrap();
    assert_eq!(status.code(), Some(143), "{}", mock.stderr());
    let deadline = Instant::now() + Duration::from_secs(10);
    while !mock.stderr().contains("went to the fallback server") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let stderr = mock.stderr();
    assert!(stderr.contains("2 request(s) went to the fallback server"), "{stderr}");
    let recorded = std::fs::read_to_string(&misses).unwrap();
    assert!(
        recorded.contains("from the real server") && recorded.matches("\"method\":\"tools/call\"").count() == 2,
        "both misses are in the fallback's capture: {recorded}"
    );
}
