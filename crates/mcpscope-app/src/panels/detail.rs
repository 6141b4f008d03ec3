//! The selected frame: what it is, what is wrong with it, its JSON as a tree,
//! and its exact raw line. Large payloads are parsed on a worker thread.

use crate::job::Job;
use crate::panels::json_tree::{self, JsonTreeState};
use crate::panels::timeline::{format_latency, row_label};
use crate::theme::{self, RowKind, RowKindStyle as _};
use egui::{RichText, Ui};
use mcpscope_core::timeline::model::SessionModel;
use mcpscope_core::timeline::store::Lane;
use serde_json::Value;
use std::sync::Arc;

/// Payloads above this size are parsed off the UI thread.
const PARSE_INLINE_LIMIT: usize = 256 * 1024;
/// Raw text shown in the raw view before it is cut (copy gives the whole line).
const RAW_VIEW_LIMIT: usize = 64 * 1024;

enum Parsed {
    None,
    Pending(Job<Result<Arc<Value>, String>>),
    Ready(Arc<Value>),
    Failed(String),
}

pub enum DetailAction {
    Select(usize),
    /// Apply this condition as the timeline's filter (no join), or join it to the filter.
    Filter(Option<mcpscope_core::filter::Join>, String),
    /// Send this request (method, params) again on the live session, under a fresh id.
    Replay(String, Option<serde_json::Value>),
    /// Load this request into the raw composer to edit before sending.
    EditReplay(String, Option<serde_json::Value>),
    /// Save this request as a step of a test file.
    SaveToCollection(String, Option<serde_json::Value>),
}

pub struct DetailPanel {
    row: Option<usize>,
    parsed: Parsed,
    pub tree: JsonTreeState,
    pub show_raw: bool,
    /// The next frame drawn starts its views at the top.
    scroll_to_top: bool,
}

impl Default for DetailPanel {
    fn default() -> Self {
        Self {
            row: None,
            parsed: Parsed::None,
            tree: JsonTreeState::default(),
            show_raw: true,
            scroll_to_top: false,
        }
    }
}

impl DetailPanel {
    pub fn row(&self) -> Option<usize> {
        self.row
    }

    /// Shows another row; parsing starts at once (inline or on a worker).
    pub fn show_row(&mut self, model: &SessionModel, row: Option<usize>) {
        if self.row == row {
            return;
        }
        self.row = row;
        self.tree.reset();
        // Another frame starts at its top, not at the last frame's offset.
        self.scroll_to_top = true;
        self.parsed = Parsed::None;
        let Some(r) = row.and_then(|r| model.store.get(r)) else {
            return;
        };
        if r.lane() == Lane::Stderr {
            return;
        }
        if r.lane() == Lane::Meta {
            // An HTTP exchange's row keeps its record: shown as a tree, like an OAuth step.
            if let Some(record) = r.http_record() {
                self.parsed = match parse(record.as_bytes()) {
                    Ok(v) => Parsed::Ready(v),
                    Err(e) => Parsed::Failed(e),
                };
            }
            return;
        }
        if r.lane() == Lane::Model {
            // The record and, beside it, the answer its events assemble to.
            self.parsed = match parse(r.raw()).and_then(|v| {
                mcpscope_core::model::record::ModelExchange::from_json(&v, r.at()).map(|m| Arc::new(m.shown()))
            }) {
                Ok(v) => Parsed::Ready(v),
                Err(e) => Parsed::Failed(e),
            };
            return;
        }
        let raw = r.raw();
        if raw.len() <= PARSE_INLINE_LIMIT {
            self.parsed = match parse(raw) {
                Ok(v) => Parsed::Ready(v),
                Err(e) => Parsed::Failed(e),
            };
        } else {
            let bytes = raw.to_vec();
            // (The app repaints while `busy`: no waker needed.)
            self.parsed = Parsed::Pending(Job::spawn("parse", None, move || parse(&bytes)));
        }
    }

    /// Whether a parse is still running (the app keeps repainting meanwhile).
    pub fn busy(&self) -> bool {
        matches!(self.parsed, Parsed::Pending(_))
    }

