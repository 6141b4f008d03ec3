//! Raw mode: any method as a request (with a chosen id) or a notification,
//! or a line sent exactly as typed, even when it is not JSON.

use super::{ComposerAction, fitted, send_row};
use crate::inspection::Outgoing;
use crate::theme;
use egui::{RichText, Ui};
use mcpscope_core::protocol::methods;
use mcpscope_core::wire::message::RequestId;
use serde_json::Value;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RawKind {
    Request,
    Notification,
    Line,
}

pub struct RawComposer {
    pub kind: RawKind,
    pub method: String,
    pub params: String,
    /// Empty: the next free id. Otherwise a number or a string (quoted or not).
    pub id: String,
    pub line: String,
}

impl Default for RawComposer {
    fn default() -> Self {
        Self {
            kind: RawKind::Request,
            method: methods::PING.into(),
            params: String::new(),
            id: String::new(),
            line: r#"{"jsonrpc":"2.0","id":"raw-1","method":"ping"}"#.into(),
        }
    }
}

/// `""` → next free id; `7` → number; `abc` or `"abc"` → string.
pub fn parse_id(s: &str) -> Result<Option<RequestId>, String> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(None);
    }
    if let Ok(n) = s.parse::<i64>() {
        return Ok(Some(RequestId::Number(n)));
    }
    if s.starts_with('"') {
        return serde_json::from_str::<String>(s)
            .map(|x| Some(RequestId::String(x)))
            .map_err(|e| format!("id is not a JSON string: {e}"));
    }
    Ok(Some(RequestId::String(s.to_owned())))
}

impl RawComposer {
    /// What the raw composer would send, or why it cannot.
    pub fn outgoing(&self) -> Result<Outgoing, String> {
        if self.kind == RawKind::Line {
            // Sent as typed, even when it is not JSON: that is the point.
            return Ok(Outgoing::Raw(self.line.clone().into_bytes()));
        }
        let method = self.method.trim();
        if method.is_empty() {
            return Err("method is empty".into());
        }
        let params = if self.params.trim().is_empty() {
            None
        } else {
            Some(serde_json::from_str::<Value>(&self.params).map_err(|e| format!("params are not JSON: {e}"))?)
        };
        Ok(match self.kind {
            RawKind::Notification => Outgoing::Notification {
                method: method.to_owned(),
                params,
            },
            _ => Outgoing::Request {
                method: method.to_owned(),
                params,
                id: parse_id(&self.id)?,
            },
        })
    }

    /// Loads a past message to edit.
    pub fn load(&mut self, out: &Outgoing) {
        let pretty = |p: &Option<Value>| {
            p.as_ref()
                .map(|p| serde_json::to_string_pretty(p).unwrap_or_default())
                .unwrap_or_default()
        };
        match out {
            Outgoing::Request { method, params, id } => {
                self.kind = RawKind::Request;
                self.method = method.clone();
                self.params = pretty(params);
                self.id = match id {
                    Some(RequestId::Number(n)) => n.to_string(),
                    Some(RequestId::String(s)) => serde_json::to_string(s).unwrap_or_default(),
                    None => String::new(),
                };
            }
            Outgoing::Notification { method, params } => {
                self.kind = RawKind::Notification;
                self.method = method.clone();
                self.params = pretty(params);
            }
            Outgoing::Raw(line) => {
                self.kind = RawKind::Line;
                self.line = String::from_utf8_lossy(line).into_owned();
            }
        }
    }

    /// The message as the bytes an intercepting proxy injects: a request
    /// needs its id (nobody else numbers it).
    pub fn inject_bytes(&self) -> Result<Vec<u8>, String> {
        match self.outgoing()? {
            Outgoing::Raw(bytes) => Ok(bytes),
            Outgoing::Request { id: None, .. } => Err("give the request an id to inject it".into()),
            Outgoing::Request {
                method,
                params,
                id: Some(id),
            } => {
                let mut v = serde_json::json!({"jsonrpc": "2.0", "id": id.to_json(), "method": method});
                if let Some(p) = params {
                    v["params"] = p;
                }
                Ok(serde_json::to_vec(&v).expect("JSON"))
            }
            Outgoing::Notification { method, params } => {
                let mut v = serde_json::json!({"jsonrpc": "2.0", "method": method});
                if let Some(p) = params {
                    v["params"] = p;
                }
                Ok(serde_json::to_vec(&v).expect("JSON"))
            }
        }
    }

