//! A step's golden answer: kept in `__snapshots__/NAME` beside the test
//! file (its `result`, or its `error`, as pretty JSON that diffs well),
//! compared as `verify` compares a recorded answer (volatile members such
//! as `_meta` and timestamps left out, JSON inside text compared as JSON,
//! the step's `ignore` paths left out), written when missing and rewritten
//! by `--update-snapshots`.

use super::file::Snapshot;
use crate::analysis::answer_diff::{self, Ignore};
use crate::analysis::session_diff::Outcome;
use crate::wire::message::ErrorObject;
use serde_json::{Value as Json, json};
use std::path::{Component, Path, PathBuf};

/// The folder snapshots are kept in, beside the test file.
pub const DIR: &str = "__snapshots__";

#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    Same,
    /// There was none: this answer is kept from now on.
    Written(PathBuf),
    /// `--update-snapshots`: the answer replaced a different one.
    Updated(PathBuf),
    /// How the answer differs from the snapshot.
    Differs(PathBuf, Vec<String>),
}

/// Why a snapshot could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("snapshot name {0:?}: a file name under {DIR}/ (no .. and not absolute)")]
    BadName(String),
    #[error("{}: {source}", .path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{}: not JSON ({source}); fix it or run with --update-snapshots", .path.display())]
    NotJson { path: PathBuf, source: serde_json::Error },
    #[error("the step has no answer to keep")]
    NoAnswer,
}

/// Where a snapshot is kept.
pub fn path(test_dir: &Path, name: &str) -> Result<PathBuf, SnapshotError> {
    let rel = Path::new(name);
    if name.is_empty() || !rel.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(SnapshotError::BadName(name.to_owned()));
    }
    Ok(test_dir.join(DIR).join(rel))
}

/// What of an answer a snapshot keeps.
pub fn kept(response: &Json) -> Result<Json, SnapshotError> {
    if let Some(r) = response.get("result") {
        Ok(json!({ "result": r }))
    } else if let Some(e) = response.get("error") {
        Ok(json!({ "error": e }))
    } else {
        Err(SnapshotError::NoAnswer)
    }
}

/// The step's `ignore` list as a comparison leaves things out: a path from
/// the answer (`result.content[0].text`, `result.items[*].id`) or a JSON
/// pointer into the result (`/content/0/text`); a bare name leaves that
/// member out wherever it is.
pub fn ignore(paths: &[String]) -> Ignore {
    let mut fields = Vec::new();
    let mut pointers = Vec::new();
    for p in paths {
        if p.starts_with('/') {
            pointers.push(p.clone());
            continue;
        }
        let rest = p
            .strip_prefix("result.")
            .or_else(|| p.strip_prefix("error."))
            .unwrap_or(p);
        if !p.contains(['.', '[']) {
            fields.push(p.clone());
            continue;
        }
        let mut pointer = String::new();
        for part in rest.split('.') {
            let (key, mut indexes) = match part.find('[') {
                Some(at) => (&part[..at], &part[at..]),
                None => (part, ""),
            };
            if !key.is_empty() {
                pointer.push('/');
                pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
            }
            while let Some(end) = indexes.find(']') {
                let index = indexes[1..end].trim();
                pointer.push('/');
                pointer.push_str(if index == "*" { "*" } else { index });
                indexes = &indexes[end + 1..];
            }
        }
        pointers.push(pointer);
    }
    Ignore::new(&fields, &pointers).expect("every pointer made here starts with /")
}

fn outcome(kept: &Json) -> Outcome {
    match (kept.get("result"), kept.get("error")) {
        (Some(r), _) => Outcome::Result(r.clone()),
        (None, Some(e)) => match ErrorObject::from_json(e) {
            Some(e) => Outcome::Error(e),
            None => Outcome::MalformedError(e.clone()),
        },
        (None, None) => Outcome::NoResponse,
    }
}

