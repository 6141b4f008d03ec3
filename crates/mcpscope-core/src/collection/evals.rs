//! An eval case run against the session a test file opened: a model in the
//! loop (live, or replayed from a recording) given the prompt and the
//! server's tools, N times, each run graded against the calls and text the
//! case expects, and the pass rate against its threshold.

use super::file::{Eval, ExpectedCall};
use super::report::{EvalResult, Verdict};
use super::vars::Vars;
use crate::chat::drive::{self, TurnSource, Unwatched};
use crate::client::Client;
use crate::model::chat_loop::{Approval, ChatLoop, Outcome};
use crate::model::compare::RunSummary;
use crate::model::provider::ModelSpec;
use crate::model::request::{Conversation, Settings};
use serde_json::Value as Json;
use std::path::Path;
use std::time::Duration;

/// Whether an expected call's arguments are among those sent: each member
/// equal, a text written `re:PATTERN` matching the pattern.
fn arguments_match(expected: &Json, sent: &Json) -> bool {
    match (expected, sent) {
        (Json::Object(e), Json::Object(s)) => e
            .iter()
            .all(|(k, ev)| s.get(k).is_some_and(|sv| arguments_match(ev, sv))),
        (Json::String(e), sent) if e.starts_with("re:") => {
            let text = match sent {
                Json::String(s) => s.clone(),
                other => other.to_string(),
            };
            regex::Regex::new(&e[3..]).is_ok_and(|r| r.is_match(&text))
        }
        (e, s) => e == s,
    }
}

fn call_matches(expected: &ExpectedCall, (tool, arguments): &(String, Json)) -> bool {
    *tool == expected.tool
        && expected
            .arguments
            .as_ref()
            .is_none_or(|e| arguments_match(e, arguments))
}

fn expected_text(c: &ExpectedCall) -> String {
    match &c.arguments {
        Some(a) => format!("{} {a}", c.tool),
        None => c.tool.clone(),
    }
}

/// Why a run did not do what the eval expects (empty: it did).
pub fn grade(eval: &Eval, run: &RunSummary) -> Vec<String> {
    let mut out = Vec::new();
    if !run.done {
        out.push(format!("it did not finish: {}", run.outcome));
    }
    if eval.in_order {
        let mut calls = run.tool_calls.iter();
        for e in &eval.expect_tools {
            if !calls.any(|c| call_matches(e, c)) {
                out.push(format!("expected {} (in order) was not called", expected_text(e)));
                break;
            }
        }
    } else {
        for e in &eval.expect_tools {
            if !run.tool_calls.iter().any(|c| call_matches(e, c)) {
                out.push(format!("expected {} was not called", expected_text(e)));
            }
        }
    }
    for f in &eval.forbid_tools {
        if run.tool_calls.iter().any(|(t, _)| t == f) {
            out.push(format!("forbidden tool {f} was called"));
        }
    }
    if let Some(re) = &eval.expect_text
        && !re.is_match(&run.answer)
    {
        out.push(format!(
            "the answer does not match /{}/: {:?}",
            re.as_str(),
            crate::text::shorten(&run.answer, 200)
        ));
    }
    out
}

