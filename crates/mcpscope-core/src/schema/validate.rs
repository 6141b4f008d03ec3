//! Validation mapped to fields: the `jsonschema` crate runs against the ORIGINAL schema
//! (no retriever: a remote `$ref` is a schema problem, never a download) and each error
//! lands on the field at its instance pointer; client-side checks add what the form
//! alone knows (a number field holding "abc", an integer holding 1.5, JSON that does not
//! parse).

use super::analysis::child_pointer;
use super::form::{Field, FieldKind, Form};
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
pub fn validator_for(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::options()
        .with_draft(draft_of(schema))
        .should_validate_formats(true)
        .build(schema)
        .map_err(|e| e.to_string())
}

impl Form {
    /// Client-side problems plus the validator's, each at the pointer of its field.
    pub fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        self.root.client_errors("", &mut errors);
        if let Some(validator) = &self.validator {
            let value = self.value();
            let mut seen: Vec<(String, String)> = Vec::new();
            for e in validator.iter_errors(&value) {
                let base = e.instance_path().as_str().to_owned();
                let pointers: Vec<String> = match e.kind() {
                    jsonschema::error::ValidationErrorKind::Required { property } => {
                        vec![child_pointer(&base, property.as_str().unwrap_or_default())]
                    }
                    jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } => {
                        unexpected.iter().map(|k| child_pointer(&base, k)).collect()
                    }
                    _ => vec![base],
                };
                let message = e.to_string();
                for pointer in pointers {
                    // The client already explained this field (e.g. "abc" is not a number).
                    if errors.iter().any(|c: &FieldError| c.pointer == pointer) {
                        continue;
                    }
                    let key = (pointer.clone(), message.clone());
                    if !seen.contains(&key) {
                        seen.push(key);
                        errors.push(FieldError {
                            pointer,
                            message: message.clone(),
                        });
                    }
                }
            }
        }
        errors
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
    use crate::schema::form::testing::*;
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
}