fn write(path: &Path, kept: &Json) -> Result<(), SnapshotError> {
    let io = |source| SnapshotError::Io {
        path: path.to_owned(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let mut text = serde_json::to_string_pretty(kept).expect("JSON prints");
    text.push('\n');
    std::fs::write(path, text).map_err(io)
}

/// Compares `response` (secrets already masked) with the snapshot, writing
/// it when there is none or `update` says so.
pub fn check(test_dir: &Path, snap: &Snapshot, response: &Json, update: bool) -> Result<Verdict, SnapshotError> {
    let path = path(test_dir, &snap.name)?;
    let now = kept(response)?;
    let before = match std::fs::read(&path) {
        Ok(bytes) => Some(
            serde_json::from_slice::<Json>(&bytes).map_err(|source| SnapshotError::NotJson {
                path: path.clone(),
                source,
            }),
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => return Err(SnapshotError::Io { path, source }),
    };
    let before = match before {
        None => {
            write(&path, &now)?;
            return Ok(Verdict::Written(path));
        }
        Some(Err(e)) if update => {
            drop(e);
            write(&path, &now)?;
            return Ok(Verdict::Updated(path));
        }
        Some(b) => b?,
    };
    let differences = answer_diff::compare_labelled(
        &outcome(&before),
        &outcome(&now),
        &ignore(&snap.ignore),
        ("the snapshot", "the server"),
    );
    match (differences.is_empty(), update) {
        (true, _) => Ok(Verdict::Same),
        (false, true) => {
            write(&path, &now)?;
            Ok(Verdict::Updated(path))
        }
        (false, false) => Ok(Verdict::Differs(path, differences)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(ignore: &[&str]) -> Snapshot {
        Snapshot {
            name: "echo.json".into(),
            ignore: ignore.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn a_snapshot_is_written_then_compared_and_updated() {
        let dir = tempfile::tempdir().unwrap();
        let first = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "a"}], "_meta": {"t": 1}, "n": 1}});
        let v = check(dir.path(), &snap(&[]), &first, false).unwrap();
        let file = dir.path().join("__snapshots__/echo.json");
        assert_eq!(v, Verdict::Written(file.clone()));
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.starts_with("{\n  \"result\""), "pretty, result only: {text}");
        // _meta is volatile; the id is not part of the answer.
        let same = json!({"jsonrpc": "2.0", "id": 9, "result": {"content": [{"type": "text", "text": "a"}], "_meta": {"t": 2}, "n": 1}});
        assert_eq!(check(dir.path(), &snap(&[]), &same, false).unwrap(), Verdict::Same);
        let changed =
            json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "b"}], "n": 2}});
        let Verdict::Differs(_, said) = check(dir.path(), &snap(&[]), &changed, false).unwrap() else {
            panic!("a change is a difference")
        };
        assert_eq!(said.len(), 2, "{said:?}");
        assert_eq!(
            check(dir.path(), &snap(&["result.content[*].text", "n"]), &changed, false).unwrap(),
            Verdict::Same,
            "ignored paths"
        );
        assert_eq!(
            check(dir.path(), &snap(&["/content/0/text", "result.n"]), &changed, false).unwrap(),
            Verdict::Same,
            "pointers too"
        );
        assert_eq!(
            check(dir.path(), &snap(&[]), &changed, true).unwrap(),
            Verdict::Updated(file.clone())
        );
        assert_eq!(check(dir.path(), &snap(&[]), &changed, false).unwrap(), Verdict::Same);
        let error = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "bad"}});
        let Verdict::Differs(_, said) = check(dir.path(), &snap(&[]), &error, false).unwrap() else {
            panic!("an error where a result was")
        };
        assert!(said[0].contains("recorded a result"), "{said:?}");
        std::fs::write(&file, "not json").unwrap();
        assert!(matches!(
            check(dir.path(), &snap(&[]), &error, false),
            Err(SnapshotError::NotJson { .. })
        ));
        assert!(matches!(path(dir.path(), "../x"), Err(SnapshotError::BadName(_))));
        assert!(matches!(path(dir.path(), "/etc/x"), Err(SnapshotError::BadName(_))));
    }
}
