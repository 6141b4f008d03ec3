//! Reading a path out of a JSON text without building the whole tree: each
//! level is scanned once, members are borrowed as raw text, and only the
//! values a filter compares are decoded.

use super::ast::Segment;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

/// A value a filter compares.
#[derive(Clone, Debug, PartialEq)]
pub enum V<'a> {
    Null,
    Bool(bool),
    Num(f64),
    Str(Cow<'a, str>),
    /// An object or array, as its JSON text.
    Container(&'a str),
}

impl<'a> V<'a> {
    /// The JSON text of a value.
    pub fn from_raw(raw: &'a str) -> Option<V<'a>> {
        let t = raw.trim_start();
        Some(match t.as_bytes().first()? {
            b'"' => V::Str(serde_json::from_str::<Cow<'a, str>>(t).ok()?),
            b'{' | b'[' => V::Container(t),
            b't' => V::Bool(true),
            b'f' => V::Bool(false),
            b'n' => V::Null,
            _ => V::Num(t.trim_end().parse::<f64>().ok()?),
        })
    }

    pub fn as_text(&self) -> Option<&str> {
        match self {
            V::Str(s) => Some(s),
            V::Container(s) => Some(s),
            _ => None,
        }
    }
}

/// Calls `f` with every value at `path` in the JSON text `doc` (several
/// with `[*]`); stops early when `f` returns true, and says whether it did.
/// `bind` fixes a `[*]` at a given depth to one index (inside `any`/`all`).
pub fn each<'a>(doc: &'a str, path: &[Segment], bind: &[(usize, usize)], f: &mut dyn FnMut(&'a str) -> bool) -> bool {
    walk(doc, path, 0, bind, f)
}

fn walk<'a>(
    doc: &'a str,
    path: &[Segment],
    depth: usize,
    bind: &[(usize, usize)],
    f: &mut dyn FnMut(&'a str) -> bool,
) -> bool {
    let Some(seg) = path.first() else {
        return f(doc);
    };
    let rest = &path[1..];
    match seg {
        Segment::Key(k) => member(doc, k).is_some_and(|v| walk(v, rest, depth + 1, bind, f)),
        Segment::Index(i) => element(doc, *i).is_some_and(|v| walk(v, rest, depth + 1, bind, f)),
        Segment::Each => {
            if let Some(&(_, i)) = bind.iter().find(|(d, _)| *d == depth) {
                return element(doc, i as i64).is_some_and(|v| walk(v, rest, depth + 1, bind, f));
            }
            let mut hit = false;
            elements(doc, &mut |v| {
                hit = walk(v, rest, depth + 1, bind, f);
                hit
            });
            hit
        }
    }
}

/// How many elements the array at `path` has (None: not an array).
pub fn array_len(doc: &str, path: &[Segment], bind: &[(usize, usize)]) -> Option<usize> {
    let mut n = None;
    each(doc, path, bind, &mut |v| {
        n = container_len(v).filter(|_| v.trim_start().starts_with('['));
        true
    });
    n
}

/// Elements of an array, or members of an object.
pub fn container_len(raw: &str) -> Option<usize> {
    let t = raw.trim_start();
    match t.as_bytes().first()? {
        b'[' => {
            let mut n = 0;
            elements(t, &mut |_| {
                n += 1;
                false
            })
            .then_some(n)
        }
        b'{' => {
            let mut n = 0;
            let mut de = serde_json::Deserializer::from_str(t);
            de.deserialize_map(MemberVisitor {
                want: None,
                on_member: &mut |_| n += 1,
            })
            .ok()?;
            Some(n)
        }
        _ => None,
    }
}

/// The value of member `key` of the object `doc` (the last one, as
/// `JSON.parse` keeps, when a key is repeated).
pub fn member<'a>(doc: &'a str, key: &str) -> Option<&'a str> {
    let t = doc.trim_start();
    if !t.starts_with('{') {
        return None;
    }
    let mut found = None;
    let mut de = serde_json::Deserializer::from_str(t);
    de.deserialize_map(MemberVisitor {
        want: Some(key),
        on_member: &mut |v| found = Some(v),
    })
    .ok()?;
    found
}

fn element(doc: &str, i: i64) -> Option<&str> {
    if i >= 0 {
        let mut at = 0i64;
        let mut found = None;
        elements(doc, &mut |v| {
            if at == i {
                found = Some(v);
                return true;
            }
            at += 1;
            false
        });
        found
    } else {
        let mut all = Vec::new();
        elements(doc, &mut |v| {
            all.push(v);
            false
        });
        let n = all.len() as i64;
        (n + i >= 0).then(|| all[(n + i) as usize])
    }
}

/// Calls `f` with each element of the array `doc` until it returns true;
/// false when `doc` is not an array.
fn elements<'a>(doc: &'a str, f: &mut dyn FnMut(&'a str) -> bool) -> bool {
    let t = doc.trim_start();
    if !t.starts_with('[') {
        return false;
    }
    let mut de = serde_json::Deserializer::from_str(t);
    // An early stop leaves the rest unread: the error that follows is ours.
    let _ = de.deserialize_seq(ElementVisitor { on_element: f });
    true
}

struct MemberVisitor<'k, 'f, 'a> {
    want: Option<&'k str>,
    on_member: &'f mut dyn FnMut(&'a str),
}

