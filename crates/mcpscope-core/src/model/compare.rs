//! One prompt to several models, side by side: what each did (the tools it
//! called with what arguments, its answer, how it ended), what it took
//! (tokens, time to first token, time in all, cost where the provider said)
//! and where the models differ. The chat's drivers tally each run as it
//! goes; [`compare`] lines them up. No I/O.

use super::chat_loop::Outcome;
use super::stream::Turn;
use serde::Serialize;
use serde_json::Value;
use std::time::Duration;

/// What one model did with the prompt.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RunSummary {
    /// PROVIDER:MODEL.
    pub model: String,
    pub outcome: String,
    /// It ended with an answer (not a failure, a stop or the round-trip limit).
    pub done: bool,
    pub turns: usize,
    /// Each tool it had called, in order: its MCP name and the arguments sent.
    pub tool_calls: Vec<(String, Value)>,
    /// Its last text.
    pub answer: String,
    /// Summed over its turns; `None` when a turn did not say.
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    /// Summed, where the provider reported every turn's cost.
    pub cost: Option<f64>,
    /// Its first turn's.
    #[serde(serialize_with = "millis_opt")]
    pub first_token: Option<Duration>,
    /// Its turns' time in all (the tools' time not counted).
    #[serde(serialize_with = "millis")]
    pub model_time: Duration,
}

fn millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1e3)
}

fn millis_opt<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => millis(d, s),
        None => s.serialize_none(),
    }
}

/// Tallies one run as its driver goes.
#[derive(Clone, Debug, Default)]
pub struct RunTally {
    summary: RunSummary,
    costs_reported: bool,
}

impl RunTally {
    pub fn new(model: impl Into<String>) -> Self {
        RunTally {
            summary: RunSummary {
                model: model.into(),
                input_tokens: Some(0),
                output_tokens: Some(0),
                cost: Some(0.0),
                ..RunSummary::default()
            },
            costs_reported: true,
        }
    }

    /// A model turn came back.
    pub fn turn(&mut self, turn: &Turn, first_token: Option<Duration>, took: Duration) {
        let s = &mut self.summary;
        if s.turns == 0 {
            s.first_token = first_token;
        }
        s.turns += 1;
        s.model_time += took;
        let add = |sum: &mut Option<u64>, n: Option<u64>| {
            *sum = sum.zip(n).map(|(a, b)| a + b);
        };
        add(&mut s.input_tokens, turn.usage.input_tokens);
        add(&mut s.output_tokens, turn.usage.output_tokens);
        self.costs_reported &= turn.usage.cost.is_some();
        s.cost = s.cost.zip(turn.usage.cost).map(|(a, b)| a + b);
        if !turn.text.is_empty() {
            s.answer = turn.text.clone();
        }
    }

    /// A turn that failed (its time counts).
    pub fn failed_turn(&mut self, took: Duration) {
        self.summary.turns += 1;
        self.summary.model_time += took;
    }

    /// A tool was called for it.
    pub fn called(&mut self, tool: &str, arguments: &Value) {
        self.summary.tool_calls.push((tool.to_owned(), arguments.clone()));
    }

    pub fn finish(&self, outcome: &Outcome) -> RunSummary {
        let mut s = self.summary.clone();
        (s.outcome, s.done) = match outcome {
            Outcome::Done => ("done".into(), true),
            Outcome::RoundTripLimit(n) => (format!("still wanted tools after {n} round trips"), false),
            Outcome::ProviderFailed(why) => (format!("failed: {why}"), false),
        };
        if !self.costs_reported || s.turns == 0 {
            s.cost = None;
        }
        s
    }
}

/// The runs lined up, and where they differ.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub runs: Vec<RunSummary>,
    /// Every run called the same tools, in the same order.
    pub same_tools: bool,
    /// … with the same arguments.
    pub same_arguments: bool,
    pub same_answer: bool,
    /// What differs, in words (empty when nothing does).
    pub differences: Vec<String>,
}

