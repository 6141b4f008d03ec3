//! A collapsible JSON tree that only builds what is open.
//!
//! Collapsed nodes cost nothing; big arrays and objects are split into groups
//! of [`GROUP`] children so that opening one never lays out a million rows.
//! Every node offers "copy value" and "copy path"; strings that hold JSON
//! (tool results' `content[].text`) can be shown parsed.

use egui::{CollapsingHeader, Color32, Label, RichText, Sense, Ui};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// Children shown per group in large containers.
pub const GROUP: usize = 100;
/// Longest string shown inline before it is shortened.
const INLINE_STRING: usize = 300;

#[derive(Default)]
pub struct JsonTreeState {
    /// Show strings that hold JSON as trees.
    pub parse_strings: bool,
    /// Set for one frame by expand/collapse all.
    force_open: Option<bool>,
    /// Strings parsed as JSON, by path (None: not JSON).
    parsed_strings: HashMap<String, Option<Arc<Value>>>,
    /// What the last copy put on the clipboard, for feedback.
    pub last_copied: Option<String>,
    /// Offer "Apply as filter" in the context menu (the root is a message).
    pub offer_filter: bool,
    /// A condition the context menu asked to apply (no join) or join to the filter.
    pub filter_request: Option<(Option<mcpscope_core::filter::Join>, String)>,
}

impl JsonTreeState {
    pub fn expand_all(&mut self) {
        self.force_open = Some(true);
    }

    pub fn collapse_all(&mut self) {
        self.force_open = Some(false);
    }

    /// Forgets per-value caches (call when a different value is shown).
    pub fn reset(&mut self) {
        self.parsed_strings.clear();
        self.force_open = None;
        self.last_copied = None;
    }
}

/// Appends a key to a JSONPath-like path: `$.a.b`, `$["odd key"]`, `$.items[3]`.
pub fn child_path(parent: &str, key: &str) -> String {
    let plain = key
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if plain {
        format!("{parent}.{key}")
    } else {
        format!("{parent}[{}]", serde_json::to_string(key).unwrap_or_default())
    }
}

pub fn index_path(parent: &str, i: usize) -> String {
    format!("{parent}[{i}]")
}

/// A one-line preview of a value.
pub fn summary(v: &Value) -> String {
    match v {
        Value::Object(o) => format!("{{…}} {} key{}", o.len(), if o.len() == 1 { "" } else { "s" }),
        Value::Array(a) => format!("[…] {} item{}", a.len(), if a.len() == 1 { "" } else { "s" }),
        Value::String(s) => shorten_string(s),
        other => other.to_string(),
    }
}

fn shorten_string(s: &str) -> String {
    let quoted = serde_json::to_string(s).unwrap_or_default();
    if quoted.len() <= INLINE_STRING {
        quoted
    } else {
        let mut cut = INLINE_STRING;
        while !quoted.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}…\" ({} chars)", &quoted[..cut], s.chars().count())
    }
}

fn value_color(v: &Value) -> Color32 {
    match v {
        Value::String(_) => Color32::from_rgb(0xce, 0x91, 0x78),
        Value::Number(_) => Color32::from_rgb(0xb5, 0xce, 0xa8),
        Value::Bool(_) => Color32::from_rgb(0x56, 0x9c, 0xd6),
        Value::Null => Color32::from_gray(140),
        _ => Color32::from_gray(200),
    }
}

fn looks_like_json(s: &str) -> bool {
    let t = s.trim_start();
    t.starts_with('{') || t.starts_with('[')
}

/// Shows `value` as a tree; `id_salt` keeps open states apart between trees.
pub fn show(ui: &mut Ui, value: &Value, state: &mut JsonTreeState, id_salt: &str) {
    ui.push_id(id_salt, |ui| {
        ui.spacing_mut().item_spacing.y = 1.0;
        node(ui, None, value, "$", state, 0);
    });
    state.force_open = None;
}