impl<'de, 'k, 'f> Visitor<'de> for MemberVisitor<'k, 'f, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            let value: &'de RawValue = map.next_value()?;
            if self.want.is_none_or(|w| w == key) {
                (self.on_member)(value.get());
            }
        }
        Ok(())
    }
}

struct ElementVisitor<'f, 'a> {
    on_element: &'f mut dyn FnMut(&'a str) -> bool,
}

impl<'de, 'f> Visitor<'de> for ElementVisitor<'f, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(v) = seq.next_element_seed(Borrowed)? {
            if (self.on_element)(v.get()) {
                return Err(de::Error::custom(StopText));
            }
        }
        Ok(())
    }
}

struct StopText;

impl fmt::Display for StopText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("stopped")
    }
}

struct Borrowed;

impl<'de> DeserializeSeed<'de> for Borrowed {
    type Value = &'de RawValue;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        <&'de RawValue as serde::Deserialize>::deserialize(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(doc: &str, path: &[Segment]) -> Vec<String> {
        let mut out = Vec::new();
        each(doc, path, &[], &mut |v| {
            out.push(v.to_owned());
            false
        });
        out
    }

    fn k(s: &str) -> Segment {
        Segment::Key(s.into())
    }

    #[test]
    fn paths_keys_indexes_and_wildcards() {
        let doc = r#"{"result":{"tools":[{"name":"a","x":1},{"name":"b"},{"name":"c\"d"}]},"id":7}"#;
        assert_eq!(values(doc, &[k("id")]), ["7"]);
        assert_eq!(
            values(doc, &[k("result"), k("tools"), Segment::Index(1), k("name")]),
            ["\"b\""]
        );
        assert_eq!(
            values(doc, &[k("result"), k("tools"), Segment::Index(-1), k("name")]),
            [r#""c\"d""#]
        );
        assert_eq!(
            values(doc, &[k("result"), k("tools"), Segment::Each, k("name")]),
            ["\"a\"", "\"b\"", r#""c\"d""#]
        );
        assert!(values(doc, &[k("result"), k("tools"), Segment::Index(3)]).is_empty());
        assert!(values(doc, &[k("nope")]).is_empty());
        assert!(values("not json", &[k("a")]).is_empty());
        assert_eq!(array_len(doc, &[k("result"), k("tools")], &[]), Some(3));
        assert_eq!(container_len(r#"{"a":1,"b":[2]}"#), Some(2));
        // A bound [*] reads one element.
        let mut got = Vec::new();
        each(
            doc,
            &[k("result"), k("tools"), Segment::Each, k("name")],
            &[(2, 2)],
            &mut |v| {
                got.push(v.to_owned());
                false
            },
        );
        assert_eq!(got, [r#""c\"d""#]);
    }

    #[test]
    fn a_repeated_key_reads_its_last_value_and_escaped_keys_match() {
        assert_eq!(member(r#"{"a":1,"a":2}"#, "a"), Some("2"));
        assert_eq!(member(r#"{"\u0061b":3}"#, "ab"), Some("3"));
    }

    #[test]
    fn leaves_decode_to_values() {
        assert_eq!(V::from_raw(r#""x\ny""#), Some(V::Str("x\ny".into())));
        assert_eq!(V::from_raw("-1.5e2"), Some(V::Num(-150.0)));
        assert_eq!(V::from_raw("true"), Some(V::Bool(true)));
        assert_eq!(V::from_raw("null"), Some(V::Null));
        assert_eq!(V::from_raw("[1]"), Some(V::Container("[1]")));
    }
}
