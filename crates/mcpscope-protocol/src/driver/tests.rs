//! Scripted tests of the driver: inputs in, actions out; no process, no sleep.
//! Each test plays the server's side by hand, frame by frame.

use super::*;
use crate::protocol::era::EraChoice;
use crate::protocol::mrtr::ElicitAnswer;
use crate::wire::classify::Limits;
use crate::wire::framing::{LineEnding, RawLine};
use crate::wire::sequence::Sequence;

mod rounds;

/// A driver, with the wire's sequence framing what crosses it (so responses
/// link to their requests, as the recorder's do) and everything it did so far.
struct Script {
    d: Driver,
    wire: Sequence,
    t: Duration,
    sent: Vec<Value>,
    raw: Vec<Vec<u8>>,
    notes: Vec<String>,
    done: Vec<Completion>,
    settled: Vec<Result<EraDecision, EraFailure>>,
    asked: Vec<QuestionId>,
    statuses: Vec<Task>,
    listening: Vec<(RequestId, Value)>,
    cancels: Vec<RequestId>,
    resent: Vec<(RequestId, RequestId)>,
    /// The extra headers of each message sent.
    headers: Vec<Vec<(String, String)>>,
}

fn config(era: EraChoice) -> DriverConfig {
    DriverConfig {
        era,
        ..DriverConfig::default()
    }
}

impl Script {
    fn new(config: DriverConfig) -> Script {
        Script {
            d: Driver::new(config),
            wire: Sequence::new(Limits::default()),
            t: Duration::ZERO,
            sent: Vec::new(),
            raw: Vec::new(),
            notes: Vec::new(),
            done: Vec::new(),
            settled: Vec::new(),
            asked: Vec::new(),
            statuses: Vec::new(),
            listening: Vec::new(),
            cancels: Vec::new(),
            resent: Vec::new(),
            headers: Vec::new(),
        }
    }

    fn started(config: DriverConfig) -> Script {
        let mut s = Script::new(config);
        s.d.start();
        s.pump();
        s
    }

    fn line(bytes: Vec<u8>) -> RawLine {
        RawLine {
            bytes,
            ending: LineEnding::Lf,
        }
    }

    /// Performs the driver's actions the way an owner would.
    fn pump(&mut self) {
        while let Some(a) = self.d.poll_action() {
            match a {
                Action::Send {
                    message,
                    timeout,
                    headers,
                } => {
                    self.headers.push(headers);
                    let f = self
                        .wire
                        .frame(Direction::Out, Self::line(message.to_line()), self.t, timeout);
                    self.d.handle(Input::Frame(&f));
                    self.sent.push(message.to_json());
                }
                Action::SendRaw { line, timeout } => {
                    let f = self
                        .wire
                        .frame(Direction::Out, Self::line(line.clone()), self.t, timeout);
                    self.d.handle(Input::Frame(&f));
                    self.raw.push(line);
                }
                Action::Cancel { id, .. } => self.cancels.push(id),
                Action::Note(n) => self.notes.push(n),
                Action::Resent { old, new, .. } => self.resent.push((old, new)),
                Action::Asked(q) => self.asked.push(q),
                Action::Settled(s) => self.settled.push(s),
                Action::TaskStatus { task, .. } => self.statuses.push(task),
                Action::Listening { id, honoured } => self.listening.push((id, honoured)),
                Action::Done(c) => self.done.push(c),
            }
        }
    }

    /// The server sends this message.
    fn recv(&mut self, v: Value) {
        self.t += Duration::from_millis(1);
        let f = self
            .wire
            .frame(Direction::In, Self::line(v.to_string().into_bytes()), self.t, None);
        self.d.handle(Input::Frame(&f));
        self.pump();
    }

    fn tick(&mut self, ms: u64) {
        self.t += Duration::from_millis(ms);
        self.d.handle(Input::Tick(self.t));
        self.pump();
    }

    fn last(&self) -> &Value {
        self.sent.last().expect("something was sent")
    }

