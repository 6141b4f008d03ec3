//! Example values: [`Form::fill_sample`] gives every required field a value valid for its
//! schema (formats, patterns, bounds, lengths), and JSON fields the first of a few
//! candidates the validator accepts.

use super::analysis::{Bounds, MAX_DEPTH, Template, analyze, child_pointer};
use super::form::{Entry, Field, FieldKind, Form, pretty};
use super::pattern::sample_for_pattern_reps;
use super::validate::validator_for;
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
        if !keep_default && self.fill_from_examples(seed) {
            return;
        }
        let name = self.name.clone();
        let json_text = self
            .schema
            .get("contentMediaType")
            .and_then(Value::as_str)
            .is_some_and(|t| t == "application/json" || t.ends_with("+json"));
        match &mut self.kind {
            FieldKind::Text { text, .. } if json_text => {
                if !keep_default {
                    *text = "{}".into();
                }
            }
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
                let names: Vec<String> = fields.iter().map(|f| f.name.clone()).collect();
                for f in fields.iter_mut() {
                    if f.required || f.set {
                        // The upper end of a start/end pair gets the next value: ordered.
                        let ordered = matches!(
                            f.kind,
                            FieldKind::Text { .. } | FieldKind::Number { .. } | FieldKind::Integer { .. }
                        );
                        let upper = ordered && is_upper_of_pair(&f.name, &names);
                        f.fill_sample(seed + usize::from(upper));
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

impl Field {
    /// Sets a scalar field to one of the schema's `examples` (or OpenAPI's `example`)
    /// when one fits the field's schema; false when there is none that does.
    fn fill_from_examples(&mut self, seed: usize) -> bool {
        let scalar = matches!(
            self.kind,
            FieldKind::Text { .. }
                | FieldKind::Number { .. }
                | FieldKind::Integer { .. }
                | FieldKind::Bool(_)
                | FieldKind::Enum { .. }
        );
        if !scalar {
            return false;
        }
        let examples: Vec<Value> = match (self.schema.get("examples"), self.schema.get("example")) {
            (Some(Value::Array(e)), _) if !e.is_empty() => e.clone(),
            (_, Some(e)) => vec![e.clone()],
            _ => return false,
        };
        // Keep only what the field's own schema accepts (a scalar's flattened schema has
        // no `$ref` left; one that does not compile accepts nothing here).
        let check = validator_for(&Value::Object(self.schema.clone())).ok();
        let fits: Vec<&Value> = examples
            .iter()
            .filter(|x| check.as_ref().is_some_and(|v| v.is_valid(x)))
            .collect();
        if fits.is_empty() {
            return false;
        }
        let example = fits[seed % fits.len()].clone();
        let mut probe = self.clone();
        if !probe.load_kind(&example) || probe.current_value() != example {
            return false;
        }
        let mut errors = Vec::new();
        probe.client_errors("", &mut errors);
        if !errors.is_empty() {
            return false;
        }
        self.kind = probe.kind;
        true
    }
}

/// Words of a property name, lower-case: `startDate`, `start_date`, `start-date` →
/// ["start", "date"].
fn name_words(name: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            words.push(String::new());
            prev_lower = false;
            continue;
        }
        if (c.is_uppercase() && prev_lower) || words.is_empty() {
            words.push(String::new());
        }
        if let Some(w) = words.last_mut() {
            w.extend(c.to_lowercase());
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
    }
    words.retain(|w| !w.is_empty());
    words
}

/// Whether `name` is the upper end of a start/end, from/to or min/max pair whose lower
/// end is among `siblings` (`endDate` with `startDate`, `max_price` with `min_price`):
/// its example then comes after the lower end's.
fn is_upper_of_pair(name: &str, siblings: &[String]) -> bool {
    const PAIRS: [(&str, &str); 3] = [("start", "end"), ("from", "to"), ("min", "max")];
    let words = name_words(name);
    siblings.iter().any(|s| {
        let other = name_words(s);
        other.len() == words.len() && {
            let differ: Vec<usize> = (0..words.len()).filter(|i| words[*i] != other[*i]).collect();
            differ.len() == 1
                && PAIRS
                    .iter()
                    .any(|(lo, hi)| words[differ[0]] == *hi && other[differ[0]] == *lo)
        }
    })
}

/// The day `seed` days after 2024-01-01 (within 2024, a leap year), as `YYYY-MM-DD`.
fn sample_date(seed: usize) -> String {
    const DAYS: [usize; 12] = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    let mut day = seed % 366;
    let mut month = 0;
    while day >= DAYS[month] {
        day -= DAYS[month];
        month += 1;
    }
    format!("2024-{:02}-{:02}", month + 1, day + 1)
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
            "date" => sample_date(seed),
            "date-time" => format!("{}T12:00:00Z", sample_date(seed)),
            "time" => format!("{:02}:{:02}:00Z", 12 + (seed / 60) % 12, seed % 60),
            // Some servers mark a string holding JSON text this way.
            "json" => "{}".to_owned(),
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
    use crate::form::testing::*;
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

    /// Issue #17.5: examples, formats, JSON text and ordered pairs.
    #[test]
    fn examples_formats_json_text_and_ordered_pairs() {
        let s = json!({"type": "object", "properties": {
            "zip": {"type": "string", "description": "e.g. '10001'", "examples": ["10001", "94103"]},
            "zip5": {"type": "string", "pattern": "^[0-9]{5}$", "examples": ["not a zip"]},
            "limit": {"type": "integer", "minimum": 1, "example": 25},
            "color": {"enum": ["red", "green", "blue"], "examples": ["blue"]},
            "verbose": {"type": "boolean", "examples": [true]},
            "maybe": {"anyOf": [{"type": "integer"}, {"type": "string"}], "examples": ["seven"]},
            "filter": {"type": "string", "format": "json", "description": "must be a valid JSON object"},
            "payload": {"type": "string", "contentMediaType": "application/json"},
            "id": {"type": "string", "format": "uuid"},
            "site": {"type": "string", "format": "uri"},
            "mail": {"type": "string", "format": "email"},
            "day": {"type": "string", "format": "date"},
            "start": {"type": "string", "format": "date-time"},
            "end": {"type": "string", "format": "date-time"},
            "dateFrom": {"type": "string", "format": "date"},
            "dateTo": {"type": "string", "format": "date"},
            "min_price": {"type": "number"},
            "max_price": {"type": "number"},
            "startTime": {"type": "string", "format": "time"},
            "endTime": {"type": "string", "format": "time"},
            "when": {"type": "string", "description": "an ISO 8601 date"},
            "windows": {"type": "array", "minItems": 2, "items": {"type": "object", "properties": {
                "start": {"type": "string", "format": "date-time"}, "end": {"type": "string", "format": "date-time"}},
                "required": ["start", "end"]}}
        }});
        let required: Vec<&str> = s["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut s = s.clone();
        s["required"] = json!(required);
        let v = assert_sample_valid(s);
        assert_eq!(v["zip"], "10001");
        assert_eq!(v["zip5"], "00000", "an example the schema refuses is not used");
        assert_eq!(v["limit"], 25);
        assert_eq!(v["color"], "blue");
        assert_eq!(v["verbose"], true);
        assert_eq!(v["maybe"], "seven");
        assert_eq!(v["filter"], "{}");
        assert_eq!(v["payload"], "{}");
        assert_eq!(v["mail"], "user@example.com");
        assert_eq!(v["day"], "2024-01-01");
        let text = |k: &str| v[k].as_str().unwrap().to_owned();
        assert!(text("start") < text("end"), "{v}");
        assert!(text("dateFrom") < text("dateTo"), "{v}");
        assert!(text("startTime") < text("endTime"), "{v}");
        assert!(v["min_price"].as_f64() < v["max_price"].as_f64(), "{v}");
        for w in v["windows"].as_array().unwrap() {
            assert!(w["start"].as_str() < w["end"].as_str(), "{w}");
        }
        // No guessing from descriptions.
        assert_eq!(v["when"], "when");
    }

    #[test]
    fn pair_names_and_dates() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(name_words("startDate"), ["start", "date"]);
        assert_eq!(name_words("start_date-UTC"), ["start", "date", "utc"]);
        assert!(is_upper_of_pair("end", &names(&["start", "end"])));
        assert!(!is_upper_of_pair("start", &names(&["start", "end"])));
        assert!(is_upper_of_pair("endDate", &names(&["startDate"])));
        assert!(is_upper_of_pair("date_to", &names(&["date_from"])));
        assert!(is_upper_of_pair("maxPrice", &names(&["minPrice"])));
        assert!(!is_upper_of_pair("maxPrice", &names(&["minCount"])));
        assert!(!is_upper_of_pair("maximum", &names(&["minimum"])));
        assert!(!is_upper_of_pair("to", &names(&["cc"])));
        assert_eq!(sample_date(0), "2024-01-01");
        assert_eq!(sample_date(31), "2024-02-01");
        assert_eq!(sample_date(59), "2024-02-29");
        assert_eq!(sample_date(365), "2024-12-31");
        assert!(sample_date(8) < sample_date(9), "no wrap after the 9th");
    }
}
