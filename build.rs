//! Names the commit the binary was built from, for `mcpscope --version`.

use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit()))
        .map_or_else(|| "commit unknown".to_owned(), |c| format!("commit {c}"));
    println!("cargo:rustc-env=MCPSCOPE_COMMIT={commit}");
    // A new commit (HEAD moves, or the branch it names does) rebuilds the string.
    for path in [".git/HEAD", ".git/refs/heads", ".git/packed-refs"] {
        if std::path::Path::new(path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}
