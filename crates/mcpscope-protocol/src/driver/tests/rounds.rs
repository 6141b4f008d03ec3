//! What the server asks of a request and how its answer is read: input
//! rounds (2026-07-28), requests of the server's own answered by the policy
//! or a person, tasks, and answers an owner reads from their frames.

use super::*;

fn modern_with_policy() -> Script {
    Script::modern(DriverConfig {
        policy: InputPolicy {
            roots: Some(vec![json!({"uri": "file:///work"})]),
            elicit: Some(ElicitAnswer::Accept(json!({"ok": true}))),
            sample_reply: None,
        },
        ..DriverConfig::default()
    })
}

#[test]
fn an_input_required_chain_is_answered_and_sent_again_until_complete() {
    let mut s = modern_with_policy();
    let id = s.d.request(
        "tools/call",
        Some(json!({"name": "deploy", "arguments": {"env": "prod"}})),
    );
    s.pump();
    s.answer(json!({"resultType": "input_required", "requestState": "st-1", "inputRequests": {
        "where": {"method": "roots/list", "params": {}},
        "sure": {"method": "elicitation/create", "params": {"message": "Sure?", "requestedSchema": {"type": "object"}}}
    }}));
    let retry = s.last().clone();
    assert_eq!(retry["method"], "tools/call");
    assert_ne!(retry["id"], json!(id.to_json()));
    assert_eq!(retry["params"]["name"], "deploy");
    assert_eq!(retry["params"]["arguments"]["env"], "prod");
    assert_eq!(retry["params"]["requestState"], "st-1");
    assert_eq!(
        retry["params"]["inputResponses"]["where"]["roots"][0]["uri"],
        "file:///work"
    );
    assert_eq!(retry["params"]["inputResponses"]["sure"]["action"], "accept");
    assert_eq!(version_of(&retry), Some("2026-07-28"));
    assert_eq!(s.d.chains().len(), 1);
    assert!(
        s.notes
            .iter()
            .any(|n| n.contains("conversation 1: tools/call sent again as"))
    );

    // A second round without requestState: none is echoed.
    s.answer(json!({"resultType": "input_required", "inputRequests": {
        "again": {"method": "roots/list", "params": {}}}}));
    assert!(s.last()["params"].get("requestState").is_none());
    assert!(s.last()["params"]["inputResponses"].get("sure").is_none());
    s.answer(json!({"resultType": "complete", "content": [{"type": "text", "text": "done"}]}));
    let done = s.done.last().unwrap();
    assert_eq!(done.id, id);
    assert_eq!(done.rounds.len(), 2);
    assert_eq!(s.d.conversations().members(&id).len(), 3);
    assert!(matches!(&done.outcome, Outcome::Result(r) if r["content"][0]["text"] == "done"));
    assert!(done.stopped.is_none());
}

#[test]
fn a_chain_that_never_ends_is_given_up_on() {
    let mut s = modern_with_policy();
    let id = s.d.request("prompts/get", Some(json!({"name": "p"})));
    s.pump();
    for _ in 0..(mrtr::MAX_ROUNDS + 5) {
        if !s.done.is_empty() {
            break;
        }
        s.answer(json!({"resultType": "input_required", "inputRequests": {
            "r": {"method": "roots/list", "params": {}}}}));
    }
    assert_eq!(s.count("prompts/get"), mrtr::MAX_ROUNDS);
    let done = s.done.last().unwrap();
    assert_eq!(done.id, id);
    assert!(done.stopped.as_deref().unwrap().contains("gave up after"));
    assert!(matches!(&done.outcome, Outcome::Result(r) if r["resultType"] == "input_required"));
}

#[test]
fn an_input_nobody_can_answer_stops_the_chain_with_the_reason() {
    let mut s = modern_with_policy();
    s.d.request("tools/call", Some(json!({"name": "think"})));
    s.pump();
    s.answer(json!({"resultType": "input_required", "inputRequests": {
        "llm": {"method": "sampling/createMessage", "params": {"messages": []}}}}));
    assert_eq!(s.count("tools/call"), 1);
    let done = s.done.last().unwrap();
    assert!(done.stopped.as_deref().unwrap().contains("--sample-reply"), "{done:?}");
}

#[test]
fn with_a_user_inputs_become_questions_and_the_answer_sends_the_retry() {
    let mut s = Script::modern(DriverConfig {
        ask_user: true,
        policy: InputPolicy {
            roots: Some(vec![]),
            ..InputPolicy::default()
        },
        ..DriverConfig::default()
    });
    s.d.request("tools/call", Some(json!({"name": "ask"})));
    s.pump();
    s.answer(json!({"resultType": "input_required", "inputRequests": {
        "name": {"method": "elicitation/create", "params": {"message": "Your name?"}},
        "roots": {"method": "roots/list", "params": {}}}}));
    assert_eq!(s.count("tools/call"), 1);
    assert_eq!(s.asked.len(), 1);
    let q = s.d.questions()[0].clone();
    assert_eq!(q.method, "elicitation/create");
    s.d.answer(q.id, Ok(json!({"action": "accept", "content": {"name": "Ada"}})));
    s.pump();
    assert_eq!(s.count("tools/call"), 2);
    assert_eq!(s.last()["params"]["inputResponses"]["name"]["content"]["name"], "Ada");
    assert!(s.d.questions().is_empty());
}

