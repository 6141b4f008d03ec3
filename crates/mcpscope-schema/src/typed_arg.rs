//! `key=value` arguments typed by a tool's `inputSchema` (the CLI's
//! `--tool-arg`): a string parameter gets the text as it is, a number or
//! boolean parameter gets the parsed value or a clear refusal before anything
//! is sent, objects and arrays are JSON.

use serde_json::Value;

/// The JSON types a parameter accepts, as its schema says (`type`, or the
/// `type`s of its `anyOf`/`oneOf` branches; `enum`/`const` values count by
/// their own type). Empty: the schema does not say.
pub fn accepted_types(prop: &Value) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    let mut add = |t: &str| {
        if let Some(known) = TYPES.iter().find(|k| **k == t)
            && !out.contains(known)
        {
            out.push(*known);
        }
    };
    match prop.get("type") {
        Some(Value::String(t)) => add(t),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).for_each(&mut add),
        _ => {
            for key in ["anyOf", "oneOf"] {
                for branch in prop.get(key).and_then(Value::as_array).into_iter().flatten() {
                    for t in accepted_types(branch) {
                        add(t);
                    }
                }
            }
            let values = prop
                .get("enum")
                .and_then(Value::as_array)
                .cloned()
                .or_else(|| prop.get("const").map(|c| vec![c.clone()]));
            for v in values.into_iter().flatten() {
                add(type_of(&v));
            }
        }
    }
    out
}

const TYPES: [&str; 7] = ["null", "boolean", "integer", "number", "object", "array", "string"];

fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A value with no schema to go by: JSON where it parses, else the text.
pub fn untyped(raw: &str) -> Value {
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
}

/// The value of parameter `name` given as `raw` on the command line, typed by
/// the tool's `input_schema`. `Err` says why the text does not fit (naming the
/// parameter and its type). A parameter the schema does not describe, or does
/// not type, is taken as [`untyped`].
pub fn typed_argument(name: &str, raw: &str, input_schema: &Value) -> Result<Value, ArgumentError> {
    let Some(prop) = input_schema.get("properties").and_then(|p| p.get(name)) else {
        return Ok(untyped(raw));
    };
    let types = accepted_types(prop);
    if types.is_empty() {
        return Ok(untyped(raw));
    }
    let parsed = serde_json::from_str::<Value>(raw.trim()).ok();
    // Typed alternatives first; a string parameter takes the text as it is.
    for t in TYPES {
        if !types.contains(&t) {
            continue;
        }
        let fits = match (t, &parsed) {
            ("string", _) => return Ok(Value::String(raw.to_owned())),
            ("integer", Some(v @ Value::Number(n))) if n.is_i64() || n.is_u64() => Some(v.clone()),
            // 2.0 is an integer in JSON Schema.
            ("integer", Some(Value::Number(n))) => n
                .as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                .map(|f| Value::from(f as i64)),
            ("number", Some(v @ Value::Number(_))) => Some(v.clone()),
            ("boolean", Some(v @ Value::Bool(_))) => Some(v.clone()),
            ("null", Some(Value::Null)) => Some(Value::Null),
            ("object", Some(v @ Value::Object(_))) => Some(v.clone()),
            ("array", Some(v @ Value::Array(_))) => Some(v.clone()),
            _ => None,
        };
        if let Some(v) = fits {
            return Ok(v);
        }
    }
    let wanted = match types.as_slice() {
        [one] => article(one),
        many => many.join(" or "),
    };
    let hint = if types.iter().any(|t| *t == "object" || *t == "array") {
        " (give it as JSON)"
    } else {
        ""
    };
    Err(ArgumentError {
        name: name.to_owned(),
        wanted,
        raw: raw.to_owned(),
        hint,
    })
}

/// A command-line value that does not fit its parameter's type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("parameter \"{name}\" takes {wanted}, and {raw:?} is not one{hint}")]
pub struct ArgumentError {
    pub name: String,
    /// The type or types, in words ("an integer", "string or null").
    pub wanted: String,
    pub raw: String,
    hint: &'static str,
}

fn article(t: &str) -> String {
    match t {
        "integer" | "array" | "object" => format!("an {t}"),
        "null" => "null".into(),
        _ => format!("a {t}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type":"object","properties":{
            "message":{"type":"string"},
            "a":{"type":"number"},
            "n":{"type":"integer"},
            "flag":{"type":"boolean"},
            "tags":{"type":"array","items":{"type":"string"}},
            "opts":{"type":"object"},
            "maybe":{"type":["integer","null"]},
            "either":{"anyOf":[{"type":"boolean"},{"type":"string"}]},
            "color":{"enum":["red","green"]},
            "free":{}
        }})
    }

    #[test]
    fn strings_stay_text_and_numbers_parse() {
        let s = schema();
        assert_eq!(typed_argument("message", "42", &s).unwrap(), json!("42"));
        assert_eq!(typed_argument("message", "true", &s).unwrap(), json!("true"));
        assert_eq!(typed_argument("message", " padded ", &s).unwrap(), json!(" padded "));
        assert_eq!(typed_argument("a", "2", &s).unwrap(), json!(2));
        assert_eq!(typed_argument("a", "3.5", &s).unwrap(), json!(3.5));
        assert_eq!(typed_argument("n", "7", &s).unwrap(), json!(7));
        assert_eq!(typed_argument("n", "7.0", &s).unwrap(), json!(7));
        assert_eq!(typed_argument("flag", "false", &s).unwrap(), json!(false));
        assert_eq!(typed_argument("tags", r#"["x","y"]"#, &s).unwrap(), json!(["x", "y"]));
        assert_eq!(typed_argument("opts", r#"{"k":1}"#, &s).unwrap(), json!({"k":1}));
        assert_eq!(typed_argument("maybe", "null", &s).unwrap(), Value::Null);
        assert_eq!(typed_argument("maybe", "5", &s).unwrap(), json!(5));
        assert_eq!(typed_argument("either", "true", &s).unwrap(), json!(true));
        assert_eq!(typed_argument("either", "yes", &s).unwrap(), json!("yes"));
        assert_eq!(typed_argument("color", "red", &s).unwrap(), json!("red"));
    }

    #[test]
    fn what_does_not_fit_is_refused_naming_parameter_and_type() {
        let s = schema();
        let e = typed_argument("a", "abc", &s).unwrap_err().to_string();
        assert!(
            e.contains("\"a\"") && e.contains("a number") && e.contains("abc"),
            "{e}"
        );
        let e = typed_argument("n", "1.5", &s).unwrap_err().to_string();
        assert!(e.contains("an integer"), "{e}");
        let e = typed_argument("flag", "yes", &s).unwrap_err().to_string();
        assert!(e.contains("a boolean"), "{e}");
        let e = typed_argument("tags", "x,y", &s).unwrap_err().to_string();
        assert!(e.contains("an array") && e.contains("JSON"), "{e}");
        let e = typed_argument("maybe", "x", &s).unwrap_err().to_string();
        assert!(e.contains("integer or null"), "{e}");
    }

    #[test]
    fn undescribed_parameters_are_json_or_text() {
        let s = schema();
        assert_eq!(typed_argument("free", "1", &s).unwrap(), json!(1));
        assert_eq!(typed_argument("other", "[1]", &s).unwrap(), json!([1]));
        assert_eq!(
            typed_argument("other", "hello world", &s).unwrap(),
            json!("hello world")
        );
        assert_eq!(typed_argument("x", "1", &Value::Null).unwrap(), json!(1));
    }
}
