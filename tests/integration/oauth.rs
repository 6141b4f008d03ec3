//! OAuth against a real authorization server, the TypeScript SDK's own
//! (tests/servers/node_oauth_server.mjs), through `mcpscope call` as a user
//! runs it: non-interactively, with a browser and the loopback listener,
//! with OAuth off, and with a token store. The official conformance suite
//! covers the protocol's corners (scripts/conformance).

use crate::support::*;
use mcpscope_core::analysis::lint::{self, LintOptions};
use mcpscope_core::protocol::auth::Step;
use mcpscope_core::record::capture;
use mcpscope_core::transport::event::Event;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct OAuthServer {
    child: Child,
    url: String,
    stderr: Arc<Mutex<String>>,
}

impl OAuthServer {
    fn start() -> OAuthServer {
        let sdk = repo().join("tests/peers/node_modules/@modelcontextprotocol/sdk/package.json");
        assert!(
            sdk.exists(),
            "{} is missing: run scripts/setup-test-peers",
            sdk.display()
        );
        let mut child = Command::new("node")
            .arg(repo().join("tests/servers/node_oauth_server.mjs"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("starting node");
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        let mut err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let (tx, rx) = crossbeam_channel::bounded(1);
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("MCP_URL=") {
                    let _ = tx.send(url.to_owned());
                }
            }
        });
        // Owned (and so killed on drop) before the wait for its address can fail.
        let mut server = OAuthServer {
            child,
            url: String::new(),
            stderr,
        };
        server.url = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("the OAuth test server did not start: {}", server.stderr.lock().unwrap()));
        server
    }

    /// Every secret the server handed out: access tokens and codes, once `n` are known.
    fn secrets(&self, n: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let text = self.stderr.lock().unwrap().clone();
            let mut found = Vec::new();
            for line in text.lines() {
                if let Some(t) = line.strip_prefix("issued ") {
                    found.push(t.trim().to_owned());
                }
                if let Some(u) = line.strip_prefix("redirected ")
                    && let Some((_, rest)) = u.split_once("code=")
                {
                    found.push(rest.split('&').next().unwrap_or_default().trim().to_owned());
                }
            }
            if found.len() >= n {
                return found;
            }
            assert!(
                Instant::now() < deadline,
                "the server reported {} secrets: {text}",
                found.len()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        mcpscope_core::transport::process::signal_group(self.child.id(), libc::SIGKILL);
        let _ = self.child.wait();
    }
}

