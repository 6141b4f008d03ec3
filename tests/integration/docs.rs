//! The documentation is kept true: every relative link in README.md, the
//! other top-level *.md files and docs/ resolves (an `#anchor` to a heading
//! of its file, by GitHub's rule), the 5-minute tour (docs/guide/tour.md) runs with the
//! binary just built, the README's two commands are the repository's scripts
//! (and CI runs the test one), and no page cites an issue number.

use crate::support::{bin, repo};
use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long the whole tour may take: it runs in about two seconds, so a
/// command that hangs fails the test instead of holding it up.
const TOUR_DEADLINE: Duration = Duration::from_secs(60);

/// The pages a reader is pointed at: README.md and the other top-level
/// Markdown files, and everything under docs/.
fn markdown_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for e in std::fs::read_dir(root).unwrap().flatten() {
        let p = e.path();
        if p.is_file() && p.extension().is_some_and(|x| x == "md") {
            files.push(p);
        }
    }
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    walk(&root.join("docs"), &mut files);
    files.sort();
    files
}

/// A fenced code block: its info string (` ```sh tour ` → `sh tour`) and body.
struct Fenced {
    info: String,
    body: String,
}

/// A page split into its prose lines (numbered from 1, fenced code left out)
/// and its fenced blocks.
struct Page {
    prose: Vec<(usize, String)>,
    fenced: Vec<Fenced>,
}

fn split(text: &str) -> Page {
    let mut prose = Vec::new();
    let mut fenced = Vec::new();
    let mut open: Option<(String, Fenced)> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        let fence: String = t.chars().take_while(|c| *c == '`' || *c == '~').collect();
        match &mut open {
            Some((marker, block)) => {
                if fence.len() >= marker.len() && fence.starts_with(&marker[..1]) && t[fence.len()..].trim().is_empty()
                {
                    fenced.push(open.take().unwrap().1);
                } else {
                    block.body.push_str(line);
                    block.body.push('\n');
                }
            }
            None if fence.len() >= 3 => {
                let info = t[fence.len()..].trim().to_string();
                open = Some((
                    fence,
                    Fenced {
                        info,
                        body: String::new(),
                    },
                ));
            }
            None => prose.push((i + 1, line.to_string())),
        }
    }
    assert!(open.is_none(), "a fenced code block is never closed");
    Page { prose, fenced }
}

/// A prose line without its code spans and HTML comments, which hold
/// examples rather than links.
fn without_code(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(i) = rest.find(['`', '<']) {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        if let Some(after) = rest.strip_prefix("<!--") {
            match after.find("-->") {
                Some(end) => rest = &after[end + 3..],
                None => return out,
            }
        } else if rest.starts_with('`') {
            let ticks = rest.chars().take_while(|c| *c == '`').count();
            let after = &rest[ticks..];
            match after.find(&"`".repeat(ticks)) {
                Some(end) => rest = &after[end + ticks..],
                None => {
                    out.push_str(rest);
                    return out;
                }
            }
        } else {
            out.push('<');
            rest = &rest[1..];
        }
    }
    out.push_str(rest);
    out
}

/// The targets of a line's inline links and images (`[text](target)`,
/// `![alt](target "title")`) and of a reference definition (`[x]: target`).
fn link_targets(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        let inner = rest.trim_start();
        let target = match inner.strip_prefix('<') {
            Some(angled) => angled.split('>').next().unwrap_or(""),
            None => inner.split([')', ' ']).next().unwrap_or(""),
        };
        out.push(target.to_string());
    }
    let t = line.trim_start();
    if t.starts_with('[')
        && let Some(i) = t.find("]:")
    {
        out.push(t[i + 2..].split_whitespace().next().unwrap_or("").to_string());
    }
    out
}

/// The anchor GitHub gives a heading: its text lowercased, spaces to `-`,
/// punctuation other than `-` and `_` dropped (a link's text kept, its
/// target not).
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    while let Some(i) = rest.find("](") {
        text.push_str(&rest[..i]);
        rest = &rest[i + 2..];
        rest = rest.split_once(')').map_or("", |(_, after)| after);
    }
    text.push_str(rest);
    text.trim()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .flat_map(char::to_lowercase)
        .collect()
}

