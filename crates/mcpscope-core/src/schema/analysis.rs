//! What a schema asks for, without building anything: `$ref`s resolved (JSON pointers
//! into the same document only), `allOf` merged, nullable unions (`anyOf: [T, {type:
//! null}]`, `type: [T, "null"]`) folded into "T, may be null", other `anyOf`/`oneOf`/type
//! arrays turned into labelled variants, and the [`Shape`] a form gives each position.

use serde_json::{Map, Value};
use std::sync::Arc;

/// Nesting deeper than this is not expanded eagerly (optional fields) or becomes JSON.
pub(super) const MAX_DEPTH: usize = 24;
/// `$ref` → `$ref` → … chains longer than this are treated as cycles.
pub(super) const MAX_REF_HOPS: usize = 32;
/// A `$ref` already expanded this many times above a required field stops expanding.
pub(super) const MAX_REQUIRED_RECURSION: usize = 2;

/// Where a field's schema lives: the schema at this position plus the document it came
/// from (for `$ref`s) and the `$ref`s being expanded above it (the recursion guard).
/// Used to build fields later: array rows, map entries, chooser variants.
#[derive(Clone, Debug)]
pub struct Template {
    pub(super) schema: Value,
    pub(super) root: Arc<Value>,
    pub(super) stack: Vec<String>,
    pub(super) depth: usize,
}

impl Template {
    pub(super) fn child(&self, schema: Value, stack: &[String]) -> Template {
        Template {
            schema,
            root: self.root.clone(),
            stack: stack.to_vec(),
            depth: self.depth + 1,
        }
    }

    /// The schema at this position (unresolved).
    pub fn schema(&self) -> &Value {
        &self.schema
    }
}

/// Numeric constraints of a number or integer field (draft-04 boolean
/// `exclusiveMinimum` already folded into `exclusive_minimum`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bounds {
    pub minimum: Option<f64>,
    pub maximum: Option<f64>,
    pub exclusive_minimum: Option<f64>,
    pub exclusive_maximum: Option<f64>,
    pub multiple_of: Option<f64>,
}

impl Bounds {
    pub(super) fn from_schema(m: &Map<String, Value>) -> Bounds {
        let num = |k: &str| m.get(k).and_then(Value::as_f64);
        let mut b = Bounds {
            minimum: num("minimum"),
            maximum: num("maximum"),
            exclusive_minimum: num("exclusiveMinimum"),
            exclusive_maximum: num("exclusiveMaximum"),
            multiple_of: num("multipleOf").filter(|k| *k > 0.0),
        };
        // Draft 4: `exclusiveMinimum: true` makes `minimum` exclusive.
        if m.get("exclusiveMinimum") == Some(&Value::Bool(true)) {
            b.exclusive_minimum = b.minimum.take();
        }
        if m.get("exclusiveMaximum") == Some(&Value::Bool(true)) {
            b.exclusive_maximum = b.maximum.take();
        }
        b
    }

    /// A short human description, e.g. "≥ 0, < 10".
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(v) = self.minimum {
            parts.push(format!(">= {}", num_text(v)));
        }
        if let Some(v) = self.exclusive_minimum {
            parts.push(format!("> {}", num_text(v)));
        }
        if let Some(v) = self.maximum {
            parts.push(format!("<= {}", num_text(v)));
        }
        if let Some(v) = self.exclusive_maximum {
            parts.push(format!("< {}", num_text(v)));
        }
        if let Some(v) = self.multiple_of {
            parts.push(format!("multiple of {}", num_text(v)));
        }
        parts.join(", ")
    }
}

pub(super) fn num_text(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        format!("{}", v as i64)
    } else {
        v.to_string()
    }
}

/// `parent` + one escaped reference token.
pub fn child_pointer(parent: &str, key: &str) -> String {
    format!("{parent}/{}", key.replace('~', "~0").replace('/', "~1"))
}

pub(super) fn unescape_token(t: &str) -> String {
    t.replace("~1", "/").replace("~0", "~")
}

/// Label of an enum option: strings as they are, anything else as JSON.
pub fn value_label(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Shape {
    Any,
    Unsupported(String),
    Const(Value),
    Enum(Vec<Value>),
    String,
    Number,
    Integer,
    Boolean,
    Array,
    Object,
    Map,
    /// `anyOf`/`oneOf`/type array of more than one non-null alternative.
    Choice(Variants),
}

/// The alternatives of a chooser.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Variants {
    /// Each variant's label and schema (flattened, the union's siblings merged in, its
    /// tags pinned: see [`pin_tags`]).
    pub(super) list: Vec<(String, Value)>,
    /// The variant a new field starts with.
    pub(super) preferred: usize,
    /// Where the variants come from: "anyOf", "oneOf" or "type".
    pub(super) keyword: &'static str,
    /// Each variant's index in the schema's `anyOf`/`oneOf` array (null variants are not
    /// in `list`), to read the validator's per-branch errors.
    pub(super) origin: Vec<usize>,
    /// How many entries that array has (null variants included).
    pub(super) total: usize,
}

pub(super) struct Analysis {
    pub(super) merged: Map<String, Value>,
    pub(super) nullable: bool,
    pub(super) shape: Shape,
    /// `$ref`s expanded at this position.
    pub(super) refs: Vec<String>,
}

pub(super) const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "example",
    "nullable",
    "deprecated",
    "readOnly",
];

