//! The order of the core's layers, kept by a test: a module may use the
//! layers below it and its own, never one above. (A test rather than a crate
//! per layer: the same rule, without a dozen crates to build and publish;
//! see the README's architecture section.)

/// Each top-level module and its floor, lowest first. Equal floors may not
/// use each other either (they are siblings).
const FLOORS: &[(&str, u8)] = &[
    ("wire", 0),
    ("text", 0),
    ("duration", 0),
    ("schema", 1),
    ("protocol", 1),
    ("driver", 2),
    ("transport", 3),
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
    ("load", 10),
];

/// Upward uses tolerated while they are taken apart: none left (the session
/// thread writes captures through `transport::event_log`, which `record`
/// implements). A use listed here that is gone fails the test too, so the
/// list can only shrink.
const KNOWN_EXCEPTIONS: &[(&str, &str)] = &[];

mod tests {
    use super::*;
    use std::collections::BTreeSet;
    use std::path::{Path, PathBuf};

    fn floor(module: &str) -> Option<u8> {
        FLOORS.iter().find(|(m, _)| *m == module).map(|(_, f)| *f)
    }

    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                rust_files(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }

    /// The `crate::<module>` paths a file's code (not its comments, not
    /// its tests) names.
    fn uses(text: &str) -> BTreeSet<String> {
        let mut found = BTreeSet::new();
        for line in text.lines() {
            let code = line.trim_start();
            if code.starts_with("#[cfg(test)]") {
                break;
            }
            if code.starts_with("//") {
                continue;
            }
            let mut rest = code;
            while let Some(i) = rest.find("crate::") {
                let name: String = rest[i + 7..]
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                found.insert(name);
                rest = &rest[i + 7..];
            }
        }
        found
    }

    #[test]
    fn no_layer_uses_one_above_it() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let mut violations = BTreeSet::new();
        for file in &files {
            let rel = file.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
            let module = rel.split(['/', '.']).next().unwrap_or_default().to_owned();
            // lib.rs and this file are not a layer; a test file is a test.
            let Some(own) = floor(&module) else { continue };
            if rel.ends_with("/tests.rs") {
                continue;
            }
            let text = std::fs::read_to_string(file).unwrap();
            for used in uses(&text) {
                if used == module {
                    continue;
                }
                let Some(theirs) = floor(&used) else {
                    panic!("{rel} uses crate::{used}, which has no floor in layers.rs: give it one");
                };
                if theirs >= own {
                    violations.insert((rel.clone(), used));
                }
            }
        }
        let known: BTreeSet<(String, String)> = KNOWN_EXCEPTIONS
            .iter()
            .map(|(f, m)| (f.to_string(), m.to_string()))
            .collect();
        let new: Vec<_> = violations.difference(&known).collect();
        let gone: Vec<_> = known.difference(&violations).collect();
        assert!(
            new.is_empty(),
            "upward uses (a module may use only the floors below its own, see layers.rs): {new:?}"
        );
        assert!(
            gone.is_empty(),
            "these known exceptions are gone: take them off KNOWN_EXCEPTIONS in layers.rs: {gone:?}"
        );
        for (m, _) in FLOORS {
            assert!(
                src.join(m).is_dir() || src.join(format!("{m}.rs")).is_file(),
                "layers.rs names {m}, which is not a module"
            );
        }
    }

    /// Typed errors in the library, anyhow only at the edges (the binary and
    /// the app): the core's manifest does not depend on anyhow, so no core
    /// function can hand out an error that is only text with a chain.
    #[test]
    fn the_library_does_not_use_anyhow() {
        let manifest = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap();
        let deps = manifest
            .split("[dependencies]")
            .nth(1)
            .and_then(|d| d.split("\n[").next())
            .unwrap();
        assert!(
            !deps.lines().any(|l| l.trim_start().starts_with("anyhow")),
            "mcpscope-core depends on anyhow: give the failure a thiserror type instead"
        );
    }
}
