//! The rest of MCP 2025-11-25 as a client, observed for real against
//! `@modelcontextprotocol/server-everything` over stdio and Streamable HTTP:
//! prompts, resources and templates, subscriptions, logging, progress,
//! cancellation, completions, pagination, and list_changed re-fetching in the app.

use crate::http::HttpServer;
use crate::support::*;
use mcpscope_app::inspection::Inspection;
use mcpscope_core::client::Client;
use mcpscope_core::protocol::handshake::HandshakeOptions;
use mcpscope_core::protocol::uri_template::UriTemplate;
use mcpscope_core::transport::event::Event;
use mcpscope_core::transport::target::{HttpTarget, Target};
use mcpscope_core::wire::frame::{Direction, Frame};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::{Duration, Instant};

fn connect(target: Target) -> (Client, Sink) {
    crate::support::connect(target, quick())
}

fn ok(c: &mut Client, method: &str, params: Value) -> Value {
    let r = c
        .request(method, Some(params), T)
        .unwrap_or_else(|e| panic!("{method}: {e}"));
    r.outcome.unwrap_or_else(|e| panic!("{method} refused: {e}"))
}

/// Pumps the client until a received frame satisfies `pred`.
fn wait_frame(c: &mut Client, sink: &Sink, what: &str, pred: impl Fn(&Frame, &Value) -> bool) -> Frame {
    let deadline = Instant::now() + T;
    loop {
        if let Some(f) = received(&snapshot(sink))
            .into_iter()
            .find(|f| f.json().is_some_and(|v| pred(f, &v)))
        {
            return f.clone();
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        c.pump_for(Duration::from_millis(50));
    }
}

fn method_is(f: &Frame, m: &str) -> bool {
    f.class.method.as_deref() == Some(m)
}

fn exercise(target: Target) {
    let (mut c, sink) = connect(target);
    c.wait_started(T).unwrap();
    let hs = c
        .initialize(&HandshakeOptions::default(), T)
        .unwrap()
        .expect("initialize accepted");
    let caps = hs.capabilities.clone().unwrap();
    for cap in ["prompts", "resources", "tools", "logging", "completions"] {
        assert!(caps.get(cap).is_some(), "server-everything advertises {cap}: {caps}");
    }

    // Prompts: list, get with arguments, messages back.
    let prompts = ok(&mut c, "prompts/list", json!({}));
    let names: Vec<&str> = prompts["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(names.contains(&"args-prompt"), "{names:?}");
    let got = ok(
        &mut c,
        "prompts/get",
        json!({"name": "args-prompt", "arguments": {"city": "Paris", "state": "IDF"}}),
    );
    let text = got["messages"][0]["content"]["text"].as_str().unwrap_or_default();
    assert!(text.contains("Paris, IDF"), "{got}");

    // Completions for a prompt argument.
    let done = ok(
        &mut c,
        "completion/complete",
        json!({"ref": {"type": "ref/resource", "uri": "demo://resource/dynamic/text/{resourceId}"},
               "argument": {"name": "resourceId", "value": "1"}}),
    );
    assert!(done["completion"]["values"].is_array(), "{done}");

    // Resources: list, read, templates expanded with RFC 6570.
    let list = ok(&mut c, "resources/list", json!({}));
    let first = list["resources"][0]["uri"].as_str().expect("a resource").to_owned();
    let read = ok(&mut c, "resources/read", json!({ "uri": first }));
    assert!(read["contents"][0]["uri"].is_string(), "{read}");
    let templates = ok(&mut c, "resources/templates/list", json!({}));
    let template = templates["resourceTemplates"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["uriTemplate"].as_str())
        .find(|t| t.contains("text"))
        .expect("a text template")
        .to_owned();
    let tpl = UriTemplate::parse(&template).unwrap();
    let vars: Vec<String> = tpl.variables().into_iter().map(|v| v.name).collect();
    let values: HashMap<String, Value> = vars.iter().map(|v| (v.clone(), json!("3"))).collect();
    let uri = tpl.expand(&values);
    let read = ok(&mut c, "resources/read", json!({ "uri": uri }));
    assert_eq!(read["contents"][0]["uri"], json!(uri), "{read}");

    // Subscriptions: updates arrive for the subscribed URI.
    ok(&mut c, "resources/subscribe", json!({ "uri": first }));
    ok(
        &mut c,
        "tools/call",
        json!({"name": "toggle-subscriber-updates", "arguments": {}}),
    );
    wait_frame(&mut c, &sink, "notifications/resources/updated", |f, v| {
        method_is(f, "notifications/resources/updated") && v["params"]["uri"] == json!(first)
    });
    ok(&mut c, "resources/unsubscribe", json!({ "uri": first }));

    // Logging: setLevel, then the server's log messages.
    ok(&mut c, "logging/setLevel", json!({"level": "debug"}));
    ok(
        &mut c,
        "tools/call",
        json!({"name": "toggle-simulated-logging", "arguments": {}}),
    );
    let log = wait_frame(&mut c, &sink, "notifications/message", |f, _| {
        method_is(f, "notifications/message")
    });
    assert!(log.json().unwrap()["params"]["level"].is_string());

    // Progress: notifications for our token before the result.
    let done = ok(
        &mut c,
        "tools/call",
        json!({"name": "trigger-long-running-operation", "arguments": {"duration": 1, "steps": 3},
               "_meta": {"progressToken": "p-1"}}),
    );
    assert!(done["content"].is_array());
    let progress: Vec<Value> = received(&snapshot(&sink))
        .into_iter()
        .filter(|f| method_is(f, "notifications/progress"))
        .filter_map(|f| f.json())
        .filter(|v| v["params"]["progressToken"] == "p-1")
        .collect();
    assert_eq!(progress.len(), 3, "one per step: {progress:?}");
    assert_eq!(progress[2]["params"]["progress"], 3);

    // Cancellation: notifications/cancelled names the request; no result follows.
    let id = c.session().request_with(
        None,
        "tools/call",
        Some(
            json!({"name": "trigger-long-running-operation", "arguments": {"duration": 6, "steps": 6},
                    "_meta": {"progressToken": "p-2"}}),
        ),
        Some(T),
    );
    wait_frame(&mut c, &sink, "the first progress of p-2", |f, v| {
        method_is(f, "notifications/progress") && v["params"]["progressToken"] == "p-2"
    });
    c.session().cancel(id.clone(), Some("test".into()));
    c.pump_for(Duration::from_millis(1500));
    let events = snapshot(&sink);
    let cancel = sent(&events)
        .into_iter()
        .find(|f| method_is(f, "notifications/cancelled"))
        .expect("notifications/cancelled sent");
    assert_eq!(cancel.json().unwrap()["params"]["requestId"], id.to_json());
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Cancelled { id: x, .. } if *x == id))
    );
    c.close();
}

