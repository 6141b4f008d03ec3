//! Runs the authorization flow of [`crate::protocol::auth::flow`] against
//! the network: its HTTP requests (redirects never followed), the loopback
//! redirect listener (RFC 8252), the browser, or, non-interactively, the
//! authorization server's redirects followed without one. Every step is
//! handed to a `record` callback as an [`AuthExchange`] (the client passes
//! them to the session, which puts them on the timeline and in the capture).
//!
//! The token ends up in the target's [`BearerSlot`], which the HTTP runner
//! reads for every request.
//!
//! Blocking: the CLI calls it from its own thread; the app from a worker.

pub mod browser;
pub mod gate;
pub mod http;

use crate::listen::redirect::Loopback;
use crate::protocol::auth::challenge::{AuthSignal, classify};
use crate::protocol::auth::flow::{Action, AuthConfig, AuthFlow, Entropy, Input, Memory, Trigger};
use crate::protocol::auth::{AuthError, Step, authorize, dpop, mask};
use crate::transport::event::{AuthExchange, HttpInfo};
use crate::transport::target::BearerSlot;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// How the person authorizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interaction {
    /// Open the browser on the authorization URL and wait for its redirect
    /// on a loopback listener.
    Browser,
    /// Follow the authorization endpoint's redirects without a browser and
    /// read the code from the redirect to mcpscope (CI, tests; works where
    /// the authorization server approves without asking anyone).
    NonInteractive,
}

pub type ShowUrl = Arc<dyn Fn(&str, Option<&str>) + Send + Sync>;
pub type OnChange = Arc<dyn Fn(&str, &Memory) + Send + Sync>;

#[derive(Clone)]
pub struct AuthOptions {
    pub interaction: Interaction,
    /// Listen on this port for the redirect instead of an ephemeral one
    /// (for authorization servers that registered a fixed redirect URI).
    pub redirect_port: Option<u16>,
    /// How long to wait for the browser to come back.
    pub callback_timeout: Duration,
    pub connect_timeout: Duration,
    /// Each request of the flow, from connecting to the last byte.
    pub request_timeout: Duration,
    /// Set to stop waiting for the callback.
    pub cancel: Arc<AtomicBool>,
    /// Tells the person where to authorize: the URL, and the program that
    /// opened it (`None`: none could; the person must open it). The CLI
    /// prints it; the app shows it with a copy button.
    pub show_url: Option<ShowUrl>,
    /// Told the server URL and the memory whenever a token was obtained or
    /// dropped: the opt-in persistent token store listens here.
    pub on_change: Option<OnChange>,
    /// Redirects followed at most in non-interactive mode.
    pub max_hops: usize,
}

impl Default for AuthOptions {
    fn default() -> Self {
        Self {
            interaction: Interaction::Browser,
            redirect_port: None,
            callback_timeout: Duration::from_secs(300),
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            cancel: Arc::new(AtomicBool::new(false)),
            show_url: None,
            on_change: None,
            max_hops: 10,
        }
    }
}

impl std::fmt::Debug for AuthOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthOptions")
            .field("interaction", &self.interaction)
            .field("redirect_port", &self.redirect_port)
            .field("callback_timeout", &self.callback_timeout)
            .finish_non_exhaustive()
    }
}

/// An MCP request's HTTP answer that asks for authorization.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpChallenge {
    /// The MCP method whose request got it.
    pub method: String,
    pub url: String,
    pub status: u16,
    pub www_authenticate: Option<String>,
    /// A token had been sent with the request.
    pub with_token: bool,
}

impl HttpChallenge {
    /// The challenge in a failed exchange: a 401, or a 403 with `insufficient_scope`.
    pub fn from_http(method: &str, h: &HttpInfo) -> Option<Self> {
        let status = h.status?;
        let www = h.received_header("www-authenticate");
        if classify(status, www) == AuthSignal::Other {
            return None;
        }
        Some(Self {
            method: method.to_owned(),
            url: h.url.clone(),
            status,
            www_authenticate: www.map(str::to_owned),
            with_token: h.sent_header("authorization").is_some_and(|v| {
                let v = v.to_ascii_lowercase();
                v.starts_with("bearer") || v.starts_with("dpop")
            }),
        })
    }
}

