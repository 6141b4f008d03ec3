//! Draws a [`Form`] (see `schema_form`): one row per field, nested fields indented.
//!
//! Every input is named for accessibility: a visible label with the field's name, and the
//! input `labelled_by` it (array rows are labelled `name[i]`). Controls without a visible
//! name carry one: "set <name>", "unset <name>", "null <name>", "move <name>[i] up",
//! "remove <name>[i]", "key <i> of <name>". Errors are drawn in red under their field (under the header of an
//! object, list or chooser, before its children); errors whose field is not on screen
//! (inside an unset object, say) are listed at the end.

use egui::{Color32, Id, RichText, TextEdit, Ui};
use mcpscope_core::schema::form::{Entry, Field, FieldError, FieldKind, Form, value_label};

/// Colour of validation messages.
pub const ERROR_COLOR: Color32 = Color32::from_rgb(230, 90, 90);
const WARN_COLOR: Color32 = Color32::from_rgb(0xff, 0xa6, 0x2b);
const TEXT_WIDTH: f32 = 240.0;
const NUMBER_WIDTH: f32 = 120.0;

/// Draws the form; `errors` (from [`Form::validate`]) are shown next to their fields.
/// Returns true when anything changed (the caller re-validates and refreshes its JSON view).
pub fn form_ui(ui: &mut Ui, form: &mut Form, errors: &[FieldError]) -> bool {
    let mut ctx = Ctx {
        errors,
        shown: Vec::new(),
    };
    if let Some(problem) = form.schema_problem() {
        ui.label(RichText::new(format!("⚠ {problem}")).color(WARN_COLOR));
    }
    let root = form.root_mut();
    let changed = ui
        .push_id("form-root", |ui| match root.kind {
            FieldKind::Object { .. } | FieldKind::Map { .. } => {
                ctx.shown.push(String::new());
                errors_ui(ui, "", &ctx);
                let mut changed = block_ui(ui, root, "", "arguments", None, &mut ctx);
                // Arguments the schema does not declare: rarely wanted, so
                // behind a disclosure rather than under every tool.
                if matches!(root.kind, FieldKind::Object { additional: Some(_), .. }) {
                    egui::CollapsingHeader::new("More arguments")
                        .id_salt("more-arguments")
                        .default_open(false)
                        .show(ui, |ui| {
                            ui.weak("The schema allows arguments it does not declare.");
                            if ui
                                .small_button("+ key")
                                .accessible_name("add key to arguments")
                                .on_hover_text("add an argument the schema does not declare")
                                .clicked()
                            {
                                let key = fresh_key(root);
                                root.add_entry(&key);
                                changed = true;
                            }
                        });
                }
                if matches!(&root.kind, FieldKind::Object { fields, extra, .. } if fields.is_empty() && extra.is_empty())
                {
                    ui.weak("(no arguments)");
                }
                changed
            }
            _ => field_ui(ui, root, "", "arguments", &mut ctx, &mut |_| false),
        })
        .inner;
    let unshown: Vec<&FieldError> = errors.iter().filter(|e| !ctx.shown.contains(&e.pointer)).collect();
    if !unshown.is_empty() {
        ui.add_space(4.0);
        for e in unshown {
            let place = if e.pointer.is_empty() { "arguments" } else { &e.pointer };
            ui.label(RichText::new(format!("⚠ {place}: {}", e.message)).color(ERROR_COLOR));
        }
    }
    changed
}

struct Ctx<'a> {
    errors: &'a [FieldError],
    /// Pointers whose errors were drawn next to a field.
    shown: Vec<String>,
}

fn errors_ui(ui: &mut Ui, pointer: &str, ctx: &Ctx<'_>) {
    for e in ctx.errors.iter().filter(|e| e.pointer == pointer) {
        ui.label(RichText::new(format!("⚠ {}", e.message)).color(ERROR_COLOR));
    }
}

fn is_scalar(kind: &FieldKind) -> bool {
    matches!(
        kind,
        FieldKind::Text { multiline: false, .. }
            | FieldKind::Number { .. }
            | FieldKind::Integer { .. }
            | FieldKind::Bool(_)
            | FieldKind::Enum { .. }
            | FieldKind::Const(_)
    )
}