fn copy_menu(ui: &mut Ui, value: &Value, path: &str, state: &mut JsonTreeState) {
    if ui.button("Copy value").clicked() {
        let text = match value {
            Value::String(s) => s.clone(),
            other => serde_json::to_string_pretty(other).unwrap_or_default(),
        };
        ui.ctx().copy_text(text);
        state.last_copied = Some(format!("value of {path}"));
        ui.close();
    }
    if ui.button("Copy value as JSON").clicked() {
        ui.ctx().copy_text(value.to_string());
        state.last_copied = Some(format!("JSON of {path}"));
        ui.close();
    }
    if ui.button("Copy path").clicked() {
        ui.ctx().copy_text(path.to_owned());
        state.last_copied = Some(format!("path {path}"));
        ui.close();
    }
    if state.offer_filter
        && let Some(cond) = mcpscope_core::filter::condition_for(path, value)
    {
        ui.separator();
        if ui
            .button(format!(
                "Apply as filter: {}",
                mcpscope_core::text::ellipsize(&cond, 60)
            ))
            .clicked()
        {
            state.filter_request = Some((None, cond.clone()));
            ui.close();
        }
        ui.menu_button("Prepare as filter", |ui| {
            for j in mcpscope_core::filter::Join::ALL {
                if ui
                    .button(format!("… {} {}", j.text(), mcpscope_core::text::ellipsize(&cond, 60)))
                    .clicked()
                {
                    state.filter_request = Some((Some(j), cond.clone()));
                    ui.close();
                }
            }
        });
    }
}

fn node(ui: &mut Ui, key: Option<&str>, value: &Value, path: &str, state: &mut JsonTreeState, depth: usize) {
    let key_text = key.map(|k| format!("{k}: ")).unwrap_or_default();
    match value {
        Value::Object(_) | Value::Array(_) => {
            let header = RichText::new(format!("{key_text}{}", summary(value))).monospace();
            let small = match value {
                Value::Object(o) => o.len() <= GROUP,
                Value::Array(a) => a.len() <= GROUP,
                _ => true,
            };
            let resp = CollapsingHeader::new(header)
                .id_salt(path)
                .default_open(depth < 4 && small)
                .open(state.force_open)
                .show(ui, |ui| children(ui, value, path, state, depth));
            resp.header_response
                .on_hover_text(path)
                .context_menu(|ui| copy_menu(ui, value, path, state));
        }
        Value::String(s) if state.parse_strings && looks_like_json(s) => {
            let parsed = state
                .parsed_strings
                .entry(path.to_owned())
                .or_insert_with(|| serde_json::from_str::<Value>(s).ok().map(Arc::new))
                .clone();
            match parsed {
                Some(inner) if inner.is_object() || inner.is_array() => {
                    let header = RichText::new(format!("{key_text}(JSON in string) {}", summary(&inner)))
                        .monospace()
                        .italics();
                    let resp = CollapsingHeader::new(header)
                        .id_salt(format!("{path}#parsed"))
                        .default_open(true)
                        .open(state.force_open)
                        .show(ui, |ui| children(ui, &inner, &format!("{path}#json"), state, depth));
                    resp.header_response
                        .on_hover_text(format!("{path} (a string holding JSON, shown parsed)"))
                        .context_menu(|ui| copy_menu(ui, value, path, state));
                }
                _ => leaf(ui, &key_text, value, path, state),
            }
        }
        _ => leaf(ui, &key_text, value, path, state),
    }
}

fn leaf(ui: &mut Ui, key_text: &str, value: &Value, path: &str, state: &mut JsonTreeState) {
    let mut job = egui::text::LayoutJob::default();
    let mono = egui::TextStyle::Monospace.resolve(ui.style());
    job.append(
        key_text,
        0.0,
        egui::TextFormat::simple(mono.clone(), ui.visuals().text_color()),
    );
    job.append(&summary(value), 0.0, egui::TextFormat::simple(mono, value_color(value)));
    let resp = ui.add(Label::new(job).sense(Sense::click()).truncate());
    resp.on_hover_text(path)
        .context_menu(|ui| copy_menu(ui, value, path, state));
}