#[test]
fn resources_prompts_subscriptions_logging_progress_over_stdio() {
    exercise(Target::Stdio(everything()));
}

#[test]
fn resources_prompts_subscriptions_logging_progress_over_streamable_http() {
    let server = HttpServer::start("streamableHttp");
    exercise(Target::Http(HttpTarget::streamable(server.url("/mcp"))));
}

/// The app's engine: a list_changed burst causes one re-fetch, said on the timeline.
fn list_changed_refetch(target: Target) {
    let mut i = Inspection::launch(target, "2025-11-25", None);
    // Settled: a re-fetch was made, every tools/list is answered, and no
    // re-fetch is waiting for its burst to end.
    drain_until(&mut i, "a settled re-fetch after tools/list_changed", |i| {
        let lists: Vec<_> = i
            .model
            .store
            .iter()
            .filter(|r| r.lane() == mcpscope_core::timeline::store::Lane::Out && r.method() == Some("tools/list"))
            .filter_map(|r| r.id())
            .collect();
        let refetches = i
            .model
            .store
            .iter()
            .filter(|r| {
                r.lane() == mcpscope_core::timeline::store::Lane::Meta && r.text().contains("re-fetches tools/list")
            })
            .count();
        // The note is written when the driver decides; the request's frame
        // comes back from the session thread a moment later.
        refetches >= 1
            && lists.len() == 1 + refetches
            && lists.iter().all(|id| i.model.response_to(id).is_some())
            && i.next_wakeup().is_none()
    });
    let store = &i.model.store;
    let notes = store
        .iter()
        .filter(|r| {
            r.lane() == mcpscope_core::timeline::store::Lane::Meta && r.text().contains("re-fetches tools/list")
        })
        .count();
    let changed = store
        .iter()
        .filter(|r| {
            r.lane() == mcpscope_core::timeline::store::Lane::In
                && r.method() == Some("notifications/tools/list_changed")
        })
        .count();
    let lists = store
        .iter()
        .filter(|r| r.lane() == mcpscope_core::timeline::store::Lane::Out && r.method() == Some("tools/list"))
        .count();
    assert!(changed >= 1);
    assert!(
        notes >= 1 && notes <= changed,
        "{notes} re-fetches for {changed} notifications"
    );
    assert_eq!(lists, 1 + notes, "the first list plus one per re-fetch");
    // Tools registered after initialize (they need our elicitation capability) are listed.
    let (_, tools) = i.model.latest_result("tools/list").unwrap();
    assert!(
        tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "trigger-elicitation-request"),
        "{tools}"
    );
    let _ = Direction::Out;
}

