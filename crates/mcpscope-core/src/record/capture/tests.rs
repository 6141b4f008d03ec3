//! The capture format written and read back: bytes kept, links recomputed,
//! sessions kept apart, odd and cut-short records reported.

use super::reader::load_with_limit;
use super::*;
use crate::protocol::auth::Step;
use crate::transport::event::{AuthExchange, Event};
use crate::transport::process::{ExitInfo, ServerSpec};
use crate::transport::recorder::Recorder;
use crate::wire::classify::{Anomalies, Kind, Limits};
use crate::wire::frame::Direction;
use crate::wire::framing::{LineEnding, RawLine};
use serde_json::json;
use std::fs::File;
use std::io::{BufReader, Write};
#[cfg(unix)]
use std::path::Path;
use std::time::{Duration, Instant};

#[test]
fn round_trip_keeps_bytes_and_recomputes_links() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    let spec = ServerSpec::new("server", ["--flag"]);
    let mut rec = Recorder::new(Limits::default(), Instant::now());
    let mut w = Writer::open(&path, &Header::for_spec(&spec, "session")).unwrap();
    let lines: Vec<(Direction, RawLine)> = vec![
        (
            Direction::Out,
            RawLine {
                bytes: br#"{"jsonrpc":"2.0","id":1,"method":"initialize"}"#.to_vec(),
                ending: LineEnding::Lf,
            },
        ),
        (
            Direction::In,
            RawLine {
                bytes: b"Server started \xff".to_vec(),
                ending: LineEnding::Lf,
            },
        ),
        (
            Direction::In,
            RawLine {
                bytes: br#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_vec(),
                ending: LineEnding::CrLf,
            },
        ),
        (
            Direction::In,
            RawLine {
                bytes: br#"{"jsonrpc":"2.0","id":"#.to_vec(),
                ending: LineEnding::Eof,
            },
        ),
    ];
    let mut written = Vec::new();
    for (i, (d, l)) in lines.into_iter().enumerate() {
        let f = rec.frame_at(d, l, Duration::from_millis(i as u64 * 10), None);
        let ev = Event::Frame(f);
        w.write(&ev).unwrap();
        written.push(ev);
    }
    let st = rec.stderr_at(
        RawLine {
            bytes: b"log: \"quoted\"".to_vec(),
            ending: LineEnding::Lf,
        },
        Duration::from_millis(45),
    );
    w.write(&Event::Stderr(st)).unwrap();
    w.write(&Event::Exited {
        at: Duration::from_millis(50),
        status: ExitInfo {
            code: None,
            signal: Some(15),
        },
    })
    .unwrap();
    w.flush().unwrap();

    let loaded = load(&path).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(loaded.header.command_line, "server --flag");
    assert_eq!(loaded.events.len(), 6);
    for (a, b) in written.iter().zip(&loaded.events) {
        assert_eq!(a, b);
    }
    let Event::Frame(resp) = &loaded.events[2] else {
        panic!()
    };
    assert_eq!(resp.link.as_ref().unwrap().latency, Duration::from_millis(20));
    assert!(resp.anomalies().contains(Anomalies::CRLF));
    let Event::Frame(log) = &loaded.events[1] else { panic!() };
    assert_eq!(log.raw, b"Server started \xff");
    assert_eq!(log.kind(), Kind::NotJson);
    let Event::Stderr(s) = &loaded.events[4] else { panic!() };
    assert_eq!(s.raw, b"log: \"quoted\"");
    assert!(matches!(
        loaded.events[5],
        Event::Exited {
            status: ExitInfo { signal: Some(15), .. },
            ..
        }
    ));
}

