//! Shows the answer to a composed request as what it is: content blocks by
//! type (text, JSON in text, images, audio, links, embedded resources),
//! structuredContent checked against the tool's outputSchema, and a tool
//! failure (`isError: true`) visibly apart from a JSON-RPC protocol error.

use crate::job::{Job, PollOutcome as _, PollSlot as _};
use crate::panels::json_tree::{self, JsonTreeState};
use crate::theme;
use egui::{Color32, RichText, Ui};
use mcpscope_core::protocol::methods;
use mcpscope_core::protocol::tool_result::{self, Block, CallOutcome, ResourceContents, StructuredCheck, ToolResult};
use mcpscope_core::timeline::model::SessionModel;
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// Images wider than this are scaled down to fit.
const MAX_IMAGE_WIDTH: f32 = 420.0;

/// An answer read on a worker: parsed, interpreted, its images decoded.
struct Read {
    message: Option<Value>,
    outcome: Option<CallOutcome>,
    images: HashMap<usize, Result<egui::ColorImage, String>>,
}

#[derive(Default)]
pub struct ResultView {
    row: Option<usize>,
    /// The answer being read on a worker (it can be megabytes of base64).
    reading: Option<Job<Read>>,
    message: Option<Value>,
    outcome: Option<CallOutcome>,
    tree: JsonTreeState,
    block_trees: HashMap<usize, JsonTreeState>,
    /// Decoded images by block index (or why they could not be shown).
    images: HashMap<usize, Result<egui::ColorImage, String>>,
    textures: HashMap<usize, Result<egui::TextureHandle, String>>,
    /// A blob being written on a worker.
    saving: Option<Job<anyhow::Result<PathBuf>>>,
    /// Where the last saved blob went.
    pub saved: Option<anyhow::Result<PathBuf>>,
}

impl ResultView {
    pub fn reset(&mut self) {
        *self = ResultView::default();
    }

    /// The interpreted tool outcome on screen, if any (for tests).
    pub fn outcome(&self) -> Option<&CallOutcome> {
        self.outcome.as_ref()
    }

    /// Starts reading the answer at `row` on a worker (once per row).
    fn load(
        &mut self,
        ctx: &egui::Context,
        model: &SessionModel,
        row: usize,
        method: &str,
        output_schema: Option<&Value>,
    ) {
        if self.row == Some(row) {
            return;
        }
        self.reset();
        self.row = Some(row);
        let raw = model.store.get(row).map(|r| r.raw().to_vec()).unwrap_or_default();
        let method = method.to_owned();
        let output_schema = output_schema.cloned();
        let ctx = ctx.clone();
        let wake: crate::job::Wake = Arc::new(move || ctx.request_repaint());
        self.reading = Some(Job::spawn("result", Some(wake), move || {
            read(&raw, &method, output_schema.as_ref())
        }));
    }

    /// Takes what the workers finished.
    fn poll(&mut self) {
        match self.reading.take_ready() {
            Some(Ok(read)) => {
                self.message = read.message;
                self.outcome = read.outcome;
                self.images = read.images;
            }
            Some(Err(e)) => {
                self.message = None;
                self.saved = Some(Err(anyhow::Error::new(e).context("cannot read the answer")));
            }
            None => {}
        }
        if let Some(saved) = self.saving.take_outcome() {
            self.saved = Some(saved);
        }
    }

    /// Writes a blob on a worker; [`ResultView::poll`] takes the outcome.
    fn save(&mut self, ctx: &egui::Context, bytes: &[u8], mime: &str, index: usize) {
        let (bytes, mime, ctx) = (bytes.to_vec(), mime.to_owned(), ctx.clone());
        let wake: crate::job::Wake = Arc::new(move || ctx.request_repaint());
        self.saving = Some(Job::spawn("save", Some(wake), move || save_blob(&bytes, &mime, index)));
    }

