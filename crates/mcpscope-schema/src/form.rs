//! Forms from JSON Schema: a tool's `inputSchema` becomes a tree of [`Field`]s a person
//! fills in, and the form produces the `arguments` object.
//!
//! Pure logic, no egui (the drawing is `app::form_view`). What the schema asks for comes
//! from [`super::analysis`]; example values from [`super::sample`]; validation from
//! [`super::validate`]. This module holds the form's state (the field tree and the value
//! it produces); building a field from its schema is `build`, loading JSON into it
//! `load`, the editing operations `edit`. What the form cannot express becomes a
//! JSON editor for that field, never a panic.

use super::analysis::{Shape, analyze, unescape_token};
use serde_json::{Map, Value};
use std::fmt;
use std::sync::Arc;

pub use super::analysis::{Bounds, Template, child_pointer, value_label};
pub use super::validate::{FieldError, draft_of, validator_for};

mod build;
mod edit;
mod load;

/// A key/value row of a map (`additionalProperties`) or an object's extra keys.
#[derive(Clone, Debug)]
pub struct Entry {
    pub key: String,
    pub field: Field,
}

/// What a field edits.
#[derive(Clone, Debug)]
pub enum FieldKind {
    Text {
        text: String,
        /// Edited in a multi-line box (a toggle; see [`Field`] construction for the rule).
        multiline: bool,
        format: Option<String>,
        min_length: Option<u64>,
        max_length: Option<u64>,
        pattern: Option<String>,
    },
    /// Number as the text the person typed (so "abc" can be shown as an error).
    Number {
        text: String,
        bounds: Bounds,
    },
    Integer {
        text: String,
        bounds: Bounds,
    },
    Bool(bool),
    /// A drop-down; `selected: None` means nothing chosen yet (serialised as null).
    Enum {
        options: Vec<Value>,
        labels: Vec<String>,
        selected: Option<usize>,
    },
    /// Fixed value, shown but not editable.
    Const(Value),
    Array {
        items: Vec<Field>,
        item: Template,
        min_items: Option<u64>,
        max_items: Option<u64>,
    },
    /// Declared properties, plus any other keys (`extra`); `additional` is the template of
    /// extra values, `None` when `additionalProperties: false`.
    Object {
        fields: Vec<Field>,
        extra: Vec<Entry>,
        additional: Option<Template>,
    },
    /// An object without declared properties: free key/value rows.
    Map {
        entries: Vec<Entry>,
        value: Template,
    },
    /// `oneOf`/`anyOf`/type array: one variant at a time.
    Choice {
        labels: Vec<String>,
        variants: Vec<Template>,
        selected: usize,
        current: Box<Field>,
    },
    /// Raw JSON text (schema the form cannot express, any value, or a value that does not fit).
    Json {
        text: String,
        error: Option<String>,
    },
}

impl FieldKind {
    pub fn is_json(&self) -> bool {
        matches!(self, FieldKind::Json { .. })
    }
}

/// Why a field stays in JSON mode.
#[derive(Debug, thiserror::Error)]
pub enum FormModeError {
    /// The schema has no form (the note says why, when there is one).
    #[error("{}", .0.as_deref().unwrap_or("this schema has no form"))]
    NoForm(Option<String>),
    #[error("invalid JSON: {0}")]
    InvalidJson(serde_json::Error),
    #[error("this value does not fit the form")]
    DoesNotFit,
}

/// One input of the form.
#[derive(Clone, Debug)]
pub struct Field {
    /// Property name (the map key), "" for the root, the index for array rows.
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub required: bool,
    /// Whether the field is part of `arguments` (optional fields start unset; a required
    /// field is unset only when loaded JSON lacks it).
    pub set: bool,
    /// The editor holds the schema's `default` (cleared by [`Field::touch`]).
    pub is_default: bool,
    /// The field may be null (`anyOf [T, null]`, `type: [T, "null"]`, `nullable`).
    pub nullable: bool,
    pub is_null: bool,
    pub kind: FieldKind,
    /// Why this field is a JSON editor, when it is one for a reason.
    pub note: Option<String>,
    pub(super) schema: Map<String, Value>,
    pub(super) template: Template,
    /// The schema has a form (the field can leave JSON mode).
    pub(super) form_possible: bool,
    /// The person asked for JSON mode: loading values keeps it.
    pub(super) pinned_json: bool,
    /// Not expanded yet (recursive `$ref` or too deep); expanded when set.
    pub(super) pending: bool,
    /// Loaded a value the form could not hold (now JSON).
    pub(super) misfit: bool,
}

