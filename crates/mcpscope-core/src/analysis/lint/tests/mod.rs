//! Unit tests of the rules, one session each: the session builder, and the
//! rules of framing, messages, exchanges and the lifecycle (the tools' rules
//! and the proxy's touches in their own files).

use super::*;
use crate::transport::process::ExitInfo;
use crate::transport::recorder::Recorder;
use crate::wire::classify::Limits;
use crate::wire::correlation::TimedOut;
use crate::wire::framing::{LineEnding, RawLine};
use crate::wire::message::RequestId;
use std::collections::HashSet;

mod proxy;
mod tools;

/// Builds a session the way the session thread and capture loading do.
struct S {
    rec: Recorder,
    events: Vec<Event>,
    ms: u64,
}

impl S {
    fn new() -> Self {
        Self {
            rec: Recorder::replay(Limits::default()),
            events: Vec::new(),
            ms: 0,
        }
    }

    fn at(&mut self, ms: u64) -> &mut Self {
        self.ms = ms;
        self
    }

    fn line(&mut self, d: Direction, bytes: &[u8], ending: LineEnding) -> &mut Self {
        let f = self.rec.frame_at(
            d,
            RawLine {
                bytes: bytes.to_vec(),
                ending,
            },
            Duration::from_millis(self.ms),
            None,
        );
        self.events.push(Event::Frame(f));
        self.ms += 1;
        self
    }

    fn out(&mut self, s: &str) -> &mut Self {
        self.line(Direction::Out, s.as_bytes(), LineEnding::Lf)
    }

    fn inn(&mut self, s: &str) -> &mut Self {
        self.line(Direction::In, s.as_bytes(), LineEnding::Lf)
    }

    fn stderr(&mut self, s: &str) -> &mut Self {
        let l = self.rec.stderr_at(
            RawLine {
                bytes: s.as_bytes().to_vec(),
                ending: LineEnding::Lf,
            },
            Duration::from_millis(self.ms),
        );
        self.events.push(Event::Stderr(l));
        self
    }

    fn event(&mut self, e: Event) -> &mut Self {
        self.events.push(e);
        self
    }

    /// initialize offered 2025-11-25 with these client capabilities,
    /// answered with these server capabilities, then initialized.
    fn handshake(&mut self, client_caps: &str, server_caps: &str) -> &mut Self {
        self.out(&format!(
            r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{client_caps},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
        ))
        .inn(&format!(
            r#"{{"jsonrpc":"2.0","id":0,"result":{{"protocolVersion":"2025-11-25","capabilities":{server_caps},"serverInfo":{{"name":"s","version":"1"}}}}}}"#
        ))
        .out(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
    }

    fn lint(&self) -> Vec<Finding> {
        lint(&self.events, &LintOptions::default())
    }

    fn rules(&self) -> Vec<&'static str> {
        self.lint().iter().map(|f| f.rule).collect()
    }

    fn find(&self, rule: &str) -> Finding {
        let all = self.lint();
        all.iter()
            .find(|f| f.rule == rule)
            .cloned()
            .unwrap_or_else(|| panic!("no {rule} finding in {all:#?}"))
    }
}

