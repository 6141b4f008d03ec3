//! Building a field from its schema: the field tree, the kind of editor each
//! schema asks for, and where a chooser starts.

use super::{Field, FieldKind};
use crate::analysis::{Analysis, MAX_DEPTH, MAX_REQUIRED_RECURSION, Shape, Template, analyze, multiline_rule};
use crate::analysis::{Bounds, value_label};
use serde_json::Value;

impl Field {
    pub(crate) fn build(tpl: &Template, name: &str, required: bool, force: bool) -> Field {
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
}
