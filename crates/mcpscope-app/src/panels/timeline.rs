//! The sequence diagram: Client and Server lifelines, one arrow per frame,
//! stderr on its own lane. Virtualised with `show_rows`, filtered through an
//! index that is extended incrementally as rows arrive.

use crate::theme::{self, RowKind};
use egui::{Align2, FontId, Key, Pos2, Rect, Sense, Stroke, Ui, Vec2};
use mcpscope_core::record::model::{SessionModel, Severity};
use mcpscope_core::record::store::{FrameStore, Lane, RowRef};
use std::collections::{HashMap, HashSet};

pub const ROW_HEIGHT: f32 = 22.0;

/// The shortest the scrollbar thumb gets, however many rows there are.
pub const THUMB_MIN_LENGTH: f32 = 32.0;

/// Which rows to show.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Filter {
    /// Case-insensitive text anywhere in the raw line.
    pub text: String,
    /// Case-insensitive part of the method (of the request, for responses).
    pub method: String,
    /// Kinds to hide.
    pub hidden: HashSet<RowKind>,
}

impl Filter {
    pub fn is_empty(&self) -> bool {
        self.text.is_empty() && self.method.is_empty() && self.hidden.is_empty()
    }

    pub fn matches(&self, store: &FrameStore, row: &RowRef<'_>) -> bool {
        Compiled::new(self).matches(store, row)
    }
}

/// Filter text, lowercased once, found in a line ignoring ASCII case.
#[derive(Clone, Debug)]
struct Needle {
    lower: Vec<u8>,
}

impl Needle {
    fn new(text: &str) -> Self {
        Self {
            lower: text.to_lowercase().into_bytes(),
        }
    }

    fn found_in(&self, hay: &[u8]) -> bool {
        let n = &self.lower[..];
        let Some(&first) = n.first() else { return true };
        if n.len() > hay.len() {
            return false;
        }
        // memchr finds the candidates (both cases of the first byte) at SIMD speed.
        let starts = &hay[..=hay.len() - n.len()];
        let mut from = 0;
        while let Some(p) = memchr::memchr2(first, first.to_ascii_uppercase(), &starts[from..]) {
            let i = from + p;
            if hay[i + 1..i + n.len()]
                .iter()
                .zip(&n[1..])
                .all(|(a, b)| a.to_ascii_lowercase() == *b)
            {
                return true;
            }
            from = i + 1;
        }
        false
    }
}

/// A filter ready to test rows with.
#[derive(Clone, Debug)]
struct Compiled {
    hidden: HashSet<RowKind>,
    method: Option<Needle>,
    text: Option<Needle>,
}

impl Compiled {
    fn new(f: &Filter) -> Self {
        Self {
            hidden: f.hidden.clone(),
            method: (!f.method.is_empty()).then(|| Needle::new(&f.method)),
            text: (!f.text.is_empty()).then(|| Needle::new(&f.text)),
        }
    }

    fn matches(&self, store: &FrameStore, row: &RowRef<'_>) -> bool {
        if !self.hidden.is_empty() && self.hidden.contains(&RowKind::of(row)) {
            return false;
        }
        if let Some(needle) = &self.method {
            let m = row
                .method()
                .or_else(|| row.link().and_then(|(req, _)| store.get(req)).and_then(|r| r.method()));
            if !m.is_some_and(|m| needle.found_in(m.as_bytes())) {
                return false;
            }
        }
        self.text.as_ref().is_none_or(|n| n.found_in(row.raw()))
    }
}

/// How long one frame may spend filtering before it draws.
const FILTER_BUDGET: std::time::Duration = std::time::Duration::from_millis(6);

/// A new filter being applied a frame's budget at a time, while the rows of
/// the previous one stay on screen.
struct Rescan {
    filter: Filter,
    compiled: Compiled,
    /// Rows to test: every row, or (a filter that narrows the previous one)
    /// only the rows that passed the previous one, then the rows added since.
    candidates: Option<Vec<u32>>,
    next: usize,
    /// Rows from here on are tested whatever the candidates.
    tail_from: usize,
    found: Vec<u32>,
}