fn clean() -> S {
    let mut s = S::new();
    s.handshake(r#"{"roots":{"listChanged":true}}"#, r#"{"tools":{"listChanged":true}}"#);
    s
}

const TOOLS_LIST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;

/// What models and their providers trip over: no description, one over
/// its budget, a name they refuse, names that become one, a schema with
/// alternatives at its top.
#[test]
fn tools_models_trip_over_are_said() {
    let mut s = clean();
    let long = "x".repeat(2000);
    s.out(TOOLS_LIST).inn(&format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":[
            {{"name":"files.read","description":"Reads a file.","inputSchema":{{"type":"object"}}}},
            {{"name":"files_read","description":"{long}","inputSchema":{{"type":"object"}}}},
            {{"name":"pick","inputSchema":{{"type":"object","oneOf":[{{"required":["a"]}},{{"required":["b"]}}]}}}}
        ]}}}}"#
    ));
    let rules = s.rules();
    for rule in [
        "tool-description-missing",
        "tool-description-long",
        "provider-tool-name",
        "provider-tool-name-clash",
        "provider-schema",
    ] {
        assert!(rules.contains(&rule), "{rule} in {rules:?}");
    }
    assert!(
        s.find("provider-tool-name-clash")
            .message
            .contains(r#""files.read", "files_read""#)
    );
    assert!(s.find("provider-tool-name").message.contains(r#""files.read""#));
    assert!(s.find("provider-schema").message.contains("oneOf"));
    assert!(s.find("tool-description-missing").message.contains(r#""pick""#));
}

#[test]
fn clean_session_has_no_findings() {
    let mut s = clean();
    s.out(TOOLS_LIST)
        .inn(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"echo","description":"Echoes the message back.","inputSchema":{"type":"object","properties":{"message":{"type":"string"}}},"outputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"echo":{"type":"string"}},"required":["echo"]}}]}}"#)
        .out(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}"#)
        .inn(r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hi"}],"structuredContent":{"echo":"hi"}}}"#)
        .inn(r#"{"jsonrpc":"2.0","id":"s1","method":"roots/list"}"#)
        .out(r#"{"jsonrpc":"2.0","id":"s1","result":{"roots":[]}}"#)
        .inn(r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#)
        .stderr("Server running on stdio")
        .event(Event::Note {
            at: Duration::from_millis(50),
            text: "closed the server's stdin".into(),
        })
        .event(Event::Exited {
            at: Duration::from_millis(60),
            status: ExitInfo {
                code: Some(0),
                signal: None,
            },
        });
    assert_eq!(s.lint(), vec![]);
}

#[test]
fn every_rule_id_is_unique_and_kebab_case() {
    let mut seen = HashSet::new();
    for r in RULES {
        assert!(seen.insert(r.id), "duplicate {}", r.id);
        assert!(
            r.id.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
            "{}",
            r.id
        );
        assert!(!r.summary.is_empty());
    }
}

#[test]
fn finding_line_and_json() {
    let f = Finding::new(rule::NOT_JSON, Severity::Error, vec![3, 4], "boom");
    assert_eq!(f.line(), "error  [not-json] seq 3,4: boom");
    let w = Finding::new(rule::CRLF, Severity::Warning, vec![], "x");
    assert_eq!(w.line(), "warning [crlf]: x");
    assert_eq!(
        f.to_json(),
        json!({"rule":"not-json","severity":"error","seqs":[3,4],"message":"boom"})
    );
    assert!(has_errors(&[w.clone(), f]));
    assert!(!has_errors(&[w]));
}

#[test]
fn spawn_failed() {
    let mut s = S::new();
    s.event(Event::SpawnFailed {
        at: Duration::ZERO,
        error: crate::transport::process::SpawnError {
            program: "nope".into(),
            resolved: None,
            message: "not found in PATH".into(),
        },
    });
    let f = s.find(rule::SPAWN_FAILED);
    assert!(f.message.contains("not found in PATH"), "{}", f.message);
}

#[test]
fn log_line_on_stdout_is_quoted_and_points_to_stderr() {
    let mut s = clean();
    s.inn("Server started on stdio");
    let f = s.find(rule::NOT_JSON);
    assert_eq!(f.severity, Severity::Error);
    assert_eq!(f.seqs, [3]);
    assert!(f.message.contains("\"Server started on stdio\""), "{}", f.message);
    assert!(f.message.contains("stderr"), "{}", f.message);
}

#[test]
fn blank_line_and_not_jsonrpc() {
    let mut s = clean();
    s.inn("").inn(r#"{"hello":"world"}"#);
    let rules = s.rules();
    assert!(rules.contains(&rule::BLANK_LINE), "{rules:?}");
    assert!(rules.contains(&rule::NOT_JSONRPC), "{rules:?}");
    assert!(!rules.contains(&rule::NOT_JSON), "{rules:?}");
    // The object has no jsonrpc member, but that is not the point here.
    assert!(!rules.contains(&rule::MISSING_JSONRPC), "{rules:?}");
}

#[test]
fn invalid_utf8() {
    let mut s = clean();
    s.line(
        Direction::In,
        b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"\xff\"}}",
        LineEnding::Lf,
    );
    assert_eq!(s.find(rule::INVALID_UTF8).severity, Severity::Error);
}

#[test]
fn raw_newline_splitting_a_message() {
    let mut s = clean();
    // A newline inside a string: the pieces join without it.
    s.inn(r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"line one"#)
        .inn(r#"line two"}}"#);
    // Pretty-printed: the pieces join with it.
    s.inn("{")
        .inn(r#"  "jsonrpc": "2.0","#)
        .inn(r#"  "method": "notifications/message""#)
        .inn("}");
    let all = s.lint();
    let splits: Vec<_> = all.iter().filter(|f| f.rule == rule::SPLIT_MESSAGE).collect();
    assert_eq!(splits.len(), 2, "{all:#?}");
    assert_eq!(splits[0].seqs, [3, 4]);
    assert_eq!(splits[1].seqs, [5, 6, 7, 8]);
    assert!(!all.iter().any(|f| f.rule == rule::NOT_JSON), "{all:#?}");
}

#[test]
fn a_log_line_starting_with_a_brace_is_not_a_split_message() {
    let mut s = clean();
    s.inn("{not json").inn("[INFO] ready");
    let rules = s.rules();
    assert_eq!(rules, [rule::NOT_JSON, rule::NOT_JSON]);
}

#[test]
fn batch_is_allowed_only_in_2025_03_26() {
    let batch = r#"[{"jsonrpc":"2.0","id":5,"method":"ping"},{"jsonrpc":"2.0","id":6,"method":"ping"}]"#;
    let mut s = clean();
    s.out(batch);
    assert!(s.find(rule::BATCH_NOT_ALLOWED).message.contains("2025-11-25"));

    let mut old = S::new();
    old.out(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#)
        .inn(r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-03-26","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#)
        .out(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .out(batch);
    assert!(!old.rules().contains(&rule::BATCH_NOT_ALLOWED), "{:?}", old.rules());
    old.out(r#"[{"jsonrpc":"2.0","id":9,"method":"initialize","params":{}}]"#);
    assert!(old.find(rule::BATCH_NOT_ALLOWED).message.contains("initialize"));
}

#[test]
fn crlf_bom_and_partial_line() {
    let mut s = clean();
    s.line(
        Direction::In,
        br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":1}}"#,
        LineEnding::CrLf,
    )
    .line(
        Direction::In,
        b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":2}}",
        LineEnding::Lf,
    )
    .line(Direction::In, br#"{"jsonrpc":"2.0","id":1,"res"#, LineEnding::Eof);
    assert_eq!(s.find(rule::CRLF).severity, Severity::Warning);
    assert_eq!(s.find(rule::BOM).severity, Severity::Warning);
    let p = s.find(rule::PARTIAL_AT_EOF);
    assert_eq!(p.severity, Severity::Error);
    assert!(!s.rules().contains(&rule::NOT_JSON));

    // A complete message that only lacks its newline is a lesser problem.
    let mut s = clean();
    s.line(
        Direction::In,
        br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":1}}"#,
        LineEnding::Eof,
    );
    assert_eq!(s.find(rule::PARTIAL_AT_EOF).severity, Severity::Warning);
}

#[test]
fn jsonrpc_member_missing_or_wrong() {
    let mut s = clean();
    s.inn(r#"{"method":"notifications/message","params":{"level":"info","data":1}}"#)
        .inn(r#"{"jsonrpc":"1.0","method":"notifications/message","params":{"level":"info","data":1}}"#);
    assert_eq!(s.find(rule::MISSING_JSONRPC).seqs, [3]);
    let w = s.find(rule::WRONG_JSONRPC);
    assert_eq!(w.seqs, [4]);
    assert!(w.message.contains("\"1.0\""), "{}", w.message);
}

#[test]
fn result_and_error_both_or_neither() {
    let mut s = clean();
    s.out(TOOLS_LIST)
        .inn(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]},"error":{"code":-1,"message":"x"}}"#)
        .out(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#)
        .inn(r#"{"jsonrpc":"2.0","id":2}"#);
    assert_eq!(s.find(rule::RESULT_AND_ERROR).seqs, [4]);
    assert_eq!(s.find(rule::NEITHER_RESULT_NOR_ERROR).seqs, [6]);
}

#[test]
fn response_without_id() {
    let mut s = clean();
    s.inn(r#"{"jsonrpc":"2.0","result":{}}"#);
    assert_eq!(s.find(rule::RESPONSE_WITHOUT_ID).severity, Severity::Error);
}

#[test]
fn notification_with_id_and_null_ids() {
    let mut s = clean();
    s.inn(r#"{"jsonrpc":"2.0","id":7,"method":"notifications/message","params":{"level":"info","data":1}}"#)
        .out(r#"{"jsonrpc":"2.0","id":null,"method":"tools/list"}"#)
        .inn(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#);
    assert_eq!(s.find(rule::NOTIFICATION_WITH_ID).seqs, [3]);
    let nulls: Vec<_> = s.lint().into_iter().filter(|f| f.rule == rule::NULL_ID).collect();
    assert_eq!(nulls.len(), 2, "{nulls:#?}");
    assert_eq!((nulls[0].seqs[0], nulls[0].severity), (4, Severity::Error));
    // JSON-RPC allows a null id on an error when the request id was unreadable.
    assert_eq!((nulls[1].seqs[0], nulls[1].severity), (5, Severity::Warning));
    // The null-id request is not also reported as a notification with an id.
    assert_eq!(
        s.lint().iter().filter(|f| f.rule == rule::NOTIFICATION_WITH_ID).count(),
        1
    );
}

#[test]
fn invalid_id_params_result_error_shapes() {
    let mut s = clean();
    s.out(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#)
        .out(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":[1]}"#)
        .inn(r#"{"jsonrpc":"2.0","id":2,"result":5}"#)
        .out(r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#)
        .inn(r#"{"jsonrpc":"2.0","id":3,"error":{"message":"no code"}}"#)
        .out(r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x"}}"#)
        .inn(r#"{"jsonrpc":"2.0","id":4,"result":{"content":[],"isError":"yes"}}"#);
    assert_eq!(s.find(rule::INVALID_ID).seqs, [3]);
    assert_eq!(s.find(rule::PARAMS_NOT_OBJECT).seqs, [4]);
    assert_eq!(s.find(rule::RESULT_NOT_OBJECT).seqs, [5]);
    assert_eq!(s.find(rule::MALFORMED_ERROR).seqs, [7]);
    assert_eq!(s.find(rule::IS_ERROR_NOT_BOOL).seqs, [9]);
}

#[test]
fn duplicate_ids_unknown_and_duplicate_responses() {
    let mut s = clean();
    s.out(TOOLS_LIST)
        .inn(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#)
        .inn(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#)
        .out(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
        .inn(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#)
        .inn(r#"{"jsonrpc":"2.0","id":99,"result":{}}"#);
    assert_eq!(s.find(rule::DUPLICATE_RESPONSE).seqs, [3, 4, 5]);
    assert_eq!(s.find(rule::DUPLICATE_REQUEST_ID).seqs, [3, 6]);
    assert_eq!(s.find(rule::UNKNOWN_RESPONSE_ID).seqs, [8]);
}

#[test]
fn unanswered_request_with_time_waited_to_the_last_event() {
    let mut s = clean();
    s.at(100).out(TOOLS_LIST).at(2600).stderr("still thinking");
    let f = s.find(rule::UNANSWERED_REQUEST);
    assert_eq!(f.seqs, [3]);
    assert!(f.message.contains("tools/list #1"), "{}", f.message);
    assert!(f.message.contains("2.5 s"), "{}", f.message);
}

#[test]
fn cancelled_requests_are_not_unanswered_but_timed_out_ones_are() {
    let mut s = clean();
    s.out(TOOLS_LIST)
        .event(Event::Cancelled {
            at: Duration::from_millis(5),
            id: RequestId::Number(1),
        })
        .out(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow"}}"#)
        .out(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}"#);
    assert!(!s.rules().contains(&rule::UNANSWERED_REQUEST), "{:?}", s.rules());

    let mut s = clean();
    s.out(TOOLS_LIST).event(Event::TimedOut {
        at: Duration::from_secs(10),
        timed_out: TimedOut {
            id: RequestId::Number(1),
            request_seq: 3,
            method: "tools/list".into(),
            waited: Duration::from_secs(10),
        },
    });
    s.event(Event::Cancelled {
        at: Duration::from_secs(10),
        id: RequestId::Number(1),
    });
    let f = s.find(rule::UNANSWERED_REQUEST);
    assert!(f.message.contains("timed out"), "{}", f.message);
}

/// #25 item 2: a request that timed out is a finding while the session
/// still runs (the Expert panel said "no findings" until it ended).
#[test]
fn a_timed_out_request_is_a_finding_before_the_session_ends() {
    let mut linter = Linter::new(LintOptions::default());
    let mut r = crate::timeline::replay::Replay::new();
    r.out(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#);
    for f in r.frames() {
        linter.push(&Event::Frame(f.clone()));
    }
    assert!(linter.provisional(false).is_empty(), "in flight is not missing");
    linter.push(&Event::TimedOut {
        at: Duration::from_secs(30),
        timed_out: TimedOut {
            id: RequestId::Number(1),
            request_seq: r.frames()[0].seq,
            method: "initialize".into(),
            waited: Duration::from_secs(30),
        },
    });
    let live = linter.provisional(false);
    let f = live
        .iter()
        .find(|f| f.rule == rule::UNANSWERED_REQUEST)
        .expect("a finding while live");
    assert!(f.message.contains("timed out after"), "{}", f.message);
}

#[test]
fn unanswered_server_request() {
    let mut s = S::new();
    s.handshake(r#"{"roots":{}}"#, "{}");
    s.inn(r#"{"jsonrpc":"2.0","id":"r1","method":"roots/list"}"#);
    let f = s.find(rule::UNANSWERED_REQUEST);
    assert!(f.message.contains("from the client"), "{}", f.message);
}

#[test]
fn requests_before_initialize() {
    let mut s = S::new();
    s.out(r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#)
        .out(TOOLS_LIST)
        .inn(r#"{"jsonrpc":"2.0","id":5,"result":{}}"#)
        .inn(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#);
    let f = s.find(rule::REQUEST_BEFORE_INITIALIZE);
    assert_eq!(f.seqs, [1], "ping is allowed");
    assert!(f.message.contains("without initialize"), "{}", f.message);

    let mut s = S::new();
    s.out(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#)
        .out(TOOLS_LIST);
    assert!(
        s.find(rule::REQUEST_BEFORE_INITIALIZE)
            .message
            .contains("before initialize was answered")
    );
}

#[test]
fn modern_sessions_have_no_handshake_to_check() {
    let mut s = S::new();
    s.out(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#)
        .inn(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[],"resultType":"complete","ttlMs":0,"cacheScope":"private"}}"#);
    assert_eq!(s.lint(), vec![]);
}

#[test]
fn modern_results_carry_result_type_and_cache_fields() {
    let mut s = S::new();
    s.out(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#)
        .inn(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[],"resultType":"complete"}}"#)
        .out(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#)
        .inn(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[],"resultType":"weird","ttlMs":0,"cacheScope":"public"}}"#);
    assert_eq!(s.find(rule::CACHE_FIELDS_MISSING).seqs, [1]);
    assert_eq!(s.find(rule::RESULT_TYPE_MISSING).seqs, [3]);
    // An id reused after its request was answered is fine in 2026-07-28.
    assert!(!s.rules().contains(&rule::DUPLICATE_REQUEST_ID));
}

#[test]
fn initialized_missing_or_early() {
    let mut s = S::new();
    s.out(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#)
        .inn(r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#);
    assert_eq!(s.find(rule::INITIALIZED_NOT_SENT).seqs, [1]);

    let mut s = S::new();
    s.out(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#)
        .out(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .inn(r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#);
    assert_eq!(s.find(rule::INITIALIZED_BEFORE_RESPONSE).seqs, [1]);
    assert!(!s.rules().contains(&rule::INITIALIZED_NOT_SENT));
}

#[test]
fn server_requests_before_initialized() {
    let mut s = S::new();
    s.out(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"t","version":"1"}}}"#)
        .inn(r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#)
        .inn(r#"{"jsonrpc":"2.0","id":"s","method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}"#)
        .inn(r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#)
        .out(r#"{"jsonrpc":"2.0","id":"p","result":{}}"#)
        .out(r#"{"jsonrpc":"2.0","id":"s","error":{"code":-32603,"message":"no"}}"#)
        .out(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    assert_eq!(s.find(rule::SERVER_REQUEST_BEFORE_INITIALIZED).seqs, [2]);
}

#[test]
fn unsupported_version_and_continuing_anyway() {
    let mut s = S::new();
    s.out(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#)
        .inn(r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"1999-01-01","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#)
        .out(TOOLS_LIST)
        .inn(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#);
    let f = s.find(rule::UNSUPPORTED_VERSION);
    assert_eq!(f.seqs, [0, 1]);
    assert!(f.message.contains("1999-01-01"), "{}", f.message);
    assert_eq!(s.find(rule::CONTINUED_AFTER_UNSUPPORTED_VERSION).seqs, [2]);
    assert!(
        !s.rules().contains(&rule::INITIALIZED_NOT_SENT),
        "not owed for an unusable answer"
    );

    // A supported counter-offer is fine.
    let mut s = S::new();
    s.out(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2099-01-01","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#)
        .inn(r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2024-11-05","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#)
        .out(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    assert_eq!(s.lint(), vec![]);
}

#[test]
fn incomplete_initialize_result() {
    let mut s = S::new();
    s.out(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}"#,
    )
    .inn(r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25"}}"#)
    .out(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let f = s.find(rule::INITIALIZE_RESULT_INCOMPLETE);
    assert!(f.message.contains("capabilities, serverInfo"), "{}", f.message);
}

#[test]
fn capability_not_advertised_in_both_directions() {
    let mut s = S::new();
    s.handshake("{}", r#"{"resources":{}}"#);
    s.out(TOOLS_LIST)
        .inn(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}"#)
        .out(r#"{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"x:/a"}}"#)
        .inn(r#"{"jsonrpc":"2.0","id":2,"result":{}}"#)
        .out(r#"{"jsonrpc":"2.0","id":3,"method":"resources/list"}"#)
        .inn(r#"{"jsonrpc":"2.0","id":3,"result":{"resources":[]}}"#)
        .inn(r#"{"jsonrpc":"2.0","id":"x","method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}"#)
        .out(r#"{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"no"}}"#);
    let caps: Vec<_> = s
        .lint()
        .into_iter()
        .filter(|f| f.rule == rule::CAPABILITY_NOT_ADVERTISED)
        .collect();
    assert_eq!(caps.len(), 3, "{caps:#?}");
    assert!(caps[0].message.contains("`tools`"), "{}", caps[0].message);
    assert!(caps[1].message.contains("`resources.subscribe`"), "{}", caps[1].message);
    assert_eq!(caps[2].severity, Severity::Error);
    assert!(caps[2].message.contains("`sampling`"), "{}", caps[2].message);
}

#[test]
fn list_changed_without_the_flag() {
    let mut s = S::new();
    s.handshake(r#"{"roots":{}}"#, r#"{"tools":{},"prompts":{"listChanged":true}}"#);
    s.inn(r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#)
        .inn(r#"{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}"#)
        .out(r#"{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}"#);
    let found: Vec<_> = s
        .lint()
        .into_iter()
        .filter(|f| f.rule == rule::LIST_CHANGED_NOT_ADVERTISED)
        .collect();
    assert_eq!(found.len(), 2, "{found:#?}");
    assert_eq!(found[0].seqs, [3]);
    assert_eq!(found[1].seqs, [5]);
}

#[test]
fn stderr_tracebacks_are_one_finding_per_block() {
    let mut s = clean();
    s.stderr("Traceback (most recent call last):")
        .stderr("  File \"server.py\", line 3, in <module>")
        .stderr("ValueError: boom")
        .inn(r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":1}}"#)
        .stderr("thread 'main' panicked at src/main.rs:2:5")
        .stderr("INFO all good");
    let found: Vec<_> = s.lint().into_iter().filter(|f| f.rule == rule::STDERR_ERROR).collect();
    assert_eq!(found.len(), 2, "{found:#?}");
    assert_eq!(found[0].seqs, [3, 5]);
    assert!(found[0].message.contains("ValueError: boom"), "{}", found[0].message);
    assert_eq!(found[1].seqs, [7]);
}

#[test]
fn slow_responses_over_the_threshold() {
    let mut s = clean();
    s.at(1000)
        .out(TOOLS_LIST)
        .at(7500)
        .inn(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#);
    let f = s.find(rule::SLOW_RESPONSE);
    assert_eq!(f.seqs, [3, 4]);
    assert!(f.message.contains("6.5 s"), "{}", f.message);
    let quick = lint(
        &s.events,
        &LintOptions {
            slow_response: Duration::from_secs(10),
            ..LintOptions::default()
        },
    );
    assert!(!quick.iter().any(|f| f.rule == rule::SLOW_RESPONSE));
}

#[test]
fn time_the_client_spends_answering_the_server_is_not_server_latency() {
    // A tool asks the user (elicitation) halfway; the user takes 20 s.
    let mut s = clean();
    s.at(1000)
        .out(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"confirm","arguments":{}}}"#)
        .at(2000)
        .inn(r#"{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"message":"Sure?","requestedSchema":{"type":"object"}}}"#)
        .at(22_000)
        .out(r#"{"jsonrpc":"2.0","id":"e1","result":{"action":"accept","content":{}}}"#)
        .at(23_000)
        .inn(r#"{"jsonrpc":"2.0","id":5,"result":{"content":[]}}"#);
    assert!(
        !s.rules().contains(&rule::SLOW_RESPONSE),
        "2 s of the server's own time: {:#?}",
        s.lint()
    );
    // The server's own time over the threshold is still reported, without the user's.
    s.at(40_000)
        .out(r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"confirm","arguments":{}}}"#)
        .at(41_000)
        .inn(r#"{"jsonrpc":"2.0","id":"e2","method":"elicitation/create","params":{"message":"Sure?","requestedSchema":{"type":"object"}}}"#)
        .at(51_000)
        .out(r#"{"jsonrpc":"2.0","id":"e2","result":{"action":"accept","content":{}}}"#)
        .at(58_000)
        .inn(r#"{"jsonrpc":"2.0","id":6,"result":{"content":[]}}"#);
    let f = s.find(rule::SLOW_RESPONSE);
    assert!(f.message.contains("took 8.0 s"), "{}", f.message);
    assert!(f.message.contains("another 10.0 s went to the client"), "{}", f.message);
}

#[test]
fn a_slow_request_reporting_progress_is_not_slow() {
    let mut s = clean();
    s.at(1000)
        .out(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"trigger-long-running-operation","arguments":{"duration":10,"steps":5},"_meta":{"progressToken":"tok-7"}}}"#);
    for i in 1..=5 {
        s.at(1000 + i * 2000).inn(&format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":"tok-7","progress":{i},"total":5}}}}"#
        ));
    }
    s.at(11_500).inn(r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#);
    assert!(!s.rules().contains(&rule::SLOW_RESPONSE), "{:#?}", s.lint());
    // Progress for another token does not excuse it.
    s.at(20_000)
        .out(r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"slow","arguments":{},"_meta":{"progressToken":8}}}"#)
        .at(21_000)
        .inn(r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"8","progress":1}}"#)
        .at(27_000)
        .inn(r#"{"jsonrpc":"2.0","id":8,"result":{"content":[]}}"#);
    assert_eq!(s.find(rule::SLOW_RESPONSE).seqs.len(), 2);
}

#[test]
fn a_request_in_flight_is_not_missing_while_the_session_goes_on() {
    let mut s = clean();
    s.at(100).out(TOOLS_LIST).at(2600).stderr("still thinking");
    let mut linter = Linter::new(LintOptions::default());
    for e in &s.events {
        linter.push(e);
    }
    let live: Vec<Finding> = linter
        .take_settled()
        .into_iter()
        .chain(linter.provisional(false))
        .collect();
    assert!(!live.iter().any(|f| f.rule == rule::UNANSWERED_REQUEST), "{live:#?}");
    let over = linter.provisional(true);
    assert!(over.iter().any(|f| f.rule == rule::UNANSWERED_REQUEST), "{over:#?}");
}

#[test]
fn streaming_in_pieces_finds_what_one_pass_finds() {
    // Findings that depend on later lines (the handshake, a message split
    // over lines, the era) come out the same whichever way the events arrive.
    let mut s = S::new();
    s.out(TOOLS_LIST)
        .line(Direction::In, b"{\"jsonrpc\":\"2.0\",", LineEnding::Lf)
        .line(Direction::In, b"\"method\":\"notifications/message\"}", LineEnding::Lf)
        .handshake("{}", r#"{"tools":{}}"#)
        .out(r#"{"jsonrpc":"2.0","id":3,"method":"prompts/list"}"#)
        .inn(r#"[{"jsonrpc":"2.0","method":"notifications/message"}]"#)
        .stderr("Error: boom");
    let whole = s.lint();
    let mut linter = Linter::new(LintOptions::default());
    let mut settled = Vec::new();
    for e in &s.events {
        linter.push(e);
        // A live panel looks at every step; that must not change the outcome.
        let _ = linter.provisional(false);
        settled.extend(linter.take_settled());
    }
    settled.extend(linter.provisional(true));
    sort(&mut settled);
    assert_eq!(settled, whole);
    let rules: Vec<&str> = whole.iter().map(|f| f.rule).collect();
    for r in [
        rule::SPLIT_MESSAGE,
        rule::REQUEST_BEFORE_INITIALIZE,
        rule::CAPABILITY_NOT_ADVERTISED,
        rule::BATCH_NOT_ALLOWED,
        rule::STDERR_ERROR,
    ] {
        assert!(rules.contains(&r), "{r} missing from {rules:?}");
    }
}

#[test]
fn exit_during_a_pending_request() {
    let mut s = clean();
    s.out(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"crash"}}"#)
        .event(Event::Exited {
            at: Duration::from_millis(20),
            status: ExitInfo {
                code: Some(1),
                signal: None,
            },
        });
    let f = s.find(rule::EXITED_DURING_REQUEST);
    assert_eq!(f.seqs, [3]);
    assert!(f.message.contains("exited with code 1"), "{}", f.message);
    assert!(!s.rules().contains(&rule::UNANSWERED_REQUEST), "reported once");

    // An exit after we asked it to stop is not the server's fault.
    let mut s = clean();
    s.out(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}"#)
        .event(Event::Note {
            at: Duration::from_millis(20),
            text: "closed the server's stdin".into(),
        })
        .event(Event::Exited {
            at: Duration::from_millis(30),
            status: ExitInfo {
                code: Some(0),
                signal: None,
            },
        });
    assert!(!s.rules().contains(&rule::EXITED_DURING_REQUEST));
    assert!(s.rules().contains(&rule::UNANSWERED_REQUEST));
}

#[test]
fn findings_are_sorted_by_frame() {
    let mut s = clean();
    s.inn("log one").stderr("Error: x").inn("log two");
    let seqs: Vec<u64> = s.lint().iter().map(|f| f.seqs[0]).collect();
    assert_eq!(seqs, [3, 4, 5]);
}

/// After a 401, mcpscope authorizes and sends initialize again under a
/// new id: the answered one is the handshake, and nothing was early.
#[test]
fn an_initialize_sent_again_after_authorizing_is_the_handshake() {
    let mut s = S::new();
    s.out(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#)
        .out(r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#)
        .inn(r#"{"jsonrpc":"2.0","id":2,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}"#)
        .out(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .out(TOOLS_LIST.replace("\"id\":1", "\"id\":3").as_str())
        .inn(r#"{"jsonrpc":"2.0","id":3,"result":{"tools":[]}}"#);
    // (The first initialize's HTTP refusal is not in this frames-only
    // session, so it counts as unanswered here; a capture has it.)
    let rules = s.rules();
    for r in [
        rule::INITIALIZED_BEFORE_RESPONSE,
        rule::REQUEST_BEFORE_INITIALIZE,
        rule::INITIALIZED_NOT_SENT,
    ] {
        assert!(!rules.contains(&r), "{rules:?}");
    }
}