fn children(ui: &mut Ui, value: &Value, path: &str, state: &mut JsonTreeState, depth: usize) {
    match value {
        Value::Object(o) => {
            let len = o.len();
            if len <= GROUP {
                for (k, v) in o {
                    node(ui, Some(k), v, &child_path(path, k), state, depth + 1);
                }
            } else {
                let entries: Vec<(&String, &Value)> = o.iter().collect();
                groups(ui, len, path, state, |ui, range, state| {
                    for (k, v) in &entries[range] {
                        node(ui, Some(k), v, &child_path(path, k), state, depth + 1);
                    }
                });
            }
        }
        Value::Array(a) => {
            let len = a.len();
            if len <= GROUP {
                for (i, v) in a.iter().enumerate() {
                    node(ui, Some(&i.to_string()), v, &index_path(path, i), state, depth + 1);
                }
            } else {
                groups(ui, len, path, state, |ui, range, state| {
                    for i in range {
                        node(ui, Some(&i.to_string()), &a[i], &index_path(path, i), state, depth + 1);
                    }
                });
            }
        }
        _ => {}
    }
}

fn groups(
    ui: &mut Ui,
    len: usize,
    path: &str,
    state: &mut JsonTreeState,
    mut body: impl FnMut(&mut Ui, std::ops::Range<usize>, &mut JsonTreeState),
) {
    for (g, start) in (0..len).step_by(GROUP).enumerate() {
        let end = (start + GROUP).min(len);
        // Expand-all opens only the first group: opening every group of a
        // huge array would lay out all of it at once.
        let force = match state.force_open {
            Some(true) if g > 0 => None,
            other => other,
        };
        CollapsingHeader::new(RichText::new(format!("[{start} … {}]", end - 1)).monospace().weak())
            .id_salt(format!("{path}#group{g}"))
            .default_open(false)
            .open(force)
            .show(ui, |ui| body(ui, start..end, state));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use egui_kittest::Harness;
    use egui_kittest::kittest::Queryable as _;
    use serde_json::json;

    #[test]
    fn paths_and_summaries() {
        assert_eq!(child_path("$", "result"), "$.result");
        assert_eq!(child_path("$.a", "odd key"), r#"$.a["odd key"]"#);
        assert_eq!(child_path("$", "1x"), r#"$["1x"]"#);
        assert_eq!(index_path("$.content", 0), "$.content[0]");
        assert_eq!(summary(&json!({"a":1})), "{…} 1 key");
        assert_eq!(summary(&json!([1, 2])), "[…] 2 items");
        let long = "y".repeat(1000);
        assert!(summary(&json!(long)).ends_with("(1000 chars)"));
    }

    #[test]
    fn collapsed_children_are_not_built_and_strings_parse_on_demand() {
        let value = json!({
            "result": {
                "content": [{"type": "text", "text": "{\"path\":\"notes.md\",\"line\":5}"}],
                "deep": {"a": {"b": {"hidden": "leaf-not-built"}}}
            }
        });
        let mut state = JsonTreeState::default();
        let mut harness = Harness::new_ui_state(
            |ui, (v, s): &mut (Value, JsonTreeState)| show(ui, v, s, "t"),
            (value, std::mem::take(&mut state)),
        );
        harness.run();
        assert!(
            harness.query_by_label_contains("leaf-not-built").is_none(),
            "collapsed subtree not laid out"
        );
        assert!(
            harness.query_by_label_contains("notes.md").is_some(),
            "raw string shown"
        );
        harness.state_mut().1.parse_strings = true;
        harness.state_mut().1.expand_all();
        harness.run();
        assert!(harness.query_by_label_contains("leaf-not-built").is_some());
        assert!(harness.query_by_label_contains("(JSON in string)").is_some());
    }

    #[test]
    fn huge_arrays_are_grouped() {
        let value = json!({"items": (0..100_000).collect::<Vec<_>>()});
        let mut harness = Harness::new_ui_state(
            |ui, (v, s): &mut (Value, JsonTreeState)| show(ui, v, s, "t"),
            (value, JsonTreeState::default()),
        );
        harness.run();
        assert!(harness.query_by_label_contains("100000 items").is_some());
        assert!(
            harness.query_by_label_contains("[0 … 99]").is_none(),
            "a huge array starts closed"
        );
        harness.state_mut().1.expand_all();
        harness.run();
        assert!(harness.query_by_label_contains("[0 … 99]").is_some());
        assert!(harness.query_by_label_contains("[99900 … 99999]").is_some());
        assert!(
            harness.query_by_label_contains("98: 98").is_some(),
            "expand all opens the first group"
        );
        assert!(
            harness.query_by_label_contains("55555").is_none(),
            "other groups stay closed"
        );
    }
}
