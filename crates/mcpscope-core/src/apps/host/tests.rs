use super::*;

const T0: Duration = Duration::ZERO;

fn tools() -> Vec<Value> {
    vec![
        json!({"name":"show_counter","_meta":{"ui":{"resourceUri":"ui://t/c.html"}}}),
        json!({"name":"increment","_meta":{"ui":{"resourceUri":"ui://t/c.html","visibility":["app"]}}}),
        json!({"name":"secret_model_only","_meta":{"ui":{"visibility":["model"]}}}),
    ]
}

fn host() -> AppHost {
    let mut s = HostSetup::new("show_counter", tools()[0].clone(), "<!DOCTYPE html>".into());
    s.tools = tools();
    s.call_id = Some(json!(7));
    AppHost::new(s)
}

fn send(h: &mut AppHost, v: Value) -> Option<String> {
    h.view_sent(v.to_string().as_bytes(), T0)
}

fn to_view(effects: &[Effect]) -> Vec<Value> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::ToView(v) => Some(v.clone()),
            _ => None,
        })
        .collect()
}

/// Through the handshake; the effects so far are dropped.
fn ready() -> AppHost {
    let mut h = host();
    send(
        &mut h,
        json!({"jsonrpc":"2.0","method":"ui/notifications/sandbox-proxy-ready","params":{}}),
    );
    send(
        &mut h,
        json!({"jsonrpc":"2.0","id":1,"method":"ui/initialize","params":{"protocolVersion":"2026-01-26",
                "appInfo":{"name":"c","version":"1"},"appCapabilities":{"availableDisplayModes":["inline","fullscreen"]}}}),
    );
    send(
        &mut h,
        json!({"jsonrpc":"2.0","method":"ui/notifications/initialized","params":{}}),
    );
    h.take_effects();
    h
}

#[test]
fn the_handshake_and_nothing_before_initialized() {
    let mut h = host();
    h.tool_input(json!({"start": 3}));
    h.tool_result(json!({"content":[],"structuredContent":{"value":3}}));
    assert!(h.take_effects().is_empty(), "nothing before the sandbox is ready");
    send(
        &mut h,
        json!({"jsonrpc":"2.0","method":"ui/notifications/sandbox-proxy-ready","params":{}}),
    );
    let e = h.take_effects();
    assert!(matches!(&e[..], [Effect::ToSandbox(v)] if v["method"] == "ui/notifications/sandbox-resource-ready"));
    let note = send(
        &mut h,
        json!({"jsonrpc":"2.0","id":"a","method":"ui/initialize","params":{"protocolVersion":"2026-01-26","appInfo":{"name":"c","version":"1"},"appCapabilities":{}}}),
    );
    assert_eq!(note, None);
    let e = to_view(&h.take_effects());
    assert_eq!(e.len(), 1, "only the answer: {e:?}");
    let r = &e[0]["result"];
    assert_eq!(e[0]["id"], "a");
    assert_eq!(r["protocolVersion"], UI_PROTOCOL_VERSION);
    assert_eq!(r["hostContext"]["toolInfo"]["id"], 7);
    assert_eq!(r["hostContext"]["displayMode"], "inline");
    assert_eq!(
        r["hostContext"]["availableDisplayModes"],
        json!(["inline", "fullscreen"])
    );
    for key in ["theme", "containerDimensions", "locale", "timeZone", "platform"] {
        assert!(r["hostContext"].get(key).is_some(), "{key}");
    }
    assert!(r["hostCapabilities"].get("sampling").is_none());
    send(&mut h, json!({"jsonrpc":"2.0","method":"ui/notifications/initialized"}));
    let e = to_view(&h.take_effects());
    let methods: Vec<&str> = e.iter().map(|m| m["method"].as_str().unwrap()).collect();
    assert_eq!(methods, ["ui/notifications/tool-input", "ui/notifications/tool-result"]);
    assert_eq!(h.phase(), Phase::Ready);
}

#[test]
fn partial_input_stops_after_the_whole_input_and_results_come_once() {
    let mut h = ready();
    h.tool_input_partial(json!({"start": 1}));
    h.tool_input(json!({"start": 3}));
    h.tool_input_partial(json!({"start": 4}));
    h.tool_input(json!({"start": 5}));
    h.tool_result(json!({"content": []}));
    h.tool_cancelled(None);
    let methods: Vec<String> = to_view(&h.take_effects())
        .iter()
        .map(|m| m["method"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        methods,
        [
            "ui/notifications/tool-input-partial",
            "ui/notifications/tool-input",
            "ui/notifications/tool-result"
        ]
    );
}

#[test]
fn a_views_tool_call_is_proxied_only_to_app_tools() {
    let mut h = ready();
    assert_eq!(
        send(
            &mut h,
            json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"increment","arguments":{"n":3}}})
        ),
        None
    );
    let e = h.take_effects();
    let Effect::ToServer { ticket, method, params } = &e[0] else {
        panic!("{e:?}")
    };
    assert_eq!(method, "tools/call");
    assert_eq!(params.as_ref().unwrap()["arguments"]["n"], 3);
    h.server_answered(*ticket, Ok(json!({"content":[],"structuredContent":{"value":4}})));
    let e = to_view(&h.take_effects());
    assert_eq!(e[0]["id"], 5);
    assert_eq!(e[0]["result"]["structuredContent"]["value"], 4);

    let note = send(
        &mut h,
        json!({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"secret_model_only"}}),
    );
    assert!(note.unwrap().contains("model-only"));
    let e = to_view(&h.take_effects());
    assert_eq!(e[0]["error"]["code"], -32602);
    let note = send(
        &mut h,
        json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"nope"}}),
    );
    assert!(note.unwrap().contains("not one of this server's tools"));
    assert!(to_view(&h.take_effects())[0]["error"].is_object());
}

