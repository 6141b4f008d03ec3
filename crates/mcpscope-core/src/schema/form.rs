//! Forms from JSON Schema: a tool's `inputSchema` becomes a tree of [`Field`]s a person
//! fills in, and the form produces the `arguments` object.
//!
//! Pure logic, no egui (the drawing is `app::form_view`). The schema is analysed once per
//! field: `$ref`s resolved (JSON pointers into the same document only), `allOf` merged,
//! nullable unions (`anyOf: [T, {type: null}]`, `type: [T, "null"]`) turned into a field of
//! type `T` that can be set to null, other `anyOf`/`oneOf`/type arrays into a chooser.
//! What the form cannot express becomes a JSON editor for that field, never a panic.
//!
//! Validation runs the `jsonschema` crate against the ORIGINAL schema (no retriever: a
//! remote `$ref` is a schema problem, never a download), and maps each error to the field
//! by its instance pointer; client-side checks add what the form alone knows (a number
//! field holding "abc", an integer holding 1.5, JSON that does not parse).

use serde_json::{Map, Value};
use std::fmt;
use std::sync::Arc;

/// Nesting deeper than this is not expanded eagerly (optional fields) or becomes JSON.
const MAX_DEPTH: usize = 24;
/// `$ref` → `$ref` → … chains longer than this are treated as cycles.
const MAX_REF_HOPS: usize = 32;
/// A `$ref` already expanded this many times above a required field stops expanding.
const MAX_REQUIRED_RECURSION: usize = 2;

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

/// Where a field's schema lives: the schema at this position plus the document it came
/// from (for `$ref`s) and the `$ref`s being expanded above it (the recursion guard).
/// Used to build fields later: array rows, map entries, chooser variants.
#[derive(Clone, Debug)]
pub struct Template {
    schema: Value,
    root: Arc<Value>,
    stack: Vec<String>,
    depth: usize,
}

impl Template {
    fn child(&self, schema: Value, stack: &[String]) -> Template {
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
    fn from_schema(m: &Map<String, Value>) -> Bounds {
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

fn num_text(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        format!("{}", v as i64)
    } else {
        v.to_string()
    }
}

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

    /// A short name of the kind, e.g. for hints.
    pub fn type_name(&self) -> &'static str {
        match self {
            FieldKind::Text { .. } => "string",
            FieldKind::Number { .. } => "number",
            FieldKind::Integer { .. } => "integer",
            FieldKind::Bool(_) => "boolean",
            FieldKind::Enum { .. } => "enum",
            FieldKind::Const(_) => "const",
            FieldKind::Array { .. } => "array",
            FieldKind::Object { .. } => "object",
            FieldKind::Map { .. } => "map",
            FieldKind::Choice { .. } => "choice",
            FieldKind::Json { .. } => "json",
        }
    }
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
    schema: Map<String, Value>,
    template: Template,
    /// The schema has a form (the field can leave JSON mode).
    form_possible: bool,
    /// The person asked for JSON mode: loading values keeps it.
    pinned_json: bool,
    /// Not expanded yet (recursive `$ref` or too deep); expanded when set.
    pending: bool,
    /// Loaded a value the form could not hold (now JSON).
    misfit: bool,
}

