//! Per-method latency: count, p50, p95 and max, with a small bar chart, and
//! the last ping's round trip. Recomputed only when responses arrived.

use crate::panels::timeline::format_latency;
use crate::theme;
use egui::{Align2, FontId, Pos2, Rect, Sense, Stroke, Ui, Vec2};
use mcpscope_core::timeline::model::{LatencySummary, SessionModel};
use std::time::{Duration, Instant};

/// Recompute at most this often while responses stream in.
const REFRESH: Duration = Duration::from_millis(500);

#[derive(Default)]
pub struct StatsPanel {
    pub summary: Vec<LatencySummary>,
    computed_for: usize,
    computed_at: Option<Instant>,
}

impl StatsPanel {
    pub fn reset(&mut self) {
        *self = StatsPanel::default();
    }

    pub fn sync(&mut self, model: &SessionModel) {
        let responses = model.responses_timed();
        let fresh = self.computed_at.is_some_and(|t| t.elapsed() < REFRESH);
        if responses != self.computed_for && !fresh {
            self.summary = model.latency_summary();
            self.computed_for = responses;
            self.computed_at = Some(Instant::now());
        }
    }

    pub fn ui(&mut self, ui: &mut Ui, model: &SessionModel) {
        self.sync(model);
        if self.summary.is_empty() {
            ui.weak("No answered requests yet.");
            return;
        }
        ui.columns(2, |cols| {
            egui::Grid::new("latency-table")
                .striped(true)
                .num_columns(5)
                .show(&mut cols[0], |ui| {
                    for h in ["method", "count", "p50", "p95", "max"] {
                        ui.strong(h);
                    }
                    ui.end_row();
                    for s in &self.summary {
                        ui.monospace(&s.method);
                        ui.monospace(s.count.to_string());
                        ui.monospace(format_latency(s.p50));
                        ui.monospace(format_latency(s.p95));
                        ui.monospace(format_latency(s.max));
                        ui.end_row();
                    }
                });
            chart_ui(&mut cols[1], &self.summary);
        });
    }
}

/// Horizontal bars per method: max (faint), p95, p50 (strong), on one scale.
fn chart_ui(ui: &mut Ui, summary: &[LatencySummary]) {
    let rows = summary.len().min(12);
    let row_h = 16.0;
    let (rect, response) = ui.allocate_exact_size(
        Vec2::new(ui.available_width(), row_h * rows as f32 + 18.0),
        Sense::hover(),
    );
    response.widget_info(|| egui::WidgetInfo::labeled(egui::Role::Image, true, "latency chart"));
    let p = ui.painter_at(rect);
    let label_w = 120.0;
    let max = summary
        .iter()
        .take(rows)
        .map(|s| s.max)
        .max()
        .unwrap_or_default()
        .max(Duration::from_micros(1));
    let scale = |d: Duration| (rect.width() - label_w - 8.0).max(10.0) * (d.as_secs_f64() / max.as_secs_f64()) as f32;
    let font = FontId::monospace(10.0);
    let text = ui.visuals().text_color();
    for (i, s) in summary.iter().take(rows).enumerate() {
        let y = rect.top() + i as f32 * row_h;
        p.text(
            Pos2::new(rect.left(), y + row_h / 2.0),
            Align2::LEFT_CENTER,
            mcpscope_core::text::ellipsize(&s.method, 18),
            font.clone(),
            text,
        );
        let x0 = rect.left() + label_w;
        let bar = |d: Duration, h: f32, color: egui::Color32| {
            p.rect_filled(
                Rect::from_min_size(Pos2::new(x0, y + (row_h - h) / 2.0), Vec2::new(scale(d).max(1.0), h)),
                1.0,
                color,
            );
        };
        bar(s.max, 12.0, theme::LIFELINE);
        bar(s.p95, 9.0, theme::WARN.gamma_multiply(0.8));
        bar(s.p50, 6.0, theme::OK);
    }
    let y = rect.top() + rows as f32 * row_h + 2.0;
    p.line_segment(
        [Pos2::new(rect.left() + label_w, y), Pos2::new(rect.right(), y)],
        Stroke::new(1.0, theme::LIFELINE),
    );
    p.text(
        Pos2::new(rect.right(), y + 2.0),
        Align2::RIGHT_TOP,
        format!("{} (bars: p50, p95, max)", format_latency(max)),
        font,
        ui.visuals().weak_text_color(),
    );
}
