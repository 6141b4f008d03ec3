//! `completion/complete` suggestions for prompt arguments and template
//! variables: asked for once a field's text changed and settled (debounced),
//! one request in flight at a time, each field remembering what it asked, and
//! answers about text the user has changed since dropped.

use super::ComposerAction;
use crate::inspection::Outgoing;
use egui::Ui;
use mcpscope_core::protocol::capabilities::unadvertised;
use mcpscope_core::protocol::methods;
use mcpscope_core::timeline::model::SessionModel;
use mcpscope_core::wire::message::RequestId;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Whether the server takes `completion/complete`, by the rule lint and the
/// CLI's warning read ([`unadvertised`]), under the version this session
/// negotiated: a 2024-11-05 server needs no `completions` flag.
pub fn server_completes(model: &SessionModel) -> bool {
    model
        .capabilities()
        .filter(|caps| caps.is_object())
        .is_some_and(|caps| unadvertised(caps, methods::COMPLETION_COMPLETE, model.negotiated_version()).is_none())
}

/// How long a field's text must stay the same before suggestions are asked for.
pub const DEBOUNCE: Duration = Duration::from_millis(250);

/// Suggestions, per field (`prompt:<name>:<arg>` or `template:<uri>:<var>`).
#[derive(Default)]
pub struct Completions {
    /// The text each field last asked about (or had picked): not asked again.
    asked: HashMap<String, String>,
    /// Text being typed in a field, and since when, until it settles.
    typing: HashMap<String, (String, Instant)>,
    /// The last ask, until the app says which id it went out under.
    last_ask: Option<(String, String)>,
    /// The request in flight: its id, field and text.
    pending: Option<(RequestId, String, String)>,
    /// The suggestions on screen, and for which field.
    shown: Option<(String, Vec<String>)>,
}

