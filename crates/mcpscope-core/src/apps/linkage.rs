//! How a server declares an MCP App (SEP-1865, `io.modelcontextprotocol/ui`):
//! the tool's `_meta.ui` (`resourceUri`, `visibility`), the `ui://`
//! resource it names, and that resource's `_meta.ui` (csp, permissions,
//! domain, prefersBorder). Pure functions over the JSON a server sent.

use serde_json::{Map, Value, json};

/// The extension's identifier, in `capabilities.extensions`.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/ui";
/// The only mime type an App's resource may have.
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";
/// The mime type of an early draft: recognised, flagged, never offered.
pub const LEGACY_MIME_TYPE: &str = "text/html+mcp";
/// The version of the View↔host protocol (`ui/*`), independent of MCP's.
pub const UI_PROTOCOL_VERSION: &str = "2026-01-26";
/// The deprecated flat key a tool named its resource with before GA.
pub const FLAT_RESOURCE_KEY: &str = "ui/resourceUri";

/// `capabilities` with the App extension advertised
/// (`extensions["io.modelcontextprotocol/ui"].mimeTypes`), the other members kept.
pub fn advertise(mut capabilities: Value) -> Value {
    if !capabilities.is_object() {
        capabilities = json!({});
    }
    let caps = capabilities.as_object_mut().expect("an object");
    let extensions = caps.entry("extensions").or_insert_with(|| json!({}));
    if !extensions.is_object() {
        *extensions = json!({});
    }
    extensions
        .as_object_mut()
        .expect("an object")
        .insert(EXTENSION_ID.into(), json!({"mimeTypes": [MIME_TYPE]}));
    capabilities
}

/// Whether `capabilities` (a client's or a server's) carry the App extension.
pub fn advertised(capabilities: &Value) -> bool {
    capabilities
        .get("extensions")
        .and_then(|e| e.get(EXTENSION_ID))
        .is_some_and(Value::is_object)
}

/// A tool's link to its App.
#[derive(Clone, Debug, PartialEq)]
pub struct UiLink {
    /// The `ui://` resource, as declared (checked: see `problems`).
    pub resource_uri: Option<String>,
    /// Named only by the deprecated flat key.
    pub flat_key_only: bool,
    /// `_meta.ui.visibility` as declared (absent: model and app).
    pub visibility: Option<Vec<String>>,
    /// What is wrong with the declaration, for a person.
    pub problems: Vec<String>,
}

impl UiLink {
    /// The declared resource, when it is a usable `ui://` URI.
    pub fn usable_uri(&self) -> Option<&str> {
        self.resource_uri.as_deref().filter(|u| u.starts_with("ui://"))
    }
}

/// The tool's `_meta.ui` link, or none when it declares no UI at all (no
/// `_meta.ui` object and no flat key).
pub fn ui_link(tool: &Value) -> Option<UiLink> {
    let meta = tool.get("_meta")?;
    let nested = meta.get("ui");
    let flat = meta.get(FLAT_RESOURCE_KEY);
    if nested.is_none() && flat.is_none() {
        return None;
    }
    let mut problems = Vec::new();
    if let Some(n) = nested
        && !n.is_object()
    {
        problems.push(format!("_meta.ui is {}, not an object", crate::text::json_kind(n)));
    }
    let nested_uri = nested.and_then(|n| n.get("resourceUri"));
    let (uri_value, flat_key_only) = match (nested_uri, flat) {
        (Some(u), _) => (Some(u), false),
        (None, Some(f)) => (Some(f), true),
        (None, None) => (None, false),
    };
    let resource_uri = match uri_value {
        Some(Value::String(s)) => {
            if !s.starts_with("ui://") {
                problems.push(format!("resourceUri {s:?} does not start with ui://"));
            }
            Some(s.clone())
        }
        Some(other) => {
            problems.push(format!(
                "resourceUri is {}, not a string",
                crate::text::json_kind(other)
            ));
            None
        }
        None => None,
    };
    if flat_key_only && resource_uri.is_some() {
        problems.push(format!(
            "the resource is named only by the deprecated flat key _meta[\"{FLAT_RESOURCE_KEY}\"]; use _meta.ui.resourceUri"
        ));
    }
    if let (Some(Value::String(n)), Some(Value::String(f))) = (nested_uri, flat)
        && n != f
    {
        problems.push(format!(
            "_meta.ui.resourceUri {n:?} and the flat key {f:?} disagree (the nested one is used)"
        ));
    }
    let visibility = match nested.and_then(|n| n.get("visibility")) {
        None => None,
        Some(Value::Array(items)) => {
            let mut out = Vec::new();
            for item in items {
                match item.as_str() {
                    Some(v @ ("model" | "app")) => out.push(v.to_owned()),
                    Some(v) => problems.push(format!("visibility value {v:?} is neither \"model\" nor \"app\"")),
                    None => problems.push(format!(
                        "visibility holds {}, not a string",
                        crate::text::json_kind(item)
                    )),
                }
            }
            Some(out)
        }
        Some(other) => {
            problems.push(format!("visibility is {}, not an array", crate::text::json_kind(other)));
            None
        }
    };
    Some(UiLink {
        resource_uri,
        flat_key_only,
        visibility,
        problems,
    })
}

