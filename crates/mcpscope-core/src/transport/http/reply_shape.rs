//! Whether a body is the response to a request, read without building the
//! body as a `Value`: every part of it is still checked as `Value` would
//! check it (UTF-8, escapes and lone surrogates, numbers in range, depth),
//! so a body that is not JSON is never taken for an answer; only the id is
//! kept. A whole `Value` of each answer was a tenth of the work of a POST
//! made inline.

use crate::wire::scalars_are;
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::fmt;

/// A JSON value, checked and dropped.
struct Checked;

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(CheckedVisitor)
    }
}

struct CheckedVisitor;

impl<'de> Visitor<'de> for CheckedVisitor {
    type Value = Checked;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("JSON")
    }
    scalars_are!(Checked);
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
        while seq.next_element::<Checked>()?.is_some() {}
        Ok(Checked)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
        while map.next_key::<Checked>()?.is_some() {
            map.next_value::<Checked>()?;
        }
        Ok(Checked)
    }
}

/// A key of a message that matters here.
enum Key {
    Id,
    Answer,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E>(self, k: &str) -> Result<Key, E> {
                Ok(match k {
                    "id" => Key::Id,
                    "result" | "error" => Key::Answer,
                    _ => Key::Other,
                })
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

/// What a message says about the request it answers: its id (the last one,
/// as a `Value` keeps it) and whether it has a result or an error.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Reply {
    pub(super) id: Option<Value>,
    pub(super) answers: bool,
}

/// A body: one message, a batch (an item that is no object is `None`), or
/// another JSON value.
#[derive(Debug, PartialEq)]
pub(super) enum Body {
    One(Reply),
    Batch(Vec<Option<Reply>>),
    Other,
}

/// The body's shape; `None` when it is not JSON.
pub(super) fn read(bytes: &[u8]) -> Option<Body> {
    serde_json::from_slice(bytes).ok()
}

fn reply<'de, A: MapAccess<'de>>(mut map: A) -> Result<Reply, A::Error> {
    let mut r = Reply::default();
    while let Some(key) = map.next_key::<Key>()? {
        match key {
            Key::Id => r.id = Some(map.next_value()?),
            Key::Answer => {
                map.next_value::<Checked>()?;
                r.answers = true;
            }
            Key::Other => {
                map.next_value::<Checked>()?;
            }
        }
    }
    Ok(r)
}

/// An item of a batch.
struct Item(Option<Reply>);

impl<'de> Deserialize<'de> for Item {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ItemVisitor;
        impl<'de> Visitor<'de> for ItemVisitor {
            type Value = Item;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("JSON")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Item, A::Error> {
                reply(map).map(|r| Item(Some(r)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Item, A::Error> {
                CheckedVisitor.visit_seq(seq).map(|_| Item(None))
            }
            scalars_are!(Item(None));
        }
        d.deserialize_any(ItemVisitor)
    }
}

impl<'de> Deserialize<'de> for Body {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct BodyVisitor;
        impl<'de> Visitor<'de> for BodyVisitor {
            type Value = Body;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("JSON")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Body, A::Error> {
                reply(map).map(Body::One)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Body, A::Error> {
                let mut items = Vec::new();
                while let Some(Item(r)) = seq.next_element()? {
                    items.push(r);
                }
                Ok(Body::Batch(items))
            }
            scalars_are!(Body::Other);
        }
        d.deserialize_any(BodyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever `Value` refuses, the shape refuses too, and what it takes,
    /// the shape takes, with the same id.
    #[test]
    fn the_shape_accepts_and_refuses_what_value_does() {
        let bodies: [&[u8]; 22] = [
            br#"{"jsonrpc":"2.0","id":3,"result":{"a":[1,2.5,-3,true,null,"x\n\u00e9"]}}"#,
            br#"{"id":"s","error":{"code":-1,"message":"m"}}"#,
            br#"{"id":4,"id":3,"result":null}"#,
            br#"[{"id":1,"result":{}},2,"x",[],null,{"method":"m"}]"#,
            br#""just a string""#,
            br#"17"#,
            br#"{"id":1,"result":"\ud800"}"#,
            br#"{"id":1,"result":"\ud800\udc00"}"#,
            br#"{"id":1,"result":1e400}"#,
            br#"{"id":1,"result":-1e400}"#,
            br#"{"id":1,"result":{"k":1}} trailing"#,
            br#"{"id":1,"result":{"k":}}"#,
            br#"{"id":1,"result":"tab	inside"}"#,
            b"{\"id\":1,\"result\":\"\xff\"}",
            br#"{"id":1,"\ud800":1,"result":{}}"#,
            br#"{"id":1e400,"result":{}}"#,
            br#"{"id":1,"result":{}}   "#,
            br#"{"id":1,"result":[1,]}"#,
            br#"{"id":1,"result":18446744073709551616}"#,
            br#"{"id":1,"result":"\x"}"#,
            b"",
            br#"{"id":1,"result":{"a":1,"a":2}}"#,
        ];
        let mut taken = 0;
        for b in bodies {
            let value = serde_json::from_slice::<Value>(b).ok();
            let shape = read(b);
            assert_eq!(shape.is_some(), value.is_some(), "{:?}", String::from_utf8_lossy(b));
            taken += usize::from(value.is_some());
        }
        // Both kinds are among them.
        assert_eq!(taken, 10);
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(serde_json::from_str::<Value>(&deep).is_err());
        assert!(read(deep.as_bytes()).is_none(), "the depth limit too");
    }

    #[test]
    fn the_last_id_counts_and_a_batch_keeps_its_items_in_place() {
        assert_eq!(
            read(br#"{"id":4,"id":3,"result":null}"#),
            Some(Body::One(Reply {
                id: Some(Value::from(3)),
                answers: true
            }))
        );
        assert_eq!(
            read(br#"[{"id":1,"error":{}},5]"#),
            Some(Body::Batch(vec![
                Some(Reply {
                    id: Some(Value::from(1)),
                    answers: true
                }),
                None
            ]))
        );
        assert_eq!(read(br#"{"method":"m"}"#), Some(Body::One(Reply::default())));
        assert_eq!(read(b"null"), Some(Body::Other));
    }
}
