//! DPoP (RFC 9449; SEP-1932 for MCP): access tokens bound to a key the
//! client holds, proved with a fresh signed JWT on every request.
//!
//! A session makes one P-256 key. The token request carries a proof
//! (`DPoP` header) so the authorization server binds the token to the key
//! (`cnf.jkt`); every MCP request then sends `Authorization: DPoP <token>`
//! and a new proof naming the method, the URL, a hash of the token (`ath`)
//! and the server's latest nonce, if it gave one.

use super::jwt::{KeyError, SigningKey, sign_compact};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use ring::signature::{self, EcdsaKeyPair, KeyPair as _};
use serde_json::{Value, json};

/// The `typ` of a proof's header.
pub const PROOF_TYP: &str = "dpop+jwt";
/// The `error` of a challenge asking for a nonce (token endpoint or resource server).
pub const USE_NONCE: &str = "use_dpop_nonce";
/// The header that carries a proof, and (in answers) a nonce.
pub const HEADER: &str = "DPoP";
pub const NONCE_HEADER: &str = "DPoP-Nonce";

/// When to use DPoP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DpopMode {
    /// When the authorization server advertises ES256 in
    /// `dpop_signing_alg_values_supported`, or the resource's challenge uses
    /// the DPoP scheme.
    #[default]
    Auto,
    Always,
    Never,
}

impl DpopMode {
    pub const ALL: [DpopMode; 3] = [DpopMode::Auto, DpopMode::Always, DpopMode::Never];

    pub fn as_str(self) -> &'static str {
        match self {
            DpopMode::Auto => "auto",
            DpopMode::Always => "always",
            DpopMode::Never => "never",
        }
    }

    /// Reads [`DpopMode::as_str`]'s words; anything else is `Auto`.
    pub fn parse(s: &str) -> Self {
        Self::ALL.into_iter().find(|m| m.as_str() == s).unwrap_or_default()
    }

    /// The key a session in this mode needs (none for `Never`).
    pub fn key(self) -> Result<Option<std::sync::Arc<DpopKey>>, KeyError> {
        match self {
            DpopMode::Never => Ok(None),
            _ => DpopKey::generate().map(|k| Some(std::sync::Arc::new(k))),
        }
    }
}

/// The session's proof-of-possession key (ES256).
pub struct DpopKey {
    key: SigningKey,
    jwk: Value,
    thumbprint: String,
}

impl std::fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DpopKey(jkt {}, ****)", self.thumbprint)
    }
}

impl DpopKey {
    /// A new P-256 key from the system's randomness.
    pub fn generate() -> Result<Self, KeyError> {
        let rng = ring::rand::SystemRandom::new();
        let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
        let refused = |_| KeyError::Generate("DPoP");
        let doc = EcdsaKeyPair::generate_pkcs8(alg, &rng).map_err(refused)?;
        let pair = EcdsaKeyPair::from_pkcs8(alg, doc.as_ref(), &rng).map_err(|_| KeyError::Generate("DPoP"))?;
        Ok(Self::from_pair(pair))
    }

    fn from_pair(pair: EcdsaKeyPair) -> Self {
        // An uncompressed point: 0x04 || x || y, 32 bytes each.
        let point = pair.public_key().as_ref().to_vec();
        let (x, y) = (B64URL.encode(&point[1..33]), B64URL.encode(&point[33..65]));
        // RFC 7638: the required members in lexicographic order, no spaces.
        let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
        let thumbprint = B64URL.encode(ring::digest::digest(&ring::digest::SHA256, canonical.as_bytes()));
        Self {
            key: SigningKey::EcP256(pair),
            jwk: json!({"kty": "EC", "crv": "P-256", "x": x, "y": y}),
            thumbprint,
        }
    }

    /// The JWK thumbprint (RFC 7638) a bound token names in `cnf.jkt`.
    pub fn thumbprint(&self) -> &str {
        &self.thumbprint
    }

