//! What a schema asks for, checked through the forms built from it.

use crate::form::testing::*;
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