    /// `inject`: the session is a proxy that intercepts, so the message can
    /// be sent to either side by it.
    pub fn ui(&mut self, ui: &mut Ui, live: bool, inject: bool, actions: &mut Vec<ComposerAction>) {
        ui.horizontal(|ui| {
            ui.selectable_value(&mut self.kind, RawKind::Request, "request");
            ui.selectable_value(&mut self.kind, RawKind::Notification, "notification");
            ui.selectable_value(&mut self.kind, RawKind::Line, "raw line");
        });
        if self.kind == RawKind::Line {
            ui.weak("Sent exactly as typed (a newline is added), even if it is not JSON.");
            let l = ui.label("line");
            ui.add(
                egui::TextEdit::multiline(&mut self.line)
                    .code_editor()
                    .desired_rows(3)
                    .desired_width(f32::INFINITY),
            )
            .labelled_by(l.id);
        } else {
            egui::Grid::new("raw-grid").num_columns(2).show(ui, |ui| {
                let l = ui.label("method");
                ui.add(egui::TextEdit::singleline(&mut self.method).desired_width(fitted(ui, 260.0)))
                    .labelled_by(l.id);
                ui.end_row();
                if self.kind == RawKind::Request {
                    let l = ui.label("id");
                    ui.add(
                        egui::TextEdit::singleline(&mut self.id)
                            .hint_text("next free id")
                            .desired_width(fitted(ui, 120.0)),
                    )
                    .labelled_by(l.id);
                    ui.end_row();
                }
                let l = ui.label("params");
                ui.add(
                    egui::TextEdit::multiline(&mut self.params)
                        .code_editor()
                        .hint_text("JSON, or empty for none")
                        .desired_rows(3)
                        .desired_width(f32::INFINITY),
                )
                .labelled_by(l.id);
                ui.end_row();
            });
        }
        let outgoing = self.outgoing();
        let valid = outgoing.is_ok();
        if let Err(e) = &outgoing {
            ui.label(RichText::new(e).color(theme::ERROR));
        }
        if send_row(ui, live, outgoing.is_ok(), "Send")
            && let Ok(out) = outgoing
        {
            actions.push(ComposerAction::Send(out));
        }
        if inject {
            let bytes = self.inject_bytes();
            ui.horizontal(|ui| {
                for (label, toward) in [
                    ("Inject to client", mcpscope_core::wire::frame::Direction::In),
                    ("Inject to server", mcpscope_core::wire::frame::Direction::Out),
                ] {
                    if ui.add_enabled(bytes.is_ok(), egui::Button::new(label)).clicked()
                        && let Ok(b) = &bytes
                    {
                        actions.push(ComposerAction::Inject {
                            toward,
                            bytes: b.clone(),
                        });
                    }
                }
            });
            if let (Err(e), true) = (&bytes, valid) {
                ui.weak(e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_is_injected_is_the_message_with_its_id() {
        let mut c = RawComposer {
            kind: RawKind::Request,
            method: "ping".into(),
            params: String::new(),
            id: String::new(),
            line: String::new(),
        };
        assert!(c.inject_bytes().unwrap_err().contains("id"));
        c.id = "7".into();
        assert_eq!(
            c.inject_bytes().unwrap(),
            br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#
        );
        c.kind = RawKind::Line;
        c.line = "{oops".into();
        assert_eq!(c.inject_bytes().unwrap(), b"{oops");
    }

    #[test]
    fn ids_parse_as_numbers_or_strings() {
        assert_eq!(parse_id(""), Ok(None));
        assert_eq!(parse_id(" 7 "), Ok(Some(RequestId::Number(7))));
        assert_eq!(parse_id("abc"), Ok(Some(RequestId::String("abc".into()))));
        assert_eq!(parse_id("\"7\""), Ok(Some(RequestId::String("7".into()))));
        assert!(parse_id("\"open").is_err());
    }

    #[test]
    fn raw_composer_builds_requests_notifications_and_lines() {
        let mut r = RawComposer {
            kind: RawKind::Request,
            method: "tools/list".into(),
            params: r#"{"cursor":"x"}"#.into(),
            id: "req-1".into(),
            line: String::new(),
        };
        assert_eq!(
            r.outgoing(),
            Ok(Outgoing::Request {
                method: "tools/list".into(),
                params: Some(json!({"cursor": "x"})),
                id: Some(RequestId::String("req-1".into())),
            })
        );
        r.params = "{oops".into();
        assert!(r.outgoing().unwrap_err().contains("params are not JSON"));
        r.kind = RawKind::Notification;
        r.params.clear();
        assert_eq!(
            r.outgoing(),
            Ok(Outgoing::Notification {
                method: "tools/list".into(),
                params: None
            })
        );
        r.kind = RawKind::Line;
        r.line = "{not json".into();
        assert_eq!(r.outgoing(), Ok(Outgoing::Raw(b"{not json".to_vec())));
    }
}
