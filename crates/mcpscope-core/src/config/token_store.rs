//! Where OAuth tokens and client registrations live between sessions.
//!
//! By default nowhere: an [`Authorizer`](crate::transport::auth::Authorizer)
//! keeps them in memory for its session, and a store in memory keeps them
//! for the process. Opt in and they are kept per server URL, either in the
//! OS keyring (one entry per server, `oauth:<URL>`, and an index entry
//! listing the URLs, which a keyring cannot be asked for on every platform)
//! or in a JSON file that only the user can read: the directory is created
//! `0700`, the file written `0600` (to a new file, then renamed over the
//! old one), and neither is ever reached through a symbolic link. A file
//! others could read is refused, not used. [`TokenStore::open_preferred`]
//! is the keyring, else that file (the app's store, `--token-store keyring`).
//!
//! Nothing here is ever printed: `Debug` shows server URLs and issuers only.

use crate::config::keyring::{Keyring, KeyringError};
use crate::platform::fs::{
    User, access_of, is_refused_link, make_blocking, others_may_access, owner_only_dirs, this_file_only,
};
use crate::protocol::auth::flow::{Granted, Memory};
use crate::protocol::auth::registration::{Client, ClientKind};
use crate::protocol::auth::token::TokenSet;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const FORMAT: &str = "mcpscope-oauth-store";
/// The keyring entry listing the servers that have one of their own.
const KEYRING_INDEX: &str = "oauth-servers";
/// The keyring entry listing the secret values' keys.
const KEYRING_SECRETS_INDEX: &str = "secrets";

fn keyring_key(server_url: &str) -> String {
    format!("oauth:{server_url}")
}

fn keyring_secret_key(key: &str) -> String {
    format!("secret:{key}")
}

pub struct TokenStore {
    backing: Backing,
    servers: BTreeMap<String, Memory>,
    /// Other secret values by key (the launcher's header and environment
    /// values the user asked to keep).
    secrets: BTreeMap<String, String>,
}

enum Backing {
    Memory,
    File(PathBuf),
    Keyring(Keyring),
}

impl std::fmt::Debug for TokenStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl TokenStore {
    /// Tokens for this process only.
    pub fn in_memory() -> Self {
        Self {
            backing: Backing::Memory,
            servers: BTreeMap::new(),
            secrets: BTreeMap::new(),
        }
    }

    /// A store in the OS keyring (what it holds is read now).
    pub fn open_keyring(keyring: Keyring) -> Result<Self, TokenStoreError> {
        let mut store = Self {
            backing: Backing::Keyring(keyring),
            servers: BTreeMap::new(),
            secrets: BTreeMap::new(),
        };
        let Backing::Keyring(k) = &store.backing else {
            unreachable!("set above")
        };
        let index = |name: &str| -> Result<Vec<String>, TokenStoreError> {
            match k.get(name)? {
                None => Ok(Vec::new()),
                Some(text) => serde_json::from_str(&text).map_err(|source| TokenStoreError::KeyringNotJson {
                    key: name.into(),
                    source,
                }),
            }
        };
        for key in index(KEYRING_SECRETS_INDEX)? {
            if let Some(value) = k.get(&keyring_secret_key(&key))? {
                store.secrets.insert(key, value);
            }
        }
        for url in index(KEYRING_INDEX)? {
            let key = keyring_key(&url);
            // An index naming an entry that is gone (removed with another
            // tool) is not an error: that server has no token.
            if let Some(text) = k.get(&key)? {
                let v: Value =
                    serde_json::from_str(&text).map_err(|source| TokenStoreError::KeyringNotJson { key, source })?;
                store.servers.insert(url, memory_from_json(&v));
            }
        }
        Ok(store)
    }