/// The form for one schema: owns the field tree and a compiled validator.
#[derive(Clone)]
pub struct Form {
    pub(super) schema: Value,
    pub(super) root: Field,
    pub(super) validator: Option<Arc<jsonschema::Validator>>,
    pub(super) problem: Option<String>,
}

impl fmt::Debug for Form {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Form")
            .field("root", &self.root)
            .field("has_validator", &self.validator.is_some())
            .field("problem", &self.problem)
            .finish()
    }
}

impl Form {
    /// Builds the form; never fails (what cannot be a form becomes JSON, see
    /// [`Form::schema_problem`]).
    pub fn from_schema(schema: &Value) -> Form {
        let root_doc = Arc::new(schema.clone());
        let tpl = Template {
            schema: schema.clone(),
            root: root_doc,
            stack: Vec::new(),
            depth: 0,
        };
        let mut root = Field::build(&tpl, "", true, true);
        let mut problems = Vec::new();
        if root.kind.is_json() && root.note.is_none() && !root.nullable {
            // `{}` / `true`: any arguments; key/value rows of any JSON.
            root.kind = FieldKind::Map {
                entries: Vec::new(),
                value: tpl.child(Value::Bool(true), &[]),
            };
            root.form_possible = true;
        }
        let objectish = matches!(root.kind, FieldKind::Object { .. } | FieldKind::Map { .. })
            || matches!(&root.kind, FieldKind::Choice { variants, .. } if variants.iter().all(|v| {
                let a = analyze(&v.schema, &v.root);
                matches!(a.shape, Shape::Object | Shape::Map | Shape::Any)
            }));
        if !objectish {
            let why = root.note.clone();
            root.kind = FieldKind::Json {
                text: String::new(),
                error: None,
            };
            root.form_possible = false;
            problems.push(match why {
                Some(w) => format!("inputSchema is not an object schema ({w}); editing as JSON"),
                None => "inputSchema is not an object schema; editing as JSON".to_owned(),
            });
            root.note = problems.last().cloned();
            root.kind = FieldKind::Json {
                text: "{}".into(),
                error: None,
            };
        }
        let validator = match validator_for(schema) {
            Ok(v) => Some(Arc::new(v)),
            Err(e) => {
                problems.push(format!("the schema cannot be compiled for validation: {e}"));
                None
            }
        };
        Form {
            schema: schema.clone(),
            root,
            validator,
            problem: (!problems.is_empty()).then(|| problems.join("; ")),
        }
    }

    /// The original schema.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// The `arguments` object now (unset optional fields omitted).
    pub fn value(&self) -> Value {
        self.root.current_value()
    }

    /// Loads raw JSON into the fields. Unknown keys become extra entries; values the form
    /// cannot represent put that field into JSON mode, so `value()` gives `v` back.
    pub fn set_value(&mut self, v: &Value) {
        self.root.load(v);
        self.root.set = true;
    }

    pub fn root(&self) -> &Field {
        &self.root
    }

    pub fn root_mut(&mut self) -> &mut Field {
        &mut self.root
    }

    /// The field at a JSON pointer into `arguments`.
    pub fn field_at(&self, pointer: &str) -> Option<&Field> {
        self.root.at(pointer)
    }

    pub fn field_at_mut(&mut self, pointer: &str) -> Option<&mut Field> {
        self.root.at_mut(pointer)
    }

    /// Includes every top-level optional field that holds its schema default, as
    /// elicitation clients should (SEP-1034: defaults apply to omitted fields).
    pub fn apply_defaults(&mut self) {
        if let FieldKind::Object { fields, .. } = &mut self.root.kind {
            for f in fields.iter_mut().filter(|f| f.is_default && !f.set) {
                f.set_enabled(true);
            }
        }
    }

    /// Why the form is (partly) a JSON editor or cannot validate, if so.
    pub fn schema_problem(&self) -> Option<&str> {
        self.problem.as_deref()
    }
}

