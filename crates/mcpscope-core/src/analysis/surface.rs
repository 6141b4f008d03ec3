//! A server's surface (its capabilities and its tool, prompt, resource and
//! template lists) and how two of them differ, each change classed as
//! breaking (a client written against the old surface may fail) or
//! compatible: `mcpscope verify --surface`, the "did my server drift" gate.

use super::session_diff::{Exchange, Outcome};
use crate::protocol::methods;
use serde_json::Value;
use std::collections::BTreeMap;

/// What a server offers, by list and by name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Surface {
    pub capabilities: Option<Value>,
    /// list name (`tools`, …) → item name → the item.
    pub lists: BTreeMap<&'static str, BTreeMap<String, Value>>,
}

/// The lists a surface holds: (list name, method, the result's array, the key naming an item).
pub const LISTS: [(&str, &str, &str, &str); 4] = [
    ("tools", methods::TOOLS_LIST, "tools", "name"),
    ("prompts", methods::PROMPTS_LIST, "prompts", "name"),
    ("resources", methods::RESOURCES_LIST, "resources", "uri"),
    (
        "resource templates",
        methods::RESOURCES_TEMPLATES_LIST,
        "resourceTemplates",
        "uriTemplate",
    ),
];

impl Surface {
    /// The surface a recorded session shows: the last handshake's (or
    /// discovery's) capabilities, and every page of each list it fetched
    /// (the last complete fetch of a list wins).
    pub fn from_exchanges(exchanges: &[Exchange]) -> Surface {
        let mut s = Surface::default();
        let mut pages: BTreeMap<&'static str, Vec<Value>> = BTreeMap::new();
        for x in exchanges {
            let Outcome::Result(result) = &x.outcome else { continue };
            if x.method == methods::INITIALIZE || x.method == methods::SERVER_DISCOVER {
                s.capabilities = result.get("capabilities").cloned();
                continue;
            }
            let Some(&(list, _, key, _)) = LISTS.iter().find(|(_, m, _, _)| *m == x.method) else {
                continue;
            };
            let first_page = x.params.as_ref().and_then(|p| p.get("cursor")).is_none();
            let items = result.get(key).and_then(Value::as_array).cloned().unwrap_or_default();
            let pages = pages.entry(list).or_default();
            if first_page {
                pages.clear();
            }
            pages.extend(items);
        }
        for (list, items) in pages {
            s.set(list, items);
        }
        s
    }

    /// Puts a whole list in (every page of it).
    pub fn set(&mut self, list: &'static str, items: Vec<Value>) {
        let Some(&(_, _, _, name_key)) = LISTS.iter().find(|(l, _, _, _)| *l == list) else {
            return;
        };
        let by_name = items
            .into_iter()
            .filter_map(|i| Some((i.get(name_key)?.as_str()?.to_owned(), i)))
            .collect();
        self.lists.insert(list, by_name);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Impact {
    /// A client written against the old surface may fail.
    Breaking,
    Compatible,
}

impl Impact {
    pub fn as_str(self) -> &'static str {
        match self {
            Impact::Breaking => "breaking",
            Impact::Compatible => "compatible",
        }
    }
}

/// One difference between two surfaces.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub impact: Impact,
    /// `tool add_numbers`, `capability resources.subscribe`.
    pub subject: String,
    pub what: String,
}