    /// A proof for one request. `htu` loses its query and fragment (RFC
    /// 9449 §4.2); `access_token` adds `ath` (requests to the resource);
    /// `nonce` is the server's latest, if it gave one.
    pub fn proof(
        &self,
        htm: &str,
        htu: &str,
        now: u64,
        jti: &str,
        access_token: Option<&str>,
        nonce: Option<&str>,
    ) -> Result<String, KeyError> {
        let header = json!({"typ": PROOF_TYP, "alg": "ES256", "jwk": self.jwk});
        let mut claims = json!({"jti": jti, "htm": htm, "htu": target_uri(htu), "iat": now});
        if let Some(t) = access_token {
            claims["ath"] = Value::from(token_hash(t));
        }
        if let Some(n) = nonce {
            claims["nonce"] = Value::from(n);
        }
        sign_compact(&header, &claims, &self.key)
    }
}

/// `htu`: the URL without query and fragment.
pub fn target_uri(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            u.set_query(None);
            u.set_fragment(None);
            u.to_string()
        }
        Err(_) => url.split(['?', '#']).next().unwrap_or(url).to_owned(),
    }
}

/// `ath`: base64url(SHA-256(the access token's ASCII)).
pub fn token_hash(access_token: &str) -> String {
    B64URL.encode(ring::digest::digest(&ring::digest::SHA256, access_token.as_bytes()))
}

/// Whether an authorization server lists ES256 for DPoP (the one algorithm
/// mcpscope signs proofs with).
pub fn server_accepts(dpop_algs: Option<&[String]>) -> bool {
    dpop_algs.is_some_and(|a| a.iter().any(|x| x == "ES256"))
}

/// A fresh `jti` from 16 random bytes.
pub fn random_jti() -> String {
    use ring::rand::SecureRandom as _;
    let mut b = [0u8; 16];
    // The system RNG failing is not something a request can work around;
    // a zero jti is still a well-formed (if reusable) proof.
    let _ = ring::rand::SystemRandom::new().fill(&mut b);
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::UnparsedPublicKey;

    fn parts(jwt: &str) -> (Value, Value, Vec<u8>, String) {
        let mut it = jwt.split('.');
        let (h, c, s) = (it.next().unwrap(), it.next().unwrap(), it.next().unwrap());
        let header = serde_json::from_slice(&B64URL.decode(h).unwrap()).unwrap();
        let claims = serde_json::from_slice(&B64URL.decode(c).unwrap()).unwrap();
        (header, claims, B64URL.decode(s).unwrap(), format!("{h}.{c}"))
    }

    #[test]
    fn a_proof_verifies_with_the_key_in_its_header_and_names_the_request() {
        let key = DpopKey::generate().unwrap();
        let jwt = key
            .proof(
                "POST",
                "http://localhost:9/mcp?x=1#f",
                1_000,
                "j1",
                Some("tok"),
                Some("n1"),
            )
            .unwrap();
        let (header, claims, sig, input) = parts(&jwt);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert!(header["jwk"].get("d").is_none(), "no private part");
        assert_eq!(
            claims,
            json!({"jti": "j1", "htm": "POST", "htu": "http://localhost:9/mcp", "iat": 1000,
                   "ath": token_hash("tok"), "nonce": "n1"})
        );
        let x = B64URL.decode(header["jwk"]["x"].as_str().unwrap()).unwrap();
        let y = B64URL.decode(header["jwk"]["y"].as_str().unwrap()).unwrap();
        let point = [&[4u8][..], &x, &y].concat();
        UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point)
            .verify(input.as_bytes(), &sig)
            .expect("the proof verifies with its own jwk");
        assert!(format!("{key:?}").contains("****"));
    }

    #[test]
    fn the_thumbprint_and_token_hash_follow_the_rfcs() {
        // RFC 9449 §7.1's example: ath of this token.
        assert_eq!(
            token_hash("Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"),
            "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"
        );
        let key = DpopKey::generate().unwrap();
        assert_eq!(key.thumbprint().len(), 43, "base64url of 32 bytes");
        assert_eq!(target_uri("https://a.example/p?q=1"), "https://a.example/p");
        assert!(server_accepts(Some(&["RS256".into(), "ES256".into()])));
        assert!(!server_accepts(Some(&["RS256".into()])));
        assert!(!server_accepts(None));
        assert_ne!(random_jti(), random_jti());
    }
}
