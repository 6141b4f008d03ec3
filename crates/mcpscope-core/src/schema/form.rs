//! Forms from JSON Schema: a tool's `inputSchema` becomes a tree of [`Field`]s a person
//! fills in, and the form produces the `arguments` object.
//!
//! Pure logic, no egui (the drawing is `app::form_view`). What the schema asks for comes
//! from [`super::analysis`]; example values from [`super::sample`]; validation from
//! [`super::validate`]. This module holds the form's state: the field tree, loading JSON
//! into it, the editing operations, and the value it produces. What the form cannot
//! express becomes a JSON editor for that field, never a panic.

use super::analysis::{Analysis, MAX_DEPTH, MAX_REQUIRED_RECURSION, Shape, analyze, multiline_rule, unescape_token};
use serde_json::{Map, Value};
use std::fmt;
use std::sync::Arc;

pub use super::analysis::{Bounds, Template, child_pointer, value_label};
pub use super::validate::{FieldError, draft_of, validator_for};

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
    pub(super) fn build(tpl: &Template, name: &str, required: bool, force: bool) -> Field {
        let a = analyze(&tpl.schema, &tpl.root);
        let recursion = a
            .refs
            .iter()
            .map(|r| tpl.stack.iter().filter(|s| *s == r).count())
            .max()
            .unwrap_or(0);
        let mut stack = tpl.stack.clone();
        stack.extend(a.refs.iter().cloned());
        let str_of = |k: &str| a.merged.get(k).and_then(Value::as_str).map(str::to_owned);
        let mut f = Field {
            name: name.to_owned(),
            title: str_of("title"),
            description: str_of("description"),
            required,
            set: required,
            is_default: false,
            nullable: a.nullable,
            is_null: false,
            kind: FieldKind::Json {
                text: String::new(),
                error: None,
            },
            note: None,
            schema: a.merged.clone(),
            template: tpl.clone(),
            form_possible: !matches!(a.shape, Shape::Any | Shape::Unsupported(_)),
            pinned_json: false,
            pending: false,
            misfit: false,
        };
        let deep = tpl.depth > MAX_DEPTH;
        if !force && (recursion > 0 || deep) && !required {
            f.pending = true;
            return f;
        }
        if !force && (recursion > MAX_REQUIRED_RECURSION || deep) {
            f.form_possible = false;
            f.note = Some("recursive schema: edited as JSON".into());
            return f;
        }
        f.kind = f.fresh_kind(&a, &stack);
        f.start_at_example_variant();
        if let Shape::Unsupported(why) = &a.shape {
            f.note = Some(why.clone());
        }
        if let Some(d) = a.merged.get("default").cloned() {
            let mut probe = f.clone();
            probe.load(&d);
            if probe.current_value() == d && (f.kind.is_json() || probe.fits_cleanly()) {
                f = probe;
                f.note = None;
                f.is_default = true;
            }
            f.set = required;
        }
        f
    }

    /// A chooser whose schema gives examples starts at the variant its first example
    /// fits (the example is then what Fill example puts there).
    fn start_at_example_variant(&mut self) {
        if !matches!(self.kind, FieldKind::Choice { .. }) {
            return;
        }
        let example = match (self.schema.get("examples"), self.schema.get("example")) {
            (Some(Value::Array(e)), _) => e.first().cloned(),
            (_, e) => e.cloned(),
        };
        let Some(example) = example else { return };
        let mut probe = self.clone();
        if !probe.load_kind(&example) {
            return;
        }
        let FieldKind::Choice { selected: fits, .. } = probe.kind else {
            return;
        };
        let name = self.name.clone();
        if let FieldKind::Choice {
            variants,
            selected,
            current,
            ..
        } = &mut self.kind
            && *selected != fits
        {
            *selected = fits;
            **current = Field::build(&variants[fits], &name, true, false);
        }
    }

    pub(super) fn fresh_kind(&self, a: &Analysis, stack: &[String]) -> FieldKind {
        let m = &a.merged;
        let tpl = &self.template;
        let u64_of = |k: &str| m.get(k).and_then(Value::as_u64);
        match &a.shape {
            Shape::Any | Shape::Unsupported(_) => FieldKind::Json {
                text: String::new(),
                error: None,
            },
            Shape::Const(c) => FieldKind::Const(c.clone()),
            Shape::Enum(options) => FieldKind::Enum {
                labels: options.iter().map(value_label).collect(),
                options: options.clone(),
                selected: None,
            },
            Shape::String => FieldKind::Text {
                text: String::new(),
                multiline: multiline_rule(&self.name, m),
                format: m.get("format").and_then(Value::as_str).map(str::to_owned),
                min_length: u64_of("minLength"),
                max_length: u64_of("maxLength"),
                pattern: m.get("pattern").and_then(Value::as_str).map(str::to_owned),
            },
            Shape::Number => FieldKind::Number {
                text: String::new(),
                bounds: Bounds::from_schema(m),
            },
            Shape::Integer => FieldKind::Integer {
                text: String::new(),
                bounds: Bounds::from_schema(m),
            },
            Shape::Boolean => FieldKind::Bool(false),
            Shape::Array => FieldKind::Array {
                items: Vec::new(),
                item: tpl.child(m.get("items").cloned().unwrap_or(Value::Bool(true)), stack),
                min_items: u64_of("minItems"),
                max_items: u64_of("maxItems"),
            },
            Shape::Object => {
                let required: Vec<&str> = m
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let mut fields = Vec::new();
                if let Some(props) = m.get("properties").and_then(Value::as_object) {
                    for (k, s) in props {
                        let t = tpl.child(s.clone(), stack);
                        fields.push(Field::build(&t, k, required.contains(&k.as_str()), false));
                    }
                }
                // Required keys without a declared schema still get an input.
                for r in &required {
                    if !fields.iter().any(|f| f.name == *r) {
                        let t = tpl.child(Value::Bool(true), stack);
                        fields.push(Field::build(&t, r, true, false));
                    }
                }
                let additional = match m.get("additionalProperties") {
                    Some(Value::Bool(false)) => None,
                    Some(s) => Some(tpl.child(s.clone(), stack)),
                    None if m.get("unevaluatedProperties") == Some(&Value::Bool(false)) => None,
                    None => Some(tpl.child(Value::Bool(true), stack)),
                };
                FieldKind::Object {
                    fields,
                    extra: Vec::new(),
                    additional,
                }
            }
            Shape::Map => FieldKind::Map {
                entries: Vec::new(),
                value: tpl.child(
                    m.get("additionalProperties").cloned().unwrap_or(Value::Bool(true)),
                    stack,
                ),
            },
            Shape::Choice(variants) => {
                let templates: Vec<Template> = variants.list.iter().map(|(_, s)| tpl.child(s.clone(), stack)).collect();
                let current = Field::build(&templates[variants.preferred], &self.name, true, false);
                FieldKind::Choice {
                    labels: variants.list.iter().map(|(l, _)| l.clone()).collect(),
                    variants: templates,
                    selected: variants.preferred,
                    current: Box::new(current),
                }
            }
        }
    }

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

    /// Loads `v` into this field (marking it set). A value the form cannot hold puts the
    /// field into JSON mode, so `current_value()` gives `v` back.
    pub fn load(&mut self, v: &Value) {
        self.expand();
        self.set = true;
        self.is_default = false;
        if v.is_null() && self.nullable {
            self.is_null = true;
            return;
        }
        self.is_null = false;
        if self.pinned_json {
            self.kind = FieldKind::Json {
                text: pretty(v),
                error: None,
            };
            return;
        }
        if self.kind.is_json() && self.form_possible {
            // Back from JSON mode if the value now fits.
            let a = analyze(&self.template.schema, &self.template.root);
            let mut stack = self.template.stack.clone();
            stack.extend(a.refs.iter().cloned());
            self.kind = self.fresh_kind(&a, &stack);
            self.note = None;
            self.misfit = false;
        }
        self.misfit = false;
        if !self.load_kind(v) {
            self.kind = FieldKind::Json {
                text: pretty(v),
                error: None,
            };
            self.note = Some("this value does not fit the form: edited as JSON".into());
            self.misfit = true;
        }
    }

    pub(super) fn load_kind(&mut self, v: &Value) -> bool {
        match (&mut self.kind, v) {
            (FieldKind::Text { text, multiline, .. }, Value::String(s)) => {
                *text = s.clone();
                *multiline |= s.contains('\n');
                true
            }
            (FieldKind::Number { text, .. } | FieldKind::Integer { text, .. }, v) => match v {
                Value::Number(n) => {
                    *text = n.to_string();
                    true
                }
                Value::String(s) if !s.trim().is_empty() && !parses_as_number(s) => {
                    *text = s.clone();
                    true
                }
                Value::Null => {
                    text.clear();
                    true
                }
                _ => false,
            },
            (FieldKind::Bool(b), Value::Bool(x)) => {
                *b = *x;
                true
            }
            (FieldKind::Enum { options, selected, .. }, v) => {
                if let Some(i) = options.iter().position(|o| o == v) {
                    *selected = Some(i);
                    true
                } else if v.is_null() {
                    *selected = None;
                    true
                } else {
                    false
                }
            }
            (FieldKind::Const(c), v) => c == v,
            (FieldKind::Array { items, item, .. }, Value::Array(a)) => {
                *items = a
                    .iter()
                    .enumerate()
                    .map(|(i, x)| {
                        let mut f = Field::build(item, &i.to_string(), true, true);
                        f.load(x);
                        f
                    })
                    .collect();
                true
            }
            (
                FieldKind::Object {
                    fields,
                    extra,
                    additional,
                },
                Value::Object(m),
            ) => {
                for f in fields.iter_mut() {
                    match m.get(&f.name) {
                        Some(x) => f.load(x),
                        None => f.set = false,
                    }
                }
                let any = Template {
                    schema: Value::Bool(true),
                    root: self.template.root.clone(),
                    stack: Vec::new(),
                    depth: self.template.depth + 1,
                };
                *extra = m
                    .iter()
                    .filter(|(k, _)| !fields.iter().any(|f| f.name == **k))
                    .map(|(k, x)| {
                        let t = additional.as_ref().unwrap_or(&any);
                        let mut field = Field::build(t, k, true, true);
                        field.load(x);
                        Entry { key: k.clone(), field }
                    })
                    .collect();
                true
            }
            (FieldKind::Map { entries, value }, Value::Object(m)) => {
                *entries = m
                    .iter()
                    .map(|(k, x)| {
                        let mut field = Field::build(value, k, true, true);
                        field.load(x);
                        Entry { key: k.clone(), field }
                    })
                    .collect();
                true
            }
            (
                FieldKind::Choice {
                    variants,
                    selected,
                    current,
                    ..
                },
                v,
            ) => {
                let mut best: Option<(u32, usize, Field)> = None;
                for (i, t) in variants.iter().enumerate() {
                    let mut trial = Field::build(t, &self.name, true, true);
                    if !trial.load_kind(v) || (trial.kind.is_json() && trial.form_possible) || !trial.fits_cleanly() {
                        continue;
                    }
                    if trial.current_value() != *v {
                        continue;
                    }
                    let mut score = 0;
                    if consts_match(&trial.schema, v) {
                        score += 4;
                    }
                    let mut errs = Vec::new();
                    trial.client_errors("", &mut errs);
                    if errs.is_empty() {
                        score += 2;
                    }
                    if type_matches(&trial.schema, v) {
                        score += 1;
                    }
                    if best.as_ref().is_none_or(|(s, _, _)| score > *s) {
                        best = Some((score, i, trial));
                    }
                }
                match best {
                    Some((_, i, trial)) => {
                        *selected = i;
                        **current = trial;
                        true
                    }
                    None => false,
                }
            }
            (FieldKind::Json { text, error }, v) => {
                *text = pretty(v);
                *error = None;
                true
            }
            _ => false,
        }
    }

    // --- editing helpers for the view -------------------------------------------------

    /// Re-checks a JSON editor's text after an edit.
    pub fn json_edited(&mut self) {
        if let FieldKind::Json { text, error } = &mut self.kind {
            *error = if text.trim().is_empty() {
                None
            } else {
                serde_json::from_str::<Value>(text).err().map(|e| e.to_string())
            };
        }
        self.touch();
    }

    /// Switches to a JSON editor holding the current value.
    pub fn to_json_mode(&mut self) {
        let v = self.current_value();
        self.kind = FieldKind::Json {
            text: pretty(&v),
            error: None,
        };
        self.pinned_json = true;
    }

    /// Back to the form from JSON mode; fails (and stays JSON) when the text does not
    /// parse or the value does not fit the form.
    pub fn to_form_mode(&mut self) -> Result<(), FormModeError> {
        if !self.form_possible {
            return Err(FormModeError::NoForm(self.note.clone()));
        }
        let FieldKind::Json { text, .. } = &self.kind else {
            return Ok(());
        };
        let v: Value = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(text).map_err(FormModeError::InvalidJson)?
        };
        self.pinned_json = false;
        let saved = self.clone();
        let set = self.set;
        self.load(&v);
        self.set = set;
        if self.kind.is_json() {
            *self = saved;
            self.pinned_json = true;
            return Err(FormModeError::DoesNotFit);
        }
        Ok(())
    }

    /// Whether the person pinned this field to JSON mode.
    pub fn is_json_pinned(&self) -> bool {
        self.pinned_json
    }

    /// Adds an array row (built from the item schema, its default if any).
    pub fn add_item(&mut self) {
        if let FieldKind::Array { items, item, .. } = &mut self.kind {
            let f = Field::build(item, &items.len().to_string(), true, true);
            items.push(f);
        }
        self.touch();
    }

    pub fn remove_item(&mut self, i: usize) {
        if let FieldKind::Array { items, .. } = &mut self.kind
            && i < items.len()
        {
            items.remove(i);
            renumber(items);
        }
        self.touch();
    }

    /// Moves array row `from` to `to`.
    pub fn move_item(&mut self, from: usize, to: usize) {
        if let FieldKind::Array { items, .. } = &mut self.kind
            && from < items.len()
            && to < items.len()
        {
            let f = items.remove(from);
            items.insert(to, f);
            renumber(items);
        }
        self.touch();
    }

    /// Adds a key/value row to a map, or an extra key to an object that allows them.
    /// Returns false when the object allows no extra keys.
    pub fn add_entry(&mut self, key: &str) -> bool {
        let (entries, tpl) = match &mut self.kind {
            FieldKind::Map { entries, value } => (entries, value.clone()),
            FieldKind::Object {
                extra,
                additional: Some(t),
                ..
            } => (extra, t.clone()),
            _ => return false,
        };
        let field = Field::build(&tpl, key, true, true);
        entries.push(Entry {
            key: key.to_owned(),
            field,
        });
        self.touch();
        true
    }

    pub fn remove_entry(&mut self, i: usize) {
        if let FieldKind::Map { entries, .. } | FieldKind::Object { extra: entries, .. } = &mut self.kind
            && i < entries.len()
        {
            entries.remove(i);
        }
        self.touch();
    }

    /// Picks variant `i` of a chooser. The new variant starts from its own fields: an
    /// object keeps the old values of the properties it declares and nothing else (the
    /// old variant's keys would make the value match the old variant too); any other
    /// variant keeps the old value when it fits as it is.
    pub fn choose(&mut self, i: usize) {
        let name = self.name.clone();
        if let FieldKind::Choice {
            variants,
            selected,
            current,
            ..
        } = &mut self.kind
            && i < variants.len()
            && i != *selected
        {
            let old = current.current_value();
            let mut fresh = Field::build(&variants[i], &name, true, true);
            let fits = |f: &Field, v: &Value| f.fits_cleanly() && f.current_value() == *v;
            match (&mut fresh.kind, &old) {
                (_, Value::Null) => {}
                (FieldKind::Object { fields, .. }, Value::Object(m)) => {
                    for f in fields.iter_mut() {
                        if let Some(x) = m.get(&f.name) {
                            let mut probe = f.clone();
                            probe.load(x);
                            if fits(&probe, x) {
                                *f = probe;
                            }
                        }
                    }
                }
                (FieldKind::Object { .. }, _) => {}
                _ => {
                    let mut probe = fresh.clone();
                    probe.load(&old);
                    if fits(&probe, &old) {
                        fresh = probe;
                    }
                }
            }
            *selected = i;
            **current = fresh;
        }
        self.touch();
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

pub(super) fn renumber(items: &mut [Field]) {
    for (i, f) in items.iter_mut().enumerate() {
        f.name = i.to_string();
    }
}

pub(super) fn consts_match(schema: &Map<String, Value>, v: &Value) -> bool {
    let (Some(props), Some(obj)) = (schema.get("properties").and_then(Value::as_object), v.as_object()) else {
        return schema.get("const").is_some_and(|c| c == v);
    };
    let mut any = false;
    for (k, p) in props {
        if let Some(c) = p.get("const") {
            if obj.get(k) != Some(c) {
                return false;
            }
            any = true;
        }
    }
    any
}

pub(super) fn type_matches(schema: &Map<String, Value>, v: &Value) -> bool {
    let t = schema.get("type").and_then(Value::as_str).unwrap_or("");
    matches!(
        (t, v),
        ("string", Value::String(_))
            | ("boolean", Value::Bool(_))
            | ("object", Value::Object(_))
            | ("array", Value::Array(_))
            | ("null", Value::Null)
            | ("number", Value::Number(_))
    ) || (t == "integer" && v.as_f64().is_some_and(|x| x.fract() == 0.0))
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
mod tests {
    use super::testing::*;
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_and_required_optional() {
        let mut f = form(json!({
            "type": "object",
            "properties": {"name": {"type": "string", "title": "Name", "description": "who"}, "nick": {"type": "string"}},
            "required": ["name"]
        }));
        assert!(f.schema_problem().is_none());
        assert_eq!(f.value(), json!({"name": ""}));
        let name = field(&f, "/name");
        assert!(name.required && name.set);
        assert_eq!(name.title.as_deref(), Some("Name"));
        assert_eq!(name.description.as_deref(), Some("who"));
        let nick = field(&f, "/nick");
        assert!(!nick.required && !nick.set);
        // Set but empty is not the same as unset.
        f.field_at_mut("/nick").unwrap().set_enabled(true);
        assert_eq!(f.value(), json!({"name": "", "nick": ""}));
        f.field_at_mut("/nick").unwrap().set_enabled(false);
        set_text(&mut f, "/name", "Ada");
        assert_eq!(f.value(), json!({"name": "Ada"}));
        assert!(f.validate().is_empty());
    }

    #[test]
    fn booleans_enums_consts() {
        let mut f = form(json!({"type":"object","properties":{
            "b":{"type":"boolean"},
            "color":{"type":"string","enum":["red","green"]},
            "mixed":{"enum":[1,"two",true,null]},
            "kind":{"const":"fixed"}
        },"required":["b","color","kind"]}));
        assert_eq!(f.value(), json!({"b": false, "color": null, "kind": "fixed"}));
        assert!(
            f.validate()
                .iter()
                .any(|e| e.pointer == "/color" && e.message.contains("choose"))
        );
        if let FieldKind::Enum { selected, .. } = &mut f.field_at_mut("/color").unwrap().kind {
            *selected = Some(1);
        }
        assert_eq!(f.value(), json!({"b": false, "color": "green", "kind": "fixed"}));
        let mixed = field(&f, "/mixed");
        assert!(mixed.nullable, "null in an enum makes it nullable");
        match &mixed.kind {
            FieldKind::Enum { labels, .. } => assert_eq!(labels, &["1", "two", "true"]),
            k => panic!("{k:?}"),
        }
        assert!(f.validate().is_empty());
        roundtrip(
            f.schema().clone(),
            json!({"b": true, "color": "red", "mixed": "two", "kind": "fixed"}),
        );
        roundtrip(
            f.schema().clone(),
            json!({"b": true, "color": "red", "mixed": null, "kind": "fixed"}),
        );
    }

    #[test]
    fn defaults_prefilled_marked_and_optional_unset() {
        let f = form(json!({"type":"object","properties":{
            "count":{"type":"number","default":3},
            "mode":{"type":"string","enum":["a","b"],"default":"b"},
            "flag":{"type":"boolean","default":true},
            "name":{"type":"string","default":"x"}
        },"required":["name"]}));
        let c = field(&f, "/count");
        assert!(c.is_default && !c.set);
        assert!(matches!(&c.kind, FieldKind::Number { text, .. } if text == "3"));
        assert!(matches!(
            field(&f, "/mode").kind,
            FieldKind::Enum { selected: Some(1), .. }
        ));
        assert!(matches!(field(&f, "/flag").kind, FieldKind::Bool(true)));
        let n = field(&f, "/name");
        assert!(n.is_default && n.set);
        assert_eq!(f.value(), json!({"name": "x"}));
        let mut g = f.clone();
        g.field_at_mut("/count").unwrap().set_enabled(true);
        assert_eq!(g.value(), json!({"count": 3, "name": "x"}));
        g.field_at_mut("/count").unwrap().touch();
        assert!(!g.field_at("/count").unwrap().is_default);
    }

    #[test]
    fn default_that_does_not_fit_is_ignored() {
        let f = form(json!({"type":"object","properties":{"n":{"type":"integer","default":"many"}}}));
        // "many" would load as number text; it is kept as the editor text but flagged.
        let n = field(&f, "/n");
        assert!(!n.kind.is_json());
        let f = form(json!({"type":"object","properties":{"s":{"type":"string","default":5}}}));
        let s = field(&f, "/s");
        assert!(!s.is_default && !s.kind.is_json(), "{s:?}");
    }

    #[test]
    fn arrays_add_remove_move() {
        let mut f = form(json!({"type":"object","properties":{
            "tags":{"type":"array","items":{"type":"string"},"minItems":1}
        },"required":["tags"]}));
        assert_eq!(f.value(), json!({"tags": []}));
        assert!(f.validate().iter().any(|e| e.pointer == "/tags"));
        let tags = f.field_at_mut("/tags").unwrap();
        tags.add_item();
        tags.add_item();
        tags.add_item();
        set_text(&mut f, "/tags/0", "a");
        set_text(&mut f, "/tags/1", "b");
        set_text(&mut f, "/tags/2", "c");
        assert_eq!(f.value(), json!({"tags": ["a", "b", "c"]}));
        let tags = f.field_at_mut("/tags").unwrap();
        tags.move_item(2, 0);
        assert_eq!(f.value(), json!({"tags": ["c", "a", "b"]}));
        let tags = f.field_at_mut("/tags").unwrap();
        tags.move_item(0, 1);
        tags.remove_item(2);
        assert_eq!(f.value(), json!({"tags": ["a", "c"]}));
        assert_eq!(f.field_at("/tags/1").unwrap().name, "1");
        assert!(f.validate().is_empty());
    }

    #[test]
    fn arrays_of_objects_and_nested_arrays() {
        let s = json!({"type":"object","properties":{
            "rows":{"type":"array","items":{"type":"object","properties":{
                "id":{"type":"integer"},"cells":{"type":"array","items":{"type":"array","items":{"type":"number"}}}
            },"required":["id"]}}
        },"required":["rows"]});
        let mut f = form(s.clone());
        f.field_at_mut("/rows").unwrap().add_item();
        set_text(&mut f, "/rows/0/id", "7");
        assert_eq!(f.value(), json!({"rows": [{"id": 7}]}));
        roundtrip(
            s.clone(),
            json!({"rows": [{"id": 1, "cells": [[1, 2.5], []]}, {"id": 2}]}),
        );
        let v = assert_sample_valid(s);
        assert_eq!(v["rows"][0]["id"], json!(1));
    }

    #[test]
    fn nested_object() {
        let s = json!({"type":"object","properties":{
            "customer":{"type":"object","properties":{
                "name":{"type":"string"},
                "address":{"type":"object","properties":{"city":{"type":"string"},"zip":{"type":"string"}},"required":["city"]}
            },"required":["name","address"]}
        },"required":["customer"]});
        let mut f = form(s.clone());
        assert_eq!(f.value(), json!({"customer": {"name": "", "address": {"city": ""}}}));
        set_text(&mut f, "/customer/address/city", "Oslo");
        assert_eq!(f.value()["customer"]["address"]["city"], "Oslo");
        roundtrip(
            s.clone(),
            json!({"customer": {"name": "A", "address": {"city": "B", "zip": "1"}}}),
        );
        assert_sample_valid(s);
    }

    #[test]
    fn additional_properties_map() {
        let s = json!({"type":"object","properties":{
            "env":{"type":"object","additionalProperties":{"type":"string"}},
            "weights":{"type":"object","additionalProperties":{"type":"integer","minimum":0}}
        },"required":["env"]});
        let mut f = form(s.clone());
        assert!(matches!(field(&f, "/env").kind, FieldKind::Map { .. }));
        let env = f.field_at_mut("/env").unwrap();
        assert!(env.add_entry("HOME"));
        assert!(env.add_entry("PATH"));
        set_text(&mut f, "/env/HOME", "/root");
        set_text(&mut f, "/env/PATH", "/bin");
        assert_eq!(f.value(), json!({"env": {"HOME": "/root", "PATH": "/bin"}}));
        f.field_at_mut("/env").unwrap().remove_entry(0);
        assert_eq!(f.value(), json!({"env": {"PATH": "/bin"}}));
        // Duplicate keys are reported.
        let env = f.field_at_mut("/env").unwrap();
        env.add_entry("PATH");
        assert!(f.validate().iter().any(|e| e.message.contains("duplicate")));
        roundtrip(s.clone(), json!({"env": {"a": "1"}, "weights": {"x": 1, "y": 2}}));
        let mut g = form(s);
        g.set_value(&json!({"env": {}, "weights": {"x": -1}}));
        assert_eq!(pointers(&g.validate()), vec!["/weights/x"]);
    }

    #[test]
    fn object_extra_keys_kept_and_flagged_when_closed() {
        let s = json!({"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
            "properties":{"a":{"type":"string"}},"additionalProperties":false});
        let mut f = form(s.clone());
        assert!(!f.root_mut().add_entry("nope"), "closed objects take no extra keys");
        let v = json!({"a": "x", "zzz": [1, {"b": 2}]});
        f.set_value(&v);
        assert_eq!(f.value(), v, "unknown keys are not lost");
        assert_eq!(pointers(&f.validate()), vec!["/zzz"]);
        // Open objects accept extra keys as rows.
        let mut g = form(json!({"type":"object","properties":{"a":{"type":"string"}}}));
        assert!(g.root_mut().add_entry("extra"));
        set_text(&mut g, "/extra", "5");
        assert_eq!(g.value(), json!({"extra": 5}));
    }

    #[test]
    fn value_that_does_not_fit_goes_json_and_back() {
        let s = json!({"type":"object","properties":{"n":{"type":"integer"},"s":{"type":"string"}}});
        let mut f = form(s);
        let v = json!({"n": {"weird": true}, "s": 12});
        f.set_value(&v);
        assert_eq!(f.value(), v);
        assert!(field(&f, "/n").kind.is_json());
        assert!(field(&f, "/n").note.is_some());
        assert!(!f.validate().is_empty());
        // Loading a fitting value returns the field to the form.
        f.set_value(&json!({"n": 2, "s": "x"}));
        assert!(matches!(field(&f, "/n").kind, FieldKind::Integer { .. }));
        assert!(matches!(field(&f, "/s").kind, FieldKind::Text { .. }));
        // Explicit JSON mode and back.
        let n = f.field_at_mut("/n").unwrap();
        n.to_json_mode();
        assert!(n.is_json_pinned());
        if let FieldKind::Json { text, .. } = &mut n.kind {
            *text = "7".into();
        }
        n.to_form_mode().unwrap();
        assert_eq!(f.value(), json!({"n": 7, "s": "x"}));
        let n = f.field_at_mut("/n").unwrap();
        n.to_json_mode();
        if let FieldKind::Json { text, .. } = &mut n.kind {
            *text = "\"seven\"x".into();
        }
        assert!(n.to_form_mode().is_err());
        assert!(n.kind.is_json());
    }

    #[test]
    fn number_text_round_trips() {
        let s = json!({"type":"object","properties":{"n":{"type":"number"},"i":{"type":"integer"}}});
        for v in [
            json!({"n": 1.5, "i": 3}),
            json!({"n": -0.25, "i": -9007199254740991_i64}),
            json!({"n": 18446744073709551615_u64}),
            json!({"n": 1e300}),
            json!({"n": "abc"}),
            json!({"n": null, "i": 1.5}),
        ] {
            roundtrip(s.clone(), v);
        }
        // A numeric string cannot be told apart from a number in a number box: JSON.
        let mut f = form(s);
        f.set_value(&json!({"n": "5"}));
        assert_eq!(f.value(), json!({"n": "5"}));
        assert!(field(&f, "/n").kind.is_json());
    }

    #[test]
    fn choose_keeps_value_when_it_fits() {
        let s = json!({"type":"object","properties":{"x":{"anyOf":[{"type":"string","maxLength":3},{"type":"string","title":"long"}]}}});
        let mut f = form(s);
        let x = f.field_at_mut("/x").unwrap();
        x.set_enabled(true);
        if let FieldKind::Choice { current, .. } = &mut x.kind
            && let FieldKind::Text { text, .. } = &mut current.kind
        {
            *text = "hello".into();
        }
        x.choose(1);
        assert_eq!(f.value(), json!({"x": "hello"}));
    }

    #[test]
    fn one_of_chooser_switches_variants() {
        let s = json!({"type":"object","properties":{"shape":{"oneOf":[
            {"type":"object","properties":{"kind":{"const":"circle"},"r":{"type":"number"}},"required":["kind","r"]},
            {"type":"object","properties":{"kind":{"const":"rect"},"w":{"type":"number"},"h":{"type":"number"}},"required":["kind","w","h"]}
        ]}},"required":["shape"]});
        let mut f = form(s.clone());
        match &field(&f, "/shape").kind {
            FieldKind::Choice { labels, selected, .. } => {
                assert_eq!(labels, &["circle", "rect"]);
                assert_eq!(*selected, 0);
            }
            k => panic!("{k:?}"),
        }
        assert_eq!(f.value()["shape"]["kind"], "circle");
        f.field_at_mut("/shape").unwrap().choose(1);
        assert_eq!(f.value(), json!({"shape": {"kind": "rect", "w": null, "h": null}}));
        set_text(&mut f, "/shape/w", "2");
        set_text(&mut f, "/shape/h", "3");
        assert!(f.validate().is_empty(), "{:?}", f.validate());
        // Loading picks the variant by its const discriminator.
        f.set_value(&json!({"shape": {"kind": "circle", "r": 1}}));
        assert!(matches!(
            field(&f, "/shape").kind,
            FieldKind::Choice { selected: 0, .. }
        ));
        roundtrip(s.clone(), json!({"shape": {"kind": "rect", "w": 1, "h": 2}}));
        assert_sample_valid(s);
    }

    #[test]
    fn apply_defaults_sets_defaulted_optionals_only() {
        let mut form = Form::from_schema(&json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "pet": {"type": "string", "enum": ["cat", "dog"], "default": "dog"},
                "n": {"type": "integer", "default": 3},
                "note": {"type": "string"}
            },
            "required": ["name"]
        }));
        assert_eq!(form.value(), json!({"name": ""}));
        form.apply_defaults();
        assert_eq!(form.value(), json!({"name": "", "pet": "dog", "n": 3}));
    }

    /// Issue #17.2: Notion's `parent`, a oneOf of open objects.
    fn notion_parent() -> Value {
        json!({"type": "object", "properties": {"parent": {"oneOf": [
            {"type": "object", "properties": {"page_id": {"type": "string"}, "note": {"type": "string"}},
                "required": ["page_id"], "additionalProperties": true},
            {"type": "object", "properties": {"database_id": {"type": "string"}, "note": {"type": "string"}},
                "required": ["database_id"], "additionalProperties": true},
            {"properties": {"type": {"const": "workspace"}}, "required": ["type"]}
        ]}}, "required": ["parent"]})
    }

    #[test]
    fn switching_variants_keeps_only_what_the_new_variant_declares() {
        let mut f = form(notion_parent());
        assert_eq!(f.value(), json!({"parent": {"page_id": ""}}));
        set_text(&mut f, "/parent/page_id", "p1");
        let note = f.field_at_mut("/parent/note").unwrap();
        note.set_enabled(true);
        set_text(&mut f, "/parent/note", "shared");
        f.field_at_mut("/parent").unwrap().choose(1);
        assert_eq!(
            f.value(),
            json!({"parent": {"database_id": "", "note": "shared"}}),
            "page_id is not carried over, the note both declare is"
        );
        set_text(&mut f, "/parent/database_id", "d1");
        assert!(f.validate().is_empty(), "{:?}", f.validate());
        f.field_at_mut("/parent").unwrap().choose(2);
        assert_eq!(f.value(), json!({"parent": {"type": "workspace"}}));
        assert!(f.validate().is_empty(), "{:?}", f.validate());
        f.field_at_mut("/parent").unwrap().choose(0);
        assert_eq!(f.value(), json!({"parent": {"page_id": ""}}));
        // Extra keys loaded from JSON stay until the person switches.
        let both = json!({"parent": {"page_id": "p", "database_id": "d"}});
        f.set_value(&both);
        assert_eq!(f.value(), both);
        f.field_at_mut("/parent").unwrap().choose(1);
        assert_eq!(f.value(), json!({"parent": {"database_id": "d"}}));
    }
}
