//! `WWW-Authenticate` (RFC 9110 §11.6.1) and what a 401 or 403 asks of the
//! client: RFC 6750 bearer errors and scopes, RFC 9728 `resource_metadata`.

/// One challenge: a scheme and either a token68 or auth-params.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Challenge {
    pub scheme: String,
    pub token68: Option<String>,
    /// Names lower-cased, values unquoted (quoted-pairs resolved).
    pub params: Vec<(String, String)>,
}

impl Challenge {
    /// A parameter by name (case-insensitive, first occurrence).
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn is_tchar(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c)
}

fn is_token68_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"-._~+/".contains(&c)
}

struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
    }

    fn skip_ws_and_commas(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b',')) {
            self.i += 1;
        }
    }

    fn token(&mut self) -> Option<String> {
        let start = self.i;
        while self.peek().is_some_and(is_tchar) {
            self.i += 1;
        }
        (self.i > start).then(|| String::from_utf8_lossy(&self.s[start..self.i]).into_owned())
    }

    fn quoted(&mut self) -> String {
        // At the opening quote.
        self.i += 1;
        let mut out = Vec::new();
        while let Some(c) = self.peek() {
            self.i += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    if let Some(n) = self.peek() {
                        out.push(n);
                        self.i += 1;
                    }
                }
                other => out.push(other),
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    /// A token68 here, when what follows it is the end of the challenge.
    fn token68(&mut self) -> Option<String> {
        let start = self.i;
        let mut j = self.i;
        while self.s.get(j).copied().is_some_and(is_token68_char) {
            j += 1;
        }
        if j == start {
            return None;
        }
        while self.s.get(j) == Some(&b'=') {
            j += 1;
        }
        let mut k = j;
        while matches!(self.s.get(k), Some(b' ' | b'\t')) {
            k += 1;
        }
        if matches!(self.s.get(k), None | Some(b',')) {
            self.i = j;
            return Some(String::from_utf8_lossy(&self.s[start..j]).into_owned());
        }
        None
    }
}

/// Every challenge in one `WWW-Authenticate` value (several may share a
/// value, separated by commas). Malformed parts are skipped, never fatal:
/// the header comes from a server that may be broken.
pub fn parse_www_authenticate(value: &str) -> Vec<Challenge> {
    let mut c = Cursor {
        s: value.as_bytes(),
        i: 0,
    };
    let mut out = Vec::new();
    loop {
        c.skip_ws_and_commas();
        if c.peek().is_none() {
            break;
        }
        let Some(scheme) = c.token() else {
            // Not a token where a scheme belongs: skip one byte and resync.
            c.i += 1;
            continue;
        };
        let mut ch = Challenge {
            scheme,
            token68: None,
            params: Vec::new(),
        };
        c.skip_ws();
        if let Some(t) = c.token68() {
            ch.token68 = Some(t);
            out.push(ch);
            continue;
        }
        loop {
            c.skip_ws_and_commas();
            let before = c.i;
            let Some(name) = c.token() else {
                if c.peek().is_some() && c.i == before {
                    // A stray character inside the parameter list.
                    c.i += 1;
                    continue;
                }
                break;
            };
            c.skip_ws();
            if c.peek() != Some(b'=') {
                // A token not followed by '=' starts the next challenge.
                c.i = before;
                break;
            }
            c.i += 1;
            c.skip_ws();
            let value = if c.peek() == Some(b'"') {
                c.quoted()
            } else {
                let start = c.i;
                while c.peek().is_some_and(|b| b != b',' && b != b' ' && b != b'\t') {
                    c.i += 1;
                }
                String::from_utf8_lossy(&c.s[start..c.i]).into_owned()
            };
            ch.params.push((name.to_ascii_lowercase(), value));
        }
        out.push(ch);
    }
    out
}

/// The parts of a Bearer (or DPoP) challenge the client acts on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BearerChallenge {
    pub scheme: String,
    pub error: Option<String>,
    pub error_description: Option<String>,
    /// Split on spaces (RFC 6750 §3); `None` when absent or empty.
    pub scope: Option<Vec<String>>,
    /// RFC 9728 §5.1.
    pub resource_metadata: Option<String>,
    pub realm: Option<String>,
}

impl BearerChallenge {
    /// The Bearer challenge among a header's challenges (else a DPoP one).
    pub fn from_header(value: &str) -> Option<Self> {
        let all = parse_www_authenticate(value);
        let ch = all
            .iter()
            .find(|c| c.scheme.eq_ignore_ascii_case("bearer"))
            .or_else(|| all.iter().find(|c| c.scheme.eq_ignore_ascii_case("dpop")))?;
        let scope = ch
            .param("scope")
            .map(|s| {
                s.split(' ')
                    .filter(|x| !x.is_empty())
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .filter(|v| !v.is_empty());
        Some(BearerChallenge {
            scheme: ch.scheme.clone(),
            error: ch.param("error").map(str::to_owned),
            error_description: ch.param("error_description").map(str::to_owned),
            scope,
            resource_metadata: ch.param("resource_metadata").map(str::to_owned),
            realm: ch.param("realm").map(str::to_owned),
        })
    }

    /// What the client learned, for the timeline.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(e) = &self.error {
            parts.push(format!("error={e}"));
        }
        if let Some(s) = &self.scope {
            parts.push(format!("scope={}", s.join(" ")));
        }
        if let Some(r) = &self.resource_metadata {
            parts.push(format!("resource_metadata={r}"));
        }
        if parts.is_empty() {
            format!("{} challenge without parameters", self.scheme)
        } else {
            format!("{} challenge: {}", self.scheme, parts.join(", "))
        }
    }
}

