//! The OS keyring: the Secret Service on Linux (GNOME Keyring, KWallet),
//! the Keychain on macOS, the Credential Manager on Windows.
//!
//! mcpscope keeps short strings there under the service name `mcpscope`, one
//! entry per key (`oauth:<server URL>`, `launcher:<server>:env:<NAME>`…).
//! Every call runs on a thread of its own with a deadline: a Secret Service
//! whose collection is locked may answer with an unlock prompt that nobody
//! will ever see on a headless machine, and a hung keyring must cost the
//! caller a clear message, not the session.

use crate::platform::keyring::{credential_store, entry_modifiers};
use std::sync::Arc;
use std::time::Duration;

/// The service name every entry is filed under.
pub const SERVICE: &str = "mcpscope";

/// How long one keyring call may take before mcpscope gives up on it.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(10);

/// Why the keyring could not be used.
#[derive(Debug, thiserror::Error)]
pub enum KeyringError {
    /// No keyring service answers (no D-Bus session, no Secret Service, or a
    /// build for a platform without one).
    #[error("no keyring service: {reason}")]
    Unavailable { reason: String },
    #[error(
        "the keyring did not answer within {} s (locked, with an unlock prompt nobody can see?)",
        .0.as_secs()
    )]
    NoAnswer(Duration),
    #[error("the keyring refused to {action} {key:?}: {reason}")]
    Failed {
        action: &'static str,
        key: String,
        reason: String,
    },
    #[error("the keyring entry {0:?} is not text")]
    NotText(String),
}

/// A connection to the platform's keyring.
#[derive(Clone)]
pub struct Keyring {
    store: Arc<keyring_core::CredentialStore>,
    deadline: Duration,
}

impl std::fmt::Debug for Keyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keyring")
    }
}

impl Keyring {
    /// Connects to the platform's keyring and checks that it answers (a
    /// lookup of an entry that need not exist), so a missing service is
    /// found here, once, and not at the first token saved.
    pub fn open() -> Result<Self, KeyringError> {
        Self::open_with_deadline(DEFAULT_DEADLINE)
    }

    pub fn open_with_deadline(deadline: Duration) -> Result<Self, KeyringError> {
        let store = within(deadline, credential_store)?.map_err(|reason| KeyringError::Unavailable { reason })?;
        let keyring = Self { store, deadline };
        match keyring.get("probe") {
            Ok(_) => Ok(keyring),
            Err(KeyringError::Failed { reason, .. }) => Err(KeyringError::Unavailable { reason }),
            Err(e) => Err(e),
        }
    }

    /// The text kept under `key`, or `None` when there is none.
    pub fn get(&self, key: &str) -> Result<Option<String>, KeyringError> {
        let key_owned = key.to_owned();
        self.call("read", key, move |entry| match entry.get_secret() {
            Ok(bytes) => String::from_utf8(bytes)
                .map(Some)
                .map_err(|_| KeyringError::NotText(key_owned)),
            Err(keyring_core::Error::NoEntry) => Ok(None),
            Err(e) => Err(failed("read", &key_owned, e)),
        })
    }

    /// Keeps `value` under `key`, replacing what was there.
    pub fn set(&self, key: &str, value: &str) -> Result<(), KeyringError> {
        let key_owned = key.to_owned();
        let value = value.to_owned();
        self.call("write", key, move |entry| {
            entry
                .set_secret(value.as_bytes())
                .map_err(|e| failed("write", &key_owned, e))
        })
    }

    /// Removes `key`; whether there was one.
    pub fn delete(&self, key: &str) -> Result<bool, KeyringError> {
        let key_owned = key.to_owned();
        self.call("delete", key, move |entry| match entry.delete_credential() {
            Ok(()) => Ok(true),
            Err(keyring_core::Error::NoEntry) => Ok(false),
            Err(e) => Err(failed("delete", &key_owned, e)),
        })
    }

    fn call<T: Send + 'static>(
        &self,
        action: &'static str,
        key: &str,
        op: impl FnOnce(keyring_core::Entry) -> Result<T, KeyringError> + Send + 'static,
    ) -> Result<T, KeyringError> {
        let store = Arc::clone(&self.store);
        let key = key.to_owned();
        within(self.deadline, move || {
            let modifiers = entry_modifiers(&format!("mcpscope: {key}"));
            let modifiers = modifiers.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let entry = keyring_core::Entry::new_in_store_with_modifiers(&store, SERVICE, &key, &modifiers)
                .map_err(|e| failed(action, &key, e))?;
            op(entry)
        })?
    }
}

fn failed(action: &'static str, key: &str, e: impl std::fmt::Display) -> KeyringError {
    KeyringError::Failed {
        action,
        key: key.to_owned(),
        reason: e.to_string(),
    }
}

/// Runs `op` on a thread of its own and waits at most `deadline` for it. A
/// call still stuck then is left to finish (or not) on its own thread.
fn within<T: Send + 'static>(deadline: Duration, op: impl FnOnce() -> T + Send + 'static) -> Result<T, KeyringError> {
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::Builder::new()
        .name("keyring".into())
        .spawn(move || {
            let _ = tx.send(op());
        })
        .map_err(|e| KeyringError::Unavailable {
            reason: format!("cannot start a thread for it: {e}"),
        })?;
    match rx.recv_timeout(deadline) {
        Ok(v) => Ok(v),
        Err(crossbeam_channel::RecvTimeoutError::Timeout) => Err(KeyringError::NoAnswer(deadline)),
        // The thread ended without an answer: the store's library panicked.
        Err(crossbeam_channel::RecvTimeoutError::Disconnected) => Err(KeyringError::Unavailable {
            reason: "the keyring library stopped without an answer".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_that_never_returns_is_given_up_on() {
        let stuck = within(Duration::from_millis(50), || {
            std::thread::sleep(Duration::from_secs(5));
        });
        assert!(matches!(stuck, Err(KeyringError::NoAnswer(_))));
        assert_eq!(within(Duration::from_secs(5), || 7).unwrap(), 7);
    }

    #[test]
    fn a_call_that_panics_is_a_message_not_a_panic() {
        let r: Result<(), _> = within(Duration::from_secs(5), || panic!("library bug"));
        assert!(matches!(r, Err(KeyringError::Unavailable { .. })), "{r:?}");
    }
}