pub(super) fn run_eval(
    client: &mut Client,
    eval: &Eval,
    model: &str,
    vars: &mut Vars,
    dir: &Path,
    timeout: Duration,
    tools: &[Json],
) -> EvalResult {
    let mut result = EvalResult {
        name: eval.name.clone(),
        at: eval.at,
        model: model.to_owned(),
        runs: eval.runs,
        passed: 0,
        pass_rate: eval.pass_rate,
        verdict: Verdict::Error,
        failures: Vec::new(),
        error: None,
    };
    let prepared = (|| -> Result<(ModelSpec, String, Option<crate::chat::replay::RecordedChat>, Option<String>), String> {
        let base = eval.base_url.as_ref().map(|b| vars.fill_text(b)).transpose().map_err(|e| e.to_string())?;
        let spec = ModelSpec::parse(model, base.as_deref()).map_err(|e| e.to_string())?;
        let prompt = vars.fill_text(&eval.prompt).map_err(|e| e.to_string())?;
        let recorded = match &eval.replay {
            Some(p) => {
                let loaded = crate::record::capture::load(&dir.join(p))
                    .map_err(|e| format!("replay {p}: {}", crate::text::ErrorChain(&e)))?;
                let chat = crate::chat::replay::RecordedChat::from_events(&loaded.events);
                if chat.turns.is_empty() {
                    return Err(format!("replay {p}: the capture holds no model turns"));
                }
                Some(chat)
            }
            None => None,
        };
        let key = match recorded {
            Some(_) => None,
            None => crate::chat::key::find_key_here(&spec, None)?.key,
        };
        Ok((spec, prompt, recorded, key))
    })();
    let (spec, prompt, recorded, key) = match prepared {
        Ok(p) => p,
        Err(e) => {
            result.error = Some(vars.mask(&e));
            return result;
        }
    };
    for n in 1..=eval.runs {
        let mut conversation = Conversation {
            system: eval.system.clone(),
            ..Conversation::default()
        };
        conversation.user(prompt.clone());
        let chat = ChatLoop::new(
            spec.clone(),
            conversation,
            tools,
            Settings::default(),
            Approval::Auto,
            eval.max_turns,
        );
        let mut source = match &recorded {
            Some(chat) => TurnSource::Replay {
                chat: chat.clone(),
                differs: 0,
            },
            None => TurnSource::Live {
                key: key.clone(),
                timeout: timeout.max(Duration::from_secs(60)),
            },
        };
        match drive::drive(client, timeout, chat, &spec, &mut source, &mut Unwatched) {
            Ok(run) => {
                let mut why = grade(eval, &run.summary);
                if let Outcome::ProviderFailed(_) = run.outcome {
                    why.truncate(1);
                }
                if why.is_empty() {
                    result.passed += 1;
                } else {
                    result.failures.push(vars.mask(&format!("run {n}: {}", why.join("; "))));
                }
            }
            Err(e) => {
                result.error = Some(vars.mask(&format!("the session failed: {e}")));
                return result;
            }
        }
    }
    let rate = f64::from(result.passed) / f64::from(eval.runs.max(1));
    result.verdict = if rate + 1e-9 >= eval.pass_rate {
        Verdict::Passed
    } else {
        Verdict::Failed
    };
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn eval(text: &str) -> Eval {
        let f = super::super::file::read(&format!(
            "servers: {{a: {{command: x}}}}\nsteps: [{{request: ping}}]\nevals:\n  - {text}\n"
        ))
        .unwrap_or_else(|e| panic!("{e:?}"));
        f.evals[0].clone()
    }

    #[test]
    fn a_run_is_graded_against_what_the_eval_expects() {
        let run = RunSummary {
            done: true,
            outcome: "done".into(),
            tool_calls: vec![
                ("echo".into(), json!({"message": "Paris, FR"})),
                ("add".into(), json!({"a": 1, "b": 2})),
            ],
            answer: "It is sunny in Paris.".into(),
            ..RunSummary::default()
        };
        let ok = eval(
            "{prompt: p, models: [openai:m], expect_tools: [{name: echo, arguments: {message: 're:(?i)paris'}}, add], in_order: true, forbid_tools: [delete], expect_text: sunny}",
        );
        assert_eq!(grade(&ok, &run), Vec::<String>::new());
        let wrong_order = eval("{prompt: p, models: [openai:m], expect_tools: [add, echo], in_order: true}");
        assert_eq!(
            grade(&wrong_order, &run),
            vec!["expected echo (in order) was not called"]
        );
        let forbidden = eval("{prompt: p, models: [openai:m], forbid_tools: [add], expect_text: rain}");
        let said = grade(&forbidden, &run);
        assert_eq!(said[0], "forbidden tool add was called");
        assert!(said[1].starts_with("the answer does not match /rain/"), "{said:?}");
        let args = eval("{prompt: p, models: [openai:m], expect_tools: [{name: add, arguments: {a: 2}}]}");
        assert_eq!(grade(&args, &run), vec![r#"expected add {"a":2} was not called"#]);
        let unfinished = RunSummary {
            done: false,
            outcome: "failed: 500".into(),
            ..run
        };
        assert_eq!(grade(&args, &unfinished)[0], "it did not finish: failed: 500");
    }
}
