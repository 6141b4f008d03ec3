//! What a row says: its label on the timeline, and the filter conditions
//! its context menu offers.

use mcpscope_core::filter::Join;
use mcpscope_core::timeline::store::{FrameStore, Lane, RowRef};

pub fn format_latency(d: std::time::Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms < 10.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.0} ms")
    }
}

/// The "method not found" a legacy server gives the `server/discover` that
/// probes for the 2026-07-28 era: an answer the probe expects, not a fault
/// (drawn muted, and said so, where the mock's tab showed it in red).
pub fn era_probe_refused(store: &FrameStore, row: &RowRef<'_>) -> bool {
    row.kind() == mcpscope_core::wire::classify::Kind::Error
        && row.error_code() == Some(-32601)
        && row.link().and_then(|(r, _)| store.get(r)).and_then(|r| r.method())
            == Some(mcpscope_core::protocol::methods::SERVER_DISCOVER)
}

/// A model turn's label: which model, what it answered or asked for,
/// tokens in and out, time to first token and in all (or why it failed).
pub fn model_label(row: &RowRef<'_>) -> String {
    let name = row.method().unwrap_or("model");
    let Some(m) = row.model() else {
        return name.to_owned();
    };
    if let Some(why) = &m.failed {
        return format!("{name} failed: {why}");
    }
    let mut s = match m.tool_calls.as_slice() {
        [] => format!("{name}: {:?}", m.text),
        [one] => format!("{name} calls {one}"),
        many => format!("{name} calls {} tools", many.len()),
    };
    if let (Some(i), Some(o)) = (m.input_tokens, m.output_tokens) {
        s.push_str(&format!(" · {i} in / {o} out"));
    }
    if let Some(f) = m.first_token {
        s.push_str(&format!(" · first token {}", format_latency(f)));
    }
    s.push_str(&format!(" · {}", format_latency(m.total)));
    s
}

/// The label of a row: the method, or `result #id` / `error #id`, or the text.
pub fn row_label(store: &FrameStore, row: &RowRef<'_>) -> String {
    use mcpscope_core::wire::classify::Kind;
    let id = row.id().map(|i| format!(" #{i}")).unwrap_or_default();
    match row.lane() {
        Lane::Stderr | Lane::Meta => mcpscope_core::text::ellipsize(&row.text(), 160),
        Lane::Auth => format!("OAuth {}", row.method().unwrap_or_default()),
        Lane::Touch => row.method().unwrap_or_default().to_owned(),
        Lane::Model => model_label(row),
        Lane::App => {
            let who = row.app_name().unwrap_or_default();
            let arrow = match row.app_toward() {
                Some(t) if t.from_view_side() => "->",
                _ => "<-",
            };
            format!("{who} {arrow} {}", row.method().unwrap_or_default())
        }
        _ => match row.kind() {
            Kind::Request | Kind::Notification => format!("{}{id}", row.method().unwrap_or("?")),
            Kind::Result => {
                let m = row.link().and_then(|(r, _)| store.get(r)).and_then(|r| r.method());
                let base = format!("result{id}");
                let base = match m {
                    Some(m) => format!("{base} ({m})"),
                    None => base,
                };
                if row.tool_error() {
                    format!("{base} isError")
                } else {
                    base
                }
            }
            Kind::Error if era_probe_refused(store, row) => {
                format!("error{id} -32601 (server/discover: an era probe; the server is legacy, as expected)")
            }
            Kind::Error => format!("error{id} {}", row.error_code().unwrap_or_default()),
            Kind::Batch => "batch".into(),
            Kind::NotJsonRpc => format!("not JSON-RPC: {}", mcpscope_core::text::ellipsize(&row.text(), 60)),
            Kind::NotJson => format!("NOT JSON: {}", mcpscope_core::text::ellipsize(&row.text(), 60)),
        },
    }
}

/// An App row's message as a timeline label: `method #id`, `result #id`,
/// `error #id CODE`.
pub(super) fn app_message_label(raw: &[u8]) -> String {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(raw) else {
        return format!("not JSON: {}", mcpscope_core::text::shorten_bytes(raw, 40));
    };
    let id = v.get("id").map(|i| format!(" #{i}")).unwrap_or_default();
    match v.get("method").and_then(serde_json::Value::as_str) {
        Some(m) => format!("{m}{id}"),
        None => match v.get("error") {
            Some(e) => format!("error{id} {}", e.get("code").unwrap_or(&serde_json::Value::Null)),
            None => format!("result{id}"),
        },
    }
}

/// A row's context menu: its filter conditions, to apply or to prepare.
pub(super) fn row_menu(
    response: &egui::Response,
    store: &FrameStore,
    row: &RowRef<'_>,
) -> Option<(Option<Join>, String)> {
    let mut condition = None;
    response.context_menu(|ui| {
        for (cond, what) in row_conditions(store, row) {
            ui.label(egui::RichText::new(&what).weak());
            if ui.button(format!("Apply as filter: {cond}")).clicked() {
                condition = Some((None, cond.clone()));
                ui.close();
            }
            ui.menu_button("Prepare as filter", |ui| {
                for j in Join::ALL {
                    if ui.button(format!("… {} {cond}", j.text())).clicked() {
                        condition = Some((Some(j), cond.clone()));
                        ui.close();
                    }
                }
            });
            ui.separator();
        }
    });
    condition
}

/// The methods a session used, for completion (interned in the store, so
/// this walks distinct names, not rows).
pub(super) fn session_methods(store: &FrameStore) -> Vec<String> {
    let mut v: Vec<String> = store.methods().map(str::to_owned).collect();
    v.sort();
    v
}

/// Conditions a row offers in its context menu: what it is and its method.
fn row_conditions(store: &FrameStore, row: &RowRef<'_>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let quote = mcpscope_core::filter::ast::quote;
    if let Some(m) = row.method().filter(|_| matches!(row.lane(), Lane::Out | Lane::In)) {
        out.push((format!("method == {}", quote(m)), "this method".to_owned()));
    } else if let Some(m) = row.link().and_then(|(r, _)| store.get(r)).and_then(|r| r.method()) {
        out.push((
            format!("request.method == {}", quote(m)),
            "answers to this method".to_owned(),
        ));
    }
    let kind = mcpscope_core::filter::rows::kind_name(row);
    out.push((format!("kind == {}", quote(kind)), "this kind of row".to_owned()));
    out
}