pub(super) fn resolve_ref<'a>(root: &'a Value, r: &str) -> Option<&'a Value> {
    let frag = r.strip_prefix('#')?;
    if frag.is_empty() {
        return Some(root);
    }
    if !frag.starts_with('/') {
        return None; // `$anchor`s are not supported
    }
    let decoded = percent_decode(frag);
    let mut cur = root;
    for token in decoded.split('/').skip(1) {
        let token = unescape_token(token);
        cur = match cur {
            Value::Object(m) => m.get(&token)?,
            Value::Array(a) => a.get(token.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

pub(super) fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) = (
                bytes.get(i + 1).and_then(|b| (*b as char).to_digit(16)),
                bytes.get(i + 2).and_then(|b| (*b as char).to_digit(16)),
            )
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Resolves the top-level `$ref` and merges `allOf` into one schema object.
pub(super) fn flatten(
    schema: &Value,
    root: &Value,
    hops: usize,
    refs: &mut Vec<String>,
) -> Result<Map<String, Value>, String> {
    if hops > MAX_REF_HOPS {
        return Err("$ref chain too long (a $ref cycle?)".into());
    }
    match schema {
        Value::Bool(true) => Ok(Map::new()),
        Value::Bool(false) => Err("the schema is `false`: no value is valid".into()),
        Value::Object(m) => {
            let mut out = Map::new();
            if let Some(r) = m.get("$ref") {
                let r = r.as_str().ok_or("$ref is not a string")?;
                let target = resolve_ref(root, r).ok_or_else(|| format!("cannot resolve $ref \"{r}\""))?;
                refs.push(r.to_owned());
                out = flatten(target, root, hops + 1, refs)?;
            }
            if let Some(all) = m.get("allOf") {
                let all = all.as_array().ok_or("allOf is not an array")?;
                for sub in all {
                    let f = flatten(sub, root, hops + 1, refs)?;
                    out = merge(out, f)?;
                }
            }
            let own: Map<String, Value> = m
                .iter()
                .filter(|(k, _)| {
                    !matches!(
                        k.as_str(),
                        "$ref" | "allOf" | "$defs" | "definitions" | "$schema" | "$id" | "$comment" | "$anchor"
                    )
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            merge(out, own)
        }
        _ => Err("not a schema (neither an object nor a boolean)".into()),
    }
}

pub(super) fn type_set(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a.iter().filter_map(|t| t.as_str().map(str::to_owned)).collect(),
        _ => Vec::new(),
    }
}

/// Merges `b` into `a` as `allOf: [a, b]` would constrain (approximately: the form only
/// needs the shape; validation uses the original schema). Annotations of `b` win.
pub(super) fn merge(mut a: Map<String, Value>, b: Map<String, Value>) -> Result<Map<String, Value>, String> {
    for (k, bv) in b {
        let Some(av) = a.get_mut(&k) else {
            a.insert(k, bv);
            continue;
        };
        if *av == bv {
            continue;
        }
        match k.as_str() {
            "properties" | "patternProperties" | "$defs" | "definitions" => {
                if let (Value::Object(am), Value::Object(bm)) = (&mut *av, bv) {
                    for (pk, pv) in bm {
                        match am.get_mut(&pk) {
                            Some(old) if *old != pv => {
                                *old = serde_json::json!({ "allOf": [old.clone(), pv] });
                            }
                            Some(_) => {}
                            None => {
                                am.insert(pk, pv);
                            }
                        }
                    }
                }
            }
            "required" => {
                if let (Value::Array(ar), Value::Array(br)) = (&mut *av, bv) {
                    for r in br {
                        if !ar.contains(&r) {
                            ar.push(r);
                        }
                    }
                }
            }
            "type" => {
                let at = type_set(av);
                let bt = type_set(&bv);
                let mut both: Vec<String> = Vec::new();
                for t in &at {
                    if bt.contains(t) {
                        both.push(t.clone());
                    } else if (t == "number" && bt.iter().any(|x| x == "integer"))
                        || (t == "integer" && bt.iter().any(|x| x == "number"))
                    {
                        both.push("integer".into());
                    }
                }
                both.dedup();
                *av = match both.len() {
                    0 => return Err(format!("allOf: types {at:?} and {bt:?} do not meet")),
                    1 => Value::String(both.remove(0)),
                    _ => Value::Array(both.into_iter().map(Value::String).collect()),
                };
            }
            "minimum" | "exclusiveMinimum" | "minLength" | "minItems" | "minProperties" => {
                if let (Some(x), Some(y)) = (av.as_f64(), bv.as_f64()) {
                    if y > x {
                        *av = bv;
                    }
                } else {
                    *av = bv;
                }
            }
            "maximum" | "exclusiveMaximum" | "maxLength" | "maxItems" | "maxProperties" => {
                if let (Some(x), Some(y)) = (av.as_f64(), bv.as_f64()) {
                    if y < x {
                        *av = bv;
                    }
                } else {
                    *av = bv;
                }
            }
            "enum" => {
                if let (Value::Array(ae), Value::Array(be)) = (&mut *av, &bv) {
                    ae.retain(|x| be.contains(x));
                    if ae.is_empty() {
                        return Err("allOf: the enums have no value in common".into());
                    }
                }
            }
            "const" => return Err("allOf: two different consts".into()),
            "additionalProperties" | "items" | "propertyNames" | "contains" => {
                if *av == Value::Bool(false) || bv == Value::Bool(false) {
                    *av = Value::Bool(false);
                } else if *av == Value::Bool(true) {
                    *av = bv;
                } else if bv != Value::Bool(true) {
                    *av = serde_json::json!({ "allOf": [av.clone(), bv] });
                }
            }
            "anyOf" | "oneOf" => return Err(format!("allOf of several `{k}` unions")),
            _ => *av = bv,
        }
    }
    Ok(a)
}

pub(super) fn is_null_schema(m: &Map<String, Value>) -> bool {
    m.get("type").and_then(Value::as_str) == Some("null")
        || m.get("const") == Some(&Value::Null)
        || m.get("enum") == Some(&Value::Array(vec![Value::Null]))
}

pub(super) fn analyze(schema: &Value, root: &Value) -> Analysis {
    let mut refs = Vec::new();
    let unsupported = |why: String, merged: Map<String, Value>, refs: Vec<String>| Analysis {
        merged,
        nullable: false,
        shape: Shape::Unsupported(why),
        refs,
    };
    let raw_annotations = || -> Map<String, Value> {
        schema
            .as_object()
            .map(|m| {
                m.iter()
                    .filter(|(k, _)| ANNOTATIONS.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut merged = match flatten(schema, root, 0, &mut refs) {
        Ok(m) => m,
        Err(e) => return unsupported(e, raw_annotations(), refs),
    };
    let mut nullable = merged.get("nullable") == Some(&Value::Bool(true));

    let union_key = match (merged.contains_key("anyOf"), merged.contains_key("oneOf")) {
        (true, true) => return unsupported("both anyOf and oneOf".into(), merged, refs),
        (true, false) => Some("anyOf"),
        (false, true) => Some("oneOf"),
        (false, false) => None,
    };
    if let Some(key) = union_key {
        let Some(Value::Array(variants)) = merged.remove(key) else {
            return unsupported(format!("{key} is not an array"), merged, refs);
        };
        let mut options = Vec::new();
        for (i, v) in variants.iter().enumerate() {
            match flatten(v, root, 1, &mut refs) {
                Ok(f) if is_null_schema(&f) => nullable = true,
                Ok(f) => options.push((i, v, f)),
                Err(e) => return unsupported(format!("{key} variant: {e}"), merged, refs),
            }
        }
        // What the variants share; the union's examples go along too (a variant keeps for
        // its example values only those its own schema accepts).
        let structural: Map<String, Value> = merged
            .iter()
            .filter(|(k, _)| !ANNOTATIONS.contains(&k.as_str()) || matches!(k.as_str(), "examples" | "example"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        match options.len() {
            0 => {
                merged.insert("const".into(), Value::Null);
            }
            1 => {
                let (_, _, only) = options.remove(0);
                // The outer annotations (title, description, default) win over the variant's.
                merged = match merge(only, merged.clone()) {
                    Ok(m) => m,
                    Err(e) => return unsupported(e, merged, refs),
                };
            }
            _ => {
                let discriminator = merged.get("discriminator").and_then(Value::as_object);
                let tag = discriminator
                    .and_then(|d| d.get("propertyName"))
                    .and_then(Value::as_str);
                let mapping = discriminator.and_then(|d| d.get("mapping")).and_then(Value::as_object);
                let mut schemas = Vec::new();
                let mut raws = Vec::new();
                let mut origin = Vec::new();
                for (i, raw, o) in options {
                    let mut schema = merge(structural.clone(), o.clone()).unwrap_or(o);
                    let raw_ref = raw.get("$ref").and_then(Value::as_str);
                    pin_tags(&mut schema, root, tag, mapping, raw_ref);
                    schemas.push(schema);
                    raws.push(raw);
                    origin.push(i);
                }
                let labels = variant_labels(&raws, &schemas, root, tag);
                let preferred = preferred_variant(&schemas);
                let list = labels.into_iter().zip(schemas.into_iter().map(Value::Object)).collect();
                return Analysis {
                    merged,
                    nullable,
                    shape: Shape::Choice(Variants {
                        list,
                        preferred,
                        keyword: key,
                        origin,
                        total: variants.len(),
                    }),
                    refs,
                };
            }
        }
    }

    if let Some(Value::Array(types)) = merged.get("type").cloned() {
        let mut ts: Vec<String> = types.iter().filter_map(|t| t.as_str().map(str::to_owned)).collect();
        if ts.iter().any(|t| t == "null") {
            nullable = true;
            ts.retain(|t| t != "null");
        }
        match ts.len() {
            0 => {
                merged.insert("type".into(), Value::String("null".into()));
            }
            1 => {
                merged.insert("type".into(), Value::String(ts.remove(0)));
            }
            _ => {
                let schemas: Vec<Map<String, Value>> = ts
                    .iter()
                    .map(|t| {
                        let mut m: Map<String, Value> = merged
                            .iter()
                            .filter(|(k, _)| {
                                !ANNOTATIONS.contains(&k.as_str()) || matches!(k.as_str(), "examples" | "example")
                            })
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect();
                        m.insert("type".into(), Value::String(t.clone()));
                        m
                    })
                    .collect();
                let preferred = preferred_variant(&schemas);
                let n = ts.len();
                return Analysis {
                    merged,
                    nullable,
                    shape: Shape::Choice(Variants {
                        list: ts.into_iter().zip(schemas.into_iter().map(Value::Object)).collect(),
                        preferred,
                        keyword: "type",
                        origin: (0..n).collect(),
                        total: n,
                    }),
                    refs,
                };
            }
        }
    }

    if let Some(Value::Array(e)) = merged.get_mut("enum")
        && e.len() > 1
        && e.contains(&Value::Null)
    {
        nullable = true;
        e.retain(|v| !v.is_null());
    }
    let shape = shape_of(&merged);
    Analysis {
        merged,
        nullable,
        shape,
        refs,
    }
}

pub(super) fn shape_of(m: &Map<String, Value>) -> Shape {
    if m.contains_key("if") {
        return Shape::Unsupported("if/then/else is not expressible as a form".into());
    }
    if let Some(c) = m.get("const") {
        return Shape::Const(c.clone());
    }
    if let Some(e) = m.get("enum") {
        return match e {
            Value::Array(a) if !a.is_empty() => Shape::Enum(a.clone()),
            _ => Shape::Unsupported("an empty or malformed enum".into()),
        };
    }
    let has = |keys: &[&str]| keys.iter().any(|k| m.contains_key(*k));
    let ty = match m.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(other) => return Shape::Unsupported(format!("type {other} is not understood")),
        None if has(&[
            "properties",
            "additionalProperties",
            "required",
            "patternProperties",
            "minProperties",
            "maxProperties",
        ]) =>
        {
            "object".into()
        }
        None if has(&["items", "prefixItems", "minItems", "maxItems", "uniqueItems"]) => "array".into(),
        None if has(&["minLength", "maxLength", "pattern", "format"]) => "string".into(),
        None if has(&[
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "multipleOf",
        ]) =>
        {
            "number".into()
        }
        None if m.contains_key("not") => {
            return Shape::Unsupported("`not` is not expressible as a form".into());
        }
        None => return Shape::Any,
    };
    match ty.as_str() {
        "string" => Shape::String,
        "number" => Shape::Number,
        "integer" => Shape::Integer,
        "boolean" => Shape::Boolean,
        "null" => Shape::Const(Value::Null),
        "array" => {
            if m.contains_key("prefixItems") || matches!(m.get("items"), Some(Value::Array(_))) {
                Shape::Unsupported("tuple arrays (prefixItems) are edited as JSON".into())
            } else {
                Shape::Array
            }
        }
        "object" => {
            let no_props = m.get("properties").and_then(Value::as_object).is_none_or(Map::is_empty);
            let closed = m.get("additionalProperties") == Some(&Value::Bool(false));
            let patterns = m
                .get("patternProperties")
                .and_then(Value::as_object)
                .is_some_and(|p| !p.is_empty());
            if no_props && patterns && !m.get("additionalProperties").is_some_and(Value::is_object) {
                Shape::Unsupported("patternProperties are edited as JSON".into())
            } else if no_props && !closed {
                Shape::Map
            } else {
                Shape::Object
            }
        }
        other => Shape::Unsupported(format!("unknown type \"{other}\"")),
    }
}

/// A property's fixed value: its `const`, or the only value of its `enum`.
fn fixed_value(p: &Value) -> Option<&Value> {
    p.get("const").or_else(|| {
        p.get("enum")
            .and_then(Value::as_array)
            .filter(|a| a.len() == 1)
            .map(|a| &a[0])
    })
}

/// A property's fixed value, following a `$ref` (pydantic puts one-value enums in `$defs`).
fn fixed_property(p: &Value, root: &Value) -> Option<Value> {
    if let Some(v) = fixed_value(p) {
        return Some(v.clone());
    }
    let flat = flatten(p, root, 1, &mut Vec::new()).ok()?;
    fixed_value(&Value::Object(flat)).cloned()
}

/// The name a `$ref` points at: `#/$defs/GetItem` → `GetItem`.
fn ref_name(r: &str) -> Option<String> {
    let last = r.rsplit('/').next()?;
    let name = unescape_token(&percent_decode(last));
    (!name.is_empty() && name != "#").then_some(name)
}

/// Pins a variant's tags: what tells it apart from the other variants is always part of
/// its value once it is chosen, even where the schema makes it optional (pydantic's
/// `{"const": "GetItem", "default": "GetItem"}` outside `required`; left out, the value
/// matches several variants and a discriminated union cannot find its tag). The tags are
/// the properties with a fixed value and the OpenAPI `discriminator.propertyName`; a
/// discriminator property without a fixed value gets the `mapping` key naming this
/// variant's `$ref`, or the `$ref`'s own name (OpenAPI's implicit mapping).
pub(super) fn pin_tags(
    v: &mut Map<String, Value>,
    root: &Value,
    tag: Option<&str>,
    mapping: Option<&Map<String, Value>>,
    raw_ref: Option<&str>,
) {
    if v.get("type").is_some_and(|t| *t != "object") {
        return;
    }
    let mut pinned: Vec<String> = Vec::new();
    if let Some(tag) = tag {
        let declared = v.get("properties").and_then(|p| p.get(tag)).cloned();
        let fixed = declared.as_ref().and_then(|p| fixed_property(p, root));
        if fixed.is_none()
            && let Some(r) = raw_ref
            && let Some(name) = mapping
                .and_then(|m| m.iter().find(|(_, t)| t.as_str() == Some(r)).map(|(k, _)| k.clone()))
                .or_else(|| ref_name(r))
        {
            let takes_string = declared
                .as_ref()
                .is_none_or(|p| p.get("type").is_none_or(|t| *t == "string"));
            if takes_string {
                let props = v.entry("properties").or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(props) = props {
                    let mut p = match declared {
                        Some(Value::Object(m)) => m,
                        _ => Map::new(),
                    };
                    p.insert("const".into(), Value::String(name));
                    props.insert(tag.to_owned(), Value::Object(p));
                }
            }
        }
        if v.get("properties").and_then(|p| p.get(tag)).is_some() {
            pinned.push(tag.to_owned());
        }
    }
    if let Some(props) = v.get("properties").and_then(Value::as_object) {
        for (k, p) in props {
            if !pinned.contains(k) && fixed_property(p, root).is_some() {
                pinned.push(k.clone());
            }
        }
    }
    if pinned.is_empty() {
        return;
    }
    let required = v.entry("required").or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(r) = required {
        for k in pinned {
            if !r.iter().any(|x| x.as_str() == Some(&k)) {
                r.push(Value::String(k));
            }
        }
    }
}

/// "string", "string (date-time)", "array of integer", "object" (no type but properties).
fn type_label(v: &Map<String, Value>) -> Option<String> {
    let t = match v.get("type") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => type_set(other).join(" | "),
        None if v.contains_key("properties") => "object".into(),
        None => return None,
    };
    if let Some(f) = v.get("format").and_then(Value::as_str) {
        return Some(format!("{t} ({f})"));
    }
    if t == "array"
        && let Some(item) = v.get("items").and_then(|i| i.get("type")).and_then(Value::as_str)
    {
        return Some(format!("array of {item}"));
    }
    Some(t)
}

/// Labels of a chooser's variants, each by what tells it apart from the others, in this
/// order: its `title`, its tag (the discriminator's or another fixed property's value, or
/// its own `const`), its `$ref` name, its type and format, the properties only it has.
/// A label is used only when no other variant would get the same one; what is left gets
/// its type (or "option N"), numbered where equal.
pub(super) fn variant_labels(
    raws: &[&Value],
    variants: &[Map<String, Value>],
    root: &Value,
    tag: Option<&str>,
) -> Vec<String> {
    let n = variants.len();
    let props = |v: &Map<String, Value>| -> Vec<String> {
        v.get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default()
    };
    let titles: Vec<Option<String>> = variants
        .iter()
        .map(|v| v.get("title").and_then(Value::as_str).map(str::to_owned))
        .collect();
    let tags: Vec<Option<String>> = variants
        .iter()
        .map(|v| {
            if let Some(c) = v.get("const") {
                return Some(value_label(c));
            }
            let props = v.get("properties").and_then(Value::as_object)?;
            let by_tag = tag.and_then(|t| props.get(t)).and_then(|p| fixed_property(p, root));
            by_tag
                .or_else(|| props.values().find_map(|p| fixed_property(p, root)))
                .map(|c| value_label(&c))
        })
        .collect();
    let refs: Vec<Option<String>> = raws
        .iter()
        .map(|r| r.get("$ref").and_then(Value::as_str).and_then(ref_name))
        .collect();
    let types: Vec<Option<String>> = variants.iter().map(type_label).collect();
    let own_props: Vec<Option<String>> = (0..n)
        .map(|i| {
            let only: Vec<String> = props(&variants[i])
                .into_iter()
                .filter(|k| (0..n).all(|j| j == i || !props(&variants[j]).contains(k)))
                .collect();
            match only.len() {
                0 => None,
                1..=3 => Some(format!("with {}", only.join(", "))),
                _ => Some(format!("with {}, …", only[..3].join(", "))),
            }
        })
        .collect();
    let mut labels: Vec<Option<String>> = vec![None; n];
    for candidates in [&titles, &tags, &refs, &types, &own_props] {
        for i in 0..n {
            let Some(c) = &candidates[i] else { continue };
            if labels[i].is_some() {
                continue;
            }
            let shared = (0..n).any(|j| j != i && candidates[j].as_ref() == Some(c))
                || labels.iter().any(|l| l.as_ref() == Some(c));
            if !shared {
                labels[i] = Some(c.clone());
            }
        }
    }
    let mut out: Vec<String> = labels
        .into_iter()
        .enumerate()
        .map(|(i, l)| {
            l.or_else(|| types[i].clone())
                .unwrap_or_else(|| format!("option {}", i + 1))
        })
        .collect();
    let names = out.clone();
    for (i, l) in out.iter_mut().enumerate() {
        if names.iter().filter(|x| **x == *l).count() > 1 {
            *l = format!("{l} ({})", i + 1);
        }
    }
    out
}

/// The variant a new chooser starts with: the first, except that a string is the last
/// resort when a boolean is offered (servers taking "boolean or string" mean the boolean;
/// the string is for clients that send "true").
pub(super) fn preferred_variant(variants: &[Map<String, Value>]) -> usize {
    let is = |v: &Map<String, Value>, t: &str| v.get("type").and_then(Value::as_str) == Some(t);
    if variants.first().is_some_and(|v| is(v, "string")) && variants.iter().any(|v| is(v, "boolean")) {
        return variants.iter().position(|v| !is(v, "string")).unwrap_or(0);
    }
    0
}

pub(super) fn multiline_rule(name: &str, m: &Map<String, Value>) -> bool {
    let max = m.get("maxLength").and_then(Value::as_u64);
    if max.is_some_and(|x| x > 200) || m.contains_key("contentMediaType") {
        return true;
    }
    if max.is_some() || m.contains_key("format") || m.contains_key("pattern") {
        return false;
    }
    matches!(
        name.to_ascii_lowercase().as_str(),
        "content"
            | "body"
            | "text"
            | "code"
            | "source"
            | "script"
            | "prompt"
            | "markdown"
            | "html"
            | "sql"
            | "template"
    )
}

#[cfg(test)]
mod tests {
    use crate::schema::form::testing::*;
    use serde_json::{Value, json};

    #[test]
    fn multiline_rule_and_toggle() {
        let f = form(json!({"type":"object","properties":{
            "short":{"type":"string","maxLength":20},
            "long":{"type":"string","maxLength":1000},
            "content":{"type":"string"},
            "email":{"type":"string","format":"email"}
        }}));
        let ml = |p: &str| matches!(field(&f, p).kind, FieldKind::Text { multiline: true, .. });
        assert!(!ml("/short"));
        assert!(ml("/long"));
        assert!(ml("/content"));
        assert!(!ml("/email"));
        let mut g = form(json!({"type":"object","properties":{"s":{"type":"string"}}}));
        g.set_value(&json!({"s": "a\nb"}));
        assert!(matches!(
            g.field_at("/s").unwrap().kind,
            FieldKind::Text { multiline: true, .. }
        ));
    }

    #[test]
    fn ref_defs_pydantic_style() {
        let s = json!({
            "$defs": {
                "Address": {"type":"object","title":"Address","properties":{"street":{"type":"string"},"city":{"type":"string"}},"required":["street","city"]},
                "Color": {"enum":["red","green"],"title":"Color","type":"string"}
            },
            "type":"object",
            "properties":{
                "addr":{"$ref":"#/$defs/Address","description":"Where"},
                "color":{"$ref":"#/$defs/Color","default":"green"}
            },
            "required":["addr"]
        });
        let f = form(s.clone());
        let addr = field(&f, "/addr");
        assert!(matches!(addr.kind, FieldKind::Object { .. }));
        assert_eq!(addr.description.as_deref(), Some("Where"), "sibling annotations win");
        assert_eq!(addr.title.as_deref(), Some("Address"));
        assert!(matches!(
            field(&f, "/color").kind,
            FieldKind::Enum { selected: Some(1), .. }
        ));
        assert_eq!(f.value(), json!({"addr": {"street": "", "city": ""}}));
        roundtrip(s.clone(), json!({"addr": {"street": "a", "city": "b"}, "color": "red"}));
        assert_sample_valid(s);
    }

    #[test]
    fn definitions_and_escaped_pointers() {
        let s = json!({
            "$schema":"http://json-schema.org/draft-07/schema#",
            "definitions": {"a/b": {"type":"integer","minimum":5}, "Pct%": {"type":"number"}},
            "type":"object",
            "properties":{"x":{"$ref":"#/definitions/a~1b"},"y":{"$ref":"#/definitions/Pct%25"}},
            "required":["x","y"]
        });
        let f = form(s.clone());
        assert!(matches!(field(&f, "/x").kind, FieldKind::Integer { .. }));
        assert!(matches!(field(&f, "/y").kind, FieldKind::Number { .. }));
        let v = assert_sample_valid(s);
        assert_eq!(v["x"], json!(5));
    }

    #[test]
    fn recursive_ref_guard() {
        let tree = json!({
            "$defs": {"Node": {"type":"object","properties":{
                "value":{"type":"string"},
                "children":{"type":"array","items":{"$ref":"#/$defs/Node"}},
                "parent":{"anyOf":[{"$ref":"#/$defs/Node"},{"type":"null"}],"default":null}
            },"required":["value"]}},
            "type":"object","properties":{"root":{"$ref":"#/$defs/Node"}},"required":["root"]
        });
        let mut f = form(tree.clone());
        let parent = field(&f, "/root/parent");
        assert!(parent.is_pending() && !parent.set);
        // Expanding on demand works one level at a time.
        f.field_at_mut("/root/parent").unwrap().set_null(false);
        assert!(matches!(field(&f, "/root/parent").kind, FieldKind::Object { .. }));
        assert!(field(&f, "/root/parent/parent").is_pending());
        let v = json!({"root": {"value": "a", "children": [{"value": "b", "children": [{"value": "c"}]}],
            "parent": {"value": "p", "parent": {"value": "pp", "parent": null}}}});
        roundtrip(tree.clone(), v);
        assert_sample_valid(tree);
        // Self-reference through "#" and a required cycle do not hang.
        let list = json!({"type":"object","properties":{"v":{"type":"integer"},"next":{"$ref":"#"}},"required":["v"]});
        roundtrip(list.clone(), json!({"v": 1, "next": {"v": 2, "next": {"v": 3}}}));
        assert_sample_valid(list);
        let cycle = json!({"$defs":{"A":{"type":"object","properties":{"b":{"$ref":"#/$defs/B"}},"required":["b"]},
            "B":{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"required":["a"]}},
            "type":"object","properties":{"a":{"$ref":"#/$defs/A"}}});
        let f = form(cycle);
        let _ = f.value();
        let loop_ref = json!({"$defs":{"A":{"$ref":"#/$defs/B"},"B":{"$ref":"#/$defs/A"}},
            "type":"object","properties":{"x":{"$ref":"#/$defs/A"}}});
        let f = form(loop_ref);
        assert!(field(&f, "/x").kind.is_json());
    }

    #[test]
    fn nullable_unions() {
        let s = json!({"type":"object","properties":{
            "nick":{"anyOf":[{"type":"string"},{"type":"null"}],"default":null,"title":"Nickname"},
            "age":{"type":["integer","null"]},
            "n":{"type":"number","nullable":true}
        },"required":["age"]});
        let mut f = form(s.clone());
        let nick = field(&f, "/nick");
        assert!(nick.nullable && nick.is_null && nick.is_default && !nick.set);
        assert!(matches!(nick.kind, FieldKind::Text { .. }));
        assert_eq!(nick.title.as_deref(), Some("Nickname"));
        let age = field(&f, "/age");
        assert!(age.nullable && matches!(age.kind, FieldKind::Integer { .. }));
        assert!(field(&f, "/n").nullable);
        f.field_at_mut("/age").unwrap().set_null(true);
        assert_eq!(f.value(), json!({"age": null}));
        assert!(f.validate().is_empty());
        roundtrip(s.clone(), json!({"nick": "Bo", "age": 3}));
        roundtrip(s.clone(), json!({"nick": null, "age": null, "n": 1.5}));
        assert_sample_valid(s);
    }

    #[test]
    fn type_array_choice() {
        let s = json!({"type":"object","properties":{"id":{"type":["string","integer"]}},"required":["id"]});
        let mut f = form(s.clone());
        match &field(&f, "/id").kind {
            FieldKind::Choice { labels, .. } => assert_eq!(labels, &["string", "integer"]),
            k => panic!("{k:?}"),
        }
        f.set_value(&json!({"id": 5}));
        assert!(matches!(field(&f, "/id").kind, FieldKind::Choice { selected: 1, .. }));
        assert_eq!(f.value(), json!({"id": 5}));
        roundtrip(s.clone(), json!({"id": "abc"}));
        roundtrip(s.clone(), json!({"id": "5"}));
        assert_sample_valid(s);
    }

    #[test]
    fn any_of_scalars_and_titles() {
        let s = json!({"type":"object","properties":{"v":{"anyOf":[
            {"type":"string","title":"Text"},{"type":"number","title":"Amount"},{"type":"boolean"},{"type":"null"}
        ]}}});
        let mut f = form(s.clone());
        let v = field(&f, "/v");
        assert!(v.nullable);
        match &v.kind {
            FieldKind::Choice { labels, .. } => assert_eq!(labels, &["Text", "Amount", "boolean"]),
            k => panic!("{k:?}"),
        }
        f.set_value(&json!({"v": true}));
        assert!(matches!(field(&f, "/v").kind, FieldKind::Choice { selected: 2, .. }));
        f.set_value(&json!({"v": "12"}));
        assert!(matches!(field(&f, "/v").kind, FieldKind::Choice { selected: 0, .. }));
        f.set_value(&json!({"v": 12}));
        assert!(matches!(field(&f, "/v").kind, FieldKind::Choice { selected: 1, .. }));
        roundtrip(s, json!({"v": null}));
    }

    #[test]
    fn all_of_merged() {
        let s = json!({"$defs":{"Base":{"type":"object","properties":{"id":{"type":"integer","minimum":1}},"required":["id"]}},
            "type":"object","properties":{"item":{"allOf":[
                {"$ref":"#/$defs/Base"},
                {"properties":{"name":{"type":"string","minLength":2}},"required":["name"]},
                {"properties":{"id":{"maximum":9}}}
            ],"description":"merged"}},"required":["item"]});
        let f = form(s.clone());
        let item = field(&f, "/item");
        assert_eq!(item.description.as_deref(), Some("merged"));
        match &item.kind {
            FieldKind::Object { fields, .. } => {
                let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
                assert_eq!(names, ["id", "name"]);
                assert!(fields.iter().all(|f| f.required));
            }
            k => panic!("{k:?}"),
        }
        assert!(
            matches!(&field(&f, "/item/id").kind, FieldKind::Integer { bounds, .. } if bounds.minimum == Some(1.0) && bounds.maximum == Some(9.0))
        );
        assert_sample_valid(s);
        // Conflicting allOf types fall back to JSON.
        let f = form(json!({"type":"object","properties":{"x":{"allOf":[{"type":"string"},{"type":"integer"}]}}}));
        assert!(field(&f, "/x").kind.is_json());
    }

    #[test]
    fn unsupported_schemas_fall_back_to_json() {
        let s = json!({"type":"object","properties":{
            "not":{"not":{"type":"string"}},
            "cond":{"type":"object","if":{"properties":{"a":{"const":1}}},"then":{"required":["b"]}},
            "pat":{"type":"object","patternProperties":{"^x":{"type":"string"}}},
            "never":false,
            "missing":{"$ref":"#/$defs/Nope"},
            "remote":{"$ref":"https://example.com/schema.json"},
            "tuple":{"type":"array","prefixItems":[{"type":"string"}]},
            "any":{},
            "yes":true
        }});
        let mut f = form(s.clone());
        for p in [
            "/not", "/cond", "/pat", "/never", "/missing", "/remote", "/tuple", "/any", "/yes",
        ] {
            assert!(field(&f, p).kind.is_json(), "{p}");
        }
        assert!(
            field(&f, "/missing")
                .note
                .as_deref()
                .unwrap()
                .contains("cannot resolve")
        );
        assert!(!field(&f, "/any").can_use_form());
        // The whole schema cannot be compiled (unresolvable refs): reported, no panic.
        assert!(f.schema_problem().is_some());
        // Parse errors are shown for the field.
        let any = f.field_at_mut("/any").unwrap();
        any.set_enabled(true);
        if let FieldKind::Json { text, .. } = &mut any.kind {
            *text = "{nope".into();
        }
        any.json_edited();
        assert!(matches!(&any.kind, FieldKind::Json { error: Some(_), .. }));
        assert!(
            f.validate()
                .iter()
                .any(|e| e.pointer == "/any" && e.message.contains("invalid JSON"))
        );
        let v = json!({"not": 5, "cond": {"a": 1, "b": 2}, "pat": {"xa": "1"}, "tuple": ["a", 1], "any": [null], "yes": {"k": 1}});
        f.set_value(&v);
        assert_eq!(f.value(), v);
    }

    #[test]
    fn non_object_root_schemas() {
        for s in [json!(false), json!({"type": "string"}), json!(42), json!({"not": {}})] {
            let mut f = form(s.clone());
            assert!(f.schema_problem().is_some(), "{s}");
            assert!(f.root().kind.is_json());
            assert_eq!(f.value(), json!({}));
            f.set_value(&json!({"a": 1}));
            assert_eq!(f.value(), json!({"a": 1}));
        }
        for s in [json!(true), json!({}), json!({"type":"object"})] {
            let mut f = form(s.clone());
            assert!(f.schema_problem().is_none(), "{s}");
            assert!(matches!(f.root().kind, FieldKind::Map { .. }), "{s}");
            assert_eq!(f.value(), json!({}));
            assert!(f.validate().is_empty());
            f.root_mut().add_entry("k");
            set_text(&mut f, "/k", "[1,2]");
            assert_eq!(f.value(), json!({"k": [1, 2]}));
        }
    }

    fn labels(f: &Form, p: &str) -> Vec<String> {
        match &field(f, p).kind {
            FieldKind::Choice { labels, .. } => labels.clone(),
            k => panic!("not a chooser at {p}: {k:?}"),
        }
    }

    /// Issue #17.1: a pydantic discriminated union whose tag is an optional `const` with a
    /// default (the shape of a DynamoDB server's batch operations).
    fn optional_const_discriminator() -> Value {
        json!({
            "$defs": {
                "GetItem": {"title": "GetItem", "type": "object", "properties": {
                    "operation": {"const": "GetItem", "default": "GetItem", "title": "Operation", "type": "string"},
                    "key": {"type": "string"}}, "required": ["key"]},
                "DeleteItem": {"title": "DeleteItem", "type": "object", "properties": {
                    "operation": {"const": "DeleteItem", "default": "DeleteItem", "title": "Operation", "type": "string"},
                    "key": {"type": "string"}}, "required": ["key"]},
                "PutItem": {"title": "PutItem", "type": "object", "properties": {
                    "operation": {"const": "PutItem", "default": "PutItem", "title": "Operation", "type": "string"},
                    "item": {"type": "object", "additionalProperties": {"type": "string"}, "minProperties": 1}},
                    "required": ["item"]}
            },
            "type": "object",
            "properties": {"operations": {"type": "array", "minItems": 1, "items": {
                "discriminator": {"propertyName": "operation", "mapping": {
                    "GetItem": "#/$defs/GetItem", "DeleteItem": "#/$defs/DeleteItem", "PutItem": "#/$defs/PutItem"}},
                "oneOf": [{"$ref": "#/$defs/GetItem"}, {"$ref": "#/$defs/DeleteItem"}, {"$ref": "#/$defs/PutItem"}]
            }}},
            "required": ["operations"]
        })
    }

    #[test]
    fn optional_const_discriminator_is_always_sent() {
        let s = optional_const_discriminator();
        let v = assert_sample_valid(s.clone());
        assert_eq!(v["operations"][0], json!({"operation": "GetItem", "key": "key"}));
        let mut f = form(s.clone());
        f.field_at_mut("/operations").unwrap().add_item();
        assert_eq!(labels(&f, "/operations/0"), ["GetItem", "DeleteItem", "PutItem"]);
        // Every variant, once chosen, carries its tag.
        for (i, tag) in ["GetItem", "DeleteItem", "PutItem"].iter().enumerate() {
            f.field_at_mut("/operations/0").unwrap().choose(i);
            assert_eq!(f.value()["operations"][0]["operation"], *tag, "variant {i}");
            f.fill_sample();
            assert!(f.validate().is_empty(), "{tag}: {} {:?}", f.value(), f.validate());
            assert!(validator_for(&s).unwrap().is_valid(&f.value()), "{}", f.value());
            let tag_field = field(&f, "/operations/0/operation");
            assert!(
                matches!(&tag_field.kind, FieldKind::Const(c) if c == tag),
                "{tag_field:?}"
            );
        }
        // A value without the tag still loads (and stays without it: that is what was sent).
        let mut g = form(s);
        let loaded = json!({"operations": [{"key": "k"}]});
        g.set_value(&loaded);
        assert_eq!(g.value(), loaded);
        assert!(!g.validate().is_empty(), "the tagless value matches two variants");
    }

    #[test]
    fn openapi_discriminator_without_const_gets_the_mapping_key() {
        let pets = |mapping: Option<Value>| {
            let mut d = json!({"propertyName": "petType"});
            if let Some(m) = mapping {
                d["mapping"] = m;
            }
            json!({
                "$defs": {
                    "Cat": {"type": "object", "properties": {"petType": {"type": "string"}, "lives": {"type": "integer"}},
                        "required": ["petType", "lives"]},
                    "Dog": {"type": "object", "properties": {"petType": {"type": "string"}, "bark": {"type": "boolean"}},
                        "required": ["petType", "bark"]}
                },
                "type": "object",
                "properties": {"pet": {"oneOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}], "discriminator": d}},
                "required": ["pet"]
            })
        };
        let with_mapping = pets(Some(json!({"cat": "#/$defs/Cat", "dog": "#/$defs/Dog"})));
        let v = assert_sample_valid(with_mapping.clone());
        assert_eq!(v["pet"]["petType"], "cat");
        let mut f = form(with_mapping);
        assert_eq!(labels(&f, "/pet"), ["cat", "dog"]);
        f.field_at_mut("/pet").unwrap().choose(1);
        assert_eq!(f.value()["pet"], json!({"petType": "dog", "bark": false}));
        // Without a mapping, OpenAPI names the variant by its schema's name.
        let v = assert_sample_valid(pets(None));
        assert_eq!(v["pet"]["petType"], "Cat");
    }

    /// Issue #17.3: each variant is labelled by what tells it apart.
    #[test]
    fn variants_are_labelled_by_what_tells_them_apart() {
        let f = form(json!({
            "$defs": {
                "ByName": {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]},
                "ById": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
            },
            "type": "object",
            "properties": {
                // Two objects differing by one property.
                "narrow": {"anyOf": [
                    {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}},
                    {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "integer"}}}
                ]},
                // Strings told apart by their format; null makes it nullable.
                "when": {"anyOf": [{"type": "string"}, {"type": "string", "format": "date-time"}, {"type": "null"}]},
                // `$ref`s without titles.
                "who": {"oneOf": [{"$ref": "#/$defs/ByName"}, {"$ref": "#/$defs/ById"}]},
                // Notion's parent: keys only one variant has, and a const.
                "parent": {"oneOf": [
                    {"type": "object", "properties": {"page_id": {"type": "string"}}, "required": ["page_id"], "additionalProperties": true},
                    {"type": "object", "properties": {"database_id": {"type": "string"}}, "required": ["database_id"], "additionalProperties": true},
                    {"properties": {"type": {"const": "workspace"}}}
                ]},
                // Titles win; a title two variants share does not tell them apart.
                "titled": {"anyOf": [
                    {"title": "Same", "type": "integer"}, {"title": "Same", "type": "string"}, {"title": "Other", "type": "boolean"}
                ]},
                "lists": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "array", "items": {"type": "integer"}}]},
                // Nothing tells these apart: numbered.
                "twins": {"anyOf": [{"type": "object", "properties": {"a": {"type": "string"}}},
                    {"type": "object", "properties": {"a": {"type": "number"}}}]}
            }
        }));
        assert_eq!(labels(&f, "/narrow"), ["object", "with c"]);
        assert_eq!(labels(&f, "/when"), ["string", "string (date-time)"]);
        assert!(field(&f, "/when").nullable);
        assert_eq!(labels(&f, "/who"), ["ByName", "ById"]);
        assert_eq!(labels(&f, "/parent"), ["with page_id", "with database_id", "workspace"]);
        assert_eq!(labels(&f, "/titled"), ["integer", "string", "Other"]);
        assert_eq!(labels(&f, "/lists"), ["array of string", "array of integer"]);
        assert_eq!(labels(&f, "/twins"), ["object (1)", "object (2)"]);
    }

    /// Issue #17.4: a boolean-or-string starts as the boolean; otherwise the first type.
    #[test]
    fn type_arrays_start_with_the_first_type_and_a_string_last() {
        let s = json!({"type": "object", "properties": {
            "bool_first": {"type": ["boolean", "string"]},
            "string_first": {"type": ["string", "boolean"]},
            "any_of": {"anyOf": [{"type": "string"}, {"type": "boolean"}]},
            "nullable": {"type": ["null", "boolean", "string"]},
            "id": {"type": ["string", "integer"]}
        }, "required": ["bool_first", "string_first", "any_of", "nullable", "id"]});
        let v = assert_sample_valid(s.clone());
        assert_eq!(
            v,
            json!({"bool_first": false, "string_first": false, "any_of": false, "nullable": false, "id": "id"})
        );
        let f = form(s);
        assert!(matches!(
            field(&f, "/string_first").kind,
            FieldKind::Choice { selected: 1, .. }
        ));
        // The person can still pick the string.
        let mut g = f.clone();
        g.field_at_mut("/bool_first").unwrap().choose(1);
        g.fill_sample();
        assert_eq!(g.value()["bool_first"], "bool_first".replace('_', ""));
    }
}