/// One field: a header row (controls, label, inline editor, marks), then its description,
/// block editor (multi-line text, JSON, children) and errors. `row_controls` draws at the
/// start of the header row (array row buttons, map keys) and returns whether it changed
/// something.
fn field_ui(
    ui: &mut Ui,
    f: &mut Field,
    pointer: &str,
    label: &str,
    ctx: &mut Ctx<'_>,
    row_controls: &mut dyn FnMut(&mut Ui) -> bool,
) -> bool {
    let mut changed = false;
    let mut label_id = Id::NULL;
    ui.horizontal_wrapped(|ui| {
        changed |= row_controls(ui);
        let mut text = RichText::new(label);
        if !f.set {
            text = text.weak();
        }
        let l = ui.label(text);
        if let Some(t) = &f.title
            && squash(t) != squash(&f.name)
        {
            ui.weak(t);
        }
        label_id = l.id;
        if f.required {
            ui.label(RichText::new("*").color(ERROR_COLOR))
                .on_hover_text("required");
        }
        // The common path is one control a field: a value typed or picked
        // puts the field in the arguments. A list, object or choice left
        // out takes one click to put in; what is in and optional, one to
        // take out; null and the JSON editor wait behind "…".
        if !f.set && !edits_in_row(f) {
            let r = ui
                .small_button("+")
                .accessible_name(format!("set {label}"))
                .on_hover_text(if f.required {
                    "required, but missing from the arguments: add it"
                } else {
                    "optional: add it to the arguments"
                });
            if r.clicked() {
                f.set_enabled(true);
                changed = true;
            }
        }
        // The small marks go before the editor: it takes the rest of the
        // row, and anything after it would wrap onto a line of its own.
        if f.is_default {
            ui.weak("(default)");
        }
        if shows_value(f) {
            changed |= inline_ui(ui, f, label, label_id);
        }
        if f.set && !f.required {
            let r = ui
                .small_button("✖")
                .accessible_name(format!("unset {label}"))
                .on_hover_text("optional: leave it out of the arguments");
            if r.clicked() {
                f.set_enabled(false);
                changed = true;
            }
        }
        changed |= more_menu_ui(ui, f, label);
    });
    if let Some(d) = &f.description {
        ui.label(RichText::new(d).weak());
    }
    if let Some(n) = &f.note {
        ui.label(RichText::new(format!("⚠ {n}")).color(WARN_COLOR));
    }
    // Errors about a whole object, list or choice (a oneOf value matching two variants)
    // go under its header, next to the chooser, before its children.
    let composite = matches!(
        f.kind,
        FieldKind::Object { .. } | FieldKind::Map { .. } | FieldKind::Array { .. } | FieldKind::Choice { .. }
    );
    ctx.shown.push(pointer.to_owned());
    if composite {
        errors_ui(ui, pointer, ctx);
    }
    let open = f.set || is_scalar(&f.kind) || matches!(f.kind, FieldKind::Text { .. } | FieldKind::Json { .. });
    if open && shows_value(f) {
        changed |= block_ui(ui, f, pointer, label, Some(label_id), ctx);
    }
    if !composite {
        errors_ui(ui, pointer, ctx);
    }
    changed
}

/// Whether the field has a value editor to show (not null, not an unexpanded recursion).
fn shows_value(f: &Field) -> bool {
    !(f.is_pending() || (f.nullable && f.is_null))
}

/// Whether the field's value is edited in its header row (typing or
/// picking there puts the field in the arguments).
fn edits_in_row(f: &Field) -> bool {
    shows_value(f) && !matches!(f.kind, FieldKind::Object { .. } | FieldKind::Map { .. })
}

/// The field's "…" menu: what few need (send null, the JSON editor).
/// Drawn only when it holds something.
fn more_menu_ui(ui: &mut Ui, f: &mut Field, label: &str) -> bool {
    let json = shows_value(f) && (f.kind.is_json() && f.can_use_form() || !f.kind.is_json());
    let json = json && !matches!(f.kind, FieldKind::Const(_));
    if !f.nullable && !json {
        return false;
    }
    let mut changed = false;
    ui.menu_button("…", |ui| {
        if f.nullable {
            let mut null = f.is_null;
            if ui
                .checkbox(&mut null, "send null")
                .accessible_name(format!("null {label}"))
                .changed()
            {
                f.set_null(null);
                f.touch();
                changed = true;
                ui.close();
            }
        }
        if json {
            changed |= mode_toggle_ui(ui, f, label);
        }
    })
    .response
    .on_hover_text("more: null, edit as JSON");
    changed
}

