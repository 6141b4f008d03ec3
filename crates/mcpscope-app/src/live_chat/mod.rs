//! One chat with a model over a live session's tools: the core's
//! [`ChatLoop`] driven from the app, as `mcpscope chat` drives it from the
//! command line. Each model turn streams on a worker of its own (the UI
//! only drains its text); each tool call goes through the session like a
//! composer call ([`ChatEffect::Send`]), so it is on the timeline, paired
//! and judged; each turn is recorded in the session ([`ChatEffect::Record`]).
//! With approval on, a call waits for the person, who may edit its
//! arguments first.

pub mod sampling;
mod turn;

use crate::inspection::{Inspection, Outgoing};
use crate::job::Wake;
use mcpscope_core::chat::replay::RecordedChat;
use mcpscope_core::model::chat_loop::{self, ChatLoop, Outcome, Step};
use mcpscope_core::model::compare::{RunSummary, RunTally};
use mcpscope_core::model::provider::ModelSpec;
use mcpscope_core::model::record::ModelExchange;
use mcpscope_core::protocol::methods;
use mcpscope_core::wire::message::RequestId;
use serde_json::{Value, json};
use std::time::Duration;
pub use turn::{KeyFinder, TurnEnd, TurnWorker, key_finder};

/// Why a chat the person stopped ended.
const STOPPED: &str = "stopped by the user";

/// How a chat ended, in words for the transcript; whether that is a failure.
pub fn outcome_text(o: &Outcome) -> (String, bool) {
    match o {
        Outcome::Done => ("done: the model answered".into(), false),
        Outcome::RoundTripLimit(n) => (format!("the model still wanted tools after {n} round trips"), true),
        Outcome::ProviderFailed(why) if why == STOPPED => (STOPPED.into(), true),
        Outcome::ProviderFailed(why) => (format!("the provider failed: {why}"), true),
    }
}

/// What the chat asks the app to do.
#[derive(Debug)]
pub enum ChatEffect {
    /// Send this `tools/call`, then tell [`ChatRun::tool_sent`] its id.
    Send(Outgoing),
    /// Put this model turn on the timeline and in the capture.
    Record(Box<ModelExchange>),
}

