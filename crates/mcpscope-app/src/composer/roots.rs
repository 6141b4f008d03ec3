//! The roots offered to the server, edited as text: one `file://` URI per
//! line, then an optional name.

use super::ComposerAction;
use crate::theme;
use egui::{RichText, Ui};
use serde_json::{Value, json};

#[derive(Default)]
pub struct RootsEditor {
    pub text: String,
    error: Option<String>,
}

/// Parses the roots editor: one `file://` URI per line, then an optional name.
pub fn parse_roots(text: &str) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let (uri, name) = match line.split_once(char::is_whitespace) {
            Some((u, n)) => (u, Some(n.trim())),
            None => (line, None),
        };
        if !uri.starts_with("file://") {
            return Err(format!("line {}: a root must be a file:// URI, not {uri:?}", n + 1));
        }
        let mut root = json!({ "uri": uri });
        if let Some(name) = name.filter(|n| !n.is_empty()) {
            root["name"] = json!(name);
        }
        out.push(root);
    }
    Ok(out)
}

impl RootsEditor {
    pub fn ui(&mut self, ui: &mut Ui, roots: &[Value], actions: &mut Vec<ComposerAction>) {
        egui::CollapsingHeader::new(format!("Roots offered to the server ({})", roots.len()))
            .id_salt("composer-roots")
            .default_open(false)
            .show(ui, |ui| {
                if self.text.is_empty() {
                    self.text = roots
                        .iter()
                        .map(|r| {
                            let uri = r.get("uri").and_then(Value::as_str).unwrap_or_default();
                            match r.get("name").and_then(Value::as_str) {
                                Some(n) => format!("{uri} {n}"),
                                None => uri.to_owned(),
                            }
                        })
                        .collect::<Vec<_>>()
                        .join("\n");
                }
                ui.weak("One root per line: a file:// URI, then an optional name. roots/list is answered with these.");
                let l = ui.label("roots");
                ui.add(
                    egui::TextEdit::multiline(&mut self.text)
                        .desired_rows(3)
                        .desired_width(f32::INFINITY),
                )
                .labelled_by(l.id);
                if let Some(e) = &self.error {
                    ui.label(RichText::new(e).color(theme::ERROR));
                }
                if ui.button("Apply and notify the server").clicked() {
                    match parse_roots(&self.text) {
                        Ok(r) => {
                            self.error = None;
                            actions.push(ComposerAction::RootsChanged(r));
                        }
                        Err(e) => self.error = Some(e),
                    }
                }
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_editor_parses_and_rejects_non_file_uris() {
        assert_eq!(
            parse_roots("file:///tmp tmp dir\n\nfile:///home\n").unwrap(),
            [
                json!({"uri": "file:///tmp", "name": "tmp dir"}),
                json!({"uri": "file:///home"})
            ]
        );
        assert!(parse_roots("https://x").unwrap_err().contains("line 1"));
    }
}
