//! `mcpscope verify CAPTURE`: the recorded session's requests sent again to
//! a live server, each answer compared with the recorded one (volatile
//! fields left out), and the server's surface (capabilities and lists)
//! compared by name, each change breaking or compatible. `--surface`
//! compares the surface only.

use super::{TargetArgs, exit};
use clap::Args;
use mcpscope_core::analysis::answer_diff::Ignore;
use mcpscope_core::analysis::surface::{self, Change, Impact, Surface};
use mcpscope_core::client::Client;
use mcpscope_core::protocol::mrtr::InputPolicy;
use mcpscope_core::record::output_file;
use mcpscope_core::text::ErrorChain;
use mcpscope_core::transport::event::Event;
use mcpscope_core::transport::session::SessionOptions;
use mcpscope_core::verify::{self, Recording, RecordingError, Replayed, Report, fresh_path, update_baseline};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailOn {
    /// Only breaking changes fail the run.
    Breaking,
    /// Any change fails the run.
    Any,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The recorded session to verify the server against.
    #[arg(value_name = "CAPTURE")]
    pub capture: PathBuf,

    /// The one session to verify against in a capture of several (1-based;
    /// default: every session the server answered in, each in a live
    /// session of its own).
    #[arg(long, value_name = "N")]
    pub session: Option<usize>,

    /// Compare the server's surface only: capabilities and the tool,
    /// prompt, resource and template lists (by name; each change breaking or
    /// compatible), without sending the recorded requests.
    #[arg(long)]
    pub surface: bool,

    /// Leave this part of every answer out (a JSON pointer into the result;
    /// `*` is one segment, `**` any number): `/content/*/text`, `/**/etag`. Repeatable.
    #[arg(long, value_name = "POINTER")]
    pub ignore: Vec<String>,

    /// Leave members of this name out wherever they are (added to the
    /// built-in volatile fields: see --explain). Repeatable.
    #[arg(long, value_name = "NAME")]
    pub ignore_field: Vec<String>,

    /// Numbers this close (absolutely, or relatively to the recorded value:
    /// 0.05 is within 5 %) count as the same.
    #[arg(long, value_name = "X")]
    pub tolerance: Option<f64>,

    /// Say what is left out of the comparison before comparing.
    #[arg(long)]
    pub explain: bool,

    /// Make the live session the new baseline: it is recorded, and replaces
    /// CAPTURE once verified; the old file is kept as CAPTURE.1 (.2, …).
    #[arg(long)]
    pub update: bool,

    /// Which changes make the exit status 1.
    #[arg(long, value_enum, default_value = "any", value_name = "WHICH")]
    pub fail_on: FailOn,

    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,

    /// Also write a JUnit XML report (one test case per compared item), for
    /// CI: a file replaced whole (0600), or a device or a FIFO written into.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,

    /// Timeout for each request, in milliseconds.
    #[arg(long, default_value_t = 30_000)]
    pub timeout_ms: u64,

    #[command(flatten)]
    pub server: TargetArgs,

    #[command(flatten)]
    pub auth: super::auth::AuthArgs,
}

fn fail(code: u8, msg: impl std::fmt::Display) -> ExitCode {
    crate::errln!("mcpscope verify: {msg}");
    ExitCode::from(code)
}

