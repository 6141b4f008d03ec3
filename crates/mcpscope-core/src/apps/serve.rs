//! The loopback pages that put a View in the user's browser: the host page
//! on one origin (`http://127.0.0.1:A`) and the sandbox proxy on another
//! (`http://localhost:B`), both listening on loopback only. The host page
//! bridges every message to the core over this origin (an event stream
//! down, POSTs up); it holds no protocol logic of its own.

use crate::listen::accept::accept_loop;
use crate::listen::conn::{Conn, Either, first_of};
use crate::listen::gate::Gate;
use crate::listen::request::{Request, next_request};
use crate::listen::response::plain_answer;
use crate::listen::slots::{Slot, Slots};
use crate::listen::{ListenError, Stopper};
use crossbeam_channel::{Receiver, Sender, unbounded};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::time::timeout;

const HOST_PAGE: &str = include_str!("../../../../assets/apps/host.html");
const SANDBOX_PAGE: &str = include_str!("../../../../assets/apps/sandbox.html");
/// One POST from the page carries one message; Views send small ones, but a
/// download or a big model context may be a few megabytes.
const MAX_POST: usize = 32 * 1024 * 1024;
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// A comment on the event stream this often, so a page that went away is noticed.
const KEEPALIVE: Duration = Duration::from_secs(15);

/// What the page sent up the bridge.
#[derive(Clone, Debug, PartialEq)]
pub enum FromPage {
    /// A message from the sandbox side (the View, or the proxy itself),
    /// as the page received it (serialised by the page).
    View(Vec<u8>),
    /// The user answered a question.
    Answer { ticket: u64, allow: bool },
    /// The user picked a display mode.
    DisplayMode(String),
    /// The user switched the theme.
    Theme(String),
    /// The View's container changed size (the window, the display mode).
    Container {
        width: Option<u32>,
        max_height: Option<u32>,
    },
    /// The user closed the View.
    Close,
    /// The page dropped a message that did not come from its sandbox frame.
    Refused { origin: String },
    /// The page's event stream connected (the page is open).
    Opened,
}

/// What a host page shows about its View.
#[derive(Clone, Debug, Default)]
pub struct PageConfig {
    /// The View's name (its tool's).
    pub app: String,
    /// The iframe `allow` attribute in effect.
    pub allow: String,
    /// `_meta.ui.prefersBorder`.
    pub prefers_border: Option<bool>,
    /// The applied policy, shown on the page.
    pub csp: String,
    pub theme: String,
    pub max_height: Option<u32>,
    pub width: Option<u32>,
}

struct Shared {
    token: String,
    host_origin: String,
    sandbox_origin: String,
    config: PageConfig,
    to_page: Mutex<VecDeque<String>>,
    /// How many messages were pushed for the page, and how many written to it.
    pushed: std::sync::atomic::AtomicU64,
    delivered: std::sync::atomic::AtomicU64,
    wake: Notify,
    inbox: Sender<FromPage>,
    log: Mutex<Vec<String>>,
}

