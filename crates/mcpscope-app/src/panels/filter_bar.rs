//! The timeline's filter box: one display-filter expression (the core's
//! language), checked as it is typed with the error underlined and named,
//! completions from the session, a history, saved filters as buttons, the
//! quick controls (text, method, kinds) that write the expression, and the
//! colouring rules.

use crate::theme::{RowKind, RowKindStyle as _};
use egui::{Color32, Key, Stroke, Ui};
use mcpscope_core::filter::complete::{Completion, Vocabulary, complete};
use mcpscope_core::filter::row_index::Shorthand;
use mcpscope_core::filter::{Filter, FilterError};
use serde::{Deserialize, Serialize};

/// A filter plus a colour: rows it matches are tinted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ColorRule {
    pub expr: String,
    pub color: [u8; 3],
    pub enabled: bool,
}

impl Default for ColorRule {
    fn default() -> Self {
        Self {
            expr: String::new(),
            color: [120, 120, 200],
            enabled: true,
        }
    }
}

/// What the filter box keeps between runs (in app.ron): shared by every tab.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FilterPrefs {
    /// Filters applied, newest first.
    pub history: Vec<String>,
    /// Filters saved as buttons.
    pub saved: Vec<String>,
    pub colors: Vec<ColorRule>,
}

impl Default for FilterPrefs {
    fn default() -> Self {
        Self {
            history: Vec::new(),
            saved: Vec::new(),
            colors: vec![
                ColorRule {
                    expr: "kind == \"error\"".into(),
                    color: [200, 60, 60],
                    enabled: true,
                },
                ColorRule {
                    expr: "kind == \"iserror\"".into(),
                    color: [215, 150, 30],
                    enabled: true,
                },
                ColorRule {
                    expr: "latency > 1s".into(),
                    color: [150, 90, 200],
                    enabled: true,
                },
            ],
        }
    }
}

const HISTORY: usize = 30;

impl FilterPrefs {
    pub fn remember(&mut self, expr: &str) {
        let expr = expr.trim();
        if expr.is_empty() {
            return;
        }
        self.history.retain(|h| h != expr);
        self.history.insert(0, expr.to_owned());
        self.history.truncate(HISTORY);
    }
}

/// The compiled colouring rules, rebuilt when the rules change.
#[derive(Default)]
pub struct ColorRules {
    source: Vec<ColorRule>,
    pub compiled: Vec<(Filter, Color32)>,
}

impl ColorRules {
    pub fn update(&mut self, rules: &[ColorRule]) {
        if self.source == rules {
            return;
        }
        self.source = rules.to_vec();
        self.compiled = rules
            .iter()
            .filter(|r| r.enabled)
            .filter_map(|r| {
                let f = Filter::parse(&r.expr).ok()?;
                Some((f, Color32::from_rgb(r.color[0], r.color[1], r.color[2])))
            })
            .collect();
    }
}

#[derive(Default)]
pub struct FilterBar {
    /// The expression as typed.
    pub text: String,
    /// The quick controls; changing one rewrites `text`.
    pub shorthand: Shorthand,
    /// The controls as they were when they last wrote `text`.
    written: Shorthand,
    /// Why `text` is not a filter (the last valid one stays applied).
    pub error: Option<FilterError>,
    /// The text last applied.
    applied: String,
    /// A wrong text already looked at, and whether it was applied as if
    /// its last string were closed (see [`closed_as_typed`]).
    provisional: Option<(String, bool)>,
    completions: Vec<Completion>,
    /// A field to complete was picked (the cursor goes to the end).
    moved_cursor: bool,
}

/// What the filter box asks for.
pub enum FilterChange {
    /// Apply this filter (None: every row).
    Apply(Option<Filter>),
}

impl FilterBar {
    /// Sets the expression (from a shorthand, a saved button, "Apply as filter").
    pub fn set_text(&mut self, text: impl Into<String>) {
        self.text = text.into();
    }

