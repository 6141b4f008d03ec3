//! Validation mapped to fields: the `jsonschema` crate runs against the ORIGINAL schema
//! (no retriever: a remote `$ref` is a schema problem, never a download) and each error
//! lands on the field at its instance pointer; client-side checks add what the form
//! alone knows (a number field holding "abc", an integer holding 1.5, JSON that does not
//! parse).

use super::analysis::{Shape, Variants, analyze, child_pointer};
use super::form::{Field, FieldKind, Form};
use jsonschema::ValidationError;
use jsonschema::error::ValidationErrorKind;
use serde_json::Value;
use std::fmt;

/// A problem with one field: `pointer` is a JSON pointer into `arguments` ("" = the root).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    pub pointer: String,
    pub message: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.pointer.is_empty() {
            write!(f, "(root): {}", self.message)
        } else {
            write!(f, "{}: {}", self.pointer, self.message)
        }
    }
}

/// The draft a schema declares with `$schema`; 2020-12 when absent or unknown.
pub fn draft_of(schema: &Value) -> jsonschema::Draft {
    use jsonschema::Draft;
    let s = schema.get("$schema").and_then(Value::as_str).unwrap_or("");
    if s.contains("draft-04") {
        Draft::Draft4
    } else if s.contains("draft-06") {
        Draft::Draft6
    } else if s.contains("draft-07") {
        Draft::Draft7
    } else if s.contains("2019-09") {
        Draft::Draft201909
    } else {
        Draft::Draft202012
    }
}

/// A validator for `schema` in its declared draft, formats asserted, no remote `$ref`s.
pub fn validator_for(schema: &Value) -> Result<jsonschema::Validator, jsonschema::ValidationError<'static>> {
    jsonschema::options()
        .with_draft(draft_of(schema))
        .should_validate_formats(true)
        .build(schema)
}

impl Form {
    /// Client-side problems plus the validator's, each at the pointer of its field (one
    /// message per field: the client's when it has one, else the validator's first).
    pub fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        self.root.client_errors("", &mut errors);
        if let Some(validator) = &self.validator {
            let value = self.value();
            let mut found = Vec::new();
            for e in validator.iter_errors(&value) {
                self.map_error(&e, &mut found);
            }
            for (pointer, message) in found {
                // The client already explained this field (e.g. "abc" is not a number).
                if !errors.iter().any(|c: &FieldError| c.pointer == pointer) {
                    errors.push(FieldError { pointer, message });
                }
            }
        }
        errors
    }

    /// A validator error as (pointer, message) pairs at the fields it is about: a missing
    /// or unexpected key at that key, a `oneOf`/`anyOf` the value fails at the chosen
    /// variant's own errors, a `oneOf` the value matches several times naming the variants.
    fn map_error(&self, e: &ValidationError<'_>, out: &mut Vec<(String, String)>) {
        let base = e.instance_path().as_str().to_owned();
        match e.kind() {
            ValidationErrorKind::Required { property } => {
                out.push((
                    child_pointer(&base, property.as_str().unwrap_or_default()),
                    e.to_string(),
                ));
            }
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                out.extend(unexpected.iter().map(|k| (child_pointer(&base, k), e.to_string())));
            }
            ValidationErrorKind::OneOfNotValid { context } | ValidationErrorKind::AnyOf { context } => {
                let keyword = if matches!(e.kind(), ValidationErrorKind::AnyOf { .. }) {
                    "anyOf"
                } else {
                    "oneOf"
                };
                match self.chosen_branch(&base, keyword, context) {
                    Some(branch) if !branch.is_empty() => {
                        for b in branch {
                            self.map_error(b, out);
                        }
                    }
                    _ => out.push((base, e.to_string())),
                }
            }
            ValidationErrorKind::OneOfMultipleValid { context } => {
                let message = self.ambiguity(&base, context).unwrap_or_else(|| e.to_string());
                out.push((base, message));
            }
            _ => out.push((base, e.to_string())),
        }
    }

    /// The chooser at `pointer` whose variants come from the union the validator judged
    /// (`context` has one entry per entry of that union).
    fn chooser_at<'a>(&'a self, pointer: &str, keyword: &str, branches: usize) -> Option<(&'a Field, Variants)> {
        let f = self.root.at(pointer)?;
        if !matches!(f.kind, FieldKind::Choice { .. }) {
            return None;
        }
        let Shape::Choice(v) = analyze(&f.template.schema, &f.template.root).shape else {
            return None;
        };
        (v.keyword == keyword && v.total == branches).then_some((f, v))
    }

    /// The validator's errors for the variant chosen at `pointer`.
    fn chosen_branch<'e>(
        &self,
        pointer: &str,
        keyword: &str,
        context: &'e [Vec<ValidationError<'static>>],
    ) -> Option<&'e [ValidationError<'static>]> {
        let (f, v) = self.chooser_at(pointer, keyword, context.len())?;
        let FieldKind::Choice { selected, .. } = &f.kind else {
            return None;
        };
        Some(&context[*v.origin.get(*selected)?])
    }

    /// "matches 2 variants ("with page_id", "with database_id") …" for a `oneOf` value
    /// that more than one variant accepts.
    fn ambiguity(&self, pointer: &str, context: &[Vec<ValidationError<'static>>]) -> Option<String> {
        let (_, v) = self.chooser_at(pointer, "oneOf", context.len())?;
        let names: Vec<String> = context
            .iter()
            .enumerate()
            .filter(|(_, errors)| errors.is_empty())
            .filter_map(|(i, _)| v.origin.iter().position(|o| *o == i))
            .map(|i| format!("\"{}\"", v.list[i].0))
            .collect();
        (names.len() > 1).then(|| {
            format!(
                "matches {} variants ({}) where oneOf allows exactly one: the server cannot tell which is meant",
                names.len(),
                names.join(", ")
            )
        })
    }
}