    pub fn ui(&mut self, ui: &mut Ui, model: &SessionModel, row: usize, method: &str, output_schema: Option<&Value>) {
        self.load(ui.ctx(), model, row, method, output_schema);
        self.poll();
        let latency = model.store.get(row).and_then(|r| r.link()).map(|(_, l)| l);
        ui.horizontal(|ui| {
            ui.strong(format!("Answer to {method}"));
            ui.weak(format!("row {row}"));
            if let Some(l) = latency {
                ui.weak(crate::panels::timeline::format_latency(l));
            }
        });
        if self.reading.is_some() {
            ui.horizontal(|ui| {
                ui.spinner();
                ui.weak(format!(
                    "reading the answer ({} bytes)",
                    model.store.get(row).map_or(0, |r| r.raw().len())
                ));
            });
            return;
        }
        let Some(message) = self.message.clone() else {
            ui.label(RichText::new("the answer is not JSON: see the raw line on the timeline").color(theme::ERROR));
            return;
        };
        if let Some(outcome) = self.outcome.take() {
            self.outcome_ui(ui, &outcome);
            self.outcome = Some(outcome);
            return;
        }
        if let Some(err) = message.get("error") {
            protocol_error_banner(ui, err);
            json_tree::show(ui, err, &mut self.tree, "result-error");
            return;
        }
        let result = message.get("result").cloned().unwrap_or(Value::Null);
        match method {
            methods::PROMPTS_GET => prompt_messages_ui(ui, &result),
            methods::RESOURCES_READ => resource_contents_ui(ui, &result),
            _ => {}
        }
        json_tree::show(ui, &result, &mut self.tree, "result-tree");
    }

    fn outcome_ui(&mut self, ui: &mut Ui, outcome: &CallOutcome) {
        match outcome {
            CallOutcome::ToolSuccess(r) => {
                ui.label(RichText::new("✔ Tool result").color(theme::OK).strong());
                self.tool_result_ui(ui, r);
            }
            CallOutcome::ToolFailure(r) => {
                banner(
                    ui,
                    theme::WARN,
                    "⚠ Tool failure (isError: true)",
                    "The tool ran and reported a failure in its result. A model reads this and may retry; \
                     it is not a protocol error.",
                );
                self.tool_result_ui(ui, r);
            }
            CallOutcome::ProtocolError {
                code,
                message,
                data,
                meaning,
            } => {
                banner(
                    ui,
                    theme::ERROR,
                    &format!("✖ Protocol error {code} ({meaning})"),
                    &format!(
                        "{message}\nThe server rejected the request itself with a JSON-RPC error; the tool \
                         did not produce a result."
                    ),
                );
                if let Some(d) = data {
                    ui.weak("error.data");
                    json_tree::show(ui, d, &mut self.tree, "error-data");
                }
            }
            CallOutcome::Malformed(why) => {
                banner(ui, theme::ERROR, "✖ Malformed answer", why);
                if let Some(m) = &self.message {
                    json_tree::show(ui, m, &mut self.tree, "malformed");
                }
            }
        }
    }

