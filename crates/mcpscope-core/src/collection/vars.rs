//! `{{name}}` in a test file: a variable of the file or of the environment
//! picked (`--env NAME`), a value captured by an earlier step,
//! `{{env:NAME}}` (a process environment variable) or `{{secret:NAME}}`
//! (the environment variable NAME, else the OS keyring's entry
//! `secret:NAME`). A secret's value is sent where the file puts it and
//! nowhere else: every report and kept capture shows it as
//! `[secret:NAME]` ([`Vars::mask`]).

use serde_json::Value as Json;
use std::collections::BTreeMap;

/// The keyring entry a secret is kept under.
pub fn keyring_entry(name: &str) -> String {
    format!("secret:{name}")
}

/// What `{{…}}` names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reference {
    Var(String),
    Env(String),
    Secret(String),
}

impl Reference {
    fn parse(inner: &str) -> Reference {
        let inner = inner.trim();
        if let Some(n) = inner.strip_prefix("env:") {
            Reference::Env(n.trim().to_owned())
        } else if let Some(n) = inner.strip_prefix("secret:") {
            Reference::Secret(n.trim().to_owned())
        } else {
            Reference::Var(inner.to_owned())
        }
    }
}

/// Every `{{…}}` in `text`, in order; an unclosed `{{` is not one.
pub fn references(text: &str) -> Vec<Reference> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let Some(len) = rest[start + 2..].find("}}") else { break };
        out.push(Reference::parse(&rest[start + 2..start + 2 + len]));
        rest = &rest[start + 2 + len + 2..];
    }
    out
}

/// Every reference in the strings of a JSON value.
pub fn json_references(v: &Json, out: &mut Vec<Reference>) {
    match v {
        Json::String(s) => out.extend(references(s)),
        Json::Array(a) => a.iter().for_each(|x| json_references(x, out)),
        Json::Object(o) => o.values().for_each(|x| json_references(x, out)),
        _ => {}
    }
}

/// Why a value could not be filled in.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VarError {
    #[error("no variable {{{{{name}}}}}{}", known_text(.known))]
    Unknown { name: String, known: Vec<String> },
    #[error("{{{{env:{0}}}}}: the environment variable {0} is not set")]
    NoEnv(String),
    #[error(
        "{{{{secret:{0}}}}}: set the environment variable {0}, or keep it in the keyring with `mcpscope test --store-secret {0}` (it reads the value from standard input){1}"
    )]
    NoSecret(String, String),
}

fn known_text(known: &[String]) -> String {
    if known.is_empty() {
        " (the file defines none: `variables:`, an environment's, or a step's `capture:`)".into()
    } else {
        format!(" (known: {})", known.join(", "))
    }
}

/// An environment variable's value.
pub type VarLookup = Box<dyn Fn(&str) -> Option<String> + Send>;
/// A keyring entry's value, or why the keyring could not be read.
pub type KeyringLookup = Box<dyn Fn(&str) -> Result<Option<String>, String> + Send>;

/// Where `{{env:…}}` and `{{secret:…}}` are looked up (the process's own
/// in use; a test gives its own).
pub struct Lookup {
    pub var: VarLookup,
    pub keyring: KeyringLookup,
}

impl Lookup {
    /// This process's environment and the system keyring.
    pub fn here() -> Lookup {
        Lookup {
            var: Box::new(|n| std::env::var(n).ok()),
            keyring: Box::new(|entry| {
                crate::config::keyring::Keyring::open()
                    .and_then(|k| k.get(entry))
                    .map_err(|e| e.to_string())
            }),
        }
    }
}

/// The values `{{…}}` stands for in one run of a file.
pub struct Vars {
    values: BTreeMap<String, Json>,
    /// (name, value) of every secret filled in so far.
    secrets: Vec<(String, String)>,
    lookup: Lookup,
}