    pub fn ui(&mut self, ui: &mut Ui, model: &SessionModel) -> Option<DetailAction> {
        if let Parsed::Pending(job) = &mut self.parsed
            && let Some(result) = job.poll()
        {
            self.parsed = match result.unwrap_or_else(|e| Err(e.to_string())) {
                Ok(v) => Parsed::Ready(v),
                Err(e) => Parsed::Failed(e),
            };
        }
        let Some(row) = self.row.and_then(|r| model.store.get(r)) else {
            ui.weak("Select a frame in the timeline (the Up and Down keys move between frames).");
            return None;
        };
        let mut action = None;
        let kind = RowKind::of(&row);
        ui.horizontal_wrapped(|ui| {
            ui.label(
                RichText::new(format!("{} {}", kind.glyph(), kind.name()))
                    .color(kind.color())
                    .strong(),
            );
            let dir = match row.lane() {
                Lane::Out => "client to server",
                Lane::In => "server to client",
                Lane::Stderr => "server stderr",
                Lane::Meta if row.http_record().is_some() => {
                    "HTTP exchange: method, URL, status, the headers sent and received (credentials masked); its body is the frame it carried"
                }
                Lane::Meta => "mcpscope",
                Lane::Auth => "authorization (OAuth): URL, headers and bodies with secrets masked, JWTs decoded (signatures not verified)",
                Lane::Touch => "the intercepting proxy: what it did to a frame, and the bytes it sent (`sent`)",
                Lane::App => "a message between an MCP App's View and mcpscope as its host, as it crossed the bridge",
                Lane::Model => "a model turn: the request sent to the provider, each event of its streamed answer with its time, and the answer they assemble to (the key travelled only in headers, which are never kept)",
            };
            ui.label(dir);
            if let Some(note) = row.app_note() {
                ui.colored_label(theme::WARN, format!("host: {note}"));
            }
            ui.label(format!("at {:.3} s", row.at().as_secs_f64()));
            ui.label(format!("{} bytes", row.raw().len()));
            ui.label(RichText::new(row_label(&model.store, &row)).monospace());
        });
        ui.horizontal_wrapped(|ui| {
            if let Some(req) = carried_request(&model.store, &row)
                && ui.button(format!("Go to the request it carried (row {req})")).clicked()
            {
                action = Some(DetailAction::Select(req));
            }
            if let Some((req, latency)) = row.link() {
                ui.label(format!("answers row {req} after {}", format_latency(latency)));
                if ui.button("Go to request").clicked() {
                    action = Some(DetailAction::Select(req));
                }
            }
            let responses: Vec<usize> = if row.kind() == mcpscope_core::wire::classify::Kind::Request {
                model.store.responses_to(row.index()).take(4).collect()
            } else {
                Vec::new()
            };
            if row.kind() == mcpscope_core::wire::classify::Kind::Request
                && row.lane() == Lane::Out
                && let Some((method, params)) = replayable(row.raw())
            {
                // Replay needs a server to send to: an offline capture's is gone.
                if ui
                    .add_enabled(model.running(), egui::Button::new("Replay"))
                    .on_hover_text("Send this request again on the live session, under a fresh id")
                    .on_disabled_hover_text(
                        "Replay sends to a running server: this session's has ended (Relaunch starts it again)",
                    )
                    .clicked()
                {
                    action = Some(DetailAction::Replay(method.clone(), params.clone()));
                }
                if ui
                    .button("Edit & replay")
                    .on_hover_text("Load this request into the raw composer to change it before sending")
                    .clicked()
                {
                    action = Some(DetailAction::EditReplay(method.clone(), params.clone()));
                }
                if ui
                    .button("Save to collection…")
                    .on_hover_text("Write this request as a step of a test file, with an assertion to start from")
                    .clicked()
                {
                    action = Some(DetailAction::SaveToCollection(method, params));
                }
            }
            for r in responses {
                let latency = model
                    .store
                    .get(r)
                    .and_then(|x| x.link())
                    .map(|(_, l)| l)
                    .unwrap_or_default();
                if ui
                    .button(format!("Go to response (row {r}, {})", format_latency(latency)))
                    .clicked()
                {
                    action = Some(DetailAction::Select(r));
                }
            }
        });
        if !row.anomalies().is_empty() {
            egui::Frame::group(ui.style()).show(ui, |ui| {
                for (code, desc) in row.anomalies().descriptions() {
                    ui.horizontal_wrapped(|ui| {
                        ui.label(RichText::new(format!("‼ {code}")).color(theme::ANOMALY_MARK).strong());
                        ui.label(desc);
                    });
                }
            });
        }
        // Wrapped, and the transient "copied …" truncated: neither may widen the panel.
        ui.horizontal_wrapped(|ui| {
            if ui.button("Expand all").clicked() {
                self.tree.expand_all();
            }
            if ui.button("Collapse all").clicked() {
                self.tree.collapse_all();
            }
            ui.checkbox(&mut self.tree.parse_strings, "Parse JSON inside strings");
            ui.checkbox(&mut self.show_raw, "Raw line");
            if ui.button("Copy raw line").clicked() {
                ui.ctx().copy_text(row.text().into_owned());
                self.tree.last_copied = Some("the raw line".into());
            }
            if let Some(c) = &self.tree.last_copied {
                ui.add(egui::Label::new(RichText::new(format!("copied {c}")).weak()).truncate());
            }
        });
        ui.separator();
        let raw_height = if self.show_raw {
            (ui.available_height() * 0.3).max(60.0)
        } else {
            0.0
        };
        let tree_height = (ui.available_height() - raw_height).max(80.0);
        let top = std::mem::take(&mut self.scroll_to_top);
        let at_top = |area: egui::ScrollArea| {
            if top {
                area.scroll_offset(egui::Vec2::ZERO)
            } else {
                area
            }
        };
        at_top(
            egui::ScrollArea::both()
                .id_salt("detail-tree")
                .max_height(tree_height)
                .auto_shrink([false, true]),
        )
        .show(ui, |ui| match &self.parsed {
            Parsed::Ready(v) => {
                let v = Arc::clone(v);
                // Paths from a frame's (or an authorization record's) root are filter fields.
                self.tree.offer_filter =
                    matches!(row.lane(), Lane::Out | Lane::In | Lane::Auth | Lane::Touch | Lane::App);
                json_tree::show(ui, &v, &mut self.tree, &format!("row{}", row.index()));
            }
            Parsed::Pending(_) => {
                ui.horizontal(|ui| {
                    ui.spinner();
                    ui.label(format!("parsing {} bytes…", row.raw().len()));
                });
            }
            Parsed::Failed(e) => {
                ui.label(RichText::new(format!("Not JSON: {e}")).color(theme::ANOMALY_MARK));
            }
            Parsed::None => {
                ui.label(RichText::new(row.text()).monospace());
            }
        });
        if self.show_raw && !row.lane().is_note() {
            ui.separator();
            at_top(
                egui::ScrollArea::both()
                    .id_salt("detail-raw")
                    .auto_shrink([false, false]),
            )
            .show(ui, |ui| {
                let text = row.text();
                let shown = mcpscope_core::text::shorten(&text, RAW_VIEW_LIMIT);
                let ending = match row.ending() {
                    mcpscope_core::wire::framing::LineEnding::Lf => "",
                    mcpscope_core::wire::framing::LineEnding::CrLf => "\\r",
                    mcpscope_core::wire::framing::LineEnding::Eof => "  (no newline: the stream ended here)",
                    mcpscope_core::wire::framing::LineEnding::Cut => {
                        "  (cut: the line was longer than the in-memory cap and goes on in the next row)"
                    }
                };
                ui.add(
                    egui::Label::new(RichText::new(format!("{shown}{ending}")).monospace())
                        .wrap()
                        .selectable(true),
                );
            });
        }
        if let Some((join, cond)) = self.tree.filter_request.take() {
            action = Some(DetailAction::Filter(join, cond));
        }
        action
    }
}

