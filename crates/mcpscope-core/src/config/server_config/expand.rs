//! `${...}` in config values, expanded as each file's own host does.

use super::ConfigFormat;
use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;

/// Expands `${...}` the way the file's own host would, and notes what it cannot fill in.
pub(super) struct Expander<'a> {
    pub(super) format: ConfigFormat,
    pub(super) env: &'a dyn Fn(&str) -> Option<String>,
    pub(super) workspace: Option<PathBuf>,
    pub(super) inputs: HashMap<String, Option<String>>,
}

impl Expander<'_> {
    /// `place` names where the value sits ("env FOO", "args[2]"), for the notes.
    /// Taken as `Display` so that a label is only spelled out for a note.
    pub(super) fn expand(&self, place: &dyn fmt::Display, text: &str, notes: &mut Vec<String>) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            let Some(len) = rest[start..].find('}') else { break };
            let placeholder = &rest[start..start + len + 1];
            out.push_str(&rest[..start]);
            match self.resolve(place, placeholder, notes) {
                Some(value) => out.push_str(&value),
                None => out.push_str(placeholder),
            }
            rest = &rest[start + len + 1..];
        }
        out.push_str(rest);
        out
    }

    /// `None` keeps the placeholder text, so the user sees what still needs filling in.
    fn resolve(&self, place: &dyn fmt::Display, placeholder: &str, notes: &mut Vec<String>) -> Option<String> {
        let inner = &placeholder[2..placeholder.len() - 1];
        match self.format {
            ConfigFormat::ClaudeDesktop => {
                notes.push(format!(
                    "{place} contains {placeholder}, which Claude Desktop passes on literally \
                     (it does not expand variables)"
                ));
                None
            }
            ConfigFormat::McpJson => {
                let (var, default) = match inner.split_once(":-") {
                    Some((var, default)) => (var, Some(default)),
                    None => (inner, None),
                };
                // As in the shell, `:-` also replaces a variable that is set but empty.
                let value = (self.env)(var).filter(|v| !v.is_empty() || default.is_none());
                let value = value.or_else(|| default.map(str::to_owned));
                if value.is_none() {
                    notes.push(format!(
                        "{place} uses {placeholder}, but {var} is not set in mcpscope's environment; \
                         set it or fill in the value before launching"
                    ));
                }
                value
            }
            ConfigFormat::VsCode => {
                if let Some(id) = inner.strip_prefix("input:") {
                    notes.push(match self.inputs.get(id) {
                        Some(Some(description)) => format!(
                            "{place} uses {placeholder} (\"{description}\"), which VS Code prompts for; \
                             fill it in before launching"
                        ),
                        Some(None) => {
                            format!(
                                "{place} uses {placeholder}, which VS Code prompts for; fill it in before launching"
                            )
                        }
                        None => format!(
                            "{place} uses {placeholder}, but \"inputs\" declares no \"{id}\"; \
                             fill it in before launching"
                        ),
                    });
                    None
                } else if inner == "workspaceFolder" {
                    if self.workspace.is_none() {
                        notes.push(format!(
                            "{place} uses {placeholder}, but this file is not inside a .vscode folder, \
                             so there is no workspace folder to put there; fill it in before launching"
                        ));
                    }
                    self.workspace.as_ref().map(|w| w.display().to_string())
                } else if let Some(var) = inner.strip_prefix("env:") {
                    // VS Code substitutes an empty string for an unset variable; so do we, but say so.
                    Some((self.env)(var).unwrap_or_else(|| {
                        notes.push(format!(
                            "{place} uses {placeholder}, but {var} is not set in mcpscope's environment, \
                             so it became empty"
                        ));
                        String::new()
                    }))
                } else {
                    notes.push(format!(
                        "{place} uses {placeholder}, which mcpscope does not expand; fill it in before launching"
                    ));
                    None
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansion_leaves_odd_text_alone() {
        let expander = Expander {
            format: ConfigFormat::McpJson,
            env: &|name| (name == "A").then(|| "x".to_owned()),
            workspace: None,
            inputs: HashMap::new(),
        };
        let mut notes = Vec::new();
        assert_eq!(expander.expand(&"arg", "$A ${A}${A} $ ${A", &mut notes), "$A xx $ ${A");
        assert_eq!(expander.expand(&"arg", "${B:-}|${B:-a:-b}", &mut notes), "|a:-b");
        assert!(notes.is_empty(), "{notes:?}");
    }
}
