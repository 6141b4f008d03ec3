//! Example values: [`Form::fill_sample`] gives every required field a value valid for its
//! schema (formats, patterns, bounds, lengths), and JSON fields the first of a few
//! candidates the validator accepts.

use super::analysis::{Bounds, MAX_DEPTH, Template, analyze, child_pointer};
use super::form::{Entry, Field, FieldKind, Form, pretty};
use super::pattern::sample_for_pattern_reps;
use serde_json::{Map, Value};

impl Form {
    /// Sets every required field (recursively) to a value valid for its schema.
    pub fn fill_sample(&mut self) {
        self.root.fill_sample(0);
        self.root.set = true;
        self.fix_json_fields();
    }

    /// JSON fields cannot be sampled from their schema: try a few candidates and keep
    /// the first the validator accepts at that pointer.
    fn fix_json_fields(&mut self) {
        let mut pointers = Vec::new();
        collect_json_fields(&self.root, "", &mut pointers);
        for (pointer, candidates) in pointers {
            let Some(validator) = self.validator.clone() else {
                break;
            };
            let ok_at = |form: &Form| {
                let v = form.value();
                !validator.iter_errors(&v).any(|e| {
                    let p = e.instance_path().as_str();
                    p == pointer || p.starts_with(&format!("{pointer}/"))
                })
            };
            if ok_at(self) {
                continue;
            }
            for c in candidates {
                if let Some(f) = self.root.at_mut(&pointer) {
                    f.kind = FieldKind::Json {
                        text: pretty(&c),
                        error: None,
                    };
                }
                if ok_at(self) {
                    break;
                }
            }
        }
    }
}

fn collect_json_fields(f: &Field, pointer: &str, out: &mut Vec<(String, Vec<Value>)>) {
    if !f.set || (f.nullable && f.is_null) {
        return;
    }
    match &f.kind {
        FieldKind::Json { .. } => {
            let mut c = Vec::new();
            if let Some(Value::Array(ex)) = f.schema.get("examples") {
                c.extend(ex.iter().cloned());
            }
            for k in ["default", "const"] {
                if let Some(v) = f.schema.get(k) {
                    c.push(v.clone());
                }
            }
            c.extend([
                Value::String("example".into()),
                Value::from(1),
                Value::Bool(true),
                Value::Object(Map::new()),
                Value::Array(Vec::new()),
                Value::Null,
                Value::String(String::new()),
                Value::from(0),
                Value::from(-1),
                Value::from(0.5),
            ]);
            out.push((pointer.to_owned(), c));
        }
        FieldKind::Array { items, .. } => {
            for (i, it) in items.iter().enumerate() {
                collect_json_fields(it, &format!("{pointer}/{i}"), out);
            }
        }
        FieldKind::Object { fields, extra, .. } => {
            for c in fields {
                collect_json_fields(c, &child_pointer(pointer, &c.name), out);
            }
            for e in extra {
                collect_json_fields(&e.field, &child_pointer(pointer, &e.key), out);
            }
        }
        FieldKind::Map { entries, .. } => {
            for e in entries {
                collect_json_fields(&e.field, &child_pointer(pointer, &e.key), out);
            }
        }
        FieldKind::Choice { current, .. } => collect_json_fields(current, pointer, out),
        _ => {}
    }
}