/// The rows that pass the filter, kept up to date incrementally. A changed
/// filter is applied in slices of at most [`FILTER_BUDGET`] per frame; the
/// previous rows stay listed until the new ones are complete.
#[derive(Default)]
pub struct RowIndex {
    filter: Filter,
    compiled: Option<Compiled>,
    visible: Vec<u32>,
    scanned: usize,
    rescan: Option<Rescan>,
}

/// Whether every row passing `new` also passes `old`.
fn narrows(new: &Filter, old: &Filter) -> bool {
    new.text.to_lowercase().contains(&old.text.to_lowercase())
        && new.method.to_lowercase().contains(&old.method.to_lowercase())
        && new.hidden.is_superset(&old.hidden)
}

impl RowIndex {
    pub fn set_filter(&mut self, filter: Filter) {
        let target = self.rescan.as_ref().map_or(&self.filter, |r| &r.filter);
        if filter == *target {
            return;
        }
        if filter.is_empty() {
            // Every row: nothing to test.
            self.rescan = None;
            self.filter = filter;
            self.compiled = None;
            self.visible = (0..self.scanned as u32).collect();
            return;
        }
        // The rows on screen passed the filter shown: a filter that narrows it
        // only needs to test them (and the rows added since).
        let candidates = narrows(&filter, &self.filter).then(|| self.visible.clone());
        self.rescan = Some(Rescan {
            compiled: Compiled::new(&filter),
            filter,
            candidates,
            next: 0,
            tail_from: self.scanned,
            found: Vec::new(),
        });
    }

    pub fn filter(&self) -> &Filter {
        &self.filter
    }

    /// While a changed filter is being applied: how far it got (0 to 1).
    pub fn progress(&self) -> Option<f32> {
        let r = self.rescan.as_ref()?;
        let total = r.candidates.as_ref().map_or(r.tail_from, Vec::len).max(1);
        Some((r.next as f32 / total as f32).min(1.0))
    }

    /// Examines rows added since the last call, and goes on applying a
    /// changed filter; at most [`FILTER_BUDGET`] of work.
    pub fn sync(&mut self, store: &FrameStore) {
        self.sync_within(store, FILTER_BUDGET);
    }

    /// [`RowIndex::sync`] with a budget (`Duration::MAX`: until done).
    pub fn sync_within(&mut self, store: &FrameStore, budget: std::time::Duration) {
        let deadline = std::time::Instant::now().checked_add(budget);
        let over = || deadline.is_some_and(|d| std::time::Instant::now() >= d);
        if store.len() < self.scanned {
            // A new session replaced the store.
            self.visible.clear();
            self.scanned = 0;
            if let Some(r) = &mut self.rescan {
                r.candidates = None;
                r.next = 0;
                r.tail_from = 0;
                r.found.clear();
            }
        }
        if let Some(r) = &mut self.rescan {
            let mut tested = 0usize;
            loop {
                // The candidates first, then every row added since the rescan began.
                let row = match &r.candidates {
                    Some(c) if r.next < c.len() => c[r.next] as usize,
                    Some(c) => r.tail_from + (r.next - c.len()),
                    None => r.next,
                };
                if row >= store.len() {
                    break;
                }
                let rr = store.get(row).expect("in range");
                if r.compiled.matches(store, &rr) {
                    r.found.push(row as u32);
                }
                r.next += 1;
                tested += 1;
                if tested.is_multiple_of(1024) && over() {
                    return;
                }
            }
            let r = self.rescan.take().expect("checked above");
            self.filter = r.filter;
            self.compiled = Some(r.compiled);
            self.visible = r.found;
            self.scanned = store.len();
            return;
        }
        match &self.compiled {
            None => self.visible.extend(self.scanned as u32..store.len() as u32),
            Some(c) => {
                for i in self.scanned..store.len() {
                    let row = store.get(i).expect("in range");
                    if c.matches(store, &row) {
                        self.visible.push(i as u32);
                    }
                }
            }
        }
        self.scanned = store.len();
    }

    pub fn len(&self) -> usize {
        self.visible.len()
    }

    pub fn is_empty(&self) -> bool {
        self.visible.is_empty()
    }