#[test]
fn auth_exchanges_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.jsonl");
    let mut w = Writer::open(&path, &Header::default()).unwrap();
    let jwt = crate::protocol::auth::jwt::DecodedJwt {
        field: "access_token".into(),
        header: json!({"alg": "RS256"}),
        claims: json!({"sub": "u", "exp": 5}),
        signature_len: 256,
        notes: vec!["signature not verified".into()],
    };
    let events = vec![
        Event::Auth(Box::new(AuthExchange {
            at: Duration::from_millis(3),
            method: "POST".into(),
            url: "http://as/token".into(),
            status: Some(200),
            sent: vec![("Authorization".into(), "Basic ****".into())],
            request_body: Some(json!({"grant_type": "authorization_code", "code": "****"})),
            received: vec![("content-type".into(), "application/json".into())],
            response_body: Some(json!({"access_token": "****", "token_type": "Bearer"})),
            jwts: vec![jwt],
            elapsed: Duration::from_micros(1500),
            notes: vec!["Bearer token issued".into()],
            ..AuthExchange::new(Step::Token, "exchange the code for a token")
        })),
        Event::Auth(Box::new(AuthExchange {
            at: Duration::from_millis(4),
            error: Some("the token request was refused (HTTP 400): invalid_grant".into()),
            ..AuthExchange::new(Step::Failed, "")
        })),
    ];
    for e in &events {
        w.write(e).unwrap();
    }
    w.flush().unwrap();
    let loaded = load(&path).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(loaded.events, events);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains("\"event\":\"auth\"") && text.contains("\"step\":\"token\""),
        "{text}"
    );
}

#[test]
fn truncated_last_line_is_a_warning_not_a_failure() {
    let text = format!(
        "{}\n{}\n{}",
        json!({"format": FORMAT, "version": 1}),
        r#"{"t_us":5,"seq":0,"dir":"in","raw":"{}","eol":"lf"}"#,
        r#"{"t_us":9,"seq":1,"dir":"in","ra"#
    );
    let loaded = load_from(text.as_bytes()).unwrap();
    assert_eq!(loaded.events.len(), 1);
    assert_eq!(loaded.warnings.len(), 1);
    assert!(loaded.warnings[0].starts_with("line 3:"), "{:?}", loaded.warnings);
}

#[test]
fn not_a_capture_is_a_clear_error() {
    let e = load_from(&b"{\"hello\":1}\n"[..]).unwrap_err();
    assert!(
        e.to_string().contains("not an mcpscope capture") && e.to_string().contains("not a capture header"),
        "{e}"
    );
    let e = load_from(&b""[..]).unwrap_err();
    assert!(e.to_string().contains("empty"), "{e}");
    // Random bytes are not "empty": they are not a capture.
    let noise: Vec<u8> = (0u32..100_000)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let e = load_from(&noise[..]).unwrap_err().to_string();
    assert!(e.contains("not an mcpscope capture") && e.contains("binary"), "{e}");
    let e = load_from(&b"hello world\n"[..]).unwrap_err().to_string();
    assert!(e.contains("line 1 is not JSON"), "{e}");
}

#[cfg(unix)]
fn frame(rec: &mut Recorder, d: Direction, text: &str, ms: u64) -> Event {
    let line = RawLine {
        bytes: text.as_bytes().to_vec(),
        ending: LineEnding::Lf,
    };
    Event::Frame(rec.frame_at(d, line, Duration::from_millis(ms), None))
}

#[test]
#[cfg(unix)] // checks the file's mode
fn a_second_session_is_appended_after_a_boundary_and_loaded_apart() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    for (n, server) in ["first", "second"].iter().enumerate() {
        let mut header = Header::for_spec(&ServerSpec::new(*server, Vec::<String>::new()), "proxy");
        header.started_unix_ms = 1_000_000 + n as u64 * 5;
        let mut rec = Recorder::new(Limits::default(), Instant::now());
        let mut w = Writer::open(&path, &header).unwrap();
        w.write(&frame(
            &mut rec,
            Direction::Out,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            1,
        ))
        .unwrap();
        w.write(&frame(
            &mut rec,
            Direction::In,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            30,
        ))
        .unwrap();
        w.flush().unwrap();
    }
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let loaded = load(&path).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(loaded.sessions.len(), 2);
    assert_eq!(loaded.sessions[0].header.command_line, "first");
    assert_eq!(loaded.sessions[1].header.command_line, "second");
    assert_eq!(loaded.session_events(0).len(), 2);
    let second = loaded.session_events(1);
    assert_eq!(second.len(), 3);
    let Event::Note { text, .. } = &second[0] else {
        panic!("{second:?}")
    };
    assert!(text.contains("session 2") && text.contains("second"), "{text}");
    // Ids are matched within each session: the reused id 1 is no anomaly.
    for ev in &loaded.events {
        if let Event::Frame(f) = ev {
            assert!(f.anomalies().is_empty(), "{f:?}");
        }
    }
    let Event::Frame(answer) = &second[2] else { panic!() };
    assert_eq!(answer.link.as_ref().unwrap().latency, Duration::from_millis(29));
    // Times go on from one session to the next.
    let times: Vec<Duration> = loaded.events.iter().map(Event::at).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
}