/// Switches between the form and a JSON editor for one field.
fn mode_toggle_ui(ui: &mut Ui, f: &mut Field, label: &str) -> bool {
    if !shows_value(f) {
        return false;
    }
    if f.kind.is_json() {
        if f.can_use_form() {
            let r = ui
                .button("back to the form")
                .accessible_name(format!("edit {label} as a form"));
            if r.clicked() {
                if let Err(e) = f.to_form_mode() {
                    f.note = Some(e.to_string());
                } else {
                    f.note = None;
                }
                ui.close();
                return true;
            }
        }
        false
    } else if !matches!(f.kind, FieldKind::Const(_)) {
        let r = ui
            .button("edit as JSON")
            .accessible_name(format!("edit {label} as JSON"));
        if r.clicked() {
            f.to_json_mode();
            ui.close();
            return true;
        }
        false
    } else {
        false
    }
}

/// What the header row asked for that needs the whole field.
enum Deferred {
    Choose(usize),
    AddItem,
    AddKey,
}

/// The part of the editor that fits in the header row.
fn inline_ui(ui: &mut Ui, f: &mut Field, label: &str, label_id: Id) -> bool {
    let (changed, touched, deferred) = inline_kind_ui(ui, &mut f.kind, label, label_id);
    // Adding a row or a key, or choosing an alternative, puts the field in.
    match deferred {
        Some(Deferred::Choose(i)) => {
            f.choose(i);
            f.touch();
        }
        Some(Deferred::AddItem) => {
            f.add_item();
            f.touch();
        }
        Some(Deferred::AddKey) => {
            let key = fresh_key(f);
            f.add_entry(&key);
            f.touch();
        }
        None if touched => f.touch(),
        None => {}
    }
    changed || touched || deferred.is_some()
}

/// Returns (changed, touched: the value was edited, deferred action).
fn inline_kind_ui(ui: &mut Ui, kind: &mut FieldKind, label: &str, label_id: Id) -> (bool, bool, Option<Deferred>) {
    let mut changed = false;
    let mut touched = false;
    let mut deferred = None;
    match kind {
        FieldKind::Text {
            text,
            multiline,
            format,
            min_length,
            max_length,
            ..
        } => {
            if !*multiline {
                let mut hint = format.clone().unwrap_or_default();
                if min_length.is_some() || max_length.is_some() {
                    let lo = min_length.map_or(String::new(), |n| n.to_string());
                    let hi = max_length.map_or(String::new(), |n| n.to_string());
                    if !hint.is_empty() {
                        hint.push(' ');
                    }
                    hint.push_str(&format!("[{lo}..{hi} chars]"));
                }
                let r = ui
                    .add(TextEdit::singleline(text).desired_width(TEXT_WIDTH).hint_text(hint))
                    .labelled_by(label_id);
                touched |= r.changed();
            }
            let r = ui
                .selectable_label(*multiline, "☰")
                .accessible_name(format!("multi-line {label}"))
                .on_hover_text("multi-line editor");
            if r.clicked() {
                *multiline = !*multiline;
                changed = true;
            }
        }
        FieldKind::Number { text, bounds } | FieldKind::Integer { text, bounds } => {
            let hint = bounds.describe();
            let r = ui
                .add(TextEdit::singleline(text).desired_width(NUMBER_WIDTH).hint_text(hint))
                .labelled_by(label_id);
            touched |= r.changed();
        }
        FieldKind::Bool(b) => {
            let r = ui.checkbox(b, "").labelled_by(label_id);
            touched |= r.changed();
        }
        FieldKind::Enum { labels, selected, .. } => {
            let current = selected
                .and_then(|i| labels.get(i).cloned())
                .unwrap_or_else(|| "choose…".to_owned());
            let mut pick = None;
            egui::ComboBox::from_id_salt("enum")
                .selected_text(current)
                .show_ui(ui, |ui| {
                    for (i, l) in labels.iter().enumerate() {
                        if ui.selectable_label(*selected == Some(i), l).clicked() {
                            pick = Some(i);
                        }
                    }
                })
                .response
                .labelled_by(label_id);
            if let Some(i) = pick {
                *selected = Some(i);
                touched = true;
            }
        }
        FieldKind::Const(v) => {
            ui.label(RichText::new(value_label(v)).monospace())
                .on_hover_text("fixed by the schema (const)");
        }
        FieldKind::Choice {
            labels,
            selected,
            current,
            ..
        } => {
            let mut pick = None;
            egui::ComboBox::from_id_salt("variant")
                .selected_text(labels.get(*selected).cloned().unwrap_or_default())
                .show_ui(ui, |ui| {
                    for (i, l) in labels.iter().enumerate() {
                        if ui.selectable_label(*selected == i, l).clicked() {
                            pick = Some(i);
                        }
                    }
                })
                .response
                .labelled_by(label_id)
                .on_hover_text("which alternative (oneOf / anyOf)");
            if let Some(i) = pick {
                deferred = Some(Deferred::Choose(i));
            } else if !current.is_pending() {
                let (c, t, d) = inline_kind_ui(ui, &mut current.kind, label, label_id);
                changed |= c;
                touched |= t;
                if let Some(d) = d {
                    match d {
                        Deferred::Choose(i) => current.choose(i),
                        Deferred::AddItem => current.add_item(),
                        Deferred::AddKey => {
                            let key = fresh_key(current);
                            current.add_entry(&key);
                        }
                    }
                    touched = true;
                }
                if t {
                    current.touch();
                }
            }
        }
        FieldKind::Array { items, max_items, .. } => {
            ui.weak(format!("{} item(s)", items.len()));
            let full = max_items.is_some_and(|m| items.len() as u64 >= m);
            let r = ui
                .add_enabled(!full, egui::Button::new(format!("+ add {label}")).small())
                .on_hover_text("add a row");
            if r.clicked() {
                deferred = Some(Deferred::AddItem);
            }
        }
        FieldKind::Object {
            additional: Some(_), ..
        } => {
            let r = ui
                .small_button("+ key")
                .accessible_name(format!("add key to {label}"))
                .on_hover_text("add a key the schema does not declare (additionalProperties)");
            if r.clicked() {
                deferred = Some(Deferred::AddKey);
            }
        }
        FieldKind::Object { .. } | FieldKind::Map { .. } | FieldKind::Json { .. } => {}
    }
    (changed, touched, deferred)
}