/// For an HTTP exchange's row: the row of the JSON-RPC request it carried
/// (the nearest earlier request with its `request_id`).
fn carried_request(
    store: &mcpscope_core::timeline::store::FrameStore,
    row: &mcpscope_core::timeline::store::RowRef<'_>,
) -> Option<usize> {
    let record: Value = serde_json::from_str(row.http_record()?).ok()?;
    let id = mcpscope_core::wire::message::RequestId::from_json(record.get("request_id")?)?;
    (row.index().saturating_sub(4096)..row.index()).rev().find(|&i| {
        store.get(i).is_some_and(|r| {
            r.lane() == Lane::Out
                && r.kind() == mcpscope_core::wire::classify::Kind::Request
                && r.id().as_ref() == Some(&id)
        })
    })
}

fn parse(raw: &[u8]) -> Result<Arc<Value>, String> {
    match serde_json::from_slice::<Value>(raw) {
        Ok(v) => Ok(Arc::new(v)),
        Err(e) => {
            // Invalid UTF-8 inside strings: show what the line would be with
            // replacement characters rather than nothing.
            let lossy = String::from_utf8_lossy(raw);
            serde_json::from_str::<Value>(&lossy)
                .map(Arc::new)
                .map_err(|_| e.to_string())
        }
    }
}

/// A recorded request's method and params, as they can be sent again: the
/// envelope (`_meta`) it carried named its own session, so it is left for
/// the session to add anew.
fn replayable(raw: &[u8]) -> Option<(String, Option<serde_json::Value>)> {
    let v: serde_json::Value = serde_json::from_slice(raw).ok()?;
    let method = v.get("method")?.as_str()?.to_owned();
    let params = v.get("params").cloned().map(|mut p| {
        if let Some(o) = p.as_object_mut() {
            o.remove("_meta");
        }
        p
    });
    Some((method, params))
}