impl Field {
    /// Gives this field (and its required children) a value valid for its schema.
    /// `seed` varies the value between array rows.
    pub fn fill_sample(&mut self, seed: usize) {
        self.expand();
        self.set = true;
        self.is_null = false;
        let keep_default = self.is_default && {
            let mut e = Vec::new();
            self.client_errors("", &mut e);
            e.is_empty()
        };
        let name = self.name.clone();
        match &mut self.kind {
            FieldKind::Text {
                text,
                format,
                min_length,
                max_length,
                pattern,
                ..
            } => {
                if !keep_default {
                    *text = sample_string(
                        &name,
                        format.as_deref(),
                        pattern.as_deref(),
                        *min_length,
                        *max_length,
                        seed,
                    );
                }
            }
            FieldKind::Number { text, bounds } => {
                if !keep_default {
                    *text = sample_number(bounds, false, seed);
                }
            }
            FieldKind::Integer { text, bounds } => {
                if !keep_default {
                    *text = sample_number(bounds, true, seed);
                }
            }
            FieldKind::Bool(_) | FieldKind::Const(_) => {}
            FieldKind::Enum { options, selected, .. } => {
                if selected.is_none() || !keep_default {
                    *selected = Some(seed % options.len().max(1));
                }
            }
            FieldKind::Array {
                items,
                item,
                min_items,
                max_items,
            } => {
                // One row as an example, unless rows would recurse (a tree's children).
                let example_row = self.template.depth < MAX_DEPTH && !is_recursive(item);
                let want =
                    (min_items.unwrap_or(0).max(u64::from(example_row))).min(max_items.unwrap_or(u64::MAX)) as usize;
                while items.len() < want {
                    let f = Field::build(item, &items.len().to_string(), true, true);
                    items.push(f);
                }
                for (i, it) in items.iter_mut().enumerate() {
                    it.fill_sample(i);
                }
            }
            FieldKind::Object { fields, extra, .. } => {
                for f in fields.iter_mut() {
                    if f.required || f.set {
                        f.fill_sample(seed);
                    }
                }
                for e in extra.iter_mut() {
                    e.field.fill_sample(seed);
                }
            }
            FieldKind::Map { entries, value } => {
                let want = self.schema.get("minProperties").and_then(Value::as_u64).unwrap_or(0) as usize;
                while entries.len() < want {
                    let key = format!("key{}", entries.len() + 1);
                    let field = Field::build(value, &key, true, true);
                    entries.push(Entry { key, field });
                }
                for e in entries.iter_mut() {
                    e.field.fill_sample(seed);
                }
            }
            FieldKind::Choice { current, .. } => current.fill_sample(seed),
            FieldKind::Json { text, .. } => {
                if serde_json::from_str::<Value>(text).is_err() {
                    let v = self
                        .schema
                        .get("default")
                        .or_else(|| self.schema.get("examples").and_then(|e| e.get(0)))
                        .cloned()
                        .unwrap_or(Value::Null);
                    *text = pretty(&v);
                }
            }
        }
    }
}

/// Whether building from `t` expands a `$ref` already being expanded above it.
fn is_recursive(t: &Template) -> bool {
    analyze(&t.schema, &t.root).refs.iter().any(|r| t.stack.contains(r))
}

fn sample_string(
    name: &str,
    format: Option<&str>,
    pattern: Option<&str>,
    min: Option<u64>,
    max: Option<u64>,
    seed: usize,
) -> String {
    let n = seed % 9;
    let by_format = format.and_then(|f| {
        Some(match f {
            "email" | "idn-email" => {
                if seed == 0 {
                    "user@example.com".to_owned()
                } else {
                    format!("user{seed}@example.com")
                }
            }
            "uri" | "url" | "iri" | "uri-reference" | "iri-reference" => {
                if seed == 0 {
                    "https://example.com".to_owned()
                } else {
                    format!("https://example.com/{seed}")
                }
            }
            "uri-template" => "https://example.com/{id}".to_owned(),
            "date" => format!("2024-01-0{}", n + 1),
            "date-time" => format!("2024-01-0{}T12:00:00Z", n + 1),
            "time" => format!("12:00:0{n}Z"),
            "duration" => format!("P{}D", seed + 1),
            "uuid" => format!("123e4567-e89b-12d3-a456-42661417400{n}"),
            "ipv4" => format!("192.0.2.{}", seed % 250 + 1),
            "ipv6" => format!("2001:db8::{}", seed % 250 + 1),
            "hostname" | "idn-hostname" => {
                if seed == 0 {
                    "example.com".to_owned()
                } else {
                    format!("host{seed}.example.com")
                }
            }
            "json-pointer" => "/example".to_owned(),
            "relative-json-pointer" => "0".to_owned(),
            "regex" => "^example$".to_owned(),
            _ => return None,
        })
    });
    if let Some(s) = by_format {
        return s;
    }
    if let Some(p) = pattern {
        // Repeat open quantifiers more when the first try is too short.
        let want = min.unwrap_or(0) as usize;
        for reps in [1, want.max(1)] {
            if let Some(s) = sample_for_pattern_reps(p, seed, reps)
                && s.chars().count() >= want
            {
                return s;
            }
        }
    }
    let base = if name.is_empty() || name.parse::<usize>().is_ok() {
        "example".to_owned()
    } else {
        name.chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase()
    };
    let base = if base.is_empty() { "example".to_owned() } else { base };
    let mut s = if seed == 0 { base } else { format!("{base}{seed}") };
    let len = s.chars().count() as u64;
    if let Some(min) = min
        && len < min
    {
        s.extend(std::iter::repeat_n('x', (min - len) as usize));
    }
    if let Some(max) = max {
        s = s.chars().take(max as usize).collect();
        if seed > 0 && max > 0 {
            // Keep rows distinct when truncated.
            let digit = char::from_digit((seed % 10) as u32, 10).unwrap_or('0');
            s.pop();
            s.push(digit);
        }
    }
    s
}