pub(super) fn pretty(v: &Value) -> String {
    match v {
        Value::Object(m) if m.is_empty() => "{}".into(),
        Value::Array(a) if a.is_empty() => "[]".into(),
        Value::Object(_) | Value::Array(_) => serde_json::to_string_pretty(v).unwrap_or_default(),
        _ => v.to_string(),
    }
}

/// Text of a number field holding `v` (integers without ".0").
pub(super) fn number_value(text: &str) -> Value {
    let t = text.trim();
    if t.is_empty() {
        return Value::Null;
    }
    if let Ok(i) = t.parse::<i64>() {
        return Value::from(i);
    }
    if let Ok(u) = t.parse::<u64>() {
        return Value::from(u);
    }
    match t.parse::<f64>() {
        Ok(f) if f.is_finite() => serde_json::Number::from_f64(f).map_or(Value::String(text.to_owned()), Value::Number),
        _ => Value::String(text.to_owned()),
    }
}

pub(super) fn parses_as_number(text: &str) -> bool {
    matches!(text.trim().parse::<f64>(), Ok(f) if f.is_finite())
}

// ---------------------------------------------------------------------------------------
// Fields

impl Field {
    /// The flattened schema of this field (`$ref`s resolved, `allOf` merged).
    pub fn schema(&self) -> &Map<String, Value> {
        &self.schema
    }

    /// The title if any, else the name.
    pub fn label(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.name)
    }

    /// Not expanded yet (a recursive schema); [`Field::set_enabled`] expands it.
    pub fn is_pending(&self) -> bool {
        self.pending
    }

    /// Whether the form (rather than JSON) can edit this field's schema.
    pub fn can_use_form(&self) -> bool {
        self.form_possible
    }

    pub(super) fn expand(&mut self) {
        if self.pending {
            let fresh = Field::build(&self.template, &self.name, self.required, true);
            let set = self.set;
            *self = fresh;
            self.set = set;
        }
    }

    /// Sets or unsets the field (an optional field's checkbox).
    pub fn set_enabled(&mut self, on: bool) {
        if on {
            self.expand();
        }
        self.set = on;
    }

    /// Null or not (a nullable field's toggle).
    pub fn set_null(&mut self, null: bool) {
        if !null {
            self.expand();
        }
        self.is_null = null;
        self.set = true;
        self.is_default = false;
    }

    /// The person edited the value: it is set and no longer the default.
    pub fn touch(&mut self) {
        self.set = true;
        self.is_default = false;
    }

    /// The value this field contributes, `None` when unset.
    pub fn value(&self) -> Option<Value> {
        self.set.then(|| self.current_value())
    }

    /// The editor's value regardless of `set`.
    pub fn current_value(&self) -> Value {
        if self.nullable && self.is_null {
            return Value::Null;
        }
        match &self.kind {
            FieldKind::Text { text, .. } => Value::String(text.clone()),
            FieldKind::Number { text, .. } | FieldKind::Integer { text, .. } => number_value(text),
            FieldKind::Bool(b) => Value::Bool(*b),
            FieldKind::Enum { options, selected, .. } => {
                selected.and_then(|i| options.get(i).cloned()).unwrap_or(Value::Null)
            }
            FieldKind::Const(v) => v.clone(),
            FieldKind::Array { items, .. } => Value::Array(items.iter().map(Field::current_value).collect()),
            FieldKind::Object { fields, extra, .. } => {
                let mut m = Map::new();
                for f in fields {
                    if let Some(v) = f.value() {
                        m.insert(f.name.clone(), v);
                    }
                }
                for e in extra {
                    if let Some(v) = e.field.value() {
                        m.insert(e.key.clone(), v);
                    }
                }
                Value::Object(m)
            }
            FieldKind::Map { entries, .. } => {
                let mut m = Map::new();
                for e in entries {
                    if let Some(v) = e.field.value() {
                        m.insert(e.key.clone(), v);
                    }
                }
                Value::Object(m)
            }
            FieldKind::Choice { current, .. } => current.current_value(),
            FieldKind::Json { text, .. } => serde_json::from_str(text).unwrap_or(Value::Null),
        }
    }

    /// The field at a pointer relative to this one.
    pub fn at(&self, pointer: &str) -> Option<&Field> {
        if pointer.is_empty() {
            return Some(self);
        }
        let rest = pointer.strip_prefix('/')?;
        let (token, tail) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        let key = unescape_token(token);
        let child = match &self.kind {
            FieldKind::Array { items, .. } => items.get(key.parse::<usize>().ok()?)?,
            FieldKind::Object { fields, extra, .. } => match fields.iter().find(|f| f.name == key) {
                Some(f) => f,
                None => &extra.iter().find(|e| e.key == key)?.field,
            },
            FieldKind::Map { entries, .. } => &entries.iter().find(|e| e.key == key)?.field,
            FieldKind::Choice { current, .. } => return current.at(pointer),
            _ => return None,
        };
        child.at(tail)
    }

    pub fn at_mut(&mut self, pointer: &str) -> Option<&mut Field> {
        if pointer.is_empty() {
            return Some(self);
        }
        let rest = pointer.strip_prefix('/')?;
        let (token, tail) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        let key = unescape_token(token);
        let child = match &mut self.kind {
            FieldKind::Array { items, .. } => items.get_mut(key.parse::<usize>().ok()?)?,
            FieldKind::Object { fields, extra, .. } => match fields.iter_mut().find(|f| f.name == key) {
                Some(f) => f,
                None => &mut extra.iter_mut().find(|e| e.key == key)?.field,
            },
            FieldKind::Map { entries, .. } => &mut entries.iter_mut().find(|e| e.key == key)?.field,
            FieldKind::Choice { current, .. } => return current.at_mut(pointer),
            _ => return None,
        };
        child.at_mut(tail)
    }
}