    /// The keyring when the system has one that answers, else the private
    /// file at `fallback`; with the reason, to say once, when it is the file.
    pub fn open_preferred(fallback: &Path) -> Result<(Self, Option<String>), TokenStoreError> {
        match Keyring::open() {
            Ok(k) => Ok((Self::open_keyring(k)?, None)),
            Err(e @ (KeyringError::Unavailable { .. } | KeyringError::NoAnswer(_))) => {
                let store = Self::open(fallback)?;
                let note = format!(
                    "{e}: tokens are kept in {} instead (readable by you only)",
                    fallback.display()
                );
                Ok((store, Some(note)))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// `oauth-tokens.json` in mcpscope's state directory, where this system
    /// keeps it (`$XDG_STATE_HOME/mcpscope`, else `~/.local/state/mcpscope`
    /// on Linux; see [`crate::platform::dirs::state_root`]).
    pub fn default_path() -> Option<PathBuf> {
        Some(crate::record::state_dir::root().ok()?.join("oauth-tokens.json"))
    }

    /// A store kept in `path` (read now if it exists).
    pub fn open(path: &Path) -> Result<Self, TokenStoreError> {
        let mut store = Self {
            backing: Backing::File(path.to_owned()),
            servers: BTreeMap::new(),
            secrets: BTreeMap::new(),
        };
        if let Some(text) = read_private(path)? {
            let v: Value = serde_json::from_str(&text).map_err(|source| TokenStoreError::NotJson {
                path: path.to_owned(),
                source,
            })?;
            if v.get("format").and_then(Value::as_str) != Some(FORMAT) {
                return Err(TokenStoreError::NotAStore(path.to_owned()));
            }
            if let Some(servers) = v.get("servers").and_then(Value::as_object) {
                for (url, m) in servers {
                    store.servers.insert(url.clone(), memory_from_json(m));
                }
            }
            if let Some(secrets) = v.get("secrets").and_then(Value::as_object) {
                for (key, value) in secrets {
                    if let Some(value) = value.as_str() {
                        store.secrets.insert(key.clone(), value.to_owned());
                    }
                }
            }
        }
        Ok(store)
    }

    /// The file the tokens are kept in, if they are kept in one.
    pub fn path(&self) -> Option<&Path> {
        match &self.backing {
            Backing::File(p) => Some(p),
            _ => None,
        }
    }

    /// Where the tokens are kept, in words.
    pub fn place(&self) -> String {
        match &self.backing {
            Backing::Memory => "memory".into(),
            Backing::File(p) => p.display().to_string(),
            Backing::Keyring(_) => "the OS keyring".into(),
        }
    }

    /// What is kept for a server (empty when nothing).
    pub fn load(&self, server_url: &str) -> Memory {
        self.servers.get(server_url).cloned().unwrap_or_default()
    }

    /// Keeps what is worth keeping of `memory` (token, refresh tokens,
    /// registrations) and writes the file, if there is one.
    pub fn save(&mut self, server_url: &str, memory: &Memory) -> Result<(), TokenStoreError> {
        let kept = Memory {
            token: memory.token.clone(),
            refresh_tokens: memory.refresh_tokens.clone(),
            clients: memory.clients.clone(),
            ..Memory::default()
        };
        self.servers.insert(server_url.to_owned(), kept);
        self.write(server_url)
    }

    /// Forgets a server's tokens and registrations.
    pub fn forget(&mut self, server_url: &str) -> Result<bool, TokenStoreError> {
        let had = self.servers.remove(server_url).is_some();
        self.write(server_url)?;
        Ok(had)
    }

    /// The secret value kept under `key`.
    pub fn secret(&self, key: &str) -> Option<&str> {
        self.secrets.get(key).map(String::as_str)
    }

    /// Keeps `value` under `key` (`None` forgets it); writes only on a change.
    pub fn set_secret(&mut self, key: &str, value: Option<&str>) -> Result<(), TokenStoreError> {
        if self.secret(key) == value {
            return Ok(());
        }
        match value {
            Some(v) => self.secrets.insert(key.to_owned(), v.to_owned()),
            None => self.secrets.remove(key),
        };
        match &self.backing {
            Backing::Keyring(k) => {
                let entry = keyring_secret_key(key);
                match value {
                    Some(v) => k.set(&entry, v)?,
                    None => {
                        k.delete(&entry)?;
                    }
                }
                let keys: Vec<&str> = self.secrets.keys().map(String::as_str).collect();
                k.set(KEYRING_SECRETS_INDEX, &serde_json::to_string(&keys).unwrap_or_default())?;
                Ok(())
            }
            _ => self.write_file(),
        }
    }

    pub fn servers(&self) -> impl Iterator<Item = &str> {
        self.servers.keys().map(String::as_str)
    }

    /// Where the store is and what it holds, without a secret.
    pub fn describe(&self) -> String {
        let place = self.place();
        let entries: Vec<String> = self
            .servers
            .iter()
            .map(|(url, m)| match &m.token {
                Some(g) => format!("{url}: token from {} (****)", g.issuer),
                None => format!("{url}: no token"),
            })
            .collect();
        format!("TokenStore({place}; {})", entries.join("; "))
    }

    /// Writes what changed for `server_url` (the whole file, or that
    /// server's keyring entry and the index).
    fn write(&self, server_url: &str) -> Result<(), TokenStoreError> {
        match &self.backing {
            Backing::Keyring(k) => self.write_keyring(k, server_url),
            _ => self.write_file(),
        }
    }

    /// Writes the whole file (nothing in memory).
    fn write_file(&self) -> Result<(), TokenStoreError> {
        let Backing::File(path) = &self.backing else {
            return Ok(());
        };
        let servers: Map<String, Value> = self
            .servers
            .iter()
            .map(|(k, m)| (k.clone(), memory_to_json(m)))
            .collect();
        let doc = json!({"format": FORMAT, "version": 1, "servers": servers, "secrets": self.secrets});
        // A map of strings and numbers always serialises.
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        write_private(path, text.as_bytes())
    }

    fn write_keyring(&self, k: &Keyring, server_url: &str) -> Result<(), TokenStoreError> {
        let key = keyring_key(server_url);
        match self.servers.get(server_url) {
            Some(m) => k.set(&key, &memory_to_json(m).to_string())?,
            None => {
                k.delete(&key)?;
            }
        }
        let urls: Vec<&str> = self.servers.keys().map(String::as_str).collect();
        k.set(KEYRING_INDEX, &serde_json::to_string(&urls).unwrap_or_default())?;
        Ok(())
    }
}

/// A store shared by the authorizers that save into it.
pub type SharedTokenStore = std::sync::Arc<std::sync::Mutex<TokenStore>>;

/// An authorizer's `on_change` that keeps each change in `store`; a change
/// that could not be kept is passed to `warn` (the session goes on).
pub fn saving_to(
    store: SharedTokenStore,
    warn: impl Fn(&TokenStoreError) + Send + Sync + 'static,
) -> crate::transport::auth::OnChange {
    std::sync::Arc::new(move |url: &str, memory: &Memory| {
        let mut s = store.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Err(e) = s.save(url, memory) {
            warn(&e);
        }
    })
}

fn client_to_json(c: &Client) -> Value {
    json!({
        "client_id": c.client_id,
        "client_secret": c.client_secret,
        "auth_method": c.auth_method,
        "kind": match c.kind {
            ClientKind::PreRegistered => "pre-registered",
            ClientKind::MetadataDocument => "metadata-document",
            ClientKind::Registered => "registered",
        },
        "issuer": c.issuer,
    })
}

fn s(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(Value::as_str).map(str::to_owned)
}

fn client_from_json(v: &Value) -> Option<Client> {
    Some(Client {
        client_id: s(v, "client_id")?,
        client_secret: s(v, "client_secret"),
        auth_method: s(v, "auth_method"),
        kind: match v.get("kind").and_then(Value::as_str)? {
            "pre-registered" => ClientKind::PreRegistered,
            "metadata-document" => ClientKind::MetadataDocument,
            _ => ClientKind::Registered,
        },
        issuer: s(v, "issuer"),
    })
}

fn memory_to_json(m: &Memory) -> Value {
    let token = m.token.as_ref().map(|g| {
        json!({
            "issuer": g.issuer,
            "resource": g.resource,
            "token_endpoint": g.token_endpoint,
            "access_token": g.token.access_token,
            "token_type": g.token.token_type,
            "expires_at": g.token.expires_at,
            "scope": g.token.scope,
            "client": g.client.as_ref().map(client_to_json),
            "dpop_jkt": g.dpop_jkt,
        })
    });
    json!({
        "token": token,
        "refresh_tokens": m.refresh_tokens,
        "clients": m.clients.iter().map(|(k, c)| (k.clone(), client_to_json(c))).collect::<Map<_, _>>(),
    })
}

fn memory_from_json(v: &Value) -> Memory {
    let token = v.get("token").filter(|t| t.is_object()).and_then(|t| {
        Some(Granted {
            token: TokenSet {
                access_token: s(t, "access_token")?,
                token_type: s(t, "token_type").unwrap_or_else(|| "Bearer".into()),
                expires_at: t.get("expires_at").and_then(Value::as_u64),
                refresh_token: None,
                scope: t
                    .get("scope")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect()),
                issued_token_type: None,
                id_token: None,
            },
            issuer: s(t, "issuer")?,
            resource: s(t, "resource"),
            client: t.get("client").and_then(client_from_json),
            token_endpoint: s(t, "token_endpoint").unwrap_or_default(),
            dpop_jkt: s(t, "dpop_jkt"),
        })
    });
    let map = |k: &str| -> BTreeMap<String, Value> {
        v.get(k)
            .and_then(Value::as_object)
            .map(|o| o.iter().map(|(a, b)| (a.clone(), b.clone())).collect())
            .unwrap_or_default()
    };
    Memory {
        token,
        refresh_tokens: map("refresh_tokens")
            .into_iter()
            .filter_map(|(k, v)| Some((k, v.as_str()?.to_owned())))
            .collect(),
        clients: map("clients")
            .into_iter()
            .filter_map(|(k, v)| Some((k, client_from_json(&v)?)))
            .collect(),
        ..Memory::default()
    }
}

/// Why the token store could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum TokenStoreError {
    #[error("cannot read the token store {}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the token store {} is not JSON", .path.display())]
    NotJson {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{} is not an mcpscope token store", .0.display())]
    NotAStore(PathBuf),
    /// A store that is not safely ours (a link, a FIFO, another user's, readable by others).
    #[error("the token store {} {why}", .path.display())]
    Refused { path: PathBuf, why: String },
    #[error("{} is a symbolic link or not a directory: not writing tokens there", .0.display())]
    UnsafeDirectory(PathBuf),
    #[error(transparent)]
    Keyring(#[from] KeyringError),
    #[error("the keyring entry {key:?} is not mcpscope's JSON")]
    KeyringNotJson {
        key: String,
        #[source]
        source: serde_json::Error,
    },
}

fn read_private(path: &Path) -> Result<Option<String>, TokenStoreError> {
    use std::io::Read;
    let refused = |why: String| TokenStoreError::Refused {
        path: path.to_owned(),
        why,
    };
    let unreadable = |source| TokenStoreError::Read {
        path: path.to_owned(),
        source,
    };
    let mut f = match this_file_only(std::fs::OpenOptions::new().read(true)).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if is_refused_link(&e) => {
            return Err(refused("is a symbolic link: refusing it".into()));
        }
        Err(e) => return Err(unreadable(e)),
    };
    let meta = f.metadata().map_err(unreadable)?;
    if !meta.is_file() {
        return Err(refused(
            "is not a regular file (a FIFO or a device?): refusing it".into(),
        ));
    }
    make_blocking(&f);
    if User::owner_of(&meta) != User::current() {
        return Err(refused("belongs to another user: refusing it".into()));
    }
    if others_may_access(&meta) {
        return Err(refused(format!(
            "can be read by others ({}): refusing it; `chmod 600` it or delete it",
            access_of(&meta)
        )));
    }
    let mut text = String::new();
    f.read_to_string(&mut text).map_err(unreadable)?;
    Ok(Some(text))
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<(), TokenStoreError> {
    use std::io::Write;
    let unwritable = |path: &Path| {
        let path = path.to_owned();
        move |source| TokenStoreError::Write { path, source }
    };
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.exists() {
        owner_only_dirs(std::fs::DirBuilder::new().recursive(true))
            .create(dir)
            .map_err(unwritable(dir))?;
    }
    let meta = std::fs::symlink_metadata(dir).map_err(unwritable(dir))?;
    if meta.file_type().is_symlink() || !meta.is_dir() {
        return Err(TokenStoreError::UnsafeDirectory(dir.to_owned()));
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("oauth-tokens.json");
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let mut f = this_file_only(std::fs::OpenOptions::new().write(true).create_new(true))
        .open(&tmp)
        .map_err(unwritable(&tmp))?;
    let written = f.write_all(bytes).and_then(|_| f.sync_all());
    drop(f);
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(unwritable(&tmp)(e));
    }
    // rename replaces whatever is at `path` (a link included) without following it.
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        unwritable(path)(e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// #26 item 8: a FIFO as the token store is refused at once.
    #[cfg(unix)]
    #[test]
    fn a_fifo_as_the_store_is_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("tokens.json");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(read_private(&fifo));
        });
        let got = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("reading a FIFO store blocked");
        assert!(got.unwrap_err().to_string().contains("not a regular file"));
    }

    fn memory() -> Memory {
        let client = Client {
            client_id: "cid".into(),
            client_secret: Some("client-secret-value".into()),
            auth_method: Some("client_secret_basic".into()),
            kind: ClientKind::Registered,
            issuer: Some("http://as".into()),
        };
        Memory {
            token: Some(Granted {
                token: TokenSet {
                    access_token: "access-token-value".into(),
                    token_type: "Bearer".into(),
                    expires_at: Some(99),
                    refresh_token: None,
                    scope: Some(vec!["a".into()]),
                    issued_token_type: None,
                    id_token: None,
                },
                issuer: "http://as".into(),
                resource: Some("http://s/mcp".into()),
                client: Some(client.clone()),
                token_endpoint: "http://as/token".into(),
                dpop_jkt: None,
            }),
            refresh_tokens: BTreeMap::from([("http://as".into(), "refresh-token-value".into())]),
            clients: BTreeMap::from([("http://as".into(), client)]),
            ..Memory::default()
        }
    }

    #[test]
    fn nothing_secret_is_shown() {
        let mut store = TokenStore::in_memory();
        store.save("http://s/mcp", &memory()).unwrap();
        for text in [
            format!("{store:?}"),
            store.describe(),
            format!("{:?}", store.load("http://s/mcp")),
        ] {
            for secret in ["access-token-value", "refresh-token-value", "client-secret-value"] {
                assert!(!text.contains(secret), "{secret} in {text}");
            }
        }
        assert!(store.describe().contains("http://s/mcp: token from http://as (****)"));
    }

    #[cfg(unix)]
    #[test]
    fn a_file_only_the_user_can_read_round_trips() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/mcpscope/oauth-tokens.json");
        let mut store = TokenStore::open(&path).unwrap();
        store.save("http://s/mcp", &memory()).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        let again = TokenStore::open(&path).unwrap();
        assert_eq!(again.load("http://s/mcp"), store.load("http://s/mcp"));
        assert_eq!(
            again.load("http://s/mcp").token.unwrap().token.access_token,
            "access-token-value"
        );
        assert_eq!(again.servers().collect::<Vec<_>>(), ["http://s/mcp"]);
        let mut again = again;
        assert!(again.forget("http://s/mcp").unwrap());
        assert!(TokenStore::open(&path).unwrap().load("http://s/mcp").token.is_none());
    }

