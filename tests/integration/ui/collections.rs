//! The Collections window: a folder's test files run with an environment,
//! each step's verdict, a failed check with what it saw, a click on a step
//! to its frame in the run's capture; Save to collection from the composer
//! and its History writing steps `mcpscope test` runs as they are.

use super::*;
use mcpscope_core::collection::file;
use std::path::{Path, PathBuf};

fn echo_file(dir: &Path) -> PathBuf {
    let p = dir.join("echo.mcp.yaml");
    let faulty = serde_json::to_string(&faulty_path()).unwrap();
    std::fs::write(
        &p,
        format!(
            r#"name: echo checks
servers:
  faulty:
    command: python3
    args: [{faulty}, --mode, normal]
variables:
  word: hi
environments:
  loud:
    word: HELLO
steps:
  - name: echo says the word
    call: echo
    arguments: {{message: "{{{{word}}}}"}}
    assert:
      - result.isError == false
      - result.content[0].text == "{{{{word}}}}"
  - name: a check that cannot hold
    call: echo
    arguments: {{message: plain}}
    assert:
      - 'result.content[0].text contains "nope"'
"#
        ),
    )
    .unwrap();
    p
}

fn open_collections(h: &mut Harness<'static, McpscopeApp>) {
    h.get_by_label("File").click();
    h.step();
    h.step();
    h.get_by_label("Collections…").click();
    h.step();
    h.step();
    assert!(h.state().collections.open);
}

/// Types a path into mcpscope's own picker and takes it with Enter.
fn type_in_picker(h: &mut Harness<'static, McpscopeApp>, field: &str, path: &Path) {
    assert!(h.state().picker.is_some(), "the picker opened");
    h.step();
    h.step();
    h.get_by_role_and_label(Role::TextInput, field).focus();
    h.step();
    h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
    h.step();
    h.get_by_role_and_label(Role::TextInput, field)
        .type_text(&path.display().to_string());
    h.step();
    h.key_press(egui::Key::Enter);
    h.step();
}

/// The app with the Collections window open on `dir`, its `files` listed.
fn collections_of(dir: &Path, files: usize) -> Harness<'static, McpscopeApp> {
    let mut h = harness(StartupArgs::default());
    h.step();
    open_collections(&mut h);
    h.get_by_label("Choose folder…").click();
    h.step();
    type_in_picker(&mut h, "folder", dir);
    step_until(&mut h, "the folder listed", |app| {
        app.collections.files().len() == files
    });
    h
}

#[test]
fn a_folder_runs_with_its_verdicts_and_a_failed_step_opens_at_its_frame() {
    let dir = tempfile::tempdir().unwrap();
    echo_file(dir.path());
    std::fs::write(
        dir.path().join("broken.mcp.yaml"),
        "servers:\n  s: {command: x}\nsteps:\n  - name: a\n    cal: echo\n",
    )
    .unwrap();
    let mut h = collections_of(dir.path(), 2);
    h.step();
    assert!(
        shows(&h, "echo.mcp.yaml (echo checks)"),
        "the file and its name are listed"
    );
    assert!(shows(&h, "not run yet"));
    // A file with mistakes says each with its place, and is not run.
    assert!(shows(&h, "broken.mcp.yaml (has mistakes)"));
    assert!(shows(&h, "5:5: "), "the mistake's line and column");
    // Hide folds a file's steps away; Show brings them back.
    assert!(shows(&h, "echo says the word  (line "));
    // (The last Hide on screen: the window's second file, echo.mcp.yaml.)
    h.get_all_by_label("Hide").last().unwrap().click();
    h.step();
    h.step();
    assert!(!shows(&h, "echo says the word  (line "), "its steps are hidden");
    h.get_by_label("Show").click();
    h.step();
    h.step();
    assert!(shows(&h, "echo says the word  (line "));
    // The environment picker offers the file's environments.
    h.state_mut().collections.env = Some("loud".into());
    h.get_by_label("Run all").click();
    step_until(&mut h, "the run", |app| {
        !app.collections.running() && app.collections.reports().len() == 1
    });
    h.step();
    h.step();
    let report = h.state().collections.reports()[0].clone();
    let c = report.counts();
    assert_eq!((c.passed, c.failed), (1, 1), "{report:?}");
    assert!(shows(&h, "1 passed, 1 failed, 0 errors"), "the file's summary");
    // The failed check, with what it saw.
    assert!(shows(&h, "contains \"nope\""), "the failed assertion is shown");
    assert!(shows(&h, "saw: "), "with what it saw");
    assert!(shows(&h, "plain"), "the value it saw");
    // The environment was used: the capture has the loud word.
    let capture = report.capture.clone().expect("the app keeps every run's capture");
    let text = std::fs::read_to_string(&capture).unwrap();
    assert!(text.contains("HELLO"), "the environment's value was sent");
    // A click on the failed step opens the capture at its answer.
    let failed = report
        .steps
        .iter()
        .find(|s| s.name == "a check that cannot hold")
        .unwrap();
    let seq = failed.response_seq.expect("the answer's seq");
    let link = format!("a check that cannot hold  (line {})", failed.at.line);
    h.get_by_role_and_label(Role::Link, &link).click();
    step_until(&mut h, "the capture open at the frame", |app| {
        let s = app.session();
        s.inspection.as_ref().is_some_and(|i| {
            i.capture_path.as_ref() == Some(&capture)
                && !i.loading()
                && s.timeline
                    .selected
                    .and_then(|r| i.model.store.get(r))
                    .and_then(|r| r.seq())
                    == Some(seq)
        })
    });
    // Clicked again, the tab already open is shown, not a second copy.
    let tabs = h.state().tabs.len();
    h.get_by_role_and_label(Role::Link, &link).click();
    h.step();
    h.step();
    assert_eq!(h.state().tabs.len(), tabs);
}