#[test]
fn display_modes_stay_within_what_both_declared() {
    let mut h = ready();
    send(
        &mut h,
        json!({"jsonrpc":"2.0","id":1,"method":"ui/request-display-mode","params":{"mode":"fullscreen"}}),
    );
    let e = h.take_effects();
    assert!(e.contains(&Effect::Page(PageAction::DisplayMode("fullscreen".into()))));
    let v = to_view(&e);
    assert_eq!(v[0]["result"]["mode"], "fullscreen");
    assert_eq!(v[1]["params"]["displayMode"], "fullscreen");
    let note = send(
        &mut h,
        json!({"jsonrpc":"2.0","id":2,"method":"ui/request-display-mode","params":{"mode":"pip"}}),
    );
    assert!(note.unwrap().contains("not one the host offers"));
    assert_eq!(to_view(&h.take_effects())[0]["result"]["mode"], "fullscreen");

    let mut h = host();
    send(
        &mut h,
        json!({"jsonrpc":"2.0","method":"ui/notifications/sandbox-proxy-ready"}),
    );
    send(
        &mut h,
        json!({"jsonrpc":"2.0","id":1,"method":"ui/initialize","params":{"protocolVersion":"2026-01-26","appCapabilities":{}}}),
    );
    send(&mut h, json!({"jsonrpc":"2.0","method":"ui/notifications/initialized"}));
    h.take_effects();
    let note = send(
        &mut h,
        json!({"jsonrpc":"2.0","id":2,"method":"ui/request-display-mode","params":{"mode":"fullscreen"}}),
    );
    assert!(note.unwrap().contains("not among the View's declared"));
    assert_eq!(to_view(&h.take_effects())[0]["result"]["mode"], "inline");
}

#[test]
fn links_are_http_only_and_asked() {
    let mut h = ready();
    let note = send(
        &mut h,
        json!({"jsonrpc":"2.0","id":1,"method":"ui/open-link","params":{"url":"javascript:alert(1)"}}),
    );
    assert!(note.unwrap().starts_with("refused"));
    assert_eq!(to_view(&h.take_effects())[0]["result"]["isError"], true);
    send(
        &mut h,
        json!({"jsonrpc":"2.0","id":2,"method":"ui/open-link","params":{"url":"https://example.com/x"}}),
    );
    let e = h.take_effects();
    let Effect::Page(PageAction::Ask { ticket, .. }) = e[0] else {
        panic!("{e:?}")
    };
    assert!(to_view(&e).is_empty(), "no answer before the user decides");
    h.user_answered(ticket, true);
    let e = h.take_effects();
    assert!(e.contains(&Effect::Page(PageAction::OpenLink("https://example.com/x".into()))));
    assert_eq!(to_view(&e)[0]["result"], json!({}));
}

#[test]
fn downloads_are_sanitised_capped_and_asked() {
    let mut h = ready();
    let item = json!({"type":"resource","resource":{"uri":"file:///etc/../x","name":"../../.bashrc\u{7}","mimeType":"text/plain","text":"hi"}});
    send(
        &mut h,
        json!({"jsonrpc":"2.0","id":1,"method":"ui/download-file","params":{"contents":[item]}}),
    );
    let e = h.take_effects();
    let Effect::Page(PageAction::Ask { ticket, .. }) = e[0] else {
        panic!("{e:?}")
    };
    h.user_answered(ticket, true);
    let e = h.take_effects();
    let Some(Effect::Page(PageAction::Download(items))) = e.first() else {
        panic!("{e:?}")
    };
    assert_eq!(items[0].name, "bashrc");
    let many: Vec<Value> = (0..21).map(|_| item.clone()).collect();
    let note = send(
        &mut h,
        json!({"jsonrpc":"2.0","id":2,"method":"ui/download-file","params":{"contents":many}}),
    );
    assert!(note.unwrap().contains("21 files"));
}