    pub fn row_at(&self, position: usize) -> Option<usize> {
        self.visible.get(position).map(|&r| r as usize)
    }

    /// Position of a row in the filtered list (or of the nearest row before it).
    pub fn position_of(&self, row: usize) -> Option<usize> {
        match self.visible.binary_search(&(row as u32)) {
            Ok(p) => Some(p),
            Err(0) => None,
            Err(p) => Some(p - 1),
        }
    }

    pub fn reset(&mut self) {
        self.visible.clear();
        self.scanned = 0;
        if let Some(r) = self.rescan.take() {
            // Start the pending filter from scratch on the next sync.
            self.filter = Filter::default();
            self.compiled = None;
            self.set_filter(r.filter);
        }
    }
}

/// What the timeline asks the app to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimelineAction {
    Select(usize),
}

pub struct TimelinePanel {
    pub index: RowIndex,
    pub filter: Filter,
    pub follow_tail: bool,
    pub selected: Option<usize>,
    /// Rows tied to the selection (its request or responses), computed once per selection.
    linked: Vec<usize>,
    linked_for: Option<usize>,
    scroll_to_selection: bool,
    /// The most severe lint finding per row (from the Expert panel).
    pub finding_marks: HashMap<usize, Severity>,
    /// Rows of the finding selected in the Expert panel.
    pub highlighted: Vec<usize>,
}

impl Default for TimelinePanel {
    fn default() -> Self {
        Self {
            index: RowIndex::default(),
            filter: Filter::default(),
            follow_tail: true,
            selected: None,
            linked: Vec::new(),
            linked_for: None,
            scroll_to_selection: false,
            finding_marks: HashMap::new(),
            highlighted: Vec::new(),
        }
    }
}

impl TimelinePanel {
    pub fn reset(&mut self) {
        self.index.reset();
        self.selected = None;
        self.linked.clear();
        self.linked_for = None;
        self.finding_marks.clear();
        self.highlighted.clear();
    }

    pub fn select(&mut self, row: usize) {
        self.selected = Some(row);
        self.scroll_to_selection = true;
        self.follow_tail = false;
    }

    fn update_links(&mut self, store: &FrameStore) {
        if self.linked_for == self.selected {
            return;
        }
        self.linked_for = self.selected;
        self.linked.clear();
        if let Some(sel) = self.selected
            && let Some(row) = store.get(sel)
        {
            if let Some((req, _)) = row.link() {
                self.linked.push(req);
                self.linked.extend(store.responses_to(req).filter(|&r| r != sel));
            } else {
                self.linked.extend(store.responses_to(sel));
            }
        }
    }

    pub fn linked(&self) -> &[usize] {
        &self.linked
    }

    /// Moves the selection by `delta` visible rows.
    pub fn step_selection(&mut self, delta: isize) {
        if self.index.is_empty() {
            return;
        }
        let current = self.selected.and_then(|s| self.index.position_of(s));
        let next = match current {
            None if delta > 0 => 0,
            None => self.index.len() - 1,
            Some(p) => (p as isize + delta).clamp(0, self.index.len() as isize - 1) as usize,
        };
        if let Some(row) = self.index.row_at(next) {
            self.select(row);
        }
    }

