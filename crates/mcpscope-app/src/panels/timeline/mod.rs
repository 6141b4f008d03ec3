//! The sequence diagram: Client and Server lifelines, one arrow per frame,
//! stderr on its own lane. Virtualised with `show_rows`, filtered through an
//! index that is extended incrementally as rows arrive.

use crate::theme::{self, RowKind, RowKindStyle as _};
use egui::{Align2, FontId, Key, Pos2, Rect, Sense, Stroke, Ui, Vec2};
use mcpscope_core::timeline::model::{SessionModel, Severity};
use mcpscope_core::timeline::store::{FrameStore, Lane, RowRef};
use mcpscope_core::transport::event::{AppToward, TouchKind};
use mcpscope_core::wire::frame::Direction;
use std::collections::HashMap;

mod labels;
mod paint;

use labels::{app_message_label, row_menu, session_methods};
pub use labels::{era_probe_refused, format_latency, row_label};
use paint::{ARROW_LABEL_MARGIN, Geometry, paint_fate, paint_margin, stops_at_proxy};

pub const ROW_HEIGHT: f32 = 22.0;

/// The shortest the scrollbar thumb gets, however many rows there are.
pub const THUMB_MIN_LENGTH: f32 = 32.0;

use super::filter_bar::{ColorRules, FilterBar, FilterChange, FilterPrefs};
use mcpscope_core::filter::complete::Vocabulary;
pub use mcpscope_core::filter::row_index::RowIndex;
use mcpscope_core::filter::rows::{RowSubject, SessionFacts};
use mcpscope_core::filter::{Join, combine};

/// What the timeline asks the app to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimelineAction {
    Select(usize),
}

/// What the session around the timeline gives its filter.
pub struct FilterContext<'a> {
    pub facts: SessionFacts<'a>,
    pub prefs: &'a mut FilterPrefs,
    /// Tool names, for completion inside `params.name == "…"`.
    pub tools: &'a [String],
}

pub struct TimelinePanel {
    pub index: RowIndex,
    pub filter: FilterBar,
    colors: ColorRules,
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
    /// Positions (in the filtered list) of the first and last rows wholly
    /// on screen in the last frame.
    pub visible: Option<(usize, usize)>,
    /// Every lint finding per row (rule, severity), for `finding.*` filters.
    findings: HashMap<usize, Vec<(&'static str, &'static str)>>,
    /// What a session no driver followed (a capture, a proxied session) is
    /// read as, for filters on `era` and `conversation`: worked out when such
    /// a filter runs, again when rows arrive.
    inferred: Option<Inferred>,
    /// `MCPSCOPE_FILTER_TRACE=1`: say on stderr when each filter is on screen
    /// (how the keystroke figures in BENCHMARKS.md were measured, in the real app).
    trace: Option<FilterTrace>,
}

struct Inferred {
    rows: usize,
    at: std::time::Instant,
    era: Option<&'static str>,
    conversations: HashMap<usize, usize>,
}

struct FilterTrace {
    /// When the filter text last changed, and to what.
    since: Option<(std::time::Instant, String)>,
    /// The longest frame (time between frames) while it was applied. The
    /// frame the change came in is not counted: its time since the frame
    /// before is how long the window sat idle (a pause before a backspace
    /// read as a 1.3 s "frame"); its own length is the next frame's time.
    worst_frame: f32,
    frames: u32,
    /// The filter's rows were complete (when, after how long): said the
    /// frame after, once they have been drawn.
    complete: Option<(f64, usize)>,
}

