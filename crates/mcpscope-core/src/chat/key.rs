//! Where a model provider's key comes from, in one place for the CLI and
//! the app: the variable the user named, else the one the provider's own
//! SDK reads (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, …), else the OS
//! keyring's entry `model:PROVIDER`. Never from a flag's value, never
//! written anywhere but the keyring.

use crate::config::keyring::{Keyring, KeyringError};
use crate::model::provider::ModelSpec;

/// Where the key was found (said to the user; the key itself never is).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeySource {
    Variable(String),
    Keyring,
    /// A local server that needs none (Ollama, llama.cpp, vLLM, LM Studio).
    NotNeeded,
}

impl std::fmt::Display for KeySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeySource::Variable(v) => write!(f, "${v}"),
            KeySource::Keyring => f.write_str("the keyring"),
            KeySource::NotNeeded => f.write_str("no key needed"),
        }
    }
}

/// A key, with where it came from. Its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct FoundKey {
    pub key: Option<String>,
    pub source: KeySource,
}

impl std::fmt::Debug for FoundKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FoundKey({})", self.source)
    }
}

/// The keyring entry a provider's key is kept under.
pub fn keyring_entry(spec: &ModelSpec) -> String {
    format!("model:{}", spec.provider)
}

/// What the environment holds, read through `var` (the process's own in
/// use; a test gives its own).
pub fn find_key(
    spec: &ModelSpec,
    named: Option<&str>,
    var: &dyn Fn(&str) -> Option<String>,
    keyring: &dyn Fn() -> Result<Keyring, KeyringError>,
) -> Result<FoundKey, String> {
    let wanted = named.or(spec.key_variable());
    if let Some(name) = wanted
        && let Some(k) = var(name).map(|k| k.trim().to_owned()).filter(|k| !k.is_empty())
    {
        return Ok(FoundKey {
            key: Some(k),
            source: KeySource::Variable(name.to_owned()),
        });
    }
    // A named variable that is empty is the user's mistake: say so rather
    // than quietly use another key.
    if let Some(name) = named {
        return Err(format!("no key for {}: ${name} is not set", spec.provider));
    }
    let from_keyring = keyring().and_then(|k| k.get(&keyring_entry(spec)));
    match (from_keyring, wanted) {
        (Ok(Some(k)), _) if !k.trim().is_empty() => Ok(FoundKey {
            key: Some(k.trim().to_owned()),
            source: KeySource::Keyring,
        }),
        // A local server: no key, and none is needed.
        (_, None) => Ok(FoundKey {
            key: None,
            source: KeySource::NotNeeded,
        }),
        (Ok(_), Some(var)) => Err(format!(
            "no key for {}: set {var}, or keep one in the keyring with `mcpscope chat --store-key --model {}:…` (it reads the key from standard input)",
            spec.provider, spec.provider
        )),
        (Err(e), Some(var)) => Err(format!("no key for {}: set {var} (the keyring: {e})", spec.provider)),
    }
}

/// [`find_key`] with this process's environment and the system keyring.
pub fn find_key_here(spec: &ModelSpec, named: Option<&str>) -> Result<FoundKey, String> {
    find_key(spec, named, &|n| std::env::var(n).ok(), &Keyring::open)
}

/// Keeps `key` in the keyring for this provider.
pub fn store_key(spec: &ModelSpec, key: &str) -> Result<(), KeyringError> {
    Keyring::open()?.set(&keyring_entry(spec), key.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_keyring() -> Result<Keyring, KeyringError> {
        Err(KeyringError::Unavailable {
            reason: "none in this test".into(),
        })
    }

    #[test]
    fn the_named_variable_then_the_sdks_then_the_keyring() {
        let openai = ModelSpec::parse("openai:gpt-x", None).unwrap();
        let env = |n: &str| match n {
            "OPENAI_API_KEY" => Some(" sk-1 ".to_owned()),
            "MINE" => Some("sk-2".to_owned()),
            _ => None,
        };
        let found = find_key(&openai, None, &env, &no_keyring).unwrap();
        assert_eq!(found.key.as_deref(), Some("sk-1"));
        assert_eq!(found.source, KeySource::Variable("OPENAI_API_KEY".into()));
        assert!(!format!("{found:?}").contains("sk-1"), "Debug hides the key");
        let mine = find_key(&openai, Some("MINE"), &env, &no_keyring).unwrap();
        assert_eq!(mine.key.as_deref(), Some("sk-2"));
        let e = find_key(&openai, Some("UNSET"), &env, &no_keyring).unwrap_err();
        assert!(e.contains("$UNSET is not set"), "{e}");
        let e = find_key(&openai, None, &|_| None, &no_keyring).unwrap_err();
        assert!(
            e.contains("set OPENAI_API_KEY") && e.contains("none in this test"),
            "{e}"
        );
        let local = ModelSpec::parse("ollama:llama3.1", None).unwrap();
        assert_eq!(
            find_key(&local, None, &|_| None, &no_keyring).unwrap().source,
            KeySource::NotNeeded
        );
        assert_eq!(keyring_entry(&openai), "model:openai");
    }
}