    pub fn ui(&mut self, ui: &mut Ui, model: &SessionModel) -> Option<TimelineAction> {
        let mut action = None;
        self.filter_bar(ui, model);
        self.index.set_filter(self.filter.clone());
        self.index.sync(&model.store);
        if self.index.progress().is_some() {
            // A changed filter goes on in the next frame.
            ui.ctx().request_repaint();
        }
        self.update_links(&model.store);

        // Up/Down move between frames unless a text field has the keyboard.
        if !ui.ctx().egui_wants_keyboard_input() {
            let (down, up) = ui.input(|i| (i.key_pressed(Key::ArrowDown), i.key_pressed(Key::ArrowUp)));
            if down {
                self.step_selection(1);
            }
            if up {
                self.step_selection(-1);
            }
            if let Some(s) = self.selected
                && (up || down)
            {
                action = Some(TimelineAction::Select(s));
            }
        }

        self.lifeline_header(ui, model.store.has_auth());
        let total = self.index.len();
        let row_h = ROW_HEIGHT;
        let spacing = ui.spacing().item_spacing.y;
        // A million rows must not shrink the thumb to a dot.
        ui.spacing_mut().scroll.handle_min_length = THUMB_MIN_LENGTH;
        // Scrolling the list by hand stops following the tail.
        let wheel = ui.input(|i| i.smooth_scroll_delta.y != 0.0);
        if self.follow_tail && wheel && ui.rect_contains_pointer(ui.available_rect_before_wrap()) {
            self.follow_tail = false;
        }
        let mut area = egui::ScrollArea::vertical()
            .id_salt("timeline")
            .auto_shrink([false, false])
            .stick_to_bottom(self.follow_tail);
        if self.follow_tail {
            // Ticked means the newest row is on screen, wherever the view was
            // (an exact offset: one past the end would hide every row).
            let content = total as f32 * (row_h + spacing) - spacing;
            area = area.vertical_scroll_offset((content - ui.available_height()).max(0.0));
        }
        if self.scroll_to_selection
            && let Some(pos) = self.selected.and_then(|s| self.index.position_of(s))
        {
            let target = pos as f32 * (row_h + spacing);
            let view_h = ui.available_height();
            area = area.vertical_scroll_offset((target - view_h / 2.0).max(0.0));
            self.scroll_to_selection = false;
        }
        area.show_rows(ui, row_h, total, |ui, range| {
            for pos in range {
                let Some(row_idx) = self.index.row_at(pos) else {
                    continue;
                };
                let Some(row) = model.store.get(row_idx) else { continue };
                if self.row_ui(ui, model, &row) {
                    self.selected = Some(row_idx);
                    self.follow_tail = false;
                    action = Some(TimelineAction::Select(row_idx));
                }
            }
        });
        action
    }

    fn filter_bar(&mut self, ui: &mut Ui, model: &SessionModel) {
        ui.horizontal(|ui| {
            ui.label("Filter");
            ui.add(
                egui::TextEdit::singleline(&mut self.filter.text)
                    .hint_text("text in the line")
                    .desired_width(180.0),
            );
            ui.add(
                egui::TextEdit::singleline(&mut self.filter.method)
                    .hint_text("method")
                    .desired_width(120.0),
            );
            ui.menu_button("Kinds", |ui| {
                for kind in RowKind::ALL {
                    let mut shown = !self.filter.hidden.contains(&kind);
                    let text = egui::RichText::new(format!("{} {}", kind.glyph(), kind.name())).color(kind.color());
                    if ui.checkbox(&mut shown, text).changed() {
                        if shown {
                            self.filter.hidden.remove(&kind);
                        } else {
                            self.filter.hidden.insert(kind);
                        }
                    }
                }
            });
            if !self.filter.is_empty() && ui.button("Clear").clicked() {
                self.filter = Filter::default();
            }
            ui.checkbox(&mut self.follow_tail, "Follow tail");
            ui.label(format!("{} of {} rows", self.index.len(), model.store.len()));
            if let Some(done) = self.index.progress() {
                ui.spinner();
                ui.weak(format!("filtering {:.0} %", done * 100.0));
            }
        });
    }

    fn lifeline_header(&self, ui: &mut Ui, auth: bool) {
        let (rect, _) = ui.allocate_exact_size(Vec2::new(ui.available_width(), 18.0), Sense::hover());
        let geo = Geometry::new(rect);
        let p = ui.painter();
        let font = FontId::proportional(13.0);
        let color = ui.visuals().strong_text_color();
        if auth {
            p.text(
                Pos2::new(geo.auth_x, rect.center().y),
                Align2::CENTER_CENTER,
                "Authorization server",
                font.clone(),
                RowKind::Auth.color(),
            );
        }
        p.text(
            Pos2::new(geo.client_x, rect.center().y),
            Align2::CENTER_CENTER,
            "Client",
            font.clone(),
            color,
        );
        p.text(
            Pos2::new(geo.server_x, rect.center().y),
            Align2::CENTER_CENTER,
            "Server",
            font.clone(),
            color,
        );
        p.text(
            Pos2::new(geo.stderr_x, rect.center().y),
            Align2::LEFT_CENTER,
            "stderr",
            font,
            color,
        );
    }