    /// The filter box; returns the filter to apply when the text became a
    /// different valid filter (or empty).
    pub fn ui(
        &mut self,
        ui: &mut Ui,
        prefs: &mut FilterPrefs,
        vocab: &dyn Fn() -> Vocabulary,
        counts: (usize, usize),
        progress: Option<f32>,
        follow_tail: &mut bool,
    ) -> Option<FilterChange> {
        let mut change = None;
        // The expression gets the whole width: filters grow long.
        ui.horizontal(|ui| {
            let label = ui.label("Filter");
            let id = ui.make_persistent_id("display-filter");
            let focused = ui.memory(|m| m.has_focus(id));
            // Tab takes the first completion instead of moving the focus.
            if focused
                && !self.completions.is_empty()
                && ui.input_mut(|i| i.consume_key(egui::Modifiers::NONE, Key::Tab))
            {
                let c = self.completions[0].clone();
                self.accept(&c);
            }
            // Escape closes the completions and leaves the focus in the box.
            if focused
                && !self.completions.is_empty()
                && ui.input_mut(|i| i.consume_key(egui::Modifiers::NONE, Key::Escape))
            {
                self.completions.clear();
            }
            // While completions are offered, Tab and Escape belong to them:
            // egui decides where the focus goes from the filter the box set
            // the frame before, so without this the Tab that takes a
            // completion also moved the focus on, and the next keys were lost.
            let offering = !self.completions.is_empty();
            let mut edit = egui::TextEdit::singleline(&mut self.text)
                .id(id)
                .event_filter(egui::EventFilter {
                    tab: offering,
                    escape: offering,
                    horizontal_arrows: true,
                    vertical_arrows: true,
                })
                .hint_text("e.g. method == \"tools/call\" and latency > 500ms")
                .font(egui::TextStyle::Monospace)
                .desired_width(ui.available_width() - 4.0);
            if self.error.is_some() {
                edit = edit.text_color(ui.visuals().error_fg_color);
            }
            let mut output = edit.show(ui);
            if self.moved_cursor {
                self.moved_cursor = false;
                let end = egui::text::CCursor::new(self.text.chars().count());
                output
                    .state
                    .cursor
                    .set_char_range(Some(egui::text::CCursorRange::one(end)));
                output.state.store(ui.ctx(), id);
            }
            let response = output.response.response.clone().labelled_by(label.id);
            // The error's place, underlined in red under the text.
            if let Some(e) = &self.error {
                let (start, end) = e.char_range(&self.text);
                let x =
                    |i: usize| output.galley_pos.x + output.galley.pos_from_cursor(egui::text::CCursor::new(i)).min.x;
                let y = output.galley_pos.y + output.galley.rect.height() + 1.0;
                let (x0, x1) = (x(start), x(end.max(start + 1)).max(x(start) + 6.0));
                let p = ui.painter_at(response.rect.expand(3.0));
                p.line_segment(
                    [egui::pos2(x0, y), egui::pos2(x1, y)],
                    Stroke::new(2.0, ui.visuals().error_fg_color),
                );
            }
            if response.changed() {
                let cursor = output
                    .cursor_range
                    .map_or(self.text.len(), |r| byte_of(&self.text, r.primary.index.0));
                self.completions = complete(&self.text, cursor, &vocab());
            }
            if !response.has_focus() && !response.lost_focus() {
                self.completions.clear();
            }
            let entered = response.lost_focus() && ui.input(|i| i.key_pressed(Key::Enter));
            if entered {
                prefs.remember(&self.text);
                self.completions.clear();
            }
            self.completion_popup(ui, &response);
        });
        ui.horizontal_wrapped(|ui| {
            color_rules_menu(ui, prefs);
            ui.menu_button("History", |ui| {
                ui.label("Recent filters");
                if prefs.history.is_empty() {
                    ui.weak("(none yet: press Enter in the box to keep one)");
                }
                for h in prefs.history.clone() {
                    if ui
                        .button(mcpscope_core::text::ellipsize(&h, 80))
                        .on_hover_text(&h)
                        .clicked()
                    {
                        self.set_text(h);
                        ui.close();
                    }
                }
            })
            .response
            .on_hover_text("Filters applied recently (Enter in the box keeps one)");
            if ui
                .add_enabled(
                    self.error.is_none() && !self.text.trim().is_empty(),
                    egui::Button::new("Save"),
                )
                .on_hover_text("Keep this filter as a button")
                .clicked()
                && !prefs.saved.contains(&self.text)
            {
                prefs.saved.push(self.text.trim().to_owned());
            }
            if !self.text.is_empty() && ui.button("Clear").clicked() {
                self.text.clear();
                self.shorthand = Shorthand::default();
                self.written = Shorthand::default();
            }
            self.shorthand_controls(ui);
            ui.checkbox(follow_tail, "Follow tail");
            ui.add(
                egui::Label::new(format!("{} of {} rows", counts.0, counts.1)).wrap_mode(egui::TextWrapMode::Extend),
            );
            if let Some(done) = progress {
                ui.spinner();
                ui.weak(format!("filtering {:.0} %", done * 100.0));
            }
        });
        if !prefs.saved.is_empty() {
            ui.horizontal_wrapped(|ui| {
                ui.weak("Saved:");
                let mut remove = None;
                for (i, s) in prefs.saved.iter().enumerate() {
                    let b = ui
                        .selectable_label(self.text.trim() == s, mcpscope_core::text::ellipsize(s, 40))
                        .on_hover_text(format!("{s}\n(right-click to remove)"));
                    if b.clicked() {
                        self.set_text(s.clone());
                    }
                    b.context_menu(|ui| {
                        if ui.button("Remove").clicked() {
                            remove = Some(i);
                            ui.close();
                        }
                    });
                }
                if let Some(i) = remove {
                    prefs.saved.remove(i);
                }
            });
        }
        if let Some(e) = &self.error {
            let as_if_closed = self.provisional.as_ref().is_some_and(|(t, on)| *on && *t == self.text);
            let more = if as_if_closed {
                " (the rows shown read it as if it were)"
            } else {
                ""
            };
            ui.colored_label(ui.visuals().error_fg_color, format!("✖ {}{more}", e.summary()));
        }
        if self.text != self.applied {
            let trimmed = self.text.trim();
            if trimmed.is_empty() {
                self.error = None;
                self.applied = self.text.clone();
                change = Some(FilterChange::Apply(None));
            } else {
                match Filter::parse(trimmed) {
                    Ok(f) => {
                        self.error = None;
                        self.applied = self.text.clone();
                        change = Some(FilterChange::Apply(Some(f)));
                    }
                    // The last valid filter stays applied while this one is wrong,
                    // unless only its last string is still being typed.
                    Err(e) => {
                        if self.provisional.as_ref().is_none_or(|(t, _)| *t != self.text) {
                            let closed = closed_as_typed(trimmed);
                            self.provisional = Some((self.text.clone(), closed.is_some()));
                            if let Some(f) = closed {
                                change = Some(FilterChange::Apply(Some(f)));
                                // Whatever is typed next is looked at again,
                                // even the filter that was applied before.
                                self.applied = self.text.clone();
                            }
                        }
                        let offset = self.text.len() - self.text.trim_start().len();
                        let mut e = e;
                        e.span.start += offset;
                        e.span.end += offset;
                        self.error = Some(e);
                    }
                }
            }
        }
        change
    }

