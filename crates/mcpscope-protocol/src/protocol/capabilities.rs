//! Which capability a method needs: the one table lint, the CLI's warning
//! and the app's composer read, so they never disagree.
//!
//! A capability is a path of keys into a `capabilities` object (keys are
//! walked, never escaped into a JSON pointer: the skills extension's name
//! holds a `/`).

use super::methods;
use super::skills;
use serde_json::Value;

/// The key path of a capability, e.g. `["resources", "subscribe"]`.
pub type CapabilityPath = &'static [&'static str];

const TOOLS: CapabilityPath = &["tools"];
const PROMPTS: CapabilityPath = &["prompts"];
const RESOURCES: CapabilityPath = &["resources"];
const RESOURCES_SUBSCRIBE: CapabilityPath = &["resources", "subscribe"];
const COMPLETIONS: CapabilityPath = &["completions"];
const LOGGING: CapabilityPath = &["logging"];
const SKILLS: CapabilityPath = &["extensions", skills::EXTENSION];

/// The server capability a client request needs, under the negotiated
/// version (`None`: not known yet, the current rules). `None` back: nothing
/// gates it (`ping`, `initialize`, …).
pub fn server_capability_for(method: &str, negotiated: Option<&str>) -> Option<CapabilityPath> {
    Some(match method {
        methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE => RESOURCES_SUBSCRIBE,
        methods::LOGGING_SET_LEVEL => LOGGING,
        // The capability flag arrived with 2025-03-26; older servers answered without one.
        methods::COMPLETION_COMPLETE if negotiated == Some("2024-11-05") => return None,
        methods::COMPLETION_COMPLETE => COMPLETIONS,
        m if m.starts_with("tools/") => TOOLS,
        m if m.starts_with("resources/") => RESOURCES,
        m if m.starts_with("prompts/") => PROMPTS,
        m if m.starts_with("skills/") => SKILLS,
        _ => return None,
    })
}

/// The client capability a server request needs.
pub fn client_capability_for(method: &str) -> Option<CapabilityPath> {
    Some(match method {
        methods::ROOTS_LIST => &["roots"],
        methods::SAMPLING_CREATE_MESSAGE => &["sampling"],
        methods::ELICITATION_CREATE => &["elicitation"],
        _ => return None,
    })
}

/// Whether `caps` advertises `path`: each key present and not null, and a
/// nested flag (`resources.subscribe`) `true`, not merely present. An
/// extension (`extensions.<name>`) is advertised by its presence.
pub fn advertised(caps: &Value, path: &[&str]) -> bool {
    let mut v = caps;
    for (i, key) in path.iter().enumerate() {
        match v.get(key) {
            Some(next) if !next.is_null() => v = next,
            _ => return false,
        }
        if i > 0 && i == path.len() - 1 && path[0] != "extensions" {
            return v == &Value::Bool(true);
        }
    }
    true
}

/// A path as people write it: `resources.subscribe`, `extensions/…`.
pub fn describe(path: &[&str]) -> String {
    match path {
        ["extensions", name] => format!("the {name} extension"),
        _ => format!("the \"{}\" capability", path.join(".")),
    }
}

/// Why `method` is not covered by the server's capabilities `caps`, if it
/// is not ("the server did not advertise the \"tools\" capability").
pub fn unadvertised(caps: &Value, method: &str, negotiated: Option<&str>) -> Option<String> {
    if !caps.is_object() {
        return None;
    }
    let path = server_capability_for(method, negotiated)?;
    (!advertised(caps, path)).then(|| format!("the server did not advertise {}", describe(path)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn one_table_for_every_reader() {
        let tools_only = json!({"tools": {}});
        assert!(unadvertised(&tools_only, "tools/call", None).is_none());
        assert!(unadvertised(&tools_only, "ping", None).is_none());
        assert_eq!(
            unadvertised(&tools_only, "resources/list", None).as_deref(),
            Some("the server did not advertise the \"resources\" capability")
        );
        let no_sub = json!({"resources": {}});
        assert_eq!(
            unadvertised(&no_sub, "resources/unsubscribe", None).as_deref(),
            Some("the server did not advertise the \"resources.subscribe\" capability")
        );
        assert!(unadvertised(&json!({"resources": {"subscribe": true}}), "resources/subscribe", None).is_none());
        assert_eq!(
            unadvertised(&tools_only, "skills/list", None).as_deref(),
            Some("the server did not advertise the io.modelcontextprotocol/skills extension")
        );
        let ext = json!({"extensions": {"io.modelcontextprotocol/skills": {}}});
        assert!(unadvertised(&ext, "skills/list", None).is_none());
        // completion/complete needs no flag from a 2024-11-05 server: lint and the CLI agree.
        assert!(unadvertised(&tools_only, "completion/complete", Some("2024-11-05")).is_none());
        assert!(unadvertised(&tools_only, "completion/complete", Some("2025-06-18")).is_some());
        assert_eq!(client_capability_for("roots/list"), Some(&["roots"][..]));
        assert!(!advertised(&json!({"tools": null}), &["tools"]));
    }
}