fn sample_number(b: &Bounds, integer: bool, seed: usize) -> String {
    let seed = seed as f64;
    let mut lo = f64::NEG_INFINITY;
    let mut lo_excl = false;
    if let Some(m) = b.minimum {
        lo = m;
    }
    if let Some(m) = b.exclusive_minimum
        && m >= lo
    {
        lo = m;
        lo_excl = true;
    }
    let mut hi = f64::INFINITY;
    let mut hi_excl = false;
    if let Some(m) = b.maximum {
        hi = m;
    }
    if let Some(m) = b.exclusive_maximum
        && m <= hi
    {
        hi = m;
        hi_excl = true;
    }
    let ok = |x: f64| (if lo_excl { x > lo } else { x >= lo }) && (if hi_excl { x < hi } else { x <= hi });
    let mut x = 1.0 + seed;
    if !ok(x) {
        // Start just inside the lower bound, else just inside the upper one.
        x = if lo.is_finite() {
            let start = if integer {
                if lo_excl { lo.floor() + 1.0 } else { lo.ceil() }
            } else if lo_excl {
                lo + 1.0
            } else {
                lo
            };
            start + seed
        } else {
            let start = if integer {
                if hi_excl { hi.ceil() - 1.0 } else { hi.floor() }
            } else if hi_excl {
                hi - 1.0
            } else {
                hi
            };
            start - seed
        };
        if !ok(x) && lo.is_finite() && hi.is_finite() {
            x = if integer {
                ((lo + hi) / 2.0).round()
            } else {
                (lo + hi) / 2.0
            };
        }
    }
    if let Some(k) = b.multiple_of {
        let up = (x / k).ceil() * k;
        let down = (x / k).floor() * k;
        x = if ok(up) { up } else { down };
        // Avoid 0.30000000000000004.
        x = (x * 1e9).round() / 1e9;
    }
    if integer || (x.fract() == 0.0 && x.abs() < 9.0e15) {
        format!("{}", x as i64)
    } else {
        x.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::form::testing::*;
    use serde_json::json;

    #[test]
    fn draft4_style_exclusive_bounds() {
        let b = Bounds::from_schema(json!({"minimum": 0, "exclusiveMinimum": true}).as_object().unwrap());
        assert_eq!(b.exclusive_minimum, Some(0.0));
        assert_eq!(b.minimum, None);
        assert_eq!(sample_number(&b, true, 0), "1");
        let b = Bounds::from_schema(json!({"exclusiveMaximum": 0}).as_object().unwrap());
        assert_eq!(sample_number(&b, true, 0), "-1");
        let b = Bounds::from_schema(json!({"minimum": 0.1, "maximum": 0.2}).as_object().unwrap());
        assert_eq!(sample_number(&b, false, 0), "0.1");
        let b = Bounds::from_schema(json!({"minimum": 5, "multipleOf": 3}).as_object().unwrap());
        assert_eq!(sample_number(&b, true, 0), "6");
        assert_eq!(b.describe(), ">= 5, multiple of 3");
    }

    #[test]
    fn fill_sample_formats_and_patterns() {
        let s = json!({"type":"object","properties":{
            "email":{"type":"string","format":"email"},
            "uri":{"type":"string","format":"uri"},
            "date":{"type":"string","format":"date"},
            "dt":{"type":"string","format":"date-time"},
            "id":{"type":"string","format":"uuid"},
            "ip":{"type":"string","format":"ipv4"},
            "ip6":{"type":"string","format":"ipv6"},
            "host":{"type":"string","format":"hostname"},
            "phone":{"type":"string","pattern":"^\\+?[0-9]{3}-[0-9]{4}$"},
            "code":{"type":"string","pattern":"^(?:AB|CD)_[a-z]+\\d{2}$"},
            "slug":{"type":"string","pattern":"^[a-z0-9-]+$","minLength":3},
            "short":{"type":"string","minLength":10,"maxLength":12},
            "tiny":{"type":"string","maxLength":2},
            "level":{"type":"integer","minimum":10,"maximum":20},
            "ratio":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1},
            "step":{"type":"number","multipleOf":0.25,"minimum":0.3},
            "list":{"type":"array","items":{"type":"string","enum":["a","b","c"]},"minItems":3,"uniqueItems":true},
            "opt":{"type":"string"}
        },"required":["email","uri","date","dt","id","ip","ip6","host","phone","code","slug","short","tiny","level","ratio","step","list"]});
        let v = assert_sample_valid(s);
        assert_eq!(v["email"], "user@example.com");
        assert_eq!(v["list"], json!(["a", "b", "c"]));
        assert!(v.get("opt").is_none(), "optional fields stay unset");
    }

    #[test]
    fn fill_sample_choice_map_json_and_nullable_required() {
        let s = json!({"type":"object","properties":{
            "pick":{"oneOf":[{"type":"object","properties":{"t":{"const":"a"}},"required":["t"]},{"type":"string"}]},
            "m":{"type":"object","additionalProperties":{"type":"integer","minimum":3},"minProperties":2},
            "free":{"not":{"type":"string"}},
            "opt":{"anyOf":[{"type":"integer","minimum":4},{"type":"null"}]}
        },"required":["pick","m","free","opt"]});
        let v = assert_sample_valid(s);
        assert_eq!(v["m"], json!({"key1": 3, "key2": 3}));
        assert_eq!(v["opt"], json!(4));
        assert!(!v["free"].is_string());
    }

    #[test]
    fn zod_draft07_and_pydantic_real_shapes() {
        let zod = json!({"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{
            "customer":{"type":"object","properties":{"name":{"type":"string"},"email":{"type":"string"},
                "address":{"type":"object","properties":{"city":{"type":"string"},"zip":{"type":"string"}},"required":["city"]}},
                "required":["name","address"],"description":"Who orders"},
            "items":{"minItems":1,"type":"array","items":{"type":"object","properties":{"sku":{"type":"string"},
                "quantity":{"type":"integer","minimum":1,"maximum":9007199254740991_i64},"size":{"type":"string","enum":["S","M","L"]}},
                "required":["sku","quantity"]},"description":"Order lines"},
            "priority":{"default":"normal","type":"string","enum":["low","normal","high"]},
            "gift":{"type":"boolean"}},"required":["customer","items"],"additionalProperties":false});
        let v = assert_sample_valid(zod.clone());
        assert_eq!(v["items"][0]["quantity"], json!(1));
        assert!(v.get("priority").is_none());
        roundtrip(zod, v);
        let py = json!({"properties":{"person":{"$ref":"#/$defs/Person"},"shout":{"default":false,"title":"Shout","type":"boolean"}},
            "required":["person"],"type":"object","$defs":{
            "Address":{"properties":{"street":{"title":"Street","type":"string"},"city":{"title":"City","type":"string"},
                "zip_code":{"anyOf":[{"type":"string"},{"type":"null"}],"default":null,"title":"Zip Code"}},"required":["street","city"],"title":"Address","type":"object"},
            "Person":{"properties":{"name":{"title":"Name","type":"string"},"age":{"minimum":0,"title":"Age","type":"integer"},
                "address":{"anyOf":[{"$ref":"#/$defs/Address"},{"type":"null"}],"default":null},
                "tags":{"items":{"type":"string"},"title":"Tags","type":"array"}},"required":["name","age"],"title":"Person","type":"object"}},
            "title":"describe_personArguments"});
        let v = assert_sample_valid(py.clone());
        assert_eq!(v, json!({"person": {"name": "name", "age": 1}}));
        let mut f = form(py.clone());
        let addr = f.field_at_mut("/person/address").unwrap();
        assert!(addr.nullable && addr.is_null);
        addr.set_null(false);
        assert!(matches!(addr.kind, FieldKind::Object { .. }));
        roundtrip(
            py,
            json!({"person": {"name": "A", "age": 3, "address": {"street": "s", "city": "c", "zip_code": null}, "tags": ["x"]}, "shout": true}),
        );
    }
}