    fn tool_result_ui(&mut self, ui: &mut Ui, r: &ToolResult) {
        for p in &r.problems {
            ui.label(RichText::new(format!("⚠ {p}")).color(theme::WARN));
        }
        for (i, block) in r.blocks.iter().enumerate() {
            ui.push_id(("block", i), |ui| {
                egui::Frame::group(ui.style()).show(ui, |ui| {
                    ui.set_width(ui.available_width());
                    self.block_ui(ui, i, block);
                });
            });
        }
        if r.blocks.is_empty() {
            ui.weak("no content blocks");
        }
        match &r.structured_check {
            StructuredCheck::NoSchema => {}
            StructuredCheck::Valid => {
                ui.label(RichText::new("✔ structuredContent matches the tool's outputSchema").color(theme::OK));
            }
            StructuredCheck::Invalid(errors) => {
                ui.label(
                    RichText::new("✖ structuredContent does not match the tool's outputSchema:").color(theme::ERROR),
                );
                for e in errors {
                    ui.label(RichText::new(format!("  • {e}")).color(theme::ERROR));
                }
            }
            StructuredCheck::MissingStructured => {
                ui.label(
                    RichText::new("⚠ the tool declares an outputSchema but returned no structuredContent")
                        .color(theme::WARN),
                );
            }
            StructuredCheck::SchemaUnusable(why) => {
                ui.label(RichText::new(format!("⚠ outputSchema cannot be used: {why}")).color(theme::WARN));
            }
        }
        if let Some(s) = &r.structured {
            ui.strong("structuredContent");
            json_tree::show(ui, s, &mut self.tree, "structured");
        }
        if let Some(saved) = &self.saved {
            match saved {
                Ok(p) => ui.label(format!("saved to {}", p.display())),
                Err(e) => {
                    crate::error_view::show(ui, e);
                    ui.label("")
                }
            };
        }
    }

    fn block_ui(&mut self, ui: &mut Ui, i: usize, block: &Block) {
        match block {
            Block::Text { text, json, .. } => {
                ui.weak("text");
                match json {
                    Some(v) => {
                        ui.weak("(JSON inside the text, shown as a tree)");
                        let tree = self.block_trees.entry(i).or_default();
                        json_tree::show(ui, v, tree, "text-json");
                    }
                    None => {
                        ui.add(
                            egui::Label::new(mcpscope_core::text::shorten(text, 20_000))
                                .wrap()
                                .selectable(true),
                        );
                    }
                }
            }
            Block::Image { mime, data, .. } => {
                ui.weak(format!("image ({mime})"));
                match data {
                    Err(e) => {
                        ui.label(RichText::new(format!("cannot decode the base64 data: {e}")).color(theme::ERROR));
                    }
                    Ok(bytes) => {
                        let decoded = self.images.remove(&i);
                        let texture = self.textures.entry(i).or_insert_with(|| match decoded {
                            // Uploading the decoded pixels is all the UI thread does.
                            Some(Ok(img)) => Ok(ui.ctx().load_texture(
                                format!("result-image-{i}"),
                                img,
                                egui::TextureOptions::LINEAR,
                            )),
                            Some(Err(e)) => Err(e),
                            None => Err("the image was not decoded".into()),
                        });
                        match texture {
                            Ok(t) => {
                                let size = t.size_vec2();
                                let scale = (MAX_IMAGE_WIDTH / size.x).min(1.0);
                                ui.image((t.id(), size * scale));
                                ui.weak(format!("{}x{} px, {} bytes", size.x, size.y, bytes.len()));
                            }
                            Err(e) => {
                                ui.label(RichText::new(e.as_str()).color(theme::ERROR));
                            }
                        }
                        if ui.small_button("Save image…").clicked() {
                            self.save(ui.ctx(), bytes, mime, i);
                        }
                    }
                }
            }
            Block::Audio { mime, data, .. } => {
                ui.weak(format!("audio ({mime})"));
                match data {
                    Err(e) => {
                        ui.label(RichText::new(format!("cannot decode the base64 data: {e}")).color(theme::ERROR));
                    }
                    Ok(bytes) => {
                        ui.label(format!("{} bytes of audio", bytes.len()));
                        if ui.small_button("Save audio to a file").clicked() {
                            self.save(ui.ctx(), bytes, mime, i);
                        }
                    }
                }
            }
            Block::ResourceLink {
                uri,
                name,
                title,
                description,
                mime,
                size,
            } => {
                ui.weak("resource link");
                ui.monospace(uri);
                let mut facts = Vec::new();
                if let Some(n) = title.as_ref().or(name.as_ref()) {
                    facts.push(n.clone());
                }
                if let Some(m) = mime {
                    facts.push(m.clone());
                }
                if let Some(s) = size {
                    facts.push(format!("{s} bytes"));
                }
                if !facts.is_empty() {
                    ui.label(facts.join(" · "));
                }
                if let Some(d) = description {
                    ui.weak(d);
                }
            }
            Block::Resource { uri, mime, contents } => {
                ui.weak(format!(
                    "embedded resource{}",
                    mime.as_ref().map(|m| format!(" ({m})")).unwrap_or_default()
                ));
                ui.monospace(uri);
                match contents {
                    ResourceContents::Text(t) => {
                        ui.add(
                            egui::Label::new(mcpscope_core::text::shorten(t, 20_000))
                                .wrap()
                                .selectable(true),
                        );
                    }
                    ResourceContents::Blob(Ok(bytes)) => {
                        ui.label(format!("{} bytes of binary data", bytes.len()));
                        if ui.small_button("Save to a file").clicked() {
                            self.save(ui.ctx(), bytes, mime.as_deref().unwrap_or(""), i);
                        }
                    }
                    ResourceContents::Blob(Err(e)) => {
                        ui.label(RichText::new(format!("cannot decode the base64 blob: {e}")).color(theme::ERROR));
                    }
                }
            }
            Block::Unknown { kind, raw } => {
                ui.label(RichText::new(format!("unknown content type {kind:?}")).color(theme::WARN));
                let tree = self.block_trees.entry(i).or_default();
                json_tree::show(ui, raw, tree, "unknown-block");
            }
        }
    }
}