/// How many times one request may be authorized before giving up (a
/// server that keeps refusing fresh tokens would loop forever otherwise).
pub const MAX_AUTHORIZATIONS_PER_REQUEST: u32 = 3;

/// The client's hook: answers `challenge` with `authorizer`, recording
/// every step in `session` (timeline and capture). On `Ok` the caller sends
/// the request again (the token is in the target's slot).
pub fn answer_challenge(
    authorizer: &mut Authorizer,
    session: &crate::transport::session::Session,
    challenge: &HttpChallenge,
    attempt: u32,
) -> Result<(), AuthError> {
    answer_challenge_with(authorizer, &mut |x| session.record_auth(x), challenge, attempt)
}

/// [`answer_challenge`] with the steps handed to `record` (the app runs it
/// on a worker, which has no session of its own).
pub fn answer_challenge_with(
    authorizer: &mut Authorizer,
    record: &mut dyn FnMut(AuthExchange),
    challenge: &HttpChallenge,
    attempt: u32,
) -> Result<(), AuthError> {
    if attempt > MAX_AUTHORIZATIONS_PER_REQUEST {
        let e = AuthError::TooManyAttempts {
            attempts: MAX_AUTHORIZATIONS_PER_REQUEST,
        };
        record(AuthExchange {
            error: Some(e.to_string()),
            ..AuthExchange::new(Step::Failed, format!("{} was refused again", challenge.method))
        });
        return Err(e);
    }
    authorizer.on_challenge(challenge, record)
}

/// The client's hook before sending: refresh a token about to expire.
pub fn before_request(authorizer: &mut Authorizer, session: &crate::transport::session::Session) {
    authorizer.refresh_if_expiring(&mut |x| session.record_auth(x));
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn entropy() -> Entropy {
    use ring::rand::SecureRandom as _;
    let mut bytes = [0u8; 64];
    if ring::rand::SystemRandom::new().fill(&mut bytes).is_err() {
        // Never expected; the clock and the thread still make each flow differ.
        let seed = format!("{:?}{:?}", std::time::SystemTime::now(), std::thread::current().id());
        let d = ring::digest::digest(&ring::digest::SHA512, seed.as_bytes());
        bytes.copy_from_slice(d.as_ref());
    }
    Entropy { bytes }
}

/// Authorizes mcpscope with one MCP server, again whenever it asks.
pub struct Authorizer {
    server_url: String,
    config: Arc<AuthConfig>,
    options: AuthOptions,
    slot: BearerSlot,
    memory: Memory,
    agent: ureq::Agent,
}

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Authorizer({}: {})", self.server_url, self.summary())
    }
}

impl Authorizer {
    /// `slot` is the target's: the token obtained goes there.
    pub fn new(server_url: impl Into<String>, config: AuthConfig, options: AuthOptions, slot: BearerSlot) -> Self {
        let agent = http::agent(options.connect_timeout, options.request_timeout);
        Self {
            server_url: server_url.into(),
            config: Arc::new(config),
            options,
            slot,
            memory: Memory::default(),
            agent,
        }
    }

    /// Starts from what an earlier session left (a persistent store): a
    /// token still valid is sent from the first request on.
    pub fn with_memory(mut self, memory: Memory) -> Self {
        self.memory = memory;
        self.put_token_in_slot();
        self
    }

    pub fn memory(&self) -> &Memory {
        &self.memory
    }

