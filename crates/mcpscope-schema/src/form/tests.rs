//! The form: building, loading, editing and the value it gives, schema by schema.

use super::testing::*;
use super::*;
use serde_json::json;

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

/// Issue #17.2: Notion's `parent`, a oneOf of open objects.
fn notion_parent() -> Value {
    json!({"type": "object", "properties": {"parent": {"oneOf": [
        {"type": "object", "properties": {"page_id": {"type": "string"}, "note": {"type": "string"}},
            "required": ["page_id"], "additionalProperties": true},
        {"type": "object", "properties": {"database_id": {"type": "string"}, "note": {"type": "string"}},
            "required": ["database_id"], "additionalProperties": true},
        {"properties": {"type": {"const": "workspace"}}, "required": ["type"]}
    ]}}, "required": ["parent"]})
}

#[test]
fn switching_variants_keeps_only_what_the_new_variant_declares() {
    let mut f = form(notion_parent());
    assert_eq!(f.value(), json!({"parent": {"page_id": ""}}));
    set_text(&mut f, "/parent/page_id", "p1");
    let note = f.field_at_mut("/parent/note").unwrap();
    note.set_enabled(true);
    set_text(&mut f, "/parent/note", "shared");
    f.field_at_mut("/parent").unwrap().choose(1);
    assert_eq!(
        f.value(),
        json!({"parent": {"database_id": "", "note": "shared"}}),
        "page_id is not carried over, the note both declare is"
    );
    set_text(&mut f, "/parent/database_id", "d1");
    assert!(f.validate().is_empty(), "{:?}", f.validate());
    f.field_at_mut("/parent").unwrap().choose(2);
    assert_eq!(f.value(), json!({"parent": {"type": "workspace"}}));
    assert!(f.validate().is_empty(), "{:?}", f.validate());
    f.field_at_mut("/parent").unwrap().choose(0);
    assert_eq!(f.value(), json!({"parent": {"page_id": ""}}));
    // Extra keys loaded from JSON stay until the person switches.
    let both = json!({"parent": {"page_id": "p", "database_id": "d"}});
    f.set_value(&both);
    assert_eq!(f.value(), both);
    f.field_at_mut("/parent").unwrap().choose(1);
    assert_eq!(f.value(), json!({"parent": {"database_id": "d"}}));
}