/// `tasks/get` of a finished extension task -> the tool's own response.
fn unwrap_task(v: Value) -> Value {
    let Some(r) = v.get("result").filter(|r| r.get("taskId").is_some()) else {
        return v;
    };
    let mut out = serde_json::json!({"jsonrpc": "2.0", "id": v.get("id").cloned().unwrap_or(Value::Null)});
    if let Some(inner) = r.get("result") {
        out["result"] = inner.clone();
    } else if let Some(e) = r.get("error") {
        out["error"] = e.clone();
    } else {
        return v;
    }
    out
}

fn banner(ui: &mut Ui, color: Color32, title: &str, body: &str) {
    egui::Frame::new()
        .stroke(egui::Stroke::new(1.5, color))
        .inner_margin(6.0)
        .corner_radius(4.0)
        .show(ui, |ui| {
            ui.set_width(ui.available_width());
            ui.label(RichText::new(title).color(color).strong());
            ui.add(egui::Label::new(body).wrap());
        });
}

fn protocol_error_banner(ui: &mut Ui, err: &Value) {
    let code = err.get("code").and_then(Value::as_i64);
    let message = err.get("message").and_then(Value::as_str).unwrap_or("(no message)");
    let title = match code {
        Some(c) => format!("✖ Protocol error {c} ({})", tool_result::error_meaning(c)),
        None => "✖ Protocol error (no integer code)".to_owned(),
    };
    banner(
        ui,
        theme::ERROR,
        &title,
        &format!("{message}\nThe server answered with a JSON-RPC error object."),
    );
}

fn prompt_messages_ui(ui: &mut Ui, result: &Value) {
    if let Some(d) = result.get("description").and_then(Value::as_str) {
        ui.weak(d);
    }
    for m in result.get("messages").and_then(Value::as_array).into_iter().flatten() {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("?");
        let content = m.get("content").cloned().unwrap_or(Value::Null);
        let text = match content.get("type").and_then(Value::as_str) {
            Some("text") => content.get("text").and_then(Value::as_str).unwrap_or("").to_owned(),
            Some(other) => format!("[{other}]"),
            None => content.to_string(),
        };
        egui::Frame::group(ui.style()).show(ui, |ui| {
            ui.set_width(ui.available_width());
            ui.strong(role);
            ui.add(
                egui::Label::new(mcpscope_core::text::shorten(&text, 20_000))
                    .wrap()
                    .selectable(true),
            );
        });
    }
}

