//! The desktop app's engine in both protocol eras: auto-detection against a
//! modern (Python SDK, 2026-07-28) and a legacy (server-everything) server,
//! the -32022 retry on the timeline, requests wrapped in the `_meta`
//! envelope, and a multi round-trip request answered (roots by the app,
//! elicitation by the user) and grouped as one conversation.

use crate::support::*;
use mcpscope_app::inspection::{Inspection, Outgoing};
use mcpscope_core::driver::EraState;
use mcpscope_core::protocol::era::EraChoice;
use mcpscope_core::timeline::store::Lane;
use mcpscope_core::transport::target::Target;
use serde_json::json;
use std::time::{Duration, Instant};

fn notes(i: &Inspection) -> Vec<String> {
    i.model
        .store
        .iter()
        .filter(|r| r.lane() == Lane::Meta)
        .map(|r| r.text().into_owned())
        .collect()
}

#[test]
fn auto_finds_modern_for_the_python_sdk_and_wraps_requests() {
    let mut i = Inspection::launch_with_era(Target::Stdio(py_modern_server()), "2025-11-25", EraChoice::Auto, None);
    drain_until(&mut i, "the modern era and tools/list", |i| {
        i.era().state == EraState::Modern && i.model.latest_results.contains_key("tools/list")
    });
    assert!(
        i.era().reason.contains("server/discover answered"),
        "{}",
        i.era().reason
    );
    assert!(
        i.era()
            .discovery
            .as_ref()
            .unwrap()
            .supported_versions
            .contains(&"2026-07-28".to_owned())
    );
    assert!(
        i.model.handshake.initialize_row.is_none(),
        "no initialize in the modern era"
    );
    assert!(
        notes(&i).iter().any(|n| n.starts_with("era: modern")),
        "{:?}",
        notes(&i)
    );
    let list = i
        .model
        .store
        .iter()
        .find(|r| r.lane() == Lane::Out && r.method() == Some("tools/list"))
        .unwrap();
    assert!(
        list.text().contains("io.modelcontextprotocol/protocolVersion"),
        "{}",
        list.text()
    );
    // What the composer sends is wrapped too.
    let id = i
        .send(Outgoing::Request {
            method: "tools/call".into(),
            params: Some(json!({"name": "add", "arguments": {"a": 2, "b": 3}})),
            id: None,
        })
        .unwrap();
    drain_until(&mut i, "the add result", |i| i.model.response_to(&id).is_some());
    let row = i.model.store.get(i.model.response_to(&id).unwrap()).unwrap();
    assert!(
        row.text().contains("\"5\"") || row.text().contains(":5"),
        "{}",
        row.text()
    );
}

#[test]
fn auto_falls_back_to_initialize_for_a_legacy_server() {
    let mut i = Inspection::launch_with_era(Target::Stdio(everything()), "2025-11-25", EraChoice::Auto, None);
    drain_until(&mut i, "the legacy handshake", |i| {
        i.era().state == EraState::Legacy && i.model.handshake.initialized_row.is_some()
    });
    assert!(i.era().reason.contains("-32601"), "{}", i.era().reason);
    assert!(
        notes(&i).iter().any(|n| n.contains("falling back to initialize")),
        "{:?}",
        notes(&i)
    );
}

#[test]
fn an_unsupported_modern_version_is_retried_and_said_on_the_timeline() {
    let mut i = Inspection::launch_with_era(Target::Stdio(py_modern_server()), "2099-01-01", EraChoice::Modern, None);
    drain_until(&mut i, "the modern era after a retry", |i| {
        i.era().state == EraState::Modern && i.era().discovery.is_some()
    });
    let n = notes(&i);
    assert!(
        n.iter()
            .any(|t| t.contains("-32022") && t.contains("retrying with 2026-07-28")),
        "{n:?}"
    );
    let discovers = i
        .model
        .store
        .iter()
        .filter(|r| r.lane() == Lane::Out && r.method() == Some("server/discover"))
        .count();
    assert_eq!(discovers, 2);
}