    fn last_request(&self) -> &Value {
        self.sent
            .iter()
            .rev()
            .find(|m| m.get("id").is_some() && m.get("method").is_some())
            .expect("a request")
    }

    fn methods(&self) -> Vec<&str> {
        self.sent.iter().filter_map(|m| m["method"].as_str()).collect()
    }

    fn count(&self, method: &str) -> usize {
        self.methods().iter().filter(|m| **m == method).count()
    }

    /// Answers the last request sent with a result.
    fn answer(&mut self, result: Value) {
        let id = self.last_request()["id"].clone();
        self.recv(json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    fn refuse(&mut self, code: i64, message: &str, data: Option<Value>) {
        let id = self.last_request()["id"].clone();
        let mut error = json!({"code": code, "message": message});
        if let Some(d) = data {
            error["data"] = d;
        }
        self.recv(json!({"jsonrpc": "2.0", "id": id, "error": error}));
    }

    fn init_result(version: &str) -> Value {
        json!({"protocolVersion": version, "capabilities": {"tools": {"listChanged": true}},
               "serverInfo": {"name": "srv", "version": "1"}})
    }

    fn discover_result() -> Value {
        json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
               "serverInfo": {"name": "modern", "version": "2"}, "resultType": "complete"})
    }

    /// A legacy session that finished its handshake.
    fn legacy() -> Script {
        let mut s = Script::started(config(EraChoice::Legacy));
        s.answer(Self::init_result("2025-11-25"));
        s
    }

    /// A modern session that settled.
    fn modern(mut config: DriverConfig) -> Script {
        config.era = EraChoice::Modern;
        let mut s = Script::started(config);
        s.answer(Self::discover_result());
        s
    }

    fn settled_ok(&self) -> &EraDecision {
        match self.settled.last() {
            Some(Ok(d)) => d,
            other => panic!("not settled: {other:?}"),
        }
    }

    fn settled_err(&self) -> &EraFailure {
        match self.settled.last() {
            Some(Err(e)) => e,
            other => panic!("did not fail: {other:?}"),
        }
    }
}

fn version_of(v: &Value) -> Option<&str> {
    v["params"]["_meta"][era::META_PROTOCOL_VERSION].as_str()
}

// ----------------------------------------------------------------- eras ---

#[test]
fn legacy_handshake_sends_initialized_after_a_usable_answer() {
    let mut s = Script::started(config(EraChoice::Legacy));
    assert_eq!(s.methods(), ["initialize"]);
    assert_eq!(s.last()["params"]["protocolVersion"], "2025-11-25");
    assert!(s.settled.is_empty());
    s.answer(Script::init_result("2025-11-25"));
    assert_eq!(s.methods(), ["initialize", "notifications/initialized"]);
    let d = s.settled_ok();
    assert_eq!(d.era, Era::Legacy);
    assert_eq!(d.version, "2025-11-25");
    assert_eq!(s.d.era().state, EraState::Legacy);
}

#[test]
fn a_counter_offer_we_speak_is_used_and_one_we_do_not_ends_the_handshake() {
    let mut s = Script::started(config(EraChoice::Legacy));
    s.answer(Script::init_result("2025-06-18"));
    assert_eq!(s.settled_ok().version, "2025-06-18");
    assert_eq!(s.count("notifications/initialized"), 1);

    let mut s = Script::started(config(EraChoice::Legacy));
    s.answer(Script::init_result("1999-01-01"));
    assert!(matches!(s.settled_err(), EraFailure::Handshake(_)));
    assert!(s.settled_err().to_string().contains("1999-01-01"));
    assert_eq!(s.count("notifications/initialized"), 0);
}

#[test]
fn a_refused_initialize_names_the_versions_a_modern_server_supports() {
    let mut s = Script::started(config(EraChoice::Legacy));
    s.refuse(-32022, "Unsupported", Some(json!({"supported": ["2026-07-28"]})));
    let e = s.settled_err();
    assert!(matches!(e, EraFailure::InitializeRefused(_)));
    assert!(e.to_string().contains("try --era modern"), "{e}");
}

