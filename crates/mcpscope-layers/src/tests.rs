use super::*;

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| n.to_string()).collect()
}

/// A file whose test module is not at its end is read to its end: an upward
/// use after the test module is found, and braces, quotes and comments inside
/// the test module do not end it early.
#[test]
fn a_use_after_a_test_module_is_found() {
    let text = r#"
use crate::wire::frame::Frame;

#[cfg(test)]
mod tests {
    use crate::load::Plan;
    fn braces() {
        let open = "{ \" {";
        let close = '}';
        let quote = '\'';
        let raw = r"}}";
        // }
        /* } /* } */ */
    }
}

use crate::record::capture::Writer;
fn middle<'a>(s: &'a str) -> &'a str { s }
"#;
    assert_eq!(uses(text, 1), set(&["record", "wire"]));
}

/// What `#[cfg(test)]` marks is skipped, whatever the item: a module in
/// braces, a `mod x;`, a `use`, a fn (with attributes after the mark), a
/// method inside an impl, a field; the code around it is read.
#[test]
fn the_items_cfg_test_marks_are_skipped() {
    let text = r#"
#[cfg(test)]
mod tests;
#[cfg(test)]
use crate::load::a;
#[cfg(test)]
#[allow(dead_code)]
pub(crate) fn helper() -> [u8; 2] {
    crate::load::b();
    [0; 2]
}
impl Thing {
    #[cfg(test)]
    fn probe(&self) -> u8 { crate::load::c() }
    fn real(&self) { crate::text::shorten("crate::load::d", 1); }
}
#[cfg(test)] mod inline { use crate::load::e; }
// crate::load::f in a comment
struct Probe { #[cfg(test)] seen: crate::load::g::G, kept: u8 }
fn tail() { let _ = crate::wire::x(); }
"#;
    assert_eq!(uses(text, 1), set(&["text", "wire"]));
}

/// Use groups, renames, paths in types and in macro calls count; `super`
/// counts where it is the crate; doc comments and strings do not.
#[test]
fn what_counts_as_a_use() {
    let text = r#"
        //! Not this: crate::app.
        use crate::{theme, panels::json_tree};
        use super::job as worker;
        fn f() -> crate::tabs::SessionTab {
            let s = "crate::composer";
            assert!(matches!(x, crate::inspection::LoadState::Done));
            todo!()
        }
        #[cfg(test)]
        mod tests {
            use crate::restore;
        }
        #[cfg(test)]
        fn only_in_tests() -> crate::sign_in::SignInStatus { todo!() }
        struct After(crate::memory::Thing);
        impl After {
            #[cfg(test)]
            fn helper() { crate::tokens::x(); }
        }
    "#;
    assert_eq!(
        uses(text, 1),
        set(&["inspection", "job", "memory", "panels", "tabs", "theme"])
    );
    assert_eq!(
        uses(text, 2),
        set(&["inspection", "memory", "panels", "tabs", "theme"]),
        "`super` below the top is the module's own"
    );
}

/// `super` reaches the crate after as many steps as the module is deep,
/// inline modules included.
#[test]
fn super_counts_where_it_is_the_crate() {
    let text = r#"
        use super::super::theme::Colours;
        mod inner {
            use super::Own;
            fn f() { super::super::super::memory::trim(); }
            fn g() { println!("{}", super::super::super::job::NAME); }
        }
    "#;
    assert_eq!(uses(text, 2), set(&["job", "memory", "theme"]));
}

/// A small crate: `low` below `high`, and `wire` from a crate below.
fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let write = |rel: &str, text: &str| {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "lib.rs",
        "pub use other::wire;\npub mod high;\npub mod low;\n#[cfg(test)]\nmod layers;\n",
    );
    write(
        "low.rs",
        "use crate::wire::Frame;\n\n#[cfg(test)]\nmod tests {\n    use crate::high::Probe;\n}\n\nfn middle() {}\n",
    );
    write("high/mod.rs", "mod part;\n#[cfg(test)]\nmod tests;\n");
    write("high/part.rs", "use crate::low::middle;\nuse super::Own;\n");
    // Test files are not read: neither this one nor the missing layers.rs.
    write("high/tests.rs", "use crate::nowhere;\n");
    dir
}

const FLOORS: &[(&str, u8)] = &[("low", 1), ("high", 2)];

#[test]
fn a_layered_crate_has_no_upward_uses() {
    let src = fixture();
    assert_eq!(upward_uses(src.path(), FLOORS, &["wire"]).unwrap(), BTreeSet::new());
}

/// An upward use planted after a test module, in a file below the top.
#[test]
fn an_upward_use_anywhere_in_a_file_is_found() {
    let src = fixture();
    let low = src.path().join("low.rs");
    let text = std::fs::read_to_string(&low).unwrap();
    std::fs::write(
        &low,
        text.replace("fn middle() {}", "use crate::high::part;\nfn middle() {}"),
    )
    .unwrap();
    std::fs::write(
        src.path().join("high/part.rs"),
        "fn f() { super::super::low::middle(); }\n",
    )
    .unwrap();
    let found = upward_uses(src.path(), FLOORS, &["wire"]).unwrap();
    assert_eq!(found, BTreeSet::from([("low.rs".to_owned(), "high".to_owned())]));
}

#[test]
fn siblings_on_one_floor_may_not_use_each_other() {
    let src = fixture();
    let found = upward_uses(src.path(), &[("low", 1), ("high", 1)], &["wire"]).unwrap();
    assert_eq!(found, BTreeSet::from([("high/part.rs".to_owned(), "low".to_owned())]));
}

#[test]
fn a_table_that_is_not_whole_is_an_error() {
    let src = fixture();
    let err = upward_uses(src.path(), &[("low", 1)], &["wire"]).unwrap_err();
    assert!(
        matches!(&err, LayerError::ModuleWithoutFloor { module } if module == "high"),
        "{err}"
    );
    let err = upward_uses(src.path(), FLOORS, &[]).unwrap_err();
    assert!(
        matches!(&err, LayerError::UseWithoutFloor { file, used } if file == "low.rs" && used == "wire"),
        "{err}"
    );
    let err = upward_uses(src.path(), &[("low", 1), ("high", 2), ("gone", 3)], &["wire"]).unwrap_err();
    assert!(
        matches!(&err, LayerError::NotAModule { module } if module == "gone"),
        "{err}"
    );
    std::fs::remove_file(src.path().join("high/part.rs")).unwrap();
    let err = upward_uses(src.path(), FLOORS, &["wire"]).unwrap_err();
    assert!(
        matches!(&err, LayerError::MissingFile { file, module } if file == "high/mod.rs" && module == "part"),
        "{err}"
    );
}
