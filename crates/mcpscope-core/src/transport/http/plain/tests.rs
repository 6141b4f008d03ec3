//! The plain client against scripted peers on loopback: what it sends
//! beside what ureq sends, reuse and its limits, and every way a peer can
//! answer badly.

use super::*;
use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::sync::mpsc;
use std::thread;

const T: Duration = Duration::from_secs(5);

/// What the peer does with a request.
enum Reply {
    /// Answers, and waits for the next request on the connection.
    Keep(Vec<u8>),
    /// Answers and closes the connection.
    Close(Vec<u8>),
    /// Closes the connection without an answer.
    Drop,
}

/// A peer that answers each request (head and body), on any connection,
/// with the next of `replies`; what each request was (with its
/// connection's number) is sent back.
fn peer(replies: Vec<Reply>) -> (String, mpsc::Receiver<(usize, String, Vec<u8>)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp?x=1", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    let replies = Arc::new(Mutex::new(replies.into_iter()));
    thread::spawn(move || {
        for (conn, stream) in listener.incoming().enumerate() {
            let Ok(stream) = stream else { return };
            let (tx, replies) = (tx.clone(), replies.clone());
            thread::spawn(move || serve(conn, stream, &tx, &replies));
        }
    });
    (url, rx)
}

fn serve(
    conn: usize,
    stream: TcpStream,
    tx: &mpsc::Sender<(usize, String, Vec<u8>)>,
    replies: &Mutex<std::vec::IntoIter<Reply>>,
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut head = String::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            head.push_str(&line);
            if line == "\r\n" {
                break;
            }
        }
        if head.is_empty() {
            return;
        }
        let len = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length: ")
                    .map(str::to_owned)
            })
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; len];
        reader.read_exact(&mut body).unwrap();
        let _ = tx.send((conn, head, body));
        let reply = lock(replies).next();
        match reply {
            Some(Reply::Keep(a)) => {
                if writer.write_all(&a).is_err() {
                    return;
                }
            }
            Some(Reply::Close(a)) => {
                let _ = writer.write_all(&a);
                return;
            }
            Some(Reply::Drop) | None => return,
        }
    }
}

fn ok_json(body: &str) -> Reply {
    Reply::Keep(
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes(),
    )
}

fn headers() -> Vec<(String, String)> {
    vec![
        ("Content-Type".into(), "application/json".into()),
        ("Accept".into(), "application/json, text/event-stream".into()),
        ("Mcp-Session-Id".into(), "s1".into()),
    ]
}

fn post(client: &PlainClient, url: &str, body: &str) -> Result<Response, ureq::Error> {
    client
        .post(url, &headers(), body.as_bytes(), T, T, 1 << 20)
        .expect("a request for the plain client")
}

fn text(resp: Response) -> std::io::Result<String> {
    let mut s = String::new();
    resp.into_body().into_reader().read_to_string(&mut s)?;
    Ok(s)
}