/// The part of the editor under the header row.
fn block_ui(ui: &mut Ui, f: &mut Field, pointer: &str, label: &str, label_id: Option<Id>, ctx: &mut Ctx<'_>) -> bool {
    let mut changed = false;
    match &mut f.kind {
        FieldKind::Text {
            text, multiline: true, ..
        } => {
            let r = ui.add(TextEdit::multiline(text).desired_rows(3).desired_width(f32::INFINITY));
            let r = name(r, label_id, label);
            if r.changed() {
                f.touch();
                changed = true;
            }
        }
        FieldKind::Json { text, error } => {
            let rows = text.lines().count().clamp(1, 12);
            let r = ui.add(
                TextEdit::multiline(text)
                    .code_editor()
                    .desired_rows(rows)
                    .desired_width(f32::INFINITY)
                    .hint_text("JSON value"),
            );
            let r = name(r, label_id, label);
            if let Some(e) = error
                && !ctx.errors.iter().any(|x| x.pointer == pointer)
            {
                ui.label(RichText::new(format!("⚠ invalid JSON: {e}")).color(ERROR_COLOR));
            }
            if r.changed() {
                f.json_edited();
                changed = true;
            }
        }
        FieldKind::Choice { current, .. } => {
            if !is_scalar(&current.kind) && !current.is_pending() {
                if let Some(n) = &current.description {
                    ui.label(RichText::new(n).weak());
                }
                if let Some(n) = &current.note {
                    ui.label(RichText::new(format!("⚠ {n}")).color(WARN_COLOR));
                }
                let c = block_ui(ui, current, pointer, label, label_id, ctx);
                if c {
                    f.touch();
                }
                changed |= c;
            }
        }
        FieldKind::Object { fields, extra, .. } => {
            let c = indented(ui, pointer.is_empty(), |ui| {
                let mut changed = false;
                for field in fields.iter_mut() {
                    let p = mcpscope_core::schema::form::child_pointer(pointer, &field.name);
                    let l = field.name.clone();
                    changed |= ui
                        .push_id(("field", &l), |ui| field_ui(ui, field, &p, &l, ctx, &mut |_| false))
                        .inner;
                }
                changed |= entries_ui(ui, extra, pointer, label, ctx);
                changed
            });
            changed |= c;
            if changed {
                f.touch();
            }
        }
        FieldKind::Map { entries, .. } => {
            let c = indented(ui, pointer.is_empty(), |ui| {
                entries_ui(ui, entries, pointer, label, ctx)
            });
            changed |= c;
            if ui.small_button(format!("+ add {label} entry")).clicked() {
                let key = fresh_key(f);
                f.add_entry(&key);
                changed = true;
            }
            if changed {
                f.touch();
            }
        }
        FieldKind::Array { items, .. } => {
            let len = items.len();
            let mut action: Option<(usize, RowAction)> = None;
            let c = indented(ui, false, |ui| {
                let mut changed = false;
                for (i, item) in items.iter_mut().enumerate() {
                    let p = format!("{pointer}/{i}");
                    let l = format!("{label}[{i}]");
                    let mut controls = |ui: &mut Ui| {
                        if ui
                            .add_enabled(i > 0, egui::Button::new("⏶").small())
                            .accessible_name(format!("move {l} up"))
                            .clicked()
                        {
                            action = Some((i, RowAction::Up));
                        }
                        if ui
                            .add_enabled(i + 1 < len, egui::Button::new("⏷").small())
                            .accessible_name(format!("move {l} down"))
                            .clicked()
                        {
                            action = Some((i, RowAction::Down));
                        }
                        if ui.small_button("✖").accessible_name(format!("remove {l}")).clicked() {
                            action = Some((i, RowAction::Remove));
                        }
                        false
                    };
                    changed |= ui
                        .push_id(("row", i), |ui| field_ui(ui, item, &p, &l, ctx, &mut controls))
                        .inner;
                }
                changed
            });
            changed |= c;
            if let Some((i, a)) = action {
                match a {
                    RowAction::Up => f.move_item(i, i - 1),
                    RowAction::Down => f.move_item(i, i + 1),
                    RowAction::Remove => f.remove_item(i),
                }
                changed = true;
            } else if c {
                f.touch();
            }
        }
        FieldKind::Text { .. }
        | FieldKind::Number { .. }
        | FieldKind::Integer { .. }
        | FieldKind::Bool(_)
        | FieldKind::Enum { .. }
        | FieldKind::Const(_) => {}
    }
    changed
}

