//! Loading a JSON value into a field: the form takes what it can hold, and a
//! value it cannot becomes a JSON editor for that field, so the value comes
//! back unchanged.

use super::{Entry, Field, FieldKind, parses_as_number, pretty};
use crate::analysis::{Template, analyze};
use serde_json::{Map, Value};

impl Field {
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

    pub(crate) fn load_kind(&mut self, v: &Value) -> bool {
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
}

fn consts_match(schema: &Map<String, Value>, v: &Value) -> bool {
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

fn type_matches(schema: &Map<String, Value>, v: &Value) -> bool {
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