/// Whether `what` ("model" or "app") may see the tool: `visibility`
/// defaults to both.
pub fn visible_to(tool: &Value, what: &str) -> bool {
    match ui_link(tool).and_then(|l| l.visibility) {
        Some(v) => v.iter().any(|x| x == what),
        None => true,
    }
}

/// `_meta.ui` of a resource's listing or content item (the Python SDK's
/// `meta` is read too), when it is an object.
pub fn resource_ui_meta(item: &Value) -> Option<&Map<String, Value>> {
    item.get("_meta")
        .and_then(|m| m.get("ui"))
        .or_else(|| item.get("meta").and_then(|m| m.get("ui")))
        .and_then(Value::as_object)
}

/// A `ui://` resource as read, checked the way a host must.
#[derive(Clone, Debug, PartialEq)]
pub struct AppResource {
    pub uri: String,
    pub mime_type: Option<String>,
    /// The HTML document, when the content could be decoded.
    pub html: Option<String>,
    /// `_meta.ui` in effect: the content item's, else the listing's.
    pub ui_meta: Option<Map<String, Value>>,
    /// Where `ui_meta` came from ("content", "listing").
    pub ui_meta_from: Option<&'static str>,
    /// What a host must refuse (the View is not shown).
    pub errors: Vec<String>,
    /// What a host can live with, for a person.
    pub warnings: Vec<String>,
}