/// Every anchor a page has: one per ATX heading outside code, a repeated
/// heading numbered `-1`, `-2`… as GitHub does.
fn anchors(page: &Page) -> HashSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = HashSet::new();
    for (_, line) in &page.prose {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let text = line[hashes..].trim().trim_end_matches('#').trim_end();
        let base = slug(text);
        let n = seen.entry(base.clone()).or_insert(0);
        out.insert(if *n == 0 { base.clone() } else { format!("{base}-{n}") });
        *n += 1;
    }
    out
}

/// `a/b/../c` → `a/c`, without touching the file system.
fn normalise(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// What is wrong with the relative links of `files`, one line each
/// (`FILE:LINE: …`); external links (`https:`, `mailto:` …) are not fetched.
fn broken_links(root: &Path, files: &[PathBuf]) -> Vec<String> {
    let pages: HashMap<PathBuf, Page> = files
        .iter()
        .map(|f| (f.clone(), split(&std::fs::read_to_string(f).unwrap())))
        .collect();
    let mut anchor_cache: HashMap<PathBuf, HashSet<String>> = HashMap::new();
    let mut problems = Vec::new();
    for file in files {
        let shown = file.strip_prefix(root).unwrap_or(file).display().to_string();
        for (n, line) in &pages[file].prose {
            for target in link_targets(&without_code(line)) {
                if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (path, anchor) = match target.split_once('#') {
                    Some((p, a)) => (p, Some(a)),
                    None => (target.as_str(), None),
                };
                let dest = if path.is_empty() {
                    file.clone()
                } else if path.starts_with('/') {
                    problems.push(format!("{shown}:{n}: {target}: an absolute path (links are relative)"));
                    continue;
                } else {
                    normalise(&file.parent().unwrap().join(path.replace("%20", " ")))
                };
                if !dest.exists() {
                    problems.push(format!("{shown}:{n}: {target}: no such file"));
                    continue;
                }
                let Some(anchor) = anchor else { continue };
                if dest.extension().is_none_or(|x| x != "md") {
                    problems.push(format!(
                        "{shown}:{n}: {target}: an anchor into a file that is not Markdown"
                    ));
                    continue;
                }
                let known = anchor_cache
                    .entry(dest.clone())
                    .or_insert_with(|| match pages.get(&dest) {
                        Some(page) => anchors(page),
                        None => anchors(&split(&std::fs::read_to_string(&dest).unwrap())),
                    });
                if !known.contains(anchor) {
                    problems.push(format!("{shown}:{n}: {target}: no heading with the anchor #{anchor}"));
                }
            }
        }
    }
    problems
}

#[test]
fn every_relative_link_resolves() {
    let root = repo();
    let files = markdown_files(&root);
    assert!(
        files.iter().any(|f| f.ends_with("README.md")) && files.iter().any(|f| f.starts_with(root.join("docs"))),
        "{files:?}"
    );
    let problems = broken_links(&root, &files);
    assert!(problems.is_empty(), "broken links:\n{}", problems.join("\n"));
}

/// The checker itself: a missing file, a missing anchor and a link to a
/// heading that exists, in pages of its own.
#[test]
fn the_link_check_finds_what_is_broken() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("docs")).unwrap();
    let a = dir.path().join("README.md");
    let b = dir.path().join("docs/page.md");
    std::fs::write(
        &a,
        "# Top\n\n[fine](docs/page.md#display-filters-mcpscope-filter-and-the-timelines-filter-box)\n\
         [gone](docs/nope.md) `[in code](nope.md)`\n\n```sh\n[in a block](nope.md)\n```\n\
         [bad anchor](docs/page.md#nowhere) [self](#top) ![img](docs/page.md)\n",
    )
    .unwrap();
    std::fs::write(
        &b,
        "# Display filters: `mcpscope filter` and the timeline's filter box\n\n[up](../README.md#top)\n",
    )
    .unwrap();
    let problems = broken_links(dir.path(), &[a, b]);
    assert_eq!(
        problems,
        [
            "README.md:4: docs/nope.md: no such file",
            "README.md:9: docs/page.md#nowhere: no heading with the anchor #nowhere",
        ],
    );
}

