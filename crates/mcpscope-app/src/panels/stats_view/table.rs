//! A statistics table: a header whose columns sort on a click (again for
//! the other way), rows laid out only where they are visible, and each row's
//! display filter one click away (Wireshark's "Apply as Filter").

use egui::{RichText, Sense, Ui};
use std::cmp::Ordering;

/// How a cell sorts.
#[derive(Clone, Debug, PartialEq, PartialOrd)]
pub enum Key {
    Num(f64),
    Text(String),
}

impl Key {
    fn cmp(&self, other: &Key) -> Ordering {
        match (self, other) {
            (Key::Num(a), Key::Num(b)) => a.partial_cmp(b).unwrap_or(Ordering::Equal),
            (Key::Text(a), Key::Text(b)) => a.cmp(b),
            (Key::Num(_), Key::Text(_)) => Ordering::Less,
            (Key::Text(_), Key::Num(_)) => Ordering::Greater,
        }
    }
}

pub struct Cell {
    pub text: String,
    pub key: Key,
}

impl Cell {
    pub fn num(n: u64) -> Cell {
        Cell {
            text: n.to_string(),
            key: Key::Num(n as f64),
        }
    }

    pub fn text(s: impl Into<String>) -> Cell {
        let text = s.into();
        Cell {
            key: Key::Text(text.to_lowercase()),
            text,
        }
    }

    /// A time in microseconds, shown for people, sorted by value.
    pub fn micros(us: u64) -> Cell {
        Cell {
            text: mcpscope_core::text::format_micros(us),
            key: Key::Num(us as f64),
        }
    }
}

pub struct Row {
    pub cells: Vec<Cell>,
    /// Applied as the timeline's filter when the row's button is clicked.
    pub filter: Option<String>,
    /// Drawn in this colour (a severity, say).
    pub color: Option<egui::Color32>,
}

/// Which column sorts, and which way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sort {
    pub column: Option<usize>,
    pub descending: bool,
}

impl Sort {
    /// `rows` in this order (a stable sort: equal rows keep theirs).
    pub fn apply(&self, rows: &mut [Row]) {
        let Some(c) = self.column else { return };
        rows.sort_by(|a, b| {
            let o = match (a.cells.get(c), b.cells.get(c)) {
                (Some(x), Some(y)) => x.key.cmp(&y.key),
                _ => Ordering::Equal,
            };
            if self.descending { o.reverse() } else { o }
        });
    }
}

/// Draws the table; returns the filter of the row whose button was clicked.
pub fn table_ui(ui: &mut Ui, id: &str, head: &[&str], rows: &[Row], sort: &mut Sort) -> Option<String> {
    let font = egui::TextStyle::Monospace.resolve(ui.style());
    let char_w = ui.fonts_mut(|f| f.glyph_width(&font, '0')).max(1.0);
    let mut widths: Vec<usize> = head.iter().map(|h| h.chars().count() + 2).collect();
    for r in rows.iter().take(2000) {
        for (i, c) in r.cells.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(c.text.chars().count().min(48));
            }
        }
    }
    let px = |chars: usize| chars as f32 * char_w + 8.0;
    let mut clicked = None;
    egui::ScrollArea::horizontal()
        .id_salt(format!("{id}-h"))
        .show(ui, |ui| {
            ui.horizontal(|ui| {
                ui.add_space(px(6));
                for (i, h) in head.iter().enumerate() {
                    let arrow = match (sort.column == Some(i), sort.descending) {
                        (true, true) => " ▼",
                        (true, false) => " ▲",
                        _ => "",
                    };
                    let r = ui.add_sized(
                        [px(widths[i]), ui.spacing().interact_size.y],
                        egui::Button::new(RichText::new(format!("{h}{arrow}")).monospace().strong()).frame(false),
                    );
                    if r.on_hover_text("sort by this column (again: the other way)").clicked() {
                        *sort = if sort.column == Some(i) {
                            Sort {
                                column: Some(i),
                                descending: !sort.descending,
                            }
                        } else {
                            Sort {
                                column: Some(i),
                                descending: true,
                            }
                        };
                    }
                }
            });
            let row_h = ui.spacing().interact_size.y;
            egui::ScrollArea::vertical()
                .id_salt(format!("{id}-v"))
                .auto_shrink([false, true])
                .show_rows(ui, row_h, rows.len(), |ui, range| {
                    for index in range {
                        let row = &rows[index];
                        ui.push_id(index, |ui| {
                            ui.horizontal(|ui| {
                                match &row.filter {
                                    Some(f) => {
                                        let b = ui.add_sized([px(6), row_h], egui::Button::new("filter").small());
                                        if b.on_hover_text(format!("Apply as filter: {f}")).clicked() {
                                            clicked = Some(f.clone());
                                        }
                                    }
                                    None => {
                                        ui.add_space(px(6));
                                    }
                                }
                                for (i, c) in row.cells.iter().enumerate() {
                                    let mut text =
                                        RichText::new(mcpscope_core::text::ellipsize(&c.text, 48)).monospace();
                                    if let Some(color) = row.color {
                                        text = text.color(color);
                                    }
                                    let label = egui::Label::new(text).truncate().sense(Sense::hover());
                                    // Numbers to the right, text to the left, as in a spreadsheet.
                                    let layout = match c.key {
                                        Key::Num(_) => egui::Layout::right_to_left(egui::Align::Center),
                                        Key::Text(_) => egui::Layout::left_to_right(egui::Align::Center),
                                    };
                                    let w = px(widths.get(i).copied().unwrap_or(8));
                                    let r = ui
                                        .allocate_ui_with_layout(egui::vec2(w, row_h), layout, |ui| {
                                            ui.set_min_width(w);
                                            ui.add(label)
                                        })
                                        .inner;
                                    if c.text.chars().count() > 48 {
                                        r.on_hover_text(&c.text);
                                    }
                                }
                            });
                        });
                    }
                });
        });
    clicked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorting_by_a_column_is_numeric_for_numbers_and_stable() {
        let row = |name: &str, n: u64| Row {
            cells: vec![Cell::text(name), Cell::num(n)],
            filter: None,
            color: None,
        };
        let mut rows = vec![row("b", 9), row("a", 10), row("c", 9)];
        Sort {
            column: Some(1),
            descending: true,
        }
        .apply(&mut rows);
        let names: Vec<&str> = rows.iter().map(|r| r.cells[0].text.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        Sort {
            column: Some(0),
            descending: false,
        }
        .apply(&mut rows);
        let names: Vec<&str> = rows.iter().map(|r| r.cells[0].text.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
    }
}
