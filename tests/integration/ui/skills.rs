//! Skills mode: the frontmatter, the files, and reading only what is asked.

use super::*;

fn skills_server(extra: &[&str]) -> mcpscope_core::transport::process::ServerSpec {
    let mut args = vec![repo().join("tests/servers/skills_server.py").display().to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    mcpscope_core::transport::process::ServerSpec::new("python3", args)
}

/// The `resources/read` requests the app sent, by URI.
fn skill_reads(app: &McpscopeApp) -> Vec<String> {
    app.session().inspection.as_ref().map_or_else(Vec::new, |i| {
        i.model
            .store
            .iter()
            .filter(|r| r.lane() == mcpscope_core::timeline::store::Lane::Out && r.method() == Some("resources/read"))
            .filter_map(|r| serde_json::from_slice::<serde_json::Value>(r.raw()).ok())
            .filter_map(|v| v.pointer("/params/uri")?.as_str().map(str::to_owned))
            .collect()
    })
}

fn open_skill(h: &mut Harness<'static, McpscopeApp>, name: &str) {
    step_until(h, "the handshake", handshake_done);
    h.get_by_label("Compose").click();
    h.step();
    h.get_by_label("Skills").click();
    h.step();
    // Entering the mode lists the skills (listing reads no file).
    step_until(h, "skills/list", |app| app.session().composer.lists.skills.len() == 2);
    h.step();
    h.get_by_label_contains(&format!("{name}  ")).click();
    h.step();
    h.step();
}

/// Clicks the one Read button that is enabled (SKILL.md's, before it verified).
fn read_the_enabled_file(h: &mut Harness<'static, McpscopeApp>) {
    h.query_all_by_label("Read")
        .find(|r| !r.accesskit_node().is_disabled())
        .expect("an enabled Read button")
        .click();
}

fn file_state(app: &McpscopeApp, path: &str) -> Option<mcpscope_core::protocol::skills::FileState> {
    app.session().composer.skills.load.as_ref()?.state(path).cloned()
}

#[test]
fn skills_mode_shows_the_frontmatter_and_files_and_reads_only_what_is_asked() {
    use mcpscope_core::protocol::skills::FileState;
    let mut h = harness(launching(&skills_server(&[])));
    open_skill(&mut h, "pdf-processing");
    assert!(shows(&h, "Frontmatter as listed (not yet checked against SKILL.md)"));
    assert!(shows(&h, "Extract, fill, and assemble PDF documents"));
    // The files as a tree: folders and files, nothing read yet.
    for label in ["SKILL.md", "references/", "FORMS.md", "scripts/", "fill.py"] {
        assert!(shows(&h, label), "{label} in the tree");
    }
    assert!(skill_reads(h.state()).is_empty(), "no file is prefetched");
    // Only SKILL.md can be read first.
    let reads: Vec<_> = h.query_all_by_label("Read").collect();
    assert_eq!(reads.len(), 3);
    assert_eq!(
        reads.iter().filter(|r| !r.accesskit_node().is_disabled()).count(),
        1,
        "only SKILL.md's Read is enabled before it verified"
    );
    read_the_enabled_file(&mut h);
    step_until(&mut h, "SKILL.md verified", |app| {
        matches!(file_state(app, "SKILL.md"), Some(FileState::Verified(_)))
    });
    h.step();
    h.step();
    assert!(shows(&h, "Frontmatter ✔ SKILL.md matches the listing"));
    assert!(
        shows(&h, "Read references/FORMS.md before filling a form"),
        "SKILL.md's text shown"
    );
    assert_eq!(skill_reads(h.state()), ["skill://pdf-processing/SKILL.md"]);
    // Now the other files can be read, one at a time, on demand.
    let reads: Vec<_> = h.query_all_by_label("Read").collect();
    assert_eq!(reads.len(), 2);
    assert!(reads.iter().all(|r| !r.accesskit_node().is_disabled()));
    reads[0].click();
    step_until(&mut h, "FORMS.md verified", |app| {
        matches!(file_state(app, "references/FORMS.md"), Some(FileState::Verified(_)))
    });
    h.step();
    h.step();
    assert!(shows(&h, "Field names are case-sensitive."));
    assert_eq!(
        skill_reads(h.state()),
        [
            "skill://pdf-processing/SKILL.md",
            "skill://pdf-processing/references/FORMS.md"
        ],
        "scripts/fill.py was not asked for and not read"
    );
    h.state_mut().session_mut().inspection = None;
}

#[test]
fn skills_mode_shows_a_failed_check_as_an_error_and_reads_nothing_more() {
    use mcpscope_core::protocol::skills::FileState;
    let mut h = harness(launching(&skills_server(&[
        "--tamper",
        "pdf-processing/references/FORMS.md",
    ])));
    open_skill(&mut h, "pdf-processing");
    read_the_enabled_file(&mut h);
    step_until(&mut h, "SKILL.md verified", |app| {
        matches!(file_state(app, "SKILL.md"), Some(FileState::Verified(_)))
    });
    h.step();
    h.query_all_by_label("Read").next().unwrap().click();
    step_until(&mut h, "FORMS.md rejected", |app| {
        matches!(file_state(app, "references/FORMS.md"), Some(FileState::Rejected(_)))
    });
    h.step();
    h.step();
    assert!(shows(&h, "✖ verification failed, not using this skill"));
    assert!(shows(&h, "the skill entry announces sha256:"), "the digests are named");
    // Nothing more of the skill can be read.
    assert!(
        h.query_all_by_label("Read").all(|r| r.accesskit_node().is_disabled()),
        "scripts/fill.py's Read is disabled after a failed check"
    );
    assert_eq!(skill_reads(h.state()).len(), 2);

    // Another skill of the same server is a fresh start; a frontmatter that
    // differs from the listing fails SKILL.md itself.
    let mut h = harness(launching(&skills_server(&["--drop-frontmatter"])));
    open_skill(&mut h, "pdf-processing");
    read_the_enabled_file(&mut h);
    step_until(&mut h, "SKILL.md rejected", |app| {
        matches!(file_state(app, "SKILL.md"), Some(FileState::Rejected(_)))
    });
    h.step();
    h.step();
    assert!(shows(&h, "license is missing from the file"));
    assert!(shows(&h, "Frontmatter as listed (not yet checked against SKILL.md)"));
    h.state_mut().session_mut().inspection = None;
}