/// The form for one schema: owns the field tree and a compiled validator.
#[derive(Clone)]
pub struct Form {
    schema: Value,
    root: Field,
    validator: Option<Arc<jsonschema::Validator>>,
    problem: Option<String>,
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

/// `parent` + one escaped reference token.
pub fn child_pointer(parent: &str, key: &str) -> String {
    format!("{parent}/{}", key.replace('~', "~0").replace('/', "~1"))
}

fn unescape_token(t: &str) -> String {
    t.replace("~1", "/").replace("~0", "~")
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

    /// Why the form is (partly) a JSON editor or cannot validate, if so.
    /// Includes every top-level optional field that holds its schema default, as
    /// elicitation clients should (SEP-1034: defaults apply to omitted fields).
    pub fn apply_defaults(&mut self) {
        if let FieldKind::Object { fields, .. } = &mut self.root.kind {
            for f in fields.iter_mut().filter(|f| f.is_default && !f.set) {
                f.set_enabled(true);
            }
        }
    }

    pub fn schema_problem(&self) -> Option<&str> {
        self.problem.as_deref()
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

fn pretty(v: &Value) -> String {
    match v {
        Value::Object(m) if m.is_empty() => "{}".into(),
        Value::Array(a) if a.is_empty() => "[]".into(),
        Value::Object(_) | Value::Array(_) => serde_json::to_string_pretty(v).unwrap_or_default(),
        _ => v.to_string(),
    }
}

/// Label of an enum option: strings as they are, anything else as JSON.
pub fn value_label(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Text of a number field holding `v` (integers without ".0").
fn number_value(text: &str) -> Value {
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

fn parses_as_number(text: &str) -> bool {
    matches!(text.trim().parse::<f64>(), Ok(f) if f.is_finite())
}

// ---------------------------------------------------------------------------------------
// Schema analysis

#[derive(Clone, Debug, PartialEq)]
enum Shape {
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
    /// Variant schemas (flattened) and their labels.
    Choice(Vec<(String, Value)>),
}

struct Analysis {
    merged: Map<String, Value>,
    nullable: bool,
    shape: Shape,
    /// `$ref`s expanded at this position.
    refs: Vec<String>,
}

const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "nullable",
    "deprecated",
    "readOnly",
];

fn resolve_ref<'a>(root: &'a Value, r: &str) -> Option<&'a Value> {
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

fn percent_decode(s: &str) -> String {
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
fn flatten(schema: &Value, root: &Value, hops: usize, refs: &mut Vec<String>) -> Result<Map<String, Value>, String> {
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

fn type_set(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a.iter().filter_map(|t| t.as_str().map(str::to_owned)).collect(),
        _ => Vec::new(),
    }
}

/// Merges `b` into `a` as `allOf: [a, b]` would constrain (approximately: the form only
/// needs the shape; validation uses the original schema). Annotations of `b` win.
fn merge(mut a: Map<String, Value>, b: Map<String, Value>) -> Result<Map<String, Value>, String> {
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

fn is_null_schema(m: &Map<String, Value>) -> bool {
    m.get("type").and_then(Value::as_str) == Some("null")
        || m.get("const") == Some(&Value::Null)
        || m.get("enum") == Some(&Value::Array(vec![Value::Null]))
}

fn analyze(schema: &Value, root: &Value) -> Analysis {
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
        for v in &variants {
            match flatten(v, root, 1, &mut refs) {
                Ok(f) if is_null_schema(&f) => nullable = true,
                Ok(f) => options.push(f),
                Err(e) => return unsupported(format!("{key} variant: {e}"), merged, refs),
            }
        }
        let structural: Map<String, Value> = merged
            .iter()
            .filter(|(k, _)| !ANNOTATIONS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        match options.len() {
            0 => {
                merged.insert("const".into(), Value::Null);
            }
            1 => {
                let only = options.remove(0);
                // The outer annotations (title, description, default) win over the variant's.
                merged = match merge(only, merged.clone()) {
                    Ok(m) => m,
                    Err(e) => return unsupported(e, merged, refs),
                };
            }
            _ => {
                let mut labelled = Vec::new();
                for (i, o) in options.into_iter().enumerate() {
                    let label = variant_label(&o, i);
                    let schema = merge(structural.clone(), o.clone()).unwrap_or(o);
                    labelled.push((label, Value::Object(schema)));
                }
                dedupe_labels(&mut labelled);
                return Analysis {
                    merged,
                    nullable,
                    shape: Shape::Choice(labelled),
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
                let mut labelled: Vec<(String, Value)> = ts
                    .into_iter()
                    .map(|t| {
                        let mut m: Map<String, Value> = merged
                            .iter()
                            .filter(|(k, _)| !ANNOTATIONS.contains(&k.as_str()))
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect();
                        m.insert("type".into(), Value::String(t.clone()));
                        (t, Value::Object(m))
                    })
                    .collect();
                dedupe_labels(&mut labelled);
                return Analysis {
                    merged,
                    nullable,
                    shape: Shape::Choice(labelled),
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

fn shape_of(m: &Map<String, Value>) -> Shape {
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

fn variant_label(o: &Map<String, Value>, i: usize) -> String {
    if let Some(t) = o.get("title").and_then(Value::as_str) {
        return t.to_owned();
    }
    if let Some(props) = o.get("properties").and_then(Value::as_object) {
        for (k, p) in props {
            let c = p.get("const").or_else(|| {
                p.get("enum")
                    .and_then(Value::as_array)
                    .filter(|a| a.len() == 1)
                    .map(|a| &a[0])
            });
            if let Some(c) = c {
                let _ = k;
                return value_label(c);
            }
        }
    }
    if let Some(c) = o.get("const") {
        return value_label(c);
    }
    if let Some(t) = o.get("type") {
        return match t {
            Value::String(s) => s.clone(),
            other => type_set(other).join(" | "),
        };
    }
    if o.contains_key("properties") {
        return "object".into();
    }
    format!("option {}", i + 1)
}

fn dedupe_labels(l: &mut [(String, Value)]) {
    let names: Vec<String> = l.iter().map(|(n, _)| n.clone()).collect();
    for (i, (n, _)) in l.iter_mut().enumerate() {
        if names.iter().filter(|x| **x == *n).count() > 1 {
            *n = format!("{n} ({})", i + 1);
        }
    }
}

fn multiline_rule(name: &str, m: &Map<String, Value>) -> bool {
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

// ---------------------------------------------------------------------------------------
// Fields

impl Field {
    fn build(tpl: &Template, name: &str, required: bool, force: bool) -> Field {
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

    fn fresh_kind(&self, a: &Analysis, stack: &[String]) -> FieldKind {
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
                let templates: Vec<Template> = variants.iter().map(|(_, s)| tpl.child(s.clone(), stack)).collect();
                let current = Field::build(&templates[0], &self.name, true, false);
                FieldKind::Choice {
                    labels: variants.iter().map(|(l, _)| l.clone()).collect(),
                    variants: templates,
                    selected: 0,
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

    fn expand(&mut self) {
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

    fn load_kind(&mut self, v: &Value) -> bool {
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
    pub fn to_form_mode(&mut self) -> Result<(), String> {
        if !self.form_possible {
            return Err(self.note.clone().unwrap_or_else(|| "this schema has no form".into()));
        }
        let FieldKind::Json { text, .. } = &self.kind else {
            return Ok(());
        };
        let v: Value = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?
        };
        self.pinned_json = false;
        let saved = self.clone();
        let set = self.set;
        self.load(&v);
        self.set = set;
        if self.kind.is_json() {
            *self = saved;
            self.pinned_json = true;
            return Err("this value does not fit the form".into());
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

    /// Picks variant `i` of a chooser (a fresh field; the old value is kept when it fits).
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
            let mut probe = fresh.clone();
            probe.load(&old);
            if probe.fits_cleanly() && probe.current_value() == old && !old.is_null() {
                fresh = probe;
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

    // --- samples -------------------------------------------------------------------------

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

/// Whether building from `t` expands a `$ref` already being expanded above it.
fn is_recursive(t: &Template) -> bool {
    analyze(&t.schema, &t.root).refs.iter().any(|r| t.stack.contains(r))
}

fn renumber(items: &mut [Field]) {
    for (i, f) in items.iter_mut().enumerate() {
        f.name = i.to_string();
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

/// A string matching a simple regex (literals, classes, `\d \w \s .`, groups with `|`,
/// quantifiers), or `None` for what this tiny generator does not understand.
#[cfg(test)]
fn sample_for_pattern(pattern: &str, seed: usize) -> Option<String> {
    sample_for_pattern_reps(pattern, seed, 1)
}

/// `reps`: how many times `+`/`*`/`{n,}` repeat.
fn sample_for_pattern_reps(pattern: &str, seed: usize, reps: usize) -> Option<String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut pos = 0;
    let g = Gen { seed, reps };
    let out = g.alternation(&chars, &mut pos)?;
    (pos == chars.len()).then_some(out)
}

struct Gen {
    seed: usize,
    reps: usize,
}

impl Gen {
    fn alternation(&self, c: &[char], pos: &mut usize) -> Option<String> {
        let first = self.sequence(c, pos)?;
        while *pos < c.len() && c[*pos] == '|' {
            *pos += 1;
            self.sequence(c, pos)?;
        }
        Some(first)
    }

    fn sequence(&self, c: &[char], pos: &mut usize) -> Option<String> {
        let seed = self.seed;
        let mut out = String::new();
        while *pos < c.len() {
            let ch = c[*pos];
            if ch == '|' || ch == ')' {
                break;
            }
            let atom: String = match ch {
                '^' | '$' => {
                    *pos += 1;
                    continue;
                }
                '(' => {
                    *pos += 1;
                    if c.get(*pos) == Some(&'?') {
                        if c.get(*pos + 1) == Some(&':') {
                            *pos += 2;
                        } else {
                            return None;
                        }
                    }
                    let inner = self.alternation(c, pos)?;
                    if c.get(*pos) != Some(&')') {
                        return None;
                    }
                    *pos += 1;
                    inner
                }
                '[' => {
                    *pos += 1;
                    let negated = c.get(*pos) == Some(&'^');
                    if negated {
                        *pos += 1;
                    }
                    let mut members: Vec<(char, char)> = Vec::new();
                    let mut first = true;
                    while *pos < c.len() && (c[*pos] != ']' || first) {
                        first = false;
                        let mut a = c[*pos];
                        *pos += 1;
                        if a == '\\' {
                            let e = *c.get(*pos)?;
                            *pos += 1;
                            match e {
                                'd' => {
                                    members.push(('0', '9'));
                                    continue;
                                }
                                'w' => {
                                    members.push(('a', 'z'));
                                    members.push(('A', 'Z'));
                                    members.push(('0', '9'));
                                    members.push(('_', '_'));
                                    continue;
                                }
                                's' => {
                                    members.push((' ', ' '));
                                    continue;
                                }
                                _ => a = e,
                            }
                        }
                        if c.get(*pos) == Some(&'-') && c.get(*pos + 1).is_some_and(|x| *x != ']') {
                            let mut b = c[*pos + 1];
                            *pos += 2;
                            if b == '\\' {
                                b = *c.get(*pos)?;
                                *pos += 1;
                            }
                            members.push((a, b));
                        } else {
                            members.push((a, a));
                        }
                    }
                    if c.get(*pos) != Some(&']') {
                        return None;
                    }
                    *pos += 1;
                    let inside = |x: char| members.iter().any(|(a, b)| *a <= x && x <= *b);
                    let pick = if negated {
                        ('a'..='z').chain('0'..='9').find(|x| !inside(*x))?
                    } else {
                        let (a, b) = *members.first()?;
                        let span = (b as u32).saturating_sub(a as u32) + 1;
                        char::from_u32(a as u32 + (seed as u32 % span)).unwrap_or(a)
                    };
                    pick.to_string()
                }
                '\\' => {
                    *pos += 1;
                    let e = *c.get(*pos)?;
                    *pos += 1;
                    match e {
                        'd' => char::from_digit((seed % 10) as u32, 10)?.to_string(),
                        'w' => "a".into(),
                        's' => " ".into(),
                        'D' | 'W' | 'S' | 'b' | 'B' => return None,
                        x if x.is_ascii_alphanumeric() => return None,
                        x => x.to_string(),
                    }
                }
                '.' => {
                    *pos += 1;
                    "a".into()
                }
                '*' | '+' | '?' | '{' => return None,
                other => {
                    *pos += 1;
                    other.to_string()
                }
            };
            // Quantifier.
            let (min, _max) = match c.get(*pos) {
                Some('*') => {
                    *pos += 1;
                    (0, None)
                }
                Some('+') => {
                    *pos += 1;
                    (1, None)
                }
                Some('?') => {
                    *pos += 1;
                    (0, Some(1))
                }
                Some('{') => {
                    let close = c[*pos..].iter().position(|x| *x == '}')? + *pos;
                    let body: String = c[*pos + 1..close].iter().collect();
                    *pos = close + 1;
                    let (a, b) = match body.split_once(',') {
                        Some((a, b)) => (a.trim().parse::<usize>().ok()?, b.trim().parse::<usize>().ok()),
                        None => {
                            let n = body.trim().parse::<usize>().ok()?;
                            (n, Some(n))
                        }
                    };
                    (a, b)
                }
                _ => (1, Some(1)),
            };
            if matches!(c.get(*pos), Some('?') | Some('+')) {
                *pos += 1; // lazy / possessive
            }
            // Open quantifiers repeat `reps` times (at least once for a readable sample).
            let times = match _max {
                None => min.max(self.reps),
                Some(_) => min,
            };
            for _ in 0..times {
                out.push_str(&atom);
            }
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form(s: Value) -> Form {
        Form::from_schema(&s)
    }

    fn pointers(errors: &[FieldError]) -> Vec<&str> {
        errors.iter().map(|e| e.pointer.as_str()).collect()
    }

    fn field<'a>(f: &'a Form, p: &str) -> &'a Field {
        f.field_at(p).unwrap_or_else(|| panic!("no field at {p}"))
    }

    fn set_text(f: &mut Form, p: &str, s: &str) {
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

    fn roundtrip(schema: Value, v: Value) {
        let mut f = form(schema);
        f.set_value(&v);
        assert_eq!(f.value(), v, "round trip");
        // And from a fresh form again, after a sample fill.
        let mut g = f.clone();
        g.fill_sample();
        g.set_value(&v);
        assert_eq!(g.value(), v, "round trip after fill");
    }

    fn assert_sample_valid(schema: Value) -> Value {
        let mut f = form(schema.clone());
        f.fill_sample();
        let errors = f.validate();
        assert!(errors.is_empty(), "{schema}\n{}\n{errors:?}", f.value());
        let v = validator_for(&schema).unwrap();
        assert!(v.is_valid(&f.value()), "{}", f.value());
        f.value()
    }

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
    fn pattern_generator() {
        assert_eq!(sample_for_pattern("^[A-Z]{2,3}$", 0).as_deref(), Some("AA"));
        assert_eq!(sample_for_pattern("^\\d{3}-\\d{2}$", 0).as_deref(), Some("000-00"));
        assert_eq!(sample_for_pattern("^(foo|bar)+$", 0).as_deref(), Some("foo"));
        assert_eq!(sample_for_pattern("^[^0-9]x?$", 0).as_deref(), Some("a"));
        assert_eq!(sample_for_pattern("a\\.b", 0).as_deref(), Some("a.b"));
        assert_eq!(sample_for_pattern("^(?=x)", 0), None);
        assert_eq!(sample_for_pattern("\\p{L}", 0), None);
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
}
