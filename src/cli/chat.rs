//! `mcpscope chat`: a model in the loop over a live server's tools. The
//! model (OpenAI-compatible or Anthropic, streamed) is offered the server's
//! tools; each call it asks for goes through the session like `call`'s, so
//! it is recorded, paired and judged; the result goes back to the model until
//! it stops or the round trips run out.

use super::call::{CallArgs, SessionWork};
use super::skills::SessionFlags;
use clap::Args;
use mcpscope_core::chat::drive::{self, ChatWatch, TurnSource};
use mcpscope_core::chat::key;
use mcpscope_core::chat::provider_call;
use mcpscope_core::chat::replay::RecordedChat;
use mcpscope_core::client::{Client, ClientError};
use mcpscope_core::model::chat_loop::{Approval, ChatLoop, Outcome};
use mcpscope_core::model::compare::{self, Comparison, RunSummary};
use mcpscope_core::model::provider::ModelSpec;
use mcpscope_core::model::request::{Conversation, Settings};
use mcpscope_core::text::terminal_safe;
use serde_json::{Value, json};
use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct ChatArgs {
    /// PROVIDER:MODEL, e.g. openai:gpt-4.1-mini, anthropic:claude-sonnet-4-5,
    /// ollama:llama3.1 (providers: openai, anthropic, openrouter, groq,
    /// together, mistral, ollama, llamacpp, vllm, lmstudio, or any name with
    /// --base-url for an OpenAI-compatible server).
    ///
    /// Given up to four times: the same prompt to each model in turn, over
    /// the same session, then the runs compared (the tools each called with
    /// what arguments, the answers, tokens, times, cost where reported).
    #[arg(long, value_name = "PROVIDER:MODEL", required_unless_present = "replay")]
    pub model: Vec<String>,

    /// What the user says.
    #[arg(long, required_unless_present_any = ["replay", "store_key", "list_models"])]
    pub prompt: Option<String>,

    /// Read a key from standard input and keep it in the OS keyring for
    /// --model's provider (entry `model:PROVIDER`), then exit: later runs
    /// use it when the provider's variable is not set.
    #[arg(long, requires = "model", conflicts_with_all = ["prompt", "replay"])]
    pub store_key: bool,

    /// Print the models --model's provider lists (its models endpoint), one
    /// per line, then exit.
    #[arg(long, requires = "model", conflicts_with_all = ["prompt", "replay", "store_key"])]
    pub list_models: bool,

    /// Serve the model's turns from this capture (recorded by `chat
    /// --capture`) instead of calling a provider: the same conversation
    /// against the server as it is now, with no key, deterministically. Each
    /// tool result is compared with the recorded one (exit 1 if one differs).
    #[arg(long, value_name = "CAPTURE", conflicts_with_all = ["base_url", "api_key_env"])]
    pub replay: Option<std::path::PathBuf>,

    /// The provider's API base, e.g. http://127.0.0.1:11434/v1.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,

    /// The system prompt.
    #[arg(long)]
    pub system: Option<String>,

    /// The most tool round trips before giving up (exit 7).
    #[arg(long, default_value_t = 8)]
    pub max_turns: usize,

    /// auto: run every tool call the model asks for; never: refuse them all
    /// (the model is told the user declined).
    #[arg(long, value_enum, default_value_t = ApproveArg::Auto)]
    pub approve: ApproveArg,

    /// Sampling temperature.
    #[arg(long)]
    pub temperature: Option<f64>,

    /// The most tokens per model turn.
    #[arg(long, default_value_t = 1024)]
    pub max_tokens: u32,

    /// Read the key from this environment variable instead of the one the
    /// provider's own SDK reads (OPENAI_API_KEY, ANTHROPIC_API_KEY, …);
    /// without either, the keyring's (--store-key). A key is never taken
    /// from a flag's value.
    #[arg(long, value_name = "NAME")]
    pub api_key_env: Option<String>,

    /// How long one model turn may take, in milliseconds.
    #[arg(long, default_value_t = 120_000)]
    pub model_timeout_ms: u64,

    /// text: the transcript as it streams; json: one document at the end.
    #[arg(long, value_enum, default_value_t = FormatArg::Text)]
    pub format: FormatArg,

    #[command(flatten)]
    pub session: SessionFlags,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApproveArg {
    Auto,
    Never,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormatArg {
    Text,
    Json,
}

/// `--list-models`: what the provider's models endpoint lists.
fn list_models(spec: &ModelSpec, key_env: Option<&str>, timeout_ms: u64) -> ExitCode {
    let key = match key::find_key_here(spec, key_env) {
        Ok(found) => found.key,
        Err(e) => {
            crate::errln!("mcpscope chat: {e}");
            return ExitCode::from(super::exit::USAGE);
        }
    };
    match provider_call::list_models(spec, key.as_deref(), Duration::from_millis(timeout_ms)) {
        Ok(models) => {
            for m in models {
                say(&format!("{m}\n"));
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            crate::errln!("mcpscope chat: {e}");
            ExitCode::from(super::exit::PROVIDER_FAILED)
        }
    }
}

/// `--store-key`: the key from standard input into the keyring.
fn store_key(spec: &ModelSpec) -> ExitCode {
    let mut key = String::new();
    if let Err(e) = std::io::Read::read_to_string(&mut std::io::stdin().lock(), &mut key) {
        crate::errln!("mcpscope chat: reading the key from standard input: {e}");
        return ExitCode::from(super::exit::IO);
    }
    if key.trim().is_empty() {
        crate::errln!("mcpscope chat: no key on standard input");
        return ExitCode::from(super::exit::USAGE);
    }
    match key::store_key(spec, &key) {
        Ok(()) => {
            crate::errln!(
                "mcpscope chat: the key for {} is in the keyring (entry {:?})",
                spec.provider,
                key::keyring_entry(spec)
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            crate::errln!("mcpscope chat: {e}");
            ExitCode::from(super::exit::IO)
        }
    }
}

/// The most models one prompt goes to side by side.
const MAX_MODELS: usize = 4;

/// The runs side by side: one row per model, then what differs.
fn comparison_text(c: &Comparison) -> String {
    let ms = |d: std::time::Duration| format!("{:.0} ms", d.as_secs_f64() * 1e3);
    let mut rows = vec![[
        "model".to_owned(),
        "outcome".into(),
        "turns".into(),
        "tools called".into(),
        "tokens in/out".into(),
        "first token".into(),
        "model time".into(),
        "cost".into(),
    ]];
    for r in &c.runs {
        let tools = r
            .tool_calls
            .iter()
            .map(|(t, _)| t.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        let tokens = match (r.input_tokens, r.output_tokens) {
            (Some(i), Some(o)) => format!("{i}/{o}"),
            _ => "not reported".into(),
        };
        rows.push([
            r.model.clone(),
            r.outcome.clone(),
            r.turns.to_string(),
            if tools.is_empty() { "-".into() } else { tools },
            tokens,
            r.first_token.map_or_else(|| "-".into(), ms),
            ms(r.model_time),
            r.cost.map_or_else(|| "not reported".into(), |c| format!("{c:.6}")),
        ]);
    }
    let widths: Vec<usize> = (0..8)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::from("\n");
    for r in &rows {
        let line: Vec<String> = r.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    if c.differences.is_empty() {
        out.push_str("The models agree: the same tools with the same arguments, the same answer.\n");
    } else {
        out.push_str("Where they differ:\n");
        for d in &c.differences {
            out.push_str(&format!("  {d}\n"));
        }
    }
    out
}

/// Exit status: 0 when the model finished (with `--replay`: 1 when a tool's
/// result differed from the recording); 6 when the provider failed
/// (HTTP error, unreachable, an error in its stream, a cut stream); 7 when
/// the model still wanted tools after --max-turns; the session's own
/// statuses (3: the server could not be reached …); 64 for a usage error.
pub fn run(args: ChatArgs) -> ExitCode {
    let recorded = match &args.replay {
        None => None,
        Some(path) => match mcpscope_core::record::capture::load(path) {
            Ok(loaded) => {
                let chat = RecordedChat::from_events(&loaded.events);
                if chat.turns.is_empty() {
                    crate::errln!(
                        "mcpscope chat: {} holds no model turns (record one with chat --capture)",
                        path.display()
                    );
                    return ExitCode::from(super::exit::IO);
                }
                Some(chat)
            }
            Err(e) => {
                crate::errln!("mcpscope chat: {}", mcpscope_core::text::ErrorChain(&e));
                return ExitCode::from(super::exit::IO);
            }
        },
    };
    if args.model.len() > MAX_MODELS {
        crate::errln!("mcpscope chat: at most {MAX_MODELS} models side by side");
        return ExitCode::from(super::exit::USAGE);
    }
    if args.model.len() > 1 && (args.replay.is_some() || args.store_key || args.list_models) {
        crate::errln!("mcpscope chat: --replay, --store-key and --list-models take one model");
        return ExitCode::from(super::exit::USAGE);
    }
    let specs: Result<Vec<ModelSpec>, _> = match &recorded {
        // The model of the recording's first turn.
        Some(chat) if args.model.is_empty() => {
            let first = &chat.turns[0];
            Ok(vec![ModelSpec {
                api: first.api,
                provider: first.provider.clone(),
                model: first.model.clone(),
                base_url: String::new(),
            }])
        }
        _ => args
            .model
            .iter()
            .map(|m| ModelSpec::parse(m, args.base_url.as_deref()))
            .collect(),
    };
    let specs = match specs {
        Ok(s) => s,
        Err(e) => {
            crate::errln!("mcpscope chat: {e}");
            return ExitCode::from(super::exit::USAGE);
        }
    };
    if args.store_key {
        return store_key(&specs[0]);
    }
    if args.list_models {
        return list_models(&specs[0], args.api_key_env.as_deref(), args.model_timeout_ms);
    }
    let mut runs = Vec::new();
    let mut recorded = recorded;
    for spec in specs {
        let source = match recorded.take() {
            Some(chat) => TurnSource::Replay { chat, differs: 0 },
            None => match key::find_key_here(&spec, args.api_key_env.as_deref()) {
                Ok(found) => TurnSource::Live {
                    key: found.key,
                    timeout: Duration::from_millis(args.model_timeout_ms),
                },
                Err(e) => {
                    crate::errln!("mcpscope chat: {e}");
                    return ExitCode::from(super::exit::USAGE);
                }
            },
        };
        runs.push((spec, source));
    }
    let mut conversation = Conversation {
        system: args.system.clone(),
        ..Conversation::default()
    };
    conversation.user(args.prompt.clone().unwrap_or_default());
    let settings = Settings {
        temperature: args.temperature,
        max_tokens: args.max_tokens,
    };
    let approval = match args.approve {
        ApproveArg::Auto => Approval::Auto,
        ApproveArg::Never => Approval::Never,
    };
    let format = args.format;
    let max_turns = args.max_turns;
    let work: SessionWork = Box::new(move |client, timeout| {
        let tools = match client.list_all("tools/list", "tools", timeout)? {
            Ok(t) => t,
            Err(e) => {
                crate::errln!("mcpscope chat: tools/list failed with JSON-RPC error {e}");
                return Ok(super::exit::FAILED);
            }
        };
        let side_by_side = runs.len() > 1;
        let mut summaries = Vec::new();
        let mut documents = Vec::new();
        let mut worst = super::exit::OK;
        for (spec, source) in runs {
            if side_by_side && format == FormatArg::Text {
                say(&format!("== {}:{}\n", spec.provider, spec.model));
            }
            let chat = ChatLoop::new(
                spec.clone(),
                conversation.clone(),
                &tools,
                settings.clone(),
                approval,
                max_turns,
            );
            let run = converse(client, timeout, chat, &spec, source, format, !side_by_side)?;
            if worst == super::exit::OK {
                worst = run.code;
            }
            summaries.push(run.summary);
            documents.push(run.document);
        }
        if side_by_side {
            let comparison = compare::compare(summaries);
            match format {
                FormatArg::Text => say(&comparison_text(&comparison)),
                FormatArg::Json => super::call::print_json(&json!({"runs": documents, "comparison": comparison})),
            }
        }
        Ok(worst)
    });
    super::call::run_with(call_args(args.session), Some(work))
}

fn call_args(s: SessionFlags) -> CallArgs {
    let mut args = super::skills::call_args(s);
    args.method = Some("tools/list".into());
    args
}

fn say(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(terminal_safe(text, true).as_bytes());
    let _ = out.flush();
}

/// One model's run: its exit status, what it did, its JSON document.
struct Run {
    code: u8,
    summary: RunSummary,
    document: Value,
}

/// `chat`'s words as the driver goes: the model's text streamed to stdout
/// (text output), notes on stderr.
struct Printed<'a> {
    spec: &'a ModelSpec,
    text_out: bool,
}

impl ChatWatch for Printed<'_> {
    fn model_asked(&mut self) {
        if self.text_out {
            say("model: ");
        }
    }

    fn text(&mut self, text: &str) {
        if self.text_out {
            say(text);
        }
    }

    fn model_done(&mut self, _failed: bool) {
        if self.text_out {
            say("\n");
        }
    }

    fn rate_limited(&mut self, waited: Duration) {
        crate::errln!(
            "mcpscope chat: {} was rate limited (HTTP 429): waited {:.1} s as it asked, then it answered",
            self.spec.provider,
            waited.as_secs_f64()
        );
    }

    fn key_refused(&mut self) {
        crate::errln!(
            "mcpscope chat: check the key ({} was sent to {})",
            self.spec.provider,
            self.spec.base_url
        );
    }

    fn tool_call(&mut self, tool: &str, arguments: &Value) {
        if self.text_out {
            say(&format!("tool call: {tool} {arguments}\n"));
        }
    }

    fn tool_result(&mut self, text: &str, is_error: bool) {
        if self.text_out {
            let shown = mcpscope_core::text::shorten(text, 400);
            say(&format!(
                "tool {}: {shown}\n",
                if is_error { "error" } else { "result" }
            ));
        }
    }

    fn differs(&mut self, tool: &str, recorded: &str) {
        crate::errln!("mcpscope chat: {tool}'s result differs from the recording, which had: {recorded}");
    }
}

fn converse(
    client: &mut Client,
    timeout: Duration,
    chat: ChatLoop,
    spec: &ModelSpec,
    mut source: TurnSource,
    format: FormatArg,
    print_json: bool,
) -> Result<Run, ClientError> {
    let text_out = format == FormatArg::Text;
    for n in chat.tool_notes() {
        crate::errln!("mcpscope chat: tool {:?}: {}", n.tool, n.note);
    }
    let mut printed = Printed { spec, text_out };
    let run = drive::drive(client, timeout, chat, spec, &mut source, &mut printed)?;
    let (code, said) = match &run.outcome {
        Outcome::Done if run.differs > 0 => (
            super::exit::FAILED,
            format!("done, but {} tool result(s) differed from the recording", run.differs),
        ),
        Outcome::Done => (super::exit::OK, "done".to_owned()),
        Outcome::RoundTripLimit(n) => (
            super::exit::ROUND_TRIP_LIMIT,
            format!("the model still wanted tools after {n} round trips"),
        ),
        Outcome::ProviderFailed(why) => (super::exit::PROVIDER_FAILED, format!("the provider failed: {why}")),
    };
    if text_out && code != super::exit::OK {
        crate::errln!("mcpscope chat: {}:{}: {said}", spec.provider, spec.model);
    }
    let document = json!({
        "model": format!("{}:{}", spec.provider, spec.model),
        "outcome": said,
        "model_turns": run.model_turns,
        "transcript": run.transcript,
    });
    if !text_out && print_json {
        super::call::print_json(&document);
    }
    Ok(Run {
        code,
        summary: run.summary,
        document,
    })
}