#[test]
fn slugs_follow_githubs_rule() {
    assert_eq!(slug("`wrap --all` on large configs"), "wrap---all-on-large-configs");
    assert_eq!(
        slug("Config import of 200,000 servers"),
        "config-import-of-200000-servers"
    );
    assert_eq!(
        slug("An MCP App's View, from Run to `initialized`"),
        "an-mcp-apps-view-from-run-to-initialized"
    );
    assert_eq!(slug("See [the guide](docs/guide/README.md) now"), "see-the-guide-now");
    let page = split("# A\n## A\n```\n# not a heading\n```\n## A\n");
    assert_eq!(anchors(&page), HashSet::from(["a".into(), "a-1".into(), "a-2".into()]));
}

fn readme() -> Page {
    split(&std::fs::read_to_string(repo().join("README.md")).unwrap())
}

/// The one-line command of the README block marked ` ```sh NAME `.
fn named_command(page: &Page, name: &str) -> String {
    let blocks: Vec<&Fenced> = page
        .fenced
        .iter()
        .filter(|b| b.info.split_whitespace().nth(1) == Some(name))
        .collect();
    assert_eq!(blocks.len(), 1, "README.md needs exactly one ```sh {name} block");
    let lines: Vec<&str> = blocks[0].body.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "the ```sh {name} block holds one command: {lines:?}");
    lines[0].trim().to_string()
}

#[test]
fn the_two_commands_are_the_repositorys_scripts_and_ci_runs_the_test_one() {
    let page = readme();
    for name in ["run-app", "run-tests"] {
        let command = named_command(&page, name);
        let program = command.split_whitespace().next().unwrap();
        let path = repo().join(program);
        let mode = std::fs::metadata(&path)
            .unwrap_or_else(|e| panic!("README's {name} command {command:?}: {}: {e}", path.display()))
            .permissions()
            .mode();
        assert!(
            path.is_file() && mode & 0o111 != 0,
            "{} is not an executable file",
            path.display()
        );
    }
    let test_command = named_command(&page, "run-tests");
    // CI checks formatting and lints first, then ends with the tests.
    let ci = std::fs::read_to_string(repo().join(".ci/run")).unwrap();
    let last = ci
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty() && !l.starts_with('#'))
        .unwrap_or_default();
    assert_eq!(
        last, test_command,
        ".ci/run does not end with the README's test command:\n{ci}"
    );
}

