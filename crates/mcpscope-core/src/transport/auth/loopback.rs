//! The RFC 8252 loopback redirect: a listener on 127.0.0.1 (an ephemeral
//! port unless one is fixed), answering only `GET /callback` with the
//! expected `state`, closed after that one callback, a timeout or a cancel.

use crate::protocol::auth::AuthError;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const PATH: &str = "/callback";

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
        loop {
            if cancel.load(Ordering::SeqCst) {
                return Err(AuthError::Cancelled);
            }
            if Instant::now() >= deadline {
                return Err(AuthError::CallbackTimedOut {
                    waited_ms: timeout.as_millis() as u64,
                });
            }
            match self.listener.accept() {
                Ok((stream, _)) => match self.serve(stream, state, refused) {
                    Served::Callback(url) => return Ok(url),
                    Served::WrongState => return Err(AuthError::StateMismatch),
                    Served::Other => {}
                },
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(25));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(25)),
            }
        }
    }

    /// Answers one connection.
    fn serve(&self, mut stream: TcpStream, state: &str, refused: &mut dyn FnMut(Refused)) -> Served {
        let _ = stream.set_nonblocking(false);
        let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
        let head = read_head(&mut stream);
        let request_line = head.lines().next().unwrap_or_default().to_owned();
        let mut parts = request_line.split(' ');
        let (method, target) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
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
                    "400 Bad Request",
                    "This redirect does not carry the state mcpscope sent: mcpscope refused it and stopped the sign-in. You can close this tab.",
                )
            } else {
                (
                    "404 Not Found",
                    "mcpscope is waiting for the authorization server's redirect; this is not it.",
                )
            };
            respond(&mut stream, status, message);
            refused(Refused {
                request_line,
                why: why.to_owned(),
            });
            return if callback { Served::WrongState } else { Served::Other };
        }
        let failed = url::form_urlencoded::parse(query.as_bytes()).any(|(k, _)| k == "error");
        respond(
            &mut stream,
            "200 OK",
            if failed {
                "The authorization server reported an error; mcpscope shows it. You can close this tab."
            } else {
                "mcpscope is authorized. You can close this tab and return to mcpscope."
            },
        );
        Served::Callback(format!("http://127.0.0.1:{}{target}", self.port))
    }
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

fn read_head(stream: &mut TcpStream) -> String {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    while buf.len() < 16 * 1024 && !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    String::from_utf8_lossy(&buf).into_owned()
}

fn respond(stream: &mut TcpStream, status: &str, message: &str) {
    let body = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>mcpscope</title></head>\
         <body style=\"font-family:sans-serif\"><p>{message}</p></body></html>"
    );
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.flush();
    let _ = stream.shutdown(Shutdown::Both);
}

#[cfg(test)]
mod tests {
    use super::*;

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
