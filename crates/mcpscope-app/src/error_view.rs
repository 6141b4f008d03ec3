//! How the app shows an error: its message, then each cause under it.
//! Errors travel as `anyhow::Error` from where they happen to here, so the
//! chain (e.g. "cannot read capture X" ← "line 3 is not JSON") is shown
//! whole, in one way, instead of being flattened into text where it was made.

use crate::theme;
use egui::{RichText, Ui};

/// The message in the error colour and every cause under it, indented.
pub fn show(ui: &mut Ui, e: &anyhow::Error) {
    ui.label(RichText::new(e.to_string()).color(theme::ERROR));
    for cause in e.chain().skip(1) {
        ui.horizontal_wrapped(|ui| {
            ui.add_space(12.0);
            ui.label(RichText::new(format!("because: {cause}")).color(theme::ERROR).small());
        });
    }
}

/// One line for the status bar: the message, then its causes after colons.
pub fn one_line(e: &anyhow::Error) -> String {
    format!("{e:#}")
}

/// The message and its causes, one per line (for hover text).
pub fn lines(e: &anyhow::Error) -> Vec<String> {
    e.chain().map(|c| c.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context as _;

    #[test]
    fn the_chain_is_kept_to_the_root() {
        let root = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let e = Err::<(), _>(root).context("cannot open capture /x.jsonl").unwrap_err();
        assert_eq!(lines(&e), ["cannot open capture /x.jsonl", "no such file"]);
        assert_eq!(one_line(&e), "cannot open capture /x.jsonl: no such file");
    }
}