#[test]
fn the_five_minute_tour_runs() {
    let tour: Vec<String> = split(&std::fs::read_to_string(repo().join("docs/guide/tour.md")).unwrap())
        .fenced
        .into_iter()
        .filter(|b| b.info.split_whitespace().nth(1) == Some("tour"))
        .map(|b| b.body)
        .collect();
    assert!(
        tour.len() >= 2,
        "the tour's blocks (```sh tour in docs/guide/tour.md) are missing"
    );
    // A scratch directory that looks like the root of a clone, as the tour
    // says, with `mcpscope` on PATH as it is once installed.
    let dir = tempfile::tempdir().unwrap();
    for shared in ["tests", "scripts"] {
        std::os::unix::fs::symlink(repo().join(shared), dir.path().join(shared)).unwrap();
    }
    let path = format!(
        "{}:{}",
        bin().parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let deadline = Instant::now() + TOUR_DEADLINE;
    for block in &tour {
        let mut child = Command::new("bash")
            .args(["-euo", "pipefail", "-c", block])
            .current_dir(dir.path())
            .env("PATH", &path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        // Read while it runs, so a chatty block never waits on a full pipe.
        let drain = |mut pipe: Box<dyn Read + Send>| {
            std::thread::spawn(move || {
                let mut text = String::new();
                let _ = pipe.read_to_string(&mut text);
                text
            })
        };
        let out = drain(Box::new(child.stdout.take().unwrap()));
        let err = drain(Box::new(child.stderr.take().unwrap()));
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() >= deadline {
                // The block's whole process group: bash and what it started.
                unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
                let _ = child.wait();
                panic!("the tour did not end within {TOUR_DEADLINE:?}; stuck in:\n{block}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let (out, err) = (out.join().unwrap(), err.join().unwrap());
        assert!(
            status.success(),
            "a tour block failed ({status}):\n{block}\nstdout:\n{out}\nstderr:\n{err}"
        );
    }
    // What the tour said it made is there.
    for made in ["tour.jsonl", "noisy.jsonl", "tour.har"] {
        assert!(dir.path().join(made).is_file(), "{made} was not written");
    }
}

/// A reader does not know the project's issue numbers: "issue 17",
/// "(#31)" and the like are left out of the pages.
#[test]
fn no_page_cites_an_issue_number() {
    let root = repo();
    let mut found = Vec::new();
    for file in markdown_files(&root) {
        let page = split(&std::fs::read_to_string(&file).unwrap());
        for (n, line) in &page.prose {
            let text = without_code(line).to_lowercase();
            let cites = text.match_indices("issue").any(|(i, _)| {
                let after = text[i + 5..].trim_start_matches([' ', '#']);
                after.starts_with(|c: char| c.is_ascii_digit())
            }) || text
                .match_indices("(#")
                .any(|(i, _)| text[i + 2..].starts_with(|c: char| c.is_ascii_digit()));
            if cites {
                found.push(format!("{}:{n}: {line}", file.strip_prefix(&root).unwrap().display()));
            }
        }
    }
    assert!(found.is_empty(), "issue numbers in the docs:\n{}", found.join("\n"));
}

/// The source files over the size a file of one concern keeps to.
const MAX_LINES: usize = 1_000;

/// The files ARCHITECTURE.md's "Files over 1,000 lines and why" lists, each
/// on a line of its own as `` - `path`: why ``.
fn listed_as_long(architecture: &str) -> HashSet<String> {
    let Some(section) = architecture.split("## Files over 1,000 lines and why").nth(1) else {
        panic!("ARCHITECTURE.md has no section \"Files over 1,000 lines and why\"");
    };
    let section = section.split("\n## ").next().unwrap_or_default();
    section
        .lines()
        .filter_map(|l| l.strip_prefix("- `")?.split('`').next().map(str::to_owned))
        .collect()
}

/// The files longer than `MAX_LINES` that the list does not give a reason for.
fn unexplained(lengths: &[(String, usize)], listed: &HashSet<String>) -> Vec<String> {
    lengths
        .iter()
        .filter(|(path, n)| *n > MAX_LINES && !listed.contains(path))
        .map(|(path, n)| format!("{path}: {n} lines"))
        .collect()
}

fn rust_files(dir: &Path, root: &Path, out: &mut Vec<(String, usize)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name();
        if p.is_dir() && name != "target" && name != "node_modules" && name != ".git" {
            rust_files(&p, root, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let lines = std::fs::read_to_string(&p).map(|t| t.lines().count()).unwrap_or(0);
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
            out.push((rel, lines));
        }
    }
}

#[test]
fn no_source_file_is_over_1000_lines_unless_listed() {
    let root = repo();
    let mut lengths = Vec::new();
    for dir in ["src", "crates", "tests", "benches"] {
        rust_files(&root.join(dir), &root, &mut lengths);
    }
    assert!(
        lengths.len() > 100,
        "found only {} Rust files under {}",
        lengths.len(),
        root.display()
    );
    let listed = listed_as_long(&std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap());
    let long = unexplained(&lengths, &listed);
    assert!(
        long.is_empty(),
        "split these files along their concerns, or list each in ARCHITECTURE.md's \
         \"Files over 1,000 lines and why\" with its reason:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_length_check_finds_an_unlisted_long_file() {
    let page = "# A\n## Files over 1,000 lines and why\n\n- `src/big.rs`: a table.\n## Next\n- `src/other.rs`: not this section\n";
    let listed = listed_as_long(page);
    let lengths = vec![
        ("src/big.rs".to_owned(), 1_500),
        ("src/other.rs".to_owned(), 1_001),
        ("src/small.rs".to_owned(), 1_000),
    ];
    assert_eq!(
        unexplained(&lengths, &listed),
        vec!["src/other.rs: 1001 lines".to_owned()]
    );
}