fn call(url: &str, extra: &[&str], env: &[(&str, String)]) -> Output {
    let mut cmd = crate::support::mcpscope_command();
    cmd.args([
        "call",
        "--server-url",
        url,
        "--tool-name",
        "whoami",
        "--timeout-ms",
        "20000",
    ])
    .args(extra)
    .env_remove("BROWSER");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("running mcpscope")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn non_interactive_authorization_is_recorded_step_by_step_without_secrets() {
    let s = OAuthServer::start();
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("oauth.jsonl");
    let out = call(
        &s.url,
        &["--auth-non-interactive", "--capture", cap.to_str().unwrap()],
        &[],
    );
    assert!(
        out.status.success(),
        "stderr: {}\nserver: {}",
        text(&out.stderr),
        s.stderr.lock().unwrap()
    );
    let stdout = text(&out.stdout);
    assert!(stdout.contains("mcp:tools") && stdout.contains("clientId"), "{stdout}");

    let loaded = capture::load(&cap).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(
        auth_steps(&loaded.events),
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
    // The retried request carries the token, masked in the record.
    let bearer_sent = loaded.events.iter().any(|e| {
        matches!(e, Event::Http(h) if h.method == "POST" && h.status == Some(200) && h.sent_header("authorization") == Some("Bearer ****"))
    });
    assert!(bearer_sent, "no authorized POST in the capture");
    // Not one secret in the file, and no OAuth error body taken for a frame.
    let raw = std::fs::read_to_string(&cap).unwrap();
    for secret in s.secrets(2) {
        assert!(!raw.contains(&secret), "{secret} is in the capture");
    }
    let findings = lint::lint(&loaded.events, &LintOptions::default());
    // Not even a warning: the initialize sent again after authorizing is
    // the handshake, not a second one or an early request.
    let lines: Vec<String> = findings.iter().map(|f| f.line()).collect();
    assert!(lines.is_empty(), "{lines:?}");
    assert!(!text(&out.stderr).contains("warning"), "{}", text(&out.stderr));
}

#[test]
fn a_browser_brings_the_code_back_to_the_loopback_listener() {
    let s = OAuthServer::start();
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("browser.jsonl");
    let browser = format!("node {}", repo().join("tests/servers/fake_browser.mjs").display());
    let out = call(
        &s.url,
        &["--capture", cap.to_str().unwrap(), "--auth-timeout-ms", "30000"],
        &[("BROWSER", browser)],
    );
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "stderr: {stderr}");
    assert!(stderr.contains("authorize in the browser"), "{stderr}");
    let loaded = capture::load(&cap).unwrap();
    let callback = loaded
        .events
        .iter()
        .find_map(|e| match e {
            Event::Auth(a) if a.step == Step::Callback => Some(a.clone()),
            _ => None,
        })
        .expect("a callback step");
    assert_eq!(callback.status, Some(200));
    assert!(
        callback.url.starts_with("http://127.0.0.1:") && callback.url.contains("code=****"),
        "{}",
        callback.url
    );
    let raw = std::fs::read_to_string(&cap).unwrap();
    for secret in s.secrets(2) {
        assert!(!raw.contains(&secret), "{secret} is in the capture");
    }
}

/// #25 item 1: a redirect with another state ends the sign-in at once,
/// saying why (it waited out the whole callback timeout).
#[test]
fn a_redirect_with_another_state_ends_the_sign_in_at_once() {
    let s = OAuthServer::start();
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("tampered.jsonl");
    let browser = format!("node {}", repo().join("tests/servers/fake_browser.mjs").display());
    let started = std::time::Instant::now();
    let out = call(
        &s.url,
        &["--capture", cap.to_str().unwrap(), "--auth-timeout-ms", "120000"],
        &[("BROWSER", browser), ("FAKE_BROWSER_TAMPER", "state".into())],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("state did not match"), "{stderr}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "not the 120 s timeout"
    );
    let loaded = capture::load(&cap).unwrap();
    let failed = loaded
        .events
        .iter()
        .find_map(|e| match e {
            Event::Auth(a) if a.step == Step::Failed => a.error.clone(),
            _ => None,
        })
        .expect("a failed step on the timeline");
    assert!(failed.contains("state did not match"), "{failed}");
}

#[test]
fn without_oauth_the_challenge_is_one_clear_line() {
    let s = OAuthServer::start();
    let out = call(&s.url, &["--oauth", "off"], &[]);
    assert_eq!(out.status.code(), Some(3));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("HTTP 401") && stderr.contains("WWW-Authenticate: Bearer"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("not-jsonrpc") && !stderr.contains("warning"),
        "{stderr}"
    );
}

#[test]
fn a_failed_authorization_exits_3_with_the_reason() {
    let s = OAuthServer::start();
    // The SDK's authorization server refuses metadata document client ids
    // and offers registration, so a client id it never issued is refused at the token endpoint.
    let out = call(
        &s.url,
        &["--auth-non-interactive", "--client-id", "never-registered"],
        &[],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("authorization failed"), "{stderr}");
}

#[test]
fn a_token_store_keeps_the_token_between_runs() {
    use std::os::unix::fs::PermissionsExt;
    let s = OAuthServer::start();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("state/tokens.json");
    let store_arg = format!("--token-store={}", store.display());
    let first = dir.path().join("first.jsonl");
    let out = call(
        &s.url,
        &[
            "--auth-non-interactive",
            &store_arg,
            "--capture",
            first.to_str().unwrap(),
        ],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::metadata(&store).unwrap().permissions().mode() & 0o777, 0o600);
    let second = dir.path().join("second.jsonl");
    let out = call(
        &s.url,
        &[
            "--auth-non-interactive",
            &store_arg,
            "--capture",
            second.to_str().unwrap(),
        ],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!auth_steps(&capture::load(&first).unwrap().events).is_empty());
    assert!(
        auth_steps(&capture::load(&second).unwrap().events).is_empty(),
        "the stored token should have been used at once"
    );
}

/// The app draws a recorded authorization step by step on its own
/// lifeline, and a step's detail is its exchange as a tree, secrets masked.
#[test]
fn the_app_draws_the_authorization_on_its_own_lifeline() {
    use egui_kittest::Harness;
    use egui_kittest::kittest::Queryable as _;
    use mcpscope_app::{McpscopeApp, StartupArgs};
    let s = OAuthServer::start();
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("oauth.jsonl");
    let out = call(
        &s.url,
        &["--auth-non-interactive", "--capture", cap.to_str().unwrap()],
        &[],
    );
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let mut h = Harness::builder().with_size([1440.0, 900.0]).build_eframe(move |cc| {
        McpscopeApp::new(
            cc,
            StartupArgs {
                open: Some(cap),
                ..StartupArgs::default()
            },
        )
    });
    // The capture is read on a worker: two frames are not enough on a busy machine.
    step_until(&mut h, "the capture loaded", |app| {
        app.session().inspection.as_ref().is_some_and(|i| !i.loading())
    });
    let labels: Vec<String> = {
        let model = &h
            .state()
            .session()
            .inspection
            .as_ref()
            .expect("the capture opened")
            .model;
        assert!(model.store.has_auth());
        model
            .store
            .iter()
            .filter(|r| r.lane() == mcpscope_core::timeline::store::Lane::Auth)
            .map(|r| mcpscope_app::panels::timeline::row_label(&model.store, &r))
            .collect()
    };
    let expected = [
        "OAuth challenge",
        "OAuth resource metadata GET /.well-known/oauth-protected-resource",
        "OAuth server metadata GET /.well-known/oauth-authorization-server → 200",
        "OAuth registration POST /register → 201",
        "OAuth authorize GET /authorize",
        "OAuth callback",
        "OAuth token POST /token → 200",
        "OAuth retry",
    ];
    assert_eq!(labels.len(), expected.len(), "{labels:#?}");
    for (label, want) in labels.iter().zip(expected) {
        assert!(label.starts_with(want), "{label:?} should start with {want:?}");
    }
    assert!(
        h.query_all_by_label_contains("OAuth resource metadata")
            .next()
            .is_some(),
        "the steps are rows of the timeline"
    );
    h.get_by_label_contains("OAuth token POST /token").click();
    h.step();
    h.step();
    assert!(
        h.query_all_by_label_contains("\"****\"").next().is_some(),
        "the token in the tree is masked"
    );
    assert!(h.query_all_by_label_contains("authorization (OAuth)").next().is_some());
    let raw = std::fs::read_to_string(dir.path().join("oauth.jsonl")).unwrap();
    for secret in s.secrets(2) {
        assert!(!raw.contains(&secret));
    }
}

/// screenshots/oauth-flow.png: the authorization recorded by `mcpscope call`,
/// opened in the app, its token step selected. Run by `scripts/screenshots`
/// (CPU rendering through wgpu).
#[test]
#[ignore = "writes screenshots/; run scripts/screenshots"]
fn screenshots_of_the_authorization_flow() {
    use egui_kittest::Harness;
    use mcpscope_app::{McpscopeApp, StartupArgs};
    let s = OAuthServer::start();
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("oauth.jsonl");
    let out = call(
        &s.url,
        &["--auth-non-interactive", "--capture", cap.to_str().unwrap()],
        &[],
    );
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let mut h = Harness::builder()
        .with_size([1440.0, 900.0])
        .allow_missing_glyphs()
        .wgpu()
        .build_eframe(move |cc| {
            McpscopeApp::new(
                cc,
                StartupArgs {
                    open: Some(cap),
                    ..StartupArgs::default()
                },
            )
        });
    step_until(&mut h, "the capture loaded", |app| {
        app.session().inspection.as_ref().is_some_and(|i| !i.loading())
    });
    let token = {
        let model = &h.state().session().inspection.as_ref().unwrap().model;
        model
            .store
            .iter()
            .find(|r| r.auth_step() == Some(Step::Token))
            .map(|r| r.index())
            .expect("a token step")
    };
    h.state_mut().session_mut().timeline.select(token);
    {
        let view = h.state_mut().session_mut();
        let model = &view.inspection.as_ref().unwrap().model;
        view.detail.show_row(model, Some(token));
        view.detail.tree.expand_all();
    }
    for _ in 0..6 {
        h.step();
    }
    let image = h
        .render()
        .expect("rendering the app (is mesa-vulkan-drivers installed?)");
    let path = repo().join("screenshots/oauth-flow.png");
    image.save(&path).unwrap();
    eprintln!("wrote {}", path.display());
}

/// The app signs in when the server asks: the handshake's 401 is held back
/// from the driver, the authorization runs on a worker with every step on
/// the timeline, and the session goes on with the token.
#[test]
fn the_app_signs_in_and_draws_the_flow_on_the_timeline() {
    use egui_kittest::Harness;
    use mcpscope_app::inspection::Inspection;
    use mcpscope_app::saved_server::SignIn;
    use mcpscope_app::{McpscopeApp, StartupArgs};
    use mcpscope_core::protocol::era::EraChoice;
    use mcpscope_core::transport::auth::Interaction;
    use mcpscope_core::transport::target::{HttpTarget, Target};
    let s = OAuthServer::start();
    let mut h = Harness::builder()
        .with_size([1440.0, 900.0])
        .build_eframe(|cc| McpscopeApp::new(cc, StartupArgs::default()));
    h.step();
    let sign_in = SignIn {
        scopes: "mcp:tools".into(),
        ..SignIn::default()
    };
    h.state_mut().session_mut().inspection = Some(Inspection::launch_signing_in(
        Target::Http(HttpTarget::streamable(&s.url)),
        "2025-11-25",
        EraChoice::Legacy,
        sign_in.auth_config().unwrap(),
        // The test server approves at once; a person would use the browser.
        Interaction::NonInteractive,
        mcpscope_app::inspection::AppServices {
            tokens: &mcpscope_app::tokens::AppTokens::in_memory(),
            otlp_endpoint: None,
            apps: true,
        },
        None,
    ));
    let deadline = Instant::now() + Duration::from_secs(30);
    let ready = |app: &McpscopeApp| {
        app.session().inspection.as_ref().is_some_and(|i| {
            i.model.handshake.initialized_row.is_some()
                && i.model.store.iter().any(|r| r.auth_step() == Some(Step::Retry))
        })
    };
    while !ready(h.state()) {
        assert!(
            Instant::now() < deadline,
            "no signed-in handshake: {:?}",
            h.state()
                .session()
                .inspection
                .as_ref()
                .and_then(|i| i.sign_in())
                .and_then(|si| si.failed())
        );
        h.step();
        std::thread::sleep(Duration::from_millis(20));
    }
    h.step();
    let app = h.state();
    let i = app.session().inspection.as_ref().unwrap();
    let steps: Vec<Step> = i.model.store.iter().filter_map(|r| r.auth_step()).collect();
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
    let si = i.sign_in().unwrap();
    assert!(si.failed().is_none() && !si.in_progress());
    assert!(si.summary().contains("mcp:tools"), "{}", si.summary());
    // The handshake was answered (under the reissued id) and the session goes on.
    assert!(i.model.handshake.judged().is_some());
    // The state is shown above the timeline, and the tokens can be forgotten.
    {
        use egui_kittest::kittest::Queryable as _;
        assert!(h.query_all_by_label_contains("authorized by").next().is_some());
        h.get_by_label("Forget tokens").click();
    }
    h.step();
    h.step();
    let si = h.state().session().inspection.as_ref().unwrap().sign_in().unwrap();
    assert_eq!(si.summary(), "not authorized");
}

/// #33: the app keeps the tokens it was given: a session launched after a
/// restart (a new store over the same file, as the app opens at start)
/// goes straight in, with no authorization step, and "Forget tokens"
/// forgets them in the store too.
#[test]
fn the_app_signs_in_once_and_still_works_after_a_restart() {
    use mcpscope_app::inspection::Inspection;
    use mcpscope_app::tokens::AppTokens;
    use mcpscope_core::config::token_store::TokenStore;
    use mcpscope_core::protocol::auth::flow::AuthConfig;
    use mcpscope_core::protocol::era::EraChoice;
    use mcpscope_core::transport::auth::Interaction;
    use mcpscope_core::transport::target::{HttpTarget, Target};
    let s = OAuthServer::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens.json");
    let run = |tokens: &AppTokens| {
        let mut i = Inspection::launch_signing_in(
            Target::Http(HttpTarget::streamable(&s.url)),
            "2025-11-25",
            EraChoice::Legacy,
            AuthConfig::default(),
            Interaction::NonInteractive,
            mcpscope_app::inspection::AppServices {
                tokens,
                otlp_endpoint: None,
                apps: true,
            },
            None,
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        while i.model.handshake.judged().is_none() {
            assert!(
                Instant::now() < deadline,
                "no handshake: {:?}",
                i.sign_in().and_then(|si| si.failed())
            );
            i.drain();
            std::thread::sleep(Duration::from_millis(20));
        }
        let steps: Vec<Step> = i.model.store.iter().filter_map(|r| r.auth_step()).collect();
        (i, steps)
    };
    let first = AppTokens::kept_in(TokenStore::open(&file).unwrap());
    let (session, steps) = run(&first);
    assert!(steps.contains(&Step::Token), "{steps:?}");
    drop(session);
    drop(first);
    let after_restart = AppTokens::kept_in(TokenStore::open(&file).unwrap());
    let (session, steps) = run(&after_restart);
    assert!(
        steps.is_empty(),
        "the kept token should have been used at once: {steps:?}"
    );
    session.sign_in().unwrap().forget_tokens();
    let reread = TokenStore::open(&file).unwrap();
    assert!(reread.load(&s.url).token.is_none(), "forgotten in the store too");
}

/// #33: `--token-store keyring` keeps the token in a real Secret Service
/// (GNOME Keyring): the second run signs in with no authorization step, the
/// token is in the keyring under the service `mcpscope`, and no file holds it.
#[test]
fn the_keyring_keeps_the_token_between_runs() {
    let s = OAuthServer::start();
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first.jsonl");
    let second = dir.path().join("second.jsonl");
    let script = r#"
call() { "$MCPSCOPE" call --server-url "$URL" --tool-name whoami --timeout-ms 20000 \
  --auth-non-interactive --token-store keyring --capture "$1"; }
call "$FIRST"
call "$SECOND"
echo "--- keyring"
secret-tool search --all service mcpscope 2>&1
echo "--- state"
ls -A "$XDG_STATE_HOME/mcpscope" 2>&1 || true
"#;
    let out = in_a_keyring_session(
        dir.path(),
        script,
        &[
            ("URL", &s.url),
            ("FIRST", first.to_str().unwrap()),
            ("SECOND", second.to_str().unwrap()),
        ],
    );
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(!stderr.contains("instead"), "the keyring was there: {stderr}");
    assert!(!auth_steps(&capture::load(&first).unwrap().events).is_empty());
    assert!(
        auth_steps(&capture::load(&second).unwrap().events).is_empty(),
        "the token from the keyring should have been used at once: {stderr}"
    );
    let keyring = stdout.split("--- keyring").nth(1).unwrap_or_default();
    assert!(keyring.contains(&format!("username = oauth:{}", s.url)), "{keyring}");
    assert!(keyring.contains("username = oauth-servers"), "{keyring}");
    // The access token the server issued is what the keyring holds.
    assert!(
        s.secrets(2)
            .iter()
            .any(|t| keyring.contains(&format!("\"access_token\":\"{t}\""))),
        "the issued token is not in the keyring: {keyring}"
    );
    let state = stdout.split("--- state").nth(1).unwrap_or_default();
    assert!(
        !state.contains("oauth-tokens.json"),
        "a token file was written: {state}"
    );
}

/// #33: with no keyring service (no D-Bus session bus at all), the keyring
/// store says so once and keeps the tokens in the private file instead.
#[test]
fn without_a_keyring_the_tokens_go_to_the_private_file() {
    use std::os::unix::fs::PermissionsExt;
    let s = OAuthServer::start();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let mut runs = Vec::new();
    for name in ["first", "second"] {
        let cap = dir.path().join(format!("{name}.jsonl"));
        let mut cmd = crate::support::mcpscope_command();
        cmd.args(["call", "--server-url", &s.url, "--tool-name", "whoami"])
            .args([
                "--timeout-ms",
                "20000",
                "--auth-non-interactive",
                "--token-store",
                "keyring",
            ])
            .arg("--capture")
            .arg(&cap)
            .env("XDG_STATE_HOME", &state)
            .env(
                "DBUS_SESSION_BUS_ADDRESS",
                format!("unix:path={}", dir.path().join("no-bus").display()),
            )
            .env_remove("BROWSER");
        let out = cmd.output().unwrap();
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let notes: Vec<&str> = stderr.lines().filter(|l| l.contains("no keyring service")).collect();
        assert_eq!(notes.len(), 1, "said once per run: {stderr}");
        assert!(notes[0].contains("oauth-tokens.json instead"), "{stderr}");
        runs.push(cap);
    }
    let file = state.join("mcpscope/oauth-tokens.json");
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    assert!(auth_steps(&capture::load(&runs[1]).unwrap().events).is_empty());
}

/// #33: the store's other secrets (the launcher's kept values) in a real
/// Secret Service: this test runs the one below inside a keyring session.
#[test]
fn the_keyring_keeps_secret_values() {
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let script = r#""$TEST_EXE" --exact oauth::secret_values_in_the_keyring_session --ignored --nocapture
echo "--- keyring"
secret-tool search --all service mcpscope 2>&1
"#;
    let out = in_a_keyring_session(dir.path(), script, &[("TEST_EXE", exe.to_str().unwrap())]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("1 passed"), "{stdout}");
    let keyring = stdout.split("--- keyring").nth(1).unwrap_or_default();
    assert!(
        keyring.contains("username = secret:launcher/srv/env/API_KEY"),
        "{keyring}"
    );
    assert!(keyring.contains("secret = sk-in-the-keyring"), "{keyring}");
    assert!(!keyring.contains("X-Gone"), "a forgotten value is deleted: {keyring}");
}

#[test]
#[ignore = "run inside a keyring session by the_keyring_keeps_secret_values"]
fn secret_values_in_the_keyring_session() {
    use mcpscope_core::config::keyring::Keyring;
    use mcpscope_core::config::token_store::TokenStore;
    let mut store = TokenStore::open_keyring(Keyring::open().unwrap()).unwrap();
    assert_eq!(store.place(), "the OS keyring");
    store
        .set_secret("launcher/srv/env/API_KEY", Some("sk-in-the-keyring"))
        .unwrap();
    store.set_secret("launcher/srv/header/X-Gone", Some("v")).unwrap();
    store.set_secret("launcher/srv/header/X-Gone", None).unwrap();
    let again = TokenStore::open_keyring(Keyring::open().unwrap()).unwrap();
    assert_eq!(again.secret("launcher/srv/env/API_KEY"), Some("sk-in-the-keyring"));
    assert_eq!(again.secret("launcher/srv/header/X-Gone"), None);
}

/// #31: `load` against a server that asks for authorization signs in once
/// and every session carries that token: one token issued for every request.
#[test]
fn load_signs_in_once_and_shares_the_token() {
    let s = OAuthServer::start();
    let out = crate::support::mcpscope_command()
        .args([
            "load",
            "--server-url",
            &s.url,
            "--tool-name",
            "whoami",
            "--concurrency",
            "3",
            "--requests",
            "30",
        ])
        .args(["--auth-non-interactive", "--quiet", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["ok"], 30, "{r}");
    let issued = s
        .stderr
        .lock()
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("issued "))
        .count();
    assert_eq!(issued, 1, "one sign-in for every session");
}