#[test]
fn a_multi_round_trip_request_is_answered_and_grouped_as_one_conversation() {
    let mut i = Inspection::launch_with_era(Target::Stdio(py_modern_server()), "2026-07-28", EraChoice::Modern, None);
    drain_until(&mut i, "the modern era", |i| i.era().state == EraState::Modern);
    let first = i
        .send(Outgoing::Request {
            method: "tools/call".into(),
            params: Some(json!({"name": "setup_project", "arguments": {"name": "demo"}})),
            id: None,
        })
        .unwrap();
    // Round 1 asks for roots: the app answers them itself and retries.
    // Round 2 asks for a confirmation: that waits for the user.
    drain_until(&mut i, "the elicitation of round 2", |i| {
        i.questions().iter().any(|r| r.method == "elicitation/create")
    });
    let ask = i.questions()[0].clone();
    assert!(
        matches!(ask.origin, mcpscope_core::driver::QuestionOrigin::Input { .. }),
        "an input of the chain, not a server request"
    );
    assert!(ask.params["message"].as_str().unwrap().contains("Create project demo"));
    i.answer(ask.id, Ok(json!({"action": "accept", "content": {"confirm": true}})));
    drain_until(&mut i, "the final result", |i| {
        let head = i.model.chain_head(&first);
        head != first && i.model.response_to(&head).is_some()
    });
    let head = i.model.chain_head(&first);
    let answer = i.model.store.get(i.model.response_to(&head).unwrap()).unwrap();
    assert!(answer.text().contains("action=accept"), "{}", answer.text());
    assert!(answer.text().contains("\\\"confirm\\\": true"), "{}", answer.text());
    // Three requests and their three answers carry the same conversation number.
    let conv: Vec<usize> = i.model.conversation_rows.values().copied().collect();
    assert_eq!(conv.len(), 6, "{:?}", i.model.conversation_rows);
    assert!(conv.iter().all(|&n| n == 1));
    let retries = notes(&i)
        .iter()
        .filter(|n| n.starts_with("conversation 1:") && n.contains("sent again"))
        .count();
    assert_eq!(retries, 2);
    // The retries echo the state and use new ids (lint agrees).
    let events = mcpscope_core::record::capture::load(i.capture_path.as_ref().unwrap())
        .unwrap()
        .events;
    let findings = mcpscope_core::analysis::lint::lint(&events, &Default::default());
    assert!(!mcpscope_core::analysis::lint::has_errors(&findings), "{findings:?}");
}