/// One line of the transcript as the panel shows it.
#[derive(Clone, Debug, PartialEq)]
pub enum Entry {
    User(String),
    Model(ModelEntry),
    Tool(ToolEntry),
    /// A change the provider needed in a tool.
    Note(String),
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelEntry {
    pub text: String,
    /// Still streaming.
    pub streaming: bool,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub first_token: Option<Duration>,
    pub total: Option<Duration>,
    /// What the provider's 429s made the turn wait first.
    pub rate_limited: Duration,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ToolEntry {
    pub call_id: String,
    pub tool: String,
    pub state: ToolState,
    /// Replaying a recording: what the recording's call got, when this
    /// one's answer differs from it (`None`: the same, or not replaying).
    pub differs_from_recording: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ToolState {
    /// Waiting for the person: the arguments as text they may edit.
    Asking {
        arguments: String,
        problem: Option<String>,
    },
    /// Sent as this request (or about to be, while `None`).
    Running {
        arguments: Value,
        id: Option<RequestId>,
    },
    Answered {
        arguments: Value,
        text: String,
        is_error: bool,
    },
    Declined,
}

/// Where the conversation is.
pub struct ChatRun {
    chat: ChatLoop,
    spec: ModelSpec,
    /// A key typed in the app, in memory only; `None`: found as the CLI
    /// finds it (the provider's variable, the keyring) for each turn.
    key: Option<String>,
    approve_each: bool,
    tally: RunTally,
    /// Replaying a recorded chat: the model's turns served from it.
    replay: Option<RecordedChat>,
    /// Tool results that differed from the recording's.
    pub differs: usize,
    turn: Option<TurnWorker>,
    wake: Option<Wake>,
    pub transcript: Vec<Entry>,
    /// Set once it is over (finished, failed, stopped).
    pub outcome: Option<Outcome>,
}

impl ChatRun {
    pub fn start(
        chat: ChatLoop,
        spec: ModelSpec,
        key: Option<String>,
        prompt: &str,
        approve_each: bool,
        wake: Option<Wake>,
    ) -> ChatRun {
        let mut transcript = vec![Entry::User(prompt.to_owned())];
        for n in chat.tool_notes() {
            transcript.push(Entry::Note(format!("tool {:?}: {}", n.tool, n.note)));
        }
        ChatRun {
            chat,
            tally: RunTally::new(format!("{}:{}", spec.provider, spec.model)),
            spec,
            key,
            approve_each,
            replay: None,
            differs: 0,
            turn: None,
            wake,
            transcript,
            outcome: None,
        }
    }

    /// The same conversation with the model's turns served from a
    /// recording: no provider, no key, deterministically.
    pub fn replaying(mut self, recording: RecordedChat) -> ChatRun {
        self.replay = Some(recording);
        self
    }

    pub fn is_replay(&self) -> bool {
        self.replay.is_some()
    }

    pub fn running(&self) -> bool {
        self.outcome.is_none()
    }

    /// PROVIDER:MODEL.
    pub fn model_name(&self) -> String {
        format!("{}:{}", self.spec.provider, self.spec.model)
    }

    /// What the run did so far (how it ended, once it did).
    pub fn summary(&self) -> RunSummary {
        let mut s = self.tally.finish(self.outcome.as_ref().unwrap_or(&Outcome::Done));
        if self.outcome.is_none() {
            s.outcome = "running".into();
            s.done = false;
        }
        s
    }

    /// Whether a tool call waits for the person.
    pub fn asking(&self) -> bool {
        self.transcript
            .iter()
            .any(|e| matches!(e, Entry::Tool(t) if matches!(t.state, ToolState::Asking { .. })))
    }

    /// Takes what came (the model's text, its finished turn, a tool's
    /// answer) and moves on; returns what the app must do.
    pub fn poll(&mut self, i: &Inspection) -> Vec<ChatEffect> {
        let mut effects = Vec::new();
        // A turn stopped is still recorded when its worker ends.
        self.drain_turn(&mut effects);
        if self.outcome.is_some() {
            return effects;
        }
        self.take_tool_answer(i);
        self.advance(&mut effects);
        effects
    }

    fn drain_turn(&mut self, effects: &mut Vec<ChatEffect>) {
        let Some(turn) = &self.turn else { return };
        let mut text = String::new();
        let end = turn.poll(&mut text);
        if let Some(Entry::Model(m)) = self.transcript.last_mut()
            && m.streaming
        {
            m.text.push_str(&text);
        }
        let Some(end) = end else { return };
        self.turn = None;
        if let Some(record) = end.record(&self.spec) {
            effects.push(ChatEffect::Record(Box::new(record)));
        }
        let streaming = matches!(self.transcript.last(), Some(Entry::Model(m)) if m.streaming);
        match end {
            TurnEnd::Asked { result: Ok(x), .. } => {
                if let Some(Entry::Model(m)) = self.transcript.last_mut()
                    && streaming
                {
                    m.text = x.turn.text.clone();
                    m.streaming = false;
                    m.input_tokens = x.turn.usage.input_tokens;
                    m.output_tokens = x.turn.usage.output_tokens;
                    m.first_token = x.timing.first_token;
                    m.total = Some(x.timing.total);
                    m.rate_limited = x.waited.iter().sum();
                }
                self.tally.turn(&x.turn, x.timing.first_token, x.timing.total);
                self.chat.model_answered(&x.turn);
            }
            TurnEnd::Asked {
                result: Err(e), took, ..
            } => {
                if let Some(Entry::Model(m)) = self.transcript.last_mut()
                    && streaming
                {
                    m.streaming = false;
                    m.total = Some(took);
                }
                self.tally.failed_turn(took);
                self.chat.model_failed(e.to_string());
            }
            TurnEnd::NotSent(why) => self.chat.model_failed(why),
        }
    }

    /// The answer to the tool call in flight, if it came.
    fn take_tool_answer(&mut self, i: &Inspection) {
        let Some(Entry::Tool(t)) = self.transcript.last_mut() else {
            return;
        };
        let ToolState::Running {
            arguments,
            id: Some(id),
        } = &t.state
        else {
            return;
        };
        let answer = match i.model.response_to(&i.current_id(id)) {
            Some(row) => Some(answer_of(i, row)),
            None => i
                .failure(id)
                .map(|f| (format!("The tool call got no answer: {f}."), true)),
        };
        if let Some((text, is_error)) = answer {
            let call_id = t.call_id.clone();
            t.state = ToolState::Answered {
                arguments: arguments.clone(),
                text: text.clone(),
                is_error,
            };
            if let Some(recording) = &mut self.replay {
                t.differs_from_recording = recording.differs(&text, is_error);
                self.differs += usize::from(t.differs_from_recording.is_some());
            }
            self.chat.tool_answered(&call_id, text, is_error);
        }
    }

    /// Asks the loop what next until something must be waited for.
    fn advance(&mut self, effects: &mut Vec<ChatEffect>) {
        if self.turn.is_some() || self.waiting_on_tool() {
            return;
        }
        match self.chat.next_step() {
            Step::AskModel(_) if self.replay.is_some() => self.serve_recorded(effects),
            Step::AskModel(body) => self.ask_model(body),
            Step::CallTool {
                call_id,
                tool,
                arguments,
            } => {
                if self.approve_each {
                    let text = serde_json::to_string_pretty(&arguments).unwrap_or_else(|_| arguments.to_string());
                    self.transcript.push(Entry::Tool(ToolEntry {
                        call_id,
                        tool,
                        state: ToolState::Asking {
                            arguments: text,
                            problem: None,
                        },
                        differs_from_recording: None,
                    }));
                } else {
                    self.send_tool(call_id, tool, arguments, effects);
                }
            }
            Step::Finished(outcome) => self.outcome = Some(outcome),
        }
    }

    fn waiting_on_tool(&self) -> bool {
        matches!(
            self.transcript.last(),
            Some(Entry::Tool(ToolEntry {
                state: ToolState::Asking { .. } | ToolState::Running { .. },
                ..
            }))
        )
    }

    fn ask_model(&mut self, body: Value) {
        self.transcript.push(Entry::Model(ModelEntry {
            streaming: true,
            ..ModelEntry::default()
        }));
        let key = turn::key_finder(&self.spec, self.key.clone());
        self.turn = Some(TurnWorker::spawn(self.spec.clone(), key, body, self.wake.clone()));
    }

    /// The recording's next model turn, as if the model had answered.
    fn serve_recorded(&mut self, effects: &mut Vec<ChatEffect>) {
        let Some(replay) = self.replay.as_mut() else { return };
        let recorded = match replay.next_turn() {
            Ok(r) => r,
            Err(e) => {
                self.chat.model_failed(e);
                return;
            }
        };
        let turn = recorded.turn();
        self.transcript.push(Entry::Model(ModelEntry {
            text: turn.text.clone(),
            streaming: false,
            input_tokens: turn.usage.input_tokens,
            output_tokens: turn.usage.output_tokens,
            first_token: recorded.first_token,
            total: Some(recorded.total),
            rate_limited: Duration::ZERO,
        }));
        let failed = recorded.error.clone();
        self.tally.turn(&turn, recorded.first_token, recorded.total);
        effects.push(ChatEffect::Record(Box::new(recorded)));
        match failed {
            Some(e) => self.chat.model_failed(format!("the recorded turn failed: {e}")),
            None => self.chat.model_answered(&turn),
        }
    }

    fn send_tool(&mut self, call_id: String, tool: String, arguments: Value, effects: &mut Vec<ChatEffect>) {
        self.tally.called(&tool, &arguments);
        effects.push(ChatEffect::Send(Outgoing::Request {
            method: methods::TOOLS_CALL.into(),
            params: Some(json!({"name": tool, "arguments": arguments})),
            id: None,
        }));
        self.transcript.push(Entry::Tool(ToolEntry {
            call_id,
            tool,
            state: ToolState::Running { arguments, id: None },
            differs_from_recording: None,
        }));
    }

    /// The app sent the tool call as `id` (`None`: it could not be sent).
    pub fn tool_sent(&mut self, id: Option<RequestId>) {
        let Some(Entry::Tool(t)) = self.transcript.last_mut() else {
            return;
        };
        let ToolState::Running { arguments, id: sent } = &mut t.state else {
            return;
        };
        match id {
            Some(id) => *sent = Some(id),
            None => {
                let text = "The tool call could not be sent: the server is not running.".to_owned();
                let call_id = t.call_id.clone();
                t.state = ToolState::Answered {
                    arguments: arguments.clone(),
                    text: text.clone(),
                    is_error: true,
                };
                self.chat.tool_answered(&call_id, text, true);
            }
        }
    }

    /// The person edits the waiting call's arguments.
    pub fn asking_arguments(&mut self) -> Option<(&str, &mut String, Option<&str>)> {
        match self.transcript.last_mut() {
            Some(Entry::Tool(ToolEntry {
                tool,
                state: ToolState::Asking { arguments, problem },
                ..
            })) => Some((tool.as_str(), arguments, problem.as_deref())),
            _ => None,
        }
    }

    /// The person lets the waiting call run, with the arguments as edited.
    pub fn approve(&mut self) -> Vec<ChatEffect> {
        let mut effects = Vec::new();
        let Some(Entry::Tool(t)) = self.transcript.last_mut() else {
            return effects;
        };
        let ToolState::Asking { arguments, problem } = &mut t.state else {
            return effects;
        };
        match serde_json::from_str::<Value>(arguments) {
            Ok(v) if v.is_object() => {
                let (call_id, tool) = (t.call_id.clone(), t.tool.clone());
                self.transcript.pop();
                self.send_tool(call_id, tool, v, &mut effects);
            }
            Ok(_) => *problem = Some("the arguments must be a JSON object".into()),
            Err(e) => *problem = Some(format!("not JSON: {e}")),
        }
        effects
    }

    /// The person refuses the waiting call: the model is told.
    pub fn decline(&mut self) {
        if let Some(Entry::Tool(t)) = self.transcript.last_mut()
            && matches!(t.state, ToolState::Asking { .. })
        {
            t.state = ToolState::Declined;
            let call_id = t.call_id.clone();
            self.chat.tool_declined(&call_id);
        }
    }

    /// Ends the chat now: a turn streaming is cut (and recorded as
    /// stopped when its worker notices), a call waiting is refused.
    pub fn stop(&mut self) {
        if let Some(turn) = &self.turn {
            turn.stop();
            if let Some(Entry::Model(m)) = self.transcript.last_mut() {
                m.streaming = false;
                m.total = Some(turn.elapsed());
            }
        }
        if self.outcome.is_none() {
            self.outcome = Some(Outcome::ProviderFailed(STOPPED.into()));
        }
    }

    /// The model turns asked for so far.
    pub fn turns(&self) -> usize {
        self.chat.turns()
    }
}

/// A tool call's answer as the model is told it.
fn answer_of(i: &Inspection, row: usize) -> (String, bool) {
    match i
        .model
        .store
        .get(row)
        .and_then(|r| serde_json::from_slice::<Value>(r.raw()).ok())
    {
        Some(v) => chat_loop::answer_text(&v),
        None => ("The server's answer was not JSON.".into(), true),
    }
}