    /// The token in memory, if still usable, goes to the slot: bound to the
    /// session's DPoP key when its type is DPoP. A DPoP token kept from an
    /// earlier run is bound to that run's key, which is gone: it is not sent.
    fn put_token_in_slot(&self) {
        let Some(g) = self
            .memory
            .token
            .as_ref()
            .filter(|g| !g.token.expires_within(unix_now(), 30))
        else {
            self.slot.set(None);
            return;
        };
        if g.token.token_type.eq_ignore_ascii_case("dpop") {
            match &self.config.dpop_key {
                Some(key) if g.dpop_jkt.as_deref() == Some(key.thumbprint()) => self
                    .slot
                    .set_bound(Some(g.token.access_token.clone()), Some(key.clone())),
                _ => self.slot.set(None),
            }
        } else {
            self.slot.set(Some(g.token.access_token.clone()));
        }
    }

    pub fn server_url(&self) -> &str {
        &self.server_url
    }

    /// One line on the authorization state, for a person (no secrets).
    pub fn summary(&self) -> String {
        let Some(g) = &self.memory.token else {
            return "not authorized".into();
        };
        let mut s = format!("authorized by {}", g.issuer);
        if let Some(sc) = &g.token.scope {
            s.push_str(&format!(" (scope {})", sc.join(" ")));
        }
        if let Some(e) = g.token.expires_at {
            let now = unix_now();
            if e <= now {
                s.push_str(", expired");
            } else {
                s.push_str(&format!(", expires in {} min", (e - now) / 60));
            }
        }
        if self.memory.can_refresh() {
            s.push_str(", refreshable");
        }
        s
    }

    /// Answers a challenge: runs the flow until there is a token (now in
    /// the slot) or a reason there is none. Every step goes to `record`.
    pub fn on_challenge(&mut self, ch: &HttpChallenge, record: &mut dyn FnMut(AuthExchange)) -> Result<(), AuthError> {
        let trigger = match classify(ch.status, ch.www_authenticate.as_deref()) {
            AuthSignal::Unauthorized(challenge) => Trigger::Unauthorized {
                challenge,
                with_token: ch.with_token,
            },
            AuthSignal::InsufficientScope(challenge) => Trigger::InsufficientScope { challenge },
            AuthSignal::Other => {
                return Err(AuthError::Config(format!(
                    "HTTP {} is not an authorization challenge",
                    ch.status
                )));
            }
        };
        // RFC 9449 §9: the token is good, the proof lacked the server's
        // nonce, which its answer carried (the HTTP runner keeps it): send
        // the request again, nothing to authorize.
        if let Trigger::Unauthorized { challenge, .. } = &trigger
            && challenge.error.as_deref() == Some(dpop::USE_NONCE)
            && self.slot.has_dpop_nonce()
        {
            record(AuthExchange {
                url: ch.url.clone(),
                status: Some(ch.status),
                received: ch
                    .www_authenticate
                    .as_ref()
                    .map(|w| vec![("www-authenticate".to_owned(), w.clone())])
                    .unwrap_or_default(),
                notes: vec![challenge.describe()],
                ..AuthExchange::new(
                    Step::Retry,
                    format!(
                        "{} was answered HTTP {}: the MCP server asks for a DPoP nonce; sending it again with the \
                         nonce in a new proof",
                        ch.method, ch.status
                    ),
                )
            });
            return Ok(());
        }
        let mut x = AuthExchange {
            url: ch.url.clone(),
            status: Some(ch.status),
            received: ch
                .www_authenticate
                .as_ref()
                .map(|w| vec![("www-authenticate".to_owned(), w.clone())])
                .unwrap_or_default(),
            ..AuthExchange::new(
                Step::Challenge,
                format!("{} was answered HTTP {}", ch.method, ch.status),
            )
        };
        match &trigger {
            Trigger::Unauthorized { challenge, .. } | Trigger::InsufficientScope { challenge } => {
                if ch.www_authenticate.is_none() {
                    x.notes
                        .push("no WWW-Authenticate header: looking for metadata at the well-known locations".into());
                } else {
                    x.notes.push(challenge.describe());
                }
            }
            Trigger::Expiring => {}
        }
        let (mut flow, action) = AuthFlow::start(
            self.config.clone(),
            self.memory.clone(),
            &self.server_url,
            trigger,
            entropy(),
            unix_now(),
        );
        x.notes.extend(flow.take_notes());
        record(x);
        self.drive(&mut flow, action, Some(&ch.method), record)
    }