pub fn run(args: VerifyArgs) -> ExitCode {
    let mut ignore = match Ignore::new(&args.ignore_field, &args.ignore) {
        Ok(i) => i,
        Err(e) => return fail(exit::USAGE, format!("--ignore: {e}")),
    };
    match args.tolerance {
        Some(t) if !(t.is_finite() && t >= 0.0) => {
            return fail(exit::USAGE, format!("--tolerance {t}: give a number of 0 or more"));
        }
        t => ignore.tolerance = t,
    }
    if args.explain {
        crate::errln!(
            "mcpscope verify: left out of every answer: members named {}",
            ignore.fields.join(", ")
        );
        for p in &args.ignore {
            crate::errln!("mcpscope verify: left out: {p}");
        }
        crate::errln!("mcpscope verify: strings holding a JSON object or array are compared as that JSON");
    }
    if args.update && args.surface {
        return fail(exit::USAGE, "--update needs the whole session replayed: drop --surface");
    }
    // Refused before the session, not after it.
    if let Some(path) = &args.junit
        && let Err(e) = output_file::check(path, output_file::Policy::Replace)
    {
        return fail(exit::IO, ErrorChain(&e));
    }
    let target = match args.server.target() {
        Ok(t) => t,
        Err(e) => return fail(exit::USAGE, e),
    };
    let authorizer = match args.auth.authorizer(&target) {
        Ok(a) => a,
        Err(e) => return fail(exit::USAGE, e),
    };
    let recording = match Recording::read(&args.capture, args.session) {
        Ok(r) => r,
        Err(e @ RecordingError::NoSuchSession { .. }) => return fail(exit::USAGE, e.to_string()),
        Err(e) => return fail(exit::IO, ErrorChain(&e)),
    };
    if recording.of > 1 {
        let which: Vec<String> = recording.sessions.iter().map(|s| s.number.to_string()).collect();
        crate::errln!(
            "mcpscope verify: {} holds {} sessions: replaying session(s) {}, each in a live session of its own{}",
            args.capture.display(),
            recording.of,
            which.join(", "),
            if args.session.is_none() {
                " (--session N for one)"
            } else {
                ""
            }
        );
    }
    for w in &recording.warnings {
        crate::errln!("mcpscope verify: {}: {w}", args.capture.display());
    }
    let timeout = Duration::from_millis(args.timeout_ms);
    let fresh = args.update.then(|| fresh_path(&args.capture));
    // Its name can be guessed: made new here, so that in a shared directory
    // nothing another user put there first becomes the baseline.
    if let Some(path) = &fresh
        && let Err(e) = mcpscope_core::record::state_dir::create_private_file(path)
    {
        return fail(exit::IO, e);
    }
    let options = SessionOptions {
        request_timeout: Some(timeout),
        limits: args.server.limits(),
        capture: fresh.clone(),
        ..SessionOptions::new(mcpscope_core::record::capture::open_log)
    };
    let mut authorizer = authorizer;
    let mut connect = |policy: &InputPolicy| {
        let client =
            Client::connect(target.clone(), options.clone(), Box::new(|_: Event| {})).with_policy(policy.clone());
        // The first session signs in; verify hands the authorizer on to the next.
        match authorizer.take() {
            Some(a) => client.with_authorizer(a),
            None => client,
        }
    };
    let report = verify::verify(&mut connect, &recording, &ignore, timeout, args.surface);
    let Report {
        old,
        new,
        changes,
        replayed,
        notes,
    } = match report {
        Ok(r) => r,
        Err(e) => return fail(exit::UNREACHABLE, ErrorChain(&e)),
    };
    for n in &notes {
        crate::errln!("mcpscope verify: {n}");
    }
    let counted = changes
        .iter()
        .filter(|c| args.fail_on == FailOn::Any || c.impact == Impact::Breaking)
        .count()
        + replayed.iter().filter(|r| !r.differences.is_empty()).count();
    match args.format {
        Format::Text => {
            print_replayed(&replayed);
            print_text(&changes);
        }
        Format::Json => super::call::print_json(&json!({
            "exchanges": replayed.iter().map(Replayed::to_json).collect::<Vec<_>>(),
            "changes": changes.iter().map(change_json).collect::<Vec<_>>(),
            "breaking": changes.iter().filter(|c| c.impact == Impact::Breaking).count(),
            "compatible": changes.iter().filter(|c| c.impact == Impact::Compatible).count(),
            "differing": replayed.iter().filter(|r| !r.differences.is_empty()).count(),
        })),
    }
    if let Some(path) = &args.junit {
        let xml = junit(&old, &new, &changes, &replayed, args.fail_on);
        if let Err(e) = output_file::write_all(path, xml.as_bytes()) {
            return fail(exit::IO, ErrorChain(&e));
        }
    }
    if let Some(fresh) = fresh {
        match update_baseline(&args.capture, &fresh) {
            Ok(kept) => crate::errln!(
                "mcpscope verify: {} is the new baseline; the old one is kept as {}",
                args.capture.display(),
                kept.display()
            ),
            Err(e) => return fail(exit::IO, ErrorChain(&e)),
        }
    }
    ExitCode::from(if counted > 0 { exit::FAILED } else { exit::OK })
}

fn print_replayed(replayed: &[Replayed]) {
    for r in replayed {
        if r.differences.is_empty() {
            crate::outln!("same       {}", r.key);
        } else {
            crate::outln!("differs    {}", r.key);
            for d in &r.differences {
                crate::outln!("             {d}");
            }
        }
    }
    if !replayed.is_empty() {
        let differ = replayed.iter().filter(|r| !r.differences.is_empty()).count();
        crate::outln!(
            "{} exchange(s) replayed: {} the same, {differ} differ",
            replayed.len(),
            replayed.len() - differ
        );
    }
}

fn change_json(c: &Change) -> Value {
    json!({"impact": c.impact.as_str(), "subject": c.subject, "change": c.what})
}

fn print_text(changes: &[Change]) {
    if changes.is_empty() {
        crate::outln!("the server's surface is as recorded");
        return;
    }
    for c in changes {
        crate::outln!("{:<10} {}: {}", c.impact.as_str(), c.subject, c.what);
    }
    let breaking = changes.iter().filter(|c| c.impact == Impact::Breaking).count();
    crate::outln!(
        "{} change(s): {breaking} breaking, {} compatible",
        changes.len(),
        changes.len() - breaking
    );
}

