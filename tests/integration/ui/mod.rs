//! egui_kittest drives the real app: launch real servers, wait for the
//! handshake, select frames, import a config file, open a capture.

use crate::support::*;
use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::NodeT as _;
use egui_kittest::kittest::Queryable as _;
use mcpscope_app::{McpscopeApp, StartupArgs};
use std::time::{Duration, Instant};

mod chat;
mod collections;
mod composer;
mod files;
mod launch;
mod layout;
mod modern;
mod restore;
mod skills;
mod statistics;
mod status;
mod tabs;
mod timeline;

fn harness(args: StartupArgs) -> Harness<'static, McpscopeApp> {
    Harness::builder()
        .with_size([1440.0, 900.0])
        .build_eframe(move |cc| McpscopeApp::new(cc, args))
}

/// For servers whose own text (instructions, tool descriptions) uses
/// characters the test fonts lack; the app's own glyphs are checked by the
/// other tests.
fn harness_any_glyphs(args: StartupArgs) -> Harness<'static, McpscopeApp> {
    Harness::builder()
        .with_size([1440.0, 900.0])
        .allow_missing_glyphs()
        .build_eframe(move |cc| McpscopeApp::new(cc, args))
}

/// Types a server's command and arguments into the launcher form.
fn type_command(h: &mut Harness<'static, McpscopeApp>, spec: &mcpscope_core::transport::process::ServerSpec) {
    h.step();
    for (field, text) in [("Command", spec.program.clone()), ("Arguments", spec.args.join(" "))] {
        h.get_by_role_and_label(Role::TextInput, field).focus();
        h.step();
        h.get_by_role_and_label(Role::TextInput, field).type_text(&text);
        h.step();
    }
}

/// Chooses `path` in mcpscope's own file picker, open on screen.
fn choose_in_picker(h: &mut Harness<'static, McpscopeApp>, path: &std::path::Path, button: &str) {
    assert!(h.state().picker.is_some(), "the picker opened");
    // A window is laid out on its first frame and shown on the next.
    h.step();
    h.step();
    h.get_by_role_and_label(Role::TextInput, "file").focus();
    h.step();
    h.get_by_role_and_label(Role::TextInput, "file")
        .type_text(&path.display().to_string());
    h.step();
    h.get_by_label(button).click();
}

fn shows(h: &Harness<'static, McpscopeApp>, text: &str) -> bool {
    h.query_all_by_label_contains(text).next().is_some()
}

fn handshake_done(app: &McpscopeApp) -> bool {
    app.session()
        .inspection
        .as_ref()
        .is_some_and(|i| i.model.handshake.judged().is_some() && i.model.handshake.initialized_row.is_some())
}

fn has_row(app: &McpscopeApp, pred: impl Fn(&str) -> bool) -> bool {
    app.session().inspection.as_ref().is_some_and(|i| {
        i.model
            .store
            .iter()
            .any(|r| pred(&mcpscope_app::panels::timeline::row_label(&i.model.store, &r)))
    })
}

fn launch_everything() -> Harness<'static, McpscopeApp> {
    let mut h = harness_any_glyphs(launching(&everything()));
    step_until(&mut h, "the handshake", handshake_done);
    h
}

fn wait_for_tool(h: &mut Harness<'static, McpscopeApp>, name: &str) {
    step_until(h, &format!("tool {name} in the composer"), |app| {
        app.session().composer.lists.tools.iter().any(|t| t.name == name)
    });
}

/// The text of the composer's current answer, once it arrived.
fn answer_text(app: &McpscopeApp) -> Option<String> {
    let p = app.session().composer.result.pending.as_ref()?;
    let model = &app.session().inspection.as_ref()?.model;
    let row = model.response_to(&p.id)?;
    Some(model.store.get(row)?.text().into_owned())
}

fn choose_tool(h: &mut Harness<'static, McpscopeApp>, name: &str, title: &str) {
    h.get_by_label("Compose").click();
    h.step();
    h.get_by_role_and_label(Role::ComboBox, "tool").click();
    h.step();
    h.step();
    // The list may be longer than the popup: accesskit clicks reach rows scrolled out of view.
    let label = if title.is_empty() {
        name.to_owned()
    } else {
        format!("{name} ({title})")
    };
    h.get_by_label(&label).click_accesskit();
    h.step();
    h.step();
    assert_eq!(h.state().session().composer.tool.name.as_deref(), Some(name));
}