/// What an HTTP answer asks of the client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthSignal {
    /// 401: authorize (the challenge may be empty: no `WWW-Authenticate`).
    Unauthorized(BearerChallenge),
    /// 403 with `error="insufficient_scope"`: authorize again with more scopes.
    InsufficientScope(BearerChallenge),
    /// Not an authorization matter.
    Other,
}

/// Classifies a status and its `WWW-Authenticate` value (if any).
pub fn classify(status: u16, www_authenticate: Option<&str>) -> AuthSignal {
    let challenge = www_authenticate.and_then(BearerChallenge::from_header);
    match status {
        401 => AuthSignal::Unauthorized(challenge.unwrap_or_default()),
        403 => match challenge {
            Some(c) if c.error.as_deref() == Some("insufficient_scope") => AuthSignal::InsufficientScope(c),
            _ => AuthSignal::Other,
        },
        _ => AuthSignal::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(c: &Challenge) -> Vec<(&str, &str)> {
        c.params.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
    }

    #[test]
    fn the_suites_headers_parse() {
        let h = r#"Bearer error="invalid_token", error_description="Missing Authorization header", resource_metadata="http://localhost:42501/.well-known/oauth-protected-resource/mcp""#;
        let b = BearerChallenge::from_header(h).unwrap();
        assert_eq!(b.error.as_deref(), Some("invalid_token"));
        assert_eq!(b.error_description.as_deref(), Some("Missing Authorization header"));
        assert_eq!(
            b.resource_metadata.as_deref(),
            Some("http://localhost:42501/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(b.scope, None);

        let b = BearerChallenge::from_header(r#"Bearer scope="mcp:basic", resource_metadata="http://h/x""#).unwrap();
        assert_eq!(b.scope, Some(vec!["mcp:basic".to_owned()]));
        assert_eq!(b.error, None);

        let b = BearerChallenge::from_header(
            r#"Bearer scope="mcp:basic mcp:write", resource_metadata="http://h/x", error="insufficient_scope""#,
        )
        .unwrap();
        assert_eq!(b.scope, Some(vec!["mcp:basic".to_owned(), "mcp:write".to_owned()]));
        assert_eq!(b.error.as_deref(), Some("insufficient_scope"));

        let b = BearerChallenge::from_header(r#"DPoP error="use_dpop_nonce", resource_metadata="http://h/x""#).unwrap();
        assert_eq!(b.scheme, "DPoP");
        assert_eq!(b.error.as_deref(), Some("use_dpop_nonce"));
    }

    #[test]
    fn grammar_corners() {
        // Escaped quotes and commas inside quoted strings, any order, BWS around '='.
        let c = parse_www_authenticate(r#"bearer realm = "a \"b\", c" ,scope=x,  ERROR="e""#);
        assert_eq!(c.len(), 1);
        assert_eq!(
            params(&c[0]),
            [("realm", r#"a "b", c"#), ("scope", "x"), ("error", "e")]
        );
        // Two challenges in one value; a token68 one.
        let c = parse_www_authenticate(r#"Basic abc==, Bearer realm="r", DPoP algs="ES256""#);
        assert_eq!(c.len(), 3);
        assert_eq!(c[0].scheme, "Basic");
        assert_eq!(c[0].token68.as_deref(), Some("abc=="));
        assert_eq!(params(&c[1]), [("realm", "r")]);
        assert_eq!(c[2].scheme, "DPoP");
        assert_eq!(c[2].param("ALGS"), Some("ES256"));
        // A scheme alone, and one followed by another.
        let c = parse_www_authenticate("Bearer");
        assert_eq!(c.len(), 1);
        assert!(c[0].params.is_empty());
        let c = parse_www_authenticate("Negotiate, Bearer scope=\"a\"");
        assert_eq!(c.len(), 2);
        assert_eq!(c[1].param("scope"), Some("a"));
        // Garbage does not panic or loop.
        for junk in [
            "",
            ",,,",
            "\"",
            "=",
            "Bearer =",
            "Bearer a=\"unterminated",
            "Bearer ,a=b,,=c",
            "€ Bearer x=y",
        ] {
            let _ = parse_www_authenticate(junk);
        }
        let c = parse_www_authenticate("€ Bearer x=y");
        assert!(
            c.iter().any(|c| c.scheme == "Bearer" && c.param("x") == Some("y")),
            "{c:?}"
        );
    }

    #[test]
    fn bearer_is_preferred_and_empty_scope_is_none() {
        let b = BearerChallenge::from_header(r#"DPoP algs="ES256", Bearer scope="""#).unwrap();
        assert_eq!(b.scheme, "Bearer");
        assert_eq!(b.scope, None);
        assert!(BearerChallenge::from_header("Basic realm=\"x\"").is_none());
    }

    #[test]
    fn classification() {
        assert_eq!(
            classify(401, None),
            AuthSignal::Unauthorized(BearerChallenge::default())
        );
        assert!(matches!(
            classify(401, Some("Bearer error=\"invalid_token\"")),
            AuthSignal::Unauthorized(b) if b.error.as_deref() == Some("invalid_token")
        ));
        assert!(matches!(
            classify(403, Some("Bearer error=\"insufficient_scope\", scope=\"a b\"")),
            AuthSignal::InsufficientScope(b) if b.scope.as_ref().map(Vec::len) == Some(2)
        ));
        assert_eq!(classify(403, Some("Bearer error=\"invalid_token\"")), AuthSignal::Other);
        assert_eq!(classify(403, None), AuthSignal::Other);
        assert_eq!(classify(500, Some("Bearer")), AuthSignal::Other);
    }
}
