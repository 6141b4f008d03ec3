//! Which files are test files, and finding them in folders: one rule for
//! `mcpscope test` and the app's Collections panel.

use std::path::{Path, PathBuf};

/// Where test files are looked for in a folder: not in these.
const NOT_SEARCHED: &[&str] = &[".git", "node_modules", "target", super::snapshot::DIR];

/// Whether `p` is named as a test file (`*.mcp.yaml`, `*.mcp.yml`).
pub fn is_test_file(p: &Path) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(".mcp.yaml") || n.ends_with(".mcp.yml"))
}

/// The test files `paths` name (files as given, folders searched
/// recursively), in a stable order; no paths: the current folder.
pub fn test_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    let here = [PathBuf::from(".")];
    for p in if paths.is_empty() { &here[..] } else { paths } {
        if p.is_dir() {
            walk(p, &mut out)?;
        } else if p.exists() {
            out.push(p.clone());
        } else {
            return Err(format!("{}: no such file or folder", p.display()));
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        let skip = p
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| NOT_SEARCHED.contains(&n));
        if p.is_dir() && !skip {
            walk(&p, out)?;
        } else if is_test_file(&p) {
            out.push(p);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_files_are_found_below_a_folder_in_order_but_not_in_snapshots_or_dependencies() {
        let d = tempfile::tempdir().unwrap();
        for f in [
            "b.mcp.yaml",
            "a/c.mcp.yml",
            "notes.yaml",
            "node_modules/x.mcp.yaml",
            "__snapshots__/y.mcp.yaml",
        ] {
            let p = d.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        let found = test_files(&[d.path().to_owned()]).unwrap();
        let names: Vec<_> = found
            .iter()
            .map(|p| p.strip_prefix(d.path()).unwrap().to_owned())
            .collect();
        assert_eq!(names, [PathBuf::from("a/c.mcp.yml"), PathBuf::from("b.mcp.yaml")]);
        let missing = test_files(&[d.path().join("nope")]).unwrap_err();
        assert!(missing.contains("no such file or folder"), "{missing}");
    }
}