/// Everything that changed from `old` (the recording) to `new` (the live
/// server), breaking changes first. Lists the recording never fetched are
/// not compared (nothing is known of them).
pub fn compare(old: &Surface, new: &Surface) -> Vec<Change> {
    let mut out = Vec::new();
    if let (Some(a), Some(b)) = (&old.capabilities, &new.capabilities) {
        compare_capabilities("", a, b, &mut out);
    }
    for (list, before) in &old.lists {
        let Some(after) = new.lists.get(list) else {
            out.push(Change {
                impact: Impact::Breaking,
                subject: (*list).to_owned(),
                what: "the live server did not list them".into(),
            });
            continue;
        };
        let kind = singular(list);
        for (name, a) in before {
            let subject = format!("{kind} {name}");
            match after.get(name) {
                None => out.push(Change {
                    impact: Impact::Breaking,
                    subject,
                    what: "removed".into(),
                }),
                Some(b) => compare_item(list, &subject, a, b, &mut out),
            }
        }
        for name in after.keys().filter(|n| !before.contains_key(*n)) {
            out.push(Change {
                impact: Impact::Compatible,
                subject: format!("{kind} {name}"),
                what: "added".into(),
            });
        }
    }
    out.sort_by_key(|c| c.impact);
    out
}

fn singular(list: &str) -> &str {
    match list {
        "tools" => "tool",
        "prompts" => "prompt",
        "resources" => "resource",
        _ => "resource template",
    }
}

fn compare_capabilities(path: &str, a: &Value, b: &Value, out: &mut Vec<Change>) {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return;
    };
    for (k, va) in a {
        let p = if path.is_empty() {
            k.clone()
        } else {
            format!("{path}.{k}")
        };
        match b.get(k) {
            None | Some(Value::Null) if !va.is_null() => out.push(Change {
                impact: Impact::Breaking,
                subject: format!("capability {p}"),
                what: "no longer advertised".into(),
            }),
            Some(vb) if va.is_object() => compare_capabilities(&p, va, vb, out),
            Some(vb) if va == &Value::Bool(true) && vb != &Value::Bool(true) => out.push(Change {
                impact: Impact::Breaking,
                subject: format!("capability {p}"),
                what: format!("was true, now {vb}"),
            }),
            _ => {}
        }
    }
    for (k, vb) in b {
        if !a.contains_key(k) && !vb.is_null() {
            let p = if path.is_empty() {
                k.clone()
            } else {
                format!("{path}.{k}")
            };
            out.push(Change {
                impact: Impact::Compatible,
                subject: format!("capability {p}"),
                what: "newly advertised".into(),
            });
        }
    }
}

fn compare_item(list: &str, subject: &str, a: &Value, b: &Value, out: &mut Vec<Change>) {
    if a == b {
        return;
    }
    let mut push = |impact, what: String| {
        out.push(Change {
            impact,
            subject: subject.to_owned(),
            what,
        })
    };
    match list {
        "tools" => {
            for key in ["inputSchema", "outputSchema"] {
                compare_schema(key, a.get(key), b.get(key), key == "outputSchema", &mut push);
            }
        }
        "prompts" => compare_arguments(a.get("arguments"), b.get("arguments"), &mut push),
        _ => {
            if a.get("mimeType") != b.get("mimeType") {
                push(
                    Impact::Breaking,
                    format!("mimeType {} → {}", show(a.get("mimeType")), show(b.get("mimeType"))),
                );
            }
        }
    }
    // What remains is wording and hints: nothing a call depends on.
    for key in ["title", "description", "annotations", "icons", "_meta"] {
        if a.get(key) != b.get(key) {
            push(Impact::Compatible, format!("{key} changed"));
        }
    }
}

fn show(v: Option<&Value>) -> String {
    v.map_or_else(|| "(none)".to_owned(), Value::to_string)
}