#[test]
fn auto_falls_back_to_initialize_on_method_not_found() {
    let mut s = Script::started(config(EraChoice::Auto));
    assert_eq!(s.methods(), ["server/discover"]);
    assert_eq!(version_of(s.last()), Some("2026-07-28"));
    s.refuse(-32601, "Method not found", None);
    assert_eq!(s.methods(), ["server/discover", "initialize"]);
    assert_eq!(s.last()["params"]["protocolVersion"], "2025-11-25");
    assert!(
        s.notes.iter().any(|n| n.contains("falling back to initialize")),
        "{:?}",
        s.notes
    );
    s.answer(Script::init_result("2025-11-25"));
    let d = s.settled_ok();
    assert_eq!(d.era, Era::Legacy);
    assert_eq!(d.reason, "-32601 (Method not found) to server/discover: legacy server");
}

#[test]
fn auto_settles_modern_and_every_request_then_carries_the_envelope() {
    let mut s = Script::started(config(EraChoice::Auto));
    s.answer(Script::discover_result());
    let d = s.settled_ok().clone();
    assert_eq!(d.era, Era::Modern);
    assert!(d.reason.contains("modern server"), "{}", d.reason);
    assert_eq!(s.count("initialize"), 0);
    s.d.request("tools/list", None);
    s.pump();
    assert_eq!(version_of(s.last()), Some("2026-07-28"));
    assert_eq!(s.last()["params"]["_meta"][era::META_CLIENT_INFO]["name"], "mcpscope");
}

#[test]
fn auto_treats_a_silent_probe_as_a_legacy_server() {
    let mut s = Script::started(config(EraChoice::Auto));
    let id = RequestId::from_json(&s.last()["id"]).unwrap();
    s.d.handle(Input::TimedOut(&id));
    s.pump();
    assert_eq!(s.count("initialize"), 1);
    s.answer(Script::init_result("2025-11-25"));
    assert!(s.settled_ok().reason.contains("timed out"), "{}", s.settled_ok().reason);
}

#[test]
fn the_probe_is_retried_once_with_a_mutual_version() {
    let mut cfg = config(EraChoice::Modern);
    cfg.handshake.protocol_version = "2099-01-01".into();
    let mut s = Script::started(cfg);
    assert_eq!(version_of(s.last()), Some("2099-01-01"));
    s.refuse(
        -32022,
        "Unsupported protocol version",
        Some(json!({"supported": ["2026-07-28"]})),
    );
    assert_eq!(s.count("server/discover"), 2);
    assert_eq!(version_of(s.last()), Some("2026-07-28"));
    assert!(s.notes.iter().any(|n| n.contains("retrying with 2026-07-28")));
    s.answer(Script::discover_result());
    let d = s.settled_ok();
    assert_eq!(d.version, "2026-07-28");
    assert_eq!(d.notes.len(), 1);
}

#[test]
fn a_server_that_answers_32022_forever_is_retried_once_then_given_up_on() {
    let mut s = Script::started(config(EraChoice::Modern));
    for _ in 0..5 {
        if !s.settled.is_empty() {
            break;
        }
        s.refuse(
            -32022,
            "Unsupported protocol version",
            Some(json!({"supported": ["2026-07-28"]})),
        );
    }
    assert_eq!(s.count("server/discover"), 2, "{:?}", s.methods());
    let e = s.settled_err().to_string();
    // Says what was offered and what the server answered, without contradicting itself.
    assert!(e.contains("offered 2026-07-28"), "{e}");
    assert!(e.contains("supporting 2026-07-28"), "{e}");
    assert!(e.contains("after 1 retry"), "{e}");
    assert_eq!(s.d.era().state, EraState::Modern);
}