    /// Draws one row; returns true when it was clicked.
    fn row_ui(&self, ui: &mut Ui, model: &SessionModel, row: &RowRef<'_>) -> bool {
        let idx = row.index();
        let kind = RowKind::of(row);
        let label = row_label(&model.store, row);
        let mark = self.finding_marks.get(&idx).copied();
        let conversation = model.conversation_rows.get(&idx).copied();
        let (rect, response) = ui.allocate_exact_size(Vec2::new(ui.available_width(), ROW_HEIGHT), Sense::click());
        response.widget_info(|| {
            let lint = mark.map(|s| format!(" [lint {}]", s.as_str())).unwrap_or_default();
            let conv = conversation.map(|n| format!(" [conversation {n}]")).unwrap_or_default();
            egui::WidgetInfo::labeled(egui::Role::Button, true, format!("row {idx}: {label}{lint}{conv}"))
        });
        if !ui.is_rect_visible(rect) {
            return response.clicked();
        }
        let p = ui.painter_at(rect);
        let geo = Geometry::new(rect);
        if self.selected == Some(idx) {
            p.rect_filled(rect, 2.0, theme::SELECTED_BG);
        } else if self.highlighted.contains(&idx) {
            p.rect_filled(rect, 2.0, theme::FINDING_BG);
        } else if self.linked.contains(&idx) {
            p.rect_filled(rect, 2.0, theme::LINKED_BG);
        } else if response.hovered() {
            p.rect_filled(rect, 2.0, ui.visuals().widgets.hovered.weak_bg_fill);
        }
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
        let mono = FontId::monospace(12.0);
        let text_color = ui.visuals().text_color();
        p.text(
            Pos2::new(rect.left() + 16.0, rect.center().y),
            Align2::LEFT_CENTER,
            format!("{:>9.3}", row.at().as_secs_f64()),
            mono.clone(),
            ui.visuals().weak_text_color(),
        );
        let lifeline = Stroke::new(1.0, theme::LIFELINE);
        p.line_segment(
            [
                Pos2::new(geo.client_x, rect.top()),
                Pos2::new(geo.client_x, rect.bottom()),
            ],
            lifeline,
        );
        p.line_segment(
            [
                Pos2::new(geo.server_x, rect.top()),
                Pos2::new(geo.server_x, rect.bottom()),
            ],
            lifeline,
        );
        if model.store.has_auth() {
            // The authorization server's lifeline, dashed: it is spoken to only while authorizing.
            p.add(egui::Shape::dashed_line(
                &[Pos2::new(geo.auth_x, rect.top()), Pos2::new(geo.auth_x, rect.bottom())],
                Stroke::new(1.0, RowKind::Auth.color().gamma_multiply(0.45)),
                4.0,
                3.0,
            ));
        }
        let color = kind.color();
        // Kind colours (pink, amber) are hard to read on the selection's
        // blue: a selected row's text is drawn in the strong text colour.
        let label_color = if self.selected == Some(idx) {
            ui.visuals().strong_text_color()
        } else {
            color
        };
        let y = rect.center().y + 4.0;
        let glyph_label = format!("{} {label}", kind.glyph());
        match row.lane() {
            Lane::Out | Lane::In => {
                let (from, to) = if row.lane() == Lane::Out {
                    (geo.client_x, geo.server_x)
                } else {
                    (geo.server_x, geo.client_x)
                };
                let width = if kind == RowKind::NotJson { 3.0 } else { 1.5 };
                let stroke = Stroke::new(width, color);
                p.arrow(Pos2::new(from, y), Vec2::new(to - from, 0.0), stroke);
                // Between the lifelines, clear of both arrowheads: a long
                // label is cut with an ellipsis instead of running past them.
                let room = (geo.server_x - geo.client_x - 2.0 * ARROW_LABEL_MARGIN).max(20.0);
                let mut job = egui::text::LayoutJob::simple_singleline(glyph_label.clone(), mono.clone(), label_color);
                job.wrap = egui::text::TextWrapping::truncate_at_width(room);
                let galley = p.layout_job(job);
                let x = (geo.client_x + geo.server_x) / 2.0 - galley.size().x / 2.0;
                p.galley(Pos2::new(x, rect.top() + 1.0), galley, label_color);
                if let Some((_, latency)) = row.link() {
                    p.text(
                        Pos2::new(geo.client_x - 6.0, rect.center().y),
                        Align2::RIGHT_CENTER,
                        format_latency(latency),
                        FontId::monospace(11.0),
                        ui.visuals().weak_text_color(),
                    );
                }
            }
            Lane::Stderr => {
                p.circle_filled(Pos2::new(geo.server_x, rect.center().y), 3.0, color);
                p.line_segment(
                    [
                        Pos2::new(geo.server_x, rect.center().y),
                        Pos2::new(geo.stderr_x - 4.0, rect.center().y),
                    ],
                    Stroke::new(1.0, color.gamma_multiply(0.5)),
                );
                p.text(
                    Pos2::new(geo.stderr_x, rect.center().y),
                    Align2::LEFT_CENTER,
                    &glyph_label,
                    mono.clone(),
                    label_color,
                );
            }
            Lane::Auth => {
                use mcpscope_core::protocol::auth::Step;
                let color = match row.auth_status() {
                    _ if row.auth_failed() => theme::ERROR,
                    Some(s) if s >= 400 => theme::ERROR,
                    _ => color,
                };
                // Who speaks to whom: the server's challenge and the retry of
                // the MCP request are between client and server; the resource
                // metadata comes from the server's side; the redirect comes
                // back from the authorization server; the rest goes to it.
                let step = row.auth_step();
                let (from, to) = match step {
                    Some(Step::Challenge) => (Some(geo.server_x), geo.client_x),
                    Some(Step::Retry) => (Some(geo.client_x), geo.server_x),
                    Some(Step::ResourceMetadata) => (Some(geo.client_x), geo.server_x),
                    Some(Step::Callback) => (Some(geo.auth_x), geo.client_x),
                    Some(Step::Failed) | None => (None, geo.client_x),
                    Some(_) => (Some(geo.client_x), geo.auth_x),
                };
                match from {
                    Some(from) => {
                        p.arrow(Pos2::new(from, y), Vec2::new(to - from, 0.0), Stroke::new(1.5, color));
                    }
                    None => {
                        p.circle_filled(Pos2::new(to, rect.center().y), 3.5, color);
                    }
                }
                p.text(
                    Pos2::new(geo.client_x + 8.0, rect.top() + 1.0),
                    Align2::LEFT_TOP,
                    &glyph_label,
                    mono.clone(),
                    color,
                );
            }
            Lane::Meta => {
                // Left-aligned from the client lifeline: a long note must not run over the time column.
                p.text(
                    Pos2::new(geo.client_x + 8.0, rect.center().y),
                    Align2::LEFT_CENTER,
                    &glyph_label,
                    mono.clone(),
                    label_color,
                );
            }
        }
        let _ = text_color;
        response.clicked()
    }
}