/// A tool's schema: a property removed or retyped, a property newly
/// required, a type changed: breaking; a new optional property: compatible.
/// For an output schema the directions turn around where they matter (a new
/// required output field is fine, a field no longer promised is not).
fn compare_schema(
    name: &str,
    a: Option<&Value>,
    b: Option<&Value>,
    output: bool,
    push: &mut impl FnMut(Impact, String),
) {
    let (Some(a), Some(b)) = (a, b) else {
        match (a, b) {
            (Some(_), None) => push(Impact::Breaking, format!("{name} removed")),
            (None, Some(_)) if !output => push(Impact::Breaking, format!("{name} added")),
            (None, Some(_)) => push(Impact::Compatible, format!("{name} added")),
            _ => {}
        }
        return;
    };
    if a == b {
        return;
    }
    if a.get("type") != b.get("type") {
        push(
            Impact::Breaking,
            format!("{name} type {} → {}", show(a.get("type")), show(b.get("type"))),
        );
    }
    let props = |s: &Value| {
        s.get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let required = |s: &Value| -> Vec<String> {
        s.get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect())
            .unwrap_or_default()
    };
    let (pa, pb) = (props(a), props(b));
    let (ra, rb) = (required(a), required(b));
    for (p, sa) in &pa {
        match pb.get(p) {
            None => push(Impact::Breaking, format!("{name}: property {p} removed")),
            Some(sb) if sa.get("type") != sb.get("type") => push(
                Impact::Breaking,
                format!(
                    "{name}: property {p} type {} → {}",
                    show(sa.get("type")),
                    show(sb.get("type"))
                ),
            ),
            Some(sb)
                if without_default(sa) != without_default(sb) || (sa != sb && ra.contains(p) == rb.contains(p)) =>
            {
                // A default comes and goes with requiredness: said below, not twice.
                push(Impact::Compatible, format!("{name}: property {p} changed"))
            }
            _ => {}
        }
    }
    for p in pb.keys().filter(|p| !pa.contains_key(*p)) {
        let impact = if rb.contains(p) && !output {
            Impact::Breaking
        } else {
            Impact::Compatible
        };
        let how = if rb.contains(p) { "required" } else { "optional" };
        push(impact, format!("{name}: property {p} added ({how})"));
    }
    for p in rb.iter().filter(|p| !ra.contains(p) && pa.contains_key(*p)) {
        let impact = if output { Impact::Compatible } else { Impact::Breaking };
        push(impact, format!("{name}: property {p} became required"));
    }
    for p in ra.iter().filter(|p| !rb.contains(p) && pb.contains_key(*p)) {
        let impact = if output { Impact::Breaking } else { Impact::Compatible };
        push(impact, format!("{name}: property {p} became optional"));
    }
}

fn without_default(schema: &Value) -> Value {
    let mut s = schema.clone();
    if let Some(o) = s.as_object_mut() {
        o.remove("default");
    }
    s
}