/// A request head's lines after the request line, sorted (order is not
/// part of HTTP's meaning).
fn fields(head: &str) -> Vec<String> {
    let mut lines: Vec<String> = head
        .lines()
        .skip(1)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

#[test]
fn a_request_is_what_ureq_would_send_and_its_answer_reads_the_same() {
    let (url, seen) = peer(vec![ok_json(r#"{"a":1}"#), ok_json(r#"{"a":1}"#)]);
    let agent = super::super::session_agent(T);
    let mut req = agent.post(&url);
    for (k, v) in headers() {
        req = req.header(k.as_str(), v.as_str());
    }
    let by_ureq = req.send(r#"{"id":1}"#).unwrap();
    let (_, ureq_head, ureq_body) = seen.recv().unwrap();
    let by_plain = post(&PlainClient::default(), &url, r#"{"id":1}"#).unwrap();
    let (_, plain_head, plain_body) = seen.recv().unwrap();
    assert_eq!(plain_head.lines().next(), ureq_head.lines().next());
    assert_eq!(plain_head.lines().next(), Some("POST /mcp?x=1 HTTP/1.1"));
    assert_eq!(
        fields(&plain_head),
        fields(&ureq_head),
        "{plain_head}\n---\n{ureq_head}"
    );
    assert_eq!(plain_body, ureq_body);
    assert_eq!(by_plain.status(), by_ureq.status());
    assert_eq!(by_plain.headers(), by_ureq.headers());
    assert_eq!(by_plain.body().content_length(), by_ureq.body().content_length());
    assert_eq!(text(by_plain).unwrap(), r#"{"a":1}"#);
}

#[test]
fn a_kept_connection_is_reused_and_a_closed_one_replaced() {
    // The peer closes the connection after the second answer.
    let (url, seen) = peer(vec![ok_json("1"), ok_json("2"), Reply::Drop, ok_json("4")]);
    let client = PlainClient::default();
    assert_eq!(text(post(&client, &url, "a").unwrap()).unwrap(), "1");
    assert_eq!(text(post(&client, &url, "b").unwrap()).unwrap(), "2");
    let conns: Vec<usize> = (0..2).map(|_| seen.recv().unwrap().0).collect();
    assert_eq!(conns, [0, 0], "one connection for both");
    // The peer reads the third request and closes the connection: no answer.
    assert!(post(&client, &url, "c").is_err());
    assert_eq!(seen.recv().unwrap().0, 0);
    // A connection that failed is not kept: the fourth opens a new one.
    assert_eq!(text(post(&client, &url, "d").unwrap()).unwrap(), "4");
    assert_eq!(seen.recv().unwrap().0, 1);
}

#[test]
fn an_idle_connection_the_server_closed_is_not_used() {
    // Answers one request per connection and closes it, without saying so.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let server = thread::spawn(move || {
        for n in 0..2 {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 4096];
            let mut got = Vec::new();
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                let k = s.read(&mut buf).unwrap();
                got.extend_from_slice(&buf[..k]);
            }
            s.write_all(format!("HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\n{n}").as_bytes())
                .unwrap();
        }
    });
    let client = PlainClient::default();
    assert_eq!(text(post(&client, &url, "").unwrap()).unwrap(), "0");
    thread::sleep(Duration::from_millis(50));
    // The kept connection is closed by now: the probe sees it, and the
    // request goes on a new one instead of failing.
    assert_eq!(text(post(&client, &url, "").unwrap()).unwrap(), "1");
    server.join().unwrap();
}

#[test]
fn chunked_and_close_delimited_bodies_stream_and_close_their_connection() {
    let chunked = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n\
        5;ext=1\r\nevent\r\n10\r\n: 0123456789abc\n\r\n0\r\ntrailer: x\r\n\r\n"
        .to_vec();
    let (url, seen) = peer(vec![Reply::Keep(chunked), ok_json("after")]);
    let client = PlainClient::default();
    let resp = post(&client, &url, "a").unwrap();
    assert_eq!(resp.body().content_length(), None);
    assert_eq!(text(resp).unwrap(), "event: 0123456789abc\n");
    assert!(
        lock(&client.shared.idle).is_none(),
        "a streamed answer's connection is not kept"
    );
    assert_eq!(text(post(&client, &url, "b").unwrap()).unwrap(), "after");
    let conns: Vec<usize> = (0..2).map(|_| seen.recv().unwrap().0).collect();
    assert_eq!(conns, [0, 1]);

    let (url, _seen) = peer(vec![Reply::Close(b"HTTP/1.1 200 OK\r\n\r\nuntil the end".to_vec())]);
    let resp = post(&client, &url, "a").unwrap();
    assert_eq!(text(resp).unwrap(), "until the end");
}

#[test]
fn a_body_longer_than_is_held_streams_and_interim_answers_are_passed_over() {
    let body = "x".repeat(5000);
    let answer =
        format!("HTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 5000\r\n\r\n{body}");
    let (url, _seen) = peer(vec![Reply::Keep(answer.into_bytes())]);
    let resp = PlainClient::default()
        .post(&url, &headers(), b"a", T, T, 1000)
        .unwrap()
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.body().content_length(), None, "read on as it comes, not held");
    assert_eq!(text(resp).unwrap(), body);
}

/// The error (described as the session would) or the body's read error of
/// one answer.
fn outcome(answer: &[u8]) -> String {
    let (url, _seen) = peer(vec![Reply::Close(answer.to_vec())]);
    match post(&PlainClient::default(), &url, "a") {
        Err(e) => {
            let h = super::super::exchange::Headers::plain(headers());
            super::super::exchange::describe_error(&e, &url, &h)
        }
        Ok(resp) => match text(resp) {
            Ok(body) => format!("read: {body}"),
            Err(e) => format!("body: {e}"),
        },
    }
}

#[test]
fn every_broken_answer_is_said_for_what_it_is() {
    let cases: [(&[u8], &str); 10] = [
        (b"", "closed the connection without an HTTP response"),
        (b"HELLO\r\n\r\n", "did not answer with valid HTTP"),
        (b"HTTP/1.1 200 OK\r\ncontent-le", "closed inside the response head"),
        (
            b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\nab",
            "two different Content-Length",
        ),
        (b"HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n", "not a number"),
        (b"HTTP/1.1 101 Switching Protocols\r\n\r\n", "101"),
        (
            b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc",
            "body: the server closed the connection 3 bytes",
        ),
        (
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
            "body: a chunk size line that does not start",
        ),
        (
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabcdef\r\n",
            "body: a chunk longer than its size",
        ),
        (
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nab",
            "body: the server closed the connection inside a chunk",
        ),
    ];
    for (answer, said) in cases {
        let got = outcome(answer);
        assert!(got.contains(said), "{:?}: {got}", String::from_utf8_lossy(answer));
    }
    let huge = format!("HTTP/1.1 200 OK\r\nx: {}\r\n\r\n", "y".repeat(70_000));
    assert!(outcome(huge.as_bytes()).contains("longer than 64 KiB"));
    let many: String = (0..200).map(|i| format!("x{i}: y\r\n")).collect();
    assert!(outcome(format!("HTTP/1.1 200 OK\r\n{many}\r\n").as_bytes()).contains("more than 128 header fields"));
    let trailers: String = (0..2000).map(|i| format!("t{i}: {}\r\n", "v".repeat(40))).collect();
    let answer = format!("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n0\r\n{trailers}\r\n");
    assert!(outcome(answer.as_bytes()).contains("trailer fields over 64 KiB"));
}

/// A peer that takes a connection and says nothing for three seconds.
fn silent_peer() -> (String, thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let hold = thread::spawn(move || {
        let (s, _) = listener.accept().unwrap();
        thread::sleep(Duration::from_secs(3));
        drop(s);
    });
    (url, hold)
}

#[test]
fn a_silent_server_times_out_and_a_shutdown_ends_a_wait_at_once() {
    let (url, hold) = silent_peer();
    let client = PlainClient::default();
    let started = Instant::now();
    let e = client
        .post(&url, &headers(), b"a", Duration::from_millis(200), T, 1000)
        .unwrap()
        .unwrap_err();
    assert!(matches!(e, ureq::Error::Timeout(ureq::Timeout::RecvResponse)), "{e:?}");
    assert!(started.elapsed() < Duration::from_secs(2));

    let (url, hold2) = silent_peer();
    let waiting = client.clone();
    let started = Instant::now();
    let post = thread::spawn(move || waiting.post(&url, &headers(), b"a", Duration::from_secs(30), T, 1000));
    thread::sleep(Duration::from_millis(200));
    client.shutdown();
    assert!(post.join().unwrap().unwrap().is_err());
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the shutdown ended the wait"
    );
    // The flag alone ends a wait too: where shutting a socket down does not
    // wake a read blocked on it (Wine), the read looks at the flag.
    let (url, hold3) = silent_peer();
    let flagged = PlainClient::default();
    let waiting = flagged.clone();
    let started = Instant::now();
    let post = thread::spawn(move || waiting.post(&url, &headers(), b"a", Duration::from_secs(30), T, 1000));
    thread::sleep(Duration::from_millis(200));
    flagged.shared.shut.store(true, Ordering::SeqCst);
    let e = post.join().unwrap().unwrap().unwrap_err();
    assert!(e.to_string().contains("ending"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(2), "the flag ended the wait");
    hold3.join().unwrap();
    // Later POSTs fail at once.
    let e = client
        .post("http://127.0.0.1:9/", &headers(), b"a", T, T, 1000)
        .unwrap()
        .unwrap_err();
    assert!(e.to_string().contains("ending"), "{e}");
    hold.join().unwrap();
    hold2.join().unwrap();
}

#[test]
fn what_only_ureq_rules_on_goes_to_ureq() {
    let client = PlainClient::default();
    let h = headers();
    assert!(client.post("https://127.0.0.1:1/", &h, b"", T, T, 1).is_none());
    assert!(client.post("http://user:pw@127.0.0.1:1/", &h, b"", T, T, 1).is_none());
    assert!(client.post("not a url", &h, b"", T, T, 1).is_none());
    for bad in [
        ("X-Evil", "a\r\nInjected: 1"),
        ("Bad Name", "v"),
        ("Transfer-Encoding", "chunked"),
        ("Host", "elsewhere"),
        ("Connection", "close"),
    ] {
        let mut h = headers();
        h.push((bad.0.into(), bad.1.into()));
        assert!(
            client.post("http://127.0.0.1:1/", &h, b"", T, T, 1).is_none(),
            "{bad:?}"
        );
    }
    let mut h = headers();
    h.push(("Authorization".into(), "x".repeat(SENDABLE_HEAD)));
    assert!(client.post("http://127.0.0.1:1/", &h, b"", T, T, 1).is_none());
}