/// Room kept free at each end of an arrow for its head.
const ARROW_LABEL_MARGIN: f32 = 14.0;

/// Where the lifelines are within a row.
struct Geometry {
    client_x: f32,
    server_x: f32,
    stderr_x: f32,
    /// The authorization server's, between client and server (drawn only
    /// in sessions that authorized).
    auth_x: f32,
}

impl Geometry {
    /// Room kept right of the stderr lane for its text and notes.
    const STDERR_TEXT: f32 = 190.0;

    fn new(rect: Rect) -> Self {
        let left = rect.left() + 150.0;
        // The server's lifeline stays far enough from the right edge for the
        // stderr lane's text, however narrow the timeline is.
        let right = (rect.left() + rect.width() * 0.62)
            .min(rect.right() - 30.0 - Self::STDERR_TEXT)
            .max(left + 220.0);
        Self {
            client_x: left,
            server_x: right,
            stderr_x: right + 30.0,
            auth_x: left + (right - left) * 0.62,
        }
    }
}

pub fn format_latency(d: std::time::Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms < 10.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.0} ms")
    }
}

/// The label of a row: the method, or `result #id` / `error #id`, or the text.
pub fn row_label(store: &FrameStore, row: &RowRef<'_>) -> String {
    use mcpscope_core::wire::classify::Kind;
    let id = row.id().map(|i| format!(" #{i}")).unwrap_or_default();
    match row.lane() {
        Lane::Stderr | Lane::Meta => mcpscope_core::text::ellipsize(&row.text(), 160),
        Lane::Auth => format!("OAuth {}", row.method().unwrap_or_default()),
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
            Kind::Error => format!("error{id} {}", row.error_code().unwrap_or_default()),
            Kind::Batch => "batch".into(),
            Kind::NotJsonRpc => format!("not JSON-RPC: {}", mcpscope_core::text::ellipsize(&row.text(), 60)),
            Kind::NotJson => format!("NOT JSON: {}", mcpscope_core::text::ellipsize(&row.text(), 60)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpscope_core::record::replay::Replay;
    use mcpscope_core::wire::frame::Direction;

    fn model(lines: &[(Direction, &str)]) -> SessionModel {
        Replay::of(lines).model()
    }

    fn sample() -> SessionModel {
        model(&[
            (Direction::Out, r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
            (
                Direction::In,
                r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"Hello"}}"#,
            ),
            (Direction::In, r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#),
            (Direction::In, "Server started on stdio"),
            (Direction::Out, r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#),
        ])
    }

    #[test]
    fn filters_by_text_method_and_kind_incrementally() {
        let m = sample();
        let mut idx = RowIndex::default();
        idx.sync(&m.store);
        assert_eq!(idx.len(), 5);
        idx.set_filter(Filter {
            text: "HELLO".into(),
            ..Filter::default()
        });
        idx.sync(&m.store);
        assert_eq!(idx.row_at(0), Some(1));
        assert_eq!(idx.len(), 1);
        idx.set_filter(Filter {
            method: "tools/".into(),
            ..Filter::default()
        });
        idx.sync(&m.store);
        assert_eq!(
            (0..idx.len()).map(|p| idx.row_at(p).unwrap()).collect::<Vec<_>>(),
            [0, 2],
            "responses match by their request's method"
        );
        let mut hidden = HashSet::new();
        hidden.insert(RowKind::NotJson);
        hidden.insert(RowKind::Notification);
        idx.set_filter(Filter {
            hidden,
            ..Filter::default()
        });
        idx.sync(&m.store);
        assert_eq!(idx.len(), 3);
    }

    /// Issue #14: a changed filter never blocks a frame. It is applied a slice
    /// at a time while the previous rows stay listed; a filter that narrows
    /// the previous one tests only the rows that passed it, and rows that
    /// arrive meanwhile are not missed.
    #[test]
    fn a_changed_filter_is_applied_in_slices_keeping_the_last_result() {
        let mut r = Replay::new().without_events();
        let mut m = SessionModel::new(mcpscope_core::record::model::Source::Live {
            command_line: "t".into(),
        });
        let mut add = |m: &mut SessionModel, i: usize| {
            let word = if i.is_multiple_of(2) { "alpha" } else { "Beta" };
            let line =
                format!(r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"data":"{word} {i}"}}}}"#);
            let f = r.frame(Direction::In, line.as_bytes());
            m.apply(&mcpscope_core::transport::event::Event::Frame(f));
        };
        for i in 0..20_000 {
            add(&mut m, i);
        }
        let mut idx = RowIndex::default();
        idx.sync(&m.store);
        assert_eq!(idx.len(), 20_000);
        idx.set_filter(Filter {
            text: "beta".into(),
            ..Filter::default()
        });
        idx.sync_within(&m.store, std::time::Duration::ZERO);
        assert!(
            idx.progress().is_some_and(|p| p < 1.0),
            "one slice, not the whole store"
        );
        assert_eq!(idx.len(), 20_000, "the last result stays until the new one is complete");
        // Rows that arrive while the filter is applied are tested too.
        add(&mut m, 20_001);
        let mut slices = 1;
        while idx.progress().is_some() {
            idx.sync_within(&m.store, std::time::Duration::ZERO);
            slices += 1;
        }
        assert!(slices > 5, "{slices}");
        assert_eq!(idx.len(), 10_001);
        assert_eq!(idx.row_at(10_000), Some(20_000));
        // Narrowing: only the 10,001 rows listed are tested, so fewer slices.
        idx.set_filter(Filter {
            text: "beta 1".into(),
            ..Filter::default()
        });
        let mut slices = 0;
        while {
            idx.sync_within(&m.store, std::time::Duration::ZERO);
            slices += 1;
            idx.progress().is_some()
        } {}
        assert!(slices <= 10_001 / 1024 + 1, "{slices}");
        let expected = (0..=20_001)
            .filter(|i| i % 2 == 1 && format!("{i}").starts_with('1'))
            .count();
        assert_eq!(idx.len(), expected);
        // Clearing the filter lists every row at once.
        idx.set_filter(Filter::default());
        assert_eq!(idx.len(), 20_001);
    }

    #[test]
    fn text_is_found_ignoring_ascii_case() {
        for (hay, needle, found) in [
            ("Hello World", "hello", true),
            ("Hello World", "O W", true),
            ("Hello World", "world!", false),
            ("abc", "", true),
            ("ab", "abc", false),
            ("xxAbC", "abc", true),
            ("ÉCOLE école", "école", true),
        ] {
            assert_eq!(
                Needle::new(needle).found_in(hay.as_bytes()),
                found,
                "{hay:?} {needle:?}"
            );
        }
    }

    #[test]
    fn labels_and_keyboard_steps() {
        let m = sample();
        assert_eq!(row_label(&m.store, &m.store.get(2).unwrap()), "result #1 (tools/list)");
        assert_eq!(
            row_label(&m.store, &m.store.get(3).unwrap()),
            "NOT JSON: Server started on stdio"
        );
        let mut t = TimelinePanel::default();
        t.index.sync(&m.store);
        t.step_selection(1);
        assert_eq!(t.selected, Some(0));
        t.step_selection(1);
        t.step_selection(1);
        assert_eq!(t.selected, Some(2));
        t.update_links(&m.store);
        assert_eq!(t.linked(), [0]);
        t.step_selection(10);
        assert_eq!(t.selected, Some(4));
        t.step_selection(-1);
        assert_eq!(t.selected, Some(3));
    }

    /// #14: ticking Follow tail shows the newest row wherever the view was.
    #[test]
    fn follow_tail_jumps_to_the_newest_row() {
        use egui_kittest::Harness;
        use egui_kittest::kittest::Queryable as _;
        let mut r = Replay::new();
        for i in 0..400 {
            r.out(&format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"ping"}}"#));
        }
        let m = r.model();
        let panel = TimelinePanel {
            follow_tail: false,
            ..TimelinePanel::default()
        };
        let mut h = Harness::builder().with_size([900.0, 400.0]).build_ui_state(
            |ui, t: &mut TimelinePanel| {
                let _ = t.ui(ui, &m);
            },
            panel,
        );
        h.run_steps(2);
        let newest = "ping #399";
        assert!(
            h.query_by_label_contains(newest).is_none(),
            "the view starts at the top"
        );
        h.state_mut().follow_tail = true;
        h.run_steps(2);
        assert!(h.query_by_label_contains(newest).is_some(), "the newest row is shown");
        assert!(h.state().follow_tail);
    }

    /// #14: at the default window size every lane, and the stderr lane's
    /// text, fits in the timeline.
    #[test]
    fn every_lane_fits_at_the_default_size() {
        // 1440 px wide, minus the launcher (300) and detail (460) panels.
        let rect = Rect::from_min_size(egui::pos2(300.0, 0.0), Vec2::new(680.0, 500.0));
        let g = Geometry::new(rect);
        assert!(g.client_x > rect.left() + 100.0, "room for the time column");
        assert!(g.server_x - g.client_x > 200.0, "room for arrow labels");
        assert!(
            rect.right() - g.stderr_x >= Geometry::STDERR_TEXT,
            "room for stderr text"
        );
    }
}
