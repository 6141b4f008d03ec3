//! The model layer against tests/servers/fake_llm.py, a fake provider the
//! official SDKs (PyPI `openai`, `anthropic`) accept as the real thing: a
//! turn streamed over HTTP in each API, tool calls, usage, the provider's
//! errors, a cut stream, and the key kept out of what is recorded.

use crate::support::*;
use mcpscope_core::chat::provider_call::{self, ProviderError};
use mcpscope_core::model::provider::ModelSpec;
use mcpscope_core::model::request::{self, Conversation, Settings};
use serde_json::json;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

pub struct FakeProvider {
    child: std::process::Child,
    pub url: String,
}

impl FakeProvider {
    pub fn start() -> FakeProvider {
        let mut cmd = std::process::Command::new("python3");
        cmd.arg(repo().join("tests/servers/fake_llm.py"));
        let (child, url) = spawn_listening(cmd, "listening on ");
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

fn chat(fake: &FakeProvider, model: &str, extra: &[&str], capture: &std::path::Path) -> std::process::Output {
    let base = if model.starts_with("anthropic:") {
        fake.url.clone()
    } else {
        format!("{}/v1", fake.url)
    };
    let mut cmd = mcpscope_command();
    cmd.args([
        "chat",
        "--model",
        model,
        "--base-url",
        &base,
        "--capture",
        capture.to_str().unwrap(),
    ])
    .args(extra)
    .args(["--", "python3", &faulty_path()])
    .env("OPENAI_API_KEY", "test-key")
    .env("ANTHROPIC_API_KEY", "test-key");
    cmd.output().unwrap()
}

fn tool_calls_in(capture: &std::path::Path) -> String {
    let out = mcpscope_command()
        .args([
            "filter",
            "--count",
            capture.to_str().unwrap(),
            r#"method == "tools/call""#,
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn chat_runs_the_models_tool_calls_through_the_session_in_each_api() {
    let fake = FakeProvider::start();
    let dir = tempfile::tempdir().unwrap();
    let prompt = r#"call echo {"message": "hi from the model"}"#;
    let cap = dir.path().join("openai.jsonl");
    let out = chat(&fake, "openai:fake-gpt", &["--prompt", prompt], &cap);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("tool call: echo"), "{stdout}");
    assert!(stdout.contains("model: The tool said: hi from the model"), "{stdout}");
    assert_eq!(tool_calls_in(&cap), "1", "the call is in the capture");
    // Each model turn is a record of its own kind, beside the tool call it caused.
    let count = |expr: &str| {
        let out = mcpscope_command()
            .args(["filter", "--count", cap.to_str().unwrap(), expr])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    assert_eq!(count(r#"kind == "model""#), "2");
    // What is inside a turn is a field.
    assert_eq!(count("model.tool_calls > 0"), "1");
    assert_eq!(count(r#"model.name == "fake-gpt" and model.output_tokens >= 3"#), "2");
    assert_eq!(count("model.first_token < 60s and model.total < 60s"), "2");
    assert_eq!(count(r#"model.provider == "openai""#), "2");
    let table = mcpscope_command()
        .args([
            "filter",
            "--format",
            "table",
            cap.to_str().unwrap(),
            r#"kind == "model" or method == "tools/call""#,
        ])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&table.stdout);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3, "{table}");
    assert!(
        lines[0].contains(r#""event":"model""#) && lines[0].contains("fake-gpt"),
        "{table}"
    );
    assert!(
        lines[1].contains("tools/call"),
        "the turn, then the call it caused: {table}"
    );
    assert!(lines[2].contains(r#""event":"model""#), "{table}");
    // The second turn's events hold the answer; the record is read back whole.
    let jsonl = mcpscope_command()
        .args(["filter", cap.to_str().unwrap(), r#"kind == "model""#])
        .output()
        .unwrap();
    let records: Vec<serde_json::Value> = String::from_utf8_lossy(&jsonl.stdout)
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 2);
    assert_eq!(records[0]["status"], 200);
    assert!(records[0]["first_token_us"].as_u64().is_some());
    assert!(
        records[1]["events"].to_string().contains("said: "),
        "streamed word by word"
    );
    assert_eq!(
        records[1]["request"]["messages"][2]["role"], "tool",
        "the request as sent"
    );
    // OpenTelemetry: each turn a GenAI chat span beside the MCP request spans.
    let otlp = mcpscope_command()
        .args(["export", cap.to_str().unwrap(), "--format", "otlp-json"])
        .output()
        .unwrap();
    let otlp: serde_json::Value = serde_json::from_slice(&otlp.stdout).unwrap();
    let spans: Vec<&serde_json::Value> = otlp["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    let chat_spans: Vec<&&serde_json::Value> = spans.iter().filter(|s| s["name"] == "chat fake-gpt").collect();
    assert_eq!(chat_spans.len(), 2, "{otlp}");
    let attr = |s: &serde_json::Value, k: &str| {
        s["attributes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["key"] == k)
            .map(|a| a["value"].clone())
    };
    assert_eq!(
        attr(chat_spans[0], "gen_ai.operation.name").unwrap()["stringValue"],
        "chat"
    );
    assert_eq!(
        attr(chat_spans[0], "gen_ai.request.model").unwrap()["stringValue"],
        "fake-gpt"
    );
    assert!(attr(chat_spans[0], "gen_ai.usage.input_tokens").is_some());
    assert_eq!(
        attr(chat_spans[0], "gen_ai.response.finish_reasons").unwrap()["arrayValue"]["values"][0]["stringValue"],
        "tool_calls"
    );
    assert!(spans.iter().any(|s| s["name"] == "tools/call echo"));
    // HAR: each turn the HTTP exchange it was, its answer the event stream it came in.
    let har = mcpscope_command()
        .args(["export", cap.to_str().unwrap(), "--format", "har"])
        .output()
        .unwrap();
    let har_text = String::from_utf8_lossy(&har.stdout).into_owned();
    assert!(!har_text.contains("test-key"));
    let har: serde_json::Value = serde_json::from_str(&har_text).unwrap();
    let turns: Vec<&serde_json::Value> = har["log"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["request"]["url"].as_str().unwrap().ends_with("/v1/chat/completions"))
        .collect();
    assert_eq!(turns.len(), 2, "{har}");
    assert_eq!(turns[0]["response"]["content"]["mimeType"], "text/event-stream");
    assert!(
        turns[0]["response"]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("data: [DONE]")
    );
    assert!(
        turns[1]["request"]["postData"]["text"]
            .as_str()
            .unwrap()
            .contains("\"role\":\"tool\"")
    );
    assert_eq!(turns[0]["_model"]["toolCalls"], 1);
    // The other readers take the capture as it is.
    let lint = mcpscope_command()
        .args(["lint", cap.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(lint.status.code(), Some(0), "{}", String::from_utf8_lossy(&lint.stdout));

    let cap = dir.path().join("anthropic.jsonl");
    let out = chat(
        &fake,
        "anthropic:fake-claude",
        &["--prompt", prompt, "--format", "json"],
        &cap,
    );
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["outcome"], "done");
    assert_eq!(v["model_turns"], 2);
    let t = v["transcript"].as_array().unwrap();
    assert_eq!(t[1]["tool_call"]["result"], "hi from the model");
    assert!(t[0]["model_turn"]["usage"]["input_tokens"].as_u64().unwrap() > 0);
    assert_eq!(t[2]["model_turn"]["text"], "The tool said: hi from the model");
    // The key is in no output and not in the capture.
    for text in [
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        std::fs::read_to_string(&cap).unwrap(),
    ] {
        assert!(!text.contains("test-key"));
    }
}

#[test]
fn chat_says_how_it_ended_in_its_exit_status() {
    let fake = FakeProvider::start();
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("c.jsonl");
    let call = r#"call echo {"message": "again"}"#;
    // Refused: the model is told, no tool runs.
    let out = chat(
        &fake,
        "openai:fake-gpt",
        &["--prompt", call, "--approve", "never"],
        &cap,
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("declined"));
    assert_eq!(tool_calls_in(&cap), "0");
    // Still wanting tools at the limit: 7.
    let out = chat(&fake, "openai:fake-gpt", &["--prompt", call, "--max-turns", "0"], &cap);
    assert_eq!(out.status.code(), Some(7), "{}", String::from_utf8_lossy(&out.stderr));
    // The provider failing: 6, with its message.
    let out = chat(&fake, "anthropic:fake-claude", &["--prompt", "fail 529"], &cap);
    assert_eq!(out.status.code(), Some(6));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("HTTP 529"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = chat(&fake, "openai:fake-gpt", &["--prompt", "cut"], &cap);
    assert_eq!(out.status.code(), Some(6));
    // No key where the provider's SDK looks: a usage error naming the variable, nothing sent.
    let out = mcpscope_command()
        .args([
            "chat",
            "--model",
            "openai:gpt-4.1-mini",
            "--prompt",
            "hi",
            "--",
            "python3",
            &faulty_path(),
        ])
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("set OPENAI_API_KEY"));
}

#[test]
fn a_recorded_chat_replays_without_a_provider_and_says_where_the_server_changed() {
    let dir = tempfile::tempdir().unwrap();
    let recorded = dir.path().join("recorded.jsonl");
    {
        let fake = FakeProvider::start();
        let out = chat(
            &fake,
            "openai:fake-gpt",
            &["--prompt", r#"call echo {"message": "hi"}"#],
            &recorded,
        );
        assert_eq!(out.status.code(), Some(0));
    } // The provider is gone from here on.
    let replay = |mode: &str, capture: &std::path::Path| {
        mcpscope_command()
            .args([
                "chat",
                "--replay",
                recorded.to_str().unwrap(),
                "--capture",
                capture.to_str().unwrap(),
            ])
            .args(["--", "python3", &faulty_path(), "--mode", mode])
            .env_remove("OPENAI_API_KEY")
            .output()
            .unwrap()
    };
    let again = dir.path().join("again.jsonl");
    let out = replay("normal", &again);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("model: The tool said: hi"), "{stdout}");
    assert_eq!(tool_calls_in(&again), "1", "the tool ran against the live server");
    // The replay records its turns too: it can be replayed in turn.
    let out = mcpscope_command()
        .args(["filter", "--count", again.to_str().unwrap(), r#"kind == "model""#])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "2");
    // The server changed: its result differs from the recording's, exit 1.
    let out = replay("tool-error", &dir.path().join("changed.jsonl"));
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("echo's result differs from the recording, which had: hi"),
        "{stderr}"
    );
    // A capture without model turns cannot be replayed.
    let out = mcpscope_command()
        .args(["chat", "--replay"])
        .arg(repo().join("tests/captures/crlf.jsonl"))
        .args(["--", "python3", &faulty_path()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&out.stderr).contains("holds no model turns"));
}

/// #43: `chat --store-key` keeps a key read from standard input in a real
/// Secret Service (GNOME Keyring) under `model:PROVIDER`; a later chat with
/// no key variable set uses it (the fake provider takes only the right
/// one), and the capture never holds it.
#[test]
fn a_key_kept_in_the_keyring_is_used_and_never_recorded() {
    let fake = FakeProvider::start();
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("chat.jsonl");
    let script = r#"
printf 'test-key\n' | "$MCPSCOPE" chat --model openai:fake-gpt --store-key
"$MCPSCOPE" chat --model openai:fake-gpt --base-url "$BASE" --capture "$CAP" \
  --prompt 'call echo {"message": "from the keyring"}' -- python3 "$SERVER"
echo "--- keyring"
secret-tool search --all service mcpscope 2>&1
"#;
    let base = format!("{}/v1", fake.url);
    let server = faulty_path();
    let out = in_a_keyring_session(
        dir.path(),
        script,
        &[
            ("BASE", &base),
            ("CAP", cap.to_str().unwrap()),
            ("SERVER", &server),
            ("OPENAI_API_KEY", ""),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains(r#"entry "model:openai""#), "{stderr}");
    assert!(stdout.contains("from the keyring"), "the tool ran: {stdout}");
    let keyring = stdout.split("--- keyring").nth(1).unwrap_or_default();
    assert!(keyring.contains("username = model:openai"), "{keyring}");
    assert!(keyring.contains("secret = test-key"), "{keyring}");
    let recorded = std::fs::read_to_string(&cap).unwrap();
    assert!(recorded.contains(r#""event":"model""#), "the turn is recorded");
    assert!(!recorded.contains("test-key"), "the key is not in the capture");
}

/// #43: one prompt to several models over the same session, side by side:
/// the tools each called with what arguments, the answers, tokens, times,
/// and the cost only where the provider reported it (OpenRouter's
/// `usage.cost`, which the fake sends for a "priced" model).
#[test]
fn one_prompt_to_several_models_is_compared() {
    let fake = FakeProvider::start();
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("side-by-side.jsonl");
    let prompt = r#"call echo {"message": "side by side"}"#;
    let out = mcpscope_command()
        .args(["chat", "--format", "json", "--base-url", &format!("{}/v1", fake.url)])
        .args([
            "--model",
            "openai:fake-gpt",
            "--model",
            "openai:fake-lazy",
            "--model",
            "openrouter:fake-priced",
        ])
        .args(["--prompt", prompt, "--capture", cap.to_str().unwrap()])
        .args(["--", "python3", &faulty_path()])
        .env("OPENAI_API_KEY", "test-key")
        .env("OPENROUTER_API_KEY", "test-key")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let c = &doc["comparison"];
    assert_eq!(doc["runs"].as_array().unwrap().len(), 3);
    assert_eq!(c["same_tools"], false);
    assert_eq!(c["same_answer"], false);
    let runs = c["runs"].as_array().unwrap();
    assert_eq!(runs[0]["tool_calls"], json!([["echo", {"message": "side by side"}]]));
    assert_eq!(runs[1]["tool_calls"], json!([]));
    assert_eq!(runs[1]["answer"], "I would rather answer myself.");
    assert_eq!(
        runs[0]["cost"],
        serde_json::Value::Null,
        "no cost reported, none made up"
    );
    let cost = runs[2]["cost"].as_f64().unwrap();
    let (i, o) = (
        runs[2]["input_tokens"].as_u64().unwrap(),
        runs[2]["output_tokens"].as_u64().unwrap(),
    );
    assert!(
        (cost - (i * 2 + o * 8) as f64 / 1e6).abs() < 1e-12,
        "{cost} for {i}/{o}"
    );
    assert!(
        runs.iter()
            .all(|r| r["done"] == true && r["model_time"].as_f64().unwrap() > 0.0)
    );
    assert!(
        c["differences"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d == "openai:fake-lazy called no tool"),
        "{c}"
    );
    // Every model turn of every run is in the one capture.
    let recorded = std::fs::read_to_string(&cap).unwrap();
    assert_eq!(recorded.matches(r#""event":"model""#).count(), 5);
    // Five models are one too many.
    let five = mcpscope_command()
        .args(["chat", "--prompt", "hi"])
        .args([
            "--model", "openai:a", "--model", "openai:b", "--model", "openai:c", "--model", "openai:d", "--model",
            "openai:e",
        ])
        .args(["--", "python3", &faulty_path()])
        .output()
        .unwrap();
    assert_eq!(five.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&five.stderr).contains("at most 4 models"));
}

/// `chat --list-models`: what each API's models endpoint lists; a wrong
/// key is the provider's failure (exit 6), said.
#[test]
fn the_providers_models_are_listed() {
    let fake = FakeProvider::start();
    let list = |model: &str, base: String, key: &str| {
        mcpscope_command()
            .args(["chat", "--list-models", "--model", model, "--base-url", &base])
            .env("OPENAI_API_KEY", key)
            .env("ANTHROPIC_API_KEY", key)
            .output()
            .unwrap()
    };
    let openai = list("openai:x", format!("{}/v1", fake.url), "test-key");
    assert_eq!(openai.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&openai.stdout), "fake-gpt\n");
    let anthropic = list("anthropic:x", fake.url.clone(), "test-key");
    assert_eq!(String::from_utf8_lossy(&anthropic.stdout), "fake-claude\n");
    let wrong = list("openai:x", format!("{}/v1", fake.url), "wrong");
    assert_eq!(wrong.status.code(), Some(6));
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("HTTP 401"));
}

/// #43: model turns survive export and import: a chat's capture exported
/// as HAR (each turn the HTTP exchange it was) and imported back holds the
/// same turns (model, provider, answer, tool calls), and the imported
/// capture replays against the server like the original.
#[test]
fn model_turns_come_back_from_a_har_export() {
    let fake = FakeProvider::start();
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("chat.jsonl");
    let out = chat(
        &fake,
        "openai:fake-gpt",
        &["--prompt", r#"call echo {"message": "round trip"}"#],
        &cap,
    );
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let har = dir.path().join("chat.har");
    let back = dir.path().join("back.jsonl");
    let run = |args: &[&str]| {
        let o = mcpscope_command().args(args).output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        o
    };
    run(&["export", cap.to_str().unwrap(), "-o", har.to_str().unwrap()]);
    let imported = run(&["import", har.to_str().unwrap(), "-o", back.to_str().unwrap()]);
    assert!(
        !String::from_utf8_lossy(&imported.stderr).contains("left out"),
        "no entry dropped: {}",
        String::from_utf8_lossy(&imported.stderr)
    );
    let turns = |p: &std::path::Path| {
        mcpscope_core::chat::replay::RecordedChat::from_events(&mcpscope_core::record::capture::load(p).unwrap().events)
    };
    let (a, b) = (turns(&cap), turns(&back));
    assert_eq!(b.turns.len(), 2);
    for (x, y) in a.turns.iter().zip(&b.turns) {
        assert_eq!((&x.provider, &x.model, x.api), (&y.provider, &y.model, y.api));
        assert_eq!(x.request, y.request);
        let (tx, ty) = (x.turn(), y.turn());
        assert_eq!((tx.text, tx.tool_calls, tx.usage), (ty.text, ty.tool_calls, ty.usage));
        assert_eq!(
            x.first_token.map(|d| d.as_millis()),
            y.first_token.map(|d| d.as_millis())
        );
    }
    let replayed = mcpscope_command()
        .args([
            "chat",
            "--replay",
            back.to_str().unwrap(),
            "--",
            "python3",
            &faulty_path(),
        ])
        .output()
        .unwrap();
    assert_eq!(
        replayed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&replayed.stderr)
    );
}

/// #43's bad input, each said plainly and never a hang: a 429 whose
/// retry-after is honoured (and one too long to wait for), a context-length
/// error, a model without tool support, and a call to a tool that does not
/// exist (returned to the model as the error it is).
#[test]
fn bad_input_from_the_provider_and_the_model_is_said() {
    let fake = FakeProvider::start();
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("bad.jsonl");
    let run = |model: &str, prompt: &str| {
        let out = chat(&fake, model, &["--prompt", prompt, "--format", "json"], &cap);
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        // How it ended is the document's outcome with --format json.
        let said = format!("{}{}", String::from_utf8_lossy(&out.stderr), doc["outcome"]);
        (out.status.code(), said, doc)
    };
    let (code, stderr, doc) = run("openai:fake-gpt", "rate limited once");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("rate limited (HTTP 429): waited 1.0 s"), "{stderr}");
    assert_eq!(
        doc["transcript"][0]["model_turn"]["text"],
        "You said: rate limited once"
    );

    let started = std::time::Instant::now();
    let (code, stderr, _) = run("openai:fake-gpt", "rate limited for an hour");
    assert_eq!(code, Some(6), "{stderr}");
    assert!(
        stderr.contains("asks to wait 3600 s, longer than mcpscope waits"),
        "{stderr}"
    );
    assert!(started.elapsed() < Duration::from_secs(60), "not waited out");

    let (code, stderr, _) = run("anthropic:fake-claude", "too long");
    assert_eq!(code, Some(6), "{stderr}");
    assert!(stderr.contains("maximum context length is 8192 tokens"), "{stderr}");

    let (code, stderr, _) = run("openai:fake-notools", "hello");
    assert_eq!(code, Some(6), "{stderr}");
    assert!(stderr.contains("does not support tools"), "{stderr}");

    let (code, stderr, doc) = run("openai:fake-gpt", r#"call! no_such_tool {"x": 1}"#);
    assert_eq!(code, Some(0), "the model was told and answered: {stderr}");
    let call = &doc["transcript"][1]["tool_call"];
    assert_eq!(call["tool"], "no_such_tool");
    assert_eq!(call["is_error"], true, "{call}");
    let told = doc["transcript"][2]["model_turn"]["text"].as_str().unwrap_or_default();
    assert!(told.starts_with("The tool said: "), "{doc}");
}
