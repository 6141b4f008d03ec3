//! What of an authorization exchange may be recorded. Tokens, codes,
//! secrets, verifiers and assertions are replaced by `****` in URLs, forms,
//! JSON bodies and headers (headers with the transport's own helper, so an
//! `Authorization` value looks the same everywhere); JWTs among them are
//! decoded first, so a person still sees what they claim.

use super::jwt::{self, DecodedJwt};
use crate::text::mask_value;
use serde_json::{Map, Value};

/// Parameters and members whose values are secrets.
pub const SECRET_FIELDS: &[&str] = &[
    "access_token",
    "refresh_token",
    "id_token",
    "code",
    "code_verifier",
    "client_secret",
    "client_assertion",
    "assertion",
    "subject_token",
    "actor_token",
    "registration_access_token",
    "password",
    "device_code",
];

/// Fields worth decoding when they hold a JWT.
const JWT_FIELDS: &[&str] = &[
    "access_token",
    "id_token",
    "client_assertion",
    "assertion",
    "subject_token",
];

/// Headers whose values are credentials.
const SECRET_HEADERS: &[&str] = &["authorization", "proxy-authorization", "cookie", "set-cookie", "dpop"];

pub const MASK: &str = "****";

pub fn is_secret(name: &str) -> bool {
    SECRET_FIELDS.iter().any(|f| f.eq_ignore_ascii_case(name))
}

/// Headers as they may be recorded.
pub fn headers(h: &[(String, String)]) -> Vec<(String, String)> {
    h.iter()
        .map(|(k, v)| {
            let secret = SECRET_HEADERS.iter().any(|s| s.eq_ignore_ascii_case(k));
            (k.clone(), if secret { mask_value(v) } else { v.clone() })
        })
        .collect()
}

/// A URL with the values of secret query parameters masked (the rest,
/// including its exact encoding, kept).
pub fn url(u: &str) -> String {
    let (base, rest) = match u.split_once('?') {
        Some((b, r)) if !b.contains('#') => (b, r),
        _ => match u.split_once('#') {
            // A fragment only (implicit-grant style).
            Some((b, f)) => return format!("{b}#{}", &url(&format!("?{f}"))[1..]),
            None => return u.to_owned(),
        },
    };
    let (query, fragment) = match rest.split_once('#') {
        Some((q, f)) => (q, Some(f)),
        None => (rest, None),
    };
    let parts: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((k, _)) if is_secret(&decode_component(k)) => format!("{k}={MASK}"),
            _ => pair.to_owned(),
        })
        .collect();
    let mut out = format!("{base}?{}", parts.join("&"));
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(&url(&format!("?{f}"))[1..]);
    }
    out
}

fn decode_component(s: &str) -> String {
    url::form_urlencoded::parse(format!("{s}=").as_bytes())
        .next()
        .map(|(k, _)| k.into_owned())
        .unwrap_or_default()
}

/// A text body as it may be recorded: one that is a form
/// (`access_token=…&scope=…`, as some token endpoints answer) gets its
/// secret values masked; other text is kept.
pub fn text(t: &str) -> String {
    let trimmed = t.trim();
    let form_like = trimmed.contains('=') && !trimmed.contains(|c: char| c.is_whitespace() || c == '<');
    if form_like {
        url(&format!("?{trimmed}"))[1..].to_owned()
    } else {
        t.to_owned()
    }
}

/// A form as a JSON object for the record (a repeated name becomes an
/// array), secrets masked.
pub fn form(f: &[(String, String)]) -> Value {
    let mut m = Map::new();
    for (k, v) in f {
        let v = if is_secret(k) {
            Value::from(MASK)
        } else {
            Value::from(v.clone())
        };
        match m.get_mut(k) {
            Some(Value::Array(a)) => a.push(v),
            Some(prev) => {
                let first = prev.take();
                *prev = Value::Array(vec![first, v]);
            }
            None => {
                m.insert(k.clone(), v);
            }
        }
    }
    Value::Object(m)
}

