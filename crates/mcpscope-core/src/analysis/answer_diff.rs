//! A recorded answer against a live one, for `mcpscope verify`: JSON
//! compared structurally (JSON inside strings as JSON), with volatile
//! fields (timestamps, ids, `_meta`) and the user's paths left out.

use super::session_diff::{Outcome, compare_values_labelled};
use serde_json::Value;

/// Member names whose values change from run to run whatever the server
/// does: left out of every comparison unless the user lists their own.
pub const VOLATILE_FIELDS: &[&str] = &[
    "_meta",
    "timestamp",
    "createdAt",
    "updatedAt",
    "lastModified",
    "lastUpdatedAt",
    "expiresAt",
    "requestId",
    "progressToken",
    "sessionId",
    "taskId",
];

/// What a comparison leaves out.
#[derive(Clone, Debug, Default)]
pub struct Ignore {
    /// Member names left out wherever they are (the volatile ones plus the user's).
    pub fields: Vec<String>,
    /// JSON pointers into the result, `*` standing for one segment and
    /// `**` for any number of them (`/content/*/text`, `/**/id`).
    pub pointers: Vec<Vec<String>>,
    /// Numbers this close (absolutely, or relatively to the recorded one)
    /// are the same number.
    pub tolerance: Option<f64>,
}

/// An `--ignore-pointer` that is not a JSON pointer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a JSON pointer (it starts with /)")]
pub struct NotAPointer(pub String);

impl Ignore {
    /// The volatile fields, `extra_fields`, and `pointers` (each checked).
    pub fn new(extra_fields: &[String], pointers: &[String]) -> Result<Self, NotAPointer> {
        let mut fields: Vec<String> = VOLATILE_FIELDS.iter().map(|s| s.to_string()).collect();
        fields.extend(extra_fields.iter().cloned());
        let pointers = pointers
            .iter()
            .map(|p| {
                let Some(rest) = p.strip_prefix('/') else {
                    return Err(NotAPointer(p.clone()));
                };
                Ok(rest
                    .split('/')
                    .map(|s| s.replace("~1", "/").replace("~0", "~"))
                    .collect())
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            fields,
            pointers,
            tolerance: None,
        })
    }

    fn pointer_matches(pattern: &[String], path: &[String]) -> bool {
        match (pattern.first(), path.first()) {
            (None, None) => true,
            (Some(p), _) if p == "**" => {
                Self::pointer_matches(&pattern[1..], path)
                    || (!path.is_empty() && Self::pointer_matches(pattern, &path[1..]))
            }
            (Some(p), Some(s)) if p == "*" || p == s => Self::pointer_matches(&pattern[1..], &path[1..]),
            _ => false,
        }
    }

    fn drops(&self, path: &[String]) -> bool {
        path.last().is_some_and(|k| self.fields.iter().any(|f| f == k))
            || self.pointers.iter().any(|p| Self::pointer_matches(p, path))
    }
}

/// `v` as compared: ignored members gone, strings holding a JSON object or
/// array replaced by what they hold (a tool's text content is often JSON).
pub fn normalise(v: &Value, ignore: &Ignore) -> Value {
    fn walk(v: &Value, ignore: &Ignore, path: &mut Vec<String>) -> Value {
        match v {
            Value::Object(o) => {
                let mut out = serde_json::Map::new();
                for (k, x) in o {
                    path.push(k.clone());
                    if !ignore.drops(path) {
                        out.insert(k.clone(), walk(x, ignore, path));
                    }
                    path.pop();
                }
                Value::Object(out)
            }
            Value::Array(a) => Value::Array(
                a.iter()
                    .enumerate()
                    .filter_map(|(i, x)| {
                        path.push(i.to_string());
                        let kept = (!ignore.drops(path)).then(|| walk(x, ignore, path));
                        path.pop();
                        kept
                    })
                    .collect(),
            ),
            Value::String(s) => {
                let t = s.trim_start();
                if (t.starts_with('{') || t.starts_with('['))
                    && let Ok(inner) = serde_json::from_str::<Value>(s)
                {
                    return walk(&inner, ignore, path);
                }
                v.clone()
            }
            other => other.clone(),
        }
    }
    walk(v, ignore, &mut Vec::new())
}

/// How a live answer differs from the recorded one (empty: the same).
pub fn compare(recorded: &Outcome, live: &Outcome, ignore: &Ignore) -> Vec<String> {
    compare_labelled(recorded, live, ignore, ("the recording", "the server"))
}