#[test]
fn auto_probes_again_when_the_fallback_initialize_names_a_modern_version() {
    let mut s = Script::started(config(EraChoice::Auto));
    let id = RequestId::from_json(&s.last()["id"]).unwrap();
    // A slow modern server: the probe times out, the answer comes late.
    s.d.handle(Input::TimedOut(&id));
    s.pump();
    s.recv(json!({"jsonrpc": "2.0", "id": id.to_json(), "result": Script::discover_result()}));
    assert!(s.settled.is_empty());
    s.refuse(
        -32022,
        "the initialize handshake is not accepted",
        Some(json!({"supported": ["2026-07-28"]})),
    );
    assert_eq!(s.methods(), ["server/discover", "initialize", "server/discover"]);
    s.answer(Script::discover_result());
    assert_eq!(s.settled_ok().era, Era::Modern);
    // Only once: a second refusal of initialize is final.
    let mut s = Script::started(config(EraChoice::Auto));
    s.refuse(-32601, "Method not found", None);
    s.refuse(-32022, "no", Some(json!({"supported": ["2026-07-28"]})));
    s.refuse(-32601, "Method not found", None);
    s.refuse(-32022, "no", Some(json!({"supported": ["2026-07-28"]})));
    assert!(matches!(s.settled_err(), EraFailure::InitializeRefused(_)));
    assert_eq!(s.count("server/discover"), 2);
}

#[test]
fn auto_falls_back_when_only_legacy_versions_are_shared() {
    let mut s = Script::started(config(EraChoice::Auto));
    s.refuse(-32022, "Unsupported", Some(json!({"supported": ["2025-11-25"]})));
    assert_eq!(s.count("initialize"), 1);
    s.answer(Script::init_result("2025-11-25"));
    assert!(s.settled_ok().reason.contains("only legacy versions in common"));
}

#[test]
fn modern_chosen_against_a_legacy_server_fails_and_stays_modern() {
    let mut s = Script::started(config(EraChoice::Modern));
    s.refuse(-32601, "Method not found", None);
    assert!(matches!(s.settled_err(), EraFailure::NotModern(_)));
    assert_eq!(s.count("initialize"), 0);
    assert_eq!(s.d.era().state, EraState::Modern);
    assert!(s.d.decision().is_none());
}

#[test]
fn a_modern_error_to_the_probe_means_a_modern_server_that_refused() {
    let mut s = Script::started(config(EraChoice::Auto));
    s.refuse(-32021, "Missing required client capability", None);
    assert!(s.settled_err().to_string().contains("a modern error"));
    assert_eq!(s.d.era().state, EraState::Modern);
}

#[test]
fn a_request_refused_with_32022_is_sent_once_more_then_its_error_stands() {
    let mut s = Script::modern(DriverConfig::default());
    let id = s.d.request("tools/list", None);
    s.pump();
    // Even the version just sent is tried once more: the refusal may be transient.
    s.refuse(-32022, "Unsupported", Some(json!({"supported": ["2026-07-28"]})));
    assert_eq!(s.count("tools/list"), 2);
    let retry = RequestId::from_json(&s.last()["id"]).unwrap();
    assert_ne!(retry, id);
    assert_eq!(s.resent, [(id.clone(), retry.clone())]);
    assert_eq!(s.d.conversations().root(&retry), id);
    s.refuse(-32022, "Unsupported", Some(json!({"supported": ["2026-07-28"]})));
    assert_eq!(s.count("tools/list"), 2);
    let done = s.done.last().unwrap();
    assert_eq!(done.id, id);
    assert_eq!(done.last, retry);
    assert!(matches!(&done.outcome, Outcome::Error(e) if e.code == -32022));
    assert!(
        s.notes.last().unwrap().contains("after 1 retry, mcpscope stops"),
        "{:?}",
        s.notes
    );
}

#[test]
fn a_32022_retry_switches_to_the_mutual_version() {
    let mut cfg = DriverConfig::default();
    cfg.handshake.protocol_version = "2026-07-28".into();
    let mut s = Script::modern(cfg);
    s.d.set_modern_version("2031-01-01");
    s.d.request("tools/list", None);
    s.pump();
    assert_eq!(version_of(s.last()), Some("2031-01-01"));
    s.refuse(
        -32022,
        "Unsupported",
        Some(json!({"supported": ["2026-07-28", "2031-01-01x"]})),
    );
    assert_eq!(version_of(s.last()), Some("2026-07-28"));
    s.answer(json!({"tools": [], "resultType": "complete"}));
    assert!(matches!(s.done.last().unwrap().outcome, Outcome::Result(_)));
}

