//! The RFC 8252 loopback redirect: a listener on 127.0.0.1 (an ephemeral
//! port unless one is fixed), answering only `GET /callback` with the
//! expected `state`, closed after that one callback, a timeout or a cancel.
//!
//! Requests are read by the head reader and let in by the `Host`/`Origin`
//! gate every listener of mcpscope shares, each connection on a thread of
//! its own (at most [`MAX_CONNECTIONS`] at once), so a local
//! client that connects and sends nothing cannot hold the browser's
//! callback back.

use crate::listen::gate::Gate;
use crate::listen::request::{Stop, read_head_blocking};
use crate::listen::response::answer;
use crate::protocol::auth::AuthError;
use crossbeam_channel::{Receiver, Sender, bounded};
use std::io::Write;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const PATH: &str = "/callback";
/// Connections served at once; more are closed unanswered.
const MAX_CONNECTIONS: usize = 16;
/// The most a request head may hold: a callback's query is short.
const MAX_HEAD: usize = 16 * 1024;
/// How long a connection may take to send its head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(5);

pub struct Loopback {
    listener: TcpListener,
    port: u16,
}

/// What the listener saw that was not the callback, for the record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    pub request_line: String,
    pub why: String,
}

impl Loopback {
    /// Binds 127.0.0.1 (the IP literal, not `localhost`: RFC 8252 §8.3).
    pub fn bind(port: Option<u16>) -> Result<Self, AuthError> {
        let listener = TcpListener::bind(("127.0.0.1", port.unwrap_or(0))).map_err(|e| {
            AuthError::Config(match port {
                Some(p) => format!("cannot listen on 127.0.0.1:{p} for the redirect: {e}"),
                None => format!("cannot listen on 127.0.0.1 for the redirect: {e}"),
            })
        })?;
        let port = listener
            .local_addr()
            .map_err(|e| AuthError::Config(format!("the redirect listener has no address: {e}")))?
            .port();
        Ok(Self { listener, port })
    }

    pub fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{PATH}", self.port)
    }

    /// Waits for the callback carrying `state`; returns its full URL.
    /// Other requests (a favicon, another path) are answered with an error
    /// page and reported to `refused`; waiting goes on. A callback with
    /// another state (or none) ends the wait at once: the browser came back,
    /// and not from the authorization mcpscope started (waiting on would
    /// leave the user staring at "authorize in the browser" until the
    /// timeout).
    pub fn wait(
        self,
        state: &str,
        timeout: Duration,
        cancel: &Arc<AtomicBool>,
        refused: &mut dyn FnMut(Refused),
    ) -> Result<String, AuthError> {
        self.listener
            .set_nonblocking(true)
            .map_err(|e| AuthError::Config(format!("the redirect listener: {e}")))?;
        let deadline = Instant::now() + timeout;
        let (tx, rx) = bounded::<(Served, Option<Refused>)>(MAX_CONNECTIONS);
        let busy = Arc::new(AtomicUsize::new(0));
        loop {
            if cancel.load(Ordering::SeqCst) {
                return Err(AuthError::Cancelled);
            }
            if Instant::now() >= deadline {
                return Err(AuthError::CallbackTimedOut {
                    waited_ms: timeout.as_millis() as u64,
                });
            }
            while let Ok((served, refusal)) = rx.try_recv() {
                if let Some(r) = refusal {
                    refused(r);
                }
                match served {
                    Served::Callback(url) => return Ok(url),
                    Served::WrongState => return Err(AuthError::StateMismatch),
                    Served::Other => {}
                }
            }
            match self.listener.accept() {
                Ok((stream, _)) => self.spawn_serve(stream, state, &busy, &tx),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => wait_a_little(&rx),
                Err(_) => wait_a_little(&rx),
            }
        }
    }

    /// Serves one connection on a thread of its own; its outcome comes back on `tx`.
    fn spawn_serve(
        &self,
        stream: TcpStream,
        state: &str,
        busy: &Arc<AtomicUsize>,
        tx: &Sender<(Served, Option<Refused>)>,
    ) {
        if busy.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            busy.fetch_sub(1, Ordering::SeqCst);
            let _ = stream.shutdown(Shutdown::Both);
            return;
        }
        let (state, port, tx, held) = (state.to_owned(), self.port, tx.clone(), busy.clone());
        let spawned = std::thread::Builder::new()
            .name("mcpscope-oauth-callback".into())
            .spawn(move || {
                let outcome = serve(stream, &state, port);
                let _ = tx.send(outcome);
                held.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            busy.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Sleeps until the next accept is worth trying, or an outcome arrives.
fn wait_a_little(rx: &Receiver<(Served, Option<Refused>)>) {
    // Peeking is not possible on a channel: wait for readiness, not a message.
    let mut sel = crossbeam_channel::Select::new();
    sel.recv(rx);
    let _ = sel.ready_timeout(Duration::from_millis(25));
}

/// Answers one connection: the callback's URL, or what it was instead.
fn serve(mut stream: TcpStream, state: &str, port: u16) -> (Served, Option<Refused>) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(HEAD_TIMEOUT));
    let (method, target) = match read_request(&mut stream) {
        Ok(r) => r,
        Err((status, why)) => {
            let message = if status == 403 {
                "mcpscope answers only requests addressed to this machine."
            } else {
                "mcpscope could not read this request."
            };
            respond(&mut stream, status, message);
            let refusal = Refused {
                request_line: String::new(),
                why,
            };
            return (Served::Other, Some(refusal));
        }
    };
    let request_line = format!("{method} {target}");
    let (path, query) = target.split_once('?').unwrap_or((target.as_str(), ""));
    let got_state = url::form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned());
    let why = if method != "GET" {
        Some("not a GET")
    } else if path != PATH {
        Some("not the callback path")
    } else if got_state.as_deref() != Some(state) {
        Some("wrong or missing state")
    } else {
        None
    };
    if let Some(why) = why {
        let callback = method == "GET" && path == PATH;
        let (status, message) = if callback {
            (
                400,
                "This redirect does not carry the state mcpscope sent: mcpscope refused it and stopped the sign-in. You can close this tab.",
            )
        } else {
            (
                404,
                "mcpscope is waiting for the authorization server's redirect; this is not it.",
            )
        };
        respond(&mut stream, status, message);
        let refusal = Refused {
            request_line,
            why: why.to_owned(),
        };
        return (if callback { Served::WrongState } else { Served::Other }, Some(refusal));
    }
    let failed = url::form_urlencoded::parse(query.as_bytes()).any(|(k, _)| k == "error");
    respond(
        &mut stream,
        200,
        if failed {
            "The authorization server reported an error; mcpscope shows it. You can close this tab."
        } else {
            "mcpscope is authorized. You can close this tab and return to mcpscope."
        },
    );
    (Served::Callback(format!("http://127.0.0.1:{port}{target}")), None)
}