    fn accept(&mut self, c: &Completion) {
        let (start, end) = (c.replace.start.min(self.text.len()), c.replace.end.min(self.text.len()));
        self.text.replace_range(start..end, &c.insert);
        self.completions.clear();
        self.moved_cursor = true;
    }

    fn completion_popup(&mut self, ui: &Ui, response: &egui::Response) {
        if self.completions.is_empty() || !response.has_focus() {
            return;
        }
        let mut picked = None;
        egui::Area::new(response.id.with("completions"))
            .order(egui::Order::Foreground)
            .fixed_pos(response.rect.left_bottom())
            .show(ui.ctx(), |ui| {
                egui::Frame::popup(ui.style()).show(ui, |ui| {
                    ui.weak("Tab takes the first");
                    for c in &self.completions {
                        let text = format!("{}  {}", c.insert.trim_end(), c.doc);
                        if ui
                            .selectable_label(false, mcpscope_core::text::ellipsize(&text, 90))
                            .clicked()
                        {
                            picked = Some(c.clone());
                        }
                    }
                });
            });
        if let Some(c) = picked {
            self.accept(&c);
            response.request_focus();
        }
    }

    /// Text, method and kinds: each change writes the expression they stand for.
    fn shorthand_controls(&mut self, ui: &mut Ui) {
        ui.add(
            egui::TextEdit::singleline(&mut self.shorthand.text)
                .hint_text("text in the line")
                .desired_width(110.0),
        )
        .on_hover_text("Writes lower(raw) contains \"…\" into the filter");
        ui.add(
            egui::TextEdit::singleline(&mut self.shorthand.method)
                .hint_text("method")
                .desired_width(90.0),
        )
        .on_hover_text("Writes lower(method) contains \"…\" into the filter");
        ui.menu_button("Kinds", |ui| {
            for kind in RowKind::ALL {
                let mut shown = !self.shorthand.hidden.contains(&kind);
                let text = egui::RichText::new(format!("{} {}", kind.glyph(), kind.name())).color(kind.color());
                if ui.checkbox(&mut shown, text).changed() {
                    if shown {
                        self.shorthand.hidden.remove(&kind);
                    } else {
                        self.shorthand.hidden.insert(kind);
                    }
                }
            }
        });
        if self.shorthand != self.written {
            self.written = self.shorthand.clone();
            self.text = self.shorthand.expression();
        }
    }
}

