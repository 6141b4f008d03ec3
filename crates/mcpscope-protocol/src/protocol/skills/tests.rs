//! Skill entries, listing pages, digests and frontmatter checks, and a skill's load.

use super::*;
use serde_json::json;

const SKILL: &str =
    "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\n";

fn entry(text: &str) -> SkillEntry {
    SkillEntry::from_json(&json!({
        "uri": "skill://pdf-processing/SKILL.md",
        "frontmatter": {"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents"},
        "resources": [
            {"uri": "skill://pdf-processing/SKILL.md", "digest": digest_of(text.as_bytes()), "size": text.len()},
            {"uri": "skill://pdf-processing/references/FORMS.md", "digest": "sha256:00", "size": 3}
        ]
    }))
    .unwrap()
}

#[test]
fn digest_is_sha256_hex() {
    assert_eq!(
        digest_of(b"abc"),
        "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

#[test]
fn an_entry_names_its_files() {
    let e = entry(SKILL);
    assert_eq!(e.name(), "pdf-processing");
    assert_eq!(e.base(), "skill://pdf-processing/");
    assert!(e.is("pdf-processing") && e.is("skill://pdf-processing/SKILL.md"));
    assert_eq!(e.manifest().size, Some(SKILL.len() as u64));
    assert!(e.file("references/FORMS.md").is_some());
    assert!(e.file("skill://pdf-processing/references/FORMS.md").is_some());
    assert!(e.file("nope.md").is_none());
}

#[test]
fn the_announced_file_verifies_and_tampering_does_not() {
    let e = entry(SKILL);
    let m = e.manifest();
    assert!(verify_bytes(&m, SKILL.as_bytes()).is_ok());
    // Same length, other bytes: the digest catches it.
    let evil = SKILL.replace("Skill body.", "Evil body!!");
    assert!(matches!(
        verify_bytes(&m, evil.as_bytes()),
        Err(VerifyError::Digest { .. })
    ));
    // Extra bytes: the size is checked first.
    let longer = format!("{SKILL}more");
    let err = verify_bytes(&m, longer.as_bytes()).unwrap_err();
    assert!(matches!(err, VerifyError::Size { .. }), "{err}");
    assert!(err.to_string().contains("bytes read"));
    let bare = SkillFile {
        uri: "x".into(),
        digest: None,
        size: None,
    };
    assert!(matches!(verify_bytes(&bare, b""), Err(VerifyError::NoDigest { .. })));
}

#[test]
fn frontmatter_is_compared_field_by_field() {
    assert!(verify_frontmatter(&entry(SKILL), SKILL).is_ok());
    let changed = SKILL.replace(
        "description: Extract, fill, and assemble PDF documents",
        "description: Exfiltrate credentials",
    );
    let err = verify_frontmatter(&entry(&changed), &changed).unwrap_err();
    assert!(err.to_string().contains("description"), "{err}");
    let extra = SKILL.replace("---\n\n", "license: MIT\n---\n\n");
    assert!(
        verify_frontmatter(&entry(&extra), &extra)
            .unwrap_err()
            .to_string()
            .contains("license")
    );
    // Quoted YAML strings are the same value.
    let quoted = "---\nname: \"pdf-processing\"\ndescription: 'Extract, fill, and assemble PDF documents'\n---\n";
    assert!(verify_frontmatter(&entry(quoted), quoted).is_ok());
    assert!(frontmatter("no frontmatter").is_err());
    assert!(frontmatter("---\nname: [\n---\n").is_err());
    let (m, body) = frontmatter("---\r\nname: x\r\n---\r\nbody").unwrap();
    assert_eq!(m["name"], "x");
    assert_eq!(body, "body");
}

fn text_result(uri: &str, text: &str) -> Value {
    json!({"contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]})
}

#[test]
fn a_skill_loads_its_manifest_first_and_files_only_on_demand() {
    let forms = "# Forms\n";
    let mut e = entry(SKILL);
    e.files[1].digest = Some(digest_of(forms.as_bytes()));
    e.files[1].size = Some(forms.len() as u64);
    let mut load = SkillLoad::new(e);
    assert_eq!(load.files().len(), 2);
    assert!(
        load.files().iter().all(|(_, s)| *s == FileState::Unread),
        "nothing read up front"
    );
    let err = load.start_read("references/FORMS.md").unwrap_err();
    assert!(matches!(err, ReadRefusal::ManifestFirst { .. }), "{err}");
    assert_eq!(load.can_read("references/FORMS.md"), Err(err));
    assert_eq!(load.can_read("SKILL.md"), Ok(()));
    assert!(matches!(load.start_read("nope.md"), Err(ReadRefusal::NotListed { .. })));
    let m = load.start_read("SKILL.md").unwrap();
    assert_eq!(m.uri, "skill://pdf-processing/SKILL.md");
    assert!(matches!(
        load.start_read("SKILL.md"),
        Err(ReadRefusal::AlreadyRead { .. })
    ));
    // An answer for a file not being read changes nothing.
    assert!(
        load.finish_read(
            "skill://pdf-processing/references/FORMS.md",
            Ok(&text_result("x", forms))
        )
        .is_none()
    );
    let state = load.finish_read(&m.uri, Ok(&text_result(&m.uri, SKILL))).unwrap();
    assert!(matches!(state, FileState::Verified(b) if b == SKILL.as_bytes()));
    assert!(load.manifest_verified());
    assert_eq!(load.frontmatter().unwrap()["name"], "pdf-processing");
    let f = load.start_read("references/FORMS.md").unwrap();
    assert_eq!(load.path_of(&f), "references/FORMS.md");
    let state = load.finish_read(&f.uri, Ok(&text_result(&f.uri, forms))).unwrap();
    assert!(matches!(state, FileState::Verified(_)));
}

#[test]
fn a_failed_read_may_be_retried_and_a_failed_check_stops_the_skill() {
    let mut load = SkillLoad::new(entry(SKILL));
    let m = load.start_read("SKILL.md").unwrap();
    let state = load
        .finish_read(&m.uri, Err("JSON-RPC error -32002: not found".into()))
        .unwrap();
    assert!(matches!(state, FileState::ReadFailed(_)));
    assert!(load.rejected().is_none());
    let m = load.start_read("SKILL.md").unwrap();
    // The frontmatter was changed after listing (same size and digest as the tampered text).
    let tampered = SKILL.replace("Extract, fill", "Exfiltrate, do");
    let mut e = entry(&tampered);
    e.frontmatter = entry(SKILL).frontmatter;
    let mut tampered_load = SkillLoad::new(e);
    tampered_load.start_read("SKILL.md").unwrap();
    let state = tampered_load
        .finish_read(&m.uri, Ok(&text_result(&m.uri, &tampered)))
        .unwrap();
    assert!(
        matches!(state, FileState::Rejected(VerifyError::Frontmatter { .. })),
        "{state:?}"
    );
    assert!(tampered_load.frontmatter().is_none());
    let refusal = tampered_load.start_read("references/FORMS.md").unwrap_err();
    assert!(matches!(refusal, ReadRefusal::Rejected(_)), "{refusal}");
    // Bytes that differ from the listing.
    let state = load
        .finish_read(&m.uri, Ok(&text_result(&m.uri, &format!("{SKILL}!"))))
        .unwrap();
    assert!(matches!(state, FileState::Rejected(VerifyError::Size { .. })));
    assert!(load.start_read("SKILL.md").is_err());
    // A manifest that is not UTF-8.
    let bytes = [0xffu8, 0xfe];
    let mut e = entry(SKILL);
    e.files[0].digest = Some(digest_of(&bytes));
    e.files[0].size = Some(2);
    let mut load = SkillLoad::new(e);
    let m = load.start_read("SKILL.md").unwrap();
    let blob = json!({"contents": [{"uri": m.uri, "blob": "//4="}]});
    let state = load.finish_read(&m.uri, Ok(&blob)).unwrap();
    assert!(format!("{state:?}").contains("not UTF-8"), "{state:?}");
}

/// A "billion laughs": nine levels of ten aliases each, 10^9 strings expanded.
fn billion_laughs(levels: usize, per_level: usize) -> String {
    let mut yaml = String::from("---\nname: bomb\nlol0: &lol0 lol\n");
    for i in 1..=levels {
        let refs = vec![format!("*lol{}", i - 1); per_level].join(", ");
        yaml.push_str(&format!("lol{i}: &lol{i} [{refs}]\n"));
    }
    yaml.push_str("---\nBoom.\n");
    yaml
}

#[test]
fn a_yaml_bomb_is_refused_before_it_is_expanded() {
    let started = std::time::Instant::now();
    // 90 aliases, under the alias limit: the expanded size gives it away.
    let err = frontmatter(&billion_laughs(9, 10)).unwrap_err().to_string();
    assert!(err.contains("expands to more than 10000 nodes"), "{err}");
    // Through SkillLoad, as `skills get` loads it: a failed check.
    let bomb = billion_laughs(9, 10);
    let mut e = entry(&bomb);
    e.frontmatter = Map::from_iter([("name".to_owned(), json!("bomb"))]);
    let mut load = SkillLoad::new(e);
    let m = load.start_read("SKILL.md").unwrap();
    let state = load.finish_read(&m.uri, Ok(&text_result(&m.uri, &bomb))).unwrap();
    assert!(
        matches!(state, FileState::Rejected(VerifyError::Content { why, .. }) if why.contains("aliases")),
        "{state:?}"
    );
    // Many aliases.
    let err = frontmatter(&billion_laughs(12, 10)).unwrap_err().to_string();
    assert!(err.contains("uses 120 aliases (at most 100)"), "{err}");
    // Deep nesting, written out or through aliases.
    let deep = format!("---\nx: {}1{}\n---\n", "[".repeat(65), "]".repeat(65));
    let err = frontmatter(&deep).unwrap_err().to_string();
    assert!(err.contains("nests deeper than 64"), "{err}");
    let via_alias = format!(
        "---\na: &a {}1{}\nb: {}*a{}\n---\n",
        "[".repeat(40),
        "]".repeat(40),
        "[".repeat(30),
        "]".repeat(30)
    );
    let err = frontmatter(&via_alias).unwrap_err().to_string();
    assert!(err.contains("nests deeper than 64"), "{err}");
    // Too large to read at all.
    let big = format!("---\nname: x\ndescription: {}\n---\n", "a".repeat(70 * 1024));
    let err = frontmatter(&big).unwrap_err().to_string();
    assert!(err.contains("larger than 64 KiB"), "{err}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // What stays within the limits still loads, aliases and all.
    let fine = "---\nname: &n x\nalso: *n\nlist: [[[1]]]\n---\n";
    let (m, _) = frontmatter(fine).unwrap();
    assert_eq!(m["also"], "x");
    assert_eq!(m["list"], json!([[[1]]]));
}

#[test]
fn an_invalid_listing_entry_fails_its_check_naming_the_field() {
    let good = entry(SKILL);
    assert!(good.problems.is_empty(), "{:?}", good.problems);
    for (size, shown) in [
        (json!(-5), "is -5"),
        (json!("172"), "is \"172\""),
        (json!(1e30), "is 1e+30"),
        (json!(1.5), "is 1.5"),
    ] {
        let e = SkillEntry::from_json(&json!({
            "uri": "skill://pdf-processing/SKILL.md",
            "frontmatter": {"name": "pdf-processing"},
            "resources": [
                {"uri": "skill://pdf-processing/SKILL.md", "digest": digest_of(SKILL.as_bytes()), "size": size}
            ]
        }))
        .unwrap();
        assert_eq!(e.problems.len(), 1, "{:?}", e.problems);
        assert!(
            e.problems[0].contains("resources[0].size") && e.problems[0].contains(shown),
            "{:?}",
            e.problems
        );
        let mut load = SkillLoad::new(e);
        let err = load.rejected().expect("rejected before anything is read").to_string();
        assert!(err.contains("entry is invalid") && err.contains("size"), "{err}");
        assert!(matches!(load.start_read("SKILL.md"), Err(ReadRefusal::Rejected(_))));
    }
    let e = SkillEntry::from_json(&json!({
        "uri": "skill://a/SKILL.md",
        "frontmatter": {},
        "resources": [{"uri": "skill://a/SKILL.md", "digest": 5}, {"size": 3}]
    }))
    .unwrap();
    assert_eq!(e.problems.len(), 2, "{:?}", e.problems);
    assert!(e.problems[0].contains("resources[0].digest"), "{:?}", e.problems);
    assert!(
        e.problems[1].contains("resources[1].uri is missing"),
        "{:?}",
        e.problems
    );
    let e = SkillEntry::from_json(&json!({"uri": "skill://a/SKILL.md", "frontmatter": {}, "resources": 3})).unwrap();
    assert!(e.problems[0].contains("resources is 3"), "{:?}", e.problems);
}

#[test]
fn a_listing_too_deep_to_parse_keeps_its_entries_and_says_what_is_left_out() {
    let deep = format!("{}\"x\"{}", "[".repeat(300), "]".repeat(300));
    let raw = format!(
        r#"{{"jsonrpc":"2.0","id":2,"result":{{"skills":[{{"uri":"skill://a/SKILL.md","frontmatter":{{"name":"a"}}}},{{"uri":"skill://deep/SKILL.md","frontmatter":{{"name":"deep","x":{deep}}},"resources":[]}}],"nextCursor":"c2"}}}}"#
    );
    assert!(serde_json::from_str::<Value>(&raw).is_err(), "too deep for one parse");
    let page = list_page(raw.as_bytes());
    assert_eq!(page.skills.len(), 2);
    assert_eq!(page.skills[0]["frontmatter"]["name"], "a");
    assert_eq!(page.skills[1]["uri"], "skill://deep/SKILL.md");
    assert!(page.skills[1].get("frontmatter").is_none());
    assert_eq!(page.next_cursor.as_deref(), Some("c2"));
    assert_eq!(page.problems.len(), 1, "{:?}", page.problems);
    assert!(
        page.problems[0].contains("skill skill://deep/SKILL.md: its frontmatter cannot be read"),
        "{:?}",
        page.problems
    );
    assert!(!list_page(b"{\"result\":null}").problems.is_empty());
    assert!(!list_page(b"not json").problems.is_empty());
}

#[test]
fn read_results_give_their_bytes() {
    let r = json!({"contents":[{"uri":"u","text":"héllo"}]});
    assert_eq!(read_bytes(&r, "u").unwrap(), "héllo".as_bytes());
    let r = json!({"contents":[{"uri":"u","blob":"aGk="}]});
    assert_eq!(read_bytes(&r, "u").unwrap(), b"hi");
    assert!(read_bytes(&json!({"contents":[]}), "u").is_err());
    let (entries, problems) =
        SkillEntry::all_from_result(&json!({"skills":[{"uri":"skill://a/SKILL.md","frontmatter":{}},{"x":1}]}));
    assert_eq!(entries.len(), 1);
    assert_eq!(problems.len(), 1);
}