/// [`compare`], naming the two sides (`the snapshot`, `the server`).
pub fn compare_labelled(recorded: &Outcome, live: &Outcome, ignore: &Ignore, labels: (&str, &str)) -> Vec<String> {
    let mut out = Vec::new();
    match (recorded, live) {
        (Outcome::Result(a), Outcome::Result(b)) => {
            let a = normalise(a, ignore);
            let mut b = normalise(b, ignore);
            if let Some(t) = ignore.tolerance {
                within_tolerance(&a, &mut b, t);
            }
            compare_values_labelled("result", Some(&a), Some(&b), labels, &mut out)
        }
        (Outcome::Error(a), Outcome::Error(b)) => {
            if a.code != b.code {
                out.push(format!("error code: recorded {}, now {}", a.code, b.code));
            }
            if a.message != b.message {
                out.push(format!("error message: recorded {:?}, now {:?}", a.message, b.message));
            }
        }
        (a, b) => out.push(format!("recorded {}, now {}", kind(a), kind(b))),
    }
    out
}

/// Where `live` holds a number within `tolerance` of the recorded one at
/// the same place, it takes the recorded value, so only real changes remain.
fn within_tolerance(recorded: &Value, live: &mut Value, tolerance: f64) {
    match (recorded, live) {
        (Value::Number(a), live @ Value::Number(_)) => {
            if let (Some(x), Some(y)) = (a.as_f64(), live.as_f64()) {
                let d = (x - y).abs();
                if d <= tolerance || d <= tolerance * x.abs() {
                    *live = recorded.clone();
                }
            }
        }
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b.iter_mut() {
                if let Some(r) = a.get(k) {
                    within_tolerance(r, v, tolerance);
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for (r, v) in a.iter().zip(b.iter_mut()) {
                within_tolerance(r, v, tolerance);
            }
        }
        _ => {}
    }
}

fn kind(o: &Outcome) -> String {
    match o {
        Outcome::Result(_) => "a result".into(),
        Outcome::Error(e) => format!("error {} ({})", e.code, e.message),
        Outcome::MalformedError(v) => format!("a malformed error {v}"),
        Outcome::NoResponse => "no answer".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::message::ErrorObject;
    use serde_json::json;

    #[test]
    fn volatile_fields_pointers_and_json_in_strings() {
        let ignore = Ignore::new(&["seed".into()], &["/content/*/annotations".into(), "/**/etag".into()]).unwrap();
        let a = json!({"content": [{"type": "text", "text": "{\"n\": 1, \"timestamp\": 5}", "annotations": {"x": 1}}],
                       "_meta": {"a": 1}, "seed": 7, "deep": {"etag": "1"}});
        let b = json!({"content": [{"type": "text", "text": "{\"timestamp\": 9,  \"n\": 1}", "annotations": {"x": 2}}],
                       "_meta": {"a": 2}, "seed": 8, "deep": {"etag": "2"}});
        assert!(compare(&Outcome::Result(a.clone()), &Outcome::Result(b), &ignore).is_empty());
        let c = json!({"content": [{"type": "text", "text": "{\"n\": 2}"}]});
        let d = compare(&Outcome::Result(a), &Outcome::Result(c), &ignore);
        assert!(d.iter().any(|l| l.contains("result.content[0].text.n")), "{d:?}");
        assert!(Ignore::new(&[], &["content".into()]).is_err());
    }

    #[test]
    fn numbers_within_the_tolerance_are_the_same() {
        let mut ignore = Ignore::default();
        let a = Outcome::Result(json!({"latency": 100.0, "items": [1, 2.5], "n": 7}));
        let b = Outcome::Result(json!({"latency": 104.0, "items": [1, 2.51], "n": 9}));
        assert_eq!(compare(&a, &b, &ignore).len(), 3);
        ignore.tolerance = Some(0.05);
        let d = compare(&a, &b, &ignore);
        assert_eq!(
            d,
            ["result.n: the recording 7 vs the server 9"],
            "relative: 4 of 100 is within 5 %"
        );
    }

    #[test]
    fn errors_and_kinds() {
        let e = |c, m: &str| {
            Outcome::Error(ErrorObject {
                code: c,
                message: m.into(),
                data: None,
            })
        };
        let ignore = Ignore::default();
        assert!(compare(&e(-32601, "x"), &e(-32601, "x"), &ignore).is_empty());
        assert_eq!(compare(&e(-32601, "x"), &e(-32602, "x"), &ignore).len(), 1);
        let d = compare(&Outcome::Result(json!({})), &e(-32601, "Method not found"), &ignore);
        assert_eq!(d, ["recorded a result, now error -32601 (Method not found)"]);
    }
}
