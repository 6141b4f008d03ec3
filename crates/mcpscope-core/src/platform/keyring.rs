//! The system's credential store: the Secret Service on Linux (GNOME
//! Keyring, KWallet), the Keychain on macOS, the Credential Manager on
//! Windows. What mcpscope keeps there, and the deadline on every call, is
//! `config::keyring`'s.

use keyring_core::CredentialStore;
use std::sync::Arc;

/// This system's credential store, or why there is none, in words a user
/// can act on. May block (a D-Bus connection): call it with a deadline.
#[cfg(target_os = "linux")]
pub fn credential_store() -> Result<Arc<CredentialStore>, String> {
    zbus_secret_service_keyring_store::Store::new()
        .map(|s| s as Arc<CredentialStore>)
        .map_err(|e| secret_service_reason(&e.to_string()))
}

#[cfg(target_os = "macos")]
pub fn credential_store() -> Result<Arc<CredentialStore>, String> {
    apple_native_keyring_store::keychain::Store::new()
        .map(|s| s as Arc<CredentialStore>)
        .map_err(|e| e.to_string())
}

#[cfg(windows)]
pub fn credential_store() -> Result<Arc<CredentialStore>, String> {
    windows_native_keyring_store::Store::new()
        .map(|s| s as Arc<CredentialStore>)
        .map_err(|e| e.to_string())
}

#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
pub fn credential_store() -> Result<Arc<CredentialStore>, String> {
    Err("this build has no keyring support for this platform".into())
}

/// What to give the store with each entry, for one named `label` where the
/// store shows names: the Secret Service's `label` (Seahorse lists it). The
/// Keychain and the Credential Manager refuse any modifier they do not know
/// ("Value of 'label' is invalid: unknown key"), so there none is given.
pub fn entry_modifiers(label: &str) -> std::collections::HashMap<&'static str, String> {
    let mut modifiers = std::collections::HashMap::new();
    if cfg!(target_os = "linux") {
        modifiers.insert("label", label.to_owned());
    }
    modifiers
}

/// The Secret Service's failure in the words a user acts on (the library's
/// text nests three crates' prefixes around a D-Bus error name).
#[cfg(any(target_os = "linux", test))]
fn secret_service_reason(raw: &str) -> String {
    let text = raw
        .trim_start_matches("Platform failure: ")
        .trim_start_matches("zbus error: ");
    if let Some(rest) = text.strip_prefix("Failed to connect to address `")
        && let Some((address, _)) = rest.split_once('`')
    {
        return format!("no D-Bus session bus at {address}");
    }
    if text.contains("ServiceUnknown") || text.contains("org.freedesktop.secrets") {
        return "no Secret Service (GNOME Keyring, KWallet) on the session bus".into();
    }
    text.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_service_failures_read_as_what_to_do() {
        assert_eq!(
            secret_service_reason(
                "Platform failure: zbus error: Failed to connect to address `unix:path=/run/user/0/bus`: No such file or directory (os error 2)"
            ),
            "no D-Bus session bus at unix:path=/run/user/0/bus"
        );
        assert_eq!(
            secret_service_reason(
                "Platform failure: zbus error: org.freedesktop.DBus.Error.ServiceUnknown: The name org.freedesktop.secrets was not provided"
            ),
            "no Secret Service (GNOME Keyring, KWallet) on the session bus"
        );
        assert_eq!(secret_service_reason("something else"), "something else");
    }
}
