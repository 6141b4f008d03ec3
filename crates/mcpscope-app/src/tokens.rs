//! Where the app keeps OAuth tokens and registrations between runs: the OS
//! keyring, else the private `0600` file the CLI's `--token-store` uses
//! (said once in the status bar). Sign in once and a later run, or a later
//! launch in this run, goes straight in.
//!
//! The store is opened on a worker (a keyring may take a moment to answer,
//! or none at all); until then tokens are kept in memory and moved into the
//! store once it is open.

use crate::job::Job;
use crate::saved_server::SavedServer;
use mcpscope_core::config::token_store::{self, SharedTokenStore, TokenStore, TokenStoreError};
use mcpscope_core::protocol::auth::flow::Memory;
use mcpscope_core::timeline::model::Severity;
use mcpscope_core::transport::auth::OnChange;
use std::sync::{Arc, Mutex, PoisonError};

type Opened = Result<(TokenStore, Option<String>), TokenStoreError>;

pub struct AppTokens {
    store: SharedTokenStore,
    opening: Option<Job<Opened>>,
    /// Set when the store opened, until [`AppTokens::take_opened`].
    opened: bool,
    /// Saves that failed on an authorizer's thread, to show.
    failures: Arc<Mutex<Vec<String>>>,
}

impl AppTokens {
    /// Tokens for this run only (tests, and `with_context`).
    pub fn in_memory() -> Self {
        Self {
            store: Arc::new(Mutex::new(TokenStore::in_memory())),
            opening: None,
            opened: false,
            failures: Arc::default(),
        }
    }

    /// Tokens kept in `store` (tests give a file of their own).
    pub fn kept_in(store: TokenStore) -> Self {
        let mut tokens = Self::in_memory();
        tokens.adopt(store);
        tokens
    }

    /// The keyring, else the default token file, opened on a worker.
    pub fn open_preferred(waker: Option<Arc<dyn Fn() + Send + Sync>>) -> Self {
        let opening = Job::spawn("token store", waker, || {
            let path = TokenStore::default_path().ok_or_else(|| TokenStoreError::Refused {
                path: "~/.local/state/mcpscope/oauth-tokens.json".into(),
                why: "has no state directory to live under (no home directory in the environment)".into(),
            })?;
            TokenStore::open_preferred(&path)
        });
        Self {
            opening: Some(opening),
            ..Self::in_memory()
        }
    }

    /// What to say once the store is open (where the tokens went when there
    /// is no keyring, or why none is kept), and failed saves.
    pub fn poll(&mut self) -> Option<(Severity, String)> {
        if let Some(job) = &mut self.opening
            && let Some(outcome) = job.poll()
        {
            self.opening = None;
            return match outcome.unwrap_or_else(|dead| {
                Err(TokenStoreError::Refused {
                    path: "the token store".into(),
                    why: dead.to_string(),
                })
            }) {
                Ok((opened, note)) => {
                    self.adopt(opened);
                    // Said once, as information: the tokens are kept all the same.
                    note.map(|n| (Severity::Info, n))
                }
                Err(e) => Some((
                    Severity::Error,
                    format!(
                        "tokens are kept for this run only: {}",
                        mcpscope_core::text::error_chain(&e)
                    ),
                )),
            };
        }
        let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        failures.pop().map(|f| (Severity::Error, f))
    }

    /// Makes `opened` the store, with what was kept in memory meanwhile.
    fn adopt(&mut self, mut opened: TokenStore) {
        let mut store = self.store.lock().unwrap_or_else(PoisonError::into_inner);
        let interim: Vec<String> = store.servers().map(str::to_owned).collect();
        for url in interim {
            if let Err(e) = opened.save(&url, &store.load(&url)) {
                self.failures
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(format!("tokens not kept: {}", mcpscope_core::text::error_chain(&e)));
            }
        }
        *store = opened;
        self.opened = true;
    }

    /// Whether the store has opened since the last call (kept launcher
    /// values can be filled in then).
    pub fn take_opened(&mut self) -> bool {
        std::mem::take(&mut self.opened)
    }