impl Field {
    /// Client-side problems of this field and its children.
    pub fn client_errors(&self, pointer: &str, out: &mut Vec<FieldError>) {
        if !self.set || (self.nullable && self.is_null) || self.pending {
            return;
        }
        let mut err = |m: String| {
            out.push(FieldError {
                pointer: pointer.to_owned(),
                message: m,
            })
        };
        match &self.kind {
            FieldKind::Number { text, .. } | FieldKind::Integer { text, .. } => {
                let t = text.trim();
                let integer = matches!(self.kind, FieldKind::Integer { .. });
                if t.is_empty() {
                    err(format!("enter {}", if integer { "an integer" } else { "a number" }));
                } else {
                    match t.parse::<f64>() {
                        Ok(x) if x.is_finite() => {
                            if integer && x.fract() != 0.0 {
                                err(format!("must be an integer: {t} has a fractional part"));
                            }
                        }
                        _ => err(format!("\"{t}\" is not a number")),
                    }
                }
            }
            FieldKind::Enum { selected: None, .. } => err("choose one of the values".into()),
            FieldKind::Json { text, .. } => {
                if text.trim().is_empty() {
                    err("enter a JSON value".into());
                } else if let Err(e) = serde_json::from_str::<Value>(text) {
                    err(format!("invalid JSON: {e}"));
                }
            }
            FieldKind::Array { items, .. } => {
                for (i, it) in items.iter().enumerate() {
                    it.client_errors(&format!("{pointer}/{i}"), out);
                }
            }
            FieldKind::Object { fields, extra, .. } => {
                for f in fields {
                    f.client_errors(&child_pointer(pointer, &f.name), out);
                }
                let mut seen: Vec<&str> = fields.iter().filter(|f| f.set).map(|f| f.name.as_str()).collect();
                for e in extra {
                    let p = child_pointer(pointer, &e.key);
                    if seen.contains(&e.key.as_str()) {
                        out.push(FieldError {
                            pointer: p.clone(),
                            message: format!("duplicate key \"{}\"", e.key),
                        });
                    }
                    seen.push(&e.key);
                    e.field.client_errors(&p, out);
                }
            }
            FieldKind::Map { entries, .. } => {
                let mut seen: Vec<&str> = Vec::new();
                for e in entries {
                    let p = child_pointer(pointer, &e.key);
                    if seen.contains(&e.key.as_str()) {
                        out.push(FieldError {
                            pointer: p.clone(),
                            message: format!("duplicate key \"{}\"", e.key),
                        });
                    }
                    seen.push(&e.key);
                    e.field.client_errors(&p, out);
                }
            }
            FieldKind::Choice { current, .. } => current.client_errors(pointer, out),
            FieldKind::Text { .. } | FieldKind::Bool(_) | FieldKind::Const(_) | FieldKind::Enum { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::form::testing::*;
    use serde_json::json;

    #[test]
    fn string_constraints_validated() {
        let mut f = form(json!({"type":"object","properties":{
            "code":{"type":"string","pattern":"^[A-Z]{3}$","minLength":3,"maxLength":3},
            "mail":{"type":"string","format":"email"}
        },"required":["code","mail"]}));
        set_text(&mut f, "/code", "abcd");
        set_text(&mut f, "/mail", "not an email");
        let e = f.validate();
        assert!(pointers(&e).contains(&"/code"), "{e:?}");
        assert!(pointers(&e).contains(&"/mail"), "{e:?}");
        f.fill_sample();
        assert!(f.validate().is_empty(), "{:?} {}", f.validate(), f.value());
    }

    #[test]
    fn numbers_and_integers() {
        let mut f = form(json!({"type":"object","properties":{
            "n":{"type":"number","minimum":0,"maximum":10},
            "i":{"type":"integer","exclusiveMinimum":0}
        },"required":["n","i"]}));
        set_text(&mut f, "/n", "2.5");
        set_text(&mut f, "/i", "3");
        assert_eq!(f.value(), json!({"n": 2.5, "i": 3}));
        assert!(f.validate().is_empty());
        set_text(&mut f, "/i", "1.5");
        let e = f.validate();
        assert_eq!(pointers(&e), vec!["/i"], "{e:?}");
        assert!(e[0].message.contains("integer"), "{e:?}");
        set_text(&mut f, "/n", "abc");
        let e = f.validate();
        assert!(
            e.iter()
                .any(|e| e.pointer == "/n" && e.message.contains("not a number")),
            "{e:?}"
        );
        // Only the client message for /n, not the validator's type error too.
        assert_eq!(e.iter().filter(|e| e.pointer == "/n").count(), 1, "{e:?}");
        set_text(&mut f, "/n", "11");
        set_text(&mut f, "/i", "0");
        let e = f.validate();
        assert!(pointers(&e).contains(&"/n") && pointers(&e).contains(&"/i"), "{e:?}");
        set_text(&mut f, "/n", "");
        assert!(
            f.validate()
                .iter()
                .any(|e| e.pointer == "/n" && e.message.contains("enter"))
        );
    }

    #[test]
    fn required_field_missing_from_loaded_json_stays_missing() {
        let s =
            json!({"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a","b"]});
        let mut f = form(s);
        f.set_value(&json!({"a": "x"}));
        assert_eq!(f.value(), json!({"a": "x"}));
        let e = f.validate();
        assert_eq!(pointers(&e), vec!["/b"], "required errors map to the missing field");
    }

    #[test]
    fn validate_pointer_mapping_deep() {
        let s = json!({"type":"object","properties":{
            "items":{"type":"array","items":{"type":"object","properties":{"qty":{"type":"integer","minimum":1},"a/b":{"type":"string","maxLength":1}}}}
        }});
        let mut f = form(s);
        f.set_value(&json!({"items": [{"qty": 1}, {"qty": 0, "a/b": "long"}]}));
        let e = f.validate();
        let mut p = pointers(&e);
        p.sort();
        assert_eq!(p, vec!["/items/1/a~1b", "/items/1/qty"], "{e:?}");
        assert!(f.field_at("/items/1/a~1b").is_some());
    }

    #[test]
    fn drafts_from_schema_keyword() {
        use jsonschema::Draft;
        assert_eq!(
            draft_of(&json!({"$schema":"http://json-schema.org/draft-07/schema#"})),
            Draft::Draft7
        );
        assert_eq!(
            draft_of(&json!({"$schema":"http://json-schema.org/draft-04/schema#"})),
            Draft::Draft4
        );
        assert_eq!(
            draft_of(&json!({"$schema":"https://json-schema.org/draft/2019-09/schema"})),
            Draft::Draft201909
        );
        assert_eq!(draft_of(&json!({})), Draft::Draft202012);
        // Draft-07 ignores siblings of $ref and 2020-12 does not: the validator follows the draft.
        let s7 = json!({"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"S":{"type":"string"}},
            "type":"object","properties":{"x":{"$ref":"#/definitions/S","maxLength":1}}});
        let mut f = form(s7);
        f.set_value(&json!({"x": "long"}));
        assert!(f.validate().is_empty(), "{:?}", f.validate());
        let s2020 = json!({"$defs":{"S":{"type":"string"}},
            "type":"object","properties":{"x":{"$ref":"#/$defs/S","maxLength":1}}});
        let mut f = form(s2020);
        f.set_value(&json!({"x": "long"}));
        assert_eq!(pointers(&f.validate()), vec!["/x"]);
    }

    #[test]
    fn a_value_matching_several_one_of_variants_is_reported_at_the_chooser() {
        let s = json!({"type": "object", "properties": {"parent": {"oneOf": [
            {"type": "object", "properties": {"page_id": {"type": "string"}}, "required": ["page_id"]},
            {"type": "object", "properties": {"database_id": {"type": "string"}}, "required": ["database_id"]},
            {"properties": {"type": {"const": "workspace"}}, "required": ["type"]}
        ]}}, "required": ["parent"]});
        let mut f = form(s);
        f.set_value(&json!({"parent": {"page_id": "p", "database_id": "d"}}));
        let e = f.validate();
        assert_eq!(pointers(&e), vec!["/parent"], "{e:?}");
        assert!(
            e[0].message
                .contains("matches 2 variants (\"with page_id\", \"with database_id\")"),
            "{}",
            e[0].message
        );
    }

    #[test]
    fn a_value_failing_the_chosen_variant_is_reported_at_its_fields() {
        let s = json!({"type": "object", "properties": {"shapes": {"type": "array", "items": {"oneOf": [
            {"type": "object", "title": "Circle", "properties": {"kind": {"const": "circle"}, "r": {"type": "number", "exclusiveMinimum": 0}},
                "required": ["kind", "r"]},
            {"type": "null"},
            {"type": "object", "title": "Rect", "properties": {"kind": {"const": "rect"}, "w": {"type": "number"}, "h": {"type": "number"}},
                "required": ["kind", "w", "h"]}
        ]}}}, "required": ["shapes"]});
        let mut f = form(s.clone());
        f.set_value(&json!({"shapes": [{"kind": "circle", "r": -1}, {"kind": "rect", "w": 1}]}));
        let e = f.validate();
        let mut p = pointers(&e);
        p.sort();
        assert_eq!(p, vec!["/shapes/0/r", "/shapes/1/h"], "{e:?}");
        // anyOf too.
        let any = serde_json::to_string(&s).unwrap().replace("oneOf", "anyOf");
        let mut g = form(serde_json::from_str(&any).unwrap());
        g.set_value(&json!({"shapes": [{"kind": "circle", "r": 0}]}));
        assert_eq!(pointers(&g.validate()), vec!["/shapes/0/r"]);
    }
}