/// A JSON value with secret members masked, at any depth.
pub fn json(v: &Value) -> Value {
    match v {
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| {
                    let masked = if is_secret(k) && !x.is_null() {
                        Value::from(MASK)
                    } else {
                        json(x)
                    };
                    (k.clone(), masked)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(json).collect()),
        other => other.clone(),
    }
}

/// JWTs among a form's fields, decoded.
pub fn jwts_in_form(f: &[(String, String)], now: u64) -> Vec<DecodedJwt> {
    f.iter()
        .filter(|(k, _)| JWT_FIELDS.contains(&k.as_str()))
        .filter_map(|(k, v)| jwt::decode(k, v, now))
        .collect()
}

/// JWTs among a JSON body's top-level members, decoded.
pub fn jwts_in_json(v: &Value, now: u64) -> Vec<DecodedJwt> {
    let Some(o) = v.as_object() else {
        return Vec::new();
    };
    JWT_FIELDS
        .iter()
        .filter_map(|k| o.get(*k).and_then(Value::as_str).and_then(|t| jwt::decode(k, t, now)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use serde_json::json;

    #[test]
    fn urls_keep_everything_but_secrets() {
        assert_eq!(
            url("http://127.0.0.1:5/callback?code=abc%2B&state=s1&iss=http%3A%2F%2Fa"),
            "http://127.0.0.1:5/callback?code=****&state=s1&iss=http%3A%2F%2Fa"
        );
        assert_eq!(
            url("http://a/authorize?client_id=x&scope=a+b"),
            "http://a/authorize?client_id=x&scope=a+b"
        );
        assert_eq!(
            url("http://a/cb#access_token=t&x=1"),
            "http://a/cb#access_token=****&x=1"
        );
        assert_eq!(url("http://a/x?%63ode=t"), "http://a/x?%63ode=****");
        assert_eq!(url("http://a/x"), "http://a/x");
    }

    #[test]
    fn form_encoded_text_bodies() {
        assert_eq!(
            text("access_token=gho_x&scope=repo&token_type=bearer"),
            "access_token=****&scope=repo&token_type=bearer"
        );
        assert_eq!(text("<html>code=1</html>"), "<html>code=1</html>");
        assert_eq!(text("Not Found"), "Not Found");
    }

    #[test]
    fn forms_and_bodies() {
        let f = vec![
            ("grant_type".to_owned(), "authorization_code".to_owned()),
            ("code".to_owned(), "c".to_owned()),
            ("code_verifier".to_owned(), "v".to_owned()),
            ("resource".to_owned(), "http://r".to_owned()),
            ("scope".to_owned(), "a".to_owned()),
            ("scope".to_owned(), "b".to_owned()),
        ];
        assert_eq!(
            form(&f),
            json!({"grant_type":"authorization_code","code":"****","code_verifier":"****","resource":"http://r","scope":["a","b"]})
        );
        let body = json!({"access_token":"t","refresh_token":null,"nested":{"client_secret":"s"},"list":[{"id_token":"i"}],"token_type":"Bearer"});
        assert_eq!(
            json(&body),
            json!({"access_token":"****","refresh_token":null,"nested":{"client_secret":"****"},"list":[{"id_token":"****"}],"token_type":"Bearer"})
        );
    }

    #[test]
    fn headers_masked_like_the_transport() {
        let h = headers(&[
            ("Authorization".into(), "Basic dXNlcjpwYXNz".into()),
            ("Content-Type".into(), "application/json".into()),
            ("set-cookie".into(), "sid=1".into()),
        ]);
        assert_eq!(h[0].1, "Basic ****");
        assert_eq!(h[1].1, "application/json");
        assert_eq!(h[2].1, "****");
    }

    #[test]
    fn jwts_are_found() {
        let b = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let t = format!("{}.{}.sig", b.encode(r#"{"alg":"none"}"#), b.encode(r#"{"sub":"x"}"#));
        let v = json!({"access_token": t, "refresh_token": t});
        let found = jwts_in_json(&v, 0);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].field, "access_token");
        let f = vec![("client_assertion".to_owned(), t.clone()), ("code".to_owned(), t)];
        assert_eq!(jwts_in_form(&f, 0).len(), 1);
    }
}