impl Field {
    /// Whether everything below was loaded into the form as it is: no field fell back to
    /// JSON for a value that did not fit, and no closed object got extra keys.
    pub fn fits_cleanly(&self) -> bool {
        if self.misfit {
            return false;
        }
        match &self.kind {
            FieldKind::Array { items, .. } => items.iter().all(Field::fits_cleanly),
            FieldKind::Object {
                fields,
                extra,
                additional,
            } => {
                (additional.is_some() || extra.is_empty())
                    && fields.iter().all(Field::fits_cleanly)
                    && extra.iter().all(|e| e.field.fits_cleanly())
            }
            FieldKind::Map { entries, .. } => entries.iter().all(|e| e.field.fits_cleanly()),
            FieldKind::Choice { current, .. } => current.fits_cleanly(),
            _ => true,
        }
    }
}

/// Helpers for the unit tests of the schema modules.
#[cfg(test)]
pub(crate) mod testing {
    pub(crate) use super::{Field, FieldError, FieldKind, Form, validator_for};
    use serde_json::Value;

    pub(crate) fn form(s: Value) -> Form {
        Form::from_schema(&s)
    }

    pub(crate) fn pointers(errors: &[FieldError]) -> Vec<&str> {
        errors.iter().map(|e| e.pointer.as_str()).collect()
    }

    pub(crate) fn field<'a>(f: &'a Form, p: &str) -> &'a Field {
        f.field_at(p).unwrap_or_else(|| panic!("no field at {p}"))
    }

    pub(crate) fn set_text(f: &mut Form, p: &str, s: &str) {
        let fld = f.field_at_mut(p).unwrap();
        match &mut fld.kind {
            FieldKind::Text { text, .. } | FieldKind::Number { text, .. } | FieldKind::Integer { text, .. } => {
                *text = s.to_owned()
            }
            FieldKind::Json { text, .. } => *text = s.to_owned(),
            other => panic!("not text: {other:?}"),
        }
        fld.touch();
    }

    pub(crate) fn roundtrip(schema: Value, v: Value) {
        let mut f = form(schema);
        f.set_value(&v);
        assert_eq!(f.value(), v, "round trip");
        // And from a fresh form again, after a sample fill.
        let mut g = f.clone();
        g.fill_sample();
        g.set_value(&v);
        assert_eq!(g.value(), v, "round trip after fill");
    }

    pub(crate) fn assert_sample_valid(schema: Value) -> Value {
        let mut f = form(schema.clone());
        f.fill_sample();
        let errors = f.validate();
        assert!(errors.is_empty(), "{schema}\n{}\n{errors:?}", f.value());
        let v = validator_for(&schema).unwrap();
        assert!(v.is_valid(&f.value()), "{}", f.value());
        f.value()
    }
}

#[cfg(test)]
mod tests;