// --------------------------------------------------- server requests ---

#[test]
fn server_requests_are_answered_as_the_policy_says() {
    let mut s = Script::legacy();
    s.recv(json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}));
    assert_eq!(s.last(), &json!({"jsonrpc": "2.0", "id": 7, "result": {}}));
    s.recv(json!({"jsonrpc": "2.0", "id": 8, "method": "roots/list"}));
    assert_eq!(s.last()["error"]["code"], -32601);
    s.recv(json!({"jsonrpc": "2.0", "id": 9, "method": "elicitation/create", "params": {"message": "?"}}));
    assert_eq!(s.last()["error"]["code"], -32601);
    assert!(s.last()["error"]["message"].as_str().unwrap().contains("elicitation"));
    s.recv(json!({"jsonrpc": "2.0", "id": "s", "method": "sampling/createMessage", "params": {}}));
    assert_eq!(s.last()["id"], "s");
    assert_eq!(s.last()["error"]["code"], -32601);
    s.recv(json!({"jsonrpc": "2.0", "id": 10, "method": "x/unknown"}));
    assert_eq!(s.last()["error"]["code"], -32601);

    let mut s = Script::started(DriverConfig {
        policy: InputPolicy {
            roots: Some(vec![json!({"uri": "file:///r"})]),
            elicit: Some(ElicitAnswer::Decline),
            sample_reply: Some("hi".into()),
        },
        ..config(EraChoice::Legacy)
    });
    s.answer(Script::init_result("2025-11-25"));
    s.recv(json!({"jsonrpc": "2.0", "id": 1, "method": "roots/list"}));
    assert_eq!(s.last()["result"]["roots"][0]["uri"], "file:///r");
    s.recv(json!({"jsonrpc": "2.0", "id": 2, "method": "elicitation/create", "params": {}}));
    assert_eq!(s.last()["result"]["action"], "decline");
    s.recv(json!({"jsonrpc": "2.0", "id": 3, "method": "sampling/createMessage", "params": {}}));
    assert_eq!(s.last()["result"]["content"]["text"], "hi");
}

#[test]
fn with_a_user_server_requests_wait_for_an_answer_and_a_cancel_withdraws_them() {
    let mut s = Script::started(DriverConfig {
        ask_user: true,
        ..config(EraChoice::Legacy)
    });
    s.answer(Script::init_result("2025-11-25"));
    let before = s.sent.len();
    s.recv(json!({"jsonrpc": "2.0", "id": 5, "method": "sampling/createMessage", "params": {"messages": []}}));
    s.recv(json!({"jsonrpc": "2.0", "id": 6, "method": "elicitation/create", "params": {"message": "?"}}));
    assert_eq!(s.sent.len(), before, "nothing is answered before the user does");
    assert_eq!(s.d.questions().len(), 2);
    s.recv(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}));
    assert_eq!(s.d.questions().len(), 1);
    let q = s.d.questions()[0].id;
    s.d.answer(q, Ok(json!({"action": "decline"})));
    s.pump();
    assert_eq!(
        s.last(),
        &json!({"jsonrpc": "2.0", "id": 6, "result": {"action": "decline"}})
    );
}

// ------------------------------------------------------------- tasks ---

#[test]
fn an_experimental_task_is_polled_then_its_result_fetched() {
    let mut s = Script::legacy();
    let id = s.d.run_task(json!({"name": "slow"}), None);
    s.pump();
    assert_eq!(s.last()["params"]["task"], json!({}), "{}", s.last());
    s.answer(json!({"task": {"taskId": "t1", "status": "working", "pollInterval": 100}}));
    assert_eq!(s.statuses.len(), 1);
    assert_eq!(s.d.next_wakeup(), Some(s.t + Duration::from_millis(100)));
    s.tick(50);
    assert_eq!(s.count("tasks/get"), 0);
    s.tick(60);
    assert_eq!(s.count("tasks/get"), 1);
    s.answer(json!({"taskId": "t1", "status": "working", "pollInterval": 100}));
    assert_eq!(s.statuses.len(), 1, "no change, no status");
    s.tick(100);
    s.answer(json!({"taskId": "t1", "status": "completed"}));
    assert_eq!(s.statuses.len(), 2);
    assert_eq!(s.methods().last(), Some(&"tasks/result"));
    s.answer(json!({"content": [{"type": "text", "text": "ok"}]}));
    let done = s.done.last().unwrap();
    assert_eq!(done.id, id);
    assert!(matches!(&done.outcome, Outcome::Result(r) if r["content"][0]["text"] == "ok"));
    let run = done.task.as_ref().unwrap();
    assert_eq!(run.flavor, Some(Flavor::Experimental));
    assert_eq!(run.transitions.len(), 2);
    assert!(!run.cancelled);
}

