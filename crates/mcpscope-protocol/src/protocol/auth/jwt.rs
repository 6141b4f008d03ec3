//! JSON Web Tokens: building signed client assertions (RFC 7523, ES256 or
//! RS256 with `ring`) and decoding tokens for display. Decoding never
//! verifies a signature: what it shows is what the token claims.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD as B64URL};
use ring::signature::{self, EcdsaKeyPair, KeyPair as _, RsaKeyPair};
use serde_json::{Value, json};

/// A JWS algorithm mcpscope can sign with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JwsAlg {
    ES256,
    RS256,
}

impl JwsAlg {
    pub fn as_str(self) -> &'static str {
        match self {
            JwsAlg::ES256 => "ES256",
            JwsAlg::RS256 => "RS256",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_uppercase().as_str() {
            "ES256" => Some(JwsAlg::ES256),
            "RS256" => Some(JwsAlg::RS256),
            _ => None,
        }
    }
}

/// A private key for client assertions.
pub enum SigningKey {
    EcP256(EcdsaKeyPair),
    Rsa(RsaKeyPair),
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SigningKey({}, ****)", self.alg().as_str())
    }
}

impl SigningKey {
    pub fn alg(&self) -> JwsAlg {
        match self {
            SigningKey::EcP256(_) => JwsAlg::ES256,
            SigningKey::Rsa(_) => JwsAlg::RS256,
        }
    }

    /// Loads a PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`): a P-256 key
    /// (ES256) or an RSA key (RS256), whichever it is.
    pub fn from_pem(pem: &str) -> Result<Self, KeyError> {
        if pem.contains("BEGIN EC PRIVATE KEY") || pem.contains("BEGIN RSA PRIVATE KEY") {
            return Err(KeyError::LegacyFormat);
        }
        if pem.contains("ENCRYPTED PRIVATE KEY") {
            return Err(KeyError::Encrypted);
        }
        let b64: String = pem
            .lines()
            .map(str::trim)
            .filter(|l| !l.starts_with("-----") && !l.is_empty())
            .collect();
        let der = STANDARD.decode(b64.as_bytes()).map_err(KeyError::NotPem)?;
        let rng = ring::rand::SystemRandom::new();
        if let Ok(k) = EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &der, &rng) {
            return Ok(SigningKey::EcP256(k));
        }
        if let Ok(k) = RsaKeyPair::from_pkcs8(&der) {
            return Ok(SigningKey::Rsa(k));
        }
        Err(KeyError::Unsupported)
    }

    fn sign(&self, input: &[u8]) -> Result<Vec<u8>, KeyError> {
        let rng = ring::rand::SystemRandom::new();
        match self {
            SigningKey::EcP256(k) => k
                .sign(&rng, input)
                .map(|s| s.as_ref().to_vec())
                .map_err(|_| KeyError::SigningFailed("ES256")),
            SigningKey::Rsa(k) => {
                let mut sig = vec![0; k.public().modulus_len()];
                k.sign(&signature::RSA_PKCS1_SHA256, &rng, input, &mut sig)
                    .map_err(|_| KeyError::SigningFailed("RS256"))?;
                Ok(sig)
            }
        }
    }

    /// The public key's bytes (for tests and for showing which key signed).
    pub fn public_key(&self) -> Vec<u8> {
        match self {
            SigningKey::EcP256(k) => k.public_key().as_ref().to_vec(),
            SigningKey::Rsa(k) => k.public_key().as_ref().to_vec(),
        }
    }
}