impl Default for TimelinePanel {
    fn default() -> Self {
        Self {
            index: RowIndex::default(),
            filter: FilterBar::default(),
            colors: ColorRules::default(),
            follow_tail: true,
            selected: None,
            linked: Vec::new(),
            linked_for: None,
            scroll_to_selection: false,
            finding_marks: HashMap::new(),
            highlighted: Vec::new(),
            visible: None,
            findings: HashMap::new(),
            inferred: None,
            trace: std::env::var_os("MCPSCOPE_FILTER_TRACE").map(|_| FilterTrace {
                since: None,
                worst_frame: 0.0,
                frames: 0,
                complete: None,
            }),
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
        self.findings.clear();
        self.visible = None;
    }

    /// The Expert panel's findings changed: a filter on them is applied again.
    pub fn set_findings(&mut self, shown: &[super::expert::ShownFinding]) {
        self.findings.clear();
        for f in shown {
            for &row in &f.rows {
                self.findings
                    .entry(row)
                    .or_default()
                    .push((f.finding.rule, f.finding.severity.as_str()));
            }
        }
        if self.index.filter().is_some_and(|f| f.needs().findings) {
            self.index.refresh();
        }
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
            // A model turn and the tool calls it caused (with their answers).
            if let Some(turn) = row.caused_by_model() {
                self.linked.push(turn);
            }
            for call in row.model_caused() {
                self.linked.push(call);
                self.linked.extend(store.responses_to(call));
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
        let len = self.index.len();
        // With nothing selected, Down takes the first row on screen and Up the last.
        let next = match current {
            None if delta > 0 => self.visible.map_or(0, |(first, _)| first).min(len - 1),
            None => self.visible.map_or(len - 1, |(_, last)| last).min(len - 1),
            Some(p) => (p as isize + delta).clamp(0, self.index.len() as isize - 1) as usize,
        };
        if let Some(row) = self.index.row_at(next) {
            self.select(row);
        }
    }

    pub fn ui(&mut self, ui: &mut Ui, model: &SessionModel, cx: FilterContext<'_>) -> Option<TimelineAction> {
        let mut action = None;
        let store = &model.store;
        let tools = cx.tools;
        let vocab = || Vocabulary {
            methods: session_methods(store),
            tools: tools.to_vec(),
            rules: mcpscope_core::analysis::lint::RULES
                .iter()
                .map(|r| r.id.to_owned())
                .collect(),
        };
        let progress = self.index.progress();
        let counts = (self.index.len(), store.len());
        if let Some(FilterChange::Apply(f)) =
            self.filter
                .ui(ui, cx.prefs, &vocab, counts, progress, &mut self.follow_tail)
        {
            self.index.set_filter(f);
            if let Some(t) = &mut self.trace {
                t.since = Some((std::time::Instant::now(), self.filter.text.clone()));
                t.worst_frame = 0.0;
                t.frames = 0;
                t.complete = None;
            }
        }
        self.colors.update(&cx.prefs.colors);
        let findings = std::mem::take(&mut self.findings);
        let needs = self.index.filter().map(|f| f.needs()).unwrap_or_default();
        let live_conversations = cx.facts.conversations.is_some_and(|c| !c.is_empty());
        // Worked out again as rows arrive, at most once a second (a walk over every row).
        if (needs.era && cx.facts.era.is_none() || needs.conversation && !live_conversations)
            && self
                .inferred
                .as_ref()
                .is_none_or(|i| i.rows != store.len() && i.at.elapsed() >= std::time::Duration::from_secs(1))
        {
            let new = Inferred {
                rows: store.len(),
                at: std::time::Instant::now(),
                era: mcpscope_core::filter::rows::infer_era(store),
                conversations: mcpscope_core::filter::rows::infer_conversations(store),
            };
            let changed = self
                .inferred
                .as_ref()
                .is_none_or(|i| i.era != new.era || i.conversations != new.conversations);
            self.inferred = Some(new);
            if changed {
                self.index.refresh();
            }
        }
        let inferred = self.inferred.take();
        let facts = SessionFacts {
            findings: Some(&findings),
            era: cx.facts.era.or(inferred.as_ref().and_then(|i| i.era)),
            conversations: if live_conversations {
                cx.facts.conversations
            } else {
                inferred.as_ref().map(|i| &i.conversations)
            },
            ..cx.facts
        };
        // A slice of filtering per frame: 10 ms where frames are quick, up to
        // half a slow frame (software rendering draws a frame in 50-90 ms),
        // so a filter is on screen in a few frames either way.
        let frame = std::time::Duration::from_secs_f32(ui.input(|i| i.unstable_dt).clamp(0.0, 1.0));
        let budget = (frame / 2).clamp(
            mcpscope_core::filter::row_index::FILTER_BUDGET,
            std::time::Duration::from_millis(50),
        );
        self.index.sync_within(&model.store, &facts, budget);
        if let Some(t) = &mut self.trace
            && let Some((at, text)) = &t.since
        {
            if t.frames > 0 {
                t.worst_frame = t.worst_frame.max(ui.input(|i| i.unstable_dt));
            }
            t.frames += 1;
            if let Some((complete_ms, rows)) = t.complete {
                // This frame began once the complete rows had been drawn.
                eprintln!(
                    "filter-trace: complete {complete_ms:.1} ms after the last change, on screen after {:.1} ms, \
                     {rows} rows, longest frame {:.1} ms: {}",
                    at.elapsed().as_secs_f64() * 1e3,
                    t.worst_frame * 1e3,
                    mcpscope_core::text::terminal_safe(text, false)
                );
                t.since = None;
            } else if self.index.progress().is_none() {
                t.complete = Some((at.elapsed().as_secs_f64() * 1e3, self.index.len()));
                ui.ctx().request_repaint();
            }
        }
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

        self.lifeline_header(
            ui,
            model.store.has_auth(),
            model.store.app_names(),
            model.store.has_model(),
        );
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
            // A row already on screen is not scrolled to the middle.
            if !self.visible.is_some_and(|(first, last)| (first..=last).contains(&pos)) {
                let target = pos as f32 * (row_h + spacing);
                let view_h = ui.available_height();
                area = area.vertical_scroll_offset((target - view_h / 2.0).max(0.0));
            }
            self.scroll_to_selection = false;
        }
        let mut pending_filter = None;
        let out = area.show_rows(ui, row_h, total, |ui, range| {
            for pos in range {
                let Some(row_idx) = self.index.row_at(pos) else {
                    continue;
                };
                let Some(row) = model.store.get(row_idx) else { continue };
                let (clicked, condition) = self.row_ui(ui, model, &row, &facts);
                if clicked {
                    self.selected = Some(row_idx);
                    self.follow_tail = false;
                    action = Some(TimelineAction::Select(row_idx));
                }
                if let Some((join, cond)) = condition {
                    pending_filter = Some(match join {
                        None => cond,
                        Some(j) => combine(&self.filter.text, j, &cond),
                    });
                }
            }
        });
        // The rows wholly on screen, for Up and Down with nothing selected.
        let pitch = row_h + spacing;
        let top = out.state.clamped_offset().y.max(0.0);
        self.visible = (total > 0).then(|| {
            let first = ((top / pitch).ceil() as usize).min(total - 1);
            let last =
                (((top + out.inner_rect.height() - row_h) / pitch).floor().max(0.0) as usize).clamp(first, total - 1);
            (first, last)
        });
        if let Some(text) = pending_filter {
            self.filter.set_text(text);
        }
        self.findings = findings;
        self.inferred = inferred;
        action
    }

    fn lifeline_header(&self, ui: &mut Ui, auth: bool, apps: &[String], has_model: bool) {
        let (rect, _) = ui.allocate_exact_size(Vec2::new(ui.available_width(), 18.0), Sense::hover());
        let geo = Geometry::new(rect, !apps.is_empty(), has_model);
        let p = ui.painter();
        let font = FontId::proportional(13.0);
        let color = ui.visuals().strong_text_color();
        if let Some(app_x) = geo.app_x {
            // Narrow, the name would run into the client's: "App" alone.
            let name = match apps {
                _ if geo.client_x - app_x < Geometry::APP_ROOM => "App".to_owned(),
                [one] => format!("App {}", mcpscope_core::text::ellipsize(one, 12)),
                many => format!("Apps ({})", many.len()),
            };
            p.text(
                Pos2::new(app_x, rect.center().y),
                Align2::CENTER_CENTER,
                name,
                font.clone(),
                RowKind::App.color(),
            );
        }
        if let Some(model_x) = geo.model_x {
            p.text(
                Pos2::new(model_x, rect.center().y),
                Align2::CENTER_CENTER,
                "Model",
                font.clone(),
                RowKind::Model.color(),
            );
        }
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

    /// Draws one row; returns whether it was clicked, and a condition its
    /// context menu asked to apply (None) or join to the filter.
    /// The row's background: a colouring rule's tint, then selection,
    /// finding, link or hover.
    #[allow(clippy::too_many_arguments)]
    fn paint_background(
        &self,
        ui: &Ui,
        p: &egui::Painter,
        rect: Rect,
        idx: usize,
        facts: &SessionFacts<'_>,
        model: &SessionModel,
        hovered: bool,
    ) {
        // Colouring rules: the first that matches tints the row.
        if let Some(subject) = RowSubject::new(&model.store, idx, facts)
            && let Some((_, c)) = self.colors.compiled.iter().find(|(f, _)| f.matches(&subject))
        {
            p.rect_filled(
                rect,
                2.0,
                egui::Color32::from_rgba_unmultiplied(c.r(), c.g(), c.b(), 46),
            );
            p.rect_filled(
                Rect::from_min_size(rect.left_top() + Vec2::new(10.0, 0.0), Vec2::new(3.0, rect.height())),
                0.0,
                *c,
            );
        }
        if self.selected == Some(idx) {
            p.rect_filled(rect, 2.0, theme::SELECTED_BG);
        } else if self.highlighted.contains(&idx) {
            p.rect_filled(rect, 2.0, theme::FINDING_BG);
        } else if self.linked.contains(&idx) {
            p.rect_filled(rect, 2.0, theme::LINKED_BG);
        } else if hovered {
            p.rect_filled(rect, 2.0, ui.visuals().widgets.hovered.weak_bg_fill);
        }
    }

    fn row_ui(
        &self,
        ui: &mut Ui,
        model: &SessionModel,
        row: &RowRef<'_>,
        facts: &SessionFacts<'_>,
    ) -> (bool, Option<(Option<Join>, String)>) {
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
            return (response.clicked(), None);
        }
        let condition = row_menu(&response, &model.store, row);
        let p = ui.painter_at(rect);
        let geo = Geometry::new(rect, !model.store.app_names().is_empty(), model.store.has_model());
        self.paint_background(ui, &p, rect, idx, facts, model, response.hovered());
        paint_margin(&p, rect, &geo, model, row, conversation, mark);
        let mono = FontId::monospace(12.0);
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
        if let Some(app_x) = geo.app_x {
            p.line_segment(
                [Pos2::new(app_x, rect.top()), Pos2::new(app_x, rect.bottom())],
                Stroke::new(1.0, RowKind::App.color().gamma_multiply(0.6)),
            );
        }
        if let Some(model_x) = geo.model_x {
            p.line_segment(
                [Pos2::new(model_x, rect.top()), Pos2::new(model_x, rect.bottom())],
                Stroke::new(1.0, RowKind::Model.color().gamma_multiply(0.6)),
            );
        }
        if model.store.has_auth() {
            // The authorization server's lifeline, dashed: it is spoken to only while authorizing.
            p.add(egui::Shape::dashed_line(
                &[Pos2::new(geo.auth_x, rect.top()), Pos2::new(geo.auth_x, rect.bottom())],
                Stroke::new(1.0, RowKind::Auth.color().gamma_multiply(0.45)),
                4.0,
                3.0,
            ));
        }
        let color = if era_probe_refused(&model.store, row) {
            ui.visuals().weak_text_color()
        } else {
            kind.color()
        };
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
                // A tools/call the model asked for comes from the model's
                // lifeline, and its answer goes back there.
                if let Some(model_x) = geo.model_x
                    && row.caused_by_model().is_some()
                {
                    // An answer's latency is written just left of the client:
                    // the line stops short of it.
                    let end = if row.link().is_some() {
                        (geo.client_x - 58.0).max(model_x)
                    } else {
                        geo.client_x
                    };
                    p.add(egui::Shape::dashed_line(
                        &[Pos2::new(model_x, y), Pos2::new(end, y)],
                        Stroke::new(1.0, RowKind::Model.color()),
                        4.0,
                        3.0,
                    ));
                }
                // The span the label sits over: between the lifelines, or
                // for a frame that went only as far as the proxy, its half.
                let (left, right) = match row.fate() {
                    // What the receiver got is drawn by the proxy's own row:
                    // this frame went only as far as the proxy.
                    // The label takes the half the arrow left free.
                    Some(fate) if stops_at_proxy(fate) => {
                        let mid = geo.proxy_x();
                        p.arrow(Pos2::new(from, y), Vec2::new(mid - from, 0.0), stroke);
                        paint_fate(&p, Pos2::new(mid, y), fate);
                        (to.min(mid), to.max(mid))
                    }
                    _ => {
                        p.arrow(Pos2::new(from, y), Vec2::new(to - from, 0.0), stroke);
                        (geo.client_x, geo.server_x)
                    }
                };
                // Clear of the arrowheads and marks: a long label is cut
                // with an ellipsis instead of running past them.
                let room = (right - left - 2.0 * ARROW_LABEL_MARGIN).max(20.0);
                let mut job = egui::text::LayoutJob::simple_singleline(glyph_label.clone(), mono.clone(), label_color);
                job.wrap = egui::text::TextWrapping::truncate_at_width(room);
                let galley = p.layout_job(job);
                let x = (left + right) / 2.0 - galley.size().x / 2.0;
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
                let color = match row.auth_status() {
                    _ if row.auth_failed() => theme::ERROR,
                    Some(s) if s >= 400 => theme::ERROR,
                    _ => color,
                };
                let (from, to) = geo.auth_arrow(row.auth_step());
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
            Lane::Touch => {
                let mid = geo.proxy_x();
                let toward_x = |d: Direction| {
                    if d == Direction::Out {
                        geo.server_x
                    } else {
                        geo.client_x
                    }
                };
                // The label takes the wider of the spans the proxy's drawing
                // leaves free (the stderr lane's room is free on its row).
                let row_right = rect.right() - 8.0;
                let wider = |a: (f32, f32), b: (f32, f32)| if a.1 - a.0 >= b.1 - b.0 { a } else { b };
                let mut label_half = wider((mid, row_right), (geo.client_x, mid));
                if let Some(t) = row.touch() {
                    let going = t
                        .sent_toward
                        .or((t.kind == TouchKind::Forwarded).then_some(t.direction));
                    match going {
                        // Injected, edited, answered or forwarded bytes leave from the proxy.
                        Some(d) => {
                            let to = toward_x(d);
                            p.arrow(Pos2::new(mid, y), Vec2::new(to - mid, 0.0), Stroke::new(1.5, color));
                            label_half = if d == Direction::Out {
                                wider((geo.server_x, row_right), (geo.client_x, mid))
                            } else {
                                (mid, row_right)
                            };
                        }
                        None => paint_fate(&p, Pos2::new(mid, y), t.kind),
                    }
                }
                let (left, right) = label_half;
                let mut job = egui::text::LayoutJob::simple_singleline(glyph_label.clone(), mono.clone(), label_color);
                job.wrap =
                    egui::text::TextWrapping::truncate_at_width((right - left - 2.0 * ARROW_LABEL_MARGIN).max(20.0));
                let galley = p.layout_job(job);
                p.galley(
                    Pos2::new(left + ARROW_LABEL_MARGIN, rect.top() + 1.0),
                    galley,
                    label_color,
                );
            }
            Lane::App => {
                // The View talks to the host (the client lifeline); what it
                // asks of the server follows as the host's own request.
                let app_x = geo.app_x.unwrap_or(geo.client_x - 60.0);
                let host_x = geo.client_x;
                let toward = row.app_toward();
                let (from, to) = match toward {
                    Some(t) if t.from_view_side() => (app_x, host_x),
                    _ => (host_x, app_x),
                };
                let stroke = Stroke::new(1.5, color);
                if matches!(toward, Some(AppToward::Sandbox | AppToward::FromSandbox)) {
                    // Host page and sandbox proxy: the View never sees these.
                    p.add(egui::Shape::dashed_line(
                        &[Pos2::new(from, y), Pos2::new(to, y)],
                        stroke,
                        4.0,
                        3.0,
                    ));
                } else {
                    p.arrow(Pos2::new(from, y), Vec2::new(to - from, 0.0), stroke);
                }
                // The lifeline says whose View it is (with one View); the
                // label is the message, as a frame's: method or answer, and its id.
                let mut text = format!("{} {}", kind.glyph(), app_message_label(row.raw()));
                if model.store.app_names().len() > 1 {
                    text = format!("{text}  ({})", row.app_name().unwrap_or_default());
                }
                if row.app_note().is_some() {
                    text.push_str("  !");
                }
                let mut job = egui::text::LayoutJob::simple_singleline(text, mono.clone(), label_color);
                // App rows draw nothing toward the server: the label may use
                // the row's width up to its right edge.
                job.wrap = egui::text::TextWrapping::truncate_at_width(
                    (rect.right() - 8.0 - host_x - ARROW_LABEL_MARGIN).max(20.0),
                );
                let galley = p.layout_job(job);
                p.galley(
                    Pos2::new(host_x + ARROW_LABEL_MARGIN, rect.top() + 1.0),
                    galley,
                    label_color,
                );
            }
            Lane::Model => {
                // The request goes to the model and its streamed answer
                // comes back: one exchange, drawn as the answer's arrow.
                let model_x = geo.model_x.unwrap_or(geo.client_x - 60.0);
                let failed = row.model().is_none_or(|m| m.failed.is_some());
                let color = if failed { theme::ERROR } else { color };
                let stroke = Stroke::new(1.5, color);
                p.circle_filled(Pos2::new(geo.client_x, y), 2.5, color);
                p.arrow(Pos2::new(model_x, y), Vec2::new(geo.client_x - model_x, 0.0), stroke);
                let text = format!("{} {}", kind.glyph(), labels::model_label(row));
                let mut job = egui::text::LayoutJob::simple_singleline(text, mono.clone(), label_color);
                job.wrap = egui::text::TextWrapping::truncate_at_width(
                    (rect.right() - 8.0 - geo.client_x - ARROW_LABEL_MARGIN).max(20.0),
                );
                let galley = p.layout_job(job);
                p.galley(
                    Pos2::new(geo.client_x + ARROW_LABEL_MARGIN, rect.top() + 1.0),
                    galley,
                    label_color,
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
        (response.clicked(), condition)
    }
}

#[cfg(test)]
mod tests;
