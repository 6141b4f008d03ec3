//! The Content Security Policy and the iframe `allow` list a View gets,
//! built only from what its resource declares (`_meta.ui.csp`,
//! `_meta.ui.permissions`), as the spec's Security section constructs them.

use serde_json::{Map, Value, json};

/// The four declared lists, each entry checked.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeclaredDomains {
    pub connect: Vec<String>,
    pub resource: Vec<String>,
    pub frame: Vec<String>,
    pub base_uri: Vec<String>,
    /// Entries dropped, and why (for the log and for lint).
    pub dropped: Vec<String>,
    /// `csp` was declared at all.
    pub declared: bool,
}

impl DeclaredDomains {
    /// From `_meta.ui` (the resource's).
    pub fn from_ui_meta(ui: Option<&Map<String, Value>>) -> Self {
        let mut d = DeclaredDomains::default();
        let Some(csp) = ui.and_then(|u| u.get("csp")) else {
            return d;
        };
        d.declared = true;
        let Some(csp) = csp.as_object() else {
            d.dropped.push("csp is not an object: nothing declared".into());
            return d;
        };
        for (key, list) in [
            ("connectDomains", &mut d.connect),
            ("resourceDomains", &mut d.resource),
            ("frameDomains", &mut d.frame),
            ("baseUriDomains", &mut d.base_uri),
        ] {
            match csp.get(key) {
                None => {}
                Some(Value::Array(items)) => {
                    for item in items {
                        match item.as_str() {
                            Some(s) => match check_source(s) {
                                Ok(()) => list.push(s.to_owned()),
                                Err(why) => d.dropped.push(format!("{key}: {s:?} dropped: {why}")),
                            },
                            None => d.dropped.push(format!("{key}: {item} dropped: not a string")),
                        }
                    }
                }
                Some(other) => d.dropped.push(format!("{key} is {other}, not an array: dropped")),
            }
        }
        d
    }

    /// Every external origin the View may reach.
    pub fn external(&self) -> Vec<&str> {
        let mut all: Vec<&str> = self
            .connect
            .iter()
            .chain(&self.resource)
            .chain(&self.frame)
            .chain(&self.base_uri)
            .map(String::as_str)
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    }

    /// What was granted, for `hostCapabilities.sandbox.csp`.
    pub fn granted_json(&self) -> Value {
        let mut m = Map::new();
        for (key, list) in [
            ("connectDomains", &self.connect),
            ("resourceDomains", &self.resource),
            ("frameDomains", &self.frame),
            ("baseUriDomains", &self.base_uri),
        ] {
            if !list.is_empty() {
                m.insert(key.into(), json!(list));
            }
        }
        Value::Object(m)
    }
}

/// A source expression is kept only if it is an origin a policy can hold:
/// no `;`, `,`, quotes, spaces or control characters (which would end the
/// directive or add keywords), an `http(s)://` or `ws(s)://` scheme, and a
/// host (a leading `*.` wildcard allowed).
pub fn check_source(s: &str) -> Result<(), &'static str> {
    if s.is_empty() {
        return Err("empty");
    }
    if s.chars()
        .any(|c| c == ';' || c == ',' || c == '\'' || c == '"' || c.is_whitespace() || c.is_control())
    {
        return Err("it holds a ;, a comma, a quote or a space");
    }
    let rest = ["https://", "http://", "wss://", "ws://"]
        .iter()
        .find_map(|p| s.strip_prefix(p))
        .ok_or("not an http(s) or ws(s) origin")?;
    let host = rest.split(['/', ':']).next().unwrap_or_default();
    let host = host.strip_prefix("*.").unwrap_or(host);
    if host.is_empty() || host.contains('*') {
        return Err("no host, or a wildcard that is not a leading *.");
    }
    if !host
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '[' || c == ']')
    {
        return Err("the host has characters a host cannot have");
    }
    Ok(())
}

/// The policy the View's document gets (spec, Security §4): nothing
/// declared gives the restrictive default; `frame-src` and `base-uri`
/// stay `'none'` / `'self'` unless declared; `object-src 'none'` always.
pub fn policy(d: &DeclaredDomains) -> String {
    let join = |extra: &[String]| -> String { extra.iter().map(|s| format!(" {s}")).collect::<String>() };
    let r = join(&d.resource);
    let frame = if d.frame.is_empty() {
        "'none'".to_owned()
    } else {
        d.frame.join(" ")
    };
    let base = if d.base_uri.is_empty() {
        "'self'".to_owned()
    } else {
        d.base_uri.join(" ")
    };
    let connect = if d.connect.is_empty() {
        "'none'".to_owned()
    } else {
        format!("'self'{}", join(&d.connect))
    };
    format!(
        "default-src 'none'; script-src 'self' 'unsafe-inline'{r}; style-src 'self' 'unsafe-inline'{r}; \
         connect-src {connect}; img-src 'self' data:{r}; font-src 'self'{r}; media-src 'self' data:{r}; \
         frame-src {frame}; object-src 'none'; base-uri {base}"
    )
}