#[test]
fn model_context_last_wins_and_messages_are_kept() {
    let mut h = ready();
    send(
        &mut h,
        json!({"jsonrpc":"2.0","id":1,"method":"ui/update-model-context","params":{"structuredContent":{"value":1}}}),
    );
    let note = send(
        &mut h,
        json!({"jsonrpc":"2.0","id":2,"method":"ui/update-model-context","params":{"structuredContent":{"value":2}}}),
    );
    assert!(note.is_some());
    assert_eq!(h.model_context().unwrap()["structuredContent"]["value"], 2);
    send(
        &mut h,
        json!({"jsonrpc":"2.0","id":3,"method":"ui/message","params":{"role":"user","content":[{"type":"text","text":"hi"}]}}),
    );
    send(
        &mut h,
        json!({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"clicked"}}),
    );
    assert_eq!(h.shown().len(), 2);
}

#[test]
fn legacy_names_are_flagged_and_unknown_ones_refused() {
    let mut h = ready();
    let note = send(&mut h, json!({"jsonrpc":"2.0","method":"ui/log","params":{}}));
    assert!(note.unwrap().contains("legacy name"));
    let note = send(
        &mut h,
        json!({"jsonrpc":"2.0","id":9,"method":"ui/call-view-tool","params":{}}),
    );
    assert!(note.unwrap().contains("legacy name"));
    assert_eq!(to_view(&h.take_effects())[0]["error"]["code"], -32601);
    assert!(send(&mut h, json!([1, 2])).is_some());
    assert!(h.view_sent(b"not json", T0).is_some());
}

#[test]
fn teardown_is_awaited_then_times_out() {
    let mut h = ready();
    h.close("closed by the user", Duration::from_secs(1));
    let e = to_view(&h.take_effects());
    assert_eq!(e[0]["method"], "ui/resource-teardown");
    h.tool_result(json!({}));
    assert!(h.take_effects().is_empty(), "nothing after teardown began");
    send(&mut h, json!({"jsonrpc":"2.0","id": e[0]["id"], "result": {}}));
    assert_eq!(h.phase(), Phase::Closed);
    assert!(h.take_effects().contains(&Effect::Page(PageAction::Close)));

    let mut h = ready();
    h.close("bye", Duration::from_secs(1));
    h.take_effects();
    assert_eq!(h.next_wakeup(), Some(Duration::from_secs(4)));
    h.tick(Duration::from_secs(4));
    assert_eq!(h.phase(), Phase::Closed);
    assert!(matches!(h.take_effects()[0], Effect::Note(_)));
}

#[test]
fn a_view_that_never_initializes_is_said_once() {
    let mut h = host();
    h.view_sent(
        br#"{"jsonrpc":"2.0","method":"ui/notifications/sandbox-proxy-ready"}"#,
        Duration::from_secs(1),
    );
    h.take_effects();
    h.tick(Duration::from_secs(5));
    assert!(h.take_effects().is_empty());
    h.tick(Duration::from_secs(11));
    assert!(matches!(&h.take_effects()[..], [Effect::Note(n)] if n.contains("initialized")));
    h.tick(Duration::from_secs(20));
    assert!(h.take_effects().is_empty());
}

#[test]
fn a_reloaded_page_starts_over_and_is_told_its_call_again() {
    let mut h = ready();
    h.tool_input(json!({"start": 3}));
    h.tool_result(json!({"structuredContent": {"value": 3}}));
    h.take_effects();
    let note = send(
        &mut h,
        json!({"jsonrpc":"2.0","method":"ui/notifications/sandbox-proxy-ready","params":{}}),
    );
    assert!(note.unwrap().contains("starts over"));
    assert_eq!(h.phase(), Phase::Loading);
    assert!(
        matches!(&h.take_effects()[..], [Effect::ToSandbox(_)]),
        "the document again, nothing to the View yet"
    );
    send(
        &mut h,
        json!({"jsonrpc":"2.0","id":1,"method":"ui/initialize","params":{"protocolVersion":"2026-01-26","appCapabilities":{}}}),
    );
    send(&mut h, json!({"jsonrpc":"2.0","method":"ui/notifications/initialized"}));
    let methods: Vec<String> = to_view(&h.take_effects())
        .iter()
        .filter_map(|m| m["method"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(methods, ["ui/notifications/tool-input", "ui/notifications/tool-result"]);
}

#[test]
fn a_new_container_size_is_announced_once() {
    let mut h = ready();
    h.set_container(Some(760), Some(6000));
    assert!(h.take_effects().is_empty(), "unchanged: nothing said");
    h.set_container(Some(1200), Some(880));
    let v = to_view(&h.take_effects());
    assert_eq!(v[0]["method"], "ui/notifications/host-context-changed");
    assert_eq!(
        v[0]["params"]["containerDimensions"],
        json!({"width": 1200, "maxHeight": 880})
    );
}

#[test]
fn file_names_are_sanitised() {
    assert_eq!(sanitize_file_name("a/b/report.csv", 0), "report.csv");
    assert_eq!(sanitize_file_name("..\\..\\x?.txt", 0), "x.txt");
    assert_eq!(sanitize_file_name("...", 2), "download-3");
}