/// Why a key could not be loaded, made or used.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error(
        "the key is in a legacy format (SEC1/PKCS#1): convert it to PKCS#8 with \
         `openssl pkcs8 -topk8 -nocrypt -in KEY -out KEY.p8`"
    )]
    LegacyFormat,
    #[error("the key is encrypted: give an unencrypted PKCS#8 key")]
    Encrypted,
    #[error("the key is not PEM (base64: {0})")]
    NotPem(base64::DecodeError),
    #[error("the key is neither a P-256 (ES256) nor an RSA (RS256) PKCS#8 private key")]
    Unsupported,
    #[error("{0} signing failed")]
    SigningFailed(&'static str),
    /// The system's randomness refused to make a key.
    #[error("could not make a {0} key")]
    Generate(&'static str),
}

/// `header.claims.signature`, compact serialization.
pub fn sign_compact(header: &Value, claims: &Value, key: &SigningKey) -> Result<String, KeyError> {
    let input = format!(
        "{}.{}",
        B64URL.encode(header.to_string()),
        B64URL.encode(claims.to_string())
    );
    let sig = key.sign(input.as_bytes())?;
    Ok(format!("{input}.{}", B64URL.encode(sig)))
}

/// A `private_key_jwt` client assertion (RFC 7523 §2.2, §3): issuer and
/// subject the client id, audience the authorization server (its issuer,
/// the identifier RFC 7523 and the MCP extension ask for), valid five minutes.
pub fn client_assertion(
    client_id: &str,
    audience: &str,
    key: &SigningKey,
    kid: Option<&str>,
    now: u64,
    jti: &str,
) -> Result<String, KeyError> {
    let mut header = json!({"alg": key.alg().as_str(), "typ": "JWT"});
    if let Some(k) = kid {
        header["kid"] = Value::from(k);
    }
    let claims = json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + 300,
        "jti": jti,
    });
    sign_compact(&header, &claims, key)
}

/// A token decoded for a person: header and claims, the signature only counted.
#[derive(Clone, Debug, PartialEq)]
pub struct DecodedJwt {
    /// Where it was: `access_token`, `id_token`, `client_assertion`, …
    pub field: String,
    pub header: Value,
    pub claims: Value,
    pub signature_len: usize,
    /// Facts worth a glance ("expired 3 min ago", "audience …"); never a verdict on the signature.
    pub notes: Vec<String>,
}

impl DecodedJwt {
    pub fn to_json(&self) -> Value {
        json!({
            "field": self.field,
            "header": self.header,
            "claims": self.claims,
            "signature": format!("{} bytes, not verified", self.signature_len),
            "notes": self.notes,
        })
    }

    pub fn from_json(v: &Value) -> Option<Self> {
        let signature_len = v
            .get("signature")
            .and_then(Value::as_str)
            .and_then(|s| s.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        Some(Self {
            field: v.get("field")?.as_str()?.to_owned(),
            header: v.get("header").cloned().unwrap_or(Value::Null),
            claims: v.get("claims").cloned().unwrap_or(Value::Null),
            signature_len,
            notes: v
                .get("notes")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect())
                .unwrap_or_default(),
        })
    }
}

fn human_seconds(s: u64) -> String {
    match s {
        0..=299 => format!("{s} s"),
        300..=7199 => format!("{} min", s / 60),
        _ => format!("{} h", s / 3600),
    }
}