#[test]
fn save_to_collection_writes_steps_mcpscope_test_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = harness(launching(&faulty("normal")));
    step_until(&mut h, "the handshake", handshake_done);
    wait_for_tool(&mut h, "echo");
    choose_tool(&mut h, "echo", "");
    // From the composer's form: the window asks which file.
    h.get_by_label("Save to collection…").click();
    h.step();
    h.step();
    assert!(h.state().collections.open, "the Collections window opened");
    h.step();
    h.step();
    assert!(shows(&h, "Save `tools/call echo` as a step, into:"));
    h.get_by_label("Another file…").click();
    h.step();
    let path = dir.path().join("saved.mcp.yaml");
    type_in_picker(&mut h, "file name", &path);
    step_until(&mut h, "the file written", |_| path.exists());
    step_until(&mut h, "the save said", |app| {
        app.message.as_ref().is_some_and(|(_, m)| m.contains("a new test file"))
    });
    let f = file::read(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(f.steps.len(), 1);
    assert!(matches!(&f.steps[0].action, file::Action::Call { tool, .. } if tool == "echo"));
    assert_eq!(f.steps[0].asserts[0].text, "result.isError == false");
    // From History: the call sent, then saved into the file now listed.
    h.state_mut().session_mut().right_tab = mcpscope_app::RightTab::Compose;
    h.step();
    h.get_by_label("Send tools/call").click();
    step_until(&mut h, "the answer", |app| answer_text(app).is_some());
    h.get_by_label_contains("History (").click();
    h.step();
    h.step();
    h.get_by_label("Save…").click();
    h.step();
    h.step();
    step_until(&mut h, "the folder listed", |app| {
        app.collections.files() == [path.clone()]
    });
    h.step();
    h.get_by_label("saved.mcp.yaml").click();
    step_until(&mut h, "the second step", |app| {
        app.message.as_ref().is_some_and(|(_, m)| m.contains("(2 step(s))"))
    });
    let text = std::fs::read_to_string(&path).unwrap();
    let f = file::read(&text).unwrap();
    assert_eq!(
        f.steps.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
        ["echo", "echo 2"],
        "{text}"
    );
    // The file the app wrote is one `mcpscope test` runs.
    let out = mcpscope_command().arg("test").arg(&path).output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{said}\n{text}");
    assert!(said.contains("2 passed"), "{said}");
}

/// The list read again while a file runs (Reload, or a save into the folder)
/// keeps each report with its own file, though a new file shifted the rows.
#[test]
fn a_reload_during_a_run_keeps_each_report_with_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let faulty = serde_json::to_string(&faulty_path()).unwrap();
    let mut text = format!("servers:\n  s:\n    command: python3\n    args: [{faulty}, --mode, normal]\nsteps:\n");
    // Long enough (a second or more) to be read again mid-run.
    for n in 0..1000 {
        text.push_str(&format!(
            "  - name: call {n}\n    call: echo\n    arguments: {{message: m{n}}}\n"
        ));
    }
    let m = dir.path().join("m.mcp.yaml");
    std::fs::write(&m, text).unwrap();
    let mut h = collections_of(dir.path(), 1);
    h.get_by_label("Run all").click();
    step_until(&mut h, "the run under way", |app| app.collections.running());
    // A file that sorts first appears, and the list is read again mid-run.
    std::fs::write(
        dir.path().join("a.mcp.yaml"),
        "servers:\n  s: {command: x}\nsteps:\n  - name: a\n    call: echo\n",
    )
    .unwrap();
    h.get_by_label("Reload").click();
    step_until(&mut h, "the new file listed", |app| app.collections.files().len() == 2);
    step_until(&mut h, "the run's end", |app| !app.collections.running());
    let c = &h.state().collections;
    let report = c.report_of(&m).expect("the report is the file's that ran");
    assert_eq!(report.counts().passed, 1000);
    assert!(
        c.report_of(&dir.path().join("a.mcp.yaml")).is_none(),
        "not the new file's"
    );
}
