//! PKCE (RFC 7636) with S256, and `state`. The randomness comes from the
//! caller so the values are reproducible in tests.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;

/// A code verifier and its S256 challenge.
#[derive(Clone, PartialEq, Eq)]
pub struct Pkce {
    /// 43 characters: base64url of 32 random bytes (RFC 7636 §4.1).
    pub verifier: String,
    /// base64url(SHA-256(verifier)) (RFC 7636 §4.2).
    pub challenge: String,
}

impl std::fmt::Debug for Pkce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pkce")
            .field("verifier", &"****")
            .field("challenge", &self.challenge)
            .finish()
    }
}

impl Pkce {
    pub fn from_random(random: [u8; 32]) -> Self {
        Self::from_verifier(B64URL.encode(random))
    }

    pub fn from_verifier(verifier: String) -> Self {
        let challenge = s256(&verifier);
        Self { verifier, challenge }
    }
}

/// The S256 code challenge of a verifier.
pub fn s256(verifier: &str) -> String {
    B64URL.encode(ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes()))
}

/// A `state` value: base64url of 16 random bytes.
pub fn state(random: [u8; 16]) -> String {
    B64URL.encode(random)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc7636_appendix_b() {
        let p = Pkce::from_verifier("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk".into());
        assert_eq!(p.challenge, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
        // Computed independently with Node's crypto.
        assert_eq!(
            s256("dBjftJeZ4CVP-mJ92K9XYjoiZpAg6y62MHzXqj-7YfE"),
            "5cP8IARX-QZAJAaKw5bzG338dx5RizgTruWlmCH6r5U"
        );
    }

    #[test]
    fn verifiers_have_the_right_shape() {
        let p = Pkce::from_random([7; 32]);
        assert_eq!(p.verifier.len(), 43);
        assert!(
            p.verifier
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
        assert_eq!(p.challenge, s256(&p.verifier));
        assert_ne!(Pkce::from_random([8; 32]).verifier, p.verifier);
        assert_eq!(state([0; 16]).len(), 22);
        assert!(!format!("{p:?}").contains(&p.verifier));
    }
}