/// The Python SDK's Streamable HTTP server in the modern era checks the
/// standard headers (`MCP-Protocol-Version` equal to `_meta`, `Mcp-Method`,
/// `Mcp-Name`) and refuses a mismatch with -32020.
#[test]
fn modern_era_over_streamable_http_sends_the_standard_headers() {
    use std::process::{Command, Stdio};
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let spec = py_modern_server();
    // Killed however the test ends, from the start (the wait below can fail).
    let mut child = crate::support::KilledOnDrop(
        Command::new(&spec.program)
            .args(&spec.args)
            .args(["--http", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + T;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the Python server did not listen");
        if let Ok(Some(status)) = child.0.try_wait() {
            panic!("the Python server exited: {status}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _guard = child;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let mut i = Inspection::launch_with_era(
        Target::Http(mcpscope_core::transport::target::HttpTarget::streamable(url)),
        "2026-07-28",
        EraChoice::Auto,
        None,
    );
    drain_until(&mut i, "the modern era over HTTP", |i| {
        i.era().state == EraState::Modern
    });
    assert!(i.era().discovery.is_some(), "{}", i.era().reason);
    let id = i
        .send(Outgoing::Request {
            method: "tools/call".into(),
            params: Some(json!({"name": "add", "arguments": {"a": 20, "b": 22}})),
            id: None,
        })
        .unwrap();
    drain_until(&mut i, "the add result over HTTP", |i| {
        i.model.response_to(&id).is_some()
    });
    let answer = i.model.store.get(i.model.response_to(&id).unwrap()).unwrap();
    assert!(answer.text().contains("42"), "{}", answer.text());
    assert!(!answer.text().contains("-32020"), "headers accepted: {}", answer.text());
}

/// The composer runs a tool as a task (2025-11-25 experimental form against
/// server-everything): the call returns a task, tasks/get is polled until it
/// ends, tasks/result is fetched and shown.
#[test]
fn the_composer_runs_a_tool_as_a_task_and_polls_it_to_the_end() {
    use mcpscope_app::composer::ComposerPanel;
    let mut i = Inspection::launch(Target::Stdio(everything()), "2025-11-25", None);
    let mut c = ComposerPanel::default();
    drain_until(&mut i, "the task tool", |i| {
        i.model
            .latest_result("tools/list")
            .is_some_and(|(_, r)| r.to_string().contains("simulate-research-query"))
    });
    c.sync(&i.model);
    c.task_flavor = i.task_flavor();
    assert_eq!(
        c.task_flavor,
        Some(mcpscope_core::protocol::tasks::Flavor::Experimental)
    );
    c.choose_tool("simulate-research-query");
    c.tool.as_task = true;
    c.tool.args_text = r#"{"topic": "MCP eras"}"#.into();
    c.tool.args_text_changed();
    let params = c.tool.call_params(&c.lists).unwrap();
    let id = i.run_task(params.clone()).unwrap();
    c.task_started(params, id.clone());
    drain_until(&mut i, "the task's end", |i| !i.is_pending(&id));
    let run = i.task(&id).unwrap();
    let task = run.task.as_ref().unwrap();
    assert_eq!(task.status, mcpscope_core::protocol::tasks::Status::Completed);
    assert!(run.transitions.len() >= 2, "{:?}", run.transitions);
    let result = i
        .model
        .store
        .get(i.model.response_to(&i.current_id(&id)).unwrap())
        .unwrap();
    assert!(result.text().contains("MCP eras"), "{}", result.text());
    let sent: Vec<String> = i
        .model
        .store
        .iter()
        .filter(|r| r.lane() == Lane::Out)
        .filter_map(|r| r.method().map(str::to_owned))
        .collect();
    assert!(sent.iter().any(|m| m == "tasks/get"), "{sent:?}");
    assert!(sent.iter().any(|m| m == "tasks/result"), "{sent:?}");
}

/// subscriptions/listen (2026-07-28): the acknowledgement and the
/// notifications tagged with the subscription are shown as one stream, and
/// the app re-fetches the tool list the stream says changed.
#[test]
fn a_listen_stream_is_shown_as_one_subscription() {
    use mcpscope_app::composer::ComposerPanel;
    let mut i = Inspection::launch_with_era(Target::Stdio(py_modern_server()), "2026-07-28", EraChoice::Modern, None);
    drain_until(&mut i, "the modern era and tools", |i| {
        i.era().state == EraState::Modern && i.model.latest_results.contains_key("tools/list")
    });
    let mut c = ComposerPanel::default();
    let listen = i
        .send(Outgoing::Request {
            method: "subscriptions/listen".into(),
            params: Some(c.listen.filter.listen_params()),
            id: None,
        })
        .unwrap();
    drain_until(&mut i, "the acknowledgement", |i| {
        i.model
            .store
            .iter()
            .any(|r| r.method() == Some("notifications/subscriptions/acknowledged"))
    });
    let touch = i
        .send(Outgoing::Request {
            method: "tools/call".into(),
            params: Some(json!({"name": "touch_tools", "arguments": {}})),
            id: None,
        })
        .unwrap();
    drain_until(&mut i, "touch_tools and the re-fetch", |i| {
        i.model.response_to(&touch).is_some()
            && i.model
                .store
                .iter()
                .any(|r| r.lane() == Lane::Meta && r.text().contains("re-fetches tools/list"))
    });
    c.listen.sync(&i.model);
    assert_eq!(c.listen.subscriptions.len(), 1, "{:?}", c.listen.subscriptions);
    let sub = &c.listen.subscriptions[0];
    assert_eq!(sub.id, listen);
    assert!(sub.acknowledged.is_some());
    let methods: Vec<&str> = sub
        .notifications
        .iter()
        .filter_map(|&r| i.model.store.get(r as usize).and_then(|r| r.method()))
        .collect();
    assert!(methods.contains(&"notifications/tools/list_changed"), "{methods:?}");
}

/// A -32022 on an ordinary request in the middle of a modern session is
/// answered by sending it again (new id) under a version both speak; the
/// composer follows the re-send to its answer.
#[test]
fn a_mid_session_unsupported_version_is_retried_with_a_mutual_one() {
    let mut i = Inspection::launch_with_era(Target::Stdio(py_modern_server()), "2026-07-28", EraChoice::Modern, None);
    drain_until(&mut i, "the modern era", |i| i.era().state == EraState::Modern);
    // As if the user typed a version the server does not speak.
    i.set_modern_version("2099-01-01");
    let id = i
        .send(Outgoing::Request {
            method: "tools/call".into(),
            params: Some(json!({"name": "add", "arguments": {"a": 1, "b": 2}})),
            id: None,
        })
        .unwrap();
    drain_until(&mut i, "the re-sent call's answer", |i| {
        let head = i.model.chain_head(&id);
        head != id && i.model.response_to(&head).is_some()
    });
    let first = i.model.store.get(i.model.response_to(&id).unwrap()).unwrap();
    assert!(first.text().contains("-32022"), "{}", first.text());
    let answer = i
        .model
        .store
        .get(i.model.response_to(&i.model.chain_head(&id)).unwrap())
        .unwrap();
    assert!(answer.text().contains('3'), "{}", answer.text());
    assert_eq!(i.modern_version(), "2026-07-28");
    assert!(
        notes(&i)
            .iter()
            .any(|n| n.starts_with("tools/call was refused with -32022") && n.contains("retrying with 2026-07-28")),
        "{:?}",
        notes(&i)
    );
}

/// The 2026-07-28 tasks extension (no SDK serves it yet, so a small
/// standard-library server does): the call answers with a task, tasks/get is
/// polled until the result comes inline; a second task is cancelled.
#[test]
fn the_tasks_extension_is_polled_and_can_be_cancelled() {
    use mcpscope_app::composer::ComposerPanel;
    use mcpscope_core::transport::process::ServerSpec;
    let spec = ServerSpec::new(
        "python3",
        [repo()
            .join("tests/servers/modern_tasks_server.py")
            .display()
            .to_string()],
    );
    let mut i = Inspection::launch_with_era(Target::Stdio(spec), "2026-07-28", EraChoice::Auto, None);
    drain_until(&mut i, "the modern era and the tool", |i| {
        i.era().state == EraState::Modern && i.model.latest_results.contains_key("tools/list")
    });
    let mut c = ComposerPanel::default();
    c.sync(&i.model);
    c.task_flavor = i.task_flavor();
    assert_eq!(c.task_flavor, Some(mcpscope_core::protocol::tasks::Flavor::Extension));
    c.choose_tool("slow_sum");
    c.tool.as_task = true;
    c.tool.args_text = r#"{"a": 20, "b": 22}"#.into();
    c.tool.args_text_changed();
    let run = |i: &mut Inspection, c: &mut ComposerPanel, cancel: bool| -> mcpscope_core::wire::message::RequestId {
        let params = c.tool.call_params(&c.lists).unwrap();
        let id = i.run_task(params.clone()).unwrap();
        c.task_started(params, id.clone());
        if cancel {
            drain_until(i, "the task", |i| i.task(&id).is_some_and(|r| r.task.is_some()));
            i.cancel_task(&id);
        }
        drain_until(i, "the task's end", |i| !i.is_pending(&id));
        id
    };
    let id = run(&mut i, &mut c, false);
    let t = i.task(&id).unwrap().clone();
    assert_eq!(
        t.task.as_ref().unwrap().status,
        mcpscope_core::protocol::tasks::Status::Completed
    );
    assert!(
        t.transitions.iter().any(|s| s.status_line().contains("step 1 of 3")),
        "{:?}",
        t.transitions
    );
    let row = i
        .model
        .store
        .get(i.model.response_to(&i.current_id(&id)).unwrap())
        .unwrap();
    assert!(row.text().contains("sum is 42"), "{}", row.text());
    // The call itself carried no task param: in the extension the server decides.
    let call_row = i
        .model
        .store
        .iter()
        .find(|r| r.lane() == Lane::Out && r.method() == Some("tools/call"))
        .unwrap();
    assert!(!call_row.text().contains("\"task\""), "{}", call_row.text());

    let id = run(&mut i, &mut c, true);
    let t = i.task(&id).unwrap();
    assert!(t.cancelled);
    assert_eq!(
        t.task.as_ref().unwrap().status,
        mcpscope_core::protocol::tasks::Status::Cancelled
    );
}

/// Issue #27 §1: the session's owner runs on a thread of its own, so a
/// window that draws nothing (minimised, hidden) does not stop the session.
/// The UI side is not drained for 10 s while a server floods notifications
/// and pings on a timetable: every ping is answered in time, and once the
/// UI drains again every notification is on the timeline.
#[test]
fn a_window_that_draws_nothing_for_10_s_does_not_stop_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let python = repo().join("tests/peers/.venv/bin/python");
    let server = mcpscope_core::transport::process::ServerSpec::new(
        python.display().to_string(),
        [
            repo().join("tests/servers/flood_server.py").display().to_string(),
            report.display().to_string(),
            "10".into(),
        ],
    );
    let mut i = Inspection::launch_with_era(Target::Stdio(server), "2025-11-25", EraChoice::Legacy, None);
    // Nothing drains the UI's side: the owner's thread alone serves the session.
    let deadline = Instant::now() + Duration::from_secs(40);
    while !report.exists() {
        assert!(Instant::now() < deadline, "the flood server wrote no report");
        std::thread::sleep(Duration::from_millis(100));
    }
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let pings = r["pings"].as_u64().unwrap();
    assert!(pings >= 90, "pings kept their timetable: {r}");
    assert_eq!(
        r["answered"].as_u64(),
        Some(pings),
        "every ping answered within 5 s: {r}"
    );
    let written = r["notifications"].as_u64().unwrap() as usize;
    assert!(written >= 40_000, "{r}");
    drain_until(&mut i, "every notification on the timeline", |i| {
        i.model
            .store
            .iter()
            .filter(|row| row.method() == Some("notifications/message"))
            .count()
            == written
    });
}
