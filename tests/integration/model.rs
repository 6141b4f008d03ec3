//! The model layer against tests/servers/fake_llm.py, a fake provider the
//! official SDKs (PyPI `openai`, `anthropic`) accept as the real thing: a
//! turn streamed over HTTP in each API, tool calls, usage, the provider's
//! errors, a cut stream, and the key kept out of what is recorded.

use crate::support::*;
use mcpscope_core::chat::provider_call::{self, ProviderError};
use mcpscope_core::model::provider::ModelSpec;
use mcpscope_core::model::request::{self, Conversation, Settings};
use serde_json::json;
use std::io::BufRead;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

pub struct FakeProvider {
    child: std::process::Child,
    pub url: String,
}

impl FakeProvider {
    pub fn start() -> FakeProvider {
        let mut child = std::process::Command::new("python3")
            .arg(repo().join("tests/servers/fake_llm.py"))
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 for the fake provider");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .expect("the fake's address")
            .to_owned();
        FakeProvider { child, url }
    }
}

impl Drop for FakeProvider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_official_sdks_take_the_fake_for_a_provider() {
    let fake = FakeProvider::start();
    let python = need(repo().join("tests/peers/.venv/bin/python"));
    let out = std::process::Command::new(python)
        .arg(repo().join("tests/clients/fake_llm_sdk_check.py"))
        .arg(&fake.url)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(text.lines().filter(|l| l.starts_with("ok: ")).count(), 16, "{text}");
}

fn specs(fake: &FakeProvider) -> [ModelSpec; 2] {
    [
        ModelSpec::parse("fake:fake-gpt", Some(&format!("{}/v1", fake.url))).unwrap(),
        ModelSpec {
            base_url: fake.url.clone(),
            ..ModelSpec::parse("anthropic:fake-claude", None).unwrap()
        },
    ]
}

fn turn(spec: &ModelSpec, key: Option<&str>, prompt: &str) -> Result<provider_call::Exchange, ProviderError> {
    let tools = request::offer_tools(
        spec.api,
        &[
            json!({"name": "echo", "description": "Echo", "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}}),
        ],
    );
    let mut conv = Conversation::default();
    conv.user(prompt);
    let body = request::body(spec, &conv, &tools, &Settings::default());
    let mut deltas = 0;
    provider_call::stream_turn(
        spec,
        key,
        &body,
        Duration::from_secs(30),
        &AtomicBool::new(false),
        &mut |_| deltas += 1,
    )
}

#[test]
fn a_turn_streams_text_and_tool_calls_in_each_api() {
    let fake = FakeProvider::start();
    for spec in specs(&fake) {
        let x = turn(&spec, Some("test-key"), "hello model").unwrap();
        assert!(x.turn.complete, "{:?}", x.turn);
        assert_eq!(x.turn.text, "You said: hello model", "{:?}", spec.api);
        assert_eq!(x.turn.usage.output_tokens, Some(4));
        assert!(x.timing.first_token.is_some_and(|t| t <= x.timing.total));
        assert!(x.events.len() >= 3);
        let x = turn(&spec, Some("test-key"), r#"call echo {"message": "hi there"}"#).unwrap();
        assert_eq!(x.turn.tool_calls.len(), 1, "{:?}", x.turn);
        assert_eq!(x.turn.tool_calls[0].name, "echo");
        assert_eq!(x.turn.tool_calls[0].arguments, Ok(json!({"message": "hi there"})));
        // The key is in a header, never in what is kept of the request.
        assert!(!x.request.to_string().contains("test-key"));
        assert!(x.turn.unreadable.is_empty(), "{:?}", x.turn.unreadable);
    }
    let models = provider_call::list_models(&specs(&fake)[0], Some("test-key"), Duration::from_secs(5)).unwrap();
    assert_eq!(models, ["fake-gpt"]);
    let models = provider_call::list_models(&specs(&fake)[1], Some("test-key"), Duration::from_secs(5)).unwrap();
    assert_eq!(models, ["fake-claude"]);
}

#[test]
fn the_providers_errors_and_a_cut_stream_are_said() {
    let fake = FakeProvider::start();
    for spec in specs(&fake) {
        match turn(&spec, Some("wrong-key"), "hello") {
            Err(ProviderError::Status { status: 401, message }) => {
                assert!(message.contains("Incorrect API key"), "{message}")
            }
            other => panic!("{other:?}"),
        }
        match turn(&spec, Some("test-key"), "fail 500") {
            Err(ProviderError::Status { status: 500, message }) => assert!(message.contains("failing on purpose")),
            other => panic!("{other:?}"),
        }
        let cut = turn(&spec, Some("test-key"), "cut").unwrap();
        assert!(
            !cut.turn.complete,
            "a stream that ended without saying so: {:?}",
            cut.turn
        );
        assert_eq!(cut.turn.text, "This answer is cut");
        let e = turn(&spec, Some("test-key"), "error event").unwrap();
        assert!(e.turn.error.is_some(), "{:?}", e.turn);
    }
    // Nobody listening there.
    let gone = ModelSpec::parse("x:m", Some("http://127.0.0.1:9/v1")).unwrap();
    assert!(matches!(
        turn(&gone, None, "hi"),
        Err(ProviderError::Unreachable { .. })
    ));
    // Stopped before the answer is read.
    let spec = &specs(&fake)[0];
    let body = request::body(
        spec,
        &Conversation::default(),
        &Default::default(),
        &Settings::default(),
    );
    let stopped = provider_call::stream_turn(
        spec,
        Some("test-key"),
        &body,
        Duration::from_secs(5),
        &AtomicBool::new(true),
        &mut |_| {},
    );
    assert!(matches!(stopped, Err(ProviderError::Stopped)));
}