/// The two listeners of one View.
pub struct AppServer {
    shared: Arc<Shared>,
    inbox: Receiver<FromPage>,
    stoppers: Vec<Stopper>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl AppServer {
    /// Opens the host page's listener on `127.0.0.1` and the sandbox's on
    /// `localhost` (two origins), on ports the system picks.
    pub fn start(config: PageConfig) -> Result<AppServer, ListenError> {
        let (host_listener, host_addr) = crate::listen::bind("127.0.0.1:0".parse().expect("an address"))?;
        let (sandbox_listener, sandbox_addr) = crate::listen::bind("127.0.0.1:0".parse().expect("an address"))?;
        let (tx, rx) = unbounded();
        let shared = Arc::new(Shared {
            token: random_token(),
            host_origin: format!("http://127.0.0.1:{}", host_addr.port()),
            sandbox_origin: format!("http://localhost:{}", sandbox_addr.port()),
            config,
            to_page: Mutex::new(VecDeque::new()),
            pushed: std::sync::atomic::AtomicU64::new(0),
            delivered: std::sync::atomic::AtomicU64::new(0),
            wake: Notify::new(),
            inbox: tx,
            log: Mutex::new(Vec::new()),
        });
        let mut stoppers = Vec::new();
        let mut threads = Vec::new();
        for (listener, addr, role) in [
            (host_listener, host_addr, Role::Host),
            (sandbox_listener, sandbox_addr, Role::Sandbox),
        ] {
            let stop = Arc::new(AtomicBool::new(false));
            stoppers.push(Stopper::new(stop.clone(), addr));
            let shared = shared.clone();
            let name = match role {
                Role::Host => "mcpscope-app-host",
                Role::Sandbox => "mcpscope-app-sandbox",
            };
            let thread = std::thread::Builder::new().name(name.into()).spawn(move || {
                let slots = Arc::new(Slots::new(64));
                let _ = accept_loop(
                    listener,
                    slots,
                    stop,
                    "mcpscope app host: too many connections at once",
                    move |stream, slot| serve_connection(shared.clone(), role, stream, slot),
                );
            });
            if let Ok(t) = thread {
                threads.push(t);
            }
        }
        Ok(AppServer {
            shared,
            inbox: rx,
            stoppers,
            threads,
        })
    }

    /// The host page to open in the browser (it carries the View's secret token).
    pub fn url(&self) -> String {
        format!("{}/app/{}", self.shared.host_origin, self.shared.token)
    }

    pub fn host_origin(&self) -> &str {
        &self.shared.host_origin
    }

    pub fn sandbox_origin(&self) -> &str {
        &self.shared.sandbox_origin
    }

    /// The bridge's endpoint (for tests of its refusals).
    pub fn bridge_url(&self) -> String {
        format!("{}/bridge/{}", self.shared.host_origin, self.shared.token)
    }

    /// What the page sent, in order.
    pub fn inbox(&self) -> &Receiver<FromPage> {
        &self.inbox
    }

    /// Requests the listeners refused, and why (for the session's notes).
    pub fn take_log(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.shared.log))
    }

    /// Sends the page a message for the View (through the sandbox proxy).
    pub fn to_view(&self, message: &Value) {
        self.push(json!({"to": "view", "message": message}));
    }

    /// Sends the sandbox proxy a message of its own.
    pub fn to_sandbox(&self, message: &Value) {
        self.push(json!({"to": "sandbox", "message": message}));
    }

    /// Tells the page to do something (`action` and its members).
    pub fn to_page(&self, mut action: Value) {
        if let Some(o) = action.as_object_mut() {
            o.insert("to".into(), "page".into());
        }
        self.push(action);
    }

    fn push(&self, v: Value) {
        lock(&self.shared.to_page).push_back(v.to_string());
        self.shared.pushed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.shared.wake.notify_one();
    }

    /// Waits (at most `within`) until the page has been sent everything
    /// pushed so far: the last word (the View closed) must reach it before
    /// the listeners stop. Whether it was.
    pub fn wait_delivered(&self, within: Duration) -> bool {
        let deadline = std::time::Instant::now() + within;
        loop {
            let pushed = self.shared.pushed.load(std::sync::atomic::Ordering::SeqCst);
            if self.shared.delivered.load(std::sync::atomic::Ordering::SeqCst) >= pushed {
                return true;
            }
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Stops both listeners and waits for them.
    pub fn stop(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        for s in &self.stoppers {
            s.stop();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for AppServer {
    fn drop(&mut self) {
        self.stop_now();
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Role {
    Host,
    Sandbox,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn random_token() -> String {
    use ring::rand::SecureRandom;
    let mut b = [0u8; 16];
    let _ = ring::rand::SystemRandom::new().fill(&mut b);
    b.iter().map(|x| format!("{x:02x}")).collect()
}

async fn serve_connection(shared: Arc<Shared>, role: Role, stream: TcpStream, slot: Slot) {
    let mut conn = Conn::new(stream, slot.evict.clone());
    let mut wait = HEADER_TIMEOUT;
    let gate = match role {
        Role::Host => Gate::loopback("mcpscope app host", "the app host"),
        Role::Sandbox => Gate::loopback("mcpscope app host", "the app sandbox"),
    };
    loop {
        let refused = |why: String| lock(&shared.log).push(why);
        let Some(req) = next_request(&mut conn, &slot, wait, HEADER_TIMEOUT, gate, refused).await else {
            return;
        };
        let keep = req.keep_alive();
        let go_on = match role {
            Role::Host => host(&shared, &mut conn, &req).await,
            Role::Sandbox => sandbox(&shared, &mut conn, &req).await,
        };
        if !go_on || !keep {
            return;
        }
        wait = IDLE_TIMEOUT;
    }
}

async fn send(conn: &mut Conn<TcpStream>, bytes: &[u8]) -> bool {
    matches!(timeout(WRITE_TIMEOUT, conn.stream.write_all(bytes)).await, Ok(Ok(())))
}

/// An answer of the pages' listeners: never cached, never sniffed.
fn answer(status: u16, headers: &[(&str, &str)], content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut all = vec![("cache-control", "no-store"), ("x-content-type-options", "nosniff")];
    all.extend_from_slice(headers);
    crate::listen::response::answer(status, &all, content_type, body)
}

fn refuse(shared: &Shared, req: &Request, status: u16, why: &str) -> Vec<u8> {
    lock(&shared.log).push(format!("refused {} {}: {why}", req.method, req.target));
    let mut a = plain_answer(status, &format!("mcpscope app host: {why}"));
    // plain_answer closes; the caller returns false after it.
    a.shrink_to_fit();
    a
}

/// JSON for a `<script>` block: nothing in it can end the block.
fn script_json(v: &Value) -> String {
    v.to_string()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

async fn host(shared: &Arc<Shared>, conn: &mut Conn<TcpStream>, req: &Request) -> bool {
    let path = req.target.split('?').next().unwrap_or_default();
    let page = format!("/app/{}", shared.token);
    let bridge = format!("/bridge/{}", shared.token);
    let events = format!("/bridge/{}/events", shared.token);
    if path == page && req.method == "GET" {
        let c = &shared.config;
        let config = json!({
            "token": shared.token,
            "app": c.app,
            "sandboxUrl": format!("{}/sandbox/{}", shared.sandbox_origin, shared.token),
            "sandboxOrigin": shared.sandbox_origin,
            "allow": c.allow,
            "prefersBorder": c.prefers_border,
            "csp": c.csp,
            "theme": c.theme,
            "maxHeight": c.max_height,
            "width": c.width,
        });
        let body = HOST_PAGE.replace("/*CONFIG*/null", &script_json(&config));
        let policy = format!(
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; \
             frame-src {}; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
            shared.sandbox_origin
        );
        let headers = [
            ("content-security-policy", policy.as_str()),
            ("referrer-policy", "no-referrer"),
        ];
        return send(
            conn,
            &answer(200, &headers, "text/html; charset=utf-8", body.as_bytes()),
        )
        .await;
    }
    if path == events && req.method == "GET" {
        if let Err(why) = same_origin(shared, req) {
            let a = refuse(shared, req, 403, &why);
            let _ = send(conn, &a).await;
            return false;
        }
        return event_stream(shared, conn).await;
    }
    if path == bridge && req.method == "POST" {
        if let Err(why) = same_origin(shared, req) {
            let a = refuse(shared, req, 403, &why);
            let _ = send(conn, &a).await;
            return false;
        }
        if req.body.len() > MAX_POST {
            let a = refuse(shared, req, 413, "a bridge message is at most 32 MiB");
            let _ = send(conn, &a).await;
            return false;
        }
        return match parse_from_page(&req.body) {
            Ok(m) => {
                let _ = shared.inbox.send(m);
                send(conn, &answer(204, &[], "", b"")).await
            }
            Err(why) => {
                let a = refuse(shared, req, 400, &why);
                let _ = send(conn, &a).await;
                false
            }
        };
    }
    let a = refuse(shared, req, 404, "nothing here");
    let _ = send(conn, &a).await;
    false
}

/// The bridge answers only the host page: a request that says where it
/// comes from (browsers do, with `Origin` on a POST and `Sec-Fetch-Site`)
/// must come from the host page's origin.
fn same_origin(shared: &Shared, req: &Request) -> Result<(), String> {
    match req.header("origin") {
        Some(o) if o == shared.host_origin => {}
        Some(o) => return Err(format!("Origin {o:?} is not the host page's ({})", shared.host_origin)),
        None if req.method == "POST" => return Err("a bridge POST without Origin".into()),
        None => {}
    }
    match req.header("sec-fetch-site") {
        None | Some("same-origin") => Ok(()),
        Some(other) => Err(format!(
            "Sec-Fetch-Site {other:?}: the bridge is for the host page only"
        )),
    }
}

fn parse_from_page(body: &[u8]) -> Result<FromPage, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("the bridge takes JSON: {e}"))?;
    let s = |k: &str| v.get(k).and_then(Value::as_str);
    match (s("from"), s("action")) {
        (Some("view"), _) => match v.get("message") {
            Some(Value::String(text)) => Ok(FromPage::View(text.as_bytes().to_vec())),
            _ => Err("a view message needs \"message\", the message's text".into()),
        },
        (Some("page"), Some("answer")) => Ok(FromPage::Answer {
            ticket: v
                .get("ticket")
                .and_then(Value::as_u64)
                .ok_or("an answer needs a ticket")?,
            allow: v.get("allow").and_then(Value::as_bool).ok_or("an answer needs allow")?,
        }),
        (Some("page"), Some("mode")) => Ok(FromPage::DisplayMode(s("mode").ok_or("mode needs mode")?.to_owned())),
        (Some("page"), Some("theme")) => match s("theme") {
            Some(t @ ("light" | "dark")) => Ok(FromPage::Theme(t.to_owned())),
            _ => Err("theme is light or dark".into()),
        },
        (Some("page"), Some("close")) => Ok(FromPage::Close),
        (Some("page"), Some("container")) => {
            let px = |k: &str| {
                v.get(k)
                    .and_then(Value::as_f64)
                    .filter(|n| *n >= 0.0 && *n < 100_000.0)
                    .map(|n| n as u32)
            };
            Ok(FromPage::Container {
                width: px("width"),
                max_height: px("maxHeight"),
            })
        }
        (Some("page"), Some("refused")) => Ok(FromPage::Refused {
            origin: crate::text::shorten(s("origin").unwrap_or("?"), 200),
        }),
        _ => Err("unknown bridge message".into()),
    }
}

async fn event_stream(shared: &Arc<Shared>, conn: &mut Conn<TcpStream>) -> bool {
    let head =
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-store\r\nconnection: close\r\n\r\n";
    if !send(conn, head.as_bytes()).await {
        return false;
    }
    let _ = shared.inbox.send(FromPage::Opened);
    let mut scratch = [0u8; 512];
    loop {
        let next = lock(&shared.to_page).pop_front();
        if let Some(data) = next {
            let event = format!("data: {data}\n\n");
            if !send(conn, event.as_bytes()).await {
                // Not sent: keep it for the page's next stream.
                lock(&shared.to_page).push_front(data);
                return false;
            }
            shared.delivered.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            continue;
        }
        let woken = timeout(
            KEEPALIVE,
            first_of(shared.wake.notified(), conn.stream.read(&mut scratch)),
        )
        .await;
        match woken {
            Ok(Either::A(())) => {}
            // The page closed the stream (or sent something it should not).
            Ok(Either::B(_)) => return false,
            Err(_) => {
                if !send(conn, b": keep-alive\n\n").await {
                    return false;
                }
            }
        }
    }
}

async fn sandbox(shared: &Arc<Shared>, conn: &mut Conn<TcpStream>, req: &Request) -> bool {
    let path = req.target.split('?').next().unwrap_or_default();
    if path == format!("/sandbox/{}", shared.token) && req.method == "GET" {
        let config = json!({"hostOrigin": shared.host_origin});
        let body = SANDBOX_PAGE.replace("/*CONFIG*/null", &script_json(&config));
        // Only where it may be framed: fetch directives here would be
        // inherited by the View's srcdoc document and intersect with its own.
        let frame = format!("frame-ancestors {}", shared.host_origin);
        let headers = [
            ("content-security-policy", frame.as_str()),
            ("referrer-policy", "no-referrer"),
        ];
        return send(
            conn,
            &answer(200, &headers, "text/html; charset=utf-8", body.as_bytes()),
        )
        .await;
    }
    let a = refuse(shared, req, 404, "nothing here");
    let _ = send(conn, &a).await;
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bridge_reads_what_the_page_sends() {
        assert_eq!(
            parse_from_page(br#"{"from":"view","message":"{\"jsonrpc\":\"2.0\"}"}"#),
            Ok(FromPage::View(br#"{"jsonrpc":"2.0"}"#.to_vec()))
        );
        assert_eq!(
            parse_from_page(br#"{"from":"page","action":"answer","ticket":3,"allow":false}"#),
            Ok(FromPage::Answer {
                ticket: 3,
                allow: false
            })
        );
        assert!(parse_from_page(br#"{"from":"page","action":"theme","theme":"pink"}"#).is_err());
        assert!(parse_from_page(b"nope").is_err());
    }

    #[test]
    fn config_cannot_end_its_script_block() {
        let s = script_json(&json!({"app": "</script><script>alert(1)</script>"}));
        assert!(!s.contains("</script>"), "{s}");
    }

    #[test]
    fn pages_are_served_and_the_bridge_refuses_other_origins() {
        let server = AppServer::start(PageConfig {
            app: "counter".into(),
            ..PageConfig::default()
        })
        .unwrap();
        assert!(server.host_origin().starts_with("http://127.0.0.1:"));
        assert!(server.sandbox_origin().starts_with("http://localhost:"));
        assert_ne!(server.host_origin(), server.sandbox_origin());
        let agent = ureq::Agent::new_with_config(ureq::Agent::config_builder().http_status_as_error(false).build());
        let page = agent.get(&server.url()).call().unwrap();
        assert_eq!(page.status(), 200);
        let csp = page
            .headers()
            .get("content-security-policy")
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned();
        assert!(csp.contains(&format!("frame-src {}", server.sandbox_origin())), "{csp}");
        let body = page.into_body().read_to_string().unwrap();
        assert!(body.contains("\"app\":\"counter\""));
        // A wrong token, a POST from the sandbox's origin, a POST without an origin.
        let wrong = format!("{}/app/0000", server.host_origin());
        assert_eq!(agent.get(&wrong).call().unwrap().status(), 404);
        let msg = r#"{"from":"page","action":"close"}"#;
        let from_sandbox = agent
            .post(&server.bridge_url())
            .header("origin", server.sandbox_origin())
            .send(msg)
            .unwrap();
        assert_eq!(from_sandbox.status(), 403);
        assert_eq!(agent.post(&server.bridge_url()).send(msg).unwrap().status(), 403);
        let ok = agent
            .post(&server.bridge_url())
            .header("origin", server.host_origin())
            .send(msg)
            .unwrap();
        assert_eq!(ok.status(), 204);
        assert_eq!(server.inbox().recv_timeout(Duration::from_secs(5)), Ok(FromPage::Close));
        assert_eq!(server.take_log().len(), 3);
        server.stop();
    }
}
