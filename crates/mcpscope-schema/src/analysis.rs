//! What a schema asks for, without building anything: `$ref`s resolved (JSON pointers
//! into the same document only), `allOf` merged, nullable unions (`anyOf: [T, {type:
//! null}]`, `type: [T, "null"]`) folded into "T, may be null", other `anyOf`/`oneOf`/type
//! arrays turned into labelled variants, and the `Shape` a form gives each position.

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
mod tests;