    /// Refreshes the token when it expires within a minute and a refresh
    /// token is at hand (nobody is asked). A failure leaves things as they
    /// are: the server's next 401 starts a full authorization.
    pub fn refresh_if_expiring(&mut self, record: &mut dyn FnMut(AuthExchange)) {
        let expiring = self
            .memory
            .token
            .as_ref()
            .is_some_and(|g| g.token.expires_within(unix_now(), 60));
        if !expiring || !self.memory.can_refresh() {
            return;
        }
        let (mut flow, action) = AuthFlow::start(
            self.config.clone(),
            self.memory.clone(),
            &self.server_url,
            Trigger::Expiring,
            entropy(),
            unix_now(),
        );
        let _ = self.drive(&mut flow, action, None, record);
    }

    fn drive(
        &mut self,
        flow: &mut AuthFlow,
        mut action: Action,
        retrying: Option<&str>,
        record: &mut dyn FnMut(AuthExchange),
    ) -> Result<(), AuthError> {
        let mut listener: Option<Loopback> = None;
        loop {
            action = match action {
                Action::Send(req) => {
                    let (input, mut x) = http::perform(&self.agent, &req, unix_now());
                    let next = flow.on_event(input, unix_now());
                    x.notes.extend(flow.take_notes());
                    record(x);
                    next
                }
                Action::NeedRedirectUri => {
                    let uri = match self.options.interaction {
                        Interaction::Browser => match Loopback::bind(self.options.redirect_port) {
                            Ok(l) => {
                                let uri = l.redirect_uri();
                                listener = Some(l);
                                Ok(uri)
                            }
                            Err(e) => Err(e),
                        },
                        // Nothing listens: the redirect is read, never followed.
                        Interaction::NonInteractive => match self.options.redirect_port {
                            Some(p) => Ok(format!("http://127.0.0.1:{p}/callback")),
                            None => Loopback::bind(None).map(|l| l.redirect_uri()),
                        },
                    };
                    match uri {
                        Ok(uri) => flow.on_event(Input::RedirectUri(uri), unix_now()),
                        Err(e) => flow.on_event(Input::Failed(e), unix_now()),
                    }
                }
                Action::Authorize { url, redirect_uri } => {
                    let (input, mut xs) = match self.options.interaction {
                        Interaction::NonInteractive => self.follow_redirects(&url, &redirect_uri),
                        Interaction::Browser => self.browser(&url, listener.take()),
                    };
                    let next = flow.on_event(input, unix_now());
                    if let Some(last) = xs.last_mut() {
                        last.notes.extend(flow.take_notes());
                    }
                    for x in xs {
                        record(x);
                    }
                    next
                }
                Action::Done => {
                    self.settle(flow);
                    if let Some(method) = retrying {
                        record(AuthExchange {
                            url: self.server_url.clone(),
                            ..AuthExchange::new(Step::Retry, format!("sending {method} again with the new token"))
                        });
                    }
                    return Ok(());
                }
                Action::Fail(e) => {
                    self.settle(flow);
                    let mut x = AuthExchange::new(Step::Failed, "the authorization gave up");
                    x.notes.extend(flow.take_notes());
                    x.error = Some(e.to_string());
                    record(x);
                    return Err(e);
                }
            };
        }
    }

    /// Forgets the tokens (access and refresh) so that the next request the
    /// server refuses signs in from the start; registrations and metadata
    /// are kept. The token store, if any, is told.
    pub fn forget_tokens(&mut self) {
        self.memory.token = None;
        self.memory.refresh_tokens.clear();
        self.slot.set(None);
        if let Some(cb) = &self.options.on_change {
            cb(&self.server_url, &self.memory);
        }
    }

