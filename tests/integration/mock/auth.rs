//! `mcpscope mock --auth`: clients sign in to the mock's own authorization
//! server.

use super::*;

/// `--auth`: the endpoint wants a token, and the mock's own authorization
/// server hands one out; `mcpscope call` and the Python SDK's OAuth client
/// each sign in from scratch (discovery, registration, PKCE, token) and then
/// get the recorded answers. Without signing in: 401, exit 3.
#[test]
fn with_auth_clients_sign_in_to_the_mocks_own_authorization_server() {
    use mcpscope_core::protocol::auth::Step;
    use mcpscope_core::record::capture;
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("add.jsonl");
    let args = ["--tool-name", "add", "--tool-arg", "a=2", "--tool-arg", "b=3"];
    let recorded = record(&cap, &args, &py_server());
    let mock = HttpMock::start(&[cap.to_str().unwrap(), "--auth"]);

    let mut refused = vec!["call", "--server-url", &mock.url, "--oauth", "off"];
    refused.extend(args);
    let out = mcpscope(&refused);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("401"), "{}", text(&out.stderr));

    let signed_in = dir.path().join("signed-in.jsonl");
    let mut call = vec![
        "call",
        "--server-url",
        &mock.url,
        "--auth-non-interactive",
        "--capture",
        signed_in.to_str().unwrap(),
    ];
    call.extend(args);
    let out = mcpscope(&call);
    assert_eq!(out.status.code(), Some(0), "{}\n{}", text(&out.stderr), mock.stderr());
    assert_eq!(text(&out.stdout), recorded);
    let steps = auth_steps(&capture::load(&signed_in).unwrap().events);
    assert_eq!(
        steps,
        [
            Step::Challenge,
            Step::ResourceMetadata,
            Step::ServerMetadata,
            Step::Registration,
            Step::Authorize,
            Step::Callback,
            Step::Token,
            Step::Retry,
        ]
    );

    let client = repo().join("tests/clients/py_oauth_client.py");
    let out = Command::new(python())
        .args([client.to_str().unwrap(), &mock.url, "add", r#"{"a":2,"b":3}"#])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", text(&out.stderr), mock.stderr());
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(seen["browser"], 1, "{seen}");
    assert_eq!(seen["result"]["structuredContent"]["result"], 5, "{seen}");
    assert!(seen["tools"].as_array().unwrap().iter().any(|t| t == "add"), "{seen}");

    // A client that reaches the mock as `localhost` signs in too: the
    // metadata names the resource as it uses it (the SDK checks).
    let as_localhost = mock.url.replace("127.0.0.1", "localhost");
    let out = Command::new(python())
        .args([client.to_str().unwrap(), &as_localhost, "add", r#"{"a":2,"b":3}"#])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", text(&out.stderr), mock.stderr());

    let log = mock.stderr();
    assert_eq!(log.matches("auth: issued an access token").count(), 3, "{log}");
    assert!(
        !log.contains("mock-access-") && !log.contains("mock-code-"),
        "no secret on stderr: {log}"
    );
}
