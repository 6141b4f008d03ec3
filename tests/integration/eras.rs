//! Both protocol eras against real servers: the Python SDK (mcp 2.3.0) serves
//! 2026-07-28 (server/discover, the _meta envelope, -32022, multi round-trip
//! requests, subscriptions/listen); server-everything serves 2025-11-25
//! (initialize, experimental tasks).

use crate::support::*;
use mcpscope_core::analysis::lint::{self, LintOptions};
use mcpscope_core::protocol::era::{Era, EraChoice};
use mcpscope_core::protocol::handshake::HandshakeOptions;
use mcpscope_core::protocol::mrtr::{self, ElicitAnswer, InputPolicy};
use mcpscope_core::protocol::subscriptions::{self, Filter};
use mcpscope_core::transport::event::Event;
use serde_json::{Value, json};
use std::time::Duration;

fn lines(findings: &[lint::Finding]) -> String {
    findings.iter().map(|f| format!("{}\n", f.line())).collect()
}

fn notes(evs: &[Event]) -> Vec<String> {
    evs.iter()
        .filter_map(|e| match e {
            Event::Note { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn auto_finds_the_modern_python_sdk_and_the_legacy_reference_server() {
    // The Python SDK answers server/discover: modern, no initialize sent.
    let (mut c, sink) = client(py_modern_server());
    c.wait_spawned(T).unwrap();
    let d = c
        .establish(EraChoice::Auto, &HandshakeOptions::default(), T)
        .unwrap()
        .unwrap();
    assert_eq!(d.era, Era::Modern, "{}", d.summary());
    assert_eq!(d.version, "2026-07-28");
    assert!(d.reason.contains("server/discover answered"), "{}", d.reason);
    assert_eq!(d.server_name(), "mcpscope-py-modern-server 0.1.0");
    let tools = c.request("tools/list", None, T).unwrap().outcome.unwrap();
    assert_eq!(tools["resultType"], "complete");
    assert!(
        tools.get("ttlMs").is_some() && tools.get("cacheScope").is_some(),
        "{tools}"
    );
    c.close();
    let evs = snapshot(&sink);
    let methods: Vec<_> = sent(&evs).iter().filter_map(|f| f.class.method.clone()).collect();
    assert_eq!(methods, ["server/discover", "tools/list"]);
    assert!(
        sent(&evs)
            .iter()
            .all(|f| f.text().contains("io.modelcontextprotocol/protocolVersion"))
    );
    assert!(notes(&evs).iter().any(|n| n.starts_with("era: modern 2026-07-28")));
    let findings = lint::lint(&evs, &LintOptions::default());
    assert!(!lint::has_errors(&findings), "{}", lines(&findings));

    // server-everything refuses it with -32601: legacy, and initialize follows.
    let (mut c, sink) = client(everything());
    c.wait_spawned(T).unwrap();
    let d = c
        .establish(EraChoice::Auto, &HandshakeOptions::default(), T)
        .unwrap()
        .unwrap();
    assert_eq!(d.era, Era::Legacy, "{}", d.summary());
    assert_eq!(d.reason, "-32601 (Method not found) to server/discover: legacy server");
    assert_eq!(d.version, "2025-11-25");
    let r = c
        .request(
            "tools/call",
            Some(json!({"name":"echo","arguments":{"message":"x"}})),
            T,
        )
        .unwrap();
    assert!(!r.frame.text().contains("resultType"));
    c.close();
    let evs = snapshot(&sink);
    let methods: Vec<_> = sent(&evs).iter().filter_map(|f| f.class.method.clone()).collect();
    assert_eq!(
        methods[..3],
        ["server/discover", "initialize", "notifications/initialized"]
    );
    assert!(notes(&evs).iter().any(|n| n.contains("falling back to initialize")));
    let findings = lint::lint(&evs, &LintOptions::default());
    assert!(!lint::has_errors(&findings), "{}", lines(&findings));
    assert!(
        !findings.iter().any(|f| f.rule == "request-before-initialize"),
        "the probe is not a request before initialize:\n{}",
        lines(&findings)
    );

    // Asked for the modern era, the legacy server is refused with a reason.
    let (mut c, _) = client(everything());
    c.wait_spawned(T).unwrap();
    let e = c
        .establish(EraChoice::Modern, &HandshakeOptions::default(), T)
        .unwrap()
        .unwrap_err();
    assert!(e.to_string().contains("-32601"), "{e}");
    c.close();
}

#[test]
fn unsupported_version_is_retried_with_a_mutual_one_and_noted() {
    let (mut c, sink) = client(py_server());
    c.wait_spawned(T).unwrap();
    let hs = HandshakeOptions {
        protocol_version: "2099-01-01".into(),
        ..HandshakeOptions::default()
    };
    let d = c.establish(EraChoice::Modern, &hs, T).unwrap().unwrap();
    assert_eq!(d.era, Era::Modern);
    assert_eq!(d.version, "2026-07-28");
    assert_eq!(d.notes.len(), 1, "{:?}", d.notes);
    let r = c
        .request("tools/call", Some(json!({"name":"add","arguments":{"a":2,"b":40}})), T)
        .unwrap();
    assert_eq!(r.outcome.unwrap()["structuredContent"]["result"], 42);
    c.close();
    let evs = snapshot(&sink);
    let note = notes(&evs)
        .into_iter()
        .find(|n| n.contains("-32022"))
        .expect("a note on the timeline");
    assert_eq!(
        note,
        "server/discover was refused with -32022 (unsupported protocol version 2099-01-01); the server supports \
         2026-07-28: retrying with 2026-07-28"
    );
    // The refusal really came from the SDK, and the retry used a new id.
    let refusal = received(&evs)
        .into_iter()
        .find(|f| f.text().contains("-32022"))
        .unwrap();
    let v = refusal.json().unwrap();
    assert_eq!(v["error"]["data"]["requested"], "2099-01-01");
    let discovers: Vec<_> = sent(&evs)
        .into_iter()
        .filter(|f| f.class.method.as_deref() == Some("server/discover"))
        .collect();
    assert_eq!(discovers.len(), 2);
    assert_ne!(discovers[0].class.id, discovers[1].class.id);
}

#[test]
fn multi_round_trip_chain_against_the_python_sdk() {
    let (c, sink) = client(py_modern_server());
    let policy = InputPolicy {
        roots: Some(vec![json!({"uri": "file:///tmp/projects", "name": "projects"})]),
        elicit: Some(ElicitAnswer::Accept(json!({"confirm": true}))),
        sample_reply: None,
    };
    let mut c = c.with_policy(policy.clone());
    c.wait_spawned(T).unwrap();
    let hs = HandshakeOptions {
        capabilities: policy.capabilities(),
        ..HandshakeOptions::default()
    };
    c.establish(EraChoice::Auto, &hs, T).unwrap().unwrap();
    let out = c
        .request_with_input(
            "tools/call",
            Some(json!({"name":"setup_project","arguments":{"name":"demo"}})),
            T,
        )
        .unwrap();
    assert!(out.stopped.is_none(), "{:?}", out.stopped);
    assert_eq!(out.rounds.len(), 2);
    assert_eq!(out.rounds[0].1.requests[0].method, "roots/list");
    assert_eq!(out.rounds[1].1.requests[0].method, "elicitation/create");
    let text = out.response.outcome.unwrap()["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text.contains("file:///tmp/projects"), "{text}");
    assert!(text.contains("action=accept"), "{text}");
    // The engine groups the chain as one conversation.
    let root = out.rounds[0].0.clone();
    let last = out.response.frame.class.id.clone().unwrap();
    assert_ne!(root, last);
    assert_eq!(c.conversations().root(&last), root);
    assert_eq!(c.conversations().members(&root).len(), 3);
    c.close();

    let evs = snapshot(&sink);
    let fs = frames(&evs);
    let chains = mrtr::chains(&fs);
    assert_eq!(chains.len(), 1, "{chains:#?}");
    let chain = &chains[0];
    assert_eq!(chain.rounds.len(), 3);
    assert!(chain.finished());
    // The SDK seals its state; it was echoed exactly and every retry had a new id.
    for pair in chain.rounds.windows(2) {
        assert!(pair[0].given_state.as_deref().is_some_and(|s| !s.is_empty()));
        assert_eq!(pair[1].sent_state, pair[0].given_state);
        assert_ne!(pair[1].id, pair[0].id);
    }
    let findings = lint::lint(&evs, &LintOptions::default());
    assert!(!lint::has_errors(&findings), "{}", lines(&findings));
}

#[test]
fn subscriptions_listen_against_the_python_sdk() {
    let (mut c, sink) = client(py_modern_server());
    c.wait_spawned(T).unwrap();
    c.establish(EraChoice::Modern, &HandshakeOptions::default(), T)
        .unwrap()
        .unwrap();
    let filter = Filter {
        tools_list_changed: true,
        ..Filter::default()
    };
    let (id, honoured) = c.listen(&filter, T).unwrap().unwrap();
    assert_eq!(honoured["toolsListChanged"], true, "{honoured}");
    let r = c
        .request("tools/call", Some(json!({"name":"touch_tools","arguments":{}})), T)
        .unwrap();
    assert!(!r.is_tool_error());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let tagged = |evs: &[Event]| {
        received(evs)
            .iter()
            .any(|f| f.class.method.as_deref() == Some("notifications/tools/list_changed"))
    };
    while std::time::Instant::now() < deadline && !tagged(&snapshot(&sink)) {
        c.pump_for(Duration::from_millis(50));
    }
    c.stop_listening(id.clone());
    c.pump_for(Duration::from_millis(300));
    c.close();
    let evs = snapshot(&sink);
    let subs = subscriptions::subscriptions(&frames(&evs));
    assert_eq!(subs.len(), 1, "{subs:#?}");
    let s = &subs[0];
    assert_eq!(s.id, id);
    assert!(s.acknowledged.is_some());
    assert_eq!(
        s.notifications.len(),
        1,
        "{}",
        evs.iter().map(describe).collect::<Vec<_>>().join("\n")
    );
    let fs = frames(&evs);
    let n = fs.iter().find(|f| f.seq == s.notifications[0]).unwrap();
    assert_eq!(n.class.method.as_deref(), Some("notifications/tools/list_changed"));
}

#[test]
fn experimental_task_against_server_everything() {
    let (mut c, sink) = client(everything());
    c.wait_spawned(T).unwrap();
    c.establish(EraChoice::Legacy, &HandshakeOptions::default(), T)
        .unwrap()
        .unwrap();
    // The task tool is registered once notifications/initialized arrives.
    c.request("tools/list", None, T).unwrap();
    let mut seen = Vec::new();
    let run = c
        .run_task(
            json!({"name": "simulate-research-query", "arguments": {"topic": "MCP eras"}}),
            T,
            Duration::from_secs(60),
            &mut |t| seen.push(t.status_line()),
        )
        .unwrap();
    c.close();
    assert_eq!(
        run.flavor,
        Some(mcpscope_core::protocol::tasks::Flavor::Experimental),
        "{run:?}"
    );
    assert!(!run.cancelled);
    assert_eq!(
        run.transitions.last().unwrap().status,
        mcpscope_core::protocol::tasks::Status::Completed
    );
    assert!(seen.len() >= 3, "{seen:?}");
    assert!(seen.iter().any(|s| s.contains("Gathering sources")), "{seen:?}");
    let mcpscope_core::driver::Outcome::Result(result) = run.outcome else {
        panic!("the task ended without a result: {:?}", run.outcome)
    };
    assert!(result.to_string().contains("MCP eras"), "{result}");
    let evs = snapshot(&sink);
    let methods: Vec<String> = sent(&evs).iter().filter_map(|f| f.class.method.clone()).collect();
    assert!(methods.iter().any(|m| m == "tasks/get"), "{methods:?}");
    assert!(methods.iter().any(|m| m == "tasks/result"), "{methods:?}");
}

fn mcpscope(args: &[&str], spec: &mcpscope_core::transport::process::ServerSpec) -> std::process::Output {
    crate::support::mcpscope_command()
        .args(args)
        .arg("--")
        .arg(&spec.program)
        .args(&spec.args)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn cli_call_and_doctor_in_both_eras() {
    // call --era auto: says which era and why, on stderr.
    let out = mcpscope(
        &["call", "--era", "auto", "--method", "tools/list"],
        &py_modern_server(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("era: modern 2026-07-28 (auto: server/discover answered"));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["resultType"], "complete");

    let out = mcpscope(&["call", "--era", "auto", "--method", "tools/list"], &everything());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("era: legacy 2025-11-25 (auto: -32601 (Method not found) to server/discover"),
        "{}",
        text(&out.stderr)
    );

    // --protocol-version 2026-07-28 implies the modern era.
    let out = mcpscope(
        &[
            "call",
            "--protocol-version",
            "2026-07-28",
            "--tool-name",
            "add",
            "--tool-arg",
            "a=1",
            "--tool-arg",
            "b=2",
        ],
        &py_modern_server(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("\"resultType\": \"complete\""));

    // A multi round-trip call answered non-interactively: roots, then an accepted elicitation.
    let out = mcpscope(
        &[
            "call",
            "--era",
            "modern",
            "--tool-name",
            "setup_project",
            "--tool-arg",
            "name=demo",
            "--root",
            "file:///srv/demo",
            "--elicit-accept",
            r#"{"confirm":true}"#,
        ],
        &py_modern_server(),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("answered input_required (roots/list [roots]), with requestState"),
        "{err}"
    );
    assert!(
        err.contains("elicitation/create [confirm]: Create project demo in file:///srv/demo?"),
        "{err}"
    );
    assert!(err.contains("one conversation with #3, 3 round(s)"), "{err}");
    assert!(text(&out.stdout).contains("action=accept"), "{}", text(&out.stdout));

    // Declining is the default; sampling is refused unless --sample-reply.
    let out = mcpscope(
        &[
            "call",
            "--era",
            "modern",
            "--tool-name",
            "setup_project",
            "--tool-arg",
            "name=x",
            "--root",
            "/tmp",
        ],
        &py_modern_server(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("action=decline"));
    let out = mcpscope(
        &[
            "call",
            "--era",
            "modern",
            "--tool-name",
            "summarize",
            "--tool-arg",
            "text=abc",
        ],
        &py_modern_server(),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("pass --sample-reply TEXT"),
        "{}",
        text(&out.stderr)
    );
    let out = mcpscope(
        &[
            "call",
            "--era",
            "modern",
            "--tool-name",
            "summarize",
            "--tool-arg",
            "text=abc",
            "--sample-reply",
            "a short one",
        ],
        &py_modern_server(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("summary: a short one (model mcpscope)"));

    // A real -32022 from the SDK, retried, said on stderr.
    let out = mcpscope(
        &[
            "call",
            "--era",
            "modern",
            "--protocol-version",
            "2099-01-01",
            "--method",
            "tools/list",
        ],
        &py_server(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("-32022"), "{}", text(&out.stderr));

    // call --task against server-everything (experimental tasks, legacy era).
    let out = mcpscope(
        &[
            "call",
            "--task",
            "--tool-name",
            "simulate-research-query",
            "--tool-arg",
            "topic=eras",
        ],
        &everything(),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains(": working"), "{err}");
    assert!(
        err.contains("tasks (2025-11-25, experimental) ended completed"),
        "{err}"
    );
    assert!(text(&out.stdout).contains("eras"));

    // doctor says which era it found and why.
    // A generous answer time: the enforcement probe is judged by whether an
    // answer comes, and a busy test machine can take seconds to start Python.
    let out = mcpscope(&["doctor", "--timeout-ms", "30000"], &py_modern_server());
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert!(
        report.contains("[info] Era: modern 2026-07-28 (--era auto)"),
        "{report}"
    );
    assert!(report.contains("Envelope enforced"), "{report}");
    let out = mcpscope(&["doctor", "--no-enforcement-probe"], &everything());
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert!(
        report.contains("[info] Era: legacy 2025-11-25 (--era auto)"),
        "{report}"
    );
    assert!(
        report.contains("-32601 (Method not found) to server/discover: legacy server"),
        "{report}"
    );
}