    /// Takes the flow's memory and puts its token (or none) in the slot.
    fn settle(&mut self, flow: &AuthFlow) {
        self.memory = flow.memory().clone();
        self.put_token_in_slot();
        if let Some(cb) = &self.options.on_change {
            cb(&self.server_url, &self.memory);
        }
    }

    /// Non-interactive: GET the authorization URL and its redirects until
    /// one points at the redirect URI (read, not followed).
    fn follow_redirects(&self, start: &str, redirect_uri: &str) -> (Input, Vec<AuthExchange>) {
        let mut xs = Vec::new();
        let mut url = start.to_owned();
        for hop in 0..self.options.max_hops {
            let now = unix_now();
            let started = Instant::now();
            let headers = vec![("Accept".to_owned(), "text/html, application/json".to_owned())];
            let result = http::call(&self.agent, "GET", &url, &headers, None);
            let mut x = AuthExchange {
                method: "GET".into(),
                url: mask::url(&url),
                sent: headers.clone(),
                elapsed: started.elapsed(),
                ..AuthExchange::new(
                    Step::Authorize,
                    if hop == 0 {
                        "the authorization request, followed without a browser (--auth-non-interactive)"
                    } else {
                        "a redirect of the authorization server, followed"
                    },
                )
            };
            let a = match result {
                Ok(a) => a,
                Err(error) => {
                    x.error = Some(error.clone());
                    xs.push(x);
                    return (Input::Failed(AuthError::Unreachable { url, error }), xs);
                }
            };
            let (body, jwts) = http::response_record(a.status, &a.body, now);
            x.status = Some(a.status);
            x.received = http::mask_received(&a.headers);
            x.response_body = body;
            x.jwts = jwts;
            xs.push(x);
            let location = a.headers.iter().find(|(k, _)| k == "location").map(|(_, v)| v.clone());
            match (a.status, location) {
                (300..=399, Some(loc)) => {
                    let next = match url::Url::parse(&url).and_then(|base| base.join(&loc)) {
                        Ok(u) => u.to_string(),
                        Err(e) => {
                            return (
                                Input::Failed(AuthError::BadResponse {
                                    step: Step::Authorize,
                                    url: mask::url(&url),
                                    why: format!("a redirect to {loc:?}, which is not a URL ({e})"),
                                }),
                                xs,
                            );
                        }
                    };
                    if authorize::targets_redirect_uri(&next, redirect_uri) {
                        xs.push(AuthExchange {
                            url: mask::url(&next),
                            ..AuthExchange::new(Step::Callback, "the redirect to mcpscope, read without being followed")
                        });
                        return (Input::Callback(next), xs);
                    }
                    url = next;
                }
                (200..=299, _) => {
                    return (
                        Input::Failed(AuthError::NeedsUser {
                            url: mask::url(&url),
                            status: a.status,
                        }),
                        xs,
                    );
                }
                (status, _) => {
                    let (error, description) = crate::protocol::auth::token::oauth_error(&a.body);
                    let e = match error {
                        Some(error) => AuthError::Denied { error, description },
                        None => AuthError::BadResponse {
                            step: Step::Authorize,
                            url: mask::url(&url),
                            why: format!("HTTP {status} without a redirect"),
                        },
                    };
                    return (Input::Failed(e), xs);
                }
            }
        }
        (
            Input::Failed(AuthError::BadResponse {
                step: Step::Authorize,
                url: mask::url(&url),
                why: format!("more than {} redirects", self.options.max_hops),
            }),
            xs,
        )
    }