/// JUnit XML as GitHub Actions' and GitLab's report readers take it: one
/// test case per recorded item (and per item the server added, and the
/// capabilities), failed when it has a change that counts.
fn junit(old: &Surface, new: &Surface, changes: &[Change], replayed: &[Replayed], fail_on: FailOn) -> String {
    let mut cases: Vec<(String, String)> = vec![("capabilities".into(), "capabilities".into())];
    for (list, _, _, _) in surface::LISTS {
        let names: std::collections::BTreeSet<&String> = old
            .lists
            .get(list)
            .into_iter()
            .chain(new.lists.get(list).filter(|_| old.lists.contains_key(list)))
            .flat_map(|m| m.keys())
            .collect();
        for n in names {
            cases.push((list.to_owned(), n.clone()));
        }
    }
    let subject_of = |class: &str, name: &str| -> String {
        if class == "capabilities" {
            "capability ".into()
        } else {
            let kind = match class {
                "tools" => "tool",
                "prompts" => "prompt",
                "resources" => "resource",
                _ => "resource template",
            };
            format!("{kind} {name}")
        }
    };
    let mut body = String::new();
    let mut failures = 0;
    for (class, name) in &cases {
        let subject = subject_of(class, name);
        let mine: Vec<&Change> = changes
            .iter()
            .filter(|c| {
                if class == "capabilities" {
                    c.subject.starts_with(&subject)
                } else {
                    c.subject == subject
                }
            })
            .collect();
        let failing: Vec<&&Change> = mine
            .iter()
            .filter(|c| fail_on == FailOn::Any || c.impact == Impact::Breaking)
            .collect();
        body.push_str(&format!(
            "    <testcase classname=\"{}\" name=\"{}\">\n",
            mcpscope_core::text::xml_escape(class),
            mcpscope_core::text::xml_escape(name)
        ));
        if !failing.is_empty() {
            failures += 1;
            let text: Vec<String> = mine
                .iter()
                .map(|c| format!("{}: {}: {}", c.impact.as_str(), c.subject, c.what))
                .collect();
            body.push_str(&format!(
                "      <failure type=\"{}\" message=\"{}\">{}</failure>\n",
                failing[0].impact.as_str(),
                mcpscope_core::text::xml_escape(&failing[0].what),
                mcpscope_core::text::xml_escape(&text.join("\n"))
            ));
        } else if !mine.is_empty() {
            let text: Vec<String> = mine
                .iter()
                .map(|c| format!("{}: {}", c.impact.as_str(), c.what))
                .collect();
            body.push_str(&format!(
                "      <system-out>{}</system-out>\n",
                mcpscope_core::text::xml_escape(&text.join("\n"))
            ));
        }
        body.push_str("    </testcase>\n");
    }
    for r in replayed {
        body.push_str(&format!(
            "    <testcase classname=\"{}\" name=\"{}\">\n",
            mcpscope_core::text::xml_escape(&r.method),
            mcpscope_core::text::xml_escape(&r.key)
        ));
        if let Some(first) = r.differences.first() {
            failures += 1;
            body.push_str(&format!(
                "      <failure type=\"differs\" message=\"{}\">{}</failure>\n",
                mcpscope_core::text::xml_escape(first),
                mcpscope_core::text::xml_escape(&r.differences.join("\n"))
            ));
        }
        body.push_str("    </testcase>\n");
    }
    let total = cases.len() + replayed.len();
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"mcpscope verify\" tests=\"{n}\" \
         failures=\"{failures}\">\n  <testsuite name=\"verify\" tests=\"{n}\" failures=\"{failures}\" errors=\"0\" \
         skipped=\"0\">\n{body}  </testsuite>\n</testsuites>\n",
        n = total
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn junit_has_a_case_per_item_and_fails_what_counts() {
        let mut old = Surface {
            capabilities: Some(json!({"tools": {}})),
            ..Surface::default()
        };
        old.set("tools", vec![json!({"name": "a<b"}), json!({"name": "gone"})]);
        let mut new = old.clone();
        new.set(
            "tools",
            vec![json!({"name": "a<b", "description": "x"}), json!({"name": "new"})],
        );
        let changes = surface::compare(&old, &new);
        let any = junit(&old, &new, &changes, &[], FailOn::Any);
        assert!(any.contains("tests=\"4\" failures=\"3\""), "{any}");
        assert!(any.contains("name=\"a&lt;b\""), "{any}");
        let breaking = junit(&old, &new, &changes, &[], FailOn::Breaking);
        assert!(breaking.contains("tests=\"4\" failures=\"1\""), "{breaking}");
        assert!(
            breaking.contains("<failure type=\"breaking\" message=\"removed\">"),
            "{breaking}"
        );
        assert!(
            breaking.contains("<system-out>compatible: added</system-out>"),
            "{breaking}"
        );
        assert_eq!(mcpscope_core::text::xml_escape("\u{1b}[x&"), "\\u001b[x&amp;");
    }
}