#[test]
fn an_extension_task_waits_for_input_then_inlines_its_result() {
    let mut s = modern_with_policy();
    let id = s.d.run_task(json!({"name": "slow"}), None);
    s.pump();
    s.answer(json!({"resultType": "task", "taskId": "t9", "status": "working", "pollIntervalMs": 50}));
    s.tick(60);
    s.answer(json!({"taskId": "t9", "status": "input_required", "inputRequests": {
        "ok": {"method": "elicitation/create", "params": {"message": "go?"}}}}));
    assert_eq!(s.methods().last(), Some(&"tasks/update"));
    assert_eq!(s.last()["params"]["inputResponses"]["ok"]["action"], "accept");
    s.answer(json!({}));
    s.tick(60);
    s.answer(json!({"taskId": "t9", "status": "completed", "result": {"content": [], "isError": false}}));
    let done = s.done.last().unwrap();
    assert_eq!(done.id, id);
    assert!(matches!(&done.outcome, Outcome::Result(r) if r["isError"] == false));
    assert_eq!(s.count("tasks/result"), 0);
}

#[test]
fn a_task_that_does_not_end_in_time_is_cancelled() {
    let mut s = Script::legacy();
    s.d.run_task(json!({"name": "forever"}), Some(Duration::from_millis(300)));
    s.pump();
    s.answer(json!({"task": {"taskId": "t2", "status": "working", "pollInterval": 200}}));
    s.tick(200);
    s.answer(json!({"taskId": "t2", "status": "working", "pollInterval": 200}));
    s.tick(150);
    assert_eq!(s.methods().last(), Some(&"tasks/cancel"));
    s.answer(json!({"taskId": "t2", "status": "cancelled"}));
    let done = s.done.last().unwrap();
    assert!(done.task.as_ref().unwrap().cancelled);
    assert!(matches!(&done.outcome, Outcome::Failed(Failure::Stopped(w)) if w.contains("cancelled")));
    assert_eq!(s.count("tasks/result"), 0);
}

#[test]
fn a_call_answered_at_once_is_no_task() {
    let mut s = Script::legacy();
    s.d.run_task(json!({"name": "quick"}), None);
    s.pump();
    s.answer(json!({"content": []}));
    let done = s.done.last().unwrap();
    assert!(matches!(done.outcome, Outcome::Result(_)));
    assert_eq!(done.task.as_ref().unwrap().flavor, None);
}

// ------------------------------------------------- ends and timeouts ---

#[test]
fn a_frame_only_request_leaves_its_result_unread_unless_input_rounds_may_need_it() {
    let frame_only = |timeout| RequestOptions {
        frame_only: true,
        ..RequestOptions::timeout(timeout)
    };
    let mut s = Script::legacy();
    s.d.request_with(
        "tools/call",
        Some(json!({"name": "echo", "arguments": {"message": "hi"}})),
        frame_only(Duration::from_secs(5)),
    );
    s.pump();
    assert_eq!(s.last()["params"]["arguments"]["message"], "hi", "sent whole");
    s.answer(json!({"content": [{"type": "text", "text": "hi"}]}));
    assert!(matches!(&s.done.last().unwrap().outcome, Outcome::Result(Value::Null)));
    // An error is read all the same.
    s.d.request_with(
        "tools/call",
        Some(json!({"name": "x"})),
        frame_only(Duration::from_secs(5)),
    );
    s.pump();
    s.refuse(-32602, "no tool x", None);
    assert!(matches!(&s.done.last().unwrap().outcome, Outcome::Error(e) if e.code == -32602));
    // Asked otherwise, the result is read.
    s.d.request("tools/call", Some(json!({"name": "echo"})));
    s.pump();
    s.answer(json!({"content": []}));
    assert!(matches!(&s.done.last().unwrap().outcome, Outcome::Result(r) if r["content"] == json!([])));

    // A modern session reads it: an answer may be an input round.
    let mut s = modern_with_policy();
    s.d.request_with(
        "tools/call",
        Some(json!({"name": "deploy"})),
        frame_only(Duration::from_secs(5)),
    );
    s.pump();
    s.answer(json!({"resultType": "input_required", "inputRequests": {
        "where": {"method": "roots/list", "params": {}}
    }}));
    assert!(s.done.is_empty(), "an input round, answered");
    assert_eq!(s.last()["params"]["name"], "deploy");
    s.answer(json!({"content": [], "resultType": "complete"}));
    assert!(matches!(&s.done.last().unwrap().outcome, Outcome::Result(r) if r["resultType"] == "complete"));
}
