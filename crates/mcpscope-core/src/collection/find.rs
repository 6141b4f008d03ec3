//! Which files are test files, and finding them in folders: one rule for
//! `mcpscope test` and the app's Collections panel.

use std::path::{Path, PathBuf};

/// Where test files are looked for in a folder: not in these.
const NOT_SEARCHED: &[&str] = &["node_modules", "target", super::snapshot::DIR];

/// Whether `p` is named as a test file (`*.mcp.yaml`, `*.mcp.yml`).
pub fn is_test_file(p: &Path) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(".mcp.yaml") || n.ends_with(".mcp.yml"))
}

/// The test files `paths` name (files as given, folders searched
/// recursively), in a stable order; no paths: the current folder.
pub fn test_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    Ok(test_files_within(paths, usize::MAX)?.0)
}

/// [`test_files`], looking at no more than `limit` entries of the folders
/// (a folder the app is pointed at may be a home directory); true when the
/// search stopped there.
pub fn test_files_within(paths: &[PathBuf], limit: usize) -> Result<(Vec<PathBuf>, bool), String> {
    let mut walk = Walk {
        found: Vec::new(),
        left: limit,
    };
    let here = [PathBuf::from(".")];
    for p in if paths.is_empty() { &here[..] } else { paths } {
        if p.is_dir() {
            walk.dir(p)?;
        } else if p.exists() {
            walk.found.push(p.clone());
        } else {
            return Err(format!("{}: no such file or folder", p.display()));
        }
    }
    Ok((walk.found, walk.left == 0))
}

struct Walk {
    found: Vec<PathBuf>,
    /// Entries still to look at.
    left: usize,
}

impl Walk {
    /// As ripgrep walks: hidden folders (`.git`, `.venv`) and links to
    /// folders are not entered (a link may lead back up, round for ever).
    fn dir(&mut self, dir: &Path) -> Result<(), String> {
        let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut entries: Vec<(PathBuf, bool)> = entries
            .flatten()
            .map(|e| (e.path(), e.file_type().is_ok_and(|t| t.is_dir())))
            .collect();
        entries.sort();
        for (p, is_dir) in entries {
            if self.left == 0 {
                return Ok(());
            }
            self.left -= 1;
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if is_dir {
                if !name.starts_with('.') && !NOT_SEARCHED.contains(&name) {
                    self.dir(&p)?;
                }
            } else if is_test_file(&p) {
                self.found.push(p);
            }
        }
        Ok(())
    }
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
        // Hidden folders and links to folders are not entered; a limit stops the search.
        std::fs::create_dir_all(d.path().join(".venv")).unwrap();
        std::fs::write(d.path().join(".venv/z.mcp.yaml"), "").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(d.path(), d.path().join("a/loop")).unwrap();
        assert_eq!(test_files(&[d.path().to_owned()]).unwrap().len(), 2);
        let (some, cut) = test_files_within(&[d.path().to_owned()], 3).unwrap();
        assert!(cut && some.len() < 2, "{some:?}");
        let missing = test_files(&[d.path().join("nope")]).unwrap_err();
        assert!(missing.contains("no such file or folder"), "{missing}");
    }
}