#[derive(Clone, Copy)]
enum RowAction {
    Up,
    Down,
    Remove,
}

fn name(r: egui::Response, label_id: Option<Id>, label: &str) -> egui::Response {
    match label_id {
        Some(id) => r.labelled_by(id),
        None => r.accessible_name(label),
    }
}

fn indented<R>(ui: &mut Ui, flat: bool, add: impl FnOnce(&mut Ui) -> R) -> R {
    if flat {
        add(ui)
    } else {
        ui.indent("children", add).inner
    }
}

/// Key/value rows of a map or an object's extra keys.
fn entries_ui(ui: &mut Ui, entries: &mut Vec<Entry>, pointer: &str, label: &str, ctx: &mut Ctx<'_>) -> bool {
    let mut changed = false;
    let mut remove = None;
    for (i, Entry { key, field }) in entries.iter_mut().enumerate() {
        let p = mcpscope_core::schema::form::child_pointer(pointer, key);
        let l = if key.is_empty() {
            "(empty key)".to_owned()
        } else {
            key.clone()
        };
        let mut controls = |ui: &mut Ui| {
            let mut c = false;
            if ui
                .small_button("✖")
                .accessible_name(format!("remove {l} from {label}"))
                .clicked()
            {
                remove = Some(i);
            }
            let r = ui
                .add(TextEdit::singleline(key).desired_width(120.0).hint_text("key"))
                .accessible_name(format!("key {i} of {label}"));
            c |= r.changed();
            ui.label("=");
            c
        };
        // Keyed by row index so that editing the key keeps the focus.
        changed |= ui
            .push_id(("entry", i), |ui| field_ui(ui, field, &p, &l, ctx, &mut controls))
            .inner;
    }
    if let Some(i) = remove {
        entries.remove(i);
        changed = true;
    }
    changed
}

/// Lower-case letters and digits only: "Zip Code" and "zip_code" are the same.
fn squash(s: &str) -> String {
    s.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// A key not used yet by the field's entries: key1, key2, …
fn fresh_key(f: &Field) -> String {
    let used: Vec<&str> = match &f.kind {
        FieldKind::Map { entries, .. } => entries.iter().map(|e| e.key.as_str()).collect(),
        FieldKind::Object { fields, extra, .. } => fields
            .iter()
            .map(|f| f.name.as_str())
            .chain(extra.iter().map(|e| e.key.as_str()))
            .collect(),
        _ => Vec::new(),
    };
    (1..)
        .map(|n| format!("key{n}"))
        .find(|k| !used.contains(&k.as_str()))
        .unwrap_or_default()
}
