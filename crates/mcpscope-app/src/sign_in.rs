//! Signing in to an HTTP server that asks (OAuth): where a sign-in stands
//! and what the UI can do about it. The owner's thread runs the sign-in
//! itself ([`crate::live_pilot::SignInRunner`]); this side only reads its
//! status and the authorization URL, cancels, and forgets tokens.

use crate::tokens::AppTokens;
use mcpscope_core::protocol::auth::flow::AuthConfig;
use mcpscope_core::transport::auth::{AuthOptions, Authorizer, Interaction};
use mcpscope_core::transport::target::Target;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Where a sign-in stands, kept by the owner's thread.
#[derive(Default)]
pub struct SignInStatus {
    /// A sign-in is under way (the person may be in the browser).
    pub running: bool,
    /// Why the last sign-in failed.
    pub failed: Option<String>,
}

/// How a session signs in; what the UI shows of it and can do.
pub struct SignInState {
    pub(crate) authorizer: Arc<Mutex<Authorizer>>,
    pub(crate) status: Arc<Mutex<SignInStatus>>,
    /// Where to authorize, once the flow has an authorization URL.
    pub url: Arc<Mutex<Option<String>>>,
    pub(crate) cancel: Arc<AtomicBool>,
}

impl SignInState {
    /// The sign-in of an HTTP `target`, with these settings; `None` for a
    /// stdio target or one that carries an Authorization header of the
    /// user's (it does not sign in).
    pub fn for_target(
        target: &Target,
        config: AuthConfig,
        interaction: Interaction,
        tokens: &AppTokens,
    ) -> Option<SignInState> {
        let Target::Http(h) = target else { return None };
        if h.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("authorization")) {
            return None;
        }
        let url: Arc<Mutex<Option<String>>> = Arc::default();
        let shown = Arc::clone(&url);
        let cancel = Arc::new(AtomicBool::new(false));
        let (memory, on_change) = tokens.for_server(&h.url);
        let options = AuthOptions {
            interaction,
            cancel: Arc::clone(&cancel),
            show_url: Some(Arc::new(move |u: &str, _opened: Option<&str>| {
                *shown.lock().unwrap_or_else(PoisonError::into_inner) = Some(u.to_owned());
            })),
            on_change: Some(on_change),
            ..AuthOptions::default()
        };
        let authorizer = Arc::new(Mutex::new(
            Authorizer::new(h.url.clone(), config, options, h.bearer.clone()).with_memory(memory),
        ));
        Some(SignInState {
            authorizer,
            status: Arc::new(Mutex::new(SignInStatus::default())),
            url,
            cancel,
        })
    }

    fn status(&self) -> MutexGuard<'_, SignInStatus> {
        self.status.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a sign-in is under way (the person may be in the browser).
    pub fn in_progress(&self) -> bool {
        self.status().running
    }

    /// Why the last sign-in failed.
    pub fn failed(&self) -> Option<String> {
        self.status().failed.clone()
    }

    /// The authorization URL to show while signing in.
    pub fn pending_url(&self) -> Option<String> {
        if !self.in_progress() {
            return None;
        }
        self.url.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Stops waiting for the browser.
    pub fn cancel(&self) {
        self.cancel.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Forgets the tokens: the next request the server refuses signs in
    /// again (the browser opens). Not while a sign-in runs.
    pub fn forget_tokens(&self) {
        if let Ok(mut a) = self.authorizer.try_lock() {
            a.forget_tokens();
        }
    }

    /// The authorization state in one line (none, authorized with scopes and expiry).
    pub fn summary(&self) -> String {
        self.authorizer
            .try_lock()
            .map_or_else(|_| "signing in…".to_owned(), |a| a.summary())
    }
}