/// Decodes a compact JWS without verifying it; `None` when it is not one
/// (an opaque token). `now` (Unix seconds) turns `exp` into words.
pub fn decode(field: &str, token: &str, now: u64) -> Option<DecodedJwt> {
    let mut parts = token.split('.');
    let (h, c, s) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let header: Value = serde_json::from_slice(&B64URL.decode(h.trim_end_matches('=')).ok()?).ok()?;
    let claims: Value = serde_json::from_slice(&B64URL.decode(c.trim_end_matches('=')).ok()?).ok()?;
    if !header.is_object() || !claims.is_object() || header.get("alg").is_none() {
        return None;
    }
    let signature_len = B64URL.decode(s.trim_end_matches('=')).map_or(0, |b| b.len());
    let mut notes = vec!["signature not verified".to_owned()];
    if let Some(exp) = claims.get("exp").and_then(Value::as_u64) {
        if exp <= now {
            notes.push(format!("expired {} ago", human_seconds(now - exp)));
        } else {
            notes.push(format!("expires in {}", human_seconds(exp - now)));
        }
    }
    if let Some(t) = header.get("typ").and_then(Value::as_str)
        && !t.eq_ignore_ascii_case("jwt")
    {
        notes.push(format!("typ {t}"));
    }
    Some(DecodedJwt {
        field: field.to_owned(),
        header,
        claims,
        signature_len,
        notes,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use ring::signature::UnparsedPublicKey;

    /// A P-256 PKCS#8 key in the shape the conformance suite hands out
    /// (jose's exportPKCS8: the public key included).
    pub(crate) fn test_key_pem() -> String {
        let rng = ring::rand::SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let b64 = STANDARD.encode(doc.as_ref());
        let mut pem = "-----BEGIN PRIVATE KEY-----\n".to_owned();
        for chunk in b64.as_bytes().chunks(64) {
            pem.push_str(std::str::from_utf8(chunk).unwrap());
            pem.push('\n');
        }
        pem.push_str("-----END PRIVATE KEY-----\n");
        pem
    }

    #[test]
    fn es256_assertions_verify_with_the_public_key() {
        let key = SigningKey::from_pem(&test_key_pem()).unwrap();
        assert_eq!(key.alg(), JwsAlg::ES256);
        let jwt = client_assertion("client-1", "http://localhost:9/", &key, Some("k1"), 1_000, "jti-1").unwrap();
        let (input, sig) = jwt.rsplit_once('.').unwrap();
        let sig = B64URL.decode(sig).unwrap();
        assert_eq!(sig.len(), 64, "JWS ES256 is r||s, not DER");
        UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, key.public_key())
            .verify(input.as_bytes(), &sig)
            .expect("signature verifies");
        let d = decode("client_assertion", &jwt, 1_100).unwrap();
        assert_eq!(d.header, json!({"alg": "ES256", "typ": "JWT", "kid": "k1"}));
        assert_eq!(
            d.claims,
            json!({"iss": "client-1", "sub": "client-1", "aud": "http://localhost:9/", "iat": 1000, "exp": 1300, "jti": "jti-1"})
        );
        assert_eq!(d.signature_len, 64);
        assert!(d.notes.contains(&"signature not verified".to_owned()));
        assert!(d.notes.contains(&"expires in 200 s".to_owned()), "{:?}", d.notes);
        assert!(!format!("{key:?}").contains("BEGIN"));
    }

    #[test]
    fn bad_keys_are_explained() {
        let refused = |pem: &str| SigningKey::from_pem(pem).err().map(|e| (e.to_string(), e));
        let (text, e) = refused("-----BEGIN EC PRIVATE KEY-----\nabc\n-----END EC PRIVATE KEY-----").unwrap();
        assert!(matches!(e, KeyError::LegacyFormat) && text.contains("pkcs8"), "{text}");
        let (text, e) = refused("-----BEGIN PRIVATE KEY-----\n!!!\n-----END PRIVATE KEY-----").unwrap();
        assert!(matches!(e, KeyError::NotPem(_)) && text.contains("base64"), "{text}");
        let (_, e) = refused("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----").unwrap();
        assert!(matches!(e, KeyError::Unsupported));
        assert_eq!(JwsAlg::parse("es256"), Some(JwsAlg::ES256));
        assert_eq!(JwsAlg::parse("HS256"), None);
    }

    #[test]
    fn decoding_for_display() {
        let h = B64URL.encode(r#"{"alg":"RS256","typ":"oauth-id-jag+jwt"}"#);
        let c = B64URL.encode(r#"{"sub":"u","exp":100}"#);
        let t = format!("{h}.{c}.c2ln");
        let d = decode("access_token", &t, 400).unwrap();
        assert_eq!(d.claims["sub"], "u");
        assert_eq!(d.signature_len, 3);
        assert!(d.notes.contains(&"expired 5 min ago".to_owned()), "{:?}", d.notes);
        assert!(d.notes.contains(&"typ oauth-id-jag+jwt".to_owned()));
        assert_eq!(DecodedJwt::from_json(&d.to_json()), Some(d));
        // Opaque tokens and near misses are not JWTs.
        for t in ["test-token-123", "a.b", "a.b.c.d", "e30.e30.", &format!("{c}.{c}.x")] {
            assert!(decode("access_token", t, 0).is_none(), "{t}");
        }
    }
}
