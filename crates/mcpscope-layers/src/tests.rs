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

/// A crate planted from (path under `src`, text) pairs.
fn plant(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (rel, text) in files {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

fn pairs(found: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    found.iter().map(|(f, w)| (f.to_string(), w.to_string())).collect()
}

/// `use` of a module of `std::os`, alone or in a group; `std::os::raw` is
/// not one OS's, and a glob of `std::os` names none.
#[test]
fn a_use_of_an_os_module_is_found() {
    let src = plant(&[
        ("lib.rs", "mod perms;\nmod group;\nmod portable;\n"),
        ("perms.rs", "use std::os::unix::fs::PermissionsExt;\n"),
        (
            "group.rs",
            "use std::{io, os::unix::fs::MetadataExt};\nuse ::core::os::{linux::fs as lfs, macos};\nuse libc as c;\n",
        ),
        (
            "portable.rs",
            "use std::os::raw::c_int;\nuse std::os::*;\nuse std::io;\n",
        ),
    ]);
    assert_eq!(
        os_specific_uses(src.path(), &[]).unwrap(),
        pairs(&[
            ("group.rs", "core::os::linux"),
            ("group.rs", "core::os::macos"),
            ("group.rs", "libc"),
            ("group.rs", "std::os::unix"),
            ("perms.rs", "std::os::unix"),
        ])
    );
}

/// Paths in expressions and types, in macro tokens (a leading `::` left
/// out), and `extern crate`; a path whose later segment is `libc` does not
/// count, nor a variable's field.
#[test]
fn an_os_path_in_code_or_macro_tokens_is_found() {
    let src = plant(&[
        ("lib.rs", "extern crate interprocess;\nmod fd;\nmod kill;\nmod other;\n"),
        (
            "fd.rs",
            "fn raw(f: &std::fs::File) -> i32 { std::os::fd::AsRawFd::as_raw_fd(f) }\n",
        ),
        (
            "kill.rs",
            "fn f(pid: i32) -> String {\n    format!(\"{}\", unsafe { libc::kill(pid, 0) })\n}\n\
             fn g() { assert!(::std::os::windows::ffi::OsStrExt::encode_wide(s).count() > 0); }\n",
        ),
        (
            "other.rs",
            "type H = windows_sys::Win32::Foundation::HANDLE;\n\
             fn h(x: X) { x.libc; wrap::libc::kill(); println!(\"{}\", x.libc + ours::libc::N); }\n",
        ),
    ]);
    assert_eq!(
        os_specific_uses(src.path(), &[]).unwrap(),
        pairs(&[
            ("fd.rs", "std::os::fd"),
            ("kill.rs", "libc"),
            ("kill.rs", "std::os::windows"),
            ("lib.rs", "interprocess"),
            ("other.rs", "windows_sys"),
        ])
    );
}

/// `#[cfg]`, `#[cfg_attr]` and `cfg!` whose predicate names an OS option,
/// anywhere inside `any`, `all`, `not`; in macro tokens too. A `cfg` on a
/// `mod x;` is reported where it is declared, and `x` is read.
#[test]
fn cfgs_that_pick_an_os_are_found() {
    let src = plant(&[
        (
            "lib.rs",
            "#[cfg(windows)]\nmod win;\n#[cfg(unix)]\nmod nix;\nmod gui;\n",
        ),
        ("win.rs", "#![cfg(target_family = \"windows\")]\n"),
        (
            "nix.rs",
            "#[cfg(unix)]\nfn a() {}\n\
             fn b() -> bool { cfg!(windows) || cfg!(feature = \"x\") }\n\
             #[cfg(not(any(target_os = \"linux\",)))]\nfn c() {}\n\
             #[cfg_attr(all(target_env = \"gnu\", feature = \"y\"), cfg_attr(target_vendor = \"apple\", inline))]\nfn d() {}\n\
             fn e() { assert!(cfg!(target_os = \"macos\")); }\n\
             macro_rules! m { () => { #[cfg(target_os = \"windows\")] fn f() {} }; }\n\
             #[cfg(target_os = \"linux\")]\nuse std::io;\n",
        ),
        (
            "gui.rs",
            "#[cfg(feature = \"gui\")]\nfn a() {}\n#[cfg_attr(feature = \"unix\", derive(Debug))]\nstruct S;\n\
             #[cfg(all(test, debug_assertions))]\nfn b() {}\n",
        ),
    ]);
    assert_eq!(
        os_specific_uses(src.path(), &[]).unwrap(),
        pairs(&[
            ("lib.rs", "cfg(unix)"),
            ("lib.rs", "cfg(windows)"),
            ("nix.rs", "cfg(all(target_env = \"gnu\", feature = \"y\"))"),
            ("nix.rs", "cfg(not(any(target_os = \"linux\")))"),
            ("nix.rs", "cfg(target_os = \"linux\")"),
            ("nix.rs", "cfg(target_os = \"macos\")"),
            ("nix.rs", "cfg(target_os = \"windows\")"),
            ("nix.rs", "cfg(target_vendor = \"apple\")"),
            ("nix.rs", "cfg(unix)"),
            ("nix.rs", "cfg(windows)"),
            ("win.rs", "cfg(target_family = \"windows\")"),
        ])
    );
}

/// Test items, the files of a test module, comments and strings do not
/// count; the code around them does.
#[test]
fn test_items_comments_and_strings_are_not_os_uses() {
    let src = plant(&[
        ("lib.rs", "mod a;\n#[cfg(test)]\nmod tests;\n"),
        (
            "a.rs",
            "//! Calls libc::kill, see std::os::unix.\n\
             #[cfg(test)]\nfn probe() -> i32 { unsafe { libc::getpid() } }\n\
             #[cfg(test)]\n#[cfg(unix)]\nuse std::os::unix::fs::PermissionsExt;\n\
             #[cfg(test)]\nmod inline { fn f() { assert!(cfg!(windows)); } }\n\
             // libc::kill(pid, 0)\n\
             fn say() -> &'static str { \"libc::kill and #[cfg(unix)]\" }\n\
             fn after() { let _ = std::os::fd::AsRawFd::as_raw_fd; }\n",
        ),
        ("tests.rs", "use libc::kill;\n#[cfg(unix)]\nfn t() {}\n"),
    ]);
    assert_eq!(
        os_specific_uses(src.path(), &[]).unwrap(),
        pairs(&[("a.rs", "std::os::fd")])
    );
}

/// The files of an allowed module, and of the modules declared in them,
/// are not read; its declaration in lib.rs is, and so are its neighbours.
#[test]
fn allowed_modules_are_not_read() {
    let src = plant(&[
        ("lib.rs", "#[cfg(unix)]\nmod platform;\nmod app;\n"),
        (
            "platform/mod.rs",
            "#[cfg(unix)]\nmod unix;\n#[cfg(windows)]\nmod windows;\npub use libc::pid_t;\n",
        ),
        ("platform/unix.rs", "use std::os::unix::fs::PermissionsExt;\n"),
        ("platform/windows.rs", "use windows_sys::Win32;\n"),
        ("app.rs", "fn f() { unsafe { libc::getpid(); } }\n"),
    ]);
    assert_eq!(
        os_specific_uses(src.path(), &["platform"]).unwrap(),
        pairs(&[("app.rs", "libc"), ("lib.rs", "cfg(unix)")])
    );
    assert_eq!(
        os_specific_uses(src.path(), &[]).unwrap(),
        pairs(&[
            ("app.rs", "libc"),
            ("lib.rs", "cfg(unix)"),
            ("platform/mod.rs", "cfg(unix)"),
            ("platform/mod.rs", "cfg(windows)"),
            ("platform/mod.rs", "libc"),
            ("platform/unix.rs", "std::os::unix"),
            ("platform/windows.rs", "windows_sys"),
        ]),
        "without the allowance, the same files are read"
    );
}

/// An allowance for a module the crate does not have is an error, and so is
/// a module an OS `cfg` declares whose file is missing.
#[test]
fn os_check_errors() {
    let src = plant(&[("lib.rs", "#[cfg(windows)]\nmod win;\nmod app;\n"), ("app.rs", "")]);
    let err = os_specific_uses(src.path(), &["app"]).unwrap_err();
    assert!(
        matches!(&err, LayerError::MissingFile { file, module } if file == "lib.rs" && module == "win"),
        "{err}"
    );
    std::fs::write(src.path().join("win.rs"), "").unwrap();
    let err = os_specific_uses(src.path(), &["app", "gone"]).unwrap_err();
    assert!(
        matches!(&err, LayerError::NotAModule { module } if module == "gone"),
        "{err}"
    );
    assert_eq!(
        os_specific_uses(src.path(), &["win"]).unwrap(),
        pairs(&[("lib.rs", "cfg(windows)")])
    );
}
