//! Reading one server entry's fields with every type problem collected.

use super::problems::{ImportProblem, describe};
use serde_json::{Map, Value};

/// Reads one server's fields, collecting every type problem so the user can fix them in one go.
pub(super) struct Fields<'a> {
    server: &'a str,
    entry: &'a Map<String, Value>,
    /// What the reads so far found wrong; the caller skips the server if any.
    pub(super) problems: Vec<ImportProblem>,
}

impl<'a> Fields<'a> {
    pub(super) fn new(server: &'a str, entry: &'a Map<String, Value>) -> Self {
        Fields {
            server,
            entry,
            problems: Vec::new(),
        }
    }

    /// `null` counts as absent: it is how some generators write "not set".
    fn get(&self, key: &str) -> Option<&'a Value> {
        self.entry.get(key).filter(|v| !v.is_null())
    }

    pub(super) fn present(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    fn wrong(&mut self, field: String, expected: &'static str, found: &Value) {
        self.problems.push(ImportProblem::WrongType {
            server: self.server.to_owned(),
            field,
            expected,
            found: describe(found),
        });
    }

    pub(super) fn string(&mut self, key: &str) -> Option<String> {
        match self.get(key)? {
            Value::String(s) => Some(s.clone()),
            other => {
                self.wrong(key.to_owned(), "a string", other);
                None
            }
        }
    }

    pub(super) fn non_empty_string(&mut self, key: &str) -> Option<String> {
        match self.get(key)? {
            Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
            other => {
                self.wrong(key.to_owned(), "a non-empty string", other);
                None
            }
        }
    }

    pub(super) fn string_list(&mut self, key: &str) -> Vec<String> {
        let mut out = Vec::new();
        match self.get(key) {
            None => {}
            Some(Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    match item {
                        Value::String(s) => out.push(s.clone()),
                        other => self.wrong(format!("{key}[{i}]"), "a string", other),
                    }
                }
            }
            Some(other) => self.wrong(key.to_owned(), "an array of strings", other),
        }
        out
    }

    pub(super) fn string_map(&mut self, key: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        match self.get(key) {
            None => {}
            Some(Value::Object(map)) => {
                for (name, value) in map {
                    match value {
                        Value::String(s) => out.push((name.clone(), s.clone())),
                        other => self.wrong(format!("{key}.{name}"), "a string", other),
                    }
                }
            }
            Some(other) => self.wrong(key.to_owned(), "an object of strings (name to value)", other),
        }
        out
    }
}
