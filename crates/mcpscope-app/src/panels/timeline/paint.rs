//! Drawing a row's lanes: where the lifelines stand, and the marks in the
//! margin and on the proxy.

use crate::theme::{self, RowKind, RowKindStyle as _};
use egui::{Align2, FontId, Pos2, Rect, Stroke, Vec2};
use mcpscope_core::timeline::model::{SessionModel, Severity};
use mcpscope_core::timeline::store::RowRef;
use mcpscope_core::transport::event::TouchKind;

/// Whether a frame with this fate never went past the proxy as it was
/// (held, dropped, answered instead, changed, or kept back by a fault).
pub(super) fn stops_at_proxy(fate: TouchKind) -> bool {
    !matches!(fate, TouchKind::Injected)
}

/// The mark on the proxy for what became of a frame there.
pub(super) fn paint_fate(p: &egui::Painter, at: Pos2, fate: TouchKind) {
    let color = RowKind::Touch.color();
    match fate {
        TouchKind::Dropped => {
            let d = 4.5;
            let stroke = Stroke::new(2.0, theme::ERROR);
            p.line_segment([at + Vec2::new(-d, -d), at + Vec2::new(d, d)], stroke);
            p.line_segment([at + Vec2::new(-d, d), at + Vec2::new(d, -d)], stroke);
        }
        TouchKind::Held | TouchKind::Fault => {
            p.circle_stroke(at, 4.5, Stroke::new(2.0, color));
        }
        _ => {
            p.circle_filled(at, 3.5, color);
        }
    }
}

/// The left margin's marks (handshake bracket, anomaly, conversation) and
/// the lint bar on the right edge.
pub(super) fn paint_margin(
    p: &egui::Painter,
    rect: Rect,
    geo: &Geometry,
    model: &SessionModel,
    row: &RowRef<'_>,
    conversation: Option<usize>,
    mark: Option<Severity>,
) {
    let idx = row.index();
    // Handshake group bracket and anomaly mark in the left margin.
    if model.handshake.contains(idx) {
        p.rect_filled(
            Rect::from_min_size(rect.left_top(), Vec2::new(3.0, rect.height())),
            0.0,
            theme::HANDSHAKE_MARK,
        );
    }
    if !row.anomalies().is_empty() {
        p.circle_filled(Pos2::new(rect.left() + 9.0, rect.center().y), 3.5, theme::ANOMALY_MARK);
    }
    if let Some(n) = conversation {
        // A multi round-trip chain: one colour per conversation, and its number.
        let color = theme::conversation_color(n);
        p.rect_filled(
            Rect::from_min_size(rect.left_top() + Vec2::new(4.0, 0.0), Vec2::new(3.0, rect.height())),
            0.0,
            color,
        );
        p.text(
            Pos2::new(geo.client_x - 60.0, rect.center().y),
            Align2::RIGHT_CENTER,
            format!("c{n}"),
            FontId::monospace(10.0),
            color,
        );
    }
    if let Some(sev) = mark {
        // Lint findings: a bar on the right edge, coloured by severity.
        p.rect_filled(
            Rect::from_min_size(rect.right_top() - Vec2::new(5.0, 0.0), Vec2::new(5.0, rect.height())),
            1.0,
            theme::severity_color(sev),
        );
    }
}

/// Room kept free at each end of an arrow for its head.
pub(super) const ARROW_LABEL_MARGIN: f32 = 14.0;

/// Where the lifelines are within a row.
pub(super) struct Geometry {
    pub(super) client_x: f32,
    pub(super) server_x: f32,
    pub(super) stderr_x: f32,
    /// The authorization server's, between client and server (drawn only
    /// in sessions that authorized).
    pub(super) auth_x: f32,
    /// The MCP App's View, left of the client that hosts it (only in
    /// sessions that hosted one).
    pub(super) app_x: Option<f32>,
    /// The model's (a chat's provider), left of the client that asks it
    /// (only in sessions with model turns).
    pub(super) model_x: Option<f32>,
}

impl Geometry {
    /// Where an authorization step's arrow starts and ends (no start: a dot
    /// at the end). The server's challenge and the retried MCP request are
    /// between client and server, the resource metadata comes from the
    /// server's side, the redirect back from the authorization server, and
    /// the rest goes to it.
    pub(super) fn auth_arrow(&self, step: Option<mcpscope_core::protocol::auth::Step>) -> (Option<f32>, f32) {
        use mcpscope_core::protocol::auth::Step;
        match step {
            Some(Step::Challenge) => (Some(self.server_x), self.client_x),
            Some(Step::Retry | Step::ResourceMetadata) => (Some(self.client_x), self.server_x),
            Some(Step::Callback) => (Some(self.auth_x), self.client_x),
            Some(Step::Failed) | None => (None, self.client_x),
            Some(_) => (Some(self.client_x), self.auth_x),
        }
    }

    /// The proxy's place, halfway between the client and the server.
    pub(super) fn proxy_x(&self) -> f32 {
        (self.client_x + self.server_x) / 2.0
    }

    /// Room kept right of the stderr lane for its text and notes.
    pub(super) const STDERR_TEXT: f32 = 190.0;
    /// Between the App's lifeline and the client's (at most, and at least).
    pub(super) const APP_ROOM: f32 = 110.0;
    pub(super) const APP_ROOM_MIN: f32 = 50.0;
    /// Room between the lifelines for a label of ~40 monospace characters.
    pub(super) const LABEL_ROOM: f32 = 330.0;

    pub(super) fn new(rect: Rect, app: bool, model: bool) -> Self {
        // With an App or a model, its lifeline takes the client's place and
        // the client moves right: View -> host -> server (model <- client ->
        // server) reads left to right. Narrow, their room shrinks first, so
        // the server's lifeline stays on screen.
        let sides = usize::from(app) + usize::from(model);
        let sides = sides.max(1) as f32;
        let room = ((rect.width() - 150.0 - 220.0 - 20.0) / sides).clamp(Self::APP_ROOM_MIN / sides, Self::APP_ROOM);
        let mut left = rect.left() + 150.0;
        let mut side = |on: bool| {
            on.then(|| {
                let x = left;
                left += room;
                x
            })
        };
        let app_x = side(app);
        let model_x = side(model);
        // The server's lifeline stays far enough from the right edge for the
        // stderr lane's text, however narrow the timeline is; between the
        // lifelines there is room for a long method (notifications/tools/
        // list_changed) whenever the stderr lane can spare it.
        let stderr_edge = rect.right() - 30.0 - Self::STDERR_TEXT;
        let right = (rect.left() + rect.width() * 0.62)
            .max((left + Self::LABEL_ROOM).min(stderr_edge))
            .min(stderr_edge)
            .max(left + 220.0);
        Self {
            client_x: left,
            server_x: right,
            stderr_x: right + 30.0,
            auth_x: left + (right - left) * 0.62,
            app_x,
            model_x,
        }
    }
}