/// The permissions a View may ask for, by their iframe `allow` feature names.
pub const PERMISSIONS: [&str; 4] = ["camera", "microphone", "geolocation", "clipboard-write"];

/// The permissions a View asks for (`_meta.ui.permissions`), by their
/// iframe `allow` feature names.
pub fn requested_permissions(ui: Option<&Map<String, Value>>) -> Vec<&'static str> {
    let Some(p) = ui.and_then(|u| u.get("permissions")).and_then(Value::as_object) else {
        return Vec::new();
    };
    [
        ("camera", "camera"),
        ("microphone", "microphone"),
        ("geolocation", "geolocation"),
        ("clipboardWrite", "clipboard-write"),
    ]
    .into_iter()
    .filter(|(key, _)| p.get(*key).is_some_and(Value::is_object))
    .map(|(_, feature)| feature)
    .collect()
}

/// The iframe `allow` attribute for what the user granted of what was asked.
pub fn allow_attribute(requested: &[&str], granted: &[String]) -> String {
    requested
        .iter()
        .filter(|f| granted.iter().any(|g| g == *f))
        .copied()
        .collect::<Vec<_>>()
        .join("; ")
}

/// `hostCapabilities.sandbox.permissions` for the features in effect.
pub fn permissions_json(allowed: &str) -> Value {
    let mut m = Map::new();
    for f in allowed.split("; ").filter(|f| !f.is_empty()) {
        let key = match f {
            "clipboard-write" => "clipboardWrite",
            other => other,
        };
        m.insert(key.into(), json!({}));
    }
    Value::Object(m)
}

/// The View's document with `policy` as a `<meta>` placed first in its
/// `<head>` (before anything the document loads), any meta policy of its
/// own left in place (policies only add up to something stricter).
pub fn with_policy_meta(html: &str, policy: &str) -> String {
    let meta = format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">",
        policy.replace('&', "&amp;").replace('"', "&quot;")
    );
    let lower = html.to_ascii_lowercase();
    let after_tag = |tag: &str| -> Option<usize> {
        let mut from = 0;
        while let Some(i) = lower[from..].find(tag) {
            let at = from + i;
            let next = lower[at + tag.len()..].chars().next();
            if matches!(next, Some('>' | ' ' | '\t' | '\n' | '\r' | '/')) {
                return lower[at..].find('>').map(|e| at + e + 1);
            }
            from = at + tag.len();
        }
        None
    };
    if let Some(i) = after_tag("<head") {
        return format!("{}{meta}{}", &html[..i], &html[i..]);
    }
    if let Some(i) = after_tag("<html") {
        return format!("{}<head>{meta}</head>{}", &html[..i], &html[i..]);
    }
    match after_tag("<!doctype") {
        Some(i) => format!("{}<head>{meta}</head>{}", &html[..i], &html[i..]),
        None => format!("{meta}{html}"),
    }
}