/// What one connection to the listener was.
enum Served {
    /// The callback with the right state: its URL.
    Callback(String),
    /// The callback path with another state, or none.
    WrongState,
    /// Anything else (a favicon, another path).
    Other,
}

/// The method and target of the request on `stream`, read as every
/// listener of mcpscope reads a head (the head only: a callback has no
/// body) and let in by the same [`Gate`], or the status to refuse it with
/// and why.
fn read_request(stream: &mut TcpStream) -> Result<(String, String), (u16, String)> {
    let gate = Gate::loopback("mcpscope", "the sign-in's redirect listener");
    let req = match read_head_blocking(stream, MAX_HEAD, HEAD_TIMEOUT) {
        Ok(req) => req,
        Err(Stop::Bad(status, why)) => return Err((status, why)),
        Err(_) => return Err((400, "a malformed request".into())),
    };
    gate.admit(&req).map_err(|(status, why)| (status, why.to_string()))?;
    Ok((req.method, req.target))
}

/// Answers with a small page and closes.
fn respond(stream: &mut TcpStream, status: u16, message: &str) {
    let body = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>mcpscope</title></head>\
         <body style=\"font-family:sans-serif\"><p>{message}</p></body></html>"
    );
    let headers = [("connection", "close"), ("cache-control", "no-store")];
    let _ = stream.write_all(&answer(status, &headers, "text/html; charset=utf-8", body.as_bytes()));
    let _ = stream.flush();
    let _ = stream.shutdown(Shutdown::Both);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn get(port: u16, target: &str) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(s, "GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    #[test]
    fn only_the_callback_with_the_right_state_counts() {
        let lb = Loopback::bind(None).unwrap();
        let uri = lb.redirect_uri();
        assert!(
            uri.starts_with("http://127.0.0.1:") && uri.ends_with("/callback"),
            "{uri}"
        );
        let port = lb.port;
        let client = std::thread::spawn(move || {
            let a = get(port, "/favicon.ico");
            let c = get(port, "/callback?code=the-code&state=s1");
            (a, c)
        });
        let mut refused = Vec::new();
        let cancel = Arc::new(AtomicBool::new(false));
        let url = lb
            .wait("s1", Duration::from_secs(20), &cancel, &mut |r| refused.push(r))
            .unwrap();
        assert_eq!(url, format!("http://127.0.0.1:{port}/callback?code=the-code&state=s1"));
        let (a, c) = client.join().unwrap();
        assert!(a.starts_with("HTTP/1.1 404"), "{a}");
        assert!(c.starts_with("HTTP/1.1 200") && c.contains("close this tab"), "{c}");
        assert_eq!(refused.len(), 1);
        // Closed after the callback. (Another test may bind the freed
        // port at once, so what is checked is that this listener answers
        // no more: a connection, if any, is not to the callback server.)
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
            let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
            let _ = s.write_all(b"GET /callback?code=late&state=s1 HTTP/1.1\r\nHost: x\r\n\r\n");
            let mut answer = String::new();
            let _ = std::io::Read::read_to_string(&mut s, &mut answer);
            assert!(!answer.contains("close this tab"), "{answer}");
        }
    }

    /// #25 item 1: a redirect with another state ends the sign-in at once
    /// (it waited for the whole timeout, five minutes by default).
    #[test]
    fn a_callback_with_another_state_ends_the_wait_at_once() {
        for target in ["/callback?code=x&state=wrong", "/callback?code=x"] {
            let lb = Loopback::bind(None).unwrap();
            let port = lb.port;
            let client = std::thread::spawn(move || get(port, target));
            let mut refused = Vec::new();
            let cancel = Arc::new(AtomicBool::new(false));
            let started = Instant::now();
            let r = lb.wait("s1", Duration::from_secs(300), &cancel, &mut |r| refused.push(r));
            assert_eq!(r, Err(AuthError::StateMismatch), "{target}");
            assert!(started.elapsed() < Duration::from_secs(30), "{target}: ended at once");
            let page = client.join().unwrap();
            assert!(
                page.starts_with("HTTP/1.1 400") && page.contains("stopped the sign-in"),
                "{page}"
            );
            assert_eq!(refused[0].why, "wrong or missing state");
        }
    }

    /// Silent local clients (connected, sending nothing) do not hold the
    /// callback back: eight of them held it 8 x 5 s, past this wait's 20 s.
    #[test]
    fn silent_clients_do_not_hold_the_callback_back() {
        let lb = Loopback::bind(None).unwrap();
        let port = lb.port;
        let silent: Vec<TcpStream> = (0..8)
            .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
            .collect();
        let client = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            get(port, "/callback?code=c&state=s1")
        });
        let cancel = Arc::new(AtomicBool::new(false));
        let url = lb.wait("s1", Duration::from_secs(20), &cancel, &mut |_| {});
        assert_eq!(url, Ok(format!("http://127.0.0.1:{port}/callback?code=c&state=s1")));
        assert!(client.join().unwrap().starts_with("HTTP/1.1 200"));
        drop(silent);
    }

    #[test]
    fn a_malformed_request_gets_400_and_the_wait_goes_on() {
        let lb = Loopback::bind(None).unwrap();
        let port = lb.port;
        let client = std::thread::spawn(move || {
            let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            s.write_all(b"GET /callback?state=s1 HTTP/1.1\r\nno colon here\r\n\r\n")
                .unwrap();
            let mut bad = String::new();
            let _ = s.read_to_string(&mut bad);
            (bad, get(port, "/callback?code=c&state=s1"))
        });
        let mut refused = Vec::new();
        let cancel = Arc::new(AtomicBool::new(false));
        let url = lb.wait("s1", Duration::from_secs(20), &cancel, &mut |r| refused.push(r));
        assert!(url.is_ok(), "{url:?}");
        let (bad, good) = client.join().unwrap();
        assert!(bad.starts_with("HTTP/1.1 400"), "{bad}");
        assert!(good.starts_with("HTTP/1.1 200"), "{good}");
        assert!(refused[0].why.contains("malformed"), "{refused:?}");
    }

    #[test]
    fn timeout_and_cancel() {
        let cancel = Arc::new(AtomicBool::new(false));
        let lb = Loopback::bind(None).unwrap();
        let r = lb.wait("s", Duration::from_millis(50), &cancel, &mut |_| {});
        assert_eq!(r, Err(AuthError::CallbackTimedOut { waited_ms: 50 }));
        cancel.store(true, Ordering::SeqCst);
        let lb = Loopback::bind(None).unwrap();
        assert_eq!(
            lb.wait("s", Duration::from_secs(60), &cancel, &mut |_| {}),
            Err(AuthError::Cancelled)
        );
    }
}