impl Completions {
    /// Takes the suggestions when they arrive (or forgets a request that
    /// failed); an answer about text the user has changed since is dropped.
    pub fn poll(&mut self, model: &SessionModel, failed: impl Fn(&RequestId) -> bool) {
        let Some((id, field, text)) = &self.pending else { return };
        let row = model.response_to(id);
        if row.is_none() && !failed(id) {
            return;
        }
        let (field, text) = (field.clone(), text.clone());
        self.pending = None;
        if self.asked.get(&field) != Some(&text) {
            return;
        }
        let v: Value = row
            .and_then(|row| model.store.get(row))
            .and_then(|r| serde_json::from_slice(r.raw()).ok())
            .unwrap_or(Value::Null);
        let values = v
            .pointer("/result/completion/values")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect())
            .unwrap_or_default();
        self.shown = Some((field, values));
    }

    /// The last ask went out under `id`.
    pub fn sent(&mut self, id: RequestId) {
        if let Some((field, text)) = self.last_ask.take() {
            self.pending = Some((id, field, text));
        }
    }

    /// Forgets everything (another prompt or template was chosen).
    pub fn reset(&mut self) {
        *self = Completions::default();
    }

    /// Asks for suggestions once the field's text changed and then settled
    /// for [`DEBOUNCE`]; [`Completions::settling`] tells the caller to come
    /// back (repaint) until then.
    pub fn ask(
        &mut self,
        field: &str,
        reference: Value,
        arg: &str,
        value: &str,
        context: Map<String, Value>,
    ) -> Option<ComposerAction> {
        if value.is_empty() || self.asked.get(field).is_some_and(|a| a == value) {
            self.typing.remove(field);
            return None;
        }
        match self.typing.get(field) {
            Some((text, since)) if text == value => {
                if since.elapsed() < DEBOUNCE || self.pending.is_some() {
                    return None;
                }
            }
            _ => {
                self.typing.insert(field.to_owned(), (value.to_owned(), Instant::now()));
                return None;
            }
        }
        self.typing.remove(field);
        self.asked.insert(field.to_owned(), value.to_owned());
        self.last_ask = Some((field.to_owned(), value.to_owned()));
        let mut params = json!({"ref": reference, "argument": {"name": arg, "value": value}});
        if !context.is_empty() {
            params["context"] = json!({ "arguments": context });
        }
        Some(ComposerAction::Complete(Outgoing::Request {
            method: methods::COMPLETION_COMPLETE.into(),
            params: Some(params),
            id: None,
        }))
    }

    /// Whether some field's text is waiting for its debounce to pass.
    pub fn settling(&self) -> bool {
        !self.typing.is_empty()
    }

    /// Clickable suggestions for `field`; returns the one picked.
    pub fn ui(&mut self, ui: &mut Ui, field: &str) -> Option<String> {
        let Some((shown_for, values)) = &self.shown else {
            return None;
        };
        if shown_for != field || values.is_empty() {
            return None;
        }
        let mut picked = None;
        ui.horizontal_wrapped(|ui| {
            ui.weak("suggestions:");
            for v in values.iter().take(20) {
                if ui.small_button(v).clicked() {
                    picked = Some(v.clone());
                }
            }
        });
        if let Some(p) = &picked {
            self.asked.insert(field.to_owned(), p.clone());
            self.shown = None;
        }
        picked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(c: &mut Completions, field: &str, value: &str) -> Option<ComposerAction> {
        c.ask(
            field,
            json!({"type": "ref/prompt", "name": "p"}),
            "x",
            value,
            Map::new(),
        )
    }

    fn settle(c: &mut Completions) {
        for (_, since) in c.typing.values_mut() {
            *since -= DEBOUNCE;
        }
    }

    #[test]
    fn two_filled_fields_do_not_ask_in_turn_forever() {
        let mut c = Completions::default();
        assert!(ask(&mut c, "a", "Alice").is_none(), "typing starts the debounce");
        assert!(ask(&mut c, "b", "x").is_none());
        settle(&mut c);
        assert!(ask(&mut c, "a", "Alice").is_some());
        c.sent(RequestId::Number(1));
        assert!(ask(&mut c, "b", "x").is_none(), "one request in flight at a time");
        c.pending = None;
        assert!(ask(&mut c, "b", "x").is_some());
        c.sent(RequestId::Number(2));
        c.pending = None;
        // Both fields have asked about their text: nothing more, however often drawn.
        for _ in 0..1000 {
            assert!(ask(&mut c, "a", "Alice").is_none());
            assert!(ask(&mut c, "b", "x").is_none());
        }
        assert!(!c.settling());
    }

    #[test]
    fn a_picked_suggestion_is_not_asked_about_again() {
        let mut c = Completions {
            shown: Some(("a".into(), vec!["Alice".into()])),
            ..Completions::default()
        };
        c.asked.insert("a".into(), "Alice".into());
        assert!(ask(&mut c, "a", "Alice").is_none());
        assert!(!c.settling());
    }

    fn session(version: &str, capabilities: &str) -> SessionModel {
        use mcpscope_core::wire::frame::Direction;
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
        let answer = format!(
            r#"{{"jsonrpc":"2.0","id":0,"result":{{"protocolVersion":"{version}","capabilities":{capabilities},"serverInfo":{{"name":"s","version":"1"}}}}}}"#
        );
        mcpscope_core::timeline::replay::Replay::of(&[(Direction::Out, init), (Direction::In, &answer)]).model()
    }

    /// The composer offers completions exactly when the CLI would send
    /// `completion/complete` without a warning.
    #[test]
    fn completions_follow_the_negotiated_version() {
        let prompts_only = r#"{"prompts":{}}"#;
        let old = session("2024-11-05", prompts_only);
        assert_eq!(old.negotiated_version(), Some("2024-11-05"));
        assert!(server_completes(&old), "a 2024-11-05 server needs no flag");
        assert!(!server_completes(&session("2025-06-18", prompts_only)));
        assert!(server_completes(&session(
            "2025-06-18",
            r#"{"prompts":{},"completions":{}}"#
        )));
        assert!(!server_completes(&session("2025-06-18", r#"{"completions":null}"#)));
        for (version, caps) in [("2024-11-05", prompts_only), ("2025-06-18", prompts_only)] {
            let m = session(version, caps);
            let cli = unadvertised(m.capabilities().unwrap(), methods::COMPLETION_COMPLETE, Some(version)).is_none();
            assert_eq!(server_completes(&m), cli, "{version}");
        }
        let no_handshake = SessionModel::new(mcpscope_core::timeline::model::Source::Live {
            command_line: String::new(),
        });
        assert!(!server_completes(&no_handshake), "nothing known yet: nothing offered");
    }
}