/// A prompt's arguments: one removed or newly required: breaking; a new
/// optional one: compatible.
fn compare_arguments(a: Option<&Value>, b: Option<&Value>, push: &mut impl FnMut(Impact, String)) {
    let args = |v: Option<&Value>| -> BTreeMap<String, bool> {
        v.and_then(Value::as_array)
            .map(|arr| {
                arr.iter()
                    .filter_map(|x| {
                        let name = x.get("name")?.as_str()?.to_owned();
                        Some((name, x.get("required") == Some(&Value::Bool(true))))
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let (aa, ab) = (args(a), args(b));
    for (n, req) in &aa {
        match ab.get(n) {
            None => push(Impact::Breaking, format!("argument {n} removed")),
            Some(true) if !req => push(Impact::Breaking, format!("argument {n} became required")),
            Some(false) if *req => push(Impact::Compatible, format!("argument {n} became optional")),
            _ => {}
        }
    }
    for (n, req) in ab.iter().filter(|(n, _)| !aa.contains_key(*n)) {
        let impact = if *req { Impact::Breaking } else { Impact::Compatible };
        let how = if *req { "required" } else { "optional" };
        push(impact, format!("argument {n} added ({how})"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn surface(caps: Value, tools: Value) -> Surface {
        let mut s = Surface {
            capabilities: Some(caps),
            ..Surface::default()
        };
        s.set("tools", tools.as_array().unwrap().clone());
        s
    }

    fn tool(name: &str, desc: &str, props: Value, required: Value) -> Value {
        json!({"name": name, "description": desc,
               "inputSchema": {"type": "object", "properties": props, "required": required}})
    }

    #[test]
    fn the_four_changes_a_release_can_make_are_told_apart() {
        let old = surface(
            json!({"tools": {"listChanged": true}, "logging": {}}),
            json!([
                tool(
                    "echo",
                    "Echo it",
                    json!({"message": {"type": "string"}, "loud": {"type": "boolean"}}),
                    json!(["message"])
                ),
                tool(
                    "add",
                    "Add",
                    json!({"a": {"type": "number"}, "b": {"type": "number"}}),
                    json!(["a", "b"])
                ),
                tool("gone", "Bye", json!({}), json!([])),
            ]),
        );
        let new = surface(
            json!({"tools": {}, "prompts": {}}),
            json!([
                tool(
                    "echo",
                    "Echoes it back",
                    json!({"message": {"type": "string"}, "loud": {"type": "boolean"}}),
                    json!(["message", "loud"])
                ),
                tool(
                    "add",
                    "Add",
                    json!({"a": {"type": "number"}, "b": {"type": "string"}, "c": {"type": "number"}}),
                    json!(["a", "b"])
                ),
                tool("fresh", "Hi", json!({}), json!([])),
            ]),
        );
        let changes: Vec<(Impact, String, String)> = compare(&old, &new)
            .into_iter()
            .map(|c| (c.impact, c.subject, c.what))
            .collect();
        let has = |impact, subject: &str, what: &str| {
            changes
                .iter()
                .any(|(i, s, w)| *i == impact && s == subject && w.contains(what))
        };
        assert!(
            has(Impact::Breaking, "capability tools.listChanged", "no longer advertised"),
            "{changes:?}"
        );
        assert!(has(Impact::Breaking, "capability logging", "no longer advertised"));
        assert!(has(Impact::Compatible, "capability prompts", "newly advertised"));
        assert!(has(Impact::Breaking, "tool gone", "removed"));
        assert!(has(Impact::Compatible, "tool fresh", "added"));
        assert!(has(Impact::Breaking, "tool echo", "property loud became required"));
        assert!(has(Impact::Compatible, "tool echo", "description changed"));
        assert!(has(Impact::Breaking, "tool add", "property b type"));
        assert!(has(Impact::Compatible, "tool add", "property c added (optional)"));
        // Breaking first.
        let first_compatible = changes.iter().position(|c| c.0 == Impact::Compatible).unwrap();
        assert!(changes[first_compatible..].iter().all(|c| c.0 == Impact::Compatible));
        assert!(compare(&old, &old).is_empty());
    }

    #[test]
    fn a_recorded_session_gives_its_surface_with_every_page() {
        let x = |method: &str, params: Option<Value>, result: Value| Exchange {
            key: method.into(),
            method: method.into(),
            params,
            outcome: Outcome::Result(result),
        };
        let s = Surface::from_exchanges(&[
            x("initialize", None, json!({"capabilities": {"tools": {}}})),
            x("tools/list", None, json!({"tools": [{"name": "a"}], "nextCursor": "2"})),
            x(
                "tools/list",
                Some(json!({"cursor": "2"})),
                json!({"tools": [{"name": "b"}]}),
            ),
            x(
                "prompts/list",
                None,
                json!({"prompts": [{"name": "p", "arguments": [{"name": "x", "required": true}]}]}),
            ),
        ]);
        assert_eq!(s.capabilities, Some(json!({"tools": {}})));
        assert_eq!(s.lists["tools"].keys().collect::<Vec<_>>(), ["a", "b"]);
        let mut new = s.clone();
        new.set(
            "prompts",
            vec![json!({"name": "p", "arguments": [{"name": "x", "required": true}, {"name": "y", "required": true}]})],
        );
        let c = compare(&s, &new);
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(c[0].impact, Impact::Breaking);
        assert_eq!(c[0].what, "argument y added (required)");
    }
}