fn calls_text(calls: &[(String, Value)], with_arguments: bool) -> String {
    if calls.is_empty() {
        return "no tool".into();
    }
    calls
        .iter()
        .map(|(t, a)| if with_arguments { format!("{t} {a}") } else { t.clone() })
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn compare(runs: Vec<RunSummary>) -> Comparison {
    let names = |r: &RunSummary| r.tool_calls.iter().map(|(t, _)| t.clone()).collect::<Vec<_>>();
    let all_same = |f: &dyn Fn(&RunSummary) -> String| runs.windows(2).all(|w| f(&w[0]) == f(&w[1]));
    let same_tools = runs.windows(2).all(|w| names(&w[0]) == names(&w[1]));
    let same_arguments = same_tools && all_same(&|r| calls_text(&r.tool_calls, true));
    let same_answer = all_same(&|r| r.answer.trim().to_owned());
    let mut differences = Vec::new();
    if !same_tools || !same_arguments {
        for r in &runs {
            differences.push(format!("{} called {}", r.model, calls_text(&r.tool_calls, true)));
        }
    }
    if !same_answer {
        for r in &runs {
            differences.push(format!(
                "{} answered {:?}",
                r.model,
                crate::text::shorten(&r.answer, 120)
            ));
        }
    }
    if runs.windows(2).any(|w| w[0].outcome != w[1].outcome) {
        for r in &runs {
            differences.push(format!("{}: {}", r.model, r.outcome));
        }
    }
    Comparison {
        runs,
        same_tools,
        same_arguments,
        same_answer,
        differences,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::stream::Usage;
    use serde_json::json;

    fn turn(text: &str, input: u64, output: u64, cost: Option<f64>) -> Turn {
        Turn {
            text: text.into(),
            usage: Usage {
                input_tokens: Some(input),
                output_tokens: Some(output),
                cost,
            },
            complete: true,
            ..Turn::default()
        }
    }

    #[test]
    fn runs_are_tallied_and_their_differences_said() {
        let mut a = RunTally::new("openai:a");
        a.turn(
            &turn("", 10, 3, Some(0.5)),
            Some(Duration::from_millis(40)),
            Duration::from_millis(100),
        );
        a.called("echo", &json!({"m": 1}));
        a.turn(
            &turn("It is 1.", 20, 4, Some(0.25)),
            Some(Duration::from_millis(5)),
            Duration::from_millis(50),
        );
        let a = a.finish(&Outcome::Done);
        assert_eq!((a.turns, a.input_tokens, a.output_tokens), (2, Some(30), Some(7)));
        assert_eq!(a.cost, Some(0.75));
        assert_eq!(a.first_token, Some(Duration::from_millis(40)));
        assert_eq!(a.model_time, Duration::from_millis(150));
        assert_eq!(a.answer, "It is 1.");

        let mut b = RunTally::new("anthropic:b");
        b.turn(
            &turn("I would rather not.", 12, 5, None),
            None,
            Duration::from_millis(80),
        );
        let b = b.finish(&Outcome::Done);
        assert_eq!(b.cost, None, "no cost reported, none made up");

        let c = compare(vec![a.clone(), b]);
        assert!(!c.same_tools && !c.same_arguments && !c.same_answer);
        assert!(
            c.differences.contains(&r#"openai:a called echo {"m":1}"#.to_owned()),
            "{:?}",
            c.differences
        );
        assert!(c.differences.contains(&"anthropic:b called no tool".to_owned()));

        let mut a2 = a.clone();
        a2.model = "openai:a2".into();
        let same = compare(vec![a, a2]);
        assert!(same.same_tools && same.same_arguments && same.same_answer);
        assert!(same.differences.is_empty());
        let failed = RunTally::new("x").finish(&Outcome::ProviderFailed("HTTP 401".into()));
        assert!(!failed.done && failed.outcome.contains("401") && failed.cost.is_none());
    }
}