#[test]
fn list_changed_refetches_once_over_stdio() {
    list_changed_refetch(Target::Stdio(everything()));
}

/// The GET stream opens before `notifications/initialized` is posted, so the
/// list_changed server-everything sends the moment it sees `initialized`
/// reaches us over HTTP too.
#[test]
fn list_changed_refetches_once_over_streamable_http() {
    let server = HttpServer::start("streamableHttp");
    list_changed_refetch(Target::Http(HttpTarget::streamable(server.url("/mcp"))));
}

#[test]
fn paginated_tool_lists_are_followed_to_the_end_in_the_composer() {
    use mcpscope_app::composer::ComposerPanel;
    use mcpscope_app::inspection::Outgoing;
    let mut i = Inspection::launch(Target::Stdio(faulty("paginate")), "2025-11-25", None);
    let mut composer = ComposerPanel::default();
    let deadline = Instant::now() + T;
    let mut pages_sent = 0;
    loop {
        i.drain();
        composer.sync(&i.model);
        if composer.lists.tools.len() == 5 && composer.lists.next_cursor.is_empty() {
            break;
        }
        if Instant::now() >= deadline {
            for r in i.model.store.iter() {
                eprintln!("ROW {}", r.text());
            }
            panic!(
                "pages not followed: {:?} {:?} sent {pages_sent}",
                composer.lists.tools.len(),
                composer.lists.next_cursor
            );
        }
        let expected = 2 * (pages_sent + 1);
        if composer.lists.tools.len() == expected.min(5)
            && let Some(cursor) = composer.lists.next_cursor.get("tools/list").cloned()
        {
            // What the composer's "Load page" button sends.
            i.send(Outgoing::Request {
                method: "tools/list".into(),
                params: Some(json!({ "cursor": cursor })),
                id: None,
            });
            pages_sent += 1;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let names: Vec<&str> = composer.lists.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["echo0", "echo1", "echo2", "echo3", "echo4"]);
    assert_eq!(composer.lists.pages.get("tools/list"), Some(&3));
    // Listing again without a cursor starts over.
    i.send(Outgoing::Request {
        method: "tools/list".into(),
        params: None,
        id: None,
    });
    while composer.lists.pages.get("tools/list") != Some(&1) {
        assert!(Instant::now() < deadline + T, "a fresh list did not start over");
        i.drain();
        composer.sync(&i.model);
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(composer.lists.tools.len(), 2);
}