// ------------------------------------------------------- input chains ---

#[test]
fn every_pending_request_ends_when_the_server_exits() {
    let mut s = Script::legacy();
    let a = s.d.request("tools/call", Some(json!({"name": "a"})));
    let b = s.d.request("tools/list", None);
    s.pump();
    s.d.handle(Input::Exited("exited with status 7"));
    s.pump();
    assert!(s.done.is_empty(), "a response may still be in the pipe");
    assert!(s.d.next_wakeup().is_some(), "the grace is a timer");
    s.recv(json!({"jsonrpc": "2.0", "id": b.to_json(), "result": {"tools": []}}));
    assert_eq!(s.done.len(), 1);
    s.tick(EXIT_GRACE.as_millis() as u64);
    assert_eq!(s.done.len(), 2);
    // Once it has ended the session it is no timer any more (an owner
    // waiting on next_wakeup would otherwise wake at once, forever).
    assert_eq!(s.d.next_wakeup(), None);
    let d = s.done.iter().find(|d| d.id == a).unwrap();
    assert_eq!(
        d.outcome,
        Outcome::Failed(Failure::ServerGone("exited with status 7".into()))
    );
    // Anything asked afterwards fails at once.
    let c = s.d.request("ping", None);
    s.pump();
    assert!(matches!(
        &s.done.last().unwrap().outcome,
        Outcome::Failed(Failure::ServerGone(_))
    ));
    assert_eq!(s.done.last().unwrap().id, c);
}

#[test]
fn a_lost_session_ends_the_handshake_and_questions() {
    let mut s = Script::started(DriverConfig {
        ask_user: true,
        ..config(EraChoice::Legacy)
    });
    s.d.handle(Input::Gone("connection refused"));
    s.pump();
    assert!(matches!(s.settled_err(), EraFailure::NoAnswer { .. }));
    assert!(s.settled_err().to_string().contains("connection refused"));
}

#[test]
fn timeouts_and_undelivered_requests_end_as_failures() {
    let mut s = Script::legacy();
    let a = s.d.request("tools/list", None);
    let b = s.d.request("tools/call", None);
    s.pump();
    s.d.handle(Input::TimedOut(&a));
    s.d.handle(Input::NotDelivered {
        id: &b,
        why: "HTTP 500",
        cause: Undelivered::Http,
    });
    s.pump();
    assert!(matches!(
        s.done[0].outcome,
        Outcome::Failed(Failure::TimedOut { after: Some(_) })
    ));
    assert!(matches!(
        &s.done[1].outcome,
        Outcome::Failed(Failure::NotDelivered {
            cause: Undelivered::Http,
            ..
        })
    ));
}

#[test]
fn cancelling_sends_a_cancel_and_ends_the_request() {
    let mut s = Script::legacy();
    let a = s.d.request("tools/call", Some(json!({"name": "slow"})));
    s.pump();
    s.d.cancel(&a, "user");
    s.pump();
    assert_eq!(s.cancels, std::slice::from_ref(&a));
    assert_eq!(s.done[0].outcome, Outcome::Failed(Failure::Cancelled));
    // A late answer changes nothing.
    s.recv(json!({"jsonrpc": "2.0", "id": a.to_json(), "result": {}}));
    assert_eq!(s.done.len(), 1);
}