/// A filter whose last string is still being typed (`… contains "99`),
/// read as if its quote were closed: its rows are worked out while the
/// string is typed, so they are on screen when the quote comes (at a
/// million rows a whole pass after the last key took several frames).
pub fn closed_as_typed(text: &str) -> Option<Filter> {
    let e = Filter::parse(text).err()?;
    if e.span.end < text.len() || !text.contains('"') {
        return None;
    }
    Filter::parse(&format!("{text}\"")).ok()
}

/// Byte offset of char index `chars` in `s`.
fn byte_of(s: &str, chars: usize) -> usize {
    s.char_indices().nth(chars).map_or(s.len(), |(b, _)| b)
}

/// The colouring rules' editor: an expression and a colour per rule.
pub fn color_rules_menu(ui: &mut Ui, prefs: &mut FilterPrefs) {
    ui.menu_button("Colours", |ui| {
        ui.label("Rows a rule matches are tinted (the first matching rule wins).");
        let mut remove = None;
        for (i, rule) in prefs.colors.iter_mut().enumerate() {
            ui.horizontal(|ui| {
                ui.checkbox(&mut rule.enabled, "");
                let mut c = Color32::from_rgb(rule.color[0], rule.color[1], rule.color[2]);
                if ui.color_edit_button_srgba(&mut c).changed() {
                    rule.color = [c.r(), c.g(), c.b()];
                }
                let bad = Filter::parse(&rule.expr).err();
                let mut edit = egui::TextEdit::singleline(&mut rule.expr)
                    .font(egui::TextStyle::Monospace)
                    .desired_width(260.0);
                if bad.is_some() {
                    edit = edit.text_color(ui.visuals().error_fg_color);
                }
                let r = ui.add(edit);
                if let Some(e) = bad {
                    r.on_hover_text(e.render(&rule.expr));
                }
                if ui.small_button("✖").on_hover_text("Remove this rule").clicked() {
                    remove = Some(i);
                }
            });
        }
        if let Some(i) = remove {
            prefs.colors.remove(i);
        }
        ui.horizontal(|ui| {
            if ui.button("Add rule").clicked() {
                prefs.colors.push(ColorRule {
                    expr: "method == \"tools/call\"".into(),
                    ..ColorRule::default()
                });
            }
            if ui.button("Defaults").clicked() {
                prefs.colors = FilterPrefs::default().colors;
            }
        });
    });
}

#[cfg(test)]
mod tests {
    use super::closed_as_typed;

    #[test]
    fn only_a_last_string_still_being_typed_is_read_as_closed() {
        let canonical = |t: &str| closed_as_typed(t).map(|f| f.canonical());
        assert_eq!(
            canonical(r#"method contains "tools/c"#),
            Some(
                mcpscope_core::filter::Filter::parse(r#"method contains "tools/c""#)
                    .unwrap()
                    .canonical()
            )
        );
        assert!(closed_as_typed(r#"method == "x" and params.m contains "9"#).is_some());
        assert_eq!(canonical("method =="), None, "not a string");
        assert_eq!(
            canonical(r#"method == "x" and"#),
            None,
            "the string is closed: the rest is wrong"
        );
    }
}
