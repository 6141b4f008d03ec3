//! Design tokens: one colour and one glyph per kind of row, in one place.

use egui::Color32;

pub use mcpscope_core::timeline::row_kind::RowKind;

/// How each kind of row looks: its glyph and its colour.
pub trait RowKindStyle {
    fn glyph(self) -> &'static str;
    fn color(self) -> Color32;
}

impl RowKindStyle for RowKind {
    fn glyph(self) -> &'static str {
        match self {
            RowKind::Request => "▶",
            RowKind::Notification => "○",
            RowKind::Result => "✔",
            RowKind::RpcError => "✖",
            RowKind::ToolError => "⚠",
            RowKind::ServerRequest => "◀",
            RowKind::NotJson => "‼",
            RowKind::Stderr => "☰",
            RowKind::Meta => "•",
            RowKind::Auth => "🔑",
            RowKind::Touch => "✋",
            RowKind::App => "▣",
            RowKind::Model => "◆",
        }
    }

    fn color(self) -> Color32 {
        match self {
            RowKind::Request => Color32::from_rgb(0x5a, 0xa9, 0xff),
            RowKind::Notification => Color32::from_rgb(0x9e, 0x9e, 0xb8),
            RowKind::Result => Color32::from_rgb(0x4c, 0xc3, 0x7a),
            RowKind::RpcError => Color32::from_rgb(0xff, 0x55, 0x55),
            RowKind::ToolError => Color32::from_rgb(0xff, 0xa6, 0x2b),
            RowKind::ServerRequest => Color32::from_rgb(0xc0, 0x8b, 0xff),
            RowKind::NotJson => Color32::from_rgb(0xff, 0x2d, 0x9a),
            RowKind::Stderr => Color32::from_rgb(0xa0, 0x90, 0x70),
            RowKind::Meta => Color32::from_rgb(0x80, 0x80, 0x80),
            RowKind::Auth => Color32::from_rgb(0xe0, 0xc0, 0x40),
            RowKind::Touch => Color32::from_rgb(0xff, 0x8c, 0x5a),
            RowKind::App => Color32::from_rgb(0x3f, 0xc8, 0xc8),
            RowKind::Model => Color32::from_rgb(0xd0, 0x7a, 0xe8),
        }
    }
}

pub const SELECTED_BG: Color32 = Color32::from_rgba_premultiplied(60, 90, 140, 120);
pub const FINDING_BG: Color32 = Color32::from_rgba_premultiplied(120, 80, 20, 90);
pub const LINKED_BG: Color32 = Color32::from_rgba_premultiplied(50, 70, 50, 90);
pub const HANDSHAKE_MARK: Color32 = Color32::from_rgb(0x5a, 0xa9, 0xff);
pub const ANOMALY_MARK: Color32 = Color32::from_rgb(0xff, 0x2d, 0x9a);
pub const LIFELINE: Color32 = Color32::from_gray(90);
pub const OK: Color32 = Color32::from_rgb(0x4c, 0xc3, 0x7a);
pub const WARN: Color32 = Color32::from_rgb(0xff, 0xa6, 0x2b);
pub const ERROR: Color32 = Color32::from_rgb(0xff, 0x55, 0x55);

/// A colour per multi round-trip conversation, cycling.
pub fn conversation_color(n: usize) -> Color32 {
    const COLORS: [Color32; 4] = [
        Color32::from_rgb(0xc0, 0x84, 0xfc),
        Color32::from_rgb(0x2d, 0xd4, 0xbf),
        Color32::from_rgb(0xfb, 0x92, 0x3c),
        Color32::from_rgb(0xf4, 0x72, 0xb6),
    ];
    COLORS[n.saturating_sub(1) % COLORS.len()]
}

pub fn severity_color(s: mcpscope_core::timeline::model::Severity) -> Color32 {
    use mcpscope_core::timeline::model::Severity;
    match s {
        Severity::Ok => OK,
        Severity::Info => Color32::from_gray(170),
        Severity::Warning => WARN,
        Severity::Error => ERROR,
    }
}
