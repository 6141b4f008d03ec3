//! The order of the core's layers, kept by a test: a module may use the
//! layers below it and its own, never one above. The bottom floors are
//! crates of their own (`mcpscope-wire`, `mcpscope-schema`,
//! `mcpscope-protocol`), whose order the compiler keeps; the core re-exports
//! their modules under the names they had here. Above them a test rather than
//! a crate per layer: the same rule, without a dozen more crates to build and
//! publish (see ARCHITECTURE.md).

/// The modules lib.rs re-exports from the crates below the core: the bottom
/// (floor 0), which every layer here may use.
const FROM_CRATES_BELOW: &[&str] = &["wire", "text", "duration", "schema", "protocol", "driver"];

/// Each top-level module and its floor, lowest first. Equal floors may not
/// use each other either (they are siblings).
const FLOORS: &[(&str, u8)] = &[
    ("platform", 1),
    ("listen", 2),
    ("model", 2),
    ("transport", 3),
    ("pilot", 4),
    ("record", 4),
    ("sessions", 5),
    ("timeline", 5),
    ("client", 6),
    ("proxy", 6),
    ("apps", 6),
    ("config", 6),
    ("analysis", 7),
    ("filter", 8),
    ("interop", 8),
    ("intercept", 9),
    ("replay", 9),
    ("verify", 9),
    ("stats", 9),
    ("chat", 9),
    ("load", 10),
    ("collection", 10),
];

mod tests {
    use super::*;
    use std::collections::BTreeSet;
    use std::path::{Path, PathBuf};

    /// The names lib.rs re-exports from the crates below: `pub use
    /// mcpscope_x::{a, b};` gives a and b, `pub use mcpscope_x as c;` gives c.
    fn re_exported(lib: &str) -> BTreeSet<String> {
        let mut names = BTreeSet::new();
        for line in lib.lines() {
            let Some(path) = line.trim().strip_prefix("pub use mcpscope_") else {
                continue;
            };
            let path = path.trim_end_matches(';');
            let items = match (path.split_once(" as "), path.split_once('{')) {
                (Some((_, alias)), _) => alias,
                (None, Some((_, list))) => list.trim_end_matches('}'),
                (None, None) => path.rsplit("::").next().unwrap_or_default(),
            };
            names.extend(items.split(',').map(|n| n.trim().to_owned()).filter(|n| !n.is_empty()));
        }
        names
    }

    #[test]
    fn lib_rs_re_exports_the_crates_below_by_name() {
        let lib = "pub use mcpscope_protocol::{driver, protocol};\npub use mcpscope_schema as schema;\npub use mcpscope_wire::wire;\n";
        assert_eq!(re_exported(lib), set(&["driver", "protocol", "schema", "wire"]));
    }

    /// The rule itself (what counts as a use, what is skipped) is
    /// `mcpscope-layers`', shared with the app's crate.
    #[test]
    fn no_layer_uses_one_above_it() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let upward = mcpscope_layers::upward_uses(&src, FLOORS, FROM_CRATES_BELOW).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            upward.is_empty(),
            "upward uses (a module may use only the floors below its own, see layers.rs): {upward:?}"
        );
        let below = re_exported(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
        let listed: BTreeSet<String> = FROM_CRATES_BELOW.iter().map(|m| m.to_string()).collect();
        assert_eq!(
            below, listed,
            "lib.rs's re-exports from the crates below and FROM_CRATES_BELOW in layers.rs differ"
        );
    }

    /// What differs between systems lives in `platform/`; the rest of the
    /// core is the same code on every system: it names no `libc`, no
    /// `std::os::unix` or `std::os::windows`, no `windows-sys` and no OS `cfg`.
    #[test]
    fn the_rest_of_the_core_names_no_operating_system() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let found = mcpscope_layers::os_specific_uses(&src, &["platform"]).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            found.is_empty(),
            "OS-specific code outside platform/ (move it behind a platform type): {found:?}"
        );
    }

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    /// A manifest's `[dependencies]` table.
    fn dependencies(manifest: &str) -> &str {
        manifest
            .split("[dependencies]")
            .nth(1)
            .and_then(|d| d.split("\n[").next())
            .unwrap_or_default()
    }

    /// Typed errors in the library, anyhow only at the edges (the binary and
    /// the app): neither the core's manifest nor those of the crates below it
    /// (its path dependencies, and theirs) depend on anyhow, so no library
    /// function can hand out an error that is only text with a chain.
    #[test]
    fn the_library_does_not_use_anyhow() {
        let mut dirs = vec![PathBuf::from(env!("CARGO_MANIFEST_DIR"))];
        let mut checked = BTreeSet::new();
        while let Some(dir) = dirs.pop() {
            let dir = dir.canonicalize().unwrap();
            if !checked.insert(dir.clone()) {
                continue;
            }
            let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
            let deps = dependencies(&manifest);
            assert!(
                !deps.lines().any(|l| l.trim_start().starts_with("anyhow")),
                "{} depends on anyhow: give the failure a thiserror type instead",
                dir.display()
            );
            for line in deps.lines() {
                if let Some((_, rest)) = line.split_once("path = \"") {
                    dirs.push(dir.join(rest.split('"').next().unwrap()));
                }
            }
        }
        let names: Vec<String> = checked
            .iter()
            .filter_map(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        for krate in ["mcpscope-core", "mcpscope-wire", "mcpscope-schema", "mcpscope-protocol"] {
            assert!(
                names.iter().any(|n| n == krate),
                "{krate}'s manifest was not checked: {names:?}"
            );
        }
    }
}