    #[test]
    fn secret_values_round_trip_and_are_never_shown() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.json");
        let mut store = TokenStore::open(&path).unwrap();
        store.set_secret("launcher/s/env/API_KEY", Some("sk-123")).unwrap();
        store.set_secret("launcher/s/header/X-Other", Some("v")).unwrap();
        assert!(!format!("{store:?}").contains("sk-123"));
        let mut again = TokenStore::open(&path).unwrap();
        assert_eq!(again.secret("launcher/s/env/API_KEY"), Some("sk-123"));
        again.set_secret("launcher/s/env/API_KEY", None).unwrap();
        let last = TokenStore::open(&path).unwrap();
        assert_eq!(last.secret("launcher/s/env/API_KEY"), None);
        assert_eq!(last.secret("launcher/s/header/X-Other"), Some("v"));
    }

    #[cfg(unix)]
    #[test]
    fn links_and_readable_files_are_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        std::fs::write(&real, r#"{"format":"mcpscope-oauth-store","servers":{}}"#).unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = TokenStore::open(&real).unwrap_err().to_string();
        assert!(e.contains("can be read by others"), "{e}");
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(TokenStore::open(&real).is_ok());
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let e = TokenStore::open(&link).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        // A linked directory is not written into.
        let target_dir = dir.path().join("elsewhere");
        std::fs::create_dir(&target_dir).unwrap();
        let linked_dir = dir.path().join("linked");
        std::os::unix::fs::symlink(&target_dir, &linked_dir).unwrap();
        let mut store = TokenStore::open(&linked_dir.join("t.json")).unwrap();
        let e = store.save("http://s", &memory()).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        assert!(std::fs::read_dir(&target_dir).unwrap().next().is_none());
        // Not a store at all.
        let other = dir.path().join("other.json");
        std::fs::write(&other, "{}").unwrap();
        std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(
            TokenStore::open(&other)
                .unwrap_err()
                .to_string()
                .contains("not an mcpscope token store")
        );
    }
}