    /// Fills the kept header and environment values of `servers` from the store.
    pub fn fill_kept(&self, servers: &mut [SavedServer]) {
        let store = self.store.lock().unwrap_or_else(PoisonError::into_inner);
        for s in servers {
            s.fill_kept(|key| store.secret(key).map(str::to_owned));
        }
    }

    /// Keeps the values `server` marks to be kept, and forgets the ones it
    /// no longer marks, on a worker (a keyring write may take a while).
    pub fn keep_launcher_values(&self, server: &SavedServer) {
        let values = server.kept_values();
        let store = Arc::clone(&self.store);
        let failures = Arc::clone(&self.failures);
        crate::job::detach("keep values", move || {
            let mut store = store.lock().unwrap_or_else(PoisonError::into_inner);
            for (key, value) in values {
                if let Err(e) = store.set_secret(&key, value.as_deref()) {
                    failures
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(format!("value not kept: {}", mcpscope_core::text::error_chain(&e)));
                    return;
                }
            }
        });
    }

    /// What is kept for `server_url`, and the authorizer's `on_change` that
    /// keeps what it learns.
    pub fn for_server(&self, server_url: &str) -> (Memory, OnChange) {
        let memory = self
            .store
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .load(server_url);
        let failures = Arc::clone(&self.failures);
        let on_change = token_store::saving_to(Arc::clone(&self.store), move |e| {
            failures
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(format!("tokens not kept: {}", mcpscope_core::text::error_chain(e)));
        });
        (memory, on_change)
    }

    /// Where the tokens are kept, in words.
    pub fn place(&self) -> String {
        self.store.lock().unwrap_or_else(PoisonError::into_inner).place()
    }

    /// A handle sharing this store (for a worker's authorizer).
    pub fn share(&self) -> AppTokens {
        AppTokens {
            store: Arc::clone(&self.store),
            opening: None,
            opened: false,
            failures: Arc::clone(&self.failures),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpscope_core::protocol::auth::flow::Granted;
    use mcpscope_core::protocol::auth::token::TokenSet;

    fn granted(token: &str) -> Memory {
        Memory {
            token: Some(Granted {
                token: TokenSet {
                    access_token: token.into(),
                    token_type: "Bearer".into(),
                    expires_at: None,
                    refresh_token: None,
                    scope: None,
                    issued_token_type: None,
                    id_token: None,
                },
                issuer: "https://as.example".into(),
                resource: None,
                client: None,
                token_endpoint: "https://as.example/token".into(),
                dpop_jkt: None,
            }),
            ..Memory::default()
        }
    }

    #[test]
    fn a_token_saved_before_the_store_opened_moves_into_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens.json");
        let mut tokens = AppTokens::in_memory();
        let (_, on_change) = tokens.for_server("https://s.example/mcp");
        on_change("https://s.example/mcp", &granted("early"));
        tokens.adopt(TokenStore::open(&file).unwrap());
        assert_eq!(tokens.place(), file.display().to_string());
        let reopened = TokenStore::open(&file).unwrap();
        let kept = reopened.load("https://s.example/mcp").token.unwrap();
        assert_eq!(kept.token.access_token, "early");
        // A later launch starts with it.
        let (memory, _) = tokens.for_server("https://s.example/mcp");
        assert_eq!(memory.token.unwrap().token.access_token, "early");
        assert!(tokens.poll().is_none());
    }

    #[test]
    fn a_save_that_fails_is_said() {
        let dir = tempfile::tempdir().unwrap();
        let mut tokens = AppTokens::in_memory();
        // A store whose directory turns into a file cannot be written.
        let blocked = dir.path().join("blocked");
        tokens.adopt(TokenStore::open(&blocked.join("tokens.json")).unwrap());
        std::fs::write(&blocked, "not a directory").unwrap();
        let (_, on_change) = tokens.for_server("https://s.example/mcp");
        on_change("https://s.example/mcp", &granted("t"));
        let (severity, text) = tokens.poll().expect("the failure is said");
        assert_eq!(severity, Severity::Error);
        assert!(text.starts_with("tokens not kept"), "{text}");
    }
}