    /// Interactive: open the browser, wait for it on the loopback listener.
    fn browser(&self, url: &str, listener: Option<Loopback>) -> (Input, Vec<AuthExchange>) {
        let mut xs = Vec::new();
        let listener = match listener.map_or_else(|| Loopback::bind(self.options.redirect_port), Ok) {
            Ok(l) => l,
            Err(e) => return (Input::Failed(e), xs),
        };
        let state = url::Url::parse(url)
            .ok()
            .and_then(|u| u.query_pairs().find(|(k, _)| k == "state").map(|(_, v)| v.into_owned()))
            .unwrap_or_default();
        let opened = browser::open(url);
        if let Some(show) = &self.options.show_url {
            show(url, opened.as_ref().ok().map(String::as_str));
        }
        let mut x = AuthExchange {
            method: "GET".into(),
            url: mask::url(url),
            ..AuthExchange::new(
                Step::Authorize,
                match &opened {
                    Ok(program) => format!("opened in the browser ({program})"),
                    Err(_) => "to be opened in a browser by the person".to_owned(),
                },
            )
        };
        if let Err(e) = &opened {
            x.notes.push(e.to_string());
        }
        x.notes.push(format!(
            "waiting up to {} s for the redirect to {}",
            self.options.callback_timeout.as_secs(),
            listener.redirect_uri()
        ));
        xs.push(x);
        let started = Instant::now();
        let mut refused = Vec::new();
        let result = listener.wait(&state, self.options.callback_timeout, &self.options.cancel, &mut |r| {
            refused.push(r)
        });
        for r in refused {
            xs.push(AuthExchange {
                method: "GET".into(),
                url: mask::url(r.request_line.split(' ').nth(1).unwrap_or_default()),
                error: Some(format!("refused: {}", r.why)),
                ..AuthExchange::new(
                    Step::Callback,
                    "a request to the loopback listener that is not the callback",
                )
            });
        }
        match result {
            Ok(cb) => {
                xs.push(AuthExchange {
                    method: "GET".into(),
                    url: mask::url(&cb),
                    status: Some(200),
                    elapsed: started.elapsed(),
                    ..AuthExchange::new(Step::Callback, "the browser came back to mcpscope's loopback listener")
                });
                (Input::Callback(cb), xs)
            }
            Err(e) => (Input::Failed(e), xs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forgetting_tokens_empties_the_slot_and_tells_the_store() {
        let slot = BearerSlot::default();
        let told = Arc::new(std::sync::Mutex::new(0));
        let t = Arc::clone(&told);
        let options = AuthOptions {
            on_change: Some(Arc::new(move |_: &str, m: &Memory| {
                assert!(m.token.is_none());
                *t.lock().unwrap() += 1;
            })),
            ..AuthOptions::default()
        };
        let mut a = Authorizer::new("http://s/mcp", AuthConfig::default(), options, slot.clone());
        a.memory.refresh_tokens.insert("http://as".into(), "r".into());
        slot.set(Some("t".into()));
        a.forget_tokens();
        assert!(!slot.is_set() && a.memory().refresh_tokens.is_empty());
        assert_eq!(a.summary(), "not authorized");
        assert_eq!(*told.lock().unwrap(), 1);
    }

    #[test]
    fn challenges_from_http_exchanges() {
        let mut h = HttpInfo {
            method: "POST".into(),
            url: "http://s/mcp".into(),
            status: Some(401),
            received: vec![("www-authenticate".into(), "Bearer scope=\"a\"".into())],
            sent: vec![("Authorization".into(), "Bearer ****".into())],
            ..HttpInfo::default()
        };
        let c = HttpChallenge::from_http("tools/list", &h).unwrap();
        assert!(c.with_token);
        assert_eq!(c.www_authenticate.as_deref(), Some("Bearer scope=\"a\""));
        h.received.clear();
        h.sent.clear();
        let c = HttpChallenge::from_http("tools/list", &h).unwrap();
        assert!(!c.with_token && c.www_authenticate.is_none());
        h.status = Some(403);
        assert!(HttpChallenge::from_http("x", &h).is_none());
        h.received = vec![("www-authenticate".into(), "Bearer error=\"insufficient_scope\"".into())];
        assert!(HttpChallenge::from_http("x", &h).is_some());
        h.status = Some(500);
        assert!(HttpChallenge::from_http("x", &h).is_none());
    }
}