#[test]
fn an_overlong_record_is_skipped_without_holding_it() {
    let long = format!(r#"{{"t_us":1,"dir":"in","raw":"{}","eol":"lf"}}"#, "x".repeat(500));
    let text = format!(
        "{}\n{long}\n{}\n",
        json!({"format": FORMAT, "version": 1}),
        r#"{"t_us":2,"seq":1,"dir":"in","raw":"{}","eol":"lf"}"#
    );
    let loaded = load_with_limit(text.as_bytes(), 200).unwrap();
    assert_eq!(loaded.events.len(), 1);
    assert!(
        loaded.warnings[0].contains("line 2: longer than 200 bytes"),
        "{:?}",
        loaded.warnings
    );
}

#[test]
#[cfg(unix)] // /dev/full
fn a_capture_that_cannot_be_written_says_so() {
    let e = crate::text::error_chain(&check_writable(Path::new("/nonexistent/x.jsonl")).unwrap_err());
    assert!(e.contains("/nonexistent/x.jsonl"), "{e}");
    let e = crate::text::error_chain(&Writer::open(Path::new("/dev/full"), &Header::default()).err().unwrap());
    assert!(e.contains("No space left"), "{e}");
}

#[test]
fn a_follower_waits_for_a_line_being_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.jsonl");
    let header = json!({"format": FORMAT, "version": 1}).to_string();
    let first = r#"{"t_us":5,"seq":0,"dir":"in","raw":"{}","eol":"lf"}"#;
    let second =
        r#"{"t_us":9,"seq":1,"dir":"out","raw":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}","eol":"lf"}"#;
    let (head, tail) = second.split_at(20);
    std::fs::write(&path, format!("{header}\n{first}\n{head}")).unwrap();
    let mut r = EventReader::new(BufReader::new(File::open(&path).unwrap())).unwrap();
    r.following(true);
    assert!(matches!(r.next_item().unwrap(), Some(Item::Event(Event::Frame(_)))));
    assert!(r.next_item().unwrap().is_none(), "half a line is not read yet");
    let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(format!("{tail}\n").as_bytes()).unwrap();
    let Some(Item::Event(Event::Frame(ping))) = r.next_item().unwrap() else {
        panic!("the finished line is read")
    };
    assert_eq!(ping.class.method.as_deref(), Some("ping"));
    assert_eq!(r.offset(), std::fs::metadata(&path).unwrap().len());
    // Not following: a line cut short is read (and reported) for what it is.
    f.write_all(b"{\"t_us\":12,\"se").unwrap();
    assert!(r.next_item().unwrap().is_none());
    r.following(false);
    assert!(matches!(r.next_item().unwrap(), Some(Item::Warning(w)) if w.starts_with("line 4:")));
}

#[test]
fn records_with_odd_fields_take_the_general_path() {
    let text = format!(
        "{}\n{}\n{}\n{}\n",
        json!({"format": FORMAT, "version": 1}),
        r#"{"t_us":"5","dir":"in","raw":"{}"}"#,
        r#"{"t_us":6,"seq":0,"dir":"in","raw_b64":"e30=","eol":"crlf"}"#,
        r#"{"t_us":7,"dir":"sideways","raw":"{}"}"#,
    );
    let loaded = load_from(text.as_bytes()).unwrap();
    assert_eq!(loaded.warnings.len(), 2, "{:?}", loaded.warnings);
    assert!(loaded.warnings[0].contains("numeric t_us"), "{:?}", loaded.warnings);
    assert!(loaded.warnings[1].contains("unknown dir"), "{:?}", loaded.warnings);
    let Event::Frame(f) = &loaded.events[0] else { panic!() };
    assert_eq!((f.raw.as_slice(), f.ending), (&b"{}"[..], LineEnding::CrLf));
}