impl Vars {
    pub fn new(lookup: Lookup) -> Vars {
        Vars {
            values: BTreeMap::new(),
            secrets: Vec::new(),
            lookup,
        }
    }

    /// Sets a variable (a later set wins: the file's, then the
    /// environment's, then captures as the steps run).
    pub fn set(&mut self, name: &str, value: Json) {
        self.values.insert(name.to_owned(), value);
    }

    pub fn get(&self, name: &str) -> Option<&Json> {
        self.values.get(name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.values.keys().map(String::as_str)
    }

    fn resolve(&mut self, r: &Reference) -> Result<Json, VarError> {
        match r {
            Reference::Var(name) => self.values.get(name).cloned().ok_or_else(|| VarError::Unknown {
                name: name.clone(),
                known: self.values.keys().cloned().collect(),
            }),
            Reference::Env(name) => (self.lookup.var)(name)
                .map(Json::String)
                .ok_or_else(|| VarError::NoEnv(name.clone())),
            Reference::Secret(name) => {
                let value = match (self.lookup.var)(name).filter(|v| !v.is_empty()) {
                    Some(v) => v,
                    None => match (self.lookup.keyring)(&keyring_entry(name)) {
                        Ok(Some(v)) if !v.is_empty() => v,
                        Ok(_) => return Err(VarError::NoSecret(name.clone(), String::new())),
                        Err(e) => return Err(VarError::NoSecret(name.clone(), format!(" (the keyring: {e})"))),
                    },
                };
                if !self.secrets.iter().any(|(n, _)| n == name) {
                    self.secrets.push((name.clone(), value.clone()));
                }
                Ok(Json::String(value))
            }
        }
    }

    /// `text` with each `{{…}}` filled in; a text that is one reference and
    /// nothing else becomes the value itself (a captured number stays a
    /// number, an object an object).
    pub fn fill(&mut self, text: &str) -> Result<Json, VarError> {
        if let Some(inner) = text.strip_prefix("{{").and_then(|t| t.strip_suffix("}}"))
            && !inner.contains("{{")
            && !inner.contains("}}")
        {
            return self.resolve(&Reference::parse(inner));
        }
        Ok(Json::String(self.fill_text(text)?))
    }

    /// `text` with each `{{…}}` filled in, as text.
    pub fn fill_text(&mut self, text: &str) -> Result<String, VarError> {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find("{{") {
            let Some(len) = rest[start + 2..].find("}}") else { break };
            out.push_str(&rest[..start]);
            match self.resolve(&Reference::parse(&rest[start + 2..start + 2 + len]))? {
                Json::String(s) => out.push_str(&s),
                other => out.push_str(&other.to_string()),
            }
            rest = &rest[start + 2 + len + 2..];
        }
        out.push_str(rest);
        Ok(out)
    }

    /// Every string in `v` filled in.
    pub fn fill_json(&mut self, v: &Json) -> Result<Json, VarError> {
        Ok(match v {
            Json::String(s) => self.fill(s)?,
            Json::Array(a) => Json::Array(a.iter().map(|x| self.fill_json(x)).collect::<Result<_, _>>()?),
            Json::Object(o) => Json::Object(
                o.iter()
                    .map(|(k, x)| Ok((k.clone(), self.fill_json(x)?)))
                    .collect::<Result<_, VarError>>()?,
            ),
            other => other.clone(),
        })
    }

    /// `text` with every secret filled in so far shown as `[secret:NAME]`
    /// (as written, and as JSON escapes it inside a string).
    pub fn mask(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (name, value) in &self.secrets {
            let shown = format!("[secret:{name}]");
            out = out.replace(value.as_str(), &shown);
            let escaped = Json::String(value.clone()).to_string();
            let escaped = &escaped[1..escaped.len() - 1];
            if escaped != value {
                out = out.replace(escaped, &shown);
            }
        }
        out
    }

    /// [`Vars::mask`] over every string of a JSON value.
    pub fn mask_json(&self, v: &Json) -> Json {
        match v {
            Json::String(s) => Json::String(self.mask(s)),
            Json::Array(a) => Json::Array(a.iter().map(|x| self.mask_json(x)).collect()),
            Json::Object(o) => Json::Object(o.iter().map(|(k, x)| (k.clone(), self.mask_json(x))).collect()),
            other => other.clone(),
        }
    }

    pub fn has_secrets(&self) -> bool {
        !self.secrets.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vars(env: &'static [(&'static str, &'static str)], keyring: Option<&'static str>) -> Vars {
        Vars::new(Lookup {
            var: Box::new(move |n| env.iter().find(|(k, _)| *k == n).map(|(_, v)| (*v).to_owned())),
            keyring: Box::new(move |entry| match keyring {
                Some(v) if entry == "secret:FROM_RING" => Ok(Some(v.to_owned())),
                Some(_) => Ok(None),
                None => Err("no keyring here".into()),
            }),
        })
    }

    #[test]
    fn references_are_filled_and_one_alone_keeps_its_type() {
        let mut v = vars(&[("HOME_CITY", "Lyon")], Some("x"));
        v.set("city", json!("Paris"));
        v.set("id", json!(42));
        v.set("obj", json!({"a": [1]}));
        assert_eq!(v.fill("{{id}}").unwrap(), json!(42));
        assert_eq!(v.fill("{{ obj }}").unwrap(), json!({"a": [1]}));
        assert_eq!(v.fill("in {{city}} #{{id}}").unwrap(), json!("in Paris #42"));
        assert_eq!(v.fill("{{id}}{{city}}").unwrap(), json!("42Paris"));
        assert_eq!(v.fill("{{env:HOME_CITY}}").unwrap(), json!("Lyon"));
        assert_eq!(v.fill("open {{ no close").unwrap(), json!("open {{ no close"));
        assert_eq!(
            v.fill_json(&json!({"q": ["{{city}}", 1, {"n": "{{id}}"}]})).unwrap(),
            json!({"q": ["Paris", 1, {"n": 42}]})
        );
        let e = v.fill("{{cty}}").unwrap_err();
        assert_eq!(e.to_string(), "no variable {{cty}} (known: city, id, obj)");
        assert!(matches!(v.fill("{{env:NOPE}}"), Err(VarError::NoEnv(_))));
        assert_eq!(
            references("a {{x}} b {{secret:T}} {{env:E}}"),
            vec![
                Reference::Var("x".into()),
                Reference::Secret("T".into()),
                Reference::Env("E".into())
            ]
        );
    }

    #[test]
    fn secrets_come_from_the_environment_or_the_keyring_and_are_masked() {
        let mut v = vars(&[("TOKEN", "tok\"en-123")], Some("ring-value-9"));
        assert!(!v.has_secrets());
        assert_eq!(v.fill("Bearer {{secret:TOKEN}}").unwrap(), json!("Bearer tok\"en-123"));
        assert_eq!(v.fill("{{secret:FROM_RING}}").unwrap(), json!("ring-value-9"));
        let line = json!({"a": "Bearer tok\"en-123", "b": "ring-value-9"}).to_string();
        let masked = v.mask(&line);
        assert!(
            !masked.contains("en-123") && !masked.contains("ring-value-9"),
            "{masked}"
        );
        assert!(masked.contains("Bearer [secret:TOKEN]"), "{masked}");
        assert_eq!(v.mask_json(&json!(["x tok\"en-123"])), json!(["x [secret:TOKEN]"]));
        let e = v.fill("{{secret:MISSING}}").unwrap_err().to_string();
        assert!(e.contains("--store-secret MISSING"), "{e}");
        let mut no_ring = vars(&[], None);
        let e = no_ring.fill("{{secret:X}}").unwrap_err().to_string();
        assert!(e.contains("the keyring: no keyring here"), "{e}");
    }
}