fn resource_contents_ui(ui: &mut Ui, result: &Value) {
    for c in result.get("contents").and_then(Value::as_array).into_iter().flatten() {
        egui::Frame::group(ui.style()).show(ui, |ui| {
            ui.set_width(ui.available_width());
            ui.monospace(c.get("uri").and_then(Value::as_str).unwrap_or("?"));
            if let Some(m) = c.get("mimeType").and_then(Value::as_str) {
                ui.weak(m);
            }
            if let Some(t) = c.get("text").and_then(Value::as_str) {
                ui.add(
                    egui::Label::new(mcpscope_core::text::shorten(t, 20_000))
                        .wrap()
                        .selectable(true),
                );
            } else if let Some(b) = c.get("blob").and_then(Value::as_str) {
                ui.label(format!("blob: {} base64 characters", b.len()));
            }
        });
    }
}

/// Parses an answer, interprets a tool result and decodes its images: the
/// work a multi-megabyte answer must not do on the UI thread.
fn read(raw: &[u8], method: &str, output_schema: Option<&Value>) -> Read {
    let message = serde_json::from_slice::<Value>(raw).ok();
    // A task (2026-07-28 extension) that ended carries the tool's answer inline.
    let message = message.map(|v| {
        if method == methods::TOOLS_CALL {
            unwrap_task(v)
        } else {
            v
        }
    });
    let outcome = (method == methods::TOOLS_CALL)
        .then(|| message.as_ref().map(|v| tool_result::interpret(v, output_schema)))
        .flatten();
    let mut images = HashMap::new();
    if let Some(CallOutcome::ToolSuccess(r) | CallOutcome::ToolFailure(r)) = &outcome {
        for (i, block) in r.blocks.iter().enumerate() {
            if let Block::Image { data: Ok(bytes), .. } = block {
                images.insert(i, decode_image(bytes.as_slice()));
            }
        }
    }
    Read {
        message,
        outcome,
        images,
    }
}

/// Decodes PNG, JPEG, GIF or WebP bytes into pixels.
fn decode_image(bytes: &[u8]) -> Result<egui::ColorImage, String> {
    let img = image::load_from_memory(bytes).map_err(|e| format!("cannot decode the image: {e}"))?;
    let rgba = img.to_rgba8();
    let size = [rgba.width() as usize, rgba.height() as usize];
    Ok(egui::ColorImage::from_rgba_unmultiplied(size, rgba.as_raw()))
}

/// Writes a blob to a private file (0600, in mcpscope's 0700 directory of
/// this user), named by its type.
fn save_blob(bytes: &[u8], mime: &str, index: usize) -> anyhow::Result<PathBuf> {
    Ok(mcpscope_core::record::private_files::save_blob(
        &format!("content-{index}"),
        tool_result::file_extension(mime),
        bytes,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_finished_extension_task_shows_its_inline_result() {
        let polled = json!({"jsonrpc": "2.0", "id": 7, "result": {"taskId": "t1", "status": "completed",
            "result": {"content": [{"type": "text", "text": "sum is 42"}]}}});
        let shown = unwrap_task(polled);
        assert_eq!(shown["result"]["content"][0]["text"], "sum is 42");
        assert!(matches!(
            tool_result::interpret(&shown, None),
            CallOutcome::ToolSuccess(_)
        ));
        let failed = json!({"jsonrpc": "2.0", "id": 8, "result": {"taskId": "t2", "status": "failed",
            "error": {"code": -32603, "message": "boom"}}});
        assert!(matches!(
            tool_result::interpret(&unwrap_task(failed), None),
            CallOutcome::ProtocolError { code: -32603, .. }
        ));
        let plain = json!({"jsonrpc": "2.0", "id": 9, "result": {"content": []}});
        assert_eq!(unwrap_task(plain.clone()), plain);
    }
}