/// The origins a View's document loads from by itself: `src`, `srcset`,
/// `data` and `action` attributes, stylesheet and preload links, CSS
/// `url(...)`, and `fetch(`, `WebSocket(`, `EventSource(` and `import(`
/// with a literal URL. (Links the user follows, `<a href>`, are not loads.)
pub fn loaded_origins(html: &str) -> Vec<String> {
    static PATTERN: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = PATTERN.get_or_init(|| {
        regex::Regex::new(
            r#"(?ix)
            (?: \b(?:src|srcset|data|action|poster)\s*=\s*["']?
              | <link\b[^>]*?\bhref\s*=\s*["']?
              | url\(\s*["']?
              | \b(?:fetch|WebSocket|EventSource|import)\s*\(\s*["'`]
            )
            ((?:https?|wss?)://[^\s"'`<>)/?\#]+)"#,
        )
        .expect("a valid pattern")
    });
    let mut out: Vec<String> = re
        .captures_iter(html)
        .filter_map(|c| c.get(1).map(|m| m.as_str().to_ascii_lowercase()))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Whether a declared source (`https://api.x.com`, `https://*.x.com`)
/// allows `origin`.
pub fn source_allows(source: &str, origin: &str) -> bool {
    let source = source.trim_end_matches('/').to_ascii_lowercase();
    let origin = origin.trim_end_matches('/').to_ascii_lowercase();
    if source == origin {
        return true;
    }
    let (Some((s_scheme, s_host)), Some((o_scheme, o_host))) = (source.split_once("://"), origin.split_once("://"))
    else {
        return false;
    };
    let scheme_ok =
        s_scheme == o_scheme || (s_scheme == "https" && o_scheme == "wss") || (s_scheme == "http" && o_scheme == "ws");
    match s_host.strip_prefix("*.") {
        Some(base) => scheme_ok && o_host.ends_with(&format!(".{base}")),
        None => scheme_ok && s_host == o_host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ui(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn nothing_declared_is_the_restrictive_default() {
        let d = DeclaredDomains::from_ui_meta(None);
        let p = policy(&d);
        assert!(
            p.starts_with("default-src 'none'; script-src 'self' 'unsafe-inline'; "),
            "{p}"
        );
        assert!(p.contains("connect-src 'none'"));
        assert!(p.contains("frame-src 'none'") && p.contains("base-uri 'self'") && p.contains("object-src 'none'"));
        assert!(d.external().is_empty());
    }

    #[test]
    fn declared_domains_go_where_they_belong_and_bad_ones_are_dropped() {
        let m = ui(json!({"csp":{
            "connectDomains":["https://api.example.com","https://x.com; script-src *","wss://live.example.com"],
            "resourceDomains":["https://*.cdn.example", "'unsafe-eval'", "https://a b"],
            "frameDomains":["https://youtube.example"],
            "baseUriDomains":"https://no"}}));
        let d = DeclaredDomains::from_ui_meta(Some(&m));
        assert_eq!(d.connect, ["https://api.example.com", "wss://live.example.com"]);
        assert_eq!(d.resource, ["https://*.cdn.example"]);
        assert_eq!(d.dropped.len(), 4, "{:?}", d.dropped);
        let p = policy(&d);
        assert!(
            p.contains("connect-src 'self' https://api.example.com wss://live.example.com;"),
            "{p}"
        );
        assert!(
            p.contains("script-src 'self' 'unsafe-inline' https://*.cdn.example;"),
            "{p}"
        );
        assert!(p.contains("frame-src https://youtube.example;"), "{p}");
        assert!(p.contains("base-uri 'self'"), "{p}");
        assert!(!p.contains("unsafe-eval") && !p.contains("x.com"), "{p}");
        assert_eq!(d.granted_json()["frameDomains"], json!(["https://youtube.example"]));
    }

    #[test]
    fn permissions_only_as_far_as_granted() {
        let m = ui(json!({"permissions":{"camera":{},"clipboardWrite":{},"bogus":{}}}));
        let asked = requested_permissions(Some(&m));
        assert_eq!(asked, ["camera", "clipboard-write"]);
        assert_eq!(
            allow_attribute(&asked, &["clipboard-write".into(), "microphone".into()]),
            "clipboard-write"
        );
        assert_eq!(permissions_json("clipboard-write"), json!({"clipboardWrite":{}}));
        assert_eq!(allow_attribute(&asked, &[]), "");
    }

    #[test]
    fn loaded_origins_are_found_and_matched() {
        let html = r#"<img src="https://cdn.x.com/a.png"><a href="https://docs.x.com/">docs</a>
            <link rel=stylesheet href='https://fonts.example/css'><script>fetch("https://API.example/v1")</script>
            <div style="background:url(https://img.example/b.png)"></div>"#;
        assert_eq!(
            loaded_origins(html),
            [
                "https://api.example",
                "https://cdn.x.com",
                "https://fonts.example",
                "https://img.example"
            ]
        );
        assert!(source_allows("https://*.x.com", "https://cdn.x.com"));
        assert!(!source_allows("https://*.x.com", "https://x.com"));
        assert!(source_allows("https://api.example", "https://api.example"));
        assert!(!source_allows("https://api.example", "http://api.example"));
    }

    #[test]
    fn the_policy_comes_first_in_the_head() {
        let p = "default-src 'none'";
        let got = with_policy_meta(
            "<!DOCTYPE html><html lang=en><HEAD><script>x()</script></head></html>",
            p,
        );
        assert!(
            got.starts_with("<!DOCTYPE html><html lang=en><HEAD><meta http-equiv=\"Content-Security-Policy\""),
            "{got}"
        );
        let got = with_policy_meta("<!doctype html><html><body>hi", p);
        assert!(got.starts_with("<!doctype html><html><head><meta "), "{got}");
        let got = with_policy_meta("<!doctype html><header>no</header><p>", p);
        assert!(got.starts_with("<!doctype html><head><meta "), "{got}");
    }
}