/// Checks a `resources/read` result for `uri` (and, when the server listed
/// it, its `resources/list` entry): exactly one `text` or `blob` item, the
/// App mime type, an HTML5 document; `_meta.ui` from the item, else the listing.
pub fn check_resource(uri: &str, read_result: &Value, listing: Option<&Value>) -> AppResource {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    if !uri.starts_with("ui://") {
        errors.push(format!("{uri:?} is not a ui:// URI"));
    }
    let contents: Vec<&Value> = read_result
        .get("contents")
        .and_then(Value::as_array)
        .map(|c| c.iter().collect())
        .unwrap_or_default();
    if contents.len() != 1 {
        errors.push(format!(
            "resources/read gave {} content items; an App's resource has exactly one",
            contents.len()
        ));
    }
    let item = contents
        .iter()
        .find(|c| c.get("uri").and_then(Value::as_str) == Some(uri))
        .or(contents.first())
        .copied();
    let mime_type = item
        .and_then(|i| i.get("mimeType"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    match mime_type.as_deref() {
        Some(MIME_TYPE) => {}
        Some(LEGACY_MIME_TYPE) => warnings.push(format!(
            "mime type {LEGACY_MIME_TYPE:?} is an early draft's; the spec's is {MIME_TYPE:?}"
        )),
        Some(other) => errors.push(format!("mime type {other:?}; an App's resource is {MIME_TYPE:?}")),
        None if item.is_some() => errors.push(format!("no mime type; an App's resource is {MIME_TYPE:?}")),
        None => {}
    }
    let html = match item {
        None => None,
        Some(i) => match (i.get("text"), i.get("blob")) {
            (Some(Value::String(t)), None) => Some(t.clone()),
            (None, Some(Value::String(b))) => {
                use base64::Engine;
                match base64::engine::general_purpose::STANDARD.decode(b.trim()) {
                    Ok(bytes) => match String::from_utf8(bytes) {
                        Ok(t) => Some(t),
                        Err(_) => {
                            errors.push("the blob is not UTF-8 text".into());
                            None
                        }
                    },
                    Err(e) => {
                        errors.push(format!("the blob is not base64: {e}"));
                        None
                    }
                }
            }
            (Some(_), Some(_)) => {
                errors.push("the content has both text and blob; it must have one".into());
                None
            }
            _ => {
                errors.push("the content has neither a text nor a blob string".into());
                None
            }
        },
    };
    if let Some(h) = &html
        && !is_html5(h)
    {
        errors.push("the content is not an HTML5 document (no <!DOCTYPE html>)".into());
    }
    let (ui_meta, ui_meta_from) = match item.and_then(resource_ui_meta) {
        Some(m) => (Some(m.clone()), Some("content")),
        None => match listing.and_then(resource_ui_meta) {
            Some(m) => (Some(m.clone()), Some("listing")),
            None => (None, None),
        },
    };
    AppResource {
        uri: uri.to_owned(),
        mime_type,
        html,
        ui_meta,
        ui_meta_from,
        errors,
        warnings,
    }
}

/// An HTML5 document starts (after a BOM, whitespace and comments) with
/// `<!DOCTYPE html>`, in any case.
pub fn is_html5(text: &str) -> bool {
    let mut rest = text.trim_start_matches('\u{feff}').trim_start();
    while let Some(after) = rest.strip_prefix("<!--") {
        match after.find("-->") {
            Some(end) => rest = after[end + 3..].trim_start(),
            None => return false,
        }
    }
    let head: String = rest.chars().take(15).collect::<String>().to_ascii_lowercase();
    head.starts_with("<!doctype html") && head[14..].chars().next().is_none_or(|c| c == '>' || c.is_whitespace())
}

/// The Inspector CLI's `--app-info` line, field for field: `{hasApp,
/// toolName, resourceUri, visibility?, csp?, permissions?, domain?,
/// prefersBorder?, resourceMimeType?}`; `resource` is what
/// `resources/read` of the tool's resource gave, when it was read.
pub fn app_info(tool: &Value, resource: Option<&Value>) -> Value {
    let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
    let link = ui_link(tool);
    let Some(uri) = link.as_ref().and_then(|l| l.resource_uri.clone()) else {
        return json!({"hasApp": false, "toolName": name});
    };
    let mut out = Map::new();
    out.insert("hasApp".into(), true.into());
    out.insert("toolName".into(), name.into());
    out.insert("resourceUri".into(), uri.clone().into());
    if let Some(v) = tool
        .get("_meta")
        .and_then(|m| m.get("ui"))
        .and_then(|u| u.get("visibility"))
    {
        out.insert("visibility".into(), v.clone());
    }
    let content = resource
        .and_then(|r| r.get("contents"))
        .and_then(Value::as_array)
        .and_then(|c| {
            c.iter()
                .find(|i| i.get("uri").and_then(Value::as_str) == Some(uri.as_str()))
        });
    let ui = content
        .and_then(resource_ui_meta)
        .or_else(|| resource.and_then(resource_ui_meta));
    if let Some(ui) = ui {
        for key in ["csp", "permissions", "domain", "prefersBorder"] {
            if let Some(v) = ui.get(key) {
                let keep = match key {
                    "prefersBorder" => v.is_boolean(),
                    "domain" => v.as_str().is_some_and(|s| !s.is_empty()),
                    _ => v.is_object(),
                };
                if keep {
                    out.insert(key.into(), v.clone());
                }
            }
        }
    }
    if let Some(m) = content.and_then(|c| c.get("mimeType")).and_then(Value::as_str) {
        out.insert("resourceMimeType".into(), m.into());
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counter() -> Value {
        json!({"name":"show_counter","inputSchema":{"type":"object"},
            "_meta":{"ui":{"resourceUri":"ui://t/counter.html"},"ui/resourceUri":"ui://t/counter.html"}})
    }

    #[test]
    fn advertising_keeps_other_capabilities() {
        let caps = advertise(json!({"roots": {"listChanged": true}, "extensions": {"x/y": {}}}));
        assert_eq!(caps["roots"], json!({"listChanged": true}));
        assert_eq!(caps["extensions"]["x/y"], json!({}));
        assert_eq!(caps["extensions"][EXTENSION_ID]["mimeTypes"], json!([MIME_TYPE]));
        assert!(advertised(&caps));
        assert!(!advertised(&json!({"extensions": {}})));
    }

    #[test]
    fn nested_key_wins_and_flat_only_is_flagged() {
        let l = ui_link(&counter()).unwrap();
        assert_eq!(l.usable_uri(), Some("ui://t/counter.html"));
        assert!(l.problems.is_empty(), "{:?}", l.problems);
        let flat = json!({"name":"x","_meta":{"ui/resourceUri":"ui://t/a.html"}});
        let l = ui_link(&flat).unwrap();
        assert!(l.flat_key_only);
        assert!(l.problems[0].contains("deprecated flat key"));
        assert!(ui_link(&json!({"name":"plain"})).is_none());
        let bad = json!({"name":"x","_meta":{"ui":{"resourceUri":"https://x/a.html","visibility":["agent"]}}});
        let l = ui_link(&bad).unwrap();
        assert_eq!(l.usable_uri(), None);
        assert_eq!(l.problems.len(), 2, "{:?}", l.problems);
    }

    #[test]
    fn visibility_defaults_to_both() {
        assert!(visible_to(&counter(), "app") && visible_to(&counter(), "model"));
        let app_only = json!({"name":"i","_meta":{"ui":{"resourceUri":"ui://t/c.html","visibility":["app"]}}});
        assert!(visible_to(&app_only, "app") && !visible_to(&app_only, "model"));
        let model_only = json!({"name":"s","_meta":{"ui":{"visibility":["model"]}}});
        assert!(!visible_to(&model_only, "app"));
    }

    #[test]
    fn a_resource_is_checked_as_a_host_must() {
        let listing = json!({"uri":"ui://t/c.html","_meta":{"ui":{"prefersBorder":true}}});
        let good = json!({"contents":[{"uri":"ui://t/c.html","mimeType":MIME_TYPE,
            "text":"<!-- hi --><!DOCTYPE html><html></html>","_meta":{"ui":{"csp":{"connectDomains":[]}}}}]});
        let r = check_resource("ui://t/c.html", &good, Some(&listing));
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        assert_eq!(r.ui_meta_from, Some("content"));
        let no_meta =
            json!({"contents":[{"uri":"ui://t/c.html","mimeType":MIME_TYPE,"blob":"PCFkb2N0eXBlIGh0bWw+PHA+"}]});
        let r = check_resource("ui://t/c.html", &no_meta, Some(&listing));
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        assert_eq!(r.ui_meta_from, Some("listing"));
        assert_eq!(r.html.as_deref(), Some("<!doctype html><p>"));
        let wrong = json!({"contents":[{"uri":"ui://t/c.html","mimeType":"text/html","text":"<p>hi</p>"},{"uri":"x"}]});
        let r = check_resource("ui://t/c.html", &wrong, None);
        assert_eq!(r.errors.len(), 3, "{:?}", r.errors);
    }

    #[test]
    fn app_info_has_the_inspectors_shape() {
        let read = json!({"contents":[{"uri":"ui://t/counter.html","mimeType":MIME_TYPE,"text":"<!DOCTYPE html>",
            "_meta":{"ui":{"csp":{"connectDomains":["https://a.example"]},"prefersBorder":true,"domain":""}}}]});
        assert_eq!(
            app_info(&counter(), Some(&read)),
            json!({"hasApp":true,"toolName":"show_counter","resourceUri":"ui://t/counter.html",
                "csp":{"connectDomains":["https://a.example"]},"prefersBorder":true,"resourceMimeType":MIME_TYPE})
        );
        assert_eq!(
            app_info(&json!({"name":"plain"}), None),
            json!({"hasApp":false,"toolName":"plain"})
        );
    }
}