#[test]
fn raw_lines_go_out_as_typed_and_their_answers_are_followed() {
    let mut s = Script::legacy();
    let id =
        s.d.send_raw(br#"{"jsonrpc":"2.0","id":"mine","method":"tools/list"}"#.to_vec());
    s.pump();
    assert_eq!(id, Some(RequestId::String("mine".into())));
    assert_eq!(s.raw.len(), 1);
    s.recv(json!({"jsonrpc": "2.0", "id": "mine", "result": {"tools": []}}));
    assert_eq!(s.done[0].id, RequestId::String("mine".into()));
    assert_eq!(s.d.send_raw(b"not json".to_vec()), None);
}

// -------------------------------------------------- lists and listen ---

#[test]
fn advertised_lists_are_fetched_and_a_burst_of_changes_refetches_once() {
    let mut s = Script::started(DriverConfig {
        fetch_lists: true,
        ..config(EraChoice::Legacy)
    });
    s.answer(Script::init_result("2025-11-25"));
    assert_eq!(s.count("tools/list"), 1);
    assert_eq!(s.count("prompts/list"), 0, "not advertised");
    let change = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
    // A burst while the first fetch is in flight: its answer may predate the
    // change, so exactly one more fetch follows it.
    for _ in 0..5 {
        s.recv(change.clone());
    }
    assert_eq!(s.count("tools/list"), 1);
    s.answer(json!({"tools": []}));
    assert_eq!(s.count("tools/list"), 2);
    assert!(s.notes.iter().any(|n| n.contains("re-fetches tools/list")));
    s.answer(json!({"tools": []}));
    assert_eq!(s.count("tools/list"), 2, "nothing changed meanwhile: no more");
    // A burst while nothing is in flight: one fetch once it settled.
    for _ in 0..3 {
        s.recv(change.clone());
    }
    assert_eq!(s.count("tools/list"), 2);
    assert_eq!(
        s.d.next_wakeup(),
        Some(s.t - Duration::from_millis(2) + LIST_CHANGED_SETTLE)
    );
    s.tick(LIST_CHANGED_SETTLE.as_millis() as u64);
    assert_eq!(s.count("tools/list"), 3);
    s.answer(json!({"tools": []}));
    s.tick(500);
    assert_eq!(s.count("tools/list"), 3);
    // A list never fetched is not fetched because it changed.
    s.recv(json!({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"}));
    assert_eq!(s.count("prompts/list"), 0);
}

#[test]
fn a_listen_stream_is_acknowledged_and_cancelled() {
    let mut s = Script::modern(DriverConfig::default());
    let id = s.d.listen(&Filter::all_lists());
    s.pump();
    assert_eq!(s.last()["method"], "subscriptions/listen");
    assert_eq!(version_of(s.last()), Some("2026-07-28"));
    s.recv(
        json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {
        "_meta": {era::META_SUBSCRIPTION_ID: id.to_json()}, "notifications": {"toolsListChanged": true}}}),
    );
    assert_eq!(s.listening.len(), 1);
    assert_eq!(s.listening[0].0, id);
    s.d.cancel(&id, "stop");
    s.pump();
    assert_eq!(s.cancels, [id]);
}

#[test]
fn roots_changes_are_announced_only_in_the_legacy_era() {
    let mut s = Script::legacy();
    s.d.set_roots(vec![json!({"uri": "file:///x"})]);
    s.pump();
    assert_eq!(s.last()["method"], "notifications/roots/list_changed");
    let mut s = Script::modern(DriverConfig::default());
    let n = s.sent.len();
    s.d.set_roots(vec![]);
    s.pump();
    assert_eq!(s.sent.len(), n);
}

// ------------------------------------------------------ http headers ---

#[test]
fn annotated_arguments_go_out_as_headers_and_invalid_tools_are_known() {
    let mut s = Script::modern(DriverConfig::default());
    s.d.request("tools/list", None);
    s.pump();
    s.answer(json!({"tools": [
        {"name": "deploy", "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "note": {"type": "string"}}}},
        {"name": "broken", "inputSchema": {"type": "object", "properties": {
            "q": {"type": "object", "x-mcp-header": "Q"}}}}
    ], "resultType": "complete"}));
    assert!(s.d.tools_listed());
    assert!(s.d.tool_problem("deploy").is_none());
    assert_eq!(s.d.tool_problem("broken").unwrap().rule(), "primitive-only");
    s.d.request(
        "tools/call",
        Some(json!({"name": "deploy", "arguments": {"region": "eu west", "note": "x"}})),
    );
    s.pump();
    assert_eq!(
        s.headers.last().unwrap(),
        &[("Mcp-Param-Region".to_owned(), "eu west".to_owned())]
    );
    // A legacy session sends none (the headers are a 2026-07-28 feature).
    let mut s = Script::legacy();
    s.d.request(
        "tools/call",
        Some(json!({"name": "deploy", "arguments": {"region": "eu"}})),
    );
    s.pump();
    assert!(s.headers.last().unwrap().is_empty());
}

// ------------------------------------------------------- authorization ---

/// The owner held back an HTTP refusal that asked for authorization,
/// authorized, and sends the request again under a new id: the driver
/// waits for the answer there, whatever the request was for.
#[test]
fn a_request_reissued_after_authorizing_is_answered_under_its_new_id() {
    let mut s = Script::started(config(EraChoice::Legacy));
    let first = RequestId::from_json(&s.last()["id"]).unwrap();
    let new = s.d.reissue(&first).expect("initialize is waiting");
    s.pump();
    assert_ne!(new, first);
    assert_eq!(s.resent, [(first.clone(), new.clone())]);
    assert_eq!(s.d.era().state, EraState::Initializing { id: new.clone() });
    // The first id is no longer waited for.
    assert_eq!(s.d.reissue(&first), None);
    s.recv(json!({"jsonrpc": "2.0", "id": new.to_json(), "result": Script::init_result("2025-11-25")}));
    assert_eq!(s.settled_ok().era, Era::Legacy);

    // An owner's request ends under its first id, its last send the reissued one.
    let root = s.d.request("tools/list", None);
    s.pump();
    let again = s.d.reissue(&root).unwrap();
    s.pump();
    s.recv(json!({"jsonrpc": "2.0", "id": again.to_json(), "result": {"tools": []}}));
    let c = s.done.last().expect("done");
    assert_eq!((&c.id, &c.last), (&root, &again));
    assert!(matches!(c.outcome, Outcome::Result(_)), "{:?}", c.outcome);
}

#[test]
fn a_reissued_probe_still_settles_the_era() {
    let mut s = Script::started(config(EraChoice::Modern));
    let first = RequestId::from_json(&s.last()["id"]).unwrap();
    let new = s.d.reissue(&first).unwrap();
    s.pump();
    assert!(matches!(&s.d.era().state, EraState::Probing { id, .. } if *id == new));
    s.recv(json!({"jsonrpc": "2.0", "id": new.to_json(), "result": Script::discover_result()}));
    assert_eq!(s.settled_ok().era, Era::Modern);
}

#[test]
fn an_answer_in_pieces_over_the_cap_fails_its_request_as_too_long() {
    let mut s = Script::modern(DriverConfig::default());
    let id = s.d.request("tools/list", None);
    s.pump();
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":{},"result":{{"tools":[],"pad":"{}"}}}}"#,
        id,
        "y".repeat(100)
    );
    let bytes = line.as_bytes();
    // A notification in pieces first: it is nobody's answer.
    let notification = br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"id":1}}"#;
    let pieces = [
        (&notification[..30], LineEnding::Cut),
        (&notification[30..], LineEnding::Lf),
        (&bytes[..40], LineEnding::Cut),
        (&bytes[40..80], LineEnding::Cut),
        (&bytes[80..], LineEnding::Lf),
    ];
    for (i, (piece, ending)) in pieces.into_iter().enumerate() {
        assert!(s.done.is_empty(), "not done before the last piece ({i})");
        s.t += Duration::from_millis(1);
        let raw = RawLine {
            bytes: piece.to_vec(),
            ending,
        };
        let f = s.wire.frame(Direction::In, raw, s.t, None);
        s.d.handle(Input::Frame(&f));
        s.pump();
    }
    let done = s.done.last().expect("the request is done");
    assert_eq!(done.id, id);
    assert_eq!(
        done.outcome,
        Outcome::Failed(Failure::TooLong {
            bytes: bytes.len() as u64,
            cap: 40
        })
    );
}
